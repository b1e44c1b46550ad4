// SPDX-License-Identifier: MIT
// The forward half stencil of a home cell in sorted positions: which
// particle ranges the pair sweep tests a home cell's particles against
// (sweep_impl.inc). The same for every kernel.
#pragma once

#include "lattice/cell_index.h"
#include "lattice/wrapped_cells.h"
#include "particle/pair_sweep.h"

#include <cstdint>

namespace hashgrid::detail::pair_sweep {

/// Particle ranges a home cell is swept against, all in sorted positions:
/// the rest of the home cell continued by its +x neighbour, then the forward
/// rows (2D: y+1; 3D: (y+1,z), (y-1,z+1), (y,z+1), (y+1,z+1)), each row the
/// cells x-1..x+1, which are contiguous because cells are sorted (z, y, x).
///
/// A home cell on the wrap seam of an unbounded world (lattice/wrapped_cells.h)
/// has neighbours whose keys wrap around: its ranges are the neighbour cells
/// with a larger key than its own, one range per run of consecutive cells
/// (at most 26).
struct Ranges {
    uint32_t home_end;
    uint32_t row_count;
    uint32_t row_begin[26];
    uint32_t row_end[26];
};

/// Packed key of a cell (2D: z ignored).
template <uint32_t D>
inline uint64_t row_key(int32_t x, int32_t y, int32_t z) {
    if constexpr (D == 3)
        return pack_key3(x, y, z);
    else
        return pack_key2(x, y);
}

/// Row windows of the previous home cell (unbounded worlds), in cell indices.
struct RowCache {
    bool valid = false;
    int32_t x = 0, y = 0, z = 0;
    uint32_t lo[4] = {kNone, kNone, kNone, kNone};
    uint32_t hi[4] = {kNone, kNone, kNone, kNone};
};

/// Ranges of a home cell with a coordinate on the wrap seam. Every pair of
/// neighbouring cells is swept once, from the one with the smaller key (the
/// earlier one in sorted order), so pairs keep their canonical order. Off the
/// seam this is exactly the half stencil of neighbor_ranges.
template <uint32_t D>
inline void seam_ranges(const SweepData& s, uint32_t cell, int32_t x, int32_t y, int32_t z, Ranges& r) {
    const uint64_t home = s.key[cell];
    uint32_t found[26];
    uint32_t n = 0;
    constexpr int32_t kZ = D == 3 ? 1 : 0;
    for (int32_t dz = -kZ; dz <= kZ; ++dz)
        for (int32_t dy = -1; dy <= 1; ++dy)
            for (int32_t dx = -1; dx <= 1; ++dx) {
                if (dx == 0 && dy == 0 && dz == 0) continue;
                const uint64_t key = row_key<D>(wrap_cell(int64_t{x} + dx, D), wrap_cell(int64_t{y} + dy, D),
                                                wrap_cell(int64_t{z} + dz, D));
                if (key <= home) continue; // swept from that cell
                const uint32_t c = s.find_key(key);
                if (c == kNone) continue;
                uint32_t at = n++;
                for (; at > 0 && found[at - 1] > c; --at)
                    found[at] = found[at - 1];
                found[at] = c;
            }
    r.home_end = s.start[cell + 1];
    r.row_count = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j + 1 < n && found[j + 1] == found[j] + 1)
            ++j;
        r.row_begin[r.row_count] = s.start[found[i]];
        r.row_end[r.row_count] = s.start[found[j] + 1];
        ++r.row_count;
        i = j + 1;
    }
}

template <uint32_t D>
inline void neighbor_ranges(const SweepData& s, uint32_t cell, Ranges& r, RowCache& cache) {
    constexpr int32_t kRowDy[4] = {1, -1, 0, 1};
    constexpr int32_t kRowDz[4] = {0, 1, 1, 1};
    constexpr uint32_t kRows = D == 3 ? 4 : 1;
    r.row_count = 0;
    if (s.dense()) {
        const uint32_t nx = s.lat.n[0], ny = s.lat.n[1], nz = s.lat.n[2];
        int32_t cx = 0, cy = 0, cz = 0;
        s.coordinates(cell, cx, cy, cz);
        const auto x = static_cast<uint32_t>(cx);
        const auto y = static_cast<uint32_t>(cy);
        const auto z = static_cast<uint32_t>(cz);
        r.home_end = x + 1 < nx ? s.start[cell + 2] : s.start[cell + 1];
        const uint32_t xlo = x > 0 ? x - 1 : 0;
        const uint32_t xhi = x + 1 < nx ? x + 1 : x;
        for (uint32_t row = 0; row < kRows; ++row) {
            const int64_t yy = int64_t{y} + kRowDy[row];
            const int64_t zz = int64_t{z} + kRowDz[row] * (D == 3 ? 1 : 0);
            if (yy < 0 || yy >= ny || (D == 3 && zz >= nz)) continue;
            const uint32_t base = (static_cast<uint32_t>(zz) * ny + static_cast<uint32_t>(yy)) * nx;
            const uint32_t b = s.start[base + xlo];
            const uint32_t e = s.start[base + xhi + 1];
            if (b == e) continue;
            r.row_begin[r.row_count] = b;
            r.row_end[r.row_count] = e;
            ++r.row_count;
        }
        (void)cache;
        return;
    }
    int32_t x = 0, y = 0, z = 0;
    s.coordinates(cell, x, y, z);
    if (on_wrap_seam(x, D) || on_wrap_seam(y, D) || (D == 3 && on_wrap_seam(z, D))) [[unlikely]] {
        seam_ranges<D>(s, cell, x, y, z, r);
        cache.valid = false;
        return;
    }
    const bool next_is_x1 = cell + 1 < s.cell_count && s.key[cell + 1] == row_key<D>(x + 1, y, z);
    r.home_end = next_is_x1 ? s.start[cell + 2] : s.start[cell + 1];
    // Consecutive home cells of one row slide each row window by one cell:
    // the windows of the previous home cell are reused, so hashing is needed
    // only when a window is empty (no per-neighbour lookups on the hot path).
    const bool slide = cache.valid && cache.y == y && cache.z == z && cache.x + 1 == x;
    cache.valid = true;
    cache.x = x;
    cache.y = y;
    cache.z = z;
    for (uint32_t row = 0; row < kRows; ++row) {
        const int32_t yy = y + kRowDy[row];
        const int32_t zz = z + kRowDz[row];
        uint32_t& lo = cache.lo[row];
        uint32_t& hi = cache.hi[row];
        if (slide) {
            // Drop the cell at x - 2 (it can only be lo), then try x + 1 after hi.
            if (lo != kNone && s.key[lo] == row_key<D>(x - 2, yy, zz)) {
                if (lo == hi)
                    lo = hi = kNone;
                else
                    ++lo;
            }
            const uint64_t key = row_key<D>(x + 1, yy, zz);
            if (hi != kNone) {
                if (hi + 1 < s.cell_count && s.key[hi + 1] == key) ++hi;
            } else {
                const uint32_t found = s.find_key(key);
                if (found != kNone) lo = hi = found;
            }
        } else {
            lo = hi = kNone;
            for (int32_t dx = -1; dx <= 1; ++dx) {
                const uint64_t key = row_key<D>(x + dx, yy, zz);
                if (hi != kNone) {
                    // Sorted cells: the next cell of this row, if any, is right after hi.
                    if (hi + 1 < s.cell_count && s.key[hi + 1] == key) hi = hi + 1;
                    continue;
                }
                const uint32_t found = s.find_key(key);
                if (found != kNone) lo = hi = found;
            }
        }
        if (lo == kNone) continue;
        r.row_begin[r.row_count] = s.start[lo];
        r.row_end[r.row_count] = s.start[hi + 1];
        ++r.row_count;
    }
}

} // namespace hashgrid::detail::pair_sweep

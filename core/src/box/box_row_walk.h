// SPDX-License-Identifier: MIT
// The occupied cells of a cell range of a box frame, walked row by row:
// through the frame's row table (BoxGridView::row_start, written by the
// rebuild: box_grid_rebuild.cpp, write_row_starts) where there is one, else
// by a galloping search. The table walk is shared by the box queries
// (box_query_internal.h) and BoxGrid's scans of a box's cells
// (box_grid_pairs.cpp: find_pairs_with, large objects).
#pragma once

#include "box/box_grid_internal.h"
#include "lattice/cell_index.h"

#include <algorithm>
#include <cstdint>

namespace hashgrid::detail {

/// A frame's row table: row (y, z) of the occupied box from `lo` is
/// r = (y - lo y) + (z - lo z) * rows_per_slab, its occupied cells
/// [start[r], start[r + 1]) in key order.
struct RowTable {
    const uint32_t* start = nullptr;
    int32_t lo[3] = {0, 0, 0};
    uint64_t rows_per_slab = 0;
};

/// Calls row_fn(first, end, y, z) for every row of the cell box [lo, hi]
/// (within the table's occupied box) with occupied cells in its x range:
/// cells [first, end), rows in ascending (z, y); rows for which
/// row_ok(y, z, x_lo, x_hi) is false are skipped (row_ok may narrow
/// [x_lo, x_hi], starting as [lo x, hi x]). Each row is found by two reads
/// (empty ones cost those), and its first cell at or after x_lo straight
/// from the cell count: the row's cells have distinct x >= the table's lo x,
/// so the cell at start + i has x >= lo x + i and the one sought is at most
/// x_lo - lo x cells in (exactly there when the row is fully occupied up to
/// it; else a search below it). Returns as soon as row_fn returns true.
template <typename RowOk, typename RowFn>
void walk_table_rows(const CellIndex& index, const RowTable& t, const int32_t lo[3], const int32_t hi[3],
                     RowOk&& row_ok, RowFn&& row_fn) {
    const uint64_t* key = index.key;
    for (int32_t z = lo[2]; z <= hi[2]; ++z) {
        const uint64_t slab = static_cast<uint64_t>(int64_t{z} - t.lo[2]) * t.rows_per_slab;
        for (int32_t y = lo[1]; y <= hi[1]; ++y) {
            const uint64_t row = slab + static_cast<uint64_t>(int64_t{y} - t.lo[1]);
            const uint32_t b = t.start[row];
            const uint32_t e = t.start[row + 1];
            if (b == e) continue;
            int32_t x_lo = lo[0];
            int32_t x_hi = hi[0];
            if (!row_ok(y, z, x_lo, x_hi) || x_lo > x_hi) continue;
            const uint64_t k = index.lat.pack(x_lo, y, z);
            const int64_t in = int64_t{x_lo} - t.lo[0];
            uint32_t at = 0;
            if (in >= 0 && static_cast<uint64_t>(in) < e - b) {
                const auto guess = static_cast<uint32_t>(b + static_cast<uint64_t>(in));
                at = key[guess] >= k && (guess == b || key[guess - 1] < k) ? guess
                                                                           : index.lower_bound_in(k, b, guess + 1);
            } else {
                at = index.lower_bound_in(k, b, e);
            }
            const uint64_t last = index.lat.pack(x_hi, y, z);
            uint32_t end = at;
            while (end < e && key[end] <= last)
                ++end;
            if (at != end && row_fn(at, end, y, z)) return;
        }
    }
}

/// Calls cell_fn(pos, x, y, z) for every occupied cell pos, at (x, y, z), of
/// [c_lo, c_hi], in key order: row by row through the frame's row table when
/// it has one (two reads per row of the range within the occupied cells),
/// else by a galloping search that skips empty rows and columns (either way
/// a range covering many cells costs its occupied rows and cells, not its
/// volume).
template <typename CellFn>
void walk_cells(const BoxState& s, const CellIndex& index, const int32_t c_lo[3], const int32_t c_hi[3],
                CellFn&& cell_fn) {
    const uint32_t dims = s.dims;
    const uint64_t* keys = index.key;
    const uint32_t cells = index.cell_count;
    if (s.valid.rows) {
        const BoxFrameBounds& f = s.bounds;
        int32_t lo[3], hi[3];
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d] = std::max(c_lo[d], f.cell_lo[d]);
            hi[d] = std::min(c_hi[d], f.cell_hi[d]);
            if (lo[d] > hi[d]) return;
        }
        const RowTable rows{s.row_start,
                            {f.cell_lo[0], f.cell_lo[1], f.cell_lo[2]},
                            static_cast<uint64_t>(int64_t{f.cell_hi[1]} - f.cell_lo[1] + 1)};
        walk_table_rows(
            index, rows, lo, hi, [](int32_t, int32_t, int32_t&, int32_t&) { return true; },
            [&](uint32_t first, uint32_t end, int32_t y, int32_t z) {
                for (uint32_t pos = first; pos < end; ++pos) {
                    int32_t x, row_y, row_z;
                    index.coordinates(pos, x, row_y, row_z);
                    cell_fn(pos, x, y, z);
                }
                return false; // never stops
            });
        return;
    }
    const uint64_t last_key = Lattice::pack(dims, c_hi[0], c_hi[1], c_hi[2]);
    uint32_t pos = index.lower_bound(Lattice::pack(dims, c_lo[0], c_lo[1], c_lo[2]));
    while (pos < cells && keys[pos] <= last_key) {
        int32_t x, y, z;
        index.coordinates(pos, x, y, z);
        // z is within [c_lo[2], c_hi[2]] here (keys order z first); in 2D z = 0.
        if (y < c_lo[1]) {
            pos = index.lower_bound(Lattice::pack(dims, c_lo[0], c_lo[1], z), pos);
            continue;
        }
        if (y > c_hi[1]) { // then z < c_hi[2], or the key would exceed last_key
            pos = index.lower_bound(Lattice::pack(dims, c_lo[0], c_lo[1], z + 1), pos);
            continue;
        }
        if (x < c_lo[0]) {
            pos = index.lower_bound(Lattice::pack(dims, c_lo[0], y, z), pos);
            continue;
        }
        if (x > c_hi[0]) { // next row: (y + 1, z) or (c_lo y, z + 1), both within the query
            const uint64_t next =
                y < c_hi[1] ? Lattice::pack(dims, c_lo[0], y + 1, z) : Lattice::pack(dims, c_lo[0], c_lo[1], z + 1);
            pos = index.lower_bound(next, pos);
            continue;
        }
        cell_fn(pos, x, y, z);
        ++pos;
    }
}

} // namespace hashgrid::detail

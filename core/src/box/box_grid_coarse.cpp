// SPDX-License-Identifier: MIT
// The coarse grids of a box frame (box_grid_internal.h, CoarseGrid), built by
// find_pairs for its large objects.
//
// A large object finds its partners by reading candidates near its box. Read
// from the fine cells, that costs every cell the box covers and every entry
// in them, several per small object (a 10 m building over 2 m cells covers
// 125-343 cells), and a test against every other large object. Here each
// object is binned once, by the cell of its minimum corner, into a dense
// lattice of cells 2^level fine cells wide (the small objects and the large
// ones in two grids over the same fine cells; the large objects' cells are
// 2^large_level wide, about one large object, so that the few large ones
// near a large object take a few rows to read): a large object covering
// fine cells [a, b] reads the coarse cells of [a - reach, b] of each grid
// (reach: the widest span of that grid's objects), row by row, each run of
// cells one contiguous range of objects. The candidates are a superset of the
// overlapping objects (cell() is monotone, and so is the clamp of a large
// object's coarse cell into the grid), the pairs are the same, and
// find_pairs sorts each large object's partners either way, so the output
// does not depend on which path ran.
//
// Cost: a serial counting sort of the objects (two passes), so the grids
// are built only when the fine scans would read more cells than the frame
// has objects.
#include "box/box_grid_internal.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <bit>

namespace hashgrid::detail {

namespace {

/// Fine cell of coordinate v on axis d, clamped into the key range: the rule
/// of the large objects' scans (box_grid_pairs.cpp), so both sides agree.
inline int32_t fine_cell(const BoxState& s, uint32_t d, float v) {
    return s.cells.clamped_cell(d, s.cells.scaled(d, v));
}

/// Coarse cells of the box of fine cells [lo, hi] at `level`.
uint64_t coarse_cells(const int32_t lo[3], const int32_t hi[3], uint32_t dims, uint32_t level) {
    uint64_t cells = 1;
    for (uint32_t d = 0; d < dims; ++d)
        cells *= static_cast<uint64_t>((int64_t{hi[d]} >> level) - (int64_t{lo[d]} >> level) + 1);
    return cells;
}

/// Counting sort of one grid's objects by coarse cell, stable (ascending
/// object index within a cell, as both lists are visited in index order),
/// into the coarse arrays from `first` on. Large: the objects of the large
/// list, their coarse cells clamped into the grid; else every other object.
/// Counts go two slots up, so that after the scan start[c + 1] is where
/// cell c's next object goes, and after placing, the end of cell c.
template <uint32_t D, bool Large>
void bin_objects(BoxState& s, uint64_t cells, uint32_t* __restrict start, uint32_t first) {
    const CoarseGrid& g = s.coarse;
    const uint32_t level = Large ? g.large_level : g.level;
    const int32_t* grid_lo = Large ? g.large_lo : g.lo;
    const uint32_t* grid_n = Large ? g.large_n : g.n;
    const uint32_t count = Large ? s.large_count : s.object_count;
    const uint8_t* __restrict is_large = s.is_large;
    const uint32_t* __restrict large = s.large_object;
    uint32_t* __restrict cell_of = s.coarse_cell;
    const float* __restrict lo[3] = {s.min[0], s.min[1], s.min[2]};
    const float* __restrict hi[3] = {s.max[0], s.max[1], s.max[2]};
    // The rebuild's cell ranges of small objects, when they still describe
    // this frame (a rejected rebuild may have overwritten them): the same cells.
    const bool frame_cells = !Large && s.valid.objects;
    std::fill(start, start + cells + 2, 0u);
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t i = Large ? large[k] : k;
        if (!Large && is_large[i] != 0) continue;
        uint64_t cell = 0;
        for (uint32_t d = D; d-- > 0;) {
            const int32_t fine = frame_cells ? object_records<D>(s)[i].lo[d] : fine_cell(s, d, lo[d][i]);
            int64_t c = (int64_t{fine} >> level) - grid_lo[d];
            if constexpr (Large) c = std::clamp<int64_t>(c, 0, int64_t{grid_n[d]} - 1);
            cell = cell * grid_n[d] + static_cast<uint64_t>(c);
        }
        cell_of[i] = static_cast<uint32_t>(cell);
        ++start[cell + 2];
    }
    for (uint64_t c = 2; c < cells + 2; ++c)
        start[c] += start[c - 1];
    CoarseObject* __restrict object = s.coarse_object + first;
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t i = Large ? large[k] : k;
        if (!Large && is_large[i] != 0) continue;
        CoarseObject record{{0.0f, 0.0f, 0.0f}, i, {0.0f, 0.0f, 0.0f}, 0};
        if (frame_cells) { // the box as validated, one sequential record instead of 2 * D arrays
            const ObjectRecord<D>& r = object_records<D>(s)[i];
            for (uint32_t d = 0; d < D; ++d) {
                record.min[d] = r.min[d];
                record.max[d] = r.max[d];
            }
        } else {
            for (uint32_t d = 0; d < D; ++d) {
                record.min[d] = lo[d][i];
                record.max[d] = hi[d][i];
            }
        }
        object[start[cell_of[i] + 1]++] = record;
    }
}

} // namespace

bool plan_coarse_grid(BoxState& s) {
    const uint32_t dims = s.dims;
    if (s.large_count == 0 || s.cell_count == 0) return false;
    // What the fine scans would read (each large box's cells, at most every
    // occupied cell: their search skips empty rows), the large objects' mean
    // span, which sets the coarse cell, and their widest span per axis.
    uint64_t fine_reads = 0;
    uint64_t span_sum = 0;
    int64_t large_reach[3] = {0, 0, 0};
    for (uint32_t k = 0; k < s.large_count; ++k) {
        const uint32_t o = s.large_object[k];
        uint64_t cells = 1;
        uint64_t span = 1;
        for (uint32_t d = 0; d < dims; ++d) {
            const int64_t reach = int64_t{fine_cell(s, d, s.max[d][o])} - fine_cell(s, d, s.min[d][o]);
            const auto extent = static_cast<uint64_t>(reach) + 1;
            cells = cells > (uint64_t{1} << 62) / extent ? uint64_t{1} << 62 : cells * extent; // saturates
            span = std::max(span, extent);
            large_reach[d] = std::max(large_reach[d], reach);
        }
        fine_reads += std::min<uint64_t>(cells, s.cell_count);
        span_sum += span;
    }
    if (fine_reads <= s.object_count) return false;

    // Coarse cells about half the large objects' mean span wide (fewer rows
    // per scan, each run a little longer), wider until the grid fits its
    // arrays (at level 31 every axis has at most two cells). The grid covers
    // the frame's bounds: every small object's cells, whose widest span they
    // hold too, in the rule of fine_cell (the rebuild's cell_of on a box it
    // accepted as small). Large objects outside are clamped in.
    const BoxFrameBounds& f = s.bounds;
    const uint64_t capacity = coarse_cell_capacity(s.max_objects);
    const uint64_t mean_span = std::max<uint64_t>(1, span_sum / s.large_count);
    uint32_t level = static_cast<uint32_t>(std::bit_width(mean_span)) - 1;
    level = level > 0 ? level - 1 : 0;
    while (level < 31 && coarse_cells(f.cell_lo, f.cell_hi, dims, level) > capacity)
        ++level;
    CoarseGrid& g = s.coarse;
    g.level = level;
    for (uint32_t d = 0; d < 3; ++d) {
        g.lo[d] = d < dims ? static_cast<int32_t>(int64_t{f.cell_lo[d]} >> level) : 0;
        g.n[d] = d < dims ? static_cast<uint32_t>((int64_t{f.cell_hi[d]} >> level) - g.lo[d] + 1) : 1;
        g.reach[d] = d < dims ? f.max_span[d] : 0;
        g.large_reach[d] = large_reach[d];
    }
    HASHGRID_ASSERT(uint64_t{g.n[0]} * g.n[1] * g.n[2] <= capacity, "coarse grid: more cells than its arrays hold");
    // The large grid: cells at least the large objects' mean span wide.
    uint32_t large_level = std::max(level, static_cast<uint32_t>(std::bit_width(mean_span - 1)));
    while (large_level < 31 && coarse_cells(f.cell_lo, f.cell_hi, dims, large_level) > capacity)
        ++large_level;
    g.large_level = large_level;
    for (uint32_t d = 0; d < 3; ++d) {
        g.large_lo[d] = d < dims ? static_cast<int32_t>(int64_t{f.cell_lo[d]} >> large_level) : 0;
        g.large_n[d] = d < dims ? static_cast<uint32_t>((int64_t{f.cell_hi[d]} >> large_level) - g.large_lo[d] + 1) : 1;
    }
    g.small = s.object_count - s.large_count;
    g.large_start = s.coarse_start + capacity + 2;
    return true;
}

void build_coarse_grid(BoxState& s) {
    const CoarseGrid& g = s.coarse;
    const uint64_t cells = uint64_t{g.n[0]} * g.n[1] * g.n[2];
    const uint64_t large_cells = uint64_t{g.large_n[0]} * g.large_n[1] * g.large_n[2];
    if (s.dims == 3) {
        bin_objects<3, false>(s, cells, s.coarse_start, 0);
        bin_objects<3, true>(s, large_cells, g.large_start, g.small);
    } else {
        bin_objects<2, false>(s, cells, s.coarse_start, 0);
        bin_objects<2, true>(s, large_cells, g.large_start, g.small);
    }
}

} // namespace hashgrid::detail

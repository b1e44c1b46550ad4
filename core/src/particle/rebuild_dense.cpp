// SPDX-License-Identifier: MIT
// The dense path of unbounded frames, step 2 of the rebuild for frames whose
// occupied cells fit a box of at most dense_capacity cells: particles are
// counting-sorted over that box (as in a bounded world, no per-particle
// hashing) and the non-empty cells are compacted afterwards; they come out in
// key order. The table path gives the same cells and order. Such a frame
// needs no table: readers find its cells through the box map, one entry per
// cell of the box, written by the compaction (or by map_cells for input
// already in cell order). The box is a function of the key set, so is the map.
#include "particle/rebuild_steps.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <atomic>

namespace hashgrid::detail {

namespace {

/// Occupied cells of the dense box (particle_cell holds box indices).
uint64_t count_occupied(GridState& s, uint32_t n, uint32_t box_cells, const ThreadBackend& b) {
    // dense_start is free until the counting sort (dense_count may hold the
    // previous frame's box map): mark each particle's cell.
    uint32_t* mark = s.dense_start;
    fill_u32(b, mark, box_cells, 0);
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            std::atomic_ref<uint32_t>(mark[s.particle_cell[i]]).store(1, std::memory_order_relaxed);
    });
    parallel_chunks(b, box_cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t marked = 0;
        for (uint32_t v = begin; v < end; ++v)
            marked += mark[v];
        s.chunk_scratch[begin / kCellGrain] = marked;
    });
    return scan_chunk_sums(s.chunk_scratch, chunk_count(box_cells, kCellGrain));
}

/// Index in the dense box (x fastest) of a packed key inside it.
inline uint32_t box_index(uint64_t key, uint32_t dims, const int32_t* box_lo, uint32_t ex, uint32_t exy) {
    int32_t x, y, z = 0;
    if (dims == 3)
        unpack_key3(key, x, y, z);
    else
        unpack_key2(key, x, y);
    return static_cast<uint32_t>(x - box_lo[0]) + ex * static_cast<uint32_t>(y - box_lo[1]) +
           exy * static_cast<uint32_t>(z - box_lo[2]);
}

/// The frame's cells are found through the box map from now on (the table
/// keeps whatever it held: the next table frame clears all of it).
void use_box_map(GridState& s, RebuildFrame& f) {
    for (uint32_t d = 0; d < 3; ++d) {
        s.map_lo[d] = f.box_lo[d];
        s.map_extent[d] = f.extent[d];
    }
    s.table_needs_full_clear = true;
    f.mapped = true;
}

} // namespace

void find_dense_box(const GridState& s, RebuildFrame& f) {
    int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX};
    int32_t hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
    for (uint32_t ch = 0; ch < f.chunks; ++ch)
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d] = std::min(lo[d], s.chunk_box[ch * 6 + d]);
            hi[d] = std::max(hi[d], s.chunk_box[ch * 6 + 3 + d]);
        }
    // Wrapped 2D coordinates span up to 2^32 cells per axis: the product is
    // formed only while it stays within the dense capacity.
    const uint64_t capacity = s.dense_capacity;
    uint64_t volume = 1;
    for (uint32_t d = 0; d < 3; ++d) {
        f.box_lo[d] = lo[d];
        const auto e = static_cast<uint64_t>(int64_t{hi[d]} - lo[d] + 1);
        f.extent[d] = e <= capacity ? static_cast<uint32_t>(e) : 0u;
        volume = volume <= capacity && e <= capacity && volume * e <= capacity ? volume * e : capacity + 1;
    }
    f.dense = volume <= capacity;
    if (f.dense) f.cells = static_cast<uint32_t>(volume);
    f.box_repeated = f.dense && s.built && s.mapped;
    for (uint32_t d = 0; d < 3; ++d)
        f.box_repeated = f.box_repeated && f.box_lo[d] == s.map_lo[d] && f.extent[d] == s.map_extent[d];
}

Status dense_cells(GridState& s, RebuildFrame& f, const ThreadBackend& b) {
    const uint32_t n = f.n;
    const uint32_t dims = f.dims;
    const uint32_t cells = f.cells;
    const uint32_t grain = f.grain;
    const uint32_t buckets_max = f.buckets_max;
    const uint32_t shift = bucket_shift(cells, buckets_max);
    f.shift = shift;
    const int32_t* const box_lo = f.box_lo;
    const uint32_t ex = f.extent[0], exy = f.extent[0] * f.extent[1];
    // Dense index within the box, per particle, and the bucket counts: the
    // key pass wrote them (and no keys) if it guessed this very box, the
    // counts unless it left them to the sort (count_skipped_buckets).
    if (!f.keys.guess) {
        parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t i = begin; i < end; ++i)
                s.particle_cell[i] = box_index(s.particle_key[i], dims, box_lo, ex, exy);
            count_buckets(s.particle_cell, begin, end, shift, s.bucket_hist + uint64_t{begin / grain} * buckets_max,
                          buckets_max);
        });
    }
    // A box of at most max_cells cells cannot hold more occupied ones. A
    // larger box may: count them now, before the sort overwrites the previous
    // frame (one more pass, only for such frames).
    if (cells > f.max_cells) {
        s.box_starts = false; // count_occupied marks in dense_start
        const uint64_t distinct = count_occupied(s, n, cells, b);
        if (distinct > f.max_cells) return cell_capacity(distinct);
    }
    return {};
}

void compact_dense_cells(GridState& s, RebuildFrame& f, const ThreadBackend& b) {
    const uint32_t n = f.n;
    const uint32_t dims = f.dims;
    const uint32_t box_cells = f.cells;
    const int32_t* const box_lo = f.box_lo;
    const uint32_t ex = f.extent[0], ey = f.extent[1];
    const uint32_t box_chunks = chunk_count(box_cells, kCellGrain);
    parallel_chunks(b, box_cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t filled = 0;
        for (uint32_t v = begin; v < end; ++v)
            filled += s.dense_start[v + 1] != s.dense_start[v] ? 1 : 0;
        s.chunk_scratch[begin / kCellGrain] = filled;
    });
    const uint64_t distinct = scan_chunk_sums(s.chunk_scratch, box_chunks);
    HASHGRID_ASSERT(distinct <= f.max_cells, "cell_capacity is checked before the sort");
    // The sort is done with dense_count: it becomes the box map.
    uint32_t* const map = s.dense_count;
    parallel_chunks(b, box_cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t out = s.chunk_scratch[begin / kCellGrain];
        // The box coordinates of cell v, stepped along the cells (divisions
        // only at the chunk's start: three per cell cost more than the rest).
        uint32_t x = begin % ex;
        uint32_t y = (begin / ex) % ey;
        uint32_t z = begin / ex / ey;
        for (uint32_t v = begin; v < end; ++v) {
            if (s.dense_start[v + 1] == s.dense_start[v]) {
                map[v] = kNone;
            } else {
                const auto cx = static_cast<int32_t>(x) + box_lo[0];
                const auto cy = static_cast<int32_t>(y) + box_lo[1];
                const auto cz = static_cast<int32_t>(z) + box_lo[2];
                s.cell_key[out] = dims == 3 ? pack_key3(cx, cy, cz) : pack_key2(cx, cy);
                s.cell_start[out] = s.dense_start[v];
                map[v] = static_cast<uint32_t>(out);
                ++out;
            }
            if (++x == ex) {
                x = 0;
                if (++y == ey) {
                    y = 0;
                    ++z;
                }
            }
        }
    });
    const auto cells = static_cast<uint32_t>(distinct);
    s.cell_start[cells] = n;
    use_box_map(s, f);
    f.cells = cells;
}

void map_cells(GridState& s, RebuildFrame& f, uint32_t cells, const ThreadBackend& b) {
    uint32_t* const map = s.dense_count;
    const uint32_t box_cells = f.cells;
    fill_u32(b, map, box_cells, kNone);
    const int32_t* const box_lo = f.box_lo;
    const uint32_t ex = f.extent[0], exy = f.extent[0] * f.extent[1];
    const uint32_t dims = f.dims;
    parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t c = begin; c < end; ++c)
            map[box_index(s.cell_key[c], dims, box_lo, ex, exy)] = c;
    });
    use_box_map(s, f);
    f.cells = cells;
}

} // namespace hashgrid::detail

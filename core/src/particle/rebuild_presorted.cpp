// SPDX-License-Identifier: MIT
// The rebuild of a frame whose input is already in cell order: the common
// case of a caller that keeps its particles in the grid's sorted order
// (sorted_to_original) and a frame in which none crossed a cell boundary, or
// of static geometry rebuilt every frame. The counting sort would move every
// particle to where it already is; instead the cells are read off the runs
// of equal cells, and the sorted copy is a straight copy. The result is the
// general path's, byte for byte: in a sorted input the particles of a cell
// are already in ascending index order, the cells in key order, and the
// unbounded table is the same function of the key set.
#include "particle/rebuild_steps.h"

#include <atomic>
#include <cstring>

namespace hashgrid::detail {

bool input_in_cell_order(const GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    if (f.n == 0) return false;
    uint32_t unsorted = 0;
    // A chunk compares each element with the one before it, the first with
    // the previous chunk's last; unsorted input stops within a few elements.
    parallel_chunks(b, f.n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        if (std::atomic_ref<uint32_t>(unsorted).load(std::memory_order_relaxed) != 0) return;
        const uint32_t from = begin > 0 ? begin : 1;
        bool sorted = true;
        if (f.bounded || f.keys.guess) { // indices in the dense box sort as its keys do

            const uint32_t* cell = s.particle_cell;
            for (uint32_t i = from; i < end && sorted; ++i)
                sorted = cell[i - 1] <= cell[i];
        } else {
            const uint64_t* key = s.particle_key;
            for (uint32_t i = from; i < end && sorted; ++i)
                sorted = key[i - 1] <= key[i];
        }
        if (!sorted) std::atomic_ref<uint32_t>(unsorted).store(1, std::memory_order_relaxed);
    });
    return unsorted == 0;
}

namespace {

/// Bounded: cell_start of every cell from the runs of particle_cell. Cell c
/// starts at the first particle whose cell is >= c.
void bounded_starts(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    const uint32_t* cell = s.particle_cell;
    uint32_t* start = s.cell_start;
    parallel_chunks(b, f.n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            // The cells after the previous particle's, up to this one's (none
            // within a run).
            for (uint32_t c = i == 0 ? 0 : cell[i - 1] + 1; c <= cell[i]; ++c)
                start[c] = i;
        }
    });
    // Cells after the last particle's start (and end) at n.
    const uint32_t after = cell[f.n - 1] + 1;
    fill_u32(b, start + after, f.cells + 1 - after, f.n);
}

/// Unbounded: the distinct keys are the run heads, already in key order.
/// `run` holds what the runs are of (each particle's key, or its index in
/// the dense box when the key pass guessed the box) and key_of turns a run's
/// value into its cell key. Returns their number; writes cell_key and
/// cell_start only when they fit max_cells (the previous frame's keys are
/// needed to restore its table).
template <typename Value, typename KeyOf>
uint64_t cells_from_runs(GridState& s, const RebuildFrame& f, const Value* run, const KeyOf& key_of,
                         const ThreadBackend& b) {
    const uint32_t chunks = chunk_count(f.n, kCellGrain);
    parallel_chunks(b, f.n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t heads = 0;
        for (uint32_t i = begin; i < end; ++i)
            heads += i == 0 || run[i] != run[i - 1] ? 1 : 0;
        s.chunk_scratch[begin / kCellGrain] = heads;
    });
    const uint64_t distinct = scan_chunk_sums(s.chunk_scratch, chunks);
    if (distinct > f.max_cells) return distinct;
    parallel_chunks(b, f.n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t out = s.chunk_scratch[begin / kCellGrain];
        for (uint32_t i = begin; i < end; ++i)
            if (i == 0 || run[i] != run[i - 1]) {
                s.cell_key[out] = key_of(run[i]);
                s.cell_start[out] = i;
                ++out;
            }
    });
    s.cell_start[distinct] = f.n;
    return distinct;
}

uint64_t unbounded_cells_from_runs(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    if (!f.keys.guess)
        return cells_from_runs(
            s, f, s.particle_key, [](uint64_t key) { return key; }, b);
    return cells_from_runs(
        s, f, s.particle_cell, [&f](uint32_t v) { return dense_box_key(f, v); }, b);
}

/// The sorted copy: the identity permutation and the input's positions.
void copy_in_order(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    const KeyParams& k = f.keys;
    parallel_chunks(b, f.n, f.grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            s.order[i] = i;
        const size_t bytes = size_t{end - begin} * sizeof(float);
        for (uint32_t d = 0; d < f.dims; ++d)
            std::memcpy(s.sorted[d] + begin, k.coord[d] + begin, bytes);
        if (k.radius != nullptr) std::memcpy(s.sorted_radius + begin, k.radius + begin, bytes);
    });
}

} // namespace

Status rebuild_presorted(GridState& s, RebuildFrame& f, const ThreadBackend& b) {
    if (f.bounded) {
        bounded_starts(s, f, b);
    } else {
        // Nothing of the frame is written before cell_capacity is known.
        const uint64_t distinct = unbounded_cells_from_runs(s, f, b);
        if (distinct > f.max_cells) return cell_capacity(distinct);
        find_dense_box(s, f);
        if (f.dense) {
            map_cells(s, f, static_cast<uint32_t>(distinct), b);
        } else {
            clear_table(s, b); // reads last frame's cell_slot, which the runs did not touch
            f.cells = static_cast<uint32_t>(distinct);
            table_from_cell_keys(s, f.cells, b);
        }
    }
    copy_in_order(s, f, b);
    return {};
}

} // namespace hashgrid::detail

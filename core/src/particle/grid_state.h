// SPDX-License-Identifier: MIT
// The particle grid's state: one named struct in the grid's memory block
// (after the arrays), filled by name when the block is laid out (grid.cpp). Grid
// itself holds only its config and a pointer to this, so a failed re-init
// (which lays out a new block first) leaves the old state untouched.
#pragma once

#include "particle/grid_internal.h"

#include <cstdint>

namespace hashgrid::detail {

struct GridState {
    // Frame (valid after a successful rebuild).
    uint32_t count = 0;
    uint32_t cell_count = 0; // unbounded: distinct cells; bounded: total cells
    bool built = false;
    bool has_radius = false;
    bool wrapped = false; // unbounded frame with cells beyond the wrap range
    bool table_needs_full_clear = true;
    // Unbounded frame whose cells are found through the box map (dense_count,
    // map_lo, map_extent) instead of the table.
    bool mapped = false;
    int32_t map_lo[3] = {0, 0, 0};
    uint32_t map_extent[3] = {0, 0, 0};
    // dense_start still holds the mapped frame's starts over its box (it was
    // sorted or merged there): the next frame may merge into them.
    bool box_starts = false;
    // The mapped frame's box was also the frame's before it: the next key
    // pass guesses it (KeyParams::guess). Speed only: the guess is checked.
    bool box_repeated = false;
    // The frame skipped the counting sort (its input was in cell order, or
    // last frame's order with few movers): the next key pass expects the
    // same and leaves the bucket counts to the sort, should it run.
    bool skipped_sort = false;
    RebuildTimings rebuild_timings{};
    PairTimings pair_timings{};

    // Sizes fixed at init.
    uint32_t slot_capacity = 0;   // unbounded table slots allocated (power of two), 0 when bounded
    uint32_t block_count = 0;     // blocks of the pair pool
    uint32_t sort_grain = 0;      // particles per chunk of the bucket passes
    uint32_t bucket_capacity = 0; // most buckets per frame (power of two)
    uint32_t dense_capacity = 0;  // unbounded: most cells of the dense-box path

    // Sorted frame.
    uint32_t* order = nullptr;
    float* sorted[3] = {nullptr, nullptr, nullptr};
    float* sorted_radius = nullptr;
    uint32_t* cell_start = nullptr; // cell_count + 1
    uint64_t* cell_key = nullptr;   // unbounded: sorted distinct keys
    uint32_t* cell_slot = nullptr;  // unbounded: table slot of each cell

    // Unbounded table (power-of-two slots, linear probing, priority-ordered).
    // A frame uses the first slot_count slots, sized by its number of cells
    // (table_size_for in rebuild_table.cpp), so that clearing and filling it
    // costs what the live cells do, not max_cells. Slots past slot_count are
    // always empty.
    uint32_t slot_count = 0; // slots in use this frame (power of two), 0 when bounded
    uint32_t slot_shift = 0; // slot = hash >> slot_shift
    uint64_t* slot_key = nullptr;
    uint32_t* slot_cell = nullptr;

    // Scratch, reused every frame.
    uint64_t* particle_key = nullptr;  // unbounded: key of each input particle
    uint32_t* particle_cell = nullptr; // cell of each input particle; neighbor_lists cursors
    uint32_t* cell_cursor = nullptr;   // per-bucket counting-sort cursors
    // Two-level counting sort: particles are first scattered (stably, with
    // their positions) into buckets of consecutive cells, then each bucket is
    // counting-sorted on its own, cache-resident.
    uint32_t* bucket_hist = nullptr;  // [chunk][bucket] counts, then offsets
    uint32_t* bucket_start = nullptr; // bucket_capacity + 1
    // Bucket-ordered copies of the particles: the counting sort's records
    // (2 + dimensions words each, one more with radii: rebuild_sort.cpp), or
    // the merge's arrays below, all in one region of
    // max_particles * (3 + dimensions) words.
    uint32_t* stage = nullptr;
    uint32_t* stage_cell = nullptr;
    uint32_t* stage_index = nullptr;
    float* stage_pos[3] = {nullptr, nullptr, nullptr};
    float* stage_radius = nullptr;
    // Unbounded worlds whose occupied cells fit a small box are counting-sorted
    // over that dense box (no per-particle hashing), then compacted. A frame
    // whose cells fit such a box (mapped) keeps its map from each cell of the
    // box to its cell index in dense_count: written once the frame is
    // committed, and never written before the next one is (a rejected rebuild
    // leaves it).
    uint32_t* dense_start = nullptr;   // dense_capacity + 1
    uint32_t* dense_count = nullptr;   // dense_capacity + 1; the box map of a mapped frame
    int32_t* chunk_box = nullptr;      // per key chunk: min x, y, z, max x, y, z
    uint64_t* key_tmp = nullptr;       // unbounded: radix-sort ping-pong
    uint32_t* radix_hist = nullptr;    // per-chunk digit histograms
    uint64_t* chunk_scratch = nullptr; // per-chunk sums and flags
    BadParticle* bad = nullptr;        // per-chunk validation records

    // Pair pool: blocks of pairs linked per sweep chunk.
    Pair* pair_pool = nullptr;
    uint32_t* block_next = nullptr;
    uint32_t* chunk_first_block = nullptr;
    uint64_t* chunk_pair_count = nullptr;
    uint8_t* chunk_state = nullptr;
};

} // namespace hashgrid::detail

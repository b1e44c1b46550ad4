// SPDX-License-Identifier: MIT
// The steps of the particle grid's rebuild, in the order rebuild.cpp runs
// them. Each step reads and writes the grid's GridState and the frame's
// RebuildFrame (what the steps hand to each other, by name).
//
//   rebuild_keys.cpp   compute_keys: validation and cells / keys per chunk
//   rebuild_dense.cpp  unbounded frames that fit a small box: find_dense_box,
//                      dense_cells, compact_dense_cells, map_cells
//   rebuild_table.cpp  the unbounded table: clear_table, insert_keys,
//                      sort_distinct_cells, lookup_cells (and the table's
//                      helpers: table_from_cell_keys, restore_previous_table)
//   rebuild_sort.cpp   the two-level counting sort: count_skipped_buckets,
//                      scan_buckets, scatter_to_buckets, sort_buckets
//   rebuild_presorted.cpp  input already in cell order: steps 2 and 3 in one
//                      copy (input_in_cell_order, rebuild_presorted)
//   rebuild_merge.cpp  input in last frame's order after small moves (bounded,
//                      or unbounded over last frame's dense box): only the
//                      particles that changed cells are sorted
//                      (merge_possible, rebuild_merged)
#pragma once

#include "lattice/cell_table.h"
#include "lattice/lattice.h"
#include "particle/grid_impl.h"

#include <cstdint>
#include <cstring>

namespace hashgrid::detail {

/// What the key pass reads: the particle spans and the config's lattice.
struct KeyParams {
    const float* coord[3];
    const float* radius;
    Lattice lattice; // make_lattice(config)
    // The key block's range of scaled coordinates, [lower, upper[d]):
    // bounded, the lattice's; unbounded, the fast key formula's.
    double upper[3];
    double lower;
    // Unbounded: last frame's dense box, when this frame is expected to have
    // the same one (GridState::box_repeated). The key pass then writes each
    // particle's index in that box (clamped into it) and the chunks' bucket
    // counts instead of the keys: the dense path's per-particle pass is
    // skipped. After compute_keys, guess is true only if the frame's box is
    // that box (otherwise the pass ran again and wrote the keys).
    bool guess = false;
    int32_t guess_lo[3] = {0, 0, 0};
    uint32_t guess_extent[3] = {1, 1, 1};
    uint32_t guess_shift = 0; // bucket_shift of the box's cells
    // The key pass counts the chunks' buckets (bounded, or guessing the box).
    // Off when last frame skipped the counting sort: a frame in cell order
    // or merged needs no counts, and the sort counts them itself if it runs
    // (count_skipped_buckets).
    bool count = true;
};

/// What the steps of one rebuild hand to each other.
struct RebuildFrame {
    KeyParams keys{};
    uint32_t n = 0; // particles
    uint32_t dims = 3;
    bool bounded = true;
    uint32_t max_cells = 0;
    uint32_t grain = 0;       // particles per chunk of the bucket passes
    uint32_t chunks = 0;      // chunk_count(n, grain)
    uint32_t buckets_max = 0; // bucket capacity: the row length of bucket_hist

    // Cells of the counting sort: bounded, every cell; dense path, the box's
    // cells (the distinct ones after compact_dense_cells); table path, the
    // distinct cells.
    uint32_t cells = 0;
    uint32_t shift = 0;         // bucket of a cell: cell >> shift
    uint32_t buckets = 0;       // buckets in use (scan_buckets)
    bool wrapped = false;       // some cell wrapped (unbounded)
    bool dense = false;         // unbounded: counting-sorted over the dense box
    bool mapped = false;        // unbounded: cells found through the box map (GridState::mapped)
    bool box_sorted = false;    // unbounded: dense_start holds this frame's starts over the box
    bool counting_sort = false; // the frame ran the counting sort (not presorted, not merged)
    int32_t box_lo[3] = {0, 0, 0};
    uint32_t extent[3] = {1, 1, 1}; // dense box cells per axis
    bool box_repeated = false;      // dense, and its box is that of the frame the grid holds (mapped)
};

/// What a rejected rebuild must give back besides the unbounded table.
struct PreviousFrame {
    uint32_t count;
    uint32_t cell_count;
    bool built;
    bool mapped; // found through the box map: the table need not come back
};

// rebuild_keys.cpp

/// Key pass: particle_cell (bounded, with each chunk's bucket counts) or
/// particle_key and chunk_box (unbounded) for every particle; sets wrapped.
/// Unbounded with a guess that held: particle_cell in the box (and the
/// bucket counts) instead of particle_key, and the dense box is found.
/// Writes scratch only: an invalid particle leaves the previous frame intact.
Status compute_keys(GridState& s, RebuildFrame& f, const ThreadBackend& b);

// rebuild_dense.cpp

/// Unbounded, n > 0: sets dense, box_lo, extent, box_repeated and (when
/// dense) cells from the chunks' boxes.
void find_dense_box(const GridState& s, RebuildFrame& f);
/// Dense path: each particle's index in the box and the bucket counts (kept
/// from the key pass when it guessed this box); cell_capacity if the box
/// holds too many occupied cells. Writes scratch only (the previous frame,
/// its table and box map stay).
Status dense_cells(GridState& s, RebuildFrame& f, const ThreadBackend& b);
/// Dense path, after the sort: the non-empty cells of the box become the
/// frame's cells (keys, starts, box map); cells becomes their number.
void compact_dense_cells(GridState& s, RebuildFrame& f, const ThreadBackend& b);
/// The frame's cells (cell_key[0, cells), within the dense box found by
/// find_dense_box) into the box map; sets mapped.
void map_cells(GridState& s, RebuildFrame& f, uint32_t cells, const ThreadBackend& b);

// rebuild_table.cpp

/// Empties the table and marks the frame unbuilt (the table is rewritten first).
void clear_table(GridState& s, const ThreadBackend& b);
/// Inserts every particle's key; sets cells to the distinct count. Too many
/// cells is cell_capacity (exact count), with the previous table restored.
Status insert_keys(GridState& s, RebuildFrame& f, const PreviousFrame& previous, const ThreadBackend& b);
/// The distinct keys in key order: cell_key, cell_slot, slot_cell, cell_count.
void sort_distinct_cells(GridState& s, const RebuildFrame& f, const ThreadBackend& b);
/// Each particle's cell index and the bucket counts; sets shift.
void lookup_cells(GridState& s, RebuildFrame& f, const ThreadBackend& b);
/// Fills the (empty) table with cell_key[0, cells) at table_size_for(cells),
/// sets cell_slot, slot_cell and cell_count.
void table_from_cell_keys(GridState& s, uint32_t cells, const ThreadBackend& b);
/// Smallest table for `cells` occupied cells: a power of two, at least
/// kMinTableSlots and twice the cells, at most `capacity` (the slots allocated).
uint32_t table_size_for(uint32_t cells, uint32_t capacity);
/// cell_capacity found after the table was cleared: rebuilds the previous
/// frame's table from its keys (the same layout: it depends on the key set),
/// unless that frame was mapped (its box map was not touched).
void restore_previous_table(GridState& s, const PreviousFrame& previous, const ThreadBackend& b);
/// The cell_capacity status for `distinct` occupied cells.
Status cell_capacity(uint64_t distinct);

// rebuild_sort.cpp

/// The chunks' bucket counts, where the key pass would have written them
/// but left them out (KeyParams::count): bounded, or guessing the box.
void count_skipped_buckets(GridState& s, const RebuildFrame& f, const ThreadBackend& b);
/// Bucket offsets in (bucket, chunk) order; sets buckets.
void scan_buckets(GridState& s, RebuildFrame& f);
/// Stable scatter of the particles (index, cell, position) into buckets.
void scatter_to_buckets(GridState& s, const RebuildFrame& f, const ThreadBackend& b);
/// Counting sort of each bucket by cell: cell starts, order and the sorted
/// SoA copy (dense path: over the box, in dense_start).
void sort_buckets(GridState& s, const RebuildFrame& f, const ThreadBackend& b);

// rebuild_presorted.cpp

/// After the key pass: whether the input is already in cell order (cells,
/// or unbounded keys, non-decreasing). False for an empty frame.
bool input_in_cell_order(const GridState& s, const RebuildFrame& f, const ThreadBackend& b);
/// Steps 2 and 3 for input in cell order: cells from the runs, the identity
/// order and a straight copy; the same frame as the general path.
/// cell_capacity (previous table restored) if too many cells.
Status rebuild_presorted(GridState& s, RebuildFrame& f, const ThreadBackend& b);

// rebuild_merge.cpp

/// After the key pass, for input not in cell order, where merge_possible
/// (bounded worlds, and unbounded frames sorted over last frame's dense box):
/// when the input is last frame's sorted order with few particles in another
/// cell than last frame (at most about one in eight per 4096 particles),
/// writes the frame (cell starts, over the dense box when unbounded; order;
/// sorted copy) by merging those few into the cells of the others and
/// returns true: the counting sort's frame, byte for byte. Otherwise returns
/// false having written only scratch.
bool rebuild_merged(GridState& s, const RebuildFrame& f, const ThreadBackend& b);
/// Whether rebuild_merged may run: the frame has at least 4096 particles and
/// the grid holds a frame whose cell starts cover this frame's cells (bounded:
/// always; unbounded: last frame was sorted over the same dense box).
bool merge_possible(const GridState& s, const RebuildFrame& f);

// Helpers shared by the steps.

/// counts[values[i] >> shift] += 1 for i in [begin, end). Runs of one value
/// (input in last frame's sorted order) are counted in a register:
/// incrementing the same memory counter back to back would serialise on
/// store forwarding.
inline void add_counts(const uint32_t* values, uint32_t begin, uint32_t end, uint32_t shift, uint32_t* counts) {
    if (begin == end) return;
    uint32_t current = values[begin] >> shift;
    uint32_t run = 0;
    for (uint32_t i = begin; i < end; ++i) {
        const uint32_t value = values[i] >> shift;
        if (value != current) {
            counts[current] += run;
            current = value;
            run = 0;
        }
        ++run;
    }
    counts[current] += run;
}

/// Per-chunk bucket histogram of particle cells.
inline void count_buckets(const uint32_t* particle_cell, uint32_t begin, uint32_t end, uint32_t shift, uint32_t* h,
                          uint32_t buckets) {
    std::memset(h, 0, buckets * sizeof(uint32_t));
    add_counts(particle_cell, begin, end, shift, h);
}

/// Smallest shift that maps `cells` cell indices onto at most `buckets` buckets.
inline uint32_t bucket_shift(uint32_t cells, uint32_t buckets) {
    uint32_t shift = 0;
    while ((uint64_t{cells} + (uint64_t{1} << shift) - 1) >> shift > buckets)
        ++shift;
    return shift;
}

/// Key of the cell at index v of the frame's dense box (x fastest).
inline uint64_t dense_box_key(const RebuildFrame& f, uint32_t v) {
    const uint32_t ex = f.extent[0], ey = f.extent[1];
    const auto x = static_cast<int32_t>(v % ex) + f.box_lo[0];
    const auto y = static_cast<int32_t>(v / ex % ey) + f.box_lo[1];
    const auto z = static_cast<int32_t>(v / ex / ey) + f.box_lo[2];
    return f.dims == 3 ? pack_key3(x, y, z) : pack_key2(x, y);
}

/// Slot holding `key`, or kNone (lattice/cell_table.h).
inline uint32_t find_slot(const GridState& s, uint64_t key) {
    return probe_slot(s.slot_key, s.slot_count - 1, s.slot_shift, key);
}

/// Cell index of `key`, or kNone.
inline uint32_t find_cell(const GridState& s, uint64_t key) {
    return probe_cell(s.slot_key, s.slot_cell, s.slot_count - 1, s.slot_shift, key);
}

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
// The steps of the box grid's rebuild, in the order box_grid_rebuild.cpp runs
// them. Three paths write the frame, byte for byte the same one
// (tests/test_box_update.cpp holds them to it):
//
//   full    every object's entries emitted and radix-sorted
//           (box_grid_rebuild.cpp: emit_entries, the sort, write_cells)
//   merge   few objects changed cells: their entries merged into the
//           previous frame's (box_grid_update.cpp)
//   listed  a store lists what changed since the frame: only those objects
//           are read, their entries updated in place (box_grid_changed.cpp,
//           box_grid_shift.cpp)
//
//   step                   paths          file
//   1 validate_boxes       full, merge    box_grid_validate.cpp
//     (evaluate, listed)   listed         box_grid_changed.cpp
//   2 merge_pays           merge, listed  (the choice of path)
//   3 sort_new_entries     merge, listed  box_grid_update.cpp
//     update_entries       merge          box_grid_update.cpp
//     shift_listed_entries listed         box_grid_shift.cpp
//     patch_moved_boxes    listed         box_grid_update.cpp
//   4 write_row_starts     every path     box_grid_rebuild.cpp
//
// A frame is rejected (bad box, too many entries) in step 1 or 2 only, having
// written scratch and nothing of the frame. Which of BoxState's derived arrays
// hold the frame (object records, bound hits, block summaries, row table) is
// BoxState::valid: the full rebuild invalidates it before step 1 and sets it
// when the frame is accepted.
#pragma once

#include "box/box_grid_internal.h"

#include <cstdint>

namespace hashgrid::detail {

/// Step 1, full and merge: validates boxes [0, n) of `in`, computes each
/// one's cell range into s.object and, per chunk of `grain` objects (a
/// multiple of 64) in s.object_chunk, the entries, large objects, bounds and
/// lowest offending box. With `compare` (s.object and s.min/s.max hold the
/// previous frame, same count: valid.objects), unchanged boxes keep their
/// ranges and every change is recorded in s.change and the chunk's counts;
/// with `summaries` as well (valid.block_summaries), a block of 64 unchanged
/// boxes is counted from its summary. Writes scratch only (s.object and
/// s.block_summary may no longer hold the previous frame afterwards).
void validate_boxes(BoxState& s, const BoxSpans& in, const ThreadBackend& b, uint32_t n, uint32_t grain,
                    uint64_t large_cells, bool compare, bool summaries);

/// Step 2: an update merges when the entries it removes and inserts are at
/// most this share of the previous frame's (1 / kUpdateShare); beyond it the
/// full rebuild's sort is cheaper than the merge's gathers. The listed path
/// falls back to the full rebuild beyond the same share.
inline constexpr uint64_t kUpdateShare = 4;

/// Step 2, merge: whether merging into the previous frame (`entries` entries
/// in `cells` cells; `changed` entries removed plus inserted) costs less than
/// the full build. Measured on one core (AMD EPYC, 2D and 3D scenes of
/// 20k-100k boxes): the merge takes about 12 ns per entry, 10 per cell and 28
/// per changed entry, the full build about 19 per entry; so the merge pays
/// when 4 changed + 1.5 cells <= entries. Scenes of about one entry per cell
/// (small boxes in small cells) take the full build even when few change.
inline bool merge_pays(uint64_t changed, uint64_t cells, uint64_t entries) {
    return changed * kUpdateShare + cells + cells / 2 <= entries;
}

/// Step 3, merge and listed: sorts the `count` new entries in key[0] /
/// owner[0] (new_entries) by (key, object) (a stable radix sort of entries
/// emitted by ascending object); returns the half that holds them. Writes the
/// sort scratch only.
uint32_t sort_new_entries(BoxState& s, const ThreadBackend& b, const NewEntries& n, uint32_t count);

/// Step 3, merge: the frame's cells and entries with the changed objects'
/// entries merged in. Takes: validation passed with comparison (s.object and
/// s.change describe this frame against the previous one), no large-set
/// change, `added` new entries in total (in chunk order at
/// ObjectChunk::moved_offset), `entries` entries after. Leaves: cell_key,
/// cell_start, entry_object, the entry boxes and flags and cell_count of the
/// new frame (the spare halves then hold the previous frame's); when no object
/// changed cells, only the moved objects' entry boxes are rewritten in place.
void update_entries(BoxState& s, const ThreadBackend& b, uint32_t n, uint32_t object_grain, uint64_t added,
                    uint32_t entries);

/// Step 3, listed: the frame's entries updated in place. Takes: the objects
/// with a leaving bit (s.object holds their new ranges) give `added` new
/// entries; the keys of the `removed` entries they leave are in
/// spare_cell_key. Leaves: cell_key, cell_start, the entry arrays and
/// cell_count of the new frame (the spare entry arrays and the sort scratch
/// overwritten). Returns whether a cell was added or removed (then the cell
/// indices after it moved, and the row table must be written again).
bool shift_listed_entries(BoxState& s, const ThreadBackend& b, uint64_t added, uint64_t removed,
                          uint32_t entries_after);

/// Step 3, listed, after shift_listed_entries: the entries of the listed
/// objects whose moved bit is set (and leaving bit not) get their new boxes in
/// place, cell by cell (no object of them changed cells).
void patch_moved_boxes(BoxState& s, const uint32_t* objects, uint32_t count);

/// Step 4, every path, after the frame's cells and s.bounds are written: the
/// row table of the occupied cells (BoxGridView::row_start); sets valid.rows
/// (not built when the occupied box has more rows than the table's slots).
void write_row_starts(BoxState& s, const ThreadBackend& b);

} // namespace hashgrid::detail

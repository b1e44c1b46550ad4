// SPDX-License-Identifier: MIT
// The walk over a box of cells that the queries, scans and pair searches of
// both grid kinds share: the cells of an inclusive CellBox, row by row in key
// order, over any CellIndex.
// - Dense index (bounded particle grids): each row of the box is one run of
//   cells, found by arithmetic; rows without a particle are skipped.
// - Keyed index with a row table (box grid frames: BoxGridView::row_start):
//   two reads per row of the box.
// - Keyed index without one: empty slabs and rows are jumped over by
//   galloping searches of the sorted keys, so a box covering many cells costs
//   its occupied rows and cells, not its volume.
// The particle grid's unbounded queries walk wrapped spans of cells with a
// hashed lookup per short row (query/particle_query_walk.h, visit_spans);
// their rows are the rows of this walk.
#pragma once

#include "lattice/cell_box.h"
#include "lattice/cell_index.h"

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

/// Accepts every row of a walk unchanged.
inline bool every_row(int32_t, int32_t, int32_t&, int32_t&) { return true; }
/// A walk that never stops early.
inline constexpr bool never_stop() { return false; }

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

/// The same walk over a keyed index without a row table: the first occupied
/// cell at or after each row's start is found by a galloping search from the
/// last one (keys only grow along the walk), which jumps over empty rows and
/// slabs before row_ok is asked, so the cost is O(occupied rows of the box *
/// log(cells)) plus the cells visited, however many empty rows it spans.
template <typename RowOk, typename RowFn>
void walk_sorted_rows(const CellIndex& index, const int32_t lo[3], const int32_t hi[3], RowOk&& row_ok,
                      RowFn&& row_fn) {
    const uint64_t* key = index.key;
    const uint32_t cells = index.cell_count;
    uint32_t from = 0; // cells before it are behind the walk
    int32_t z = lo[2];
    int32_t y = lo[1];
    while (z <= hi[2]) {
        if (y > hi[1]) {
            ++z;
            y = lo[1];
            continue;
        }
        uint32_t at = index.lower_bound(index.lat.pack(lo[0], y, z), from);
        if (at == cells) return;
        from = at;
        int32_t kx = 0, ky = 0, kz = 0; // set by coordinates; initialised for GCC 12 under ASan
        index.coordinates(at, kx, ky, kz);
        if (kz != z) { // no occupied cell left in this slab: jump to the next occupied one
            z = kz;
            y = lo[1];
            continue;
        }
        if (ky != y) { // next occupied row of the slab
            y = ky;
            continue;
        }
        int32_t x_lo = lo[0];
        int32_t x_hi = hi[0];
        if (!row_ok(y, z, x_lo, x_hi) || x_lo > x_hi) {
            ++y;
            continue;
        }
        if (x_lo != lo[0]) at = index.lower_bound(index.lat.pack(x_lo, y, z), from);
        const uint64_t last = index.lat.pack(x_hi, y, z);
        uint32_t end = at;
        while (end < cells && key[end] <= last)
            ++end;
        if (at != end && row_fn(at, end, y, z)) return;
        ++y;
    }
}

/// The same walk over a dense index: row (y, z) of the box is cells
/// [linear(x_lo, y, z), linear(x_hi, y, z) + 1), empty ones included; rows
/// without an entry are skipped.
template <typename RowOk, typename RowFn>
void walk_dense_rows(const CellIndex& index, const int32_t lo[3], const int32_t hi[3], RowOk&& row_ok, RowFn&& row_fn) {
    for (int32_t z = lo[2]; z <= hi[2]; ++z)
        for (int32_t y = lo[1]; y <= hi[1]; ++y) {
            int32_t x_lo = lo[0];
            int32_t x_hi = hi[0];
            if (!row_ok(y, z, x_lo, x_hi) || x_lo > x_hi) continue;
            const uint32_t first = index.lat.linear(x_lo, y, z);
            const uint32_t end = first + static_cast<uint32_t>(int64_t{x_hi} - x_lo + 1);
            if (index.start[first] != index.start[end] && row_fn(first, end, y, z)) return;
        }
}

/// Calls row_fn(first, end, y, z) for the rows of `box` (within the index's
/// cells; within the table's occupied box when `table` has rows) that hold
/// cells in their x range: cells [first, end) in key order, rows in
/// ascending (z, y), skipping rows for which row_ok(y, z, x_lo, x_hi) is
/// false (it may narrow [x_lo, x_hi]), until row_fn returns true. Picks the
/// walk for the index (top of this file).
template <typename RowOk, typename RowFn>
void walk_cell_rows(const CellIndex& index, const RowTable* table, const CellBox& box, RowOk&& row_ok, RowFn&& row_fn) {
    if (index.dense())
        walk_dense_rows(index, box.lo, box.hi, row_ok, row_fn);
    else if (table != nullptr && table->start != nullptr)
        walk_table_rows(index, *table, box.lo, box.hi, row_ok, row_fn);
    else
        walk_sorted_rows(index, box.lo, box.hi, row_ok, row_fn);
}

/// Calls cell_fn(cell, x, y, z) for every cell of `box` that holds entries
/// (keyed indexes: every occupied cell; dense: every cell of a row with an
/// entry), in key order, until stop() is true after a cell.
template <typename CellFn, typename Stop>
void walk_cells_in(const CellIndex& index, const RowTable* table, const CellBox& box, CellFn&& cell_fn, Stop&& stop) {
    walk_cell_rows(index, table, box, every_row, [&](uint32_t first, uint32_t end, int32_t y, int32_t z) {
        for (uint32_t cell = first; cell < end; ++cell) {
            int32_t x = 0, cy = 0, cz = 0;
            index.coordinates(cell, x, cy, cz);
            cell_fn(cell, x, y, z);
            if (stop()) return true;
        }
        return false;
    });
}

} // namespace hashgrid::detail

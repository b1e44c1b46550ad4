// SPDX-License-Identifier: MIT
// The cell index of a built grid: which cells hold something and where their
// entries are. Every grid kind stores its frame the same way, entries sorted
// by cell, with
//
//   start[c] .. start[c + 1]   the entries of cell c (cell_count + 1 starts)
//
// and one of four ways to find a cell:
//
//   dense   bounded particle grids: every cell of the box is a cell index,
//           numbered linearly (Lattice::linear), so a cell is found by
//           arithmetic and `key` is null (also the pair sweep's view of an
//           unbounded frame's dense box: make_box_cell_index);
//   hashed  unbounded particle grids: the occupied cells' packed keys,
//           ascending, plus the open-addressing table (cell_table.h) from a
//           key to its cell index;
//   mapped  unbounded particle grids whose cells fit a small box: the keys,
//           ascending, plus a dense map over that box from a cell to its
//           index (no hashing; the rebuild's dense path writes it);
//   sorted  box grids: the occupied cells' packed keys, ascending, found by
//           binary search (no table).
//
// The pair sweep (pair_ranges.h), the particle queries
// (particle_query_walk.h) and the box queries (box_query_internal.h) read the
// frame only through this type, so cell lookup, key order and the decoding
// of a cell index back to its coordinates are written once.
#pragma once

#include "lattice/cell_table.h"
#include "lattice/lattice.h"

#include <cstdint>

namespace hashgrid::detail {

struct CellIndex {
    Lattice lat;
    /// Cells: every cell of the box (dense) or the occupied ones (keyed).
    uint32_t cell_count = 0;
    /// cell_count + 1 entries.
    const uint32_t* start = nullptr;
    /// Cells are named by packed keys (hashed, sorted) rather than numbered
    /// linearly (dense).
    bool keyed = false;
    /// Ascending packed keys of the cells (keyed).
    const uint64_t* key = nullptr;
    /// Open-addressing table of the keys (hashed); slot_key null otherwise.
    const uint64_t* slot_key = nullptr;
    const uint32_t* slot_cell = nullptr;
    uint32_t slot_mask = 0;
    uint32_t slot_shift = 64;
    /// Box map of the keys' unpacked coordinates (mapped); null otherwise.
    const uint32_t* map = nullptr;
    int32_t map_lo[3] = {0, 0, 0};
    uint32_t map_extent[3] = {0, 0, 0};
    /// Unbounded particle frame with cells beyond the wrap range: keys hold
    /// coordinates modulo the period (wrapped_cells.h).
    bool wrapped = false;

    [[nodiscard]] bool dense() const { return !keyed; }
    [[nodiscard]] bool hashed() const { return slot_key != nullptr; }
    [[nodiscard]] bool mapped() const { return map != nullptr; }

    /// Entries of cell c: [begin(c), end(c)).
    [[nodiscard]] uint32_t begin(uint32_t c) const { return start[c]; }
    [[nodiscard]] uint32_t end(uint32_t c) const { return start[c + 1]; }

    /// First keyed cell whose key is >= k (cell_count when none): binary search.
    [[nodiscard]] uint32_t lower_bound(uint64_t k) const { return lower_bound_in(k, 0, cell_count); }

    /// First keyed cell at or after `from` whose key is >= k: gallops forward
    /// from `from`, so a target a few cells on costs a few reads (walks over
    /// ascending keys call this with their current position).
    [[nodiscard]] uint32_t lower_bound(uint64_t k, uint32_t from) const {
        if (from >= cell_count || key[from] >= k) return from;
        uint32_t below = from; // key[below] < k
        uint64_t step = 1;
        uint64_t probe = uint64_t{from} + 1;
        while (probe < cell_count && key[probe] < k) {
            below = static_cast<uint32_t>(probe);
            step *= 2;
            probe = below + step;
        }
        return lower_bound_in(k, below + 1, static_cast<uint32_t>(probe < cell_count ? probe : cell_count));
    }

    /// First cell in [lo, hi) whose key is >= k, or hi.
    [[nodiscard]] uint32_t lower_bound_in(uint64_t k, uint32_t lo, uint32_t hi) const {
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            if (key[mid] < k)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo;
    }

    /// Keyed cell with key k, or kNone (table probe when hashed, the box map
    /// when mapped, else binary search).
    [[nodiscard]] [[gnu::always_inline]] uint32_t find_key(uint64_t k) const {
        if (hashed()) return probe_cell(slot_key, slot_cell, slot_mask, slot_shift, k);
        if (mapped()) return map_find(k);
        const uint32_t c = lower_bound(k);
        return c < cell_count && key[c] == k ? c : kNone;
    }

    /// Cell of key k through the box map, or kNone outside the box.
    [[nodiscard]] [[gnu::always_inline]] uint32_t map_find(uint64_t k) const {
        int32_t x = 0, y = 0, z = 0;
        lat.unpack(k, x, y, z);
        // Unsigned differences: coordinates below the box wrap to large values.
        const uint32_t dx = static_cast<uint32_t>(x) - static_cast<uint32_t>(map_lo[0]);
        const uint32_t dy = static_cast<uint32_t>(y) - static_cast<uint32_t>(map_lo[1]);
        const uint32_t dz = static_cast<uint32_t>(z) - static_cast<uint32_t>(map_lo[2]);
        if (dx >= map_extent[0] || dy >= map_extent[1] || dz >= map_extent[2]) return kNone;
        return map[dx + map_extent[0] * (uint64_t{dy} + uint64_t{map_extent[1]} * dz)];
    }

    /// Cell at valid coordinates (within the lattice's [lo, hi]), or kNone when
    /// a keyed index does not hold it. Dense cells always exist.
    [[nodiscard]] [[gnu::always_inline]] uint32_t find(int64_t x, int64_t y, int64_t z) const {
        if (dense()) return lat.linear(x, y, z);
        return find_key(lat.pack(static_cast<int32_t>(x), static_cast<int32_t>(y), static_cast<int32_t>(z)));
    }

    /// Coordinates of cell c (z = 0 in 2D); keyed: as stored in the key.
    void coordinates(uint32_t c, int32_t& x, int32_t& y, int32_t& z) const {
        if (!dense()) {
            lat.unpack(key[c], x, y, z);
            return;
        }
        x = static_cast<int32_t>(c % lat.n[0]);
        y = static_cast<int32_t>((c / lat.n[0]) % lat.n[1]);
        z = static_cast<int32_t>(c / lat.n[0] / lat.n[1]);
    }
};

/// A dense, hashed or mapped index over a particle grid's cell table.
inline CellIndex make_cell_index(const Lattice& lat, const CellTableView& t) {
    CellIndex ix;
    ix.lat = lat;
    ix.cell_count = t.cell_count;
    ix.start = t.start;
    ix.keyed = !lat.bounded;
    ix.key = t.key;
    ix.wrapped = t.wrapped;
    if (t.slot_count != 0) {
        ix.slot_key = t.slot_key;
        ix.slot_cell = t.slot_cell;
        ix.slot_mask = t.slot_count - 1;
        ix.slot_shift = table_shift(t.slot_count);
    } else if (t.map_cell != nullptr) {
        ix.map = t.map_cell;
        for (uint32_t d = 0; d < 3; ++d) {
            ix.map_lo[d] = t.map_lo[d];
            ix.map_extent[d] = t.map_extent[d];
        }
    }
    return ix;
}

/// A dense index over an unbounded frame's dense box (extent cells per
/// axis, numbered x fastest like a bounded grid's) whose cell starts, empty
/// cells included, are `box_start`. The box's cells sort as their keys do,
/// so a sweep over this index meets the same particle ranges, in the same
/// order, as one over the keyed index, without a lookup per neighbour row.
/// Only for boxes clear of the wrap seam (box_clear_of_seam): a box that
/// spans the whole period holds neighbours at its two ends.
inline CellIndex make_box_cell_index(const Lattice& lat, const uint32_t* box_start, const uint32_t extent[3]) {
    CellIndex ix;
    ix.lat = lat;
    for (uint32_t d = 0; d < 3; ++d)
        ix.lat.n[d] = extent[d];
    ix.cell_count = extent[0] * extent[1] * extent[2]; // at most the dense path's capacity
    ix.start = box_start;
    ix.keyed = false;
    return ix;
}

/// A sorted index over a box grid frame's occupied cells.
inline CellIndex make_sorted_cell_index(const Lattice& lat, const uint64_t* key, const uint32_t* start,
                                        uint32_t cell_count) {
    CellIndex ix;
    ix.lat = lat;
    ix.cell_count = cell_count;
    ix.start = start;
    ix.keyed = true;
    ix.key = key;
    return ix;
}

inline CellIndex make_cell_index(const Lattice& lat, const BoxGridView& v) {
    return make_sorted_cell_index(lat, v.cell_key, v.cell_start, v.cell_count);
}

} // namespace hashgrid::detail

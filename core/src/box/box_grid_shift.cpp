// SPDX-License-Identifier: MIT
// The entries of a listed rebuild (box_grid_changed.cpp) updated in place:
// only the cells that objects leave or enter are merged, and the cells
// between them move as blocks by how many cells and entries the changes
// before them added or removed. The result is the full rebuild's, array for
// array (tests/test_box_update.cpp).
//
// 1. The entries of the objects whose range changed (by ascending object),
//    radix-sorted by key; the keys of the cells they leave, sorted (the
//    caller wrote them into spare_cell_key).
// 2. Touched keys, in key order: each one's old cell (found by its key) and
//    new entries are merged into the spare entry arrays: the old cell's
//    entries whose object stays, with the new ones, by ascending object.
// 3. The untouched cells between touched keys (gaps) move by the changes
//    before them: those that move left from left to right, those that move
//    right from right to left, so no block overwrites one that has not moved
//    yet (their order is kept). Each array and direction is a task of its own.
// 4. The touched cells' merged entries go to their places.
#include "box/box_grid_internal.h"
#include "box/box_rebuild_steps.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace hashgrid::detail {

namespace {

/// The entry arrays of one side (the frame's, or the spare ones used as a buffer).
template <uint32_t D>
struct EntrySide {
    uint32_t* object;
    float* min[3];
    float* max[3];
    uint32_t* flags;

    /// Entries [from, from + count) of `src` to [to, to + count) here.
    void copy(const EntrySide& src, uint32_t from, uint32_t to, uint32_t count) const {
        std::memcpy(object + to, src.object + from, count * sizeof(uint32_t));
        for (uint32_t d = 0; d < D; ++d) {
            std::memcpy(min[d] + to, src.min[d] + from, count * sizeof(float));
            std::memcpy(max[d] + to, src.max[d] + from, count * sizeof(float));
        }
        std::memcpy(flags + to, src.flags + from, count * sizeof(uint32_t));
    }
};

/// Per touched key, four values in a scratch array: the index of the first
/// old cell whose key is not below it, that cell's old first entry, the old
/// cell's entries (0: no such cell) and the merged cell's.
struct Touched {
    uint32_t* info;
    [[nodiscard]] uint32_t first_cell(uint32_t t) const { return info[4 * t]; }
    [[nodiscard]] uint32_t old_start(uint32_t t) const { return info[4 * t + 1]; }
    [[nodiscard]] uint32_t old_count(uint32_t t) const { return info[4 * t + 2]; }
    [[nodiscard]] uint32_t new_count(uint32_t t) const { return info[4 * t + 3]; }
    void set(uint32_t t, uint32_t cell, uint32_t start, uint32_t old_entries, uint32_t new_entries) const {
        info[4 * t] = cell;
        info[4 * t + 1] = start;
        info[4 * t + 2] = old_entries;
        info[4 * t + 3] = new_entries;
    }
    /// Cells and entries the touched key t adds (negative: removes).
    [[nodiscard]] int64_t cell_delta(uint32_t t) const {
        return int64_t{new_count(t) > 0 ? 1 : 0} - int64_t{old_count(t) > 0 ? 1 : 0};
    }
    [[nodiscard]] int64_t entry_delta(uint32_t t) const { return int64_t{new_count(t)} - int64_t{old_count(t)}; }
};

/// The untouched old cells before touched key g (g = touched: after the last one).
struct Gap {
    uint32_t cell_begin, cell_end;
    uint32_t entry_begin, entry_end;
};

Gap gap_before(const Touched& t, uint32_t g, uint32_t touched, uint32_t cells, uint32_t entries) {
    Gap r{};
    r.cell_begin = g == 0 ? 0 : t.first_cell(g - 1) + (t.old_count(g - 1) > 0 ? 1 : 0);
    r.entry_begin = g == 0 ? 0 : t.old_start(g - 1) + t.old_count(g - 1);
    r.cell_end = g == touched ? cells : t.first_cell(g);
    r.entry_end = g == touched ? entries : t.old_start(g);
    return r;
}

/// The frame's entry arrays and the spare ones (the merged cells' buffer).
template <uint32_t D>
struct Sides {
    EntrySide<D> frame;
    EntrySide<D> merged;
};

template <uint32_t D>
Sides<D> entry_sides(const BoxState& s) {
    const uint32_t cur = s.entry_object == s.payload[0] ? 0 : 1;
    return {{s.entry_object,
             {s.entry_min[0], s.entry_min[1], s.entry_min[2]},
             {s.entry_max[0], s.entry_max[1], s.entry_max[2]},
             s.entry_flags},
            {s.payload[1 - cur],
             {s.spare_entry_min[0], s.spare_entry_min[1], s.spare_entry_min[2]},
             {s.spare_entry_max[0], s.spare_entry_max[1], s.spare_entry_max[2]},
             s.spare_entry_flags}};
}

/// What step 1 sorts and step 2 writes: the new entries by (key, object), the
/// left cells' keys, and the touched keys with their cells (in the sort's
/// other halves: at most added + removed <= max_entries / 4 keys).
struct Changes {
    const uint64_t* new_key;
    const uint32_t* new_object;
    uint64_t added;
    const uint64_t* left_key;
    uint64_t removed;
    uint64_t* touched_key;
    Touched touched;
};

/// Step 1: the entries of the objects whose range changed, emitted by
/// ascending object and radix-sorted; the left cells' keys sorted in place.
template <uint32_t D>
Changes sort_changes(BoxState& s, const ThreadBackend& b, uint64_t added, uint64_t removed) {
    const NewEntries fresh = new_entries(s);
    const uint32_t words = (s.object_count + 63) / 64;
    uint64_t e = 0;
    for (uint32_t w = 0; w < words; ++w)
        for (uint64_t bits = s.change.leaving[w]; bits != 0; bits &= bits - 1) {
            const uint32_t i = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
            e = emit_object<D>(unpack<D>(object_records<D>(s)[i]), i, e, fresh.key[0], fresh.owner[0]);
        }
    HASHGRID_ASSERT(e == added, "box shift: emitted entries disagree with the count");
    const uint32_t src = sort_new_entries(s, b, fresh, static_cast<uint32_t>(added));
    uint64_t* left_key = s.spare_cell_key;
    std::sort(left_key, left_key + removed);
    return {fresh.key[src], fresh.owner[src], added, left_key, removed, fresh.key[1 - src], {fresh.owner[1 - src]}};
}

/// Step 2 for touched key k: the old cell's entries [e0, e1) whose object
/// stays, merged with the new entries [j, j_end) by ascending object, to
/// merged entry `out`. Returns the merged entry after the cell's; `dropped`
/// counts the old entries that left.
template <uint32_t D>
uint32_t merge_touched_cell(const BoxState& s, const Sides<D>& side, const Changes& c, uint64_t k, uint32_t e0,
                            uint32_t e1, uint64_t j, uint64_t j_end, uint32_t out, uint64_t& dropped) {
    const EntrySide<D> frame = side.frame;
    const EntrySide<D> merged = side.merged;
    const uint32_t* new_object = c.new_object;
    int32_t at[3] = {0, 0, 0};
    if (j < j_end) Lattice::unpack(D, k, at[0], at[1], at[2]);
    for (uint32_t x = e0; x < e1 || j < j_end;) {
        if (x < e1 && s.change.is_leaving(frame.object[x])) { // left this cell
            ++x;
            ++dropped;
            continue;
        }
        if (x < e1 && (j >= j_end || frame.object[x] < new_object[j])) {
            // The run of entries that stay, up to the next new object: one copy per array.
            const uint32_t below = j < j_end ? new_object[j] : ~0u;
            uint32_t run_end = x + 1;
            while (run_end < e1 && frame.object[run_end] < below && !s.change.is_leaving(frame.object[run_end]))
                ++run_end;
            merged.copy(frame, x, out, run_end - x);
            out += run_end - x;
            x = run_end;
            continue;
        }
        const uint32_t object = new_object[j];
        const ObjectScratch o = unpack<D>(object_records<D>(s)[object]);
        merged.object[out] = object;
        for (uint32_t d = 0; d < D; ++d) {
            merged.min[d][out] = o.min[d];
            merged.max[d][out] = o.max[d];
        }
        merged.flags[out] = first_cell_flags(at[0], at[1], at[2], o.lo);
        ++j;
        ++out;
    }
    return out;
}

/// Step 2: the touched keys (left or entered), in key order, each with its
/// old cell (found by its key) merged into the spare entry arrays one after
/// another. Returns how many keys were touched.
template <uint32_t D>
uint32_t merge_touched(const BoxState& s, const Sides<D>& side, const Changes& c) {
    const uint32_t cells = s.cell_count;
    const uint64_t* cell_key = s.cell_key;
    const uint32_t* cell_start = s.cell_start;
    uint32_t t = 0;
    uint32_t first = 0; // lower bound of the next touched key among the old cells
    uint32_t out = 0;   // merged entries written
    for (uint64_t r = 0, j = 0; r < c.removed || j < c.added;) {
        const uint64_t k =
            j >= c.added || (r < c.removed && c.left_key[r] <= c.new_key[j]) ? c.left_key[r] : c.new_key[j];
        uint64_t r_end = r, j_end = j;
        while (r_end < c.removed && c.left_key[r_end] == k)
            ++r_end;
        while (j_end < c.added && c.new_key[j_end] == k)
            ++j_end;
        first = static_cast<uint32_t>(std::lower_bound(cell_key + first, cell_key + cells, k) - cell_key);
        const bool exists = first < cells && cell_key[first] == k;
        const uint32_t e0 = cell_start[first];
        const uint32_t e1 = exists ? cell_start[first + 1] : e0;
        const uint32_t cell_out = out;
        uint64_t dropped = 0;
        out = merge_touched_cell<D>(s, side, c, k, e0, e1, j, j_end, out, dropped);
        HASHGRID_ASSERT(dropped == r_end - r, "box shift: a left cell lacks an entry of its object");
        (void)dropped;
        c.touched_key[t] = k;
        c.touched.set(t, first, e0, e1 - e0, out - cell_out);
        ++t;
        first += exists ? 1 : 0;
        r = r_end;
        j = j_end;
    }
    return t;
}

/// Step 3: the gaps move by the changes before them (total_cells and
/// total_entries: those of every touched key). Each array moves on its own,
/// and the gaps that move left never overlap those that move right (sources
/// or targets: their order is kept), so every (array, direction) is an
/// independent task: left-moving gaps from the left, right-moving ones from
/// the right.
template <uint32_t D>
void move_gaps(BoxState& s, const ThreadBackend& b, const EntrySide<D>& frame, const Touched& touched,
               uint32_t count_touched, int64_t total_cells, int64_t total_entries) {
    const uint32_t cells = s.cell_count;
    const uint32_t entries = s.entry_count;
    uint64_t* cell_key = s.cell_key;
    uint32_t* cell_start = s.cell_start;
    // Every entry array holds 4-byte values: moved as bytes.
    const auto bytes = [](void* a) { return static_cast<unsigned char*>(a); };
    unsigned char* const entry_arrays[8] = {bytes(frame.object), bytes(frame.flags),  bytes(frame.min[0]),
                                            bytes(frame.max[0]), bytes(frame.min[1]), bytes(frame.max[1]),
                                            bytes(frame.min[2]), bytes(frame.max[2])};
    const uint32_t entry_array_count = 2 + 2 * D;
    const uint32_t tasks = 2 * (entry_array_count + 2);
    parallel_chunks(b, tasks, 1, [&](uint32_t task, uint32_t, uint32_t) {
        const bool rightwards = task % 2 == 1;
        const uint32_t array = task / 2; // entry arrays, then cell_key, then cell_start
        // The gaps in the order this direction needs, with the changes before each.
        int64_t dc = rightwards ? total_cells : 0;
        int64_t de = rightwards ? total_entries : 0;
        for (uint32_t step = 0; step <= count_touched; ++step) {
            const uint32_t g = rightwards ? count_touched - step : step;
            if (rightwards && g < count_touched) {
                dc -= touched.cell_delta(g);
                de -= touched.entry_delta(g);
            }
            const Gap gap = gap_before(touched, g, count_touched, cells, entries);
            if (array < entry_array_count) {
                if (de != 0 && (de > 0) == rightwards && gap.entry_end > gap.entry_begin)
                    std::memmove(entry_arrays[array] + (gap.entry_begin + de) * 4,
                                 entry_arrays[array] + gap.entry_begin * 4,
                                 (gap.entry_end - gap.entry_begin) * size_t{4});
            } else if (gap.cell_end > gap.cell_begin) {
                const uint32_t n = gap.cell_end - gap.cell_begin;
                const auto to = static_cast<uint32_t>(gap.cell_begin + dc);
                const bool moves = dc != 0 && (dc > 0) == rightwards;
                if (array == entry_array_count) {
                    if (moves) std::memmove(cell_key + to, cell_key + gap.cell_begin, n * sizeof(uint64_t));
                } else if (moves || (dc == 0 && de != 0 && !rightwards)) { // unmoved starts shift in the left pass
                    if (moves) std::memmove(cell_start + to, cell_start + gap.cell_begin, n * sizeof(uint32_t));
                    for (uint32_t c = to; c < to + n; ++c)
                        cell_start[c] = static_cast<uint32_t>(cell_start[c] + de);
                }
            }
            if (!rightwards && g < count_touched) {
                dc += touched.cell_delta(g);
                de += touched.entry_delta(g);
            }
        }
    });
}

/// Step 4: the merged cells to their places among the moved gaps.
template <uint32_t D>
void place_touched(BoxState& s, const Sides<D>& side, const Changes& c, uint32_t count_touched) {
    int64_t dc = 0, de = 0;
    uint32_t from = 0;
    for (uint32_t g = 0; g < count_touched; ++g) {
        const uint32_t n = c.touched.new_count(g);
        if (n > 0) {
            const auto cell = static_cast<uint32_t>(c.touched.first_cell(g) + dc);
            const auto at = static_cast<uint32_t>(c.touched.old_start(g) + de);
            side.frame.copy(side.merged, from, at, n);
            s.cell_key[cell] = c.touched_key[g];
            s.cell_start[cell] = at;
            from += n;
        }
        dc += c.touched.cell_delta(g);
        de += c.touched.entry_delta(g);
    }
}

/// Steps 1-4; true when some cell was added or removed (cell indices moved).
template <uint32_t D>
bool shift(BoxState& s, const ThreadBackend& b, uint64_t added, uint64_t removed, uint32_t entries_after) {
    const Changes c = sort_changes<D>(s, b, added, removed);
    const Sides<D> side = entry_sides<D>(s);
    const uint32_t count_touched = merge_touched<D>(s, side, c);
    int64_t total_cells = 0, total_entries = 0;
    bool cells_moved = false;
    for (uint32_t g = 0; g < count_touched; ++g) {
        total_cells += c.touched.cell_delta(g);
        total_entries += c.touched.entry_delta(g);
        cells_moved = cells_moved || c.touched.cell_delta(g) != 0;
    }
    HASHGRID_ASSERT(int64_t{s.entry_count} + total_entries == int64_t{entries_after}, "box shift: entry count");
    move_gaps<D>(s, b, side.frame, c.touched, count_touched, total_cells, total_entries);
    place_touched<D>(s, side, c, count_touched);
    const auto cells_after = static_cast<uint32_t>(int64_t{s.cell_count} + total_cells);
    s.cell_start[cells_after] = entries_after;
    s.cell_count = cells_after;
    return cells_moved;
}

} // namespace

bool shift_listed_entries(BoxState& s, const ThreadBackend& b, uint64_t added, uint64_t removed,
                          uint32_t entries_after) {
    return s.dims == 3 ? shift<3>(s, b, added, removed, entries_after) : shift<2>(s, b, added, removed, entries_after);
}

} // namespace hashgrid::detail

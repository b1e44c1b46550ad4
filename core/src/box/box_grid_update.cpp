// SPDX-License-Identifier: MIT
// BoxGrid::rebuild when few objects changed cells: the previous frame's cells
// and entries are merged with the entries of the objects whose cell range
// changed, instead of emitting and sorting every entry again. The result is
// the full rebuild's, array for array (tests/test_box_update.cpp holds it to
// that every frame of a churn).
//
// 1. New entries (packed cell key, object) of the objects whose range changed,
//    in object order at each chunk's offset, then a stable radix sort by key:
//    ascending (key, object).
// 2. The previous frame's cells in fixed chunks; each chunk takes the new
//    entries whose keys fall between its first key and the next chunk's.
//    Per chunk the merged cells and entries are counted, offsets come from a
//    scan in chunk order, and the chunk writes them into the spare half of the
//    cell and entry arrays: a cell's surviving entries (objects whose range
//    changed dropped) and its new ones, by ascending object.
// 3. The halves swap. An entry keeps its box copy when its object's box is
//    bit-identical, else it takes the new box; its first-cell flags stay (the
//    cell and the object's range did not change) or are computed (new entry).
// When no object changed cells, the boxes of the moved objects are rewritten
// in place and nothing moves: by one pass over every entry here, or, for the
// few objects a store's change log lists (box_grid_changed.cpp), by looking
// up each one's entries (patch_moved_boxes).
#include "box/box_grid_internal.h"
#include "box/box_rebuild_steps.h"
#include "lattice/radix_sort.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

namespace hashgrid::detail {

namespace {

/// Old cells per merge chunk, at least.
constexpr uint32_t kMergeGrain = 1024;
/// Entries ahead whose object the merge prefetches.
constexpr uint32_t kGatherAhead = 16;
/// Entries of a run of untouched cells from which the merge copies it array
/// by array (memcpy) rather than entry by entry.
constexpr uint32_t kBulkRun = 64;

/// The entry arrays of one half (current or spare).
struct EntryArrays {
    uint64_t* cell_key;
    uint32_t* cell_start;
    uint32_t* object;
    float* min[3];
    float* max[3];
    uint32_t* flags;
};

/// Walks one merge chunk: old cells [c0, c1) and new entries [n0, n1), both
/// by ascending key; calls cell(key, old cell or kNone, new range) for each
/// key present in either, in key order.
template <typename Cell>
[[gnu::always_inline]] inline void walk_keys(const EntryArrays& old, uint32_t c0, uint32_t c1, const uint64_t* new_key,
                                             uint64_t n0, uint64_t n1, Cell&& cell) {
    uint32_t c = c0;
    uint64_t j = n0;
    while (c < c1 || j < n1) {
        const bool take_old = c < c1 && (j >= n1 || old.cell_key[c] <= new_key[j]);
        const uint64_t key = take_old ? old.cell_key[c] : new_key[j];
        const uint32_t from = take_old ? c++ : kNone;
        const uint64_t j0 = j;
        while (j < n1 && new_key[j] == key)
            ++j;
        cell(key, from, j0, j);
    }
}

/// What every chunk of a merge reads: the two halves, this frame's object
/// records, the change bits and the sorted new entries.
template <uint32_t D>
struct MergeInput {
    EntryArrays old; // the current frame's half
    EntryArrays out; // the spare half, written
    const ObjectRecord<D>* objects;
    ChangeBits change;
    const uint64_t* new_key;
    const uint32_t* new_object;
    uint64_t added;  // new entries
    uint32_t cells;  // old cells
    uint32_t chunks; // of grain_for(cells, kMergeGrain, kMaxEntryChunks) old cells
};

/// The new entries of the chunk of old cells [begin, end): keys in [first
/// key of begin, first key of end).
template <uint32_t D>
void new_range(const MergeInput<D>& m, uint32_t begin, uint32_t end, uint64_t& n0, uint64_t& n1) {
    const uint64_t* keys = m.new_key;
    n0 = begin == 0 ? 0 : static_cast<uint64_t>(std::lower_bound(keys, keys + m.added, m.old.cell_key[begin]) - keys);
    n1 = end == m.cells ? m.added
                        : static_cast<uint64_t>(std::lower_bound(keys, keys + m.added, m.old.cell_key[end]) - keys);
}

/// The cells and entries the chunk of old cells [begin, end) merges into.
template <uint32_t D>
MergeCounts count_chunk(const MergeInput<D>& m, uint32_t begin, uint32_t end) {
    uint64_t n0 = 0, n1 = 0;
    new_range(m, begin, end, n0, n1);
    MergeCounts c{0, n1 - n0};
    walk_keys(m.old, begin, end, m.new_key, n0, n1, [&](uint64_t, uint32_t from, uint64_t j0, uint64_t j1) {
        uint64_t kept = 0;
        if (from != kNone)
            for (uint32_t e = m.old.cell_start[from]; e < m.old.cell_start[from + 1]; ++e)
                kept += m.change.is_leaving(m.old.object[e]) ? 0 : 1;
        c.entries += kept;
        c.cells += (kept + (j1 - j0)) > 0 ? 1 : 0;
    });
    return c;
}

/// The chunks' counts become their offsets, in chunk order; returns the totals.
MergeCounts scan_counts(MergeCounts* counts, uint32_t chunks) {
    MergeCounts total{0, 0};
    for (uint32_t k = 0; k < chunks; ++k) {
        const MergeCounts c = counts[k];
        counts[k] = total;
        total.cells += c.cells;
        total.entries += c.entries;
    }
    return total;
}

/// A run of old cells [first, first + cells) that keep their entries, to
/// output cell oc and entry oe. A long run is copied array by array (memcpy),
/// then the objects that moved within their cells get their new boxes; a
/// short one (scenes of about one entry per cell have many) in one loop over
/// its entries, which costs less than a copy call per array.
template <uint32_t D>
[[gnu::always_inline]] inline void copy_run(const MergeInput<D>& m, uint32_t first, uint32_t cells, uint32_t oc,
                                            uint32_t oe) {
    // Local restrict copies of the arrays: no store below changes where they point.
    const uint32_t* __restrict old_start = m.old.cell_start;
    const uint64_t* __restrict old_key = m.old.cell_key;
    const uint32_t* __restrict old_object = m.old.object;
    const uint32_t* __restrict old_flags = m.old.flags;
    uint64_t* __restrict out_key = m.out.cell_key;
    uint32_t* __restrict out_start = m.out.cell_start;
    uint32_t* __restrict out_object = m.out.object;
    uint32_t* __restrict out_flags = m.out.flags;
    float* __restrict min_x = m.out.min[0];
    float* __restrict min_y = m.out.min[1];
    float* __restrict min_z = m.out.min[2];
    float* __restrict max_x = m.out.max[0];
    float* __restrict max_y = m.out.max[1];
    float* __restrict max_z = m.out.max[2];
    float* const out_min[3] = {min_x, min_y, min_z};
    float* const out_max[3] = {max_x, max_y, max_z};
    const ObjectRecord<D>* objects = m.objects;
    const ChangeBits change = m.change;
    const uint32_t e0 = old_start[first];
    const uint32_t e1 = old_start[first + cells];
    const size_t run = e1 - e0;
    for (uint32_t c = 0; c < cells; ++c) {
        out_key[oc + c] = old_key[first + c];
        out_start[oc + c] = old_start[first + c] - e0 + oe;
    }
    if (run >= kBulkRun) {
        std::memcpy(out_object + oe, old_object + e0, run * sizeof(uint32_t));
        for (uint32_t d = 0; d < D; ++d) {
            std::memcpy(out_min[d] + oe, m.old.min[d] + e0, run * sizeof(float));
            std::memcpy(out_max[d] + oe, m.old.max[d] + e0, run * sizeof(float));
        }
        std::memcpy(out_flags + oe, old_flags + e0, run * sizeof(uint32_t));
        for (uint32_t k = e0; k < e1; ++k) {
            if (k + kGatherAhead < e1) __builtin_prefetch(&objects[old_object[k + kGatherAhead]]);
            const uint32_t object = old_object[k];
            if (change.is_moved(object))
                put_entry_box<D>(min_x, min_y, min_z, max_x, max_y, max_z, oe + (k - e0), objects[object]);
        }
    } else {
        for (uint32_t k = e0; k < e1; ++k) {
            const uint32_t at = oe + (k - e0);
            out_object[at] = old_object[k];
            out_flags[at] = old_flags[k];
            for (uint32_t d = 0; d < D; ++d) {
                out_min[d][at] = m.old.min[d][k];
                out_max[d][at] = m.old.max[d][k];
            }
        }
        for (uint32_t k = e0; k < e1; ++k) {
            const uint32_t object = old_object[k];
            if (change.is_moved(object))
                put_entry_box<D>(min_x, min_y, min_z, max_x, max_y, max_z, oe + (k - e0), objects[object]);
        }
    }
}

/// One cell that entries enter or leave, merged to output entry oe: the old
/// entries [e, e_end) that stay, with the new ones [j0, j1) put before the
/// first old entry of a higher object (an object that left has no old entry
/// kept, its new ones come from new_object), then their boxes in one gather.
/// The loops fetch the records of old entries ahead, across cells (small
/// cells have too few entries to fetch ahead within one), up to entries_end.
/// Returns the output entry after the cell's.
template <uint32_t D>
[[gnu::always_inline]] inline uint32_t merge_cell(const MergeInput<D>& m, uint64_t key, uint32_t e, uint32_t e_end,
                                                  uint64_t j0, uint64_t j1, uint32_t oe, uint32_t entries_end) {
    const uint32_t* __restrict old_object = m.old.object;
    const uint32_t* __restrict old_flags = m.old.flags;
    uint32_t* __restrict out_object = m.out.object;
    uint32_t* __restrict out_flags = m.out.flags;
    float* __restrict min_x = m.out.min[0];
    float* __restrict min_y = m.out.min[1];
    float* __restrict min_z = m.out.min[2];
    float* __restrict max_x = m.out.max[0];
    float* __restrict max_y = m.out.max[1];
    float* __restrict max_z = m.out.max[2];
    const ObjectRecord<D>* objects = m.objects;
    const ChangeBits change = m.change;
    const uint32_t* new_object = m.new_object;
    const auto fetch_ahead = [&](uint32_t at) {
        if (at + kGatherAhead < entries_end) __builtin_prefetch(&objects[old_object[at + kGatherAhead]]);
    };
    uint32_t o = oe;
    if (j0 == j1) {
        for (; e < e_end; ++e) {
            fetch_ahead(e);
            const uint32_t object = old_object[e];
            if (change.is_leaving(object)) continue; // moved out of this cell
            out_object[o] = object;
            out_flags[o] = old_flags[e];
            ++o;
        }
    } else {
        int32_t at[3] = {0, 0, 0};
        Lattice::unpack(D, key, at[0], at[1], at[2]);
        uint64_t j = j0;
        uint32_t next = new_object[j]; // the next new object; kNone past the last (objects < 2^31)
        for (;;) {
            const uint32_t object = e < e_end ? old_object[e] : kNone;
            // New entries (objects whose range changed and now cover this cell).
            while (next < object) {
                const ObjectScratch r = unpack<D>(objects[next]);
                out_object[o] = next;
                out_flags[o] = first_cell_flags(at[0], at[1], at[2], r.lo);
                ++o;
                next = ++j < j1 ? new_object[j] : kNone;
            }
            if (e == e_end) break;
            fetch_ahead(e);
            ++e;
            if (change.is_leaving(object)) continue; // moved out of this cell, or re-entered as new
            out_object[o] = object;
            out_flags[o] = old_flags[e - 1];
            ++o;
        }
    }
    for (uint32_t k = oe; k < o; ++k)
        put_entry_box<D>(min_x, min_y, min_z, max_x, max_y, max_z, k, objects[out_object[k]]);
    return o;
}

/// Writes the chunk of old cells [begin, end) merged with its new entries
/// into the spare half, from its offsets `at`. Most cells (nothing enters or
/// leaves) join a run of untouched cells that copy_run copies at once.
template <uint32_t D>
void write_chunk(const MergeInput<D>& m, uint32_t begin, uint32_t end, MergeCounts at) {
    uint64_t n0 = 0, n1 = 0;
    new_range(m, begin, end, n0, n1);
    auto oc = static_cast<uint32_t>(at.cells);
    auto oe = static_cast<uint32_t>(at.entries);
    const uint32_t* __restrict old_start = m.old.cell_start;
    const uint32_t* __restrict old_object = m.old.object;
    uint64_t* __restrict out_key = m.out.cell_key;
    uint32_t* __restrict out_start = m.out.cell_start;
    const ChangeBits change = m.change;
    const uint32_t entries_end = old_start[end];
    uint32_t run_first = 0;
    uint32_t run_cells = 0;
    const auto flush = [&] {
        if (run_cells == 0) return;
        copy_run(m, run_first, run_cells, oc, oe);
        oc += run_cells;
        oe += old_start[run_first + run_cells] - old_start[run_first];
        run_cells = 0;
    };
    walk_keys(m.old, begin, end, m.new_key, n0, n1, [&](uint64_t key, uint32_t from, uint64_t j0, uint64_t j1) {
        const uint32_t e = from != kNone ? old_start[from] : 0;
        const uint32_t e_end = from != kNone ? old_start[from + 1] : 0;
        if (j0 == j1 && e < e_end) {
            bool leaves = false;
            for (uint32_t k = e; k < e_end; ++k)
                leaves = leaves | change.is_leaving(old_object[k]);
            if (!leaves) {
                if (run_cells == 0) run_first = from;
                ++run_cells;
                return;
            }
        }
        flush();
        const uint32_t cell_begin = oe;
        oe = merge_cell(m, key, e, e_end, j0, j1, oe, entries_end);
        if (oe > cell_begin) {
            out_key[oc] = key;
            out_start[oc] = cell_begin;
            ++oc;
        }
    });
    flush();
}

/// The spare half becomes the frame's (the current one the spare).
void swap_halves(BoxState& s, uint32_t* entry_object, uint32_t cells) {
    std::swap(s.cell_key, s.spare_cell_key);
    std::swap(s.cell_start, s.spare_cell_start);
    for (uint32_t d = 0; d < 3; ++d) {
        std::swap(s.entry_min[d], s.spare_entry_min[d]);
        std::swap(s.entry_max[d], s.spare_entry_max[d]);
    }
    std::swap(s.entry_flags, s.spare_entry_flags);
    s.entry_object = entry_object;
    s.cell_count = cells;
}

/// Steps 2-3: the previous frame's cells in fixed chunks, each with the new
/// entries of its keys, counted, scanned in chunk order, written into the
/// spare half; then the halves swap.
template <uint32_t D>
void merge_entries(BoxState& s, const ThreadBackend& b, uint64_t added, const uint64_t* new_key,
                   const uint32_t* new_object, MergeCounts* counts, uint32_t entries) {
    const uint32_t cur = s.entry_object == s.payload[0] ? 0 : 1;
    const uint32_t cells = s.cell_count;
    const auto grain = static_cast<uint32_t>(grain_for(cells, kMergeGrain, kMaxEntryChunks));
    const MergeInput<D> m{{s.cell_key,
                           s.cell_start,
                           s.entry_object,
                           {s.entry_min[0], s.entry_min[1], s.entry_min[2]},
                           {s.entry_max[0], s.entry_max[1], s.entry_max[2]},
                           s.entry_flags},
                          {s.spare_cell_key,
                           s.spare_cell_start,
                           s.payload[1 - cur],
                           {s.spare_entry_min[0], s.spare_entry_min[1], s.spare_entry_min[2]},
                           {s.spare_entry_max[0], s.spare_entry_max[1], s.spare_entry_max[2]},
                           s.spare_entry_flags},
                          object_records<D>(s),
                          s.change,
                          new_key,
                          new_object,
                          added,
                          cells,
                          chunk_count(cells, grain)};
    parallel_chunks(b, cells, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        counts[begin / grain] = count_chunk(m, begin, end);
    });
    const MergeCounts total = scan_counts(counts, m.chunks);
    HASHGRID_ASSERT(total.entries == entries, "box update: merged entries disagree with the validated count");
    (void)entries;
    parallel_chunks(b, cells, grain,
                    [&](uint32_t begin, uint32_t end, uint32_t) { write_chunk(m, begin, end, counts[begin / grain]); });
    m.out.cell_start[total.cells] = static_cast<uint32_t>(total.entries);
    swap_halves(s, s.payload[1 - cur], static_cast<uint32_t>(total.cells));
}

/// No object changed cells: rewrite the boxes of the moved ones in place.
template <uint32_t D>
void refresh_boxes(BoxState& s, const ThreadBackend& b, uint32_t entries) {
    const auto grain = static_cast<uint32_t>(grain_for(entries, kEntryGrain, kMaxEntryChunks));
    parallel_chunks(b, entries, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t e = begin; e < end; ++e) {
            const uint32_t object = s.entry_object[e];
            if (!s.change.is_moved(object)) continue;
            const ObjectRecord<D>& o = object_records<D>(s)[object];
            for (uint32_t d = 0; d < D; ++d) {
                s.entry_min[d][e] = o.min[d];
                s.entry_max[d][e] = o.max[d];
            }
        }
    });
}

template <uint32_t D>
void update(BoxState& s, const ThreadBackend& b, uint32_t n, uint32_t object_grain, uint64_t added, uint32_t entries) {
    if (added == 0) { // every small object covers a cell: no object changed cells
        refresh_boxes<D>(s, b, entries);
        return;
    }
    // 1. New entries into the halves of the sort scratch (added <= max_entries / 4).
    const NewEntries fresh = new_entries(s);
    parallel_chunks(b, n, object_grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const ObjectChunk& chunk = s.object_chunk[begin / object_grain];
        if (chunk.moved == 0) return;
        uint64_t e = chunk.moved_offset;
        // Chunks start at multiples of 64 objects and own their words; no bit is set at or past n.
        for (uint32_t w = begin / 64; w < (end + 63) / 64; ++w) {
            for (uint64_t bits = s.change.leaving[w]; bits != 0; bits &= bits - 1) {
                const uint32_t i = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
                e = emit_object<D>(unpack<D>(object_records<D>(s)[i]), i, e, fresh.key[0], fresh.owner[0]);
            }
        }
    });
    const uint32_t src = sort_new_entries(s, b, fresh, static_cast<uint32_t>(added));
    // 2-3. Merge into the spare half and swap.
    merge_entries<D>(s, b, added, fresh.key[src], fresh.owner[src], s.merge_counts, entries);
}

/// The entries of one object that moved within its cells get its new box.
/// Its cells on one (z, y) row are consecutive occupied cells (keys ascend
/// by z, y, x and the object occupies each one): one key lookup per row.
/// Within a cell, the entry is found by its object (a cell's entries ascend
/// by object).
template <uint32_t D>
void patch_object(BoxState& s, uint32_t object) {
    const ObjectScratch o = unpack<D>(object_records<D>(s)[object]);
    const uint64_t* keys = s.cell_key;
    const uint32_t* objects = s.entry_object;
    const auto last_x = static_cast<uint32_t>(o.hi[0] - o.lo[0]); // cells after the row's first
    for (int32_t z = o.lo[2]; z <= o.hi[2]; ++z)
        for (int32_t y = o.lo[1]; y <= o.hi[1]; ++y) {
            const uint64_t key = Lattice::pack(D, o.lo[0], y, z);
            auto c = static_cast<uint32_t>(std::lower_bound(keys, keys + s.cell_count, key) - keys);
            HASHGRID_ASSERT(c + last_x < s.cell_count && keys[c] == key &&
                                keys[c + last_x] == Lattice::pack(D, o.hi[0], y, z),
                            "box update: a moved object's cells are missing");
            for (const uint32_t row_end = c + last_x; c <= row_end; ++c) {
                const auto e = static_cast<uint32_t>(
                    std::lower_bound(objects + s.cell_start[c], objects + s.cell_start[c + 1], object) - objects);
                HASHGRID_ASSERT(e < s.cell_start[c + 1] && objects[e] == object,
                                "box update: a moved object's entry is missing");
                for (uint32_t d = 0; d < D; ++d) {
                    s.entry_min[d][e] = o.min[d];
                    s.entry_max[d][e] = o.max[d];
                }
            }
        }
}

} // namespace

uint32_t sort_new_entries(BoxState& s, const ThreadBackend& b, const NewEntries& n, uint32_t count) {
    const auto entry_grain = static_cast<uint32_t>(grain_for(count, kEntryGrain, kMaxEntryChunks));
    const uint64_t varying = varying_bits(b, n.key[0], count, entry_grain, s.entry_chunk);
    return radix_sort<uint64_t>(b, n.key, n.owner, count, varying, kMaxDigitBits, s.radix_hist, entry_grain);
}

void patch_moved_boxes(BoxState& s, const uint32_t* objects, uint32_t count) {
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t i = objects[k];
        if (!s.change.is_moved(i) || s.change.is_leaving(i) || s.is_large[i] != 0) continue;
        if (s.dims == 3)
            patch_object<3>(s, i);
        else
            patch_object<2>(s, i);
    }
}

void update_entries(BoxState& s, const ThreadBackend& b, uint32_t n, uint32_t object_grain, uint64_t added,
                    uint32_t entries) {
    if (s.dims == 3)
        update<3>(s, b, n, object_grain, added, entries);
    else
        update<2>(s, b, n, object_grain, added, entries);
}

} // namespace hashgrid::detail

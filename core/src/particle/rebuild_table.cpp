// SPDX-License-Identifier: MIT
// The unbounded table, step 2 of the rebuild for frames that do not fit the
// dense box: every particle's key is inserted into the open-addressing table
// with priority-ordered linear probing (Shun & Blelloch, "Phase-concurrent
// hash tables for determinism", SPAA 2014), so the layout depends only on the
// key set, never on timing. The distinct keys are compacted in slot order and
// radix-sorted, giving cells in lexicographic (z, y, x) order; each particle
// then looks up its cell index.
#include "lattice/radix_sort.h"
#include "particle/rebuild_steps.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

namespace hashgrid::detail {

namespace {

/// A chunk's share of the table's fill counter. Slots are reserved from the
/// shared counter in blocks, so most inserts touch no shared cache line; what
/// is left is returned at the end. The shared counter thus never undercounts
/// the keys in the table, and equals their number once every chunk is done.
class FillShare {
public:
    FillShare(uint32_t& shared, uint32_t limit, uint32_t block) : shared_(shared), limit_(limit), block_(block) {}
    FillShare(const FillShare&) = delete;
    FillShare& operator=(const FillShare&) = delete;
    ~FillShare() {
        if (held_ != 0) shared_.fetch_sub(held_, std::memory_order_relaxed);
    }
    /// One slot for a fresh key; false if the table reached its limit.
    bool take() {
        if (held_ == 0) {
            if (shared_.fetch_add(block_, std::memory_order_relaxed) + block_ > limit_) {
                shared_.fetch_sub(block_, std::memory_order_relaxed);
                return false;
            }
            held_ = block_;
        }
        --held_;
        return true;
    }
    /// Returns a slot (a failed claim, or a displaced duplicate that vanished).
    void give_back() { ++held_; }

private:
    std::atomic_ref<uint32_t> shared_;
    uint32_t limit_;
    uint32_t block_;
    uint32_t held_ = 0;
};

/// Priority-ordered linear-probing insert. Keys with a larger value win a slot
/// and push the smaller one forward; the final layout is that of inserting the
/// key set serially in descending order. A fresh key takes a fill slot when it
/// first enters (an empty slot or by displacing); a displaced key keeps its
/// slot while carried and gives it back if it meets its duplicate. Returns
/// false if the table reached its fill limit.
bool insert_key(uint64_t* slots, uint32_t mask, uint32_t shift, uint64_t key, FillShare& fill) {
    uint32_t s = home_slot(key, shift);
    bool counted = false; // the key in hand already holds a fill slot
    for (;;) {
        std::atomic_ref<uint64_t> slot(slots[s]);
        uint64_t current = slot.load(std::memory_order_acquire);
        if (current == key) {
            if (counted) fill.give_back(); // a displaced duplicate vanishes
            return true;
        }
        if (current != kEmptyKey && key < current) {
            s = next_slot(s, mask);
            continue;
        }
        // Take the slot: it is empty, or holds a key of lower priority.
        if (!counted && !fill.take()) return false;
        if (!slot.compare_exchange_strong(current, key, std::memory_order_acq_rel)) {
            if (!counted) fill.give_back();
            continue; // re-read the same slot
        }
        counted = true;
        if (current == kEmptyKey) return true;
        key = current; // carry the displaced key forward
        s = next_slot(s, mask);
    }
}

/// Sorts distinct keys with a 32-bit payload each (lattice/radix_sort.h):
/// 8-bit digits, only over bytes that vary. Results end in `keys` and `payload`.
void sort_keys(const ThreadBackend& b, uint64_t* keys, uint32_t* payload, uint64_t* tmp, uint32_t* payload_tmp,
               uint32_t n, uint32_t* hist, uint64_t* chunk_scratch) {
    if (n < 2) return;
    const uint64_t varying = varying_bits(b, keys, n, kRadixGrain, chunk_scratch);
    uint64_t* const key[2] = {keys, tmp};
    uint32_t* const pay[2] = {payload, payload_tmp};
    if (radix_sort<uint64_t>(b, key, pay, n, varying, 8, hist, kRadixGrain) != 0) {
        std::memcpy(keys, tmp, uint64_t{n} * sizeof(uint64_t));
        std::memcpy(payload, payload_tmp, uint64_t{n} * sizeof(uint32_t));
    }
}

/// Exact number of distinct keys (overflow path only): sorts the keys in place.
uint64_t count_distinct(uint64_t* keys, uint32_t n) {
    std::sort(keys, keys + n);
    uint64_t distinct = 0;
    for (uint32_t i = 0; i < n; ++i)
        distinct += (i == 0 || keys[i] != keys[i - 1]) ? 1 : 0;
    return distinct;
}

/// Empties slots [0, slot_count): the only ones that can hold keys.
void empty_slots(GridState& s, const ThreadBackend& b) {
    parallel_chunks(b, s.slot_count, kCellGrain * 4, [&](uint32_t begin, uint32_t end, uint32_t) {
        std::memset(s.slot_key + begin, 0xff, uint64_t{end - begin} * sizeof(uint64_t)); // kEmptyKey
    });
}

/// Uses the first `slots` slots from now on; the table must be empty.
void use_slots(GridState& s, uint32_t slots) {
    s.slot_count = slots;
    s.slot_shift = table_shift(slots);
}

} // namespace

uint32_t table_size_for(uint32_t cells, uint32_t capacity) {
    // At most half full: short probes, and the 3/4 fill limit is far.
    uint64_t slots = kMinTableSlots;
    while (slots < 2 * uint64_t{cells})
        slots *= 2;
    return slots < capacity ? static_cast<uint32_t>(slots) : capacity;
}

Status cell_capacity(uint64_t distinct) {
    return capacity_status(StatusCode::cell_capacity, "more occupied cells than GridConfig::max_cells", distinct);
}

void table_from_cell_keys(GridState& s, uint32_t cells, const ThreadBackend& b) {
    use_slots(s, table_size_for(cells, s.slot_capacity));
    // The keys are distinct and at most half the slots: the table cannot
    // fill, so the fill count needs no limit, and slots are claimed from it
    // in blocks (a shared counter touched per insert would bounce between
    // the cores on every key).
    uint32_t occupied = 0;
    parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        FillShare fill(occupied, UINT32_MAX, kCellGrain);
        for (uint32_t i = begin; i < end; ++i) {
            // Keys are sorted, their home slots random: fetch ahead.
            if (i + 16 < end) __builtin_prefetch(s.slot_key + home_slot(s.cell_key[i + 16], s.slot_shift), 1);
            const bool inserted = insert_key(s.slot_key, s.slot_count - 1, s.slot_shift, s.cell_key[i], fill);
            HASHGRID_ASSERT(inserted, "table below max_cells cannot be full");
            (void)inserted;
        }
    });
    parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            if (i + 16 < end) __builtin_prefetch(s.slot_key + home_slot(s.cell_key[i + 16], s.slot_shift));
            const uint32_t slot = find_slot(s, s.cell_key[i]);
            s.cell_slot[i] = slot;
            s.slot_cell[slot] = i;
        }
    });
    s.cell_count = cells;
    s.table_needs_full_clear = false;
}

void restore_previous_table(GridState& s, const PreviousFrame& previous, const ThreadBackend& b) {
    // The table's size and layout are functions of its key set, so inserting
    // last frame's keys (still in cell_key) again gives back the very same
    // table. A mapped frame reads its box map, which the table path does not
    // write; the table is left empty (and cleared in full next time).
    empty_slots(s, b);
    if (!previous.mapped) table_from_cell_keys(s, previous.built ? previous.cell_count : 0, b);
    s.count = previous.count;
    s.cell_count = previous.cell_count;
    s.built = previous.built;
}

void clear_table(GridState& s, const ThreadBackend& b) {
    // Clearing every slot is a streaming write; clearing last frame's cells
    // is one random write each. Pick the cheaper (about 16 slots stream in
    // the time of one random write).
    // Either way every slot is empty afterwards (slots past slot_count are).
    if (s.table_needs_full_clear || s.slot_count <= 16 * uint64_t{s.cell_count}) {
        empty_slots(s, b);
    } else {
        parallel_chunks(b, s.cell_count, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t i = begin; i < end; ++i)
                s.slot_key[s.cell_slot[i]] = kEmptyKey;
        });
    }
    s.table_needs_full_clear = true; // until this frame's cells are recorded
    s.built = false;
    s.count = 0;
    s.cell_count = 0;
}

Status insert_keys(GridState& s, RebuildFrame& f, const PreviousFrame& previous, const ThreadBackend& b) {
    const uint32_t n = f.n;
    const uint32_t grain = f.grain;
    const uint32_t workers = b.worker_count > 0 ? b.worker_count : 1;
    // Sized for last frame's cells: most frames have about as many. A frame
    // that fills it starts again in a table twice as large, and
    // sort_distinct_cells moves the keys to the size their count asks for,
    // so the table is always the same function of the key set.
    uint32_t slots = table_size_for(previous.built ? previous.cell_count : n, s.slot_capacity);
    for (;;) {
        use_slots(s, slots);
        const uint32_t mask = s.slot_count - 1;
        uint32_t occupied = 0;
        uint32_t failed = 0;
        // The fill limit keeps the table below 3/4 load, so probes always end;
        // reservations are small enough that it is never reached spuriously
        // at full capacity below max_cells (<= 1/2 load).
        const uint32_t table_limit = s.slot_count / 4 * 3;
        uint32_t block = table_limit / (8 * workers);
        block = block < 1 ? 1 : (block > 64 ? 64 : block);
        parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
            FillShare fill(occupied, table_limit, block);
            uint64_t last = kEmptyKey;
            for (uint32_t i = begin; i < end; ++i) {
                const uint64_t key = s.particle_key[i];
                if (key == last) continue; // runs of one cell (sorted input) insert once
                if (i + 8 < end)           // the home slot of a key a few inserts ahead
                    __builtin_prefetch(s.slot_key + home_slot(s.particle_key[i + 8], s.slot_shift));
                if (!insert_key(s.slot_key, mask, s.slot_shift, key, fill)) {
                    std::atomic_ref<uint32_t>(failed).store(1, std::memory_order_relaxed);
                    return;
                }
                last = key;
            }
        });
        if (failed == 0 && occupied <= f.max_cells) {
            f.cells = occupied;
            return {};
        }
        if (failed != 0 && slots < s.slot_capacity) {
            empty_slots(s, b);
            slots *= 2;
            continue;
        }
        // Only the table was written: put the previous frame's back.
        restore_previous_table(s, previous, b);
        return cell_capacity(count_distinct(s.particle_key, n));
    }
}

void sort_distinct_cells(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    const uint32_t cells = f.cells;
    // Compact the occupied slots (slot order: deterministic), then sort them.
    const uint32_t slot_chunks = chunk_count(s.slot_count, kCellGrain);
    parallel_chunks(b, s.slot_count, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t filled = 0;
        for (uint32_t slot = begin; slot < end; ++slot)
            filled += s.slot_key[slot] != kEmptyKey ? 1 : 0;
        s.chunk_scratch[begin / kCellGrain] = filled;
    });
    const uint64_t filled_slots = scan_chunk_sums(s.chunk_scratch, slot_chunks);
    HASHGRID_ASSERT(filled_slots == cells, "occupied slot count mismatch");
    (void)filled_slots;
    parallel_chunks(b, s.slot_count, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t out = s.chunk_scratch[begin / kCellGrain];
        for (uint32_t slot = begin; slot < end; ++slot)
            if (s.slot_key[slot] != kEmptyKey) {
                s.cell_key[out] = s.slot_key[slot];
                s.cell_slot[out] = slot;
                ++out;
            }
    });
    // Sort (key, slot) by key; cell_cursor is free until the counting sort.
    sort_keys(b, s.cell_key, s.cell_slot, s.key_tmp, s.cell_cursor, cells, s.radix_hist, s.chunk_scratch);
    if (s.slot_count != table_size_for(cells, s.slot_capacity)) {
        // Inserted at last frame's size: move to this key set's own.
        empty_slots(s, b);
        table_from_cell_keys(s, cells, b);
        return;
    }
    parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            s.slot_cell[s.cell_slot[i]] = i;
    });
    s.cell_count = cells;
    s.table_needs_full_clear = false;
}

void lookup_cells(GridState& s, RebuildFrame& f, const ThreadBackend& b) {
    const uint32_t cells = f.cells;
    const uint32_t grain = f.grain;
    const uint32_t buckets_max = f.buckets_max;
    const uint32_t shift = bucket_shift(cells, buckets_max);
    f.shift = shift;
    parallel_chunks(b, f.n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint32_t* h = s.bucket_hist + uint64_t{begin / grain} * buckets_max;
        uint64_t last = kEmptyKey;
        uint32_t last_cell = 0;
        for (uint32_t i = begin; i < end; ++i) {
            const uint64_t key = s.particle_key[i];
            if (key != last) {
                last = key;
                // Input in last frame's order walks the cells forward.
                last_cell =
                    last_cell + 1 < cells && s.cell_key[last_cell + 1] == key ? last_cell + 1 : find_cell(s, key);
            }
            s.particle_cell[i] = last_cell;
        }
        count_buckets(s.particle_cell, begin, end, shift, h, buckets_max);
    });
}

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
// The open-addressing table of an unbounded particle grid's occupied cells:
// slot_count (a power of two) slots of packed keys, kEmptyKey when free, and
// each slot's cell index. A key's home slot is the top bits of hash_key(key);
// a lookup probes linearly from there and stops at the key or at the first
// free slot (the table is never more than 3/4 full). The rebuild
// (rebuild_steps.h, rebuild_table.cpp) inserts here; every reader looks
// cells up through CellIndex::find_key (cell_index.h), which probes here.
#pragma once

#include "common/chunks.h" // kNone

#include "hashgrid/cell_key.h"
#include "hashgrid/grid.h" // kEmptyKey

#include <cstdint>

namespace hashgrid::detail {

/// Shift that maps a 64-bit hash onto slot_count (a power of two) slots.
inline uint32_t table_shift(uint32_t slot_count) {
    uint32_t shift = 64;
    for (uint32_t v = slot_count; v > 1; v >>= 1)
        --shift;
    return shift;
}

/// Home slot of a key: the top bits of its hash.
inline uint32_t home_slot(uint64_t key, uint32_t shift) { return static_cast<uint32_t>(hash_key(key) >> shift); }

/// Next slot of a linear probe (mask = slot_count - 1).
inline uint32_t next_slot(uint32_t slot, uint32_t mask) { return (slot + 1) & mask; }

/// Slot holding `key`, or kNone when the probe meets a free slot first.
[[gnu::always_inline]] inline uint32_t probe_slot(const uint64_t* slot_key, uint32_t mask, uint32_t shift,
                                                  uint64_t key) {
    uint32_t slot = home_slot(key, shift);
    for (;;) {
        const uint64_t k = slot_key[slot];
        if (k == key) return slot;
        if (k == kEmptyKey) return kNone;
        slot = next_slot(slot, mask);
    }
}

/// Cell index of `key` (slot_cell of its slot), or kNone.
[[gnu::always_inline]] inline uint32_t probe_cell(const uint64_t* slot_key, const uint32_t* slot_cell, uint32_t mask,
                                                  uint32_t shift, uint64_t key) {
    const uint32_t slot = probe_slot(slot_key, mask, shift, key);
    return slot == kNone ? kNone : slot_cell[slot];
}

} // namespace hashgrid::detail

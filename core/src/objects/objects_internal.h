// SPDX-License-Identifier: MIT
// Private helpers of the object store, shared with its tests.
#pragma once

#include "hashgrid/cell_key.h"
#include "hashgrid/objects.h"

#include <cstdint>

namespace hashgrid {

/// Test access to a store's slots: forcing a generation lets the tests reach
/// the generation wrap without 2^32 removals.
struct ObjectStoreTestAccess {
    static uint32_t generation(const ObjectStore& store, uint32_t slot) { return store.slot_generation_[slot]; }
    /// Sets a live or free slot's generation (handles issued earlier for it become stale).
    static void set_generation(ObjectStore& store, uint32_t slot, uint32_t generation) {
        store.slot_generation_[slot] = generation;
    }
    /// Sets the store's layout number (to reach the end of its block quickly).
    static void set_layout(ObjectStore& store, uint64_t layout) { store.layout_ = layout; }
};

/// Read access to a store's slot arrays (max_objects entries each), for the
/// pair tracker (events/), which compares them with the previous frame's to
/// find the dense indices whose object changed.
struct ObjectStoreSlots {
    /// Current generation of each slot.
    static const uint32_t* generations(const ObjectStore& store) { return store.slot_generation_; }
    /// Dense index of each slot's live object; >= size() for a free or retired slot.
    static const uint32_t* dense(const ObjectStore& store) { return store.slot_dense_; }
};

namespace detail {

/// Layout numbers a store takes from the process-wide sequence at a time
/// (ObjectStore::layout_generation()).
inline constexpr uint64_t kLayoutBlock = uint64_t{1} << 20;

/// First generation of a slot: 1 without a salt, else a hash of (salt, slot) (never 0).
inline uint32_t first_generation(uint32_t salt, uint32_t slot) {
    if (salt == 0) return 1;
    const uint64_t k = hash_key((uint64_t{salt} << 32) | slot);
    const auto g = static_cast<uint32_t>(k >> 32);
    return g != 0 ? g : 1;
}

} // namespace detail
} // namespace hashgrid

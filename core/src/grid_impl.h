// Grid::Impl: the frame pipeline's private steps, shared by rebuild.cpp,
// pairs.cpp and neighbor_lists.cpp.
#pragma once

#include "grid_internal.h"
#include "grid_state.h"

namespace hashgrid {

struct Grid::Impl {
    // rebuild.cpp
    static Status rebuild(Grid& g, const ParticleSpans& p, const ThreadBackend& b);
    /// What a rejected rebuild must give back besides the unbounded table.
    struct PreviousFrame {
        uint32_t count;
        uint32_t cell_count;
        bool built;
    };
    /// Fills the (cleared) unbounded table with cell_key_[0, cells), sets
    /// cell_slot_ / slot_cell_ and cell_count_.
    static void table_from_cell_keys(Grid& g, uint32_t cells, const ThreadBackend& b);
    /// cell_capacity found after the table was cleared: rebuilds the previous
    /// frame's table from its keys (the same layout: it depends on the key set).
    static void restore_previous_table(Grid& g, const PreviousFrame& previous, const ThreadBackend& b);
    /// Occupied cells of the dense box (particle_cell_ holds box indices).
    static uint64_t count_occupied(Grid& g, uint32_t n, uint32_t box_cells, const ThreadBackend& b);
    // pairs.cpp
    static PairResult find_pairs(Grid& g, Pair* out, uint64_t capacity, const ThreadBackend& b, PairFilter filter);

    /// Slot holding `key`, or kNone. Linear probing from the key's home slot.
    static uint32_t find_slot(const Grid& g, uint64_t key) {
        const uint32_t mask = g.state_->slot_count - 1;
        uint32_t s = static_cast<uint32_t>(hash_key(key) >> g.state_->slot_shift);
        for (;;) {
            const uint64_t k = g.state_->slot_key[s];
            if (k == key) return s;
            if (k == kEmptyKey) return detail::kNone;
            s = (s + 1) & mask;
        }
    }
    /// Cell index of `key`, or kNone.
    static uint32_t find_cell(const Grid& g, uint64_t key) {
        const uint32_t s = find_slot(g, key);
        return s == detail::kNone ? detail::kNone : g.state_->slot_cell[s];
    }
};

namespace detail {

/// Exclusive scan of counts[0, n) into starts[0, n] (starts[n] = total) and,
/// when cursors is not null, cursors[0, n) = starts. counts may alias cursors.
/// Two passes over fixed chunks: per-chunk sums, then per-chunk prefix.
uint64_t exclusive_scan(const ThreadBackend& b, const uint32_t* counts, uint32_t n, uint32_t* starts, uint32_t* cursors,
                        uint64_t* chunk_sums);

/// Turns per-chunk sums into per-chunk offsets in place; returns the total.
uint64_t scan_chunk_sums(uint64_t* sums, uint32_t chunks);

/// Sets a[0, n) to value in parallel.
void fill_u32(const ThreadBackend& b, uint32_t* a, uint32_t n, uint32_t value);

/// Ascending sort of distinct values in place (insertion sort when short).
void sort_distinct(uint32_t* a, uint32_t n);

} // namespace detail
} // namespace hashgrid

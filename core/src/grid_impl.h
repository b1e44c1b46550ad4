// SPDX-License-Identifier: MIT
// Grid::Impl: the frame pipeline's private steps, and the parallel scans and
// fills (rebuild_sort.cpp) shared by the rebuild files (through
// rebuild_steps.h), pairs.cpp, neighbor_lists.cpp and the box grid
// (box_grid_internal.h: scan_chunk_sums).
#pragma once

#include "grid_internal.h"
#include "grid_state.h"

namespace hashgrid {

struct Grid::Impl {
    // rebuild.cpp (its steps: rebuild_steps.h)
    static Status rebuild(Grid& g, const ParticleSpans& p, const ThreadBackend& caller_backend);
    // pairs.cpp
    static PairResult find_pairs(Grid& g, Pair* out, uint64_t capacity, const ThreadBackend& caller_backend,
                                 PairFilter filter);
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

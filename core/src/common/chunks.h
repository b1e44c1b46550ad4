// SPDX-License-Identifier: MIT
// Work split into fixed chunks for the thread backends, and the scans, fills
// and small sorts over them that the rebuilds of every grid kind share. The
// chunks depend on the item count only, never on the thread count, so that
// every result built from them is the same for any backend.
#pragma once

#include "hashgrid/thread_backend.h"

#include <atomic>
#include <cstdint>

namespace hashgrid::detail {

/// No cell / no block.
inline constexpr uint32_t kNone = 0xffffffffu;
/// Cells per chunk for per-cell loops (scan, finalize).
inline constexpr uint32_t kCellGrain = 4096;

inline uint32_t chunk_count(uint64_t items, uint32_t grain) {
    return static_cast<uint32_t>((items + grain - 1) / grain);
}

/// Relaxed atomic add on a plain array element (std::atomic_ref keeps arrays plain).
inline uint32_t atomic_add(uint32_t& value, uint32_t add) {
    return std::atomic_ref<uint32_t>(value).fetch_add(add, std::memory_order_relaxed);
}

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

} // namespace hashgrid::detail

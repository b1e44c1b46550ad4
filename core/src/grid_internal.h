// SPDX-License-Identifier: MIT
// Private constants and helpers shared by the grid's translation units.
#pragma once

#include "block_layout.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/grid.h"

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hashgrid::detail {

/// Fewest particles per chunk of the bucket passes (key, count, scatter:
/// sort_grain_for).
inline constexpr uint32_t kParticleGrain = 8192;
/// Cells per chunk for per-cell loops (scan, finalize).
inline constexpr uint32_t kCellGrain = 4096;
/// Home particles per chunk in the pair sweep.
inline constexpr uint32_t kPairGrain = 1024;
/// Pairs per block of the pair pool.
inline constexpr uint32_t kPairBlock = 2048;
/// Keys per chunk in the radix sort of distinct cells.
inline constexpr uint32_t kRadixGrain = 16384;
/// Fewest slots of an unbounded grid's cell table (allocated and per frame).
inline constexpr uint32_t kMinTableSlots = 256;
/// Readable padding after every sorted array (SIMD over-read).
inline constexpr uint32_t kPad = 16;
/// No cell / no block.
inline constexpr uint32_t kNone = 0xffffffffu;

inline uint32_t chunk_count(uint64_t items, uint32_t grain) {
    return static_cast<uint32_t>((items + grain - 1) / grain);
}

/// Relaxed atomic add on a plain array element (std::atomic_ref keeps arrays plain).
inline uint32_t atomic_add(uint32_t& value, uint32_t add) {
    return std::atomic_ref<uint32_t>(value).fetch_add(add, std::memory_order_relaxed);
}

/// Steady-clock nanoseconds for phase timings.
inline uint64_t clock_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

/// Floor of a double known to lie well inside the int32 range: no libm call,
/// and written so that the key pass vectorizes.
inline int32_t floor_to_int(double t) {
    const auto i = static_cast<int32_t>(t); // truncates toward zero
    return i - (static_cast<double>(i) > t ? 1 : 0);
}

/// t clamped into [lo, hi1]; NaN becomes lo (maxsd/minsd semantics), so that
/// floor_to_int of the result is always defined. Branch-free: vectorizes.
inline double clamp_into(double t, double lo, double hi1) {
    t = t > lo ? t : lo;
    return t < hi1 ? t : hi1;
}

/// Per-chunk record of the lowest offending particle in validation passes.
struct BadParticle {
    uint32_t index;
    uint32_t count;
    StatusCode code;
    bool wrapped = false; ///< Unbounded: some cell of the chunk wrapped (lattice/wrapped_cells.h).
};

/// Derived sizes of one config (used by memory_requirements and init).
struct Sizes {
    uint32_t particles;   // max_particles
    uint32_t cells;       // cell capacity: bounded total or max_cells
    uint32_t slots;       // unbounded table slots (power of two), 0 when bounded
    uint32_t chunk_slots; // per-chunk scratch entries
    uint32_t radix_chunks;
    uint32_t pair_chunks;
    uint32_t pair_blocks;
    uint32_t sort_grain;  // particles per chunk of the bucket passes
    uint32_t sort_chunks; // chunk_count(particles, sort_grain)
    uint32_t buckets;     // bucket capacity (power of two)
    uint32_t dense;       // unbounded: cells of the dense-box path (0 when bounded)
};

/// Buckets of the two-level counting sort: about 4096 particles each so a
/// bucket's particles and cells stay in cache, at least 16 for load balance.
inline uint32_t bucket_capacity_for(uint32_t particles) {
    uint32_t b = 16;
    while (b < 4096 && uint64_t{b} * 4096 < particles)
        b *= 2;
    return b;
}

/// Grain of the bucket passes: at most 512 chunks, so the [chunk][bucket]
/// histogram stays small for any particle count.
inline uint32_t sort_grain_for(uint32_t particles) {
    const uint32_t g = (particles + 511) / 512;
    return g > kParticleGrain ? g : kParticleGrain;
}

} // namespace hashgrid::detail

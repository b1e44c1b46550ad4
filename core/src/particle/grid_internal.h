// SPDX-License-Identifier: MIT
// Private constants and helpers shared by the grid's translation units.
#pragma once

#include "common/bad_input.h"
#include "common/block_layout.h"
#include "common/chunks.h"
#include "common/clock.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/grid.h"

#include <cstdint>

namespace hashgrid::detail {

/// Fewest particles per chunk of the bucket passes (key, count, scatter:
/// sort_grain_for).
inline constexpr uint32_t kParticleGrain = 8192;
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

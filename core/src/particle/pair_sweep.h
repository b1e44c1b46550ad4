// SPDX-License-Identifier: MIT
// The pair sweep's shared pieces: what a sweep reads (SweepData), the packed
// candidate block, the pair pool and the sink that writes pairs into it, and
// the kernel entry point. pairs.cpp runs find_pairs() on them;
// pair_kernels.cpp holds one sweep per instruction set (sweep_impl.inc).
#pragma once

#include "lattice/cell_index.h"
#include "particle/grid_impl.h"

#include <atomic>
#include <cstdint>

namespace hashgrid::detail::pair_sweep {

/// Everything the sweep reads: the frame's cell index and the sorted arrays.
struct SweepData : CellIndex {
    const float* x;
    const float* y;
    const float* z;
    const float* radius;
    const uint32_t* order;
    float r2;
};

/// Candidate arrays a home particle is tested against (sorted arrays, or a packed block).
struct Candidates {
    const float* x;
    const float* y;
    const float* z;
    const float* radius;
    const uint32_t* order;
};

/// Candidates per packed block, and padding after them (a last partial
/// vector reads up to 7 entries past the end; block copies write up to 7).
inline constexpr uint32_t kPackCapacity = 2048;
inline constexpr uint32_t kPackPad = 16;

/// A home cell's forward candidates copied contiguously (on the sweeping
/// thread's stack: 41 KB of the sweep's 44 KB frame, the largest the library
/// puts there). The padding after the last candidate holds NaN coordinates,
/// which fail every distance test, so a last partial vector needs no lane
/// mask. 2048, not 1024: clustered scenes (bench_pairs C3) have cells whose
/// forward candidates exceed 1024, and the range-by-range fallback costs
/// about a tenth of their pair phase.
struct PackedCandidates {
    alignas(32) float x[kPackCapacity + kPackPad];
    alignas(32) float y[kPackCapacity + kPackPad];
    alignas(32) float z[kPackCapacity + kPackPad];
    alignas(32) float r[kPackCapacity + kPackPad];
    alignas(32) uint32_t o[kPackCapacity + kPackPad];
    uint32_t count;
};

/// Shared state of the pair pool during one find_pairs(). Blocks come from
/// the free list first (blocks of chunks already copied into the caller's
/// buffer, most recently freed first, so still in cache), then fresh ones in
/// index order. next[] links a chunk's blocks, and the free list; every
/// access to it is atomic (relaxed), since a pop may read a link that a
/// concurrent owner rewrites (the tag then fails its exchange).
struct Pool {
    Pair* pairs;
    uint32_t* next;
    uint32_t block_count;
    uint32_t taken = 0;                   // atomic via atomic_ref: fresh blocks handed out
    uint64_t free_head = uint64_t{kNone}; // atomic via atomic_ref: tag << 32 | first free block

    [[nodiscard]] uint32_t link(uint32_t block) const {
        return std::atomic_ref<uint32_t>(next[block]).load(std::memory_order_relaxed);
    }
    void set_link(uint32_t block, uint32_t to) {
        std::atomic_ref<uint32_t>(next[block]).store(to, std::memory_order_relaxed);
    }

    /// A free block, or kNone. The tag in the head's top half changes with
    /// every exchange, so a head that was popped and pushed back meanwhile
    /// (ABA) fails the exchange.
    uint32_t pop_free() {
        std::atomic_ref<uint64_t> head(free_head);
        uint64_t h = head.load(std::memory_order_acquire);
        while (static_cast<uint32_t>(h) != kNone) {
            const auto block = static_cast<uint32_t>(h);
            const uint64_t to = ((h >> 32) + 1) << 32 | link(block);
            if (head.compare_exchange_weak(h, to, std::memory_order_acquire, std::memory_order_acquire)) return block;
        }
        return kNone;
    }

    /// A block: a free one (in cache), else a fresh one, else kNone.
    uint32_t take() {
        const uint32_t block = pop_free();
        if (block != kNone) return block;
        const uint32_t fresh = std::atomic_ref<uint32_t>(taken).fetch_add(1, std::memory_order_relaxed);
        return fresh < block_count ? fresh : kNone;
    }

    /// Frees the chain of blocks first .. last (linked by next[]), after
    /// everything read from them (release).
    void push_free(uint32_t first, uint32_t last) {
        std::atomic_ref<uint64_t> head(free_head);
        uint64_t h = head.load(std::memory_order_relaxed);
        for (;;) {
            set_link(last, static_cast<uint32_t>(h));
            const uint64_t to = ((h >> 32) + 1) << 32 | first;
            if (head.compare_exchange_weak(h, to, std::memory_order_release, std::memory_order_relaxed)) return;
        }
    }
};

/// find_pairs()'s `frontier`, one atomic word: the next chunk to publish in
/// the top 24 bits, its offset in the caller's buffer in the low 40.
inline constexpr uint32_t kFrontierShift = 40;
inline uint64_t frontier_word(uint32_t chunk, uint64_t offset) { return (uint64_t{chunk} << kFrontierShift) | offset; }
inline uint32_t frontier_chunk(uint64_t word) { return static_cast<uint32_t>(word >> kFrontierShift); }
inline uint64_t frontier_offset(uint64_t word) { return word & ((uint64_t{1} << kFrontierShift) - 1); }

/// Collects one chunk's pairs. Keeps counting after it has no room left, so
/// the total is always exact. Three modes:
/// - pool: a chain of pool blocks, copied into the caller's buffer once
///   every earlier chunk is there;
/// - direct: once every earlier chunk is in the caller's buffer (the
///   frontier has reached this chunk; on one thread, from the start), the
///   chain so far is copied to its place and the rest of the chunk's pairs
///   are written straight into the buffer, up to `limit`: no copy of the
///   chunk from the pool, and no second pass over its pairs. Like every
///   sink writing into the caller's buffer, the kernels' wide stores may
///   write up to a vector's worth of slots past the last pair (never past
///   `limit`);
/// - without a pool or buffer: into [cur, end) only (a chunk searched again
///   straight into the caller's buffer).
///
/// Kernels write pairs straight to [cur, end) while at least one vector's
/// worth of slots is left (and no filter is set), adding what they wrote to
/// count; otherwise every hit goes through push(). refill() runs when
/// cur == end, so every block of the chain is full then.
struct Sink {
    Pair* cur = nullptr;
    Pair* end = nullptr;
    uint64_t count = 0;
    uint32_t first_block = kNone;
    uint32_t last_block = kNone;
    uint32_t blocks = 0; ///< Blocks in the chain.
    bool overflow = false;
    bool direct = false; ///< Writing straight into the caller's buffer.
    Pool* pool = nullptr;
    PairFilter filter;
    // Where direct mode may write: the caller's buffer (null: never), the
    // pair offset nothing is written from (min(capacity, max_pairs)), and
    // the frontier that shows when this chunk is next in output order.
    Pair* buffer = nullptr;
    uint64_t limit = 0;
    uint64_t* frontier = nullptr;
    uint32_t chunk = 0;
    /// Room for more pairs: the next pool block, or direct mode. False when
    /// there is none (counted, not kept). pairs.cpp.
    bool refill();

    inline void push(uint32_t a, uint32_t b) {
        const Pair pair = a < b ? Pair{a, b} : Pair{b, a};
        // Predicted perfectly: the same every call of a search.
        if (filter.accept != nullptr && !filter.accept(filter.context, pair.a, pair.b)) return;
        ++count;
        if (cur == end && !refill()) return;
        *cur++ = pair;
    }

private:
    /// Switches to direct mode if the frontier has reached this chunk.
    bool go_direct();
};

/// Sweeps home particles [k0, k1) (sorted positions) into the sink.
using SweepFn = void (*)(const SweepData& s, uint32_t k0, uint32_t k1, Sink& sink);

/// The sweep of `kernel` (a concrete one, never automatic) for this
/// dimension count and radius mode (pair_kernels.cpp).
SweepFn sweep_for(PairKernel kernel, uint32_t dims, bool radius);

} // namespace hashgrid::detail::pair_sweep

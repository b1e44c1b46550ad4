// SPDX-License-Identifier: MIT
// The ordered pair output that every pair search writes through
// (Grid::find_pairs, BoxGrid::find_pairs and BoxGrid::find_pairs_with).
//
// A search splits its work into chunks that depend on counts only, and each
// chunk emits its pairs in the documented order into a Sink. write_ordered()
// runs the chunks on any thread, in any order, and writes their pairs into
// the caller's buffer in chunk order:
// - a chunk whose place in the buffer is known (every earlier chunk is
//   there; on one thread, every chunk) writes its pairs straight into it;
// - the others keep them in linked blocks of a preallocated pool, copied into
//   the buffer as soon as every earlier chunk is there, by whichever thread
//   finishes the last missing one (overlapping the other threads' search);
// - over max_pairs, or when the pool runs out, what was published is a
//   prefix of the canonical order, and the rest of the canonical prefix is
//   completed afterwards (copied, or searched again straight into the
//   buffer), so that the output is a function of the input alone.
// Every pair is counted, also those that did not fit, so the total is exact.
#pragma once

#include "common/chunks.h"
#include "common/trace_scope.h"

#include "hashgrid/query_types.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hashgrid::detail::pair_output {

/// Shared state of the pair pool during one search. Blocks come from the
/// free list first (blocks of chunks already copied into the caller's buffer,
/// most recently freed first, so still in cache), then fresh ones in index
/// order. next[] links a chunk's blocks, and the free list; every access to
/// it is atomic (relaxed), since a pop may read a link that a concurrent
/// owner rewrites (the tag then fails its exchange).
struct Pool {
    Pair* pairs;
    uint32_t* next;
    uint32_t block_count;
    uint32_t block_size;                  // pairs per block
    uint32_t taken = 0;                   // atomic via atomic_ref: fresh blocks handed out
    uint64_t free_head = uint64_t{kNone}; // atomic via atomic_ref: tag << 32 | first free block

    [[nodiscard]] uint32_t link(uint32_t block) const {
        return std::atomic_ref<uint32_t>(next[block]).load(std::memory_order_relaxed);
    }
    void set_link(uint32_t block, uint32_t to) {
        std::atomic_ref<uint32_t>(next[block]).store(to, std::memory_order_relaxed);
    }
    [[nodiscard]] Pair* block_pairs(uint32_t block) const { return pairs + uint64_t{block} * block_size; }

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

/// The publishing frontier, one atomic word: the next chunk to publish in
/// the top 24 bits, its offset in the caller's buffer in the low 40.
inline constexpr uint32_t kFrontierShift = 40;
inline constexpr uint32_t kMaxChunks = 1u << (64 - kFrontierShift);
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
///   chunk from the pool, and no second pass over its pairs;
/// - without a pool or buffer: into [cur, end) only (a chunk searched again
///   straight into the caller's buffer).
///
/// Searches write pairs one at a time (push), in runs (push_pairs), or, in
/// the particle sweep's kernels, straight to [cur, end) while at least one
/// vector's worth of slots is left and no filter is set, adding what they
/// wrote to count (their wide stores may then write up to a vector's worth
/// of slots past the last pair, never past `end`). refill() runs only when
/// cur == end, so every block of a chain is full but its last.
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
    /// there is none (counted, not kept).
    bool refill();

    /// One pair, as it will be written (the filter sees it so).
    inline void push(Pair pair) {
        // Predicted perfectly: the same every call of a search.
        if (filter.accept != nullptr && !filter.accept(filter.context, pair.a, pair.b)) return;
        ++count;
        if (cur == end && !refill()) return;
        *cur++ = pair;
    }

    /// push() of each of pairs[0, n), in order.
    inline void push_pairs(const Pair* pairs, uint32_t n) {
        if (filter.accept != nullptr) {
            for (uint32_t p = 0; p < n; ++p)
                push(pairs[p]);
            return;
        }
        count += n;
        for (;;) {
            const auto room = static_cast<uint64_t>(end - cur);
            const uint32_t take = n < room ? n : static_cast<uint32_t>(room);
            if (take > 0) { // cur is null before the first block and after an overflow
                std::memcpy(cur, pairs, size_t{take} * sizeof(Pair)); // a call beats a loop of 8-byte copies
                cur += take;
                pairs += take;
                n -= take;
            }
            if (n == 0 || !refill()) return;
        }
    }

private:
    /// Switches to direct mode if the frontier has reached this chunk.
    bool go_direct();
};

/// One chunk's search: emits the chunk's pairs in order into the sink.
/// Called once per chunk, and again for a chunk whose pairs are needed but
/// were not kept (the same pairs, in the same order).
struct ChunkSearch {
    void (*run)(const void* context, uint32_t chunk, Sink& sink);
    const void* context;
};

/// A ChunkSearch over `search(chunk, sink)`, which must outlive it.
template <typename Search>
ChunkSearch chunk_search(const Search& search) {
    return {
        [](const void* context, uint32_t chunk, Sink& sink) { (*static_cast<const Search*>(context))(chunk, sink); },
        &search};
}

/// Work that chunks [prepared_from, chunks) need done before they run: it
/// runs as one more item of a first loop beside chunks [0, prepared_from),
/// the rest of the chunks in a second loop.
struct Preparation {
    void (*run)(const void* context) = nullptr;
    const void* context = nullptr;
    uint32_t prepared_from = kNone; ///< kNone (or >= chunks): nothing to prepare.
};

/// A Preparation that runs `prepare()` before chunks [from, chunks).
template <typename Prepare>
Preparation preparation(const Prepare& prepare, uint32_t from) {
    return {[](const void* context) { (*static_cast<const Prepare*>(context))(); }, &prepare, from};
}

/// The grid's memory for one search: the pool, and per chunk its first
/// block, pair count and state (at least `chunks` of each).
struct PairMemory {
    Pair* pool;
    uint32_t* block_next;
    uint32_t block_count;
    uint32_t block_size;
    uint32_t* chunk_first_block;
    uint64_t* chunk_pair_count;
    uint8_t* chunk_state;
};

/// What a search asks for.
struct PairRequest {
    Pair* out;
    uint64_t capacity;
    uint64_t max_pairs; ///< A hard limit: over it, the output stops at the canonical prefix.
    PairFilter filter;
    /// The work: `items` split into chunks of `grain` (the last one shorter),
    /// at most kMaxChunks of them. A trace shows each chunk's items.
    uint32_t items;
    uint32_t grain;

    [[nodiscard]] uint32_t chunks() const { return chunk_count(items, grain); }
};

/// Pairs found (accepted by the filter) and pairs written:
/// min(total, max_pairs, capacity), the canonical prefix.
struct PairCounts {
    uint64_t total = 0;
    uint64_t written = 0;
};

/// Runs `search` over every chunk and writes the pairs in chunk order (see
/// the top of this file). Traces `prefix_step` while completing the canonical
/// prefix (only over max_pairs, or when the pool ran out); the chunks run in
/// the step open on entry.
PairCounts write_ordered(PhaseTrace& trace, TraceStep prefix_step, const PairMemory& memory, const PairRequest& request,
                         ChunkSearch search, Preparation prepare = {});

/// find_pairs' checks before a search, the same for every grid kind: false
/// (and `result` says why: not_built, invalid_argument) when the grid has no
/// built frame or the buffer is null with a nonzero capacity.
bool pair_search_allowed(bool built, const Pair* out, uint64_t capacity, QueryResult& result);

/// The result of a search with these counts: ok, pair_capacity (over
/// max_pairs; `over_max` names the setting) or output_too_small.
QueryResult pair_result(PairCounts counts, uint64_t max_pairs, uint64_t capacity, const char* over_max);

} // namespace hashgrid::detail::pair_output

// SPDX-License-Identifier: MIT
// The ordered pair output (pair_output.h): the sink's refill, publishing in
// chunk order, and completing the canonical prefix.
#include "common/pair_output.h"

#include "common/status_make.h"

#include "hashgrid/assert.h"

#include <atomic>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define HASHGRID_STREAM_STORES 1
#endif

namespace hashgrid::detail::pair_output {

namespace {

/// Pairs of the output written with ordinary stores: a small result stays in
/// cache for the caller. Beyond it, where the output cannot stay in cache
/// anyway, copies bypass the cache (x86-64), which spares reading every
/// destination line before writing it.
constexpr uint64_t kCachedPairs = uint64_t{1} << 19; // 4 MiB

/// Copies n pairs from the pool into the caller's buffer at pair offset `at`.
void copy_out(Pair* out, uint64_t at, const Pair* from, size_t n) {
#if HASHGRID_STREAM_STORES
    if (at >= kCachedPairs) {
        Pair* to = out + at;
        size_t i = 0;
        if ((reinterpret_cast<uintptr_t>(to) & 15u) != 0 && n > 0) {
            to[0] = from[0];
            i = 1;
        }
        for (; i + 2 <= n; i += 2)
            _mm_stream_si128(reinterpret_cast<__m128i*>(to + i),
                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i)));
        if (i < n) to[i] = from[i];
        return;
    }
#endif
    std::memcpy(out + at, from, n * sizeof(Pair));
}

/// Orders this thread's streaming stores before what it does next (the
/// chunk state others read, the return to the caller).
void end_copies() {
#if HASHGRID_STREAM_STORES
    _mm_sfence();
#endif
}

} // namespace

bool Sink::go_direct() {
    const uint64_t word = std::atomic_ref<uint64_t>(*frontier).load(std::memory_order_acquire);
    if (frontier_chunk(word) != chunk) return false;
    const uint64_t at = frontier_offset(word);
    const uint64_t kept = uint64_t{blocks} * pool->block_size;
    if (at + kept >= limit) return false; // no room past the chain: the pool then
    // The chain goes to its place while still in cache, and back to the pool.
    uint32_t block = first_block;
    for (uint32_t i = 0; i < blocks; ++i) {
        copy_out(buffer, at + uint64_t{i} * pool->block_size, pool->block_pairs(block), pool->block_size);
        if (i + 1 < blocks) block = pool->link(block);
    }
    if (blocks > 0) pool->push_free(first_block, last_block);
    first_block = last_block = kNone;
    blocks = 0;
    pool = nullptr; // from now on, no room past `limit` means overflow
    direct = true;
    cur = buffer + at + kept;
    end = buffer + limit;
    return true;
}

bool Sink::refill() {
    if (!overflow && pool != nullptr) {
        if (buffer != nullptr && go_direct()) return true;
        const uint32_t block = pool->take();
        if (block != kNone) {
            pool->set_link(block, kNone);
            if (last_block == kNone)
                first_block = block;
            else
                pool->set_link(last_block, block);
            last_block = block;
            ++blocks;
            cur = pool->block_pairs(block);
            end = cur + pool->block_size;
            return true;
        }
    }
    overflow = true;
    cur = end = nullptr;
    return false;
}

namespace {

// A chunk's state (PairMemory::chunk_state), which the frontier reads.
constexpr uint8_t kChunkPending = 0;    // still searching: its thread publishes it
constexpr uint8_t kChunkPooled = 1;     // every pair in the pool
constexpr uint8_t kChunkOverflowed = 2; // the pool ran out
constexpr uint8_t kChunkInPlace = 3;    // written in the caller's buffer (Sink's direct mode)

/// Publishes chunks into the caller's buffer in chunk order, as soon as all
/// earlier ones are done, by whichever thread finishes the last missing one:
/// the copy reads pool blocks that are still in cache and overlaps the other
/// threads' search. `frontier` is (next chunk to publish, its offset):
/// frontier_word. A chunk that the frontier reaches while it runs (on one
/// thread, every chunk from its start) writes the rest of its pairs in place
/// (Sink's direct mode): nothing left to copy. Publishing stops for good at
/// the first chunk that overflowed the pool or would end past max_pairs; what
/// was published is then a prefix of the canonical order. A published
/// chunk's blocks go back to the pool's free list, so later chunks write into
/// blocks still in cache (and the pool runs out later).
///
/// Reads the chunks' state, pair count and first block; writes `out` (below
/// `capacity`) and `frontier`.
struct Publisher {
    const PairMemory& memory;
    const PairRequest& request;
    Pool pool;
    uint32_t chunks;
    uint64_t frontier = 0; // atomic via atomic_ref

    /// Copies the chunk's first `count` pairs from its pool blocks to `offset`
    /// (up to the capacity); with `recycle`, its blocks then go back to the pool.
    void publish_chunk(uint32_t chunk, uint64_t offset, uint64_t count, bool recycle) {
        const uint64_t capacity = request.capacity;
        const uint64_t last = offset + count < capacity ? offset + count : capacity;
        uint64_t pos = offset;
        const uint32_t first = memory.chunk_first_block[chunk];
        uint32_t block = first;
        while (pos < last) {
            // copy <= block_size: size_t is enough.
            const auto copy = static_cast<size_t>(last - pos < pool.block_size ? last - pos : pool.block_size);
            copy_out(request.out, pos, pool.block_pairs(block), copy);
            pos += copy;
            block = pool.link(block);
        }
        end_copies();
        if (!recycle || first == kNone) return;
        // Published for good: its blocks serve later chunks while still in cache.
        uint32_t tail = first;
        for (uint32_t link = pool.link(tail); link != kNone; link = pool.link(tail))
            tail = link;
        pool.push_free(first, tail);
    }

    /// Moves the frontier over every finished chunk it reaches, publishing
    /// those kept in the pool, until a pending chunk or the stop.
    void advance() {
        std::atomic_ref<uint64_t> front(frontier);
        for (;;) {
            uint64_t word = front.load(std::memory_order_seq_cst);
            const uint32_t next = frontier_chunk(word);
            const uint64_t offset = frontier_offset(word);
            if (next >= chunks) return;
            const uint8_t state = std::atomic_ref<uint8_t>(memory.chunk_state[next]).load(std::memory_order_seq_cst);
            if (state == kChunkPending) return; // its thread will continue from here
            const uint64_t count = memory.chunk_pair_count[next];
            const bool stop = state == kChunkOverflowed || offset + count > request.max_pairs;
            const uint64_t to = stop ? frontier_word(chunks, offset) : frontier_word(next + 1, offset + count);
            if (!front.compare_exchange_strong(word, to, std::memory_order_seq_cst)) continue;
            if (stop) return;
            if (state == kChunkPooled) publish_chunk(next, offset, count, true); // in place: nothing to copy
        }
    }

    /// Searches one chunk into the pool or in place, records it and publishes
    /// what the frontier reaches.
    void run_chunk(ChunkSearch search, uint32_t chunk, uint64_t direct_limit) {
        Sink sink;
        sink.pool = &pool;
        sink.filter = request.filter;
        sink.buffer = direct_limit > 0 ? request.out : nullptr;
        sink.limit = direct_limit;
        sink.frontier = &frontier;
        sink.chunk = chunk;
        search.run(search.context, chunk, sink);
        uint8_t state = sink.overflow ? kChunkOverflowed : kChunkPooled;
        if (sink.direct) {
            end_copies(); // the chain's copy
            // Written in place (up to the limit). One that ends past
            // max_pairs stops publishing in advance(), and complete_prefix
            // searches it again, as every chunk not kept in the pool.
            state = kChunkInPlace;
        }
        memory.chunk_first_block[chunk] = sink.first_block;
        memory.chunk_pair_count[chunk] = sink.count;
        // seq_cst store, then seq_cst load of the frontier in advance(): of a
        // finishing thread and one stopped at this chunk, one sees the other.
        std::atomic_ref<uint8_t>(memory.chunk_state[chunk]).store(state, std::memory_order_seq_cst);
        advance();
    }
};

/// Runs every chunk (and the preparation, beside the chunks that do not
/// need it) and publishes them in chunk order.
void search_chunks(const ThreadBackend& b, ChunkSearch search, Preparation prepare, Publisher& publisher) {
    const PairRequest& r = publisher.request;
    const uint64_t direct_limit = r.capacity < r.max_pairs ? r.capacity : r.max_pairs;
    const uint32_t chunks = publisher.chunks;
    const uint32_t from = prepare.prepared_from < chunks ? prepare.prepared_from : chunks;
    auto run = [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t ch = begin; ch < end; ++ch)
            publisher.run_chunk(search, ch, direct_limit);
    };
    if (from == chunks) {
        parallel_chunks(b, r.items, r.grain, [&](uint32_t begin, uint32_t end, uint32_t worker) {
            run(begin / r.grain, (end - 1) / r.grain + 1, worker);
        });
        return;
    }
    // With several workers the preparation is claimed first, so that the
    // others search beside it; one worker prepares right before the chunks
    // that need it, which then find what it built still in cache.
    const uint32_t prepare_at = b.worker_count <= 1 ? from : 0;
    parallel_chunks(b, from + 1, 1, [&](uint32_t begin, uint32_t end, uint32_t worker) {
        for (uint32_t at = begin; at < end; ++at) {
            if (at == prepare_at)
                prepare.run(prepare.context);
            else
                run(at < prepare_at ? at : at - 1, at < prepare_at ? at + 1 : at, worker);
        }
    });
    parallel_chunks(b, chunks - from, 1,
                    [&](uint32_t begin, uint32_t end, uint32_t worker) { run(from + begin, from + end, worker); });
}

/// Over max_pairs or after the pool ran out, which chunks kept their pairs
/// in the pool depends on timing: completes the canonical prefix of `target`
/// pairs (those below `published` are in place), so that the output is a
/// function of the input alone. Turns the chunks' pair counts into exclusive
/// offsets (they are not read again); writes `out` below `target`.
void complete_prefix(const ThreadBackend& b, ChunkSearch search, Publisher& publisher, uint64_t published,
                     uint64_t target) {
    const PairMemory& m = publisher.memory;
    const PairRequest& r = publisher.request;
    const uint32_t chunks = publisher.chunks;
    uint64_t offset = 0;
    uint32_t first = chunks; // first chunk not (fully) published
    uint32_t last = 0;       // one past the last chunk below target
    for (uint32_t ch = 0; ch < chunks; ++ch) {
        const uint64_t count = m.chunk_pair_count[ch];
        m.chunk_pair_count[ch] = offset;
        if (offset + count > published && first == chunks) first = ch;
        if (offset < target) last = ch + 1;
        offset += count;
    }
    // Each remaining chunk below target lands at its fixed offset: copied from
    // the pool when its search kept every pair there, searched again straight
    // into the caller's buffer (stopping at target) when the pool ran out or
    // it was written in place and ended past max_pairs.
    if (last <= first) return;
    parallel_chunks(b, last - first, 1, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            const uint32_t ch = first + i;
            const uint64_t at = m.chunk_pair_count[ch];
            const uint64_t next = ch + 1 < chunks ? m.chunk_pair_count[ch + 1] : offset;
            const uint64_t stop = next < target ? next : target;
            if (m.chunk_state[ch] == kChunkPooled) {
                publisher.publish_chunk(ch, at, stop - at, false); // stop <= target <= capacity
            } else {
                Sink again;
                again.cur = r.out + at;
                again.end = r.out + stop;
                again.filter = r.filter;
                search.run(search.context, ch, again);
            }
        }
    });
}

} // namespace

PairCounts write_ordered(PhaseTrace& trace, TraceStep prefix_step, const PairMemory& memory, const PairRequest& request,
                         ChunkSearch search, Preparation prepare) {
    const uint32_t chunks = request.chunks();
    HASHGRID_ASSERT(chunks < kMaxChunks, "pair output: too many chunks for the frontier");
    const ThreadBackend& b = trace.backend();
    Publisher publisher{memory, request, Pool{memory.pool, memory.block_next, memory.block_count, memory.block_size},
                        chunks};
    std::memset(memory.chunk_state, kChunkPending, chunks);
    search_chunks(b, search, prepare, publisher);

    PairCounts counts;
    for (uint32_t ch = 0; ch < chunks; ++ch)
        counts.total += memory.chunk_pair_count[ch];
    uint64_t target = counts.total < request.max_pairs ? counts.total : request.max_pairs;
    target = target < request.capacity ? target : request.capacity;
    const uint64_t published = frontier_offset(publisher.frontier);
    // Publishing stops short of the total only over max_pairs (a hard limit;
    // the pool's per-chunk slack does not count) or where the pool ran out.
    if (published < target) {
        trace.next(prefix_step);
        complete_prefix(b, search, publisher, published, target);
    }
    counts.written = target;
    return counts;
}

bool pair_search_allowed(bool built, const Pair* out, uint64_t capacity, QueryResult& result) {
    HASHGRID_ASSERT(out != nullptr || capacity == 0, "find_pairs: null buffer with nonzero capacity");
    if (!built) {
        result.status = make_status(StatusCode::not_built, "find_pairs before a successful rebuild");
        return false;
    }
    if (out == nullptr && capacity > 0) {
        result.status = make_status(StatusCode::invalid_argument, "find_pairs: null buffer with nonzero capacity");
        return false;
    }
    return true;
}

QueryResult pair_result(PairCounts counts, uint64_t max_pairs, uint64_t capacity, const char* over_max) {
    QueryResult result;
    result.total = counts.total;
    result.written = counts.written;
    if (counts.total > max_pairs)
        result.status = capacity_status(StatusCode::pair_capacity, over_max, counts.total);
    else if (counts.total > capacity)
        result.status =
            capacity_status(StatusCode::output_too_small, "pair buffer smaller than the pair count", counts.total);
    return result;
}

} // namespace hashgrid::detail::pair_output

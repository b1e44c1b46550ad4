// SPDX-License-Identifier: MIT
// Pair finding: a forward half-stencil sweep over fixed chunks of home
// particles (sorted positions). A chunk whose place in the caller's buffer is
// known (every earlier chunk is there) writes its pairs straight into it;
// the others go to a pool of pair blocks and are copied into the buffer in
// chunk order (pair_sweep.h: the pool and the sink; pair_kernels.cpp: the
// sweep).
//
// Output order is lexicographic in (sorted position of the earlier particle,
// sorted position of the later): a home particle k is tested against the rest
// of its cell and its forward neighbour ranges, which all lie after k and are
// visited in ascending order. The order therefore depends on the input only,
// not on chunking, threads or the SIMD width.
#include "common/trace_scope.h"
#include "lattice/wrapped_cells.h"
#include "particle/grid_impl.h"
#include "particle/pair_sweep.h"

#include "hashgrid/assert.h"

#include <atomic>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define HASHGRID_STREAM_STORES 1
#endif

namespace hashgrid {

using namespace detail;
using namespace detail::pair_sweep;

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

namespace detail::pair_sweep {

bool Sink::go_direct() {
    const uint64_t word = std::atomic_ref<uint64_t>(*frontier).load(std::memory_order_acquire);
    if (frontier_chunk(word) != chunk) return false;
    const uint64_t at = frontier_offset(word);
    const uint64_t kept = uint64_t{blocks} * kPairBlock;
    if (at + kept >= limit) return false; // no room past the chain: the pool then
    // The chain goes to its place while still in cache, and back to the pool.
    uint32_t block = first_block;
    for (uint32_t i = 0; i < blocks; ++i) {
        copy_out(buffer, at + uint64_t{i} * kPairBlock, pool->pairs + uint64_t{block} * kPairBlock, kPairBlock);
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
            cur = pool->pairs + uint64_t{block} * kPairBlock;
            end = cur + kPairBlock;
            return true;
        }
    }
    overflow = true;
    cur = end = nullptr;
    return false;
}

} // namespace detail::pair_sweep

namespace {

// A chunk's state in GridState::chunk_overflow, which the frontier reads.
constexpr uint8_t kChunkPending = 0;    // still sweeping: its thread publishes it
constexpr uint8_t kChunkSwept = 1;      // every pair in the pool
constexpr uint8_t kChunkOverflowed = 2; // the pool ran out
constexpr uint8_t kChunkInPlace = 3;    // written in the caller's buffer (Sink's direct mode)

/// The sweep's view of the frame: sorted positions and radii, the order,
/// the cell index and r^2. A frame sorted over its dense box still has the
/// box's cell starts: swept as a bounded grid over the box, with the same
/// pairs and order, unless the box touches the wrap seam (a box spanning the
/// whole period has neighbours at its two ends, which only the keyed sweep
/// finds).
SweepData sweep_data(const GridState& frame, const GridConfig& c, const CellTableView& cells) {
    SweepData s{};
    const bool box_sweep =
        frame.mapped && frame.box_starts && box_clear_of_seam(frame.map_lo, frame.map_extent, c.dimensions);
    static_cast<CellIndex&>(s) = box_sweep ? make_box_cell_index(make_lattice(c), frame.dense_start, frame.map_extent)
                                           : make_cell_index(make_lattice(c), cells);
    s.x = frame.sorted[0];
    s.y = frame.sorted[1];
    s.z = frame.sorted[2];
    s.radius = frame.sorted_radius;
    s.order = frame.order;
    s.r2 = c.interaction_distance * c.interaction_distance;
    return s;
}

/// Publishes chunks into the caller's buffer in chunk order, as soon as all
/// earlier ones are done, by whichever thread finishes the last missing one:
/// the copy reads pool blocks that are still in cache and overlaps the other
/// threads' sweeping. `frontier` is (next chunk to publish, its offset):
/// frontier_word. A chunk that the frontier reaches while it runs (on one
/// thread, every chunk from its start) writes the rest of its pairs in place
/// (Sink's direct mode): nothing left to copy. Publishing stops for good at
/// the first chunk that overflowed the pool or would end past max_pairs; what
/// was published is then a prefix of the canonical order. A published
/// chunk's blocks go back to the pool's free list, so later chunks write into
/// blocks still in cache (and the pool runs out later).
///
/// Reads the chunks' state (chunk_overflow), pair count and first block;
/// writes `out` (below `capacity`) and `frontier`.
struct Publisher {
    GridState& frame;
    Pool& pool;
    Pair* out;
    uint64_t capacity;
    uint64_t max_pairs;
    uint32_t chunks;
    uint64_t frontier = 0; // atomic via atomic_ref

    /// Copies the chunk's first `count` pairs from its pool blocks to `offset`
    /// (up to `capacity`); with `recycle`, its blocks then go back to the pool.
    void publish_chunk(uint32_t chunk, uint64_t offset, uint64_t count, bool recycle) {
        const uint64_t last = offset + count < capacity ? offset + count : capacity;
        uint64_t pos = offset;
        const uint32_t first = frame.chunk_first_block[chunk];
        uint32_t block = first;
        while (pos < last) {
            const uint64_t copy = last - pos < kPairBlock ? last - pos : kPairBlock;
            // copy <= kPairBlock and the pool is addressable: size_t is enough.
            copy_out(out, pos, frame.pair_pool + static_cast<size_t>(block) * kPairBlock, static_cast<size_t>(copy));
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
    /// those swept into the pool, until a pending chunk or the stop.
    void advance() {
        std::atomic_ref<uint64_t> front(frontier);
        for (;;) {
            uint64_t word = front.load(std::memory_order_seq_cst);
            const uint32_t next = frontier_chunk(word);
            const uint64_t offset = frontier_offset(word);
            if (next >= chunks) return;
            const uint8_t state = std::atomic_ref<uint8_t>(frame.chunk_overflow[next]).load(std::memory_order_seq_cst);
            if (state == kChunkPending) return; // its thread will continue from here
            const uint64_t count = frame.chunk_pair_count[next];
            const bool stop = state == kChunkOverflowed || offset + count > max_pairs;
            const uint64_t to = stop ? frontier_word(chunks, offset) : frontier_word(next + 1, offset + count);
            if (!front.compare_exchange_strong(word, to, std::memory_order_seq_cst)) continue;
            if (stop) return;
            if (state == kChunkSwept) publish_chunk(next, offset, count, true); // in place: nothing to copy
        }
    }
};

/// Sweeps every chunk of home particles into the pool or in place, and
/// publishes them in chunk order. Reads the sweep's view of the frame;
/// writes each chunk's state, pair count and first block, `out` and the
/// frontier.
void sweep_chunks(const ThreadBackend& b, uint32_t n, const SweepData& s, SweepFn sweep, PairFilter filter,
                  Publisher& publisher) {
    const uint64_t direct_limit = publisher.capacity < publisher.max_pairs ? publisher.capacity : publisher.max_pairs;
    GridState& frame = publisher.frame;
    parallel_chunks(b, n, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const uint32_t chunk = begin / kPairGrain;
        Sink sink;
        sink.pool = &publisher.pool;
        sink.filter = filter;
        sink.buffer = direct_limit > 0 ? publisher.out : nullptr;
        sink.limit = direct_limit;
        sink.frontier = &publisher.frontier;
        sink.chunk = chunk;
        sweep(s, begin, end, sink);
        uint8_t state = sink.overflow ? kChunkOverflowed : kChunkSwept;
        if (sink.direct) {
            end_copies(); // the chain's copy
            // Written in place (up to the capacity). One that ends past
            // max_pairs stops publishing in Publisher::advance(), and complete_prefix
            // searches it again, as every chunk not swept into the pool.
            state = kChunkInPlace;
        }
        frame.chunk_first_block[chunk] = sink.first_block;
        frame.chunk_pair_count[chunk] = sink.count;
        // seq_cst store, then seq_cst load of the frontier in Publisher::advance(): of a
        // finishing thread and one stopped at this chunk, one sees the other.
        std::atomic_ref<uint8_t>(frame.chunk_overflow[chunk]).store(state, std::memory_order_seq_cst);
        publisher.advance();
    });
}

/// Over max_pairs, which chunks kept their pairs in the pool depends on
/// timing: completes the canonical prefix of `target` pairs (those below
/// `published` are in place), so that the output is a function of the input
/// alone. Turns the chunks' pair counts into exclusive offsets (they are not
/// read again); writes `out` below `target`.
void complete_prefix(const ThreadBackend& b, const SweepData& s, SweepFn sweep, PairFilter filter, Publisher& publisher,
                     uint64_t published, uint64_t target) {
    GridState& frame = publisher.frame;
    const uint32_t chunks = publisher.chunks;
    uint64_t offset = 0;
    uint32_t first = chunks; // first chunk not (fully) published
    uint32_t last = 0;       // one past the last chunk below target
    for (uint32_t ch = 0; ch < chunks; ++ch) {
        const uint64_t count = frame.chunk_pair_count[ch];
        frame.chunk_pair_count[ch] = offset;
        if (offset + count > published && first == chunks) first = ch;
        if (offset < target) last = ch + 1;
        offset += count;
    }
    // Each remaining chunk below target lands at its fixed offset: copied from
    // the pool when its sweep kept every pair there, searched again straight
    // into the caller's buffer (stopping at target) when the pool ran out or
    // it was written in place and ended past max_pairs.
    parallel_chunks(b, last - first, 1, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            const uint32_t ch = first + i;
            const uint64_t at = frame.chunk_pair_count[ch];
            const uint64_t next = ch + 1 < chunks ? frame.chunk_pair_count[ch + 1] : offset;
            const uint64_t stop = next < target ? next : target;
            if (frame.chunk_overflow[ch] == kChunkSwept) {
                publisher.publish_chunk(ch, at, stop - at, false); // stop <= target <= capacity
            } else {
                Sink again;
                again.cur = publisher.out + at;
                again.end = publisher.out + stop;
                again.filter = filter;
                const uint32_t home_begin = ch * kPairGrain;
                const uint32_t home_end = frame.count - home_begin < kPairGrain ? frame.count : home_begin + kPairGrain;
                sweep(s, home_begin, home_end, again);
            }
        }
    });
}

} // namespace

PairResult Grid::find_pairs(Pair* out, uint64_t capacity, const ThreadBackend& backend, PairFilter filter) {
    return Impl::find_pairs(*this, out, capacity, backend, filter);
}

PairResult Grid::Impl::find_pairs(Grid& g, Pair* out, uint64_t capacity, const ThreadBackend& caller_backend,
                                  PairFilter filter) {
    HASHGRID_ASSERT(out != nullptr || capacity == 0, "find_pairs: null buffer with nonzero capacity");
    PairResult result;
    if (g.state_ == nullptr || !g.state_->built) {
        result.status = detail::make_status(StatusCode::not_built, "find_pairs before a successful rebuild");
        return result;
    }
    if (out == nullptr && capacity > 0) {
        result.status =
            detail::make_status(StatusCode::invalid_argument, "find_pairs: null buffer with nonzero capacity");
        return result;
    }
    PhaseTrace trace(g.trace_, caller_backend); // the loops run through trace.backend()
    const ThreadBackend& b = trace.backend();
    trace.begin(TracePhase::find_pairs);
    trace.begin(TraceStep::pair_sweep);
    const GridConfig& c = g.config_;
    GridState& frame = *g.state_;
    const SweepData s = sweep_data(frame, c, g.cells());

    const uint64_t t_begin = clock_ns();
    const uint32_t n = frame.count;
    const uint32_t chunks = chunk_count(n, kPairGrain);
    Pool pool{frame.pair_pool, frame.block_next, frame.block_count};
    const auto sweep = sweep_for(active_pair_kernel(), c.dimensions, frame.has_radius);
    std::memset(frame.chunk_overflow, kChunkPending, chunks);
    const uint64_t max_pairs = c.max_pairs;
    Publisher publisher{frame, pool, out, capacity, max_pairs, chunks};
    sweep_chunks(b, n, s, sweep, filter, publisher);

    uint64_t total = 0;
    for (uint32_t ch = 0; ch < chunks; ++ch)
        total += frame.chunk_pair_count[ch];
    const uint64_t published = frontier_offset(publisher.frontier);
    result.total = total;
    result.written = published < capacity ? published : capacity;
    if (published != total) {
        // Over max_pairs (a hard limit; the pool's per-chunk slack does not
        // count): the output is the canonical prefix of min(max_pairs,
        // capacity) pairs, whatever was published so far.
        HASHGRID_ASSERT(total > max_pairs, "publishing stopped below max_pairs");
        const uint64_t target = max_pairs < capacity ? max_pairs : capacity;
        trace.next(TraceStep::pair_prefix);
        if (published < target) complete_prefix(b, s, sweep, filter, publisher, published, target);
        result.written = target;
        result.status =
            detail::capacity_status(StatusCode::pair_capacity, "more pairs than GridConfig::max_pairs", total);
    } else if (total > capacity) {
        result.status =
            detail::capacity_status(StatusCode::output_too_small, "pair buffer smaller than the pair count", total);
    }
    const uint64_t t_end = clock_ns();
    frame.pair_timings = PairTimings{};
    frame.pair_timings.sweep = t_end - t_begin; // publishing overlaps the sweep
    frame.pair_timings.total = t_end - t_begin;
    return result;
}

} // namespace hashgrid

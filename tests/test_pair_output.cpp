// SPDX-License-Identifier: MIT
// The ordered pair output that every pair search writes through
// (core/src/common/pair_output.h), driven by a synthetic search whose pairs
// are known in advance: for every chunk count, pool size, capacity,
// max_pairs, filter and backend (in order, last chunk first, parallel), the
// output is the canonical prefix of min(total, max_pairs, capacity) pairs,
// the total is exact, and nothing at or past the written count is touched.
// Oracle: the chunks' pairs concatenated in chunk order.
#include <doctest/doctest.h>

#include "test_support.h"

#include "common/pair_output.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

using hashgrid_test::ParallelBackend;
using hashgrid_test::reverse_order_backend;

namespace {

using hashgrid::Pair;
using hashgrid::ThreadBackend;
namespace po = hashgrid::detail::pair_output;

/// Pairs of chunk `ch`: a count that varies from 0 to 40 over the chunks,
/// and pairs that name their chunk and place (so any misplaced pair shows).
uint32_t chunk_pairs(uint32_t ch) { return (ch * 7919u + 3u) % 41u; }
Pair pair_at(uint32_t ch, uint32_t i) { return Pair{ch, ch * 1000u + i}; }

/// Emits a chunk's pairs: even chunks one at a time, odd ones in runs of up
/// to 7 (both ways a search hands pairs to its sink).
struct SyntheticSearch {
    uint32_t (*count)(uint32_t) = chunk_pairs;
    void operator()(uint32_t ch, po::Sink& sink) const {
        const uint32_t n = count(ch);
        if (ch % 2 == 0) {
            for (uint32_t i = 0; i < n; ++i)
                sink.push(pair_at(ch, i));
            return;
        }
        Pair run[7];
        for (uint32_t i = 0; i < n; i += 7) {
            const uint32_t m = std::min(7u, n - i);
            for (uint32_t j = 0; j < m; ++j)
                run[j] = pair_at(ch, i + j);
            sink.push_pairs(run, m);
        }
    }
};

bool reject_every_third(void*, uint32_t a, uint32_t b) { return (a + b) % 3 != 0; }

/// Every pair the search finds that the filter accepts, in output order.
std::vector<Pair> expected_pairs(uint32_t chunks, bool filtered) {
    std::vector<Pair> all;
    for (uint32_t ch = 0; ch < chunks; ++ch)
        for (uint32_t i = 0; i < chunk_pairs(ch); ++i) {
            const Pair p = pair_at(ch, i);
            if (!filtered || reject_every_third(nullptr, p.a, p.b)) all.push_back(p);
        }
    return all;
}

/// The grid memory of one search: a pool of `blocks` blocks of `block_size`.
struct Memory {
    std::vector<Pair> pool;
    std::vector<uint32_t> next, first_block;
    std::vector<uint64_t> pair_count;
    std::vector<uint8_t> state;
    po::PairMemory view{};

    Memory(uint32_t blocks, uint32_t block_size, uint32_t chunks)
        : pool(uint64_t{blocks} * block_size + 1), next(blocks + 1), first_block(chunks + 1), pair_count(chunks + 1),
          state(chunks + 1) {
        view = {pool.data(), next.data(), blocks, block_size, first_block.data(), pair_count.data(), state.data()};
    }
};

struct Case {
    uint32_t chunks;
    uint32_t blocks;
    uint64_t capacity;
    uint64_t max_pairs;
    bool filtered;
    uint32_t grain = 1; ///< Items per chunk (the last chunk two items short).
};

/// Runs one search and checks it against the oracle.
void check_case(const Case& c, const ThreadBackend& backend, bool prepare) {
    const std::vector<Pair> expected = expected_pairs(c.chunks, c.filtered);
    const uint64_t total = expected.size();
    const uint64_t written = std::min({total, c.max_pairs, c.capacity});
    INFO("chunks " << c.chunks << " blocks " << c.blocks << " capacity " << c.capacity << " max_pairs " << c.max_pairs
                   << " filtered " << c.filtered << " prepared " << prepare);
    Memory memory(c.blocks, 4, c.chunks);
    constexpr Pair kUntouched{0xdeadbeefu, 0xdeadbeefu};
    std::vector<Pair> out(static_cast<size_t>(c.capacity) + 1, kUntouched);
    hashgrid::PairFilter filter;
    if (c.filtered) filter.accept = reject_every_third;
    const uint32_t items = c.grain == 1 || c.chunks == 0 ? c.chunks * c.grain : c.chunks * c.grain - 2;
    const po::PairRequest request{out.data(), c.capacity, c.max_pairs, filter, items, c.grain};
    REQUIRE(request.chunks() == c.chunks);
    SyntheticSearch search;
    // A preparation that the chunks from the middle on check for.
    std::atomic<bool> prepared{false};
    std::atomic<bool> early{false};
    const uint32_t from = c.chunks / 2;
    auto checked = [&](uint32_t ch, po::Sink& sink) {
        if (prepare && ch >= from && !prepared.load()) early.store(true);
        search(ch, sink);
    };
    auto mark = [&] { prepared = true; };
    hashgrid::detail::PhaseTrace trace(nullptr, backend);
    const po::PairCounts counts =
        po::write_ordered(trace, hashgrid::detail::TraceStep::pair_prefix, memory.view, request,
                          po::chunk_search(checked), prepare ? po::preparation(mark, from) : po::Preparation{});
    CHECK(counts.total == total);
    CHECK(counts.written == written);
    CHECK_FALSE(early.load());
    CHECK(prepared.load() == (prepare && from < c.chunks));
    for (uint64_t i = 0; i < written; ++i) {
        const auto at = static_cast<size_t>(i);
        if (out[at].a != expected[at].a || out[at].b != expected[at].b) {
            FAIL_CHECK("pair " << i << " is (" << out[at].a << ", " << out[at].b << "), expected (" << expected[at].a
                               << ", " << expected[at].b << ")");
            break;
        }
    }
    for (uint64_t i = written; i < out.size(); ++i)
        if (out[static_cast<size_t>(i)].a != kUntouched.a) {
            FAIL_CHECK("slot " << i << " past the written pairs was written");
            break;
        }
    const hashgrid::QueryResult r = po::pair_result(counts, c.max_pairs, c.capacity, "over max");
    CHECK(r.total == total);
    CHECK(r.written == written);
    if (total > c.max_pairs)
        CHECK(r.status.code == hashgrid::StatusCode::pair_capacity);
    else if (total > c.capacity)
        CHECK(r.status.code == hashgrid::StatusCode::output_too_small);
    else
        CHECK(r.status.ok());
}

} // namespace

TEST_CASE("ordered pair output: the canonical prefix for every pool, limit, filter and chunk order") {
    ParallelBackend parallel(4);
    const ThreadBackend backends[] = {hashgrid::serial_backend(), reverse_order_backend(2), parallel.backend()};
    for (const uint32_t chunks : {0u, 1u, 2u, 9u, 64u}) {
        const uint64_t all = expected_pairs(chunks, false).size();
        // Pools from none (every chunk searched again) to ample.
        for (const uint32_t blocks : {0u, 1u, 5u, 40u, 1000u})
            for (const uint64_t capacity : {uint64_t{0}, uint64_t{1}, all / 3, all, all + 9})
                for (const uint64_t max_pairs : {UINT64_MAX, all, all / 2, uint64_t{3}})
                    for (const bool filtered : {false, true})
                        for (const ThreadBackend& backend : backends) {
                            check_case(Case{chunks, blocks, capacity, max_pairs, filtered}, backend, chunks % 2 == 1);
                            check_case(Case{chunks, blocks, capacity, max_pairs, filtered, 4}, backend, false);
                        }
    }
}

TEST_CASE("ordered pair output: a preparation runs before the chunks that need it, on every backend") {
    ParallelBackend parallel(4);
    const ThreadBackend backends[] = {hashgrid::serial_backend(), reverse_order_backend(2), parallel.backend()};
    for (const ThreadBackend& backend : backends)
        for (const uint32_t chunks : {1u, 2u, 3u, 17u})
            check_case(Case{chunks, 8, 10000, UINT64_MAX, false}, backend, true);
}

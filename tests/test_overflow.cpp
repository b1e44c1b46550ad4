// SPDX-License-Identifier: MIT
// Overflow outcomes are a function of the input alone: when find_pairs runs
// out of max_pairs or of the caller's buffer, what it writes is exactly
// min(max_pairs, capacity) pairs (pair_capacity) or capacity pairs
// (output_too_small) of the canonical order, for every thread count and with
// the chunks run last to first. Oracle:
// the same scene without overflow (its first `written` pairs), plus one golden
// hash over every overflowing outcome (tests/golden_hashes.h).
#include <doctest/doctest.h>

#include "golden_hashes.h"
#include "hashgrid/box_grid.h"
#include "test_support.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::StatusCode;

namespace {

/// Thread counts, then 0: one thread running every loop last chunk first
/// (the rebuild too), so that the late chunks take the pool and the early
/// ones are searched again straight into the buffer.
constexpr uint32_t kSchedules[] = {1, 2, 3, 4, 8, 16, 0};

/// The backend of one entry of kSchedules.
class Schedule {
public:
    explicit Schedule(uint32_t threads) : threads_(threads), parallel_(threads == 0 ? 1 : threads) {}
    [[nodiscard]] hashgrid::ThreadBackend backend() const {
        return threads_ == 0 ? reverse_order_backend() : parallel_.backend();
    }

private:
    uint32_t threads_;
    ParallelBackend parallel_;
};

/// ~20 sweep chunks, ~15 neighbours each: overflow falls inside, between and
/// across chunks for the limits below.
Scene overflow_scene(uint32_t dims) {
    Rng rng(dims == 3 ? 8101 : 8102);
    return dims == 3 ? uniform_scene(rng, 3, 20000, 0.0f, 17.0f) : uniform_scene(rng, 2, 20000, 0.0f, 70.0f);
}

struct Outcome {
    hashgrid::PairResult result;
    std::vector<Pair> pairs; // the written prefix
};

Outcome run(hashgrid::Grid& grid, const Scene& s, uint64_t capacity, const hashgrid::ThreadBackend& b) {
    Outcome o;
    REQUIRE(grid.rebuild(s.spans(), b).ok());
    o.pairs.assign(static_cast<size_t>(capacity) + 1, Pair{0xdeadbeef, 0xdeadbeef});
    o.result = grid.find_pairs(capacity ? o.pairs.data() : nullptr, capacity, b);
    REQUIRE(o.result.written <= capacity);
    CHECK(o.pairs[static_cast<size_t>(capacity)].a == 0xdeadbeef); // nothing past capacity
    o.pairs.resize(static_cast<size_t>(o.result.written));
    return o;
}

} // namespace

TEST_CASE("pair_capacity and output_too_small write the canonical prefix for every thread count") {
    const bool print = std::getenv("HASHGRID_PRINT_GOLDEN") != nullptr;
    Fnv1a all;
    for (uint32_t dims : {2u, 3u}) {
        const Scene s = overflow_scene(dims);
        for (bool bounded : {false, true}) {
            hashgrid::GridConfig config = unbounded_config(dims, 1.0f, 1.0f, s.size(), 1);
            if (bounded) config = bounded_config(s, config, 1);
            // The oracle: the whole canonical order, nothing overflowing.
            config.max_pairs = 1u << 22;
            auto full_grid = make_grid(config);
            REQUIRE(full_grid->init_status.ok());
            const Outcome full = run(**full_grid, s, config.max_pairs, hashgrid::serial_backend());
            REQUIRE(full.result.status.ok());
            const uint64_t total = full.result.total;
            REQUIRE(total > 100000);
            const uint64_t limits[] = {1, 2047, 2048, 2049, total / 3, total - 1};
            for (uint64_t max_pairs : limits) {
                config.max_pairs = max_pairs;
                auto g = make_grid(config);
                REQUIRE(g->init_status.ok());
                const uint64_t capacities[] = {0, 1, max_pairs / 2, max_pairs, total};
                for (uint64_t capacity : capacities) {
                    const uint64_t expect = max_pairs < capacity ? max_pairs : capacity;
                    uint64_t first_hash = 0;
                    for (uint32_t threads : kSchedules) {
                        const Schedule schedule(threads);
                        const Outcome o = run(**g, s, capacity, schedule.backend());
                        INFO(dims << "D " << std::string(bounded ? "bounded" : "unbounded") << ", max_pairs "
                                  << max_pairs << ", capacity " << capacity << ", " << threads << " threads");
                        CHECK(o.result.status.code == StatusCode::pair_capacity);
                        CHECK(o.result.status.needed == total);
                        CHECK(o.result.total == total);
                        CHECK(o.result.written == expect);
                        CHECK(diff_pairs(std::vector<Pair>(full.pairs.begin(),
                                                           full.pairs.begin() + static_cast<ptrdiff_t>(expect)),
                                         o.pairs.data(), o.pairs.size()) == "");
                        const uint64_t h = hash_pairs(o.pairs.data(), o.pairs.size());
                        if (threads == 1) {
                            first_hash = h;
                            all.u64(h);
                            all.u64(o.result.written);
                        }
                        CHECK(h == first_hash);
                    }
                }
            }
            // A too-small buffer without pair_capacity: exactly `capacity` pairs.
            config.max_pairs = total;
            auto g = make_grid(config);
            REQUIRE(g->init_status.ok());
            for (uint64_t capacity : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, total - 1})
                for (uint32_t threads : kSchedules) {
                    const Schedule schedule(threads);
                    const Outcome o = run(**g, s, capacity, schedule.backend());
                    CHECK(o.result.status.code == StatusCode::output_too_small);
                    CHECK(o.result.written == capacity);
                    CHECK(diff_pairs(std::vector<Pair>(full.pairs.begin(),
                                                       full.pairs.begin() + static_cast<ptrdiff_t>(capacity)),
                                     o.pairs.data(), o.pairs.size()) == "");
                }
        }
    }
    if (print)
        std::printf("inline constexpr uint64_t kPairOverflow = 0x%016llxull;\n",
                    static_cast<unsigned long long>(all.value()));
    CHECK(all.value() == golden::kPairOverflow);
}

TEST_CASE("box grid: pair_capacity writes min(max_pairs, capacity) canonical pairs for every thread count") {
    Rng rng(77);
    const uint32_t n = 6000;
    std::vector<float> lo[3], hi[3];
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t d = 0; d < 3; ++d) {
            const float at = rng.uniform(0.0f, 40.0f);
            const float edge = rng.uniform(0.2f, 2.5f);
            lo[d].push_back(at);
            hi[d].push_back(at + edge);
        }
    const hashgrid::BoxSpans spans{
        lo[0].data(), lo[1].data(), lo[2].data(), hi[0].data(), hi[1].data(), hi[2].data(), nullptr, nullptr, n};
    hashgrid::BoxGridConfig config;
    config.cell_size = 2.0f;
    config.max_objects = n;
    config.max_cell_entries = 16 * n;
    config.max_pairs = 1u << 22;
    hashgrid::BoxGrid full_grid;
    REQUIRE(full_grid.init_allocate(config).ok());
    REQUIRE(full_grid.rebuild(spans, hashgrid::serial_backend()).ok());
    std::vector<Pair> full(static_cast<size_t>(config.max_pairs));
    const hashgrid::PairResult fr = full_grid.find_pairs(full.data(), full.size(), hashgrid::serial_backend());
    REQUIRE(fr.status.ok());
    const uint64_t total = fr.total;
    REQUIRE(total > 5000);
    for (uint64_t max_pairs : {uint64_t{1}, uint64_t{1000}, total / 2, total - 1}) {
        config.max_pairs = max_pairs;
        hashgrid::BoxGrid grid;
        REQUIRE(grid.init_allocate(config).ok());
        for (uint64_t capacity : {uint64_t{0}, max_pairs / 2, total}) {
            const uint64_t expect = max_pairs < capacity ? max_pairs : capacity;
            for (uint32_t threads : kSchedules) {
                const Schedule schedule(threads);
                const hashgrid::ThreadBackend backend = schedule.backend();
                REQUIRE(grid.rebuild(spans, backend).ok());
                std::vector<Pair> out(static_cast<size_t>(capacity) + 1);
                const hashgrid::PairResult r = grid.find_pairs(out.data(), capacity, backend);
                INFO("max_pairs " << max_pairs << ", capacity " << capacity << ", " << threads << " threads");
                CHECK(r.status.code == StatusCode::pair_capacity);
                CHECK(r.total == total);
                CHECK(r.written == expect);
                CHECK(diff_pairs(std::vector<Pair>(full.begin(), full.begin() + static_cast<ptrdiff_t>(expect)),
                                 out.data(), r.written) == "");
            }
        }
    }
}

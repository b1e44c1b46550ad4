// SPDX-License-Identifier: MIT
// Every pair-test kernel (scalar; SSE2 and AVX2 where the CPU has them; NEON
// on aarch64) gives bit-identical pair arrays, and each matches the
// brute-force oracle in the documented order. Wider SIMD must never change
// results (docs/design.md). The SIMD kernels test groups of home particles
// against each packed candidate vector and keep the hits as lane masks: the
// last test cases build cells whose home and candidate counts land on every
// edge of that scheme.
#include <doctest/doctest.h>

#include "pair_filter_rule.h"
#include "test_support.h"

#include "hashgrid/particle_queries.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using namespace hashgrid_test;
using hashgrid::PairKernel;

namespace {

const char* name(PairKernel k) {
    switch (k) {
    case PairKernel::scalar:
        return "scalar";
    case PairKernel::sse2:
        return "sse2";
    case PairKernel::avx2:
        return "avx2";
    case PairKernel::neon:
        return "neon";
    default:
        return "automatic";
    }
}

std::vector<Pair> pairs_with(PairKernel kernel, const Scene& s, const hashgrid::GridConfig& config,
                             const hashgrid::ThreadBackend& backend) {
    REQUIRE(hashgrid::set_pair_kernel(kernel));
    CHECK(hashgrid::active_pair_kernel() == kernel);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    const Frame f = run_frame(**grid, s, backend, config.max_pairs);
    REQUIRE(f.rebuild.ok());
    REQUIRE(f.result.status.ok());
    const std::vector<Pair> expected =
        in_documented_order(oracle_pairs(s, config.interaction_distance),
                            std::vector<uint32_t>((**grid).sorted_to_original(),
                                                  (**grid).sorted_to_original() + (**grid).particle_count()));
    CHECK_MESSAGE(diff_pairs(expected, f.pairs.data(), f.pairs.size()) == "", name(kernel));
    return f.pairs;
}

} // namespace

TEST_CASE("scalar is always available; automatic resolves to a concrete kernel") {
    KernelGuard guard;
    CHECK(hashgrid::set_pair_kernel(PairKernel::scalar));
    CHECK(hashgrid::active_pair_kernel() == PairKernel::scalar);
    CHECK(hashgrid::set_pair_kernel(PairKernel::automatic));
    CHECK(hashgrid::active_pair_kernel() != PairKernel::automatic);
}

TEST_CASE("every kernel gives the same bytes, 2D and 3D, uniform and per-particle radii, bounded and unbounded") {
    KernelGuard guard;
    const std::vector<PairKernel> kernels = available_kernels();
    MESSAGE("kernels on this CPU: " << kernels.size());
    ParallelBackend tbb(2);
    Rng rng(7);
    for (int scene = 0; scene < 24; ++scene) {
        const uint32_t dims = 2 + scene % 2;
        const bool radii = (scene / 2) % 2 == 1;
        const bool clustered = (scene / 4) % 2 == 1;
        const uint32_t n = 500 + rng.below(4000);
        Scene s = clustered ? clustered_scene(rng, dims, n, 6, -20.0f, 20.0f, 1.5f)
                            : uniform_scene(rng, dims, n, -20.0f, 20.0f);
        if (radii) add_radii(rng, s, 0.01f, 0.5f);
        hashgrid::GridConfig config = unbounded_config(dims, 1.0f, 1.0f, n, uint64_t{n} * 400);
        if (scene >= 12) {
            float lo[3];
            scene_min(s, lo);
            for (uint32_t a = 0; a < 3; ++a)
                config.origin[a] = a < dims ? lo[a] - 0.5f : 0.0f;
            config = bounded_config(s, config, 1);
        }
        INFO("scene " << scene << " dims " << dims << " radii " << radii << " n " << n);
        const std::vector<Pair> reference = pairs_with(PairKernel::scalar, s, config, tbb.backend());
        for (size_t k = 1; k < kernels.size(); ++k) {
            const std::vector<Pair> got = pairs_with(kernels[k], s, config, tbb.backend());
            CHECK_MESSAGE(diff_pairs(reference, got.data(), got.size()) == "", name(kernels[k]));
        }
    }
}

TEST_CASE("a cell with more candidates than one packed block (fallback path) is exact for every kernel") {
    KernelGuard guard;
    // 3000 points in a 2 x 2 x 2 cube with cell 1: each cell has ~375 points,
    // so the forward candidates of cells (0, 0, 0) and (1, 0, 0), ~3000 and
    // ~2600, exceed the 2048-entry packed block.
    Rng rng(11);
    const Scene s = uniform_scene(rng, 3, 3000, 0.0f, 2.0f);
    const hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, 3000, 3000ull * 3000);
    const std::vector<Pair> reference = pairs_with(PairKernel::scalar, s, config, hashgrid::serial_backend());
    for (PairKernel k : {PairKernel::sse2, PairKernel::avx2, PairKernel::neon}) {
        if (!hashgrid::set_pair_kernel(k)) continue;
        const std::vector<Pair> got = pairs_with(k, s, config, hashgrid::serial_backend());
        CHECK_MESSAGE(diff_pairs(reference, got.data(), got.size()) == "", name(k));
    }
}

namespace {

/// Forward neighbours of a home cell (the half stencil): +x, the row y + 1,
/// and in 3D the nine cells of z + 1.
std::vector<std::array<int32_t, 3>> forward_cells(uint32_t dims) {
    std::vector<std::array<int32_t, 3>> cells{{1, 0, 0}};
    for (int32_t dx = -1; dx <= 1; ++dx)
        cells.push_back({dx, 1, 0});
    if (dims == 3)
        for (int32_t dy = -1; dy <= 1; ++dy)
            for (int32_t dx = -1; dx <= 1; ++dx)
                cells.push_back({dx, dy, 1});
    return cells;
}

/// One hand-built cell: `homes` particles in the home cell and `extra` spread
/// at random over its forward neighbours, so that the home cell's packed block
/// holds homes - 1 + extra candidates for its first particle.
struct CellPlan {
    uint32_t homes;
    uint32_t extra;
};

/// Cells of unit size, each plan around its own home cell, 4 cells apart on a
/// 40-wide lattice (no two plans share a neighbour). Tight: every coordinate
/// within 0.2 of the home cell's far corner, so nearly every candidate is a hit
/// and masks are full; otherwise uniform in each cell (mixed masks).
Scene planned_cells(Rng& rng, uint32_t dims, const std::vector<CellPlan>& plans, bool tight) {
    Scene s;
    s.dims = dims;
    const std::vector<std::array<int32_t, 3>> forward = forward_cells(dims);
    auto add_in = [&](int32_t cx, int32_t cy, int32_t cz, const std::array<int32_t, 3>& offset) {
        float p[3];
        const int32_t cell[3] = {cx + offset[0], cy + offset[1], cz + offset[2]};
        for (uint32_t a = 0; a < 3; ++a) {
            // Tight: the 0.2-wide slab of each cell next to the home cell's far corner.
            const float lo = !tight ? 0.0f : (offset[a] > 0 ? 0.0f : 0.8f);
            p[a] = static_cast<float>(cell[a]) + rng.uniform(lo, lo + (tight ? 0.2f : 1.0f));
        }
        s.add(p[0], p[1], dims == 3 ? p[2] : 0.0f);
    };
    for (size_t i = 0; i < plans.size(); ++i) {
        const auto cx = static_cast<int32_t>(4 * (i % 40));
        const auto cy = static_cast<int32_t>(4 * (i / 40));
        const int32_t cz = dims == 3 ? 4 * static_cast<int32_t>(i % 3) : 0;
        for (uint32_t h = 0; h < plans[i].homes; ++h)
            add_in(cx, cy, cz, {0, 0, 0});
        for (uint32_t e = 0; e < plans[i].extra; ++e)
            add_in(cx, cy, cz, forward[rng.below(static_cast<uint32_t>(forward.size()))]);
    }
    return s;
}

/// Shuffles the particles (so that original and sorted order differ).
void shuffle(Rng& rng, Scene& s) {
    for (uint32_t i = s.size(); i > 1; --i) {
        const uint32_t j = rng.below(i);
        std::swap(s.x[i - 1], s.x[j]);
        std::swap(s.y[i - 1], s.y[j]);
        std::swap(s.z[i - 1], s.z[j]);
        if (s.has_radius()) std::swap(s.radius[i - 1], s.radius[j]);
    }
}

hashgrid::GridConfig planned_config(const Scene& s, float distance, bool bounded, uint64_t max_pairs) {
    hashgrid::GridConfig config = unbounded_config(s.dims, 1.0f, distance, s.size(), max_pairs);
    if (!bounded) return config;
    float lo[3];
    scene_min(s, lo);
    for (uint32_t a = 0; a < 3; ++a)
        config.origin[a] = a < s.dims ? std::floor(lo[a]) : 0.0f;
    return bounded_config(s, config, 1);
}

/// One find_pairs() with `kernel` into a buffer of `capacity` pairs (plus a
/// guard zone that must stay untouched).
FilteredRun run_kernel(PairKernel kernel, hashgrid::Grid& grid, uint64_t capacity, hashgrid::PairFilter filter,
                       const hashgrid::ThreadBackend& backend) {
    REQUIRE(hashgrid::set_pair_kernel(kernel));
    constexpr uint32_t kGuard = 64;
    const Pair sentinel{0xdeadbeefu, 0xfeedfaceu};
    std::vector<Pair> buffer(static_cast<size_t>(capacity) + kGuard, sentinel);
    FilteredRun run;
    run.result = grid.find_pairs(buffer.data(), capacity, backend, filter);
    for (size_t i = static_cast<size_t>(capacity); i < buffer.size(); ++i)
        if (buffer[i].a != sentinel.a || buffer[i].b != sentinel.b) run.past_capacity_untouched = false;
    buffer.resize(static_cast<size_t>(std::min<uint64_t>(run.result.written, capacity)));
    run.pairs = std::move(buffer);
    return run;
}

/// Runs every kernel on `s` and checks each against the oracle (in the
/// documented order) and the scalar kernel's bytes.
void check_every_kernel(const Scene& s, const hashgrid::GridConfig& config, const hashgrid::ThreadBackend& backend) {
    KernelGuard guard;
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    REQUIRE((**grid).rebuild(s.spans(), backend).ok());
    const std::vector<uint32_t> order((**grid).sorted_to_original(),
                                      (**grid).sorted_to_original() + (**grid).particle_count());
    const std::vector<Pair> expected = in_documented_order(oracle_pairs(s, config.interaction_distance), order);
    REQUIRE(expected.size() <= config.max_pairs);
    std::vector<Pair> scalar;
    for (PairKernel k : available_kernels()) {
        const FilteredRun run = run_kernel(k, **grid, expected.size(), {}, backend);
        CHECK_MESSAGE(check_filtered(run, hashgrid::StatusCode::ok, expected, expected.size()) == "", name(k));
        if (k == PairKernel::scalar)
            scalar = run.pairs;
        else
            CHECK_MESSAGE(diff_pairs(scalar, run.pairs.data(), run.pairs.size()) == "", name(k));
    }
}

} // namespace

TEST_CASE("automatic picks NEON on aarch64, AVX2 or SSE2 on x86-64") {
    KernelGuard guard;
    REQUIRE(hashgrid::set_pair_kernel(PairKernel::automatic));
    const PairKernel picked = hashgrid::active_pair_kernel();
#if defined(__aarch64__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    CHECK(picked == PairKernel::neon);
    CHECK(!hashgrid::set_pair_kernel(PairKernel::sse2));
    CHECK(!hashgrid::set_pair_kernel(PairKernel::avx2));
#elif defined(__x86_64__) || defined(_M_X64)
    CHECK(picked == (hashgrid::set_pair_kernel(PairKernel::avx2) ? PairKernel::avx2 : PairKernel::sse2));
    CHECK(!hashgrid::set_pair_kernel(PairKernel::neon));
#else
    CHECK(picked == PairKernel::scalar);
#endif
}

TEST_CASE("block edges: 1..40 home particles per cell, candidate counts across every multiple of 4 and 8") {
    // Every (homes, extra) with homes 1..40 and extra 0..17: for a cell's first
    // particle the packed block holds homes - 1 + extra candidates, so the
    // counts cover every remainder modulo 8 with each home count, home groups
    // end anywhere in a vector, and full masks (tight) cross vector boundaries.
    std::vector<CellPlan> plans;
    for (uint32_t homes = 1; homes <= 40; ++homes)
        for (uint32_t extra = 0; extra <= 17; ++extra)
            plans.push_back({homes, extra});
    ParallelBackend tbb(2);
    Rng rng(1201);
    for (uint32_t variant = 0; variant < 16; ++variant) {
        const uint32_t dims = 2 + variant % 2;
        const bool radii = (variant / 2) % 2 == 1;
        const bool tight = (variant / 4) % 2 == 1;
        const bool bounded = variant / 8 == 1;
        Scene s = planned_cells(rng, dims, plans, tight);
        if (radii) add_radii(rng, s, 0.05f, 0.5f);
        shuffle(rng, s);
        INFO("dims " << dims << " radii " << radii << " tight " << tight << " bounded " << bounded);
        check_every_kernel(s, planned_config(s, 1.0f, bounded, uint64_t{s.size()} * 128), tbb.backend());
    }
}

TEST_CASE("block edges: candidate counts around the packed block's capacity (1024)") {
    // The first particle of a cell sees homes - 1 + extra candidates: blocks of
    // 1015..1032, the last few too big (range by range instead), with few home
    // particles and many. A short interaction distance keeps the pair count small.
    std::vector<CellPlan> plans;
    for (uint32_t homes : {1u, 4u, 8u, 9u, 33u})
        for (int32_t total : {1015, 1016, 1017, 1023, 1024, 1025, 1032})
            plans.push_back({homes, static_cast<uint32_t>(total) - (homes - 1)});
    ParallelBackend tbb(2);
    Rng rng(1202);
    for (uint32_t variant = 0; variant < 4; ++variant) {
        const uint32_t dims = 2 + variant % 2;
        const bool radii = variant / 2 == 1;
        Scene s = planned_cells(rng, dims, plans, false);
        if (radii) add_radii(rng, s, 0.01f, 0.06f);
        shuffle(rng, s);
        INFO("dims " << dims << " radii " << radii);
        check_every_kernel(s, planned_config(s, 0.12f, variant % 2 == 1, uint64_t{s.size()} * 64), tbb.backend());
    }
}

namespace {

/// Cells of 3..39 home particles with 5..60 more in their forward
/// neighbours: thousands of pairs per sweep chunk, pool blocks changed
/// inside cells.
std::vector<CellPlan> tight_cell_plans() {
    std::vector<CellPlan> plans;
    for (uint32_t homes = 3; homes <= 40; homes += 3)
        for (uint32_t extra = 5; extra <= 60; extra += 11)
            plans.push_back({homes, extra});
    return plans;
}

/// The documented status of find_pairs for `total` pairs.
hashgrid::StatusCode pairs_status(uint64_t total, uint64_t max_pairs, uint64_t capacity) {
    if (total > max_pairs) return hashgrid::StatusCode::pair_capacity;
    return total > capacity ? hashgrid::StatusCode::output_too_small : hashgrid::StatusCode::ok;
}

} // namespace

TEST_CASE("block edges: the pair buffer fills mid-cell (pool refills and overflow, max_pairs, a small buffer)") {
    // Tight cells give thousands of pairs per chunk of home particles, so the
    // sink changes pool blocks inside a cell. A small max_pairs also shrinks the
    // pool (it runs out mid-chunk, and such chunks are searched again straight
    // into the caller's buffer, ending mid-cell); a small buffer cuts the
    // output mid-cell. Every kernel must give the same prefix of the canonical order.
    KernelGuard guard;
    const std::vector<CellPlan> plans = tight_cell_plans();
    ParallelBackend p3(3);
    const std::vector<hashgrid::ThreadBackend> backends = {hashgrid::serial_backend(), p3.backend()};
    Rng rng(1203);
    for (uint32_t dims : {2u, 3u}) {
        Scene s = planned_cells(rng, dims, plans, true);
        if (dims == 2) add_radii(rng, s, 0.1f, 0.5f);
        shuffle(rng, s);
        const hashgrid::GridConfig full = planned_config(s, 1.0f, false, uint64_t{s.size()} * 128);
        std::vector<Pair> expected;
        {
            auto grid = make_grid(full);
            REQUIRE((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
            const std::vector<uint32_t> order((**grid).sorted_to_original(),
                                              (**grid).sorted_to_original() + (**grid).particle_count());
            expected = in_documented_order(oracle_pairs(s, 1.0f), order);
        }
        const uint64_t total = expected.size();
        REQUIRE(total > 20000); // several pool blocks of 2048 pairs per chunk
        for (const uint64_t max_pairs : {total, total - 1, total / 2 + 3, uint64_t{2049}, uint64_t{100}, uint64_t{1}}) {
            hashgrid::GridConfig config = full;
            config.max_pairs = max_pairs;
            auto grid = make_grid(config);
            REQUIRE(grid->init_status.ok());
            REQUIRE((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
            for (const uint64_t capacity : {total, total / 3 + 1, uint64_t{7}}) {
                const uint64_t written = std::min(max_pairs, capacity);
                const hashgrid::StatusCode code = pairs_status(total, max_pairs, capacity);
                for (const hashgrid::ThreadBackend& backend : backends) {
                    std::vector<Pair> scalar;
                    for (PairKernel k : available_kernels()) {
                        INFO("dims " << dims << " max_pairs " << max_pairs << " capacity " << capacity << " kernel "
                                     << name(k));
                        const FilteredRun run = run_kernel(k, **grid, capacity, {}, backend);
                        CHECK(check_filtered(run, code, expected, written) == "");
                        if (k == PairKernel::scalar)
                            scalar = run.pairs;
                        else
                            CHECK(diff_pairs(scalar, run.pairs.data(), run.pairs.size()) == "");
                    }
                }
            }
        }
    }
}

namespace {

/// A two-thread schedule made certain: chunk 1 runs on a thread of its own
/// while the caller runs chunk 0, then the caller runs the rest in order.
/// The pair filter (accepting every pair) holds chunk 1 at its hold_at-th
/// pair until chunk 0 has returned, so chunk 1 holds pool blocks when it
/// becomes the next chunk in output order, and finishes with the frontier
/// on it.
struct HandOff {
    std::atomic<bool> chunk0_done{false};
    uint64_t calls_on_second = 0; // only the second thread touches it
    uint64_t hold_at = 0;
    std::atomic<uint32_t> holds{0};
};
thread_local bool t_on_second = false;

hashgrid::ThreadBackend hand_off_backend(HandOff& h) {
    hashgrid::ThreadBackend b;
    b.state = &h;
    b.parallel_for = [](void* state, uint32_t count, uint32_t grain, hashgrid::ChunkFn fn, void* context) {
        auto& hand = *static_cast<HandOff*>(state);
        const uint64_t chunks = (uint64_t{count} + grain - 1) / grain;
        auto run = [&](uint64_t c, uint32_t worker) {
            const uint64_t begin = c * grain;
            fn(context, static_cast<uint32_t>(begin), static_cast<uint32_t>(std::min<uint64_t>(begin + grain, count)),
               worker);
        };
        if (chunks < 2) {
            if (chunks == 1) run(0, 0);
            return;
        }
        hand.chunk0_done.store(false);
        hand.calls_on_second = 0;
        std::thread second([&] {
            t_on_second = true;
            run(1, 1);
            t_on_second = false;
        });
        run(0, 0);
        hand.chunk0_done.store(true);
        second.join();
        for (uint64_t c = 2; c < chunks; ++c)
            run(c, 0);
    };
    b.worker_count = 2;
    return b;
}

bool hand_off_accept(void* context, uint32_t, uint32_t) {
    auto& hand = *static_cast<HandOff*>(context);
    if (t_on_second && ++hand.calls_on_second == hand.hold_at) {
        while (!hand.chunk0_done.load())
            std::this_thread::yield();
        hand.holds.fetch_add(1);
    }
    return true;
}

} // namespace

TEST_CASE("a sweep chunk that becomes next in output order while it runs writes the rest of its pairs in place") {
    // Chunk 1 fills one pool block (2048 pairs) and part of the next before
    // chunk 0 is done; at its next block it finds itself next in order: its
    // blocks go to their place in the buffer and the rest of its pairs are
    // written straight there. Buffers and max_pairs cut the output before,
    // inside and after that place.
    KernelGuard guard;
    const std::vector<CellPlan> plans = tight_cell_plans();
    Rng rng(1207);
    Scene s = planned_cells(rng, 3, plans, true);
    shuffle(rng, s);
    const hashgrid::GridConfig full = planned_config(s, 1.0f, true, uint64_t{s.size()} * 128);
    auto grid = make_grid(full);
    REQUIRE((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
    const uint32_t n = (**grid).particle_count();
    const std::vector<uint32_t> order((**grid).sorted_to_original(), (**grid).sorted_to_original() + n);
    const std::vector<Pair> expected = in_documented_order(oracle_pairs(s, 1.0f), order);
    // Chunk k of the sweep holds the pairs whose earlier particle (in sorted
    // order) is one of its 1024 home particles.
    std::vector<uint32_t> position(n);
    for (uint32_t p = 0; p < n; ++p)
        position[order[p]] = p;
    uint64_t before = 0, in_chunk1 = 0;
    for (const Pair& p : expected) {
        const uint32_t first = std::min(position[p.a], position[p.b]);
        before += first < 1024 ? 1 : 0;
        in_chunk1 += first >= 1024 && first < 2048 ? 1 : 0;
    }
    const uint64_t hold_at = 3000;
    REQUIRE(n > 2048);
    REQUIRE(in_chunk1 > 2 * 2048 + 1000); // a second full block, then pairs written in place
    const uint64_t total = expected.size();
    const uint64_t in_place = before + 2 * 2048 + 500; // a pair chunk 1 writes in place
    HandOff hand;
    hand.hold_at = hold_at;
    const hashgrid::ThreadBackend backend = hand_off_backend(hand);
    const hashgrid::PairFilter filter{&hand_off_accept, &hand};
    for (const uint64_t max_pairs : {total, in_place, before + 2048 + 3}) {
        hashgrid::GridConfig config = full;
        config.max_pairs = max_pairs;
        auto g = make_grid(config);
        REQUIRE((**g).rebuild(s.spans(), hashgrid::serial_backend()).ok());
        for (const uint64_t capacity : {total, total + 5, in_place, before + 2048 + 3, before + 1}) {
            const uint64_t written = std::min(max_pairs, capacity);
            const hashgrid::StatusCode code = pairs_status(total, max_pairs, capacity);
            for (PairKernel k : available_kernels()) {
                INFO("max_pairs " << max_pairs << " capacity " << capacity << " kernel " << name(k));
                const uint32_t holds = hand.holds.load();
                const FilteredRun run = run_kernel(k, **g, capacity, filter, backend);
                CHECK(hand.holds.load() > holds); // chunk 1 was held until chunk 0 was done
                CHECK(check_filtered(run, code, expected, written) == "");
            }
        }
    }
}

TEST_CASE("block edges: a PairFilter sends every hit through the sink one by one, for every kernel") {
    KernelGuard guard;
    std::vector<CellPlan> plans;
    for (uint32_t homes = 1; homes <= 40; homes += 3)
        for (uint32_t extra = 0; extra <= 17; extra += 2)
            plans.push_back({homes, extra});
    ParallelBackend p3(3);
    Rng rng(1204);
    for (uint32_t variant = 0; variant < 4; ++variant) {
        const uint32_t dims = 2 + variant % 2;
        Scene s = planned_cells(rng, dims, plans, variant / 2 == 1);
        if (variant == 1) add_radii(rng, s, 0.05f, 0.5f);
        shuffle(rng, s);
        const std::vector<uint8_t> team(s.size(), 0); // sizes only: the rule keeps (a ^ b) & 1
        const hashgrid::GridConfig config = planned_config(s, 1.0f, variant == 2, uint64_t{s.size()} * 128);
        auto grid = make_grid(config);
        REQUIRE((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
        const std::vector<uint32_t> order((**grid).sorted_to_original(),
                                          (**grid).sorted_to_original() + (**grid).particle_count());
        FilterRule rule;
        rule.team_a = &team;
        rule.team_b = &team;
        const std::vector<Pair> kept = kept_pairs(in_documented_order(oracle_pairs(s, 1.0f), order), rule);
        REQUIRE(!kept.empty());
        for (PairKernel k : available_kernels()) {
            INFO("variant " << variant << " kernel " << name(k));
            const FilteredRun run = run_kernel(k, **grid, kept.size(), rule.filter(), p3.backend());
            CHECK(check_filtered(run, hashgrid::StatusCode::ok, kept, kept.size()) == "");
            const FilteredRun cut = run_kernel(k, **grid, kept.size() / 2, rule.filter(), p3.backend());
            CHECK(check_filtered(cut, hashgrid::StatusCode::output_too_small, kept, kept.size() / 2) == "");
        }
        CHECK(!rule.bad_call.load());
    }
}

TEST_CASE("a result past 4 MiB (copied out with streaming stores on x86-64) is exact at any buffer alignment") {
    // About 700,000 pairs in a long thin box (cheap for the sweep oracle):
    // the copy into the caller's buffer changes method past 2^19 pairs, and
    // the pool's blocks are reused once their chunk is published. Run last
    // chunk first, every chunk but the first goes through the pool and the
    // copy (on one thread in order, every chunk is written in place).
    KernelGuard guard;
    Rng rng(1205);
    Scene s;
    s.dims = 3;
    for (uint32_t i = 0; i < 45000; ++i) {
        const float px = rng.uniform(0.0f, 500.0f);
        const float py = rng.uniform(0.0f, 3.0f);
        s.add(px, py, rng.uniform(0.0f, 3.0f));
    }
    const hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, s.size(), 2000000);
    auto grid = make_grid(config);
    REQUIRE((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
    const std::vector<uint32_t> order((**grid).sorted_to_original(),
                                      (**grid).sorted_to_original() + (**grid).particle_count());
    const std::vector<Pair> expected = in_documented_order(oracle_pairs(s, 1.0f), order);
    REQUIRE(expected.size() > (uint64_t{1} << 19) + 50000);
    ParallelBackend p2(2);
    std::vector<Pair> buffer(expected.size() + 2);
    for (PairKernel k : available_kernels()) {
        REQUIRE(hashgrid::set_pair_kernel(k));
        for (const hashgrid::ThreadBackend& backend :
             {hashgrid::serial_backend(), p2.backend(), reverse_order_backend()})
            for (size_t shift : {size_t{0}, size_t{1}}) {
                INFO("kernel " << name(k) << " shift " << shift);
                std::fill(buffer.begin(), buffer.end(), Pair{0, 0});
                const hashgrid::PairResult r = (**grid).find_pairs(buffer.data() + shift, expected.size(), backend);
                REQUIRE(r.status.ok());
                CHECK(diff_pairs(expected, buffer.data() + shift, r.written) == "");
            }
    }
}

namespace {

/// Brute force for a particle box or radius query: the particles that pass
/// `hit`, in the grid's sorted order (the documented result order).
template <typename Hit>
std::vector<uint32_t> query_oracle(const Scene& s, const std::vector<uint32_t>& rank, Hit&& hit) {
    std::vector<uint32_t> found;
    for (uint32_t i = 0; i < s.size(); ++i)
        if (hit(i)) found.push_back(i);
    std::sort(found.begin(), found.end(), [&](uint32_t a, uint32_t b) { return rank[a] < rank[b]; });
    return found;
}

/// The single query's buffer form at capacity total + 3 (every result, and
/// nothing written past them) and total - 1 (the prefix), against `expected`.
template <typename Run>
std::string check_single(const std::vector<uint32_t>& expected, Run&& run) {
    constexpr uint32_t kUnwritten = 0xdeadbeefu;
    for (const uint64_t capacity :
         {uint64_t{expected.size()} + 3, expected.empty() ? 0 : uint64_t{expected.size()} - 1}) {
        std::vector<uint32_t> out(static_cast<size_t>(capacity) + 4, kUnwritten);
        const hashgrid::QueryResult r = run(out.data(), capacity);
        const std::string at = " (capacity " + std::to_string(capacity) + ")";
        if (r.total != expected.size())
            return "total " + std::to_string(r.total) + " expected " + std::to_string(expected.size()) + at;
        for (uint64_t k = 0; k < out.size(); ++k) {
            const uint32_t want = k < r.written ? expected[static_cast<size_t>(k)] : kUnwritten;
            if (out[static_cast<size_t>(k)] != want) return "entry " + std::to_string(k) + " differs" + at;
        }
    }
    return "";
}

} // namespace

TEST_CASE("particle box and radius queries: every kernel finds brute force's particles in sorted order") {
    // Runs of every length around the kernels' vector widths and their
    // 256-candidate pieces (a dense clump puts ~600 particles in one cell);
    // query bounds and radii taken from particle coordinates, so the closed
    // box test and the strict distance test are decided at equality.
    KernelGuard guard;
    ParallelBackend p2(2);
    Rng rng(4242);
    for (int variant = 0; variant < 8; ++variant) {
        const uint32_t dims = 2 + variant % 2;
        const bool bounded = (variant / 2) % 2 == 1;
        const bool clump = variant / 4 == 1;
        Scene s = uniform_scene(rng, dims, 3000, 0.0f, 40.0f);
        if (clump)
            for (uint32_t i = 0; i < 700; ++i)
                s.add(rng.uniform(20.0f, 23.5f), rng.uniform(20.0f, 23.5f),
                      dims == 3 ? rng.uniform(20.0f, 23.5f) : 0.0f);
        hashgrid::GridConfig config = unbounded_config(dims, 4.0f, 4.0f, s.size(), 1);
        if (bounded) config = bounded_config(s, config, 1);
        auto grid = make_grid(config);
        REQUIRE((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
        std::vector<uint32_t> rank(s.size());
        for (uint32_t k = 0; k < s.size(); ++k)
            rank[(**grid).sorted_to_original()[k]] = k;
        std::vector<hashgrid::QueryBox> boxes;
        std::vector<hashgrid::QuerySphere> spheres;
        std::vector<std::vector<uint32_t>> box_expected, sphere_expected;
        for (int q = 0; q < 40; ++q) {
            const uint32_t i = rng.below(s.size());
            const uint32_t j = rng.below(s.size());
            const float c[3] = {s.x[i], s.y[i], dims == 3 ? s.z[i] : 0.0f};
            hashgrid::QueryBox b;
            for (uint32_t a = 0; a < dims; ++a) {
                const float half = rng.uniform(0.5f, q % 4 == 0 ? 20.0f : 6.0f);
                b.min[a] = c[a] - half;
                b.max[a] = c[a] + half;
            }
            b.max[0] = std::max(b.min[0], s.x[j]); // a particle on the max face (x)
            boxes.push_back(b);
            box_expected.push_back(query_oracle(s, rank, [&](uint32_t k) {
                bool inside = true;
                for (uint32_t a = 0; a < dims; ++a)
                    inside = inside && s.coord(a, k) >= b.min[a] && s.coord(a, k) <= b.max[a];
                return inside;
            }));
            // Radius: exactly particle j's distance (j is not a result: strict).
            hashgrid::QuerySphere sphere{{c[0], c[1], c[2]}, 0.0f};
            const float dx = s.x[j] - c[0], dy = s.y[j] - c[1], dz = dims == 3 ? s.z[j] - c[2] : 0.0f;
            const float d2 = dims == 3 ? (rounded_mul(dx, dx) + rounded_mul(dy, dy)) + rounded_mul(dz, dz)
                                       : rounded_mul(dx, dx) + rounded_mul(dy, dy);
            sphere.radius = q % 3 == 0 ? std::sqrt(d2) : rng.uniform(0.0f, 9.0f);
            spheres.push_back(sphere);
            const float r2 = rounded_mul(sphere.radius, sphere.radius);
            sphere_expected.push_back(query_oracle(s, rank, [&](uint32_t k) {
                const float ex = s.x[k] - c[0], ey = s.y[k] - c[1];
                float e2 = rounded_mul(ex, ex) + rounded_mul(ey, ey);
                if (dims == 3) {
                    const float ez = s.z[k] - c[2];
                    e2 = e2 + rounded_mul(ez, ez);
                }
                return e2 < r2;
            }));
        }
        std::vector<uint32_t> box_concat, sphere_concat;
        for (const auto& e : box_expected)
            box_concat.insert(box_concat.end(), e.begin(), e.end());
        for (const auto& e : sphere_expected)
            sphere_concat.insert(sphere_concat.end(), e.begin(), e.end());
        const auto count = static_cast<uint32_t>(boxes.size());
        for (PairKernel k : available_kernels()) {
            REQUIRE(hashgrid::set_pair_kernel(k));
            INFO("variant " << variant << " kernel " << std::string(name(k)));
            for (uint32_t q = 0; q < count; ++q) {
                INFO("query " << q);
                CHECK(check_single(box_expected[q], [&](uint32_t* out, uint64_t capacity) {
                          return hashgrid::query_box(**grid, boxes[q], capacity == 0 ? nullptr : out, capacity);
                      }) == "");
                CHECK(check_single(sphere_expected[q], [&](uint32_t* out, uint64_t capacity) {
                          return hashgrid::query_radius(**grid, spheres[q], capacity == 0 ? nullptr : out, capacity);
                      }) == "");
            }
            std::vector<uint64_t> offsets(count + 1);
            std::vector<uint32_t> out(box_concat.size() + sphere_concat.size());
            hashgrid::QueryResult r = hashgrid::query_box_batch(**grid, boxes.data(), count, offsets.data(),
                                                                offsets.size(), out.data(), out.size(), p2.backend());
            REQUIRE(r.status.ok());
            CHECK(std::equal(box_concat.begin(), box_concat.end(), out.begin()));
            r = hashgrid::query_radius_batch(**grid, spheres.data(), count, offsets.data(), offsets.size(), out.data(),
                                             out.size(), p2.backend());
            REQUIRE(r.status.ok());
            CHECK(std::equal(sphere_concat.begin(), sphere_concat.end(), out.begin()));
        }
    }
}

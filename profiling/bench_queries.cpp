// SPDX-License-Identifier: MIT
// bench_queries: batched particle queries (boxes and circles) and the
// re-index after small moves, Hashgrid against nanoflann and a plain dense
// grid written here (counting sort into cells, direct cell lookup, scalar
// loop: what a hand-rolled grid does), on Google Benchmark.
//
// Scene: 100k 2D points uniform in [0, 1000)^2 (0.1 per unit^2); 1000
// queries at uniform centres: 500 axis-aligned boxes of half-size 15 (closed:
// min <= p <= max) and 500 circles of radius 20 (strict: d2 < r * r, d2 =
// dx * dx + dy * dy in float), about 105k results per batch of 1000.
//
// Before any timing, every implementation's result sets (sorted per query)
// are compared with brute force; a mismatch ends that benchmark with an
// error. Counters: results (per iteration), candidates (particles given the
// exact test, where known), ns_per_candidate, other_load (cores other
// processes took while it ran).
//
//   Queries/hashgrid/<world>/<cell>/<threads>  query_box_batch (500) + query_radius_batch (500)
//   Queries/nanoflann                          kd-tree radius search (boxes: circumscribed circle + filter)
//   Queries/dense_grid/<cell>                  the plain dense grid, one thread
//   Reindex/hashgrid/<world>/<cell>/<threads>  rebuild after every point moved by up to +-0.25
//   Reindex/dense_grid/<cell>                  the plain grid's counting sort of the same points
//
// world: 0 bounded (a box of cells over the square), 1 unbounded (hashed).
//
//   bench_queries [--benchmark_filter=...] [--benchmark_repetitions=N] ...

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/query_types.h"
#include "hashgrid/status.h"
#include "hashgrid_support/gbench.h"
#include "hashgrid_support/nanoflann_cloud.h"
#include "hashgrid_support/random.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using hashgrid::Grid;
using hashgrid::GridConfig;
using hashgrid::QueryBox;
using hashgrid::QueryResult;
using hashgrid::QuerySphere;
using hashgrid::QueryStats;
using hashgrid::StatusCode;
using hashgrid::World;
using hashgrid::platform::TbbBackend;
using hashgrid_support::SplitMix64;

constexpr uint32_t kPoints = 100000;
constexpr float kSide = 1000.0f;
constexpr uint32_t kBoxes = 500;
constexpr uint32_t kCircles = 500;
constexpr float kBoxHalf = 15.0f;
constexpr float kRadius = 20.0f;
constexpr float kMove = 0.25f;

/// Per query, the result indices ascending (CSR).
struct ResultSets {
    std::vector<uint64_t> start;
    std::vector<uint32_t> index;

    void canonicalize() {
        for (size_t q = 0; q + 1 < start.size(); ++q)
            std::sort(index.begin() + static_cast<std::ptrdiff_t>(start[q]),
                      index.begin() + static_cast<std::ptrdiff_t>(start[q + 1]));
    }
    [[nodiscard]] uint64_t results() const { return index.size(); }
};

bool in_box(const QueryBox& b, float x, float y) {
    return x >= b.min[0] && x <= b.max[0] && y >= b.min[1] && y <= b.max[1];
}

bool in_circle(const QuerySphere& s, float x, float y) {
    const float dx = x - s.center[0];
    const float dy = y - s.center[1];
    return dx * dx + dy * dy < s.radius * s.radius;
}

struct Scene {
    std::vector<float> x, y;             ///< Frame 0.
    std::vector<float> moved_x, moved_y; ///< Every point moved by up to +-kMove per axis.
    std::vector<QueryBox> boxes;
    std::vector<QuerySphere> circles;
    ResultSets truth; ///< Brute force: the boxes, then the circles.

    Scene() {
        SplitMix64 rng(0x51ab3u);
        x.resize(kPoints);
        y.resize(kPoints);
        moved_x.resize(kPoints);
        moved_y.resize(kPoints);
        for (uint32_t i = 0; i < kPoints; ++i) {
            x[i] = rng.uniform(0.0f, kSide);
            y[i] = rng.uniform(0.0f, kSide);
        }
        for (uint32_t i = 0; i < kPoints; ++i) {
            moved_x[i] = std::clamp(x[i] + rng.uniform(-kMove, kMove), 0.0f, kSide);
            moved_y[i] = std::clamp(y[i] + rng.uniform(-kMove, kMove), 0.0f, kSide);
        }
        boxes.resize(kBoxes);
        for (QueryBox& b : boxes) {
            const float cx = rng.uniform(0.0f, kSide);
            const float cy = rng.uniform(0.0f, kSide);
            b.min[0] = cx - kBoxHalf;
            b.max[0] = cx + kBoxHalf;
            b.min[1] = cy - kBoxHalf;
            b.max[1] = cy + kBoxHalf;
        }
        circles.resize(kCircles);
        for (QuerySphere& s : circles) {
            s.center[0] = rng.uniform(0.0f, kSide);
            s.center[1] = rng.uniform(0.0f, kSide);
            s.radius = kRadius;
        }
        truth.start.push_back(0);
        for (const QueryBox& b : boxes) {
            for (uint32_t i = 0; i < kPoints; ++i)
                if (in_box(b, x[i], y[i])) truth.index.push_back(i);
            truth.start.push_back(truth.index.size());
        }
        for (const QuerySphere& s : circles) {
            for (uint32_t i = 0; i < kPoints; ++i)
                if (in_circle(s, x[i], y[i])) truth.index.push_back(i);
            truth.start.push_back(truth.index.size());
        }
    }
};

const Scene& scene() {
    static const Scene s;
    return s;
}

/// Empty when `got` (canonicalized) equals brute force, else what differs.
std::string compare(const ResultSets& got) {
    const ResultSets& truth = scene().truth;
    if (got.start.size() != truth.start.size()) return "wrong query count";
    for (size_t q = 0; q + 1 < truth.start.size(); ++q) {
        const bool same = std::equal(got.index.begin() + static_cast<std::ptrdiff_t>(got.start[q]),
                                     got.index.begin() + static_cast<std::ptrdiff_t>(got.start[q + 1]),
                                     truth.index.begin() + static_cast<std::ptrdiff_t>(truth.start[q]),
                                     truth.index.begin() + static_cast<std::ptrdiff_t>(truth.start[q + 1]));
        if (!same) return "query " + std::to_string(q) + " differs from brute force";
    }
    return {};
}

/// Checks `got` (sorted per query here) against brute force; on a difference
/// the benchmark is skipped with what differs and false is returned.
bool matches_brute_force(benchmark::State& state, ResultSets got) {
    got.canonicalize();
    const std::string diff = compare(got);
    if (!diff.empty()) state.SkipWithError(diff.c_str());
    return diff.empty();
}

/// results and candidates per iteration; ns_per_candidate: the wall time of
/// the timing loop (`loop_ns`, all threads together) per candidate tested.
void set_query_counters(benchmark::State& state, uint64_t results, uint64_t candidates, uint64_t loop_ns) {
    state.counters["results"] = benchmark::Counter(static_cast<double>(results));
    if (candidates != 0 && state.iterations() != 0) {
        state.counters["candidates"] = benchmark::Counter(static_cast<double>(candidates));
        state.counters["ns_per_candidate"] = benchmark::Counter(
            static_cast<double>(loop_ns) / (static_cast<double>(state.iterations()) * static_cast<double>(candidates)));
    }
}

// ---------------------------------------------------------------------------
// Hashgrid.

GridConfig grid_config(World world, float cell) {
    GridConfig c;
    c.dimensions = 2;
    c.cell_size = cell;
    c.interaction_distance = cell;
    c.world = world;
    c.max_particles = kPoints;
    c.max_cells = kPoints;
    c.max_pairs = 1;
    if (world == World::bounded) {
        c.cell_counts[0] = c.cell_counts[1] = static_cast<uint32_t>(std::floor(kSide / cell)) + 1;
        c.cell_counts[2] = 1;
    }
    return c;
}

struct HashgridRun {
    std::unique_ptr<Grid> grid = std::make_unique<Grid>();
    std::unique_ptr<TbbBackend> threads;
    std::vector<uint64_t> box_offsets = std::vector<uint64_t>(kBoxes + 1);
    std::vector<uint64_t> circle_offsets = std::vector<uint64_t>(kCircles + 1);
    std::vector<uint32_t> out = std::vector<uint32_t>(size_t{1} << 18);
    std::string error;

    HashgridRun(World world, float cell, uint32_t thread_count) : threads(std::make_unique<TbbBackend>(thread_count)) {
        if (!grid->init_allocate(grid_config(world, cell)).ok()) error = "init_allocate failed";
    }
    bool rebuild(const std::vector<float>& x, const std::vector<float>& y) {
        hashgrid::ParticleSpans spans;
        spans.x = x.data();
        spans.y = y.data();
        spans.count = kPoints;
        return grid->rebuild(spans, threads->backend()).ok();
    }
    /// Both batches; the circles' results follow the boxes' in `out`.
    uint64_t run(QueryStats* stats = nullptr) {
        const Scene& s = scene();
        const QueryResult b =
            hashgrid::query_box_batch(*grid, s.boxes.data(), kBoxes, box_offsets.data(), box_offsets.size(), out.data(),
                                      out.size(), threads->backend(), stats);
        const uint64_t used = b.written;
        const QueryResult c = hashgrid::query_radius_batch(*grid, s.circles.data(), kCircles, circle_offsets.data(),
                                                           circle_offsets.size(), out.data() + used, out.size() - used,
                                                           threads->backend(), stats);
        if (!b.status.ok() || !c.status.ok()) return ~uint64_t{0};
        return b.total + c.total;
    }
    [[nodiscard]] ResultSets results() const {
        ResultSets r;
        r.start.push_back(0);
        for (uint32_t q = 0; q < kBoxes; ++q)
            r.start.push_back(box_offsets[q + 1]);
        for (uint32_t q = 0; q < kCircles; ++q)
            r.start.push_back(box_offsets[kBoxes] + circle_offsets[q + 1]);
        r.index.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(r.start.back()));
        return r;
    }
};

World world_arg(int64_t a) { return a == 0 ? World::bounded : World::unbounded; }

void BM_hashgrid_queries(benchmark::State& state) {
    const Scene& s = scene();
    HashgridRun h(world_arg(state.range(0)), static_cast<float>(state.range(1)), static_cast<uint32_t>(state.range(2)));
    if (!h.error.empty() || !h.rebuild(s.x, s.y)) {
        state.SkipWithError("init or rebuild failed");
        return;
    }
    QueryStats stats;
    if (h.run(&stats) == ~uint64_t{0}) {
        state.SkipWithError("query batch failed");
        return;
    }
    if (!matches_brute_force(state, h.results())) return;
    uint64_t results = 0;
    uint64_t loop_ns = 0;
    {
        const hashgrid_support::OtherLoadCounter load(state);
        const uint64_t start = hashgrid::platform::now_ns();
        for (auto _ : state) {
            results = h.run();
            benchmark::DoNotOptimize(h.out.data());
        }
        loop_ns = hashgrid::platform::now_ns() - start;
    }
    set_query_counters(state, results, stats.tested, loop_ns);
    state.counters["cells"] = benchmark::Counter(static_cast<double>(stats.cells));
}

void BM_hashgrid_reindex(benchmark::State& state) {
    const Scene& s = scene();
    HashgridRun h(world_arg(state.range(0)), static_cast<float>(state.range(1)), static_cast<uint32_t>(state.range(2)));
    if (!h.error.empty() || !h.rebuild(s.x, s.y)) {
        state.SkipWithError("init or rebuild failed");
        return;
    }
    bool moved = false;
    {
        const hashgrid_support::OtherLoadCounter load(state);
        for (auto _ : state) {
            // Alternates between frame 0 and the moved frame: every rebuild
            // sees every point moved by up to kMove per axis.
            moved = !moved;
            if (!h.rebuild(moved ? s.moved_x : s.x, moved ? s.moved_y : s.y)) {
                state.SkipWithError("rebuild failed");
                return;
            }
            benchmark::DoNotOptimize(h.grid->sorted_x());
        }
    }
    // Copy floor: read x, y; write sorted x, y and the index (one pass each).
    hashgrid_support::set_floor_counters(state, 5.0 * 4.0 * kPoints, static_cast<uint32_t>(state.range(2)));
}

// ---------------------------------------------------------------------------
// nanoflann: a 2D kd-tree, radius search (squared radius, keeps d2 < r2).

using Cloud = hashgrid_support::NanoflannCloud<2>;
using KdTree = hashgrid_support::NanoflannKdTree<2>;

void BM_nanoflann_queries(benchmark::State& state) {
    const Scene& s = scene();
    const Cloud cloud{{s.x.data(), s.y.data()}, kPoints};
    KdTree tree(2, cloud, nanoflann::KDTreeSingleIndexAdaptorParams(10));
    std::vector<std::pair<uint32_t, float>> matches;
    matches.reserve(1024);
    const nanoflann::SearchParams params(32, 0.0f, false);
    ResultSets r;
    r.start.reserve(kBoxes + kCircles + 1);
    r.index.reserve(size_t{1} << 18);
    // Slightly enlarged search radii; the exact test filters (so the tree's
    // rounding never decides a boundary case).
    const float box_r2 = 2.0f * kBoxHalf * kBoxHalf * 1.001f;
    const float circle_r2 = kRadius * kRadius * 1.001f;
    uint64_t candidates = 0;
    auto run = [&] {
        r.start.clear();
        r.index.clear();
        r.start.push_back(0);
        candidates = 0;
        for (const QueryBox& b : s.boxes) {
            const float c[2] = {0.5f * (b.min[0] + b.max[0]), 0.5f * (b.min[1] + b.max[1])};
            tree.radiusSearch(c, box_r2, matches, params);
            candidates += matches.size();
            for (const auto& m : matches)
                if (in_box(b, s.x[m.first], s.y[m.first])) r.index.push_back(m.first);
            r.start.push_back(r.index.size());
        }
        for (const QuerySphere& q : s.circles) {
            tree.radiusSearch(q.center, circle_r2, matches, params);
            candidates += matches.size();
            for (const auto& m : matches)
                if (in_circle(q, s.x[m.first], s.y[m.first])) r.index.push_back(m.first);
            r.start.push_back(r.index.size());
        }
    };
    run();
    if (!matches_brute_force(state, r)) return;
    {
        const hashgrid_support::OtherLoadCounter load(state);
        for (auto _ : state) {
            run();
            benchmark::DoNotOptimize(r.index.data());
        }
    }
    // "candidates" here: the points the tree returned for the exact filter
    // (its own distance tests inside leaves are not counted).
    state.counters["results"] = benchmark::Counter(static_cast<double>(r.results()));
    state.counters["tree_hits"] = benchmark::Counter(static_cast<double>(candidates));
}

// ---------------------------------------------------------------------------
// The plain dense grid: cells of a fixed size over the square, particles
// counting-sorted into cells (SoA copies), a query reads its cell box row by
// row (a row's cells are contiguous) and tests each particle.

struct DenseGrid {
    float cell = 16.0f;
    float inv = 1.0f / 16.0f;
    int32_t n = 0; ///< Cells per axis.
    std::vector<uint32_t> start, key;
    std::vector<float> sx, sy;
    std::vector<uint32_t> id;

    explicit DenseGrid(float c) : cell(c), inv(1.0f / c), n(static_cast<int32_t>(std::floor(kSide / c)) + 1) {
        start.resize(static_cast<size_t>(n) * n + 1);
        key.resize(kPoints);
        sx.resize(kPoints);
        sy.resize(kPoints);
        id.resize(kPoints);
    }
    [[nodiscard]] int32_t axis_cell(float v) const {
        const auto c = static_cast<int32_t>(v * inv);
        return std::clamp(c, 0, n - 1);
    }
    void build(const std::vector<float>& x, const std::vector<float>& y) {
        std::fill(start.begin(), start.end(), 0u);
        for (uint32_t i = 0; i < kPoints; ++i) {
            const uint32_t k = static_cast<uint32_t>(axis_cell(y[i]) * n + axis_cell(x[i]));
            key[i] = k;
            ++start[k + 1];
        }
        for (size_t c = 1; c < start.size(); ++c)
            start[c] += start[c - 1];
        // start[k] is now the first slot of cell k; fill moves it to the next.
        for (uint32_t i = 0; i < kPoints; ++i) {
            const uint32_t at = start[key[i]]++;
            sx[at] = x[i];
            sy[at] = y[i];
            id[at] = i;
        }
        // Shift back: start[k] = first slot of cell k again.
        for (size_t c = start.size() - 1; c > 0; --c)
            start[c] = start[c - 1];
        start[0] = 0;
    }
    /// Calls test(sorted position) for every particle in the cells covering [lo, hi].
    template <typename Test>
    uint64_t visit(float lo_x, float lo_y, float hi_x, float hi_y, Test&& test) const {
        const int32_t x0 = axis_cell(lo_x), x1 = axis_cell(hi_x);
        const int32_t y0 = axis_cell(lo_y), y1 = axis_cell(hi_y);
        uint64_t tested = 0;
        for (int32_t cy = y0; cy <= y1; ++cy) {
            const uint32_t b = start[static_cast<size_t>(cy) * n + x0];
            const uint32_t e = start[static_cast<size_t>(cy) * n + x1 + 1];
            tested += e - b;
            for (uint32_t k = b; k < e; ++k)
                test(k);
        }
        return tested;
    }
};

void BM_dense_grid_queries(benchmark::State& state) {
    const Scene& s = scene();
    DenseGrid g(static_cast<float>(state.range(0)));
    g.build(s.x, s.y);
    ResultSets r;
    r.start.reserve(kBoxes + kCircles + 1);
    r.index.reserve(size_t{1} << 18);
    uint64_t candidates = 0;
    auto run = [&] {
        r.start.clear();
        r.index.clear();
        r.start.push_back(0);
        candidates = 0;
        for (const QueryBox& b : s.boxes) {
            candidates += g.visit(b.min[0], b.min[1], b.max[0], b.max[1], [&](uint32_t k) {
                if (in_box(b, g.sx[k], g.sy[k])) r.index.push_back(g.id[k]);
            });
            r.start.push_back(r.index.size());
        }
        for (const QuerySphere& q : s.circles) {
            const float cx = q.center[0], cy = q.center[1], r2 = q.radius * q.radius;
            candidates += g.visit(cx - q.radius, cy - q.radius, cx + q.radius, cy + q.radius, [&](uint32_t k) {
                const float dx = g.sx[k] - cx;
                const float dy = g.sy[k] - cy;
                if (dx * dx + dy * dy < r2) r.index.push_back(g.id[k]);
            });
            r.start.push_back(r.index.size());
        }
    };
    run();
    if (!matches_brute_force(state, r)) return;
    uint64_t loop_ns = 0;
    {
        const hashgrid_support::OtherLoadCounter load(state);
        const uint64_t start = hashgrid::platform::now_ns();
        for (auto _ : state) {
            run();
            benchmark::DoNotOptimize(r.index.data());
        }
        loop_ns = hashgrid::platform::now_ns() - start;
    }
    set_query_counters(state, r.results(), candidates, loop_ns);
}

void BM_dense_grid_reindex(benchmark::State& state) {
    const Scene& s = scene();
    DenseGrid g(static_cast<float>(state.range(0)));
    g.build(s.x, s.y);
    bool moved = false;
    {
        const hashgrid_support::OtherLoadCounter load(state);
        for (auto _ : state) {
            moved = !moved;
            g.build(moved ? s.moved_x : s.x, moved ? s.moved_y : s.y);
            benchmark::DoNotOptimize(g.sx.data());
        }
    }
    hashgrid_support::set_floor_counters(state, 5.0 * 4.0 * kPoints, 1);
}

void hashgrid_args(benchmark::internal::Benchmark* b) {
    b->ArgNames({"world", "cell", "threads"});
    for (int64_t world : {0, 1})
        for (int64_t cell : {8, 16})
            for (int64_t threads : {1, 2})
                b->Args({world, cell, threads});
    b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_hashgrid_queries)->Name("Queries/hashgrid")->Apply(hashgrid_args);
BENCHMARK(BM_nanoflann_queries)->Name("Queries/nanoflann")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dense_grid_queries)
    ->Name("Queries/dense_grid")
    ->ArgName("cell")
    ->Arg(8)
    ->Arg(16)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_hashgrid_reindex)->Name("Reindex/hashgrid")->Apply(hashgrid_args);
BENCHMARK(BM_dense_grid_reindex)
    ->Name("Reindex/dense_grid")
    ->ArgName("cell")
    ->Arg(8)
    ->Arg(16)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    hashgrid_support::add_machine_context();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

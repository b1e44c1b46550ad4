// SPDX-License-Identifier: MIT
// bench_query_worst_case: single queries whose cost used to grow with the
// empty part of the world rather than with what it holds. A k = 1 nearest
// query from one end of a 4 x ny x 10 bounded (clamp) world whose five
// particles sit at the other end, for ny = 10k .. 1M cells. Every query must
// cost at most the cells it has to look at or the occupied cells, whichever
// is smaller, so the times should stay flat as ny grows.
//
// Benchmarks nearest_k1/ny:<ny> (one query per iteration, wall time). Each
// query's answer is checked (one hit: the nearest of the five particles); a
// wrong answer fails the benchmark and the program exits with status 1.
//
//   bench_query_worst_case [Google Benchmark flags: --benchmark_repetitions=R (default 5), ...]

#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/bench_harness.h"
#include "hashgrid_support/gbench.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

/// The five particles: x and z per particle, y at the far end.
constexpr float kX[5] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f};
constexpr float kZ[5] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
float particle_y(uint32_t ny) { return static_cast<float>(ny) - 1.5f; }

/// The world of `ny` cells with its five particles, built on first use.
const hashgrid::Grid* world(uint32_t ny) {
    static std::map<uint32_t, std::unique_ptr<hashgrid::Grid>> grids;
    std::unique_ptr<hashgrid::Grid>& grid = grids[ny];
    if (grid != nullptr) return grid.get();
    hashgrid::GridConfig c;
    c.dimensions = 3;
    c.cell_size = 1.0f;
    c.interaction_distance = 1.0f;
    c.world = hashgrid::World::bounded;
    c.out_of_bounds = hashgrid::OutOfBounds::clamp;
    c.cell_counts[0] = 4;
    c.cell_counts[1] = ny;
    c.cell_counts[2] = 10;
    c.max_particles = 8;
    c.max_cells = 8;
    c.max_pairs = 64;
    const float y[5] = {particle_y(ny), particle_y(ny), particle_y(ny), particle_y(ny), particle_y(ny)};
    hashgrid::ParticleSpans spans;
    spans.x = kX;
    spans.y = y;
    spans.z = kZ;
    spans.count = 5;
    auto built = std::make_unique<hashgrid::Grid>();
    if (!built->init_allocate(c).ok() || !built->rebuild(spans, hashgrid::serial_backend()).ok()) return nullptr;
    grid = std::move(built);
    return grid.get();
}

void nearest_k1(benchmark::State& state, uint32_t ny) {
    const hashgrid::Grid* grid = world(ny);
    if (grid == nullptr) {
        state.SkipWithError("init_allocate or rebuild failed");
        return;
    }
    const hashgrid::QueryNearest query{{2.0f, 0.5f, 5.0f}, 1, std::numeric_limits<float>::infinity()};
    hashgrid::NearestHit nearest[1];
    hashgrid::QueryResult r;
    {
        const hashgrid_support::OtherLoadCounter load(state);
        for (auto _ : state) {
            r = hashgrid::query_nearest(*grid, query, nearest, 1);
            benchmark::DoNotOptimize(nearest);
        }
    }
    // Brute force, with the query's float distance (dx^2 + dy^2) + dz^2 and ties to the lower index.
    uint32_t want = 0;
    float best = std::numeric_limits<float>::infinity();
    for (uint32_t i = 0; i < 5; ++i) {
        const float dx = kX[i] - query.center[0];
        const float dy = particle_y(ny) - query.center[1];
        const float dz = kZ[i] - query.center[2];
        const float d2 = (dx * dx + dy * dy) + dz * dz;
        if (d2 < best) {
            best = d2;
            want = i;
        }
    }
    if (!r.status.ok() || r.total != 1 || nearest[0].index != want) {
        hashgrid_support::check_failed(state, "nearest_k1/ny:" + std::to_string(ny),
                                       "nearest particle " + std::to_string(nearest[0].index) + ", brute force " +
                                           std::to_string(want));
    }
}

} // namespace

int main(int argc, char** argv) {
    hashgrid_support::BenchArgs args(argc, argv);
    if (!args.initialize("", true)) return 2;
    for (const uint32_t ny : {10000u, 20000u, 40000u, 1000000u}) {
        hashgrid_support::with_min_max(
            benchmark::RegisterBenchmark(("nearest_k1/ny:" + std::to_string(ny)).c_str(),
                                         [ny](benchmark::State& state) { nearest_k1(state, ny); })
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond));
    }
    return hashgrid_support::run_benchmarks();
}

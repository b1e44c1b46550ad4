// SPDX-License-Identifier: MIT
// bench_sweeps: how a frame's cost (rebuild + all pairs into the caller's
// buffer) moves with the particle count, the neighbour count, the thread count
// and the cell size. Google Benchmark runs the series; profiling/plots/plot.py
// turns its JSON into docs/plots/*.png (profiling/plots/make_plots.sh runs
// both).
//
// Scene: n points uniform in the unit cube (3D), r = interaction distance
// such that n * 4/3 pi r^3 = k mean neighbours (fewer near the walls), input
// in random order and static: every iteration is a full rebuild from random
// order (the sort is not skipped) plus find_pairs into a preallocated buffer.
// Bounded world over the cube, cell = r, all hardware threads (oneTBB),
// unless a sweep varies it:
//
//   vs_n/n:N               N = 10k .. 4M, k = 30 (the density in neighbours is fixed)
//   vs_neighbours/k:K      n = 500k, K = 4 .. 150 (r varied)
//   vs_threads/threads:T   n = 1M, k = 30, T = 1 .. hardware threads
//   vs_cell/W/OP/cell:F    n = 200k, k = 30, cell = F * r for F = 0.5 .. 2,
//                          W = bounded | unbounded world, OP = pairs
//                          (rebuild + find_pairs; the grid needs cell >= r, so
//                          F >= 1 only) | radius (rebuild + query_radius_batch
//                          of radius r around every point, any F)
//
// Counters per run: pairs (found per iteration; radius: hits minus the point
// itself, halved), neighbours (2 pairs / n, measured), rebuild_ms and
// query_ms (mean per iteration), ns_per_pair and ns_per_particle (whole
// iteration), grid_mib (the grid's memory block), n, k, threads, cell_factor,
// bounded, radius_op (the parameters, for the plots), and other_load (cores
// other processes used while the run's timing loop ran: compare only runs
// with low other load). The context records the CPU, the load average and the
// copy bandwidth.
//
//   bench_sweeps [--quick] [Google Benchmark flags]
//
// Defaults added in front of the given flags (so these win):
// --benchmark_repetitions=3 --benchmark_display_aggregates_only=true.
// --quick: fewer points per sweep, n = 200k / 100k for the fixed-n sweeps,
// 1M at most, one repetition, shorter runs. --benchmark_filter=vs_cell runs one
// sweep. Full run: about 3 minutes on the 2-core development machine.
//
//   bench_sweeps --benchmark_out=sweeps.json --benchmark_out_format=json

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/status.h"
#include "hashgrid_support/gbench.h"
#include "hashgrid_support/uniform_points.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using hashgrid::Grid;
using hashgrid::GridConfig;
using hashgrid::Pair;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::World;
using hashgrid::platform::now_ns;
using hashgrid_support::UniformPoints;

constexpr uint64_t kSeed = 0x5eeb5000u;

enum class Op { pairs, radius };

/// One run's parameters.
struct Case {
    uint32_t n = 0;
    double neighbours = 30.0;
    double cell_factor = 1.0; ///< cell = cell_factor * r.
    World world = World::bounded;
    uint32_t threads = 1;
    Op op = Op::pairs;

    [[nodiscard]] bool same_grid(const Case& o) const {
        return n == o.n && neighbours == o.neighbours && cell_factor == o.cell_factor && world == o.world && op == o.op;
    }
};

/// The points of the last n asked for (one scene at a time: 4M points are 48 MB).
const UniformPoints& points(uint32_t n) {
    static UniformPoints cached;
    if (cached.size() != n) cached = UniformPoints(3, n, kSeed + n);
    return cached;
}

/// One oneTBB backend per thread count, alive for the whole program.
hashgrid::platform::TbbBackend& tbb_backend(uint32_t threads) {
    static std::map<uint32_t, std::unique_ptr<hashgrid::platform::TbbBackend>> backends;
    std::unique_ptr<hashgrid::platform::TbbBackend>& b = backends[threads];
    if (!b) b = std::make_unique<hashgrid::platform::TbbBackend>(threads);
    return *b;
}

/// The grid and buffers of the last case, kept across Google Benchmark's
/// calls of the same run (its iteration estimate and repetitions).
struct Workspace {
    Case key;
    bool valid = false;
    float r = 0.0f;
    std::unique_ptr<Grid> grid;
    uint64_t grid_bytes = 0;
    std::vector<Pair> pairs;                    ///< Op::pairs output.
    std::vector<hashgrid::QuerySphere> spheres; ///< Op::radius: one per point.
    std::vector<uint64_t> offsets;
    std::vector<uint32_t> hits;

    /// Sets up the grid for `c` with room for `capacity` pairs (radius: hits).
    std::string init(const Case& c, uint64_t capacity) {
        valid = false;
        grid.reset();
        pairs = {};
        hits = {};
        key = c;
        r = hashgrid_support::radius_for_neighbours(3, c.n, c.neighbours);
        const float cell = static_cast<float>(c.cell_factor * static_cast<double>(r));
        GridConfig config;
        config.dimensions = 3;
        config.cell_size = cell;
        // find_pairs pairs within the interaction distance (<= cell); the radius
        // queries take their radius r from the spheres, so any cell size works.
        config.interaction_distance = c.op == Op::pairs ? r : cell;
        config.world = c.world;
        if (c.world == World::bounded) {
            for (uint32_t a = 0; a < 3; ++a)
                config.cell_counts[a] = hashgrid_support::cells_over_unit(cell);
        }
        config.max_particles = c.n;
        config.max_cells = c.n;
        config.max_pairs = c.op == Op::pairs ? capacity : 1;
        const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
        if (!req.status.ok()) return std::string("memory_requirements: ") + req.status.message;
        grid = std::make_unique<Grid>();
        const Status s = grid->init_allocate(config);
        if (!s.ok()) return std::string("init: ") + s.message;
        grid_bytes = req.bytes;
        if (c.op == Op::pairs) {
            pairs.assign(static_cast<size_t>(capacity), Pair{0, 0});
        } else {
            const UniformPoints& p = points(c.n);
            spheres.resize(c.n);
            for (uint32_t i = 0; i < c.n; ++i)
                spheres[i] = hashgrid::QuerySphere{{p.axis[0][i], p.axis[1][i], p.axis[2][i]}, r};
            offsets.assign(size_t{c.n} + 1, 0);
            hits.assign(static_cast<size_t>(capacity), 0u);
        }
        valid = true;
        return "";
    }
};

Workspace& workspace() {
    static Workspace w;
    return w;
}

struct FrameResult {
    std::string error;   ///< Non-empty: failed.
    uint64_t needed = 0; ///< Non-zero: the output was too small; this many are needed.
    uint64_t rebuild_ns = 0;
    uint64_t query_ns = 0;
    uint64_t found = 0; ///< Pairs (radius: hits).
};

FrameResult frame(Workspace& w, const UniformPoints& p, const hashgrid::ThreadBackend& backend) {
    FrameResult f;
    const hashgrid::ParticleSpans spans{p.axis[0].data(), p.axis[1].data(), p.axis[2].data(), nullptr, p.size()};
    uint64_t start = now_ns();
    const Status s = w.grid->rebuild(spans, backend);
    f.rebuild_ns = now_ns() - start;
    if (!s.ok()) {
        f.error = std::string("rebuild: ") + s.message;
        return f;
    }
    start = now_ns();
    hashgrid::QueryResult q;
    if (w.key.op == Op::pairs) {
        q = w.grid->find_pairs(w.pairs.data(), w.pairs.size(), backend);
    } else {
        q = hashgrid::query_radius_batch(*w.grid, w.spheres.data(), p.size(), w.offsets.data(), w.offsets.size(),
                                         w.hits.data(), w.hits.size(), backend);
    }
    f.query_ns = now_ns() - start;
    if (q.status.code == StatusCode::pair_capacity || q.status.code == StatusCode::output_too_small) {
        f.needed = q.total;
    } else if (!q.status.ok()) {
        f.error = std::string(w.key.op == Op::pairs ? "find_pairs: " : "query_radius_batch: ") + q.status.message;
    }
    f.found = q.total;
    return f;
}

void run_case(benchmark::State& state, Case c) {
    const UniformPoints& p = points(c.n);
    Workspace& w = workspace();
    const hashgrid::ThreadBackend backend = tbb_backend(c.threads).backend();
    // Room for the model's count (walls only lower it) plus a margin; a frame
    // that needs more says so with the exact count, and the grid is regrown.
    const double per_point = c.op == Op::pairs ? c.neighbours / 2.0 : c.neighbours + 1.0;
    uint64_t capacity = static_cast<uint64_t>(per_point * c.n * 1.1) + 4096;
    if (!w.valid || !w.key.same_grid(c)) {
        const std::string error = w.init(c, capacity);
        if (!error.empty()) {
            state.SkipWithError(error.c_str());
            return;
        }
    }
    // Warm-up frame (touches every page, sizes the output).
    FrameResult warm = frame(w, p, backend);
    for (int regrow = 0; warm.error.empty() && warm.needed != 0 && regrow < 2; ++regrow) {
        capacity = warm.needed + warm.needed / 20 + 4096;
        const std::string error = w.init(c, capacity);
        if (!error.empty()) {
            state.SkipWithError(error.c_str());
            return;
        }
        warm = frame(w, p, backend);
    }
    if (!warm.error.empty() || warm.needed != 0) {
        state.SkipWithError(warm.error.empty() ? "output still too small" : warm.error.c_str());
        return;
    }

    uint64_t rebuild_ns = 0, query_ns = 0, found = warm.found;
    {
        const hashgrid_support::OtherLoadCounter other_load(state);
        for (auto _ : state) {
            const FrameResult f = frame(w, p, backend);
            if (!f.error.empty() || f.needed != 0 || f.found != found) {
                state.SkipWithError(f.error.empty() ? "the count changed between iterations of a static scene"
                                                    : f.error.c_str());
                break;
            }
            rebuild_ns += f.rebuild_ns;
            query_ns += f.query_ns;
        }
    }
    const double iterations = static_cast<double>(state.iterations());
    if (iterations == 0) return;
    const double pairs = c.op == Op::pairs ? static_cast<double>(found) : static_cast<double>(found - c.n) / 2.0;
    const double frame_ns = static_cast<double>(rebuild_ns + query_ns) / iterations;
    state.counters["pairs"] = pairs;
    state.counters["neighbours"] = 2.0 * pairs / c.n;
    state.counters["rebuild_ms"] = static_cast<double>(rebuild_ns) / iterations * 1e-6;
    state.counters["query_ms"] = static_cast<double>(query_ns) / iterations * 1e-6;
    state.counters["ns_per_pair"] = pairs > 0 ? frame_ns / pairs : 0.0;
    state.counters["ns_per_particle"] = frame_ns / c.n;
    state.counters["grid_mib"] = static_cast<double>(w.grid_bytes) / 1048576.0;
    state.counters["n"] = c.n;
    state.counters["k"] = c.neighbours;
    state.counters["threads"] = c.threads;
    state.counters["cell_factor"] = c.cell_factor;
    state.counters["bounded"] = c.world == World::bounded ? 1.0 : 0.0;
    state.counters["radius_op"] = c.op == Op::radius ? 1.0 : 0.0;
}

void add(const std::string& name, const Case& c, double min_time) {
    benchmark::RegisterBenchmark(name.c_str(), run_case, c)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(min_time);
}

std::string format(const char* pattern, double value) {
    char text[96];
    std::snprintf(text, sizeof(text), pattern, value);
    return text;
}

} // namespace

int main(int argc, char** argv) {
    // --quick is ours; the rest goes to Google Benchmark after our defaults.
    bool quick = false;
    std::vector<char*> args{argv[0]};
    static char repetitions[] = "--benchmark_repetitions=3";
    static char one_repetition[] = "--benchmark_repetitions=1";
    static char aggregates[] = "--benchmark_display_aggregates_only=true";
    for (int i = 1; i < argc; ++i)
        quick = quick || std::strcmp(argv[i], "--quick") == 0;
    args.push_back(quick ? one_repetition : repetitions);
    args.push_back(aggregates);
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--quick") != 0) args.push_back(argv[i]);
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;

    const uint32_t hardware = std::max(1u, std::thread::hardware_concurrency());
    const uint32_t fixed_n = quick ? 200000 : 500000;
    const uint32_t cell_n = quick ? 100000 : 200000; // the radius queries take 15-100x longer than find_pairs
    const double min_time = quick ? 0.05 : 0.3;
    const std::vector<uint32_t> ns =
        quick ? std::vector<uint32_t>{10000, 100000, 1000000}
              : std::vector<uint32_t>{10000, 30000, 100000, 300000, 1000000, 2000000, 4000000};
    const std::vector<double> ks =
        quick ? std::vector<double>{4, 30, 150} : std::vector<double>{4, 8, 15, 30, 50, 80, 110, 150};
    const std::vector<double> factors =
        quick ? std::vector<double>{0.5, 1.0, 1.5, 2.0}
              : std::vector<double>{0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.5, 1.75, 2.0};

    for (uint32_t n : ns)
        add("vs_n/n:" + std::to_string(n), Case{n, 30.0, 1.0, World::bounded, hardware, Op::pairs}, min_time);
    for (double k : ks)
        add(format("vs_neighbours/k:%g", k), Case{fixed_n, k, 1.0, World::bounded, hardware, Op::pairs}, min_time);
    for (uint32_t t = 1; t <= hardware; ++t)
        add("vs_threads/threads:" + std::to_string(t),
            Case{quick ? 200000u : 1000000u, 30.0, 1.0, World::bounded, t, Op::pairs}, min_time);
    for (World world : {World::bounded, World::unbounded}) {
        const std::string w = world == World::bounded ? "bounded" : "unbounded";
        for (Op op : {Op::pairs, Op::radius}) {
            for (double f : factors) {
                if (op == Op::pairs && f < 1.0) continue; // the grid needs cell >= interaction distance
                add(format(("vs_cell/" + w + (op == Op::pairs ? "/pairs" : "/radius") + "/cell:%.3f").c_str(), f),
                    Case{cell_n, 30.0, f, world, hardware, op}, min_time);
            }
        }
    }

    hashgrid_support::add_machine_context();
    benchmark::AddCustomContext("hardware_threads", std::to_string(hardware));
    benchmark::AddCustomContext("scene", "uniform unit cube, random input order, static points; cell = r unless "
                                         "vs_cell; oneTBB; k = 30 unless vs_neighbours");
    benchmark::AddCustomContext("fixed_n", std::to_string(fixed_n));
    benchmark::AddCustomContext("cell_sweep_n", std::to_string(cell_n));
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

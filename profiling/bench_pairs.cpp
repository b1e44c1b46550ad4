// SPDX-License-Identifier: MIT
// bench_pairs: Hashgrid's rebuild and pair phases on 1M-point scenes, side by
// side with a hand-written dense grid (dense_reference.h) and nanoflann's
// radius search, on Google Benchmark.
//
// Scenes (n points, default 1M; r keeps the neighbour count for any n):
//   P3  uniform in the unit cube, r such that n * 4/3 pi r^3 = 30 neighbours
//   P2  uniform in the unit square, r such that n * pi r^2 = 8 neighbours
//   C3  100 Gaussian clusters (sigma 0.04, centres in [0.15, 0.85]^3), P3's r
// Benchmarks, one per (scene, implementation, world, order, threads):
//   <scene>/hashgrid/<bounded|unbounded>/<random|sorted|static>/threads:<t>
//   <scene>/dense_reference/<count|write>/<random|sorted|static>/threads:<t>
//   P3/nanoflann/kdtree/static/threads:<t>
// The bounded world is the points' bounding box with cell = r. The dense
// reference is the grid a user would write instead (dense_reference.h: a
// counting sort into the bounded world's cells, an AVX2 pair kernel), on
// the same thread backend, to read Hashgrid's figures against what a few
// hundred plain lines do on the same machine in the same run: "count" only
// counts the pairs, "write" writes them (two original indices per pair, one
// region per thread, where Hashgrid's pairs are one array). Order "random"
// feeds the points in identity order, "sorted" in last frame's sorted order
// (inputs permuted by the previous rebuild's sorted_to_original()), "static"
// (not in the default list) is sorted with nothing moved: the rebuild's
// presorted path. An iteration is one frame: every point moves by a small
// step (uniform in [-0.05 r, 0.05 r] per axis, a function of the point's
// identity and the frame number, clamped to the bounding box), untimed, then
// rebuild() and find_pairs() are timed (manual time: their sum). Each
// repetition builds its grid, runs frame 0 and --warmup frames untimed, then
// --frames timed ones. nanoflann builds its tree and queries every point of
// frame 0 once per repetition (its "rebuild" is the tree build, its "pairs"
// the radius searches).
//
// Checks (before the figures count): frame 0's pair set (count and an
// order-independent digest by point identity) must equal the reference, a
// single-threaded bounded Hashgrid grid's; every benchmark of a scene that
// reaches the same frame must find the same pairs there (the dense
// reference's count mode: the same number of pairs). A mismatch fails
// the benchmark and the program exits with status 1.
//
// Counters: pairs (last frame), rebuild_ms and pairs_ms (means per frame),
// rebuild_floor_share, pairs_floor_share, floor_bytes and floor_share (the
// memory floor, hashgrid_support/bench_harness.h), cand_per_ns (point pairs
// in the same or neighbouring cells, counted on frame 0, per ns of the pair
// phase), other_load; with --phases the grid's own phase times (keys_ms ..
// publish_ms; the dense reference: keys_ms, scan_ms, scatter_ms, gather_ms).
// The dense reference's count mode has no pair bytes in its pairs floor.
//
//   bench_pairs [--n N] [--threads 1,2] [--orders random,sorted,static]
//               [--frames F] [--warmup W] [--sigma S] [--phases] [--trace E]
//               [Google Benchmark flags: --benchmark_filter=REGEX,
//                --benchmark_repetitions=R (default 5),
//                --benchmark_out=FILE --benchmark_out_format=json|csv, ...]
//
// --trace E attaches a hashgrid::Trace of E events to every grid (every phase
// and chunk is recorded; the ring wraps): the cost of tracing.

#include "dense_reference.h"

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid/trace.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/bench_harness.h"
#include "hashgrid_support/gbench.h"
#include "hashgrid_support/nanoflann_cloud.h"
#include "hashgrid_support/random.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using hashgrid::Grid;
using hashgrid::GridConfig;
using hashgrid::Pair;
using hashgrid::PairResult;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::World;
using hashgrid::platform::now_ns;
using hashgrid::platform::TbbBackend;
using hashgrid_support::copy_equivalent_bytes;
using hashgrid_support::PairDigest;
using hashgrid_support::PhaseTime;
using hashgrid_support::SplitMix64;

constexpr double kPi = 3.14159265358979323846;
constexpr double kNeighboursP3 = 30.0;
constexpr double kNeighboursP2 = 8.0;
constexpr uint32_t kClusters = 100;
constexpr float kClusterLo = 0.15f;
constexpr float kClusterHi = 0.85f;
/// Per-axis step between frames, in units of r.
constexpr float kStep = 0.05f;

struct Options : hashgrid_support::FrameOptions {
    Options() : FrameOptions{1000000, {1, 2}, 4, 2} {}
    std::vector<std::string> orders{"random", "sorted"};
    float sigma = 0.04f; ///< C3's cluster sigma.
    bool phases = false; ///< Counters for the grid's own phase timings.
    uint32_t trace_events = 0;
};

Options g_options;
hashgrid::Trace* g_trace = nullptr; ///< --trace: the trace every grid records into, or null.

// ---------------------------------------------------------------------------
// Scenes.

/// Standard normal (Box-Muller, double inside; libm's log and cos, so only the
/// benchmark's own scenes use it).
float normal(SplitMix64& rng) {
    const double u1 = (static_cast<double>(rng.next_u64() >> 11) + 1.0) * 0x1.0p-53; // (0, 1]
    const double u2 = static_cast<double>(rng.next_u64() >> 11) * 0x1.0p-53;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2));
}

struct Scene {
    std::string name;
    uint32_t dimensions = 3;
    uint32_t n = 0;
    float r = 0.0f;
    double expected_neighbours = 0.0; ///< Mean neighbours within r (model), for sizing max_pairs.
    std::vector<float> base[3];       ///< Frame-0 positions, in identity (= random) order.
    float lo[3] = {0.0f, 0.0f, 0.0f}; ///< Bounding box of the frame-0 positions; points stay inside.
    float hi[3] = {0.0f, 0.0f, 0.0f};
    uint64_t max_pairs = 0;              ///< Grids' pair capacity; raised when a frame needs more.
    std::optional<PairDigest> reference; ///< Frame 0's pairs (single-threaded bounded grid).
    std::map<uint32_t, PairDigest> seen; ///< First pair set seen at each later frame.
    std::optional<double> stencils[2];   ///< Candidate pairs, bounded and unbounded lattice (stencil_candidates).
};

float radius(uint32_t dimensions, uint32_t n, double neighbours) {
    return dimensions == 2 ? static_cast<float>(std::sqrt(neighbours / (kPi * static_cast<double>(n))))
                           : static_cast<float>(std::cbrt(neighbours * 3.0 / (4.0 * kPi * static_cast<double>(n))));
}

Scene make_scene(const std::string& name, uint32_t n, float sigma) {
    Scene s;
    s.name = name;
    s.n = n;
    SplitMix64 rng(0xbe9c4000u + static_cast<uint64_t>(name[0]) * 256u + static_cast<uint64_t>(name[1]));
    s.dimensions = name == "P2" ? 2 : 3;
    s.expected_neighbours = name == "P2" ? kNeighboursP2 : kNeighboursP3;
    s.r = radius(s.dimensions, n, s.expected_neighbours);
    for (uint32_t a = 0; a < s.dimensions; ++a)
        s.base[a].resize(n);
    if (name == "C3") {
        float centre[kClusters][3];
        for (auto& c : centre) {
            for (float& v : c)
                v = kClusterLo + (kClusterHi - kClusterLo) * rng.unit();
        }
        std::vector<double> members(kClusters, 0.0);
        for (uint32_t i = 0; i < n; ++i) {
            const uint64_t cluster = rng.next_u64() % kClusters;
            members[cluster] += 1.0;
            for (uint32_t a = 0; a < 3; ++a)
                s.base[a][i] = centre[cluster][a] + sigma * normal(rng);
        }
        // Mean neighbours (for sizing max_pairs): two points of clusters c, c' are within r with
        // probability ~ ball * G(|mu_c - mu_c'|), G the Gaussian density of variance 2 sigma^2 per
        // axis (the clusters overlap: the centres are about 2 sigma apart).
        const double var2 = 2.0 * static_cast<double>(sigma) * static_cast<double>(sigma);
        const double ball = 4.0 / 3.0 * kPi * std::pow(static_cast<double>(s.r), 3.0);
        double sum = 0.0;
        for (uint32_t c = 0; c < kClusters; ++c) {
            for (uint32_t d = 0; d < kClusters; ++d) {
                double dist2 = 0.0;
                for (uint32_t a = 0; a < 3; ++a) {
                    const double diff = static_cast<double>(centre[c][a]) - static_cast<double>(centre[d][a]);
                    dist2 += diff * diff;
                }
                sum += members[c] * members[d] * std::exp(-dist2 / (2.0 * var2)) / std::pow(2.0 * kPi * var2, 1.5);
            }
        }
        s.expected_neighbours = ball * sum / static_cast<double>(n);
    } else {
        for (uint32_t a = 0; a < s.dimensions; ++a) {
            for (float& v : s.base[a])
                v = rng.unit();
        }
    }
    for (uint32_t a = 0; a < s.dimensions; ++a) {
        const auto [mn, mx] = std::minmax_element(s.base[a].begin(), s.base[a].end());
        s.lo[a] = *mn;
        s.hi[a] = *mx;
    }
    s.max_pairs = static_cast<uint64_t>(s.expected_neighbours * n / 2.0 * 1.5) + 4096;
    return s;
}

/// The scene, generated on first use (a filtered run builds only what it measures).
Scene& scene(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Scene>> scenes;
    std::unique_ptr<Scene>& s = scenes[name];
    if (s == nullptr) s = std::make_unique<Scene>(make_scene(name, g_options.n, g_options.sigma));
    return *s;
}

GridConfig grid_config(const Scene& s, World world) {
    GridConfig c;
    c.dimensions = s.dimensions;
    c.cell_size = s.r;
    c.interaction_distance = s.r;
    c.world = world;
    c.max_particles = s.n;
    c.max_cells = s.n;
    c.max_pairs = s.max_pairs;
    if (world == World::bounded) {
        for (uint32_t a = 0; a < 3; ++a) {
            c.origin[a] = a < s.dimensions ? s.lo[a] : 0.0f;
            // floor(extent / r) + 1 cells: ceil(extent / r), plus one when the extent is a
            // multiple of r, so the maximum point is inside whatever the rounding.
            const double extent = static_cast<double>(s.hi[a]) - static_cast<double>(s.lo[a]);
            c.cell_counts[a] =
                a < s.dimensions ? static_cast<uint32_t>(std::floor(extent / static_cast<double>(s.r))) + 1 : 1;
        }
    }
    return c;
}

/// Candidate pairs of frame 0: point pairs in the same cell or in neighbouring
/// cells (the 3^d stencil) of the lattice of edge r from `origin`, the pairs a
/// cell-list sweep must look at. Counted once per scene and world.
double stencil_candidates(Scene& s, const GridConfig& config) {
    std::optional<double>& cached = s.stencils[config.world == World::bounded ? 0 : 1];
    if (cached) return *cached;
    const float* origin = config.origin;
    constexpr int64_t kBias = int64_t{1} << 20;
    std::vector<uint64_t> keys(s.n);
    for (uint32_t i = 0; i < s.n; ++i) {
        uint64_t key = 0;
        for (uint32_t a = 0; a < s.dimensions; ++a) {
            const double t = (static_cast<double>(s.base[a][i]) - static_cast<double>(origin[a])) / s.r;
            key |= static_cast<uint64_t>(static_cast<int64_t>(std::floor(t)) + kBias) << (21 * a);
        }
        keys[i] = key;
    }
    std::sort(keys.begin(), keys.end());
    std::vector<std::pair<uint64_t, double>> cells;
    for (uint64_t key : keys) {
        if (cells.empty() || cells.back().first != key) cells.emplace_back(key, 0.0);
        cells.back().second += 1.0;
    }
    // The forward half of the stencil: offsets lexicographically after (0, 0, 0).
    std::vector<int64_t> offsets;
    const int dz_max = s.dimensions == 3 ? 1 : 0;
    for (int dz = -dz_max; dz <= dz_max; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx)
                if (dz > 0 || (dz == 0 && (dy > 0 || (dy == 0 && dx > 0))))
                    offsets.push_back(dx + dy * (int64_t{1} << 21) + dz * (int64_t{1} << 42));
    double total = 0.0;
    for (const auto& [key, count] : cells) {
        total += count * (count - 1.0) / 2.0;
        for (int64_t offset : offsets) {
            const uint64_t other = static_cast<uint64_t>(static_cast<int64_t>(key) + offset);
            const auto it = std::lower_bound(cells.begin(), cells.end(), std::make_pair(other, 0.0));
            if (it != cells.end() && it->first == other) total += count * it->second;
        }
    }
    cached = total;
    return total;
}

// Memory floors (bench_harness.h: bytes as memcpy size). Rebuild: read every
// point, write it in cell order with its index. Pairs: read the sorted
// points once, write every pair (8 bytes).
double rebuild_floor(const Scene& s) {
    const double n = s.n;
    return copy_equivalent_bytes(n * 4.0 * s.dimensions, n * (4.0 * s.dimensions + 4.0));
}
double pairs_floor(const Scene& s, uint64_t pairs) {
    return copy_equivalent_bytes(static_cast<double>(s.n) * 4.0 * s.dimensions, static_cast<double>(pairs) * 8.0);
}

// ---------------------------------------------------------------------------
// Points in the current input order, and their grid.

struct Points {
    uint32_t dimensions = 3;
    std::vector<float> pos[3];
    std::vector<uint32_t> id;
    std::vector<float> scratch;
    std::vector<uint32_t> scratch_id;

    explicit Points(const Scene& s) : dimensions(s.dimensions), id(s.n), scratch(s.n), scratch_id(s.n) {
        for (uint32_t a = 0; a < dimensions; ++a)
            pos[a] = s.base[a];
        for (uint32_t i = 0; i < s.n; ++i)
            id[i] = i;
    }

    /// Input order becomes last frame's sorted order: p_new[k] = p_old[order[k]].
    void permute(const uint32_t* order) {
        const size_t n = id.size();
        for (uint32_t a = 0; a < dimensions; ++a) {
            for (size_t k = 0; k < n; ++k)
                scratch[k] = pos[a][order[k]];
            pos[a].swap(scratch);
        }
        for (size_t k = 0; k < n; ++k)
            scratch_id[k] = id[order[k]];
        id.swap(scratch_id);
    }

    /// Moves every point by a step that depends on its identity and the frame only.
    void move(const Scene& s, uint32_t frame) {
        const float step = kStep * s.r;
        for (size_t k = 0; k < id.size(); ++k) {
            const uint64_t h = hashgrid_support::frame_hash(frame, id[k], 1);
            for (uint32_t a = 0; a < dimensions; ++a) {
                const float u = static_cast<float>((h >> (21 * a)) & 0x1fffff) * 0x1.0p-21f; // [0, 1)
                pos[a][k] = std::clamp(pos[a][k] + step * (2.0f * u - 1.0f), s.lo[a], s.hi[a]);
            }
        }
    }

    [[nodiscard]] hashgrid::ParticleSpans spans() const {
        return hashgrid::ParticleSpans{pos[0].data(), pos[1].data(), dimensions == 3 ? pos[2].data() : nullptr, nullptr,
                                       static_cast<uint32_t>(id.size())};
    }

    [[nodiscard]] PairDigest digest(const Pair* pairs, uint64_t count) const {
        PairDigest d;
        for (uint64_t p = 0; p < count; ++p)
            d.add(id[pairs[p].a], id[pairs[p].b]);
        return d;
    }
};

/// A scene's grid in one world, re-initialised with more pair capacity when a frame needs it.
struct PointGrid {
    std::unique_ptr<Grid> grid;
    GridConfig config;
    std::vector<Pair> out;
    PairResult result;
    std::string error;

    bool init(const GridConfig& c) {
        grid = std::make_unique<Grid>();
        const Status s = grid->init_allocate(c);
        if (!s.ok()) {
            error = std::string("init: ") + hashgrid::to_string(s.code) + " (" + s.message + ")";
            return false;
        }
        grid->set_trace(g_trace);
        config = c;
        out.resize(static_cast<size_t>(c.max_pairs));
        return true;
    }

    bool rebuild(const Points& points, const hashgrid::ThreadBackend& backend) {
        const Status st = grid->rebuild(points.spans(), backend);
        if (!st.ok()) error = std::string("rebuild: ") + hashgrid::to_string(st.code) + " (" + st.message + ")";
        return st.ok();
    }

    /// find_pairs(); when the pairs do not fit, raises the scene's capacity,
    /// regrows, rebuilds and runs again.
    bool pairs(Scene& s, const Points& points, const hashgrid::ThreadBackend& backend) {
        return hashgrid_support::find_pairs_growing(
            result, error, [&] { return grid->find_pairs(out.data(), out.size(), backend); },
            [&](uint64_t total) {
                s.max_pairs = std::max(s.max_pairs, total + total / 10 + 4096);
                GridConfig c = config;
                c.max_pairs = s.max_pairs;
                return init(c) && rebuild(points, backend);
            });
    }
};

/// Frame 0's pair set by a single-threaded bounded grid, computed on first use.
const PairDigest* reference(Scene& s, std::string& error) {
    if (!s.reference) {
        PointGrid g;
        const Points points(s);
        const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
        if (!g.init(grid_config(s, World::bounded)) || !g.rebuild(points, serial) || !g.pairs(s, points, serial)) {
            error = "reference grid: " + g.error;
            return nullptr;
        }
        s.reference = points.digest(g.out.data(), g.result.written);
    }
    return &*s.reference;
}

// ---------------------------------------------------------------------------
// The benchmarks.

constexpr size_t kPhaseCount = 7;
constexpr const char* kPhaseNames[kPhaseCount] = {"keys_ms",     "table_ms", "scan_ms",   "scatter_ms",
                                                  "finalize_ms", "sweep_ms", "publish_ms"};

void bench_hashgrid(benchmark::State& state, const std::string& name, Scene& s, World world, const std::string& order,
                    const TbbBackend& tbb) {
    const Options& o = g_options;
    const hashgrid::ThreadBackend backend = tbb.backend();
    std::string error;
    const PairDigest* want = reference(s, error);
    PointGrid g;
    Points points(s);
    if (want == nullptr || !g.init(grid_config(s, world)) || !g.rebuild(points, backend) ||
        !g.pairs(s, points, backend)) {
        state.SkipWithError((error + g.error).c_str());
        return;
    }
    if (const PairDigest got = points.digest(g.out.data(), g.result.written); got != *want) {
        hashgrid_support::check_failed(state, name, "frame 0: " + got.describe() + ", reference " + want->describe());
        return;
    }
    const bool sorted = order != "random";
    const bool moving = order != "static";
    PhaseTime rebuild, pairs;
    double phase_ns[kPhaseCount] = {};
    uint32_t current = 0;
    const uint32_t frame = hashgrid_support::run_frames(
        state, o.warmup, rebuild, pairs, g.error,
        [&](uint32_t f) {
            current = f;
            if (sorted) points.permute(g.grid->sorted_to_original());
            if (moving) points.move(s, f);
            return true;
        },
        [&](uint32_t) { return g.rebuild(points, backend); },
        [&] {
            if (!g.pairs(s, points, backend)) return false;
            if (current > o.warmup) {
                const hashgrid::RebuildTimings& r = g.grid->last_rebuild_timings();
                const hashgrid::PairTimings& p = g.grid->last_pair_timings();
                const uint64_t ns[kPhaseCount] = {r.keys, r.table, r.scan, r.scatter, r.finalize, p.sweep, p.publish};
                for (size_t i = 0; i < kPhaseCount; ++i)
                    phase_ns[i] += static_cast<double>(ns[i]);
            }
            return true;
        });
    if (frame == 0) return;
    // Every benchmark of the scene that reaches this frame sees the same points (static: frame 0's).
    const PairDigest last = points.digest(g.out.data(), g.result.written);
    const auto [seen, first] = s.seen.emplace(moving ? frame : 0, moving ? last : *want);
    if (!first && seen->second != last) {
        hashgrid_support::check_failed(state, name,
                                       "frame " + std::to_string(frame) + ": " + last.describe() + ", other runs " +
                                           seen->second.describe());
        return;
    }
    const unsigned threads = tbb.threads();
    state.counters["pairs"] = static_cast<double>(g.result.total);
    hashgrid_support::set_frame_counters(
        state, {{"rebuild", rebuild, rebuild_floor(s)}, {"pairs", pairs, pairs_floor(s, g.result.total)}}, threads);
    hashgrid_support::set_candidate_rate(state, stencil_candidates(s, g.config), pairs);
    if (o.phases) {
        for (size_t i = 0; i < kPhaseCount; ++i)
            state.counters[kPhaseNames[i]] = phase_ns[i] * 1e-6 / static_cast<double>(state.iterations());
    }
}

// The dense reference (dense_reference.h): the counting-sort grid a user
// would write instead, over the bounded grid's box, on the same backend.

dense_reference::Box dense_box(const Scene& s) {
    const GridConfig c = grid_config(s, World::bounded);
    dense_reference::Box b;
    b.dims = s.dimensions;
    for (uint32_t a = 0; a < 3; ++a) {
        b.origin[a] = c.origin[a];
        b.cells[a] = c.cell_counts[a];
    }
    b.r = c.interaction_distance;
    return b;
}

/// The written pairs of every thread's region, by point identity.
PairDigest region_digest(const Points& points, const dense_reference::DenseGrid& g) {
    PairDigest d;
    for (uint32_t t = 0; t < g.threads(); ++t) {
        const dense_reference::IndexPair* r = g.region(t);
        for (uint64_t k = 0; k < g.region_count(t); ++k)
            d.add(points.id[r[k].a], points.id[r[k].b]);
    }
    return d;
}

constexpr size_t kDensePhaseCount = 4;
constexpr const char* kDensePhaseNames[kDensePhaseCount] = {"keys_ms", "scan_ms", "scatter_ms", "gather_ms"};

/// `write`: every pair is written (the check compares the pair set);
/// otherwise only counted (the check compares the count, and the pair
/// phase's floor has no output bytes).
void bench_dense_reference(benchmark::State& state, const std::string& name, Scene& s, bool write,
                           const std::string& order, const TbbBackend& tbb) {
    const Options& o = g_options;
    const hashgrid::ThreadBackend backend = tbb.backend();
    std::string error;
    const PairDigest* want = reference(s, error);
    if (want == nullptr) {
        state.SkipWithError(error.c_str());
        return;
    }
    Points points(s);
    dense_reference::DenseGrid g(dense_box(s), s.n, tbb.threads(), write ? s.max_pairs : 0);
    uint64_t total = 0;
    const auto rebuild = [&] {
        const float* pos[3] = {points.pos[0].data(), points.pos[1].data(),
                               s.dimensions == 3 ? points.pos[2].data() : nullptr};
        g.rebuild(pos, s.n, backend);
        return true;
    };
    const auto find = [&] {
        for (;;) {
            total = write ? g.write_pairs(backend) : g.count_pairs(backend);
            if (!g.overflowed()) return true;
            uint64_t most = 0;
            for (uint32_t t = 0; t < g.threads(); ++t)
                most = std::max(most, g.found(t));
            g.grow_regions(most + most / 10 + 4096);
        }
    };
    // The frame's pair set as far as this mode knows it: the digest, or the count alone.
    const auto matches = [&](const PairDigest& expected, PairDigest& got) {
        got = write ? region_digest(points, g) : PairDigest{total, 0};
        return write ? got == expected : got.count == expected.count;
    };
    const auto describe = [&](const PairDigest& got) {
        return write ? got.describe() : std::to_string(got.count) + " pairs (counted)";
    };
    rebuild();
    find();
    if (PairDigest got; !matches(*want, got)) {
        hashgrid_support::check_failed(state, name, "frame 0: " + describe(got) + ", reference " + want->describe());
        return;
    }
    const bool sorted = order != "random";
    const bool moving = order != "static";
    PhaseTime rebuild_time, pairs_time;
    double phase_ns[kDensePhaseCount] = {};
    uint32_t current = 0;
    const uint32_t frame = hashgrid_support::run_frames(
        state, o.warmup, rebuild_time, pairs_time, error,
        [&](uint32_t f) {
            current = f;
            if (sorted) points.permute(g.sorted_to_original());
            if (moving) points.move(s, f);
            return true;
        },
        [&](uint32_t) { return rebuild(); },
        [&] {
            find();
            if (current > o.warmup) {
                const dense_reference::RebuildTimes& r = g.last_rebuild_times();
                const uint64_t ns[kDensePhaseCount] = {r.keys, r.scan, r.scatter, r.gather};
                for (size_t i = 0; i < kDensePhaseCount; ++i)
                    phase_ns[i] += static_cast<double>(ns[i]);
            }
            return true;
        });
    if (frame == 0) return;
    // Written pairs join the scene's per-frame sets like Hashgrid's; a count is only compared.
    const uint32_t key = moving ? frame : 0;
    if (const auto seen = s.seen.find(key); seen != s.seen.end() || !moving) {
        const PairDigest& expected = seen != s.seen.end() ? seen->second : *want;
        if (PairDigest got; !matches(expected, got)) {
            hashgrid_support::check_failed(state, name,
                                           "frame " + std::to_string(frame) + ": " + describe(got) + ", other runs " +
                                               expected.describe());
            return;
        }
    } else if (write) {
        s.seen.emplace(key, region_digest(points, g));
    }
    const unsigned threads = tbb.threads();
    state.counters["pairs"] = static_cast<double>(total);
    hashgrid_support::set_frame_counters(
        state, {{"rebuild", rebuild_time, rebuild_floor(s)}, {"pairs", pairs_time, pairs_floor(s, write ? total : 0)}},
        threads);
    hashgrid_support::set_candidate_rate(state, stencil_candidates(s, grid_config(s, World::bounded)), pairs_time);
    if (o.phases) {
        for (size_t i = 0; i < kDensePhaseCount; ++i)
            state.counters[kDensePhaseNames[i]] = phase_ns[i] * 1e-6 / static_cast<double>(state.iterations());
    }
}

// nanoflann (KD-tree, radius search per point).

using Cloud = hashgrid_support::NanoflannCloud<3>;
using KdTree = hashgrid_support::NanoflannKdTree<3>;

/// Builds the tree (nanoflann 1.4 builds on one thread), then queries every
/// point with radius r (nanoflann takes the squared radius for L2 and keeps
/// d2 < r*r, with d2 summed in the same order as Hashgrid's), queries split
/// into contiguous ranges over `threads` std::threads; keeps neighbours j > i.
void bench_nanoflann(benchmark::State& state, const std::string& name, Scene& s, uint32_t threads) {
    std::string error;
    const PairDigest* want = reference(s, error);
    if (want == nullptr) {
        state.SkipWithError(error.c_str());
        return;
    }
    const Cloud cloud{{s.base[0].data(), s.base[1].data(), s.base[2].data()}, s.n};
    const float r2 = s.r * s.r;
    PhaseTime build, query;
    PairDigest found;
    {
        const hashgrid_support::OtherLoadCounter load(state);
        for (auto _ : state) {
            uint64_t start = now_ns();
            KdTree tree(3, cloud,
                        nanoflann::KDTreeSingleIndexAdaptorParams(
                            10, nanoflann::KDTreeSingleIndexAdaptorFlags::SkipInitialBuildIndex));
            tree.buildIndex();
            const uint64_t build_ns = now_ns() - start;
            std::vector<PairDigest> part(threads);
            const auto work = [&](uint32_t t) {
                const auto begin = static_cast<uint32_t>(static_cast<uint64_t>(s.n) * t / threads);
                const auto end = static_cast<uint32_t>(static_cast<uint64_t>(s.n) * (t + 1) / threads);
                std::vector<std::pair<uint32_t, float>> matches;
                matches.reserve(256);
                const nanoflann::SearchParams params(32, 0.0f, false);
                for (uint32_t i = begin; i < end; ++i) {
                    const float q[3] = {s.base[0][i], s.base[1][i], s.base[2][i]};
                    tree.radiusSearch(q, r2, matches, params);
                    for (const auto& m : matches)
                        if (m.first > i) part[t].add(i, m.first);
                }
            };
            start = now_ns();
            std::vector<std::thread> pool;
            for (uint32_t t = 1; t < threads; ++t)
                pool.emplace_back(work, t);
            work(0);
            for (std::thread& th : pool)
                th.join();
            const uint64_t query_ns = now_ns() - start;
            state.SetIterationTime(static_cast<double>(build_ns + query_ns) * 1e-9);
            build.add(build_ns);
            query.add(query_ns);
            found = {};
            for (const PairDigest& d : part) {
                found.count += d.count;
                found.sum += d.sum;
            }
        }
    }
    if (found != *want) {
        hashgrid_support::check_failed(state, name, found.describe() + ", Hashgrid's frame 0 " + want->describe());
        return;
    }
    state.counters["pairs"] = static_cast<double>(found.count);
    hashgrid_support::set_frame_counters(
        state, {{"rebuild", build, rebuild_floor(s)}, {"pairs", query, pairs_floor(s, found.count)}}, threads);
}

constexpr const char* kUsage =
    "[--n N>=1000] [--threads 1,2] [--orders random,sorted,static] [--frames F] [--warmup W] [--sigma S] "
    "[--phases] [--trace E]";

bool parse_options(hashgrid_support::BenchArgs& args, Options& o) {
    using namespace hashgrid_support;
    std::string v;
    bool ok = take_frame_options(args, o);
    if (args.take("--orders", v)) {
        o.orders = split_list(v.c_str());
        ok = ok && all_in(o.orders, {"random", "sorted", "static"});
    }
    if (args.take("--sigma", v)) ok = ok && parse_float(v.c_str(), o.sigma) && o.sigma > 0.0f && o.sigma < 1.0f;
    if (args.take("--trace", v)) ok = ok && parse_u32(v.c_str(), o.trace_events) && o.trace_events >= 1;
    o.phases = args.take_flag("--phases");
    return ok;
}

} // namespace

int main(int argc, char** argv) {
    hashgrid_support::BenchArgs args(argc, argv);
    Options& o = g_options;
    if (!args.initialize(kUsage, parse_options(args, o))) return 2;
    hashgrid::Trace trace;
    if (o.trace_events != 0) {
        if (!trace.init_allocate(o.trace_events).ok()) return 2;
        g_trace = &trace;
        benchmark::AddCustomContext("trace_events", std::to_string(o.trace_events));
    }
    benchmark::AddCustomContext("points", std::to_string(o.n));
    benchmark::AddCustomContext("frames", std::to_string(o.warmup) + " untimed after frame 0, then " +
                                              std::to_string(o.frames) + " timed per repetition");

    std::map<uint32_t, std::unique_ptr<TbbBackend>> backends;
    for (uint32_t t : o.threads)
        backends[t] = std::make_unique<TbbBackend>(t);
    for (const char* scene_name : {"P3", "P2", "C3"}) {
        for (const World world : {World::bounded, World::unbounded}) {
            for (const std::string& order : o.orders) {
                for (uint32_t t : o.threads) {
                    const std::string name = std::string(scene_name) + "/hashgrid/" +
                                             (world == World::bounded ? "bounded/" : "unbounded/") + order +
                                             "/threads:" + std::to_string(t);
                    const TbbBackend* tbb = backends[t].get();
                    hashgrid_support::register_frames(name, o.frames, [=](benchmark::State& state) {
                        bench_hashgrid(state, name, scene(scene_name), world, order, *tbb);
                    });
                }
            }
        }
        for (const bool write : {false, true}) {
            for (const std::string& order : o.orders) {
                for (uint32_t t : o.threads) {
                    const std::string name = std::string(scene_name) + "/dense_reference/" +
                                             (write ? "write/" : "count/") + order + "/threads:" + std::to_string(t);
                    const TbbBackend* tbb = backends[t].get();
                    hashgrid_support::register_frames(name, o.frames, [=](benchmark::State& state) {
                        bench_dense_reference(state, name, scene(scene_name), write, order, *tbb);
                    });
                }
            }
        }
    }
    for (uint32_t t : o.threads) {
        const std::string name = "P3/nanoflann/kdtree/static/threads:" + std::to_string(t);
        hashgrid_support::register_frames(
            name, 1, [=](benchmark::State& state) { bench_nanoflann(state, name, scene("P3"), t); });
    }
    return hashgrid_support::run_benchmarks();
}

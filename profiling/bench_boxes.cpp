// SPDX-License-Identifier: MIT
// bench_boxes: the box broad phase (all overlapping pairs) and batched box
// queries, side by side with Bullet, FCL and Box2D, on Google Benchmark.
//
// Scenes (n boxes, default 100k; sizes keep the overlap count for any n):
//   B3  3D boxes, every edge lognormal (median 1, sigma 0.7: a few edges reach
//       ~20), centres uniform in a cube sized so a box overlaps ~6 others
//   B2  the same in 2D (square sized for ~6 overlaps per box)
//   G3  a 3D game level (200 x 200 x 10 m): 20,000 boxes of 0.5-1.5 m and 500
//       buildings of 8-12 m (large objects at 2 m cells); U3 the same count of
//       small boxes only (what G3 should cost)
//   Q   2D, 100k clients in [-1000, 1000]^2, edges uniform in [5, 15]; 1000
//       queries (half boxes, half circles, half-extent or radius uniform in
//       [5, 20] times --query-scale, centres uniform), then every object moves
//       a little and the index is updated
// Scene generation uses the bench's own integer generator and a deterministic
// lognormal (polar method with its own log and exp from +, *, / only), and
// every coordinate and step is a multiple of a power of two small enough that
// moving a box is exact in float: every system sees bit-identical boxes.
//
// Benchmarks, one per (scene, implementation, setting, threads):
//   B3|B2/hashgrid/<unbounded|bounded>/cell:<c>/large:<l>/threads:<t>
//   G3|U3/hashgrid/<unbounded|bounded>/cell:2/large:64/threads:<t>
//   G3|U3/dense_reference/bounded/cell:2/threads:1   a hand-written dense grid
//       with the large objects kept apart (box_dense_reference.h): the
//       yardstick for what mixed sizes cost
//   B3|B2/sap/sort-x/threads:1          the bench's own sweep and prune (the oracle)
//   B3/bullet/<default|deferred>/threads:1, B3/fcl/<tree|hash-cell:<c>>/threads:1,
//   B2/box2d/tree/threads:1             peers (single-threaded libraries)
//   Q/hashgrid/<unbounded|bounded>/cell:<c>/threads:<t>, Q/box2d/tree/threads:1
//   Q/hashgrid-pairs-with/<unbounded|bounded>/cell:<c>/threads:<t>  Q's queries as
//       boxes (circles: their bounding boxes) through one find_pairs_with call
// Frame 0 is the initial build (peers insert every box; counter build_ms,
// not timed); in every later frame each box moves by a step that depends on
// its identity and the frame only (uniform in [-step, step] per axis around
// its frame-0 place, step = 0.05 median edges for B3/B2, 0.5 for Q); with
// --moved-percent P only about P% of the boxes move in a frame, the others
// keep their last box bit for bit (names get /moved:P%). After
// frame 0 and the warm-up frames, an iteration is one frame, its phases timed
// by the program (manual time: their sum): "update" (Hashgrid: rebuild; peers:
// moving every proxy) and "pairs" (find_pairs; peers: collecting the pairs
// and filtering them by exact overlap), for Q "reindex" (rebuild +
// prepare_box_queries; Box2D: MoveProxy) and "queries" (the batch).
//
// Checks: the pair sets of frame 0 and of the last frame (its pair phase run
// once more, untimed) must equal the oracle's exactly (sorted (a, b) lists);
// Hashgrid's output order must be the same for every thread count; Q's query
// results must equal brute force on a sample of queries and the first
// system's on every query. A mismatch fails the benchmark and the program
// exits with status 1.
//
// Peers: Bullet btDbvtBroadphase (createProxy, then per frame setAabb for
// every proxy + calculateOverlappingPairs; "deferred" sets m_deferedcollide;
// its persistent pair cache is built on fattened leaves, so its candidates are
// filtered by exact overlap; counter still_ms: the pair phase of a frame
// where nothing moved). FCL DynamicAABBTreeCollisionManager and
// SpatialHashingCollisionManager (CollisionObjects with Box geometry whose
// AABB equals the input box bit for bit, per frame setTranslation +
// computeAABB + update(), collide() recording pairs that overlap exactly;
// the hash table gets one bucket per cell of the scene). Box2D b2DynamicTree
// (CreateProxy / MoveProxy with fat AABBs, one Query per proxy; Q scaled by
// 1/16 so that Box2D's fixed 0.1 margin fits objects of 0.3-0.9 m).
//
// Counters: build_ms, <phase>_ms, <phase>_floor_share, floor_bytes,
// floor_share, pairs (or results), cand_per_pair and cand_per_ns where the
// implementation reports its candidates, other_load.
//
//   bench_boxes [--n N] [--threads 1,2] [--frames F] [--warmup W]
//               [--peer-frames F] [--cells 2,3] [--q-cells 16,32] [--large 64]
//               [--fcl-hash-cell C] [--queries Q] [--query-scale S] [--sigma S]
//               [--overlaps K] [--moved-percent P] [--phases] [--kernel scalar|sse2|avx2|neon]
//               [Google Benchmark flags: --benchmark_filter=REGEX, ...]

#include "box_dense_reference.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid/trace.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/bench_harness.h"
#include "hashgrid_support/gbench.h"
#include "hashgrid_support/random.h"

#include <benchmark/benchmark.h>

#if HASHGRID_BENCH_BULLET
#include <BulletCollision/BroadphaseCollision/btBroadphaseProxy.h>
#include <BulletCollision/BroadphaseCollision/btDbvtBroadphase.h>
#include <BulletCollision/BroadphaseCollision/btOverlappingPairCache.h>
#endif
#if HASHGRID_BENCH_FCL
#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/broadphase/broadphase_spatialhash.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/narrowphase/collision_object.h>
#endif
#if HASHGRID_BENCH_BOX2D
#include <box2d/b2_dynamic_tree.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace {

using hashgrid::Pair;
using hashgrid::PairResult;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::World;
using hashgrid::platform::now_ns;
using hashgrid::platform::TbbBackend;
using hashgrid_support::copy_equivalent_bytes;
using hashgrid_support::pair_key;
using hashgrid_support::PairSet;
using hashgrid_support::PhaseTime;
using hashgrid_support::SplitMix64;

/// frames and warmup: Hashgrid's (and Q's); peers on B3/B2 run peer_frames after one warm-up frame.
struct Options : hashgrid_support::FrameOptions {
    Options() : FrameOptions{100000, {1, 2}, 5, 2} {}
    uint32_t peer_frames = 3;                ///< Peers (B3/B2) are slow: fewer frames, one warm-up.
    std::vector<double> cells{2.0, 3.0};     ///< B3/B2 cell sizes (median edge = 1; 1 is ~4x slower).
    std::vector<double> q_cells{16.0, 32.0}; ///< Q cell sizes.
    std::vector<uint32_t> large{64};         ///< BoxGridConfig::large_object_cells values (B3/B2).
    double fcl_hash_cell = 2.0;
    uint32_t queries = 1000;
    /// Q's query half extents and radii times this: larger queries, more
    /// results each (the batches' buffers grow to 1.25x the last total).
    double query_scale = 1.0;
    double sigma = 0.7;
    double overlaps = 6.0; ///< Model mean overlaps per box (B3/B2), sets the world size.
    /// Share of the boxes that move in a frame (the others keep last frame's
    /// box bit for bit): 100 is every box every frame.
    uint32_t moved_percent = 100;
    /// Counters for the box grid's own phases (B3/B2/G3/U3), read from a trace.
    bool phases = false;
    /// Instruction set of Hashgrid's kernels (hashgrid::set_pair_kernel).
    hashgrid::PairKernel kernel = hashgrid::PairKernel::automatic;
};

Options g_options;
/// --kernel names and the context line's, indexed by hashgrid::PairKernel's
/// value (the enum's values keep their numbers).
constexpr const char* kKernelNames[] = {"automatic", "scalar", "sse2", "avx2", "neon"};
std::string g_error; ///< What the last failed step said (for SkipWithError).

// ---------------------------------------------------------------------------
// Deterministic lognormal (no libm transcendental function: the same scene
// bits with every standard library).

constexpr double kLn2 = 0.693147180559945309417;
constexpr double kSqrtHalf = 0.707106781186547524401;

/// ln(x), x > 0 finite: m = x / 2^e in [sqrt(1/2), sqrt(2)), ln m by the
/// atanh series (t = (m - 1) / (m + 1), |t| < 0.172, 12 terms: < 1e-17).
double det_log(double x) {
    int e = 0;
    double m = std::frexp(x, &e);
    if (m < kSqrtHalf) {
        m *= 2.0;
        --e;
    }
    const double t = (m - 1.0) / (m + 1.0);
    const double t2 = t * t;
    double sum = 0.0;
    for (int k = 23; k >= 1; k -= 2)
        sum = sum * t2 + 1.0 / static_cast<double>(k);
    return 2.0 * t * sum + static_cast<double>(e) * kLn2;
}

/// exp(x), |x| < 700: x = k ln2 + r with |r| <= ln2 / 2, e^r by Taylor to r^16.
double det_exp(double x) {
    const double k = std::floor(x / kLn2 + 0.5);
    const double r = x - k * kLn2;
    double sum = 1.0;
    for (int i = 16; i >= 1; --i)
        sum = 1.0 + sum * r / static_cast<double>(i);
    return std::ldexp(sum, static_cast<int>(k));
}

/// Standard normal, Marsaglia's polar method.
double det_normal(SplitMix64& rng) {
    for (;;) {
        const double u = 2.0 * rng.unit_double() - 1.0;
        const double v = 2.0 * rng.unit_double() - 1.0;
        const double s = u * u + v * v;
        if (s >= 1.0 || s == 0.0) continue;
        return u * std::sqrt(-2.0 * det_log(s) / s);
    }
}

/// Nearest multiple of q (a power of two): exact.
double quantize(double x, double q) { return std::floor(x / q + 0.5) * q; }

/// Largest coordinate magnitude -> quantum: a float holds every multiple of
/// 2^(k-24) below 2^k, so sums of such values below 2^k are exact.
double quantum_for(double bound) {
    int k = 0;
    std::frexp(bound, &k); // bound < 2^k
    return std::ldexp(1.0, k - 24);
}

/// FNV-1a over the pairs in output order (values, not bytes: the same on every platform).
uint64_t order_hash(const Pair* pairs, uint64_t count) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t p = 0; p < count; ++p) {
        for (uint32_t v : {pairs[p].a, pairs[p].b}) {
            for (int byte = 0; byte < 4; ++byte) {
                h ^= (v >> (8 * byte)) & 0xffu;
                h *= 0x100000001b3ull;
            }
        }
    }
    return h;
}

// ---------------------------------------------------------------------------
// Scenes and frames.

struct Boxes {
    uint32_t dimensions = 3;
    uint32_t n = 0;
    std::vector<float> lo[3];
    std::vector<float> hi[3];

    [[nodiscard]] bool overlap(uint32_t i, uint32_t j) const {
        for (uint32_t a = 0; a < dimensions; ++a) {
            if (lo[a][i] > hi[a][j] || lo[a][j] > hi[a][i]) return false;
        }
        return true;
    }

    [[nodiscard]] hashgrid::BoxSpans spans() const {
        hashgrid::BoxSpans s;
        s.min_x = lo[0].data();
        s.min_y = lo[1].data();
        s.min_z = dimensions == 3 ? lo[2].data() : nullptr;
        s.max_x = hi[0].data();
        s.max_y = hi[1].data();
        s.max_z = dimensions == 3 ? hi[2].data() : nullptr;
        s.count = n;
        return s;
    }
};

struct Scene {
    std::string name;
    Boxes base;
    double quantum = 0.0;                   ///< Every coordinate and step is a multiple of it (exact float sums).
    double step = 0.0;                      ///< Per-axis move amplitude around the frame-0 place.
    float world_lo[3] = {0.0f, 0.0f, 0.0f}; ///< Contains every box of every frame.
    float world_hi[3] = {0.0f, 0.0f, 0.0f};
    double side = 0.0; ///< Edge of the cube/square the centres are drawn from.
};

Scene make_box_scene(const std::string& name, uint32_t n, double sigma, double overlaps) {
    Scene s;
    s.name = name;
    const uint32_t dims = name == "B2" ? 2 : 3;
    s.base.dimensions = dims;
    s.base.n = n;
    // Two boxes overlap on an axis with probability (e_a + e_b) / side, mean 2 E[e] / side with
    // E[e] = exp(sigma^2 / 2); axes are independent, so mean overlaps = n (2 E[e] / side)^dims.
    const double mean_edge = det_exp(0.5 * sigma * sigma);
    s.side = 2.0 * mean_edge * std::pow(static_cast<double>(n) / overlaps, 1.0 / dims);
    const double bound = s.side + 64.0; // centres in [0, side], half edges < 32 (e < 64 needs a 6-sigma draw)
    s.quantum = quantum_for(bound);
    s.step = quantize(0.05, s.quantum);
    SplitMix64 rng(0xb0c5000u + dims);
    double lo_all[3] = {1e300, 1e300, 1e300};
    double hi_all[3] = {-1e300, -1e300, -1e300};
    for (uint32_t a = 0; a < dims; ++a) {
        s.base.lo[a].resize(n);
        s.base.hi[a].resize(n);
    }
    for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t a = 0; a < dims; ++a) {
            const double edge = std::min(quantize(det_exp(sigma * det_normal(rng)), s.quantum), 63.0);
            const double centre = s.side * rng.unit_double();
            const double lo = quantize(centre - 0.5 * edge, s.quantum);
            const double hi = lo + std::max(edge, s.quantum);
            s.base.lo[a][i] = static_cast<float>(lo);
            s.base.hi[a][i] = static_cast<float>(hi);
            lo_all[a] = std::min(lo_all[a], lo);
            hi_all[a] = std::max(hi_all[a], hi);
        }
    }
    for (uint32_t a = 0; a < dims; ++a) {
        s.world_lo[a] = static_cast<float>(lo_all[a] - s.step);
        s.world_hi[a] = static_cast<float>(hi_all[a] + s.step);
    }
    return s;
}

/// G3 and U3: a game level of 200 x 200 x 10 m with 20,500 boxes. U3: every
/// box small (edges uniform in [0.5, 1.5] m); G3: the same with the last 500
/// replaced by buildings (edges uniform in [8, 12] m), which cover 125-343
/// cells of 2 m, so the default large_object_cells (64) makes them large.
Scene make_game_scene(const std::string& name) {
    constexpr uint32_t kObjects = 20500;
    constexpr uint32_t kBuildings = 500;
    const double extent[3] = {200.0, 200.0, 10.0};
    Scene s;
    s.name = name;
    s.base.dimensions = 3;
    s.base.n = kObjects;
    s.side = extent[0];
    s.quantum = quantum_for(extent[0] + 64.0);
    s.step = quantize(0.05, s.quantum);
    SplitMix64 rng(name == "G3" ? 0x6a3e5u : 0x0a3e5u);
    for (uint32_t a = 0; a < 3; ++a) {
        s.base.lo[a].resize(kObjects);
        s.base.hi[a].resize(kObjects);
        s.world_lo[a] = static_cast<float>(-16.0);
        s.world_hi[a] = static_cast<float>(extent[a] + 16.0);
    }
    for (uint32_t i = 0; i < kObjects; ++i) {
        const bool building = name == "G3" && i >= kObjects - kBuildings;
        for (uint32_t a = 0; a < 3; ++a) {
            const double edge = quantize(building ? 8.0 + 4.0 * rng.unit_double() : 0.5 + rng.unit_double(), s.quantum);
            const double lo = quantize(extent[a] * rng.unit_double() - 0.5 * edge, s.quantum);
            s.base.lo[a][i] = static_cast<float>(lo);
            s.base.hi[a][i] = static_cast<float>(lo + edge);
        }
    }
    return s;
}

constexpr double kQHalfWorld = 1000.0;
constexpr double kQEdgeLo = 5.0;
constexpr double kQEdgeHi = 15.0;
constexpr double kQQueryLo = 5.0;
constexpr double kQQueryHi = 20.0;
constexpr double kQStep = 0.5;
/// Box2D sees Q scaled by 1/16 (objects 0.3-0.9 m, steps 3 cm): see Box2dTree::scale.
constexpr float kQBox2dScale = 0.0625f;

Scene make_query_scene(uint32_t n) {
    Scene s;
    s.name = "Q";
    s.base.dimensions = 2;
    s.base.n = n;
    s.side = 2.0 * kQHalfWorld;
    s.quantum = quantum_for(kQHalfWorld + kQEdgeHi + 2.0 * kQStep);
    s.step = quantize(kQStep, s.quantum);
    SplitMix64 rng(0x9e5e3u);
    for (uint32_t a = 0; a < 2; ++a) {
        s.base.lo[a].resize(n);
        s.base.hi[a].resize(n);
    }
    for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t a = 0; a < 2; ++a) {
            const double edge = quantize(kQEdgeLo + (kQEdgeHi - kQEdgeLo) * rng.unit_double(), s.quantum);
            const double centre = -kQHalfWorld + s.side * rng.unit_double();
            const double lo = quantize(centre - 0.5 * edge, s.quantum);
            s.base.lo[a][i] = static_cast<float>(lo);
            s.base.hi[a][i] = static_cast<float>(lo + edge);
        }
    }
    for (uint32_t a = 0; a < 2; ++a) {
        s.world_lo[a] = static_cast<float>(-kQHalfWorld - kQEdgeHi - 2.0 * s.step);
        s.world_hi[a] = static_cast<float>(kQHalfWorld + kQEdgeHi + 2.0 * s.step);
    }
    return s;
}

/// The boxes of a frame: frame 0 is the base; later frames move each box by a
/// step that depends on (identity, frame) only.
void frame_boxes(const Scene& s, uint32_t frame, Boxes& out) {
    out.dimensions = s.base.dimensions;
    out.n = s.base.n;
    for (uint32_t a = 0; a < out.dimensions; ++a) {
        out.lo[a].resize(out.n);
        out.hi[a].resize(out.n);
    }
    const uint32_t moved = g_options.moved_percent;
    for (uint32_t i = 0; i < out.n; ++i) {
        // The last frame <= `frame` in which box i moved (--moved-percent).
        uint32_t last = frame;
        while (moved < 100 && last > 0 && hashgrid_support::frame_hash(last, i, 11) % 100 >= moved)
            --last;
        const uint64_t h = last == 0 ? 0 : hashgrid_support::frame_hash(last, i, 7);
        for (uint32_t a = 0; a < out.dimensions; ++a) {
            const double u = static_cast<double>((h >> (21 * a)) & 0x1fffff) * 0x1.0p-21; // [0, 1)
            const double d = last == 0 ? 0.0 : quantize((2.0 * u - 1.0) * s.step, s.quantum);
            out.lo[a][i] = static_cast<float>(static_cast<double>(s.base.lo[a][i]) + d);
            out.hi[a][i] = static_cast<float>(static_cast<double>(s.base.hi[a][i]) + d);
        }
    }
}

/// run_frames' untimed step: `boxes` become frame f's.
auto frames_of(const Scene& s, Boxes& boxes) {
    return [&s, &boxes](uint32_t f) {
        frame_boxes(s, f, boxes);
        return true;
    };
}

/// Sweep and prune on x (sort by (min x, index), scan forward while the
/// next min x <= this max x): the oracle, and a reference timing.
PairSet sweep_and_prune(const Boxes& b) {
    std::vector<uint32_t> order(b.n);
    std::iota(order.begin(), order.end(), 0u);
    const float* lo0 = b.lo[0].data();
    std::sort(order.begin(), order.end(),
              [lo0](uint32_t i, uint32_t j) { return lo0[i] < lo0[j] || (lo0[i] == lo0[j] && i < j); });
    // Boxes copied in sweep order: the scan reads memory sequentially.
    std::vector<float> lo[3], hi[3];
    for (uint32_t a = 0; a < b.dimensions; ++a) {
        lo[a].resize(b.n);
        hi[a].resize(b.n);
        for (uint32_t p = 0; p < b.n; ++p) {
            lo[a][p] = b.lo[a][order[p]];
            hi[a][p] = b.hi[a][order[p]];
        }
    }
    PairSet out;
    out.reserve(static_cast<size_t>(b.n) * 8);
    const bool three = b.dimensions == 3;
    for (uint32_t p = 0; p < b.n; ++p) {
        const float end = hi[0][p];
        const float lo1 = lo[1][p], hi1 = hi[1][p];
        const float lo2 = three ? lo[2][p] : 0.0f, hi2 = three ? hi[2][p] : 0.0f;
        for (uint32_t q = p + 1; q < b.n && lo[0][q] <= end; ++q) {
            bool hit = lo1 <= hi[1][q] && lo[1][q] <= hi1;
            if (three) hit = hit && lo2 <= hi[2][q] && lo[2][q] <= hi2;
            if (hit) out.push_back(pair_key(order[p], order[q]));
        }
    }
    return out;
}

/// A pair scene (B3, B2) with its oracle pair sets per frame, both made on first use.
struct PairScene {
    Scene scene;
    std::map<uint32_t, PairSet> oracle;
    std::map<std::string, uint64_t> orders; ///< Hashgrid output order per setting (any thread count).

    const PairSet& pairs(uint32_t frame) {
        auto it = oracle.find(frame);
        if (it == oracle.end()) {
            Boxes b;
            frame_boxes(scene, frame, b);
            PairSet set = sweep_and_prune(b);
            std::sort(set.begin(), set.end());
            it = oracle.emplace(frame, std::move(set)).first;
        }
        return it->second;
    }
};

PairScene& pair_scene(const std::string& name) {
    static std::map<std::string, std::unique_ptr<PairScene>> scenes;
    std::unique_ptr<PairScene>& s = scenes[name];
    if (s == nullptr)
        s = std::make_unique<PairScene>(PairScene{
            name == "G3" || name == "U3" ? make_game_scene(name)
                                         : make_box_scene(name, g_options.n, g_options.sigma, g_options.overlaps),
            {},
            {}});
    return *s;
}

// Memory floors (bench_harness.h: bytes as memcpy size). Update: read every
// box, write at least one 4-byte entry per box. Pairs: read every box once,
// write every pair (8 bytes).
double update_floor(const Boxes& b) { return copy_equivalent_bytes(8.0 * b.dimensions * b.n, 4.0 * b.n); }
double pairs_floor(const Boxes& b, uint64_t pairs) {
    return copy_equivalent_bytes(8.0 * b.dimensions * b.n, 8.0 * static_cast<double>(pairs));
}

/// The frames of one implementation on a pair scene. `update(frame, boxes)`
/// builds (frame 0) or updates the structure; `pairs(boxes, set, candidates)`
/// runs the pair phase, filling the unsorted `set` when it is not null.
/// Frame 0 and the last frame (its pair phase run again, untimed) are checked
/// against the oracle. Returns false when the benchmark failed.
struct FrameSetup {
    uint32_t warmup = 1;      ///< Untimed frames after frame 0.
    unsigned threads = 1;     ///< For the floor (copy bandwidth on as many threads).
    bool update_phase = true; ///< False: everything is the pair phase (no "update" counters).
    bool still = false;       ///< Counter still_ms: the pair phase again on the unchanged last frame.
};

template <typename Update, typename Pairs>
bool pair_frames(benchmark::State& state, const std::string& name, PairScene& ps, const FrameSetup& setup,
                 Update&& update, Pairs&& pairs) {
    Boxes boxes;
    PairSet set;
    uint64_t candidates = 0;
    const auto check = [&](uint32_t frame) {
        std::sort(set.begin(), set.end());
        const std::string difference = hashgrid_support::pair_set_difference(set, ps.pairs(frame));
        if (difference.empty()) return true;
        hashgrid_support::check_failed(state, name, "frame " + std::to_string(frame) + ": " + difference);
        return false;
    };
    frame_boxes(ps.scene, 0, boxes);
    const uint64_t start = now_ns();
    if (!update(0u, boxes) || !pairs(boxes, &set, candidates)) {
        state.SkipWithError(g_error.c_str());
        return false;
    }
    const double build_ms = static_cast<double>(now_ns() - start) * 1e-6;
    if (!check(0)) return false;
    PhaseTime update_time, pairs_time;
    const uint32_t frame = hashgrid_support::run_frames(
        state, setup.warmup, update_time, pairs_time, g_error, frames_of(ps.scene, boxes),
        [&](uint32_t f) { return update(f, boxes); }, [&] { return pairs(boxes, nullptr, candidates); });
    if (frame == 0) return false;
    set.clear();
    const uint64_t still_start = now_ns();
    if (!pairs(boxes, &set, candidates)) {
        state.SkipWithError(g_error.c_str());
        return false;
    }
    if (setup.still) state.counters["still_ms"] = static_cast<double>(now_ns() - still_start) * 1e-6;
    const uint64_t found = set.size();
    if (!check(frame)) return false;
    state.counters["build_ms"] = build_ms;
    state.counters["pairs"] = static_cast<double>(found);
    if (setup.update_phase) {
        hashgrid_support::set_frame_counters(
            state, {{"update", update_time, update_floor(boxes)}, {"pairs", pairs_time, pairs_floor(boxes, found)}},
            setup.threads);
    } else {
        hashgrid_support::set_frame_counters(state, {{"pairs", pairs_time, pairs_floor(boxes, found)}}, setup.threads);
    }
    if (candidates != 0) {
        state.counters["cand_per_pair"] = static_cast<double>(candidates) / static_cast<double>(found);
        hashgrid_support::set_candidate_rate(state, static_cast<double>(candidates), pairs_time);
    }
    return true;
}

// ---------------------------------------------------------------------------
// Hashgrid BoxGrid.

hashgrid::BoxGridConfig box_config(const Scene& s, double cell, World world, uint32_t large, uint64_t max_pairs) {
    hashgrid::BoxGridConfig c;
    c.dimensions = s.base.dimensions;
    c.cell_size = static_cast<float>(cell);
    c.world = world;
    c.max_objects = s.base.n;
    c.max_cell_entries = s.base.n * 4 + 1024;
    c.max_pairs = max_pairs;
    c.large_object_cells = large;
    if (world == World::bounded) {
        for (uint32_t a = 0; a < 3; ++a) {
            const bool used = a < s.base.dimensions;
            c.origin[a] = used ? s.world_lo[a] : 0.0f;
            const double extent = static_cast<double>(s.world_hi[a]) - static_cast<double>(s.world_lo[a]);
            c.cell_counts[a] = used ? static_cast<uint32_t>(std::floor(extent / cell)) + 1 : 1;
        }
    }
    return c;
}

/// A box grid re-initialised with the exact need when a frame needs more entries or pairs.
struct BoxGridSlot {
    std::unique_ptr<hashgrid::BoxGrid> grid;
    hashgrid::BoxGridConfig config;
    std::vector<Pair> out;
    hashgrid::Trace* trace = nullptr; ///< Attached to every grid init() makes (--phases).

    bool init(const hashgrid::BoxGridConfig& c) {
        grid = std::make_unique<hashgrid::BoxGrid>();
        const Status s = grid->init_allocate(c);
        if (!s.ok()) {
            g_error = std::string("BoxGrid::init: ") + hashgrid::to_string(s.code) + " (" + s.message + ")";
            return false;
        }
        config = c;
        out.resize(static_cast<size_t>(c.max_pairs));
        grid->set_trace(trace);
        return true;
    }

    bool rebuild(const Boxes& b, const hashgrid::ThreadBackend& backend) {
        return rebuild_with([&] { return grid->rebuild(b.spans(), backend); });
    }
    bool rebuild(const hashgrid::ObjectStore& store, const hashgrid::ThreadBackend& backend) {
        return rebuild_with([&] { return grid->rebuild(store, backend); });
    }
    /// `run()` rebuilds; on too many entries, regrows and runs it again.
    template <typename Run>
    bool rebuild_with(Run&& run) {
        for (;;) {
            const Status s = run();
            if (s.ok()) return true;
            if (s.code != StatusCode::entry_capacity) {
                g_error = std::string("BoxGrid::rebuild: ") + hashgrid::to_string(s.code) + " (" + s.message + ")";
                return false;
            }
            hashgrid::BoxGridConfig c = config;
            c.max_cell_entries = static_cast<uint32_t>(std::min<uint64_t>(s.needed + s.needed / 8 + 1024, 0x7fffffffu));
            if (!init(c)) return false;
        }
    }

    /// find_pairs(); on too many pairs, regrows, rebuilds and runs again.
    bool find_pairs(const Boxes& b, const hashgrid::ThreadBackend& backend, PairResult& pr) {
        return hashgrid_support::find_pairs_growing(
            pr, g_error, [&] { return grid->find_pairs(out.data(), out.size(), backend); },
            [&](uint64_t total) {
                hashgrid::BoxGridConfig c = config;
                c.max_pairs = total + total / 4 + 4096;
                return init(c) && rebuild(b, backend);
            });
    }
};

/// --phases: the box grid's own phases, from a trace attached to the grid.
/// Each call's spans on the calling thread (the phase and its steps) are
/// summed per name, the rebuild's over the rebuilds after frame 0 (warm-up
/// frames included) and the pair search's over the find_pairs calls after
/// it; the counters (<name>_ms, dots as underscores) are the means per call.
class GridPhases {
public:
    bool init() { return trace_.init_allocate(1u << 16).ok(); }
    hashgrid::Trace* trace() { return &trace_; }
    /// Forgets what the last call recorded (frame 0's build).
    void skip() {
        if (trace_.capacity() != 0) trace_.clear();
    }
    /// Adds the last call's phases: a rebuild's or a find_pairs call's.
    void collect(bool rebuild) {
        if (trace_.capacity() == 0) return; // no --phases
        Group& g = rebuild ? rebuild_ : pairs_;
        ++g.calls;
        dropped_ += trace_.dropped();
        for (uint32_t e = 0; e < trace_.size(); ++e) {
            hashgrid::TraceEvent ev;
            if (!trace_.event(e, ev) || ev.kind != hashgrid::TraceKind::phase) continue;
            g.add(hashgrid::trace_event_name(ev), static_cast<double>(ev.end_ns - ev.begin_ns) * 1e-6);
        }
        trace_.clear();
    }
    void report(benchmark::State& state) const {
        for (const Group* g : {&rebuild_, &pairs_}) {
            for (uint32_t p = 0; p < g->count && g->calls > 0; ++p) {
                if (g->ms[p] == 0.0) continue;
                std::string counter = g->names[p];
                std::replace(counter.begin(), counter.end(), '.', '_');
                state.counters[counter + "_ms"] = g->ms[p] / g->calls;
            }
        }
        if (dropped_ != 0) state.counters["trace_dropped"] = static_cast<double>(dropped_);
    }

private:
    /// Milliseconds per span name (phases and steps; names are static strings).
    struct Group {
        static constexpr uint32_t kNames = 64;
        const char* names[kNames] = {};
        double ms[kNames] = {};
        uint32_t count = 0;
        uint32_t calls = 0;
        void add(const char* name, double t) {
            uint32_t i = 0;
            while (i < count && std::strcmp(names[i], name) != 0)
                ++i;
            if (i == kNames) return; // more names than any call records
            if (i == count) names[count++] = name;
            ms[i] += t;
        }
    };
    hashgrid::Trace trace_;
    Group rebuild_, pairs_;
    uint64_t dropped_ = 0;
};

void bench_box_grid(benchmark::State& state, const std::string& name, const std::string& setting, PairScene& ps,
                    double cell, uint32_t large, World world, const TbbBackend& tbb) {
    const hashgrid::ThreadBackend backend = tbb.backend();
    const uint64_t expected = ps.pairs(0).size();
    BoxGridSlot slot;
    GridPhases phases;
    if (g_options.phases) {
        if (!phases.init()) {
            state.SkipWithError("--phases: Trace::init_allocate failed");
            return;
        }
        slot.trace = phases.trace();
    }
    if (!slot.init(box_config(ps.scene, cell, world, large, expected + expected / 4 + 4096))) {
        state.SkipWithError(g_error.c_str());
        return;
    }
    uint64_t order = 0;
    bool built = false; // frame 0 done: the phases are collected from here on
    const bool ran = pair_frames(
        state, name, ps, FrameSetup{g_options.warmup, tbb.threads(), true, false},
        [&](uint32_t f, const Boxes& b) {
            if (!slot.rebuild(b, backend)) return false;
            built = f > 0;
            built ? phases.collect(true) : phases.skip();
            return true;
        },
        [&](const Boxes& b, PairSet* set, uint64_t&) {
            PairResult pr;
            if (!slot.find_pairs(b, backend, pr)) return false;
            built ? phases.collect(false) : phases.skip();
            if (set != nullptr) {
                for (uint64_t p = 0; p < pr.written; ++p)
                    set->push_back(pair_key(slot.out[p].a, slot.out[p].b));
                order = order_hash(slot.out.data(), pr.written);
            }
            return true;
        });
    if (!ran) return;
    if (g_options.phases) phases.report(state);
    state.counters["entries_per_box"] =
        static_cast<double>(slot.grid->entry_count()) / static_cast<double>(ps.scene.base.n);
    // The same output order for every thread count.
    const auto [seen, first] = ps.orders.emplace(setting, order);
    if (!first && seen->second != order)
        hashgrid_support::check_failed(state, name, "output order differs from another thread count's");
}

void bench_sweep_and_prune(benchmark::State& state, const std::string& name, PairScene& ps) {
    pair_frames(
        state, name, ps, FrameSetup{1, 1, false, false}, [](uint32_t, const Boxes&) { return true; },
        [](const Boxes& b, PairSet* set, uint64_t&) {
            PairSet found = sweep_and_prune(b);
            benchmark::DoNotOptimize(found.data());
            if (set != nullptr) *set = std::move(found);
            return true;
        });
}

/// G3/U3's hand-written yardstick (box_dense_reference.h): the level's bounded
/// grid at 2 m cells, one thread; "update" bins the boxes, "pairs" finds them.
void bench_box_dense_reference(benchmark::State& state, const std::string& name, PairScene& ps) {
    const Scene& scene = ps.scene;
    const double cell = 2.0;
    float origin[3];
    uint32_t cells[3];
    for (uint32_t a = 0; a < 3; ++a) {
        origin[a] = scene.world_lo[a];
        const double extent = static_cast<double>(scene.world_hi[a]) - static_cast<double>(scene.world_lo[a]);
        cells[a] = static_cast<uint32_t>(std::floor(extent / cell)) + 1;
    }
    const uint64_t expected = ps.pairs(0).size();
    const uint64_t capacity = expected + expected / 4 + 4096;
    box_dense_reference::BoxDenseGrid grid(origin, static_cast<float>(cell), cells, scene.base.n, scene.base.n * 8,
                                           capacity);
    pair_frames(
        state, name, ps, FrameSetup{g_options.warmup, 1, true, false},
        [&](uint32_t, const Boxes& b) {
            const float* const lo[3] = {b.lo[0].data(), b.lo[1].data(), b.lo[2].data()};
            const float* const hi[3] = {b.hi[0].data(), b.hi[1].data(), b.hi[2].data()};
            if (grid.rebuild(lo, hi, b.n)) return true;
            g_error = "box_dense_reference: more entries than 8 per box";
            return false;
        },
        [&](const Boxes&, PairSet* set, uint64_t& candidates) {
            const uint64_t found = grid.find_pairs();
            candidates = grid.candidates();
            if (found > capacity) {
                g_error = "box_dense_reference: more pairs than its buffer";
                return false;
            }
            benchmark::DoNotOptimize(grid.pairs());
            if (set != nullptr)
                for (uint64_t p = 0; p < found; ++p)
                    set->push_back(pair_key(grid.pairs()[p].a, grid.pairs()[p].b));
            return true;
        });
}

// ---------------------------------------------------------------------------
// Bullet btDbvtBroadphase.

#if HASHGRID_BENCH_BULLET
struct BulletBroadphase {
    std::unique_ptr<btDbvtBroadphase> bp = std::make_unique<btDbvtBroadphase>();
    std::vector<btBroadphaseProxy*> proxies;

    static btVector3 corner(const std::vector<float>* axis, uint32_t i) {
        return btVector3(axis[0][i], axis[1][i], axis[2][i]);
    }

    void insert(const Boxes& b) {
        proxies.resize(b.n);
        for (uint32_t i = 0; i < b.n; ++i) {
            proxies[i] = bp->createProxy(corner(b.lo, i), corner(b.hi, i), BOX_SHAPE_PROXYTYPE,
                                         reinterpret_cast<void*>(static_cast<uintptr_t>(i)),
                                         btBroadphaseProxy::DefaultFilter, btBroadphaseProxy::AllFilter, nullptr);
        }
    }

    void move(const Boxes& b) {
        for (uint32_t i = 0; i < b.n; ++i)
            bp->setAabb(proxies[i], corner(b.lo, i), corner(b.hi, i), nullptr);
    }

    /// Exact pairs from the persistent (fat, partly stale) pair cache.
    void pairs(const Boxes& b, std::vector<uint64_t>& out, uint64_t& candidates) {
        bp->calculateOverlappingPairs(nullptr);
        btOverlappingPairCache* cache = bp->getOverlappingPairCache();
        const int count = cache->getNumOverlappingPairs();
        const btBroadphasePair* pairs = cache->getOverlappingPairArrayPtr();
        out.clear();
        for (int k = 0; k < count; ++k) {
            const auto i = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pairs[k].m_pProxy0->m_clientObject));
            const auto j = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pairs[k].m_pProxy1->m_clientObject));
            if (b.overlap(i, j)) out.push_back(pair_key(i, j));
        }
        candidates = static_cast<uint64_t>(count);
    }
};

void bench_bullet(benchmark::State& state, const std::string& name, PairScene& ps, bool deferred) {
    auto bullet = std::make_unique<BulletBroadphase>();
    bullet->bp->m_deferedcollide = deferred;
    std::vector<uint64_t> found;
    found.reserve(ps.pairs(0).size() * 2);
    pair_frames(
        state, name, ps, FrameSetup{1, 1, true, true},
        [&](uint32_t frame, const Boxes& b) {
            if (frame == 0)
                bullet->insert(b);
            else
                bullet->move(b);
            return true;
        },
        [&](const Boxes& b, PairSet* set, uint64_t& candidates) {
            bullet->pairs(b, found, candidates);
            if (set != nullptr) *set = found;
            return true;
        });
}
#endif

// ---------------------------------------------------------------------------
// FCL broad-phase managers.

#if HASHGRID_BENCH_FCL
struct FclObjects {
    std::vector<std::unique_ptr<fcl::CollisionObjectd>> objects;
    std::vector<fcl::CollisionObjectd*> pointers;
    uint32_t aabb_mismatches = 0;

    static fcl::Vector3d centre(const Boxes& b, uint32_t i) {
        return fcl::Vector3d(0.5 * (static_cast<double>(b.lo[0][i]) + static_cast<double>(b.hi[0][i])),
                             0.5 * (static_cast<double>(b.lo[1][i]) + static_cast<double>(b.hi[1][i])),
                             0.5 * (static_cast<double>(b.lo[2][i]) + static_cast<double>(b.hi[2][i])));
    }

    /// One CollisionObject with its own Box per input box (not timed: the scene's representation).
    explicit FclObjects(const Boxes& b) {
        for (uint32_t i = 0; i < b.n; ++i) {
            auto box = std::make_shared<fcl::Boxd>(static_cast<double>(b.hi[0][i]) - static_cast<double>(b.lo[0][i]),
                                                   static_cast<double>(b.hi[1][i]) - static_cast<double>(b.lo[1][i]),
                                                   static_cast<double>(b.hi[2][i]) - static_cast<double>(b.lo[2][i]));
            auto object = std::make_unique<fcl::CollisionObjectd>(box);
            object->setTranslation(centre(b, i));
            object->computeAABB();
            object->setUserData(reinterpret_cast<void*>(static_cast<uintptr_t>(i)));
            const fcl::AABBd& aabb = object->getAABB();
            for (int a = 0; a < 3; ++a) {
                if (aabb.min_[a] != static_cast<double>(b.lo[a][i]) || aabb.max_[a] != static_cast<double>(b.hi[a][i]))
                    ++aabb_mismatches;
            }
            pointers.push_back(object.get());
            objects.push_back(std::move(object));
        }
    }

    void move(const Boxes& b) {
        for (uint32_t i = 0; i < b.n; ++i) {
            pointers[i]->setTranslation(centre(b, i));
            pointers[i]->computeAABB();
        }
    }
};

struct FclCollect {
    const Boxes* boxes = nullptr;
    std::vector<uint64_t>* out = nullptr;
    uint64_t candidates = 0;
};

bool fcl_collect(fcl::CollisionObjectd* o1, fcl::CollisionObjectd* o2, void* data) {
    auto* c = static_cast<FclCollect*>(data);
    const auto i = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(o1->getUserData()));
    const auto j = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(o2->getUserData()));
    ++c->candidates;
    if (c->boxes->overlap(i, j)) c->out->push_back(pair_key(i, j));
    return false; // keep going
}

template <typename Manager, typename MakeManager>
void bench_fcl(benchmark::State& state, const std::string& name, PairScene& ps, MakeManager&& make_manager) {
    Boxes first;
    frame_boxes(ps.scene, 0, first);
    FclObjects objects(first);
    if (objects.aabb_mismatches != 0) {
        hashgrid_support::check_failed(
            state, name, "AABBs differ from the input boxes on " + std::to_string(objects.aabb_mismatches) + " axes");
        return;
    }
    std::unique_ptr<Manager> manager;
    std::vector<uint64_t> found;
    found.reserve(ps.pairs(0).size() * 2);
    pair_frames(
        state, name, ps, FrameSetup{},
        [&](uint32_t frame, const Boxes& b) {
            if (frame == 0) {
                manager = make_manager();
                manager->registerObjects(objects.pointers);
                manager->setup();
            } else {
                objects.move(b);
                manager->update();
            }
            return true;
        },
        [&](const Boxes& b, PairSet* set, uint64_t& candidates) {
            found.clear();
            FclCollect collect{&b, &found, 0};
            manager->collide(&collect, fcl_collect);
            candidates = collect.candidates;
            if (set != nullptr) *set = found;
            return true;
        });
}
#endif

// ---------------------------------------------------------------------------
// Box2D b2DynamicTree.

#if HASHGRID_BENCH_BOX2D
/// The box in Box2D's units: scaled by `scale`, a power of two (exact).
b2AABB box2d_aabb(const Boxes& b, uint32_t i, float scale) {
    b2AABB aabb;
    aabb.lowerBound = b2Vec2(b.lo[0][i] * scale, b.lo[1][i] * scale);
    aabb.upperBound = b2Vec2(b.hi[0][i] * scale, b.hi[1][i] * scale);
    return aabb;
}

struct Box2dTree {
    b2DynamicTree tree;
    std::vector<int32> proxy;
    std::vector<float> last_x, last_y; ///< Previous min corner, for MoveProxy's displacement.
    /// Box2D's fat margin is a fixed 0.1 (b2_aabbExtension, compiled into the
    /// library), tuned for objects of 0.1-10 m: scenes in other units are
    /// scaled by a power of two (exact: same overlaps) into that range.
    float scale = 1.0f;

    void insert(const Boxes& b) {
        proxy.resize(b.n);
        last_x = b.lo[0];
        last_y = b.lo[1];
        for (uint32_t i = 0; i < b.n; ++i)
            proxy[i] = tree.CreateProxy(box2d_aabb(b, i, scale), reinterpret_cast<void*>(static_cast<uintptr_t>(i)));
    }

    void move(const Boxes& b) {
        for (uint32_t i = 0; i < b.n; ++i) {
            const b2Vec2 displacement((b.lo[0][i] - last_x[i]) * scale, (b.lo[1][i] - last_y[i]) * scale);
            tree.MoveProxy(proxy[i], box2d_aabb(b, i, scale), displacement);
            last_x[i] = b.lo[0][i];
            last_y[i] = b.lo[1][i];
        }
    }

    /// Build (frame 0) or move every proxy.
    void update(uint32_t frame, const Boxes& b) {
        if (frame == 0)
            insert(b);
        else
            move(b);
    }

    [[nodiscard]] uint32_t object(int32 id) const {
        return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(tree.GetUserData(id)));
    }
};

/// Query callback: pairs (i, j > i) whose exact boxes overlap.
struct Box2dPairCollector {
    const Box2dTree* tree = nullptr;
    const Boxes* boxes = nullptr;
    std::vector<uint64_t>* out = nullptr;
    uint32_t i = 0;
    uint64_t candidates = 0;
    bool QueryCallback(int32 id) {
        const uint32_t j = tree->object(id);
        if (j > i) {
            ++candidates;
            if (boxes->overlap(i, j)) out->push_back(pair_key(i, j));
        }
        return true;
    }
};

void bench_box2d_pairs(benchmark::State& state, const std::string& name, PairScene& ps) {
    auto tree = std::make_unique<Box2dTree>();
    std::vector<uint64_t> found;
    found.reserve(ps.pairs(0).size() * 2);
    pair_frames(
        state, name, ps, FrameSetup{},
        [&](uint32_t frame, const Boxes& b) {
            tree->update(frame, b);
            return true;
        },
        [&](const Boxes& b, PairSet* set, uint64_t& candidates) {
            found.clear();
            Box2dPairCollector collect{tree.get(), &b, &found, 0, 0};
            for (uint32_t i = 0; i < b.n; ++i) {
                collect.i = i;
                tree->tree.Query(&collect, box2d_aabb(b, i, 1.0f));
            }
            candidates = collect.candidates;
            if (set != nullptr) *set = found;
            return true;
        });
}
#endif

// ---------------------------------------------------------------------------
// Scene Q: batched box and circle queries plus the re-index of moved objects.

struct Query {
    bool circle = false;
    float x = 0.0f, y = 0.0f;   ///< Centre.
    float hx = 0.0f, hy = 0.0f; ///< Box: half extents. Circle: hx = radius.
    [[nodiscard]] float lo_x() const { return x - hx; }
    [[nodiscard]] float hi_x() const { return x + hx; }
    [[nodiscard]] float lo_y() const { return y - (circle ? hx : hy); }
    [[nodiscard]] float hi_y() const { return y + (circle ? hx : hy); }
};

/// Closed tests. Box: intervals overlap on both axes. Circle: the squared
/// distance from the centre to the box (float, x term + y term) <= r^2.
bool query_hits(const Query& q, const Boxes& b, uint32_t i) {
    if (!q.circle) {
        return q.lo_x() <= b.hi[0][i] && b.lo[0][i] <= q.hi_x() && q.lo_y() <= b.hi[1][i] && b.lo[1][i] <= q.hi_y();
    }
    const float dx = q.x < b.lo[0][i] ? b.lo[0][i] - q.x : (q.x > b.hi[0][i] ? q.x - b.hi[0][i] : 0.0f);
    const float dy = q.y < b.lo[1][i] ? b.lo[1][i] - q.y : (q.y > b.hi[1][i] ? q.y - b.hi[1][i] : 0.0f);
    return dx * dx + dy * dy <= q.hx * q.hx;
}

/// Results of a query batch: per query the objects hit, ascending (CSR).
struct QueryResults {
    std::vector<uint32_t> start{0};
    std::vector<uint32_t> object;
    void canonicalize() {
        for (size_t k = 0; k + 1 < start.size(); ++k)
            std::sort(object.begin() + start[k], object.begin() + start[k + 1]);
    }
    bool operator==(const QueryResults&) const = default;
};

/// Scene Q, its queries, and per frame brute force on every stride-th query
/// and the first system's results (made on first use).
struct QueryScene {
    Scene scene = make_query_scene(g_options.n);
    std::vector<Query> queries;
    uint32_t stride = 1;
    std::map<uint32_t, QueryResults> brute_force;
    std::map<uint32_t, QueryResults> seen;

    QueryScene() : stride(std::max(1u, g_options.queries / 100)) {
        SplitMix64 rng(0x9e5e3u + 1);
        queries.resize(g_options.queries);
        for (uint32_t k = 0; k < g_options.queries; ++k) {
            Query& q = queries[k];
            q.circle = k % 2 == 1;
            q.x = static_cast<float>(quantize(-kQHalfWorld + scene.side * rng.unit_double(), scene.quantum));
            q.y = static_cast<float>(quantize(-kQHalfWorld + scene.side * rng.unit_double(), scene.quantum));
            const double scale = g_options.query_scale;
            q.hx = static_cast<float>(
                quantize(scale * (kQQueryLo + (kQQueryHi - kQQueryLo) * rng.unit_double()), scene.quantum));
            q.hy = q.circle ? q.hx
                            : static_cast<float>(quantize(
                                  scale * (kQQueryLo + (kQQueryHi - kQQueryLo) * rng.unit_double()), scene.quantum));
        }
    }

    /// Empty when `got` (canonical) agrees with brute force and with the first system seen at `frame`.
    std::string check(uint32_t frame, const Boxes& b, const QueryResults& got) {
        QueryResults& sample = brute_force[frame];
        if (sample.object.empty()) {
            for (size_t k = 0; k < queries.size(); k += stride) {
                for (uint32_t i = 0; i < b.n; ++i)
                    if (query_hits(queries[k], b, i)) sample.object.push_back(i);
                sample.start.push_back(static_cast<uint32_t>(sample.object.size()));
            }
        }
        uint32_t bad = 0;
        for (size_t s = 0; s + 1 < sample.start.size(); ++s) {
            const size_t k = s * stride;
            bad += std::equal(got.object.begin() + got.start[k], got.object.begin() + got.start[k + 1],
                              sample.object.begin() + sample.start[s], sample.object.begin() + sample.start[s + 1])
                       ? 0
                       : 1;
        }
        if (bad != 0) return std::to_string(bad) + " sampled queries differ from brute force";
        const auto [first, inserted] = seen.emplace(frame, got);
        if (!inserted && first->second != got) return "results differ from another system's";
        return {};
    }
};

QueryScene& query_scene() {
    static std::unique_ptr<QueryScene> scene;
    if (scene == nullptr) scene = std::make_unique<QueryScene>();
    return *scene;
}

/// Q's frames: `index(frame, boxes)` builds or re-indexes, `run(results,
/// tested)` runs the query batch, filling `results` (and the candidates the
/// exact tests saw) when they are not null. The last frame's batch is run
/// again untimed and checked.
template <typename Index, typename Run, typename Sync>
void query_frames(benchmark::State& state, const std::string& name, unsigned threads, Index&& index, Run&& run,
                  Sync&& sync) {
    QueryScene& qs = query_scene();
    Boxes boxes;
    frame_boxes(qs.scene, 0, boxes);
    sync(boxes);
    const uint64_t start = now_ns();
    if (!index(0u, boxes)) {
        state.SkipWithError(g_error.c_str());
        return;
    }
    state.counters["build_ms"] = static_cast<double>(now_ns() - start) * 1e-6;
    PhaseTime index_time, query_time;
    const uint32_t frame = hashgrid_support::run_frames(
        state, g_options.warmup, index_time, query_time, g_error,
        [&](uint32_t f) { // untimed: the frame's boxes, and the store's moves of those that changed
            frame_boxes(qs.scene, f, boxes);
            sync(boxes);
            return true;
        },
        [&](uint32_t f) { return index(f, boxes); }, [&] { return run(nullptr, nullptr); });
    if (frame == 0) return;
    QueryResults results;
    uint64_t tested = 0;
    if (!run(&results, &tested)) {
        state.SkipWithError(g_error.c_str());
        return;
    }
    results.canonicalize();
    if (const std::string difference = qs.check(frame, boxes, results); !difference.empty()) {
        hashgrid_support::check_failed(state, name, "frame " + std::to_string(frame) + ": " + difference);
        return;
    }
    state.counters["results"] = static_cast<double>(results.object.size());
    const double n = boxes.n;
    hashgrid_support::set_frame_counters(state,
                                         {{"reindex", index_time, copy_equivalent_bytes(16.0 * n, 4.0 * n)},
                                          {"queries", query_time,
                                           copy_equivalent_bytes(16.0 * static_cast<double>(qs.queries.size()),
                                                                 4.0 * static_cast<double>(results.object.size()))}},
                                         threads);
    if (tested != 0) hashgrid_support::set_candidate_rate(state, static_cast<double>(tested), query_time);
}

/// The boxes of a scene kept in an ObjectStore, as a game keeps its objects:
/// each frame, move() only for the boxes that changed (not timed: the
/// game's own work).
struct StoreSlot {
    hashgrid::ObjectStore store;
    std::vector<hashgrid::ObjectHandle> handle;

    bool init(const Boxes& b) {
        hashgrid::ObjectStoreConfig c;
        c.dimensions = b.dimensions;
        c.max_objects = b.n;
        Status s = store.init_allocate(c);
        handle.resize(b.n);
        for (uint32_t i = 0; i < b.n && s.ok(); ++i) {
            const hashgrid::ObjectAddResult a = store.add(box_at(b, i), ~0u, ~0u, i);
            s = a.status;
            handle[i] = a.handle;
        }
        if (!s.ok()) g_error = std::string("ObjectStore: ") + hashgrid::to_string(s.code) + " (" + s.message + ")";
        return s.ok();
    }
    static hashgrid::ObjectBox box_at(const Boxes& b, uint32_t i) {
        hashgrid::ObjectBox box;
        for (uint32_t a = 0; a < b.dimensions; ++a) {
            box.min[a] = b.lo[a][i];
            box.max[a] = b.hi[a][i];
        }
        return box;
    }
    void sync(const Boxes& b) {
        for (uint32_t i = 0; i < b.n; ++i) {
            bool same = true;
            for (uint32_t a = 0; a < b.dimensions; ++a)
                same = same && b.lo[a][i] == store.min_coords(a)[i] && b.hi[a][i] == store.max_coords(a)[i];
            if (!same) (void)store.move(handle[i], box_at(b, i));
        }
    }
};

/// Hashgrid: rebuild + prepare_box_queries (the index update), then one batch
/// of box queries and one of circle queries (query_box_batch, query_radius_batch).
/// With from_store, the boxes live in an ObjectStore and the grid is rebuilt
/// from it (rebuild(store, backend): it reads the store's change log).
void bench_box_queries(benchmark::State& state, const std::string& name, double cell, World world,
                       const TbbBackend& tbb, bool from_store) {
    QueryScene& qs = query_scene();
    const hashgrid::ThreadBackend backend = tbb.backend();
    std::vector<hashgrid::QueryBox> box_queries;
    std::vector<hashgrid::QuerySphere> radius_queries;
    for (const Query& q : qs.queries) {
        if (q.circle) {
            hashgrid::QuerySphere r;
            r.center[0] = q.x;
            r.center[1] = q.y;
            r.radius = q.hx;
            radius_queries.push_back(r);
        } else {
            hashgrid::QueryBox b;
            b.min[0] = q.lo_x();
            b.min[1] = q.lo_y();
            b.max[0] = q.hi_x();
            b.max[1] = q.hi_y();
            box_queries.push_back(b);
        }
    }
    const auto box_count = static_cast<uint32_t>(box_queries.size());
    const auto radius_count = static_cast<uint32_t>(radius_queries.size());
    std::vector<uint64_t> box_offsets(box_count + 1), radius_offsets(radius_count + 1);
    std::vector<uint32_t> box_out(static_cast<size_t>(box_count) * 256), radius_out(radius_count * size_t{256});
    BoxGridSlot slot;
    if (!slot.init(box_config(qs.scene, cell, world, 64, 1024))) {
        state.SkipWithError(g_error.c_str());
        return;
    }
    hashgrid::BoxQueryGrid grid{};
    StoreSlot store;
    if (from_store) {
        Boxes base;
        frame_boxes(qs.scene, 0, base);
        if (!store.init(base)) {
            state.SkipWithError(g_error.c_str());
            return;
        }
    }
    const auto batch = [&](auto&& query, std::vector<uint32_t>& buffer, const char* what) {
        hashgrid::QueryResult r = query();
        if (r.status.code == StatusCode::output_too_small) {
            buffer.resize(static_cast<size_t>(r.total + r.total / 4));
            r = query();
        }
        if (!r.status.ok())
            g_error = std::string(what) + ": " + hashgrid::to_string(r.status.code) + " (" + r.status.message + ")";
        return r.status.ok();
    };
    query_frames(
        state, name, tbb.threads(),
        [&](uint32_t, const Boxes& boxes) {
            if (!(from_store ? slot.rebuild(store.store, backend) : slot.rebuild(boxes, backend))) return false;
            grid = hashgrid::prepare_box_queries(slot.grid->view(), backend);
            return true;
        },
        [&](QueryResults* results, uint64_t* tested) {
            hashgrid::QueryStats box_stats, radius_stats;
            const bool ok = batch(
                                [&] {
                                    return hashgrid::query_box_batch(grid, box_queries.data(), box_count,
                                                                     hashgrid::kAllLayers, box_offsets.data(),
                                                                     box_offsets.size(), box_out.data(), box_out.size(),
                                                                     backend, tested != nullptr ? &box_stats : nullptr);
                                },
                                box_out, "query_box_batch") &&
                            batch(
                                [&] {
                                    return hashgrid::query_radius_batch(
                                        grid, radius_queries.data(), radius_count, hashgrid::kAllLayers,
                                        radius_offsets.data(), radius_offsets.size(), radius_out.data(),
                                        radius_out.size(), backend, tested != nullptr ? &radius_stats : nullptr);
                                },
                                radius_out, "query_radius_batch");
            if (tested != nullptr) *tested = box_stats.tested + radius_stats.tested;
            if (results == nullptr || !ok) return ok;
            // Back to the original (interleaved) query order.
            uint32_t next_box = 0, next_radius = 0;
            for (const Query& q : qs.queries) {
                const uint32_t k = q.circle ? next_radius++ : next_box++;
                const std::vector<uint64_t>& offsets = q.circle ? radius_offsets : box_offsets;
                const std::vector<uint32_t>& buffer = q.circle ? radius_out : box_out;
                results->object.insert(results->object.end(), buffer.begin() + static_cast<ptrdiff_t>(offsets[k]),
                                       buffer.begin() + static_cast<ptrdiff_t>(offsets[k + 1]));
                results->start.push_back(static_cast<uint32_t>(results->object.size()));
            }
            return true;
        },
        [&](const Boxes& b) {
            if (from_store) store.sync(b);
        });
}

/// Q through BoxGrid::find_pairs_with: every query as a box (a circle as its
/// bounding box) against the grid, in one call; the (query, object) pairs
/// are the timed output. For the check only (not timed), each circle's pairs
/// are filtered by the exact circle test, which a caller would do as its
/// narrow phase.
void bench_box_pairs_with(benchmark::State& state, const std::string& name, double cell, World world,
                          const TbbBackend& tbb) {
    QueryScene& qs = query_scene();
    const hashgrid::ThreadBackend backend = tbb.backend();
    const auto count = static_cast<uint32_t>(qs.queries.size());
    std::vector<float> lo_x(count), lo_y(count), hi_x(count), hi_y(count);
    for (uint32_t q = 0; q < count; ++q) {
        lo_x[q] = qs.queries[q].lo_x();
        lo_y[q] = qs.queries[q].lo_y();
        hi_x[q] = qs.queries[q].hi_x();
        hi_y[q] = qs.queries[q].hi_y();
    }
    hashgrid::BoxSpans spans;
    spans.min_x = lo_x.data();
    spans.min_y = lo_y.data();
    spans.max_x = hi_x.data();
    spans.max_y = hi_y.data();
    spans.count = count;
    std::vector<Pair> out(static_cast<size_t>(count) * 256);
    BoxGridSlot slot;
    if (!slot.init(box_config(qs.scene, cell, world, 64, 1024))) {
        state.SkipWithError(g_error.c_str());
        return;
    }
    const Boxes* current = nullptr; // the frame's boxes (query_frames keeps them), for the check
    query_frames(
        state, name, tbb.threads(),
        [&](uint32_t, const Boxes& boxes) {
            current = &boxes;
            return slot.rebuild(boxes, backend);
        },
        [&](QueryResults* results, uint64_t*) {
            hashgrid::PairResult r = slot.grid->find_pairs_with(spans, out.data(), out.size(), backend);
            if (r.status.code == StatusCode::output_too_small) {
                out.resize(static_cast<size_t>(r.total + r.total / 4));
                r = slot.grid->find_pairs_with(spans, out.data(), out.size(), backend);
            }
            if (!r.status.ok()) {
                g_error = std::string("find_pairs_with: ") + hashgrid::to_string(r.status.code) + " (" +
                          r.status.message + ")";
                return false;
            }
            if (results == nullptr) return true;
            // Pairs come by query; per query the exact hits, as the batches give them.
            uint64_t p = 0;
            for (uint32_t q = 0; q < count; ++q) {
                for (; p < r.written && out[p].a == q; ++p)
                    if (query_hits(qs.queries[q], *current, out[p].b)) results->object.push_back(out[p].b);
                results->start.push_back(static_cast<uint32_t>(results->object.size()));
            }
            return p == r.written;
        },
        [](const Boxes&) {});
}

#if HASHGRID_BENCH_BOX2D
struct Box2dQueryCollector {
    const Box2dTree* tree = nullptr;
    const Boxes* boxes = nullptr;
    const Query* query = nullptr;
    std::vector<uint32_t>* out = nullptr;
    uint64_t tested = 0;
    bool QueryCallback(int32 id) {
        const uint32_t i = tree->object(id);
        ++tested;
        if (query_hits(*query, *boxes, i)) out->push_back(i);
        return true;
    }
};

void bench_box2d_queries(benchmark::State& state, const std::string& name) {
    QueryScene& qs = query_scene();
    auto tree = std::make_unique<Box2dTree>();
    tree->scale = kQBox2dScale;
    const Boxes* current = nullptr;
    std::vector<uint32_t> hits;
    query_frames(
        state, name, 1,
        [&](uint32_t frame, const Boxes& boxes) {
            tree->update(frame, boxes);
            current = &boxes;
            return true;
        },
        [&](QueryResults* results, uint64_t* tested) {
            hits.clear();
            Box2dQueryCollector collect{tree.get(), current, nullptr, &hits, 0};
            for (const Query& q : qs.queries) {
                collect.query = &q;
                b2AABB aabb;
                aabb.lowerBound = b2Vec2(q.lo_x() * kQBox2dScale, q.lo_y() * kQBox2dScale);
                aabb.upperBound = b2Vec2(q.hi_x() * kQBox2dScale, q.hi_y() * kQBox2dScale);
                tree->tree.Query(&collect, aabb);
                if (results != nullptr) results->start.push_back(static_cast<uint32_t>(hits.size()));
            }
            if (results != nullptr) results->object = hits;
            if (tested != nullptr) *tested = collect.tested;
            return true;
        },
        [](const Boxes&) {});
}
#endif

// ---------------------------------------------------------------------------
// Options and registration.

constexpr const char* kUsage =
    "[--n N>=1000] [--threads 1,2] [--frames F] [--warmup W] [--peer-frames F] [--cells 2,3] [--q-cells 16,32] "
    "[--large 64] [--fcl-hash-cell C] [--queries Q] [--query-scale S] [--sigma S] [--overlaps K] "
    "[--moved-percent P] [--phases] [--kernel scalar|sse2|avx2|neon]";

bool parse_doubles(const std::string& text, std::vector<double>& values) {
    values.clear();
    for (const std::string& item : hashgrid_support::split_list(text.c_str())) {
        double v = 0.0;
        if (!hashgrid_support::parse_double(item.c_str(), v) || v <= 0.0) return false;
        values.push_back(v);
    }
    return !values.empty();
}

bool parse_options(hashgrid_support::BenchArgs& args, Options& o) {
    using namespace hashgrid_support;
    std::string v;
    bool ok = take_frame_options(args, o);
    if (args.take("--peer-frames", v)) ok = ok && parse_u32(v.c_str(), o.peer_frames) && o.peer_frames >= 1;
    if (args.take("--cells", v)) ok = ok && parse_doubles(v, o.cells);
    if (args.take("--q-cells", v)) ok = ok && parse_doubles(v, o.q_cells);
    if (args.take("--large", v)) ok = ok && parse_u32_list(v.c_str(), 1, 0x7fffffffu, o.large);
    if (args.take("--fcl-hash-cell", v)) ok = ok && parse_double(v.c_str(), o.fcl_hash_cell) && o.fcl_hash_cell > 0.0;
    if (args.take("--queries", v)) ok = ok && parse_u32(v.c_str(), o.queries) && o.queries >= 2;
    if (args.take("--query-scale", v))
        ok = ok && parse_double(v.c_str(), o.query_scale) && o.query_scale > 0.0 && o.query_scale <= 100.0;
    if (args.take("--sigma", v)) ok = ok && parse_double(v.c_str(), o.sigma) && o.sigma > 0.0 && o.sigma < 2.0;
    if (args.take("--overlaps", v)) ok = ok && parse_double(v.c_str(), o.overlaps) && o.overlaps > 0.0;
    if (args.take("--moved-percent", v))
        ok = ok && parse_u32(v.c_str(), o.moved_percent) && o.moved_percent >= 1 && o.moved_percent <= 100;
    o.phases = args.take_flag("--phases");
    if (args.take("--kernel", v)) {
        bool known = false;
        for (uint32_t k = 1; k < std::size(kKernelNames); ++k) // not "automatic": the default
            if (v == kKernelNames[k]) {
                o.kernel = static_cast<hashgrid::PairKernel>(k);
                known = true;
            }
        ok = ok && known && hashgrid::set_pair_kernel(o.kernel);
    }
    return ok;
}

std::string number(double v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", v);
    return text;
}

} // namespace

int main(int argc, char** argv) {
    hashgrid_support::BenchArgs args(argc, argv);
    Options& o = g_options;
    if (!args.initialize(kUsage, parse_options(args, o))) return 2;
    benchmark::AddCustomContext("boxes", std::to_string(o.n));
    benchmark::AddCustomContext("pair_kernel", kKernelNames[static_cast<uint32_t>(hashgrid::active_pair_kernel())]);
    std::string peers = "Hashgrid";
#if HASHGRID_BENCH_BULLET
    peers += ", Bullet " HASHGRID_BENCH_BULLET_VERSION;
#else
    peers += ", Bullet missing";
#endif
#if HASHGRID_BENCH_FCL
    peers += ", FCL " FCL_VERSION;
#else
    peers += ", FCL missing";
#endif
#if HASHGRID_BENCH_BOX2D
    peers += ", Box2D " + std::to_string(b2_version.major) + "." + std::to_string(b2_version.minor) + "." +
             std::to_string(b2_version.revision);
#else
    peers += ", Box2D missing";
#endif
    benchmark::AddCustomContext("systems", peers);

    // Runs where only some boxes move say so in their names.
    const std::string moved_tag = o.moved_percent < 100 ? "/moved:" + std::to_string(o.moved_percent) + "%" : "";
    std::map<uint32_t, std::unique_ptr<TbbBackend>> backends;
    for (uint32_t t : o.threads)
        backends[t] = std::make_unique<TbbBackend>(t);
    // The B3/B2 peers (and the oracle's sweep) take seconds per frame: 3 repetitions unless the command line sets them.
    const bool few = args.defaulted("repetitions");
    const auto peer = [&](const std::string& name, auto&& run) {
        benchmark::internal::Benchmark* b = hashgrid_support::register_frames(name, o.peer_frames, run);
        if (few) b->Repetitions(3);
    };
    for (const std::string scene_name : {"B3", "B2"}) {
        for (const World world : {World::unbounded, World::bounded}) {
            for (const double cell : o.cells) {
                for (const uint32_t large : o.large) {
                    const std::string setting = scene_name + (world == World::bounded ? "/bounded" : "/unbounded") +
                                                "/cell:" + number(cell) + "/large:" + std::to_string(large) + moved_tag;
                    for (uint32_t t : o.threads) {
                        const std::string name =
                            scene_name + "/hashgrid/" + setting.substr(3) + "/threads:" + std::to_string(t);
                        const TbbBackend* tbb = backends[t].get();
                        hashgrid_support::register_frames(name, o.frames, [=](benchmark::State& state) {
                            bench_box_grid(state, name, setting, pair_scene(scene_name), cell, large, world, *tbb);
                        });
                    }
                }
            }
        }
        const std::string sap = scene_name + "/sap/sort-x/threads:1";
        peer(sap, [=](benchmark::State& state) { bench_sweep_and_prune(state, sap, pair_scene(scene_name)); });
    }
    // G3 / U3: mixed object sizes against the same count of uniform boxes, at
    // the level's 2 m cells and the default large_object_cells.
    for (const std::string scene_name : {"G3", "U3"})
        for (const World world : {World::unbounded, World::bounded}) {
            const std::string setting =
                scene_name + (world == World::bounded ? "/bounded" : "/unbounded") + "/cell:2/large:64" + moved_tag;
            for (uint32_t t : o.threads) {
                const std::string name =
                    scene_name + "/hashgrid/" + setting.substr(3) + "/threads:" + std::to_string(t);
                const TbbBackend* tbb = backends[t].get();
                hashgrid_support::register_frames(name, o.frames, [=](benchmark::State& state) {
                    bench_box_grid(state, name, setting, pair_scene(scene_name), 2.0, 64, world, *tbb);
                });
            }
        }
    // G3 / U3: the hand-written dense grid (box_dense_reference.h), the yardstick for mixed sizes.
    for (const std::string scene_name : {"G3", "U3"}) {
        const std::string name = scene_name + "/dense_reference/bounded/cell:2/threads:1";
        hashgrid_support::register_frames(name, o.frames, [=](benchmark::State& state) {
            bench_box_dense_reference(state, name, pair_scene(scene_name));
        });
    }
#if HASHGRID_BENCH_BULLET
    for (const bool deferred : {false, true}) {
        const std::string name = std::string("B3/bullet/") + (deferred ? "deferred" : "default") + "/threads:1";
        peer(name, [=](benchmark::State& state) { bench_bullet(state, name, pair_scene("B3"), deferred); });
    }
#endif
#if HASHGRID_BENCH_FCL
    peer("B3/fcl/tree/threads:1", [](benchmark::State& state) {
        bench_fcl<fcl::DynamicAABBTreeCollisionManagerd>(state, "B3/fcl/tree/threads:1", pair_scene("B3"), [] {
            return std::make_unique<fcl::DynamicAABBTreeCollisionManagerd>();
        });
    });
    const std::string fcl_hash = "B3/fcl/hash-cell:" + number(o.fcl_hash_cell) + "/threads:1";
    peer(fcl_hash, [=](benchmark::State& state) {
        PairScene& ps = pair_scene("B3");
        const double cell = g_options.fcl_hash_cell;
        const fcl::Vector3d lo(ps.scene.world_lo[0], ps.scene.world_lo[1], ps.scene.world_lo[2]);
        const fcl::Vector3d hi(ps.scene.world_hi[0], ps.scene.world_hi[1], ps.scene.world_hi[2]);
        double cells = 1.0;
        for (int a = 0; a < 3; ++a)
            cells *= std::ceil((hi[a] - lo[a]) / cell);
        const auto table = static_cast<unsigned int>(std::min(cells, 1.0e8));
        bench_fcl<fcl::SpatialHashingCollisionManagerd<>>(state, fcl_hash, ps, [=] {
            return std::make_unique<fcl::SpatialHashingCollisionManagerd<>>(cell, lo, hi, table);
        });
    });
#endif
#if HASHGRID_BENCH_BOX2D
    peer("B2/box2d/tree/threads:1",
         [](benchmark::State& state) { bench_box2d_pairs(state, "B2/box2d/tree/threads:1", pair_scene("B2")); });
#endif
    // Q/hashgrid: the boxes as spans; Q/hashgrid-store: kept in an ObjectStore
    // (moved when they change) and rebuilt from it.
    for (const bool from_store : {false, true}) {
        for (const World world : {World::unbounded, World::bounded}) {
            for (const double cell : o.q_cells) {
                for (uint32_t t : o.threads) {
                    const std::string name = std::string(from_store ? "Q/hashgrid-store/" : "Q/hashgrid/") +
                                             (world == World::bounded ? "bounded" : "unbounded") +
                                             "/cell:" + number(cell) + moved_tag + "/threads:" + std::to_string(t);
                    const TbbBackend* tbb = backends[t].get();
                    hashgrid_support::register_frames(name, o.frames, [=](benchmark::State& state) {
                        bench_box_queries(state, name, cell, world, *tbb, from_store);
                    });
                }
            }
        }
    }
    // Q/hashgrid-pairs-with: the same queries through find_pairs_with.
    for (const World world : {World::unbounded, World::bounded}) {
        for (const double cell : o.q_cells) {
            for (uint32_t t : o.threads) {
                const std::string name = std::string("Q/hashgrid-pairs-with/") +
                                         (world == World::bounded ? "bounded" : "unbounded") + "/cell:" + number(cell) +
                                         moved_tag + "/threads:" + std::to_string(t);
                const TbbBackend* tbb = backends[t].get();
                hashgrid_support::register_frames(name, o.frames, [=](benchmark::State& state) {
                    bench_box_pairs_with(state, name, cell, world, *tbb);
                });
            }
        }
    }
#if HASHGRID_BENCH_BOX2D
    hashgrid_support::register_frames("Q/box2d/tree/threads:1", o.frames, [](benchmark::State& state) {
        bench_box2d_queries(state, "Q/box2d/tree/threads:1");
    });
#endif
    return hashgrid_support::run_benchmarks();
}

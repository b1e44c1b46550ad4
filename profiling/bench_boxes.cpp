// bench_boxes: the box broad phase (all overlapping pairs) and batched box
// queries, side by side with Bullet, FCL and Box2D.
//
// Scenes (n boxes, default 100k; sizes keep the overlap count for any n):
//   B3  3D boxes, every edge lognormal (median 1, sigma 0.7: a few edges reach
//       ~20), centres uniform in a cube sized so a box overlaps ~6 others
//   B2  the same in 2D (square sized for ~6 overlaps per box)
//   Q   2D, the seed video's setting (seeds/003: 100k clients in
//       [-1000, 1000]^2, 1000 random queries): small boxes, edges uniform in
//       [5, 15]; 1000 queries (half boxes, half circles, half-extent or radius
//       uniform in [5, 20], centres uniform), then every object moves a
//       little and the index is updated
// Scene generation uses the bench's own integer generator and a deterministic
// lognormal (polar method with its own log and exp from +, *, / only), and
// every coordinate and step is a multiple of a power of two small enough that
// moving a box is exact in float: every system sees bit-identical boxes.
//
// Frames: frame 0 is the initial build (peers insert every box); in every
// later frame each box moves by a step that depends on its identity and the
// frame only (uniform in [-step, step] per axis around its frame-0 place,
// step = 0.05 median edges for B3/B2, 0.5 for Q). Frames 1..warm-up are not
// measured. Pair sets of frame 0 and of the last frame are compared exactly
// (sorted (a, b) lists) with the bench's own sweep-and-prune oracle; Q's
// query results are compared with brute force on a sample of queries, and
// between all systems on every query.
//
// Peers (single-threaded libraries, run on one thread):
//   Bullet btDbvtBroadphase: createProxy for every box, then per frame setAabb
//     for every proxy + calculateOverlappingPairs; by default each setAabb that
//     leaves its fat leaf collides it with both trees at once, with
//     m_deferedcollide (a second row) calculateOverlappingPairs collides the
//     trees with each other instead. Its pair cache is
//     persistent and built on fattened leaves (gDbvtMargin, velocity
//     prediction), and stale pairs leave it only a few per cent per frame:
//     its candidates are filtered by exact overlap (timed). "Static" is a
//     frame where nothing moved (calculateOverlappingPairs + filter).
//   FCL DynamicAABBTreeCollisionManager / SpatialHashingCollisionManager:
//     CollisionObjects with Box geometry (their AABB equals the input box
//     bit for bit: checked), per frame setTranslation + computeAABB for every
//     object, update(), collide() with a callback that only records pairs
//     whose boxes overlap (no narrow phase). The spatial hash reports every
//     pair of objects sharing a hash bucket, so its candidates are filtered;
//     its table gets one bucket per cell of the scene (no bucket aliasing).
//   Box2D b2DynamicTree (B2 and Q): CreateProxy / MoveProxy (fat AABBs,
//     b2_aabbExtension 0.1), then one Query per proxy with its exact box,
//     keeping j > i that overlap exactly.
//
//   bench_boxes [--n N] [--scenes B3,B2,Q] [--threads 1,2] [--frames F]
//               [--warmup W] [--peer-frames F] [--peer-warmup W]
//               [--cells 2,3] [--q-cells 16,32] [--large 64]
//               [--modes unbounded,bounded]
//               [--peers bullet,bullet-deferred,fcl-tree,fcl-hash,box2d,none]
//               [--fcl-hash-cell C] [--queries Q] [--retries R] [--quiet-load L]
//
// Exit status 1 when a result set differs from the oracle's (or between systems).

#include "hashgrid/box_grid.h"
#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/machine_load.h"
#include "hashgrid_support/random.h"
#include "hashgrid_support/timing.h"

#if HASHGRID_BENCH_BOX_QUERIES
#include "hashgrid/box_queries.h"
#endif

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
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using hashgrid::Pair;
using hashgrid::PairResult;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::World;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::now_ns;
using hashgrid::platform::TbbBackend;
using hashgrid_support::all_in;
using hashgrid_support::cpu_model;
using hashgrid_support::format_spread;
using hashgrid_support::kSplitMixGamma;
using hashgrid_support::load_average;
using hashgrid_support::mix64;
using hashgrid_support::OtherLoad;
using hashgrid_support::parse_double;
using hashgrid_support::parse_u32;
using hashgrid_support::parse_u32_list;
using hashgrid_support::split_list;
using hashgrid_support::SplitMix64;
using hashgrid_support::spread;
using hashgrid_support::Spread;

// ---------------------------------------------------------------------------
// Pinned randomness (support/'s splitmix64, 53-bit doubles) and a
// deterministic lognormal (no libm transcendental function: the same scene
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
// Statistics.

/// Three decimals, one from 100 ms up.
std::string fmt_spread(const Spread& s) { return format_spread(s, s.median >= 100.0 ? 1 : 3); }

// ---------------------------------------------------------------------------
// Options.

struct Options {
    uint32_t n = 100000;
    std::vector<std::string> scenes{"B3", "B2", "Q"};
    std::vector<uint32_t> threads{1, 2};
    uint32_t frames = 9; ///< Hashgrid: measured frames (after frame 0 and the warm-up).
    uint32_t warmup = 2;
    uint32_t peer_frames = 5; ///< Peers are slow: fewer frames.
    uint32_t peer_warmup = 1;
    std::vector<double> cells{2.0, 3.0};     ///< B3/B2 cell sizes (median edge = 1; 1 is ~4x slower).
    std::vector<double> q_cells{16.0, 32.0}; ///< Q cell sizes.
    std::vector<std::string> modes{"unbounded", "bounded"};
    std::vector<std::string> peers{"bullet", "bullet-deferred", "fcl-tree", "fcl-hash", "box2d"};
    std::vector<uint32_t> large{64}; ///< BoxGridConfig::large_object_cells values (B3/B2).
    double fcl_hash_cell = 2.0;
    uint32_t queries = 1000;
    double sigma = 0.7;
    double overlaps = 6.0; ///< Model mean overlaps per box (B3/B2), sets the world size.
    double quiet_load = 0.15;
    uint32_t retries = 2;
};

bool parse_doubles(const char* text, std::vector<double>& values) {
    values.clear();
    for (const std::string& item : split_list(text)) {
        double v = 0.0;
        if (!parse_double(item.c_str(), v) || v <= 0.0) return false;
        values.push_back(v);
    }
    return !values.empty();
}

bool has(const std::vector<std::string>& items, const char* item) {
    return std::find(items.begin(), items.end(), item) != items.end();
}

bool parse_options(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        bool ok = i + 1 < argc;
        if (!ok) {
        } else if (arg == "--n") {
            ok = parse_u32(argv[++i], o.n) && o.n >= 1000;
        } else if (arg == "--scenes") {
            o.scenes = split_list(argv[++i]);
            ok = all_in(o.scenes, {"B3", "B2", "Q"});
        } else if (arg == "--threads") {
            ok = parse_u32_list(argv[++i], 1, 64, o.threads);
        } else if (arg == "--frames") {
            ok = parse_u32(argv[++i], o.frames) && o.frames >= 1;
        } else if (arg == "--warmup") {
            ok = parse_u32(argv[++i], o.warmup);
        } else if (arg == "--peer-frames") {
            ok = parse_u32(argv[++i], o.peer_frames) && o.peer_frames >= 1;
        } else if (arg == "--peer-warmup") {
            ok = parse_u32(argv[++i], o.peer_warmup);
        } else if (arg == "--cells") {
            ok = parse_doubles(argv[++i], o.cells);
        } else if (arg == "--q-cells") {
            ok = parse_doubles(argv[++i], o.q_cells);
        } else if (arg == "--modes") {
            o.modes = split_list(argv[++i]);
            ok = all_in(o.modes, {"unbounded", "bounded"});
        } else if (arg == "--peers") {
            o.peers = split_list(argv[++i]);
            ok = o.peers.empty() ||
                 all_in(o.peers, {"bullet", "bullet-deferred", "fcl-tree", "fcl-hash", "box2d", "none"});
        } else if (arg == "--large") {
            ok = parse_u32_list(argv[++i], 1, 0x7fffffffu, o.large);
        } else if (arg == "--fcl-hash-cell") {
            ok = parse_double(argv[++i], o.fcl_hash_cell) && o.fcl_hash_cell > 0.0;
        } else if (arg == "--queries") {
            ok = parse_u32(argv[++i], o.queries) && o.queries >= 2;
        } else if (arg == "--sigma") {
            ok = parse_double(argv[++i], o.sigma) && o.sigma > 0.0 && o.sigma < 2.0;
        } else if (arg == "--overlaps") {
            ok = parse_double(argv[++i], o.overlaps) && o.overlaps > 0.0;
        } else if (arg == "--retries") {
            ok = parse_u32(argv[++i], o.retries);
        } else if (arg == "--quiet-load") {
            ok = parse_double(argv[++i], o.quiet_load) && o.quiet_load >= 0.0;
        } else {
            ok = false;
        }
        if (!ok) {
            std::fprintf(stderr,
                         "usage: %s [--n N>=1000] [--scenes B3,B2,Q] [--threads 1,2] [--frames F] [--warmup W]\n"
                         "          [--peer-frames F] [--peer-warmup W] [--cells 2,3] [--q-cells 16,32]\n"
                         "          [--large 8,64,...] [--modes unbounded,bounded] [--peers "
                         "bullet,bullet-deferred,fcl-tree,fcl-hash,box2d,none]\n"
                         "          [--fcl-hash-cell C] [--queries Q] [--sigma S] [--overlaps K] [--retries R]\n"
                         "          [--quiet-load L]\n",
                         argv[0]);
            return false;
        }
    }
    return true;
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
    std::string description;
};

/// Largest coordinate magnitude -> quantum: a float holds every multiple of
/// 2^(k-24) below 2^k, so sums of such values below 2^k are exact.
double quantum_for(double bound) {
    int k = 0;
    std::frexp(bound, &k); // bound < 2^k
    return std::ldexp(1.0, k - 24);
}

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
    s.step = 0.05;
    const double bound = s.side + 64.0; // centres in [0, side], half edges < 32 (e < 64 needs a 6-sigma draw)
    s.quantum = quantum_for(bound);
    s.step = quantize(s.step, s.quantum);
    SplitMix64 rng(0xb0c5000u + dims);
    double lo_all[3] = {1e300, 1e300, 1e300};
    double hi_all[3] = {-1e300, -1e300, -1e300};
    double max_edge = 0.0;
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
            max_edge = std::max(max_edge, hi - lo);
        }
    }
    for (uint32_t a = 0; a < dims; ++a) {
        s.world_lo[a] = static_cast<float>(lo_all[a] - s.step);
        s.world_hi[a] = static_cast<float>(hi_all[a] + s.step);
    }
    char text[320];
    std::snprintf(text, sizeof(text),
                  "%u boxes in %uD, edges lognormal (median 1, sigma %.2f, mean %.3f, largest %.2f), centres uniform "
                  "in [0, %.2f]^%u (%.4g boxes per unit %s), model %.1f overlaps per box, step %.3g",
                  n, dims, sigma, mean_edge, max_edge, s.side, dims,
                  static_cast<double>(n) / std::pow(s.side, static_cast<double>(dims)), dims == 3 ? "volume" : "area",
                  overlaps, s.step);
    s.description = text;
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
    char text[320];
    std::snprintf(text, sizeof(text),
                  "%u boxes in 2D, edges uniform in [%g, %g], centres uniform in [-%g, %g]^2 (%.4g per unit area), "
                  "step %.3g",
                  n, kQEdgeLo, kQEdgeHi, kQHalfWorld, kQHalfWorld, static_cast<double>(n) / (s.side * s.side), s.step);
    s.description = text;
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
    for (uint32_t i = 0; i < out.n; ++i) {
        const uint64_t h = frame == 0 ? 0 : mix64((static_cast<uint64_t>(frame) << 32 | i) * kSplitMixGamma + 7);
        for (uint32_t a = 0; a < out.dimensions; ++a) {
            const double u = static_cast<double>((h >> (21 * a)) & 0x1fffff) * 0x1.0p-21; // [0, 1)
            const double d = frame == 0 ? 0.0 : quantize((2.0 * u - 1.0) * s.step, s.quantum);
            out.lo[a][i] = static_cast<float>(static_cast<double>(s.base.lo[a][i]) + d);
            out.hi[a][i] = static_cast<float>(static_cast<double>(s.base.hi[a][i]) + d);
        }
    }
}

// ---------------------------------------------------------------------------
// Pair sets and the oracle.

using PairSet = std::vector<uint64_t>; ///< Sorted (a << 32 | b), a < b.

uint64_t pair_key(uint32_t i, uint32_t j) {
    return i < j ? static_cast<uint64_t>(i) << 32 | j : static_cast<uint64_t>(j) << 32 | i;
}

/// Sweep and prune on x (sort by (min x, index), scan forward while the
/// next min x <= this max x), the bench's own oracle and reference timing.
PairSet sweep_and_prune(const Boxes& b, double* ms = nullptr) {
    const uint64_t start = now_ns();
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
    if (ms != nullptr) *ms = elapsed_ms(start);
    std::sort(out.begin(), out.end());
    return out;
}

/// Compares a pair set with the oracle's; prints what differs.
bool same_pairs(const char* who, const PairSet& got, const PairSet& want) {
    if (got == want) return true;
    std::vector<uint64_t> missing, extra;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
    size_t dup = 0;
    for (size_t k = 1; k < got.size(); ++k)
        dup += got[k] == got[k - 1] ? 1 : 0;
    std::printf("    MISMATCH %s: %zu pairs vs oracle %zu: %zu missing, %zu extra, %zu duplicates", who, got.size(),
                want.size(), missing.size(), extra.size(), dup);
    if (!missing.empty())
        std::printf(" (first missing %u-%u)", static_cast<uint32_t>(missing[0] >> 32),
                    static_cast<uint32_t>(missing[0]));
    if (!extra.empty())
        std::printf(" (first extra %u-%u)", static_cast<uint32_t>(extra[0] >> 32), static_cast<uint32_t>(extra[0]));
    std::printf("\n");
    return false;
}

/// Oracle pair sets per frame, computed on first use.
class Oracle {
public:
    explicit Oracle(const Scene& s) : scene_(s) {}
    const PairSet& pairs(uint32_t frame) {
        auto it = sets_.find(frame);
        if (it == sets_.end()) {
            Boxes b;
            frame_boxes(scene_, frame, b);
            it = sets_.emplace(frame, sweep_and_prune(b)).first;
        }
        return it->second;
    }

private:
    const Scene& scene_;
    std::map<uint32_t, PairSet> sets_;
};

// ---------------------------------------------------------------------------
// Rows of the tables.

struct Row {
    std::string system;
    std::string setting;
    uint32_t threads = 1;
    double build_ms = 0.0;    ///< Frame 0 (peers: insert everything + pairs).
    Spread update;            ///< Moved frames: update / rebuild part.
    Spread pairs;             ///< Moved frames: pair part (where separable).
    Spread total;             ///< Moved frames: update + pairs.
    Spread still;             ///< Bullet: a frame where nothing moved.
    uint64_t pair_count0 = 0; ///< Frame 0, exact pairs (the same frame for every system).
    uint64_t pair_count = 0;  ///< Last frame, exact pairs.
    uint64_t candidates = 0;  ///< Last frame, what the peer reported before the exact filter.
    uint64_t order = 0;       ///< Hashgrid: hash of the output order (last frame).
    bool verified = false;    ///< Frame 0 and last frame equal to the oracle.
    double other_load = 0.0;
    std::string note;
};

void print_row(const Row& r) {
    std::printf("  %-28s %-22s %u thr: build %.1f ms, frame %s ms (update %s + pairs %s), %llu pairs (frame 0), %llu "
                "(last)",
                r.system.c_str(), r.setting.c_str(), r.threads, r.build_ms, fmt_spread(r.total).c_str(),
                fmt_spread(r.update).c_str(), fmt_spread(r.pairs).c_str(),
                static_cast<unsigned long long>(r.pair_count0), static_cast<unsigned long long>(r.pair_count));
    if (r.candidates != r.pair_count) std::printf(" (%llu candidates)", static_cast<unsigned long long>(r.candidates));
    std::printf(", %s, other load %.2f\n", r.verified ? "exact" : "NOT VERIFIED", r.other_load);
    std::fflush(stdout);
}

/// Frame timing loop shared by all systems: frame 0 is `build`, frames
/// 1..warmup are unmeasured, then `frames` measured ones. `step(frame, boxes,
/// update_ms, pairs_ms, set)` runs one frame and fills `set` (unsorted) when
/// asked to (frame 0 and the last frame: outside the timed part).
template <typename Step>
bool run_frames(const Scene& scene, Oracle& oracle, uint32_t warmup, uint32_t frames, Row& row, Step&& step) {
    Boxes boxes;
    std::vector<double> update_ms, pairs_ms, total_ms;
    const uint32_t last = warmup + frames;
    bool ok = true;
    for (uint32_t f = 0; f <= last; ++f) {
        frame_boxes(scene, f, boxes);
        const bool check = f == 0 || f == last;
        PairSet set;
        double t_update = 0.0, t_pairs = 0.0;
        if (!step(f, boxes, t_update, t_pairs, check ? &set : nullptr)) return false;
        if (f == 0) row.build_ms = t_update + t_pairs;
        if (f > warmup) {
            update_ms.push_back(t_update);
            pairs_ms.push_back(t_pairs);
            total_ms.push_back(t_update + t_pairs);
        }
        if (check) {
            std::sort(set.begin(), set.end());
            const std::string who = row.system + " " + row.setting + " frame " + std::to_string(f);
            ok = same_pairs(who.c_str(), set, oracle.pairs(f)) && ok;
            if (f == 0) row.pair_count0 = set.size();
            if (f == last) row.pair_count = set.size();
        }
    }
    row.update = spread(update_ms);
    row.pairs = spread(pairs_ms);
    row.total = spread(total_ms);
    row.verified = ok;
    return true;
}

/// Runs a series up to 1 + retries times while other processes load the
/// machine and keeps the least loaded one. `series(row)` returns false on a hard failure.
template <typename Series>
bool measured(const Options& o, Row& best, Series&& series) {
    for (uint32_t attempt = 0;; ++attempt) {
        Row row = best;
        const OtherLoad load;
        if (!series(row)) return false;
        row.other_load = load.cores();
        if (attempt == 0 || row.other_load < best.other_load) best = row;
        if (row.other_load <= o.quiet_load || attempt >= o.retries) break;
        std::printf("  %s %s %u thr: other load %.2f cores, rerunning\n", row.system.c_str(), row.setting.c_str(),
                    row.threads, row.other_load);
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::seconds(5));
    }
    return true;
}

// ---------------------------------------------------------------------------
// Hashgrid BoxGrid (all pairs).

#if HASHGRID_BENCH_BOX_GRID
hashgrid::BoxGridConfig box_config(const Scene& s, double cell, World world, uint32_t large, uint32_t entries,
                                   uint64_t max_pairs) {
    hashgrid::BoxGridConfig c;
    c.dimensions = s.base.dimensions;
    c.cell_size = static_cast<float>(cell);
    c.world = world;
    c.max_objects = s.base.n;
    c.max_cell_entries = entries;
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

/// A box grid regrown (re-initialised) when a frame needs more entries or pairs.
struct BoxGridSlot {
    std::unique_ptr<hashgrid::BoxGrid> grid;
    hashgrid::BoxGridConfig config;
    uint64_t bytes = 0;

    bool init(const hashgrid::BoxGridConfig& c) {
        const hashgrid::MemoryRequirements req = hashgrid::BoxGrid::memory_requirements(c);
        if (!req.status.ok()) {
            std::printf("BoxGrid::memory_requirements: %s (%s)\n", hashgrid::to_string(req.status.code),
                        req.status.message);
            return false;
        }
        grid = std::make_unique<hashgrid::BoxGrid>();
        const Status s = grid->init_allocate(c);
        if (!s.ok()) {
            std::printf("BoxGrid::init: %s (%s)\n", hashgrid::to_string(s.code), s.message);
            return false;
        }
        config = c;
        bytes = req.bytes;
        return true;
    }

    /// Rebuild, re-initialising with the exact count on entry_capacity.
    Status rebuild(const Boxes& b, const hashgrid::ThreadBackend& backend, bool& regrown) {
        for (;;) {
            const Status s = grid->rebuild(b.spans(), backend);
            if (s.code != StatusCode::entry_capacity) return s;
            hashgrid::BoxGridConfig c = config;
            c.max_cell_entries = static_cast<uint32_t>(std::min<uint64_t>(s.needed + s.needed / 8 + 1024, 0x7fffffffu));
            if (!init(c)) return s;
            regrown = true;
        }
    }
};

bool run_box_grid(const Scene& scene, Oracle& oracle, const Options& o, double cell, uint32_t large, World world,
                  const hashgrid::ThreadBackend& backend, uint32_t threads, Row& row, std::vector<Pair>& out,
                  uint64_t& entries_out, uint64_t& bytes_out) {
    BoxGridSlot slot;
    const uint64_t expected = oracle.pairs(0).size();
    if (!slot.init(box_config(scene, cell, world, large, scene.base.n * 4 + 1024, expected + expected / 4 + 4096)))
        return false;
    // First pass outside the measurement: size the grid (entries, pairs) for this scene.
    for (bool sizing = true; sizing;) {
        sizing = false;
        Boxes b;
        frame_boxes(scene, 0, b);
        bool regrown = false;
        const Status s = slot.rebuild(b, backend, regrown);
        if (!s.ok()) {
            std::printf("BoxGrid::rebuild: %s (%s), needed %llu\n", hashgrid::to_string(s.code), s.message,
                        static_cast<unsigned long long>(s.needed));
            return false;
        }
        out.resize(static_cast<size_t>(slot.config.max_pairs));
        const PairResult pr = slot.grid->find_pairs(out.data(), out.size(), backend);
        if (pr.status.code == StatusCode::pair_capacity || pr.status.code == StatusCode::output_too_small) {
            hashgrid::BoxGridConfig c = slot.config;
            c.max_pairs = pr.total + pr.total / 4 + 4096;
            if (!slot.init(c)) return false;
            sizing = true;
        }
    }
    out.resize(static_cast<size_t>(slot.config.max_pairs));
    row.system = "Hashgrid BoxGrid";
    char setting[64];
    std::snprintf(setting, sizeof(setting), "%s, cell %g", world == World::bounded ? "bounded" : "unbounded", cell);
    row.setting = setting;
    if (o.large.size() > 1) row.setting += ", large " + std::to_string(large);
    row.threads = threads;
    const bool ran = run_frames(
        scene, oracle, o.warmup, o.frames, row,
        [&](uint32_t, const Boxes& b, double& t_update, double& t_pairs, PairSet* set) {
            bool regrown = false;
            uint64_t start = now_ns();
            const Status s = slot.rebuild(b, backend, regrown);
            t_update = elapsed_ms(start);
            if (!s.ok()) {
                std::printf("BoxGrid::rebuild: %s (%s)\n", hashgrid::to_string(s.code), s.message);
                return false;
            }
            if (regrown) row.note = "regrown during the series";
            start = now_ns();
            PairResult pr = slot.grid->find_pairs(out.data(), out.size(), backend);
            t_pairs = elapsed_ms(start);
            if (pr.status.code == StatusCode::pair_capacity || pr.status.code == StatusCode::output_too_small) {
                // Moved boxes found more pairs than the sized capacity: regrow and redo (timed anew).
                hashgrid::BoxGridConfig c = slot.config;
                c.max_pairs = pr.total + pr.total / 4 + 4096;
                if (!slot.init(c)) return false;
                out.resize(static_cast<size_t>(c.max_pairs));
                row.note = "regrown during the series";
                start = now_ns();
                slot.rebuild(b, backend, regrown);
                t_update = elapsed_ms(start);
                start = now_ns();
                pr = slot.grid->find_pairs(out.data(), out.size(), backend);
                t_pairs = elapsed_ms(start);
            }
            if (!pr.status.ok()) {
                std::printf("BoxGrid::find_pairs: %s (%s)\n", hashgrid::to_string(pr.status.code), pr.status.message);
                return false;
            }
            if (set != nullptr) {
                set->reserve(pr.written);
                for (uint64_t p = 0; p < pr.written; ++p)
                    set->push_back(pair_key(out[p].a, out[p].b));
                row.order = order_hash(out.data(), pr.written);
                row.candidates = pr.written;
            }
            return true;
        });
    entries_out = slot.grid->entry_count();
    bytes_out = slot.bytes;
    return ran;
}
#endif

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
    uint64_t pairs(const Boxes& b, std::vector<uint64_t>& out, uint64_t& candidates) {
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
        return out.size();
    }
};

bool run_bullet(const Scene& scene, Oracle& oracle, const Options& o, bool deferred, Row& row) {
    row.system = "Bullet btDbvtBroadphase";
    row.setting = deferred ? "m_deferedcollide = true" : "default (collide in setAabb)";
    std::unique_ptr<BulletBroadphase> bullet;
    std::vector<uint64_t> found;
    found.reserve(oracle.pairs(0).size() * 2);
    const bool ran = run_frames(scene, oracle, o.peer_warmup, o.peer_frames, row,
                                [&](uint32_t f, const Boxes& b, double& t_update, double& t_pairs, PairSet* set) {
                                    uint64_t start = now_ns();
                                    if (f == 0) {
                                        bullet = std::make_unique<BulletBroadphase>();
                                        bullet->bp->m_deferedcollide = deferred;
                                        bullet->insert(b);
                                    } else {
                                        bullet->move(b);
                                    }
                                    t_update = elapsed_ms(start);
                                    start = now_ns();
                                    bullet->pairs(b, found, row.candidates);
                                    t_pairs = elapsed_ms(start);
                                    if (set != nullptr) *set = found;
                                    return true;
                                });
    // Frames where nothing moved: the persistent cache's strength.
    Boxes last;
    frame_boxes(scene, o.peer_warmup + o.peer_frames, last);
    std::vector<double> still;
    uint64_t candidates = 0;
    for (int k = 0; k < 3; ++k) {
        const uint64_t start = now_ns();
        bullet->pairs(last, found, candidates);
        still.push_back(elapsed_ms(start));
    }
    row.still = spread(still);
    return ran;
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
    void create(const Boxes& b) {
        objects.clear();
        pointers.clear();
        aabb_mismatches = 0;
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
bool run_fcl(const Scene& scene, Oracle& oracle, const Options& o, Row& row, MakeManager&& make_manager) {
    FclObjects objects;
    std::unique_ptr<Manager> manager;
    std::vector<uint64_t> found;
    found.reserve(oracle.pairs(0).size() * 2);
    const bool ran = run_frames(scene, oracle, o.peer_warmup, o.peer_frames, row,
                                [&](uint32_t f, const Boxes& b, double& t_update, double& t_pairs, PairSet* set) {
                                    uint64_t start = 0;
                                    if (f == 0) {
                                        objects.create(b);
                                        start = now_ns();
                                        manager = make_manager();
                                        manager->registerObjects(objects.pointers);
                                        manager->setup();
                                    } else {
                                        start = now_ns();
                                        objects.move(b);
                                        manager->update();
                                    }
                                    t_update = elapsed_ms(start);
                                    start = now_ns();
                                    found.clear();
                                    FclCollect collect{&b, &found, 0};
                                    manager->collide(&collect, fcl_collect);
                                    t_pairs = elapsed_ms(start);
                                    row.candidates = collect.candidates;
                                    if (set != nullptr) *set = found;
                                    return true;
                                });
    if (objects.aabb_mismatches != 0) {
        row.note = "AABBs differ from the input boxes on " + std::to_string(objects.aabb_mismatches) + " axes";
    }
    return ran;
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

bool run_box2d_pairs(const Scene& scene, Oracle& oracle, const Options& o, Row& row) {
    row.system = "Box2D b2DynamicTree";
    row.setting = "Query per proxy";
    std::unique_ptr<Box2dTree> tree;
    std::vector<uint64_t> found;
    found.reserve(oracle.pairs(0).size() * 2);
    return run_frames(scene, oracle, o.peer_warmup, o.peer_frames, row,
                      [&](uint32_t f, const Boxes& b, double& t_update, double& t_pairs, PairSet* set) {
                          uint64_t start = now_ns();
                          if (f == 0) {
                              tree = std::make_unique<Box2dTree>();
                              tree->insert(b);
                          } else {
                              tree->move(b);
                          }
                          t_update = elapsed_ms(start);
                          start = now_ns();
                          found.clear();
                          Box2dPairCollector collect{tree.get(), &b, &found, 0, 0};
                          for (uint32_t i = 0; i < b.n; ++i) {
                              collect.i = i;
                              tree->tree.Query(&collect, box2d_aabb(b, i, 1.0f));
                          }
                          t_pairs = elapsed_ms(start);
                          row.candidates = collect.candidates;
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

std::vector<Query> make_queries(const Scene& s, uint32_t count) {
    SplitMix64 rng(0x9e5e3u + 1);
    std::vector<Query> queries(count);
    for (uint32_t k = 0; k < count; ++k) {
        Query& q = queries[k];
        q.circle = k % 2 == 1;
        q.x = static_cast<float>(quantize(-kQHalfWorld + s.side * rng.unit_double(), s.quantum));
        q.y = static_cast<float>(quantize(-kQHalfWorld + s.side * rng.unit_double(), s.quantum));
        q.hx = static_cast<float>(quantize(kQQueryLo + (kQQueryHi - kQQueryLo) * rng.unit_double(), s.quantum));
        q.hy = q.circle
                   ? q.hx
                   : static_cast<float>(quantize(kQQueryLo + (kQQueryHi - kQQueryLo) * rng.unit_double(), s.quantum));
    }
    return queries;
}

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
    std::vector<uint32_t> start;
    std::vector<uint32_t> object;
    void canonicalize() {
        for (size_t k = 0; k + 1 < start.size(); ++k)
            std::sort(object.begin() + start[k], object.begin() + start[k + 1]);
    }
};

QueryResults brute_force_queries(const std::vector<Query>& queries, const Boxes& b, uint32_t stride) {
    QueryResults r;
    r.start.push_back(0);
    for (size_t k = 0; k < queries.size(); k += stride) {
        for (uint32_t i = 0; i < b.n; ++i) {
            if (query_hits(queries[k], b, i)) r.object.push_back(i);
        }
        r.start.push_back(static_cast<uint32_t>(r.object.size()));
    }
    return r;
}

/// Compares a full result set with brute force on every stride-th query.
bool check_queries(const char* who, const QueryResults& got, const QueryResults& sample, uint32_t stride) {
    uint32_t bad = 0;
    for (size_t s = 0; s + 1 < sample.start.size(); ++s) {
        const size_t k = s * stride;
        const bool same =
            std::equal(got.object.begin() + got.start[k], got.object.begin() + got.start[k + 1],
                       sample.object.begin() + sample.start[s], sample.object.begin() + sample.start[s + 1]);
        bad += same ? 0 : 1;
    }
    if (bad != 0) std::printf("    MISMATCH %s: %u sampled queries differ from brute force\n", who, bad);
    return bad == 0;
}

struct QueryRow {
    std::string system;
    std::string setting;
    uint32_t threads = 1;
    double build_ms = 0.0;
    Spread reindex;
    Spread queries;
    uint64_t results = 0; ///< Last frame.
    bool verified = false;
    double other_load = 0.0;
};

void print_query_row(const QueryRow& r) {
    std::printf("  %-28s %-22s %u thr: build %.2f ms, re-index %s ms, queries %s ms, %llu results, %s, other "
                "load %.2f\n",
                r.system.c_str(), r.setting.c_str(), r.threads, r.build_ms, fmt_spread(r.reindex).c_str(),
                fmt_spread(r.queries).c_str(), static_cast<unsigned long long>(r.results),
                r.verified ? "exact" : "NOT VERIFIED", r.other_load);
    std::fflush(stdout);
}

/// Frames for Q: frame 0 builds, then re-index + the query batch per frame.
/// Results of the last frame are checked against brute force (sample) and
/// against `reference` (all queries) when it is not empty.
template <typename Step>
bool run_query_frames(const Scene& scene, uint32_t warmup, uint32_t frames, const QueryResults& sample, uint32_t stride,
                      QueryResults& last_results, QueryRow& row, Step&& step) {
    Boxes boxes;
    std::vector<double> reindex_ms, query_ms;
    const uint32_t last = warmup + frames;
    for (uint32_t f = 0; f <= last; ++f) {
        frame_boxes(scene, f, boxes);
        double t_index = 0.0, t_queries = 0.0;
        QueryResults results;
        if (!step(f, boxes, t_index, t_queries, results)) return false;
        if (f == 0) row.build_ms = t_index;
        if (f > warmup) {
            reindex_ms.push_back(t_index);
            query_ms.push_back(t_queries);
        }
        if (f == last) {
            results.canonicalize();
            const std::string who = row.system + " " + row.setting;
            row.verified = check_queries(who.c_str(), results, sample, stride);
            if (!last_results.start.empty() &&
                (last_results.start != results.start || last_results.object != results.object)) {
                std::printf("    MISMATCH %s: results differ from the first system's\n", who.c_str());
                row.verified = false;
            }
            row.results = results.object.size();
            if (last_results.start.empty()) last_results = std::move(results);
        }
    }
    row.reindex = spread(reindex_ms);
    row.queries = spread(query_ms);
    return true;
}

#if HASHGRID_BENCH_BOX2D
struct Box2dQueryCollector {
    const Box2dTree* tree = nullptr;
    const Boxes* boxes = nullptr;
    const Query* query = nullptr;
    std::vector<uint32_t>* out = nullptr;
    bool QueryCallback(int32 id) {
        const uint32_t i = tree->object(id);
        if (query_hits(*query, *boxes, i)) out->push_back(i);
        return true;
    }
};
#endif

} // namespace

int main(int argc, char** argv) {
    Options o;
    if (!parse_options(argc, argv, o)) return 2;

    std::printf("bench_boxes: n = %u, Hashgrid %u warm-up + %u measured frames, peers %u + %u, CPU: %s, %u hardware "
                "threads\n",
                o.n, o.warmup, o.frames, o.peer_warmup, o.peer_frames, cpu_model().c_str(),
                std::thread::hardware_concurrency());
    std::printf("load average at start: %s\n", load_average().c_str());
    std::printf("peers built in:");
#if HASHGRID_BENCH_BULLET
    std::printf(" Bullet %s", HASHGRID_BENCH_BULLET_VERSION);
#else
    std::printf(" (Bullet missing: not measured)");
#endif
#if HASHGRID_BENCH_FCL
    std::printf(", FCL %s", FCL_VERSION);
#else
    std::printf(", (FCL missing: not measured)");
#endif
#if HASHGRID_BENCH_BOX2D
    std::printf(", Box2D %d.%d.%d", b2_version.major, b2_version.minor, b2_version.revision);
#else
    std::printf(", (Box2D missing: not measured)");
#endif
#if !HASHGRID_BENCH_BOX_GRID
    std::printf("; Hashgrid BoxGrid not built yet (core/src/box_grid.cpp missing at configure time)");
#endif
#if !HASHGRID_BENCH_BOX_QUERIES
    std::printf("; Hashgrid box queries not built yet (box_queries.h missing at configure time)");
#endif
    std::printf("\n");

    std::vector<std::unique_ptr<TbbBackend>> backends;
    for (uint32_t t : o.threads)
        backends.push_back(std::make_unique<TbbBackend>(t));

    bool consistent = true;
    std::vector<Row> rows;
    std::vector<std::pair<std::string, Row>> scene_rows; // (scene, row)
    std::vector<QueryRow> query_rows;
    std::vector<Pair> out;

    for (const std::string& scene_name : o.scenes) {
        if (scene_name == "Q") continue;
        const Scene scene = make_box_scene(scene_name, o.n, o.sigma, o.overlaps);
        Oracle oracle(scene);
        double sap_ms = 0.0;
        {
            Boxes b;
            frame_boxes(scene, 0, b);
            sweep_and_prune(b, &sap_ms);
        }
        const uint64_t pairs0 = oracle.pairs(0).size();
        std::printf("\n%s: %s\n  oracle (sweep and prune on x): %llu pairs in frame 0 (%.2f overlaps per box), %.1f ms "
                    "on 1 thread\n",
                    scene.name.c_str(), scene.description.c_str(), static_cast<unsigned long long>(pairs0),
                    2.0 * static_cast<double>(pairs0) / scene.base.n, sap_ms);
        std::fflush(stdout);
        {
            Row sap;
            sap.system = "sweep and prune (oracle)";
            sap.setting = "sort x + scan, bench's own";
            sap.build_ms = sap_ms;
            sap.pair_count0 = pairs0;
            measured(o, sap, [&](Row& row) {
                std::vector<double> ms;
                for (uint32_t k = 0; k < 3; ++k) {
                    Boxes b;
                    frame_boxes(scene, o.peer_warmup + o.peer_frames, b);
                    double t = 0.0;
                    const PairSet set = sweep_and_prune(b, &t);
                    ms.push_back(t);
                    row.pair_count = set.size();
                    row.candidates = set.size();
                    row.verified = true;
                }
                row.total = spread(ms);
                row.pairs = row.total;
                return true;
            });
            print_row(sap);
            scene_rows.emplace_back(scene.name, sap);
        }

#if HASHGRID_BENCH_BOX_GRID
        for (const std::string& mode : o.modes) {
            const World world = mode == "bounded" ? World::bounded : World::unbounded;
            for (size_t combo = 0; combo < o.cells.size() * o.large.size(); ++combo) {
                const double cell = o.cells[combo / o.large.size()];
                const uint32_t large = o.large[combo % o.large.size()];
                for (size_t b = 0; b < backends.size(); ++b) {
                    Row row;
                    uint64_t entries = 0, bytes = 0;
                    if (!measured(o, row, [&](Row& r) {
                            return run_box_grid(scene, oracle, o, cell, large, world, backends[b]->backend(),
                                                backends[b]->threads(), r, out, entries, bytes);
                        }))
                        return 1;
                    consistent = consistent && row.verified;
                    print_row(row);
                    if (b == 0)
                        std::printf("    %llu cell entries (%.2f per box), grid memory %.1f MiB\n",
                                    static_cast<unsigned long long>(entries),
                                    static_cast<double>(entries) / scene.base.n,
                                    static_cast<double>(bytes) / 1048576.0);
                    // Same output order for every thread count.
                    for (const auto& [name, other] : scene_rows) {
                        if (name == scene.name && other.system == row.system && other.setting == row.setting &&
                            other.order != row.order) {
                            std::printf("    MISMATCH: output order differs between %u and %u threads\n", other.threads,
                                        row.threads);
                            consistent = false;
                        }
                    }
                    scene_rows.emplace_back(scene.name, row);
                }
            }
        }
#endif

        // Unused in a build without any peer library (every call below is #if'd out).
        [[maybe_unused]] const auto peer = [&](const char* name, auto&& run) {
            if (!has(o.peers, name)) return;
            Row row;
            if (!measured(o, row, run)) {
                consistent = false;
                return;
            }
            consistent = consistent && row.verified;
            print_row(row);
            if (row.still.median > 0.0) std::printf("    nothing moved: %s ms\n", fmt_spread(row.still).c_str());
            if (!row.note.empty()) std::printf("    note: %s\n", row.note.c_str());
            scene_rows.emplace_back(scene.name, row);
        };
        if (scene.base.dimensions == 3) {
#if HASHGRID_BENCH_BULLET
            peer("bullet", [&](Row& row) { return run_bullet(scene, oracle, o, false, row); });
            peer("bullet-deferred", [&](Row& row) { return run_bullet(scene, oracle, o, true, row); });
#endif
#if HASHGRID_BENCH_FCL
            peer("fcl-tree", [&](Row& row) {
                row.system = "FCL DynamicAABBTree";
                row.setting = "default";
                return run_fcl<fcl::DynamicAABBTreeCollisionManagerd>(
                    scene, oracle, o, row, [] { return std::make_unique<fcl::DynamicAABBTreeCollisionManagerd>(); });
            });
            peer("fcl-hash", [&](Row& row) {
                row.system = "FCL SpatialHashing";
                char setting[64];
                const double cell = o.fcl_hash_cell;
                const fcl::Vector3d lo(scene.world_lo[0], scene.world_lo[1], scene.world_lo[2]);
                const fcl::Vector3d hi(scene.world_hi[0], scene.world_hi[1], scene.world_hi[2]);
                double cells = 1.0;
                for (int a = 0; a < 3; ++a)
                    cells *= std::ceil((hi[a] - lo[a]) / cell);
                const auto table = static_cast<unsigned int>(std::min(cells, 1.0e8));
                std::snprintf(setting, sizeof(setting), "cell %g, %u buckets", cell, table);
                row.setting = setting;
                return run_fcl<fcl::SpatialHashingCollisionManagerd<>>(scene, oracle, o, row, [=] {
                    return std::make_unique<fcl::SpatialHashingCollisionManagerd<>>(cell, lo, hi, table);
                });
            });
#endif
        } else {
#if HASHGRID_BENCH_BOX2D
            peer("box2d", [&](Row& row) { return run_box2d_pairs(scene, oracle, o, row); });
#endif
        }
    }

    if (has(o.scenes, "Q")) {
        const Scene scene = make_query_scene(o.n);
        const std::vector<Query> queries = make_queries(scene, o.queries);
        const uint32_t stride = std::max(1u, o.queries / 100);
        Boxes last_boxes;
        // Q is cheap for every system: all run Hashgrid's frame schedule and are checked on its last frame.
        frame_boxes(scene, o.warmup + o.frames, last_boxes);
        const QueryResults sample = brute_force_queries(queries, last_boxes, stride);
        std::printf("\nQ: %s\n  %u queries (half boxes, half circles, half-extent/radius uniform in [%g, %g]); "
                    "brute force on every %u-th query of the last frame: %zu results\n",
                    scene.description.c_str(), o.queries, kQQueryLo, kQQueryHi, stride, sample.object.size());
        std::fflush(stdout);
        QueryResults reference;
#if HASHGRID_BENCH_BOX2D
        if (has(o.peers, "box2d")) {
            QueryRow row;
            row.system = "Box2D b2DynamicTree";
            row.setting = "MoveProxy + Query, scale 1/16";
            const OtherLoad load;
            std::unique_ptr<Box2dTree> tree;
            const bool ran = run_query_frames(
                scene, o.warmup, o.frames, sample, stride, reference, row,
                [&](uint32_t f, const Boxes& b, double& t_index, double& t_queries, QueryResults& results) {
                    uint64_t start = now_ns();
                    if (f == 0) {
                        tree = std::make_unique<Box2dTree>();
                        tree->scale = kQBox2dScale;
                        tree->insert(b);
                    } else {
                        tree->move(b);
                    }
                    t_index = elapsed_ms(start);
                    results.start.assign(1, 0);
                    results.object.reserve(static_cast<size_t>(queries.size()) * 64);
                    start = now_ns();
                    Box2dQueryCollector collect{tree.get(), &b, nullptr, &results.object};
                    for (const Query& q : queries) {
                        collect.query = &q;
                        b2AABB aabb;
                        aabb.lowerBound = b2Vec2(q.lo_x() * kQBox2dScale, q.lo_y() * kQBox2dScale);
                        aabb.upperBound = b2Vec2(q.hi_x() * kQBox2dScale, q.hi_y() * kQBox2dScale);
                        tree->tree.Query(&collect, aabb);
                        results.start.push_back(static_cast<uint32_t>(results.object.size()));
                    }
                    t_queries = elapsed_ms(start);
                    return true;
                });
            row.other_load = load.cores();
            consistent = consistent && ran && row.verified;
            print_query_row(row);
            query_rows.push_back(row);
        }
#endif
#if HASHGRID_BENCH_BOX_GRID && HASHGRID_BENCH_BOX_QUERIES
        // Hashgrid: rebuild + prepare_box_queries (the index update), then one
        // batch of box queries and one of circle queries (query_box_batch, query_radius_batch).
        std::vector<hashgrid::QueryBox> box_queries;
        std::vector<hashgrid::QuerySphere> radius_queries;
        for (const Query& q : queries) {
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
        std::vector<uint32_t> box_out(static_cast<size_t>(box_count) * 256),
            radius_out(static_cast<size_t>(radius_count) * 256);
        for (const std::string& mode : o.modes) {
            const World world = mode == "bounded" ? World::bounded : World::unbounded;
            for (double cell : o.q_cells) {
                for (size_t b = 0; b < backends.size(); ++b) {
                    const hashgrid::ThreadBackend backend = backends[b]->backend();
                    QueryRow best;
                    for (uint32_t attempt = 0;; ++attempt) {
                        QueryRow row;
                        row.system = "Hashgrid BoxGrid + queries";
                        char setting[64];
                        std::snprintf(setting, sizeof(setting), "%s, cell %g", mode.c_str(), cell);
                        row.setting = setting;
                        row.threads = backends[b]->threads();
                        BoxGridSlot slot;
                        if (!slot.init(box_config(scene, cell, world, 64, scene.base.n * 4 + 1024, 1024))) return 1;
                        const OtherLoad load;
                        const auto batch = [&](auto&& run, std::vector<uint32_t>& buffer, const char* what) {
                            hashgrid::QueryResult r = run();
                            if (r.status.code == StatusCode::output_too_small) {
                                buffer.resize(static_cast<size_t>(r.total + r.total / 4));
                                r = run();
                            }
                            if (!r.status.ok())
                                std::printf("%s: %s (%s)\n", what, hashgrid::to_string(r.status.code),
                                            r.status.message);
                            return r.status.ok();
                        };
                        const bool ran = run_query_frames(
                            scene, o.warmup, o.frames, sample, stride, reference, row,
                            [&](uint32_t, const Boxes& boxes, double& t_index, double& t_queries,
                                QueryResults& results) {
                                bool regrown = false;
                                uint64_t start = now_ns();
                                const Status s = slot.rebuild(boxes, backend, regrown);
                                const hashgrid::BoxQueryGrid grid =
                                    hashgrid::prepare_box_queries(slot.grid->view(), backend);
                                t_index = elapsed_ms(start);
                                if (!s.ok()) {
                                    std::printf("BoxGrid::rebuild: %s (%s)\n", hashgrid::to_string(s.code), s.message);
                                    return false;
                                }
                                start = now_ns();
                                const bool ok =
                                    batch(
                                        [&] {
                                            return hashgrid::query_box_batch(grid, box_queries.data(), box_count,
                                                                             hashgrid::kAllLayers, box_offsets.data(),
                                                                             box_offsets.size(), box_out.data(),
                                                                             box_out.size(), backend);
                                        },
                                        box_out, "query_box_batch") &&
                                    batch(
                                        [&] {
                                            return hashgrid::query_radius_batch(
                                                grid, radius_queries.data(), radius_count, hashgrid::kAllLayers,
                                                radius_offsets.data(), radius_offsets.size(), radius_out.data(),
                                                radius_out.size(), backend);
                                        },
                                        radius_out, "query_radius_batch");
                                t_queries = elapsed_ms(start);
                                // Back to the original (interleaved) query order, outside the timing.
                                results.start.assign(1, 0);
                                uint32_t next_box = 0, next_radius = 0;
                                for (const Query& q : queries) {
                                    const uint32_t k = q.circle ? next_radius++ : next_box++;
                                    const std::vector<uint64_t>& offsets = q.circle ? radius_offsets : box_offsets;
                                    const std::vector<uint32_t>& buffer = q.circle ? radius_out : box_out;
                                    results.object.insert(results.object.end(),
                                                          buffer.begin() + static_cast<ptrdiff_t>(offsets[k]),
                                                          buffer.begin() + static_cast<ptrdiff_t>(offsets[k + 1]));
                                    results.start.push_back(static_cast<uint32_t>(results.object.size()));
                                }
                                return ok;
                            });
                        if (!ran) return 1;
                        row.other_load = load.cores();
                        if (attempt == 0 || row.other_load < best.other_load) best = row;
                        if (row.other_load <= o.quiet_load || attempt >= o.retries) break;
                        std::printf("  %s %s %u thr: other load %.2f cores, rerunning\n", row.system.c_str(),
                                    row.setting.c_str(), row.threads, row.other_load);
                        std::this_thread::sleep_for(std::chrono::seconds(5));
                    }
                    consistent = consistent && best.verified;
                    print_query_row(best);
                    query_rows.push_back(best);
                }
            }
        }
#endif
    }

    // Tables.
    std::printf("\n| scene | system | setting | threads | build ms (frame 0) | moved frame ms median [min..max] | "
                "update ms | pairs ms | pairs (frame 0) | candidates / pair (last frame) | exact | other load "
                "|\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& [name, r] : scene_rows) {
        std::printf("| %s | %s | %s | %u | %.1f | %s | %.2f | %.2f | %llu | %.2f | %s | %.2f |\n", name.c_str(),
                    r.system.c_str(), r.setting.c_str(), r.threads, r.build_ms, fmt_spread(r.total).c_str(),
                    r.update.median, r.pairs.median, static_cast<unsigned long long>(r.pair_count0),
                    r.pair_count > 0 ? static_cast<double>(r.candidates) / static_cast<double>(r.pair_count) : 0.0,
                    r.verified ? "yes" : "NO", r.other_load);
    }
    if (!query_rows.empty()) {
        std::printf("\n| Q | setting | threads | build ms | re-index ms median [min..max] | %u queries ms median "
                    "[min..max] | results | exact | other load |\n|---|---|---|---|---|---|---|---|---|\n",
                    o.queries);
        for (const QueryRow& r : query_rows) {
            std::printf("| %s | %s | %u | %.2f | %s | %s | %llu | %s | %.2f |\n", r.system.c_str(), r.setting.c_str(),
                        r.threads, r.build_ms, fmt_spread(r.reindex).c_str(), fmt_spread(r.queries).c_str(),
                        static_cast<unsigned long long>(r.results), r.verified ? "yes" : "NO", r.other_load);
        }
    }
    // Derived figures and targets (medians of moved frames; peers run on one thread).
    const auto is_hashgrid = [](const std::string& system) { return system.rfind("Hashgrid", 0) == 0; };
    const auto is_peer = [&](const Row& r) { return !is_hashgrid(r.system) && r.system.rfind("sweep", 0) != 0; };
    std::printf("\nDerived figures (medians of moved frames):\n");
    std::vector<std::string> target_lines;
    const auto target = [&](const std::string& what, double value, const char* unit, bool met) {
        char text[256];
        std::snprintf(text, sizeof(text), "| %s | %.2f%s | %s |", what.c_str(), value, unit, met ? "yes" : "NO");
        target_lines.emplace_back(text);
    };
    for (const std::string& scene_name : o.scenes) {
        if (scene_name == "Q") continue;
        const Row* fastest = nullptr;
        for (const auto& [name, r] : scene_rows) {
            if (name == scene_name && is_peer(r) && (fastest == nullptr || r.total.median < fastest->total.median))
                fastest = &r;
        }
        for (uint32_t t : o.threads) {
            const Row* best = nullptr;
            for (const auto& [name, r] : scene_rows) {
                if (name == scene_name && is_hashgrid(r.system) && r.threads == t &&
                    (best == nullptr || r.total.median < best->total.median))
                    best = &r;
            }
            if (best == nullptr) continue;
            std::printf("  %s, %u thr: Hashgrid best %s: %.2f ms per frame", scene_name.c_str(), t,
                        best->setting.c_str(), best->total.median);
            if (fastest != nullptr) {
                std::printf("; fastest peer %s: %.2f ms (1 thr) -> %.1fx", fastest->system.c_str(),
                            fastest->total.median, fastest->total.median / best->total.median);
            }
            std::printf("\n");
            if (scene_name == "B3" && t == 2) {
                target("B3 all pairs (rebuild + find_pairs) <= 30 ms, 2 threads, " + best->setting, best->total.median,
                       " ms", best->total.median <= 30.0);
                if (fastest != nullptr) {
                    const double speedup = fastest->total.median / best->total.median;
                    target("B3 >= 5x the fastest peer (" + fastest->system + "), 2 threads", speedup, "x",
                           speedup >= 5.0);
                }
            }
        }
    }
    for (uint32_t t : o.threads) {
        const QueryRow* fast_queries = nullptr;
        const QueryRow* fast_index = nullptr;
        for (const QueryRow& r : query_rows) {
            if (!is_hashgrid(r.system) || r.threads != t) continue;
            if (fast_queries == nullptr || r.queries.median < fast_queries->queries.median) fast_queries = &r;
            if (fast_index == nullptr || r.reindex.median < fast_index->reindex.median) fast_index = &r;
        }
        if (fast_queries == nullptr) continue;
        std::printf("  Q, %u thr: Hashgrid %u queries %.3f ms (%s), re-index %.3f ms (%s)\n", t, o.queries,
                    fast_queries->queries.median, fast_queries->setting.c_str(), fast_index->reindex.median,
                    fast_index->setting.c_str());
        for (const QueryRow& r : query_rows) {
            if (is_hashgrid(r.system)) continue;
            std::printf("    vs %s (1 thr): queries %.3f ms (%.1fx), re-index %.3f ms (%.1fx)\n", r.system.c_str(),
                        r.queries.median, r.queries.median / fast_queries->queries.median, r.reindex.median,
                        r.reindex.median / fast_index->reindex.median);
        }
        if (t == 2) {
            target("Q " + std::to_string(o.queries) + " queries <= 1 ms, 2 threads, " + fast_queries->setting,
                   fast_queries->queries.median, " ms", fast_queries->queries.median <= 1.0);
            target("Q re-index of " + std::to_string(o.n) + " moved objects <= 1 ms, 2 threads, " + fast_index->setting,
                   fast_index->reindex.median, " ms", fast_index->reindex.median <= 1.0);
        }
    }
    if (!target_lines.empty()) {
        std::printf("\n| target (medians) | measured | met |\n|---|---|---|\n");
        for (const std::string& line : target_lines)
            std::printf("%s\n", line.c_str());
    }

    std::printf("\nload average at end: %s\n", load_average().c_str());
    std::printf("%s\n", consistent ? "all result sets exact" : "RESULT SET MISMATCH (see above)");
    return consistent ? 0 : 1;
}

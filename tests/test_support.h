// SPDX-License-Identifier: MIT
// Shared helpers for the Hashgrid tests: a pinned integer RNG with our own float
// conversions, FNV-1a over values, scene generators, and the brute-force oracles
// (pairs, sorted order, cell table) that every test compares the grid against.
//
// Portability rules (docs/design.md, guarantee 3): scenes are generated
// with integer arithmetic and single IEEE float operations only (no libm but the
// exact nextafter, no standard distributions), so they are bit-identical on every
// target; argument lists never hold two RNG calls (their order is unspecified). Products
// that are followed by an addition go through rounded_mul(), which forces the
// product to be rounded to float before the addition whatever -ffp-contract says.
#pragma once

#include "exact_cells.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/platform/std_thread_backend.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/exact_float.h"
#include "hashgrid_support/query_shapes.h"
#include "hashgrid_support/random.h"
#if defined(HASHGRID_HAS_TBB)
#include "hashgrid/platform/tbb_backend.h"
#endif
#include "hashgrid/platform/job_system_backend.h"
#include "odd_job_system.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace hashgrid_test {

using hashgrid::Pair;

// ---------------------------------------------------------------------------
// The multi-threaded backend the tests run on (ParallelBackend). Built in:
// oneTBB; the std::thread backend when HASHGRID_TEST_STD_THREADS is set (the
// tsan preset, MinGW); the serial backend on targets built without oneTBB.
// HASHGRID_TEST_BACKEND=serial|std|tbb|job picks another one at run time, so
// one (sanitizer) build runs the same tests on every backend: CTest registers
// such runs as <test>@<backend> for the backends in HASHGRID_TEST_BACKENDS.
// `job` is the job-system adapter on OddJobSystem (copies run in odd ways:
// inline, late, on one thread, more or fewer than asked).

enum class BackendKind { serial, std_thread, tbb, job_system };

/// The backend ParallelBackend builds: HASHGRID_TEST_BACKEND, else the built-in
/// one. An unknown name (or tbb in a build without oneTBB) ends the program, so
/// that a misspelt CTest environment cannot quietly test the default instead.
inline BackendKind parallel_backend_kind() {
    static const BackendKind kind = [] {
#if defined(HASHGRID_TEST_STD_THREADS)
        BackendKind k = BackendKind::std_thread;
#elif defined(HASHGRID_HAS_TBB)
        BackendKind k = BackendKind::tbb;
#else
        BackendKind k = BackendKind::serial;
#endif
        const char* name = std::getenv("HASHGRID_TEST_BACKEND");
        if (name == nullptr || *name == '\0') return k;
        if (std::strcmp(name, "serial") == 0) return BackendKind::serial;
        if (std::strcmp(name, "std") == 0) return BackendKind::std_thread;
        if (std::strcmp(name, "job") == 0) return BackendKind::job_system;
#if defined(HASHGRID_HAS_TBB)
        if (std::strcmp(name, "tbb") == 0) return BackendKind::tbb;
#endif
        std::fprintf(stderr, "HASHGRID_TEST_BACKEND=%s: expected serial, std, job%s\n", name,
#if defined(HASHGRID_HAS_TBB)
                     " or tbb"
#else
                     " (this build has no oneTBB)"
#endif
        );
        std::abort();
    }();
    return kind;
}

/// Name of parallel_backend_kind(), for test output.
inline const char* parallel_backend_name() {
    switch (parallel_backend_kind()) {
    case BackendKind::serial:
        return "serial";
    case BackendKind::std_thread:
        return "std";
    case BackendKind::tbb:
        return "tbb";
    case BackendKind::job_system:
        return "job";
    }
    return "?";
}

/// A backend of parallel_backend_kind() with `threads` threads (workers for
/// the job system; the serial backend has one), created once like a game's.
/// Not movable: backend() points into it.
class ParallelBackend {
public:
    explicit ParallelBackend(uint32_t threads) {
        const uint32_t n = threads == 0 ? 1 : threads;
        switch (parallel_backend_kind()) {
        case BackendKind::serial:
            backend_ = hashgrid::serial_backend();
            break;
        case BackendKind::std_thread:
            std_thread_ = std::make_unique<hashgrid::platform::StdThreadBackend>(n);
            backend_ = std_thread_->backend();
            threads_ = std_thread_->threads();
            break;
        case BackendKind::tbb:
#if defined(HASHGRID_HAS_TBB)
            tbb_ = std::make_unique<hashgrid::platform::TbbBackend>(n);
            backend_ = tbb_->backend();
            threads_ = tbb_->threads();
#endif
            break;
        case BackendKind::job_system: {
            OddJobSystem::Options options;
            options.workers = n;
            options.seed = 0x5eed0000u + n;
            jobs_ = std::make_unique<OddJobSystem>(options);
            adapter_ = std::make_unique<hashgrid::platform::JobSystemBackend>(jobs_->config());
            backend_ = adapter_->backend();
            threads_ = n;
            break;
        }
        }
    }
    ParallelBackend(const ParallelBackend&) = delete;
    ParallelBackend& operator=(const ParallelBackend&) = delete;

    [[nodiscard]] hashgrid::ThreadBackend backend() const { return backend_; }
    /// Threads that may run chunks at once (1 for the serial backend).
    [[nodiscard]] uint32_t threads() const { return threads_; }

private:
    std::unique_ptr<hashgrid::platform::StdThreadBackend> std_thread_;
#if defined(HASHGRID_HAS_TBB)
    std::unique_ptr<hashgrid::platform::TbbBackend> tbb_;
#endif
    std::unique_ptr<OddJobSystem> jobs_; // outlives adapter_ (declared first)
    std::unique_ptr<hashgrid::platform::JobSystemBackend> adapter_;
    hashgrid::ThreadBackend backend_ = hashgrid::serial_backend();
    uint32_t threads_ = 1;
};

/// Restores automatic kernel selection (hashgrid::set_pair_kernel) when a
/// test case that forces kernels ends, however it ends.
struct KernelGuard {
    KernelGuard() = default;
    KernelGuard(const KernelGuard&) = delete;
    KernelGuard& operator=(const KernelGuard&) = delete;
    ~KernelGuard() { hashgrid::set_pair_kernel(hashgrid::PairKernel::automatic); }
};

/// The kernels this build and CPU have: scalar first, then SSE2, AVX2 and
/// NEON where available. Automatic selection is restored afterwards.
inline std::vector<hashgrid::PairKernel> available_kernels() {
    KernelGuard guard;
    std::vector<hashgrid::PairKernel> kernels{hashgrid::PairKernel::scalar};
    for (hashgrid::PairKernel k : {hashgrid::PairKernel::sse2, hashgrid::PairKernel::avx2, hashgrid::PairKernel::neon})
        if (hashgrid::set_pair_kernel(k)) kernels.push_back(k);
    return kernels;
}

/// A kernel's name in test messages.
inline std::string width_name(hashgrid::PairKernel k) {
    switch (k) {
    case hashgrid::PairKernel::sse2:
        return "sse2";
    case hashgrid::PairKernel::avx2:
        return "avx2";
    case hashgrid::PairKernel::neon:
        return "neon";
    default:
        return "scalar";
    }
}

/// v rounded down to a multiple of 1/64: sums and differences of such
/// coordinates are exact, so a scene can put boxes that touch, or results
/// exactly on a query's boundary.
inline float on_grid(float v) { return std::floor(v * 64.0f) / 64.0f; }

/// A backend that runs every chunk on the calling thread, last chunk first.
/// The contract allows any order; thread pools only seldom finish the late
/// chunks of a loop first, so this makes that case certain: whatever depends
/// on which chunks finish first (pools filled by later chunks, prefixes
/// completed afterwards) must still give the serial backend's bytes.
/// `workers`: the worker count it declares (code that runs everything in
/// order on a one-worker backend takes its parallel path at 2).
inline hashgrid::ThreadBackend reverse_order_backend(uint32_t workers = 1) {
    hashgrid::ThreadBackend b;
    b.parallel_for = [](void*, uint32_t count, uint32_t grain, hashgrid::ChunkFn fn, void* context) {
        if (count == 0) return;
        const uint64_t step = grain == 0 ? count : grain;
        const uint64_t chunks = (uint64_t{count} + step - 1) / step;
        for (uint64_t c = chunks; c-- > 0;) {
            const uint64_t begin = c * step;
            const uint64_t end = begin + step < count ? begin + step : count;
            fn(context, static_cast<uint32_t>(begin), static_cast<uint32_t>(end), 0);
        }
    };
    b.worker_count = workers;
    return b;
}

// ---------------------------------------------------------------------------
// Test size.

/// Fraction of the random-scene counts to run: HASHGRID_TEST_SCALE (default 1).
/// The emulated cross targets (qemu runs 8-45x slower) set 0.1 in their test
/// presets; fixed scenes and golden hashes are never scaled.
inline double test_scale() {
    const char* text = std::getenv("HASHGRID_TEST_SCALE");
    if (text == nullptr || *text == '\0') return 1.0;
    const double scale = std::strtod(text, nullptr);
    return scale > 0.0 && scale <= 1.0 ? scale : 1.0;
}

/// n scaled by test_scale(), at least 1.
inline uint32_t scaled_count(uint32_t n) {
    const auto k = static_cast<uint32_t>(static_cast<double>(n) * test_scale());
    return k > 0 ? k : 1;
}

// ---------------------------------------------------------------------------
// Floating point without contraction.

/// a * b rounded to float, never fused into a following addition (support/).
using hashgrid_support::rounded_mul;

/// Bit pattern of a float (portable: no reinterpret_cast through memory).
inline uint32_t float_bits(float value) { return std::bit_cast<uint32_t>(value); }

// ---------------------------------------------------------------------------
// RNG: splitmix64 with our own conversions, shared with the examples and
// benchmarks (support/include/hashgrid_support/random.h).

using Rng = hashgrid_support::SplitMix64;

// ---------------------------------------------------------------------------
// FNV-1a 64-bit over values: every field is fed as little-endian bytes by
// shifting, floats by their bit pattern, so the hash is the same on big- and
// little-endian targets.

class Fnv1a {
public:
    void byte(uint8_t b) {
        hash_ ^= b;
        hash_ *= 0x100000001b3ull;
    }
    void u32(uint32_t v) {
        for (int i = 0; i < 4; ++i)
            byte(static_cast<uint8_t>(v >> (8 * i)));
    }
    void u64(uint64_t v) {
        for (int i = 0; i < 8; ++i)
            byte(static_cast<uint8_t>(v >> (8 * i)));
    }
    void f32(float v) { u32(float_bits(v)); }
    [[nodiscard]] uint64_t value() const { return hash_; }

private:
    uint64_t hash_ = 0xcbf29ce484222325ull;
};

// ---------------------------------------------------------------------------
// Scenes.

struct Scene {
    uint32_t dims = 3;
    std::vector<float> x, y, z;
    std::vector<float> radius; ///< Empty: uniform mode.

    [[nodiscard]] uint32_t size() const { return static_cast<uint32_t>(x.size()); }
    [[nodiscard]] bool has_radius() const { return !radius.empty(); }

    void add(float px, float py, float pz) {
        x.push_back(px);
        y.push_back(py);
        z.push_back(dims == 3 ? pz : 0.0f);
    }
    void add(float px, float py, float pz, float pr) {
        add(px, py, pz);
        radius.push_back(pr);
    }

    /// Spans for rebuild(). Never null pointers, even for an empty scene (null
    /// spans are a programmer error); z is null in 2D (documented as ignored).
    [[nodiscard]] hashgrid::ParticleSpans spans() const {
        static const float kDummy = 0.0f;
        hashgrid::ParticleSpans s;
        s.x = x.empty() ? &kDummy : x.data();
        s.y = y.empty() ? &kDummy : y.data();
        s.z = dims == 3 ? (z.empty() ? &kDummy : z.data()) : nullptr;
        s.radius = has_radius() ? radius.data() : nullptr;
        s.count = size();
        return s;
    }

    [[nodiscard]] float coord(uint32_t axis, uint32_t i) const { return axis == 0 ? x[i] : (axis == 1 ? y[i] : z[i]); }
};

/// n points uniform in the box [lo, hi)^dims.
inline Scene uniform_scene(Rng& rng, uint32_t dims, uint32_t n, float lo, float hi) {
    Scene s;
    s.dims = dims;
    for (uint32_t i = 0; i < n; ++i) {
        const float px = rng.uniform(lo, hi);
        const float py = rng.uniform(lo, hi);
        s.add(px, py, dims == 3 ? rng.uniform(lo, hi) : 0.0f);
    }
    return s;
}

/// `s` in the order `order` (order[k] = index in s of the k-th particle, for
/// every particle of s), radii included.
inline Scene permuted(const Scene& s, const uint32_t* order) {
    Scene out;
    out.dims = s.dims;
    for (uint32_t k = 0; k < s.size(); ++k) {
        const uint32_t i = order[k];
        out.add(s.coord(0, i), s.coord(1, i), s.dims == 3 ? s.coord(2, i) : 0.0f);
        if (s.has_radius()) out.radius.push_back(s.radius[i]);
    }
    return out;
}

/// `cells` distinct cells (unit cells at the origin), two particles each, in
/// rows of 61 cells `stride` apart: stride 2 keeps them in a small box, a
/// large stride spreads them far.
inline Scene cells_in_rows(uint32_t dims, uint32_t cells, uint32_t stride) {
    Scene s;
    s.dims = dims;
    for (uint32_t c = 0; c < cells; ++c) {
        const float x = static_cast<float>((c % 61) * stride);
        const float y = static_cast<float>(c / 61) * -1.0f - 0.5f;
        s.add(x + 0.5f, y, 7.25f);
        s.add(x + 0.75f, y, 7.5f);
    }
    return s;
}

/// n points in `clusters` bell-shaped clusters (Irwin-Hall) with centres uniform in [lo, hi).
inline Scene clustered_scene(Rng& rng, uint32_t dims, uint32_t n, uint32_t clusters, float lo, float hi, float sigma) {
    std::vector<float> centre(3 * clusters);
    for (float& c : centre)
        c = rng.uniform(lo, hi);
    Scene s;
    s.dims = dims;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t k = rng.below(clusters);
        const float px = rng.cluster(centre[3 * k], sigma);
        const float py = rng.cluster(centre[3 * k + 1], sigma);
        s.add(px, py, dims == 3 ? rng.cluster(centre[3 * k + 2], sigma) : 0.0f);
    }
    return s;
}

/// Adds per-particle radii uniform in [lo, hi] (hi included: the last one is hi).
inline void add_radii(Rng& rng, Scene& s, float lo, float hi) {
    s.radius.resize(s.size());
    for (float& r : s.radius)
        r = rng.uniform(lo, hi);
    if (!s.radius.empty()) s.radius.back() = hi;
}

// ---------------------------------------------------------------------------
// Brute-force pair oracle: all i < j, d2 = (dx*dx + dy*dy) + dz*dz in float,
// reported iff d2 < r*r (uniform) or d2 < (ra+rb)*(ra+rb) (radii).

inline float distance2(const Scene& s, uint32_t i, uint32_t j) {
    const float dx = s.x[j] - s.x[i];
    const float dy = s.y[j] - s.y[i];
    float d2 = rounded_mul(dx, dx) + rounded_mul(dy, dy);
    if (s.dims == 3) {
        const float dz = s.z[j] - s.z[i];
        d2 = d2 + rounded_mul(dz, dz);
    }
    return d2;
}

inline bool within(const Scene& s, uint32_t i, uint32_t j, float r) {
    const float d2 = distance2(s, i, j);
    if (s.has_radius()) {
        const float sum = s.radius[i] + s.radius[j];
        return d2 < rounded_mul(sum, sum);
    }
    return d2 < rounded_mul(r, r);
}

/// All pairs (a < b) sorted by (a, b).
inline std::vector<Pair> brute_force_pairs(const Scene& s, float r) {
    std::vector<Pair> out;
    const uint32_t n = s.size();
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = i + 1; j < n; ++j)
            if (within(s, i, j, r)) out.push_back(Pair{i, j});
    return out;
}

/// The same pairs as brute_force_pairs() for large scenes: sort by x and sweep.
/// Exact: a candidate is skipped only when dx >= bound >= the pair's limit, and
/// then fl(dx * dx) >= fl(limit * limit) (rounding is monotonic), so the float
/// test would reject it too.
inline std::vector<Pair> sweep_pairs(const Scene& s, float r) {
    const uint32_t n = s.size();
    float bound = r;
    if (s.has_radius()) {
        float rmax = 0.0f;
        for (float v : s.radius)
            rmax = std::max(rmax, v);
        bound = rmax + rmax;
    }
    std::vector<uint32_t> by_x(n);
    for (uint32_t i = 0; i < n; ++i)
        by_x[i] = i;
    std::sort(by_x.begin(), by_x.end(),
              [&](uint32_t a, uint32_t b) { return s.x[a] != s.x[b] ? s.x[a] < s.x[b] : a < b; });
    std::vector<Pair> out;
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t i = by_x[k];
        for (uint32_t m = k + 1; m < n; ++m) {
            const uint32_t j = by_x[m];
            if (!(s.x[j] - s.x[i] < bound)) break;
            if (within(s, i, j, r)) out.push_back(Pair{std::min(i, j), std::max(i, j)});
        }
    }
    std::sort(out.begin(), out.end(),
              [](const Pair& l, const Pair& r2) { return l.a != r2.a ? l.a < r2.a : l.b < r2.b; });
    return out;
}

/// Brute force for small scenes, the sweep for large ones (same result).
inline std::vector<Pair> oracle_pairs(const Scene& s, float r) {
    return s.size() <= 3000 ? brute_force_pairs(s, r) : sweep_pairs(s, r);
}

// ---------------------------------------------------------------------------
// Cell and sorted-order oracle (cell_key.h formula, independent of the grid).

/// Scaled coordinate as the grid defines it; floor() of it is the cell coordinate.
inline double scaled(float p, float origin, float cell_size) {
    return hashgrid::scaled_coordinate(p, origin, hashgrid::key_scale(cell_size));
}

/// Cell coordinate, saturated to +-2^40 so that far-out values stay defined.
inline int64_t cell_coordinate(float p, float origin, float cell_size) {
    const double f = std::floor(scaled(p, origin, cell_size));
    if (!(f > -0x1p40)) return -(int64_t{1} << 40);
    if (f > 0x1p40) return int64_t{1} << 40;
    return static_cast<int64_t>(f);
}

struct CellCoord {
    int64_t c[3] = {0, 0, 0};
    friend bool operator==(const CellCoord&, const CellCoord&) = default;
};

/// Cell coordinate in an unbounded world: the documented double formula while
/// |scaled| < 2^31 - 4, the exact floor beyond (exact_cells.h), kept modulo
/// 2^21 (3D) or 2^31 (2D) as a signed value.
inline int64_t wrapped_cell(float p, float origin, float cell_size, uint32_t dims) {
    const uint32_t bits = dims == 3 ? 21u : 31u;
    const double t = scaled(p, origin, cell_size);
    if (t >= -(0x1p31 - 4.0) && t < 0x1p31 - 4.0) {
        const auto c = static_cast<int64_t>(std::floor(t));
        const int64_t period = int64_t{1} << bits, half = period / 2;
        return ((c + half) % period + period) % period - half;
    }
    bool near_integer = false;
    return exact_wrapped_cell(p, origin, hashgrid::key_scale(cell_size), bits, near_integer);
}

/// Cell of particle i under `config` (bounded clamp mode: clamped to the box;
/// unbounded: wrapped).
inline CellCoord particle_cell(const Scene& s, const hashgrid::GridConfig& config, uint32_t i) {
    CellCoord cc;
    for (uint32_t a = 0; a < s.dims; ++a) {
        if (config.world == hashgrid::World::unbounded) {
            cc.c[a] = wrapped_cell(s.coord(a, i), config.origin[a], config.cell_size, s.dims);
            continue;
        }
        cc.c[a] = cell_coordinate(s.coord(a, i), config.origin[a], config.cell_size);
        if (config.world == hashgrid::World::bounded && config.out_of_bounds == hashgrid::OutOfBounds::clamp)
            cc.c[a] = std::clamp<int64_t>(cc.c[a], 0, int64_t{config.cell_counts[a]} - 1);
    }
    return cc;
}

/// True when every particle has a valid cell under `config` (bounded: inside
/// the box; unbounded worlds take every finite coordinate).
inline bool all_in_range(const Scene& s, const hashgrid::GridConfig& config) {
    if (config.world == hashgrid::World::unbounded) return true;
    for (uint32_t i = 0; i < s.size(); ++i) {
        const CellCoord cc = particle_cell(s, config, i);
        for (uint32_t a = 0; a < s.dims; ++a)
            if (cc.c[a] < 0 || cc.c[a] >= int64_t{config.cell_counts[a]}) return false;
    }
    return true;
}

/// Expected sorted_to_original(): by cell in lexicographic (z, y, x) order, then
/// by ascending original index.
inline std::vector<uint32_t> expected_order(const Scene& s, const hashgrid::GridConfig& config) {
    const uint32_t n = s.size();
    std::vector<CellCoord> cell(n);
    for (uint32_t i = 0; i < n; ++i)
        cell[i] = particle_cell(s, config, i);
    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        const CellCoord& ca = cell[a];
        const CellCoord& cb = cell[b];
        if (ca.c[2] != cb.c[2]) return ca.c[2] < cb.c[2];
        if (ca.c[1] != cb.c[1]) return ca.c[1] < cb.c[1];
        if (ca.c[0] != cb.c[0]) return ca.c[0] < cb.c[0];
        return a < b;
    });
    return order;
}

inline std::vector<uint32_t> invert(const std::vector<uint32_t>& order) {
    std::vector<uint32_t> position(order.size());
    for (uint32_t k = 0; k < order.size(); ++k)
        position[order[k]] = k;
    return position;
}

/// The documented pair order: lexicographic in (sorted position of the earlier
/// particle, sorted position of the later one). Pairs keep a < b in original indices.
inline std::vector<Pair> in_documented_order(std::vector<Pair> pairs, const std::vector<uint32_t>& order) {
    const std::vector<uint32_t> pos = invert(order);
    auto key = [&](const Pair& p) {
        const uint64_t pa = pos[p.a];
        const uint64_t pb = pos[p.b];
        return pa < pb ? (pa << 32) | pb : (pb << 32) | pa;
    };
    std::sort(pairs.begin(), pairs.end(), [&](const Pair& l, const Pair& r) { return key(l) < key(r); });
    return pairs;
}

// ---------------------------------------------------------------------------
// Diffs: "" when equal, else a description of the first difference.

using hashgrid_support::nearest_at;
using hashgrid_support::nearests_of;
using hashgrid_support::point_at;
using hashgrid_support::six_plane_frustum;
using hashgrid_support::sphere_at;
using hashgrid_support::spheres_of;

inline std::string pair_text(const Pair& p) { return "{" + std::to_string(p.a) + "," + std::to_string(p.b) + "}"; }

inline std::string diff_pairs(const std::vector<Pair>& expected, const Pair* got, uint64_t got_count) {
    const uint64_t n = std::min<uint64_t>(expected.size(), got_count);
    for (size_t k = 0; k < n; ++k) // n <= expected.size(): fits size_t on 32-bit targets
        if (expected[k].a != got[k].a || expected[k].b != got[k].b)
            return "pair " + std::to_string(k) + ": expected " + pair_text(expected[k]) + " got " + pair_text(got[k]);
    if (expected.size() != got_count)
        return "pair count: expected " + std::to_string(expected.size()) + " got " + std::to_string(got_count);
    return "";
}

inline std::string diff_u32(const char* what, const std::vector<uint32_t>& expected, const uint32_t* got) {
    for (size_t k = 0; k < expected.size(); ++k)
        if (expected[k] != got[k])
            return std::string(what) + "[" + std::to_string(k) + "]: expected " + std::to_string(expected[k]) +
                   " got " + std::to_string(got[k]);
    return "";
}

/// Sorted pair set ((a, b) order) of a pair array, for set comparison.
inline std::vector<Pair> as_set(const Pair* pairs, uint64_t count) {
    std::vector<Pair> v(pairs, pairs + static_cast<size_t>(count));
    std::sort(v.begin(), v.end(), [](const Pair& l, const Pair& r) { return l.a != r.a ? l.a < r.a : l.b < r.b; });
    return v;
}

// ---------------------------------------------------------------------------
// Grids on caller memory.

/// A grid plus the memory block it lives in. The block is filled with `fill`
/// before init so that reads of uninitialised memory show up as differences.
struct OwnedGrid {
    std::unique_ptr<hashgrid::Grid> grid = std::make_unique<hashgrid::Grid>();
    void* memory = nullptr;
    uint64_t bytes = 0;
    hashgrid::Status init_status;

    OwnedGrid() = default;
    OwnedGrid(const OwnedGrid&) = delete;
    OwnedGrid& operator=(const OwnedGrid&) = delete;
    ~OwnedGrid() {
        grid.reset();
        hashgrid::aligned_free_bytes(memory);
    }
    hashgrid::Grid& operator*() { return *grid; }
    hashgrid::Grid* operator->() { return grid.get(); }
};

inline std::unique_ptr<OwnedGrid> make_grid(const hashgrid::GridConfig& config, uint8_t fill = 0xA5) {
    auto owned = std::make_unique<OwnedGrid>();
    const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
    if (!req.status.ok()) {
        owned->init_status = req.status;
        return owned;
    }
    owned->bytes = req.bytes;
    owned->memory = hashgrid::aligned_alloc_bytes(req.bytes, req.alignment);
    if (owned->memory != nullptr) std::memset(owned->memory, fill, static_cast<size_t>(req.bytes));
    owned->init_status = owned->grid->init(config, owned->memory, static_cast<size_t>(req.bytes));
    return owned;
}

// ---------------------------------------------------------------------------
// Configs.

inline hashgrid::GridConfig unbounded_config(uint32_t dims, float cell_size, float distance, uint32_t max_particles,
                                             uint64_t max_pairs) {
    hashgrid::GridConfig c;
    c.dimensions = dims;
    c.cell_size = cell_size;
    c.interaction_distance = distance;
    c.world = hashgrid::World::unbounded;
    c.max_particles = std::max<uint32_t>(max_particles, 1);
    c.max_cells = std::max<uint32_t>(max_particles, 1);
    c.max_pairs = std::max<uint64_t>(max_pairs, 1);
    return c;
}

/// Bounded config whose box covers every particle of `s` with the given origin
/// (which must be at or below every coordinate) plus `margin` cells per axis.
inline hashgrid::GridConfig bounded_config(const Scene& s, const hashgrid::GridConfig& unbounded, uint32_t margin) {
    hashgrid::GridConfig c = unbounded;
    c.world = hashgrid::World::bounded;
    for (uint32_t a = 0; a < 3; ++a) {
        int64_t top = 0;
        if (a < s.dims)
            for (uint32_t i = 0; i < s.size(); ++i)
                top = std::max(top, cell_coordinate(s.coord(a, i), c.origin[a], c.cell_size));
        c.cell_counts[a] = a < s.dims ? static_cast<uint32_t>(top + 1 + margin) : 1u;
    }
    return c;
}

/// Lowest coordinate of the scene along each axis (0 for an empty scene).
inline void scene_min(const Scene& s, float out[3]) {
    for (uint32_t a = 0; a < 3; ++a) {
        out[a] = 0.0f;
        if (a >= s.dims || s.size() == 0) continue;
        float m = s.coord(a, 0);
        for (uint32_t i = 1; i < s.size(); ++i)
            m = std::min(m, s.coord(a, i));
        out[a] = m;
    }
}

// ---------------------------------------------------------------------------
// Frame helpers.

struct Frame {
    hashgrid::Status rebuild;
    hashgrid::PairResult result;
    std::vector<Pair> pairs; ///< The written prefix.
};

inline Frame run_frame(hashgrid::Grid& grid, const Scene& s, const hashgrid::ThreadBackend& backend,
                       uint64_t capacity) {
    Frame f;
    f.rebuild = grid.rebuild(s.spans(), backend);
    f.pairs.resize(static_cast<size_t>(std::max<uint64_t>(capacity, 1)));
    f.result = grid.find_pairs(capacity ? f.pairs.data() : nullptr, capacity, backend);
    f.pairs.resize(static_cast<size_t>(std::min<uint64_t>(f.result.written, capacity)));
    return f;
}

// ---------------------------------------------------------------------------
// Hashes of grid state (golden values in test_determinism.cpp).

inline uint64_t hash_pairs(const Pair* pairs, uint64_t count) {
    Fnv1a h;
    h.u64(count);
    for (uint64_t k = 0; k < count; ++k) {
        h.u32(pairs[k].a);
        h.u32(pairs[k].b);
    }
    return h.value();
}

inline uint64_t hash_order(const hashgrid::Grid& grid) {
    Fnv1a h;
    const uint32_t n = grid.particle_count();
    h.u32(n);
    const uint32_t* order = grid.sorted_to_original();
    for (uint32_t k = 0; k < n; ++k)
        h.u32(order[k]);
    return h.value();
}

/// The cell table view: start[], key[] and the slot table. slot_cell is only
/// defined for occupied slots, so empty slots contribute their key only.
inline uint64_t hash_cells(const hashgrid::Grid& grid) {
    const hashgrid::CellTableView v = grid.cells();
    Fnv1a h;
    h.u32(v.cell_count);
    for (uint32_t c = 0; c <= v.cell_count; ++c)
        h.u32(v.start[c]);
    h.u32(v.key != nullptr ? 1u : 0u);
    if (v.key != nullptr)
        for (uint32_t c = 0; c < v.cell_count; ++c)
            h.u64(v.key[c]);
    h.u32(v.slot_count);
    for (uint32_t s = 0; s < v.slot_count; ++s) {
        h.u64(v.slot_key[s]);
        if (v.slot_key[s] != hashgrid::kEmptyKey) h.u32(v.slot_cell[s]);
    }
    h.u32(v.map_cell != nullptr ? 1u : 0u);
    if (v.map_cell != nullptr) {
        for (uint32_t d = 0; d < 3; ++d) {
            h.u32(static_cast<uint32_t>(v.map_lo[d]));
            h.u32(v.map_extent[d]);
        }
        const uint64_t box = uint64_t{v.map_extent[0]} * v.map_extent[1] * v.map_extent[2];
        for (uint64_t c = 0; c < box; ++c)
            h.u32(v.map_cell[c]);
    }
    return h.value();
}

inline uint64_t hash_csr(const std::vector<uint32_t>& offsets, const std::vector<uint32_t>& indices) {
    Fnv1a h;
    h.u64(offsets.size());
    for (uint32_t v : offsets)
        h.u32(v);
    h.u64(indices.size());
    for (uint32_t v : indices)
        h.u32(v);
    return h.value();
}

// ---------------------------------------------------------------------------
// Independent checks of a built grid against the oracles. Each returns "" when
// the grid agrees, else the first disagreement.

/// sorted_to_original() is the expected permutation and sorted_x/y/z/radius are
/// the inputs permuted by it.
inline std::string check_sorted_state(const hashgrid::Grid& grid, const Scene& s, const hashgrid::GridConfig& config) {
    if (grid.particle_count() != s.size())
        return "particle_count " + std::to_string(grid.particle_count()) + " != " + std::to_string(s.size());
    const std::vector<uint32_t> order = expected_order(s, config);
    if (std::string d = diff_u32("sorted_to_original", order, grid.sorted_to_original()); !d.empty()) return d;
    const float* sorted[3] = {grid.sorted_x(), grid.sorted_y(), grid.sorted_z()};
    for (uint32_t a = 0; a < s.dims; ++a)
        for (uint32_t k = 0; k < s.size(); ++k)
            if (float_bits(sorted[a][k]) != float_bits(s.coord(a, order[k])))
                return "sorted coordinate axis " + std::to_string(a) + " position " + std::to_string(k);
    if (s.has_radius()) {
        if (grid.sorted_radius() == nullptr) return "sorted_radius() is null in radius mode";
        for (uint32_t k = 0; k < s.size(); ++k)
            if (float_bits(grid.sorted_radius()[k]) != float_bits(s.radius[order[k]]))
                return "sorted_radius position " + std::to_string(k);
    } else if (grid.sorted_radius() != nullptr) {
        return "sorted_radius() is not null in uniform mode";
    }
    return "";
}

/// The cell table view describes exactly the occupied cells in (z, y, x) order,
/// and (unbounded) every key is reachable by linear probing from its hash.
inline std::string check_cell_table(const hashgrid::Grid& grid, const Scene& s, const hashgrid::GridConfig& config) {
    const hashgrid::CellTableView v = grid.cells();
    const uint32_t n = s.size();
    const std::vector<uint32_t> order = expected_order(s, config);
    // Distinct cells in sorted order with their particle counts.
    std::vector<CellCoord> cells;
    std::vector<uint32_t> counts;
    for (uint32_t k = 0; k < n; ++k) {
        const CellCoord cc = particle_cell(s, config, order[k]);
        if (cells.empty() || !(cells.back() == cc)) {
            cells.push_back(cc);
            counts.push_back(0);
        }
        ++counts.back();
    }
    if (v.start == nullptr) return "cells().start is null";
    if (config.world == hashgrid::World::bounded) {
        const uint64_t total =
            uint64_t{config.cell_counts[0]} * config.cell_counts[1] * (s.dims == 3 ? config.cell_counts[2] : 1u);
        if (v.cell_count != total) return "bounded cell_count " + std::to_string(v.cell_count);
        if (v.key != nullptr || v.slot_count != 0) return "bounded grid exposes a hash table";
        std::vector<uint32_t> expected_count(static_cast<size_t>(total), 0);
        for (size_t c = 0; c < cells.size(); ++c) {
            const uint64_t index =
                (static_cast<uint64_t>(cells[c].c[2]) * config.cell_counts[1] + static_cast<uint64_t>(cells[c].c[1])) *
                    config.cell_counts[0] +
                static_cast<uint64_t>(cells[c].c[0]);
            expected_count[static_cast<size_t>(index)] = counts[c];
        }
        if (v.start[0] != 0) return "start[0] != 0";
        for (uint64_t c = 0; c < total; ++c)
            if (v.start[c + 1] - v.start[c] != expected_count[static_cast<size_t>(c)])
                return "bounded cell " + std::to_string(c) + " holds " + std::to_string(v.start[c + 1] - v.start[c]) +
                       " particles, expected " + std::to_string(expected_count[static_cast<size_t>(c)]);
        return "";
    }
    if (v.cell_count != cells.size())
        return "cell_count " + std::to_string(v.cell_count) + " != distinct cells " + std::to_string(cells.size());
    if (v.key == nullptr) return "unbounded key array null";
    if (v.start[0] != 0) return "start[0] != 0";
    for (size_t c = 0; c < cells.size(); ++c) {
        const auto& cc = cells[c].c;
        const uint64_t key = s.dims == 3
                                 ? hashgrid::pack_key3(static_cast<int32_t>(cc[0]), static_cast<int32_t>(cc[1]),
                                                       static_cast<int32_t>(cc[2]))
                                 : hashgrid::pack_key2(static_cast<int32_t>(cc[0]), static_cast<int32_t>(cc[1]));
        if (v.key[c] != key) return "key[" + std::to_string(c) + "] mismatch";
        if (v.start[c + 1] - v.start[c] != counts[c]) return "start[] of cell " + std::to_string(c) + " mismatch";
    }
    // Box map: when the cells' bounding box holds at most 2 * max_particles +
    // 64 cells, one entry per cell of that box, x fastest: the cell's index
    // or kNoCell; no table.
    int64_t lo[3] = {INT64_MAX, INT64_MAX, INT64_MAX}, hi[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
    for (const CellCoord& cc : cells)
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d] = std::min(lo[d], cc.c[d]);
            hi[d] = std::max(hi[d], cc.c[d]);
        }
    double volume = cells.empty() ? 0.0 : 1.0;
    for (uint32_t d = 0; d < 3 && !cells.empty(); ++d)
        volume *= static_cast<double>(hi[d] - lo[d] + 1);
    const bool expect_map = !cells.empty() && volume <= 2.0 * config.max_particles + 64.0;
    if (expect_map) {
        if (v.map_cell == nullptr) return "box map null for cells within a box of " + std::to_string(volume);
        if (v.slot_count != 0 || v.slot_key != nullptr || v.slot_cell != nullptr) return "mapped frame exposes a table";
        uint64_t extent[3];
        for (uint32_t d = 0; d < 3; ++d) {
            extent[d] = static_cast<uint64_t>(hi[d] - lo[d] + 1);
            if (v.map_lo[d] != lo[d] || v.map_extent[d] != extent[d])
                return "box map bounds on axis " + std::to_string(d);
        }
        std::vector<uint32_t> expected(static_cast<size_t>(extent[0] * extent[1] * extent[2]), hashgrid::kNoCell);
        for (size_t c = 0; c < cells.size(); ++c) {
            const uint64_t at = static_cast<uint64_t>(cells[c].c[0] - lo[0]) +
                                extent[0] * (static_cast<uint64_t>(cells[c].c[1] - lo[1]) +
                                             extent[1] * static_cast<uint64_t>(cells[c].c[2] - lo[2]));
            expected[static_cast<size_t>(at)] = static_cast<uint32_t>(c);
        }
        for (size_t at = 0; at < expected.size(); ++at)
            if (v.map_cell[at] != expected[at])
                return "box map entry " + std::to_string(at) + " is " + std::to_string(v.map_cell[at]) + ", expected " +
                       std::to_string(expected[at]);
        return "";
    }
    if (v.map_cell != nullptr) return "box map set for cells spread over a box of " + std::to_string(volume);
    if (v.slot_key == nullptr || v.slot_cell == nullptr) return "unbounded table arrays null";
    // Slot table (Grid::table_slots): max(256, next power of two >= 2 * the
    // frame's cells) slots, every key exactly once, reachable by linear probing
    // from its home slot (the top log2(slots) bits of hash_key(key)) without
    // crossing an empty slot.
    uint32_t slots = 256, slot_bits = 8;
    while (slots < 2u * v.cell_count) {
        slots *= 2;
        ++slot_bits;
    }
    if (v.slot_count != slots)
        return "slot_count " + std::to_string(v.slot_count) + " expected " + std::to_string(slots);
    uint32_t occupied = 0;
    for (uint32_t slot = 0; slot < v.slot_count; ++slot) {
        if (v.slot_key[slot] == hashgrid::kEmptyKey) continue;
        ++occupied;
        const uint32_t c = v.slot_cell[slot];
        if (c >= v.cell_count || v.key[c] != v.slot_key[slot]) return "slot " + std::to_string(slot) + " bad cell";
        for (uint32_t probe = static_cast<uint32_t>(hashgrid::hash_key(v.slot_key[slot]) >> (64 - slot_bits));
             probe != slot; probe = (probe + 1) & (slots - 1))
            if (v.slot_key[probe] == hashgrid::kEmptyKey)
                return "slot " + std::to_string(slot) + " unreachable by linear probing";
    }
    if (occupied != v.cell_count) return "occupied slots " + std::to_string(occupied) + " != cell_count";
    return "";
}

/// CSR neighbour lists from the oracle pair set: both directions, ascending.
inline void expected_csr(uint32_t n, const std::vector<Pair>& pairs, std::vector<uint32_t>& offsets,
                         std::vector<uint32_t>& indices) {
    offsets.assign(n + 1, 0);
    for (const Pair& p : pairs) {
        ++offsets[p.a + 1];
        ++offsets[p.b + 1];
    }
    for (uint32_t i = 0; i < n; ++i)
        offsets[i + 1] += offsets[i];
    indices.assign(pairs.size() * 2, 0);
    std::vector<uint32_t> cursor(offsets.begin(), offsets.end() - 1);
    for (const Pair& p : pairs) {
        indices[cursor[p.a]++] = p.b;
        indices[cursor[p.b]++] = p.a;
    }
    for (uint32_t i = 0; i < n; ++i)
        std::sort(indices.begin() + offsets[i], indices.begin() + offsets[i + 1]);
}

} // namespace hashgrid_test

// SPDX-License-Identifier: MIT
// Particle queries (particle_queries.h) against brute-force oracles: radius,
// point, box, frustum, k nearest, point-set pairs and the batched versions, on
// random, clustered and lattice scenes (points exactly on cell edges, many
// distance ties) in 2D and 3D, unbounded and bounded (reject and clamp) worlds.
// Every too-small buffer size on small cases, bad input, batched == single,
// identical output for the serial backend and 1, 2, 4, 8 threads, and golden
// hashes of fixed scenes (HASHGRID_PRINT_GOLDEN=1 prints them).
#include <doctest/doctest.h>

#include "continue_on_assert.h"
#include "far_scenes.h"
#include "golden_hashes.h"
#include "hashgrid/particle_queries.h"
#include "test_support.h"

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

using namespace hashgrid;
using namespace hashgrid_test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr uint32_t kSentinel = 0xdeadbeefu;

// Scene sizes go through scaled_count() (test_support.h, HASHGRID_TEST_SCALE);
// the golden scenes are never scaled.

// ---------------------------------------------------------------------------
// Oracles: float operations in the documented order, products rounded first.

float point_distance2(const Scene& s, uint32_t i, const float* c) {
    const float dx = s.x[i] - c[0];
    const float dy = s.y[i] - c[1];
    float d2 = rounded_mul(dx, dx) + rounded_mul(dy, dy);
    if (s.dims == 3) {
        const float dz = s.z[i] - c[2];
        d2 = d2 + rounded_mul(dz, dz);
    }
    return d2;
}

/// Original indices sorted by their expected sorted position.
std::vector<uint32_t> by_position(std::vector<uint32_t> v, const std::vector<uint32_t>& pos) {
    std::sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) { return pos[a] < pos[b]; });
    return v;
}

std::vector<uint32_t> oracle_radius(const Scene& s, const std::vector<uint32_t>& pos, const float* c, float r) {
    const float r2 = rounded_mul(r, r);
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < s.size(); ++i)
        if (point_distance2(s, i, c) < r2) out.push_back(i);
    return by_position(out, pos);
}

std::vector<uint32_t> oracle_box(const Scene& s, const std::vector<uint32_t>& pos, const QueryBox& b) {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < s.size(); ++i) {
        bool inside = true;
        for (uint32_t a = 0; a < s.dims; ++a)
            inside = inside && s.coord(a, i) >= b.min[a] && s.coord(a, i) <= b.max[a];
        if (inside) out.push_back(i);
    }
    return by_position(out, pos);
}

std::vector<uint32_t> oracle_frustum(const Scene& s, const std::vector<uint32_t>& pos, const Frustum& f) {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < s.size(); ++i) {
        bool inside = true;
        for (uint32_t p = 0; p < f.plane_count; ++p) {
            const hashgrid::Plane& pl = f.planes[p];
            float value = rounded_mul(pl.normal[0], s.x[i]) + rounded_mul(pl.normal[1], s.y[i]);
            if (s.dims == 3) value = value + rounded_mul(pl.normal[2], s.z[i]);
            value = value + pl.d;
            inside = inside && value >= 0.0f;
        }
        if (inside) out.push_back(i);
    }
    return by_position(out, pos);
}

std::vector<NearestHit> oracle_nearest(const Scene& s, const float* c, uint32_t k, float max_distance) {
    const float max_r2 = rounded_mul(max_distance, max_distance);
    std::vector<NearestHit> all;
    for (uint32_t i = 0; i < s.size(); ++i) {
        const float d2 = point_distance2(s, i, c);
        if (max_distance == kInf || d2 < max_r2) all.push_back({i, d2});
    }
    std::sort(all.begin(), all.end(), [](const NearestHit& a, const NearestHit& b) {
        return a.distance_squared != b.distance_squared ? a.distance_squared < b.distance_squared : a.index < b.index;
    });
    if (all.size() > k) all.resize(k);
    return all;
}

std::vector<Pair> oracle_point_set(const Scene& grid_scene, const std::vector<uint32_t>& pos, const Scene& points,
                                   float r) {
    std::vector<Pair> out;
    for (uint32_t a = 0; a < points.size(); ++a) {
        const float c[3] = {points.x[a], points.y[a], points.z[a]};
        for (uint32_t b : oracle_radius(grid_scene, pos, c, r))
            out.push_back(Pair{a, b});
    }
    return out;
}

// ---------------------------------------------------------------------------
// Output checks: every capacity in `capacities`; status, totals, prefix and
// that nothing past the written prefix was touched.

bool same(uint32_t a, uint32_t b) { return a == b; }
bool same(const NearestHit& a, const NearestHit& b) {
    return a.index == b.index && float_bits(a.distance_squared) == float_bits(b.distance_squared);
}
bool same(const Pair& a, const Pair& b) { return a.a == b.a && a.b == b.b; }
template <typename T>
T sentinel() {
    T t;
    std::memset(static_cast<void*>(&t), 0xef, sizeof(T));
    return t;
}
std::string text(uint32_t v) { return std::to_string(v); }
std::string text(const NearestHit& v) {
    return "{" + std::to_string(v.index) + "," + std::to_string(v.distance_squared) + "}";
}
std::string text(const Pair& p) { return pair_text(p); }

std::vector<uint64_t> capacities_for(uint64_t total, bool every) {
    std::vector<uint64_t> caps;
    if (every && total <= 64) {
        for (uint64_t c = 0; c <= total + 1; ++c)
            caps.push_back(c);
    } else {
        caps = {0, total / 2, total, total + 3};
        if (total > 0) caps.push_back(total - 1);
    }
    return caps;
}

template <typename T, typename Run>
std::string check_output(const std::vector<T>& expected, Run&& run, bool every_capacity) {
    for (uint64_t cap : capacities_for(expected.size(), every_capacity)) {
        std::vector<T> buf(static_cast<size_t>(cap) + 4, sentinel<T>());
        const QueryResult r = run(cap == 0 ? nullptr : buf.data(), cap);
        const std::string at = " (capacity " + std::to_string(cap) + ")";
        if (r.total != expected.size())
            return "total " + std::to_string(r.total) + " expected " + std::to_string(expected.size()) + at;
        const uint64_t want = std::min<uint64_t>(cap, expected.size());
        if (r.written != want) return "written " + std::to_string(r.written) + at;
        if (cap >= expected.size()) {
            if (!r.status.ok()) return std::string("status ") + to_string(r.status.code) + at;
        } else if (r.status.code != StatusCode::output_too_small || r.status.needed != expected.size()) {
            return std::string("expected output_too_small, got ") + to_string(r.status.code) + " needed " +
                   std::to_string(r.status.needed) + at;
        }
        for (uint64_t k = 0; k < want; ++k)
            if (!same(buf[k], expected[k]))
                return "result " + std::to_string(k) + ": expected " + text(expected[k]) + " got " + text(buf[k]) + at;
        for (uint64_t k = want; k < buf.size(); ++k)
            if (!same(buf[k], sentinel<T>())) return "wrote past the prefix at " + std::to_string(k) + at;
    }
    return "";
}

// ---------------------------------------------------------------------------
// Scenes and worlds.

Scene lattice_scene(uint32_t dims, uint32_t side, float step) {
    Scene s;
    s.dims = dims;
    for (uint32_t k = 0; k < (dims == 3 ? side : 1u); ++k)
        for (uint32_t j = 0; j < side; ++j)
            for (uint32_t i = 0; i < side; ++i)
                s.add(static_cast<float>(i) * step, static_cast<float>(j) * step, static_cast<float>(k) * step);
    return s;
}

enum class WorldKind { unbounded, bounded_reject, bounded_clamp };
const char* world_name(WorldKind w) {
    return w == WorldKind::unbounded ? "unbounded" : (w == WorldKind::bounded_reject ? "bounded" : "clamp");
}

/// Config for a scene: origin below the scene (clamp: a box over the middle
/// half of the scene, so particles on both sides are clamped).
GridConfig world_config(const Scene& s, WorldKind w, float cell, float distance) {
    GridConfig c = unbounded_config(s.dims, cell, distance, std::max<uint32_t>(s.size(), 1), 1);
    float lo[3];
    scene_min(s, lo);
    for (uint32_t a = 0; a < 3; ++a)
        c.origin[a] = a < s.dims ? lo[a] - rounded_mul(1.5f, cell) : 0.0f;
    if (w == WorldKind::unbounded) return c;
    c = bounded_config(s, c, 2);
    if (w == WorldKind::bounded_clamp) {
        c.out_of_bounds = OutOfBounds::clamp;
        for (uint32_t a = 0; a < s.dims; ++a) {
            const uint32_t quarter = c.cell_counts[a] / 4;
            c.origin[a] = c.origin[a] + rounded_mul(static_cast<float>(quarter), cell);
            c.cell_counts[a] = std::max<uint32_t>(c.cell_counts[a] / 2, 1);
        }
    }
    return c;
}

struct Built {
    std::unique_ptr<OwnedGrid> grid;
    GridConfig config;
    std::vector<uint32_t> pos; ///< Expected sorted position of each particle (oracle).
};

Built build(const Scene& s, const GridConfig& config) {
    Built b;
    b.config = config;
    b.grid = make_grid(config);
    REQUIRE(b.grid->init_status.ok());
    const Status st = (*b.grid)->rebuild(s.spans(), serial_backend());
    REQUIRE_MESSAGE(st.ok(), to_string(st.code));
    b.pos = invert(expected_order(s, config));
    return b;
}

// ---------------------------------------------------------------------------
// Query generators (portable: Rng and single float operations only).

struct Extent {
    float lo[3] = {0, 0, 0};
    float hi[3] = {0, 0, 0};
};

Extent extent_of(const Scene& s) {
    Extent e;
    for (uint32_t a = 0; a < s.dims; ++a) {
        e.lo[a] = s.size() ? s.coord(a, 0) : 0.0f;
        e.hi[a] = e.lo[a];
        for (uint32_t i = 0; i < s.size(); ++i) {
            e.lo[a] = std::min(e.lo[a], s.coord(a, i));
            e.hi[a] = std::max(e.hi[a], s.coord(a, i));
        }
    }
    return e;
}

/// A query centre: on a particle, uniform around the scene, on a nominal or
/// guarded cell edge, or far outside.
void random_centre(Rng& rng, const Scene& s, const GridConfig& c, const Extent& e, float* out) {
    const uint32_t kind = rng.below(5);
    const uint32_t i = s.size() ? rng.below(s.size()) : 0;
    for (uint32_t a = 0; a < 3; ++a) {
        if (a >= s.dims) {
            out[a] = 0.0f;
            continue;
        }
        const float margin = rounded_mul(3.0f, c.cell_size);
        switch (kind) {
        case 0:
            out[a] = s.size() ? s.coord(a, i) : 0.0f;
            break;
        case 1:
            out[a] = rng.uniform(e.lo[a] - margin, e.hi[a] + margin);
            break;
        case 2:
            out[a] = c.origin[a] + rounded_mul(static_cast<float>(rng.between(-3, 40)), c.cell_size);
            break;
        case 3: {
            const float guarded = static_cast<float>(static_cast<double>(c.cell_size) * kCellGuard);
            out[a] = c.origin[a] + rounded_mul(static_cast<float>(rng.between(-3, 40)), guarded);
            break;
        }
        default: {
            // Separate statements: the order of calls within one expression is unspecified.
            const float sign = rng.coin() ? 1.0f : -1.0f;
            out[a] = sign * rounded_mul(rng.uniform(500.0f, 5000.0f), c.cell_size);
            break;
        }
        }
    }
}

float random_radius(Rng& rng, const GridConfig& c) {
    switch (rng.below(8)) {
    case 0:
        return 0.0f;
    case 1:
        return rounded_mul(c.cell_size, rng.uniform(0.05f, 0.9f));
    case 2:
        return c.cell_size;
    case 3:
        return c.interaction_distance;
    case 4:
        return rounded_mul(c.cell_size, rng.uniform(1.0f, 4.0f));
    case 5:
        return rounded_mul(c.cell_size, rng.uniform(10.0f, 60.0f));
    case 6:
        return rng.coin() ? kInf : 1e30f;
    default:
        return rounded_mul(c.cell_size, rng.uniform(0.5f, 2.0f));
    }
}

QueryBox random_box(Rng& rng, const Scene& s, const GridConfig& c, const Extent& e) {
    QueryBox b;
    float centre[3];
    random_centre(rng, s, c, e, centre);
    const uint32_t kind = rng.below(6);
    for (uint32_t a = 0; a < 3; ++a) {
        if (a >= s.dims) continue;
        float half = rounded_mul(c.cell_size, rng.uniform(0.0f, 3.0f));
        if (kind == 1) half = 0.0f; // a point box
        if (kind == 2) half = rounded_mul(c.cell_size, rng.uniform(20.0f, 80.0f));
        b.min[a] = centre[a] - half;
        b.max[a] = centre[a] + half;
        if (kind == 3 && s.size()) { // faces exactly on particle coordinates
            const float p = s.coord(a, rng.below(s.size()));
            const float q = s.coord(a, rng.below(s.size()));
            b.min[a] = std::min(p, q);
            b.max[a] = std::max(p, q);
        }
        if (kind == 4) { // half-infinite
            if (rng.coin())
                b.min[a] = -kInf;
            else
                b.max[a] = kInf;
        }
    }
    return b;
}

/// Six planes around a random centre (so the frustum holds it), or special
/// shapes: inside-out, a zero-thickness slab, huge, all-space, nothing.
Frustum random_frustum(Rng& rng, const Scene& s, const GridConfig& c, const Extent& e) {
    Frustum f = six_plane_frustum();
    float centre[3];
    random_centre(rng, s, c, e, centre);
    const uint32_t kind = rng.below(8);
    for (uint32_t p = 0; p < f.plane_count; ++p) {
        hashgrid::Plane& pl = f.planes[p];
        const float nx = rng.uniform(-1.0f, 1.0f);
        const float ny = rng.uniform(-1.0f, 1.0f);
        const float nz = s.dims == 3 ? rng.uniform(-1.0f, 1.0f) : 0.0f;
        float w = rounded_mul(c.cell_size, rng.uniform(0.2f, 6.0f));
        if (kind == 5) w = rounded_mul(c.cell_size, 1e5f); // far larger than the world
        float dot = rounded_mul(nx, centre[0]) + rounded_mul(ny, centre[1]);
        dot = dot + rounded_mul(nz, centre[2]);
        pl.normal[0] = nx;
        pl.normal[1] = ny;
        pl.normal[2] = nz;
        pl.d = w - dot;
    }
    if (kind == 6) // inside-out: the complement half-spaces
        for (uint32_t p = 0; p < f.plane_count; ++p)
            f.planes[p] = {{-f.planes[p].normal[0], -f.planes[p].normal[1], -f.planes[p].normal[2]}, -f.planes[p].d};
    if (kind == 7) { // a zero-thickness slab through a particle (or the centre)
        const float* p = centre;
        float q[3] = {0, 0, 0};
        if (s.size()) {
            const uint32_t i = rng.below(s.size());
            q[0] = s.x[i];
            q[1] = s.y[i];
            q[2] = s.z[i];
            p = q;
        }
        f.planes[0].normal[0] = 0.0f;
        f.planes[0].normal[1] = 1.0f;
        f.planes[0].normal[2] = 0.0f;
        f.planes[0].d = -p[1];
        f.planes[1].normal[0] = 0.0f;
        f.planes[1].normal[1] = -1.0f;
        f.planes[1].normal[2] = 0.0f;
        f.planes[1].d = p[1];
    }
    if (kind == 4 && rng.coin()) // all planes always true
        for (uint32_t p = 0; p < f.plane_count; ++p)
            f.planes[p] = hashgrid::Plane{};
    return f;
}

uint32_t random_k(Rng& rng, const Scene& s) {
    switch (rng.below(5)) {
    case 0:
        return 1;
    case 1:
        return 1 + rng.below(8);
    case 2:
        return 10 + rng.below(40);
    case 3:
        return s.size() + 5;
    default:
        return 2;
    }
}

float random_max_distance(Rng& rng, const GridConfig& c) {
    switch (rng.below(5)) {
    case 0:
        return kInf;
    case 1:
        return rounded_mul(c.cell_size, rng.uniform(0.2f, 1.0f));
    case 2:
        return rounded_mul(c.cell_size, rng.uniform(1.0f, 5.0f));
    case 3:
        return 0.0f;
    default:
        return kInf;
    }
}

// ---------------------------------------------------------------------------
// One scene in one world: every query kind against the oracle.

struct Failures {
    uint32_t count = 0;
    std::string first;
    void add(const std::string& what, const std::string& diff) {
        if (diff.empty()) return;
        if (count++ == 0) first = what + ": " + diff;
    }
};

/// The visitor form against the expected (buffer-form) results: every
/// result once, in order; then a visitor that stops after `stop_after`
/// results is called exactly that often, with the same prefix.
template <typename Query>
std::string check_visitor(const std::vector<uint32_t>& expected, uint64_t stop_after, Query&& query) {
    struct Recorder {
        std::vector<uint32_t> seen;
        uint64_t stop_after = ~uint64_t{0};
        static bool visit(void* context, uint32_t index) {
            auto* self = static_cast<Recorder*>(context);
            self->seen.push_back(index);
            return self->seen.size() < self->stop_after;
        }
    };
    Recorder all;
    const QueryResult r = query(QueryVisitor{&Recorder::visit, &all});
    if (!r.status.ok() || r.written != 0 || r.total != expected.size() || all.seen != expected)
        return "visitor: " + std::to_string(all.seen.size()) + " calls, total " + std::to_string(r.total) +
               ", expected " + std::to_string(expected.size());
    if (expected.empty()) return "";
    Recorder some;
    some.stop_after = stop_after < 1 ? 1 : stop_after;
    const QueryResult rs = query(QueryVisitor{&Recorder::visit, &some});
    const uint64_t want = std::min<uint64_t>(some.stop_after, expected.size());
    if (!rs.status.ok() || rs.total != want || some.seen.size() != want ||
        !std::equal(some.seen.begin(), some.seen.end(), expected.begin()))
        return "visitor stopping after " + std::to_string(some.stop_after) + ": " + std::to_string(some.seen.size()) +
               " calls, total " + std::to_string(rs.total);
    return "";
}

/// Stops for the nearest visitor: every call (~0), `extra`, and with
/// `boundaries` the first calls and those around the ends of its runs of
/// 1, 2, 4, ... 64 hits (after 1, 3, 7, ..., 127, 191), half and the last two.
std::vector<uint64_t> nearest_stops(uint64_t n, uint64_t extra, bool boundaries) {
    std::vector<uint64_t> stops = {~uint64_t{0}};
    if (extra >= 1 && extra <= n) stops.push_back(extra);
    if (!boundaries) return stops;
    for (uint64_t m : {uint64_t{1}, uint64_t{2}, n / 2, n - 1, n})
        if (m >= 1 && m <= n) stops.push_back(m);
    for (uint64_t end : {3u, 7u, 15u, 31u, 63u, 127u, 191u})
        for (uint64_t m = end - 1; m <= end + 1; ++m)
            if (m <= n) stops.push_back(m);
    return stops;
}

/// The nearest visitor form against the buffer form's output `expected`:
/// for every stop m, exactly min(m, n) calls with the first hits, bit for
/// bit, total = calls, written 0, status ok.
template <typename Query>
std::string check_nearest_visitor(const std::vector<NearestHit>& expected, const std::vector<uint64_t>& stops,
                                  Query&& query) {
    struct Recorder {
        std::vector<NearestHit> seen;
        uint64_t stop_after = ~uint64_t{0};
        static bool visit(void* context, const NearestHit& hit) {
            auto* self = static_cast<Recorder*>(context);
            self->seen.push_back(hit);
            return self->seen.size() < self->stop_after;
        }
    };
    for (const uint64_t m : stops) {
        Recorder rec;
        rec.stop_after = m;
        const QueryResult r = query(NearestVisitor{&Recorder::visit, &rec});
        const uint64_t want = std::min<uint64_t>(m, expected.size());
        const std::string at = " (stop after " + std::to_string(m) + ", " + std::to_string(expected.size()) + " hits)";
        if (!r.status.ok()) return std::string("nearest visitor status ") + to_string(r.status.code) + at;
        if (r.total != want || r.written != 0 || rec.seen.size() != want)
            return "nearest visitor: " + std::to_string(rec.seen.size()) + " calls, total " + std::to_string(r.total) +
                   at;
        for (uint64_t i = 0; i < want; ++i)
            if (!same(rec.seen[i], expected[i]))
                return "nearest visitor hit " + std::to_string(i) + ": expected " + text(expected[i]) + " got " +
                       text(rec.seen[i]) + at;
    }
    return "";
}

/// The buffer form's whole answer (capacity k).
std::vector<NearestHit> nearest_buffer(const Grid& grid, const QueryNearest& q) {
    std::vector<NearestHit> out(q.k);
    const QueryResult r = query_nearest(grid, q, out.data(), out.size());
    REQUIRE(r.status.ok());
    out.resize(r.written);
    return out;
}

void check_scene(const std::string& name, const Scene& s, const GridConfig& config, WorldKind w, uint64_t seed,
                 uint32_t queries) {
    const float distance = config.interaction_distance;
    const Built b = build(s, config);
    const Grid& grid = **b.grid;
    Rng rng(seed);
    const Extent e = extent_of(s);
    Failures f;
    const std::string where = name + " " + world_name(w);
    // Queries with a non-empty expected result, per kind: the scenes must
    // exercise the queries, not only agree on empty answers.
    uint32_t nonempty[5] = {0, 0, 0, 0, 0};
    auto tally = [&](uint32_t kind, const auto& expected) -> const auto& {
        nonempty[kind] += expected.empty() ? 0u : 1u;
        return expected;
    };
    for (uint32_t q = 0; q < queries; ++q) {
        const bool every = q % 8 == 0;
        float c[3];
        random_centre(rng, s, config, e, c);
        const float r = random_radius(rng, config);
        const std::vector<uint32_t> in_radius = oracle_radius(s, b.pos, c, r);
        f.add("radius",
              check_output(
                  tally(0, in_radius),
                  [&](uint32_t* out, uint64_t cap) { return query_radius(grid, sphere_at(c, r), out, cap); }, every));
        const std::vector<uint32_t> near_point = oracle_radius(s, b.pos, c, distance);
        f.add("point",
              check_output(
                  tally(1, near_point),
                  [&](uint32_t* out, uint64_t cap) { return query_point(grid, point_at(c), out, cap); }, every));
        const QueryBox box = random_box(rng, s, config, e);
        const std::vector<uint32_t> in_box = oracle_box(s, b.pos, box);
        f.add("box", check_output(
                         tally(2, in_box), [&](uint32_t* out, uint64_t cap) { return query_box(grid, box, out, cap); },
                         every));
        const Frustum fr = random_frustum(rng, s, config, e);
        const std::vector<uint32_t> in_frustum = oracle_frustum(s, b.pos, fr);
        f.add("frustum", check_output(
                             tally(3, in_frustum),
                             [&](uint32_t* out, uint64_t cap) { return query_frustum(grid, fr, out, cap); }, every));
        const uint64_t stop = rng.below(8) == 0 ? 1 : rng.below(40);
        f.add("radius visitor",
              check_visitor(in_radius, stop, [&](QueryVisitor v) { return query_radius(grid, sphere_at(c, r), v); }));
        f.add("point visitor",
              check_visitor(near_point, stop, [&](QueryVisitor v) { return query_point(grid, point_at(c), v); }));
        f.add("box visitor", check_visitor(in_box, stop, [&](QueryVisitor v) { return query_box(grid, box, v); }));
        f.add("frustum visitor",
              check_visitor(in_frustum, stop, [&](QueryVisitor v) { return query_frustum(grid, fr, v); }));
        const uint32_t k = random_k(rng, s);
        const float md = random_max_distance(rng, config);
        f.add("nearest k=" + std::to_string(k),
              check_output(
                  tally(4, oracle_nearest(s, c, k, md)),
                  [&](NearestHit* out, uint64_t cap) { return query_nearest(grid, nearest_at(c, k, md), out, cap); },
                  every));
        const std::vector<NearestHit> nearest = nearest_buffer(grid, nearest_at(c, k, md));
        f.add("nearest visitor k=" + std::to_string(k),
              check_nearest_visitor(nearest, nearest_stops(nearest.size(), stop, every),
                                    [&](NearestVisitor v) { return query_nearest(grid, nearest_at(c, k, md), v); }));
        if (f.count != 0 && f.first.find("query") == std::string::npos)
            f.first += " [query " + std::to_string(q) + " c=(" + std::to_string(c[0]) + "," + std::to_string(c[1]) +
                       "," + std::to_string(c[2]) + ")]";
    }
    CHECK_MESSAGE(f.count == 0, where, ": ", f.count, " failures, first: ", f.first);
    if (s.size() > 0 && test_scale() == 1.0) // scaled-down scenes are too sparse to ask this
        for (uint32_t kind = 0; kind < 5; ++kind)
            CHECK_MESSAGE(nonempty[kind] * 8 >= queries, where, ": query kind ", kind, " rarely finds anything (",
                          nonempty[kind], " of ", queries, ")");
}

struct SceneSpec {
    std::string name;
    Scene scene;
    float cell;
    float distance;
};

std::vector<SceneSpec> oracle_scenes() {
    std::vector<SceneSpec> v;
    Rng rng(0x5eed0001);
    const uint32_t n = scaled_count(1500);
    v.push_back({"uniform3d", uniform_scene(rng, 3, n, 0.0f, 14.0f), 1.0f, 1.0f});
    v.push_back({"clustered3d", clustered_scene(rng, 3, n, 4, -10.0f, 10.0f, 0.8f), 1.0f, 0.75f});
    v.push_back({"uniform2d", uniform_scene(rng, 2, n, -30.0f, 30.0f), 2.0f, 1.5f});
    v.push_back({"clustered2d", clustered_scene(rng, 2, n, 6, 0.0f, 40.0f, 1.5f), 1.0f, 1.0f});
    v.push_back({"lattice3d", lattice_scene(3, 9, 0.5f), 1.0f, 1.0f});
    v.push_back({"lattice2d", lattice_scene(2, 24, 0.5f), 1.0f, 0.5f});
    v.push_back({"onecell3d", uniform_scene(rng, 3, 60, 2.0f, 2.9f), 1.0f, 1.0f});
    Scene outliers = uniform_scene(rng, 3, scaled_count(300), 0.0f, 8.0f);
    outliers.add(4000.0f, -3000.0f, 250.0f);
    outliers.add(-9000.5f, 7.0f, -2.0f);
    v.push_back({"outliers3d", outliers, 1.0f, 1.0f});
    Scene empty;
    v.push_back({"empty3d", empty, 1.0f, 1.0f});
    return v;
}

} // namespace

TEST_CASE("single queries match the brute-force oracle") {
    const uint32_t queries = scaled_count(200);
    uint64_t seed = 100;
    for (const SceneSpec& sp : oracle_scenes())
        for (WorldKind w : {WorldKind::unbounded, WorldKind::bounded_reject, WorldKind::bounded_clamp}) {
            GridConfig config = world_config(sp.scene, w, sp.cell, sp.distance);
            if (w != WorldKind::unbounded && sp.name == "outliers3d") {
                // A box over the outliers would hold ~10^9 cells: a small
                // clamp box instead (the outliers land in border cells).
                if (w == WorldKind::bounded_reject) continue;
                config = world_config(sp.scene, WorldKind::unbounded, sp.cell, sp.distance);
                config.world = World::bounded;
                config.out_of_bounds = OutOfBounds::clamp;
                for (uint32_t a = 0; a < 3; ++a)
                    config.cell_counts[a] = 6;
                config.origin[0] = 1.0f;
                config.origin[1] = 1.0f;
                config.origin[2] = 1.0f;
            }
            check_scene(sp.name, sp.scene, config, w, ++seed, queries);
        }
}

TEST_CASE("unbounded worlds far from the origin and across the wrap seam: every query matches the oracle") {
    const uint32_t queries = scaled_count(150);
    uint64_t seed = 900;
    for (const FarScene& fs : far_scenes(scaled_count(1200))) {
        INFO(std::string(fs.name));
        const std::string name = fs.name;
        if (name.find("3e38") == std::string::npos) {
            check_scene(name, fs.scene, fs.config, WorldKind::unbounded, ++seed, queries);
            continue;
        }
        // Near the top of the float range the random generators overflow
        // (centres, planes): queries on the scene's own coordinates instead.
        const Built b = build(fs.scene, fs.config);
        const Grid& grid = **b.grid;
        Rng rng(++seed);
        Failures f;
        for (uint32_t q = 0; q < queries; ++q) {
            const uint32_t i = rng.below(fs.scene.size());
            const float c[3] = {fs.scene.x[i], fs.scene.y[i], fs.scene.z[i]};
            const float radii[4] = {0.5f, 2.0f, 1.0e30f, kInf};
            const float r = radii[rng.below(4)];
            f.add("radius",
                  check_output(
                      oracle_radius(fs.scene, b.pos, c, r),
                      [&](uint32_t* out, uint64_t cap) { return query_radius(grid, sphere_at(c, r), out, cap); },
                      true));
            QueryBox box;
            for (uint32_t a = 0; a < 3; ++a) {
                box.min[a] = rng.coin() ? c[a] : -kInf;
                box.max[a] = rng.coin() ? c[a] : kInf;
            }
            f.add("box", check_output(
                             oracle_box(fs.scene, b.pos, box),
                             [&](uint32_t* out, uint64_t cap) { return query_box(grid, box, out, cap); }, true));
            const uint32_t k = 1 + rng.below(6);
            const float md = rng.coin() ? kInf : 1.0f;
            f.add("nearest", check_output(
                                 oracle_nearest(fs.scene, c, k, md),
                                 [&](NearestHit* out, uint64_t cap) {
                                     return query_nearest(grid, nearest_at(c, k, md), out, cap);
                                 },
                                 true));
            // Many hits at d2 = +inf (squares beyond the float range): ordered by index.
            const uint32_t many = fs.scene.size() + 2;
            f.add("nearest visitor",
                  check_nearest_visitor(nearest_buffer(grid, nearest_at(c, many, kInf)),
                                        nearest_stops(many, 1 + rng.below(many), q % 8 == 0), [&](NearestVisitor v) {
                                            return query_nearest(grid, nearest_at(c, many, kInf), v);
                                        }));
            Frustum fr = six_plane_frustum(); // two slabs through the particle: x = c.x and y = c.y
            fr.planes[0].normal[0] = 1.0f;
            fr.planes[0].d = -c[0];
            fr.planes[1].normal[0] = -1.0f;
            fr.planes[1].d = c[0];
            fr.planes[2].normal[1] = 1.0f;
            fr.planes[2].d = -c[1];
            f.add("frustum", check_output(
                                 oracle_frustum(fs.scene, b.pos, fr),
                                 [&](uint32_t* out, uint64_t cap) { return query_frustum(grid, fr, out, cap); }, true));
        }
        CHECK_MESSAGE(f.count == 0, name, ": ", f.count, " failures, first: ", f.first);
    }
}

TEST_CASE("radius spanning many cells, and centres far outside the occupied cells") {
    Rng rng(7);
    const Scene s = uniform_scene(rng, 3, 400, 0.0f, 6.0f);
    for (WorldKind w : {WorldKind::unbounded, WorldKind::bounded_reject, WorldKind::bounded_clamp}) {
        const GridConfig config = world_config(s, w, 0.25f, 0.25f);
        const Built b = build(s, config);
        const float centres[][3] = {{3, 3, 3}, {1e6f, -1e6f, 5}, {-2e5f, 3, 3}, {0.0f, 0.0f, 0.0f}};
        const float radii[] = {0.1f, 0.25f, 1.0f, 5.0f, 40.0f, 3e6f, kInf};
        for (const auto& c : centres)
            for (float r : radii) {
                const std::string d = check_output(
                    oracle_radius(s, b.pos, c, r),
                    [&](uint32_t* out, uint64_t cap) { return query_radius(**b.grid, sphere_at(c, r), out, cap); },
                    false);
                CHECK_MESSAGE(d.empty(), world_name(w), " r=", r, ": ", d);
                for (uint32_t k : {1u, 7u, 400u, 1000u}) {
                    const std::string dn = check_output(
                        oracle_nearest(s, c, k, kInf),
                        [&](NearestHit* out, uint64_t cap) {
                            return query_nearest(**b.grid, nearest_at(c, k, kInf), out, cap);
                        },
                        false);
                    CHECK_MESSAGE(dn.empty(), world_name(w), " k=", k, ": ", dn);
                }
            }
    }
}

// A long, nearly empty bounded world (a million cells along y, a few
// particles at the far end): query_nearest used to scan every shell through
// its whole clipped interior, O(shells^2) cell visits (minutes here); it now
// scans only shell faces and walks the occupied cells once the shells would
// look at more cells than that. A regression shows as a CTest timeout; the
// answers are checked against brute force. Radius, box and frustum queries
// spanning the whole world must likewise not walk the million empty rows.
TEST_CASE("nearest and wide queries in a long empty bounded world cost the occupied cells") {
    constexpr uint32_t kRows = 1000000;
    for (uint32_t dims : {2u, 3u})
        for (OutOfBounds mode : {OutOfBounds::clamp, OutOfBounds::reject}) {
            Scene s;
            s.dims = dims;
            const float far_y = static_cast<float>(kRows) - 3.5f;
            s.add(0.5f, far_y, 0.5f);
            s.add(1.5f, far_y + 1.0f, 1.25f);
            s.add(1.25f, far_y - 7.0f, 0.75f);
            s.add(0.75f, far_y + 2.0f, 1.5f);
            s.add(1.75f, 2.0e5f, 0.25f);
            GridConfig config = unbounded_config(dims, 1.0f, 1.0f, 8, 64);
            config.world = World::bounded;
            config.out_of_bounds = mode;
            config.cell_counts[0] = 2;
            config.cell_counts[1] = kRows;
            config.cell_counts[2] = dims == 3 ? 2u : 1u;
            const Built b = build(s, config);
            const float centres[][3] = {{0.5f, 0.5f, 0.5f}, {1.0f, -5.0e6f, 1.0f}, {0.5f, 5.0e5f, 0.5f}};
            for (const auto& c : centres) {
                for (uint32_t k : {1u, 2u, 5u, 9u})
                    for (float md : {kInf, 1.5e6f, 10.0f}) {
                        const std::string d = check_output(
                            oracle_nearest(s, c, k, md),
                            [&](NearestHit* out, uint64_t cap) {
                                return query_nearest(**b.grid, nearest_at(c, k, md), out, cap);
                            },
                            true);
                        CHECK_MESSAGE(d.empty(), "dims ", dims, " k=", k, " max=", md, ": ", d);
                    }
                const std::string dr = check_output(
                    oracle_radius(s, b.pos, c, 3.0e6f),
                    [&](uint32_t* out, uint64_t cap) { return query_radius(**b.grid, sphere_at(c, 3.0e6f), out, cap); },
                    true);
                CHECK_MESSAGE(dr.empty(), "radius: ", dr);
            }
            QueryBox box;
            for (uint32_t a = 0; a < 3; ++a) {
                box.min[a] = -kInf;
                box.max[a] = kInf;
            }
            const std::string db = check_output(
                oracle_box(s, b.pos, box),
                [&](uint32_t* out, uint64_t cap) { return query_box(**b.grid, box, out, cap); }, true);
            CHECK_MESSAGE(db.empty(), "box: ", db);
            Frustum f = six_plane_frustum(); // y >= 1000 only
            f.planes[0].normal[1] = 1.0f;
            f.planes[0].d = -1000.0f;
            const std::string df = check_output(
                oracle_frustum(s, b.pos, f),
                [&](uint32_t* out, uint64_t cap) { return query_frustum(**b.grid, f, out, cap); }, true);
            CHECK_MESSAGE(df.empty(), "frustum: ", df);
        }
}

TEST_CASE("nearest visitor: duplicate points and distance ties, every run boundary, statuses") {
    Rng rng(31);
    for (uint32_t dims : {2u, 3u})
        for (WorldKind w : {WorldKind::unbounded, WorldKind::bounded_reject, WorldKind::bounded_clamp}) {
            // Points on a half-cell lattice (many equal distances), each one to
            // four times (equal distances and positions, different indices).
            Scene s;
            s.dims = dims;
            const uint32_t n = scaled_count(400);
            while (s.size() < n) {
                const float x = 0.5f * static_cast<float>(rng.below(16));
                const float y = 0.5f * static_cast<float>(rng.below(16));
                const float z = dims == 3 ? 0.5f * static_cast<float>(rng.below(6)) : 0.0f;
                for (uint32_t copies = 1 + rng.below(4); copies > 0 && s.size() < n; --copies)
                    s.add(x, y, z);
            }
            const GridConfig config = world_config(s, w, 1.0f, 1.0f);
            const Built b = build(s, config);
            const Grid& grid = **b.grid;
            for (uint32_t q = 0; q < scaled_count(24); ++q) {
                float c[3] = {0.0f, 0.0f, 0.0f};
                const uint32_t i = rng.below(s.size());
                for (uint32_t a = 0; a < dims; ++a) // on a particle, on the lattice, or anywhere
                    c[a] = q % 3 == 0 ? s.coord(a, i)
                                      : (q % 3 == 1 ? 0.5f * static_cast<float>(rng.between(-2, 18))
                                                    : rng.uniform(-2.0f, 10.0f));
                const uint32_t ks[] = {1, 2, 3, 8, 64, 65, 200, s.size() + 3};
                const float limits[] = {kInf, 1.5f, 0.5f, 0.0f};
                for (uint32_t k : ks)
                    for (float md : limits) {
                        const QueryNearest nq = nearest_at(c, k, md);
                        const std::vector<NearestHit> expected = nearest_buffer(grid, nq);
                        const std::vector<NearestHit> oracle = oracle_nearest(s, c, k, md);
                        REQUIRE(expected.size() == oracle.size());
                        for (size_t j = 0; j < oracle.size(); ++j)
                            REQUIRE(same(expected[j], oracle[j]));
                        const std::string d = check_nearest_visitor(
                            expected, nearest_stops(expected.size(), 1 + rng.below(k), k == 200 || q < 2),
                            [&](NearestVisitor v) { return query_nearest(grid, nq, v); });
                        CHECK_MESSAGE(d.empty(), dims, "D ", world_name(w), " k=", k, " max=", md, ": ", d);
                    }
            }
        }

    // Statuses: the buffer form's, with no call.
    Scene s;
    s.dims = 3;
    s.add(1.0f, 1.0f, 1.0f);
    s.add(2.0f, 1.0f, 1.0f);
    auto owned = make_grid(world_config(s, WorldKind::unbounded, 1.0f, 1.0f));
    REQUIRE(owned->init_status.ok());
    Grid& grid = **owned;
    uint32_t calls = 0;
    const NearestVisitor counter{[](void* context, const NearestHit&) {
                                     ++*static_cast<uint32_t*>(context);
                                     return true;
                                 },
                                 &calls};
    const float c[3] = {1.0f, 1.0f, 1.0f};
    CHECK(query_nearest(grid, nearest_at(c, 2, kInf), counter).status.code == StatusCode::not_built);
    REQUIRE(grid.rebuild(s.spans(), serial_backend()).ok());
    const float nan_c[3] = {1.0f, kNaN, 1.0f};
    const float inf_c[3] = {kInf, 1.0f, 1.0f};
    CHECK(query_nearest(grid, nearest_at(nan_c, 2, kInf), counter).status.code == StatusCode::invalid_query);
    CHECK(query_nearest(grid, nearest_at(inf_c, 2, kInf), counter).status.code == StatusCode::invalid_query);
    CHECK(query_nearest(grid, nearest_at(c, 0, kInf), counter).status.code == StatusCode::invalid_query);
    CHECK(query_nearest(grid, nearest_at(c, 2, -1.0f), counter).status.code == StatusCode::invalid_query);
    CHECK(query_nearest(grid, nearest_at(c, 2, kNaN), counter).status.code == StatusCode::invalid_query);
    CHECK(calls == 0);
    {
        ContinueOnAssert hook;
        const QueryResult r = query_nearest(grid, nearest_at(c, 2, kInf), NearestVisitor{});
        CHECK(r.status.code == StatusCode::invalid_argument);
        CHECK(r.total == 0);
    }
    const QueryResult r = query_nearest(grid, nearest_at(c, 5, kInf), counter);
    CHECK(r.status.ok());
    CHECK(r.total == 2);
    CHECK(r.written == 0);
    CHECK(calls == 2);
}

TEST_CASE("point-set pairs match the oracle, every capacity, any thread count") {
    Rng rng(11);
    for (uint32_t dims : {2u, 3u})
        for (WorldKind w : {WorldKind::unbounded, WorldKind::bounded_reject, WorldKind::bounded_clamp}) {
            const Scene s = clustered_scene(rng, dims, scaled_count(1200), 5, 0.0f, 12.0f, 1.0f);
            const Scene points = uniform_scene(rng, dims, scaled_count(700), -2.0f, 14.0f);
            const GridConfig config = world_config(s, w, 1.0f, 0.8f);
            const Built b = build(s, config);
            const std::vector<Pair> expected = oracle_point_set(s, b.pos, points, 0.8f);
            const std::string d = check_output(
                expected,
                [&](Pair* out, uint64_t cap) {
                    return (**b.grid).find_pairs_with(points.spans(), out, cap, serial_backend());
                },
                false);
            CHECK_MESSAGE(d.empty(), dims, "D ", world_name(w), ": ", d);
            for (uint32_t threads : {1u, 2u, 4u, 8u}) {
                ParallelBackend pb(threads);
                std::vector<Pair> got(expected.size() + 1);
                const QueryResult r = (**b.grid).find_pairs_with(points.spans(), got.data(), got.size(), pb.backend());
                CHECK(r.status.ok());
                CHECK(diff_pairs(expected, got.data(), r.written).empty());
                // A too-small buffer gets the same prefix with any thread count.
                const uint64_t half = expected.size() / 2;
                const QueryResult h = (**b.grid).find_pairs_with(points.spans(), got.data(), half, pb.backend());
                CHECK(h.status.code == StatusCode::output_too_small);
                CHECK(h.status.needed == expected.size());
                CHECK(diff_pairs(std::vector<Pair>(expected.begin(), expected.begin() + static_cast<long>(half)),
                                 got.data(), h.written)
                          .empty());
            }
        }
    // Every capacity on a small case.
    Scene s;
    s.dims = 3;
    for (uint32_t i = 0; i < 12; ++i)
        s.add(0.3f * static_cast<float>(i), 0.0f, 0.0f);
    Scene points;
    points.dims = 3;
    points.add(1.0f, 0.0f, 0.0f);
    points.add(2.2f, 0.1f, 0.0f);
    points.add(50.0f, 0.0f, 0.0f);
    const GridConfig config = world_config(s, WorldKind::unbounded, 1.0f, 1.0f);
    const Built b = build(s, config);
    const std::string d = check_output(
        oracle_point_set(s, b.pos, points, 1.0f),
        [&](Pair* out, uint64_t cap) { return (**b.grid).find_pairs_with(points.spans(), out, cap, serial_backend()); },
        true);
    CHECK_MESSAGE(d.empty(), d);
}

namespace {

struct BatchOut {
    QueryResult result;
    std::vector<uint64_t> offsets;
    std::vector<uint32_t> indices;
    std::vector<NearestHit> neighbors;
};

bool same_batch(const BatchOut& a, const BatchOut& b) {
    if (a.result.total != b.result.total || a.result.written != b.result.written) return false;
    if (a.offsets != b.offsets || a.indices != b.indices || a.neighbors.size() != b.neighbors.size()) return false;
    for (size_t i = 0; i < a.neighbors.size(); ++i)
        if (!same(a.neighbors[i], b.neighbors[i])) return false;
    return true;
}

} // namespace

TEST_CASE("batched queries equal the single queries, for every backend, chunks last to first and too-small outputs") {
    Rng rng(23);
    for (uint32_t dims : {3u, 2u})
        for (WorldKind w : {WorldKind::unbounded, WorldKind::bounded_clamp}) {
            const Scene s = clustered_scene(rng, dims, scaled_count(2000), 5, 0.0f, 16.0f, 1.2f);
            const GridConfig config = world_config(s, w, 1.0f, 1.0f);
            const Built b = build(s, config);
            const Grid& grid = **b.grid;
            const Extent e = extent_of(s);
            const uint32_t q = scaled_count(300);
            Scene centres;
            centres.dims = dims;
            std::vector<float> radii(q);
            std::vector<QueryBox> boxes(q);
            std::vector<QueryPoint> points(q);
            std::vector<Frustum> frusta(q);
            for (uint32_t i = 0; i < q; ++i) {
                float c[3];
                random_centre(rng, s, config, e, c);
                centres.add(c[0], c[1], c[2]);
                radii[i] = rounded_mul(config.cell_size, rng.uniform(0.0f, 3.0f));
                boxes[i] = random_box(rng, s, config, e);
                points[i] = point_at(c);
                frusta[i] = random_frustum(rng, s, config, e);
            }
            ParticleSpans rq = centres.spans();
            rq.radius = radii.data();
            const uint32_t k = 6;
            const float md = 2.5f;
            // Singles, concatenated. Kinds: radius, box, nearest, point, frustum.
            constexpr uint32_t kKinds = 5;
            BatchOut single[kKinds];
            for (BatchOut& o : single)
                o.offsets.push_back(0);
            for (uint32_t i = 0; i < q; ++i) {
                const float c[3] = {centres.x[i], centres.y[i], centres.z[i]};
                std::vector<uint32_t> buf(s.size() + 1);
                QueryResult r = query_radius(grid, sphere_at(c, radii[i]), buf.data(), buf.size());
                single[0].indices.insert(single[0].indices.end(), buf.begin(),
                                         buf.begin() + static_cast<long>(r.written));
                single[0].offsets.push_back(single[0].indices.size());
                r = query_box(grid, boxes[i], buf.data(), buf.size());
                single[1].indices.insert(single[1].indices.end(), buf.begin(),
                                         buf.begin() + static_cast<long>(r.written));
                single[1].offsets.push_back(single[1].indices.size());
                std::vector<NearestHit> nb(k);
                r = query_nearest(grid, nearest_at(c, k, md), nb.data(), k);
                single[2].neighbors.insert(single[2].neighbors.end(), nb.begin(),
                                           nb.begin() + static_cast<long>(r.written));
                single[2].offsets.push_back(single[2].neighbors.size());
                r = query_point(grid, points[i], buf.data(), buf.size());
                single[3].indices.insert(single[3].indices.end(), buf.begin(),
                                         buf.begin() + static_cast<long>(r.written));
                single[3].offsets.push_back(single[3].indices.size());
                r = query_frustum(grid, frusta[i], buf.data(), buf.size());
                single[4].indices.insert(single[4].indices.end(), buf.begin(),
                                         buf.begin() + static_cast<long>(r.written));
                single[4].offsets.push_back(single[4].indices.size());
            }
            for (BatchOut& o : single)
                o.result.total = o.result.written = o.offsets.back();

            auto run_all = [&](const ThreadBackend& backend, uint64_t capacity_fraction_num, uint64_t den) {
                BatchOut out[kKinds];
                for (uint32_t kind = 0; kind < kKinds; ++kind) {
                    const uint64_t total = single[kind].offsets.back();
                    const uint64_t cap = total * capacity_fraction_num / den;
                    out[kind].offsets.assign(q + 1, ~uint64_t{0});
                    if (kind == 2) {
                        out[kind].neighbors.assign(cap, NearestHit{0, 0.0f});
                        out[kind].result = query_nearest_batch(grid, nearests_of(centres.spans(), k, md).data(),
                                                               (centres.spans()).count, out[kind].offsets.data(), q + 1,
                                                               out[kind].neighbors.data(), cap, backend);
                        out[kind].neighbors.resize(out[kind].result.written);
                    } else {
                        out[kind].indices.assign(cap, 0);
                        uint64_t* offsets = out[kind].offsets.data();
                        uint32_t* indices = out[kind].indices.data();
                        if (kind == 0)
                            out[kind].result = query_radius_batch(grid, spheres_of(rq).data(), q, offsets, q + 1,
                                                                  indices, cap, backend);
                        if (kind == 1)
                            out[kind].result =
                                query_box_batch(grid, boxes.data(), q, offsets, q + 1, indices, cap, backend);
                        if (kind == 3)
                            out[kind].result =
                                query_point_batch(grid, points.data(), q, offsets, q + 1, indices, cap, backend);
                        if (kind == 4)
                            out[kind].result =
                                query_frustum_batch(grid, frusta.data(), q, offsets, q + 1, indices, cap, backend);
                        out[kind].indices.resize(out[kind].result.written);
                    }
                    const bool fits = cap >= total;
                    CHECK(out[kind].result.status.code == (fits ? StatusCode::ok : StatusCode::output_too_small));
                    CHECK(out[kind].result.total == total);
                }
                return std::vector<BatchOut>(out, out + kKinds);
            };
            const std::vector<BatchOut> serial = run_all(serial_backend(), 1, 1);
            for (uint32_t kind = 0; kind < kKinds; ++kind)
                CHECK_MESSAGE(same_batch(serial[kind], single[kind]), "batched kind ", kind, " != singles");
            for (uint32_t threads : {0u, 1u, 2u, 4u, 8u}) { // 0: every loop's chunks last to first
                ParallelBackend pb(threads == 0 ? 1 : threads);
                const ThreadBackend backend = threads == 0 ? reverse_order_backend() : pb.backend();
                const std::vector<BatchOut> par = run_all(backend, 1, 1);
                for (uint32_t kind = 0; kind < kKinds; ++kind)
                    CHECK_MESSAGE(same_batch(par[kind], serial[kind]), "kind ", kind, " threads ", threads);
                // Too small: offsets still exact, output the prefix of the concatenation.
                const std::vector<BatchOut> part = run_all(backend, 1, 3);
                for (uint32_t kind = 0; kind < kKinds; ++kind) {
                    CHECK(part[kind].offsets == single[kind].offsets);
                    const uint64_t n = part[kind].result.written;
                    if (kind == 2) {
                        for (uint64_t i = 0; i < n; ++i)
                            CHECK(same(part[kind].neighbors[i], single[kind].neighbors[i]));
                    } else {
                        CHECK(std::equal(part[kind].indices.begin(), part[kind].indices.end(),
                                         single[kind].indices.begin()));
                    }
                }
            }
        }
}

TEST_CASE("batches whose results crowd some chunks: exact output and offsets, every capacity and backend") {
    // Points one per unit cell along x, so a box over [a, a + t) x [0, 1)
    // holds exactly t of them: each query's total is set by hand. Batches
    // of 16-query chunks (and of 17, past 1024 chunks) whose totals crowd
    // the front, the back or every third chunk make chunks outgrow their
    // share of the output, so later chunks' results move up past several
    // shares, earlier ones move down, and only the overflow runs again.
    constexpr uint32_t kLine = 2048;
    Scene s;
    s.dims = 2;
    for (uint32_t i = 0; i < kLine; ++i)
        s.add(static_cast<float>(i) + 0.5f, 0.5f, 0.0f);
    GridConfig config = bounded_config(s, unbounded_config(2, 1.0f, 1.0f, kLine, 1), 1);
    auto owned = make_grid(config);
    REQUIRE(owned->init_status.ok());
    Grid& grid = **owned;
    REQUIRE(grid.rebuild(s.spans(), serial_backend()).ok());

    // total(pattern, q, count): the results of query q.
    auto total_of = [](uint32_t pattern, uint32_t q, uint32_t count) -> uint32_t {
        const uint32_t chunk = q / 16;
        switch (pattern) {
        case 0:
            return chunk == 0 ? 300 : 1 + q % 3; // the first chunk crowded
        case 1:
            return q + 16 >= count ? 300 : q % 2; // the last chunk crowded
        case 2:
            return chunk % 3 == 0 ? 120 + q % 7 : (q % 5 == 0); // every third chunk
        default:
            return (q * 2654435761u >> 7) % 5 == 0 ? 200 : 0; // scattered, many empty
        }
    };
    for (uint32_t count : {16u * 40u, 1024u * 16u + 5u}) {
        for (uint32_t pattern = 0; pattern < 4; ++pattern) {
            CAPTURE(count);
            CAPTURE(pattern);
            std::vector<QueryBox> boxes(count);
            std::vector<uint64_t> expect_offsets(count + 1, 0);
            std::vector<uint32_t> expect; // the single queries, concatenated
            std::vector<uint32_t> buf(kLine + 1);
            for (uint32_t q = 0; q < count; ++q) {
                const uint32_t t = total_of(pattern, q, count);
                const uint32_t a = (q * 37u) % (kLine - t + 1);
                QueryBox& b = boxes[q];
                b.min[0] = static_cast<float>(a) + 0.25f;
                // t == 0: a degenerate box between two points (min > max would be invalid).
                b.max[0] = t == 0 ? b.min[0] : static_cast<float>(a + t) - 0.25f;
                b.min[1] = 0.25f;
                b.max[1] = 0.75f;
                const QueryResult r = query_box(grid, b, buf.data(), buf.size());
                REQUIRE(r.total == t); // hand-computed: t points under the box
                expect.insert(expect.end(), buf.begin(), buf.begin() + static_cast<long>(r.written));
                expect_offsets[q + 1] = expect.size();
            }
            const uint64_t need = expect.size();
            auto check_all = [&](const ThreadBackend& backend, uint32_t threads) {
                CAPTURE(threads);
                for (uint64_t cap : {need + need / 4, need, need - 1, need / 2, uint64_t{0}}) {
                    CAPTURE(cap);
                    std::vector<uint64_t> offsets(count + 1, ~uint64_t{0});
                    std::vector<uint32_t> out(cap + 1, 0xdeadbeefu);
                    const QueryResult r = query_box_batch(grid, boxes.data(), count, offsets.data(), offsets.size(),
                                                          cap == 0 ? nullptr : out.data(), cap, backend);
                    CHECK(r.total == need);
                    CHECK(r.written == std::min(cap, need));
                    CHECK(r.status.code == (cap >= need ? StatusCode::ok : StatusCode::output_too_small));
                    CHECK(offsets == expect_offsets);
                    CHECK(std::equal(expect.begin(), expect.begin() + static_cast<long>(r.written), out.begin()));
                    CHECK(out[cap] == 0xdeadbeefu); // nothing past the capacity
                }
            };
            check_all(serial_backend(), 0);
            check_all(reverse_order_backend(), 1);
            for (uint32_t threads : {2u, 3u, 8u}) {
                ParallelBackend pb(threads);
                check_all(pb.backend(), threads);
            }
        }
    }
}

TEST_CASE("bad input and unbuilt grids") {
    Rng rng(3);
    const Scene s = uniform_scene(rng, 3, 200, 0.0f, 5.0f);
    GridConfig config = world_config(s, WorldKind::unbounded, 1.0f, 1.0f);
    auto owned = make_grid(config);
    REQUIRE(owned->init_status.ok());
    Grid& grid = **owned;
    const float c[3] = {1, 1, 1};
    uint32_t out[8];
    NearestHit nb[8];
    Pair pairs[8];
    uint64_t offsets[4];
    QueryBox box;
    Frustum fr = six_plane_frustum();
    box.max[0] = box.max[1] = box.max[2] = 5.0f;
    auto all_codes = [&](StatusCode code, uint64_t cap) {
        CHECK(query_radius(grid, sphere_at(c, 1.0f), out, cap).status.code == code);
        CHECK(query_point(grid, point_at(c), out, cap).status.code == code);
        CHECK(query_box(grid, box, out, cap).status.code == code);
        CHECK(query_frustum(grid, fr, out, cap).status.code == code);
        CHECK(query_nearest(grid, nearest_at(c, 3, kInf), nb, cap).status.code == code);
        CHECK(grid.find_pairs_with(s.spans(), pairs, cap, serial_backend()).status.code == code);
    };
    all_codes(StatusCode::not_built, 8); // initialised, never rebuilt
    REQUIRE(grid.rebuild(s.spans(), serial_backend()).ok());
    all_codes(StatusCode::output_too_small, 0);

    const float nan_c[3] = {1, kNaN, 1};
    const float inf_c[3] = {kInf, 1, 1};
    for (const float* bad : {nan_c, inf_c}) {
        CHECK(query_radius(grid, sphere_at(bad, 1.0f), out, 8).status.code == StatusCode::invalid_query);
        CHECK(query_point(grid, point_at(bad), out, 8).status.code == StatusCode::invalid_query);
        CHECK(query_nearest(grid, nearest_at(bad, 3, kInf), nb, 8).status.code == StatusCode::invalid_query);
    }
    CHECK(query_radius(grid, sphere_at(c, -1.0f), out, 8).status.code == StatusCode::invalid_query);
    CHECK(query_radius(grid, sphere_at(c, kNaN), out, 8).status.code == StatusCode::invalid_query);
    CHECK(query_radius(grid, sphere_at(c, 0.0f), out, 8).status.ok());
    CHECK(query_nearest(grid, nearest_at(c, 0, kInf), nb, 8).status.code == StatusCode::invalid_query);
    CHECK(query_nearest(grid, nearest_at(c, 3, kNaN), nb, 8).status.code == StatusCode::invalid_query);
    CHECK(query_nearest(grid, nearest_at(c, 3, -0.5f), nb, 8).status.code == StatusCode::invalid_query);
    QueryBox inverted;
    inverted.min[1] = 2.0f;
    inverted.max[1] = 1.0f;
    CHECK(query_box(grid, inverted, out, 8).status.code == StatusCode::invalid_query);
    QueryBox nan_box;
    nan_box.max[2] = kNaN;
    CHECK(query_box(grid, nan_box, out, 8).status.code == StatusCode::invalid_query);
    Frustum nan_fr = six_plane_frustum();
    nan_fr.planes[4].d = kNaN;
    CHECK(query_frustum(grid, nan_fr, out, 8).status.code == StatusCode::invalid_query);
    Frustum inf_fr = six_plane_frustum();
    inf_fr.planes[2].normal[0] = kInf;
    CHECK(query_frustum(grid, inf_fr, out, 8).status.code == StatusCode::invalid_query);

    // Batches: the lowest offending query and how many (out then holds
    // unspecified partial results, as the batch contract says).
    Scene pts;
    pts.dims = 3;
    pts.add(1, 1, 1);
    pts.add(1, kNaN, 1);
    pts.add(2, 2, 2);
    pts.add(kInf, 2, 2);
    std::vector<float> radii = {1.0f, 1.0f, -1.0f, 1.0f};
    ParticleSpans rq = pts.spans();
    rq.radius = radii.data();
    std::vector<uint64_t> offs(5);
    std::fill(std::begin(out), std::end(out), kSentinel);
    QueryResult r =
        query_radius_batch(grid, spheres_of(rq).data(), (rq).count, offs.data(), 5, out, 8, serial_backend());
    CHECK(r.status.code == StatusCode::invalid_query);
    CHECK(r.status.index == 1);
    CHECK(r.status.count == 3);
    r = query_nearest_batch(grid, nearests_of(pts.spans(), 2, kInf).data(), (pts.spans()).count, offs.data(), 5, nb, 8,
                            serial_backend());
    CHECK(r.status.code == StatusCode::invalid_query);
    CHECK(r.status.index == 1);
    CHECK(query_nearest_batch(grid, nearests_of(pts.spans(), 0, kInf).data(), (pts.spans()).count, offs.data(), 5, nb,
                              8, serial_backend())
              .status.code == StatusCode::invalid_query);
    r = grid.find_pairs_with(pts.spans(), pairs, 8, serial_backend());
    CHECK(r.status.code == StatusCode::invalid_query);
    CHECK(r.status.index == 1);
    CHECK(r.status.count == 2);
    QueryBox boxes[3];
    boxes[2] = inverted;
    r = query_box_batch(grid, boxes, 3, offsets, 4, out, 8, serial_backend());
    CHECK(r.status.code == StatusCode::invalid_query);
    CHECK(r.status.index == 2);
    // Offsets too small: needed = count + 1, nothing written.
    r = query_box_batch(grid, boxes, 3, offsets, 3, out, 8, serial_backend());
    CHECK(r.status.code == StatusCode::output_too_small);
    CHECK(r.status.needed == 4);
    // Empty batches.
    r = query_box_batch(grid, boxes, 0, offsets, 1, nullptr, 0, serial_backend());
    CHECK(r.status.ok());
    CHECK(offsets[0] == 0);

    // A rejected frame keeps the previous one queryable; a cell_capacity
    // failure leaves the grid unbuilt.
    const uint64_t before = query_radius(grid, sphere_at(c, 2.0f), nullptr, 0).total;
    Scene bad = s;
    bad.x[5] = kNaN;
    CHECK(grid.rebuild(bad.spans(), serial_backend()).code == StatusCode::invalid_position);
    CHECK(query_radius(grid, sphere_at(c, 2.0f), nullptr, 0).total == before);
    GridConfig tiny = config;
    tiny.max_cells = 2;
    auto small = make_grid(tiny);
    REQUIRE(small->init_status.ok());
    CHECK((*small)->rebuild(s.spans(), serial_backend()).code == StatusCode::cell_capacity);
    CHECK(query_radius(**small, sphere_at(c, 1.0f), out, 8).status.code == StatusCode::not_built);
}

// ---------------------------------------------------------------------------
// Golden hashes of fixed scenes: golden::kParticleQueries in tests/golden_hashes.h.

namespace {

uint64_t golden_hash(uint32_t which, const ThreadBackend& backend) {
    Rng rng(0x901d + which);
    Scene s;
    float cell = 1.0f, distance = 1.0f;
    WorldKind w = WorldKind::unbounded;
    switch (which) {
    case 0:
        s = uniform_scene(rng, 3, 2000, 0.0f, 12.0f);
        break;
    case 1:
        s = clustered_scene(rng, 3, 2000, 3, -8.0f, 8.0f, 1.0f);
        w = WorldKind::bounded_reject;
        distance = 0.7f;
        break;
    case 2:
        s = uniform_scene(rng, 2, 2000, -20.0f, 20.0f);
        w = WorldKind::bounded_clamp;
        cell = 1.5f;
        break;
    default:
        s = lattice_scene(3, 10, 0.5f);
        break;
    }
    const GridConfig config = world_config(s, w, cell, distance);
    const Built b = build(s, config);
    const Grid& grid = **b.grid;
    const Extent e = extent_of(s);
    Fnv1a h;
    std::vector<uint32_t> buf(s.size() + 1);
    std::vector<NearestHit> nb(64);
    for (uint32_t q = 0; q < 40; ++q) {
        float c[3];
        random_centre(rng, s, config, e, c);
        const float r = rounded_mul(cell, rng.uniform(0.0f, 3.0f));
        QueryResult res = query_radius(grid, sphere_at(c, r), buf.data(), buf.size());
        h.u64(res.total);
        for (uint64_t i = 0; i < res.written; ++i)
            h.u32(buf[i]);
        res = query_box(grid, random_box(rng, s, config, e), buf.data(), buf.size());
        h.u64(res.total);
        for (uint64_t i = 0; i < res.written; ++i)
            h.u32(buf[i]);
        res = query_frustum(grid, random_frustum(rng, s, config, e), buf.data(), buf.size());
        h.u64(res.total);
        for (uint64_t i = 0; i < res.written; ++i)
            h.u32(buf[i]);
        res = query_nearest(grid, nearest_at(c, 1 + q % 20, q % 3 == 0 ? 2.0f * cell : kInf), nb.data(), nb.size());
        h.u64(res.total);
        for (uint64_t i = 0; i < res.written; ++i) {
            h.u32(nb[i].index);
            h.f32(nb[i].distance_squared);
        }
    }
    const Scene points = uniform_scene(rng, s.dims, 500, e.lo[0], e.hi[0]);
    std::vector<Pair> pairs(s.size() * 64);
    const QueryResult pr = grid.find_pairs_with(points.spans(), pairs.data(), pairs.size(), backend);
    h.u64(hash_pairs(pairs.data(), pr.written));
    std::vector<uint64_t> offsets(points.size() + 1);
    std::vector<NearestHit> knn(points.size() * 5);
    const QueryResult kr =
        query_nearest_batch(grid, nearests_of(points.spans(), 5, kInf).data(), (points.spans()).count, offsets.data(),
                            offsets.size(), knn.data(), knn.size(), backend);
    for (uint64_t o : offsets)
        h.u64(o);
    for (uint64_t i = 0; i < kr.written; ++i) {
        h.u32(knn[i].index);
        h.f32(knn[i].distance_squared);
    }
    return h.value();
}

} // namespace

TEST_CASE("golden hashes of query results") {
    const auto& table = golden::kParticleQueries;
    static_assert(std::size(golden::kParticleQueries) == 4);
    const bool print = std::getenv("HASHGRID_PRINT_GOLDEN") != nullptr;
    if (print) std::printf("inline constexpr NamedHash kParticleQueries[] = {\n");
    for (uint32_t i = 0; i < 4; ++i) {
        const uint64_t serial = golden_hash(i, serial_backend());
        if (print) std::printf("    {\"%s\", 0x%016" PRIx64 "ull},\n", table[i].name, serial);
        ParallelBackend pb(4);
        CHECK(golden_hash(i, pb.backend()) == serial);
        if (!print) CHECK_MESSAGE(serial == table[i].hash, std::string(table[i].name));
    }
    if (print) std::printf("};\n");
}

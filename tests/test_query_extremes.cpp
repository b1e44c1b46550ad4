// SPDX-License-Identifier: MIT
// Particle and box-object queries at the float extremes, against brute-force
// oracles that repeat the arithmetic the headers document, operation by
// operation: coordinates, radii and plane values at denormals (1e-45,
// 1e-38), -0.0, 1e18..1e20 (where squares overflow), 3e38 and FLT_MAX, in
// bounded (clamp) and unbounded grids, 2D and 3D. Also: NaN/inf parameters are
// invalid_query (infinite radius, max_distance, max_t and box bounds are
// allowed), overflowing batches write the same bytes on 1, 2, 3 and 8
// threads, and null pointers / unusable grids are invalid_argument.
#include <doctest/doctest.h>

#include "hashgrid/assert.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid_support/box_scene.h"
#include "test_support.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace hashgrid;
using namespace hashgrid_test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Values that fit an unbounded 3D grid of cell 1e15 (keys up to ~1e21).
const std::vector<float> kModerate = {0.0f,   -0.0f, 1e-45f, -1e-45f, 1e-38f, -1e-38f, 1.0f,   -1.0f, 1e18f,
                                      -1e18f, 1e19f, -1e19f, 1e20f,   -1e20f, 3e20f,   -3e20f, 9e20f};
/// Everything up to FLT_MAX (2D unbounded grids of cell 1e30, clamp worlds).
std::vector<float> all_values() {
    std::vector<float> v = kModerate;
    for (float x : {3e38f, -3e38f, FLT_MAX, -FLT_MAX})
        v.push_back(x);
    return v;
}
const std::vector<float> kRadii = {0.0f,          1e-45f, 1e-38f, 1e-20f, 1.0f,    1e18f, 1e19f,
                                   1.8446743e19f, 1e20f,  3e20f,  3e38f,  FLT_MAX, kInf};

float pick(Rng& rng, const std::vector<float>& v) { return v[rng.below(static_cast<uint32_t>(v.size()))]; }

/// One kind of grid per scene: where its coordinates may go.
struct Kind {
    const char* name;
    uint32_t dims;
    bool bounded;
    float cell;
    bool full_range; ///< Coordinates up to FLT_MAX.
};
const Kind kKinds[] = {
    {"unbounded 3D cell 1e15", 3, false, 1e15f, false},
    {"unbounded 2D cell 1e30", 2, false, 1e30f, true},
    {"bounded clamp 3D", 3, true, 1.0f, true},
    {"bounded clamp 2D", 2, true, 1.0f, true},
    {"bounded clamp 3D cell 1e19", 3, true, 1e19f, true},
};

// ---------------------------------------------------------------------------
// Oracles: the documented float arithmetic (products rounded before adding).

float particle_d2(const Scene& s, uint32_t i, const float* c) {
    const float dx = s.x[i] - c[0];
    const float dy = s.y[i] - c[1];
    float d2 = rounded_mul(dx, dx) + rounded_mul(dy, dy);
    if (s.dims == 3) {
        const float dz = s.z[i] - c[2];
        d2 = d2 + rounded_mul(dz, dz);
    }
    return d2;
}

float box_d2(const float* p, const float* lo, const float* hi, uint32_t dims) {
    float d2 = 0.0f;
    for (uint32_t d = 0; d < dims; ++d) {
        const float v = p[d] < lo[d] ? lo[d] - p[d] : (p[d] > hi[d] ? p[d] - hi[d] : 0.0f);
        d2 = d2 + rounded_mul(v, v);
    }
    return d2;
}

template <typename T>
std::vector<T> sorted(std::vector<T> v) {
    std::sort(v.begin(), v.end());
    return v;
}

std::string diff(const std::vector<uint32_t>& want, const std::vector<uint32_t>& got) {
    if (want == got) return "";
    std::string m = "want " + std::to_string(want.size()) + " {";
    for (size_t i = 0; i < want.size() && i < 8; ++i)
        m += std::to_string(want[i]) + ",";
    m += "} got " + std::to_string(got.size()) + " {";
    for (size_t i = 0; i < got.size() && i < 8; ++i)
        m += std::to_string(got[i]) + ",";
    return m + "}";
}

// ---------------------------------------------------------------------------
// Particle scenes.

GridConfig particle_config(const Kind& k, uint32_t n) {
    GridConfig c = unbounded_config(k.dims, k.cell, k.cell, n, 16);
    if (k.bounded) {
        c.world = World::bounded;
        c.out_of_bounds = OutOfBounds::clamp;
        for (uint32_t a = 0; a < 3; ++a) {
            c.origin[a] = a < k.dims ? -4.0f * k.cell : 0.0f;
            c.cell_counts[a] = a < k.dims ? 8u : 1u;
        }
    }
    return c;
}

Scene particle_scene(const Kind& k, Rng& rng, uint32_t n) {
    const std::vector<float> values = k.full_range ? all_values() : kModerate;
    Scene s;
    s.dims = k.dims;
    for (uint32_t i = 0; i < n; ++i) {
        const float x = pick(rng, values);
        const float y = pick(rng, values);
        const float z = pick(rng, values);
        s.add(x, y, z);
    }
    return s;
}

std::vector<uint32_t> run_indices(uint64_t total, const std::function<QueryResult(uint32_t*, uint64_t)>& q) {
    std::vector<uint32_t> out(static_cast<size_t>(total) + 1);
    const QueryResult r = q(out.data(), out.size());
    REQUIRE(r.status.ok());
    out.resize(static_cast<size_t>(r.written));
    return sorted(out);
}

TEST_CASE("particle queries follow their documented float rule at the extremes") {
    Rng rng(2024);
    for (const Kind& k : kKinds) {
        const uint32_t n = 120;
        const Scene s = particle_scene(k, rng, n);
        const GridConfig config = particle_config(k, n);
        auto g = make_grid(config);
        REQUIRE(g->init_status.ok());
        const Status built = (*g)->rebuild(s.spans(), serial_backend());
        REQUIRE_MESSAGE(built.ok(), k.name, " ", to_string(built.code));
        const Grid& grid = **g;
        const std::vector<float> values = k.full_range ? all_values() : kModerate;
        for (uint32_t q = 0; q < 150; ++q) {
            float c[3] = {pick(rng, values), pick(rng, values), pick(rng, values)};
            if (k.dims == 2) c[2] = 0.0f;
            // Radius: d2 < fl(r * r); an overflowing square is +inf and +inf < +inf is false.
            const float r = pick(rng, kRadii);
            std::vector<uint32_t> want;
            const float r2 = rounded_mul(r, r);
            for (uint32_t i = 0; i < n; ++i)
                if (particle_d2(s, i, c) < r2) want.push_back(i);
            const auto got =
                run_indices(n, [&](uint32_t* o, uint64_t cap) { return query_radius(grid, sphere_at(c, r), o, cap); });
            CHECK_MESSAGE(diff(want, got).empty(), k.name, " radius ", r, ": ", diff(want, got));

            // Box: min <= p <= max per axis, infinite bounds allowed.
            QueryBox box;
            for (uint32_t a = 0; a < 3; ++a) {
                float lo = pick(rng, values), hi = pick(rng, values);
                if (rng.below(4) == 0) lo = -kInf;
                if (rng.below(4) == 0) hi = kInf;
                if (lo > hi) std::swap(lo, hi);
                box.min[a] = lo;
                box.max[a] = hi;
            }
            want.clear();
            for (uint32_t i = 0; i < n; ++i) {
                bool inside = true;
                for (uint32_t a = 0; a < k.dims; ++a)
                    inside = inside && s.coord(a, i) >= box.min[a] && s.coord(a, i) <= box.max[a];
                if (inside) want.push_back(i);
            }
            const auto got_box =
                run_indices(n, [&](uint32_t* o, uint64_t cap) { return query_box(grid, box, o, cap); });
            CHECK_MESSAGE(diff(want, got_box).empty(), k.name, " box: ", diff(want, got_box));

            // Frustum: ((nx*x + ny*y) + nz*z) + d >= 0 in float; NaN (inf - inf) is outside.
            Frustum f = six_plane_frustum();
            const std::vector<float> normals = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1e-38f, 1e20f, -1e20f, FLT_MAX};
            const uint32_t planes = 1 + rng.below(3);
            for (uint32_t p = 0; p < planes; ++p) {
                for (uint32_t a = 0; a < 3; ++a)
                    f.planes[p].normal[a] = pick(rng, normals);
                f.planes[p].d = pick(rng, values);
            }
            want.clear();
            for (uint32_t i = 0; i < n; ++i) {
                bool inside = true;
                for (uint32_t p = 0; p < f.plane_count; ++p) {
                    const Plane& pl = f.planes[p];
                    float value = rounded_mul(pl.normal[0], s.x[i]) + rounded_mul(pl.normal[1], s.y[i]);
                    if (k.dims == 3) value = value + rounded_mul(pl.normal[2], s.z[i]);
                    value = value + pl.d;
                    inside = inside && value >= 0.0f;
                }
                if (inside) want.push_back(i);
            }
            const auto got_f =
                run_indices(n, [&](uint32_t* o, uint64_t cap) { return query_frustum(grid, f, o, cap); });
            CHECK_MESSAGE(diff(want, got_f).empty(), k.name, " frustum: ", diff(want, got_f));

            // Nearest: max_distance +inf is no limit (d2 = +inf included),
            // otherwise d2 < fl(max_distance^2); ordered by (d2, index).
            const float md = pick(rng, kRadii);
            const uint32_t kk = 1 + rng.below(n + 4);
            std::vector<NearestHit> all;
            const float md2 = rounded_mul(md, md);
            for (uint32_t i = 0; i < n; ++i) {
                const float d2 = particle_d2(s, i, c);
                if (md == kInf || d2 < md2) all.push_back({i, d2});
            }
            std::sort(all.begin(), all.end(), [](const NearestHit& a, const NearestHit& b) {
                return a.distance_squared != b.distance_squared ? a.distance_squared < b.distance_squared
                                                                : a.index < b.index;
            });
            if (all.size() > kk) all.resize(kk);
            std::vector<NearestHit> got_n(kk);
            const QueryResult rn = query_nearest(grid, nearest_at(c, kk, md), got_n.data(), kk);
            REQUIRE(rn.status.ok());
            bool same = rn.total == all.size();
            for (size_t i = 0; same && i < all.size(); ++i)
                same = got_n[i].index == all[i].index &&
                       float_bits(got_n[i].distance_squared) == float_bits(all[i].distance_squared);
            CHECK_MESSAGE(same, k.name, " nearest k=", kk, " max=", md, " total ", rn.total, " want ", all.size());
        }
    }
}

// ---------------------------------------------------------------------------
// Box scenes.

using hashgrid_support::BoxScene;

struct BuiltBoxes {
    BoxGridConfig config;
    BoxScene scene;
    BoxGrid grid;
    BoxQueryGrid q;
};

void build_boxes(const Kind& k, Rng& rng, uint32_t n, BuiltBoxes& b) {
    const std::vector<float> values = k.full_range ? all_values() : kModerate;
    b.scene.dims = k.dims;
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t d = 0; d < 3; ++d) {
            float a = d < k.dims ? pick(rng, values) : 0.0f;
            float c = d < k.dims ? (rng.below(3) == 0 ? a : pick(rng, values)) : 0.0f;
            if (a > c) std::swap(a, c);
            b.scene.lo[d].push_back(a);
            b.scene.hi[d].push_back(c);
        }
    BoxGridConfig& c = b.config;
    c.dimensions = k.dims;
    c.cell_size = k.cell;
    c.max_objects = n;
    c.max_cell_entries = 64 * n;
    c.max_pairs = uint64_t{n} * n;
    if (k.bounded) {
        c.world = World::bounded;
        c.out_of_bounds = OutOfBounds::clamp;
        for (uint32_t a = 0; a < 3; ++a) {
            c.origin[a] = a < k.dims ? -4.0f * k.cell : 0.0f;
            c.cell_counts[a] = a < k.dims ? 8u : 1u;
        }
    }
    REQUIRE(b.grid.init_allocate(c).ok());
    const Status st = b.grid.rebuild(b.scene.spans(), serial_backend());
    REQUIRE_MESSAGE(st.ok(), k.name, " ", to_string(st.code));
    b.q = prepare_box_queries(b.grid.view(), serial_backend());
}

std::vector<uint32_t> run_set(uint32_t n, const std::function<QueryResult(uint32_t*, uint64_t)>& q) {
    std::vector<uint32_t> out(n + 1);
    const QueryResult r = q(out.data(), n + 1);
    REQUIRE_MESSAGE(r.status.ok(), to_string(r.status.code));
    out.resize(r.written);
    return sorted(out);
}

/// The documented double slab test.
bool oracle_ray(const Ray& ray, const float lo[3], const float hi[3], uint32_t dims, float& t) {
    double enter = 0.0, exit = static_cast<double>(ray.max_t);
    for (uint32_t d = 0; d < dims; ++d) {
        if (ray.direction[d] == 0.0f) {
            if (ray.origin[d] < lo[d] || ray.origin[d] > hi[d]) return false;
            continue;
        }
        const double o = ray.origin[d], dir = ray.direction[d];
        double t1 = (static_cast<double>(lo[d]) - o) / dir, t2 = (static_cast<double>(hi[d]) - o) / dir;
        if (t1 > t2) std::swap(t1, t2);
        enter = std::max(enter, t1);
        exit = std::min(exit, t2);
    }
    if (!(enter <= exit)) return false;
    t = static_cast<float>(enter);
    return true;
}

TEST_CASE("box-object queries follow their documented float rule at the extremes") {
    Rng rng(77);
    for (const Kind& k : kKinds) {
        const uint32_t n = 100;
        BuiltBoxes b;
        build_boxes(k, rng, n, b);
        const BoxScene& s = b.scene;
        const std::vector<float> values = k.full_range ? all_values() : kModerate;
        for (uint32_t qi = 0; qi < 150; ++qi) {
            float c[3] = {pick(rng, values), pick(rng, values), pick(rng, values)};
            if (k.dims == 2) c[2] = 0.0f;
            // Radius: point_box_distance2 <= fl(r * r), so +inf <= +inf includes.
            QuerySphere rq;
            std::copy(c, c + 3, rq.center);
            rq.radius = pick(rng, kRadii);
            const float r2 = rounded_mul(rq.radius, rq.radius);
            std::vector<uint32_t> want;
            for (uint32_t i = 0; i < n; ++i) {
                float lo[3], hi[3];
                s.box(i, lo, hi);
                if (box_d2(c, lo, hi, k.dims) <= r2) want.push_back(i);
            }
            auto got = run_set(n, [&](uint32_t* o, uint64_t cap) { return query_radius(b.q, rq, kAllLayers, o, cap); });
            CHECK_MESSAGE(diff(want, got).empty(), k.name, " radius ", rq.radius, ": ", diff(want, got));

            // Point and box.
            QueryPoint pq;
            std::copy(c, c + 3, pq.position);
            want.clear();
            for (uint32_t i = 0; i < n; ++i) {
                bool in = true;
                for (uint32_t d = 0; d < k.dims; ++d)
                    in = in && s.lo[d][i] <= c[d] && c[d] <= s.hi[d][i];
                if (in) want.push_back(i);
            }
            got = run_set(n, [&](uint32_t* o, uint64_t cap) { return query_point(b.q, pq, kAllLayers, o, cap); });
            CHECK_MESSAGE(diff(want, got).empty(), k.name, " point: ", diff(want, got));
            QueryBox bq;
            for (uint32_t d = 0; d < 3; ++d) {
                float lo = pick(rng, values), hi = pick(rng, values);
                if (rng.below(4) == 0) lo = -kInf;
                if (rng.below(4) == 0) hi = kInf;
                if (lo > hi) std::swap(lo, hi);
                bq.min[d] = lo;
                bq.max[d] = hi;
            }
            want.clear();
            for (uint32_t i = 0; i < n; ++i) {
                bool in = true;
                for (uint32_t d = 0; d < k.dims; ++d)
                    in = in && bq.min[d] <= s.hi[d][i] && s.lo[d][i] <= bq.max[d];
                if (in) want.push_back(i);
            }
            got = run_set(n, [&](uint32_t* o, uint64_t cap) { return query_box(b.q, bq, kAllLayers, o, cap); });
            CHECK_MESSAGE(diff(want, got).empty(), k.name, " box: ", diff(want, got));

            // Frustum: rejected only when a positive vertex value is < 0 (NaN passes).
            Frustum frustum;
            Plane* planes = frustum.planes;
            const uint32_t plane_count = 1 + rng.below(3);
            frustum.plane_count = plane_count;
            const std::vector<float> normals = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1e-38f, 1e20f, -1e20f, FLT_MAX};
            for (uint32_t p = 0; p < plane_count; ++p) {
                for (uint32_t d = 0; d < 3; ++d)
                    planes[p].normal[d] = pick(rng, normals);
                planes[p].d = pick(rng, values);
            }
            want.clear();
            for (uint32_t i = 0; i < n; ++i) {
                bool in = true;
                for (uint32_t p = 0; p < plane_count; ++p) {
                    const float* nn = planes[p].normal;
                    const float px = nn[0] >= 0.0f ? s.hi[0][i] : s.lo[0][i];
                    const float py = nn[1] >= 0.0f ? s.hi[1][i] : s.lo[1][i];
                    float v = rounded_mul(nn[0], px) + rounded_mul(nn[1], py);
                    if (k.dims == 3) v = v + rounded_mul(nn[2], nn[2] >= 0.0f ? s.hi[2][i] : s.lo[2][i]);
                    v = v + planes[p].d;
                    in = in && !(v < 0.0f);
                }
                if (in) want.push_back(i);
            }
            got =
                run_set(n, [&](uint32_t* o, uint64_t cap) { return query_frustum(b.q, frustum, kAllLayers, o, cap); });
            CHECK_MESSAGE(diff(want, got).empty(), k.name, " frustum: ", diff(want, got));

            // Ray: the double slab test; ordered by (float t, index).
            Ray ray;
            std::copy(c, c + 3, ray.origin);
            for (uint32_t d = 0; d < 3; ++d)
                ray.direction[d] = d < k.dims ? pick(rng, values) : 0.0f;
            const std::vector<float> lengths = {0.0f, 1e-45f, 1.0f, 1e20f, FLT_MAX, kInf};
            ray.max_t = pick(rng, lengths);
            std::vector<RayHit> want_hits;
            for (uint32_t i = 0; i < n; ++i) {
                float lo[3], hi[3], t = 0.0f;
                s.box(i, lo, hi);
                if (oracle_ray(ray, lo, hi, k.dims, t)) want_hits.push_back({i, t});
            }
            std::sort(want_hits.begin(), want_hits.end(),
                      [](const RayHit& a, const RayHit& h) { return a.t != h.t ? a.t < h.t : a.index < h.index; });
            std::vector<RayHit> hits(n + 1);
            const QueryResult rr = query_ray(b.q, ray, kAllLayers, hits.data(), n + 1);
            REQUIRE(rr.status.ok());
            bool same = rr.total == want_hits.size();
            for (size_t i = 0; same && i < want_hits.size(); ++i)
                same = hits[i].index == want_hits[i].index && float_bits(hits[i].t) == float_bits(want_hits[i].t);
            CHECK_MESSAGE(same, k.name, " ray: count ", rr.total, " want ", want_hits.size());
            RayHit first;
            const QueryResult rf = query_ray_first(b.q, ray, kAllLayers, &first);
            REQUIRE(rf.status.ok());
            CHECK(rf.total == (want_hits.empty() ? 0u : 1u));
            if (!want_hits.empty()) CHECK(first.index == want_hits[0].index);

            // Nearest: d2 <= fl(max_distance^2), ordered by (d2, index).
            QueryNearest nq;
            std::copy(c, c + 3, nq.center);
            nq.max_distance = pick(rng, kRadii);
            const uint32_t kk = 1 + rng.below(n + 4);
            nq.k = kk;
            const float md2 = rounded_mul(nq.max_distance, nq.max_distance);
            std::vector<NearestHit> all;
            for (uint32_t i = 0; i < n; ++i) {
                float lo[3], hi[3];
                s.box(i, lo, hi);
                const float d2 = box_d2(c, lo, hi, k.dims);
                if (d2 <= md2) all.push_back({i, d2});
            }
            std::sort(all.begin(), all.end(), [](const NearestHit& a, const NearestHit& h) {
                return a.distance_squared != h.distance_squared ? a.distance_squared < h.distance_squared
                                                                : a.index < h.index;
            });
            if (all.size() > kk) all.resize(kk);
            std::vector<NearestHit> got_nearest(kk);
            const QueryResult rn = query_nearest(b.q, nq, kAllLayers, got_nearest.data(), kk);
            REQUIRE(rn.status.ok());
            same = rn.total == all.size();
            for (size_t i = 0; same && i < all.size(); ++i)
                same = got_nearest[i].index == all[i].index &&
                       float_bits(got_nearest[i].distance_squared) == float_bits(all[i].distance_squared);
            CHECK_MESSAGE(same, k.name, " nearest k=", kk, " max=", nq.max_distance, " count ", rn.total, " want ",
                          all.size());
        }
    }
}

// The case that was reported: radius 1e20 (square +inf), object 3e20 away
// (d2 = +inf): +inf <= +inf, so it is found, in both kinds of world.
TEST_CASE("box query_radius: an overflowing square includes every object") {
    for (bool bounded : {false, true}) {
        BuiltBoxes b;
        BoxScene& s = b.scene;
        s.dims = 3;
        const float distant[3] = {3e20f, 0.0f, 0.0f};
        for (uint32_t d = 0; d < 3; ++d) {
            s.lo[d] = {0.0f, distant[d]};
            s.hi[d] = {0.0f, distant[d]};
        }
        b.config.dimensions = 3;
        b.config.cell_size = 1e15f;
        b.config.max_objects = 2;
        b.config.max_cell_entries = 16;
        b.config.max_pairs = 4;
        if (bounded) {
            b.config.world = World::bounded;
            b.config.out_of_bounds = OutOfBounds::clamp;
            b.config.origin[0] = b.config.origin[1] = b.config.origin[2] = -4e15f;
            b.config.cell_counts[0] = 1000000;
            b.config.cell_counts[1] = b.config.cell_counts[2] = 8;
            b.config.cell_size = 1e15f;
        }
        REQUIRE(b.grid.init_allocate(b.config).ok());
        REQUIRE(b.grid.rebuild(s.spans(), serial_backend()).ok());
        b.q = prepare_box_queries(b.grid.view(), serial_backend());
        QuerySphere rq;
        rq.radius = 1e20f;
        uint32_t out[4] = {};
        const QueryResult r = query_radius(b.q, rq, kAllLayers, out, 4);
        CHECK(r.status.ok());
        REQUIRE(r.total == 2);
        CHECK(out[0] == 0);
        CHECK(out[1] == 1);
    }
}

TEST_CASE("NaN and infinite parameters are invalid_query; +inf sizes are allowed") {
    Scene s;
    s.dims = 3;
    s.add(1.0f, 2.0f, 3.0f);
    auto g = make_grid(unbounded_config(3, 1.0f, 1.0f, 4, 4));
    REQUIRE((*g)->rebuild(s.spans(), serial_backend()).ok());
    const Grid& grid = **g;
    uint32_t out[4];
    NearestHit nearest_out[4];
    for (float bad : {kNaN, kInf, -kInf}) {
        const float c[3] = {0.0f, bad, 0.0f};
        const float ok[3] = {0.0f, 0.0f, 0.0f};
        CHECK(query_radius(grid, sphere_at(c, 1.0f), out, 4).status.code == StatusCode::invalid_query);
        CHECK(query_point(grid, point_at(c), out, 4).status.code == StatusCode::invalid_query);
        CHECK(query_nearest(grid, nearest_at(c, 1, kInf), nearest_out, 4).status.code == StatusCode::invalid_query);
        Frustum f = six_plane_frustum();
        f.planes[2].normal[1] = bad;
        CHECK(query_frustum(grid, f, out, 4).status.code == StatusCode::invalid_query);
        QueryBox box;
        box.min[1] = kNaN;
        CHECK(query_box(grid, box, out, 4).status.code == StatusCode::invalid_query);
        CHECK((query_radius(grid, sphere_at(ok, bad), out, 4).status.code == StatusCode::invalid_query) ==
              (bad != kInf));
        CHECK((query_nearest(grid, nearest_at(ok, 1, bad), nearest_out, 4).status.code == StatusCode::invalid_query) ==
              (bad != kInf));
    }
    const float particle[3] = {1.0f, 2.0f, 3.0f};
    CHECK(query_radius(grid, sphere_at(particle, -0.0f), out, 4).status.ok()); // -0.0 is a radius of zero
    QueryBox all;
    for (uint32_t a = 0; a < 3; ++a) {
        all.min[a] = -kInf;
        all.max[a] = kInf;
    }
    CHECK(query_box(grid, all, out, 4).total == 1);

    BuiltBoxes b;
    Rng rng(5);
    build_boxes(kKinds[0], rng, 10, b);
    NearestHit nh[4];
    RayHit rh[4];
    for (float bad : {kNaN, kInf, -kInf}) {
        QueryPoint pq;
        pq.position[0] = bad;
        CHECK(query_point(b.q, pq, kAllLayers, out, 4).status.code == StatusCode::invalid_query);
        QuerySphere rq;
        rq.center[2] = bad;
        CHECK(query_radius(b.q, rq, kAllLayers, out, 4).status.code == StatusCode::invalid_query);
        rq.center[2] = 0.0f;
        rq.radius = bad;
        CHECK((query_radius(b.q, rq, kAllLayers, out, 4).status.code == StatusCode::invalid_query) == (bad != kInf));
        QueryBox bq;
        bq.min[0] = kNaN;
        CHECK(query_box(b.q, bq, kAllLayers, out, 4).status.code == StatusCode::invalid_query);
        Ray ray;
        ray.direction[1] = bad;
        CHECK(query_ray(b.q, ray, kAllLayers, rh, 4).status.code == StatusCode::invalid_query);
        ray.direction[1] = 1.0f;
        ray.origin[0] = bad;
        CHECK(query_ray_first(b.q, ray, kAllLayers, rh).status.code == StatusCode::invalid_query);
        ray.origin[0] = 0.0f;
        ray.max_t = bad;
        CHECK((query_ray(b.q, ray, kAllLayers, rh, 4).status.code == StatusCode::invalid_query) == (bad != kInf));
        Frustum frustum;
        frustum.plane_count = 1;
        frustum.planes[0].d = bad;
        CHECK(query_frustum(b.q, frustum, kAllLayers, out, 4).status.code == StatusCode::invalid_query);
        QueryNearest nq;
        nq.center[1] = bad;
        CHECK(query_nearest(b.q, nq, kAllLayers, nh, 4).status.code == StatusCode::invalid_query);
        nq.center[1] = 0.0f;
        nq.max_distance = bad;
        CHECK((query_nearest(b.q, nq, kAllLayers, nh, 4).status.code == StatusCode::invalid_query) == (bad != kInf));
    }
    // A segment whose end - start overflows has an infinite direction.
    const float a[3] = {-FLT_MAX, 0.0f, 0.0f}, e[3] = {FLT_MAX, 0.0f, 0.0f};
    CHECK(query_ray(b.q, segment_ray(a, e), kAllLayers, rh, 4).status.code == StatusCode::invalid_query);
}

// ---------------------------------------------------------------------------
// Overflowing batches: the same bytes for every thread count.

template <typename T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST_CASE("overflowing batches write the same bytes on 1, 2, 3 and 8 threads") {
    Rng rng(99);
    // Query counts scale with HASHGRID_TEST_SCALE (emulated targets run a tenth).
    const uint32_t nq = scaled_count(500);
    const Scene s = clustered_scene(rng, 3, 3000, 6, 0.0f, 20.0f, 1.5f);
    auto g = make_grid(unbounded_config(3, 1.0f, 1.0f, 3000, 16));
    REQUIRE((*g)->rebuild(s.spans(), serial_backend()).ok());
    const Grid& grid = **g;
    const Scene centres = uniform_scene(rng, 3, scaled_count(700), -1.0f, 21.0f);
    Scene radius_queries_scene = centres;
    for (uint32_t i = 0; i < centres.size(); ++i)
        radius_queries_scene.radius.push_back(rng.uniform(0.0f, 2.5f));
    std::vector<QueryBox> pboxes(scaled_count(600));
    for (auto& bx : pboxes)
        for (uint32_t a = 0; a < 3; ++a) {
            bx.min[a] = rng.uniform(-1.0f, 20.0f);
            bx.max[a] = bx.min[a] + rng.uniform(0.0f, 3.0f);
        }

    BuiltBoxes b;
    build_boxes(kKinds[2], rng, 400, b); // clamp world: everything in border cells or inside
    std::vector<QueryPoint> bpoints(nq);
    std::vector<QueryBox> bboxes(nq);
    std::vector<QuerySphere> bradii(nq);
    std::vector<Ray> brays(nq);
    std::vector<QueryNearest> bnear(nq);
    std::vector<Frustum> bfrusta(nq);
    const std::vector<float> values = all_values();
    for (uint32_t i = 0; i < nq; ++i) {
        for (uint32_t d = 0; d < 3; ++d) {
            bpoints[i].position[d] = pick(rng, values);
            float lo = pick(rng, values), hi = pick(rng, values);
            if (lo > hi) std::swap(lo, hi);
            bboxes[i].min[d] = lo;
            bboxes[i].max[d] = hi;
            bradii[i].center[d] = pick(rng, values);
            bradii[i].radius = pick(rng, kRadii);
            brays[i].origin[d] = pick(rng, values);
            brays[i].direction[d] = pick(rng, values);
            brays[i].max_t = kInf;
            bnear[i].center[d] = pick(rng, values);
        }
        bnear[i].k = 3;
    }
    for (uint32_t i = 0; i < nq; ++i) { // after the others: their random draws stay as they were
        bfrusta[i].plane_count = 1 + rng.below(2);
        for (uint32_t p = 0; p < bfrusta[i].plane_count; ++p) {
            for (uint32_t d = 0; d < 3; ++d)
                bfrusta[i].planes[p].normal[d] = rng.uniform(-1.0f, 1.0f);
            bfrusta[i].planes[p].d = pick(rng, values);
        }
    }

    struct Output {
        std::vector<uint64_t> offsets;
        std::vector<uint8_t> bytes;
        Status status;
        uint64_t total = 0;
    };
    // Runs one batch into a buffer of `capacity` elements pre-filled with a pattern.
    auto particle_batch = [&](uint32_t which, uint64_t capacity, const ThreadBackend& be) {
        Output o;
        const uint32_t count = which == 1 ? static_cast<uint32_t>(pboxes.size()) : centres.size();
        o.offsets.assign(count + 1, 0x5555555555555555ull);
        const size_t element = which == 2 ? sizeof(NearestHit) : (which == 3 ? sizeof(Pair) : sizeof(uint32_t));
        o.bytes.assign(static_cast<size_t>(capacity) * element + 8, 0xAB);
        QueryResult r;
        if (which == 0)
            r = query_radius_batch(grid, spheres_of(radius_queries_scene.spans()).data(),
                                   (radius_queries_scene.spans()).count, o.offsets.data(), o.offsets.size(),
                                   reinterpret_cast<uint32_t*>(o.bytes.data()), capacity, be);
        else if (which == 1)
            r = query_box_batch(grid, pboxes.data(), count, o.offsets.data(), o.offsets.size(),
                                reinterpret_cast<uint32_t*>(o.bytes.data()), capacity, be);
        else if (which == 2)
            r = query_nearest_batch(grid, nearests_of(centres.spans(), 9, 1.5f).data(), (centres.spans()).count,
                                    o.offsets.data(), o.offsets.size(), reinterpret_cast<NearestHit*>(o.bytes.data()),
                                    capacity, be);
        else
            r = grid.find_pairs_with(centres.spans(), reinterpret_cast<Pair*>(o.bytes.data()), capacity, be);
        o.status = r.status;
        o.total = r.total;
        return o;
    };
    auto box_batch = [&](uint32_t which, uint64_t capacity, const ThreadBackend& be) {
        Output o;
        o.offsets.assign(nq + 1, 0x5555555555555555ull);
        const size_t element = which == 3 ? sizeof(RayHit) : (which == 4 ? sizeof(NearestHit) : sizeof(uint32_t));
        o.bytes.assign(static_cast<size_t>(capacity) * element + 8, 0xAB);
        QueryResult r;
        uint64_t* offsets = o.offsets.data();
        const uint64_t oc = o.offsets.size();
        auto* u = reinterpret_cast<uint32_t*>(o.bytes.data());
        if (which == 0) r = query_point_batch(b.q, bpoints.data(), nq, kAllLayers, offsets, oc, u, capacity, be);
        if (which == 1) r = query_box_batch(b.q, bboxes.data(), nq, kAllLayers, offsets, oc, u, capacity, be);
        if (which == 2) r = query_radius_batch(b.q, bradii.data(), nq, kAllLayers, offsets, oc, u, capacity, be);
        if (which == 3)
            r = query_ray_batch(b.q, brays.data(), nq, kAllLayers, offsets, oc,
                                reinterpret_cast<RayHit*>(o.bytes.data()), capacity, be);
        if (which == 4)
            r = query_nearest_batch(b.q, bnear.data(), nq, kAllLayers, offsets, oc,
                                    reinterpret_cast<NearestHit*>(o.bytes.data()), capacity, be);
        if (which == 5) r = query_frustum_batch(b.q, bfrusta.data(), nq, kAllLayers, offsets, oc, u, capacity, be);
        o.status = r.status;
        o.total = r.total;
        return o;
    };
    for (uint32_t which = 0; which < 4; ++which) {
        const Output full = particle_batch(which, 0, serial_backend());
        REQUIRE(full.status.code == StatusCode::output_too_small);
        for (uint64_t capacity : {uint64_t{1}, full.total / 3, full.total - 1}) {
            const Output ref = particle_batch(which, capacity, serial_backend());
            CHECK(ref.status.code == StatusCode::output_too_small);
            for (uint32_t threads : {1u, 2u, 3u, 8u}) {
                ParallelBackend backend(threads);
                const Output o = particle_batch(which, capacity, backend.backend());
                CHECK_MESSAGE(same_bytes(o.bytes, ref.bytes), "particle batch ", which, " threads ", threads);
                CHECK_MESSAGE(o.offsets == ref.offsets, "particle batch ", which, " threads ", threads);
                CHECK(o.total == ref.total);
            }
        }
    }
    for (uint32_t which = 0; which < 6; ++which) {
        CAPTURE(which);
        const Output full = box_batch(which, 0, serial_backend());
        REQUIRE(full.status.code == StatusCode::output_too_small);
        const uint64_t need = full.total;
        for (uint64_t capacity : {uint64_t{1}, need / 3, need - 1}) {
            const Output ref = box_batch(which, capacity, serial_backend());
            CHECK(ref.status.code == StatusCode::output_too_small);
            for (uint32_t threads : {1u, 2u, 3u, 8u}) {
                ParallelBackend backend(threads);
                const Output o = box_batch(which, capacity, backend.backend());
                CHECK_MESSAGE(same_bytes(o.bytes, ref.bytes), "box batch ", which, " threads ", threads);
                CHECK_MESSAGE(o.offsets == ref.offsets, "box batch ", which, " threads ", threads);
                CHECK(o.total == ref.total);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Programmer errors: invalid_argument in every build (the assert fires first
// in builds with asserts; the hook counts and continues).

int g_asserts = 0;
bool counting_hook(const char*, const char*, const char*, int) {
    ++g_asserts;
    return false;
}

TEST_CASE("null pointers and unusable grids are invalid_argument") {
    set_assert_hook(counting_hook);
    Scene s;
    s.dims = 3;
    s.add(1.0f, 2.0f, 3.0f);
    auto g = make_grid(unbounded_config(3, 1.0f, 1.0f, 4, 4));
    REQUIRE((*g)->rebuild(s.spans(), serial_backend()).ok());
    const Grid& grid = **g;
    const float c[3] = {0.0f, 0.0f, 0.0f};
    uint64_t offsets[4];
    uint32_t out[4];
    const ThreadBackend be = serial_backend();
    ThreadBackend no_backend;
    ParticleSpans q = s.spans();
    ParticleSpans no_x = q;
    no_x.x = nullptr;
    ParticleSpans with_r = q;
    const float radius = 1.0f;
    with_r.radius = &radius;
    QueryBox box;
    const QuerySphere sphere = sphere_at(c, 1.0f);
    const QueryNearest nearest = nearest_at(c, 1, kInf);
    std::vector<QueryResult> results = {
        query_radius(grid, sphere, nullptr, 4),
        query_point(grid, point_at(c), nullptr, 4),
        query_box(grid, box, nullptr, 1),
        query_frustum(grid, Frustum{}, nullptr, 1),
        query_nearest(grid, nearest, nullptr, 1),
        query_radius(grid, sphere, QueryVisitor{}), // no visit function
        query_point(grid, point_at(c), QueryVisitor{}),
        query_box(grid, box, QueryVisitor{}),
        query_frustum(grid, Frustum{}, QueryVisitor{}),
        query_nearest(grid, nearest, NearestVisitor{}),
        grid.find_pairs_with(no_x, nullptr, 0, be),
        grid.find_pairs_with(with_r, nullptr, 0, be),
        grid.find_pairs_with(q, nullptr, 1, be),
        query_radius_batch(grid, nullptr, 1, offsets, 4, out, 4, be),
        query_radius_batch(grid, &sphere, 1, nullptr, 4, out, 4, be),
        query_radius_batch(grid, &sphere, 1, offsets, 4, nullptr, 4, be),
        query_box_batch(grid, nullptr, 1, offsets, 4, out, 4, be),
        query_box_batch(grid, &box, 1, offsets, 4, nullptr, 4, be),
        query_box_batch(grid, &box, 1, nullptr, 4, out, 4, be),
        query_nearest_batch(grid, nullptr, 1, offsets, 4, nullptr, 0, be),
        query_nearest_batch(grid, &nearest, 1, offsets, 4, nullptr, 4, be),
        query_nearest_batch(grid, &nearest, 1, nullptr, 4, nullptr, 0, be),
    };
    for (size_t i = 0; i < results.size(); ++i)
        CHECK_MESSAGE(results[i].status.code == StatusCode::invalid_argument, "particle call ", i, ": ",
                      to_string(results[i].status.code));

    BuiltBoxes b;
    Rng rng(3);
    build_boxes(kKinds[0], rng, 10, b);
    const BoxQueryGrid none; // never prepared
    const BoxQueryGrid from_null = prepare_box_queries(BoxGridView{}, be);
    QueryPoint pq;
    QueryBox bq;
    QuerySphere rq;
    Ray ray;
    QueryNearest nq;
    Frustum frustum;
    frustum.plane_count = 1;
    RayHit hit;
    NearestHit nh;
    const QueryVisitor no_visitor{};
    const QueryVisitor visitor{[](void*, uint32_t) { return true; }, nullptr};
    const RayVisitor ray_visitor{[](void*, const RayHit&) { return true; }, nullptr};
    const NearestVisitor nearest_visitor{[](void*, const NearestHit&) { return true; }, nullptr};
    std::vector<Status> statuses;
    for (const BoxQueryGrid* grid_q : {&none, &from_null}) {
        statuses.push_back(query_point(*grid_q, pq, kAllLayers, out, 4).status);
        statuses.push_back(query_point(*grid_q, pq, kAllLayers, visitor).status);
        statuses.push_back(query_box(*grid_q, bq, kAllLayers, out, 4).status);
        statuses.push_back(query_radius(*grid_q, rq, kAllLayers, out, 4).status);
        statuses.push_back(query_ray(*grid_q, ray, kAllLayers, &hit, 1).status);
        statuses.push_back(query_ray(*grid_q, ray, kAllLayers, ray_visitor).status);
        statuses.push_back(query_ray_first(*grid_q, ray, kAllLayers, &hit).status);
        statuses.push_back(query_frustum(*grid_q, frustum, kAllLayers, out, 4).status);
        statuses.push_back(query_nearest(*grid_q, nq, kAllLayers, &nh, 1).status);
        statuses.push_back(query_nearest(*grid_q, nq, kAllLayers, nearest_visitor).status);
        statuses.push_back(query_potential_collisions(*grid_q, 0, out, 4).status);
        statuses.push_back(query_potential_collisions(*grid_q, 0, visitor).status);
        statuses.push_back(query_point_batch(*grid_q, &pq, 1, kAllLayers, offsets, 4, out, 4, be).status);
        statuses.push_back(query_frustum_batch(*grid_q, &frustum, 1, kAllLayers, offsets, 4, out, 4, be).status);
        statuses.push_back(query_ray_first_batch(*grid_q, &ray, 1, kAllLayers, &hit, be).status);
        statuses.push_back(query_nearest_batch(*grid_q, &nq, 1, kAllLayers, offsets, 4, &nh, 1, be).status);
    }
    const BoxQueryGrid& q3 = b.q;
    statuses.push_back(query_point(q3, pq, kAllLayers, nullptr, 1).status);
    statuses.push_back(query_point(q3, pq, kAllLayers, no_visitor).status);
    statuses.push_back(query_box(q3, bq, kAllLayers, nullptr, 1).status);
    statuses.push_back(query_box(q3, bq, kAllLayers, no_visitor).status);
    statuses.push_back(query_radius(q3, rq, kAllLayers, nullptr, 1).status);
    statuses.push_back(query_radius(q3, rq, kAllLayers, no_visitor).status);
    statuses.push_back(query_ray(q3, ray, kAllLayers, nullptr, 1).status);
    statuses.push_back(query_ray(q3, ray, kAllLayers, RayVisitor{}).status);
    statuses.push_back(query_ray_first(q3, ray, kAllLayers, nullptr).status);
    statuses.push_back(query_frustum(q3, frustum, kAllLayers, nullptr, 4).status);
    statuses.push_back(query_frustum(q3, frustum, kAllLayers, no_visitor).status);
    statuses.push_back(query_nearest(q3, nq, kAllLayers, nullptr, 1).status);
    statuses.push_back(query_nearest(q3, nq, kAllLayers, NearestVisitor{}).status);
    statuses.push_back(query_potential_collisions(q3, 10, out, 4).status); // object out of range
    statuses.push_back(query_potential_collisions(q3, 10, visitor).status);
    statuses.push_back(query_potential_collisions(q3, 0, nullptr, 4).status);
    statuses.push_back(query_potential_collisions(q3, 0, no_visitor).status);
    statuses.push_back(query_point_batch(q3, nullptr, 1, kAllLayers, offsets, 4, out, 4, be).status);
    statuses.push_back(query_box_batch(q3, &bq, 1, kAllLayers, nullptr, 4, out, 4, be).status);
    statuses.push_back(query_radius_batch(q3, &rq, 1, kAllLayers, offsets, 4, nullptr, 4, be).status);
    statuses.push_back(query_frustum_batch(q3, nullptr, 1, kAllLayers, offsets, 4, out, 4, be).status);
    statuses.push_back(query_ray_batch(q3, nullptr, 1, kAllLayers, offsets, 4, &hit, 1, be).status);
    statuses.push_back(query_ray_first_batch(q3, nullptr, 1, kAllLayers, &hit, be).status);
    statuses.push_back(query_ray_first_batch(q3, &ray, 1, kAllLayers, nullptr, be).status);
    statuses.push_back(query_nearest_batch(q3, nullptr, 1, kAllLayers, offsets, 4, &nh, 1, be).status);
    statuses.push_back(query_nearest_batch(q3, &nq, 1, kAllLayers, nullptr, 4, &nh, 1, be).status);
    statuses.push_back(query_nearest_batch(q3, &nq, 1, kAllLayers, offsets, 4, nullptr, 1, be).status);
    for (size_t i = 0; i < statuses.size(); ++i)
        CHECK_MESSAGE(statuses[i].code == StatusCode::invalid_argument, "box call ", i, ": ",
                      to_string(statuses[i].code));

    // A ThreadBackend without parallel_for is not an error: the batch runs
    // serially, as the grids' rebuilds do, with the same results.
    uint64_t serial_offsets[4];
    uint32_t serial_out[4];
    const QueryResult with_serial =
        query_radius_batch(grid, spheres_of(with_r).data(), (with_r).count, serial_offsets, 4, serial_out, 4, be);
    const QueryResult without =
        query_radius_batch(grid, spheres_of(with_r).data(), (with_r).count, offsets, 4, out, 4, no_backend);
    REQUIRE(with_serial.status.ok());
    REQUIRE(without.status.ok());
    CHECK(without.total == with_serial.total);
    CHECK(std::equal(out, out + without.written, serial_out));
    RayHit serial_hits[4], hits[4];
    const QueryResult rays_serial = query_ray_batch(q3, &ray, 1, kAllLayers, serial_offsets, 4, serial_hits, 4, be);
    const QueryResult rays_without = query_ray_batch(q3, &ray, 1, kAllLayers, offsets, 4, hits, 4, no_backend);
    REQUIRE(rays_serial.status.ok());
    REQUIRE(rays_without.status.ok());
    CHECK(rays_without.total == rays_serial.total);
    set_assert_hook(nullptr);
#if defined(HASHGRID_ENABLE_ASSERTS)
    CHECK(g_asserts > 0);
#endif
}

} // namespace

// SPDX-License-Identifier: MIT
// Cost bounds of the queries, asserted as counted work (QueryStats), never as
// time: no query parameter may make a call read more than a few scans' worth
// of the grid's occupied cells, nor (frusta) walk more cells than its own
// bounds or the occupied cells. Every case also checks the results against a
// brute-force oracle.
#include <doctest/doctest.h>

#include "test_support.h"

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace hashgrid_test;

namespace {

using hashgrid::BoxGridConfig;
using hashgrid::BoxQueryGrid;
using hashgrid::kAllLayers;
using hashgrid::QueryResult;
using hashgrid::QueryStats;
using hashgrid::Ray;
using hashgrid::RayHit;

constexpr float kInf = std::numeric_limits<float>::infinity();

/// Boxes as structure-of-arrays, owned.
struct Boxes {
    uint32_t dims = 3;
    std::vector<float> lo[3], hi[3];
    [[nodiscard]] uint32_t count() const { return static_cast<uint32_t>(lo[0].size()); }
    [[nodiscard]] hashgrid::BoxSpans spans() const {
        hashgrid::BoxSpans s;
        s.min_x = lo[0].data();
        s.min_y = lo[1].data();
        s.min_z = lo[2].data();
        s.max_x = hi[0].data();
        s.max_y = hi[1].data();
        s.max_z = hi[2].data();
        s.count = count();
        return s;
    }
    void add(const float a[3], const float b[3]) {
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d].push_back(d < dims ? a[d] : 0.0f);
            hi[d].push_back(d < dims ? b[d] : 0.0f);
        }
    }
};

/// Boxes with min corners uniform in [lo, hi) and sides uniform in
/// [side_lo, side_hi) (or lognormal when lognormal_sigma > 0: median side_lo).
Boxes random_boxes(Rng& rng, uint32_t dims, uint32_t n, float lo, float hi, float side_lo, float side_hi,
                   float lognormal_sigma = 0.0f) {
    Boxes b;
    b.dims = dims;
    for (uint32_t i = 0; i < n; ++i) {
        float a[3] = {0.0f, 0.0f, 0.0f}, e[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t d = 0; d < dims; ++d) {
            a[d] = rng.uniform(lo, hi);
            float side = rng.uniform(side_lo, side_hi);
            if (lognormal_sigma > 0.0f)
                side = std::min(side_hi, side_lo * std::exp(lognormal_sigma * rng.cluster(0.0f, 1.0f)));
            e[d] = a[d] + side;
        }
        b.add(a, e);
    }
    return b;
}

/// A built box grid and its prepared queries.
struct BuiltBoxes {
    hashgrid::BoxGrid grid;
    BoxQueryGrid q;
    bool ok = false;
    BuiltBoxes(const BoxGridConfig& c, const Boxes& b) {
        if (!grid.init_allocate(c).ok()) return;
        if (!grid.rebuild(b.spans(), hashgrid::serial_backend()).ok()) return;
        q = hashgrid::prepare_box_queries(grid.view(), hashgrid::serial_backend());
        ok = true;
    }
    [[nodiscard]] uint64_t cells() const { return q.view.cell_count; }
};

BoxGridConfig unbounded_boxes(uint32_t dims, float cell, uint32_t n) {
    BoxGridConfig c;
    c.dimensions = dims;
    c.cell_size = cell;
    c.world = hashgrid::World::unbounded;
    c.max_objects = n;
    c.max_cell_entries = 1u << 22;
    c.max_pairs = 1;
    c.large_object_cells = 1u << 20; // every object in cells: the most a scan can read
    return c;
}

/// Every hit of the ray by brute force, in (t, index) order.
std::vector<RayHit> brute_ray(const Boxes& b, const Ray& ray) {
    std::vector<RayHit> hits;
    for (uint32_t i = 0; i < b.count(); ++i) {
        const float lo[3] = {b.lo[0][i], b.lo[1][i], b.lo[2][i]};
        const float hi[3] = {b.hi[0][i], b.hi[1][i], b.hi[2][i]};
        float t = 0.0f;
        if (hashgrid::ray_box_hit(ray, lo, hi, b.dims, t)) hits.push_back(RayHit{i, t});
    }
    std::sort(hits.begin(), hits.end(),
              [](const RayHit& x, const RayHit& y) { return x.t < y.t || (x.t == y.t && x.index < y.index); });
    return hits;
}

bool same_hits(const std::vector<RayHit>& a, const RayHit* b, uint64_t n) {
    if (a.size() != n) return false;
    for (uint64_t i = 0; i < n; ++i)
        if (a[i].index != b[i].index || float_bits(a[i].t) != float_bits(b[i].t)) return false;
    return true;
}

/// Runs every form of the ray query on one ray; checks each against brute
/// force; returns the cells the buffer form and the first-hit form read.
struct RayCost {
    uint64_t cells_all = 0;
    uint64_t cells_first = 0;
    uint64_t hits = 0;
};

RayCost check_ray(const BuiltBoxes& g, const Boxes& b, const Ray& ray) {
    const std::vector<RayHit> expected = brute_ray(b, ray);
    RayCost cost;
    cost.hits = expected.size();
    std::vector<RayHit> out(expected.size() + 1);
    uint64_t offsets[2] = {0, 0};
    QueryStats all;
    const QueryResult r = hashgrid::query_ray_batch(g.q, &ray, 1, kAllLayers, offsets, 2, out.data(), out.size(),
                                                    hashgrid::serial_backend(), &all);
    REQUIRE(r.status.ok());
    CHECK(same_hits(expected, out.data(), r.written));
    CHECK(all.queries == 1);
    CHECK(all.results == expected.size());
    cost.cells_all = all.cells;

    RayHit first;
    QueryStats one;
    const QueryResult f =
        hashgrid::query_ray_first_batch(g.q, &ray, 1, kAllLayers, &first, hashgrid::serial_backend(), &one);
    REQUIRE(f.status.ok());
    CHECK(f.total == (expected.empty() ? 0u : 1u));
    if (!expected.empty()) CHECK(same_hits({expected[0]}, &first, 1));
    cost.cells_first = one.cells;

    std::vector<RayHit> visited;
    const QueryResult v =
        hashgrid::query_ray(g.q, ray, kAllLayers,
                            hashgrid::RayVisitor{[](void* ctx, const RayHit& h) {
                                                     static_cast<std::vector<RayHit>*>(ctx)->push_back(h);
                                                     return true;
                                                 },
                                                 &visited});
    REQUIRE(v.status.ok());
    CHECK(same_hits(expected, visited.data(), visited.size()));
    return cost;
}

} // namespace

TEST_CASE("a ray from far away reads at most about two scans of the occupied cells") {
    struct Case {
        const char* name;
        uint32_t dims;
        uint32_t n;
        float lognormal;
        float origin;
    };
    const Case cases[] = {
        {"2D, origin 1e10", 2, 400, 0.0f, 1e10f},
        {"2D, origin 1e20", 2, 1000, 0.0f, 1e20f},
        {"2D, origin 1e30", 2, 400, 0.0f, 1e30f},
        {"3D lognormal, origin 1e10", 3, 1000, 0.8f, 1e10f},
        {"3D lognormal, origin 3e14", 3, 1000, 0.8f, 3e14f},
    };
    for (const Case& k : cases) {
        const std::string name = k.name;
        CAPTURE(name);
        Rng rng(0x5eed0000u + k.dims * 7u + k.n);
        const Boxes b = random_boxes(rng, k.dims, k.n, -200.0f, 200.0f, 0.1f, 3.0f, k.lognormal);
        BuiltBoxes g(unbounded_boxes(k.dims, 0.25f, k.n), b);
        REQUIRE(g.ok);
        const uint64_t budget = 2 * g.cells() + 64;
        // The reported ray: from the far corner, along the diagonal, unbounded.
        Ray ray;
        ray.origin[0] = -k.origin;
        ray.origin[1] = k.origin;
        ray.origin[2] = k.dims == 3 ? -k.origin : 0.0f;
        ray.direction[0] = 1.0f;
        ray.direction[1] = -1.0f;
        ray.direction[2] = k.dims == 3 ? 1.0f : 0.0f;
        ray.max_t = kInf;
        const RayCost cost = check_ray(g, b, ray);
        CAPTURE(cost.hits);
        CAPTURE(g.cells());
        CHECK(cost.cells_all <= budget);
        CHECK(cost.cells_first <= budget);
        // And a few rays from other far points through the world.
        for (uint32_t i = 0; i < 8; ++i) {
            Ray r;
            for (uint32_t d = 0; d < k.dims; ++d) {
                r.origin[d] = rng.uniform(-1.0f, 1.0f) * k.origin;
                r.direction[d] = rng.uniform(-100.0f, 100.0f) - r.origin[d] / k.origin * 1e3f;
            }
            r.max_t = kInf;
            const RayCost c = check_ray(g, b, r);
            CHECK(c.cells_all <= budget);
            CHECK(c.cells_first <= budget);
        }
    }
}

TEST_CASE("a ray from near by reads only the cells along it") {
    Rng rng(0x7a9u);
    const Boxes b = random_boxes(rng, 2, 4000, -200.0f, 200.0f, 0.1f, 3.0f);
    BuiltBoxes g(unbounded_boxes(2, 0.25f, 4000), b);
    REQUIRE(g.ok);
    // A segment across 400 cells along x: each piece reads its column of a
    // few cells, far fewer than the occupied cells.
    const float start[3] = {-50.0f, 0.3f, 0.0f};
    const float end[3] = {50.0f, 0.3f, 0.0f};
    const RayCost cost = check_ray(g, b, hashgrid::segment_ray(start, end));
    CAPTURE(g.cells());
    CHECK(cost.hits > 0);
    CHECK(cost.cells_all <= 3 * 401 + 8);
    CHECK(cost.cells_first <= cost.cells_all);
}

namespace {

/// The frustum of the six axis planes of [lo, hi]^3 (inside: lo <= p <= hi).
hashgrid::Frustum axis_frustum(float lo, float hi) {
    hashgrid::Frustum f;
    f.plane_count = 6;
    for (uint32_t d = 0; d < 3; ++d) {
        f.planes[2 * d].normal[d] = 1.0f; // p - lo >= 0
        f.planes[2 * d].d = -lo;
        f.planes[2 * d + 1].normal[d] = -1.0f; // hi - p >= 0
        f.planes[2 * d + 1].d = hi;
    }
    return f;
}

/// The particles inside every plane, by the header's float test, ascending.
std::vector<uint32_t> brute_frustum(const Scene& s, const hashgrid::Frustum& f) {
    std::vector<uint32_t> in;
    for (uint32_t k = 0; k < s.size(); ++k) {
        bool inside = true;
        for (uint32_t i = 0; i < f.plane_count; ++i) {
            const hashgrid::Plane& p = f.planes[i];
            float v = p.normal[0] * s.x[k] + p.normal[1] * s.y[k];
            v = v + p.normal[2] * s.z[k];
            v = v + p.d;
            inside = inside && v >= 0.0f;
        }
        if (inside) in.push_back(k);
    }
    return in;
}

} // namespace

TEST_CASE("a particle frustum in a bounded world walks the rows of its own cells, not the world's") {
    // 100 particles in [0, 0.35)^3; cell 0.5 from -2: the frustum's box
    // [-0.8, 1.2]^3 covers cells 2..6 on each axis, 25 rows of 5 cells. The
    // world has 16, 48 or 96 cells per axis (48 was the band where the walk
    // went over the world's 2,304 rows).
    Rng rng(0xf5u);
    const Scene s = uniform_scene(rng, 3, 100, 0.0f, 0.35f);
    const hashgrid::Frustum f = axis_frustum(-0.8f, 1.2f);
    const std::vector<uint32_t> expected = brute_frustum(s, f);
    REQUIRE(expected.size() == 100);
    for (uint32_t n : {16u, 48u, 96u}) {
        CAPTURE(n);
        hashgrid::GridConfig c = unbounded_config(3, 0.5f, 0.5f, 100, 1);
        c.world = hashgrid::World::bounded;
        for (uint32_t d = 0; d < 3; ++d) {
            c.origin[d] = -2.0f;
            c.cell_counts[d] = n;
        }
        c.max_cells = n * n * n;
        auto grid = make_grid(c);
        REQUIRE(grid->init_status.ok());
        REQUIRE((*grid)->rebuild(s.spans(), hashgrid::serial_backend()).ok());
        std::vector<uint32_t> out(128);
        uint64_t offsets[2] = {0, 0};
        QueryStats stats;
        const QueryResult r = hashgrid::query_frustum_batch(**grid, &f, 1, offsets, 2, out.data(), out.size(),
                                                            hashgrid::serial_backend(), &stats);
        REQUIRE(r.status.ok());
        out.resize(r.written);
        std::sort(out.begin(), out.end());
        CHECK(out == expected);
        CHECK(stats.cull_tests <= 25);
        CHECK(stats.cells <= 25);
        // A frustum of a single plane (x <= -1.5, near the world's low
        // border) bounds one axis only: its cells are a slab of the world.
        hashgrid::Frustum slab;
        slab.plane_count = 1;
        slab.planes[0].normal[0] = -1.0f;
        slab.planes[0].d = -1.5f;
        QueryStats slab_stats;
        const QueryResult rs = hashgrid::query_frustum_batch(**grid, &slab, 1, offsets, 2, out.data(), out.size(),
                                                             hashgrid::serial_backend(), &slab_stats);
        REQUIRE(rs.status.ok());
        CHECK(rs.total == 0);
        // Either the slab's rows (the world's rows) or the occupied cells (here 1).
        CHECK(slab_stats.cull_tests <= std::max<uint64_t>(uint64_t{n} * n, 100));
    }
}

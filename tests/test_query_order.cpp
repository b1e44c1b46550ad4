// SPDX-License-Identifier: MIT
// Result order of the box-grid set queries that have no `min` corner of their
// own: query_radius and query_frustum (docs/user-guide.md, "Order of
// box-grid set queries").
//
// The oracle is brute force over every object with the documented inclusion
// test, sorted by the documented key:
//   - objects kept in cells first, by their reporting cell in (z, y, x)
//     order of the integer cell coordinates, ties by ascending index; then the
//     large objects (BoxGridView::large_object) by ascending index;
//   - reporting cell, radius: per axis max(cell(lo), cell(object.min)) with
//     lo = centre - (r * (1 + 2^-20) + 2^-70) in double (-inf when r * r
//     overflows float), cells clamped into the world / key range;
//   - reporting cell, frustum: the object's minimum cell, cell(object.min).
// Cells are floor((p - origin) * key_scale(cell_size)) (cell_key.h).
//
// Scenes: objects spanning many cells (so the reporting cell is not the
// object's own), several objects per reporting cell in scrambled index order,
// large objects, bounded worlds with objects and queries outside the box
// (clamp), unbounded worlds with negative cells; 2D and 3D. Two hand-built
// scenes show that the rule is the stated one and not a plausible other:
// the radius query's lower bound is below centre - r, and a frustum reports
// an object from its own minimum cell even when that cell is outside it.
#include <doctest/doctest.h>

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/exact_float.h"
#include "test_support.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace {

using hashgrid::BoxGridConfig;
using hashgrid::Frustum;
using hashgrid::QueryResult;
using hashgrid::QuerySphere;
using hashgrid_support::rounded_mul;
using hashgrid_test::Rng;

struct Scene {
    uint32_t dims = 3;
    std::vector<float> lo[3];
    std::vector<float> hi[3];
    [[nodiscard]] uint32_t size() const { return static_cast<uint32_t>(lo[0].size()); }
    void add(const float min[3], const float max[3]) {
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d].push_back(d < dims ? min[d] : 0.0f);
            hi[d].push_back(d < dims ? max[d] : 0.0f);
        }
    }
};

BoxGridConfig make_config(uint32_t dims, bool bounded, float cell, float origin, uint32_t cells_per_axis,
                          uint32_t max_objects, uint32_t large_cells) {
    BoxGridConfig c;
    c.dimensions = dims;
    c.cell_size = cell;
    c.world = bounded ? hashgrid::World::bounded : hashgrid::World::unbounded;
    c.out_of_bounds = hashgrid::OutOfBounds::clamp;
    for (uint32_t d = 0; d < 3; ++d) {
        c.origin[d] = d < dims ? origin : 0.0f;
        c.cell_counts[d] = bounded ? (d < dims ? cells_per_axis : 1u) : 0u;
    }
    c.max_objects = max_objects;
    c.max_cell_entries = max_objects * (large_cells + 1);
    c.max_pairs = 1;
    c.large_object_cells = large_cells;
    return c;
}

/// The cell of a double coordinate on axis d, clamped into the world (bounded)
/// or the key range (unbounded), as cell_key.h and box_grid.h define it.
int64_t cell_of(const BoxGridConfig& c, uint32_t d, double p) {
    const double scaled = (p - static_cast<double>(c.origin[d])) * hashgrid::key_scale(c.cell_size);
    double lo = 0.0, hi = 0.0;
    if (c.world == hashgrid::World::bounded) {
        hi = static_cast<double>(c.cell_counts[d]) - 1.0;
    } else {
        hi = c.dimensions == 3 ? hashgrid::kKeyLimit3 : hashgrid::kKeyLimit2;
        lo = -hi;
    }
    if (!(scaled >= lo)) return static_cast<int64_t>(lo); // -inf and NaN: the lowest cell
    return static_cast<int64_t>(std::floor(std::min(scaled, hi)));
}

using Key = std::tuple<int, int64_t, int64_t, int64_t, uint32_t>; // (large, z, y, x, index)

/// The documented order: `report_lo` null means "the object's own minimum
/// cell" (frustum), else the reporting cell is max(report_lo, min cell).
std::vector<uint32_t> in_documented_order(const BoxGridConfig& c, const Scene& s, const hashgrid::BoxGridView& view,
                                          const std::vector<uint32_t>& objects, const int64_t* report_lo) {
    std::vector<bool> large(s.size(), false);
    for (uint32_t j = 0; j < view.large_count; ++j)
        large[view.large_object[j]] = true;
    std::vector<Key> keys;
    for (uint32_t i : objects) {
        int64_t at[3] = {0, 0, 0};
        for (uint32_t d = 0; d < c.dimensions; ++d) {
            at[d] = cell_of(c, d, static_cast<double>(s.lo[d][i]));
            if (report_lo != nullptr) at[d] = std::max(at[d], report_lo[d]);
        }
        keys.emplace_back(large[i] ? 1 : 0, large[i] ? 0 : at[2], large[i] ? 0 : at[1], large[i] ? 0 : at[0], i);
    }
    std::sort(keys.begin(), keys.end());
    std::vector<uint32_t> order;
    for (const Key& k : keys)
        order.push_back(std::get<4>(k));
    return order;
}

/// Lower cell corner of a radius query's report range, as stated.
void radius_report_lo(const BoxGridConfig& c, const QuerySphere& q, int64_t lo[3]) {
    const float r2 = rounded_mul(q.radius, q.radius);
    const double half = std::isinf(r2) ? std::numeric_limits<double>::infinity()
                                       : static_cast<double>(q.radius) * (1.0 + 0x1p-20) + 0x1p-70;
    for (uint32_t d = 0; d < 3; ++d)
        lo[d] = d < c.dimensions ? cell_of(c, d, static_cast<double>(q.center[d]) - half) : 0;
}

float distance2(const Scene& s, uint32_t i, const float p[3]) {
    float d2 = 0.0f;
    for (uint32_t d = 0; d < s.dims; ++d) {
        float v = 0.0f;
        if (p[d] < s.lo[d][i]) v = s.lo[d][i] - p[d];
        if (p[d] > s.hi[d][i]) v = p[d] - s.hi[d][i];
        d2 = d2 + rounded_mul(v, v);
    }
    return d2;
}

bool in_frustum(const Scene& s, uint32_t i, const Frustum& f) {
    for (uint32_t k = 0; k < f.plane_count; ++k) {
        const hashgrid::Plane& p = f.planes[k];
        float v = 0.0f;
        for (uint32_t d = 0; d < s.dims; ++d) {
            const float corner = p.normal[d] >= 0.0f ? s.hi[d][i] : s.lo[d][i];
            v = d == 0 ? rounded_mul(p.normal[d], corner) : v + rounded_mul(p.normal[d], corner);
        }
        if (v + p.d < 0.0f) return false;
    }
    return true;
}

struct Built {
    hashgrid::BoxGrid grid;
    hashgrid::BoxQueryGrid q;
};

void build(Built& b, const BoxGridConfig& c, const Scene& s) {
    REQUIRE(b.grid.init_allocate(c).ok());
    hashgrid::BoxSpans spans;
    spans.min_x = s.lo[0].data();
    spans.min_y = s.lo[1].data();
    spans.min_z = s.lo[2].data();
    spans.max_x = s.hi[0].data();
    spans.max_y = s.hi[1].data();
    spans.max_z = s.hi[2].data();
    spans.count = s.size();
    REQUIRE(b.grid.rebuild(spans, hashgrid::serial_backend()).ok());
    b.q = hashgrid::prepare_box_queries(b.grid.view(), hashgrid::serial_backend());
}

bool collect(void* context, uint32_t index) {
    static_cast<std::vector<uint32_t>*>(context)->push_back(index);
    return true;
}

/// The buffer and visitor forms' results; both must be complete.
template <typename Shape>
std::vector<uint32_t> run(const hashgrid::BoxQueryGrid& q, const Shape& shape, uint32_t n) {
    std::vector<uint32_t> out(n + 1);
    const QueryResult r = [&] {
        if constexpr (std::is_same_v<Shape, QuerySphere>)
            return hashgrid::query_radius(q, shape, hashgrid::kAllLayers, out.data(), out.size());
        else
            return hashgrid::query_frustum(q, shape, hashgrid::kAllLayers, out.data(), out.size());
    }();
    REQUIRE(r.status.ok());
    out.resize(r.written);
    std::vector<uint32_t> visited;
    const hashgrid::QueryVisitor visitor{&collect, &visited};
    const QueryResult v = [&] {
        if constexpr (std::is_same_v<Shape, QuerySphere>)
            return hashgrid::query_radius(q, shape, hashgrid::kAllLayers, visitor);
        else
            return hashgrid::query_frustum(q, shape, hashgrid::kAllLayers, visitor);
    }();
    REQUIRE(v.status.ok());
    CHECK(visited == out);
    return out;
}

std::vector<uint32_t> expected_radius(const BoxGridConfig& c, const Scene& s, const hashgrid::BoxGridView& view,
                                      const QuerySphere& q) {
    const float r2 = rounded_mul(q.radius, q.radius);
    std::vector<uint32_t> hits;
    for (uint32_t i = 0; i < s.size(); ++i)
        if (distance2(s, i, q.center) <= r2) hits.push_back(i);
    int64_t lo[3];
    radius_report_lo(c, q, lo);
    return in_documented_order(c, s, view, hits, lo);
}

std::vector<uint32_t> expected_frustum(const BoxGridConfig& c, const Scene& s, const hashgrid::BoxGridView& view,
                                       const Frustum& f) {
    std::vector<uint32_t> hits;
    for (uint32_t i = 0; i < s.size(); ++i)
        if (in_frustum(s, i, f)) hits.push_back(i);
    return in_documented_order(c, s, view, hits, nullptr);
}

/// Boxes from a point to several cells wide, some far outside a bounded
/// world, a few covering many cells (large).
Scene random_scene(Rng& rng, uint32_t dims, uint32_t n, float extent, float cell) {
    Scene s;
    s.dims = dims;
    for (uint32_t i = 0; i < n; ++i) {
        float min[3], max[3];
        const uint32_t kind = rng.below(10);
        for (uint32_t d = 0; d < dims; ++d) {
            min[d] = rng.uniform(-extent, extent);
            const float size = kind == 0 ? 0.0f : kind < 6 ? rng.uniform(0.0f, cell) : rng.uniform(cell, 6.0f * cell);
            max[d] = min[d] + size;
        }
        s.add(min, max);
    }
    return s;
}

Frustum random_frustum(Rng& rng, uint32_t dims, float extent) {
    Frustum f;
    f.plane_count = dims == 3 ? 6u : 4u;
    float inside[3] = {0.0f, 0.0f, 0.0f};
    for (uint32_t d = 0; d < dims; ++d)
        inside[d] = rng.uniform(-extent, extent);
    for (uint32_t k = 0; k < f.plane_count; ++k) {
        hashgrid::Plane& p = f.planes[k];
        float dot = 0.0f;
        for (uint32_t d = 0; d < dims; ++d) {
            p.normal[d] = rng.uniform(-1.0f, 1.0f);
            dot = dot + rounded_mul(p.normal[d], inside[d]);
        }
        p.d = rng.uniform(0.5f, extent) - dot; // `inside` is inside every plane
    }
    return f;
}

struct World {
    uint32_t dims;
    bool bounded;
};
constexpr std::array<World, 4> kWorlds{{{2, true}, {2, false}, {3, true}, {3, false}}};

std::string world_name(const World& w) {
    return std::to_string(w.dims) + "D " + (w.bounded ? "bounded (clamp)" : "unbounded");
}

} // namespace

TEST_CASE("query order: radius and frustum results follow the stated reporting cell, random scenes") {
    for (const World& w : kWorlds) {
        CAPTURE(world_name(w));
        Rng rng(0x5eed0000u + w.dims * 2u + (w.bounded ? 1u : 0u));
        const float cell = 1.5f;
        // Bounded: 12 cells per axis from -9; objects reach beyond on every side.
        const uint32_t n = w.dims == 3 ? 400u : 300u;
        const BoxGridConfig c = make_config(w.dims, w.bounded, cell, -9.0f, 12u, n, w.dims == 3 ? 27u : 12u);
        const Scene s = random_scene(rng, w.dims, n, 12.0f, cell);
        Built b;
        build(b, c, s);
        REQUIRE(b.grid.view().large_count > 0u);
        uint64_t results = 0, reordered = 0;
        for (uint32_t k = 0; k < 60; ++k) {
            QuerySphere q;
            for (uint32_t d = 0; d < w.dims; ++d)
                q.center[d] = rng.uniform(-14.0f, 14.0f);
            q.radius = k == 0 ? 0.0f : rng.uniform(0.0f, 5.0f * cell);
            const std::vector<uint32_t> got = run(b.q, q, n);
            const std::vector<uint32_t> want = expected_radius(c, s, b.grid.view(), q);
            CAPTURE(k);
            CHECK(got == want);
            results += got.size();
            reordered += std::is_sorted(want.begin(), want.end()) ? 0u : 1u;
        }
        for (uint32_t k = 0; k < 60; ++k) {
            const Frustum f = random_frustum(rng, w.dims, 10.0f);
            const std::vector<uint32_t> got = run(b.q, f, n);
            const std::vector<uint32_t> want = expected_frustum(c, s, b.grid.view(), f);
            CAPTURE(k);
            CHECK(got == want);
            results += got.size();
            reordered += std::is_sorted(want.begin(), want.end()) ? 0u : 1u;
        }
        // The scenes exercise the order: results, and most of them not in index order.
        CHECK(results > 1000u);
        CHECK(reordered > 60u);
    }
}

TEST_CASE("query order: a radius query reports from below centre - r, by r * (1 + 2^-20) + 2^-70") {
    // Cell 5 on x starts at b = 5 / key_scale(1). The centre is the smallest
    // float with centre - 1 > b: the exact lower bound centre - r is in cell 5,
    // the stated one (centre - r * (1 + 2^-20) - 2^-70) in cell 4. Object 1
    // spans cells 2..6 and is reported from cell 4 under the stated rule,
    // object 0 lies in cell 5: the stated order is {1, 0}; a rule using
    // centre - r would put both in cell 5 and give {0, 1}.
    for (const World& w : kWorlds) {
        CAPTURE(world_name(w));
        const BoxGridConfig c = make_config(w.dims, w.bounded, 1.0f, 0.0f, 16u, 8u, 64u);
        const double b = 5.0 / hashgrid::key_scale(1.0f);
        float centre = static_cast<float>(b + 1.0);
        while (static_cast<double>(centre) - 1.0 <= b)
            centre = std::nextafter(centre, 100.0f);
        REQUIRE(cell_of(c, 0, static_cast<double>(centre) - 1.0) == 5);
        Scene s;
        s.dims = w.dims;
        const float in0_lo[3] = {5.5f, 7.2f, 7.2f}, in0_hi[3] = {5.6f, 7.3f, 7.3f};
        const float long1_lo[3] = {2.5f, 7.2f, 7.2f}, long1_hi[3] = {6.5f, 7.3f, 7.3f};
        s.add(in0_lo, in0_hi);
        s.add(long1_lo, long1_hi);
        Built bg;
        build(bg, c, s);
        QuerySphere q;
        q.center[0] = centre;
        q.center[1] = 7.25f;
        q.center[2] = 7.25f;
        q.radius = 1.0f;
        int64_t lo[3];
        radius_report_lo(c, q, lo);
        REQUIRE(lo[0] == 4);
        const std::vector<uint32_t> want = expected_radius(c, s, bg.grid.view(), q);
        CHECK(want == std::vector<uint32_t>{1u, 0u});
        CHECK(run(bg.q, q, s.size()) == want);
    }
}

TEST_CASE("query order: a radius query whose square overflows reports every object from its minimum cell") {
    for (const World& w : kWorlds) {
        CAPTURE(world_name(w));
        Rng rng(0x0f10u + w.dims);
        const BoxGridConfig c = make_config(w.dims, w.bounded, 1.0f, -9.0f, 12u, 120u, 64u);
        const Scene s = random_scene(rng, w.dims, 120u, 12.0f, 1.0f);
        Built b;
        build(b, c, s);
        QuerySphere q;
        q.center[0] = 3.0f;
        q.radius = 2e19f; // r * r = +inf in float
        const std::vector<uint32_t> want = expected_radius(c, s, b.grid.view(), q);
        CHECK(want.size() == s.size());
        CHECK(want == in_documented_order(c, s, b.grid.view(), want, nullptr));
        CHECK(run(b.q, q, s.size()) == want);
    }
}

TEST_CASE("query order: a frustum reports each object from its own minimum cell, inside the frustum or not") {
    // Half-space x >= 4.2 (one plane). In row y = 7: object 0 lies in cell
    // x = 5, object 1 in cell 4, object 2 starts in cell 1 (outside) and
    // reaches into the half-space; object 3 lies in cell 4 of row y = 6.
    // Minimum cells give {3, 2, 1, 0}. A report cell clipped to the frustum's
    // reach (x = 4) would tie objects 1 and 2 there and give {3, 1, 2, 0}.
    for (const World& w : kWorlds) {
        CAPTURE(world_name(w));
        const BoxGridConfig c = make_config(w.dims, w.bounded, 1.0f, 0.0f, 16u, 8u, 64u);
        Scene s;
        s.dims = w.dims;
        const float lo0[3] = {5.5f, 7.2f, 7.2f}, hi0[3] = {5.6f, 7.3f, 7.3f};
        const float lo1[3] = {4.5f, 7.2f, 7.2f}, hi1[3] = {4.6f, 7.3f, 7.3f};
        const float lo2[3] = {1.5f, 7.2f, 7.2f}, hi2[3] = {4.6f, 7.3f, 7.3f};
        const float lo3[3] = {4.5f, 6.2f, 7.2f}, hi3[3] = {4.6f, 6.3f, 7.3f};
        s.add(lo0, hi0);
        s.add(lo1, hi1);
        s.add(lo2, hi2);
        s.add(lo3, hi3);
        Built bg;
        build(bg, c, s);
        Frustum f;
        f.plane_count = 1;
        f.planes[0].normal[0] = 1.0f;
        f.planes[0].d = -4.2f;
        const std::vector<uint32_t> want = expected_frustum(c, s, bg.grid.view(), f);
        CHECK(want == std::vector<uint32_t>{3u, 2u, 1u, 0u});
        CHECK(run(bg.q, f, s.size()) == want);
    }
}

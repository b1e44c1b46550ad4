// SPDX-License-Identifier: MIT
// Cell keys: pack/unpack round trips and order at the key limits, the exact
// edge of the unbounded key range, and pairs that straddle cell edges at large
// offsets with cell_size == interaction_distance (the case the guarded cell
// edge in cell_key.h exists for), against the brute-force oracle.
#include <doctest/doctest.h>

#include "test_support.h"

#include <array>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;
using hashgrid::StatusCode;

namespace {

using Triple = std::array<int32_t, 3>;

bool zyx_less(const Triple& l, const Triple& r) {
    if (l[2] != r[2]) return l[2] < r[2];
    if (l[1] != r[1]) return l[1] < r[1];
    return l[0] < r[0];
}

/// Pairs found by the grid (any order) for a scene, or a failure description.
std::string grid_matches_brute_force(const Scene& s, const GridConfig& config) {
    const std::vector<Pair> expected = brute_force_pairs(s, config.interaction_distance);
    GridConfig c = config;
    c.max_particles = std::max<uint32_t>(s.size(), 1);
    c.max_cells = c.max_particles;
    c.max_pairs = expected.size() + 1;
    auto grid = make_grid(c);
    if (!grid->init_status.ok()) return std::string("init: ") + grid->init_status.message;
    const Frame f = run_frame(**grid, s, hashgrid::serial_backend(), expected.size() + 1);
    if (!f.rebuild.ok()) return std::string("rebuild: ") + hashgrid::to_string(f.rebuild.code);
    if (!f.result.status.ok()) return std::string("find_pairs: ") + hashgrid::to_string(f.result.status.code);
    if (std::string d = check_sorted_state(**grid, s, c); !d.empty()) return d;
    return diff_pairs(in_documented_order(expected, expected_order(s, c)), f.pairs.data(), f.pairs.size());
}

/// Moves a float by `steps` ulps (negative: down).
float ulps(float v, int steps) {
    for (; steps > 0; --steps)
        v = std::nextafter(v, std::numeric_limits<float>::infinity());
    for (; steps < 0; ++steps)
        v = std::nextafter(v, -std::numeric_limits<float>::infinity());
    return v;
}

/// Coordinates around the cell edges k and k + 1 (nominal edge origin + k * cell,
/// and the guarded edge the key formula actually uses), a few ulps either side,
/// plus the same points shifted by +-r so that pairs straddle the edges.
std::vector<float> edge_coordinates(float origin, float cell, int64_t k) {
    std::vector<float> v;
    for (int64_t e = k; e <= k + 1; ++e) {
        const double nominal = static_cast<double>(origin) + static_cast<double>(e) * cell;
        const double guarded = static_cast<double>(origin) + static_cast<double>(e) * cell * hashgrid::kCellGuard;
        for (double edge : {nominal, guarded}) {
            const float f = static_cast<float>(edge);
            for (int u = -2; u <= 2; ++u) {
                const float p = ulps(f, u);
                v.push_back(p);
                for (int w = -1; w <= 1; ++w) {
                    v.push_back(ulps(p + cell, w));
                    v.push_back(ulps(p - cell, w));
                }
            }
        }
    }
    return v;
}

/// A scene whose coordinates are drawn from the edge coordinates of each axis.
Scene edge_scene(Rng& rng, uint32_t dims, const std::vector<float> (&axis)[3], uint32_t n) {
    Scene s;
    s.dims = dims;
    for (uint32_t i = 0; i < n; ++i) {
        const float px = axis[0][rng.below(static_cast<uint32_t>(axis[0].size()))];
        const float py = axis[1][rng.below(static_cast<uint32_t>(axis[1].size()))];
        s.add(px, py, dims == 3 ? axis[2][rng.below(static_cast<uint32_t>(axis[2].size()))] : 0.0f);
    }
    return s;
}

/// The particles of `s` whose cells are inside the key range of `config`.
Scene in_range_only(const Scene& s, const GridConfig& config) {
    Scene out;
    out.dims = s.dims;
    for (uint32_t i = 0; i < s.size(); ++i) {
        Scene one;
        one.dims = s.dims;
        one.add(s.x[i], s.y[i], s.z[i]);
        if (all_in_range(one, config)) out.add(s.x[i], s.y[i], s.z[i]);
    }
    return out;
}

} // namespace

TEST_CASE("pack_key3 / unpack_key3 round trip and (z, y, x) order at the limits") {
    const int32_t l = hashgrid::kKeyLimit3;
    const int32_t values[] = {-l, -l + 1, -l + 2, -2, -1, 0, 1, 2, l - 2, l - 1, l};
    std::vector<Triple> triples;
    for (int32_t z : values)
        for (int32_t y : values)
            for (int32_t x : values)
                triples.push_back({x, y, z});
    for (const Triple& t : triples) {
        const uint64_t key = hashgrid::pack_key3(t[0], t[1], t[2]);
        CHECK(key != hashgrid::kEmptyKey);
        int32_t x = 0, y = 0, z = 0;
        hashgrid::unpack_key3(key, x, y, z);
        CHECK(x == t[0]);
        CHECK(y == t[1]);
        CHECK(z == t[2]);
    }
    uint64_t order_errors = 0;
    for (const Triple& a : triples)
        for (const Triple& b : triples)
            if (zyx_less(a, b) != (hashgrid::pack_key3(a[0], a[1], a[2]) < hashgrid::pack_key3(b[0], b[1], b[2])))
                ++order_errors;
    CHECK(order_errors == 0);
}

TEST_CASE("pack_key2 / unpack_key2 round trip and (y, x) order at the limits") {
    const int32_t l = hashgrid::kKeyLimit2;
    const int32_t values[] = {-l, -l + 1, -65536, -2, -1, 0, 1, 2, 65536, l - 1, l};
    std::vector<Triple> pairs;
    for (int32_t y : values)
        for (int32_t x : values)
            pairs.push_back({x, y, 0});
    for (const Triple& t : pairs) {
        const uint64_t key = hashgrid::pack_key2(t[0], t[1]);
        CHECK(key != hashgrid::kEmptyKey);
        int32_t x = 0, y = 0;
        hashgrid::unpack_key2(key, x, y);
        CHECK(x == t[0]);
        CHECK(y == t[1]);
    }
    uint64_t order_errors = 0;
    for (const Triple& a : pairs)
        for (const Triple& b : pairs)
            if (zyx_less(a, b) != (hashgrid::pack_key2(a[0], a[1]) < hashgrid::pack_key2(b[0], b[1]))) ++order_errors;
    CHECK(order_errors == 0);
}

TEST_CASE("random key round trips") {
    Rng rng(2024);
    const int32_t l3 = hashgrid::kKeyLimit3;
    const int32_t l2 = hashgrid::kKeyLimit2;
    for (int i = 0; i < 100000; ++i) {
        const int32_t x = rng.between(-l3, l3);
        const int32_t y = rng.between(-l3, l3);
        const int32_t z = rng.between(-l3, l3);
        int32_t a = 0, b = 0, c = 0;
        hashgrid::unpack_key3(hashgrid::pack_key3(x, y, z), a, b, c);
        REQUIRE((a == x && b == y && c == z));
        const int32_t u = rng.between(-l2, l2);
        const int32_t v = rng.between(-l2, l2);
        hashgrid::unpack_key2(hashgrid::pack_key2(u, v), a, b);
        REQUIRE((a == u && b == v));
    }
}

TEST_CASE("hash_key is pinned (table layout must not change between versions or targets)") {
    Fnv1a h;
    for (uint64_t k = 0; k < 1000; ++k)
        h.u64(hashgrid::hash_key(k * 0x9e3779b97f4a7c15ull));
    h.u64(hashgrid::hash_key(hashgrid::pack_key3(1, 2, 3)));
    h.u64(hashgrid::hash_key(hashgrid::pack_key2(-7, 11)));
    CHECK(h.value() == 0xdd04bc94cd55b360ull);
}

TEST_CASE("key_scale is 1 / (cell * (1 + 2^-18))") {
    for (float cell : {1.0f, 0.1f, 3.0f, 1.0e-20f, 1.0e20f}) {
        CHECK(hashgrid::key_scale(cell) == 1.0 / (static_cast<double>(cell) * (1.0 + 0x1p-18)));
    }
}

TEST_CASE("pairs straddling cell edges at large offsets are exact (cell_size == interaction_distance)") {
    Rng rng(42);
    struct Setup {
        float cell;
        float origin;
        double key; // cell coordinate of the edges probed
    };
    std::vector<Setup> setups;
    for (float cell : {1.0f, 0.1f, 3.0f, 0.7f, 1.0e-3f, 1.0e3f, 1.0e-20f, 1.0e20f, 0.000123f}) {
        for (double key : {0.0, -1.0, 1.0e3, -1.0e5, 5.0e5, 1.0e6, -1.0e6, 1048570.0, -1048572.0}) {
            setups.push_back({cell, 0.0f, key});
            // Far origin: the particles sit near origin + key * cell with origin far away.
            setups.push_back({cell, static_cast<float>(-4.0e5 * cell), key});
        }
    }
    uint64_t scenes = 0, pairs_seen = 0;
    for (const Setup& su : setups) {
        for (uint32_t dims : {2u, 3u}) {
            std::vector<float> axis[3];
            for (uint32_t a = 0; a < 3; ++a) {
                const double base = su.key + static_cast<double>(rng.between(-2, 2));
                axis[a] = edge_coordinates(su.origin, su.cell, static_cast<int64_t>(base));
            }
            GridConfig config = unbounded_config(dims, su.cell, su.cell, 240, 1);
            config.origin[0] = config.origin[1] = config.origin[2] = su.origin;
            // Points beyond the 3D key range (near +-2^20) are dropped.
            const Scene s = in_range_only(edge_scene(rng, dims, axis, 240), config);
            if (s.size() < 100) continue;
            INFO("dims " << dims << " cell " << su.cell << " origin " << su.origin << " key " << su.key);
            CHECK(grid_matches_brute_force(s, config) == "");
            ++scenes;
            pairs_seen += brute_force_pairs(s, su.cell).size();
        }
    }
    CHECK(scenes > 250);
    CHECK(pairs_seen > 1000);
    MESSAGE("edge scenes: " << scenes << ", oracle pairs: " << pairs_seen);
}

TEST_CASE("pairs at 1e6 + k * cell +- 1 ulp, bounded and unbounded give the same pairs") {
    for (float cell : {1.0f, 2.0f, 0.5f}) {
        Scene s;
        s.dims = 3;
        for (int k = -3; k <= 3; ++k) {
            const float edge = 1.0e6f + rounded_mul(static_cast<float>(k), cell);
            for (int u : {-1, 0, 1}) {
                const float p = ulps(edge, u);
                s.add(p, 1.0e6f, -1.0e6f);
                s.add(ulps(p + cell, -1), 1.0e6f, -1.0e6f);          // just under r along x
                s.add(p, ulps(1.0e6f + cell, u), ulps(-1.0e6f, -u)); // about r along y
            }
        }
        GridConfig config = unbounded_config(3, cell, cell, s.size(), 1);
        config.origin[0] = 1.0e6f - 8.0f * cell;
        config.origin[1] = 1.0e6f - 8.0f * cell;
        config.origin[2] = -1.0e6f - 8.0f * cell;
        INFO("cell " << cell);
        CHECK(grid_matches_brute_force(s, config) == "");
        const GridConfig bounded = bounded_config(s, config, 2);
        CHECK(grid_matches_brute_force(s, bounded) == "");
        // Origin zero: keys near 1e6 / cell.
        GridConfig zero = config;
        zero.origin[0] = zero.origin[1] = zero.origin[2] = 0.0f;
        if (all_in_range(s, zero)) CHECK(grid_matches_brute_force(s, zero) == "");
    }
}

TEST_CASE("the bounded box ends exactly where the key formula leaves [0, cell_counts)") {
    for (uint32_t dims : {2u, 3u}) {
        GridConfig config = unbounded_config(dims, 0.75f, 0.75f, 8, 8);
        config.world = hashgrid::World::bounded;
        config.origin[0] = -3.25f;
        config.origin[1] = 10.0f;
        config.origin[2] = 1.0e5f;
        config.cell_counts[0] = 5;
        config.cell_counts[1] = 6;
        config.cell_counts[2] = dims == 3 ? 7u : 1u;
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        for (uint32_t axis = 0; axis < dims; ++axis) {
            INFO("dims " << dims << " axis " << axis);
            const float origin = config.origin[axis];
            const int64_t count = config.cell_counts[axis];
            // Upper end: walk up from the nominal end of the box to the first float
            // whose cell coordinate is `count`.
            float inside = ulps(static_cast<float>(origin + static_cast<double>(count) * config.cell_size), -64);
            REQUIRE(cell_coordinate(inside, origin, config.cell_size) < count);
            float outside = std::nextafter(inside, std::numeric_limits<float>::infinity());
            while (cell_coordinate(outside, origin, config.cell_size) < count) {
                inside = outside;
                outside = std::nextafter(inside, std::numeric_limits<float>::infinity());
            }
            const float below = ulps(origin, -1); // the lower end is the origin itself
            REQUIRE(cell_coordinate(origin, origin, config.cell_size) == 0);
            REQUIRE(cell_coordinate(below, origin, config.cell_size) == -1);
            const float centre[3] = {config.origin[0] + 1.0f, config.origin[1] + 1.0f, config.origin[2] + 1.0f};
            auto point = [&](float v) {
                float p[3] = {centre[0], centre[1], centre[2]};
                p[axis] = v;
                return std::array<float, 3>{p[0], p[1], p[2]};
            };
            Scene s;
            s.dims = dims;
            for (float v : {inside, origin}) {
                const auto p = point(v);
                s.add(p[0], p[1], p[2]);
            }
            CHECK((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
            for (float v : {outside, below}) {
                Scene bad = s;
                const auto p = point(v);
                bad.add(p[0], p[1], p[2]);
                const hashgrid::Status st = (**grid).rebuild(bad.spans(), hashgrid::serial_backend());
                CHECK(st.code == StatusCode::position_out_of_range);
                CHECK(st.index == 2);
            }
        }
    }
}

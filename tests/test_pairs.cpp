// SPDX-License-Identifier: MIT
// Property tests: the grid's pairs, sorted order, cell table and neighbour
// lists against brute-force oracles on hundreds of random scenes (2D and 3D,
// bounded and unbounded), plus small hand-made scenes for the edge cases.
#include <doctest/doctest.h>

#include "pair_filter_rule.h"
#include "test_support.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;
using hashgrid::StatusCode;

namespace {

/// One generated scene with the grid parameters it is meant for.
struct Case {
    Scene scene;
    float cell = 1.0f;
    float r = 1.0f; ///< interaction distance (uniform mode); cell_size in radius mode
    float origin[3] = {0.0f, 0.0f, 0.0f};
    std::string label;
};

const char* const kKindNames[] = {"uniform",  "clusters", "one-cell",   "lattice", "exact-r",
                                  "negative", "far",      "duplicates", "tiny",    "radii"};
constexpr uint32_t kKinds = 10;

/// Points on multiples of `step` (cell boundaries when step divides the cell),
/// with exact-r neighbours when r is a multiple of step.
void add_lattice(Rng& rng, Scene& s, float step, int32_t extent, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        const float px = static_cast<float>(rng.between(-extent, extent)) * step;
        const float py = static_cast<float>(rng.between(-extent, extent)) * step;
        const float pz = static_cast<float>(rng.between(-extent, extent)) * step;
        s.add(px, py, pz);
    }
}

/// Pairs at distance exactly r (must be absent) and just below r (present):
/// axis-aligned and 3-4-5 offsets from anchors on a dyadic grid.
void add_exact_r(Rng& rng, Scene& s, float r, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        const float ax = static_cast<float>(rng.between(-64, 64)) * 0.25f;
        const float ay = static_cast<float>(rng.between(-64, 64)) * 0.25f;
        const float az = static_cast<float>(rng.between(-64, 64)) * 0.25f;
        s.add(ax, ay, az);
        switch (rng.below(5)) {
        case 0:
            s.add(ax + r, ay, az);
            break;
        case 1:
            s.add(ax, ay - r, az);
            break;
        case 2:
            s.add(ax + rounded_mul(0.6f, r), ay + rounded_mul(0.8f, r), az);
            break; // rounded: either side
        case 3:
            s.add(std::nextafter(ax + r, ax), ay, az);
            break;
        default:
            s.add(ax, ay, s.dims == 3 ? az + r : az);
            break;
        }
    }
}

Case random_case(uint64_t seed) {
    Rng rng(seed * 0x9e3779b97f4a7c15ull + 17);
    Case c;
    const uint32_t kind = static_cast<uint32_t>(seed % kKinds);
    const uint32_t dims = rng.coin() ? 3u : 2u;
    c.scene.dims = dims;
    const float cells[] = {1.0f, 0.5f, 2.0f, 0.25f, 3.0f, 0.1f, 1.5f, 4.0f};
    c.cell = cells[rng.below(8)];
    // r == cell exactly half of the time (the tightest legal setting).
    c.r = rng.coin() ? c.cell : rng.uniform(0.3f, 1.0f) * c.cell;
    if (c.r > c.cell) c.r = c.cell;
    const uint32_t n = 2 + rng.below(dims == 3 ? 500 : 350);
    switch (kind) {
    case 0: { // uniform, a few neighbours each
        const float extent = c.cell * static_cast<float>(2 + rng.below(10));
        c.scene = uniform_scene(rng, dims, n, -extent, extent);
        break;
    }
    case 1: { // bell-shaped clusters, dense
        const float extent = c.cell * 20.0f;
        const uint32_t clusters = 1 + rng.below(5);
        const float sigma = c.cell * rng.uniform(0.3f, 3.0f);
        c.scene = clustered_scene(rng, dims, n, clusters, -extent, extent, sigma);
        break;
    }
    case 2: { // all points in one cell
        const float base = static_cast<float>(rng.between(-5, 5)) * c.cell;
        c.scene = uniform_scene(rng, dims, n, base + 0.01f * c.cell, base + 0.99f * c.cell);
        break;
    }
    case 3: { // points exactly on cell boundaries (multiples of cell or of cell/2)
        const float step = rng.coin() ? c.cell : c.cell * 0.5f;
        add_lattice(rng, c.scene, step, static_cast<int32_t>(2 + rng.below(6)), n);
        break;
    }
    case 4: { // pairs at exactly r
        c.r = c.cell;
        add_exact_r(rng, c.scene, c.r, n / 2 + 1);
        break;
    }
    case 5: { // negative coordinates only
        const float extent = c.cell * static_cast<float>(3 + rng.below(8));
        c.scene = uniform_scene(rng, dims, n, -extent - 1000.0f * c.cell, -1000.0f * c.cell);
        break;
    }
    case 6: { // near +-1e6 with small r (within the unbounded 3D key range for r >= 1)
        c.cell = static_cast<float>(1 + rng.below(4));
        c.r = c.cell;
        const float base = (rng.coin() ? 1.0e6f : -1.0e6f);
        const float spread = c.cell * static_cast<float>(2 + rng.below(4));
        c.scene = uniform_scene(rng, dims, n, base - spread, base + spread);
        if (rng.coin()) add_exact_r(rng, c.scene, c.r, 8); // also small anchors near the origin
        break;
    }
    case 7: { // duplicates
        const float extent = c.cell * 4.0f;
        c.scene = uniform_scene(rng, dims, n / 3 + 1, -extent, extent);
        const uint32_t base = c.scene.size();
        for (uint32_t i = 0; i < 2 * base; ++i) {
            const uint32_t k = rng.below(base);
            c.scene.add(c.scene.x[k], c.scene.y[k], c.scene.z[k]);
        }
        break;
    }
    case 8: { // N = 0, 1, 2
        const uint32_t tiny = rng.below(3);
        for (uint32_t i = 0; i < tiny; ++i) {
            const float px = rng.uniform(-c.cell, c.cell);
            const float py = rng.uniform(-c.cell, c.cell);
            c.scene.add(px, py, rng.uniform(-c.cell, c.cell));
        }
        break;
    }
    default: { // per-particle radii with a wide spread, cell = 2 * max radius
        const float extent = c.cell * static_cast<float>(2 + rng.below(6));
        c.scene = uniform_scene(rng, dims, n, -extent, extent);
        add_radii(rng, c.scene, c.cell * 0.001f, c.cell * 0.5f);
        c.r = c.cell;
        break;
    }
    }
    c.scene.dims = dims;
    // A third of the other scenes get radii too (uniform over a narrower range).
    if (kind != 9 && !c.scene.has_radius() && rng.below(3) == 0 && c.scene.size() > 0) {
        add_radii(rng, c.scene, c.cell * 0.05f, c.cell * 0.5f);
        c.r = c.cell;
    }
    // Floating origin: zero, a small shift, or just below the scene (so that the
    // bounded world can use the same origin and the pair arrays can be compared).
    const uint32_t origin_kind = rng.below(3);
    float lo[3];
    scene_min(c.scene, lo);
    for (uint32_t a = 0; a < 3; ++a) {
        const float shift = rounded_mul(static_cast<float>(rng.between(-3, 3)), rounded_mul(c.cell, 0.75f));
        c.origin[a] = origin_kind == 0 ? 0.0f : (origin_kind == 1 ? shift : lo[a] - rounded_mul(c.cell, rng.unit()));
    }
    c.label = std::string(kKindNames[kind]) + " seed=" + std::to_string(seed) + " dims=" + std::to_string(dims) +
              " n=" + std::to_string(c.scene.size()) + " cell=" + std::to_string(c.cell) + " r=" + std::to_string(c.r) +
              (c.scene.has_radius() ? " radii" : "");
    return c;
}

/// Origin at or below every coordinate (whole cells below the minimum), for bounded worlds.
void bounded_origin(const Scene& s, float cell, float origin[3]) {
    float lo[3];
    scene_min(s, lo);
    for (uint32_t a = 0; a < 3; ++a)
        origin[a] = a < s.dims ? lo[a] - cell : 0.0f;
}

/// Everything the grid produces for one scene and config, checked against the oracles.
/// Returns "" or the first disagreement; `pairs_out` receives the pair array.
std::string check_grid(const Case& c, const GridConfig& config, const std::vector<Pair>& expected_set,
                       const hashgrid::ThreadBackend& backend, std::vector<Pair>& pairs_out) {
    const Scene& s = c.scene;
    auto grid = make_grid(config);
    if (!grid->init_status.ok()) return std::string("init failed: ") + grid->init_status.message;
    const hashgrid::Status st = (*grid)->rebuild(s.spans(), backend);
    if (!st.ok()) return std::string("rebuild failed: ") + hashgrid::to_string(st.code) + " " + st.message;
    if (std::string d = check_sorted_state(**grid, s, config); !d.empty()) return d;
    if (std::string d = check_cell_table(**grid, s, config); !d.empty()) return d;

    // Room for 4 more pairs than found, then a guard zone past the capacity.
    const uint64_t capacity = expected_set.size() + 4;
    std::vector<Pair> got(static_cast<size_t>(capacity) + 8, Pair{~0u, ~0u});
    const hashgrid::PairResult pr = (*grid)->find_pairs(got.data(), capacity, backend);
    if (!pr.status.ok()) return std::string("find_pairs: ") + hashgrid::to_string(pr.status.code);
    if (pr.total != expected_set.size() || pr.written != expected_set.size())
        return "total " + std::to_string(pr.total) + " written " + std::to_string(pr.written) + " expected " +
               std::to_string(expected_set.size());
    // (a) the set; (b) the documented order.
    const std::vector<Pair> got_set = as_set(got.data(), pr.written);
    if (std::string d = diff_pairs(expected_set, got_set.data(), got_set.size()); !d.empty()) return "set: " + d;
    const std::vector<Pair> expected_order_pairs = in_documented_order(expected_set, expected_order(s, config));
    if (std::string d = diff_pairs(expected_order_pairs, got.data(), pr.written); !d.empty()) return "order: " + d;
    for (size_t k = static_cast<size_t>(capacity); k < got.size(); ++k)
        if (got[k].a != ~0u || got[k].b != ~0u) return "find_pairs wrote past its capacity";
    pairs_out.assign(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(pr.written));

    // Neighbour lists (CSR, both directions, ascending) from the grid's pair array.
    std::vector<uint32_t> eo, ei;
    expected_csr(s.size(), expected_set, eo, ei);
    std::vector<uint32_t> offsets(s.size() + 1, ~0u), indices(ei.size() + 1, ~0u);
    const hashgrid::Status ns = (*grid)->neighbor_lists(got.data(), pr.written, offsets.data(), offsets.size(),
                                                        indices.data(), indices.size(), backend);
    if (!ns.ok()) return std::string("neighbor_lists: ") + hashgrid::to_string(ns.code);
    if (std::string d = diff_u32("offsets", eo, offsets.data()); !d.empty()) return d;
    if (std::string d = diff_u32("indices", ei, indices.data()); !d.empty()) return d;
    if (indices[ei.size()] != ~0u) return "neighbor_lists wrote past 2 * pair_count";
    return "";
}

/// Config for a case; max_pairs = the oracle's pair count plus some slack.
GridConfig config_for(const Case& c, hashgrid::World world, uint64_t pair_count) {
    GridConfig config = unbounded_config(c.scene.dims, c.cell, c.r, c.scene.size(), pair_count + 16);
    for (uint32_t a = 0; a < 3; ++a)
        config.origin[a] = c.origin[a];
    if (world == hashgrid::World::bounded) config = bounded_config(c.scene, config, 1);
    return config;
}

/// Whether a bounded world with the case's own origin is reasonable: every
/// particle at a non-negative cell coordinate and at most ~4M cells in the box.
bool origin_fits_bounded(const Case& c) {
    const GridConfig b = config_for(c, hashgrid::World::unbounded, 0);
    for (uint32_t i = 0; i < c.scene.size(); ++i)
        for (uint32_t a = 0; a < c.scene.dims; ++a)
            if (cell_coordinate(c.scene.coord(a, i), b.origin[a], b.cell_size) < 0) return false;
    const GridConfig bounded = bounded_config(c.scene, b, 1);
    const uint64_t total = uint64_t{bounded.cell_counts[0]} * bounded.cell_counts[1] * bounded.cell_counts[2];
    return total <= (uint64_t{1} << 22);
}

/// Coverage of the random-scene tests (reported, and checked to be non-trivial).
struct Coverage {
    uint64_t scenes = 0, oracle_pairs = 0, bounded_same_origin = 0;
} g_coverage;

/// Runs one case unbounded and bounded with the same origin and cell size (moving
/// the origin next to the scene when the case's own origin does not fit a box),
/// checks both against the oracles and checks that their pair arrays are identical.
void check_case(const Case& c, const hashgrid::ThreadBackend& backend) {
    INFO(c.label);
    std::vector<Pair> unbounded_pairs, bounded_pairs;
    const std::vector<Pair> expected = oracle_pairs(c.scene, c.r);
    const GridConfig unbounded = config_for(c, hashgrid::World::unbounded, expected.size());
    REQUIRE(all_in_range(c.scene, unbounded));
    CHECK(check_grid(c, unbounded, expected, backend, unbounded_pairs) == "");
    ++g_coverage.scenes;
    g_coverage.oracle_pairs += unbounded_pairs.size();
    Case b = c;
    if (!origin_fits_bounded(c)) {
        bounded_origin(c.scene, c.cell, b.origin);
        if (!origin_fits_bounded(b)) return; // the scene spans too many cells for a box
        b.label += " (origin moved for bounded)";
        INFO("unbounded with the bounded origin");
        CHECK(check_grid(b, config_for(b, hashgrid::World::unbounded, expected.size()), expected, backend,
                         unbounded_pairs) == "");
    }
    const GridConfig bounded = config_for(b, hashgrid::World::bounded, expected.size());
    REQUIRE(all_in_range(b.scene, bounded));
    CHECK(check_grid(b, bounded, expected, backend, bounded_pairs) == "");
    if (b.origin[0] == c.origin[0] && b.origin[1] == c.origin[1] && b.origin[2] == c.origin[2])
        ++g_coverage.bounded_same_origin;
    INFO("bounded vs unbounded pair arrays, same origin");
    CHECK(diff_pairs(unbounded_pairs, bounded_pairs.data(), bounded_pairs.size()) == "");
}

/// Small fixed scene helper.
Case make_case(uint32_t dims, float cell, float r, const char* label) {
    Case c;
    c.scene.dims = dims;
    c.cell = cell;
    c.r = r;
    c.label = label;
    return c;
}

} // namespace

TEST_CASE("random scenes match brute force (serial backend)") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    g_coverage = Coverage{};
    const uint32_t count = scaled_count(1500);
    for (uint64_t seed = 1; seed <= count; ++seed)
        check_case(random_case(seed), serial);
    MESSAGE("scenes " << g_coverage.scenes << ", oracle pairs " << g_coverage.oracle_pairs
                      << ", bounded with the same origin " << g_coverage.bounded_same_origin);
    CHECK(g_coverage.scenes == count);
    CHECK(g_coverage.oracle_pairs > uint64_t{count} * 2000 / 3);
    CHECK(g_coverage.bounded_same_origin > count / 3);
}

TEST_CASE("random scenes match brute force (oneTBB, 2 threads)") {
    ParallelBackend tbb(2);
    for (uint64_t seed = 2001; seed < 2001 + scaled_count(300); ++seed)
        check_case(random_case(seed), tbb.backend());
}

TEST_CASE("the sweep oracle agrees with brute force") {
    for (uint64_t seed = 5001; seed < 5001 + scaled_count(300); ++seed) {
        const Case c = random_case(seed);
        INFO(c.label);
        const auto brute = brute_force_pairs(c.scene, c.r);
        const auto sweep = sweep_pairs(c.scene, c.r);
        CHECK(diff_pairs(brute, sweep.data(), sweep.size()) == "");
    }
}

TEST_CASE("large scenes (many chunks per phase) match the oracle, serial and oneTBB") {
    // The library's grains are thousands of particles: only scenes this large
    // split rebuild and sweep into several chunks and spread them over threads.
    std::vector<Case> cases;
    {
        Rng rng(71);
        Case c = make_case(3, 1.0f, 1.0f, "uniform 3D 40k");
        c.scene = uniform_scene(rng, 3, 40000, -15.0f, 20.0f);
        cases.push_back(c);
    }
    {
        Rng rng(72);
        Case c = make_case(3, 1.0f, 0.8f, "clusters 3D 30k");
        c.scene = clustered_scene(rng, 3, 30000, 6, -30.0f, 30.0f, 2.5f);
        cases.push_back(c);
    }
    {
        Rng rng(73);
        Case c = make_case(2, 2.0f, 2.0f, "clusters 2D 50k, radii");
        c.scene = clustered_scene(rng, 2, 50000, 9, -200.0f, 200.0f, 12.0f);
        add_radii(rng, c.scene, 0.01f, 1.0f);
        cases.push_back(c);
    }
    {
        Rng rng(74);
        Case c = make_case(3, 0.5f, 0.5f, "boundary lattice 3D 20k");
        add_lattice(rng, c.scene, 0.25f, 24, 20000);
        c.origin[0] = c.origin[1] = c.origin[2] = -6.5f;
        cases.push_back(c);
    }
    {
        Rng rng(75);
        Case c = make_case(3, 2.0f, 2.0f, "near -1e6 3D 20k");
        c.scene = uniform_scene(rng, 3, 20000, -1.0e6f - 30.0f, -1.0e6f + 30.0f);
        cases.push_back(c);
    }
    ParallelBackend tbb3(3);
    ParallelBackend tbb8(8);
    for (const Case& c : cases) {
        check_case(c, hashgrid::serial_backend());
        check_case(c, tbb3.backend());
        check_case(c, tbb8.backend());
    }
}

TEST_CASE("empty scene: no pairs") {
    check_case(make_case(3, 1.0f, 1.0f, "empty 3D"), hashgrid::serial_backend());
    check_case(make_case(2, 1.0f, 1.0f, "empty 2D"), hashgrid::serial_backend());
}

TEST_CASE("one particle: no pairs") {
    Case c = make_case(3, 1.0f, 1.0f, "one particle");
    c.scene.add(0.5f, -0.5f, 7.0f);
    check_case(c, hashgrid::serial_backend());
}

TEST_CASE("two particles at exactly r are not a pair, just below r they are") {
    for (uint32_t dims : {2u, 3u}) {
        Case exact = make_case(dims, 1.0f, 1.0f, "exact r");
        exact.scene.add(0.25f, 0.5f, 0.5f);
        exact.scene.add(1.25f, 0.5f, 0.5f);
        CHECK(brute_force_pairs(exact.scene, exact.r).empty());
        check_case(exact, hashgrid::serial_backend());

        Case pythagoras = make_case(dims, 5.0f, 5.0f, "3-4-5 at exactly r");
        pythagoras.scene.add(1.0f, 1.0f, 1.0f);
        pythagoras.scene.add(4.0f, 5.0f, 1.0f);
        CHECK(brute_force_pairs(pythagoras.scene, pythagoras.r).empty());
        check_case(pythagoras, hashgrid::serial_backend());

        Case below = make_case(dims, 1.0f, 1.0f, "one ulp below r");
        below.scene.add(0.25f, 0.5f, 0.5f);
        below.scene.add(std::nextafter(1.25f, 0.0f), 0.5f, 0.5f);
        CHECK(brute_force_pairs(below.scene, below.r).size() == 1);
        check_case(below, hashgrid::serial_backend());
    }
}

TEST_CASE("radii: pair iff d < ra + rb, exactly ra + rb is out") {
    Case c = make_case(3, 2.0f, 2.0f, "radii touch");
    c.scene.add(0.0f, 0.0f, 0.0f, 0.5f);
    c.scene.add(1.5f, 0.0f, 0.0f, 1.0f);  // d = 1.5 = 0.5 + 1.0: not a pair
    c.scene.add(0.0f, 1.25f, 0.0f, 1.0f); // d = 1.25 < 1.5 to particle 0: pair
    c.scene.add(3.0f, 0.0f, 0.0f, 0.25f); // to 1: d = 1.5 > 1.25; to 0: far
    const auto pairs = brute_force_pairs(c.scene, c.r);
    REQUIRE(pairs.size() == 2);
    CHECK(pairs[0].a == 0);
    CHECK(pairs[0].b == 2);
    CHECK(pairs[1].a == 1);
    CHECK(pairs[1].b == 2); // d^2 = 2.25 + 1.5625 = 3.8125 < 4
    check_case(c, hashgrid::serial_backend());
}

TEST_CASE("duplicate points are pairs of each other") {
    Case c = make_case(3, 1.0f, 1.0f, "duplicates");
    for (int i = 0; i < 5; ++i)
        c.scene.add(-3.5f, 2.0f, 1.0f);
    for (int i = 0; i < 3; ++i)
        c.scene.add(10.0f, 10.0f, 10.0f);
    CHECK(brute_force_pairs(c.scene, c.r).size() == 10 + 3);
    check_case(c, hashgrid::serial_backend());
}

TEST_CASE("all points in one cell") {
    Rng rng(7);
    Case c = make_case(3, 1.0f, 1.0f, "one cell, 800 points");
    c.scene = uniform_scene(rng, 3, 800, 2.001f, 2.999f);
    check_case(c, hashgrid::serial_backend());
    ParallelBackend tbb(2);
    check_case(c, tbb.backend());
}

TEST_CASE("points on cell boundaries, cell_size == r") {
    for (uint32_t dims : {2u, 3u}) {
        Case c = make_case(dims, 0.5f, 0.5f, "boundary lattice");
        for (int i = -4; i <= 4; ++i)
            for (int j = -4; j <= 4; ++j)
                for (int k = (dims == 3 ? -2 : 0); k <= (dims == 3 ? 2 : 0); ++k)
                    c.scene.add(static_cast<float>(i) * 0.5f, static_cast<float>(j) * 0.5f,
                                static_cast<float>(k) * 0.5f);
        // All lattice neighbours are at exactly r: no pairs at all.
        CHECK(brute_force_pairs(c.scene, c.r).empty());
        check_case(c, hashgrid::serial_backend());
        // Half-step lattice: neighbours at r/2 are pairs, at r are not.
        Case h = make_case(dims, 0.5f, 0.5f, "half-step boundary lattice");
        for (int i = -6; i <= 6; ++i)
            for (int j = -6; j <= 6; ++j)
                h.scene.add(static_cast<float>(i) * 0.25f, static_cast<float>(j) * 0.25f, 0.5f);
        CHECK(!brute_force_pairs(h.scene, h.r).empty());
        check_case(h, hashgrid::serial_backend());
    }
}

TEST_CASE("coordinates near +-1e6 with small r, unbounded 3D") {
    Rng rng(11);
    for (float base : {1.0e6f, -1.0e6f}) {
        for (float r : {1.0f, 2.0f, 4.0f}) {
            Case c = make_case(3, r, r, "near 1e6");
            c.scene = uniform_scene(rng, 3, 400, base - 3.0f * r, base + 3.0f * r);
            add_exact_r(rng, c.scene, r, 20);
            c.label += base > 0 ? " +" : " -";
            c.label += std::to_string(r);
            check_case(c, hashgrid::serial_backend());
        }
    }
}

TEST_CASE("2D ignores z: a null or garbage z gives the same pairs") {
    Rng rng(5);
    Scene s = uniform_scene(rng, 2, 300, -4.0f, 4.0f);
    const auto expected = brute_force_pairs(s, 1.0f);
    const GridConfig config = unbounded_config(2, 1.0f, 1.0f, s.size(), expected.size() + 1);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    std::vector<float> garbage(s.size(), std::numeric_limits<float>::quiet_NaN());
    hashgrid::ParticleSpans spans = s.spans();
    spans.z = garbage.data();
    REQUIRE((*grid)->rebuild(spans, hashgrid::serial_backend()).ok());
    std::vector<Pair> got(expected.size() + 1);
    const auto pr = (*grid)->find_pairs(got.data(), got.size(), hashgrid::serial_backend());
    REQUIRE(pr.status.ok());
    CHECK(diff_pairs(expected, as_set(got.data(), pr.written).data(), pr.written) == "");
}

TEST_CASE("init_allocate gives the same results as caller memory") {
    Rng rng(99);
    Case c = make_case(3, 1.0f, 1.0f, "init_allocate");
    c.scene = clustered_scene(rng, 3, 500, 3, -6.0f, 6.0f, 1.0f);
    const std::vector<Pair> expected = brute_force_pairs(c.scene, c.r);
    const GridConfig config = config_for(c, hashgrid::World::unbounded, expected.size());
    std::vector<Pair> reference;
    REQUIRE(check_grid(c, config, expected, hashgrid::serial_backend(), reference) == "");
    hashgrid::Grid grid;
    REQUIRE(grid.init_allocate(config).ok());
    REQUIRE(grid.rebuild(c.scene.spans(), hashgrid::serial_backend()).ok());
    std::vector<Pair> got(reference.size() + 1);
    const auto pr = grid.find_pairs(got.data(), got.size(), hashgrid::serial_backend());
    REQUIRE(pr.status.ok());
    CHECK(diff_pairs(reference, got.data(), pr.written) == "");
}

TEST_CASE("feeding back last frame's sorted order (same grid, moving particles) stays exact") {
    Rng rng(123);
    Scene s = uniform_scene(rng, 3, 12000, -12.0f, 12.0f);
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, s.size(), 200000);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    ParallelBackend tbb(2);
    for (int frame = 0; frame < 6; ++frame) {
        INFO("frame " << frame);
        const hashgrid::ThreadBackend backend = frame % 2 ? tbb.backend() : hashgrid::serial_backend();
        const std::vector<Pair> expected = oracle_pairs(s, 1.0f);
        const Frame f = run_frame(**grid, s, backend, expected.size());
        REQUIRE(f.rebuild.ok());
        REQUIRE(f.result.status.ok());
        CHECK(check_sorted_state(**grid, s, config) == "");
        CHECK(diff_pairs(in_documented_order(expected, expected_order(s, config)), f.pairs.data(), f.pairs.size()) ==
              "");
        // Next frame: the particles in this frame's sorted order, jittered a little.
        const uint32_t* order = (**grid).sorted_to_original();
        Scene next;
        for (uint32_t k = 0; k < s.size(); ++k) {
            const float px = s.x[order[k]] + rng.uniform(-0.05f, 0.05f);
            const float py = s.y[order[k]] + rng.uniform(-0.05f, 0.05f);
            next.add(px, py, s.z[order[k]] + rng.uniform(-0.05f, 0.05f));
        }
        s = next;
    }
}

TEST_CASE("a grid reused across frames of different sizes stays exact") {
    Rng rng(31337);
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, 2000, 2000u * 2000u / 2);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    ParallelBackend tbb(2);
    for (uint32_t frame = 0; frame < 12; ++frame) {
        const uint32_t n = frame % 3 == 0 ? 0u : 1 + rng.below(2000);
        Scene s = frame % 2 ? uniform_scene(rng, 3, n, -5.0f, 5.0f) : clustered_scene(rng, 3, n, 2, -5.0f, 5.0f, 0.7f);
        INFO("frame " << frame << " n=" << n);
        const auto expected = in_documented_order(brute_force_pairs(s, 1.0f), expected_order(s, config));
        const Frame f = run_frame(**grid, s, frame % 2 ? tbb.backend() : hashgrid::serial_backend(), expected.size());
        REQUIRE(f.rebuild.ok());
        REQUIRE(f.result.status.ok());
        CHECK(check_sorted_state(**grid, s, config) == "");
        CHECK(diff_pairs(expected, f.pairs.data(), f.pairs.size()) == "");
    }
}

TEST_CASE("[long] random scenes match brute force, 6000 more seeds" * doctest::skip()) {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    for (uint64_t seed = 100001; seed <= 106000; ++seed)
        check_case(random_case(seed), serial);
}

// ---------------------------------------------------------------------------
// PairFilter: the filtered output is the unfiltered canonical order minus the
// rejected pairs, for every thread count; counts, buffers and max_pairs see
// the accepted pairs only.

namespace {

FilteredRun run_filtered(hashgrid::Grid& grid, const hashgrid::ThreadBackend& b, uint64_t capacity,
                         hashgrid::PairFilter filter) {
    FilteredRun run;
    std::vector<Pair> buffer(static_cast<size_t>(capacity) + 1, Pair{~0u, ~0u});
    run.result = grid.find_pairs(capacity > 0 ? buffer.data() : nullptr, capacity, b, filter);
    const size_t end = static_cast<size_t>(capacity);
    run.past_capacity_untouched = buffer[end].a == ~0u && buffer[end].b == ~0u;
    const uint64_t written = std::min(run.result.written, capacity);
    run.pairs.assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(written));
    return run;
}

/// One scene in one world, both rules, every backend: a roomy buffer, a
/// too-small one, max_pairs between the filtered and the unfiltered count
/// (ok) and below the filtered count (pair_capacity, exact prefix).
void check_filtered_case(const Case& c, hashgrid::World world, const std::vector<hashgrid::ThreadBackend>& backends,
                         uint64_t team_seed) {
    const std::string world_name = world == hashgrid::World::bounded ? "bounded" : "unbounded";
    INFO(c.label << " " << world_name);
    const std::vector<Pair> oracle = oracle_pairs(c.scene, c.r);
    const GridConfig config = config_for(c, world, oracle.size());
    REQUIRE(all_in_range(c.scene, config));
    const std::vector<Pair> all = in_documented_order(oracle, expected_order(c.scene, config));
    const uint64_t unfiltered = all.size();
    const std::vector<uint8_t> team = random_teams(team_seed, c.scene.size());
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    for (const bool by_team : {false, true}) {
        FilterRule rule;
        rule.by_team = by_team;
        rule.team_a = &team;
        rule.team_b = &team;
        const std::vector<Pair> expected = kept_pairs(all, rule);
        const uint64_t total = expected.size();
        const std::string rule_name = by_team ? "team[a] != team[b]" : "(a ^ b) & 1";
        INFO(rule_name << ": " << total << " of " << unfiltered << " pairs");
        GridConfig between = config;
        between.max_pairs = total + (unfiltered - total) / 2;
        GridConfig below = config;
        below.max_pairs = total / 2;
        auto between_grid = make_grid(between);
        auto below_grid = make_grid(below);
        REQUIRE(between_grid->init_status.ok());
        REQUIRE(below_grid->init_status.ok());
        for (const hashgrid::ThreadBackend& b : backends) {
            INFO("workers " << b.worker_count);
            REQUIRE((*grid)->rebuild(c.scene.spans(), b).ok());
            // The unfiltered output, then the same search filtered: the first
            // minus the rejected pairs.
            const FilteredRun plain = run_filtered(**grid, b, unfiltered, {});
            CHECK(check_filtered(plain, StatusCode::ok, all, unfiltered) == "");
            const std::vector<Pair> plain_kept = kept_pairs(plain.pairs, rule);
            rule.calls.store(0);
            const FilteredRun roomy = run_filtered(**grid, b, total + 3, rule.filter());
            CHECK(check_filtered(roomy, StatusCode::ok, plain_kept, total) == "");
            CHECK(check_filtered(roomy, StatusCode::ok, expected, total) == "");
            CHECK(rule.calls.load() >= unfiltered); // every pair within range is offered
            // A too-small buffer: the exact prefix, the exact total.
            if (total > 0) {
                const uint64_t cap = total / 2;
                CHECK(check_filtered(run_filtered(**grid, b, cap, rule.filter()), StatusCode::output_too_small,
                                     expected, cap) == "");
            }
            // max_pairs counts accepted pairs: between the two counts is ok.
            REQUIRE((*between_grid)->rebuild(c.scene.spans(), b).ok());
            CHECK(check_filtered(run_filtered(**between_grid, b, total + 3, rule.filter()), StatusCode::ok, expected,
                                 total) == "");
            if (between.max_pairs < unfiltered)
                CHECK(run_filtered(**between_grid, b, unfiltered, {}).result.status.code == StatusCode::pair_capacity);
            // Below the filtered count: pair_capacity with the exact prefix of
            // min(max_pairs, capacity) pairs.
            if (total > 0) {
                REQUIRE((*below_grid)->rebuild(c.scene.spans(), b).ok());
                CHECK(check_filtered(run_filtered(**below_grid, b, total + 3, rule.filter()), StatusCode::pair_capacity,
                                     expected, below.max_pairs) == "");
                const uint64_t cap = below.max_pairs / 2;
                CHECK(check_filtered(run_filtered(**below_grid, b, cap, rule.filter()), StatusCode::pair_capacity,
                                     expected, cap) == "");
            }
            CHECK(!rule.bad_call.load());
        }
    }
}

} // namespace

TEST_CASE("PairFilter: random scenes give the filtered oracle at 1, 2, 3 and 8 threads") {
    ParallelBackend p1(1), p2(2), p3(3), p8(8);
    const std::vector<hashgrid::ThreadBackend> backends = {hashgrid::serial_backend(), p1.backend(), p2.backend(),
                                                           p3.backend(), p8.backend()};
    uint64_t bounded = 0;
    for (uint64_t seed = 9001; seed < 9001 + scaled_count(50); ++seed) {
        const Case c = random_case(seed);
        check_filtered_case(c, hashgrid::World::unbounded, backends, seed);
        if (origin_fits_bounded(c)) {
            check_filtered_case(c, hashgrid::World::bounded, backends, seed);
            ++bounded;
        }
    }
    CHECK(bounded > 0);
}

TEST_CASE("PairFilter: every pair-test kernel (scalar, SSE2, AVX2 where the CPU has it)") {
    struct KernelGuard {
        ~KernelGuard() { hashgrid::set_pair_kernel(hashgrid::PairKernel::automatic); }
    } guard;
    ParallelBackend p3(3);
    const std::vector<hashgrid::ThreadBackend> backends = {hashgrid::serial_backend(), p3.backend()};
    for (const hashgrid::PairKernel kernel :
         {hashgrid::PairKernel::scalar, hashgrid::PairKernel::sse2, hashgrid::PairKernel::avx2}) {
        if (!hashgrid::set_pair_kernel(kernel)) continue;
        INFO("kernel " << static_cast<int>(kernel));
        for (uint64_t seed = 9501; seed < 9501 + scaled_count(14); ++seed)
            check_filtered_case(random_case(seed), hashgrid::World::unbounded, backends, seed);
        Rng rng(83);
        Case c = make_case(3, 1.0f, 1.0f, "clusters 3D 12k");
        c.scene = clustered_scene(rng, 3, 12000, 4, -20.0f, 20.0f, 2.0f);
        check_filtered_case(c, hashgrid::World::unbounded, backends, 83);
    }
}

TEST_CASE("PairFilter: large scenes (many chunks, chunks searched again below max_pairs)") {
    ParallelBackend p1(1), p2(2), p3(3), p8(8);
    const std::vector<hashgrid::ThreadBackend> backends = {hashgrid::serial_backend(), p1.backend(), p2.backend(),
                                                           p3.backend(), p8.backend()};
    {
        Rng rng(81);
        Case c = make_case(3, 1.0f, 1.0f, "uniform 3D 10k");
        c.scene = uniform_scene(rng, 3, 10000, -12.0f, 12.0f);
        check_filtered_case(c, hashgrid::World::unbounded, backends, 81);
    }
    {
        Rng rng(82);
        Case c = make_case(2, 2.0f, 2.0f, "clusters 2D 15k, radii");
        c.scene = clustered_scene(rng, 2, 15000, 7, -150.0f, 150.0f, 10.0f);
        add_radii(rng, c.scene, 0.01f, 1.0f);
        bounded_origin(c.scene, c.cell, c.origin);
        check_filtered_case(c, hashgrid::World::bounded, backends, 82);
    }
}

// SPDX-License-Identifier: MIT
// Unbounded worlds take every finite coordinate: cells beyond 2^20 per axis
// (3D) or 2^31 (2D) are keyed modulo the period, and cells beyond 2^31 come
// from the exact far formula. Checked against an exact big-integer cell oracle
// (exact_cells.h) and brute-force pairs, at several thread counts.
#include <doctest/doctest.h>

#include "far_scenes.h"
#include "test_support.h"

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;
using hashgrid::StatusCode;

namespace {

/// The wrapped cell coordinates of every sorted position, read from the grid's cell table.
std::vector<std::array<int32_t, 3>> cells_by_position(const hashgrid::Grid& g, uint32_t dims) {
    const hashgrid::CellTableView v = g.cells();
    std::vector<std::array<int32_t, 3>> out(g.particle_count());
    for (uint32_t c = 0; c < v.cell_count; ++c) {
        std::array<int32_t, 3> cell{0, 0, 0};
        if (dims == 3)
            hashgrid::unpack_key3(v.key[c], cell[0], cell[1], cell[2]);
        else
            hashgrid::unpack_key2(v.key[c], cell[0], cell[1]);
        for (uint32_t k = v.start[c]; k < v.start[c + 1]; ++k)
            out[k] = cell;
    }
    return out;
}

/// A float with a random sign, exponent in [lo, hi] and mantissa.
float random_float(Rng& rng, int lo, int hi) {
    const float mantissa = 1.0f + rng.unit();
    const float sign = rng.coin() ? 1.0f : -1.0f;
    return sign * std::ldexp(mantissa, rng.between(lo, hi));
}

} // namespace

TEST_CASE("any finite coordinate: the cell is the exact floor, kept modulo the period") {
    Rng rng(0xce11);
    uint64_t decided = 0, far_total = 0; // cells the oracle pins down exactly; cells of the far formula
    const float top = std::numeric_limits<float>::max();
    for (uint32_t dims : {2u, 3u}) {
        for (float cell : {0.01f, 1.0f, 1000.0f, 3.0e-5f, 7.0e20f}) {
            for (float origin : {0.0f, 1.0e6f, -3.0e30f, 12.375f, top}) {
                Scene s;
                s.dims = dims;
                const float specials[] = {top,      -top,    3.0e38f,
                                          -3.0e38f, 1.0e30f, -1.0e30f,
                                          1.0e6f,   -1.0e6f, std::numeric_limits<float>::denorm_min(),
                                          0.0f,     -0.0f,   2147483648.0f};
                for (float v : specials)
                    s.add(v, -v, v);
                for (uint32_t i = 0; i < 300; ++i) {
                    const float px = random_float(rng, -30, 127);
                    const float py = random_float(rng, -30, 127);
                    s.add(px, py, random_float(rng, -30, 127));
                }
                GridConfig config = unbounded_config(dims, cell, cell, s.size(), 1);
                for (uint32_t a = 0; a < 3; ++a)
                    config.origin[a] = origin;
                auto grid = make_grid(config);
                REQUIRE(grid->init_status.ok());
                REQUIRE((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
                const auto cells = cells_by_position(**grid, dims);
                const uint32_t* order = (**grid).sorted_to_original();
                const uint32_t bits = dims == 3 ? 21u : 31u;
                const int64_t period = int64_t{1} << bits;
                uint32_t mismatches = 0, near_integers = 0, far_cells = 0;
                std::string first;
                for (uint32_t k = 0; k < s.size(); ++k)
                    for (uint32_t a = 0; a < dims; ++a) {
                        const float p = s.coord(a, order[k]);
                        const double t = scaled(p, origin, cell);
                        // The fast formula is the documented cell where it applies (exact to
                        // 2^-22); beyond, the far formula is exact to 2^-50.
                        const bool fast = std::fabs(t) < 0x1p31 - 4.0;
                        bool near_integer = false;
                        const int64_t exact = exact_wrapped_cell(p, origin, hashgrid::key_scale(cell), bits,
                                                                 near_integer, fast ? 20u : 46u);
                        const int64_t expected = fast ? wrapped_cell(p, origin, cell, dims) : exact;
                        far_cells += fast ? 0u : 1u;
                        const int64_t got = cells[k][a];
                        int64_t diff = ((got - expected) % period + period) % period;
                        if (diff > period / 2) diff -= period;
                        near_integers += near_integer ? 1u : 0u;
                        if (diff == 0 || (near_integer && (diff == 1 || diff == -1))) continue;
                        if (mismatches++ == 0)
                            first = "p " + std::to_string(p) + " axis " + std::to_string(a) + " expected " +
                                    std::to_string(expected) + " got " + std::to_string(got);
                    }
                INFO("dims " << dims << " cell " << cell << " origin " << origin);
                CHECK_MESSAGE(mismatches == 0, first);
                decided += s.size() * dims - near_integers;
                far_total += far_cells;
            }
        }
    }
    // Exact integers (common far out) and values within 2^-20 of one may floor
    // either way; the rest, most of them, must match exactly.
    CHECK(decided > 10000);
    CHECK(far_total > 10000);
}

TEST_CASE("far and wrapping scenes: pairs, order and cell table match the oracle at every thread count") {
    const std::vector<FarScene> scenes = far_scenes(scaled_count(6000));
    for (const FarScene& fs : scenes) {
        INFO(std::string(fs.name));
        const std::vector<uint32_t> order = expected_order(fs.scene, fs.config);
        const std::vector<Pair> expected =
            in_documented_order(oracle_pairs(fs.scene, fs.config.interaction_distance), order);
        CHECK(!expected.empty());
        std::vector<Pair> first;
        for (uint32_t threads : {0u, 2u, 3u, 8u}) {
            INFO("threads " << threads);
            ParallelBackend parallel(threads == 0 ? 1 : threads);
            const hashgrid::ThreadBackend backend = threads == 0 ? hashgrid::serial_backend() : parallel.backend();
            auto grid = make_grid(fs.config);
            REQUIRE(grid->init_status.ok());
            const Frame f = run_frame(**grid, fs.scene, backend, fs.config.max_pairs);
            REQUIRE(f.rebuild.ok());
            REQUIRE(f.result.status.ok());
            CHECK((**grid).cells().wrapped == fs.wraps);
            CHECK(check_sorted_state(**grid, fs.scene, fs.config) == "");
            CHECK(check_cell_table(**grid, fs.scene, fs.config) == "");
            CHECK(diff_pairs(expected, f.pairs.data(), f.pairs.size()) == "");
            if (threads == 0)
                first = f.pairs;
            else
                CHECK(diff_pairs(first, f.pairs.data(), f.pairs.size()) == "");
        }
    }
}

TEST_CASE("a wrapping frame after an ordinary one and back: each frame is exact") {
    const std::vector<FarScene> scenes = far_scenes(scaled_count(1500));
    Rng rng(5);
    const Scene around_origin = uniform_scene(rng, 3, scaled_count(1500), -8.0f, 16.0f);
    const FarScene& seam = scenes[7]; // "seam 3D": same config shape, origin 2^20 cells away
    REQUIRE(std::string(seam.name) == "seam 3D");
    auto grid = make_grid(seam.config);
    REQUIRE(grid->init_status.ok());
    ParallelBackend parallel(3);
    // The same grid sees a scene whose cells wrap, then one that sits entirely
    // inside the wrap range of the same origin, then the first again.
    Scene inside = around_origin;
    for (std::vector<float>* axis : {&inside.x, &inside.y, &inside.z})
        for (float& v : *axis)
            v = v - 2048.0f;
    const bool wraps[3] = {true, false, true};
    uint32_t frame = 0;
    const Scene* frames[3] = {&seam.scene, &inside, &seam.scene};
    for (const Scene* s : frames) {
        const Frame f = run_frame(**grid, *s, parallel.backend(), seam.config.max_pairs);
        REQUIRE(f.rebuild.ok());
        REQUIRE(f.result.status.ok());
        const std::vector<Pair> expected =
            in_documented_order(oracle_pairs(*s, seam.config.interaction_distance), expected_order(*s, seam.config));
        CHECK(diff_pairs(expected, f.pairs.data(), f.pairs.size()) == "");
        CHECK(check_sorted_state(**grid, *s, seam.config) == "");
        CHECK((**grid).cells().wrapped == wraps[frame++]);
    }
}

TEST_CASE("a dense box spanning the whole period: the pairs across the wrap seam") {
    // 3D keeps cell x modulo 2^21. Particles in the cells on both sides of the
    // seam (x = -2^20 and, wrapped from -2^20 - 1, 2^20 - 1) make a box of
    // 2^21 x 1 x 1 cells, which max_particles = 2^20 lets the dense path take
    // (2 * max_particles + 64 cells). Its cells at the two ends are neighbours
    // through the seam, so the pairs between them must be found although the
    // box does not hold them side by side.
    hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, 1u << 20, 64);
    config.max_cells = 64;
    const double scale = hashgrid::key_scale(config.cell_size);
    Scene s;
    s.dims = 3;
    // (true cell, position within it): wrapped, the first three lie in the
    // seam's top cells (2^20 - 2, 2^20 - 1), the last two in its bottom ones.
    const std::pair<int64_t, double> at[] = {
        {-1048578, 0.5}, {-1048577, 0.3}, {-1048577, 0.8}, {-1048576, 0.4}, {-1048575, 0.2}};
    for (const auto& [cell, within] : at) {
        const auto x = static_cast<float>((static_cast<double>(cell) + within) / scale);
        REQUIRE(std::floor(hashgrid::scaled_coordinate(x, config.origin[0], scale)) == static_cast<double>(cell));
        s.add(x, 0.5f, 0.5f);
    }
    const std::vector<uint32_t> order = expected_order(s, config);
    const std::vector<Pair> expected = in_documented_order(oracle_pairs(s, config.interaction_distance), order);
    REQUIRE(expected.size() == 4); // neighbours along x; the third and fourth across the seam
    ParallelBackend parallel(2);
    for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), parallel.backend()}) {
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        const Frame f = run_frame(**grid, s, backend, config.max_pairs);
        REQUIRE(f.rebuild.ok());
        REQUIRE(f.result.status.ok());
        const hashgrid::CellTableView v = (**grid).cells();
        CHECK(v.wrapped);
        REQUIRE(v.map_cell != nullptr); // the dense box
        CHECK(v.map_extent[0] == (1u << 21));
        CHECK(check_sorted_state(**grid, s, config) == "");
        CHECK(diff_pairs(expected, f.pairs.data(), f.pairs.size()) == "");
    }
}

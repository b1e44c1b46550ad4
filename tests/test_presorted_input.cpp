// SPDX-License-Identifier: MIT
// Input already in cell order (a caller that keeps its particles in the
// grid's sorted order and a frame in which none crossed a cell) is rebuilt
// without the counting sort (core/src/particle/rebuild_presorted.cpp). The oracle is
// the counting sort itself: the same particles in random order give the
// frame that the sorted input must reproduce byte for byte (order, sorted
// copy, cells, table, pairs), and brute force checks both.
#include <doctest/doctest.h>

#include "test_support.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;
using hashgrid::StatusCode;

namespace {

/// The pairs of a frame of `s`, renamed to the indices of `permuted(s, order)`:
/// index i of s is position inverse[i] there. The sequence keeps its order.
std::vector<Pair> renamed(const std::vector<Pair>& pairs, const std::vector<uint32_t>& inverse) {
    std::vector<Pair> out;
    out.reserve(pairs.size());
    for (const Pair& p : pairs) {
        const uint32_t a = inverse[p.a], b = inverse[p.b];
        out.push_back(a < b ? Pair{a, b} : Pair{b, a});
    }
    return out;
}

struct Case {
    std::string name;
    Scene scene;
    GridConfig config;
};

std::vector<Case> cases(Rng& rng) {
    std::vector<Case> out;
    for (uint32_t dims : {2u, 3u}) {
        const uint32_t n = scaled_count(6000);
        const float side = dims == 3 ? 18.0f : 70.0f; // about 1 particle per cell
        Scene uniform = uniform_scene(rng, dims, n, 0.0f, side);
        const GridConfig unbounded = unbounded_config(dims, 1.0f, 1.0f, n + 8, uint64_t{n} * 64);
        out.push_back({"unbounded uniform " + std::to_string(dims) + "D", uniform, unbounded});
        out.push_back(
            {"bounded uniform " + std::to_string(dims) + "D", uniform, bounded_config(uniform, unbounded, 2)});
        Scene radii = uniform;
        add_radii(rng, radii, 0.05f, 0.5f);
        out.push_back({"unbounded radii " + std::to_string(dims) + "D", radii, unbounded});
        out.push_back({"bounded radii " + std::to_string(dims) + "D", radii, bounded_config(radii, unbounded, 1)});
        // Clusters far apart: the unbounded frame's cells do not fit a dense
        // box, so the general path hashes every key.
        Scene sparse = clustered_scene(rng, dims, n, 5, 0.0f, 2.0e4f, 3.0f);
        out.push_back({"unbounded sparse " + std::to_string(dims) + "D", sparse, unbounded});
        // Beyond the cell-key range: keys wrap.
        Scene wrapped = uniform;
        wrapped.add(3.0e37f, -2.0e37f, dims == 3 ? 1.0e30f : 0.0f);
        out.push_back({"unbounded wrapped " + std::to_string(dims) + "D", wrapped, unbounded});
    }
    return out;
}

} // namespace

TEST_CASE("input in cell order: the same frame as the counting sort, byte for byte, at every thread count") {
    Rng rng(2027);
    ParallelBackend threads2(2), threads3(3);
    const hashgrid::ThreadBackend backends[] = {hashgrid::serial_backend(), threads2.backend(), threads3.backend()};
    for (const Case& c : cases(rng)) {
        INFO(c.name);
        // The oracle: the general path on the input as given (random order).
        auto general = make_grid(c.config);
        REQUIRE(general->init_status.ok());
        const Frame expected = run_frame(**general, c.scene, hashgrid::serial_backend(), c.config.max_pairs);
        REQUIRE(expected.rebuild.ok());
        REQUIRE(expected.result.status.ok());
        CHECK(diff_pairs(in_documented_order(brute_force_pairs(c.scene, c.config.interaction_distance),
                                             std::vector<uint32_t>((**general).sorted_to_original(),
                                                                   (**general).sorted_to_original() + c.scene.size())),
                         expected.pairs.data(), expected.pairs.size()) == "");

        const Scene in_order = permuted(c.scene, (**general).sorted_to_original());
        const std::vector<uint32_t> inverse = invert(
            std::vector<uint32_t>((**general).sorted_to_original(), (**general).sorted_to_original() + c.scene.size()));
        const std::vector<Pair> expected_pairs = renamed(expected.pairs, inverse);
        for (const hashgrid::ThreadBackend& backend : backends) {
            auto grid = make_grid(c.config, 0x5A);
            REQUIRE(grid->init_status.ok());
            const Frame got = run_frame(**grid, in_order, backend, c.config.max_pairs);
            REQUIRE(got.rebuild.ok());
            REQUIRE(got.result.status.ok());
            // The sort was skipped (the timings name its phases), and nothing moved.
            CHECK((**grid).last_rebuild_timings().scatter == 0);
            CHECK((**grid).last_rebuild_timings().scan == 0);
            for (uint32_t k = 0; k < in_order.size(); ++k)
                if ((**grid).sorted_to_original()[k] != k) {
                    FAIL_CHECK("sorted_to_original()[" << k << "] = " << (**grid).sorted_to_original()[k]);
                    break;
                }
            CHECK(check_sorted_state(**grid, in_order, c.config) == "");
            CHECK(check_cell_table(**grid, in_order, c.config) == "");
            CHECK(hash_cells(**grid) == hash_cells(**general));
            CHECK((**grid).table_slots() == (**general).table_slots());
            CHECK(diff_pairs(expected_pairs, got.pairs.data(), got.pairs.size()) == "");
        }
    }
}

TEST_CASE("input almost in cell order takes the counting sort and stays exact") {
    Rng rng(77);
    for (uint32_t dims : {2u, 3u}) {
        const uint32_t n = 9000; // more than two chunks of the order check (4096)
        const Scene s = uniform_scene(rng, dims, n, 0.0f, dims == 3 ? 20.0f : 90.0f);
        const GridConfig unbounded = unbounded_config(dims, 1.0f, 1.0f, n, uint64_t{n} * 64);
        for (const GridConfig& config : {unbounded, bounded_config(s, unbounded, 1)}) {
            auto first = make_grid(config);
            REQUIRE(first->init_status.ok());
            REQUIRE((**first).rebuild(s.spans(), hashgrid::serial_backend()).ok());
            const Scene in_order = permuted(s, (**first).sorted_to_original());
            // One descent inside a chunk, then one exactly at a chunk boundary.
            for (uint32_t at : {1234u, 4096u}) {
                INFO("dims " << dims << " bounded " << (config.world == hashgrid::World::bounded) << " swap at " << at);
                // Swap with a particle of a later cell, so the order really breaks.
                uint32_t later = at;
                while (later < n && particle_cell(in_order, config, later) == particle_cell(in_order, config, at - 1))
                    ++later;
                REQUIRE(later < n);
                std::vector<uint32_t> swap(n);
                for (uint32_t k = 0; k < n; ++k)
                    swap[k] = k;
                std::swap(swap[at - 1], swap[later]);
                const Scene broken = permuted(in_order, swap.data());
                auto grid = make_grid(config);
                REQUIRE(grid->init_status.ok());
                const Frame f = run_frame(**grid, broken, hashgrid::serial_backend(), config.max_pairs);
                REQUIRE(f.rebuild.ok());
                CHECK(check_sorted_state(**grid, broken, config) == "");
                CHECK(check_cell_table(**grid, broken, config) == "");
                CHECK(diff_pairs(in_documented_order(brute_force_pairs(broken, config.interaction_distance),
                                                     std::vector<uint32_t>((**grid).sorted_to_original(),
                                                                           (**grid).sorted_to_original() + n)),
                                 f.pairs.data(), f.pairs.size()) == "");
            }
        }
    }
}

TEST_CASE("input in cell order with too many cells: cell_capacity with the exact count, previous frame kept") {
    for (uint32_t dims : {2u, 3u}) {
        INFO("dims " << dims);
        // A row of particles one cell apart along x: keys ascend.
        Scene row;
        row.dims = dims;
        for (uint32_t c = 0; c < 400; ++c)
            row.add(static_cast<float>(c) + 0.5f, 0.5f, 0.5f);
        Scene two;
        two.dims = dims;
        two.add(0.25f, 0.5f, 0.5f);
        two.add(0.75f, 0.5f, 0.5f);
        GridConfig config = unbounded_config(dims, 1.0f, 1.0f, 500, 1000);
        config.max_cells = 300;
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        REQUIRE((**grid).rebuild(two.spans(), hashgrid::serial_backend()).ok());
        const uint64_t cells_before = hash_cells(**grid);
        const hashgrid::Status st = (**grid).rebuild(row.spans(), hashgrid::serial_backend());
        CHECK(st.code == StatusCode::cell_capacity);
        CHECK(st.needed == 400);
        // The previous frame, still whole: cells, table and its one pair.
        CHECK((**grid).particle_count() == 2);
        CHECK(hash_cells(**grid) == cells_before);
        CHECK(check_cell_table(**grid, two, config) == "");
        std::vector<Pair> out(4);
        const hashgrid::PairResult pairs = (**grid).find_pairs(out.data(), out.size(), hashgrid::serial_backend());
        CHECK(pairs.status.ok());
        REQUIRE(pairs.written == 1);
        CHECK(out[0].a == 0);
        CHECK(out[0].b == 1);
    }
}

namespace {

/// Linear cell index of particle i in a bounded world ((z, y, x) order).
uint64_t linear_cell(const Scene& s, const GridConfig& config, uint32_t i) {
    const CellCoord cc = particle_cell(s, config, i);
    return static_cast<uint64_t>(cc.c[0]) +
           config.cell_counts[0] *
               (static_cast<uint64_t>(cc.c[1]) + config.cell_counts[1] * static_cast<uint64_t>(cc.c[2]));
}

/// Lowest and highest cell coordinates of the scene's particles.
std::vector<int64_t> cell_box(const Scene& s, const GridConfig& config) {
    std::vector<int64_t> box = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MIN, INT64_MIN, INT64_MIN};
    for (uint32_t i = 0; i < s.size(); ++i) {
        const CellCoord cc = particle_cell(s, config, i);
        for (uint32_t d = 0; d < 3; ++d) {
            box[d] = std::min(box[d], cc.c[d]);
            box[3 + d] = std::max(box[3 + d], cc.c[d]);
        }
    }
    return box;
}

bool in_cell_order(const Scene& s, const GridConfig& config) {
    for (uint32_t i = 1; i < s.size(); ++i)
        if (linear_cell(s, config, i) < linear_cell(s, config, i - 1)) return false;
    return true;
}

/// Particle i of `s` moved by up to `step` per axis (or, with `jump`, to
/// anywhere in [0, side)), kept inside [0, side).
void move_particle(Rng& rng, Scene& s, uint32_t i, float step, float side, bool jump) {
    float* axes[3] = {s.x.data(), s.y.data(), s.z.data()};
    for (uint32_t a = 0; a < s.dims; ++a) {
        float& v = axes[a][i];
        v = jump ? rng.uniform(0.0f, side) : std::clamp(v + rng.uniform(-step, step), 0.0f, side * 0.9999f);
    }
}

} // namespace

TEST_CASE("input in last frame's order after small moves: only the movers are sorted, the same frame") {
    Rng rng(4242);
    ParallelBackend threads2(2), threads3(3);
    const hashgrid::ThreadBackend backends[] = {hashgrid::serial_backend(), threads2.backend(), threads3.backend()};
    for (bool bounded : {true, false})
        for (uint32_t dims : {2u, 3u})
            for (bool radii : {false, true}) {
                const uint32_t n = 20000;                      // several 4096-particle chunks and a short last one
                const float side = dims == 3 ? 21.0f : 100.0f; // about 2 particles per cell
                Scene start = uniform_scene(rng, dims, n, 0.0f, side);
                if (radii) add_radii(rng, start, 0.05f, 0.5f);
                // Unbounded: the occupied cells fill a box, which the frames
                // are sorted over (dense path); the merge runs over last
                // frame's box when this frame's box is the same.
                const GridConfig unbounded = unbounded_config(dims, 1.0f, 1.0f, n + 600, uint64_t{n} * 64);
                const GridConfig order_config = bounded_config(start, unbounded, 1); // same origin and cells
                const GridConfig config = bounded ? order_config : unbounded;
                for (uint32_t threads = 1; threads <= 3; ++threads) {
                    const hashgrid::ThreadBackend& backend = backends[threads - 1];
                    INFO((bounded ? "bounded" : "unbounded")
                         << " dims " << dims << " radii " << radii << " threads " << threads);
                    Rng moves(99); // the same frames for every backend
                    auto grid = make_grid(config);
                    REQUIRE(grid->init_status.ok());
                    Scene scene = start;
                    REQUIRE(run_frame(**grid, scene, backend, config.max_pairs).rebuild.ok());
                    // Frames: small moves; fewer particles (last frame's extra
                    // positions still hold cells); a few more; too many movers (the
                    // counting sort: more than an eighth, and more than a quarter);
                    // one mover; small moves; a few far jumps.
                    const char* frames[] = {"small moves", "shrunk by 700", "grown by 60", "20% jump",
                                            "40% jump",    "one mover",     "small moves", "far jumps"};
                    for (const char* what : frames) {
                        INFO(std::string(what));
                        const std::string name = what;
                        Scene next = permuted(scene, (**grid).sorted_to_original());
                        for (uint32_t i = 0; i < next.size(); ++i) {
                            if (name == "40% jump" || name == "20% jump")
                                move_particle(moves, next, i, 0.0f, side,
                                              moves.uniform(0.0f, 1.0f) < (name == "40% jump" ? 0.4f : 0.2f));
                            else if (name == "one mover")
                                move_particle(moves, next, i, 0.0f, side, i == 777);
                            else if (name == "far jumps")
                                move_particle(moves, next, i, 0.0f, side, i % 997 == 5);
                            else
                                move_particle(moves, next, i, 0.05f, side, false);
                        }
                        if (name == "grown by 60")
                            for (uint32_t k = 0; k < 60; ++k)
                                next.add(moves.uniform(0.0f, side), moves.uniform(0.0f, side),
                                         moves.uniform(0.0f, side), 0.3f);
                        if (!radii) next.radius.clear();
                        if (name == "shrunk by 700") {
                            const uint32_t m = next.size() - 700;
                            next.x.resize(m);
                            next.y.resize(m);
                            next.z.resize(m);
                            if (radii) next.radius.resize(m);
                        }
                        REQUIRE(!in_cell_order(next, order_config)); // not the presorted path
                        // Unbounded frames merge only over last frame's box.
                        const bool same_box = bounded || cell_box(scene, config) == cell_box(next, config);
                        const Frame got = run_frame(**grid, next, backend, config.max_pairs);
                        REQUIRE(got.rebuild.ok());
                        REQUIRE(got.result.status.ok());
                        const hashgrid::RebuildTimings& t = (**grid).last_rebuild_timings();
                        const bool counting_sort = t.scan + t.scatter > 0;
                        CHECK(counting_sort == (name == "40% jump" || name == "20% jump" || !same_box));
                        CHECK(bounded == ((**grid).cells().map_cell == nullptr)); // unbounded: always the box map
                        // Oracles: the documented order, cells and pairs, and a fresh
                        // grid's counting sort of the same input.
                        CHECK(check_sorted_state(**grid, next, config) == "");
                        CHECK(check_cell_table(**grid, next, config) == "");
                        auto fresh = make_grid(config);
                        REQUIRE(fresh->init_status.ok());
                        const Frame expected = run_frame(**fresh, next, hashgrid::serial_backend(), config.max_pairs);
                        REQUIRE(expected.rebuild.ok());
                        CHECK(hash_cells(**grid) == hash_cells(**fresh));
                        CHECK(hash_order(**grid) == hash_order(**fresh));
                        CHECK(diff_pairs(expected.pairs, got.pairs.data(), got.pairs.size()) == "");
                        scene = next;
                    }
                }
            }
}

TEST_CASE("bounded input in last frame's order: many movers sort in parallel blocks, the same frame") {
    // About 9,000 of 120,000 particles change cells per frame: more than one
    // block of the displaced particles' radix sort.
    Rng rng(515);
    ParallelBackend threads2(2);
    const uint32_t n = 120000;
    const float side = 39.0f;
    const Scene start = uniform_scene(rng, 3, n, 0.0f, side);
    const GridConfig config = bounded_config(start, unbounded_config(3, 1.0f, 1.0f, n, uint64_t{n} * 64), 1);
    for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), threads2.backend()}) {
        Rng moves(7);
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        Scene scene = start;
        REQUIRE((**grid).rebuild(scene.spans(), backend).ok());
        for (uint32_t frame = 0; frame < 2; ++frame) {
            Scene next = permuted(scene, (**grid).sorted_to_original());
            for (uint32_t i = 0; i < n; ++i)
                move_particle(moves, next, i, 0.05f, side, i % 4999 == 3);
            REQUIRE((**grid).rebuild(next.spans(), backend).ok());
            const hashgrid::RebuildTimings& t = (**grid).last_rebuild_timings();
            CHECK(t.scan + t.scatter == 0); // merged
            CHECK(check_sorted_state(**grid, next, config) == "");
            CHECK(check_cell_table(**grid, next, config) == "");
            auto fresh = make_grid(config);
            REQUIRE(fresh->init_status.ok());
            REQUIRE((**fresh).rebuild(next.spans(), hashgrid::serial_backend()).ok());
            CHECK(hash_cells(**grid) == hash_cells(**fresh));
            CHECK(hash_order(**grid) == hash_order(**fresh));
            scene = next;
        }
    }
}

// Input already in cell order (a caller that keeps its particles in the
// grid's sorted order and a frame in which none crossed a cell) is rebuilt
// without the counting sort (core/src/rebuild_presorted.cpp). The oracle is
// the counting sort itself: the same particles in random order give the
// frame that the sorted input must reproduce byte for byte (order, sorted
// copy, cells, table, pairs), and brute force checks both.
#include <doctest/doctest.h>

#include "test_support.h"

#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;
using hashgrid::StatusCode;

namespace {

/// `s` permuted into the order of `order` (sorted position -> index in s).
Scene permuted(const Scene& s, const uint32_t* order) {
    Scene out;
    out.dims = s.dims;
    for (uint32_t k = 0; k < s.size(); ++k) {
        const uint32_t i = order[k];
        out.add(s.coord(0, i), s.coord(1, i), s.dims == 3 ? s.coord(2, i) : 0.0f);
        if (s.has_radius()) out.radius.push_back(s.radius[i]);
    }
    return out;
}

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

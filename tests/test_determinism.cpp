// Golden hashes: fixed scenes give bit-identical pairs, neighbour lists, sorted
// order and cell table for the serial backend and oneTBB at 1, 2, 3, 4, 7, 8
// and 16 threads, over repeated runs, on every target (DESIGN.md guarantee 3).
//
// The hashes are FNV-1a over values (test_support.h), so they do not depend on
// endianness. When a golden value has to change (an intended change of the
// order or of the table layout), run `test_determinism` with
// HASHGRID_PRINT_GOLDEN=1 and paste the printed table.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "golden_hashes.h"
#include "test_support.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;
using hashgrid_test::golden::GridHashes;

namespace {


std::string text(const GridHashes& h) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "{0x%016" PRIx64 "ull, 0x%016" PRIx64 "ull, 0x%016" PRIx64 "ull, 0x%016" PRIx64 "ull, %" PRIu64 "u}",
                  h.pairs, h.csr, h.order, h.cells, h.pair_count);
    return buf;
}

struct FixedScene {
    const char* name;
    Scene scene;
    GridConfig config;
};

GridConfig config_for(const Scene& s, float cell, float r, uint64_t max_pairs) {
    return unbounded_config(s.dims, cell, r, s.size(), max_pairs);
}

GridConfig bounded(const Scene& s, GridConfig c) {
    float lo[3];
    scene_min(s, lo);
    for (uint32_t a = 0; a < 3; ++a)
        c.origin[a] = a < s.dims ? lo[a] - 0.5f * c.cell_size : 0.0f;
    return bounded_config(s, c, 1);
}

/// The fixed scenes. Their generation is part of the golden values: do not
/// change a generator without regenerating the table.
std::vector<FixedScene> fixed_scenes() {
    std::vector<FixedScene> v;
    {
        Rng rng(1);
        Scene s = uniform_scene(rng, 3, 30000, 0.0f, 30.0f);
        v.push_back({"uniform 3D unbounded", s, config_for(s, 1.0f, 1.0f, 400000)});
    }
    {
        Rng rng(2);
        Scene s = clustered_scene(rng, 3, 40000, 8, -20.0f, 20.0f, 2.0f);
        v.push_back({"clusters 3D bounded", s, bounded(s, config_for(s, 1.0f, 0.75f, 2000000))});
    }
    {
        Rng rng(3);
        Scene s = uniform_scene(rng, 2, 20000, -50.0f, 50.0f);
        add_radii(rng, s, 0.01f, 0.5f);
        v.push_back({"uniform 2D unbounded radii", s, config_for(s, 1.0f, 1.0f, 400000)});
    }
    {
        Rng rng(4);
        Scene s = clustered_scene(rng, 2, 50000, 12, -100.0f, 100.0f, 8.0f);
        v.push_back({"clusters 2D bounded", s, bounded(s, config_for(s, 1.0f, 1.0f, 2000000))});
    }
    {
        // Points on cell boundaries (multiples of cell/2) with duplicates and
        // exact-r neighbours, floating origin one cell down.
        Rng rng(5);
        Scene s;
        s.dims = 3;
        for (uint32_t i = 0; i < 12000; ++i) {
            const float px = static_cast<float>(rng.between(-20, 20)) * 0.5f;
            const float py = static_cast<float>(rng.between(-20, 20)) * 0.5f;
            s.add(px, py, static_cast<float>(rng.between(-10, 10)) * 0.5f);
        }
        GridConfig c = config_for(s, 1.0f, 1.0f, 2000000);
        c.origin[0] = c.origin[1] = c.origin[2] = -1.0f;
        v.push_back({"boundary lattice 3D unbounded", s, c});
    }
    {
        Rng rng(6);
        Scene s = clustered_scene(rng, 3, 20000, 5, 0.0f, 40.0f, 3.0f);
        add_radii(rng, s, 0.02f, 1.0f);
        v.push_back({"clusters 3D bounded radii", s, bounded(s, config_for(s, 2.0f, 2.0f, 2000000))});
    }
    {
        Rng rng(7);
        Scene s = uniform_scene(rng, 3, 20000, 1.0e6f - 40.0f, 1.0e6f + 40.0f);
        v.push_back({"near 1e6 3D unbounded", s, config_for(s, 2.0f, 2.0f, 400000)});
    }
    return v;
}

/// One full frame on a fresh grid (memory pre-filled with `fill`), optionally
/// preceded by a frame of other particles so that stale state is exercised.
GridHashes run(const FixedScene& fs, const hashgrid::ThreadBackend& backend, uint8_t fill, bool dirty_first) {
    auto grid = make_grid(fs.config, fill);
    REQUIRE(grid->init_status.ok());
    hashgrid::Grid& g = **grid;
    if (dirty_first) {
        // The first half of the scene in reverse order: other cells, other
        // counts, inside the same box, no more pairs than the scene itself.
        Scene other;
        other.dims = fs.scene.dims;
        for (uint32_t i = fs.scene.size() / 2; i-- > 0;) {
            other.add(fs.scene.x[i], fs.scene.y[i], fs.scene.z[i]);
            if (fs.scene.has_radius()) other.radius.push_back(fs.scene.radius[i]);
        }
        REQUIRE(g.rebuild(other.spans(), backend).ok());
        std::vector<Pair> scratch(static_cast<size_t>(fs.config.max_pairs));
        REQUIRE(g.find_pairs(scratch.data(), scratch.size(), backend).status.ok());
    }
    REQUIRE(g.rebuild(fs.scene.spans(), backend).ok());
    std::vector<Pair> pairs(static_cast<size_t>(fs.config.max_pairs));
    const hashgrid::PairResult pr = g.find_pairs(pairs.data(), pairs.size(), backend);
    REQUIRE(pr.status.ok());
    std::vector<uint32_t> offsets(fs.scene.size() + 1), indices(static_cast<size_t>(2 * pr.written));
    REQUIRE(g.neighbor_lists(pairs.data(), pr.written, offsets.data(), offsets.size(), indices.data(), indices.size(),
                             backend)
                .ok());
    GridHashes h;
    h.pairs = hash_pairs(pairs.data(), pr.written);
    h.csr = hash_csr(offsets, indices);
    h.order = hash_order(g);
    h.cells = hash_cells(g);
    h.pair_count = pr.pair_count;
    return h;
}

const std::vector<FixedScene>& scenes() {
    static const std::vector<FixedScene> s = fixed_scenes();
    return s;
}

} // namespace

TEST_CASE("fixed scenes: the serial backend gives the golden hashes") {
    REQUIRE(scenes().size() == sizeof(golden::kGrid) / sizeof(golden::kGrid[0]));
    const bool print = std::getenv("HASHGRID_PRINT_GOLDEN") != nullptr;
    if (print) std::printf("inline constexpr GridHashes kGrid[] = {\n");
    for (size_t k = 0; k < scenes().size(); ++k) {
        const GridHashes h = run(scenes()[k], hashgrid::serial_backend(), 0x00, false);
        if (print) std::printf("    %s, // %s\n", text(h).c_str(), scenes()[k].name);
        INFO(std::string(scenes()[k].name) << ": got " << text(h));
        CHECK(h == golden::kGrid[k]);
    }
    if (print) std::printf("};\n");
}

TEST_CASE("fixed scenes: identical for oneTBB at 1, 2, 3, 4, 7, 8 and 16 threads, over 3 runs") {
    for (uint32_t threads : {1u, 2u, 3u, 4u, 7u, 8u, 16u}) {
        ParallelBackend tbb(threads);
#if defined(HASHGRID_HAS_TBB) || defined(HASHGRID_TEST_STD_THREADS)
        CHECK(tbb.threads() == threads); // more threads than cores included
#endif
        const hashgrid::ThreadBackend backend = tbb.backend();
        for (size_t k = 0; k < scenes().size(); ++k) {
            const uint8_t fills[3] = {0x00, 0xFF, 0x5A};
            for (int rep = 0; rep < 3; ++rep) {
                const GridHashes h = run(scenes()[k], backend, fills[rep], rep == 2);
                INFO(std::string(scenes()[k].name)
                     << ", " << threads << " threads, run " << rep << ": got " << text(h));
                CHECK(h == golden::kGrid[k]);
            }
        }
    }
}

TEST_CASE("fixed scenes: identical for the std::thread backend at 1, 2, 3, 4, 7, 8 and 16 threads") {
    for (uint32_t threads : {1u, 2u, 3u, 4u, 7u, 8u, 16u}) {
        hashgrid::platform::StdThreadBackend pool(threads);
        CHECK(pool.threads() == threads);
        for (size_t k = 0; k < scenes().size(); ++k) {
            const GridHashes h = run(scenes()[k], pool.backend(), 0x00, false);
            INFO(std::string(scenes()[k].name) << ", " << threads << " std::threads: got " << text(h));
            CHECK(h == golden::kGrid[k]);
        }
    }
}

TEST_CASE("fixed scenes: the serial backend is stable over repeated runs on one grid") {
    const FixedScene& fs = scenes()[0];
    auto grid = make_grid(fs.config);
    REQUIRE(grid->init_status.ok());
    std::vector<Pair> pairs(static_cast<size_t>(fs.config.max_pairs));
    for (int rep = 0; rep < 3; ++rep) {
        REQUIRE((**grid).rebuild(fs.scene.spans(), hashgrid::serial_backend()).ok());
        const hashgrid::PairResult pr = (**grid).find_pairs(pairs.data(), pairs.size(), hashgrid::serial_backend());
        REQUIRE(pr.status.ok());
        CHECK(hash_pairs(pairs.data(), pr.written) == golden::kGrid[0].pairs);
        CHECK(hash_order(**grid) == golden::kGrid[0].order);
        CHECK(hash_cells(**grid) == golden::kGrid[0].cells);
    }
}

TEST_CASE("FNV-1a and the scene generator are pinned") {
    // FNV-1a 64 test vectors ("" and "a").
    CHECK(Fnv1a{}.value() == 0xcbf29ce484222325ull);
    Fnv1a a;
    a.byte('a');
    CHECK(a.value() == 0xaf63dc4c8601ec8cull);
    // The generator: if this changes, every golden value above changes too.
    Rng rng(1);
    Fnv1a h;
    for (int i = 0; i < 1000; ++i)
        h.u64(rng.next_u64());
    for (int i = 0; i < 1000; ++i)
        h.f32(rng.uniform(-3.0f, 5.0f));
    for (int i = 0; i < 1000; ++i)
        h.f32(rng.cluster(1.0f, 0.5f));
    CHECK(h.value() == 0x903b1e07416e8515ull);
}

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

#include "test_support.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;

namespace {

struct Hashes {
    uint64_t pairs = 0;
    uint64_t csr = 0;
    uint64_t order = 0;
    uint64_t cells = 0;
    uint64_t pair_count = 0;
    friend bool operator==(const Hashes&, const Hashes&) = default;
};

std::string text(const Hashes& h) {
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
Hashes run(const FixedScene& fs, const hashgrid::ThreadBackend& backend, uint8_t fill, bool dirty_first) {
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
    Hashes h;
    h.pairs = hash_pairs(pairs.data(), pr.written);
    h.csr = hash_csr(offsets, indices);
    h.order = hash_order(g);
    h.cells = hash_cells(g);
    h.pair_count = pr.pair_count;
    return h;
}

// Golden values, one row per fixed scene: {pairs, csr, order, cells, pair count}.
const Hashes kGolden[] = {
    {0xafe8a39289a33638ull, 0x37150888b93a29c2ull, 0x795986268453b02eull, 0x78587e43e6a8865full,
     67159u}, // uniform 3D unbounded
    {0x5568d4fafa3fd863ull, 0xe1014d197c70c106ull, 0x45d197e6cf139d8dull, 0x30bf20709f61e2b6ull,
     505267u}, // clusters 3D bounded
    {0x04b169838f9afc5eull, 0x5e1ce099648ecd8eull, 0x996716967ecdd317ull, 0xf1d4a24f07c63187ull,
     18508u}, // uniform 2D unbounded radii
    {0x7106c8f9aaf0f959ull, 0x77ca2938bcfc5edeull, 0xa14073788397b674ull, 0x6d4b5b408e99d779ull,
     426084u}, // clusters 2D bounded
    {0x4bf70d535637ec61ull, 0x24c159e817da421cull, 0x95e6f1e734a1a693ull, 0x827e6307deba39d1ull,
     51409u}, // boundary lattice 3D unbounded
    {0xde166e9c97db992aull, 0xf8a0790ac3655b7aull, 0x68f82de0ca861ca7ull, 0x42983c8ed718934full,
     196462u}, // clusters 3D bounded radii
    {0x51483ec22d351da4ull, 0x7fd251718e4f55e0ull, 0x42333609e48bb2e7ull, 0x1d73483875546b98ull,
     12502u}, // near 1e6 3D unbounded
};

const std::vector<FixedScene>& scenes() {
    static const std::vector<FixedScene> s = fixed_scenes();
    return s;
}

} // namespace

TEST_CASE("fixed scenes: the serial backend gives the golden hashes") {
    REQUIRE(scenes().size() == sizeof(kGolden) / sizeof(kGolden[0]));
    const bool print = std::getenv("HASHGRID_PRINT_GOLDEN") != nullptr;
    if (print) std::printf("const Hashes kGolden[] = {\n");
    for (size_t k = 0; k < scenes().size(); ++k) {
        const Hashes h = run(scenes()[k], hashgrid::serial_backend(), 0x00, false);
        if (print) std::printf("    %s, // %s\n", text(h).c_str(), scenes()[k].name);
        INFO(std::string(scenes()[k].name) << ": got " << text(h));
        CHECK(h == kGolden[k]);
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
                const Hashes h = run(scenes()[k], backend, fills[rep], rep == 2);
                INFO(std::string(scenes()[k].name)
                     << ", " << threads << " threads, run " << rep << ": got " << text(h));
                CHECK(h == kGolden[k]);
            }
        }
    }
}

TEST_CASE("fixed scenes: identical for the std::thread backend at 1, 2, 3, 4, 7, 8 and 16 threads") {
    for (uint32_t threads : {1u, 2u, 3u, 4u, 7u, 8u, 16u}) {
        hashgrid::platform::StdThreadBackend pool(threads);
        CHECK(pool.threads() == threads);
        for (size_t k = 0; k < scenes().size(); ++k) {
            const Hashes h = run(scenes()[k], pool.backend(), 0x00, false);
            INFO(std::string(scenes()[k].name) << ", " << threads << " std::threads: got " << text(h));
            CHECK(h == kGolden[k]);
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
        CHECK(hash_pairs(pairs.data(), pr.written) == kGolden[0].pairs);
        CHECK(hash_order(**grid) == kGolden[0].order);
        CHECK(hash_cells(**grid) == kGolden[0].cells);
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

// SPDX-License-Identifier: MIT
// Golden hashes: fixed scenes give bit-identical pairs, neighbour lists, sorted
// order and cell table for the serial backend and oneTBB at 1, 2, 3, 4, 7, 8
// and 16 threads, over repeated runs, on every target (docs/design.md, guarantee 3).
//
// The hashes are FNV-1a over values (test_support.h), so they do not depend on
// endianness. When a golden value has to change (an intended change of the
// order or of the table layout), run `test_determinism` with
// HASHGRID_PRINT_GOLDEN=1 and paste the printed table. The scenes and the
// hashed frame are in golden_scenes.h (test_job_system.cpp checks the
// job-system adapter against the same values).
#include <doctest/doctest.h>

#include "golden_hashes.h"
#include "golden_scenes.h"
#include "test_support.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid_test::golden::fixed_scenes;
using hashgrid_test::golden::FixedScene;
using hashgrid_test::golden::GridHashes;
using hashgrid_test::golden::hashes_text;
using hashgrid_test::golden::run_fixed_scene;

TEST_CASE("fixed scenes: the serial backend gives the golden hashes") {
    REQUIRE(fixed_scenes().size() == sizeof(golden::kGrid) / sizeof(golden::kGrid[0]));
    const bool print = std::getenv("HASHGRID_PRINT_GOLDEN") != nullptr;
    if (print) std::printf("inline constexpr GridHashes kGrid[] = {\n");
    for (size_t k = 0; k < fixed_scenes().size(); ++k) {
        const GridHashes h = run_fixed_scene(fixed_scenes()[k], hashgrid::serial_backend(), 0x00, false);
        if (print) std::printf("    %s, // %s\n", hashes_text(h).c_str(), fixed_scenes()[k].name);
        INFO(std::string(fixed_scenes()[k].name) << ": got " << hashes_text(h));
        CHECK(h == golden::kGrid[k]);
    }
    if (print) std::printf("};\n");
}

TEST_CASE("fixed scenes: identical for oneTBB at 1, 2, 3, 4, 7, 8 and 16 threads, over 3 runs") {
    for (uint32_t threads : {1u, 2u, 3u, 4u, 7u, 8u, 16u}) {
        ParallelBackend tbb(threads);
        // More threads than cores included; the serial backend has one.
        CHECK(tbb.threads() == (parallel_backend_kind() == BackendKind::serial ? 1u : threads));
        const hashgrid::ThreadBackend backend = tbb.backend();
        for (size_t k = 0; k < fixed_scenes().size(); ++k) {
            const uint8_t fills[3] = {0x00, 0xFF, 0x5A};
            for (int rep = 0; rep < 3; ++rep) {
                const GridHashes h = run_fixed_scene(fixed_scenes()[k], backend, fills[rep], rep == 2);
                INFO(std::string(fixed_scenes()[k].name)
                     << ", " << threads << " threads, run " << rep << ": got " << hashes_text(h));
                CHECK(h == golden::kGrid[k]);
            }
        }
    }
}

TEST_CASE("fixed scenes: identical for the std::thread backend at 1, 2, 3, 4, 7, 8 and 16 threads") {
    for (uint32_t threads : {1u, 2u, 3u, 4u, 7u, 8u, 16u}) {
        hashgrid::platform::StdThreadBackend pool(threads);
        CHECK(pool.threads() == threads);
        for (size_t k = 0; k < fixed_scenes().size(); ++k) {
            const GridHashes h = run_fixed_scene(fixed_scenes()[k], pool.backend(), 0x00, false);
            INFO(std::string(fixed_scenes()[k].name) << ", " << threads << " std::threads: got " << hashes_text(h));
            CHECK(h == golden::kGrid[k]);
        }
    }
}

TEST_CASE("fixed scenes: identical with every loop's chunks run last to first") {
    // A legal schedule no pool produces on purpose: every result that could
    // depend on which chunks finish first must still be the golden bytes.
    for (size_t k = 0; k < fixed_scenes().size(); ++k) {
        const GridHashes h = run_fixed_scene(fixed_scenes()[k], reverse_order_backend(), 0x5A, true);
        INFO(std::string(fixed_scenes()[k].name) << ", last chunk first: got " << hashes_text(h));
        CHECK(h == golden::kGrid[k]);
    }
}

TEST_CASE("fixed scenes: the serial backend is stable over repeated runs on one grid") {
    const FixedScene& fs = fixed_scenes()[0];
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

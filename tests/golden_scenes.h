// SPDX-License-Identifier: MIT
// The fixed scenes of the golden-hash tests and the frame that hashes them:
// shared by test_determinism.cpp (serial, oneTBB, std::thread) and
// test_job_system.cpp (the job-system adapter), so that every backend is held
// to the same golden values (golden_hashes.h).
//
// The scenes' generation is part of the golden values: do not change a
// generator or a config without regenerating the table.
#pragma once

#include <doctest/doctest.h>

#include "far_scenes.h"
#include "golden_hashes.h"
#include "test_support.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace hashgrid_test::golden {

using hashgrid::GridConfig;

/// The hashes as a kGrid initializer row (for failure messages and HASHGRID_PRINT_GOLDEN).
inline std::string hashes_text(const GridHashes& h) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "{0x%016" PRIx64 "ull, 0x%016" PRIx64 "ull, 0x%016" PRIx64 "ull, 0x%016" PRIx64 "ull, %" PRIu64 "u}",
                  h.pairs, h.csr, h.order, h.cells, h.pair_count);
    return buf;
}

/// A scene and the config it is hashed under.
struct FixedScene {
    const char* name;
    Scene scene;
    GridConfig config;
};

inline GridConfig config_for(const Scene& s, float cell, float r, uint64_t max_pairs) {
    return unbounded_config(s.dims, cell, r, s.size(), max_pairs);
}

/// A bounded config whose origin lies half a cell below the scene's minimum corner.
inline GridConfig bounded(const Scene& s, GridConfig c) {
    float lo[3];
    scene_min(s, lo);
    for (uint32_t a = 0; a < 3; ++a)
        c.origin[a] = a < s.dims ? lo[a] - 0.5f * c.cell_size : 0.0f;
    return bounded_config(s, c, 1);
}

/// The fixed scenes, one per row of kGrid. Their generation is part of the
/// golden values: do not change a generator without regenerating the table.
inline std::vector<FixedScene> make_fixed_scenes() {
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
    // Unbounded scenes whose cells wrap (far_scenes.h): far from the origin,
    // across the 3D and 2D seams, and across the switch to the far formula.
    for (const FarScene& fs : far_scenes(8000)) {
        const std::string name = fs.name;
        if (name != "+-1e6 3D r=0.01" && name != "seam 3D" && name != "seam 2D" && name != "formula switch 3D")
            continue;
        GridConfig c = fs.config;
        c.max_pairs = 128 * uint64_t{fs.scene.size()};
        v.push_back({fs.name, fs.scene, c});
    }
    return v;
}

/// One full frame on a fresh grid (memory pre-filled with `fill`), optionally
/// preceded by a frame of other particles so that stale state is exercised.
inline GridHashes run_fixed_scene(const FixedScene& fs, const hashgrid::ThreadBackend& backend, uint8_t fill,
                                  bool dirty_first) {
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
    h.pair_count = pr.total;
    return h;
}

/// The fixed scenes, generated once per process.
inline const std::vector<FixedScene>& fixed_scenes() {
    static const std::vector<FixedScene> s = make_fixed_scenes();
    return s;
}

} // namespace hashgrid_test::golden

// SPDX-License-Identifier: MIT
// Unbounded scenes far from their origin and across the lattice's wrap seam
// (cells beyond 2^20 per axis in 3D, 2^30 in 2D are keyed modulo the period):
// shared by the pair, query and golden-hash tests. Their generation is part of
// the golden values in golden_hashes.h.
#pragma once

#include "test_support.h"

#include <cmath>
#include <limits>
#include <vector>

namespace hashgrid_test {

struct FarScene {
    const char* name;
    Scene scene;
    hashgrid::GridConfig config;
    bool wraps; ///< Some cell lies beyond the wrap range (CellTableView::wrapped).
};

/// Corners at +-`distance` on the far axes; floats there are coarse (1/16 at 1e6),
/// so particles pair when they share the coarse coordinates and are close on
/// the last axis, which stays near 0 where floats are fine.
inline Scene far_corners(Rng& rng, uint32_t dims, uint32_t n, float distance, float step, float fine) {
    Scene s;
    s.dims = dims;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t corner = rng.below(1u << (dims - 1));
        float c[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t a = 0; a + 1 < dims; ++a) {
            const float base = ((corner >> a) & 1u) != 0 ? distance : -distance;
            c[a] = base + rounded_mul(step, static_cast<float>(rng.between(0, 3)));
        }
        c[dims - 1] = rng.uniform(0.0f, fine);
        s.add(c[0], c[1], c[2]);
    }
    return s;
}

/// Coordinates from the top of the float range (duplicates pair at distance
/// 0; distinct floats there are ~1e31 apart) and a small cluster at the origin.
inline Scene extreme_values(Rng& rng, uint32_t dims, uint32_t n) {
    const float top = std::numeric_limits<float>::max();
    const float values[6] = {3.0e38f, -3.0e38f, top, -top, std::nextafter(3.0e38f, top), 1.0e30f};
    Scene s;
    s.dims = dims;
    for (uint32_t i = 0; i < n; ++i) {
        float c[3] = {0.0f, 0.0f, 0.0f};
        const bool cluster = rng.below(4) == 0;
        for (uint32_t a = 0; a < dims; ++a)
            c[a] = cluster ? rng.uniform(0.0f, 3.0f) : values[rng.below(6)];
        s.add(c[0], c[1], c[2]);
    }
    return s;
}

/// A dense cluster in [0, 1)^dims and three outliers at 1e30.
inline Scene cluster_with_outliers(Rng& rng, uint32_t dims, uint32_t n) {
    Scene s = uniform_scene(rng, dims, n, 0.0f, 1.0f);
    s.add(1.0e30f, 1.0e30f, 1.0e30f);
    s.add(-1.0e30f, 0.5f, 1.0e30f);
    s.add(0.5f, 0.5f, -1.0e30f);
    return s;
}

inline hashgrid::GridConfig far_config(const Scene& s, float cell, float r, float origin) {
    hashgrid::GridConfig c = unbounded_config(s.dims, cell, r, s.size(), 512ull * s.size() + 64);
    for (uint32_t a = 0; a < s.dims; ++a)
        c.origin[a] = origin;
    return c;
}

/// The scenes, `n` particles each (about).
inline std::vector<FarScene> far_scenes(uint32_t n) {
    std::vector<FarScene> v;
    Rng rng(0xfa7);
    {
        Scene s = far_corners(rng, 3, n, 1.0e6f, 0.0625f, 0.04f);
        v.push_back({"+-1e6 3D r=0.01", s, far_config(s, 0.01f, 0.01f, 0.0f), true});
    }
    {
        Scene s = far_corners(rng, 2, n, 1.0e6f, 0.0625f, 0.04f);
        v.push_back({"+-1e6 2D r=0.01 (no wrap)", s, far_config(s, 0.01f, 0.01f, 0.0f), false});
    }
    {
        Scene s = far_corners(rng, 2, n, 3.0e7f, 2.0f, 0.04f);
        v.push_back({"+-3e7 2D r=0.01", s, far_config(s, 0.01f, 0.01f, 0.0f), true});
    }
    {
        Scene s = extreme_values(rng, 3, n);
        v.push_back({"+-3e38 3D", s, far_config(s, 1.0f, 1.0f, 0.0f), true});
    }
    {
        Scene s = extreme_values(rng, 2, n);
        v.push_back({"+-3e38 2D", s, far_config(s, 1.0f, 1.0f, 0.0f), true});
    }
    {
        Scene s = cluster_with_outliers(rng, 3, n);
        v.push_back({"outliers 1e30 3D", s, far_config(s, 0.05f, 0.05f, 0.0f), true});
    }
    {
        Scene s = cluster_with_outliers(rng, 2, n);
        v.push_back({"outliers 1e30 2D", s, far_config(s, 0.05f, 0.05f, 0.0f), true});
    }
    {
        // Origin 2^20 cells below: the particles' cells cross the 3D seam
        // (2^20 - 1 wraps to -2^20) near coordinate 4 on every axis.
        Scene s = uniform_scene(rng, 3, n, -8.0f, 16.0f);
        v.push_back({"seam 3D", s, far_config(s, 1.0f, 1.0f, -1048576.0f), true});
    }
    {
        // Origin 2^30 cells below: the cells cross the 2D seam near coordinate 4096.
        Scene s = uniform_scene(rng, 2, n, 4080.0f, 4112.0f);
        v.push_back({"seam 2D", s, far_config(s, 1.0f, 1.0f, -1073741824.0f), true});
    }
    {
        // Origin 2^31 cells below: the cells cross the switch to the exact
        // far formula (2^31 - 4 cells) near coordinate 8188.
        Scene s = uniform_scene(rng, 2, n, 8176.0f, 8208.0f);
        v.push_back({"formula switch 2D", s, far_config(s, 1.0f, 1.0f, -2147483648.0f), true});
    }
    {
        // The switch in 3D on every axis: fast and exact formulas side by side.
        Scene s = uniform_scene(rng, 3, n, 8184.0f, 8196.0f);
        v.push_back({"formula switch 3D", s, far_config(s, 1.0f, 1.0f, -2147483648.0f), true});
    }
    return v;
}

} // namespace hashgrid_test

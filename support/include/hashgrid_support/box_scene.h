// SPDX-License-Identifier: MIT
// A set of axis-aligned boxes as BoxGrid takes them (structure of arrays,
// optional layers), for the tests, fuzz targets and examples that build box
// scenes: one definition, so that every oracle reads boxes the same way.
//
// Invariant: lo[d] and hi[d] hold size() values on all three axes; axes at or
// above `dims` hold 0 (add() writes them, and code that fills the arrays
// directly sizes all three). category and mask are either empty (null spans:
// every bit) or hold size() values.
#pragma once

#include "hashgrid/box_grid.h"

#include <cstdint>
#include <vector>

namespace hashgrid_support {

struct BoxScene {
    uint32_t dims = 3;
    std::vector<float> lo[3];
    std::vector<float> hi[3];
    std::vector<uint32_t> category; ///< Empty: null span (every bit).
    std::vector<uint32_t> mask;     ///< Empty: null span (every bit).

    [[nodiscard]] uint32_t size() const { return static_cast<uint32_t>(lo[0].size()); }

    /// Appends a box without layers (keep category and mask empty).
    void add(const float mn[3], const float mx[3]) {
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d].push_back(d < dims ? mn[d] : 0.0f);
            hi[d].push_back(d < dims ? mx[d] : 0.0f);
        }
    }
    /// Appends a box with its layers (use for every box of the scene).
    void add(const float mn[3], const float mx[3], uint32_t category_bits, uint32_t mask_bits) {
        add(mn, mx);
        category.push_back(category_bits);
        mask.push_back(mask_bits);
    }
    void add_box(float x0, float y0, float z0, float x1, float y1, float z1) {
        const float mn[3] = {x0, y0, z0};
        const float mx[3] = {x1, y1, z1};
        add(mn, mx);
    }

    /// Box i on all three axes.
    void box(uint32_t i, float mn[3], float mx[3]) const {
        for (uint32_t d = 0; d < 3; ++d) {
            mn[d] = lo[d][i];
            mx[d] = hi[d][i];
        }
    }
    [[nodiscard]] uint32_t cat(uint32_t i) const { return category.empty() ? ~0u : category[i]; }
    [[nodiscard]] uint32_t msk(uint32_t i) const { return mask.empty() ? ~0u : mask[i]; }

    /// Spans for BoxGrid::rebuild() and find_pairs_with(). Coordinates are never
    /// null, even for an empty scene (null spans with a count are invalid
    /// input, and an empty vector's data() may be null); z is null in 2D, where
    /// it is ignored. Copies no data, allocates nothing.
    [[nodiscard]] hashgrid::BoxSpans spans() const {
        static const float kDummy = 0.0f;
        const auto ptr = [](const std::vector<float>& v) { return v.empty() ? &kDummy : v.data(); };
        hashgrid::BoxSpans s;
        s.min_x = ptr(lo[0]);
        s.min_y = ptr(lo[1]);
        s.min_z = dims == 3 ? ptr(lo[2]) : nullptr;
        s.max_x = ptr(hi[0]);
        s.max_y = ptr(hi[1]);
        s.max_z = dims == 3 ? ptr(hi[2]) : nullptr;
        s.category = category.empty() ? nullptr : category.data();
        s.mask = mask.empty() ? nullptr : mask.data();
        s.count = size();
        return s;
    }
};

} // namespace hashgrid_support

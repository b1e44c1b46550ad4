// SPDX-License-Identifier: MIT
// Box scenes of the box-grid and query fuzz targets: a BoxGridConfig and up
// to ~200 boxes (support/'s BoxScene) from the fuzzer's bytes, and the
// oracles of box_grid.h (validation, cells covered, closed overlap, layers,
// min-corner cell).
#pragma once

#include "fuzz_common.h"

#include "hashgrid/box_grid.h"
#include "hashgrid_support/box_scene.h"

#include <algorithm>
#include <array>
#include <vector>

namespace hashgrid_fuzz {

/// A box scene (support/) with the config the fuzzer chose for it; dims
/// follows config.dimensions (make_boxes sets it).
struct BoxScene : hashgrid_support::BoxScene {
    hashgrid::BoxGridConfig config;
};

inline hashgrid::BoxGridConfig make_box_config(Input& in) {
    hashgrid::BoxGridConfig c;
    c.dimensions = in.flag() ? 3u : 2u;
    static const float cells[] = {1.0f, 0.5f, 2.0f, 0.1f, 4.0f, 1000.0f, 0.75f};
    c.cell_size = in.pick(cells);
    static const float origins[] = {0.0f, -3.25f, 100.5f, 1e5f, -0.0f, 7.0f};
    for (float& o : c.origin)
        o = in.pick(origins);
    if (in.below(3) == 0) {
        c.world = hashgrid::World::bounded;
        const uint32_t most = c.dimensions == 3 ? 6u : 16u;
        for (uint32_t d = 0; d < 3; ++d)
            c.cell_counts[d] = 1 + in.below(most);
        c.out_of_bounds = in.flag() ? hashgrid::OutOfBounds::clamp : hashgrid::OutOfBounds::reject;
    }
    c.max_objects = 1 + in.below(200);
    static const uint32_t entry_caps[] = {1, 4, 50, 400, 4000, 20000};
    c.max_cell_entries = in.pick(entry_caps);
    static const uint64_t pair_caps[] = {0, 1, 3, 100, 2000, 30000};
    c.max_pairs = in.pick(pair_caps);
    static const uint32_t large[] = {64, 1, 2, 8, 1000};
    c.large_object_cells = in.pick(large);
    return c;
}

/// Boxes: a corner from the scene palette and a non-negative extent, now and
/// then a negative one (invalid_box) or a special value.
inline void make_boxes(Input& in, BoxScene& s, uint32_t most) {
    const hashgrid::BoxGridConfig& c = s.config;
    s.dims = c.dimensions;
    uint32_t n = in.below(most + 1);
    if (n > c.max_objects + 2) n = c.max_objects + 2;
    static const uint32_t odds[] = {0, 0, 64, 16, 4};
    const uint32_t special = in.pick(odds);
    for (uint32_t d = 0; d < 3; ++d) {
        s.lo[d].assign(n, 0.0f);
        s.hi[d].assign(n, 0.0f);
    }
    static const float extents[] = {0.0f, 0.25f, 0.5f, 1.0f, 2.0f, 3.0f, 10.0f, 0.125f, -0.5f, 40.0f};
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t d = 0; d < c.dimensions; ++d) {
            s.lo[d][i] = scene_float(in, c.origin[d], c.cell_size, special);
            const float e = in.pick(extents) * c.cell_size;
            s.hi[d][i] = (special != 0 && in.below(special) == 0) ? special_float(in) : s.lo[d][i] + e;
        }
    // Without layers the spans are null (every bit), as cat() and msk() say.
    s.category.clear();
    s.mask.clear();
    if (in.below(3) == 0) {
        static const uint32_t bits[] = {1, 2, 3, 4, 0, 0xffffffffu, 6};
        s.category.assign(n, 0xffffffffu);
        s.mask.assign(n, 0xffffffffu);
        for (uint32_t i = 0; i < n; ++i) {
            s.category[i] = in.pick(bits);
            s.mask[i] = in.pick(bits);
        }
    }
}

/// cell() of box_grid.h on one axis; false when outside the world (reject)
/// or the key range. Bounded clamp mode clamps into the border cells.
inline bool box_cell(const hashgrid::BoxGridConfig& c, uint32_t d, float p, int64_t& cell) {
    const double t = hashgrid::scaled_coordinate(p, c.origin[d], hashgrid::key_scale(c.cell_size));
    if (c.world == hashgrid::World::bounded) {
        const auto n = static_cast<double>(c.cell_counts[d]);
        if (!(t >= 0.0 && t < n)) {
            if (c.out_of_bounds == hashgrid::OutOfBounds::reject) return false;
            cell = t < 0.0 ? 0 : static_cast<int64_t>(c.cell_counts[d]) - 1;
            return true;
        }
    } else {
        const double limit = c.dimensions == 3 ? hashgrid::kKeyLimit3 : hashgrid::kKeyLimit2;
        if (!(t >= -limit && t < limit + 1.0)) return false;
    }
    cell = static_cast<int64_t>(std::floor(t));
    return true;
}

/// Clamped cell of any finite point (for the min-corner rule of queries that
/// may reach outside the world).
inline std::array<int64_t, 3> reporting_cell(const hashgrid::BoxGridConfig& c, const float p[3]) {
    std::array<int64_t, 3> cell{0, 0, 0};
    for (uint32_t d = 0; d < c.dimensions; ++d) {
        int64_t v = 0;
        if (!box_cell(c, d, p[d], v)) v = 0;
        cell[2 - d] = v; // (z, y, x) order
    }
    return cell;
}

/// The documented rebuild outcome of a box scene.
struct BoxExpected {
    hashgrid::StatusCode code = hashgrid::StatusCode::ok;
    uint64_t needed = 0;
    uint32_t index = 0;
    uint32_t count = 0;
    uint32_t allowed = 0; // bit mask of codes the lowest bad box may report
    std::vector<uint8_t> large;
    uint64_t entries = 0;
};

inline BoxExpected expect_box_rebuild(const BoxScene& s) {
    using hashgrid::StatusCode;
    const hashgrid::BoxGridConfig& c = s.config;
    BoxExpected e;
    if (s.size() > c.max_objects) {
        e.code = StatusCode::object_capacity;
        e.needed = s.size();
        return e;
    }
    e.large.assign(s.size(), 0);
    for (uint32_t i = 0; i < s.size(); ++i) {
        uint32_t problems = 0;
        uint64_t covered = 1;
        bool beyond = false; // unbounded: beyond the cell-key range, kept as a large object
        for (uint32_t d = 0; d < c.dimensions; ++d) {
            const float a = s.lo[d][i];
            const float b = s.hi[d][i];
            if (!std::isfinite(a) || !std::isfinite(b)) {
                problems |= 1u << static_cast<uint32_t>(StatusCode::invalid_position);
                continue;
            }
            if (!(a <= b)) problems |= 1u << static_cast<uint32_t>(StatusCode::invalid_box);
            int64_t ca = 0;
            int64_t cb = 0;
            if (!box_cell(c, d, a, ca) || !box_cell(c, d, b, cb)) {
                if (c.world == hashgrid::World::unbounded)
                    beyond = true;
                else
                    problems |= 1u << static_cast<uint32_t>(StatusCode::position_out_of_range);
                continue;
            }
            covered *= static_cast<uint64_t>(cb >= ca ? cb - ca + 1 : 1);
        }
        if (problems != 0) {
            if (e.count++ == 0) {
                e.index = i;
                e.allowed = problems;
            }
            continue;
        }
        if (beyond || covered > c.large_object_cells)
            e.large[i] = 1;
        else
            e.entries += covered;
    }
    if (e.count > 0) {
        e.code = StatusCode::invalid_position; // one of `allowed`
        return e;
    }
    if (e.entries > c.max_cell_entries) {
        e.code = StatusCode::entry_capacity;
        e.needed = e.entries;
    }
    return e;
}

inline void check_box_status(const hashgrid::Status& s, const BoxExpected& e) {
    if (e.allowed == 0) {
        FUZZ_CHECK(s.code == e.code, "box rebuild status differs from the oracle");
        if (e.code != hashgrid::StatusCode::ok) FUZZ_CHECK(s.needed == e.needed, "box rebuild: needed is not exact");
        return;
    }
    FUZZ_CHECK(((e.allowed >> static_cast<uint32_t>(s.code)) & 1u) != 0,
               "box rebuild: status is not a problem of the lowest bad box");
    FUZZ_CHECK(s.index == e.index, "box rebuild: index is not the lowest bad box");
    FUZZ_CHECK(s.count == e.count, "box rebuild: count is not the number of bad boxes");
}

/// Closed overlap of two boxes (box_grid.h).
inline bool boxes_overlap(const float* alo, const float* ahi, const float* blo, const float* bhi, uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!(alo[d] <= bhi[d] && blo[d] <= ahi[d])) return false;
    return true;
}

inline void box_of(const BoxScene& s, uint32_t i, float lo[3], float hi[3]) {
    for (uint32_t d = 0; d < 3; ++d) {
        lo[d] = d < s.config.dimensions ? s.lo[d][i] : 0.0f;
        hi[d] = d < s.config.dimensions ? s.hi[d][i] : 0.0f;
    }
}

} // namespace hashgrid_fuzz

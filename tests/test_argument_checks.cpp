// SPDX-License-Identifier: MIT
// Programmer errors that cost O(1) per call to detect are statuses in every
// build, not only assertions. CTest runs this file twice: against the normal
// core (asserts on: each check also fires the assert hook, which returns) and
// against a copy of the core built without HASHGRID_ENABLE_ASSERTS (the
// Release behaviour), where the same statuses must come back.
#include <doctest/doctest.h>

#include "continue_on_assert.h"

#include "hashgrid/assert.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/proximity_index.h"

#include <algorithm>
#include <cstdint>
#include <vector>

using hashgrid::Pair;
using hashgrid::StatusCode;

namespace {

using hashgrid_test::ContinueOnAssert;

struct Points {
    std::vector<float> x, y, z;
    [[nodiscard]] hashgrid::ParticleSpans spans() const {
        return {x.data(), y.data(), z.data(), nullptr, static_cast<uint32_t>(x.size())};
    }
};

/// A 4 x 4 x 4 lattice with spacing 0.75: each point pairs with its 6 axis
/// neighbours at distance 0.75 < 1 (diagonals are 1.06 apart): 3 * 4 * 4 * 3 = 144 pairs.
Points lattice() {
    Points p;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 4; ++k) {
                p.x.push_back(0.75f * static_cast<float>(i));
                p.y.push_back(0.75f * static_cast<float>(j));
                p.z.push_back(0.75f * static_cast<float>(k));
            }
    return p;
}

hashgrid::GridConfig grid_config() {
    hashgrid::GridConfig c;
    c.cell_size = 1.0f;
    c.interaction_distance = 1.0f;
    c.max_particles = 64;
    c.max_cells = 64;
    c.max_pairs = 1000;
    return c;
}

} // namespace

TEST_CASE("Grid: null spans and a null pair buffer are invalid_argument; the frame is kept") {
    ContinueOnAssert hook;
    hashgrid::Grid grid;
    REQUIRE(grid.init_allocate(grid_config()).ok());
    const Points p = lattice();
    REQUIRE(grid.rebuild(p.spans(), hashgrid::serial_backend()).ok());
    Pair pairs[1000];
    REQUIRE(grid.find_pairs(pairs, 1000, hashgrid::serial_backend()).total == 144);

    for (int missing = 0; missing < 3; ++missing) {
        hashgrid::ParticleSpans s = p.spans();
        (missing == 0 ? s.x : missing == 1 ? s.y : s.z) = nullptr;
        CHECK(grid.rebuild(s, hashgrid::serial_backend()).code == StatusCode::invalid_argument);
    }
    CHECK(grid.particle_count() == 64);
    const hashgrid::PairResult r = grid.find_pairs(nullptr, 10, hashgrid::serial_backend());
    CHECK(r.status.code == StatusCode::invalid_argument);
    CHECK(r.written == 0);
    const hashgrid::PairResult again = grid.find_pairs(pairs, 1000, hashgrid::serial_backend());
    CHECK(again.status.ok());
    CHECK(again.total == 144);

    // neighbor_lists: a forged pair index is a status, nothing is written.
    std::vector<uint32_t> offsets(65, 7), indices(2 * 144, 7);
    pairs[10] = Pair{3, 64};
    CHECK(grid.neighbor_lists(pairs, 144, offsets.data(), offsets.size(), indices.data(), indices.size(),
                              hashgrid::serial_backend())
              .code == StatusCode::invalid_argument);
    for (uint32_t v : indices)
        CHECK(v == 7);
}

TEST_CASE("a ThreadBackend without parallel_for runs serially, with the same results") {
    hashgrid::Grid grid;
    REQUIRE(grid.init_allocate(grid_config()).ok());
    const Points p = lattice();
    const hashgrid::ThreadBackend none{};
    REQUIRE(grid.rebuild(p.spans(), none).ok());
    Pair a[1000], b[1000];
    const hashgrid::PairResult ra = grid.find_pairs(a, 1000, none);
    REQUIRE(grid.rebuild(p.spans(), hashgrid::serial_backend()).ok());
    const hashgrid::PairResult rb = grid.find_pairs(b, 1000, hashgrid::serial_backend());
    REQUIRE(ra.status.ok());
    REQUIRE(ra.written == rb.written);
    CHECK(ra.written == 144);
    for (uint64_t i = 0; i < ra.written; ++i)
        CHECK((a[i].a == b[i].a && a[i].b == b[i].b));
}

TEST_CASE("BoxGrid: a null z span in 3D, null query spans and null buffers are invalid_argument") {
    ContinueOnAssert hook;
    hashgrid::BoxGridConfig c;
    c.cell_size = 1.0f;
    c.max_objects = 8;
    c.max_cell_entries = 64;
    c.max_pairs = 64;
    hashgrid::BoxGrid grid;
    REQUIRE(grid.init_allocate(c).ok());
    const float lo[3] = {0.0f, 0.5f, 3.0f}, hi[3] = {1.0f, 1.5f, 4.0f}; // 0-1 overlap, 2 apart
    hashgrid::BoxSpans in{lo, lo, lo, hi, hi, hi, nullptr, nullptr, 3};
    REQUIRE(grid.rebuild(in, hashgrid::serial_backend()).ok());
    REQUIRE(grid.find_pairs(nullptr, 0, hashgrid::serial_backend()).total == 1);

    hashgrid::BoxSpans broken = in;
    broken.max_z = nullptr;
    CHECK(grid.rebuild(broken, hashgrid::serial_backend()).code == StatusCode::invalid_argument);
    broken = in;
    broken.min_x = nullptr;
    CHECK(grid.rebuild(broken, hashgrid::serial_backend()).code == StatusCode::invalid_argument);
    CHECK(grid.object_count() == 3);
    CHECK(grid.find_pairs(nullptr, 4, hashgrid::serial_backend()).status.code == StatusCode::invalid_argument);
    Pair out[4];
    broken = in;
    broken.min_z = nullptr;
    CHECK(grid.find_pairs_with(broken, out, 4, hashgrid::serial_backend()).status.code == StatusCode::invalid_argument);
    CHECK(grid.find_pairs_with(in, nullptr, 4, hashgrid::serial_backend()).status.code == StatusCode::invalid_argument);
    const hashgrid::PairResult r = grid.find_pairs(out, 4, hashgrid::serial_backend());
    CHECK(r.status.ok());
    CHECK(r.total == 1);
}

TEST_CASE("ObjectStore and ProximityIndex: use before init and out-of-range indices") {
    ContinueOnAssert hook;
    hashgrid::ObjectStore store;
    hashgrid::ObjectBox box;
    CHECK(store.add(box, 1, 1, 0).status.code == StatusCode::invalid_argument);
    CHECK(store.handle_at(0) == hashgrid::ObjectHandle{});
    hashgrid::ObjectStoreConfig sc;
    sc.max_objects = 16;
    REQUIRE(store.init_allocate(sc).ok());
    for (uint32_t i = 0; i < 16; ++i)
        REQUIRE(store.add(box, 1, 1, i).status.ok());
    CHECK(store.handle_at(99) == hashgrid::ObjectHandle{});
    CHECK(store.handle_at(16) == hashgrid::ObjectHandle{});
    CHECK_FALSE(store.contains(store.handle_at(99)));
    CHECK(store.handle_at(15) != hashgrid::ObjectHandle{});

    hashgrid::ProximityIndex index;
    const float at[3] = {0.0f, 0.0f, 0.0f};
    CHECK(index.create_client(at, at).status.code == StatusCode::invalid_argument);
    CHECK(index.update_index(hashgrid::serial_backend()).code == StatusCode::invalid_argument);
}

TEST_CASE("denormal and negative-zero coordinates are ordinary values") {
    // Points around the origin with denormal and -0.0 coordinates, plus two
    // just beyond the interaction distance. Oracle: the documented float rule
    // d2 = (dx * dx + dy * dy) + dz * dz < r * r, evaluated here.
    const float denormal = 1e-40f, tiny = 1e-45f;
    Points p;
    const float coords[][3] = {{0.0f, 0.0f, 0.0f},       {-0.0f, denormal, -0.0f}, {tiny, -0.0f, -denormal},
                               {-denormal, -tiny, 0.0f}, {0.5f, -0.0f, 0.0f},      {-0.5f, 0.0f, -0.0f},
                               {1.0f, 0.0f, 0.0f},       {-0.0f, -1.0f, 0.0f}};
    for (const auto& c : coords) {
        p.x.push_back(c[0]);
        p.y.push_back(c[1]);
        p.z.push_back(c[2]);
    }
    std::vector<Pair> expected;
    for (uint32_t i = 0; i < p.x.size(); ++i)
        for (uint32_t j = i + 1; j < p.x.size(); ++j) {
            const float dx = p.x[i] - p.x[j], dy = p.y[i] - p.y[j], dz = p.z[i] - p.z[j];
            const float xx = dx * dx, yy = dy * dy, zz = dz * dz; // rounded before the sums (no FMA)
            if ((xx + yy) + zz < 1.0f) expected.push_back({i, j});
        }
    // Hand count: the four points at the origin (denormal and signed-zero
    // coordinates) and +-0.5 pair up except +-0.5 themselves (distance exactly
    // 1): 15 - 1; (1, 0, 0) pairs with (0.5, 0, 0) only (its distance to the
    // origin points rounds to 1): + 1; (0, -1, 0) pairs with none.
    REQUIRE(expected.size() == 15);
    for (hashgrid::World world : {hashgrid::World::unbounded, hashgrid::World::bounded}) {
        hashgrid::GridConfig c = grid_config();
        c.world = world;
        c.origin[0] = c.origin[1] = c.origin[2] = -2.0f;
        c.cell_counts[0] = c.cell_counts[1] = c.cell_counts[2] = 4;
        hashgrid::Grid grid;
        REQUIRE(grid.init_allocate(c).ok());
        REQUIRE(grid.rebuild(p.spans(), hashgrid::serial_backend()).ok());
        Pair out[64];
        const hashgrid::PairResult r = grid.find_pairs(out, 64, hashgrid::serial_backend());
        REQUIRE(r.status.ok());
        std::vector<Pair> got(out, out + r.written);
        std::sort(got.begin(), got.end(), [](Pair l, Pair m) { return l.a != m.a ? l.a < m.a : l.b < m.b; });
        REQUIRE(got.size() == expected.size());
        for (size_t k = 0; k < got.size(); ++k)
            CHECK((got[k].a == expected[k].a && got[k].b == expected[k].b));
    }
}

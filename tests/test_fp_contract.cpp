// SPDX-License-Identifier: MIT
// Guard against fused multiply-add in the distance test (docs/design.md: no
// contraction, the same operation order everywhere).
//
// The "FMA canary" scene holds point pairs whose unfused squared distance
// (dx * dx + dy * dy) + dz * dz, each operation rounded to float, is exactly
// r * r: the documented test d2 < r * r says "not a pair". A build that fuses
// any of those multiply-adds (GCC's default -ffp-contract=fast on aarch64 and
// s390x) skips a rounding and lands one ulp below r * r for a good share of
// them, and reports pairs. This file links only the core library, so the
// build runs it twice on FMA targets: once as built (must find 0 pairs) and
// once against a copy of the core compiled with -ffp-contract=fast, which must
// find some (tests/CMakeLists.txt, test_fp_contract_fused): that proves the
// canary would catch contraction sneaking into a real build.
//
// The scene uses only integer arithmetic, float adds/multiplies of the test's
// own (compiled with -ffp-contract=off) and a correctly rounded sqrt, so it
// is identical on every target.
#include <doctest/doctest.h>

#include "golden_hashes.h"
#include "hashgrid/grid.h"
#include "hashgrid_support/random.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

using hashgrid_support::SplitMix64;

/// A multiple of 2^-20 in [-limit, limit] (exact in float), from the integer
/// generator only (a modulo, not the generator's float conversions: the canary
/// scene and its golden candidate count were built this way).
float dyadic(SplitMix64& rng, float limit) {
    const auto steps = static_cast<int64_t>(limit * 1048576.0f);
    const auto k = static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(2 * steps + 1)) - steps;
    return static_cast<float>(k) / 1048576.0f;
}

/// Squared distance exactly as the grid's kernels compute it, with every
/// operation rounded to float (this translation unit is built without contraction).
float unfused_d2(float dx, float dy, float dz) {
    volatile float xx = dx * dx; // volatile: keep each rounding even if flags change
    volatile float yy = dy * dy;
    volatile float zz = dz * dz;
    volatile float s = xx + yy;
    return s + zz;
}

struct Canary {
    std::vector<float> x, y, z;
    uint32_t pairs = 0; // candidate pairs in the scene
};

/// Pairs at unfused distance exactly r = 1 on a lattice 4 apart (no pair of
/// points from different candidates is within 1 of each other).
Canary canary_scene() {
    Canary c;
    SplitMix64 rng(2026);
    const uint32_t side = 16;
    for (uint32_t cell = 0; cell < side * side * side; ++cell) {
        const float bx = static_cast<float>(4 * (cell % side)) + dyadic(rng, 0.5f);
        const float by = static_cast<float>(4 * ((cell / side) % side)) + dyadic(rng, 0.5f);
        const float bz = static_cast<float>(4 * (cell / (side * side))) + dyadic(rng, 0.5f);
        // Try offsets until the grid's own differences give d2 == 1 exactly.
        for (int attempt = 0; attempt < 64; ++attempt) {
            const float ox = dyadic(rng, 0.6f);
            const float oy = dyadic(rng, 0.6f);
            const double rest = 1.0 - static_cast<double>(ox) * ox - static_cast<double>(oy) * oy;
            const auto oz = static_cast<float>(std::sqrt(rest)); // sqrt is correctly rounded everywhere
            const float qx = bx + ox, qy = by + oy, qz = bz + oz;
            if (unfused_d2(qx - bx, qy - by, qz - bz) != 1.0f) continue;
            c.x.insert(c.x.end(), {bx, qx});
            c.y.insert(c.y.end(), {by, qy});
            c.z.insert(c.z.end(), {bz, qz});
            ++c.pairs;
            break;
        }
    }
    return c;
}

} // namespace

TEST_CASE("fma canary: pairs at exactly r are not reported (no contraction in the distance test)") {
    const Canary c = canary_scene();
    REQUIRE(c.pairs > 1000);
    hashgrid::GridConfig config;
    config.dimensions = 3;
    config.cell_size = 1.0f;
    config.interaction_distance = 1.0f;
    config.max_particles = static_cast<uint32_t>(c.x.size());
    config.max_cells = config.max_particles;
    config.max_pairs = 4 * uint64_t{config.max_particles};
    hashgrid::Grid grid;
    REQUIRE(grid.init_allocate(config).ok());
    hashgrid::ParticleSpans spans{c.x.data(), c.y.data(), c.z.data(), nullptr, config.max_particles};
    REQUIRE(grid.rebuild(spans, hashgrid::serial_backend()).ok());
    std::vector<hashgrid::Pair> pairs(static_cast<size_t>(config.max_pairs));
    const hashgrid::PairResult result = grid.find_pairs(pairs.data(), pairs.size(), hashgrid::serial_backend());
    REQUIRE(result.status.ok());
    // The fused variant of this test matches this line with a nonzero count.
    std::printf("fma canary: %llu pairs reported of %u candidates at exactly r\n",
                static_cast<unsigned long long>(result.total), c.pairs);
    CHECK(c.pairs == hashgrid_test::golden::kFmaCanaryCandidates);
    CHECK(result.total == 0);
}

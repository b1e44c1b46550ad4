// Every pair-test kernel (scalar, SSE2, AVX2 where the CPU has it) gives
// bit-identical pair arrays, and each matches the brute-force oracle in the
// documented order. Wider SIMD must never change results (docs/design.md).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "test_support.h"

#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::PairKernel;

namespace {

const char* name(PairKernel k) {
    switch (k) {
    case PairKernel::scalar:
        return "scalar";
    case PairKernel::sse2:
        return "sse2";
    case PairKernel::avx2:
        return "avx2";
    default:
        return "automatic";
    }
}

/// Restores automatic kernel selection when a test case ends.
struct KernelGuard {
    ~KernelGuard() { hashgrid::set_pair_kernel(PairKernel::automatic); }
};

std::vector<Pair> pairs_with(PairKernel kernel, const Scene& s, const hashgrid::GridConfig& config,
                             const hashgrid::ThreadBackend& backend) {
    REQUIRE(hashgrid::set_pair_kernel(kernel));
    CHECK(hashgrid::active_pair_kernel() == kernel);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    const Frame f = run_frame(**grid, s, backend, config.max_pairs);
    REQUIRE(f.rebuild.ok());
    REQUIRE(f.result.status.ok());
    const std::vector<Pair> expected =
        in_documented_order(oracle_pairs(s, config.interaction_distance),
                            std::vector<uint32_t>((**grid).sorted_to_original(),
                                                  (**grid).sorted_to_original() + (**grid).particle_count()));
    CHECK_MESSAGE(diff_pairs(expected, f.pairs.data(), f.pairs.size()) == "", name(kernel));
    return f.pairs;
}

} // namespace

TEST_CASE("scalar is always available; automatic resolves to a concrete kernel") {
    KernelGuard guard;
    CHECK(hashgrid::set_pair_kernel(PairKernel::scalar));
    CHECK(hashgrid::active_pair_kernel() == PairKernel::scalar);
    CHECK(hashgrid::set_pair_kernel(PairKernel::automatic));
    CHECK(hashgrid::active_pair_kernel() != PairKernel::automatic);
}

TEST_CASE("every kernel gives the same bytes, 2D and 3D, uniform and per-particle radii, bounded and unbounded") {
    KernelGuard guard;
    std::vector<PairKernel> kernels{PairKernel::scalar};
    for (PairKernel k : {PairKernel::sse2, PairKernel::avx2})
        if (hashgrid::set_pair_kernel(k)) kernels.push_back(k);
    MESSAGE("kernels on this CPU: " << kernels.size());
    ParallelBackend tbb(2);
    Rng rng(7);
    for (int scene = 0; scene < 24; ++scene) {
        const uint32_t dims = 2 + scene % 2;
        const bool radii = (scene / 2) % 2 == 1;
        const bool clustered = (scene / 4) % 2 == 1;
        const uint32_t n = 500 + rng.below(4000);
        Scene s = clustered ? clustered_scene(rng, dims, n, 6, -20.0f, 20.0f, 1.5f)
                            : uniform_scene(rng, dims, n, -20.0f, 20.0f);
        if (radii) add_radii(rng, s, 0.01f, 0.5f);
        hashgrid::GridConfig config = unbounded_config(dims, 1.0f, 1.0f, n, uint64_t{n} * 400);
        if (scene >= 12) {
            float lo[3];
            scene_min(s, lo);
            for (uint32_t a = 0; a < 3; ++a)
                config.origin[a] = a < dims ? lo[a] - 0.5f : 0.0f;
            config = bounded_config(s, config, 1);
        }
        INFO("scene " << scene << " dims " << dims << " radii " << radii << " n " << n);
        const std::vector<Pair> reference = pairs_with(PairKernel::scalar, s, config, tbb.backend());
        for (size_t k = 1; k < kernels.size(); ++k) {
            const std::vector<Pair> got = pairs_with(kernels[k], s, config, tbb.backend());
            CHECK_MESSAGE(diff_pairs(reference, got.data(), got.size()) == "", name(kernels[k]));
        }
    }
}

TEST_CASE("a cell with more candidates than one packed block (fallback path) is exact for every kernel") {
    KernelGuard guard;
    // 3000 points in a 2 x 2 x 2 cube with cell 1: each cell has ~375 points,
    // so a cell's forward candidates exceed the 1024-entry packed block.
    Rng rng(11);
    const Scene s = uniform_scene(rng, 3, 3000, 0.0f, 2.0f);
    const hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, 3000, 3000ull * 3000);
    const std::vector<Pair> reference = pairs_with(PairKernel::scalar, s, config, hashgrid::serial_backend());
    for (PairKernel k : {PairKernel::sse2, PairKernel::avx2}) {
        if (!hashgrid::set_pair_kernel(k)) continue;
        const std::vector<Pair> got = pairs_with(k, s, config, hashgrid::serial_backend());
        CHECK_MESSAGE(diff_pairs(reference, got.data(), got.size()) == "", name(k));
    }
}

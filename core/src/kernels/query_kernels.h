// SPDX-License-Identifier: MIT
// Run kernels of the particle box and radius queries: the exact test over
// runs of sorted positions [b, e) (each the particles of one or more
// consecutive cells: a query's rows), the original indices of the particles
// that pass written run by run in ascending position order. One kernel per
// instruction set (scalar; SSE2 and AVX2 on x86-64; NEON on aarch64), picked by the same
// process-wide setting as the pair kernels (set_pair_kernel). Every kernel
// performs the scalar test's IEEE operations in the same order (no FMA), so
// all give identical output.
#pragma once

#include "hashgrid/grid.h"

#include <cstdint>

namespace hashgrid::detail::query_kernels {

/// What a run kernel reads: the sorted coordinates (dimensions of them) and
/// sorted_to_original. Kernels read up to 7 entries past a run's end (the
/// grid keeps kPad readable entries after its last particle).
struct RunData {
    const float* p[3] = {nullptr, nullptr, nullptr};
    const uint32_t* order = nullptr;
};

/// Runs of sorted positions [begin[i], end[i]) for one kernel call, in the
/// order their results go out (a query collects its rows here).
struct Runs {
    static constexpr uint32_t kCapacity = 32; ///< Runs per call at most.
    uint32_t begin[kCapacity];                ///< First sorted position of each run.
    uint32_t end[kCapacity];                  ///< One past the last.
    uint32_t count = 0;                       ///< Runs held.
    uint64_t candidates = 0;                  ///< Sum of the runs' lengths.
};

/// Writes order[k] for every k of the runs inside the closed box (lo[a] <=
/// p[a][k] <= hi[a] on every axis) to out, run by run in ascending k, and
/// nothing else (out needs room for runs.candidates); returns how many.
using BoxRun = uint32_t (*)(const RunData& d, const float* lo, const float* hi, const Runs& runs, uint32_t* out);

/// Writes order[k] for every k of the runs with d2 < r2, d2 = (dx * dx + dy *
/// dy) + dz * dz and dx = p[0][k] - c[0], ... (the radius query's test), to
/// out, run by run in ascending k, and nothing else (out needs room for
/// runs.candidates); returns how many.
using RadiusRun = uint32_t (*)(const RunData& d, const float* c, float r2, const Runs& runs, uint32_t* out);

/// The two kernels of one instruction set and dimension count.
struct RunKernels {
    BoxRun box = nullptr;
    RadiusRun radius = nullptr;
};

/// The kernels of active_pair_kernel()'s instruction set for `dims` (2 or 3).
RunKernels run_kernels(uint32_t dims);

} // namespace hashgrid::detail::query_kernels

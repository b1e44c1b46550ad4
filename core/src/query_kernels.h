// Run kernels of the particle box and radius queries: the exact test over a
// run of sorted positions [b, e) (the particles of one or more consecutive
// cells), the original indices of the particles that pass written in
// ascending position order. One kernel per instruction set (scalar; SSE2 and
// AVX2 on x86-64), picked by the same process-wide setting as the pair
// kernels (set_pair_kernel). Every kernel performs the scalar test's IEEE
// operations in the same order (no FMA), so all give identical output.
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

/// Writes order[k] for every k in [b, e) inside the closed box (lo[a] <=
/// p[a][k] <= hi[a] on every axis) to out, ascending k, and nothing else (out
/// needs room for e - b); returns how many.
using BoxRun = uint32_t (*)(const RunData& d, const float* lo, const float* hi, uint32_t b, uint32_t e, uint32_t* out);

/// Writes order[k] for every k in [b, e) with d2 < r2, d2 = (dx * dx + dy *
/// dy) + dz * dz and dx = p[0][k] - c[0], ... (the radius query's test), to
/// out, ascending k, and nothing else (out needs room for e - b); returns how many.
using RadiusRun = uint32_t (*)(const RunData& d, const float* c, float r2, uint32_t b, uint32_t e, uint32_t* out);

/// The two kernels of one instruction set and dimension count.
struct RunKernels {
    BoxRun box = nullptr;
    RadiusRun radius = nullptr;
};

/// The kernels of active_pair_kernel()'s instruction set for `dims` (2 or 3).
RunKernels run_kernels(uint32_t dims);

} // namespace hashgrid::detail::query_kernels

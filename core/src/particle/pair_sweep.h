// SPDX-License-Identifier: MIT
// The pair sweep's shared pieces: what a sweep reads (SweepData), the packed
// candidate block, and the kernel entry point. pairs.cpp runs find_pairs()
// on them through the ordered pair output (common/pair_output.h);
// pair_kernels.cpp holds one sweep per instruction set (sweep_impl.inc).
#pragma once

#include "common/pair_output.h"
#include "lattice/cell_index.h"
#include "particle/grid_impl.h"

#include <cstdint>

namespace hashgrid::detail::pair_sweep {

/// Everything the sweep reads: the frame's cell index and the sorted arrays.
struct SweepData : CellIndex {
    const float* x;
    const float* y;
    const float* z;
    const float* radius;
    const uint32_t* order;
    float r2;
};

/// Candidate arrays a home particle is tested against (sorted arrays, or a packed block).
struct Candidates {
    const float* x;
    const float* y;
    const float* z;
    const float* radius;
    const uint32_t* order;
};

/// Candidates per packed block, and padding after them (a last partial
/// vector reads up to 7 entries past the end; block copies write up to 7).
inline constexpr uint32_t kPackCapacity = 2048;
inline constexpr uint32_t kPackPad = 16;

/// A home cell's forward candidates copied contiguously (on the sweeping
/// thread's stack: 41 KB of the sweep's 44 KB frame, the largest the library
/// puts there). The padding after the last candidate holds NaN coordinates,
/// which fail every distance test, so a last partial vector needs no lane
/// mask. 2048, not 1024: clustered scenes (bench_pairs C3) have cells whose
/// forward candidates exceed 1024, and the range-by-range fallback costs
/// about a tenth of their pair phase.
struct PackedCandidates {
    alignas(32) float x[kPackCapacity + kPackPad];
    alignas(32) float y[kPackCapacity + kPackPad];
    alignas(32) float z[kPackCapacity + kPackPad];
    alignas(32) float r[kPackCapacity + kPackPad];
    alignas(32) uint32_t o[kPackCapacity + kPackPad];
    uint32_t count;
};

/// Collects a chunk's pairs (common/pair_output.h). The sweep's kernels
/// write straight to [cur, end) while a vector's worth of slots is left and
/// no filter is set; otherwise every hit goes through push().
using pair_output::Sink;

/// Sweeps home particles [k0, k1) (sorted positions) into the sink.
using SweepFn = void (*)(const SweepData& s, uint32_t k0, uint32_t k1, Sink& sink);

/// The sweep of `kernel` (a concrete one, never automatic) for this
/// dimension count and radius mode (pair_kernels.cpp).
SweepFn sweep_for(PairKernel kernel, uint32_t dims, bool radius);

} // namespace hashgrid::detail::pair_sweep

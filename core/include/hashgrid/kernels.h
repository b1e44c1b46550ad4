// SPDX-License-Identifier: MIT
/// @file
/// The SIMD kernel choice, process-wide: which instruction set the pair
/// sweeps, query tests and rebuild passes of every grid run. Results do not
/// depend on it.
#pragma once

#include <cstdint>

namespace hashgrid {

/// The SIMD width of the library's vector kernels. All give bit-identical
/// results (same IEEE operations in the same order, no FMA, results in the
/// same order); automatic picks the widest this build and CPU support: avx2
/// where the x86-64 CPU has it, else sse2; neon on little-endian aarch64;
/// scalar elsewhere.
///
///     scalar  one candidate at a time; every build has it.
///     sse2    4 lanes, x86-64 builds.
///     avx2    8 lanes, x86-64 builds on a CPU with AVX2 (checked at run time).
///     neon    4 lanes, little-endian aarch64 builds.
///
/// The one setting picks the version of every vector kernel:
///   - the pair sweeps of both grid kinds: Grid::find_pairs (each vector of
///     candidates tested against four home particles at a time), and
///     BoxGrid::find_pairs and find_pairs_with (the small-object sweep, the
///     large objects' scans and rank sort, the query boxes' entry tests);
///   - the particle box and radius queries' tests (particle_queries.h) and
///     the box-object queries' entry tests (box_queries.h);
///   - the key computation of the particle rebuild and the box validation of
///     BoxGrid::rebuild.
/// Each of them has a NEON version. A kernel without a version of its own at
/// some width runs the next narrower one: the particle rebuild's keys have
/// none at sse2 (scalar runs), the box validation none at sse2 or scalar
/// (both run the build's default code, SSE2 on x86-64).
/// Values keep their numbers; new kernels are added at the end.
enum class PairKernel : uint8_t { automatic, scalar, sse2, avx2, neon };

/// Selects the kernel process-wide (tests, benchmarks). Returns false and
/// changes nothing if this build or CPU lacks it.
bool set_pair_kernel(PairKernel kernel);

/// The kernel every SIMD pass currently runs (never automatic).
PairKernel active_pair_kernel();

} // namespace hashgrid

// SPDX-License-Identifier: MIT
/// @file
/// The SIMD kernel choice, process-wide: which instruction set the pair
/// sweeps, query tests and rebuild passes of every grid run. Results do not
/// depend on it.
#pragma once

#include <cstdint>

namespace hashgrid {

/// Pair-test kernels. All give bit-identical results (same IEEE operations in
/// the same order, no FMA, pairs in the same order); automatic picks the
/// widest this build and CPU support: avx2 where the x86-64 CPU has it, else
/// sse2; neon on little-endian aarch64; scalar elsewhere.
///
///     scalar  one candidate at a time; every build has it.
///     sse2    4 lanes, x86-64 builds.
///     avx2    8 lanes, x86-64 builds on a CPU with AVX2 (checked at run time).
///     neon    4 lanes, little-endian aarch64 builds.
///
/// The SIMD kernels test each vector of candidates against four home
/// particles at a time and write the hits home by home. The same setting
/// picks the instruction set of the particle box and radius queries' tests
/// (particle_queries.h; neon: their scalar test for now), of the box-object
/// queries' entry tests and of BoxGrid's pair searches (the small-object
/// sweep, the large objects' scans and rank sort, find_pairs_with; neon:
/// scalar for all of them), with the same results for every choice. Values
/// keep their numbers; new kernels are added at the end.
enum class PairKernel : uint8_t { automatic, scalar, sse2, avx2, neon };

/// Selects the kernel process-wide (tests, benchmarks). Returns false and
/// changes nothing if this build or CPU lacks it.
bool set_pair_kernel(PairKernel kernel);

/// The kernel find_pairs() currently runs (never automatic).
PairKernel active_pair_kernel();

} // namespace hashgrid

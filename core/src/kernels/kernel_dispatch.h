// SPDX-License-Identifier: MIT
// The one mapping from the process-wide kernel setting (set_pair_kernel,
// active_pair_kernel) to a kernel family's table of function pointers. A
// family gives a table per width it has its own version for; a width without
// one runs the next narrower version (avx2 -> sse2 -> scalar, neon ->
// scalar), so forcing a width in a test runs exactly what a CPU of that width
// would run, and forcing scalar always reaches the scalar code.
#pragma once

#include "hashgrid/kernels.h"

// The instruction sets this build has vector kernels for, decided here once
// for every kernel file: x86-64 (SSE2 always, AVX2 where the CPU has it,
// checked at run time), and NEON on little-endian aarch64 only (the lane and
// byte numbering the compress tables assume); other builds, big-endian ones
// included, run the scalar kernels.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define HASHGRID_KERNELS_X86 1
#endif
#if defined(__aarch64__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <arm_neon.h>
#define HASHGRID_KERNELS_NEON 1
#endif

// A width's table where this build has the width, else null, so that a
// family lists its tables in one Widths initialiser (the argument is not
// compiled where the width is missing).
#if HASHGRID_KERNELS_X86
#define HASHGRID_X86_TABLE(table) (table)
#else
#define HASHGRID_X86_TABLE(table) nullptr
#endif
#if HASHGRID_KERNELS_NEON
#define HASHGRID_NEON_TABLE(table) (table)
#else
#define HASHGRID_NEON_TABLE(table) nullptr
#endif

namespace hashgrid::detail::kernel_dispatch {

/// A kernel family's versions: scalar always, the others where this build
/// has them (null otherwise; HASHGRID_X86_TABLE, HASHGRID_NEON_TABLE). The
/// tables live in static storage.
template <typename Table>
struct Widths {
    const Table* scalar = nullptr;
    const Table* sse2 = nullptr;
    const Table* avx2 = nullptr;
    const Table* neon = nullptr;
};

/// The table that width `kernel` runs.
template <typename Table>
const Table& table_for(PairKernel kernel, const Widths<Table>& widths) {
    switch (kernel) {
    case PairKernel::avx2:
        if (widths.avx2 != nullptr) return *widths.avx2;
        [[fallthrough]];
    case PairKernel::sse2:
        if (widths.sse2 != nullptr) return *widths.sse2;
        return *widths.scalar;
    case PairKernel::neon:
        if (widths.neon != nullptr) return *widths.neon;
        return *widths.scalar;
    default:
        return *widths.scalar;
    }
}

/// The table of the active kernel (active_pair_kernel()).
template <typename Table>
const Table& active_table(const Widths<Table>& widths) {
    return table_for(active_pair_kernel(), widths);
}

} // namespace hashgrid::detail::kernel_dispatch

// SPDX-License-Identifier: MIT
// The pair-test kernels: sweep_impl.inc compiled once per instruction set
// (scalar everywhere; SSE2 and AVX2 on x86-64, AVX2 through target
// attributes and chosen at run time; NEON on aarch64), picked through
// kernel_dispatch.h, and the process-wide kernel selection (set_pair_kernel,
// active_pair_kernel).
#include "common/pair_compress.h"
#include "kernels/hit_buffer.h"
#include "kernels/kernel_dispatch.h"
#include "particle/pair_ranges.h"
#include "particle/pair_sweep.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#define HASHGRID_ISA_SCALAR 0
#define HASHGRID_ISA_SSE2 1
#define HASHGRID_ISA_AVX2 2
#define HASHGRID_ISA_NEON 3

namespace hashgrid {

using namespace detail;
using namespace detail::pair_sweep;

namespace {

#if HASHGRID_KERNELS_X86
/// The pair writers' lane table (pair_compress.h).
constexpr const auto& kCompress = kPairCompressTable.lanes;
#endif

#if HASHGRID_KERNELS_NEON
/// The query kernels' byte shuffle table (hit_buffer.h): the lanes of a
/// 4-bit mask moved to the front.
constexpr const uint8_t (&kCompress4)[16][16] = hit_buffer::kCompressTable4.bytes;
#endif

namespace scalar_kernel {
#define HASHGRID_SWEEP_TARGET
#define HASHGRID_SWEEP_ISA HASHGRID_ISA_SCALAR
#include "particle/sweep_impl.inc"
#undef HASHGRID_SWEEP_TARGET
#undef HASHGRID_SWEEP_ISA
} // namespace scalar_kernel

#if HASHGRID_KERNELS_X86
namespace sse2_kernel {
#define HASHGRID_SWEEP_TARGET
#define HASHGRID_SWEEP_ISA HASHGRID_ISA_SSE2
#include "particle/sweep_impl.inc"
#undef HASHGRID_SWEEP_TARGET
#undef HASHGRID_SWEEP_ISA
} // namespace sse2_kernel

namespace avx2_kernel {
#define HASHGRID_SWEEP_TARGET __attribute__((target("avx2")))
#define HASHGRID_SWEEP_ISA HASHGRID_ISA_AVX2
#include "particle/sweep_impl.inc"
#undef HASHGRID_SWEEP_TARGET
#undef HASHGRID_SWEEP_ISA
} // namespace avx2_kernel
#endif

#if HASHGRID_KERNELS_NEON
namespace neon_kernel {
#define HASHGRID_SWEEP_TARGET
#define HASHGRID_SWEEP_ISA HASHGRID_ISA_NEON
#include "particle/sweep_impl.inc"
#undef HASHGRID_SWEEP_TARGET
#undef HASHGRID_SWEEP_ISA
} // namespace neon_kernel
#endif

bool cpu_has(PairKernel kernel) {
    switch (kernel) {
    case PairKernel::scalar:
        return true;
#if HASHGRID_KERNELS_X86
    case PairKernel::sse2:
        return true;
    case PairKernel::avx2:
        return __builtin_cpu_supports("avx2") != 0;
#endif
#if HASHGRID_KERNELS_NEON
    case PairKernel::neon:
        return true; // part of the aarch64 baseline
#endif
    default:
        return false;
    }
}

PairKernel best_kernel() {
    if (cpu_has(PairKernel::avx2)) return PairKernel::avx2;
    if (cpu_has(PairKernel::neon)) return PairKernel::neon;
    if (cpu_has(PairKernel::sse2)) return PairKernel::sse2;
    return PairKernel::scalar;
}

std::atomic<PairKernel> g_kernel{PairKernel::automatic};

/// One width's sweeps, by dimension count and radius mode.
struct Sweeps {
    SweepFn (*pick)(uint32_t dims, bool radius);
};

constexpr Sweeps kScalar{&scalar_kernel::pick};
#if HASHGRID_KERNELS_X86
constexpr Sweeps kSse2{&sse2_kernel::pick};
constexpr Sweeps kAvx2{&avx2_kernel::pick};
#endif
#if HASHGRID_KERNELS_NEON
constexpr Sweeps kNeon{&neon_kernel::pick};
#endif

/// The versions this build has; kernel_dispatch picks one.
constexpr kernel_dispatch::Widths<Sweeps> kWidths{&kScalar, HASHGRID_X86_TABLE(&kSse2), HASHGRID_X86_TABLE(&kAvx2),
                                                  HASHGRID_NEON_TABLE(&kNeon)};

} // namespace

namespace detail::pair_sweep {

SweepFn sweep_for(PairKernel kernel, uint32_t dims, bool radius) {
    return kernel_dispatch::table_for(kernel, kWidths).pick(dims, radius);
}

} // namespace detail::pair_sweep

bool set_pair_kernel(PairKernel kernel) {
    if (kernel == PairKernel::automatic) {
        g_kernel.store(best_kernel());
        return true;
    }
    if (!cpu_has(kernel)) return false;
    g_kernel.store(kernel);
    return true;
}

PairKernel active_pair_kernel() {
    PairKernel k = g_kernel.load();
    if (k == PairKernel::automatic) {
        k = best_kernel();
        g_kernel.store(k);
    }
    return k;
}

} // namespace hashgrid

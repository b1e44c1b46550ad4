// SPDX-License-Identifier: MIT
// The pair-test kernels: sweep_impl.inc compiled once per instruction set
// (scalar everywhere; SSE2 and AVX2 on x86-64, AVX2 through target
// attributes and chosen at run time; NEON on aarch64), and the process-wide
// kernel selection (set_pair_kernel, active_pair_kernel).
#include "common/pair_compress.h"
#include "particle/pair_ranges.h"
#include "particle/pair_sweep.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define HASHGRID_X86 1
#endif
// NEON on little-endian aarch64 (the lane and byte numbering the compress
// table assumes); a big-endian build keeps the scalar kernel.
#if defined(__aarch64__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <arm_neon.h>
#define HASHGRID_NEON 1
#endif

#define HASHGRID_ISA_SCALAR 0
#define HASHGRID_ISA_SSE2 1
#define HASHGRID_ISA_AVX2 2
#define HASHGRID_ISA_NEON 3

namespace hashgrid {

using namespace detail;
using namespace detail::pair_sweep;

namespace {

#if HASHGRID_X86
/// The pair writers' lane table (pair_compress.h).
constexpr const auto& kCompress = kPairCompressTable.lanes;
#endif

#if HASHGRID_NEON
/// kCompress4[m] is the byte shuffle that moves the 32-bit lanes set in the
/// 4-bit mask m to the front, in ascending order.
struct CompressTable4 {
    uint8_t bytes[16][16];
    constexpr CompressTable4() : bytes{} {
        for (uint32_t m = 0; m < 16; ++m) {
            uint32_t n = 0;
            for (uint32_t lane = 0; lane < 4; ++lane)
                if ((m >> lane) & 1u) {
                    for (uint32_t b = 0; b < 4; ++b)
                        bytes[m][4 * n + b] = static_cast<uint8_t>(4 * lane + b);
                    ++n;
                }
        }
    }
};
constexpr CompressTable4 kCompressTable4{};
constexpr const uint8_t (&kCompress4)[16][16] = kCompressTable4.bytes;
#endif

namespace scalar_kernel {
#define HASHGRID_SWEEP_TARGET
#define HASHGRID_SWEEP_ISA HASHGRID_ISA_SCALAR
#include "particle/sweep_impl.inc"
#undef HASHGRID_SWEEP_TARGET
#undef HASHGRID_SWEEP_ISA
} // namespace scalar_kernel

#if HASHGRID_X86
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

#if HASHGRID_NEON
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
#if HASHGRID_X86
    case PairKernel::sse2:
        return true;
    case PairKernel::avx2:
        return __builtin_cpu_supports("avx2") != 0;
#endif
#if HASHGRID_NEON
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

} // namespace

namespace detail::pair_sweep {

SweepFn sweep_for(PairKernel kernel, uint32_t dims, bool radius) {
    switch (kernel) {
#if HASHGRID_X86
    case PairKernel::avx2:
        return avx2_kernel::pick(dims, radius);
    case PairKernel::sse2:
        return sse2_kernel::pick(dims, radius);
#endif
#if HASHGRID_NEON
    case PairKernel::neon:
        return neon_kernel::pick(dims, radius);
#endif
    default:
        return scalar_kernel::pick(dims, radius);
    }
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

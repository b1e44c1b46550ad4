// SPDX-License-Identifier: MIT
// What the query run kernels (query_kernels.cpp: particles;
// box_query_kernels.cpp: box objects' cell entries) share: a kernel collects
// its hits in a stack buffer first, where the SIMD kernels store a whole
// vector of compressed indices at once and the scalar ones store every
// candidate's index and advance by its test result (no branch per
// candidate), so both write past the last hit. Only the hits are copied to
// the caller's buffer (whenever the stack buffer is nearly full, and at the
// end), which thus gets exactly the results.
#pragma once

#include "kernels/kernel_dispatch.h"

#include <cstdint>
#include <cstring>

namespace hashgrid::detail::hit_buffer {

/// Hits collected in the stack buffer before they are copied out.
inline constexpr uint32_t kPiece = 256;
/// Stack buffer entries: a piece plus the widest vector store past its end.
inline constexpr uint32_t kBuffer = kPiece + 8;

#if HASHGRID_KERNELS_X86
/// Copies n hits from the stack buffer to out + written; returns the new
/// count. Vector copies of exactly n entries rather than memcpy: a query's
/// hits are a few hundred entries, and a library call costs more than the copy.
inline uint32_t flush(const uint32_t* buffer, uint32_t n, uint32_t* out, uint32_t written) {
    uint32_t* to = out + written;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(buffer + i)));
    if ((n - i) & 2u) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(to + i),
                         _mm_loadl_epi64(reinterpret_cast<const __m128i*>(buffer + i)));
        i += 2;
    }
    if ((n - i) & 1u) to[i] = buffer[i];
    return written + n;
}

/// kCompressTable.lanes[m]: the set lanes of the 8-bit mask m in ascending
/// order, then zeros (the permutation that moves an AVX2 vector's hit lanes
/// to the front).
struct CompressTable {
    uint8_t lanes[256][8];
    constexpr CompressTable() : lanes{} {
        for (uint32_t m = 0; m < 256; ++m) {
            uint32_t n = 0;
            for (uint32_t lane = 0; lane < 8; ++lane)
                if ((m >> lane) & 1u) lanes[m][n++] = static_cast<uint8_t>(lane);
        }
    }
};
inline constexpr CompressTable kCompressTable{};

/// The lanes of mask m (bits 0-3) of index[0..3] appended to buffer + n
/// without branches (SSE2 has no variable shuffle); returns the new n.
inline uint32_t append4(uint32_t m, const uint32_t* index, uint32_t* buffer, uint32_t n) {
    buffer[n] = index[0];
    n += m & 1u;
    buffer[n] = index[1];
    n += (m >> 1) & 1u;
    buffer[n] = index[2];
    n += (m >> 2) & 1u;
    buffer[n] = index[3];
    n += (m >> 3) & 1u;
    return n;
}

/// The lanes of mask m (bits 0-7) of index[0..7] appended to buffer + n by
/// one permute and one vector store; returns the new n.
__attribute__((target("avx2"))) inline uint32_t append8(uint32_t m, const uint32_t* index, uint32_t* buffer,
                                                        uint32_t n) {
    const __m256i pick =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kCompressTable.lanes[m])));
    const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(buffer + n), _mm256_permutevar8x32_epi32(idx, pick));
    return n + static_cast<uint32_t>(__builtin_popcount(m));
}
#elif HASHGRID_KERNELS_NEON
/// Copies n hits from the stack buffer to out + written; returns the new
/// count. Vector copies of exactly n entries rather than memcpy: a query's
/// hits are a few hundred entries, and a library call costs more than the copy.
inline uint32_t flush(const uint32_t* buffer, uint32_t n, uint32_t* out, uint32_t written) {
    uint32_t* to = out + written;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_u32(to + i, vld1q_u32(buffer + i));
    if ((n - i) & 2u) {
        vst1_u32(to + i, vld1_u32(buffer + i));
        i += 2;
    }
    if ((n - i) & 1u) to[i] = buffer[i];
    return written + n;
}

/// kCompressTable4.bytes[m]: the byte shuffle that moves the 32-bit lanes set
/// in the 4-bit mask m to the front in ascending order, then zeros. The one
/// NEON compress table: the pair sweeps of both grid kinds use it too
/// (particle/pair_kernels.cpp, box/box_cell_sweep.inc), with lane_mask4.
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
inline constexpr CompressTable4 kCompressTable4{};

/// Bit l set where lane l of the comparison result `all_or_none` is set.
inline uint32_t lane_mask4(uint32x4_t all_or_none) {
    static constexpr uint32_t kWeights[4] = {1, 2, 4, 8};
    return vaddvq_u32(vandq_u32(all_or_none, vld1q_u32(kWeights)));
}

/// The lanes of mask m (bits 0-3) of index[0..3] appended to buffer + n by
/// one table lookup and one vector store; returns the new n.
inline uint32_t append4_neon(uint32_t m, const uint32_t* index, uint32_t* buffer, uint32_t n) {
    const uint8x16_t idx = vreinterpretq_u8_u32(vld1q_u32(index));
    vst1q_u32(buffer + n, vreinterpretq_u32_u8(vqtbl1q_u8(idx, vld1q_u8(kCompressTable4.bytes[m]))));
    return n + static_cast<uint32_t>(__builtin_popcount(m));
}
#else
/// Copies n hits from the stack buffer to out + written; returns the new count.
inline uint32_t flush(const uint32_t* buffer, uint32_t n, uint32_t* out, uint32_t written) {
    std::memcpy(out + written, buffer, static_cast<size_t>(n) * sizeof(uint32_t));
    return written + n;
}
#endif

// ---------------------------------------------------------------------------
// The loops of a run kernel: every run of `runs` (begin[r], end[r], count),
// each candidate k tested, index[k] collected for those that pass, in run
// order and ascending k; returns the number of hits written to out (which
// needs room for every candidate of the runs).
//
// A test may have start_run(runs, r), called before run r (for a value that
// holds per run). Vector tests give a lane mask for [q, q + width); those
// with kReadsPastEnd may read (and index may be read) up to width - 1 entries
// past a run's end, so the last partial vector is tested whole and masked;
// the others test that tail one candidate at a time with one(k).

template <typename Test, typename RunList>
inline void start_run(Test& test, const RunList& runs, uint32_t r) {
    if constexpr (requires { test.start_run(runs, r); }) test.start_run(runs, r);
}

/// One candidate at a time: index[k] stored, the count advanced by the test.
template <typename Test, typename RunList>
uint32_t collect_scalar(Test test, const uint32_t* const index, const RunList& runs, uint32_t* out) {
    uint32_t buffer[kBuffer];
    uint32_t written = 0;
    uint32_t n = 0;
    for (uint32_t r = 0; r < runs.count; ++r) {
        start_run(test, runs, r);
        for (uint32_t k = runs.begin[r]; k < runs.end[r]; ++k) {
            if (n == kPiece) {
                written = flush(buffer, n, out, written);
                n = 0;
            }
            buffer[n] = index[k];
            n += test(k) ? 1u : 0u;
        }
    }
    return flush(buffer, n, out, written);
}

#if HASHGRID_KERNELS_X86 || HASHGRID_KERNELS_NEON
/// The last e - q (< width) candidates of a run, for a test that may not
/// read past the run: one at a time.
template <typename Test>
inline uint32_t collect_tail(const Test& test, const uint32_t* index, uint32_t q, uint32_t e, uint32_t* buffer,
                             uint32_t n) {
    for (; q < e; ++q) {
        buffer[n] = index[q];
        n += test.one(q) ? 1u : 0u;
    }
    return n;
}
#endif

#if HASHGRID_KERNELS_X86
/// SSE2: 4 lanes tested at once.
template <typename Test, typename RunList>
uint32_t collect_sse2(Test test, const uint32_t* const index, const RunList& runs, uint32_t* out) {
    uint32_t buffer[kBuffer];
    uint32_t written = 0;
    uint32_t n = 0;
    for (uint32_t r = 0; r < runs.count; ++r) {
        start_run(test, runs, r);
        const uint32_t e = runs.end[r];
        uint32_t q = runs.begin[r];
        for (; e - q >= 4; q += 4) {
            if (n > kPiece - 4) {
                written = flush(buffer, n, out, written);
                n = 0;
            }
            n = append4(test(q), index + q, buffer, n);
        }
        if (q == e) continue;
        if (n > kPiece - 4) {
            written = flush(buffer, n, out, written);
            n = 0;
        }
        if constexpr (Test::kReadsPastEnd)
            n = append4(test(q) & ((1u << (e - q)) - 1u), index + q, buffer, n);
        else
            n = collect_tail(test, index, q, e, buffer, n);
    }
    return flush(buffer, n, out, written);
}

/// AVX2: 8 lanes tested at once, the hits compressed by one permute.
template <typename Test, typename RunList>
__attribute__((target("avx2"))) uint32_t collect_avx2(Test test, const uint32_t* const index, const RunList& runs,
                                                      uint32_t* out) {
    alignas(32) uint32_t buffer[kBuffer];
    uint32_t written = 0;
    uint32_t n = 0;
    for (uint32_t r = 0; r < runs.count; ++r) {
        start_run(test, runs, r);
        const uint32_t e = runs.end[r];
        uint32_t q = runs.begin[r];
        for (; e - q >= 8; q += 8) {
            if (n > kPiece - 8) {
                written = flush(buffer, n, out, written);
                n = 0;
            }
            n = append8(test(q), index + q, buffer, n);
        }
        if (q == e) continue;
        if (n > kPiece - 8) {
            written = flush(buffer, n, out, written);
            n = 0;
        }
        if constexpr (Test::kReadsPastEnd)
            n = append8(test(q) & ((1u << (e - q)) - 1u), index + q, buffer, n);
        else
            n = collect_tail(test, index, q, e, buffer, n);
    }
    return flush(buffer, n, out, written);
}
#endif

#if HASHGRID_KERNELS_NEON
/// NEON: 4 lanes tested at once, the hits compressed by one table lookup.
template <typename Test, typename RunList>
uint32_t collect_neon(Test test, const uint32_t* const index, const RunList& runs, uint32_t* out) {
    alignas(16) uint32_t buffer[kBuffer];
    uint32_t written = 0;
    uint32_t n = 0;
    for (uint32_t r = 0; r < runs.count; ++r) {
        start_run(test, runs, r);
        const uint32_t e = runs.end[r];
        uint32_t q = runs.begin[r];
        for (; e - q >= 4; q += 4) {
            if (n > kPiece - 4) {
                written = flush(buffer, n, out, written);
                n = 0;
            }
            n = append4_neon(test(q), index + q, buffer, n);
        }
        if (q == e) continue;
        if (n > kPiece - 4) {
            written = flush(buffer, n, out, written);
            n = 0;
        }
        if constexpr (Test::kReadsPastEnd)
            n = append4_neon(test(q) & ((1u << (e - q)) - 1u), index + q, buffer, n);
        else
            n = collect_tail(test, index, q, e, buffer, n);
    }
    return flush(buffer, n, out, written);
}
#endif

} // namespace hashgrid::detail::hit_buffer

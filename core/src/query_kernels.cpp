// The particle queries' run kernels (query_kernels.h): scalar everywhere,
// SSE2 and AVX2 (through a target attribute, chosen at run time) on x86-64.
//
// Each kernel tests a run in pieces of up to kPiece candidates and collects
// a piece's hits in a stack buffer first: the SIMD kernels store a whole
// vector of compressed indices at once and the scalar one stores every
// candidate's index and advances by its test result (no branch per
// candidate), so both write past the last hit. Only the hits are then
// copied to the caller's buffer, which thus gets exactly the results.
#include "query_kernels.h"

#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define HASHGRID_QUERY_X86 1
#endif

namespace hashgrid::detail::query_kernels {

namespace {

/// Candidates tested into the stack buffer before its hits are copied out.
constexpr uint32_t kPiece = 256;
/// Stack buffer entries: a piece plus the widest vector store past its end.
constexpr uint32_t kBuffer = kPiece + 8;

/// Copies n hits from the stack buffer to out + written; returns the new count.
inline uint32_t flush(const uint32_t* buffer, uint32_t n, uint32_t* out, uint32_t written) {
    std::memcpy(out + written, buffer, static_cast<size_t>(n) * sizeof(uint32_t));
    return written + n;
}

// ---------------------------------------------------------------------------
// Scalar: the query's own test, one candidate at a time, branch-free stores.

template <uint32_t D>
uint32_t box_scalar(const RunData& d, const float* lo, const float* hi, uint32_t b, uint32_t e, uint32_t* out) {
    uint32_t buffer[kBuffer];
    uint32_t written = 0;
    for (uint32_t p0 = b; p0 < e; p0 += kPiece) {
        const uint32_t p1 = e - p0 < kPiece ? e : p0 + kPiece;
        uint32_t n = 0;
        for (uint32_t k = p0; k < p1; ++k) {
            bool inside = true;
            for (uint32_t a = 0; a < D; ++a) {
                const float p = d.p[a][k];
                inside = inside && p >= lo[a] && p <= hi[a];
            }
            buffer[n] = d.order[k];
            n += inside ? 1u : 0u;
        }
        written = flush(buffer, n, out, written);
    }
    return written;
}

template <uint32_t D>
uint32_t radius_scalar(const RunData& d, const float* c, float r2, uint32_t b, uint32_t e, uint32_t* out) {
    uint32_t buffer[kBuffer];
    uint32_t written = 0;
    for (uint32_t p0 = b; p0 < e; p0 += kPiece) {
        const uint32_t p1 = e - p0 < kPiece ? e : p0 + kPiece;
        uint32_t n = 0;
        for (uint32_t k = p0; k < p1; ++k) {
            const float dx = d.p[0][k] - c[0];
            const float dy = d.p[1][k] - c[1];
            float d2 = dx * dx + dy * dy;
            if constexpr (D == 3) {
                const float dz = d.p[2][k] - c[2];
                d2 = d2 + dz * dz;
            }
            buffer[n] = d.order[k];
            n += d2 < r2 ? 1u : 0u;
        }
        written = flush(buffer, n, out, written);
    }
    return written;
}

#if HASHGRID_QUERY_X86
// ---------------------------------------------------------------------------
// SSE2: 4 lanes tested at once; the hit lanes' indices stored one by one
// without branches (SSE2 has no variable shuffle).

/// The lanes of mask m (bits 0-3) appended to buffer + n; returns the new n.
inline uint32_t append4(uint32_t m, const uint32_t* order, uint32_t* buffer, uint32_t n) {
    buffer[n] = order[0];
    n += m & 1u;
    buffer[n] = order[1];
    n += (m >> 1) & 1u;
    buffer[n] = order[2];
    n += (m >> 2) & 1u;
    buffer[n] = order[3];
    n += (m >> 3) & 1u;
    return n;
}

/// Lanes of the last, partial vector of a piece: the first `left` (< 4, or
/// all when left >= 4).
inline uint32_t lane_mask4(uint32_t left) { return left >= 4 ? 0xfu : (1u << left) - 1u; }

template <uint32_t D>
uint32_t box_sse2(const RunData& d, const float* lo, const float* hi, uint32_t b, uint32_t e, uint32_t* out) {
    __m128 vlo[3], vhi[3];
    for (uint32_t a = 0; a < D; ++a) {
        vlo[a] = _mm_set1_ps(lo[a]);
        vhi[a] = _mm_set1_ps(hi[a]);
    }
    uint32_t buffer[kBuffer];
    uint32_t written = 0;
    for (uint32_t p0 = b; p0 < e; p0 += kPiece) {
        const uint32_t p1 = e - p0 < kPiece ? e : p0 + kPiece;
        uint32_t n = 0;
        for (uint32_t q = p0; q < p1; q += 4) {
            __m128 inside = _mm_castsi128_ps(_mm_set1_epi32(-1));
            for (uint32_t a = 0; a < D; ++a) {
                const __m128 x = _mm_loadu_ps(d.p[a] + q);
                inside = _mm_and_ps(inside, _mm_and_ps(_mm_cmpge_ps(x, vlo[a]), _mm_cmple_ps(x, vhi[a])));
            }
            const uint32_t m = static_cast<uint32_t>(_mm_movemask_ps(inside)) & lane_mask4(p1 - q);
            n = append4(m, d.order + q, buffer, n);
        }
        written = flush(buffer, n, out, written);
    }
    return written;
}

template <uint32_t D>
uint32_t radius_sse2(const RunData& d, const float* c, float r2, uint32_t b, uint32_t e, uint32_t* out) {
    const __m128 cx = _mm_set1_ps(c[0]);
    const __m128 cy = _mm_set1_ps(c[1]);
    const __m128 cz = _mm_set1_ps(D == 3 ? c[2] : 0.0f);
    const __m128 vr2 = _mm_set1_ps(r2);
    uint32_t buffer[kBuffer];
    uint32_t written = 0;
    for (uint32_t p0 = b; p0 < e; p0 += kPiece) {
        const uint32_t p1 = e - p0 < kPiece ? e : p0 + kPiece;
        uint32_t n = 0;
        for (uint32_t q = p0; q < p1; q += 4) {
            const __m128 dx = _mm_sub_ps(_mm_loadu_ps(d.p[0] + q), cx);
            const __m128 dy = _mm_sub_ps(_mm_loadu_ps(d.p[1] + q), cy);
            __m128 d2 = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
            if constexpr (D == 3) {
                const __m128 dz = _mm_sub_ps(_mm_loadu_ps(d.p[2] + q), cz);
                d2 = _mm_add_ps(d2, _mm_mul_ps(dz, dz));
            }
            const uint32_t m = static_cast<uint32_t>(_mm_movemask_ps(_mm_cmplt_ps(d2, vr2))) & lane_mask4(p1 - q);
            n = append4(m, d.order + q, buffer, n);
        }
        written = flush(buffer, n, out, written);
    }
    (void)cz;
    return written;
}

// ---------------------------------------------------------------------------
// AVX2: 8 lanes tested at once; the hit lanes' indices moved to the front by
// one permute (kCompress) and stored as one vector.

/// kCompress[m]: the set lanes of the 8-bit mask m in ascending order, then zeros.
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
constexpr CompressTable kCompressTable{};

#define HASHGRID_AVX2 __attribute__((target("avx2")))

HASHGRID_AVX2 inline uint32_t append8(uint32_t m, const uint32_t* order, uint32_t* buffer, uint32_t n) {
    const __m256i pick =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kCompressTable.lanes[m])));
    const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(order));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(buffer + n), _mm256_permutevar8x32_epi32(idx, pick));
    return n + static_cast<uint32_t>(__builtin_popcount(m));
}

inline uint32_t lane_mask8(uint32_t left) { return left >= 8 ? 0xffu : (1u << left) - 1u; }

template <uint32_t D>
HASHGRID_AVX2 uint32_t box_avx2(const RunData& d, const float* lo, const float* hi, uint32_t b, uint32_t e,
                                uint32_t* out) {
    __m256 vlo[3], vhi[3];
    for (uint32_t a = 0; a < D; ++a) {
        vlo[a] = _mm256_set1_ps(lo[a]);
        vhi[a] = _mm256_set1_ps(hi[a]);
    }
    alignas(32) uint32_t buffer[kBuffer];
    uint32_t written = 0;
    for (uint32_t p0 = b; p0 < e; p0 += kPiece) {
        const uint32_t p1 = e - p0 < kPiece ? e : p0 + kPiece;
        uint32_t n = 0;
        for (uint32_t q = p0; q < p1; q += 8) {
            __m256 inside = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
            for (uint32_t a = 0; a < D; ++a) {
                const __m256 x = _mm256_loadu_ps(d.p[a] + q);
                inside = _mm256_and_ps(
                    inside, _mm256_and_ps(_mm256_cmp_ps(x, vlo[a], _CMP_GE_OQ), _mm256_cmp_ps(x, vhi[a], _CMP_LE_OQ)));
            }
            const uint32_t m = static_cast<uint32_t>(_mm256_movemask_ps(inside)) & lane_mask8(p1 - q);
            n = append8(m, d.order + q, buffer, n);
        }
        written = flush(buffer, n, out, written);
    }
    return written;
}

template <uint32_t D>
HASHGRID_AVX2 uint32_t radius_avx2(const RunData& d, const float* c, float r2, uint32_t b, uint32_t e, uint32_t* out) {
    const __m256 cx = _mm256_set1_ps(c[0]);
    const __m256 cy = _mm256_set1_ps(c[1]);
    const __m256 cz = _mm256_set1_ps(D == 3 ? c[2] : 0.0f);
    const __m256 vr2 = _mm256_set1_ps(r2);
    alignas(32) uint32_t buffer[kBuffer];
    uint32_t written = 0;
    for (uint32_t p0 = b; p0 < e; p0 += kPiece) {
        const uint32_t p1 = e - p0 < kPiece ? e : p0 + kPiece;
        uint32_t n = 0;
        for (uint32_t q = p0; q < p1; q += 8) {
            const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(d.p[0] + q), cx);
            const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(d.p[1] + q), cy);
            __m256 d2 = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
            if constexpr (D == 3) {
                const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(d.p[2] + q), cz);
                d2 = _mm256_add_ps(d2, _mm256_mul_ps(dz, dz));
            }
            const uint32_t m =
                static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(d2, vr2, _CMP_LT_OQ))) & lane_mask8(p1 - q);
            n = append8(m, d.order + q, buffer, n);
        }
        written = flush(buffer, n, out, written);
    }
    (void)cz;
    return written;
}

#undef HASHGRID_AVX2
#endif

template <uint32_t D>
RunKernels kernels_of(PairKernel isa) {
    switch (isa) {
#if HASHGRID_QUERY_X86
    case PairKernel::avx2:
        return {box_avx2<D>, radius_avx2<D>};
    case PairKernel::sse2:
        return {box_sse2<D>, radius_sse2<D>};
#endif
    default:
        return {box_scalar<D>, radius_scalar<D>};
    }
}

} // namespace

RunKernels run_kernels(uint32_t dims) {
    const PairKernel isa = active_pair_kernel();
    return dims == 3 ? kernels_of<3>(isa) : kernels_of<2>(isa);
}

} // namespace hashgrid::detail::query_kernels

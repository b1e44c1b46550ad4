// The particle queries' run kernels (query_kernels.h): scalar everywhere,
// SSE2 and AVX2 (through a target attribute, chosen at run time) on x86-64.
//
// A kernel call tests a list of runs (a query's rows) and collects the hits
// in a stack buffer first: the SIMD kernels store a whole vector of
// compressed indices at once and the scalar one stores every candidate's
// index and advances by its test result (no branch per candidate), so both
// write past the last hit. Only the hits are copied to the caller's buffer
// (whenever the stack buffer is nearly full, and at the end), which thus gets
// exactly the results.
#include "query_kernels.h"

#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define HASHGRID_QUERY_X86 1
#endif

namespace hashgrid::detail::query_kernels {

namespace {

/// Hits collected in the stack buffer before they are copied out.
constexpr uint32_t kPiece = 256;
/// Stack buffer entries: a piece plus the widest vector store past its end.
constexpr uint32_t kBuffer = kPiece + 8;

/// The sorted coordinates, copied into each test by value: the kernels'
/// vector stores may alias anything, and a copy the stores cannot reach
/// keeps the pointers in registers.
struct Coordinates {
    const float* a[3];
    const float* operator[](uint32_t axis) const { return a[axis]; }
};

inline Coordinates coordinates(const RunData& d) { return {{d.p[0], d.p[1], d.p[2]}}; }

#if HASHGRID_QUERY_X86
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
#else
/// Copies n hits from the stack buffer to out + written; returns the new count.
inline uint32_t flush(const uint32_t* buffer, uint32_t n, uint32_t* out, uint32_t written) {
    std::memcpy(out + written, buffer, static_cast<size_t>(n) * sizeof(uint32_t));
    return written + n;
}
#endif

// ---------------------------------------------------------------------------
// The tests, one candidate at a time (scalar): the query's own expressions.

template <uint32_t D>
struct BoxTest {
    Coordinates p;
    const float* lo;
    const float* hi;
    [[nodiscard]] bool operator()(uint32_t k) const {
        bool inside = true;
        for (uint32_t a = 0; a < D; ++a) {
            const float x = p[a][k];
            inside = inside && x >= lo[a] && x <= hi[a];
        }
        return inside;
    }
};

template <uint32_t D>
struct RadiusTest {
    Coordinates p;
    const float* c;
    float r2;
    [[nodiscard]] bool operator()(uint32_t k) const {
        const float dx = p[0][k] - c[0];
        const float dy = p[1][k] - c[1];
        float d2 = dx * dx + dy * dy;
        if constexpr (D == 3) {
            const float dz = p[2][k] - c[2];
            d2 = d2 + dz * dz;
        }
        return d2 < r2;
    }
};

template <typename Test>
uint32_t runs_scalar(const Test test, const uint32_t* const order, const Runs& runs, uint32_t* out) {
    uint32_t buffer[kBuffer];
    uint32_t written = 0;
    uint32_t n = 0;
    for (uint32_t r = 0; r < runs.count; ++r)
        for (uint32_t k = runs.begin[r]; k < runs.end[r]; ++k) {
            if (n == kPiece) {
                written = flush(buffer, n, out, written);
                n = 0;
            }
            buffer[n] = order[k];
            n += test(k) ? 1u : 0u;
        }
    return flush(buffer, n, out, written);
}

template <uint32_t D>
uint32_t box_scalar(const RunData& d, const float* lo, const float* hi, const Runs& runs, uint32_t* out) {
    return runs_scalar(BoxTest<D>{coordinates(d), lo, hi}, d.order, runs, out);
}

template <uint32_t D>
uint32_t radius_scalar(const RunData& d, const float* c, float r2, const Runs& runs, uint32_t* out) {
    return runs_scalar(RadiusTest<D>{coordinates(d), c, r2}, d.order, runs, out);
}

#if HASHGRID_QUERY_X86
// ---------------------------------------------------------------------------
// SSE2: 4 lanes tested at once; the hit lanes' indices stored one by one
// without branches (SSE2 has no variable shuffle).

template <uint32_t D>
struct BoxTest4 {
    Coordinates p;
    __m128 lo[3], hi[3];
    BoxTest4(const RunData& d, const float* l, const float* h) : p(coordinates(d)) {
        for (uint32_t a = 0; a < D; ++a) {
            lo[a] = _mm_set1_ps(l[a]);
            hi[a] = _mm_set1_ps(h[a]);
        }
    }
    /// Lane mask of the particles at [q, q + 4) inside the closed box.
    [[nodiscard]] uint32_t operator()(uint32_t q) const {
        __m128 inside = _mm_castsi128_ps(_mm_set1_epi32(-1));
        for (uint32_t a = 0; a < D; ++a) {
            const __m128 x = _mm_loadu_ps(p[a] + q);
            inside = _mm_and_ps(inside, _mm_and_ps(_mm_cmpge_ps(x, lo[a]), _mm_cmple_ps(x, hi[a])));
        }
        return static_cast<uint32_t>(_mm_movemask_ps(inside));
    }
};

template <uint32_t D>
struct RadiusTest4 {
    Coordinates p;
    __m128 c[3], r2;
    RadiusTest4(const RunData& d, const float* centre, float radius2) : p(coordinates(d)), r2(_mm_set1_ps(radius2)) {
        for (uint32_t a = 0; a < D; ++a)
            c[a] = _mm_set1_ps(centre[a]);
    }
    /// Lane mask of the particles at [q, q + 4) with d2 < r2.
    [[nodiscard]] uint32_t operator()(uint32_t q) const {
        const __m128 dx = _mm_sub_ps(_mm_loadu_ps(p[0] + q), c[0]);
        const __m128 dy = _mm_sub_ps(_mm_loadu_ps(p[1] + q), c[1]);
        __m128 d2 = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
        if constexpr (D == 3) {
            const __m128 dz = _mm_sub_ps(_mm_loadu_ps(p[2] + q), c[2]);
            d2 = _mm_add_ps(d2, _mm_mul_ps(dz, dz));
        }
        return static_cast<uint32_t>(_mm_movemask_ps(_mm_cmplt_ps(d2, r2)));
    }
};

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

template <typename Test>
uint32_t runs_sse2(const Test test, const uint32_t* const order, const Runs& runs, uint32_t* out) {
    uint32_t buffer[kBuffer];
    uint32_t written = 0;
    uint32_t n = 0;
    for (uint32_t r = 0; r < runs.count; ++r) {
        const uint32_t e = runs.end[r];
        for (uint32_t q = runs.begin[r]; q < e; q += 4) {
            if (n > kPiece - 4) {
                written = flush(buffer, n, out, written);
                n = 0;
            }
            uint32_t m = test(q);
            if (e - q < 4) m &= (1u << (e - q)) - 1u;
            n = append4(m, order + q, buffer, n);
        }
    }
    return flush(buffer, n, out, written);
}

template <uint32_t D>
uint32_t box_sse2(const RunData& d, const float* lo, const float* hi, const Runs& runs, uint32_t* out) {
    return runs_sse2(BoxTest4<D>(d, lo, hi), d.order, runs, out);
}

template <uint32_t D>
uint32_t radius_sse2(const RunData& d, const float* c, float r2, const Runs& runs, uint32_t* out) {
    return runs_sse2(RadiusTest4<D>(d, c, r2), d.order, runs, out);
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

template <uint32_t D>
struct BoxTest8 {
    Coordinates p;
    __m256 lo[3], hi[3];
    HASHGRID_AVX2 BoxTest8(const RunData& d, const float* l, const float* h) : p(coordinates(d)) {
        for (uint32_t a = 0; a < D; ++a) {
            lo[a] = _mm256_set1_ps(l[a]);
            hi[a] = _mm256_set1_ps(h[a]);
        }
    }
    /// Lane mask of the particles at [q, q + 8) inside the closed box.
    [[nodiscard]] HASHGRID_AVX2 uint32_t operator()(uint32_t q) const {
        __m256 inside = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        for (uint32_t a = 0; a < D; ++a) {
            const __m256 x = _mm256_loadu_ps(p[a] + q);
            inside = _mm256_and_ps(
                inside, _mm256_and_ps(_mm256_cmp_ps(x, lo[a], _CMP_GE_OQ), _mm256_cmp_ps(x, hi[a], _CMP_LE_OQ)));
        }
        return static_cast<uint32_t>(_mm256_movemask_ps(inside));
    }
};

template <uint32_t D>
struct RadiusTest8 {
    Coordinates p;
    __m256 c[3], r2;
    HASHGRID_AVX2 RadiusTest8(const RunData& d, const float* centre, float radius2)
        : p(coordinates(d)), r2(_mm256_set1_ps(radius2)) {
        for (uint32_t a = 0; a < D; ++a)
            c[a] = _mm256_set1_ps(centre[a]);
    }
    /// Lane mask of the particles at [q, q + 8) with d2 < r2.
    [[nodiscard]] HASHGRID_AVX2 uint32_t operator()(uint32_t q) const {
        const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(p[0] + q), c[0]);
        const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(p[1] + q), c[1]);
        __m256 d2 = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
        if constexpr (D == 3) {
            const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(p[2] + q), c[2]);
            d2 = _mm256_add_ps(d2, _mm256_mul_ps(dz, dz));
        }
        return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(d2, r2, _CMP_LT_OQ)));
    }
};

HASHGRID_AVX2 inline uint32_t append8(uint32_t m, const uint32_t* order, uint32_t* buffer, uint32_t n) {
    const __m256i pick =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kCompressTable.lanes[m])));
    const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(order));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(buffer + n), _mm256_permutevar8x32_epi32(idx, pick));
    return n + static_cast<uint32_t>(__builtin_popcount(m));
}

template <typename Test>
HASHGRID_AVX2 uint32_t runs_avx2(const Test test, const uint32_t* const order, const Runs& runs, uint32_t* out) {
    alignas(32) uint32_t buffer[kBuffer];
    uint32_t written = 0;
    uint32_t n = 0;
    for (uint32_t r = 0; r < runs.count; ++r) {
        const uint32_t e = runs.end[r];
        uint32_t q = runs.begin[r];
        for (; e - q >= 8; q += 8) {
            if (n > kPiece - 8) {
                written = flush(buffer, n, out, written);
                n = 0;
            }
            n = append8(test(q), order + q, buffer, n);
        }
        if (q < e) {
            if (n > kPiece - 8) {
                written = flush(buffer, n, out, written);
                n = 0;
            }
            n = append8(test(q) & ((1u << (e - q)) - 1u), order + q, buffer, n);
        }
    }
    return flush(buffer, n, out, written);
}

template <uint32_t D>
HASHGRID_AVX2 uint32_t box_avx2(const RunData& d, const float* lo, const float* hi, const Runs& runs, uint32_t* out) {
    return runs_avx2(BoxTest8<D>(d, lo, hi), d.order, runs, out);
}

template <uint32_t D>
HASHGRID_AVX2 uint32_t radius_avx2(const RunData& d, const float* c, float r2, const Runs& runs, uint32_t* out) {
    return runs_avx2(RadiusTest8<D>(d, c, r2), d.order, runs, out);
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

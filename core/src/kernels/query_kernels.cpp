// SPDX-License-Identifier: MIT
// The particle queries' run kernels (query_kernels.h): scalar everywhere,
// SSE2 and AVX2 (through a target attribute, chosen at run time) on x86-64,
// NEON on little-endian aarch64.
//
// A kernel call tests a list of runs (a query's rows) and collects the hits
// through a stack buffer (hit_buffer.h).
#include "kernels/query_kernels.h"

#include "kernels/hit_buffer.h"
#include "kernels/kernel_dispatch.h"

namespace hashgrid::detail::query_kernels {

namespace {

using namespace hit_buffer;

/// The sorted coordinates, copied into each test by value: the kernels'
/// vector stores may alias anything, and a copy the stores cannot reach
/// keeps the pointers in registers.
struct Coordinates {
    const float* a[3];
    const float* operator[](uint32_t axis) const { return a[axis]; }
};

inline Coordinates coordinates(const RunData& d) { return {{d.p[0], d.p[1], d.p[2]}}; }

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

template <uint32_t D>
uint32_t box_scalar(const RunData& d, const float* lo, const float* hi, const Runs& runs, uint32_t* out) {
    return collect_scalar(BoxTest<D>{coordinates(d), lo, hi}, d.order, runs, out);
}

template <uint32_t D>
uint32_t radius_scalar(const RunData& d, const float* c, float r2, const Runs& runs, uint32_t* out) {
    return collect_scalar(RadiusTest<D>{coordinates(d), c, r2}, d.order, runs, out);
}

#if HASHGRID_KERNELS_X86
// ---------------------------------------------------------------------------
// SSE2: 4 lanes tested at once; the hit lanes' indices stored one by one
// without branches (SSE2 has no variable shuffle).

template <uint32_t D>
struct BoxTest4 {
    static constexpr bool kReadsPastEnd = true; ///< The grid keeps kPad entries past its last particle.
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
    static constexpr bool kReadsPastEnd = true; ///< The grid keeps kPad entries past its last particle.
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

template <uint32_t D>
uint32_t box_sse2(const RunData& d, const float* lo, const float* hi, const Runs& runs, uint32_t* out) {
    return collect_sse2(BoxTest4<D>(d, lo, hi), d.order, runs, out);
}

template <uint32_t D>
uint32_t radius_sse2(const RunData& d, const float* c, float r2, const Runs& runs, uint32_t* out) {
    return collect_sse2(RadiusTest4<D>(d, c, r2), d.order, runs, out);
}

// ---------------------------------------------------------------------------
// AVX2: 8 lanes tested at once; the hit lanes' indices moved to the front by
// one permute (hit_buffer.h) and stored as one vector.

#define HASHGRID_AVX2 __attribute__((target("avx2")))

template <uint32_t D>
struct BoxTest8 {
    static constexpr bool kReadsPastEnd = true; ///< The grid keeps kPad entries past its last particle.
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
    static constexpr bool kReadsPastEnd = true; ///< The grid keeps kPad entries past its last particle.
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

template <uint32_t D>
HASHGRID_AVX2 uint32_t box_avx2(const RunData& d, const float* lo, const float* hi, const Runs& runs, uint32_t* out) {
    return collect_avx2(BoxTest8<D>(d, lo, hi), d.order, runs, out);
}

template <uint32_t D>
HASHGRID_AVX2 uint32_t radius_avx2(const RunData& d, const float* c, float r2, const Runs& runs, uint32_t* out) {
    return collect_avx2(RadiusTest8<D>(d, c, r2), d.order, runs, out);
}

#undef HASHGRID_AVX2
#endif

#if HASHGRID_KERNELS_NEON
// ---------------------------------------------------------------------------
// NEON: 4 lanes tested at once (the SSE2 tests' operations; vmulq and vaddq
// stay unfused under the build's -ffp-contract=off), the hit lanes' indices
// moved to the front by one table lookup (hit_buffer.h).

template <uint32_t D>
struct BoxTestNeon {
    static constexpr bool kReadsPastEnd = true; ///< The grid keeps kPad entries past its last particle.
    Coordinates p;
    float32x4_t lo[3], hi[3];
    BoxTestNeon(const RunData& d, const float* l, const float* h) : p(coordinates(d)) {
        for (uint32_t a = 0; a < D; ++a) {
            lo[a] = vdupq_n_f32(l[a]);
            hi[a] = vdupq_n_f32(h[a]);
        }
    }
    /// Lane mask of the particles at [q, q + 4) inside the closed box.
    [[nodiscard]] uint32_t operator()(uint32_t q) const {
        uint32x4_t inside = vdupq_n_u32(~0u);
        for (uint32_t a = 0; a < D; ++a) {
            const float32x4_t x = vld1q_f32(p[a] + q);
            inside = vandq_u32(inside, vandq_u32(vcgeq_f32(x, lo[a]), vcleq_f32(x, hi[a])));
        }
        return lane_mask4(inside);
    }
};

template <uint32_t D>
struct RadiusTestNeon {
    static constexpr bool kReadsPastEnd = true; ///< The grid keeps kPad entries past its last particle.
    Coordinates p;
    float32x4_t c[3], r2;
    RadiusTestNeon(const RunData& d, const float* centre, float radius2) : p(coordinates(d)), r2(vdupq_n_f32(radius2)) {
        for (uint32_t a = 0; a < D; ++a)
            c[a] = vdupq_n_f32(centre[a]);
    }
    /// Lane mask of the particles at [q, q + 4) with d2 < r2.
    [[nodiscard]] uint32_t operator()(uint32_t q) const {
        const float32x4_t dx = vsubq_f32(vld1q_f32(p[0] + q), c[0]);
        const float32x4_t dy = vsubq_f32(vld1q_f32(p[1] + q), c[1]);
        float32x4_t d2 = vaddq_f32(vmulq_f32(dx, dx), vmulq_f32(dy, dy));
        if constexpr (D == 3) {
            const float32x4_t dz = vsubq_f32(vld1q_f32(p[2] + q), c[2]);
            d2 = vaddq_f32(d2, vmulq_f32(dz, dz));
        }
        return lane_mask4(vcltq_f32(d2, r2));
    }
};

template <uint32_t D>
uint32_t box_neon(const RunData& d, const float* lo, const float* hi, const Runs& runs, uint32_t* out) {
    return collect_neon(BoxTestNeon<D>(d, lo, hi), d.order, runs, out);
}

template <uint32_t D>
uint32_t radius_neon(const RunData& d, const float* c, float r2, const Runs& runs, uint32_t* out) {
    return collect_neon(RadiusTestNeon<D>(d, c, r2), d.order, runs, out);
}
#endif

template <uint32_t D>
constexpr RunKernels kScalar{box_scalar<D>, radius_scalar<D>};
#if HASHGRID_KERNELS_X86
template <uint32_t D>
constexpr RunKernels kSse2{box_sse2<D>, radius_sse2<D>};
template <uint32_t D>
constexpr RunKernels kAvx2{box_avx2<D>, radius_avx2<D>};
#endif
#if HASHGRID_KERNELS_NEON
template <uint32_t D>
constexpr RunKernels kNeon{box_neon<D>, radius_neon<D>};
#endif

/// The versions this build has; kernel_dispatch picks one.
template <uint32_t D>
constexpr kernel_dispatch::Widths<RunKernels> kWidths{&kScalar<D>, HASHGRID_X86_TABLE(&kSse2<D>),
                                                      HASHGRID_X86_TABLE(&kAvx2<D>), HASHGRID_NEON_TABLE(&kNeon<D>)};

} // namespace

RunKernels run_kernels(uint32_t dims) {
    return dims == 3 ? kernel_dispatch::active_table(kWidths<3>) : kernel_dispatch::active_table(kWidths<2>);
}

} // namespace hashgrid::detail::query_kernels

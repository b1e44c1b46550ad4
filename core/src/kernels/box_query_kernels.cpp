// SPDX-License-Identifier: MIT
// The box-object queries' entry kernels (box_query_kernels.h): scalar
// everywhere, SSE2 and AVX2 (through a target attribute, chosen at run time)
// on x86-64, NEON on little-endian aarch64, over the run loops and hit buffer of hit_buffer.h. Over a
// grid's own view the entry arrays have readable slots past the last entry
// (EntryData::padded), so a run's last partial vector is tested whole and
// masked; over a view built by hand they may end at the last entry, and the
// vector tests leave that tail to the scalar test (one()).
#include "kernels/box_query_kernels.h"

#include "hashgrid/grid.h"
#include "kernels/hit_buffer.h"
#include "kernels/kernel_dispatch.h"

namespace hashgrid::detail::box_query_kernels {

namespace {

using namespace hit_buffer;

/// The entry arrays, copied into each test by value: the kernels' vector
/// stores may alias anything, and a copy the stores cannot reach keeps the
/// pointers in registers.
struct Entries {
    const float* lo[3];
    const float* hi[3];
    const uint32_t* flags;
};

inline Entries entries(const EntryData& d) {
    return {{d.lo[0], d.lo[1], d.lo[2]}, {d.hi[0], d.hi[1], d.hi[2]}, d.flags};
}

// ---------------------------------------------------------------------------
// The tests, one entry at a time (scalar): the queries' own expressions.

/// The run's first-cell flags, as the scalar tests hold them.
struct ScalarNeed {
    uint32_t need = 0;
    void start_run(const EntryRuns& runs, uint32_t r) { need = runs.need[r]; }
};

template <uint32_t D>
struct BoxTest : ScalarNeed {
    Entries p;
    const float* lo;
    const float* hi;
    BoxTest(const EntryData& d, const float* l, const float* h) : p(entries(d)), lo(l), hi(h) {}
    [[nodiscard]] bool operator()(uint32_t e) const {
        bool meets = (p.flags[e] & need) == need;
        for (uint32_t a = 0; a < D; ++a)
            meets = meets && lo[a] <= p.hi[a][e] && p.lo[a][e] <= hi[a];
        return meets;
    }
};

template <uint32_t D>
struct RadiusTest : ScalarNeed {
    Entries p;
    const float* c;
    float r2;
    RadiusTest(const EntryData& d, const float* centre, float radius2) : p(entries(d)), c(centre), r2(radius2) {}
    [[nodiscard]] bool operator()(uint32_t e) const {
        float d2 = 0.0f;
        for (uint32_t a = 0; a < D; ++a) {
            const float l = p.lo[a][e];
            const float h = p.hi[a][e];
            const float v = c[a] < l ? l - c[a] : (c[a] > h ? c[a] - h : 0.0f);
            d2 = d2 + v * v;
        }
        return (p.flags[e] & need) == need && d2 <= r2;
    }
};

template <uint32_t D>
uint32_t box_scalar(const EntryData& d, const float* lo, const float* hi, const EntryRuns& runs, uint32_t* out) {
    return collect_scalar(BoxTest<D>(d, lo, hi), d.object, runs, out);
}

template <uint32_t D>
uint32_t radius_scalar(const EntryData& d, const float* c, float r2, const EntryRuns& runs, uint32_t* out) {
    return collect_scalar(RadiusTest<D>(d, c, r2), d.object, runs, out);
}

#if HASHGRID_KERNELS_X86
// ---------------------------------------------------------------------------
// SSE2: 4 entries at once. v = max(max(lo - c, c - hi), 0) is the scalar
// test's v: at most one of lo - c and c - hi is positive, and the chosen one
// is the same subtraction; a zero of either sign squares to +0.

template <uint32_t D, bool Padded>
struct BoxTest4 {
    static constexpr bool kReadsPastEnd = Padded;
    BoxTest<D> one;
    __m128 lo[3], hi[3];
    __m128i need;
    BoxTest4(const EntryData& d, const float* l, const float* h) : one(d, l, h), need(_mm_setzero_si128()) {
        for (uint32_t a = 0; a < D; ++a) {
            lo[a] = _mm_set1_ps(l[a]);
            hi[a] = _mm_set1_ps(h[a]);
        }
    }
    void start_run(const EntryRuns& runs, uint32_t r) {
        one.start_run(runs, r);
        need = _mm_set1_epi32(static_cast<int32_t>(runs.need[r]));
    }
    /// Lane mask of the entries at [q, q + 4) that pass.
    [[nodiscard]] uint32_t operator()(uint32_t q) const {
        const __m128i f = _mm_loadu_si128(reinterpret_cast<const __m128i*>(one.p.flags + q));
        __m128 meets = _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(f, need), need));
        for (uint32_t a = 0; a < D; ++a) {
            const __m128 el = _mm_loadu_ps(one.p.lo[a] + q);
            const __m128 eh = _mm_loadu_ps(one.p.hi[a] + q);
            meets = _mm_and_ps(meets, _mm_and_ps(_mm_cmple_ps(lo[a], eh), _mm_cmple_ps(el, hi[a])));
        }
        return static_cast<uint32_t>(_mm_movemask_ps(meets));
    }
};

template <uint32_t D, bool Padded>
struct RadiusTest4 {
    static constexpr bool kReadsPastEnd = Padded;
    RadiusTest<D> one;
    __m128 c[3], r2;
    __m128i need;
    RadiusTest4(const EntryData& d, const float* centre, float radius2)
        : one(d, centre, radius2), r2(_mm_set1_ps(radius2)), need(_mm_setzero_si128()) {
        for (uint32_t a = 0; a < D; ++a)
            c[a] = _mm_set1_ps(centre[a]);
    }
    void start_run(const EntryRuns& runs, uint32_t r) {
        one.start_run(runs, r);
        need = _mm_set1_epi32(static_cast<int32_t>(runs.need[r]));
    }
    /// Lane mask of the entries at [q, q + 4) that pass.
    [[nodiscard]] uint32_t operator()(uint32_t q) const {
        __m128 d2 = _mm_setzero_ps();
        for (uint32_t a = 0; a < D; ++a) {
            const __m128 below = _mm_sub_ps(_mm_loadu_ps(one.p.lo[a] + q), c[a]);
            const __m128 above = _mm_sub_ps(c[a], _mm_loadu_ps(one.p.hi[a] + q));
            const __m128 v = _mm_max_ps(_mm_max_ps(below, above), _mm_setzero_ps());
            d2 = _mm_add_ps(d2, _mm_mul_ps(v, v));
        }
        const __m128i f = _mm_loadu_si128(reinterpret_cast<const __m128i*>(one.p.flags + q));
        const __m128 meets =
            _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(f, need), need)), _mm_cmple_ps(d2, r2));
        return static_cast<uint32_t>(_mm_movemask_ps(meets));
    }
};

template <uint32_t D>
uint32_t box_sse2(const EntryData& d, const float* lo, const float* hi, const EntryRuns& runs, uint32_t* out) {
    return d.padded ? collect_sse2(BoxTest4<D, true>(d, lo, hi), d.object, runs, out)
                    : collect_sse2(BoxTest4<D, false>(d, lo, hi), d.object, runs, out);
}

template <uint32_t D>
uint32_t radius_sse2(const EntryData& d, const float* c, float r2, const EntryRuns& runs, uint32_t* out) {
    return d.padded ? collect_sse2(RadiusTest4<D, true>(d, c, r2), d.object, runs, out)
                    : collect_sse2(RadiusTest4<D, false>(d, c, r2), d.object, runs, out);
}

// ---------------------------------------------------------------------------
// AVX2: 8 entries at once, the same operations.

#define HASHGRID_AVX2 __attribute__((target("avx2")))

template <uint32_t D, bool Padded>
struct BoxTest8 {
    static constexpr bool kReadsPastEnd = Padded;
    BoxTest<D> one;
    __m256 lo[3], hi[3];
    __m256i need;
    HASHGRID_AVX2 BoxTest8(const EntryData& d, const float* l, const float* h)
        : one(d, l, h), need(_mm256_setzero_si256()) {
        for (uint32_t a = 0; a < D; ++a) {
            lo[a] = _mm256_set1_ps(l[a]);
            hi[a] = _mm256_set1_ps(h[a]);
        }
    }
    HASHGRID_AVX2 void start_run(const EntryRuns& runs, uint32_t r) {
        one.start_run(runs, r);
        need = _mm256_set1_epi32(static_cast<int32_t>(runs.need[r]));
    }
    /// Lane mask of the entries at [q, q + 8) that pass.
    [[nodiscard]] HASHGRID_AVX2 uint32_t operator()(uint32_t q) const {
        const __m256i f = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(one.p.flags + q));
        __m256 meets = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(f, need), need));
        for (uint32_t a = 0; a < D; ++a) {
            const __m256 el = _mm256_loadu_ps(one.p.lo[a] + q);
            const __m256 eh = _mm256_loadu_ps(one.p.hi[a] + q);
            meets = _mm256_and_ps(
                meets, _mm256_and_ps(_mm256_cmp_ps(lo[a], eh, _CMP_LE_OQ), _mm256_cmp_ps(el, hi[a], _CMP_LE_OQ)));
        }
        return static_cast<uint32_t>(_mm256_movemask_ps(meets));
    }
};

template <uint32_t D, bool Padded>
struct RadiusTest8 {
    static constexpr bool kReadsPastEnd = Padded;
    RadiusTest<D> one;
    __m256 c[3], r2;
    __m256i need;
    HASHGRID_AVX2 RadiusTest8(const EntryData& d, const float* centre, float radius2)
        : one(d, centre, radius2), r2(_mm256_set1_ps(radius2)), need(_mm256_setzero_si256()) {
        for (uint32_t a = 0; a < D; ++a)
            c[a] = _mm256_set1_ps(centre[a]);
    }
    HASHGRID_AVX2 void start_run(const EntryRuns& runs, uint32_t r) {
        one.start_run(runs, r);
        need = _mm256_set1_epi32(static_cast<int32_t>(runs.need[r]));
    }
    /// Lane mask of the entries at [q, q + 8) that pass.
    [[nodiscard]] HASHGRID_AVX2 uint32_t operator()(uint32_t q) const {
        __m256 d2 = _mm256_setzero_ps();
        for (uint32_t a = 0; a < D; ++a) {
            const __m256 below = _mm256_sub_ps(_mm256_loadu_ps(one.p.lo[a] + q), c[a]);
            const __m256 above = _mm256_sub_ps(c[a], _mm256_loadu_ps(one.p.hi[a] + q));
            const __m256 v = _mm256_max_ps(_mm256_max_ps(below, above), _mm256_setzero_ps());
            d2 = _mm256_add_ps(d2, _mm256_mul_ps(v, v));
        }
        const __m256i f = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(one.p.flags + q));
        const __m256 meets = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(f, need), need)),
                                           _mm256_cmp_ps(d2, r2, _CMP_LE_OQ));
        return static_cast<uint32_t>(_mm256_movemask_ps(meets));
    }
};

template <uint32_t D>
HASHGRID_AVX2 uint32_t box_avx2(const EntryData& d, const float* lo, const float* hi, const EntryRuns& runs,
                                uint32_t* out) {
    return d.padded ? collect_avx2(BoxTest8<D, true>(d, lo, hi), d.object, runs, out)
                    : collect_avx2(BoxTest8<D, false>(d, lo, hi), d.object, runs, out);
}

template <uint32_t D>
HASHGRID_AVX2 uint32_t radius_avx2(const EntryData& d, const float* c, float r2, const EntryRuns& runs, uint32_t* out) {
    return d.padded ? collect_avx2(RadiusTest8<D, true>(d, c, r2), d.object, runs, out)
                    : collect_avx2(RadiusTest8<D, false>(d, c, r2), d.object, runs, out);
}

#undef HASHGRID_AVX2
#endif

#if HASHGRID_KERNELS_NEON
// ---------------------------------------------------------------------------
// NEON: 4 entries at once. The radius test's v is the scalar test's select
// (vbslq) rather than the x86 kernels' max: NEON's max returns NaN where the
// scalar comparisons fall through to another branch.

template <uint32_t D, bool Padded>
struct BoxTestNeon {
    static constexpr bool kReadsPastEnd = Padded;
    BoxTest<D> one;
    float32x4_t lo[3], hi[3];
    uint32x4_t need;
    BoxTestNeon(const EntryData& d, const float* l, const float* h) : one(d, l, h), need(vdupq_n_u32(0)) {
        for (uint32_t a = 0; a < D; ++a) {
            lo[a] = vdupq_n_f32(l[a]);
            hi[a] = vdupq_n_f32(h[a]);
        }
    }
    void start_run(const EntryRuns& runs, uint32_t r) {
        one.start_run(runs, r);
        need = vdupq_n_u32(runs.need[r]);
    }
    /// Lane mask of the entries at [q, q + 4) that pass.
    [[nodiscard]] uint32_t operator()(uint32_t q) const {
        const uint32x4_t f = vld1q_u32(one.p.flags + q);
        uint32x4_t meets = vceqq_u32(vandq_u32(f, need), need);
        for (uint32_t a = 0; a < D; ++a) {
            const float32x4_t el = vld1q_f32(one.p.lo[a] + q);
            const float32x4_t eh = vld1q_f32(one.p.hi[a] + q);
            meets = vandq_u32(meets, vandq_u32(vcleq_f32(lo[a], eh), vcleq_f32(el, hi[a])));
        }
        return lane_mask4(meets);
    }
};

template <uint32_t D, bool Padded>
struct RadiusTestNeon {
    static constexpr bool kReadsPastEnd = Padded;
    RadiusTest<D> one;
    float32x4_t c[3], r2;
    uint32x4_t need;
    RadiusTestNeon(const EntryData& d, const float* centre, float radius2)
        : one(d, centre, radius2), r2(vdupq_n_f32(radius2)), need(vdupq_n_u32(0)) {
        for (uint32_t a = 0; a < D; ++a)
            c[a] = vdupq_n_f32(centre[a]);
    }
    void start_run(const EntryRuns& runs, uint32_t r) {
        one.start_run(runs, r);
        need = vdupq_n_u32(runs.need[r]);
    }
    /// Lane mask of the entries at [q, q + 4) that pass.
    [[nodiscard]] uint32_t operator()(uint32_t q) const {
        const float32x4_t zero = vdupq_n_f32(0.0f);
        float32x4_t d2 = zero;
        for (uint32_t a = 0; a < D; ++a) {
            const float32x4_t l = vld1q_f32(one.p.lo[a] + q);
            const float32x4_t h = vld1q_f32(one.p.hi[a] + q);
            const float32x4_t above = vbslq_f32(vcgtq_f32(c[a], h), vsubq_f32(c[a], h), zero);
            const float32x4_t v = vbslq_f32(vcltq_f32(c[a], l), vsubq_f32(l, c[a]), above);
            d2 = vaddq_f32(d2, vmulq_f32(v, v));
        }
        const uint32x4_t f = vld1q_u32(one.p.flags + q);
        return lane_mask4(vandq_u32(vceqq_u32(vandq_u32(f, need), need), vcleq_f32(d2, r2)));
    }
};

template <uint32_t D>
uint32_t box_neon(const EntryData& d, const float* lo, const float* hi, const EntryRuns& runs, uint32_t* out) {
    return d.padded ? collect_neon(BoxTestNeon<D, true>(d, lo, hi), d.object, runs, out)
                    : collect_neon(BoxTestNeon<D, false>(d, lo, hi), d.object, runs, out);
}

template <uint32_t D>
uint32_t radius_neon(const EntryData& d, const float* c, float r2, const EntryRuns& runs, uint32_t* out) {
    return d.padded ? collect_neon(RadiusTestNeon<D, true>(d, c, r2), d.object, runs, out)
                    : collect_neon(RadiusTestNeon<D, false>(d, c, r2), d.object, runs, out);
}
#endif

template <uint32_t D>
constexpr EntryKernels kScalar{box_scalar<D>, radius_scalar<D>};
#if HASHGRID_KERNELS_X86
template <uint32_t D>
constexpr EntryKernels kSse2{box_sse2<D>, radius_sse2<D>};
template <uint32_t D>
constexpr EntryKernels kAvx2{box_avx2<D>, radius_avx2<D>};
#endif
#if HASHGRID_KERNELS_NEON
template <uint32_t D>
constexpr EntryKernels kNeon{box_neon<D>, radius_neon<D>};
#endif

/// The versions this build has; kernel_dispatch picks one.
template <uint32_t D>
constexpr kernel_dispatch::Widths<EntryKernels> kWidths{&kScalar<D>, HASHGRID_X86_TABLE(&kSse2<D>),
                                                        HASHGRID_X86_TABLE(&kAvx2<D>), HASHGRID_NEON_TABLE(&kNeon<D>)};

} // namespace

EntryKernels entry_kernels(uint32_t dims) {
    return dims == 3 ? kernel_dispatch::active_table(kWidths<3>) : kernel_dispatch::active_table(kWidths<2>);
}

} // namespace hashgrid::detail::box_query_kernels

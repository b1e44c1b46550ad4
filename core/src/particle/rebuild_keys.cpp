// SPDX-License-Identifier: MIT
// Step 1 of the rebuild: validate every particle and compute its cell, per
// fixed chunk of particles. Bounded: the dense linear index and the chunk's
// bucket counts. Unbounded: a packed 64-bit key (wrapped, lattice/
// wrapped_cells.h) and the chunk's box of cells, or, when the frame guesses
// last frame's dense box (KeyParams::guess), each particle's index in that
// box and the chunk's bucket counts. A branch-free fast block (AVX2 or NEON
// where set_pair_kernel allows) does the work; a chunk it reports bad is
// redone on the checked path, which names the lowest offending particle.
#include "kernels/kernel_dispatch.h"
#include "lattice/wrapped_cells.h"
#include "particle/rebuild_steps.h"

#include <cmath>

namespace hashgrid::detail {

namespace {

/// Validates particle i and computes its integer cell coordinates, naming the
/// first problem. The slow path, run only on chunks whose key block (the fast
/// path, key_block_default / key_block_avx2) reported a bad particle.
/// Unbounded worlds accept every finite coordinate: cell[] is the wrapped
/// cell (lattice/wrapped_cells.h) and `wrapped` is set when it differs from
/// the true one.
template <uint32_t D, bool Bounded>
StatusCode cell_checked(const KeyParams& k, uint32_t i, int32_t* cell, bool& wrapped) {
    for (uint32_t d = 0; d < D; ++d) {
        const float v = k.coord[d][i];
        if (!std::isfinite(v)) return StatusCode::invalid_position;
        if constexpr (!Bounded) {
            cell[d] = k.lattice.unbounded_cell_of(d, v, wrapped);
            continue;
        }
        if (!k.lattice.cell_of(d, v, cell[d])) return StatusCode::position_out_of_range;
    }
    if (k.radius != nullptr) {
        const float r = k.radius[i];
        if (!(r > 0.0f) || !std::isfinite(r)) return StatusCode::invalid_radius;
        if (!(r * 2.0f <= k.lattice.cell_size)) return StatusCode::radius_too_large;
    }
    return StatusCode::ok;
}

/// Index of wrapped cell (wx, wy, wz) in the guessed dense box, each
/// coordinate clamped into the box: exact for a cell inside it, and within
/// the box's cells (safe to count and scatter) for any other.
template <uint32_t D>
[[gnu::always_inline]] inline uint32_t guessed_box_index(int32_t wx, int32_t wy, int32_t wz, int32_t gx, int32_t gy,
                                                         int32_t gz, uint32_t gex, uint32_t gey, uint32_t gez,
                                                         uint32_t gexy) {
    // Unsigned differences: a cell below the box wraps to a large value and
    // clamps to the box's last cell along that axis.
    uint32_t ux = static_cast<uint32_t>(wx) - static_cast<uint32_t>(gx);
    uint32_t uy = static_cast<uint32_t>(wy) - static_cast<uint32_t>(gy);
    ux = ux < gex ? ux : gex - 1;
    uy = uy < gey ? uy : gey - 1;
    uint32_t index = ux + gex * uy;
    if constexpr (D == 3) {
        uint32_t uz = static_cast<uint32_t>(wz) - static_cast<uint32_t>(gz);
        uz = uz < gez ? uz : gez - 1;
        index += gexy * uz;
    }
    return index;
}

/// Cell of every particle in [begin, end), written as the dense index
/// (bounded) or packed key (unbounded). Straight-line code the compiler
/// vectorizes: validity is accumulated as a bit, and a chunk with any invalid
/// particle is re-checked on the slow path. Returns true if all were valid.
template <uint32_t D, bool Bounded, bool Clamp, bool Radius, bool Guess>
[[gnu::always_inline]] inline bool key_block(const KeyParams& k, uint32_t begin, uint32_t end,
                                             uint32_t* __restrict particle_cell, uint64_t* __restrict particle_key,
                                             int32_t* __restrict box, uint32_t& wrapped) {
    uint32_t wraps = 0;
    int32_t lo_x = INT32_MAX, lo_y = INT32_MAX, lo_z = INT32_MAX;
    int32_t hi_x = INT32_MIN, hi_y = INT32_MIN, hi_z = INT32_MIN;
    const float* __restrict px = k.coord[0];
    const float* __restrict py = k.coord[1];
    const float* __restrict pz = D == 3 ? k.coord[2] : k.coord[0];
    const float* __restrict pr = Radius ? k.radius : k.coord[0];
    const double ox = k.lattice.origin[0], oy = k.lattice.origin[1], oz = k.lattice.origin[2];
    const double scale = k.lattice.scale, lo = k.lower;
    const double ux = k.upper[0], uy = k.upper[1], uz = k.upper[2];
    const uint32_t nx = k.lattice.n[0], nxy = k.lattice.n[0] * k.lattice.n[1];
    const float cell_size = k.lattice.cell_size;
    const int32_t gx = k.guess_lo[0], gy = k.guess_lo[1], gz = k.guess_lo[2];
    const uint32_t gex = k.guess_extent[0], gey = k.guess_extent[1], gez = k.guess_extent[2];
    const uint32_t gexy = gex * gey;
    uint32_t valid = 1;
    for (uint32_t i = begin; i < end; ++i) {
        const float vx = px[i], vy = py[i], vz = D == 3 ? pz[i] : 0.0f;
        const double tx = (static_cast<double>(vx) - ox) * scale;
        const double ty = (static_cast<double>(vy) - oy) * scale;
        const double tz = D == 3 ? (static_cast<double>(vz) - oz) * scale : 0.0;
        if constexpr (Bounded && Clamp) {
            valid &= static_cast<uint32_t>(vx - vx == 0.0f) & static_cast<uint32_t>(vy - vy == 0.0f) &
                     static_cast<uint32_t>(vz - vz == 0.0f);
        } else {
            // False for NaN and +-inf as well: the range is finite.
            valid &= static_cast<uint32_t>(tx >= lo) & static_cast<uint32_t>(tx < ux) &
                     static_cast<uint32_t>(ty >= lo) & static_cast<uint32_t>(ty < uy);
            if constexpr (D == 3) valid &= static_cast<uint32_t>(tz >= lo) & static_cast<uint32_t>(tz < uz);
        }
        if constexpr (Radius) {
            const float r = pr[i];
            valid &= static_cast<uint32_t>(r > 0.0f) & static_cast<uint32_t>(r * 2.0f <= cell_size);
        }
        const int32_t cx = floor_to_int(clamp_into(tx, lo, ux - 1.0));
        const int32_t cy = floor_to_int(clamp_into(ty, lo, uy - 1.0));
        const int32_t cz = D == 3 ? floor_to_int(clamp_into(tz, lo, uz - 1.0)) : 0;
        if constexpr (Bounded) {
            uint32_t linear = static_cast<uint32_t>(cx) + nx * static_cast<uint32_t>(cy);
            if constexpr (D == 3) linear += nxy * static_cast<uint32_t>(cz);
            particle_cell[i] = linear;
        } else {
            // Keys hold the cell modulo the period (a no-op within +-2^20
            // cells in 3D, +-2^30 in 2D).
            const int32_t wx = wrap_fast_cell<D>(cx);
            const int32_t wy = wrap_fast_cell<D>(cy);
            const int32_t wz = D == 3 ? wrap_fast_cell<D>(cz) : cz;
            wraps |=
                static_cast<uint32_t>(wx != cx) | static_cast<uint32_t>(wy != cy) | static_cast<uint32_t>(wz != cz);
            if constexpr (Guess)
                particle_cell[i] = guessed_box_index<D>(wx, wy, wz, gx, gy, gz, gex, gey, gez, gexy);
            else
                particle_key[i] = D == 3 ? pack_key3(wx, wy, wz) : pack_key2(wx, wy);
            lo_x = wx < lo_x ? wx : lo_x;
            lo_y = wy < lo_y ? wy : lo_y;
            lo_z = wz < lo_z ? wz : lo_z;
            hi_x = wx > hi_x ? wx : hi_x;
            hi_y = wy > hi_y ? wy : hi_y;
            hi_z = wz > hi_z ? wz : hi_z;
        }
    }
    wrapped = wraps;
    if constexpr (!Bounded) {
        box[0] = lo_x;
        box[1] = lo_y;
        box[2] = lo_z;
        box[3] = hi_x;
        box[4] = hi_y;
        box[5] = hi_z;
    }
    return valid != 0;
}

template <uint32_t D, bool Bounded, bool Clamp, bool Radius, bool Guess>
bool key_block_default(const KeyParams& k, uint32_t begin, uint32_t end, uint32_t* particle_cell,
                       uint64_t* particle_key, int32_t* box, uint32_t& wrapped) {
    return key_block<D, Bounded, Clamp, Radius, Guess>(k, begin, end, particle_cell, particle_key, box, wrapped);
}

#if HASHGRID_KERNELS_X86
// The same loop compiled for AVX2 (4 doubles per instruction): the same IEEE
// operations, so the same cells. Chosen at run time.
template <uint32_t D, bool Bounded, bool Clamp, bool Radius, bool Guess>
__attribute__((target("avx2"))) bool key_block_avx2(const KeyParams& k, uint32_t begin, uint32_t end,
                                                    uint32_t* particle_cell, uint64_t* particle_key, int32_t* box,
                                                    uint32_t& wrapped) {
    return key_block<D, Bounded, Clamp, Radius, Guess>(k, begin, end, particle_cell, particle_key, box, wrapped);
}
#endif

#if HASHGRID_KERNELS_NEON
// NEON: the cells of two particles at once (float64x2_t), the same IEEE
// operations as key_block: exact float -> double conversions, the subtraction
// and the product, clamp_into's two selects and floor_to_int's truncation and
// correction; the index, key and box of each lane then as key_block writes
// them. An odd last particle goes through key_block.
template <uint32_t D, bool Bounded, bool Clamp, bool Radius, bool Guess>
bool key_block_neon(const KeyParams& k, uint32_t begin, uint32_t end, uint32_t* particle_cell, uint64_t* particle_key,
                    int32_t* box, uint32_t& wrapped) {
    const float* px = k.coord[0];
    const float* py = k.coord[1];
    const float* pz = D == 3 ? k.coord[2] : k.coord[0];
    const float* pr = Radius ? k.radius : k.coord[0];
    const float64x2_t o[3] = {vdupq_n_f64(k.lattice.origin[0]), vdupq_n_f64(k.lattice.origin[1]),
                              vdupq_n_f64(k.lattice.origin[2])};
    const float64x2_t scale = vdupq_n_f64(k.lattice.scale);
    const float64x2_t lo = vdupq_n_f64(k.lower);
    const float64x2_t up[3] = {vdupq_n_f64(k.upper[0]), vdupq_n_f64(k.upper[1]), vdupq_n_f64(k.upper[2])};
    const float64x2_t up1[3] = {vdupq_n_f64(k.upper[0] - 1.0), vdupq_n_f64(k.upper[1] - 1.0),
                                vdupq_n_f64(k.upper[2] - 1.0)};
    const float32x2_t cell_size = vdup_n_f32(k.lattice.cell_size);
    const uint32_t nx = k.lattice.n[0], nxy = k.lattice.n[0] * k.lattice.n[1];
    const int32_t gx = k.guess_lo[0], gy = k.guess_lo[1], gz = k.guess_lo[2];
    const uint32_t gex = k.guess_extent[0], gey = k.guess_extent[1], gez = k.guess_extent[2];
    const uint32_t gexy = gex * gey;
    int32_t lo_c[3] = {INT32_MAX, INT32_MAX, INT32_MAX};
    int32_t hi_c[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
    uint32_t wraps = 0;
    uint64x2_t valid = vdupq_n_u64(~uint64_t{0});
    uint32_t i = begin;
    for (; end - i >= 2; i += 2) {
        const float* const p[3] = {px, py, pz};
        int64x2_t cell[3] = {vdupq_n_s64(0), vdupq_n_s64(0), vdupq_n_s64(0)};
        for (uint32_t a = 0; a < D; ++a) {
            const float32x2_t v = vld1_f32(p[a] + i);
            const float64x2_t t = vmulq_f64(vsubq_f64(vcvt_f64_f32(v), o[a]), scale);
            if constexpr (Bounded && Clamp) {
                const uint32x2_t finite = vceq_f32(vsub_f32(v, v), vdup_n_f32(0.0f));
                valid = vandq_u64(valid, vreinterpretq_u64_s64(vmovl_s32(vreinterpret_s32_u32(finite))));
            } else {
                valid = vandq_u64(valid, vandq_u64(vcgeq_f64(t, lo), vcltq_f64(t, up[a])));
            }
            float64x2_t c = vbslq_f64(vcgtq_f64(t, lo), t, lo);
            c = vbslq_f64(vcltq_f64(c, up1[a]), c, up1[a]);
            const int64x2_t whole = vcvtq_s64_f64(c);
            // floor_to_int: one less where the truncation lies above (all-ones adds -1).
            cell[a] = vaddq_s64(whole, vreinterpretq_s64_u64(vcgtq_f64(vcvtq_f64_s64(whole), c)));
        }
        if constexpr (Radius) {
            const float32x2_t r = vld1_f32(pr + i);
            const uint32x2_t ok =
                vand_u32(vcgt_f32(r, vdup_n_f32(0.0f)), vcle_f32(vmul_f32(r, vdup_n_f32(2.0f)), cell_size));
            valid = vandq_u64(valid, vreinterpretq_u64_s64(vmovl_s32(vreinterpret_s32_u32(ok))));
        }
        const int32x2_t cx2 = vmovn_s64(cell[0]), cy2 = vmovn_s64(cell[1]), cz2 = vmovn_s64(cell[2]);
        int32_t cx[2], cy[2], cz[2];
        vst1_s32(cx, cx2);
        vst1_s32(cy, cy2);
        vst1_s32(cz, cz2);
        for (uint32_t l = 0; l < 2; ++l) {
            if constexpr (Bounded) {
                uint32_t linear = static_cast<uint32_t>(cx[l]) + nx * static_cast<uint32_t>(cy[l]);
                if constexpr (D == 3) linear += nxy * static_cast<uint32_t>(cz[l]);
                particle_cell[i + l] = linear;
            } else {
                const int32_t w[3] = {wrap_fast_cell<D>(cx[l]), wrap_fast_cell<D>(cy[l]),
                                      D == 3 ? wrap_fast_cell<D>(cz[l]) : cz[l]};
                wraps |= static_cast<uint32_t>(w[0] != cx[l]) | static_cast<uint32_t>(w[1] != cy[l]) |
                         static_cast<uint32_t>(w[2] != cz[l]);
                if constexpr (Guess)
                    particle_cell[i + l] = guessed_box_index<D>(w[0], w[1], w[2], gx, gy, gz, gex, gey, gez, gexy);
                else
                    particle_key[i + l] = D == 3 ? pack_key3(w[0], w[1], w[2]) : pack_key2(w[0], w[1]);
                for (uint32_t a = 0; a < 3; ++a) {
                    lo_c[a] = w[a] < lo_c[a] ? w[a] : lo_c[a];
                    hi_c[a] = w[a] > hi_c[a] ? w[a] : hi_c[a];
                }
            }
        }
    }
    bool ok = (vgetq_lane_u64(valid, 0) & vgetq_lane_u64(valid, 1)) != 0;
    if (i < end) {
        int32_t tail_box[6] = {};
        uint32_t tail_wrapped = 0;
        ok = key_block<D, Bounded, Clamp, Radius, Guess>(k, i, end, particle_cell, particle_key, tail_box,
                                                         tail_wrapped) &&
             ok;
        wraps |= tail_wrapped;
        if constexpr (!Bounded) {
            for (uint32_t a = 0; a < 3; ++a) {
                lo_c[a] = tail_box[a] < lo_c[a] ? tail_box[a] : lo_c[a];
                hi_c[a] = tail_box[3 + a] > hi_c[a] ? tail_box[3 + a] : hi_c[a];
            }
        }
    }
    wrapped = wraps;
    if constexpr (!Bounded) {
        for (uint32_t a = 0; a < 3; ++a) {
            box[a] = lo_c[a];
            box[3 + a] = hi_c[a];
        }
    }
    return ok;
}
#endif

/// The key block's signature, one function per instruction set.
using KeyBlock = bool (*)(const KeyParams&, uint32_t, uint32_t, uint32_t*, uint64_t*, int32_t*, uint32_t&);

/// The key block's versions for one configuration, picked by set_pair_kernel
/// like the other kernels (kernel_dispatch.h).
template <uint32_t D, bool Bounded, bool Clamp, bool Radius, bool Guess>
struct KeyBlocks {
    static constexpr KeyBlock scalar = &key_block_default<D, Bounded, Clamp, Radius, Guess>;
#if HASHGRID_KERNELS_X86
    static constexpr KeyBlock avx2 = &key_block_avx2<D, Bounded, Clamp, Radius, Guess>;
#endif
#if HASHGRID_KERNELS_NEON
    static constexpr KeyBlock neon = &key_block_neon<D, Bounded, Clamp, Radius, Guess>;
#endif
    static constexpr kernel_dispatch::Widths<KeyBlock> versions() {
        return {&scalar, nullptr, HASHGRID_X86_TABLE(&avx2), HASHGRID_NEON_TABLE(&neon)};
    }
};

/// The checked path over [begin, end), for a chunk the fast block reported:
/// invalid particles, or (unbounded) coordinates beyond the fast formula's
/// range. Unbounded: every key and the chunk's box come from here. Counts the
/// invalid particles into `record`, naming the first.
template <uint32_t D, bool Bounded, bool Guess>
void recheck_chunk(const KeyParams& k, uint32_t begin, uint32_t end, uint32_t* particle_cell, uint64_t* particle_key,
                   int32_t* chunk_box, BadParticle& record) {
    if constexpr (!Bounded) {
        for (uint32_t d = 0; d < 3; ++d) {
            chunk_box[d] = INT32_MAX;
            chunk_box[3 + d] = INT32_MIN;
        }
    }
    for (uint32_t i = begin; i < end; ++i) {
        int32_t c[3] = {0, 0, 0};
        const StatusCode code = cell_checked<D, Bounded>(k, i, c, record.wrapped);
        if (code == StatusCode::ok) {
            if constexpr (!Bounded) {
                if constexpr (Guess)
                    particle_cell[i] = guessed_box_index<D>(c[0], c[1], c[2], k.guess_lo[0], k.guess_lo[1],
                                                            k.guess_lo[2], k.guess_extent[0], k.guess_extent[1],
                                                            k.guess_extent[2], k.guess_extent[0] * k.guess_extent[1]);
                else
                    particle_key[i] = D == 3 ? pack_key3(c[0], c[1], c[2]) : pack_key2(c[0], c[1]);
                for (uint32_t d = 0; d < 3; ++d) {
                    chunk_box[d] = c[d] < chunk_box[d] ? c[d] : chunk_box[d];
                    chunk_box[3 + d] = c[d] > chunk_box[3 + d] ? c[d] : chunk_box[3 + d];
                }
            }
            continue;
        }
        if (record.count++ == 0) {
            record.index = i;
            record.code = code;
        }
    }
}

/// Key pass over every chunk: the fast block, the checked path where the
/// block reported a problem, and the bucket counts (bounded, or unbounded
/// guessing last frame's box); one validation record per chunk.
template <uint32_t D, bool Bounded, bool Clamp, bool Radius, bool Guess>
void key_pass(const RebuildFrame& f, GridState& s, const ThreadBackend& b) {
    const KeyParams& k = f.keys;
    const uint32_t grain = f.grain;
    const uint32_t buckets = f.buckets_max;
    const uint32_t shift = Guess ? k.guess_shift : f.shift;
    uint32_t* const particle_cell = s.particle_cell;
    uint64_t* const particle_key = s.particle_key;
    int32_t* const box = s.chunk_box;
    uint32_t* const hist = s.bucket_hist;
    BadParticle* const bad = s.bad;
    const KeyBlock block = kernel_dispatch::active_table(KeyBlocks<D, Bounded, Clamp, Radius, Guess>::versions());
    parallel_chunks(b, f.n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const uint32_t chunk = begin / grain;
        int32_t* chunk_box = box + uint64_t{chunk} * 6;
        uint32_t fast_wrapped = 0;
        const bool ok = block(k, begin, end, particle_cell, particle_key, chunk_box, fast_wrapped);
        BadParticle record{kNone, 0, StatusCode::ok, fast_wrapped != 0};
        if (!ok) recheck_chunk<D, Bounded, Guess>(k, begin, end, particle_cell, particle_key, chunk_box, record);
        if ((Bounded || Guess) && k.count)
            count_buckets(particle_cell, begin, end, shift, hist + uint64_t{chunk} * buckets, buckets);
        bad[chunk] = record;
    });
}

template <uint32_t D, bool Bounded, bool Clamp, bool Radius>
void key_pass_guessing(const RebuildFrame& f, GridState& s, const ThreadBackend& b) {
    if (!Bounded && f.keys.guess)
        key_pass<D, Bounded, Clamp, Radius, !Bounded>(f, s, b);
    else
        key_pass<D, Bounded, Clamp, Radius, false>(f, s, b);
}

template <uint32_t D, bool Bounded>
void key_pass_for(const RebuildFrame& f, GridState& s, const ThreadBackend& b) {
    const bool radius = f.keys.radius != nullptr;
    if (Bounded && f.keys.lattice.clamp) {
        if (radius)
            key_pass<D, Bounded, true, true, false>(f, s, b);
        else
            key_pass<D, Bounded, true, false, false>(f, s, b);
    } else {
        if (radius)
            key_pass_guessing<D, Bounded, false, true>(f, s, b);
        else
            key_pass_guessing<D, Bounded, false, false>(f, s, b);
    }
}

Status first_bad(const BadParticle* bad, uint32_t chunks) {
    Status s;
    for (uint32_t c = 0; c < chunks; ++c) {
        if (bad[c].count == 0) continue;
        if (s.ok()) {
            s.code = bad[c].code;
            s.index = bad[c].index;
        }
        s.count += bad[c].count;
    }
    switch (s.code) {
    case StatusCode::invalid_position:
        s.message = "particle coordinate is NaN or infinite";
        break;
    case StatusCode::position_out_of_range:
        s.message = "particle outside the bounded world";
        break;
    case StatusCode::invalid_radius:
        s.message = "particle radius is <= 0, NaN or infinite";
        break;
    case StatusCode::radius_too_large:
        s.message = "2 * radius > cell_size: raise GridConfig::cell_size";
        break;
    default:
        break;
    }
    return s;
}

} // namespace

namespace {

void run_key_pass(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    if (f.dims == 3) {
        if (f.bounded)
            key_pass_for<3, true>(f, s, b);
        else
            key_pass_for<3, false>(f, s, b);
    } else {
        if (f.bounded)
            key_pass_for<2, true>(f, s, b);
        else
            key_pass_for<2, false>(f, s, b);
    }
}

/// Whether the frame's dense box is the one the key pass guessed.
bool guess_held(const GridState& s, RebuildFrame& f) {
    if (f.n == 0) return false;
    find_dense_box(s, f);
    bool held = f.dense;
    for (uint32_t d = 0; d < 3; ++d)
        held = held && f.box_lo[d] == f.keys.guess_lo[d] && f.extent[d] == f.keys.guess_extent[d];
    return held;
}

} // namespace

Status compute_keys(GridState& s, RebuildFrame& f, const ThreadBackend& b) {
    run_key_pass(s, f, b);
    const uint32_t chunks = f.chunks;
    const Status invalid = first_bad(s.bad, chunks);
    if (!invalid.ok()) return invalid;
    if (f.keys.guess && !guess_held(s, f)) {
        // Another box: the keys were not written. The same input again,
        // so the same validation result.
        f.keys.guess = false;
        run_key_pass(s, f, b);
    }
    bool wrapped = false;
    for (uint32_t ch = 0; ch < chunks; ++ch)
        wrapped = wrapped || s.bad[ch].wrapped;
    f.wrapped = wrapped;
    return {};
}

} // namespace hashgrid::detail

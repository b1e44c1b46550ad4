// SPDX-License-Identifier: MIT
// BoxGrid::rebuild, step 1: validate each box and compute its cell range
// (box_grid_rebuild.cpp has the steps). Boxes go in blocks of 64, one word of
// the change bitmaps: a block is evaluated ahead without a branch per box
// (which boxes changed; then cells and bounds, vectorized, in the instruction
// set of the library's one kernel choice, active_pair_kernel). A block where
// nothing changed since the last frame is counted from its BlockSummary when
// the last frame's are kept, else from its records; when every box of a
// block is valid and in range the per-box pass only copies and compares. A
// block with a bad, far or out-of-range box is checked box by box, which
// names the lowest offending box and marks far boxes.
#include "box/box_grid_internal.h"
#include "box/box_rebuild_steps.h"
#include "kernels/kernel_dispatch.h"

#include "hashgrid/kernels.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>

namespace hashgrid::detail {

namespace {

/// Objects per block of validation: one word of the change bitmaps.
constexpr uint32_t kCellBlock = 64;
static_assert(kCellBlock == 64, "a block's small objects are one 64-bit mask");
/// Lanes of the blocks' float minimum and maximum (a fixed order of
/// reduction: the same result on every platform).
constexpr uint32_t kBoundLanes = 8;

/// What cell_block found: every box bit-identical to the previous frame's
/// (nothing else computed), every box valid and in range (cells and bounds
/// computed), or some box to check one by one.
enum class BlockKind : uint8_t { unchanged, valid, check };

/// One block of boxes, evaluated ahead of the per-object pass: the cell
/// ranges, which boxes differ from the previous frame, and the bounds the
/// block would add to its chunk if all its boxes were small.
struct CellBlock {
    float min[3][kCellBlock]; // the boxes, copied (the per-object pass reads them here)
    float max[3][kCellBlock];
    int32_t lo[3][kCellBlock];
    int32_t hi[3][kCellBlock];
    uint8_t changed[kCellBlock]; // with a previous frame: the box differs from it bit for bit
    int32_t cell_lo[3];
    int32_t cell_hi[3];
    int32_t span[3];
    float box_lo[3];
    float box_hi[3];
};

/// lane_extreme's end: the kBoundLanes lanes lane by lane, then v[k, count).
template <bool Max>
[[gnu::always_inline]] inline float lane_finish(const float* lane, const float* __restrict v, uint32_t k,
                                                uint32_t count) {
    float m = lane[0];
    for (uint32_t j = 1; j < kBoundLanes; ++j)
        m = (Max ? m < lane[j] : lane[j] < m) ? lane[j] : m;
    for (; k < count; ++k)
        m = (Max ? m < v[k] : v[k] < m) ? v[k] : m;
    return m;
}

/// Smallest (Max: largest) of v[0, count) as a sequence of `x < m ? x : m`
/// (`m < x ? x : m`) steps in kBoundLanes lanes, then lane by lane.
template <bool Max>
[[gnu::always_inline]] inline float lane_extreme(const float* __restrict v, uint32_t count) {
    float lane[kBoundLanes];
    for (uint32_t j = 0; j < kBoundLanes; ++j)
        lane[j] = v[j < count ? j : 0];
    uint32_t k = kBoundLanes;
    for (; k + kBoundLanes <= count; k += kBoundLanes)
        for (uint32_t j = 0; j < kBoundLanes; ++j)
            lane[j] = (Max ? lane[j] < v[k + j] : v[k + j] < lane[j]) ? v[k + j] : lane[j];
    return lane_finish<Max>(lane, v, k, count);
}

/// Unites a cell range, a box and a widest span into the bounds of `into`
/// (a block's BlockSummary or a chunk's ObjectChunk); `first`: `into` holds
/// no small object yet, so its box is taken as is.
template <uint32_t D, typename Bounds>
void unite_bounds(Bounds& into, bool first, const int32_t* lo, const int32_t* hi, const float* min, const float* max,
                  const int32_t* span) {
    for (uint32_t d = 0; d < D; ++d) {
        into.cell_lo[d] = std::min(into.cell_lo[d], lo[d]);
        into.cell_hi[d] = std::max(into.cell_hi[d], hi[d]);
        into.box_lo[d] = first ? min[d] : std::min(into.box_lo[d], min[d]);
        into.box_hi[d] = first ? max[d] : std::max(into.box_hi[d], max[d]);
        into.span[d] = std::max(into.span[d], span[d]);
    }
}

/// Fills `out` for boxes [begin, begin + count), 0 < count <= kCellBlock,
/// without a branch per box, so that the compiler vectorizes the loops (and
/// an AVX2 copy runs when active_pair_kernel() is avx2: the same IEEE
/// operations, the same cells; cell_block_neon is its NEON copy). `previous` (null: none) are the previous frame's
/// boxes, compared bit for bit first: a block where none changed is `unchanged` and nothing else is computed. Else
/// `valid` when every box of the block is finite, ordered and inside the lattice's range on every axis: then each cell
/// is AxisCells::cell's (min <= max makes the scaled min <= the scaled max, so testing the min against the lower end
/// and the max against the upper covers both); otherwise `check`: the caller checks the block box by box. The clamp
/// keeps the integer conversion defined for any input; inside the range it changes no cell (the ends are integers).
template <uint32_t D>
[[gnu::always_inline]] inline BlockKind
cell_block(const float* const* lows, const float* const* highs, const float* const* previous_lows,
           const float* const* previous_highs, const AxisCells* axis, uint32_t begin, uint32_t count, CellBlock& out) {
    uint32_t differ[kCellBlock] = {};
    if (previous_lows != nullptr) {
        for (uint32_t d = 0; d < D; ++d) {
            const float* __restrict low = lows[d] + begin;
            const float* __restrict high = highs[d] + begin;
            const float* __restrict was_low = previous_lows[d] + begin;
            const float* __restrict was_high = previous_highs[d] + begin;
            for (uint32_t k = 0; k < count; ++k)
                differ[k] |=
                    (float_bits(low[k]) ^ float_bits(was_low[k])) | (float_bits(high[k]) ^ float_bits(was_high[k]));
        }
        uint32_t any = 0;
        for (uint32_t k = 0; k < count; ++k)
            any |= differ[k];
        if (any == 0) return BlockKind::unchanged;
    }
    for (uint32_t k = 0; k < count; ++k)
        out.changed[k] = differ[k] != 0 ? 1 : 0;
    uint32_t valid = 1;
    for (uint32_t d = 0; d < D; ++d) {
        const float* __restrict low = lows[d] + begin;
        const float* __restrict high = highs[d] + begin;
        float* __restrict box_min = out.min[d];
        float* __restrict box_max = out.max[d];
        int32_t* __restrict cell_lo = out.lo[d];
        int32_t* __restrict cell_hi = out.hi[d];
        const double origin = axis[d].origin;
        const double scale = axis[d].scale;
        const double lower = axis[d].lower;
        const double upper = axis[d].upper;
        const double last = upper - 1.0;
        int32_t lo_min = INT32_MAX, hi_max = INT32_MIN, span = 0;
        for (uint32_t k = 0; k < count; ++k) {
            const double t_lo = (static_cast<double>(low[k]) - origin) * scale;
            const double t_hi = (static_cast<double>(high[k]) - origin) * scale;
            valid &= static_cast<uint32_t>(t_lo >= lower) & static_cast<uint32_t>(t_hi < upper) &
                     static_cast<uint32_t>(low[k] <= high[k]);
            const int32_t a = floor_to_int(clamp_into(t_lo, lower, last));
            const int32_t z = floor_to_int(clamp_into(t_hi, lower, last));
            box_min[k] = low[k];
            box_max[k] = high[k];
            cell_lo[k] = a;
            cell_hi[k] = z;
            lo_min = a < lo_min ? a : lo_min;
            hi_max = z > hi_max ? z : hi_max;
            // Wraps (defined) for boxes the block rejects; exact for valid ones.
            const auto width = static_cast<int32_t>(static_cast<uint32_t>(z) - static_cast<uint32_t>(a));
            span = width > span ? width : span;
        }
        out.cell_lo[d] = lo_min;
        out.cell_hi[d] = hi_max;
        out.span[d] = span;
        out.box_lo[d] = lane_extreme<false>(low, count);
        out.box_hi[d] = lane_extreme<true>(high, count);
    }
    return valid != 0 ? BlockKind::valid : BlockKind::check;
}

/// A cell_block compiled for one instruction set (all give the same bytes).
using CellBlockFn = BlockKind (*)(const float* const*, const float* const*, const float* const*, const float* const*,
                                  const AxisCells*, uint32_t, uint32_t, CellBlock&);

template <uint32_t D>
BlockKind cell_block_default(const float* const* lows, const float* const* highs, const float* const* previous_lows,
                             const float* const* previous_highs, const AxisCells* axis, uint32_t begin, uint32_t count,
                             CellBlock& out) {
    return cell_block<D>(lows, highs, previous_lows, previous_highs, axis, begin, count, out);
}

#if HASHGRID_KERNELS_X86
template <uint32_t D>
__attribute__((target("avx2"))) BlockKind cell_block_avx2(const float* const* lows, const float* const* highs,
                                                          const float* const* previous_lows,
                                                          const float* const* previous_highs, const AxisCells* axis,
                                                          uint32_t begin, uint32_t count, CellBlock& out) {
    return cell_block<D>(lows, highs, previous_lows, previous_highs, axis, begin, count, out);
}
#endif

#if HASHGRID_KERNELS_NEON
/// lane_extreme with its kBoundLanes lanes in two NEON registers: the same
/// `x < m ? x : m` steps as compare and select (vminq/vmaxq treat NaN
/// otherwise), then the same lane by lane finish.
template <bool Max>
inline float lane_extreme_neon(const float* __restrict v, uint32_t count) {
    static_assert(kBoundLanes == 8, "two float32x4 registers");
    float lane[kBoundLanes];
    for (uint32_t j = 0; j < kBoundLanes; ++j)
        lane[j] = v[j < count ? j : 0];
    float32x4_t a = vld1q_f32(lane);
    float32x4_t b = vld1q_f32(lane + 4);
    uint32_t k = kBoundLanes;
    for (; k + kBoundLanes <= count; k += kBoundLanes) {
        const float32x4_t x = vld1q_f32(v + k);
        const float32x4_t y = vld1q_f32(v + k + 4);
        a = vbslq_f32(Max ? vcltq_f32(a, x) : vcltq_f32(x, a), x, a);
        b = vbslq_f32(Max ? vcltq_f32(b, y) : vcltq_f32(y, b), y, b);
    }
    vst1q_f32(lane, a);
    vst1q_f32(lane + 4, b);
    return lane_finish<Max>(lane, v, k, count);
}

/// floor_to_int(clamp_into(t, lower, last)) of two lanes: clamp_into's
/// compare and select (NaN becomes lower), then a conversion rounding toward
/// minus infinity, which on the clamped range is floor_to_int's floor.
inline int32x2_t clamped_floor_neon(float64x2_t t, float64x2_t lower, float64x2_t last) {
    t = vbslq_f64(vcgtq_f64(t, lower), t, lower);
    t = vbslq_f64(vcltq_f64(t, last), t, last);
    return vmovn_s64(vcvtmq_s64_f64(t));
}

/// cell_block's comparison with the previous frame, four boxes a step:
/// differ[k] becomes nonzero where box k differs bit for bit.
template <uint32_t D>
inline void differ_neon(const float* const* lows, const float* const* highs, const float* const* previous_lows,
                        const float* const* previous_highs, uint32_t begin, uint32_t count, uint32_t* differ) {
    for (uint32_t d = 0; d < D; ++d) {
        const float* low = lows[d] + begin;
        const float* high = highs[d] + begin;
        const float* was_low = previous_lows[d] + begin;
        const float* was_high = previous_highs[d] + begin;
        uint32_t k = 0;
        for (; k + 4 <= count; k += 4) {
            const uint32x4_t x =
                veorq_u32(vreinterpretq_u32_f32(vld1q_f32(low + k)), vreinterpretq_u32_f32(vld1q_f32(was_low + k)));
            const uint32x4_t y =
                veorq_u32(vreinterpretq_u32_f32(vld1q_f32(high + k)), vreinterpretq_u32_f32(vld1q_f32(was_high + k)));
            vst1q_u32(differ + k, vorrq_u32(vld1q_u32(differ + k), vorrq_u32(x, y)));
        }
        for (; k < count; ++k)
            differ[k] |=
                (float_bits(low[k]) ^ float_bits(was_low[k])) | (float_bits(high[k]) ^ float_bits(was_high[k]));
    }
}

/// cell_block in NEON intrinsics, four boxes a step (two doubles per
/// register), the rest as cell_block: the same IEEE operations in the same
/// order, the same cells, kinds and bounds.
template <uint32_t D>
BlockKind cell_block_neon(const float* const* lows, const float* const* highs, const float* const* previous_lows,
                          const float* const* previous_highs, const AxisCells* axis, uint32_t begin, uint32_t count,
                          CellBlock& out) {
    uint32_t differ[kCellBlock] = {};
    if (previous_lows != nullptr) {
        differ_neon<D>(lows, highs, previous_lows, previous_highs, begin, count, differ);
        uint32_t any = 0;
        for (uint32_t k = 0; k < count; ++k)
            any |= differ[k];
        if (any == 0) return BlockKind::unchanged;
    }
    for (uint32_t k = 0; k < count; ++k)
        out.changed[k] = differ[k] != 0 ? 1 : 0;
    uint32_t valid = 1;
    for (uint32_t d = 0; d < D; ++d) {
        const float* low = lows[d] + begin;
        const float* high = highs[d] + begin;
        const double origin = axis[d].origin;
        const double scale = axis[d].scale;
        const double lower = axis[d].lower;
        const double upper = axis[d].upper;
        const double last = upper - 1.0;
        const float64x2_t origin2 = vdupq_n_f64(origin), scale2 = vdupq_n_f64(scale);
        const float64x2_t lower2 = vdupq_n_f64(lower), upper2 = vdupq_n_f64(upper), last2 = vdupq_n_f64(last);
        int32x4_t lo_min4 = vdupq_n_s32(INT32_MAX), hi_max4 = vdupq_n_s32(INT32_MIN), span4 = vdupq_n_s32(0);
        uint32x4_t ok = vdupq_n_u32(~0u);
        uint32_t k = 0;
        for (; k + 4 <= count; k += 4) {
            const float32x4_t l = vld1q_f32(low + k);
            const float32x4_t h = vld1q_f32(high + k);
            const float64x2_t tl0 = vmulq_f64(vsubq_f64(vcvt_f64_f32(vget_low_f32(l)), origin2), scale2);
            const float64x2_t tl1 = vmulq_f64(vsubq_f64(vcvt_high_f64_f32(l), origin2), scale2);
            const float64x2_t th0 = vmulq_f64(vsubq_f64(vcvt_f64_f32(vget_low_f32(h)), origin2), scale2);
            const float64x2_t th1 = vmulq_f64(vsubq_f64(vcvt_high_f64_f32(h), origin2), scale2);
            const uint32x4_t in_lo = vcombine_u32(vmovn_u64(vcgeq_f64(tl0, lower2)), vmovn_u64(vcgeq_f64(tl1, lower2)));
            const uint32x4_t in_hi = vcombine_u32(vmovn_u64(vcltq_f64(th0, upper2)), vmovn_u64(vcltq_f64(th1, upper2)));
            ok = vandq_u32(ok, vandq_u32(vandq_u32(in_lo, in_hi), vcleq_f32(l, h)));
            const int32x4_t a =
                vcombine_s32(clamped_floor_neon(tl0, lower2, last2), clamped_floor_neon(tl1, lower2, last2));
            const int32x4_t z =
                vcombine_s32(clamped_floor_neon(th0, lower2, last2), clamped_floor_neon(th1, lower2, last2));
            vst1q_f32(out.min[d] + k, l);
            vst1q_f32(out.max[d] + k, h);
            vst1q_s32(out.lo[d] + k, a);
            vst1q_s32(out.hi[d] + k, z);
            lo_min4 = vminq_s32(lo_min4, a);
            hi_max4 = vmaxq_s32(hi_max4, z);
            span4 = vmaxq_s32(span4, vsubq_s32(z, a)); // wraps as cell_block's width does
        }
        valid &= vminvq_u32(ok) != 0 ? 1u : 0u;
        int32_t lo_min = vminvq_s32(lo_min4), hi_max = vmaxvq_s32(hi_max4), span = vmaxvq_s32(span4);
        for (; k < count; ++k) {
            const double t_lo = (static_cast<double>(low[k]) - origin) * scale;
            const double t_hi = (static_cast<double>(high[k]) - origin) * scale;
            valid &= static_cast<uint32_t>(t_lo >= lower) & static_cast<uint32_t>(t_hi < upper) &
                     static_cast<uint32_t>(low[k] <= high[k]);
            const int32_t a = floor_to_int(clamp_into(t_lo, lower, last));
            const int32_t z = floor_to_int(clamp_into(t_hi, lower, last));
            out.min[d][k] = low[k];
            out.max[d][k] = high[k];
            out.lo[d][k] = a;
            out.hi[d][k] = z;
            lo_min = a < lo_min ? a : lo_min;
            hi_max = z > hi_max ? z : hi_max;
            const auto width = static_cast<int32_t>(static_cast<uint32_t>(z) - static_cast<uint32_t>(a));
            span = width > span ? width : span;
        }
        out.cell_lo[d] = lo_min;
        out.cell_hi[d] = hi_max;
        out.span[d] = span;
        out.box_lo[d] = lane_extreme_neon<false>(low, count);
        out.box_hi[d] = lane_extreme_neon<true>(high, count);
    }
    return valid != 0 ? BlockKind::valid : BlockKind::check;
}
#endif

/// The cell_block of each width this build has: AVX2 and NEON their own,
/// scalar and SSE2 the default build (SSE2 on x86-64), picked by
/// kernel_dispatch.h from the library's one kernel choice.
template <uint32_t D>
constexpr CellBlockFn kDefaultBlock = &cell_block_default<D>;
#if HASHGRID_KERNELS_X86
template <uint32_t D>
constexpr CellBlockFn kAvx2Block = &cell_block_avx2<D>;
#endif
#if HASHGRID_KERNELS_NEON
template <uint32_t D>
constexpr CellBlockFn kNeonBlock = &cell_block_neon<D>;
#endif

template <uint32_t D>
constexpr kernel_dispatch::Widths<CellBlockFn> kBlockWidths{
    &kDefaultBlock<D>, nullptr, HASHGRID_X86_TABLE(&kAvx2Block<D>), HASHGRID_NEON_TABLE(&kNeonBlock<D>)};

/// One chunk of step 1: its ObjectChunk, the BlockSummary of the block being
/// evaluated and that block's words of the change bitmaps. Blocks are
/// evaluated in ascending order; each step below handles one block kind and
/// ends the block (end_block), so the chunk's sums are in block order.
template <uint32_t D, bool Compare>
struct ChunkPass {
    BoxState& s;
    const float* const* lows;
    const float* const* highs;
    const AxisCells* axis;
    uint64_t large_cells;
    bool bounded;
    ObjectChunk chunk{}; // box_lo/hi 0 and span 0 on unused axes
    BlockSummary sum{};
    bool chunk_small = false; // chunk's bounds hold a small object
    // The block's words of the change bitmaps (a block is one word), stored
    // once at its end rather than updated in memory per object.
    uint64_t moved_word = 0;
    uint64_t leaving_word = 0;

    ChunkPass(BoxState& state, const float* const* l, const float* const* h, const AxisCells* a, uint64_t large,
              bool is_bounded)
        : s(state), lows(l), highs(h), axis(a), large_cells(large), bounded(is_bounded) {
        chunk.bad = BadParticle{kNone, 0, StatusCode::ok};
        for (uint32_t d = 0; d < 3; ++d) {
            chunk.cell_lo[d] = INT32_MAX;
            chunk.cell_hi[d] = INT32_MIN;
        }
    }

    void add_bounds(const int32_t* lo, const int32_t* hi, const float* min, const float* max, const int32_t* span) {
        unite_bounds<D>(sum, sum.any_small == 0, lo, hi, min, max, span);
        sum.any_small = 1;
    }

    void add_small(const ObjectScratch& o, uint64_t covered) {
        sum.entries += covered;
        const int32_t span[3] = {o.hi[0] - o.lo[0], o.hi[1] - o.lo[1], o.hi[2] - o.lo[2]};
        add_bounds(o.lo, o.hi, o.min, o.max, span);
    }

    void start_block() {
        sum = BlockSummary{};
        for (uint32_t d = 0; d < 3; ++d) {
            sum.cell_lo[d] = INT32_MAX;
            sum.cell_hi[d] = INT32_MIN;
        }
    }

    /// Adds the block's sum into the chunk; `keep`: stores it in
    /// s.block_summary, which the next compared frame reads for this block
    /// when it is unchanged. With Compare, stores the block's bitmap words.
    void end_block(uint32_t first, bool keep) {
        if (keep) s.block_summary[first / kCellBlock] = sum;
        if constexpr (Compare) {
            s.change.moved[first / 64] = moved_word;
            s.change.leaving[first / 64] = leaving_word;
            moved_word = leaving_word = 0;
        }
        chunk.entries += sum.entries;
        chunk.large += sum.large;
        if (sum.any_small == 0) return;
        unite_bounds<D>(chunk, !chunk_small, sum.cell_lo, sum.cell_hi, sum.box_lo, sum.box_hi, sum.span);
        chunk_small = true;
    }

    /// Compare only: what object i, whose cell range is now `o`'s, did against
    /// the previous frame's `old_lo`/`old_hi`. Writes the block's moved and
    /// leaving bits and the chunk's moved/added/removed (the merge path's
    /// input) or large_changed (which forces the full sort).
    void record_change(uint32_t i, const ObjectScratch& o, const int32_t* old_lo, const int32_t* old_hi, bool large,
                       bool was_large, uint64_t covered) {
        bool same = true;
        for (uint32_t d = 0; d < D; ++d)
            same = same & (o.lo[d] == old_lo[d]) & (o.hi[d] == old_hi[d]);
        const uint64_t bit = uint64_t{1} << (i & 63);
        moved_word |= bit;
        if (large != was_large) {
            ++chunk.large_changed; // a full build follows
        } else if (!large && !same) {
            leaving_word |= bit;
            ++chunk.moved;
            chunk.added += covered;
            ObjectScratch old = o;
            for (uint32_t d = 0; d < 3; ++d) {
                old.lo[d] = old_lo[d];
                old.hi[d] = old_hi[d];
            }
            chunk.removed += cells_covered(old);
        }
    }

    /// Compared frames only: a block whose every box is bit-identical to the
    /// previous frame's (validated then; the records and s.is_large still hold
    /// it). Reads the previous summary when `summaries`, else the records;
    /// writes no record, only the sums (and the summary again when recounted)
    /// and zero change bits, so that a merge leaves its objects in place.
    void unchanged_block(uint32_t first, uint32_t count, bool summaries) {
        if (summaries) {
            sum = s.block_summary[first / kCellBlock];
            end_block(first, false);
            return;
        }
        const ObjectRecord<D>* __restrict objects = object_records<D>(s);
        start_block();
        for (uint32_t i = first; i < first + count; ++i) {
            if (s.is_large[i] != 0)
                ++sum.large;
            else {
                const ObjectScratch o = unpack<D>(objects[i]);
                add_small(o, cells_covered(o));
            }
        }
        end_block(first, true);
    }

    /// The bounds of a `valid` block's small objects (bit j of `small`):
    /// cell_block's own bounds when all `count` are small, else object by
    /// object. The full sort sizes its dense box from them; they become the
    /// frame's BoxFrameBounds, which queries and listed rebuilds start from.
    void add_valid_bounds(const CellBlock& block, uint64_t small, uint32_t count) {
        const uint64_t all = count == kCellBlock ? ~uint64_t{0} : (uint64_t{1} << count) - 1;
        if (small == all) {
            add_bounds(block.cell_lo, block.cell_hi, block.box_lo, block.box_hi, block.span);
            return;
        }
        for (uint64_t bits = small; bits != 0; bits &= bits - 1) {
            const auto j = static_cast<uint32_t>(std::countr_zero(bits));
            int32_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, span[3] = {0, 0, 0};
            float min[3] = {0, 0, 0}, max[3] = {0, 0, 0};
            for (uint32_t d = 0; d < D; ++d) {
                lo[d] = block.lo[d][j];
                hi[d] = block.hi[d][j];
                span[d] = hi[d] - lo[d];
                min[d] = block.min[d][j];
                max[d] = block.max[d][j];
            }
            add_bounds(lo, hi, min, max, span);
        }
    }

    /// A block whose every box is valid and in range: cells and boxes come
    /// from cell_block. Writes the records of the boxes that changed (all,
    /// without Compare: the full sort reads them), their change bits (the
    /// merge reads them), and the sums.
    void valid_block(const CellBlock& block, uint32_t first, uint32_t count) {
        ObjectRecord<D>* __restrict objects = object_records<D>(s);
        start_block();
        uint64_t small = 0;
        for (uint32_t j = 0; j < count; ++j) {
            const uint32_t i = first + j;
            uint64_t covered = 1;
            for (uint32_t d = 0; d < D; ++d)
                covered *= static_cast<uint64_t>(int64_t{block.hi[d][j]} - block.lo[d][j] + 1);
            const bool large = covered > large_cells;
            const bool was_large = Compare && s.is_large[i] != 0;
            if (Compare && block.changed[j] == 0) { // validated last frame, the same cells
                if (was_large) {
                    ++sum.large;
                } else {
                    sum.entries += covered;
                    small |= uint64_t{1} << j;
                }
                continue;
            }
            ObjectRecord<D>& record = objects[i];
            ObjectScratch o{};
            int32_t old_lo[3] = {0, 0, 0}, old_hi[3] = {0, 0, 0}; // the previous frame's (Compare)
            for (uint32_t d = 0; d < D; ++d) {
                if constexpr (Compare) {
                    old_lo[d] = record.lo[d];
                    old_hi[d] = record.hi[d];
                }
                o.min[d] = block.min[d][j];
                o.max[d] = block.max[d][j];
                o.lo[d] = block.lo[d][j];
                o.hi[d] = block.hi[d][j];
            }
            pack<D>(record, o);
            if constexpr (Compare) record_change(i, o, old_lo, old_hi, large, was_large, covered);
            if (large) {
                ++sum.large;
            } else {
                sum.entries += covered;
                small |= uint64_t{1} << j;
            }
        }
        add_valid_bounds(block, small, count);
        end_block(first, true);
    }

    /// Box i (its bounds into `o`) with every check: not finite, not ordered,
    /// or (bounded world) out of range is a status; out of the key range in an
    /// unbounded world marks the box far (`beyond_keys`). Reads the input only.
    StatusCode place_box(uint32_t i, ObjectScratch& o, bool& beyond_keys) const {
        bool finite = true;
        bool ordered = true;
        for (uint32_t d = 0; d < 3; ++d) {
            const float lo = d < D ? lows[d][i] : 0.0f;
            const float hi = d < D ? highs[d][i] : 0.0f;
            o.min[d] = lo;
            o.max[d] = hi;
            finite = finite && std::isfinite(lo) && std::isfinite(hi);
            ordered = ordered & (lo <= hi);
        }
        beyond_keys = false;
        if (!finite) return StatusCode::invalid_position;
        if (!ordered) return StatusCode::invalid_box;
        o.lo[2] = o.hi[2] = 0;
        bool in_range = true;
        for (uint32_t d = 0; d < D; ++d)
            in_range = axis[d].cell(o.min[d], o.lo[d]) && axis[d].cell(o.max[d], o.hi[d]) && in_range;
        if (in_range) return StatusCode::ok;
        if (bounded) return StatusCode::position_out_of_range;
        mark_far(o);
        beyond_keys = true;
        return StatusCode::ok;
    }

    /// A block with some bad, far or out-of-range box, box by box: records
    /// the lowest offending box in chunk.bad (the rebuild then fails and keeps
    /// the previous frame), else writes each changed box's record, its change
    /// bits and the sums, as valid_block does.
    void check_block(const CellBlock& block, uint32_t first, uint32_t count) {
        ObjectRecord<D>* __restrict objects = object_records<D>(s);
        start_block();
        for (uint32_t i = first; i < first + count; ++i) {
            ObjectRecord<D>& record = objects[i];
            ObjectScratch o = unpack<D>(record);
            // The previous frame's range and size class of this object (Compare only).
            bool was_large = false;
            int32_t old_lo[3] = {0, 0, 0};
            int32_t old_hi[3] = {0, 0, 0};
            if constexpr (Compare) {
                was_large = s.is_large[i] != 0;
                if (block.changed[i - first] == 0) { // validated last frame; o still holds it
                    if (was_large)
                        ++sum.large;
                    else
                        add_small(o, cells_covered(o));
                    continue;
                }
                for (uint32_t d = 0; d < 3; ++d) {
                    old_lo[d] = o.lo[d];
                    old_hi[d] = o.hi[d];
                }
            }
            bool beyond_keys = false;
            const StatusCode code = place_box(i, o, beyond_keys);
            if (code != StatusCode::ok) {
                if (chunk.bad.count++ == 0) {
                    chunk.bad.index = i;
                    chunk.bad.code = code;
                }
                continue;
            }
            pack<D>(record, o);
            const uint64_t covered = beyond_keys ? 0 : cells_covered(o);
            const bool large = beyond_keys || covered > large_cells;
            if constexpr (Compare) record_change(i, o, old_lo, old_hi, large, was_large, covered);
            if (large)
                ++sum.large;
            else
                add_small(o, covered);
        }
        end_block(first, true);
    }
};

/// Step 1 for D dimensions: validate each box, compute its cell range into
/// s.object and, per chunk, the counts, the occupied box and the lowest
/// offending object. With Compare (s.object holds the previous frame, same
/// object count), a box bit-identical to the previous frame's (s.min/s.max)
/// keeps its range, every object's change is recorded in s.change and the
/// chunk counts what an update would move. Writes scratch only (s.object and
/// s.block_summary may no longer hold the previous frame afterwards).
///
/// Boxes go in blocks of kCellBlock (cell_block): a block where no box
/// changed is counted from its summary (`summaries`: s.block_summary holds
/// the previous frame's) or else from the records; a block whose boxes are
/// all valid and in range takes its cells and bounds from cell_block; any
/// other block is checked box by box (the lowest offending box, far boxes).
template <uint32_t D, bool Compare>
void validate_objects(BoxState& s, const BoxSpans& in, const ThreadBackend& b, uint32_t n, uint32_t grain,
                      uint64_t large_cells, bool summaries) {
    const float* const lows[3] = {in.min_x, in.min_y, in.min_z};
    const float* const highs[3] = {in.max_x, in.max_y, in.max_z};
    const float* const* const previous_lows = Compare ? s.min : nullptr;
    const float* const* const previous_highs = Compare ? s.max : nullptr;
    const Lattice& k = s.cells;
    const AxisCells axis[3] = {AxisCells(k, 0), AxisCells(k, 1), AxisCells(k, 2)};
    const CellBlockFn evaluate_block = kernel_dispatch::active_table(kBlockWidths<D>);
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        // Chunks start at multiples of 64 objects: each owns its bitmap words.
        ChunkPass<D, Compare> pass(s, lows, highs, axis, large_cells, k.bounded);
        CellBlock block;
        for (uint32_t first = begin; first < end; first += kCellBlock) {
            const uint32_t count = end - first < kCellBlock ? end - first : kCellBlock;
            switch (evaluate_block(lows, highs, previous_lows, previous_highs, axis, first, count, block)) {
            case BlockKind::unchanged:
                pass.unchanged_block(first, count, summaries);
                break;
            case BlockKind::valid:
                pass.valid_block(block, first, count);
                break;
            case BlockKind::check:
                pass.check_block(block, first, count);
                break;
            }
        }
        if constexpr (D == 2) {
            if (pass.chunk.entries > 0) pass.chunk.cell_lo[2] = pass.chunk.cell_hi[2] = 0;
        }
        s.object_chunk[begin / grain] = pass.chunk;
    });
}

} // namespace

void validate_boxes(BoxState& s, const BoxSpans& in, const ThreadBackend& b, uint32_t n, uint32_t grain,
                    uint64_t large_cells, bool compare, bool summaries) {
    if (s.dims == 3)
        compare ? validate_objects<3, true>(s, in, b, n, grain, large_cells, summaries)
                : validate_objects<3, false>(s, in, b, n, grain, large_cells, summaries);
    else
        compare ? validate_objects<2, true>(s, in, b, n, grain, large_cells, summaries)
                : validate_objects<2, false>(s, in, b, n, grain, large_cells, summaries);
}

} // namespace hashgrid::detail

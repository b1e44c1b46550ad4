// SPDX-License-Identifier: MIT
// BoxGrid pair search: find_pairs (all overlapping pairs) and find_pairs_with
// (query boxes against the grid).
//
// Both split their work into chunks that depend on counts and fixed grains
// only, each emitting its pairs in the documented order, and write them
// through the ordered pair output (common/pair_output.h), as Grid::find_pairs
// does: the output is always an exact prefix of the canonical order,
// whatever the capacity, the pool size or the thread count.
//
// Small-small pairs: within each cell, every entry pair (i < j) that passes
// the minimum-corner rule (entry flags, box_grid_internal.h), the closed overlap test and
// the layer filter. Large objects: each against the small objects of the
// occupied cells its box covers and the large objects after it (or, when
// plan_coarse_grid says so, the objects of the coarse grids near its box:
// box_grid_coarse.cpp; the same pairs), its pairs sorted by the other
// object, a large-large pair only from its lower-index large object.
//
// find_pairs_with: per query box, its occupied cells through the row table,
// or by a galloping search of the cell keys (lattice/cell_box_walk.h: a
// query costs its occupied rows and cells, not its volume), then the large
// objects. Order: by cell (z, y, x), object index, then large objects.
#include "box/box_grid_internal.h"
#include "common/pair_compress.h"
#include "common/pair_output.h"
#include "common/trace_scope.h"
#include "kernels/hit_buffer.h"
#include "kernels/kernel_dispatch.h"
#include "lattice/cell_box_walk.h"
#include "lattice/cell_index.h"

#include "hashgrid/assert.h"
#include "hashgrid/grid.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace hashgrid {

using namespace detail;

namespace {

inline bool layers_match(uint32_t category_a, uint32_t mask_a, uint32_t category_b, uint32_t mask_b) {
    return (category_a & mask_b) != 0 && (category_b & mask_a) != 0;
}

/// Candidates tested per batch of the loops below (hits buffered on the stack).
constexpr uint32_t kBatch = 64;

/// A box tested against entries or objects (z unused in 2D).
struct TestBox {
    float min[3];
    float max[3];
};

/// Pairs the small-object sweep gathers on the stack before they go to its sink.
constexpr uint32_t kPairPiece = 256;

/// Keeps the pairs of pairs[0, n) that accept(a, b), in order, at the front
/// (stores without a branch: which pairs pass is unpredictable); returns
/// their count.
template <typename Accept>
uint32_t keep_pairs(Pair* pairs, uint32_t n, Accept&& accept) {
    uint32_t kept = 0;
    for (uint32_t p = 0; p < n; ++p) {
        const Pair pair = pairs[p];
        pairs[kept] = pair;
        kept += accept(pair.a, pair.b) ? 1u : 0u;
    }
    return kept;
}

/// Hands pairs[0, n) of objects to the sink, without those the layers reject.
template <typename Sink>
void flush_pairs(const BoxState& s, Pair* pairs, uint32_t n, Sink& sink) {
    if (s.layers)
        n = keep_pairs(pairs, n, [&](uint32_t a, uint32_t b) {
            return layers_match(s.category[a], s.mask[a], s.category[b], s.mask[b]);
        });
    sink.push_pairs(pairs, n);
}

// The entry test and the small-object sweep, once per instruction set
// (box_cell_sweep.inc), each with its Kernels for the searches below.
namespace scalar_cells {
#define HASHGRID_BOX_TARGET
#define HASHGRID_BOX_LANES 1
#include "box/box_cell_sweep.inc"
#undef HASHGRID_BOX_TARGET
#undef HASHGRID_BOX_LANES
} // namespace scalar_cells

#if HASHGRID_KERNELS_X86
namespace sse2_cells {
#define HASHGRID_BOX_TARGET
#define HASHGRID_BOX_LANES 4
#include "box/box_cell_sweep.inc"
#undef HASHGRID_BOX_TARGET
#undef HASHGRID_BOX_LANES
} // namespace sse2_cells

namespace avx2_cells {
#define HASHGRID_BOX_TARGET __attribute__((target("avx2")))
#define HASHGRID_BOX_LANES 8
#include "box/box_cell_sweep.inc"
#undef HASHGRID_BOX_TARGET
#undef HASHGRID_BOX_LANES
} // namespace avx2_cells
#endif

#if HASHGRID_KERNELS_NEON
namespace neon_cells {
#define HASHGRID_BOX_TARGET
#define HASHGRID_BOX_LANES 4
#include "box/box_cell_sweep.inc"
#undef HASHGRID_BOX_TARGET
#undef HASHGRID_BOX_LANES
} // namespace neon_cells
#endif

/// Most partners a rank sort takes (box_cell_sweep.inc, rank_pairs).
constexpr uint32_t kRankPairs = 128;

/// The cell range [cell(box.min), cell(box.max)] of a box, clamped into the
/// key range as the rebuild clamps objects' cells (z = 0 in 2D).
template <uint32_t D>
void box_cells(const BoxState& s, const TestBox& box, int32_t c_lo[3], int32_t c_hi[3]) {
    for (uint32_t d = 0; d < 3; ++d)
        c_lo[d] = c_hi[d] = 0;
    for (uint32_t d = 0; d < D; ++d) {
        c_lo[d] = s.cells.clamped_cell(d, s.cells.scaled(d, box.min[d]));
        c_hi[d] = s.cells.clamped_cell(d, s.cells.scaled(d, box.max[d]));
    }
}

/// Calls cell_fn(pos, x, y, z) for every occupied cell pos, at (x, y, z), of
/// [c_lo, c_hi], in key order (lattice/cell_box_walk.h): row by row through
/// the frame's row table when it has one, else by galloping searches that
/// skip empty rows and slabs.
template <typename CellFn>
void walk_cells(const BoxState& s, const CellIndex& index, const int32_t c_lo[3], const int32_t c_hi[3],
                CellFn&& cell_fn) {
    CellBox box{};
    for (uint32_t d = 0; d < 3; ++d) {
        box.lo[d] = c_lo[d];
        box.hi[d] = c_hi[d];
    }
    if (!s.valid.rows) {
        walk_cells_in(index, nullptr, box, cell_fn, never_stop);
        return;
    }
    const BoxFrameBounds& f = s.bounds;
    for (uint32_t d = 0; d < 3; ++d) {
        box.lo[d] = std::max(box.lo[d], f.cell_lo[d]);
        box.hi[d] = std::min(box.hi[d], f.cell_hi[d]);
        if (box.lo[d] > box.hi[d]) return;
    }
    const RowTable rows{s.row_start,
                        {f.cell_lo[0], f.cell_lo[1], f.cell_lo[2]},
                        static_cast<uint64_t>(int64_t{f.cell_hi[1]} - f.cell_lo[1] + 1)};
    walk_cells_in(index, &rows, box, cell_fn, never_stop);
}

/// The first-cell bits an entry of cell (x, y, z) must have for the pair of
/// its object with a box of cells from c_lo to hold at this cell: the
/// minimum-corner rule, with the box as one of the two.
inline uint32_t entry_need(const int32_t c_lo[3], int32_t x, int32_t y, int32_t z) {
    const uint32_t q_flags = (x == c_lo[0] ? 1u : 0u) | (y == c_lo[1] ? 2u : 0u) | (z == c_lo[2] ? 4u : 0u);
    return 7u & ~q_flags;
}

/// Calls hit(object) for every small object whose box overlaps `box`
/// (closed), once each: from the entry in the occupied cell of [c_lo, c_hi]
/// (box's cells) that holds the minimum corner of the two boxes'
/// intersection. Cells in key order (walk_cells), entries of a cell in
/// ascending object order.
template <typename K, uint32_t D, typename Hit>
void scan_entries(const BoxState& s, const CellIndex& index, const TestBox& box, const int32_t c_lo[3],
                  const int32_t c_hi[3], Hit&& hit) {
    const float* const entry_lo[3] = {s.entry_min[0], s.entry_min[1], s.entry_min[2]};
    const float* const entry_hi[3] = {s.entry_max[0], s.entry_max[1], s.entry_max[2]};
    uint32_t hits[kBatch + 8];
    walk_cells(s, index, c_lo, c_hi, [&](uint32_t pos, int32_t x, int32_t y, int32_t z) {
        const uint32_t need = entry_need(c_lo, x, y, z);
        const uint32_t end = index.end(pos);
        for (uint32_t e0 = index.begin(pos); e0 < end; e0 += kBatch) {
            const uint32_t e1 = end - e0 < kBatch ? end : e0 + kBatch;
            const uint32_t count =
                K::template hits<D, true>(entry_lo, entry_hi, s.entry_flags, need, box, e0, e1, hits);
            for (uint32_t h = 0; h < count; ++h)
                hit(s.entry_object[hits[h]]);
        }
    });
}

/// Appends to found[] every object of one coarse grid with index >= `from`
/// whose box overlaps `box` (fine cells [c_lo, c_hi]; closed test), once
/// each: the grid's coarse cells of [c_lo - reach, c_hi], clamped into the
/// grid when its objects' cells are (Clamped), row by row, each row's objects
/// one contiguous run (box_grid_coarse.cpp). The grid's objects are at
/// first + [start[c], start[c + 1]) of coarse_object. Stores are branch-free
/// (whether a candidate overlaps is unpredictable): found[] has kLargeHits
/// + 1 slots, and n counts every hit, also past kLargeHits.
template <uint32_t D, bool Clamped>
void scan_coarse(const BoxState& s, const uint32_t* start, uint32_t first, const int64_t reach[3], uint32_t from,
                 const TestBox& box, const int32_t c_lo[3], const int32_t c_hi[3], uint32_t* found, uint32_t& n) {
    // The large objects' grid (the clamped one) has cells of its own.
    const CoarseGrid& g = s.coarse;
    const uint32_t level = Clamped ? g.large_level : g.level;
    const int32_t* grid_lo = Clamped ? g.large_lo : g.lo;
    const uint32_t* grid_n = Clamped ? g.large_n : g.n;
    int64_t lo[3] = {0, 0, 0};
    int64_t hi[3] = {0, 0, 0};
    for (uint32_t d = 0; d < D; ++d) {
        lo[d] = ((c_lo[d] - reach[d]) >> level) - grid_lo[d];
        hi[d] = (int64_t{c_hi[d]} >> level) - grid_lo[d];
        const int64_t last = int64_t{grid_n[d]} - 1;
        if constexpr (Clamped) {
            lo[d] = std::clamp<int64_t>(lo[d], 0, last);
            hi[d] = std::clamp<int64_t>(hi[d], 0, last);
        } else {
            lo[d] = std::max<int64_t>(lo[d], 0);
            hi[d] = std::min(hi[d], last);
            if (lo[d] > hi[d]) return;
        }
    }
#if defined(__SSE2__)
    const __m128 box_min = _mm_setr_ps(box.min[0], box.min[1], box.min[2], 0.0f);
    const __m128 box_max = _mm_setr_ps(box.max[0], box.max[1], box.max[2], 0.0f);
    constexpr int kAxes = D == 3 ? 7 : 3; // movemask bits of the axes compared
#endif
    uint32_t count = n;
    for (int64_t z = lo[2]; z <= hi[2]; ++z)
        for (int64_t y = lo[1]; y <= hi[1]; ++y) {
            const auto row = static_cast<uint64_t>((z * grid_n[1] + y) * grid_n[0]);
            const CoarseObject* o = s.coarse_object + first + start[row + static_cast<uint64_t>(lo[0])];
            const CoarseObject* const end = s.coarse_object + first + start[row + static_cast<uint64_t>(hi[0]) + 1];
            for (; o < end; ++o) {
#if defined(__SSE2__)
                const __m128 m =
                    _mm_and_ps(_mm_cmple_ps(_mm_load_ps(o->min), box_max), _mm_cmple_ps(box_min, _mm_load_ps(o->max)));
                const bool overlap = (_mm_movemask_ps(m) & kAxes) == kAxes;
#else
                bool overlap = true;
                for (uint32_t d = 0; d < D; ++d)
                    overlap = overlap & (o->min[d] <= box.max[d]) & (box.min[d] <= o->max[d]);
#endif
                found[count < kLargeHits ? count : kLargeHits] = o->object;
                count += static_cast<uint32_t>(overlap & (o->object >= from));
            }
        }
    n = count;
}

/// Sorts list[0, count) (count <= kLargeHits) of object indices below
/// `objects` ascending, using scratch[0, count): short lists by insertion,
/// longer ones first bucketed by their top bits (a counting sort into at
/// most count rounded up to a power of two buckets), then by one insertion
/// pass over the nearly sorted result. The lists are a large object's
/// partners, a few dozen spread over all indices, where a comparison sort
/// spends its time on mispredicted branches. Returns the sorted list (list
/// or scratch).
inline const uint32_t* sort_partners(uint32_t* list, uint32_t* scratch, uint32_t count, uint32_t objects) {
    uint32_t* sorted = list;
    if (count > 32) {
        const auto bits = static_cast<uint32_t>(std::bit_width(count - 1)); // 2^bits in [count, 2 * count)
        const auto index_bits = static_cast<uint32_t>(std::bit_width(objects - 1));
        const uint32_t shift = index_bits > bits ? index_bits - bits : 0;
        const uint32_t buckets = ((objects - 1) >> shift) + 1; // <= 2^bits
        uint32_t bucket[kLargeHits + 1];
        std::fill(bucket, bucket + buckets + 1, 0u);
        for (uint32_t h = 0; h < count; ++h)
            ++bucket[(list[h] >> shift) + 1];
        for (uint32_t b = 1; b < buckets; ++b)
            bucket[b] += bucket[b - 1];
        for (uint32_t h = 0; h < count; ++h)
            scratch[bucket[list[h] >> shift]++] = list[h];
        sorted = scratch;
    }
    for (uint32_t h = 1; h < count; ++h) {
        const uint32_t v = sorted[h];
        uint32_t at = h;
        for (; at > 0 && sorted[at - 1] > v; --at)
            sorted[at] = sorted[at - 1];
        sorted[at] = v;
    }
    return sorted;
}

/// Large-object pairs of the large objects [k0, k1) (indices into the large
/// list), in the documented order: per large object `big`, ascending by the
/// other object o, each pair (min, max); a large-large pair only from its
/// lower-index large object. The candidates are the small objects found by
/// scanning big's cells (scan_entries) and the large objects after big in the
/// list, or with `coarse` those of the coarse grids (scan_coarse), sorted
/// (K's rank sort where it takes the list, else sort_partners); past
/// kLargeHits overlaps, every object is tested in index order (same pairs
/// and order).
template <typename K, uint32_t D, typename Sink>
void sweep_large(const BoxState& s, uint32_t k0, uint32_t k1, bool coarse, Sink& sink) {
    static_assert(K::kRankLimit <= kRankPairs);
    const CellIndex index = make_sorted_cell_index(s.cells, s.cell_key, s.cell_start, s.cell_count);
    const float* const lo[3] = {s.min[0], s.min[1], s.min[2]};
    const float* const hi[3] = {s.max[0], s.max[1], s.max[2]};
    const bool layers = s.layers;
    uint32_t found[kLargeHits + 1];
    uint32_t scratch[kLargeHits];
    uint32_t hits[kBatch + 8];
    for (uint32_t k = k0; k < k1; ++k) {
        const uint32_t big = s.large_object[k];
        TestBox a{};
        for (uint32_t d = 0; d < D; ++d) {
            a.min[d] = lo[d][big];
            a.max[d] = hi[d][big];
        }
        auto emit = [&](uint32_t o) {
            if (layers && !layers_match(s.category[big], s.mask[big], s.category[o], s.mask[o])) return;
            sink.push(o < big ? Pair{o, big} : Pair{big, o});
        };
        uint32_t n = 0;
        bool crowded = false;
        auto keep = [&](uint32_t o) {
            if (n < kLargeHits)
                found[n++] = o;
            else
                crowded = true;
        };
        int32_t c_lo[3], c_hi[3];
        box_cells<D>(s, a, c_lo, c_hi);
        if (coarse) {
            const CoarseGrid& g = s.coarse;
            scan_coarse<D, false>(s, s.coarse_start, 0, g.reach, 0, a, c_lo, c_hi, found, n);
            // The large list ascends by object: the large objects after big.
            scan_coarse<D, true>(s, g.large_start, g.small, g.large_reach, big + 1, a, c_lo, c_hi, found, n);
            crowded = n > kLargeHits;
        } else {
            scan_entries<K, D>(s, index, a, c_lo, c_hi, keep);
            for (uint32_t j = k + 1; j < s.large_count && !crowded; ++j) {
                const uint32_t o = s.large_object[j];
                uint32_t overlap = 1;
                for (uint32_t d = 0; d < D; ++d)
                    overlap &=
                        static_cast<uint32_t>(lo[d][o] <= a.max[d]) & static_cast<uint32_t>(a.min[d] <= hi[d][o]);
                if (overlap != 0) keep(o);
            }
        }
        if (!crowded) {
            Pair ranked[kRankPairs];
            if (n <= K::kRankLimit) {
                K::rank(found, n, big, ranked);
                flush_pairs(s, ranked, n, sink);
                continue;
            }
            // In batches of pairs, the layer test on the way (flush_pairs).
            const uint32_t* sorted = sort_partners(found, scratch, n, s.object_count);
            for (uint32_t h0 = 0; h0 < n; h0 += kRankPairs) {
                const uint32_t h1 = n - h0 < kRankPairs ? n : h0 + kRankPairs;
                for (uint32_t h = h0; h < h1; ++h)
                    ranked[h - h0] = Pair{std::min(sorted[h], big), std::max(sorted[h], big)};
                flush_pairs(s, ranked, h1 - h0, sink);
            }
            continue;
        }
        const uint32_t objects = s.object_count;
        for (uint32_t o0 = 0; o0 < objects; o0 += kBatch) {
            const uint32_t o1 = objects - o0 < kBatch ? objects : o0 + kBatch;
            const uint32_t count = K::template hits<D, false>(lo, hi, nullptr, 0, a, o0, o1, hits);
            for (uint32_t h = 0; h < count; ++h) {
                const uint32_t o = hits[h];
                if (o == big) continue;
                if (o < big && s.is_large[o] != 0) continue; // reported from o, the lower large object
                emit(o);
            }
        }
    }
}

/// Query boxes as read from BoxSpans (z = 0 in 2D).
struct QueryInput {
    const float* lo[3];
    const float* hi[3];
    const uint32_t* category;
    const uint32_t* mask;
};

/// Every (query, object) pair of queries [first, last), in the documented
/// order. Pairs gather on the stack and go to the sink in bulk, the layer
/// test on the way.
template <typename K, uint32_t D, typename Sink>
void sweep_queries(const BoxState& s, const QueryInput& in, uint32_t first, uint32_t last, Sink& sink) {
    const CellIndex index = make_sorted_cell_index(s.cells, s.cell_key, s.cell_start, s.cell_count);
    const float* const lo[3] = {s.min[0], s.min[1], s.min[2]};
    const float* const hi[3] = {s.max[0], s.max[1], s.max[2]};
    const bool layers = s.layers || in.category != nullptr || in.mask != nullptr;
    Pair pairs[kPairPiece + 8];
    uint32_t n = 0;
    auto flush = [&](Pair* held, uint32_t count) {
        if (layers)
            count = keep_pairs(held, count, [&](uint32_t q, uint32_t o) {
                return layers_match(in.category != nullptr ? in.category[q] : ~0u,
                                    in.mask != nullptr ? in.mask[q] : ~0u, s.category[o], s.mask[o]);
            });
        sink.push_pairs(held, count);
    };
    for (uint32_t q = first; q < last; ++q) {
        TestBox box{};
        for (uint32_t d = 0; d < D; ++d) {
            box.min[d] = in.lo[d][q];
            box.max[d] = in.hi[d][q];
        }
        int32_t c_lo[3], c_hi[3];
        box_cells<D>(s, box, c_lo, c_hi);
        walk_cells(s, index, c_lo, c_hi, [&](uint32_t pos, int32_t x, int32_t y, int32_t z) {
            n = K::template query<D>(s, entry_need(c_lo, x, y, z), box, index.begin(pos), index.end(pos), q, pairs, n,
                                     flush);
        });
        // The large objects by index, stored without a branch.
        for (uint32_t k = 0; k < s.large_count; ++k) {
            if (n > kPairPiece) {
                flush(pairs, n);
                n = 0;
            }
            const uint32_t o = s.large_object[k];
            uint32_t overlap = 1;
            for (uint32_t d = 0; d < D; ++d)
                overlap &=
                    static_cast<uint32_t>(lo[d][o] <= box.max[d]) & static_cast<uint32_t>(box.min[d] <= hi[d][o]);
            pairs[n] = Pair{q, o};
            n += overlap;
        }
    }
    flush(pairs, n);
}

using pair_output::Sink;

/// One width's searches of a chunk into the ordered pair output's sink.
struct ChunkSearches {
    void (*cells)(const BoxState& s, uint32_t first_cell, uint32_t last_cell, Sink& sink);
    void (*large)(const BoxState& s, uint32_t k0, uint32_t k1, bool coarse, Sink& sink);
    void (*queries)(const BoxState& s, const QueryInput& in, uint32_t first, uint32_t last, Sink& sink);
};

template <typename K, uint32_t D>
constexpr ChunkSearches kSearches{&K::template cells<D, Sink>, &sweep_large<K, D, Sink>, &sweep_queries<K, D, Sink>};

/// The widths this build has; kernel_dispatch picks one per search.
template <uint32_t D>
constexpr kernel_dispatch::Widths<ChunkSearches> kWidths{&kSearches<scalar_cells::Kernels, D>,
                                                         HASHGRID_X86_TABLE((&kSearches<sse2_cells::Kernels, D>)),
                                                         HASHGRID_X86_TABLE((&kSearches<avx2_cells::Kernels, D>)),
                                                         HASHGRID_NEON_TABLE((&kSearches<neon_cells::Kernels, D>))};

/// The searches of width `isa` in `dims` dimensions.
const ChunkSearches& searches_for(PairKernel isa, uint32_t dims) {
    return kernel_dispatch::table_for(isa, dims == 3 ? kWidths<3> : kWidths<2>);
}

/// The pool and per-chunk records of the grid's pair searches.
pair_output::PairMemory pair_memory(const BoxState& s) {
    return {s.pool,
            s.block_next,
            s.pool_blocks,
            kBoxPairBlock,
            s.pair_chunk_first_block,
            s.pair_chunk_count,
            s.pair_chunk_state};
}

Status bad_query(StatusCode code, uint32_t index, uint32_t count) {
    return detail::item_status(code,
                               code == StatusCode::invalid_box ? "query box has min > max on some axis"
                                                               : "query box coordinate is NaN or infinite",
                               index, count);
}

} // namespace

PairResult BoxGrid::Impl::find_pairs(BoxGrid& g, Pair* out, uint64_t capacity, const ThreadBackend& caller_backend,
                                     PairFilter filter) {
    PairResult result;
    if (!pair_output::pair_search_allowed(g.initialized_ && g.built_, out, capacity, result)) return result;
    BoxState& s = state(g);
    PhaseTrace trace(g.trace_, caller_backend);
    trace.begin(TracePhase::box_find_pairs);
    const uint32_t cells = s.cell_count;
    const auto cell_grain = static_cast<uint32_t>(grain_for(cells, kCellPairGrain, kMaxCellChunks));
    const uint32_t cell_chunks = chunk_count(cells, cell_grain);
    const auto large_grain = static_cast<uint32_t>(grain_for(s.large_count, kLargePairGrain, kMaxLargeChunks));
    const uint32_t large_chunks = chunk_count(s.large_count, large_grain);
    const bool coarse = plan_coarse_grid(s);
    const ChunkSearches& width = searches_for(active_pair_kernel(), s.dims);
    auto search = [&](uint32_t ch, Sink& sink) {
        if (ch < cell_chunks) {
            const uint32_t first = ch * cell_grain;
            width.cells(s, first, cells - first < cell_grain ? cells : first + cell_grain, sink);
            return;
        }
        const uint32_t first = (ch - cell_chunks) * large_grain;
        width.large(s, first, s.large_count - first < large_grain ? s.large_count : first + large_grain, coarse, sink);
    };
    // The coarse grids are built beside the small objects' sweep.
    auto build_coarse = [&] { build_coarse_grid(s); };
    const uint64_t max_pairs = g.config_.max_pairs;
    const pair_output::PairRequest request{out, capacity, max_pairs, filter, cell_chunks + large_chunks, 1};
    HASHGRID_ASSERT(request.items <= kMaxPairChunks, "pair search: too many chunks");
    trace.begin(TraceStep::box_pair_search);
    const pair_output::PairCounts counts = pair_output::write_ordered(
        trace, TraceStep::box_pair_prefix, pair_memory(s), request, pair_output::chunk_search(search),
        pair_output::preparation(build_coarse, coarse ? cell_chunks : request.items));
    return pair_output::pair_result(counts, max_pairs, capacity, "more pairs than BoxGridConfig::max_pairs");
}

PairResult BoxGrid::Impl::find_pairs_with(BoxGrid& g, const BoxSpans& queries, Pair* out, uint64_t capacity,
                                          const ThreadBackend& caller_backend, PairFilter filter) {
    HASHGRID_ASSERT(out != nullptr || capacity == 0, "find_pairs_with: null buffer with nonzero capacity");
    PairResult result;
    if (!g.initialized_ || !g.built_) {
        result.status = detail::make_status(StatusCode::not_built, "find_pairs_with before a successful rebuild");
        return result;
    }
    BoxState& s = state(g);
    const uint32_t dims = s.dims;
    const uint32_t n = queries.count;
    HASHGRID_ASSERT(n == 0 || (queries.min_x != nullptr && queries.min_y != nullptr && queries.max_x != nullptr &&
                               queries.max_y != nullptr &&
                               (dims == 2 || (queries.min_z != nullptr && queries.max_z != nullptr))),
                    "BoxSpans: min/max x, y (and z in 3D) must be set");
    if (spans_missing(queries, dims) || (out == nullptr && capacity > 0)) {
        result.status = detail::make_status(StatusCode::invalid_argument,
                                            "find_pairs_with: null query span or null buffer with nonzero capacity");
        return result;
    }
    QueryInput in{{queries.min_x, queries.min_y, queries.min_z},
                  {queries.max_x, queries.max_y, queries.max_z},
                  queries.category,
                  queries.mask};
    const auto grain = static_cast<uint32_t>(grain_for(n, kQueryGrain, kMaxPairChunks));
    const uint32_t chunks = chunk_count(n, grain);
    PhaseTrace trace(g.trace_, caller_backend); // the loops run through trace.backend()
    const ThreadBackend& b = trace.backend();
    trace.begin(TracePhase::box_find_pairs_with);

    // Validation first (lowest offending query, any thread count).
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        BadParticle bad{kNone, 0, StatusCode::ok};
        for (uint32_t q = begin; q < end; ++q) {
            bool finite = true;
            bool ordered = true;
            for (uint32_t d = 0; d < dims; ++d) {
                const float lo = in.lo[d][q];
                const float hi = in.hi[d][q];
                finite = finite && std::isfinite(lo) && std::isfinite(hi);
                ordered = ordered && lo <= hi;
            }
            if (finite && ordered) continue;
            if (bad.count++ == 0) {
                bad.index = q;
                bad.code = finite ? StatusCode::invalid_box : StatusCode::invalid_position;
            }
        }
        s.query_bad[begin / grain] = bad;
    });
    uint32_t bad_count = 0;
    const BadParticle* first_bad = nullptr;
    for (uint32_t c = 0; c < chunks; ++c) {
        if (s.query_bad[c].count == 0) continue;
        if (first_bad == nullptr) first_bad = &s.query_bad[c];
        bad_count += s.query_bad[c].count;
    }
    if (first_bad != nullptr) {
        result.status = bad_query(first_bad->code, first_bad->index, bad_count);
        return result;
    }

    const ChunkSearches& width = searches_for(active_pair_kernel(), dims);
    auto search = [&](uint32_t ch, Sink& sink) {
        const uint32_t first = ch * grain;
        width.queries(s, in, first, n - first < grain ? n : first + grain, sink);
    };
    // max_pairs does not apply: the pool only caches, the caller's capacity is the limit.
    const pair_output::PairRequest request{out, capacity, UINT64_MAX, filter, chunks, 1};
    trace.begin(TraceStep::box_pair_search);
    const pair_output::PairCounts counts = pair_output::write_ordered(trace, TraceStep::box_pair_prefix, pair_memory(s),
                                                                      request, pair_output::chunk_search(search));
    return pair_output::pair_result(counts, UINT64_MAX, capacity, "");
}

} // namespace hashgrid

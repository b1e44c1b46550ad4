// SPDX-License-Identifier: MIT
// BoxGrid::rebuild: boxes into the cells they cover.
//
// 1. Object pass (box_grid_validate.cpp; parallel over fixed chunks of
//    objects, scratch only): validate each box and compute its cell range;
//    per chunk, the entries of the small objects, the number of large ones,
//    the box of occupied cells and the lowest offending object. A rejected
//    frame (bad box, too many entries) has written nothing but scratch: the
//    previous frame stays. When few objects changed cells (merge_pays),
//    steps 2-4 give way to a merge of theirs into the previous frame
//    (box_grid_update.cpp), which gives the same arrays.
// 2. Entry pass: the chunks' offsets come from a scan in chunk order, so
//    every chunk writes its entries (dense cell index within the occupied
//    box, object) and its large objects in ascending object order. The dense
//    index (x fastest) has the same order as the packed key, in fewer bits.
// 3. Stable LSD radix sort of the entries by dense index, only over the bits
//    the occupied box needs (digits of up to kMaxDigitBits bits, per-chunk
//    histograms, a scan in (digit, chunk) order): entries of a cell keep
//    ascending object index, for any thread count.
// 4. Cell runs: packed keys and starts of the occupied cells, and each
//    entry's box and first-cell flags for the pair search.
// 5. After either path: the row table of the occupied cells (write_row_starts).
#include "box/box_grid_internal.h"
#include "box/box_rebuild_steps.h"
#include "common/trace_scope.h"
#include "lattice/radix_sort.h"

#include "hashgrid/assert.h"

#include <atomic>
#include <bit>
#include <cstring>

namespace hashgrid {

using namespace detail;

namespace {

Status bad_box_status(const ObjectChunk* chunks, uint32_t count) {
    Status s;
    for (uint32_t c = 0; c < count; ++c) {
        const BadParticle& bad = chunks[c].bad;
        if (bad.count == 0) continue;
        if (s.ok()) s = bad_box(bad.code, bad.index, 0);
        s.count += bad.count;
    }
    return s;
}

/// The box of occupied cells and the dense index within it.
struct DenseBox {
    int32_t lo[3];
    uint64_t extent[3];
};

/// Entries ahead whose object step 4 prefetches: the gather of scattered
/// objects is latency-bound (an object may straddle two cache lines).
constexpr uint32_t kGatherAhead = 16;

/// Step 4's write pass: keys and starts of the cells, and each entry's box and
/// first-cell flags (gathered from the objects, which are scattered: fetched
/// ahead). Cell starts per chunk come from s.entry_chunk.
template <uint32_t D, typename K>
void write_cells(BoxState& s, const ThreadBackend& b, const K* sorted, const uint32_t* object, uint32_t entries,
                 uint32_t grain, const DenseBox& box) {
    // The dense index has fewer than 2^32 values when K is 32 bits: divide in that width.
    const auto ex = static_cast<K>(box.extent[0]);
    const auto ey = static_cast<K>(box.extent[1]);
    parallel_chunks(b, entries, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const ObjectRecord<D>* __restrict objects = object_records<D>(s);
        float* __restrict min_x = s.entry_min[0];
        float* __restrict min_y = s.entry_min[1];
        float* __restrict min_z = s.entry_min[2];
        float* __restrict max_x = s.entry_max[0];
        float* __restrict max_y = s.entry_max[1];
        float* __restrict max_z = s.entry_max[2];
        uint32_t* __restrict flags = s.entry_flags;
        uint64_t* __restrict cell_key = s.cell_key;
        uint32_t* __restrict cell_start = s.cell_start;
        uint64_t cell = s.entry_chunk[begin / grain];
        int32_t cx = 0, cy = 0, cz = 0;
        auto decode = [&](K k) {
            const K rest = k / ex;
            cx = static_cast<int32_t>(int64_t{box.lo[0]} + static_cast<int64_t>(k - rest * ex));
            const K z = rest / ey;
            cy = static_cast<int32_t>(int64_t{box.lo[1]} + static_cast<int64_t>(rest - z * ey));
            cz = static_cast<int32_t>(int64_t{box.lo[2]} + static_cast<int64_t>(z));
        };
        decode(sorted[begin]);
        for (uint32_t e = begin; e < end; ++e) {
            const K k = sorted[e];
            if (e == 0 || k != sorted[e - 1]) {
                decode(k);
                cell_key[cell] = Lattice::pack(D, cx, cy, cz);
                cell_start[cell] = e;
                ++cell;
            }
            if (e + kGatherAhead < end) {
                const char* ahead = reinterpret_cast<const char*>(&objects[object[e + kGatherAhead]]);
                __builtin_prefetch(ahead);
                __builtin_prefetch(ahead + sizeof(ObjectRecord<D>) - 1);
            }
            const ObjectRecord<D>& o = objects[object[e]];
            put_entry_box<D>(min_x, min_y, min_z, max_x, max_y, max_z, e, o);
            flags[e] = first_cell_flags(cx, cy, cz, unpack<D>(o).lo);
        }
    });
}

/// The frame's copies of objects [begin, end): boxes (validated, so copied
/// bit for bit; with only_moved, after a comparison, just the boxes that
/// changed) and layers (all bits for a null span).
void copy_objects(BoxState& s, const BoxSpans& in, uint32_t dims, uint32_t begin, uint32_t end, bool only_moved) {
    const float* const lows[3] = {in.min_x, in.min_y, in.min_z};
    const float* const highs[3] = {in.max_x, in.max_y, in.max_z};
    const size_t count = end - begin;
    if (only_moved) { // the others hold their box already, bit for bit
        for (uint32_t w = begin / 64; w < (end + 63) / 64; ++w) {
            if (s.change.moved[w] == ~uint64_t{0}) { // the whole word moved (a whole word lies below n)
                for (uint32_t d = 0; d < dims; ++d) {
                    std::memcpy(s.min[d] + w * 64, lows[d] + w * 64, 64 * sizeof(float));
                    std::memcpy(s.max[d] + w * 64, highs[d] + w * 64, 64 * sizeof(float));
                }
                continue;
            }
            for (uint64_t bits = s.change.moved[w]; bits != 0; bits &= bits - 1) {
                const uint32_t i = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
                for (uint32_t d = 0; d < dims; ++d) {
                    s.min[d][i] = lows[d][i];
                    s.max[d][i] = highs[d][i];
                }
            }
        }
    } else {
        for (uint32_t d = 0; d < dims; ++d) {
            std::memcpy(s.min[d] + begin, lows[d] + begin, count * sizeof(float));
            std::memcpy(s.max[d] + begin, highs[d] + begin, count * sizeof(float));
        }
    }
    // Layers: copied, or all bits (already so when the last frame had no spans either).
    const bool filled = only_moved && !s.layers;
    if (in.category != nullptr) {
        std::memcpy(s.category + begin, in.category + begin, count * sizeof(uint32_t));
        // The bits every category of the chunk has, folded into the frame's (AND: any order gives the same).
        uint32_t common = ~0u;
        for (uint32_t i = begin; i < end; ++i)
            common &= in.category[i];
        if (common != ~0u) std::atomic_ref<uint32_t>(s.category_common).fetch_and(common, std::memory_order_relaxed);
    } else if (!filled)
        std::fill(s.category + begin, s.category + end, ~0u);
    if (in.mask != nullptr)
        std::memcpy(s.mask + begin, in.mask + begin, count * sizeof(uint32_t));
    else if (!filled)
        std::fill(s.mask + begin, s.mask + end, ~0u);
}

/// Step 2 for D dimensions: the frame's copies of the boxes and layers (bulk
/// copies of the validated input), each small object's entries (dense cell
/// index, object) and the large objects, every chunk at its offsets.
template <uint32_t D, typename K>
void emit_entries(BoxState& s, const BoxSpans& in, const ThreadBackend& b, uint32_t n, uint32_t grain,
                  uint64_t large_cells, const DenseBox& box, K* out_key) {
    const uint64_t ex = box.extent[0];
    const uint64_t exy = box.extent[0] * box.extent[1];
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        copy_objects(s, in, D, begin, end, false);
        const ObjectChunk& chunk = s.object_chunk[begin / grain];
        uint64_t e = chunk.entry_offset;
        // The chunk's entries end here: the block writes below stay before it.
        const uint64_t stop = chunk.entry_offset + chunk.entries;
        uint32_t l = chunk.large_offset;
        const ObjectRecord<D>* __restrict objects = object_records<D>(s);
        K* __restrict keys = out_key;
        uint32_t* __restrict entry_object = s.payload[0];
        uint8_t* __restrict is_large = s.is_large;
        for (uint32_t i = begin; i < end; ++i) {
            const ObjectScratch o = unpack<D>(objects[i]);
            if (is_far(o) || cells_covered(o) > large_cells) {
                is_large[i] = 1;
                s.large_object[l++] = i;
                continue;
            }
            is_large[i] = 0;
            const auto x0 = static_cast<uint64_t>(int64_t{o.lo[0]} - box.lo[0]);
            const auto x1 = static_cast<uint64_t>(int64_t{o.hi[0]} - box.lo[0]);
            // At most 2 cells per axis (most objects): the 2 x 2 (x 2) block
            // of cells from the first, each stored and kept where the object
            // covers it. The loops below would take a branch whose outcome is
            // random (1 or 2 cells) on every axis.
            const auto span_y = static_cast<uint32_t>(o.hi[1] - o.lo[1]);
            const auto span_z = static_cast<uint32_t>(o.hi[2] - o.lo[2]);
            const auto span_x = static_cast<uint32_t>(x1 - x0);
            if ((span_x | span_y | span_z) <= 1 && stop - e >= (D == 3 ? 8 : 4)) {
                const uint64_t first = (D == 3 ? exy * static_cast<uint64_t>(int64_t{o.lo[2]} - box.lo[2]) : 0) +
                                       ex * static_cast<uint64_t>(int64_t{o.lo[1]} - box.lo[1]) + x0;
                for (uint32_t dz = 0; dz < (D == 3 ? 2u : 1u); ++dz)
                    for (uint32_t dy = 0; dy < 2; ++dy)
                        for (uint32_t dx = 0; dx < 2; ++dx) {
                            keys[e] = static_cast<K>(first + dz * exy + dy * ex + dx);
                            entry_object[e] = i;
                            e += static_cast<uint64_t>((dx <= span_x) & (dy <= span_y) & (dz <= span_z));
                        }
                continue;
            }
            for (int32_t z = o.lo[2]; z <= o.hi[2]; ++z) {
                const uint64_t plane = D == 3 ? exy * static_cast<uint64_t>(int64_t{z} - box.lo[2]) : 0;
                for (int32_t y = o.lo[1]; y <= o.hi[1]; ++y) {
                    const uint64_t row = plane + ex * static_cast<uint64_t>(int64_t{y} - box.lo[1]);
                    for (uint64_t x = x0; x <= x1; ++x) {
                        keys[e] = static_cast<K>(row + x);
                        entry_object[e] = i;
                        ++e;
                    }
                }
            }
        }
    });
}

/// Steps 2-4 for one key width.
template <typename K>
void build_entries(BoxState& s, const BoxSpans& in, const ThreadBackend& b, uint32_t n, uint32_t object_grain,
                   uint64_t large_cells, const DenseBox& box, uint32_t bits, uint32_t entries) {
    K* const key[2] = {reinterpret_cast<K*>(s.sort_key[0]), reinterpret_cast<K*>(s.sort_key[1])};
    const uint32_t dims = s.dims;

    // 2. Frame copies of the boxes, entries and large objects, in chunk order.
    if (dims == 3)
        emit_entries<3, K>(s, in, b, n, object_grain, large_cells, box, key[0]);
    else
        emit_entries<2, K>(s, in, b, n, object_grain, large_cells, box, key[0]);

    // 3. Sort by dense index (stable: ascending object within a cell).
    const uint32_t entry_grain = static_cast<uint32_t>(grain_for(entries, kEntryGrain, kMaxEntryChunks));
    // Digits of up to kMaxDigitBits bits, all of one width, over the low `bits` bits.
    const uint32_t passes = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
    const uint32_t digit_bits = passes == 0 ? 0 : (bits + passes - 1) / passes;
    const uint64_t varying = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    const uint32_t src = radix_sort<K>(b, key, s.payload, entries, varying, digit_bits, s.radix_hist, entry_grain);
    const K* sorted = key[src];
    const uint32_t* object = s.payload[src];

    // 4. Cell runs: count cell starts per chunk, scan, then write keys, starts and entry data.
    const uint32_t chunks = chunk_count(entries, entry_grain);
    parallel_chunks(b, entries, entry_grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t starts = 0;
        for (uint32_t e = begin; e < end; ++e)
            starts += (e == 0 || sorted[e] != sorted[e - 1]) ? 1 : 0;
        s.entry_chunk[begin / entry_grain] = starts;
    });
    const uint64_t cells = scan_chunk_sums(s.entry_chunk, chunks);
    if (dims == 3)
        write_cells<3, K>(s, b, sorted, object, entries, entry_grain, box);
    else
        write_cells<2, K>(s, b, sorted, object, entries, entry_grain, box);
    s.cell_start[cells] = entries;
    s.cell_count = static_cast<uint32_t>(cells);
    s.entry_object = s.payload[src];
}

/// What the object chunks of step 1 found, summed in chunk order.
struct ChunkTotals {
    uint64_t entries = 0;
    uint32_t large = 0;
    int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}; // occupied cells
    int32_t hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
    BoxFrameBounds bounds{}; // box_lo, box_hi, max_span (the cells: the dense box's)
    uint64_t added = 0;      // against the previous frame, when compared
    uint64_t removed = 0;
    uint32_t large_changed = 0;
};

/// Sums step 1's chunks in chunk order and gives each chunk its offsets
/// (entries, large objects, moved entries).
ChunkTotals scan_object_chunks(BoxState& s, uint32_t chunks) {
    ChunkTotals t;
    for (uint32_t c = 0; c < chunks; ++c) {
        ObjectChunk& chunk = s.object_chunk[c];
        chunk.entry_offset = t.entries;
        chunk.large_offset = t.large;
        chunk.moved_offset = t.added;
        t.added += chunk.added;
        t.removed += chunk.removed;
        t.large_changed += chunk.large_changed;
        for (uint32_t d = 0; d < 3; ++d) {
            t.lo[d] = chunk.cell_lo[d] < t.lo[d] ? chunk.cell_lo[d] : t.lo[d];
            t.hi[d] = chunk.cell_hi[d] > t.hi[d] ? chunk.cell_hi[d] : t.hi[d];
            if (chunk.entries == 0 || d >= s.dims) continue;
            BoxFrameBounds& f = t.bounds;
            f.box_lo[d] = t.entries == 0 ? chunk.box_lo[d] : std::min(f.box_lo[d], chunk.box_lo[d]);
            f.box_hi[d] = t.entries == 0 ? chunk.box_hi[d] : std::max(f.box_hi[d], chunk.box_hi[d]);
            f.max_span[d] = std::max(f.max_span[d], chunk.span[d]);
        }
        t.entries += chunk.entries;
        t.large += chunk.large;
    }
    return t;
}

/// The box of occupied cells (one cell at the origin when there are no entries).
DenseBox dense_box(const ChunkTotals& t) {
    DenseBox box{};
    for (uint32_t d = 0; d < 3; ++d) {
        box.lo[d] = t.entries > 0 ? t.lo[d] : 0;
        box.extent[d] = t.entries > 0 ? static_cast<uint64_t>(int64_t{t.hi[d]} - t.lo[d] + 1) : 1;
    }
    return box;
}

/// Bits of the dense index over the box.
uint32_t index_bits(const DenseBox& box) {
    const uint64_t volume = box.extent[0] * box.extent[1] * box.extent[2]; // < 2^64 by the key limits
    return static_cast<uint32_t>(std::bit_width(volume - 1));
}

} // namespace

Status detail::entry_capacity(uint64_t needed) {
    return detail::capacity_status(StatusCode::entry_capacity,
                                   "boxes cover more cells than BoxGridConfig::max_cell_entries", needed);
}

Status detail::bad_box(StatusCode code, uint32_t index, uint32_t count) {
    const char* message = "box rejected";
    switch (code) {
    case StatusCode::invalid_position:
        message = "box coordinate is NaN or infinite";
        break;
    case StatusCode::invalid_box:
        message = "box has min > max on some axis";
        break;
    case StatusCode::position_out_of_range:
        message = "box outside the bounded world";
        break;
    default:
        break;
    }
    return detail::item_status(code, message, index, count);
}

/// Step 5, after either path: the row table of the frame's occupied cells
/// (BoxGridView::row_start): rows (y, z) of the occupied box numbered
/// r = (y - lo y) + (z - lo z) * rows per slab, and row_start[r] the first
/// cell whose row is r or later (rows + 1 slots). Each slot is written once,
/// by the cell that starts the row after it (or by the ends), so chunks of
/// cells write disjoint slots. Not built when the box has more rows than the
/// table's max_entries + 1 slots hold: queries then search for rows.
void detail::write_row_starts(BoxState& s, const ThreadBackend& b) {
    const BoxFrameBounds& f = s.bounds;
    const auto per_slab = static_cast<uint64_t>(int64_t{f.cell_hi[1]} - f.cell_lo[1] + 1);
    const uint64_t rows = per_slab * static_cast<uint64_t>(int64_t{f.cell_hi[2]} - f.cell_lo[2] + 1);
    s.valid.rows = rows <= s.max_entries;
    if (!s.valid.rows) return;
    const uint32_t cells = s.cell_count;
    auto row_of = [&](uint32_t c) {
        int32_t x = 0, y = 0, z = 0;
        s.cells.unpack(s.cell_key[c], x, y, z);
        return static_cast<uint64_t>(int64_t{y} - f.cell_lo[1]) +
               static_cast<uint64_t>(int64_t{z} - f.cell_lo[2]) * per_slab;
    };
    const auto fill = [&](uint64_t from, uint64_t to, uint32_t cell) { // slots [from, to)
        for (uint64_t r = from; r < to; ++r)
            s.row_start[r] = cell;
    };
    if (cells == 0) {
        fill(0, rows + 1, 0);
        return;
    }
    const auto grain = static_cast<uint32_t>(grain_for(cells, kEntryGrain, kMaxEntryChunks));
    // A key's bits above x are its (z, y) row (pack_key3 gives x 21 bits,
    // pack_key2 32): most cells share the previous cell's row, and skip it.
    const uint32_t x_bits = s.dims == 3 ? 21 : 32;
    parallel_chunks(b, cells, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t previous = begin == 0 ? 0 : row_of(begin - 1) + 1; // first slot not yet written
        uint64_t row_bits = begin == 0 ? ~uint64_t{0} : s.cell_key[begin - 1] >> x_bits;
        for (uint32_t c = begin; c < end; ++c) {
            if (s.cell_key[c] >> x_bits == row_bits) continue;
            row_bits = s.cell_key[c] >> x_bits;
            const uint64_t r = row_of(c);
            fill(previous, r + 1, c); // the rows after the last cell's, up to c's, start at c
            previous = r + 1;
        }
    });
    fill(row_of(cells - 1) + 1, rows + 1, cells);
}

Status BoxGrid::Impl::rebuild(BoxGrid& g, const BoxSpans& in, const ThreadBackend& caller_backend) {
    HASHGRID_ASSERT(g.initialized_, "BoxGrid::rebuild called before a successful init");
    if (!g.initialized_) return detail::make_status(StatusCode::not_built, "box grid not initialized");
    BoxState& s = state(g);
    const uint32_t n = in.count;
    if (n > s.max_objects) {
        return detail::capacity_status(StatusCode::object_capacity, "more objects than BoxGridConfig::max_objects", n);
    }
    const uint32_t dims = s.dims;
    HASHGRID_ASSERT(n == 0 || (in.min_x != nullptr && in.min_y != nullptr && in.max_x != nullptr &&
                               in.max_y != nullptr && (dims == 2 || (in.min_z != nullptr && in.max_z != nullptr))),
                    "BoxSpans: min/max x, y (and z in 3D) must be set");
    if (spans_missing(in, dims))
        return detail::make_status(StatusCode::invalid_argument, "BoxSpans: min/max x, y (and z in 3D) must be set");
    PhaseTrace trace(g.trace_, caller_backend); // the loops run through trace.backend()
    trace.begin(TracePhase::box_rebuild);
    trace.begin(TraceStep::box_rebuild_validate);
    return rebuild_checked(g, in, trace);
}

Status BoxGrid::Impl::rebuild_checked(BoxGrid& g, const BoxSpans& in, PhaseTrace& trace) {
    BoxState& s = state(g);
    const uint32_t n = in.count;
    const uint32_t dims = s.dims;
    const uint64_t large_cells = g.config_.large_object_cells;
    const ThreadBackend& b = trace.backend();

    // 1. Validation, cell ranges and counts (scratch only).
    // A multiple of 64 (kObjectGrain is one): every chunk owns whole words of s.change.
    const auto grain = static_cast<uint32_t>((grain_for(n, kObjectGrain, kMaxObjectChunks) + 63) / 64 * 64);
    const uint32_t chunks = chunk_count(n, grain);
    // Compared with the previous frame when it is known and has as many objects.
    const bool compare = s.valid.objects && built(g) && s.object_count == n && n > 0;
    // Blocks whose boxes did not change take last frame's summaries.
    const bool summaries = compare && s.valid.block_summaries;
    s.valid.invalidate(); // until this frame is accepted (a listed rebuild takes the bound hits again)
    validate_boxes(s, in, b, n, grain, large_cells, compare, summaries);
    const Status invalid = bad_box_status(s.object_chunk, chunks);
    if (!invalid.ok()) return invalid; // previous frame untouched

    const ChunkTotals totals = scan_object_chunks(s, chunks);
    const uint64_t entries = totals.entries;
    const uint64_t added = totals.added;
    BoxFrameBounds bounds = totals.bounds;
    if (entries > s.max_entries) return entry_capacity(entries); // previous frame untouched

    // The frame is accepted: from here on nothing fails. Few objects changed
    // cells: merge them into the previous frame (box_grid_update.cpp), which
    // gives the arrays of the full build below.
    const bool update = compare && totals.large_changed == 0 && s.cell_count > 0 &&
                        merge_pays(added + totals.removed, s.cell_count, s.entry_count);
    trace.next(update ? TraceStep::box_rebuild_update : TraceStep::box_rebuild_entries);
    const DenseBox box = dense_box(totals);
    const uint32_t bits = index_bits(box);
    const auto count = static_cast<uint32_t>(entries);
    s.category_common = ~0u; // copy_objects ANDs every chunk's categories into it
    if (update) {
        parallel_chunks(b, n, grain,
                        [&](uint32_t begin, uint32_t end, uint32_t) { copy_objects(s, in, dims, begin, end, true); });
        update_entries(s, b, n, grain, added, count);
    } else if (bits <= 32) {
        build_entries<uint32_t>(s, in, b, n, grain, large_cells, box, bits, count);
    } else {
        build_entries<uint64_t>(s, in, b, n, grain, large_cells, box, bits, count);
    }

    for (uint32_t d = 0; d < 3; ++d) {
        bounds.cell_lo[d] = box.lo[d];
        bounds.cell_hi[d] = static_cast<int32_t>(int64_t{box.lo[d]} + static_cast<int64_t>(box.extent[d]) - 1);
    }
    s.bounds = bounds;
    write_row_starts(s, b);
    s.object_count = n;
    s.entry_count = count;
    s.large_count = totals.large;
    s.layers = in.category != nullptr || in.mask != nullptr;
    s.valid.accept_full();
    set_built(g);
    return {};
}

} // namespace hashgrid

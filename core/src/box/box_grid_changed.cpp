// SPDX-License-Identifier: MIT
// BoxGrid::rebuild(store, backend) when the store's change log lists every
// change since the grid's frame (ObjectStore::changes_since): only the listed
// objects are read, instead of comparing every object with the last frame.
//
// 1. The log's records, each object once (marked in the moved bitmap), into
//    a list by ascending object.
// 2. Each listed object is evaluated without writing anything, in chunks of
//    the list combined in chunk order: box and layers against the frame's,
//    then validation and the cell range of a changed box, the entries it
//    removes and adds, and the frame's bounds it leaves or extends (per axis,
//    a count of the objects on each bound says when one shrinks; then every
//    object is measured again). A bad box is reported as the full rebuild
//    reports it (only listed objects can be bad: the others were accepted
//    with the last frame); a change of size class or too many entries to
//    move falls back to the full rebuild.
// 3. The frame's copies and scratch of the changed objects are written; the
//    entries of objects that changed cells are updated in place
//    (box_grid_shift.cpp), those of objects that moved within their cells
//    patched; the row table is written again when cells moved or the
//    occupied box changed. The result is the full rebuild's, array for array
//    (tests/test_box_update.cpp).
#include "box/box_grid_internal.h"
#include "box/box_rebuild_steps.h"
#include "common/trace_scope.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace hashgrid {

using namespace detail;

namespace {

/// What a listed object becomes.
struct Change {
    bool box = false;    // its box differs from the frame's, bit for bit
    bool layers = false; // its category or mask differs
    StatusCode bad = StatusCode::ok;
    bool large = false; // size class of the new box
    ObjectScratch now{};
};

inline uint32_t layer_of(const uint32_t* layers, uint32_t i) { return layers != nullptr ? layers[i] : ~0u; }

/// Step 2 for one object (the same tests and arithmetic as the full rebuild's validation).
template <uint32_t D>
Change evaluate(const BoxState& s, const BoxSpans& in, const AxisCells* axis, uint32_t i, uint64_t large_cells) {
    const float* const lows[3] = {in.min_x, in.min_y, in.min_z};
    const float* const highs[3] = {in.max_x, in.max_y, in.max_z};
    Change c;
    c.layers = layer_of(in.category, i) != s.category[i] || layer_of(in.mask, i) != s.mask[i];
    // Against the frame's scratch of the object, which holds the frame's box
    // bit for bit (as s.min / s.max do): one record instead of 2 * D arrays.
    const ObjectRecord<D>& was = object_records<D>(s)[i];
    uint32_t differ = 0;
    for (uint32_t d = 0; d < D; ++d)
        differ |=
            (float_bits(lows[d][i]) ^ float_bits(was.min[d])) | (float_bits(highs[d][i]) ^ float_bits(was.max[d]));
    c.box = differ != 0;
    if (!c.box) return c;
    ObjectScratch& o = c.now;
    bool finite = true;
    bool ordered = true;
    for (uint32_t d = 0; d < 3; ++d) {
        o.min[d] = d < D ? lows[d][i] : 0.0f;
        o.max[d] = d < D ? highs[d][i] : 0.0f;
        finite = finite && std::isfinite(o.min[d]) && std::isfinite(o.max[d]);
        ordered = ordered & (o.min[d] <= o.max[d]);
    }
    if (!finite) {
        c.bad = StatusCode::invalid_position;
        return c;
    }
    if (!ordered) {
        c.bad = StatusCode::invalid_box;
        return c;
    }
    o.lo[2] = o.hi[2] = 0;
    bool in_range = true;
    for (uint32_t d = 0; d < D; ++d)
        in_range = axis[d].cell(o.min[d], o.lo[d]) && axis[d].cell(o.max[d], o.hi[d]) && in_range;
    if (!in_range) {
        if (s.cells.bounded) {
            c.bad = StatusCode::position_out_of_range;
            return c;
        }
        mark_far(o);
        c.large = true;
        return c;
    }
    c.large = cells_covered(o) > large_cells;
    return c;
}

/// Bound kind e (kBoundKinds order) of axis d of an object, or of the frame,
/// as a double (exact for the int32 cells and the float coordinates).
inline double bound_value(const ObjectScratch& o, uint32_t d, uint32_t e) {
    switch (e) {
    case 0:
        return o.lo[d];
    case 1:
        return o.hi[d];
    case 2:
        return o.min[d];
    case 3:
        return o.max[d];
    default:
        return o.hi[d] - o.lo[d];
    }
}
/// The widest span of a frame's or a chunk's bounds (the fields differ in name only).
inline int32_t& widest(BoxFrameBounds& f, uint32_t d) { return f.max_span[d]; }
inline int32_t& widest(ObjectChunk& c, uint32_t d) { return c.span[d]; }
inline int32_t widest(const BoxFrameBounds& f, uint32_t d) { return f.max_span[d]; }
inline int32_t widest(const ObjectChunk& c, uint32_t d) { return c.span[d]; }

/// Bound kind e of axis d of a frame (BoxFrameBounds) or a chunk (ObjectChunk).
template <typename Bounds>
double bound_value(const Bounds& f, uint32_t d, uint32_t e) {
    switch (e) {
    case 0:
        return f.cell_lo[d];
    case 1:
        return f.cell_hi[d];
    case 2:
        return f.box_lo[d];
    case 3:
        return f.box_hi[d];
    default:
        return widest(f, d);
    }
}
template <typename Bounds>
void set_bound(Bounds& f, uint32_t d, uint32_t e, double v) {
    switch (e) {
    case 0:
        f.cell_lo[d] = static_cast<int32_t>(v);
        break;
    case 1:
        f.cell_hi[d] = static_cast<int32_t>(v);
        break;
    case 2:
        f.box_lo[d] = static_cast<float>(v);
        break;
    case 3:
        f.box_hi[d] = static_cast<float>(v);
        break;
    default:
        widest(f, d) = static_cast<int32_t>(v);
        break;
    }
}
/// Whether v lies beyond `bound` (below a lower bound, above an upper one).
inline bool beyond(uint32_t e, double v, double bound) { return e == 0 || e == 2 ? v < bound : v > bound; }

/// A bound and how many objects lie on it, as values are offered one by one.
struct BoundTally {
    double value = 0.0;
    uint32_t hits = 0; // 0: nothing offered yet
    void offer(uint32_t e, double v) {
        if (hits == 0 || beyond(e, v, value)) {
            value = v;
            hits = 1;
        } else if (v == value) {
            ++hits;
        }
    }
    void merge(uint32_t e, const BoundTally& t) {
        if (t.hits == 0) return;
        if (hits == 0 || beyond(e, t.value, value)) {
            *this = t;
        } else if (t.value == value) {
            hits += t.hits;
        }
    }
};

/// The frame's bounds and their hit counts (BoxState::bound_hits) from every
/// small object's scratch: per chunk, then in chunk order.
template <uint32_t D>
void measure_bounds(BoxState& s, const ThreadBackend& b, uint32_t n, uint32_t grain, BoxFrameBounds& f) {
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        BoundTally t[3][kBoundKinds] = {};
        for (uint32_t i = begin; i < end; ++i) {
            if (s.is_large[i] != 0) continue;
            const ObjectScratch o = unpack<D>(object_records<D>(s)[i]);
            for (uint32_t d = 0; d < D; ++d)
                for (uint32_t e = 0; e < kBoundKinds; ++e)
                    t[d][e].offer(e, bound_value(o, d, e));
        }
        ObjectChunk& chunk = s.object_chunk[begin / grain];
        for (uint32_t d = 0; d < D; ++d)
            for (uint32_t e = 0; e < kBoundKinds; ++e) {
                chunk.hits[d][e] = t[d][e].hits;
                set_bound(chunk, d, e, t[d][e].value);
            }
    });
    BoundTally t[3][kBoundKinds] = {};
    for (uint32_t c = 0; c < chunk_count(n, grain); ++c)
        for (uint32_t d = 0; d < D; ++d)
            for (uint32_t e = 0; e < kBoundKinds; ++e)
                t[d][e].merge(e, BoundTally{bound_value(s.object_chunk[c], d, e), s.object_chunk[c].hits[d][e]});
    f = BoxFrameBounds{};
    for (uint32_t d = 0; d < D; ++d)
        for (uint32_t e = 0; e < kBoundKinds; ++e) {
            set_bound(f, d, e, t[d][e].value);
            s.bound_hits[d][e] = t[d][e].hits;
        }
    s.valid.bound_hits = true;
}

/// The chunks of the list. Chunk k starts at k * grain, moved on past objects
/// of the same bitmap word as the one before: no two chunks share a word (a
/// word holds 64 objects, fewer than a grain), so they set their bits without
/// atomics. One chunk for a one-thread backend (the chunks change no result,
/// only who runs what).
struct ListedChunks {
    const uint32_t* listed;
    uint32_t count;
    uint32_t grain;
    uint32_t chunks;

    ListedChunks(const ThreadBackend& b, const uint32_t* list, uint32_t n)
        : listed(list), count(n),
          grain(b.worker_count > 1 && n > 0 ? static_cast<uint32_t>(grain_for(n, kListedGrain, kMaxListedChunks))
                                            : n + 1),
          chunks(chunk_count(n, grain)) {}
    [[nodiscard]] uint32_t begin(uint32_t chunk) const {
        uint32_t j = chunk * grain < count ? chunk * grain : count;
        while (j > 0 && j < count && listed[j] >> 6 == listed[j - 1] >> 6)
            ++j;
        return j;
    }
    /// Runs fn(chunk, begin, end) for every chunk of the list.
    template <typename Fn>
    void run(const ThreadBackend& b, Fn&& fn) const {
        parallel_chunks(b, chunks, 1,
                        [&](uint32_t chunk, uint32_t, uint32_t) { fn(chunk, begin(chunk), begin(chunk + 1)); });
    }
};

/// Step 2 for the listed objects [begin, end) (read only): their bad boxes,
/// layer and size-class changes, entries removed and added, and the objects
/// on the old bounds and the new bounds they offer.
template <uint32_t D>
ListedChunk evaluate_chunk(const BoxState& s, const BoxSpans& in, const AxisCells* axis, const uint32_t* listed,
                           uint32_t begin, uint32_t end, uint64_t large_cells) {
    const BoxFrameBounds& old_bounds = s.bounds;
    ListedChunk r{};
    r.bad_index = kNone;
    r.common = ~0u;
    BoundTally offered[3][kBoundKinds] = {};
    for (uint32_t j = begin; j < end; ++j) {
        const uint32_t i = listed[j];
        const Change c = evaluate<D>(s, in, axis, i, large_cells);
        if (c.bad != StatusCode::ok) {
            if (r.bad_count++ == 0) { // the list ascends: the chunk's first is its lowest
                r.bad_index = i;
                r.bad_code = c.bad;
            }
            continue;
        }
        if (c.layers) {
            const uint32_t was = s.category[i];
            const uint32_t now = layer_of(in.category, i);
            r.all_categories = r.all_categories || (now & ~was & ~s.category_common) != 0; // a bit may join
            r.common &= now;
        }
        if (!c.box) continue;
        const ObjectScratch old = unpack<D>(object_records<D>(s)[i]);
        const bool was_large = is_far(old) || cells_covered(old) > large_cells; // the frame's is_large[i]
        r.large_changed = r.large_changed || c.large != was_large;
        if (c.large || was_large) continue;
        bool same = true;
        for (uint32_t d = 0; d < D; ++d) {
            same = same & (old.lo[d] == c.now.lo[d]) & (old.hi[d] == c.now.hi[d]);
            for (uint32_t e = 0; e < kBoundKinds; ++e) {
                r.on_bound[d][e] += bound_value(old, d, e) == bound_value(old_bounds, d, e) ? 1 : 0;
                offered[d][e].offer(e, bound_value(c.now, d, e));
            }
        }
        if (!same) {
            r.removed += cells_covered(old);
            r.added += cells_covered(c.now);
        }
    }
    for (uint32_t d = 0; d < D; ++d)
        for (uint32_t e = 0; e < kBoundKinds; ++e) {
            r.offered[d][e] = offered[d][e].value;
            r.offered_hits[d][e] = offered[d][e].hits;
        }
    return r;
}

/// What the listed chunks found, combined in chunk order.
struct ListedTotals {
    uint32_t bad_count = 0;
    uint32_t bad_index = kNone;
    StatusCode bad_code = StatusCode::ok;
    uint64_t added = 0;
    uint64_t removed = 0;
    bool large_changed = false;
    bool all_categories = false;
    uint32_t common = ~0u; // AND of the frame's and the listed objects' new categories
    uint32_t left[3][kBoundKinds] = {};
    BoundTally offered[3][kBoundKinds] = {};
};

/// Step 2's chunks in order; each chunk's `removed` becomes where its left
/// cells' keys go.
template <uint32_t D>
ListedTotals combine_chunks(BoxState& s, uint32_t chunks) {
    ListedTotals t;
    t.common = s.category_common;
    for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
        ListedChunk& r = s.listed_chunk[chunk];
        if (r.bad_count > 0 && t.bad_count == 0) {
            t.bad_index = r.bad_index;
            t.bad_code = r.bad_code;
        }
        t.bad_count += r.bad_count;
        t.large_changed = t.large_changed || r.large_changed;
        t.all_categories = t.all_categories || r.all_categories;
        t.common &= r.common;
        t.added += r.added;
        const uint64_t chunk_removed = r.removed;
        r.removed = t.removed; // now: where the chunk's left keys go
        t.removed += chunk_removed;
        for (uint32_t d = 0; d < D; ++d)
            for (uint32_t e = 0; e < kBoundKinds; ++e) {
                t.left[d][e] += r.on_bound[d][e];
                t.offered[d][e].merge(e, BoundTally{r.offered[d][e], r.offered_hits[d][e]});
            }
    }
    return t;
}

/// The new bounds and their hits: a bound moves out to a changed box beyond
/// it, and shrinks when no object is left on it. Returns whether one shrinks
/// (or the hits are not known: then every object is measured again).
template <uint32_t D>
bool new_bounds(const BoxState& s, const ListedTotals& t, BoxFrameBounds& bounds, uint32_t (&hits)[3][kBoundKinds]) {
    bool shrink = !s.valid.bound_hits;
    for (uint32_t d = 0; d < D && !shrink; ++d)
        for (uint32_t e = 0; e < kBoundKinds; ++e) {
            const double was = bound_value(s.bounds, d, e);
            const BoundTally& offered = t.offered[d][e];
            hits[d][e] = s.bound_hits[d][e] - t.left[d][e];
            if (offered.hits > 0 && beyond(e, offered.value, was)) {
                set_bound(bounds, d, e, offered.value);
                hits[d][e] = offered.hits;
            } else if (offered.hits > 0 && offered.value == was) {
                hits[d][e] += offered.hits;
            }
            shrink = shrink || hits[d][e] == 0;
        }
    return shrink;
}

/// Step 3 for the listed objects [begin, end) of `chunk`: the frame's copies
/// and scratch of the changed ones, their moved and leaving bits, and the keys
/// of the cells they leave (from the chunk's offset in spare_cell_key).
template <uint32_t D>
void write_chunk(BoxState& s, const BoxSpans& in, const AxisCells* axis, const ListedChunks& list, uint32_t chunk,
                 uint32_t begin, uint32_t end, uint64_t large_cells) {
    uint64_t left_key = s.listed_chunk[chunk].removed; // keys of the cells objects leave
    for (uint32_t j = begin; j < end; ++j) {
        const uint32_t i = list.listed[j];
        const Change c = evaluate<D>(s, in, axis, i, large_cells);
        if (c.layers) {
            s.category[i] = layer_of(in.category, i);
            s.mask[i] = layer_of(in.mask, i);
        }
        if (!c.box) continue;
        ObjectRecord<D>& record = object_records<D>(s)[i];
        const ObjectScratch o = unpack<D>(record);
        bool same = true;
        for (uint32_t d = 0; d < D; ++d) {
            same = same & (o.lo[d] == c.now.lo[d]) & (o.hi[d] == c.now.hi[d]);
            s.min[d][i] = c.now.min[d];
            s.max[d][i] = c.now.max[d];
        }
        const uint64_t bit = uint64_t{1} << (i & 63); // the chunk's own words
        s.change.moved[i >> 6] |= bit;
        if (!c.large && !same) { // the keys of the cells it leaves, for the shift
            s.change.leaving[i >> 6] |= bit;
            for_each_cell_key<D>(o, [&](uint64_t key) { s.spare_cell_key[left_key++] = key; });
        }
        pack<D>(record, c.now);
    }
    HASHGRID_ASSERT(end == list.count || left_key == s.listed_chunk[chunk + 1].removed,
                    "box update: a chunk's left cells disagree with its count");
}

/// Steps 2-3 for D dimensions over the listed objects; `applied` is false
/// when the full rebuild must run instead (nothing was written then).
template <uint32_t D>
Status apply_listed(BoxState& s, const BoxSpans& in, const uint32_t* listed, uint32_t count, uint64_t large_cells,
                    PhaseTrace& trace, bool& applied) {
    applied = false;
    const Lattice& k = s.cells;
    const AxisCells axis[3] = {AxisCells(k, 0), AxisCells(k, 1), AxisCells(k, 2)};
    const ThreadBackend& b = trace.backend();
    const ListedChunks list(b, listed, count);

    // 2. Evaluate (read only), in chunks of the list, then the chunks in order.
    list.run(b, [&](uint32_t chunk, uint32_t begin, uint32_t end) {
        s.listed_chunk[chunk] = evaluate_chunk<D>(s, in, axis, listed, begin, end, large_cells);
    });
    const ListedTotals t = combine_chunks<D>(s, list.chunks);
    if (t.bad_count > 0) return bad_box(t.bad_code, t.bad_index, t.bad_count); // previous frame untouched
    if (t.large_changed) return {};                                            // the large set changes: full rebuild
    const uint64_t entries = uint64_t{s.entry_count} - t.removed + t.added;
    if (entries > s.max_entries) return entry_capacity(entries);         // previous frame untouched
    if ((t.added + t.removed) * kUpdateShare > s.entry_count) return {}; // the full rebuild's sort is cheaper
    const BoxFrameBounds old_bounds = s.bounds;
    BoxFrameBounds bounds = old_bounds;
    uint32_t hits[3][kBoundKinds] = {};
    const bool shrink = new_bounds<D>(s, t, bounds, hits);

    // 3. The frame is accepted: write the changed objects, then their entries.
    applied = true;
    trace.next(TraceStep::box_rebuild_update);
    const uint32_t n = s.object_count;
    std::memset(s.change.moved, 0, (n + 63) / 64 * sizeof(uint64_t)); // held the seen marks of step 1
    list.run(b, [&](uint32_t chunk, uint32_t begin, uint32_t end) {
        write_chunk<D>(s, in, axis, list, chunk, begin, end, large_cells);
    });
    uint32_t common = t.common;
    if (t.all_categories) {
        common = ~0u;
        for (uint32_t i = 0; i < n; ++i)
            common &= s.category[i];
    }
    s.category_common = common;
    if (shrink) {
        measure_bounds<D>(s, b, n, static_cast<uint32_t>(grain_for(n, kObjectGrain, kMaxObjectChunks)), bounds);
    } else {
        for (uint32_t d = 0; d < D; ++d)
            for (uint32_t e = 0; e < kBoundKinds; ++e)
                s.bound_hits[d][e] = hits[d][e];
    }
    bool cells_moved = false;
    if (t.added > 0) cells_moved = shift_listed_entries(s, b, t.added, t.removed, static_cast<uint32_t>(entries));
    // The objects that moved within their cells (each patches its own entries).
    list.run(b, [&](uint32_t, uint32_t begin, uint32_t end) { patch_moved_boxes(s, listed + begin, end - begin); });
    bool same_box = true;
    for (uint32_t d = 0; d < 3; ++d)
        same_box = same_box && bounds.cell_lo[d] == old_bounds.cell_lo[d] && bounds.cell_hi[d] == old_bounds.cell_hi[d];
    s.bounds = bounds;
    // The row table names cell indices by row of the occupied cells' box: it
    // stays when neither changed.
    if (cells_moved || !same_box) write_row_starts(s, b);
    s.entry_count = static_cast<uint32_t>(entries);
    return {};
}

} // namespace

Status BoxGrid::Impl::rebuild_changed(BoxGrid& g, const BoxSpans& in, const ObjectChanges& changes,
                                      const ThreadBackend& caller_backend) {
    BoxState& s = state(g); // BoxGrid::rebuild(store) checked the init
    const uint32_t n = in.count;
    // The listed path needs the last frame in full (objects, layers) with the
    // same objects, and pays off only when few changed.
    const bool listed_path = changes.complete && built(g) && s.valid.objects && s.object_count == n && n > 0 &&
                             s.cell_count > 0 && s.layers && in.category != nullptr && in.mask != nullptr &&
                             changes.size() <= n / 8 && !spans_missing(in, s.dims);
    if (!listed_path) return rebuild(g, in, caller_backend);
    PhaseTrace trace(g.trace_, caller_backend);
    trace.begin(TracePhase::box_rebuild);
    trace.begin(TraceStep::box_rebuild_listed);

    // 1. Each logged object once, by ascending index (the moved bits mark the
    // ones logged; walking them in order reads the per-object arrays forwards).
    const uint32_t words = (n + 63) / 64;
    std::memset(s.change.moved, 0, words * sizeof(uint64_t));
    std::memset(s.change.leaving, 0, words * sizeof(uint64_t));
    uint64_t at = changes.begin % changes.ring_size;
    for (uint64_t c = 0; c < changes.size(); ++c) {
        const uint32_t i = changes.ring[at];
        at = at + 1 == changes.ring_size ? 0 : at + 1;
        if (i >= n) { // not of this layout (a complete list has none): compare every object
            trace.next(TraceStep::box_rebuild_validate);
            return rebuild_checked(g, in, trace);
        }
        s.change.moved[i >> 6] |= uint64_t{1} << (i & 63);
    }
    uint32_t* const listed = s.coarse_cell; // scratch of max_objects
    uint32_t count = 0;
    for (uint32_t w = 0; w < words; ++w)
        for (uint64_t bits = s.change.moved[w]; bits != 0; bits &= bits - 1)
            listed[count++] = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));

    bool applied = false;
    const uint64_t large_cells = g.config_.large_object_cells;
    const Status st = s.dims == 3 ? apply_listed<3>(s, in, listed, count, large_cells, trace, applied)
                                  : apply_listed<2>(s, in, listed, count, large_cells, trace, applied);
    if (!st.ok()) return st;
    if (!applied) {
        trace.next(TraceStep::box_rebuild_validate);
        return rebuild_checked(g, in, trace);
    }
    s.valid.block_summaries = false; // the listed objects changed without their blocks'
    set_built(g);
    return {};
}

} // namespace hashgrid

// SPDX-License-Identifier: MIT
// What the box-grid query files share (box_queries.cpp: set queries, prepare
// and batches; box_query_ray.cpp; box_query_frustum.cpp; box_query_nearest.cpp;
// and the store-fed forms, store_queries.cpp).
//
// Cells. cell(p) = floor((p - origin) * scale) in double, clamped into the
// key range (bounded: [0, n - 1], the grid's clamp mode; unbounded: the
// packing limits, which every object kept in cells respects: objects beyond
// them are large objects). It is the function the
// box grid used to place objects, and it is monotone, so "box B covers cell c"
// is "c is in [cell(B.min), cell(B.max)]" on every axis.
//
// Finding cells. The frame's CellIndex (cell_index.h) has the occupied cells' packed keys in ascending
// (z, y, x) order. A box of cells is scanned row by row (lattice/cell_box_walk.h). With the grid's row
// table (BoxGridView::row_start) a row's cells are two reads away and the
// first one in the query's x range is found from the cell count; without it
// (views built by hand, too many rows) each row takes a galloping search,
// and a search that lands past the row jumps straight to the next occupied
// row or slab, so empty space costs nothing per cell.
//
// Sinks (query_sinks.h). A set query's walk reports each result to a sink:
// BufferSink writes the buffer form's prefix and counts, VisitorSink calls
// the caller's visitor and stops the walk (Cells::walk, scan_box, the
// large-object tail) as soon as it returns false.
#pragma once

#include "common/trace_scope.h"
#include "hashgrid/assert.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/query_types.h"
#include "kernels/box_query_kernels.h"
#include "lattice/cell_box_walk.h"
#include "lattice/cell_index.h"
#include "query/query_batch.h"
#include "query/query_sinks.h"
#include "query/query_visit.h"
#include "query/segment_walk.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace hashgrid::box_query {

// The sinks and results every query shares (query_sinks.h).
using detail::boxes_meet;
using detail::BufferSink;
using detail::CellBox;
using detail::collect_runs;
using detail::CountingBufferSink;
using detail::kAbsoluteSlack;
using detail::kDoubleInf;
using detail::make_status;
using detail::note_cells;
using detail::note_tested;
using detail::query_finish;
using detail::query_refused;
using detail::VisitorSink;

/// Relative widening of double-precision ranges against float rounding.
inline constexpr double kRelativeSlack = 0x1p-20;

using detail::every_row;
using detail::never_stop; // buffer forms, rays, nearest

/// The frame's cell index (its lattice, occupied cells and their entries),
/// with the view's object arrays at hand.
struct Cells : detail::CellIndex {
    const BoxQueryGrid& grid;
    const BoxGridView& view;

    /// The view's row table (BoxGridView::row_start) when it describes the
    /// rows the walks clip to (the grid's occupied extent); null otherwise.
    detail::RowTable rows;

    explicit Cells(const BoxQueryGrid& g) : grid(g), view(g.view) {
        HASHGRID_ASSERT(view.config != nullptr, "BoxQueryGrid: the view has no config (use prepare_box_queries)");
        detail::Lattice l = detail::make_lattice(*view.config);
        l.scale = view.scale;
        static_cast<detail::CellIndex&>(*this) = detail::make_cell_index(l, view);
        if (view.row_start != nullptr && view.bounds != nullptr && g.has_cells) {
            const BoxFrameBounds& b = *view.bounds;
            bool same = true;
            for (uint32_t d = 0; d < 3; ++d)
                same = same && b.cell_lo[d] == g.cell_lo[d] && b.cell_hi[d] == g.cell_hi[d];
            if (same) {
                rows.start = view.row_start;
                for (uint32_t d = 0; d < 3; ++d)
                    rows.lo[d] = b.cell_lo[d];
                rows.rows_per_slab = static_cast<uint64_t>(int64_t{b.cell_hi[1]} - b.cell_lo[1] + 1);
            }
        }
    }

    /// The entry arrays as the entry kernels read them (box_query_kernels.h).
    [[nodiscard]] detail::box_query_kernels::EntryData entry_data() const {
        detail::box_query_kernels::EntryData d;
        for (uint32_t a = 0; a < 3; ++a) {
            d.lo[a] = view.entry_min[a];
            d.hi[a] = view.entry_max[a];
        }
        d.flags = view.entry_flags;
        d.object = view.entry_object;
        d.padded = view.entry_padding >= 8; // the widest kernel reads 7 past a run
        return d;
    }
    /// Clamped cell coordinate of a (double) coordinate; d < dims.
    [[nodiscard]] int32_t cell(uint32_t d, double p) const { return lat.clamped_cell_of(d, p); }
    /// World coordinate where cell k starts (approximately: ranges built from it are widened).
    [[nodiscard]] double boundary(uint32_t d, int64_t k) const { return lat.boundary(d, k); }

    /// Every object of the frame is in the layer mask (no category to read).
    [[nodiscard]] bool all_in_layer(uint32_t layer_mask) const {
        return view.category == nullptr || (view.category_common & layer_mask) != 0;
    }
    [[nodiscard]] bool in_layer(uint32_t object, uint32_t layer_mask) const {
        return all_in_layer(layer_mask) || (view.category[object] & layer_mask) != 0;
    }
    void object_box(uint32_t object, float lo[3], float hi[3]) const {
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d] = d < lat.dims ? view.min[d][object] : 0.0f;
            hi[d] = d < lat.dims ? view.max[d][object] : 0.0f;
        }
    }
    void object_min_cell(uint32_t object, int32_t lo[3]) const {
        for (uint32_t d = 0; d < 3; ++d)
            lo[d] = d < lat.dims ? cell(d, static_cast<double>(view.min[d][object])) : 0;
    }
    void object_cells(uint32_t object, CellBox& r) const {
        for (uint32_t d = 0; d < 3; ++d) {
            r.lo[d] = d < lat.dims ? cell(d, static_cast<double>(view.min[d][object])) : 0;
            r.hi[d] = d < lat.dims ? cell(d, static_cast<double>(view.max[d][object])) : 0;
        }
    }

    /// Cell range [cell(lo), cell(hi)] per axis of a double box.
    [[nodiscard]] CellBox cells_of(const double lo[3], const double hi[3]) const {
        CellBox r{};
        for (uint32_t d = 0; d < lat.dims; ++d) {
            r.lo[d] = cell(d, lo[d]);
            r.hi[d] = cell(d, hi[d]);
        }
        return r;
    }

    /// Intersects a cell box with the occupied extent; false when empty.
    bool clip(CellBox& r) const {
        if (!grid.has_cells) return false;
        for (uint32_t d = 0; d < 3; ++d) {
            r.lo[d] = std::max(r.lo[d], grid.cell_lo[d]);
            r.hi[d] = std::min(r.hi[d], grid.cell_hi[d]);
            if (r.lo[d] > r.hi[d]) return false;
        }
        return true;
    }

    /// Calls row_fn(first, end, y, z) for every row of `r` with occupied
    /// cells: cells [first, end) are that row's occupied cells in the x range,
    /// in ascending key order, rows in ascending (z, y); rows for which
    /// row_ok(y, z, x_lo, x_hi) is false are skipped (row_ok may narrow
    /// [x_lo, x_hi], starting as r's x range): the shared walk over a box of
    /// cells (lattice/cell_box_walk.h), through the row table (`rows`) when
    /// the view has one. Returns as soon as row_fn returns true (stop).
    template <typename RowOk, typename RowFn>
    void walk_rows(CellBox r, RowOk&& row_ok, RowFn&& row_fn) const {
        if (!clip(r)) return;
        detail::walk_cell_rows(*this, &rows, r, row_ok, row_fn);
    }

    /// Calls cell_fn(cell index, x, y, z) for every occupied cell in `r`, in
    /// ascending key order, skipping rows as walk_rows does. Returns as soon
    /// as stop() is true after a cell.
    template <typename RowOk, typename CellFn, typename Stop>
    void walk(CellBox r, RowOk&& row_ok, CellFn&& cell_fn, Stop&& stop) const {
        walk_rows(r, row_ok, [&](uint32_t first, uint32_t end, int32_t, int32_t) {
            for (uint32_t at = first; at < end; ++at) {
                int32_t kx = 0, ky = 0, kz = 0;
                coordinates(at, kx, ky, kz);
                cell_fn(at, kx, ky, kz);
                if (stop()) return true;
            }
            return false;
        });
    }
    template <typename RowOk, typename CellFn>
    void walk(CellBox r, RowOk&& row_ok, CellFn&& cell_fn) const {
        walk(r, row_ok, cell_fn, never_stop);
    }
};

// ---------------------------------------------------------------------------
// Sinks and results.

// ---------------------------------------------------------------------------
// Ordered results (nearest, ray).

/// (distance_squared, index) ascending: the order of nearest results.
inline bool hit_before(const NearestHit& a, const NearestHit& b) {
    return a.distance_squared < b.distance_squared || (a.distance_squared == b.distance_squared && a.index < b.index);
}
/// (t, index) ascending: the order of ray hits.
inline bool hit_before(const RayHit& a, const RayHit& b) { return a.t < b.t || (a.t == b.t && a.index < b.index); }

/// The `limit` first results so far by hit_before, sorted, in a caller's
/// buffer (insertion: O(limit) per better candidate, no scratch). Offers
/// that are not strictly after `after` (when set) are dropped, so a search
/// through the list finds the results that follow a given one: what the
/// ordered visitor forms use to continue where their last run stopped.
template <typename Hit>
struct SortedHits {
    Hit* out;
    uint32_t limit;
    const Hit* after = nullptr;
    uint32_t size = 0;

    [[nodiscard]] bool full() const { return size == limit; }
    void offer(const Hit& h) {
        if (after != nullptr && !hit_before(*after, h)) return;
        if (size == limit) {
            if (limit == 0 || !hit_before(h, out[limit - 1])) return;
            --size;
        }
        uint32_t i = size;
        while (i > 0 && hit_before(h, out[i - 1])) {
            out[i] = out[i - 1];
            --i;
        }
        out[i] = h;
        ++size;
    }
};

inline QueryResult invalid(const char* message) {
    return query_refused(make_status(StatusCode::invalid_query, message));
}

/// O(1) check that a BoxQueryGrid came from prepare_box_queries() over a
/// built view: a default one (null config) or a hand-made view missing the
/// arrays its counts need would otherwise be dereferenced.
inline bool usable(const BoxQueryGrid& g) {
    const BoxGridView& v = g.view;
    if (v.config == nullptr) return false;
    if (v.config->dimensions != 2 && v.config->dimensions != 3) return false;
    if (v.object_count != 0 &&
        (v.min[0] == nullptr || v.min[1] == nullptr || v.max[0] == nullptr || v.max[1] == nullptr ||
         (v.config->dimensions == 3 && (v.min[2] == nullptr || v.max[2] == nullptr))))
        return false;
    if (v.cell_count != 0 && (v.cell_key == nullptr || v.cell_start == nullptr || v.entry_object == nullptr))
        return false;
    if (g.has_cells && v.cell_count == 0) return false;
    return v.large_count == 0 || v.large_object != nullptr;
}

/// not_built when the view holds no frame, stale_view when the grid has been
/// rebuilt or re-initialised since the view was taken, else ok. O(1).
inline Status frame_status(const BoxQueryGrid& g) {
    if (!g.view.built) return make_status(StatusCode::not_built, "box query before a successful rebuild");
    if (g.view.live_frame != nullptr && *g.view.live_frame != g.view.frame)
        return make_status(StatusCode::stale_view,
                           "BoxQueryGrid prepared before the grid's last rebuild: call prepare_box_queries again");
    return Status{};
}

inline constexpr const char* kUnusableGrid =
    "BoxQueryGrid: no view (use prepare_box_queries on a built BoxGrid's view)";

// The view's frame: not_built or stale_view, returned before anything is read.
#define HASHGRID_REQUIRE_FRAME(grid)                                                                                   \
    do {                                                                                                               \
        const ::hashgrid::Status frame_check = ::hashgrid::box_query::frame_status(grid);                              \
        if (!frame_check.ok()) {                                                                                       \
            ::hashgrid::QueryResult frame_result;                                                                      \
            frame_result.status = frame_check;                                                                         \
            return frame_result;                                                                                       \
        }                                                                                                              \
    } while (0)

/// The result of a query through `grid`, stamped with the layout its indices
/// name (QueryResult::layout): every public box query returns through this,
/// whatever the status.
inline QueryResult stamped(const BoxQueryGrid& grid, QueryResult r) {
    r.layout = grid.view.source_layout;
    return r;
}

/// Buffer form of a set query: checks the grid and the buffer, then
/// walk(sink) reports every result to a BufferSink and returns ok, or why the
/// query is refused (then nothing was written). Stamped.
template <typename Walk>
QueryResult buffer_query(const BoxQueryGrid& grid, uint32_t* out, uint64_t capacity, const char* null_output,
                         Walk&& walk) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_ARGUMENT(usable(grid), kUnusableGrid);
        HASHGRID_REQUIRE_FRAME(grid);
        HASHGRID_REQUIRE_ARGUMENT(out != nullptr || capacity == 0, null_output);
        BufferSink sink{out, capacity};
        const Status walked = walk(sink);
        return walked.ok() ? query_finish(sink.total, capacity) : query_refused(walked);
    }());
}

/// Buffer form of a ranked query (rays, nearest): checks the grid and the
/// buffer, then run(cells) answers on the grid's cell index. Stamped.
template <typename Hit, typename Run>
QueryResult ranked_query(const BoxQueryGrid& grid, const Hit* out, uint64_t capacity, const char* null_output,
                         Run&& run) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_ARGUMENT(usable(grid), kUnusableGrid);
        HASHGRID_REQUIRE_FRAME(grid);
        HASHGRID_REQUIRE_ARGUMENT(out != nullptr || capacity == 0, null_output);
        return run(Cells(grid));
    }());
}

/// Visitor form of the same query: the same checks and walk, with a VisitorSink.
/// total = calls made; status ok also after an early stop. Stamped.
template <typename Walk>
QueryResult visitor_query(const BoxQueryGrid& grid, QueryVisitor visitor, const char* null_visitor, Walk&& walk) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_ARGUMENT(usable(grid), kUnusableGrid);
        HASHGRID_REQUIRE_FRAME(grid);
        HASHGRID_REQUIRE_ARGUMENT(visitor.visit != nullptr, null_visitor);
        VisitorSink sink{visitor};
        QueryResult r = query_refused(walk(sink));
        if (r.status.ok()) r.total = sink.total;
        return r;
    }());
}

// ---------------------------------------------------------------------------
// Box scans.

inline bool finite3(const float v[3], uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!std::isfinite(v[d])) return false;
    return true;
}

/// A ray the ray queries accept: origin and direction finite, max_t >= 0
/// (+inf allowed). The store-fed ray batches (store_queries.cpp) check every
/// ray with it before writing anything, as query_ray_first_batch does.
inline bool valid_ray(const Ray& ray, uint32_t dims) {
    return finite3(ray.origin, dims) && finite3(ray.direction, dims) && !std::isnan(ray.max_t) && ray.max_t >= 0.0f;
}

/// query_ray_first_batch's check of its rays before it writes anything (the
/// index and the store-fed forms): invalid_query with the first invalid ray's
/// index and how many are invalid, or ok.
inline Status check_ray_batch(const Ray* rays, uint32_t count, uint32_t dims) {
    uint32_t first = 0;
    uint32_t bad = 0;
    for (uint32_t q = 0; q < count; ++q) {
        if (valid_ray(rays[q], dims)) continue;
        if (bad++ == 0) first = q;
    }
    if (bad == 0) return {};
    return detail::item_status(StatusCode::invalid_query,
                               "query batch: a ray is invalid (NaN/infinite or negative max_t)", first, bad);
}

inline bool boxes_overlap(const float alo[3], const float ahi[3], const float blo[3], const float bhi[3],
                          uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!(alo[d] <= bhi[d] && blo[d] <= ahi[d])) return false;
    return true;
}

/// Marks a large object (no entry) in scan_box's callback.
inline constexpr uint32_t kNoEntry = 0xffffffffu;

/// scan_box's default cell callback: nothing.
struct NoCellNote {
    void operator()() const {}
};

/// Box scan with the min-corner rule: calls accept(object, entry) for every
/// object in a cell of [cell(lo), cell(hi)] whose reporting cell this is, in
/// order, then accept(object, kNoEntry) for every large object, until stop()
/// is true. `accept` decides and reports. When the view carries per-entry
/// first-cell bits (BoxGrid's views do), the rule is a bit test per entry;
/// otherwise each entry's object is looked up and its first cell recomputed.
/// on_cell() is called for each occupied cell read (QueryStats).
template <typename Accept, typename Stop, typename OnCell = NoCellNote>
void scan_box(const Cells& c, const double lo[3], const double hi[3], Accept&& accept, Stop&& stop,
              OnCell on_cell = {}) {
    const CellBox range = c.cells_of(lo, hi);
    const uint32_t* flags = c.view.entry_flags;
    c.walk(
        range, every_row,
        [&](uint32_t cell, int32_t x, int32_t y, int32_t z) {
            on_cell();
            const int32_t at[3] = {x, y, z};
            const uint32_t end = c.end(cell);
            if (flags != nullptr) {
                // Axes where this cell is the scan's first need no bit. (Spelled
                // out per axis: GCC 12 under ASan reports the loop form as
                // maybe-uninitialized.)
                const uint32_t need =
                    (range.lo[0] == x ? 0u : 1u) | (range.lo[1] == y ? 0u : 2u) | (range.lo[2] == z ? 0u : 4u);
                for (uint32_t e = c.begin(cell); e < end && !stop(); ++e)
                    if ((flags[e] & need) == need) accept(c.view.entry_object[e], e);
                return;
            }
            for (uint32_t e = c.begin(cell); e < end && !stop(); ++e) {
                const uint32_t object = c.view.entry_object[e];
                int32_t olo[3];
                c.object_min_cell(object, olo);
                bool here = true;
                for (uint32_t d = 0; d < 3; ++d)
                    here = here && std::max(range.lo[d], olo[d]) == at[d];
                if (here) accept(object, e);
            }
        },
        stop);
    for (uint32_t j = 0; j < c.view.large_count && !stop(); ++j)
        accept(c.view.large_object[j], kNoEntry);
}

/// Whether scan_box_entries can serve a walk into a plain buffer sink
/// (BufferSink: no early stop, no work counted) over this view: it needs
/// per-entry first-cell bits and entry boxes (BoxGrid's views have them).
inline bool entry_kernels_apply(const Cells& c) {
    return c.view.entry_flags != nullptr && c.view.entry_min[0] != nullptr;
}

/// Keeps, in place and in order, the objects of out[0, n) in the layer mask;
/// returns how many.
inline uint32_t keep_in_layer(const Cells& c, uint32_t layer_mask, uint32_t* out, uint32_t n) {
    if (c.all_in_layer(layer_mask)) return n; // a category load per hit, a cache miss each, saved
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t object = out[i];
        out[kept] = object;
        kept += (c.view.category[object] & layer_mask) != 0 ? 1u : 0u;
    }
    return kept;
}

/// scan_box for a buffer sink with an entry kernel (entry_kernels_apply):
/// the same results in the same order. Each row of the scan is one or two
/// runs of entries (the row's first cell apart when it is the scan's first
/// on x, which needs one flag less); runs are held while the sink has room
/// for all their candidates and handed to kernel(entries, runs, out) in
/// groups, the hits then filtered by layer. A run without that room is tested one entry
/// at a time through accept(object, entry), as are the large objects.
template <typename Kernel, typename Accept>
void scan_box_entries(const Cells& c, const double lo[3], const double hi[3], uint32_t layer_mask, BufferSink& sink,
                      Kernel&& kernel, Accept&& accept) {
    using detail::box_query_kernels::EntryRuns;
    const CellBox range = c.cells_of(lo, hi);
    const uint32_t* flags = c.view.entry_flags;
    const detail::box_query_kernels::EntryData entries = c.entry_data();
    auto runs = collect_runs<EntryRuns>(sink, [&](uint32_t* at, const EntryRuns& held) {
        return keep_in_layer(c, layer_mask, at, kernel(entries, held, at));
    });
    auto take = [&](uint32_t b, uint32_t e, uint32_t need) {
        if (b == e || runs.take(b, e, need)) return;
        for (uint32_t k = b; k < e; ++k)
            if ((flags[k] & need) == need) accept(c.view.entry_object[k], k);
    };
    c.walk_rows(range, every_row, [&](uint32_t first, uint32_t end, int32_t y, int32_t z) {
        const uint32_t need = (range.lo[1] == y ? 0u : 2u) | (range.lo[2] == z ? 0u : 4u);
        int32_t x = 0, cy = 0, cz = 0;
        c.coordinates(first, x, cy, cz);
        uint32_t b = c.begin(first);
        if (x == range.lo[0]) {
            take(b, c.end(first), need);
            b = c.end(first);
        }
        take(b, c.end(end - 1), need | 1u);
        return false;
    });
    runs.finish();
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        accept(c.view.large_object[j], kNoEntry);
}

/// The scan of a box or radius query into `sink`: scan_box_entries with
/// `kernel` where it applies (a plain buffer sink over a view with entry
/// boxes and first-cell bits), else scan_box with `accept`, which stops when
/// the sink is done and counts cells for a counting sink. Same results.
template <typename Sink, typename Kernel, typename Accept>
void scan_set_query(const Cells& c, const double lo[3], const double hi[3], uint32_t layer_mask, Sink& sink,
                    Kernel&& kernel, Accept&& accept) {
    if constexpr (std::is_same_v<Sink, BufferSink>) {
        if (entry_kernels_apply(c)) {
            scan_box_entries(c, lo, hi, layer_mask, sink, kernel, accept);
            return;
        }
    }
    scan_box(
        c, lo, hi, accept, [&] { return sink.done(); }, [&] { note_cells(sink); });
}

/// The box of `object`, from the entry's sequential copy when there is one.
inline void entry_or_object_box(const Cells& c, uint32_t object, uint32_t entry, float lo[3], float hi[3]) {
    if (entry == kNoEntry || c.view.entry_min[0] == nullptr) {
        c.object_box(object, lo, hi);
        return;
    }
    for (uint32_t d = 0; d < 3; ++d) {
        lo[d] = d < c.lat.dims ? c.view.entry_min[d][entry] : 0.0f;
        hi[d] = d < c.lat.dims ? c.view.entry_max[d][entry] : 0.0f;
    }
}

/// Every small object once (from its minimum cell) that passes the layer
/// mask: O(entries), the fallback of the ray and nearest traversals.
/// on_cell() is called for each cell read (QueryStats).
template <typename Hit, typename OnCell = NoCellNote>
void scan_all_small(const Cells& c, uint32_t layer_mask, Hit&& hit, OnCell on_cell = {}) {
    for (uint32_t cell = 0; cell < c.cell_count; ++cell) {
        on_cell();
        int32_t at[3] = {0, 0, 0};
        c.coordinates(cell, at[0], at[1], at[2]);
        for (uint32_t e = c.begin(cell); e < c.end(cell); ++e) {
            const uint32_t object = c.view.entry_object[e];
            int32_t lo[3];
            c.object_min_cell(object, lo);
            if (lo[0] == at[0] && lo[1] == at[1] && lo[2] == at[2] && c.in_layer(object, layer_mask)) hit(object);
        }
    }
}

} // namespace hashgrid::box_query

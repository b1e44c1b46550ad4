// SPDX-License-Identifier: MIT
// The particle queries' view of a built Grid and the cell walks every query
// kind shares (internal to core; particle_queries.cpp and
// particle_query_nearest.cpp include it). The arguments for which cells a
// query must visit are at the top of particle_queries.cpp.
#pragma once

#include "common/trace_scope.h"
#include "kernels/query_kernels.h"
#include "lattice/cell_box_walk.h"
#include "lattice/cell_index.h"
#include "lattice/wrapped_cells.h"
#include "query/query_batch.h"
#include "query/query_sinks.h"

#include "hashgrid/assert.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/config.h"
#include "hashgrid/particle_queries.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace hashgrid::particle_query {

using namespace detail;

/// The grid's cell index and sorted particle arrays, read once per query.
struct View : CellIndex {
    const float* p[3] = {nullptr, nullptr, nullptr};
    const uint32_t* order = nullptr;
    uint32_t count = 0;
    float interaction_distance = 1.0f;
    /// The box and radius tests over runs of sorted positions (query_kernels.h).
    query_kernels::RunData run;
    query_kernels::RunKernels kernels;
};

/// False when the grid has no successful rebuild.
inline bool make_view(const Grid& g, View& v) {
    const CellTableView t = g.cells();
    if (t.start == nullptr) return false;
    const GridConfig& c = g.config();
    static_cast<CellIndex&>(v) = make_cell_index(make_lattice(c), t);
    v.p[0] = g.sorted_x();
    v.p[1] = g.sorted_y();
    v.p[2] = v.lat.dims == 3 ? g.sorted_z() : nullptr;
    v.order = g.sorted_to_original();
    v.count = g.particle_count();
    v.interaction_distance = c.interaction_distance;
    v.run.p[0] = v.p[0];
    v.run.p[1] = v.p[1];
    v.run.p[2] = v.p[2];
    v.run.order = v.order;
    v.kernels = query_kernels::run_kernels(v.lat.dims);
    return true;
}

inline QueryResult not_built_result() {
    return query_refused(make_status(StatusCode::not_built, "particle query before a successful Grid::rebuild"));
}

inline QueryResult invalid_result(const char* message) {
    return query_refused(make_status(StatusCode::invalid_query, message));
}

inline bool finite_point(const View& v, const float* c) {
    for (uint32_t d = 0; d < v.lat.dims; ++d)
        if (!std::isfinite(c[d])) return false;
    return true;
}

inline int64_t clamp_i64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : (x > hi ? hi : x); }

/// Restricts an inclusive cell range to the grid's cells: clamped in clamp
/// mode (border cells hold the clamped particles), intersected otherwise.
/// False when nothing is left.
inline bool clip_range(const View& v, int64_t lo[3], int64_t hi[3]) {
    for (uint32_t d = 0; d < 3; ++d) {
        if (d >= v.lat.dims) {
            lo[d] = hi[d] = 0;
            continue;
        }
        if (v.lat.clamp) {
            lo[d] = clamp_i64(lo[d], v.lat.lo[d], v.lat.hi[d]);
            hi[d] = clamp_i64(hi[d], v.lat.lo[d], v.lat.hi[d]);
        } else {
            lo[d] = lo[d] > v.lat.lo[d] ? lo[d] : v.lat.lo[d];
            hi[d] = hi[d] < v.lat.hi[d] ? hi[d] : v.lat.hi[d];
            if (lo[d] > hi[d]) return false;
        }
    }
    return true;
}

inline uint64_t pack(const View& v, int64_t x, int64_t y, int64_t z) {
    return v.lat.pack(static_cast<int32_t>(x), static_cast<int32_t>(y), static_cast<int32_t>(z));
}

/// Coordinates of cell c (as stored in its key when unbounded).
inline void coordinates(const View& v, uint32_t c, int64_t k[3]) {
    int32_t x = 0, y = 0, z = 0;
    v.coordinates(c, x, y, z);
    k[0] = x;
    k[1] = y;
    k[2] = z;
}

inline uint32_t log2_ceil(uint32_t x) {
    uint32_t b = 0;
    while (b < 32 && (uint64_t{1} << b) < x)
        ++b;
    return b;
}

/// Upper bound on the occupied cells: the distinct cells (unbounded) or the
/// particle count (bounded worlds keep no list of their occupied cells).
inline uint32_t occupied_bound(const View& v) {
    if (!v.lat.bounded) return v.cell_count;
    return v.count < v.cell_count ? v.count : v.cell_count;
}

/// Calls cell_fn(cell coordinates, cell index) for every non-empty cell in
/// ascending cell index (= sorted) order, until it returns false (then
/// returns false). Unbounded: the distinct cells.
/// Bounded: jumps from particle to particle through the cell starts (a binary
/// search each), so the cost is O(occupied cells * log(cells)) however large
/// and empty the world's box is.
template <typename CellFn>
inline bool for_each_occupied(const View& v, CellFn&& cell_fn) {
    if (!v.lat.bounded) {
        for (uint32_t c = 0; c < v.cell_count; ++c) {
            int64_t k[3];
            coordinates(v, c, k);
            if (!cell_fn(k, c)) return false;
        }
        return true;
    }
    uint32_t at = 0; // sorted position of the next unvisited particle
    while (at < v.count) {
        // The cell holding position `at`: the last c with start[c] <= at.
        uint32_t lo = 0, hi = v.cell_count; // start[lo] <= at < start[hi + 1] holds for the answer
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo + 1) / 2;
            if (v.start[mid] <= at)
                lo = mid;
            else
                hi = mid - 1;
        }
        const uint32_t c = lo;
        int64_t k[3];
        coordinates(v, c, k);
        if (!cell_fn(k, c)) return false;
        at = v.start[c + 1];
    }
    return true;
}

/// Unbounded worlds: the wrapped cell coordinates an axis of a query covers,
/// as one or two ascending inclusive intervals (two when the covered cells
/// wrap around the seam; lattice/wrapped_cells.h).
struct AxisSpan {
    int64_t lo[2];
    int64_t hi[2];
    uint32_t count;

    [[nodiscard]] bool contains(int64_t c) const {
        return (c >= lo[0] && c <= hi[0]) || (count == 2 && c >= lo[1] && c <= hi[1]);
    }
    [[nodiscard]] double cells() const {
        double n = static_cast<double>(hi[0] - lo[0] + 1);
        if (count == 2) n += static_cast<double>(hi[1] - lo[1] + 1);
        return n;
    }
};

/// An axis a 2D grid does not use: coordinate 0 only.
constexpr AxisSpan kUnusedAxis{{0, 0}, {0, -1}, 1};

/// The span of `length` consecutive cells starting at wrapped coordinate
/// `first` (the whole axis when length reaches the period).
inline AxisSpan wrapped_span(const View& v, int64_t first, double length) {
    const int64_t period = wrap_period(v.lat.dims);
    const int64_t lo = wrap_min(v.lat.dims), hi = wrap_max(v.lat.dims);
    if (!(length < static_cast<double>(period))) return AxisSpan{{lo, 0}, {hi, -1}, 1};
    const int64_t last = first + static_cast<int64_t>(length) - 1;
    if (last <= hi) return AxisSpan{{first, 0}, {last, -1}, 1};
    return AxisSpan{{lo, first}, {last - period, hi}, 2}; // ascending: the wrapped part first
}

/// Unbounded: calls range(begin, end, cells) for the non-empty cells whose
/// wrapped coordinates lie in the spans, in sorted (key) order, until it
/// returns false (a visitor stopped the query). A row's occupied cells are
/// consecutive in key order, so each row is one run [begin, end) of sorted
/// positions: its first occupied cell is found by hashing the row's cells
/// from its start (a short row, <= about log2(cells) cells: `cells` is then
/// the number of occupied cells in the run) or by a binary search (a long
/// row: cells = 1), and its last by reading the keys that follow. When that
/// costs more than one walk over the distinct cells, the walk (one run per
/// cell).
template <typename Range>
inline void visit_spans(const View& v, const AxisSpan span[3], Range&& range) {
    if (v.cell_count == 0) return;
    const double rows = span[1].cells() * span[2].cells();
    const uint32_t search = 2 + log2_ceil(v.cell_count);
    const double row_length = span[0].cells();
    const double per_row = row_length < search ? row_length : search;
    if (rows * per_row > static_cast<double>(v.cell_count) + 16.0) {
        for (uint32_t c = 0; c < v.cell_count; ++c) {
            int64_t k[3];
            coordinates(v, c, k);
            if (span[0].contains(k[0]) && span[1].contains(k[1]) && span[2].contains(k[2]) &&
                !range(v.start[c], v.start[c + 1], 1u))
                return;
        }
        return;
    }
    for (uint32_t zi = 0; zi < span[2].count; ++zi)
        for (int64_t z = span[2].lo[zi]; z <= span[2].hi[zi]; ++z)
            for (uint32_t yi = 0; yi < span[1].count; ++yi)
                for (int64_t y = span[1].lo[yi]; y <= span[1].hi[yi]; ++y)
                    for (uint32_t xi = 0; xi < span[0].count; ++xi) {
                        const int64_t x0 = span[0].lo[xi], x1 = span[0].hi[xi];
                        const uint64_t last = pack(v, x1, y, z);
                        const bool short_row = x1 - x0 + 1 <= search;
                        uint32_t first = kNone;
                        if (short_row) {
                            for (int64_t x = x0; x <= x1 && first == kNone; ++x)
                                first = v.find(x, y, z);
                            if (first == kNone) continue;
                        } else {
                            first = v.lower_bound(pack(v, x0, y, z));
                        }
                        uint32_t end = first;
                        while (end < v.cell_count && v.key[end] <= last)
                            ++end;
                        if (end != first && !range(v.start[first], v.start[end], short_row ? end - first : 1u)) return;
                    }
}

/// Calls range(begin, end, cells) with the sorted-position ranges of the
/// non-empty cells in the inclusive (already clipped) cell box, in sorted
/// order, until it returns false (`cells`: what QueryStats::cells counts for
/// the run). Picks the cheaper of row lookups (bounded: the shared walk over
/// a box of cells, lattice/cell_box_walk.h, two start reads per row, one run
/// per row; unbounded: visit_spans) and one walk over the occupied cells, so
/// the cost is O(min(rows of the box, occupied cells * log(cells))) whatever
/// the box's size.
template <typename Range>
inline void visit_box(const View& v, const int64_t lo[3], const int64_t hi[3], Range&& range) {
    if (v.lat.bounded) {
        const double box_rows = static_cast<double>(hi[1] - lo[1] + 1) * static_cast<double>(hi[2] - lo[2] + 1);
        if (box_rows > 2.0 * occupied_bound(v) * (2 + log2_ceil(v.cell_count)) + 64.0) {
            for_each_occupied(v, [&](const int64_t k[3], uint32_t c) {
                const bool inside =
                    k[0] >= lo[0] && k[0] <= hi[0] && k[1] >= lo[1] && k[1] <= hi[1] && k[2] >= lo[2] && k[2] <= hi[2];
                return !inside || range(v.start[c], v.start[c + 1], 1u);
            });
            return;
        }
        CellBox box{};
        for (uint32_t d = 0; d < 3; ++d) {
            box.lo[d] = static_cast<int32_t>(lo[d]);
            box.hi[d] = static_cast<int32_t>(hi[d]);
        }
        walk_cell_rows(v, nullptr, box, every_row, [&](uint32_t first, uint32_t end, int32_t, int32_t) {
            return !range(v.start[first], v.start[end], 1u);
        });
        return;
    }
    AxisSpan span[3];
    for (uint32_t d = 0; d < 3; ++d)
        span[d] = AxisSpan{{lo[d], 0}, {hi[d], -1}, 1};
    visit_spans(v, span, range);
}

/// Squared float distance as in the grid's pair test: (dx*dx + dy*dy) + dz*dz.
inline float distance2(const View& v, uint32_t k, const float* c) {
    const float dx = v.p[0][k] - c[0];
    const float dy = v.p[1][k] - c[1];
    float d2 = dx * dx + dy * dy;
    if (v.lat.dims == 3) {
        const float dz = v.p[2][k] - c[2];
        d2 = d2 + dz * dz;
    }
    return d2;
}

/// A walk read the particles [b, e) of one run (`cells` cell reads) and tests each.
template <typename Sink>
inline void note_range(Sink& sink, uint32_t b, uint32_t e, uint32_t cells = 1) {
    note_cells(sink, cells);
    note_tested(sink, e - b);
}

/// Particles with d2 < fl(radius * radius), in sorted order.
template <typename Sink>
inline void radius_visit(const View& v, const float* c, float radius, Sink& sink) {
    const double tr = static_cast<double>(radius) * v.lat.scale;
    const float r2 = radius * radius;
    auto runs = collect_runs<query_kernels::Runs>(sink, [&](uint32_t* out, const query_kernels::Runs& held) {
        return v.kernels.radius(v.run, c, r2, held, out);
    });
    auto test = [&](uint32_t b, uint32_t e, uint32_t cells) {
        note_range(sink, b, e, cells);
        if (runs.take(b, e)) return true;
        for (uint32_t k = b; k < e; ++k)
            if (distance2(v, k, c) < r2 && !sink.add(v.order[k])) return false;
        return true;
    };
    if (v.wrapped) {
        // Cells are known modulo the period: the centre's cell +- the reach.
        // A particle that passes the float test is within r * (1 + 2^-22) of
        // the centre; each cell is the floor of a value within 2^-22 of the
        // exact one, hence two more cells.
        const double reach = std::ceil(tr * (1.0 + 0x1p-20)) + 2.0;
        const auto back = static_cast<int64_t>(reach < 0x1p40 ? reach : 0x1p40);
        AxisSpan span[3] = {kUnusedAxis, kUnusedAxis, kUnusedAxis};
        for (uint32_t d = 0; d < v.lat.dims; ++d) {
            bool unused = false;
            const int64_t centre = v.lat.unbounded_cell_of(d, c[d], unused);
            span[d] = wrapped_span(v, wrap_cell(centre - back, v.lat.dims), 2.0 * reach + 1.0);
        }
        visit_spans(v, span, test);
        runs.finish();
        return;
    }
    int64_t lo[3], hi[3];
    for (uint32_t d = 0; d < v.lat.dims; ++d) {
        const double tc = v.lat.scaled(d, c[d]);
        const double margin = (std::fabs(tc) + tr) * 0x1p-30 + 0x1p-30;
        lo[d] = floor_cell(tc - tr - margin);
        hi[d] = floor_cell(tc + tr + margin);
    }
    if (!clip_range(v, lo, hi)) return;
    visit_box(v, lo, hi, test);
    runs.finish();
}

inline uint64_t radius_collect(const View& v, const float* c, float radius, uint32_t* out, uint64_t capacity) {
    BufferSink sink{out, capacity};
    radius_visit(v, c, radius, sink);
    return sink.total;
}

inline bool valid_box(const View& v, const QueryBox& b) {
    for (uint32_t d = 0; d < v.lat.dims; ++d)
        if (std::isnan(b.min[d]) || std::isnan(b.max[d]) || b.min[d] > b.max[d]) return false;
    return true;
}

/// True when the particle at sorted position k lies in the closed box.
inline bool box_contains(const View& v, const QueryBox& box, uint32_t k) {
    bool inside = true;
    for (uint32_t d = 0; d < v.lat.dims; ++d) {
        const float p = v.p[d][k];
        inside = inside && p >= box.min[d] && p <= box.max[d];
    }
    return inside;
}

/// Hands the particles of the cells that cover the closed (valid) box `box`
/// that pass accept(sorted position) to the sink, in sorted order. Every
/// particle inside `box` lies in those cells, so `accept` may be any test
/// that implies being inside it. With box_kernel (accept is exactly the box
/// test), index sinks take whole runs from the box run kernel.
template <bool box_kernel = false, typename Accept, typename Sink>
inline void box_cells_visit(const View& v, const QueryBox& box, Accept&& accept, Sink& sink) {
    auto runs = collect_runs<query_kernels::Runs>(sink, [&](uint32_t* out, const query_kernels::Runs& held) {
        return v.kernels.box(v.run, box.min, box.max, held, out);
    });
    auto test = [&](uint32_t b, uint32_t e, uint32_t cells) {
        note_range(sink, b, e, cells);
        if constexpr (box_kernel) {
            if (runs.take(b, e)) return true;
        }
        for (uint32_t k = b; k < e; ++k)
            if (accept(k) && !sink.add(v.order[k])) return false;
        return true;
    };
    if (v.wrapped) {
        // Far cells come from far_cell(), within a cell of the fast formula:
        // one more cell on each side. Infinite bounds cover the whole axis.
        const int64_t period = wrap_period(v.lat.dims);
        AxisSpan span[3] = {kUnusedAxis, kUnusedAxis, kUnusedAxis};
        for (uint32_t d = 0; d < v.lat.dims; ++d) {
            const double length =
                (static_cast<double>(box.max[d]) - static_cast<double>(box.min[d])) * v.lat.scale + 4.0;
            if (!std::isfinite(box.min[d]) || !std::isfinite(box.max[d]) || !(length < 0x1p40)) {
                span[d] = wrapped_span(v, 0, INFINITY);
                continue;
            }
            bool unused = false;
            const int64_t first = v.lat.unbounded_cell_of(d, box.min[d], unused) - 1;
            const int64_t last = v.lat.unbounded_cell_of(d, box.max[d], unused) + 1;
            const int64_t cells = ((last - first) % period + period) % period + 1;
            span[d] = wrapped_span(v, wrap_cell(first, v.lat.dims),
                                   length < static_cast<double>(period) ? static_cast<double>(cells) : INFINITY);
        }
        visit_spans(v, span, test);
        runs.finish();
        return;
    }
    int64_t lo[3], hi[3];
    for (uint32_t d = 0; d < v.lat.dims; ++d) {
        // The grid's own key function: exact by monotonicity (no margin).
        lo[d] = floor_cell(v.lat.scaled(d, box.min[d]));
        hi[d] = floor_cell(v.lat.scaled(d, box.max[d]));
    }
    if (!clip_range(v, lo, hi)) return;
    visit_box(v, lo, hi, test);
    runs.finish();
}

/// Particles inside the closed (valid) box, in sorted order.
template <typename Sink>
inline void box_visit(const View& v, const QueryBox& box, Sink& sink) {
    box_cells_visit<true>(
        v, box, [&](uint32_t k) { return box_contains(v, box, k); }, sink);
}

/// Cell boxes (frustum culling, nearest-neighbour pruning).
/// World-space extent of cell coordinate i on axis d, enlarged by a margin
/// that covers the rounding of the key computation. Clamp-mode border cells
/// reach to infinity on their outer side.
inline void cell_extent(const View& v, uint32_t d, int64_t i, double& lo, double& hi) {
    const double a = v.lat.origin[d] + static_cast<double>(i) * v.lat.edge;
    const double b = a + v.lat.edge;
    const double margin = (std::fabs(v.lat.origin[d]) + std::fabs(a) + v.lat.edge) * 0x1p-40 + v.lat.edge * 0x1p-20;
    lo = a - margin;
    hi = b + margin;
    if (v.lat.clamp) {
        if (i <= v.lat.lo[d]) lo = -INFINITY;
        if (i >= v.lat.hi[d]) hi = INFINITY;
    }
}

// ---------------------------------------------------------------------------
// The forms every query kind comes in: buffer, visitor and batch.

/// The buffer form: checks, then one run, then ok / output_too_small.
template <typename Query, typename Run>
inline QueryResult collect(const Grid& grid, const Query& query, uint32_t* out, uint64_t capacity, const char* invalid,
                           Run&& run) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "particle query: null out with capacity > 0");
    BufferSink sink{out, capacity};
    const uint64_t total = run(v, query, sink);
    if (total == kInvalidQuery) return invalid_result(invalid);
    return query_finish(total, capacity);
}

/// The visitor form: the same run with a sink that calls the visitor.
template <typename Query, typename Run>
inline QueryResult visit_results(const Grid& grid, const Query& query, QueryVisitor visitor, const char* invalid,
                                 Run&& run) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(visitor.visit != nullptr, "particle query: null visit function");
    VisitorSink sink{visitor};
    const uint64_t total = run(v, query, sink);
    if (total == kInvalidQuery) return invalid_result(invalid);
    QueryResult r;
    r.total = total;
    return r;
}

/// The batch form: detail::run_query_batch over the same run, traced as
/// `phase` when the grid has a trace.
template <typename Query, typename Out, typename Run>
inline QueryResult run_batch_of(const Grid& grid, TracePhase phase, const Query* queries, uint32_t count,
                                uint64_t* offsets, uint64_t offsets_capacity, Out* out, uint64_t capacity,
                                const ThreadBackend& backend, Run&& run, bool* rerun = nullptr) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(count == 0 || queries != nullptr, "particle query batch: null queries");
    PhaseTrace trace(grid.trace(), backend);
    trace.begin(phase);
    return run_query_batch(
        count, offsets, offsets_capacity, out, capacity, trace.backend(),
        [&](uint32_t q, Out* at, uint64_t room) { return run(v, queries[q], at, room); }, rerun);
}

/// Adapts a sink-based run to the batch's (out, room) form.
template <typename SinkRun>
auto index_batch_run(SinkRun&& run) {
    return [run](const View& v, const auto& query, uint32_t* at, uint64_t room) {
        BufferSink sink{at, room};
        return run(v, query, sink);
    };
}

/// A batch of a sink-based run (index results) that counts its work into
/// *stats when stats is not null: the counting sink's copy of the walk runs
/// only then.
template <typename Query, typename SinkRun>
inline QueryResult index_batch_of(const Grid& grid, TracePhase phase, const Query* queries, uint32_t count,
                                  uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                  const ThreadBackend& backend, const SinkRun& sink_run, QueryStats* stats) {
    if (stats == nullptr)
        return run_batch_of(grid, phase, queries, count, offsets, offsets_capacity, out, capacity, backend,
                            index_batch_run(sink_run));
    BatchStats counts;
    const QueryResult r = run_batch_of(
        grid, phase, queries, count, offsets, offsets_capacity, out, capacity, backend,
        [&](const View& v, const Query& query, uint32_t* at, uint64_t room) {
            CountingBufferSink sink{{at, room}, {}};
            const uint64_t total = sink_run(v, query, sink);
            counts.add(sink.stats, total);
            return total;
        },
        &counts.rerun);
    counts.add_to(stats);
    return r;
}

inline void load_point(const View& v, const ParticleSpans& s, uint32_t q, float* c) {
    c[0] = s.x[q];
    c[1] = s.y[q];
    c[2] = v.lat.dims == 3 ? s.z[q] : 0.0f;
}

inline bool spans_set(const View& v, const ParticleSpans& s) {
    return s.count == 0 || (s.x != nullptr && s.y != nullptr && (v.lat.dims == 2 || s.z != nullptr));
}

} // namespace hashgrid::particle_query

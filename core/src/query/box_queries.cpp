// SPDX-License-Identifier: MIT
// Box-grid queries (box_queries.h): prepare_box_queries, the set queries
// (point, box, radius, potential collisions) in their buffer and visitor
// forms, and their batches. Rays, frusta and nearest queries have their own
// files; what they share is in box_query_internal.h, and for batches in
// box_query_batch.h.
#include "query/box_query_batch.h"
#include "query/box_query_internal.h"

#include "hashgrid/box_queries.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace hashgrid {
namespace {

using namespace box_query;
using detail::box_query_kernels::entry_kernels;
using detail::box_query_kernels::EntryData;
using detail::box_query_kernels::EntryRuns;

/// prepare_box_queries runs at most kParts chunks, so the partial results
/// live on the stack.
constexpr uint32_t kParts = 64;
struct Part {
    int32_t lo[3];
    int32_t hi[3];
    float box_lo[3];
    float box_hi[3];
    int32_t span[3];
    bool any;
};
uint32_t part_grain(uint32_t n) { return std::max<uint32_t>(4096, (n + kParts - 1) / kParts); }

/// g.cell_lo / cell_hi: the extent of the occupied cells.
void prepare_cell_extent(const Cells& c, BoxQueryGrid& g, Part* parts, const ThreadBackend& backend) {
    const uint32_t cells = c.cell_count;
    const uint32_t cell_grain = part_grain(cells);
    parallel_chunks(backend, cells, cell_grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        Part& p = parts[begin / cell_grain];
        for (uint32_t d = 0; d < 3; ++d) {
            p.lo[d] = INT32_MAX;
            p.hi[d] = INT32_MIN;
        }
        for (uint32_t i = begin; i < end; ++i) {
            int32_t at[3];
            c.coordinates(i, at[0], at[1], at[2]);
            for (uint32_t d = 0; d < 3; ++d) {
                p.lo[d] = std::min(p.lo[d], at[d]);
                p.hi[d] = std::max(p.hi[d], at[d]);
            }
        }
    });
    for (uint32_t d = 0; d < 3; ++d) {
        g.cell_lo[d] = INT32_MAX;
        g.cell_hi[d] = INT32_MIN;
    }
    for (uint32_t p = 0; p * cell_grain < cells; ++p)
        for (uint32_t d = 0; d < 3; ++d) {
            g.cell_lo[d] = std::min(g.cell_lo[d], parts[p].lo[d]);
            g.cell_hi[d] = std::max(g.cell_hi[d], parts[p].hi[d]);
        }
}

/// g.box_lo / box_hi, max_span and magnitude: the union of the small objects'
/// boxes (large objects are listed, ascending) and their widest cell span.
void prepare_object_bounds(const Cells& c, BoxQueryGrid& g, Part* parts, const ThreadBackend& backend) {
    const BoxGridView& view = g.view;
    const uint32_t dims = c.lat.dims;
    const uint32_t n = view.object_count;
    const uint32_t object_grain = part_grain(n);
    parallel_chunks(backend, n, object_grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        Part& p = parts[begin / object_grain];
        p.any = false;
        p.span[0] = p.span[1] = p.span[2] = 0;
        const uint32_t* large = std::lower_bound(view.large_object, view.large_object + view.large_count, begin);
        const uint32_t* large_end = view.large_object + view.large_count;
        for (uint32_t i = begin; i < end; ++i) {
            if (large != large_end && *large == i) {
                ++large;
                continue;
            }
            for (uint32_t d = 0; d < dims; ++d) {
                const float lo = view.min[d][i];
                const float hi = view.max[d][i];
                p.box_lo[d] = p.any ? std::min(p.box_lo[d], lo) : lo;
                p.box_hi[d] = p.any ? std::max(p.box_hi[d], hi) : hi;
                const int32_t span = c.cell(d, static_cast<double>(hi)) - c.cell(d, static_cast<double>(lo));
                p.span[d] = std::max(p.span[d], span);
            }
            p.any = true;
        }
    });
    bool any = false;
    for (uint32_t p = 0; p * object_grain < n; ++p) {
        if (!parts[p].any) continue;
        for (uint32_t d = 0; d < dims; ++d) {
            g.box_lo[d] = any ? std::min(g.box_lo[d], parts[p].box_lo[d]) : parts[p].box_lo[d];
            g.box_hi[d] = any ? std::max(g.box_hi[d], parts[p].box_hi[d]) : parts[p].box_hi[d];
            g.max_span[d] = std::max(g.max_span[d], parts[p].span[d]);
        }
        any = true;
    }
    HASHGRID_ASSERT(any, "prepare_box_queries: occupied cells but no small object");
    for (uint32_t d = 0; d < dims; ++d)
        g.magnitude[d] = std::max(std::fabs(g.box_lo[d]), std::fabs(g.box_hi[d]));
}

// ---------------------------------------------------------------------------
// Set-query walks: each reports its results, in the documented order, to a
// sink (BufferSink: the buffer form; VisitorSink: the visitor form) and returns
// ok or why the query is refused.

template <typename Sink>
Status point_walk(const Cells& c, const QueryPoint& point, uint32_t layer_mask, Sink& sink) {
    const float* p = point.position;
    if (!finite3(p, c.lat.dims)) return make_status(StatusCode::invalid_query, "query_point: the point is not finite");
    auto consider = [&](uint32_t object) {
        note_tested(sink);
        if (!c.in_layer(object, layer_mask)) return;
        for (uint32_t d = 0; d < c.lat.dims; ++d)
            if (!(c.view.min[d][object] <= p[d] && p[d] <= c.view.max[d][object])) return;
        sink.add(object);
    };
    const BoxQueryGrid& grid = c.grid;
    if (grid.has_cells) {
        int32_t at[3] = {0, 0, 0};
        bool inside = true;
        for (uint32_t d = 0; d < c.lat.dims; ++d) {
            at[d] = c.cell(d, static_cast<double>(p[d]));
            inside = inside && at[d] >= grid.cell_lo[d] && at[d] <= grid.cell_hi[d];
        }
        if (inside) {
            const uint32_t cell = c.find(at[0], at[1], at[2]);
            if (cell != detail::kNone) {
                note_cells(sink);
                for (uint32_t e = c.begin(cell); e < c.end(cell) && !sink.done(); ++e)
                    consider(c.view.entry_object[e]);
            }
        }
    }
    for (uint32_t j = 0; j < c.view.large_count && !sink.done(); ++j)
        consider(c.view.large_object[j]);
    return {};
}

template <typename Sink>
Status box_walk(const Cells& c, const QueryBox& box, uint32_t layer_mask, Sink& sink) {
    for (uint32_t d = 0; d < c.lat.dims; ++d)
        if (!(box.min[d] <= box.max[d])) return make_status(StatusCode::invalid_query, "query_box: min > max or NaN");
    double lo[3] = {0.0, 0.0, 0.0};
    double hi[3] = {0.0, 0.0, 0.0};
    for (uint32_t d = 0; d < c.lat.dims; ++d) {
        lo[d] = static_cast<double>(box.min[d]);
        hi[d] = static_cast<double>(box.max[d]);
    }
    auto accept = [&](uint32_t object, uint32_t entry) {
        note_tested(sink);
        float olo[3], ohi[3];
        entry_or_object_box(c, object, entry, olo, ohi);
        if (boxes_overlap(box.min, box.max, olo, ohi, c.lat.dims) && c.in_layer(object, layer_mask)) sink.add(object);
    };
    scan_set_query(
        c, lo, hi, layer_mask, sink,
        [&](const EntryData& entries, const EntryRuns& runs, uint32_t* out) {
            return entry_kernels(c.lat.dims).box(entries, box.min, box.max, runs, out);
        },
        accept);
    return {};
}

template <typename Sink>
Status radius_walk(const Cells& c, const QuerySphere& sphere, uint32_t layer_mask, Sink& sink) {
    if (!finite3(sphere.center, c.lat.dims))
        return make_status(StatusCode::invalid_query, "query_radius: the centre is not finite");
    if (std::isnan(sphere.radius) || sphere.radius < 0.0f)
        return make_status(StatusCode::invalid_query, "query_radius: radius is NaN or negative");
    // A box passes only if it reaches within radius * (1 + 2^-22) (+ underflow)
    // of the centre on every axis: the widened bounding box holds a cell of it.
    // When radius * radius overflows, d2 = +inf passes too (+inf <= +inf):
    // every object does, however far, so the scan covers every cell.
    const float r2 = sphere.radius * sphere.radius;
    const double half = r2 == std::numeric_limits<float>::infinity()
                            ? kDoubleInf
                            : static_cast<double>(sphere.radius) * (1.0 + kRelativeSlack) + kAbsoluteSlack;
    double lo[3] = {0.0, 0.0, 0.0};
    double hi[3] = {0.0, 0.0, 0.0};
    for (uint32_t d = 0; d < c.lat.dims; ++d) {
        lo[d] = static_cast<double>(sphere.center[d]) - half;
        hi[d] = static_cast<double>(sphere.center[d]) + half;
    }
    auto accept = [&](uint32_t object, uint32_t entry) {
        note_tested(sink);
        float olo[3], ohi[3];
        entry_or_object_box(c, object, entry, olo, ohi);
        if (point_box_distance2(sphere.center, olo, ohi, c.lat.dims) <= r2 && c.in_layer(object, layer_mask))
            sink.add(object);
    };
    scan_set_query(
        c, lo, hi, layer_mask, sink,
        [&](const EntryData& entries, const EntryRuns& runs, uint32_t* out) {
            return entry_kernels(c.lat.dims).radius(entries, sphere.center, r2, runs, out);
        },
        accept);
    return {};
}

constexpr const char* kObjectOutOfRange = "query_potential_collisions: object index out of range";

template <typename Sink>
Status collisions_walk(const Cells& c, uint32_t object, Sink& sink) {
    HASHGRID_ASSERT(object < c.view.object_count, kObjectOutOfRange);
    if (object >= c.view.object_count) {
        return make_status(StatusCode::invalid_argument, kObjectOutOfRange);
    }
    float qlo[3], qhi[3];
    c.object_box(object, qlo, qhi);
    double lo[3], hi[3];
    for (uint32_t d = 0; d < 3; ++d) {
        lo[d] = static_cast<double>(qlo[d]);
        hi[d] = static_cast<double>(qhi[d]);
    }
    const uint32_t category = c.view.category != nullptr ? c.view.category[object] : ~0u;
    const uint32_t mask = c.view.mask != nullptr ? c.view.mask[object] : ~0u;
    scan_box(
        c, lo, hi,
        [&](uint32_t other, uint32_t) {
            if (other == object) return;
            const uint32_t other_category = c.view.category != nullptr ? c.view.category[other] : ~0u;
            const uint32_t other_mask = c.view.mask != nullptr ? c.view.mask[other] : ~0u;
            if ((category & other_mask) == 0 || (other_category & mask) == 0) return;
            float olo[3], ohi[3];
            c.object_box(other, olo, ohi);
            if (boxes_overlap(qlo, qhi, olo, ohi, c.lat.dims)) sink.add(other);
        },
        [&] { return sink.done(); });
    return {};
}

} // namespace

// ---------------------------------------------------------------------------

BoxQueryGrid prepare_box_queries(const BoxGridView& view, const ThreadBackend& backend) {
    HASHGRID_ASSERT(view.config != nullptr, "prepare_box_queries: the view has no config (grid not built?)");
    BoxQueryGrid g;
    // Without a config the queries answer invalid_argument (see usable()).
    if (view.config == nullptr) return g;
    g.view = view;
    g.has_cells = view.cell_count > 0;
    if (!g.has_cells) return g;
    const Cells c(g);
    Part parts[kParts];
    detail::PhaseTrace trace(view.trace, backend);
    trace.begin(TracePhase::prepare_box_queries);
    if (view.bounds != nullptr) { // recorded by the rebuild
        const BoxFrameBounds& b = *view.bounds;
        for (uint32_t d = 0; d < 3; ++d) {
            g.cell_lo[d] = b.cell_lo[d];
            g.cell_hi[d] = b.cell_hi[d];
            g.box_lo[d] = b.box_lo[d];
            g.box_hi[d] = b.box_hi[d];
            g.max_span[d] = b.max_span[d];
        }
        for (uint32_t d = 0; d < c.lat.dims; ++d)
            g.magnitude[d] = std::max(std::fabs(g.box_lo[d]), std::fabs(g.box_hi[d]));
        return g;
    }
    prepare_cell_extent(c, g, parts, trace.backend());
    prepare_object_bounds(c, g, parts, trace.backend());
    return g;
}

float point_box_distance2(const float p[3], const float box_min[3], const float box_max[3], uint32_t dimensions) {
    float d2 = 0.0f;
    for (uint32_t d = 0; d < dimensions; ++d) {
        const float v = p[d] < box_min[d] ? box_min[d] - p[d] : (p[d] > box_max[d] ? p[d] - box_max[d] : 0.0f);
        const float sq = v * v;
        d2 = d2 + sq;
    }
    return d2;
}

QueryResult query_point(const BoxQueryGrid& grid, const QueryPoint& point, uint32_t layer_mask, uint32_t* out,
                        uint64_t capacity) {
    return buffer_query(grid, out, capacity, "query_point: null output with capacity > 0",
                        [&](BufferSink& sink) { return point_walk(Cells(grid), point, layer_mask, sink); });
}

QueryResult query_point(const BoxQueryGrid& grid, const QueryPoint& point, uint32_t layer_mask, QueryVisitor visitor) {
    return visitor_query(grid, visitor, "query_point: null visitor",
                         [&](VisitorSink& sink) { return point_walk(Cells(grid), point, layer_mask, sink); });
}

QueryResult query_box(const BoxQueryGrid& grid, const QueryBox& box, uint32_t layer_mask, uint32_t* out,
                      uint64_t capacity) {
    return buffer_query(grid, out, capacity, "query_box: null output with capacity > 0",
                        [&](BufferSink& sink) { return box_walk(Cells(grid), box, layer_mask, sink); });
}

QueryResult query_box(const BoxQueryGrid& grid, const QueryBox& box, uint32_t layer_mask, QueryVisitor visitor) {
    return visitor_query(grid, visitor, "query_box: null visitor",
                         [&](VisitorSink& sink) { return box_walk(Cells(grid), box, layer_mask, sink); });
}

QueryResult query_radius(const BoxQueryGrid& grid, const QuerySphere& sphere, uint32_t layer_mask, uint32_t* out,
                         uint64_t capacity) {
    return buffer_query(grid, out, capacity, "query_radius: null output with capacity > 0",
                        [&](BufferSink& sink) { return radius_walk(Cells(grid), sphere, layer_mask, sink); });
}

QueryResult query_radius(const BoxQueryGrid& grid, const QuerySphere& sphere, uint32_t layer_mask,
                         QueryVisitor visitor) {
    return visitor_query(grid, visitor, "query_radius: null visitor",
                         [&](VisitorSink& sink) { return radius_walk(Cells(grid), sphere, layer_mask, sink); });
}

QueryResult query_potential_collisions(const BoxQueryGrid& grid, uint32_t object, uint32_t* out, uint64_t capacity) {
    return buffer_query(grid, out, capacity, "query_potential_collisions: null output with capacity > 0",
                        [&](BufferSink& sink) { return collisions_walk(Cells(grid), object, sink); });
}

QueryResult query_potential_collisions(const BoxQueryGrid& grid, uint32_t object, QueryVisitor visitor) {
    return visitor_query(grid, visitor, "query_potential_collisions: null visitor",
                         [&](VisitorSink& sink) { return collisions_walk(Cells(grid), object, sink); });
}

// ---------------------------------------------------------------------------
// Batches of set queries (the frustum batch is in box_query_frustum.cpp).

namespace {

/// A set-query batch, traced as `phase` when the view carries a trace.
/// The grid is checked and its cell index set up once for the batch; each
/// query then runs its walk into the buffer form's sink (the same results as
/// the single query), or with stats into a counting sink (same results, the
/// work counted).
template <typename Query, typename Walk>
QueryResult set_query_batch(const BoxQueryGrid& grid, TracePhase phase, const Query* queries, uint32_t count,
                            uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out,
                            uint64_t capacity, const ThreadBackend& backend, QueryStats* stats, const Walk& walk) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_BATCH(grid, queries, count);
        detail::PhaseTrace trace(grid.view.trace, backend);
        trace.begin(phase);
        const Cells cells(grid);
        if (stats == nullptr)
            return detail::run_query_batch(count, offsets, offsets_capacity, out, capacity, trace.backend(),
                                           [&](uint32_t q, uint32_t* o, uint64_t room) {
                                               BufferSink sink{o, room};
                                               const Status walked = walk(cells, queries[q], layer_mask, sink);
                                               return walk_total(walked, sink.total);
                                           });
        detail::BatchStats counts;
        const QueryResult r = detail::run_query_batch(
            count, offsets, offsets_capacity, out, capacity, trace.backend(),
            [&](uint32_t q, uint32_t* o, uint64_t room) {
                CountingBufferSink sink{{o, room}, {}};
                const Status walked = walk(cells, queries[q], layer_mask, sink);
                const uint64_t total = walk_total(walked, sink.total);
                counts.add(sink.stats, total);
                return total;
            },
            &counts.rerun);
        counts.add_to(stats);
        return r;
    }());
}

} // namespace

QueryResult query_point_batch(const BoxQueryGrid& grid, const QueryPoint* points, uint32_t count, uint32_t layer_mask,
                              uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                              const ThreadBackend& backend, QueryStats* stats) {
    return set_query_batch(
        grid, TracePhase::query_point_batch, points, count, layer_mask, offsets, offsets_capacity, out, capacity,
        backend, stats,
        [](const Cells& c, const QueryPoint& q, uint32_t mask, auto& sink) { return point_walk(c, q, mask, sink); });
}

QueryResult query_box_batch(const BoxQueryGrid& grid, const QueryBox* boxes, uint32_t count, uint32_t layer_mask,
                            uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                            const ThreadBackend& backend, QueryStats* stats) {
    return set_query_batch(
        grid, TracePhase::query_box_batch, boxes, count, layer_mask, offsets, offsets_capacity, out, capacity, backend,
        stats, [](const Cells& c, const QueryBox& q, uint32_t mask, auto& sink) { return box_walk(c, q, mask, sink); });
}

QueryResult query_radius_batch(const BoxQueryGrid& grid, const QuerySphere* spheres, uint32_t count,
                               uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out,
                               uint64_t capacity, const ThreadBackend& backend, QueryStats* stats) {
    return set_query_batch(
        grid, TracePhase::query_radius_batch, spheres, count, layer_mask, offsets, offsets_capacity, out, capacity,
        backend, stats,
        [](const Cells& c, const QuerySphere& q, uint32_t mask, auto& sink) { return radius_walk(c, q, mask, sink); });
}

} // namespace hashgrid

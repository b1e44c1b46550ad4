// SPDX-License-Identifier: MIT
// Ray queries of the box grid (box_queries.h): query_ray, its visitor form,
// query_ray_first and their batches.
//
// The cells a ray crosses come from the segment walk (segment_walk.h):
// pieces of the ray, each with the cells within the slab test's rounding of
// its part of the ray. Piece cell ranges only grow along the ray (monotone
// in t on every axis), so an object whose cell range meets two pieces also
// meets every piece between them: an object is reported from a piece only
// when its range misses the previous piece (the "previous cell of the path"
// rule of a lattice path, applied to pieces), and within the piece from the
// cell of max(piece.lo, object.lo). No set, no second report, no missed
// corner. A walk that would cost more than about two scans of the occupied
// cells is declined, and the query scans the occupied cells once instead
// (scan_all_small): the same hits, ranked by (t, index) either way.
//
// First hits. query_ray_first and the visitor form share one search for the
// first m hits in (t, index) order, optionally only those after a given hit
// (the visitor's last). It stops once the m-th hit found comes before every
// unseen object's t, and a search after a hit at t starts the traversal at
// (just below) t: every later hit is entered at or after t, and its box is
// still on the ray's path from there, so the pieces from t on meet it.
#include "query/box_query_batch.h"
#include "query/box_query_internal.h"
#include "query/segment_walk.h"

#include "hashgrid/box_queries.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hashgrid {
namespace {

using namespace box_query;
using detail::SegmentExtent;
using detail::walk_segment;

/// Work counts of one ray search (QueryStats::cells and ::tested; null: none).
struct RayWork {
    QueryStats* stats = nullptr;
    void cell() const {
        if (stats != nullptr) ++stats->cells;
    }
    void test() const {
        if (stats != nullptr) ++stats->tested;
    }
};

/// What the segment walk needs of the grid: its occupied cells' range and
/// count, and the union and magnitudes of its small objects' boxes.
SegmentExtent segment_extent(const Cells& c) {
    const BoxQueryGrid& g = c.grid;
    SegmentExtent e;
    e.cells = g.has_cells ? c.cell_count : 0;
    for (uint32_t d = 0; d < 3; ++d) {
        e.cell_lo[d] = g.cell_lo[d];
        e.cell_hi[d] = g.cell_hi[d];
        e.box_lo[d] = static_cast<double>(g.box_lo[d]);
        e.box_hi[d] = static_cast<double>(g.box_hi[d]);
        e.magnitude[d] = static_cast<double>(g.magnitude[d]);
    }
    return e;
}

/// Small objects of a piece, once along the whole ray: calls hit(object) for
/// each object reported from this piece that passes the layer mask.
template <typename Hit>
void scan_piece(const Cells& c, const CellBox& piece, const CellBox* previous, uint32_t layer_mask, RayWork work,
                Hit&& hit) {
    c.walk(piece, every_row, [&](uint32_t cell, int32_t x, int32_t y, int32_t z) {
        work.cell();
        const int32_t at[3] = {x, y, z};
        const uint32_t end = c.end(cell);
        for (uint32_t e = c.begin(cell); e < end; ++e) {
            const uint32_t object = c.view.entry_object[e];
            if (!c.in_layer(object, layer_mask)) continue;
            CellBox r;
            c.object_cells(object, r);
            if (previous != nullptr && boxes_meet(r, *previous)) continue;
            bool here = true;
            for (uint32_t d = 0; d < 3; ++d)
                here = here && std::max(piece.lo[d], r.lo[d]) == at[d];
            if (here) hit(object);
        }
    });
}

bool hit_less(const RayHit& a, const RayHit& b) { return hit_before(a, b); }

/// The first list.limit hits of the ray in (t, index) order (only those after
/// list.after, when set) into the list. Large objects first, then the pieces
/// along the ray until no unseen object can come before the list's last.
void first_hits(const Cells& c, const Ray& ray, uint32_t layer_mask, SortedHits<RayHit>& list, RayWork work) {
    auto consider = [&](uint32_t object) {
        work.test();
        float lo[3], hi[3];
        c.object_box(object, lo, hi);
        float t = 0.0f;
        if (ray_box_hit(ray, lo, hi, c.lat.dims, t)) list.offer(RayHit{object, t});
    };
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        if (c.in_layer(c.view.large_object[j], layer_mask)) consider(c.view.large_object[j]);
    // A hit after list.after has float t >= after->t, so its slab t (a
    // double rounded to that float) is at least after->t less half an ulp.
    double t_from = 0.0;
    if (list.after != nullptr && std::isfinite(list.after->t))
        t_from = std::max(0.0, static_cast<double>(list.after->t) * (1.0 - kRelativeSlack) - kAbsoluteSlack);
    if (!walk_segment(
            c.lat, segment_extent(c), ray,
            [&](const CellBox& piece, const CellBox* previous, double t_end) {
                scan_piece(c, piece, previous, layer_mask, work, consider);
                // An unseen object's slab t exceeds t_end up to rounding (float t: 2^-24 relative).
                return !list.full() ||
                       !(static_cast<double>(list.out[list.limit - 1].t) < t_end * (1.0 - kRelativeSlack));
            },
            t_from))
        scan_all_small(c, layer_mask, consider, [&] { work.cell(); });
}

} // namespace

Ray segment_ray(const float start[3], const float end[3]) {
    Ray r;
    for (uint32_t d = 0; d < 3; ++d) {
        r.origin[d] = start[d];
        r.direction[d] = end[d] - start[d];
    }
    r.max_t = 1.0f;
    return r;
}

bool ray_box_hit(const Ray& ray, const float box_min[3], const float box_max[3], uint32_t dimensions, float& t) {
    double t_enter = 0.0;
    double t_exit = static_cast<double>(ray.max_t);
    for (uint32_t d = 0; d < dimensions; ++d) {
        const float o = ray.origin[d];
        const float dir = ray.direction[d];
        if (dir == 0.0f) {
            if (o < box_min[d] || o > box_max[d]) return false;
            continue;
        }
        const double od = static_cast<double>(o);
        const double dd = static_cast<double>(dir);
        double t1 = (static_cast<double>(box_min[d]) - od) / dd;
        double t2 = (static_cast<double>(box_max[d]) - od) / dd;
        if (t1 > t2) std::swap(t1, t2);
        if (t1 > t_enter) t_enter = t1;
        if (t2 < t_exit) t_exit = t2;
    }
    if (!(t_enter <= t_exit)) return false;
    t = static_cast<float>(t_enter);
    return true;
}

namespace {

/// The query on a checked grid's cell index (copied: the stores into `out`
/// could otherwise alias it, and every hit would reload it).
QueryResult ray_hits(const Cells& cells, const Ray& ray, uint32_t layer_mask, RayHit* out, uint64_t capacity,
                     RayWork work = {}) {
    const Cells c = cells;
    if (!valid_ray(ray, c.lat.dims)) return invalid("query_ray: NaN/infinite ray or negative max_t");
    // The best `capacity` hits by (t, index) in a max-heap in the caller's
    // buffer; every hit is counted. Keys are unique, so the sorted heap is the
    // canonical prefix whatever the discovery order.
    uint64_t count = 0;
    uint64_t size = 0;
    auto consider = [&](uint32_t object) {
        work.test();
        float lo[3], hi[3];
        c.object_box(object, lo, hi);
        float t = 0.0f;
        if (!ray_box_hit(ray, lo, hi, c.lat.dims, t)) return;
        ++count;
        const RayHit h{object, t};
        if (size < capacity) {
            out[size++] = h;
            std::push_heap(out, out + size, hit_less);
        } else if (capacity != 0 && hit_less(h, out[0])) {
            std::pop_heap(out, out + size, hit_less);
            out[size - 1] = h;
            std::push_heap(out, out + size, hit_less);
        }
    };
    // Hits are ranked by (t, index) whatever the order they are found in.
    if (!walk_segment(c.lat, segment_extent(c), ray, [&](const CellBox& piece, const CellBox* previous, double) {
            scan_piece(c, piece, previous, layer_mask, work, consider);
            return true;
        }))
        scan_all_small(c, layer_mask, consider, [&] { work.cell(); });
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        if (c.in_layer(c.view.large_object[j], layer_mask)) consider(c.view.large_object[j]);
    std::sort_heap(out, out + size, hit_less);
    return query_finish(count, capacity);
}

} // namespace

QueryResult query_ray(const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask, RayHit* out, uint64_t capacity) {
    return ranked_query(grid, out, capacity, "query_ray: null output with capacity > 0",
                        [&](const Cells& c) { return ray_hits(c, ray, layer_mask, out, capacity); });
}

namespace {

/// The first hit on a checked grid's cell index.
QueryResult ray_first_hit(const Cells& c, const Ray& ray, uint32_t layer_mask, RayHit* hit, RayWork work = {}) {
    if (!valid_ray(ray, c.lat.dims)) return invalid("query_ray_first: NaN/infinite ray or negative max_t");
    RayHit best{kNoIndex, 0.0f};
    SortedHits<RayHit> list{&best, 1};
    first_hits(c, ray, layer_mask, list, work);
    *hit = best; // index kNoIndex when nothing is hit
    return query_finish(list.size, 1);
}

/// The visitor form without its layout stamp.
QueryResult visit_ray_in_frame(const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask, RayVisitor visitor) {
    HASHGRID_REQUIRE_ARGUMENT(usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(grid);
    HASHGRID_REQUIRE_ARGUMENT(visitor.visit != nullptr, "query_ray: null visit function");
    const Cells c(grid);
    if (!valid_ray(ray, c.lat.dims)) return invalid("query_ray: NaN/infinite ray or negative max_t");
    QueryResult r;
    r.total = detail::visit_in_runs<RayHit>(visitor, ~uint64_t{0}, [&](const RayHit* after, RayHit* run, uint32_t m) {
        SortedHits<RayHit> list{run, m, after};
        first_hits(c, ray, layer_mask, list, {});
        return list.size;
    });
    return r;
}

} // namespace

QueryResult query_ray_first(const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask, RayHit* hit) {
    return ranked_query(grid, hit, 1, "query_ray_first: null output",
                        [&](const Cells& c) { return ray_first_hit(c, ray, layer_mask, hit); });
}

QueryResult query_ray(const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask, RayVisitor visitor) {
    return stamped(grid, visit_ray_in_frame(grid, ray, layer_mask, visitor));
}

// ---------------------------------------------------------------------------
// Batches.

QueryResult query_ray_batch(const BoxQueryGrid& grid, const Ray* rays, uint32_t count, uint32_t layer_mask,
                            uint64_t* offsets, uint64_t offsets_capacity, RayHit* out, uint64_t capacity,
                            const ThreadBackend& backend, QueryStats* stats) {
    detail::BatchStats counts;
    const QueryResult r = cells_batch(
        grid, TracePhase::query_ray_batch, rays, count, offsets, offsets_capacity, out, capacity, backend,
        [&](const Cells& c, uint32_t q, RayHit* o, uint64_t room) {
            if (stats == nullptr) return batch_total(ray_hits(c, rays[q], layer_mask, o, room));
            QueryStats work{};
            const uint64_t total = batch_total(ray_hits(c, rays[q], layer_mask, o, room, RayWork{&work}));
            counts.add(work, total);
            return total;
        },
        &counts.rerun);
    counts.add_to(stats);
    return r;
}

namespace {

/// The batch without its layout stamp.
QueryResult ray_first_batch_in_frame(const BoxQueryGrid& grid, const Ray* rays, uint32_t count, uint32_t layer_mask,
                                     RayHit* hits, const ThreadBackend& backend, QueryStats* stats) {
    HASHGRID_REQUIRE_BATCH(grid, rays, count);
    HASHGRID_REQUIRE_ARGUMENT(hits != nullptr || count == 0, "query_ray_first_batch: null hits");
    // Validate first so that nothing is written for an invalid batch.
    QueryResult result;
    const Cells c(grid);
    result.status = check_ray_batch(rays, count, c.lat.dims);
    if (!result.status.ok()) return result;
    const uint32_t grain = detail::query_batch_grain(count);
    detail::PhaseTrace trace(grid.view.trace, backend);
    trace.begin(TracePhase::query_ray_batch);
    detail::BatchStats counts;
    parallel_chunks(trace.backend(), count, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        // Every ray was validated above, so each result is ok with the hit in hits[q]; the batch counts the hits.
        for (uint32_t q = begin; q < end; ++q) {
            if (stats == nullptr) {
                (void)ray_first_hit(c, rays[q], layer_mask, hits + q);
                continue;
            }
            QueryStats work{};
            const QueryResult one = ray_first_hit(c, rays[q], layer_mask, hits + q, RayWork{&work});
            counts.add(work, one.total);
        }
    });
    counts.add_to(stats);
    for (uint32_t q = 0; q < count; ++q)
        result.total += hits[q].index != kNoIndex ? 1u : 0u;
    result.written = count;
    return result;
}

} // namespace

QueryResult query_ray_first_batch(const BoxQueryGrid& grid, const Ray* rays, uint32_t count, uint32_t layer_mask,
                                  RayHit* hits, const ThreadBackend& backend, QueryStats* stats) {
    return stamped(grid, ray_first_batch_in_frame(grid, rays, count, layer_mask, hits, backend, stats));
}

} // namespace hashgrid

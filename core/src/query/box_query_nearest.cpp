// SPDX-License-Identifier: MIT
// Nearest-object queries of the box grid (box_queries.h): query_nearest, its
// visitor form and query_nearest_batch.
//
// Cubic shells of cells around the query's cell (clamped into the occupied
// extent), each scanned once; an object is considered in the first shell that
// meets its cell range, from one cell. After a shell, every unseen object lies
// beyond the faces of the scanned cube that are inside the occupied extent;
// the loop stops when the k-th distance is below that bound (with a margin
// for rounding), or the bound exceeds max_distance. Once the cube would hold
// more than about twice the occupied cells, the objects no shell has met are
// considered in one scan of the occupied cells instead (consider_unseen).
//
// The visitor form runs the same search for short runs of hits, each keeping
// only the objects after the last hit visited (SortedHits::after): which
// shell considers an object does not depend on that filter, and the stopping
// bound holds for the filtered list as for the whole one.
#include "query/box_query_batch.h"
#include "query/box_query_internal.h"

#include "hashgrid/box_queries.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hashgrid {
namespace {

using namespace box_query;

/// Sorted list of the best candidates, kept in the caller's buffer.
using NearestList = SortedHits<NearestHit>;

/// min(k, objects in the layers within max_d2 of center), by a scan over every object.
uint32_t count_within(const Cells& c, const float center[3], uint32_t layer_mask, float max_d2, uint32_t k) {
    uint32_t n = 0;
    for (uint32_t o = 0; o < c.view.object_count && n < k; ++o) {
        if (!c.in_layer(o, layer_mask)) continue;
        float lo[3], hi[3];
        c.object_box(o, lo, hi);
        if (point_box_distance2(center, lo, hi, c.lat.dims) <= max_d2) ++n;
    }
    return n;
}

/// Cells of the cube centre +- s inside the occupied extent.
double cube_cells(const Cells& c, const int64_t centre[3], int64_t s) {
    const BoxQueryGrid& grid = c.grid;
    double cells = 1.0;
    for (uint32_t d = 0; d < c.lat.dims; ++d)
        cells *= static_cast<double>(std::min<int64_t>(centre[d] + s, grid.cell_hi[d]) -
                                     std::max<int64_t>(centre[d] - s, grid.cell_lo[d]) + 1);
    return cells;
}

/// The fallback when the cube of the shells would hold more than about twice
/// as many cells as are occupied (2 * cells + 64; a sparse extent): every
/// object not seen in shells 0 .. s - 1, once, from its minimum cell.
template <typename Consider>
void consider_unseen(const Cells& c, const int64_t centre[3], int64_t s, uint32_t layer_mask, Consider&& consider) {
    const BoxQueryGrid& grid = c.grid;
    CellBox seen{};
    for (uint32_t d = 0; d < 3; ++d) {
        const int64_t reach = d < c.lat.dims ? s - 1 : 0;
        seen.lo[d] = static_cast<int32_t>(std::max<int64_t>(centre[d] - reach, grid.cell_lo[d]));
        seen.hi[d] = static_cast<int32_t>(std::min<int64_t>(centre[d] + reach, grid.cell_hi[d]));
    }
    scan_all_small(c, layer_mask, [&](uint32_t object) {
        CellBox r;
        c.object_cells(object, r);
        if (!boxes_meet(r, seen)) consider(object);
    });
}

/// Shell s: the cells of the cube centre +- s (clipped to the occupied
/// extent) outside the cube centre +- (s - 1), as up to six disjoint boxes (z
/// faces, then y faces without them, then x faces). Objects met by an earlier
/// shell are skipped; the others are considered from one cell.
template <typename Consider>
void consider_shell(const Cells& c, const int64_t centre[3], int64_t s, uint32_t layer_mask, Consider&& consider) {
    const BoxQueryGrid& grid = c.grid;
    CellBox cube{};
    CellBox inner{};
    for (uint32_t d = 0; d < 3; ++d) {
        const int64_t reach = d < c.lat.dims ? s : 0;
        cube.lo[d] = static_cast<int32_t>(std::max<int64_t>(centre[d] - reach, grid.cell_lo[d]));
        cube.hi[d] = static_cast<int32_t>(std::min<int64_t>(centre[d] + reach, grid.cell_hi[d]));
        const int64_t inner_reach = d < c.lat.dims ? s - 1 : 0;
        inner.lo[d] = static_cast<int32_t>(std::max<int64_t>(centre[d] - inner_reach, INT32_MIN));
        inner.hi[d] = static_cast<int32_t>(std::min<int64_t>(centre[d] + inner_reach, INT32_MAX));
    }
    auto scan = [&](const CellBox& part) {
        c.walk(part, every_row, [&](uint32_t cell, int32_t x, int32_t y, int32_t z) {
            const int32_t at[3] = {x, y, z};
            for (uint32_t e = c.begin(cell); e < c.end(cell); ++e) {
                const uint32_t object = c.view.entry_object[e];
                if (!c.in_layer(object, layer_mask)) continue;
                CellBox r;
                c.object_cells(object, r);
                if (s > 0 && boxes_meet(r, inner)) continue; // seen in an earlier shell
                bool here = true;
                for (uint32_t d = 0; d < 3; ++d)
                    here = here && std::max(r.lo[d], cube.lo[d]) == at[d];
                if (here) consider(object);
            }
        });
    };
    if (s == 0) {
        scan(cube);
        return;
    }
    CellBox rest = cube; // shrinks as faces are taken off, axis by axis (z, y, x)
    for (uint32_t axis = c.lat.dims; axis-- > 0;) {
        const int64_t low_face = centre[axis] - s;
        const int64_t high_face = centre[axis] + s;
        if (low_face >= rest.lo[axis] && low_face <= rest.hi[axis]) {
            CellBox part = rest;
            part.lo[axis] = part.hi[axis] = static_cast<int32_t>(low_face);
            scan(part);
            rest.lo[axis] = static_cast<int32_t>(low_face + 1);
        }
        if (high_face >= rest.lo[axis] && high_face <= rest.hi[axis]) {
            CellBox part = rest;
            part.lo[axis] = part.hi[axis] = static_cast<int32_t>(high_face);
            scan(part);
            rest.hi[axis] = static_cast<int32_t>(high_face - 1);
        }
        if (rest.lo[axis] > rest.hi[axis]) break;
    }
}

/// Lower bound on the distance of any small object unseen after shell s: the
/// nearest face of the cube that is inside the occupied extent, less a margin
/// for rounding. +inf when the whole extent has been scanned.
double unseen_bound(const Cells& c, const float center[3], const int64_t centre[3], int64_t s) {
    const BoxQueryGrid& grid = c.grid;
    double bound = kDoubleInf;
    double size = 0.0;
    for (uint32_t d = 0; d < c.lat.dims; ++d) {
        const double p = static_cast<double>(center[d]);
        size = std::max(size, std::fabs(p) + std::fabs(c.lat.origin[d]));
        if (centre[d] - s > grid.cell_lo[d]) {
            const double face = c.boundary(d, centre[d] - s);
            bound = std::min(bound, p - face);
            size = std::max(size, std::fabs(face));
        }
        if (centre[d] + s < grid.cell_hi[d]) {
            const double face = c.boundary(d, centre[d] + s + 1);
            bound = std::min(bound, face - p);
            size = std::max(size, std::fabs(face));
        }
    }
    if (bound == kDoubleInf) return kDoubleInf;
    return (bound - 0x1p-40 * size) * (1.0 - 0x1p-16);
}

/// Offers every small object that may be among the nearest to the list,
/// shell by shell, until no unseen one can be nearer than the list's last.
template <typename Consider>
void nearest_shells(const Cells& c, const float center[3], uint32_t layer_mask, float max_d2, const NearestList& list,
                    Consider&& consider) {
    const BoxQueryGrid& grid = c.grid;
    int64_t centre[3] = {0, 0, 0};
    for (uint32_t d = 0; d < c.lat.dims; ++d)
        centre[d] = std::clamp(c.cell(d, static_cast<double>(center[d])), grid.cell_lo[d], grid.cell_hi[d]);
    const double budget = 2.0 * static_cast<double>(c.cell_count) + 64.0;
    for (int64_t s = 0;; ++s) {
        if (s > 0 && cube_cells(c, centre, s) > budget) {
            consider_unseen(c, centre, s, layer_mask, consider);
            return;
        }
        consider_shell(c, centre, s, layer_mask, consider);
        const double bound = unseen_bound(c, center, centre, s);
        if (bound == kDoubleInf) return; // the whole extent is scanned
        if (bound < 0x1p-60) continue;
        const double bound2 = bound * bound;
        if (bound2 > static_cast<double>(max_d2)) return;
        if (list.full() && static_cast<double>(list.out[list.limit - 1].distance_squared) < bound2) return;
    }
}

/// Why a nearest query is invalid, or null.
const char* invalid_nearest(const Cells& c, const QueryNearest& query) {
    if (query.k == 0) return "query_nearest: k == 0";
    if (!finite3(query.center, c.lat.dims)) return "query_nearest: the centre is not finite";
    if (std::isnan(query.max_distance) || query.max_distance < 0.0f)
        return "query_nearest: max_distance is NaN or negative";
    return nullptr;
}

/// Offers every object that may be among the list's nearest within max_d2
/// (large objects, then the shells): the list ends up holding the nearest
/// `list.limit` (after list.after, when set), exactly.
void nearest_search(const Cells& c, const QueryNearest& query, uint32_t layer_mask, float max_d2, NearestList& list) {
    auto consider = [&](uint32_t object) {
        float lo[3], hi[3];
        c.object_box(object, lo, hi);
        const float d2 = point_box_distance2(query.center, lo, hi, c.lat.dims);
        if (d2 <= max_d2) list.offer(NearestHit{object, d2});
    };
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        if (c.in_layer(c.view.large_object[j], layer_mask)) consider(c.view.large_object[j]);
    if (c.grid.has_cells) nearest_shells(c, query.center, layer_mask, max_d2, list, consider);
}

/// The query on a checked grid's cell index.
QueryResult nearest_hits(const Cells& c, const QueryNearest& query, uint32_t layer_mask, NearestHit* out,
                         uint64_t capacity) {
    if (const char* why = invalid_nearest(c, query)) return invalid(why);
    const uint32_t k = query.k;
    const float max_d2 = query.max_distance * query.max_distance;
    NearestList list{out, static_cast<uint32_t>(std::min<uint64_t>(k, capacity))};
    if (list.limit == 0) return query_finish(count_within(c, query.center, layer_mask, max_d2, k), capacity);
    nearest_search(c, query, layer_mask, max_d2, list);
    uint32_t count = list.size;
    if (list.full() && list.limit < k) count = count_within(c, query.center, layer_mask, max_d2, k);
    return query_finish(count, capacity);
}

/// The visitor form without its layout stamp.
QueryResult visit_nearest_in_frame(const BoxQueryGrid& grid, const QueryNearest& query, uint32_t layer_mask,
                                   NearestVisitor visitor) {
    HASHGRID_REQUIRE_ARGUMENT(usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(grid);
    HASHGRID_REQUIRE_ARGUMENT(visitor.visit != nullptr, "query_nearest: null visit function");
    const Cells c(grid);
    if (const char* why = invalid_nearest(c, query)) return invalid(why);
    const float max_d2 = query.max_distance * query.max_distance;
    QueryResult r;
    r.total =
        detail::visit_in_runs<NearestHit>(visitor, query.k, [&](const NearestHit* after, NearestHit* run, uint32_t m) {
            NearestList list{run, m, after};
            nearest_search(c, query, layer_mask, max_d2, list);
            return list.size;
        });
    return r;
}

} // namespace

QueryResult query_nearest(const BoxQueryGrid& grid, const QueryNearest& query, uint32_t layer_mask, NearestHit* out,
                          uint64_t capacity) {
    return ranked_query(grid, out, capacity, "query_nearest: null output with capacity > 0",
                        [&](const Cells& c) { return nearest_hits(c, query, layer_mask, out, capacity); });
}

QueryResult query_nearest(const BoxQueryGrid& grid, const QueryNearest& query, uint32_t layer_mask,
                          NearestVisitor visitor) {
    return stamped(grid, visit_nearest_in_frame(grid, query, layer_mask, visitor));
}

QueryResult query_nearest_batch(const BoxQueryGrid& grid, const QueryNearest* queries, uint32_t count,
                                uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity, NearestHit* out,
                                uint64_t capacity, const ThreadBackend& backend) {
    return cells_batch(grid, TracePhase::query_nearest_batch, queries, count, offsets, offsets_capacity, out, capacity,
                       backend, [&](const Cells& c, uint32_t q, NearestHit* o, uint64_t room) {
                           return batch_total(nearest_hits(c, queries[q], layer_mask, o, room));
                       });
}

} // namespace hashgrid

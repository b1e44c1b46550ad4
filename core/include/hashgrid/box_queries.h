// SPDX-License-Identifier: MIT
/// @file
/// Queries over a built box grid: point, box, sphere/circle, segment/ray,
/// frustum, k nearest, "potential collisions of this object", and batches of
/// them run in parallel.
///
/// Recipe:
///
///     hashgrid::BoxQueryGrid g = hashgrid::prepare_box_queries(boxes.view(), backend); // once per rebuild
///     hashgrid::QueryBox box{{x0, y0, z0}, {x1, y1, z1}};
///     hashgrid::QueryResult r = hashgrid::query_box(g, box, hashgrid::kAllLayers, out, capacity);
///     // r.total is exact; out[0, r.written) is a prefix of the full answer.
///
/// Shapes, results, visitors and the output, batch and visitor contracts are
/// query_types.h's, shared with particle_queries.h. Nothing allocates; no
/// query keeps state between calls.
///
/// Layers. Every query takes a layer_mask right after what it asks; an object
/// is reported when (category[object] & layer_mask) != 0 (null categories:
/// every bit set). A batch takes one mask for all its queries.
/// query_potential_collisions() uses the pair rule of box_grid.h instead.
///
/// Distances are closed: an object is within r of a point when
/// point_box_distance2 <= r * r, and query_nearest's max_distance is closed
/// too. Each accept/reject test is written out below; docs/user-guide.md,
/// "Queries", has the float rules and the exact order of set queries (each
/// object once; objects kept in cells first, by reporting cell in (z, y, x)
/// order, then index; large objects last, by index; the same on every thread
/// count, platform and SIMD width).
///
/// Results are object indices of the grid's frame: for a grid rebuilt from an
/// ObjectStore, dense indices valid until the store's next add, remove, clear
/// or init. Every QueryResult here carries the frame's layout
/// (QueryResult::layout = view.source_layout, whatever the status); map it
/// with store.handles_at(g.view, r, out, handles) (objects.h), which answers
/// stale_view for a result of another layout. store_queries.h has every query
/// here in a form that takes the store and writes handles directly.
#pragma once

#include "hashgrid/box_grid.h"
#include "hashgrid/query_types.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>
#include <limits>

namespace hashgrid {

/// What every query reads: the grid's view plus bounds that the ray, frustum
/// and nearest queries need to stay finite in an unbounded world. Make it
/// again after every rebuild (it holds the view's pointers).
struct BoxQueryGrid {
    /// The view it was prepared from (BoxGrid::view()).
    BoxGridView view;
    /// False when no object is kept in cells (all large, or none).
    bool has_cells = false;
    /// Inclusive cell-coordinate extent of the occupied cells (z = 0 in 2D).
    /// @{
    int32_t cell_lo[3] = {0, 0, 0};
    int32_t cell_hi[3] = {0, 0, 0};
    /// @}
    /// Union of the boxes of the objects kept in cells (not large ones).
    /// @{
    float box_lo[3] = {0.0f, 0.0f, 0.0f};
    float box_hi[3] = {0.0f, 0.0f, 0.0f};
    /// @}
    /// Largest |coordinate| per axis over those boxes: the scale of rounding errors.
    float magnitude[3] = {0.0f, 0.0f, 0.0f};
    /// Largest cell span (max cell - min cell) per axis of those objects: how
    /// far a frustum query must look from an object's minimum cell.
    int32_t max_span[3] = {0, 0, 0};
};

/// Computes the bounds above: O(cells + objects), run in fixed chunks through
/// the backend (min/max: the same result for any thread count). Prepare again
/// after every rebuild: queries through a BoxQueryGrid whose grid has been
/// rebuilt or re-initialised since return stale_view, and queries on a grid
/// that was never built return not_built (both O(1), nothing read).
BoxQueryGrid prepare_box_queries(const BoxGridView& view, const ThreadBackend& backend);

/// Objects whose closed box contains the point: min <= p <= max on every
/// axis. The point must be finite. Looks at one cell and the large objects.
[[nodiscard]] QueryResult query_point(const BoxQueryGrid& grid, const QueryPoint& point, uint32_t layer_mask,
                                      uint32_t* out, uint64_t capacity);
/// Visitor form (query_types.h): the same objects, in the same order.
[[nodiscard]] QueryResult query_point(const BoxQueryGrid& grid, const QueryPoint& point, uint32_t layer_mask,
                                      QueryVisitor visitor);

/// Objects overlapping the closed box (a.min <= b.max and b.min <= a.max on
/// every axis). min <= max, no NaN; infinite bounds are allowed.
[[nodiscard]] QueryResult query_box(const BoxQueryGrid& grid, const QueryBox& box, uint32_t layer_mask, uint32_t* out,
                                    uint64_t capacity);
/// Visitor form (query_types.h): the same objects, in the same order.
[[nodiscard]] QueryResult query_box(const BoxQueryGrid& grid, const QueryBox& box, uint32_t layer_mask,
                                    QueryVisitor visitor);

/// Squared distance from p to a closed box, in float: per axis
/// d = p < min ? min - p : (p > max ? p - max : 0), then (dx*dx + dy*dy) + dz*dz
/// (2D: dx*dx + dy*dy). 0 inside. Used by query_radius and query_nearest.
float point_box_distance2(const float p[3], const float box_min[3], const float box_max[3], uint32_t dimensions);

/// Objects within distance sphere.radius of sphere.center (sphere in 3D,
/// circle in 2D): point_box_distance2(center, box) <= radius * radius (float
/// product; closed). The centre must be finite, radius >= 0 (+inf: everything).
[[nodiscard]] QueryResult query_radius(const BoxQueryGrid& grid, const QuerySphere& sphere, uint32_t layer_mask,
                                       uint32_t* out, uint64_t capacity);
/// Visitor form (query_types.h): the same objects, in the same order.
[[nodiscard]] QueryResult query_radius(const BoxQueryGrid& grid, const QuerySphere& sphere, uint32_t layer_mask,
                                       QueryVisitor visitor);

/// A ray: points origin + t * direction for t in [0, max_t]. direction need
/// not be unit length (t is then in units of its length); a zero direction is
/// a point query at origin. max_t may be +inf (a ray; the traversal is bounded
/// by the occupied cells). origin and direction finite, max_t >= 0.
struct Ray {
    float origin[3] = {0.0f, 0.0f, 0.0f};    ///< Start point (t = 0); finite.
    float direction[3] = {0.0f, 0.0f, 0.0f}; ///< Finite; need not be unit length (zero: a point query).
    float max_t = 0.0f;                      ///< End parameter, >= 0; +inf for a ray.
};
/// The segment from start to end: direction = end - start (float), max_t = 1.
Ray segment_ray(const float start[3], const float end[3]);

/// Slab test of a closed box, in double (float inputs can neither overflow nor
/// underflow it, whatever the direction's magnitude). Per axis with
/// direction[a] == 0: hit only if min <= origin <= max. Otherwise
/// t1 = (min - origin) / direction, t2 = (max - origin) / direction, swapped
/// so t1 <= t2; t_enter = max(0, t1 over axes), t_exit = min(max_t, t2 over
/// axes); a hit when t_enter <= t_exit, at t = t_enter rounded to float (the
/// order key of the results; +inf only beyond the float range). False on a miss.
bool ray_box_hit(const Ray& ray, const float box_min[3], const float box_max[3], uint32_t dimensions, float& t);

/// Every object the ray hits (ray_box_hit), ordered by the reported (float)
/// t, ties by object index. Cost: the cells along the ray within the
/// occupied cells' extent (each piece of the ray between two cell
/// boundaries reads its cells, widened by a rounding margin of 2^-46 of the
/// origin's magnitude), or one scan of the occupied cells when that would
/// read more (a long ray through a sparse extent, an origin so far away that
/// the margin spans several cells): at most a few scans, whatever the ray.
[[nodiscard]] QueryResult query_ray(const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask, RayHit* out,
                                    uint64_t capacity);
/// Visitor form: visit(context, hit) for the same hits in the same order
/// (bit-identical t), first hit first, until it returns false. No buffer and
/// no allocation: the hits are found in runs of 1, 2, 4, ... up to 64, each
/// by one search like query_ray_first's for the run's length, restricted to
/// the hits after the last one visited and walking the cells from where the
/// ray is at that hit's t. Stopping after the first hit costs about one
/// query_ray_first; visiting m hits about log2(m) + m / 64 such searches,
/// each walking the ray from the last visited hit to its own last hit (the
/// large objects are tested once per search).
[[nodiscard]] QueryResult query_ray(const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask, RayVisitor visitor);
/// Only the first hit (smallest t, then smallest index): total is 0 or 1 and
/// *hit is written when it is 1 (else hit->index = kNoIndex). Stops
/// traversing once nothing unseen can come earlier.
[[nodiscard]] QueryResult query_ray_first(const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask, RayHit* hit);

/// Objects whose box is not entirely outside any plane: for each plane the
/// box corner farthest along the normal (max where normal >= 0, else min)
/// gives ((nx*px + ny*py) + nz*pz) + d (2D: (nx*px + ny*py) + d), and the box
/// is rejected when that is < 0 for some plane. This is the conservative test
/// games cull with: a box near a frustum corner can pass every plane without
/// touching the frustum.
[[nodiscard]] QueryResult query_frustum(const BoxQueryGrid& grid, const Frustum& frustum, uint32_t layer_mask,
                                        uint32_t* out, uint64_t capacity);
/// Visitor form (query_types.h): the same objects, in the same order.
[[nodiscard]] QueryResult query_frustum(const BoxQueryGrid& grid, const Frustum& frustum, uint32_t layer_mask,
                                        QueryVisitor visitor);

/// The query.k objects nearest to query.center by point_box_distance2,
/// ascending (distance_squared, index), at most query.max_distance away
/// (distance_squared <= max_distance * max_distance; closed). Exact: the same
/// k as sorting every object. Grows cubic shells of cells around the centre
/// until no unseen object can be nearer. The result list is kept sorted in
/// `out` itself (insertion, O(k) per better candidate): no scratch. total =
/// min(k, objects within max_distance); with capacity < k, out gets the
/// nearest `capacity` and total is still exact (counting it scans every
/// object, on that path only).
[[nodiscard]] QueryResult query_nearest(const BoxQueryGrid& grid, const QueryNearest& query, uint32_t layer_mask,
                                        NearestHit* out, uint64_t capacity);
/// Visitor form: visit(context, hit) for the same hits in the same order
/// (bit-identical distance_squared), nearest first, until it returns false
/// or query.k hits were visited. No buffer and no allocation: the hits are
/// found in runs of 1, 2, 4, ... up to 64, each by one search like the
/// buffer form's (k = the run's length) restricted to the objects after the
/// last hit visited in (distance_squared, index) order. Stopping after the
/// first hit costs one k = 1 search; visiting m hits costs about
/// log2(m) + m / 64 searches, each at most as costly as the buffer form with
/// k = m (a search scans the shells out to its last hit's distance).
[[nodiscard]] QueryResult query_nearest(const BoxQueryGrid& grid, const QueryNearest& query, uint32_t layer_mask,
                                        NearestVisitor visitor);

/// Objects that may collide with object `object` (< view.object_count): a
/// box query with its own box, excluding itself, filtered by the pair rule
/// (cat_a & mask_b) != 0 && (cat_b & mask_a) != 0.
[[nodiscard]] QueryResult query_potential_collisions(const BoxQueryGrid& grid, uint32_t object, uint32_t* out,
                                                     uint64_t capacity);
/// Visitor form (query_types.h): the same objects, in the same order.
[[nodiscard]] QueryResult query_potential_collisions(const BoxQueryGrid& grid, uint32_t object, QueryVisitor visitor);

// ---------------------------------------------------------------------------
/// @name Batches
/// The single queries above, run over an array of queries in parallel with the
/// batch contract of query_types.h: offsets has count + 1 entries, and out
/// holds the concatenation of the single queries' outputs (query_ray_first_batch
/// writes one hit per ray instead). One layer mask for the batch. With a trace
/// in the view (BoxGrid::set_trace), each batch is a traced phase. `stats`,
/// when not null, gets the batch's work counts added (QueryStats in
/// query_types.h).
/// @{

/// query_point() for each of points[0, count), in parallel.
[[nodiscard]] QueryResult query_point_batch(const BoxQueryGrid& grid, const QueryPoint* points, uint32_t count,
                                            uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity,
                                            uint32_t* out, uint64_t capacity, const ThreadBackend& backend,
                                            QueryStats* stats = nullptr);
/// query_box() for each of boxes[0, count), in parallel.
[[nodiscard]] QueryResult query_box_batch(const BoxQueryGrid& grid, const QueryBox* boxes, uint32_t count,
                                          uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity,
                                          uint32_t* out, uint64_t capacity, const ThreadBackend& backend,
                                          QueryStats* stats = nullptr);
/// query_radius() for each of spheres[0, count), in parallel.
[[nodiscard]] QueryResult query_radius_batch(const BoxQueryGrid& grid, const QuerySphere* spheres, uint32_t count,
                                             uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity,
                                             uint32_t* out, uint64_t capacity, const ThreadBackend& backend,
                                             QueryStats* stats = nullptr);
/// query_frustum() for each of frusta[0, count), in parallel.
[[nodiscard]] QueryResult query_frustum_batch(const BoxQueryGrid& grid, const Frustum* frusta, uint32_t count,
                                              uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity,
                                              uint32_t* out, uint64_t capacity, const ThreadBackend& backend);
/// query_ray() for each of rays[0, count), in parallel. QueryStats: cells =
/// occupied cells the traversal (or its fallback scan) read, tested = slab
/// tests (ray_box_hit) run.
[[nodiscard]] QueryResult query_ray_batch(const BoxQueryGrid& grid, const Ray* rays, uint32_t count,
                                          uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity,
                                          RayHit* out, uint64_t capacity, const ThreadBackend& backend,
                                          QueryStats* stats = nullptr);
/// query_nearest() for each of queries[0, count), in parallel.
[[nodiscard]] QueryResult query_nearest_batch(const BoxQueryGrid& grid, const QueryNearest* queries, uint32_t count,
                                              uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity,
                                              NearestHit* out, uint64_t capacity, const ThreadBackend& backend);
/// First hit per ray: hits[q] (index kNoIndex when nothing is hit); total =
/// rays that hit something, written = count. hits holds count entries.
/// QueryStats as query_ray_batch's (results: the rays that hit something).
[[nodiscard]] QueryResult query_ray_first_batch(const BoxQueryGrid& grid, const Ray* rays, uint32_t count,
                                                uint32_t layer_mask, RayHit* hits, const ThreadBackend& backend,
                                                QueryStats* stats = nullptr);
/// @}

} // namespace hashgrid

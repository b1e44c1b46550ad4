// Queries over a built box grid: point, box, sphere/circle, segment/ray,
// frustum, k nearest, "potential collisions of this object", and batches of
// them run in parallel.
//
// Recipe:
//   hashgrid::BoxQueryGrid g = hashgrid::prepare_box_queries(boxes.view(), backend); // once per rebuild
//   hashgrid::BoxQuery q{{x0, y0, z0}, {x1, y1, z1}, kAllLayers};
//   hashgrid::QueryResult r = hashgrid::query_box(g, q, out, capacity);
//   // r.count is exact; out[0, r.written) is a prefix of the full answer.
//
// Output contract (every query). The caller owns the result buffer. `count`
// is always the exact number of results; the first min(count, capacity)
// results are written in the documented order, so a too-small buffer gets a
// valid prefix and status output_too_small with needed = count. Nothing
// allocates; no query keeps state between calls.
//
// Order of set queries (point, box, radius, frustum, potential collisions):
// objects kept in cells first, by the cell that reports them in ascending
// packed key ((z, y, x) order), within a cell by ascending object index; then
// large objects (BoxGridView::large_object) by ascending index. The same for
// any thread count, platform and SIMD width.
//
// One report per object, no set: an object covering several scanned cells is
// reported only from one of them (the min-corner rule of box_grid.h: the cell
// of max(query.min, object.min) per axis).
//
// Layers. An object is reported when (category[object] & query.layer_mask)
// != 0 (null categories: every bit set). potential_collisions() uses the
// pair rule of box_grid.h instead.
//
// Floating point. Every accept/reject decision is a float (ray: double)
// computation written out below, in that operation order, without FMA (the build uses
// -ffp-contract=off); a brute-force loop doing the same arithmetic over all
// objects gives the same answer. Cell ranges are computed in double and
// widened where rounding could otherwise hide a cell (see box_queries.cpp).
//
// Results are object indices of the grid's frame: for a grid rebuilt from an
// ObjectStore, dense indices valid until the store's next add or remove. Map
// them with ObjectStore::handles_at(grid.view, ...) (objects.h), checked.
#pragma once

#include "hashgrid/box_grid.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>
#include <limits>

namespace hashgrid {

/// A layer mask that accepts every category.
inline constexpr uint32_t kAllLayers = 0xffffffffu;
/// "No object" in RayHit::object.
inline constexpr uint32_t kNoObject = 0xffffffffu;

/// What every query reads: the grid's view plus bounds that the ray, frustum
/// and nearest queries need to stay finite in an unbounded world. Make it
/// again after every rebuild (it holds the view's pointers).
struct BoxQueryGrid {
    BoxGridView view;
    /// False when no object is kept in cells (all large, or none).
    bool has_cells = false;
    /// Inclusive cell-coordinate extent of the occupied cells (z = 0 in 2D).
    int32_t cell_lo[3] = {0, 0, 0};
    int32_t cell_hi[3] = {0, 0, 0};
    /// Union of the boxes of the objects kept in cells (not large ones).
    float box_lo[3] = {0.0f, 0.0f, 0.0f};
    float box_hi[3] = {0.0f, 0.0f, 0.0f};
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

/// Outcome of one query.
struct QueryResult {
    /// ok; output_too_small (needed = count, the prefix is written); invalid_query;
    /// not_built / stale_view (see prepare_box_queries); invalid_argument.
    Status status;
    /// Exact number of results.
    uint32_t count = 0;
    /// Results written: min(count, capacity).
    uint32_t written = 0;
};

/// Objects whose closed box contains p: min <= p <= max on every axis.
/// p must be finite. Looks at one cell and the large objects.
struct PointQuery {
    float p[3] = {0.0f, 0.0f, 0.0f};
    uint32_t layer_mask = kAllLayers;
};
QueryResult query_point(const BoxQueryGrid& grid, const PointQuery& query, uint32_t* out, uint32_t capacity);

/// Objects overlapping the closed box [min, max] (a.min <= b.max and
/// b.min <= a.max on every axis). min <= max, no NaN; infinite bounds are
/// allowed (a half-space or everything).
struct BoxQuery {
    float min[3] = {0.0f, 0.0f, 0.0f};
    float max[3] = {0.0f, 0.0f, 0.0f};
    uint32_t layer_mask = kAllLayers;
};
QueryResult query_box(const BoxQueryGrid& grid, const BoxQuery& query, uint32_t* out, uint32_t capacity);

/// Squared distance from p to a closed box, in float: per axis
/// d = p < min ? min - p : (p > max ? p - max : 0), then (dx*dx + dy*dy) + dz*dz
/// (2D: dx*dx + dy*dy). 0 inside. Used by query_radius and query_nearest.
float point_box_distance2(const float p[3], const float box_min[3], const float box_max[3], uint32_t dimensions);

/// Objects within distance `radius` of `center` (sphere in 3D, circle in 2D):
/// point_box_distance2(center, box) <= radius * radius (float product). The
/// centre must be finite, radius >= 0 (+inf: everything).
struct RadiusQuery {
    float center[3] = {0.0f, 0.0f, 0.0f};
    float radius = 0.0f;
    uint32_t layer_mask = kAllLayers;
};
QueryResult query_radius(const BoxQueryGrid& grid, const RadiusQuery& query, uint32_t* out, uint32_t capacity);

/// A ray: points origin + t * direction for t in [0, max_t]. direction need
/// not be unit length (t is then in units of its length); a zero direction is
/// a point query at origin. max_t may be +inf (a ray; the traversal is bounded
/// by the occupied cells). origin and direction finite, max_t >= 0.
struct Ray {
    float origin[3] = {0.0f, 0.0f, 0.0f};
    float direction[3] = {0.0f, 0.0f, 0.0f};
    float max_t = 0.0f;
};
/// The segment from start to end: direction = end - start (float), max_t = 1.
Ray segment_ray(const float start[3], const float end[3]);

/// A ray hit: the object and its entry parameter t (0 when origin is inside).
struct RayHit {
    uint32_t object = kNoObject;
    float t = 0.0f;
};

/// Slab test of a closed box, in double (float inputs can neither overflow nor
/// underflow it, whatever the direction's magnitude). Per axis with
/// direction[a] == 0: hit only if min <= origin <= max. Otherwise
/// t1 = (min - origin) / direction, t2 = (max - origin) / direction, swapped
/// so t1 <= t2; t_enter = max(0, t1 over axes), t_exit = min(max_t, t2 over
/// axes); a hit when t_enter <= t_exit, at t = t_enter rounded to float (the
/// order key of the results; +inf only beyond the float range). False on a miss.
bool ray_box_hit(const Ray& ray, const float box_min[3], const float box_max[3], uint32_t dimensions, float& t);

/// Every object the ray hits (ray_box_hit), ordered by the reported (float) t, ties by object index.
struct RayQuery {
    Ray ray;
    uint32_t layer_mask = kAllLayers;
};
QueryResult query_ray(const BoxQueryGrid& grid, const RayQuery& query, RayHit* out, uint32_t capacity);
/// Only the first hit (smallest t, then smallest index): count is 0 or 1 and
/// *out is written when count is 1. Stops traversing once nothing unseen can
/// come earlier.
QueryResult query_ray_first(const BoxQueryGrid& grid, const RayQuery& query, RayHit* out);

/// A half-space: inside when dot(normal, p) + d >= 0 (2D: normal[2] ignored).
struct Plane {
    float normal[3] = {0.0f, 0.0f, 0.0f};
    float d = 0.0f;
};
/// Most planes a frustum (convex region) query takes.
inline constexpr uint32_t kMaxFrustumPlanes = 16;

/// Objects whose box is not entirely outside any plane: for each plane the
/// box corner farthest along the normal (max where normal >= 0, else min)
/// gives ((nx*px + ny*py) + nz*pz) + d (2D: (nx*px + ny*py) + d), and the box
/// is rejected when that is < 0 for some plane. This is the conservative test
/// games cull with: a box near a frustum corner can pass every plane without
/// touching the frustum. 1..kMaxFrustumPlanes finite planes (usually six).
/// An inside-out or empty plane set simply reports nothing.
QueryResult query_frustum(const BoxQueryGrid& grid, const Plane* planes, uint32_t plane_count, uint32_t layer_mask,
                          uint32_t* out, uint32_t capacity);

/// One nearest-object result.
struct NearestHit {
    uint32_t object = kNoObject;
    float distance2 = 0.0f; ///< point_box_distance2 (0 inside the box).
};

/// The k objects nearest to p by point_box_distance2, ascending (distance2,
/// index), at most max_distance away (distance2 <= max_distance *
/// max_distance; +inf: no limit). Exact: the same k as sorting every object.
/// Grows cubic shells of cells around p until no unseen object can be nearer.
/// k >= 1, p finite, max_distance >= 0.
struct NearestQuery {
    float p[3] = {0.0f, 0.0f, 0.0f};
    float max_distance = std::numeric_limits<float>::infinity();
    uint32_t layer_mask = kAllLayers;
};
/// The result list is kept sorted in `out` itself (insertion, O(k) per better
/// candidate): no scratch. count = min(k, objects within max_distance); with
/// capacity < k, out gets the nearest `capacity` and needed is the exact count
/// (counting it scans every object, on that error path only).
QueryResult query_nearest(const BoxQueryGrid& grid, const NearestQuery& query, uint32_t k, NearestHit* out,
                          uint32_t capacity);

/// Objects that may collide with object `object` (< view.object_count): a
/// box query with its own box, excluding itself, filtered by the pair rule
/// (cat_a & mask_b) != 0 && (cat_b & mask_a) != 0.
QueryResult query_potential_collisions(const BoxQueryGrid& grid, uint32_t object, uint32_t* out, uint32_t capacity);

// ---------------------------------------------------------------------------
// Batches. Each query runs independently in fixed chunks through the backend:
// a count pass, an exclusive scan into offsets, a write pass. When out is
// roomy (every chunk of queries fits capacity / chunks), the count pass
// already writes each chunk's results into its share of out and they are
// moved into place instead: one pass of query work, not two. Results of query
// q are out[offsets[q], offsets[q + 1]), in the single query's order: the
// output is identical for any thread count.

/// Outcome of a batch.
struct BatchResult {
    /// ok; output_too_small (needed = total, out holds the first `written`
    /// results, offsets are complete); invalid_query (index = lowest invalid
    /// query, count = invalid queries; out and offsets then hold unspecified
    /// partial results: the valid queries may already have been written).
    Status status;
    uint64_t total = 0;   ///< Exact number of results over all queries.
    uint64_t written = 0; ///< min(total, capacity).
};

/// offsets: query_count + 1 entries, complete unless invalid_query.
BatchResult query_points(const BoxQueryGrid& grid, const PointQuery* queries, uint32_t query_count, uint64_t* offsets,
                         uint32_t* out, uint64_t capacity, const ThreadBackend& backend);
BatchResult query_boxes(const BoxQueryGrid& grid, const BoxQuery* queries, uint32_t query_count, uint64_t* offsets,
                        uint32_t* out, uint64_t capacity, const ThreadBackend& backend);
BatchResult query_radii(const BoxQueryGrid& grid, const RadiusQuery* queries, uint32_t query_count, uint64_t* offsets,
                        uint32_t* out, uint64_t capacity, const ThreadBackend& backend);
BatchResult query_rays(const BoxQueryGrid& grid, const RayQuery* queries, uint32_t query_count, uint64_t* offsets,
                       RayHit* out, uint64_t capacity, const ThreadBackend& backend);
/// First hit per ray: out[q] (object kNoObject when nothing is hit); total =
/// rays that hit something. out holds query_count entries.
BatchResult query_rays_first(const BoxQueryGrid& grid, const RayQuery* queries, uint32_t query_count, RayHit* out,
                             const ThreadBackend& backend);
/// k nearest per query in fixed stride: query q's results are out[q * k,
/// q * k + counts[q]). capacity must be >= query_count * k, else
/// output_too_small with needed = query_count * k and nothing written.
BatchResult query_nearest_batch(const BoxQueryGrid& grid, const NearestQuery* queries, uint32_t query_count, uint32_t k,
                                uint32_t* counts, NearestHit* out, uint64_t capacity, const ThreadBackend& backend);

} // namespace hashgrid

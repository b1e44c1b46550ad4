// SPDX-License-Identifier: MIT
/// @file
/// Queries over a built particle Grid: point, radius ("find nearby"), box,
/// box face, frustum and k nearest neighbours, one at a time or in batches
/// (pairs between an external point set and the grid: Grid::find_pairs_with).
/// Free functions that read a `const Grid&` after a successful rebuild(); they
/// allocate nothing and never change the grid, so any number of queries may
/// run concurrently between two rebuilds.
///
/// Recipe:
///
///     uint32_t hits[256];
///     const hashgrid::QuerySphere sphere{{x, y, z}, 2.5f};
///     hashgrid::QueryResult q = hashgrid::query_radius(grid, sphere, hits, 256);
///     if (q.status.code == hashgrid::StatusCode::output_too_small) { ... q.total is exact ... }
///     for (uint64_t i = 0; i < q.written; ++i) use(hits[i]);   // original particle indices
///
/// Shapes, results, visitors and the output, batch and visitor contracts are
/// query_types.h's, shared with box_queries.h (whose calls add a layer mask).
///
/// Distance: strict, the pair test of Grid::find_pairs(): p is within r of c
/// when d2 < r * r, d2 = (dx * dx + dy * dy) + dz * dz in float, in that
/// order, without fused multiply-add; a distance of exactly r is outside, and
/// query_nearest's max_distance is strict too. Particles are points here
/// (per-particle radii are ignored). Results are original particle indices in
/// the grid's sorted order (by cell in (z, y, x) order, then ascending index),
/// except query_nearest's (distance, then index). docs/user-guide.md,
/// "Queries", has the float rules at the extremes.
///
/// Status, every query: ok; output_too_small (needed = total, the prefix is
/// valid); invalid_query (a NaN or infinite centre, a negative or NaN radius,
/// k == 0, a box with min > max, a face index >= 2 * dimensions, ...; nothing
/// written); not_built (no successful rebuild; nothing written);
/// invalid_argument (a null buffer with a nonzero capacity, a null visit
/// function).
#pragma once

#include "hashgrid/grid.h"
#include "hashgrid/query_types.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>

namespace hashgrid {

/// Particles within the grid's interaction_distance of the point (d2 < r * r
/// with r = interaction_distance): the point's "cell reach" (at most 2 cells
/// per axis are visited). The point must be finite.
[[nodiscard]] QueryResult query_point(const Grid& grid, const QueryPoint& point, uint32_t* out, uint64_t capacity);
/// Visitor form (query_types.h): the same particles, in the same order.
[[nodiscard]] QueryResult query_point(const Grid& grid, const QueryPoint& point, QueryVisitor visitor);

/// Particles with distance < sphere.radius of sphere.center. Any radius >= 0
/// (0 finds nothing; +inf finds every particle whose d2 is finite). Visits
/// only the cells the radius reaches, or, for a radius that spans more cells
/// than are occupied, walks the occupied cells instead. The centre must be
/// finite; a radius NaN or < 0 is invalid_query.
[[nodiscard]] QueryResult query_radius(const Grid& grid, const QuerySphere& sphere, uint32_t* out, uint64_t capacity);
/// Visitor form (query_types.h): the same particles, in the same order.
[[nodiscard]] QueryResult query_radius(const Grid& grid, const QuerySphere& sphere, QueryVisitor visitor);

/// Particles inside the closed box: min <= p <= max on every axis. The cells
/// visited are found with the grid's own key function, so boundary particles
/// are never missed.
[[nodiscard]] QueryResult query_box(const Grid& grid, const QueryBox& box, uint32_t* out, uint64_t capacity);
/// Visitor form (query_types.h): the same particles, in the same order.
[[nodiscard]] QueryResult query_box(const Grid& grid, const QueryBox& box, QueryVisitor visitor);

/// A face of a closed box and a distance: the particles inside the box that
/// lie within `distance` of that face (query_face). Faces are numbered
/// 2 * axis + side: 0 the min-x face (box.min[0]), 1 the max-x face
/// (box.max[0]), 2 and 3 for y, 4 and 5 for z (2D: 0..3); face_index()
/// builds the number.
struct QueryFace {
    QueryBox box;          ///< The closed box (a rank's domain, say).
    uint32_t face = 0;     ///< 2 * axis + side (face_index()).
    float distance = 0.0f; ///< How far from the face, >= 0 (the interaction distance for a halo).
};

/// The number of the min (upper = false) or max (upper = true) face of `axis`.
constexpr uint32_t face_index(uint32_t axis, bool upper) { return 2 * axis + (upper ? 1u : 0u); }

/// Particles p inside the closed box (min <= p <= max on every axis) whose
/// distance to the face is below query.distance, measured as the pair test
/// measures a coordinate difference, in float:
///
///     min face of axis a:  p[a] - box.min[a] < distance
///     max face of axis a:  box.max[a] - p[a] < distance
///
/// This is the halo a domain decomposition sends across the face: with
/// distance = the interaction distance, every particle of the box that the
/// pair test can pair with a particle on the far side of the face (q[a] <=
/// box.min[a], resp. q[a] >= box.max[a]) is a result, whatever the rounding,
/// and a particle at exactly `distance` from the face is not (see
/// particle_queries.cpp). A query_box over the slab [m, m + distance] (the
/// bound rounded to the nearest float) finds these particles too, plus those
/// whose difference is distance or rounds to it, which can pair with nothing
/// beyond the face: query_face is the exact set, strict like the pair test,
/// and needs no rounding argument from the caller. Any distance >= 0 (0
/// finds nothing; +inf finds the particles of the box whose difference is
/// finite); a face at an infinite coordinate finds nothing. Only the cells of
/// the slab along the face are visited. invalid_query: a box query's bad
/// input (a NaN bound, min > max), face >= 2 * dimensions, or a distance NaN
/// or < 0.
[[nodiscard]] QueryResult query_face(const Grid& grid, const QueryFace& query, uint32_t* out, uint64_t capacity);
/// Visitor form (query_types.h): the same particles, in the same order.
[[nodiscard]] QueryResult query_face(const Grid& grid, const QueryFace& query, QueryVisitor visitor);

/// Particles inside every plane of the frustum (Plane's test in query_types.h,
/// with p the particle's position). Cells are culled by their (slightly
/// enlarged) boxes against each plane before their particles are tested, so
/// culling never drops a particle the float test accepts. The traversal is
/// bounded by the grid's cells: occupied cells (unbounded world) or the
/// world's box row by row (bounded world; each row's cells are clipped to
/// the planes first), whatever the frustum's extent. In bounded clamp mode
/// border cells reach to infinity (they hold the clamped particles).
[[nodiscard]] QueryResult query_frustum(const Grid& grid, const Frustum& frustum, uint32_t* out, uint64_t capacity);
/// Visitor form (query_types.h): the same particles, in the same order.
[[nodiscard]] QueryResult query_frustum(const Grid& grid, const Frustum& frustum, QueryVisitor visitor);

/// The query.k nearest particles of query.center with distance <
/// query.max_distance (+inf: no limit), by growing shells of cells around the
/// centre's cell (clamped into the grid's cells), stopping when the next
/// shell cannot hold anything closer than the current k-th. Unbounded worlds
/// switch to a walk over the occupied cells when the shells would visit more
/// cells than are occupied (a centre far from every particle); bounded
/// worlds' shells are limited to the box. Ordered by (distance_squared,
/// index): ties are broken by the lower index, so the result is unique.
/// total = min(k, particles within max_distance). The output buffer doubles
/// as the search heap, so no scratch is needed. The centre must be finite;
/// k == 0, or max_distance NaN or < 0, is invalid_query.
[[nodiscard]] QueryResult query_nearest(const Grid& grid, const QueryNearest& query, NearestHit* out,
                                        uint64_t capacity);
/// Visitor form: visit(context, hit) for the same hits in the same order
/// (bit-identical distance_squared), nearest first, until it returns false
/// or query.k hits were visited. No buffer and no allocation: the hits are
/// found in runs of 1, 2, 4, ... up to 64, each by one search like the
/// buffer form's (k = the run's length) restricted to the particles after
/// the last hit visited in (distance_squared, index) order. Stopping after
/// the first hit costs one k = 1 search; visiting m hits costs about
/// log2(m) + m / 64 searches, each at most as costly as the buffer form with
/// k = m (a search looks at the particles out to its last hit's distance).
[[nodiscard]] QueryResult query_nearest(const Grid& grid, const QueryNearest& query, NearestVisitor visitor);

// ---------------------------------------------------------------------------
/// @name Batches
/// The single queries above, run over an array of queries in parallel with the
/// batch contract of query_types.h: offsets has count + 1 entries, and out
/// holds the concatenation of the single queries' outputs. With a trace
/// attached to the grid (Grid::set_trace), each batch is a traced phase.
/// `stats`, when not null, gets the batch's work counts added (QueryStats in
/// query_types.h).
/// @{

/// query_point() for each of points[0, count), in parallel.
[[nodiscard]] QueryResult query_point_batch(const Grid& grid, const QueryPoint* points, uint32_t count,
                                            uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out,
                                            uint64_t capacity, const ThreadBackend& backend,
                                            QueryStats* stats = nullptr);
/// query_radius() for each of spheres[0, count), in parallel.
[[nodiscard]] QueryResult query_radius_batch(const Grid& grid, const QuerySphere* spheres, uint32_t count,
                                             uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out,
                                             uint64_t capacity, const ThreadBackend& backend,
                                             QueryStats* stats = nullptr);
/// query_box() for each of boxes[0, count), in parallel.
[[nodiscard]] QueryResult query_box_batch(const Grid& grid, const QueryBox* boxes, uint32_t count, uint64_t* offsets,
                                          uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                          const ThreadBackend& backend, QueryStats* stats = nullptr);
/// query_face() for each of faces[0, count), in parallel.
[[nodiscard]] QueryResult query_face_batch(const Grid& grid, const QueryFace* faces, uint32_t count, uint64_t* offsets,
                                           uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                           const ThreadBackend& backend, QueryStats* stats = nullptr);
/// query_frustum() for each of frusta[0, count), in parallel.
[[nodiscard]] QueryResult query_frustum_batch(const Grid& grid, const Frustum* frusta, uint32_t count,
                                              uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out,
                                              uint64_t capacity, const ThreadBackend& backend,
                                              QueryStats* stats = nullptr);
/// query_nearest() for each of queries[0, count), in parallel.
[[nodiscard]] QueryResult query_nearest_batch(const Grid& grid, const QueryNearest* queries, uint32_t count,
                                              uint64_t* offsets, uint64_t offsets_capacity, NearestHit* out,
                                              uint64_t capacity, const ThreadBackend& backend);
/// @}

} // namespace hashgrid

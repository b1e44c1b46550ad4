// Queries over a built particle Grid: radius ("find nearby"), point, box,
// frustum, k nearest neighbours, and pairs between an external point set and
// the grid. Free functions that read a `const Grid&` after a successful
// rebuild(); they allocate nothing and never change the grid, so any number of
// queries may run concurrently between two rebuilds.
//
// Recipe:
//   uint32_t hits[256];
//   const float centre[3] = {x, y, z};
//   hashgrid::ParticleQueryResult q = hashgrid::radius_query(grid, centre, 2.5f, hits, 256);
//   if (q.status.code == hashgrid::StatusCode::output_too_small) { ... q.total is exact ... }
//   for (uint64_t i = 0; i < q.written; ++i) use(hits[i]);   // original particle indices
//
// Distance test. A particle p is within distance r of a point c when
//   d2 < r * r,  d2 = (dx * dx + dy * dy) + dz * dz,  dx = p.x - c.x, ...
// in float, in exactly that order, without fused multiply-add (dz term absent
// in 2D): the same test as Grid::find_pairs(), so a distance of exactly r is
// outside. Squares that overflow float are +inf (and +inf < +inf is false).
// Per-particle radii of the grid (ParticleSpans::radius) are ignored here:
// queries see particles as points.
//
// Result order (single queries other than nearest_query): the grid's sorted
// order, i.e. by cell in lexicographic (z, y, x) order of the integer cell
// coordinates, and within a cell by ascending original index. This is the
// same for bounded and unbounded grids with the same origin and cell size,
// and for any thread count. Results are original particle indices.
//
// Output contract, every query: the caller passes a buffer and its capacity
// (elements; the buffer may be null when the capacity is 0, e.g. to count).
// `total` is always the exact number of results; `written` = min(total,
// capacity) results are written, and they are always the first `written` of
// the full ordered result (a valid prefix). Status:
//   ok                when everything fit;
//   output_too_small  needed = total (exact), the prefix is valid;
//   invalid_query     a NaN or infinite centre, a negative or NaN radius,
//                     k == 0, a box with min > max, ...; nothing written;
//   not_built         the grid has no successful rebuild; nothing written.
//
// Batched queries (radius_queries, box_queries, nearest_queries) run many
// queries in parallel through a ThreadBackend: a count pass, an exclusive
// scan, then a write pass. Results are CSR: those of query q are
// out[offsets[q] .. offsets[q + 1]), each in the order of the single query, so
// the output equals the concatenation of the single queries' outputs for any
// thread count. offsets needs count + 1 entries (uint64_t: totals may exceed
// 2^32). With a too-small `out`, offsets are still complete and exact, and
// out holds the first `capacity` elements of the concatenation. On
// invalid_query (Status::index = lowest offending query, count = how many)
// out is untouched but offsets may hold partial counts. Batches split the
// queries into at most 1024 chunks of at least 16 (point_set_pairs: 64)
// queries; chunking depends on the query count only.
#pragma once

#include "hashgrid/grid.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>

namespace hashgrid {

/// Outcome of a query (single or batched).
struct ParticleQueryResult {
    /// ok, output_too_small (needed = total, or count + 1 for a too-small
    /// offsets array), invalid_query (batches: index = lowest offending query)
    /// or not_built.
    Status status;
    /// Exact number of results, even when they did not all fit.
    uint64_t total = 0;
    /// Results written: min(total, capacity), a prefix of the full order.
    uint64_t written = 0;
};

/// One result of nearest_query(): a particle and its float d2 to the query point.
struct ParticleDistance {
    uint32_t index;         ///< Original particle index.
    float distance_squared; ///< (dx * dx + dy * dy) + dz * dz in float, as in the distance test.
};
static_assert(sizeof(ParticleDistance) == 8, "ParticleDistance is an index and a float");

/// A closed axis-aligned box: a particle is inside when min <= p <= max on
/// every axis (z ignored in 2D). Infinite bounds are allowed (a half-open or
/// all-space box); NaN, or min > max on an axis, is invalid_query.
struct ParticleQueryBox {
    float min[3] = {0.0f, 0.0f, 0.0f};
    float max[3] = {0.0f, 0.0f, 0.0f};
};

/// Six half-spaces plane[i] = {nx, ny, nz, d}; a particle p is inside when, for
/// every plane, ((nx * p.x + ny * p.y) + nz * p.z) + d >= 0 in float, in that
/// order, without FMA. Normals need not be unit length. 2D: each plane is a
/// half-plane (nx * p.x + ny * p.y) + d >= 0 and nz is ignored; pass
/// {0, 0, 0, 0} (always inside) for planes you do not need. An inside-out or
/// otherwise empty intersection simply has no results. Every value must be
/// finite (else invalid_query).
struct ParticleFrustum {
    float plane[6][4] = {};
};

/// Particles with distance < radius of `center` (center[2] ignored in 2D).
/// Any radius >= 0 (0 finds nothing; +inf finds every particle whose d2 is
/// finite). Visits only the cells the radius reaches, or, for a radius that
/// spans more cells than are occupied, walks the occupied cells instead.
/// Sorted order. center must be finite; radius NaN or < 0 is invalid_query.
ParticleQueryResult radius_query(const Grid& grid, const float center[3], float radius, uint32_t* out,
                                 uint64_t capacity);

/// radius_query() with radius = the grid's interaction_distance: the point's
/// "cell reach" (interaction_distance <= cell_size, so at most 2 cells per
/// axis are visited). Sorted order.
ParticleQueryResult point_query(const Grid& grid, const float point[3], uint32_t* out, uint64_t capacity);

/// Particles inside the closed box. Sorted order. The cells visited are found
/// with the grid's own key function, so boundary particles are never missed.
ParticleQueryResult box_query(const Grid& grid, const ParticleQueryBox& box, uint32_t* out, uint64_t capacity);

/// Particles inside the frustum. Cells are culled by their (slightly
/// enlarged) boxes against each plane before their particles are tested, so
/// culling never drops a particle the float test accepts. The traversal is
/// bounded by the grid's cells: occupied cells (unbounded world) or the
/// world's box row by row (bounded world; each row's cells are clipped to
/// the planes first), whatever the frustum's extent. In bounded clamp mode
/// border cells reach to infinity (they hold the clamped particles). Sorted order.
ParticleQueryResult frustum_query(const Grid& grid, const ParticleFrustum& frustum, uint32_t* out, uint64_t capacity);

/// The k nearest particles of `center` with distance < max_distance (pass
/// +inf for no limit), by growing shells of cells around the centre's cell
/// (clamped into the grid's cells), stopping when the next shell cannot hold
/// anything closer than the current k-th. Unbounded worlds switch to a walk
/// over the occupied cells when the shells would visit more cells than are
/// occupied (a centre far from every particle); bounded worlds' shells are
/// limited to the box. Ordered by (distance_squared, original
/// index): ties are broken by the lower index, so the result is unique.
/// total = min(k, particles within max_distance). The output buffer doubles
/// as the search heap, so no scratch is needed. center must be finite;
/// k == 0, or max_distance NaN or < 0, is invalid_query.
ParticleQueryResult nearest_query(const Grid& grid, const float center[3], uint32_t k, float max_distance,
                                  ParticleDistance* out, uint64_t capacity);

/// All pairs (a, b) with a an index into the external `points` (their radius
/// pointer must be null; z ignored in 2D) and b a grid particle with
/// distance < the grid's interaction_distance, as Pair{a = point index, b =
/// particle index} (not a < b!). Ordered by a, then by the grid's sorted
/// order. The grid's particles are never paired among themselves, nor the
/// points. Runs in parallel (count pass, scan, write pass) with the same
/// output for any thread count. A NaN or infinite point is invalid_query with
/// index = lowest offending point, nothing written.
ParticleQueryResult point_set_pairs(const Grid& grid, const ParticleSpans& points, Pair* out, uint64_t capacity,
                                    const ThreadBackend& backend);

/// Batched radius_query(): query q has centre (x[q], y[q], z[q]) and radius
/// radius[q] (queries.radius must be set). See the batched contract above.
ParticleQueryResult radius_queries(const Grid& grid, const ParticleSpans& queries, uint64_t* offsets,
                                   uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                   const ThreadBackend& backend);

/// Batched box_query() over boxes[0 .. count).
ParticleQueryResult box_queries(const Grid& grid, const ParticleQueryBox* boxes, uint32_t count, uint64_t* offsets,
                                uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                const ThreadBackend& backend);

/// Batched nearest_query() with one k and max_distance for all centres
/// (queries.radius is ignored). The count pass counts the particles within
/// max_distance of each centre (skipped for an infinite max_distance).
ParticleQueryResult nearest_queries(const Grid& grid, const ParticleSpans& queries, uint32_t k, float max_distance,
                                    uint64_t* offsets, uint64_t offsets_capacity, ParticleDistance* out,
                                    uint64_t capacity, const ThreadBackend& backend);

} // namespace hashgrid

// SPDX-License-Identifier: MIT
/// @file
/// The query vocabulary shared by particle grids (particle_queries.h) and box
/// grids (box_queries.h): what a query asks (a point, a sphere, a box, a
/// frustum, k nearest), what it answers (QueryResult, Pair, NearestHit,
/// RayHit), and the callback hooks (QueryVisitor, NearestVisitor and
/// RayVisitor for queries, PairFilter for pair finding). A call reads the
/// same on both grid kinds (docs/user-guide.md, "Queries", has the table):
///
///     QueryResult r = query_radius(particle_grid, sphere, out, capacity);
///     QueryResult b = query_radius(box_query_grid, sphere, layer_mask, out, capacity);
///
/// Output contract, every buffer form: the buffer may be null when the
/// capacity (in elements) is 0, e.g. to count. `total` is always exact; the
/// first `written` = min(total, capacity) results of the documented order are
/// written, and the status is output_too_small with needed = total when they
/// did not all fit.
///
/// Batch contract, every query_*_batch: queries[0 .. count) run in parallel
/// through a ThreadBackend, in chunks that depend on the count only. offsets
/// needs count + 1 entries; query q's results are out[offsets[q] ..
/// offsets[q + 1]) in the single query's order, so the output is the
/// concatenation of the single queries' for any thread count. With a
/// too-small `out`, offsets are still exact and out holds the first
/// `capacity` results (output_too_small, needed = total). An invalid query
/// makes the whole batch invalid_query (index = lowest offending query,
/// count = how many); out and offsets then hold unspecified partial results.
///
/// Visitor form, every set query and the ordered ones (k nearest, ray): a
/// plain function and a context are called once per result instead of a
/// buffer, in the documented order, on the calling thread; returning false
/// stops the query at once. total = the calls made, written = 0, status ok
/// (also after an early stop); the checks are the buffer form's, and a null
/// visit function is invalid_argument. Nearest and ray visitors get the hits
/// the buffer form would write, bit for bit, and need no buffer.
#pragma once

#include "hashgrid/status.h"

#include <cstdint>
#include <limits>

namespace hashgrid {

/// One pair of indices. For find_pairs() both are indices of the same set and
/// a < b; for find_pairs_with() a indexes the caller's set and b the grid's.
struct Pair {
    uint32_t a; ///< The first index (find_pairs(): the lower one).
    uint32_t b; ///< The second index (find_pairs(): the higher one).
};
static_assert(sizeof(Pair) == 8, "Pair is two 32-bit indices");

/// Outcome of every query, batch and pair search. [[nodiscard]], like Status:
/// use it, or cast a call to (void) where ignoring it is intended.
struct [[nodiscard]] QueryResult {
    /// ok; output_too_small (needed = total, the prefix is written);
    /// invalid_query (batches: index = lowest offending query, count = how
    /// many); not_built; stale_view (box grids); invalid_argument (null
    /// pointers); pair_capacity (pair searches over their configured limit).
    Status status;
    /// Exact number of results, even when they did not all fit.
    uint64_t total = 0;
    /// Results written: min(total, capacity), a prefix of the full order.
    uint64_t written = 0;
    /// The object layout the result's indices name. Box grids: the
    /// BoxGridView::source_layout of the frame queried, set by every query,
    /// visitor form, batch, find_pairs() and find_pairs_with(), whatever the
    /// status: for a frame rebuilt from an ObjectStore, the store's
    /// layout_generation() at that rebuild. 0 for particle grids, for box
    /// frames rebuilt from BoxSpans, and for results that hold no indices
    /// (ProximityIndex::find_near). ObjectStore::handles_at() and
    /// user_values_at() (objects.h) map a result only when this is the
    /// layout of the frame they are given and that is the store's layout now.
    uint64_t layout = 0;
};

/// Work counters of a query batch, like a tree's traversal statistics: pass
/// a QueryStats* to a batch form that takes one (particle grids: point,
/// radius, box, face and frustum batches; box grids: point, box, radius, ray
/// and first-hit ray batches)
/// and the batch adds its counts to it. Null (the default) counts nothing
/// and costs nothing: the batch then runs the same code as before. With a
/// pointer, the batch runs a counting copy of its query walk (a few adds per
/// cell). For a single query, run a batch of one. Counts depend on the
/// query, the frame and the grid's settings only, never on the backend or the
/// thread count.
struct QueryStats {
    /// Valid queries run.
    uint64_t queries = 0;
    /// Cell reads: runs of stored entries the walks read in one piece. One
    /// per occupied cell visited, except that a bounded particle grid reads
    /// the cells of one row of a query's cell box as one run, and an
    /// unbounded one reads a row longer than about log2(cells) cells as one
    /// run (every particle, for a frustum over a wrapped frame).
    uint64_t cells = 0;
    /// Candidates given the query's exact test. Particle grids: the particles
    /// of the runs read. Box grids: every entry of the cell a point query
    /// reads; the entries a box or radius query reports from the cells it
    /// reads (each object once, by the min-corner rule of box_grid.h); and
    /// every large object.
    uint64_t tested = 0;
    /// Results found (the batch's total, also beyond the buffer's capacity).
    uint64_t results = 0;
    /// Particle frustum queries: cell boxes tested against the planes before
    /// any entry is read, the walk's steps beyond `cells`: one per row of a
    /// bounded world's walk (its cells clipped to the planes by binary
    /// search), or one per occupied cell of the occupied-cell walk. Other
    /// queries: 0.
    uint64_t cull_tests = 0;
};

/// find_pairs() answers with the same result type as every query.
using PairResult = QueryResult;

/// A layer mask that accepts every category (box grids).
inline constexpr uint32_t kAllLayers = 0xffffffffu;
/// "No particle or object" (RayHit::index of a ray that hit nothing).
inline constexpr uint32_t kNoIndex = 0xffffffffu;

/// A point (z ignored in 2D).
struct QueryPoint {
    float position[3] = {0.0f, 0.0f, 0.0f}; ///< x, y, z; finite.
};

/// A sphere in 3D, a circle in 2D (center[2] ignored). Each grid kind states
/// its distance test in its header: particles use the pair test d < radius,
/// box objects the closed test distance-to-box <= radius.
struct QuerySphere {
    float center[3] = {0.0f, 0.0f, 0.0f}; ///< Finite.
    float radius = 0.0f;                  ///< >= 0; +inf is allowed, NaN is not.
};

/// A closed axis-aligned box [min, max] (z ignored in 2D). Infinite bounds are
/// allowed (a half-space or all space); NaN or min > max is invalid_query.
struct QueryBox {
    float min[3] = {0.0f, 0.0f, 0.0f}; ///< Minimum corner; <= max on every axis.
    float max[3] = {0.0f, 0.0f, 0.0f}; ///< Maximum corner.
};

/// A half-space: a point p is inside when ((nx * px + ny * py) + nz * pz) + d
/// >= 0 in float, in that order, without FMA (2D: (nx * px + ny * py) + d; nz
/// ignored). Normals need not be unit length.
struct Plane {
    float normal[3] = {0.0f, 0.0f, 0.0f}; ///< Need not be unit length; points into the inside.
    float d = 0.0f;                       ///< Offset: inside when dot(normal, p) + d >= 0.
};

/// Most planes a Frustum holds.
inline constexpr uint32_t kMaxFrustumPlanes = 16;

/// A convex region: the intersection of planes[0, plane_count) (usually six
/// for a camera, four in 2D). 1..kMaxFrustumPlanes finite planes, else
/// invalid_query. An inside-out or empty intersection simply has no results.
struct Frustum {
    Plane planes[kMaxFrustumPlanes] = {}; ///< The first plane_count are used.
    uint32_t plane_count = 0;             ///< In [1, kMaxFrustumPlanes].
};

/// The k nearest particles or objects of `center` within max_distance
/// (+inf: no limit). k >= 1, center finite, max_distance >= 0.
struct QueryNearest {
    float center[3] = {0.0f, 0.0f, 0.0f};                        ///< Finite.
    uint32_t k = 1;                                              ///< How many to find; >= 1.
    float max_distance = std::numeric_limits<float>::infinity(); ///< >= 0; +inf: no limit.
};

/// One nearest-neighbour result: an index and its squared distance as the
/// grid kind's distance test computes it in float.
struct NearestHit {
    uint32_t index = kNoIndex;     ///< Particle or object index.
    float distance_squared = 0.0f; ///< Squared distance from the center, as the grid kind computes it.
};
static_assert(sizeof(NearestHit) == 8, "NearestHit is an index and a float");

/// One ray hit (box grids): the object and its entry parameter t (0 when the
/// ray starts inside).
struct RayHit {
    uint32_t index = kNoIndex; ///< Object index; kNoIndex when the ray hit nothing.
    float t = 0.0f;            ///< Entry parameter: the hit point is origin + t * direction.
};

/// Visitor form of a set query: visit(context, index) is called once per
/// result in the query's documented order, on the calling thread; return
/// false to stop the query.
struct QueryVisitor {
    bool (*visit)(void* context, uint32_t index) = nullptr; ///< Required; returns false to stop.
    void* context = nullptr;                                ///< Passed back to visit unchanged.
};

/// Visitor form of a k-nearest query: visit(context, hit) is called once per
/// result, nearest first, with the hit the buffer form writes at that
/// position; return false to stop the query.
struct NearestVisitor {
    bool (*visit)(void* context, const NearestHit& hit) = nullptr; ///< Required; returns false to stop.
    void* context = nullptr;                                       ///< Passed back to visit unchanged.
};

/// Visitor form of a ray query (box grids): visit(context, hit) is called
/// once per hit in ascending (t, index) order, with the hit the buffer form
/// writes at that position; return false to stop the query.
struct RayVisitor {
    bool (*visit)(void* context, const RayHit& hit) = nullptr; ///< Required; returns false to stop.
    void* context = nullptr;                                   ///< Passed back to visit unchanged.
};

/// Custom filter for pair finding: accept(context, a, b) decides whether a
/// candidate pair (one that already passed the distance or overlap test and,
/// for box grids, the layer rule) is reported, with a and b as they would be
/// written. It runs on the backend's worker threads, concurrently and in any
/// order, and may be called more than once for a pair (when a buffer
/// overflows, part of the search is repeated): it must be thread-safe and
/// give the same answer for the same pair, so the output stays deterministic.
/// Counts and capacities (max_pairs) apply to accepted pairs only.
struct PairFilter {
    bool (*accept)(void* context, uint32_t a, uint32_t b) = nullptr; ///< Null: every pair is accepted.
    void* context = nullptr;                                         ///< Passed back to accept unchanged.
};

} // namespace hashgrid

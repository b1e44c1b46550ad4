// SPDX-License-Identifier: MIT
/// @file
/// Box queries that answer with handles: every query of box_queries.h on a
/// grid rebuilt from an ObjectStore (BoxGrid::rebuild(store, backend)), with
/// the store in front, writing ObjectHandles (or user values) instead of
/// dense indices.
///
///     hashgrid::BoxQueryGrid g = hashgrid::prepare_box_queries(grid.view(), backend);
///     hashgrid::ObjectHandle near[64];
///     hashgrid::QueryResult r = hashgrid::query_radius(store, g, sphere, hashgrid::kAllLayers, near, 64);
///     hashgrid::ObjectRayHit hit;
///     r = hashgrid::query_ray_first(store, g, ray, hashgrid::kAllLayers, &hit);   // hit.handle, hit.t
///
/// Same answers: each call is the index query of box_queries.h (shapes, layer
/// mask, buffer, visitor and batch forms, query_types.h's contracts) with each
/// dense index i written as store.handle_at(i) (or store.user_values()[i]):
/// the same order, total, written, offsets, status and layout as the index
/// form on the same frame. ObjectRayHit {handle, t} and ObjectNearestHit
/// {handle, distance_squared} carry the index form's t and distance_squared
/// bit for bit, in its (t, index) and (distance_squared, index) order.
///
/// Checked once per call, in every build, before anything is read or written
/// (outputs untouched on failure), in this order: invalid_argument when the
/// store was never initialised; not_built when the view holds no frame;
/// invalid_argument when the frame was not rebuilt from this store
/// (view.source_store != &store: from BoxSpans, another store's, a
/// BoxQueryGrid not prepared); stale_view when store.layout_generation() !=
/// view.source_layout (an add, remove, clear or init since the rebuild:
/// rebuild, prepare and query again); then the index form's own checks and
/// statuses. move(), set_layers() and set_user_value() keep the layout
/// (results describe the boxes of the rebuild; user values are the current
/// ones). A visit function (HandleVisitor, ObjectRayVisitor,
/// ObjectNearestVisitor) runs on the calling thread while the query runs and
/// must not add or remove objects. Nothing allocates; outputs are the same on
/// every thread count and platform. Cost: docs/user-guide.md, "Objects,
/// handles and dense indices".
#pragma once

#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"
#include "hashgrid/query_types.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>

namespace hashgrid {

/// Ray and nearest buffer forms with at most this capacity run their index
/// query once, into a stack buffer of this many hits (the cost:
/// docs/user-guide.md, "Objects, handles and dense indices").
inline constexpr uint64_t kStoreQueryRun = 64;

/// One ray hit of a store-fed query: RayHit with the object's handle in place
/// of its dense index. A ray that hit nothing (query_ray_first) has the
/// invalid default handle, which no store accepts.
struct ObjectRayHit {
    ObjectHandle handle; ///< The object hit; ObjectHandle{} when nothing was hit.
    float t = 0.0f;      ///< Entry parameter: the hit point is origin + t * direction.
};

/// One nearest result of a store-fed query: NearestHit with the object's
/// handle in place of its dense index.
struct ObjectNearestHit {
    ObjectHandle handle;           ///< The object.
    float distance_squared = 0.0f; ///< point_box_distance2 from the center, as the index form computes it.
};

/// Visitor form of a store-fed set query: visit(context, handle) once per
/// result in the index form's order; return false to stop the query.
struct HandleVisitor {
    bool (*visit)(void* context, ObjectHandle handle) = nullptr; ///< Required; returns false to stop.
    void* context = nullptr;                                     ///< Passed back to visit unchanged.
};

/// Visitor form of a store-fed ray query: each hit in (t, dense index) order.
struct ObjectRayVisitor {
    bool (*visit)(void* context, const ObjectRayHit& hit) = nullptr; ///< Required; returns false to stop.
    void* context = nullptr;                                         ///< Passed back to visit unchanged.
};

/// Visitor form of a store-fed nearest query: each hit, nearest first.
struct ObjectNearestVisitor {
    bool (*visit)(void* context, const ObjectNearestHit& hit) = nullptr; ///< Required; returns false to stop.
    void* context = nullptr;                                             ///< Passed back to visit unchanged.
};

/// @name Set queries
/// query_point, query_box, query_radius and query_frustum of box_queries.h,
/// writing handles, user values, or visiting handles.
/// @{
[[nodiscard]] QueryResult query_point(const ObjectStore& store, const BoxQueryGrid& grid, const QueryPoint& point,
                                      uint32_t layer_mask, ObjectHandle* out, uint64_t capacity);
[[nodiscard]] QueryResult query_point(const ObjectStore& store, const BoxQueryGrid& grid, const QueryPoint& point,
                                      uint32_t layer_mask, uint64_t* user_values, uint64_t capacity);
[[nodiscard]] QueryResult query_point(const ObjectStore& store, const BoxQueryGrid& grid, const QueryPoint& point,
                                      uint32_t layer_mask, HandleVisitor visitor);

[[nodiscard]] QueryResult query_box(const ObjectStore& store, const BoxQueryGrid& grid, const QueryBox& box,
                                    uint32_t layer_mask, ObjectHandle* out, uint64_t capacity);
[[nodiscard]] QueryResult query_box(const ObjectStore& store, const BoxQueryGrid& grid, const QueryBox& box,
                                    uint32_t layer_mask, uint64_t* user_values, uint64_t capacity);
[[nodiscard]] QueryResult query_box(const ObjectStore& store, const BoxQueryGrid& grid, const QueryBox& box,
                                    uint32_t layer_mask, HandleVisitor visitor);

[[nodiscard]] QueryResult query_radius(const ObjectStore& store, const BoxQueryGrid& grid, const QuerySphere& sphere,
                                       uint32_t layer_mask, ObjectHandle* out, uint64_t capacity);
[[nodiscard]] QueryResult query_radius(const ObjectStore& store, const BoxQueryGrid& grid, const QuerySphere& sphere,
                                       uint32_t layer_mask, uint64_t* user_values, uint64_t capacity);
[[nodiscard]] QueryResult query_radius(const ObjectStore& store, const BoxQueryGrid& grid, const QuerySphere& sphere,
                                       uint32_t layer_mask, HandleVisitor visitor);

[[nodiscard]] QueryResult query_frustum(const ObjectStore& store, const BoxQueryGrid& grid, const Frustum& frustum,
                                        uint32_t layer_mask, ObjectHandle* out, uint64_t capacity);
[[nodiscard]] QueryResult query_frustum(const ObjectStore& store, const BoxQueryGrid& grid, const Frustum& frustum,
                                        uint32_t layer_mask, uint64_t* user_values, uint64_t capacity);
[[nodiscard]] QueryResult query_frustum(const ObjectStore& store, const BoxQueryGrid& grid, const Frustum& frustum,
                                        uint32_t layer_mask, HandleVisitor visitor);

/// Objects that may collide with the object named by `object` (a live handle
/// of the store: invalid_handle otherwise, after the checks above): the index
/// form with its dense index.
[[nodiscard]] QueryResult query_potential_collisions(const ObjectStore& store, const BoxQueryGrid& grid,
                                                     ObjectHandle object, ObjectHandle* out, uint64_t capacity);
[[nodiscard]] QueryResult query_potential_collisions(const ObjectStore& store, const BoxQueryGrid& grid,
                                                     ObjectHandle object, uint64_t* user_values, uint64_t capacity);
[[nodiscard]] QueryResult query_potential_collisions(const ObjectStore& store, const BoxQueryGrid& grid,
                                                     ObjectHandle object, HandleVisitor visitor);
/// @}

/// @name Ray and nearest queries
/// query_ray, query_ray_first and query_nearest of box_queries.h with handle hits.
/// @{
[[nodiscard]] QueryResult query_ray(const ObjectStore& store, const BoxQueryGrid& grid, const Ray& ray,
                                    uint32_t layer_mask, ObjectRayHit* out, uint64_t capacity);
[[nodiscard]] QueryResult query_ray(const ObjectStore& store, const BoxQueryGrid& grid, const Ray& ray,
                                    uint32_t layer_mask, ObjectRayVisitor visitor);
/// The first hit: *hit is written when total is 1, and set to {ObjectHandle{}, 0}
/// when the ray hit nothing (total 0).
[[nodiscard]] QueryResult query_ray_first(const ObjectStore& store, const BoxQueryGrid& grid, const Ray& ray,
                                          uint32_t layer_mask, ObjectRayHit* hit);
[[nodiscard]] QueryResult query_nearest(const ObjectStore& store, const BoxQueryGrid& grid, const QueryNearest& query,
                                        uint32_t layer_mask, ObjectNearestHit* out, uint64_t capacity);
[[nodiscard]] QueryResult query_nearest(const ObjectStore& store, const BoxQueryGrid& grid, const QueryNearest& query,
                                        uint32_t layer_mask, ObjectNearestVisitor visitor);
/// @}

/// @name Batches
/// The index batches of box_queries.h (batch contract of query_types.h:
/// offsets identical to the index batch's, out its output mapped), checked
/// once for the whole batch. No QueryStats and no trace phase: run the
/// index batch for those.
/// @{
[[nodiscard]] QueryResult query_point_batch(const ObjectStore& store, const BoxQueryGrid& grid,
                                            const QueryPoint* points, uint32_t count, uint32_t layer_mask,
                                            uint64_t* offsets, uint64_t offsets_capacity, ObjectHandle* out,
                                            uint64_t capacity, const ThreadBackend& backend);
[[nodiscard]] QueryResult query_point_batch(const ObjectStore& store, const BoxQueryGrid& grid,
                                            const QueryPoint* points, uint32_t count, uint32_t layer_mask,
                                            uint64_t* offsets, uint64_t offsets_capacity, uint64_t* user_values,
                                            uint64_t capacity, const ThreadBackend& backend);
[[nodiscard]] QueryResult query_box_batch(const ObjectStore& store, const BoxQueryGrid& grid, const QueryBox* boxes,
                                          uint32_t count, uint32_t layer_mask, uint64_t* offsets,
                                          uint64_t offsets_capacity, ObjectHandle* out, uint64_t capacity,
                                          const ThreadBackend& backend);
[[nodiscard]] QueryResult query_box_batch(const ObjectStore& store, const BoxQueryGrid& grid, const QueryBox* boxes,
                                          uint32_t count, uint32_t layer_mask, uint64_t* offsets,
                                          uint64_t offsets_capacity, uint64_t* user_values, uint64_t capacity,
                                          const ThreadBackend& backend);
[[nodiscard]] QueryResult query_radius_batch(const ObjectStore& store, const BoxQueryGrid& grid,
                                             const QuerySphere* spheres, uint32_t count, uint32_t layer_mask,
                                             uint64_t* offsets, uint64_t offsets_capacity, ObjectHandle* out,
                                             uint64_t capacity, const ThreadBackend& backend);
[[nodiscard]] QueryResult query_radius_batch(const ObjectStore& store, const BoxQueryGrid& grid,
                                             const QuerySphere* spheres, uint32_t count, uint32_t layer_mask,
                                             uint64_t* offsets, uint64_t offsets_capacity, uint64_t* user_values,
                                             uint64_t capacity, const ThreadBackend& backend);
[[nodiscard]] QueryResult query_frustum_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Frustum* frusta,
                                              uint32_t count, uint32_t layer_mask, uint64_t* offsets,
                                              uint64_t offsets_capacity, ObjectHandle* out, uint64_t capacity,
                                              const ThreadBackend& backend);
[[nodiscard]] QueryResult query_frustum_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Frustum* frusta,
                                              uint32_t count, uint32_t layer_mask, uint64_t* offsets,
                                              uint64_t offsets_capacity, uint64_t* user_values, uint64_t capacity,
                                              const ThreadBackend& backend);
[[nodiscard]] QueryResult query_ray_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Ray* rays,
                                          uint32_t count, uint32_t layer_mask, uint64_t* offsets,
                                          uint64_t offsets_capacity, ObjectRayHit* out, uint64_t capacity,
                                          const ThreadBackend& backend);
[[nodiscard]] QueryResult query_nearest_batch(const ObjectStore& store, const BoxQueryGrid& grid,
                                              const QueryNearest* queries, uint32_t count, uint32_t layer_mask,
                                              uint64_t* offsets, uint64_t offsets_capacity, ObjectNearestHit* out,
                                              uint64_t capacity, const ThreadBackend& backend);
/// First hit per ray: hits[q] (ObjectHandle{} when nothing is hit); total =
/// rays that hit something, written = count; an invalid ray writes nothing.
[[nodiscard]] QueryResult query_ray_first_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Ray* rays,
                                                uint32_t count, uint32_t layer_mask, ObjectRayHit* hits,
                                                const ThreadBackend& backend);
/// @}

} // namespace hashgrid

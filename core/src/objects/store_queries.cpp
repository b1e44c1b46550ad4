// SPDX-License-Identifier: MIT
// Store-fed box queries (store_queries.h): every query of box_queries.h with
// dense indices mapped to handles (or user values) as they are written.
//
// Nothing here walks cells. Each call checks the store against the frame
// once, then runs the index query of box_queries.h into an adapter:
//
// - set queries: the index visitor form, with a visit function that writes
//   the mapped result while there is room and counts every result, so the
//   buffer gets the index buffer form's prefix and the result its total;
// - ray and nearest queries: the index buffer form into a stack buffer of
//   kStoreQueryRun hits (exact total, the first hits), mapped into the
//   caller's buffer; when more hits fit the caller's buffer than the stack
//   one, the index visitor form (the same hits in the same order) writes
//   them all, mapped, from the first;
// - batches: detail::run_query_batch over the single forms above, so offsets,
//   overflow and invalid queries are the index batches' own.
#include "common/block_layout.h"
#include "query/box_query_batch.h"
#include "query/box_query_internal.h"

#include "hashgrid/store_queries.h"

#include <algorithm>
#include <cstdint>

namespace hashgrid {
namespace {

using box_query::batch_total;
using box_query::query_finish;
using box_query::stamped;
using detail::make_status;

/// The store's checks of a frame (store_queries.h), in order.
Status store_status(const ObjectStore& store, const BoxGridView& frame) {
    if (!store.initialized())
        return make_status(StatusCode::invalid_argument, "store query: the store was never initialised");
    if (!frame.built) return make_status(StatusCode::not_built, "store query: the view holds no frame");
    if (frame.source_store != &store)
        return make_status(StatusCode::invalid_argument,
                           "store query: the frame was not rebuilt from this store (BoxGrid::rebuild(store, "
                           "backend), then prepare_box_queries)");
    if (frame.source_layout != store.layout_generation())
        return make_status(StatusCode::stale_view,
                           "store query: objects were added, removed or cleared since the grid was rebuilt: "
                           "rebuild, prepare and query again");
    return {};
}

// The store's checks, then what the call needs of its own arguments; returns
// the refusal (unstamped: every public call stamps its result).
#define HASHGRID_REQUIRE_STORE(store, grid)                                                                            \
    do {                                                                                                               \
        const Status store_check = store_status(store, (grid).view);                                                   \
        if (!store_check.ok()) {                                                                                       \
            QueryResult store_refusal;                                                                                 \
            store_refusal.status = store_check;                                                                        \
            return store_refusal;                                                                                      \
        }                                                                                                              \
    } while (0)

// ---------------------------------------------------------------------------
// Mapping one dense index.

void put(const ObjectStore& store, uint32_t index, ObjectHandle& out) { out = store.handle_at(index); }
void put(const ObjectStore& store, uint32_t index, uint64_t& out) { out = store.user_values()[index]; }

ObjectRayHit object_hit(const ObjectStore& store, const RayHit& hit) {
    ObjectRayHit h;
    h.handle = store.handle_at(hit.index);
    h.t = hit.t;
    return h;
}
ObjectNearestHit object_hit(const ObjectStore& store, const NearestHit& hit) {
    ObjectNearestHit h;
    h.handle = store.handle_at(hit.index);
    h.distance_squared = hit.distance_squared;
    return h;
}

// ---------------------------------------------------------------------------
// Set queries. `query(visitor)` runs the index visitor form of the query.

/// An index visitor that writes each result mapped while there is room, and
/// counts them all: the buffer form's prefix and total.
template <typename Out>
struct SetWriter {
    const ObjectStore& store;
    Out* out;
    uint64_t capacity;
    uint64_t count = 0;

    static bool visit(void* context, uint32_t index) {
        SetWriter& w = *static_cast<SetWriter*>(context);
        if (w.count < w.capacity) put(w.store, index, w.out[w.count]);
        ++w.count;
        return true;
    }
};

/// The buffer form on a checked store: the index query's status, or the
/// buffer contract's result (query_types.h) for the results written.
template <typename Out, typename Query>
QueryResult set_into(const ObjectStore& store, Out* out, uint64_t capacity, const Query& query) {
    SetWriter<Out> writer{store, out, capacity};
    const QueryResult r = query(QueryVisitor{&SetWriter<Out>::visit, &writer});
    return r.status.ok() ? query_finish(writer.count, capacity) : r;
}

template <typename Out, typename Query>
QueryResult set_buffer(const ObjectStore& store, const BoxQueryGrid& grid, Out* out, uint64_t capacity,
                       const char* null_output, const Query& query) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_STORE(store, grid);
        HASHGRID_REQUIRE_ARGUMENT(out != nullptr || capacity == 0, null_output);
        return set_into(store, out, capacity, query);
    }());
}

/// Passes each result's handle on to the caller's visitor.
struct HandleRelay {
    const ObjectStore& store;
    HandleVisitor visitor;

    static bool visit(void* context, uint32_t index) {
        const HandleRelay& r = *static_cast<const HandleRelay*>(context);
        return r.visitor.visit(r.visitor.context, r.store.handle_at(index));
    }
};

template <typename Query>
QueryResult set_visit(const ObjectStore& store, const BoxQueryGrid& grid, HandleVisitor visitor,
                      const char* null_visitor, const Query& query) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_STORE(store, grid);
        HASHGRID_REQUIRE_ARGUMENT(visitor.visit != nullptr, null_visitor);
        HandleRelay relay{store, visitor};
        return query(QueryVisitor{&HandleRelay::visit, &relay});
    }());
}

/// A set-query batch: checked once, then each query q runs as query(q,
/// visitor) into its share of `out` (run_query_batch).
template <typename Query, typename Out, typename One>
QueryResult set_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Query* queries, uint32_t count,
                      uint64_t* offsets, uint64_t offsets_capacity, Out* out, uint64_t capacity,
                      const ThreadBackend& backend, const One& one) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_STORE(store, grid);
        HASHGRID_REQUIRE_BATCH(grid, queries, count);
        return detail::run_query_batch(
            count, offsets, offsets_capacity, out, capacity, backend, [&](uint32_t q, Out* o, uint64_t room) {
                return batch_total(set_into(store, o, room, [&](QueryVisitor v) { return one(queries[q], v); }));
            });
    }());
}

// ---------------------------------------------------------------------------
// Ray and nearest queries. `buffer(hits, capacity)` runs the index buffer
// form, `visit(function, context)` the index visitor form.

/// An index visitor that writes each hit mapped and stops when the buffer is full.
template <typename Hit, typename ObjectHit>
struct RankedWriter {
    const ObjectStore& store;
    ObjectHit* out;
    uint64_t capacity;
    uint64_t count = 0;

    static bool visit(void* context, const Hit& hit) {
        RankedWriter& w = *static_cast<RankedWriter*>(context);
        w.out[w.count++] = object_hit(w.store, hit);
        return w.count < w.capacity;
    }
};

/// The buffer form on a checked store (see the file comment).
template <typename Hit, typename ObjectHit, typename Buffer, typename Visit>
QueryResult ranked_into(const ObjectStore& store, ObjectHit* out, uint64_t capacity, const Buffer& buffer,
                        const Visit& visit) {
    Hit run[kStoreQueryRun];
    const uint64_t first = std::min(capacity, kStoreQueryRun);
    const QueryResult r = buffer(first != 0 ? run : nullptr, first);
    if (r.status.code != StatusCode::ok && r.status.code != StatusCode::output_too_small) return r;
    if (r.total <= first || capacity <= kStoreQueryRun) {
        for (uint64_t k = 0; k < r.written; ++k)
            out[k] = object_hit(store, run[k]);
        return query_finish(r.total, capacity);
    }
    // More hits than the stack buffer holds, and room for more: the visitor
    // form finds the same hits in the same order.
    RankedWriter<Hit, ObjectHit> writer{store, out, capacity};
    [[maybe_unused]] const QueryResult v = visit(&RankedWriter<Hit, ObjectHit>::visit, &writer);
    HASHGRID_ASSERT(v.status.ok() && writer.count == std::min(r.total, capacity),
                    "store query: the visitor form found other hits than the buffer form");
    return query_finish(r.total, capacity);
}

/// ranked_into for one query through `forms` (RayForms, NearestForms below):
/// the index query's buffer and visitor forms.
template <typename Hit, typename Query, typename ObjectHit, typename Forms>
QueryResult ranked_one(const ObjectStore& store, const Forms& forms, const Query& query, ObjectHit* out,
                       uint64_t capacity) {
    return ranked_into<Hit>(
        store, out, capacity, [&](Hit* hits, uint64_t n) { return forms.buffer(query, hits, n); },
        [&](bool (*function)(void*, const Hit&), void* context) { return forms.visit(query, function, context); });
}

template <typename Hit, typename Query, typename ObjectHit, typename Forms>
QueryResult ranked_buffer(const ObjectStore& store, const BoxQueryGrid& grid, const Forms& forms, const Query& query,
                          ObjectHit* out, uint64_t capacity, const char* null_output) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_STORE(store, grid);
        HASHGRID_REQUIRE_ARGUMENT(out != nullptr || capacity == 0, null_output);
        return ranked_one<Hit>(store, forms, query, out, capacity);
    }());
}

/// Passes each hit, mapped, on to the caller's visitor.
template <typename Hit, typename ObjectVisitor>
struct RankedRelay {
    const ObjectStore& store;
    ObjectVisitor visitor;

    static bool visit(void* context, const Hit& hit) {
        const RankedRelay& r = *static_cast<const RankedRelay*>(context);
        return r.visitor.visit(r.visitor.context, object_hit(r.store, hit));
    }
};

template <typename Hit, typename ObjectVisitor, typename Visit>
QueryResult ranked_visit(const ObjectStore& store, const BoxQueryGrid& grid, ObjectVisitor visitor,
                         const char* null_visitor, const Visit& visit) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_STORE(store, grid);
        HASHGRID_REQUIRE_ARGUMENT(visitor.visit != nullptr, null_visitor);
        RankedRelay<Hit, ObjectVisitor> relay{store, visitor};
        return visit(&RankedRelay<Hit, ObjectVisitor>::visit, &relay);
    }());
}

/// A ray or nearest batch: checked once, then query q runs as ranked_one.
template <typename Hit, typename Query, typename ObjectHit, typename Forms>
QueryResult ranked_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Query* queries, uint32_t count,
                         uint64_t* offsets, uint64_t offsets_capacity, ObjectHit* out, uint64_t capacity,
                         const ThreadBackend& backend, const Forms& forms) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_STORE(store, grid);
        HASHGRID_REQUIRE_BATCH(grid, queries, count);
        return detail::run_query_batch(count, offsets, offsets_capacity, out, capacity, backend,
                                       [&](uint32_t q, ObjectHit* o, uint64_t room) {
                                           return batch_total(ranked_one<Hit>(store, forms, queries[q], o, room));
                                       });
    }());
}

/// The index forms of query_ray, for ranked_into and ranked_batch.
struct RayForms {
    const BoxQueryGrid& grid;
    uint32_t layer_mask;
    QueryResult buffer(const Ray& ray, RayHit* hits, uint64_t n) const {
        return query_ray(grid, ray, layer_mask, hits, n);
    }
    QueryResult visit(const Ray& ray, bool (*function)(void*, const RayHit&), void* context) const {
        return query_ray(grid, ray, layer_mask, RayVisitor{function, context});
    }
};

/// The index forms of query_nearest, for ranked_into and ranked_batch.
struct NearestForms {
    const BoxQueryGrid& grid;
    uint32_t layer_mask;
    QueryResult buffer(const QueryNearest& query, NearestHit* hits, uint64_t n) const {
        return query_nearest(grid, query, layer_mask, hits, n);
    }
    QueryResult visit(const QueryNearest& query, bool (*function)(void*, const NearestHit&), void* context) const {
        return query_nearest(grid, query, layer_mask, NearestVisitor{function, context});
    }
};

/// query_ray_first_batch on a checked store: every ray checked before
/// anything is written, then each ray's first hit mapped into hits[q].
QueryResult ray_first_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Ray* rays, uint32_t count,
                            uint32_t layer_mask, ObjectRayHit* hits, const ThreadBackend& backend) {
    HASHGRID_REQUIRE_STORE(store, grid);
    HASHGRID_REQUIRE_BATCH(grid, rays, count);
    HASHGRID_REQUIRE_ARGUMENT(hits != nullptr || count == 0, "query_ray_first_batch: null hits");
    QueryResult result;
    result.status = box_query::check_ray_batch(rays, count, grid.view.config->dimensions);
    if (!result.status.ok()) return result;
    parallel_chunks(backend, count, detail::query_batch_grain(count), [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t q = begin; q < end; ++q) {
            RayHit hit;
            const QueryResult r = query_ray_first(grid, rays[q], layer_mask, &hit);
            HASHGRID_ASSERT(r.status.ok(), "query_ray_first_batch: a checked ray was refused");
            hits[q] = r.total != 0 ? object_hit(store, hit) : ObjectRayHit{};
        }
    });
    for (uint32_t q = 0; q < count; ++q)
        result.total += hits[q].handle.generation != 0 ? 1u : 0u; // issued handles never have generation 0
    result.written = count;
    return result;
}

} // namespace

// ---------------------------------------------------------------------------
// Set queries.

#define HASHGRID_STORE_SET_QUERY(name, Shape, shape)                                                                   \
    QueryResult name(const ObjectStore& store, const BoxQueryGrid& grid, const Shape& shape, uint32_t layer_mask,      \
                     ObjectHandle* out, uint64_t capacity) {                                                           \
        return set_buffer(store, grid, out, capacity, #name ": null output with capacity > 0",                         \
                          [&](QueryVisitor v) { return name(grid, shape, layer_mask, v); });                           \
    }                                                                                                                  \
    QueryResult name(const ObjectStore& store, const BoxQueryGrid& grid, const Shape& shape, uint32_t layer_mask,      \
                     uint64_t* user_values, uint64_t capacity) {                                                       \
        return set_buffer(store, grid, user_values, capacity, #name ": null output with capacity > 0",                 \
                          [&](QueryVisitor v) { return name(grid, shape, layer_mask, v); });                           \
    }                                                                                                                  \
    QueryResult name(const ObjectStore& store, const BoxQueryGrid& grid, const Shape& shape, uint32_t layer_mask,      \
                     HandleVisitor visitor) {                                                                          \
        return set_visit(store, grid, visitor, #name ": null visitor",                                                 \
                         [&](QueryVisitor v) { return name(grid, shape, layer_mask, v); });                            \
    }

HASHGRID_STORE_SET_QUERY(query_point, QueryPoint, point)
HASHGRID_STORE_SET_QUERY(query_box, QueryBox, box)
HASHGRID_STORE_SET_QUERY(query_radius, QuerySphere, sphere)
HASHGRID_STORE_SET_QUERY(query_frustum, Frustum, frustum)

#undef HASHGRID_STORE_SET_QUERY

namespace {

/// The dense index of a live handle for query_potential_collisions: the
/// frame is the store's current layout (checked before), so it indexes the
/// frame's objects.
template <typename Query>
QueryResult with_object(const ObjectStore& store, ObjectHandle object, const Query& query) {
    if (!store.contains(object)) {
        QueryResult r;
        r.status = make_status(StatusCode::invalid_handle,
                               "query_potential_collisions: the object's handle is stale, never issued or "
                               "from another store");
        return r;
    }
    return query(store.dense_index(object));
}

} // namespace

QueryResult query_potential_collisions(const ObjectStore& store, const BoxQueryGrid& grid, ObjectHandle object,
                                       ObjectHandle* out, uint64_t capacity) {
    return set_buffer(
        store, grid, out, capacity, "query_potential_collisions: null output with capacity > 0", [&](QueryVisitor v) {
            return with_object(store, object,
                               [&](uint32_t dense) { return query_potential_collisions(grid, dense, v); });
        });
}

QueryResult query_potential_collisions(const ObjectStore& store, const BoxQueryGrid& grid, ObjectHandle object,
                                       uint64_t* user_values, uint64_t capacity) {
    return set_buffer(store, grid, user_values, capacity, "query_potential_collisions: null output with capacity > 0",
                      [&](QueryVisitor v) {
                          return with_object(store, object, [&](uint32_t dense) {
                              return query_potential_collisions(grid, dense, v);
                          });
                      });
}

QueryResult query_potential_collisions(const ObjectStore& store, const BoxQueryGrid& grid, ObjectHandle object,
                                       HandleVisitor visitor) {
    return set_visit(store, grid, visitor, "query_potential_collisions: null visitor", [&](QueryVisitor v) {
        return with_object(store, object, [&](uint32_t dense) { return query_potential_collisions(grid, dense, v); });
    });
}

// ---------------------------------------------------------------------------
// Ray and nearest queries.

QueryResult query_ray(const ObjectStore& store, const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask,
                      ObjectRayHit* out, uint64_t capacity) {
    return ranked_buffer<RayHit>(store, grid, RayForms{grid, layer_mask}, ray, out, capacity,
                                 "query_ray: null output with capacity > 0");
}

QueryResult query_ray(const ObjectStore& store, const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask,
                      ObjectRayVisitor visitor) {
    return ranked_visit<RayHit>(store, grid, visitor, "query_ray: null visit function",
                                [&](bool (*function)(void*, const RayHit&), void* context) {
                                    return query_ray(grid, ray, layer_mask, RayVisitor{function, context});
                                });
}

QueryResult query_ray_first(const ObjectStore& store, const BoxQueryGrid& grid, const Ray& ray, uint32_t layer_mask,
                            ObjectRayHit* hit) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_STORE(store, grid);
        HASHGRID_REQUIRE_ARGUMENT(hit != nullptr, "query_ray_first: null output");
        RayHit first;
        const QueryResult r = query_ray_first(grid, ray, layer_mask, &first);
        if (r.status.ok()) *hit = r.total != 0 ? object_hit(store, first) : ObjectRayHit{};
        return r;
    }());
}

QueryResult query_nearest(const ObjectStore& store, const BoxQueryGrid& grid, const QueryNearest& query,
                          uint32_t layer_mask, ObjectNearestHit* out, uint64_t capacity) {
    return ranked_buffer<NearestHit>(store, grid, NearestForms{grid, layer_mask}, query, out, capacity,
                                     "query_nearest: null output with capacity > 0");
}

QueryResult query_nearest(const ObjectStore& store, const BoxQueryGrid& grid, const QueryNearest& query,
                          uint32_t layer_mask, ObjectNearestVisitor visitor) {
    return ranked_visit<NearestHit>(
        store, grid, visitor, "query_nearest: null visit function",
        [&](bool (*function)(void*, const NearestHit&), void* context) {
            return query_nearest(grid, query, layer_mask, NearestVisitor{function, context});
        });
}

// ---------------------------------------------------------------------------
// Batches.

#define HASHGRID_STORE_SET_BATCH(name, single, Shape)                                                                  \
    QueryResult name(const ObjectStore& store, const BoxQueryGrid& grid, const Shape* queries, uint32_t count,         \
                     uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity, ObjectHandle* out,             \
                     uint64_t capacity, const ThreadBackend& backend) {                                                \
        return set_batch(store, grid, queries, count, offsets, offsets_capacity, out, capacity, backend,               \
                         [&](const Shape& s, QueryVisitor v) { return single(grid, s, layer_mask, v); });              \
    }                                                                                                                  \
    QueryResult name(const ObjectStore& store, const BoxQueryGrid& grid, const Shape* queries, uint32_t count,         \
                     uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity, uint64_t* user_values,         \
                     uint64_t capacity, const ThreadBackend& backend) {                                                \
        return set_batch(store, grid, queries, count, offsets, offsets_capacity, user_values, capacity, backend,       \
                         [&](const Shape& s, QueryVisitor v) { return single(grid, s, layer_mask, v); });              \
    }

HASHGRID_STORE_SET_BATCH(query_point_batch, query_point, QueryPoint)
HASHGRID_STORE_SET_BATCH(query_box_batch, query_box, QueryBox)
HASHGRID_STORE_SET_BATCH(query_radius_batch, query_radius, QuerySphere)
HASHGRID_STORE_SET_BATCH(query_frustum_batch, query_frustum, Frustum)

#undef HASHGRID_STORE_SET_BATCH

QueryResult query_ray_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Ray* rays, uint32_t count,
                            uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity, ObjectRayHit* out,
                            uint64_t capacity, const ThreadBackend& backend) {
    return ranked_batch<RayHit>(store, grid, rays, count, offsets, offsets_capacity, out, capacity, backend,
                                RayForms{grid, layer_mask});
}

QueryResult query_nearest_batch(const ObjectStore& store, const BoxQueryGrid& grid, const QueryNearest* queries,
                                uint32_t count, uint32_t layer_mask, uint64_t* offsets, uint64_t offsets_capacity,
                                ObjectNearestHit* out, uint64_t capacity, const ThreadBackend& backend) {
    return ranked_batch<NearestHit>(store, grid, queries, count, offsets, offsets_capacity, out, capacity, backend,
                                    NearestForms{grid, layer_mask});
}

QueryResult query_ray_first_batch(const ObjectStore& store, const BoxQueryGrid& grid, const Ray* rays, uint32_t count,
                                  uint32_t layer_mask, ObjectRayHit* hits, const ThreadBackend& backend) {
    return stamped(grid, ray_first_batch(store, grid, rays, count, layer_mask, hits, backend));
}

} // namespace hashgrid

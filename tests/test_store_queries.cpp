// SPDX-License-Identifier: MIT
// Store-fed box queries (store_queries.h): every query kind, in its buffer,
// user-value, visitor and batch forms, answers what the index form of
// box_queries.h answers on the same frame, mapped through the checked
// ObjectStore::handles_at / user_values_at (the oracle): same status, total,
// written, needed, offsets and layout, the same handles in the same order,
// at every capacity (overflow included), on frames of a store churned with
// adds, removes, reused slots, moves and layer changes. A store changed by an
// add or remove since the rebuild is stale_view and nothing is written or
// visited; the other refusals keep the outputs untouched too.
#include <doctest/doctest.h>

#include "continue_on_assert.h"

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"
#include "hashgrid/store_queries.h"
#include "test_support.h"

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace hashgrid; // the names of the box queries and the store, both forms
using namespace hashgrid_test;

namespace {

const ObjectHandle kSentinel{77, 77};
constexpr uint64_t kSentinelValue = 0x5e5e5e5eu;

/// A churned scene: a store, the grid rebuilt from it and the prepared queries.
struct StoreScene {
    uint32_t dims;
    ObjectStoreConfig config;
    ObjectStore store;
    BoxGrid grid;
    BoxQueryGrid q;
    Rng rng;
    float extent;
    std::vector<uint32_t> first_generation; // per slot: the generation of its first object

    StoreScene(uint32_t d, uint32_t seed) : dims(d), rng(seed), extent(d == 2 ? 14.0f : 7.0f) {
        config.dimensions = d;
        config.max_objects = 400;
        config.handle_salt = 0x5eedu;
        first_generation.assign(config.max_objects, 0);
        REQUIRE(store.init_allocate(config).ok());
        hashgrid::BoxGridConfig gc = hashgrid::box_grid_config_for(config);
        gc.cell_size = 2.0f;
        gc.max_cell_entries = config.max_objects * 64;
        gc.max_pairs = 100000;
        REQUIRE(grid.init_allocate(gc).ok());
    }

    ObjectBox random_box(float size) {
        ObjectBox b;
        for (uint32_t a = 0; a < dims; ++a) {
            b.min[a] = rng.uniform(-extent, extent);
            b.max[a] = b.min[a] + rng.uniform(0.0f, size);
        }
        return b;
    }
    ObjectHandle random_live() { return store.handle_at(rng.below(store.size())); }
    /// Live objects in a slot an earlier object had.
    uint32_t reused_slots() const {
        uint32_t n = 0;
        for (uint32_t i = 0; i < store.size(); ++i) {
            const ObjectHandle h = store.handle_at(i);
            n += h.generation != first_generation[h.index] ? 1u : 0u;
        }
        return n;
    }

    /// A frame of changes: adds (some large), removes, moves and new layers.
    void churn(uint32_t ops) {
        for (uint32_t op = 0; op < ops; ++op) {
            const uint32_t kind = rng.below(100);
            if (kind < 45 || store.size() == 0) {
                const ObjectBox b = random_box(rng.below(30) == 0 ? 30.0f : 3.0f);
                const uint32_t category = 1u << rng.below(3);
                const uint32_t mask = rng.next_u32() & 7u;
                const hashgrid::ObjectAddResult r = store.add(b, category, mask, rng.next_u64());
                REQUIRE((r.status.ok() || r.status.code == StatusCode::object_capacity));
                if (r.status.ok() && first_generation[r.handle.index] == 0)
                    first_generation[r.handle.index] = r.handle.generation;
            } else if (kind < 70) {
                REQUIRE(store.remove(random_live()).ok());
            } else if (kind < 90) {
                REQUIRE(store.move(random_live(), random_box(3.0f)).ok());
            } else {
                REQUIRE(store.set_layers(random_live(), 1u << rng.below(3), rng.next_u32() & 7u).ok());
            }
        }
    }

    void rebuild(const ThreadBackend& backend) {
        REQUIRE(grid.rebuild(store, backend).ok());
        q = hashgrid::prepare_box_queries(grid.view(), backend);
    }

    float coordinate() { return rng.uniform(-extent - 2.0f, extent + 2.0f); }
    QueryPoint point() {
        QueryPoint p;
        for (uint32_t a = 0; a < dims; ++a)
            p.position[a] = coordinate();
        return p;
    }
    QueryBox box() {
        QueryBox b;
        for (uint32_t a = 0; a < dims; ++a) {
            b.min[a] = coordinate();
            b.max[a] = b.min[a] + rng.uniform(0.0f, extent);
        }
        return b;
    }
    QuerySphere sphere() {
        QuerySphere s;
        for (uint32_t a = 0; a < dims; ++a)
            s.center[a] = coordinate();
        s.radius = rng.uniform(0.0f, extent * 0.6f);
        return s;
    }
    /// A box's faces as planes plus one oblique plane.
    Frustum frustum() {
        const QueryBox b = box();
        Frustum f;
        for (uint32_t a = 0; a < dims; ++a) {
            f.planes[f.plane_count].normal[a] = 1.0f;
            f.planes[f.plane_count++].d = -b.min[a];
            f.planes[f.plane_count].normal[a] = -1.0f;
            f.planes[f.plane_count++].d = b.max[a];
        }
        for (uint32_t a = 0; a < dims; ++a)
            f.planes[f.plane_count].normal[a] = rng.uniform(-1.0f, 1.0f);
        f.planes[f.plane_count++].d = rng.uniform(0.0f, extent);
        return f;
    }
    /// Rays across the scene (many hits) and short segments.
    Ray ray() {
        Ray r;
        for (uint32_t a = 0; a < dims; ++a) {
            r.origin[a] = coordinate();
            r.direction[a] = rng.uniform(-1.0f, 1.0f);
        }
        r.origin[0] = -extent - 2.0f;
        r.direction[0] = 1.0f;
        r.max_t = rng.below(3) == 0 ? rng.uniform(0.0f, extent) : 4.0f * extent;
        return r;
    }
    QueryNearest nearest() {
        QueryNearest n;
        for (uint32_t a = 0; a < dims; ++a)
            n.center[a] = coordinate();
        n.k = rng.below(2) == 0 ? 1 + rng.below(8) : 60 + rng.below(140); // both sides of kStoreQueryRun
        if (rng.below(3) == 0) n.max_distance = rng.uniform(0.0f, extent);
        return n;
    }
};

void check_same_result(const QueryResult& got, const QueryResult& expected) {
    CHECK(got.status.code == expected.status.code);
    CHECK(got.status.needed == expected.status.needed);
    CHECK(got.status.index == expected.status.index);
    CHECK(got.status.count == expected.status.count);
    CHECK(got.total == expected.total);
    CHECK(got.written == expected.written);
    CHECK(got.layout == expected.layout);
}

/// The capacities every buffer form is run at for a query of `total` results.
std::vector<uint64_t> capacities(uint64_t total) {
    std::vector<uint64_t> c = {0, 1, total / 2, total, total + 3};
    if (total > 0) c.push_back(total - 1);
    if (total > 70) c.push_back(65); // the visitor path of ray and nearest with the buffer full early
    return c;
}

/// The index form's hits mapped through the checked handles_at: the oracle.
template <typename Hit>
std::vector<ObjectHandle> mapped_hits(const StoreScene& s, const QueryResult& r, const std::vector<Hit>& hits) {
    std::vector<uint32_t> indices;
    for (uint64_t k = 0; k < r.written; ++k)
        indices.push_back(hits[k].index);
    std::vector<ObjectHandle> handles(indices.size() + 1, kSentinel);
    REQUIRE(s.store.handles_at(s.grid.view(), r, indices.data(), handles.data()).ok());
    handles.pop_back();
    return handles;
}

/// A set query (index(out, cap) and handle(out, cap), user(out, cap),
/// visit(HandleVisitor) forms): equal at every capacity, and the visitor
/// sees the same handles, also when it stops early.
template <typename Index, typename Handle, typename User, typename Visit>
void check_set_query(const StoreScene& s, const Index& index, const Handle& handle, const User& user,
                     const Visit& visit) {
    const QueryResult counted = index(nullptr, 0);
    REQUIRE((counted.status.ok() || counted.status.code == StatusCode::output_too_small));
    for (const uint64_t cap : capacities(counted.total)) {
        INFO("capacity ", cap);
        std::vector<uint32_t> idx(cap + 1, 0xdeadu);
        const QueryResult ri = index(idx.data(), cap);
        std::vector<ObjectHandle> expected(ri.written + 1, kSentinel);
        std::vector<uint64_t> expected_values(ri.written + 1, kSentinelValue);
        REQUIRE(s.store.handles_at(s.grid.view(), ri, idx.data(), expected.data()).ok());
        REQUIRE(s.store.user_values_at(s.grid.view(), ri, idx.data(), expected_values.data()).ok());
        std::vector<ObjectHandle> got(cap + 1, kSentinel);
        std::vector<uint64_t> values(cap + 1, kSentinelValue);
        check_same_result(handle(got.data(), cap), ri);
        check_same_result(user(values.data(), cap), ri);
        got.resize(static_cast<size_t>(ri.written) + 1);
        values.resize(static_cast<size_t>(ri.written) + 1);
        CHECK(got == expected); // the slot past the prefix untouched (kSentinel) included
        CHECK(values == expected_values);
    }
    std::vector<uint32_t> all(counted.total + 1);
    const QueryResult full = index(all.data(), counted.total);
    std::vector<ObjectHandle> expected(full.written);
    REQUIRE(s.store.handles_at(s.grid.view(), full, all.data(), expected.data()).ok());
    for (const uint64_t stop : {uint64_t{1}, full.total / 2, ~uint64_t{0}}) {
        struct Seen {
            std::vector<ObjectHandle> handles;
            uint64_t stop;
        } seen{{}, stop};
        const HandleVisitor v{[](void* c, ObjectHandle h) {
                                  Seen& s2 = *static_cast<Seen*>(c);
                                  s2.handles.push_back(h);
                                  return s2.handles.size() < s2.stop;
                              },
                              &seen};
        const QueryResult rv = visit(v);
        CHECK(rv.status.ok());
        CHECK(rv.layout == full.layout);
        const uint64_t calls = std::min<uint64_t>(full.total, std::max<uint64_t>(stop, 1));
        CHECK(rv.total == calls);
        REQUIRE(seen.handles.size() == calls);
        CHECK(std::equal(seen.handles.begin(), seen.handles.end(), expected.begin()));
    }
}

/// A ray or nearest query (index(out, cap), handle(out, cap), visit(visitor)
/// forms): equal at every capacity, and the visitor sees the same hits.
template <typename Hit, typename ObjectHit, typename ObjectVisitor, typename Index, typename Handle, typename Visit,
          typename Key>
void check_ranked_query(const StoreScene& s, const Index& index, const Handle& handle, const Visit& visit,
                        const Key& key, uint64_t& long_runs) {
    const QueryResult counted = index(nullptr, 0);
    REQUIRE((counted.status.ok() || counted.status.code == StatusCode::output_too_small));
    for (const uint64_t cap : capacities(counted.total)) {
        INFO("capacity ", cap);
        std::vector<Hit> hits(cap);
        const QueryResult ri = index(hits.data(), cap);
        const std::vector<ObjectHandle> expected = mapped_hits(s, ri, hits);
        std::vector<ObjectHit> got(cap + 1);
        got[ri.written].handle = kSentinel;
        check_same_result(handle(got.data(), cap), ri);
        for (uint64_t k = 0; k < ri.written; ++k) {
            CHECK(got[k].handle == expected[k]);
            CHECK(key(got[k]) == key(hits[k])); // bit for bit: the same float
        }
        CHECK(got[ri.written].handle == kSentinel);
        if (ri.total > hashgrid::kStoreQueryRun && cap > hashgrid::kStoreQueryRun) ++long_runs;
    }
    std::vector<Hit> all(counted.total);
    const QueryResult full = index(all.data(), counted.total);
    const std::vector<ObjectHandle> expected = mapped_hits(s, full, all);
    struct Seen {
        std::vector<ObjectHit> hits;
        uint64_t stop;
    };
    for (const uint64_t stop : {uint64_t{1}, full.total / 2 + 1, ~uint64_t{0}}) {
        Seen seen{{}, stop};
        const ObjectVisitor v{[](void* c, const ObjectHit& h) {
                                  Seen& s2 = *static_cast<Seen*>(c);
                                  s2.hits.push_back(h);
                                  return s2.hits.size() < s2.stop;
                              },
                              &seen};
        const QueryResult rv = visit(v);
        CHECK(rv.status.ok());
        CHECK(rv.layout == full.layout);
        const uint64_t calls = std::min<uint64_t>(full.total, stop);
        CHECK(rv.total == calls);
        REQUIRE(seen.hits.size() == calls);
        for (uint64_t k = 0; k < calls; ++k) {
            CHECK(seen.hits[k].handle == expected[k]);
            CHECK(key(seen.hits[k]) == key(all[k]));
        }
    }
}

/// The batch hit `got` is the index batch's `hit` with `handle` in place of its index.
bool same_hit(ObjectHandle got, uint32_t, ObjectHandle handle) { return got == handle; }
bool same_hit(const ObjectRayHit& got, const RayHit& hit, ObjectHandle handle) {
    return got.handle == handle && got.t == hit.t;
}
bool same_hit(const ObjectNearestHit& got, const NearestHit& hit, ObjectHandle handle) {
    return got.handle == handle && got.distance_squared == hit.distance_squared;
}

/// A batch (index(offsets, out, cap) and handle(offsets, out, cap)): the same
/// result and offsets, out the index batch's mapped, at full and small capacities.
template <typename Hit, typename ObjectHit, typename Index, typename Handle, typename ToIndex>
void check_batch(const StoreScene& s, uint32_t count, const Index& index, const Handle& handle,
                 const ToIndex& to_index) {
    std::vector<uint64_t> counted_offsets(count + 1);
    const QueryResult counted = index(counted_offsets.data(), static_cast<Hit*>(nullptr), 0);
    REQUIRE((counted.status.ok() || counted.status.code == StatusCode::output_too_small));
    for (const uint64_t cap : {counted.total, counted.total / 3, counted.total + 5, uint64_t{0}}) {
        INFO("batch capacity ", cap);
        std::vector<uint64_t> offsets(count + 1, 0);
        std::vector<Hit> out(cap + 1);
        const QueryResult ri = index(offsets.data(), out.data(), cap);
        std::vector<uint32_t> indices;
        for (uint64_t k = 0; k < ri.written; ++k)
            indices.push_back(to_index(out[k]));
        std::vector<ObjectHandle> expected(indices.size());
        REQUIRE(s.store.handles_at(s.grid.view(), ri, indices.data(), expected.data()).ok());
        std::vector<uint64_t> got_offsets(count + 1, 1234);
        std::vector<ObjectHit> got(cap + 1);
        check_same_result(handle(got_offsets.data(), got.data(), cap), ri);
        CHECK(got_offsets == offsets);
        for (uint64_t k = 0; k < ri.written; ++k)
            CHECK(same_hit(got[k], out[k], expected[k]));
    }
}

} // namespace

// ---------------------------------------------------------------------------

TEST_CASE("store queries: every kind and form is the index form mapped through handles_at, after churn") {
    ParallelBackend parallel(4);
    // Not scaled: the coverage checks at the end (reused slots, long ranked
    // runs) need every round, at HASHGRID_TEST_SCALE below 1 too.
    const uint32_t rounds = 8;
    uint64_t long_runs = 0;
    uint64_t reused_slots = 0;
    uint64_t results = 0;
    for (uint32_t dims : {2u, 3u}) {
        INFO("dims ", dims);
        StoreScene s(dims, 0xC0FFEEu + dims);
        for (uint32_t round = 0; round < rounds; ++round) {
            INFO("round ", round);
            s.churn(round == 0 ? 300 : 120);
            s.rebuild(parallel.backend());
            reused_slots += s.reused_slots();
            const uint32_t mask = round % 2 == 0 ? hashgrid::kAllLayers : 1u + (round % 6);
            const BoxQueryGrid& q = s.q;
            const ObjectStore& st = s.store;
            for (uint32_t k = 0; k < 6; ++k) {
// The four forms of one set query, `args` being what follows the store and grid.
#define CHECK_SET_QUERY(name, ...)                                                                                     \
    check_set_query(                                                                                                   \
        s, [&](uint32_t* o, uint64_t c) { return name(q, __VA_ARGS__, o, c); },                                        \
        [&](ObjectHandle* o, uint64_t c) { return name(st, q, __VA_ARGS__, o, c); },                                   \
        [&](uint64_t* o, uint64_t c) { return name(st, q, __VA_ARGS__, o, c); },                                       \
        [&](HandleVisitor v) { return name(st, q, __VA_ARGS__, v); })
                const QueryPoint p = s.point();
                CHECK_SET_QUERY(query_point, p, mask);
                const QueryBox b = s.box();
                CHECK_SET_QUERY(query_box, b, mask);
                const QuerySphere sp = s.sphere();
                CHECK_SET_QUERY(query_radius, sp, mask);
                const Frustum f = s.frustum();
                CHECK_SET_QUERY(query_frustum, f, mask);
#undef CHECK_SET_QUERY
                const ObjectHandle h = s.random_live();
                const uint32_t dense = st.dense_index(h);
                check_set_query(
                    s, [&](uint32_t* o, uint64_t c) { return query_potential_collisions(q, dense, o, c); },
                    [&](ObjectHandle* o, uint64_t c) { return query_potential_collisions(st, q, h, o, c); },
                    [&](uint64_t* o, uint64_t c) { return query_potential_collisions(st, q, h, o, c); },
                    [&](HandleVisitor v) { return query_potential_collisions(st, q, h, v); });

                const Ray r = s.ray();
                check_ranked_query<RayHit, ObjectRayHit, ObjectRayVisitor>(
                    s, [&](RayHit* o, uint64_t c) { return query_ray(q, r, mask, o, c); },
                    [&](ObjectRayHit* o, uint64_t c) { return query_ray(st, q, r, mask, o, c); },
                    [&](ObjectRayVisitor v) { return query_ray(st, q, r, mask, v); },
                    [](const auto& hit) { return hit.t; }, long_runs);
                RayHit first_index;
                const QueryResult rf = query_ray_first(q, r, mask, &first_index);
                ObjectRayHit first{kSentinel, -1.0f};
                check_same_result(query_ray_first(st, q, r, mask, &first), rf);
                CHECK(first.handle == (rf.total != 0 ? st.handle_at(first_index.index) : ObjectHandle{}));
                CHECK(first.t == first_index.t);

                const QueryNearest n = s.nearest();
                check_ranked_query<NearestHit, ObjectNearestHit, ObjectNearestVisitor>(
                    s, [&](NearestHit* o, uint64_t c) { return query_nearest(q, n, mask, o, c); },
                    [&](ObjectNearestHit* o, uint64_t c) { return query_nearest(st, q, n, mask, o, c); },
                    [&](ObjectNearestVisitor v) { return query_nearest(st, q, n, mask, v); },
                    [](const auto& hit) { return hit.distance_squared; }, long_runs);
                const QueryResult counted = query_box(q, b, mask, nullptr, 0);
                results += counted.total;
            }
        }
    }
    INFO("results ", results, " reused slots ", reused_slots, " long ranked runs ", long_runs);
    CHECK(results > 300);
    CHECK(reused_slots > 50); // removed slots were reused: handles of later generations
    CHECK(long_runs > 10);    // the ray and nearest buffers past the stack run were exercised
}

TEST_CASE("store query batches: offsets, statuses and outputs are the index batches' mapped, on every backend") {
    ParallelBackend parallel(4);
    for (uint32_t dims : {2u, 3u}) {
        INFO("dims ", dims);
        StoreScene s(dims, 0xBA7Cu + dims);
        s.churn(400);
        s.churn(200);
        s.rebuild(parallel.backend());
        const uint32_t count = 150;
        std::vector<QueryPoint> points;
        std::vector<QueryBox> boxes;
        std::vector<QuerySphere> spheres;
        std::vector<Frustum> frusta;
        std::vector<Ray> rays;
        std::vector<QueryNearest> nearests;
        for (uint32_t k = 0; k < count; ++k) {
            points.push_back(s.point());
            boxes.push_back(s.box());
            spheres.push_back(s.sphere());
            frusta.push_back(s.frustum());
            rays.push_back(s.ray());
            nearests.push_back(s.nearest());
        }
        const BoxQueryGrid& q = s.q;
        const ObjectStore& st = s.store;
        const uint32_t mask = 3u;
        const hashgrid::ThreadBackend backends[2] = {hashgrid::serial_backend(), parallel.backend()};
        for (const hashgrid::ThreadBackend& backend : backends) {
            const uint64_t oc = count + 1;
            auto id = [](uint32_t i) { return i; };
            auto hit_index = [](const auto& h) { return h.index; };
// One set-query batch against the index batch.
#define CHECK_SET_BATCH(name, queries)                                                                                 \
    check_batch<uint32_t, ObjectHandle>(                                                                               \
        s, count,                                                                                                      \
        [&](uint64_t* off, uint32_t* o, uint64_t c) {                                                                  \
            return name(q, queries.data(), count, mask, off, oc, o, c, backend);                                       \
        },                                                                                                             \
        [&](uint64_t* off, ObjectHandle* o, uint64_t c) {                                                              \
            return name(st, q, queries.data(), count, mask, off, oc, o, c, backend);                                   \
        },                                                                                                             \
        id)
            CHECK_SET_BATCH(query_point_batch, points);
            CHECK_SET_BATCH(query_box_batch, boxes);
            CHECK_SET_BATCH(query_radius_batch, spheres);
            CHECK_SET_BATCH(query_frustum_batch, frusta);
#undef CHECK_SET_BATCH
            check_batch<RayHit, ObjectRayHit>(
                s, count,
                [&](uint64_t* off, RayHit* o, uint64_t c) {
                    return query_ray_batch(q, rays.data(), count, mask, off, oc, o, c, backend);
                },
                [&](uint64_t* off, ObjectRayHit* o, uint64_t c) {
                    return query_ray_batch(st, q, rays.data(), count, mask, off, oc, o, c, backend);
                },
                hit_index);
            check_batch<NearestHit, ObjectNearestHit>(
                s, count,
                [&](uint64_t* off, NearestHit* o, uint64_t c) {
                    return query_nearest_batch(q, nearests.data(), count, mask, off, oc, o, c, backend);
                },
                [&](uint64_t* off, ObjectNearestHit* o, uint64_t c) {
                    return query_nearest_batch(st, q, nearests.data(), count, mask, off, oc, o, c, backend);
                },
                hit_index);

            // User values: the batch's handles' values.
            std::vector<uint64_t> off(oc), off2(oc);
            const QueryResult n =
                query_radius_batch(q, spheres.data(), count, mask, off.data(), oc, nullptr, 0, backend);
            std::vector<uint32_t> idx(n.total);
            const QueryResult ri =
                query_radius_batch(q, spheres.data(), count, mask, off.data(), oc, idx.data(), idx.size(), backend);
            REQUIRE(ri.status.ok());
            std::vector<uint64_t> expected(ri.written), values(ri.written + 1, kSentinelValue);
            REQUIRE(st.user_values_at(s.grid.view(), ri, idx.data(), expected.data()).ok());
            check_same_result(query_radius_batch(st, q, spheres.data(), count, mask, off2.data(), oc, values.data(),
                                                 ri.written, backend),
                              ri);
            CHECK(off2 == off);
            CHECK(values.back() == kSentinelValue);
            values.pop_back();
            CHECK(values == expected);

            // First hit per ray.
            std::vector<RayHit> first(count);
            const QueryResult rf = query_ray_first_batch(q, rays.data(), count, mask, first.data(), backend);
            std::vector<ObjectRayHit> got(count);
            check_same_result(query_ray_first_batch(st, q, rays.data(), count, mask, got.data(), backend), rf);
            for (uint32_t k = 0; k < count; ++k) {
                CHECK(got[k].handle ==
                      (first[k].index != hashgrid::kNoIndex ? st.handle_at(first[k].index) : ObjectHandle{}));
                CHECK(got[k].t == first[k].t);
            }
            CHECK(rf.total > 0);
        }
    }
}

TEST_CASE("store queries: an add or remove without a rebuild is stale_view; nothing written or visited") {
    ParallelBackend parallel(2);
    StoreScene s(3, 0x57A1Eu);
    s.churn(200);
    s.rebuild(parallel.backend());
    const BoxQueryGrid q = s.q;
    const QueryBox everything{{-1e9f, -1e9f, -1e9f}, {1e9f, 1e9f, 1e9f}};
    const QuerySphere sphere{{0.0f, 0.0f, 0.0f}, 1e9f};
    const Ray ray = s.ray();
    QueryNearest nearest;
    nearest.k = 100;
    const Frustum frustum = s.frustum();
    const ObjectHandle object = s.random_live();
    bool visited = false;
    const HandleVisitor hv{[](void* c, ObjectHandle) { return *static_cast<bool*>(c) = true; }, &visited};
    const ObjectRayVisitor rv{[](void* c, const ObjectRayHit&) { return *static_cast<bool*>(c) = true; }, &visited};
    const ObjectNearestVisitor nv{[](void* c, const ObjectNearestHit&) { return *static_cast<bool*>(c) = true; },
                                  &visited};

    // Every call on `store` through `grid` answers `code`, writes and visits nothing.
    auto check_all = [&](const ObjectStore& store, const BoxQueryGrid& grid, StatusCode code) {
        INFO("expected ", hashgrid::to_string(code));
        const uint64_t cap = 300;
        std::vector<ObjectHandle> hs(cap, kSentinel);
        std::vector<uint64_t> vs(cap, kSentinelValue);
        std::vector<ObjectRayHit> rh(cap, ObjectRayHit{kSentinel, -1.0f});
        std::vector<ObjectNearestHit> nh(cap, ObjectNearestHit{kSentinel, -1.0f});
        std::vector<uint64_t> offsets(3, 1234);
        const uint32_t m = hashgrid::kAllLayers;
        const hashgrid::ThreadBackend b = parallel.backend();
        visited = false;
        CHECK(query_point(store, grid, QueryPoint{}, m, hs.data(), cap).status.code == code);
        CHECK(query_point(store, grid, QueryPoint{}, m, vs.data(), cap).status.code == code);
        CHECK(query_point(store, grid, QueryPoint{}, m, hv).status.code == code);
        CHECK(query_box(store, grid, everything, m, hs.data(), cap).status.code == code);
        CHECK(query_box(store, grid, everything, m, vs.data(), cap).status.code == code);
        CHECK(query_box(store, grid, everything, m, hv).status.code == code);
        CHECK(query_radius(store, grid, sphere, m, hs.data(), cap).status.code == code);
        CHECK(query_radius(store, grid, sphere, m, vs.data(), cap).status.code == code);
        CHECK(query_radius(store, grid, sphere, m, hv).status.code == code);
        CHECK(query_frustum(store, grid, frustum, m, hs.data(), cap).status.code == code);
        CHECK(query_frustum(store, grid, frustum, m, vs.data(), cap).status.code == code);
        CHECK(query_frustum(store, grid, frustum, m, hv).status.code == code);
        CHECK(query_potential_collisions(store, grid, object, hs.data(), cap).status.code == code);
        CHECK(query_potential_collisions(store, grid, object, vs.data(), cap).status.code == code);
        CHECK(query_potential_collisions(store, grid, object, hv).status.code == code);
        CHECK(query_ray(store, grid, ray, m, rh.data(), cap).status.code == code);
        CHECK(query_ray(store, grid, ray, m, rh.data(), 3).status.code == code);
        CHECK(query_ray(store, grid, ray, m, rv).status.code == code);
        CHECK(query_ray_first(store, grid, ray, m, rh.data()).status.code == code);
        CHECK(query_nearest(store, grid, nearest, m, nh.data(), cap).status.code == code);
        CHECK(query_nearest(store, grid, nearest, m, nh.data(), 3).status.code == code);
        CHECK(query_nearest(store, grid, nearest, m, nv).status.code == code);
        const QueryBox boxes[2] = {everything, everything};
        const QuerySphere spheres[2] = {sphere, sphere};
        const QueryPoint points[2] = {};
        const Frustum frusta[2] = {frustum, frustum};
        const Ray rays[2] = {ray, ray};
        const QueryNearest nearests[2] = {nearest, nearest};
        CHECK(query_point_batch(store, grid, points, 2, m, offsets.data(), 3, hs.data(), cap, b).status.code == code);
        CHECK(query_box_batch(store, grid, boxes, 2, m, offsets.data(), 3, hs.data(), cap, b).status.code == code);
        CHECK(query_box_batch(store, grid, boxes, 2, m, offsets.data(), 3, vs.data(), cap, b).status.code == code);
        CHECK(query_radius_batch(store, grid, spheres, 2, m, offsets.data(), 3, hs.data(), cap, b).status.code == code);
        CHECK(query_frustum_batch(store, grid, frusta, 2, m, offsets.data(), 3, hs.data(), cap, b).status.code == code);
        CHECK(query_ray_batch(store, grid, rays, 2, m, offsets.data(), 3, rh.data(), cap, b).status.code == code);
        CHECK(query_nearest_batch(store, grid, nearests, 2, m, offsets.data(), 3, nh.data(), cap, b).status.code ==
              code);
        CHECK(query_ray_first_batch(store, grid, rays, 2, m, rh.data(), b).status.code == code);
        CHECK(!visited);
        CHECK(std::all_of(hs.begin(), hs.end(), [](ObjectHandle h) { return h == kSentinel; }));
        CHECK(std::all_of(vs.begin(), vs.end(), [](uint64_t v) { return v == kSentinelValue; }));
        CHECK(std::all_of(rh.begin(), rh.end(), [](const ObjectRayHit& h) { return h.handle == kSentinel; }));
        CHECK(std::all_of(nh.begin(), nh.end(), [](const ObjectNearestHit& h) { return h.handle == kSentinel; }));
        CHECK(std::all_of(offsets.begin(), offsets.end(), [](uint64_t o) { return o == 1234; }));
    };

    SUBCASE("the frame answers while only moves, layers and user values changed") {
        REQUIRE(s.store.move(object, ObjectBox{}).ok());
        REQUIRE(s.store.set_layers(object, 1, 1).ok());
        REQUIRE(s.store.set_user_value(object, 5).ok());
        std::vector<ObjectHandle> hs(400);
        const QueryResult r = query_box(s.store, q, everything, hashgrid::kAllLayers, hs.data(), hs.size());
        CHECK(r.status.ok());
        CHECK(r.total == s.store.size());
        std::vector<uint64_t> vs(400);
        REQUIRE(query_box(s.store, q, everything, hashgrid::kAllLayers, vs.data(), vs.size()).status.ok());
        CHECK(vs[std::find(hs.begin(), hs.end(), object) - hs.begin()] == 5); // the current user value
    }
    SUBCASE("an add") {
        REQUIRE(s.store.add(ObjectBox{}, 1, 1, 9).status.ok());
        check_all(s.store, q, StatusCode::stale_view);
        s.rebuild(parallel.backend());
        std::vector<ObjectHandle> hs(400);
        CHECK(query_box(s.store, s.q, everything, hashgrid::kAllLayers, hs.data(), hs.size()).status.ok());
    }
    SUBCASE("a remove (the object itself: the handle is checked after the layout)") {
        REQUIRE(s.store.remove(object).ok());
        check_all(s.store, q, StatusCode::stale_view);
    }
    SUBCASE("a clear") {
        s.store.clear();
        check_all(s.store, q, StatusCode::stale_view);
    }
    SUBCASE("a BoxQueryGrid prepared before the grid's last rebuild (layout unchanged)") {
        s.rebuild(parallel.backend());
        ContinueOnAssert continue_on_assert;
        check_all(s.store, q, StatusCode::stale_view);
    }
    SUBCASE("another store, a store never initialised, a frame from BoxSpans, a grid never built") {
        ContinueOnAssert continue_on_assert;
        ObjectStore other;
        check_all(other, q, StatusCode::invalid_argument);
        REQUIRE(other.init_allocate(s.config).ok());
        check_all(other, q, StatusCode::invalid_argument);
        BoxGrid spans_grid;
        REQUIRE(spans_grid.init_allocate(s.grid.config()).ok());
        REQUIRE(spans_grid.rebuild(s.store.spans(), parallel.backend()).ok());
        check_all(s.store, hashgrid::prepare_box_queries(spans_grid.view(), parallel.backend()),
                  StatusCode::invalid_argument);
        BoxGrid never;
        REQUIRE(never.init_allocate(s.grid.config()).ok());
        check_all(s.store, hashgrid::prepare_box_queries(never.view(), parallel.backend()), StatusCode::not_built);
        check_all(s.store, BoxQueryGrid{}, StatusCode::invalid_argument);
    }
}

TEST_CASE("store queries: argument refusals are the index form's; a stale handle is invalid_handle") {
    ContinueOnAssert continue_on_assert;
    StoreScene s(2, 0xA4Cu);
    s.churn(100);
    s.rebuild(hashgrid::serial_backend());
    const ObjectStore& st = s.store;
    const BoxQueryGrid& q = s.q;
    const uint32_t m = hashgrid::kAllLayers;
    CHECK(query_box(st, q, QueryBox{}, m, static_cast<ObjectHandle*>(nullptr), 1).status.code ==
          StatusCode::invalid_argument);
    CHECK(query_point(st, q, QueryPoint{}, m, HandleVisitor{}).status.code == StatusCode::invalid_argument);
    CHECK(query_ray(st, q, Ray{}, m, ObjectRayVisitor{}).status.code == StatusCode::invalid_argument);
    CHECK(query_nearest(st, q, QueryNearest{}, m, ObjectNearestVisitor{}).status.code == StatusCode::invalid_argument);
    CHECK(query_ray_first(st, q, Ray{}, m, nullptr).status.code == StatusCode::invalid_argument);
    CHECK(query_nearest(st, q, QueryNearest{}, m, static_cast<ObjectNearestHit*>(nullptr), 2).status.code ==
          StatusCode::invalid_argument);

    // Counting with capacity 0 and a null buffer is the index form's count.
    const QueryBox all{{-100.0f, -100.0f, 0.0f}, {100.0f, 100.0f, 0.0f}};
    const QueryResult counted = query_box(q, all, m, nullptr, 0);
    const QueryResult handles = query_box(st, q, all, m, static_cast<ObjectHandle*>(nullptr), 0);
    check_same_result(handles, counted);
    CHECK(handles.status.code == StatusCode::output_too_small);
    CHECK(handles.total == st.size());

    // Invalid queries: invalid_query, batches with the index batch's index and count.
    QueryNearest bad;
    bad.k = 0;
    ObjectNearestHit nh[4] = {};
    check_same_result(query_nearest(st, q, bad, m, nh, 4), query_nearest(q, bad, m, nullptr, 0));
    Ray rays[5];
    for (Ray& r : rays)
        r.max_t = 1.0f;
    rays[1].max_t = -1.0f;
    rays[3].origin[0] = std::numeric_limits<float>::quiet_NaN();
    uint64_t off[6];
    ObjectRayHit rh[5] = {};
    RayHit index_hits[5];
    const QueryResult bad_index = query_ray_batch(q, rays, 5, m, off, 6, index_hits, 5, hashgrid::serial_backend());
    CHECK(bad_index.status.code == StatusCode::invalid_query);
    CHECK(bad_index.status.index == 1);
    CHECK(bad_index.status.count == 2);
    check_same_result(query_ray_batch(st, q, rays, 5, m, off, 6, rh, 5, hashgrid::serial_backend()), bad_index);
    const QueryResult bad_first = query_ray_first_batch(q, rays, 5, m, index_hits, hashgrid::serial_backend());
    ObjectRayHit untouched[5] = {
        {kSentinel, 1.0f}, {kSentinel, 1.0f}, {kSentinel, 1.0f}, {kSentinel, 1.0f}, {kSentinel, 1.0f}};
    check_same_result(query_ray_first_batch(st, q, rays, 5, m, untouched, hashgrid::serial_backend()), bad_first);
    for (const ObjectRayHit& h : untouched)
        CHECK(h.handle == kSentinel);
    // Offsets too short: the index batch's output_too_small.
    ObjectHandle hs[4];
    check_same_result(query_box_batch(st, q, &all, 1, m, off, 1, hs, 4, hashgrid::serial_backend()),
                      query_box_batch(q, &all, 1, m, off, 1, nullptr, 0, hashgrid::serial_backend()));

    // The potential collisions of a removed object (after a rebuild, so the frame is current).
    StoreScene& w = s;
    const ObjectHandle gone = w.random_live();
    REQUIRE(w.store.remove(gone).ok());
    w.rebuild(hashgrid::serial_backend());
    ObjectHandle out[4] = {kSentinel, kSentinel, kSentinel, kSentinel};
    CHECK(query_potential_collisions(w.store, w.q, gone, out, 4).status.code == StatusCode::invalid_handle);
    CHECK(query_potential_collisions(w.store, w.q, ObjectHandle{}, out, 4).status.code == StatusCode::invalid_handle);
    for (const ObjectHandle h : out)
        CHECK(h == kSentinel);
}

// An ObjectStore feeding a BoxGrid (objects.h, box_grid.h): configs kept in
// step (box_grid_config_for, BoxGrid::rebuild(store) refusing a store that
// does not fit), the store's layout generation, and the checked mapping of
// dense-index results (pairs, box queries) to handles and user values:
// hand-computed frames for every status, random churn frames against brute
// force over the live objects, and stale_view after an add or remove without
// a rebuild. Also the same mapping through a ProximityIndex.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "continue_on_assert.h"

#include "../core/src/objects_internal.h"
#include "hashgrid/assert.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"
#include "hashgrid/proximity_index.h"
#include "test_support.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace hashgrid_test;
using hashgrid::BoxGrid;
using hashgrid::BoxGridConfig;
using hashgrid::BoxGridView;
using hashgrid::ObjectBox;
using hashgrid::ObjectHandle;
using hashgrid::ObjectHandlePair;
using hashgrid::ObjectStore;
using hashgrid::ObjectStoreConfig;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::UserValuePair;

namespace {

using hashgrid_test::ContinueOnAssert;

ObjectStoreConfig store_config(uint32_t dims, uint32_t max_objects, uint32_t salt = 0) {
    ObjectStoreConfig c;
    c.dimensions = dims;
    c.max_objects = max_objects;
    c.handle_salt = salt;
    return c;
}

/// box_grid_config_for(store) plus the grid's own fields.
BoxGridConfig grid_config_for(const ObjectStoreConfig& store, float cell, uint32_t entries_per_object) {
    BoxGridConfig c = hashgrid::box_grid_config_for(store);
    c.cell_size = cell;
    c.max_cell_entries = store.max_objects * entries_per_object;
    c.max_pairs = uint64_t{store.max_objects} * store.max_objects / 2 + 16;
    return c;
}

ObjectBox box2(float x0, float y0, float x1, float y1) {
    ObjectBox b;
    b.min[0] = x0;
    b.min[1] = y0;
    b.max[0] = x1;
    b.max[1] = y1;
    return b;
}

ObjectBox box3(float x0, float y0, float z0, float x1, float y1, float z1) {
    ObjectBox b = box2(x0, y0, x1, y1);
    b.min[2] = z0;
    b.max[2] = z1;
    return b;
}

uint64_t handle_key(ObjectHandle h) { return (uint64_t{h.index} << 32) | h.generation; }

/// Unordered handle pair as (smaller key, larger key).
std::pair<uint64_t, uint64_t> key_pair(ObjectHandle a, ObjectHandle b) {
    const uint64_t ka = handle_key(a);
    const uint64_t kb = handle_key(b);
    return {std::min(ka, kb), std::max(ka, kb)};
}

std::vector<Pair> all_pairs(BoxGrid& grid, const hashgrid::ThreadBackend& backend) {
    std::vector<Pair> out(static_cast<size_t>(grid.config().max_pairs));
    const hashgrid::PairResult r = grid.find_pairs(out.data(), out.size(), backend);
    REQUIRE(r.status.ok());
    out.resize(static_cast<size_t>(r.written));
    return out;
}

/// Every resolution call through `frame` answers `code` and leaves its outputs untouched.
void check_all_calls(const ObjectStore& store, const BoxGridView& frame, StatusCode code) {
    const uint32_t indices[2] = {0, 0};
    const Pair pairs[1] = {{0, 0}};
    const ObjectHandle sentinel{77, 77};
    ObjectHandle h = sentinel;
    uint64_t v = 77;
    ObjectHandle hs[2] = {sentinel, sentinel};
    uint64_t vs[2] = {77, 77};
    ObjectHandlePair hp[1] = {{sentinel, sentinel}};
    UserValuePair vp[1] = {{77, 77}};
    CHECK(store.handle_at(frame, 0, h).code == code);
    CHECK(store.user_value_at(frame, 0, v).code == code);
    CHECK(store.handles_at(frame, indices, 2, hs).code == code);
    CHECK(store.user_values_at(frame, indices, 2, vs).code == code);
    CHECK(store.handles_at(frame, pairs, 1, hp).code == code);
    CHECK(store.user_values_at(frame, pairs, 1, vp).code == code);
    if (code == StatusCode::ok) return;
    CHECK(h == sentinel);
    CHECK(v == 77);
    CHECK((hs[0] == sentinel && hs[1] == sentinel));
    CHECK((vs[0] == 77 && vs[1] == 77));
    CHECK((hp[0].a == sentinel && hp[0].b == sentinel));
    CHECK((vp[0].a == 77 && vp[0].b == 77));
}

} // namespace

// ---------------------------------------------------------------------------

TEST_CASE("box_grid_config_for: the store's dimensions and max_objects, every other field default") {
    const ObjectStoreConfig sc = store_config(2, 50, 7);
    BoxGridConfig gc = hashgrid::box_grid_config_for(sc);
    const BoxGridConfig defaults;
    CHECK(gc.dimensions == 2);
    CHECK(gc.max_objects == 50);
    CHECK(gc.cell_size == defaults.cell_size);
    CHECK(gc.world == defaults.world);
    CHECK(gc.max_cell_entries == defaults.max_cell_entries);
    CHECK(gc.max_pairs == defaults.max_pairs);
    CHECK(gc.large_object_cells == defaults.large_object_cells);
    // The grid's own capacity is still to be chosen.
    CHECK(BoxGrid::validate(gc).code == StatusCode::invalid_config);
    CHECK(hashgrid::box_grid_config_for(store_config(3, 10)).dimensions == 3);

    gc.max_cell_entries = 200;
    gc.max_pairs = 100;
    BoxGrid grid;
    REQUIRE(grid.init_allocate(gc).ok());
    ObjectStore store;
    REQUIRE(store.init_allocate(sc).ok());
    REQUIRE(store.add(box2(0, 0, 1, 1), 1, 1, 10).status.ok());
    REQUIRE(store.add(box2(1, 1, 2, 2), 1, 1, 11).status.ok()); // touches the first at (1, 1)
    REQUIRE(grid.rebuild(store, hashgrid::serial_backend()).ok());
    CHECK(grid.object_count() == 2);
    const std::vector<Pair> pairs = all_pairs(grid, hashgrid::serial_backend());
    REQUIRE(pairs.size() == 1);
    CHECK((pairs[0].a == 0 && pairs[0].b == 1));
    const BoxGridView view = grid.view();
    CHECK(view.source_store == &store);
    CHECK(view.source_layout == store.layout_generation());
}

TEST_CASE("BoxGrid::rebuild(store): a store that does not fit the grid is invalid_config, the frame kept") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    BoxGridConfig gc = grid_config_for(store_config(3, 8), 1.0f, 8);
    BoxGrid grid;
    REQUIRE(grid.init_allocate(gc).ok());

    // A: a, b overlap; c is far away. One pair, (0, 1).
    ObjectStore a;
    REQUIRE(a.init_allocate(store_config(3, 8)).ok());
    const ObjectHandle ha = a.add(box3(0, 0, 0, 1, 1, 1), 1, 1, 10).handle;
    const ObjectHandle hb = a.add(box3(0.5f, 0.5f, 0.5f, 1.5f, 1.5f, 1.5f), 1, 1, 11).handle;
    REQUIRE(a.add(box3(5, 5, 5, 6, 6, 6), 1, 1, 12).status.ok());
    REQUIRE(grid.rebuild(a, serial).ok());
    const uint64_t frame = grid.view().frame;
    REQUIRE(all_pairs(grid, serial).size() == 1);

    // A 2D store for a 3D grid.
    ObjectStore flat;
    REQUIRE(flat.init_allocate(store_config(2, 8)).ok());
    REQUIRE(flat.add(box2(0, 0, 1, 1), 1, 1, 0).status.ok());
    Status s = grid.rebuild(flat, serial);
    CHECK(s.code == StatusCode::invalid_config);
    CHECK(std::string(s.message).find("dimensions") != std::string::npos);
    // A store that could hold more objects than the grid, even while it holds fewer.
    ObjectStore big;
    REQUIRE(big.init_allocate(store_config(3, 9)).ok());
    REQUIRE(big.add(box3(0, 0, 0, 1, 1, 1), 1, 1, 0).status.ok());
    s = grid.rebuild(big, serial);
    CHECK(s.code == StatusCode::invalid_config);
    CHECK(std::string(s.message).find("max_objects") != std::string::npos);
    // A store never initialised.
    ObjectStore never;
    CHECK(grid.rebuild(never, serial).code == StatusCode::invalid_argument);

    // Nothing changed: the frame of A, its pairs and its source.
    const BoxGridView view = grid.view();
    CHECK(view.frame == frame);
    CHECK(view.source_store == &a);
    CHECK(view.source_layout == a.layout_generation());
    CHECK(grid.object_count() == 3);
    const std::vector<Pair> pairs = all_pairs(grid, serial);
    REQUIRE(pairs.size() == 1);
    ObjectHandlePair hp{};
    REQUIRE(a.handles_at(view, pairs.data(), 1, &hp).ok());
    CHECK((hp.a == ha && hp.b == hb));

    // The other direction: a 3D store for a 2D grid.
    BoxGrid grid2;
    REQUIRE(grid2.init_allocate(grid_config_for(store_config(2, 8), 1.0f, 8)).ok());
    CHECK(grid2.rebuild(a, serial).code == StatusCode::invalid_config);
    CHECK_FALSE(grid2.view().built);
    CHECK(grid2.rebuild(flat, serial).ok());

    // A grid never initialised: not_built, as for BoxSpans.
    {
        ContinueOnAssert hook;
        BoxGrid none;
        CHECK(none.rebuild(a, serial).code == StatusCode::not_built);
    }

    // A store with a smaller max_objects fits: three boxes, all overlapping.
    ObjectStore small;
    REQUIRE(small.init_allocate(store_config(3, 4)).ok());
    for (uint32_t i = 0; i < 3; ++i)
        REQUIRE(small.add(box3(0, 0, 0, 2, 2, 2), 1, 1, i).status.ok());
    REQUIRE(grid.rebuild(small, serial).ok());
    CHECK(all_pairs(grid, serial).size() == 3);
    CHECK(grid.view().source_store == &small);
    // Results of this frame are not A's dense indices.
    check_all_calls(a, grid.view(), StatusCode::invalid_argument);
    check_all_calls(small, grid.view(), StatusCode::ok);
}

TEST_CASE("layout_generation: add, remove, clear and init advance it; move, layers, user values and failures do not") {
    ObjectStore s;
    CHECK(s.layout_generation() == 0);
    REQUIRE(s.init_allocate(store_config(2, 2)).ok());
    uint64_t last = s.layout_generation();
    CHECK(last != 0);
    // Advanced: greater than before. Kept: unchanged.
    auto advanced = [&]() {
        const bool up = s.layout_generation() > last;
        last = s.layout_generation();
        return up;
    };
    auto kept = [&]() { return s.layout_generation() == last; };
    const ObjectHandle a = s.add(box2(0, 0, 1, 1), 1, 1, 1).handle;
    CHECK(advanced());
    CHECK(s.add(box2(1, 0, 0, 1), 1, 1, 1).status.code == StatusCode::invalid_box);
    CHECK(kept());
    const ObjectHandle b = s.add(box2(0, 0, 1, 1), 1, 1, 2).handle;
    CHECK(advanced());
    CHECK(s.add(box2(0, 0, 1, 1), 1, 1, 3).status.code == StatusCode::object_capacity);
    CHECK(kept());
    REQUIRE(s.move(a, box2(2, 2, 3, 3)).ok());
    CHECK(s.move(a, box2(3, 2, 2, 3)).code == StatusCode::invalid_box);
    REQUIRE(s.set_layers(a, 2, 2).ok());
    REQUIRE(s.set_user_value(b, 9).ok());
    CHECK(s.remove(ObjectHandle{}).code == StatusCode::invalid_handle);
    CHECK(kept());
    REQUIRE(s.remove(a).ok());
    CHECK(advanced());
    CHECK(s.remove(a).code == StatusCode::invalid_handle);
    CHECK(kept());
    s.clear();
    CHECK(advanced());
    // A failed re-init changes nothing; a successful one advances it (never reset).
    CHECK(s.init_allocate(store_config(4, 2)).code == StatusCode::invalid_config);
    CHECK(kept());
    REQUIRE(s.init_allocate(store_config(2, 2)).ok());
    CHECK(advanced());
}

TEST_CASE("layout_generation: no two stores share a number, also across the end of a store's block") {
    // Stores with the same config and the same operations.
    std::vector<uint64_t> seen;
    for (uint32_t k = 0; k < 8; ++k) {
        ObjectStore s;
        REQUIRE(s.init_allocate(store_config(2, 4)).ok());
        seen.push_back(s.layout_generation());
        const ObjectHandle h = s.add(box2(0, 0, 1, 1), 1, 1, 1).handle;
        seen.push_back(s.layout_generation());
        REQUIRE(s.remove(h).ok());
        seen.push_back(s.layout_generation());
    }
    std::vector<uint64_t> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    CHECK(std::find(sorted.begin(), sorted.end(), uint64_t{0}) == sorted.end());

    // A store at the last number of its block takes a fresh block: still
    // growing, and never a number another store holds or took before.
    const uint64_t block = hashgrid::detail::kLayoutBlock;
    ObjectStore a;
    REQUIRE(a.init_allocate(store_config(2, 4)).ok());
    const uint64_t start = a.layout_generation();
    CHECK(start % block == 0); // a fresh block at init
    hashgrid::ObjectStoreTestAccess::set_layout(a, start + block - 2);
    REQUIRE(a.add(box2(0, 0, 1, 1), 1, 1, 1).status.ok());
    CHECK(a.layout_generation() == start + block - 1);
    ObjectStore b; // takes the block after a's, or a later one
    REQUIRE(b.init_allocate(store_config(2, 4)).ok());
    CHECK(b.layout_generation() >= start + block);
    REQUIRE(a.add(box2(0, 0, 1, 1), 1, 1, 2).status.ok());
    CHECK(a.layout_generation() > b.layout_generation()); // not b's block
    CHECK(a.layout_generation() % block == 0);
    REQUIRE(b.add(box2(0, 0, 1, 1), 1, 1, 1).status.ok());
    CHECK(b.layout_generation() < a.layout_generation());
    for (uint64_t v : seen)
        CHECK((v < start && v != a.layout_generation() && v != b.layout_generation()));
}

TEST_CASE("checked resolution: a hand-computed frame and every status, outputs untouched on failure") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    const ObjectStoreConfig sc = store_config(2, 8);
    ObjectStore store;
    REQUIRE(store.init_allocate(sc).ok());
    BoxGrid grid;
    REQUIRE(grid.init_allocate(grid_config_for(sc, 1.0f, 8)).ok());

    // A grid that holds no frame yet.
    check_all_calls(store, grid.view(), StatusCode::not_built);

    // a and b overlap on [0.5, 1]^2; c is far away. Dense indices 0, 1, 2.
    const ObjectHandle ha = store.add(box2(0, 0, 1, 1), 1, hashgrid::kAllLayers, 100).handle;
    const ObjectHandle hb = store.add(box2(0.5f, 0.5f, 1.5f, 1.5f), 1, hashgrid::kAllLayers, 101).handle;
    const ObjectHandle hc = store.add(box2(5, 5, 6, 6), 2, hashgrid::kAllLayers, 102).handle;
    REQUIRE(grid.rebuild(store, serial).ok());
    const std::vector<Pair> pairs = all_pairs(grid, serial);
    REQUIRE(pairs.size() == 1);
    REQUIRE((pairs[0].a == 0 && pairs[0].b == 1));
    const BoxGridView frame = grid.view();

    ObjectHandlePair hp{};
    REQUIRE(store.handles_at(frame, pairs.data(), 1, &hp).ok());
    CHECK((hp.a == ha && hp.b == hb));
    UserValuePair vp{};
    REQUIRE(store.user_values_at(frame, pairs.data(), 1, &vp).ok());
    CHECK((vp.a == 100 && vp.b == 101));
    ObjectHandle h;
    REQUIRE(store.handle_at(frame, 2, h).ok());
    CHECK(h == hc);
    uint64_t v = 0;
    REQUIRE(store.user_value_at(frame, 2, v).ok());
    CHECK(v == 102);

    // A box query over [0.9, 1.2]^2 finds a and b (closed boxes), not c.
    const hashgrid::BoxQueryGrid q = hashgrid::prepare_box_queries(frame, serial);
    hashgrid::QueryBox bq;
    bq.min[0] = bq.min[1] = 0.9f;
    bq.max[0] = bq.max[1] = 1.2f;
    uint32_t found[8];
    const hashgrid::QueryResult r = hashgrid::query_box(q, bq, hashgrid::kAllLayers, found, 8);
    REQUIRE(r.status.ok());
    REQUIRE(r.written == 2);
    ObjectHandle hs[2];
    REQUIRE(store.handles_at(q.view, found, r.written, hs).ok());
    CHECK(key_pair(hs[0], hs[1]) == key_pair(ha, hb));
    uint64_t vs[2] = {0, 0};
    REQUIRE(store.user_values_at(q.view, found, r.written, vs).ok());
    CHECK(std::min(vs[0], vs[1]) == 100);
    CHECK(std::max(vs[0], vs[1]) == 101);

    // Indices the frame cannot hold: invalid_argument with the lowest position and the count.
    const uint32_t bad[4] = {0, 3, 1, 7};
    ObjectHandle out[4] = {};
    Status s = store.handles_at(frame, bad, 4, out);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 1);
    CHECK(s.count == 2);
    CHECK(out[0] == ObjectHandle{}); // nothing written, not even the valid ones
    uint64_t values[4] = {5, 5, 5, 5};
    s = store.user_values_at(frame, bad, 4, values);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 1);
    CHECK(values[0] == 5);
    const Pair bad_pairs[3] = {{0, 1}, {1, 2}, {2, 3}};
    ObjectHandlePair hp3[3] = {};
    s = store.handles_at(frame, bad_pairs, 3, hp3);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 2);
    CHECK(s.count == 1);
    CHECK(hp3[0].a == ObjectHandle{});
    CHECK(store.user_values_at(frame, bad_pairs, 3, &vp).code == StatusCode::invalid_argument);
    CHECK(store.handle_at(frame, 3, h).code == StatusCode::invalid_argument);
    CHECK(h == hc);

    // Null arrays with a count: invalid_argument; with count 0: ok.
    CHECK(store.handles_at(frame, static_cast<const uint32_t*>(nullptr), 1, out).code == StatusCode::invalid_argument);
    CHECK(store.handles_at(frame, bad, 1, static_cast<ObjectHandle*>(nullptr)).code == StatusCode::invalid_argument);
    CHECK(store.user_values_at(frame, static_cast<const Pair*>(nullptr), 2, &vp).code == StatusCode::invalid_argument);
    CHECK(store.handles_at(frame, static_cast<const uint32_t*>(nullptr), 0, static_cast<ObjectHandle*>(nullptr)).ok());
    CHECK(store.handles_at(frame, static_cast<const Pair*>(nullptr), 0, static_cast<ObjectHandlePair*>(nullptr)).ok());

    // Moves, layers, user values and failed operations keep the layout: still
    // valid, and user values are the current ones.
    REQUIRE(store.move(hc, box2(0.8f, 0.8f, 1.0f, 1.0f)).ok());
    REQUIRE(store.set_layers(ha, 4, 4).ok());
    REQUIRE(store.set_user_value(hb, 201).ok());
    CHECK(store.add(box2(1, 0, 0, 1), 1, 1, 0).status.code == StatusCode::invalid_box);
    CHECK(store.remove(ObjectHandle{}).code == StatusCode::invalid_handle);
    REQUIRE(store.handles_at(frame, pairs.data(), 1, &hp).ok());
    CHECK((hp.a == ha && hp.b == hb));
    REQUIRE(store.user_values_at(frame, pairs.data(), 1, &vp).ok());
    CHECK((vp.a == 100 && vp.b == 201));
    check_all_calls(store, frame, StatusCode::ok);
    check_all_calls(store, q.view, StatusCode::ok);

    // An add without a rebuild: stale_view, through the grid's view and the query grid's.
    const ObjectHandle hd = store.add(box2(0, 0, 0.5f, 0.5f), 1, hashgrid::kAllLayers, 103).handle;
    check_all_calls(store, frame, StatusCode::stale_view);
    check_all_calls(store, q.view, StatusCode::stale_view);
    check_all_calls(store, grid.view(), StatusCode::stale_view);
    s = store.handles_at(frame, pairs.data(), 1, &hp);
    CHECK(s.code == StatusCode::stale_view);
    CHECK(std::string(s.message).find("rebuild") != std::string::npos);

    // Rebuilt: the new frame resolves; views of the old one stay stale.
    REQUIRE(grid.rebuild(store, serial).ok());
    check_all_calls(store, grid.view(), StatusCode::ok);
    check_all_calls(store, frame, StatusCode::stale_view);
    REQUIRE(store.handle_at(grid.view(), 3, h).ok());
    CHECK(h == hd);

    // A remove without a rebuild: d takes a's dense index 0.
    REQUIRE(store.remove(ha).ok());
    check_all_calls(store, grid.view(), StatusCode::stale_view);
    REQUIRE(grid.rebuild(store, serial).ok());
    REQUIRE(store.handle_at(grid.view(), 0, h).ok());
    CHECK(h == hd);

    // clear(), then a rebuild of the empty store: every index is out of range.
    store.clear();
    check_all_calls(store, grid.view(), StatusCode::stale_view);
    REQUIRE(grid.rebuild(store, serial).ok());
    check_all_calls(store, grid.view(), StatusCode::invalid_argument);
    CHECK(store.handles_at(grid.view(), found, 0, hs).ok());

    // A frame rebuilt from BoxSpans, even the store's own, names no store.
    REQUIRE(store.add(box2(0, 0, 1, 1), 1, 1, 1).status.ok());
    REQUIRE(grid.rebuild(store.spans(), serial).ok());
    CHECK(grid.view().source_store == nullptr);
    s = store.handle_at(grid.view(), 0, h);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(std::string(s.message).find("not rebuilt from this store") != std::string::npos);
    // A failed rebuild from BoxSpans keeps the frame's source.
    REQUIRE(grid.rebuild(store, serial).ok());
    hashgrid::BoxSpans too_many = store.spans();
    too_many.count = 9;
    CHECK(grid.rebuild(too_many, serial).code == StatusCode::object_capacity);
    check_all_calls(store, grid.view(), StatusCode::ok);

    // Another store with the same config and operations is not this frame's store.
    ObjectStore twin;
    REQUIRE(twin.init_allocate(sc).ok());
    REQUIRE(twin.add(box2(0, 0, 1, 1), 1, 1, 1).status.ok());
    check_all_calls(twin, grid.view(), StatusCode::invalid_argument);
    // A store never initialised.
    const ObjectStore never;
    check_all_calls(never, grid.view(), StatusCode::invalid_argument);

    // Re-initialising the store makes every frame built from it stale.
    const BoxGridView before = grid.view();
    REQUIRE(store.init_allocate(sc).ok());
    check_all_calls(store, before, StatusCode::stale_view);
    // Re-initialising the grid forgets its source.
    REQUIRE(grid.rebuild(store, serial).ok());
    REQUIRE(grid.init_allocate(grid_config_for(sc, 1.0f, 8)).ok());
    CHECK(grid.view().source_store == nullptr);
    check_all_calls(store, grid.view(), StatusCode::not_built);
}

// ---------------------------------------------------------------------------

namespace {

struct LiveObject {
    ObjectBox box;
    uint32_t category = 0;
    uint32_t mask = 0;
    uint64_t user = 0;
};

bool overlaps(const ObjectBox& a, const ObjectBox& b, uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!(a.min[d] <= b.max[d] && b.min[d] <= a.max[d])) return false;
    return true;
}

ObjectBox random_box(Rng& rng, uint32_t dims, float extent, float max_edge) {
    ObjectBox b;
    for (uint32_t d = 0; d < dims; ++d) {
        b.min[d] = rng.uniform(-extent, extent);
        b.max[d] = b.min[d] + rng.uniform(0.0f, max_edge);
    }
    return b;
}

/// A random live handle of the store (the unchecked handle_at: current dense order).
ObjectHandle random_live(Rng& rng, const ObjectStore& store) { return store.handle_at(rng.below(store.size())); }

} // namespace

TEST_CASE("store -> BoxGrid: random churn frames resolve pairs and queries to the objects brute force finds") {
    ParallelBackend parallel(4);
    const uint32_t rounds = std::max(4u, scaled_count(24));
    uint64_t total_pairs = 0;
    uint64_t total_found = 0;
    uint32_t stale_checks = 0;
    for (uint32_t dims : {2u, 3u}) {
        INFO("dims ", dims);
        const ObjectStoreConfig sc = store_config(dims, 300, 0x51u);
        ObjectStore store;
        REQUIRE(store.init_allocate(sc).ok());
        BoxGrid grid;
        REQUIRE(grid.init_allocate(grid_config_for(sc, 2.0f, 64)).ok());
        const float extent = dims == 2 ? 12.0f : 6.0f;
        std::map<uint64_t, LiveObject> live; // the oracle, by handle
        uint64_t next_user = 1000;
        Rng rng(0xF00D + dims);

        auto add_one = [&]() {
            const bool large = rng.below(40) == 0; // covers more than large_object_cells cells
            const ObjectBox box = random_box(rng, dims, extent, large ? 30.0f : 3.0f);
            const uint32_t category = 1u << rng.below(3);
            const uint32_t mask = rng.next_u32() & 7u;
            const uint64_t user = next_user++;
            const hashgrid::ObjectAddResult r = store.add(box, category, mask, user);
            if (live.size() == sc.max_objects) {
                CHECK(r.status.code == StatusCode::object_capacity);
                return;
            }
            REQUIRE(r.status.ok());
            live[handle_key(r.handle)] = LiveObject{box, category, mask, user};
        };
        auto remove_one = [&]() {
            const ObjectHandle h = random_live(rng, store);
            REQUIRE(store.remove(h).ok());
            live.erase(handle_key(h));
        };

        for (uint32_t round = 0; round < rounds; ++round) {
            INFO("round ", round);
            // A frame of changes.
            for (uint32_t op = 0; op < 80; ++op) {
                const uint32_t kind = rng.below(100);
                if (kind < 45 || store.size() == 0) {
                    add_one();
                } else if (kind < 65) {
                    remove_one();
                } else if (kind < 90) {
                    const ObjectHandle h = random_live(rng, store);
                    const ObjectBox box = random_box(rng, dims, extent, 3.0f);
                    REQUIRE(store.move(h, box).ok());
                    live[handle_key(h)].box = box;
                } else if (kind < 95) {
                    const ObjectHandle h = random_live(rng, store);
                    const uint32_t category = 1u << rng.below(3);
                    const uint32_t mask = rng.next_u32() & 7u;
                    REQUIRE(store.set_layers(h, category, mask).ok());
                    live[handle_key(h)].category = category;
                    live[handle_key(h)].mask = mask;
                } else {
                    const ObjectHandle h = random_live(rng, store);
                    const uint64_t user = next_user++;
                    REQUIRE(store.set_user_value(h, user).ok());
                    live[handle_key(h)].user = user;
                }
            }
            if (round == rounds / 2) {
                store.clear();
                live.clear();
                add_one();
            }
            REQUIRE(store.size() == live.size());

            // Rebuild from the store; pairs resolved to handles and user values.
            REQUIRE(grid.rebuild(store, parallel.backend()).ok());
            const std::vector<Pair> pairs = all_pairs(grid, parallel.backend());
            const BoxGridView frame = grid.view();
            std::vector<ObjectHandlePair> hp(pairs.size());
            std::vector<UserValuePair> vp(pairs.size());
            REQUIRE(store.handles_at(frame, pairs.data(), pairs.size(), hp.data()).ok());
            REQUIRE(store.user_values_at(frame, pairs.data(), pairs.size(), vp.data()).ok());
            std::vector<std::pair<uint64_t, uint64_t>> got;
            for (size_t k = 0; k < hp.size(); ++k) {
                got.push_back(key_pair(hp[k].a, hp[k].b));
                REQUIRE(live.count(handle_key(hp[k].a)) == 1);
                REQUIRE(live.count(handle_key(hp[k].b)) == 1);
                CHECK(vp[k].a == live[handle_key(hp[k].a)].user);
                CHECK(vp[k].b == live[handle_key(hp[k].b)].user);
            }
            std::sort(got.begin(), got.end());
            std::vector<std::pair<uint64_t, uint64_t>> expected;
            for (auto i = live.begin(); i != live.end(); ++i) {
                for (auto j = std::next(i); j != live.end(); ++j) {
                    const LiveObject& a = i->second;
                    const LiveObject& b = j->second;
                    if ((a.category & b.mask) == 0 || (b.category & a.mask) == 0) continue;
                    if (overlaps(a.box, b.box, dims)) expected.emplace_back(i->first, j->first);
                }
            }
            CHECK(got == expected);
            total_pairs += expected.size();

            // A few box queries, resolved through the query grid's view.
            const hashgrid::BoxQueryGrid q = hashgrid::prepare_box_queries(frame, parallel.backend());
            std::vector<uint32_t> found(sc.max_objects);
            std::vector<ObjectHandle> handles(sc.max_objects);
            std::vector<uint64_t> users(sc.max_objects);
            std::vector<uint32_t> kept; // the first query's results, for the staleness checks below
            for (uint32_t k = 0; k < 4; ++k) {
                hashgrid::QueryBox bq;
                const uint32_t layer_mask = rng.coin() ? hashgrid::kAllLayers : (rng.next_u32() & 7u);
                const ObjectBox qb = random_box(rng, dims, extent, 8.0f);
                for (uint32_t d = 0; d < 3; ++d) {
                    bq.min[d] = qb.min[d];
                    bq.max[d] = qb.max[d];
                }
                const hashgrid::QueryResult r = hashgrid::query_box(q, bq, layer_mask, found.data(), sc.max_objects);
                REQUIRE(r.status.ok());
                if (k == 0) kept.assign(found.begin(), found.begin() + r.written);
                REQUIRE(store.handles_at(q.view, found.data(), r.written, handles.data()).ok());
                REQUIRE(store.user_values_at(q.view, found.data(), r.written, users.data()).ok());
                std::vector<uint64_t> got_keys;
                for (uint32_t i = 0; i < r.written; ++i) {
                    got_keys.push_back(handle_key(handles[i]));
                    REQUIRE(live.count(handle_key(handles[i])) == 1);
                    CHECK(users[i] == live[handle_key(handles[i])].user);
                }
                std::sort(got_keys.begin(), got_keys.end());
                std::vector<uint64_t> expected_keys;
                for (const auto& [key, o] : live)
                    if ((o.category & layer_mask) != 0 && overlaps(qb, o.box, dims)) expected_keys.push_back(key);
                CHECK(got_keys == expected_keys);
                total_found += expected_keys.size();
            }

            // A move without a rebuild keeps the layout: the same handles.
            if (store.size() > 0) {
                const ObjectHandle h = random_live(rng, store);
                const ObjectBox box = random_box(rng, dims, extent, 3.0f);
                REQUIRE(store.move(h, box).ok());
                live[handle_key(h)].box = box;
                std::vector<ObjectHandlePair> again(pairs.size());
                REQUIRE(store.handles_at(frame, pairs.data(), pairs.size(), again.data()).ok());
                for (size_t k = 0; k < again.size(); ++k)
                    CHECK((again[k].a == hp[k].a && again[k].b == hp[k].b));
                CHECK(store.handles_at(q.view, kept.data(), kept.size(), handles.data()).ok());
            }
            // An add or a remove without a rebuild: every resolution is stale_view.
            if (round % 2 == 0 || store.size() == 0)
                add_one();
            else
                remove_one();
            CHECK(store.handles_at(frame, pairs.data(), pairs.size(), hp.data()).code == StatusCode::stale_view);
            CHECK(store.user_values_at(frame, pairs.data(), pairs.size(), vp.data()).code == StatusCode::stale_view);
            CHECK(store.handles_at(q.view, kept.data(), kept.size(), handles.data()).code == StatusCode::stale_view);
            CHECK(store.user_values_at(q.view, kept.data(), kept.size(), users.data()).code == StatusCode::stale_view);
            ObjectHandle h;
            CHECK(store.handle_at(frame, 0, h).code == StatusCode::stale_view);
            ++stale_checks;
        }
    }
    CHECK(stale_checks >= 8);
    CHECK(total_pairs > (rounds >= 24 ? 500u : 4u)); // the scenes do overlap
    CHECK(total_found > (rounds >= 24 ? 200u : 2u));
}

TEST_CASE("client API: pairs and query batches resolve through the index's views; a create or remove is stale_view") {
    hashgrid::ProximityIndexConfig config;
    config.grid.dimensions = 2;
    config.grid.cell_size = 1.0f;
    config.grid.max_objects = 8;
    config.grid.max_cell_entries = 64;
    config.grid.max_pairs = 16;
    hashgrid::ProximityIndex index;
    REQUIRE(index.init_allocate(config).ok());
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    // a: [0.5, 1.5]^2 and b: [1, 2] x [0.5, 1.5] overlap; c is far away.
    const ObjectHandle a = index.create_client({1.0f, 1.0f}, {1.0f, 1.0f}, 1, hashgrid::kAllLayers, 10).handle;
    const ObjectHandle b = index.create_client({1.5f, 1.0f}, {1.0f, 1.0f}, 1, hashgrid::kAllLayers, 11).handle;
    const ObjectHandle c = index.create_client({9.0f, 9.0f}, {1.0f, 1.0f}, 1, hashgrid::kAllLayers, 12).handle;
    Pair pairs[4];
    const hashgrid::PairResult pr = index.find_pairs(pairs, 4, serial);
    REQUIRE(pr.status.ok());
    REQUIRE(pr.written == 1);
    const ObjectStore& objects = index.objects();
    const BoxGridView frame = index.grid().view();
    CHECK(frame.source_store == &objects);
    ObjectHandlePair hp{};
    REQUIRE(objects.handles_at(frame, pairs, 1, &hp).ok());
    CHECK(key_pair(hp.a, hp.b) == key_pair(a, b));
    UserValuePair vp{};
    REQUIRE(objects.user_values_at(frame, pairs, 1, &vp).ok());
    CHECK(std::min(vp.a, vp.b) == 10);
    CHECK(std::max(vp.a, vp.b) == 11);

    // A batch of box queries on query_grid(), mapped through its view.
    REQUIRE(index.update_index(serial).ok());
    hashgrid::QueryBox bq;
    bq.min[0] = 8.0f;
    bq.min[1] = 8.0f;
    bq.max[0] = 10.0f;
    bq.max[1] = 10.0f;
    uint32_t found[8];
    const hashgrid::QueryResult r = hashgrid::query_box(index.query_grid(), bq, hashgrid::kAllLayers, found, 8);
    REQUIRE(r.written == 1);
    ObjectHandle h;
    REQUIRE(objects.handles_at(index.query_grid().view, found, 1, &h).ok());
    CHECK(h == c);

    // Updating a client keeps the dense indices: still valid, before and after the lazy rebuild.
    REQUIRE(index.update_client(c, {3.0f, 3.0f}, {1.0f, 1.0f}).ok());
    REQUIRE(objects.handles_at(frame, pairs, 1, &hp).ok());
    REQUIRE(index.update_index(serial).ok());
    REQUIRE(objects.handles_at(frame, pairs, 1, &hp).ok());
    CHECK(key_pair(hp.a, hp.b) == key_pair(a, b));

    // Creating or removing a client: stale_view until the index is rebuilt.
    const ObjectHandle d = index.create_client({1.0f, 1.5f}, {0.5f, 0.5f}).handle;
    REQUIRE(index.contains(d));
    CHECK(objects.handles_at(frame, pairs, 1, &hp).code == StatusCode::stale_view);
    CHECK(objects.handles_at(index.query_grid().view, found, 1, &h).code == StatusCode::stale_view);
    CHECK(h == c);
    REQUIRE(index.update_index(serial).ok());
    CHECK(objects.handles_at(index.grid().view(), pairs, 1, &hp).ok());
    REQUIRE(index.remove_client(a).ok());
    CHECK(objects.handles_at(index.grid().view(), pairs, 1, &hp).code == StatusCode::stale_view);
    index.clear();
    CHECK(objects.handles_at(index.grid().view(), pairs, 1, &hp).code == StatusCode::stale_view);
}

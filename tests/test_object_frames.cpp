// SPDX-License-Identifier: MIT
// An ObjectStore feeding a BoxGrid (objects.h, box_grid.h): configs kept in
// step (box_grid_config_for, BoxGrid::rebuild(store) refusing a store that
// does not fit), the store's layout generation, and the checked mapping of
// dense-index results (pairs, box queries) to handles and user values:
// hand-computed frames for every status, random churn frames against brute
// force over the live objects, and stale_view after an add or remove without
// a rebuild. Also the same mapping through a ProximityIndex.
#include <doctest/doctest.h>

#include "continue_on_assert.h"

#include "../core/src/objects/objects_internal.h"
#include "hashgrid/assert.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/proximity_index.h"
#include "test_support.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
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
using hashgrid::QueryResult;
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

/// Every pair of the grid's frame; `result` (when given) gets find_pairs()'s result.
std::vector<Pair> all_pairs(BoxGrid& grid, const hashgrid::ThreadBackend& backend,
                            hashgrid::PairResult* result = nullptr) {
    std::vector<Pair> out(static_cast<size_t>(grid.config().max_pairs));
    const hashgrid::PairResult r = grid.find_pairs(out.data(), out.size(), backend);
    REQUIRE(r.status.ok());
    out.resize(static_cast<size_t>(r.written));
    if (result != nullptr) *result = r;
    return out;
}

/// The result a query of `frame` with `written` entries answers: for index
/// arrays written by hand.
QueryResult result_of(const BoxGridView& frame, uint64_t written) {
    QueryResult r;
    r.total = written;
    r.written = written;
    r.layout = frame.source_layout;
    return r;
}

const ObjectHandle kSentinel{77, 77};

/// Every mapping call that takes a result answers `code` for `result` (its
/// arrays: result.written entries, at least 2, all naming dense index 0) and
/// leaves its outputs untouched unless ok: the whole forms and the part forms
/// [1, 2), indices and pairs.
void check_result_calls(const ObjectStore& store, const BoxGridView& frame, const QueryResult& result,
                        StatusCode code) {
    const auto n = static_cast<size_t>(std::max<uint64_t>(result.written, 2));
    const std::vector<uint32_t> indices(n, 0);
    const std::vector<Pair> pairs(n, Pair{0, 0});
    std::vector<ObjectHandle> hs(n, kSentinel);
    std::vector<uint64_t> vs(n, 77);
    std::vector<ObjectHandlePair> hp(n, ObjectHandlePair{kSentinel, kSentinel});
    std::vector<UserValuePair> vp(n, UserValuePair{77, 77});
    CHECK(store.handles_at(frame, result, indices.data(), hs.data()).code == code);
    CHECK(store.user_values_at(frame, result, indices.data(), vs.data()).code == code);
    CHECK(store.handles_at(frame, result, pairs.data(), hp.data()).code == code);
    CHECK(store.user_values_at(frame, result, pairs.data(), vp.data()).code == code);
    CHECK(store.handles_at(frame, result, indices.data(), 1, 1, hs.data()).code == code);
    CHECK(store.user_values_at(frame, result, indices.data(), 1, 1, vs.data()).code == code);
    CHECK(store.handles_at(frame, result, pairs.data(), 1, 1, hp.data()).code == code);
    CHECK(store.user_values_at(frame, result, pairs.data(), 1, 1, vp.data()).code == code);
    if (code == StatusCode::ok) return;
    for (size_t k = 0; k < n; ++k) {
        CHECK(hs[k] == kSentinel);
        CHECK(vs[k] == 77);
        CHECK((hp[k].a == kSentinel && hp[k].b == kSentinel));
        CHECK((vp[k].a == 77 && vp[k].b == 77));
    }
}

/// Every mapping call through `frame` answers `code` (with a result of this
/// frame for the calls that take one) and leaves its outputs untouched.
void check_all_calls(const ObjectStore& store, const BoxGridView& frame, StatusCode code) {
    check_result_calls(store, frame, result_of(frame, 2), code);
    ObjectHandle h = kSentinel;
    uint64_t v = 77;
    CHECK(store.handle_at(frame, 0, h).code == code);
    CHECK(store.user_value_at(frame, 0, v).code == code);
    if (code == StatusCode::ok) return;
    CHECK(h == kSentinel);
    CHECK(v == 77);
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
    hashgrid::PairResult pr;
    const std::vector<Pair> pairs = all_pairs(grid, serial, &pr);
    REQUIRE(pairs.size() == 1);
    ObjectHandlePair hp{};
    REQUIRE(a.handles_at(view, pr, pairs.data(), &hp).ok());
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
    ObjectStore fewer;
    REQUIRE(fewer.init_allocate(store_config(3, 4)).ok());
    for (uint32_t i = 0; i < 3; ++i)
        REQUIRE(fewer.add(box3(0, 0, 0, 2, 2, 2), 1, 1, i).status.ok());
    REQUIRE(grid.rebuild(fewer, serial).ok());
    CHECK(all_pairs(grid, serial).size() == 3);
    CHECK(grid.view().source_store == &fewer);
    // Results of this frame are not A's dense indices.
    check_all_calls(a, grid.view(), StatusCode::invalid_argument);
    check_all_calls(fewer, grid.view(), StatusCode::ok);
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
    hashgrid::PairResult pr;
    const std::vector<Pair> pairs = all_pairs(grid, serial, &pr);
    REQUIRE(pairs.size() == 1);
    REQUIRE((pairs[0].a == 0 && pairs[0].b == 1));
    const BoxGridView frame = grid.view();
    CHECK(pr.layout == store.layout_generation());
    CHECK(frame.source_layout == store.layout_generation());

    ObjectHandlePair hp{};
    REQUIRE(store.handles_at(frame, pr, pairs.data(), &hp).ok());
    CHECK((hp.a == ha && hp.b == hb));
    UserValuePair vp{};
    REQUIRE(store.user_values_at(frame, pr, pairs.data(), &vp).ok());
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
    const QueryResult r = hashgrid::query_box(q, bq, hashgrid::kAllLayers, found, 8);
    REQUIRE(r.status.ok());
    REQUIRE(r.written == 2);
    CHECK(r.layout == frame.source_layout);
    ObjectHandle hs[2];
    REQUIRE(store.handles_at(q.view, r, found, hs).ok());
    CHECK(key_pair(hs[0], hs[1]) == key_pair(ha, hb));
    uint64_t vs[2] = {0, 0};
    REQUIRE(store.user_values_at(q.view, r, found, vs).ok());
    CHECK(std::min(vs[0], vs[1]) == 100);
    CHECK(std::max(vs[0], vs[1]) == 101);
    // The part forms map [first, first + count) into out[0, count).
    ObjectHandle second = kSentinel;
    REQUIRE(store.handles_at(q.view, r, found, 1, 1, &second).ok());
    CHECK(second == hs[1]);
    uint64_t second_value = 0;
    REQUIRE(store.user_values_at(q.view, r, found, 1, 1, &second_value).ok());
    CHECK(second_value == vs[1]);
    REQUIRE(store.handles_at(q.view, r, found, 2, 0, static_cast<ObjectHandle*>(nullptr)).ok()); // empty, at the end

    // The visitor form: one index per call, mapped while the frame is current.
    struct Mapping {
        const ObjectStore* store;
        const BoxGridView* view;
        std::vector<ObjectHandle> handles;
        bool all_ok = true;
        static bool visit(void* context, uint32_t index) {
            auto* m = static_cast<Mapping*>(context);
            ObjectHandle handle;
            m->all_ok = m->all_ok && m->store->handle_at(*m->view, index, handle).ok();
            m->handles.push_back(handle);
            return true;
        }
    } mapping{&store, &q.view, {}, true};
    const QueryResult rv = hashgrid::query_box(q, bq, hashgrid::kAllLayers, {&Mapping::visit, &mapping});
    CHECK(rv.status.ok());
    CHECK(rv.layout == frame.source_layout);
    CHECK(mapping.all_ok);
    REQUIRE(mapping.handles.size() == 2);
    CHECK((mapping.handles[0] == hs[0] && mapping.handles[1] == hs[1]));

    // Indices the frame cannot hold: invalid_argument with the lowest position and the count.
    const uint32_t bad[4] = {0, 3, 1, 7};
    ObjectHandle out[4] = {};
    Status s = store.handles_at(frame, result_of(frame, 4), bad, out);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 1);
    CHECK(s.count == 2);
    CHECK(out[0] == ObjectHandle{}); // nothing written, not even the valid ones
    uint64_t values[4] = {5, 5, 5, 5};
    s = store.user_values_at(frame, result_of(frame, 4), bad, values);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 1);
    CHECK(values[0] == 5);
    // A part: positions are those of the whole array.
    s = store.handles_at(frame, result_of(frame, 4), bad, 2, 2, out);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 3);
    CHECK(s.count == 1);
    CHECK(out[0] == ObjectHandle{});
    REQUIRE(store.handles_at(frame, result_of(frame, 4), bad, 2, 1, out).ok());
    CHECK(out[0] == hb);
    out[0] = ObjectHandle{};
    const Pair bad_pairs[3] = {{0, 1}, {1, 2}, {2, 3}};
    ObjectHandlePair hp3[3] = {};
    s = store.handles_at(frame, result_of(frame, 3), bad_pairs, hp3);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 2);
    CHECK(s.count == 1);
    CHECK(hp3[0].a == ObjectHandle{});
    CHECK(store.user_values_at(frame, result_of(frame, 3), bad_pairs, &vp).code == StatusCode::invalid_argument);
    CHECK(store.user_values_at(frame, result_of(frame, 3), bad_pairs, 2, 1, &vp).code == StatusCode::invalid_argument);
    REQUIRE(store.user_values_at(frame, result_of(frame, 3), bad_pairs, 1, 1, &vp).ok());
    CHECK((vp.a == 101 && vp.b == 102));
    CHECK(store.handle_at(frame, 3, h).code == StatusCode::invalid_argument);
    CHECK(h == hc);

    // A part beyond what the result wrote: invalid_argument, whatever the
    // indices (first + count never wraps).
    const QueryResult two = result_of(frame, 2);
    CHECK(store.handles_at(frame, two, found, 1, 2, out).code == StatusCode::invalid_argument);
    CHECK(store.handles_at(frame, two, found, 3, 0, out).code == StatusCode::invalid_argument);
    CHECK(store.user_values_at(frame, two, found, UINT64_MAX, 2, values).code == StatusCode::invalid_argument);
    CHECK(store.handles_at(frame, two, pairs.data(), 1, UINT64_MAX, hp3).code == StatusCode::invalid_argument);
    CHECK(out[0] == ObjectHandle{});
    CHECK(values[0] == 5);
    CHECK(hp3[0].a == ObjectHandle{});

    // Null arrays with something to map: invalid_argument; with nothing: ok.
    const QueryResult one = result_of(frame, 1);
    const QueryResult none = result_of(frame, 0);
    CHECK(store.handles_at(frame, one, static_cast<const uint32_t*>(nullptr), out).code ==
          StatusCode::invalid_argument);
    CHECK(store.handles_at(frame, one, bad, static_cast<ObjectHandle*>(nullptr)).code == StatusCode::invalid_argument);
    CHECK(store.user_values_at(frame, result_of(frame, 2), static_cast<const Pair*>(nullptr), &vp).code ==
          StatusCode::invalid_argument);
    CHECK(store.handles_at(frame, two, static_cast<const uint32_t*>(nullptr), 1, 1, out).code ==
          StatusCode::invalid_argument);
    CHECK(
        store.handles_at(frame, none, static_cast<const uint32_t*>(nullptr), static_cast<ObjectHandle*>(nullptr)).ok());
    CHECK(
        store.handles_at(frame, none, static_cast<const Pair*>(nullptr), static_cast<ObjectHandlePair*>(nullptr)).ok());
    CHECK(store.handles_at(frame, two, static_cast<const uint32_t*>(nullptr), 1, 0, static_cast<ObjectHandle*>(nullptr))
              .ok());

    // Moves, layers, user values and failed operations keep the layout: still
    // valid, and user values are the current ones.
    REQUIRE(store.move(hc, box2(0.8f, 0.8f, 1.0f, 1.0f)).ok());
    REQUIRE(store.set_layers(ha, 4, 4).ok());
    REQUIRE(store.set_user_value(hb, 201).ok());
    CHECK(store.add(box2(1, 0, 0, 1), 1, 1, 0).status.code == StatusCode::invalid_box);
    CHECK(store.remove(ObjectHandle{}).code == StatusCode::invalid_handle);
    REQUIRE(store.handles_at(frame, pr, pairs.data(), &hp).ok());
    CHECK((hp.a == ha && hp.b == hb));
    REQUIRE(store.user_values_at(frame, pr, pairs.data(), &vp).ok());
    CHECK((vp.a == 100 && vp.b == 201));
    check_all_calls(store, frame, StatusCode::ok);
    check_all_calls(store, q.view, StatusCode::ok);

    // An add without a rebuild: stale_view, through the grid's view and the query grid's.
    const ObjectHandle hd = store.add(box2(0, 0, 0.5f, 0.5f), 1, hashgrid::kAllLayers, 103).handle;
    check_all_calls(store, frame, StatusCode::stale_view);
    check_all_calls(store, q.view, StatusCode::stale_view);
    check_all_calls(store, grid.view(), StatusCode::stale_view);
    s = store.handles_at(frame, pr, pairs.data(), &hp);
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
    CHECK(store.handles_at(grid.view(), result_of(grid.view(), 0), found, hs).ok());

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
// The layout stamp of results (QueryResult::layout).

namespace {

bool visit_all(void*, uint32_t) { return true; }
bool visit_ray_hit(void*, const hashgrid::RayHit&) { return true; }
bool visit_nearest_hit(void*, const hashgrid::NearestHit&) { return true; }

/// One result of every box-grid call (each query and its visitor form, each
/// batch, find_pairs, find_pairs_with) through `q` and `grid`, all valid
/// queries over a frame with at least one object.
std::vector<std::pair<std::string, QueryResult>> every_box_result(const hashgrid::BoxQueryGrid& q, BoxGrid& grid,
                                                                  const hashgrid::ThreadBackend& backend) {
    using namespace hashgrid;
    const QueryVisitor visitor{&visit_all, nullptr};
    const QueryPoint point{{0.5f, 0.5f, 0.5f}};
    QueryBox box;
    box.min[0] = box.min[1] = box.min[2] = -10.0f;
    box.max[0] = box.max[1] = box.max[2] = 10.0f;
    const QuerySphere sphere{{0.5f, 0.5f, 0.5f}, 3.0f};
    Frustum frustum;
    frustum.planes[0] = Plane{{1.0f, 0.0f, 0.0f}, 100.0f};
    frustum.plane_count = 1;
    Ray ray;
    ray.origin[0] = -5.0f;
    ray.origin[1] = ray.origin[2] = 0.75f;
    ray.direction[0] = 1.0f;
    ray.max_t = 100.0f;
    const QueryNearest nearest{{0.5f, 0.5f, 0.5f}, 2, std::numeric_limits<float>::infinity()};
    uint32_t out[64];
    RayHit hits[64];
    NearestHit nearest_hits[64];
    Pair pairs[64];
    uint64_t offsets[3];
    const QueryPoint points[2] = {point, point};
    const QueryBox boxes[2] = {box, box};
    const QuerySphere spheres[2] = {sphere, sphere};
    const Frustum frusta[2] = {frustum, frustum};
    const Ray rays[2] = {ray, ray};
    const QueryNearest nearests[2] = {nearest, nearest};
    const float qmin[2] = {0.0f, 0.0f};
    const float qmax[2] = {1.0f, 1.0f};
    BoxSpans queries;
    queries.min_x = queries.min_y = queries.min_z = qmin;
    queries.max_x = queries.max_y = queries.max_z = qmax;
    queries.count = 2;
    return {
        {"query_point", query_point(q, point, kAllLayers, out, 64)},
        {"query_point visitor", query_point(q, point, kAllLayers, visitor)},
        {"query_box", query_box(q, box, kAllLayers, out, 64)},
        {"query_box visitor", query_box(q, box, kAllLayers, visitor)},
        {"query_radius", query_radius(q, sphere, kAllLayers, out, 64)},
        {"query_radius visitor", query_radius(q, sphere, kAllLayers, visitor)},
        {"query_frustum", query_frustum(q, frustum, kAllLayers, out, 64)},
        {"query_frustum visitor", query_frustum(q, frustum, kAllLayers, visitor)},
        {"query_potential_collisions", query_potential_collisions(q, 0, out, 64)},
        {"query_potential_collisions visitor", query_potential_collisions(q, 0, visitor)},
        {"query_ray", query_ray(q, ray, kAllLayers, hits, 64)},
        {"query_ray visitor", query_ray(q, ray, kAllLayers, RayVisitor{&visit_ray_hit, nullptr})},
        {"query_ray_first", query_ray_first(q, ray, kAllLayers, hits)},
        {"query_nearest", query_nearest(q, nearest, kAllLayers, nearest_hits, 64)},
        {"query_nearest visitor", query_nearest(q, nearest, kAllLayers, NearestVisitor{&visit_nearest_hit, nullptr})},
        {"query_point_batch", query_point_batch(q, points, 2, kAllLayers, offsets, 3, out, 64, backend)},
        {"query_box_batch", query_box_batch(q, boxes, 2, kAllLayers, offsets, 3, out, 64, backend)},
        {"query_radius_batch", query_radius_batch(q, spheres, 2, kAllLayers, offsets, 3, out, 64, backend)},
        {"query_frustum_batch", query_frustum_batch(q, frusta, 2, kAllLayers, offsets, 3, out, 64, backend)},
        {"query_ray_batch", query_ray_batch(q, rays, 2, kAllLayers, offsets, 3, hits, 64, backend)},
        {"query_ray_first_batch", query_ray_first_batch(q, rays, 2, kAllLayers, hits, backend)},
        {"query_nearest_batch", query_nearest_batch(q, nearests, 2, kAllLayers, offsets, 3, nearest_hits, 64, backend)},
        {"find_pairs", grid.find_pairs(pairs, 64, backend)},
        {"find_pairs_with", grid.find_pairs_with(queries, pairs, 64, backend)},
    };
}

/// A small 3D store (max 8 objects) and its grid, with four overlapping objects.
struct SmallScene {
    ObjectStore store;
    BoxGrid grid;
    ObjectHandle handles[4];

    explicit SmallScene(uint32_t salt = 0) {
        const ObjectStoreConfig sc = store_config(3, 8, salt);
        REQUIRE(store.init_allocate(sc).ok());
        REQUIRE(grid.init_allocate(grid_config_for(sc, 1.0f, 8)).ok());
        for (uint32_t i = 0; i < 4; ++i) {
            const float o = 0.25f * static_cast<float>(i);
            handles[i] =
                store.add(box3(o, o, o, o + 1.0f, o + 1.0f, o + 1.0f), 1, hashgrid::kAllLayers, 100 + i).handle;
            REQUIRE(store.contains(handles[i]));
        }
        REQUIRE(grid.rebuild(store, hashgrid::serial_backend()).ok());
    }
};

} // namespace

TEST_CASE("result layout: every box query, visitor form, batch and pair search carries its frame's layout") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    SmallScene scene;
    const uint64_t layout = scene.store.layout_generation();
    REQUIRE(layout != 0);
    const hashgrid::BoxQueryGrid q = hashgrid::prepare_box_queries(scene.grid.view(), serial);
    const auto from_store = every_box_result(q, scene.grid, serial);
    CHECK(from_store.size() == 24);
    for (const auto& named : from_store) {
        const std::string& name = named.first; // INFO captures it: clang 14 cannot capture a binding
        const auto& r = named.second;
        INFO(name);
        CHECK(r.status.ok());
        CHECK(r.layout == layout);
    }
    // Refused queries carry it too: an invalid query, and a query through a
    // prepared grid whose frame has been rebuilt since (moves only: the same layout).
    hashgrid::QueryNearest none{{0.0f, 0.0f, 0.0f}, 0, 1.0f};
    hashgrid::NearestHit hit;
    const QueryResult bad = hashgrid::query_nearest(q, none, hashgrid::kAllLayers, &hit, 1);
    CHECK(bad.status.code == StatusCode::invalid_query);
    CHECK(bad.layout == layout);
    REQUIRE(scene.store.move(scene.handles[0], box3(5, 5, 5, 6, 6, 6)).ok());
    REQUIRE(scene.grid.rebuild(scene.store, serial).ok());
    for (const auto& named : every_box_result(q, scene.grid, serial)) {
        const std::string& name = named.first; // INFO captures it: clang 14 cannot capture a binding
        const auto& r = named.second;
        INFO(name);
        if (name.rfind("find_pairs", 0) != 0) CHECK(r.status.code == StatusCode::stale_view);
        CHECK(r.layout == layout);
    }

    // A frame rebuilt from BoxSpans names no store layout: 0.
    REQUIRE(scene.grid.rebuild(scene.store.spans(), serial).ok());
    const hashgrid::BoxQueryGrid qs = hashgrid::prepare_box_queries(scene.grid.view(), serial);
    for (const auto& named : every_box_result(qs, scene.grid, serial)) {
        const std::string& name = named.first; // INFO captures it: clang 14 cannot capture a binding
        const auto& r = named.second;
        INFO(name);
        CHECK(r.status.ok());
        CHECK(r.layout == 0);
    }

    // Particle grids: 0, queries, batches and pair searches alike.
    hashgrid::GridConfig pc;
    pc.dimensions = 3;
    pc.cell_size = 1.0f;
    pc.interaction_distance = 1.0f;
    pc.max_particles = 8;
    pc.max_cells = 64;
    pc.max_pairs = 64;
    hashgrid::Grid particles;
    REQUIRE(particles.init_allocate(pc).ok());
    const float px[3] = {0.0f, 0.5f, 3.0f};
    const float py[3] = {0.0f, 0.0f, 0.0f};
    const float pz[3] = {0.0f, 0.0f, 0.0f};
    REQUIRE(particles.rebuild(hashgrid::ParticleSpans{px, py, pz, nullptr, 3}, serial).ok());
    uint32_t out[8];
    uint64_t offsets[3];
    Pair pairs[8];
    const hashgrid::QuerySphere sphere{{0.0f, 0.0f, 0.0f}, 2.0f};
    const hashgrid::QuerySphere spheres[2] = {sphere, sphere};
    const QueryResult particle_results[] = {
        hashgrid::query_radius(particles, sphere, out, 8),
        hashgrid::query_radius(particles, sphere, {&visit_all, nullptr}),
        hashgrid::query_radius_batch(particles, spheres, 2, offsets, 3, out, 8, serial),
        particles.find_pairs(pairs, 8, serial),
        particles.find_pairs_with(hashgrid::ParticleSpans{px, py, pz, nullptr, 3}, pairs, 8, serial),
    };
    for (const QueryResult& r : particle_results) {
        CHECK(r.status.ok());
        CHECK(r.total > 0);
        CHECK(r.layout == 0);
    }
}

TEST_CASE("checked mapping: a result of an older layout is stale_view through the newer view, outputs untouched") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    for (const bool swap_in : {false, true}) {
        INFO((swap_in ? "remove one, add one: the same size" : "add one"));
        SmallScene scene;
        ObjectStore& store = scene.store;
        // Frame 1: a query, a batch, the pairs and find_pairs_with's objects.
        const BoxGridView frame1 = scene.grid.view();
        const hashgrid::BoxQueryGrid q1 = hashgrid::prepare_box_queries(frame1, serial);
        hashgrid::QueryBox all;
        all.min[0] = all.min[1] = all.min[2] = -10.0f;
        all.max[0] = all.max[1] = all.max[2] = 10.0f;
        uint32_t found[8];
        const QueryResult r1 = hashgrid::query_box(q1, all, hashgrid::kAllLayers, found, 8);
        REQUIRE(r1.written == 4);
        const hashgrid::QueryBox boxes[2] = {all, all};
        uint64_t offsets[3];
        uint32_t flat[16];
        const QueryResult b1 =
            hashgrid::query_box_batch(q1, boxes, 2, hashgrid::kAllLayers, offsets, 3, flat, 16, serial);
        REQUIRE(b1.written == 8);
        hashgrid::PairResult p1;
        const std::vector<Pair> pairs1 = all_pairs(scene.grid, serial, &p1);
        REQUIRE(pairs1.size() == 6);
        ObjectHandle before[4];
        REQUIRE(store.handles_at(frame1, r1, found, before).ok());

        // The layout changes and the grid is rebuilt: the new view is current.
        if (swap_in) {
            REQUIRE(store.remove(scene.handles[0]).ok()); // the last object takes dense index 0
            REQUIRE(store.add(box3(0, 0, 0, 1, 1, 1), 1, hashgrid::kAllLayers, 200).status.ok());
        } else {
            REQUIRE(store.add(box3(0, 0, 0, 1, 1, 1), 1, hashgrid::kAllLayers, 200).status.ok());
        }
        REQUIRE(scene.grid.rebuild(store, serial).ok());
        const BoxGridView frame2 = scene.grid.view();
        const hashgrid::BoxQueryGrid q2 = hashgrid::prepare_box_queries(frame2, serial);
        check_all_calls(store, frame2, StatusCode::ok); // the frame itself maps

        // Frame 1's results through frame 2's views: stale_view, nothing written.
        check_result_calls(store, frame2, r1, StatusCode::stale_view);
        check_result_calls(store, q2.view, b1, StatusCode::stale_view);
        check_result_calls(store, frame2, p1, StatusCode::stale_view);
        ObjectHandle hs[8] = {kSentinel, kSentinel, kSentinel, kSentinel, kSentinel, kSentinel, kSentinel, kSentinel};
        uint64_t vs[8] = {77, 77, 77, 77, 77, 77, 77, 77};
        Status s = store.handles_at(q2.view, r1, found, hs);
        CHECK(s.code == StatusCode::stale_view);
        CHECK(std::string(s.message).find("another layout") != std::string::npos);
        CHECK(store.user_values_at(q2.view, r1, found, vs).code == StatusCode::stale_view);
        CHECK(store.handles_at(q2.view, b1, flat, offsets[1], offsets[2] - offsets[1], hs).code ==
              StatusCode::stale_view);
        std::vector<ObjectHandlePair> hp(pairs1.size(), ObjectHandlePair{kSentinel, kSentinel});
        CHECK(store.handles_at(frame2, p1, pairs1.data(), hp.data()).code == StatusCode::stale_view);
        for (uint32_t i = 0; i < 8; ++i)
            CHECK((hs[i] == kSentinel && vs[i] == 77));
        for (const ObjectHandlePair& x : hp)
            CHECK((x.a == kSentinel && x.b == kSentinel));

        // Querying frame 2 again maps, to the objects it holds now.
        const QueryResult r2 = hashgrid::query_box(q2, all, hashgrid::kAllLayers, found, 8);
        REQUIRE(store.handles_at(q2.view, r2, found, hs).ok());
        std::vector<uint64_t> got;
        for (uint64_t i = 0; i < r2.written; ++i)
            got.push_back(handle_key(hs[i]));
        std::vector<uint64_t> expected;
        for (uint32_t i = 0; i < store.size(); ++i)
            expected.push_back(handle_key(store.handle_at(i)));
        std::sort(got.begin(), got.end());
        std::sort(expected.begin(), expected.end());
        CHECK(got == expected);
        if (swap_in) CHECK(std::find(got.begin(), got.end(), handle_key(before[0])) == got.end());
    }
}

TEST_CASE("checked mapping: results of another store, a BoxSpans frame, a particle grid, or failed, are refused") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    // Two stores with the same config and the same operations.
    SmallScene a;
    SmallScene twin;
    CHECK(a.store.layout_generation() != twin.store.layout_generation());
    hashgrid::PairResult pa;
    hashgrid::PairResult pt;
    all_pairs(a.grid, serial, &pa);
    all_pairs(twin.grid, serial, &pt);
    const BoxGridView va = a.grid.view();
    const BoxGridView vt = twin.grid.view();
    check_result_calls(a.store, va, pa, StatusCode::ok);
    check_result_calls(twin.store, vt, pt, StatusCode::ok);
    // The twin's result through a's own current view: another layout.
    check_result_calls(a.store, va, pt, StatusCode::stale_view);
    check_result_calls(twin.store, vt, pa, StatusCode::stale_view);
    // Through the twin's view: not a's frame.
    check_result_calls(a.store, vt, pt, StatusCode::invalid_argument);

    // A result of a frame rebuilt from BoxSpans (a's own objects) names no
    // layout; through that frame's view nothing maps either.
    REQUIRE(a.grid.rebuild(a.store.spans(), serial).ok());
    hashgrid::PairResult spans_pairs;
    all_pairs(a.grid, serial, &spans_pairs);
    CHECK(spans_pairs.layout == 0);
    check_result_calls(a.store, a.grid.view(), spans_pairs, StatusCode::invalid_argument);
    REQUIRE(a.grid.rebuild(a.store, serial).ok());
    const BoxGridView current = a.grid.view();
    check_result_calls(a.store, current, spans_pairs, StatusCode::stale_view);
    check_result_calls(a.store, current, pa, StatusCode::ok); // same layout as before

    // A particle grid's result: layout 0.
    QueryResult particle_result;
    particle_result.total = particle_result.written = 2;
    CHECK(particle_result.layout == 0);
    check_result_calls(a.store, current, particle_result, StatusCode::stale_view);

    // Failed statuses of this very frame: invalid_argument. Only ok and
    // output_too_small name objects.
    const hashgrid::BoxQueryGrid q = hashgrid::prepare_box_queries(current, serial);
    uint32_t found[8];
    hashgrid::QueryPoint nan_point;
    nan_point.position[0] = std::numeric_limits<float>::quiet_NaN();
    const QueryResult invalid = hashgrid::query_point(q, nan_point, hashgrid::kAllLayers, found, 8);
    REQUIRE(invalid.status.code == StatusCode::invalid_query);
    REQUIRE(invalid.layout == current.source_layout);
    check_result_calls(a.store, current, invalid, StatusCode::invalid_argument);
    Status s = a.store.handles_at(current, invalid, found, static_cast<ObjectHandle*>(nullptr));
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(std::string(s.message).find("status") != std::string::npos);
    // A status with a count that looks usable is still refused.
    for (const StatusCode code : {StatusCode::invalid_query, StatusCode::stale_view, StatusCode::not_built,
                                  StatusCode::invalid_argument, StatusCode::entry_capacity}) {
        QueryResult failed = result_of(current, 2);
        failed.status.code = code;
        check_result_calls(a.store, current, failed, StatusCode::invalid_argument);
    }
    // A real pair_capacity: a grid with room for 2 of the 6 pairs.
    BoxGridConfig tight = grid_config_for(a.store.config(), 1.0f, 8);
    tight.max_pairs = 2;
    BoxGrid small_pool;
    REQUIRE(small_pool.init_allocate(tight).ok());
    REQUIRE(small_pool.rebuild(a.store, serial).ok());
    Pair pairs[8];
    const hashgrid::PairResult over = small_pool.find_pairs(pairs, 8, serial);
    REQUIRE(over.status.code == StatusCode::pair_capacity);
    REQUIRE(over.written == 2);
    // Its written part is a prefix of the canonical order: it maps.
    UserValuePair over_values[2] = {};
    REQUIRE(a.store.user_values_at(small_pool.view(), over, pairs, over_values).ok());
    for (uint32_t k = 0; k < 2; ++k) {
        uint64_t ua = 0, ub = 0;
        REQUIRE(a.store.user_value_at(small_pool.view(), pairs[k].a, ua).ok());
        REQUIRE(a.store.user_value_at(small_pool.view(), pairs[k].b, ub).ok());
        CHECK(over_values[k].a == ua);
        CHECK(over_values[k].b == ub);
    }
    // output_too_small maps the written prefix.
    hashgrid::QueryBox all;
    all.min[0] = all.min[1] = all.min[2] = -10.0f;
    all.max[0] = all.max[1] = all.max[2] = 10.0f;
    const QueryResult cut = hashgrid::query_box(q, all, hashgrid::kAllLayers, found, 2);
    REQUIRE(cut.status.code == StatusCode::output_too_small);
    REQUIRE(cut.written == 2);
    ObjectHandle hs[3] = {kSentinel, kSentinel, kSentinel};
    REQUIRE(a.store.handles_at(q.view, cut, found, hs).ok());
    CHECK(a.store.contains(hs[0]));
    CHECK(a.store.contains(hs[1]));
    CHECK(hs[2] == kSentinel);
    CHECK(a.store.handles_at(q.view, cut, found, 1, 2, hs).code == StatusCode::invalid_argument);
    // Stale and failed at once: the layout is checked first.
    REQUIRE(a.store.add(box3(0, 0, 0, 1, 1, 1), 1, 1, 0).status.ok());
    REQUIRE(a.grid.rebuild(a.store, serial).ok());
    check_result_calls(a.store, a.grid.view(), invalid, StatusCode::stale_view);
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
            hashgrid::PairResult pr;
            const std::vector<Pair> pairs = all_pairs(grid, parallel.backend(), &pr);
            const BoxGridView frame = grid.view();
            CHECK(pr.layout == store.layout_generation());
            std::vector<ObjectHandlePair> hp(pairs.size());
            std::vector<UserValuePair> vp(pairs.size());
            REQUIRE(store.handles_at(frame, pr, pairs.data(), hp.data()).ok());
            REQUIRE(store.user_values_at(frame, pr, pairs.data(), vp.data()).ok());
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
            // The pairs in two parts map to the same handles.
            if (!pairs.empty()) {
                const uint64_t half = pairs.size() / 2;
                std::vector<ObjectHandlePair> parts(pairs.size());
                REQUIRE(store.handles_at(frame, pr, pairs.data(), 0, half, parts.data()).ok());
                REQUIRE(store.handles_at(frame, pr, pairs.data(), half, pairs.size() - half, parts.data() + half).ok());
                for (size_t k = 0; k < parts.size(); ++k)
                    CHECK((parts[k].a == hp[k].a && parts[k].b == hp[k].b));
            }

            // Objects the oracle finds for a query box and layer mask, as sorted handle keys.
            auto oracle = [&](const ObjectBox& qb, uint32_t layer_mask) {
                std::vector<uint64_t> keys;
                for (const auto& [key, o] : live)
                    if ((o.category & layer_mask) != 0 && overlaps(qb, o.box, dims)) keys.push_back(key);
                return keys;
            };
            // Mapped handles and user values checked against the oracle's objects; sorted keys.
            auto mapped_keys = [&](const ObjectHandle* handles, const uint64_t* users, uint64_t count) {
                std::vector<uint64_t> keys;
                for (uint64_t i = 0; i < count; ++i) {
                    keys.push_back(handle_key(handles[i]));
                    REQUIRE(live.count(handle_key(handles[i])) == 1);
                    CHECK(users[i] == live[handle_key(handles[i])].user);
                }
                std::sort(keys.begin(), keys.end());
                return keys;
            };
            auto random_query = [&](ObjectBox& qb) {
                qb = random_box(rng, dims, extent, 8.0f);
                hashgrid::QueryBox bq;
                for (uint32_t d = 0; d < 3; ++d) {
                    bq.min[d] = qb.min[d];
                    bq.max[d] = qb.max[d];
                }
                return bq;
            };

            // A few box queries, resolved through the query grid's view.
            const hashgrid::BoxQueryGrid q = hashgrid::prepare_box_queries(frame, parallel.backend());
            std::vector<uint32_t> found(sc.max_objects);
            std::vector<ObjectHandle> handles(sc.max_objects);
            std::vector<uint64_t> users(sc.max_objects);
            std::vector<uint32_t> kept; // the first query's results, for the staleness checks below
            QueryResult kept_result;
            for (uint32_t k = 0; k < 4; ++k) {
                ObjectBox qb;
                const hashgrid::QueryBox bq = random_query(qb);
                const uint32_t layer_mask = rng.coin() ? hashgrid::kAllLayers : (rng.next_u32() & 7u);
                const QueryResult r = hashgrid::query_box(q, bq, layer_mask, found.data(), sc.max_objects);
                REQUIRE(r.status.ok());
                CHECK(r.layout == frame.source_layout);
                if (k == 0) {
                    kept.assign(found.begin(), found.begin() + r.written);
                    kept_result = r;
                }
                REQUIRE(store.handles_at(q.view, r, found.data(), handles.data()).ok());
                REQUIRE(store.user_values_at(q.view, r, found.data(), users.data()).ok());
                const std::vector<uint64_t> expected_keys = oracle(qb, layer_mask);
                CHECK(mapped_keys(handles.data(), users.data(), r.written) == expected_keys);
                total_found += expected_keys.size();
            }

            // A batch of box queries: each query's part of the flat output
            // maps to what the oracle finds for it.
            constexpr uint32_t kBatch = 6;
            ObjectBox batch_boxes[kBatch];
            hashgrid::QueryBox batch[kBatch];
            for (uint32_t k = 0; k < kBatch; ++k)
                batch[k] = random_query(batch_boxes[k]);
            const uint32_t batch_mask = rng.coin() ? hashgrid::kAllLayers : (rng.next_u32() & 7u);
            std::vector<uint64_t> offsets(kBatch + 1);
            std::vector<uint32_t> flat(uint64_t{kBatch} * sc.max_objects);
            const QueryResult br =
                hashgrid::query_box_batch(q, batch, kBatch, batch_mask, offsets.data(), offsets.size(), flat.data(),
                                          flat.size(), parallel.backend());
            REQUIRE(br.status.ok());
            CHECK(br.layout == frame.source_layout);
            for (uint32_t k = 0; k < kBatch; ++k) {
                const uint64_t count = offsets[k + 1] - offsets[k];
                REQUIRE(store.handles_at(q.view, br, flat.data(), offsets[k], count, handles.data()).ok());
                REQUIRE(store.user_values_at(q.view, br, flat.data(), offsets[k], count, users.data()).ok());
                CHECK(mapped_keys(handles.data(), users.data(), count) == oracle(batch_boxes[k], batch_mask));
            }
            std::vector<ObjectHandle> flat_handles(br.written);
            REQUIRE(store.handles_at(q.view, br, flat.data(), flat_handles.data()).ok());
            // A too-small output: the written prefix maps, parts beyond it are refused.
            if (br.total > 1) {
                const uint64_t room = br.total / 2;
                const QueryResult cut =
                    hashgrid::query_box_batch(q, batch, kBatch, batch_mask, offsets.data(), offsets.size(), flat.data(),
                                              room, parallel.backend());
                REQUIRE(cut.status.code == StatusCode::output_too_small);
                REQUIRE(cut.written == room);
                std::vector<ObjectHandle> prefix(room);
                REQUIRE(store.handles_at(q.view, cut, flat.data(), prefix.data()).ok());
                for (uint64_t i = 0; i < room; ++i)
                    CHECK(prefix[i] == flat_handles[i]);
                for (uint32_t k = 0; k < kBatch; ++k) {
                    const Status s = store.handles_at(q.view, cut, flat.data(), offsets[k], offsets[k + 1] - offsets[k],
                                                      handles.data());
                    CHECK(s.code == (offsets[k + 1] <= room ? StatusCode::ok : StatusCode::invalid_argument));
                }
            }

            // A move keeps the layout: the same handles, without a rebuild
            // and after one (the indices still name the same objects).
            if (store.size() > 0) {
                const ObjectHandle h = random_live(rng, store);
                const ObjectBox box = random_box(rng, dims, extent, 3.0f);
                REQUIRE(store.move(h, box).ok());
                live[handle_key(h)].box = box;
                std::vector<ObjectHandlePair> again(pairs.size());
                REQUIRE(store.handles_at(frame, pr, pairs.data(), again.data()).ok());
                for (size_t k = 0; k < again.size(); ++k)
                    CHECK((again[k].a == hp[k].a && again[k].b == hp[k].b));
                CHECK(store.handles_at(q.view, kept_result, kept.data(), handles.data()).ok());
                if (round % 4 == 1) {
                    REQUIRE(grid.rebuild(store, parallel.backend()).ok());
                    REQUIRE(store.handles_at(grid.view(), pr, pairs.data(), again.data()).ok());
                    for (size_t k = 0; k < again.size(); ++k)
                        CHECK((again[k].a == hp[k].a && again[k].b == hp[k].b));
                }
            }
            // An add or a remove without a rebuild: every resolution is stale_view.
            if (round % 2 == 0 || store.size() == 0)
                add_one();
            else
                remove_one();
            const std::vector<ObjectHandlePair> hp_before = hp;
            CHECK(store.handles_at(frame, pr, pairs.data(), hp.data()).code == StatusCode::stale_view);
            CHECK(store.user_values_at(frame, pr, pairs.data(), vp.data()).code == StatusCode::stale_view);
            CHECK(store.handles_at(q.view, kept_result, kept.data(), handles.data()).code == StatusCode::stale_view);
            CHECK(store.user_values_at(q.view, kept_result, kept.data(), users.data()).code == StatusCode::stale_view);
            CHECK(store.handles_at(q.view, br, flat.data(), 0, br.written, handles.data()).code ==
                  StatusCode::stale_view);
            ObjectHandle h;
            CHECK(store.handle_at(frame, 0, h).code == StatusCode::stale_view);
            // Rebuilt: the new views are current, but the results of the old
            // layout are still refused through them, and nothing is written.
            REQUIRE(grid.rebuild(store, parallel.backend()).ok());
            const hashgrid::BoxQueryGrid q2 = hashgrid::prepare_box_queries(grid.view(), parallel.backend());
            CHECK(store.handles_at(grid.view(), pr, pairs.data(), hp.data()).code == StatusCode::stale_view);
            CHECK(store.user_values_at(grid.view(), pr, pairs.data(), vp.data()).code == StatusCode::stale_view);
            CHECK(store.handles_at(q2.view, kept_result, kept.data(), handles.data()).code == StatusCode::stale_view);
            CHECK(store.handles_at(q2.view, br, flat.data(), 0, br.written, handles.data()).code ==
                  StatusCode::stale_view);
            for (size_t k = 0; k < hp.size(); ++k)
                CHECK((hp[k].a == hp_before[k].a && hp[k].b == hp_before[k].b));
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
    CHECK(pr.layout == objects.layout_generation());
    ObjectHandlePair hp{};
    REQUIRE(objects.handles_at(frame, pr, pairs, &hp).ok());
    CHECK(key_pair(hp.a, hp.b) == key_pair(a, b));
    UserValuePair vp{};
    REQUIRE(objects.user_values_at(frame, pr, pairs, &vp).ok());
    CHECK(std::min(vp.a, vp.b) == 10);
    CHECK(std::max(vp.a, vp.b) == 11);
    // find_near answers handles: no layout to name.
    ObjectHandle near_handles[4];
    const QueryResult fr = index.find_near({1.0f, 1.0f}, {0.5f, 0.5f}, hashgrid::kAllLayers, near_handles, 4);
    REQUIRE(fr.status.ok());
    CHECK(fr.layout == 0);

    // A box query and a batch on query_grid(), mapped through its view.
    REQUIRE(index.update_index(serial).ok());
    hashgrid::QueryBox bq;
    bq.min[0] = 8.0f;
    bq.min[1] = 8.0f;
    bq.max[0] = 10.0f;
    bq.max[1] = 10.0f;
    uint32_t found[8];
    const QueryResult r = hashgrid::query_box(index.query_grid(), bq, hashgrid::kAllLayers, found, 8);
    REQUIRE(r.written == 1);
    ObjectHandle h;
    REQUIRE(objects.handles_at(index.query_grid().view, r, found, &h).ok());
    CHECK(h == c);
    hashgrid::QueryBox boxes[2] = {bq, {}};
    boxes[1].min[0] = boxes[1].min[1] = 0.0f;
    boxes[1].max[0] = boxes[1].max[1] = 1.0f; // a and b
    uint64_t offsets[3];
    uint32_t flat[8];
    const QueryResult br =
        hashgrid::query_box_batch(index.query_grid(), boxes, 2, hashgrid::kAllLayers, offsets, 3, flat, 8, serial);
    REQUIRE(br.status.ok());
    REQUIRE((offsets[0] == 0 && offsets[1] == 1 && offsets[2] == 3));
    ObjectHandle hs[2];
    REQUIRE(objects.handles_at(index.query_grid().view, br, flat, offsets[0], offsets[1] - offsets[0], hs).ok());
    CHECK(hs[0] == c);
    REQUIRE(objects.handles_at(index.query_grid().view, br, flat, offsets[1], offsets[2] - offsets[1], hs).ok());
    CHECK(key_pair(hs[0], hs[1]) == key_pair(a, b));

    // Updating a client keeps the dense indices: still valid, before and after the lazy rebuild.
    REQUIRE(index.update_client(c, {3.0f, 3.0f}, {1.0f, 1.0f}).ok());
    REQUIRE(objects.handles_at(frame, pr, pairs, &hp).ok());
    REQUIRE(index.update_index(serial).ok());
    REQUIRE(objects.handles_at(index.grid().view(), pr, pairs, &hp).ok());
    CHECK(key_pair(hp.a, hp.b) == key_pair(a, b));

    // Creating or removing a client: stale_view until the index is rebuilt,
    // and for the results of the old layout after it too.
    const ObjectHandle d = index.create_client({1.0f, 1.5f}, {0.5f, 0.5f}).handle;
    REQUIRE(index.contains(d));
    CHECK(objects.handles_at(frame, pr, pairs, &hp).code == StatusCode::stale_view);
    CHECK(objects.handles_at(index.query_grid().view, r, found, &h).code == StatusCode::stale_view);
    CHECK(h == c);
    REQUIRE(index.update_index(serial).ok());
    CHECK(objects.handles_at(index.grid().view(), pr, pairs, &hp).code == StatusCode::stale_view);
    CHECK(objects.handles_at(index.query_grid().view, r, found, &h).code == StatusCode::stale_view);
    CHECK(objects.handles_at(index.query_grid().view, br, flat, 0, 1, hs).code == StatusCode::stale_view);
    CHECK(key_pair(hp.a, hp.b) == key_pair(a, b));
    CHECK(h == c);
    const hashgrid::PairResult pr2 = index.find_pairs(pairs, 4, serial);
    REQUIRE(pr2.written == 3); // a-b, a-d, b-d
    ObjectHandlePair hp3[3];
    REQUIRE(objects.handles_at(index.grid().view(), pr2, pairs, hp3).ok());
    REQUIRE(index.remove_client(a).ok());
    CHECK(objects.handles_at(index.grid().view(), pr2, pairs, hp3).code == StatusCode::stale_view);
    index.clear();
    CHECK(objects.handles_at(index.grid().view(), pr2, pairs, hp3).code == StatusCode::stale_view);
}

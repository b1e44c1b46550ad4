// SPDX-License-Identifier: MIT
// Growing between frames (ObjectStore::grow, PairTracker::grow, a BoxGrid
// initialised again with a larger config): a game that hits a capacity moves
// its whole state into larger blocks, and every handle, dense index, result
// and the next frame's events stay what they would have been. The oracle is
// the state before the move (every object read back by handle, the pairs by
// handle) and the brute-force pair sets of consecutive frames.
#include <doctest/doctest.h>

#include "continue_on_assert.h"

#include "hashgrid/box_grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/pair_tracker.h"
#include "test_support.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

using namespace hashgrid_test;
using hashgrid::BoxGrid;
using hashgrid::BoxGridConfig;
using hashgrid::ObjectBox;
using hashgrid::ObjectHandle;
using hashgrid::ObjectStore;
using hashgrid::ObjectStoreConfig;
using hashgrid::PairResult;
using hashgrid::PairTracker;
using hashgrid::PairTrackerConfig;
using hashgrid::Status;
using hashgrid::StatusCode;

namespace {

using HandlePair = std::pair<uint64_t, uint64_t>;

uint64_t key(ObjectHandle h) { return (uint64_t{h.index} << 32) | h.generation; }

HandlePair ordered(ObjectHandle a, ObjectHandle b) {
    return key(a) < key(b) ? HandlePair{key(a), key(b)} : HandlePair{key(b), key(a)};
}

ObjectStoreConfig store_config(uint32_t max_objects) {
    ObjectStoreConfig c;
    c.dimensions = 2;
    c.max_objects = max_objects;
    c.handle_salt = 0x9e0;
    return c;
}

BoxGridConfig grid_config(uint32_t max_objects) {
    BoxGridConfig c = hashgrid::box_grid_config_for(store_config(max_objects));
    c.cell_size = 4.0f;
    c.max_cell_entries = 9 * max_objects;
    c.max_pairs = uint64_t{max_objects} * max_objects / 2 + 16;
    return c;
}

PairTrackerConfig tracker_config(uint32_t max_objects) {
    PairTrackerConfig c;
    c.max_ids = max_objects;
    c.max_pairs = max_objects * max_objects / 2 + 16;
    c.sensor_layers = 2u;
    c.list_pairs = true;
    return c;
}

ObjectBox random_box(Rng& rng) {
    ObjectBox b;
    for (uint32_t axis = 0; axis < 2; ++axis) {
        b.min[axis] = static_cast<float>(rng.below(80)) * 0.5f;
        b.max[axis] = b.min[axis] + static_cast<float>(1 + rng.below(8)) * 0.5f;
    }
    return b;
}

/// A store, its grid and a tracker, kept together as a game would.
struct World {
    ObjectStore store;
    BoxGrid grid;
    PairTracker tracker;
    std::vector<hashgrid::Pair> pairs;
    std::vector<ObjectHandle> live;
    std::set<HandlePair> touching; ///< What the events say touches.

    explicit World(uint32_t max_objects) {
        REQUIRE(store.init_allocate(store_config(max_objects)).ok());
        REQUIRE(grid.init_allocate(grid_config(max_objects)).ok());
        REQUIRE(tracker.init_allocate(tracker_config(max_objects)).ok());
        pairs.resize(grid_config(max_objects).max_pairs);
    }

    /// Adds (until full), moves, removes and flips layers at random.
    void churn(Rng& rng, uint32_t adds) {
        for (uint32_t k = 0; k < adds; ++k) {
            const hashgrid::ObjectAddResult a =
                store.add(random_box(rng), rng.below(4) == 0 ? 2u : 1u, hashgrid::kAllLayers, k);
            if (a.status.code == StatusCode::object_capacity) break;
            REQUIRE(a.status.ok());
            live.push_back(a.handle);
        }
        for (uint32_t k = 0; k < 6 && !live.empty(); ++k) {
            const uint32_t i = rng.below(static_cast<uint32_t>(live.size()));
            const uint32_t what = rng.below(4);
            if (what == 0) {
                REQUIRE(store.remove(live[i]).ok());
                live[i] = live.back();
                live.pop_back();
            } else if (what == 1) {
                REQUIRE(store.set_layers(live[i], rng.coin() ? 2u : 1u, hashgrid::kAllLayers).ok());
            } else {
                REQUIRE(store.move(live[i], random_box(rng)).ok());
            }
        }
    }

    /// Rebuild, pairs, events; the events applied to `touching`, which must
    /// then be the brute-force pair set. Returns the pairs by handle, in order.
    std::vector<HandlePair> frame(const hashgrid::ThreadBackend& backend) {
        REQUIRE(grid.rebuild(store, backend).ok());
        const PairResult r = grid.find_pairs(pairs.data(), pairs.size(), backend);
        REQUIRE(r.status.ok());
        const Status s = tracker.update(store, grid.view(), r, pairs.data(), backend);
        REQUIRE_MESSAGE(s.ok(), s.message);
        const hashgrid::PairEvents e = tracker.events();
        // Ends first: a pair whose object became a sensor ends as a contact and begins as a sensor pair.
        for (const hashgrid::PairEventList* l : {&e.end, &e.sensor_end})
            for (uint64_t k = 0; k < l->count; ++k)
                CHECK(touching.erase(ordered(l->pairs[k].a, l->pairs[k].b)) == 1);
        for (const hashgrid::PairEventList* l : {&e.begin, &e.sensor_begin})
            for (uint64_t k = 0; k < l->count; ++k)
                CHECK(touching.insert(ordered(l->pairs[k].a, l->pairs[k].b)).second);
        std::vector<HandlePair> got;
        for (uint64_t k = 0; k < r.written; ++k)
            got.push_back(ordered(store.handle_at(pairs[k].a), store.handle_at(pairs[k].b)));
        std::set<HandlePair> brute;
        const uint32_t n = store.size();
        for (uint32_t i = 0; i < n; ++i)
            for (uint32_t j = i + 1; j < n; ++j)
                if (store.min_coords(0)[i] <= store.max_coords(0)[j] &&
                    store.min_coords(0)[j] <= store.max_coords(0)[i] &&
                    store.min_coords(1)[i] <= store.max_coords(1)[j] &&
                    store.min_coords(1)[j] <= store.max_coords(1)[i])
                    brute.insert(ordered(store.handle_at(i), store.handle_at(j)));
        CHECK(std::set<HandlePair>(got.begin(), got.end()) == brute);
        CHECK(touching == brute);
        return got;
    }
};

/// Every live object as the store answers it by handle.
std::map<uint64_t, std::vector<float>> objects_by_handle(const World& w) {
    std::map<uint64_t, std::vector<float>> out;
    for (ObjectHandle h : w.live) {
        ObjectBox b;
        REQUIRE(w.store.get_box(h, b).ok());
        out[key(h)] = {b.min[0], b.min[1], b.max[0], b.max[1], static_cast<float>(w.store.dense_index(h))};
    }
    return out;
}

} // namespace

TEST_CASE("growth: store, grid and tracker moved into larger blocks mid-run keep every handle, result and event") {
    ParallelBackend pb(3);
    for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), pb.backend()}) {
        World w(40);
        Rng rng(0x6e0);
        std::vector<HandlePair> last;
        for (uint32_t f = 0; f < 60; ++f) {
            w.churn(rng, 2);
            last = w.frame(backend);
        }
        w.churn(rng, 40); // fills the store (its removes may free a few slots: filled below)
        last = w.frame(backend);
        while (w.store.size() < 40) {
            const hashgrid::ObjectAddResult a = w.store.add(random_box(rng), 1, hashgrid::kAllLayers, 0);
            REQUIRE(a.status.ok());
            w.live.push_back(a.handle);
        }
        last = w.frame(backend);
        const hashgrid::ObjectAddResult refused = w.store.add(random_box(rng), 1, hashgrid::kAllLayers, 0);
        CHECK(refused.status.code == StatusCode::object_capacity);
        CHECK(refused.status.needed == 41);

        // Grow everything between frames.
        const auto before = objects_by_handle(w);
        const uint64_t layout = w.store.layout_generation();
        const uint64_t clock = w.store.change_clock();
        REQUIRE(w.store.grow_allocate(store_config(100)).ok());
        CHECK(w.store.layout_generation() == layout);
        CHECK(w.store.change_clock() == clock);
        CHECK(w.store.changes_since(clock).complete);
        CHECK(objects_by_handle(w) == before); // every handle, box and dense index
        const hashgrid::PairEvents events_before = w.tracker.events();
        REQUIRE(w.tracker.grow_allocate(tracker_config(100)).ok());
        CHECK(w.tracker.events().frame == events_before.frame);
        CHECK(w.tracker.events().begin.count == events_before.begin.count);
        REQUIRE(w.grid.init_allocate(grid_config(100)).ok());
        w.pairs.resize(grid_config(100).max_pairs);
        // The same objects give the same pairs in the same order, and no event.
        CHECK(w.frame(backend) == last);
        CHECK(w.tracker.events().begin.count + w.tracker.events().end.count == 0);
        // And the game goes on past the old capacity.
        for (uint32_t f = 0; f < 60; ++f) {
            w.churn(rng, 3);
            (void)w.frame(backend);
        }
        CHECK(w.store.size() > 40);
    }
}

TEST_CASE("growth: a refused grow changes nothing") {
    ContinueOnAssert keep_going;
    World w(8);
    Rng rng(0x6e1);
    w.churn(rng, 8);
    (void)w.frame(hashgrid::serial_backend());
    const auto before = objects_by_handle(w);

    ObjectStoreConfig other = store_config(16);
    other.dimensions = 3;
    CHECK(w.store.grow_allocate(other).code == StatusCode::invalid_config);
    other = store_config(16);
    other.handle_salt = 1;
    CHECK(w.store.grow_allocate(other).code == StatusCode::invalid_config);
    CHECK(w.store.grow_allocate(store_config(4)).code == StatusCode::invalid_config);
    const hashgrid::MemoryRequirements req = ObjectStore::memory_requirements(store_config(16));
    std::vector<unsigned char> small(req.bytes);
    CHECK(w.store.grow(store_config(16), nullptr, 0).code == StatusCode::memory_too_small);
    CHECK(w.store.grow(store_config(16), small.data(), static_cast<size_t>(req.bytes - 1)).code ==
          StatusCode::memory_too_small);
    CHECK(objects_by_handle(w) == before);
    CHECK(w.store.config().max_objects == 8);
    ObjectStore never;
    CHECK(never.grow_allocate(store_config(16)).code == StatusCode::invalid_argument);

    CHECK(w.tracker.grow_allocate(tracker_config(4)).code == StatusCode::invalid_config);
    PairTrackerConfig fewer_pairs = tracker_config(16);
    fewer_pairs.max_pairs = 1;
    CHECK(w.tracker.grow_allocate(fewer_pairs).code == StatusCode::invalid_config);
    PairTracker never_tracker;
    CHECK(never_tracker.grow_allocate(tracker_config(16)).code == StatusCode::invalid_argument);
    // The tracker still diffs against its last frame.
    w.churn(rng, 0);
    (void)w.frame(hashgrid::serial_backend());
}

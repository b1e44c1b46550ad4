// SPDX-License-Identifier: MIT
// Overlap events (pair_tracker.h): begin / persist / end lists and sensors
// against an oracle that diffs the brute-force pair sets of consecutive
// frames, for an ObjectStore under random churn (adds, moves, removes, reused
// slots, sensor flips, a store initialised again), particle grids in both
// world kinds, find_pairs_with in both forms, every backend and thread count
// (one golden hash), and every bad input, each changing nothing the next
// frame reads.
#include <doctest/doctest.h>

#include "continue_on_assert.h"

#include "golden_hashes.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/pair_tracker.h"
#include "test_support.h"

#include <algorithm>
#include <compare>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace hashgrid_test;
using hashgrid::BoxGrid;
using hashgrid::BoxGridConfig;
using hashgrid::BoxSpans;
using hashgrid::ObjectBox;
using hashgrid::ObjectHandle;
using hashgrid::ObjectHandlePair;
using hashgrid::ObjectStore;
using hashgrid::ObjectStoreConfig;
using hashgrid::PairEventList;
using hashgrid::PairEvents;
using hashgrid::PairResult;
using hashgrid::PairTracker;
using hashgrid::PairTrackerConfig;
using hashgrid::Status;
using hashgrid::StatusCode;

namespace {

constexpr uint32_t kSensor = 2u; // the sensor category bit of these tests; contacts are category 1

/// One event as plain values.
struct Event {
    uint32_t a = 0, a_generation = 0, b = 0, b_generation = 0;
    auto operator<=>(const Event&) const = default;
};

/// A frame's pairs as the oracle keeps them: (sensor, a, b) -> generations.
struct PairKey {
    uint32_t sensor = 0, a = 0, b = 0;
    auto operator<=>(const PairKey&) const = default;
};
using PairSet = std::map<PairKey, std::pair<uint32_t, uint32_t>>;
/// A frame's pairs in input order.
using Ordered = std::vector<std::pair<PairKey, std::pair<uint32_t, uint32_t>>>;

PairSet set_of(const Ordered& pairs) { return PairSet(pairs.begin(), pairs.end()); }

/// The event lists the oracle expects: [0] contacts, [1] sensors.
struct Expected {
    std::vector<Event> begin[2], persist[2], end[2], current[2];
};

Event event_of(const PairKey& k, std::pair<uint32_t, uint32_t> g) { return Event{k.a, g.first, k.b, g.second}; }

/// The diff of two frames: begin and end in identity order, persist and the
/// frame's lists in this frame's input order. `renewed`: no pair persists.
Expected diff(const PairSet& prev, const Ordered& cur_in_order, bool renewed = false) {
    Expected e;
    const PairSet cur = set_of(cur_in_order);
    for (const auto& [k, g] : cur) {
        const auto it = prev.find(k);
        if (it == prev.end() || renewed || it->second != g) e.begin[k.sensor].push_back(event_of(k, g));
    }
    for (const auto& [k, g] : cur_in_order) {
        e.current[k.sensor].push_back(event_of(k, g));
        const auto it = prev.find(k);
        if (it != prev.end() && !renewed && it->second == g) e.persist[k.sensor].push_back(event_of(k, g));
    }
    for (const auto& [k, g] : prev) {
        const auto it = cur.find(k);
        if (it == cur.end() || renewed || it->second != g) e.end[k.sensor].push_back(event_of(k, g));
    }
    return e;
}

std::vector<Event> events_of(const PairEventList& l) {
    std::vector<Event> out;
    for (uint64_t k = 0; k < l.count && l.pairs != nullptr; ++k)
        out.push_back(Event{l.pairs[k].a.index, l.pairs[k].a.generation, l.pairs[k].b.index, l.pairs[k].b.generation});
    return out;
}

std::string text(const std::vector<Event>& v) {
    std::string s;
    for (size_t k = 0; k < v.size() && k < 12; ++k)
        s += "{" + std::to_string(v[k].a) + "@" + std::to_string(v[k].a_generation) + "," + std::to_string(v[k].b) +
             "@" + std::to_string(v[k].b_generation) + "} ";
    return s + "(" + std::to_string(v.size()) + ")";
}

void check_list(const char* what, const PairEventList& got, const std::vector<Event>& want, bool listed) {
    INFO(what);
    CHECK(got.count == want.size());
    if (!listed) {
        CHECK(got.pairs == nullptr);
        return;
    }
    const std::vector<Event> g = events_of(got);
    if (g != want) CHECK_MESSAGE(false, "got " << text(g) << "\nwant " << text(want));
}

void check_events(const PairEvents& e, const Expected& want, bool list_pairs) {
    check_list("begin", e.begin, want.begin[0], true);
    check_list("persist", e.persist, want.persist[0], list_pairs);
    check_list("end", e.end, want.end[0], true);
    check_list("sensor_begin", e.sensor_begin, want.begin[1], true);
    check_list("sensor_persist", e.sensor_persist, want.persist[1], list_pairs);
    check_list("sensor_end", e.sensor_end, want.end[1], true);
    check_list("contacts", e.contacts, want.current[0], list_pairs);
    check_list("sensors", e.sensors, want.current[1], list_pairs);
}

/// FNV-1a over every list of a frame's events.
void hash_events(Fnv1a& h, const PairEvents& e) {
    for (const PairEventList* l :
         {&e.begin, &e.persist, &e.end, &e.sensor_begin, &e.sensor_persist, &e.sensor_end, &e.contacts, &e.sensors}) {
        h.u64(l->count);
        for (uint64_t k = 0; k < l->count && l->pairs != nullptr; ++k) {
            h.u32(l->pairs[k].a.index);
            h.u32(l->pairs[k].a.generation);
            h.u32(l->pairs[k].b.index);
            h.u32(l->pairs[k].b.generation);
        }
    }
}

PairTrackerConfig tracker_config(uint32_t max_ids, uint32_t max_pairs, bool list_pairs = true) {
    PairTrackerConfig c;
    c.max_ids = max_ids;
    c.max_pairs = max_pairs;
    c.sensor_layers = kSensor;
    c.list_pairs = list_pairs;
    return c;
}

PairResult ok_result(uint64_t count) {
    PairResult r;
    r.total = count;
    r.written = count;
    return r;
}

/// The index forms' pairs in input order (a < b after ordering, unless two sets).
Ordered index_list(const std::vector<hashgrid::Pair>& pairs, const std::vector<uint32_t>& category, bool two_sets) {
    Ordered out;
    for (const hashgrid::Pair& p : pairs) {
        const uint32_t a = two_sets ? p.a : std::min(p.a, p.b);
        const uint32_t b = two_sets ? p.b : std::max(p.a, p.b);
        uint32_t sensor = 0;
        if (!category.empty()) sensor = ((two_sets ? category[p.b] : category[p.a] | category[p.b]) & kSensor) != 0;
        out.push_back({PairKey{sensor, a, b}, {0u, 0u}});
    }
    return out;
}

TEST_CASE("PairTracker: hand-computed frames, index form") {
    ParallelBackend pb(4);
    for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), pb.backend()}) {
        PairTracker t;
        REQUIRE(t.init_allocate(tracker_config(8, 16)).ok());
        CHECK(t.events().frame == 0);
        std::vector<uint32_t> cat = {1, 1, 1, 1, kSensor, 1, 1, 1};
        // Frame 1: {0,1}, {2,3}, sensor {1,4} (given as {4,1}: one pair either way).
        std::vector<hashgrid::Pair> f1 = {{2, 3}, {4, 1}, {0, 1}};
        REQUIRE(t.update(ok_result(f1.size()), f1.data(), backend, cat.data()).ok());
        PairEvents e = t.events();
        CHECK(e.frame == 1);
        CHECK(events_of(e.begin) == std::vector<Event>{{0, 0, 1, 0}, {2, 0, 3, 0}});
        CHECK(events_of(e.sensor_begin) == std::vector<Event>{{1, 0, 4, 0}});
        CHECK(e.end.count == 0);
        CHECK(e.persist.count == 0);
        // Frame 2: {0,1} stays, {2,3} ends, {1,2} begins, the sensor pair ends, {4,5} begins as a sensor pair.
        std::vector<hashgrid::Pair> f2 = {{1, 2}, {0, 1}, {4, 5}};
        REQUIRE(t.update(ok_result(f2.size()), f2.data(), backend, cat.data()).ok());
        e = t.events();
        CHECK(events_of(e.begin) == std::vector<Event>{{1, 0, 2, 0}});
        CHECK(events_of(e.persist) == std::vector<Event>{{0, 0, 1, 0}});
        CHECK(events_of(e.end) == std::vector<Event>{{2, 0, 3, 0}});
        CHECK(events_of(e.sensor_begin) == std::vector<Event>{{4, 0, 5, 0}});
        CHECK(events_of(e.sensor_end) == std::vector<Event>{{1, 0, 4, 0}});
        CHECK(events_of(e.contacts) == std::vector<Event>{{1, 0, 2, 0}, {0, 0, 1, 0}}); // input order
        CHECK(events_of(e.sensors) == std::vector<Event>{{4, 0, 5, 0}});
        // Frame 3: nothing: every pair ends.
        REQUIRE(t.update(ok_result(0), nullptr, backend, cat.data()).ok());
        e = t.events();
        CHECK(events_of(e.end) == std::vector<Event>{{0, 0, 1, 0}, {1, 0, 2, 0}});
        CHECK(events_of(e.sensor_end) == std::vector<Event>{{4, 0, 5, 0}});
        CHECK(e.begin.count + e.persist.count + e.contacts.count + e.sensors.count == 0);
        // reset(): the next frame begins everything again.
        REQUIRE(t.update(ok_result(f1.size()), f1.data(), backend, cat.data()).ok());
        t.reset();
        CHECK(t.events().frame == 0);
        REQUIRE(t.update(ok_result(f1.size()), f1.data(), backend, cat.data()).ok());
        CHECK(t.events().begin.count == 2);
        CHECK(t.events().end.count == 0);
    }
}

// ---------------------------------------------------------------------------
// An ObjectStore under churn, fed through a BoxGrid, against brute force.

struct StoreWorld {
    uint32_t dims;
    uint32_t max_objects;
    ObjectStore store;
    BoxGrid grid;
    std::vector<ObjectHandle> live;
    std::vector<hashgrid::Pair> pairs;

    StoreWorld(uint32_t d, uint32_t n, uint32_t salt) : dims(d), max_objects(n) {
        ObjectStoreConfig sc;
        sc.dimensions = d;
        sc.max_objects = n;
        sc.handle_salt = salt;
        REQUIRE(store.init_allocate(sc).ok());
        BoxGridConfig gc = hashgrid::box_grid_config_for(sc);
        gc.cell_size = 4.0f;
        gc.max_cell_entries = n * 27;
        gc.max_pairs = uint64_t{n} * n / 2 + 16;
        REQUIRE(grid.init_allocate(gc).ok());
        pairs.resize(gc.max_pairs);
    }

    ObjectBox random_box(Rng& rng) const {
        ObjectBox b;
        for (uint32_t axis = 0; axis < dims; ++axis) {
            b.min[axis] = static_cast<float>(rng.below(64)) * 0.5f;
            b.max[axis] = b.min[axis] + static_cast<float>(1 + rng.below(6)) * 0.5f;
        }
        return b;
    }

    /// One frame of random operations: adds, moves, removes (slots are reused), layer flips.
    void churn(Rng& rng) {
        const uint32_t ops = 1 + rng.below(8);
        for (uint32_t k = 0; k < ops; ++k) {
            const uint32_t what = rng.below(10);
            if ((what < 3 || live.empty()) && store.size() < store.capacity()) {
                const uint32_t category = rng.below(5) == 0 ? kSensor : 1u;
                const hashgrid::ObjectAddResult a = store.add(random_box(rng), category, hashgrid::kAllLayers, 0);
                REQUIRE(a.status.ok());
                live.push_back(a.handle);
            } else if (live.empty()) {
                continue;
            } else if (what < 5) {
                const uint32_t i = rng.below(static_cast<uint32_t>(live.size()));
                REQUIRE(store.remove(live[i]).ok());
                live[i] = live.back();
                live.pop_back();
            } else if (what < 6) {
                const uint32_t i = rng.below(static_cast<uint32_t>(live.size()));
                const uint32_t category = rng.coin() ? kSensor : 1u;
                REQUIRE(store.set_layers(live[i], category, hashgrid::kAllLayers).ok());
            } else {
                const uint32_t i = rng.below(static_cast<uint32_t>(live.size()));
                REQUIRE(store.move(live[i], random_box(rng)).ok());
            }
        }
    }

    /// Brute force over the live objects: overlapping boxes, named by handle, ordered by slot.
    PairSet brute_force() const {
        PairSet s;
        const uint32_t n = store.size();
        for (uint32_t i = 0; i < n; ++i)
            for (uint32_t j = i + 1; j < n; ++j) {
                bool overlap = true;
                for (uint32_t axis = 0; axis < dims; ++axis)
                    overlap = overlap && store.min_coords(axis)[i] <= store.max_coords(axis)[j] &&
                              store.min_coords(axis)[j] <= store.max_coords(axis)[i];
                if (!overlap) continue;
                ObjectHandle a = store.handle_at(i);
                ObjectHandle b = store.handle_at(j);
                if (a.index > b.index) std::swap(a, b);
                const uint32_t sensor = ((store.categories()[i] | store.categories()[j]) & kSensor) != 0;
                s[PairKey{sensor, a.index, b.index}] = {a.generation, b.generation};
            }
        return s;
    }

    /// The grid's pairs in its order, named by handle.
    [[nodiscard]] Ordered as_handles(const PairResult& r) const {
        Ordered out;
        for (uint64_t k = 0; k < r.written; ++k) {
            const uint32_t i = pairs[k].a, j = pairs[k].b;
            ObjectHandle a = store.handle_at(i);
            ObjectHandle b = store.handle_at(j);
            if (a.index > b.index) std::swap(a, b);
            const uint32_t sensor = ((store.categories()[i] | store.categories()[j]) & kSensor) != 0;
            out.push_back({PairKey{sensor, a.index, b.index}, {a.generation, b.generation}});
        }
        return out;
    }

    [[nodiscard]] PairResult find(const hashgrid::ThreadBackend& backend) {
        REQUIRE(grid.rebuild(store, backend).ok());
        const PairResult r = grid.find_pairs(pairs.data(), pairs.size(), backend);
        REQUIRE(r.status.ok());
        return r;
    }
};

/// Rebuilds the world's grid, finds its pairs and feeds them to the tracker
/// (the search runs before the view is taken: argument order is unspecified).
Status update_frame(PairTracker& t, StoreWorld& w, const hashgrid::ThreadBackend& backend) {
    const PairResult r = w.find(backend);
    return t.update(w.store, w.grid.view(), r, w.pairs.data(), backend);
}

/// Runs `frames` churn frames through a tracker, checking every frame against
/// the oracle; returns the hash of every frame's events.
uint64_t run_store_churn(uint32_t dims, uint32_t frames, const hashgrid::ThreadBackend& backend, bool list_pairs) {
    StoreWorld w(dims, 48, dims == 3 ? 0x5a17u : 0u);
    PairTracker t;
    REQUIRE(t.init_allocate(tracker_config(48, 48 * 48 / 2 + 16, list_pairs)).ok());
    Rng rng(0x7ac4e0 + dims);
    PairSet prev;
    Fnv1a h;
    for (uint32_t f = 0; f < frames; ++f) {
        w.churn(rng);
        const PairResult r = w.find(backend);
        const Status s = t.update(w.store, w.grid.view(), r, w.pairs.data(), backend);
        REQUIRE_MESSAGE(s.ok(), s.message);
        const Ordered cur = w.as_handles(r);
        REQUIRE(set_of(cur) == w.brute_force());
        INFO("frame " << f);
        check_events(t.events(), diff(prev, cur), list_pairs);
        hash_events(h, t.events());
        prev = set_of(cur);
    }
    return h.value();
}

TEST_CASE("PairTracker: store churn over thousands of frames matches the diff of brute-force pair sets") {
    ParallelBackend pb(4);
    const uint32_t frames = scaled_count(1500);
    for (uint32_t dims : {2u, 3u}) {
        INFO("dims " << dims);
        const uint64_t serial = run_store_churn(dims, frames, hashgrid::serial_backend(), true);
        CHECK(run_store_churn(dims, frames, pb.backend(), true) == serial);
        CHECK(run_store_churn(dims, frames, reverse_order_backend(3), false) != 0);
    }
}

TEST_CASE("PairTracker: golden hash of store churn events, every backend and thread count") {
    Fnv1a h;
    for (uint32_t dims : {2u, 3u})
        h.u64(run_store_churn(dims, 400, hashgrid::serial_backend(), true));
    if (std::getenv("HASHGRID_PRINT_GOLDEN") != nullptr)
        std::printf("kPairEvents = 0x%016llxull\n", static_cast<unsigned long long>(h.value()));
    CHECK(h.value() == golden::kPairEvents);
    for (uint32_t threads : {1u, 2u, 5u, 16u}) {
        ParallelBackend pb(threads);
        Fnv1a p;
        for (uint32_t dims : {2u, 3u})
            p.u64(run_store_churn(dims, 400, pb.backend(), true));
        CHECK(p.value() == h.value());
    }
}

TEST_CASE("PairTracker: a removed object ends its pairs; a reused slot never persists; a new init renews") {
    StoreWorld w(2, 4, 0);
    PairTracker t;
    REQUIRE(t.init_allocate(tracker_config(4, 16)).ok());
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    ObjectBox box;
    box.max[0] = box.max[1] = 1.0f;
    const ObjectHandle h0 = w.store.add(box, 1, hashgrid::kAllLayers, 0).handle;
    const ObjectHandle h1 = w.store.add(box, 1, hashgrid::kAllLayers, 0).handle;
    REQUIRE(update_frame(t, w, serial).ok());
    CHECK(events_of(t.events().begin) == std::vector<Event>{{h0.index, h0.generation, h1.index, h1.generation}});
    // Remove h1 and fill every free slot so that h1's slot is issued again, overlapping h0.
    REQUIRE(w.store.remove(h1).ok());
    ObjectBox far = box;
    far.min[0] = far.max[0] = 50.0f;
    (void)w.store.add(far, 1, hashgrid::kAllLayers, 0);
    far.min[0] = far.max[0] = 60.0f;
    (void)w.store.add(far, 1, hashgrid::kAllLayers, 0);
    const ObjectHandle again = w.store.add(box, 1, hashgrid::kAllLayers, 0).handle;
    REQUIRE(again.index == h1.index);
    REQUIRE(again.generation != h1.generation);
    REQUIRE(update_frame(t, w, serial).ok());
    PairEvents e = t.events();
    CHECK(e.persist.count == 0);
    CHECK(events_of(e.end) == std::vector<Event>{{h0.index, h0.generation, h1.index, h1.generation}});
    CHECK(events_of(e.begin) == std::vector<Event>{{h0.index, h0.generation, again.index, again.generation}});
    // A store initialised again issues the very same handles: its pairs end and begin, never persist.
    for (uint32_t round = 0; round < 2; ++round) {
        REQUIRE(w.store.init_allocate(w.store.config()).ok());
        const ObjectHandle n0 = w.store.add(box, 1, hashgrid::kAllLayers, 0).handle;
        const ObjectHandle n1 = w.store.add(box, 1, hashgrid::kAllLayers, 0).handle;
        REQUIRE(update_frame(t, w, serial).ok());
        e = t.events();
        CHECK(e.persist.count == 0);
        CHECK(events_of(e.begin) == std::vector<Event>{{n0.index, n0.generation, n1.index, n1.generation}});
        if (round == 1)
            CHECK(events_of(e.end) == std::vector<Event>{{n0.index, n0.generation, n1.index, n1.generation}});
    }
}

// ---------------------------------------------------------------------------
// Particle grids (index form) in both world kinds, and find_pairs_with.

TEST_CASE("PairTracker: moving particles, bounded and unbounded, match the diff of brute-force pairs") {
    ParallelBackend pb(3);
    for (bool bounded : {false, true}) {
        INFO("bounded " << bounded);
        Rng rng(0x9e11 + (bounded ? 1 : 0));
        Scene s = uniform_scene(rng, 3, 400, 0.0f, 8.0f);
        const float r = 0.75f;
        hashgrid::GridConfig c = unbounded_config(3, 1.0f, r, s.size(), 40000);
        if (bounded) c = bounded_config(s, c, 4);
        std::unique_ptr<OwnedGrid> g = make_grid(c);
        std::vector<uint32_t> category(s.size());
        for (uint32_t i = 0; i < s.size(); ++i)
            category[i] = i % 7 == 0 ? kSensor : 1u;
        PairTracker t;
        REQUIRE(t.init_allocate(tracker_config(s.size(), 40000)).ok());
        std::vector<hashgrid::Pair> pairs(40000);
        PairSet prev;
        for (uint32_t f = 0; f < 40; ++f) {
            for (uint32_t i = 0; i < s.size(); ++i) { // small steps inside the world
                s.x[i] = std::clamp(s.x[i] + (rng.unit() - 0.5f) * 0.25f, 0.0f, 8.0f);
                s.y[i] = std::clamp(s.y[i] + (rng.unit() - 0.5f) * 0.25f, 0.0f, 8.0f);
            }
            REQUIRE(g->grid->rebuild(s.spans(), pb.backend()).ok());
            const PairResult res = g->grid->find_pairs(pairs.data(), pairs.size(), pb.backend());
            REQUIRE(res.status.ok());
            REQUIRE(t.update(res, pairs.data(), pb.backend(), category.data()).ok());
            const Ordered cur = index_list(
                std::vector<hashgrid::Pair>(pairs.begin(), pairs.begin() + static_cast<ptrdiff_t>(res.written)),
                category, false);
            REQUIRE(set_of(cur) == set_of(index_list(brute_force_pairs(s, r), category, false)));
            INFO("frame " << f);
            check_events(t.events(), diff(prev, cur), true);
            prev = set_of(cur);
        }
    }
}

TEST_CASE("PairTracker: find_pairs_with, index and store forms, against brute force") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    StoreWorld w(2, 40, 0);
    Rng rng(0x51de);
    PairTracker by_index;
    PairTracker by_store;
    REQUIRE(by_index.init_allocate(tracker_config(40, 40 * 8)).ok());
    REQUIRE(by_store.init_allocate(tracker_config(40, 40 * 8)).ok());
    // The same objects as BoxSpans (their dense order) for the index form.
    BoxGridConfig spans_config = w.grid.config();
    BoxGrid spans_grid;
    REQUIRE(spans_grid.init_allocate(spans_config).ok());
    std::vector<hashgrid::Pair> pairs(40 * 8);
    PairSet prev_index;
    PairSet prev_store;
    for (uint32_t f = 0; f < 200; ++f) {
        // Queries: 8 boxes, ids 0..7, that move a little every frame.
        std::vector<float> q[4];
        for (uint32_t k = 0; k < 8; ++k) {
            const ObjectBox b = w.random_box(rng);
            q[0].push_back(b.min[0]);
            q[1].push_back(b.min[1]);
            q[2].push_back(b.max[0]);
            q[3].push_back(b.max[1]);
        }
        BoxSpans queries{q[0].data(), q[1].data(), nullptr, q[2].data(), q[3].data(), nullptr, nullptr, nullptr, 8};
        w.churn(rng);
        (void)w.find(serial);
        // Store form: b named by handle.
        const PairResult rs = w.grid.find_pairs_with(queries, pairs.data(), pairs.size(), serial);
        REQUIRE(rs.status.ok());
        REQUIRE(by_store.update_with(w.store, w.grid.view(), rs, pairs.data(), serial).ok());
        Ordered cur_store;
        const std::vector<hashgrid::Pair> with(pairs.begin(), pairs.begin() + static_cast<ptrdiff_t>(rs.written));
        for (const hashgrid::Pair& p : with) {
            const ObjectHandle hb = w.store.handle_at(p.b);
            cur_store.push_back(
                {PairKey{(w.store.categories()[p.b] & kSensor) != 0 ? 1u : 0u, p.a, hb.index}, {0u, hb.generation}});
        }
        // Brute force agrees with the grid's pairs.
        uint64_t brute = 0;
        for (uint32_t k = 0; k < 8; ++k)
            for (uint32_t i = 0; i < w.store.size(); ++i)
                brute += q[0][k] <= w.store.max_coords(0)[i] && w.store.min_coords(0)[i] <= q[2][k] &&
                         q[1][k] <= w.store.max_coords(1)[i] && w.store.min_coords(1)[i] <= q[3][k];
        REQUIRE(brute == rs.written);
        INFO("frame " << f);
        check_events(by_store.events(), diff(prev_store, cur_store), true);
        prev_store = set_of(cur_store);
        // Index form on a BoxSpans frame of the same objects: b is the dense index.
        std::vector<uint32_t> category(w.store.categories(), w.store.categories() + w.store.size());
        category.resize(40, 1u); // the index forms read max_ids entries
        REQUIRE(spans_grid.rebuild(w.store.spans(), serial).ok());
        const PairResult ri = spans_grid.find_pairs_with(queries, pairs.data(), pairs.size(), serial);
        REQUIRE(ri.status.ok());
        REQUIRE(by_index.update_with(ri, pairs.data(), serial, category.data()).ok());
        const Ordered cur_index =
            index_list(std::vector<hashgrid::Pair>(pairs.begin(), pairs.begin() + static_cast<ptrdiff_t>(ri.written)),
                       category, true);
        check_events(by_index.events(), diff(prev_index, cur_index), true);
        prev_index = set_of(cur_index);
    }
}

// ---------------------------------------------------------------------------
// Bad input: a defined status, and the next frame's events still right.

TEST_CASE("PairTracker: bad input is refused and the previous frame stays the reference") {
    ContinueOnAssert keep_going;
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    PairTracker never;
    std::vector<hashgrid::Pair> one = {{0, 1}};
    CHECK(never.update(ok_result(1), one.data(), serial).code == StatusCode::invalid_argument);
    CHECK(never.events().frame == 0);
    never.reset();

    CHECK(PairTracker::validate(tracker_config(0, 4)).code == StatusCode::invalid_config);
    CHECK(PairTracker::validate(tracker_config(1u << 31, 4)).code == StatusCode::invalid_config);
    CHECK(PairTracker::validate(tracker_config(4, 0)).code == StatusCode::invalid_config);
    CHECK(PairTracker::memory_requirements(tracker_config(4, 0)).bytes == 0);
    const hashgrid::MemoryRequirements req = PairTracker::memory_requirements(tracker_config(8, 4));
    REQUIRE(req.status.ok());
    PairTracker t;
    std::vector<unsigned char> small(req.bytes - 1 + req.alignment);
    CHECK(t.init(tracker_config(8, 4), small.data(), static_cast<size_t>(req.bytes - 1)).code ==
          StatusCode::memory_too_small);
    CHECK(!t.initialized());
    REQUIRE(t.init_allocate(tracker_config(8, 4)).ok());

    std::vector<hashgrid::Pair> f1 = {{0, 1}, {2, 3}};
    REQUIRE(t.update(ok_result(2), f1.data(), serial).ok());
    const PairSet reference = set_of(index_list(f1, {}, false));

    PairResult failed = ok_result(2);
    failed.status.code = StatusCode::output_too_small;
    std::vector<hashgrid::Pair> too_many = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}};
    std::vector<hashgrid::Pair> out_of_range = {{0, 1}, {3, 8}, {9, 2}};
    std::vector<hashgrid::Pair> self = {{0, 1}, {5, 5}};
    std::vector<hashgrid::Pair> twice = {{4, 5}, {0, 1}, {1, 0}};
    PairResult from_store = ok_result(2);
    from_store.layout = 77;

    Status s = t.update(failed, f1.data(), serial);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(t.events().frame == 0); // empty after a failure
    CHECK(t.update(ok_result(2), nullptr, serial).code == StatusCode::invalid_argument);
    CHECK(t.update(from_store, f1.data(), serial).code == StatusCode::invalid_argument);
    s = t.update(ok_result(5), too_many.data(), serial);
    CHECK(s.code == StatusCode::pair_capacity);
    CHECK(s.needed == 5);
    s = t.update(ok_result(3), out_of_range.data(), serial);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 1);
    CHECK(s.count == 2);
    s = t.update(ok_result(2), self.data(), serial);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 1);
    s = t.update(ok_result(3), twice.data(), serial);
    CHECK(s.code == StatusCode::invalid_argument);
    CHECK(s.index == 2);
    CHECK(s.count == 1);
    CHECK(t.update_with(ok_result(2), f1.data(), serial).code == StatusCode::invalid_argument); // another form
    StoreWorld w(2, 4, 0);
    ObjectBox box;
    box.max[0] = box.max[1] = 1.0f;
    (void)w.store.add(box, 1, hashgrid::kAllLayers, 0);
    const PairResult rs = w.find(serial);
    CHECK(t.update(w.store, w.grid.view(), rs, w.pairs.data(), serial).code == StatusCode::invalid_argument);
    CHECK(t.events().frame == 0);

    // After every refusal the next frame's events are diffed against frame 1.
    std::vector<hashgrid::Pair> f2 = {{2, 3}, {1, 2}};
    REQUIRE(t.update(ok_result(2), f2.data(), serial).ok());
    check_events(t.events(), diff(reference, index_list(f2, {}, false)), true);
    CHECK(t.events().frame == 2);

    // Store form: a store bigger than max_ids, a stale frame, a result of another layout.
    PairTracker small_ids;
    REQUIRE(small_ids.init_allocate(tracker_config(3, 8)).ok());
    CHECK(small_ids.update(w.store, w.grid.view(), rs, w.pairs.data(), serial).code == StatusCode::invalid_argument);
    PairTracker st;
    REQUIRE(st.init_allocate(tracker_config(4, 8)).ok());
    (void)w.store.add(box, 1, hashgrid::kAllLayers, 0); // layout changed since the rebuild
    CHECK(st.update(w.store, w.grid.view(), rs, w.pairs.data(), serial).code == StatusCode::stale_view);
    const PairResult rs2 = w.find(serial);
    CHECK(st.update(w.store, w.grid.view(), rs, w.pairs.data(), serial).code == StatusCode::stale_view);
    REQUIRE(st.update(w.store, w.grid.view(), rs2, w.pairs.data(), serial).ok());
    CHECK(st.events().begin.count == 1);
    // Another store's frame after this one's: refused until reset().
    StoreWorld other(2, 4, 0);
    (void)other.store.add(box, 1, hashgrid::kAllLayers, 0);
    (void)other.store.add(box, 1, hashgrid::kAllLayers, 0);
    const PairResult ro = other.find(serial);
    CHECK(st.update(other.store, other.grid.view(), ro, other.pairs.data(), serial).code ==
          StatusCode::invalid_argument);
    st.reset();
    CHECK(st.update(other.store, other.grid.view(), ro, other.pairs.data(), serial).ok());
}

TEST_CASE("PairTracker: a frame over max_pairs is pair_capacity; the next one diffs against the last taken frame") {
    ParallelBackend pb(4);
    // Enough pairs for several merge chunks and radix chunks.
    const uint32_t n = 3000;
    std::vector<hashgrid::Pair> big;
    for (uint32_t a = 0; a < n; ++a)
        for (uint32_t d = 1; d <= 30; ++d) // rows of about 20: past the linear scan of short rows
            if (a + d < n && (a * 7 + d) % 3 != 0) big.push_back({a, a + d});
    PairTracker t;
    REQUIRE(t.init_allocate(tracker_config(n, static_cast<uint32_t>(big.size()))).ok());
    REQUIRE(t.update(ok_result(big.size()), big.data(), pb.backend()).ok());
    CHECK(t.events().begin.count == big.size());
    std::vector<hashgrid::Pair> over = big;
    over.push_back({0, n - 1});
    const Status s = t.update(ok_result(over.size()), over.data(), pb.backend());
    CHECK(s.code == StatusCode::pair_capacity);
    CHECK(s.needed == over.size());
    // Half of the pairs end, the rest persist, new ones begin, in reversed input order.
    std::vector<hashgrid::Pair> next;
    for (size_t k = 0; k < big.size(); k += 2)
        next.push_back(big[k]);
    for (uint32_t a = 0; a + 35 < n; a += 3)
        next.push_back({a + 35, a});
    std::reverse(next.begin(), next.end());
    REQUIRE(next.size() <= big.size());
    REQUIRE(t.update(ok_result(next.size()), next.data(), pb.backend()).ok());
    check_events(t.events(), diff(set_of(index_list(big, {}, false)), index_list(next, {}, false)), true);
}

} // namespace

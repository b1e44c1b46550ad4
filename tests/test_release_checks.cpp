// SPDX-License-Identifier: MIT
// Programmer errors that cost O(1) per call must come back as statuses in
// every build, Release included: handle_at out of range, a store's
// coordinate arrays asked for an axis that does not exist, every call before
// a successful init, null spans and null outputs, forged neighbour-list pairs,
// an invalid job-system config. Failed assertions are counted and execution
// continues (as in a build without asserts). CTest runs this file twice:
// against the normal core (asserts on: each check also reaches the hook) and,
// as test_release_checks_release, against a core built without
// HASHGRID_ENABLE_ASSERTS, where the same statuses must come back.
#include <doctest/doctest.h>

#include "hashgrid/assert.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/platform/job_system_backend.h"
#include "hashgrid/proximity_index.h"

#include <cstdint>
#include <cstring>
#include <vector>

using hashgrid::ObjectBox;
using hashgrid::ObjectHandle;
using hashgrid::Pair;
using hashgrid::StatusCode;

namespace {

int g_asserts = 0;

bool count_and_continue(const char*, const char*, const char*, int) {
    ++g_asserts;
    return false;
}

/// Failed assertions are counted and execution continues.
struct ContinueOnAssert {
    ContinueOnAssert() {
        g_asserts = 0;
        hashgrid::set_assert_hook(&count_and_continue);
    }
    ~ContinueOnAssert() { hashgrid::set_assert_hook(nullptr); }
    /// Where asserts are compiled in, the provoked checks reached the hook;
    /// without them, nothing did.
    [[nodiscard]] bool fired_as_built() const {
#if defined(HASHGRID_ENABLE_ASSERTS)
        return g_asserts > 0;
#else
        return g_asserts == 0;
#endif
    }
};

ObjectBox unit_box(float at) {
    ObjectBox b;
    for (uint32_t d = 0; d < 3; ++d) {
        b.min[d] = at;
        b.max[d] = at + 1.0f;
    }
    return b;
}

/// Aligned storage for init() on caller memory (the vector over-allocates).
struct Block {
    std::vector<unsigned char> bytes;
    unsigned char* aligned = nullptr;
    explicit Block(const hashgrid::MemoryRequirements& req)
        : bytes(static_cast<size_t>(req.bytes + 2 * req.alignment)) {
        const auto at = reinterpret_cast<uintptr_t>(bytes.data());
        aligned = bytes.data() + (req.alignment - at % req.alignment) % req.alignment;
    }
};

hashgrid::BoxGridConfig box_config(uint32_t dims) {
    hashgrid::BoxGridConfig c;
    c.dimensions = dims;
    c.cell_size = 1.0f;
    c.max_objects = 8;
    c.max_cell_entries = 64;
    c.max_pairs = 64;
    return c;
}

/// Three boxes: 0 and 1 overlap, 2 is apart.
struct ThreeBoxes {
    float lo[3] = {0.0f, 0.5f, 3.0f};
    float hi[3] = {1.0f, 1.5f, 4.0f};
    [[nodiscard]] hashgrid::BoxSpans spans() const { return {lo, lo, lo, hi, hi, hi, nullptr, nullptr, 3}; }
};

uint64_t box_pair_count(hashgrid::BoxGrid& grid) {
    return grid.find_pairs(nullptr, 0, hashgrid::serial_backend()).total;
}

} // namespace

TEST_CASE("ObjectStore::handle_at: an index >= size() gives ObjectHandle{}, never a plausible handle") {
    ContinueOnAssert hook;
    hashgrid::ObjectStore store;
    hashgrid::ObjectStoreConfig config;
    config.max_objects = 32;
    REQUIRE(store.init_allocate(config).ok());
    std::vector<ObjectHandle> live;
    for (uint32_t i = 0; i < 16; ++i)
        live.push_back(store.add(unit_box(static_cast<float>(i)), 1, 1, i).handle);
    for (const uint32_t index : {16u, 17u, 31u, 32u, 99u, 0xfffffffeu, 0xffffffffu}) {
        const ObjectHandle h = store.handle_at(index);
        CHECK(h == ObjectHandle{});
        CHECK(h.index == 0xffffffffu);
        CHECK(h.generation == 0u);
        CHECK_FALSE(store.contains(h));
    }
    CHECK(hook.fired_as_built());
    // In range: the live handles.
    for (uint32_t i = 0; i < 16; ++i)
        CHECK(store.handle_at(store.dense_index(live[i])) == live[i]);
}

TEST_CASE("ObjectStore: coordinate arrays of an axis that does not exist are null") {
    for (const uint32_t dims : {2u, 3u}) {
        hashgrid::ObjectStore store;
        hashgrid::ObjectStoreConfig config;
        config.dimensions = dims;
        config.max_objects = 4;
        REQUIRE(store.init_allocate(config).ok());
        REQUIRE(store.add(unit_box(2.0f), 1, 1, 0).status.ok());
        for (uint32_t axis = 0; axis < dims; ++axis) {
            REQUIRE(store.min_coords(axis) != nullptr);
            CHECK(store.min_coords(axis)[0] == 2.0f);
            CHECK(store.max_coords(axis)[0] == 3.0f);
        }
        for (const uint32_t axis : {dims, 3u, 4u, 1000u, 0xffffffffu}) {
            CHECK(store.min_coords(axis) == nullptr);
            CHECK(store.max_coords(axis) == nullptr);
        }
    }
}

TEST_CASE("ObjectStore: every call before a successful init is invalid_argument or the empty answer") {
    ContinueOnAssert hook;
    hashgrid::ObjectStore store;
    const ObjectHandle forged{0, 1};
    ObjectBox out = unit_box(42.0f);
    auto check_uninitialised = [&] {
        CHECK_FALSE(store.initialized());
        CHECK(store.add(unit_box(0.0f), 1, 1, 0).status.code == StatusCode::invalid_argument);
        CHECK(store.move(forged, unit_box(1.0f)).code == StatusCode::invalid_argument);
        CHECK(store.set_layers(forged, 1, 1).code == StatusCode::invalid_argument);
        CHECK(store.set_user_value(forged, 5).code == StatusCode::invalid_argument);
        CHECK(store.remove(forged).code == StatusCode::invalid_argument);
        CHECK(store.get_box(forged, out).code == StatusCode::invalid_argument);
        CHECK(out.min[0] == 42.0f); // untouched
        CHECK_FALSE(store.contains(forged));
        CHECK(store.dense_index(forged) == hashgrid::kInvalidObjectIndex);
        CHECK(store.handle_at(0) == ObjectHandle{});
        CHECK(store.spans().count == 0);
        CHECK(store.size() == 0);
        CHECK(store.capacity() == 0);
        CHECK(store.min_coords(0) == nullptr);
        store.clear();
    };
    check_uninitialised();
    // Failed first inits keep it uninitialised.
    hashgrid::ObjectStoreConfig bad;
    bad.max_objects = 0;
    CHECK(store.init_allocate(bad).code == StatusCode::invalid_config);
    hashgrid::ObjectStoreConfig config;
    config.max_objects = 4;
    const hashgrid::MemoryRequirements req = hashgrid::ObjectStore::memory_requirements(config);
    REQUIRE(req.status.ok());
    Block block(req);
    CHECK(store.init(config, nullptr, static_cast<size_t>(req.bytes)).code == StatusCode::memory_too_small);
    CHECK(store.init(config, block.aligned + 8, static_cast<size_t>(req.bytes)).code == StatusCode::memory_misaligned);
    CHECK(store.init(config, block.aligned, static_cast<size_t>(req.bytes) - 1).code == StatusCode::memory_too_small);
    check_uninitialised();
    CHECK(hook.fired_as_built());
}

TEST_CASE("BoxGrid::rebuild: every null span the dimensions need is invalid_argument; the frame is kept") {
    ContinueOnAssert hook;
    for (const uint32_t dims : {2u, 3u}) {
        INFO("dims ", dims);
        hashgrid::BoxGrid grid;
        REQUIRE(grid.init_allocate(box_config(dims)).ok());
        const ThreeBoxes boxes;
        REQUIRE(grid.rebuild(boxes.spans(), hashgrid::serial_backend()).ok());
        REQUIRE(box_pair_count(grid) == 1);
        for (int missing = 0; missing < 6; ++missing) {
            INFO("null span ", missing);
            hashgrid::BoxSpans in = boxes.spans();
            const float** spans[6] = {&in.min_x, &in.min_y, &in.min_z, &in.max_x, &in.max_y, &in.max_z};
            *spans[missing] = nullptr;
            const bool needed = dims == 3 || (missing != 2 && missing != 5);
            const hashgrid::Status s = grid.rebuild(in, hashgrid::serial_backend());
            if (needed) {
                CHECK(s.code == StatusCode::invalid_argument);
            } else {
                CHECK(s.ok()); // z is not read in 2D
            }
            CHECK(grid.object_count() == 3);
            CHECK(box_pair_count(grid) == 1);
        }
    }
    CHECK(hook.fired_as_built());
}

TEST_CASE("Grid and BoxGrid before a successful init: statuses and empty views") {
    ContinueOnAssert hook;
    const float x[2] = {0.0f, 0.5f};
    hashgrid::Grid grid;
    CHECK(grid.rebuild({x, x, x, nullptr, 2}, hashgrid::serial_backend()).code == StatusCode::not_built);
    Pair pairs[4];
    CHECK(grid.find_pairs(pairs, 4, hashgrid::serial_backend()).status.code == StatusCode::not_built);
    uint32_t offsets[3] = {9, 9, 9};
    CHECK(grid.neighbor_lists(pairs, 0, offsets, 3, nullptr, 0, hashgrid::serial_backend()).code ==
          StatusCode::not_built);
    CHECK(offsets[0] == 9);
    CHECK(grid.particle_count() == 0);
    CHECK(grid.cells().start == nullptr);

    hashgrid::BoxGrid boxes;
    const ThreeBoxes b;
    CHECK(boxes.rebuild(b.spans(), hashgrid::serial_backend()).code == StatusCode::not_built);
    CHECK(boxes.find_pairs(pairs, 4, hashgrid::serial_backend()).status.code == StatusCode::not_built);
    CHECK(boxes.find_pairs_with(b.spans(), pairs, 4, hashgrid::serial_backend()).status.code == StatusCode::not_built);
    CHECK(boxes.object_count() == 0);
    CHECK(boxes.entry_count() == 0);
    CHECK(boxes.view().object_count == 0);
    CHECK(boxes.view().cell_key == nullptr);
    CHECK(hook.fired_as_built());
}

TEST_CASE("Grid::neighbor_lists: zero pairs with null indices is ok; a forged pair is invalid_argument") {
    ContinueOnAssert hook;
    hashgrid::GridConfig c;
    c.cell_size = 1.0f;
    c.interaction_distance = 1.0f;
    c.max_particles = 8;
    c.max_cells = 8;
    c.max_pairs = 64;
    hashgrid::Grid grid;
    REQUIRE(grid.init_allocate(c).ok());
    const float x[4] = {0.0f, 0.5f, 10.0f, 20.0f}; // one pair {0, 1}
    const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    REQUIRE(grid.rebuild({x, zero, zero, nullptr, 4}, hashgrid::serial_backend()).ok());
    Pair pairs[4];
    REQUIRE(grid.find_pairs(pairs, 4, hashgrid::serial_backend()).total == 1);

    uint32_t offsets[5] = {7, 7, 7, 7, 7};
    const hashgrid::Status empty = grid.neighbor_lists(nullptr, 0, offsets, 5, nullptr, 0, hashgrid::serial_backend());
    CHECK(empty.ok());
    CHECK(empty.needed == 0);
    for (uint32_t v : offsets)
        CHECK(v == 0);
    CHECK(g_asserts == 0); // a valid call

    const Pair forged[] = {{0, 4}, {2, 2}, {3, 1}, {0, 0xffffffffu}};
    for (const Pair bad : forged) {
        const Pair list[2] = {pairs[0], bad};
        uint32_t offs[5] = {7, 7, 7, 7, 7};
        uint32_t idx[4] = {7, 7, 7, 7};
        const hashgrid::Status s = grid.neighbor_lists(list, 2, offs, 5, idx, 4, hashgrid::serial_backend());
        CHECK(s.code == StatusCode::invalid_argument);
        CHECK(s.index == 1);
        for (uint32_t v : offs)
            CHECK(v == 7);
        for (uint32_t v : idx)
            CHECK(v == 7);
    }
    // Null outputs with a capacity: refused before anything is written.
    uint32_t offs[5] = {7, 7, 7, 7, 7};
    uint32_t idx[2] = {7, 7};
    CHECK(grid.neighbor_lists(pairs, 1, nullptr, 5, idx, 2, hashgrid::serial_backend()).code ==
          StatusCode::invalid_argument);
    CHECK(grid.neighbor_lists(pairs, 1, offs, 5, nullptr, 2, hashgrid::serial_backend()).code ==
          StatusCode::invalid_argument);
    for (uint32_t v : offs)
        CHECK(v == 7);
    CHECK(idx[0] == 7);
    CHECK(hook.fired_as_built());
    // The grid is unharmed: the real lists.
    REQUIRE(grid.neighbor_lists(pairs, 1, offs, 5, idx, 2, hashgrid::serial_backend()).ok());
    CHECK(offs[1] - offs[0] == 1);
    CHECK(idx[offs[0]] == 1);
    CHECK(idx[offs[1]] == 0);
}

TEST_CASE("ProximityIndex: before init, and a null output, are invalid_argument before anything changes") {
    ContinueOnAssert hook;
    hashgrid::ProximityIndex index;
    const ObjectHandle forged{0, 1};
    CHECK(index.set_client_layers(forged, 1, 1).code == StatusCode::invalid_argument);
    CHECK(index.remove_client(forged).code == StatusCode::invalid_argument);
    const float at[3] = {0.0f, 0.0f, 0.0f};
    CHECK(index.update_client(forged, at, at).code == StatusCode::invalid_argument);
    CHECK(index.client_count() == 0);
    CHECK(index.handle_at(0) == ObjectHandle{});

    hashgrid::ProximityIndexConfig config;
    config.grid = box_config(2);
    REQUIRE(index.init_allocate(config).ok());
    const float size[3] = {1.0f, 1.0f, 0.0f};
    REQUIRE(index.create_client(at, size).status.ok());
    REQUIRE(index.dirty());
    // A null output with a capacity is refused before the dirty index is rebuilt.
    CHECK(index.find_near(at, size, ~0u, nullptr, 4).status.code == StatusCode::invalid_argument);
    CHECK(index.find_near_radius(at, 1.0f, ~0u, nullptr, 4).status.code == StatusCode::invalid_argument);
    CHECK(index.find_pairs(nullptr, 4, hashgrid::serial_backend()).status.code == StatusCode::invalid_argument);
    CHECK(index.dirty());
    CHECK(index.grid().object_count() == 0); // never rebuilt
    CHECK(hook.fired_as_built());
    ObjectHandle out[4];
    const hashgrid::QueryResult r = index.find_near(at, size, ~0u, out, 4);
    CHECK(r.status.ok());
    CHECK(r.total == 1);
    CHECK_FALSE(index.dirty());
}

namespace {

struct Calls {
    int enqueue = 0;
    int finish = 0;
};

void* counting_enqueue(hashgrid::platform::JobTaskFn task, uint32_t copies, void* task_context, void* user) {
    ++static_cast<Calls*>(user)->enqueue;
    for (uint32_t i = 0; i < copies; ++i)
        task(task_context);
    return nullptr;
}

void counting_finish(void*, void* user) { ++static_cast<Calls*>(user)->finish; }

} // namespace

TEST_CASE("JobSystemBackend: an invalid config is a status; its loops run serially on the caller") {
    using hashgrid::platform::JobSystemBackend;
    using hashgrid::platform::JobSystemConfig;
    Calls calls;
    JobSystemConfig good;
    good.enqueue = &counting_enqueue;
    good.finish = &counting_finish;
    good.worker_count = 4;
    good.user_context = &calls;
    good.inline_chunk_limit = 0;
    CHECK(JobSystemBackend::validate(good).ok());

    JobSystemConfig no_enqueue = good, no_finish = good, no_workers = good;
    no_enqueue.enqueue = nullptr;
    no_finish.finish = nullptr;
    no_workers.worker_count = 0;
    for (const JobSystemConfig& config : {no_enqueue, no_finish, no_workers}) {
        ContinueOnAssert hook;
        CHECK(JobSystemBackend::validate(config).code == StatusCode::invalid_argument);
        JobSystemBackend adapter(config);
        CHECK(adapter.status().code == StatusCode::invalid_argument);
        CHECK(hook.fired_as_built());
        const hashgrid::ThreadBackend b = adapter.backend();
        CHECK((b.parallel_for == nullptr));
        CHECK(b.worker_count == 1);
        std::vector<uint32_t> seen;
        hashgrid::parallel_chunks(b, 100, 30, [&](uint32_t begin, uint32_t end, uint32_t worker) {
            seen.push_back(begin);
            seen.push_back(end);
            seen.push_back(worker);
        });
        const std::vector<uint32_t> expected = {0, 30, 0, 30, 60, 0, 60, 90, 0, 90, 100, 0};
        CHECK(seen == expected);
        CHECK(adapter.enqueued_loops() == 0);
    }
    CHECK(calls.enqueue == 0);
    CHECK(calls.finish == 0);

    // A valid adapter asked for a loop with grain 0 or no chunk function (core
    // never does) runs nothing instead of dividing by zero or calling null.
    JobSystemBackend adapter(good);
    REQUIRE(adapter.status().ok());
    const hashgrid::ThreadBackend b = adapter.backend();
    REQUIRE((b.parallel_for != nullptr));
    ContinueOnAssert hook;
    int runs = 0;
    b.parallel_for(
        b.state, 10, 0, [](void* context, uint32_t, uint32_t, uint32_t) { ++*static_cast<int*>(context); }, &runs);
    b.parallel_for(b.state, 10, 2, nullptr, &runs);
    CHECK(runs == 0);
    CHECK(calls.enqueue == 0);
    CHECK(hook.fired_as_built());
}

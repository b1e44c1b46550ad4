// SPDX-License-Identifier: MIT
// Object lifetime: a failed init or init_allocate leaves every kind of object
// exactly as it was (never pointers into freed memory), use before a
// successful init is a status, and neighbor_lists' argument checks hold in
// every build. Oracles: the object's own answers before the failed re-init
// (which the first frame checks against brute force).
#include <doctest/doctest.h>

#include "../core/src/objects/objects_internal.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/platform/assert_hook.h"
#include "hashgrid/proximity_index.h"
#include "hashgrid_support/box_scene.h"
#include "test_support.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

using namespace hashgrid_test;
using hashgrid::StatusCode;

// The allocation failures below ask for terabytes on purpose. AddressSanitizer
// aborts on such a request unless told to return null like malloc does (the
// asan-ubsan preset's ASAN_OPTIONS add to these defaults, they do not replace them).
#if defined(__SANITIZE_ADDRESS__)
#define HASHGRID_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HASHGRID_TEST_ASAN 1
#endif
#endif
#if defined(HASHGRID_TEST_ASAN)
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif
// ThreadSanitizer's allocator aborts on them the same way (the tsan preset).
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
#endif

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define HASHGRID_TEST_MAKE_DEFINED(p, n) (void)VALGRIND_MAKE_MEM_DEFINED(p, n)
#else
#define HASHGRID_TEST_MAKE_DEFINED(p, n) ((void)(p), (void)(n))
#endif

namespace {

/// A valid config whose block cannot be allocated on any machine we run on
/// (max_pairs just below the documented 2^40 limit: 8 TiB of pair pool).
hashgrid::GridConfig unallocatable_grid_config(hashgrid::GridConfig c) {
    c.max_pairs = (uint64_t{1} << 40) - 1;
    return c;
}

/// The status of an init_allocate whose block cannot exist: the allocation
/// fails (memory_too_small), or, on a 32-bit target, memory_requirements
/// already refuses a block beyond SIZE_MAX (invalid_config). Either way the
/// object must stay exactly as it was.
bool unallocatable(StatusCode code) {
    return code == StatusCode::memory_too_small ||
           (sizeof(size_t) < sizeof(uint64_t) && code == StatusCode::invalid_config);
}

std::vector<Pair> all_pairs(hashgrid::Grid& grid) {
    std::vector<Pair> out(static_cast<size_t>(grid.config().max_pairs));
    const hashgrid::PairResult r = grid.find_pairs(out.data(), out.size(), hashgrid::serial_backend());
    REQUIRE(r.status.ok());
    out.resize(static_cast<size_t>(r.written));
    return out;
}

/// Every failing re-init of a grid that holds a frame: the grid must answer
/// exactly as before, and a valid re-init afterwards must work.
void check_grid_survives_failed_reinit(bool allocate_first) {
    Rng rng(71);
    const Scene s = uniform_scene(rng, 3, 600, 0.0f, 8.0f);
    const hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, 600, 40000);
    hashgrid::Grid grid;
    std::vector<unsigned char> caller_block;
    void* caller_memory = nullptr;
    if (allocate_first) {
        REQUIRE(grid.init_allocate(config).ok());
    } else {
        const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
        caller_block.resize(static_cast<size_t>(req.bytes + req.alignment));
        caller_memory =
            caller_block.data() +
            (req.alignment - reinterpret_cast<uintptr_t>(caller_block.data()) % req.alignment) % req.alignment;
        REQUIRE(grid.init(config, caller_memory, static_cast<size_t>(req.bytes)).ok());
    }
    REQUIRE(grid.rebuild(s.spans(), hashgrid::serial_backend()).ok());
    const std::vector<Pair> before = all_pairs(grid);
    const std::vector<Pair> got = as_set(before.data(), before.size());
    REQUIRE(diff_pairs(brute_force_pairs(s, 1.0f), got.data(), got.size()) == "");
    const uint64_t order_hash = hash_order(grid);

    // 1. A valid config whose allocation fails.
    const hashgrid::Status big = grid.init_allocate(unallocatable_grid_config(config));
    CHECK(unallocatable(big.code));
    // 2. An invalid config.
    hashgrid::GridConfig bad = config;
    bad.cell_size = -1.0f;
    CHECK(grid.init_allocate(bad).code == StatusCode::invalid_config);
    CHECK(grid.init(bad, caller_memory, 1 << 20).code == StatusCode::invalid_config);
    // 3. Caller memory too small, null or misaligned.
    const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
    std::vector<unsigned char> other(static_cast<size_t>(req.bytes + 2 * req.alignment));
    unsigned char* aligned =
        other.data() + (req.alignment - reinterpret_cast<uintptr_t>(other.data()) % req.alignment) % req.alignment;
    CHECK(grid.init(config, aligned, static_cast<size_t>(req.bytes - 1)).code == StatusCode::memory_too_small);
    CHECK(grid.init(config, nullptr, static_cast<size_t>(req.bytes)).code == StatusCode::memory_too_small);
    CHECK(grid.init(config, aligned + 4, static_cast<size_t>(req.bytes)).code == StatusCode::memory_misaligned);

    // Exactly as it was: same frame, same answers.
    CHECK(grid.initialized());
    CHECK(grid.particle_count() == s.size());
    CHECK(grid.config().max_pairs == config.max_pairs);
    CHECK(hash_order(grid) == order_hash);
    const std::vector<Pair> after = all_pairs(grid);
    CHECK(after.size() == before.size());
    CHECK(hash_pairs(after.data(), after.size()) == hash_pairs(before.data(), before.size()));
    // And the next frame works on the same block.
    REQUIRE(grid.rebuild(s.spans(), hashgrid::serial_backend()).ok());
    const std::vector<Pair> again = all_pairs(grid);
    CHECK(hash_pairs(again.data(), again.size()) == hash_pairs(before.data(), before.size()));

    // A successful re-init (caller memory, then allocated) starts empty and works.
    REQUIRE(grid.init(config, aligned, static_cast<size_t>(req.bytes)).ok());
    CHECK(grid.particle_count() == 0);
    CHECK(grid.find_pairs(nullptr, 0, hashgrid::serial_backend()).status.code == StatusCode::not_built);
    REQUIRE(grid.init_allocate(config).ok());
    REQUIRE(grid.rebuild(s.spans(), hashgrid::serial_backend()).ok());
    const std::vector<Pair> fresh = all_pairs(grid);
    CHECK(hash_pairs(fresh.data(), fresh.size()) == hash_pairs(before.data(), before.size()));
}

hashgrid::BoxGridConfig box_config(uint32_t n) {
    hashgrid::BoxGridConfig c;
    c.dimensions = 3;
    c.cell_size = 2.0f;
    c.max_objects = n;
    c.max_cell_entries = 16 * n;
    c.max_pairs = 64ull * n;
    return c;
}

/// Valid, but far more than any test machine can allocate (hundreds of GB):
/// the largest object and entry counts the config allows.
hashgrid::BoxGridConfig unallocatable_box_config(hashgrid::BoxGridConfig c) {
    c.max_objects = (1u << 31) - 1;
    c.max_cell_entries = (1u << 31) - 1;
    c.max_pairs = (uint64_t{1} << 40) - 1;
    return c;
}

using Boxes = hashgrid_support::BoxScene;

Boxes random_boxes(uint32_t n) {
    Rng rng(5);
    Boxes b;
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t d = 0; d < 3; ++d) {
            const float at = rng.uniform(0.0f, 20.0f);
            const float edge = rng.uniform(0.1f, 3.0f);
            b.lo[d].push_back(at);
            b.hi[d].push_back(at + edge);
        }
    return b;
}

std::vector<Pair> box_brute_force(const Boxes& b) {
    std::vector<Pair> out;
    const auto n = static_cast<uint32_t>(b.lo[0].size());
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = i + 1; j < n; ++j) {
            bool overlap = true;
            for (uint32_t d = 0; d < 3; ++d)
                overlap = overlap && b.lo[d][i] <= b.hi[d][j] && b.lo[d][j] <= b.hi[d][i];
            if (overlap) out.push_back({i, j});
        }
    return out;
}

std::vector<Pair> box_pairs(hashgrid::BoxGrid& grid) {
    std::vector<Pair> out(static_cast<size_t>(grid.config().max_pairs));
    const hashgrid::PairResult r = grid.find_pairs(out.data(), out.size(), hashgrid::serial_backend());
    REQUIRE(r.status.ok());
    out.resize(static_cast<size_t>(r.written));
    return out;
}

} // namespace

TEST_CASE("Grid: a failed re-init after init_allocate leaves the grid exactly as it was") {
    check_grid_survives_failed_reinit(true);
}

TEST_CASE("Grid: a failed re-init after init on caller memory leaves the grid exactly as it was") {
    check_grid_survives_failed_reinit(false);
}

TEST_CASE("Grid: use before init is a status, never a null dereference") {
    hashgrid::Grid grid;
    Rng rng(3);
    const Scene s = uniform_scene(rng, 3, 10, 0.0f, 2.0f);
    hashgrid::platform::ScopedCountingAssertHook asserts; // rebuild asserts "before a successful init"
    CHECK(grid.rebuild(s.spans(), hashgrid::serial_backend()).code == StatusCode::not_built);
    CHECK(grid.find_pairs(nullptr, 0, hashgrid::serial_backend()).status.code == StatusCode::not_built);
    uint32_t offsets[1];
    CHECK(grid.neighbor_lists(nullptr, 0, offsets, 1, nullptr, 0, hashgrid::serial_backend()).code ==
          StatusCode::not_built);
    CHECK(grid.cells().cell_count == 0);
    CHECK(grid.particle_count() == 0);
    // A failed first init keeps it uninitialised.
    CHECK(unallocatable(grid.init_allocate(unallocatable_grid_config(unbounded_config(3, 1.0f, 1.0f, 10, 10))).code));
    CHECK_FALSE(grid.initialized());
    CHECK(grid.rebuild(s.spans(), hashgrid::serial_backend()).code == StatusCode::not_built);
}

TEST_CASE("BoxGrid: a failed re-init leaves the grid exactly as it was") {
    const Boxes b = random_boxes(300);
    const hashgrid::BoxGridConfig config = box_config(300);
    hashgrid::BoxGrid grid;
    REQUIRE(grid.init_allocate(config).ok());
    REQUIRE(grid.rebuild(b.spans(), hashgrid::serial_backend()).ok());
    const std::vector<Pair> before = box_pairs(grid);
    const std::vector<Pair> got = as_set(before.data(), before.size());
    REQUIRE(diff_pairs(box_brute_force(b), got.data(), got.size()) == "");

    CHECK(unallocatable(grid.init_allocate(unallocatable_box_config(config)).code));
    hashgrid::BoxGridConfig bad = config;
    bad.max_objects = 0;
    CHECK(grid.init_allocate(bad).code == StatusCode::invalid_config);
    const hashgrid::MemoryRequirements req = hashgrid::BoxGrid::memory_requirements(config);
    std::vector<unsigned char> small(static_cast<size_t>(req.bytes));
    CHECK(grid.init(config, small.data(), small.size() - 1).code == StatusCode::memory_too_small);

    CHECK(grid.initialized());
    CHECK(grid.object_count() == 300);
    const std::vector<Pair> after = box_pairs(grid);
    CHECK(hash_pairs(after.data(), after.size()) == hash_pairs(before.data(), before.size()));
    REQUIRE(grid.rebuild(b.spans(), hashgrid::serial_backend()).ok());
    const std::vector<Pair> again = box_pairs(grid);
    CHECK(hash_pairs(again.data(), again.size()) == hash_pairs(before.data(), before.size()));
}

TEST_CASE("ObjectStore: a failed re-init keeps every object and handle") {
    hashgrid::ObjectStoreConfig config;
    config.dimensions = 3;
    config.max_objects = 64;
    hashgrid::ObjectStore store;
    REQUIRE(store.init_allocate(config).ok());
    std::vector<hashgrid::ObjectHandle> handles;
    for (uint32_t i = 0; i < 16; ++i) {
        hashgrid::ObjectBox box;
        for (uint32_t d = 0; d < 3; ++d) {
            box.min[d] = static_cast<float>(i);
            box.max[d] = static_cast<float>(i) + 0.5f;
        }
        const hashgrid::ObjectAddResult a = store.add(box, 1, 1, 1000 + i);
        REQUIRE(a.status.ok());
        handles.push_back(a.handle);
    }
    hashgrid::ObjectStoreConfig big = config;
    big.max_objects = (1u << 31) - 1; // valid; ~120 GB, more than any test machine can allocate
    const hashgrid::Status s = store.init_allocate(big);
    if (s.ok()) {
        MESSAGE("the 2^31 - 1 object store was allocated on this machine: allocation failure not exercised");
        REQUIRE(store.init_allocate(config).ok()); // give the memory back; the store is empty now
        return;
    }
    CHECK(unallocatable(s.code));
    hashgrid::ObjectStoreConfig bad = config;
    bad.dimensions = 4;
    CHECK(store.init_allocate(bad).code == StatusCode::invalid_config);

    CHECK(store.initialized());
    CHECK(store.size() == 16);
    for (uint32_t i = 0; i < 16; ++i) {
        CHECK(store.contains(handles[i]));
        CHECK(store.handle_at(store.dense_index(handles[i])) == handles[i]);
        hashgrid::ObjectBox box;
        REQUIRE(store.get_box(handles[i], box).ok());
        CHECK(box.min[0] == static_cast<float>(i));
        CHECK(store.user_values()[store.dense_index(handles[i])] == 1000 + i);
    }
    // The store still takes new objects in its old block.
    hashgrid::ObjectBox box;
    const hashgrid::ObjectAddResult a = store.add(box, 1, 1, 7);
    CHECK(a.status.ok());
    CHECK(store.size() == 17);
}

TEST_CASE("ObjectStore: use before init and handle_at out of range are answered in every build") {
    hashgrid::platform::ScopedCountingAssertHook asserts; // the checks also assert where asserts are on
    hashgrid::ObjectStore store;
    hashgrid::ObjectBox box;
    CHECK(store.add(box, 1, 1, 0).status.code == StatusCode::invalid_argument);
    CHECK_FALSE(store.contains(hashgrid::ObjectHandle{0, 1}));
    CHECK(store.handle_at(0) == hashgrid::ObjectHandle{});
    CHECK(store.spans().count == 0);
    store.clear();

    hashgrid::ObjectStoreConfig config;
    config.max_objects = 16;
    REQUIRE(store.init_allocate(config).ok());
    for (uint32_t i = 0; i < 16; ++i)
        REQUIRE(store.add(box, 1, 1, i).status.ok());
    const hashgrid::ObjectHandle forged = store.handle_at(99);
    CHECK(forged == hashgrid::ObjectHandle{});
    CHECK_FALSE(store.contains(forged));
    CHECK(store.remove(forged).code == StatusCode::invalid_handle);
    CHECK(store.handle_at(16) == hashgrid::ObjectHandle{});
    CHECK(store.size() == 16);
}

TEST_CASE("ProximityIndex: a failed re-init keeps the clients; use before init is a status") {
    hashgrid::ProximityIndexConfig config;
    config.grid = box_config(32);
    config.grid.dimensions = 2;
    hashgrid::ProximityIndex index;
    {
        hashgrid::platform::ScopedCountingAssertHook asserts;
        const float at[3] = {1.0f, 1.0f, 0.0f};
        const float size[3] = {1.0f, 1.0f, 0.0f};
        CHECK(index.create_client(at, size).status.code == StatusCode::invalid_argument);
        hashgrid::ObjectHandle out[4];
        CHECK(index.find_near(at, size, ~0u, out, 4).status.code == StatusCode::invalid_argument);
        CHECK(index.find_near_radius(at, 2.0f, ~0u, out, 4).status.code == StatusCode::invalid_argument);
        CHECK(index.find_pairs(nullptr, 0, hashgrid::serial_backend()).status.code == StatusCode::invalid_argument);
        CHECK(index.update_index(hashgrid::serial_backend()).code == StatusCode::invalid_argument);
        index.clear();
    }
    REQUIRE(index.init_allocate(config).ok());
    std::vector<hashgrid::ObjectHandle> clients;
    for (uint32_t i = 0; i < 10; ++i) {
        const float at[3] = {static_cast<float>(i), 0.0f, 0.0f};
        const float size[3] = {1.5f, 1.0f, 0.0f};
        const hashgrid::ObjectAddResult c = index.create_client(at, size);
        REQUIRE(c.status.ok());
        clients.push_back(c.handle);
    }
    Pair pairs[64];
    const hashgrid::PairResult before = index.find_pairs(pairs, 64, hashgrid::serial_backend());
    REQUIRE(before.status.ok());
    CHECK(before.total == 9); // neighbours 1 apart overlap (edge 1.5); 2 apart do not
    const uint64_t before_hash = hash_pairs(pairs, before.written);

    hashgrid::ProximityIndexConfig big = config;
    big.grid = unallocatable_box_config(config.grid);
    CHECK(unallocatable(index.init_allocate(big).code));
    CHECK(index.client_count() == 10);
    for (const hashgrid::ObjectHandle& h : clients)
        CHECK(index.contains(h));
    const hashgrid::PairResult after = index.find_pairs(pairs, 64, hashgrid::serial_backend());
    REQUIRE(after.status.ok());
    CHECK(hash_pairs(pairs, after.written) == before_hash);
    const float at[3] = {4.0f, 0.0f, 0.0f};
    hashgrid::ObjectHandle out[8];
    const hashgrid::QueryResult nearby = index.find_near_radius(at, 0.5f, ~0u, out, 8);
    CHECK(nearby.status.ok());
    CHECK(nearby.total == 3); // clients 3, 4, 5 reach within 0.5 of x = 4 (half edge 0.75)
    {
        hashgrid::platform::ScopedCountingAssertHook asserts;
        CHECK(index.find_near_radius(at, 0.5f, ~0u, nullptr, 8).status.code == StatusCode::invalid_argument);
    }
}

TEST_CASE("neighbor_lists: zero pairs with null indices and capacity 0 is ok") {
    Rng rng(9);
    const Scene s = uniform_scene(rng, 3, 50, 0.0f, 1000.0f); // far apart: no pairs
    auto g = make_grid(unbounded_config(3, 1.0f, 1.0f, 50, 100));
    REQUIRE(g->init_status.ok());
    REQUIRE(g->grid->rebuild(s.spans(), hashgrid::serial_backend()).ok());
    REQUIRE(g->grid->find_pairs(nullptr, 0, hashgrid::serial_backend()).total == 0);
    std::vector<uint32_t> offsets(51, 77);
    const hashgrid::Status st =
        g->grid->neighbor_lists(nullptr, 0, offsets.data(), offsets.size(), nullptr, 0, hashgrid::serial_backend());
    CHECK(st.ok());
    CHECK(st.needed == 0);
    for (uint32_t v : offsets)
        CHECK(v == 0);
}

TEST_CASE("neighbor_lists: a pair outside {a < b < particle_count()} is invalid_argument, nothing written") {
    Rng rng(10);
    const Scene s = uniform_scene(rng, 3, 40, 0.0f, 3.0f);
    auto g = make_grid(unbounded_config(3, 1.0f, 1.0f, 40, 2000));
    REQUIRE(g->init_status.ok());
    REQUIRE(g->grid->rebuild(s.spans(), hashgrid::serial_backend()).ok());
    std::vector<Pair> pairs(2000);
    const hashgrid::PairResult r = g->grid->find_pairs(pairs.data(), pairs.size(), hashgrid::serial_backend());
    REQUIRE(r.status.ok());
    REQUIRE(r.written > 6);
    pairs.resize(static_cast<size_t>(r.written));

    const Pair bad_pairs[] = {{0, 40}, {5, 1u << 30}, {3, 3}, {7, 2}};
    ParallelBackend parallel(3);
    for (const Pair bad : bad_pairs)
        for (const size_t at : {size_t{0}, size_t{5}, pairs.size() - 1}) {
            std::vector<Pair> broken = pairs;
            broken[at] = bad;
            broken[pairs.size() - 1 - at / 2] = bad; // a second one later: the lowest is reported
            std::vector<uint32_t> offsets(41, 0xdeadbeef);
            std::vector<uint32_t> indices(2 * broken.size(), 0xdeadbeef);
            for (const hashgrid::ThreadBackend& b : {hashgrid::serial_backend(), parallel.backend()}) {
                hashgrid::platform::ScopedCountingAssertHook asserts;
                const hashgrid::Status st = g->grid->neighbor_lists(broken.data(), broken.size(), offsets.data(),
                                                                    offsets.size(), indices.data(), indices.size(), b);
                CHECK(st.code == StatusCode::invalid_argument);
                CHECK(st.index == std::min(at, pairs.size() - 1 - at / 2));
                for (uint32_t v : offsets)
                    CHECK(v == 0xdeadbeef);
                for (uint32_t v : indices)
                    CHECK(v == 0xdeadbeef);
            }
        }
    hashgrid::platform::ScopedCountingAssertHook asserts;
    std::vector<uint32_t> offsets(41);
    CHECK(g->grid->neighbor_lists(nullptr, 3, offsets.data(), offsets.size(), nullptr, 0, hashgrid::serial_backend())
              .code == StatusCode::invalid_argument);
}

namespace {

/// An aligned block for init() on caller memory, with room for a misaligned
/// start (aligned + 8) of the same size.
struct CallerBlock {
    hashgrid::MemoryRequirements requirements;
    std::vector<unsigned char> storage;
    unsigned char* aligned = nullptr;
    size_t bytes = 0;
    explicit CallerBlock(const hashgrid::MemoryRequirements& req)
        : requirements(req), storage(static_cast<size_t>(req.bytes + 2 * req.alignment)),
          bytes(static_cast<size_t>(req.bytes)) {
        aligned = storage.data() +
                  (req.alignment - reinterpret_cast<uintptr_t>(storage.data()) % req.alignment) % req.alignment;
    }
    /// The block's bytes. Struct padding that init copied in is undefined to
    /// valgrind's memcheck; it is not written by anything under test, so it is
    /// declared defined before the copy (the comparison then reads it).
    [[nodiscard]] std::vector<unsigned char> contents() const {
        HASHGRID_TEST_MAKE_DEFINED(aligned, bytes);
        return {aligned, aligned + bytes};
    }
};

/// Every failing init on caller memory: null, misaligned, too small (another
/// block and the block in use), an invalid config. Each must return its status
/// without writing a byte of the block the object lives in.
template <typename Object, typename Config>
void fail_caller_inits(Object& object, const Config& config, const Config& bad, CallerBlock& in_use) {
    CallerBlock other(in_use.requirements);
    const std::vector<unsigned char> before = in_use.contents();
    CHECK(object.init(config, nullptr, other.bytes).code == StatusCode::memory_too_small);
    CHECK(object.init(config, other.aligned + 8, other.bytes).code == StatusCode::memory_misaligned);
    CHECK(object.init(config, other.aligned, other.bytes - 1).code == StatusCode::memory_too_small);
    CHECK(object.init(config, in_use.aligned, in_use.bytes - 1).code == StatusCode::memory_too_small);
    CHECK(object.init(config, in_use.aligned + 8, in_use.bytes).code == StatusCode::memory_misaligned);
    CHECK(object.init(bad, in_use.aligned, in_use.bytes).code == StatusCode::invalid_config);
    CHECK(object.init_allocate(bad).code == StatusCode::invalid_config);
    CHECK(in_use.contents() == before);
    CHECK(object.initialized());
}

} // namespace

TEST_CASE("failed inits on caller memory leave every kind of object, and its block, exactly as they were") {
    SUBCASE("Grid") {
        Rng rng(12);
        const Scene s = uniform_scene(rng, 3, 300, 0.0f, 6.0f);
        const hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, 300, 20000);
        CallerBlock block(hashgrid::memory_requirements(config));
        hashgrid::Grid grid;
        REQUIRE(grid.init(config, block.aligned, block.bytes).ok());
        REQUIRE(grid.rebuild(s.spans(), hashgrid::serial_backend()).ok());
        const std::vector<Pair> before = all_pairs(grid);
        const std::vector<Pair> set = as_set(before.data(), before.size());
        REQUIRE(diff_pairs(brute_force_pairs(s, 1.0f), set.data(), set.size()) == "");
        hashgrid::GridConfig bad = config;
        bad.interaction_distance = 2.0f; // > cell_size
        fail_caller_inits(grid, config, bad, block);
        const std::vector<Pair> after = all_pairs(grid);
        CHECK(hash_pairs(after.data(), after.size()) == hash_pairs(before.data(), before.size()));
    }
    SUBCASE("BoxGrid") {
        const Boxes b = random_boxes(200);
        const hashgrid::BoxGridConfig config = box_config(200);
        CallerBlock block(hashgrid::BoxGrid::memory_requirements(config));
        hashgrid::BoxGrid grid;
        REQUIRE(grid.init(config, block.aligned, block.bytes).ok());
        REQUIRE(grid.rebuild(b.spans(), hashgrid::serial_backend()).ok());
        const std::vector<Pair> before = box_pairs(grid);
        const std::vector<Pair> set = as_set(before.data(), before.size());
        REQUIRE(diff_pairs(box_brute_force(b), set.data(), set.size()) == "");
        hashgrid::BoxGridConfig bad = config;
        bad.large_object_cells = 0;
        fail_caller_inits(grid, config, bad, block);
        CHECK(grid.object_count() == 200);
        const std::vector<Pair> after = box_pairs(grid);
        CHECK(hash_pairs(after.data(), after.size()) == hash_pairs(before.data(), before.size()));
    }
    SUBCASE("ObjectStore") {
        hashgrid::ObjectStoreConfig config;
        config.max_objects = 40;
        CallerBlock block(hashgrid::ObjectStore::memory_requirements(config));
        hashgrid::ObjectStore store;
        REQUIRE(store.init(config, block.aligned, block.bytes).ok());
        std::vector<hashgrid::ObjectHandle> handles;
        for (uint32_t i = 0; i < 30; ++i) {
            hashgrid::ObjectBox box;
            box.min[0] = static_cast<float>(i);
            box.max[0] = static_cast<float>(i) + 1.0f;
            handles.push_back(store.add(box, i, ~i, i).handle);
        }
        for (uint32_t i = 0; i < 30; i += 3)
            REQUIRE(store.remove(handles[i]).ok());
        hashgrid::ObjectStoreConfig bad = config;
        bad.dimensions = 1;
        fail_caller_inits(store, config, bad, block);
        CHECK(store.size() == 20);
        for (uint32_t i = 0; i < 30; ++i) {
            CHECK(store.contains(handles[i]) == (i % 3 != 0));
            hashgrid::ObjectBox box;
            if (i % 3 != 0) {
                REQUIRE(store.get_box(handles[i], box).ok());
                CHECK(box.min[0] == static_cast<float>(i));
                CHECK(store.user_values()[store.dense_index(handles[i])] == i);
            }
        }
    }
    SUBCASE("ProximityIndex") {
        hashgrid::ProximityIndexConfig config;
        config.grid = box_config(16);
        config.grid.dimensions = 2;
        CallerBlock block(hashgrid::ProximityIndex::memory_requirements(config));
        hashgrid::ProximityIndex index;
        REQUIRE(index.init(config, block.aligned, block.bytes).ok());
        for (uint32_t i = 0; i < 10; ++i) {
            const float at[3] = {static_cast<float>(i), 0.0f, 0.0f};
            const float size[3] = {1.5f, 1.0f, 0.0f};
            REQUIRE(index.create_client(at, size).status.ok());
        }
        REQUIRE(index.update_index(hashgrid::serial_backend()).ok());
        hashgrid::ProximityIndexConfig bad = config;
        bad.grid.cell_size = 0.0f;
        fail_caller_inits(index, config, bad, block);
        CHECK(index.client_count() == 10);
        CHECK_FALSE(index.dirty());
        Pair pairs[32];
        const hashgrid::PairResult r = index.find_pairs(pairs, 32, hashgrid::serial_backend());
        CHECK(r.status.ok());
        CHECK(r.total == 9); // neighbours 1 apart overlap (edge 1.5); 2 apart do not
    }
}

TEST_CASE("init on caller memory after init_allocate: the old block is freed once, also when it is the new one") {
    // Leaks and double frees show under AddressSanitizer (the asan-ubsan preset).
    Rng rng(13);
    const Scene s = uniform_scene(rng, 3, 200, 0.0f, 5.0f);
    const hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, 200, 20000);
    const std::vector<Pair> expected = brute_force_pairs(s, 1.0f);
    hashgrid::Grid grid;
    REQUIRE(grid.init_allocate(config).ok());
    // The block's first array is sorted_to_original(): re-init on that very block.
    void* own = const_cast<uint32_t*>(grid.sorted_to_original());
    REQUIRE(grid.init(config, own, static_cast<size_t>(hashgrid::memory_requirements(config).bytes)).ok());
    REQUIRE(grid.rebuild(s.spans(), hashgrid::serial_backend()).ok());
    std::vector<Pair> got = all_pairs(grid);
    got = as_set(got.data(), got.size());
    CHECK(diff_pairs(expected, got.data(), got.size()) == "");
    // Then caller memory: the allocated block goes.
    CallerBlock block(hashgrid::memory_requirements(config));
    REQUIRE(grid.init(config, block.aligned, block.bytes).ok());
    REQUIRE(grid.rebuild(s.spans(), hashgrid::serial_backend()).ok());
    got = all_pairs(grid);
    got = as_set(got.data(), got.size());
    CHECK(diff_pairs(expected, got.data(), got.size()) == "");

    hashgrid::ObjectStoreConfig sc;
    sc.max_objects = 8;
    hashgrid::ObjectStore store;
    REQUIRE(store.init_allocate(sc).ok());
    void* store_block = const_cast<float*>(store.min_coords(0)); // the first array
    REQUIRE(
        store.init(sc, store_block, static_cast<size_t>(hashgrid::ObjectStore::memory_requirements(sc).bytes)).ok());
    CHECK(store.add(hashgrid::ObjectBox{}, 1, 1, 5).status.ok());
    CHECK(store.size() == 1);
}

TEST_CASE("generations: a stale handle of every age is rejected; a slot is retired before a generation repeats") {
    using hashgrid::ObjectHandle;
    using hashgrid::ObjectStoreTestAccess;
    for (const uint32_t salt : {0u, 0xBEEFu}) {
        INFO("salt ", salt);
        hashgrid::ObjectStoreConfig config;
        config.max_objects = 1;
        config.handle_salt = salt;
        hashgrid::ObjectStore store;
        REQUIRE(store.init_allocate(config).ok());
        const uint32_t g0 = hashgrid::detail::first_generation(salt, 0);
        const uint32_t last = g0 == 1 ? 0xffffffffu : g0 - 1; // the cycle's final generation
        std::vector<ObjectHandle> issued;
        const hashgrid::ObjectBox box;
        // Churn the one slot; every handle ever issued is kept.
        auto churn = [&](uint32_t times) {
            for (uint32_t k = 0; k < times; ++k) {
                const hashgrid::ObjectAddResult a = store.add(box, 1, 1, k);
                REQUIRE(a.status.ok());
                // The live object rejects every other generation, older or newer.
                for (const uint32_t delta : {1u, 2u, 255u, 65536u, 0x80000000u, 0xffffffffu})
                    CHECK_FALSE(store.contains(ObjectHandle{0, a.handle.generation + delta}));
                for (const ObjectHandle& old : issued)
                    if (old.generation % 97 == k % 97) CHECK_FALSE(store.contains(old)); // a sample per round
                issued.push_back(a.handle);
                REQUIRE(store.remove(a.handle).ok());
            }
        };
        churn(1000);
        CHECK(issued.front() == ObjectHandle{0, g0});
        // Jump (the slot is free) to the end of the 32-bit range: the counter
        // passes 0xffffffff and skips 0.
        if (g0 != 1) {
            ObjectStoreTestAccess::set_generation(store, 0, 0xffffffffu - 499);
            churn(1000);
            CHECK(store.retired_count() == 0);
        }
        // Jump to 1000 generations before the cycle closes and churn to its end.
        ObjectStoreTestAccess::set_generation(store, 0, last - 999);
        churn(1000);
        CHECK(issued.back() == ObjectHandle{0, last});
        CHECK(store.retired_count() == 1);
        CHECK(store.capacity() == 0);
        const hashgrid::ObjectAddResult full = store.add(box, 1, 1, 0);
        CHECK(full.status.code == StatusCode::object_capacity);
        CHECK(full.handle == ObjectHandle{});
        // No generation was issued twice, none is 0, and every handle of every age is stale.
        std::vector<uint32_t> generations;
        for (const ObjectHandle& h : issued)
            generations.push_back(h.generation);
        std::sort(generations.begin(), generations.end());
        CHECK(std::adjacent_find(generations.begin(), generations.end()) == generations.end());
        CHECK(generations.front() != 0u);
        hashgrid::ObjectBox out;
        for (const ObjectHandle& h : issued) {
            CHECK_FALSE(store.contains(h));
            CHECK(store.move(h, box).code == StatusCode::invalid_handle);
            CHECK(store.get_box(h, out).code == StatusCode::invalid_handle);
            CHECK(store.remove(h).code == StatusCode::invalid_handle);
        }
        for (uint64_t g = 0; g <= 0xffffffffu; g += 0x10001u) // forged generations across the range
            CHECK_FALSE(store.contains(ObjectHandle{0, static_cast<uint32_t>(g)}));
        // clear() and further churn keep the retirement.
        store.clear();
        CHECK(store.add(box, 1, 1, 0).status.code == StatusCode::object_capacity);
    }
}

#if defined(__linux__)
namespace {

/// A fresh anonymous mapping: the kernel maps its pages on first touch, so
/// mincore() tells which pages something has written.
struct UntouchedBlock {
    size_t bytes = 0;
    size_t pages = 0;
    unsigned char* base = nullptr;
    explicit UntouchedBlock(uint64_t need) {
        const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        pages = (static_cast<size_t>(need) + page - 1) / page;
        bytes = pages * page;
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        base = static_cast<unsigned char*>(p);
    }
    ~UntouchedBlock() { munmap(base, bytes); }
    UntouchedBlock(const UntouchedBlock&) = delete;
    UntouchedBlock& operator=(const UntouchedBlock&) = delete;
    [[nodiscard]] size_t resident_pages() const {
        std::vector<unsigned char> in_core(pages);
        REQUIRE(mincore(base, bytes, in_core.data()) == 0);
        size_t n = 0;
        for (unsigned char v : in_core)
            n += (v & 1u) != 0 ? 1u : 0u;
        return n;
    }
};

/// Inits an object on a fresh mapping and checks that every page of the
/// block is mapped afterwards (no frame will fault on it).
template <typename Object, typename Config>
void check_init_maps_every_page(const Config& config, const hashgrid::MemoryRequirements& req) {
    REQUIRE(req.status.ok());
    REQUIRE(req.bytes > 64 * 4096); // big enough that laying the object out alone touches few of its pages
    UntouchedBlock block(req.bytes);
    const size_t before = block.resident_pages();
    if (before == block.pages) {
        MESSAGE("a fresh mapping is already resident here (emulator?): nothing to check");
        return;
    }
    Object object;
    REQUIRE(object.init(config, block.base, block.bytes).ok());
    CHECK(block.resident_pages() == block.pages);
}

} // namespace

TEST_CASE("init maps every page of its block, so no frame faults on first touch (mincore)") {
    SUBCASE("Grid") {
        hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, 20000, 1000000);
        check_init_maps_every_page<hashgrid::Grid>(config, hashgrid::memory_requirements(config));
    }
    SUBCASE("BoxGrid") {
        hashgrid::BoxGridConfig config = box_config(20000);
        config.max_pairs = 1000000;
        check_init_maps_every_page<hashgrid::BoxGrid>(config, hashgrid::BoxGrid::memory_requirements(config));
    }
    SUBCASE("ObjectStore") {
        hashgrid::ObjectStoreConfig config;
        config.max_objects = 100000;
        check_init_maps_every_page<hashgrid::ObjectStore>(config, hashgrid::ObjectStore::memory_requirements(config));
    }
    SUBCASE("ProximityIndex") {
        hashgrid::ProximityIndexConfig config;
        config.grid = box_config(20000);
        config.grid.max_pairs = 1000000;
        check_init_maps_every_page<hashgrid::ProximityIndex>(config,
                                                             hashgrid::ProximityIndex::memory_requirements(config));
    }
}

// Native x86-64 only: under an emulator /proc/self/smaps describes the
// emulator's mappings.
#if defined(__x86_64__)
namespace {

/// The system's transparent huge page mode ("always", "madvise", "never"),
/// or "" when it cannot be read.
std::string huge_page_mode() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    std::getline(f, line);
    const size_t open = line.find('[');
    const size_t close = line.find(']');
    return open != std::string::npos && close > open ? line.substr(open + 1, close - open - 1) : std::string();
}

/// The "THPeligible" value of the mapping that holds `address` in
/// /proc/self/smaps (-1 when not found).
int huge_page_eligible(const void* address) {
    const auto at = reinterpret_cast<uintptr_t>(address);
    std::ifstream f("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(f, line)) {
        uintptr_t lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 && line.find(' ') > line.find('-')) {
            inside = lo <= at && at < hi;
            continue;
        }
        if (inside && line.rfind("THPeligible:", 0) == 0) return std::atoi(line.c_str() + 12);
    }
    return -1;
}

} // namespace

// Oracle: the kernel's own account of the mapping (smaps), against a block
// of the same size from plain malloc.
TEST_CASE("aligned_alloc_bytes offers its 2 MiB stretches to transparent huge pages (Linux, madvise mode)") {
    if (huge_page_mode() != "madvise") {
        MESSAGE("transparent huge pages are '" << huge_page_mode() << "' here, not 'madvise': nothing to check");
        return;
    }
    constexpr uint64_t kBytes = uint64_t{16} << 20;
    void* plain = std::malloc(kBytes); // its own mapping, never advised
    REQUIRE(plain != nullptr);
    void* block = hashgrid::aligned_alloc_bytes(kBytes, 64);
    REQUIRE(block != nullptr);
    const auto inner = [](void* p) { // an address inside the block's first whole 2 MiB stretch
        return reinterpret_cast<void*>(
            ((reinterpret_cast<uintptr_t>(p) + (uintptr_t{1} << 21) - 1) & ~((uintptr_t{1} << 21) - 1)) + 4096);
    };
    const int plain_eligible = huge_page_eligible(inner(plain));
    if (plain_eligible < 0) {
        MESSAGE("/proc/self/smaps has no THPeligible field here: nothing to check");
    } else {
        CHECK(plain_eligible == 0);
        CHECK(huge_page_eligible(inner(block)) == 1);
    }
    hashgrid::aligned_free_bytes(block);
    std::free(plain);
}
#endif
#endif

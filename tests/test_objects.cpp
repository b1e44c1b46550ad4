// SPDX-License-Identifier: MIT
// Persistent objects (objects.h) and the client API (proximity_index.h).
// Store: random add/move/remove/clear sequences against an independent model
// (slots, FIFO reuse, generations, swap-remove dense order); bad handles
// (stale, removed, never issued, foreign) and bad boxes change nothing;
// capacity; generation wrap; a golden hash of the dense arrays. With the box
// grid: pairs after churn equal brute force over the model. Client API:
// find_near / find_near_radius / find_pairs after random churn equal brute
// force, a hand-computed scenario with every status, bounded worlds, and the
// same answers in the same order for any thread count.
#include <doctest/doctest.h>

#include "../core/src/objects/objects_internal.h"
#include "golden_hashes.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/proximity_index.h"
#include "test_support.h"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::ObjectAddResult;
using hashgrid::ObjectBox;
using hashgrid::ObjectHandle;
using hashgrid::ObjectStore;
using hashgrid::ObjectStoreConfig;
using hashgrid::Status;
using hashgrid::StatusCode;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::string handle_text(ObjectHandle h) {
    return "{" + std::to_string(h.index) + "," + std::to_string(h.generation) + "}";
}

// ---------------------------------------------------------------------------
// A store on caller memory filled with garbage first (reads of uninitialised
// memory then show up as differences between two stores).

struct OwnedStore {
    std::unique_ptr<ObjectStore> store = std::make_unique<ObjectStore>();
    void* memory = nullptr;
    Status init_status;

    OwnedStore() = default;
    OwnedStore(const OwnedStore&) = delete;
    OwnedStore& operator=(const OwnedStore&) = delete;
    ~OwnedStore() {
        store.reset();
        hashgrid::aligned_free_bytes(memory);
    }
    ObjectStore& operator*() { return *store; }
    ObjectStore* operator->() { return store.get(); }
};

std::unique_ptr<OwnedStore> make_store(const ObjectStoreConfig& config, uint8_t fill = 0xA5) {
    auto owned = std::make_unique<OwnedStore>();
    const hashgrid::MemoryRequirements req = ObjectStore::memory_requirements(config);
    if (!req.status.ok()) {
        owned->init_status = req.status;
        return owned;
    }
    owned->memory = hashgrid::aligned_alloc_bytes(req.bytes, req.alignment);
    REQUIRE(owned->memory != nullptr);
    std::memset(owned->memory, fill, static_cast<size_t>(req.bytes));
    owned->init_status = owned->store->init(config, owned->memory, static_cast<size_t>(req.bytes));
    return owned;
}

ObjectStoreConfig store_config(uint32_t dims, uint32_t max_objects, uint32_t salt = 0) {
    ObjectStoreConfig c;
    c.dimensions = dims;
    c.max_objects = max_objects;
    c.handle_salt = salt;
    return c;
}

ObjectBox make_box(float x0, float y0, float z0, float x1, float y1, float z1) {
    ObjectBox b;
    b.min[0] = x0;
    b.min[1] = y0;
    b.min[2] = z0;
    b.max[0] = x1;
    b.max[1] = y1;
    b.max[2] = z1;
    return b;
}

/// Where random boxes go. The defaults are the store tests' (no large boxes,
/// full 32-bit layers); the grid tests pack boxes denser, add a few large
/// ones and use few layer bits so that the layer rule matters.
struct BoxShape {
    float lo = -50.0f;
    float hi = 50.0f;
    float max_edge = 4.0f;
    uint32_t large_one_in = 0; ///< 0: never; else one box in this many gets edges up to large_edge.
    float large_edge = 0.0f;
    uint32_t layer_bits = 0; ///< 0: random 32-bit category and mask; else one of these bits / a random subset.
};

/// A valid random box in [lo, hi)^dims with edges in [0, max_edge) (z zero in 2D).
ObjectBox random_box(Rng& rng, uint32_t dims, const BoxShape& shape = BoxShape{}) {
    const float edge =
        shape.large_one_in != 0 && rng.below(shape.large_one_in) == 0 ? shape.large_edge : shape.max_edge;
    ObjectBox b;
    for (uint32_t d = 0; d < dims; ++d) {
        b.min[d] = rng.uniform(shape.lo, shape.hi);
        b.max[d] = b.min[d] + rng.uniform(0.0f, edge);
    }
    return b;
}

/// A box that is valid most of the time, else NaN/inf somewhere or min > max.
ObjectBox maybe_bad_box(Rng& rng, uint32_t dims, const BoxShape& shape = BoxShape{}) {
    ObjectBox b = random_box(rng, dims, shape);
    const uint32_t kind = rng.below(16);
    const uint32_t axis = rng.below(3); // z in 2D: ignored, so the box stays valid
    if (kind == 0) b.min[axis] = kNaN;
    if (kind == 1) b.max[axis] = kNaN;
    if (kind == 2) b.max[axis] = kInf;
    if (kind == 3) b.min[axis] = -kInf;
    if (kind == 4) b.max[axis] = b.min[axis] - 1.0f;
    return b;
}

/// Category and mask for a new object or set_layers().
void random_layers(Rng& rng, const BoxShape& shape, uint32_t& category, uint32_t& mask) {
    if (shape.layer_bits == 0) {
        category = rng.next_u32();
        mask = rng.next_u32();
        return;
    }
    category = 1u << rng.below(shape.layer_bits);
    mask = rng.next_u32() & ((1u << shape.layer_bits) - 1u);
}

/// The status the store must give for a box (objects.h: NaN/inf first, then min > max).
StatusCode expected_box_status(const ObjectBox& b, uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!std::isfinite(b.min[d]) || !std::isfinite(b.max[d])) return StatusCode::invalid_position;
    for (uint32_t d = 0; d < dims; ++d)
        if (b.min[d] > b.max[d]) return StatusCode::invalid_box;
    return StatusCode::ok;
}

// ---------------------------------------------------------------------------
// The model: what objects.h promises, written the plain way.

struct ModelObject {
    ObjectBox box;
    uint32_t category = 0;
    uint32_t mask = 0;
    uint64_t user = 0;
};

class Model {
public:
    explicit Model(const ObjectStoreConfig& c) : config_(c), generation_(c.max_objects), retired_(c.max_objects) {
        for (uint32_t s = 0; s < c.max_objects; ++s) {
            generation_[s] = first(s);
            free_.push_back(s); // first issue in ascending slot order
        }
    }

    /// Expected result of add().
    ObjectAddResult add(const ObjectBox& box, uint32_t category, uint32_t mask, uint64_t user) {
        ObjectAddResult r;
        r.status.code = expected_box_status(box, config_.dimensions);
        if (r.status.code != StatusCode::ok) return r;
        if (free_.empty()) {
            r.status.code = StatusCode::object_capacity;
            r.status.needed = dense_.size() + 1;
            return r;
        }
        const uint32_t slot = free_.front();
        free_.pop_front();
        dense_.push_back(slot);
        objects_[slot] = ModelObject{box, category, mask, user};
        r.handle = ObjectHandle{slot, generation_[slot]};
        return r;
    }

    [[nodiscard]] bool live(ObjectHandle h) const {
        return h.index < config_.max_objects && objects_.count(h.index) != 0 && generation_[h.index] == h.generation;
    }

    StatusCode move(ObjectHandle h, const ObjectBox& box) {
        if (!live(h)) return StatusCode::invalid_handle;
        const StatusCode c = expected_box_status(box, config_.dimensions);
        if (c == StatusCode::ok) objects_[h.index].box = box;
        return c;
    }

    StatusCode set_layers(ObjectHandle h, uint32_t category, uint32_t mask) {
        if (!live(h)) return StatusCode::invalid_handle;
        objects_[h.index].category = category;
        objects_[h.index].mask = mask;
        return StatusCode::ok;
    }

    StatusCode set_user(ObjectHandle h, uint64_t user) {
        if (!live(h)) return StatusCode::invalid_handle;
        objects_[h.index].user = user;
        return StatusCode::ok;
    }

    StatusCode remove(ObjectHandle h) {
        if (!live(h)) return StatusCode::invalid_handle;
        uint32_t k = 0;
        while (dense_[k] != h.index)
            ++k;
        dense_[k] = dense_.back(); // swap-remove
        dense_.pop_back();
        objects_.erase(h.index);
        release(h.index);
        return StatusCode::ok;
    }

    void clear() {
        for (uint32_t slot : dense_)
            release(slot);
        dense_.clear();
        objects_.clear();
    }

    [[nodiscard]] const std::vector<uint32_t>& dense() const { return dense_; }
    [[nodiscard]] const ModelObject& object(uint32_t slot) const { return objects_.at(slot); }
    [[nodiscard]] uint32_t generation(uint32_t slot) const { return generation_[slot]; }
    [[nodiscard]] uint32_t retired() const {
        uint32_t n = 0;
        for (bool r : retired_)
            n += r ? 1u : 0u;
        return n;
    }
    /// Test access: mirror of ObjectStoreTestAccess::set_generation.
    void set_generation(uint32_t slot, uint32_t g) { generation_[slot] = g; }

private:
    [[nodiscard]] uint32_t first(uint32_t slot) const {
        return config_.handle_salt == 0 ? 1u : hashgrid::detail::first_generation(config_.handle_salt, slot);
    }

    void release(uint32_t slot) {
        uint64_t next = uint64_t{generation_[slot]} + 1;
        if (next == (uint64_t{1} << 32)) next = 1; // generation 0 is never issued
        if (next == first(slot)) {
            retired_[slot] = true; // a full cycle: never issued again
            return;
        }
        generation_[slot] = static_cast<uint32_t>(next);
        free_.push_back(slot);
    }

    ObjectStoreConfig config_;
    std::vector<uint32_t> generation_;
    std::vector<bool> retired_;
    std::deque<uint32_t> free_;
    std::vector<uint32_t> dense_;
    std::map<uint32_t, ModelObject> objects_;
};

/// "" when the store equals the model (dense arrays, handles, lookups), else the first difference.
std::string diff_store(const ObjectStore& store, const Model& model) {
    const uint32_t dims = store.config().dimensions;
    const std::vector<uint32_t>& dense = model.dense();
    if (store.size() != dense.size())
        return "size: expected " + std::to_string(dense.size()) + " got " + std::to_string(store.size());
    if (store.retired_count() != model.retired()) return "retired_count differs";
    if (store.capacity() != store.config().max_objects - model.retired()) return "capacity differs";
    const hashgrid::BoxSpans spans = store.spans();
    if (spans.count != dense.size()) return "spans.count differs";
    if (dims == 2 && (spans.min_z != nullptr || spans.max_z != nullptr)) return "2D spans have z";
    const float* mins[3] = {spans.min_x, spans.min_y, spans.min_z};
    const float* maxs[3] = {spans.max_x, spans.max_y, spans.max_z};
    for (uint32_t i = 0; i < dense.size(); ++i) {
        const std::string at = " at dense " + std::to_string(i);
        const uint32_t slot = dense[i];
        const ObjectHandle expected{slot, model.generation(slot)};
        if (store.dense_slots()[i] != slot) return "dense_slots" + at;
        if (!(store.handle_at(i) == expected)) return "handle_at" + at + ": got " + handle_text(store.handle_at(i));
        if (store.dense_index(expected) != i) return "dense_index of " + handle_text(expected);
        if (!store.contains(expected)) return "contains " + handle_text(expected);
        const ModelObject& o = model.object(slot);
        for (uint32_t d = 0; d < dims; ++d) {
            if (float_bits(mins[d][i]) != float_bits(o.box.min[d]) ||
                float_bits(store.min_coords(d)[i]) != float_bits(o.box.min[d]))
                return "min" + at;
            if (float_bits(maxs[d][i]) != float_bits(o.box.max[d]) ||
                float_bits(store.max_coords(d)[i]) != float_bits(o.box.max[d]))
                return "max" + at;
        }
        if (spans.category[i] != o.category || store.categories()[i] != o.category) return "category" + at;
        if (spans.mask[i] != o.mask || store.masks()[i] != o.mask) return "mask" + at;
        if (store.user_values()[i] != o.user) return "user value" + at;
        ObjectBox got;
        if (!store.get_box(expected, got).ok()) return "get_box" + at;
        for (uint32_t d = 0; d < dims; ++d)
            if (float_bits(got.min[d]) != float_bits(o.box.min[d]) ||
                float_bits(got.max[d]) != float_bits(o.box.max[d]))
                return "get_box value" + at;
    }
    return "";
}

/// Hash of everything observable in the store (dense arrays, handles), in dense order.
uint64_t hash_store(const ObjectStore& store) {
    Fnv1a h;
    h.u32(store.size());
    h.u32(store.retired_count());
    for (uint32_t i = 0; i < store.size(); ++i) {
        const ObjectHandle handle = store.handle_at(i);
        h.u32(handle.index);
        h.u32(handle.generation);
        for (uint32_t d = 0; d < store.config().dimensions; ++d) {
            h.f32(store.min_coords(d)[i]);
            h.f32(store.max_coords(d)[i]);
        }
        h.u32(store.categories()[i]);
        h.u32(store.masks()[i]);
        h.u64(store.user_values()[i]);
    }
    return h.value();
}

/// A handle worth trying: mostly live or recently dead ones, sometimes made up.
ObjectHandle pick_handle(Rng& rng, const ObjectStore& store, const std::vector<ObjectHandle>& dead, uint32_t max) {
    const uint32_t kind = rng.below(8);
    if (kind < 5 && store.size() > 0) return store.handle_at(rng.below(store.size()));
    if (kind < 7 && !dead.empty()) return dead[rng.below(static_cast<uint32_t>(dead.size()))];
    ObjectHandle h;
    h.index = rng.below(max + 2); // sometimes out of range
    h.generation = rng.below(4);  // 0 is never issued
    return h;
}

/// Runs `ops` random operations on the store and the model side by side,
/// checking every status and (each `check_every` ops) the whole state.
void churn(ObjectStore& store, Model& model, Rng& rng, uint32_t ops, uint32_t check_every,
           std::vector<ObjectHandle>& dead, const BoxShape& shape = BoxShape{}, uint32_t clear_per_mille = 3) {
    const uint32_t dims = store.config().dimensions;
    const uint32_t max = store.config().max_objects;
    for (uint32_t op = 0; op < ops; ++op) {
        const uint32_t kind = rng.below(1000);
        std::string what;
        if (kind < 400) {
            const ObjectBox box = maybe_bad_box(rng, dims, shape);
            uint32_t category = 0;
            uint32_t mask = 0;
            random_layers(rng, shape, category, mask);
            const uint64_t user = rng.next_u64();
            const ObjectAddResult expected = model.add(box, category, mask, user);
            const ObjectAddResult got = store.add(box, category, mask, user);
            what = "add";
            CHECK_MESSAGE(got.status.code == expected.status.code, what, " op ", op);
            CHECK(got.status.needed == expected.status.needed);
            CHECK_MESSAGE(got.handle == expected.handle, handle_text(got.handle), " vs ", handle_text(expected.handle));
        } else if (kind < 600) {
            const ObjectHandle h = pick_handle(rng, store, dead, max);
            const ObjectBox box = maybe_bad_box(rng, dims, shape);
            what = "move";
            CHECK_MESSAGE(store.move(h, box).code == model.move(h, box), what, " op ", op);
        } else if (kind < 700) {
            const ObjectHandle h = pick_handle(rng, store, dead, max);
            uint32_t category = 0;
            uint32_t mask = 0;
            random_layers(rng, shape, category, mask);
            what = "set_layers";
            CHECK_MESSAGE(store.set_layers(h, category, mask).code == model.set_layers(h, category, mask), what);
        } else if (kind < 750) {
            const ObjectHandle h = pick_handle(rng, store, dead, max);
            const uint64_t user = rng.next_u64();
            what = "set_user_value";
            CHECK_MESSAGE(store.set_user_value(h, user).code == model.set_user(h, user), what);
        } else if (kind < 1000 - clear_per_mille) {
            const ObjectHandle h = pick_handle(rng, store, dead, max);
            const bool was_live = model.live(h);
            what = "remove";
            CHECK_MESSAGE(store.remove(h).code == model.remove(h), what, " op ", op);
            if (was_live) {
                dead.push_back(h);
                CHECK_FALSE(store.contains(h));
                CHECK(store.dense_index(h) == hashgrid::kInvalidObjectIndex);
            }
        } else {
            for (uint32_t i = 0; i < store.size(); ++i)
                dead.push_back(store.handle_at(i));
            what = "clear";
            store.clear();
            model.clear();
        }
        if (dead.size() > 4096) dead.erase(dead.begin(), dead.begin() + 2048);
        if (op % check_every == 0 || op + 1 == ops) {
            const std::string d = diff_store(store, model);
            REQUIRE_MESSAGE(d.empty(), "after ", what, " (op ", op, "): ", d);
        }
    }
    for (const ObjectHandle& h : dead)
        if (!model.live(h)) REQUIRE_FALSE(store.contains(h));
}

} // namespace

// ---------------------------------------------------------------------------

TEST_CASE("config validation and memory") {
    CHECK(ObjectStore::validate(store_config(3, 10)).ok());
    CHECK(ObjectStore::validate(store_config(1, 10)).code == StatusCode::invalid_config);
    CHECK(ObjectStore::validate(store_config(4, 10)).code == StatusCode::invalid_config);
    CHECK(ObjectStore::validate(store_config(2, 0)).code == StatusCode::invalid_config);
    CHECK(ObjectStore::validate(store_config(2, 1u << 31)).code == StatusCode::invalid_config);
    const hashgrid::MemoryRequirements bad = ObjectStore::memory_requirements(store_config(3, 0));
    CHECK(bad.status.code == StatusCode::invalid_config);
    CHECK(bad.bytes == 0);

    const ObjectStoreConfig c = store_config(3, 100);
    const hashgrid::MemoryRequirements req = ObjectStore::memory_requirements(c);
    REQUIRE(req.status.ok());
    CHECK(req.alignment == 64);
    // 6 floats + category + mask + 8-byte user value + dense slot + 3 per-slot words.
    CHECK(req.bytes >= 100u * (6 * 4 + 4 + 4 + 8 + 4 + 3 * 4));
    const hashgrid::MemoryRequirements req2 = ObjectStore::memory_requirements(store_config(2, 100));
    CHECK(req2.bytes < req.bytes); // no z arrays in 2D

    std::vector<unsigned char> raw(static_cast<size_t>(req.bytes) + 128);
    auto* aligned = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw.data()) + 63) & ~uintptr_t{63});
    ObjectStore store;
    const Status small = store.init(c, aligned, static_cast<size_t>(req.bytes) - 1);
    CHECK(small.code == StatusCode::memory_too_small);
    CHECK(small.needed == req.bytes);
    CHECK(store.init(c, nullptr, 0).code == StatusCode::memory_too_small);
    const Status misaligned = store.init(c, aligned + 4, static_cast<size_t>(req.bytes));
    CHECK(misaligned.code == StatusCode::memory_misaligned);
    CHECK_FALSE(store.initialized());
    REQUIRE(store.init(c, aligned, static_cast<size_t>(req.bytes)).ok());
    CHECK(store.initialized());
    CHECK(store.size() == 0);
    CHECK(store.capacity() == 100);

    ObjectStore owned;
    REQUIRE(owned.init_allocate(c).ok());
    CHECK(owned.add(make_box(0, 0, 0, 1, 1, 1), 1, 1, 7).status.ok());
    CHECK(owned.init_allocate(store_config(3, 0)).code == StatusCode::invalid_config);
}

TEST_CASE("handles: first issue, reuse, generations, clear") {
    auto owned = make_store(store_config(3, 4));
    REQUIRE(owned->init_status.ok());
    ObjectStore& s = **owned;
    const ObjectBox box = make_box(0, 0, 0, 1, 1, 1);

    // Slots are issued in ascending order with generation 1 (no salt).
    ObjectHandle h[4];
    for (uint32_t i = 0; i < 4; ++i) {
        const ObjectAddResult r = s.add(box, 1, 1, i);
        REQUIRE(r.status.ok());
        h[i] = r.handle;
        CHECK(h[i] == ObjectHandle{i, 1});
        CHECK(s.dense_index(h[i]) == i);
    }
    // Swap-remove: the last object takes the hole.
    REQUIRE(s.remove(h[1]).ok());
    CHECK(s.size() == 3);
    CHECK(s.dense_index(h[3]) == 1);
    CHECK(s.user_values()[1] == 3);
    CHECK_FALSE(s.contains(h[1]));
    CHECK(s.remove(h[1]).code == StatusCode::invalid_handle); // twice
    // The freed slot comes back with the next generation.
    const ObjectAddResult again = s.add(box, 1, 1, 9);
    REQUIRE(again.status.ok());
    CHECK(again.handle == ObjectHandle{1, 2});
    CHECK(s.dense_index(again.handle) == 3);
    CHECK(s.move(h[1], box).code == StatusCode::invalid_handle); // stale copy of the old handle

    // FIFO reuse: slots freed in the order 2, 0 come back in that order.
    REQUIRE(s.remove(h[2]).ok());
    REQUIRE(s.remove(h[0]).ok());
    CHECK(s.add(box, 1, 1, 0).handle == ObjectHandle{2, 2});
    CHECK(s.add(box, 1, 1, 0).handle == ObjectHandle{0, 2});

    // clear(): every handle stale, the slots come back with a new generation.
    ObjectHandle before[4];
    for (uint32_t i = 0; i < 4; ++i)
        before[i] = s.handle_at(i);
    s.clear();
    CHECK(s.size() == 0);
    for (const ObjectHandle& b : before) {
        CHECK_FALSE(s.contains(b));
        CHECK(s.remove(b).code == StatusCode::invalid_handle);
    }
    for (uint32_t i = 0; i < 4; ++i) {
        const ObjectAddResult r = s.add(box, 1, 1, 0);
        REQUIRE(r.status.ok());
        CHECK(r.handle.index == before[i].index); // freed in dense order
        CHECK(r.handle.generation == before[i].generation + 1);
    }
}

TEST_CASE("bad handles change nothing") {
    auto owned = make_store(store_config(3, 8));
    REQUIRE(owned->init_status.ok());
    ObjectStore& s = **owned;
    Rng rng(11);
    std::vector<ObjectHandle> live;
    for (uint32_t i = 0; i < 6; ++i)
        live.push_back(s.add(random_box(rng, 3), i, ~i, i * 10u).handle);
    const ObjectHandle removed = live[2];
    REQUIRE(s.remove(removed).ok());
    const uint64_t before = hash_store(s);

    const ObjectHandle bad[] = {
        ObjectHandle{},                                      // default: never issued
        ObjectHandle{0, 0},                                  // generation 0 is never issued
        removed,                                             // removed
        ObjectHandle{removed.index, removed.generation + 1}, // freed slot, future generation
        ObjectHandle{6, 1},                                  // in range, never issued
        ObjectHandle{7, 1},                                  // in range, never issued
        ObjectHandle{8, 1},                                  // out of range
        ObjectHandle{0xffffffffu, 1},                        // far out of range
        ObjectHandle{0, 2},                                  // live slot, wrong generation
    };
    const ObjectBox box = random_box(rng, 3);
    for (const ObjectHandle& h : bad) {
        INFO("handle ", handle_text(h));
        CHECK_FALSE(s.contains(h));
        CHECK(s.dense_index(h) == hashgrid::kInvalidObjectIndex);
        CHECK(s.move(h, box).code == StatusCode::invalid_handle);
        CHECK(s.move(h, make_box(kNaN, 0, 0, 1, 1, 1)).code == StatusCode::invalid_handle); // handle checked first
        CHECK(s.set_layers(h, 0, 0).code == StatusCode::invalid_handle);
        CHECK(s.set_user_value(h, 0).code == StatusCode::invalid_handle);
        CHECK(s.remove(h).code == StatusCode::invalid_handle);
        ObjectBox out = make_box(5, 5, 5, 5, 5, 5);
        CHECK(s.get_box(h, out).code == StatusCode::invalid_handle);
        CHECK(out.min[0] == 5.0f);
        CHECK(hash_store(s) == before);
    }
}

TEST_CASE("foreign handles: stores with different salts reject each other's handles") {
    const uint32_t n = 64;
    auto a = make_store(store_config(2, n, 0));
    auto b = make_store(store_config(2, n, 0x1234u));
    auto c = make_store(store_config(2, n, 0x5678u));
    REQUIRE(a->init_status.ok());
    REQUIRE(b->init_status.ok());
    REQUIRE(c->init_status.ok());
    Rng rng(5);
    std::vector<ObjectHandle> ha, hb, hc;
    for (uint32_t i = 0; i < n; ++i) {
        const ObjectBox box = random_box(rng, 2);
        ha.push_back((*a)->add(box, 1, 1, i).handle);
        hb.push_back((*b)->add(box, 1, 1, i).handle);
        hc.push_back((*c)->add(box, 1, 1, i).handle);
    }
    // Same operations, same slots, but salted generations differ.
    for (uint32_t i = 0; i < n; ++i) {
        CHECK(ha[i].index == hb[i].index);
        CHECK((*a)->contains(ha[i]));
        CHECK((*b)->contains(hb[i]));
        CHECK_FALSE((*a)->contains(hb[i]));
        CHECK_FALSE((*b)->contains(ha[i]));
        CHECK_FALSE((*b)->contains(hc[i]));
        CHECK_FALSE((*c)->contains(hb[i]));
        CHECK((*b)->remove(hc[i]).code == StatusCode::invalid_handle);
        CHECK((*a)->move(hb[i], random_box(rng, 2)).code == StatusCode::invalid_handle);
        CHECK(hb[i].generation != 0);
    }
    CHECK((*b)->size() == n);
    CHECK((*a)->size() == n);
}

TEST_CASE("bad boxes change nothing (3D and 2D)") {
    for (uint32_t dims : {2u, 3u}) {
        INFO("dims ", dims);
        auto owned = make_store(store_config(dims, 4));
        REQUIRE(owned->init_status.ok());
        ObjectStore& s = **owned;
        const ObjectHandle h = s.add(make_box(0, 0, 0, 1, 1, 1), 1, 1, 1).handle;
        const uint64_t before = hash_store(s);
        struct Case {
            ObjectBox box;
            StatusCode code;
        };
        const Case cases[] = {
            {make_box(kNaN, 0, 0, 1, 1, 1), StatusCode::invalid_position},
            {make_box(0, 0, 0, 1, kInf, 1), StatusCode::invalid_position},
            {make_box(-kInf, 0, 0, 1, 1, 1), StatusCode::invalid_position},
            {make_box(2, 0, 0, 1, 1, 1), StatusCode::invalid_box},
            {make_box(0, 0, 0, 1, -1, 1), StatusCode::invalid_box},
            {make_box(2, kNaN, 0, 1, 1, 1), StatusCode::invalid_position}, // NaN wins over min > max
            {make_box(0, 0, kNaN, 1, 1, 1), dims == 3 ? StatusCode::invalid_position : StatusCode::ok},
            {make_box(0, 0, 2, 1, 1, 1), dims == 3 ? StatusCode::invalid_box : StatusCode::ok},
        };
        for (const Case& c : cases) {
            if (c.code == StatusCode::ok) {
                // 2D ignores z: accepted, and nothing of z is stored.
                CHECK(s.move(h, c.box).ok());
                REQUIRE(s.move(h, make_box(0, 0, 0, 1, 1, 1)).ok());
                continue;
            }
            CHECK(s.add(c.box, 1, 1, 2).status.code == c.code);
            CHECK(s.add(c.box, 1, 1, 2).handle == ObjectHandle{});
            CHECK(s.move(h, c.box).code == c.code);
            CHECK(hash_store(s) == before);
        }
        // Degenerate boxes (points, min == max) are valid.
        CHECK(s.move(h, make_box(3, 3, 3, 3, 3, 3)).ok());
    }
}

TEST_CASE("full capacity: object_capacity with the exact count, nothing lost") {
    auto owned = make_store(store_config(3, 16));
    REQUIRE(owned->init_status.ok());
    ObjectStore& s = **owned;
    Rng rng(3);
    std::vector<ObjectHandle> handles;
    for (uint32_t i = 0; i < 16; ++i) {
        const ObjectAddResult r = s.add(random_box(rng, 3), i, i, i);
        REQUIRE(r.status.ok());
        handles.push_back(r.handle);
    }
    const uint64_t before = hash_store(s);
    for (int k = 0; k < 3; ++k) {
        const ObjectAddResult r = s.add(random_box(rng, 3), 1, 1, 1);
        CHECK(r.status.code == StatusCode::object_capacity);
        CHECK(r.status.needed == 17);
        CHECK(r.handle == ObjectHandle{});
        CHECK(hash_store(s) == before);
    }
    // A bad box is reported as such even when full (validation comes first).
    CHECK(s.add(make_box(kNaN, 0, 0, 1, 1, 1), 1, 1, 1).status.code == StatusCode::invalid_position);
    for (const ObjectHandle& h : handles)
        CHECK(s.contains(h));
    REQUIRE(s.remove(handles[5]).ok());
    CHECK(s.add(random_box(rng, 3), 1, 1, 1).status.ok());
}

TEST_CASE("generation wrap retires the slot") {
    for (uint32_t salt : {0u, 0xBEEFu}) {
        INFO("salt ", salt);
        auto owned = make_store(store_config(3, 2, salt));
        REQUIRE(owned->init_status.ok());
        ObjectStore& s = **owned;
        Model model(s.config());
        const ObjectBox box = make_box(0, 0, 0, 1, 1, 1);

        // A slot's generations go first, first + 1, ... skipping 0.
        const ObjectAddResult first = s.add(box, 1, 1, 0);
        REQUIRE(first.handle == model.add(box, 1, 1, 0).handle);
        const uint32_t slot = first.handle.index;
        const uint32_t g0 = first.handle.generation;
        CHECK(g0 != 0);
        REQUIRE(s.remove(first.handle).ok());
        REQUIRE(model.remove(first.handle) == StatusCode::ok);
        // Slot 1 is next in the FIFO, then slot 0 again with g0 + 1.
        const ObjectHandle other = s.add(box, 1, 1, 0).handle;
        REQUIRE(other == model.add(box, 1, 1, 0).handle);
        CHECK(other.index == 1 - slot);
        const ObjectHandle second = s.add(box, 1, 1, 0).handle;
        REQUIRE(second == model.add(box, 1, 1, 0).handle);
        CHECK(second == ObjectHandle{slot, g0 + 1 == 0 ? 1u : g0 + 1});

        // Jump slot `slot` to the last generation of its cycle: the handle it
        // gives now is the one just before the generation would come back to g0.
        const uint32_t last = g0 == 1 ? 0xffffffffu : g0 - 1;
        hashgrid::ObjectStoreTestAccess::set_generation(s, slot, last);
        model.set_generation(slot, last);
        CHECK_FALSE(s.contains(second)); // forcing the generation made the old handle stale
        const ObjectHandle at_end = s.handle_at(s.dense_index(ObjectHandle{slot, last}));
        CHECK(at_end == ObjectHandle{slot, last});
        REQUIRE(diff_store(s, model).empty());

        REQUIRE(s.remove(at_end).ok());
        REQUIRE(model.remove(at_end) == StatusCode::ok);
        CHECK(s.retired_count() == 1);
        CHECK(s.capacity() == 1);
        CHECK_FALSE(s.contains(at_end));
        CHECK_FALSE(s.contains(first.handle)); // the first generation is not issued again
        CHECK(diff_store(s, model).empty());
        // The store holds `other` and is now full: the retired slot is never issued.
        const ObjectAddResult full = s.add(box, 1, 1, 0);
        CHECK(full.status.code == StatusCode::object_capacity);
        CHECK(full.status.needed == 3); // the max_objects that fits: 2 live objects and the retired slot
        // clear() keeps the retirement.
        s.clear();
        model.clear();
        const ObjectAddResult after = s.add(box, 1, 1, 0);
        REQUIRE(after.status.ok());
        CHECK(after.handle.index == 1 - slot);
        CHECK(s.add(box, 1, 1, 0).status.code == StatusCode::object_capacity);
        CHECK(s.retired_count() == 1);
    }
}

TEST_CASE("generation 0 is skipped when the counter passes 2^32 - 1") {
    // With a salt, a slot's cycle can pass 0xffffffff before coming back to
    // its first generation: the next generation is then 1, not 0.
    const uint32_t salt = 0xBEEFu;
    auto owned = make_store(store_config(3, 1, salt));
    REQUIRE(owned->init_status.ok());
    ObjectStore& s = **owned;
    const uint32_t g0 = hashgrid::detail::first_generation(salt, 0);
    REQUIRE(g0 > 2); // else this test has nothing to check
    const ObjectBox box = make_box(0, 0, 0, 1, 1, 1);
    const ObjectHandle h = s.add(box, 1, 1, 0).handle;
    CHECK(h == ObjectHandle{0, g0});
    hashgrid::ObjectStoreTestAccess::set_generation(s, 0, 0xffffffffu);
    REQUIRE(s.remove(ObjectHandle{0, 0xffffffffu}).ok());
    CHECK(s.retired_count() == 0);
    const ObjectHandle next = s.add(box, 1, 1, 0).handle;
    CHECK(next == ObjectHandle{0, 1});
}

TEST_CASE("random sequences against the model") {
    const uint32_t ops = scaled_count(20000);
    for (uint32_t dims : {2u, 3u}) {
        for (uint32_t max : {1u, 7u, 64u, 300u}) {
            for (uint32_t salt : {0u, 99u}) {
                INFO("dims ", dims, " max_objects ", max, " salt ", salt);
                auto owned = make_store(store_config(dims, max, salt));
                REQUIRE(owned->init_status.ok());
                Model model((*owned)->config());
                Rng rng(1000u * dims + max + salt);
                std::vector<ObjectHandle> dead;
                churn(**owned, model, rng, ops, max <= 64 ? 1u : 17u, dead);
            }
        }
    }
}

TEST_CASE("dense order is a pure function of the operations") {
    // Two stores on memory filled differently, the same operations: identical
    // dense arrays, handles and a golden hash (same on every platform: only
    // integer operations and copied floats are involved).
    const ObjectStoreConfig c = store_config(3, 500);
    auto a = make_store(c, 0x00);
    auto b = make_store(c, 0xFF);
    REQUIRE(a->init_status.ok());
    REQUIRE(b->init_status.ok());
    Model ma(c), mb(c);
    Rng ra(77), rb(77);
    std::vector<ObjectHandle> da, db;
    churn(**a, ma, ra, 5000, 97, da);
    churn(**b, mb, rb, 5000, 97, db);
    for (uint32_t i = 0; i < 200; ++i) { // end with a well-filled store
        const ObjectBox box = random_box(ra, 3);
        REQUIRE((*a)->add(box, i, i, i).status.code == ma.add(box, i, i, i).status.code);
        REQUIRE((*b)->add(box, i, i, i).status.code == mb.add(box, i, i, i).status.code);
    }
    REQUIRE(diff_store(**a, ma).empty());
    REQUIRE((*a)->size() == (*b)->size());
    const uint32_t n = (*a)->size();
    for (uint32_t d = 0; d < 3; ++d) {
        CHECK(std::memcmp((*a)->min_coords(d), (*b)->min_coords(d), n * sizeof(float)) == 0);
        CHECK(std::memcmp((*a)->max_coords(d), (*b)->max_coords(d), n * sizeof(float)) == 0);
    }
    CHECK(std::memcmp((*a)->dense_slots(), (*b)->dense_slots(), n * sizeof(uint32_t)) == 0);
    CHECK(hash_store(**a) == hash_store(**b));
    // Golden value: golden::kObjectStore in tests/golden_hashes.h.
    if (std::getenv("HASHGRID_PRINT_GOLDEN") != nullptr)
        std::printf("inline constexpr uint64_t kObjectStore = 0x%016llxull; // size %u\n",
                    static_cast<unsigned long long>(hash_store(**a)), static_cast<unsigned>(n));
    CHECK(hash_store(**a) == golden::kObjectStore);
}

// ---------------------------------------------------------------------------
// With the box grid: pairs and queries after churn equal brute force over the model.

namespace {

using SlotPair = std::pair<uint32_t, uint32_t>;

/// Closed boxes overlap on every read axis (box_grid.h).
bool overlaps(const ObjectBox& a, const ObjectBox& b, uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!(a.min[d] <= b.max[d] && b.min[d] <= a.max[d])) return false;
    return true;
}

/// Every overlapping pair of live model objects passing the layer rule, as sorted (slot, slot).
std::vector<SlotPair> brute_force_slot_pairs(const Model& model, uint32_t dims) {
    std::vector<SlotPair> out;
    const std::vector<uint32_t>& dense = model.dense();
    for (size_t i = 0; i < dense.size(); ++i) {
        for (size_t j = i + 1; j < dense.size(); ++j) {
            const ModelObject& a = model.object(dense[i]);
            const ModelObject& b = model.object(dense[j]);
            if ((a.category & b.mask) == 0 || (b.category & a.mask) == 0) continue;
            if (overlaps(a.box, b.box, dims))
                out.emplace_back(std::min(dense[i], dense[j]), std::max(dense[i], dense[j]));
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// Grid pairs (dense indices) as sorted slot pairs; duplicates stay (and then differ from the oracle).
std::vector<SlotPair> slot_pairs(const ObjectStore& store, const Pair* pairs, uint64_t count) {
    std::vector<SlotPair> out;
    for (uint64_t k = 0; k < count; ++k) {
        const uint32_t a = store.handle_at(pairs[k].a).index;
        const uint32_t b = store.handle_at(pairs[k].b).index;
        out.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(out.begin(), out.end());
    return out;
}

hashgrid::BoxGridConfig box_grid_config(uint32_t dims, float cell, uint32_t max_objects, uint32_t entries_per_object) {
    hashgrid::BoxGridConfig c;
    c.dimensions = dims;
    c.cell_size = cell;
    c.max_objects = max_objects;
    c.max_cell_entries = max_objects * entries_per_object;
    c.max_pairs = uint64_t{max_objects} * max_objects / 2 + 16;
    return c;
}

} // namespace

TEST_CASE("store -> BoxGrid: pairs after churn equal brute force over the model") {
    ParallelBackend parallel(4);
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    const uint32_t rounds = std::max(3u, scaled_count(12));
    for (uint32_t dims : {2u, 3u}) {
        INFO("dims ", dims);
        const uint32_t max = 400;
        auto owned = make_store(store_config(dims, max));
        REQUIRE(owned->init_status.ok());
        ObjectStore& store = **owned;
        Model model(store.config());
        const hashgrid::BoxGridConfig gc = box_grid_config(dims, 2.0f, max, 64);
        hashgrid::BoxGrid grid;
        REQUIRE(grid.init_allocate(gc).ok());
        BoxShape shape;
        shape.lo = dims == 2 ? -10.0f : -5.0f;
        shape.hi = -shape.lo;
        shape.max_edge = 3.0f;
        shape.large_one_in = 40; // some boxes cover more than large_object_cells cells
        shape.large_edge = 30.0f;
        shape.layer_bits = 3;
        Rng rng(4242 + dims);
        std::vector<ObjectHandle> dead;
        std::vector<Pair> pairs(static_cast<size_t>(gc.max_pairs));
        std::vector<Pair> again(static_cast<size_t>(gc.max_pairs));
        uint64_t total_pairs = 0;
        for (uint32_t round = 0; round < rounds; ++round) {
            INFO("round ", round);
            churn(store, model, rng, 300, 299, dead, shape, 0);
            if (round == rounds / 2) {
                store.clear();
                model.clear();
            }
            REQUIRE(grid.rebuild(store.spans(), parallel.backend()).ok());
            const hashgrid::PairResult p = grid.find_pairs(pairs.data(), pairs.size(), parallel.backend());
            REQUIRE(p.status.ok());
            const std::vector<SlotPair> expected = brute_force_slot_pairs(model, dims);
            CHECK(slot_pairs(store, pairs.data(), p.written) == expected);
            total_pairs += expected.size();
            // The same store rebuilt on one thread gives the same pairs in the same order.
            REQUIRE(grid.rebuild(store.spans(), serial).ok());
            const hashgrid::PairResult q = grid.find_pairs(again.data(), again.size(), serial);
            REQUIRE(q.written == p.written);
            CHECK(hash_pairs(again.data(), q.written) == hash_pairs(pairs.data(), p.written));
        }
        CHECK(total_pairs > (rounds >= 12 ? 500u : 10u)); // the scenes do overlap
    }
}

// ---------------------------------------------------------------------------
// The client API (proximity_index.h).

namespace {

using hashgrid::ProximityIndex;
using hashgrid::ProximityIndexConfig;
using hashgrid::QueryResult;

struct ClientModel {
    ObjectBox box;
    uint32_t category = 0;
    uint32_t mask = 0;
};

uint64_t handle_key(ObjectHandle h) { return (uint64_t{h.index} << 32) | h.generation; }

/// The client box as proximity_index.h defines it: dimensions * 0.5f, then p - half and p + half.
ObjectBox centred_box(uint32_t dims, const float (&p)[3], const float (&size)[3]) {
    ObjectBox b;
    for (uint32_t d = 0; d < dims; ++d) {
        const float half = size[d] * 0.5f;
        b.min[d] = p[d] - half;
        b.max[d] = p[d] + half;
    }
    return b;
}

/// point_box_distance2 of box_queries.h, written out independently.
float distance2_to_box(uint32_t dims, const float (&p)[3], const ObjectBox& b) {
    float d2 = 0.0f;
    for (uint32_t d = 0; d < dims; ++d) {
        const float t = p[d] < b.min[d] ? b.min[d] - p[d] : (p[d] > b.max[d] ? p[d] - b.max[d] : 0.0f);
        d2 = d2 + rounded_mul(t, t);
    }
    return d2;
}

std::vector<uint64_t> sorted_keys(const ObjectHandle* handles, uint64_t count) {
    std::vector<uint64_t> keys;
    for (uint64_t k = 0; k < count; ++k)
        keys.push_back(handle_key(handles[k]));
    std::sort(keys.begin(), keys.end());
    return keys;
}

/// An index on caller memory filled with garbage first.
struct OwnedIndex {
    std::unique_ptr<ProximityIndex> index = std::make_unique<ProximityIndex>();
    void* memory = nullptr;
    Status init_status;
    OwnedIndex() = default;
    OwnedIndex(const OwnedIndex&) = delete;
    OwnedIndex& operator=(const OwnedIndex&) = delete;
    ~OwnedIndex() {
        index.reset();
        hashgrid::aligned_free_bytes(memory);
    }
    ProximityIndex& operator*() { return *index; }
    ProximityIndex* operator->() { return index.get(); }
};

std::unique_ptr<OwnedIndex> make_index(const ProximityIndexConfig& config) {
    auto owned = std::make_unique<OwnedIndex>();
    const hashgrid::MemoryRequirements req = ProximityIndex::memory_requirements(config);
    if (!req.status.ok()) {
        owned->init_status = req.status;
        return owned;
    }
    owned->memory = hashgrid::aligned_alloc_bytes(req.bytes, req.alignment);
    REQUIRE(owned->memory != nullptr);
    std::memset(owned->memory, 0x5A, static_cast<size_t>(req.bytes));
    owned->init_status = owned->index->init(config, owned->memory, static_cast<size_t>(req.bytes));
    return owned;
}

ProximityIndexConfig index_config(uint32_t dims, float cell, uint32_t max_clients, uint32_t entries_per_client) {
    ProximityIndexConfig c;
    c.grid = box_grid_config(dims, cell, max_clients, entries_per_client);
    return c;
}

/// Random client parameters: position in [lo, hi), size in [0, max_edge) (sometimes large).
void random_client(Rng& rng, uint32_t dims, const BoxShape& shape, float (&p)[3], float (&size)[3]) {
    const float edge =
        shape.large_one_in != 0 && rng.below(shape.large_one_in) == 0 ? shape.large_edge : shape.max_edge;
    for (uint32_t d = 0; d < 3; ++d) {
        p[d] = d < dims ? rng.uniform(shape.lo, shape.hi) : 0.0f;
        size[d] = d < dims ? rng.uniform(0.0f, edge) : 0.0f;
    }
}

/// Checks find_near / find_near_radius / find_pairs of the index against brute force over the model.
uint64_t g_query_results = 0; // over all check_queries() calls: the scenes are not trivially empty

void check_queries(ProximityIndex& index, const std::map<uint64_t, ClientModel>& model, Rng& rng, const BoxShape& shape,
                   uint32_t queries, const hashgrid::ThreadBackend& backend) {
    const uint32_t dims = index.config().grid.dimensions;
    std::vector<ObjectHandle> out(index.config().grid.max_objects + 1);
    for (uint32_t q = 0; q < queries; ++q) {
        float p[3];
        float size[3];
        random_client(rng, dims, shape, p, size);
        size[0] = size[0] * 3.0f; // queries a little larger than clients
        const uint32_t layer_mask = rng.coin() ? hashgrid::kAllLayers : rng.next_u32() & 7u;
        const float radius = rng.uniform(0.0f, 4.0f);

        const ObjectBox query = centred_box(dims, p, size);
        std::vector<uint64_t> expected_box, expected_radius;
        for (const auto& [key, c] : model) {
            if ((c.category & layer_mask) == 0) continue;
            if (overlaps(query, c.box, dims)) expected_box.push_back(key);
            if (distance2_to_box(dims, p, c.box) <= rounded_mul(radius, radius)) expected_radius.push_back(key);
        }
        const QueryResult rb = index.find_near(p, size, layer_mask, out.data(), static_cast<uint32_t>(out.size()));
        REQUIRE(rb.status.ok());
        CHECK(rb.total == expected_box.size());
        CHECK(sorted_keys(out.data(), rb.written) == expected_box); // each client once
        const QueryResult rr =
            index.find_near_radius(p, radius, layer_mask, out.data(), static_cast<uint32_t>(out.size()));
        REQUIRE(rr.status.ok());
        CHECK(sorted_keys(out.data(), rr.written) == expected_radius);
        g_query_results += expected_box.size() + expected_radius.size();
    }
    // Pairs: dense indices mapped back to handles.
    std::vector<std::pair<uint64_t, uint64_t>> expected;
    for (auto i = model.begin(); i != model.end(); ++i) {
        for (auto j = std::next(i); j != model.end(); ++j) {
            const ClientModel& a = i->second;
            const ClientModel& b = j->second;
            if ((a.category & b.mask) == 0 || (b.category & a.mask) == 0) continue;
            if (overlaps(a.box, b.box, dims)) expected.emplace_back(i->first, j->first);
        }
    }
    std::vector<Pair> pairs(static_cast<size_t>(index.config().grid.max_pairs));
    const hashgrid::PairResult pr = index.find_pairs(pairs.data(), pairs.size(), backend);
    REQUIRE(pr.status.ok());
    std::vector<std::pair<uint64_t, uint64_t>> got;
    for (uint64_t k = 0; k < pr.written; ++k) {
        const uint64_t a = handle_key(index.handle_at(pairs[static_cast<size_t>(k)].a));
        const uint64_t b = handle_key(index.handle_at(pairs[static_cast<size_t>(k)].b));
        got.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(got.begin(), got.end());
    CHECK(got == expected);
    g_query_results += expected.size();
}

} // namespace

TEST_CASE("client API: random churn, queries and pairs equal brute force") {
    ParallelBackend parallel(3);
    const uint32_t rounds = std::max(3u, scaled_count(10));
    for (uint32_t dims : {2u, 3u}) {
        for (bool explicit_update : {true, false}) {
            INFO("dims ", dims, explicit_update ? " update_index" : " lazy rebuild");
            const uint32_t max = 500;
            auto owned = make_index(index_config(dims, 2.0f, max, 64));
            REQUIRE(owned->init_status.ok());
            ProximityIndex& index = **owned;
            BoxShape shape;
            shape.lo = dims == 2 ? -20.0f : -8.0f;
            shape.hi = -shape.lo;
            shape.max_edge = 3.0f;
            shape.large_one_in = 50;
            shape.large_edge = 40.0f;
            std::map<uint64_t, ClientModel> model;
            std::vector<ObjectHandle> dead;
            Rng rng(99 + dims * 2 + (explicit_update ? 1 : 0));
            for (uint32_t round = 0; round < rounds; ++round) {
                INFO("round ", round);
                for (uint32_t op = 0; op < 120; ++op) {
                    const uint32_t kind = rng.below(100);
                    float p[3];
                    float size[3];
                    random_client(rng, dims, shape, p, size);
                    if (kind < 45) {
                        const uint32_t category = 1u << rng.below(3);
                        const uint32_t mask = rng.next_u32() & 7u;
                        const hashgrid::ObjectAddResult r = index.create_client(p, size, category, mask, op);
                        if (model.size() == max) {
                            CHECK(r.status.code == StatusCode::object_capacity);
                            continue;
                        }
                        REQUIRE(r.status.ok());
                        model[handle_key(r.handle)] = ClientModel{centred_box(dims, p, size), category, mask};
                    } else if (kind < 75 && !model.empty()) {
                        const ObjectHandle h = index.handle_at(rng.below(index.client_count()));
                        REQUIRE(index.update_client(h, p, size).ok());
                        model[handle_key(h)].box = centred_box(dims, p, size);
                    } else if (kind < 80 && !model.empty()) {
                        const ObjectHandle h = index.handle_at(rng.below(index.client_count()));
                        const uint32_t category = 1u << rng.below(3);
                        const uint32_t mask = rng.next_u32() & 7u;
                        REQUIRE(index.set_client_layers(h, category, mask).ok());
                        model[handle_key(h)].category = category;
                        model[handle_key(h)].mask = mask;
                    } else if (kind < 98 && !model.empty()) {
                        const ObjectHandle h = index.handle_at(rng.below(index.client_count()));
                        REQUIRE(index.remove_client(h).ok());
                        model.erase(handle_key(h));
                        dead.push_back(h);
                    } else if (!dead.empty()) {
                        // Stale handles change nothing.
                        const ObjectHandle h = dead[rng.below(static_cast<uint32_t>(dead.size()))];
                        CHECK(index.update_client(h, p, size).code == StatusCode::invalid_handle);
                        CHECK(index.remove_client(h).code == StatusCode::invalid_handle);
                        CHECK(index.set_client_layers(h, 1, 1).code == StatusCode::invalid_handle);
                    }
                }
                REQUIRE(index.client_count() == model.size());
                CHECK(index.dirty());
                if (explicit_update) {
                    REQUIRE(index.update_index(parallel.backend()).ok());
                    CHECK_FALSE(index.dirty());
                    // The tracked entry count is the grid's (the same cell rule).
                    CHECK(index.cell_entry_count() == index.grid().entry_count());
                    CHECK(index.update_index(parallel.backend()).ok()); // no-op when clean
                }
                check_queries(index, model, rng, shape, 40, parallel.backend());
                CHECK_FALSE(index.dirty());
                CHECK(index.cell_entry_count() == index.grid().entry_count());
                if (round == rounds / 2) {
                    for (const auto& [key, c] : model)
                        dead.push_back(ObjectHandle{static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key)});
                    index.clear();
                    model.clear();
                    CHECK(index.cell_entry_count() == 0);
                }
            }
        }
    }
    CHECK(g_query_results > (rounds >= 10 ? 2000u : 100u)); // the scenes are not trivially empty
}

TEST_CASE("client API: hand-computed scenario, statuses, nothing lost") {
    // 2D, cell 1 (guarded: a coordinate k > 0 exactly on a nominal edge is in cell k - 1).
    ProximityIndexConfig config = index_config(2, 1.0f, 8, 1);
    config.grid.max_cell_entries = 10;
    config.grid.max_pairs = 64;
    auto owned = make_index(config);
    REQUIRE(owned->init_status.ok());
    ProximityIndex& index = **owned;
    CHECK(index.dirty());
    ObjectHandle out[8];

    // Empty index: queries build it and find nothing.
    QueryResult r = index.find_near({0.0f, 0.0f}, {100.0f, 100.0f}, hashgrid::kAllLayers, out, 8);
    CHECK(r.status.ok());
    CHECK(r.total == 0);
    CHECK_FALSE(index.dirty());

    // a: [1.25, 1.75]^2, 1 cell. b: [1.25, 3.75] x [1.25, 1.75], cells x 1..3: 3. c: 1 cell.
    const ObjectHandle a = index.create_client({1.5f, 1.5f}, {0.5f, 0.5f}, 1, hashgrid::kAllLayers, 100).handle;
    const ObjectHandle b = index.create_client({2.5f, 1.5f}, {2.5f, 0.5f}, 1, hashgrid::kAllLayers, 101).handle;
    const ObjectHandle c = index.create_client({10.5f, 10.5f}, {0.5f, 0.5f}, 2, hashgrid::kAllLayers, 102).handle;
    CHECK(index.client_count() == 3);
    CHECK(index.cell_entry_count() == 5);
    CHECK(index.dirty());
    CHECK(index.objects().user_values()[index.objects().dense_index(b)] == 101);

    // The query box [1, 2]^2 overlaps a and b (closed boxes), not c.
    r = index.find_near({1.5f, 1.5f}, {1.0f, 1.0f}, hashgrid::kAllLayers, out, 8);
    REQUIRE(r.status.ok());
    CHECK(r.total == 2);
    CHECK(sorted_keys(out, r.written) == sorted_keys(std::vector<ObjectHandle>{a, b}.data(), 2));
    CHECK_FALSE(index.dirty());
    CHECK(index.grid().entry_count() == 5);
    // Touching counts: the box [3.75, 4.75] x [1.75, 2.75] touches b's corner.
    r = index.find_near({4.25f, 2.25f}, {1.0f, 1.0f}, hashgrid::kAllLayers, out, 8);
    CHECK(r.total == 1);
    CHECK(out[0] == b);
    // Too small a buffer: the exact count and a prefix of the full answer.
    ObjectHandle full[8];
    const QueryResult all = index.find_near({1.5f, 1.5f}, {1.0f, 1.0f}, hashgrid::kAllLayers, full, 8);
    r = index.find_near({1.5f, 1.5f}, {1.0f, 1.0f}, hashgrid::kAllLayers, out, 1);
    CHECK(r.status.code == StatusCode::output_too_small);
    CHECK(r.status.needed == 2);
    CHECK(r.total == 2);
    CHECK(r.written == 1);
    CHECK(out[0] == full[0]);
    r = index.find_near({1.5f, 1.5f}, {1.0f, 1.0f}, hashgrid::kAllLayers, nullptr, 0);
    CHECK(r.status.code == StatusCode::output_too_small);
    CHECK(r.total == all.total);
    // Layers: c has category 2.
    r = index.find_near({10.5f, 10.5f}, {1.0f, 1.0f}, 1, out, 8);
    CHECK(r.total == 0);
    r = index.find_near({10.5f, 10.5f}, {1.0f, 1.0f}, 2, out, 8);
    CHECK(r.total == 1);

    // Circle: c's box ends at x = 10.75; from (11, 10.5) the distance is 0.25 exactly.
    r = index.find_near_radius({11.0f, 10.5f}, 0.2f, hashgrid::kAllLayers, out, 8);
    CHECK(r.total == 0);
    r = index.find_near_radius({11.0f, 10.5f}, 0.25f, hashgrid::kAllLayers, out, 8);
    REQUIRE(r.total == 1);
    CHECK(out[0] == c);
    r = index.find_near_radius({10.5f, 10.5f}, 0.0f, hashgrid::kAllLayers, out, 8); // inside: distance 0
    CHECK(r.total == 1);

    // Pairs: only (a, b), as dense indices.
    Pair pairs[4];
    hashgrid::PairResult pr = index.find_pairs(pairs, 4, hashgrid::serial_backend());
    REQUIRE(pr.status.ok());
    REQUIRE(pr.written == 1);
    CHECK(handle_key(index.handle_at(pairs[0].a)) + handle_key(index.handle_at(pairs[0].b)) ==
          handle_key(a) + handle_key(b));

    // Moving c next to a: the next query sees it without an explicit update_index().
    REQUIRE(index.update_client(c, {2.0f, 1.5f}, {0.5f, 0.5f}).ok());
    CHECK(index.dirty());
    r = index.find_near({1.5f, 1.5f}, {1.0f, 1.0f}, hashgrid::kAllLayers, out, 8);
    CHECK(r.total == 3);
    pr = index.find_pairs(pairs, 4, hashgrid::serial_backend());
    CHECK(pr.total == 3);                 // (a, b), (b, c), (a, c): a ends at 1.75 where c starts (closed boxes touch)
    CHECK(index.cell_entry_count() == 6); // c: [1.75, 2.25] covers cells 1..2

    // entry_capacity: 7 more cells would make 13 > 10; nothing changes.
    const uint32_t count_before = index.client_count();
    hashgrid::ObjectAddResult big = index.create_client({5.5f, 5.5f}, {5.5f, 0.5f});
    CHECK(big.status.code == StatusCode::entry_capacity);
    CHECK(big.status.needed == 13);
    CHECK(big.handle == ObjectHandle{});
    CHECK(index.client_count() == count_before);
    CHECK(index.cell_entry_count() == 6);
    ObjectBox before_box;
    REQUIRE(index.objects().get_box(b, before_box).ok());
    Status s = index.update_client(b, {2.5f, 1.5f}, {6.5f, 0.5f}); // 7 cells instead of 3: 10 ok
    CHECK(s.ok());
    s = index.update_client(b, {2.5f, 1.5f}, {8.5f, 0.5f}); // 9 cells: 12 > 10
    CHECK(s.code == StatusCode::entry_capacity);
    CHECK(s.needed == 12);
    ObjectBox after_box;
    REQUIRE(index.objects().get_box(b, after_box).ok());
    CHECK(after_box.max[0] == 2.5f + 3.25f); // the successful update stays
    CHECK(index.cell_entry_count() == 10);
    REQUIRE(index.update_index(hashgrid::serial_backend()).ok());
    CHECK(index.grid().entry_count() == 10);
    // A large client (more than large_object_cells = 64 cells) takes no entries.
    hashgrid::ObjectAddResult huge = index.create_client({0.0f, 0.0f}, {20.0f, 20.0f});
    REQUIRE(huge.status.ok());
    CHECK(index.cell_entry_count() == 10);
    r = index.find_near({-9.0f, -9.0f}, {0.5f, 0.5f}, hashgrid::kAllLayers, out, 8);
    REQUIRE(r.total == 1);
    CHECK(out[0] == huge.handle);
    REQUIRE(index.remove_client(huge.handle).ok());

    // Bad input: defined statuses, nothing changes.
    const float nan = kNaN;
    CHECK(index.create_client({nan, 0.0f}, {1.0f, 1.0f}).status.code == StatusCode::invalid_position);
    CHECK(index.create_client({0.0f, 0.0f}, {kInf, 1.0f}).status.code == StatusCode::invalid_position);
    CHECK(index.create_client({0.0f, 0.0f}, {-1.0f, 1.0f}).status.code == StatusCode::invalid_box);
    // A negative size too small to show in the box is still rejected.
    CHECK(index.create_client({1e8f, 0.0f}, {-0.5f, 1.0f}).status.code == StatusCode::invalid_box);
    CHECK(index.create_client({3e38f, 0.0f}, {3e38f, 1.0f}).status.code == StatusCode::invalid_position);
    // Beyond the 2D key range (|cell| <= 2^31 - 3): accepted as a large
    // client (no cell entries), found where it is, moved and removed.
    const uint64_t entries_before_far = index.cell_entry_count();
    const hashgrid::ObjectAddResult far_client = index.create_client({1e10f, 0.0f}, {1.0f, 1.0f});
    REQUIRE(far_client.status.ok());
    CHECK(index.cell_entry_count() == entries_before_far);
    r = index.find_near({1e10f, 0.0f}, {1.0f, 1.0f}, hashgrid::kAllLayers, out, 8);
    REQUIRE(r.total == 1);
    CHECK(out[0] == far_client.handle);
    REQUIRE(index.update_client(far_client.handle, {0.0f, -1e10f}, {1.0f, 1.0f}).ok());
    CHECK(index.find_near({1e10f, 0.0f}, {1.0f, 1.0f}, hashgrid::kAllLayers, out, 8).total == 0);
    r = index.find_near({0.0f, -1e10f}, {1.0f, 1.0f}, hashgrid::kAllLayers, out, 8);
    REQUIRE(r.total == 1);
    CHECK(out[0] == far_client.handle);
    CHECK(index.cell_entry_count() == entries_before_far);
    REQUIRE(index.remove_client(far_client.handle).ok());
    CHECK(index.update_client(a, {0.0f, nan}, {1.0f, 1.0f}).code == StatusCode::invalid_position);
    CHECK(index.find_near({nan, 0.0f}, {1.0f, 1.0f}, hashgrid::kAllLayers, out, 8).status.code ==
          StatusCode::invalid_query);
    CHECK(index.find_near({0.0f, 0.0f}, {-1.0f, 1.0f}, hashgrid::kAllLayers, out, 8).status.code ==
          StatusCode::invalid_query);
    CHECK(index.find_near_radius({0.0f, 0.0f}, -1.0f, hashgrid::kAllLayers, out, 8).status.code ==
          StatusCode::invalid_query);
    CHECK(index.find_near_radius({0.0f, 0.0f}, nan, hashgrid::kAllLayers, out, 8).status.code ==
          StatusCode::invalid_query);
    CHECK(index.find_near_radius({kInf, 0.0f}, 1.0f, hashgrid::kAllLayers, out, 8).status.code ==
          StatusCode::invalid_query);
    // An infinite query size or radius means everything.
    r = index.find_near({0.0f, 0.0f}, {kInf, kInf}, hashgrid::kAllLayers, out, 8);
    CHECK(r.total == 3);
    r = index.find_near_radius({0.0f, 0.0f}, kInf, hashgrid::kAllLayers, out, 8);
    CHECK(r.total == 3);
    CHECK(index.client_count() == 3);
    CHECK(index.cell_entry_count() == 10);

    // Remove: the handle goes stale; queries no longer see the client.
    REQUIRE(index.remove_client(a).ok());
    CHECK(index.remove_client(a).code == StatusCode::invalid_handle);
    CHECK(index.update_client(a, {1.5f, 1.5f}, {0.5f, 0.5f}).code == StatusCode::invalid_handle);
    CHECK(index.set_client_layers(a, 1, 1).code == StatusCode::invalid_handle);
    CHECK_FALSE(index.contains(a));
    CHECK(index.cell_entry_count() == 9);
    r = index.find_near({1.5f, 1.5f}, {0.4f, 0.4f}, hashgrid::kAllLayers, out, 8);
    CHECK(r.total == 1); // b only
    CHECK(out[0] == b);

    // object_capacity: fill the 8 slots with 1-entry clients... entries run out first at 10.
    CHECK(index.create_client({20.5f, 20.5f}, {0.5f, 0.5f}).status.ok());
    const hashgrid::ObjectAddResult over = index.create_client({30.5f, 30.5f}, {0.5f, 0.5f});
    CHECK(over.status.code == StatusCode::entry_capacity);
    CHECK(over.status.needed == 11);
    for (uint32_t i = 0; i < 5; ++i)
        REQUIRE(index.create_client({0.0f, 0.0f}, {30.0f, 30.0f}).status.ok()); // large: no entries
    CHECK(index.client_count() == 8);
    const hashgrid::ObjectAddResult full_add = index.create_client({0.0f, 0.0f}, {30.0f, 30.0f});
    CHECK(full_add.status.code == StatusCode::object_capacity);
    CHECK(full_add.status.needed == 9);

    // clear(): every handle stale, nothing found.
    index.clear();
    CHECK(index.client_count() == 0);
    CHECK(index.cell_entry_count() == 0);
    CHECK_FALSE(index.contains(b));
    CHECK_FALSE(index.contains(c));
    r = index.find_near({0.0f, 0.0f}, {kInf, kInf}, hashgrid::kAllLayers, out, 8);
    CHECK(r.total == 0);
}

TEST_CASE("client API: bounded worlds reject or clamp") {
    for (hashgrid::OutOfBounds mode : {hashgrid::OutOfBounds::reject, hashgrid::OutOfBounds::clamp}) {
        ProximityIndexConfig config = index_config(2, 1.0f, 4, 16);
        config.grid.world = hashgrid::World::bounded;
        config.grid.cell_counts[0] = 4;
        config.grid.cell_counts[1] = 4;
        config.grid.out_of_bounds = mode;
        auto owned = make_index(config);
        REQUIRE(owned->init_status.ok());
        ProximityIndex& index = **owned;
        const hashgrid::ObjectAddResult inside = index.create_client({1.5f, 1.5f}, {0.5f, 0.5f});
        REQUIRE(inside.status.ok());
        const hashgrid::ObjectAddResult outside = index.create_client({10.5f, 1.5f}, {0.5f, 0.5f});
        const hashgrid::ObjectAddResult below = index.create_client({-0.5f, 1.5f}, {2.0f, 0.5f});
        ObjectHandle out[4];
        if (mode == hashgrid::OutOfBounds::reject) {
            CHECK(outside.status.code == StatusCode::position_out_of_range);
            CHECK(below.status.code == StatusCode::position_out_of_range);
            CHECK(index.update_client(inside.handle, {4.5f, 1.5f}, {0.5f, 0.5f}).code ==
                  StatusCode::position_out_of_range);
            CHECK(index.client_count() == 1);
            CHECK(index.cell_entry_count() == 1);
        } else {
            REQUIRE(outside.status.ok());
            REQUIRE(below.status.ok());
            // Clamped into the border cells: 1 entry, and [-1.5, 0.5] covers cell 0 only.
            CHECK(index.cell_entry_count() == 3);
            const QueryResult r = index.find_near({10.5f, 1.5f}, {0.5f, 0.5f}, hashgrid::kAllLayers, out, 4);
            REQUIRE(r.total == 1);
            CHECK(out[0] == outside.handle);
            REQUIRE(index.update_index(hashgrid::serial_backend()).ok());
            CHECK(index.grid().entry_count() == 3);
        }
    }
}

TEST_CASE("client API: config, memory and init") {
    ProximityIndexConfig config = index_config(3, 1.0f, 100, 8);
    const hashgrid::MemoryRequirements req = ProximityIndex::memory_requirements(config);
    REQUIRE(req.status.ok());
    const hashgrid::MemoryRequirements store_req =
        ObjectStore::memory_requirements(store_config(3, config.grid.max_objects));
    const hashgrid::MemoryRequirements grid_req = hashgrid::BoxGrid::memory_requirements(config.grid);
    CHECK(req.bytes >= store_req.bytes + grid_req.bytes + 2 * 4 * 100);
    CHECK(req.alignment >= 64);
    ProximityIndexConfig bad = config;
    bad.grid.max_objects = 0;
    CHECK(ProximityIndex::memory_requirements(bad).status.code == StatusCode::invalid_config);
    bad = config;
    bad.grid.dimensions = 4;
    CHECK(ProximityIndex::validate(bad).code == StatusCode::invalid_config);
    ProximityIndex index;
    std::vector<unsigned char> raw(static_cast<size_t>(req.bytes) + req.alignment);
    auto* aligned = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw.data()) + req.alignment - 1) &
                                                     ~uintptr_t{req.alignment - 1});
    CHECK(index.init(config, aligned, static_cast<size_t>(req.bytes) - 1).code == StatusCode::memory_too_small);
    CHECK(index.init(config, aligned + 8, static_cast<size_t>(req.bytes)).code == StatusCode::memory_misaligned);
    REQUIRE(index.init(config, aligned, static_cast<size_t>(req.bytes)).ok());
    CHECK(index.create_client({0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}).status.ok());
    ProximityIndex allocated;
    REQUIRE(allocated.init_allocate(config).ok());
    REQUIRE(allocated.init_allocate(config).ok()); // again: the old block is freed
    CHECK(allocated.client_count() == 0);
}

TEST_CASE("client API: same operations, same answers in the same order for any thread count") {
    ParallelBackend parallel(4);
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    for (uint32_t dims : {2u, 3u}) {
        INFO("dims ", dims);
        auto a = make_index(index_config(dims, 2.0f, 600, 64));
        auto b = make_index(index_config(dims, 2.0f, 600, 64));
        REQUIRE(a->init_status.ok());
        REQUIRE(b->init_status.ok());
        (*b)->set_query_backend(parallel.backend());
        BoxShape shape;
        shape.lo = dims == 2 ? -20.0f : -8.0f;
        shape.hi = -shape.lo;
        shape.max_edge = 3.0f;
        shape.large_one_in = 60;
        shape.large_edge = 40.0f;
        Rng rng(314 + dims);
        for (uint32_t op = 0; op < 1500; ++op) {
            float p[3];
            float size[3];
            random_client(rng, dims, shape, p, size);
            const uint32_t kind = rng.below(10);
            if (kind < 5 || (*a)->client_count() == 0) {
                const uint32_t category = 1u << rng.below(3);
                const hashgrid::ObjectAddResult ra = (*a)->create_client(p, size, category, 7u, op);
                const hashgrid::ObjectAddResult rb = (*b)->create_client(p, size, category, 7u, op);
                REQUIRE(ra.status.code == rb.status.code);
                REQUIRE(ra.handle == rb.handle);
            } else {
                const uint32_t dense = rng.below((*a)->client_count());
                REQUIRE((*a)->handle_at(dense) == (*b)->handle_at(dense));
                if (kind < 8) {
                    REQUIRE((*a)->update_client((*a)->handle_at(dense), p, size).ok());
                    REQUIRE((*b)->update_client((*b)->handle_at(dense), p, size).ok());
                } else {
                    REQUIRE((*a)->remove_client((*a)->handle_at(dense)).ok());
                    REQUIRE((*b)->remove_client((*b)->handle_at(dense)).ok());
                }
            }
        }
        REQUIRE((*b)->update_index(parallel.backend()).ok()); // a rebuilds lazily on its serial backend
        std::vector<ObjectHandle> out_a(600);
        std::vector<ObjectHandle> out_b(600);
        uint64_t results = 0;
        for (uint32_t q = 0; q < 60; ++q) {
            float p[3];
            float size[3];
            random_client(rng, dims, shape, p, size);
            size[0] = size[0] * 4.0f;
            size[1] = size[1] * 4.0f;
            const QueryResult ra = (*a)->find_near(p, size, hashgrid::kAllLayers, out_a.data(), 600);
            const QueryResult rb = (*b)->find_near(p, size, hashgrid::kAllLayers, out_b.data(), 600);
            REQUIRE(ra.total == rb.total);
            CHECK(std::equal(out_a.begin(), out_a.begin() + ra.written, out_b.begin()));
            const QueryResult ca = (*a)->find_near_radius(p, size[0], 3u, out_a.data(), 600);
            const QueryResult cb = (*b)->find_near_radius(p, size[0], 3u, out_b.data(), 600);
            REQUIRE(ca.total == cb.total);
            CHECK(std::equal(out_a.begin(), out_a.begin() + ca.written, out_b.begin()));
            results += ra.total + ca.total;
        }
        CHECK(results > 100);
        std::vector<Pair> pa(static_cast<size_t>((*a)->config().grid.max_pairs));
        std::vector<Pair> pb(pa.size());
        const hashgrid::PairResult ra = (*a)->find_pairs(pa.data(), pa.size(), serial);
        const hashgrid::PairResult rb = (*b)->find_pairs(pb.data(), pb.size(), parallel.backend());
        REQUIRE(ra.status.ok());
        REQUIRE(ra.written == rb.written);
        CHECK(ra.written > 50);
        CHECK(hash_pairs(pa.data(), ra.written) == hash_pairs(pb.data(), rb.written));
    }
}

TEST_CASE("change log: moves and layer changes listed in order; incomplete across layout changes and past the ring") {
    ObjectStore never;
    CHECK_FALSE(never.changes_since(0).complete);
    CHECK(never.changes_since(0).size() == 0);
    CHECK(never.changes_since(0)[0] == hashgrid::kInvalidObjectIndex); // past the end: no ring read

    ObjectStoreConfig c;
    c.dimensions = 2;
    c.max_objects = 4;
    ObjectStore store;
    REQUIRE(store.init_allocate(c).ok());
    const ObjectBox box{{0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 0.0f}};
    const ObjectBox other{{2.0f, 0.0f, 0.0f}, {3.0f, 1.0f, 0.0f}};
    const ObjectHandle a = store.add(box, 1, 1, 10).handle;
    const ObjectHandle b = store.add(box, 1, 1, 11).handle;
    const ObjectHandle d = store.add(box, 1, 1, 12).handle;
    const uint64_t c0 = store.change_clock();
    CHECK(store.changes_since(c0).complete);
    CHECK(store.changes_since(c0).size() == 0);

    REQUIRE(store.move(b, other).ok());
    REQUIRE(store.set_layers(a, 2, 2).ok());
    REQUIRE(store.move(b, box).ok());
    REQUIRE(store.set_user_value(d, 5).ok()); // not a grid input: not logged
    const ObjectBox bad{{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}};
    CHECK(store.move(d, bad).code == StatusCode::invalid_box); // failed: not logged
    CHECK(store.move(ObjectHandle{1, 99}, other).code == StatusCode::invalid_handle);
    CHECK(store.change_clock() == c0 + 3);
    hashgrid::ObjectChanges all = store.changes_since(c0);
    REQUIRE(all.complete);
    CHECK(all.begin == c0);
    CHECK(all.end == c0 + 3);
    REQUIRE(all.size() == 3);
    CHECK(all[0] == 1);
    CHECK(all[1] == 0);
    CHECK(all[2] == 1);
    const hashgrid::ObjectChanges later = store.changes_since(c0 + 1);
    REQUIRE(later.size() == 2);
    CHECK(later[0] == 0);
    CHECK(later[1] == 1);
    CHECK_FALSE(store.changes_since(c0 + 4).complete); // from the future
    CHECK(store.changes_since(c0 + 4).size() == 0);
    CHECK(store.changes_since(c0 + 4)[0] == hashgrid::kInvalidObjectIndex);
    CHECK(all[3] == hashgrid::kInvalidObjectIndex); // past the end of a complete list

    // The ring holds max_objects records: exactly that many are still listed, one more is not.
    const uint64_t c1 = store.change_clock();
    for (const ObjectHandle h : {a, b, d, a})
        REQUIRE(store.move(h, other).ok());
    all = store.changes_since(c1);
    REQUIRE(all.size() == 4);
    CHECK(all[0] == 0);
    CHECK(all[1] == 1);
    CHECK(all[2] == 2);
    CHECK(all[3] == 0);
    REQUIRE(store.move(d, box).ok());
    CHECK_FALSE(store.changes_since(c1).complete);
    all = store.changes_since(c1 + 1);
    REQUIRE(all.size() == 4);
    CHECK(all[0] == 1);
    CHECK(all[3] == 2);

    // A layout change ends every earlier list (the indices after it name other objects).
    const uint64_t c2 = store.change_clock();
    REQUIRE(store.move(a, box).ok());
    const ObjectHandle e = store.add(box, 1, 1, 13).handle;
    CHECK_FALSE(store.changes_since(c2).complete);
    CHECK_FALSE(store.changes_since(c2 + 1).complete);
    uint64_t c3 = store.change_clock();
    CHECK(store.changes_since(c3).complete);
    REQUIRE(store.remove(b).ok()); // e (dense 3) takes dense index 1
    CHECK_FALSE(store.changes_since(c3).complete);
    c3 = store.change_clock();
    REQUIRE(store.move(e, other).ok());
    all = store.changes_since(c3);
    REQUIRE(all.size() == 1);
    CHECK(all[0] == 1);
    store.clear();
    CHECK_FALSE(store.changes_since(c3).complete);
    c3 = store.change_clock();
    REQUIRE(store.init_allocate(c).ok());
    CHECK_FALSE(store.changes_since(c3).complete);
    CHECK(store.changes_since(store.change_clock()).complete);
}

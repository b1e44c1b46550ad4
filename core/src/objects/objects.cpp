// SPDX-License-Identifier: MIT
// The object store: slots with generations, dense SoA kept compact by
// swap-remove, a FIFO ring of free slots and a ring of change records
// (changes_since). See objects.h for the contract.
#include "objects/objects_internal.h"

#include "common/block_layout.h"

#include "hashgrid/assert.h"
#include "hashgrid/grid.h"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace hashgrid {

using detail::capacity_status;
using detail::check_block;
using detail::item_status;
using detail::kAlignment;
using detail::Layout;
using detail::make_status;

namespace {

/// slot_dense_ marks of slots without a live object (dense indices are < 2^31).
constexpr uint32_t kFreeSlot = 0xffffffffu;
constexpr uint32_t kRetiredSlot = 0xfffffffeu;

} // namespace

/// Every array of the store, in block order.
struct detail::ObjectArrays {
    float* min[3] = {nullptr, nullptr, nullptr};
    float* max[3] = {nullptr, nullptr, nullptr};
    uint32_t* category = nullptr;
    uint32_t* mask = nullptr;
    uint64_t* user = nullptr;
    uint32_t* dense_slot = nullptr;
    uint32_t* slot_generation = nullptr;
    uint32_t* slot_dense = nullptr;
    uint32_t* free_ring = nullptr;
    uint32_t* change_ring = nullptr;
};

namespace {

using Arrays = detail::ObjectArrays;

uint64_t lay_out(const ObjectStoreConfig& c, unsigned char* base, Arrays& a) {
    Layout l(base);
    const uint64_t n = c.max_objects;
    for (uint32_t d = 0; d < 3; ++d) {
        a.min[d] = d < c.dimensions ? l.take<float>(n) : nullptr;
        a.max[d] = d < c.dimensions ? l.take<float>(n) : nullptr;
    }
    a.category = l.take<uint32_t>(n);
    a.mask = l.take<uint32_t>(n);
    a.user = l.take<uint64_t>(n);
    a.dense_slot = l.take<uint32_t>(n);
    a.slot_generation = l.take<uint32_t>(n);
    a.slot_dense = l.take<uint32_t>(n);
    a.free_ring = l.take<uint32_t>(n);
    a.change_ring = l.take<uint32_t>(n);
    return l.bytes();
}

/// NaN/inf first (invalid_position), then min > max (invalid_box), on the axes read.
Status validate_box(uint32_t dimensions, const ObjectBox& box) {
    for (uint32_t d = 0; d < dimensions; ++d)
        if (!std::isfinite(box.min[d]) || !std::isfinite(box.max[d]))
            return make_status(StatusCode::invalid_position, "box coordinate is NaN or infinite");
    for (uint32_t d = 0; d < dimensions; ++d)
        if (box.min[d] > box.max[d]) return make_status(StatusCode::invalid_box, "box min > max on some axis");
    return {};
}

Status invalid_handle() {
    return make_status(StatusCode::invalid_handle, "handle is stale, removed, never issued or from another store");
}

Status not_initialized() {
    return make_status(StatusCode::invalid_argument, "ObjectStore used before a successful init");
}

/// Blocks of layout numbers handed out so far, process-wide. Block b (>= 1)
/// is [b * kLayoutBlock, (b + 1) * kLayoutBlock): a store takes a fresh block
/// at every init and when its block is used up, so no two stores ever share a
/// number, and one atomic operation pays for kLayoutBlock layout changes.
std::atomic<uint64_t> g_layout_blocks{0};

uint64_t fresh_layout_block() {
    return (g_layout_blocks.fetch_add(1, std::memory_order_relaxed) + 1) * detail::kLayoutBlock;
}

} // namespace

void ObjectStore::advance_layout() {
    ++layout_;
    if (layout_ % detail::kLayoutBlock == 0) layout_ = fresh_layout_block(); // the next block is another store's
    // The layout change takes a clock value of its own (its record names no
    // object): a list from an earlier clock would name the old layout.
    log_change(kInvalidObjectIndex);
    layout_clock_ = clock_;
}

void ObjectStore::log_change(uint32_t dense) {
    change_ring_[ring_at_] = dense;
    ring_at_ = ring_at_ + 1 == config_.max_objects ? 0 : ring_at_ + 1;
    ++clock_;
}

ObjectChanges ObjectStore::changes_since(uint64_t clock) const {
    ObjectChanges c;
    c.begin = clock;
    c.end = clock_;
    c.ring = change_ring_;
    c.ring_size = config_.max_objects;
    c.complete = initialized_ && clock >= layout_clock_ && clock <= clock_ && clock_ - clock <= config_.max_objects;
    return c;
}

Status ObjectStore::validate(const ObjectStoreConfig& c) {
    if (c.dimensions != 2 && c.dimensions != 3)
        return make_status(StatusCode::invalid_config, "dimensions must be 2 or 3");
    if (c.max_objects == 0 || c.max_objects >= (1u << 31))
        return make_status(StatusCode::invalid_config, "max_objects must be in [1, 2^31)");
    return {};
}

MemoryRequirements ObjectStore::memory_requirements(const ObjectStoreConfig& config) {
    return detail::block_requirements(validate(config), [&] {
        Arrays unused;
        return lay_out(config, nullptr, unused);
    });
}

ObjectStore::~ObjectStore() { aligned_free_bytes(owned_memory_); }

Status ObjectStore::init(const ObjectStoreConfig& config, void* memory, size_t bytes) {
    return detail::init_on_block(memory_requirements(config), memory, bytes, owned_memory_, [&](unsigned char* base) {
        Arrays a;
        lay_out(config, base, a);
        adopt(a);

        config_ = config;
        for (uint32_t s = 0; s < config.max_objects; ++s) {
            slot_generation_[s] = detail::first_generation(config.handle_salt, s);
            slot_dense_[s] = kFreeSlot;
            free_ring_[s] = s; // slots are first issued in ascending order
        }
        free_head_ = 0;
        free_count_ = config.max_objects;
        count_ = 0;
        retired_ = 0;
        layout_ = fresh_layout_block(); // views and results of the old layout are stale
        init_layout_ = layout_;
        // The clock goes on (never reset): lists asked for before this init are incomplete.
        ++clock_;
        layout_clock_ = clock_;
        ring_at_ = static_cast<uint32_t>(clock_ % config.max_objects);
        initialized_ = true;
    });
}

void ObjectStore::adopt(const detail::ObjectArrays& a) {
    for (uint32_t d = 0; d < 3; ++d) {
        min_[d] = a.min[d];
        max_[d] = a.max[d];
    }
    category_ = a.category;
    mask_ = a.mask;
    user_ = a.user;
    dense_slot_ = a.dense_slot;
    slot_generation_ = a.slot_generation;
    slot_dense_ = a.slot_dense;
    free_ring_ = a.free_ring;
    change_ring_ = a.change_ring;
}

Status ObjectStore::init_allocate(const ObjectStoreConfig& config) {
    return detail::init_allocate_block(memory_requirements(config), owned_memory_,
                                       [&](void* block, size_t bytes) { return init(config, block, bytes); });
}

Status ObjectStore::grow(const ObjectStoreConfig& bigger, void* memory, size_t bytes) {
    if (!initialized_) return not_initialized();
    if (bigger.dimensions != config_.dimensions || bigger.handle_salt != config_.handle_salt)
        return make_status(StatusCode::invalid_config, "grow keeps ObjectStoreConfig::dimensions and handle_salt");
    if (bigger.max_objects < config_.max_objects)
        return make_status(StatusCode::invalid_config, "grow never lowers ObjectStoreConfig::max_objects");
    const MemoryRequirements req = memory_requirements(bigger);
    if (!req.status.ok()) return req.status;
    if (const Status s = check_block(req, memory, bytes); !s.ok()) return s;
    if (memory == static_cast<void*>(min_[0])) // the first array of a block is at its start
        return make_status(StatusCode::invalid_argument, "grow needs a block other than the store's own");
    detail::touch_pages(static_cast<unsigned char*>(memory), req.bytes);
    Arrays a;
    lay_out(bigger, static_cast<unsigned char*>(memory), a);
    const uint32_t old_max = config_.max_objects;
    for (uint32_t d = 0; d < config_.dimensions; ++d) {
        std::copy(min_[d], min_[d] + count_, a.min[d]);
        std::copy(max_[d], max_[d] + count_, a.max[d]);
    }
    std::copy(category_, category_ + count_, a.category);
    std::copy(mask_, mask_ + count_, a.mask);
    std::copy(user_, user_ + count_, a.user);
    std::copy(dense_slot_, dense_slot_ + count_, a.dense_slot);
    std::copy(slot_generation_, slot_generation_ + old_max, a.slot_generation);
    std::copy(slot_dense_, slot_dense_ + old_max, a.slot_dense);
    // Free slots: the old ones in their order, then the new ones ascending.
    for (uint32_t k = 0; k < free_count_; ++k) {
        const uint32_t at = free_head_ + k;
        a.free_ring[k] = free_ring_[at >= old_max ? at - old_max : at];
    }
    for (uint32_t slot = old_max; slot < bigger.max_objects; ++slot) {
        a.slot_generation[slot] = detail::first_generation(config_.handle_salt, slot);
        a.slot_dense[slot] = kFreeSlot;
        a.free_ring[free_count_ + (slot - old_max)] = slot;
    }
    // The change log: the records the old ring still holds keep their clocks.
    const uint64_t kept_from = std::max(layout_clock_, clock_ - std::min<uint64_t>(clock_, old_max));
    for (uint64_t k = kept_from; k < clock_; ++k)
        a.change_ring[k % bigger.max_objects] = change_ring_[k % old_max];
    layout_clock_ = kept_from;

    adopt(a);
    free_head_ = 0;
    free_count_ += bigger.max_objects - old_max;
    config_ = bigger;
    ring_at_ = static_cast<uint32_t>(clock_ % bigger.max_objects);
    detail::release_owned(owned_memory_, memory);
    return {};
}

Status ObjectStore::grow_allocate(const ObjectStoreConfig& bigger) {
    if (!initialized_) return not_initialized();
    return detail::grow_allocate_block(memory_requirements(bigger), owned_memory_,
                                       [&](void* block, size_t bytes) { return grow(bigger, block, bytes); });
}

uint32_t ObjectStore::live_dense(ObjectHandle handle) const {
    HASHGRID_ASSERT(initialized_, "ObjectStore used before init");
    if (!initialized_ || handle.index >= config_.max_objects) return kInvalidObjectIndex;
    const uint32_t dense = slot_dense_[handle.index];
    if (dense >= count_ || slot_generation_[handle.index] != handle.generation) return kInvalidObjectIndex;
    return dense;
}

void ObjectStore::write_box(uint32_t dense, const ObjectBox& box) {
    for (uint32_t d = 0; d < config_.dimensions; ++d) {
        min_[d][dense] = box.min[d];
        max_[d][dense] = box.max[d];
    }
}

void ObjectStore::release_slot(uint32_t slot) {
    // Advance the generation (skipping 0, which is never issued). A slot that
    // has gone through all 2^32 - 1 generations would hand out its first one
    // again: retire it so that no stale handle can alias a new object.
    uint32_t next = slot_generation_[slot] + 1u;
    if (next == 0) next = 1;
    if (next == detail::first_generation(config_.handle_salt, slot)) {
        slot_dense_[slot] = kRetiredSlot;
        ++retired_;
        return;
    }
    slot_generation_[slot] = next;
    slot_dense_[slot] = kFreeSlot;
    uint32_t tail = free_head_ + free_count_;
    if (tail >= config_.max_objects) tail -= config_.max_objects;
    free_ring_[tail] = slot;
    ++free_count_;
}

ObjectAddResult ObjectStore::add(const ObjectBox& box, uint32_t category, uint32_t mask, uint64_t user_value) {
    HASHGRID_ASSERT(initialized_, "ObjectStore used before init");
    ObjectAddResult r;
    if (!initialized_) {
        r.status = make_status(StatusCode::invalid_argument, "ObjectStore::add before a successful init");
        return r;
    }
    r.status = validate_box(config_.dimensions, box);
    if (!r.status.ok()) return r;
    if (free_count_ == 0) {
        r.status = capacity_status(StatusCode::object_capacity,
                                   retired_ == 0 ? "more objects than ObjectStoreConfig::max_objects"
                                                 : "more objects than ObjectStoreConfig::max_objects minus retired "
                                                   "slots (needed counts them)",
                                   uint64_t{count_} + 1 + retired_);
        return r;
    }
    const uint32_t slot = free_ring_[free_head_];
    free_head_ = free_head_ + 1 == config_.max_objects ? 0 : free_head_ + 1;
    --free_count_;

    const uint32_t dense = count_++;
    write_box(dense, box);
    category_[dense] = category;
    mask_[dense] = mask;
    user_[dense] = user_value;
    dense_slot_[dense] = slot;
    slot_dense_[slot] = dense;
    advance_layout();
    r.handle = ObjectHandle{slot, slot_generation_[slot]};
    return r;
}

Status ObjectStore::move(ObjectHandle handle, const ObjectBox& box) {
    if (!initialized_) [[unlikely]] {
        HASHGRID_ASSERT(false, "ObjectStore used before init");
        return not_initialized();
    }
    const uint32_t dense = live_dense(handle);
    if (dense == kInvalidObjectIndex) return invalid_handle();
    const Status s = validate_box(config_.dimensions, box);
    if (!s.ok()) return s;
    write_box(dense, box);
    log_change(dense);
    return {};
}

Status ObjectStore::set_layers(ObjectHandle handle, uint32_t category, uint32_t mask) {
    if (!initialized_) [[unlikely]] {
        HASHGRID_ASSERT(false, "ObjectStore used before init");
        return not_initialized();
    }
    const uint32_t dense = live_dense(handle);
    if (dense == kInvalidObjectIndex) return invalid_handle();
    category_[dense] = category;
    mask_[dense] = mask;
    log_change(dense);
    return {};
}

Status ObjectStore::set_user_value(ObjectHandle handle, uint64_t user_value) {
    if (!initialized_) [[unlikely]] {
        HASHGRID_ASSERT(false, "ObjectStore used before init");
        return not_initialized();
    }
    const uint32_t dense = live_dense(handle);
    if (dense == kInvalidObjectIndex) return invalid_handle();
    user_[dense] = user_value;
    return {};
}

Status ObjectStore::remove(ObjectHandle handle) {
    if (!initialized_) [[unlikely]] {
        HASHGRID_ASSERT(false, "ObjectStore used before init");
        return not_initialized();
    }
    const uint32_t dense = live_dense(handle);
    if (dense == kInvalidObjectIndex) return invalid_handle();
    const uint32_t last = count_ - 1;
    if (dense != last) {
        // Swap-remove: the last object takes the hole, so the arrays stay compact.
        for (uint32_t d = 0; d < config_.dimensions; ++d) {
            min_[d][dense] = min_[d][last];
            max_[d][dense] = max_[d][last];
        }
        category_[dense] = category_[last];
        mask_[dense] = mask_[last];
        user_[dense] = user_[last];
        const uint32_t moved_slot = dense_slot_[last];
        dense_slot_[dense] = moved_slot;
        slot_dense_[moved_slot] = dense;
    }
    count_ = last;
    release_slot(handle.index);
    advance_layout();
    return {};
}

void ObjectStore::clear() {
    HASHGRID_ASSERT(initialized_, "ObjectStore used before init");
    if (!initialized_) return;
    // Dense order fixes the order in which the slots rejoin the free ring.
    for (uint32_t i = 0; i < count_; ++i)
        release_slot(dense_slot_[i]);
    count_ = 0;
    advance_layout();
}

bool ObjectStore::contains(ObjectHandle handle) const { return live_dense(handle) != kInvalidObjectIndex; }

uint32_t ObjectStore::dense_index(ObjectHandle handle) const { return live_dense(handle); }

ObjectHandle ObjectStore::handle_at(uint32_t dense_index) const {
    HASHGRID_ASSERT(dense_index < count_, "handle_at: dense index out of range");
    if (!initialized_ || dense_index >= count_) return ObjectHandle{}; // never valid (generation 0)
    const uint32_t slot = dense_slot_[dense_index];
    return ObjectHandle{slot, slot_generation_[slot]};
}

Status ObjectStore::get_box(ObjectHandle handle, ObjectBox& out) const {
    if (!initialized_) [[unlikely]] {
        HASHGRID_ASSERT(false, "ObjectStore used before init");
        return not_initialized();
    }
    const uint32_t dense = live_dense(handle);
    if (dense == kInvalidObjectIndex) return invalid_handle();
    ObjectBox box;
    for (uint32_t d = 0; d < config_.dimensions; ++d) {
        box.min[d] = min_[d][dense];
        box.max[d] = max_[d][dense];
    }
    out = box;
    return {};
}

// ---------------------------------------------------------------------------
// Checked mapping of grid results.

namespace {

uint32_t saturate_u32(uint64_t v) { return v < 0xffffffffu ? static_cast<uint32_t>(v) : 0xffffffffu; }

/// invalid_argument naming the lowest out-of-range position and how many there are.
Status bad_indices(uint64_t first, uint64_t count) {
    return item_status(StatusCode::invalid_argument, "dense index >= ObjectStore::size()", saturate_u32(first),
                       saturate_u32(count));
}

/// Checks every index (< size) before anything is written; `at(k)` gives the
/// k-th index to check, `per_item` of them per array element, for the items
/// [first, first + count). Positions reported are array positions.
template <typename At>
Status check_indices(uint64_t first, uint64_t count, uint32_t per_item, uint32_t size, At at) {
    uint64_t lowest = 0;
    uint64_t bad = 0;
    for (uint64_t k = first; k < first + count; ++k) {
        bool item_bad = false;
        for (uint32_t j = 0; j < per_item; ++j)
            item_bad = item_bad || at(k, j) >= size;
        if (item_bad && bad++ == 0) lowest = k;
    }
    return bad == 0 ? Status{} : bad_indices(lowest, bad);
}

} // namespace

BoxGridConfig box_grid_config_for(const ObjectStoreConfig& store) {
    BoxGridConfig c;
    c.dimensions = store.dimensions;
    c.max_objects = store.max_objects;
    return c;
}

Status ObjectStore::check_frame(const BoxGridView& frame, const void* in, const void* out, uint64_t count) const {
    if (!initialized_) return not_initialized();
    if (count > 0 && (in == nullptr || out == nullptr))
        return make_status(StatusCode::invalid_argument, "null input or output array with something to map");
    if (!frame.built) return make_status(StatusCode::not_built, "the view holds no frame (grid never rebuilt)");
    if (frame.source_store != this)
        return make_status(StatusCode::invalid_argument,
                           "the frame was not rebuilt from this store (use BoxGrid::rebuild(store, backend))");
    if (frame.source_layout != layout_)
        return make_status(StatusCode::stale_view,
                           "objects were added, removed or cleared since the grid was rebuilt: rebuild and query "
                           "again");
    return {};
}

Status ObjectStore::check_result(const BoxGridView& frame, const QueryResult& result, const void* in, const void* out,
                                 uint64_t first, uint64_t count) const {
    const Status s = check_frame(frame, in, out, count);
    if (!s.ok()) return s;
    if (result.layout != frame.source_layout)
        return make_status(StatusCode::stale_view,
                           "the result names another layout (a frame rebuilt before an add or remove, another "
                           "store's, or one not rebuilt from a store): query this frame again");
    // These three write a valid prefix of the full order; every other status names no objects.
    const StatusCode code = result.status.code;
    if (code != StatusCode::ok && code != StatusCode::output_too_small && code != StatusCode::pair_capacity)
        return make_status(StatusCode::invalid_argument,
                           "the result's status is not ok, output_too_small or pair_capacity: it names no objects");
    if (first > result.written || count > result.written - first)
        return make_status(StatusCode::invalid_argument, "first + count exceeds the result's written entries");
    return {};
}

Status ObjectStore::write_handles(const uint32_t* in, uint64_t first, uint64_t count, ObjectHandle* out) const {
    const Status s = check_indices(first, count, 1, count_, [&](uint64_t k, uint32_t) { return in[k]; });
    if (!s.ok()) return s;
    for (uint64_t k = 0; k < count; ++k) {
        const uint32_t slot = dense_slot_[in[first + k]];
        out[k] = ObjectHandle{slot, slot_generation_[slot]};
    }
    return {};
}

Status ObjectStore::write_user_values(const uint32_t* in, uint64_t first, uint64_t count, uint64_t* out) const {
    const Status s = check_indices(first, count, 1, count_, [&](uint64_t k, uint32_t) { return in[k]; });
    if (!s.ok()) return s;
    for (uint64_t k = 0; k < count; ++k)
        out[k] = user_[in[first + k]];
    return {};
}

Status ObjectStore::write_handles(const Pair* in, uint64_t first, uint64_t count, ObjectHandlePair* out) const {
    const Status s =
        check_indices(first, count, 2, count_, [&](uint64_t k, uint32_t j) { return j == 0 ? in[k].a : in[k].b; });
    if (!s.ok()) return s;
    for (uint64_t k = 0; k < count; ++k) {
        const uint32_t sa = dense_slot_[in[first + k].a];
        const uint32_t sb = dense_slot_[in[first + k].b];
        out[k] = ObjectHandlePair{ObjectHandle{sa, slot_generation_[sa]}, ObjectHandle{sb, slot_generation_[sb]}};
    }
    return {};
}

Status ObjectStore::write_user_values(const Pair* in, uint64_t first, uint64_t count, UserValuePair* out) const {
    const Status s =
        check_indices(first, count, 2, count_, [&](uint64_t k, uint32_t j) { return j == 0 ? in[k].a : in[k].b; });
    if (!s.ok()) return s;
    for (uint64_t k = 0; k < count; ++k)
        out[k] = UserValuePair{user_[in[first + k].a], user_[in[first + k].b]};
    return {};
}

Status ObjectStore::handle_at(const BoxGridView& frame, uint32_t dense_index, ObjectHandle& out) const {
    const Status s = check_frame(frame, &dense_index, &out, 1);
    return s.ok() ? write_handles(&dense_index, 0, 1, &out) : s;
}

Status ObjectStore::user_value_at(const BoxGridView& frame, uint32_t dense_index, uint64_t& out) const {
    const Status s = check_frame(frame, &dense_index, &out, 1);
    return s.ok() ? write_user_values(&dense_index, 0, 1, &out) : s;
}

Status ObjectStore::handles_at(const BoxGridView& frame, const QueryResult& result, const uint32_t* dense_indices,
                               ObjectHandle* out) const {
    return handles_at(frame, result, dense_indices, 0, result.written, out);
}

Status ObjectStore::user_values_at(const BoxGridView& frame, const QueryResult& result, const uint32_t* dense_indices,
                                   uint64_t* out) const {
    return user_values_at(frame, result, dense_indices, 0, result.written, out);
}

Status ObjectStore::handles_at(const BoxGridView& frame, const QueryResult& result, const uint32_t* dense_indices,
                               uint64_t first, uint64_t count, ObjectHandle* out) const {
    const Status s = check_result(frame, result, dense_indices, out, first, count);
    return s.ok() ? write_handles(dense_indices, first, count, out) : s;
}

Status ObjectStore::user_values_at(const BoxGridView& frame, const QueryResult& result, const uint32_t* dense_indices,
                                   uint64_t first, uint64_t count, uint64_t* out) const {
    const Status s = check_result(frame, result, dense_indices, out, first, count);
    return s.ok() ? write_user_values(dense_indices, first, count, out) : s;
}

Status ObjectStore::handles_at(const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                               ObjectHandlePair* out) const {
    return handles_at(frame, result, pairs, 0, result.written, out);
}

Status ObjectStore::user_values_at(const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                                   UserValuePair* out) const {
    return user_values_at(frame, result, pairs, 0, result.written, out);
}

Status ObjectStore::handles_at(const BoxGridView& frame, const PairResult& result, const Pair* pairs, uint64_t first,
                               uint64_t count, ObjectHandlePair* out) const {
    const Status s = check_result(frame, result, pairs, out, first, count);
    return s.ok() ? write_handles(pairs, first, count, out) : s;
}

Status ObjectStore::user_values_at(const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                                   uint64_t first, uint64_t count, UserValuePair* out) const {
    const Status s = check_result(frame, result, pairs, out, first, count);
    return s.ok() ? write_user_values(pairs, first, count, out) : s;
}

BoxSpans ObjectStore::spans() const {
    HASHGRID_ASSERT(initialized_, "ObjectStore used before init");
    BoxSpans s;
    if (!initialized_) return s; // no objects
    s.min_x = min_[0];
    s.min_y = min_[1];
    s.min_z = min_[2];
    s.max_x = max_[0];
    s.max_y = max_[1];
    s.max_z = max_[2];
    s.category = category_;
    s.mask = mask_;
    s.count = count_;
    return s;
}

} // namespace hashgrid

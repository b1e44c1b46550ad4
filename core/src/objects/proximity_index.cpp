// SPDX-License-Identifier: MIT
// ProximityIndex: client boxes in an ObjectStore, a BoxGrid rebuilt from the
// store when dirty, queries through box_queries.h. See proximity_index.h.
#include "hashgrid/proximity_index.h"

#include "common/block_layout.h"

#include "hashgrid/assert.h"
#include "hashgrid/cell_key.h"

#include <cmath>

namespace hashgrid {

using detail::capacity_status;
using detail::check_block;
using detail::make_status;

namespace {

constexpr uint32_t kMinAlignment = detail::kAlignment; // the parts are blocks of their own

uint64_t align_up(uint64_t offset, uint64_t alignment) { return (offset + alignment - 1) & ~(alignment - 1); }

ObjectStoreConfig store_config_of(const ProximityIndexConfig& c) {
    ObjectStoreConfig s;
    s.dimensions = c.grid.dimensions;
    s.max_objects = c.grid.max_objects;
    s.handle_salt = c.handle_salt;
    return s;
}

/// Where each part of the block goes.
struct BlockLayout {
    MemoryRequirements store;
    MemoryRequirements grid;
    uint64_t store_offset = 0;
    uint64_t grid_offset = 0;
    uint64_t slot_entries_offset = 0;
    uint64_t found_offset = 0;
    uint64_t bytes = 0;
    uint32_t alignment = kMinAlignment;
};

BlockLayout lay_out(const ProximityIndexConfig& c) {
    BlockLayout l;
    l.store = ObjectStore::memory_requirements(store_config_of(c));
    l.grid = BoxGrid::memory_requirements(c.grid);
    if (l.store.alignment > l.alignment) l.alignment = l.store.alignment;
    if (l.grid.alignment > l.alignment) l.alignment = l.grid.alignment;
    uint64_t offset = 0;
    l.store_offset = offset;
    offset = align_up(offset + l.store.bytes, l.grid.alignment);
    l.grid_offset = offset;
    offset = align_up(offset + l.grid.bytes, kMinAlignment);
    l.slot_entries_offset = offset;
    offset = align_up(offset + uint64_t{c.grid.max_objects} * sizeof(uint32_t), kMinAlignment);
    l.found_offset = offset;
    offset = align_up(offset + uint64_t{c.grid.max_objects} * sizeof(uint32_t), kMinAlignment);
    l.bytes = offset;
    return l;
}

/// The client's box: dimensions * 0.5f (exact), then one subtraction and one addition.
ObjectBox client_box(uint32_t dims, const float (&position)[3], const float (&dimensions)[3]) {
    ObjectBox box;
    for (uint32_t d = 0; d < dims; ++d) {
        const float half = dimensions[d] * 0.5f;
        box.min[d] = position[d] - half;
        box.max[d] = position[d] + half;
    }
    return box;
}

/// The inputs first (so that a negative dimension that rounds away is still
/// caught), then the box (a sum that overflowed to infinity).
Status check_client(uint32_t dims, const float (&position)[3], const float (&dimensions)[3], const ObjectBox& box) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!std::isfinite(position[d]) || !std::isfinite(dimensions[d]))
            return make_status(StatusCode::invalid_position, "client position or dimensions NaN or infinite");
    for (uint32_t d = 0; d < dims; ++d)
        if (dimensions[d] < 0.0f) return make_status(StatusCode::invalid_box, "client dimensions negative");
    for (uint32_t d = 0; d < dims; ++d)
        if (!std::isfinite(box.min[d]) || !std::isfinite(box.max[d]))
            return make_status(StatusCode::invalid_position, "client box overflows the float range");
    return {};
}

/// Query parameters: finite position; extents (dimensions or radius) >= 0,
/// +inf allowed, NaN not.
bool valid_query(uint32_t dims, const float (&position)[3], const float* extent, uint32_t extent_count) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!std::isfinite(position[d])) return false;
    for (uint32_t k = 0; k < extent_count; ++k)
        if (!(extent[k] >= 0.0f)) return false; // NaN fails too
    return true;
}

Status invalid_query(const char* message) { return make_status(StatusCode::invalid_query, message); }

/// A null output with a nonzero capacity, checked before a dirty index is
/// rebuilt: a refused call changes nothing.
bool null_output(const void* out, uint64_t capacity) {
    HASHGRID_ASSERT(out != nullptr || capacity == 0, "ProximityIndex: null output with a nonzero capacity");
    return out == nullptr && capacity > 0;
}

} // namespace

Status ProximityIndex::validate(const ProximityIndexConfig& config) {
    const Status s = BoxGrid::validate(config.grid);
    if (!s.ok()) return s;
    return ObjectStore::validate(store_config_of(config));
}

MemoryRequirements ProximityIndex::memory_requirements(const ProximityIndexConfig& config) {
    MemoryRequirements r;
    r.status = validate(config);
    if (!r.status.ok()) return r;
    const BlockLayout l = lay_out(config);
    if (!l.store.status.ok()) {
        r.status = l.store.status;
        return r;
    }
    if (!l.grid.status.ok()) {
        r.status = l.grid.status;
        return r;
    }
    if (l.bytes > SIZE_MAX) {
        r.status = make_status(StatusCode::invalid_config, "capacities need more memory than this target can address");
        return r;
    }
    r.bytes = l.bytes;
    r.alignment = l.alignment;
    return r;
}

// The store and the grid were initialised on caller memory (the block): their
// destructors free nothing, so freeing the block first is safe.
ProximityIndex::~ProximityIndex() { aligned_free_bytes(owned_memory_); }

Status ProximityIndex::init(const ProximityIndexConfig& config, void* memory, size_t bytes) {
    return detail::init_on_block(memory_requirements(config), memory, bytes, owned_memory_, [&](unsigned char* base) {
        const BlockLayout l = lay_out(config);
        // Both configs were validated by memory_requirements() above, and their
        // blocks are the sizes it measured: these inits cannot fail, so the
        // store and the grid never end up on different blocks.
        Status s = store_.init(store_config_of(config), base + l.store_offset, static_cast<size_t>(l.store.bytes));
        HASHGRID_ASSERT(s.ok(), "ProximityIndex: store init failed after validation");
        s = grid_.init(config.grid, base + l.grid_offset, static_cast<size_t>(l.grid.bytes));
        HASHGRID_ASSERT(s.ok(), "ProximityIndex: grid init failed after validation");
        (void)s;
        slot_entries_ = reinterpret_cast<uint32_t*>(base + l.slot_entries_offset);
        found_ = reinterpret_cast<uint32_t*>(base + l.found_offset);
        for (uint32_t i = 0; i < config.grid.max_objects; ++i)
            slot_entries_[i] = 0;
        config_ = config;
        entry_total_ = 0;
        query_grid_ = BoxQueryGrid{};
        query_backend_ = serial_backend();
        dirty_ = true; // the first query builds the (empty) grid
        initialized_ = true;
    });
}

Status ProximityIndex::init_allocate(const ProximityIndexConfig& config) {
    return detail::init_allocate_block(memory_requirements(config), owned_memory_,
                                       [&](void* block, size_t bytes) { return init(config, block, bytes); });
}

Status ProximityIndex::check_box(const ObjectBox& box, uint32_t& entries) const {
    // The same cell rule as BoxGrid::rebuild (box_grid.h, cell_key.h): cell(p)
    // = floor((p - origin) * scale) in double, inside [lower, upper) or
    // clamped (bounded clamp mode); an object covering more than
    // large_object_cells cells, or (unbounded) reaching beyond the cell-key
    // range, is kept out of the cells (0 entries).
    const BoxGridConfig& g = config_.grid;
    const uint32_t dims = g.dimensions;
    const double scale = key_scale(g.cell_size);
    const bool bounded = g.world == World::bounded;
    const double limit = dims == 3 ? double{kKeyLimit3} : double{kKeyLimit2};
    const double lower = bounded ? 0.0 : -limit;
    const bool clamp = bounded && g.out_of_bounds == OutOfBounds::clamp;
    uint64_t covered = 1;
    bool large = false;
    for (uint32_t d = 0; d < dims; ++d) {
        const double upper = bounded ? static_cast<double>(g.cell_counts[d]) : limit + 1.0;
        double t[2] = {scaled_coordinate(box.min[d], g.origin[d], scale),
                       scaled_coordinate(box.max[d], g.origin[d], scale)};
        for (double& v : t) {
            if (!(v >= lower && v < upper)) {
                if (!bounded) large = true; // beyond the key range: a large object
                if (!bounded || clamp) {
                    v = v < lower ? lower : upper - 1.0;
                    continue;
                }
                return make_status(StatusCode::position_out_of_range, "client box outside the bounded world");
            }
        }
        // In range, the floors fit int64 exactly (|t| < 2^32).
        const auto lo = static_cast<int64_t>(std::floor(t[0]));
        const auto hi = static_cast<int64_t>(std::floor(t[1]));
        const auto span = static_cast<uint64_t>(hi - lo + 1);
        if (large || span > g.large_object_cells) {
            large = true;
            continue;
        }
        covered *= span; // both factors <= large_object_cells < 2^32: no overflow
        if (covered > g.large_object_cells) large = true;
    }
    entries = large ? 0u : static_cast<uint32_t>(covered);
    return {};
}

namespace {
Status not_initialized() {
    return make_status(StatusCode::invalid_argument, "ProximityIndex used before a successful init");
}
} // namespace

ObjectAddResult ProximityIndex::create_client(const float (&position)[3], const float (&dimensions)[3],
                                              uint32_t category, uint32_t mask, uint64_t user_value) {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    ObjectAddResult r;
    if (!initialized_) {
        r.status = not_initialized();
        return r;
    }
    const uint32_t dims = config_.grid.dimensions;
    const ObjectBox box = client_box(dims, position, dimensions);
    r.status = check_client(dims, position, dimensions, box);
    if (!r.status.ok()) return r;
    uint32_t entries = 0;
    r.status = check_box(box, entries);
    if (!r.status.ok()) return r;
    if (store_.size() >= store_.capacity()) return store_.add(box, category, mask, user_value); // object_capacity
    if (entry_total_ + entries > config_.grid.max_cell_entries) {
        r.status = capacity_status(StatusCode::entry_capacity, "client cells exceed BoxGridConfig::max_cell_entries",
                                   entry_total_ + entries);
        return r;
    }
    r = store_.add(box, category, mask, user_value);
    if (!r.status.ok()) return r;
    slot_entries_[r.handle.index] = entries;
    entry_total_ += entries;
    dirty_ = true;
    return r;
}

Status ProximityIndex::update_client(ObjectHandle client, const float (&position)[3], const float (&dimensions)[3]) {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    if (!initialized_) return not_initialized();
    if (!store_.contains(client))
        return make_status(StatusCode::invalid_handle, "handle is stale, removed, never issued or from another store");
    const uint32_t dims = config_.grid.dimensions;
    const ObjectBox box = client_box(dims, position, dimensions);
    Status s = check_client(dims, position, dimensions, box);
    if (!s.ok()) return s;
    uint32_t entries = 0;
    s = check_box(box, entries);
    if (!s.ok()) return s;
    const uint64_t total = entry_total_ - slot_entries_[client.index] + entries;
    if (total > config_.grid.max_cell_entries) {
        return capacity_status(StatusCode::entry_capacity, "client cells exceed BoxGridConfig::max_cell_entries",
                               total);
    }
    s = store_.move(client, box);
    if (!s.ok()) return s;
    slot_entries_[client.index] = entries;
    entry_total_ = total;
    dirty_ = true;
    return s;
}

Status ProximityIndex::set_client_layers(ObjectHandle client, uint32_t category, uint32_t mask) {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    if (!initialized_) return not_initialized();
    const Status s = store_.set_layers(client, category, mask);
    if (s.ok()) dirty_ = true;
    return s;
}

Status ProximityIndex::remove_client(ObjectHandle client) {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    if (!initialized_) return not_initialized();
    const Status s = store_.remove(client);
    if (!s.ok()) return s;
    entry_total_ -= slot_entries_[client.index];
    slot_entries_[client.index] = 0;
    dirty_ = true;
    return s;
}

void ProximityIndex::clear() {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    if (!initialized_) return;
    const uint32_t* slots = store_.dense_slots();
    for (uint32_t i = 0; i < store_.size(); ++i)
        slot_entries_[slots[i]] = 0;
    store_.clear();
    entry_total_ = 0;
    dirty_ = true;
}

Status ProximityIndex::refresh(const ThreadBackend& backend) {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    if (!initialized_) return not_initialized();
    if (!dirty_) return {};
    const Status s = grid_.rebuild(store_, backend);
    if (!s.ok()) return s; // stays dirty; the grid keeps its previous frame
    query_grid_ = prepare_box_queries(grid_.view(), backend);
    dirty_ = false;
    return s;
}

Status ProximityIndex::update_index(const ThreadBackend& backend) { return refresh(backend); }

QueryResult ProximityIndex::to_handles(const QueryResult& found, ObjectHandle* out, uint64_t capacity) const {
    QueryResult r = found;
    r.layout = 0; // handles, not dense indices: no layout to name
    if (!found.status.ok()) {
        r.written = 0;
        return r;
    }
    HASHGRID_ASSERT(found.written == found.total, "query scratch holds every object");
    r.written = found.total < capacity ? found.total : capacity;
    for (uint64_t k = 0; k < r.written; ++k)
        out[k] = store_.handle_at(found_[k]);
    if (found.total > capacity) {
        r.status = capacity_status(StatusCode::output_too_small, "find_near: more clients than the output capacity",
                                   found.total);
    }
    return r;
}

QueryResult ProximityIndex::find_near(const float (&position)[3], const float (&dimensions)[3], uint32_t layer_mask,
                                      ObjectHandle* out, uint64_t capacity) {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    QueryResult r;
    if (!initialized_) {
        r.status = not_initialized();
        return r;
    }
    if (null_output(out, capacity)) {
        r.status = make_status(StatusCode::invalid_argument, "find_near: null output with a nonzero capacity");
        return r;
    }
    const uint32_t dims = config_.grid.dimensions;
    if (!valid_query(dims, position, dimensions, dims)) {
        r.status = invalid_query("find_near: position must be finite and dimensions >= 0");
        return r;
    }
    r.status = refresh(query_backend_);
    if (!r.status.ok()) return r;
    QueryBox box;
    for (uint32_t d = 0; d < dims; ++d) {
        const float half = dimensions[d] * 0.5f;
        box.min[d] = position[d] - half;
        box.max[d] = position[d] + half;
    }
    return to_handles(query_box(query_grid_, box, layer_mask, found_, config_.grid.max_objects), out, capacity);
}

QueryResult ProximityIndex::find_near_radius(const float (&position)[3], float radius, uint32_t layer_mask,
                                             ObjectHandle* out, uint64_t capacity) {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    QueryResult r;
    if (!initialized_) {
        r.status = not_initialized();
        return r;
    }
    if (null_output(out, capacity)) {
        r.status = make_status(StatusCode::invalid_argument, "find_near_radius: null output with a nonzero capacity");
        return r;
    }
    const uint32_t dims = config_.grid.dimensions;
    if (!valid_query(dims, position, &radius, 1)) {
        r.status = invalid_query("find_near_radius: position must be finite and radius >= 0");
        return r;
    }
    r.status = refresh(query_backend_);
    if (!r.status.ok()) return r;
    QuerySphere sphere;
    for (uint32_t d = 0; d < dims; ++d)
        sphere.center[d] = position[d];
    sphere.radius = radius;
    return to_handles(query_radius(query_grid_, sphere, layer_mask, found_, config_.grid.max_objects), out, capacity);
}

PairResult ProximityIndex::find_pairs(Pair* out, uint64_t capacity, const ThreadBackend& backend) {
    HASHGRID_ASSERT(initialized_, "ProximityIndex used before init");
    PairResult r;
    if (initialized_ && null_output(out, capacity)) {
        r.status = make_status(StatusCode::invalid_argument, "find_pairs: null buffer with a nonzero capacity");
        return r;
    }
    r.status = refresh(backend); // not_initialized() before a successful init
    if (!r.status.ok()) return r;
    return grid_.find_pairs(out, capacity, backend);
}

} // namespace hashgrid

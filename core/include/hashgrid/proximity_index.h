// SPDX-License-Identifier: MIT
/// @file
/// The client API of the classic spatial-hash tutorials ("NewClient(position,
/// dimensions)", "UpdateClient", "FindNear(position, bounds)", "Remove"), on
/// fixed memory: an ObjectStore (objects.h) and a BoxGrid (box_grid.h) in one
/// block, queried through box_queries.h.
///
/// Recipe:
///
///     hashgrid::ProximityIndexConfig config;
///     config.grid.dimensions = 2;
///     config.grid.cell_size = 4.0f;                  // about the typical client size
///     config.grid.max_objects = 100000;              // most clients at once
///     config.grid.max_cell_entries = 400000;         // sum of the cells the clients cover
///     config.grid.max_pairs = 1000000;               // only for find_pairs()
///     hashgrid::Status s = index.init_allocate(config);
///     hashgrid::ObjectAddResult c = index.create_client({x, y}, {w, h});
///     s = index.update_client(c.handle, {x2, y2}, {w, h});
///     s = index.update_index(backend);               // once per frame, in parallel
///     hashgrid::QueryResult r = index.find_near({x, y}, {qw, qh}, hashgrid::kAllLayers, around, 64);
///
/// A client is the box [position - dimensions / 2, position + dimensions / 2]
/// per axis (in 2D pass {x, y}; z is ignored).
///
/// When changes become visible. Changes go to the store at once and mark the
/// index dirty; update_index(backend) rebuilds the whole grid when dirty (a
/// no-op otherwise). Queries and find_pairs() rebuild a dirty index first, so
/// they never see stale positions: move every client, then query (the cost
/// model: docs/user-guide.md, "Objects, handles and dense indices").
///
/// Checks. Every change is checked before it is applied; a failure leaves the
/// index as it was: invalid_position (NaN/inf), invalid_box (dimensions < 0),
/// position_out_of_range (outside a bounded world in reject mode),
/// object_capacity, entry_capacity (needed = the exact total). Before a
/// successful init, and for a null output with a nonzero capacity, calls
/// answer invalid_argument, in every build. Results are handles, each client
/// once, in box-query order. One call at a time (queries use scratch).
#pragma once

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cstddef>
#include <cstdint>

namespace hashgrid {

/// Everything fixed at init.
struct ProximityIndexConfig {
    /// The box grid: dimensions, cell size, world, capacities. grid.max_objects
    /// is the client capacity; grid.max_cell_entries bounds the sum over clients
    /// of the cells each covers (large clients, covering more than
    /// grid.large_object_cells cells, count 0); grid.max_pairs is find_pairs()'s pool.
    BoxGridConfig grid;
    /// See ObjectStoreConfig::handle_salt.
    uint32_t handle_salt = 0;
};

/// Persistent clients with handles and seed-style proximity queries. Not
/// copyable, not thread-safe (one call at a time; the backend parallelises
/// rebuild and pair finding inside a call). All memory is one block.
class ProximityIndex {
public:
    ProximityIndex() = default;
    ~ProximityIndex();
    ProximityIndex(const ProximityIndex&) = delete;
    ProximityIndex& operator=(const ProximityIndex&) = delete;

    /// Exact bytes and alignment init() needs (invalid_config when rejected).
    [[nodiscard]] static MemoryRequirements memory_requirements(const ProximityIndexConfig& config);
    /// BoxGrid::validate(config.grid), then the store's rules for the same
    /// dimensions and max_objects: ok, or invalid_config naming the field.
    [[nodiscard]] static Status validate(const ProximityIndexConfig& config);

    /// Lays the index out in caller memory (not owned). O(max_objects).
    [[nodiscard]] Status init(const ProximityIndexConfig& config, void* memory, size_t bytes);
    /// Same, allocating the block once (freed in the destructor). Re-init is
    /// a transaction: the new block is allocated before the old one is freed,
    /// and any failure (invalid_config, memory_too_small when the allocation
    /// fails) leaves the object exactly as it was. A successful init() on
    /// caller memory frees a block an earlier init_allocate() allocated.
    [[nodiscard]] Status init_allocate(const ProximityIndexConfig& config);

    /// New client: a box of `dimensions` centred at `position`, with layers
    /// (box_grid.h) and an opaque user value. Checked as described above.
    [[nodiscard]] ObjectAddResult create_client(const float (&position)[3], const float (&dimensions)[3],
                                                uint32_t category = kAllLayers, uint32_t mask = kAllLayers,
                                                uint64_t user_value = 0);
    /// New position and dimensions. invalid_handle is checked first; any
    /// failure leaves the client where it was.
    [[nodiscard]] Status update_client(ObjectHandle client, const float (&position)[3], const float (&dimensions)[3]);
    /// New category and collision mask.
    [[nodiscard]] Status set_client_layers(ObjectHandle client, uint32_t category, uint32_t mask);
    /// Removes a client: its handle becomes stale; another client may take its dense index.
    [[nodiscard]] Status remove_client(ObjectHandle client);
    /// Removes every client (all handles become stale).
    void clear();

    /// Rebuilds the grid from the clients if anything changed since the last
    /// rebuild (no-op otherwise). See "When changes become visible".
    [[nodiscard]] Status update_index(const ThreadBackend& backend);
    /// Backend for the rebuild a query runs on a dirty index (default: serial).
    /// The backend must outlive its use here.
    void set_query_backend(const ThreadBackend& backend) { query_backend_ = backend; }

    /// Clients whose box overlaps the closed box of `dimensions` centred at
    /// `position` and whose category has a bit of `layer_mask`, each once.
    /// position finite; dimensions >= 0 (+inf allowed), else invalid_query.
    /// `out` gets min(total, capacity) handles (may be null when capacity is
    /// 0); total is exact; output_too_small (needed = total) when it did not fit.
    /// The result's layout is 0: handles need no mapping.
    [[nodiscard]] QueryResult find_near(const float (&position)[3], const float (&dimensions)[3], uint32_t layer_mask,
                                        ObjectHandle* out, uint64_t capacity);
    /// Clients within `radius` of `position` (circle in 2D, sphere in 3D):
    /// point_box_distance2(position, box) <= radius * radius (box_queries.h).
    /// position finite, radius >= 0 (+inf allowed), else invalid_query.
    [[nodiscard]] QueryResult find_near_radius(const float (&position)[3], float radius, uint32_t layer_mask,
                                               ObjectHandle* out, uint64_t capacity);
    /// Every overlapping pair of clients that passes the layer rule, once
    /// (BoxGrid::find_pairs on the current clients; rebuilds first with this
    /// backend when dirty). Pairs hold dense indices: map them with
    /// objects().handles_at(grid().view(), result, pairs, out), checked
    /// (stale_view after a create, remove or clear, and for the pairs of an
    /// earlier rebuild).
    [[nodiscard]] PairResult find_pairs(Pair* out, uint64_t capacity, const ThreadBackend& backend);

    /// Handle of the client at a dense index (< client_count()) now; unchecked
    /// (see find_pairs() for the checked mapping).
    [[nodiscard]] ObjectHandle handle_at(uint32_t dense_index) const { return store_.handle_at(dense_index); }
    /// True when the handle names a live client of this index.
    [[nodiscard]] bool contains(ObjectHandle client) const { return store_.contains(client); }
    /// Live clients.
    [[nodiscard]] uint32_t client_count() const { return store_.size(); }
    /// Sum over clients of the cells each covers (what the next rebuild stores).
    [[nodiscard]] uint64_t cell_entry_count() const { return entry_total_; }
    /// True when the grid does not reflect the latest changes.
    [[nodiscard]] bool dirty() const { return dirty_; }
    /// The clients (boxes, layers, user values, dense order).
    [[nodiscard]] const ObjectStore& objects() const { return store_; }
    /// The grid and its query bounds as of the last rebuild (call update_index() first).
    /// @{
    [[nodiscard]] const BoxGrid& grid() const { return grid_; }
    [[nodiscard]] const BoxQueryGrid& query_grid() const { return query_grid_; }
    /// @}
    /// The config of the last successful init.
    [[nodiscard]] const ProximityIndexConfig& config() const { return config_; }
    /// True after a successful init.
    [[nodiscard]] bool initialized() const { return initialized_; }

private:
    /// Checks a client box against the grid's world; counts the cells it covers (0: large).
    [[nodiscard]] Status check_box(const ObjectBox& box, uint32_t& entries) const;
    /// Rebuilds with `backend` when dirty.
    [[nodiscard]] Status refresh(const ThreadBackend& backend);
    /// Scratch indices -> handles in `out`, with the output contract.
    [[nodiscard]] QueryResult to_handles(const QueryResult& found, ObjectHandle* out, uint64_t capacity) const;

    ProximityIndexConfig config_{};
    bool initialized_ = false;
    bool dirty_ = true;
    void* owned_memory_ = nullptr;
    ThreadBackend query_backend_{};

    ObjectStore store_;
    BoxGrid grid_;
    BoxQueryGrid query_grid_{};
    uint64_t entry_total_ = 0;
    uint32_t* slot_entries_ = nullptr; // cells covered by the client in each slot (0: large)
    uint32_t* found_ = nullptr;        // query scratch: max_objects dense indices
};

} // namespace hashgrid

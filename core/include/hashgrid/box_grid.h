// SPDX-License-Identifier: MIT
/// @file
/// The box grid: the broad phase for objects with their own axis-aligned boxes.
/// Memory is one block laid out at init() (yours, or init_allocate()'s); no
/// call after init allocates.
///
/// Recipe (one frame):
///
///     hashgrid::BoxSpans in{min_x, min_y, min_z, max_x, max_y, max_z, category, mask, n};
///     hashgrid::Status s = boxes.rebuild(in, backend);              // boxes into every cell they cover
///     hashgrid::PairResult p = boxes.find_pairs(pairs, capacity, backend);
///
/// or, for objects kept in an ObjectStore (objects.h), s = boxes.rebuild(store, backend).
///
/// Pairs. Boxes are closed: a and b overlap when, on every axis, a.min <= b.max
/// and b.min <= a.max (touching counts). Each object has a category bitmask
/// and a collision mask (null spans: all bits); a pair needs
/// (cat_a & mask_b) != 0 and (cat_b & mask_a) != 0. Each pair is reported
/// once, as object indices a < b, in an order that is the same for every
/// thread count and SIMD width: small-small pairs first, by cell in sorted
/// (z, y, x) order, then lexicographically by the positions of the two entries
/// in the cell (entries ascend by object index); then the pairs of large
/// objects, by large object (ascending index), then by the other object.
///
/// Large objects, those covering more than BoxGridConfig::large_object_cells
/// cells (and, in an unbounded world, those reaching past the cell key range,
/// cell_key.h), are kept in a list, not in cells: exact, at the cost of what
/// their area holds (docs/user-guide.md, "Pairs of a box grid").
///
/// Object indices. Results name objects by their index in the rebuild's
/// BoxSpans, or for a store by its dense index, valid until the store's next
/// add, remove, clear or init. Each result carries the layout it names
/// (QueryResult::layout); map it with store.handles_at(boxes.view(), p, pairs,
/// handle_pairs) (objects.h), which answers stale_view, never a wrong object.
/// A frame with the same objects as the last one rebuilds only what moved,
/// with the full build's result (docs/user-guide.md, "Objects, handles and
/// dense indices").
#pragma once

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/lattice_config.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>

namespace hashgrid {

class ObjectStore; // objects.h
class Trace;       // trace.h

namespace detail {
struct BoxState; // the grid's private state, at the start of its memory block
} // namespace detail

/// Everything fixed at init for a box grid. All capacities are hard limits.
/// The lattice fields (dimensions, cell_size, world, origin, cell_counts,
/// out_of_bounds) are those of LatticeConfig (lattice_config.h); a bounded 3D
/// box grid also needs each cell count <= 2^20 - 1 (its cells are named by
/// packed keys, cell_key.h).
struct BoxGridConfig : LatticeConfig {
    /// Largest object count passed to rebuild(), in [1, 2^31).
    uint32_t max_objects = 0;
    /// Most (object, cell) entries per frame, summed over small objects, in [1, 2^31).
    uint32_t max_cell_entries = 0;
    /// Most pairs per frame (< 2^40): a hard limit, more is pair_capacity with the exact count.
    uint64_t max_pairs = 0;
    /// An object covering more than this many cells is a large object (see
    /// above). >= 1. Default measured in profiling/RESULTS.md (bench_boxes).
    uint32_t large_object_cells = 64;
};

/// Not the box grid's check: it would see the lattice only. Use BoxGrid::validate.
[[nodiscard]] Status validate(const BoxGridConfig& config) = delete;

/// Input boxes as structure-of-arrays. Pointers must stay valid during the call only.
struct BoxSpans {
    const float* min_x = nullptr;       ///< Minimum corners' x, count entries.
    const float* min_y = nullptr;       ///< Minimum corners' y, count entries.
    const float* min_z = nullptr;       ///< Ignored (may be null) in 2D.
    const float* max_x = nullptr;       ///< Maximum corners' x, count entries.
    const float* max_y = nullptr;       ///< Maximum corners' y, count entries.
    const float* max_z = nullptr;       ///< Ignored (may be null) in 2D.
    const uint32_t* category = nullptr; ///< Optional; null means every bit set.
    const uint32_t* mask = nullptr;     ///< Optional; null means every bit set.
    uint32_t count = 0;                 ///< Number of boxes.
};

/// Bounds of the objects of a frame that are kept in cells (not the large
/// ones), recorded by BoxGrid::rebuild so that prepare_box_queries
/// (box_queries.h) need not read every object again.
struct BoxFrameBounds {
    /// Inclusive cell-coordinate extent of the occupied cells (z = 0 in 2D).
    /// @{
    int32_t cell_lo[3] = {0, 0, 0};
    int32_t cell_hi[3] = {0, 0, 0};
    /// @}
    /// Union of those objects' boxes (0 on unused axes).
    /// @{
    float box_lo[3] = {0.0f, 0.0f, 0.0f};
    float box_hi[3] = {0.0f, 0.0f, 0.0f};
    /// @}
    /// Largest cell span (max cell - min cell) per axis of those objects.
    int32_t max_span[3] = {0, 0, 0};
};

/// Read-only view of a built box grid, for queries (box_queries.h).
struct BoxGridView {
    /// The grid's config (dimensions, lattice, capacities).
    const BoxGridConfig* config = nullptr;
    /// False when the grid held no frame when the view was taken (never
    /// rebuilt, or not initialised): queries then return not_built. Views
    /// built by hand hold a frame by definition.
    bool built = true;
    /// The grid's frame counter (null in views built by hand: not checked)
    /// and its value when the view was taken. A successful rebuild or init
    /// advances the counter, so queries through an older view return
    /// stale_view instead of reading a frame that has changed under it.
    /// @{
    const uint64_t* live_frame = nullptr;
    uint64_t frame = 0;
    /// @}
    /// The ObjectStore the frame was rebuilt from (BoxGrid::rebuild(store,
    /// ...)) and its layout_generation() at that rebuild; null and 0 when the
    /// frame came from BoxSpans or the view was built by hand. Every result of
    /// the frame carries source_layout (QueryResult::layout); ObjectStore's
    /// handles_at() / user_values_at() compare both with the store's.
    /// @{
    const ObjectStore* source_store = nullptr;
    uint64_t source_layout = 0;
    /// @}
    double scale = 0.0; ///< key_scale(cell_size): cell(p) = floor((p - origin) * scale).
    /// Objects of the frame (0 when the view holds no frame).
    uint32_t object_count = 0;
    /// Boxes, categories and masks copied in original object order (min[2],
    /// max[2] are null in 2D; categories and masks are all bits when the input
    /// span was null).
    /// @{
    const float* min[3] = {nullptr, nullptr, nullptr};
    const float* max[3] = {nullptr, nullptr, nullptr};
    const uint32_t* category = nullptr;
    const uint32_t* mask = nullptr;
    /// @}
    /// The bits every object's category has (AND over the frame's categories;
    /// all bits when the span was null). A query whose layer mask shares a
    /// bit with it reports every object it finds without reading categories.
    /// 0 (check every object) in views built by hand unless the caller sets it.
    uint32_t category_common = 0;
    /// Occupied cells (at least one entry), ascending packed key (pack_key3 /
    /// pack_key2 of cell_key.h, also in bounded worlds): (z, y, x) order.
    /// @{
    uint32_t cell_count = 0;
    const uint64_t* cell_key = nullptr;
    /// @}
    /// cell_count + 1 entries: entries of cell c are [cell_start[c], cell_start[c + 1]).
    const uint32_t* cell_start = nullptr;
    /// Object index of each entry; ascending within a cell.
    const uint32_t* entry_object = nullptr;
    /// Optional (null in views built by hand): each entry's copy of its
    /// object's box (z arrays null in 2D), read sequentially by the scans
    /// instead of gathering object boxes, and its first-cell bits: bit d is
    /// set when this cell is the object's first cell on axis d (always set
    /// for d >= dimensions). With a scan over cells [lo, hi], an entry in cell
    /// c is the one to report (the min-corner rule) exactly when, on every
    /// axis, its bit is set or c[d] == lo[d].
    /// @{
    const float* entry_min[3] = {nullptr, nullptr, nullptr};
    const float* entry_max[3] = {nullptr, nullptr, nullptr};
    const uint32_t* entry_flags = nullptr;
    /// @}
    /// Entries that can be read past the last one in entry_object and, when
    /// set, entry_min, entry_max and entry_flags (their values defined, never
    /// reported). The grid's views: 8, so the query kernels test the last
    /// partial vector of a run whole and mask it. 0 in views built by hand
    /// (arrays that end at the last entry) unless the caller sets it.
    uint32_t entry_padding = 0;
    /// Optional row table of the occupied cells (null in views built by
    /// hand, and when the occupied box has more (y, z) rows than
    /// max_cell_entries): with lo, hi = bounds->cell_lo, cell_hi, row
    /// r = (y - lo[1]) + (z - lo[2]) * (hi[1] - lo[1] + 1), and
    /// row_start[r] the index of the first occupied cell whose (z, y) row is
    /// r or later (rows + 1 entries). Queries find a row's cells with two
    /// reads instead of a search over the cell keys.
    const uint32_t* row_start = nullptr;
    /// Large objects, ascending index.
    /// @{
    uint32_t large_count = 0;
    const uint32_t* large_object = nullptr;
    /// @}
    /// The frame's bounds (BoxFrameBounds), meaningful when cell_count > 0;
    /// null in views built by hand: prepare_box_queries then computes them
    /// from the arrays above (O(cells + objects) instead of O(1)).
    const BoxFrameBounds* bounds = nullptr;
    /// The grid's trace (BoxGrid::set_trace) when the view was taken; null:
    /// none. prepare_box_queries and the batches through this view record
    /// their phases there.
    Trace* trace = nullptr;
};

/// The box grid. Not copyable; all memory is the block given to init().
class BoxGrid {
public:
    BoxGrid() = default;
    ~BoxGrid();
    BoxGrid(const BoxGrid&) = delete;
    BoxGrid& operator=(const BoxGrid&) = delete;

    /// Exact bytes and alignment init() needs for a config (invalid_config when rejected).
    [[nodiscard]] static MemoryRequirements memory_requirements(const BoxGridConfig& config);
    /// The lattice rules of validate(const LatticeConfig&) first, then the
    /// 3D cell-count limit above and this config's own fields.
    [[nodiscard]] static Status validate(const BoxGridConfig& config);

    /// Lays the grid out in caller memory; nothing allocates here or later.
    [[nodiscard]] Status init(const BoxGridConfig& config, void* memory, size_t bytes);
    /// Same, allocating the block once (freed in the destructor). Re-init is
    /// a transaction: the new block is allocated before the old one is freed,
    /// and any failure (invalid_config, memory_too_small when the allocation
    /// fails) leaves the object exactly as it was. A successful init() on
    /// caller memory frees a block an earlier init_allocate() allocated.
    [[nodiscard]] Status init_allocate(const BoxGridConfig& config);

    /// Puts every box into the cells it covers. Validation (count, NaN/inf,
    /// min > max, range) runs before anything changes: on failure the previous
    /// frame stays intact. entry_capacity reports the exact entries needed and
    /// also keeps the previous frame.
    [[nodiscard]] Status rebuild(const BoxSpans& boxes, const ThreadBackend& backend);
    /// The same from the store's live objects (object index = dense index),
    /// recording which store layout the frame's indices name (view():
    /// source_store, source_layout). Checked first, changing nothing:
    /// invalid_argument when the store was never initialised; invalid_config
    /// when its dimensions differ from the grid's or its max_objects exceeds
    /// the grid's (box_grid_config_for() in objects.h derives a matching
    /// config). Then as above.
    [[nodiscard]] Status rebuild(const ObjectStore& store, const ThreadBackend& backend);

    /// Every overlapping pair that passes the layer filter (and the custom
    /// filter, when given: PairFilter in query_types.h), once, in the order
    /// above. `out` gets min(total, capacity) pairs, always an exact prefix of
    /// that order (output_too_small: needed = total); more than max_pairs
    /// pairs is pair_capacity (needed = total) with the exact prefix of
    /// min(capacity, max_pairs) pairs written. not_built before a rebuild.
    [[nodiscard]] PairResult find_pairs(Pair* out, uint64_t capacity, const ThreadBackend& backend,
                                        PairFilter filter = {});

    /// Two sets: every (query box, grid object) overlap that passes the layer
    /// filter, as Pair{a = index into `queries`, b = object index}; no
    /// query-query or object-object work is done. Order: by a, then in the
    /// order a box query (box_queries.h) reports objects. Build the grid on
    /// the set that changes least (static obstacles) and pass the other.
    /// Query boxes are validated like rebuild()'s (invalid_position, invalid_box
    /// with the lowest query index; nothing written) but may reach outside the
    /// world. Limited by `capacity` only (output_too_small), not by max_pairs.
    /// A query covering many cells costs its occupied cells (found by a
    /// galloping search over cell_key), never its volume. The custom filter
    /// sees (query index, object index).
    [[nodiscard]] PairResult find_pairs_with(const BoxSpans& queries, Pair* out, uint64_t capacity,
                                             const ThreadBackend& backend, PairFilter filter = {});

    /// A view of the current frame for queries (box_queries.h) and for mapping
    /// results to handles (objects.h); built is false before the first rebuild.
    [[nodiscard]] BoxGridView view() const;

    /// Records the phases and chunks of rebuild, find_pairs, find_pairs_with
    /// and (through view()) prepare_box_queries and the box query batches
    /// into `trace` (trace.h), which must outlive its use here; null (the
    /// default) records nothing. Independent of init; not while a call of this
    /// grid runs.
    void set_trace(Trace* trace) { trace_ = trace; }
    /// The trace set by set_trace() (null: none).
    [[nodiscard]] Trace* trace() const { return trace_; }
    /// Objects of the last successful rebuild (0 before one).
    [[nodiscard]] uint32_t object_count() const;
    /// (object, cell) entries of the last successful rebuild, summed over small
    /// objects (0 before one); at most max_cell_entries.
    [[nodiscard]] uint32_t entry_count() const;
    /// The config of the last successful init.
    [[nodiscard]] const BoxGridConfig& config() const { return config_; }
    /// True after a successful init.
    [[nodiscard]] bool initialized() const { return initialized_; }

private:
    struct Impl;
    friend struct Impl;

    BoxGridConfig config_{};
    bool initialized_ = false;
    bool built_ = false;
    /// Advanced by every successful init and rebuild; never reset (views compare it).
    uint64_t frame_ = 0;
    /// The store of the current frame and its layout generation (null: BoxSpans).
    const ObjectStore* source_store_ = nullptr;
    uint64_t source_layout_ = 0;
    /// The store's change_clock() at that rebuild (its changes since are listed).
    uint64_t source_clock_ = 0;
    void* owned_memory_ = nullptr;
    Trace* trace_ = nullptr;
    // Layout and frame state: see box_grid.cpp.
    detail::BoxState* state_ = nullptr;
};

} // namespace hashgrid

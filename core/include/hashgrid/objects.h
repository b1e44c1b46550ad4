// SPDX-License-Identifier: MIT
/// @file
/// Persistent objects with handles: a fixed-capacity store of boxes that users
/// keep across frames (add / move / remove), laid out as the dense SoA arrays a
/// BoxGrid rebuild reads. docs/user-guide.md, "Objects, handles and dense
/// indices", has the whole frame with a grid.
///
/// Recipe:
///
///     hashgrid::ObjectStoreConfig config;          // 3D by default
///     config.max_objects = 100000;
///     hashgrid::Status s = store.init_allocate(config);   // or init(config, memory, bytes)
///     hashgrid::ObjectAddResult a = store.add(box, category, mask, user_value);
///     s = store.move(a.handle, new_box);
///     s = grid.rebuild(store, backend);    // grid config from box_grid_config_for(config)
///     hashgrid::PairResult p = grid.find_pairs(pairs, capacity, backend);
///     s = store.handles_at(grid.view(), p, pairs, handle_pairs);   // dense indices -> handles
///
/// Handles. A handle is {slot, generation}; removing the object (or clear())
/// makes every copy of it stale: invalid_handle, never applied to a later
/// object in the slot. A default ObjectHandle is never valid. A slot whose
/// 32-bit generation would wrap is retired (retired_count()). Stores with
/// different ObjectStoreConfig::handle_salt reject each other's handles.
///
/// Dense indices. Live objects are compact in [0, size()): add() appends,
/// remove() moves the last object into the hole. BoxGrid pairs and box queries
/// name objects by dense index, valid until the next successful add(),
/// remove(), clear() or init(), which advance layout_generation(); move(),
/// set_layers() and set_user_value() keep it. Map results with handles_at() /
/// user_values_at(), passing the result and the current frame's view: they
/// answer stale_view, never a wrong object, for a result of another layout.
/// handle_at(frame, index) maps one index inside a visitor; handle_at(index)
/// without a view is not checked at all. Failed operations change nothing.
///
/// Change log. Every successful move() and set_layers() is logged (a ring of
/// max_objects records): changes_since(clock) lists the dense indices changed
/// since change_clock() had that value, in change order, and says whether the
/// list is complete (not after more than max_objects changes, nor across a
/// layout change). BoxGrid::rebuild(store, backend) reads it to look only at
/// the objects that changed.
#pragma once

#include "hashgrid/box_grid.h"
#include "hashgrid/config.h"
#include "hashgrid/query_types.h"
#include "hashgrid/status.h"

#include <cstddef>
#include <cstdint>

namespace hashgrid {

namespace detail {
struct ObjectArrays;
} // namespace detail

/// Names a stored object across frames: slot and generation (see above).
struct ObjectHandle {
    uint32_t index = 0xffffffffu; ///< Slot, in [0, max_objects) when issued.
    uint32_t generation = 0;      ///< Never 0 when issued.

    /// Equal when both the slot and the generation are.
    friend constexpr bool operator==(const ObjectHandle& l, const ObjectHandle& r) {
        return l.index == r.index && l.generation == r.generation;
    }
    /// Not equal when the slot or the generation differs.
    friend constexpr bool operator!=(const ObjectHandle& l, const ObjectHandle& r) { return !(l == r); }
};
static_assert(sizeof(ObjectHandle) == 8, "ObjectHandle is two 32-bit values");

/// Dense index answered for an invalid handle.
inline constexpr uint32_t kInvalidObjectIndex = 0xffffffffu;

/// An axis-aligned box; closed (touching boxes overlap). z is ignored in 2D.
struct ObjectBox {
    float min[3] = {0.0f, 0.0f, 0.0f}; ///< Minimum corner; finite, <= max on every axis.
    float max[3] = {0.0f, 0.0f, 0.0f}; ///< Maximum corner; finite.
};

/// Everything fixed at init for an object store.
struct ObjectStoreConfig {
    /// 2 or 3. In 2D only x and y of boxes are read and stored.
    uint32_t dimensions = 3;
    /// Most live objects, in [1, 2^31); at most the BoxGridConfig::max_objects
    /// of a grid rebuilt from the store (box_grid_config_for()).
    uint32_t max_objects = 0;
    /// Give stores that must not accept each other's handles different salts
    /// (see "Handles" above). 0: every slot starts at generation 1.
    uint32_t handle_salt = 0;
};

/// A BoxGridConfig whose dimensions and max_objects are the store's, so that
/// BoxGrid::rebuild(store, backend) accepts the store; every other field keeps
/// its default. Set cell_size, max_cell_entries and max_pairs (and the world)
/// before init.
BoxGridConfig box_grid_config_for(const ObjectStoreConfig& store);

/// Handles of both objects of a Pair (ObjectStore::handles_at).
struct ObjectHandlePair {
    ObjectHandle a; ///< Handle of Pair::a.
    ObjectHandle b; ///< Handle of Pair::b.
};

/// User values of both objects of a Pair (ObjectStore::user_values_at).
struct UserValuePair {
    uint64_t a = 0; ///< User value of Pair::a.
    uint64_t b = 0; ///< User value of Pair::b.
};

/// The objects changed since a clock value (ObjectStore::changes_since).
/// Valid until the store's next change.
struct ObjectChanges {
    /// True when every change since `begin` is listed (see "Change log"); when
    /// false the list is empty and the caller must look at every object.
    bool complete = false;
    uint64_t begin = 0; ///< The clock value asked for.
    uint64_t end = 0;   ///< change_clock() now: changes [begin, end) are listed.
    /// The ring: change k's dense index is ring[k % ring_size].
    const uint32_t* ring = nullptr;
    uint64_t ring_size = 0; ///< Records in the ring (the store's max_objects).

    /// Changes listed: end - begin when complete, else 0.
    [[nodiscard]] uint64_t size() const { return complete ? end - begin : 0; }
    /// Dense index of the k-th change listed; kInvalidObjectIndex for k >= size().
    [[nodiscard]] uint32_t operator[](uint64_t k) const {
        return k < size() ? ring[(begin + k) % ring_size] : kInvalidObjectIndex;
    }
};

/// Outcome of ObjectStore::add().
struct [[nodiscard]] ObjectAddResult {
    /// ok, object_capacity (needed = the max_objects that would have fitted:
    /// size() + 1 + retired_count(); the store is unchanged),
    /// invalid_position (NaN/inf coordinate) or invalid_box (min > max on an axis).
    Status status;
    /// The new object's handle; the invalid default handle when status is not ok.
    ObjectHandle handle;
};

/// Fixed-capacity store of boxes with handles. Not copyable; all memory is the
/// block given to init(). Not thread-safe: one writer at a time, and no reads
/// concurrently with a write.
class ObjectStore {
public:
    ObjectStore() = default;
    ~ObjectStore();
    ObjectStore(const ObjectStore&) = delete;
    ObjectStore& operator=(const ObjectStore&) = delete;

    /// Exact bytes and alignment init() needs (invalid_config when the config is rejected).
    [[nodiscard]] static MemoryRequirements memory_requirements(const ObjectStoreConfig& config);
    /// Checks a config (dimensions 2 or 3, max_objects in [1, 2^31)): ok, or
    /// invalid_config with a message naming the field.
    [[nodiscard]] static Status validate(const ObjectStoreConfig& config);

    /// Lays the store out in caller memory (the store does not own it); O(max_objects).
    /// A failed init changes nothing (a store in use keeps its objects and
    /// handles); a successful one empties the store and frees a block that an
    /// earlier init_allocate() allocated.
    [[nodiscard]] Status init(const ObjectStoreConfig& config, void* memory, size_t bytes);
    /// Same, allocating the block once (freed in the destructor). The new block
    /// is allocated before the old one is freed: a failure (memory_too_small
    /// when the allocation fails) leaves the store exactly as it was.
    [[nodiscard]] Status init_allocate(const ObjectStoreConfig& config);

    /// Moves the whole store into a larger block, between frames: every
    /// object, handle, dense index, user value, layout_generation() and the
    /// change log stay as they are (results and views of the current layout
    /// stay valid), and the slots past the old max_objects join the free
    /// slots after those already free. `bigger` keeps dimensions and
    /// handle_salt, and max_objects at least the current one
    /// (invalid_config); the block is checked as by init() and must not be
    /// the store's own (invalid_argument). A failure changes nothing; a
    /// success frees a block an earlier init_allocate() or grow_allocate()
    /// allocated. A BoxGrid rebuilt from the store then needs a config whose
    /// max_objects fits (BoxGrid::init_allocate, then rebuild: its results
    /// depend on the objects only). O(max_objects).
    [[nodiscard]] Status grow(const ObjectStoreConfig& bigger, void* memory, size_t bytes);
    /// Same, allocating the new block (the old one is freed after the move).
    [[nodiscard]] Status grow_allocate(const ObjectStoreConfig& bigger);

    /// Adds a box with its layers (see box_grid.h: category bits, collision mask)
    /// and an opaque user value. The box is validated first: on any failure
    /// nothing changes. Before a successful init: invalid_argument.
    [[nodiscard]] ObjectAddResult add(const ObjectBox& box, uint32_t category, uint32_t mask, uint64_t user_value);
    /// Replaces an object's box. invalid_handle (checked first), invalid_position
    /// or invalid_box change nothing. The dense index is kept. move, set_layers,
    /// set_user_value, remove and get_box return invalid_argument before a
    /// successful init (in every build); contains() is then false,
    /// dense_index() kInvalidObjectIndex and spans() empty.
    [[nodiscard]] Status move(ObjectHandle handle, const ObjectBox& box);
    /// Replaces an object's category and collision mask (dense index kept).
    [[nodiscard]] Status set_layers(ObjectHandle handle, uint32_t category, uint32_t mask);
    /// Replaces an object's user value (dense index kept).
    [[nodiscard]] Status set_user_value(ObjectHandle handle, uint64_t user_value);
    /// Removes an object; the last dense object takes its dense index. Its
    /// handle (and every copy) becomes stale.
    [[nodiscard]] Status remove(ObjectHandle handle);
    /// Removes every object: all handles become stale. O(size()). Nothing
    /// happens before a successful init.
    void clear();

    /// True when the handle names a live object of this store.
    [[nodiscard]] bool contains(ObjectHandle handle) const;
    /// Dense index of a live object, or kInvalidObjectIndex.
    [[nodiscard]] uint32_t dense_index(ObjectHandle handle) const;
    /// Handle of the object at a dense index (< size()) now. An index >= size() (or
    /// a store never initialised) gives ObjectHandle{} (slot 0xffffffff,
    /// generation 0), which no store ever accepts, in every build. Not checked
    /// against layout changes: map grid results with the calls below.
    [[nodiscard]] ObjectHandle handle_at(uint32_t dense_index) const;
    /// Box of a live object (invalid_handle leaves `out` untouched).
    [[nodiscard]] Status get_box(ObjectHandle handle, ObjectBox& out) const;

    /// @name Checked mapping of grid results
    /// Dense indices of grid results mapped to handles and user values (see
    /// "Dense indices" in objects.h). `frame` is the view of the grid's current frame, `result` what the
    /// query, batch or pair search answered. Checked in this order, in every
    /// build, before anything is written (outputs are untouched on failure):
    ///
    ///     invalid_argument  the store was never initialised, or an array is
    ///                       null while there is something to map;
    ///     not_built         the view holds no frame;
    ///     invalid_argument  the frame was not rebuilt from this store
    ///                       (frame.source_store != this, e.g. from BoxSpans);
    ///     stale_view        layout_generation() != frame.source_layout (an add,
    ///                       remove, clear or init since that rebuild);
    ///     stale_view        result.layout != frame.source_layout (the result
    ///                       names another layout: a frame of an older layout,
    ///                       another store's, one rebuilt from BoxSpans, a
    ///                       particle grid);
    ///     invalid_argument  result.status is not ok, output_too_small or
    ///                       pair_capacity (those write a valid prefix; a
    ///                       failed search names no objects);
    ///     invalid_argument  first + count > result.written (the part forms);
    ///     invalid_argument  an index is >= size() (index = lowest offending
    ///                       position in the input array, count = offending
    ///                       positions; both saturate at 2^32 - 1).
    ///
    /// User values are the current ones (set_user_value() keeps the layout).
    /// @{

    /// A whole query or batch output: out[k] = handle of dense_indices[k],
    /// k < result.written (dense_indices: the buffer the query wrote).
    [[nodiscard]] Status handles_at(const BoxGridView& frame, const QueryResult& result, const uint32_t* dense_indices,
                                    ObjectHandle* out) const;
    /// out[k] = user value of dense_indices[k], k < result.written.
    [[nodiscard]] Status user_values_at(const BoxGridView& frame, const QueryResult& result,
                                        const uint32_t* dense_indices, uint64_t* out) const;
    /// Part of a result: out[k] = handle of dense_indices[first + k], k < count,
    /// with first + count <= result.written. dense_indices is the start of
    /// the buffer the query or batch wrote, as above. Query q of a batch that
    /// wrote `flat`:
    ///
    ///     handles_at(frame, result, flat, offsets[q], offsets[q + 1] - offsets[q], handles);
    [[nodiscard]] Status handles_at(const BoxGridView& frame, const QueryResult& result, const uint32_t* dense_indices,
                                    uint64_t first, uint64_t count, ObjectHandle* out) const;
    /// out[k] = user value of dense_indices[first + k], k < count (as above).
    [[nodiscard]] Status user_values_at(const BoxGridView& frame, const QueryResult& result,
                                        const uint32_t* dense_indices, uint64_t first, uint64_t count,
                                        uint64_t* out) const;
    /// find_pairs() output: out[k] = handles of pairs[k].a and pairs[k].b,
    /// k < result.written. (find_pairs_with()'s a is an index into its
    /// queries, not a dense index: copy its b's into an array and map that
    /// with the index forms above.)
    [[nodiscard]] Status handles_at(const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                                    ObjectHandlePair* out) const;
    /// out[k] = user values of pairs[k].a and pairs[k].b, k < result.written.
    [[nodiscard]] Status user_values_at(const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                                        UserValuePair* out) const;
    /// Part of the pairs: out[k] = handles of pairs[first + k], k < count,
    /// with first + count <= result.written.
    [[nodiscard]] Status handles_at(const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                                    uint64_t first, uint64_t count, ObjectHandlePair* out) const;
    /// out[k] = user values of pairs[first + k], k < count (as above).
    [[nodiscard]] Status user_values_at(const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                                        uint64_t first, uint64_t count, UserValuePair* out) const;

    /// One index, without a result: the handle of the object at `dense_index`
    /// of `frame`. For visitors (QueryVisitor), which get one index per call
    /// while the query runs on the current frame; every check above except
    /// those on a result. Elsewhere map results with the calls above, which
    /// also know which frame the indices came from.
    [[nodiscard]] Status handle_at(const BoxGridView& frame, uint32_t dense_index, ObjectHandle& out) const;
    /// User value of the object at `dense_index` of `frame` (as handle_at).
    [[nodiscard]] Status user_value_at(const BoxGridView& frame, uint32_t dense_index, uint64_t& out) const;
    /// @}

    /// Advanced by every successful add(), remove(), clear() and init(): the
    /// operations that change the dense layout (which objects the dense
    /// indices [0, size()) name). 0 before the first successful init, then a
    /// number no other store of the process ever has (docs/user-guide.md);
    /// it only grows, never reset.
    [[nodiscard]] uint64_t layout_generation() const { return layout_; }
    /// layout_generation() just after the last successful init(): changes
    /// with init() only. Generations restart at init, so a handle is only
    /// meaningful together with this value (PairTracker checks it). 0 before
    /// the first init.
    [[nodiscard]] uint64_t init_layout() const { return init_layout_; }

    /// Changes made so far (see "Change log"): advanced by every successful
    /// move(), set_layers(), add(), remove(), clear() and init(); never reset.
    [[nodiscard]] uint64_t change_clock() const { return clock_; }
    /// The objects moved or given new layers since change_clock() was `clock`
    /// (see "Change log"); complete = false for a clock from before the last
    /// layout change, from the future, or more than max_objects changes ago.
    [[nodiscard]] ObjectChanges changes_since(uint64_t clock) const;

    /// Live objects.
    [[nodiscard]] uint32_t size() const { return count_; }
    /// max_objects minus retired slots: how many objects can live at once now.
    [[nodiscard]] uint32_t capacity() const { return config_.max_objects - retired_; }
    /// Slots retired after a generation wrap (see above).
    [[nodiscard]] uint32_t retired_count() const { return retired_; }

    /// The dense boxes and layers as BoxGrid input (valid until the next change;
    /// z spans are null in 2D). BoxGrid::rebuild(store, backend) reads them and
    /// also records the layout, for the checked resolution calls.
    [[nodiscard]] BoxSpans spans() const;
    /// Dense arrays, size() entries each. Boxes: null for an axis >= dimensions
    /// (any axis, in every build) and before a successful init.
    /// @{
    [[nodiscard]] const float* min_coords(uint32_t axis) const { return axis < 3 ? min_[axis] : nullptr; }
    [[nodiscard]] const float* max_coords(uint32_t axis) const { return axis < 3 ? max_[axis] : nullptr; }
    [[nodiscard]] const uint32_t* categories() const { return category_; }
    [[nodiscard]] const uint32_t* masks() const { return mask_; }
    [[nodiscard]] const uint64_t* user_values() const { return user_; }
    /// @}
    /// Slot of each dense index (handle_at(i).index == dense_slots()[i]).
    [[nodiscard]] const uint32_t* dense_slots() const { return dense_slot_; }

    /// The config of the last successful init.
    [[nodiscard]] const ObjectStoreConfig& config() const { return config_; }
    /// True after a successful init.
    [[nodiscard]] bool initialized() const { return initialized_; }

private:
    friend struct ObjectStoreTestAccess; // core/src/objects/objects_internal.h (tests force generation wraps)
    friend struct ObjectStoreSlots;      // core/src/objects/objects_internal.h (PairTracker reads the slots)

    /// Dense index of a live handle or kInvalidObjectIndex.
    [[nodiscard]] uint32_t live_dense(ObjectHandle handle) const;
    void write_box(uint32_t dense, const ObjectBox& box);
    /// Frees (or retires) the slot of a removed object.
    void release_slot(uint32_t slot);
    /// The checks of the mapping calls up to the result (see above).
    [[nodiscard]] Status check_frame(const BoxGridView& frame, const void* in, const void* out, uint64_t count) const;
    /// check_frame, then the result's layout, status and part [first, first + count).
    [[nodiscard]] Status check_result(const BoxGridView& frame, const QueryResult& result, const void* in,
                                      const void* out, uint64_t first, uint64_t count) const;
    /// Index checks and writes of the mapping calls, after the checks above.
    [[nodiscard]] Status write_handles(const uint32_t* in, uint64_t first, uint64_t count, ObjectHandle* out) const;
    [[nodiscard]] Status write_user_values(const uint32_t* in, uint64_t first, uint64_t count, uint64_t* out) const;
    [[nodiscard]] Status write_handles(const Pair* in, uint64_t first, uint64_t count, ObjectHandlePair* out) const;
    [[nodiscard]] Status write_user_values(const Pair* in, uint64_t first, uint64_t count, UserValuePair* out) const;
    /// Advances layout_ (one shared sequence: see layout_generation()) and ends
    /// the change log's lists (see "Change log").
    void advance_layout();
    /// Appends a change of the object at `dense` to the change log.
    void log_change(uint32_t dense);
    /// Points every array of the store into a block laid out by init() or grow().
    void adopt(const detail::ObjectArrays& arrays);

    ObjectStoreConfig config_{};
    bool initialized_ = false;
    void* owned_memory_ = nullptr;

    uint32_t count_ = 0;       // live objects = dense size
    uint32_t retired_ = 0;     // slots never to be issued again
    uint64_t layout_ = 0;      // layout generation (layout_generation())
    uint64_t init_layout_ = 0; // layout_ just after the last init (init_layout())
    // Change log: change k's dense index at change_ring_[k % max_objects];
    // changes before layout_clock_ name another layout.
    uint64_t clock_ = 0;
    uint64_t layout_clock_ = 0;
    uint32_t ring_at_ = 0; // clock_ % max_objects
    uint32_t* change_ring_ = nullptr;

    // Dense SoA, max_objects entries each (z arrays null in 2D).
    float* min_[3] = {nullptr, nullptr, nullptr};
    float* max_[3] = {nullptr, nullptr, nullptr};
    uint32_t* category_ = nullptr;
    uint32_t* mask_ = nullptr;
    uint64_t* user_ = nullptr;
    uint32_t* dense_slot_ = nullptr;

    // Per slot: current generation, and dense index (or kFreeSlot / kRetiredSlot).
    uint32_t* slot_generation_ = nullptr;
    uint32_t* slot_dense_ = nullptr;
    // Free slots, first in first out: a ring of max_objects entries.
    uint32_t* free_ring_ = nullptr;
    uint32_t free_head_ = 0;
    uint32_t free_count_ = 0;
};

} // namespace hashgrid

// SPDX-License-Identifier: MIT
/// @file
/// Overlap events: which pairs began, persisted and ended since the previous
/// frame, for contacts and for sensors, from the pairs either grid kind found.
/// docs/user-guide.md, "Overlap events and sensors", has the whole frame.
///
/// Recipe (a box grid rebuilt from an ObjectStore; events name handles):
///
///     hashgrid::PairTrackerConfig tc;
///     tc.max_ids = store_config.max_objects;  // ids are the store's slots
///     tc.max_pairs = grid_config.max_pairs;
///     tc.sensor_layers = kSensorBit;          // objects in this category are sensors
///     s = tracker.init_allocate(tc);
///     // every frame, after the store's add / move / remove:
///     s = grid.rebuild(store, backend);
///     hashgrid::PairResult p = grid.find_pairs(pairs, capacity, backend);
///     s = tracker.update(store, grid.view(), p, pairs, backend);
///     hashgrid::PairEvents e = tracker.events();
///     for (uint64_t k = 0; k < e.begin.count; ++k) on_touch(e.begin.pairs[k].a, e.begin.pairs[k].b);
///
/// Ids. A tracked pair is named by two ids below max_ids. update(result,
/// pairs, ...) takes the indices of find_pairs() (particle grids, box grids
/// rebuilt from BoxSpans) as ids; keep an object's index from frame to frame
/// for its events to mean anything. update(store, ...) takes the pairs of a
/// box grid rebuilt from an ObjectStore and names objects by handle: the id is
/// the handle's slot, and a pair persists only when both handles are the ones
/// of the previous frame, so a slot removed and reused between two updates
/// ends the old object's pairs and begins the new one's, never persists. The
/// update_with() forms take find_pairs_with() pairs: a is the caller's query
/// index (generation 0), b the grid's particle, object index or handle.
///
/// Events. An event is an ObjectHandlePair: handles for the store forms,
/// {index, 0} for the index forms. In a find_pairs() pair a.index < b.index
/// (the store forms order each pair by slot). begin and end are ascending by
/// (a.index, b.index); persist, contacts and sensors keep the order of this
/// frame's pairs (the search's order). Every list is the same bytes for
/// every thread count, backend and target. begin: pairs of this frame that the previous frame did not have;
/// end: pairs of the previous frame that this frame does not have (with the
/// previous frame's handles: those of removed objects included), persist: in
/// both. The first update after init() or reset() reports every pair as
/// begin. begin and end are always listed; persist and the frame's whole
/// pair lists (contacts, sensors) are counted always and listed with
/// PairTrackerConfig::list_pairs.
///
/// Sensors. A pair is a sensor pair when one of its objects has a category
/// bit in PairTrackerConfig::sensor_layers (categories: the store's, or the
/// array passed to the index forms; with update_with(), b's only). Sensor
/// pairs have their own begin / persist / end lists and never appear in the
/// contact lists (begin, persist, end, contacts). An object whose layers
/// change from contact to sensor ends its contact pairs and begins sensor
/// pairs in the same frame.
///
/// Cost. A grid writes its pairs in cell order, so consecutive frames' lists
/// are nearly the same sequence: an update walks the two side by side (no
/// hashing, no sort of the frame), and only the pairs the walk could not
/// match (those that began, ended or moved in the list) are radix-sorted and
/// merged. O(pairs of both frames + max_ids) sequential work plus the sort
/// of what changed, in parallel through the backend; events do not depend
/// on what the walk matched. Nothing allocates after init.
///
/// Failure. A failed update() changes nothing the next update reads: the
/// previous frame's pairs stay the reference, so the events of the next
/// successful update are right. events() is empty after a failed update.
#pragma once

#include "hashgrid/memory.h"
#include "hashgrid/objects.h"
#include "hashgrid/query_types.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cstddef>
#include <cstdint>

namespace hashgrid {

namespace detail {
struct PairTrackerState;
} // namespace detail

/// Everything fixed at init for a pair tracker.
struct PairTrackerConfig {
    /// Ids are in [0, max_ids): at least the particle or object count (the
    /// store forms: the store's max_objects; update_with(): also above every
    /// query index). In [1, 2^31).
    uint32_t max_ids = 0;
    /// Most pairs one frame may have, in [1, 2^32 - 1]: more is pair_capacity
    /// with needed = the frame's pair count, and the frame is not taken.
    uint32_t max_pairs = 0;
    /// Category bits that make an object a sensor (see "Sensors"); 0: none.
    uint32_t sensor_layers = 0;
    /// List persisting pairs and the frame's pairs (PairEvents::persist,
    /// sensor_persist, contacts, sensors); false: only count them, which
    /// saves their writing and max_pairs * 33 bytes.
    bool list_pairs = false;
};

/// A list of events (see "Events" for its order). pairs is null when the
/// list is only counted (without list_pairs) or empty.
struct PairEventList {
    const ObjectHandlePair* pairs = nullptr; ///< count entries, or null (see above).
    uint64_t count = 0;                      ///< Events in the list (exact, also when not listed).
};

/// The events of the last successful update(). Valid until the tracker's
/// next update(), reset() or init().
struct PairEvents {
    PairEventList begin;          ///< Contact pairs new this frame.
    PairEventList persist;        ///< Contact pairs of both frames (listed with list_pairs).
    PairEventList end;            ///< Contact pairs of the previous frame gone now.
    PairEventList sensor_begin;   ///< Sensor pairs new this frame.
    PairEventList sensor_persist; ///< Sensor pairs of both frames (listed with list_pairs).
    PairEventList sensor_end;     ///< Sensor pairs of the previous frame gone now.
    PairEventList contacts;       ///< Every contact pair of this frame (listed with list_pairs).
    PairEventList sensors;        ///< Every sensor pair of this frame (listed with list_pairs).
    uint64_t frame = 0;           ///< Successful updates since init() (0: none yet, all lists empty).
};

/// Tracks one stream of pairs from frame to frame. Not copyable; all memory is
/// the block given to init(). One update at a time; events() may be read from
/// any thread between updates.
class PairTracker {
public:
    PairTracker() = default;
    ~PairTracker();
    PairTracker(const PairTracker&) = delete;
    PairTracker& operator=(const PairTracker&) = delete;

    /// Exact bytes and alignment init() needs (invalid_config when the config is rejected).
    [[nodiscard]] static MemoryRequirements memory_requirements(const PairTrackerConfig& config);
    /// max_ids in [1, 2^31), max_pairs >= 1: ok, or invalid_config naming the field.
    [[nodiscard]] static Status validate(const PairTrackerConfig& config);

    /// Lays the tracker out in caller memory; nothing allocates here or later.
    /// A failed init changes nothing; a successful one forgets every frame.
    [[nodiscard]] Status init(const PairTrackerConfig& config, void* memory, size_t bytes);
    /// Same, allocating the block once (freed in the destructor); the new block
    /// is allocated before the old one is freed.
    [[nodiscard]] Status init_allocate(const PairTrackerConfig& config);

    /// Moves the tracker into a larger block between frames: the previous
    /// frame (the next update's reference) and the last events stay, so the
    /// next update's events are those it would have had. max_ids and
    /// max_pairs at least the current ones (invalid_config); list_pairs may
    /// change (turned on, the last persist and frame lists are empty). The
    /// block is checked as by init() and must not be the tracker's own
    /// (invalid_argument). A failure changes nothing. O(max_ids + pairs).
    [[nodiscard]] Status grow(const PairTrackerConfig& bigger, void* memory, size_t bytes);
    /// Same, allocating the new block (the old one is freed after the move).
    [[nodiscard]] Status grow_allocate(const PairTrackerConfig& bigger);

    /// The pairs of one find_pairs() search (particle grid, or box grid
    /// rebuilt from BoxSpans) as this frame's pairs. `result` is what the
    /// search answered, `pairs` the buffer it wrote. categories, when not
    /// null, holds max_ids entries: the category bits of each id, for
    /// sensor_layers (null: no sensors). Checked in this order, nothing
    /// changing on failure:
    ///
    ///     invalid_argument  never initialised; pairs null with pairs to read;
    ///                       result.status not ok (events need every pair of
    ///                       the frame: raise the search's capacity);
    ///                       result.layout != 0 (a frame rebuilt from an
    ///                       ObjectStore: dense indices move, use the store
    ///                       form); the previous frame came from another form
    ///                       or store (reset() first);
    ///     pair_capacity     result.written > max_pairs (needed = written);
    ///     invalid_argument  a pair with an id >= max_ids or a == b:
    ///                       index = lowest such position in `pairs`,
    ///                       count = how many;
    ///     invalid_argument  a pair given twice ({a, b} and {b, a} are one
    ///                       pair; find_pairs() never does): in builds with
    ///                       HASHGRID_ASSERT, an assertion and this status
    ///                       with index = the lowest later copy (a sort of
    ///                       every pair checks it); elsewhere this status
    ///                       when both copies are new this frame, else
    ///                       that frame's events are unspecified.
    [[nodiscard]] Status update(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                                const uint32_t* categories = nullptr);
    /// The pairs of one find_pairs_with() search: a is the caller's query
    /// index, b the grid's index; {a, b} and {b, a} are different pairs.
    /// categories (max_ids entries, or null) decides sensors by b. Checks as
    /// update().
    [[nodiscard]] Status update_with(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                                     const uint32_t* categories = nullptr);
    /// The pairs of BoxGrid::find_pairs() on a frame rebuilt from `store`,
    /// named by handle (see "Ids"); the store's categories decide sensors.
    /// Checked first, as ObjectStore::handles_at() checks a result (not_built,
    /// invalid_argument, stale_view: the store changed layout since the
    /// rebuild), then result.status must be ok, max_ids must be at least the
    /// store's max_objects (invalid_argument), and then as update().
    [[nodiscard]] Status update(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                                const Pair* pairs, const ThreadBackend& backend);
    /// BoxGrid::find_pairs_with() on a frame rebuilt from `store`: a is the
    /// query index (handle {a, 0}), b is mapped to its handle; b's category
    /// decides sensors. Checks as the store form of update().
    [[nodiscard]] Status update_with(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                                     const Pair* pairs, const ThreadBackend& backend);

    /// The events of the last successful update (empty before one, and after
    /// a failed update, reset() or init()).
    [[nodiscard]] PairEvents events() const;
    /// Forgets the previous frame: the next update reports every pair as
    /// begin and may come from any form or store. Nothing happens before init.
    void reset();

    /// The config of the last successful init.
    [[nodiscard]] const PairTrackerConfig& config() const { return config_; }
    /// True after a successful init.
    [[nodiscard]] bool initialized() const { return state_ != nullptr; }

private:
    [[nodiscard]] Status update_index(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                                      const uint32_t* categories, bool two_sets);
    [[nodiscard]] Status update_store(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                                      const Pair* pairs, const ThreadBackend& backend, bool two_sets);

    PairTrackerConfig config_{};
    detail::PairTrackerState* state_ = nullptr; // inside the block
    void* owned_memory_ = nullptr;
};

} // namespace hashgrid

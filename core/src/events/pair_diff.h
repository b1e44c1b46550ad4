// SPDX-License-Identifier: MIT
// The state of a PairTracker and the steps of one update (pair_tracker.h).
//
// A grid writes its pairs in cell order, and from one frame to the next most
// pairs come out of the same cells in the same order: the two frames' lists
// are nearly the same sequence. An update walks them side by side instead of
// sorting or hashing either (random reads cost ~10 ns each on the
// development VM, a walk ~1 ns per pair):
//   1. tables (store forms): which dense indices name another object than
//      last frame (their slot or its generation changed), and which are
//      sensors, as bits: a pair's checks read two bits, no object data;
//   2. keys: each pair of the frame packed as a walk key (lower id, higher
//      id, sensor bit), in input order; the ids are the store's dense
//      indices or the caller's indices;
//   3. walk: this frame's keys against the previous frame's, in chunks of
//      kPairGrain pairs, each chunk starting where its first keys are found
//      in the previous list. Equal keys of unchanged objects are the same
//      pair: it persists. Where the lists differ, a look-ahead of kLookAhead
//      entries resynchronises them; every entry left over is a residual;
//   4. residuals: both sides' residuals keyed by identity (store slots,
//      else the ids), radix-sorted and merged: equal identities (and
//      generations) persist (a pair that moved in the list), this frame's
//      others begin, the previous frame's others end. Sorting only the
//      residuals is what makes the cost follow the pairs that changed; the
//      event lists come out sorted by identity whatever the walk matched;
//   5. lists (with list_pairs), then the commit (a swap of buffers).
// The walk's matching is a heuristic only for speed: any pair it misses is a
// residual, and the residual merge finds it. So the events do not depend on
// where the chunks start, nor on the thread count.
#pragma once

#include "common/chunks.h"
#include "common/status_make.h"

#include "hashgrid/objects.h"
#include "hashgrid/pair_tracker.h"
#include "hashgrid/query_types.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>

namespace hashgrid::detail {

/// Which update form gave a frame: a frame is compared only with one of the same form (and store).
enum class PairSource : uint32_t { none, index, index_with, store, store_with };

inline constexpr uint32_t kPairGrain = 16384;      // pairs per chunk (keys, walk, lists)
inline constexpr uint32_t kPairMergeGrain = 16384; // residuals of each side between two merge splitters
inline constexpr uint32_t kPairDigitBits = 11;     // radix digits of the residuals' sort
inline constexpr uint32_t kLookAhead = 8;          // entries the walk searches ahead to resynchronise
inline constexpr uint32_t kAnchorReach = 1024;     // entries around a chunk's expected start searched for its keys
inline constexpr uint32_t kAnchorTries = 4;        // first keys of a chunk tried as anchors
inline constexpr uint64_t kNoEntry = ~uint64_t{0};

struct PairTrackerState {
    uint32_t id_bits = 1; // bits of one id in a key
    uint32_t max_ids = 0;
    uint32_t list_pairs = 0;
    // Per frame (index prev: the previous frame, 1 - prev: this one).
    uint64_t* key[2] = {};        // walk keys in input order
    uint32_t* dense_slot[2] = {}; // store forms: slot of each dense index (max_ids)
    uint32_t* slot_gen[2] = {};   // store forms: generation of each slot (max_ids)
    // This frame's tables and scratch.
    uint32_t* changed = nullptr;       // bit per id: another object than last frame (store forms)
    uint32_t* sensor = nullptr;        // bit per id: a sensor
    uint32_t* anchor = nullptr;        // previous-list start of each walk chunk (chunks + 1)
    uint32_t* residual_pos[2][2] = {}; // [side: 0 this frame, 1 previous][radix buffer]: positions
    uint64_t* residual_key[2][2] = {}; // identity keys of the residuals
    uint8_t* is_begin = nullptr;       // per pair of this frame, with list_pairs
    uint32_t* hist = nullptr;          // radix counts
    uint64_t* chunk = nullptr;         // per-chunk counters of every step
    uint64_t* splitter = nullptr;
    ObjectHandlePair* begin = nullptr;
    ObjectHandlePair* end = nullptr;
    ObjectHandlePair* persist = nullptr; // with list_pairs
    ObjectHandlePair* current = nullptr; // with list_pairs

    uint32_t prev = 0;         // which per-frame buffers hold the previous frame
    uint32_t prev_count = 0;   // its pairs
    uint32_t prev_objects = 0; // store forms: its store's size()
    PairSource prev_source = PairSource::none;
    const ObjectStore* prev_store = nullptr;
    uint64_t prev_store_init = 0;

    PairEvents events{};
    uint64_t frames = 0;
};

/// One pair as read from the input: its ids (dense indices for the store
/// forms); a == kNoIndex: unreadable (an index out of range).
struct PairIds {
    uint32_t a = kNoIndex;
    uint32_t b = kNoIndex;
};

/// What one update works on.
struct FrameInput {
    uint32_t n = 0;                       // pairs of this frame
    uint32_t np = 0;                      // pairs of the previous frame (0: none)
    bool two_sets = false;                // find_pairs_with: {a, b} is not {b, a}
    const ObjectStore* store = nullptr;   // store forms
    const uint32_t* categories = nullptr; // index forms: category bits per id (null: no sensors)
    bool renewed = false;                 // no pair persists (the store was initialised again)
    uint32_t sensors = 0;                 // sensor pairs of this frame (set by build_keys)
};

/// Lays the state and its arrays out in a block (base null: measures). Returns the bytes.
uint64_t lay_out_tracker(const PairTrackerConfig& config, unsigned char* base, PairTrackerState** out);

/// PairTracker::grow: the previous frame (keys packed again for the new id
/// width), its tables and the last events, from `from` into `to` (laid out
/// for a config at least as large).
void move_tracker(const PairTrackerState& from, PairTrackerState& to);

/// Step 1: the tables of this frame (see the top of this file).
void build_tables(PairTrackerState& s, const PairTrackerConfig& config, const ThreadBackend& b, const FrameInput& f);

inline bool test_bit(const uint32_t* bits, uint32_t i) { return ((bits[i >> 5] >> (i & 31)) & 1u) != 0; }

/// Step 2: every pair of the frame read, checked and packed in input order;
/// f.sensors counts the sensor pairs.
template <typename Read>
Status build_keys(PairTrackerState& s, const ThreadBackend& b, FrameInput& f, Read&& read) {
    // Locals, not members: the compiler cannot tell that the key stores leave the state alone.
    const uint32_t w = s.id_bits;
    const uint32_t max_ids = s.max_ids;
    const uint32_t* const sensor_bits = s.sensor;
    const bool two_sets = f.two_sets;
    uint64_t* const key = s.key[1 - s.prev];
    parallel_chunks(b, f.n, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t first_bad = kNoEntry, bad = 0, sensors = 0;
        for (uint32_t i = begin; i < end; ++i) {
            PairIds e = read(i);
            if (e.a >= max_ids || e.b >= max_ids || (!two_sets && e.a == e.b)) [[unlikely]] {
                first_bad = first_bad < i ? first_bad : i;
                ++bad;
                continue;
            }
            if (!two_sets && e.a > e.b) {
                const uint32_t t = e.a;
                e.a = e.b;
                e.b = t;
            }
            const bool sensor = test_bit(sensor_bits, e.b) || (!two_sets && test_bit(sensor_bits, e.a));
            key[i] = (uint64_t{e.a} << (w + 1)) | (uint64_t{e.b} << 1) | (sensor ? 1u : 0u);
            sensors += sensor ? 1 : 0;
        }
        s.chunk[3 * uint64_t{begin / kPairGrain}] = first_bad;
        s.chunk[3 * uint64_t{begin / kPairGrain} + 1] = bad;
        s.chunk[3 * uint64_t{begin / kPairGrain} + 2] = sensors;
    });
    uint64_t first_bad = kNoEntry, bad = 0, sensors = 0;
    for (uint32_t c = 0, chunks = chunk_count(f.n, kPairGrain); c < chunks; ++c) {
        first_bad = first_bad < s.chunk[3 * c] ? first_bad : s.chunk[3 * c];
        bad += s.chunk[3 * c + 1];
        sensors += s.chunk[3 * c + 2];
    }
    f.sensors = static_cast<uint32_t>(sensors);
    if (bad == 0) return {};
    return item_status(StatusCode::invalid_argument,
                       "a pair names an id >= PairTrackerConfig::max_ids (or an index past the store's objects), "
                       "or a == b; index = lowest such position",
                       static_cast<uint32_t>(first_bad), static_cast<uint32_t>(bad < ~0u ? bad : ~0u));
}

/// Steps 3 to 5 after build_keys, and the commit. Checks first that no pair
/// is given twice where the build checks assertions (HASHGRID_ASSERT: it
/// sorts every key); elsewhere such a frame gives unspecified events.
Status finish_frame(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, PairSource source);

} // namespace hashgrid::detail

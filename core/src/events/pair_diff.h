// SPDX-License-Identifier: MIT
// The state of a PairTracker and the steps of one update (pair_tracker.h).
//
// The previous frame's pairs are kept as one list of packed keys (lower id,
// higher id, sensor bit) in ascending order, with a row index (row[a]: the
// first entry whose lower id is a). An update:
//   1. lookup_frame: reads each pair of the frame in input order, packs its
//      key and looks it up in the previous list (its row, a few entries:
//      binary search past 16), marking the entry found: persist. A pair not
//      found is flagged as a begin. No sort and no hashing: one pass.
//   2. sort_begins (pair_diff.cpp): only the begins are sorted (the radix
//      sort of the grids' rebuilds), so the sort costs what changed.
//   3. merge_frame: the previous list (marked: persist, unmarked: end) and
//      the sorted begins merge into the next list and every event list, in
//      chunks bounded by keys sampled from both lists.
//   4. build_rows, commit: the next list's row index, and the swap.
// Nothing the next update reads changes before the commit.
#pragma once

#include "common/chunks.h"
#include "common/status_make.h"

#include "hashgrid/objects.h"
#include "hashgrid/pair_tracker.h"
#include "hashgrid/query_types.h"
#include "hashgrid/thread_backend.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace hashgrid::detail {

/// Which update form gave a frame: a frame is compared only with one of the same form (and store).
enum class PairSource : uint32_t { none, index, index_with, store, store_with };

inline constexpr uint32_t kPairGrain = 16384;             // pairs per chunk (lookup, compaction, sort)
inline constexpr uint32_t kPairMergeGrain = 16384;        // entries of each list between two merge splitters
inline constexpr uint32_t kPairDigitBits = 11;            // radix digits of the begins' sort
inline constexpr uint64_t kBeginFlag = uint64_t{1} << 63; // on an input key: not found in the previous list
inline constexpr uint64_t kNoEntry = ~uint64_t{0};        // no position
inline constexpr uint32_t kLookupSlots = 4;               // per lookup chunk: begins, lowest bad, bad count, dup
inline constexpr uint32_t kMergeSlots = 8;                // per merge chunk: 6 event counts, duplicates

struct PairTrackerState {
    uint32_t id_bits = 1; // bits of one id in a key
    uint32_t max_ids = 0;
    // The sorted lists: the previous frame's (index prev) and the next one.
    uint64_t* key[2] = {};
    uint64_t* gen[2] = {};       // generations (a << 32 | b), store forms
    uint32_t* row[2] = {};       // row[a] = first entry with lower id >= a; max_ids + 1 entries
    uint8_t* mark = nullptr;     // per previous entry: found again this frame
    uint64_t* in_key = nullptr;  // this frame's keys in input order (kBeginFlag: not found)
    uint64_t* in_gen = nullptr;  // their generations (store forms)
    uint64_t* begin_key[2] = {}; // the begins, sorted in place (radix ping-pong)
    uint32_t* begin_pos[2] = {}; // their input positions
    uint32_t* hist = nullptr;    // radix counts
    uint64_t* chunk = nullptr;   // per-chunk counters of every step
    uint64_t* splitter = nullptr;
    ObjectHandlePair* begin = nullptr;
    ObjectHandlePair* end = nullptr;
    ObjectHandlePair* persist = nullptr; // null without list_pairs
    ObjectHandlePair* current = nullptr; // null without list_pairs

    uint32_t prev = 0;       // which key / gen / row buffer holds the previous frame
    uint32_t prev_count = 0; // its pairs
    PairSource prev_source = PairSource::none;
    const ObjectStore* prev_store = nullptr;
    uint64_t prev_store_init = 0;

    PairEvents events{};
    uint64_t frames = 0;
};

/// One pair as read from the input; a == kNoIndex: unreadable (an index out of range).
struct PairEnds {
    uint32_t a = kNoIndex;
    uint32_t b = kNoIndex;
    uint32_t a_generation = 0;
    uint32_t b_generation = 0;
    bool sensor = false;
};

/// What one update works on.
struct FrameInput {
    uint32_t n = 0;           // pairs of this frame
    uint32_t np = 0;          // pairs of the previous frame (0: none)
    bool two_sets = false;    // find_pairs_with: {a, b} is not {b, a}
    bool generations = false; // store forms
    bool renewed = false;     // no pair persists (the store was initialised again)
    uint32_t begins = 0;      // set by lookup_frame
};

/// Lays the state and its arrays out in a block (base null: measures). Returns the bytes.
uint64_t lay_out_tracker(const PairTrackerConfig& config, unsigned char* base, PairTrackerState** out);

inline uint64_t pair_key(uint32_t id_bits, uint32_t a, uint32_t b, bool sensor) {
    return (uint64_t{a} << (id_bits + 1)) | (uint64_t{b} << 1) | (sensor ? 1u : 0u);
}

inline uint32_t lower_id(uint32_t id_bits, uint64_t key) {
    return static_cast<uint32_t>((key & ~kBeginFlag) >> (id_bits + 1));
}

/// Position of `key` among the previous frame's entries of lower id a, or kNoEntry.
inline uint64_t find_previous(const PairTrackerState& s, uint32_t a, uint64_t key) {
    const uint64_t* k = s.key[s.prev];
    uint32_t lo = s.row[s.prev][a];
    const uint32_t hi = s.row[s.prev][a + 1];
    if (hi - lo > 16) // a large object's row
        lo = static_cast<uint32_t>(std::lower_bound(k + lo, k + hi, key) - k);
    for (; lo < hi && k[lo] <= key; ++lo)
        if (k[lo] == key) return lo;
    return kNoEntry;
}

/// invalid_argument for a frame with a pair given twice: index = the lowest
/// position whose key an earlier position has, count = how many such positions
/// (sorts every key: only on this error).
Status duplicate_status(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f);

/// Step 1: every pair of the frame read, checked, packed and looked up in the
/// previous list (see the top of this file). Marks found entries; flags the
/// rest as begins (f.begins counts them).
template <typename Read>
Status lookup_frame(PairTrackerState& s, const ThreadBackend& b, FrameInput& f, Read&& read) {
    const uint32_t w = s.id_bits;
    parallel_chunks(b, f.np, kPairGrain,
                    [&](uint32_t begin, uint32_t end, uint32_t) { std::fill(s.mark + begin, s.mark + end, 0); });
    parallel_chunks(b, f.n, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t begins = 0, first_bad = kNoEntry, bad = 0;
        for (uint32_t i = begin; i < end; ++i) {
            PairEnds e = read(i);
            if (e.a >= s.max_ids || e.b >= s.max_ids || (!f.two_sets && e.a == e.b)) [[unlikely]] {
                first_bad = std::min<uint64_t>(first_bad, i);
                ++bad;
                continue;
            }
            if (!f.two_sets && e.a > e.b) {
                std::swap(e.a, e.b);
                std::swap(e.a_generation, e.b_generation);
            }
            const uint64_t key = pair_key(w, e.a, e.b, e.sensor);
            const uint64_t g = (uint64_t{e.a_generation} << 32) | e.b_generation;
            bool found = false;
            if (f.np > 0) {
                const uint64_t at = find_previous(s, e.a, key);
                if (at != kNoEntry && !f.renewed && (!f.generations || s.gen[s.prev][at] == g)) {
                    found = true;
                    // A plain store (no read-modify-write): a pair given twice marks one entry twice,
                    // which finish_frame sees as fewer marked entries than pairs found.
                    std::atomic_ref<uint8_t>(s.mark[at]).store(1, std::memory_order_relaxed);
                }
            }
            s.in_key[i] = found ? key : key | kBeginFlag;
            if (f.generations) s.in_gen[i] = g;
            begins += found ? 0 : 1;
        }
        uint64_t* c = s.chunk + uint64_t{begin / kPairGrain} * kLookupSlots;
        c[0] = begins;
        c[1] = first_bad;
        c[2] = bad;
    });
    uint64_t first_bad = kNoEntry, bad = 0, begins = 0;
    for (uint32_t c = 0, chunks = chunk_count(f.n, kPairGrain); c < chunks; ++c) {
        const uint64_t* k = s.chunk + uint64_t{c} * kLookupSlots;
        begins += k[0];
        first_bad = std::min(first_bad, k[1]);
        bad += k[2];
    }
    if (bad > 0)
        return item_status(StatusCode::invalid_argument,
                           "a pair names an id >= PairTrackerConfig::max_ids (or an index past the store's objects), "
                           "or a == b; index = lowest such position",
                           static_cast<uint32_t>(first_bad), static_cast<uint32_t>(std::min<uint64_t>(bad, ~0u)));
    f.begins = static_cast<uint32_t>(begins);
    return {};
}

/// Steps 2 to 4 after a successful lookup_frame, then the commit.
Status finish_frame(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, PairSource source,
                    const ObjectStore* store);

} // namespace hashgrid::detail

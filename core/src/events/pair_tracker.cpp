// SPDX-License-Identifier: MIT
// Overlap events (pair_tracker.h). Each pair of a frame becomes one packed key
// (sensor bit, lower id, higher id) whose ascending order is the event order;
// the stable parallel radix sort of the grids' rebuilds orders the keys, and a
// merge with the previous frame's sorted keys counts, then writes, every event
// list. The merge runs in chunks bounded by keys sampled every kMergeGrain
// entries of both lists, so chunks depend on the two lists only (never on the
// thread count) and a frame where everything ends or everything begins is as
// parallel as any other. The sorted keys (with the handles' generations, for
// the store forms) stay as the next frame's reference.
#include "common/block_layout.h"
#include "common/chunks.h"
#include "common/status_make.h"
#include "lattice/radix_sort.h"

#include "hashgrid/assert.h"
#include "hashgrid/pair_tracker.h"

#include <algorithm>
#include <bit>
#include <new>

namespace hashgrid {
namespace detail {

/// Which update form gave a frame: a frame is compared only with one of the same form (and store).
enum class PairSource : uint32_t { none, index, index_with, store, store_with };

struct PairTrackerState {
    uint32_t id_bits = 1;            // bits of one id in a key
    uint64_t* key[3] = {};           // the previous frame's sorted keys, and the sort's two buffers
    uint64_t* gen_in = nullptr;      // generations (a << 32 | b) in input order (store forms)
    uint64_t* gen[2] = {};           // generations in key order: the previous frame's, and this one's
    uint32_t* payload[2] = {};       // input positions, carried by the sort
    uint32_t* hist = nullptr;        // radix counts: key chunks << kDigitBits
    uint64_t* key_chunk = nullptr;   // per key chunk: lowest bad position, bad count (then sort scratch)
    uint64_t* splitter = nullptr;    // merge chunk bounds: keys sampled from both lists
    uint64_t* merge_count = nullptr; // per merge chunk: kSlots counters, then offsets
    ObjectHandlePair* begin = nullptr;
    ObjectHandlePair* end = nullptr;
    ObjectHandlePair* persist = nullptr; // null without list_persist
    ObjectHandlePair* current = nullptr;

    // The previous frame.
    uint32_t prev_key = 0; // index into key[]
    uint32_t prev_gen = 0; // index into gen[]
    uint32_t prev_count = 0;
    PairSource prev_source = PairSource::none;
    const ObjectStore* prev_store = nullptr;
    uint64_t prev_store_init = 0;

    PairEvents events{};
    uint64_t frames = 0;
};

namespace {

constexpr uint32_t kKeyGrain = 16384;   // pairs per chunk: key building and the radix sort
constexpr uint32_t kMergeGrain = 16384; // entries of each list between two merge splitters
constexpr uint32_t kDigitBits = 11;     // radix digits: 8 KB of counts per chunk
constexpr uint64_t kNoBad = ~uint64_t{0};

// Counters of a merge chunk. Begin, persist and end, for contacts then sensors:
// kind + 3 * sensor. Then the chunk's lowest duplicate position and duplicate count.
enum Slot : uint32_t { kBegin = 0, kPersist = 1, kEnd = 2, kKinds = 6, kBadFirst = 6, kBadCount = 7, kSlots = 8 };

uint32_t key_chunks(uint32_t max_pairs) { return chunk_count(max_pairs, kKeyGrain); }
// Splitters: one every kMergeGrain entries of each list; chunks = splitters + 1.
uint32_t max_splitters(uint32_t max_pairs) { return 2 * chunk_count(max_pairs, kMergeGrain); }

uint64_t lay_out(const PairTrackerConfig& c, unsigned char* base, PairTrackerState** out) {
    Layout l(base);
    PairTrackerState* s = l.take<PairTrackerState>(1);
    const uint64_t p = c.max_pairs;
    PairTrackerState a;
    for (auto& k : a.key)
        k = l.take<uint64_t>(p);
    a.gen_in = l.take<uint64_t>(p);
    for (auto& g : a.gen)
        g = l.take<uint64_t>(p);
    for (auto& q : a.payload)
        q = l.take<uint32_t>(p);
    a.hist = l.take<uint32_t>(uint64_t{key_chunks(c.max_pairs)} << kDigitBits);
    a.key_chunk = l.take<uint64_t>(2 * uint64_t{key_chunks(c.max_pairs)});
    a.splitter = l.take<uint64_t>(max_splitters(c.max_pairs));
    a.merge_count = l.take<uint64_t>((uint64_t{max_splitters(c.max_pairs)} + 1) * kSlots);
    a.begin = l.take<ObjectHandlePair>(p);
    a.end = l.take<ObjectHandlePair>(p);
    a.persist = c.list_persist ? l.take<ObjectHandlePair>(p) : nullptr;
    a.current = l.take<ObjectHandlePair>(p);
    a.id_bits = c.max_ids <= 1 ? 1 : static_cast<uint32_t>(std::bit_width(c.max_ids - 1));
    if (s != nullptr) s = new (s) PairTrackerState(a); // the block holds no object yet
    if (out != nullptr) *out = s;
    return l.bytes();
}

/// One pair of a frame as read from the input: ids, generations, sensor flag.
/// a == kNoIndex marks a pair that cannot be read (an index out of range).
struct PairEnds {
    uint32_t a = kNoIndex;
    uint32_t b = kNoIndex;
    uint32_t a_generation = 0;
    uint32_t b_generation = 0;
    bool sensor = false;
};

/// Ids and generations of a packed key and its generations.
ObjectHandlePair decode(const PairTrackerState& s, uint64_t key, uint64_t generations) {
    const uint64_t mask = (uint64_t{1} << s.id_bits) - 1;
    return ObjectHandlePair{
        ObjectHandle{static_cast<uint32_t>((key >> s.id_bits) & mask), static_cast<uint32_t>(generations >> 32)},
        ObjectHandle{static_cast<uint32_t>(key & mask), static_cast<uint32_t>(generations)}};
}

bool is_sensor(const PairTrackerState& s, uint64_t key) { return ((key >> (2 * s.id_bits)) & 1) != 0; }

/// Walks the merge of cur[i, i_end) and prev[j, j_end): visit(slot, from_cur,
/// position) once per event; a key in both lists persists when its
/// generations agree (always, without generations) and is otherwise an end
/// and a begin. `renewed`: no previous pair persists (the store was initialised again).
template <typename Visit>
void merge_walk(const PairTrackerState& s, const uint64_t* cur, const uint64_t* cur_gen, uint32_t i, uint32_t i_end,
                const uint64_t* prev, const uint64_t* prev_gen, uint32_t j, uint32_t j_end, bool renewed,
                Visit&& visit) {
    auto kind = [&](Slot slot, uint64_t key) { return static_cast<Slot>(slot + (is_sensor(s, key) ? 3 : 0)); };
    while (i < i_end && j < j_end) {
        if (cur[i] < prev[j]) {
            visit(kind(kBegin, cur[i]), true, i);
            ++i;
        } else if (prev[j] < cur[i]) {
            visit(kind(kEnd, prev[j]), false, j);
            ++j;
        } else {
            const bool same = !renewed && (cur_gen == nullptr || cur_gen[i] == prev_gen[j]);
            if (same) {
                visit(kind(kPersist, cur[i]), true, i);
            } else {
                visit(kind(kBegin, cur[i]), true, i);
                visit(kind(kEnd, prev[j]), false, j);
            }
            ++i;
            ++j;
        }
    }
    for (; i < i_end; ++i)
        visit(kind(kBegin, cur[i]), true, i);
    for (; j < j_end; ++j)
        visit(kind(kEnd, prev[j]), false, j);
}

Status not_initialized() {
    HASHGRID_ASSERT(false, "PairTracker used before init");
    return make_status(StatusCode::invalid_argument, "PairTracker used before a successful init");
}

/// The checks every form makes on the search result and the pairs buffer.
Status check_result(const PairResult& result, const Pair* pairs, uint32_t max_pairs) {
    if (result.status.code != StatusCode::ok)
        return make_status(StatusCode::invalid_argument,
                           "the pair search did not succeed (status not ok): events need every pair of the frame");
    if (pairs == nullptr && result.written > 0)
        return make_status(StatusCode::invalid_argument, "null pairs with pairs to read");
    if (result.written > max_pairs)
        return capacity_status(StatusCode::pair_capacity, "more pairs than PairTrackerConfig::max_pairs",
                               result.written);
    return {};
}

} // namespace

/// This frame's sorted keys (step 2 onwards).
struct SortedFrame {
    uint32_t n = 0;                     // pairs of this frame
    uint32_t key_index = 0;             // which key[] buffer holds them
    const uint64_t* key = nullptr;      // ascending
    const uint32_t* position = nullptr; // input position of each key
    const uint64_t* gen = nullptr;      // generations in key order; null for the index forms
    const uint64_t* prev = nullptr;     // the previous frame's keys
    const uint64_t* prev_gen = nullptr;
    uint32_t np = 0;        // the previous frame's pair count (0: none)
    bool renewed = false;   // no pair persists (the store was initialised again)
    uint32_t splitters = 0; // merge chunks = splitters + 1
};

/// Step 1: keys in input order (key[prev + 1]); unreadable, out-of-range and
/// self pairs are counted per chunk and refused.
template <typename Read>
Status build_keys(PairTrackerState& s, const PairTrackerConfig& config, const ThreadBackend& b, uint32_t n,
                  bool two_sets, bool generations, Read&& read) {
    const uint32_t w = s.id_bits;
    uint64_t* const in_key = s.key[(s.prev_key + 1) % 3];
    parallel_chunks(b, n, kKeyGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t first_bad = kNoBad;
        uint64_t bad = 0;
        for (uint32_t i = begin; i < end; ++i) {
            PairEnds e = read(i);
            if (e.a >= config.max_ids || e.b >= config.max_ids || (!two_sets && e.a == e.b)) [[unlikely]] {
                first_bad = std::min<uint64_t>(first_bad, i);
                ++bad;
                continue;
            }
            if (!two_sets && e.a > e.b) {
                std::swap(e.a, e.b);
                std::swap(e.a_generation, e.b_generation);
            }
            in_key[i] = (uint64_t{e.sensor} << (2 * w)) | (uint64_t{e.a} << w) | e.b;
            s.payload[0][i] = i;
            if (generations) s.gen_in[i] = (uint64_t{e.a_generation} << 32) | e.b_generation;
        }
        s.key_chunk[2 * (begin / kKeyGrain)] = first_bad;
        s.key_chunk[2 * (begin / kKeyGrain) + 1] = bad;
    });
    uint64_t first_bad = kNoBad;
    uint64_t bad = 0;
    for (uint32_t c = 0, chunks = chunk_count(n, kKeyGrain); c < chunks; ++c) {
        first_bad = std::min(first_bad, s.key_chunk[2 * c]);
        bad += s.key_chunk[2 * c + 1];
    }
    if (bad == 0) return {};
    return item_status(StatusCode::invalid_argument,
                       "a pair names an id >= PairTrackerConfig::max_ids (or an index past the store's objects), "
                       "or a == b; index = lowest such position",
                       static_cast<uint32_t>(first_bad), static_cast<uint32_t>(std::min<uint64_t>(bad, ~0u)));
}

/// Step 2: stable radix sort of the keys over the digits that differ, the
/// generations gathered into key order, and the merge chunks' splitters:
/// keys sampled every kMergeGrain entries of both sorted lists.
SortedFrame sort_keys(PairTrackerState& s, const ThreadBackend& b, uint32_t n, bool generations) {
    SortedFrame f;
    f.n = n;
    const uint32_t q = (s.prev_key + 1) % 3;
    const uint32_t r = (s.prev_key + 2) % 3;
    uint64_t* const sort_key[2] = {s.key[q], s.key[r]};
    const uint64_t varying = varying_bits(b, s.key[q], n, kKeyGrain, s.key_chunk);
    const uint32_t bits = static_cast<uint32_t>(std::bit_width(varying));
    const uint32_t passes = (bits + kDigitBits - 1) / kDigitBits;
    const uint32_t digit_bits = passes == 0 ? 1 : (bits + passes - 1) / passes;
    const uint32_t src = radix_sort<uint64_t>(b, sort_key, s.payload, n, varying, digit_bits, s.hist, kKeyGrain);
    f.key_index = src == 0 ? q : r;
    f.key = s.key[f.key_index];
    f.position = s.payload[src];
    if (generations) {
        uint64_t* const gen = s.gen[1 - s.prev_gen];
        parallel_chunks(b, n, kKeyGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t i = begin; i < end; ++i)
                gen[i] = s.gen_in[f.position[i]];
        });
        f.gen = gen;
        f.prev_gen = s.gen[s.prev_gen];
    }
    f.prev = s.key[s.prev_key];
    f.np = s.prev_source == PairSource::none ? 0 : s.prev_count;
    for (uint64_t i = kMergeGrain, j = kMergeGrain; i < n || j < f.np;) {
        if (j >= f.np || (i < n && f.key[i] <= f.prev[j])) {
            s.splitter[f.splitters++] = f.key[i];
            i += kMergeGrain;
        } else {
            s.splitter[f.splitters++] = f.prev[j];
            j += kMergeGrain;
        }
    }
    return f;
}

/// The entries of both lists in merge chunk c: keys in [splitter[c - 1], splitter[c]).
struct MergeChunk {
    uint32_t i0, i1, j0, j1;
};

MergeChunk merge_chunk(const PairTrackerState& s, const SortedFrame& f, uint32_t c) {
    auto at = [&](const uint64_t* keys, uint32_t count, uint32_t splitter) {
        return static_cast<uint32_t>(std::lower_bound(keys, keys + count, s.splitter[splitter]) - keys);
    };
    return MergeChunk{c == 0 ? 0 : at(f.key, f.n, c - 1), c == f.splitters ? f.n : at(f.key, f.n, c),
                      c == 0 ? 0 : at(f.prev, f.np, c - 1), c == f.splitters ? f.np : at(f.prev, f.np, c)};
}

/// Step 3: every list counted per merge chunk, then turned into offsets;
/// totals[kind] are the list sizes. A key given twice is a duplicate pair.
Status count_events(PairTrackerState& s, const SortedFrame& f, const ThreadBackend& b, uint64_t (&totals)[kKinds]) {
    const uint32_t chunks = f.splitters + 1;
    parallel_chunks(b, chunks, 1, [&](uint32_t c, uint32_t, uint32_t) {
        const MergeChunk m = merge_chunk(s, f, c);
        uint64_t* count = s.merge_count + uint64_t{c} * kSlots;
        std::fill(count, count + kSlots, 0);
        count[kBadFirst] = kNoBad;
        for (uint32_t i = std::max(m.i0, 1u); i < m.i1; ++i)
            if (f.key[i] == f.key[i - 1]) [[unlikely]] {
                count[kBadFirst] = std::min<uint64_t>(count[kBadFirst], std::max(f.position[i], f.position[i - 1]));
                ++count[kBadCount];
            }
        merge_walk(s, f.key, f.gen, m.i0, m.i1, f.prev, f.prev_gen, m.j0, m.j1, f.renewed,
                   [&](Slot slot, bool, uint32_t) { ++count[slot]; });
    });
    uint64_t first_bad = kNoBad;
    uint64_t bad = 0;
    for (uint32_t c = 0; c < chunks; ++c) {
        first_bad = std::min(first_bad, s.merge_count[uint64_t{c} * kSlots + kBadFirst]);
        bad += s.merge_count[uint64_t{c} * kSlots + kBadCount];
    }
    if (bad > 0)
        return item_status(StatusCode::invalid_argument,
                           "a pair is given twice ({a, b} and {b, a} are one pair); index = lowest later copy",
                           static_cast<uint32_t>(first_bad), static_cast<uint32_t>(std::min<uint64_t>(bad, ~0u)));
    for (uint32_t kind = 0; kind < kKinds; ++kind) {
        totals[kind] = 0;
        for (uint32_t c = 0; c < chunks; ++c) {
            uint64_t& v = s.merge_count[uint64_t{c} * kSlots + kind];
            const uint64_t add = v;
            v = totals[kind];
            totals[kind] += add;
        }
    }
    return {};
}

/// Step 4: every list written; each holds its contact events, then its sensor events.
void write_events(PairTrackerState& s, const SortedFrame& f, const ThreadBackend& b, const uint64_t (&totals)[kKinds]) {
    const uint64_t sensor_base[3] = {totals[kBegin], totals[kPersist], totals[kEnd]};
    ObjectHandlePair* const list[3] = {s.begin, s.persist, s.end};
    parallel_chunks(b, f.splitters + 1, 1, [&](uint32_t c, uint32_t, uint32_t) {
        const MergeChunk m = merge_chunk(s, f, c);
        uint64_t* at = s.merge_count + uint64_t{c} * kSlots;
        for (uint32_t i = m.i0; i < m.i1; ++i)
            s.current[i] = decode(s, f.key[i], f.gen != nullptr ? f.gen[i] : 0);
        merge_walk(s, f.key, f.gen, m.i0, m.i1, f.prev, f.prev_gen, m.j0, m.j1, f.renewed,
                   [&](Slot slot, bool from_cur, uint32_t k) {
                       const uint32_t kind = slot % 3;
                       const uint64_t pos = at[slot]++ + (slot >= 3 ? sensor_base[kind] : 0);
                       if (list[kind] == nullptr) return; // persist, counted only
                       list[kind][pos] =
                           from_cur ? s.current[k] : decode(s, f.prev[k], f.prev_gen != nullptr ? f.prev_gen[k] : 0);
                   });
    });
}

/// Step 5: this frame becomes the reference, and its events are published.
void commit(PairTrackerState& s, const SortedFrame& f, PairSource source, const ObjectStore* store,
            const uint64_t (&totals)[kKinds]) {
    s.prev_key = f.key_index;
    if (f.gen != nullptr) s.prev_gen = 1 - s.prev_gen;
    s.prev_count = f.n;
    s.prev_source = source;
    s.prev_store = store;
    s.prev_store_init = store != nullptr ? store->init_layout() : 0;
    ++s.frames;
    const uint64_t contacts = totals[kBegin] + totals[kPersist];
    auto listed = [](const ObjectHandlePair* p, uint64_t count) {
        return PairEventList{count > 0 ? p : nullptr, count};
    };
    PairEvents& e = s.events;
    e.begin = listed(s.begin, totals[kBegin]);
    e.sensor_begin = listed(s.begin + totals[kBegin], totals[kBegin + 3]);
    e.persist = listed(s.persist, totals[kPersist]);
    e.sensor_persist = listed(s.persist != nullptr ? s.persist + totals[kPersist] : nullptr, totals[kPersist + 3]);
    e.end = listed(s.end, totals[kEnd]);
    e.sensor_end = listed(s.end + totals[kEnd], totals[kEnd + 3]);
    e.contacts = listed(s.current, contacts);
    e.sensors = listed(s.current + contacts, f.n - contacts);
    e.frame = s.frames;
}

/// One update: keys from `read`, sort, merge with the previous frame, commit.
/// Nothing the next update reads changes before the commit.
template <typename Read>
Status track_frame(PairTrackerState& s, const PairTrackerConfig& config, const ThreadBackend& b, uint32_t n,
                   bool two_sets, bool generations, PairSource source, const ObjectStore* store, Read&& read) {
    s.events = PairEvents{};
    if (s.prev_source != PairSource::none && (s.prev_source != source || s.prev_store != store))
        return make_status(StatusCode::invalid_argument,
                           "the previous frame came from another update form or store: reset() first");
    if (const Status st = build_keys(s, config, b, n, two_sets, generations, read); !st.ok()) return st;
    SortedFrame f = sort_keys(s, b, n, generations);
    f.renewed = store != nullptr && s.prev_source != PairSource::none && s.prev_store_init != store->init_layout();
    uint64_t totals[kKinds];
    if (const Status st = count_events(s, f, b, totals); !st.ok()) return st;
    write_events(s, f, b, totals);
    commit(s, f, source, store, totals);
    return {};
}

} // namespace detail

using detail::PairEnds;
using detail::PairSource;

PairTracker::~PairTracker() { aligned_free_bytes(owned_memory_); }

Status PairTracker::validate(const PairTrackerConfig& c) {
    if (c.max_ids == 0 || c.max_ids >= (1u << 31))
        return detail::make_status(StatusCode::invalid_config, "PairTrackerConfig::max_ids must be in [1, 2^31)");
    if (c.max_pairs == 0)
        return detail::make_status(StatusCode::invalid_config, "PairTrackerConfig::max_pairs must be at least 1");
    return {};
}

MemoryRequirements PairTracker::memory_requirements(const PairTrackerConfig& config) {
    return detail::block_requirements(validate(config), [&] { return detail::lay_out(config, nullptr, nullptr); });
}

Status PairTracker::init(const PairTrackerConfig& config, void* memory, size_t bytes) {
    return detail::init_on_block(memory_requirements(config), memory, bytes, owned_memory_, [&](unsigned char* base) {
        detail::lay_out(config, base, &state_);
        config_ = config;
    });
}

Status PairTracker::init_allocate(const PairTrackerConfig& config) {
    return detail::init_allocate_block(memory_requirements(config), owned_memory_,
                                       [&](void* block, size_t bytes) { return init(config, block, bytes); });
}

PairEvents PairTracker::events() const { return state_ != nullptr ? state_->events : PairEvents{}; }

void PairTracker::reset() {
    if (state_ == nullptr) return;
    state_->prev_source = PairSource::none;
    state_->prev_store = nullptr;
    state_->prev_count = 0;
    state_->events = PairEvents{};
}

Status PairTracker::update(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                           const uint32_t* categories) {
    if (state_ == nullptr) return detail::not_initialized();
    if (result.layout != 0) {
        state_->events = PairEvents{};
        return detail::make_status(StatusCode::invalid_argument,
                                   "pairs of a frame rebuilt from an ObjectStore name dense indices, which move: use "
                                   "update(store, frame, result, pairs, backend)");
    }
    if (const Status s = detail::check_result(result, pairs, config_.max_pairs); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    const uint32_t sensors = categories != nullptr ? config_.sensor_layers : 0;
    return detail::track_frame(*state_, config_, backend, static_cast<uint32_t>(result.written), false, false,
                               PairSource::index, nullptr, [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   PairEnds e;
                                   e.a = p.a;
                                   e.b = p.b;
                                   if (sensors != 0 && p.a < config_.max_ids && p.b < config_.max_ids)
                                       e.sensor = ((categories[p.a] | categories[p.b]) & sensors) != 0;
                                   return e;
                               });
}

Status PairTracker::update_with(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                                const uint32_t* categories) {
    if (state_ == nullptr) return detail::not_initialized();
    if (result.layout != 0) {
        state_->events = PairEvents{};
        return detail::make_status(StatusCode::invalid_argument,
                                   "pairs of a frame rebuilt from an ObjectStore name dense indices, which move: use "
                                   "update_with(store, frame, result, pairs, backend)");
    }
    if (const Status s = detail::check_result(result, pairs, config_.max_pairs); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    const uint32_t sensors = categories != nullptr ? config_.sensor_layers : 0;
    return detail::track_frame(*state_, config_, backend, static_cast<uint32_t>(result.written), true, false,
                               PairSource::index_with, nullptr, [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   PairEnds e;
                                   e.a = p.a;
                                   e.b = p.b;
                                   if (sensors != 0 && p.b < config_.max_ids)
                                       e.sensor = (categories[p.b] & sensors) != 0;
                                   return e;
                               });
}

namespace {

/// The store forms' checks before the pairs are read.
Status check_store(const ObjectStore& store, const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                   const PairTrackerConfig& config) {
    // handles_at() with nothing to map runs exactly the checks of a result against the store and the frame.
    if (const Status s = store.handles_at(frame, result, pairs, 0, 0, nullptr); !s.ok()) return s;
    if (const Status s = detail::check_result(result, pairs, config.max_pairs); !s.ok()) return s;
    if (store.config().max_objects > config.max_ids)
        return detail::make_status(StatusCode::invalid_argument,
                                   "PairTrackerConfig::max_ids is below the store's max_objects (ids are slots)");
    return {};
}

} // namespace

Status PairTracker::update(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                           const Pair* pairs, const ThreadBackend& backend) {
    if (state_ == nullptr) return detail::not_initialized();
    if (const Status s = check_store(store, frame, result, pairs, config_); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    const uint32_t size = store.size();
    const uint32_t* const category = store.categories();
    const uint32_t sensors = config_.sensor_layers;
    return detail::track_frame(*state_, config_, backend, static_cast<uint32_t>(result.written), false, true,
                               PairSource::store, &store, [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   PairEnds e;
                                   if (p.a >= size || p.b >= size) return e; // unreadable
                                   const ObjectHandle ha = store.handle_at(p.a);
                                   const ObjectHandle hb = store.handle_at(p.b);
                                   e.a = ha.index;
                                   e.a_generation = ha.generation;
                                   e.b = hb.index;
                                   e.b_generation = hb.generation;
                                   e.sensor = ((category[p.a] | category[p.b]) & sensors) != 0;
                                   return e;
                               });
}

Status PairTracker::update_with(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                                const Pair* pairs, const ThreadBackend& backend) {
    if (state_ == nullptr) return detail::not_initialized();
    if (const Status s = check_store(store, frame, result, pairs, config_); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    const uint32_t size = store.size();
    const uint32_t* const category = store.categories();
    const uint32_t sensors = config_.sensor_layers;
    return detail::track_frame(*state_, config_, backend, static_cast<uint32_t>(result.written), true, true,
                               PairSource::store_with, &store, [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   PairEnds e;
                                   if (p.b >= size) return e; // unreadable
                                   const ObjectHandle hb = store.handle_at(p.b);
                                   e.a = p.a;
                                   e.b = hb.index;
                                   e.b_generation = hb.generation;
                                   e.sensor = (category[p.b] & sensors) != 0;
                                   return e;
                               });
}

} // namespace hashgrid

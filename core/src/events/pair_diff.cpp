// SPDX-License-Identifier: MIT
// Steps 2 to 4 of a PairTracker update, and its block (pair_diff.h).
#include "events/pair_diff.h"

#include "common/block_layout.h"
#include "lattice/radix_sort.h"

#include <bit>
#include <new>

namespace hashgrid::detail {
namespace {

// Counters of a merge chunk: begin, persist and end, for contacts (slot) and
// sensors (slot + 3); then the duplicate begins seen.
enum Slot : uint32_t { kBegin = 0, kPersist = 1, kEnd = 2, kKinds = 6, kDuplicates = 6 };

uint32_t pair_chunks(uint32_t pairs) { return chunk_count(pairs, kPairGrain); }
// Splitters: one every kPairMergeGrain entries of each list; chunks = splitters + 1.
uint32_t max_splitters(uint32_t pairs) { return 2 * chunk_count(pairs, kPairMergeGrain); }

bool is_sensor(uint64_t key) { return (key & 1) != 0; }

ObjectHandlePair decode(uint32_t id_bits, uint64_t key, uint64_t generations) {
    const uint64_t mask = (uint64_t{1} << id_bits) - 1;
    return ObjectHandlePair{
        ObjectHandle{static_cast<uint32_t>(key >> (id_bits + 1)), static_cast<uint32_t>(generations >> 32)},
        ObjectHandle{static_cast<uint32_t>((key >> 1) & mask), static_cast<uint32_t>(generations)}};
}

/// Stable radix sort of begin_key[0][0, n) (with begin_pos) over the digits that differ; returns the buffer.
uint32_t sort_begin_buffer(PairTrackerState& s, const ThreadBackend& b, uint32_t n) {
    const uint64_t varying = varying_bits(b, s.begin_key[0], n, kPairGrain, s.chunk);
    const uint32_t bits = static_cast<uint32_t>(std::bit_width(varying));
    const uint32_t passes = (bits + kPairDigitBits - 1) / kPairDigitBits;
    const uint32_t digit_bits = passes == 0 ? 1 : (bits + passes - 1) / passes;
    return radix_sort<uint64_t>(b, s.begin_key, s.begin_pos, n, varying, digit_bits, s.hist, kPairGrain);
}

/// Step 2: the begins, compacted in input order (offsets from the lookup's
/// per-chunk counts), then sorted by key. Returns which buffer holds them.
uint32_t sort_begins(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f) {
    uint64_t at = 0;
    for (uint32_t c = 0, chunks = pair_chunks(f.n); c < chunks; ++c) {
        uint64_t& v = s.chunk[uint64_t{c} * kLookupSlots];
        const uint64_t add = v;
        v = at;
        at += add;
    }
    parallel_chunks(b, f.n, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t o = s.chunk[uint64_t{begin / kPairGrain} * kLookupSlots];
        for (uint32_t i = begin; i < end; ++i)
            if ((s.in_key[i] & kBeginFlag) != 0) {
                s.begin_key[0][o] = s.in_key[i] & ~kBeginFlag;
                s.begin_pos[0][o] = i;
                ++o;
            }
    });
    return sort_begin_buffer(s, b, f.begins);
}

/// The lists step 3 merges: the sorted begins and the previous frame's entries.
struct MergeLists {
    const uint64_t* begin = nullptr; // sorted begin keys
    const uint32_t* begin_pos = nullptr;
    uint32_t nb = 0;
    const uint64_t* prev = nullptr;
    uint32_t np = 0;
    uint32_t splitters = 0; // merge chunks = splitters + 1
};

/// The entries of both lists in merge chunk c: keys in [splitter[c - 1], splitter[c]).
struct MergeChunk {
    uint32_t i0, i1, j0, j1;
};

MergeChunk merge_chunk(const PairTrackerState& s, const MergeLists& m, uint32_t c) {
    auto at = [&](const uint64_t* keys, uint32_t count, uint32_t splitter) {
        return static_cast<uint32_t>(std::lower_bound(keys, keys + count, s.splitter[splitter]) - keys);
    };
    return MergeChunk{c == 0 ? 0 : at(m.begin, m.nb, c - 1), c == m.splitters ? m.nb : at(m.begin, m.nb, c),
                      c == 0 ? 0 : at(m.prev, m.np, c - 1), c == m.splitters ? m.np : at(m.prev, m.np, c)};
}

/// Walks the merge of begins [i0, i1) and previous entries [j0, j1):
/// visit(slot, from_begin, position) once per entry, in key order; a previous
/// entry equal to a begin (its generations differed) comes first.
template <typename Visit>
void merge_walk(const PairTrackerState& s, const MergeLists& m, const MergeChunk& c, Visit&& visit) {
    auto prev_slot = [&](uint32_t j) {
        return static_cast<Slot>((s.mark[j] != 0 ? kPersist : kEnd) + (is_sensor(m.prev[j]) ? 3 : 0));
    };
    auto begin_slot = [&](uint32_t i) { return static_cast<Slot>(kBegin + (is_sensor(m.begin[i]) ? 3 : 0)); };
    uint32_t i = c.i0, j = c.j0;
    while (i < c.i1 && j < c.j1) {
        if (m.prev[j] <= m.begin[i]) {
            visit(prev_slot(j), false, j);
            ++j;
        } else {
            visit(begin_slot(i), true, i);
            ++i;
        }
    }
    for (; j < c.j1; ++j)
        visit(prev_slot(j), false, j);
    for (; i < c.i1; ++i)
        visit(begin_slot(i), true, i);
}

/// Step 3a: the merge chunks (splitters sampled from both lists), each
/// list counted per chunk and turned into offsets (totals: list sizes).
/// False when two begins share a key (a pair given twice).
bool count_merge(PairTrackerState& s, const ThreadBackend& b, MergeLists& m, uint64_t (&totals)[kKinds]) {
    for (uint64_t i = kPairMergeGrain, j = kPairMergeGrain; i < m.nb || j < m.np;) {
        if (j >= m.np || (i < m.nb && m.begin[i] <= m.prev[j])) {
            s.splitter[m.splitters++] = m.begin[i];
            i += kPairMergeGrain;
        } else {
            s.splitter[m.splitters++] = m.prev[j];
            j += kPairMergeGrain;
        }
    }
    const uint32_t chunks = m.splitters + 1;
    parallel_chunks(b, chunks, 1, [&](uint32_t c, uint32_t, uint32_t) {
        const MergeChunk mc = merge_chunk(s, m, c);
        uint64_t* count = s.chunk + uint64_t{c} * kMergeSlots;
        std::fill(count, count + kMergeSlots, 0);
        for (uint32_t i = std::max(mc.i0, 1u); i < mc.i1; ++i)
            count[kDuplicates] += m.begin[i] == m.begin[i - 1] ? 1 : 0;
        merge_walk(s, m, mc, [&](Slot slot, bool, uint32_t) { ++count[slot]; });
    });
    uint64_t duplicates = 0;
    for (uint32_t kind = 0; kind < kKinds; ++kind)
        totals[kind] = 0;
    for (uint32_t c = 0; c < chunks; ++c) {
        uint64_t* count = s.chunk + uint64_t{c} * kMergeSlots;
        duplicates += count[kDuplicates];
        for (uint32_t kind = 0; kind < kKinds; ++kind) {
            const uint64_t add = count[kind];
            count[kind] = totals[kind];
            totals[kind] += add;
        }
    }
    return duplicates == 0;
}

/// Step 3b: the next list (key order) and every event list; each event list
/// and the current pairs hold the contacts, then the sensors.
void write_merge(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, const MergeLists& m,
                 const uint64_t (&totals)[kKinds]) {
    const uint32_t next = 1 - s.prev;
    const uint32_t w = s.id_bits;
    const uint64_t contacts = totals[kBegin] + totals[kPersist];
    ObjectHandlePair* const list[3] = {s.begin, s.persist, s.end};
    parallel_chunks(b, m.splitters + 1, 1, [&](uint32_t c, uint32_t, uint32_t) {
        const MergeChunk mc = merge_chunk(s, m, c);
        uint64_t at[kKinds];
        std::copy(s.chunk + uint64_t{c} * kMergeSlots, s.chunk + uint64_t{c} * kMergeSlots + kKinds, at);
        uint64_t out = at[kBegin] + at[kPersist] + at[kBegin + 3] + at[kPersist + 3];
        uint64_t current[2] = {at[kBegin] + at[kPersist], contacts + at[kBegin + 3] + at[kPersist + 3]};
        merge_walk(s, m, mc, [&](Slot slot, bool from_begin, uint32_t k) {
            const uint32_t kind = slot % 3;
            const uint64_t pos = at[slot]++ + (slot >= 3 ? totals[kind] : 0);
            const uint64_t key = from_begin ? m.begin[k] : m.prev[k];
            uint64_t g = 0;
            if (f.generations) g = from_begin ? s.in_gen[m.begin_pos[k]] : s.gen[s.prev][k];
            const ObjectHandlePair pair = decode(w, key, g);
            if (list[kind] != nullptr) list[kind][pos] = pair;
            if (kind == kEnd) return;
            s.key[next][out] = key;
            if (f.generations) s.gen[next][out] = g;
            ++out;
            if (s.current != nullptr) s.current[current[slot >= 3 ? 1 : 0]++] = pair;
        });
    });
}

/// Step 4: the next list's row index: row[a] = first entry with lower id >= a.
void build_rows(PairTrackerState& s, const ThreadBackend& b, uint32_t nn) {
    const uint32_t next = 1 - s.prev;
    const uint64_t* key = s.key[next];
    uint32_t* row = s.row[next];
    const uint32_t w = s.id_bits;
    parallel_chunks(b, nn, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t k = begin; k < end; ++k) {
            const uint32_t a = lower_id(w, key[k]);
            for (uint32_t r = k == 0 ? 0 : lower_id(w, key[k - 1]) + 1; r <= a; ++r)
                row[r] = k;
        }
    });
    const uint32_t tail = nn == 0 ? 0 : lower_id(w, key[nn - 1]) + 1;
    fill_u32(b, row + tail, s.max_ids + 1 - tail, nn);
}

} // namespace

uint64_t lay_out_tracker(const PairTrackerConfig& c, unsigned char* base, PairTrackerState** out) {
    Layout l(base);
    PairTrackerState* s = l.take<PairTrackerState>(1);
    const uint64_t p = c.max_pairs;
    PairTrackerState a;
    a.max_ids = c.max_ids;
    a.id_bits = c.max_ids <= 1 ? 1 : static_cast<uint32_t>(std::bit_width(c.max_ids - 1));
    for (uint32_t k = 0; k < 2; ++k) {
        a.key[k] = l.take<uint64_t>(p);
        a.gen[k] = l.take<uint64_t>(p);
        a.row[k] = l.take<uint32_t>(uint64_t{c.max_ids} + 1);
        a.begin_key[k] = l.take<uint64_t>(p);
        a.begin_pos[k] = l.take<uint32_t>(p);
    }
    a.mark = l.take<uint8_t>(p);
    a.in_key = l.take<uint64_t>(p);
    a.in_gen = l.take<uint64_t>(p);
    a.hist = l.take<uint32_t>(uint64_t{pair_chunks(c.max_pairs)} << kPairDigitBits);
    a.chunk = l.take<uint64_t>(std::max<uint64_t>(uint64_t{pair_chunks(c.max_pairs)} * kLookupSlots,
                                                  (uint64_t{max_splitters(c.max_pairs)} + 1) * kMergeSlots));
    a.splitter = l.take<uint64_t>(max_splitters(c.max_pairs));
    a.begin = l.take<ObjectHandlePair>(p);
    a.end = l.take<ObjectHandlePair>(p);
    if (c.list_pairs) {
        a.persist = l.take<ObjectHandlePair>(p);
        a.current = l.take<ObjectHandlePair>(p);
    }
    if (s != nullptr) s = new (s) PairTrackerState(a); // the block holds no object yet
    if (out != nullptr) *out = s;
    return l.bytes();
}

Status duplicate_status(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f) {
    parallel_chunks(b, f.n, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            s.begin_key[0][i] = s.in_key[i] & ~kBeginFlag;
            s.begin_pos[0][i] = i;
        }
    });
    const uint32_t src = sort_begin_buffer(s, b, f.n);
    const uint64_t* key = s.begin_key[src];
    const uint32_t* pos = s.begin_pos[src];
    uint64_t first = kNoEntry, count = 0;
    for (uint32_t k = 1; k < f.n; ++k) // stable: a group's later copies follow its first
        if (key[k] == key[k - 1]) {
            first = std::min<uint64_t>(first, pos[k]);
            ++count;
        }
    return item_status(StatusCode::invalid_argument,
                       "a pair is given twice ({a, b} and {b, a} are one pair); index = lowest later copy",
                       static_cast<uint32_t>(first), static_cast<uint32_t>(std::min<uint64_t>(count, ~0u)));
}

Status finish_frame(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, PairSource source,
                    const ObjectStore* store) {
    const uint32_t src = sort_begins(s, b, f);
    MergeLists m;
    m.begin = s.begin_key[src];
    m.begin_pos = s.begin_pos[src];
    m.nb = f.begins;
    m.prev = s.key[s.prev];
    m.np = f.np;
    uint64_t totals[kKinds];
    // Every pair found in the previous list marked its own entry, unless a pair was given twice.
    if (!count_merge(s, b, m, totals) || totals[kPersist] + totals[kPersist + 3] != uint64_t{f.n} - f.begins)
        return duplicate_status(s, b, f);
    write_merge(s, b, f, m, totals);
    const uint64_t contacts = totals[kBegin] + totals[kPersist];
    const auto nn = static_cast<uint32_t>(contacts + totals[kBegin + 3] + totals[kPersist + 3]);
    build_rows(s, b, nn);

    // Commit: the next list becomes the previous one, and the events are published.
    s.prev = 1 - s.prev;
    s.prev_count = nn;
    s.prev_source = source;
    s.prev_store = store;
    s.prev_store_init = store != nullptr ? store->init_layout() : 0;
    ++s.frames;
    auto listed = [](const ObjectHandlePair* p, uint64_t offset, uint64_t count) {
        return PairEventList{p != nullptr && count > 0 ? p + offset : nullptr, count};
    };
    PairEvents& e = s.events;
    e.begin = listed(s.begin, 0, totals[kBegin]);
    e.sensor_begin = listed(s.begin, totals[kBegin], totals[kBegin + 3]);
    e.persist = listed(s.persist, 0, totals[kPersist]);
    e.sensor_persist = listed(s.persist, totals[kPersist], totals[kPersist + 3]);
    e.end = listed(s.end, 0, totals[kEnd]);
    e.sensor_end = listed(s.end, totals[kEnd], totals[kEnd + 3]);
    e.contacts = listed(s.current, 0, contacts);
    e.sensors = listed(s.current, contacts, nn - contacts);
    e.frame = s.frames;
    return {};
}

} // namespace hashgrid::detail

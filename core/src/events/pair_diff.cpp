// SPDX-License-Identifier: MIT
// Steps 1 and 3 to 5 of a PairTracker update, and its block (pair_diff.h).
#include "events/pair_diff.h"

#include "common/block_layout.h"
#include "lattice/radix_sort.h"
#include "objects/objects_internal.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <new>

namespace hashgrid::detail {
namespace {

constexpr uint32_t kBitGrain = 4096; // 32-bit words of a bit table per chunk

// Counters of a residual merge chunk: begin and end, contacts then sensors;
// persist (moved in the list), duplicates.
enum MergeSlot : uint32_t { kBeginC, kBeginS, kEndC, kEndS, kMoved, kDuplicates, kMergeSlots };

uint32_t pair_chunks(uint32_t pairs) { return std::max(1u, chunk_count(pairs, kPairGrain)); }
uint32_t max_splitters(uint32_t pairs) { return 2 * chunk_count(pairs, kPairMergeGrain); }
uint32_t bit_words(uint32_t ids) { return ids / 32 + 1; }

bool is_sensor(uint64_t key) { return (key & 1) != 0; }

/// The ids of a packed key.
struct KeyIds {
    uint32_t a, b;
};
KeyIds key_ids(uint32_t w, uint64_t key) {
    return KeyIds{static_cast<uint32_t>(key >> (w + 1)), static_cast<uint32_t>((key >> 1) & ((uint64_t{1} << w) - 1))};
}

/// One side of a frame as the residual steps see it.
struct Side {
    const uint64_t* key = nullptr;        // walk keys in input order
    const uint32_t* dense_slot = nullptr; // store forms
    const uint32_t* slot_gen = nullptr;
};

/// A pair's identity: its handles (store forms) or its ids, as an
/// identity key (lower slot first, sensor bit last) and generations.
struct Identity {
    uint64_t key = 0;
    ObjectHandlePair handles{};
};

Identity identity(uint32_t w, const FrameInput& f, const Side& side, uint64_t key) {
    const KeyIds ids = key_ids(w, key);
    Identity out;
    ObjectHandle a{ids.a, 0}, b{ids.b, 0};
    if (f.store != nullptr) {
        if (!f.two_sets) {
            a.index = side.dense_slot[ids.a];
            a.generation = side.slot_gen[a.index];
        }
        b.index = side.dense_slot[ids.b];
        b.generation = side.slot_gen[b.index];
        if (!f.two_sets && a.index > b.index) std::swap(a, b);
    }
    out.key = (uint64_t{a.index} << (w + 1)) | (uint64_t{b.index} << 1) | (key & 1);
    out.handles = ObjectHandlePair{a, b};
    return out;
}

/// Stable radix sort of keys[0][0, n) with positions over the digits that differ; returns the buffer.
uint32_t sort_keys(PairTrackerState& s, const ThreadBackend& b, uint64_t* const keys[2], uint32_t* const pos[2],
                   uint32_t n) {
    const uint64_t varying = varying_bits(b, keys[0], n, kPairGrain, s.chunk);
    const uint32_t bits = static_cast<uint32_t>(std::bit_width(varying));
    const uint32_t passes = (bits + kPairDigitBits - 1) / kPairDigitBits;
    const uint32_t digit_bits = passes == 0 ? 1 : (bits + passes - 1) / passes;
    return radix_sort<uint64_t>(b, keys, pos, n, varying, digit_bits, s.hist, kPairGrain);
}

// ---------------------------------------------------------------------------
// Step 3: the walk.

/// Where each walk chunk starts in the previous list: near the proportional
/// position, where one of its first keys is found (see pair_diff.h).
void place_anchors(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, uint32_t chunks) {
    const uint64_t* cur = s.key[1 - s.prev];
    const uint64_t* prev = s.key[s.prev];
    s.anchor[0] = 0;
    s.anchor[chunks] = f.np;
    parallel_chunks(b, chunks, 1, [&](uint32_t k, uint32_t, uint32_t) {
        if (k == 0) return;
        const uint32_t start = k * kPairGrain;
        const auto expected = static_cast<uint32_t>(uint64_t{start} * f.np / f.n);
        const uint32_t lo = expected > kAnchorReach ? expected - kAnchorReach : 0;
        const uint32_t hi = std::min(f.np, expected + kAnchorReach);
        uint32_t at = expected;
        for (uint32_t t = 0; t < kAnchorTries && start + t < f.n; ++t) {
            const uint64_t* found = std::find(prev + lo, prev + hi, cur[start + t]);
            if (found != prev + hi) {
                const auto q = static_cast<uint32_t>(found - prev);
                at = q >= t ? q - t : 0;
                break;
            }
        }
        s.anchor[k] = at;
    });
    for (uint32_t k = 1; k < chunks; ++k)
        s.anchor[k] = std::clamp(s.anchor[k], s.anchor[k - 1], f.np);
}

/// Walks chunk k: matched pairs persist; the rest are written as residuals
/// into the chunk's own part of residual_pos[side][0]. Counts them, and this
/// frame's sensor pairs, in chunk[3k ...].
void walk_chunk(PairTrackerState& s, const FrameInput& f, uint32_t k) {
    const uint32_t w = s.id_bits;
    const uint64_t* cur = s.key[1 - s.prev];
    const uint64_t* prev = s.key[s.prev];
    uint32_t i = k * kPairGrain;
    const uint32_t i_end = std::min(f.n, i + kPairGrain);
    uint32_t j = s.anchor[k];
    const uint32_t j_end = s.anchor[k + 1];
    uint32_t* const rc = s.residual_pos[0][0] + k * kPairGrain;
    uint32_t* const rp = s.residual_pos[1][0] + j;
    uint32_t nc = 0, np = 0;
    const bool tracks_objects = f.store != nullptr;
    const bool two_sets = f.two_sets;
    const uint32_t* const changed = s.changed;
    auto unchanged = [&](uint64_t key) {
        if (!tracks_objects) return true;
        const KeyIds ids = key_ids(w, key);
        return !test_bit(changed, ids.b) && (two_sets || !test_bit(changed, ids.a));
    };
    if (f.renewed) j = j_end; // nothing persists: everything is a residual
    while (i < i_end && j < j_end) {
        if (cur[i] == prev[j]) {
            if (!unchanged(cur[i])) {
                rc[nc++] = i;
                rp[np++] = j;
            }
            ++i;
            ++j;
            continue;
        }
        uint32_t d = 1;
        while (d <= kLookAhead && (j + d >= j_end || prev[j + d] != cur[i]) &&
               (i + d >= i_end || cur[i + d] != prev[j]))
            ++d;
        if (d <= kLookAhead && j + d < j_end && prev[j + d] == cur[i]) {
            for (uint32_t e = 0; e < d; ++e)
                rp[np++] = j + e;
            j += d;
        } else if (d <= kLookAhead) {
            for (uint32_t e = 0; e < d; ++e)
                rc[nc++] = i + e;
            i += d;
        } else {
            rc[nc++] = i++;
            rp[np++] = j++;
        }
    }
    for (; i < i_end; ++i)
        rc[nc++] = i;
    for (j = f.renewed ? s.anchor[k] : j; j < j_end; ++j)
        rp[np++] = j;
    s.chunk[2 * uint64_t{k}] = nc;
    s.chunk[2 * uint64_t{k} + 1] = np;
}

/// The residuals of both sides compacted (in input order) with their
/// identity keys, then sorted. Returns the buffers holding them; counts in
/// nc / np.
struct Residuals {
    uint32_t nc = 0, np = 0;
    const uint64_t* key[2] = {}; // sorted identity keys: [0] this frame, [1] previous
    const uint32_t* pos[2] = {}; // their input positions
};

Residuals gather_residuals(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, uint32_t chunks) {
    Residuals r;
    for (uint32_t k = 0; k < chunks; ++k) {
        uint64_t* c = s.chunk + 2 * uint64_t{k};
        const uint64_t nc = c[0], np = c[1];
        c[0] = r.nc;
        c[1] = r.np;
        r.nc += static_cast<uint32_t>(nc);
        r.np += static_cast<uint32_t>(np);
    }
    const uint32_t w = s.id_bits;
    const Side side[2] = {{s.key[1 - s.prev], s.dense_slot[1 - s.prev], s.slot_gen[1 - s.prev]},
                          {s.key[s.prev], s.dense_slot[s.prev], s.slot_gen[s.prev]}};
    const uint32_t counts[2] = {r.nc, r.np};
    parallel_chunks(b, chunks, 1, [&](uint32_t k, uint32_t, uint32_t) {
        const uint64_t* c = s.chunk + 2 * uint64_t{k};
        const uint32_t next_c = k + 1 < chunks ? static_cast<uint32_t>(s.chunk[2 * uint64_t{k + 1}]) : r.nc;
        const uint32_t next_p = k + 1 < chunks ? static_cast<uint32_t>(s.chunk[2 * uint64_t{k + 1} + 1]) : r.np;
        const uint32_t from[2] = {k * kPairGrain, s.anchor[k]};
        const uint32_t at[2] = {static_cast<uint32_t>(c[0]), static_cast<uint32_t>(c[1])};
        const uint32_t n[2] = {next_c - at[0], next_p - at[1]};
        for (uint32_t sd = 0; sd < 2; ++sd)
            for (uint32_t e = 0; e < n[sd]; ++e) {
                const uint32_t p = s.residual_pos[sd][0][from[sd] + e];
                s.residual_pos[sd][1][at[sd] + e] = p;
                s.residual_key[sd][1][at[sd] + e] = identity(w, f, side[sd], side[sd].key[p]).key;
            }
    });
    for (uint32_t sd = 0; sd < 2; ++sd) {
        uint64_t* const keys[2] = {s.residual_key[sd][1], s.residual_key[sd][0]};
        uint32_t* const pos[2] = {s.residual_pos[sd][1], s.residual_pos[sd][0]};
        const uint32_t src = sort_keys(s, b, keys, pos, counts[sd]);
        r.key[sd] = keys[src];
        r.pos[sd] = pos[src];
    }
    return r;
}

// ---------------------------------------------------------------------------
// Step 4: the residual merge.

struct MergeChunk {
    uint32_t i0, i1, j0, j1;
};

MergeChunk merge_chunk(const PairTrackerState& s, const Residuals& r, uint32_t splitters, uint32_t c) {
    auto at = [&](const uint64_t* keys, uint32_t count, uint32_t splitter) {
        return static_cast<uint32_t>(std::lower_bound(keys, keys + count, s.splitter[splitter]) - keys);
    };
    return MergeChunk{c == 0 ? 0 : at(r.key[0], r.nc, c - 1), c == splitters ? r.nc : at(r.key[0], r.nc, c),
                      c == 0 ? 0 : at(r.key[1], r.np, c - 1), c == splitters ? r.np : at(r.key[1], r.np, c)};
}

/// The handles of residual k of a side (0: this frame, 1: the previous one):
/// the index forms' are in its identity key; the store forms' generations
/// are looked up.
ObjectHandlePair residual_handles(const PairTrackerState& s, const FrameInput& f, const Residuals& r, uint32_t sd,
                                  uint32_t k) {
    const uint32_t w = s.id_bits;
    const uint32_t frame = sd == 0 ? 1 - s.prev : s.prev;
    const KeyIds ids = key_ids(w, r.key[sd][k]);
    if (f.store == nullptr) return ObjectHandlePair{ObjectHandle{ids.a, 0}, ObjectHandle{ids.b, 0}};
    const uint32_t* gen = s.slot_gen[frame];
    return ObjectHandlePair{ObjectHandle{ids.a, f.two_sets ? 0 : gen[ids.a]}, ObjectHandle{ids.b, gen[ids.b]}};
}

/// Counts, places and writes the begin and end lists (contacts, then sensors).
/// Returns false when two residuals of this frame share an identity.
bool merge_residuals(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, const Residuals& r,
                     uint64_t (&totals)[kMergeSlots]) {
    uint32_t splitters = 0;
    for (uint64_t i = kPairMergeGrain, j = kPairMergeGrain; i < r.nc || j < r.np;) {
        if (j >= r.np || (i < r.nc && r.key[0][i] <= r.key[1][j])) {
            s.splitter[splitters++] = r.key[0][i];
            i += kPairMergeGrain;
        } else {
            s.splitter[splitters++] = r.key[1][j];
            j += kPairMergeGrain;
        }
    }
    const uint32_t chunks = splitters + 1;
    // Handles are compared only where identities are equal; they are computed on the spot.
    auto walk = [&](uint32_t c, auto&& visit) {
        const MergeChunk m = merge_chunk(s, r, splitters, c);
        uint32_t i = m.i0, j = m.j0;
        auto begin_slot = [&](uint32_t x) { return is_sensor(r.key[0][x]) ? kBeginS : kBeginC; };
        auto end_slot = [&](uint32_t x) { return is_sensor(r.key[1][x]) ? kEndS : kEndC; };
        while (i < m.i1 && j < m.j1) {
            if (r.key[1][j] < r.key[0][i]) {
                visit(end_slot(j), 1u, j);
                ++j;
            } else if (r.key[0][i] < r.key[1][j]) {
                visit(begin_slot(i), 0u, i);
                ++i;
            } else {
                const ObjectHandlePair hc = residual_handles(s, f, r, 0, i);
                const ObjectHandlePair hp = residual_handles(s, f, r, 1, j);
                if (!f.renewed && hc.a == hp.a && hc.b == hp.b) {
                    visit(kMoved, 0u, i);
                } else {
                    visit(end_slot(j), 1u, j);
                    visit(begin_slot(i), 0u, i);
                }
                ++i;
                ++j;
            }
        }
        for (; j < m.j1; ++j)
            visit(end_slot(j), 1u, j);
        for (; i < m.i1; ++i)
            visit(begin_slot(i), 0u, i);
        return m;
    };
    parallel_chunks(b, chunks, 1, [&](uint32_t c, uint32_t, uint32_t) {
        uint64_t* count = s.chunk + uint64_t{c} * kMergeSlots;
        std::fill(count, count + kMergeSlots, 0);
        const MergeChunk m = walk(c, [&](MergeSlot slot, uint32_t, uint32_t) { ++count[slot]; });
        for (uint32_t i = std::max(m.i0, 1u); i < m.i1; ++i)
            count[kDuplicates] += r.key[0][i] == r.key[0][i - 1] ? 1 : 0;
    });
    std::fill(totals, totals + kMergeSlots, 0);
    for (uint32_t c = 0; c < chunks; ++c) {
        uint64_t* count = s.chunk + uint64_t{c} * kMergeSlots;
        for (uint32_t slot = 0; slot < kMergeSlots; ++slot) {
            const uint64_t add = count[slot];
            count[slot] = totals[slot];
            totals[slot] += add;
        }
    }
    if (totals[kDuplicates] != 0) return false;
    parallel_chunks(b, chunks, 1, [&](uint32_t c, uint32_t, uint32_t) {
        uint64_t* at = s.chunk + uint64_t{c} * kMergeSlots;
        walk(c, [&](MergeSlot slot, uint32_t sd, uint32_t k) {
            if (slot == kMoved) return;
            const ObjectHandlePair h = residual_handles(s, f, r, sd, k);
            if (slot == kBeginC || slot == kBeginS) {
                s.begin[at[slot]++ + (slot == kBeginS ? totals[kBeginC] : 0)] = h;
                if (s.is_begin != nullptr) s.is_begin[r.pos[0][k]] = 1;
            } else {
                s.end[at[slot]++ + (slot == kEndS ? totals[kEndC] : 0)] = h;
            }
        });
    });
    return true;
}

// ---------------------------------------------------------------------------
// Step 5: the frame's lists in input order (list_pairs).

void write_lists(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, uint64_t contacts,
                 uint64_t persist_contacts) {
    const uint32_t cur = 1 - s.prev;
    const Side side{s.key[cur], s.dense_slot[cur], s.slot_gen[cur]};
    // Per chunk: sensor pairs, persisting sensor pairs, persisting pairs; then the same before the chunk.
    parallel_chunks(b, f.n, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t* c = s.chunk + 3 * uint64_t{begin / kPairGrain};
        c[0] = c[1] = c[2] = 0;
        for (uint32_t i = begin; i < end; ++i) {
            const bool sensor = is_sensor(side.key[i]);
            const bool persists = s.is_begin[i] == 0;
            c[0] += sensor ? 1 : 0;
            c[1] += sensor && persists ? 1 : 0;
            c[2] += persists ? 1 : 0;
        }
    });
    uint64_t before[3] = {};
    for (uint32_t k = 0, chunks = chunk_count(f.n, kPairGrain); k < chunks; ++k)
        for (uint32_t x = 0; x < 3; ++x) {
            uint64_t& v = s.chunk[3 * uint64_t{k} + x];
            const uint64_t add = v;
            v = before[x];
            before[x] += add;
        }
    parallel_chunks(b, f.n, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const uint64_t* c = s.chunk + 3 * uint64_t{begin / kPairGrain};
        uint64_t cur_c = begin - c[0], cur_s = contacts + c[0];
        uint64_t per_c = c[2] - c[1], per_s = persist_contacts + c[1];
        for (uint32_t i = begin; i < end; ++i) {
            const ObjectHandlePair h = identity(s.id_bits, f, side, side.key[i]).handles;
            const bool sensor = is_sensor(side.key[i]);
            s.current[sensor ? cur_s++ : cur_c++] = h;
            if (s.is_begin[i] == 0) s.persist[sensor ? per_s++ : per_c++] = h;
        }
    });
}

#if defined(HASHGRID_ENABLE_ASSERTS) && HASHGRID_ENABLE_ASSERTS
/// Builds that check assertions: no walk key twice (sorts every key).
Status check_distinct(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f) {
    const uint64_t* key = s.key[1 - s.prev];
    std::copy(key, key + f.n, s.residual_key[0][1]);
    for (uint32_t i = 0; i < f.n; ++i)
        s.residual_pos[0][1][i] = i;
    uint64_t* const keys[2] = {s.residual_key[0][1], s.residual_key[0][0]};
    uint32_t* const pos[2] = {s.residual_pos[0][1], s.residual_pos[0][0]};
    const uint32_t src = sort_keys(s, b, keys, pos, f.n);
    uint64_t first = kNoEntry, count = 0;
    for (uint32_t k = 1; k < f.n; ++k) // stable: a group's later copies follow its first
        if (keys[src][k] == keys[src][k - 1]) {
            first = std::min<uint64_t>(first, pos[src][k]);
            ++count;
        }
    if (count == 0) return {};
    HASHGRID_ASSERT(false, "PairTracker::update: a pair is given twice");
    return item_status(StatusCode::invalid_argument,
                       "a pair is given twice ({a, b} and {b, a} are one pair); index = lowest later copy",
                       static_cast<uint32_t>(first), static_cast<uint32_t>(std::min<uint64_t>(count, ~0u)));
}
#endif

} // namespace

uint64_t lay_out_tracker(const PairTrackerConfig& c, unsigned char* base, PairTrackerState** out) {
    Layout l(base);
    PairTrackerState* s = l.take<PairTrackerState>(1);
    const uint64_t p = c.max_pairs;
    PairTrackerState a;
    a.max_ids = c.max_ids;
    a.list_pairs = c.list_pairs ? 1 : 0;
    a.id_bits = c.max_ids <= 1 ? 1 : static_cast<uint32_t>(std::bit_width(c.max_ids - 1));
    for (uint32_t k = 0; k < 2; ++k) {
        a.key[k] = l.take<uint64_t>(p);
        a.dense_slot[k] = l.take<uint32_t>(c.max_ids);
        a.slot_gen[k] = l.take<uint32_t>(c.max_ids);
        for (uint32_t sd = 0; sd < 2; ++sd) {
            a.residual_pos[sd][k] = l.take<uint32_t>(p);
            a.residual_key[sd][k] = l.take<uint64_t>(p);
        }
    }
    a.changed = l.take<uint32_t>(bit_words(c.max_ids));
    a.sensor = l.take<uint32_t>(bit_words(c.max_ids));
    a.anchor = l.take<uint32_t>(uint64_t{pair_chunks(c.max_pairs)} + 1);
    a.hist = l.take<uint32_t>(uint64_t{pair_chunks(c.max_pairs)} << kPairDigitBits);
    a.chunk = l.take<uint64_t>(std::max<uint64_t>(uint64_t{pair_chunks(c.max_pairs)} * 3,
                                                  (uint64_t{max_splitters(c.max_pairs)} + 1) * kMergeSlots));
    a.splitter = l.take<uint64_t>(max_splitters(c.max_pairs));
    a.begin = l.take<ObjectHandlePair>(p);
    a.end = l.take<ObjectHandlePair>(p);
    if (c.list_pairs) {
        a.is_begin = l.take<uint8_t>(p);
        a.persist = l.take<ObjectHandlePair>(p);
        a.current = l.take<ObjectHandlePair>(p);
    }
    if (s != nullptr) s = new (s) PairTrackerState(a); // the block holds no object yet
    if (out != nullptr) *out = s;
    return l.bytes();
}

void move_tracker(const PairTrackerState& from, PairTrackerState& to) {
    const uint32_t p = from.prev;
    to.prev = 0;
    for (uint32_t k = 0; k < from.prev_count; ++k) {
        const uint64_t key = from.key[p][k];
        const KeyIds ids = key_ids(from.id_bits, key);
        to.key[0][k] = (uint64_t{ids.a} << (to.id_bits + 1)) | (uint64_t{ids.b} << 1) | (key & 1);
    }
    std::copy(from.dense_slot[p], from.dense_slot[p] + from.max_ids, to.dense_slot[0]);
    std::copy(from.slot_gen[p], from.slot_gen[p] + from.max_ids, to.slot_gen[0]);
    to.prev_count = from.prev_count;
    to.prev_objects = from.prev_objects;
    to.prev_source = from.prev_source;
    to.prev_store = from.prev_store;
    to.prev_store_init = from.prev_store_init;
    to.frames = from.frames;
    // The last events: each list is its contacts, then its sensors, from the start of its array.
    const PairEvents& e = from.events;
    auto copy = [](const PairEventList& contacts, const PairEventList& sensors, const ObjectHandlePair* src,
                   ObjectHandlePair* dst, PairEventList& to_contacts, PairEventList& to_sensors) {
        const bool listed = src != nullptr && dst != nullptr;
        if (listed) std::copy(src, src + contacts.count + sensors.count, dst);
        to_contacts = PairEventList{listed && contacts.count > 0 ? dst : nullptr, contacts.count};
        to_sensors = PairEventList{listed && sensors.count > 0 ? dst + contacts.count : nullptr, sensors.count};
    };
    PairEvents& t = to.events;
    copy(e.begin, e.sensor_begin, from.begin, to.begin, t.begin, t.sensor_begin);
    copy(e.end, e.sensor_end, from.end, to.end, t.end, t.sensor_end);
    copy(e.persist, e.sensor_persist, from.persist, to.persist, t.persist, t.sensor_persist);
    copy(e.contacts, e.sensors, from.current, to.current, t.contacts, t.sensors);
    t.frame = e.frame;
}

void build_tables(PairTrackerState& s, const PairTrackerConfig& config, const ThreadBackend& b, const FrameInput& f) {
    const uint32_t words = bit_words(s.max_ids);
    const uint32_t cur = 1 - s.prev;
    if (f.store == nullptr) {
        parallel_chunks(b, words, kBitGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t wd = begin; wd < end; ++wd) {
                uint32_t bits = 0;
                for (uint32_t bit = 0, id = wd * 32; bit < 32 && id < s.max_ids && f.categories != nullptr; ++bit, ++id)
                    bits |= (f.categories[id] & config.sensor_layers) != 0 ? 1u << bit : 0u;
                s.sensor[wd] = bits;
                s.changed[wd] = 0;
            }
        });
        return;
    }
    const ObjectStore& store = *f.store;
    const uint32_t count = store.size();
    const uint32_t slots = store.config().max_objects;
    const uint32_t* dense_slot = store.dense_slots();
    const uint32_t* category = store.categories();
    const uint32_t* slot_dense = ObjectStoreSlots::dense(store);
    std::memcpy(s.slot_gen[cur], ObjectStoreSlots::generations(store), sizeof(uint32_t) * slots);
    const bool has_prev = s.prev_source != PairSource::none;
    parallel_chunks(b, words, kBitGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t wd = begin; wd < end; ++wd) {
            uint32_t sensor = 0, changed = 0;
            for (uint32_t bit = 0, d = wd * 32; bit < 32 && d < count; ++bit, ++d) {
                s.dense_slot[cur][d] = dense_slot[d];
                sensor |= (category[d] & config.sensor_layers) != 0 ? 1u << bit : 0u;
                const bool other = !has_prev || d >= s.prev_objects || dense_slot[d] != s.dense_slot[s.prev][d];
                changed |= other ? 1u << bit : 0u;
            }
            s.sensor[wd] = sensor;
            s.changed[wd] = changed;
        }
    });
    if (!has_prev) return;
    // A slot whose generation moved holds another object now, wherever it sits.
    parallel_chunks(b, slots, kPairGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t slot = begin; slot < end; ++slot)
            if (s.slot_gen[cur][slot] != s.slot_gen[s.prev][slot] && slot_dense[slot] < count)
                std::atomic_ref<uint32_t>(s.changed[slot_dense[slot] >> 5])
                    .fetch_or(1u << (slot_dense[slot] & 31), std::memory_order_relaxed);
    });
}

Status finish_frame(PairTrackerState& s, const ThreadBackend& b, const FrameInput& f, PairSource source) {
#if defined(HASHGRID_ENABLE_ASSERTS) && HASHGRID_ENABLE_ASSERTS
    if (const Status st = check_distinct(s, b, f); !st.ok()) return st;
#endif
    const uint32_t chunks = pair_chunks(f.n);
    place_anchors(s, b, f, chunks);
    parallel_chunks(b, chunks, 1, [&](uint32_t k, uint32_t, uint32_t) { walk_chunk(s, f, k); });
    const Residuals r = gather_residuals(s, b, f, chunks);
    if (s.is_begin != nullptr) std::fill(s.is_begin, s.is_begin + f.n, 0);
    uint64_t totals[kMergeSlots];
    if (!merge_residuals(s, b, f, r, totals))
        return make_status(StatusCode::invalid_argument, "a pair is given twice ({a, b} and {b, a} are one pair)");
    const uint64_t contacts = f.n - f.sensors;
    const uint64_t begins = totals[kBeginC] + totals[kBeginS];
    const uint64_t persist_contacts = contacts - totals[kBeginC];
    if (s.list_pairs != 0) write_lists(s, b, f, contacts, persist_contacts);

    // Commit: this frame becomes the previous one, and the events are published.
    s.prev = 1 - s.prev;
    s.prev_count = f.n;
    s.prev_objects = f.store != nullptr ? f.store->size() : 0;
    s.prev_source = source;
    s.prev_store = f.store;
    s.prev_store_init = f.store != nullptr ? f.store->init_layout() : 0;
    ++s.frames;
    auto listed = [](const ObjectHandlePair* p, uint64_t offset, uint64_t count) {
        return PairEventList{p != nullptr && count > 0 ? p + offset : nullptr, count};
    };
    PairEvents& e = s.events;
    e.begin = listed(s.begin, 0, totals[kBeginC]);
    e.sensor_begin = listed(s.begin, totals[kBeginC], totals[kBeginS]);
    e.end = listed(s.end, 0, totals[kEndC]);
    e.sensor_end = listed(s.end, totals[kEndC], totals[kEndS]);
    e.persist = listed(s.persist, 0, persist_contacts);
    e.sensor_persist = listed(s.persist, persist_contacts, f.n - begins - persist_contacts);
    e.contacts = listed(s.current, 0, contacts);
    e.sensors = listed(s.current, contacts, f.n - contacts);
    e.frame = s.frames;
    return {};
}

} // namespace hashgrid::detail

// The per-frame rebuild: keys, cell table, counting sort.
//
// 1. Key pass (parallel over fixed chunks of particles): validate and compute
//    integer cell coordinates (cell_key.h). Bounded: the dense linear index.
//    Unbounded: a packed 64-bit key per particle.
// 2. Unbounded only: insert the keys into the open-addressing table with
//    priority-ordered linear probing (Shun & Blelloch, "Phase-concurrent hash
//    tables for determinism", SPAA 2014): the layout depends only on the key
//    set, never on timing. The distinct keys are compacted in slot order and
//    radix-sorted, giving cells in lexicographic (z, y, x) order; each
//    particle then looks up its cell index.
// 3. Two-level counting sort without atomics: cells are grouped into buckets
//    of consecutive cells. Each chunk counts its particles per bucket; a scan
//    in (bucket, chunk) order gives every chunk its own output range per
//    bucket, so the scatter into buckets is stable (ascending index within a
//    bucket) and carries the positions along. Each bucket is then
//    counting-sorted by cell on its own, in cache, writing cell starts, the
//    permutation and the sorted SoA copy. Within a cell, particles keep
//    ascending original index: the result is the same for any thread count.
#include "grid_impl.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hashgrid {

using namespace detail;

namespace detail {

uint64_t exclusive_scan(const ThreadBackend& b, const uint32_t* counts, uint32_t n, uint32_t* starts, uint32_t* cursors,
                        uint64_t* chunk_sums) {
    const uint32_t chunks = chunk_count(n, kCellGrain);
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t sum = 0;
        for (uint32_t i = begin; i < end; ++i)
            sum += counts[i];
        chunk_sums[begin / kCellGrain] = sum;
    });
    uint64_t total = 0;
    for (uint32_t c = 0; c < chunks; ++c) {
        const uint64_t v = chunk_sums[c];
        chunk_sums[c] = total;
        total += v;
    }
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        auto running = static_cast<uint32_t>(chunk_sums[begin / kCellGrain]);
        for (uint32_t i = begin; i < end; ++i) {
            const uint32_t v = counts[i];
            starts[i] = running;
            if (cursors != nullptr) cursors[i] = running;
            running += v;
        }
    });
    starts[n] = static_cast<uint32_t>(total);
    return total;
}

void fill_u32(const ThreadBackend& b, uint32_t* a, uint32_t n, uint32_t value) {
    parallel_chunks(b, n, kCellGrain * 4, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            a[i] = value;
    });
}

void sort_distinct(uint32_t* a, uint32_t n) {
    if (n > 32) {
        // Values are distinct, so any correct sort gives the same result.
        std::sort(a, a + n);
        return;
    }
    for (uint32_t i = 1; i < n; ++i) {
        const uint32_t v = a[i];
        uint32_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = v;
    }
}

} // namespace detail

namespace {

struct KeyParams {
    const float* coord[3];
    const float* radius;
    float origin[3];
    double scale;
    double upper[3]; // bounded: cell counts; unbounded: limit + 1
    double lower;    // bounded: 0; unbounded: -limit
    uint32_t counts[3];
    float cell_size;
    bool clamp;
};

/// Validates particle i and computes its integer cell coordinates, naming the
/// first problem. The slow path, run only on chunks that failed cell_fast.
template <uint32_t D, bool Bounded>
StatusCode cell_checked(const KeyParams& k, uint32_t i, int32_t* cell) {
    for (uint32_t d = 0; d < D; ++d) {
        const float v = k.coord[d][i];
        if (!std::isfinite(v)) return StatusCode::invalid_position;
        double t = scaled_coordinate(v, k.origin[d], k.scale);
        if (!(t >= k.lower && t < k.upper[d])) {
            if (!Bounded || !k.clamp) return StatusCode::position_out_of_range;
            t = t < k.lower ? k.lower : k.upper[d] - 1.0;
        }
        cell[d] = floor_to_int(t);
    }
    if (k.radius != nullptr) {
        const float r = k.radius[i];
        if (!(r > 0.0f) || !std::isfinite(r)) return StatusCode::invalid_radius;
        if (!(r * 2.0f <= k.cell_size)) return StatusCode::radius_too_large;
    }
    return StatusCode::ok;
}

/// Branch-free cell coordinates; returns false if anything about the particle
/// is invalid (then cell holds harmless values and the chunk is re-checked).
template <uint32_t D, bool Bounded, bool Clamp, bool Radius>
inline bool cell_fast(const KeyParams& k, uint32_t i, int32_t* cell) {
    bool ok = true;
    for (uint32_t d = 0; d < D; ++d) {
        const float v = k.coord[d][i];
        double t = scaled_coordinate(v, k.origin[d], k.scale);
        if constexpr (Bounded && Clamp) {
            ok &= (v - v == 0.0f); // finite
            t = t < k.lower ? k.lower : t;
            t = t >= k.upper[d] ? k.upper[d] - 1.0 : t;
            t = v - v == 0.0f ? t : 0.0;
        } else {
            const bool inside = (t >= k.lower) & (t < k.upper[d]); // false for NaN and inf too
            ok &= inside;
            t = inside ? t : 0.0;
        }
        cell[d] = floor_to_int(t);
    }
    if constexpr (Radius) {
        const float r = k.radius[i];
        ok &= (r > 0.0f) & (r * 2.0f <= k.cell_size);
    }
    return ok;
}

/// Per-chunk bucket histogram. Runs of one bucket (input in last frame's
/// sorted order) are counted in a register: incrementing the same memory
/// counter back to back would serialise on store forwarding.
void count_buckets(const uint32_t* particle_cell, uint32_t begin, uint32_t end, uint32_t shift, uint32_t* h,
                   uint32_t buckets) {
    std::memset(h, 0, buckets * sizeof(uint32_t));
    if (begin == end) return;
    uint32_t current = particle_cell[begin] >> shift;
    uint32_t run = 0;
    for (uint32_t i = begin; i < end; ++i) {
        const uint32_t bucket = particle_cell[i] >> shift;
        if (bucket != current) {
            h[current] += run;
            current = bucket;
            run = 0;
        }
        ++run;
    }
    h[current] += run;
}

/// Key pass: particle_cell (bounded, plus per-chunk bucket counts) or
/// particle_key (unbounded) for every particle; per-chunk validation records.
template <uint32_t D, bool Bounded, bool Clamp, bool Radius>
void key_pass(const KeyParams& k, uint32_t n, uint32_t grain, const ThreadBackend& b, uint32_t* particle_cell,
              uint64_t* particle_key, uint32_t* hist, uint32_t buckets, uint32_t shift, BadParticle* bad) {
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const uint32_t chunk = begin / grain;
        bool ok = true;
        for (uint32_t i = begin; i < end; ++i) {
            int32_t c[3] = {0, 0, 0};
            ok &= cell_fast<D, Bounded, Clamp, Radius>(k, i, c);
            if constexpr (Bounded) {
                uint32_t linear = static_cast<uint32_t>(c[0]) + k.counts[0] * static_cast<uint32_t>(c[1]);
                if constexpr (D == 3) linear += k.counts[0] * k.counts[1] * static_cast<uint32_t>(c[2]);
                particle_cell[i] = linear;
            } else {
                particle_key[i] = D == 3 ? pack_key3(c[0], c[1], c[2]) : pack_key2(c[0], c[1]);
            }
        }
        if constexpr (Bounded)
            count_buckets(particle_cell, begin, end, shift, hist + uint64_t{chunk} * buckets, buckets);
        BadParticle record{kNone, 0, StatusCode::ok};
        if (!ok) {
            for (uint32_t i = begin; i < end; ++i) {
                int32_t c[3];
                const StatusCode code = cell_checked<D, Bounded>(k, i, c);
                if (code == StatusCode::ok) continue;
                if (record.count++ == 0) {
                    record.index = i;
                    record.code = code;
                }
            }
        }
        bad[chunk] = record;
    });
}

template <uint32_t D, bool Bounded>
void key_pass_for(const KeyParams& k, uint32_t n, uint32_t grain, const ThreadBackend& b, uint32_t* particle_cell,
                  uint64_t* particle_key, uint32_t* hist, uint32_t buckets, uint32_t shift, BadParticle* bad) {
    const bool radius = k.radius != nullptr;
    if (Bounded && k.clamp) {
        if (radius)
            key_pass<D, Bounded, true, true>(k, n, grain, b, particle_cell, particle_key, hist, buckets, shift, bad);
        else
            key_pass<D, Bounded, true, false>(k, n, grain, b, particle_cell, particle_key, hist, buckets, shift, bad);
    } else {
        if (radius)
            key_pass<D, Bounded, false, true>(k, n, grain, b, particle_cell, particle_key, hist, buckets, shift, bad);
        else
            key_pass<D, Bounded, false, false>(k, n, grain, b, particle_cell, particle_key, hist, buckets, shift, bad);
    }
}

Status first_bad(const BadParticle* bad, uint32_t chunks) {
    Status s;
    for (uint32_t c = 0; c < chunks; ++c) {
        if (bad[c].count == 0) continue;
        if (s.ok()) {
            s.code = bad[c].code;
            s.index = bad[c].index;
        }
        s.count += bad[c].count;
    }
    switch (s.code) {
    case StatusCode::invalid_position:
        s.message = "particle coordinate is NaN or infinite";
        break;
    case StatusCode::position_out_of_range:
        s.message = "particle outside the bounded world or the cell-key range";
        break;
    case StatusCode::invalid_radius:
        s.message = "particle radius is <= 0, NaN or infinite";
        break;
    case StatusCode::radius_too_large:
        s.message = "2 * radius > cell_size: raise GridConfig::cell_size";
        break;
    default:
        break;
    }
    return s;
}

/// Smallest shift that maps `cells` cell indices onto at most `buckets` buckets.
uint32_t bucket_shift(uint32_t cells, uint32_t buckets) {
    uint32_t shift = 0;
    while ((uint64_t{cells} + (uint64_t{1} << shift) - 1) >> shift > buckets)
        ++shift;
    return shift;
}

/// Priority-ordered linear-probing insert. Keys with a larger value win a slot
/// and push the smaller one forward; the final layout is that of inserting the
/// key set serially in descending order. `occupied` counts keys in the table
/// (the distinct keys once all inserts return): a fresh key is counted when it
/// first enters (into an empty slot or by displacing), a displaced key stays
/// counted while carried and is uncounted if it meets its duplicate. Returns
/// false if the table reached `limit` keys.
bool insert_key(uint64_t* slots, uint32_t mask, uint32_t shift, uint64_t key, uint32_t& occupied, uint32_t limit) {
    std::atomic_ref<uint32_t> fill(occupied);
    uint32_t s = static_cast<uint32_t>(hash_key(key) >> shift);
    bool counted = false; // the key in hand is already counted in `occupied`
    for (;;) {
        std::atomic_ref<uint64_t> slot(slots[s]);
        uint64_t current = slot.load(std::memory_order_acquire);
        if (current == key) {
            if (counted) fill.fetch_sub(1, std::memory_order_relaxed); // a displaced duplicate vanishes
            return true;
        }
        if (current != kEmptyKey && key < current) {
            s = (s + 1) & mask;
            continue;
        }
        // Take the slot: it is empty, or holds a key of lower priority.
        if (!counted && fill.fetch_add(1, std::memory_order_relaxed) >= limit) {
            fill.fetch_sub(1, std::memory_order_relaxed);
            return false;
        }
        if (!slot.compare_exchange_strong(current, key, std::memory_order_acq_rel)) {
            if (!counted) fill.fetch_sub(1, std::memory_order_relaxed);
            continue; // re-read the same slot
        }
        counted = true;
        if (current == kEmptyKey) return true;
        key = current; // carry the displaced key forward
        s = (s + 1) & mask;
    }
}

/// LSD radix sort of distinct keys, 8-bit digits, only over bytes that vary.
/// Stable and chunked by a fixed grain: deterministic. Result ends in `keys`.
void radix_sort(const ThreadBackend& b, uint64_t* keys, uint64_t* tmp, uint32_t n, uint32_t* hist,
                uint64_t* chunk_scratch) {
    if (n < 2) return;
    const uint32_t chunks = chunk_count(n, kRadixGrain);
    parallel_chunks(b, n, kRadixGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t diff = 0;
        const uint64_t first = keys[0];
        for (uint32_t i = begin; i < end; ++i)
            diff |= keys[i] ^ first;
        chunk_scratch[begin / kRadixGrain] = diff;
    });
    uint64_t diff = 0;
    for (uint32_t c = 0; c < chunks; ++c)
        diff |= chunk_scratch[c];
    uint64_t* src = keys;
    uint64_t* dst = tmp;
    for (uint32_t shift = 0; shift < 64; shift += 8) {
        if (((diff >> shift) & 0xff) == 0) continue;
        parallel_chunks(b, n, kRadixGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint32_t* h = hist + (begin / kRadixGrain) * 256;
            std::memset(h, 0, 256 * sizeof(uint32_t));
            for (uint32_t i = begin; i < end; ++i)
                ++h[(src[i] >> shift) & 0xff];
        });
        uint32_t running = 0;
        for (uint32_t digit = 0; digit < 256; ++digit) {
            for (uint32_t c = 0; c < chunks; ++c) {
                const uint32_t v = hist[c * 256 + digit];
                hist[c * 256 + digit] = running;
                running += v;
            }
        }
        parallel_chunks(b, n, kRadixGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint32_t* h = hist + (begin / kRadixGrain) * 256;
            for (uint32_t i = begin; i < end; ++i)
                dst[h[(src[i] >> shift) & 0xff]++] = src[i];
        });
        std::swap(src, dst);
    }
    if (src != keys) std::memcpy(keys, src, uint64_t{n} * sizeof(uint64_t));
}

/// Exact number of distinct keys (overflow path only): sorts the keys in place.
uint64_t count_distinct(uint64_t* keys, uint32_t n) {
    std::sort(keys, keys + n);
    uint64_t distinct = 0;
    for (uint32_t i = 0; i < n; ++i)
        distinct += (i == 0 || keys[i] != keys[i - 1]) ? 1 : 0;
    return distinct;
}

} // namespace

Status Grid::rebuild(const ParticleSpans& particles, const ThreadBackend& backend) {
    return Impl::rebuild(*this, particles, backend);
}

Status Grid::Impl::rebuild(Grid& g, const ParticleSpans& p, const ThreadBackend& b) {
    HASHGRID_ASSERT(g.initialized_, "Grid::rebuild called before a successful init");
    HASHGRID_ASSERT(b.parallel_for != nullptr, "ThreadBackend without parallel_for");
    if (!g.initialized_) return {StatusCode::not_built, 0, 0, 0, "grid not initialized"};
    const GridConfig& c = g.config_;
    const uint32_t n = p.count;
    if (n > c.max_particles) {
        Status s;
        s.code = StatusCode::particle_capacity;
        s.needed = n;
        s.message = "more particles than GridConfig::max_particles";
        return s;
    }
    HASHGRID_ASSERT(n == 0 || (p.x != nullptr && p.y != nullptr && (c.dimensions == 2 || p.z != nullptr)),
                    "ParticleSpans: x, y (and z in 3D) must be set");
    const bool bounded = c.world == World::bounded;
    const uint32_t dims = c.dimensions;

    KeyParams k{};
    k.coord[0] = p.x;
    k.coord[1] = p.y;
    k.coord[2] = p.z;
    k.radius = p.radius;
    k.scale = key_scale(c.cell_size);
    k.cell_size = c.cell_size;
    k.clamp = c.out_of_bounds == OutOfBounds::clamp;
    const int32_t limit = dims == 3 ? kKeyLimit3 : kKeyLimit2;
    for (uint32_t d = 0; d < 3; ++d) {
        k.origin[d] = c.origin[d];
        k.counts[d] = c.cell_counts[d];
        k.upper[d] = bounded ? static_cast<double>(c.cell_counts[d]) : static_cast<double>(limit) + 1.0;
    }
    k.lower = bounded ? 0.0 : -static_cast<double>(limit);

    RebuildTimings timing{};
    const uint64_t t_begin = clock_ns();
    uint64_t t_mark = t_begin;
    auto lap = [&t_mark](uint64_t& phase) {
        const uint64_t now = clock_ns();
        phase = now - t_mark;
        t_mark = now;
    };

    // 1. Keys. Only scratch is written until validation has passed.
    const uint32_t grain = g.sort_grain_;
    const uint32_t chunks = chunk_count(n, grain);
    const uint32_t buckets_max = g.bucket_capacity_;
    uint32_t cells = 0;
    uint32_t shift = 0;
    if (bounded) {
        cells =
            static_cast<uint32_t>(uint64_t{c.cell_counts[0]} * c.cell_counts[1] * (dims == 3 ? c.cell_counts[2] : 1u));
        shift = bucket_shift(cells, buckets_max);
    }
    auto* bad = static_cast<BadParticle*>(g.bad_);
    if (dims == 3) {
        if (bounded)
            key_pass_for<3, true>(k, n, grain, b, g.particle_cell_, g.particle_key_, g.bucket_hist_, buckets_max, shift,
                                  bad);
        else
            key_pass_for<3, false>(k, n, grain, b, g.particle_cell_, g.particle_key_, g.bucket_hist_, buckets_max,
                                   shift, bad);
    } else {
        if (bounded)
            key_pass_for<2, true>(k, n, grain, b, g.particle_cell_, g.particle_key_, g.bucket_hist_, buckets_max, shift,
                                  bad);
        else
            key_pass_for<2, false>(k, n, grain, b, g.particle_cell_, g.particle_key_, g.bucket_hist_, buckets_max,
                                   shift, bad);
    }
    const Status invalid = first_bad(bad, chunks);
    if (!invalid.ok()) return invalid; // previous frame untouched
    lap(timing.keys);

    // 2. Unbounded: deterministic table, sorted distinct cells, per-particle cell.
    if (!bounded) {
        const uint32_t mask = g.slot_count_ - 1;
        if (g.table_needs_full_clear_) {
            parallel_chunks(b, g.slot_count_, kCellGrain * 4, [&](uint32_t begin, uint32_t end, uint32_t) {
                for (uint32_t s = begin; s < end; ++s)
                    g.slot_key_[s] = kEmptyKey;
            });
        } else {
            parallel_chunks(b, g.cell_count_, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
                for (uint32_t i = begin; i < end; ++i)
                    g.slot_key_[g.cell_slot_[i]] = kEmptyKey;
            });
        }
        g.table_needs_full_clear_ = true; // until this frame's cells are recorded
        g.built_ = false;
        g.count_ = 0;
        g.cell_count_ = 0;

        uint32_t occupied = 0;
        uint32_t failed = 0;
        // Room for in-flight displaced duplicates: the table never fills up.
        const uint32_t table_limit = g.slot_count_ / 4 * 3;
        parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint64_t last = kEmptyKey;
            for (uint32_t i = begin; i < end; ++i) {
                const uint64_t key = g.particle_key_[i];
                if (key == last) continue; // runs of one cell (sorted input) insert once
                if (!insert_key(g.slot_key_, mask, g.slot_shift_, key, occupied, table_limit)) {
                    std::atomic_ref<uint32_t>(failed).store(1, std::memory_order_relaxed);
                    return;
                }
                last = key;
            }
        });
        if (failed != 0 || occupied > c.max_cells) {
            Status s;
            s.code = StatusCode::cell_capacity;
            s.needed = count_distinct(g.particle_key_, n);
            s.message = "more occupied cells than GridConfig::max_cells";
            return s;
        }
        cells = occupied;

        // Compact the occupied slots (slot order: deterministic), then sort them.
        const uint32_t slot_chunks = chunk_count(g.slot_count_, kCellGrain);
        parallel_chunks(b, g.slot_count_, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint64_t filled = 0;
            for (uint32_t s = begin; s < end; ++s)
                filled += g.slot_key_[s] != kEmptyKey ? 1 : 0;
            g.chunk_scratch_[begin / kCellGrain] = filled;
        });
        uint64_t running = 0;
        for (uint32_t ch = 0; ch < slot_chunks; ++ch) {
            const uint64_t v = g.chunk_scratch_[ch];
            g.chunk_scratch_[ch] = running;
            running += v;
        }
        HASHGRID_ASSERT(running == cells, "occupied slot count mismatch");
        parallel_chunks(b, g.slot_count_, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint64_t out = g.chunk_scratch_[begin / kCellGrain];
            for (uint32_t s = begin; s < end; ++s)
                if (g.slot_key_[s] != kEmptyKey) g.cell_key_[out++] = g.slot_key_[s];
        });
        radix_sort(b, g.cell_key_, g.key_tmp_, cells, g.radix_hist_, g.chunk_scratch_);
        parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t i = begin; i < end; ++i) {
                const uint32_t s = find_slot(g, g.cell_key_[i]);
                g.cell_slot_[i] = s;
                g.slot_cell_[s] = i;
            }
        });
        g.cell_count_ = cells;
        g.table_needs_full_clear_ = false;

        shift = bucket_shift(cells, buckets_max);
        parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint32_t* h = g.bucket_hist_ + uint64_t{begin / grain} * buckets_max;
            uint64_t last = kEmptyKey;
            uint32_t last_cell = 0;
            for (uint32_t i = begin; i < end; ++i) {
                const uint64_t key = g.particle_key_[i];
                if (key != last) {
                    last = key;
                    last_cell = find_cell(g, key);
                }
                g.particle_cell_[i] = last_cell;
            }
            count_buckets(g.particle_cell_, begin, end, shift, h, buckets_max);
        });
        lap(timing.table);
    }

    // 3. Two-level counting sort. Bucket offsets in (bucket, chunk) order:
    //    every chunk owns one output range per bucket, so the scatter is stable.
    const uint32_t buckets = cells == 0 ? 0 : ((cells - 1) >> shift) + 1;
    {
        uint32_t running = 0;
        for (uint32_t bucket = 0; bucket < buckets; ++bucket) {
            g.bucket_start_[bucket] = running;
            for (uint32_t ch = 0; ch < chunks; ++ch) {
                uint32_t& h = g.bucket_hist_[uint64_t{ch} * buckets_max + bucket];
                const uint32_t v = h;
                h = running;
                running += v;
            }
        }
        g.bucket_start_[buckets] = running;
        HASHGRID_ASSERT(running == n, "bucket counts do not add up");
    }
    lap(timing.scan);
    const bool radius = p.radius != nullptr;
    // The cursor of the current bucket / cell lives in a register while runs
    // last (sorted input): back-to-back increments of one memory counter
    // would serialise on store forwarding.
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint32_t* h = g.bucket_hist_ + uint64_t{begin / grain} * buckets_max;
        uint32_t current = begin < end ? g.particle_cell_[begin] >> shift : 0;
        uint32_t at = h[current];
        for (uint32_t i = begin; i < end; ++i) {
            const uint32_t cell = g.particle_cell_[i];
            const uint32_t bucket = cell >> shift;
            if (bucket != current) {
                h[current] = at;
                current = bucket;
                at = h[bucket];
            }
            g.stage_cell_[at] = cell;
            g.stage_index_[at] = i;
            for (uint32_t d = 0; d < dims; ++d)
                g.stage_pos_[d][at] = k.coord[d][i];
            if (radius) g.stage_radius_[at] = p.radius[i];
            ++at;
        }
    });
    lap(timing.scatter);
    parallel_chunks(b, buckets, 1, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t bucket = begin; bucket < end; ++bucket) {
            const uint32_t first_cell = bucket << shift;
            const uint32_t last_cell = (uint64_t{bucket + 1} << shift) < cells ? (bucket + 1) << shift : cells;
            const uint32_t first = g.bucket_start_[bucket];
            const uint32_t last = g.bucket_start_[bucket + 1];
            uint32_t* count = g.cell_cursor_;
            for (uint32_t cell = first_cell; cell < last_cell; ++cell)
                count[cell] = 0;
            if (first < last) {
                uint32_t current = g.stage_cell_[first];
                uint32_t run = 0;
                for (uint32_t at = first; at < last; ++at) {
                    const uint32_t cell = g.stage_cell_[at];
                    if (cell != current) {
                        count[current] += run;
                        current = cell;
                        run = 0;
                    }
                    ++run;
                }
                count[current] += run;
            }
            uint32_t running = first;
            for (uint32_t cell = first_cell; cell < last_cell; ++cell) {
                g.cell_start_[cell] = running;
                const uint32_t v = count[cell];
                count[cell] = running;
                running += v;
            }
            if (first == last) continue;
            uint32_t current = g.stage_cell_[first];
            uint32_t to = count[current];
            for (uint32_t at = first; at < last; ++at) {
                const uint32_t cell = g.stage_cell_[at];
                if (cell != current) {
                    count[current] = to;
                    current = cell;
                    to = count[cell];
                }
                g.order_[to] = g.stage_index_[at];
                for (uint32_t d = 0; d < dims; ++d)
                    g.sorted_[d][to] = g.stage_pos_[d][at];
                if (radius) g.sorted_radius_[to] = g.stage_radius_[at];
                ++to;
            }
        }
    });
    g.cell_start_[cells] = n;
    lap(timing.finalize);

    timing.total = t_mark - t_begin;
    g.rebuild_timings_ = timing;
    g.count_ = n;
    g.cell_count_ = cells;
    g.has_radius_ = radius;
    g.built_ = true;
    return {};
}

} // namespace hashgrid

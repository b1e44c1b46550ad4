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
#include "lattice/wrapped_cells.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hashgrid {

using namespace detail;

namespace detail {

uint64_t scan_chunk_sums(uint64_t* sums, uint32_t chunks) {
    uint64_t total = 0;
    for (uint32_t c = 0; c < chunks; ++c) {
        const uint64_t v = sums[c];
        sums[c] = total;
        total += v;
    }
    return total;
}

uint64_t exclusive_scan(const ThreadBackend& b, const uint32_t* counts, uint32_t n, uint32_t* starts, uint32_t* cursors,
                        uint64_t* chunk_sums) {
    const uint32_t chunks = chunk_count(n, kCellGrain);
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t sum = 0;
        for (uint32_t i = begin; i < end; ++i)
            sum += counts[i];
        chunk_sums[begin / kCellGrain] = sum;
    });
    const uint64_t total = scan_chunk_sums(chunk_sums, chunks);
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
    double upper[3]; // bounded: cell counts; unbounded: kFastCellLimit
    double lower;    // bounded: 0; unbounded: -kFastCellLimit
    uint32_t counts[3];
    float cell_size;
    bool clamp;
};

/// Validates particle i and computes its integer cell coordinates, naming the
/// first problem. The slow path, run only on chunks whose key block (the fast
/// path, key_block_default / key_block_avx2) reported a bad particle.
/// Unbounded worlds accept every finite coordinate: cell[] is the wrapped
/// cell (lattice/wrapped_cells.h) and `wrapped` is set when it differs from
/// the true one.
template <uint32_t D, bool Bounded>
StatusCode cell_checked(const KeyParams& k, uint32_t i, int32_t* cell, bool& wrapped) {
    for (uint32_t d = 0; d < D; ++d) {
        const float v = k.coord[d][i];
        if (!std::isfinite(v)) return StatusCode::invalid_position;
        if constexpr (!Bounded) {
            cell[d] = unbounded_cell(v, k.origin[d], k.scale, D, wrapped);
            continue;
        }
        double t = scaled_coordinate(v, k.origin[d], k.scale);
        if (!(t >= k.lower && t < k.upper[d])) {
            if (!k.clamp) return StatusCode::position_out_of_range;
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

/// t clamped into [lo, hi1]; NaN becomes lo (maxsd/minsd semantics), so the
/// integer conversion below is always defined.
inline double clamp_into(double t, double lo, double hi1) {
    t = t > lo ? t : lo;
    return t < hi1 ? t : hi1;
}

/// Cell of every particle in [begin, end), written as the dense index
/// (bounded) or packed key (unbounded). Straight-line code the compiler
/// vectorizes: validity is accumulated as a bit, and a chunk with any invalid
/// particle is re-checked on the slow path. Returns true if all were valid.
template <uint32_t D, bool Bounded, bool Clamp, bool Radius>
[[gnu::always_inline]] inline bool key_block(const KeyParams& k, uint32_t begin, uint32_t end,
                                             uint32_t* __restrict particle_cell, uint64_t* __restrict particle_key,
                                             int32_t* __restrict box, uint32_t& wrapped) {
    uint32_t wraps = 0;
    int32_t lo_x = INT32_MAX, lo_y = INT32_MAX, lo_z = INT32_MAX;
    int32_t hi_x = INT32_MIN, hi_y = INT32_MIN, hi_z = INT32_MIN;
    const float* __restrict px = k.coord[0];
    const float* __restrict py = k.coord[1];
    const float* __restrict pz = D == 3 ? k.coord[2] : k.coord[0];
    const float* __restrict pr = Radius ? k.radius : k.coord[0];
    const double ox = k.origin[0], oy = k.origin[1], oz = k.origin[2];
    const double scale = k.scale, lo = k.lower;
    const double ux = k.upper[0], uy = k.upper[1], uz = k.upper[2];
    const uint32_t nx = k.counts[0], nxy = k.counts[0] * k.counts[1];
    const float cell_size = k.cell_size;
    uint32_t valid = 1;
    for (uint32_t i = begin; i < end; ++i) {
        const float vx = px[i], vy = py[i], vz = D == 3 ? pz[i] : 0.0f;
        const double tx = (static_cast<double>(vx) - ox) * scale;
        const double ty = (static_cast<double>(vy) - oy) * scale;
        const double tz = D == 3 ? (static_cast<double>(vz) - oz) * scale : 0.0;
        if constexpr (Bounded && Clamp) {
            valid &= static_cast<uint32_t>(vx - vx == 0.0f) & static_cast<uint32_t>(vy - vy == 0.0f) &
                     static_cast<uint32_t>(vz - vz == 0.0f);
        } else {
            // False for NaN and +-inf as well: the range is finite.
            valid &= static_cast<uint32_t>(tx >= lo) & static_cast<uint32_t>(tx < ux) &
                     static_cast<uint32_t>(ty >= lo) & static_cast<uint32_t>(ty < uy);
            if constexpr (D == 3) valid &= static_cast<uint32_t>(tz >= lo) & static_cast<uint32_t>(tz < uz);
        }
        if constexpr (Radius) {
            const float r = pr[i];
            valid &= static_cast<uint32_t>(r > 0.0f) & static_cast<uint32_t>(r * 2.0f <= cell_size);
        }
        const int32_t cx = floor_to_int(clamp_into(tx, lo, ux - 1.0));
        const int32_t cy = floor_to_int(clamp_into(ty, lo, uy - 1.0));
        const int32_t cz = D == 3 ? floor_to_int(clamp_into(tz, lo, uz - 1.0)) : 0;
        if constexpr (Bounded) {
            uint32_t linear = static_cast<uint32_t>(cx) + nx * static_cast<uint32_t>(cy);
            if constexpr (D == 3) linear += nxy * static_cast<uint32_t>(cz);
            particle_cell[i] = linear;
        } else {
            // Keys hold the cell modulo the period (a no-op within +-2^20
            // cells in 3D, +-2^30 in 2D).
            const int32_t wx = wrap_fast_cell<D>(cx);
            const int32_t wy = wrap_fast_cell<D>(cy);
            const int32_t wz = D == 3 ? wrap_fast_cell<D>(cz) : cz;
            wraps |=
                static_cast<uint32_t>(wx != cx) | static_cast<uint32_t>(wy != cy) | static_cast<uint32_t>(wz != cz);
            particle_key[i] = D == 3 ? pack_key3(wx, wy, wz) : pack_key2(wx, wy);
            lo_x = wx < lo_x ? wx : lo_x;
            lo_y = wy < lo_y ? wy : lo_y;
            lo_z = wz < lo_z ? wz : lo_z;
            hi_x = wx > hi_x ? wx : hi_x;
            hi_y = wy > hi_y ? wy : hi_y;
            hi_z = wz > hi_z ? wz : hi_z;
        }
    }
    wrapped = wraps;
    if constexpr (!Bounded) {
        box[0] = lo_x;
        box[1] = lo_y;
        box[2] = lo_z;
        box[3] = hi_x;
        box[4] = hi_y;
        box[5] = hi_z;
    }
    return valid != 0;
}

template <uint32_t D, bool Bounded, bool Clamp, bool Radius>
bool key_block_default(const KeyParams& k, uint32_t begin, uint32_t end, uint32_t* particle_cell,
                       uint64_t* particle_key, int32_t* box, uint32_t& wrapped) {
    return key_block<D, Bounded, Clamp, Radius>(k, begin, end, particle_cell, particle_key, box, wrapped);
}

#if defined(__x86_64__) || defined(_M_X64)
// The same loop compiled for AVX2 (4 doubles per instruction): the same IEEE
// operations, so the same cells. Chosen at run time.
template <uint32_t D, bool Bounded, bool Clamp, bool Radius>
__attribute__((target("avx2"))) bool key_block_avx2(const KeyParams& k, uint32_t begin, uint32_t end,
                                                    uint32_t* particle_cell, uint64_t* particle_key, int32_t* box,
                                                    uint32_t& wrapped) {
    return key_block<D, Bounded, Clamp, Radius>(k, begin, end, particle_cell, particle_key, box, wrapped);
}
#endif

/// counts[values[i] >> shift] += 1 for i in [begin, end). Runs of one value
/// (input in last frame's sorted order) are counted in a register:
/// incrementing the same memory counter back to back would serialise on
/// store forwarding.
void add_counts(const uint32_t* values, uint32_t begin, uint32_t end, uint32_t shift, uint32_t* counts) {
    if (begin == end) return;
    uint32_t current = values[begin] >> shift;
    uint32_t run = 0;
    for (uint32_t i = begin; i < end; ++i) {
        const uint32_t value = values[i] >> shift;
        if (value != current) {
            counts[current] += run;
            current = value;
            run = 0;
        }
        ++run;
    }
    counts[current] += run;
}

/// Per-chunk bucket histogram of particle cells.
void count_buckets(const uint32_t* particle_cell, uint32_t begin, uint32_t end, uint32_t shift, uint32_t* h,
                   uint32_t buckets) {
    std::memset(h, 0, buckets * sizeof(uint32_t));
    add_counts(particle_cell, begin, end, shift, h);
}

/// Key pass: particle_cell (bounded, plus per-chunk bucket counts) or
/// particle_key (unbounded) for every particle; per-chunk validation records.
template <uint32_t D, bool Bounded, bool Clamp, bool Radius>
void key_pass(const KeyParams& k, uint32_t n, uint32_t grain, const ThreadBackend& b, uint32_t* particle_cell,
              uint64_t* particle_key, int32_t* box, uint32_t* hist, uint32_t buckets, uint32_t shift,
              BadParticle* bad) {
    bool (*block)(const KeyParams&, uint32_t, uint32_t, uint32_t*, uint64_t*, int32_t*, uint32_t&) =
        &key_block_default<D, Bounded, Clamp, Radius>;
#if defined(__x86_64__) || defined(_M_X64)
    if (__builtin_cpu_supports("avx2")) block = &key_block_avx2<D, Bounded, Clamp, Radius>;
#endif
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const uint32_t chunk = begin / grain;
        int32_t* chunk_box = box + uint64_t{chunk} * 6;
        uint32_t fast_wrapped = 0;
        const bool ok = block(k, begin, end, particle_cell, particle_key, chunk_box, fast_wrapped);
        if constexpr (Bounded)
            count_buckets(particle_cell, begin, end, shift, hist + uint64_t{chunk} * buckets, buckets);
        BadParticle record{kNone, 0, StatusCode::ok, fast_wrapped != 0};
        if (!ok) {
            // Invalid particles, or (unbounded) coordinates beyond the fast
            // formula's range: every key and the chunk's box come from here.
            if constexpr (!Bounded) {
                for (uint32_t d = 0; d < 3; ++d) {
                    chunk_box[d] = INT32_MAX;
                    chunk_box[3 + d] = INT32_MIN;
                }
            }
            for (uint32_t i = begin; i < end; ++i) {
                int32_t c[3] = {0, 0, 0};
                const StatusCode code = cell_checked<D, Bounded>(k, i, c, record.wrapped);
                if (code == StatusCode::ok) {
                    if constexpr (!Bounded) {
                        particle_key[i] = D == 3 ? pack_key3(c[0], c[1], c[2]) : pack_key2(c[0], c[1]);
                        for (uint32_t d = 0; d < 3; ++d) {
                            chunk_box[d] = c[d] < chunk_box[d] ? c[d] : chunk_box[d];
                            chunk_box[3 + d] = c[d] > chunk_box[3 + d] ? c[d] : chunk_box[3 + d];
                        }
                    }
                    continue;
                }
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
                  uint64_t* particle_key, int32_t* box, uint32_t* hist, uint32_t buckets, uint32_t shift,
                  BadParticle* bad) {
    const bool radius = k.radius != nullptr;
    if (Bounded && k.clamp) {
        if (radius)
            key_pass<D, Bounded, true, true>(k, n, grain, b, particle_cell, particle_key, box, hist, buckets, shift,
                                             bad);
        else
            key_pass<D, Bounded, true, false>(k, n, grain, b, particle_cell, particle_key, box, hist, buckets, shift,
                                              bad);
    } else {
        if (radius)
            key_pass<D, Bounded, false, true>(k, n, grain, b, particle_cell, particle_key, box, hist, buckets, shift,
                                              bad);
        else
            key_pass<D, Bounded, false, false>(k, n, grain, b, particle_cell, particle_key, box, hist, buckets, shift,
                                               bad);
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
        s.message = "particle outside the bounded world";
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

/// A chunk's share of the table's fill counter. Slots are reserved from the
/// shared counter in blocks, so most inserts touch no shared cache line; what
/// is left is returned at the end. The shared counter thus never undercounts
/// the keys in the table, and equals their number once every chunk is done.
class FillShare {
public:
    FillShare(uint32_t& shared, uint32_t limit, uint32_t block) : shared_(shared), limit_(limit), block_(block) {}
    FillShare(const FillShare&) = delete;
    FillShare& operator=(const FillShare&) = delete;
    ~FillShare() {
        if (held_ != 0) shared_.fetch_sub(held_, std::memory_order_relaxed);
    }
    /// One slot for a fresh key; false if the table reached its limit.
    bool take() {
        if (held_ == 0) {
            if (shared_.fetch_add(block_, std::memory_order_relaxed) + block_ > limit_) {
                shared_.fetch_sub(block_, std::memory_order_relaxed);
                return false;
            }
            held_ = block_;
        }
        --held_;
        return true;
    }
    /// Returns a slot (a failed claim, or a displaced duplicate that vanished).
    void give_back() { ++held_; }

private:
    std::atomic_ref<uint32_t> shared_;
    uint32_t limit_;
    uint32_t block_;
    uint32_t held_ = 0;
};

/// Priority-ordered linear-probing insert. Keys with a larger value win a slot
/// and push the smaller one forward; the final layout is that of inserting the
/// key set serially in descending order. A fresh key takes a fill slot when it
/// first enters (an empty slot or by displacing); a displaced key keeps its
/// slot while carried and gives it back if it meets its duplicate. Returns
/// false if the table reached its fill limit.
bool insert_key(uint64_t* slots, uint32_t mask, uint32_t shift, uint64_t key, FillShare& fill) {
    uint32_t s = static_cast<uint32_t>(hash_key(key) >> shift);
    bool counted = false; // the key in hand already holds a fill slot
    for (;;) {
        std::atomic_ref<uint64_t> slot(slots[s]);
        uint64_t current = slot.load(std::memory_order_acquire);
        if (current == key) {
            if (counted) fill.give_back(); // a displaced duplicate vanishes
            return true;
        }
        if (current != kEmptyKey && key < current) {
            s = (s + 1) & mask;
            continue;
        }
        // Take the slot: it is empty, or holds a key of lower priority.
        if (!counted && !fill.take()) return false;
        if (!slot.compare_exchange_strong(current, key, std::memory_order_acq_rel)) {
            if (!counted) fill.give_back();
            continue; // re-read the same slot
        }
        counted = true;
        if (current == kEmptyKey) return true;
        key = current; // carry the displaced key forward
        s = (s + 1) & mask;
    }
}

/// LSD radix sort of distinct keys with a 32-bit payload each, 8-bit digits,
/// only over bytes that vary. Stable and chunked by a fixed grain:
/// deterministic. Results end in `keys` and `payload`.
void radix_sort(const ThreadBackend& b, uint64_t* keys, uint32_t* payload, uint64_t* tmp, uint32_t* payload_tmp,
                uint32_t n, uint32_t* hist, uint64_t* chunk_scratch) {
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
    uint32_t* psrc = payload;
    uint32_t* pdst = payload_tmp;
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
            for (uint32_t i = begin; i < end; ++i) {
                const uint32_t to = h[(src[i] >> shift) & 0xff]++;
                dst[to] = src[i];
                pdst[to] = psrc[i];
            }
        });
        std::swap(src, dst);
        std::swap(psrc, pdst);
    }
    if (src != keys) {
        std::memcpy(keys, src, uint64_t{n} * sizeof(uint64_t));
        std::memcpy(payload, psrc, uint64_t{n} * sizeof(uint32_t));
    }
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

namespace {

Status cell_capacity(uint64_t distinct) {
    Status s;
    s.code = StatusCode::cell_capacity;
    s.needed = distinct;
    s.message = "more occupied cells than GridConfig::max_cells";
    return s;
}

} // namespace

void Grid::Impl::table_from_cell_keys(Grid& g, uint32_t cells, const ThreadBackend& b) {
    uint32_t occupied = 0;
    const uint32_t table_limit = g.state_->slot_count / 4 * 3;
    parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        FillShare fill(occupied, table_limit, 1);
        for (uint32_t i = begin; i < end; ++i) {
            // Keys are sorted, their home slots random: fetch ahead.
            if (i + 16 < end)
                __builtin_prefetch(g.state_->slot_key + (hash_key(g.state_->cell_key[i + 16]) >> g.state_->slot_shift),
                                   1);
            const bool inserted = insert_key(g.state_->slot_key, g.state_->slot_count - 1, g.state_->slot_shift,
                                             g.state_->cell_key[i], fill);
            HASHGRID_ASSERT(inserted, "table below max_cells cannot be full");
            (void)inserted;
        }
    });
    parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            if (i + 16 < end)
                __builtin_prefetch(g.state_->slot_key + (hash_key(g.state_->cell_key[i + 16]) >> g.state_->slot_shift));
            const uint32_t slot = find_slot(g, g.state_->cell_key[i]);
            g.state_->cell_slot[i] = slot;
            g.state_->slot_cell[slot] = i;
        }
    });
    g.state_->cell_count = cells;
    g.state_->table_needs_full_clear = false;
}

void Grid::Impl::restore_previous_table(Grid& g, const PreviousFrame& previous, const ThreadBackend& b) {
    // The table's layout is a function of its key set, so inserting last
    // frame's keys (still in cell_key_) again gives back the very same table.
    parallel_chunks(b, g.state_->slot_count, kCellGrain * 4, [&](uint32_t begin, uint32_t end, uint32_t) {
        std::memset(g.state_->slot_key + begin, 0xff, uint64_t{end - begin} * sizeof(uint64_t)); // kEmptyKey
    });
    table_from_cell_keys(g, previous.built ? previous.cell_count : 0, b);
    g.state_->count = previous.count;
    g.state_->cell_count = previous.cell_count;
    g.state_->built = previous.built;
}

uint64_t Grid::Impl::count_occupied(Grid& g, uint32_t n, uint32_t box_cells, const ThreadBackend& b) {
    // dense_count_ is free until the counting sort: mark each particle's cell.
    uint32_t* mark = g.state_->dense_count;
    fill_u32(b, mark, box_cells, 0);
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            std::atomic_ref<uint32_t>(mark[g.state_->particle_cell[i]]).store(1, std::memory_order_relaxed);
    });
    parallel_chunks(b, box_cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t marked = 0;
        for (uint32_t v = begin; v < end; ++v)
            marked += mark[v];
        g.state_->chunk_scratch[begin / kCellGrain] = marked;
    });
    return scan_chunk_sums(g.state_->chunk_scratch, chunk_count(box_cells, kCellGrain));
}

Status Grid::Impl::rebuild(Grid& g, const ParticleSpans& p, const ThreadBackend& b) {
    HASHGRID_ASSERT(g.initialized_, "Grid::rebuild called before a successful init");
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
    if (n > 0 && (p.x == nullptr || p.y == nullptr || (c.dimensions == 3 && p.z == nullptr)))
        return {StatusCode::invalid_argument, 0, 0, 0, "ParticleSpans: x, y (and z in 3D) must be set when count > 0"};
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
    for (uint32_t d = 0; d < 3; ++d) {
        k.origin[d] = c.origin[d];
        k.counts[d] = c.cell_counts[d];
        k.upper[d] = bounded ? static_cast<double>(c.cell_counts[d]) : kFastCellLimit;
    }
    k.lower = bounded ? 0.0 : -kFastCellLimit;

    RebuildTimings timing{};
    const uint64_t t_begin = clock_ns();
    uint64_t t_mark = t_begin;
    auto lap = [&t_mark](uint64_t& phase) {
        const uint64_t now = clock_ns();
        phase += now - t_mark;
        t_mark = now;
    };

    // 1. Keys. Only scratch is written until validation has passed.
    const uint32_t grain = g.state_->sort_grain;
    const uint32_t chunks = chunk_count(n, grain);
    const uint32_t buckets_max = g.state_->bucket_capacity;
    uint32_t cells = 0;
    uint32_t shift = 0;
    if (bounded) {
        cells =
            static_cast<uint32_t>(uint64_t{c.cell_counts[0]} * c.cell_counts[1] * (dims == 3 ? c.cell_counts[2] : 1u));
        shift = bucket_shift(cells, buckets_max);
    }
    auto* bad = static_cast<BadParticle*>(g.state_->bad);
    if (dims == 3) {
        if (bounded)
            key_pass_for<3, true>(k, n, grain, b, g.state_->particle_cell, g.state_->particle_key, g.state_->chunk_box,
                                  g.state_->bucket_hist, buckets_max, shift, bad);
        else
            key_pass_for<3, false>(k, n, grain, b, g.state_->particle_cell, g.state_->particle_key, g.state_->chunk_box,
                                   g.state_->bucket_hist, buckets_max, shift, bad);
    } else {
        if (bounded)
            key_pass_for<2, true>(k, n, grain, b, g.state_->particle_cell, g.state_->particle_key, g.state_->chunk_box,
                                  g.state_->bucket_hist, buckets_max, shift, bad);
        else
            key_pass_for<2, false>(k, n, grain, b, g.state_->particle_cell, g.state_->particle_key, g.state_->chunk_box,
                                   g.state_->bucket_hist, buckets_max, shift, bad);
    }
    const Status invalid = first_bad(bad, chunks);
    if (!invalid.ok()) return invalid; // previous frame untouched
    bool wrapped = false;
    for (uint32_t ch = 0; ch < chunks; ++ch)
        wrapped = wrapped || bad[ch].wrapped;
    lap(timing.keys);

    // 2. Unbounded. If the frame's occupied cells fit a box of at most
    //    dense_capacity_ cells, particles are counting-sorted over that dense
    //    box (as in a bounded world, no per-particle hashing) and the non-empty
    //    cells are compacted afterwards: they come out in key order. Otherwise
    //    every particle's key goes through the table. Both give the same cells,
    //    order and table (the table's layout depends only on the key set).
    bool dense = false;
    int32_t box_lo[3] = {0, 0, 0};
    uint32_t extent[3] = {1, 1, 1};
    if (!bounded && n > 0) {
        int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX};
        int32_t hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
        for (uint32_t ch = 0; ch < chunks; ++ch)
            for (uint32_t d = 0; d < 3; ++d) {
                lo[d] = std::min(lo[d], g.state_->chunk_box[ch * 6 + d]);
                hi[d] = std::max(hi[d], g.state_->chunk_box[ch * 6 + 3 + d]);
            }
        // Wrapped 2D coordinates span up to 2^32 cells per axis: the product
        // is formed only while it stays within the dense capacity.
        uint64_t volume = 1;
        for (uint32_t d = 0; d < 3; ++d) {
            box_lo[d] = lo[d];
            const auto e = static_cast<uint64_t>(int64_t{hi[d]} - lo[d] + 1);
            extent[d] = e <= g.state_->dense_capacity ? static_cast<uint32_t>(e) : 0u;
            const uint64_t capacity = g.state_->dense_capacity;
            volume = volume <= capacity && e <= capacity && volume * e <= capacity ? volume * e : capacity + 1;
        }
        dense = volume <= g.state_->dense_capacity;
        if (dense) cells = static_cast<uint32_t>(volume);
    }
    // A rejected frame keeps the previous one. Only the unbounded table is
    // written before cell_capacity can be known; everything else of the frame
    // (sorted order, positions, cell starts and keys) is written after it.
    const PreviousFrame previous{g.state_->count, g.state_->cell_count, g.state_->built};
    if (!bounded) {
        const uint32_t mask = g.state_->slot_count - 1;
        // Clearing every slot is a streaming write; clearing last frame's
        // cells is one random write each. Pick the cheaper (about 16 slots
        // stream in the time of one random write).
        if (g.state_->table_needs_full_clear || g.state_->slot_count <= 16 * uint64_t{g.state_->cell_count}) {
            parallel_chunks(b, g.state_->slot_count, kCellGrain * 4, [&](uint32_t begin, uint32_t end, uint32_t) {
                std::memset(g.state_->slot_key + begin, 0xff, uint64_t{end - begin} * sizeof(uint64_t)); // kEmptyKey
            });
        } else {
            parallel_chunks(b, g.state_->cell_count, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
                for (uint32_t i = begin; i < end; ++i)
                    g.state_->slot_key[g.state_->cell_slot[i]] = kEmptyKey;
            });
        }
        g.state_->table_needs_full_clear = true; // until this frame's cells are recorded
        g.state_->built = false;
        g.state_->count = 0;
        g.state_->cell_count = 0;

        if (dense) {
            // Dense index within the box, per particle, and the bucket counts.
            shift = bucket_shift(cells, buckets_max);
            const uint32_t ex = extent[0], exy = extent[0] * extent[1];
            parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
                for (uint32_t i = begin; i < end; ++i) {
                    int32_t x, y, z = 0;
                    if (dims == 3)
                        unpack_key3(g.state_->particle_key[i], x, y, z);
                    else
                        unpack_key2(g.state_->particle_key[i], x, y);
                    g.state_->particle_cell[i] = static_cast<uint32_t>(x - box_lo[0]) +
                                                 ex * static_cast<uint32_t>(y - box_lo[1]) +
                                                 exy * static_cast<uint32_t>(z - box_lo[2]);
                }
                count_buckets(g.state_->particle_cell, begin, end, shift,
                              g.state_->bucket_hist + uint64_t{begin / grain} * buckets_max, buckets_max);
            });
            // A box of at most max_cells cells cannot hold more occupied ones.
            // A larger box may: count them now, before the sort overwrites
            // the previous frame (one more pass, only for such frames).
            if (cells > c.max_cells) {
                const uint64_t distinct = count_occupied(g, n, cells, b);
                if (distinct > c.max_cells) {
                    restore_previous_table(g, previous, b);
                    return cell_capacity(distinct);
                }
            }
        } else {
            uint32_t occupied = 0;
            uint32_t failed = 0;
            // The fill limit keeps the table below 3/4 load, so probes always end;
            // reservations are small enough that it is never reached spuriously
            // below max_cells (<= 1/2 load).
            const uint32_t table_limit = g.state_->slot_count / 4 * 3;
            const uint32_t workers = b.worker_count > 0 ? b.worker_count : 1;
            uint32_t block = table_limit / (8 * workers);
            block = block < 1 ? 1 : (block > 64 ? 64 : block);
            parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
                FillShare fill(occupied, table_limit, block);
                uint64_t last = kEmptyKey;
                for (uint32_t i = begin; i < end; ++i) {
                    const uint64_t key = g.state_->particle_key[i];
                    if (key == last) continue; // runs of one cell (sorted input) insert once
                    if (i + 8 < end)           // the home slot of a key a few inserts ahead
                        __builtin_prefetch(g.state_->slot_key +
                                           (hash_key(g.state_->particle_key[i + 8]) >> g.state_->slot_shift));
                    if (!insert_key(g.state_->slot_key, mask, g.state_->slot_shift, key, fill)) {
                        std::atomic_ref<uint32_t>(failed).store(1, std::memory_order_relaxed);
                        return;
                    }
                    last = key;
                }
            });
            if (failed != 0 || occupied > c.max_cells) {
                // Only the table was written: put the previous frame's back.
                restore_previous_table(g, previous, b);
                return cell_capacity(count_distinct(g.state_->particle_key, n));
            }
            cells = occupied;

            // Compact the occupied slots (slot order: deterministic), then sort them.
            const uint32_t slot_chunks = chunk_count(g.state_->slot_count, kCellGrain);
            parallel_chunks(b, g.state_->slot_count, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
                uint64_t filled = 0;
                for (uint32_t s = begin; s < end; ++s)
                    filled += g.state_->slot_key[s] != kEmptyKey ? 1 : 0;
                g.state_->chunk_scratch[begin / kCellGrain] = filled;
            });
            const uint64_t filled_slots = scan_chunk_sums(g.state_->chunk_scratch, slot_chunks);
            HASHGRID_ASSERT(filled_slots == cells, "occupied slot count mismatch");
            (void)filled_slots;
            parallel_chunks(b, g.state_->slot_count, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
                uint64_t out = g.state_->chunk_scratch[begin / kCellGrain];
                for (uint32_t s = begin; s < end; ++s)
                    if (g.state_->slot_key[s] != kEmptyKey) {
                        g.state_->cell_key[out] = g.state_->slot_key[s];
                        g.state_->cell_slot[out] = s;
                        ++out;
                    }
            });
            // Sort (key, slot) by key; cell_cursor_ is free until the counting sort.
            radix_sort(b, g.state_->cell_key, g.state_->cell_slot, g.state_->key_tmp, g.state_->cell_cursor, cells,
                       g.state_->radix_hist, g.state_->chunk_scratch);
            parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
                for (uint32_t i = begin; i < end; ++i)
                    g.state_->slot_cell[g.state_->cell_slot[i]] = i;
            });
            g.state_->cell_count = cells;
            g.state_->table_needs_full_clear = false;

            shift = bucket_shift(cells, buckets_max);
            parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
                uint32_t* h = g.state_->bucket_hist + uint64_t{begin / grain} * buckets_max;
                uint64_t last = kEmptyKey;
                uint32_t last_cell = 0;
                for (uint32_t i = begin; i < end; ++i) {
                    const uint64_t key = g.state_->particle_key[i];
                    if (key != last) {
                        last = key;
                        // Input in last frame's order walks the cells forward.
                        last_cell = last_cell + 1 < cells && g.state_->cell_key[last_cell + 1] == key
                                        ? last_cell + 1
                                        : find_cell(g, key);
                    }
                    g.state_->particle_cell[i] = last_cell;
                }
                count_buckets(g.state_->particle_cell, begin, end, shift, h, buckets_max);
            });
        }
        lap(timing.table);
    }

    // 3. Two-level counting sort (over the dense box for the dense path).
    uint32_t* const starts = dense ? g.state_->dense_start : g.state_->cell_start;
    uint32_t* const counts = dense ? g.state_->dense_count : g.state_->cell_cursor;
    // Bucket offsets in (bucket, chunk) order:
    // every chunk owns one output range per bucket, so the scatter is stable.
    const uint32_t buckets = cells == 0 ? 0 : ((cells - 1) >> shift) + 1;
    {
        uint32_t running = 0;
        for (uint32_t bucket = 0; bucket < buckets; ++bucket) {
            g.state_->bucket_start[bucket] = running;
            for (uint32_t ch = 0; ch < chunks; ++ch) {
                uint32_t& h = g.state_->bucket_hist[uint64_t{ch} * buckets_max + bucket];
                const uint32_t v = h;
                h = running;
                running += v;
            }
        }
        g.state_->bucket_start[buckets] = running;
        HASHGRID_ASSERT(running == n, "bucket counts do not add up");
    }
    lap(timing.scan);
    const bool radius = p.radius != nullptr;
    // The cursor of the current bucket / cell lives in a register while runs
    // last (sorted input): back-to-back increments of one memory counter
    // would serialise on store forwarding.
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint32_t* h = g.state_->bucket_hist + uint64_t{begin / grain} * buckets_max;
        uint32_t current = begin < end ? g.state_->particle_cell[begin] >> shift : 0;
        uint32_t at = h[current];
        for (uint32_t i = begin; i < end; ++i) {
            const uint32_t cell = g.state_->particle_cell[i];
            const uint32_t bucket = cell >> shift;
            if (bucket != current) {
                h[current] = at;
                current = bucket;
                at = h[bucket];
            }
            g.state_->stage_cell[at] = cell;
            g.state_->stage_index[at] = i;
            for (uint32_t d = 0; d < dims; ++d)
                g.state_->stage_pos[d][at] = k.coord[d][i];
            if (radius) g.state_->stage_radius[at] = p.radius[i];
            ++at;
        }
    });
    lap(timing.scatter);
    parallel_chunks(b, buckets, 1, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t bucket = begin; bucket < end; ++bucket) {
            const uint32_t first_cell = bucket << shift;
            const uint32_t last_cell = (uint64_t{bucket + 1} << shift) < cells ? (bucket + 1) << shift : cells;
            const uint32_t first = g.state_->bucket_start[bucket];
            const uint32_t last = g.state_->bucket_start[bucket + 1];
            uint32_t* count = counts;
            for (uint32_t cell = first_cell; cell < last_cell; ++cell)
                count[cell] = 0;
            add_counts(g.state_->stage_cell, first, last, 0, count);
            uint32_t running = first;
            for (uint32_t cell = first_cell; cell < last_cell; ++cell) {
                starts[cell] = running;
                const uint32_t v = count[cell];
                count[cell] = running;
                running += v;
            }
            if (first == last) continue;
            uint32_t current = g.state_->stage_cell[first];
            uint32_t to = count[current];
            for (uint32_t at = first; at < last; ++at) {
                const uint32_t cell = g.state_->stage_cell[at];
                if (cell != current) {
                    count[current] = to;
                    current = cell;
                    to = count[cell];
                }
                g.state_->order[to] = g.state_->stage_index[at];
                for (uint32_t d = 0; d < dims; ++d)
                    g.state_->sorted[d][to] = g.state_->stage_pos[d][at];
                if (radius) g.state_->sorted_radius[to] = g.state_->stage_radius[at];
                ++to;
            }
        }
    });
    starts[cells] = n;
    lap(timing.finalize);

    if (dense) {
        // Compact the non-empty cells of the box (already in key order).
        const uint32_t box_cells = cells;
        const uint32_t ex = extent[0], ey = extent[1];
        const uint32_t box_chunks = chunk_count(box_cells, kCellGrain);
        parallel_chunks(b, box_cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint64_t filled = 0;
            for (uint32_t v = begin; v < end; ++v)
                filled += g.state_->dense_start[v + 1] != g.state_->dense_start[v] ? 1 : 0;
            g.state_->chunk_scratch[begin / kCellGrain] = filled;
        });
        const uint64_t distinct = scan_chunk_sums(g.state_->chunk_scratch, box_chunks);
        HASHGRID_ASSERT(distinct <= c.max_cells, "cell_capacity is checked before the sort");
        parallel_chunks(b, box_cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint64_t out = g.state_->chunk_scratch[begin / kCellGrain];
            for (uint32_t v = begin; v < end; ++v) {
                if (g.state_->dense_start[v + 1] == g.state_->dense_start[v]) continue;
                const auto x = static_cast<int32_t>(v % ex) + box_lo[0];
                const auto y = static_cast<int32_t>((v / ex) % ey) + box_lo[1];
                const auto z = static_cast<int32_t>(v / (ex * ey)) + box_lo[2];
                g.state_->cell_key[out] = dims == 3 ? pack_key3(x, y, z) : pack_key2(x, y);
                g.state_->cell_start[out] = g.state_->dense_start[v];
                ++out;
            }
        });
        cells = static_cast<uint32_t>(distinct);
        g.state_->cell_start[cells] = n;
        // The table gets the distinct keys only.
        table_from_cell_keys(g, cells, b);
        lap(timing.table);
    }

    timing.total = t_mark - t_begin;
    g.state_->rebuild_timings = timing;
    g.state_->count = n;
    g.state_->cell_count = cells;
    g.state_->has_radius = radius;
    g.state_->wrapped = wrapped;
    g.state_->built = true;
    return {};
}

} // namespace hashgrid

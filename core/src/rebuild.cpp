// The per-frame rebuild: keys, cell table, counting sort.
//
// 1. Key pass (parallel over particles): validate, compute integer cell
//    coordinates (cell_key.h). Bounded: dense linear index, counted at once.
//    Unbounded: a packed 64-bit key per particle.
// 2. Unbounded only: insert the keys into the open-addressing table with
//    priority-ordered linear probing (Shun & Blelloch, "Phase-concurrent hash
//    tables for determinism", SPAA 2014): the layout depends only on the key
//    set, never on timing. The distinct keys are compacted in slot order and
//    radix-sorted, giving cells in lexicographic (z, y, x) order; each
//    particle then looks up its cell index and is counted.
// 3. Exclusive scan of the counts (cell starts), scatter of particle indices
//    with per-cell atomic cursors, then a per-cell pass that sorts each cell's
//    indices ascending (this makes the order independent of the scatter's
//    timing) and gathers positions into the sorted SoA copy.
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

/// Validates particle i and computes its integer cell coordinates.
template <uint32_t D, bool Bounded>
inline StatusCode cell_of(const KeyParams& k, uint32_t i, int32_t* cell) {
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

template <uint32_t D, bool Bounded>
void key_pass(Grid& g, const KeyParams& k, uint32_t n, const ThreadBackend& b, uint32_t* particle_cell,
              uint64_t* particle_key, uint32_t* counts, BadParticle* bad) {
    parallel_chunks(b, n, kParticleGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        BadParticle record{kNone, 0, StatusCode::ok};
        for (uint32_t i = begin; i < end; ++i) {
            int32_t c[3] = {0, 0, 0};
            const StatusCode code = cell_of<D, Bounded>(k, i, c);
            if (code != StatusCode::ok) {
                if (record.count++ == 0) {
                    record.index = i;
                    record.code = code;
                }
                continue;
            }
            if constexpr (Bounded) {
                uint32_t linear = static_cast<uint32_t>(c[0]) + k.counts[0] * static_cast<uint32_t>(c[1]);
                if constexpr (D == 3) linear += k.counts[0] * k.counts[1] * static_cast<uint32_t>(c[2]);
                particle_cell[i] = linear;
                atomic_add(counts[linear], 1);
            } else {
                particle_key[i] = D == 3 ? pack_key3(c[0], c[1], c[2]) : pack_key2(c[0], c[1]);
            }
        }
        bad[begin / kParticleGrain] = record;
    });
    (void)g;
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
        const int32_t limit = c.dimensions == 3 ? kKeyLimit3 : kKeyLimit2;
        k.upper[d] = bounded ? static_cast<double>(c.cell_counts[d]) : static_cast<double>(limit) + 1.0;
    }
    k.lower = bounded ? 0.0 : -static_cast<double>(c.dimensions == 3 ? kKeyLimit3 : kKeyLimit2);

    RebuildTimings& timing = g.rebuild_timings_;
    const uint64_t t_begin = clock_ns();
    // 1. Keys (+ counts when bounded). Only scratch is written until validation passed.
    uint32_t cells = g.cell_count_;
    if (bounded) {
        cells = static_cast<uint32_t>(uint64_t{c.cell_counts[0]} * c.cell_counts[1] *
                                      (c.dimensions == 3 ? c.cell_counts[2] : 1u));
        fill_u32(b, g.cell_cursor_, cells, 0);
    }
    auto* bad = static_cast<BadParticle*>(g.bad_);
    if (c.dimensions == 3) {
        if (bounded)
            key_pass<3, true>(g, k, n, b, g.particle_cell_, g.particle_key_, g.cell_cursor_, bad);
        else
            key_pass<3, false>(g, k, n, b, g.particle_cell_, g.particle_key_, g.cell_cursor_, bad);
    } else {
        if (bounded)
            key_pass<2, true>(g, k, n, b, g.particle_cell_, g.particle_key_, g.cell_cursor_, bad);
        else
            key_pass<2, false>(g, k, n, b, g.particle_cell_, g.particle_key_, g.cell_cursor_, bad);
    }
    const Status invalid = first_bad(bad, chunk_count(n, kParticleGrain));
    if (!invalid.ok()) return invalid; // previous frame untouched
    uint64_t t_mark = clock_ns();
    timing = RebuildTimings{};
    timing.keys = t_mark - t_begin;

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
        const uint32_t limit = g.slot_count_ / 4 * 3;
        parallel_chunks(b, n, kParticleGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint64_t last = kEmptyKey;
            for (uint32_t i = begin; i < end; ++i) {
                const uint64_t key = g.particle_key_[i];
                if (key == last) continue; // runs of one cell (sorted input) insert once
                if (!insert_key(g.slot_key_, mask, g.slot_shift_, key, occupied, limit)) {
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

        // Compact the occupied slots (slot order: deterministic) into key_tmp_.
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
                g.cell_cursor_[i] = 0;
            }
        });
        g.cell_count_ = cells;
        g.table_needs_full_clear_ = false;

        parallel_chunks(b, n, kParticleGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint64_t last = kEmptyKey;
            uint32_t last_cell = 0;
            for (uint32_t i = begin; i < end; ++i) {
                const uint64_t key = g.particle_key_[i];
                if (key != last) {
                    last = key;
                    last_cell = find_cell(g, key);
                }
                g.particle_cell_[i] = last_cell;
                atomic_add(g.cell_cursor_[last_cell], 1);
            }
        });
    }

    auto lap = [&t_mark](uint64_t& phase) {
        const uint64_t now = clock_ns();
        phase = now - t_mark;
        t_mark = now;
    };
    if (!bounded) lap(timing.table);

    // 3. Counting sort: starts, scatter, per-cell order and gather.
    exclusive_scan(b, g.cell_cursor_, cells, g.cell_start_, g.cell_cursor_, g.chunk_scratch_);
    lap(timing.scan);
    parallel_chunks(b, n, kParticleGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            g.order_[atomic_add(g.cell_cursor_[g.particle_cell_[i]], 1)] = i;
    });
    lap(timing.scatter);
    const uint32_t dims = c.dimensions;
    parallel_chunks(b, cells, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t cell = begin; cell < end; ++cell) {
            const uint32_t first = g.cell_start_[cell];
            const uint32_t last = g.cell_start_[cell + 1];
            if (first == last) continue;
            sort_distinct(g.order_ + first, last - first);
            for (uint32_t d = 0; d < dims; ++d) {
                const float* src = k.coord[d];
                float* dst = g.sorted_[d];
                for (uint32_t s = first; s < last; ++s)
                    dst[s] = src[g.order_[s]];
            }
            if (p.radius != nullptr)
                for (uint32_t s = first; s < last; ++s)
                    g.sorted_radius_[s] = p.radius[g.order_[s]];
        }
    });

    lap(timing.finalize);
    timing.total = t_mark - t_begin;
    g.count_ = n;
    g.cell_count_ = cells;
    g.has_radius_ = p.radius != nullptr;
    g.built_ = true;
    return {};
}

} // namespace hashgrid

// SPDX-License-Identifier: MIT
// Step 3 of the rebuild: a two-level counting sort without atomics. Cells
// are grouped into buckets of 2^shift consecutive cells. Each chunk has
// counted its particles per bucket (steps 1 and 2, or count_skipped_buckets
// here when the key pass left the counts out); a scan in (bucket, chunk)
// order gives every chunk its own output range per bucket, so the scatter
// into buckets is stable (ascending index within a bucket) and carries the
// positions along. Each bucket is then counting-sorted by cell on its own, in
// cache, writing cell starts, the permutation and the sorted SoA copy. Within
// a cell, particles keep ascending original index: the result is the same for
// any thread count.
#include "particle/rebuild_steps.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <bit>

namespace hashgrid::detail {

void count_skipped_buckets(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    if (f.keys.count || !(f.bounded || f.keys.guess)) return;
    const uint32_t grain = f.grain;
    const uint32_t buckets_max = f.buckets_max;
    const uint32_t shift = f.shift;
    parallel_chunks(b, f.n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        count_buckets(s.particle_cell, begin, end, shift, s.bucket_hist + uint64_t{begin / grain} * buckets_max,
                      buckets_max);
    });
}

void scan_buckets(GridState& s, RebuildFrame& f) {
    const uint32_t chunks = f.chunks;
    const uint32_t buckets_max = f.buckets_max;
    const uint32_t buckets = f.cells == 0 ? 0 : ((f.cells - 1) >> f.shift) + 1;
    uint32_t running = 0;
    for (uint32_t bucket = 0; bucket < buckets; ++bucket) {
        s.bucket_start[bucket] = running;
        for (uint32_t ch = 0; ch < chunks; ++ch) {
            uint32_t& h = s.bucket_hist[uint64_t{ch} * buckets_max + bucket];
            const uint32_t v = h;
            h = running;
            running += v;
        }
    }
    s.bucket_start[buckets] = running;
    HASHGRID_ASSERT(running == f.n, "bucket counts do not add up");
    f.buckets = buckets;
}

namespace {

/// Words of one staging record: cell, index, D coordinates and, with radii,
/// the radius (bit copies of the floats). Records rather than one array per
/// field: the scatter then writes one stream per bucket instead of four to
/// six, so the lines it is filling (buckets x streams) stay in L1.
template <uint32_t D, bool Radius>
inline constexpr uint32_t kStageWords = 2 + D + (Radius ? 1 : 0);

template <uint32_t D, bool Radius>
void scatter_records(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    constexpr uint32_t W = kStageWords<D, Radius>;
    const uint32_t grain = f.grain;
    const uint32_t buckets_max = f.buckets_max;
    const uint32_t shift = f.shift;
    const KeyParams& k = f.keys;
    const uint32_t* const particle_cell = s.particle_cell;
    uint32_t* const stage = s.stage;
    // The cursor of the current bucket lives in a register while runs last
    // (sorted input): back-to-back increments of one memory counter would
    // serialise on store forwarding.
    parallel_chunks(b, f.n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint32_t* h = s.bucket_hist + uint64_t{begin / grain} * buckets_max;
        uint32_t current = begin < end ? particle_cell[begin] >> shift : 0;
        uint32_t at = h[current];
        for (uint32_t i = begin; i < end; ++i) {
            const uint32_t cell = particle_cell[i];
            const uint32_t bucket = cell >> shift;
            if (bucket != current) {
                h[current] = at;
                current = bucket;
                at = h[bucket];
            }
            uint32_t* const record = stage + uint64_t{at} * W;
            record[0] = cell;
            record[1] = i;
            for (uint32_t d = 0; d < D; ++d)
                record[2 + d] = std::bit_cast<uint32_t>(k.coord[d][i]);
            if constexpr (Radius) record[2 + D] = std::bit_cast<uint32_t>(k.radius[i]);
            ++at;
        }
    });
}

template <uint32_t D, bool Radius>
void sort_records(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    constexpr uint32_t W = kStageWords<D, Radius>;
    const uint32_t cells = f.cells;
    const uint32_t shift = f.shift;
    const uint32_t* const stage = s.stage;
    // The dense path sorts over the box, compacted afterwards.
    uint32_t* const starts = f.dense ? s.dense_start : s.cell_start;
    uint32_t* const count = f.dense ? s.dense_count : s.cell_cursor;
    // As in the scatter, the current cell's cursor lives in a register.
    parallel_chunks(b, f.buckets, 1, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t bucket = begin; bucket < end; ++bucket) {
            const uint32_t first_cell = bucket << shift;
            const uint32_t last_cell = (uint64_t{bucket + 1} << shift) < cells ? (bucket + 1) << shift : cells;
            const uint32_t first = s.bucket_start[bucket];
            const uint32_t last = s.bucket_start[bucket + 1];
            for (uint32_t cell = first_cell; cell < last_cell; ++cell)
                count[cell] = 0;
            for (uint32_t at = first; at < last; ++at)
                ++count[stage[uint64_t{at} * W]];
            uint32_t running = first;
            for (uint32_t cell = first_cell; cell < last_cell; ++cell) {
                starts[cell] = running;
                const uint32_t v = count[cell];
                count[cell] = running;
                running += v;
            }
            if (first == last) continue;
            uint32_t current = stage[uint64_t{first} * W];
            uint32_t to = count[current];
            for (uint32_t at = first; at < last; ++at) {
                const uint32_t* const record = stage + uint64_t{at} * W;
                const uint32_t cell = record[0];
                if (cell != current) {
                    count[current] = to;
                    current = cell;
                    to = count[cell];
                }
                s.order[to] = record[1];
                for (uint32_t d = 0; d < D; ++d)
                    s.sorted[d][to] = std::bit_cast<float>(record[2 + d]);
                if constexpr (Radius) s.sorted_radius[to] = std::bit_cast<float>(record[2 + D]);
                ++to;
            }
        }
    });
    starts[cells] = f.n;
}

} // namespace

void scatter_to_buckets(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    const bool radius = f.keys.radius != nullptr;
    if (f.dims == 3)
        radius ? scatter_records<3, true>(s, f, b) : scatter_records<3, false>(s, f, b);
    else
        radius ? scatter_records<2, true>(s, f, b) : scatter_records<2, false>(s, f, b);
}

void sort_buckets(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    const bool radius = f.keys.radius != nullptr;
    if (f.dims == 3)
        radius ? sort_records<3, true>(s, f, b) : sort_records<3, false>(s, f, b);
    else
        radius ? sort_records<2, true>(s, f, b) : sort_records<2, false>(s, f, b);
}

} // namespace hashgrid::detail

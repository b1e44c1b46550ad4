// Step 3 of the rebuild: a two-level counting sort without atomics. Cells
// are grouped into buckets of 2^shift consecutive cells. Each chunk has
// counted its particles per bucket (steps 1 and 2); a scan in (bucket, chunk)
// order gives every chunk its own output range per bucket, so the scatter
// into buckets is stable (ascending index within a bucket) and carries the
// positions along. Each bucket is then counting-sorted by cell on its own, in
// cache, writing cell starts, the permutation and the sorted SoA copy. Within
// a cell, particles keep ascending original index: the result is the same for
// any thread count.
//
// Also the scan helpers the other passes share (grid_impl.h).
#include "rebuild_steps.h"

#include "hashgrid/assert.h"

#include <algorithm>

namespace hashgrid::detail {

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

void scatter_to_buckets(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    const uint32_t dims = f.dims;
    const uint32_t grain = f.grain;
    const uint32_t buckets_max = f.buckets_max;
    const uint32_t shift = f.shift;
    const KeyParams& k = f.keys;
    const bool radius = k.radius != nullptr;
    // The cursor of the current bucket lives in a register while runs last
    // (sorted input): back-to-back increments of one memory counter would
    // serialise on store forwarding.
    parallel_chunks(b, f.n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint32_t* h = s.bucket_hist + uint64_t{begin / grain} * buckets_max;
        uint32_t current = begin < end ? s.particle_cell[begin] >> shift : 0;
        uint32_t at = h[current];
        for (uint32_t i = begin; i < end; ++i) {
            const uint32_t cell = s.particle_cell[i];
            const uint32_t bucket = cell >> shift;
            if (bucket != current) {
                h[current] = at;
                current = bucket;
                at = h[bucket];
            }
            s.stage_cell[at] = cell;
            s.stage_index[at] = i;
            for (uint32_t d = 0; d < dims; ++d)
                s.stage_pos[d][at] = k.coord[d][i];
            if (radius) s.stage_radius[at] = k.radius[i];
            ++at;
        }
    });
}

void sort_buckets(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    const uint32_t dims = f.dims;
    const uint32_t cells = f.cells;
    const uint32_t shift = f.shift;
    const bool radius = f.keys.radius != nullptr;
    // The dense path sorts over the box, compacted afterwards.
    uint32_t* const starts = f.dense ? s.dense_start : s.cell_start;
    uint32_t* const counts = f.dense ? s.dense_count : s.cell_cursor;
    // As in the scatter, the current cell's cursor lives in a register.
    parallel_chunks(b, f.buckets, 1, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t bucket = begin; bucket < end; ++bucket) {
            const uint32_t first_cell = bucket << shift;
            const uint32_t last_cell = (uint64_t{bucket + 1} << shift) < cells ? (bucket + 1) << shift : cells;
            const uint32_t first = s.bucket_start[bucket];
            const uint32_t last = s.bucket_start[bucket + 1];
            uint32_t* count = counts;
            for (uint32_t cell = first_cell; cell < last_cell; ++cell)
                count[cell] = 0;
            add_counts(s.stage_cell, first, last, 0, count);
            uint32_t running = first;
            for (uint32_t cell = first_cell; cell < last_cell; ++cell) {
                starts[cell] = running;
                const uint32_t v = count[cell];
                count[cell] = running;
                running += v;
            }
            if (first == last) continue;
            uint32_t current = s.stage_cell[first];
            uint32_t to = count[current];
            for (uint32_t at = first; at < last; ++at) {
                const uint32_t cell = s.stage_cell[at];
                if (cell != current) {
                    count[current] = to;
                    current = cell;
                    to = count[cell];
                }
                s.order[to] = s.stage_index[at];
                for (uint32_t d = 0; d < dims; ++d)
                    s.sorted[d][to] = s.stage_pos[d][at];
                if (radius) s.sorted_radius[to] = s.stage_radius[at];
                ++to;
            }
        }
    });
    starts[cells] = f.n;
}

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
// The rebuild of a frame whose input is last frame's sorted order
// (sorted_to_original) after the particles moved a little: most particles
// are still in the cell they were in, at the position they had, and only
// those that crossed a cell boundary are out of place. The counting sort
// would move every particle; this path moves only the few.
//
// The cells are numbered densely: a bounded world's cells (cell_start), or
// the cells of an unbounded frame's dense box when last frame was sorted
// over the same box (dense_start, compacted afterwards); merge_starts picks.
// Particle i of the input stood at sorted position i last frame, in the
// cell whose range of last frame's starts holds i. It is *kept* when its
// cell is still that one, that is when i lies in its cell's old range; the
// kept particles are then already in (cell, index) order, because last
// frame's cells ascend along the positions. The others are *displaced*: at
// most one in kDisplacedShare per chunk, or the counting sort runs instead.
// The displaced are sorted by (cell, index) with a small radix sort, and the
// frame is written by chunks of cells: their cell starts, then one walk over
// their old positions that merges the kept particles with the displaced
// ones by (cell, index). That is the stable sort by cell the counting sort
// gives: the same order, cell starts and sorted copy, byte for byte.
//
// Scratch: each 4096-particle chunk lists its displaced particles at the
// start of its own range of stage_index (index), stage_pos and
// stage_radius (position and radius, read while the chunk streams by: the
// write finds them there, near the cells it writes, instead of far away in
// the input). A displaced particle's *slot* is its place in those lists.
// The radix sort ping-pongs (cell, slot) pairs between two buffers in
// stage_cell (n/4 each), and the write keeps its chunk bounds in the buffer
// the sort did not end in.
#include "particle/rebuild_steps.h"

#include "hashgrid/assert.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

namespace hashgrid::detail {

namespace {

constexpr uint32_t kMergeGrain = kCellGrain;  // particles per chunk of the classify pass
constexpr uint32_t kDisplacedShare = 8;       // at most 1 in 8 displaced per chunk ...
constexpr uint32_t kDisplacedSlack = 16;      // ... plus a few (short chunks)
constexpr uint32_t kMergeMinParticles = 4096; // below this the counting sort is as cheap
constexpr uint32_t kMaxDigitBits = 11;        // radix sort digits of the displaced cells: 8 KB of counts
constexpr uint32_t kSortBlock = 8192;         // pairs per block of the parallel radix passes
constexpr uint32_t kRunBlock = 8;             // particles per copy of a run of kept particles

/// The displaced particles, sorted by (cell, index): each one's cell and slot.
struct Displaced {
    const uint32_t* cell = nullptr;
    const uint32_t* slot = nullptr;
    uint32_t count = 0;
};

/// The displaced particles of each chunk, in index order, at the start of
/// the chunk's range of stage_index; their number in chunk_scratch (an
/// exclusive prefix after the scan; chunk_scratch[chunks] holds the total).
struct ChunkLists {
    const uint32_t* index;
    const uint64_t* offset;
    uint32_t chunks;

    const uint32_t* list(uint32_t chunk) const { return index + uint64_t{chunk} * kMergeGrain; }
    uint32_t size(uint32_t chunk) const { return static_cast<uint32_t>(offset[chunk + 1] - offset[chunk]); }
};

/// Last frame's cell starts, rewritten in place with this frame's: bounded,
/// every cell; unbounded, every cell of the dense box (compacted afterwards).
uint32_t* merge_starts(GridState& s, const RebuildFrame& f) { return f.bounded ? s.cell_start : s.dense_start; }

/// Finds the displaced particles of every chunk and copies each one's
/// index, position and radius into the chunk's lists. False when some
/// chunk has more than its share (then nothing but scratch was written).
template <uint32_t D, bool Radius>
bool classify(GridState& s, const RebuildFrame& f, uint32_t kept_limit, const ThreadBackend& b) {
    const uint32_t* const cell = s.particle_cell;
    const uint32_t* const old_start = merge_starts(s, f);
    const KeyParams& k = f.keys;
    uint32_t too_many = 0;
    parallel_chunks(b, f.n, kMergeGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        if (std::atomic_ref<uint32_t>(too_many).load(std::memory_order_relaxed) != 0) return;
        // The lists fill the chunk's own range from its start: they never
        // pass the particles looked at so far.
        uint32_t* const list = s.stage_index + begin;
        float* pos[3] = {nullptr, nullptr, nullptr};
        for (uint32_t d = 0; d < D; ++d)
            pos[d] = s.stage_pos[d] + begin;
        float* const radius = s.stage_radius + begin;
        const uint32_t capacity = (end - begin) / kDisplacedShare + kDisplacedSlack;
        uint32_t count = 0;
        auto add = [&](uint32_t i) {
            list[count] = i;
            for (uint32_t d = 0; d < D; ++d)
                pos[d][count] = k.coord[d][i];
            if constexpr (Radius) radius[count] = k.radius[i];
            ++count;
        };
        // Particle i is kept when i lies in its cell's range of last frame:
        // each test stands alone (a walk along last frame's cells would make
        // every step wait for the load of the one before), and the ranges
        // of neighbouring particles are neighbours in cell_start.
        const uint32_t kept_end = std::min(end, kept_limit);
        for (uint32_t i = begin; i < kept_end; ++i) {
            const uint32_t c = cell[i];
            const bool kept = (old_start[c] <= i) & (i < old_start[c + 1]);
            if (!kept) [[unlikely]] {
                add(i);
                if (count > capacity) break;
            }
        }
        // Positions last frame did not have: all displaced.
        for (uint32_t i = std::max(begin, kept_end); i < end && count <= capacity; ++i)
            add(i);
        if (count > capacity) {
            std::atomic_ref<uint32_t>(too_many).store(1, std::memory_order_relaxed);
            return;
        }
        s.chunk_scratch[begin / kMergeGrain] = count;
    });
    return too_many == 0;
}

/// Two buffers of `quarter` (cell, slot) pairs, in stage_cell.
struct SortBuffers {
    uint32_t* cell[2];
    uint32_t* slot[2];
};

SortBuffers sort_buffers(GridState& s, uint32_t quarter) {
    uint32_t* a = s.stage_cell;
    return {{a, a + 2 * uint64_t{quarter}}, {a + quarter, a + 3 * uint64_t{quarter}}};
}

/// LSD radix sort of the displaced particles by cell, in as few passes of
/// at most kMaxDigitBits as the cells need (P3's 140k cells: two of 9
/// bits). The pairs are gathered from the chunk lists in index order (so
/// the sort is stable by index) into buffer 1, then ping-pong; a digit every
/// displaced cell shares is skipped. `*in` is the buffer holding the result.
/// Each pass runs over blocks of kSortBlock pairs in parallel, with a row of
/// digit counts per block in cell_cursor (not used by this path); a stable
/// sort has one result, so the blocks do not change it.
Displaced sort_displaced(GridState& s, const ChunkLists& lists, const SortBuffers& buffers, uint32_t cells,
                         uint32_t cursor_room, const ThreadBackend& b, uint32_t* in) {
    const uint32_t total = static_cast<uint32_t>(lists.offset[lists.chunks]);
    parallel_chunks(b, lists.chunks, 1, [&](uint32_t first, uint32_t last, uint32_t) {
        const uint32_t* const cell = s.particle_cell;
        for (uint32_t ch = first; ch < last; ++ch) {
            const uint32_t* list = lists.list(ch);
            const uint32_t first_slot = ch * kMergeGrain;
            const uint64_t at = lists.offset[ch];
            for (uint32_t k = 0, size = lists.size(ch); k < size; ++k) {
                buffers.cell[1][at + k] = cell[list[k]];
                buffers.slot[1][at + k] = first_slot + k;
            }
        }
    });
    const uint32_t bits = cells <= 1 ? 1 : static_cast<uint32_t>(std::bit_width(cells - 1));
    const uint32_t passes = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
    const uint32_t digit_bits = (bits + passes - 1) / passes;
    const uint32_t digits = 1u << digit_bits;
    const uint32_t mask = digits - 1;
    // Rows of counts: cell_cursor holds cursor_room entries; a block of its
    // own if the rows do not fit.
    uint32_t blocks = chunk_count(total, kSortBlock);
    uint32_t block_size = kSortBlock;
    if (blocks == 0 || uint64_t{blocks} * digits > cursor_room) {
        blocks = 1;
        block_size = total;
    }
    uint32_t stack_counts[1u << kMaxDigitBits];
    uint32_t* const counts = uint64_t{blocks} * digits <= cursor_room ? s.cell_cursor : stack_counts;
    uint32_t from = 1;
    for (uint32_t pass = 0; pass < passes && total > 0; ++pass) {
        const uint32_t shift = pass * digit_bits;
        const uint32_t* const from_cell = buffers.cell[from];
        const uint32_t* const from_slot = buffers.slot[from];
        parallel_chunks(b, total, block_size, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint32_t* row = counts + uint64_t{begin / block_size} * digits;
            std::fill(row, row + digits, 0u);
            for (uint32_t k = begin; k < end; ++k)
                ++row[(from_cell[k] >> shift) & mask];
        });
        // Offsets in (digit, block) order; a digit every pair shares keeps the order.
        const uint32_t first_digit = (from_cell[0] >> shift) & mask;
        uint32_t first_digit_count = 0;
        uint32_t running = 0;
        for (uint32_t v = 0; v < digits; ++v)
            for (uint32_t blk = 0; blk < blocks; ++blk) {
                uint32_t& c = counts[uint64_t{blk} * digits + v];
                const uint32_t add = c;
                if (v == first_digit) first_digit_count += add;
                c = running;
                running += add;
            }
        if (first_digit_count == total) continue;
        uint32_t* const to_cell = buffers.cell[from ^ 1];
        uint32_t* const to_slot = buffers.slot[from ^ 1];
        parallel_chunks(b, total, block_size, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint32_t* row = counts + uint64_t{begin / block_size} * digits;
            for (uint32_t k = begin; k < end; ++k) {
                const uint32_t c = from_cell[k];
                const uint32_t at = row[(c >> shift) & mask]++;
                to_cell[at] = c;
                to_slot[at] = from_slot[k];
            }
        });
        from ^= 1;
    }
    *in = from;
    return {buffers.cell[from], buffers.slot[from], total};
}

/// The displaced particles in index order across the chunk lists: a
/// cursor that walks them from a position on (from <= n). rank() counts
/// those before the current one.
struct DisplacedCursor {
    const ChunkLists& lists;
    uint32_t chunk;
    uint32_t at;       // within the chunk's list
    uint32_t position; // index of the current one; kNone past the last

    DisplacedCursor(const ChunkLists& l, uint32_t from) : lists(l), chunk(from / kMergeGrain), at(0), position(kNone) {
        if (chunk >= lists.chunks) return;
        const uint32_t* first = lists.list(chunk);
        at = static_cast<uint32_t>(std::lower_bound(first, first + lists.size(chunk), from) - first);
        settle();
    }
    void next() {
        ++at;
        settle();
    }
    /// Displaced particles with index < position (all of them past the last).
    uint32_t rank() const { return static_cast<uint32_t>(lists.offset[chunk] + at); }
    void settle() {
        while (chunk < lists.chunks && at == lists.size(chunk)) {
            ++chunk;
            at = 0;
        }
        position = chunk < lists.chunks ? lists.list(chunk)[at] : kNone;
    }
};

/// One chunk of write_cells: its cells [c0, c1), their old positions
/// [lo, hi) (clamped to kept_limit), the next chunk's first old start
/// (end_old: cell_start[c1] may already be overwritten) and the range
/// [d_first, d_end) of the sorted displaced particles that fall in its cells.
struct CellChunk {
    uint32_t c0, c1;
    uint32_t lo, hi;
    uint32_t end_old;
    uint32_t d_first, d_end;
};

/// Saves the first cell of every chunk of write_cells (cells holding about
/// kMergeGrain of last frame's positions each) and that cell's old start,
/// before any chunk overwrites them: bound_cell and bound_old, chunks + 1
/// entries each. Reads the old starts.
void save_chunk_bounds(const uint32_t* start, uint32_t cells, uint32_t chunks, uint32_t* bound_cell,
                       uint32_t* bound_old) {
    for (uint32_t k = 0; k <= chunks; ++k) {
        const uint32_t c =
            k == 0        ? 0
            : k == chunks ? cells
                          : static_cast<uint32_t>(std::lower_bound(start, start + cells + 1, k * kMergeGrain) - start);
        bound_cell[k] = c;
        bound_old[k] = start[c];
    }
}

/// Chunk k of write_cells, from the saved bounds and the sorted displaced cells.
CellChunk cell_chunk(uint32_t k, const uint32_t* bound_cell, const uint32_t* bound_old, uint32_t kept_limit,
                     const Displaced& moved) {
    CellChunk ch;
    ch.c0 = bound_cell[k];
    ch.c1 = bound_cell[k + 1];
    ch.lo = std::min(bound_old[k], kept_limit);
    ch.hi = std::min(bound_old[k + 1], kept_limit);
    ch.end_old = bound_old[k + 1];
    const uint32_t* const cell = moved.cell;
    ch.d_first = static_cast<uint32_t>(std::lower_bound(cell, cell + moved.count, ch.c0) - cell);
    ch.d_end = static_cast<uint32_t>(std::lower_bound(cell + ch.d_first, cell + moved.count, ch.c1) - cell);
    return ch;
}

/// The particles of one chunk's cells: order, sorted positions and radii at
/// the chunk's output positions. Reads the old starts of its cells (before
/// write_chunk_starts overwrites them), the input positions of its kept
/// particles and the staged ones of its displaced particles.
///
/// One walk over the chunk's old positions merges the kept particles with
/// the displaced ones by (cell, index): runs of kept particles are copied
/// whole, and branches fire only at displaced particles. A displaced particle
/// goes before the first kept particle of its cell with a larger index: its
/// cell's old range lies wholly before or after its index (else it would be
/// kept), so that is the range's start or end. These insertion points ascend
/// with (cell, index), and between them and the displaced positions the kept
/// particles are runs copied as they stand.
template <uint32_t D, bool Radius>
void merge_chunk_particles(GridState& s, const RebuildFrame& f, const ChunkLists& lists, const Displaced& moved,
                           uint32_t kept_limit, const uint32_t* start, const CellChunk& ch) {
    // Local copies: stores into the frame's arrays must not make the
    // compiler reload these for every particle.
    uint32_t* __restrict const order = s.order;
    float* __restrict out[3] = {s.sorted[0], s.sorted[1], s.sorted[2]};
    float* __restrict const out_radius = s.sorted_radius;
    const float* in[3] = {f.keys.coord[0], f.keys.coord[1], f.keys.coord[2]};
    const float* const in_radius = f.keys.radius;
    const uint32_t* const moved_index = s.stage_index;
    const float* moved_pos[3] = {s.stage_pos[0], s.stage_pos[1], s.stage_pos[2]};
    const float* const moved_radius = s.stage_radius;
    const uint32_t* const moved_cell = moved.cell;
    const uint32_t* const moved_slot = moved.slot;
    const uint32_t c1 = ch.c1, lo = ch.lo, hi = ch.hi, d_end = ch.d_end;

    auto old_start = [&](uint32_t c) { return std::min(c == c1 ? ch.end_old : start[c], kept_limit); };
    auto insertion = [&](uint32_t at) {
        if (at >= d_end) return kNone;
        const uint32_t c = moved_cell[at];
        const uint32_t begin = old_start(c);
        return moved_index[moved_slot[at]] < begin ? begin : old_start(c + 1);
    };
    DisplacedCursor out_of_place(lists, lo);
    uint32_t p = lo - out_of_place.rank() + ch.d_first;
    const uint32_t p_end = hi - DisplacedCursor(lists, hi).rank() + d_end; // this chunk's output
    uint32_t dp = ch.d_first;
    auto emit_moved = [&](uint32_t at) {
        const uint32_t slot = moved_slot[at];
        order[p] = moved_index[slot];
        for (uint32_t d = 0; d < D; ++d)
            out[d][p] = moved_pos[d][slot];
        if constexpr (Radius) out_radius[p] = moved_radius[slot];
        ++p;
    };
    uint32_t next_insert = insertion(dp);
    for (uint32_t i = lo;;) {
        while (next_insert <= i) {
            emit_moved(dp);
            next_insert = insertion(++dp);
        }
        if (i >= hi) break;
        if (i == out_of_place.position) {
            out_of_place.next();
            ++i;
            continue;
        }
        const uint32_t run_end = std::min({hi, out_of_place.position, next_insert});
        const uint32_t len = run_end - i;
        const uint32_t whole = (len + kRunBlock - 1) / kRunBlock * kRunBlock;
        if (p + whole <= p_end && i + whole <= f.n) {
            // Whole blocks (runs are short: a few particles per cell):
            // what a last block writes past the run lies in this chunk's
            // output and is written again after, and reads stay in the input.
            for (uint32_t t = 0; t < whole; t += kRunBlock) {
                for (uint32_t u = 0; u < kRunBlock; ++u)
                    order[p + t + u] = i + t + u;
                for (uint32_t d = 0; d < D; ++d)
                    std::memcpy(out[d] + p + t, in[d] + i + t, kRunBlock * sizeof(float));
                if constexpr (Radius) std::memcpy(out_radius + p + t, in_radius + i + t, kRunBlock * sizeof(float));
            }
        } else {
            for (uint32_t t = 0; t < len; ++t) {
                order[p + t] = i + t;
                for (uint32_t d = 0; d < D; ++d)
                    out[d][p + t] = in[d][i + t];
                if constexpr (Radius) out_radius[p + t] = in_radius[i + t];
            }
        }
        p += len;
        i = run_end;
    }
    for (; dp < d_end; ++dp)
        emit_moved(dp);
}

/// The starts of one chunk's cells, over their old starts: old start, minus
/// the displaced before it, plus the displaced of lower cells. Each old start
/// is read just before it is overwritten; no other chunk writes these cells.
///
/// The cells run in segments over which the second term holds (up to the
/// next displaced particle's cell); the first changes only where an old start
/// passes a displaced position.
void write_chunk_starts(uint32_t* start, const ChunkLists& lists, const Displaced& moved, uint32_t kept_limit,
                        const CellChunk& ch) {
    const uint32_t* const moved_cell = moved.cell;
    const uint32_t c1 = ch.c1, d_end = ch.d_end;
    auto old_start = [&](uint32_t c) { return std::min(c == c1 ? ch.end_old : start[c], kept_limit); };
    DisplacedCursor displaced_before(lists, ch.lo);
    uint32_t rank = displaced_before.rank();
    uint32_t next_displaced = displaced_before.position;
    uint32_t before = ch.d_first; // displaced of cells below c
    for (uint32_t c = ch.c0; c < c1;) {
        while (before < d_end && moved_cell[before] < c)
            ++before;
        const uint32_t segment_end = before < d_end ? std::min(moved_cell[before] + 1, c1) : c1;
        for (; c < segment_end; ++c) {
            const uint32_t old = old_start(c);
            if (next_displaced < old) [[unlikely]] {
                while (displaced_before.position < old)
                    displaced_before.next();
                rank = displaced_before.rank();
                next_displaced = displaced_before.position;
            }
            start[c] = old - rank + before;
        }
    }
}

/// Writes the frame: cell starts, the permutation and the sorted copy, by
/// chunks of cells holding about kMergeGrain of last frame's positions.
/// Their bounds are saved first (in bound_cell and bound_old, room for
/// kept_limit / kMergeGrain + 2 each), before any chunk overwrites
/// cell_start; then each chunk writes its particles while cell_start still
/// holds its cells' old starts, and then their new starts.
template <uint32_t D, bool Radius>
void write_cells(GridState& s, const RebuildFrame& f, const ChunkLists& lists, const Displaced& moved,
                 uint32_t kept_limit, uint32_t* bound_cell, uint32_t* bound_old, const ThreadBackend& b) {
    uint32_t* const start = merge_starts(s, f);
    const uint32_t chunks = chunk_count(kept_limit, kMergeGrain);
    save_chunk_bounds(start, f.cells, chunks, bound_cell, bound_old);
    parallel_chunks(b, chunks, 1, [&](uint32_t first, uint32_t last, uint32_t) {
        for (uint32_t k = first; k < last; ++k) {
            const CellChunk ch = cell_chunk(k, bound_cell, bound_old, kept_limit, moved);
            if (ch.c0 == ch.c1) continue;
            merge_chunk_particles<D, Radius>(s, f, lists, moved, kept_limit, start, ch);
            write_chunk_starts(start, lists, moved, kept_limit, ch);
        }
    });
    start[f.cells] = f.n;
}

template <uint32_t D, bool Radius>
bool merge(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    const uint32_t n = f.n;
    const uint32_t kept_limit = std::min(s.count, n); // positions last frame had
    if (!classify<D, Radius>(s, f, kept_limit, b)) return false;
    const uint32_t chunks = chunk_count(n, kMergeGrain);
    const uint64_t total = scan_chunk_sums(s.chunk_scratch, chunks);
    s.chunk_scratch[chunks] = total;
    // The sort's two buffers hold n/4 each (at most n/8 + n/256 + 16
    // displaced pass the chunks' check); the write's bounds need
    // n/4096 + 2 each.
    const uint32_t quarter = n / 4;
    if (total > quarter) return false;
    const ChunkLists lists{s.stage_index, s.chunk_scratch, chunks};
    const SortBuffers buffers = sort_buffers(s, quarter);
    uint32_t in = 0;
    // cell_cursor: one entry per cell and one more (bounded), max_cells + 1 (unbounded).
    const uint32_t cursor_room = (f.bounded ? f.cells : f.max_cells) + 1;
    const Displaced moved = sort_displaced(s, lists, buffers, f.cells, cursor_room, b, &in);
    write_cells<D, Radius>(s, f, lists, moved, kept_limit, buffers.cell[in ^ 1], buffers.slot[in ^ 1], b);
    return true;
}

} // namespace

bool merge_possible(const GridState& s, const RebuildFrame& f) {
    if (!s.built || f.n < kMergeMinParticles || s.count == 0) return false;
    if (f.bounded) return true;
    // Unbounded: this frame's dense box is last frame's, and dense_start
    // still holds last frame's starts over it.
    if (!f.dense || !s.mapped || !s.box_starts) return false;
    for (uint32_t d = 0; d < 3; ++d)
        if (f.box_lo[d] != s.map_lo[d] || f.extent[d] != s.map_extent[d]) return false;
    return true;
}

bool rebuild_merged(GridState& s, const RebuildFrame& f, const ThreadBackend& b) {
    HASHGRID_ASSERT(merge_possible(s, f), "rebuild_merged needs last frame's starts over this frame's cells");
    HASHGRID_ASSERT(!f.bounded || s.cell_count == f.cells, "bounded worlds keep their cells");
    const bool radius = f.keys.radius != nullptr;
    if (f.dims == 3) return radius ? merge<3, true>(s, f, b) : merge<3, false>(s, f, b);
    return radius ? merge<2, true>(s, f, b) : merge<2, false>(s, f, b);
}

} // namespace hashgrid::detail

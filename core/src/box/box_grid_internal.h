// SPDX-License-Identifier: MIT
// BoxGrid's private state and the helpers shared by box_grid.cpp (config,
// layout, init), the rebuild (box_grid_rebuild.cpp and the validate, update,
// changed and shift files it leads to; its steps: box_rebuild_steps.h), and
// the pair search (box_grid_pairs.cpp, box_grid_coarse.cpp).
//
// Memory: one block from init(). Its first bytes hold BoxState (the pointers
// and the frame's counts), followed by the arrays it points to (64-byte
// aligned each, sizes from the config only). "Frame" arrays describe the last
// successful rebuild and are only written after the next one has passed
// validation and the entry-capacity check; "scratch" arrays may be
// overwritten by any call.
#pragma once

#include "common/bad_input.h"
#include "common/chunks.h"
#include "common/status_make.h"
#include "lattice/cell_coords.h"
#include "lattice/lattice.h"

#include "hashgrid/box_grid.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/objects.h"

#include <bit>
#include <cstdint>

namespace hashgrid {

namespace detail {

class PhaseTrace; // trace_scope.h

/// True when spans with `count > 0` lack a coordinate array the grid reads
/// (x and y, and z in 3D). Checked in every build: a null span is a crash.
inline bool spans_missing(const BoxSpans& in, uint32_t dims) {
    return in.count > 0 && (in.min_x == nullptr || in.min_y == nullptr || in.max_x == nullptr || in.max_y == nullptr ||
                            (dims == 3 && (in.min_z == nullptr || in.max_z == nullptr)));
}

/// Objects per chunk of the per-object passes (at most kMaxObjectChunks chunks).
inline constexpr uint32_t kObjectGrain = 4096;
inline constexpr uint32_t kMaxObjectChunks = 1024;
/// Entries per chunk of the radix sort and the cell-run passes (at most kMaxEntryChunks chunks).
inline constexpr uint32_t kEntryGrain = 16384;
inline constexpr uint32_t kMaxEntryChunks = 64;
/// Widest radix digit: 2^12 counters per chunk stay in L1.
inline constexpr uint32_t kMaxDigitBits = 12;
/// Pair search: cells per chunk (at least), chunks of cells, chunks of the
/// large-object tests, chunks of queries (find_pairs_with).
inline constexpr uint32_t kCellPairGrain = 128;
inline constexpr uint32_t kMaxCellChunks = 512;
inline constexpr uint32_t kLargePairGrain = 16; // large objects per chunk, at least
/// Pairs of one large object sorted on the stack; beyond, it is tested
/// against every object in index order.
inline constexpr uint32_t kLargeHits = 1024;
inline constexpr uint32_t kMaxLargeChunks = 256;
inline constexpr uint32_t kQueryGrain = 16;
inline constexpr uint32_t kMaxPairChunks = kMaxCellChunks + kMaxLargeChunks;
/// Pairs per block of the pair pool.
inline constexpr uint32_t kBoxPairBlock = 256;

/// Grain that keeps ceil(count / grain) <= max_chunks, at least `minimum`. Depends on the count only.
inline uint64_t grain_for(uint64_t count, uint64_t minimum, uint64_t max_chunks) {
    const uint64_t g = (count + max_chunks - 1) / max_chunks;
    return g > minimum ? g : minimum;
}

/// Entries (objects in cells) in sorted order carry what the pair test needs,
/// as structure-of-arrays (SIMD over the entries of a cell): the box (no z
/// arrays in 2D) and, per axis, whether this cell is the object's first cell
/// on that axis (bit d of entry_flags; bit 2 always set in 2D). A pair of
/// entries in cell c is reported only when, on every axis, one of the two has
/// its bit set: then c is cell(max(a.min, b.min)), the cell of the
/// intersection's minimum corner (cell() is monotone, so cell(max(u, v)) =
/// max(cell(u), cell(v))). Every entry array has kEntryPad readable slots at
/// the end (vector loads past the last entry, masked out).
inline constexpr uint32_t kEntryPad = 8;

/// An object's box and cell range on three axes (z: 0 in 2D), the value the
/// per-object code works on; stored per object as an ObjectRecord.
struct ObjectScratch {
    float min[3];
    float max[3];
    int32_t lo[3];
    int32_t hi[3];
};

/// Rebuild scratch per object (original order), stored with D axes: 32 bytes
/// in 2D, 48 in 3D. Validation writes every object's and the merge gathers
/// boxes from them at random, so the smaller 2D record is memory traffic and
/// cache lines saved on both. Aligned: a 2D box never straddles a line.
template <uint32_t D>
struct alignas(D == 2 ? 32 : 16) ObjectRecord {
    float min[D];
    float max[D];
    int32_t lo[D];
    int32_t hi[D];
};
static_assert(sizeof(ObjectRecord<2>) == 32 && sizeof(ObjectRecord<3>) == 48, "ObjectRecord layout");

/// The record's values on three axes (z: 0 in 2D).
template <uint32_t D>
[[gnu::always_inline]] inline ObjectScratch unpack(const ObjectRecord<D>& r) {
    ObjectScratch o{};
    for (uint32_t d = 0; d < D; ++d) {
        o.min[d] = r.min[d];
        o.max[d] = r.max[d];
        o.lo[d] = r.lo[d];
        o.hi[d] = r.hi[d];
    }
    return o;
}

/// Stores the first D axes of `o`.
template <uint32_t D>
[[gnu::always_inline]] inline void pack(ObjectRecord<D>& r, const ObjectScratch& o) {
    for (uint32_t d = 0; d < D; ++d) {
        r.min[d] = o.min[d];
        r.max[d] = o.max[d];
        r.lo[d] = o.lo[d];
        r.hi[d] = o.hi[d];
    }
}

/// The bounds of a frame per axis, in the order BoxState::bound_hits counts
/// them: cell_lo, cell_hi, box_lo, box_hi, max_span.
inline constexpr uint32_t kBoundKinds = 5;

/// What a block of 64 objects (box_grid_validate.cpp) adds to its chunk: its
/// small objects' entries and bounds, its large objects. Kept per block so
/// that a block whose boxes did not change is counted without reading them.
struct BlockSummary {
    uint64_t entries;
    uint32_t large;
    uint32_t any_small; // 1 when the bounds below hold a small object
    int32_t cell_lo[3];
    int32_t cell_hi[3];
    int32_t span[3];
    float box_lo[3];
    float box_hi[3];
};

/// Per chunk of objects in rebuild: validation, entry and large counts, the
/// box of occupied cells (then the chunk's output offsets).
struct ObjectChunk {
    uint64_t entries;
    uint64_t entry_offset;
    uint32_t large;
    uint32_t large_offset;
    BadParticle bad;
    int32_t cell_lo[3];
    int32_t cell_hi[3];
    float box_lo[3]; // union of the chunk's small boxes (valid when entries > 0)
    float box_hi[3];
    int32_t span[3]; // widest cell span of its small objects
    // Against the previous frame (when compared, see BoxState::change):
    uint64_t removed;       // entries of the objects whose cell range changed, in the previous frame
    uint64_t added;         // their entries in this frame
    uint32_t moved;         // objects whose cell range changed
    uint32_t large_changed; // objects that became or stopped being large (or far)
    uint64_t moved_offset;  // where the chunk's new entries go (after the scan)
    // Listed rebuilds (box_grid_changed.cpp): small objects on each bound.
    uint32_t hits[3][kBoundKinds];
};

/// Per chunk of a listed rebuild's changed objects (box_grid_changed.cpp):
/// what its evaluation found, then where its left cells' keys go.
struct ListedChunk {
    uint32_t bad_count;
    uint32_t bad_index; // lowest offending object (kNone: none)
    StatusCode bad_code;
    bool large_changed;                    // an object became or stopped being large
    bool all_categories;                   // the AND of the categories must be taken again
    uint32_t common;                       // AND of the chunk's new categories
    uint64_t added;                        // entries of its objects that changed cells, new
    uint64_t removed;                      // and old (then: where its left keys go)
    uint32_t on_bound[3][kBoundKinds];     // objects whose old box lay on a bound
    double offered[3][kBoundKinds];        // bound of its new small boxes
    uint32_t offered_hits[3][kBoundKinds]; // how many lie on it (0: none offered)
};
inline constexpr uint32_t kMaxListedChunks = 64;
/// Listed objects per chunk, at least.
inline constexpr uint32_t kListedGrain = 256;

/// Per chunk of an update's merge (box_grid_update.cpp): its cells and
/// entries, then where they go.
struct MergeCounts {
    uint64_t cells;
    uint64_t entries;
};

/// How each object changed since the previous frame, as two bitmaps (12.5 KB
/// each for 100k objects: the update's passes over every entry look them up
/// from L1). moved: its box differs from the last frame's; leaving: its cell
/// range differs, so its entries are removed and inserted again (implies
/// moved). Neither: same box, same cells.
struct ChangeBits {
    uint64_t* moved = nullptr; // (max_objects + 63) / 64 words each
    uint64_t* leaving = nullptr;
    [[nodiscard]] bool is_moved(uint32_t i) const { return ((moved[i >> 6] >> (i & 63)) & 1u) != 0; }
    [[nodiscard]] bool is_leaving(uint32_t i) const { return ((leaving[i >> 6] >> (i & 63)) & 1u) != 0; }
};

/// The objects of a frame binned by the cell of their minimum corner in a
/// coarse dense lattice (cells of 2^level fine cells per axis), the small
/// objects and the large ones in two grids (the large grid's cells as wide or
/// wider: large_level), for the large
/// objects' pair search (box_grid_coarse.cpp): each object is in exactly one
/// coarse cell, so a large object reads each candidate once, and its coarse
/// cells, instead of every fine cell and entry its box covers and every
/// other large object.
struct CoarseGrid {
    uint32_t level = 0;
    int32_t lo[3] = {0, 0, 0}; // coarse coordinates of cell 0 (z = 0 in 2D)
    uint32_t n[3] = {1, 1, 1}; // cells per axis
    /// Widest fine-cell span (max cell - min cell) of the small objects: one
    /// overlapping fine cells [a, b] has its minimum-corner cell in [a - reach, b].
    int64_t reach[3] = {0, 0, 0};
    /// The same for the large objects (whose cells are clamped into the grid;
    /// 64 bits: 2D keys span more than 2^31 cells).
    int64_t large_reach[3] = {0, 0, 0};
    /// The large objects' grid has cells of its own, 2^large_level fine
    /// cells wide (at least the small grid's, about the large objects' mean
    /// span: a scan for the large objects near a large one reads a few rows),
    /// over the same fine cells.
    uint32_t large_level = 0;
    int32_t large_lo[3] = {0, 0, 0};
    uint32_t large_n[3] = {1, 1, 1};
    /// Small objects: the first `small` records of coarse_object, cell c's
    /// at [coarse_start[c], coarse_start[c + 1]). Large objects: the records
    /// after them, cell c's at small + [large_start[c], large_start[c + 1]).
    uint32_t small = 0;
    uint32_t* large_start = nullptr;
};

/// An object of a coarse grid: its box and index in one 32-byte record, so
/// binning writes one scattered line per two objects and a scan reads them
/// in order (z unused in 2D).
struct alignas(32) CoarseObject {
    float min[3];
    uint32_t object;
    float max[3];
    uint32_t unused;
};
static_assert(sizeof(CoarseObject) == 32, "CoarseObject layout");

/// Coarse cells the grid may have: two per object, and at least the eight a
/// grid of two cells per axis needs (every grid fits at level 31).
inline uint64_t coarse_cell_capacity(uint32_t max_objects) { return 2 * uint64_t{max_objects} + 8; }

/// Which of BoxState's derived arrays hold the current frame. The frame
/// arrays (cells, entries, the frame's copies of the objects) always do; these
/// may lag behind it, and each path of the rebuild reads them only when set.
struct BoxFrameValidity {
    /// `object` holds the frame's boxes and cell ranges: the next rebuild
    /// may compare with them (merge, listed) instead of a full build.
    bool objects = false;
    /// bound_hits counts the frame's small objects on each of its bounds.
    bool bound_hits = false;
    /// block_summary holds every block of the frame (a listed rebuild
    /// changes objects without their blocks').
    bool block_summaries = false;
    /// row_start holds the frame's row table (not built when the occupied box
    /// has more rows than it has slots: queries then search for rows).
    bool rows = false;

    /// A rebuild that validation may still reject has begun: validation
    /// overwrites `object` and block_summary, and the full build does not
    /// count bound hits. The row table stays: only an accepted frame rewrites it.
    void invalidate() {
        objects = false;
        bound_hits = false;
        block_summaries = false;
    }
    /// A rebuild from every object's box was accepted: validation wrote every
    /// object's record and every block's summary.
    void accept_full() {
        objects = true;
        block_summaries = true;
    }
};

/// Everything BoxGrid points to; lives at the start of the block.
struct BoxState {
    uint32_t dims = 3;
    bool layers = false; // this frame has a category or mask span
    Lattice cells{};     // make_lattice(config)

    // Capacities (from the config).
    uint32_t max_objects = 0;
    uint32_t max_entries = 0;
    uint32_t pool_blocks = 0;

    // Frame: the last successful rebuild.
    uint32_t object_count = 0;
    uint32_t entry_count = 0;
    uint32_t cell_count = 0;
    uint32_t large_count = 0;
    BoxFrameBounds bounds{}; // of the small objects (meaningful when cell_count > 0)
    float* min[3] = {};
    float* max[3] = {};
    uint32_t* category = nullptr;
    uint32_t* mask = nullptr;
    uint32_t category_common = ~0u; // AND of the frame's categories (BoxGridView::category_common)
    uint8_t* is_large = nullptr;
    uint32_t* large_object = nullptr;
    uint64_t* cell_key = nullptr;     // max_entries (cells <= entries)
    uint32_t* cell_start = nullptr;   // max_entries + 1
    uint32_t* row_start = nullptr;    // max_entries + 1 (BoxGridView::row_start; when valid.rows)
    uint32_t* entry_object = nullptr; // one of payload[0], payload[1]
    float* entry_min[3] = {};         // max_entries + kEntryPad each (z: 3D only)
    float* entry_max[3] = {};
    uint32_t* entry_flags = nullptr; // max_entries + kEntryPad
    // The other half of the frame's cell and entry arrays: an update (box_grid_update.cpp)
    // merges the current frame into them, then the two halves swap.
    uint64_t* spare_cell_key = nullptr;
    uint32_t* spare_cell_start = nullptr;
    float* spare_entry_min[3] = {};
    float* spare_entry_max[3] = {};
    uint32_t* spare_entry_flags = nullptr;
    // How many small objects lie on each bound of the frame (per axis, in
    // kBoundKinds order), so that a listed rebuild (box_grid_changed.cpp) knows
    // whether a changed object leaving a bound shrinks it. Taken by the first
    // listed rebuild after a full one, then kept up to date (valid.bound_hits).
    uint32_t bound_hits[3][kBoundKinds] = {};
    BoxFrameValidity valid{};

    // Scratch.
    uint32_t* payload[2] = {};             // radix-sort ping-pong of object indices (frame: entry_object); + kEntryPad
    uint64_t* sort_key[2] = {};            // radix-sort ping-pong of keys (used as uint32 when they fit)
    void* object = nullptr;                // max_objects ObjectRecord<dims> (object_records)
    BlockSummary* block_summary = nullptr; // (max_objects + 63) / 64
    ChangeBits change{};                   // per object when compared (scratch)
    ObjectChunk* object_chunk = nullptr;   // kMaxObjectChunks
    uint32_t* radix_hist = nullptr;        // kMaxEntryChunks << kMaxDigitBits
    uint64_t* entry_chunk = nullptr;       // kMaxEntryChunks + 1
    MergeCounts* merge_counts = nullptr;   // kMaxEntryChunks
    ListedChunk* listed_chunk = nullptr;   // kMaxListedChunks
    BadParticle* query_bad = nullptr;      // kMaxPairChunks
    // The pair searches' per-chunk records (common/pair_output.h), kMaxPairChunks each.
    uint32_t* pair_chunk_first_block = nullptr;
    uint64_t* pair_chunk_count = nullptr;
    uint8_t* pair_chunk_state = nullptr;
    Pair* pool = nullptr;           // pool_blocks * kBoxPairBlock
    uint32_t* block_next = nullptr; // pool_blocks
    // The coarse grids of the small and the large objects (scratch: find_pairs
    // builds them when its large objects' fine scans would read more cells
    // than the frame has objects).
    CoarseGrid coarse{};
    uint32_t* coarse_cell = nullptr;       // per object: its coarse cell (large: in the large grid)
    uint32_t* coarse_start = nullptr;      // 2 * (coarse_cell_capacity + 2): the small grid's, the large grid's
    CoarseObject* coarse_object = nullptr; // max_objects: each grid's objects by cell, then index
};

/// An entry's first-cell bits (bit d: the cell is the object's first on axis
/// d) in cell (x, y, z) of an object whose range starts at `lo` (z = lo[2] =
/// 0 in 2D: bit 2 always set there).
inline uint32_t first_cell_flags(int32_t x, int32_t y, int32_t z, const int32_t* lo) {
    return (x == lo[0] ? 1u : 0u) | (y == lo[1] ? 2u : 0u) | (z == lo[2] ? 4u : 0u);
}

/// Writes an object's box into entry `at` of the entry arrays (no z arrays in 2D).
template <uint32_t D>
[[gnu::always_inline]] inline void
put_entry_box(float* __restrict min_x, float* __restrict min_y, float* __restrict min_z, float* __restrict max_x,
              float* __restrict max_y, float* __restrict max_z, uint32_t at, const ObjectRecord<D>& o) {
    min_x[at] = o.min[0];
    min_y[at] = o.min[1];
    max_x[at] = o.max[0];
    max_y[at] = o.max[1];
    if constexpr (D == 3) {
        min_z[at] = o.min[2];
        max_z[at] = o.max[2];
    }
}

/// The per-object records of a box grid of D dimensions.
template <uint32_t D>
inline ObjectRecord<D>* object_records(const BoxState& s) {
    return static_cast<ObjectRecord<D>*>(s.object);
}

/// Unbounded worlds: an object with a coordinate beyond the cell-key range is
/// kept with the large objects (tested against every object and by every
/// query directly, in float: exact at any finite coordinate, O(N) each). Its
/// scratch range is marked empty (hi < lo on x).
inline void mark_far(ObjectScratch& o) {
    o.lo[0] = 1;
    o.hi[0] = 0;
}
inline bool is_far(const ObjectScratch& o) { return o.hi[0] < o.lo[0]; }

/// Cells covered by a range (at most 2^64 - 1 by the key limits).
inline uint64_t cells_covered(const ObjectScratch& o) {
    return static_cast<uint64_t>(int64_t{o.hi[0]} - o.lo[0] + 1) *
           static_cast<uint64_t>(int64_t{o.hi[1]} - o.lo[1] + 1) *
           static_cast<uint64_t>(int64_t{o.hi[2]} - o.lo[2] + 1);
}

/// Bit pattern of a float (boxes are compared with the previous frame's bit for bit).
inline uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }

/// Calls fn(key) for every cell of a small object's range, by ascending key.
template <uint32_t D, typename Fn>
void for_each_cell_key(const ObjectScratch& o, Fn&& fn) {
    for (int32_t z = o.lo[2]; z <= o.hi[2]; ++z)
        for (int32_t y = o.lo[1]; y <= o.hi[1]; ++y)
            for (int32_t x = o.lo[0]; x <= o.hi[0]; ++x)
                fn(Lattice::pack(D, x, y, z));
}

/// An update's new entries (packed cell key, object) of one object whose
/// range changed, written from position e; returns the position after them.
template <uint32_t D>
uint64_t emit_object(const ObjectScratch& o, uint32_t object, uint64_t e, uint64_t* key, uint32_t* owner) {
    for_each_cell_key<D>(o, [&](uint64_t k) {
        key[e] = k;
        owner[e] = object;
        ++e;
    });
    return e;
}

/// The sort scratch of an update's new entries: their keys in the two halves
/// of sort_key[0], their objects in sort_key[1] as two uint32 arrays (an
/// update moves at most a quarter of max_entries).
struct NewEntries {
    uint64_t* key[2];
    uint32_t* owner[2];
};
inline NewEntries new_entries(BoxState& s) {
    const uint64_t half = s.max_entries / 2;
    auto* owners = reinterpret_cast<uint32_t*>(s.sort_key[1]);
    return {{s.sort_key[0], s.sort_key[0] + half}, {owners, owners + s.max_entries}};
}

/// The status of a rejected box (code invalid_position, invalid_box or
/// position_out_of_range), naming the lowest offending object and how many.
Status bad_box(StatusCode code, uint32_t index, uint32_t count);
/// The status of a frame whose boxes cover more than max_cell_entries cells.
Status entry_capacity(uint64_t needed);

/// Plans the frame's coarse grids (box_grid_coarse.cpp): returns whether
/// find_pairs should use them (when the large objects' scans of fine cells
/// would read more than the frame has objects) and then sets s.coarse, the
/// grids' geometry.
bool plan_coarse_grid(BoxState& s);
/// Bins the objects into the coarse grids planned in s.coarse.
void build_coarse_grid(BoxState& s);

} // namespace detail

struct BoxGrid::Impl {
    static detail::BoxState& state(BoxGrid& g) { return *g.state_; }
    static const detail::BoxState& state(const BoxGrid& g) { return *g.state_; }
    static bool built(const BoxGrid& g) { return g.built_; }
    static void set_built(BoxGrid& g) {
        g.built_ = true;
        ++g.frame_;
    }
    // box_grid_rebuild.cpp
    static Status rebuild(BoxGrid& g, const BoxSpans& boxes, const ThreadBackend& caller_backend);
    // The rebuild after the argument checks, inside the box_rebuild phase and
    // its box_rebuild_validate step that `trace` has opened.
    static Status rebuild_checked(BoxGrid& g, const BoxSpans& boxes, detail::PhaseTrace& trace);
    // box_grid_changed.cpp: the rebuild from a store whose changes since the
    // frame are listed (falls back to rebuild() when they are too many); the
    // grid must be initialised.
    static Status rebuild_changed(BoxGrid& g, const BoxSpans& boxes, const ObjectChanges& changes,
                                  const ThreadBackend& caller_backend);
    // box_grid_pairs.cpp
    static PairResult find_pairs(BoxGrid& g, Pair* out, uint64_t capacity, const ThreadBackend& caller_backend,
                                 PairFilter filter);
    static PairResult find_pairs_with(BoxGrid& g, const BoxSpans& queries, Pair* out, uint64_t capacity,
                                      const ThreadBackend& caller_backend, PairFilter filter);
};

} // namespace hashgrid

// SPDX-License-Identifier: MIT
/// @file
/// The particle grid: a per-frame counting-sort rebuild over SoA positions and
/// exact, deterministic pair finding. Memory is one block laid out at init()
/// (yours, or allocated once by init_allocate()); no call after init allocates.
///
/// Recipe (one frame):
///
///     hashgrid::ParticleSpans in{x, y, z, nullptr, n};           // radius optional
///     hashgrid::Status s = grid.rebuild(in, backend);             // O(N) counting sort
///     hashgrid::PairResult p = grid.find_pairs(pairs, capacity, backend);
///     if (p.status.code == hashgrid::StatusCode::output_too_small) { ... p.total is exact ... }
///
/// Pairs. A pair {a, b} (original indices, a < b) is reported once, when
///
///     uniform:    d2 < r * r                      (r = interaction_distance)
///     radii:      d2 < (ra + rb) * (ra + rb)
///
/// with d2 = (dx * dx + dy * dy) + dz * dz in float, in exactly that order,
/// without fused multiply-add (no dz term in 2D): a distance of exactly r is
/// outside. Pairs are ordered by the sorted position of the earlier of the two
/// particles, then by that of the later one.
///
/// Sorted order. After rebuild, particles are grouped by cell, cells in
/// (z, y, x) order of their integer coordinates (unbounded: of their keys),
/// and by ascending original index within a cell: the same for any thread
/// count, and for bounded and unbounded worlds with the same origin and cell
/// size when the frame does not wrap. Which cell a point falls in (the 2^-18
/// guard on the cell edge, unbounded wrap): docs/user-guide.md, "Choosing a
/// world, a cell size and capacities".
#pragma once

#include "hashgrid/config.h"
#include "hashgrid/kernels.h"
#include "hashgrid/memory.h"
#include "hashgrid/query_types.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cstddef>
#include <cstdint>

namespace hashgrid {

class Trace; // trace.h

namespace detail {
struct GridState;
} // namespace detail

/// Input positions as structure-of-arrays. Pointers must stay valid during the
/// call only; the grid copies what it keeps.
struct ParticleSpans {
    const float* x = nullptr;      ///< x coordinates, count entries.
    const float* y = nullptr;      ///< y coordinates, count entries.
    const float* z = nullptr;      ///< Ignored (may be null) in 2D.
    const float* radius = nullptr; ///< Optional per-particle radius; null means uniform mode.
    uint32_t count = 0;            ///< Number of particles.
};

/// Wall time of each phase of the last rebuild(), in nanoseconds (steady clock).
/// Input already in cell order (kept in sorted_to_original() order, and no
/// particle changed cell) skips the sort: scan and scatter are 0, and
/// finalize holds the cells read off the input (with the unbounded table)
/// and the straight copy. Input in last frame's order in which few particles
/// changed cell also skips it, in a bounded world and in an unbounded one
/// whose frame is sorted over the same dense box as last frame's: scan and
/// scatter are 0, and finalize holds the merge of those few (a try that finds
/// too many movers counts in keys, with the cell-order check, and the sort
/// runs).
///
/// Unbounded worlds find each particle's cell in one of two ways
/// (CellTableView): through a dense box when the occupied cells fit one of at
/// most 2 * max_particles + 64 cells, otherwise through the hashed table.
/// `table` is the time of either, split into sub-phases: table_clear,
/// table_insert, table_sort and table_lookup on the hashed path, dense_cells
/// and dense_compact on the dense path (the others are 0), and `table` is
/// exactly their sum. Bounded worlds, and frames already in cell order (whose
/// cells are read off the input, in finalize), have all of them 0.
struct RebuildTimings {
    uint64_t keys = 0;     ///< Validation, cell coordinates (bounded: and counts), the cell-order check.
    uint64_t table = 0;    ///< Unbounded: each particle's cell; the sum of the six sub-phases below.
    uint64_t scan = 0;     ///< Exclusive scan of the cell counts.
    uint64_t scatter = 0;  ///< Particle indices into their cells.
    uint64_t finalize = 0; ///< Per-cell index order and the sorted SoA gather.
    uint64_t total = 0;    ///< The whole rebuild().
    // The sub-phases of `table` (after `total`: code that lists the fields above in order still compiles).
    uint64_t table_clear = 0;  ///< Hashed path: emptying last frame's slots.
    uint64_t table_insert = 0; ///< Hashed path: every particle's cell key into the table.
    uint64_t table_sort = 0;   ///< Hashed path: distinct cells compacted and radix-sorted (table re-sized if asked).
    uint64_t table_lookup = 0; ///< Hashed path: each particle's cell index and the bucket counts.
    /// Dense path: the box, each particle's cell in it and the bucket counts (when the
    /// frame's box is last frame's, the key pass does this work, in keys).
    uint64_t dense_cells = 0;
    uint64_t dense_compact = 0; ///< Dense path, after the sort: the box's occupied cells into the frame's cells.
};

/// Wall time of each phase of the last find_pairs(), in nanoseconds.
struct PairTimings {
    uint64_t sweep = 0;   ///< Distance tests, with each chunk's copy into the caller's buffer overlapped.
    uint64_t publish = 0; ///< Publishing left after the sweep (0: it overlaps the sweep).
    uint64_t total = 0;   ///< The whole find_pairs().
};

/// Read-only view of the cell table after a rebuild.
struct CellTableView {
    /// Occupied cells in sorted (z, y, x) order. Unbounded: the distinct cells;
    /// bounded: all cells of the box (many may be empty).
    uint32_t cell_count = 0;
    /// cell_count + 1 entries: particles of cell c are sorted positions [start[c], start[c + 1]).
    const uint32_t* start = nullptr;
    /// Unbounded: packed key of each cell (see cell_key.h); bounded: null.
    const uint64_t* key = nullptr;
    /// Unbounded frames find a key's cell in one of two ways, both functions of
    /// the key set only (deterministic):
    ///  - the box map, when the occupied cells fit a box of at most
    ///    2 * max_particles + 64 cells (most scenes of a bounded extent):
    ///    map_cell has one entry per cell of the box [map_lo, map_lo +
    ///    map_extent) of the keys' unpacked coordinates (cell_key.h), x fastest,
    ///    holding the cell index there or kNoCell; slot_count is then 0;
    ///  - otherwise the open-addressing table (power-of-two slots): slot_key[s] is
    ///    a packed key or kEmptyKey, slot_cell[s] its index into the arrays above;
    ///    map_cell is then null.
    /// Bounded: both absent.
    uint32_t slot_count = 0;
    const uint64_t* slot_key = nullptr;  ///< slot_count entries: a packed key or kEmptyKey (see slot_count).
    const uint32_t* slot_cell = nullptr; ///< slot_count entries: the cell index of slot_key[s] (see slot_count).
    const uint32_t* map_cell = nullptr;  ///< map_extent[0] * [1] * [2] entries: a cell index or kNoCell.
    int32_t map_lo[3] = {0, 0, 0};       ///< Lowest unpacked key coordinates of the box map (z = 0 in 2D).
    uint32_t map_extent[3] = {0, 0, 0};  ///< Cells of the box map per axis (1 for z in 2D).
    /// Unbounded: some particle's cell lies beyond the wrap range (more than
    /// 2^20 cells from the origin on an axis in 3D, 2^30 in 2D), so some key
    /// holds cell coordinates modulo the wrap rather than the coordinates
    /// themselves (cell_key.h). Queries then take their wrap-aware paths.
    bool wrapped = false;
};

/// Marks an empty slot in CellTableView::slot_key.
inline constexpr uint64_t kEmptyKey = ~uint64_t{0};
/// Marks a cell of CellTableView::map_cell that holds no particle.
inline constexpr uint32_t kNoCell = ~uint32_t{0};

/// The spatial hash grid. Not copyable; all memory is the block given to init().
class Grid {
public:
    Grid() = default;
    ~Grid();
    Grid(const Grid&) = delete;
    Grid& operator=(const Grid&) = delete;

    /// Exact bytes and alignment init() needs for a config (invalid_config
    /// when rejected), as BoxGrid, ObjectStore, ProximityIndex and Trace
    /// spell it. The free function memory_requirements(config) is the same.
    [[nodiscard]] static MemoryRequirements memory_requirements(const GridConfig& config) {
        return hashgrid::memory_requirements(config);
    }
    /// The rules init() checks, without computing memory; the free function
    /// validate(config) is the same.
    [[nodiscard]] static Status validate(const GridConfig& config) { return hashgrid::validate(config); }

    /// Validates the config and lays the grid out in caller memory (at least
    /// memory_requirements(config).bytes, aligned as it says). The grid does not
    /// own the memory. Nothing allocates, here or later.
    [[nodiscard]] Status init(const GridConfig& config, void* memory, size_t bytes);

    /// Same, but allocates the block once with aligned_alloc and frees it in the destructor.
    /// Re-init is a transaction: the new block is allocated before the old one
    /// is freed, and any failure (invalid_config, memory_too_small when the
    /// allocation fails, or a too-small / misaligned block given to init())
    /// leaves the grid exactly as it was, last frame included. A successful
    /// init() on caller memory frees a block an earlier init_allocate() allocated.
    [[nodiscard]] Status init_allocate(const GridConfig& config);

    /// Sorts the particles into cells. Validation (count, NaN/inf, range, radius)
    /// runs before anything is changed: on such a failure the whole frame is
    /// rejected and the previous frame stays intact. So does cell_capacity
    /// (needed = the exact distinct cell count): when the frame's cells fit a
    /// box of at most max_cells cells it cannot happen; a larger box costs one
    /// counting pass before the sort, and a frame that fails in the hashed
    /// table gets the previous frame's table back (re-inserted from its keys:
    /// the same layout), both only on that path. Feeding back last frame's sorted order (particles stored in
    /// sorted_to_original() order) makes the rebuild faster.
    [[nodiscard]] Status rebuild(const ParticleSpans& particles, const ThreadBackend& backend);

    /// Finds all pairs of the last rebuild and writes up to `capacity` of them to
    /// `out` (may be null when capacity is 0, to ask for the count).
    /// Result: ok, output_too_small (needed = total), pair_capacity (needed =
    /// total) or not_built. On pair_capacity, `written` is exactly
    /// min(max_pairs, capacity) and the buffer holds that prefix of the
    /// canonical order: the same bytes for any thread count or schedule, so
    /// two machines that overflow in lockstep keep the same pairs. Completing
    /// that prefix may search some chunks a second time (only on this path).
    /// With a filter, only the pairs it accepts are counted and written (see
    /// PairFilter in query_types.h). The buffer past `written` is scratch:
    /// the pair kernels' wide stores may leave up to 7 pairs of unspecified
    /// bytes after the last written pair, never at or past `capacity`.
    [[nodiscard]] PairResult find_pairs(Pair* out, uint64_t capacity, const ThreadBackend& backend,
                                        PairFilter filter = {});

    /// Two sets: every (point, particle) pair with a an index into the
    /// external `points` (their radius pointer must be null; z ignored in 2D)
    /// and b a grid particle within the interaction distance (the radius
    /// query's d2 < r * r), as Pair{a = point index, b = particle index} (not
    /// a < b). Ordered by a, then by the grid's sorted order. The grid's
    /// particles are never paired among themselves, nor the points. Runs in
    /// parallel with the same output for any thread count. A NaN or infinite
    /// point is invalid_query with index = lowest offending point (out may
    /// then hold partial results); before a successful rebuild, not_built.
    [[nodiscard]] PairResult find_pairs_with(const ParticleSpans& points, Pair* out, uint64_t capacity,
                                             const ThreadBackend& backend) const;

    /// Per-particle neighbour lists (CSR, both directions) from a pair array
    /// (normally the one find_pairs() just wrote). offsets needs particle_count()
    /// + 1 entries; indices needs 2 * pair_count. Neighbours of particle i are
    /// indices[offsets[i] .. offsets[i + 1]), ascending. If indices is too
    /// small: output_too_small with needed = 2 * pair_count, offsets valid,
    /// indices untouched. If offsets is too small: output_too_small with
    /// needed = particle_count() + 1, nothing written. With pair_count == 0,
    /// indices may be null with capacity 0 (ok; every offset is 0). A pair that
    /// is not {a < b < particle_count()}, null pairs with a nonzero count, or
    /// null offsets / indices with a nonzero capacity, is invalid_argument in
    /// every build (index = lowest such pair; offsets and indices untouched).
    /// The pair check costs one compare per pair in the degree pass, next to
    /// its two atomic adds, and ends the call before anything is written.
    /// Before a successful rebuild: not_built. Uses the grid's per-particle
    /// scratch (no allocation).
    [[nodiscard]] Status neighbor_lists(const Pair* pairs, uint64_t pair_count, uint32_t* offsets,
                                        uint64_t offsets_capacity, uint32_t* indices, uint64_t indices_capacity,
                                        const ThreadBackend& backend);

    /// Particles in the last successful rebuild.
    [[nodiscard]] uint32_t particle_count() const;
    /// sorted_to_original()[k] is the original index of the particle at sorted position k.
    [[nodiscard]] const uint32_t* sorted_to_original() const;
    /// Positions (and radii, when given) copied in sorted order.
    /// @{
    [[nodiscard]] const float* sorted_x() const;
    [[nodiscard]] const float* sorted_y() const;
    [[nodiscard]] const float* sorted_z() const;
    [[nodiscard]] const float* sorted_radius() const;
    /// @}
    /// The cell table of the last successful rebuild (see CellTableView).
    [[nodiscard]] CellTableView cells() const;
    /// Phase timings of the last rebuild() / find_pairs() (zeros before the first).
    /// @{
    [[nodiscard]] const RebuildTimings& last_rebuild_timings() const;
    [[nodiscard]] const PairTimings& last_pair_timings() const;
    /// @}
    /// The config of the last successful init.
    [[nodiscard]] const GridConfig& config() const { return config_; }
    /// True after a successful init.
    [[nodiscard]] bool initialized() const { return initialized_; }
    /// Slots of the unbounded cell table that the current frame uses (0 when
    /// bounded, and when the frame's cells are found through the box map, see
    /// CellTableView): the smallest power of two of at least 256 and twice the
    /// occupied cells, so the table's per-frame cost follows the live cells.
    [[nodiscard]] uint32_t table_slots() const;

    /// Records the phases and chunks of this grid's rebuild, find_pairs,
    /// find_pairs_with, neighbor_lists and particle query batches into
    /// `trace` (trace.h), which must outlive its use here; null (the default)
    /// records nothing. Independent of init; not while a call of this grid runs.
    void set_trace(Trace* trace) { trace_ = trace; }
    /// The trace set by set_trace() (null: none).
    [[nodiscard]] Trace* trace() const { return trace_; }

private:
    struct Impl;
    friend struct Impl;

    GridConfig config_{};
    bool initialized_ = false;
    void* owned_memory_ = nullptr;
    Trace* trace_ = nullptr;
    /// Everything else (frame, table, scratch) lives in the memory block as
    /// one named struct (core/src/particle/grid_state.h).
    detail::GridState* state_ = nullptr;
};

} // namespace hashgrid

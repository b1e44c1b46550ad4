// SPDX-License-Identifier: MIT
// The per-frame rebuild of the particle grid, as a list of steps
// (rebuild_steps.h names them and the files that hold them):
//
// 1. Keys: validate every particle and compute its cell (rebuild_keys.cpp).
//    Only scratch is written until validation has passed.
// 2. Unbounded only: every particle's cell index, through the dense box when
//    the frame's cells fit one (rebuild_dense.cpp), otherwise through the
//    table (rebuild_table.cpp). The dense path writes only scratch before
//    cell_capacity is known; the table path writes the table, and a rejected
//    frame gets the previous table back.
// 3. Two-level counting sort: bucket scan, scatter into buckets, per-bucket
//    sort by cell (rebuild_sort.cpp). The dense path then compacts the box's
//    non-empty cells into the frame's cells and box map.
// Input already in cell order replaces steps 2 and 3 with the runs of its
// cells and a straight copy (rebuild_presorted.cpp), giving the same frame.
// Input in last frame's order in which few particles changed cells replaces
// step 3 with a merge of those few (rebuild_merge.cpp), the same frame again:
// bounded worlds, and unbounded frames sorted over last frame's dense box.
#include "common/trace_scope.h"
#include "lattice/wrapped_cells.h"
#include "particle/grid_impl.h"
#include "particle/rebuild_steps.h"

#include "hashgrid/assert.h"

namespace hashgrid {

using namespace detail;

namespace {

/// The request itself: particle capacity and the coordinate spans.
Status check_request(const GridConfig& c, const ParticleSpans& p) {
    if (p.count > c.max_particles) {
        return capacity_status(StatusCode::particle_capacity, "more particles than GridConfig::max_particles", p.count);
    }
    HASHGRID_ASSERT(p.count == 0 || (p.x != nullptr && p.y != nullptr && (c.dimensions == 2 || p.z != nullptr)),
                    "ParticleSpans: x, y (and z in 3D) must be set");
    if (p.count > 0 && (p.x == nullptr || p.y == nullptr || (c.dimensions == 3 && p.z == nullptr)))
        return detail::make_status(StatusCode::invalid_argument,
                                   "ParticleSpans: x, y (and z in 3D) must be set when count > 0");
    return {};
}

/// The frame's inputs and sizes; bounded worlds know their cells (and
/// bucket shift) before the key pass.
RebuildFrame frame_for(const GridConfig& c, const GridState& s, const ParticleSpans& p) {
    RebuildFrame f;
    f.n = p.count;
    f.dims = c.dimensions;
    f.bounded = c.world == World::bounded;
    f.max_cells = c.max_cells;
    f.grain = s.sort_grain;
    f.chunks = chunk_count(f.n, f.grain);
    f.buckets_max = s.bucket_capacity;

    KeyParams& k = f.keys;
    k.coord[0] = p.x;
    k.coord[1] = p.y;
    k.coord[2] = p.z;
    k.radius = p.radius;
    k.lattice = make_lattice(c);
    for (uint32_t d = 0; d < 3; ++d)
        k.upper[d] = f.bounded ? k.lattice.upper(d) : kFastCellLimit;
    k.lower = f.bounded ? k.lattice.lower(0) : -kFastCellLimit;
    // Last frame needed no counting sort: expect the same (speed only; the
    // sort counts the buckets itself if it runs after all).
    k.count = !(s.built && s.skipped_sort);

    if (f.bounded) {
        f.cells = static_cast<uint32_t>(uint64_t{c.cell_counts[0]} * c.cell_counts[1] *
                                        (f.dims == 3 ? c.cell_counts[2] : 1u));
        f.shift = bucket_shift(f.cells, f.buckets_max);
    } else if (s.built && s.mapped && s.box_repeated) {
        // The box held still for a frame: expect it again (checked after the
        // key pass; a wrong guess costs the dense path's pass it would skip).
        k.guess = true;
        uint32_t volume = 1;
        for (uint32_t d = 0; d < 3; ++d) {
            k.guess_lo[d] = s.map_lo[d];
            k.guess_extent[d] = s.map_extent[d];
            volume *= s.map_extent[d]; // at most dense_capacity: it was a dense box
        }
        k.guess_shift = bucket_shift(volume, f.buckets_max);
    }
    return f;
}

/// Step 2: each particle's cell index and the bucket counts, through the
/// dense box or the table. Both give the same cells and order. Each
/// part's time goes into its RebuildTimings field (lap); the hashed path's
/// parts are traced as steps nested in rebuild_cells (trace_steps.h).
template <typename Lap>
Status unbounded_cells(GridState& s, RebuildFrame& f, const ThreadBackend& b, RebuildTimings& timing, Lap& lap,
                       PhaseTrace& trace) {
    if (f.n > 0) find_dense_box(s, f);
    // A rejected frame keeps the previous one. The dense path writes scratch
    // only before cell_capacity is known; the table path writes the table
    // (and puts the previous frame's back on failure). Everything else of the
    // frame (sorted order, positions, cell starts and keys, the box map) is
    // written after it.
    if (f.dense) {
        const Status cells = dense_cells(s, f, b);
        lap(timing.dense_cells);
        return cells;
    }
    const PreviousFrame previous{s.count, s.cell_count, s.built, s.mapped};
    trace.begin(TraceStep::rebuild_table_clear);
    clear_table(s, b);
    lap(timing.table_clear);
    trace.next(TraceStep::rebuild_table_insert);
    const Status inserted = insert_keys(s, f, previous, b);
    lap(timing.table_insert);
    if (!inserted.ok()) {
        trace.end();
        return inserted;
    }
    trace.next(TraceStep::rebuild_table_sort);
    sort_distinct_cells(s, f, b);
    lap(timing.table_sort);
    trace.next(TraceStep::rebuild_table_lookup);
    lookup_cells(s, f, b);
    lap(timing.table_lookup);
    trace.end();
    return {};
}

/// Steps 2 and 3 of the general path: cells (unbounded), then the merge of
/// the movers when last frame's starts cover this frame's cells, else the
/// counting sort; a dense box is compacted after either.
template <typename Lap>
Status sort_into_cells(GridState& s, RebuildFrame& f, const ThreadBackend& b, RebuildTimings& timing, Lap& lap,
                       PhaseTrace& trace) {
    if (!f.bounded) {
        trace.next(TraceStep::rebuild_cells);
        const Status cells = unbounded_cells(s, f, b, timing, lap, trace);
        if (!cells.ok()) return cells;
    }
    bool merged = false;
    if (merge_possible(s, f)) {
        trace.next(TraceStep::rebuild_merge);
        merged = rebuild_merged(s, f, b);
        lap(merged ? timing.finalize : timing.keys); // a try that found too many movers: part of the order check
    }
    if (!merged) {
        f.counting_sort = true;
        trace.next(TraceStep::rebuild_scan);
        count_skipped_buckets(s, f, b);
        scan_buckets(s, f);
        lap(timing.scan);
        trace.next(TraceStep::rebuild_scatter);
        scatter_to_buckets(s, f, b);
        lap(timing.scatter);
        trace.next(TraceStep::rebuild_sort);
        sort_buckets(s, f, b);
        lap(timing.finalize);
    }
    if (f.dense) {
        f.box_sorted = true;
        trace.next(TraceStep::rebuild_compact);
        compact_dense_cells(s, f, b);
        lap(timing.dense_compact);
    }
    return {};
}

} // namespace

Status Grid::rebuild(const ParticleSpans& particles, const ThreadBackend& backend) {
    return Impl::rebuild(*this, particles, backend);
}

Status Grid::Impl::rebuild(Grid& g, const ParticleSpans& p, const ThreadBackend& caller_backend) {
    HASHGRID_ASSERT(g.initialized_, "Grid::rebuild called before a successful init");
    if (!g.initialized_) return detail::make_status(StatusCode::not_built, "grid not initialized");
    const Status request = check_request(g.config_, p);
    if (!request.ok()) return request;
    GridState& s = *g.state_;
    RebuildFrame f = frame_for(g.config_, s, p);
    PhaseTrace trace(g.trace_, caller_backend); // every step's loops run through trace.backend()
    const ThreadBackend& b = trace.backend();
    trace.begin(TracePhase::rebuild);
    trace.begin(TraceStep::rebuild_keys);

    RebuildTimings timing{};
    const uint64_t t_begin = clock_ns();
    uint64_t t_mark = t_begin;
    auto lap = [&t_mark](uint64_t& phase) {
        const uint64_t now = clock_ns();
        phase += now - t_mark;
        t_mark = now;
    };

    const Status keys = compute_keys(s, f, b);
    if (!keys.ok()) return keys; // previous frame untouched
    trace.next(TraceStep::rebuild_order);
    const bool in_cell_order = input_in_cell_order(s, f, b);
    lap(timing.keys);

    if (in_cell_order) {
        trace.next(TraceStep::rebuild_presorted);
        const Status presorted = rebuild_presorted(s, f, b);
        if (!presorted.ok()) return presorted; // previous frame restored
        lap(timing.finalize);
    } else {
        const Status sorted = sort_into_cells(s, f, b, timing, lap, trace);
        if (!sorted.ok()) return sorted; // previous frame restored
    }

    timing.table = timing.table_clear + timing.table_insert + timing.table_sort + timing.table_lookup +
                   timing.dense_cells + timing.dense_compact;
    timing.total = t_mark - t_begin;
    s.rebuild_timings = timing;
    s.count = f.n;
    s.cell_count = f.cells;
    s.has_radius = p.radius != nullptr;
    s.wrapped = f.wrapped;
    s.mapped = f.mapped;
    s.box_starts = f.box_sorted;
    s.box_repeated = f.box_repeated;
    s.skipped_sort = !f.counting_sort;
    s.built = true;
    return {};
}

} // namespace hashgrid

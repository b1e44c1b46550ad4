// SPDX-License-Identifier: MIT
// Pair finding: a forward half-stencil sweep over fixed chunks of home
// particles (sorted positions), written in chunk order through the ordered
// pair output (common/pair_output.h: in place where a chunk's place is known,
// else through the pool; pair_kernels.cpp: the sweep).
//
// Output order is lexicographic in (sorted position of the earlier particle,
// sorted position of the later): a home particle k is tested against the rest
// of its cell and its forward neighbour ranges, which all lie after k and are
// visited in ascending order. The order therefore depends on the input only,
// not on chunking, threads or the SIMD width.
#include "common/pair_output.h"
#include "common/trace_scope.h"
#include "lattice/wrapped_cells.h"
#include "particle/grid_impl.h"
#include "particle/pair_sweep.h"

#include "hashgrid/assert.h"

namespace hashgrid {

using namespace detail;
using namespace detail::pair_sweep;

namespace {

/// The sweep's view of the frame: sorted positions and radii, the order,
/// the cell index and r^2. A frame sorted over its dense box still has the
/// box's cell starts: swept as a bounded grid over the box, with the same
/// pairs and order, unless the box touches the wrap seam (a box spanning the
/// whole period has neighbours at its two ends, which only the keyed sweep
/// finds).
SweepData sweep_data(const GridState& frame, const GridConfig& c, const CellTableView& cells) {
    SweepData s{};
    const bool box_sweep =
        frame.mapped && frame.box_starts && box_clear_of_seam(frame.map_lo, frame.map_extent, c.dimensions);
    static_cast<CellIndex&>(s) = box_sweep ? make_box_cell_index(make_lattice(c), frame.dense_start, frame.map_extent)
                                           : make_cell_index(make_lattice(c), cells);
    s.x = frame.sorted[0];
    s.y = frame.sorted[1];
    s.z = frame.sorted[2];
    s.radius = frame.sorted_radius;
    s.order = frame.order;
    s.r2 = c.interaction_distance * c.interaction_distance;
    return s;
}

} // namespace

PairResult Grid::find_pairs(Pair* out, uint64_t capacity, const ThreadBackend& backend, PairFilter filter) {
    return Impl::find_pairs(*this, out, capacity, backend, filter);
}

PairResult Grid::Impl::find_pairs(Grid& g, Pair* out, uint64_t capacity, const ThreadBackend& caller_backend,
                                  PairFilter filter) {
    PairResult result;
    if (!pair_output::pair_search_allowed(g.state_ != nullptr && g.state_->built, out, capacity, result)) return result;
    PhaseTrace trace(g.trace_, caller_backend); // the loops run through trace.backend()
    trace.begin(TracePhase::find_pairs);
    trace.begin(TraceStep::pair_sweep);
    const GridConfig& c = g.config_;
    GridState& frame = *g.state_;
    const SweepData s = sweep_data(frame, c, g.cells());

    const uint64_t t_begin = clock_ns();
    const uint32_t n = frame.count;
    const auto sweep = sweep_for(active_pair_kernel(), c.dimensions, frame.has_radius);
    // A chunk is kPairGrain home particles.
    auto search = [&](uint32_t chunk, Sink& sink) {
        const uint32_t begin = chunk * kPairGrain;
        sweep(s, begin, n - begin < kPairGrain ? n : begin + kPairGrain, sink);
    };
    const pair_output::PairMemory memory{frame.pair_pool,         frame.block_next,       frame.block_count, kPairBlock,
                                         frame.chunk_first_block, frame.chunk_pair_count, frame.chunk_state};
    const pair_output::PairRequest request{out, capacity, c.max_pairs, filter, n, kPairGrain};
    const pair_output::PairCounts counts =
        pair_output::write_ordered(trace, TraceStep::pair_prefix, memory, request, pair_output::chunk_search(search));
    result = pair_output::pair_result(counts, c.max_pairs, capacity, "more pairs than GridConfig::max_pairs");
    const uint64_t t_end = clock_ns();
    frame.pair_timings = PairTimings{};
    frame.pair_timings.sweep = t_end - t_begin; // publishing overlaps the sweep
    frame.pair_timings.total = t_end - t_begin;
    return result;
}

} // namespace hashgrid

// SPDX-License-Identifier: MIT
// Grid::Impl: the frame pipeline's private steps, and the parallel scans and
// fills (rebuild_sort.cpp) shared by the rebuild files (through
// rebuild_steps.h), pairs.cpp, neighbor_lists.cpp and the box grid
// (box_grid_internal.h: scan_chunk_sums).
#pragma once

#include "particle/grid_internal.h"
#include "particle/grid_state.h"

namespace hashgrid {

struct Grid::Impl {
    // rebuild.cpp (its steps: rebuild_steps.h)
    static Status rebuild(Grid& g, const ParticleSpans& p, const ThreadBackend& caller_backend);
    // pairs.cpp
    static PairResult find_pairs(Grid& g, Pair* out, uint64_t capacity, const ThreadBackend& caller_backend,
                                 PairFilter filter);
};

} // namespace hashgrid

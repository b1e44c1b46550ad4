// SPDX-License-Identifier: MIT
// What a validation pass of either grid kind records per chunk, so that the
// lowest offending item (and how many there are) is found the same way for
// any thread count.
#pragma once

#include "hashgrid/status.h"

#include <cstdint>

namespace hashgrid::detail {

/// Per-chunk record of the lowest offending particle in validation passes.
struct BadParticle {
    uint32_t index;
    uint32_t count;
    StatusCode code;
    bool wrapped = false; ///< Unbounded: some cell of the chunk wrapped (lattice/wrapped_cells.h).
};

} // namespace hashgrid::detail

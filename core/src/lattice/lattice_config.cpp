// SPDX-License-Identifier: MIT
// The lattice rules shared by every grid kind (lattice_config.h).
#include "common/block_layout.h"

#include "hashgrid/lattice_config.h"

#include <cmath>

namespace hashgrid {

using namespace detail;

Status validate(const LatticeConfig& c) {
    if (c.dimensions != 2 && c.dimensions != 3)
        return make_status(StatusCode::invalid_config, "dimensions must be 2 or 3");
    if (!positive_finite(c.cell_size))
        return make_status(StatusCode::invalid_config, "cell_size must be finite and > 0");
    for (uint32_t d = 0; d < c.dimensions; ++d)
        if (!std::isfinite(c.origin[d])) return make_status(StatusCode::invalid_config, "origin must be finite");
    if (c.world == World::bounded) {
        uint64_t cells = 1;
        for (uint32_t d = 0; d < c.dimensions; ++d) {
            if (c.cell_counts[d] == 0)
                return make_status(StatusCode::invalid_config, "bounded world: cell_counts must be >= 1");
            cells *= c.cell_counts[d];
            if (cells >= (uint64_t{1} << 31))
                return make_status(StatusCode::invalid_config, "bounded world: total cells must be < 2^31");
        }
        if (c.out_of_bounds != OutOfBounds::reject && c.out_of_bounds != OutOfBounds::clamp)
            return make_status(StatusCode::invalid_config, "out_of_bounds must be reject or clamp");
    } else if (c.world != World::unbounded) {
        return make_status(StatusCode::invalid_config, "world must be bounded or unbounded");
    }
    return {};
}

} // namespace hashgrid

// SPDX-License-Identifier: MIT
#include "hashgrid/status.h"

namespace hashgrid {

const char* to_string(StatusCode code) {
    switch (code) {
    case StatusCode::ok:
        return "ok";
    case StatusCode::invalid_config:
        return "invalid_config";
    case StatusCode::memory_too_small:
        return "memory_too_small";
    case StatusCode::memory_misaligned:
        return "memory_misaligned";
    case StatusCode::particle_capacity:
        return "particle_capacity";
    case StatusCode::cell_capacity:
        return "cell_capacity";
    case StatusCode::pair_capacity:
        return "pair_capacity";
    case StatusCode::output_too_small:
        return "output_too_small";
    case StatusCode::invalid_position:
        return "invalid_position";
    case StatusCode::position_out_of_range:
        return "position_out_of_range";
    case StatusCode::invalid_radius:
        return "invalid_radius";
    case StatusCode::radius_too_large:
        return "radius_too_large";
    case StatusCode::not_built:
        return "not_built";
    case StatusCode::invalid_box:
        return "invalid_box";
    case StatusCode::object_capacity:
        return "object_capacity";
    case StatusCode::entry_capacity:
        return "entry_capacity";
    case StatusCode::invalid_handle:
        return "invalid_handle";
    case StatusCode::invalid_query:
        return "invalid_query";
    case StatusCode::invalid_argument:
        return "invalid_argument";
    case StatusCode::stale_view:
        return "stale_view";
    }
    return "unknown";
}

} // namespace hashgrid

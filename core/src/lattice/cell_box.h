// SPDX-License-Identifier: MIT
// An inclusive box of cell coordinates: what walks over a box of cells take.
#pragma once

#include <cstdint>

namespace hashgrid::detail {

/// Inclusive box of cell coordinates (z = 0..0 in 2D).
struct CellBox {
    int32_t lo[3];
    int32_t hi[3];
};

inline bool boxes_meet(const CellBox& a, const CellBox& b) {
    for (uint32_t d = 0; d < 3; ++d)
        if (a.lo[d] > b.hi[d] || b.lo[d] > a.hi[d]) return false;
    return true;
}

} // namespace hashgrid::detail

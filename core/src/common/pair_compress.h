// SPDX-License-Identifier: MIT
// The lane table the AVX2 pair writers share (the particle sweep,
// sweep_impl.inc; the box grid's cell sweep, box_cell_sweep.inc): it turns
// an 8-bit hit mask into a permutation that moves the hit lanes' partners
// to where two unpacks make them whole pairs, in lane order.
#pragma once

#include <cstdint>

namespace hashgrid::detail {

/// lanes[m] holds the set lanes of the 8-bit mask m, the i-th set lane in
/// slot {0, 1, 4, 5, 2, 3, 6, 7}[i]: interleaving the permuted vector with
/// another one (unpacklo / unpackhi, which work within 128-bit halves) then
/// gives hits 0-3 in the low result and hits 4-7 in the high one, in order.
struct PairCompressTable {
    uint8_t lanes[256][8];
    constexpr PairCompressTable() : lanes{} {
        constexpr uint32_t kSlot[8] = {0, 1, 4, 5, 2, 3, 6, 7};
        for (uint32_t m = 0; m < 256; ++m) {
            uint32_t n = 0;
            for (uint32_t lane = 0; lane < 8; ++lane)
                if ((m >> lane) & 1u) lanes[m][kSlot[n++]] = static_cast<uint8_t>(lane);
        }
    }
};
inline constexpr PairCompressTable kPairCompressTable{};

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
// The clock of phase timings and trace events.
#pragma once

#include <chrono>
#include <cstdint>

namespace hashgrid::detail {

/// Steady-clock nanoseconds for phase timings.
inline uint64_t clock_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
/// @file
/// Monotonic wall-clock timing for per-phase frame timers.
#pragma once

#include <chrono>
#include <cstdint>

namespace hashgrid::platform {

/// Nanoseconds from a monotonic clock.
inline uint64_t now_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

/// Milliseconds since `start_ns` as a double.
inline double elapsed_ms(uint64_t start_ns) { return static_cast<double>(now_ns() - start_ns) * 1e-6; }

} // namespace hashgrid::platform

// SPDX-License-Identifier: MIT
/// @file
/// std::thread backend: for targets without oneTBB (MinGW) and for
/// ThreadSanitizer runs (every synchronization edge is in instrumented code).
/// Worker threads are created once, at construction, and poll briefly, then
/// sleep, between jobs; steady state allocates nothing.
#pragma once

#include "hashgrid/platform/worker_spin.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>

/// Thread backends, aligned memory, the counting assert hook and timers: the
/// parts of Hashgrid that use threads, the heap and clocks (libraries
/// hashgrid::platform and, for TbbBackend, hashgrid::tbb).
namespace hashgrid::platform {

/// A ThreadBackend on std::thread workers created once (see above).
class StdThreadBackend {
public:
    /// threads == 0: std::thread::hardware_concurrency(). The calling thread is
    /// one of them: threads - 1 workers are started.
    /// spin_microseconds: how long an idle worker polls for the next loop
    /// before it sleeps (worker_spin.h); 0 when threads exceed the cores.
    explicit StdThreadBackend(uint32_t threads = 0, uint32_t spin_microseconds = kDefaultWorkerSpinMicroseconds);
    ~StdThreadBackend();
    StdThreadBackend(const StdThreadBackend&) = delete;
    StdThreadBackend& operator=(const StdThreadBackend&) = delete;

    /// The interface core/ uses; valid while this object lives. One
    /// parallel_for at a time (chunk bodies must not start another).
    [[nodiscard]] ThreadBackend backend() const;
    /// Threads that run chunks, the calling thread included.
    [[nodiscard]] uint32_t threads() const;

    struct State; ///< Opaque.

private:
    State* state_ = nullptr;
};

} // namespace hashgrid::platform

// SPDX-License-Identifier: MIT
/// @file
/// oneTBB thread backend: a task_arena created once, whose threads run
/// persistent loops that claim core/'s (count, grain) chunks from one atomic
/// counter (tbb::parallel_for would allocate task objects every frame). Steady
/// state allocates nothing (docs/allocation.md has what was measured).
#pragma once

#include "hashgrid/platform/worker_spin.h"
#include "hashgrid/thread_backend.h"

#include <cstdint>

namespace hashgrid::platform {

/// A ThreadBackend on a oneTBB task_arena created once (see above).
class TbbBackend {
public:
    /// threads == 0: oneTBB's default concurrency. More threads than cores is
    /// allowed (global_control raises the limit) for determinism tests.
    /// spin_microseconds: how long an idle worker polls for the next loop
    /// before it sleeps (worker_spin.h); 0 when threads exceed the cores.
    explicit TbbBackend(uint32_t threads = 0, uint32_t spin_microseconds = kDefaultWorkerSpinMicroseconds);
    ~TbbBackend();
    TbbBackend(const TbbBackend&) = delete;
    TbbBackend& operator=(const TbbBackend&) = delete;

    /// The interface core/ uses; valid while this object lives.
    [[nodiscard]] ThreadBackend backend() const;
    /// Concurrency of the arena.
    [[nodiscard]] uint32_t threads() const;

    struct State; ///< Opaque: keeps oneTBB headers out of this one.

private:
    State* state_ = nullptr;
};

} // namespace hashgrid::platform

// oneTBB thread backend: a task_arena created once, simple_partitioner with the
// chunk grain core/ asks for. Steady state allocates nothing (see
// docs/allocation.md for what was measured).
#pragma once

#include "hashgrid/thread_backend.h"

#include <cstdint>

namespace hashgrid::platform {

class TbbBackend {
public:
    /// threads == 0: oneTBB's default concurrency. More threads than cores is
    /// allowed (global_control raises the limit) for determinism tests.
    explicit TbbBackend(uint32_t threads = 0);
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

// SPDX-License-Identifier: MIT
// oneTBB backend without per-call task objects.
//
// tbb::parallel_for allocates its task objects from oneTBB's small-object
// pools (cache_aligned_allocate -> tbbmalloc); with several threads those pools
// keep refilling for hundreds of frames (docs/allocation.md). So the arena's
// worker threads are started once, at construction, each in a persistent
// dispatch loop (a task_group run inside the task_arena). A parallel_for
// publishes the job in this object, the calling thread and the workers claim
// chunk indices from one atomic word, and the caller waits until every chunk
// is done. Steady state allocates nothing; results do not depend on which
// thread ran which chunk (core/'s determinism contract).
#include "hashgrid/platform/tbb_backend.h"

#include "chunk_dispatcher.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <optional>

namespace hashgrid::platform {

struct TbbBackend::State {
    // Raises oneTBB's process-wide cap when more threads than cores are asked
    // for (determinism tests run 16 threads on 2 cores).
    std::optional<tbb::global_control> limit;
    tbb::task_arena arena;
    tbb::task_group workers;
    detail::ChunkDispatcher dispatcher;
};

TbbBackend::TbbBackend(uint32_t threads, uint32_t spin_microseconds) : state_(new State) {
    if (threads == 0) threads = static_cast<uint32_t>(tbb::this_task_arena::max_concurrency());
    if (threads == 0) threads = 1;
    const auto hardware = static_cast<uint32_t>(tbb::this_task_arena::max_concurrency());
    if (threads > hardware)
        state_->limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
    // One slot is reserved for the calling thread; threads - 1 workers run loops.
    state_->arena.initialize(static_cast<int>(threads));
    state_->dispatcher.set_participants(threads);
    if (threads <= hardware) state_->dispatcher.set_spin_ns(uint64_t{spin_microseconds} * 1000);
    State* s = state_;
    s->arena.execute([s, threads] {
        for (uint32_t worker = 1; worker < threads; ++worker)
            s->workers.run([s, worker] { s->dispatcher.worker_loop(worker); });
    });
}

TbbBackend::~TbbBackend() {
    State* s = state_;
    s->dispatcher.stop();
    // Waiting inside the arena also runs any loop a worker never picked up
    // (it sees the stop flag and returns at once).
    s->arena.execute([s] { s->workers.wait(); });
    delete s;
}

ThreadBackend TbbBackend::backend() const { return state_->dispatcher.backend(); }

uint32_t TbbBackend::threads() const { return state_->dispatcher.participants(); }

} // namespace hashgrid::platform

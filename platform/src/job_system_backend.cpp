// SPDX-License-Identifier: MIT
// ThreadBackend on a game's job system (contract in job_system_backend.h).
//
// core/ asks for a loop over `count` elements in chunks of `grain`. The
// adapter publishes the loop in its own Loop record, asks the game for copies
// of one task, runs a copy on the calling thread too, and every copy claims
// chunk indices from one atomic counter until none is left. Chunk boundaries
// come from count and grain only, so whoever runs a chunk, the outputs are
// the same bytes. Nothing is allocated: the Loop lives in the adapter.
//
// The gate word makes the game's timing mistakes harmless where that is
// cheap: a copy enters by incrementing it and leaves by decrementing it, and
// between loops it carries kClosed, so a copy that starts after its loop is
// over leaves without reading the loop. The calling thread closes the gate
// only when no copy is inside, which also orders every chunk's writes before
// parallel_for returns, whatever synchronization the game's finish has.
#include "hashgrid/platform/job_system_backend.h"

#include "hashgrid/assert.h"

#include <thread>

namespace hashgrid::platform {

void JobSystemBackend::run_copy(void* task_context) {
    auto* loop = static_cast<Loop*>(task_context);
    HASHGRID_ASSERT(loop != nullptr && loop->tag == kLoopTag,
                    "the job system called the task with a context other than the task_context enqueue received");
    if (loop == nullptr || loop->tag != kLoopTag) [[unlikely]]
        return; // in every build: the calling thread's own copy still runs every chunk
    const uint32_t entered = loop->gate.fetch_add(1, std::memory_order_acquire);
    // Harmless here, but the same game would run a copy after the adapter is
    // gone just as well.
    HASHGRID_ASSERT((entered & kClosed) == 0, "a copy of the task started after its loop was over (after finish "
                                              "returned, or after enqueue returned null)");
    if ((entered & kClosed) == 0) {
        // Each copy gets its own slot, so chunks running at the same time
        // never share a worker index; copies beyond `slots` have no work.
        const uint32_t slot = loop->next_slot.fetch_add(1, std::memory_order_relaxed);
        if (slot < loop->slots) {
            const ChunkFn fn = loop->fn;
            void* const context = loop->context;
            const uint64_t count = loop->count, grain = loop->grain, chunks = loop->chunks;
            for (;;) {
                const uint64_t c = loop->next_chunk.fetch_add(1, std::memory_order_relaxed);
                if (c >= chunks) break;
                const uint64_t first = c * grain;
                const uint64_t last = first + grain < count ? first + grain : count;
                fn(context, static_cast<uint32_t>(first), static_cast<uint32_t>(last), slot);
            }
        }
    }
    // Release: the chunks this copy ran happen before the caller closes the gate.
    loop->gate.fetch_sub(1, std::memory_order_release);
}

Status JobSystemBackend::validate(const JobSystemConfig& config) {
    Status s;
    s.code = StatusCode::invalid_argument;
    if (config.enqueue == nullptr)
        s.message = "JobSystemConfig::enqueue must be set";
    else if (config.finish == nullptr)
        s.message = "JobSystemConfig::finish must be set";
    else if (config.worker_count == 0)
        s.message = "JobSystemConfig::worker_count must be >= 1";
    else
        return Status{};
    return s;
}

JobSystemBackend::JobSystemBackend(const JobSystemConfig& config) : config_(config), status_(validate(config)) {
    HASHGRID_ASSERT(status_.ok(), status_.message);
    loop_.tag = kLoopTag;
}

ThreadBackend JobSystemBackend::backend() {
    ThreadBackend b;
    if (!status_.ok()) return b; // no parallel_for: core runs every loop serially
    b.parallel_for = &JobSystemBackend::parallel_for;
    b.state = this;
    b.worker_count = config_.worker_count;
    return b;
}

void JobSystemBackend::parallel_for(void* self, uint32_t count, uint32_t grain, ChunkFn fn, void* context) {
    static_cast<JobSystemBackend*>(self)->run(count, grain, fn, context);
}

void JobSystemBackend::run(uint32_t count, uint32_t grain, ChunkFn fn, void* context) {
    HASHGRID_ASSERT(grain >= 1 && fn != nullptr, "parallel_for needs grain >= 1 and a chunk function");
    if (grain == 0 || fn == nullptr) [[unlikely]]
        return; // core never asks for this; in every build: no division by zero, no call through null
    const uint32_t chunks = count / grain + (count % grain != 0 ? 1u : 0u);
    if (chunks == 0) return;
    // More threads than chunks would find nothing to do.
    const uint32_t threads = config_.worker_count < chunks ? config_.worker_count : chunks;
    if (threads <= 1 || chunks <= config_.inline_chunk_limit) {
        // Too small (or too few workers) to be worth a round trip through the
        // game's queue. Nothing else runs for this loop: worker 0 is free.
        for (uint32_t c = 0; c < chunks; ++c) {
            const uint32_t first = c * grain;
            const uint32_t last = count - first > grain ? first + grain : count;
            fn(context, first, last, 0);
        }
        return;
    }
    HASHGRID_ASSERT(!busy_.exchange(true, std::memory_order_acquire),
                    "one parallel_for at a time per JobSystemBackend (chunk bodies, and jobs that the game's finish "
                    "runs while it waits, must not start another one on the same adapter)");
    // The gate is closed and empty here (close_loop), so no copy reads these.
    loop_.fn = fn;
    loop_.context = context;
    loop_.count = count;
    loop_.grain = grain;
    loop_.chunks = chunks;
    loop_.slots = threads;
    loop_.next_slot.store(0, std::memory_order_relaxed);
    loop_.next_chunk.store(0, std::memory_order_relaxed);
    // Open. An RMW, not a store: a late copy of an earlier loop may be between
    // its increment and decrement of the closed gate right now.
    loop_.gate.fetch_sub(kClosed, std::memory_order_release);

    ++enqueued_;
    void* task = config_.enqueue(&run_copy, threads - 1, &loop_, config_.user_context);
    // The calling thread works too, so a job system that runs fewer copies
    // than asked (or none, or only later) costs time, never correctness.
    run_copy(&loop_);
    if (task != nullptr)
        config_.finish(task, config_.user_context);
    else
        ++inline_by_game_;
    close_loop();
    busy_.store(false, std::memory_order_release);
}

void JobSystemBackend::close_loop() {
    uint32_t open_and_empty = 0;
    if (loop_.gate.compare_exchange_strong(open_and_empty, kClosed, std::memory_order_acquire,
                                           std::memory_order_relaxed))
        return;
    HASHGRID_ASSERT(false, "a copy of the task was still running after finish returned (or after enqueue returned "
                           "null): finish must wait for every copy started under its handle");
    // In every build: core must not read the loop's outputs while a chunk may
    // still write them. The copy is running, so this wait is short.
    do {
        std::this_thread::yield();
        open_and_empty = 0;
    } while (!loop_.gate.compare_exchange_weak(open_and_empty, kClosed, std::memory_order_acquire,
                                               std::memory_order_relaxed));
}

} // namespace hashgrid::platform

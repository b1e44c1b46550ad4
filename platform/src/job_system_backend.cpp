// ThreadBackend on a game's job system (contract in job_system_backend.h).
//
// core/ asks for a loop over `count` elements in chunks of `grain`; the game is
// given the chunks as items, so however it splits and schedules them, each
// chunk keeps the boundaries core chose and runs once: outputs stay
// bit-identical. The loop's description lives in this object (no allocation);
// the game's own synchronization (enqueue publishing the task, finish waiting
// for it) orders the plain fields between threads.
#include "hashgrid/platform/job_system_backend.h"

#include "hashgrid/assert.h"

namespace hashgrid::platform {

void JobSystemBackend::run_chunks(uint32_t begin, uint32_t end, uint32_t worker, void* task_context) {
    auto* loop = static_cast<Loop*>(task_context);
    HASHGRID_ASSERT(begin <= end && end <= loop->chunks, "job system passed a range outside [0, item_count)");
    HASHGRID_ASSERT(worker < loop->worker_count, "job system passed a worker index >= JobSystemConfig::worker_count");
    if (end > loop->chunks) end = loop->chunks; // never index past the loop, even with asserts off
    for (uint32_t c = begin; c < end; ++c) {
        const uint32_t first = c * loop->grain;
        const uint32_t last = loop->count - first > loop->grain ? first + loop->grain : loop->count;
        loop->fn(loop->context, first, last, worker);
    }
    // One atomic per range, not per chunk: cheap enough to keep in every build.
    if (begin < end) loop->chunks_run.fetch_add(end - begin, std::memory_order_relaxed);
}

Status JobSystemBackend::validate(const JobSystemConfig& config) {
    Status s;
    s.code = StatusCode::invalid_argument;
    if (config.enqueue == nullptr || config.finish == nullptr)
        s.message = "JobSystemConfig needs enqueue and finish";
    else if (config.worker_count == 0)
        s.message = "JobSystemConfig::worker_count must be >= 1";
    else if (config.inline_worker >= config.worker_count)
        s.message = "JobSystemConfig::inline_worker must be < worker_count";
    else
        return Status{};
    return s;
}

JobSystemBackend::JobSystemBackend(const JobSystemConfig& config) : config_(config), status_(validate(config)) {
    HASHGRID_ASSERT(status_.ok(), status_.message);
    loop_.worker_count = config.worker_count;
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
    if (chunks <= config_.inline_chunk_limit) {
        // Too small to be worth a round trip through the game's queue.
        for (uint32_t c = 0; c < chunks; ++c) {
            const uint32_t first = c * grain;
            const uint32_t last = count - first > grain ? first + grain : count;
            fn(context, first, last, config_.inline_worker);
        }
        return;
    }
    HASHGRID_ASSERT(!busy_.exchange(true, std::memory_order_acquire),
                    "one parallel_for at a time per JobSystemBackend (chunk bodies must not nest them)");
    loop_.fn = fn;
    loop_.context = context;
    loop_.count = count;
    loop_.grain = grain;
    loop_.chunks = chunks;
    loop_.chunks_run.store(0, std::memory_order_relaxed);
    ++enqueued_;
    // min_range 1: every item is already a chunk of `grain` elements, sized by
    // core to be worth a task of its own.
    void* task = config_.enqueue(&run_chunks, chunks, 1, &loop_, config_.user_context);
    if (task != nullptr)
        config_.finish(task, config_.user_context);
    else
        ++inline_by_game_;
    HASHGRID_ASSERT(loop_.chunks_run.load(std::memory_order_relaxed) == chunks,
                    "job system returned before running every item exactly once (enqueue returned null too early, "
                    "finish returned too early, or a range was dropped or run twice)");
    busy_.store(false, std::memory_order_release);
}

} // namespace hashgrid::platform

// Thread backend on a game's own job system, in the style of Box2D v3's task
// hooks (b2EnqueueTaskCallback / b2FinishTaskCallback in box2d/types.h): the
// game gets a task function, an item count and a context, runs the items on
// its workers in whatever ranges it likes, and is later asked to finish
// (wait for) the task. Hashgrid never creates a thread of its own this way.
//
// Recipe:
//   // 1. The game's two callbacks (plain functions, no captures):
//   void* my_enqueue(hashgrid::platform::JobTaskFn task, uint32_t item_count, uint32_t min_range,
//                    void* task_context, void* user_context) {
//       MyJobSystem* jobs = static_cast<MyJobSystem*>(user_context);
//       // Split [0, item_count) into ranges (each >= min_range items, except
//       // possibly the last) and queue them. Each worker that runs a range calls
//       //     task(begin, end, my_worker_index, task_context);
//       // with its own index in [0, worker_count). Return a handle for finish(),
//       // or run everything now, on this thread, and return nullptr.
//       return jobs->submit(task, item_count, min_range, task_context);
//   }
//   void my_finish(void* user_task, void* user_context) {
//       // Return once every range of this task has returned (ideally helping
//       // to run queued ranges meanwhile, as worker `my_worker_index`).
//       static_cast<MyJobSystem*>(user_context)->wait(user_task);
//   }
//   // 2. Once, at init:
//   hashgrid::platform::JobSystemConfig jc;
//   jc.enqueue = &my_enqueue;
//   jc.finish = &my_finish;
//   jc.worker_count = jobs.worker_count();   // every index the game may pass is below this
//   jc.user_context = &jobs;
//   hashgrid::platform::JobSystemBackend adapter(jc);  // holds no heap memory
//   // 3. Every frame, as with any backend:
//   grid.rebuild(spans, adapter.backend());
//   grid.find_pairs(pairs, capacity, adapter.backend());
//
// Contract (what the game guarantees; violations are programmer errors, caught
// by HASHGRID_ASSERT where cheap):
// - Items. An item is one chunk of core's loop (a fixed number of elements
//   chosen by core; the last chunk may be shorter). The game may split
//   [0, item_count) into any ranges, in any order, on any workers, but every
//   item must be covered by exactly one task() call. Chunk boundaries never
//   depend on how the game splits, so results are bit-identical for every job
//   system, worker count and schedule (thread_backend.h).
// - Worker index. The game passes the index of the worker that runs the range,
//   as in Box2D. It must be < worker_count, and two task() calls running at the
//   same time must pass different indices (chunk bodies may use it to pick
//   per-worker scratch). The adapter asserts the bound; uniqueness is the
//   game's to keep (a fixed index per thread does it).
// - Completion. If enqueue returns nullptr, every item has run (inline, on the
//   calling thread or elsewhere) before it returns, and finish() is not called.
//   Otherwise finish(handle) is called exactly once, from the thread that
//   called enqueue, and must return only after every task() call of that task
//   has returned, with release/acquire ordering (a mutex, a condition variable
//   or an atomic wait/notify all give it). A finish() that merely blocks is
//   correct but wastes the calling thread; one that helps run queued ranges is
//   better, and required if the calling thread is itself the only worker.
// - No allocation. The adapter allocates nothing, ever; for Hashgrid's
//   zero-allocation guarantee the game's enqueue/finish must not allocate per
//   call either (preallocate the queue and task records).
// - One parallel loop at a time per adapter: chunk bodies never start another
//   one on the same adapter (core does not), and two threads must not drive
//   one adapter concurrently. Use one adapter per concurrently updated grid.
// - enqueue/finish may be called from any thread that calls into the grid; the
//   task context stays valid until finish() returns (or enqueue returned null).
#pragma once

#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <atomic>
#include <cstdint>

namespace hashgrid::platform {

/// The task the game runs for items [begin, end) of an enqueued task, on the
/// game's worker `worker` (< JobSystemConfig::worker_count). Same shape as
/// Box2D's b2TaskCallback.
using JobTaskFn = void (*)(uint32_t begin, uint32_t end, uint32_t worker, void* task_context);

/// Game callback: run `task` over items [0, item_count), split into ranges of
/// at least `min_range` items (a hint: any split is correct). Returns an opaque
/// handle that is later passed to finish(), or nullptr when all items already
/// ran before the return (then finish() is not called). item_count >= 1.
using JobEnqueueFn = void* (*)(JobTaskFn task, uint32_t item_count, uint32_t min_range, void* task_context,
                               void* user_context);

/// Game callback: returns once every range of the task behind `user_task` (a
/// non-null handle from enqueue) has returned.
using JobFinishFn = void (*)(void* user_task, void* user_context);

/// How the adapter reaches the game's job system. Fixed at construction.
struct JobSystemConfig {
    JobEnqueueFn enqueue = nullptr; ///< Required.
    JobFinishFn finish = nullptr;   ///< Required (called only for non-null handles).
    /// Exclusive upper bound of every worker index the game passes to a task
    /// (also the ThreadBackend's worker_count, so core sizes per-worker data by it). >= 1.
    uint32_t worker_count = 1;
    /// Passed back to enqueue and finish unchanged.
    void* user_context = nullptr;
    /// Loops of at most this many chunks run directly on the calling thread,
    /// without enqueue (a job system round trip costs more than a small chunk).
    /// 0 sends every loop through enqueue.
    uint32_t inline_chunk_limit = 1;
    /// Worker index used for chunks the adapter runs inline itself (see
    /// inline_chunk_limit); < worker_count. Nothing else runs for this loop at
    /// that time, so any index is safe; 0 matches a job system whose calling
    /// thread is worker 0.
    uint32_t inline_worker = 0;
};

/// Adapts a game's job system to core's ThreadBackend. Holds everything it
/// needs inline (no heap memory, nothing allocated per call). Not copyable or
/// movable: backend() points at this object.
class JobSystemBackend {
public:
    /// invalid_argument (message names the field) unless enqueue and finish
    /// are set, worker_count >= 1 and inline_worker < worker_count.
    static Status validate(const JobSystemConfig& config);

    /// Keeps the config. An invalid one (see validate()) also fails a
    /// HASHGRID_ASSERT where asserts are compiled in; in every build status()
    /// then reports it and backend() runs every loop serially on the calling
    /// thread (never a call through a null callback). Results are the same
    /// bytes either way.
    explicit JobSystemBackend(const JobSystemConfig& config);
    JobSystemBackend(const JobSystemBackend&) = delete;
    JobSystemBackend& operator=(const JobSystemBackend&) = delete;

    /// validate(config()): ok, or why backend() runs serially.
    [[nodiscard]] const Status& status() const { return status_; }

    /// The interface core/ uses; valid while this object lives. For an
    /// invalid config: a backend without parallel_for (core runs it serially).
    /// Its parallel_for called with grain 0 or a null chunk function (core
    /// never does) runs nothing, in every build.
    [[nodiscard]] ThreadBackend backend();
    [[nodiscard]] const JobSystemConfig& config() const { return config_; }

    /// Loops sent to the game's enqueue so far, and how many of those the game
    /// ran inline (enqueue returned nullptr). For tests and tuning.
    [[nodiscard]] uint64_t enqueued_loops() const { return enqueued_; }
    [[nodiscard]] uint64_t inline_loops() const { return inline_by_game_; }

private:
    /// One parallel loop of core, described to the game as chunk items.
    struct Loop {
        ChunkFn fn = nullptr;
        void* context = nullptr;
        uint32_t count = 0;        ///< Elements of core's loop.
        uint32_t grain = 1;        ///< Elements per chunk.
        uint32_t chunks = 0;       ///< Items given to the game.
        uint32_t worker_count = 1; ///< Copy of the config's, read by run_chunks.
        /// Chunks run so far, to assert that the game covered every item exactly
        /// once before the loop is over.
        std::atomic<uint32_t> chunks_run{0};
    };

    /// The JobTaskFn given to the game: runs chunks [begin, end) of the Loop.
    static void run_chunks(uint32_t begin, uint32_t end, uint32_t worker, void* task_context);
    static void parallel_for(void* self, uint32_t count, uint32_t grain, ChunkFn fn, void* context);
    void run(uint32_t count, uint32_t grain, ChunkFn fn, void* context);

    JobSystemConfig config_;
    Status status_;
    Loop loop_;
    std::atomic<bool> busy_{false};
    uint64_t enqueued_ = 0;
    uint64_t inline_by_game_ = 0;
};

} // namespace hashgrid::platform

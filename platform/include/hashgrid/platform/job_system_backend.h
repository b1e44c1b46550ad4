// SPDX-License-Identifier: MIT
/// @file
/// Thread backend on a game's own job system. The game gives two callbacks:
/// enqueue, which starts copies of one task function, and finish, which waits
/// for them. Hashgrid never creates a thread of its own this way.
///
/// How this compares. Box2D v3 and Jolt also run on a game's job system.
/// Box2D v3's first task hooks hand the game a parallel-for: split a count of
/// items into ranges, run every item exactly once, and give each range a
/// worker index that no other running range has. Its newer hooks ask only
/// "run this function", one enqueue per task, and the library shares its work
/// out itself; but its solver tasks wait for each other between stages, so
/// running them one after another on one thread can stall. Jolt has the game
/// implement a job graph: jobs with dependency counters and reference-counted
/// handles, barriers to wait on, and a maximum concurrency. Hashgrid needs
/// less than either: its loops are independent chunks whose boundaries depend
/// only on the loop's size, and no chunk waits for another. So the adapter
/// claims the chunks itself from an atomic counter and hands out worker slots
/// itself, and the game only runs one function some number of times,
/// anywhere, in any order, even all on one thread or not at all, then waits
/// for the copies it started. Fewer copies than asked are slower, never
/// wrong: the thread that called Hashgrid runs a copy too and takes whatever
/// chunks are left. Results are bit-identical for every job system, schedule
/// and worker count (thread_backend.h).
///
/// Recipe:
///
///     // 1. The game's two callbacks (plain functions, no captures):
///     void* my_enqueue(hashgrid::platform::JobTaskFn task, uint32_t copies, void* task_context,
///                      void* user_context) {
///         // Queue `copies` jobs that each call task(task_context), and return a
///         // handle for finish(). Or run them here and return nullptr; or run
///         // none and return nullptr (the calling thread then does all the work).
///         return static_cast<MyJobSystem*>(user_context)->push_copies(task, copies, task_context);
///     }
///     void my_finish(void* handle, void* user_context) {
///         // Return once every copy queued under `handle` has returned. Blocking
///         // is fine; running queued jobs meanwhile is better.
///         static_cast<MyJobSystem*>(user_context)->wait(handle);
///     }
///     // 2. Once, at init:
///     hashgrid::platform::JobSystemConfig jc;
///     jc.enqueue = &my_enqueue;
///     jc.finish = &my_finish;
///     jc.worker_count = jobs.thread_count() + 1;  // its threads plus the thread that calls Hashgrid
///     jc.user_context = &jobs;
///     hashgrid::platform::JobSystemBackend adapter(jc);  // holds no heap memory
///     // 3. Every frame, as with any backend:
///     hashgrid::Status s = grid.rebuild(spans, adapter.backend());
///     hashgrid::PairResult p = grid.find_pairs(pairs, capacity, adapter.backend());
///
/// Contract (what the game guarantees):
/// - Copies. enqueue(task, copies, task_context, user_context) asks for up to
///   `copies` calls of task(task_context), on any threads, in any order, at
///   once or one after another, now or later (before finish returns). Any
///   number is correct: none, one, `copies`, or more (a copy beyond what the
///   loop can use returns at once). The task takes no index: the adapter gives
///   each copy its worker slot, so the game has nothing to number.
/// - Completion. enqueue returns a handle, and then finish(handle) is called
///   once, from the thread that called enqueue, after that thread has run its
///   own copy; finish returns once every copy the game started under that
///   handle has returned. Or enqueue returns nullptr when no copy is running or
///   will start any more (it ran them, or none), and finish is not called.
/// - No allocation. The adapter allocates nothing, ever; for Hashgrid's
///   zero-allocation guarantee the game's enqueue/finish must not allocate per
///   call either (preallocate the queue and task records).
/// - One parallel loop at a time per adapter: two threads must not drive one
///   adapter at once, and if finish runs other jobs of the game while it
///   waits, those must not use this adapter. Use one adapter per grid that is
///   updated concurrently with another.
///
/// Misuse that is cheap to notice is a HASHGRID_ASSERT: a copy still running
/// when finish returned (the adapter then waits for it, in every build), a
/// copy that starts after its loop is over (it runs nothing, in every build),
/// two loops at once on one adapter, a task_context that is not the one
/// enqueue received.
#pragma once

#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hashgrid::platform {

/// One copy of a loop's task: the game calls it with the task_context that
/// enqueue received. It runs chunks of the loop until none is left (or
/// returns at once when the loop needs no more help) and never waits for
/// another copy. Same shape as a job system's "void job(void*)".
using JobTaskFn = void (*)(void* task_context);

/// Game callback: start up to `copies` calls of task(task_context) (copies >=
/// 1; any number is correct, see the contract above). Returns an opaque handle
/// that is later passed to finish(), or nullptr when no copy is still running
/// or will start (then finish() is not called).
using JobEnqueueFn = void* (*)(JobTaskFn task, uint32_t copies, void* task_context, void* user_context);

/// Game callback: returns once every copy started under `user_task` (a
/// non-null handle from enqueue) has returned.
using JobFinishFn = void (*)(void* user_task, void* user_context);

/// How the adapter reaches the game's job system. Fixed at construction.
struct JobSystemConfig {
    JobEnqueueFn enqueue = nullptr; ///< Required.
    JobFinishFn finish = nullptr;   ///< Required (called only for non-null handles).
    /// How many threads may work on one loop at once, the thread that calls
    /// Hashgrid included: at most worker_count - 1 copies are asked for. Also
    /// the ThreadBackend's worker_count (core sizes per-worker data by it). >= 1;
    /// 1 runs every loop on the calling thread.
    uint32_t worker_count = 1;
    /// Passed back to enqueue and finish unchanged.
    void* user_context = nullptr;
    /// Loops of at most this many chunks run directly on the calling thread,
    /// without enqueue (a job system round trip costs more than a small chunk).
    /// A loop of one chunk always does.
    uint32_t inline_chunk_limit = 1;
};

/// Adapts a game's job system to core's ThreadBackend. Holds everything it
/// needs inline (no heap memory, nothing allocated per call). Not copyable or
/// movable: backend() and the copies point at this object, so it must outlive
/// every copy the game runs (finish returning guarantees that).
class JobSystemBackend {
public:
    /// invalid_argument (message names the field) unless enqueue and finish
    /// are set and worker_count >= 1.
    [[nodiscard]] static Status validate(const JobSystemConfig& config);

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
    /// The config given at construction.
    [[nodiscard]] const JobSystemConfig& config() const { return config_; }

    /// Loops sent to the game's enqueue so far, and how many of those enqueue
    /// answered with nullptr. For tests and tuning.
    /// @{
    [[nodiscard]] uint64_t enqueued_loops() const { return enqueued_; }
    [[nodiscard]] uint64_t inline_loops() const { return inline_by_game_; }
    /// @}

private:
    /// The counters that copies write get cache lines of their own, away from
    /// the loop's description, which copies only read.
    static constexpr std::size_t kCacheLine = 64;
    static constexpr uint32_t kClosed = 0x80000000u;
    static constexpr uint32_t kLoopTag = 0x4a6f6253u;

    /// One parallel loop of core, shared by the calling thread and the copies.
    struct Loop {
        /// The loop's description. Written by the calling thread only while
        /// the gate is closed with no copy inside; read by copies only inside.
        ChunkFn fn = nullptr;
        void* context = nullptr;
        uint32_t count = 0;  ///< Elements of core's loop.
        uint32_t grain = 1;  ///< Elements per chunk.
        uint32_t chunks = 0; ///< ceil(count / grain).
        uint32_t slots = 0;  ///< Worker slots this loop hands out (<= worker_count).
        uint32_t tag = 0;    ///< kLoopTag: a task_context the game mixed up fails an assert.
        /// kClosed while no loop is running, plus the number of copies inside.
        /// A copy enters by adding one; if it finds kClosed it leaves at once.
        alignas(kCacheLine) std::atomic<uint32_t> gate{kClosed};
        /// Next worker slot; each copy that gets one below `slots` runs chunks with it.
        std::atomic<uint32_t> next_slot{0};
        /// Next chunk to claim. 64-bit: every copy adds one past the end, and a
        /// loop may have 2^32 - 1 chunks.
        alignas(kCacheLine) std::atomic<uint64_t> next_chunk{0};
    };

    /// The JobTaskFn given to the game (the calling thread runs it too).
    static void run_copy(void* task_context);
    static void parallel_for(void* self, uint32_t count, uint32_t grain, ChunkFn fn, void* context);
    void run(uint32_t count, uint32_t grain, ChunkFn fn, void* context);
    /// Closes the gate once no copy is inside (waits if one still is).
    void close_loop();

    JobSystemConfig config_;
    Status status_;
    Loop loop_;
    std::atomic<bool> busy_{false};
    uint64_t enqueued_ = 0;
    uint64_t inline_by_game_ = 0;
};

} // namespace hashgrid::platform

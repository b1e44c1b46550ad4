// SPDX-License-Identifier: MIT
// A game-style job system for the tests of the job-system adapter
// (hashgrid/platform/job_system_backend.h): fixed threads, a preallocated
// queue and task records, nothing allocated after construction. It is
// deliberately awkward about the copies the adapter asks for: per task it
// runs them all inside enqueue, or none at all, or only in finish, or spreads
// them over its threads, or runs them one after another on one thread, or
// starts them after a delay, or runs more or fewer than asked, or has a
// finish that only sleeps. Mode::mixed (the default) picks one of these per
// task at random, and every inline_every-th task runs inline in enqueue.
//
// Worker count: `workers` threads may run copies at once, the thread that
// calls enqueue/finish included, so workers - 1 threads are started.
#pragma once

#include "hashgrid/platform/job_system_backend.h"
#include "hashgrid_support/random.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace hashgrid_test {

class OddJobSystem {
public:
    /// What a task does with the copies it is asked for.
    enum class Mode : uint32_t {
        all_inline,      ///< every copy runs inside enqueue, which returns null
        none,            ///< no copy ever runs; enqueue returns null
        in_finish,       ///< nothing runs until finish, which runs every copy itself
        threads,         ///< one queue entry per copy, for the threads; finish helps
        one_thread,      ///< one queue entry that runs every copy in turn on one thread
        delayed,         ///< like threads, but each copy waits a while before it starts
        many,            ///< 3 * copies + 2 queue entries: more than asked
        one_copy,        ///< a single queue entry: fewer than asked
        half_inline,     ///< half the copies inside enqueue, the rest queued
        blocking_finish, ///< like threads, but finish only sleeps, never helps
        mixed,           ///< each task picks one of the above at random
    };
    static constexpr uint32_t kModes = static_cast<uint32_t>(Mode::mixed);

    struct Options {
        /// Threads that may run copies at once, the caller included (>= 1).
        uint32_t workers = 1;
        /// Seeds the mode choice and the delays.
        uint64_t seed = 1;
        /// Every n-th task runs all its copies inline in enqueue; 0: never.
        uint32_t inline_every = 3;
        Mode mode = Mode::mixed;
        /// Contract violation, for tests of the adapter's checks: finish
        /// returns at once, without waiting for the copies.
        bool early_finish = false;
    };

    explicit OddJobSystem(const Options& options)
        : options_(options), queue_(new Entry[kQueueCapacity]), rng_state_(options.seed) {
        if (options_.workers == 0) options_.workers = 1;
        threads_.reserve(options_.workers - 1);
        for (uint32_t w = 1; w < options_.workers; ++w)
            threads_.emplace_back([this] { worker_loop(); });
    }

    ~OddJobSystem() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        work_ready_.notify_all();
        for (std::thread& t : threads_)
            t.join();
    }

    OddJobSystem(const OddJobSystem&) = delete;
    OddJobSystem& operator=(const OddJobSystem&) = delete;

    /// The callbacks for hashgrid::platform::JobSystemBackend, pointing at this object.
    [[nodiscard]] hashgrid::platform::JobSystemConfig config() {
        hashgrid::platform::JobSystemConfig c;
        c.enqueue = &OddJobSystem::enqueue;
        c.finish = &OddJobSystem::finish;
        c.worker_count = options_.workers;
        c.user_context = this;
        return c;
    }

    /// Returns once every queued copy has run (after early_finish tasks, before
    /// the adapter they point at goes away).
    void drain() {
        std::unique_lock<std::mutex> lock(mutex_);
        idle_.wait(lock, [this] { return head_ == tail_ && running_ == 0; });
    }

    [[nodiscard]] uint32_t workers() const { return options_.workers; }
    /// Tasks received, tasks answered with null, finish() calls.
    [[nodiscard]] uint64_t tasks() const { return tasks_; }
    [[nodiscard]] uint64_t inline_tasks() const { return inline_tasks_; }
    [[nodiscard]] uint64_t finishes() const { return finishes_; }
    /// Tasks per mode (after mixed picked one).
    [[nodiscard]] uint64_t tasks_in(Mode mode) const { return per_mode_[static_cast<uint32_t>(mode)]; }
    /// Copies run in all, and by the job system's own threads.
    [[nodiscard]] uint64_t copies_run() const { return copies_run_.load(); }
    [[nodiscard]] uint64_t copies_run_by_threads() const { return copies_run_by_threads_.load(); }
    /// finish() calls with a handle this system never issued (or twice).
    [[nodiscard]] uint64_t bad_finishes() const { return bad_finishes_; }

private:
    /// A task in flight: how many of its queue entries have not finished.
    struct Record {
        uint32_t pending = 0;  // guarded by mutex_
        bool open = false;     // guarded by mutex_; finish called at most once while open
        bool blocking = false; // finish sleeps instead of helping
        hashgrid::platform::JobTaskFn task = nullptr;
        void* context = nullptr;
        uint32_t deferred = 0; // in_finish: copies finish runs
    };
    /// One queued job: `repeat` copies in turn, after `delay` yields.
    struct Entry {
        hashgrid::platform::JobTaskFn task = nullptr;
        void* context = nullptr;
        uint32_t repeat = 1;
        uint32_t delay = 0;
        Record* record = nullptr;
    };
    /// The adapter runs one loop at a time; a few records leave room for
    /// several adapters on one system.
    static constexpr uint32_t kRecords = 8;
    static constexpr uint32_t kQueueCapacity = 4096;

    uint64_t next_random() { // splitmix64 (support/), called only by the enqueueing thread
        return hashgrid_support::mix64(rng_state_ += hashgrid_support::kSplitMixGamma);
    }
    uint32_t below(uint32_t n) {
        return static_cast<uint32_t>((uint64_t{static_cast<uint32_t>(next_random())} * n) >> 32);
    }

    Mode pick_mode() {
        if (options_.inline_every != 0 && tasks_ % options_.inline_every == 0) return Mode::all_inline;
        Mode mode = options_.mode == Mode::mixed ? static_cast<Mode>(below(kModes)) : options_.mode;
        // Without threads, nothing would ever run a queued copy while finish sleeps.
        if (threads_.empty() && mode == Mode::blocking_finish) mode = Mode::threads;
        return mode;
    }

    static void run_copies(hashgrid::platform::JobTaskFn task, void* context, uint32_t n, OddJobSystem* self) {
        for (uint32_t i = 0; i < n; ++i) {
            task(context);
            self->copies_run_.fetch_add(1, std::memory_order_relaxed);
        }
    }

    static void* enqueue(hashgrid::platform::JobTaskFn task, uint32_t copies, void* context, void* user) {
        auto* self = static_cast<OddJobSystem*>(user);
        ++self->tasks_;
        const Mode mode = self->pick_mode();
        ++self->per_mode_[static_cast<uint32_t>(mode)];
        if (mode == Mode::all_inline || mode == Mode::none) {
            if (mode == Mode::all_inline) run_copies(task, context, copies, self);
            ++self->inline_tasks_;
            return nullptr;
        }
        uint32_t queued = copies; // queue entries
        uint32_t repeat = 1;      // copies per entry
        uint32_t inline_now = 0;  // copies run here before returning
        switch (mode) {
        case Mode::in_finish:
            queued = 0;
            break;
        case Mode::one_thread:
            queued = 1;
            repeat = copies;
            break;
        case Mode::many:
            queued = 3 * copies + 2;
            break;
        case Mode::one_copy:
            queued = 1;
            break;
        case Mode::half_inline:
            inline_now = copies / 2;
            queued = copies - inline_now;
            break;
        default:
            break;
        }
        std::unique_lock<std::mutex> lock(self->mutex_);
        Record* record = self->claim_record();
        if (record == nullptr || self->free_entries() < queued) {
            // Full: run nothing. The adapter's calling thread does the work.
            if (record != nullptr) record->open = false;
            lock.unlock();
            ++self->inline_tasks_;
            return nullptr;
        }
        record->pending = queued;
        record->task = task;
        record->context = context;
        record->deferred = mode == Mode::in_finish ? copies : 0;
        record->blocking = mode == Mode::blocking_finish;
        for (uint32_t e = 0; e < queued; ++e) {
            Entry& entry = self->queue_[self->tail_++ % kQueueCapacity];
            entry.task = task;
            entry.context = context;
            entry.repeat = repeat;
            entry.delay = mode == Mode::delayed ? 200 + self->below(2000) : 0;
            entry.record = record;
        }
        lock.unlock();
        if (queued != 0) self->work_ready_.notify_all();
        run_copies(task, context, inline_now, self);
        return record;
    }

    static void finish(void* handle, void* user) {
        auto* self = static_cast<OddJobSystem*>(user);
        ++self->finishes_;
        std::unique_lock<std::mutex> lock(self->mutex_);
        Record* record = self->find_record(handle);
        if (record == nullptr) {
            ++self->bad_finishes_;
            return;
        }
        if (record->deferred != 0) {
            const uint32_t n = record->deferred;
            record->deferred = 0;
            lock.unlock();
            run_copies(record->task, record->context, n, self);
            lock.lock();
        }
        if (self->options_.early_finish) {
            // Its queued entries still point at the record: claim_record skips
            // it until they have run.
            record->open = false;
            return;
        }
        while (record->pending != 0) {
            if (!record->blocking && self->head_ != self->tail_) {
                self->run_one(lock, false);
            } else {
                self->all_done_.wait(lock);
            }
        }
        record->open = false;
    }

    Record* claim_record() { // with mutex_ held
        for (Record& r : records_) {
            if (!r.open && r.pending == 0) {
                r = Record{};
                r.open = true;
                return &r;
            }
        }
        return nullptr;
    }
    Record* find_record(void* handle) { // with mutex_ held
        for (Record& r : records_)
            if (&r == handle && r.open) return &r;
        return nullptr;
    }
    [[nodiscard]] uint32_t free_entries() const { return kQueueCapacity - (tail_ - head_); }

    /// Pops one entry and runs it unlocked. Called with the lock held and the queue not empty.
    void run_one(std::unique_lock<std::mutex>& lock, bool by_thread) {
        const Entry entry = queue_[head_++ % kQueueCapacity];
        ++running_;
        lock.unlock();
        for (uint32_t i = 0; i < entry.delay; ++i)
            std::this_thread::yield();
        run_copies(entry.task, entry.context, entry.repeat, this);
        if (by_thread) copies_run_by_threads_.fetch_add(entry.repeat, std::memory_order_relaxed);
        lock.lock();
        --running_;
        if (--entry.record->pending == 0) all_done_.notify_all();
        if (head_ == tail_ && running_ == 0) idle_.notify_all();
    }

    void worker_loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_ready_.wait(lock, [this] { return stopping_ || head_ != tail_; });
            if (stopping_) return;
            run_one(lock, true);
        }
    }

    Options options_;
    std::unique_ptr<Entry[]> queue_;   // ring: [head_, tail_) not yet taken
    std::vector<std::thread> threads_; // sized once, at construction
    Record records_[kRecords];         // guarded by mutex_
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable all_done_;
    std::condition_variable idle_;
    uint32_t head_ = 0, tail_ = 0, running_ = 0; // guarded by mutex_
    bool stopping_ = false;                      // guarded by mutex_
    uint64_t rng_state_;
    uint64_t tasks_ = 0, inline_tasks_ = 0, finishes_ = 0, bad_finishes_ = 0; // enqueueing thread only
    uint64_t per_mode_[kModes] = {};                                          // enqueueing thread only
    std::atomic<uint64_t> copies_run_{0};
    std::atomic<uint64_t> copies_run_by_threads_{0};
};

} // namespace hashgrid_test

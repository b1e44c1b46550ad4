// A game-style job system for the tests of the job-system adapter
// (hashgrid/platform/job_system_backend.h): fixed threads, a preallocated
// queue of ranges, nothing allocated after construction. It is deliberately
// awkward: each task's items are split into ranges of pseudo-random sizes
// (single items, long runs, everything in one), queued in a shuffled order,
// and every few tasks run inline inside enqueue (which then returns null).
// finish() helps: the calling thread runs queued ranges as worker 0.
//
// Worker indices: 0 is whichever thread calls enqueue/finish (the frame's
// thread), 1..workers-1 are the job system's own threads, one index each, so
// concurrent ranges never share an index. Inline tasks pass a pseudo-random
// index in [0, workers) (nothing else runs then), to show that any index the
// game passes is fine as long as it is below worker_count.
#pragma once

#include "hashgrid/platform/job_system_backend.h"

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
    struct Options {
        /// Worker indices [0, workers); workers - 1 threads are started.
        uint32_t workers = 1;
        /// Seeds the split sizes, the shuffles, the inline choice.
        uint64_t seed = 1;
        /// Every n-th task runs inline in enqueue (returns null); 0: never.
        uint32_t inline_every = 3;
    };

    explicit OddJobSystem(const Options& options)
        : options_(options), queue_(new Range[kQueueCapacity]), scratch_(new Range[kMaxRangesPerTask]),
          rng_state_(options.seed) {
        if (options_.workers == 0) options_.workers = 1;
        threads_.reserve(options_.workers - 1);
        for (uint32_t w = 1; w < options_.workers; ++w)
            threads_.emplace_back([this, w] { worker_loop(w); });
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

    [[nodiscard]] uint32_t workers() const { return options_.workers; }
    /// Tasks received, tasks run inline in enqueue, finish() calls, ranges run.
    [[nodiscard]] uint64_t tasks() const { return tasks_; }
    [[nodiscard]] uint64_t inline_tasks() const { return inline_tasks_; }
    [[nodiscard]] uint64_t finishes() const { return finishes_; }
    [[nodiscard]] uint64_t ranges_run() const { return ranges_run_.load(); }
    /// Ranges run by the job system's own threads (workers 1..workers-1).
    [[nodiscard]] uint64_t ranges_run_by_threads() const { return ranges_run_by_threads_.load(); }
    /// finish() calls with a handle this system never issued (or twice).
    [[nodiscard]] uint64_t bad_finishes() const { return bad_finishes_; }

private:
    struct Range {
        hashgrid::platform::JobTaskFn task = nullptr;
        void* context = nullptr;
        uint32_t begin = 0;
        uint32_t end = 0;
    };
    /// At most this many ranges per task (larger tasks get longer ranges).
    static constexpr uint32_t kMaxRangesPerTask = 4096;
    static constexpr uint32_t kQueueCapacity = kMaxRangesPerTask;

    uint64_t next_random() { // splitmix64, called only by the enqueueing thread
        uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    uint32_t below(uint32_t n) {
        return static_cast<uint32_t>((uint64_t{static_cast<uint32_t>(next_random())} * n) >> 32);
    }

    /// Splits [0, count) into odd ranges in scratch_, shuffled; returns how many.
    uint32_t split(uint32_t count) {
        const uint32_t min_length = (count + kMaxRangesPerTask - 1) / kMaxRangesPerTask;
        uint32_t ranges = 0;
        for (uint32_t begin = 0; begin < count;) {
            const uint32_t left = count - begin;
            uint32_t length = 1;
            switch (below(6)) {
            case 0:
                length = 1;
                break;
            case 1:
                length = 2;
                break;
            case 2:
                length = 3;
                break;
            case 3:
                length = 1 + below(left);
                break;
            case 4:
                length = 1 + below(left / 3 + 1);
                break;
            default:
                length = below(8) == 0 ? left : 1 + below(7);
                break;
            }
            if (length < min_length) length = min_length;
            if (length > left) length = left;
            scratch_[ranges++] = Range{nullptr, nullptr, begin, begin + length};
            begin += length;
        }
        for (uint32_t i = ranges; i > 1; --i) { // Fisher-Yates shuffle of the queue order
            const uint32_t j = below(i);
            const Range t = scratch_[i - 1];
            scratch_[i - 1] = scratch_[j];
            scratch_[j] = t;
        }
        return ranges;
    }

    static void* enqueue(hashgrid::platform::JobTaskFn task, uint32_t item_count, uint32_t min_range, void* context,
                         void* user) {
        (void)min_range; // a hint only: this system ignores it on purpose
        auto* self = static_cast<OddJobSystem*>(user);
        ++self->tasks_;
        const uint32_t ranges = self->split(item_count);
        if (self->options_.inline_every != 0 && self->tasks_ % self->options_.inline_every == 0) {
            ++self->inline_tasks_;
            const uint32_t worker = self->below(self->options_.workers);
            for (uint32_t r = 0; r < ranges; ++r) {
                task(self->scratch_[r].begin, self->scratch_[r].end, worker, context);
                self->ranges_run_.fetch_add(1, std::memory_order_relaxed);
            }
            return nullptr;
        }
        {
            std::lock_guard<std::mutex> lock(self->mutex_);
            // One task in flight at a time here (the adapter's rule), so the
            // queue is empty and the ranges always fit.
            self->head_ = 0;
            self->tail_ = 0;
            for (uint32_t r = 0; r < ranges; ++r) {
                Range range = self->scratch_[r];
                range.task = task;
                range.context = context;
                self->queue_[self->tail_++] = range;
            }
            self->pending_ = ranges;
            self->handle_open_ = true;
        }
        self->work_ready_.notify_all();
        return &self->handle_open_; // any non-null pointer identifying the task
    }

    static void finish(void* handle, void* user) {
        auto* self = static_cast<OddJobSystem*>(user);
        ++self->finishes_;
        std::unique_lock<std::mutex> lock(self->mutex_);
        if (handle != &self->handle_open_ || !self->handle_open_) {
            ++self->bad_finishes_;
            return;
        }
        while (self->pending_ != 0) {
            if (self->head_ != self->tail_) {
                const Range range = self->queue_[self->head_++];
                lock.unlock();
                self->run(range, 0);
                lock.lock();
            } else {
                self->all_done_.wait(lock);
            }
        }
        self->handle_open_ = false;
    }

    void run(const Range& range, uint32_t worker) {
        range.task(range.begin, range.end, worker, range.context);
        ranges_run_.fetch_add(1, std::memory_order_relaxed);
        if (worker != 0) ranges_run_by_threads_.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard<std::mutex> lock(mutex_);
        if (--pending_ == 0) all_done_.notify_all();
    }

    void worker_loop(uint32_t worker) {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_ready_.wait(lock, [this] { return stopping_ || head_ != tail_; });
            if (stopping_) return;
            const Range range = queue_[head_++];
            lock.unlock();
            run(range, worker);
            lock.lock();
        }
    }

    Options options_;
    std::unique_ptr<Range[]> queue_;   // ranges of the task in flight, [head_, tail_) not yet taken
    std::unique_ptr<Range[]> scratch_; // the next task's ranges before they are queued
    std::vector<std::thread> threads_; // sized once, at construction
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable all_done_;
    uint32_t head_ = 0, tail_ = 0, pending_ = 0; // guarded by mutex_
    bool handle_open_ = false;                   // guarded by mutex_
    bool stopping_ = false;                      // guarded by mutex_
    uint64_t rng_state_;
    uint64_t tasks_ = 0, inline_tasks_ = 0, finishes_ = 0, bad_finishes_ = 0; // enqueueing thread only
    std::atomic<uint64_t> ranges_run_{0};
    std::atomic<uint64_t> ranges_run_by_threads_{0};
};

} // namespace hashgrid_test

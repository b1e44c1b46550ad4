// SPDX-License-Identifier: MIT
// A fixed set of threads that share the chunks of one parallel_for at a time.
// Allocation-free after construction: the job lives in this object, chunk
// indices are claimed from one atomic word that also carries the job's
// generation, and sleeping uses C++20 atomic wait/notify (futex on Linux).
//
// Between jobs a worker first polls for the next one for a short while
// (spin_ns, a backend option) and only then sleeps: a frame's phases follow
// each other within microseconds, and waking a sleeping thread costs tens of
// microseconds, more than a small phase itself. A backend with more threads
// than cores never polls (a polling thread would take a core from one with
// work).
//
// Windows (MinGW): GCC 12's libstdc++ has no native wait there and its
// fallback can miss a wake-up (GCC bug 106183): the tests hung under wine. So
// sleeping goes through a mutex and condition variable on that target.
#pragma once

#include "hashgrid/assert.h"
#include "hashgrid/thread_backend.h"

#include "hashgrid/platform/timer.h"

#include <atomic>
#include <cstdint>
#include <thread>
#if defined(_WIN32)
#include <condition_variable>
#include <mutex>
#endif

namespace hashgrid::platform::detail {

class ChunkDispatcher {
public:
    void set_participants(uint32_t n) { participants_ = n; }
    /// How long a worker polls for the next job before it sleeps (0: sleeps at once).
    void set_spin_ns(uint64_t ns) { spin_ns_ = ns; }
    [[nodiscard]] uint32_t participants() const { return participants_; }

    /// The core-facing interface of this dispatcher (valid while it lives).
    [[nodiscard]] ThreadBackend backend() {
        ThreadBackend b;
        b.parallel_for = [](void* self, uint32_t count, uint32_t grain, ChunkFn fn, void* context) {
            static_cast<ChunkDispatcher*>(self)->run(count, grain, fn, context);
        };
        b.state = this;
        b.worker_count = participants_;
        return b;
    }

    /// Runs all chunks of a job with the caller as worker 0 and returns when all are done.
    void run(uint32_t count, uint32_t grain, ChunkFn fn, void* context) {
        const uint32_t chunks = count / grain + (count % grain != 0 ? 1u : 0u);
        if (chunks == 0) return;
        if (chunks == 1 || participants_ <= 1) {
            for (uint32_t c = 0; c < chunks; ++c)
                call(fn, context, count, grain, c, 0);
            return;
        }
        HASHGRID_ASSERT(!busy_.exchange(true, std::memory_order_acquire),
                        "one parallel_for at a time per backend (chunk bodies must not nest them)");
        // Publish the job: first close the new generation (a straggler of the
        // previous job holding an old claim word now fails its CAS, and one
        // reading the closed word stops), then write the fields, then open
        // it. Fields are atomics so stragglers may read them without a race.
        const uint64_t generation = (claim_.load(std::memory_order_relaxed) >> 32) + 1;
        claim_.store(generation << 32 | kClosed, std::memory_order_seq_cst);
        fn_.store(fn, std::memory_order_relaxed);
        context_.store(context, std::memory_order_relaxed);
        count_.store(count, std::memory_order_relaxed);
        grain_.store(grain, std::memory_order_relaxed);
        chunks_.store(chunks, std::memory_order_relaxed);
        done_.store(0, std::memory_order_relaxed);
        claim_.store(generation << 32, std::memory_order_release);
        wake_.fetch_add(1, std::memory_order_release);
        notify(wake_);
        work(generation, 0);
        // Wait for chunks other threads claimed (short: spin, then yield via wait).
        uint32_t done = done_.load(std::memory_order_acquire);
        for (int spin = 0; done != chunks && spin < 4096; ++spin)
            done = done_.load(std::memory_order_acquire);
        while (done != chunks) {
            wait_while(done_, done);
            done = done_.load(std::memory_order_acquire);
        }
        busy_.store(false, std::memory_order_release);
    }

    /// Body of each worker thread: sleeps until a job is published or stop().
    void worker_loop(uint32_t worker) {
        uint32_t seen = wake_.load(std::memory_order_acquire);
        for (;;) {
            // Checked before sleeping: a loop that starts after stop() (e.g. run
            // by the destructor's wait) must not sleep on the final wake value.
            if (stopping_.load(std::memory_order_acquire)) return;
            if (spin_ns_ > 0) spin_while(wake_, seen, spin_ns_);
            wait_while(wake_, seen);
            seen = wake_.load(std::memory_order_acquire);
            if (stopping_.load(std::memory_order_acquire)) return;
            work(claim_.load(std::memory_order_acquire) >> 32, worker);
        }
    }

    /// Makes every worker_loop return.
    void stop() {
        stopping_.store(true, std::memory_order_release);
        wake_.fetch_add(1, std::memory_order_release);
        notify(wake_);
    }

private:
    /// Polls while word == old, for at most budget_ns. Yields now and then so
    /// that a loaded machine's other threads still run.
    static void spin_while(const std::atomic<uint32_t>& word, uint32_t old, uint64_t budget_ns) {
        const uint64_t start = now_ns();
        for (uint32_t i = 1;; ++i) {
            if (word.load(std::memory_order_acquire) != old) return;
            cpu_relax();
            if ((i & 63) == 0) {
                if (now_ns() - start >= budget_ns) return;
                std::this_thread::yield();
            }
        }
    }
    /// A hint to the core that this is a polling loop (lets the sibling
    /// hyperthread run, saves power).
    static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
        __asm__ __volatile__("yield");
#endif
    }

    /// Sleeps while word == old (returns at once if it already changed).
    void wait_while(std::atomic<uint32_t>& word, uint32_t old) {
#if defined(_WIN32)
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        while (word.load(std::memory_order_acquire) == old)
            sleep_cv_.wait(lock);
#else
        word.wait(old, std::memory_order_acquire);
#endif
    }
    /// Wakes every sleeper of `word` (called after changing it).
    void notify(std::atomic<uint32_t>& word) {
#if defined(_WIN32)
        // Taking the lock orders the change before a waiter's check-then-sleep.
        { const std::lock_guard<std::mutex> lock(sleep_mutex_); }
        (void)word;
        sleep_cv_.notify_all();
#else
        word.notify_all();
#endif
    }

    static void call(ChunkFn fn, void* context, uint32_t count, uint32_t grain, uint32_t c, uint32_t worker) {
        const uint32_t begin = c * grain;
        const uint32_t end = count - begin > grain ? begin + grain : count;
        fn(context, begin, end, worker);
    }

    /// Claims and runs chunks of job `generation` until none is left.
    void work(uint64_t generation, uint32_t worker) {
        for (;;) {
            uint64_t word = claim_.load(std::memory_order_acquire);
            if ((word >> 32) != generation) return;
            const auto chunk = static_cast<uint32_t>(word);
            if (chunk == kClosed) return;
            const uint32_t chunks = chunks_.load(std::memory_order_relaxed);
            if (chunk >= chunks) return;
            const ChunkFn fn = fn_.load(std::memory_order_relaxed);
            void* context = context_.load(std::memory_order_relaxed);
            const uint32_t count = count_.load(std::memory_order_relaxed);
            const uint32_t grain = grain_.load(std::memory_order_relaxed);
            if (!claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) continue;
            call(fn, context, count, grain, chunk, worker);
            if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) notify(done_);
        }
    }

    static constexpr uint32_t kClosed = 0xffffffffu;

    uint32_t participants_ = 1;
    uint64_t spin_ns_ = 0;
    std::atomic<bool> busy_{false};
    std::atomic<uint64_t> claim_{0}; // generation << 32 | next chunk
    std::atomic<uint32_t> wake_{0};
    std::atomic<uint32_t> done_{0};
    std::atomic<bool> stopping_{false};
    std::atomic<ChunkFn> fn_{nullptr};
    std::atomic<void*> context_{nullptr};
    std::atomic<uint32_t> count_{0};
    std::atomic<uint32_t> grain_{1};
    std::atomic<uint32_t> chunks_{0};
#if defined(_WIN32)
    std::mutex sleep_mutex_;
    std::condition_variable sleep_cv_;
#endif
};

} // namespace hashgrid::platform::detail

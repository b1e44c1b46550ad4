// SPDX-License-Identifier: MIT
// job_system_demo: Hashgrid on a game's own job system.
//
// A game usually owns its threads. This demo has a small job system of its own
// (JobSystem below: fixed worker threads started once, a fixed ring of jobs
// and a fixed pool of batch records, nothing allocated per frame) and plugs
// it into Hashgrid through hashgrid::platform::JobSystemBackend with two
// callbacks: enqueue_task queues copies of one job, finish_task waits for
// them. The game's own particle motion runs through the same adapter (any
// loop can). Every frame the particles move, the grid is
// rebuilt, pairs and neighbour lists are found through the job system, and
// the same frame is repeated on a second grid with the serial backend: the
// pairs, the sorted order and the neighbour lists must be identical (the
// library's determinism guarantee). Prints per-phase timings; exits nonzero on
// any mismatch or error.
//
//   job_system_demo [--frames N] [--particles N] [--workers N]

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/platform/aligned_memory.h"
#include "hashgrid/platform/job_system_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/random.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using hashgrid::Pair;
using hashgrid::PairResult;
using hashgrid::Status;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::JobTaskFn;
using hashgrid::platform::now_ns;

// ---------------------------------------------------------------------------
// The game's job system.

/// Fixed worker threads and a fixed ring of jobs; a job is a function and its
/// context. The thread that submits and waits (the main thread here) counts
/// as a worker too: threads 1..workers-1 are started once and sleep on a
/// condition variable between jobs. A batch of identical jobs shares a record
/// from a fixed pool that counts the jobs still to finish. When the ring or
/// the pool is full, nothing is queued and enqueue returns null: Hashgrid's
/// adapter then runs the whole loop on the calling thread.
class JobSystem {
public:
    explicit JobSystem(uint32_t workers) : workers_(workers < 1 ? 1 : workers) {
        threads_.reserve(workers_ - 1);
        for (uint32_t w = 1; w < workers_; ++w)
            threads_.emplace_back([this] { worker_loop(); });
    }

    ~JobSystem() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        job_ready_.notify_all();
        for (std::thread& t : threads_)
            t.join();
    }

    JobSystem(const JobSystem&) = delete;
    JobSystem& operator=(const JobSystem&) = delete;

    [[nodiscard]] uint32_t worker_count() const { return workers_; }
    [[nodiscard]] uint64_t batches_queued() const { return batches_queued_; }
    [[nodiscard]] uint64_t batches_refused() const { return batches_refused_; }

    /// Hashgrid's enqueue hook (hashgrid::platform::JobEnqueueFn): queue
    /// `copies` jobs that each call task(task_context).
    static void* enqueue_task(JobTaskFn task, uint32_t copies, void* task_context, void* user_context) {
        return static_cast<JobSystem*>(user_context)->submit(task, copies, task_context);
    }

    /// Hashgrid's finish hook (hashgrid::platform::JobFinishFn).
    static void finish_task(void* handle, void* user_context) {
        static_cast<JobSystem*>(user_context)->wait(static_cast<Batch*>(handle));
    }

private:
    struct Batch {
        uint32_t jobs_left = 0; // guarded by mutex_
        bool in_use = false;    // guarded by mutex_
    };
    struct Job {
        JobTaskFn fn = nullptr;
        void* context = nullptr;
        Batch* batch = nullptr;
    };
    static constexpr uint32_t kRingCapacity = 1024;
    static constexpr uint32_t kMaxBatches = 16;

    /// Queues `count` jobs fn(context) under one batch record, or nothing
    /// (returns null) when the ring or the pool is full.
    void* submit(JobTaskFn fn, uint32_t count, void* context) {
        Batch* batch = nullptr;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (ring_size_ + count <= kRingCapacity) batch = claim_batch();
            if (batch != nullptr) {
                batch->jobs_left = count;
                for (uint32_t j = 0; j < count; ++j)
                    ring_[(ring_head_ + ring_size_++) % kRingCapacity] = Job{fn, context, batch};
            }
        }
        if (batch == nullptr) {
            ++batches_refused_;
            return nullptr;
        }
        ++batches_queued_;
        job_ready_.notify_all();
        return batch;
    }

    /// Helps run queued jobs until the batch's jobs are done.
    void wait(Batch* batch) {
        std::unique_lock<std::mutex> lock(mutex_);
        while (batch->jobs_left != 0) {
            if (ring_size_ != 0) {
                run_one(lock);
            } else {
                batch_done_.wait(lock);
            }
        }
        batch->in_use = false;
    }

    /// Pops one job, runs it unlocked, and retires it. Called with the lock held.
    void run_one(std::unique_lock<std::mutex>& lock) {
        const Job job = ring_[ring_head_];
        ring_head_ = (ring_head_ + 1) % kRingCapacity;
        --ring_size_;
        lock.unlock();
        job.fn(job.context);
        lock.lock();
        if (--job.batch->jobs_left == 0) batch_done_.notify_all();
    }

    void worker_loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            job_ready_.wait(lock, [this] { return stopping_ || ring_size_ != 0; });
            if (stopping_) return;
            run_one(lock);
        }
    }

    Batch* claim_batch() {
        for (Batch& b : batches_) {
            if (!b.in_use) {
                b.in_use = true;
                return &b;
            }
        }
        return nullptr;
    }

    uint32_t workers_;
    std::vector<std::thread> threads_; // sized once
    std::mutex mutex_;
    std::condition_variable job_ready_;
    std::condition_variable batch_done_;
    std::array<Job, kRingCapacity> ring_{};
    uint32_t ring_head_ = 0, ring_size_ = 0; // guarded by mutex_
    std::array<Batch, kMaxBatches> batches_{};
    bool stopping_ = false;                             // guarded by mutex_
    uint64_t batches_queued_ = 0, batches_refused_ = 0; // submitting thread only
};

// ---------------------------------------------------------------------------
// The demo.

struct Options {
    uint32_t frames = 10;
    uint32_t particles = 100000;
    uint32_t workers = 0; ///< 0: hardware threads.
};

bool parse_options(int argc, char** argv, Options& options) {
    if (!hashgrid_support::parse_count_options(
            argc, argv,
            {{"--frames", &options.frames}, {"--particles", &options.particles}, {"--workers", &options.workers}}))
        return false;
    if (options.frames == 0 || options.particles < 2 || options.workers > 256) {
        std::fprintf(stderr, "need --frames >= 1, --particles >= 2, --workers <= 256\n");
        return false;
    }
    if (options.workers == 0) options.workers = std::max(1u, std::thread::hardware_concurrency());
    return true;
}

/// The shared splitmix64 of the examples and tests (support/).
using Rng = hashgrid_support::SplitMix64;

/// One grid with its memory block and output buffers, all sized once.
struct GridSlot {
    hashgrid::platform::AlignedBlock memory;
    hashgrid::Grid grid;
    std::vector<Pair> pairs;
    std::vector<uint32_t> offsets, indices;
    PairResult result;

    bool init(const hashgrid::GridConfig& config) {
        const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
        if (!req.status.ok()) return report("memory_requirements", req.status);
        memory = hashgrid::platform::AlignedBlock::allocate(req.bytes, req.alignment);
        if (!memory) {
            std::printf("out of memory (%llu bytes)\n", static_cast<unsigned long long>(req.bytes));
            return false;
        }
        const Status s = grid.init(config, memory.data(), memory.size());
        if (!s.ok()) return report("init", s);
        pairs.resize(static_cast<size_t>(config.max_pairs));
        offsets.resize(config.max_particles + size_t{1});
        indices.resize(static_cast<size_t>(2 * config.max_pairs));
        return true;
    }

    /// rebuild + find_pairs + neighbor_lists; fills the three wall times (ms).
    bool frame(const hashgrid::ParticleSpans& spans, const hashgrid::ThreadBackend& backend, double ms[3]) {
        uint64_t start = now_ns();
        const Status rebuilt = grid.rebuild(spans, backend);
        ms[0] = elapsed_ms(start);
        if (!rebuilt.ok()) return report("rebuild", rebuilt);
        start = now_ns();
        result = grid.find_pairs(pairs.data(), pairs.size(), backend);
        ms[1] = elapsed_ms(start);
        if (!result.status.ok()) return report("find_pairs", result.status);
        start = now_ns();
        const Status csr = grid.neighbor_lists(pairs.data(), result.written, offsets.data(), offsets.size(),
                                               indices.data(), indices.size(), backend);
        ms[2] = elapsed_ms(start);
        if (!csr.ok()) return report("neighbor_lists", csr);
        return true;
    }

    static bool report(const char* what, const Status& s) {
        std::printf("%s failed: %s (%s), needed %llu\n", what, hashgrid::to_string(s.code), s.message,
                    static_cast<unsigned long long>(s.needed));
        return false;
    }
};

/// "" when both grids hold the same frame, else the first difference.
const char* compare(const GridSlot& a, const GridSlot& b) {
    if (a.result.total != b.result.total || a.result.written != b.result.written) return "pair count";
    const uint32_t n = a.grid.particle_count();
    if (n != b.grid.particle_count()) return "particle count";
    const Pair* pa = a.pairs.data();
    const Pair* pb = b.pairs.data();
    for (uint64_t k = 0; k < a.result.written; ++k)
        if (pa[k].a != pb[k].a || pa[k].b != pb[k].b) return "pair order or contents";
    if (!std::equal(a.grid.sorted_to_original(), a.grid.sorted_to_original() + n, b.grid.sorted_to_original()))
        return "sorted order";
    if (!std::equal(a.offsets.begin(), a.offsets.begin() + n + 1, b.offsets.begin())) return "neighbour offsets";
    if (!std::equal(a.indices.begin(), a.indices.begin() + static_cast<std::ptrdiff_t>(2 * a.result.written),
                    b.indices.begin()))
        return "neighbour indices";
    return "";
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    if (!parse_options(argc, argv, options)) return 2;

    // The game's job system, and Hashgrid's view of it.
    JobSystem jobs(options.workers);
    hashgrid::platform::JobSystemConfig jc;
    jc.enqueue = &JobSystem::enqueue_task;
    jc.finish = &JobSystem::finish_task;
    jc.worker_count = jobs.worker_count();
    jc.user_context = &jobs;
    hashgrid::platform::JobSystemBackend adapter(jc);
    const hashgrid::ThreadBackend backend = adapter.backend();

    // Particles in the unit cube, ~16 neighbours within r.
    const uint32_t n = options.particles;
    const double pi = 3.14159265358979323846;
    const float r = static_cast<float>(std::cbrt(16.0 * 3.0 / (4.0 * pi * static_cast<double>(n))));
    std::vector<float> pos[3], vel[3];
    Rng rng(0x10b5);
    for (uint32_t axis = 0; axis < 3; ++axis) {
        pos[axis].resize(n);
        vel[axis].resize(n);
        for (uint32_t i = 0; i < n; ++i) {
            pos[axis][i] = rng.uniform(0.0f, 1.0f);
            vel[axis][i] = rng.uniform(-0.3f * r, 0.3f * r);
        }
    }

    hashgrid::GridConfig config;
    config.dimensions = 3;
    config.cell_size = r;
    config.interaction_distance = r;
    config.world = hashgrid::World::unbounded;
    config.max_particles = n;
    config.max_cells = n;
    config.max_pairs = 16ull * n + 1024; // ~8 pairs per particle expected; pair_capacity would say so
    GridSlot jobbed, serial;
    if (!jobbed.init(config) || !serial.init(config)) return 1;

    std::printf("job_system_demo: %u particles in the unit cube, r = %.5g, %u workers (%u threads + main)\n", n,
                static_cast<double>(r), jobs.worker_count(), jobs.worker_count() - 1);
    std::printf("frame | move | job system: rebuild (keys table scan scatter finalize) pairs csr | serial: rebuild "
                "pairs csr | pairs | same\n");

    // The game's own work, on its job system through the adapter: move and
    // bounce off the walls.
    auto move = [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t axis = 0; axis < 3; ++axis) {
            float* p = pos[axis].data();
            float* v = vel[axis].data();
            for (uint32_t i = begin; i < end; ++i) {
                float q = p[i] + v[i];
                if (q < 0.0f || q > 1.0f) {
                    v[i] = -v[i];
                    q = std::clamp(p[i] + v[i], 0.0f, 1.0f);
                }
                p[i] = q;
            }
        }
    };

    bool all_same = true;
    std::vector<double> job_ms[3], serial_ms[3];
    for (int k = 0; k < 3; ++k) { // sized once: the frame loop allocates nothing
        job_ms[k].reserve(options.frames);
        serial_ms[k].reserve(options.frames);
    }
    for (uint32_t frame = 0; frame < options.frames; ++frame) {
        const uint64_t move_start = now_ns();
        hashgrid::parallel_chunks(backend, n, 4096, move);
        const double move_ms = elapsed_ms(move_start);

        const hashgrid::ParticleSpans spans{pos[0].data(), pos[1].data(), pos[2].data(), nullptr, n};
        double jt[3], st[3];
        if (!jobbed.frame(spans, backend, jt)) return 1;
        if (!serial.frame(spans, hashgrid::serial_backend(), st)) return 1;
        const char* difference = compare(jobbed, serial);
        all_same = all_same && difference[0] == '\0';
        for (int k = 0; k < 3; ++k) {
            job_ms[k].push_back(jt[k]);
            serial_ms[k].push_back(st[k]);
        }
        const hashgrid::RebuildTimings& rt = jobbed.grid.last_rebuild_timings();
        std::printf(
            "%5u | %5.2f | %7.2f (%5.2f %5.2f %5.2f %5.2f %5.2f) %7.2f %6.2f | %7.2f %7.2f %6.2f | %8llu | %s\n", frame,
            move_ms, jt[0], static_cast<double>(rt.keys) * 1e-6, static_cast<double>(rt.table) * 1e-6,
            static_cast<double>(rt.scan) * 1e-6, static_cast<double>(rt.scatter) * 1e-6,
            static_cast<double>(rt.finalize) * 1e-6, jt[1], jt[2], st[0], st[1], st[2],
            static_cast<unsigned long long>(jobbed.result.total), difference[0] == '\0' ? "yes" : difference);
    }

    std::printf("median ms: job system rebuild %.2f pairs %.2f csr %.2f | serial rebuild %.2f pairs %.2f csr %.2f\n",
                median(job_ms[0]), median(job_ms[1]), median(job_ms[2]), median(serial_ms[0]), median(serial_ms[1]),
                median(serial_ms[2]));
    std::printf("adapter: %llu loops sent to the job system (%llu answered with null); job system: %llu batches "
                "queued, %llu refused (pool or ring full)\n",
                static_cast<unsigned long long>(adapter.enqueued_loops()),
                static_cast<unsigned long long>(adapter.inline_loops()),
                static_cast<unsigned long long>(jobs.batches_queued()),
                static_cast<unsigned long long>(jobs.batches_refused()));
    std::printf("%s: pairs, sorted order and neighbour lists %s the serial backend's in all %u frames\n",
                all_same ? "PASS" : "FAIL", all_same ? "match" : "do NOT match", options.frames);
    return all_same ? 0 : 1;
}

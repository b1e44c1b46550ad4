// job_system_demo: Hashgrid on a game's own job system.
//
// A game usually owns its threads. This demo has a small job system of its own
// (JobSystem below: fixed worker threads started once, a fixed ring of jobs
// and a fixed pool of task records, nothing allocated per frame), uses it for
// its own particle motion, and plugs it into Hashgrid through
// hashgrid::platform::JobSystemBackend with two Box2D-style callbacks
// (enqueue_task / finish_task). Every frame the particles move, the grid is
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

/// Fixed worker threads and a fixed job ring. Worker 0 is the thread that
/// submits and finishes tasks (the main thread here); threads 1..workers-1
/// are started once and sleep on a condition variable between jobs. A task is
/// split into ranges of at least min_range items, a few per worker, so that
/// faster threads take more. When the ring or the task pool is full, or a task
/// has a single range, the task runs at once on the caller and enqueue returns
/// null (Hashgrid's adapter then skips finish).
class JobSystem {
public:
    explicit JobSystem(uint32_t workers) : workers_(workers < 1 ? 1 : workers) {
        threads_.reserve(workers_ - 1);
        for (uint32_t w = 1; w < workers_; ++w)
            threads_.emplace_back([this, w] { worker_loop(w); });
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
    [[nodiscard]] uint64_t tasks_queued() const { return tasks_queued_; }
    [[nodiscard]] uint64_t tasks_inline() const { return tasks_inline_; }

    /// Box2D-style enqueue hook (hashgrid::platform::JobEnqueueFn).
    static void* enqueue_task(JobTaskFn task, uint32_t item_count, uint32_t min_range, void* task_context,
                              void* user_context) {
        return static_cast<JobSystem*>(user_context)->submit(task, item_count, min_range, task_context);
    }

    /// Box2D-style finish hook (hashgrid::platform::JobFinishFn).
    static void finish_task(void* handle, void* user_context) {
        static_cast<JobSystem*>(user_context)->wait(static_cast<Task*>(handle));
    }

    /// The game's own parallel loop on the same workers: body(begin, end, worker).
    template <typename Body>
    void parallel_for(uint32_t count, uint32_t min_range, Body& body) {
        auto trampoline = [](uint32_t begin, uint32_t end, uint32_t worker, void* context) {
            (*static_cast<Body*>(context))(begin, end, worker);
        };
        if (count == 0) return;
        wait(static_cast<Task*>(submit(trampoline, count, min_range, &body)));
    }

private:
    struct Task {
        uint32_t ranges_left = 0; // guarded by mutex_
        bool in_use = false;      // guarded by mutex_
    };
    struct Job {
        JobTaskFn fn = nullptr;
        void* context = nullptr;
        uint32_t begin = 0;
        uint32_t end = 0;
        Task* task = nullptr;
    };
    static constexpr uint32_t kRingCapacity = 1024;
    static constexpr uint32_t kMaxTasks = 16;
    static constexpr uint32_t kRangesPerWorker = 4;

    /// Queues the ranges of a task and returns its record, or runs it at once
    /// (returns null) when it is a single range or nothing is free.
    void* submit(JobTaskFn fn, uint32_t items, uint32_t min_range, void* context) {
        const uint32_t by_size = items / (min_range < 1 ? 1 : min_range);
        const uint32_t ranges = std::clamp<uint32_t>(by_size, 1, workers_ * kRangesPerWorker);
        Task* task = nullptr;
        if (ranges > 1 && workers_ > 1) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (ring_size_ + ranges <= kRingCapacity) task = claim_task();
            if (task != nullptr) {
                task->ranges_left = ranges;
                // Even split: range r covers [items * r / ranges, items * (r + 1) / ranges).
                for (uint32_t r = 0; r < ranges; ++r) {
                    Job& job = ring_[(ring_head_ + ring_size_++) % kRingCapacity];
                    job.fn = fn;
                    job.context = context;
                    job.begin = static_cast<uint32_t>(uint64_t{items} * r / ranges);
                    job.end = static_cast<uint32_t>(uint64_t{items} * (r + 1) / ranges);
                    job.task = task;
                }
            }
        }
        if (task == nullptr) {
            ++tasks_inline_;
            fn(0, items, 0, context); // the caller is worker 0
            return nullptr;
        }
        ++tasks_queued_;
        job_ready_.notify_all();
        return task;
    }

    /// Helps run queued jobs (as worker 0) until the task's ranges are done.
    void wait(Task* task) {
        if (task == nullptr) return;
        std::unique_lock<std::mutex> lock(mutex_);
        while (task->ranges_left != 0) {
            if (ring_size_ != 0) {
                run_one(lock, 0);
            } else {
                task_done_.wait(lock);
            }
        }
        task->in_use = false;
    }

    /// Pops one job, runs it unlocked, and retires it. Called with the lock held.
    void run_one(std::unique_lock<std::mutex>& lock, uint32_t worker) {
        const Job job = ring_[ring_head_];
        ring_head_ = (ring_head_ + 1) % kRingCapacity;
        --ring_size_;
        lock.unlock();
        job.fn(job.begin, job.end, worker, job.context);
        lock.lock();
        if (--job.task->ranges_left == 0) task_done_.notify_all();
    }

    void worker_loop(uint32_t worker) {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            job_ready_.wait(lock, [this] { return stopping_ || ring_size_ != 0; });
            if (stopping_) return;
            run_one(lock, worker);
        }
    }

    Task* claim_task() {
        for (Task& t : tasks_) {
            if (!t.in_use) {
                t.in_use = true;
                return &t;
            }
        }
        return nullptr;
    }

    uint32_t workers_;
    std::vector<std::thread> threads_; // sized once
    std::mutex mutex_;
    std::condition_variable job_ready_;
    std::condition_variable task_done_;
    std::array<Job, kRingCapacity> ring_{};
    uint32_t ring_head_ = 0, ring_size_ = 0; // guarded by mutex_
    std::array<Task, kMaxTasks> tasks_{};
    bool stopping_ = false;                        // guarded by mutex_
    uint64_t tasks_queued_ = 0, tasks_inline_ = 0; // submitting thread only
};

// ---------------------------------------------------------------------------
// The demo.

struct Options {
    uint32_t frames = 10;
    uint32_t particles = 100000;
    uint32_t workers = 0; ///< 0: hardware threads.
};

bool parse_u32(const char* text, uint32_t& value) {
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || parsed > 0x7fffffffull) return false;
    value = static_cast<uint32_t>(parsed);
    return true;
}

bool parse_options(int argc, char** argv, Options& options) {
    for (int i = 1; i < argc; i += 2) {
        uint32_t* target = nullptr;
        if (std::strcmp(argv[i], "--frames") == 0) target = &options.frames;
        if (std::strcmp(argv[i], "--particles") == 0) target = &options.particles;
        if (std::strcmp(argv[i], "--workers") == 0) target = &options.workers;
        if (target == nullptr || i + 1 >= argc || !parse_u32(argv[i + 1], *target)) {
            std::fprintf(stderr, "usage: %s [--frames N] [--particles N] [--workers N]\n", argv[0]);
            return false;
        }
    }
    if (options.frames == 0 || options.particles < 2 || options.workers > 256) {
        std::fprintf(stderr, "need --frames >= 1, --particles >= 2, --workers <= 256\n");
        return false;
    }
    if (options.workers == 0) options.workers = std::max(1u, std::thread::hardware_concurrency());
    return true;
}

/// splitmix64 with a 24-bit float mapping.
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * (static_cast<float>(next() >> 40) * 0x1.0p-24f); }

private:
    uint64_t state_;
};

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
    if (a.result.pair_count != b.result.pair_count || a.result.written != b.result.written) return "pair count";
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

    // The game's own work on its job system: move and bounce off the walls.
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
        jobs.parallel_for(n, 4096, move);
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
            static_cast<unsigned long long>(jobbed.result.pair_count), difference[0] == '\0' ? "yes" : difference);
    }

    std::printf("median ms: job system rebuild %.2f pairs %.2f csr %.2f | serial rebuild %.2f pairs %.2f csr %.2f\n",
                median(job_ms[0]), median(job_ms[1]), median(job_ms[2]), median(serial_ms[0]), median(serial_ms[1]),
                median(serial_ms[2]));
    std::printf("job system: %llu tasks queued, %llu run at once on the caller; Hashgrid loops through the adapter: "
                "%llu enqueued (%llu run inline by the job system)\n",
                static_cast<unsigned long long>(jobs.tasks_queued()),
                static_cast<unsigned long long>(jobs.tasks_inline()),
                static_cast<unsigned long long>(adapter.enqueued_loops()),
                static_cast<unsigned long long>(adapter.inline_loops()));
    std::printf("%s: pairs, sorted order and neighbour lists %s the serial backend's in all %u frames\n",
                all_same ? "PASS" : "FAIL", all_same ? "match" : "do NOT match", options.frames);
    return all_same ? 0 : 1;
}

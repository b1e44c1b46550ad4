// SPDX-License-Identifier: MIT
// The platform layer for a game's own job system and its helpers:
// (a) JobSystemBackend (job_system_backend.h) gives the golden hashes of the
//     fixed scenes (golden_scenes.h) at 1, 2, 3, 4, 7, 8 and 16 workers on a
//     job system that treats the copies it is asked for oddly
//     (odd_job_system.h); each of its ways, alone, gives the serial backend's
//     bytes; frames through it allocate nothing;
// (b) the ThreadBackend contract through the adapter: every chunk exactly
//     once with core's boundaries, the worker index below worker_count and
//     distinct between chunks running at the same time, for many
//     (count, grain); small loops run inline without enqueue;
// (c) the enqueue/finish protocol: how many copies are asked for, a null
//     handle means no finish, a handle comes back unchanged exactly once,
//     fewer or more copies than asked are correct; the game's mistakes
//     (finish returning early, a copy after its loop) are asserts and
//     harmless; an invalid config is a status;
// (d) assert_hook.h (the counting hook and its log callback) and
//     aligned_memory.h (aligned allocation, the move-only owner).
#include <doctest/doctest.h>

#include "golden_hashes.h"
#include "golden_scenes.h"
#include "hashgrid/platform/aligned_memory.h"
#include "hashgrid/platform/assert_hook.h"
#include "hashgrid/platform/job_system_backend.h"
#include "odd_job_system.h"
#include "test_support.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// ---------------------------------------------------------------------------
// Every plain operator new of the process is counted, so that the frames
// below can show they allocate nothing. test_zero_alloc counts every
// allocator entry point, but only on Linux without sanitizers; this count
// works in every build (new and delete are replaced as a pair, so sanitizers
// see matching calls).

namespace {
std::atomic<uint64_t> g_news{0};
} // namespace

/// Where the counter's self-check lets its pointer escape (so the allocation is not elided).
void* volatile g_sink = nullptr;

void* operator new(std::size_t size) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    void* p = std::malloc(size != 0 ? size : 1);
    if (p == nullptr) std::abort(); // the tests never run out of memory; no exceptions in the console build
    return p;
}
namespace {
/// Out of line: inlined into a delete, GCC would see free() on memory from
/// operator new and warn (-Wmismatched-new-delete), though the pair matches.
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }
} // namespace
void operator delete(void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }

using namespace hashgrid_test;
using hashgrid::platform::AlignedBlock;
using hashgrid::platform::JobSystemBackend;
using hashgrid::platform::JobSystemConfig;
using hashgrid::platform::JobTaskFn;
using hashgrid::platform::ScopedCountingAssertHook;
using Mode = OddJobSystem::Mode;

namespace {

constexpr Mode kEveryMode[] = {Mode::all_inline, Mode::none, Mode::in_finish, Mode::threads,     Mode::one_thread,
                               Mode::delayed,    Mode::many, Mode::one_copy,  Mode::half_inline, Mode::blocking_finish};
static_assert(sizeof(kEveryMode) / sizeof(kEveryMode[0]) == OddJobSystem::kModes);

// ---------------------------------------------------------------------------
// A chunk body that records every call.

struct ChunkRecord {
    uint32_t count = 0, grain = 0, worker_count = 0;
    std::unique_ptr<std::atomic<uint32_t>[]> calls;     // per chunk
    std::unique_ptr<std::atomic<uint32_t>[]> in_flight; // per worker index: a chunk is running with it
    std::atomic<uint32_t> bad_range{0}, bad_worker{0}, shared_worker{0}, total{0};
    std::atomic<uint32_t> max_worker{0};
};

void record_chunk(void* context, uint32_t begin, uint32_t end, uint32_t worker) {
    auto* r = static_cast<ChunkRecord*>(context);
    const uint32_t expected_end = r->count - begin > r->grain ? begin + r->grain : r->count;
    if (begin % r->grain != 0 || begin >= r->count || end != expected_end) {
        r->bad_range.fetch_add(1);
        return;
    }
    uint32_t seen = r->max_worker.load();
    while (worker > seen && !r->max_worker.compare_exchange_weak(seen, worker)) {
    }
    if (worker >= r->worker_count) {
        r->bad_worker.fetch_add(1);
    } else if (r->in_flight[worker].exchange(1) != 0) {
        r->shared_worker.fetch_add(1); // another chunk runs with this index right now
    }
    r->calls[begin / r->grain].fetch_add(1);
    if (worker < r->worker_count) r->in_flight[worker].store(0);
    r->total.fetch_add(1, std::memory_order_release);
}

/// One parallel_for; "" if every chunk ran exactly once as the contract says.
std::string check_chunks(const hashgrid::ThreadBackend& backend, uint32_t count, uint32_t grain,
                         uint32_t* max_worker = nullptr) {
    ChunkRecord r;
    r.count = count;
    r.grain = grain;
    r.worker_count = backend.worker_count;
    const uint32_t chunks = count / grain + (count % grain != 0 ? 1u : 0u);
    r.calls = std::make_unique<std::atomic<uint32_t>[]>(chunks + 1);
    r.in_flight = std::make_unique<std::atomic<uint32_t>[]>(backend.worker_count);
    backend.parallel_for(backend.state, count, grain, record_chunk, &r);
    if (max_worker != nullptr) *max_worker = r.max_worker.load();
    const uint32_t total = r.total.load(std::memory_order_acquire);
    if (r.bad_range.load() != 0) return "a chunk had the wrong [begin, end)";
    if (r.bad_worker.load() != 0) return "worker index >= worker_count";
    if (r.shared_worker.load() != 0) return "two chunks ran at the same time with one worker index";
    if (total != chunks)
        return "parallel_for returned after " + std::to_string(total) + " of " + std::to_string(chunks) + " chunks";
    for (uint32_t c = 0; c < chunks; ++c)
        if (r.calls[c].load() != 1)
            return "chunk " + std::to_string(c) + " ran " + std::to_string(r.calls[c].load()) + " times";
    return "";
}

// ---------------------------------------------------------------------------
// Frames on preallocated buffers, compared byte for byte.

struct FrameRun {
    std::unique_ptr<OwnedGrid> grid;
    std::vector<Pair> pairs;
    std::vector<uint32_t> offsets, indices;
    hashgrid::Status rebuilt, csr;
    hashgrid::PairResult result;

    explicit FrameRun(const hashgrid::GridConfig& config)
        : grid(make_grid(config)), pairs(static_cast<size_t>(config.max_pairs)), offsets(config.max_particles + 1u),
          indices(static_cast<size_t>(2 * config.max_pairs)) {}

    /// rebuild + find_pairs + neighbor_lists. Allocates nothing.
    void frame(const hashgrid::ParticleSpans& spans, const hashgrid::ThreadBackend& backend) {
        hashgrid::Grid& g = **grid;
        rebuilt = g.rebuild(spans, backend);
        result = g.find_pairs(pairs.data(), pairs.size(), backend);
        csr = g.neighbor_lists(pairs.data(), result.written, offsets.data(), offsets.size(), indices.data(),
                               indices.size(), backend);
    }
    [[nodiscard]] bool ok() const { return grid->init_status.ok() && rebuilt.ok() && result.status.ok() && csr.ok(); }
};

/// "" when both runs hold the same bytes, else what differs.
std::string same_bytes(FrameRun& a, FrameRun& b) {
    if (!a.ok() || !b.ok()) return "a call failed";
    if (a.result.total != b.result.total || a.result.written != b.result.written) return "pair count";
    const uint32_t n = (*a.grid)->particle_count();
    if (n != (*b.grid)->particle_count()) return "particle count";
    const auto bytes = [](const auto* p, uint64_t count) { return static_cast<size_t>(count) * sizeof(*p); };
    if (std::memcmp(a.pairs.data(), b.pairs.data(), bytes(a.pairs.data(), a.result.written)) != 0) return "pairs";
    if (std::memcmp((*a.grid)->sorted_to_original(), (*b.grid)->sorted_to_original(),
                    bytes((*a.grid)->sorted_to_original(), n)) != 0)
        return "sorted order";
    if (std::memcmp(a.offsets.data(), b.offsets.data(), bytes(a.offsets.data(), n + 1u)) != 0) return "offsets";
    if (std::memcmp(a.indices.data(), b.indices.data(), bytes(a.indices.data(), 2 * a.result.written)) != 0)
        return "indices";
    return "";
}

/// Moves every particle of `base` a little (the same for every backend), as a game frame would.
void move_scene(const Scene& base, Scene& moved, uint32_t frame) {
    moved = base;
    for (uint32_t i = 0; i < base.size(); ++i) {
        const float step = static_cast<float>(static_cast<int32_t>((i * 2654435761u) >> 29) - 4) * 0.01f;
        const float d = step * static_cast<float>(frame);
        moved.x[i] += d;
        moved.y[i] -= d;
        if (base.dims == 3) moved.z[i] += 0.5f * d;
    }
}

/// Two small scenes with pairs, one per world kind.
std::vector<golden::FixedScene> small_scenes() {
    std::vector<golden::FixedScene> v;
    {
        Rng rng(31);
        Scene s = uniform_scene(rng, 3, 6000, 0.0f, 14.0f);
        v.push_back({"uniform 3D unbounded", s, golden::config_for(s, 1.0f, 1.0f, 200000)});
    }
    {
        Rng rng(32);
        Scene s = clustered_scene(rng, 2, 6000, 6, -30.0f, 30.0f, 3.0f);
        v.push_back({"clusters 2D bounded", s, golden::bounded(s, golden::config_for(s, 1.0f, 1.0f, 400000))});
    }
    return v;
}

// ---------------------------------------------------------------------------
// A minimal single-threaded job system with plain callbacks, to test the
// enqueue/finish protocol itself.

struct Spy {
    enum class Mode {
        none_return_null,       ///< runs no copy, returns null
        all_now_return_null,    ///< runs every copy in enqueue, returns null
        defer_to_finish,        ///< returns a handle, runs every copy in finish
        extra_copies_in_finish, ///< finish runs copies + 5 copies
        keep_for_later,         ///< returns a handle, runs nothing; the test runs a copy after the loop
    };
    Mode mode = Mode::none_return_null;
    uint32_t worker_count = 1;
    uint32_t enqueues = 0, finishes = 0, wrong_handle = 0;
    uint32_t last_copies = 0, total_copies_asked = 0;
    JobTaskFn task = nullptr;
    void* task_context = nullptr;
    int handle_token = 0; // its address is the handle

    static void* enqueue(JobTaskFn task, uint32_t copies, void* task_context, void* user) {
        auto* spy = static_cast<Spy*>(user);
        ++spy->enqueues;
        spy->last_copies = copies;
        spy->total_copies_asked += copies;
        spy->task = task;
        spy->task_context = task_context;
        switch (spy->mode) {
        case Mode::none_return_null:
            return nullptr;
        case Mode::all_now_return_null:
            for (uint32_t i = 0; i < copies; ++i)
                task(task_context);
            return nullptr;
        default:
            return &spy->handle_token;
        }
    }

    static void finish(void* handle, void* user) {
        auto* spy = static_cast<Spy*>(user);
        ++spy->finishes;
        if (handle != &spy->handle_token) ++spy->wrong_handle;
        uint32_t copies = 0;
        if (spy->mode == Mode::defer_to_finish) copies = spy->last_copies;
        if (spy->mode == Mode::extra_copies_in_finish) copies = spy->last_copies + 5;
        for (uint32_t i = 0; i < copies; ++i)
            spy->task(spy->task_context);
    }

    [[nodiscard]] JobSystemConfig config() {
        JobSystemConfig c;
        c.enqueue = &Spy::enqueue;
        c.finish = &Spy::finish;
        c.worker_count = worker_count;
        c.user_context = this;
        return c;
    }
};

} // namespace

// ---------------------------------------------------------------------------
// (a) Golden hashes, byte-identical frames, no allocation.

TEST_CASE("job-system adapter: golden hashes at 1, 2, 3, 4, 7, 8 and 16 workers") {
    ScopedCountingAssertHook asserts; // a library assert becomes a failed CHECK below, not an abort
    const auto& scenes = golden::fixed_scenes();
    REQUIRE(scenes.size() == sizeof(golden::kGrid) / sizeof(golden::kGrid[0]));
    for (uint32_t workers : {1u, 2u, 3u, 4u, 7u, 8u, 16u}) {
        OddJobSystem::Options options;
        options.workers = workers;
        options.seed = 1000 + workers;
        options.inline_every = 7;
        OddJobSystem jobs(options);
        JobSystemConfig config = jobs.config();
        // Odd worker counts also send two-chunk loops through the job system.
        config.inline_chunk_limit = workers % 2 == 1 ? 0u : 2u;
        JobSystemBackend adapter(config);
        const hashgrid::ThreadBackend backend = adapter.backend();
        CHECK(backend.worker_count == workers);
        for (size_t k = 0; k < scenes.size(); ++k) {
            const bool dirty_first = (k + workers) % 3 == 0;
            const golden::GridHashes h =
                golden::run_fixed_scene(scenes[k], backend, static_cast<uint8_t>(0x11 * k), dirty_first);
            INFO(std::string(scenes[k].name) << ", " << workers << " workers: got " << golden::hashes_text(h));
            CHECK(h == golden::kGrid[k]);
        }
        INFO(workers << " workers");
        CHECK(adapter.enqueued_loops() == jobs.tasks());
        CHECK(adapter.inline_loops() == jobs.inline_tasks());
        CHECK(jobs.finishes() == jobs.tasks() - jobs.inline_tasks());
        CHECK(jobs.bad_finishes() == 0);
        if (workers > 1) {
            // Every odd way of the job system was taken, and the threads really helped.
            for (Mode mode : kEveryMode)
                CHECK(jobs.tasks_in(mode) > 0);
            CHECK(jobs.copies_run_by_threads() > 0);
        } else {
            CHECK(jobs.tasks() == 0); // one worker: every loop runs on the calling thread
        }
    }
    CHECK(asserts.failures() == 0);
}

TEST_CASE("job-system adapter: every odd job system gives the serial backend's bytes") {
    ScopedCountingAssertHook asserts;
    constexpr uint32_t kFrames = 3;
    for (const golden::FixedScene& fs : small_scenes()) {
        std::vector<Scene> moved(kFrames);
        std::vector<FrameRun> serial;
        for (uint32_t frame = 0; frame < kFrames; ++frame) {
            move_scene(fs.scene, moved[frame], frame);
            serial.emplace_back(fs.config);
            serial[frame].frame(moved[frame].spans(), hashgrid::serial_backend());
            REQUIRE(serial[frame].ok());
            REQUIRE(serial[frame].result.total > 0);
        }
        for (Mode mode : kEveryMode) {
            for (uint32_t workers : {2u, 3u, 8u}) {
                OddJobSystem::Options options;
                options.workers = workers;
                options.seed = 77 + workers;
                options.inline_every = 0;
                options.mode = mode;
                OddJobSystem jobs(options);
                JobSystemConfig config = jobs.config();
                config.inline_chunk_limit = 0;
                JobSystemBackend adapter(config);
                FrameRun jobbed(fs.config);
                for (uint32_t frame = 0; frame < kFrames; ++frame) {
                    jobbed.frame(moved[frame].spans(), adapter.backend());
                    INFO(fs.name << ", mode " << static_cast<uint32_t>(mode) << ", " << workers << " workers, frame "
                                 << frame);
                    CHECK(same_bytes(serial[frame], jobbed) == "");
                }
                CHECK(jobs.tasks() > 0);
                CHECK(jobs.tasks_in(mode) == jobs.tasks());
                CHECK(jobs.bad_finishes() == 0);
            }
        }
    }
    CHECK(asserts.failures() == 0);
}

TEST_CASE("job-system adapter: frames allocate nothing, at 1, 2, 4 and 8 workers") {
    const golden::FixedScene fs = small_scenes()[1];
    for (uint32_t workers : {1u, 2u, 4u, 8u}) {
        OddJobSystem::Options options;
        options.workers = workers;
        options.seed = workers;
        OddJobSystem jobs(options);
        JobSystemBackend adapter(jobs.config());
        FrameRun run(fs.config);
        std::vector<Scene> moved(8);
        for (uint32_t frame = 0; frame < moved.size(); ++frame)
            move_scene(fs.scene, moved[frame], frame);
        run.frame(moved[0].spans(), adapter.backend()); // warm-up
        const uint64_t before = g_news.load();
        bool ok = true;
        for (uint32_t frame = 1; frame < moved.size(); ++frame) {
            run.frame(moved[frame].spans(), adapter.backend());
            ok = ok && run.ok();
        }
        const uint64_t allocations = g_news.load() - before;
        INFO(workers << " workers");
        CHECK(ok);
        CHECK(allocations == 0);
        if (workers > 1) CHECK(jobs.tasks() > 0);
    }
    // The counter sees allocations at all.
    const uint64_t before = g_news.load();
    auto probe = std::make_unique<int>(1);
    g_sink = probe.get();
    CHECK(g_news.load() - before == 1);
}

// ---------------------------------------------------------------------------
// (b) The ThreadBackend contract through the adapter.

TEST_CASE("job-system adapter: every chunk exactly once, worker index in range, for many (count, grain)") {
    ScopedCountingAssertHook asserts;
    Rng rng(77);
    for (uint32_t workers : {1u, 2u, 3u, 4u, 8u, 16u}) {
        OddJobSystem::Options options;
        options.workers = workers;
        options.seed = workers;
        OddJobSystem jobs(options);
        for (uint32_t limit : {0u, 1u, 5u}) {
            JobSystemConfig config = jobs.config();
            config.inline_chunk_limit = limit;
            JobSystemBackend adapter(config);
            const hashgrid::ThreadBackend backend = adapter.backend();
            for (uint32_t grain : {1u, 3u, 7u, 64u, 1000u, 4096u}) {
                for (uint32_t count :
                     {1u, grain - 1, grain, grain + 1, 3 * grain, 5 * grain - 1, 1000u, 4097u, 100003u}) {
                    if (count == 0) continue;
                    INFO("workers " << workers << " limit " << limit << " count " << count << " grain " << grain);
                    CHECK(check_chunks(backend, count, grain) == "");
                }
            }
            // Pseudo-random sizes, up to a few thousand chunks.
            const uint32_t randoms = scaled_count(40);
            for (uint32_t i = 0; i < randoms; ++i) {
                const uint32_t grain = 1 + rng.below(i % 2 == 0 ? 16u : 2000u);
                const uint32_t count = 1 + rng.below(grain * (1 + rng.below(3000)));
                INFO("workers " << workers << " limit " << limit << " count " << count << " grain " << grain);
                CHECK(check_chunks(backend, count, grain) == "");
            }
            // count near 2^32: chunk starts must not overflow.
            CHECK(check_chunks(backend, 0xFFFFFFFFu, 0x40000000u) == "");
            CHECK(check_chunks(backend, 0xFFFFFFFFu, 0xFFFFFFFFu) == "");
            // count 0: nothing runs, the job system is not asked.
            const uint64_t tasks_before = jobs.tasks();
            CHECK(check_chunks(backend, 0, 8) == "");
            CHECK(jobs.tasks() == tasks_before);
        }
        CHECK(jobs.bad_finishes() == 0);
    }
    CHECK(asserts.failures() == 0);
}

TEST_CASE("job-system adapter: small loops and one worker run on the caller as worker 0, without enqueue") {
    OddJobSystem::Options options;
    options.workers = 4;
    OddJobSystem jobs(options);
    JobSystemConfig config = jobs.config();
    config.inline_chunk_limit = 3;
    JobSystemBackend adapter(config);
    uint32_t max_worker = 99;
    CHECK(check_chunks(adapter.backend(), 30, 10, &max_worker) == ""); // 3 chunks: inline
    CHECK(max_worker == 0);
    CHECK(jobs.tasks() == 0);
    CHECK(adapter.enqueued_loops() == 0);
    CHECK(check_chunks(adapter.backend(), 31, 10) == ""); // 4 chunks: the job system
    CHECK(jobs.tasks() == 1);
    CHECK(adapter.enqueued_loops() == 1);

    // A loop of one chunk never reaches the game, whatever the limit.
    Spy spy;
    spy.worker_count = 4;
    JobSystemConfig spy_config = spy.config();
    spy_config.inline_chunk_limit = 0;
    JobSystemBackend spied(spy_config);
    CHECK(check_chunks(spied.backend(), 7, 10, &max_worker) == "");
    CHECK(max_worker == 0);
    CHECK(spy.enqueues == 0);
    // Nor does any loop with worker_count 1.
    Spy single;
    JobSystemConfig single_config = single.config();
    single_config.inline_chunk_limit = 0;
    JobSystemBackend serialish(single_config);
    CHECK(check_chunks(serialish.backend(), 1000, 10, &max_worker) == "");
    CHECK(max_worker == 0);
    CHECK(single.enqueues == 0);
}

TEST_CASE("job-system adapter: works through parallel_chunks and back-to-back small loops") {
    OddJobSystem::Options options;
    options.workers = 3;
    options.inline_every = 4;
    OddJobSystem jobs(options);
    JobSystemConfig config = jobs.config();
    config.inline_chunk_limit = 0;
    JobSystemBackend adapter(config);
    std::atomic<uint64_t> sum{0};
    uint64_t expected = 0;
    uint64_t multi_chunk_loops = 0;
    const uint32_t loops = scaled_count(5000);
    for (uint32_t loop = 0; loop < loops; ++loop) {
        const uint32_t count = 1 + loop % 37;
        expected += count;
        multi_chunk_loops += count > 4 ? 1 : 0;
        hashgrid::parallel_chunks(adapter.backend(), count, 4, [&](uint32_t begin, uint32_t end, uint32_t) {
            sum.fetch_add(end - begin, std::memory_order_relaxed);
        });
    }
    CHECK(sum.load() == expected);
    CHECK(adapter.enqueued_loops() == multi_chunk_loops);
    CHECK(jobs.finishes() + jobs.inline_tasks() == multi_chunk_loops);
    CHECK(jobs.bad_finishes() == 0);
}

// ---------------------------------------------------------------------------
// (c) The enqueue/finish protocol.

TEST_CASE("job-system adapter: enqueue asks for min(worker_count, chunks) - 1 copies; null means no finish") {
    for (Spy::Mode mode : {Spy::Mode::none_return_null, Spy::Mode::all_now_return_null}) {
        Spy spy;
        spy.worker_count = 8;
        spy.mode = mode;
        JobSystemConfig config = spy.config();
        config.inline_chunk_limit = 0;
        JobSystemBackend adapter(config);
        // Whether the game ran every copy or none, every chunk ran once: the
        // calling thread runs a copy of its own.
        CHECK(check_chunks(adapter.backend(), 14, 7) == ""); // 2 chunks
        CHECK(spy.last_copies == 1);
        CHECK(check_chunks(adapter.backend(), 21, 7) == ""); // 3 chunks
        CHECK(spy.last_copies == 2);
        CHECK(check_chunks(adapter.backend(), 1000, 7) == ""); // 143 chunks, 8 workers
        CHECK(spy.last_copies == 7);
        CHECK(spy.enqueues == 3);
        CHECK(spy.finishes == 0);
        CHECK(adapter.enqueued_loops() == 3);
        CHECK(adapter.inline_loops() == 3);
    }
}

TEST_CASE("job-system adapter: a handle from enqueue comes back to finish once, unchanged") {
    for (Spy::Mode mode : {Spy::Mode::defer_to_finish, Spy::Mode::extra_copies_in_finish}) {
        ScopedCountingAssertHook asserts;
        Spy spy;
        spy.worker_count = 3;
        spy.mode = mode;
        JobSystemConfig config = spy.config();
        config.inline_chunk_limit = 0;
        JobSystemBackend adapter(config);
        // Copies that run after the calling thread's own (in finish), and more
        // copies than asked, find no work left and return.
        for (uint32_t count : {2u, 3u, 50u, 999u})
            CHECK(check_chunks(adapter.backend(), count, 1) == "");
        CHECK(spy.enqueues == 4);
        CHECK(spy.finishes == 4);
        CHECK(spy.wrong_handle == 0);
        CHECK(adapter.inline_loops() == 0);
        CHECK(asserts.failures() == 0);
    }
}

TEST_CASE("job-system adapter: a copy that starts after its loop is over runs nothing") {
    ScopedCountingAssertHook asserts;
    Spy spy;
    spy.worker_count = 4;
    spy.mode = Spy::Mode::keep_for_later;
    JobSystemConfig config = spy.config();
    config.inline_chunk_limit = 0;
    JobSystemBackend adapter(config);
    std::atomic<uint32_t> chunks_run{0};
    hashgrid::parallel_chunks(adapter.backend(), 100, 10, [&](uint32_t, uint32_t, uint32_t) {
        chunks_run.fetch_add(1, std::memory_order_relaxed);
    });
    CHECK(chunks_run.load() == 10);
    REQUIRE((spy.task != nullptr));
    // The game's mistake: a copy after finish returned. It must not run a
    // chunk of the finished loop (whose body is gone by now).
    spy.task(spy.task_context);
    spy.task(spy.task_context);
#if defined(HASHGRID_ENABLE_ASSERTS)
    CHECK(asserts.failures() == 2);
    CHECK(std::string(hashgrid::platform::last_assert_failure().message).find("after its loop was over") !=
          std::string::npos);
#endif
    // The adapter still works.
    CHECK(check_chunks(adapter.backend(), 1000, 7) == "");
}

TEST_CASE("job-system adapter: finish returning while a copy still runs is an assert; the loop still completes") {
    // A job system whose finish returns at once. enqueue gives one copy to a
    // thread and returns once that copy is inside a chunk, which then takes a
    // while: the adapter must wait for it before parallel_for returns.
    struct EarlyFinish {
        std::thread helper;
        std::thread::id caller = std::this_thread::get_id();
        std::atomic<bool> helper_in_chunk{false};
        static void* enqueue(JobTaskFn task, uint32_t copies, void* task_context, void* user) {
            auto* self = static_cast<EarlyFinish*>(user);
            CHECK(copies == 1);
            self->helper = std::thread([task, task_context] { task(task_context); });
            while (!self->helper_in_chunk.load())
                std::this_thread::yield();
            return self;
        }
        static void finish(void*, void*) {}
    };
    ScopedCountingAssertHook asserts;
    EarlyFinish game;
    JobSystemConfig config;
    config.enqueue = &EarlyFinish::enqueue;
    config.finish = &EarlyFinish::finish;
    config.worker_count = 2;
    config.user_context = &game;
    JobSystemBackend adapter(config);
    std::atomic<uint32_t> chunks_done{0};
    std::atomic<bool> slow_chunk_done{false};
    hashgrid::parallel_chunks(adapter.backend(), 2, 1, [&](uint32_t, uint32_t, uint32_t) {
        if (std::this_thread::get_id() != game.caller) {
            game.helper_in_chunk.store(true);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            slow_chunk_done.store(true);
        }
        chunks_done.fetch_add(1);
    });
    CHECK(slow_chunk_done.load());
    CHECK(chunks_done.load() == 2);
    game.helper.join();
#if defined(HASHGRID_ENABLE_ASSERTS)
    CHECK(asserts.failures() == 1);
    CHECK(std::string(hashgrid::platform::last_assert_failure().message).find("still running after finish") !=
          std::string::npos);
#endif
}

TEST_CASE("job-system adapter: a job system whose finish returns early still gives the golden hashes") {
    // Its copies may start after finish returned (asserts, counted here) or
    // still run when it returns; none of it may change a byte.
    ScopedCountingAssertHook asserts;
    const auto& scenes = golden::fixed_scenes();
    for (uint32_t workers : {2u, 4u}) {
        OddJobSystem::Options options;
        options.workers = workers;
        options.seed = 500 + workers;
        options.mode = Mode::delayed;
        options.early_finish = true;
        OddJobSystem jobs(options);
        {
            JobSystemConfig config = jobs.config();
            config.inline_chunk_limit = 0;
            JobSystemBackend adapter(config);
            for (size_t k = 0; k < 2; ++k) {
                const golden::GridHashes h = golden::run_fixed_scene(scenes[k], adapter.backend(), 0x5a, false);
                INFO(scenes[k].name << ", " << workers << " workers");
                CHECK(h == golden::kGrid[k]);
            }
            jobs.drain(); // the copies still queued point at the adapter
        }
        CHECK(jobs.tasks() > 0);
    }
}

TEST_CASE("job-system adapter: the ThreadBackend it builds") {
    Spy spy;
    spy.worker_count = 6;
    JobSystemBackend adapter(spy.config());
    const hashgrid::ThreadBackend b = adapter.backend();
    CHECK(b.worker_count == 6);
    CHECK(b.state == &adapter);
    CHECK((b.parallel_for != nullptr));
    CHECK(adapter.config().worker_count == 6);
    CHECK(adapter.config().user_context == &spy);
}

TEST_CASE("job-system adapter: an invalid config is a status and runs serially, in every build") {
    ScopedCountingAssertHook asserts; // where asserts are compiled in, the constructor also asserts
    Spy spy;
    spy.worker_count = 4;
    const JobSystemConfig good = spy.config();
    CHECK(JobSystemBackend::validate(good).ok());
    JobSystemConfig no_enqueue = good;
    no_enqueue.enqueue = nullptr;
    JobSystemConfig no_finish = good;
    no_finish.finish = nullptr;
    JobSystemConfig no_workers = good;
    no_workers.worker_count = 0;
    const std::pair<JobSystemConfig, const char*> cases[] = {
        {no_enqueue, "JobSystemConfig::enqueue"},
        {no_finish, "JobSystemConfig::finish"},
        {no_workers, "JobSystemConfig::worker_count"},
    };
    for (const auto& [config, field] : cases) {
        const hashgrid::Status s = JobSystemBackend::validate(config);
        CHECK(s.code == hashgrid::StatusCode::invalid_argument);
        CHECK(std::string(s.message).find(field) != std::string::npos); // the message names the field
#if defined(HASHGRID_ENABLE_ASSERTS)
        const uint64_t failures_before = asserts.failures();
#endif
        JobSystemBackend adapter(config);
#if defined(HASHGRID_ENABLE_ASSERTS)
        CHECK(asserts.failures() == failures_before + 1);
#endif
        CHECK(adapter.status().code == hashgrid::StatusCode::invalid_argument);
        const hashgrid::ThreadBackend b = adapter.backend();
        CHECK((b.parallel_for == nullptr));
        CHECK(b.worker_count == 1);
        // Every chunk runs once, in order, on the calling thread as worker 0.
        std::vector<uint32_t> seen;
        hashgrid::parallel_chunks(b, 95, 10, [&](uint32_t begin, uint32_t end, uint32_t worker) {
            CHECK(worker == 0);
            CHECK(end - begin == (begin == 90 ? 5u : 10u));
            seen.push_back(begin);
        });
        CHECK(seen == std::vector<uint32_t>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90});
    }
    CHECK(spy.enqueues == 0); // nothing ever reached the game
}

// ---------------------------------------------------------------------------
// (d) assert_hook.h

namespace {
struct LogSink {
    uint32_t calls = 0;
    std::string expression, message, file;
    int line = 0;
};
void log_into(const hashgrid::platform::AssertFailure& f, void* user) {
    auto* sink = static_cast<LogSink*>(user);
    ++sink->calls;
    sink->expression = f.expression;
    sink->message = f.message;
    sink->file = f.file;
    sink->line = f.line;
}
} // namespace

TEST_CASE("assert hook: set_assert_hook is core's, re-exported") {
    // Installing through the platform name changes what core's assert_failed calls.
    hashgrid::platform::install_counting_assert_hook();
    hashgrid::platform::set_assert_hook(nullptr); // core's default again
    hashgrid::platform::reset_assert_failure_count();
    const hashgrid::platform::AssertHook hook = &hashgrid::platform::counting_assert_hook;
    hashgrid::platform::set_assert_hook(hook);
    hashgrid::assert_failed("e", "through the re-export", "f", 1);
    CHECK(hashgrid::platform::assert_failure_count() == 1);
    hashgrid::platform::restore_default_assert_hook();
}

TEST_CASE("assert hook: the counting hook counts, logs through the callback and resumes") {
    LogSink sink;
    {
        ScopedCountingAssertHook hook(&log_into, &sink);
        CHECK(hook.failures() == 0);
        hashgrid::assert_failed("a < b", "first", "file_a.cpp", 10);
        CHECK(hook.failures() == 1);
        CHECK(sink.calls == 1);
        CHECK(sink.expression == "a < b");
        CHECK(sink.message == "first");
        CHECK(sink.file == "file_a.cpp");
        CHECK(sink.line == 10);
#if defined(HASHGRID_ENABLE_ASSERTS)
        const int line = __LINE__ + 1;
        HASHGRID_ASSERT(1 + 1 == 3, "arithmetic");
        CHECK(hook.failures() == 2);
        CHECK(sink.message == "arithmetic");
        CHECK(sink.expression == "1 + 1 == 3");
        CHECK(sink.line == line);
        CHECK(sink.file.find("test_job_system.cpp") != std::string::npos);
#endif
        const hashgrid::platform::AssertFailure last = hashgrid::platform::last_assert_failure();
        CHECK(std::string(last.message) == sink.message);
        CHECK(last.line == sink.line);
        hashgrid::platform::reset_assert_failure_count();
        CHECK(hook.failures() == 0);
        CHECK(std::string(hashgrid::platform::last_assert_failure().message).empty());
    }
    // Without a log callback it only counts.
    const uint32_t logged = sink.calls;
    {
        ScopedCountingAssertHook hook;
        hashgrid::assert_failed("x", "y", "z", 1);
        hashgrid::assert_failed("x", "y", "z", 2);
        CHECK(hook.failures() == 2);
    }
    CHECK(sink.calls == logged);
}

TEST_CASE("assert hook: the abort action asks core to abort; reinstalling resets the count") {
    LogSink sink;
    hashgrid::platform::install_counting_assert_hook(&log_into, &sink, hashgrid::platform::AssertAction::abort);
    // Called directly (not through assert_failed, which would abort): it says "abort".
    CHECK(hashgrid::platform::counting_assert_hook("e", "m", "f", 3) == true);
    CHECK(hashgrid::platform::assert_failure_count() == 1);
    CHECK(sink.calls == 1);
    hashgrid::platform::install_counting_assert_hook(); // resume, no log
    CHECK(hashgrid::platform::assert_failure_count() == 0);
    CHECK(hashgrid::platform::counting_assert_hook("e", "m", "f", 3) == false);
    CHECK(sink.calls == 1);
    hashgrid::platform::restore_default_assert_hook();
}

TEST_CASE("assert hook: counts failures from several threads") {
    ScopedCountingAssertHook hook;
    OddJobSystem::Options options;
    options.workers = 4;
    OddJobSystem jobs(options);
    JobSystemConfig config = jobs.config();
    config.inline_chunk_limit = 0;
    JobSystemBackend adapter(config);
    hashgrid::parallel_chunks(adapter.backend(), 1000, 1, [](uint32_t, uint32_t, uint32_t) {
        hashgrid::assert_failed("false", "from a chunk", __FILE__, __LINE__);
    });
    CHECK(hook.failures() == 1000);
}

// ---------------------------------------------------------------------------
// (d) aligned_memory.h

TEST_CASE("aligned memory: every power-of-two alignment, writable, freed") {
    for (uint32_t alignment = 1; alignment <= 65536; alignment *= 2) {
        for (uint64_t bytes : {1ull, 7ull, 64ull, 1000ull, 100000ull}) {
            INFO("alignment " << alignment << " bytes " << bytes);
            void* p = hashgrid::platform::aligned_allocate(bytes, alignment);
            REQUIRE(p != nullptr);
            CHECK(reinterpret_cast<uintptr_t>(p) % alignment == 0);
            std::memset(p, 0xCD, static_cast<size_t>(bytes));
            CHECK(static_cast<unsigned char*>(p)[bytes - 1] == 0xCD);
            hashgrid::platform::aligned_free(p);
        }
    }
    hashgrid::platform::aligned_free(nullptr); // no-op
}

TEST_CASE("aligned memory: bad requests give null") {
    CHECK(hashgrid::platform::aligned_allocate(0, 64) == nullptr);
    CHECK(hashgrid::platform::aligned_allocate(64, 0) == nullptr);
    CHECK(hashgrid::platform::aligned_allocate(64, 3) == nullptr);
    CHECK(hashgrid::platform::aligned_allocate(64, 48) == nullptr);
    CHECK(hashgrid::platform::aligned_allocate(~uint64_t{0}, 64) == nullptr);
    CHECK(hashgrid::platform::aligned_allocate(uint64_t{SIZE_MAX}, 64) == nullptr);
    const AlignedBlock empty = AlignedBlock::allocate(0, 64);
    CHECK(!empty);
    CHECK(empty.data() == nullptr);
    CHECK(empty.size() == 0);
    CHECK(empty.alignment() == 0);
}

TEST_CASE("aligned memory: AlignedBlock owns, moves and releases") {
    AlignedBlock a = AlignedBlock::allocate(4096, 256);
    REQUIRE(a);
    CHECK(a.size() == 4096);
    CHECK(a.alignment() == 256);
    CHECK(reinterpret_cast<uintptr_t>(a.data()) % 256 == 0);
    void* const memory = a.data();
    std::memset(memory, 1, a.size());

    AlignedBlock b(std::move(a)); // move construction transfers ownership
    CHECK(b.data() == memory);
    CHECK(b.size() == 4096);
    CHECK(!a); // NOLINT(bugprone-use-after-move): the moved-from state is specified
    CHECK(a.size() == 0);

    AlignedBlock c = AlignedBlock::allocate(64, 64);
    REQUIRE(c);
    c = std::move(b); // frees c's old block, takes b's
    CHECK(c.data() == memory);
    CHECK(!b); // NOLINT(bugprone-use-after-move)

    AlignedBlock& alias = c;
    c = std::move(alias); // self-move keeps the block
    CHECK(c.data() == memory);

    void* released = c.release();
    CHECK(released == memory);
    CHECK(!c);
    hashgrid::platform::aligned_free(released);

    AlignedBlock d = AlignedBlock::allocate(128, 16);
    d.reset();
    CHECK(!d);
    d.reset(); // twice is fine
}

TEST_CASE("aligned memory: a grid lives in an AlignedBlock sized by memory_requirements") {
    Rng rng(9);
    const Scene s = uniform_scene(rng, 3, 2000, 0.0f, 10.0f);
    const hashgrid::GridConfig config = unbounded_config(3, 1.0f, 1.0f, s.size(), 100000);
    const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
    REQUIRE(req.status.ok());
    AlignedBlock block = AlignedBlock::allocate(req.bytes, req.alignment);
    REQUIRE(block);
    hashgrid::Grid grid;
    REQUIRE(grid.init(config, block.data(), block.size()).ok());
    const Frame f = run_frame(grid, s, hashgrid::serial_backend(), config.max_pairs);
    REQUIRE(f.rebuild.ok());
    REQUIRE(f.result.status.ok());
    const std::vector<Pair> got = as_set(f.pairs.data(), f.pairs.size());
    CHECK(diff_pairs(oracle_pairs(s, 1.0f), got.data(), got.size()) == "");
}

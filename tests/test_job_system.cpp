// The platform layer for a game's own job system and its helpers:
// - JobSystemBackend (job_system_backend.h) gives the golden hashes of the
//   fixed scenes (golden_scenes.h) at 1, 2, 3, 4, 7, 8 and 16 workers, with a
//   job system that splits ranges oddly, shuffles them and runs some tasks
//   inline (odd_job_system.h);
// - the ThreadBackend contract through the adapter: every chunk exactly once
//   with core's boundaries, the worker index below worker_count and distinct
//   between chunks running at the same time, for many (count, grain);
// - the enqueue/finish protocol: a null handle means no finish, a handle comes
//   back unchanged exactly once; small loops run inline without enqueue;
// - contract violations by the game are caught by HASHGRID_ASSERT;
// - assert_hook.h (the counting hook and its log callback) and
//   aligned_memory.h (aligned allocation, the move-only owner).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "golden_hashes.h"
#include "golden_scenes.h"
#include "hashgrid/platform/aligned_memory.h"
#include "hashgrid/platform/assert_hook.h"
#include "hashgrid/platform/job_system_backend.h"
#include "odd_job_system.h"
#include "test_support.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace hashgrid_test;
using hashgrid::platform::AlignedBlock;
using hashgrid::platform::JobSystemBackend;
using hashgrid::platform::JobSystemConfig;
using hashgrid::platform::JobTaskFn;
using hashgrid::platform::ScopedCountingAssertHook;

namespace {

// ---------------------------------------------------------------------------
// A chunk body that records every call.

struct ChunkRecord {
    uint32_t count = 0, grain = 0, worker_count = 0;
    std::unique_ptr<std::atomic<uint32_t>[]> calls;     // per chunk
    std::unique_ptr<std::atomic<uint32_t>[]> in_flight; // per worker index: a chunk is running with it
    std::atomic<uint32_t> bad_range{0}, bad_worker{0}, shared_worker{0}, total{0};
    std::atomic<uint32_t> last_worker{0};
};

void record_chunk(void* context, uint32_t begin, uint32_t end, uint32_t worker) {
    auto* r = static_cast<ChunkRecord*>(context);
    const uint32_t expected_end = r->count - begin > r->grain ? begin + r->grain : r->count;
    if (begin % r->grain != 0 || begin >= r->count || end != expected_end) {
        r->bad_range.fetch_add(1);
        return;
    }
    r->last_worker.store(worker);
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
                         uint32_t* last_worker = nullptr) {
    ChunkRecord r;
    r.count = count;
    r.grain = grain;
    r.worker_count = backend.worker_count;
    const uint32_t chunks = count / grain + (count % grain != 0 ? 1u : 0u);
    r.calls = std::make_unique<std::atomic<uint32_t>[]>(chunks + 1);
    r.in_flight = std::make_unique<std::atomic<uint32_t>[]>(backend.worker_count);
    backend.parallel_for(backend.state, count, grain, record_chunk, &r);
    if (last_worker != nullptr) *last_worker = r.last_worker.load();
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
// Minimal single-threaded job systems with plain callbacks, to test the
// enqueue/finish protocol itself.

/// What a spy job system saw.
struct Spy {
    enum class Mode {
        run_now_return_null,  ///< runs everything in enqueue, returns null
        defer_to_finish,      ///< returns a handle, runs everything in finish
        drop_last_item,       ///< contract violation: never runs the last item
        worker_out_of_range,  ///< contract violation: passes worker_count as the index
        run_first_item_twice, ///< contract violation: item 0 twice
    };
    Mode mode = Mode::run_now_return_null;
    uint32_t worker_count = 1;
    uint32_t enqueues = 0, finishes = 0, wrong_handle = 0;
    uint32_t last_min_range = 0;
    // The deferred task (defer_to_finish).
    JobTaskFn deferred_task = nullptr;
    void* deferred_context = nullptr;
    uint32_t deferred_items = 0;
    int handle_token = 0; // its address is the handle

    static void* enqueue(JobTaskFn task, uint32_t item_count, uint32_t min_range, void* task_context, void* user) {
        auto* spy = static_cast<Spy*>(user);
        ++spy->enqueues;
        spy->last_min_range = min_range;
        switch (spy->mode) {
        case Mode::run_now_return_null:
            task(0, item_count, 0, task_context);
            return nullptr;
        case Mode::defer_to_finish:
            spy->deferred_task = task;
            spy->deferred_context = task_context;
            spy->deferred_items = item_count;
            return &spy->handle_token;
        case Mode::drop_last_item:
            task(0, item_count - 1, 0, task_context);
            return nullptr;
        case Mode::worker_out_of_range:
            task(0, item_count, spy->worker_count, task_context);
            return nullptr;
        case Mode::run_first_item_twice:
            task(0, 1, 0, task_context);
            task(0, item_count, 0, task_context);
            return nullptr;
        }
        return nullptr;
    }
    static void finish(void* handle, void* user) {
        auto* spy = static_cast<Spy*>(user);
        ++spy->finishes;
        if (handle != &spy->handle_token) {
            ++spy->wrong_handle;
            return;
        }
        // Items in two ranges, the second first, by two different workers.
        const uint32_t half = spy->deferred_items / 2;
        spy->deferred_task(half, spy->deferred_items, spy->worker_count - 1, spy->deferred_context);
        spy->deferred_task(0, half, 0, spy->deferred_context);
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
// (a) Golden hashes.

TEST_CASE("job-system adapter: golden hashes at 1, 2, 3, 4, 7, 8 and 16 workers") {
    ScopedCountingAssertHook asserts; // a library assert becomes a failed CHECK below, not an abort
    const auto& scenes = golden::fixed_scenes();
    REQUIRE(scenes.size() == sizeof(golden::kGrid) / sizeof(golden::kGrid[0]));
    for (uint32_t workers : {1u, 2u, 3u, 4u, 7u, 8u, 16u}) {
        OddJobSystem::Options options;
        options.workers = workers;
        options.seed = 1000 + workers;
        options.inline_every = 3;
        OddJobSystem jobs(options);
        JobSystemConfig config = jobs.config();
        // Odd worker counts also send single-chunk loops through the job system.
        config.inline_chunk_limit = workers % 2 == 1 ? 0u : 1u;
        config.inline_worker = workers - 1;
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
        CHECK(jobs.tasks() > 0);
        CHECK(jobs.inline_tasks() > 0);
        CHECK(adapter.enqueued_loops() == jobs.tasks());
        CHECK(adapter.inline_loops() == jobs.inline_tasks());
        CHECK(jobs.finishes() == jobs.tasks() - jobs.inline_tasks());
        CHECK(jobs.bad_finishes() == 0);
        if (workers > 1) CHECK(jobs.ranges_run_by_threads() > 0); // really concurrent
    }
    CHECK(asserts.failures() == 0);
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

TEST_CASE("job-system adapter: loops of at most inline_chunk_limit chunks run on the caller as inline_worker") {
    OddJobSystem::Options options;
    options.workers = 4;
    OddJobSystem jobs(options);
    JobSystemConfig config = jobs.config();
    config.inline_chunk_limit = 3;
    config.inline_worker = 2;
    JobSystemBackend adapter(config);
    uint32_t worker = 99;
    CHECK(check_chunks(adapter.backend(), 30, 10, &worker) == ""); // 3 chunks: inline
    CHECK(worker == 2);
    CHECK(jobs.tasks() == 0);
    CHECK(adapter.enqueued_loops() == 0);
    CHECK(check_chunks(adapter.backend(), 31, 10) == ""); // 4 chunks: the job system
    CHECK(jobs.tasks() == 1);
    CHECK(adapter.enqueued_loops() == 1);
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
    const uint32_t loops = scaled_count(5000);
    for (uint32_t loop = 0; loop < loops; ++loop) {
        const uint32_t count = 1 + loop % 37;
        expected += count;
        hashgrid::parallel_chunks(adapter.backend(), count, 4, [&](uint32_t begin, uint32_t end, uint32_t) {
            sum.fetch_add(end - begin, std::memory_order_relaxed);
        });
    }
    CHECK(sum.load() == expected);
    CHECK(adapter.enqueued_loops() == loops);
    CHECK(jobs.finishes() + jobs.inline_tasks() == loops);
}

// ---------------------------------------------------------------------------
// The enqueue/finish protocol.

TEST_CASE("job-system adapter: enqueue returning null means the game ran the task; finish is not called") {
    Spy spy;
    spy.worker_count = 2;
    spy.mode = Spy::Mode::run_now_return_null;
    JobSystemConfig config = spy.config();
    config.inline_chunk_limit = 0;
    JobSystemBackend adapter(config);
    for (uint32_t count : {1u, 10u, 1000u})
        CHECK(check_chunks(adapter.backend(), count, 7) == "");
    CHECK(spy.enqueues == 3);
    CHECK(spy.finishes == 0);
    CHECK(spy.last_min_range == 1);
    CHECK(adapter.enqueued_loops() == 3);
    CHECK(adapter.inline_loops() == 3);
}

TEST_CASE("job-system adapter: a handle from enqueue comes back to finish once, unchanged") {
    Spy spy;
    spy.worker_count = 3;
    spy.mode = Spy::Mode::defer_to_finish;
    JobSystemConfig config = spy.config();
    config.inline_chunk_limit = 0;
    JobSystemBackend adapter(config);
    for (uint32_t count : {1u, 2u, 50u, 999u})
        CHECK(check_chunks(adapter.backend(), count, 5) == "");
    CHECK(spy.enqueues == 4);
    CHECK(spy.finishes == 4);
    CHECK(spy.wrong_handle == 0);
    CHECK(adapter.inline_loops() == 0);
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

#if defined(HASHGRID_ENABLE_ASSERTS)
TEST_CASE("job-system adapter: contract violations by the game are asserts") {
    struct Case {
        Spy::Mode mode;
        const char* message_part;
    };
    const Case cases[] = {
        {Spy::Mode::drop_last_item, "exactly once"},
        {Spy::Mode::run_first_item_twice, "exactly once"},
        {Spy::Mode::worker_out_of_range, "worker index"},
    };
    for (const Case& c : cases) {
        ScopedCountingAssertHook asserts;
        Spy spy;
        spy.worker_count = 2;
        spy.mode = c.mode;
        JobSystemConfig config = spy.config();
        config.inline_chunk_limit = 0;
        JobSystemBackend adapter(config);
        std::atomic<uint32_t> runs{0};
        hashgrid::parallel_chunks(adapter.backend(), 100, 10,
                                  [&](uint32_t, uint32_t, uint32_t) { runs.fetch_add(1, std::memory_order_relaxed); });
        INFO("expected an assert mentioning '" << std::string(c.message_part) << "'");
        CHECK(asserts.failures() >= 1);
        const std::string message = hashgrid::platform::last_assert_failure().message;
        CHECK(message.find(c.message_part) != std::string::npos);
    }
    {
        ScopedCountingAssertHook asserts;
        JobSystemConfig config; // no callbacks
        config.worker_count = 2;
        config.inline_worker = 2;
        JobSystemBackend adapter(config);
        CHECK(asserts.failures() == 1); // the first problem found: missing callbacks
    }
}
#endif

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
    no_workers.inline_worker = 0;
    JobSystemConfig bad_inline = good;
    bad_inline.inline_worker = 4;
    for (const JobSystemConfig& config : {no_enqueue, no_finish, no_workers, bad_inline}) {
        CHECK(JobSystemBackend::validate(config).code == hashgrid::StatusCode::invalid_argument);
        JobSystemBackend adapter(config);
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
// (c) assert_hook.h

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
// (c) aligned_memory.h

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

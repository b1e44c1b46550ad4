// SPDX-License-Identifier: MIT
// The thread-backend contract (thread_backend.h): every chunk
// [c * grain, min((c + 1) * grain, count)) runs exactly once, with a worker
// index below worker_count, and parallel_for returns only when all chunks are
// done. Also: backends can be created and destroyed repeatedly, used or not,
// and survive many back-to-back small jobs (lost wake-ups show up as hangs,
// caught by the CTest timeout).
#include <doctest/doctest.h>

#include "test_support.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

using namespace hashgrid_test;

namespace {

struct Record {
    uint32_t count = 0, grain = 0, worker_count = 0;
    std::unique_ptr<std::atomic<uint32_t>[]> calls; // per chunk
    std::atomic<uint32_t> bad_range{0}, bad_worker{0}, total{0};
};

void record_chunk(void* context, uint32_t begin, uint32_t end, uint32_t worker) {
    auto* r = static_cast<Record*>(context);
    const uint32_t chunk = begin / r->grain;
    const uint32_t expected_end = r->count - begin > r->grain ? begin + r->grain : r->count;
    if (begin % r->grain != 0 || begin >= r->count || end != expected_end) {
        r->bad_range.fetch_add(1);
        return;
    }
    if (worker >= r->worker_count) r->bad_worker.fetch_add(1);
    r->calls[chunk].fetch_add(1);
    r->total.fetch_add(1, std::memory_order_release);
}

/// Runs one parallel_for and returns "" if every chunk ran exactly once.
std::string check_chunks(const hashgrid::ThreadBackend& backend, uint32_t count, uint32_t grain) {
    Record r;
    r.count = count;
    r.grain = grain;
    r.worker_count = backend.worker_count;
    const uint32_t chunks = count / grain + (count % grain != 0 ? 1u : 0u);
    r.calls = std::make_unique<std::atomic<uint32_t>[]>(chunks + 1);
    backend.parallel_for(backend.state, count, grain, record_chunk, &r);
    // Read right after the return: all chunks must already be done.
    const uint32_t total = r.total.load(std::memory_order_acquire);
    if (r.bad_range.load() != 0) return "a chunk had the wrong [begin, end)";
    if (r.bad_worker.load() != 0) return "worker index >= worker_count";
    if (total != chunks)
        return "parallel_for returned after " + std::to_string(total) + " of " + std::to_string(chunks) + " chunks";
    for (uint32_t c = 0; c < chunks; ++c)
        if (r.calls[c].load() != 1)
            return "chunk " + std::to_string(c) + " ran " + std::to_string(r.calls[c].load()) + " times";
    return "";
}

void check_contract(const hashgrid::ThreadBackend& backend) {
    REQUIRE((backend.parallel_for != nullptr));
    REQUIRE(backend.worker_count >= 1);
    for (uint32_t grain : {1u, 7u, 64u, 4096u}) {
        for (uint32_t count : {0u, 1u, grain - 1, grain, grain + 1, 3 * grain, 1000u, 100003u}) {
            if (count == 0 && grain == 1) continue;
            INFO("count " << count << " grain " << grain << " worker_count " << backend.worker_count);
            CHECK(check_chunks(backend, count, grain) == "");
        }
    }
}

} // namespace

TEST_CASE("serial backend: every chunk once, in order, on worker 0") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    CHECK(serial.worker_count == 1);
    check_contract(serial);
    std::vector<uint32_t> begins;
    auto body = [&](uint32_t begin, uint32_t, uint32_t worker) {
        CHECK(worker == 0);
        begins.push_back(begin);
    };
    hashgrid::parallel_chunks(serial, 50, 8, body);
    CHECK(begins == std::vector<uint32_t>{0, 8, 16, 24, 32, 40, 48});
}

TEST_CASE("oneTBB backend: every chunk exactly once at 1, 2, 3, 4, 8 and 16 threads") {
    for (uint32_t threads : {1u, 2u, 3u, 4u, 8u, 16u}) {
        ParallelBackend tbb(threads);
        check_contract(tbb.backend());
    }
}

TEST_CASE("oneTBB backend: created and destroyed repeatedly, used or not") {
    for (int i = 0; i < 60; ++i) {
        const uint32_t threads = 1 + static_cast<uint32_t>(i % 5);
        ParallelBackend tbb(threads);
        if (i % 3 != 0) {
            INFO("iteration " << i << ", " << threads << " threads");
            CHECK(check_chunks(tbb.backend(), 1000, 10) == "");
        }
    }
}

TEST_CASE("oneTBB backend: 20000 back-to-back small jobs") {
    for (uint32_t threads : {2u, 4u}) {
        ParallelBackend tbb(threads);
        const hashgrid::ThreadBackend backend = tbb.backend();
        std::atomic<uint64_t> sum{0};
        for (uint32_t job = 0; job < 20000; ++job) {
            const uint32_t count = 1 + job % 37;
            hashgrid::parallel_chunks(backend, count, 4, [&](uint32_t begin, uint32_t end, uint32_t) {
                sum.fetch_add(end - begin, std::memory_order_relaxed);
            });
        }
        uint64_t expected = 0;
        for (uint32_t job = 0; job < 20000; ++job)
            expected += 1 + job % 37;
        CHECK(sum.load() == expected);
    }
}

TEST_CASE("std::thread backend: every chunk exactly once, repeated creation, back-to-back jobs") {
    for (uint32_t threads : {1u, 2u, 3u, 4u, 8u, 16u}) {
        hashgrid::platform::StdThreadBackend pool(threads);
        CHECK(pool.threads() == threads);
        check_contract(pool.backend());
    }
    for (int i = 0; i < 30; ++i) {
        hashgrid::platform::StdThreadBackend pool(1 + static_cast<uint32_t>(i % 4));
        if (i % 2 == 0) CHECK(check_chunks(pool.backend(), 1000, 10) == "");
    }
    hashgrid::platform::StdThreadBackend pool(3);
    std::atomic<uint64_t> sum{0};
    uint64_t expected = 0;
    for (uint32_t job = 0; job < 20000; ++job) {
        const uint32_t count = 1 + job % 37;
        expected += count;
        hashgrid::parallel_chunks(pool.backend(), count, 4, [&](uint32_t begin, uint32_t end, uint32_t) {
            sum.fetch_add(end - begin, std::memory_order_relaxed);
        });
    }
    CHECK(sum.load() == expected);
}

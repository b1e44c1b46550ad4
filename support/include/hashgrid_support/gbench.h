// SPDX-License-Identifier: MIT
// Glue between the profiling programs and Google Benchmark: what every run
// records next to its figures (CPU, load average, the machine's copy
// bandwidth), the other load during each benchmark, and the memory floor of a
// phase as counters. Google Benchmark does the repetitions, aggregates and
// JSON/CSV output; these are the parts it cannot know about.
#pragma once

#include "hashgrid_support/machine_load.h"

#include "hashgrid/platform/timer.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace hashgrid_support {

/// Copy bandwidth in bytes per nanosecond (= GB/s) of `threads` threads each
/// copying its share of a 256 MiB buffer into another (read + write counted as
/// the bytes copied once, like memcpy's size), best of five passes after one
/// that touches the pages. Measured once per thread count and cached.
inline double copy_bandwidth_gbs(unsigned threads) {
    static double cached[65] = {};
    threads = std::clamp(threads, 1u, 64u);
    if (cached[threads] > 0.0) return cached[threads];
    const size_t bytes = size_t{256} << 20;
    std::vector<unsigned char> src(bytes, 1), dst(bytes, 0);
    double best_ns = 1e300;
    for (int pass = 0; pass < 6; ++pass) {
        const uint64_t start = hashgrid::platform::now_ns();
        std::vector<std::thread> workers;
        const size_t share = bytes / threads;
        for (unsigned t = 0; t < threads; ++t)
            workers.emplace_back([&, t] { std::memcpy(dst.data() + t * share, src.data() + t * share, share); });
        for (std::thread& w : workers)
            w.join();
        const double ns = static_cast<double>(hashgrid::platform::now_ns() - start);
        if (pass > 0) best_ns = std::min(best_ns, ns);
    }
    benchmark::DoNotOptimize(dst.data());
    cached[threads] = static_cast<double>(bytes) / best_ns;
    return cached[threads];
}

/// Records the CPU model, the load average at start and the copy bandwidth on
/// 1 and 2 threads in the run's context (the JSON "context" object and the
/// console header). Call once before benchmark::RunSpecifiedBenchmarks().
inline void add_machine_context() {
    benchmark::AddCustomContext("cpu_model", cpu_model());
    benchmark::AddCustomContext("load_average_at_start", load_average());
    char text[64];
    std::snprintf(text, sizeof(text), "%.1f", copy_bandwidth_gbs(1));
    benchmark::AddCustomContext("copy_gb_per_s_1_thread", text);
    std::snprintf(text, sizeof(text), "%.1f", copy_bandwidth_gbs(2));
    benchmark::AddCustomContext("copy_gb_per_s_2_threads", text);
}

/// Measures the cores other processes took while a benchmark's timing loop
/// ran and stores them as the counter "other_load" (averaged over
/// repetitions). On a 2-core machine anything above ~0.2 spoils 2-thread
/// figures; compare only rows with low other load.
class OtherLoadCounter {
public:
    explicit OtherLoadCounter(benchmark::State& state) : state_(state) {}
    OtherLoadCounter(const OtherLoadCounter&) = delete;
    OtherLoadCounter& operator=(const OtherLoadCounter&) = delete;
    ~OtherLoadCounter() { state_.counters["other_load"] = benchmark::Counter(load_.cores()); }

private:
    benchmark::State& state_;
    OtherLoad load_;
};

/// The memory floor of a phase: the bytes it must read and write at least, and
/// what share of the measured time moving them at the machine's copy bandwidth
/// on `threads` threads takes. Counters: "floor_bytes" (per iteration) and
/// "floor_share" (floor time / measured time; 1.0 would be at the floor, so
/// the time is 1 / floor_share times the floor). Needs real or manual time.
inline void set_floor_counters(benchmark::State& state, double bytes_per_iteration, unsigned threads) {
    const double floor_s = bytes_per_iteration / (copy_bandwidth_gbs(threads) * 1e9);
    state.counters["floor_bytes"] = benchmark::Counter(bytes_per_iteration);
    state.counters["floor_share"] = benchmark::Counter(floor_s, benchmark::Counter::kIsIterationInvariantRate);
}

/// set_floor_counters() for a program that times its iterations itself and
/// knows the mean time per iteration: "floor_share" is then a plain ratio
/// (the console shows no "/s" rate suffix on it).
inline void set_floor_counters(benchmark::State& state, double bytes_per_iteration, unsigned threads,
                               double measured_ns_per_iteration) {
    state.counters["floor_bytes"] = benchmark::Counter(bytes_per_iteration);
    if (measured_ns_per_iteration > 0.0)
        state.counters["floor_share"] =
            benchmark::Counter(bytes_per_iteration / copy_bandwidth_gbs(threads) / measured_ns_per_iteration);
}

} // namespace hashgrid_support

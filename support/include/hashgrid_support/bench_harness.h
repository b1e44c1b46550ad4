// SPDX-License-Identifier: MIT
// What the profiling programs share on top of Google Benchmark (gbench.h):
// their own command-line options taken out of argv before
// benchmark::Initialize, defaults for Google Benchmark's flags, the frame
// benchmarks' registration (manual time, min and max aggregates), per-phase
// times with their memory floors, and the result-set checks (every
// implementation must find the same pairs) that mark a benchmark as failed
// and make the program exit with status 1.
#pragma once

#include "hashgrid_support/args.h"
#include "hashgrid_support/gbench.h"
#include "hashgrid_support/random.h"

#include "hashgrid/grid.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/status.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace hashgrid_support {

// ---------------------------------------------------------------------------
// Command line.

/// The program's arguments, from which its own options are taken before the
/// rest goes to benchmark::Initialize (which leaves only what it does not know).
class BenchArgs {
public:
    BenchArgs(int argc, char** argv) : args_(argv, argv + argc) {}

    /// Takes "--name value" or "--name=value" out of the arguments; false when absent.
    bool take(const char* name, std::string& value) {
        const size_t length = std::strlen(name);
        for (size_t i = 1; i < args_.size(); ++i) {
            const std::string arg = args_[i];
            if (arg == name && i + 1 < args_.size()) {
                value = args_[i + 1];
                args_.erase(args_.begin() + static_cast<std::ptrdiff_t>(i),
                            args_.begin() + static_cast<std::ptrdiff_t>(i) + 2);
                return true;
            }
            if (arg.compare(0, length, name) == 0 && arg.size() > length && arg[length] == '=') {
                value = arg.substr(length + 1);
                args_.erase(args_.begin() + static_cast<std::ptrdiff_t>(i));
                return true;
            }
        }
        return false;
    }

    /// Takes a flag without value ("--name"); false when absent.
    bool take_flag(const char* name) {
        for (size_t i = 1; i < args_.size(); ++i) {
            if (std::strcmp(args_[i], name) == 0) {
                args_.erase(args_.begin() + static_cast<std::ptrdiff_t>(i));
                return true;
            }
        }
        return false;
    }

    /// Adds "--benchmark_<name>=<value>" unless the command line sets that flag.
    void default_flag(const char* name, const char* value) {
        const std::string prefix = std::string("--benchmark_") + name;
        for (size_t i = 1; i < args_.size(); ++i) {
            const std::string arg = args_[i];
            if (arg == prefix || arg.rfind(prefix + "=", 0) == 0) return;
        }
        defaults_.push_back(prefix + "=" + value);
        args_.insert(args_.begin() + 1, defaults_.back().data());
    }

    /// Whether default_flag() supplied "--benchmark_<name>" (the command line did not set it).
    [[nodiscard]] bool defaulted(const char* name) const {
        const std::string prefix = std::string("--benchmark_") + name + "=";
        for (const std::string& d : defaults_)
            if (d.rfind(prefix, 0) == 0) return true;
        return false;
    }

    /// After the program took its options (`options_ok`: all were valid):
    /// the default flags (`repetitions` repetitions, the console showing only
    /// the aggregates; every repetition stays in --benchmark_out files), then
    /// benchmark::Initialize on what is left. False, after a usage line, when
    /// an option was invalid or an argument is neither the program's nor
    /// Google Benchmark's.
    bool initialize(const char* usage, bool options_ok, const char* repetitions = "5") {
        if (options_ok) {
            default_flag("repetitions", repetitions);
            default_flag("display_aggregates_only", "true");
            int argc = static_cast<int>(args_.size());
            args_.push_back(nullptr);
            benchmark::Initialize(&argc, args_.data());
            if (argc <= 1) return true;
            std::fprintf(stderr, "unknown argument %s\n", args_[1]);
        }
        std::fprintf(stderr, "usage: %s %s\n       and Google Benchmark's flags (--help)\n", args_[0], usage);
        return false;
    }

private:
    std::vector<char*> args_;
    std::deque<std::string> defaults_; ///< A deque: its strings never move (args_ points into them).
};

/// The options every frame benchmark takes: --n (objects, >= 1000),
/// --threads (a list), --frames (timed frames per repetition, >= 1) and
/// --warmup (untimed frames after frame 0).
struct FrameOptions {
    uint32_t n = 0;
    std::vector<uint32_t> threads{1, 2};
    uint32_t frames = 1;
    uint32_t warmup = 2;
};

/// Takes the FrameOptions out of `args`; false when a value is invalid.
inline bool take_frame_options(BenchArgs& args, FrameOptions& o) {
    std::string v;
    bool ok = true;
    if (args.take("--n", v)) ok = parse_u32(v.c_str(), o.n) && o.n >= 1000;
    if (args.take("--threads", v)) ok = parse_u32_list(v.c_str(), 1, 64, o.threads) && ok;
    if (args.take("--frames", v)) ok = parse_u32(v.c_str(), o.frames) && o.frames >= 1 && ok;
    if (args.take("--warmup", v)) ok = parse_u32(v.c_str(), o.warmup) && ok;
    return ok;
}

// ---------------------------------------------------------------------------
// Registration and running.

/// Adds min and max over the repetitions to Google Benchmark's aggregates
/// (mean, median, stddev, cv), for the time and every counter.
inline benchmark::internal::Benchmark* with_min_max(benchmark::internal::Benchmark* b) {
    return b
        ->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); })
        ->ComputeStatistics("max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
}

/// A benchmark whose iterations are frames timed by the program itself
/// (SetIterationTime: work outside the phase, such as moving the objects or
/// checking results, is not counted), `frames` of them per repetition, in
/// milliseconds, with min and max next to Google Benchmark's mean, median
/// and standard deviation.
inline benchmark::internal::Benchmark* register_frames(const std::string& name, uint32_t frames,
                                                       std::function<void(benchmark::State&)> run) {
    return with_min_max(benchmark::RegisterBenchmark(name.c_str(), [run](benchmark::State& state) { run(state); })
                            ->UseManualTime()
                            ->Unit(benchmark::kMillisecond)
                            ->Iterations(frames));
}

/// Whether any result-set check failed (see check_failed()).
inline bool& any_check_failed() {
    static bool failed = false;
    return failed;
}

/// A result set differs from the reference: prints it, marks the benchmark as
/// failed (its row says so, no figures) and makes run_benchmarks() return 1.
inline void check_failed(benchmark::State& state, const std::string& benchmark, const std::string& what) {
    std::fprintf(stderr, "MISMATCH %s: %s\n", benchmark.c_str(), what.c_str());
    any_check_failed() = true;
    state.SkipWithError(("MISMATCH: " + what).c_str());
}

/// Records the machine context, runs the benchmarks the flags select and
/// returns the exit status: 1 when a result-set check failed.
inline int run_benchmarks() {
    add_machine_context();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (any_check_failed()) std::fprintf(stderr, "RESULT SET MISMATCH (see above)\n");
    return any_check_failed() ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Phases and their floors.

/// A memory floor as memcpy size: a phase that must read `read` bytes and
/// write `written` bytes moves as much memory as a copy of half their sum
/// (a copy reads and writes each byte once).
inline double copy_equivalent_bytes(double read, double written) { return 0.5 * (read + written); }

/// Sum of one phase's time over a repetition's frames.
struct PhaseTime {
    uint64_t ns = 0;
    void add(uint64_t elapsed) { ns += elapsed; }
};

/// One timed phase of a frame and the bytes it must move (copy_equivalent_bytes).
struct Phase {
    const char* name;
    const PhaseTime& time;
    double floor_bytes;
};

/// Mean time per frame over the repetition's frames (iterations).
inline double mean_ns(const benchmark::State& state, const PhaseTime& time) {
    return static_cast<double>(time.ns) /
           static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
}

/// Counters of a frame's phases: "<phase>_ms" (mean per frame) and
/// "<phase>_floor_share" (the time moving the phase's floor bytes takes at the
/// machine's copy bandwidth on `threads` threads, over the measured time: 1 is
/// the floor, 0.1 reads as 10 times the floor), and for the whole frame
/// "floor_bytes" and "floor_share" (gbench.h).
inline void set_frame_counters(benchmark::State& state, std::initializer_list<Phase> phases, unsigned threads) {
    double total_ns = 0.0, total_bytes = 0.0;
    for (const Phase& phase : phases) {
        const double ns = mean_ns(state, phase.time);
        total_ns += ns;
        total_bytes += phase.floor_bytes;
        state.counters[std::string(phase.name) + "_ms"] = ns * 1e-6;
        if (phase.floor_bytes > 0.0 && ns > 0.0)
            state.counters[std::string(phase.name) + "_floor_share"] =
                phase.floor_bytes / copy_bandwidth_gbs(threads) / ns;
    }
    set_floor_counters(state, total_bytes, threads, total_ns);
}

/// Counter "cand_per_ns": candidate tests (the pairs a phase had to look at
/// before its exact test) per nanosecond of that phase.
inline void set_candidate_rate(benchmark::State& state, double candidates, const PhaseTime& time) {
    const double ns = mean_ns(state, time);
    if (ns > 0.0) state.counters["cand_per_ns"] = candidates / ns;
}

/// The frames of a repetition after frame 0: `warmup` untimed ones, then one
/// per iteration. Each frame runs `prepare(frame)` (untimed: moving the
/// objects), then `first(frame)` and `second()`, timed into `first_time` and
/// `second_time` (the iteration's manual time is their sum; other_load is
/// measured over the timed frames). A step returns false on failure: the
/// benchmark is skipped with `error` and run_frames returns 0. Otherwise it
/// returns the last frame's number.
template <typename Prepare, typename First, typename Second>
uint32_t run_frames(benchmark::State& state, uint32_t warmup, PhaseTime& first_time, PhaseTime& second_time,
                    const std::string& error, Prepare&& prepare, First&& first, Second&& second) {
    uint32_t frame = 0;
    for (; frame < warmup; ++frame) {
        if (!prepare(frame + 1) || !first(frame + 1) || !second()) {
            state.SkipWithError(error.c_str());
            return 0;
        }
    }
    const OtherLoadCounter load(state);
    for (auto _ : state) {
        ++frame;
        bool ok = prepare(frame);
        const uint64_t t0 = hashgrid::platform::now_ns();
        ok = ok && first(frame);
        const uint64_t t1 = hashgrid::platform::now_ns();
        ok = ok && second();
        const uint64_t t2 = hashgrid::platform::now_ns();
        if (!ok) {
            state.SkipWithError(error.c_str());
            return 0;
        }
        state.SetIterationTime(static_cast<double>(t2 - t0) * 1e-9);
        first_time.add(t1 - t0);
        second_time.add(t2 - t1);
    }
    return frame;
}

/// find_pairs() with a capacity that grows to what the frame needs: runs
/// `find()` (a find_pairs call, returning its PairResult) into `result`, and
/// while the pairs do not fit calls `regrow(total)` (re-initialise for
/// `total` pairs and rebuild; false on failure) and runs it again. False, with
/// `error` set, when a call fails.
template <typename Find, typename Regrow>
bool find_pairs_growing(hashgrid::PairResult& result, std::string& error, Find&& find, Regrow&& regrow) {
    for (;;) {
        result = find();
        const hashgrid::StatusCode code = result.status.code;
        if (code != hashgrid::StatusCode::pair_capacity && code != hashgrid::StatusCode::output_too_small) break;
        if (!regrow(result.total)) return false;
    }
    if (!result.status.ok())
        error =
            std::string("find_pairs: ") + hashgrid::to_string(result.status.code) + " (" + result.status.message + ")";
    return result.status.ok();
}

// ---------------------------------------------------------------------------
// Frames and pair sets.

/// A reproducible per-object value for (frame, identity): objects move by
/// steps drawn from it, so every implementation sees the same objects in
/// every frame whatever order it keeps them in.
inline uint64_t frame_hash(uint32_t frame, uint32_t id, uint64_t salt) {
    return mix64((static_cast<uint64_t>(frame) << 32 | id) * kSplitMixGamma + salt);
}

/// An unordered pair of identities as one sortable key (smaller << 32 | larger).
inline uint64_t pair_key(uint32_t i, uint32_t j) {
    return i < j ? static_cast<uint64_t>(i) << 32 | j : static_cast<uint64_t>(j) << 32 | i;
}

/// Order-independent digest of a pair set (count and sum of hashed keys):
/// for sets too large to keep sorted copies of.
struct PairDigest {
    uint64_t count = 0;
    uint64_t sum = 0;
    void add(uint32_t i, uint32_t j) {
        ++count;
        sum += mix64(pair_key(i, j) + kSplitMixGamma);
    }
    bool operator==(const PairDigest&) const = default;
    [[nodiscard]] std::string describe() const {
        char text[64];
        std::snprintf(text, sizeof(text), "%llu pairs, digest %016llx", static_cast<unsigned long long>(count),
                      static_cast<unsigned long long>(sum));
        return text;
    }
};

/// A pair set as sorted pair_key()s.
using PairSet = std::vector<uint64_t>;

/// Empty when `got` equals `want`; otherwise what differs (counts of missing,
/// extra and duplicated pairs, the first missing and extra pair).
inline std::string pair_set_difference(const PairSet& got, const PairSet& want) {
    if (got == want) return {};
    PairSet missing, extra;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
    size_t duplicates = 0;
    for (size_t k = 1; k < got.size(); ++k)
        duplicates += got[k] == got[k - 1] ? 1 : 0;
    char text[256];
    int used = std::snprintf(text, sizeof(text), "%zu pairs vs %zu expected: %zu missing, %zu extra, %zu duplicates",
                             got.size(), want.size(), missing.size(), extra.size(), duplicates);
    const auto pair_text = [&](const char* what, uint64_t key) {
        if (used > 0 && static_cast<size_t>(used) < sizeof(text))
            used += std::snprintf(text + used, sizeof(text) - static_cast<size_t>(used), " (first %s %u-%u)", what,
                                  static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key));
    };
    if (!missing.empty()) pair_text("missing", missing[0]);
    if (!extra.empty()) pair_text("extra", extra[0]);
    return text;
}

} // namespace hashgrid_support

// SPDX-License-Identifier: MIT
// bench_frames: how steady a real-time loop's frames are.
//
// N particles (default 100k) move in the unit cube (3D, ~30 neighbours, cell =
// r) and are kept in the grid's sorted order, as the user guide recommends.
// Every frame is rebuild + find_pairs into a preallocated buffer; moving and
// reordering happen outside the timed part. Over F frames (default 1000,
// after a warm-up) it reports, per thread count, the frame time's p50, p90,
// p99 and max, the ratios p99/p50 and max/p50 (a real-time loop wants <= 1.15
// and <= 1.3), the same for each phase, how many frames were over 1.15 x p50
// and in which phase the slow frames lost their time, and the other load on
// the machine while the series ran (on a shared 2-core machine another
// process's time slice is the most common slow frame).
//
// Allocations: the program counts every allocation call of the process
// (malloc & co., every operator new, oneTBB's own allocator entry points:
// hashgrid_support/alloc_counter.h) and reports how many the measured frames
// made, per thread count. The library promises none after init; a nonzero
// count makes the exit status 1. (Builds where the counter cannot replace the
// allocator, e.g. with a sanitizer, say "not counted".)
//
// What is not ours: after each frame, on the calling thread, two fixed
// workloads run untimed by the frame: a chain of dependent integer
// operations (compute, ~1.8 ms on the 2-core development VM) and a 16 MiB
// memcpy (memory, ~3 ms there). Their
// p99/p50 is the spread this machine puts on any fixed work, the floor under
// the frame's own (--reference 0 leaves them out). For each frame the program
// also counts the process's involuntary context switches and page faults
// (getrusage) and reports how many slow frames had one.
//
// --csv FILE writes every measured frame: threads, frame, rebuild_ms,
// pairs_ms, total_ms, after "#" lines with the machine, the other load and
// the allocation count of each thread count (profiling/plots/plot.py draws
// its histogram).
//
//   bench_frames [--n N] [--frames F] [--warmup W] [--threads 1,2] [--spin-us S] [--unbounded 0|1]
//                [--reference 0|1] [--csv FILE]

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/platform/worker_spin.h"
#include "hashgrid/status.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/machine_load.h"
#include "hashgrid_support/random.h"
#include "hashgrid_support/timing.h"
#if defined(HASHGRID_BENCH_COUNT_ALLOCATIONS)
#include "hashgrid_support/alloc_counter.h"
#endif

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using hashgrid::Grid;
using hashgrid::GridConfig;
using hashgrid::Pair;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::now_ns;

struct Options {
    uint32_t n = 100000;
    uint32_t frames = 1000;
    uint32_t warmup = 50;
    std::vector<uint32_t> threads{1, 2};
    uint32_t spin_us = hashgrid::platform::kDefaultWorkerSpinMicroseconds;
    uint32_t unbounded = 0;
    uint32_t reference = 1; ///< --reference: time the fixed workloads after each frame.
    std::string csv;        ///< --csv FILE: every measured frame (empty: none).
};

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; i += 2) {
        const char* name = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        bool ok = value != nullptr;
        if (ok && std::strcmp(name, "--n") == 0) {
            ok = hashgrid_support::parse_u32(value, o.n) && o.n >= 1000;
        } else if (ok && std::strcmp(name, "--frames") == 0) {
            ok = hashgrid_support::parse_u32(value, o.frames) && o.frames >= 10;
        } else if (ok && std::strcmp(name, "--warmup") == 0) {
            ok = hashgrid_support::parse_u32(value, o.warmup);
        } else if (ok && std::strcmp(name, "--threads") == 0) {
            ok = hashgrid_support::parse_u32_list(value, 1, 256, o.threads);
        } else if (ok && std::strcmp(name, "--spin-us") == 0) {
            ok = hashgrid_support::parse_u32(value, o.spin_us);
        } else if (ok && std::strcmp(name, "--unbounded") == 0) {
            ok = hashgrid_support::parse_u32(value, o.unbounded) && o.unbounded <= 1;
        } else if (ok && std::strcmp(name, "--reference") == 0) {
            ok = hashgrid_support::parse_u32(value, o.reference) && o.reference <= 1;
        } else if (ok && std::strcmp(name, "--csv") == 0) {
            o.csv = value;
            ok = !o.csv.empty();
        } else {
            ok = false;
        }
        if (!ok) {
            std::fprintf(stderr,
                         "usage: %s [--n N>=1000] [--frames F>=10] [--warmup W] [--threads 1,2] [--spin-us S] "
                         "[--unbounded 0|1] [--reference 0|1] [--csv FILE]\n",
                         argv[0]);
            return false;
        }
    }
    return true;
}

/// Particles with velocities, bouncing in the unit cube.
struct Particles {
    std::vector<float> p[3], v[3];

    Particles(uint32_t n, float speed) {
        hashgrid_support::SplitMix64 rng(20261126);
        for (uint32_t d = 0; d < 3; ++d) {
            p[d].resize(n);
            v[d].resize(n);
        }
        for (uint32_t i = 0; i < n; ++i)
            for (uint32_t d = 0; d < 3; ++d) {
                p[d][i] = rng.unit();
                v[d][i] = rng.uniform(-speed, speed);
            }
    }
    void move() {
        for (uint32_t d = 0; d < 3; ++d)
            for (size_t i = 0; i < p[d].size(); ++i) {
                float x = p[d][i] + v[d][i];
                if (x < 0.0f || x >= 1.0f) {
                    v[d][i] = -v[d][i];
                    x = std::clamp(x, 0.0f, std::nextafter(1.0f, 0.0f));
                }
                p[d][i] = x;
            }
    }
    /// Into the grid's sorted order (velocities along).
    void reorder(const uint32_t* order, std::vector<float>& scratch) {
        const size_t n = p[0].size();
        scratch.resize(n);
        for (std::vector<float>* a : {&p[0], &p[1], &p[2], &v[0], &v[1], &v[2]}) {
            for (size_t k = 0; k < n; ++k)
                scratch[k] = (*a)[order[k]];
            a->swap(scratch);
        }
    }
    [[nodiscard]] hashgrid::ParticleSpans spans() const {
        hashgrid::ParticleSpans s;
        s.x = p[0].data();
        s.y = p[1].data();
        s.z = p[2].data();
        s.count = static_cast<uint32_t>(p[0].size());
        return s;
    }
};

struct Stats {
    double p50, p90, p99, max;
};

Stats stats_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    using hashgrid_support::quantile;
    return {quantile(v, 0.5), quantile(v, 0.9), quantile(v, 0.99), v.back()};
}

/// Allocation calls so far (all entry points), or -1 where the program cannot count them.
int64_t allocations_so_far() {
#if defined(HASHGRID_BENCH_COUNT_ALLOCATIONS)
    return static_cast<int64_t>(hashgrid_support::allocation_counts().total());
#else
    return -1;
#endif
}

/// Fixed work on the calling thread, the same every frame: its spread is the machine's.
class Reference {
public:
    Reference() : from_(kCopyBytes, 1), to_(kCopyBytes, 0) {}

    /// A chain of dependent multiply-xorshift steps (no memory traffic).
    double compute_ms() {
        const uint64_t t0 = hashgrid::platform::now_ns();
        uint64_t x = seed_;
        for (uint32_t i = 0; i < kComputeSteps; ++i) {
            x ^= x >> 29;
            x *= 0xbf58476d1ce4e5b9ULL;
        }
        seed_ = x | 1u; // depends on the result: the loop cannot be dropped
        return elapsed_ms(t0);
    }
    /// One 16 MiB memcpy between buffers touched at construction (no page faults).
    double copy_ms() {
        const uint64_t t0 = hashgrid::platform::now_ns();
        std::memcpy(to_.data(), from_.data(), kCopyBytes);
        const double ms = elapsed_ms(t0);
        from_[seed_ % kCopyBytes] = to_[(seed_ >> 7) % kCopyBytes]; // keeps the copy observable
        return ms;
    }

private:
    static constexpr uint32_t kComputeSteps = 1u << 20;
    static constexpr size_t kCopyBytes = size_t{16} << 20;
    std::vector<unsigned char> from_, to_;
    uint64_t seed_ = 0x9e3779b97f4a7c15ULL;
};

/// Involuntary context switches and page faults of the process so far.
struct Interruptions {
    long switches = 0, faults = 0;
    static Interruptions now() {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return {u.ru_nivcsw, u.ru_minflt + u.ru_majflt};
    }
};

/// One thread count's measured frames, for the CSV.
struct Series {
    uint32_t threads = 0;
    std::vector<double> rebuild, pairs;
    int64_t allocations = -1;
    double other_load = 0.0;
    Stats frame{};
};

bool write_csv(const std::string& path, const Options& o, const std::vector<Series>& all) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return false;
    std::fprintf(f, "# bench_frames: %u particles, 3D unit cube, %s, ~30 neighbours, %u frames after %u warm-up\n", o.n,
                 o.unbounded != 0 ? "unbounded" : "bounded", o.frames, o.warmup);
    std::fprintf(f, "# cpu_model=%s\n# hardware_threads=%u\n", hashgrid_support::cpu_model().c_str(),
                 std::thread::hardware_concurrency());
    for (const Series& s : all) {
        std::fprintf(f,
                     "# threads=%u allocations=%lld other_load=%.3f p50_ms=%.4f p90_ms=%.4f p99_ms=%.4f max_ms=%.4f\n",
                     s.threads, static_cast<long long>(s.allocations), s.other_load, s.frame.p50, s.frame.p90,
                     s.frame.p99, s.frame.max);
    }
    std::fprintf(f, "threads,frame,rebuild_ms,pairs_ms,total_ms\n");
    for (const Series& s : all)
        for (size_t i = 0; i < s.rebuild.size(); ++i)
            std::fprintf(f, "%u,%zu,%.5f,%.5f,%.5f\n", s.threads, i, s.rebuild[i], s.pairs[i],
                         s.rebuild[i] + s.pairs[i]);
    return std::fclose(f) == 0;
}

void print_row(const char* what, uint32_t threads, const Stats& s) {
    std::printf("| %u | %s | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |\n", threads, what, s.p50, s.p90, s.p99, s.max,
                s.p99 / s.p50, s.max / s.p50);
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    if (!parse(argc, argv, o)) return 2;
    // n * 4/3 pi r^3 = 30 neighbours in the unit cube.
    const auto r = static_cast<float>(std::cbrt(30.0 / (4.0 / 3.0 * 3.14159265358979 * o.n)));
    GridConfig c;
    c.dimensions = 3;
    c.cell_size = r;
    c.interaction_distance = r;
    c.max_particles = o.n;
    c.max_cells = o.n;
    c.max_pairs = uint64_t{o.n} * 24;
    if (o.unbounded == 0) {
        c.world = hashgrid::World::bounded;
        const auto cells = static_cast<uint32_t>(std::ceil(1.0f / r)) + 1;
        for (uint32_t d = 0; d < 3; ++d)
            c.cell_counts[d] = cells;
    }
    std::printf("bench_frames: %u particles in the unit cube, 3D, %s, r = cell = %.5f (~30 neighbours), moving "
                "0.02 r per frame per axis at most, kept in the grid's sorted order; %u frames after %u warm-up; "
                "workers poll %u us\n",
                o.n, o.unbounded != 0 ? "unbounded" : "bounded", static_cast<double>(r), o.frames, o.warmup, o.spin_us);
    std::printf("CPU: %s; load average at start: %s\n\n", hashgrid_support::cpu_model().c_str(),
                hashgrid_support::load_average().c_str());
    std::vector<Pair> pairs(static_cast<size_t>(c.max_pairs));
    std::vector<float> scratch;
    std::vector<Series> all;
    all.reserve(o.threads.size());
    // The counter sees the setup's allocations (the buffers above): it is live.
    if (allocations_so_far() >= 0)
        std::printf("(allocation counter: %lld calls before the first frame)\n\n",
                    static_cast<long long>(allocations_so_far()));
    std::printf("| threads | ms | p50 | p90 | p99 | max | p99/p50 | max/p50 |\n|---|---|---|---|---|---|---|---|\n");
    bool ok = true;
    bool allocated = false;
    Reference reference;
    std::vector<double> ref_compute, ref_copy;
    ref_compute.reserve(o.threads.size() * o.frames);
    ref_copy.reserve(o.threads.size() * o.frames);
    for (uint32_t threads : o.threads) {
        hashgrid::platform::TbbBackend tbb(threads, o.spin_us);
        const hashgrid::ThreadBackend backend = tbb.backend();
        Grid grid;
        if (!grid.init_allocate(c).ok()) {
            std::printf("init failed\n");
            return 1;
        }
        Particles parts(o.n, 0.02f * r);
        std::vector<double> total, rebuild, find;
        std::vector<Interruptions> interrupted; // per frame: what happened while it was timed
        // Room for every measured frame up front: the loop itself allocates nothing.
        total.reserve(o.frames);
        rebuild.reserve(o.frames);
        find.reserve(o.frames);
        interrupted.reserve(o.frames);
        const hashgrid_support::OtherLoad other;
        int64_t allocations_before = 0;
        for (uint32_t f = 0; f < o.warmup + o.frames; ++f) {
            if (f == o.warmup) allocations_before = allocations_so_far();
            const Interruptions before = Interruptions::now();
            const uint64_t t0 = now_ns();
            const hashgrid::Status st = grid.rebuild(parts.spans(), backend);
            const double t_rebuild = elapsed_ms(t0);
            const uint64_t t1 = now_ns();
            const hashgrid::PairResult pr = grid.find_pairs(pairs.data(), pairs.size(), backend);
            const double t_pairs = elapsed_ms(t1);
            const Interruptions after = Interruptions::now();
            if (!st.ok() || !pr.status.ok()) {
                std::printf("frame %u failed: rebuild %s, pairs %s\n", f, hashgrid::to_string(st.code),
                            hashgrid::to_string(pr.status.code));
                ok = false;
                break;
            }
            if (f >= o.warmup) {
                rebuild.push_back(t_rebuild);
                find.push_back(t_pairs);
                total.push_back(t_rebuild + t_pairs);
                interrupted.push_back({after.switches - before.switches, after.faults - before.faults});
                if (o.reference != 0) {
                    ref_compute.push_back(reference.compute_ms());
                    ref_copy.push_back(reference.copy_ms());
                }
            }
            parts.reorder(grid.sorted_to_original(), scratch);
            parts.move();
        }
        const int64_t allocations_after = allocations_so_far();
        if (!ok) break;
        const Stats st = stats_of(total), sr = stats_of(rebuild), sp = stats_of(find);
        print_row("frame", threads, st);
        print_row("rebuild", threads, sr);
        print_row("pairs", threads, sp);
        // The slow frames: over 1.15 x p50, and which phase was over its own p50 by more.
        uint32_t slow = 0, in_rebuild = 0, slow_switched = 0, slow_faulted = 0, switched = 0, faulted = 0;
        for (size_t i = 0; i < total.size(); ++i) {
            switched += interrupted[i].switches > 0 ? 1u : 0u;
            faulted += interrupted[i].faults > 0 ? 1u : 0u;
            if (total[i] <= 1.15 * st.p50) continue;
            ++slow;
            if (rebuild[i] - sr.p50 > find[i] - sp.p50) ++in_rebuild;
            slow_switched += interrupted[i].switches > 0 ? 1u : 0u;
            slow_faulted += interrupted[i].faults > 0 ? 1u : 0u;
        }
        std::printf("|  %u | slow frames (> 1.15 x p50): %u of %zu, %u of them mostly in the rebuild, %u with an "
                    "involuntary context switch (all frames: %u), %u with a page fault (all frames: %u); other load "
                    "%.2f cores | | | | | | |\n",
                    threads, slow, total.size(), in_rebuild, slow_switched, switched, slow_faulted, faulted,
                    other.cores());
        Series s;
        s.threads = threads;
        s.other_load = other.cores();
        s.frame = st;
        s.allocations = allocations_before < 0 ? -1 : allocations_after - allocations_before;
        s.rebuild = std::move(rebuild);
        s.pairs = std::move(find);
        allocated = allocated || s.allocations > 0;
        all.push_back(std::move(s));
    }
    if (o.reference != 0 && !ref_compute.empty()) {
        // One row each over all thread counts' frames: the work is the same and runs on the calling thread.
        print_row("reference: compute", 1, stats_of(ref_compute));
        print_row("reference: 16 MiB copy", 1, stats_of(ref_copy));
    }
    std::printf("\n");
    for (const Series& s : all) {
        if (s.allocations < 0) {
            std::printf("%u threads: allocations not counted in this build\n", s.threads);
        } else {
            std::printf("%u threads: %lld allocation calls during the %u measured frames (malloc & co., operator new, "
                        "oneTBB's allocator)%s\n",
                        s.threads, static_cast<long long>(s.allocations), o.frames,
                        s.allocations == 0 ? "" : ": ALLOCATED");
        }
    }
    if (!o.csv.empty()) {
        if (!write_csv(o.csv, o, all)) {
            std::printf("cannot write %s\n", o.csv.c_str());
            return 1;
        }
        std::printf("per-frame times in %s\n", o.csv.c_str());
    }
    return ok && !allocated ? 0 : 1;
}

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
// --scene scan replaces the cube with a robot's lidar scan (100k points by
// default): a 32-ring spinning lidar 1 m above the floor of an 8 x 6 x 3 m
// room with a table, a shelf and a pillar (the room of
// examples/robotics_clearance), 32 beams from -25 to +15 degrees fired at
// each of n / 32 azimuths, each point where its beam first meets a surface
// plus 4 mm of sensor noise. Points lie on surfaces, densest near the robot.
// Each frame is a fresh scan (new noise) in the sensor's firing order, as a
// robot receives it: not the grid's order. r = cell = --cell metres (default
// 0.05: the occupied cells span ~1.2M cells, more than 2 per point, so an
// unbounded world takes the hashed table; 0.1 fits the dense box). The
// bounded world is the room plus 2 cells per side (clamp); max_pairs is
// the first scan's pair count + 25%.
//
// Per thread count the program also prints the median and the minimum of
// each phase of RebuildTimings over the measured frames (the unbounded cell
// step `table` with its sub-phases) and of the pair phase; the minimum is the
// frame least disturbed by other processes. At start it prints the config's
// memory_requirements.
//
// --csv FILE writes every measured frame: threads, frame, rebuild_ms,
// pairs_ms, total_ms, after "#" lines with the machine, the other load and
// the allocation count of each thread count (profiling/plots/plot.py draws
// its histogram).
//
//   bench_frames [--n N] [--frames F] [--warmup W] [--threads 1,2] [--spin-us S] [--unbounded 0|1]
//                [--reference 0|1] [--scene cube|scan] [--cell C] [--csv FILE]

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
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
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
    uint32_t reference = 1;     ///< --reference: time the fixed workloads after each frame.
    std::string csv;            ///< --csv FILE: every measured frame (empty: none).
    std::string scene = "cube"; ///< --scene: "cube" (moving particles) or "scan" (a lidar scan of a room).
    float cell = 0.05f;         ///< --cell: the scan's cell size and interaction distance, metres.
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
        } else if (ok && std::strcmp(name, "--scene") == 0) {
            o.scene = value;
            ok = o.scene == "cube" || o.scene == "scan";
        } else if (ok && std::strcmp(name, "--cell") == 0) {
            ok = hashgrid_support::parse_float(value, o.cell) && o.cell >= 0.01f && o.cell <= 1.0f;
        } else if (ok && std::strcmp(name, "--csv") == 0) {
            o.csv = value;
            ok = !o.csv.empty();
        } else {
            ok = false;
        }
        if (!ok) {
            std::fprintf(stderr,
                         "usage: %s [--n N>=1000] [--frames F>=10] [--warmup W] [--threads 1,2] [--spin-us S] "
                         "[--unbounded 0|1] [--reference 0|1] [--scene cube|scan] [--cell C] [--csv FILE]\n",
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

/// A robot's lidar scans of a room (--scene scan): the same points each frame
/// with fresh sensor noise, in the sensor's firing order.
struct Scan {
    static constexpr double kRoom[3] = {8.0, 6.0, 3.0};
    static constexpr double kSensor[3] = {2.0, 3.0, 1.0};
    static constexpr uint32_t kRings = 32;
    static constexpr float kNoise = 0.004f; ///< Metres, standard deviation.
    std::vector<float> base[3], p[3];
    uint64_t frame = 0;

    explicit Scan(uint32_t n) {
        // Furniture (lo, hi), as in examples/robotics_clearance: a table, a shelf, a pillar.
        const double boxes[3][2][3] = {{{3.3, 2.5, 0.0}, {4.7, 3.5, 0.75}},
                                       {{6.4, 0.1, 0.0}, {7.8, 0.5, 1.8}},
                                       {{6.9, 4.6, 0.0}, {7.3, 5.0, 3.0}}};
        const uint32_t azimuths = (n + kRings - 1) / kRings;
        const double pi = 3.14159265358979;
        for (uint32_t d = 0; d < 3; ++d) {
            base[d].resize(n);
            p[d].resize(n);
        }
        for (uint32_t i = 0; i < n; ++i) {
            const double azimuth = 2.0 * pi * static_cast<double>(i / kRings) / static_cast<double>(azimuths);
            const double elevation = (-25.0 + 40.0 * static_cast<double>(i % kRings) / (kRings - 1)) * pi / 180.0;
            const double dir[3] = {std::cos(elevation) * std::cos(azimuth), std::cos(elevation) * std::sin(azimuth),
                                   std::sin(elevation)};
            // The room from inside: the nearest wall, floor or ceiling ahead.
            double t = 1e30;
            for (uint32_t d = 0; d < 3; ++d) {
                if (dir[d] > 1e-12) t = std::min(t, (kRoom[d] - kSensor[d]) / dir[d]);
                if (dir[d] < -1e-12) t = std::min(t, -kSensor[d] / dir[d]);
            }
            // A piece of furniture in front of it (slab test).
            for (const auto& box : boxes) {
                double enter = 0.0, leave = 1e30;
                for (uint32_t d = 0; d < 3; ++d) {
                    if (std::fabs(dir[d]) <= 1e-12) {
                        if (kSensor[d] < box[0][d] || kSensor[d] > box[1][d]) leave = -1.0;
                        continue;
                    }
                    const double a = (box[0][d] - kSensor[d]) / dir[d], b = (box[1][d] - kSensor[d]) / dir[d];
                    enter = std::max(enter, std::min(a, b));
                    leave = std::min(leave, std::max(a, b));
                }
                if (enter <= leave && enter > 0.0) t = std::min(t, enter);
            }
            for (uint32_t d = 0; d < 3; ++d)
                base[d][i] = static_cast<float>(kSensor[d] + t * dir[d]);
        }
        move();
    }
    /// A fresh scan: the surface points plus this frame's noise.
    void move() {
        hashgrid_support::SplitMix64 noise(0x5ca9ull * ++frame);
        for (uint32_t d = 0; d < 3; ++d)
            for (size_t i = 0; i < p[d].size(); ++i)
                p[d][i] = noise.cluster(base[d][i], kNoise);
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

/// The grid's config for the scene: r = cell; bounded, the box around the
/// scene; max_pairs a first guess (sized_pairs measures the scan's).
GridConfig scene_config(const Options& o, float& r) {
    GridConfig c;
    c.dimensions = 3;
    c.max_particles = o.n;
    c.max_cells = o.n;
    c.max_pairs = uint64_t{o.n} * 24;
    if (o.scene == "scan") {
        r = o.cell;
        if (o.unbounded == 0) {
            // The room plus 2 cells per side (the noise reaches 14 mm out).
            c.world = hashgrid::World::bounded;
            c.out_of_bounds = hashgrid::OutOfBounds::clamp;
            for (uint32_t d = 0; d < 3; ++d) {
                c.origin[d] = -2.0f * r;
                c.cell_counts[d] = static_cast<uint32_t>(std::ceil(Scan::kRoom[d] / static_cast<double>(r))) + 4;
            }
        }
    } else {
        // n * 4/3 pi r^3 = 30 neighbours in the unit cube.
        r = static_cast<float>(std::cbrt(30.0 / (4.0 / 3.0 * 3.14159265358979 * o.n)));
        if (o.unbounded == 0) {
            c.world = hashgrid::World::bounded;
            const auto cells = static_cast<uint32_t>(std::ceil(1.0f / r)) + 1;
            for (uint32_t d = 0; d < 3; ++d)
                c.cell_counts[d] = cells;
        }
    }
    c.cell_size = r;
    c.interaction_distance = r;
    return c;
}

/// The scan's pair count + 25% (at least 1): what a user would set max_pairs
/// to after looking at the scene. 0 on failure.
uint64_t sized_pairs(GridConfig c, const Scan& scan) {
    for (;;) {
        Grid grid;
        if (!grid.init_allocate(c).ok()) return 0;
        const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
        if (!grid.rebuild(scan.spans(), serial).ok()) return 0;
        std::vector<Pair> pairs(static_cast<size_t>(c.max_pairs));
        const hashgrid::PairResult pr = grid.find_pairs(pairs.data(), pairs.size(), serial);
        if (pr.status.ok()) return pr.total + pr.total / 4 + 1;
        if (pr.status.code != hashgrid::StatusCode::pair_capacity) return 0;
        c.max_pairs = pr.status.needed;
    }
}

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

/// The columns of the phase table: threads, then RebuildTimings' fields.
constexpr std::array<const char*, 14> kPhaseNames = {"threads", "keys",     "table", "clear",   "insert",
                                                     "sort",    "lookup",   "dense", "compact", "scan",
                                                     "scatter", "finalize", "total", "pairs"};

/// The median (or the minimum) of each RebuildTimings field over the frames
/// (ms), in kPhaseNames' order after threads, then that of the pair phase
/// (`pairs_ms`: find_pairs, timed by the program).
std::vector<double> phase_summary(const std::vector<hashgrid::RebuildTimings>& frames, std::vector<double> pairs_ms,
                                  bool minimum) {
    const auto median_of = [&frames, minimum](uint64_t hashgrid::RebuildTimings::*field) {
        std::vector<double> v;
        v.reserve(frames.size());
        for (const hashgrid::RebuildTimings& t : frames)
            v.push_back(static_cast<double>(t.*field) * 1e-6);
        if (v.empty()) return 0.0;
        return minimum ? *std::min_element(v.begin(), v.end()) : hashgrid_support::median(std::move(v));
    };
    using T = hashgrid::RebuildTimings;
    const double pairs = pairs_ms.empty() ? 0.0
                         : minimum        ? *std::min_element(pairs_ms.begin(), pairs_ms.end())
                                          : hashgrid_support::median(std::move(pairs_ms));
    return {median_of(&T::keys),
            median_of(&T::table),
            median_of(&T::table_clear),
            median_of(&T::table_insert),
            median_of(&T::table_sort),
            median_of(&T::table_lookup),
            median_of(&T::dense_cells),
            median_of(&T::dense_compact),
            median_of(&T::scan),
            median_of(&T::scatter),
            median_of(&T::finalize),
            median_of(&T::total),
            pairs};
}

void print_row(const char* what, uint32_t threads, const Stats& s) {
    std::printf("| %u | %s | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |\n", threads, what, s.p50, s.p90, s.p99, s.max,
                s.p99 / s.p50, s.max / s.p50);
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    if (!parse(argc, argv, o)) return 2;
    const bool scan_scene = o.scene == "scan";
    float r = 0.0f;
    GridConfig c = scene_config(o, r);
    std::unique_ptr<Scan> first_scan;
    if (scan_scene) {
        first_scan = std::make_unique<Scan>(o.n);
        c.max_pairs = sized_pairs(c, *first_scan);
        if (c.max_pairs == 0) {
            std::printf("sizing the scan's pairs failed\n");
            return 1;
        }
        std::printf("bench_frames: a lidar scan of %u points in an 8 x 6 x 3 m room (32 rings, sensor 1 m above the "
                    "floor, 4 mm noise), a fresh scan per frame in firing order, 3D, %s, r = cell = %.3f m; %u "
                    "frames after %u warm-up; workers poll %u us\n",
                    o.n, o.unbounded != 0 ? "unbounded" : "bounded", static_cast<double>(r), o.frames, o.warmup,
                    o.spin_us);
    } else {
        std::printf("bench_frames: %u particles in the unit cube, 3D, %s, r = cell = %.5f (~30 neighbours), moving "
                    "0.02 r per frame per axis at most, kept in the grid's sorted order; %u frames after %u warm-up; "
                    "workers poll %u us\n",
                    o.n, o.unbounded != 0 ? "unbounded" : "bounded", static_cast<double>(r), o.frames, o.warmup,
                    o.spin_us);
    }
    const hashgrid::MemoryRequirements memory = hashgrid::memory_requirements(c);
    if (!memory.status.ok()) {
        std::printf("invalid config: %s\n", memory.status.message);
        return 1;
    }
    std::printf("memory_requirements: %.1f MiB (max_particles %u, max_cells %u, max_pairs %llu%s)\n",
                static_cast<double>(memory.bytes) / (1024.0 * 1024.0), c.max_particles, c.max_cells,
                static_cast<unsigned long long>(c.max_pairs),
                o.unbounded != 0 ? ""
                                 : (", " + std::to_string(c.cell_counts[0]) + " x " + std::to_string(c.cell_counts[1]) +
                                    " x " + std::to_string(c.cell_counts[2]) + " cells")
                                       .c_str());
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
    std::vector<std::pair<uint32_t, std::vector<double>>> s_phases; // per thread count: phase medians, minima
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
        Particles parts(scan_scene ? 1000 : o.n, 0.02f * r); // the scan scene moves `scan` instead
        Scan scan = scan_scene ? *first_scan : Scan(0);
        std::vector<double> total, rebuild, find;
        std::vector<hashgrid::RebuildTimings> phases; // per measured frame
        std::vector<Interruptions> interrupted;       // per frame: what happened while it was timed
        // Room for every measured frame up front: the loop itself allocates nothing.
        total.reserve(o.frames);
        rebuild.reserve(o.frames);
        find.reserve(o.frames);
        interrupted.reserve(o.frames);
        phases.reserve(o.frames);
        const hashgrid_support::OtherLoad other;
        int64_t allocations_before = 0;
        for (uint32_t f = 0; f < o.warmup + o.frames; ++f) {
            if (f == o.warmup) allocations_before = allocations_so_far();
            const Interruptions before = Interruptions::now();
            const hashgrid::ParticleSpans spans = scan_scene ? scan.spans() : parts.spans(); // reorder moves arrays
            const uint64_t t0 = now_ns();
            const hashgrid::Status st = grid.rebuild(spans, backend);
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
                phases.push_back(grid.last_rebuild_timings());
                if (o.reference != 0) {
                    ref_compute.push_back(reference.compute_ms());
                    ref_copy.push_back(reference.copy_ms());
                }
            }
            if (scan_scene) {
                scan.move(); // a fresh scan, in the sensor's order
            } else {
                parts.reorder(grid.sorted_to_original(), scratch);
                parts.move();
            }
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
        s_phases.push_back({threads, phase_summary(phases, find, false)});
        s_phases.push_back({threads, phase_summary(phases, find, true)});
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
    std::printf("\nRebuild phases (RebuildTimings), ms over the measured frames: the median, and the minimum (the "
                "least disturbed frame of each phase); in each frame table = clear + insert + sort + lookup (hashed "
                "path) + dense + compact (dense box path):\n\n| of |");
    for (const char* name : kPhaseNames)
        std::printf(" %s |", name);
    std::printf("\n|---|");
    for (size_t i = 0; i < kPhaseNames.size(); ++i)
        std::printf("---|");
    std::printf("\n");
    for (size_t row = 0; row < s_phases.size(); ++row) {
        std::printf("| %s | %u |", row % 2 == 0 ? "median" : "min", s_phases[row].first);
        for (const double m : s_phases[row].second)
            std::printf(" %.3f |", m);
        std::printf("\n");
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

// SPDX-License-Identifier: MIT
// particles_demo: Hashgrid's first demo.
//
// Tens of thousands of particles move and bounce in the unit box. Every frame
// the grid is rebuilt and all pairs closer than the interaction distance r are
// found, first in 2D (the scene of the "Basic Spatial Hashing with Boost"
// article: which particles are within d of each other?), then in 3D. The pairs
// drive a soft repulsion, and the particles are kept in the grid's sorted order
// from frame to frame, the recommended layout: the next rebuild is faster and
// memory stays spatially coherent.
//
// The run ends with a check of one frame at a small size against an O(N^2)
// loop using the documented distance test (grid.h); it prints PASS or FAIL and
// the program returns nonzero on FAIL.
//
// Every tenth frame's line is followed by the rebuild's phases
// (Grid::last_rebuild_timings): keys, the unbounded cell step `table` with
// its sub-phases (clear, insert, sort, lookup on the hashed table; dense and
// compact on the dense box), scan, scatter and finalize. --unbounded 1 runs
// both scenes in an unbounded world instead of the bounded box.
//
// --spin-us: how long idle workers poll for the next phase before sleeping
// (hashgrid/platform/worker_spin.h); 0 shows what waking them costs.
//
// --trace FILE records the last 3D frame (rebuild + find_pairs, every phase and
// every chunk on its worker) with a hashgrid::Trace and writes it to FILE as
// Chrome trace-event JSON: open it in https://ui.perfetto.dev or
// chrome://tracing (docs/user-guide.md, "Tracing a frame").
//
// --png DIR writes pictures of the particles coloured by their neighbour count
// (the pairs of that frame; dark blue: none, yellow: twice the mean or more),
// every --png-every frames (default 10), --png-size pixels square (default
// 512), as DIR/2d_NNNN.png and DIR/3d_NNNN.png (3D: seen along z, the nearer
// particles drawn over the farther ones), with the examples' small PNG writer
// (support/.../png_writer.h). With at most 5,000 particles every picture is
// also checked: the neighbour counts behind its colours against brute force
// (every pair i < j with the documented distance test), the picture against
// one drawn from the brute-force counts, and at least three colours in it.
//
//   particles_demo [--frames N] [--particles N] [--threads N] [--spin-us N] [--unbounded 0|1]
//                  [--trace FILE] [--png DIR] [--png-every N] [--png-size PIXELS]

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/platform/worker_spin.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid/trace.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/png_writer.h"
#include "hashgrid_support/random.h"
#include "hashgrid_support/timing.h"
#if defined(HASHGRID_HAS_TBB)
#include "hashgrid/platform/tbb_backend.h"
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace {

using hashgrid::Grid;
using hashgrid::GridConfig;
using hashgrid::Pair;
using hashgrid::PairResult;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::ThreadBackend;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::now_ns;
using hashgrid_support::median;
using hashgrid_support::spread;
using hashgrid_support::Spread;

/// Expected neighbours within r of a particle (uniform density).
constexpr double kNeighbours2 = 8.0;
constexpr double kNeighbours3 = 16.0;
/// Fastest speed per axis, in units of r per frame.
constexpr float kMaxSpeed = 0.5f;
/// Repulsion impulse at zero distance, in units of r per frame.
constexpr float kStiffness = 0.01f;
/// Size of the brute-force check (capped by --particles).
constexpr uint32_t kCheckParticles = 2000;
/// Frames simulated before the checked frame.
constexpr uint32_t kCheckFrames = 3;

struct Options {
    uint32_t frames = 60;
    uint32_t particles = 50000;
    uint32_t threads = 0; ///< 0: oneTBB's default concurrency.
    uint32_t spin_us = hashgrid::platform::kDefaultWorkerSpinMicroseconds;
    const char* trace_file = nullptr; ///< --trace FILE: the last 3D frame's trace goes there.
    std::string png_dir;              ///< --png DIR: pictures go there (empty: none).
    uint32_t png_every = 10;
    uint32_t png_size = 512;
    uint32_t unbounded = 0; ///< --unbounded 1: both scenes in an unbounded world.
};

/// Pictures are checked against brute force up to this many particles.
constexpr uint32_t kPngCheckParticles = 5000;

/// Events the trace ring holds: a frame of a million particles records about
/// 1,500 (one per chunk and phase).
constexpr uint32_t kTraceEvents = 1u << 14;

bool parse_options(int argc, char** argv, Options& options) {
    std::vector<char*> counts{argv[0]}; // every option but --trace FILE and --png DIR
    for (int i = 1; i < argc; ++i) {
        const bool trace = std::strcmp(argv[i], "--trace") == 0;
        const bool png = std::strcmp(argv[i], "--png") == 0;
        if (!trace && !png) {
            counts.push_back(argv[i]);
        } else if (i + 1 < argc && argv[i + 1][0] != '\0') {
            if (trace) {
                options.trace_file = argv[++i];
            } else {
                options.png_dir = argv[++i];
            }
        } else {
            std::fprintf(stderr,
                         "usage: %s [--frames N] [--particles N] [--threads N] [--spin-us N] [--unbounded 0|1]\n"
                         "          [--trace FILE] [--png DIR] [--png-every N] [--png-size PIXELS]\n",
                         argv[0]);
            return false;
        }
    }
    if (!hashgrid_support::parse_count_options(static_cast<int>(counts.size()), counts.data(),
                                               {{"--frames", &options.frames},
                                                {"--particles", &options.particles},
                                                {"--threads", &options.threads},
                                                {"--spin-us", &options.spin_us},
                                                {"--png-every", &options.png_every},
                                                {"--png-size", &options.png_size},
                                                {"--unbounded", &options.unbounded}}))
        return false;
    if (options.unbounded > 1) {
        std::fprintf(stderr, "need --unbounded 0 or 1\n");
        return false;
    }
    if (options.frames == 0 || options.particles < 2) {
        std::fprintf(stderr, "need --frames >= 1 and --particles >= 2\n");
        return false;
    }
    if (options.png_every == 0 || options.png_size < 16 || options.png_size > 8192) {
        std::fprintf(stderr, "need --png-every >= 1 and --png-size in 16..8192\n");
        return false;
    }
    return true;
}

const char* code_name(StatusCode code) { return hashgrid::to_string(code); }

/// Particles in the unit box [0, 1]^d with a grid that pairs them.
class Simulation {
public:
    Simulation(uint32_t dimensions, uint32_t count, uint64_t seed) : dimensions_(dimensions), count_(count) {
        const double pi = 3.14159265358979323846;
        const double n = static_cast<double>(count);
        // Density n per unit volume: expected neighbours = n * pi r^2 (2D) or n * 4/3 pi r^3 (3D).
        r_ = dimensions == 2 ? static_cast<float>(std::sqrt(kNeighbours2 / (pi * n)))
                             : static_cast<float>(std::cbrt(kNeighbours3 * 3.0 / (4.0 * pi * n)));
        // splitmix64 with our own float mapping: the same scene on every standard library.
        hashgrid_support::SplitMix64 rng(seed);
        const float v = kMaxSpeed * r_;
        for (uint32_t axis = 0; axis < dimensions_; ++axis) {
            pos_[axis].resize(count);
            vel_[axis].resize(count);
            for (uint32_t i = 0; i < count; ++i) {
                pos_[axis][i] = rng.unit();
                vel_[axis][i] = rng.uniform(-v, v);
            }
        }
        scratch_.resize(count);
        expected_pairs_ = static_cast<uint64_t>(n * (dimensions == 2 ? kNeighbours2 : kNeighbours3) / 2.0);
    }

    /// A bounded world covering the box (cell = r), or an unbounded one.
    [[nodiscard]] GridConfig config(hashgrid::World world) const {
        GridConfig config;
        config.dimensions = dimensions_;
        config.cell_size = r_;
        config.interaction_distance = r_;
        config.world = world;
        if (world == hashgrid::World::bounded) {
            // floor(1 / r) + 1 cells cover [0, 1] whatever the rounding of 1 / r.
            const uint32_t cells = static_cast<uint32_t>(std::floor(1.0 / static_cast<double>(r_))) + 1;
            config.cell_counts[0] = cells;
            config.cell_counts[1] = cells;
            config.cell_counts[2] = dimensions_ == 3 ? cells : 1;
        }
        config.max_particles = count_;
        config.max_cells = count_;
        // Uniform density gives expected_pairs_ give or take a few percent; find_pairs
        // says so (pair_capacity) if a frame ever needs more, and run_frame regrows.
        config.max_pairs = 2 * expected_pairs_ + 1024;
        return config;
    }

    /// Sets up the grid; false (and a message) on failure.
    bool init(hashgrid::World world) { return init_grid(config(world)); }

    struct FrameTimes {
        double rebuild_ms = 0.0;
        double pairs_ms = 0.0;
        double physics_ms = 0.0;                   ///< The demo's own serial repulsion, reorder and motion.
        hashgrid::RebuildTimings rebuild_phases{}; ///< The rebuild's own phase times.
        uint64_t pair_count = 0;
    };

    /// One frame: rebuild, pairs, repulsion, reorder into sorted order, move.
    bool run_frame(const ThreadBackend& backend, FrameTimes& times) {
        return pair_step(backend, times) && physics_step(times);
    }

    /// The demo's own part of a frame: repulsion, reorder, move.
    bool physics_step(FrameTimes& times) {
        const uint64_t start = now_ns();
        repel();
        reorder();
        move();
        times.physics_ms = elapsed_ms(start);
        return true;
    }

    /// Records the grid's calls into `trace` (null: none), across re-inits.
    void set_trace(hashgrid::Trace* trace) {
        trace_ = trace;
        if (grid_) grid_->set_trace(trace);
    }

    /// Rebuild and pairs only (positions unchanged): the frame the check compares.
    bool pair_step(const ThreadBackend& backend, FrameTimes& times) {
        const hashgrid::ParticleSpans spans{pos_[0].data(), pos_[1].data(), dimensions_ == 3 ? pos_[2].data() : nullptr,
                                            nullptr, count_};
        uint64_t start = now_ns();
        const Status status = grid_->rebuild(spans, backend);
        times.rebuild_ms = elapsed_ms(start);
        times.rebuild_phases = grid_->last_rebuild_timings();
        if (!status.ok()) {
            std::printf("rebuild failed: %s (%s)\n", code_name(status.code), status.message);
            return false;
        }
        start = now_ns();
        PairResult result = grid_->find_pairs(pairs_.data(), pairs_.size(), backend);
        times.pairs_ms = elapsed_ms(start);
        if (result.status.code == StatusCode::pair_capacity || result.status.code == StatusCode::output_too_small) {
            // Nothing is lost silently: the exact count is known. Raise max_pairs and redo the frame.
            std::printf("  %s: %llu pairs needed, raising max_pairs\n", code_name(result.status.code),
                        static_cast<unsigned long long>(result.total));
            GridConfig grown = grid_->config();
            grown.max_pairs = result.total + result.total / 4 + 1024;
            if (!init_grid(grown)) return false;
            return pair_step(backend, times);
        }
        if (!result.status.ok()) {
            std::printf("find_pairs failed: %s (%s)\n", code_name(result.status.code), result.status.message);
            return false;
        }
        pair_count_ = result.total;
        times.pair_count = pair_count_;
        return true;
    }

    [[nodiscard]] uint32_t dimensions() const { return dimensions_; }
    [[nodiscard]] uint32_t count() const { return count_; }
    [[nodiscard]] float r() const { return r_; }
    [[nodiscard]] const float* axis(uint32_t a) const { return pos_[a].data(); }
    [[nodiscard]] const Pair* pairs() const { return pairs_.data(); }
    [[nodiscard]] uint64_t pair_count() const { return pair_count_; }
    [[nodiscard]] uint64_t memory_bytes() const { return memory_bytes_; }

private:
    bool init_grid(const GridConfig& config) {
        const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
        auto grid = std::make_unique<Grid>();
        const Status status = req.status.ok() ? grid->init_allocate(config) : req.status;
        if (!status.ok()) {
            std::printf("grid init failed: %s (%s)\n", code_name(status.code), status.message);
            return false;
        }
        grid_ = std::move(grid);
        grid_->set_trace(trace_);
        memory_bytes_ = req.bytes;
        pairs_.assign(static_cast<size_t>(config.max_pairs), Pair{0, 0});
        return true;
    }

    /// Soft repulsion along each pair, in the pairs' deterministic order.
    void repel() {
        if (dimensions_ == 2) {
            repel_dims<2>();
        } else {
            repel_dims<3>();
        }
    }

    template <uint32_t D>
    void repel_dims() {
        const float strength = kStiffness * r_;
        const float inv_r = 1.0f / r_;
        const float* p[3] = {pos_[0].data(), pos_[1].data(), D == 3 ? pos_[2].data() : nullptr};
        float* v[3] = {vel_[0].data(), vel_[1].data(), D == 3 ? vel_[2].data() : nullptr};
        for (size_t k = 0; k < pair_count_; ++k) { // pairs_ is addressable: size_t fits
            const uint32_t a = pairs_[k].a;
            const uint32_t b = pairs_[k].b;
            float d[D];
            float d2 = 0.0f;
            for (uint32_t axis = 0; axis < D; ++axis) {
                d[axis] = p[axis][b] - p[axis][a];
                d2 += d[axis] * d[axis];
            }
            if (d2 <= 0.0f) continue;
            const float dist = std::sqrt(d2);
            const float s = strength * (1.0f - dist * inv_r) / dist;
            for (uint32_t axis = 0; axis < D; ++axis) {
                v[axis][a] -= s * d[axis];
                v[axis][b] += s * d[axis];
            }
        }
    }

    /// Stores the particles in the grid's sorted order: p_new[k] = p_old[order[k]].
    void reorder() {
        const uint32_t* order = grid_->sorted_to_original();
        for (uint32_t axis = 0; axis < dimensions_; ++axis) {
            for (std::vector<float>* values : {&pos_[axis], &vel_[axis]}) {
                for (uint32_t k = 0; k < count_; ++k)
                    scratch_[k] = (*values)[order[k]];
                values->swap(scratch_);
            }
        }
    }

    /// Moves by one frame's velocity (capped) and bounces off the walls of [0, 1].
    void move() {
        const float v_max = kMaxSpeed * r_;
        for (uint32_t axis = 0; axis < dimensions_; ++axis) {
            float* p = pos_[axis].data();
            float* v = vel_[axis].data();
            for (uint32_t i = 0; i < count_; ++i) {
                v[i] = std::clamp(v[i], -v_max, v_max);
                float q = p[i] + v[i];
                if (q < 0.0f) {
                    q = -q;
                    v[i] = -v[i];
                } else if (q > 1.0f) {
                    q = 2.0f - q;
                    v[i] = -v[i];
                }
                p[i] = std::clamp(q, 0.0f, 1.0f);
            }
        }
    }

    uint32_t dimensions_;
    uint32_t count_;
    float r_ = 0.0f;
    uint64_t expected_pairs_ = 0;
    std::vector<float> pos_[3];
    std::vector<float> vel_[3];
    std::vector<float> scratch_;
    std::unique_ptr<Grid> grid_;
    hashgrid::Trace* trace_ = nullptr;
    std::vector<Pair> pairs_;
    uint64_t pair_count_ = 0;
    uint64_t memory_bytes_ = 0;
};

/// Writes the trace as Chrome trace-event JSON.
bool write_trace(const hashgrid::Trace& trace, const char* path, uint32_t frame) {
    std::FILE* file = std::fopen(path, "wb");
    if (file == nullptr) {
        std::printf("cannot open %s for the trace\n", path);
        return false;
    }
    const hashgrid::TraceExport written = hashgrid::write_chrome_trace(trace, file);
    const bool closed = std::fclose(file) == 0;
    if (!written.status.ok() || !closed) {
        std::printf("writing the trace to %s failed\n", path);
        return false;
    }
    std::printf("  frame %u traced: %llu spans (%llu dropped), %llu bytes of Chrome JSON in %s "
                "(open in https://ui.perfetto.dev)\n",
                frame, static_cast<unsigned long long>(written.events),
                static_cast<unsigned long long>(trace.dropped()), static_cast<unsigned long long>(written.bytes), path);
    return true;
}

// ---------------------------------------------------------------------------
// Pictures (--png).

/// Colour of a particle with `count` neighbours: a blue-green-yellow ramp
/// (viridis-like) from 0 to twice the scene's mean, yellow beyond.
void neighbour_colour(uint32_t count, double mean, uint8_t rgb[3]) {
    static const uint8_t ramp[9][3] = {{68, 1, 84},    {71, 44, 122}, {59, 81, 139},  {44, 113, 142}, {33, 144, 141},
                                       {39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37}};
    const double t = std::min(1.0, static_cast<double>(count) / (2.0 * mean)) * 8.0;
    const auto lo = static_cast<uint32_t>(std::min(7.0, std::floor(t)));
    const double w = t - lo;
    for (uint32_t c = 0; c < 3; ++c)
        rgb[c] = static_cast<uint8_t>(std::lround((1.0 - w) * ramp[lo][c] + w * ramp[lo + 1][c]));
}

/// Neighbours of every particle: how many pairs name it.
std::vector<uint32_t> neighbour_counts(uint32_t count, const Pair* pairs, uint64_t pair_count) {
    std::vector<uint32_t> counts(count, 0u);
    for (uint64_t k = 0; k < pair_count; ++k) {
        ++counts[pairs[k].a];
        ++counts[pairs[k].b];
    }
    return counts;
}

/// The particles as discs (diameter r / 2, at least a pixel) in a size x size
/// picture of the unit square, y up; 3D seen along -z: the particles are drawn
/// by ascending z, so nearer (larger z) ones cover farther ones.
std::vector<uint8_t> draw_particles(const Simulation& sim, const std::vector<uint32_t>& counts, double mean,
                                    uint32_t size) {
    std::vector<uint8_t> rgb(size_t{3} * size * size, 12);
    std::vector<uint32_t> order(sim.count());
    for (uint32_t i = 0; i < sim.count(); ++i)
        order[i] = i;
    if (sim.dimensions() == 3) {
        const float* z = sim.axis(2);
        std::stable_sort(order.begin(), order.end(), [z](uint32_t a, uint32_t b) { return z[a] < z[b]; });
    }
    const double scale = size;
    const double radius = std::max(0.25 * static_cast<double>(sim.r()) * scale, 0.75);
    for (uint32_t i : order) {
        const double cx = static_cast<double>(sim.axis(0)[i]) * scale;
        const double cy = (1.0 - static_cast<double>(sim.axis(1)[i])) * scale;
        uint8_t colour[3];
        neighbour_colour(counts[i], mean, colour);
        hashgrid_support::fill_disc(rgb, size, cx, cy, radius, colour);
    }
    return rgb;
}

std::vector<Pair> brute_force_pairs(const Simulation& sim);

/// Writes the picture of the current frame (the grid's pairs of these
/// positions); with few particles, checks it first (see the top of the file).
bool write_picture(const Simulation& sim, double mean, const Options& options, uint32_t frame, bool& checked) {
    const std::vector<uint32_t> counts = neighbour_counts(sim.count(), sim.pairs(), sim.pair_count());
    const std::vector<uint8_t> rgb = draw_particles(sim, counts, mean, options.png_size);
    char name[32];
    std::snprintf(name, sizeof(name), "/%ud_%04u.png", sim.dimensions(), frame);
    const std::string path = options.png_dir + name;
    if (sim.count() <= kPngCheckParticles) {
        const std::vector<Pair> expected = brute_force_pairs(sim);
        const std::vector<uint32_t> oracle = neighbour_counts(sim.count(), expected.data(), expected.size());
        const bool counts_same = counts == oracle;
        const bool picture_same = draw_particles(sim, oracle, mean, options.png_size) == rgb;
        std::set<uint32_t> colours;
        for (size_t p = 0; p < rgb.size(); p += 3)
            colours.insert(uint32_t{rgb[p]} << 16 | uint32_t{rgb[p + 1]} << 8 | rgb[p + 2]);
        const bool pass = counts_same && picture_same && colours.size() >= 3;
        std::printf("  picture %s: neighbour counts %s brute force, picture %s the brute-force one, %zu colours: %s\n",
                    path.c_str(), counts_same ? "equal to" : "DIFFER from", picture_same ? "equal to" : "DIFFERS from",
                    colours.size(), pass ? "PASS" : "FAIL");
        if (!pass) return false;
        checked = true;
    }
    if (!hashgrid_support::write_png_rgb(path.c_str(), rgb.data(), options.png_size, options.png_size)) {
        std::printf("cannot write %s\n", path.c_str());
        return false;
    }
    return true;
}

/// One line of the rebuild's phases, in ms; the unbounded cell step's
/// sub-phases when it ran.
void print_rebuild_phases(const hashgrid::RebuildTimings& t) {
    const auto ms = [](uint64_t ns) { return static_cast<double>(ns) * 1e-6; };
    std::printf("              rebuild phases ms: keys %.3f  table %.3f", ms(t.keys), ms(t.table));
    if (t.table_clear + t.table_insert + t.table_sort + t.table_lookup > 0)
        std::printf(" (clear %.3f insert %.3f sort %.3f lookup %.3f)", ms(t.table_clear), ms(t.table_insert),
                    ms(t.table_sort), ms(t.table_lookup));
    if (t.dense_cells + t.dense_compact > 0)
        std::printf(" (dense %.3f compact %.3f)", ms(t.dense_cells), ms(t.dense_compact));
    std::printf("  scan %.3f  scatter %.3f  finalize %.3f\n", ms(t.scan), ms(t.scatter), ms(t.finalize));
}

/// The demo proper: one scene for `frames` frames, a line every 10 frames and a summary.
bool run_scene(uint32_t dimensions, const Options& options, const ThreadBackend& backend) {
    Simulation sim(dimensions, options.particles, 0x5eed0000u + dimensions);
    const bool unbounded = options.unbounded != 0;
    if (!sim.init(unbounded ? hashgrid::World::unbounded : hashgrid::World::bounded)) return false;
    std::printf("\n%uD: %u particles in the unit %s (%s world), r = %.6g (cell = r, ~%.0f neighbours), grid memory "
                "%.1f MiB\n",
                dimensions, sim.count(), dimensions == 2 ? "square" : "cube", unbounded ? "unbounded" : "bounded",
                static_cast<double>(sim.r()), dimensions == 2 ? kNeighbours2 : kNeighbours3,
                static_cast<double>(sim.memory_bytes()) / (1024.0 * 1024.0));
    // --trace: the last 3D frame's rebuild and find_pairs go into a trace
    // ring, allocated here, before the frames (nothing is allocated per frame).
    hashgrid::Trace trace;
    const bool traced = options.trace_file != nullptr && dimensions == 3;
    if (traced) {
        const Status status = trace.init_allocate(kTraceEvents);
        if (!status.ok()) {
            std::printf("trace init failed: %s\n", code_name(status.code));
            return false;
        }
    }
    std::vector<double> rebuild_ms, pairs_ms, pair_counts;
    const double mean_neighbours = dimensions == 2 ? kNeighbours2 : kNeighbours3;
    uint32_t pictures = 0;
    bool pictures_checked = false;
    for (uint32_t frame = 0; frame < options.frames; ++frame) {
        Simulation::FrameTimes times;
        const bool trace_frame = traced && frame + 1 == options.frames;
        if (trace_frame) {
            sim.set_trace(&trace);
            trace.begin_frame();
        }
        if (!sim.pair_step(backend, times)) return false;
        if (trace_frame) {
            trace.end_frame();
            sim.set_trace(nullptr);
            if (!write_trace(trace, options.trace_file, frame)) return false;
        }
        if (!options.png_dir.empty() && frame % options.png_every == 0) {
            if (!write_picture(sim, mean_neighbours, options, frame, pictures_checked)) return false;
            ++pictures;
        }
        if (!sim.physics_step(times)) return false;
        rebuild_ms.push_back(times.rebuild_ms);
        pairs_ms.push_back(times.pairs_ms);
        pair_counts.push_back(static_cast<double>(times.pair_count));
        if (frame % 10 == 0 || frame + 1 == options.frames) {
            std::printf("  frame %4u  rebuild %7.3f ms  pairs %7.3f ms  (physics %6.3f ms)  %10llu pairs\n", frame,
                        times.rebuild_ms, times.pairs_ms, times.physics_ms,
                        static_cast<unsigned long long>(times.pair_count));
            print_rebuild_phases(times.rebuild_phases);
        }
    }
    const Spread rebuild = spread(rebuild_ms);
    const Spread pairs = spread(pairs_ms);
    const double pairs_median = median(pair_counts);
    std::printf("  %uD summary, %u frames: rebuild median %.3f ms [%.3f..%.3f], pairs median %.3f ms [%.3f..%.3f], "
                "median %.0f pairs (%.2f neighbours per particle)\n",
                dimensions, options.frames, rebuild.median, rebuild.min, rebuild.max, pairs.median, pairs.min,
                pairs.max, pairs_median, 2.0 * pairs_median / static_cast<double>(sim.count()));
    if (pictures > 0) {
        std::printf("  %u %uD pictures (%u x %u) in %s%s\n", pictures, dimensions, options.png_size, options.png_size,
                    options.png_dir.c_str(), pictures_checked ? ", checked against brute force" : "");
    }
    return true;
}

/// Every pair i < j with the documented float test, in (i, j) order.
std::vector<Pair> brute_force_pairs(const Simulation& sim) {
    std::vector<Pair> pairs;
    const uint32_t n = sim.count();
    const float r2 = sim.r() * sim.r();
    const float* x = sim.axis(0);
    const float* y = sim.axis(1);
    const float* z = sim.dimensions() == 3 ? sim.axis(2) : nullptr;
    for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t j = i + 1; j < n; ++j) {
            const float dx = x[j] - x[i];
            const float dy = y[j] - y[i];
            float d2 = dx * dx + dy * dy;
            if (z != nullptr) {
                const float dz = z[j] - z[i];
                d2 = d2 + dz * dz;
            }
            if (d2 < r2) pairs.push_back(Pair{i, j});
        }
    }
    return pairs;
}

bool same_pairs(const Pair* a, const Pair* b, uint64_t count) {
    for (uint64_t i = 0; i < count; ++i) {
        if (a[i].a != b[i].a || a[i].b != b[i].b) return false;
    }
    return true;
}

/// Simulates a small scene a few frames, then compares the grid's pairs for one
/// frame with brute force, and the pair arrays of a bounded world, an unbounded
/// world and the serial backend with each other (the documented order is the
/// same for all of them).
bool check_against_brute_force(uint32_t dimensions, uint32_t count, const ThreadBackend& backend) {
    Simulation sim(dimensions, count, 0xc4ec0000u + dimensions);
    if (!sim.init(hashgrid::World::bounded)) return false;
    Simulation::FrameTimes times;
    for (uint32_t frame = 0; frame < kCheckFrames; ++frame) {
        if (!sim.run_frame(backend, times)) return false;
    }
    if (!sim.pair_step(backend, times)) return false;
    const std::vector<Pair> bounded(sim.pairs(), sim.pairs() + sim.pair_count());

    if (!sim.pair_step(hashgrid::serial_backend(), times)) return false;
    const bool serial_same =
        sim.pair_count() == bounded.size() && same_pairs(sim.pairs(), bounded.data(), bounded.size());

    if (!sim.init(hashgrid::World::unbounded) || !sim.pair_step(backend, times)) return false;
    const bool unbounded_same =
        sim.pair_count() == bounded.size() && same_pairs(sim.pairs(), bounded.data(), bounded.size());

    const std::vector<Pair> expected = brute_force_pairs(sim);
    std::vector<Pair> sorted = bounded;
    bool ordered = true;
    for (const Pair& p : sorted)
        ordered = ordered && p.a < p.b;
    std::sort(sorted.begin(), sorted.end(), [](Pair l, Pair r) { return l.a != r.a ? l.a < r.a : l.b < r.b; });
    const bool set_same = sorted.size() == expected.size() && same_pairs(sorted.data(), expected.data(), sorted.size());

    const bool pass = ordered && set_same && serial_same && unbounded_same;
    std::printf("  %uD, %u particles after %u frames: brute force %zu pairs, grid %zu pairs: %s "
                "(pair set %s, a < b %s, unbounded == bounded %s, serial == threaded %s)\n",
                dimensions, count, kCheckFrames, expected.size(), bounded.size(), pass ? "PASS" : "FAIL",
                set_same ? "equal" : "DIFFERS", ordered ? "yes" : "NO", unbounded_same ? "yes" : "NO",
                serial_same ? "yes" : "NO");
    return pass;
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    if (!parse_options(argc, argv, options)) return 2;

#if defined(HASHGRID_HAS_TBB)
    hashgrid::platform::TbbBackend tbb(options.threads, options.spin_us);
    const ThreadBackend backend = tbb.backend();
    std::printf("Hashgrid particles demo: oneTBB backend, %u threads, %u frames per scene\n", tbb.threads(),
                options.frames);
#else
    const ThreadBackend backend = hashgrid::serial_backend();
    std::printf("Hashgrid particles demo: serial backend (built without oneTBB), %u frames per scene\n",
                options.frames);
#endif
    if (!options.png_dir.empty() && !hashgrid_support::create_picture_directory(options.png_dir)) return 1;
    std::printf("Each frame: grid.rebuild (counting sort into cells) + grid.find_pairs (all pairs closer than r);\n"
                "the pairs push particles apart, and particles are kept in the grid's sorted order.\n");

    for (uint32_t dimensions : {2u, 3u}) {
        if (!run_scene(dimensions, options, backend)) {
            std::printf("FAIL\n");
            return 1;
        }
    }

    const uint32_t check_count = std::min(options.particles, kCheckParticles);
    std::printf("\nCheck against brute force (d2 = (dx*dx + dy*dy) + dz*dz < r*r in float):\n");
    bool pass = true;
    for (uint32_t dimensions : {2u, 3u})
        pass = check_against_brute_force(dimensions, check_count, backend) && pass;
    std::printf("%s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}

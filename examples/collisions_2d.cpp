// SPDX-License-Identifier: MIT
// collisions_2d: the classic "which particles are within d of each other?"
// workload in 2D, with collision response.
//
// Discs of diameter d move in the unit square. Every frame the grid is
// rebuilt and find_pairs() returns every pair closer than d (the discs that
// overlap); each pair is pushed apart and, when the two approach each other,
// exchanges an elastic impulse along the line between the centres. Gravity
// pulls them down; walls reflect. Every `--check-every` frames (and on the first and last frame) the
// pairs are compared with an O(N^2) loop over all particles using the
// documented distance test ((dx*dx + dy*dy) < d*d in float, grid.h); the
// program prints PASS or FAIL and returns nonzero on FAIL. Frame times are
// printed for information only.
//
// With --png DIR, frame_NNNN.png pictures of the particles, coloured by how
// many others each one touches (blue: none ... red: five or more), are
// written to DIR (created if needed) every --png-every frames, with the
// examples' small PNG writer (support/.../png_writer.h).
//
//   collisions_2d [--frames N] [--particles N] [--threads N] [--check-every N]
//                 [--png DIR] [--png-every N] [--png-size PIXELS]

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/example_backend.h"
#include "hashgrid_support/png_writer.h"
#include "hashgrid_support/random.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace {

using hashgrid::Pair;
using hashgrid::PairResult;
using hashgrid::Status;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::now_ns;

/// Fraction of the square covered by discs: dense enough for many contacts.
constexpr double kAreaFraction = 0.35;
/// Fastest initial speed per axis, in diameters per frame.
constexpr float kMaxSpeed = 0.2f;
/// Coefficient of restitution of the impulses (1: elastic).
constexpr float kRestitution = 0.9f;
/// Downward acceleration, in diameters per frame per frame: the discs settle
/// into a pile at the bottom, where most of them touch.
constexpr float kGravity = 0.001f;

struct Options {
    uint32_t frames = 200;
    uint32_t particles = 20000;
    uint32_t threads = 0;      ///< 0: the backend's default.
    uint32_t check_every = 50; ///< Brute-force check of every N-th frame (first and last always).
    std::string png_dir;       ///< Empty: no pictures.
    uint32_t png_every = 1;
    uint32_t png_size = 512;
};

bool parse_options(int argc, char** argv, Options& o) {
    bool ok = true;
    for (int i = 1; ok && i < argc; i += 2) {
        const char* name = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        ok = value != nullptr;
        if (!ok) break;
        if (std::strcmp(name, "--png") == 0) {
            o.png_dir = value;
            continue;
        }
        uint32_t* target = std::strcmp(name, "--frames") == 0        ? &o.frames
                           : std::strcmp(name, "--particles") == 0   ? &o.particles
                           : std::strcmp(name, "--threads") == 0     ? &o.threads
                           : std::strcmp(name, "--check-every") == 0 ? &o.check_every
                           : std::strcmp(name, "--png-every") == 0   ? &o.png_every
                           : std::strcmp(name, "--png-size") == 0    ? &o.png_size
                                                                     : nullptr;
        ok = target != nullptr && hashgrid_support::parse_u32(value, *target);
    }
    ok = ok && o.frames >= 1 && o.particles >= 2 && o.check_every >= 1 && o.png_every >= 1 && o.png_size >= 16 &&
         o.png_size <= 8192;
    if (!ok)
        std::fprintf(stderr,
                     "usage: %s [--frames N>=1] [--particles N>=2] [--threads N] [--check-every N>=1] [--png DIR] "
                     "[--png-every N>=1] [--png-size 16..8192]\n",
                     argv[0]);
    return ok;
}

/// Every pair i < j with the grid's documented float test, sorted.
std::vector<Pair> brute_force_pairs(const std::vector<float>& x, const std::vector<float>& y, float d) {
    std::vector<Pair> pairs;
    const float d2 = d * d;
    const uint32_t n = static_cast<uint32_t>(x.size());
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = i + 1; j < n; ++j) {
            const float dx = x[j] - x[i];
            const float dy = y[j] - y[i];
            if (dx * dx + dy * dy < d2) pairs.push_back(Pair{i, j});
        }
    return pairs;
}

bool pair_less(Pair p, Pair q) { return p.a != q.a ? p.a < q.a : p.b < q.b; }

/// Colour of a disc touching `count` others.
void neighbour_colour(uint32_t count, uint8_t rgb[3]) {
    static const uint8_t palette[6][3] = {{40, 60, 170},  {40, 150, 230}, {60, 190, 110},
                                          {210, 200, 60}, {240, 140, 40}, {220, 40, 40}};
    const uint8_t* c = palette[count < 5 ? count : 5];
    std::memcpy(rgb, c, 3);
}

/// Draws every disc (diameter d in the unit square) into a size x size picture, y up.
void draw(const std::vector<float>& x, const std::vector<float>& y, const std::vector<uint32_t>& counts, float d,
          uint32_t size, std::vector<uint8_t>& rgb) {
    rgb.assign(size_t{3} * size * size, 16);
    const double scale = size;
    const double radius = std::max(0.5 * d * scale, 0.75); // at least about one pixel
    for (size_t i = 0; i < x.size(); ++i) {
        const double cx = x[i] * scale;
        const double cy = (1.0 - static_cast<double>(y[i])) * scale;
        uint8_t colour[3];
        neighbour_colour(counts[i], colour);
        hashgrid_support::fill_disc(rgb, size, cx, cy, radius, colour);
    }
}

/// Pushes each overlapping pair apart and applies the impulse of a collision.
void respond(const Pair* pairs, size_t count, float d, std::vector<float>& x, std::vector<float>& y,
             std::vector<float>& vx, std::vector<float>& vy) {
    for (size_t k = 0; k < count; ++k) {
        const uint32_t a = pairs[k].a;
        const uint32_t b = pairs[k].b;
        float nx = x[b] - x[a];
        float ny = y[b] - y[a];
        const float dist = std::sqrt(nx * nx + ny * ny);
        if (dist > 0.0f) {
            nx /= dist;
            ny /= dist;
        } else { // the same position: separate along x, deterministically
            nx = 1.0f;
            ny = 0.0f;
        }
        // Each moves half of the overlap (a little less, so stacks settle instead of jittering).
        const float push = 0.4f * (d - dist);
        x[a] -= push * nx;
        y[a] -= push * ny;
        x[b] += push * nx;
        y[b] += push * ny;
        const float approach = (vx[b] - vx[a]) * nx + (vy[b] - vy[a]) * ny;
        if (approach < 0.0f) { // closing in: equal masses exchange the normal component
            const float j = -0.5f * (1.0f + kRestitution) * approach;
            vx[a] -= j * nx;
            vy[a] -= j * ny;
            vx[b] += j * nx;
            vy[b] += j * ny;
        }
    }
}

/// Moves by one frame's velocity; walls at 0 and 1 reflect.
void integrate(std::vector<float>& p, std::vector<float>& v) {
    for (size_t i = 0; i < p.size(); ++i) {
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

} // namespace

int main(int argc, char** argv) {
    Options options;
    if (!parse_options(argc, argv, options)) return 2;

    hashgrid_support::ExampleBackend threads(options.threads);
    const char* backend_name = hashgrid_support::kExampleBackendName;
    const hashgrid::ThreadBackend backend = threads.backend();

    const uint32_t n = options.particles;
    const double pi = 3.14159265358979323846;
    const float d = static_cast<float>(std::sqrt(4.0 * kAreaFraction / (pi * n)));
    std::vector<float> x(n), y(n), vx(n), vy(n);
    hashgrid_support::SplitMix64 rng(0xc0111de5);
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = rng.unit();
        y[i] = rng.unit();
        vx[i] = rng.uniform(-kMaxSpeed * d, kMaxSpeed * d);
        vy[i] = rng.uniform(-kMaxSpeed * d, kMaxSpeed * d);
    }

    // A bounded world over the unit square, one cell per diameter; the
    // walls keep every particle inside, so reject mode never triggers.
    hashgrid::GridConfig config;
    config.dimensions = 2;
    config.world = hashgrid::World::bounded;
    config.cell_size = d;
    config.interaction_distance = d;
    const uint32_t cells = static_cast<uint32_t>(std::floor(1.0 / static_cast<double>(d))) + 1;
    config.cell_counts[0] = cells;
    config.cell_counts[1] = cells;
    config.max_particles = n;
    config.max_pairs = 8ull * n; // about 3 contacts per disc in a dense packing; pair_capacity would say so
    hashgrid::Grid grid;
    Status s = grid.init_allocate(config);
    if (!s.ok()) {
        std::printf("init failed: %s (%s)\nFAIL\n", hashgrid::to_string(s.code), s.message);
        return 1;
    }
    std::vector<Pair> pairs(static_cast<size_t>(config.max_pairs));

    if (!options.png_dir.empty() && !hashgrid_support::create_picture_directory(options.png_dir)) return 1;
    std::printf("collisions_2d: %u discs of diameter %.5g in the unit square (%.0f%% covered), %s backend with %u "
                "threads\n",
                n, static_cast<double>(d), 100.0 * kAreaFraction, backend_name, threads.threads());
    std::printf("frame | rebuild ms | pairs ms | response ms | pairs | touching | check\n");

    std::vector<uint32_t> counts(n);
    std::vector<uint8_t> image;
    uint32_t checked = 0, mismatches = 0, pictures = 0;
    for (uint32_t frame = 0; frame < options.frames; ++frame) {
        uint64_t start = now_ns();
        s = grid.rebuild({x.data(), y.data(), nullptr, nullptr, n}, backend);
        const double rebuild_ms = elapsed_ms(start);
        start = now_ns();
        PairResult found = grid.find_pairs(pairs.data(), pairs.size(), backend);
        const double pairs_ms = elapsed_ms(start);
        if (!s.ok() || !found.status.ok()) {
            const Status bad = s.ok() ? found.status : s;
            std::printf("frame %u failed: %s (%s), needed %llu\nFAIL\n", frame, hashgrid::to_string(bad.code),
                        bad.message, static_cast<unsigned long long>(bad.needed));
            return 1;
        }

        // The check: the same pairs as every i < j tested by brute force.
        const char* verdict = "-";
        if (frame % options.check_every == 0 || frame + 1 == options.frames) {
            std::vector<Pair> got(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(found.written));
            std::sort(got.begin(), got.end(), pair_less);
            const std::vector<Pair> expected = brute_force_pairs(x, y, d);
            const bool same =
                got.size() == expected.size() && std::equal(got.begin(), got.end(), expected.begin(),
                                                            [](Pair p, Pair q) { return p.a == q.a && p.b == q.b; });
            ++checked;
            mismatches += same ? 0 : 1;
            verdict = same ? "same as brute force" : "DIFFERS from brute force";
        }

        // Neighbour counts (for the colours and the statistics), then the response.
        std::fill(counts.begin(), counts.end(), 0u);
        const size_t found_count = static_cast<size_t>(found.written); // at most pairs.size()
        for (size_t k = 0; k < found_count; ++k) {
            ++counts[pairs[k].a];
            ++counts[pairs[k].b];
        }
        const uint32_t touching =
            static_cast<uint32_t>(std::count_if(counts.begin(), counts.end(), [](uint32_t c) { return c != 0; }));
        if (!options.png_dir.empty() && frame % options.png_every == 0) {
            draw(x, y, counts, d, options.png_size, image);
            char name[32];
            std::snprintf(name, sizeof(name), "/frame_%04u.png", frame);
            const std::string path = options.png_dir + name;
            if (!hashgrid_support::write_png_rgb(path.c_str(), image.data(), options.png_size, options.png_size)) {
                std::printf("cannot write %s\nFAIL\n", path.c_str());
                return 1;
            }
            ++pictures;
        }
        start = now_ns();
        respond(pairs.data(), found_count, d, x, y, vx, vy);
        for (float& v : vy)
            v -= kGravity * d;
        integrate(x, vx);
        integrate(y, vy);
        const double response_ms = elapsed_ms(start);
        if (frame % 10 == 0 || frame + 1 == options.frames || verdict[0] != '-')
            std::printf("%5u | %10.3f | %8.3f | %11.3f | %6llu | %8u | %s\n", frame, rebuild_ms, pairs_ms, response_ms,
                        static_cast<unsigned long long>(found.total), touching, verdict);
    }
    if (pictures > 0) std::printf("%u pictures in %s\n", pictures, options.png_dir.c_str());
    const bool pass = mismatches == 0 && checked > 0;
    std::printf("%s: %u of %u checked frames match brute force\n", pass ? "PASS" : "FAIL", checked - mismatches,
                checked);
    return pass ? 0 : 1;
}

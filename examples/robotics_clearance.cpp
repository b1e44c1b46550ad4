// SPDX-License-Identifier: MIT
// robotics_clearance: a lidar-like point cloud of a room against the links
// of a moving robot, every frame.
//
// The cloud: points on the surfaces of a room (floor, ceiling, walls, a
// table, a shelf, a pillar) with a few millimetres of sensor noise, a fresh
// scan each frame, so the particle grid is rebuilt each frame. The robot: a
// mobile base with wheels, a torso, a head and two six-link arms, 21
// axis-aligned link boxes that move a little every frame.
//
// Per frame and link:
//   - clearance violations: every cloud point whose exact distance to the
//     link's box is <= the safety margin. The particle grid answers closed
//     box queries, so each link's box grown by the margin (rounded outward,
//     plus a relative slack of 1e-6 that covers the rounding of the
//     distance) goes to query_box_batch(), and the exact point-to-box test
//     keeps the points really within the margin;
//   - the nearest cloud point to the link's box (to the box, not its
//     centre): a growing search. Box queries grown by g, 2g, 4g, ... (same
//     outward rounding) visit candidates; once the best candidate is at
//     distance <= g it is the nearest overall, because every point outside
//     the grown box is farther than g on one axis alone. A link with a
//     violation already has its answer from the margin query (its nearest
//     point is within the margin); the others start at g = twice the margin
//     or a little more than last frame's distance (links move little), so
//     one query is usually enough.
//
// The library has no "particles within distance r of a box" or "nearest
// particle to a box" query (particle queries take points, spheres, boxes and
// frustums), hence the grown boxes and the exact test here.
// Distances are computed in double from the float coordinates: per axis
// max(lo - p, p - hi, 0), then the sum of squares. Ties go to the lower
// point index. The frame time is printed for information only.
//
// Every `--check-every` frames (and the first and last) the answers are
// compared with brute force over all points and links (the same distance
// definition); the program prints PASS or FAIL and returns nonzero on FAIL.
//
//   robotics_clearance [--points N] [--frames N] [--check-every N] [--threads N]

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/query_types.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/example_backend.h"
#include "hashgrid_support/random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

namespace {

using hashgrid::QueryBox;
using hashgrid::QueryResult;
using hashgrid::Status;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::now_ns;

constexpr double kMargin = 0.10;      ///< Safety margin, metres.
constexpr float kNoise = 0.004f;      ///< Sensor noise (standard deviation), metres.
constexpr double kSlack = 1.0 + 1e-6; ///< Relative growth that covers the rounding of distances.
constexpr float kRoom[3] = {8.0f, 6.0f, 3.0f};
constexpr uint32_t kNoPoint = 0xffffffffu;

struct Options {
    uint32_t points = 100000;
    uint32_t frames = 30;
    uint32_t check_every = 10;
    uint32_t threads = 0;
};

bool parse_options(int argc, char** argv, Options& o) {
    if (!hashgrid_support::parse_count_options(argc, argv,
                                               {{"--points", &o.points},
                                                {"--frames", &o.frames},
                                                {"--check-every", &o.check_every},
                                                {"--threads", &o.threads}}))
        return false;
    if (o.points < 1 || o.frames < 1 || o.check_every < 1) {
        std::fprintf(stderr, "need --points, --frames and --check-every >= 1\n");
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------
// The room: axis-aligned rectangles that the scan samples.

/// The face of a box perpendicular to `axis` at `at`, spanning [lo, hi] on the other two axes.
struct Face {
    uint32_t axis;
    float at;
    float lo[2];
    float hi[2];
    [[nodiscard]] float area() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]); }
};

/// The five visible faces (not the bottom) of a piece of furniture.
void add_furniture(std::vector<Face>& faces, const float lo[3], const float hi[3]) {
    faces.push_back({2, hi[2], {lo[0], lo[1]}, {hi[0], hi[1]}}); // top
    for (uint32_t axis = 0; axis < 2; ++axis) {
        const uint32_t other = 1 - axis;
        for (const float at : {lo[axis], hi[axis]}) {
            // The two spanned axes in ascending order: (other, z).
            faces.push_back({axis, at, {lo[other], lo[2]}, {hi[other], hi[2]}});
        }
    }
}

std::vector<Face> room_faces() {
    std::vector<Face> faces;
    faces.push_back({2, 0.0f, {0.0f, 0.0f}, {kRoom[0], kRoom[1]}});     // floor
    faces.push_back({2, kRoom[2], {0.0f, 0.0f}, {kRoom[0], kRoom[1]}}); // ceiling
    faces.push_back({0, 0.0f, {0.0f, 0.0f}, {kRoom[1], kRoom[2]}});     // walls x = 0, x = 8
    faces.push_back({0, kRoom[0], {0.0f, 0.0f}, {kRoom[1], kRoom[2]}});
    faces.push_back({1, 0.0f, {0.0f, 0.0f}, {kRoom[0], kRoom[2]}}); // walls y = 0, y = 6
    faces.push_back({1, kRoom[1], {0.0f, 0.0f}, {kRoom[0], kRoom[2]}});
    const float table_lo[3] = {3.3f, 2.5f, 0.0f}, table_hi[3] = {4.7f, 3.5f, 0.75f}; // inside the robot's loop
    const float shelf_lo[3] = {6.4f, 0.1f, 0.0f}, shelf_hi[3] = {7.8f, 0.5f, 1.8f};
    const float pillar_lo[3] = {6.9f, 4.6f, 0.0f}, pillar_hi[3] = {7.3f, 5.0f, 3.0f};
    add_furniture(faces, table_lo, table_hi);
    add_furniture(faces, shelf_lo, shelf_hi);
    add_furniture(faces, pillar_lo, pillar_hi);
    return faces;
}

/// The noise-free surface points, spread over the faces by area.
void sample_room(uint32_t n, std::vector<float> (&base)[3]) {
    const std::vector<Face> faces = room_faces();
    double total = 0.0;
    for (const Face& f : faces)
        total += f.area();
    hashgrid_support::SplitMix64 rng(0x1da5);
    for (auto& axis : base)
        axis.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        // Pick a face by area.
        double pick = rng.unit_double() * total;
        size_t k = 0;
        while (k + 1 < faces.size() && pick >= faces[k].area()) {
            pick -= faces[k].area();
            ++k;
        }
        const Face& f = faces[k];
        float p[3];
        p[f.axis] = f.at;
        const uint32_t u = f.axis == 0 ? 1 : 0;
        const uint32_t v = f.axis == 2 ? 1 : 2;
        p[u] = f.lo[0] + (f.hi[0] - f.lo[0]) * rng.unit();
        p[v] = f.lo[1] + (f.hi[1] - f.lo[1]) * rng.unit();
        for (uint32_t a = 0; a < 3; ++a)
            base[a][i] = p[a];
    }
}

// ---------------------------------------------------------------------------
// The robot.

constexpr uint32_t kLinks = 21;
const char* const kLinkNames[kLinks] = {
    "base",    "wheel_fl", "wheel_fr", "wheel_rl", "wheel_rr", "torso",   "head",
    "l_arm_1", "l_arm_2",  "l_arm_3",  "l_arm_4",  "l_arm_5",  "l_arm_6", "l_grip",
    "r_arm_1", "r_arm_2",  "r_arm_3",  "r_arm_4",  "r_arm_5",  "r_arm_6", "r_grip",
};

struct Box {
    float lo[3];
    float hi[3];
};

Box centred(float cx, float cy, float cz, float hx, float hy, float hz) {
    return Box{{cx - hx, cy - hy, cz - hz}, {cx + hx, cy + hy, cz + hz}};
}

/// The link boxes at time `frame`: the base drives around an ellipse, the
/// arms swing (each link the box around its segment, 4 cm thick).
void robot_links(uint32_t frame, Box (&links)[kLinks]) {
    const double time = 0.05 * frame;
    const float bx = static_cast<float>(4.0 + 2.4 * std::cos(0.35 * time));
    const float by = static_cast<float>(3.0 + 1.5 * std::sin(0.35 * time));
    uint32_t k = 0;
    links[k++] = centred(bx, by, 0.21f, 0.30f, 0.25f, 0.14f); // base, 7 cm above the floor
    for (const float sx : {0.25f, -0.25f})
        for (const float sy : {0.22f, -0.22f})
            links[k++] = centred(bx + sx, by + sy, 0.085f, 0.075f, 0.03f, 0.075f); // wheels, 1 cm above the floor
    links[k++] = centred(bx, by, 0.75f, 0.15f, 0.15f, 0.40f);                      // torso
    links[k++] = centred(bx, by, 1.26f, 0.12f, 0.12f, 0.11f);                      // head
    for (int arm = 0; arm < 2; ++arm) {
        const double side = arm == 0 ? 1.0 : -1.0;
        double p[3] = {bx, by + side * 0.22, 1.05};
        double angle = -0.6; // downward-forward at the shoulder
        for (int j = 0; j < 6; ++j) {
            angle += 0.35 * std::sin(0.9 * time * (1.0 + 0.2 * j) + side + j);
            const double yaw = 0.8 * std::sin(0.3 * time + side);
            const double q[3] = {p[0] + 0.2 * std::cos(angle) * std::cos(yaw),
                                 p[1] + 0.2 * std::cos(angle) * std::sin(yaw) + side * 0.02,
                                 p[2] + 0.2 * std::sin(angle)};
            Box& b = links[k++];
            for (int a = 0; a < 3; ++a) {
                b.lo[a] = static_cast<float>(std::min(p[a], q[a]) - 0.04);
                b.hi[a] = static_cast<float>(std::max(p[a], q[a]) + 0.04);
                p[a] = q[a];
            }
        }
        links[k++] = centred(static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2]), 0.05f, 0.05f,
                             0.05f); // gripper
    }
}

// ---------------------------------------------------------------------------
// Exact distance and the grown query boxes.

/// Squared distance from a point to a closed box, in double.
double distance2(float px, float py, float pz, const Box& b) {
    const float p[3] = {px, py, pz};
    double sum = 0.0;
    for (int a = 0; a < 3; ++a) {
        const double below = static_cast<double>(b.lo[a]) - p[a];
        const double above = static_cast<double>(p[a]) - b.hi[a];
        const double d = std::max({below, above, 0.0});
        sum += d * d;
    }
    return sum;
}

float round_down(double v) {
    float f = static_cast<float>(v);
    return static_cast<double>(f) > v ? std::nextafter(f, -std::numeric_limits<float>::infinity()) : f;
}
float round_up(double v) {
    float f = static_cast<float>(v);
    return static_cast<double>(f) < v ? std::nextafter(f, std::numeric_limits<float>::infinity()) : f;
}

/// The box grown by g * kSlack on every side, rounded outward: it holds every
/// point whose distance to `b` is <= g.
QueryBox grown(const Box& b, double g) {
    QueryBox q;
    for (int a = 0; a < 3; ++a) {
        q.min[a] = round_down(static_cast<double>(b.lo[a]) - g * kSlack);
        q.max[a] = round_up(static_cast<double>(b.hi[a]) + g * kSlack);
    }
    return q;
}

struct Nearest {
    uint32_t index = kNoPoint;
    double d2 = std::numeric_limits<double>::infinity();
    void offer(uint32_t i, double d) {
        if (d < d2 || (d == d2 && i < index)) {
            index = i;
            d2 = d;
        }
    }
};

/// The growing search for one link's nearest point (see the top of the file).
struct NearestSearch {
    const float* x;
    const float* y;
    const float* z;
    Box link;
    Nearest best;
    uint32_t queries = 0;

    static bool visit(void* context, uint32_t i) {
        NearestSearch& s = *static_cast<NearestSearch*>(context);
        s.best.offer(i, distance2(s.x[i], s.y[i], s.z[i], s.link));
        return true;
    }

    /// Starts at g; false if a query failed.
    bool run(const hashgrid::Grid& grid, double g) {
        for (;;) {
            best = Nearest{};
            ++queries;
            const QueryResult r = hashgrid::query_box(grid, grown(link, g), hashgrid::QueryVisitor{&visit, this});
            if (!r.status.ok()) return false;
            // Done when the best is within g, or when the box held every point.
            if (best.d2 <= g * g || r.total == grid.particle_count()) return true;
            g *= 2.0;
        }
    }
};

struct FrameAnswer {
    std::vector<uint32_t> within[kLinks]; ///< Points within the margin, ascending.
    Nearest nearest[kLinks];
};

/// Brute force over every point and link.
FrameAnswer brute_force(const std::vector<float> (&p)[3], const Box (&links)[kLinks]) {
    FrameAnswer answer;
    const double m2 = kMargin * kMargin;
    for (uint32_t l = 0; l < kLinks; ++l)
        for (uint32_t i = 0; i < static_cast<uint32_t>(p[0].size()); ++i) {
            const double d2 = distance2(p[0][i], p[1][i], p[2][i], links[l]);
            if (d2 <= m2) answer.within[l].push_back(i);
            answer.nearest[l].offer(i, d2);
        }
    return answer;
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    if (!parse_options(argc, argv, options)) return 2;
    hashgrid_support::ExampleBackend threads(options.threads);
    const char* backend_name = hashgrid_support::kExampleBackendName;
    const hashgrid::ThreadBackend backend = threads.backend();

    const uint32_t n = options.points;
    std::vector<float> base[3], p[3];
    sample_room(n, base);
    for (auto& axis : p)
        axis.resize(n);

    // Cells of the margin's size: a grown link box covers a few cells per axis.
    hashgrid::GridConfig config;
    config.dimensions = 3;
    config.cell_size = static_cast<float>(kMargin);
    config.interaction_distance = config.cell_size; // pairs are not used here
    config.max_particles = n;
    config.max_cells = n;
    config.max_pairs = 0;
    hashgrid::Grid grid;
    Status s = grid.init_allocate(config);
    if (!s.ok()) {
        std::printf("init failed: %s (%s)\nFAIL\n", hashgrid::to_string(s.code), s.message);
        return 1;
    }

    std::printf("robotics_clearance: %u cloud points in an %.0f x %.0f x %.0f m room, %u robot links, margin %.2f m, "
                "%s backend with %u threads\n",
                n, static_cast<double>(kRoom[0]), static_cast<double>(kRoom[1]), static_cast<double>(kRoom[2]), kLinks,
                kMargin, backend_name, threads.threads());
    std::printf("frame | ms: total (rebuild margin nearest) | search queries | points within margin | links in "
                "violation | closest link | check\n");

    std::vector<uint32_t> candidates(4096);
    std::vector<uint64_t> offsets(kLinks + 1);
    FrameAnswer answer;
    // Last frame's nearest distance per link: the links move little, so the
    // growing search starts there (one query is then usually enough).
    double previous_distance[kLinks] = {};
    uint32_t checked = 0, mismatches = 0;
    for (uint32_t frame = 0; frame < options.frames; ++frame) {
        // A fresh scan: the surface points plus this frame's noise.
        hashgrid_support::SplitMix64 noise(0x5ca9ull * (frame + 1));
        for (uint32_t a = 0; a < 3; ++a)
            for (uint32_t i = 0; i < n; ++i)
                p[a][i] = noise.cluster(base[a][i], kNoise);
        Box links[kLinks];
        robot_links(frame, links);

        const uint64_t frame_start = now_ns();
        s = grid.rebuild({p[0].data(), p[1].data(), p[2].data(), nullptr, n}, backend);
        const double rebuild_ms = elapsed_ms(frame_start);
        if (!s.ok()) {
            std::printf("rebuild failed: %s (%s)\nFAIL\n", hashgrid::to_string(s.code), s.message);
            return 1;
        }

        // 1. Violations: one batch of grown boxes, then the exact test.
        uint64_t start = now_ns();
        QueryBox boxes[kLinks];
        for (uint32_t l = 0; l < kLinks; ++l)
            boxes[l] = grown(links[l], kMargin);
        QueryResult r = hashgrid::query_box_batch(grid, boxes, kLinks, offsets.data(), offsets.size(),
                                                  candidates.data(), candidates.size(), backend);
        if (r.status.code == hashgrid::StatusCode::output_too_small) { // exact size known: grow once and redo
            candidates.resize(static_cast<size_t>(r.total + r.total / 2));
            r = hashgrid::query_box_batch(grid, boxes, kLinks, offsets.data(), offsets.size(), candidates.data(),
                                          candidates.size(), backend);
        }
        if (!r.status.ok()) {
            std::printf("query_box_batch failed: %s\nFAIL\n", hashgrid::to_string(r.status.code));
            return 1;
        }
        const double m2 = kMargin * kMargin;
        uint64_t violations = 0;
        uint32_t links_violated = 0;
        for (uint32_t l = 0; l < kLinks; ++l) {
            answer.within[l].clear();
            answer.nearest[l] = Nearest{};
            for (uint64_t c = offsets[l]; c < offsets[l + 1]; ++c) {
                const uint32_t i = candidates[static_cast<size_t>(c)];
                const double d2 = distance2(p[0][i], p[1][i], p[2][i], links[l]);
                if (d2 <= m2) {
                    answer.within[l].push_back(i);
                    answer.nearest[l].offer(i, d2); // the nearest is within the margin too
                }
            }
            std::sort(answer.within[l].begin(), answer.within[l].end()); // grid order -> index order
            violations += answer.within[l].size();
            links_violated += answer.within[l].empty() ? 0 : 1;
        }
        const double margin_ms = elapsed_ms(start);

        // 2. Nearest point of the links without a violation: growing searches, in parallel.
        start = now_ns();
        NearestSearch searches[kLinks];
        bool search_ok[kLinks]; // one flag per link: chunks run concurrently
        for (uint32_t l = 0; l < kLinks; ++l)
            searches[l] = NearestSearch{p[0].data(), p[1].data(), p[2].data(), links[l], answer.nearest[l], 0};
        hashgrid::parallel_chunks(backend, kLinks, 1, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t l = begin; l < end; ++l) { // no point within the margin: start beyond it
                const double start_g = std::max(2.0 * kMargin, 1.05 * previous_distance[l] + 0.02);
                search_ok[l] = !answer.within[l].empty() || searches[l].run(grid, start_g);
            }
        });
        uint32_t queries = 0;
        for (uint32_t l = 0; l < kLinks; ++l) {
            answer.nearest[l] = searches[l].best;
            const double d = std::sqrt(searches[l].best.d2);
            previous_distance[l] = std::isfinite(d) ? d : 0.0; // no point at all: start at 2 margins again
            queries += searches[l].queries;
        }
        const double nearest_ms = elapsed_ms(start);
        const double total_ms = elapsed_ms(frame_start);
        if (!std::all_of(search_ok, search_ok + kLinks, [](bool ok) { return ok; })) {
            std::printf("a nearest search failed\nFAIL\n");
            return 1;
        }

        uint32_t closest = 0;
        for (uint32_t l = 1; l < kLinks; ++l)
            if (answer.nearest[l].d2 < answer.nearest[closest].d2) closest = l;

        const char* verdict = "-";
        if (frame % options.check_every == 0 || frame + 1 == options.frames) {
            const FrameAnswer expected = brute_force(p, links);
            bool same = true;
            for (uint32_t l = 0; l < kLinks; ++l)
                same = same && expected.within[l] == answer.within[l] &&
                       expected.nearest[l].index == answer.nearest[l].index &&
                       expected.nearest[l].d2 == answer.nearest[l].d2;
            ++checked;
            mismatches += same ? 0 : 1;
            verdict = same ? "same as brute force" : "DIFFERS from brute force";
        }
        std::printf("%5u | %6.2f (%5.2f %5.2f %5.2f) | %3u | %6llu | %2u | %-8s %.3f m | %s\n", frame, total_ms,
                    rebuild_ms, margin_ms, nearest_ms, queries, static_cast<unsigned long long>(violations),
                    links_violated, kLinkNames[closest], std::sqrt(answer.nearest[closest].d2), verdict);
    }
    const bool pass = mismatches == 0 && checked > 0;
    std::printf("%s: %u of %u checked frames match brute force (points within the margin and nearest point, every "
                "link)\n",
                pass ? "PASS" : "FAIL", checked - mismatches, checked);
    return pass ? 0 : 1;
}

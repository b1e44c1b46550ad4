// SPDX-License-Identifier: MIT
// line_of_sight: a tile world, the tiles each segment touches, and whether
// a wall blocks the line of sight.
//
// The world is a grid of W x H square tiles; tile (i, j) is the closed box
// [i, i + 1] x [j, j + 1] and is box object j * W + i of a 2D BoxGrid (cell
// size 1), in layer kFloor or kWall. For a segment from a to b:
//   - every tile it touches: query_ray() with segment_ray(a, b) and every
//     layer, in order along the segment (ties: lower tile index first);
//   - line of sight: query_ray_first() with the wall layer; blocked when it
//     hits, and the hit is the first wall along the segment.
// All segments are answered at once by the batch forms (query_ray_batch,
// query_ray_first_batch) on a thread backend.
//
// "Touches" means the closed segment and the closed tile share at least one
// point. So a segment through a tile corner touches all four tiles that meet
// there, a segment along a tile edge touches the tiles on both sides, and a
// segment that only grazes a wall's corner is blocked (a game that wants to
// see past corners would shrink its wall boxes a little).
//
// Oracle: every tile against every segment, in exact integer arithmetic.
// Endpoints are multiples of 1/4 (exact in float, and their differences too),
// so after scaling by 4 everything is a small integer: the segment and a tile
// share a point exactly when no separating axis exists among x, y and the
// segment's normal (the three edge directions of their Minkowski sum), and a
// touched tile's entry parameter t is an exact fraction. The test compares
// the set and order of the touched tiles, every hit's t (to 1e-6: the
// library rounds t to float), and the first wall, for every segment.
// Segments include the awkward cases on purpose: diagonals through corners,
// segments along tile edges, endpoints on corners and edges, zero-length
// segments, and random segments forced through a random tile corner.
// Prints PASS or FAIL; returns nonzero on FAIL. Times are informational.
//
//   line_of_sight [--width N] [--height N] [--segments N] [--threads N]

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
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
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using hashgrid::QueryResult;
using hashgrid::Ray;
using hashgrid::RayHit;
using hashgrid::Status;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::now_ns;

constexpr uint32_t kFloor = 1u; ///< Category of walkable tiles.
constexpr uint32_t kWall = 2u;  ///< Category of tiles that block sight.

struct Options {
    uint32_t width = 64;
    uint32_t height = 40;
    uint32_t segments = 4000; ///< Random segments, on top of the hand-picked ones.
    uint32_t threads = 0;
};

bool parse_options(int argc, char** argv, Options& o) {
    if (!hashgrid_support::parse_count_options(
            argc, argv,
            {{"--width", &o.width}, {"--height", &o.height}, {"--segments", &o.segments}, {"--threads", &o.threads}}))
        return false;
    // At least 10 x 10 for the hand-picked segments; at most 1024 so that the
    // oracle's products stay far inside int64 and endpoints stay exact.
    if (o.width < 10 || o.height < 10 || o.width > 1024 || o.height > 1024) {
        std::fprintf(stderr, "need 10 <= --width, --height <= 1024\n");
        return false;
    }
    return true;
}

/// A segment with endpoints on the quarter grid, stored as integers (units of 1/4).
struct Segment {
    int32_t a[2];
    int32_t b[2];
};

Ray ray_of(const Segment& s) {
    const float start[3] = {0.25f * static_cast<float>(s.a[0]), 0.25f * static_cast<float>(s.a[1]), 0.0f};
    const float end[3] = {0.25f * static_cast<float>(s.b[0]), 0.25f * static_cast<float>(s.b[1]), 0.0f};
    return hashgrid::segment_ray(start, end);
}

// ---------------------------------------------------------------------------
// The exact oracle (quarter units: tile (i, j) is [4i, 4i + 4] x [4j, 4j + 4]).

/// A non-negative fraction num / den with den > 0.
struct Fraction {
    int64_t num = 0;
    int64_t den = 1;
};
bool fraction_less(const Fraction& p, const Fraction& q) { return p.num * q.den < q.num * p.den; }

/// True when the closed segment and the closed tile share a point; then
/// `entry` is the smallest t in [0, 1] of a shared point (segment a + t (b - a)).
bool exact_touch(const Segment& s, int64_t tile_x, int64_t tile_y, Fraction& entry) {
    const int64_t lo[2] = {4 * tile_x, 4 * tile_y};
    const int64_t hi[2] = {lo[0] + 4, lo[1] + 4};
    const int64_t d[2] = {int64_t{s.b[0]} - s.a[0], int64_t{s.b[1]} - s.a[1]};
    for (int axis = 0; axis < 2; ++axis) { // separated along x or y
        if (std::max(s.a[axis], s.b[axis]) < lo[axis] || std::min(s.a[axis], s.b[axis]) > hi[axis]) return false;
    }
    if (d[0] != 0 || d[1] != 0) { // separated along the segment's normal n = (-dy, dx)
        bool positive = true, negative = true;
        for (int corner = 0; corner < 4; ++corner) {
            const int64_t cx = (corner & 1) != 0 ? hi[0] : lo[0];
            const int64_t cy = (corner & 2) != 0 ? hi[1] : lo[1];
            const int64_t side = -d[1] * (cx - s.a[0]) + d[0] * (cy - s.a[1]);
            positive = positive && side > 0;
            negative = negative && side < 0;
        }
        if (positive || negative) return false;
    }
    // Touching: the entry parameter is the largest slab entry (and >= 0).
    entry = Fraction{0, 1};
    for (int axis = 0; axis < 2; ++axis) {
        if (d[axis] == 0) continue;
        const Fraction t =
            d[axis] > 0 ? Fraction{lo[axis] - s.a[axis], d[axis]} : Fraction{s.a[axis] - hi[axis], -d[axis]};
        if (fraction_less(entry, t)) entry = t;
    }
    return true;
}

struct ExactHit {
    uint32_t tile;
    Fraction t;
};

/// Every touched tile in (t, index) order, by brute force over all tiles.
std::vector<ExactHit> exact_hits(const Segment& s, uint32_t width, uint32_t height) {
    std::vector<ExactHit> hits;
    for (uint32_t j = 0; j < height; ++j)
        for (uint32_t i = 0; i < width; ++i) {
            Fraction t;
            if (exact_touch(s, i, j, t)) hits.push_back({j * width + i, t});
        }
    std::stable_sort(hits.begin(), hits.end(),
                     [](const ExactHit& p, const ExactHit& q) { return fraction_less(p.t, q.t); });
    return hits; // stable: equal t keep ascending tile index
}

double value(const Fraction& f) { return static_cast<double>(f.num) / static_cast<double>(f.den); }

// ---------------------------------------------------------------------------

/// Border walls, a few straight interior walls with gaps, scattered pillars.
std::vector<uint32_t> make_world(uint32_t w, uint32_t h, hashgrid_support::SplitMix64& rng) {
    std::vector<uint32_t> layer(size_t{w} * h, kFloor);
    auto set_wall = [&](uint32_t i, uint32_t j) { layer[size_t{j} * w + i] = kWall; };
    for (uint32_t i = 0; i < w; ++i) {
        set_wall(i, 0);
        set_wall(i, h - 1);
    }
    for (uint32_t j = 0; j < h; ++j) {
        set_wall(0, j);
        set_wall(w - 1, j);
    }
    for (uint32_t i = 8; i + 2 < w; i += 12) // vertical walls with a door
        for (uint32_t j = 1; j + 1 < h; ++j)
            if (j % 9 != 4) set_wall(i, j);
    for (uint32_t j = 10; j + 2 < h; j += 10) // horizontal walls with doors
        for (uint32_t i = 1; i + 1 < w; ++i)
            if (i % 7 != 3) set_wall(i, j);
    for (uint32_t k = 0; k < w * h / 40; ++k) // pillars
        set_wall(1 + rng.below(w - 2), 1 + rng.below(h - 2));
    return layer;
}

/// The hand-picked segments (quarter units), then random ones: half with free
/// endpoints, half forced through a random tile corner.
std::vector<Segment> make_segments(uint32_t w, uint32_t h, uint32_t random_count, hashgrid_support::SplitMix64& rng) {
    auto q = [](double v) { return static_cast<int32_t>(std::lround(4.0 * v)); };
    std::vector<Segment> s = {
        {{q(0.5), q(0.5)}, {q(6.5), q(6.5)}},     // diagonal through the corners (1, 1) ... (6, 6)
        {{q(6.5), q(6.5)}, {q(0.5), q(0.5)}},     // the same, reversed: the same tiles
        {{q(0.5), q(1.5)}, {q(1.5), q(2.5)}},     // through the single corner (1, 2)
        {{q(1), q(1)}, {q(7), q(4)}},             // slope 1/2 from a corner through corners (3, 2), (5, 3) to one
        {{q(0.5), q(3)}, {q(7.5), q(3)}},         // along the horizontal tile edge y = 3
        {{q(4), q(0.5)}, {q(4), q(7.5)}},         // along the vertical tile edge x = 4
        {{q(1.5), q(1.5)}, {q(3), q(1.5)}},       // ends on the edge x = 3
        {{q(2), q(2)}, {q(2), q(2)}},             // zero length on a corner: four tiles
        {{q(2.5), q(3.25)}, {q(2.5), q(3.25)}},   // zero length inside a tile
        {{q(2.25), q(0.75)}, {q(2.75), q(7.25)}}, // steep
        {{q(3), q(5)}, {q(8), q(5)}},             // along an edge from a corner to a corner
    };
    const int32_t xmax = static_cast<int32_t>(4 * w), ymax = static_cast<int32_t>(4 * h);
    for (uint32_t k = 0; k < random_count; ++k) {
        Segment seg{};
        if (k % 2 == 0) {
            seg = {{rng.between(0, xmax), rng.between(0, ymax)}, {rng.between(0, xmax), rng.between(0, ymax)}};
        } else {
            // corner c, direction (p, r) in quarter units: a = c - m (p, r), b = c + l (p, r)
            const int32_t cx = 4 * rng.between(1, static_cast<int32_t>(w) - 1);
            const int32_t cy = 4 * rng.between(1, static_cast<int32_t>(h) - 1);
            const int32_t p = rng.between(-6, 6), r = rng.between(-6, 6);
            const int32_t m = rng.between(0, 8), l = rng.between(0, 8);
            seg = {{std::clamp(cx - m * p, 0, xmax), std::clamp(cy - m * r, 0, ymax)},
                   {std::clamp(cx + l * p, 0, xmax), std::clamp(cy + l * r, 0, ymax)}};
            // Clamping can bend the line off the corner; then it is just another random segment.
        }
        s.push_back(seg);
    }
    return s;
}

/// The tiles a segment touches on a small map: '#' wall, '.' floor, '*' touched floor, 'X' first wall hit.
void print_map(const std::vector<uint32_t>& layer, uint32_t w, uint32_t rows, const std::vector<ExactHit>& hits,
               uint32_t first_wall) {
    for (uint32_t jj = rows; jj-- > 0;) {
        std::string line;
        for (uint32_t i = 0; i < std::min(w, 24u); ++i) {
            const uint32_t tile = jj * w + i;
            const bool touched =
                std::any_of(hits.begin(), hits.end(), [&](const ExactHit& e) { return e.tile == tile; });
            char c = layer[tile] == kWall ? '#' : '.';
            if (touched) c = tile == first_wall ? 'X' : (layer[tile] == kWall ? '+' : '*');
            line.push_back(c);
        }
        std::printf("    %s\n", line.c_str());
    }
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    if (!parse_options(argc, argv, options)) return 2;
    hashgrid_support::ExampleBackend threads(options.threads);
    const hashgrid::ThreadBackend backend = threads.backend();

    const uint32_t w = options.width, h = options.height, tiles = w * h;
    hashgrid_support::SplitMix64 rng(0x10ad5);
    const std::vector<uint32_t> layer = make_world(w, h, rng);
    const std::vector<Segment> segments = make_segments(w, h, options.segments, rng);
    const uint32_t count = static_cast<uint32_t>(segments.size());

    // One box object per tile, in tile-index order: the object index is the tile index.
    std::vector<float> min_x(tiles), min_y(tiles), max_x(tiles), max_y(tiles);
    for (uint32_t t = 0; t < tiles; ++t) {
        min_x[t] = static_cast<float>(t % w);
        min_y[t] = static_cast<float>(t / w);
        max_x[t] = min_x[t] + 1.0f;
        max_y[t] = min_y[t] + 1.0f;
    }
    hashgrid::BoxGridConfig config;
    config.dimensions = 2;
    config.cell_size = 1.0f; // one tile per cell (a tile's closed box touches up to 2 x 2 cells)
    config.max_objects = tiles;
    config.max_cell_entries = 4 * tiles;
    config.max_pairs = 0; // no pair search here
    hashgrid::BoxGrid grid;
    Status s = grid.init_allocate(config);
    if (s.ok())
        s = grid.rebuild(
            {min_x.data(), min_y.data(), nullptr, max_x.data(), max_y.data(), nullptr, layer.data(), nullptr, tiles},
            backend);
    if (!s.ok()) {
        std::printf("grid failed: %s (%s)\nFAIL\n", hashgrid::to_string(s.code), s.message);
        return 1;
    }
    const hashgrid::BoxQueryGrid query = hashgrid::prepare_box_queries(grid.view(), backend);

    // Every segment at once: the tiles touched, and the first wall.
    std::vector<Ray> rays(count);
    for (uint32_t k = 0; k < count; ++k)
        rays[k] = ray_of(segments[k]);
    std::vector<uint64_t> offsets(count + size_t{1});
    // A segment crossing dx and dy tile widths touches about 2 (dx + dy) + 4
    // tiles at most (both sides of an edge it runs along, four around a
    // corner); if this is ever short, the batch says exactly how much is needed.
    uint64_t capacity = 0;
    for (const Segment& seg : segments)
        capacity += 2 * static_cast<uint64_t>(std::abs(seg.b[0] - seg.a[0]) + std::abs(seg.b[1] - seg.a[1])) / 4 + 8;
    std::vector<RayHit> hits(static_cast<size_t>(capacity));
    std::vector<RayHit> first(count);
    uint64_t start = now_ns();
    QueryResult all = hashgrid::query_ray_batch(query, rays.data(), count, hashgrid::kAllLayers, offsets.data(),
                                                offsets.size(), hits.data(), hits.size(), backend);
    if (all.status.code == hashgrid::StatusCode::output_too_small) { // the exact total is known: size and redo
        hits.resize(static_cast<size_t>(all.total));
        all = hashgrid::query_ray_batch(query, rays.data(), count, hashgrid::kAllLayers, offsets.data(), offsets.size(),
                                        hits.data(), hits.size(), backend);
    }
    const QueryResult blocked =
        hashgrid::query_ray_first_batch(query, rays.data(), count, kWall, first.data(), backend);
    const double query_ms = elapsed_ms(start);
    if (!all.status.ok() || !blocked.status.ok()) {
        std::printf("queries failed: %s / %s\nFAIL\n", hashgrid::to_string(all.status.code),
                    hashgrid::to_string(blocked.status.code));
        return 1;
    }

    // The oracle, segment by segment.
    start = now_ns();
    uint32_t wrong_tiles = 0, wrong_t = 0, wrong_first = 0;
    uint64_t touched_total = 0;
    std::vector<std::vector<ExactHit>> examples;
    for (uint32_t k = 0; k < count; ++k) {
        const std::vector<ExactHit> expected = exact_hits(segments[k], w, h);
        touched_total += expected.size();
        const uint64_t begin = offsets[k], end = offsets[k + 1];
        bool same = end - begin == expected.size();
        bool t_close = true;
        for (size_t e = 0; same && e < expected.size(); ++e) {
            const RayHit& got = hits[static_cast<size_t>(begin) + e];
            same = got.index == expected[e].tile;
            t_close = t_close && std::fabs(static_cast<double>(got.t) - value(expected[e].t)) <= 1e-6;
        }
        // First wall: the earliest touched wall tile (lowest index on a tie).
        const ExactHit* wall = nullptr;
        for (const ExactHit& e : expected)
            if (layer[e.tile] == kWall) {
                wall = &e;
                break;
            }
        const bool first_ok = wall == nullptr ? first[k].index == hashgrid::kNoIndex
                                              : first[k].index == wall->tile &&
                                                    std::fabs(static_cast<double>(first[k].t) - value(wall->t)) <= 1e-6;
        wrong_tiles += same ? 0 : 1;
        wrong_t += same && !t_close ? 1 : 0;
        wrong_first += first_ok ? 0 : 1;
        if (k < 4) examples.push_back(expected);
        if (!same || !t_close || !first_ok)
            std::printf("MISMATCH segment %u (%g, %g) -> (%g, %g): %llu tiles, oracle %llu; first wall %u, oracle %u\n",
                        k, 0.25 * segments[k].a[0], 0.25 * segments[k].a[1], 0.25 * segments[k].b[0],
                        0.25 * segments[k].b[1], static_cast<unsigned long long>(end - begin),
                        static_cast<unsigned long long>(expected.size()), first[k].index,
                        wall != nullptr ? wall->tile : hashgrid::kNoIndex);
    }
    const double oracle_ms = elapsed_ms(start);

    std::printf("line_of_sight: %u x %u tiles, %u segments (%u hand-picked)\n", w, h, count, count - options.segments);
    for (uint32_t k = 0; k < examples.size(); ++k) {
        const Segment& seg = segments[k];
        std::printf("  segment (%g, %g) -> (%g, %g) touches %llu tiles:", 0.25 * seg.a[0], 0.25 * seg.a[1],
                    0.25 * seg.b[0], 0.25 * seg.b[1], static_cast<unsigned long long>(offsets[k + 1] - offsets[k]));
        for (uint64_t e = offsets[k]; e < offsets[k + 1] && e < offsets[k] + 12; ++e) {
            const uint32_t tile = hits[static_cast<size_t>(e)].index;
            std::printf(" (%u,%u)", tile % w, tile / w);
        }
        std::printf("%s; %s\n", offsets[k + 1] - offsets[k] > 12 ? " ..." : "",
                    first[k].index == hashgrid::kNoIndex ? "clear line of sight" : "blocked");
        if (k == 0) print_map(layer, w, 8, examples[k], first[k].index);
    }
    std::printf("%llu tile hits, %llu segments blocked; batch queries %.3f ms, brute-force oracle %.3f ms\n",
                static_cast<unsigned long long>(all.total), static_cast<unsigned long long>(blocked.total), query_ms,
                oracle_ms);
    const bool pass = wrong_tiles == 0 && wrong_t == 0 && wrong_first == 0 && touched_total == all.total;
    std::printf("%s: touched tiles %u wrong, entry t %u wrong, first wall %u wrong, of %u segments\n",
                pass ? "PASS" : "FAIL", wrong_tiles, wrong_t, wrong_first, count);
    return pass ? 0 : 1;
}

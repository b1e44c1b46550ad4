// SPDX-License-Identifier: MIT
// query_face (particle_queries.h): the particles of a box within a distance
// of one of its faces, i.e. the halo a domain decomposition sends across that
// face. Checked against a brute-force oracle (the header's float test) on
// random, clustered, lattice and far scenes in 2D and 3D, unbounded and
// bounded (reject and clamp) worlds, every face, distances from 0 to +inf;
// the halo guarantee against the brute-force pair oracle (every particle that
// pairs across the face is found, on scenes built around the rounding edges);
// the visitor and batch forms at 1, 2, 4 and 8 threads; bad input.
#include <doctest/doctest.h>

#include "continue_on_assert.h"
#include "far_scenes.h"
#include "hashgrid/particle_queries.h"
#include "test_support.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace hashgrid;
using namespace hashgrid_test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr uint32_t kSentinel = 0xdeadbeefu;

// ---------------------------------------------------------------------------
// Oracle: the header's test, in float.

bool face_accepts(const Scene& s, uint32_t i, const QueryFace& q) {
    for (uint32_t d = 0; d < s.dims; ++d) {
        const float c = s.coord(d, i);
        if (!(c >= q.box.min[d] && c <= q.box.max[d])) return false;
    }
    const uint32_t a = q.face / 2;
    const float p = s.coord(a, i);
    const float difference = (q.face & 1u) != 0 ? q.box.max[a] - p : p - q.box.min[a];
    return difference < q.distance;
}

/// Original indices of the accepted particles, by expected sorted position.
std::vector<uint32_t> oracle_face(const Scene& s, const std::vector<uint32_t>& pos, const QueryFace& q) {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < s.size(); ++i)
        if (face_accepts(s, i, q)) out.push_back(i);
    std::sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) { return pos[a] < pos[b]; });
    return out;
}

std::string face_text(const QueryFace& q) {
    std::string t = "face " + std::to_string(q.face) + " distance " + std::to_string(q.distance) + " box";
    for (uint32_t d = 0; d < 3; ++d)
        t += " [" + std::to_string(q.box.min[d]) + ", " + std::to_string(q.box.max[d]) + "]";
    return t;
}

// ---------------------------------------------------------------------------
// Output checks.

std::vector<uint64_t> capacities_for(uint64_t total) {
    std::vector<uint64_t> caps;
    if (total <= 24) {
        for (uint64_t c = 0; c <= total + 1; ++c)
            caps.push_back(c);
    } else {
        caps = {0, 1, total / 2, total - 1, total, total + 3};
    }
    return caps;
}

/// The buffer form at several capacities: exact total, status, the prefix,
/// nothing written past it. Empty when all is well.
std::string check_buffer(const Grid& grid, const QueryFace& q, const std::vector<uint32_t>& expected) {
    for (uint64_t cap : capacities_for(expected.size())) {
        std::vector<uint32_t> buf(static_cast<size_t>(cap) + 4, kSentinel);
        const QueryResult r = query_face(grid, q, cap == 0 ? nullptr : buf.data(), cap);
        const std::string at = " (capacity " + std::to_string(cap) + ", " + face_text(q) + ")";
        if (r.total != expected.size())
            return "total " + std::to_string(r.total) + " expected " + std::to_string(expected.size()) + at;
        const uint64_t want = std::min<uint64_t>(cap, expected.size());
        if (r.written != want) return "written " + std::to_string(r.written) + at;
        const StatusCode code = cap >= expected.size() ? StatusCode::ok : StatusCode::output_too_small;
        if (r.status.code != code || (code != StatusCode::ok && r.status.needed != expected.size()))
            return std::string("status ") + to_string(r.status.code) + at;
        for (uint64_t k = 0; k < want; ++k)
            if (buf[k] != expected[k])
                return "result " + std::to_string(k) + ": expected " + std::to_string(expected[k]) + " got " +
                       std::to_string(buf[k]) + at;
        for (uint64_t k = want; k < buf.size(); ++k)
            if (buf[k] != kSentinel) return "wrote past the prefix at " + std::to_string(k) + at;
    }
    return "";
}

/// The visitor form: every result once, in order; a visitor that stops after
/// `stop_after` results is called exactly that often.
std::string check_visitor(const Grid& grid, const QueryFace& q, const std::vector<uint32_t>& expected,
                          uint64_t stop_after) {
    struct Recorder {
        std::vector<uint32_t> seen;
        uint64_t stop_after = ~uint64_t{0};
        static bool visit(void* context, uint32_t index) {
            auto* self = static_cast<Recorder*>(context);
            self->seen.push_back(index);
            return self->seen.size() < self->stop_after;
        }
    };
    Recorder all;
    QueryResult r = query_face(grid, q, QueryVisitor{&Recorder::visit, &all});
    if (!r.status.ok() || r.total != expected.size() || r.written != 0 || all.seen != expected)
        return "visitor saw " + std::to_string(all.seen.size()) + " of " + std::to_string(expected.size()) + " (" +
               face_text(q) + ")";
    Recorder some;
    some.stop_after = stop_after;
    r = query_face(grid, q, QueryVisitor{&Recorder::visit, &some});
    const uint64_t calls = std::min<uint64_t>(stop_after, expected.size());
    if (!r.status.ok() || r.total != calls || some.seen.size() != calls ||
        !std::equal(some.seen.begin(), some.seen.end(), expected.begin()))
        return "stopping visitor made " + std::to_string(r.total) + " calls, expected " + std::to_string(calls);
    return "";
}

struct Failures {
    uint32_t count = 0;
    std::string first;
    void add(const std::string& diff) {
        if (diff.empty()) return;
        if (count++ == 0) first = diff;
    }
};

// ---------------------------------------------------------------------------
// Worlds and scenes.

enum class WorldKind { unbounded, bounded_reject, bounded_clamp };

/// Origin below the scene; clamp: a box over the middle half of the scene,
/// so particles on both sides land in border cells.
GridConfig world_config(const Scene& s, WorldKind w, float cell, float distance) {
    GridConfig c = unbounded_config(s.dims, cell, distance, std::max<uint32_t>(s.size(), 1), 1);
    float lo[3];
    scene_min(s, lo);
    for (uint32_t a = 0; a < 3; ++a)
        c.origin[a] = a < s.dims ? lo[a] - rounded_mul(1.5f, cell) : 0.0f;
    if (w == WorldKind::unbounded) return c;
    c = bounded_config(s, c, 2);
    if (w == WorldKind::bounded_clamp) {
        c.out_of_bounds = OutOfBounds::clamp;
        for (uint32_t a = 0; a < s.dims; ++a) {
            const uint32_t quarter = c.cell_counts[a] / 4;
            c.origin[a] = c.origin[a] + rounded_mul(static_cast<float>(quarter), cell);
            c.cell_counts[a] = std::max<uint32_t>(c.cell_counts[a] / 2, 1);
        }
    }
    return c;
}

struct Built {
    std::unique_ptr<OwnedGrid> grid;
    std::vector<uint32_t> pos; ///< Expected sorted position of each particle.
};

Built build(const Scene& s, const GridConfig& config, const ThreadBackend& backend) {
    Built b;
    b.grid = make_grid(config);
    REQUIRE(b.grid->init_status.ok());
    const Status st = (*b.grid)->rebuild(s.spans(), backend);
    REQUIRE_MESSAGE(st.ok(), to_string(st.code));
    b.pos = invert(expected_order(s, config));
    return b;
}

Scene lattice_scene(uint32_t dims, uint32_t side, float step) {
    Scene s;
    s.dims = dims;
    for (uint32_t k = 0; k < (dims == 3 ? side : 1u); ++k)
        for (uint32_t j = 0; j < side; ++j)
            for (uint32_t i = 0; i < side; ++i)
                s.add(static_cast<float>(i) * step, static_cast<float>(j) * step, static_cast<float>(k) * step);
    return s;
}

/// A random face query around the scene: box bounds around or exactly on
/// particle coordinates, sometimes infinite; every face; distances from 0 to
/// +inf, including the interaction distance and distances that put the face
/// test exactly on a particle.
QueryFace random_face(Rng& rng, const Scene& s, const GridConfig& c) {
    QueryFace q;
    q.face = rng.below(2 * s.dims);
    const uint32_t n = s.size();
    for (uint32_t a = 0; a < s.dims; ++a) {
        const float centre = n ? s.coord(a, rng.below(n)) : 0.0f;
        const float half = rounded_mul(c.cell_size, rng.uniform(0.0f, 6.0f));
        q.box.min[a] = centre - half;
        q.box.max[a] = centre + half;
        switch (rng.below(6)) {
        case 0: // bounds exactly on particle coordinates
            if (n) {
                const float p = s.coord(a, rng.below(n));
                const float r = s.coord(a, rng.below(n));
                q.box.min[a] = std::min(p, r);
                q.box.max[a] = std::max(p, r);
            }
            break;
        case 1: // a slab of the scene: infinite on this axis
            q.box.min[a] = -kInf;
            q.box.max[a] = kInf;
            break;
        case 2: // half-infinite
            if (rng.coin())
                q.box.min[a] = -kInf;
            else
                q.box.max[a] = kInf;
            break;
        default:
            break;
        }
    }
    const uint32_t a = q.face / 2;
    const bool upper = (q.face & 1u) != 0;
    // Mostly a finite face (an infinite one finds nothing).
    if (n && rng.below(8) != 0) {
        const float p = s.coord(a, rng.below(n));
        if (upper) {
            q.box.max[a] = std::max(p, q.box.min[a]);
        } else {
            q.box.min[a] = std::min(p, q.box.max[a]);
        }
    }
    switch (rng.below(9)) {
    case 0:
        q.distance = 0.0f;
        break;
    case 1:
        q.distance = c.interaction_distance;
        break;
    case 2:
        q.distance = c.cell_size;
        break;
    case 3:
        q.distance = rounded_mul(c.cell_size, rng.uniform(0.0f, 1.0f));
        break;
    case 4:
        q.distance = rounded_mul(c.cell_size, rng.uniform(1.0f, 8.0f));
        break;
    case 5:
        q.distance = rng.coin() ? kInf : 1e30f;
        break;
    case 6: { // exactly a particle's difference from the face: it is outside (strict)
        const float plane = upper ? q.box.max[a] : q.box.min[a];
        const float p = n ? s.coord(a, rng.below(n)) : 0.0f;
        const float d = upper ? plane - p : p - plane;
        q.distance = std::isfinite(d) && d >= 0.0f ? d : c.interaction_distance;
        break;
    }
    case 7: { // just above that difference: it is inside
        const float plane = upper ? q.box.max[a] : q.box.min[a];
        const float p = n ? s.coord(a, rng.below(n)) : 0.0f;
        const float d = upper ? plane - p : p - plane;
        q.distance = std::isfinite(d) && d >= 0.0f ? std::nextafter(d, kInf) : c.interaction_distance;
        break;
    }
    default:
        q.distance = rounded_mul(c.interaction_distance, rng.uniform(0.5f, 1.5f));
        break;
    }
    return q;
}

struct SceneSpec {
    std::string name;
    Scene scene;
    float cell;
    float distance;
};

std::vector<SceneSpec> oracle_scenes() {
    Rng rng(0xface);
    std::vector<SceneSpec> v;
    v.push_back({"uniform3d", uniform_scene(rng, 3, scaled_count(1500), 0.0f, 12.0f), 1.0f, 1.0f});
    v.push_back({"uniform2d", uniform_scene(rng, 2, scaled_count(1500), -6.0f, 6.0f), 1.0f, 0.75f});
    v.push_back({"clustered3d", clustered_scene(rng, 3, scaled_count(1500), 4, 0.0f, 10.0f, 0.8f), 0.5f, 0.5f});
    v.push_back({"clustered2d", clustered_scene(rng, 2, scaled_count(1500), 4, 0.0f, 10.0f, 0.8f), 0.5f, 0.4f});
    v.push_back({"lattice3d", lattice_scene(3, 9, 0.5f), 1.0f, 1.0f}); // points on cell edges, ties
    v.push_back({"lattice2d", lattice_scene(2, 24, 0.5f), 1.0f, 0.5f});
    Scene empty;
    v.push_back({"empty3d", empty, 1.0f, 1.0f});
    return v;
}

} // namespace

TEST_CASE("face queries match the brute-force oracle: 2D and 3D, unbounded, bounded and clamp worlds") {
    const uint32_t queries = scaled_count(250);
    uint64_t seed = 500;
    for (const SceneSpec& sp : oracle_scenes())
        for (WorldKind w : {WorldKind::unbounded, WorldKind::bounded_reject, WorldKind::bounded_clamp}) {
            const GridConfig config = world_config(sp.scene, w, sp.cell, sp.distance);
            const Built b = build(sp.scene, config, serial_backend());
            const Grid& grid = **b.grid;
            Rng rng(++seed);
            Failures f;
            uint64_t found = 0;
            for (uint32_t k = 0; k < queries; ++k) {
                const QueryFace q = random_face(rng, sp.scene, config);
                const std::vector<uint32_t> expected = oracle_face(sp.scene, b.pos, q);
                found += expected.size();
                f.add(check_buffer(grid, q, expected));
                f.add(check_visitor(grid, q, expected, 1 + rng.below(8)));
            }
            INFO(sp.name, " ", static_cast<int>(w));
            CHECK_MESSAGE(f.count == 0, f.count, " failures, first: ", f.first);
            // The random queries are not all empty (the oracle is exercised).
            if (sp.scene.size() > 0) CHECK(found > 0);
        }
}

TEST_CASE("face queries on far and wrapped unbounded worlds match the oracle") {
    const uint32_t queries = scaled_count(150);
    uint64_t seed = 700;
    for (const FarScene& fs : far_scenes(scaled_count(800))) {
        const std::string name = fs.name;
        const Built b = build(fs.scene, fs.config, serial_backend());
        const Grid& grid = **b.grid;
        Rng rng(++seed);
        Failures f;
        for (uint32_t k = 0; k < queries; ++k) {
            // Faces on the scene's own coordinates (the random boxes would
            // overflow near the top of the float range).
            QueryFace q;
            const uint32_t n = fs.scene.size();
            q.face = rng.below(2 * fs.scene.dims);
            for (uint32_t a = 0; a < fs.scene.dims; ++a) {
                const float p = fs.scene.coord(a, rng.below(n));
                const float r = fs.scene.coord(a, rng.below(n));
                q.box.min[a] = rng.below(4) == 0 ? -kInf : std::min(p, r);
                q.box.max[a] = rng.below(4) == 0 ? kInf : std::max(p, r);
            }
            const float distances[5] = {fs.config.interaction_distance, 0.5f, 2.0f, 1.0e30f, kInf};
            q.distance = distances[rng.below(5)];
            const std::vector<uint32_t> expected = oracle_face(fs.scene, b.pos, q);
            f.add(check_buffer(grid, q, expected));
        }
        CHECK_MESSAGE(f.count == 0, name, ": ", f.count, " failures, first: ", f.first);
    }
}

TEST_CASE("the halo of a face holds every particle that pairs across it, at the rounding edges") {
    // Slabs of a domain decomposition: the box [m, M] on axis a (infinite or
    // finite on the others), r the interaction distance. Particles are put at
    // m, m + r, M - r and M give or take a few ulps, so pairs at exactly r and
    // differences that round to r occur; every pair with one particle in the
    // box and the other on or beyond a face must find the inner one in that
    // face's halo.
    Rng rng(0x4a10);
    const uint32_t rounds = scaled_count(24);
    uint64_t checked_pairs = 0;
    for (uint32_t round = 0; round < rounds; ++round)
        for (uint32_t dims : {2u, 3u}) {
            const uint32_t a = rng.below(dims);
            const float r = rng.uniform(0.05f, 1.5f);
            const float m = rng.uniform(-20.0f, 20.0f);
            const float M = m + rounded_mul(r, rng.uniform(1.0f, 4.0f));
            Scene s;
            s.dims = dims;
            const float anchors[4] = {m, m + r, M - r, M};
            const uint32_t n = scaled_count(600);
            for (uint32_t i = 0; i < n; ++i) {
                float c[3];
                for (uint32_t d = 0; d < 3; ++d)
                    c[d] = rng.uniform(0.0f, rounded_mul(3.0f, r)); // dense on the other axes
                float x = anchors[rng.below(4)];
                const int32_t steps = rng.between(-4, 4);
                for (int32_t k = 0; k < (steps < 0 ? -steps : steps); ++k)
                    x = std::nextafter(x, steps < 0 ? -kInf : kInf);
                if (rng.below(4) == 0) x = rng.uniform(m - r - r, M + r + r);
                c[a] = x;
                // Some particles share every other coordinate: pairs exactly along the axis.
                if (i > 0 && rng.below(3) == 0)
                    for (uint32_t d = 0; d < 3; ++d)
                        if (d != a) c[d] = s.coord(d, i - 1);
                s.add(c[0], c[1], c[2]);
            }
            QueryBox box;
            for (uint32_t d = 0; d < 3; ++d) {
                const bool infinite = rng.coin();
                box.min[d] = infinite ? -kInf : rounded_mul(0.5f, r);
                box.max[d] = infinite ? kInf : rounded_mul(2.5f, r);
            }
            box.min[a] = m;
            box.max[a] = M;
            for (WorldKind w : {WorldKind::unbounded, WorldKind::bounded_clamp}) {
                const GridConfig config = world_config(s, w, r, r);
                const Built b = build(s, config, serial_backend());
                std::vector<uint8_t> in_halo[2];
                for (uint32_t side = 0; side < 2; ++side) {
                    QueryFace q{box, face_index(a, side == 1), r};
                    const std::vector<uint32_t> expected = oracle_face(s, b.pos, q);
                    CHECK(check_buffer(**b.grid, q, expected) == "");
                    in_halo[side].assign(s.size(), 0);
                    for (uint32_t i : expected)
                        in_halo[side][i] = 1;
                    // The header's comparison: query_box over the slab with its
                    // bound rounded to nearest holds the halo, and its extras
                    // are exactly the particles whose difference is r or rounds to it.
                    QueryBox slab = box;
                    if (side == 0)
                        slab.max[a] = std::min(box.max[a], m + r);
                    else
                        slab.min[a] = std::max(box.min[a], M - r);
                    std::vector<uint32_t> in_slab(s.size() + 1);
                    const QueryResult sr = query_box(**b.grid, slab, in_slab.data(), in_slab.size());
                    REQUIRE(sr.status.ok());
                    uint64_t halo_in_slab = 0;
                    for (uint64_t k = 0; k < sr.written; ++k) {
                        const uint32_t i = in_slab[k];
                        if (in_halo[side][i] != 0) {
                            ++halo_in_slab;
                            continue;
                        }
                        const float difference = side == 0 ? s.coord(a, i) - m : M - s.coord(a, i);
                        CHECK(difference >= r);
                    }
                    CHECK(halo_in_slab == expected.size());
                }
                auto inside = [&](uint32_t i) {
                    for (uint32_t d = 0; d < dims; ++d)
                        if (!(s.coord(d, i) >= box.min[d] && s.coord(d, i) <= box.max[d])) return false;
                    return true;
                };
                // Pairs across a face: one inside, the other on or beyond its plane.
                uint32_t missed = 0;
                for (const Pair& p : brute_force_pairs(s, r))
                    for (uint32_t k = 0; k < 2; ++k) {
                        const uint32_t in = k == 0 ? p.a : p.b;
                        const uint32_t out = k == 0 ? p.b : p.a;
                        if (!inside(in)) continue;
                        if (s.coord(a, out) <= m) {
                            ++checked_pairs;
                            missed += in_halo[0][in] == 0 ? 1u : 0u;
                        }
                        if (s.coord(a, out) >= M) {
                            ++checked_pairs;
                            missed += in_halo[1][in] == 0 ? 1u : 0u;
                        }
                    }
                CHECK_MESSAGE(missed == 0, "round ", round, " dims ", dims, ": ", missed,
                              " pairs across a face missed");
            }
        }
    CHECK(checked_pairs > 0);
}

TEST_CASE("face batches and threaded rebuilds equal the single queries, at 1, 2, 4 and 8 threads") {
    Rng rng(0xba7c);
    for (uint32_t dims : {3u, 2u})
        for (WorldKind w : {WorldKind::unbounded, WorldKind::bounded_reject}) {
            const Scene s = clustered_scene(rng, dims, scaled_count(3000), 5, 0.0f, 16.0f, 1.2f);
            const GridConfig config = world_config(s, w, 1.0f, 1.0f);
            const Built serial = build(s, config, serial_backend());
            const uint32_t count = scaled_count(200);
            std::vector<QueryFace> faces(count);
            std::vector<uint64_t> single_offsets{0};
            std::vector<uint32_t> single;
            for (QueryFace& q : faces) {
                q = random_face(rng, s, config);
                const std::vector<uint32_t> expected = oracle_face(s, serial.pos, q);
                single.insert(single.end(), expected.begin(), expected.end());
                single_offsets.push_back(single.size());
            }
            for (uint32_t threads : {1u, 2u, 4u, 8u}) {
                ParallelBackend pb(threads);
                // The grid rebuilt on that many threads answers the same.
                const Built b = build(s, config, pb.backend());
                Failures f;
                for (uint32_t i = 0; i < count; ++i) {
                    const std::vector<uint32_t> expected(single.begin() + static_cast<long>(single_offsets[i]),
                                                         single.begin() + static_cast<long>(single_offsets[i + 1]));
                    f.add(check_buffer(**b.grid, faces[i], expected));
                }
                CHECK_MESSAGE(f.count == 0, "threads ", threads, ": ", f.first);
                for (uint64_t num : {3u, 1u}) { // whole output, then a third of it
                    const uint64_t cap = single.size() * num / 3;
                    std::vector<uint32_t> out(static_cast<size_t>(cap) + 4, kSentinel);
                    std::vector<uint64_t> offsets(count + 1, ~uint64_t{0});
                    const QueryResult r = query_face_batch(**b.grid, faces.data(), count, offsets.data(), count + 1,
                                                           out.data(), cap, pb.backend());
                    CHECK(r.total == single.size());
                    CHECK(r.written == std::min<uint64_t>(cap, single.size()));
                    CHECK(r.status.code == (cap >= single.size() ? StatusCode::ok : StatusCode::output_too_small));
                    CHECK(offsets == single_offsets);
                    CHECK(std::equal(out.begin(), out.begin() + static_cast<long>(r.written), single.begin()));
                    CHECK(std::all_of(out.begin() + static_cast<long>(r.written), out.end(),
                                      [](uint32_t v) { return v == kSentinel; }));
                }
            }
        }
}

TEST_CASE("face query bad input: NaN, negative distance, bad face index, unbuilt grid, null buffers") {
    for (uint32_t dims : {3u, 2u}) {
        Rng rng(dims);
        const Scene s = uniform_scene(rng, dims, 200, 0.0f, 5.0f);
        const GridConfig config = world_config(s, WorldKind::unbounded, 1.0f, 1.0f);
        auto owned = make_grid(config);
        REQUIRE(owned->init_status.ok());
        Grid& grid = **owned;
        QueryFace good;
        for (uint32_t a = 0; a < 3; ++a) {
            good.box.min[a] = 1.0f;
            good.box.max[a] = 4.0f;
        }
        good.face = 1;
        good.distance = 1.0f;
        uint32_t out[8];
        uint64_t offsets[4];
        auto never = [](void*, uint32_t) { return true; };
        CHECK(query_face(grid, good, out, 8).status.code == StatusCode::not_built);
        CHECK(query_face(grid, good, QueryVisitor{never, nullptr}).status.code == StatusCode::not_built);
        CHECK(query_face_batch(grid, &good, 1, offsets, 2, out, 8, serial_backend()).status.code ==
              StatusCode::not_built);
        REQUIRE(grid.rebuild(s.spans(), serial_backend()).ok());
        const uint64_t good_total = query_face(grid, good, nullptr, 0).total;
        CHECK(good_total > 0);

        std::vector<QueryFace> bad;
        auto with = [&](auto change) {
            QueryFace q = good;
            change(q);
            bad.push_back(q);
        };
        with([](QueryFace& q) { q.box.min[0] = kNaN; });
        with([&](QueryFace& q) { q.box.max[dims - 1] = kNaN; });
        with([](QueryFace& q) { q.box.min[1] = 4.5f; }); // min > max
        with([&](QueryFace& q) { q.face = 2 * dims; });  // 4 in 2D, 6 in 3D
        with([](QueryFace& q) { q.face = 0xffffffffu; });
        with([](QueryFace& q) { q.distance = kNaN; });
        with([](QueryFace& q) { q.distance = -1.0f; });
        with([](QueryFace& q) { q.distance = -kInf; });
        with([](QueryFace& q) { q.distance = -std::numeric_limits<float>::denorm_min(); });
        for (const QueryFace& q : bad) {
            INFO(face_text(q));
            std::fill(std::begin(out), std::end(out), kSentinel);
            const QueryResult r = query_face(grid, q, out, 8);
            CHECK(r.status.code == StatusCode::invalid_query);
            CHECK(r.total == 0);
            CHECK(r.written == 0);
            CHECK(std::all_of(std::begin(out), std::end(out), [](uint32_t v) { return v == kSentinel; }));
            uint32_t calls = 0;
            const QueryResult rv = query_face(grid, q,
                                              QueryVisitor{[](void* c, uint32_t) {
                                                               ++*static_cast<uint32_t*>(c);
                                                               return true;
                                                           },
                                                           &calls});
            CHECK(rv.status.code == StatusCode::invalid_query);
            CHECK(calls == 0);
        }
        // A batch names the lowest offending query and how many there are.
        std::vector<QueryFace> batch = {good, bad[3], good, bad[5], bad[0]};
        std::vector<uint64_t> offs(batch.size() + 1);
        std::vector<uint32_t> bout(64);
        const QueryResult br = query_face_batch(grid, batch.data(), static_cast<uint32_t>(batch.size()), offs.data(),
                                                offs.size(), bout.data(), bout.size(), serial_backend());
        CHECK(br.status.code == StatusCode::invalid_query);
        CHECK(br.status.index == 1);
        CHECK(br.status.count == 3);

        // Valid edge cases: nothing within a zero distance (either sign), nor
        // within a finite distance of a face at infinity; a face of the third
        // axis is valid in 3D only.
        QueryFace edge = good;
        edge.distance = 0.0f;
        CHECK(query_face(grid, edge, out, 8).status.ok());
        CHECK(query_face(grid, edge, out, 8).total == 0);
        edge.distance = -0.0f;
        CHECK(query_face(grid, edge, out, 8).status.ok());
        CHECK(query_face(grid, edge, out, 8).total == 0);
        edge = good;
        edge.face = 0;
        edge.box.min[0] = -kInf;
        edge.distance = kInf;
        CHECK(query_face(grid, edge, out, 8).status.ok());
        CHECK(query_face(grid, edge, out, 8).total == 0);
        edge = good;
        edge.face = 4;
        if (dims == 3)
            CHECK(query_face(grid, edge, nullptr, 0).total > 0);
        else
            CHECK(query_face(grid, edge, nullptr, 0).status.code == StatusCode::invalid_query);

        // Programmer errors: invalid_argument in every build, nothing written.
        ContinueOnAssert keep_going;
        CHECK(query_face(grid, good, nullptr, 8).status.code == StatusCode::invalid_argument);
        CHECK(query_face(grid, good, QueryVisitor{nullptr, nullptr}).status.code == StatusCode::invalid_argument);
        CHECK(query_face_batch(grid, nullptr, 2, offsets, 3, out, 8, serial_backend()).status.code ==
              StatusCode::invalid_argument);
        // The grid is untouched: the good query answers as before.
        CHECK(query_face(grid, good, nullptr, 0).total == good_total);
    }
}

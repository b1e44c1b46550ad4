// SPDX-License-Identifier: MIT
// Fuzz target: every query of particle_queries.h and box_queries.h against
// brute force, each by the rule written in its header. The first byte picks
// particles or boxes; the scene is valid (at most 300 particles or 200
// boxes) and the query parameters come from a palette with NaN, infinities,
// denormals, -0.0 and huge values. Checked: statuses (invalid_query,
// output_too_small with the exact count), results and their order, written
// prefixes for small buffers, and batches equal to the concatenated single
// queries on the serial and the 3-thread backend.
#include "box_scene.h"

#include "hashgrid/box_queries.h"
#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid_support/query_shapes.h"

#include <type_traits>

namespace {

using namespace hashgrid_fuzz;
using hashgrid::StatusCode;
using hashgrid_support::nearest_at;
using hashgrid_support::nearests_of;
using hashgrid_support::point_at;
using hashgrid_support::six_plane_frustum;
using hashgrid_support::sphere_at;
using hashgrid_support::spheres_of;

constexpr uint32_t kSentinel = 0xdeadbeefu;

/// A query float: usually from the scene palette, now and then special.
float query_float(Input& in, float origin, float cell) { return scene_float(in, origin, cell, 12); }

float query_radius_value(Input& in, float cell) {
    static const float factors[] = {0.0f, 0.5f, 1.0f, 2.5f, 0.125f, 7.0f, -0.0f};
    if (in.below(8) == 0) {
        static const float odd[] = {
            -1.0f, std::numeric_limits<float>::quiet_NaN(),  std::numeric_limits<float>::infinity(),
            1e30f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()};
        return in.pick(odd);
    }
    return cell * in.pick(factors);
}

// ---------------------------------------------------------------------------
// Particles.

struct Particles {
    hashgrid::GridConfig config;
    uint32_t n = 0;
    std::vector<float> pos[3];
    std::vector<uint32_t> position; // sorted position of each particle
};

void point_of(const Particles& s, uint32_t i, float p[3]) {
    for (uint32_t d = 0; d < 3; ++d)
        p[d] = d < s.config.dimensions ? s.pos[d][i] : 0.0f;
}

/// Results in the grid's sorted order.
std::vector<uint32_t> in_sorted_order(const Particles& s, std::vector<uint32_t> found) {
    std::sort(found.begin(), found.end(), [&](uint32_t a, uint32_t b) { return s.position[a] < s.position[b]; });
    return found;
}

/// Checks a single query's output contract against the full expected list.
template <typename T>
void check_output(const hashgrid::QueryResult& r, const std::vector<T>& expect, const std::vector<T>& out,
                  uint64_t capacity, const char* what) {
    FUZZ_CHECK(r.total == expect.size(), what);
    FUZZ_CHECK(r.written == std::min<uint64_t>(capacity, expect.size()), what);
    FUZZ_CHECK(r.status.code == (capacity < expect.size() ? StatusCode::output_too_small : StatusCode::ok), what);
    if (r.status.code == StatusCode::output_too_small) FUZZ_CHECK(r.status.needed == expect.size(), what);
    for (uint64_t k = 0; k < r.written; ++k)
        FUZZ_CHECK(std::memcmp(&out[k], &expect[k], sizeof(T)) == 0, what);
}

bool finite_point(const float p[3], uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!std::isfinite(p[d])) return false;
    return true;
}

std::vector<uint32_t> radius_oracle(const Particles& s, const float c[3], float radius) {
    std::vector<uint32_t> found;
    const float r2 = radius * radius;
    for (uint32_t i = 0; i < s.n; ++i) {
        float p[3];
        point_of(s, i, p);
        if (distance2(p, c, s.config.dimensions) < r2) found.push_back(i);
    }
    return in_sorted_order(s, found);
}

std::vector<uint32_t> box_oracle(const Particles& s, const hashgrid::QueryBox& b) {
    std::vector<uint32_t> found;
    for (uint32_t i = 0; i < s.n; ++i) {
        bool inside = true;
        for (uint32_t d = 0; d < s.config.dimensions; ++d)
            inside = inside && b.min[d] <= s.pos[d][i] && s.pos[d][i] <= b.max[d];
        if (inside) found.push_back(i);
    }
    return in_sorted_order(s, found);
}

std::vector<hashgrid::NearestHit> nearest_oracle(const Particles& s, const float c[3], uint32_t k, float md) {
    std::vector<hashgrid::NearestHit> found;
    const float limit = md * md;
    for (uint32_t i = 0; i < s.n; ++i) {
        float p[3];
        point_of(s, i, p);
        const float d2 = distance2(p, c, s.config.dimensions);
        // "+inf for no limit": every particle, even one whose d2 overflowed.
        if (d2 < limit || md == inf()) found.push_back({i, d2});
    }
    std::sort(found.begin(), found.end(), [](const hashgrid::NearestHit& a, const hashgrid::NearestHit& b) {
        return a.distance_squared != b.distance_squared ? a.distance_squared < b.distance_squared : a.index < b.index;
    });
    if (found.size() > k) found.resize(k);
    return found;
}

void particle_queries(Input& in) {
    Particles s;
    hashgrid::GridConfig& c = s.config;
    c.dimensions = in.flag() ? 3u : 2u;
    static const float cells[] = {1.0f, 0.5f, 2.0f, 0.1f, 1000.0f};
    c.cell_size = in.pick(cells);
    static const float reach[] = {1.0f, 0.5f, 0.25f, 0.999f};
    c.interaction_distance = c.cell_size * in.pick(reach);
    static const float origins[] = {0.0f, -3.25f, 1e5f, 7.0f};
    for (float& o : c.origin)
        o = in.pick(origins);
    if (in.below(3) == 0) {
        c.world = hashgrid::World::bounded;
        for (uint32_t& v : c.cell_counts)
            v = 1 + in.below(c.dimensions == 3 ? 6u : 16u);
        c.out_of_bounds = hashgrid::OutOfBounds::clamp; // every frame valid
    }
    s.n = in.below(in.flag() ? 301u : 40u);
    c.max_particles = s.n + 1;
    c.max_cells = s.n + 1;
    c.max_pairs = 0;
    for (uint32_t d = 0; d < c.dimensions; ++d) {
        s.pos[d].resize(s.n);
        for (float& v : s.pos[d])
            v = scene_float(in, c.origin[d], c.cell_size, c.world == hashgrid::World::bounded ? 32u : 0u);
    }
    for (uint32_t d = 0; d < c.dimensions; ++d)
        for (float& v : s.pos[d])
            if (!std::isfinite(v)) v = c.origin[d];
    hashgrid::Grid grids[2];
    const hashgrid::ThreadBackend backends[2] = {serial(), threaded()};
    hashgrid::ParticleSpans spans{s.pos[0].data(), s.pos[1].data(), c.dimensions == 3 ? s.pos[2].data() : nullptr,
                                  nullptr, s.n};
    {
        const float centre[3] = {0.0f, 0.0f, 0.0f};
        uint32_t none[1];
        FUZZ_CHECK(query_radius(grids[0], sphere_at(centre, 1.0f), none, 1).status.code != StatusCode::ok,
                   "query_radius on an uninitialised grid succeeded");
    }
    for (int b = 0; b < 2; ++b) {
        FUZZ_CHECK(grids[b].init_allocate(c).ok(), "query grid init failed");
        FUZZ_CHECK(grids[b].rebuild(spans, backends[b]).ok(), "query grid rebuild failed on a valid frame");
    }
    s.position.resize(s.n);
    for (uint32_t k = 0; k < s.n; ++k)
        s.position[grids[0].sorted_to_original()[k]] = k;
    const hashgrid::Grid& g = grids[0];
    const uint32_t dims = c.dimensions;

    const uint32_t queries = 1 + in.below(12);
    for (uint32_t q = 0; q < queries; ++q) {
        float centre[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t d = 0; d < dims; ++d)
            centre[d] = query_float(in, c.origin[d], c.cell_size);
        const bool centre_ok = finite_point(centre, dims);
        const uint64_t capacity = in.flag() ? 400 : in.below(8);
        std::vector<uint32_t> out(capacity + 1, kSentinel);
        const uint8_t kind = in.byte() % 6;
        if (kind == 0 || kind == 1) { // radius / point
            const float radius = kind == 0 ? query_radius_value(in, c.cell_size) : c.interaction_distance;
            const hashgrid::QueryResult r = kind == 0 ? query_radius(g, sphere_at(centre, radius), out.data(), capacity)
                                                      : query_point(g, point_at(centre), out.data(), capacity);
            if (!centre_ok || std::isnan(radius) || radius < 0.0f) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query && out[0] == kSentinel,
                           "query_radius: bad centre/radius not invalid_query");
                continue;
            }
            check_output(r, radius_oracle(s, centre, radius), out, capacity, "query_radius differs from brute force");
        } else if (kind == 2) { // box
            hashgrid::QueryBox box;
            bool ok = true;
            for (uint32_t d = 0; d < 3; ++d) {
                box.min[d] = d < dims ? centre[d] : 0.0f;
                box.max[d] = d < dims ? query_float(in, c.origin[d], c.cell_size) : 0.0f;
                if (d < dims && in.below(6) == 0) box.min[d] = -inf();
                ok = ok && !std::isnan(box.min[d]) && !std::isnan(box.max[d]) && box.min[d] <= box.max[d];
            }
            const hashgrid::QueryResult r = query_box(g, box, out.data(), capacity);
            if (!ok) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query && out[0] == kSentinel,
                           "query_box: bad box not invalid_query");
                continue;
            }
            check_output(r, box_oracle(s, box), out, capacity, "query_box differs from brute force");
        } else if (kind == 3) { // frustum
            hashgrid::Frustum f = six_plane_frustum();
            bool ok = true;
            static const float normals[] = {0.0f, 1.0f, -1.0f, 0.5f, -0.25f, 2.0f, -0.0f};
            for (uint32_t p = 0; p < f.plane_count; ++p) {
                hashgrid::Plane& plane = f.planes[p];
                if (in.below(3) == 0) continue; // {0,0,0,0}: always inside
                for (uint32_t k = 0; k < 3; ++k)
                    plane.normal[k] = in.pick(normals);
                plane.d = query_float(in, 0.0f, c.cell_size * 4.0f);
                for (uint32_t k = 0; k < 3; ++k)
                    ok = ok && std::isfinite(plane.normal[k]);
                ok = ok && std::isfinite(plane.d);
            }
            const hashgrid::QueryResult r = query_frustum(g, f, out.data(), capacity);
            if (!ok) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query, "query_frustum: non-finite plane accepted");
                continue;
            }
            std::vector<uint32_t> found;
            for (uint32_t i = 0; i < s.n; ++i) {
                float p[3];
                point_of(s, i, p);
                bool inside = true;
                for (uint32_t j = 0; j < f.plane_count; ++j) {
                    const hashgrid::Plane& pl = f.planes[j];
                    const float xy = pl.normal[0] * p[0] + pl.normal[1] * p[1];
                    const float v = dims == 3 ? (xy + pl.normal[2] * p[2]) + pl.d : xy + pl.d;
                    inside = inside && v >= 0.0f;
                }
                if (inside) found.push_back(i);
            }
            check_output(r, in_sorted_order(s, found), out, capacity, "query_frustum differs from brute force");
            // Cost bound: no more cell boxes culled than a walk over the
            // occupied cells (bounded: one per particle at most, or rows up to
            // the switch to that walk), and no more cells read than culled.
            hashgrid::QueryStats stats;
            uint64_t offsets[2] = {0, 0};
            const hashgrid::QueryResult rb =
                hashgrid::query_frustum_batch(g, &f, 1, offsets, 2, out.data(), capacity, serial(), &stats);
            FUZZ_CHECK(rb.total == r.total, "query_frustum_batch: total differs from the single query");
            const uint64_t occupied = std::max<uint64_t>(uint64_t{s.n}, 1);
            FUZZ_CHECK(stats.cull_tests <= 2 * occupied * 40 + 64 && stats.cells <= stats.cull_tests + 1,
                       "query_frustum: more work than a walk over the occupied cells");
        } else if (kind == 4) { // nearest
            const uint32_t k = in.below(6) == 0 ? 0u : 1 + in.below(20);
            const float md = in.flag() ? inf() : query_radius_value(in, c.cell_size);
            std::vector<hashgrid::NearestHit> hits(capacity + 1, {kSentinel, 0.0f});
            const hashgrid::QueryResult r = query_nearest(g, nearest_at(centre, k, md), hits.data(), capacity);
            if (!centre_ok || k == 0 || std::isnan(md) || md < 0.0f) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query && hits[0].index == kSentinel,
                           "query_nearest: bad parameters not invalid_query");
                continue;
            }
            check_output(r, nearest_oracle(s, centre, k, md), hits, capacity, "query_nearest differs from brute force");
        } else { // find_pairs_with
            const uint32_t m = in.below(40);
            std::vector<float> pts[3];
            uint32_t bad = 0xffffffffu;
            for (uint32_t d = 0; d < 3; ++d)
                pts[d].assign(m, 0.0f);
            for (uint32_t i = 0; i < m; ++i)
                for (uint32_t d = 0; d < dims; ++d) {
                    pts[d][i] = scene_float(in, c.origin[d], c.cell_size, 48);
                    if (!std::isfinite(pts[d][i]) && bad == 0xffffffffu) bad = i;
                }
            const hashgrid::ParticleSpans ps{pts[0].data(), pts[1].data(), dims == 3 ? pts[2].data() : nullptr, nullptr,
                                             m};
            std::vector<hashgrid::Pair> expect;
            const float r2 = c.interaction_distance * c.interaction_distance;
            for (uint32_t a = 0; a < m && bad == 0xffffffffu; ++a) {
                const float pa[3] = {pts[0][a], pts[1][a], pts[2][a]};
                for (uint32_t b : radius_oracle(s, pa, c.interaction_distance)) {
                    float pb[3];
                    point_of(s, b, pb);
                    if (distance2(pb, pa, dims) < r2) expect.push_back({a, b});
                }
            }
            std::vector<hashgrid::Pair> got[2];
            for (int b = 0; b < 2; ++b) {
                got[b].assign(capacity + 1, {kSentinel, kSentinel});
                const hashgrid::QueryResult r = grids[b].find_pairs_with(ps, got[b].data(), capacity, backends[b]);
                if (bad != 0xffffffffu) {
                    FUZZ_CHECK(r.status.code == StatusCode::invalid_query && r.status.index == bad &&
                                   got[b][0].a == kSentinel,
                               "find_pairs_with: bad point not invalid_query at the lowest index");
                    continue;
                }
                check_output(r, expect, got[b], capacity, "find_pairs_with differs from brute force");
            }
        }
    }

    // Batches: the concatenation of the single queries, on both backends.
    const uint32_t count = in.below(40);
    std::vector<float> qc[3];
    std::vector<float> qr(count);
    std::vector<hashgrid::QueryBox> boxes(count);
    for (uint32_t d = 0; d < 3; ++d)
        qc[d].assign(count, 0.0f);
    bool finite = true;
    for (uint32_t q = 0; q < count; ++q) {
        for (uint32_t d = 0; d < dims; ++d) {
            qc[d][q] = scene_float(in, c.origin[d], c.cell_size, 0);
            boxes[q].min[d] = qc[d][q];
            boxes[q].max[d] = qc[d][q] + c.cell_size * static_cast<float>(in.below(4));
        }
        qr[q] = c.cell_size * static_cast<float>(in.below(4)) * 0.5f;
        finite = finite && std::isfinite(qr[q]);
    }
    (void)finite;
    const hashgrid::ParticleSpans qs{qc[0].data(), qc[1].data(), dims == 3 ? qc[2].data() : nullptr, qr.data(), count};
    const uint32_t k = 1 + in.below(8);
    const float md = in.flag() ? inf() : c.cell_size;
    const uint64_t capacity = in.flag() ? 100000 : in.below(64);
    for (int kind = 0; kind < 3; ++kind) {
        std::vector<uint32_t> single;
        std::vector<hashgrid::NearestHit> single_near;
        std::vector<uint64_t> expect_offsets(1, 0);
        for (uint32_t q = 0; q < count; ++q) {
            const float centre[3] = {qc[0][q], qc[1][q], qc[2][q]};
            std::vector<uint32_t> r;
            if (kind == 0) r = radius_oracle(s, centre, qr[q]);
            if (kind == 1) r = box_oracle(s, boxes[q]);
            if (kind == 2) {
                const auto nn = nearest_oracle(s, centre, k, md);
                single_near.insert(single_near.end(), nn.begin(), nn.end());
                expect_offsets.push_back(expect_offsets.back() + nn.size());
                continue;
            }
            single.insert(single.end(), r.begin(), r.end());
            expect_offsets.push_back(expect_offsets.back() + r.size());
        }
        for (int b = 0; b < 2; ++b) {
            std::vector<uint64_t> offsets(count + 1, ~uint64_t{0});
            std::vector<uint32_t> out(capacity + 1, kSentinel);
            std::vector<hashgrid::NearestHit> near_out(capacity + 1, {kSentinel, 0.0f});
            hashgrid::QueryResult r;
            if (kind == 0)
                r = query_radius_batch(grids[b], spheres_of(qs).data(), (qs).count, offsets.data(), count + 1,
                                       out.data(), capacity, backends[b]);
            if (kind == 1)
                r = query_box_batch(grids[b], boxes.data(), count, offsets.data(), count + 1, out.data(), capacity,
                                    backends[b]);
            if (kind == 2)
                r = query_nearest_batch(grids[b], nearests_of(qs, k, md).data(), (qs).count, offsets.data(), count + 1,
                                        near_out.data(), capacity, backends[b]);
            FUZZ_CHECK(offsets == expect_offsets, "batched query: offsets differ from the single queries");
            if (kind == 2)
                check_output(r, single_near, near_out, capacity, "query_nearest_batch differs from the single queries");
            else
                check_output(r, single, out, capacity, "batched query differs from the single queries");
        }
    }
}

// ---------------------------------------------------------------------------
// Boxes.

float my_point_box_distance2(const float p[3], const float lo[3], const float hi[3], uint32_t dims) {
    float d[3] = {0.0f, 0.0f, 0.0f};
    for (uint32_t a = 0; a < dims; ++a)
        d[a] = p[a] < lo[a] ? lo[a] - p[a] : (p[a] > hi[a] ? p[a] - hi[a] : 0.0f);
    const float xy = d[0] * d[0] + d[1] * d[1];
    return dims == 3 ? xy + d[2] * d[2] : xy;
}

bool my_ray_box_hit(const hashgrid::Ray& ray, const float lo[3], const float hi[3], uint32_t dims, float& t) {
    double enter = 0.0;
    double exit = ray.max_t;
    for (uint32_t a = 0; a < dims; ++a) {
        const double o = ray.origin[a];
        if (ray.direction[a] == 0.0f) {
            if (!(lo[a] <= ray.origin[a] && ray.origin[a] <= hi[a])) return false;
            continue;
        }
        double t1 = (static_cast<double>(lo[a]) - o) / static_cast<double>(ray.direction[a]);
        double t2 = (static_cast<double>(hi[a]) - o) / static_cast<double>(ray.direction[a]);
        if (t1 > t2) std::swap(t1, t2);
        enter = std::max(enter, t1);
        exit = std::min(exit, t2);
    }
    if (!(enter <= exit)) return false;
    t = static_cast<float>(enter);
    return true;
}

/// Set-query order of box_queries.h: small objects by the cell of
/// max(query.min, object.min), then index; large objects last by index.
std::vector<uint32_t> set_order(const BoxScene& s, const BoxExpected& e, std::vector<uint32_t> found,
                                const float qmin[3]) {
    auto key = [&](uint32_t i) {
        if (e.large[i]) return std::array<int64_t, 5>{1, 0, 0, 0, i};
        float lo[3], hi[3], corner[3];
        box_of(s, i, lo, hi);
        for (uint32_t d = 0; d < 3; ++d)
            corner[d] = std::max(qmin[d], lo[d]);
        const std::array<int64_t, 3> cell = reporting_cell(s.config, corner);
        return std::array<int64_t, 5>{0, cell[0], cell[1], cell[2], i};
    };
    std::sort(found.begin(), found.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    return found;
}

template <typename T>
void check_query(const hashgrid::QueryResult& r, const std::vector<T>& expect, const std::vector<T>& out,
                 uint32_t capacity, bool ordered, const char* what) {
    FUZZ_CHECK(r.total == expect.size(), what);
    FUZZ_CHECK(r.written == std::min<uint64_t>(capacity, expect.size()), what);
    FUZZ_CHECK(r.status.code == (capacity < expect.size() ? StatusCode::output_too_small : StatusCode::ok), what);
    if (ordered) {
        for (uint32_t k = 0; k < r.written; ++k)
            FUZZ_CHECK(std::memcmp(&out[k], &expect[k], sizeof(T)) == 0, what);
    } else if constexpr (std::is_same_v<T, uint32_t>) {
        if (r.written != expect.size()) return;
        std::vector<T> a(out.begin(), out.begin() + r.written);
        std::vector<T> b = expect;
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        FUZZ_CHECK(a == b, what);
    }
}

/// The visitor form of a set query against its buffer form (r, out): the
/// calls give out's prefix in order, and a visitor that stops after
/// `capacity` calls (never, for 0) is called exactly min(capacity, total) times.
template <typename Run>
void check_visitor(const hashgrid::QueryResult& r, const std::vector<uint32_t>& out, uint32_t capacity, Run&& run,
                   const char* what) {
    struct Seen {
        std::vector<uint32_t> got;
        uint64_t stop;
    };
    Seen seen{{}, capacity == 0 ? ~uint64_t{0} : capacity};
    const hashgrid::QueryVisitor visitor{[](void* context, uint32_t index) {
                                             auto* v = static_cast<Seen*>(context);
                                             v->got.push_back(index);
                                             return v->got.size() < v->stop;
                                         },
                                         &seen};
    const hashgrid::QueryResult v = run(visitor);
    const uint64_t want = std::min(seen.stop, r.total);
    FUZZ_CHECK(v.status.ok() && v.total == want && v.written == 0 && seen.got.size() == want, what);
    FUZZ_CHECK(std::equal(seen.got.begin(), seen.got.begin() + static_cast<std::ptrdiff_t>(std::min(want, r.written)),
                          out.begin()),
               what);
}

void box_queries(Input& in) {
    BoxScene s;
    s.config = make_box_config(in);
    if (s.config.world == hashgrid::World::bounded) s.config.out_of_bounds = hashgrid::OutOfBounds::clamp;
    s.config.max_cell_entries = 1u << 20;
    s.config.max_objects = 200;
    make_boxes(in, s, in.flag() ? 200u : 30u);
    for (uint32_t i = 0; i < s.size(); ++i) // a valid scene: finite, min <= max
        for (uint32_t d = 0; d < s.config.dimensions; ++d) {
            if (!std::isfinite(s.lo[d][i]) || std::fabs(s.lo[d][i]) > 1e6f) s.lo[d][i] = s.config.origin[d];
            if (!std::isfinite(s.hi[d][i]) || std::fabs(s.hi[d][i]) > 1e6f) s.hi[d][i] = s.lo[d][i];
            if (s.hi[d][i] < s.lo[d][i]) std::swap(s.lo[d][i], s.hi[d][i]);
        }
    const BoxExpected e = expect_box_rebuild(s);
    if (e.code != StatusCode::ok) return; // e.g. a box beyond the key range: box_grid covers that
    // Exactly the entries needed: the block stays small, so inputs run fast.
    s.config.max_cell_entries = static_cast<uint32_t>(e.entries + 1);
    hashgrid::BoxGrid grids[2];
    const hashgrid::ThreadBackend backends[2] = {serial(), threaded()};
    hashgrid::BoxQueryGrid qg[2];
    for (int b = 0; b < 2; ++b) {
        FUZZ_CHECK(grids[b].init_allocate(s.config).ok(), "box query grid init failed");
        FUZZ_CHECK(grids[b].rebuild(s.spans(), backends[b]).ok(), "box query grid rebuild failed");
        qg[b] = hashgrid::prepare_box_queries(grids[b].view(), backends[b]);
    }
    const uint32_t dims = s.config.dimensions;
    const float cell = s.config.cell_size;
    const uint32_t queries = 1 + in.below(12);
    for (uint32_t q = 0; q < queries; ++q) {
        float p[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t d = 0; d < dims; ++d)
            p[d] = query_float(in, s.config.origin[d], cell);
        const bool p_ok = finite_point(p, dims);
        static const uint32_t layer_masks[] = {hashgrid::kAllLayers, 1, 2, 4, 0, 6};
        const uint32_t layers = in.pick(layer_masks);
        const uint32_t capacity = in.flag() ? 400u : in.below(6);
        std::vector<uint32_t> out(capacity + 1, kSentinel);
        std::vector<uint32_t> expect;
        const uint8_t kind = in.byte() % 7;
        auto visible = [&](uint32_t i) { return (s.cat(i) & layers) != 0; };
        if (kind == 0) { // point
            const hashgrid::QueryPoint point{{p[0], p[1], p[2]}};
            const hashgrid::QueryResult r = hashgrid::query_point(qg[0], point, layers, out.data(), capacity);
            if (!p_ok) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query, "query_point: non-finite point accepted");
                continue;
            }
            check_visitor(
                r, out, capacity,
                [&](hashgrid::QueryVisitor v) { return hashgrid::query_point(qg[0], point, layers, v); },
                "query_point: the visitor form differs");
            for (uint32_t i = 0; i < s.size(); ++i) {
                float lo[3], hi[3];
                box_of(s, i, lo, hi);
                if (visible(i) && boxes_overlap(lo, hi, p, p, dims)) expect.push_back(i);
            }
            check_query(r, set_order(s, e, expect, p), out, capacity, true, "query_point differs from brute force");
        } else if (kind == 1) { // box
            hashgrid::QueryBox bq;
            bool ok = true;
            for (uint32_t d = 0; d < 3; ++d) {
                bq.min[d] = d < dims ? p[d] : 0.0f;
                bq.max[d] = d < dims ? query_float(in, s.config.origin[d], cell) : 0.0f;
                if (d < dims && in.below(6) == 0) bq.max[d] = inf();
                ok = ok && !std::isnan(bq.min[d]) && !std::isnan(bq.max[d]) && bq.min[d] <= bq.max[d];
            }
            const hashgrid::QueryResult r = hashgrid::query_box(qg[0], bq, layers, out.data(), capacity);
            if (!ok) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query, "query_box: bad box accepted");
                continue;
            }
            check_visitor(
                r, out, capacity, [&](hashgrid::QueryVisitor v) { return hashgrid::query_box(qg[0], bq, layers, v); },
                "query_box: the visitor form differs");
            for (uint32_t i = 0; i < s.size(); ++i) {
                float lo[3], hi[3];
                box_of(s, i, lo, hi);
                if (visible(i) && boxes_overlap(lo, hi, bq.min, bq.max, dims)) expect.push_back(i);
            }
            check_query(r, set_order(s, e, expect, bq.min), out, capacity, true, "query_box differs from brute force");
        } else if (kind == 2) { // radius
            const float radius = query_radius_value(in, cell);
            const hashgrid::QuerySphere sphere{{p[0], p[1], p[2]}, radius};
            const hashgrid::QueryResult r = hashgrid::query_radius(qg[0], sphere, layers, out.data(), capacity);
            if (!p_ok || std::isnan(radius) || radius < 0.0f) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query, "query_radius: bad parameters accepted");
                continue;
            }
            check_visitor(
                r, out, capacity,
                [&](hashgrid::QueryVisitor v) { return hashgrid::query_radius(qg[0], sphere, layers, v); },
                "query_radius: the visitor form differs");
            for (uint32_t i = 0; i < s.size(); ++i) {
                float lo[3], hi[3];
                box_of(s, i, lo, hi);
                const float d2 = my_point_box_distance2(p, lo, hi, dims);
                const float lib = hashgrid::point_box_distance2(p, lo, hi, dims);
                FUZZ_CHECK(std::memcmp(&d2, &lib, sizeof d2) == 0, "point_box_distance2 differs from its header rule");
                if (visible(i) && d2 <= radius * radius) expect.push_back(i);
            }
            check_query(r, expect, out, capacity, false, "query_radius differs from brute force");
        } else if (kind == 3) { // ray / segment
            hashgrid::Ray rq;
            static const float dirs[] = {0.0f, 1.0f, -1.0f, 0.5f, -0.25f, 3.0f, 1e-30f, -0.0f};
            float end[3] = {0.0f, 0.0f, 0.0f};
            const bool segment = in.flag();
            for (uint32_t d = 0; d < dims; ++d) {
                rq.origin[d] = p[d];
                rq.direction[d] = in.pick(dirs);
                end[d] = query_float(in, s.config.origin[d], cell);
            }
            if (segment)
                rq = hashgrid::segment_ray(p, end);
            else
                rq.max_t = in.flag() ? inf() : query_radius_value(in, cell * 4.0f);
            const bool ok = finite_point(rq.origin, dims) && finite_point(rq.direction, dims) &&
                            !std::isnan(rq.max_t) && rq.max_t >= 0.0f;
            std::vector<hashgrid::RayHit> hits(capacity + 1, {kSentinel, 0.0f});
            const hashgrid::QueryResult r = hashgrid::query_ray(qg[0], rq, layers, hits.data(), capacity);
            hashgrid::RayHit first{kSentinel, 0.0f};
            const hashgrid::QueryResult r1 = hashgrid::query_ray_first(qg[0], rq, layers, &first);
            if (!ok) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query && r1.status.code == StatusCode::invalid_query,
                           "query_ray: bad ray accepted");
                continue;
            }
            std::vector<hashgrid::RayHit> want;
            for (uint32_t i = 0; i < s.size(); ++i) {
                float lo[3], hi[3];
                box_of(s, i, lo, hi);
                float t = 0.0f;
                float lib_t = 0.0f;
                const bool hit = my_ray_box_hit(rq, lo, hi, dims, t);
                const bool lib_hit = hashgrid::ray_box_hit(rq, lo, hi, dims, lib_t);
                FUZZ_CHECK(hit == lib_hit && (!hit || std::memcmp(&t, &lib_t, sizeof t) == 0),
                           "ray_box_hit differs from its header rule");
                if (hit && visible(i)) want.push_back({i, t});
            }
            std::sort(want.begin(), want.end(), [](const hashgrid::RayHit& a, const hashgrid::RayHit& b) {
                return a.t != b.t ? a.t < b.t : a.index < b.index;
            });
            check_query(r, want, hits, capacity, true, "query_ray differs from brute force");
            FUZZ_CHECK(r1.total == (want.empty() ? 0u : 1u), "query_ray_first: count");
            // Cost bound: whatever the ray, a search reads at most a few
            // scans' worth of the occupied cells (box_queries.h, query_ray).
            {
                const uint64_t bound = 16 * uint64_t{qg[0].view.cell_count} + 64;
                hashgrid::QueryStats all, one;
                uint64_t offsets[2] = {0, 0};
                const hashgrid::QueryResult rb =
                    hashgrid::query_ray_batch(qg[0], &rq, 1, layers, offsets, 2, hits.data(), capacity, serial(), &all);
                hashgrid::RayHit first_b{kSentinel, 0.0f};
                const hashgrid::QueryResult rf =
                    hashgrid::query_ray_first_batch(qg[0], &rq, 1, layers, &first_b, serial(), &one);
                FUZZ_CHECK(rb.total == r.total && rf.total == r1.total, "ray batches: totals differ");
                FUZZ_CHECK(all.cells <= bound && one.cells <= bound,
                           "query_ray: more cells read than a few scans of the occupied cells");
            }
            if (want.empty()) FUZZ_CHECK(first.index == hashgrid::kNoIndex, "query_ray_first: a miss is not kNoIndex");
            if (!want.empty())
                FUZZ_CHECK(first.index == want[0].index && std::memcmp(&first.t, &want[0].t, sizeof(float)) == 0,
                           "query_ray_first is not the first hit");
        } else if (kind == 4) { // frustum
            hashgrid::Plane planes[hashgrid::kMaxFrustumPlanes + 1];
            const uint32_t count = in.below(hashgrid::kMaxFrustumPlanes + 2);
            static const float normals[] = {0.0f, 1.0f, -1.0f, 0.5f, -0.25f, 2.0f, -0.0f};
            bool ok = count >= 1 && count <= hashgrid::kMaxFrustumPlanes;
            for (uint32_t k = 0; k < count; ++k) {
                for (float& v : planes[k].normal)
                    v = in.pick(normals);
                planes[k].d = query_float(in, 0.0f, cell * 4.0f);
                ok = ok && std::isfinite(planes[k].d);
            }
            hashgrid::Frustum frustum;
            frustum.plane_count = count;
            std::copy(planes, planes + std::min(count, hashgrid::kMaxFrustumPlanes), frustum.planes);
            const hashgrid::QueryResult r = hashgrid::query_frustum(qg[0], frustum, layers, out.data(), capacity);
            if (!ok) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query, "query_frustum: bad planes accepted");
                continue;
            }
            check_visitor(
                r, out, capacity,
                [&](hashgrid::QueryVisitor v) { return hashgrid::query_frustum(qg[0], frustum, layers, v); },
                "query_frustum: the visitor form differs");
            for (uint32_t i = 0; i < s.size(); ++i) {
                float lo[3], hi[3];
                box_of(s, i, lo, hi);
                bool inside = visible(i);
                for (uint32_t k = 0; k < count && inside; ++k) {
                    const float* nrm = planes[k].normal;
                    float c3[3];
                    for (uint32_t d = 0; d < 3; ++d)
                        c3[d] = nrm[d] >= 0.0f ? hi[d] : lo[d];
                    const float xy = nrm[0] * c3[0] + nrm[1] * c3[1];
                    const float v = dims == 3 ? (xy + nrm[2] * c3[2]) + planes[k].d : xy + planes[k].d;
                    inside = !(v < 0.0f);
                }
                if (inside) expect.push_back(i);
            }
            check_query(r, expect, out, capacity, false, "query_frustum differs from brute force");
        } else if (kind == 5) { // nearest
            hashgrid::QueryNearest nq;
            for (uint32_t d = 0; d < 3; ++d)
                nq.center[d] = p[d];
            nq.max_distance = in.flag() ? inf() : query_radius_value(in, cell);
            const uint32_t k = in.below(6) == 0 ? 0u : 1 + in.below(12);
            nq.k = k;
            std::vector<hashgrid::NearestHit> hits(capacity + 1, {kSentinel, 0.0f});
            const hashgrid::QueryResult r = hashgrid::query_nearest(qg[0], nq, layers, hits.data(), capacity);
            if (!p_ok || k == 0 || std::isnan(nq.max_distance) || nq.max_distance < 0.0f) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query, "query_nearest: bad parameters accepted");
                continue;
            }
            std::vector<hashgrid::NearestHit> want;
            const float limit = nq.max_distance * nq.max_distance;
            for (uint32_t i = 0; i < s.size(); ++i) {
                float lo[3], hi[3];
                box_of(s, i, lo, hi);
                const float d2 = my_point_box_distance2(p, lo, hi, dims);
                if (visible(i) && d2 <= limit) want.push_back({i, d2});
            }
            std::sort(want.begin(), want.end(), [](const hashgrid::NearestHit& a, const hashgrid::NearestHit& b) {
                return a.distance_squared != b.distance_squared ? a.distance_squared < b.distance_squared
                                                                : a.index < b.index;
            });
            if (want.size() > k) want.resize(k);
            check_query(r, want, hits, capacity, true, "query_nearest differs from brute force");
        } else { // potential collisions
            const uint32_t object = in.below(s.size() + 2);
            const hashgrid::QueryResult r = hashgrid::query_potential_collisions(qg[0], object, out.data(), capacity);
            if (object >= s.size()) {
                FUZZ_CHECK(!r.status.ok() && out[0] == kSentinel, "query_potential_collisions: bad object accepted");
                continue;
            }
            float olo[3], ohi[3];
            box_of(s, object, olo, ohi);
            for (uint32_t i = 0; i < s.size(); ++i) {
                float lo[3], hi[3];
                box_of(s, i, lo, hi);
                if (i != object && boxes_overlap(lo, hi, olo, ohi, dims) && (s.cat(i) & s.msk(object)) != 0 &&
                    (s.cat(object) & s.msk(i)) != 0)
                    expect.push_back(i);
            }
            check_query(r, set_order(s, e, expect, olo), out, capacity, true,
                        "query_potential_collisions differs from brute force");
            check_visitor(
                r, out, capacity,
                [&](hashgrid::QueryVisitor v) { return hashgrid::query_potential_collisions(qg[0], object, v); },
                "query_potential_collisions: the visitor form differs");
        }
    }

    // Batches against single queries, on both backends (every layer).
    const uint32_t all = hashgrid::kAllLayers;
    const uint32_t count = in.below(40);
    std::vector<hashgrid::QueryPoint> points(count);
    std::vector<hashgrid::QueryBox> boxq(count);
    std::vector<hashgrid::QuerySphere> radii(count);
    std::vector<hashgrid::Ray> rays(count);
    std::vector<hashgrid::QueryNearest> nearest(count);
    std::vector<hashgrid::Frustum> frusta(count);
    for (uint32_t q = 0; q < count; ++q) {
        for (uint32_t d = 0; d < dims; ++d) {
            const float v = scene_float(in, s.config.origin[d], cell, 0);
            points[q].position[d] = boxq[q].min[d] = radii[q].center[d] = rays[q].origin[d] = nearest[q].center[d] = v;
            boxq[q].max[d] = v + cell * static_cast<float>(in.below(4));
            rays[q].direction[d] = static_cast<float>(static_cast<int>(in.below(5)) - 2);
        }
        radii[q].radius = cell * static_cast<float>(in.below(4));
        rays[q].max_t = static_cast<float>(in.below(8));
    }
    const uint64_t capacity = in.flag() ? 100000 : in.below(64);
    const uint32_t k = 1 + in.below(6);
    for (uint32_t q = 0; q < count; ++q) {
        nearest[q].k = 1 + (k + q) % 6; // k varies per query
        // The box of query q as a frustum: x >= min and x <= max per axis.
        for (uint32_t d = 0; d < dims; ++d) {
            hashgrid::Plane low, high;
            low.normal[d] = 1.0f;
            low.d = -boxq[q].min[d];
            high.normal[d] = -1.0f;
            high.d = boxq[q].max[d];
            frusta[q].planes[frusta[q].plane_count++] = low;
            frusta[q].planes[frusta[q].plane_count++] = high;
        }
    }
    // Single queries, concatenated: points, boxes, spheres, frusta; rays; nearest.
    std::vector<uint32_t> single[4];
    std::vector<uint64_t> single_offsets[4];
    std::vector<hashgrid::RayHit> single_rays;
    std::vector<uint64_t> ray_offsets(1, 0);
    std::vector<hashgrid::RayHit> firsts(count);
    std::vector<hashgrid::NearestHit> single_nearest;
    std::vector<uint64_t> nearest_offsets(1, 0);
    for (auto& o : single_offsets)
        o.assign(1, 0);
    for (uint32_t q = 0; q < count; ++q) {
        std::vector<uint32_t> tmp(s.size() + 1);
        for (int j = 0; j < 4; ++j) {
            hashgrid::QueryResult r;
            if (j == 0) r = hashgrid::query_point(qg[0], points[q], all, tmp.data(), tmp.size());
            if (j == 1) r = hashgrid::query_box(qg[0], boxq[q], all, tmp.data(), tmp.size());
            if (j == 2) r = hashgrid::query_radius(qg[0], radii[q], all, tmp.data(), tmp.size());
            if (j == 3) r = hashgrid::query_frustum(qg[0], frusta[q], all, tmp.data(), tmp.size());
            single[j].insert(single[j].end(), tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(r.written));
            single_offsets[j].push_back(single_offsets[j].back() + r.written);
        }
        std::vector<hashgrid::RayHit> hits(s.size() + 1);
        const hashgrid::QueryResult rr = hashgrid::query_ray(qg[0], rays[q], all, hits.data(), s.size() + 1);
        single_rays.insert(single_rays.end(), hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(rr.written));
        ray_offsets.push_back(ray_offsets.back() + rr.written);
        const hashgrid::QueryResult rq = hashgrid::query_ray_first(qg[0], rays[q], all, &firsts[q]);
        FUZZ_CHECK(rq.status.code == rr.status.code, "query_ray_first and query_ray disagree on a ray's status");
        std::vector<hashgrid::NearestHit> nearest_hits(nearest[q].k);
        const hashgrid::QueryResult rn =
            hashgrid::query_nearest(qg[0], nearest[q], all, nearest_hits.data(), nearest_hits.size());
        single_nearest.insert(single_nearest.end(), nearest_hits.begin(),
                              nearest_hits.begin() + static_cast<std::ptrdiff_t>(rn.written));
        nearest_offsets.push_back(nearest_offsets.back() + rn.written);
    }
    for (int b = 0; b < 2; ++b) {
        for (int j = 0; j < 4; ++j) {
            std::vector<uint64_t> offsets(count + 1, ~uint64_t{0});
            std::vector<uint32_t> out(capacity + 1, kSentinel);
            hashgrid::QueryResult r;
            if (j == 0)
                r = hashgrid::query_point_batch(qg[b], points.data(), count, all, offsets.data(), offsets.size(),
                                                out.data(), capacity, backends[b]);
            if (j == 1)
                r = hashgrid::query_box_batch(qg[b], boxq.data(), count, all, offsets.data(), offsets.size(),
                                              out.data(), capacity, backends[b]);
            if (j == 2)
                r = hashgrid::query_radius_batch(qg[b], radii.data(), count, all, offsets.data(), offsets.size(),
                                                 out.data(), capacity, backends[b]);
            if (j == 3)
                r = hashgrid::query_frustum_batch(qg[b], frusta.data(), count, all, offsets.data(), offsets.size(),
                                                  out.data(), capacity, backends[b]);
            FUZZ_CHECK(r.total == single[j].size() && r.written == std::min<uint64_t>(capacity, r.total),
                       "box batch: total/written");
            FUZZ_CHECK(r.status.code == (capacity < r.total ? StatusCode::output_too_small : StatusCode::ok),
                       "box batch: status");
            FUZZ_CHECK(offsets == single_offsets[j], "box batch: offsets differ from single queries");
            FUZZ_CHECK(std::equal(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(r.written), single[j].begin()),
                       "box batch: results differ from single queries");
            FUZZ_CHECK(out[r.written] == kSentinel, "box batch: written past its results");
        }
        std::vector<uint64_t> offsets(count + 1, ~uint64_t{0});
        std::vector<hashgrid::RayHit> out(capacity + 1);
        const hashgrid::QueryResult rr = hashgrid::query_ray_batch(qg[b], rays.data(), count, all, offsets.data(),
                                                                   offsets.size(), out.data(), capacity, backends[b]);
        FUZZ_CHECK(rr.total == single_rays.size() && offsets == ray_offsets, "query_ray_batch: totals/offsets");
        for (uint64_t i = 0; i < rr.written; ++i)
            FUZZ_CHECK(out[i].index == single_rays[i].index &&
                           std::memcmp(&out[i].t, &single_rays[i].t, sizeof(float)) == 0,
                       "query_ray_batch differs from single queries");
        std::vector<hashgrid::RayHit> fo(count);
        const hashgrid::QueryResult rf =
            hashgrid::query_ray_first_batch(qg[b], rays.data(), count, all, fo.data(), backends[b]);
        uint64_t hit_count = 0;
        for (uint32_t q = 0; q < count; ++q) {
            hit_count += firsts[q].index != hashgrid::kNoIndex;
            FUZZ_CHECK(fo[q].index == firsts[q].index && (fo[q].index == hashgrid::kNoIndex ||
                                                          std::memcmp(&fo[q].t, &firsts[q].t, sizeof(float)) == 0),
                       "query_ray_first_batch differs from single queries");
        }
        FUZZ_CHECK(rf.total == hit_count, "query_ray_first_batch: total");
        std::vector<uint64_t> near_offsets(count + 1, ~uint64_t{0});
        std::vector<hashgrid::NearestHit> no(capacity + 1);
        const hashgrid::QueryResult rn =
            hashgrid::query_nearest_batch(qg[b], nearest.data(), count, all, near_offsets.data(), near_offsets.size(),
                                          no.data(), capacity, backends[b]);
        FUZZ_CHECK(rn.total == single_nearest.size() && near_offsets == nearest_offsets,
                   "query_nearest_batch: totals/offsets");
        for (uint64_t i = 0; i < rn.written; ++i)
            FUZZ_CHECK(no[i].index == single_nearest[i].index &&
                           std::memcmp(&no[i].distance_squared, &single_nearest[i].distance_squared, sizeof(float)) ==
                               0,
                       "query_nearest_batch differs from single queries");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    install_resume_hook();
    Input in(data, size);
    if (in.flag())
        box_queries(in);
    else
        particle_queries(in);
    return 0;
}

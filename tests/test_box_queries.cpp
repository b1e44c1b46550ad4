// SPDX-License-Identifier: MIT
// Box-grid queries (box_queries.h) against brute force over every object.
//
// Views come from two builders: a small independent reference builder here
// (std::vector + std::stable_sort of (packed key, object) entries, the
// contract of box_grid.h written out directly) and the real BoxGrid, whose
// view must equal the reference one. Every query kind runs on random 2D/3D
// scenes (bounded reject/clamp, unbounded; zero-size to world-spanning boxes,
// boxes touching exactly, coordinates on cell boundaries) and is compared with
// an oracle that repeats the documented float arithmetic over all objects.
//
// HASHGRID_TEST_SCALE (test_support.h, default 1) scales the random scene and query counts;
// HASHGRID_PRINT_GOLDEN=1 prints the golden hashes of query results.
#include <doctest/doctest.h>

#include "continue_on_assert.h"
#include "golden_hashes.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid_support/box_scene.h"
#include "test_support.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace hashgrid_test;
using hashgrid::BoxGridConfig;
using hashgrid::BoxGridView;
using hashgrid::BoxQueryGrid;
using hashgrid::Frustum;
using hashgrid::NearestHit;
using hashgrid::QueryBox;
using hashgrid::QueryNearest;
using hashgrid::QueryPoint;
using hashgrid::QueryResult;
using hashgrid::QuerySphere;
using hashgrid::Ray;
using hashgrid::RayHit;
using hashgrid::StatusCode;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool print_golden() {
    const char* s = std::getenv("HASHGRID_PRINT_GOLDEN");
    return s != nullptr && s[0] == '1';
}

// ---------------------------------------------------------------------------
// Scenes of boxes.

using Boxes = hashgrid_support::BoxScene;

/// Cell coordinate as box_grid.h defines it (clamped into the key range / world).
int32_t ref_cell(const BoxGridConfig& c, uint32_t d, float p) {
    const double f = std::floor(hashgrid::scaled_coordinate(p, c.origin[d], hashgrid::key_scale(c.cell_size)));
    double lo, hi;
    if (c.world == hashgrid::World::bounded) {
        lo = 0.0;
        hi = static_cast<double>(c.cell_counts[d]) - 1.0;
    } else {
        hi = c.dimensions == 3 ? hashgrid::kKeyLimit3 : hashgrid::kKeyLimit2;
        lo = -hi;
    }
    return static_cast<int32_t>(std::clamp(f, lo, hi));
}

/// Unbounded worlds: a coordinate whose cell lies beyond the key range (such
/// an object is kept with the large objects, box_grid.h).
bool ref_far(const BoxGridConfig& c, uint32_t d, float p) {
    if (c.world == hashgrid::World::bounded) return false;
    const double f = std::floor(hashgrid::scaled_coordinate(p, c.origin[d], hashgrid::key_scale(c.cell_size)));
    const double limit = c.dimensions == 3 ? hashgrid::kKeyLimit3 : hashgrid::kKeyLimit2;
    return !(f >= -limit && f <= limit);
}

uint64_t ref_key(const BoxGridConfig& c, const int32_t at[3]) {
    return c.dimensions == 3 ? hashgrid::pack_key3(at[0], at[1], at[2]) : hashgrid::pack_key2(at[0], at[1]);
}

/// The smallest float whose cell is k on axis d (a cell boundary as a float).
float boundary_float(const BoxGridConfig& c, uint32_t d, int32_t k) {
    float b = static_cast<float>(static_cast<double>(c.origin[d]) +
                                 static_cast<double>(k) * static_cast<double>(c.cell_size) * hashgrid::kCellGuard);
    for (int i = 0; i < 64 && ref_cell(c, d, b) >= k; ++i)
        b = std::nextafter(b, -kInf);
    for (int i = 0; i < 64 && ref_cell(c, d, b) < k; ++i)
        b = std::nextafter(b, kInf);
    return b;
}

/// The independent reference view: every small object in every cell it
/// covers, entries stably sorted by packed key (so ascending object index
/// within a cell), large objects apart.
struct RefGrid {
    BoxGridConfig config;
    Boxes boxes;
    std::vector<uint64_t> keys;
    std::vector<uint32_t> start, entry, large;

    RefGrid(const BoxGridConfig& c, const Boxes& b) : config(c), boxes(b) {
        std::vector<std::pair<uint64_t, uint32_t>> entries;
        for (uint32_t i = 0; i < b.size(); ++i) {
            int32_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
            uint64_t cells = 1;
            bool beyond = false;
            for (uint32_t d = 0; d < c.dimensions; ++d) {
                lo[d] = ref_cell(c, d, b.lo[d][i]);
                hi[d] = ref_cell(c, d, b.hi[d][i]);
                cells *= static_cast<uint64_t>(int64_t{hi[d]} - lo[d] + 1);
                beyond = beyond || ref_far(c, d, b.lo[d][i]) || ref_far(c, d, b.hi[d][i]);
            }
            if (beyond || cells > c.large_object_cells) {
                large.push_back(i);
                continue;
            }
            int32_t at[3];
            for (at[2] = lo[2]; at[2] <= hi[2]; ++at[2])
                for (at[1] = lo[1]; at[1] <= hi[1]; ++at[1])
                    for (at[0] = lo[0]; at[0] <= hi[0]; ++at[0])
                        entries.emplace_back(ref_key(c, at), i);
        }
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& l, const auto& r) { return l.first < r.first; });
        for (size_t e = 0; e < entries.size(); ++e) {
            if (e == 0 || entries[e].first != entries[e - 1].first) {
                keys.push_back(entries[e].first);
                start.push_back(static_cast<uint32_t>(e));
            }
            entry.push_back(entries[e].second);
        }
        start.push_back(static_cast<uint32_t>(entries.size()));
    }

    [[nodiscard]] BoxGridView view() const {
        BoxGridView v;
        v.config = &config;
        v.scale = hashgrid::key_scale(config.cell_size);
        v.object_count = boxes.size();
        for (uint32_t d = 0; d < 3; ++d) {
            v.min[d] = boxes.lo[d].data();
            v.max[d] = boxes.hi[d].data();
        }
        v.category = boxes.category.data();
        v.mask = boxes.mask.data();
        v.cell_count = static_cast<uint32_t>(keys.size());
        v.cell_key = keys.data();
        v.cell_start = start.data();
        v.entry_object = entry.data();
        v.large_count = static_cast<uint32_t>(large.size());
        v.large_object = large.data();
        return v;
    }
};

std::string compare_views(const BoxGridView& a, const BoxGridView& b, uint32_t dims) {
    if (a.object_count != b.object_count) return "object_count";
    if (a.cell_count != b.cell_count)
        return "cell_count " + std::to_string(a.cell_count) + " vs " + std::to_string(b.cell_count);
    if (a.large_count != b.large_count)
        return "large_count " + std::to_string(a.large_count) + " vs " + std::to_string(b.large_count);
    for (uint32_t c = 0; c < a.cell_count; ++c)
        if (a.cell_key[c] != b.cell_key[c] || a.cell_start[c + 1] != b.cell_start[c + 1])
            return "cell " + std::to_string(c);
    for (uint32_t e = 0; e < a.cell_start[a.cell_count]; ++e)
        if (a.entry_object[e] != b.entry_object[e]) return "entry " + std::to_string(e);
    for (uint32_t j = 0; j < a.large_count; ++j)
        if (a.large_object[j] != b.large_object[j]) return "large " + std::to_string(j);
    for (uint32_t i = 0; i < a.object_count; ++i)
        for (uint32_t d = 0; d < dims; ++d)
            if (float_bits(a.min[d][i]) != float_bits(b.min[d][i]) ||
                float_bits(a.max[d][i]) != float_bits(b.max[d][i]))
                return "box of object " + std::to_string(i);
    return "";
}

/// Results seen by the checks (so that a pass cannot be vacuous).
struct Coverage {
    uint64_t point = 0, box = 0, radius = 0, ray = 0, frustum = 0, nearest = 0, collisions = 0, large = 0;
};
Coverage g_coverage;

// ---------------------------------------------------------------------------
// Brute-force oracles: the documented arithmetic, over every object.

bool ref_in_layer(const Boxes& b, uint32_t i, uint32_t mask) { return (b.category[i] & mask) != 0; }

bool ref_overlap(const Boxes& b, uint32_t i, const float qlo[3], const float qhi[3]) {
    for (uint32_t d = 0; d < b.dims; ++d)
        if (!(b.lo[d][i] <= qhi[d] && qlo[d] <= b.hi[d][i])) return false;
    return true;
}

float ref_distance2(const Boxes& b, uint32_t i, const float p[3]) {
    float d2 = 0.0f;
    for (uint32_t d = 0; d < b.dims; ++d) {
        float v = 0.0f;
        if (p[d] < b.lo[d][i]) v = b.lo[d][i] - p[d];
        if (p[d] > b.hi[d][i]) v = p[d] - b.hi[d][i];
        d2 = d2 + rounded_mul(v, v);
    }
    return d2;
}

bool ref_ray(const Boxes& b, uint32_t i, const hashgrid::Ray& r, float& t) {
    double enter = 0.0, exit = r.max_t;
    for (uint32_t d = 0; d < b.dims; ++d) {
        if (r.direction[d] == 0.0f) {
            if (r.origin[d] < b.lo[d][i] || r.origin[d] > b.hi[d][i]) return false;
            continue;
        }
        const double o = r.origin[d], dir = r.direction[d];
        const double t1 = (double{b.lo[d][i]} - o) / dir;
        const double t2 = (double{b.hi[d][i]} - o) / dir;
        enter = std::max(enter, std::min(t1, t2));
        exit = std::min(exit, std::max(t1, t2));
    }
    if (!(enter <= exit)) return false;
    t = static_cast<float>(enter);
    return true;
}

bool ref_frustum(const Boxes& b, uint32_t i, const Frustum& frustum) {
    for (uint32_t k = 0; k < frustum.plane_count; ++k) {
        const hashgrid::Plane& p = frustum.planes[k];
        float v = 0.0f;
        for (uint32_t d = 0; d < b.dims; ++d) {
            const float corner = p.normal[d] >= 0.0f ? b.hi[d][i] : b.lo[d][i];
            v = d == 0 ? rounded_mul(p.normal[d], corner) : v + rounded_mul(p.normal[d], corner);
        }
        if (v + p.d < 0.0f) return false;
    }
    return true;
}

/// Documented order of set queries: small objects by the key of their
/// reporting cell max(query_cell_lo, cell(object.min)), then by index; then
/// large objects by index. `report_lo` is the query's low cell (or null for
/// "the object's own minimum cell").
std::vector<uint32_t> in_set_order(const RefGrid& g, std::vector<uint32_t> objects, const int32_t* report_lo) {
    std::vector<bool> is_large(g.boxes.size(), false);
    for (uint32_t j : g.large)
        is_large[j] = true;
    auto order_key = [&](uint32_t i) {
        if (is_large[i]) return ~uint64_t{0};
        int32_t at[3] = {0, 0, 0};
        for (uint32_t d = 0; d < g.config.dimensions; ++d) {
            at[d] = ref_cell(g.config, d, g.boxes.lo[d][i]);
            if (report_lo != nullptr) at[d] = std::max(at[d], report_lo[d]);
        }
        return ref_key(g.config, at);
    };
    std::stable_sort(objects.begin(), objects.end(), [&](uint32_t a, uint32_t b) {
        const uint64_t ka = order_key(a), kb = order_key(b);
        return ka != kb ? ka < kb : a < b;
    });
    return objects;
}

std::vector<uint32_t> sorted(std::vector<uint32_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

// ---------------------------------------------------------------------------
// Random scenes.

struct SceneSpec {
    uint32_t dims;
    hashgrid::World world;
    hashgrid::OutOfBounds oob;
    float cell;
    float origin;
    uint32_t cells_per_axis; // bounded: world size in cells
    uint32_t large_cells;
};

BoxGridConfig make_config(const SceneSpec& s, uint32_t n) {
    BoxGridConfig c;
    c.dimensions = s.dims;
    c.cell_size = s.cell;
    c.world = s.world;
    c.out_of_bounds = s.oob;
    for (uint32_t d = 0; d < 3; ++d) {
        c.origin[d] = d < s.dims ? s.origin : 0.0f;
        c.cell_counts[d] = s.world == hashgrid::World::bounded ? (d < s.dims ? s.cells_per_axis : 1u) : 0u;
    }
    c.max_objects = std::max<uint32_t>(n, 1);
    c.max_cell_entries = std::max<uint32_t>(n * s.large_cells + 1, 1);
    c.max_pairs = 1;
    c.large_object_cells = s.large_cells;
    return c;
}

/// World extent of a spec: [lo, hi) (bounded: the world; unbounded: a region).
void spec_extent(const SceneSpec& s, float& lo, float& hi) {
    lo = s.origin;
    hi = s.origin + static_cast<float>(s.cells_per_axis) * s.cell;
}

/// A coordinate of some kind: uniform, an integer, or a cell boundary.
float pick_coordinate(Rng& rng, const BoxGridConfig& c, uint32_t d, float lo, float hi) {
    const uint32_t kind = rng.below(4);
    if (kind == 0) return static_cast<float>(rng.between(static_cast<int32_t>(lo), static_cast<int32_t>(hi)));
    if (kind == 1) {
        const int32_t k = rng.between(ref_cell(c, d, lo), ref_cell(c, d, hi));
        return boundary_float(c, d, k);
    }
    return rng.uniform(lo, hi);
}

Boxes random_boxes(Rng& rng, const SceneSpec& s, const BoxGridConfig& c, uint32_t n) {
    Boxes b;
    b.dims = s.dims;
    float lo, hi;
    spec_extent(s, lo, hi);
    const bool inside_only = s.world == hashgrid::World::bounded && s.oob == hashgrid::OutOfBounds::reject;
    // Bounded reject: keep boxes inside [lo, hi - margin]; clamp: let some reach out.
    const float room_lo = inside_only ? lo : lo - 3.0f * s.cell;
    const float room_hi = inside_only ? hi - 0.01f * s.cell : hi + 3.0f * s.cell;
    for (uint32_t i = 0; i < n; ++i) {
        float a[3] = {0, 0, 0}, e[3] = {0, 0, 0};
        const uint32_t kind = rng.below(12);
        for (uint32_t d = 0; d < s.dims; ++d) {
            switch (kind) {
            case 0: // zero size
                a[d] = pick_coordinate(rng, c, d, room_lo, room_hi);
                e[d] = a[d];
                break;
            case 1: { // integer / boundary aligned
                a[d] = pick_coordinate(rng, c, d, room_lo, room_hi);
                const float w = static_cast<float>(rng.below(3)) * s.cell;
                e[d] = a[d] + w;
                break;
            }
            case 2: // medium
                a[d] = rng.uniform(room_lo, room_hi);
                e[d] = a[d] + rng.uniform(0.0f, 4.0f * s.cell);
                break;
            case 3: // world spanning on this axis
                a[d] = room_lo;
                e[d] = room_hi;
                break;
            case 4: // touching the previous box exactly (shared face or corner)
                if (i > 0) {
                    const uint32_t p = i - 1;
                    const bool flip = rng.coin();
                    a[d] = flip ? b.hi[d][p] : b.lo[d][p];
                    e[d] = a[d] + rng.uniform(0.0f, s.cell);
                } else {
                    a[d] = e[d] = lo;
                }
                break;
            default: // small
                a[d] = rng.uniform(room_lo, room_hi);
                e[d] = a[d] + rng.uniform(0.0f, 0.8f * s.cell);
                break;
            }
            if (inside_only) {
                a[d] = std::clamp(a[d], lo, room_hi);
                e[d] = std::clamp(e[d], a[d], room_hi);
            }
        }
        const uint32_t cat = rng.below(5) == 0 ? 0xffffffffu : 1u << rng.below(4);
        const uint32_t msk = rng.below(3) == 0 ? 0xffffffffu : (1u << rng.below(4)) | (1u << rng.below(4));
        b.add(a, e, cat, msk);
    }
    return b;
}

// ---------------------------------------------------------------------------
// Real BoxGrid views.

struct RealGrid {
    hashgrid::BoxGrid grid;
    hashgrid::Status init, rebuild;
    RealGrid(const BoxGridConfig& c, const Boxes& b) {
        init = grid.init_allocate(c);
        if (init.ok()) rebuild = grid.rebuild(b.spans(), hashgrid::serial_backend());
    }
    [[nodiscard]] bool ok() const { return init.ok() && rebuild.ok(); }
};

// ---------------------------------------------------------------------------
// Checks of each query kind. Each returns "" or the first disagreement, and
// feeds the results into `h` (golden hashes).

/// A visitor that records what it is called with and returns false on call
/// number `stop_after`.
struct Visited {
    std::vector<uint32_t> seen;
    uint64_t stop_after = ~uint64_t{0};
    static bool visit(void* self, uint32_t index) {
        auto* v = static_cast<Visited*>(self);
        v->seen.push_back(index);
        return v->seen.size() < v->stop_after;
    }
};

/// The visitor form of a set query against its buffer form's output `full`:
/// the same sequence, and a stop after m results visits exactly the first m
/// (every m for short answers, else the first, middle and last few).
template <typename Run>
std::string check_visitor(const char* what, const std::vector<uint32_t>& full, Run&& run) {
    std::vector<uint64_t> stops = {~uint64_t{0}};
    const uint64_t n = full.size();
    for (uint64_t m = 1; m <= n; ++m)
        if (n <= 16 || m <= 2 || m == n / 2 || m + 2 >= n) stops.push_back(m);
    for (const uint64_t m : stops) {
        Visited v;
        v.stop_after = m;
        const QueryResult r = run(hashgrid::QueryVisitor{&Visited::visit, &v});
        const uint64_t want = std::min(m, n);
        const std::string at = std::string(what) + " visitor (stop after " + std::to_string(m) + "): ";
        if (!r.status.ok()) return at + "status " + hashgrid::to_string(r.status.code);
        if (r.total != want || r.written != 0) return at + "total " + std::to_string(r.total);
        if (v.seen.size() != want) return at + "calls " + std::to_string(v.seen.size());
        if (!std::equal(v.seen.begin(), v.seen.end(), full.begin())) return at + "sequence differs";
    }
    return "";
}

bool same_hit(const NearestHit& a, const NearestHit& b) {
    return a.index == b.index && float_bits(a.distance_squared) == float_bits(b.distance_squared);
}
bool same_hit(const RayHit& a, const RayHit& b) { return a.index == b.index && float_bits(a.t) == float_bits(b.t); }

/// How an ordered query's visitor form is checked against its buffer form.
enum class VisitorStops {
    none,      ///< not at all
    ends,      ///< every call, a stop after the first call and after the last
    boundaries ///< also after the first two calls, around the ends of its runs and in the middle
};

/// Stops for an ordered visitor with n results (~0: every call). The runs
/// of 1, 2, 4, ... 64 results end after 1, 3, 7, ..., 127, 191 calls.
std::vector<uint64_t> ordered_stops(uint64_t n, VisitorStops which) {
    std::vector<uint64_t> stops = {~uint64_t{0}};
    const bool boundaries = which == VisitorStops::boundaries;
    for (uint64_t m : {uint64_t{1}, uint64_t{2}, n / 2, n - 1, n})
        if (m >= 1 && m <= n && (boundaries || m == 1 || m == n)) stops.push_back(m);
    if (!boundaries) return stops;
    for (uint64_t end : {3u, 7u, 15u, 31u, 63u, 127u, 191u})
        for (uint64_t m = end - 1; m <= end + 1; ++m)
            if (m <= n) stops.push_back(m);
    return stops;
}

/// The visitor form of an ordered query (nearest: NearestVisitor, ray:
/// RayVisitor) against its buffer form's whole output `full`: for every
/// stop m, exactly min(m, n) calls with the first hits, bit for bit, total =
/// calls, written 0, status ok.
template <typename Hit, typename Visitor, typename Run>
std::string check_ordered_visitor(const char* what, const std::vector<Hit>& full, VisitorStops which, Run&& run) {
    struct Seen {
        std::vector<Hit> hits;
        uint64_t stop_after = ~uint64_t{0};
        static bool visit(void* self, const Hit& hit) {
            auto* v = static_cast<Seen*>(self);
            v->hits.push_back(hit);
            return v->hits.size() < v->stop_after;
        }
    };
    if (which == VisitorStops::none) return "";
    for (const uint64_t m : ordered_stops(full.size(), which)) {
        Seen v;
        v.stop_after = m;
        const QueryResult r = run(Visitor{&Seen::visit, &v});
        const uint64_t want = std::min<uint64_t>(m, full.size());
        const std::string at = std::string(what) + " visitor (stop after " + std::to_string(m) + " of " +
                               std::to_string(full.size()) + "): ";
        if (!r.status.ok()) return at + "status " + hashgrid::to_string(r.status.code);
        if (r.total != want || r.written != 0) return at + "total " + std::to_string(r.total);
        if (v.hits.size() != want) return at + "calls " + std::to_string(v.hits.size());
        for (uint64_t j = 0; j < want; ++j)
            if (!same_hit(v.hits[j], full[j])) return at + "hit " + std::to_string(j) + " differs";
    }
    return "";
}

std::string check_point(const BoxQueryGrid& qg, const RefGrid& g, const QueryPoint& q, uint32_t mask, Fnv1a& h) {
    std::vector<uint32_t> out(g.boxes.size() + 1);
    const QueryResult r = hashgrid::query_point(qg, q, mask, out.data(), out.size());
    if (!r.status.ok()) return std::string("point status ") + hashgrid::to_string(r.status.code);
    out.resize(r.total);
    std::vector<uint32_t> expected;
    for (uint32_t i = 0; i < g.boxes.size(); ++i)
        if (ref_in_layer(g.boxes, i, mask) && ref_overlap(g.boxes, i, q.position, q.position)) expected.push_back(i);
    int32_t lo[3] = {0, 0, 0};
    for (uint32_t d = 0; d < g.config.dimensions; ++d)
        lo[d] = ref_cell(g.config, d, q.position[d]);
    expected = in_set_order(g, expected, lo);
    h.u32(static_cast<uint32_t>(r.total));
    for (uint32_t v : out)
        h.u32(v);
    g_coverage.point += r.total;
    if (out != expected) return "point results differ";
    return check_visitor("point", out, [&](hashgrid::QueryVisitor v) { return hashgrid::query_point(qg, q, mask, v); });
}

std::string check_box(const BoxQueryGrid& qg, const RefGrid& g, const QueryBox& q, uint32_t mask, Fnv1a& h) {
    std::vector<uint32_t> out(g.boxes.size() + 1);
    const QueryResult r = hashgrid::query_box(qg, q, mask, out.data(), out.size());
    if (!r.status.ok()) return std::string("box status ") + hashgrid::to_string(r.status.code);
    out.resize(r.total);
    std::vector<uint32_t> expected;
    for (uint32_t i = 0; i < g.boxes.size(); ++i)
        if (ref_in_layer(g.boxes, i, mask) && ref_overlap(g.boxes, i, q.min, q.max)) expected.push_back(i);
    int32_t lo[3] = {0, 0, 0};
    for (uint32_t d = 0; d < g.config.dimensions; ++d)
        lo[d] = ref_cell(g.config, d, q.min[d]);
    expected = in_set_order(g, expected, lo);
    h.u32(static_cast<uint32_t>(r.total));
    for (uint32_t v : out)
        h.u32(v);
    g_coverage.box += r.total;
    if (!g.large.empty() && !out.empty() && std::binary_search(g.large.begin(), g.large.end(), out.back()))
        ++g_coverage.large;
    if (sorted(out) != sorted(expected))
        return "box result set differs: got " + std::to_string(out.size()) + " expected " +
               std::to_string(expected.size());
    if (out != expected) return "box result order differs";
    return check_visitor("box", out, [&](hashgrid::QueryVisitor v) { return hashgrid::query_box(qg, q, mask, v); });
}

std::string check_radius(const BoxQueryGrid& qg, const RefGrid& g, const QuerySphere& q, uint32_t mask, Fnv1a& h) {
    std::vector<uint32_t> out(g.boxes.size() + 1);
    const QueryResult r = hashgrid::query_radius(qg, q, mask, out.data(), out.size());
    if (!r.status.ok()) return std::string("radius status ") + hashgrid::to_string(r.status.code);
    out.resize(r.total);
    std::vector<uint32_t> expected;
    const float r2 = rounded_mul(q.radius, q.radius);
    for (uint32_t i = 0; i < g.boxes.size(); ++i)
        if (ref_in_layer(g.boxes, i, mask) && ref_distance2(g.boxes, i, q.center) <= r2) expected.push_back(i);
    h.u32(static_cast<uint32_t>(r.total));
    for (uint32_t v : out)
        h.u32(v);
    g_coverage.radius += r.total;
    if (sorted(out) != expected)
        return "radius result set differs: got " + std::to_string(out.size()) + " expected " +
               std::to_string(expected.size());
    // Small objects before large ones, each group in its documented order.
    std::vector<bool> is_large(g.boxes.size(), false);
    for (uint32_t j : g.large)
        is_large[j] = true;
    for (size_t k = 1; k < out.size(); ++k)
        if (is_large[out[k - 1]] && (!is_large[out[k]] || out[k] < out[k - 1])) return "radius order: large objects";
    return check_visitor("radius", out,
                         [&](hashgrid::QueryVisitor v) { return hashgrid::query_radius(qg, q, mask, v); });
}

std::string check_ray(const BoxQueryGrid& qg, const RefGrid& g, const Ray& q, uint32_t mask, Fnv1a& h,
                      VisitorStops visitor = VisitorStops::ends) {
    std::vector<RayHit> expected;
    for (uint32_t i = 0; i < g.boxes.size(); ++i) {
        float t = 0.0f;
        if (ref_in_layer(g.boxes, i, mask) && ref_ray(g.boxes, i, q, t)) expected.push_back({i, t});
    }
    std::sort(expected.begin(), expected.end(),
              [](const RayHit& a, const RayHit& b) { return a.t != b.t ? a.t < b.t : a.index < b.index; });
    std::vector<RayHit> out(g.boxes.size() + 1);
    const QueryResult r = hashgrid::query_ray(qg, q, mask, out.data(), out.size());
    if (!r.status.ok()) return std::string("ray status ") + hashgrid::to_string(r.status.code);
    if (r.total != expected.size())
        return "ray hit count " + std::to_string(r.total) + " expected " + std::to_string(expected.size());
    for (size_t k = 0; k < expected.size(); ++k)
        if (out[k].index != expected[k].index || float_bits(out[k].t) != float_bits(expected[k].t))
            return "ray hit " + std::to_string(k) + " differs";
    RayHit first{};
    const QueryResult f = hashgrid::query_ray_first(qg, q, mask, &first);
    if (!f.status.ok() || f.total != (expected.empty() ? 0u : 1u)) return "first hit count";
    if (expected.empty() && first.index != hashgrid::kNoIndex) return "first hit of a miss is not kNoIndex";
    if (!expected.empty() && (first.index != expected[0].index || float_bits(first.t) != float_bits(expected[0].t)))
        return "first hit differs";
    h.u32(static_cast<uint32_t>(r.total));
    g_coverage.ray += r.total;
    for (size_t k = 0; k < expected.size(); ++k) {
        h.u32(out[k].index);
        h.f32(out[k].t);
    }
    out.resize(r.total);
    return check_ordered_visitor<RayHit, hashgrid::RayVisitor>(
        "ray", out, visitor, [&](hashgrid::RayVisitor v) { return hashgrid::query_ray(qg, q, mask, v); });
}

std::string check_frustum(const BoxQueryGrid& qg, const RefGrid& g, const Frustum& frustum, uint32_t mask, Fnv1a& h) {
    std::vector<uint32_t> out(g.boxes.size() + 1);
    const QueryResult r = hashgrid::query_frustum(qg, frustum, mask, out.data(), out.size());
    if (!r.status.ok()) return std::string("frustum status ") + hashgrid::to_string(r.status.code);
    out.resize(r.total);
    std::vector<uint32_t> expected;
    for (uint32_t i = 0; i < g.boxes.size(); ++i)
        if (ref_in_layer(g.boxes, i, mask) && ref_frustum(g.boxes, i, frustum)) expected.push_back(i);
    expected = in_set_order(g, expected, nullptr);
    h.u32(static_cast<uint32_t>(r.total));
    g_coverage.frustum += r.total;
    for (uint32_t v : out)
        h.u32(v);
    if (sorted(out) != sorted(expected))
        return "frustum result set differs: got " + std::to_string(out.size()) + " expected " +
               std::to_string(expected.size());
    if (out != expected) return "frustum order differs";
    return check_visitor("frustum", out,
                         [&](hashgrid::QueryVisitor v) { return hashgrid::query_frustum(qg, frustum, mask, v); });
}

std::vector<NearestHit> ref_nearest(const RefGrid& g, const QueryNearest& q, uint32_t mask) {
    std::vector<NearestHit> all;
    const float max_d2 = rounded_mul(q.max_distance, q.max_distance);
    for (uint32_t i = 0; i < g.boxes.size(); ++i) {
        if (!ref_in_layer(g.boxes, i, mask)) continue;
        const float d2 = ref_distance2(g.boxes, i, q.center);
        if (d2 <= max_d2) all.push_back({i, d2});
    }
    std::sort(all.begin(), all.end(), [](const NearestHit& a, const NearestHit& b) {
        return a.distance_squared != b.distance_squared ? a.distance_squared < b.distance_squared : a.index < b.index;
    });
    if (all.size() > q.k) all.resize(q.k);
    return all;
}

std::string check_nearest(const BoxQueryGrid& qg, const RefGrid& g, const QueryNearest& q, uint32_t mask, Fnv1a& h,
                          VisitorStops visitor = VisitorStops::ends) {
    const std::vector<NearestHit> expected = ref_nearest(g, q, mask);
    std::vector<NearestHit> out(q.k);
    const QueryResult r = hashgrid::query_nearest(qg, q, mask, out.data(), q.k);
    if (!r.status.ok()) return std::string("nearest status ") + hashgrid::to_string(r.status.code);
    if (r.total != expected.size())
        return "nearest count " + std::to_string(r.total) + " expected " + std::to_string(expected.size());
    for (size_t j = 0; j < expected.size(); ++j)
        if (out[j].index != expected[j].index ||
            float_bits(out[j].distance_squared) != float_bits(expected[j].distance_squared))
            return "nearest " + std::to_string(j) + " differs";
    h.u32(static_cast<uint32_t>(r.total));
    g_coverage.nearest += r.total;
    for (size_t j = 0; j < expected.size(); ++j) {
        h.u32(out[j].index);
        h.f32(out[j].distance_squared);
    }
    out.resize(r.total);
    return check_ordered_visitor<NearestHit, hashgrid::NearestVisitor>(
        "nearest", out, visitor, [&](hashgrid::NearestVisitor v) { return hashgrid::query_nearest(qg, q, mask, v); });
}

std::string check_collisions(const BoxQueryGrid& qg, const RefGrid& g, uint32_t object, Fnv1a& h) {
    std::vector<uint32_t> out(g.boxes.size() + 1);
    const QueryResult r = hashgrid::query_potential_collisions(qg, object, out.data(), out.size());
    if (!r.status.ok()) return "collisions status";
    out.resize(r.total);
    float lo[3], hi[3];
    g.boxes.box(object, lo, hi);
    std::vector<uint32_t> expected;
    const Boxes& b = g.boxes;
    for (uint32_t i = 0; i < b.size(); ++i)
        if (i != object && (b.category[object] & b.mask[i]) != 0 && (b.category[i] & b.mask[object]) != 0 &&
            ref_overlap(b, i, lo, hi))
            expected.push_back(i);
    int32_t qlo[3] = {0, 0, 0};
    for (uint32_t d = 0; d < g.config.dimensions; ++d)
        qlo[d] = ref_cell(g.config, d, lo[d]);
    expected = in_set_order(g, expected, qlo);
    h.u32(static_cast<uint32_t>(r.total));
    g_coverage.collisions += r.total;
    for (uint32_t v : out)
        h.u32(v);
    if (out != expected) return "potential collisions differ";
    return check_visitor("potential collisions", out,
                         [&](hashgrid::QueryVisitor v) { return hashgrid::query_potential_collisions(qg, object, v); });
}

// ---------------------------------------------------------------------------
// Random queries.

/// Random queries of every kind, each with its own layer mask (batches take
/// one mask for all their queries).
struct Queries {
    std::vector<QueryPoint> points;
    std::vector<QueryBox> boxes;
    std::vector<QuerySphere> spheres;
    std::vector<Ray> rays;
    std::vector<QueryNearest> nearest;
    std::vector<Frustum> frusta;
    std::vector<uint32_t> point_masks, box_masks, sphere_masks, ray_masks, nearest_masks;
};

uint32_t random_mask(Rng& rng) { return rng.below(3) == 0 ? hashgrid::kAllLayers : (1u << rng.below(4)) | 1u; }

/// Appends a plane to a frustum.
void push_plane(Frustum& f, const hashgrid::Plane& p) {
    REQUIRE(f.plane_count < hashgrid::kMaxFrustumPlanes);
    f.planes[f.plane_count++] = p;
}

/// A perspective-like frustum: apex, axis, half-angle slope, near/far, as six planes.
Frustum random_frustum(Rng& rng, uint32_t dims, float lo, float hi) {
    Frustum planes;
    const uint32_t kind = rng.below(6);
    if (kind == 0) { // degenerate: zero normals, everything or nothing
        hashgrid::Plane p;
        p.d = rng.coin() ? 1.0f : -1.0f;
        push_plane(planes, p);
        return planes;
    }
    // Box-like slab planes x >= a, x <= b, ... optionally inside-out (flipped).
    const bool inside_out = kind == 1;
    for (uint32_t d = 0; d < dims; ++d) {
        const float a = rng.uniform(lo, hi);
        const float b = a + rng.uniform(0.0f, (hi - lo) * 0.5f);
        hashgrid::Plane low, high;
        low.normal[d] = 1.0f;
        low.d = -a;
        high.normal[d] = -1.0f;
        high.d = b;
        if (inside_out) {
            low.normal[d] = -1.0f;
            low.d = a;
            high.normal[d] = 1.0f;
            high.d = -b;
        }
        push_plane(planes, low);
        push_plane(planes, high);
    }
    if (kind >= 3) { // slanted planes with random normals through a random point
        for (int k = 0; k < 2; ++k) {
            hashgrid::Plane p;
            float through[3] = {0, 0, 0};
            for (uint32_t d = 0; d < dims; ++d) {
                p.normal[d] = rng.uniform(-1.0f, 1.0f);
                through[d] = rng.uniform(lo, hi);
            }
            float v = 0.0f;
            for (uint32_t d = 0; d < dims; ++d)
                v = v + rounded_mul(p.normal[d], through[d]);
            p.d = -v;
            push_plane(planes, p);
        }
    }
    return planes;
}

Queries random_queries(Rng& rng, const SceneSpec& s, const BoxGridConfig& c, uint32_t n) {
    Queries q;
    float lo, hi;
    spec_extent(s, lo, hi);
    const float qlo = lo - 4.0f * s.cell;
    const float qhi = hi + 4.0f * s.cell;
    for (uint32_t i = 0; i < n; ++i) {
        QueryPoint p;
        for (uint32_t d = 0; d < s.dims; ++d)
            p.position[d] = pick_coordinate(rng, c, d, qlo, qhi);
        q.point_masks.push_back(random_mask(rng));
        q.points.push_back(p);

        QueryBox b;
        for (uint32_t d = 0; d < s.dims; ++d) {
            b.min[d] = pick_coordinate(rng, c, d, qlo, qhi);
            const uint32_t kind = rng.below(8);
            b.max[d] = kind == 0 ? b.min[d] : (kind == 1 ? kInf : b.min[d] + rng.uniform(0.0f, 3.0f * s.cell));
            if (kind == 2) b.min[d] = -kInf;
        }
        q.box_masks.push_back(random_mask(rng));
        q.boxes.push_back(b);

        QuerySphere r;
        for (uint32_t d = 0; d < s.dims; ++d)
            r.center[d] = pick_coordinate(rng, c, d, qlo, qhi);
        const uint32_t rk = rng.below(8);
        r.radius = rk == 0 ? 0.0f : (rk == 1 ? kInf : rng.uniform(0.0f, 3.0f * s.cell));
        q.sphere_masks.push_back(random_mask(rng));
        q.spheres.push_back(r);

        Ray ray;
        const uint32_t kind = rng.below(8);
        for (uint32_t d = 0; d < s.dims; ++d) {
            ray.origin[d] = pick_coordinate(rng, c, d, qlo, qhi);
            ray.direction[d] = rng.uniform(-1.0f, 1.0f);
        }
        if (kind == 0) { // parallel to an axis, along cell boundaries
            const uint32_t axis = rng.below(s.dims);
            for (uint32_t d = 0; d < s.dims; ++d) {
                ray.direction[d] = d == axis ? (rng.coin() ? 1.0f : -1.0f) : 0.0f;
                if (d != axis) ray.origin[d] = boundary_float(c, d, rng.between(-1, 8));
            }
        } else if (kind == 1) { // diagonal through integer points / corners
            for (uint32_t d = 0; d < s.dims; ++d) {
                ray.origin[d] = static_cast<float>(rng.between(static_cast<int32_t>(lo), static_cast<int32_t>(hi)));
                ray.direction[d] = rng.coin() ? 1.0f : -1.0f;
            }
        } else if (kind == 2) { // zero length / zero direction
            for (uint32_t d = 0; d < s.dims; ++d)
                ray.direction[d] = 0.0f;
        }
        const uint32_t lk = rng.below(4);
        ray.max_t = lk == 0 ? kInf : (lk == 1 ? 0.0f : rng.uniform(0.0f, (qhi - qlo) * 1.5f));
        q.ray_masks.push_back(random_mask(rng));
        q.rays.push_back(ray);

        QueryNearest nq;
        for (uint32_t d = 0; d < s.dims; ++d)
            nq.center[d] = pick_coordinate(rng, c, d, qlo - 20.0f * s.cell, qhi + 20.0f * s.cell);
        nq.max_distance = rng.below(3) == 0 ? rng.uniform(0.0f, 4.0f * s.cell) : kInf;
        nq.k = 1 + i % 5;
        q.nearest_masks.push_back(random_mask(rng));
        q.nearest.push_back(nq);

        q.frusta.push_back(random_frustum(rng, s.dims, qlo, qhi));
    }
    return q;
}

const SceneSpec kSpecs[] = {
    {3, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, 0.0f, 10, 8},
    {2, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, -3.0f, 12, 6},
    {3, hashgrid::World::bounded, hashgrid::OutOfBounds::reject, 2.0f, -5.0f, 6, 8},
    {2, hashgrid::World::bounded, hashgrid::OutOfBounds::clamp, 1.0f, 0.0f, 10, 6},
    {3, hashgrid::World::bounded, hashgrid::OutOfBounds::clamp, 0.5f, 1.0f, 8, 27},
    {3, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 0.25f, 1000.0f, 12, 64},
};

/// Runs every query kind of `q` on one view; returns the first failure.
std::string check_all(const BoxQueryGrid& qg, const RefGrid& g, const Queries& q, Fnv1a& h) {
    const uint32_t k_values[] = {1, 3, 10};
    for (size_t i = 0; i < q.points.size(); ++i) {
        QueryNearest nearest = q.nearest[i];
        nearest.k = k_values[i % 3];
        std::string e = check_point(qg, g, q.points[i], q.point_masks[i], h);
        if (e.empty()) e = check_box(qg, g, q.boxes[i], q.box_masks[i], h);
        if (e.empty()) e = check_radius(qg, g, q.spheres[i], q.sphere_masks[i], h);
        if (e.empty()) e = check_ray(qg, g, q.rays[i], q.ray_masks[i], h);
        if (e.empty()) e = check_frustum(qg, g, q.frusta[i], q.point_masks[i], h);
        if (e.empty()) e = check_nearest(qg, g, nearest, q.nearest_masks[i], h);
        if (e.empty() && g.boxes.size() > 0) e = check_collisions(qg, g, static_cast<uint32_t>(i % g.boxes.size()), h);
        if (!e.empty()) return "query " + std::to_string(i) + ": " + e;
    }
    return "";
}

struct Built {
    BoxGridConfig config;
    RefGrid ref;
    Built(const BoxGridConfig& c, const Boxes& b) : config(c), ref(c, b) {}
};

} // namespace

// ---------------------------------------------------------------------------

TEST_CASE("box queries agree with brute force on random scenes (reference and real views)") {
    const uint32_t scenes = std::max(3u, scaled_count(6)); // 0, 1 and some objects
    uint32_t checked = 0;
    for (size_t spec_index = 0; spec_index < std::size(kSpecs); ++spec_index) {
        const SceneSpec& spec = kSpecs[spec_index];
        for (uint32_t scene = 0; scene < scenes; ++scene) {
            Rng rng(0x5eed0000u + spec_index * 1000u + scene);
            const uint32_t n = scene == 0 ? 0 : (scene == 1 ? 1 : 20 + rng.below(150));
            const BoxGridConfig config = make_config(spec, n);
            const Boxes boxes = random_boxes(rng, spec, config, n);
            const RefGrid ref(config, boxes);
            const Queries queries = random_queries(rng, spec, config, 40);
            CAPTURE(spec_index);
            CAPTURE(scene);
            Fnv1a h_ref, h_real;
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
            const std::string e = check_all(qg, ref, queries, h_ref);
            CHECK_MESSAGE(e.empty(), "reference view: " << e);

            RealGrid real(config, boxes);
            REQUIRE_MESSAGE(real.ok(), "BoxGrid init/rebuild: " << hashgrid::to_string(real.init.code) << " "
                                                                << hashgrid::to_string(real.rebuild.code));
            const BoxGridView rv = real.grid.view();
            CHECK_MESSAGE(compare_views(ref.view(), rv, spec.dims).empty(),
                          "BoxGrid view differs from the reference: " << compare_views(ref.view(), rv, spec.dims));
            const BoxQueryGrid rqg = hashgrid::prepare_box_queries(rv, hashgrid::serial_backend());
            const std::string er = check_all(rqg, ref, queries, h_real);
            CHECK_MESSAGE(er.empty(), "BoxGrid view: " << er);
            CHECK(h_ref.value() == h_real.value());
            ++checked;
        }
    }
    CHECK(checked == scenes * std::size(kSpecs));
    const Coverage& c = g_coverage;
    MESSAGE("results checked: point " << c.point << ", box " << c.box << ", radius " << c.radius << ", ray " << c.ray
                                      << ", frustum " << c.frustum << ", nearest " << c.nearest << ", collisions "
                                      << c.collisions << ", box queries ending in a large object " << c.large);
    const uint64_t many = test_scale() == 1.0 ? 1000 : 1; // scaled-down runs see fewer
    CHECK(c.point > many / 10);
    CHECK(c.box > many);
    CHECK(c.radius > many);
    CHECK(c.ray > many);
    CHECK(c.frustum > many);
    CHECK(c.nearest > many);
    CHECK(c.collisions > many);
    CHECK(c.large > many / 100);
}

TEST_CASE("box and radius queries: every entry kernel agrees with brute force, dense cells, every buffer size") {
    // BoxGrid views carry entry boxes and first-cell bits, so their buffer
    // queries run the entry kernels (scalar, SSE2, AVX2, NEON as the CPU has
    // them). Sparse scenes give runs of a few entries (vector tails); dense
    // ones (a world of 3 cells per axis, 700 boxes) hundreds per cell, past
    // the kernels' 256-hit pieces. Buffers of every size up to the total take
    // the kernel while the held runs fit and the one-by-one test after.
    KernelGuard guard;
    const std::vector<hashgrid::PairKernel> kernels = available_kernels();
    uint64_t dense_results = 0;
    for (size_t spec_index = 0; spec_index < std::size(kSpecs); ++spec_index) {
        for (uint32_t dense = 0; dense < 2; ++dense) {
            SceneSpec spec = kSpecs[spec_index];
            if (dense == 1) spec.cells_per_axis = 3;
            Rng rng(0xbeef0000u + static_cast<uint32_t>(spec_index) * 10u + dense);
            const uint32_t n = dense == 1 ? 700 : 200;
            const BoxGridConfig config = make_config(spec, n);
            const Boxes boxes = random_boxes(rng, spec, config, n);
            const RefGrid ref(config, boxes);
            const Queries queries = random_queries(rng, spec, config, std::max(6u, scaled_count(30)));
            RealGrid real(config, boxes);
            REQUIRE(real.ok());
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(real.grid.view(), hashgrid::serial_backend());
            uint64_t first_hash = 0;
            for (hashgrid::PairKernel k : kernels) {
                REQUIRE(hashgrid::set_pair_kernel(k));
                CAPTURE(spec_index);
                CAPTURE(dense);
                CAPTURE(static_cast<int>(k));
                Fnv1a h;
                for (size_t i = 0; i < queries.boxes.size(); ++i) {
                    CAPTURE(i);
                    const uint64_t before = g_coverage.box;
                    CHECK(check_box(qg, ref, queries.boxes[i], queries.box_masks[i], h) == "");
                    CHECK(check_radius(qg, ref, queries.spheres[i], queries.sphere_masks[i], h) == "");
                    if (dense == 1) dense_results += g_coverage.box - before;
                }
                if (k == kernels.front())
                    first_hash = h.value();
                else
                    CHECK(h.value() == first_hash);
                // Every buffer size for the first queries: exact total, the
                // full result's prefix, nothing written past the capacity.
                for (size_t i = 0; i < std::min<size_t>(queries.boxes.size(), 3); ++i) {
                    std::vector<uint32_t> full(n + 1);
                    const QueryResult all =
                        hashgrid::query_box(qg, queries.boxes[i], queries.box_masks[i], full.data(), full.size());
                    REQUIRE(all.status.ok());
                    for (uint64_t capacity = 0; capacity <= all.total; ++capacity) {
                        std::vector<uint32_t> out(capacity + 1, 0xdeadbeefu);
                        const QueryResult r = hashgrid::query_box(qg, queries.boxes[i], queries.box_masks[i],
                                                                  capacity == 0 ? nullptr : out.data(), capacity);
                        CHECK(r.total == all.total);
                        CHECK(r.written == capacity);
                        CHECK(r.status.code == (capacity < all.total ? StatusCode::output_too_small : StatusCode::ok));
                        CHECK(
                            std::equal(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(capacity), full.begin()));
                        CHECK(out[capacity] == 0xdeadbeefu);
                    }
                }
            }
        }
    }
    MESSAGE("results of dense-scene box queries: " << dense_results);
    CHECK(dense_results > (test_scale() == 1.0 ? 1000u : 100u));
}

namespace {

/// A 2D unbounded box grid config with cells of 1 and the given capacities.
BoxGridConfig unit_cells_2d(uint32_t objects, uint32_t entries) {
    BoxGridConfig c;
    c.dimensions = 2;
    c.cell_size = 1.0f;
    c.max_objects = objects;
    c.max_cell_entries = entries;
    c.max_pairs = 64ull * objects;
    return c;
}

} // namespace

TEST_CASE("entry kernels: a run's last partial vector is masked (padded grid views) or tested one by one (views "
          "built by hand)") {
    // One cell holds every entry, so a query's only run ends at the frame's
    // last entry. The second frame has fewer boxes than the first: past its
    // last entry the arrays still hold entries that meet every query (the
    // first frame's, or the zeros init left), which the padded kernels read
    // and must mask out. 21 entries: 2 vectors of 8 and a tail of 5 (SSE2: 5
    // vectors of 4 and a tail of 1). A view over exact-size copies of the
    // entry arrays (entry_padding 0) must give the same results without
    // reading past them (AddressSanitizer checks that in the asan preset).
    KernelGuard guard;
    const BoxGridConfig config = unit_cells_2d(64, 256);
    hashgrid::BoxGrid grid;
    REQUIRE(grid.init_allocate(config).ok());
    auto frame = [&](uint32_t n) {
        const std::vector<float> lo(n, 0.125f), hi(n, 0.875f);
        hashgrid::BoxSpans spans;
        spans.min_x = lo.data();
        spans.min_y = lo.data();
        spans.max_x = hi.data();
        spans.max_y = hi.data();
        spans.count = n;
        REQUIRE(grid.rebuild(spans, hashgrid::serial_backend()).ok());
    };
    frame(40);
    frame(21);
    REQUIRE(grid.entry_count() == 21);
    const BoxGridView padded = grid.view();
    CHECK(padded.entry_padding >= 8);
    BoxGridView by_hand = padded;
    const uint32_t entries = grid.entry_count();
    std::vector<float> e_lo[2], e_hi[2];
    for (uint32_t d = 0; d < 2; ++d) {
        e_lo[d].assign(padded.entry_min[d], padded.entry_min[d] + entries);
        e_hi[d].assign(padded.entry_max[d], padded.entry_max[d] + entries);
        by_hand.entry_min[d] = e_lo[d].data();
        by_hand.entry_max[d] = e_hi[d].data();
    }
    const std::vector<uint32_t> e_flags(padded.entry_flags, padded.entry_flags + entries);
    const std::vector<uint32_t> e_object(padded.entry_object, padded.entry_object + entries);
    by_hand.entry_flags = e_flags.data();
    by_hand.entry_object = e_object.data();
    by_hand.entry_padding = 0;

    std::vector<uint32_t> expect(21);
    for (uint32_t i = 0; i < 21; ++i)
        expect[i] = i; // every box meets the queries; one cell: ascending object order
    QueryBox box;
    box.min[0] = box.min[1] = 0.25f;
    box.max[0] = box.max[1] = 0.5f;
    QuerySphere sphere;
    sphere.center[0] = sphere.center[1] = 0.5f;
    sphere.radius = 0.25f;
    const std::vector<hashgrid::PairKernel> kernels = available_kernels();
    for (hashgrid::PairKernel k : kernels) {
        REQUIRE(hashgrid::set_pair_kernel(k));
        CAPTURE(static_cast<int>(k));
        const BoxGridView* const views[] = {&padded, &by_hand};
        for (const BoxGridView* view : views) {
            CAPTURE(view == &padded);
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(*view, hashgrid::serial_backend());
            std::vector<uint32_t> out(64, 0xdeadbeefu);
            QueryResult r = hashgrid::query_box(qg, box, hashgrid::kAllLayers, out.data(), out.size());
            REQUIRE(r.status.ok());
            CHECK(std::vector<uint32_t>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(r.written)) == expect);
            r = hashgrid::query_radius(qg, sphere, hashgrid::kAllLayers, out.data(), out.size());
            REQUIRE(r.status.ok());
            CHECK(std::vector<uint32_t>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(r.written)) == expect);
        }
    }
}

namespace {

/// The row table of a grid view against its definition (BoxGridView::row_start),
/// recomputed from the cell keys by a linear scan per row.
std::string check_row_table(const BoxGridView& v) {
    if (v.row_start == nullptr) return "no row table";
    const hashgrid::BoxFrameBounds& b = *v.bounds;
    const auto per_slab = static_cast<uint64_t>(b.cell_hi[1] - b.cell_lo[1] + 1);
    const uint64_t rows = per_slab * static_cast<uint64_t>(b.cell_hi[2] - b.cell_lo[2] + 1);
    std::vector<uint64_t> row_of(v.cell_count);
    for (uint32_t c = 0; c < v.cell_count; ++c) {
        int32_t x = 0, y = 0, z = 0;
        if (v.config->dimensions == 3)
            hashgrid::unpack_key3(v.cell_key[c], x, y, z);
        else
            hashgrid::unpack_key2(v.cell_key[c], x, y);
        row_of[c] = static_cast<uint64_t>(y - b.cell_lo[1]) + static_cast<uint64_t>(z - b.cell_lo[2]) * per_slab;
    }
    for (uint64_t r = 0; r <= rows; ++r) {
        uint32_t first = 0;
        while (first < v.cell_count && row_of[first] < r)
            ++first;
        if (v.row_start[r] != first)
            return "row " + std::to_string(r) + ": " + std::to_string(v.row_start[r]) + ", expected " +
                   std::to_string(first);
    }
    return "";
}

} // namespace

TEST_CASE("row table: every row's first cell, after full and merged rebuilds; none past max_cell_entries rows") {
    // Queries over a grid's view find rows through the table; over the
    // reference views of the other tests (no table), by search. Here the
    // table itself is checked against its definition frame after frame (a
    // few boxes move: the merge path), with queries against brute force.
    for (size_t spec_index = 0; spec_index < std::size(kSpecs); ++spec_index) {
        const SceneSpec& spec = kSpecs[spec_index];
        Rng rng(0x70770000u + static_cast<uint32_t>(spec_index));
        const uint32_t n = 150;
        const BoxGridConfig config = make_config(spec, n);
        Boxes boxes = random_boxes(rng, spec, config, n);
        hashgrid::BoxGrid grid;
        REQUIRE(grid.init_allocate(config).ok());
        for (uint32_t frame = 0; frame < 4; ++frame) {
            CAPTURE(spec_index);
            CAPTURE(frame);
            REQUIRE(grid.rebuild(boxes.spans(), hashgrid::serial_backend()).ok());
            const BoxGridView v = grid.view();
            CHECK(check_row_table(v) == "");
            const RefGrid ref(config, boxes);
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(v, hashgrid::serial_backend());
            const Queries queries = random_queries(rng, spec, config, 10);
            Fnv1a h;
            for (size_t i = 0; i < queries.boxes.size(); ++i) {
                CHECK(check_box(qg, ref, queries.boxes[i], queries.box_masks[i], h) == "");
                CHECK(check_radius(qg, ref, queries.spheres[i], queries.sphere_masks[i], h) == "");
            }
            float lo = 0.0f, hi = 0.0f;
            spec_extent(spec, lo, hi);
            for (uint32_t k = 0; k < 5; ++k) { // a few boxes move by a cell, staying in the scene's extent
                const uint32_t i = rng.below(n);
                for (uint32_t d = 0; d < spec.dims; ++d) {
                    float step = spec.cell * (rng.below(2) == 0 ? -1.0f : 1.0f);
                    if (boxes.lo[d][i] + step < lo || boxes.hi[d][i] + step > hi) step = -step;
                    if (boxes.lo[d][i] + step < lo || boxes.hi[d][i] + step > hi) continue;
                    boxes.lo[d][i] += step;
                    boxes.hi[d][i] += step;
                }
            }
        }
    }
    // More rows in the occupied box than max_cell_entries: no table; the
    // queries search for rows and stay exact.
    const BoxGridConfig config = unit_cells_2d(8, 16);
    Boxes boxes;
    boxes.dims = 2;
    const float corners[3][4] = {
        {0.25f, 0.25f, 0.75f, 0.75f}, {3.25f, 40.25f, 3.75f, 40.75f}, {0.25f, 0.5f, 0.5f, 1.5f}};
    for (const auto& c : corners) {
        const float mn[3] = {c[0], c[1], 0.0f};
        const float mx[3] = {c[2], c[3], 0.0f};
        boxes.add(mn, mx, ~0u, ~0u);
    }
    hashgrid::BoxGrid grid;
    REQUIRE(grid.init_allocate(config).ok());
    REQUIRE(grid.rebuild(boxes.spans(), hashgrid::serial_backend()).ok());
    const BoxGridView v = grid.view();
    CHECK(v.row_start == nullptr);
    const RefGrid ref(config, boxes);
    const BoxQueryGrid qg = hashgrid::prepare_box_queries(v, hashgrid::serial_backend());
    Fnv1a h;
    QueryBox all;
    all.min[0] = all.min[1] = -1.0f;
    all.max[0] = all.max[1] = 50.0f;
    CHECK(check_box(qg, ref, all, hashgrid::kAllLayers, h) == "");
    QueryBox upper;
    upper.min[0] = 3.0f;
    upper.min[1] = 39.0f;
    upper.max[0] = 4.0f;
    upper.max[1] = 41.0f;
    CHECK(check_box(qg, ref, upper, hashgrid::kAllLayers, h) == "");
}

TEST_CASE("layer masks: a bit every category has passes every object; others still filter, after every rebuild") {
    // BoxGrid records the AND of the frame's categories (view().category_common);
    // a query whose mask shares a bit with it skips the per-object category
    // check. Categories here all hold bit 4 plus random bits, then one object
    // loses bit 4 in a frame whose boxes did not move (the rebuild's merge
    // path) and a query on bit 4 must leave exactly that object out; in the
    // next frame it has the bit again.
    for (size_t spec_index = 0; spec_index < std::size(kSpecs); ++spec_index) {
        CAPTURE(spec_index);
        const SceneSpec spec = kSpecs[spec_index];
        Rng rng(0x1a7e0000u + static_cast<uint32_t>(spec_index));
        const uint32_t n = 200;
        const BoxGridConfig config = make_config(spec, n);
        Boxes boxes = random_boxes(rng, spec, config, n);
        for (uint32_t i = 0; i < n; ++i)
            boxes.category[i] = (1u << 4) | (rng.next_u32() & 0x0f0fu);
        const Queries queries = random_queries(rng, spec, config, std::max(6u, scaled_count(20)));
        hashgrid::BoxGrid grid;
        REQUIRE(grid.init_allocate(config).ok());
        uint64_t reported = 0;
        for (uint32_t frame = 0; frame < 3; ++frame) {
            CAPTURE(frame);
            // Boxes unchanged: the merge path. Frame 2 gives the bit back: the AND starts afresh.
            if (frame == 1) boxes.category[n / 2] = 1u << 8;
            if (frame == 2) boxes.category[n / 2] = (1u << 4) | (1u << 8);
            REQUIRE(grid.rebuild(boxes.spans(), hashgrid::serial_backend()).ok());
            uint32_t common = ~0u;
            for (uint32_t i = 0; i < n; ++i)
                common &= boxes.category[i];
            CHECK(grid.view().category_common == common);
            CHECK(common == (frame == 1 ? 0u : (1u << 4)));
            const RefGrid ref(config, boxes); // a view built by hand: category_common 0, every object checked
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(grid.view(), hashgrid::serial_backend());
            Fnv1a h;
            for (size_t i = 0; i < queries.boxes.size(); ++i) {
                CAPTURE(i);
                for (const uint32_t mask : {1u << 4, (1u << 4) | 0x3u, 0x3u, 1u << 8, ~0u}) {
                    CAPTURE(mask);
                    const uint64_t before = g_coverage.box + g_coverage.radius;
                    CHECK(check_box(qg, ref, queries.boxes[i], mask, h) == "");
                    CHECK(check_radius(qg, ref, queries.spheres[i], mask, h) == "");
                    reported += g_coverage.box + g_coverage.radius - before;
                }
            }
        }
        CHECK(reported > 0);
    }
}

TEST_CASE("unbounded box grids take any finite coordinate: far objects are large, every query exact") {
    const float limit3 = static_cast<float>(hashgrid::kKeyLimit3);
    uint32_t checked = 0;
    for (const SceneSpec& spec : {kSpecs[0], kSpecs[1], kSpecs[5]}) {
        for (uint32_t scene = 0; scene < 3; ++scene) {
            Rng rng(0xfa500000u + spec.dims * 100u + scene);
            const uint32_t n = 60 + rng.below(60);
            const BoxGridConfig config = make_config(spec, n + 6);
            Boxes boxes = random_boxes(rng, spec, config, n);
            // Outliers: far on one axis; far on every axis, with a point box
            // inside it (a far-far pair); spanning all space; straddling the
            // key limit; FLT_MAX-sized coordinates.
            auto add = [&](float x0, float y0, float z0, float x1, float y1, float z1) {
                const float mn[3] = {x0, y0, z0}, mx[3] = {x1, y1, z1};
                boxes.add(mn, mx, 1u << rng.below(4), hashgrid::kAllLayers);
            };
            const float o = spec.origin;
            add(1e30f, o + 1.0f, o + 1.0f, 1e30f, o + 2.0f, o + 2.0f);
            add(1e30f, -3e38f, 1e30f, 1.0000001e30f, -2e38f, 1.0000001e30f);
            add(-3e38f, -3e38f, -3e38f, 3e38f, 3e38f, 3e38f);
            add(o + 2.0f, o + 2.0f, o + 2.0f, o + (limit3 + 8.0f) * spec.cell * 2.0f, o + 3.0f, o + 3.0f);
            add(1e30f, -3e38f, 1e30f, 1e30f, -3e38f, 1e30f);
            add(-std::numeric_limits<float>::max(), o, o, -1e38f, o + 1.0f, o + 1.0f);
            const RefGrid ref(config, boxes);
            REQUIRE(ref.large.size() >= 6); // the outliers at least
            Queries queries = random_queries(rng, spec, config, 30);
            // Some queries out among the outliers.
            for (size_t i = 0; i < queries.points.size(); i += 5) {
                queries.points[i].position[0] = 1e30f;
                queries.boxes[i].min[0] = 1e29f;
                queries.boxes[i].max[0] = kInf;
                queries.spheres[i].center[0] = -2e38f;
                queries.nearest[i].center[0] = 5e29f;
                queries.rays[i].origin[0] = -1e30f;
            }
            CAPTURE(spec.dims);
            CAPTURE(spec.cell);
            CAPTURE(scene);
            RealGrid real(config, boxes);
            REQUIRE_MESSAGE(real.ok(), hashgrid::to_string(real.init.code)
                                           << " " << hashgrid::to_string(real.rebuild.code));
            const BoxGridView rv = real.grid.view();
            CHECK(compare_views(ref.view(), rv, spec.dims) == "");
            Fnv1a h_ref, h_real;
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
            CHECK(check_all(qg, ref, queries, h_ref) == "");
            const BoxQueryGrid rqg = hashgrid::prepare_box_queries(rv, hashgrid::serial_backend());
            CHECK(check_all(rqg, ref, queries, h_real) == "");
            CHECK(h_ref.value() == h_real.value());
            // Potential collisions of each outlier (check_all asks the first objects only).
            Fnv1a h_outliers;
            for (uint32_t i = boxes.size() - 6; i < boxes.size(); ++i)
                CHECK(check_collisions(rqg, ref, i, h_outliers) == "");
            ++checked;
        }
    }
    CHECK(checked == 9);
}

TEST_CASE("prepare_box_queries: extents, object union, same for every thread count") {
    Rng rng(77);
    const SceneSpec spec = kSpecs[0];
    const uint32_t n = 9000; // more than one prepare chunk
    const BoxGridConfig config = make_config(spec, n);
    const Boxes boxes = random_boxes(rng, spec, config, n);
    const RefGrid ref(config, boxes);
    const BoxQueryGrid serial = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
    REQUIRE(serial.has_cells);
    std::vector<bool> is_large(n, false);
    for (uint32_t j : ref.large)
        is_large[j] = true;
    for (uint32_t d = 0; d < 3; ++d) {
        int32_t lo = INT32_MAX, hi = INT32_MIN;
        for (uint64_t key : ref.keys) {
            int32_t at[3];
            hashgrid::unpack_key3(key, at[0], at[1], at[2]);
            lo = std::min(lo, at[d]);
            hi = std::max(hi, at[d]);
        }
        CHECK(serial.cell_lo[d] == lo);
        CHECK(serial.cell_hi[d] == hi);
        float blo = kInf, bhi = -kInf;
        for (uint32_t i = 0; i < n; ++i)
            if (!is_large[i]) {
                blo = std::min(blo, boxes.lo[d][i]);
                bhi = std::max(bhi, boxes.hi[d][i]);
            }
        CHECK(serial.box_lo[d] == blo);
        CHECK(serial.box_hi[d] == bhi);
        int32_t span = 0;
        for (uint32_t i = 0; i < n; ++i)
            if (!is_large[i])
                span = std::max(span, ref_cell(config, d, boxes.hi[d][i]) - ref_cell(config, d, boxes.lo[d][i]));
        CHECK(serial.max_span[d] == span);
    }
    for (uint32_t threads : {1u, 2u, 4u, 8u}) {
        ParallelBackend pb(threads);
        const BoxQueryGrid p = hashgrid::prepare_box_queries(ref.view(), pb.backend());
        for (uint32_t d = 0; d < 3; ++d) {
            CHECK(p.cell_lo[d] == serial.cell_lo[d]);
            CHECK(p.cell_hi[d] == serial.cell_hi[d]);
            CHECK(float_bits(p.box_lo[d]) == float_bits(serial.box_lo[d]));
            CHECK(float_bits(p.box_hi[d]) == float_bits(serial.box_hi[d]));
            CHECK(p.max_span[d] == serial.max_span[d]);
        }
    }
}

TEST_CASE("prepare_box_queries: the bounds a rebuild records equal the ones computed from the arrays") {
    Rng rng(78);
    for (const SceneSpec& spec : kSpecs) {
        CAPTURE(spec.dims);
        CAPTURE(static_cast<int>(spec.world));
        const uint32_t n = 9000;
        const BoxGridConfig config = make_config(spec, n);
        const Boxes boxes = random_boxes(rng, spec, config, n);
        for (uint32_t threads : {1u, 3u}) {
            ParallelBackend pb(threads);
            hashgrid::BoxGrid grid;
            REQUIRE(grid.init_allocate(config).ok());
            REQUIRE(grid.rebuild(boxes.spans(), pb.backend()).ok());
            const hashgrid::BoxGridView recorded = grid.view();
            REQUIRE(recorded.bounds != nullptr);
            hashgrid::BoxGridView computed = recorded;
            computed.bounds = nullptr; // like a view built by hand: prepare reads every object
            const BoxQueryGrid a = hashgrid::prepare_box_queries(recorded, pb.backend());
            const BoxQueryGrid b = hashgrid::prepare_box_queries(computed, hashgrid::serial_backend());
            REQUIRE(a.has_cells == b.has_cells);
            for (uint32_t d = 0; d < 3; ++d) {
                CHECK(a.cell_lo[d] == b.cell_lo[d]);
                CHECK(a.cell_hi[d] == b.cell_hi[d]);
                CHECK(a.box_lo[d] == b.box_lo[d]);
                CHECK(a.box_hi[d] == b.box_hi[d]);
                CHECK(float_bits(a.magnitude[d]) == float_bits(b.magnitude[d]));
                CHECK(a.max_span[d] == b.max_span[d]);
            }
        }
    }
}

TEST_CASE("rays along cell edges, through corners, from outside, axis-parallel, zero length") {
    // 3D unit cells, boxes on the integer lattice touching each other exactly.
    SceneSpec spec{3, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, 0.0f, 6, 8};
    BoxGridConfig config = make_config(spec, 400);
    Boxes boxes;
    boxes.dims = 3;
    for (int z = 0; z < 4; ++z)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x) {
                // Unit boxes whose faces are exact cell boundaries, and zero-size boxes on lattice corners.
                const float a[3] = {boundary_float(config, 0, x), boundary_float(config, 1, y),
                                    boundary_float(config, 2, z)};
                const float b[3] = {boundary_float(config, 0, x + 1), boundary_float(config, 1, y + 1),
                                    boundary_float(config, 2, z + 1)};
                if ((x + y + z) % 2 == 0) boxes.add(a, b, 1u, ~0u);
                boxes.add(a, a, 2u, ~0u);
            }
    const RefGrid ref(config, boxes);
    RealGrid real(config, boxes);
    REQUIRE(real.ok());
    const BoxGridView views[2] = {ref.view(), real.grid.view()};
    std::vector<Ray> rays;
    auto add = [&](float ox, float oy, float oz, float dx, float dy, float dz, float max_t) {
        Ray q;
        q.origin[0] = ox;
        q.origin[1] = oy;
        q.origin[2] = oz;
        q.direction[0] = dx;
        q.direction[1] = dy;
        q.direction[2] = dz;
        q.max_t = max_t;
        rays.push_back(q);
    };
    const float e1 = boundary_float(config, 1, 1);
    const float e2 = boundary_float(config, 2, 2);
    for (float sign : {1.0f, -1.0f}) {
        add(-5.0f, e1, e2, sign, 0, 0, kInf);             // along a cell edge (x axis)
        add(e1, -5.0f, e2, 0, sign, 0, kInf);             // along an edge (y axis)
        add(e1, e2, 9.0f, 0, 0, -sign, kInf);             // along an edge (z axis), from outside
        add(-1.0f, -1.0f, -1.0f, sign, sign, sign, kInf); // diagonal through lattice corners
        add(0.0f, 0.0f, 0.0f, sign, sign, 0.0f, 3.0f);    // face diagonal from a corner, limited
        add(2.0f, 2.0f, 2.0f, sign, -sign, sign, 2.5f);
    }
    add(1.0f, 1.0f, 1.0f, 0, 0, 0, 0.0f);          // zero length at a corner
    add(1.5f, 2.5f, 3.5f, 0, 0, 0, kInf);          // zero direction
    add(100.0f, 100.0f, 100.0f, 1, 1, 1, kInf);    // starts outside, leaves
    add(100.0f, 100.0f, 100.0f, -1, -1, -1, kInf); // starts outside, crosses everything
    add(-3.0f, 1.5f, 1.5f, 1, 0, 0, 3.0f);         // stops just before the boxes
    add(-3.0f, 1.5f, 1.5f, 1, 0, 0, 3.0f + 1e-6f);
    const float start[3] = {-2.0f, 0.5f, 0.5f}, end[3] = {7.0f, 3.5f, 2.0f};
    rays.push_back(hashgrid::segment_ray(start, end));
    for (const BoxGridView& v : views) {
        const BoxQueryGrid qg = hashgrid::prepare_box_queries(v, hashgrid::serial_backend());
        for (size_t i = 0; i < rays.size(); ++i) {
            Fnv1a h;
            CAPTURE(i);
            const std::string e = check_ray(qg, ref, rays[i], hashgrid::kAllLayers, h);
            CHECK_MESSAGE(e.empty(), e);
        }
    }
    // A hand-computed case: the edge ray along x at (y, z) = boundaries 1, 2
    // touches every box whose closed y and z ranges contain the edge.
    std::vector<RayHit> out(boxes.size());
    const BoxQueryGrid qg = hashgrid::prepare_box_queries(views[0], hashgrid::serial_backend());
    const QueryResult r = hashgrid::query_ray(qg, rays[0], 1u, out.data(), out.size()); // unit boxes only
    // Unit boxes with y in {0, 1} and z in {1, 2} touch the edge; half of them exist (parity): 4 x 4 / 2 = 8.
    CHECK(r.total == 8);
}

TEST_CASE("segments, spheres and nearest queries grazing boxes within a few ulps of cell boundaries") {
    // Box corners and segment end points a few ulps around cell boundaries: the
    // float slab test then decides hits that the exact segment misses (or the
    // reverse) by a rounding error, next to a cell the box does not cover.
    for (uint32_t dims : {2u, 3u}) {
        for (float origin : {0.0f, -7.25f, 1000.0f}) {
            SceneSpec spec{dims, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, origin, 6, 8};
            const BoxGridConfig config = make_config(spec, 200);
            Rng rng(dims * 7919u + static_cast<uint32_t>(origin + 100.0f));
            auto near_boundary = [&](uint32_t d) {
                float v = boundary_float(config, d, rng.between(0, 5));
                for (int32_t j = rng.between(-3, 3); j != 0; j += j > 0 ? -1 : 1)
                    v = std::nextafter(v, j > 0 ? kInf : -kInf);
                return v;
            };
            Boxes boxes;
            boxes.dims = dims;
            for (uint32_t i = 0; i < 200; ++i) {
                float a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
                for (uint32_t d = 0; d < dims; ++d) {
                    a[d] = near_boundary(d);
                    b[d] = rng.coin() ? a[d] : near_boundary(d);
                    if (b[d] < a[d]) std::swap(a[d], b[d]);
                }
                boxes.add(a, b, 1u, ~0u);
            }
            const RefGrid ref(config, boxes);
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
            const uint32_t rays = scaled_count(1500);
            for (uint32_t i = 0; i < rays; ++i) {
                float start[3] = {0, 0, 0}, end[3] = {0, 0, 0};
                for (uint32_t d = 0; d < dims; ++d) {
                    start[d] = near_boundary(d);
                    end[d] = near_boundary(d);
                }
                Ray q = hashgrid::segment_ray(start, end);
                if (rng.coin()) q.max_t = kInf; // the whole line beyond the end point
                Fnv1a h;
                // The visitor forms (every call continues a run from the
                // last hit) on every third ray, so k cycles through 1..4.
                const VisitorStops visitor = i % 3 == 0 ? VisitorStops::ends : VisitorStops::none;
                const std::string e = check_ray(qg, ref, q, hashgrid::kAllLayers, h, visitor);
                CAPTURE(dims);
                CAPTURE(origin);
                CAPTURE(i);
                REQUIRE_MESSAGE(e.empty(), e);
                // A radius that is the float distance to another boundary point.
                QuerySphere rq;
                const uint32_t axis = rng.below(dims);
                for (uint32_t d = 0; d < dims; ++d)
                    rq.center[d] = start[d];
                rq.radius = std::fabs(end[axis] - start[axis]);
                const std::string er = check_radius(qg, ref, rq, hashgrid::kAllLayers, h);
                REQUIRE_MESSAGE(er.empty(), er);
                QueryNearest nq;
                for (uint32_t d = 0; d < dims; ++d)
                    nq.center[d] = start[d];
                nq.max_distance = rng.coin() ? rq.radius : kInf;
                nq.k = 1 + i % 4;
                const std::string en = check_nearest(qg, ref, nq, hashgrid::kAllLayers, h, visitor);
                REQUIRE_MESSAGE(en.empty(), en);
            }
        }
    }
}

TEST_CASE("nearest and ray visitors: identical boxes and equal t, every run boundary, both views") {
    // What the rays saw (so that the checks cannot pass vacuously).
    uint64_t equal_t = 0, most_hits = 0;
    auto tally = [&](const BoxQueryGrid& qg, const Ray& ray, uint32_t mask, uint32_t objects) {
        std::vector<RayHit> hits(objects);
        const QueryResult r = hashgrid::query_ray(qg, ray, mask, hits.data(), hits.size());
        for (uint64_t j = 1; j < r.written; ++j)
            equal_t += hits[j].t == hits[j - 1].t ? 1u : 0u;
        most_hits = std::max(most_hits, r.written);
    };
    // Each box of a random scene one to three times (identical boxes: equal
    // distances and t under different indices, some in other layers), on every
    // spec (2D/3D, bounded, clamp, unbounded, large objects).
    for (size_t spec_index = 0; spec_index < std::size(kSpecs); ++spec_index) {
        const SceneSpec& spec = kSpecs[spec_index];
        Rng rng(0x715u + spec_index);
        const uint32_t base_count = 10 + rng.below(scaled_count(60));
        const BoxGridConfig base_config = make_config(spec, base_count);
        const Boxes base = random_boxes(rng, spec, base_config, base_count);
        Boxes boxes;
        boxes.dims = spec.dims;
        for (uint32_t i = 0; i < base.size(); ++i) {
            float lo[3], hi[3];
            base.box(i, lo, hi);
            for (uint32_t copies = 1 + rng.below(3); copies > 0; --copies)
                boxes.add(lo, hi, rng.coin() ? base.category[i] : 1u, base.mask[i]);
        }
        const BoxGridConfig config = make_config(spec, boxes.size());
        const RefGrid ref(config, boxes);
        RealGrid real(config, boxes);
        REQUIRE(real.ok());
        const Queries q = random_queries(rng, spec, config, scaled_count(12));
        const uint32_t k_values[] = {1, 2, 3, 8, 64, 65, boxes.size() + 2};
        const float limits[] = {kInf, 2.0f * spec.cell, 0.0f};
        CAPTURE(spec_index);
        for (const BoxGridView& view : {ref.view(), real.grid.view()}) {
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(view, hashgrid::serial_backend());
            Fnv1a h;
            for (size_t i = 0; i < q.rays.size(); ++i) {
                CAPTURE(i);
                for (uint32_t mask : {hashgrid::kAllLayers, q.ray_masks[i]}) {
                    const std::string e = check_ray(qg, ref, q.rays[i], mask, h, VisitorStops::boundaries);
                    CHECK_MESSAGE(e.empty(), e);
                    tally(qg, q.rays[i], mask, boxes.size());
                }
                for (uint32_t k : k_values)
                    for (float limit : limits) {
                        QueryNearest nq = q.nearest[i];
                        nq.k = k;
                        nq.max_distance = limit;
                        if (i % 2 == 0) // on a box corner: distance 0 to every copy
                            for (uint32_t d = 0; d < spec.dims; ++d)
                                nq.center[d] = boxes.lo[d][static_cast<uint32_t>(i) % boxes.size()];
                        const std::string e = check_nearest(qg, ref, nq, q.nearest_masks[i], h,
                                                            k >= 65 ? VisitorStops::boundaries : VisitorStops::ends);
                        CHECK_MESSAGE(e.empty(), "k=" << k << " max=" << limit << ": " << e);
                    }
            }
        }
    }
    // Rows of overlapping boxes along x (each one to three times) and rays
    // along them: hundreds of hits, so every run boundary is crossed.
    for (uint32_t dims : {2u, 3u}) {
        SceneSpec spec{dims, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, 0.0f, 10, 8};
        Rng rng(0x70e + dims);
        Boxes boxes;
        boxes.dims = dims;
        for (uint32_t i = 0; i < 120; ++i) {
            const float lo[3] = {0.5f * static_cast<float>(i), 0.0f, 0.0f};
            const float hi[3] = {lo[0] + rng.uniform(0.0f, 2.0f), 1.0f, 1.0f};
            for (uint32_t copies = 1 + rng.below(3); copies > 0; --copies)
                boxes.add(lo, hi, 1u << rng.below(2), ~0u);
        }
        const BoxGridConfig config = make_config(spec, boxes.size());
        const RefGrid ref(config, boxes);
        RealGrid real(config, boxes);
        REQUIRE(real.ok());
        for (const BoxGridView& view : {ref.view(), real.grid.view()}) {
            const BoxQueryGrid qg = hashgrid::prepare_box_queries(view, hashgrid::serial_backend());
            Fnv1a h;
            for (uint32_t i = 0; i < scaled_count(8); ++i) {
                Ray ray;
                ray.origin[0] = i == 0 ? -5.0f : rng.uniform(-5.0f, 30.0f); // the first crosses every box
                ray.origin[1] = i % 2 == 0 ? 0.5f : rng.uniform(-0.5f, 1.5f);
                ray.origin[2] = i % 2 == 0 ? 1.0f : rng.uniform(-0.5f, 1.5f); // on a face: equal t
                ray.direction[0] = i % 3 == 2 ? -1.0f : 1.0f;
                ray.direction[1] = i % 2 == 0 ? 0.0f : rng.uniform(-0.01f, 0.01f);
                ray.direction[2] = i % 2 == 0 ? 0.0f : rng.uniform(-0.01f, 0.01f);
                ray.max_t = i % 4 == 1 ? rng.uniform(10.0f, 80.0f) : kInf;
                for (uint32_t mask : {hashgrid::kAllLayers, 1u}) {
                    const std::string e = check_ray(qg, ref, ray, mask, h, VisitorStops::boundaries);
                    CHECK_MESSAGE(e.empty(), dims << "D row, ray " << i << ": " << e);
                    tally(qg, ray, mask, boxes.size());
                }
            }
        }
    }
    CHECK(equal_t > 100);
    CHECK(most_hits > 191);
}

TEST_CASE("frustum: a perspective frustum, inside-out and degenerate plane sets") {
    SceneSpec spec = kSpecs[0];
    Rng rng(4242);
    const BoxGridConfig config = make_config(spec, 300);
    const Boxes boxes = random_boxes(rng, spec, config, 300);
    const RefGrid ref(config, boxes);
    const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
    // Camera at (-2, 5, 5) looking +x, 45 degree half angles: planes x - |y - 5| ... written out.
    Frustum camera;
    camera.plane_count = 6;
    camera.planes[0] = {{1, 0, 0}, 1.0f};                 // near: x >= -1
    camera.planes[1] = {{-1, 0, 0}, 8.0f};                // far: x <= 8
    camera.planes[2] = {{1, -1, 0}, -2.0f + 5.0f};        // (x + 2) - (y - 5) >= 0
    camera.planes[3] = {{1, 1, 0}, 2.0f - 5.0f};          // (x + 2) + (y - 5) >= 0
    camera.planes[4] = {{1, 0, -1}, -2.0f + 5.0f + 0.0f}; // (x + 2) - (z - 5) >= 0
    camera.planes[5] = {{1, 0, 1}, 2.0f - 5.0f};
    Frustum inside_out = camera;
    for (uint32_t i = 0; i < inside_out.plane_count; ++i) {
        hashgrid::Plane& p = inside_out.planes[i];
        for (float& n : p.normal)
            n = -n;
        p.d = -p.d;
    }
    Frustum everything, nothing, flat;
    everything.plane_count = nothing.plane_count = 1;
    everything.planes[0].d = 0.0f; // 0 >= 0: inside
    nothing.planes[0].d = -1.0f;
    flat.plane_count = 2;
    flat.planes[0] = {{0, 1, 0}, -5.0f}; // y >= 5 and y <= 5: the plane y = 5 itself
    flat.planes[1] = {{0, -1, 0}, 5.0f};
    Fnv1a h;
    for (const Frustum* f : {&camera, &inside_out, &everything, &nothing, &flat}) {
        const std::string e = check_frustum(qg, ref, *f, hashgrid::kAllLayers, h);
        CHECK_MESSAGE(e.empty(), e);
    }
    std::vector<uint32_t> out(boxes.size());
    CHECK(hashgrid::query_frustum(qg, everything, hashgrid::kAllLayers, out.data(), 300).total == 300);
    CHECK(hashgrid::query_frustum(qg, nothing, hashgrid::kAllLayers, out.data(), 300).total == 0);
}

TEST_CASE("every too-small buffer size gives the exact count and a valid prefix") {
    const SceneSpec spec = kSpecs[0];
    Rng rng(99);
    const BoxGridConfig config = make_config(spec, 120);
    const Boxes boxes = random_boxes(rng, spec, config, 120);
    const RefGrid ref(config, boxes);
    const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
    QueryBox bq;
    for (uint32_t d = 0; d < 3; ++d) {
        bq.min[d] = 2.0f;
        bq.max[d] = 7.0f;
    }
    QuerySphere rq;
    rq.center[0] = rq.center[1] = rq.center[2] = 5.0f;
    rq.radius = 3.0f;
    Ray ray;
    ray.origin[0] = -1.0f;
    ray.origin[1] = 4.5f;
    ray.origin[2] = 5.0f;
    ray.direction[0] = 1.0f;
    ray.direction[1] = 0.1f;
    ray.direction[2] = 0.05f;
    ray.max_t = kInf;
    const Frustum frustum = random_frustum(rng, 3, 0.0f, 10.0f);
    QueryNearest nq;
    nq.center[0] = nq.center[1] = nq.center[2] = 5.0f;
    const uint32_t k = 12;
    nq.k = k;
    const uint32_t all = hashgrid::kAllLayers;

    std::vector<uint32_t> full(200), part(200);
    std::vector<RayHit> full_hits(200), part_hits(200);
    std::vector<NearestHit> full_near(k), part_near(k);
    const uint64_t nb = hashgrid::query_box(qg, bq, all, full.data(), 200).total;
    const uint64_t nr = hashgrid::query_radius(qg, rq, all, full.data() + 0, 200).total;
    REQUIRE(nb > 3);
    REQUIRE(nr > 3);
    auto check_prefix = [](const QueryResult& r, uint64_t total, uint64_t cap) {
        CHECK(r.total == total);
        CHECK(r.written == std::min(total, cap));
        if (cap < total) {
            CHECK(r.status.code == StatusCode::output_too_small);
            CHECK(r.status.needed == total);
        } else {
            CHECK(r.status.ok());
        }
    };
    // Box, radius, frustum, point, collisions: prefix of the full answer.
    auto sweep = [&](auto&& run) {
        const QueryResult whole = run(full.data(), 200u);
        REQUIRE(whole.status.ok());
        for (uint64_t cap = 0; cap <= whole.total; ++cap) {
            std::fill(part.begin(), part.end(), 0xdeadbeefu);
            const QueryResult r = run(cap == 0 ? nullptr : part.data(), cap);
            check_prefix(r, whole.total, cap);
            CHECK(std::equal(part.begin(), part.begin() + static_cast<ptrdiff_t>(r.written), full.begin()));
            CHECK(part[r.written] == 0xdeadbeefu); // nothing past the capacity
        }
    };
    sweep([&](uint32_t* o, uint64_t c) { return hashgrid::query_box(qg, bq, all, o, c); });
    sweep([&](uint32_t* o, uint64_t c) { return hashgrid::query_radius(qg, rq, all, o, c); });
    sweep([&](uint32_t* o, uint64_t c) { return hashgrid::query_frustum(qg, frustum, all, o, c); });
    sweep([&](uint32_t* o, uint64_t c) { return hashgrid::query_potential_collisions(qg, 5, o, c); });
    // Rays: the first `cap` hits by (t, index).
    const QueryResult all_hits = hashgrid::query_ray(qg, ray, all, full_hits.data(), 200);
    REQUIRE(all_hits.total > 3);
    for (uint64_t cap = 0; cap <= all_hits.total; ++cap) {
        const QueryResult r = hashgrid::query_ray(qg, ray, all, cap == 0 ? nullptr : part_hits.data(), cap);
        check_prefix(r, all_hits.total, cap);
        for (uint64_t j = 0; j < r.written; ++j) {
            CHECK(part_hits[j].index == full_hits[j].index);
            CHECK(float_bits(part_hits[j].t) == float_bits(full_hits[j].t));
        }
    }
    // Nearest: the nearest `cap`, needed = min(k, eligible).
    const QueryResult all_near = hashgrid::query_nearest(qg, nq, all, full_near.data(), k);
    REQUIRE(all_near.total == k);
    for (uint64_t cap = 0; cap <= k; ++cap) {
        const QueryResult r = hashgrid::query_nearest(qg, nq, all, cap == 0 ? nullptr : part_near.data(), cap);
        check_prefix(r, k, cap);
        for (uint64_t j = 0; j < r.written; ++j)
            CHECK(part_near[j].index == full_near[j].index);
    }
    // Nearest with a distance limit: fewer than k exist.
    QueryNearest limited = nq;
    limited.max_distance = 0.5f;
    limited.k = 1000;
    const uint64_t within = ref_nearest(ref, limited, all).size();
    for (uint64_t cap = 0; cap <= k; ++cap) {
        const QueryResult r = hashgrid::query_nearest(qg, limited, all, cap == 0 ? nullptr : part_near.data(), cap);
        check_prefix(r, within, cap);
    }
}

TEST_CASE("bad input is invalid_query, never a crash or a partial write") {
    const SceneSpec spec = kSpecs[0];
    Rng rng(5);
    const BoxGridConfig config = make_config(spec, 50);
    const Boxes boxes = random_boxes(rng, spec, config, 50);
    const RefGrid ref(config, boxes);
    const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
    const uint32_t all = hashgrid::kAllLayers;
    uint32_t out[64];
    RayHit hits[64];
    NearestHit nearest_out[64];
    auto invalid = [](const QueryResult& r) { return r.status.code == StatusCode::invalid_query && r.total == 0; };

    QueryPoint p;
    p.position[1] = kNaN;
    CHECK(invalid(hashgrid::query_point(qg, p, all, out, 64)));
    p.position[1] = kInf;
    CHECK(invalid(hashgrid::query_point(qg, p, all, out, 64)));

    QueryBox b;
    b.min[0] = 1.0f;
    b.max[0] = 0.0f;
    CHECK(invalid(hashgrid::query_box(qg, b, all, out, 64)));
    b.min[0] = kNaN;
    CHECK(invalid(hashgrid::query_box(qg, b, all, out, 64)));
    b.min[0] = -kInf; // infinite bounds are fine
    b.max[0] = kInf;
    CHECK(hashgrid::query_box(qg, b, all, out, 64).status.ok());

    QuerySphere r;
    r.radius = -1.0f;
    CHECK(invalid(hashgrid::query_radius(qg, r, all, out, 64)));
    r.radius = kNaN;
    CHECK(invalid(hashgrid::query_radius(qg, r, all, out, 64)));
    r.radius = 1.0f;
    r.center[2] = kInf;
    CHECK(invalid(hashgrid::query_radius(qg, r, all, out, 64)));

    Ray ray;
    ray.max_t = -1.0f;
    CHECK(invalid(hashgrid::query_ray(qg, ray, all, hits, 64)));
    CHECK(invalid(hashgrid::query_ray_first(qg, ray, all, hits)));
    ray.max_t = kNaN;
    CHECK(invalid(hashgrid::query_ray(qg, ray, all, hits, 64)));
    ray.max_t = 1.0f;
    ray.direction[0] = kNaN;
    CHECK(invalid(hashgrid::query_ray(qg, ray, all, hits, 64)));
    ray.direction[0] = kInf;
    CHECK(invalid(hashgrid::query_ray(qg, ray, all, hits, 64)));

    QueryNearest n;
    n.k = 0;
    CHECK(invalid(hashgrid::query_nearest(qg, n, all, nearest_out, 64)));
    n.k = 1;
    n.max_distance = -1.0f;
    CHECK(invalid(hashgrid::query_nearest(qg, n, all, nearest_out, 64)));
    n.max_distance = kNaN;
    CHECK(invalid(hashgrid::query_nearest(qg, n, all, nearest_out, 64)));
    n.max_distance = 1.0f;
    n.center[0] = kNaN;
    CHECK(invalid(hashgrid::query_nearest(qg, n, all, nearest_out, 64)));

    Frustum f;
    CHECK(invalid(hashgrid::query_frustum(qg, f, all, out, 64)));
    f.plane_count = hashgrid::kMaxFrustumPlanes + 1;
    CHECK(invalid(hashgrid::query_frustum(qg, f, all, out, 64)));
    f.plane_count = 1;
    f.planes[0].d = kNaN;
    CHECK(invalid(hashgrid::query_frustum(qg, f, all, out, 64)));

    // Visitor forms refuse the same queries without a call.
    uint32_t calls = 0;
    const hashgrid::QueryVisitor counter{[](void* c, uint32_t) {
                                             ++*static_cast<uint32_t*>(c);
                                             return true;
                                         },
                                         &calls};
    CHECK(invalid(hashgrid::query_point(qg, p, all, counter)));
    CHECK(invalid(hashgrid::query_box(qg, QueryBox{{1, 0, 0}, {0, 0, 0}}, all, counter)));
    CHECK(invalid(hashgrid::query_radius(qg, r, all, counter)));
    CHECK(invalid(hashgrid::query_frustum(qg, f, all, counter)));
    const hashgrid::RayVisitor ray_counter{[](void* c, const RayHit&) {
                                               ++*static_cast<uint32_t*>(c);
                                               return true;
                                           },
                                           &calls};
    const hashgrid::NearestVisitor nearest_counter{[](void* c, const NearestHit&) {
                                                       ++*static_cast<uint32_t*>(c);
                                                       return true;
                                                   },
                                                   &calls};
    CHECK(invalid(hashgrid::query_ray(qg, ray, all, ray_counter))); // direction inf
    ray.direction[0] = 1.0f;
    ray.max_t = -1.0f;
    CHECK(invalid(hashgrid::query_ray(qg, ray, all, ray_counter)));
    ray.max_t = kNaN;
    CHECK(invalid(hashgrid::query_ray(qg, ray, all, ray_counter)));
    ray.max_t = kInf;
    ray.origin[1] = kNaN;
    CHECK(invalid(hashgrid::query_ray(qg, ray, all, ray_counter)));
    CHECK(invalid(hashgrid::query_nearest(qg, n, all, nearest_counter))); // centre NaN
    n.center[0] = 0.0f;
    n.k = 0;
    CHECK(invalid(hashgrid::query_nearest(qg, n, all, nearest_counter)));
    n.k = 1;
    n.max_distance = -1.0f;
    CHECK(invalid(hashgrid::query_nearest(qg, n, all, nearest_counter)));
    n.max_distance = kNaN;
    CHECK(invalid(hashgrid::query_nearest(qg, n, all, nearest_counter)));
    CHECK(calls == 0);

    // A null visit function is a programmer error: asserted, then invalid_argument.
    {
        ContinueOnAssert hook;
        ray.origin[1] = 0.0f;
        n.max_distance = kInf;
        const QueryResult rr = hashgrid::query_ray(qg, ray, all, hashgrid::RayVisitor{});
        CHECK(rr.status.code == StatusCode::invalid_argument);
        CHECK(rr.total == 0);
        const QueryResult nr = hashgrid::query_nearest(qg, n, all, hashgrid::NearestVisitor{});
        CHECK(nr.status.code == StatusCode::invalid_argument);
        CHECK(nr.total == 0);
    }

    // Batches name the lowest invalid query and its count (out may hold partial results).
    std::vector<QuerySphere> batch(40);
    batch[17].radius = -2.0f;
    batch[31].center[0] = kNaN;
    std::vector<uint64_t> offsets(41);
    std::fill(std::begin(out), std::end(out), 7u);
    const QueryResult br = hashgrid::query_radius_batch(qg, batch.data(), 40, all, offsets.data(), offsets.size(), out,
                                                        64, hashgrid::serial_backend());
    CHECK(br.status.code == StatusCode::invalid_query);
    CHECK(br.status.index == 17);
    CHECK(br.status.count == 2);
    CHECK(br.total == 0);
    std::vector<QueryNearest> nb(5);
    nb[3].k = 0;
    std::vector<NearestHit> nout(5);
    const QueryResult bad_k = hashgrid::query_nearest_batch(qg, nb.data(), 5, all, offsets.data(), offsets.size(),
                                                            nout.data(), 5, hashgrid::serial_backend());
    CHECK(bad_k.status.code == StatusCode::invalid_query);
    CHECK(bad_k.status.index == 3);
    CHECK(bad_k.status.count == 1);
    std::vector<Frustum> fb(4);
    for (Frustum& x : fb)
        x.plane_count = 1;
    fb[2].plane_count = 0;
    const QueryResult bad_frustum = hashgrid::query_frustum_batch(qg, fb.data(), 4, all, offsets.data(), offsets.size(),
                                                                  out, 64, hashgrid::serial_backend());
    CHECK(bad_frustum.status.code == StatusCode::invalid_query);
    CHECK(bad_frustum.status.index == 2);
}

TEST_CASE("batches: offsets_capacity < count + 1 is output_too_small with needed = count + 1") {
    const SceneSpec spec = kSpecs[0];
    Rng rng(6);
    const BoxGridConfig config = make_config(spec, 50);
    const Boxes boxes = random_boxes(rng, spec, config, 50);
    const RefGrid ref(config, boxes);
    const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    const uint32_t all = hashgrid::kAllLayers;
    const uint32_t count = 7;
    std::vector<QueryPoint> points(count);
    std::vector<QueryBox> boxes_q(count);
    std::vector<QuerySphere> spheres(count);
    std::vector<Frustum> frusta(count);
    std::vector<Ray> rays(count);
    std::vector<QueryNearest> nearest(count);
    for (Frustum& f : frusta)
        f.plane_count = 1;
    std::vector<uint32_t> out(64);
    std::vector<RayHit> hits(64);
    std::vector<NearestHit> nearest_hits(64);
    for (uint64_t offsets_capacity : {uint64_t{0}, uint64_t{1}, uint64_t{count}}) {
        CAPTURE(offsets_capacity);
        std::vector<uint64_t> offsets(count + 1, 77);
        const QueryResult results[] = {
            hashgrid::query_point_batch(qg, points.data(), count, all, offsets.data(), offsets_capacity, out.data(),
                                        out.size(), serial),
            hashgrid::query_box_batch(qg, boxes_q.data(), count, all, offsets.data(), offsets_capacity, out.data(),
                                      out.size(), serial),
            hashgrid::query_radius_batch(qg, spheres.data(), count, all, offsets.data(), offsets_capacity, out.data(),
                                         out.size(), serial),
            hashgrid::query_frustum_batch(qg, frusta.data(), count, all, offsets.data(), offsets_capacity, out.data(),
                                          out.size(), serial),
            hashgrid::query_ray_batch(qg, rays.data(), count, all, offsets.data(), offsets_capacity, hits.data(),
                                      hits.size(), serial),
            hashgrid::query_nearest_batch(qg, nearest.data(), count, all, offsets.data(), offsets_capacity,
                                          nearest_hits.data(), nearest_hits.size(), serial),
        };
        for (const QueryResult& r : results) {
            CHECK(r.status.code == StatusCode::output_too_small);
            CHECK(r.status.needed == count + 1);
            CHECK(r.total == 0);
            CHECK(r.written == 0);
        }
        CHECK(offsets == std::vector<uint64_t>(count + 1, 77)); // nothing written
    }
}

namespace {

/// The concatenation of single-query outputs with CSR offsets: what a batch must give.
template <typename T>
struct Concat {
    std::vector<uint64_t> offsets{0};
    std::vector<T> results;
    void add(const T* out, uint64_t total) {
        results.insert(results.end(), out, out + total);
        offsets.push_back(results.size());
    }
};

bool same_result(uint32_t a, uint32_t b) { return a == b; }
bool same_result(const RayHit& a, const RayHit& b) { return a.index == b.index && float_bits(a.t) == float_bits(b.t); }
bool same_result(const NearestHit& a, const NearestHit& b) {
    return a.index == b.index && float_bits(a.distance_squared) == float_bits(b.distance_squared);
}
template <typename T>
bool same_prefix(const std::vector<T>& expect, const T* got, uint64_t count) {
    for (uint64_t j = 0; j < count; ++j)
        if (!same_result(expect[j], got[j])) return false;
    return true;
}

/// Runs batch(offsets, offsets_capacity, out, capacity) with a roomy buffer
/// and checks it against the single queries' concatenation.
template <typename T, typename Batch>
void check_batch(const char* name, const Concat<T>& expect, Batch&& batch) {
    CAPTURE(name);
    std::vector<uint64_t> offsets(expect.offsets.size());
    std::vector<T> out(expect.results.size() + 1);
    const QueryResult r = batch(offsets.data(), offsets.size(), out.data(), out.size());
    CHECK(r.status.ok());
    CHECK(r.total == expect.results.size());
    CHECK(r.written == expect.results.size());
    CHECK(offsets == expect.offsets);
    CHECK(same_prefix(expect.results, out.data(), expect.results.size()));
}

/// Every too-small capacity (in steps) of a batch: exact total, complete
/// offsets, a valid prefix and nothing written past the capacity.
template <typename T, typename Batch>
void check_batch_prefixes(const char* name, const Concat<T>& expect, const T& sentinel, Batch&& batch) {
    CAPTURE(name);
    const uint64_t total = expect.results.size();
    std::vector<uint64_t> offsets(expect.offsets.size());
    std::vector<T> out(total + 1);
    for (uint64_t cap = 0; cap < total; cap += std::max<uint64_t>(1, total / 17)) {
        CAPTURE(cap);
        std::fill(out.begin(), out.end(), sentinel);
        const QueryResult r = batch(offsets.data(), offsets.size(), cap == 0 ? nullptr : out.data(), cap);
        CHECK(r.status.code == StatusCode::output_too_small);
        CHECK(r.status.needed == total);
        CHECK(r.total == total);
        CHECK(r.written == cap);
        CHECK(offsets == expect.offsets);
        CHECK(same_prefix(expect.results, out.data(), cap));
        CHECK(same_result(out[cap], sentinel));
    }
}

} // namespace

TEST_CASE("batches equal the single queries, identical for every thread count") {
    using hashgrid::ThreadBackend;
    for (size_t spec_index : {size_t{0}, size_t{3}}) {
        const SceneSpec& spec = kSpecs[spec_index];
        Rng rng(1234 + spec_index);
        const uint32_t n = scaled_count(400);
        const BoxGridConfig config = make_config(spec, n);
        const Boxes boxes = random_boxes(rng, spec, config, n);
        const RefGrid ref(config, boxes);
        const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
        const uint32_t qn = scaled_count(150);
        const Queries q = random_queries(rng, spec, config, qn);
        // One layer mask per batch: every layer for one spec, two of four for the other.
        const uint32_t mask = spec_index == 0 ? hashgrid::kAllLayers : 0x5u;
        CAPTURE(spec_index);

        // Serial single-query answers concatenated.
        Concat<uint32_t> points, boxes_out, spheres, frusta;
        Concat<RayHit> rays;
        Concat<NearestHit> nearest;
        std::vector<RayHit> firsts(qn);
        std::vector<uint32_t> tmp(n + 1);
        std::vector<RayHit> tmp_hits(n + 1);
        std::vector<NearestHit> tmp_near(n + 1);
        for (uint32_t i = 0; i < qn; ++i) {
            points.add(tmp.data(), hashgrid::query_point(qg, q.points[i], mask, tmp.data(), n + 1).total);
            boxes_out.add(tmp.data(), hashgrid::query_box(qg, q.boxes[i], mask, tmp.data(), n + 1).total);
            spheres.add(tmp.data(), hashgrid::query_radius(qg, q.spheres[i], mask, tmp.data(), n + 1).total);
            frusta.add(tmp.data(), hashgrid::query_frustum(qg, q.frusta[i], mask, tmp.data(), n + 1).total);
            rays.add(tmp_hits.data(), hashgrid::query_ray(qg, q.rays[i], mask, tmp_hits.data(), n + 1).total);
            nearest.add(tmp_near.data(), hashgrid::query_nearest(qg, q.nearest[i], mask, tmp_near.data(), n + 1).total);
            CHECK(hashgrid::query_ray_first(qg, q.rays[i], mask, &firsts[i]).status.ok());
        }
        REQUIRE(nearest.results.size() > qn); // k varies per query (1..5)

        auto run_all = [&](const ThreadBackend& backend, uint32_t threads) {
            CAPTURE(threads);
            const auto point_batch = [&](uint64_t* o, uint64_t oc, uint32_t* out, uint64_t cap) {
                return hashgrid::query_point_batch(qg, q.points.data(), qn, mask, o, oc, out, cap, backend);
            };
            const auto box_batch = [&](uint64_t* o, uint64_t oc, uint32_t* out, uint64_t cap) {
                return hashgrid::query_box_batch(qg, q.boxes.data(), qn, mask, o, oc, out, cap, backend);
            };
            const auto radius_batch = [&](uint64_t* o, uint64_t oc, uint32_t* out, uint64_t cap) {
                return hashgrid::query_radius_batch(qg, q.spheres.data(), qn, mask, o, oc, out, cap, backend);
            };
            const auto frustum_batch = [&](uint64_t* o, uint64_t oc, uint32_t* out, uint64_t cap) {
                return hashgrid::query_frustum_batch(qg, q.frusta.data(), qn, mask, o, oc, out, cap, backend);
            };
            const auto ray_batch = [&](uint64_t* o, uint64_t oc, RayHit* out, uint64_t cap) {
                return hashgrid::query_ray_batch(qg, q.rays.data(), qn, mask, o, oc, out, cap, backend);
            };
            const auto nearest_batch = [&](uint64_t* o, uint64_t oc, NearestHit* out, uint64_t cap) {
                return hashgrid::query_nearest_batch(qg, q.nearest.data(), qn, mask, o, oc, out, cap, backend);
            };
            check_batch("point", points, point_batch);
            check_batch("box", boxes_out, box_batch);
            check_batch("radius", spheres, radius_batch);
            check_batch("frustum", frusta, frustum_batch);
            check_batch("ray", rays, ray_batch);
            check_batch("nearest", nearest, nearest_batch);

            std::vector<RayHit> first(qn, RayHit{7u, 7.0f});
            const QueryResult rf = hashgrid::query_ray_first_batch(qg, q.rays.data(), qn, mask, first.data(), backend);
            CHECK(rf.status.ok());
            CHECK(rf.written == qn);
            CHECK(rf.total == static_cast<uint64_t>(std::count_if(firsts.begin(), firsts.end(), [](const RayHit& h) {
                      return h.index != hashgrid::kNoIndex;
                  })));
            CHECK(same_prefix(firsts, first.data(), qn));

            // Every too-small capacity: exact total, complete offsets, valid prefix.
            check_batch_prefixes("box", boxes_out, 0xdeadbeefu, box_batch);
            check_batch_prefixes("frustum", frusta, 0xdeadbeefu, frustum_batch);
            check_batch_prefixes("nearest", nearest, NearestHit{0xdeadbeefu, -1.0f}, nearest_batch);

            // Every capacity of a small batch (the first queries).
            const uint32_t few = std::min<uint32_t>(qn, 6);
            const uint64_t few_total = boxes_out.offsets[few];
            std::vector<uint64_t> offsets(few + 1);
            std::vector<uint32_t> out(few_total + 1);
            for (uint64_t cap = 0; cap <= few_total; ++cap) {
                std::fill(out.begin(), out.end(), 0xdeadbeefu);
                const QueryResult r =
                    hashgrid::query_box_batch(qg, q.boxes.data(), few, mask, offsets.data(), offsets.size(),
                                              cap == 0 ? nullptr : out.data(), cap, backend);
                CHECK(r.total == few_total);
                CHECK(r.written == std::min(cap, few_total));
                CHECK(r.status.code == (cap < few_total ? StatusCode::output_too_small : StatusCode::ok));
                CHECK(same_prefix(boxes_out.results, out.data(), r.written));
                CHECK(out[r.written] == 0xdeadbeefu);
            }
        };
        run_all(hashgrid::serial_backend(), 0);
        for (uint32_t threads : {1u, 2u, 3u, 4u, 8u}) {
            ParallelBackend pb(threads);
            run_all(pb.backend(), threads);
        }
    }
}

TEST_CASE("golden hashes of query results") {
    // One hash per scene spec over every query kind (reference view; the real
    // BoxGrid view gives the same results, checked above). Same on every platform.
    // Golden values: golden::kBoxQueries in tests/golden_hashes.h.
    REQUIRE(std::size(golden::kBoxQueries) == std::size(kSpecs));
    if (print_golden()) std::printf("inline constexpr uint64_t kBoxQueries[] = {\n");
    for (size_t spec_index = 0; spec_index < std::size(kSpecs); ++spec_index) {
        const SceneSpec& spec = kSpecs[spec_index];
        Rng rng(0x60d0000u + spec_index);
        const BoxGridConfig config = make_config(spec, 150);
        const Boxes boxes = random_boxes(rng, spec, config, 150);
        const RefGrid ref(config, boxes);
        const Queries q = random_queries(rng, spec, config, 30);
        const BoxQueryGrid qg = hashgrid::prepare_box_queries(ref.view(), hashgrid::serial_backend());
        Fnv1a h;
        const std::string e = check_all(qg, ref, q, h);
        CHECK_MESSAGE(e.empty(), e);
        if (print_golden()) std::printf("    0x%016" PRIx64 "ull, // spec %zu\n", h.value(), spec_index);
        CHECK(h.value() == golden::kBoxQueries[spec_index]);
    }
    if (print_golden()) std::printf("};\n");
}

// Every box query, single and batched, through one BoxQueryGrid: the status
// codes of the whole call family, in the order the header lists them.
std::vector<StatusCode> every_query_status(const BoxQueryGrid& q) {
    using namespace hashgrid;
    const ThreadBackend serial = serial_backend();
    uint32_t out[16];
    uint64_t offsets[2];
    RayHit hits[16];
    NearestHit nearest[16];
    const QueryPoint pq{{1.5f, 1.5f, 1.5f}};
    QueryBox bq;
    for (uint32_t d = 0; d < 3; ++d) {
        bq.min[d] = 0.0f;
        bq.max[d] = 4.0f;
    }
    QuerySphere rq;
    rq.center[0] = rq.center[1] = rq.center[2] = 1.0f;
    rq.radius = 2.0f;
    Ray ray;
    ray.direction[0] = 1.0f;
    ray.max_t = 10.0f;
    Frustum frustum;
    frustum.plane_count = 1;
    frustum.planes[0].normal[0] = 1.0f;
    QueryNearest nq;
    nq.k = 2;
    const QueryVisitor visitor{[](void*, uint32_t) { return true; }, nullptr};
    const RayVisitor ray_visitor{[](void*, const RayHit&) { return true; }, nullptr};
    const NearestVisitor nearest_visitor{[](void*, const NearestHit&) { return true; }, nullptr};
    return {
        query_point(q, pq, kAllLayers, out, 16).status.code,
        query_point(q, pq, kAllLayers, visitor).status.code,
        query_box(q, bq, kAllLayers, out, 16).status.code,
        query_box(q, bq, kAllLayers, visitor).status.code,
        query_radius(q, rq, kAllLayers, out, 16).status.code,
        query_radius(q, rq, kAllLayers, visitor).status.code,
        query_ray(q, ray, kAllLayers, hits, 16).status.code,
        query_ray(q, ray, kAllLayers, ray_visitor).status.code,
        query_ray_first(q, ray, kAllLayers, hits).status.code,
        query_frustum(q, frustum, kAllLayers, out, 16).status.code,
        query_frustum(q, frustum, kAllLayers, visitor).status.code,
        query_nearest(q, nq, kAllLayers, nearest, 16).status.code,
        query_nearest(q, nq, kAllLayers, nearest_visitor).status.code,
        query_potential_collisions(q, 0, out, 16).status.code,
        query_potential_collisions(q, 0, visitor).status.code,
        query_point_batch(q, &pq, 1, kAllLayers, offsets, 2, out, 16, serial).status.code,
        query_box_batch(q, &bq, 1, kAllLayers, offsets, 2, out, 16, serial).status.code,
        query_radius_batch(q, &rq, 1, kAllLayers, offsets, 2, out, 16, serial).status.code,
        query_frustum_batch(q, &frustum, 1, kAllLayers, offsets, 2, out, 16, serial).status.code,
        query_ray_batch(q, &ray, 1, kAllLayers, offsets, 2, hits, 16, serial).status.code,
        query_nearest_batch(q, &nq, 1, kAllLayers, offsets, 2, nearest, 16, serial).status.code,
        query_ray_first_batch(q, &ray, 1, kAllLayers, hits, serial).status.code,
    };
}

TEST_CASE("box queries: never built is not_built; a rebuild or re-init makes a prepared grid stale_view") {
    using namespace hashgrid;
    BoxGridConfig config;
    config.cell_size = 1.0f;
    config.max_objects = 8;
    config.max_cell_entries = 64;
    config.max_pairs = 16;
    BoxGrid grid;
    const ThreadBackend serial = serial_backend();

    // Not initialised, then initialised but never rebuilt: not_built everywhere.
    for (const StatusCode c : every_query_status(prepare_box_queries(grid.view(), serial)))
        CHECK(c == StatusCode::not_built);
    REQUIRE(grid.init_allocate(config).ok());
    for (const StatusCode c : every_query_status(prepare_box_queries(grid.view(), serial)))
        CHECK(c == StatusCode::not_built);

    // Two unit boxes at x = 0..1 and x = 1..2 (touching), then one moved away.
    float min_x[2] = {0.0f, 1.0f}, max_x[2] = {1.0f, 2.0f};
    float min_y[2] = {0.0f, 0.0f}, max_y[2] = {1.0f, 1.0f};
    float min_z[2] = {0.0f, 0.0f}, max_z[2] = {1.0f, 1.0f};
    const BoxSpans spans{min_x, min_y, min_z, max_x, max_y, max_z, nullptr, nullptr, 2};
    REQUIRE(grid.rebuild(spans, serial).ok());
    const BoxQueryGrid first = prepare_box_queries(grid.view(), serial);
    for (const StatusCode c : every_query_status(first))
        CHECK(c == StatusCode::ok);
    uint32_t out[4];
    const QueryPoint at_one{{1.0f, 0.5f, 0.5f}};
    CHECK(query_point(first, at_one, kAllLayers, out, 4).total == 2); // both boxes hold x = 1

    min_x[1] = 5.0f;
    max_x[1] = 6.0f;
    REQUIRE(grid.rebuild(spans, serial).ok());
    for (const StatusCode c : every_query_status(first))
        CHECK(c == StatusCode::stale_view);
    const BoxQueryGrid second = prepare_box_queries(grid.view(), serial);
    const QueryResult r = query_point(second, at_one, kAllLayers, out, 4);
    REQUIRE(r.status.ok());
    CHECK(r.total == 1); // only box 0 still holds x = 1
    CHECK(out[0] == 0);

    // A rejected frame keeps the previous one: the prepared grid stays valid.
    min_x[0] = std::numeric_limits<float>::quiet_NaN();
    CHECK(grid.rebuild(spans, serial).code == StatusCode::invalid_position);
    CHECK(query_point(second, at_one, kAllLayers, out, 4).status.ok());

    // A re-init (even with the same config) makes every earlier view stale.
    REQUIRE(grid.init_allocate(config).ok());
    CHECK(query_point(second, at_one, kAllLayers, out, 4).status.code == StatusCode::stale_view);
    for (const StatusCode c : every_query_status(prepare_box_queries(grid.view(), serial)))
        CHECK(c == StatusCode::not_built);
}

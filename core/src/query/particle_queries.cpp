// SPDX-License-Identifier: MIT
// Point, radius, box, box-face and frustum queries over a built particle
// grid, their visitor and batch forms, and Grid::find_pairs_with (see
// particle_queries.h for contracts; nearest neighbours are in
// particle_query_nearest.cpp).
//
// Everything here reads the grid through its public accessors (cells(),
// sorted arrays, config()); nothing is allocated and nothing is written but
// the caller's buffers.
//
// Which cells a query must visit. The grid puts a particle p in cell
// floor(t(p)) with t(p) = (double(p) - origin) * scale (cell_key.h). Double
// subtraction and multiplication are monotone, so for a closed box query the
// cells floor(t(min)) .. floor(t(max)) are exactly enough. For a radius query,
// d2 < fl(r * r) implies fl(dx * dx) < fl(r * r) (adding non-negative floats
// never decreases), hence |fl(dx)| < r and, rounding being monotone, |dx| < r
// exactly: the particle lies in the open box centre +- r, whose cells are
// computed in double with a small margin. Frustum culling and nearest-
// neighbour pruning compare cell boxes (enlarged by a margin covering the key
// rounding) against bounds loosened by a relative 2^-16..2^-18, far above the
// float test's rounding error: culling never drops a particle the float test
// accepts, it only looks at a few more.
//
// Box faces (min face at m on axis a; the max face is its mirror image). A
// particle p of the box is reported when fl(p[a] - m) < r. A particle q on
// the far side (q[a] <= m) that passes the pair test with p has
// |fl(dx)| < r on that axis (the argument above), and p[a] - q[a] >= p[a] - m
// exactly, so fl(p[a] - q[a]) >= fl(p[a] - m) by monotone rounding: p is
// reported. A reported p has p[a] - m < r exactly (else fl(p[a] - m) >= r, r
// being a float), so p[a] < u for any float u >= m + r: the cells visited are
// the box's with its bound on axis a moved to such a u (the float after the
// nearest float to the double sum), through the grid's own key function.
//
// Clamp-mode bounded worlds put particles outside the box into border cells;
// coordinate-wise clamping is monotone and 1-Lipschitz, so clamping a query's
// cell range (rather than intersecting it) keeps every argument above valid,
// and border cells' boxes reach to infinity on their outer side.
#include "query/particle_query_walk.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace hashgrid {

using namespace particle_query;

namespace {

// ---------------------------------------------------------------------------
// Frustum: cells culled by their boxes, then particles tested.

/// Largest value of a plane over a cell box (its "positive vertex").
double plane_max(const View& v, const Plane& plane, const double lo[3], const double hi[3]) {
    double value = plane.d;
    for (uint32_t d = 0; d < v.lat.dims; ++d) {
        const double n = plane.normal[d];
        if (n > 0.0)
            value += n * hi[d];
        else if (n < 0.0)
            value += n * lo[d];
    }
    return value;
}

/// Slack of a plane's float test: well above its rounding error for points of
/// magnitude up to `magnitude[d]` per axis.
/// Infinite (no culling by this plane) when the float test could overflow:
/// inf - inf is NaN, which the float test rejects but a double bound cannot
/// predict; below 2^127 no product or partial sum reaches FLT_MAX.
double plane_slack(const View& v, const Plane& plane, const double magnitude[3]) {
    double s = std::fabs(static_cast<double>(plane.d));
    for (uint32_t d = 0; d < v.lat.dims; ++d)
        s += std::fabs(static_cast<double>(plane.normal[d])) * magnitude[d];
    if (!(s <= 0x1p127)) return INFINITY;
    return s * 0x1p-18 + 1e-30;
}

/// The float inside test of particle k (header's operation order).
bool frustum_contains(const View& v, const Frustum& f, uint32_t k) {
    const float x = v.p[0][k], y = v.p[1][k];
    const float z = v.lat.dims == 3 ? v.p[2][k] : 0.0f;
    for (uint32_t i = 0; i < f.plane_count; ++i) {
        const Plane& pl = f.planes[i];
        float value = pl.normal[0] * x + pl.normal[1] * y;
        if (v.lat.dims == 3) value = value + pl.normal[2] * z;
        value = value + pl.d;
        if (!(value >= 0.0f)) return false;
    }
    return true;
}

bool valid_frustum(const Frustum& f) {
    if (f.plane_count == 0 || f.plane_count > kMaxFrustumPlanes) return false;
    for (uint32_t i = 0; i < f.plane_count; ++i) {
        const Plane& pl = f.planes[i];
        if (!std::isfinite(pl.normal[0]) || !std::isfinite(pl.normal[1]) || !std::isfinite(pl.normal[2]) ||
            !std::isfinite(pl.d))
            return false;
    }
    return true;
}

template <typename Sink>
bool test_cell_frustum(const View& v, const Frustum& f, uint32_t b, uint32_t e, Sink& sink) {
    note_range(sink, b, e);
    for (uint32_t k = b; k < e; ++k)
        if (frustum_contains(v, f, k) && !sink.add(v.order[k])) return false;
    return true;
}

/// Every occupied cell, culled by its box against each plane (cells outside
/// the cell box [lo, hi], which holds every cell the culling keeps, are
/// skipped first).
template <typename Sink>
void frustum_visit_occupied(const View& v, const Frustum& f, const int64_t lo[3], const int64_t hi[3], Sink& sink) {
    for_each_occupied(v, [&](const int64_t k[3], uint32_t c) {
        note_cull(sink);
        for (uint32_t d = 0; d < 3; ++d)
            if (k[d] < lo[d] || k[d] > hi[d]) return true;
        double clo[3] = {0.0, 0.0, 0.0}, chi[3] = {0.0, 0.0, 0.0}, magnitude[3] = {0.0, 0.0, 0.0};
        for (uint32_t d = 0; d < v.lat.dims; ++d) {
            cell_extent(v, d, k[d], clo[d], chi[d]);
            magnitude[d] = std::fabs(clo[d]) > std::fabs(chi[d]) ? std::fabs(clo[d]) : std::fabs(chi[d]);
        }
        bool culled = false;
        for (uint32_t i = 0; i < f.plane_count; ++i)
            culled = culled || plane_max(v, f.planes[i], clo, chi) < -plane_slack(v, f.planes[i], magnitude);
        return culled || test_cell_frustum(v, f, v.start[c], v.start[c + 1], sink);
    });
}

/// Bounded: one slack per plane for the whole world (monotone culling along
/// rows). Clamped particles outside the box lie on the far side of their
/// border cell, where every plane value is monotone too: the box's magnitude
/// suffices.
void bounded_slack(const View& v, const Frustum& f, double slack[kMaxFrustumPlanes]) {
    double magnitude[3] = {0.0, 0.0, 0.0};
    for (uint32_t d = 0; d < v.lat.dims; ++d) {
        const double a = std::fabs(v.lat.origin[d]);
        const double b = std::fabs(v.lat.origin[d] + static_cast<double>(v.lat.n[d]) * v.lat.edge);
        magnitude[d] = (a > b ? a : b) + v.lat.edge;
    }
    for (uint32_t i = 0; i < f.plane_count; ++i)
        slack[i] = plane_slack(v, f.planes[i], magnitude);
}

/// Bounded: narrows the cell box [lo, hi] (the world's, at first) to one that
/// still holds every cell whose box passes every plane's culling test; false
/// when none can. A plane's value at a box's positive vertex is monotone along
/// each axis, so on axis d the cells c whose slab (c on d, [lo, hi] on the
/// other axes) passes a plane are a prefix or a suffix of [lo d, hi d], found
/// by binary search; a cell that passes every plane lies in every such slab.
/// Two rounds over the planes and axes (the second uses the first's narrower
/// slabs) cost O(planes * dims * log(cells per axis)); for planes normal to
/// the axes (the box of a frustum made of them) the first round already gives
/// the exact cells of the box.
bool frustum_cell_bounds(const View& v, const Frustum& f, const double slack[], int64_t lo[3], int64_t hi[3]) {
    for (uint32_t round = 0; round < 2; ++round)
        for (uint32_t i = 0; i < f.plane_count; ++i)
            for (uint32_t d = 0; d < v.lat.dims; ++d) {
                const float n = f.planes[i].normal[d];
                auto passes = [&](int64_t c) {
                    int64_t a[3] = {lo[0], lo[1], lo[2]}, b[3] = {hi[0], hi[1], hi[2]};
                    a[d] = c;
                    b[d] = c;
                    double x[3] = {0.0, 0.0, 0.0}, y[3] = {0.0, 0.0, 0.0}, unused = 0.0;
                    for (uint32_t e = 0; e < v.lat.dims; ++e) {
                        cell_extent(v, e, a[e], x[e], unused);
                        cell_extent(v, e, b[e], unused, y[e]);
                    }
                    return !(plane_max(v, f.planes[i], x, y) < -slack[i]);
                };
                if (n == 0.0f) {
                    if (!passes(lo[d])) return false;
                    continue;
                }
                int64_t a = lo[d], b = hi[d] + 1;
                if (n > 0.0f) { // passing cells are a suffix: the first one
                    while (a < b) {
                        const int64_t mid = a + (b - a) / 2;
                        if (passes(mid))
                            b = mid;
                        else
                            a = mid + 1;
                    }
                    lo[d] = a;
                } else { // a prefix: one past the last one
                    while (a < b) {
                        const int64_t mid = a + (b - a) / 2;
                        if (passes(mid))
                            a = mid + 1;
                        else
                            b = mid;
                    }
                    hi[d] = a - 1;
                }
                if (lo[d] > hi[d]) return false;
            }
    return true;
}

/// Bounded: the rows of the cell box [lo, hi] (frustum_cell_bounds); each
/// row's cells are clipped to every plane by binary search (a plane's value at
/// a cell's positive vertex is monotone along the row), then the remaining
/// run is tested.
template <typename Sink>
void frustum_visit_bounded(const View& v, const Frustum& f, const double slack[], const int64_t box_lo[3],
                           const int64_t box_hi[3], Sink& sink) {
    for (int64_t z = box_lo[2]; z <= box_hi[2]; ++z)
        for (int64_t y = box_lo[1]; y <= box_hi[1]; ++y) {
            note_cull(sink);
            double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0};
            cell_extent(v, 1, y, lo[1], hi[1]);
            if (v.lat.dims == 3) cell_extent(v, 2, z, lo[2], hi[2]);
            auto keeps = [&](uint32_t plane, int64_t x) {
                double l[3] = {0.0, lo[1], lo[2]}, h[3] = {0.0, hi[1], hi[2]};
                cell_extent(v, 0, x, l[0], h[0]);
                return !(plane_max(v, f.planes[plane], l, h) < -slack[plane]);
            };
            int64_t first = box_lo[0], last = box_hi[0];
            for (uint32_t i = 0; i < f.plane_count && first <= last; ++i) {
                const float n = f.planes[i].normal[0];
                if (n == 0.0f) {
                    if (!keeps(i, first)) last = first - 1;
                } else if (n > 0.0f) { // kept cells are a suffix: first kept
                    int64_t a = first, b = last + 1;
                    while (a < b) {
                        const int64_t mid = a + (b - a) / 2;
                        if (keeps(i, mid))
                            b = mid;
                        else
                            a = mid + 1;
                    }
                    first = a;
                } else { // kept cells are a prefix: one past the last kept
                    int64_t a = first, b = last + 1;
                    while (a < b) {
                        const int64_t mid = a + (b - a) / 2;
                        if (keeps(i, mid))
                            a = mid + 1;
                        else
                            b = mid;
                    }
                    last = a - 1;
                }
            }
            if (first > last) continue;
            const uint32_t c0 = v.lat.linear(first, y, z);
            const uint32_t c1 = v.lat.linear(last + 1, y, z);
            if (!test_cell_frustum(v, f, v.start[c0], v.start[c1], sink)) return;
        }
}

// ---------------------------------------------------------------------------
// Box face: the box's slab along the face, then the face test.

bool valid_face(const View& v, const QueryFace& q) {
    return valid_box(v, q.box) && q.face < 2 * v.lat.dims && !std::isnan(q.distance) && q.distance >= 0.0f;
}

/// A float at or beyond the exact plane + r (upper) or plane - r (lower),
/// for a finite plane and 0 < r <= inf.
float slab_bound(float plane, float r, bool upper) {
    const double exact = upper ? static_cast<double>(plane) + static_cast<double>(r)
                               : static_cast<double>(plane) - static_cast<double>(r);
    // Beyond the float range (r = +inf included): the whole axis on that side.
    constexpr double kFloatMax = static_cast<double>(std::numeric_limits<float>::max());
    if (upper && !(exact < kFloatMax)) return INFINITY;
    if (!upper && !(exact > -kFloatMax)) return -INFINITY;
    // The nearest float to the double sum (itself within half a double ulp of
    // the exact sum), then one float further out.
    return std::nextafter(static_cast<float>(exact), upper ? INFINITY : -INFINITY);
}

template <typename Sink>
void face_visit(const View& v, const QueryFace& q, Sink& sink) {
    const uint32_t a = q.face / 2;
    const bool upper = (q.face & 1u) != 0;
    const float plane = upper ? q.box.max[a] : q.box.min[a];
    const float r = q.distance;
    // Nothing is within 0, or within a finite distance of a face at infinity.
    if (!(r > 0.0f) || !std::isfinite(plane)) return;
    QueryBox cells = q.box;
    if (upper) {
        const float lo = slab_bound(plane, r, false);
        if (lo > cells.min[a]) cells.min[a] = lo;
    } else {
        const float hi = slab_bound(plane, r, true);
        if (hi < cells.max[a]) cells.max[a] = hi;
    }
    box_cells_visit(
        v, cells,
        [&](uint32_t k) {
            const float p = v.p[a][k];
            return box_contains(v, q.box, k) && (upper ? plane - p : p - plane) < r;
        },
        sink);
}

// ---------------------------------------------------------------------------
// One query of each kind, shared by the single, visitor and batch forms. Each
// returns the exact total (kInvalidQuery for invalid parameters) and hands
// results to the sink in the documented order.

template <typename Sink>
uint64_t run_point(const View& v, const QueryPoint& q, Sink& sink) {
    if (!finite_point(v, q.position)) return kInvalidQuery;
    radius_visit(v, q.position, v.interaction_distance, sink);
    return sink.total;
}

template <typename Sink>
uint64_t run_radius(const View& v, const QuerySphere& q, Sink& sink) {
    if (!finite_point(v, q.center) || std::isnan(q.radius) || q.radius < 0.0f) return kInvalidQuery;
    radius_visit(v, q.center, q.radius, sink);
    return sink.total;
}

template <typename Sink>
uint64_t run_box(const View& v, const QueryBox& q, Sink& sink) {
    if (!valid_box(v, q)) return kInvalidQuery;
    box_visit(v, q, sink);
    return sink.total;
}

template <typename Sink>
uint64_t run_face(const View& v, const QueryFace& q, Sink& sink) {
    if (!valid_face(v, q)) return kInvalidQuery;
    face_visit(v, q, sink);
    return sink.total;
}

template <typename Sink>
uint64_t run_frustum(const View& v, const Frustum& f, Sink& sink) {
    if (!valid_frustum(f)) return kInvalidQuery;
    int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    if (v.wrapped) { // a cell's extent is only known modulo the period: no culling
        test_cell_frustum(v, f, 0, v.count, sink);
        return sink.total;
    }
    if (!v.lat.bounded) { // the distinct cells, each culled
        constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
        const int64_t all_lo[3] = {kMin, kMin, kMin}, all_hi[3] = {kMax, kMax, kMax};
        frustum_visit_occupied(v, f, all_lo, all_hi, sink);
        return sink.total;
    }
    // Bounded: the rows of the frustum's cell box, or the occupied cells when
    // there are far fewer (like a box query's cells).
    double slack[kMaxFrustumPlanes];
    bounded_slack(v, f, slack);
    for (uint32_t d = 0; d < v.lat.dims; ++d)
        hi[d] = v.lat.hi[d];
    if (!frustum_cell_bounds(v, f, slack, lo, hi)) return sink.total;
    const double rows = static_cast<double>(hi[1] - lo[1] + 1) * static_cast<double>(hi[2] - lo[2] + 1);
    if (rows <= 2.0 * occupied_bound(v) * (2 + log2_ceil(v.cell_count)) + 64.0)
        frustum_visit_bounded(v, f, slack, lo, hi, sink);
    else
        frustum_visit_occupied(v, f, lo, hi, sink);
    return sink.total;
}

constexpr const char* kInvalidPoint = "query_point: the point must be finite";
constexpr const char* kInvalidRadius = "query_radius: the centre must be finite and the radius >= 0";
constexpr const char* kInvalidBox = "query_box: NaN bound or min > max";
constexpr const char* kInvalidFace =
    "query_face: NaN box bound, min > max, face >= 2 * dimensions, or distance NaN or < 0";
constexpr const char* kInvalidFrustum = "query_frustum: 1..kMaxFrustumPlanes planes, every value finite";

const auto kPoint = [](const View& v, const QueryPoint& q, auto& sink) { return run_point(v, q, sink); };
const auto kRadius = [](const View& v, const QuerySphere& q, auto& sink) { return run_radius(v, q, sink); };
const auto kBox = [](const View& v, const QueryBox& q, auto& sink) { return run_box(v, q, sink); };
const auto kFace = [](const View& v, const QueryFace& q, auto& sink) { return run_face(v, q, sink); };
const auto kFrustum = [](const View& v, const Frustum& q, auto& sink) { return run_frustum(v, q, sink); };

} // namespace

QueryResult query_point(const Grid& grid, const QueryPoint& point, uint32_t* out, uint64_t capacity) {
    return collect(grid, point, out, capacity, kInvalidPoint, kPoint);
}
QueryResult query_point(const Grid& grid, const QueryPoint& point, QueryVisitor visitor) {
    return visit_results(grid, point, visitor, kInvalidPoint, kPoint);
}

QueryResult query_radius(const Grid& grid, const QuerySphere& sphere, uint32_t* out, uint64_t capacity) {
    return collect(grid, sphere, out, capacity, kInvalidRadius, kRadius);
}
QueryResult query_radius(const Grid& grid, const QuerySphere& sphere, QueryVisitor visitor) {
    return visit_results(grid, sphere, visitor, kInvalidRadius, kRadius);
}

QueryResult query_box(const Grid& grid, const QueryBox& box, uint32_t* out, uint64_t capacity) {
    return collect(grid, box, out, capacity, kInvalidBox, kBox);
}
QueryResult query_box(const Grid& grid, const QueryBox& box, QueryVisitor visitor) {
    return visit_results(grid, box, visitor, kInvalidBox, kBox);
}

QueryResult query_face(const Grid& grid, const QueryFace& query, uint32_t* out, uint64_t capacity) {
    return collect(grid, query, out, capacity, kInvalidFace, kFace);
}
QueryResult query_face(const Grid& grid, const QueryFace& query, QueryVisitor visitor) {
    return visit_results(grid, query, visitor, kInvalidFace, kFace);
}

QueryResult query_frustum(const Grid& grid, const Frustum& frustum, uint32_t* out, uint64_t capacity) {
    return collect(grid, frustum, out, capacity, kInvalidFrustum, kFrustum);
}
QueryResult query_frustum(const Grid& grid, const Frustum& frustum, QueryVisitor visitor) {
    return visit_results(grid, frustum, visitor, kInvalidFrustum, kFrustum);
}

QueryResult query_point_batch(const Grid& grid, const QueryPoint* points, uint32_t count, uint64_t* offsets,
                              uint64_t offsets_capacity, uint32_t* out, uint64_t capacity, const ThreadBackend& backend,
                              QueryStats* stats) {
    return index_batch_of(grid, TracePhase::query_point_batch, points, count, offsets, offsets_capacity, out, capacity,
                          backend, kPoint, stats);
}

QueryResult query_radius_batch(const Grid& grid, const QuerySphere* spheres, uint32_t count, uint64_t* offsets,
                               uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                               const ThreadBackend& backend, QueryStats* stats) {
    return index_batch_of(grid, TracePhase::query_radius_batch, spheres, count, offsets, offsets_capacity, out,
                          capacity, backend, kRadius, stats);
}

QueryResult query_box_batch(const Grid& grid, const QueryBox* boxes, uint32_t count, uint64_t* offsets,
                            uint64_t offsets_capacity, uint32_t* out, uint64_t capacity, const ThreadBackend& backend,
                            QueryStats* stats) {
    return index_batch_of(grid, TracePhase::query_box_batch, boxes, count, offsets, offsets_capacity, out, capacity,
                          backend, kBox, stats);
}

QueryResult query_face_batch(const Grid& grid, const QueryFace* faces, uint32_t count, uint64_t* offsets,
                             uint64_t offsets_capacity, uint32_t* out, uint64_t capacity, const ThreadBackend& backend,
                             QueryStats* stats) {
    return index_batch_of(grid, TracePhase::query_face_batch, faces, count, offsets, offsets_capacity, out, capacity,
                          backend, kFace, stats);
}

QueryResult query_frustum_batch(const Grid& grid, const Frustum* frusta, uint32_t count, uint64_t* offsets,
                                uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                const ThreadBackend& backend, QueryStats* stats) {
    return index_batch_of(grid, TracePhase::query_frustum_batch, frusta, count, offsets, offsets_capacity, out,
                          capacity, backend, kFrustum, stats);
}

PairResult Grid::find_pairs_with(const ParticleSpans& points, Pair* out, uint64_t capacity,
                                 const ThreadBackend& caller_backend) const {
    View v;
    if (!make_view(*this, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(spans_set(v, points), "find_pairs_with: x, y (and z in 3D) must be set");
    HASHGRID_REQUIRE_ARGUMENT(points.radius == nullptr, "find_pairs_with: points must not have radii");
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "find_pairs_with: out is null");
    // The batch runner over chunks of points (at least 64 per chunk, at most
    // 1024 chunks): each chunk is one "query" whose results are its points'
    // pairs in point order.
    PhaseTrace trace(trace_, caller_backend); // the loops run through trace.backend()
    const ThreadBackend& backend = trace.backend();
    trace.begin(TracePhase::find_pairs_with);
    const uint32_t count = points.count;
    constexpr uint32_t kMaxChunks = 1024;
    const auto spread = static_cast<uint32_t>((uint64_t{count} + kMaxChunks - 1) / kMaxChunks);
    const uint32_t per_chunk = spread > 64 ? spread : 64;
    const uint32_t chunks = static_cast<uint32_t>((uint64_t{count} + per_chunk - 1) / per_chunk);
    const float r = v.interaction_distance;
    // A buffer sink of pairs (point q, particle), not a BufferSink: no run kernel.
    struct PairSink {
        Pair* out;
        uint64_t capacity;
        uint64_t total;
        uint32_t a;
        bool add(uint32_t particle) {
            if (total < capacity) out[total] = Pair{a, particle};
            ++total;
            return true;
        }
    };
    uint64_t chunk_offsets[kMaxChunks + 1];
    QueryResult result = run_query_batch(chunks, chunk_offsets, uint64_t{chunks} + 1, out, capacity, backend,
                                         [&](uint32_t chunk, Pair* at, uint64_t room) {
                                             PairSink sink{at, room, 0, 0};
                                             const uint32_t begin = chunk * per_chunk;
                                             const uint32_t end = count - begin < per_chunk ? count : begin + per_chunk;
                                             for (uint32_t q = begin; q < end; ++q) {
                                                 float c[3];
                                                 load_point(v, points, q, c);
                                                 if (!finite_point(v, c)) return kInvalidQuery;
                                                 sink.a = q;
                                                 radius_visit(v, c, r, sink);
                                             }
                                             return sink.total;
                                         });
    if (result.status.code == StatusCode::invalid_query) {
        // The runner names the lowest invalid chunk; the caller wants points.
        result = invalid_result("find_pairs_with: a point is NaN or infinite");
        for (uint32_t q = 0; q < count; ++q) {
            float c[3];
            load_point(v, points, q, c);
            if (finite_point(v, c)) continue;
            if (result.status.count++ == 0) result.status.index = q;
        }
    }
    return result;
}

} // namespace hashgrid

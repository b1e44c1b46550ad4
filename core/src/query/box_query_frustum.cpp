// SPDX-License-Identifier: MIT
// Frustum queries of the box grid (box_queries.h): query_frustum in its
// buffer and visitor forms, and query_frustum_batch.
//
// The conservative box test is not monotone under splitting (a box can pass
// every plane while each of its cells fails one), so cells are not culled by
// their own boxes. Each object is reported from its minimum cell only, and a
// cell (or a row, or a slab) is skipped when the box of cells reachable from
// it by the widest small object (BoxQueryGrid::max_span) is outside a plane:
// then no object whose minimum cell lies there can pass.
#include "query/box_query_batch.h"
#include "query/box_query_internal.h"

#include "hashgrid/box_queries.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hashgrid {
namespace {

using namespace box_query;

struct PlaneSet {
    const Plane* planes;
    uint32_t count;
    double margin[kMaxFrustumPlanes];
};

/// Checks the frustum and sets each plane's rounding margin: of the float
/// test on any stored box, and of the cell bounds.
Status plane_set(const Cells& c, const Frustum& frustum, PlaneSet& ps) {
    const BoxQueryGrid& grid = c.grid;
    const uint32_t plane_count = frustum.plane_count;
    if (plane_count == 0 || plane_count > kMaxFrustumPlanes)
        return make_status(StatusCode::invalid_query, "query_frustum: plane count outside [1, kMaxFrustumPlanes]");
    const Plane* planes = frustum.planes;
    ps.planes = planes;
    ps.count = plane_count;
    for (uint32_t p = 0; p < plane_count; ++p) {
        if (!finite3(planes[p].normal, c.lat.dims) || !std::isfinite(planes[p].d))
            return make_status(StatusCode::invalid_query, "query_frustum: a plane is not finite");
        double scale_sum = std::fabs(static_cast<double>(planes[p].d));
        for (uint32_t d = 0; d < c.lat.dims; ++d) {
            double m = static_cast<double>(grid.magnitude[d]);
            if (grid.has_cells) {
                m = std::max(m, std::fabs(c.boundary(d, grid.cell_lo[d])));
                m = std::max(m, std::fabs(c.boundary(d, int64_t{grid.cell_hi[d]} + 1)));
            }
            scale_sum += std::fabs(static_cast<double>(planes[p].normal[d])) * m;
        }
        // Above 2^127 a float product or partial sum of the test may overflow
        // and inf - inf is NaN, which passes (NaN < 0 is false) whatever the
        // exact value: no culling by this plane then.
        ps.margin[p] = scale_sum <= 0x1p127 ? kRelativeSlack * scale_sum + kAbsoluteSlack : kDoubleInf;
    }
    return {};
}

/// False only when the world box of cells [lo, hi] is certainly outside a plane.
bool cells_may_pass(const Cells& c, const PlaneSet& ps, const int32_t lo[3], const int32_t hi[3]) {
    double box_lo[3];
    double box_hi[3];
    for (uint32_t d = 0; d < c.lat.dims; ++d) {
        // Bounded clamp mode keeps outside objects in the border cells: those reach to infinity.
        box_lo[d] = c.lat.bounded && lo[d] == 0 ? -kDoubleInf : c.boundary(d, lo[d]);
        box_hi[d] = c.lat.bounded && hi[d] == c.lat.hi[d] ? kDoubleInf : c.boundary(d, int64_t{hi[d]} + 1);
    }
    for (uint32_t p = 0; p < ps.count; ++p) {
        const Plane& plane = ps.planes[p];
        double v = static_cast<double>(plane.d);
        for (uint32_t d = 0; d < c.lat.dims; ++d) {
            const double n = static_cast<double>(plane.normal[d]);
            if (n > 0.0) v += n * box_hi[d];
            if (n < 0.0) v += n * box_lo[d];
        }
        if (v < -ps.margin[p]) return false;
    }
    return true;
}

/// Narrows [x_lo, x_hi] to the minimum cells x of a row whose reach box
/// [x, x + reach] x (the row's y, z range) may pass every plane. Each plane's
/// test is monotone in x, so the passing x form an interval; it is computed in
/// double and widened by a cell on each side (the per-cell test stays exact).
void row_interval(const Cells& c, const PlaneSet& ps, const int32_t lo[3], const int32_t hi[3], int32_t reach,
                  int32_t& x_lo, int32_t& x_hi) {
    double rest_lo[3], rest_hi[3];
    for (uint32_t d = 1; d < c.lat.dims; ++d) {
        rest_lo[d] = c.lat.bounded && lo[d] == 0 ? -kDoubleInf : c.boundary(d, lo[d]);
        rest_hi[d] = c.lat.bounded && hi[d] == c.lat.hi[d] ? kDoubleInf : c.boundary(d, int64_t{hi[d]} + 1);
    }
    int64_t first = x_lo;
    int64_t last = x_hi;
    for (uint32_t p = 0; p < ps.count; ++p) {
        const Plane& plane = ps.planes[p];
        const double nx = static_cast<double>(plane.normal[0]);
        if (nx == 0.0) continue; // decided by the row test
        double rest = static_cast<double>(plane.d) + ps.margin[p];
        for (uint32_t d = 1; d < c.lat.dims; ++d) {
            const double n = static_cast<double>(plane.normal[d]);
            if (n > 0.0) rest += n * rest_hi[d];
            if (n < 0.0) rest += n * rest_lo[d];
        }
        if (rest == kDoubleInf) continue;
        // Passing: nx * X + rest >= 0 with X the reach box's far x boundary.
        const double threshold = std::floor(c.lat.scaled(0, -rest / nx));
        if (!std::isfinite(threshold)) {
            if ((threshold > 0.0) == (nx > 0.0)) return void(x_hi = x_lo - 1); // nothing passes
            continue;
        }
        const double t = std::clamp(threshold, -0x1p40, 0x1p40);
        if (nx > 0.0) { // B(x + reach + 1) >= X: x >= threshold - reach - 1 (one more for rounding)
            int64_t from = static_cast<int64_t>(t) - reach - 2;
            if (c.lat.bounded) from = std::min<int64_t>(from, int64_t{c.lat.hi[0]} - reach); // border reaches to +inf
            first = std::max(first, from);
        } else { // B(x) <= X: x <= threshold (one more for rounding)
            int64_t to = static_cast<int64_t>(t) + 1;
            if (c.lat.bounded) to = std::max<int64_t>(to, 0); // border reaches to -inf
            last = std::min(last, to);
        }
    }
    x_lo = static_cast<int32_t>(first);
    x_hi = static_cast<int32_t>(std::max(last, first - 1));
}

bool box_in_frustum(const Plane* planes, uint32_t count, const float lo[3], const float hi[3], uint32_t dims) {
    for (uint32_t p = 0; p < count; ++p) {
        const float* n = planes[p].normal;
        const float px = n[0] >= 0.0f ? hi[0] : lo[0];
        const float py = n[1] >= 0.0f ? hi[1] : lo[1];
        float v = n[0] * px + n[1] * py;
        if (dims == 3) {
            const float pz = n[2] >= 0.0f ? hi[2] : lo[2];
            v = v + n[2] * pz;
        }
        v = v + planes[p].d;
        if (v < 0.0f) return false;
    }
    return true;
}

template <typename Sink>
Status frustum_walk(const Cells& c, const Frustum& frustum, uint32_t layer_mask, Sink& sink) {
    PlaneSet ps{};
    const Status valid = plane_set(c, frustum, ps);
    if (!valid.ok()) return valid;
    auto consider = [&](uint32_t object) {
        if (!c.in_layer(object, layer_mask)) return;
        float lo[3], hi[3];
        c.object_box(object, lo, hi);
        if (box_in_frustum(ps.planes, ps.count, lo, hi, c.lat.dims)) sink.add(object);
    };
    const BoxQueryGrid& grid = c.grid;
    if (grid.has_cells) {
        // Reach of a small object from its minimum cell, per axis.
        const int32_t* reach = grid.max_span;
        auto reachable_hi = [&](uint32_t d, int32_t v) {
            return static_cast<int32_t>(std::min<int64_t>(int64_t{v} + reach[d], grid.cell_hi[d]));
        };
        CellBox all{};
        for (uint32_t d = 0; d < 3; ++d) {
            all.lo[d] = grid.cell_lo[d];
            all.hi[d] = grid.cell_hi[d];
        }
        c.walk(
            all,
            [&](int32_t y, int32_t z, int32_t& x_lo, int32_t& x_hi) {
                const int32_t lo[3] = {grid.cell_lo[0], y, z};
                const int32_t hi[3] = {grid.cell_hi[0], reachable_hi(1, y), reachable_hi(2, z)};
                if (!cells_may_pass(c, ps, lo, hi)) return false;
                row_interval(c, ps, lo, hi, reach[0], x_lo, x_hi);
                return true;
            },
            [&](uint32_t cell, int32_t x, int32_t y, int32_t z) {
                const int32_t at[3] = {x, y, z};
                const int32_t hi[3] = {reachable_hi(0, x), reachable_hi(1, y), reachable_hi(2, z)};
                if (!cells_may_pass(c, ps, at, hi)) return;
                for (uint32_t e = c.begin(cell); e < c.end(cell) && !sink.done(); ++e) {
                    const uint32_t object = c.view.entry_object[e];
                    int32_t olo[3];
                    c.object_min_cell(object, olo);
                    if (olo[0] == x && olo[1] == y && olo[2] == z) consider(object);
                }
            },
            [&] { return sink.done(); });
    }
    for (uint32_t j = 0; j < c.view.large_count && !sink.done(); ++j)
        consider(c.view.large_object[j]);
    return {};
}

} // namespace

QueryResult query_frustum(const BoxQueryGrid& grid, const Frustum& frustum, uint32_t layer_mask, uint32_t* out,
                          uint64_t capacity) {
    return buffer_query(grid, out, capacity, "query_frustum: null output with capacity > 0",
                        [&](BufferSink& sink) { return frustum_walk(Cells(grid), frustum, layer_mask, sink); });
}

QueryResult query_frustum(const BoxQueryGrid& grid, const Frustum& frustum, uint32_t layer_mask, QueryVisitor visitor) {
    return visitor_query(grid, visitor, "query_frustum: null visitor",
                         [&](VisitorSink& sink) { return frustum_walk(Cells(grid), frustum, layer_mask, sink); });
}

QueryResult query_frustum_batch(const BoxQueryGrid& grid, const Frustum* frusta, uint32_t count, uint32_t layer_mask,
                                uint64_t* offsets, uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                const ThreadBackend& backend) {
    return cells_batch(grid, TracePhase::query_frustum_batch, frusta, count, offsets, offsets_capacity, out, capacity,
                       backend, [&](const Cells& c, uint32_t q, uint32_t* o, uint64_t room) {
                           BufferSink sink{o, room};
                           const Status walked = frustum_walk(c, frusta[q], layer_mask, sink);
                           return walk_total(walked, sink.total);
                       });
}

} // namespace hashgrid

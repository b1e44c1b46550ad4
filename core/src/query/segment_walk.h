// SPDX-License-Identifier: MIT
// The conservative walk of a segment (a ray up to its max_t) through a
// lattice's occupied cells, for any query that follows a line: the box
// grid's ray queries today, casts of moving shapes next. It knows the
// lattice and the occupied extent only (SegmentExtent), not what the cells
// hold.
//
// Amanatides & Woo step from cell boundary to cell boundary along the ray.
// Here the steps cut the t range into pieces, and each piece scans the cells
// within eps of its part of the ray (usually one or two cells per axis). Why
// the widening: hits are decided by the slab test (ray_box_hit, in double),
// which can accept a box that the exact ray misses by a rounding error (a ray
// through a cell corner or along a cell edge). How far: at the accepted t,
// each axis' computed t1 <= t <= t2 with t1 = fl(fl(min - o) / dir), within
// 2 ulp (relative) of the exact (min - o) / dir, so the exact point o + t dir
// lies within about 2^-52 (|o| + |min|) of the box on every axis; the
// traversal's own positions o + t dir and cell bounds add a few ulp of the
// same size. eps = 2^-46 (|o| + magnitude) covers all of it 16 times over:
// from an origin 1e10 away, 1.5e-4, a small part of any cell. (A margin
// relative to the origin's magnitude is unavoidable: from 1e20 away the slab
// test itself cannot tell the world's boxes apart and accepts a band about
// 2e4 wide.)
//
// Cost. Pieces as wide as several cells would each rescan what their
// neighbours scanned; when the pieces times their widening would read more
// than about two scans of the occupied cells (a ray from very far away, a
// long ray through a sparse extent), the walk declines and its caller scans
// the occupied cells once instead (the ray queries: scan_all_small, the same
// hits found in another order). So no walk costs more than a few scans of
// the frame's cells, whatever its origin and direction.
#pragma once

#include "lattice/cell_box.h"
#include "lattice/lattice.h"

#include "hashgrid/box_queries.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace hashgrid::detail {

inline constexpr double kDoubleInf = std::numeric_limits<double>::infinity();
/// Absolute widening: covers underflow of float squares and products.
inline constexpr double kAbsoluteSlack = 0x1p-70;

/// What a walk needs of the grid it walks: the range of its occupied cells
/// per axis and their count (cells == 0: nothing to walk), the union of the
/// boxes stored in them (the segment is clipped to it) and the largest
/// magnitude of their coordinates per axis (the rounding margin).
struct SegmentExtent {
    int32_t cell_lo[3] = {0, 0, 0};
    int32_t cell_hi[3] = {0, 0, 0};
    double box_lo[3] = {0.0, 0.0, 0.0};
    double box_hi[3] = {0.0, 0.0, 0.0};
    double magnitude[3] = {0.0, 0.0, 0.0};
    uint64_t cells = 0;
};

/// Margin of the traversal against the slab test's rounding, relative to the
/// magnitudes involved (see the file comment).
inline constexpr double kRaySlack = 0x1p-46;

/// The ray in double, its rounding margin per axis, and the t range left
/// after clipping it to the union of the small objects' boxes.
struct SegmentSpan {
    uint32_t dims;
    double o[3];
    double dir[3];
    double eps[3];
    double t0;
    double t1;

    [[nodiscard]] double position(uint32_t d, double t) const { return dir[d] == 0.0 ? o[d] : o[d] + t * dir[d]; }
};

/// Clips the ray to the union of the small objects' boxes, widened by eps;
/// false when nothing of it is left.
inline bool clip_segment(const Lattice& lat, const SegmentExtent& e, const Ray& ray, SegmentSpan& r) {
    r.dims = lat.dims;
    r.t0 = 0.0;
    r.t1 = static_cast<double>(ray.max_t);
    for (uint32_t d = 0; d < r.dims; ++d) {
        r.o[d] = static_cast<double>(ray.origin[d]);
        r.dir[d] = static_cast<double>(ray.direction[d]);
        r.eps[d] = kRaySlack * (std::fabs(r.o[d]) + e.magnitude[d]) + kAbsoluteSlack;
        const double lo = e.box_lo[d] - 2.0 * r.eps[d];
        const double hi = e.box_hi[d] + 2.0 * r.eps[d];
        if (r.dir[d] == 0.0) {
            if (r.o[d] < lo || r.o[d] > hi) return false;
            continue;
        }
        double ta = (lo - r.o[d]) / r.dir[d];
        double tb = (hi - r.o[d]) / r.dir[d];
        if (ta > tb) std::swap(ta, tb);
        r.t0 = std::max(r.t0, ta);
        r.t1 = std::min(r.t1, tb);
    }
    return r.t0 <= r.t1;
}

/// About how many pieces the traversal of [t0, t1] makes (up to a few for
/// rounding), times how many cells wide the eps margin makes each piece
/// beyond its own (1 while eps is under half a cell): the cells the
/// traversal reads, in units of a narrow piece's.
inline double piece_estimate(const Lattice& lat, const SegmentExtent& e, const SegmentSpan& r) {
    double crossings = 1.0;
    double widening = 1.0;
    for (uint32_t d = 0; d < r.dims; ++d) {
        const double extent = static_cast<double>(int64_t{e.cell_hi[d]} - e.cell_lo[d] + 1);
        widening *= std::min(extent, 1.0 + std::floor(2.0 * r.eps[d] * lat.scale));
        if (r.dir[d] == 0.0) continue;
        const int32_t a = std::clamp(lat.clamped_cell_of(d, r.position(d, r.t0)), e.cell_lo[d], e.cell_hi[d]);
        const int32_t b = std::clamp(lat.clamped_cell_of(d, r.position(d, r.t1)), e.cell_lo[d], e.cell_hi[d]);
        crossings += std::fabs(static_cast<double>(a) - static_cast<double>(b));
    }
    return crossings * widening;
}

/// Next boundary to cross per axis from t0 (interior boundaries of the extent
/// only: beyond them the clamped cell does not change), and its t (+inf: none).
inline void first_boundaries(const Lattice& lat, const SegmentExtent& e, const SegmentSpan& r, int64_t next[3],
                             double t_next[3]) {
    for (uint32_t d = 0; d < r.dims; ++d) {
        if (r.dir[d] == 0.0) continue;
        const double f = std::floor((r.position(d, r.t0) - lat.origin[d]) * lat.scale);
        const int64_t first = int64_t{e.cell_lo[d]} + 1;
        const int64_t last = e.cell_hi[d];
        if (first > last) continue;
        const double clamped = std::clamp(f, static_cast<double>(first - 1), static_cast<double>(last + 1));
        int64_t k = static_cast<int64_t>(clamped);
        if (r.dir[d] > 0.0) {
            k = std::max(k + 1, first);
            if (k > last) continue;
        } else {
            k = std::min(k, last);
            if (k < first) continue;
        }
        next[d] = k;
        t_next[d] = (lat.boundary(d, k) - r.o[d]) / r.dir[d];
    }
}

/// Pieces of the ray (see the file comment): calls visit(piece, previous or
/// null, t_end) in order along the ray until visit returns false. The ray is
/// clipped to the union of the small objects' boxes first, so a ray far
/// longer than the world costs the cells it crosses inside it. Returns false,
/// having visited nothing, when the pieces (weighted by their widening:
/// piece_estimate) would read more than about two scans of the occupied
/// cells (2 * cells + 64; a long ray through a
/// sparse extent, a ray from very far away): the caller then scans the
/// occupied cells instead (scan_all_small), which gives the same hits. With t_from > 0
/// the pieces start at t_from: they then meet every small object that the
/// slab test hits with t_exit >= t_from.
template <typename Visit>
bool walk_segment(const Lattice& lat, const SegmentExtent& e, const Ray& ray, Visit&& visit, double t_from = 0.0) {
    if (e.cells == 0) return true;
    SegmentSpan r;
    if (!clip_segment(lat, e, ray, r)) return true;
    r.t0 = std::max(r.t0, t_from);
    if (!(r.t0 <= r.t1)) return true;
    if (piece_estimate(lat, e, r) > 2.0 * static_cast<double>(e.cells) + 64.0) return false;
    int64_t next[3] = {0, 0, 0};
    double t_next[3] = {kDoubleInf, kDoubleInf, kDoubleInf};
    first_boundaries(lat, e, r, next, t_next);

    CellBox previous{};
    bool has_previous = false;
    double ts = r.t0;
    for (;;) {
        uint32_t axis = 3;
        double te = r.t1;
        for (uint32_t d = 0; d < r.dims; ++d) {
            if (t_next[d] < te) {
                te = t_next[d];
                axis = d;
            }
        }
        te = std::max(te, ts);
        CellBox piece{};
        for (uint32_t d = 0; d < r.dims; ++d) {
            const double a = r.position(d, ts);
            const double b = r.position(d, te);
            piece.lo[d] = std::max(lat.clamped_cell_of(d, std::min(a, b) - r.eps[d]), e.cell_lo[d]);
            piece.hi[d] = std::min(lat.clamped_cell_of(d, std::max(a, b) + r.eps[d]), e.cell_hi[d]);
        }
        if (!visit(piece, has_previous ? &previous : nullptr, te)) return true;
        previous = piece;
        has_previous = true;
        if (axis == 3) return true;
        ts = te;
        next[axis] += r.dir[axis] > 0.0 ? 1 : -1;
        if (next[axis] < int64_t{e.cell_lo[axis]} + 1 || next[axis] > int64_t{e.cell_hi[axis]}) {
            t_next[axis] = kDoubleInf;
        } else {
            t_next[axis] = (lat.boundary(axis, next[axis]) - r.o[axis]) / r.dir[axis];
        }
    }
}

} // namespace hashgrid::detail

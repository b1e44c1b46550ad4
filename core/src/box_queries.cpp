// Box-grid queries (box_queries.h).
//
// Cells. cell(p) = floor((p - origin) * scale) in double, clamped into the
// key range (bounded: [0, n - 1], the grid's clamp mode; unbounded: the
// packing limits, which every stored object respects). It is the function the
// box grid used to place objects, and it is monotone, so "box B covers cell c"
// is "c is in [cell(B.min), cell(B.max)]" on every axis.
//
// Finding cells. The view has the occupied cells' packed keys in ascending
// (z, y, x) order. A box of cells is scanned row by row with a binary search
// per row; a search that lands past the row jumps straight to the next
// occupied row or slab, so empty space costs nothing per cell.
//
// Rays. Amanatides & Woo step from cell boundary to cell boundary along the
// ray. Here the steps cut the t range into pieces, and each piece scans the
// cells within eps of its part of the ray (usually one or two cells per axis).
// Why the widening: hits are decided by a float slab test, which can accept a
// box that the exact ray misses by a rounding error (a ray through a cell
// corner or along a cell edge); such a box lies within eps of the ray, so a
// cell of it is scanned. Piece cell ranges only grow along the ray (monotone
// in t on every axis), so an object whose cell range meets two pieces also
// meets every piece between them: an object is reported from a piece only when
// its range misses the previous piece (the "previous cell of the path" rule of
// a lattice path, applied to pieces), and within the piece from the cell of
// max(piece.lo, object.lo). No set, no second report, no missed corner.
//
// Frustum. The conservative box test is not monotone under splitting (a box
// can pass every plane while each of its cells fails one), so cells are not
// culled by their own boxes. Each object is reported from its minimum cell
// only, and a cell (or a row, or a slab) is skipped when the box of cells
// reachable from it by the widest small object (BoxQueryGrid::max_span) is
// outside a plane: then no object whose minimum cell lies there can pass.
//
// Nearest. Cubic shells of cells around the query's cell (clamped into the
// occupied extent), each scanned once; an object is considered in the first
// shell that meets its cell range, from one cell. After a shell, every
// unseen object lies beyond the faces of the scanned cube that are inside the
// occupied extent; the loop stops when the k-th distance is below that bound
// (with a margin for rounding), or the bound exceeds max_distance.
#include "hashgrid/box_queries.h"

#include "hashgrid/assert.h"
#include "hashgrid/cell_key.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

namespace hashgrid {
namespace {

constexpr double kDoubleInf = std::numeric_limits<double>::infinity();
/// Queries per chunk in the batches (fixed: chunking never depends on threads).
constexpr uint32_t kBatchGrain = 16;
/// Relative widening of double-precision ranges against float rounding.
constexpr double kRelativeSlack = 0x1p-20;
/// Absolute widening: covers underflow of float squares and products.
constexpr double kAbsoluteSlack = 0x1p-70;

/// Inclusive box of cell coordinates (z = 0..0 in 2D).
struct CellBox {
    int32_t lo[3];
    int32_t hi[3];
};

bool boxes_meet(const CellBox& a, const CellBox& b) {
    for (uint32_t d = 0; d < 3; ++d)
        if (a.lo[d] > b.hi[d] || b.lo[d] > a.hi[d]) return false;
    return true;
}

/// The grid's cell geometry, with the view's arrays at hand.
struct Cells {
    const BoxQueryGrid& grid;
    const BoxGridView& view;
    uint32_t dims;
    double scale;
    double origin[3];
    int32_t key_lo[3];
    int32_t key_hi[3];
    bool bounded;

    explicit Cells(const BoxQueryGrid& g) : grid(g), view(g.view) {
        HASHGRID_ASSERT(view.config != nullptr, "BoxQueryGrid: the view has no config (use prepare_box_queries)");
        const BoxGridConfig& c = *view.config;
        dims = c.dimensions;
        scale = view.scale;
        bounded = c.world == World::bounded;
        for (uint32_t d = 0; d < 3; ++d) {
            origin[d] = static_cast<double>(c.origin[d]);
            if (d >= dims) {
                key_lo[d] = key_hi[d] = 0;
            } else if (bounded) {
                key_lo[d] = 0;
                key_hi[d] = static_cast<int32_t>(c.cell_counts[d]) - 1;
            } else {
                key_hi[d] = dims == 3 ? kKeyLimit3 : kKeyLimit2;
                key_lo[d] = -key_hi[d];
            }
        }
    }

    /// Clamped cell coordinate of a (double) coordinate; d < dims.
    [[nodiscard]] int32_t cell(uint32_t d, double p) const {
        const double f = std::floor((p - origin[d]) * scale);
        if (!(f > key_lo[d])) return key_lo[d];
        if (f > key_hi[d]) return key_hi[d];
        return static_cast<int32_t>(f);
    }
    /// World coordinate where cell k starts (approximately: ranges built from it are widened).
    [[nodiscard]] double boundary(uint32_t d, int64_t k) const { return origin[d] + static_cast<double>(k) / scale; }

    [[nodiscard]] uint64_t key(int32_t x, int32_t y, int32_t z) const {
        return dims == 3 ? pack_key3(x, y, z) : pack_key2(x, y);
    }
    void unpack(uint64_t k, int32_t& x, int32_t& y, int32_t& z) const {
        if (dims == 3) {
            unpack_key3(k, x, y, z);
        } else {
            unpack_key2(k, x, y);
            z = 0;
        }
    }

    [[nodiscard]] bool in_layer(uint32_t object, uint32_t layer_mask) const {
        const uint32_t category = view.category != nullptr ? view.category[object] : ~0u;
        return (category & layer_mask) != 0;
    }
    void object_box(uint32_t object, float lo[3], float hi[3]) const {
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d] = d < dims ? view.min[d][object] : 0.0f;
            hi[d] = d < dims ? view.max[d][object] : 0.0f;
        }
    }
    void object_min_cell(uint32_t object, int32_t lo[3]) const {
        for (uint32_t d = 0; d < 3; ++d)
            lo[d] = d < dims ? cell(d, static_cast<double>(view.min[d][object])) : 0;
    }
    void object_cells(uint32_t object, CellBox& r) const {
        for (uint32_t d = 0; d < 3; ++d) {
            r.lo[d] = d < dims ? cell(d, static_cast<double>(view.min[d][object])) : 0;
            r.hi[d] = d < dims ? cell(d, static_cast<double>(view.max[d][object])) : 0;
        }
    }

    /// Cell range [cell(lo), cell(hi)] per axis of a double box.
    [[nodiscard]] CellBox cells_of(const double lo[3], const double hi[3]) const {
        CellBox r{};
        for (uint32_t d = 0; d < dims; ++d) {
            r.lo[d] = cell(d, lo[d]);
            r.hi[d] = cell(d, hi[d]);
        }
        return r;
    }

    /// Intersects a cell box with the occupied extent; false when empty.
    bool clip(CellBox& r) const {
        if (!grid.has_cells) return false;
        for (uint32_t d = 0; d < 3; ++d) {
            r.lo[d] = std::max(r.lo[d], grid.cell_lo[d]);
            r.hi[d] = std::min(r.hi[d], grid.cell_hi[d]);
            if (r.lo[d] > r.hi[d]) return false;
        }
        return true;
    }

    /// Calls cell_fn(cell index, x, y, z) for every occupied cell in `r`, in
    /// ascending key order, skipping rows for which row_ok(y, z, x_lo, x_hi)
    /// is false; row_ok may narrow [x_lo, x_hi] (starting as r's x range).
    /// Empty rows and slabs are jumped over by binary search before row_ok is
    /// asked, so the cost is O(occupied rows of r * log(cells)) plus the cells
    /// visited, however many empty rows r spans.
    template <typename RowOk, typename CellFn>
    void walk(CellBox r, RowOk&& row_ok, CellFn&& cell_fn) const {
        if (!clip(r)) return;
        const uint64_t* keys = view.cell_key;
        const uint64_t* keys_end = keys + view.cell_count;
        const uint64_t* from = keys;
        int32_t z = r.lo[2];
        int32_t y = r.lo[1];
        while (z <= r.hi[2]) {
            if (y > r.hi[1]) {
                ++z;
                y = r.lo[1];
                continue;
            }
            // The first occupied cell at or after (r.lo x, y, z): keys only grow from here on.
            const uint64_t* it = std::lower_bound(from, keys_end, key(r.lo[0], y, z));
            if (it == keys_end) return;
            from = it;
            int32_t kx = 0, ky = 0, kz = 0; // set by unpack; initialised for GCC 12 under ASan (-Wmaybe-uninitialized)
            unpack(*it, kx, ky, kz);
            if (kz != z) { // no occupied cell left in this slab: jump to the next occupied one
                z = kz;
                y = r.lo[1];
                continue;
            }
            if (ky != y) { // next occupied row of the slab
                y = ky;
                continue;
            }
            int32_t x_lo = r.lo[0];
            int32_t x_hi = r.hi[0];
            if (!row_ok(y, z, x_lo, x_hi) || x_lo > x_hi) {
                ++y;
                continue;
            }
            it = std::lower_bound(from, keys_end, key(x_lo, y, z));
            const uint64_t last = key(x_hi, y, z);
            for (; it != keys_end && *it <= last; ++it) {
                unpack(*it, kx, ky, kz);
                cell_fn(static_cast<uint32_t>(it - keys), kx, ky, kz);
            }
            ++y;
        }
    }
};

/// Writes the first `capacity` results and counts all of them.
struct IndexSink {
    uint32_t* out;
    uint32_t capacity;
    uint32_t count = 0;
    void add(uint32_t object) {
        if (count < capacity) out[count] = object;
        ++count;
    }
};

QueryResult finish(uint32_t count, uint32_t capacity) {
    QueryResult r;
    r.count = count;
    r.written = std::min(count, capacity);
    if (count > capacity) {
        r.status.code = StatusCode::output_too_small;
        r.status.needed = count;
        r.status.message = "query result buffer too small";
    }
    return r;
}

QueryResult invalid(const char* message) {
    QueryResult r;
    r.status.code = StatusCode::invalid_query;
    r.status.message = message;
    return r;
}

/// invalid_argument for QueryResult and BatchResult.
template <typename Result>
Result bad_argument(const char* message) {
    Result r;
    r.status.code = StatusCode::invalid_argument;
    r.status.message = message;
    return r;
}

/// O(1) check that a BoxQueryGrid came from prepare_box_queries() over a
/// built view: a default one (null config) or a hand-made view missing the
/// arrays its counts need would otherwise be dereferenced.
bool usable(const BoxQueryGrid& g) {
    const BoxGridView& v = g.view;
    if (v.config == nullptr) return false;
    if (v.config->dimensions != 2 && v.config->dimensions != 3) return false;
    if (v.object_count != 0 &&
        (v.min[0] == nullptr || v.min[1] == nullptr || v.max[0] == nullptr || v.max[1] == nullptr ||
         (v.config->dimensions == 3 && (v.min[2] == nullptr || v.max[2] == nullptr))))
        return false;
    if (v.cell_count != 0 && (v.cell_key == nullptr || v.cell_start == nullptr || v.entry_object == nullptr))
        return false;
    if (g.has_cells && v.cell_count == 0) return false;
    return v.large_count == 0 || v.large_object != nullptr;
}

/// not_built when the view holds no frame, stale_view when the grid has been
/// rebuilt or re-initialised since the view was taken, else ok. O(1).
Status frame_status(const BoxQueryGrid& g) {
    Status s;
    if (!g.view.built) {
        s.code = StatusCode::not_built;
        s.message = "box query before a successful rebuild";
    } else if (g.view.live_frame != nullptr && *g.view.live_frame != g.view.frame) {
        s.code = StatusCode::stale_view;
        s.message = "BoxQueryGrid prepared before the grid's last rebuild: call prepare_box_queries again";
    }
    return s;
}

constexpr const char* kUnusableGrid = "BoxQueryGrid: no view (use prepare_box_queries on a built BoxGrid's view)";

// Programmer errors: asserted (debug and test builds stop there first), then
// reported as invalid_argument in every build.
#define HASHGRID_REQUIRE_ARGUMENT(Result, cond, message)                                                               \
    do {                                                                                                               \
        HASHGRID_ASSERT(cond, message);                                                                                \
        if (!(cond)) return bad_argument<Result>(message);                                                             \
    } while (0)

// The view's frame: not_built or stale_view, returned before anything is read.
#define HASHGRID_REQUIRE_FRAME(Result, grid)                                                                           \
    do {                                                                                                               \
        const Status frame_check = frame_status(grid);                                                                 \
        if (!frame_check.ok()) {                                                                                       \
            Result r;                                                                                                  \
            r.status = frame_check;                                                                                    \
            return r;                                                                                                  \
        }                                                                                                              \
    } while (0)

bool finite3(const float v[3], uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!std::isfinite(v[d])) return false;
    return true;
}

bool boxes_overlap(const float alo[3], const float ahi[3], const float blo[3], const float bhi[3], uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (!(alo[d] <= bhi[d] && blo[d] <= ahi[d])) return false;
    return true;
}

/// Marks a large object (no entry) in scan_box's callback.
constexpr uint32_t kNoEntry = 0xffffffffu;

/// Box scan with the min-corner rule: calls accept(object, entry) for every
/// object in a cell of [cell(lo), cell(hi)] whose reporting cell this is, in
/// order, then accept(object, kNoEntry) for every large object. `accept`
/// decides and reports. When the view carries per-entry first-cell bits
/// (BoxGrid's views do), the rule is a bit test per entry; otherwise each
/// entry's object is looked up and its first cell recomputed.
template <typename Accept>
void scan_box(const Cells& c, const double lo[3], const double hi[3], Accept&& accept) {
    const CellBox range = c.cells_of(lo, hi);
    const uint32_t* flags = c.view.entry_flags;
    c.walk(
        range, [](int32_t, int32_t, int32_t&, int32_t&) { return true; },
        [&](uint32_t cell, int32_t x, int32_t y, int32_t z) {
            const int32_t at[3] = {x, y, z};
            const uint32_t end = c.view.cell_start[cell + 1];
            if (flags != nullptr) {
                // Axes where this cell is the scan's first need no bit. (Spelled
                // out per axis: GCC 12 under ASan reports the loop form as
                // maybe-uninitialized.)
                const uint32_t need =
                    (range.lo[0] == x ? 0u : 1u) | (range.lo[1] == y ? 0u : 2u) | (range.lo[2] == z ? 0u : 4u);
                for (uint32_t e = c.view.cell_start[cell]; e < end; ++e)
                    if ((flags[e] & need) == need) accept(c.view.entry_object[e], e);
                return;
            }
            for (uint32_t e = c.view.cell_start[cell]; e < end; ++e) {
                const uint32_t object = c.view.entry_object[e];
                int32_t olo[3];
                c.object_min_cell(object, olo);
                bool here = true;
                for (uint32_t d = 0; d < 3; ++d)
                    here = here && std::max(range.lo[d], olo[d]) == at[d];
                if (here) accept(object, e);
            }
        });
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        accept(c.view.large_object[j], kNoEntry);
}

/// The box of `object`, from the entry's sequential copy when there is one.
void entry_or_object_box(const Cells& c, uint32_t object, uint32_t entry, float lo[3], float hi[3]) {
    if (entry == kNoEntry || c.view.entry_min[0] == nullptr) {
        c.object_box(object, lo, hi);
        return;
    }
    for (uint32_t d = 0; d < 3; ++d) {
        lo[d] = d < c.dims ? c.view.entry_min[d][entry] : 0.0f;
        hi[d] = d < c.dims ? c.view.entry_max[d][entry] : 0.0f;
    }
}

// ---------------------------------------------------------------------------
// Rays.

/// Pieces of the ray (see the file comment): calls visit(piece, previous or
/// null, t_end) in order along the ray until visit returns false. The ray is
/// clipped to the union of the small objects' boxes first, so a ray far
/// longer than the world costs the cells it crosses inside it. Returns false,
/// having visited nothing, when the pieces would outnumber the occupied cells
/// (a long ray through a sparse extent): the caller then scans the occupied
/// cells instead (scan_all_small), which gives the same hits.
template <typename Visit>
bool traverse_ray(const Cells& c, const Ray& ray, Visit&& visit) {
    const BoxQueryGrid& g = c.grid;
    if (!g.has_cells) return true;
    const uint32_t dims = c.dims;
    double o[3];
    double dir[3];
    double eps[3];
    double t0 = 0.0;
    double t1 = static_cast<double>(ray.max_t);
    for (uint32_t d = 0; d < dims; ++d) {
        o[d] = static_cast<double>(ray.origin[d]);
        dir[d] = static_cast<double>(ray.direction[d]);
        eps[d] = kRelativeSlack * (std::fabs(o[d]) + static_cast<double>(g.magnitude[d])) + kAbsoluteSlack;
        // Clip to the union of the small objects' boxes, widened by eps.
        const double lo = static_cast<double>(g.box_lo[d]) - 2.0 * eps[d];
        const double hi = static_cast<double>(g.box_hi[d]) + 2.0 * eps[d];
        if (dir[d] == 0.0) {
            if (o[d] < lo || o[d] > hi) return true;
            continue;
        }
        double ta = (lo - o[d]) / dir[d];
        double tb = (hi - o[d]) / dir[d];
        if (ta > tb) std::swap(ta, tb);
        t0 = std::max(t0, ta);
        t1 = std::min(t1, tb);
    }
    if (!(t0 <= t1)) return true;
    auto position = [&](uint32_t d, double t) { return dir[d] == 0.0 ? o[d] : o[d] + t * dir[d]; };
    double crossings = 1.0; // pieces, up to a few for rounding
    for (uint32_t d = 0; d < dims; ++d) {
        if (dir[d] == 0.0) continue;
        const int32_t a = std::clamp(c.cell(d, position(d, t0)), g.cell_lo[d], g.cell_hi[d]);
        const int32_t b = std::clamp(c.cell(d, position(d, t1)), g.cell_lo[d], g.cell_hi[d]);
        crossings += std::fabs(static_cast<double>(a) - static_cast<double>(b));
    }
    if (crossings > 2.0 * static_cast<double>(c.view.cell_count) + 64.0) return false;

    // Next boundary to cross per axis (interior boundaries of the extent only:
    // beyond them the clamped cell does not change).
    int64_t next[3] = {0, 0, 0};
    double t_next[3] = {kDoubleInf, kDoubleInf, kDoubleInf};
    for (uint32_t d = 0; d < dims; ++d) {
        if (dir[d] == 0.0) continue;
        const double f = std::floor((position(d, t0) - c.origin[d]) * c.scale);
        const int64_t first = int64_t{g.cell_lo[d]} + 1;
        const int64_t last = g.cell_hi[d];
        if (first > last) continue;
        const double clamped = std::clamp(f, static_cast<double>(first - 1), static_cast<double>(last + 1));
        int64_t k = static_cast<int64_t>(clamped);
        if (dir[d] > 0.0) {
            k = std::max(k + 1, first);
            if (k > last) continue;
        } else {
            k = std::min(k, last);
            if (k < first) continue;
        }
        next[d] = k;
        t_next[d] = (c.boundary(d, k) - o[d]) / dir[d];
    }

    CellBox previous{};
    bool has_previous = false;
    double ts = t0;
    for (;;) {
        uint32_t axis = 3;
        double te = t1;
        for (uint32_t d = 0; d < dims; ++d) {
            if (t_next[d] < te) {
                te = t_next[d];
                axis = d;
            }
        }
        te = std::max(te, ts);
        CellBox piece{};
        for (uint32_t d = 0; d < dims; ++d) {
            const double a = position(d, ts);
            const double b = position(d, te);
            piece.lo[d] = std::max(c.cell(d, std::min(a, b) - eps[d]), g.cell_lo[d]);
            piece.hi[d] = std::min(c.cell(d, std::max(a, b) + eps[d]), g.cell_hi[d]);
        }
        if (!visit(piece, has_previous ? &previous : nullptr, te)) return true;
        previous = piece;
        has_previous = true;
        if (axis == 3) return true;
        ts = te;
        next[axis] += dir[axis] > 0.0 ? 1 : -1;
        if (next[axis] < int64_t{g.cell_lo[axis]} + 1 || next[axis] > int64_t{g.cell_hi[axis]}) {
            t_next[axis] = kDoubleInf;
        } else {
            t_next[axis] = (c.boundary(axis, next[axis]) - o[axis]) / dir[axis];
        }
    }
}

/// Small objects of a piece, once along the whole ray: calls hit(object) for
/// each object reported from this piece that passes the layer mask.
template <typename Hit>
void scan_piece(const Cells& c, const CellBox& piece, const CellBox* previous, uint32_t layer_mask, Hit&& hit) {
    c.walk(
        piece, [](int32_t, int32_t, int32_t&, int32_t&) { return true; },
        [&](uint32_t cell, int32_t x, int32_t y, int32_t z) {
            const int32_t at[3] = {x, y, z};
            const uint32_t end = c.view.cell_start[cell + 1];
            for (uint32_t e = c.view.cell_start[cell]; e < end; ++e) {
                const uint32_t object = c.view.entry_object[e];
                if (!c.in_layer(object, layer_mask)) continue;
                CellBox r;
                c.object_cells(object, r);
                if (previous != nullptr && boxes_meet(r, *previous)) continue;
                bool here = true;
                for (uint32_t d = 0; d < 3; ++d)
                    here = here && std::max(piece.lo[d], r.lo[d]) == at[d];
                if (here) hit(object);
            }
        });
}

/// Every small object once (from its minimum cell) that passes the layer
/// mask: O(entries), the fallback of traverse_ray.
template <typename Hit>
void scan_all_small(const Cells& c, uint32_t layer_mask, Hit&& hit) {
    for (uint32_t cell = 0; cell < c.view.cell_count; ++cell) {
        int32_t at[3] = {0, 0, 0};
        c.unpack(c.view.cell_key[cell], at[0], at[1], at[2]);
        for (uint32_t e = c.view.cell_start[cell]; e < c.view.cell_start[cell + 1]; ++e) {
            const uint32_t object = c.view.entry_object[e];
            int32_t lo[3];
            c.object_min_cell(object, lo);
            if (lo[0] == at[0] && lo[1] == at[1] && lo[2] == at[2] && c.in_layer(object, layer_mask)) hit(object);
        }
    }
}

bool valid_ray(const Ray& ray, uint32_t dims) {
    return finite3(ray.origin, dims) && finite3(ray.direction, dims) && !std::isnan(ray.max_t) && ray.max_t >= 0.0f;
}

bool hit_less(const RayHit& a, const RayHit& b) { return a.t < b.t || (a.t == b.t && a.object < b.object); }

// ---------------------------------------------------------------------------
// Frustum.

struct PlaneSet {
    const Plane* planes;
    uint32_t count;
    double margin[kMaxFrustumPlanes];
};

/// False only when the world box of cells [lo, hi] is certainly outside a plane.
bool cells_may_pass(const Cells& c, const PlaneSet& ps, const int32_t lo[3], const int32_t hi[3]) {
    double box_lo[3];
    double box_hi[3];
    for (uint32_t d = 0; d < c.dims; ++d) {
        // Bounded clamp mode keeps outside objects in the border cells: those reach to infinity.
        box_lo[d] = c.bounded && lo[d] == 0 ? -kDoubleInf : c.boundary(d, lo[d]);
        box_hi[d] = c.bounded && hi[d] == c.key_hi[d] ? kDoubleInf : c.boundary(d, int64_t{hi[d]} + 1);
    }
    for (uint32_t p = 0; p < ps.count; ++p) {
        const Plane& plane = ps.planes[p];
        double v = static_cast<double>(plane.d);
        for (uint32_t d = 0; d < c.dims; ++d) {
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
    for (uint32_t d = 1; d < c.dims; ++d) {
        rest_lo[d] = c.bounded && lo[d] == 0 ? -kDoubleInf : c.boundary(d, lo[d]);
        rest_hi[d] = c.bounded && hi[d] == c.key_hi[d] ? kDoubleInf : c.boundary(d, int64_t{hi[d]} + 1);
    }
    int64_t first = x_lo;
    int64_t last = x_hi;
    for (uint32_t p = 0; p < ps.count; ++p) {
        const Plane& plane = ps.planes[p];
        const double nx = static_cast<double>(plane.normal[0]);
        if (nx == 0.0) continue; // decided by the row test
        double rest = static_cast<double>(plane.d) + ps.margin[p];
        for (uint32_t d = 1; d < c.dims; ++d) {
            const double n = static_cast<double>(plane.normal[d]);
            if (n > 0.0) rest += n * rest_hi[d];
            if (n < 0.0) rest += n * rest_lo[d];
        }
        if (rest == kDoubleInf) continue;
        // Passing: nx * X + rest >= 0 with X the reach box's far x boundary.
        const double threshold = std::floor((-rest / nx - c.origin[0]) * c.scale);
        if (!std::isfinite(threshold)) {
            if ((threshold > 0.0) == (nx > 0.0)) return void(x_hi = x_lo - 1); // nothing passes
            continue;
        }
        const double t = std::clamp(threshold, -0x1p40, 0x1p40);
        if (nx > 0.0) { // B(x + reach + 1) >= X: x >= threshold - reach - 1 (one more for rounding)
            int64_t from = static_cast<int64_t>(t) - reach - 2;
            if (c.bounded) from = std::min<int64_t>(from, int64_t{c.key_hi[0]} - reach); // border reaches to +inf
            first = std::max(first, from);
        } else { // B(x) <= X: x <= threshold (one more for rounding)
            int64_t to = static_cast<int64_t>(t) + 1;
            if (c.bounded) to = std::max<int64_t>(to, 0); // border reaches to -inf
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

// ---------------------------------------------------------------------------
// Nearest.

bool nearest_less(const NearestHit& a, const NearestHit& b) {
    return a.distance2 < b.distance2 || (a.distance2 == b.distance2 && a.object < b.object);
}

/// Sorted list of the best `limit` candidates, kept in the caller's buffer.
struct NearestList {
    NearestHit* out;
    uint32_t limit;
    uint32_t size = 0;
    void offer(uint32_t object, float distance2) {
        const NearestHit h{object, distance2};
        if (size == limit) {
            if (limit == 0 || !nearest_less(h, out[limit - 1])) return;
            --size;
        }
        uint32_t i = size;
        while (i > 0 && nearest_less(h, out[i - 1])) {
            out[i] = out[i - 1];
            --i;
        }
        out[i] = h;
        ++size;
    }
};

uint32_t count_within(const Cells& c, const NearestQuery& q, float max_d2, uint32_t k) {
    uint32_t n = 0;
    for (uint32_t o = 0; o < c.view.object_count && n < k; ++o) {
        if (!c.in_layer(o, q.layer_mask)) continue;
        float lo[3], hi[3];
        c.object_box(o, lo, hi);
        if (point_box_distance2(q.p, lo, hi, c.dims) <= max_d2) ++n;
    }
    return n;
}

// ---------------------------------------------------------------------------
// Batches.

constexpr uint64_t kInvalidCount = ~uint64_t{0};

/// Count (and, when the buffer is roomy, write) pass, scan, then compaction or a
/// write pass. single(query, out, capacity) -> QueryResult.
template <typename Query, typename Out, typename Single>
BatchResult run_batch(const BoxQueryGrid& grid, const Query* queries, uint32_t query_count, uint64_t* offsets, Out* out,
                      uint64_t capacity, const ThreadBackend& backend, Single&& single) {
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(BatchResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, queries != nullptr || query_count == 0, "batch: null queries");
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, offsets != nullptr, "batch: null offsets");
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, out != nullptr || capacity == 0, "batch: null output with capacity > 0");
    BatchResult result;
    // One pass when the buffer is roomy: chunk k writes its results at
    // k * region (region = capacity / chunks) while counting; if every chunk
    // fit, the results are then moved down into place in query order (each
    // destination is at or below its source, so in-order moves never
    // overwrite unread results). Otherwise the counts are exact anyway and a
    // second pass writes at the final offsets.
    const uint32_t chunks = query_count / kBatchGrain + (query_count % kBatchGrain != 0 ? 1u : 0u);
    const uint64_t region = chunks != 0 ? capacity / chunks : 0;
    std::atomic<bool> spilled{false};
    parallel_chunks(backend, query_count, kBatchGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const uint64_t base = uint64_t{begin / kBatchGrain} * region;
        uint64_t used = 0;
        for (uint32_t q = begin; q < end; ++q) {
            const auto room = static_cast<uint32_t>(std::min<uint64_t>(used < region ? region - used : 0, 0xffffffffu));
            Out* at = room != 0 ? out + static_cast<size_t>(base + used) : nullptr;
            const QueryResult r = single(queries[q], at, room);
            const bool bad = r.status.code == StatusCode::invalid_query;
            offsets[q + 1] = bad ? kInvalidCount : r.count;
            if (!bad) used += r.count;
        }
        if (used > region) spilled.store(true, std::memory_order_relaxed);
    });
    uint64_t total = 0;
    uint32_t bad = 0;
    uint32_t first_bad = 0;
    offsets[0] = 0;
    for (uint32_t q = 0; q < query_count; ++q) {
        if (offsets[q + 1] == kInvalidCount) {
            if (bad++ == 0) first_bad = q;
            continue;
        }
        if (bad == 0) {
            total += offsets[q + 1];
            offsets[q + 1] = total;
        }
    }
    if (bad != 0) {
        result.status.code = StatusCode::invalid_query;
        result.status.index = first_bad;
        result.status.count = bad;
        result.status.message = "a query of the batch is invalid (NaN, negative size or length, ...)";
        return result;
    }
    if (!spilled.load(std::memory_order_relaxed)) {
        for (uint32_t c = 0; c < chunks; ++c) {
            const uint32_t q0 = c * kBatchGrain;
            const uint32_t q1 = std::min(query_count, q0 + kBatchGrain);
            const uint64_t length = offsets[q1] - offsets[q0];
            const uint64_t chunk_first = offsets[q0]; // final place of the chunk's results
            const uint64_t from = uint64_t{c} * region;
            if (length != 0 && from != chunk_first)
                std::memmove(out + static_cast<size_t>(chunk_first), out + static_cast<size_t>(from),
                             static_cast<size_t>(length) * sizeof(Out));
        }
    } else {
        parallel_chunks(backend, query_count, kBatchGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t q = begin; q < end; ++q) {
                const uint64_t at = offsets[q];
                if (at >= capacity) break; // later queries start even further
                const auto room = static_cast<uint32_t>(std::min<uint64_t>(offsets[q + 1] - at, capacity - at));
                const QueryResult r = single(queries[q], out + static_cast<size_t>(at), room);
                HASHGRID_ASSERT(r.count == offsets[q + 1] - at, "batch: count and write passes disagree");
                (void)r;
            }
        });
    }
    result.total = total;
    result.written = std::min(total, capacity);
    if (total > capacity) {
        result.status.code = StatusCode::output_too_small;
        result.status.needed = total;
        result.status.message = "batch result buffer too small";
    }
    return result;
}

} // namespace

// ---------------------------------------------------------------------------

BoxQueryGrid prepare_box_queries(const BoxGridView& view, const ThreadBackend& backend) {
    HASHGRID_ASSERT(view.config != nullptr, "prepare_box_queries: the view has no config (grid not built?)");
    BoxQueryGrid g;
    // Without a config the queries answer invalid_argument (see usable()).
    if (view.config == nullptr) return g;
    g.view = view;
    const uint32_t dims = view.config->dimensions;
    const uint32_t cells = view.cell_count;
    g.has_cells = cells > 0;
    if (!g.has_cells) return g;
    const Cells c(g);

    // At most kParts chunks, so the partial results live on the stack.
    constexpr uint32_t kParts = 64;
    struct Part {
        int32_t lo[3];
        int32_t hi[3];
        float box_lo[3];
        float box_hi[3];
        int32_t span[3];
        bool any;
    };
    Part parts[kParts];
    auto grain_for = [](uint32_t n) { return std::max<uint32_t>(4096, (n + kParts - 1) / kParts); };

    const uint32_t cell_grain = grain_for(cells);
    parallel_chunks(backend, cells, cell_grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        Part& p = parts[begin / cell_grain];
        for (uint32_t d = 0; d < 3; ++d) {
            p.lo[d] = INT32_MAX;
            p.hi[d] = INT32_MIN;
        }
        for (uint32_t i = begin; i < end; ++i) {
            int32_t at[3];
            c.unpack(view.cell_key[i], at[0], at[1], at[2]);
            for (uint32_t d = 0; d < 3; ++d) {
                p.lo[d] = std::min(p.lo[d], at[d]);
                p.hi[d] = std::max(p.hi[d], at[d]);
            }
        }
    });
    for (uint32_t d = 0; d < 3; ++d) {
        g.cell_lo[d] = INT32_MAX;
        g.cell_hi[d] = INT32_MIN;
    }
    for (uint32_t p = 0; p * cell_grain < cells; ++p)
        for (uint32_t d = 0; d < 3; ++d) {
            g.cell_lo[d] = std::min(g.cell_lo[d], parts[p].lo[d]);
            g.cell_hi[d] = std::max(g.cell_hi[d], parts[p].hi[d]);
        }

    // Union of the small objects' boxes (large objects are listed, ascending).
    const uint32_t n = view.object_count;
    const uint32_t object_grain = grain_for(n);
    parallel_chunks(backend, n, object_grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        Part& p = parts[begin / object_grain];
        p.any = false;
        p.span[0] = p.span[1] = p.span[2] = 0;
        const uint32_t* large = std::lower_bound(view.large_object, view.large_object + view.large_count, begin);
        const uint32_t* large_end = view.large_object + view.large_count;
        for (uint32_t i = begin; i < end; ++i) {
            if (large != large_end && *large == i) {
                ++large;
                continue;
            }
            for (uint32_t d = 0; d < dims; ++d) {
                const float lo = view.min[d][i];
                const float hi = view.max[d][i];
                p.box_lo[d] = p.any ? std::min(p.box_lo[d], lo) : lo;
                p.box_hi[d] = p.any ? std::max(p.box_hi[d], hi) : hi;
                const int32_t span = c.cell(d, static_cast<double>(hi)) - c.cell(d, static_cast<double>(lo));
                p.span[d] = std::max(p.span[d], span);
            }
            p.any = true;
        }
    });
    bool any = false;
    for (uint32_t p = 0; p * object_grain < n; ++p) {
        if (!parts[p].any) continue;
        for (uint32_t d = 0; d < dims; ++d) {
            g.box_lo[d] = any ? std::min(g.box_lo[d], parts[p].box_lo[d]) : parts[p].box_lo[d];
            g.box_hi[d] = any ? std::max(g.box_hi[d], parts[p].box_hi[d]) : parts[p].box_hi[d];
            g.max_span[d] = std::max(g.max_span[d], parts[p].span[d]);
        }
        any = true;
    }
    HASHGRID_ASSERT(any, "prepare_box_queries: occupied cells but no small object");
    for (uint32_t d = 0; d < dims; ++d)
        g.magnitude[d] = std::max(std::fabs(g.box_lo[d]), std::fabs(g.box_hi[d]));
    return g;
}

float point_box_distance2(const float p[3], const float box_min[3], const float box_max[3], uint32_t dimensions) {
    float d2 = 0.0f;
    for (uint32_t d = 0; d < dimensions; ++d) {
        const float v = p[d] < box_min[d] ? box_min[d] - p[d] : (p[d] > box_max[d] ? p[d] - box_max[d] : 0.0f);
        const float sq = v * v;
        d2 = d2 + sq;
    }
    return d2;
}

QueryResult query_point(const BoxQueryGrid& grid, const PointQuery& query, uint32_t* out, uint32_t capacity) {
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(QueryResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, out != nullptr || capacity == 0,
                              "query_point: null output with capacity > 0");
    const Cells c(grid);
    if (!finite3(query.p, c.dims)) return invalid("query_point: the point is not finite");
    IndexSink sink{out, capacity};
    auto consider = [&](uint32_t object) {
        if (!c.in_layer(object, query.layer_mask)) return;
        for (uint32_t d = 0; d < c.dims; ++d)
            if (!(c.view.min[d][object] <= query.p[d] && query.p[d] <= c.view.max[d][object])) return;
        sink.add(object);
    };
    if (grid.has_cells) {
        int32_t at[3] = {0, 0, 0};
        bool inside = true;
        for (uint32_t d = 0; d < c.dims; ++d) {
            at[d] = c.cell(d, static_cast<double>(query.p[d]));
            inside = inside && at[d] >= grid.cell_lo[d] && at[d] <= grid.cell_hi[d];
        }
        if (inside) {
            const uint64_t key = c.key(at[0], at[1], at[2]);
            const uint64_t* end = c.view.cell_key + c.view.cell_count;
            const uint64_t* it = std::lower_bound(c.view.cell_key, end, key);
            if (it != end && *it == key) {
                const auto cell = static_cast<uint32_t>(it - c.view.cell_key);
                for (uint32_t e = c.view.cell_start[cell]; e < c.view.cell_start[cell + 1]; ++e)
                    consider(c.view.entry_object[e]);
            }
        }
    }
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        consider(c.view.large_object[j]);
    return finish(sink.count, capacity);
}

QueryResult query_box(const BoxQueryGrid& grid, const BoxQuery& query, uint32_t* out, uint32_t capacity) {
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(QueryResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, out != nullptr || capacity == 0, "query_box: null output with capacity > 0");
    const Cells c(grid);
    for (uint32_t d = 0; d < c.dims; ++d)
        if (!(query.min[d] <= query.max[d])) return invalid("query_box: min > max or NaN");
    double lo[3] = {0.0, 0.0, 0.0};
    double hi[3] = {0.0, 0.0, 0.0};
    for (uint32_t d = 0; d < c.dims; ++d) {
        lo[d] = static_cast<double>(query.min[d]);
        hi[d] = static_cast<double>(query.max[d]);
    }
    IndexSink sink{out, capacity};
    scan_box(c, lo, hi, [&](uint32_t object, uint32_t entry) {
        float olo[3], ohi[3];
        entry_or_object_box(c, object, entry, olo, ohi);
        if (boxes_overlap(query.min, query.max, olo, ohi, c.dims) && c.in_layer(object, query.layer_mask))
            sink.add(object);
    });
    return finish(sink.count, capacity);
}

QueryResult query_radius(const BoxQueryGrid& grid, const RadiusQuery& query, uint32_t* out, uint32_t capacity) {
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(QueryResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, out != nullptr || capacity == 0,
                              "query_radius: null output with capacity > 0");
    const Cells c(grid);
    if (!finite3(query.center, c.dims)) return invalid("query_radius: the centre is not finite");
    if (std::isnan(query.radius) || query.radius < 0.0f) return invalid("query_radius: radius is NaN or negative");
    // A box passes only if it reaches within radius * (1 + 2^-22) (+ underflow)
    // of the centre on every axis: the widened bounding box holds a cell of it.
    // When radius * radius overflows, d2 = +inf passes too (+inf <= +inf):
    // every object does, however far, so the scan covers every cell.
    const float r2 = query.radius * query.radius;
    const double half = r2 == std::numeric_limits<float>::infinity()
                            ? kDoubleInf
                            : static_cast<double>(query.radius) * (1.0 + kRelativeSlack) + kAbsoluteSlack;
    double lo[3] = {0.0, 0.0, 0.0};
    double hi[3] = {0.0, 0.0, 0.0};
    for (uint32_t d = 0; d < c.dims; ++d) {
        lo[d] = static_cast<double>(query.center[d]) - half;
        hi[d] = static_cast<double>(query.center[d]) + half;
    }
    IndexSink sink{out, capacity};
    scan_box(c, lo, hi, [&](uint32_t object, uint32_t entry) {
        float olo[3], ohi[3];
        entry_or_object_box(c, object, entry, olo, ohi);
        if (point_box_distance2(query.center, olo, ohi, c.dims) <= r2 && c.in_layer(object, query.layer_mask))
            sink.add(object);
    });
    return finish(sink.count, capacity);
}

QueryResult query_potential_collisions(const BoxQueryGrid& grid, uint32_t object, uint32_t* out, uint32_t capacity) {
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(QueryResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, out != nullptr || capacity == 0,
                              "query_potential_collisions: null output with capacity > 0");
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, object < grid.view.object_count,
                              "query_potential_collisions: object index out of range");
    const Cells c(grid);
    float qlo[3], qhi[3];
    c.object_box(object, qlo, qhi);
    double lo[3], hi[3];
    for (uint32_t d = 0; d < 3; ++d) {
        lo[d] = static_cast<double>(qlo[d]);
        hi[d] = static_cast<double>(qhi[d]);
    }
    const uint32_t category = c.view.category != nullptr ? c.view.category[object] : ~0u;
    const uint32_t mask = c.view.mask != nullptr ? c.view.mask[object] : ~0u;
    IndexSink sink{out, capacity};
    scan_box(c, lo, hi, [&](uint32_t other, uint32_t) {
        if (other == object) return;
        const uint32_t other_category = c.view.category != nullptr ? c.view.category[other] : ~0u;
        const uint32_t other_mask = c.view.mask != nullptr ? c.view.mask[other] : ~0u;
        if ((category & other_mask) == 0 || (other_category & mask) == 0) return;
        float olo[3], ohi[3];
        c.object_box(other, olo, ohi);
        if (boxes_overlap(qlo, qhi, olo, ohi, c.dims)) sink.add(other);
    });
    return finish(sink.count, capacity);
}

Ray segment_ray(const float start[3], const float end[3]) {
    Ray r;
    for (uint32_t d = 0; d < 3; ++d) {
        r.origin[d] = start[d];
        r.direction[d] = end[d] - start[d];
    }
    r.max_t = 1.0f;
    return r;
}

bool ray_box_hit(const Ray& ray, const float box_min[3], const float box_max[3], uint32_t dimensions, float& t) {
    double t_enter = 0.0;
    double t_exit = static_cast<double>(ray.max_t);
    for (uint32_t d = 0; d < dimensions; ++d) {
        const float o = ray.origin[d];
        const float dir = ray.direction[d];
        if (dir == 0.0f) {
            if (o < box_min[d] || o > box_max[d]) return false;
            continue;
        }
        const double od = static_cast<double>(o);
        const double dd = static_cast<double>(dir);
        double t1 = (static_cast<double>(box_min[d]) - od) / dd;
        double t2 = (static_cast<double>(box_max[d]) - od) / dd;
        if (t1 > t2) std::swap(t1, t2);
        if (t1 > t_enter) t_enter = t1;
        if (t2 < t_exit) t_exit = t2;
    }
    if (!(t_enter <= t_exit)) return false;
    t = static_cast<float>(t_enter);
    return true;
}

QueryResult query_ray(const BoxQueryGrid& grid, const RayQuery& query, RayHit* out, uint32_t capacity) {
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(QueryResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, out != nullptr || capacity == 0, "query_ray: null output with capacity > 0");
    const Cells c(grid);
    if (!valid_ray(query.ray, c.dims)) return invalid("query_ray: NaN/infinite ray or negative max_t");
    // The best `capacity` hits by (t, index) in a max-heap in the caller's
    // buffer; every hit is counted. Keys are unique, so the sorted heap is the
    // canonical prefix whatever the discovery order.
    uint32_t count = 0;
    uint32_t size = 0;
    auto consider = [&](uint32_t object) {
        float lo[3], hi[3];
        c.object_box(object, lo, hi);
        float t = 0.0f;
        if (!ray_box_hit(query.ray, lo, hi, c.dims, t)) return;
        ++count;
        const RayHit h{object, t};
        if (size < capacity) {
            out[size++] = h;
            std::push_heap(out, out + size, hit_less);
        } else if (capacity != 0 && hit_less(h, out[0])) {
            std::pop_heap(out, out + size, hit_less);
            out[size - 1] = h;
            std::push_heap(out, out + size, hit_less);
        }
    };
    // Hits are ranked by (t, index) whatever the order they are found in.
    if (!traverse_ray(c, query.ray, [&](const CellBox& piece, const CellBox* previous, double) {
            scan_piece(c, piece, previous, query.layer_mask, consider);
            return true;
        }))
        scan_all_small(c, query.layer_mask, consider);
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        if (c.in_layer(c.view.large_object[j], query.layer_mask)) consider(c.view.large_object[j]);
    std::sort_heap(out, out + size, hit_less);
    return finish(count, capacity);
}

QueryResult query_ray_first(const BoxQueryGrid& grid, const RayQuery& query, RayHit* out) {
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(QueryResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, out != nullptr, "query_ray_first: null output");
    const Cells c(grid);
    if (!valid_ray(query.ray, c.dims)) return invalid("query_ray_first: NaN/infinite ray or negative max_t");
    RayHit best{kNoObject, 0.0f};
    auto consider = [&](uint32_t object) {
        float lo[3], hi[3];
        c.object_box(object, lo, hi);
        float t = 0.0f;
        if (!ray_box_hit(query.ray, lo, hi, c.dims, t)) return;
        const RayHit h{object, t};
        if (best.object == kNoObject || hit_less(h, best)) best = h;
    };
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        if (c.in_layer(c.view.large_object[j], query.layer_mask)) consider(c.view.large_object[j]);
    if (!traverse_ray(c, query.ray, [&](const CellBox& piece, const CellBox* previous, double t_end) {
            scan_piece(c, piece, previous, query.layer_mask, consider);
            // An unseen object's slab t exceeds t_end up to rounding (float t: 2^-24 relative).
            return best.object == kNoObject || !(static_cast<double>(best.t) < t_end * (1.0 - kRelativeSlack));
        }))
        scan_all_small(c, query.layer_mask, consider);
    if (best.object == kNoObject) return finish(0, 1);
    *out = best;
    return finish(1, 1);
}

QueryResult query_frustum(const BoxQueryGrid& grid, const Plane* planes, uint32_t plane_count, uint32_t layer_mask,
                          uint32_t* out, uint32_t capacity) {
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(QueryResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, out != nullptr || capacity == 0,
                              "query_frustum: null output with capacity > 0");
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, planes != nullptr || plane_count == 0, "query_frustum: null planes");
    const Cells c(grid);
    if (plane_count == 0 || plane_count > kMaxFrustumPlanes)
        return invalid("query_frustum: plane count outside [1, kMaxFrustumPlanes]");
    PlaneSet ps{planes, plane_count, {}};
    for (uint32_t p = 0; p < plane_count; ++p) {
        if (!finite3(planes[p].normal, c.dims) || !std::isfinite(planes[p].d))
            return invalid("query_frustum: a plane is not finite");
        // Rounding of the float test on any stored box, and of the cell bounds.
        double scale_sum = std::fabs(static_cast<double>(planes[p].d));
        for (uint32_t d = 0; d < c.dims; ++d) {
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
    IndexSink sink{out, capacity};
    auto consider = [&](uint32_t object) {
        if (!c.in_layer(object, layer_mask)) return;
        float lo[3], hi[3];
        c.object_box(object, lo, hi);
        if (box_in_frustum(planes, plane_count, lo, hi, c.dims)) sink.add(object);
    };
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
                for (uint32_t e = c.view.cell_start[cell]; e < c.view.cell_start[cell + 1]; ++e) {
                    const uint32_t object = c.view.entry_object[e];
                    int32_t olo[3];
                    c.object_min_cell(object, olo);
                    if (olo[0] == x && olo[1] == y && olo[2] == z) consider(object);
                }
            });
    }
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        consider(c.view.large_object[j]);
    return finish(sink.count, capacity);
}

QueryResult query_nearest(const BoxQueryGrid& grid, const NearestQuery& query, uint32_t k, NearestHit* out,
                          uint32_t capacity) {
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(QueryResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(QueryResult, out != nullptr || capacity == 0,
                              "query_nearest: null output with capacity > 0");
    const Cells c(grid);
    if (k == 0) return invalid("query_nearest: k == 0");
    if (!finite3(query.p, c.dims)) return invalid("query_nearest: the point is not finite");
    if (std::isnan(query.max_distance) || query.max_distance < 0.0f)
        return invalid("query_nearest: max_distance is NaN or negative");
    const float max_d2 = query.max_distance * query.max_distance;
    NearestList list{out, std::min(k, capacity)};
    if (list.limit == 0) return finish(count_within(c, query, max_d2, k), capacity);

    auto consider = [&](uint32_t object) {
        float lo[3], hi[3];
        c.object_box(object, lo, hi);
        const float d2 = point_box_distance2(query.p, lo, hi, c.dims);
        if (d2 <= max_d2) list.offer(object, d2);
    };
    for (uint32_t j = 0; j < c.view.large_count; ++j)
        if (c.in_layer(c.view.large_object[j], query.layer_mask)) consider(c.view.large_object[j]);

    if (grid.has_cells) {
        const uint32_t dims = c.dims;
        int64_t centre[3] = {0, 0, 0};
        for (uint32_t d = 0; d < dims; ++d)
            centre[d] = std::clamp(c.cell(d, static_cast<double>(query.p[d])), grid.cell_lo[d], grid.cell_hi[d]);
        // Cells of the cube centre +- s inside the occupied extent.
        auto cube_cells = [&](int64_t s) {
            double cells = 1.0;
            for (uint32_t d = 0; d < dims; ++d)
                cells *= static_cast<double>(std::min<int64_t>(centre[d] + s, grid.cell_hi[d]) -
                                             std::max<int64_t>(centre[d] - s, grid.cell_lo[d]) + 1);
            return cells;
        };
        const double budget = 2.0 * static_cast<double>(c.view.cell_count) + 64.0;
        for (int64_t s = 0;; ++s) {
            if (s > 0 && cube_cells(s) > budget) {
                // The shells would look at more cells than are occupied (a
                // sparse extent): consider every object not seen in the
                // shells so far once, from its minimum cell, instead.
                CellBox seen{};
                for (uint32_t d = 0; d < 3; ++d) {
                    const int64_t reach = d < dims ? s - 1 : 0;
                    seen.lo[d] = static_cast<int32_t>(std::max<int64_t>(centre[d] - reach, grid.cell_lo[d]));
                    seen.hi[d] = static_cast<int32_t>(std::min<int64_t>(centre[d] + reach, grid.cell_hi[d]));
                }
                scan_all_small(c, query.layer_mask, [&](uint32_t object) {
                    CellBox r;
                    c.object_cells(object, r);
                    if (!boxes_meet(r, seen)) consider(object);
                });
                break;
            }
            CellBox cube{};
            CellBox inner{};
            for (uint32_t d = 0; d < 3; ++d) {
                const int64_t reach = d < dims ? s : 0;
                cube.lo[d] = static_cast<int32_t>(std::max<int64_t>(centre[d] - reach, grid.cell_lo[d]));
                cube.hi[d] = static_cast<int32_t>(std::min<int64_t>(centre[d] + reach, grid.cell_hi[d]));
                const int64_t inner_reach = d < dims ? s - 1 : 0;
                inner.lo[d] = static_cast<int32_t>(std::max<int64_t>(centre[d] - inner_reach, INT32_MIN));
                inner.hi[d] = static_cast<int32_t>(std::min<int64_t>(centre[d] + inner_reach, INT32_MAX));
            }
            // The shell: cells of the cube outside the inner cube, as up to six
            // disjoint boxes (z faces, then y faces without them, then x faces).
            auto scan = [&](const CellBox& part) {
                c.walk(
                    part, [](int32_t, int32_t, int32_t&, int32_t&) { return true; },
                    [&](uint32_t cell, int32_t x, int32_t y, int32_t z) {
                        const int32_t at[3] = {x, y, z};
                        for (uint32_t e = c.view.cell_start[cell]; e < c.view.cell_start[cell + 1]; ++e) {
                            const uint32_t object = c.view.entry_object[e];
                            if (!c.in_layer(object, query.layer_mask)) continue;
                            CellBox r;
                            c.object_cells(object, r);
                            if (s > 0 && boxes_meet(r, inner)) continue; // seen in an earlier shell
                            bool here = true;
                            for (uint32_t d = 0; d < 3; ++d)
                                here = here && std::max(r.lo[d], cube.lo[d]) == at[d];
                            if (here) consider(object);
                        }
                    });
            };
            if (s == 0) {
                scan(cube);
            } else {
                CellBox rest = cube; // shrinks as faces are taken off, axis by axis (z, y, x)
                for (uint32_t axis = dims; axis-- > 0;) {
                    const int64_t low_face = centre[axis] - s;
                    const int64_t high_face = centre[axis] + s;
                    if (low_face >= rest.lo[axis] && low_face <= rest.hi[axis]) {
                        CellBox part = rest;
                        part.lo[axis] = part.hi[axis] = static_cast<int32_t>(low_face);
                        scan(part);
                        rest.lo[axis] = static_cast<int32_t>(low_face + 1);
                    }
                    if (high_face >= rest.lo[axis] && high_face <= rest.hi[axis]) {
                        CellBox part = rest;
                        part.lo[axis] = part.hi[axis] = static_cast<int32_t>(high_face);
                        scan(part);
                        rest.hi[axis] = static_cast<int32_t>(high_face - 1);
                    }
                    if (rest.lo[axis] > rest.hi[axis]) break;
                }
            }
            // Lower bound on the distance of any unseen small object: the
            // nearest face of the cube that is inside the occupied extent.
            double bound = kDoubleInf;
            double size = 0.0;
            for (uint32_t d = 0; d < dims; ++d) {
                const double p = static_cast<double>(query.p[d]);
                size = std::max(size, std::fabs(p) + std::fabs(c.origin[d]));
                if (centre[d] - s > grid.cell_lo[d]) {
                    const double face = c.boundary(d, centre[d] - s);
                    bound = std::min(bound, p - face);
                    size = std::max(size, std::fabs(face));
                }
                if (centre[d] + s < grid.cell_hi[d]) {
                    const double face = c.boundary(d, centre[d] + s + 1);
                    bound = std::min(bound, face - p);
                    size = std::max(size, std::fabs(face));
                }
            }
            if (bound == kDoubleInf) break; // the whole extent is scanned
            bound = (bound - 0x1p-40 * size) * (1.0 - 0x1p-16);
            if (bound < 0x1p-60) continue;
            const double bound2 = bound * bound;
            if (bound2 > static_cast<double>(max_d2)) break;
            if (list.size == list.limit && static_cast<double>(list.out[list.limit - 1].distance2) < bound2) break;
        }
    }
    uint32_t count = list.size;
    if (list.size == list.limit && list.limit < k) count = count_within(c, query, max_d2, k);
    return finish(count, capacity);
}

// ---------------------------------------------------------------------------
// Batches.

BatchResult query_points(const BoxQueryGrid& grid, const PointQuery* queries, uint32_t query_count, uint64_t* offsets,
                         uint32_t* out, uint64_t capacity, const ThreadBackend& backend) {
    return run_batch(grid, queries, query_count, offsets, out, capacity, backend,
                     [&](const PointQuery& q, uint32_t* o, uint32_t cap) { return query_point(grid, q, o, cap); });
}

BatchResult query_boxes(const BoxQueryGrid& grid, const BoxQuery* queries, uint32_t query_count, uint64_t* offsets,
                        uint32_t* out, uint64_t capacity, const ThreadBackend& backend) {
    return run_batch(grid, queries, query_count, offsets, out, capacity, backend,
                     [&](const BoxQuery& q, uint32_t* o, uint32_t cap) { return query_box(grid, q, o, cap); });
}

BatchResult query_radii(const BoxQueryGrid& grid, const RadiusQuery* queries, uint32_t query_count, uint64_t* offsets,
                        uint32_t* out, uint64_t capacity, const ThreadBackend& backend) {
    return run_batch(grid, queries, query_count, offsets, out, capacity, backend,
                     [&](const RadiusQuery& q, uint32_t* o, uint32_t cap) { return query_radius(grid, q, o, cap); });
}

BatchResult query_rays(const BoxQueryGrid& grid, const RayQuery* queries, uint32_t query_count, uint64_t* offsets,
                       RayHit* out, uint64_t capacity, const ThreadBackend& backend) {
    return run_batch(grid, queries, query_count, offsets, out, capacity, backend,
                     [&](const RayQuery& q, RayHit* o, uint32_t cap) { return query_ray(grid, q, o, cap); });
}

BatchResult query_rays_first(const BoxQueryGrid& grid, const RayQuery* queries, uint32_t query_count, RayHit* out,
                             const ThreadBackend& backend) {
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(BatchResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, queries != nullptr || query_count == 0, "query_rays_first: null queries");
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, out != nullptr || query_count == 0, "query_rays_first: null output");
    // Validate first so that nothing is written for an invalid batch.
    BatchResult result;
    const Cells c(grid);
    uint32_t bad = 0;
    for (uint32_t q = 0; q < query_count; ++q) {
        if (valid_ray(queries[q].ray, c.dims)) continue;
        if (bad++ == 0) result.status.index = q;
    }
    if (bad != 0) {
        result.status.code = StatusCode::invalid_query;
        result.status.count = bad;
        result.status.message = "a ray of the batch is invalid (NaN/infinite or negative max_t)";
        return result;
    }
    parallel_chunks(backend, query_count, kBatchGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t q = begin; q < end; ++q) {
            const QueryResult r = query_ray_first(grid, queries[q], out + q);
            if (r.count == 0) out[q] = RayHit{kNoObject, 0.0f};
        }
    });
    for (uint32_t q = 0; q < query_count; ++q)
        result.total += out[q].object != kNoObject ? 1u : 0u;
    result.written = query_count;
    return result;
}

BatchResult query_nearest_batch(const BoxQueryGrid& grid, const NearestQuery* queries, uint32_t query_count, uint32_t k,
                                uint32_t* counts, NearestHit* out, uint64_t capacity, const ThreadBackend& backend) {
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, usable(grid), kUnusableGrid);
    HASHGRID_REQUIRE_FRAME(BatchResult, grid);
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, queries != nullptr || query_count == 0, "query_nearest_batch: null queries");
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, counts != nullptr || query_count == 0, "query_nearest_batch: null counts");
    BatchResult result;
    const Cells c(grid);
    uint32_t bad = 0;
    for (uint32_t q = 0; q < query_count; ++q) {
        const NearestQuery& n = queries[q];
        if (k != 0 && finite3(n.p, c.dims) && !std::isnan(n.max_distance) && n.max_distance >= 0.0f) continue;
        if (bad++ == 0) result.status.index = q;
    }
    if (bad != 0) {
        result.status.code = StatusCode::invalid_query;
        result.status.count = bad;
        result.status.message = "a nearest query of the batch is invalid (k == 0, NaN, negative distance)";
        return result;
    }
    const uint64_t needed = uint64_t{query_count} * k;
    if (needed > capacity) {
        result.status.code = StatusCode::output_too_small;
        result.status.needed = needed;
        result.status.message = "nearest batch needs query_count * k results";
        return result;
    }
    HASHGRID_REQUIRE_ARGUMENT(BatchResult, out != nullptr || needed == 0, "query_nearest_batch: null output");
    parallel_chunks(backend, query_count, kBatchGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t q = begin; q < end; ++q)
            counts[q] = query_nearest(grid, queries[q], k, out + static_cast<size_t>(uint64_t{q} * k), k).count;
    });
    for (uint32_t q = 0; q < query_count; ++q)
        result.total += counts[q];
    result.written = result.total;
    return result;
}

} // namespace hashgrid

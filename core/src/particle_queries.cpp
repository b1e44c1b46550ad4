// Queries over a built particle grid (see particle_queries.h for contracts).
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
// Clamp-mode bounded worlds put particles outside the box into border cells;
// coordinate-wise clamping is monotone and 1-Lipschitz, so clamping a query's
// cell range (rather than intersecting it) keeps every argument above valid,
// and border cells' boxes reach to infinity on their outer side.
#include "hashgrid/particle_queries.h"

#include "lattice/wrapped_cells.h"

#include "hashgrid/assert.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/config.h"

#include <cmath>
#include <cstdint>

namespace hashgrid {

using namespace detail;

namespace {

constexpr uint32_t kNoCell = 0xffffffffu;
/// Batched queries: at most this many chunks (per-chunk sums live on the stack).
constexpr uint32_t kMaxBatchChunks = 1024;
/// Batched queries: at least this many queries per chunk.
constexpr uint32_t kMinBatchGrain = 16;
/// Cell coordinates far outside any key range, for saturating conversions.
constexpr double kFarCell = 0x1p40;

/// The grid's arrays and key parameters, read once per query.
struct View {
    uint32_t dims = 3;
    bool bounded = false;
    bool clamp = false;
    int64_t lo[3] = {0, 0, 0}; ///< Valid cell coordinates per axis (inclusive).
    int64_t hi[3] = {0, 0, 0};
    uint32_t n[3] = {1, 1, 1}; ///< Bounded: cells per axis.
    float origin_f[3] = {0.0f, 0.0f, 0.0f};
    double origin[3] = {0.0, 0.0, 0.0};
    double scale = 1.0; ///< key_scale(cell_size)
    double edge = 1.0;  ///< Guarded cell edge, cell_size * kCellGuard.
    const float* p[3] = {nullptr, nullptr, nullptr};
    const uint32_t* order = nullptr;
    const uint32_t* start = nullptr;
    uint32_t cell_count = 0;
    uint32_t count = 0;
    const uint64_t* key = nullptr;
    const uint64_t* slot_key = nullptr;
    const uint32_t* slot_cell = nullptr;
    uint32_t slot_mask = 0;
    uint32_t slot_shift = 64;
    float interaction_distance = 1.0f;
    /// Unbounded frame with cells beyond the wrap range: queries use the
    /// wrap-aware paths (cell coordinates are then only known modulo the period).
    bool wrapped = false;
};

/// False when the grid has no successful rebuild.
bool make_view(const Grid& g, View& v) {
    const CellTableView t = g.cells();
    if (t.start == nullptr) return false;
    const GridConfig& c = g.config();
    v.dims = c.dimensions;
    v.bounded = c.world == World::bounded;
    v.clamp = v.bounded && c.out_of_bounds == OutOfBounds::clamp;
    for (uint32_t d = 0; d < 3; ++d) {
        const bool used = d < v.dims;
        v.n[d] = v.bounded && used ? c.cell_counts[d] : 1u;
        v.lo[d] = !used || v.bounded ? 0 : wrap_min(v.dims);
        v.hi[d] = !used ? 0 : (v.bounded ? int64_t{c.cell_counts[d]} - 1 : wrap_max(v.dims));
        v.origin_f[d] = c.origin[d];
        v.origin[d] = c.origin[d];
    }
    v.scale = key_scale(c.cell_size);
    v.edge = static_cast<double>(c.cell_size) * kCellGuard;
    v.p[0] = g.sorted_x();
    v.p[1] = g.sorted_y();
    v.p[2] = v.dims == 3 ? g.sorted_z() : nullptr;
    v.order = g.sorted_to_original();
    v.start = t.start;
    v.cell_count = t.cell_count;
    v.count = g.particle_count();
    v.key = t.key;
    v.slot_key = t.slot_key;
    v.slot_cell = t.slot_cell;
    if (t.slot_count != 0) {
        v.slot_mask = t.slot_count - 1;
        v.slot_shift = 64;
        for (uint32_t s = t.slot_count; s > 1; s >>= 1)
            --v.slot_shift;
    }
    v.interaction_distance = c.interaction_distance;
    v.wrapped = t.wrapped;
    return true;
}

Status make_status(StatusCode code, const char* message) {
    Status s;
    s.code = code;
    s.message = message;
    return s;
}

ParticleQueryResult not_built_result() {
    ParticleQueryResult r;
    r.status = make_status(StatusCode::not_built, "particle query before a successful Grid::rebuild");
    return r;
}

ParticleQueryResult argument_result(const char* message) {
    ParticleQueryResult r;
    r.status = make_status(StatusCode::invalid_argument, message);
    return r;
}

// Programmer errors: asserted (debug and test builds stop there first), then
// reported as invalid_argument in every build.
#define HASHGRID_REQUIRE_ARGUMENT(cond, message)                                                                       \
    do {                                                                                                               \
        HASHGRID_ASSERT(cond, message);                                                                                \
        if (!(cond)) return argument_result(message);                                                                  \
    } while (0)

ParticleQueryResult invalid_result(const char* message) {
    ParticleQueryResult r;
    r.status = make_status(StatusCode::invalid_query, message);
    return r;
}

/// ok, or output_too_small with needed = total.
ParticleQueryResult finish(uint64_t total, uint64_t capacity) {
    ParticleQueryResult r;
    r.total = total;
    r.written = total < capacity ? total : capacity;
    if (total > capacity) {
        r.status = make_status(StatusCode::output_too_small, "query output buffer too small");
        r.status.needed = total;
    }
    return r;
}

bool finite_point(const View& v, const float* c) {
    for (uint32_t d = 0; d < v.dims; ++d)
        if (!std::isfinite(c[d])) return false;
    return true;
}

/// floor(t) saturated to +-2^40 (t may be infinite).
int64_t floor_cell(double t) {
    if (!(t > -kFarCell)) return -static_cast<int64_t>(kFarCell);
    if (t > kFarCell) return static_cast<int64_t>(kFarCell);
    return static_cast<int64_t>(std::floor(t));
}

int64_t clamp_i64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : (x > hi ? hi : x); }

/// Restricts an inclusive cell range to the grid's cells: clamped in clamp
/// mode (border cells hold the clamped particles), intersected otherwise.
/// False when nothing is left.
bool clip_range(const View& v, int64_t lo[3], int64_t hi[3]) {
    for (uint32_t d = 0; d < 3; ++d) {
        if (d >= v.dims) {
            lo[d] = hi[d] = 0;
            continue;
        }
        if (v.clamp) {
            lo[d] = clamp_i64(lo[d], v.lo[d], v.hi[d]);
            hi[d] = clamp_i64(hi[d], v.lo[d], v.hi[d]);
        } else {
            lo[d] = lo[d] > v.lo[d] ? lo[d] : v.lo[d];
            hi[d] = hi[d] < v.hi[d] ? hi[d] : v.hi[d];
            if (lo[d] > hi[d]) return false;
        }
    }
    return true;
}

uint64_t pack(const View& v, int64_t x, int64_t y, int64_t z) {
    return v.dims == 3 ? pack_key3(static_cast<int32_t>(x), static_cast<int32_t>(y), static_cast<int32_t>(z))
                       : pack_key2(static_cast<int32_t>(x), static_cast<int32_t>(y));
}

void unpack(const View& v, uint64_t key, int64_t c[3]) {
    int32_t x = 0, y = 0, z = 0;
    if (v.dims == 3)
        unpack_key3(key, x, y, z);
    else
        unpack_key2(key, x, y);
    c[0] = x;
    c[1] = y;
    c[2] = z;
}

/// Cell index of in-range cell coordinates, or kNoCell (unbounded: not occupied).
uint32_t find_cell(const View& v, int64_t x, int64_t y, int64_t z) {
    if (v.bounded) return static_cast<uint32_t>(x + int64_t{v.n[0]} * (y + int64_t{v.n[1]} * z));
    const uint64_t key = pack(v, x, y, z);
    uint32_t s = static_cast<uint32_t>(hash_key(key) >> v.slot_shift);
    for (;;) {
        const uint64_t k = v.slot_key[s];
        if (k == key) return v.slot_cell[s];
        if (k == kEmptyKey) return kNoCell;
        s = (s + 1) & v.slot_mask;
    }
}

/// First cell (unbounded, sorted keys) with key >= key.
uint32_t lower_bound_key(const View& v, uint64_t key) {
    uint32_t lo = 0, hi = v.cell_count;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (v.key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint32_t log2_ceil(uint32_t x) {
    uint32_t b = 0;
    while (b < 32 && (uint64_t{1} << b) < x)
        ++b;
    return b;
}

/// Upper bound on the occupied cells: the distinct cells (unbounded) or the
/// particle count (bounded worlds keep no list of their occupied cells).
uint32_t occupied_bound(const View& v) {
    if (!v.bounded) return v.cell_count;
    return v.count < v.cell_count ? v.count : v.cell_count;
}

/// Calls cell_fn(cell coordinates, cell index) for every non-empty cell in
/// ascending cell index (= sorted) order. Unbounded: the distinct cells.
/// Bounded: jumps from particle to particle through the cell starts (a binary
/// search each), so the cost is O(occupied cells * log(cells)) however large
/// and empty the world's box is.
template <typename CellFn>
void for_each_occupied(const View& v, CellFn&& cell_fn) {
    if (!v.bounded) {
        for (uint32_t c = 0; c < v.cell_count; ++c) {
            int64_t k[3];
            unpack(v, v.key[c], k);
            cell_fn(k, c);
        }
        return;
    }
    uint32_t at = 0; // sorted position of the next unvisited particle
    while (at < v.count) {
        // The cell holding position `at`: the last c with start[c] <= at.
        uint32_t lo = 0, hi = v.cell_count; // start[lo] <= at < start[hi + 1] holds for the answer
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo + 1) / 2;
            if (v.start[mid] <= at)
                lo = mid;
            else
                hi = mid - 1;
        }
        const uint32_t c = lo;
        const int64_t k[3] = {c % v.n[0], (c / v.n[0]) % v.n[1], c / v.n[0] / v.n[1]};
        cell_fn(k, c);
        at = v.start[c + 1];
    }
}

/// Unbounded worlds: the wrapped cell coordinates an axis of a query covers,
/// as one or two ascending inclusive intervals (two when the covered cells
/// wrap around the seam; lattice/wrapped_cells.h).
struct AxisSpan {
    int64_t lo[2];
    int64_t hi[2];
    uint32_t count;

    [[nodiscard]] bool contains(int64_t c) const {
        return (c >= lo[0] && c <= hi[0]) || (count == 2 && c >= lo[1] && c <= hi[1]);
    }
    [[nodiscard]] double cells() const {
        double n = static_cast<double>(hi[0] - lo[0] + 1);
        if (count == 2) n += static_cast<double>(hi[1] - lo[1] + 1);
        return n;
    }
};

/// An axis a 2D grid does not use: coordinate 0 only.
constexpr AxisSpan kUnusedAxis{{0, 0}, {0, -1}, 1};

/// The span of `length` consecutive cells starting at wrapped coordinate
/// `first` (the whole axis when length reaches the period).
AxisSpan wrapped_span(const View& v, int64_t first, double length) {
    const int64_t period = wrap_period(v.dims);
    const int64_t lo = wrap_min(v.dims), hi = wrap_max(v.dims);
    if (!(length < static_cast<double>(period))) return AxisSpan{{lo, 0}, {hi, -1}, 1};
    const int64_t last = first + static_cast<int64_t>(length) - 1;
    if (last <= hi) return AxisSpan{{first, 0}, {last, -1}, 1};
    return AxisSpan{{lo, first}, {last - period, hi}, 2}; // ascending: the wrapped part first
}

/// Unbounded: calls range(begin, end) for every non-empty cell whose wrapped
/// coordinates lie in the spans, in sorted (key) order: rows of the spans,
/// each by hashing its cells when short or a binary search when long, or one
/// walk over the distinct cells when that is cheaper.
template <typename Range>
void visit_spans(const View& v, const AxisSpan span[3], Range&& range) {
    if (v.cell_count == 0) return;
    const double rows = span[1].cells() * span[2].cells();
    const uint32_t search = 2 + log2_ceil(v.cell_count);
    const double row_length = span[0].cells();
    const double per_row = row_length < search ? row_length : search;
    if (rows * per_row > static_cast<double>(v.cell_count) + 16.0) {
        for (uint32_t c = 0; c < v.cell_count; ++c) {
            int64_t k[3];
            unpack(v, v.key[c], k);
            if (span[0].contains(k[0]) && span[1].contains(k[1]) && span[2].contains(k[2]))
                range(v.start[c], v.start[c + 1]);
        }
        return;
    }
    for (uint32_t zi = 0; zi < span[2].count; ++zi)
        for (int64_t z = span[2].lo[zi]; z <= span[2].hi[zi]; ++z)
            for (uint32_t yi = 0; yi < span[1].count; ++yi)
                for (int64_t y = span[1].lo[yi]; y <= span[1].hi[yi]; ++y)
                    for (uint32_t xi = 0; xi < span[0].count; ++xi) {
                        const int64_t x0 = span[0].lo[xi], x1 = span[0].hi[xi];
                        if (x1 - x0 + 1 <= search) {
                            for (int64_t x = x0; x <= x1; ++x) {
                                const uint32_t c = find_cell(v, x, y, z);
                                if (c != kNoCell) range(v.start[c], v.start[c + 1]);
                            }
                            continue;
                        }
                        // A row's cells are consecutive in key order.
                        const uint64_t last = pack(v, x1, y, z);
                        const uint32_t first = lower_bound_key(v, pack(v, x0, y, z));
                        uint32_t end = first;
                        while (end < v.cell_count && v.key[end] <= last)
                            ++end;
                        if (end != first) range(v.start[first], v.start[end]);
                    }
}

/// Calls range(begin, end) with the sorted-position ranges of every non-empty
/// cell in the inclusive (already clipped) cell box, in sorted order. Picks
/// the cheaper of row lookups (bounded: two start reads per row; unbounded: a
/// hash per cell for short rows, a binary search per long row) and one walk
/// over the occupied cells, so the cost is O(min(rows of the box, occupied
/// cells * log(cells))) whatever the box's size.
template <typename Range>
void visit_box(const View& v, const int64_t lo[3], const int64_t hi[3], Range&& range) {
    const int64_t row_length = hi[0] - lo[0] + 1;
    if (v.bounded) {
        const double box_rows = static_cast<double>(hi[1] - lo[1] + 1) * static_cast<double>(hi[2] - lo[2] + 1);
        if (box_rows > 2.0 * occupied_bound(v) * (2 + log2_ceil(v.cell_count)) + 64.0) {
            for_each_occupied(v, [&](const int64_t k[3], uint32_t c) {
                if (k[0] >= lo[0] && k[0] <= hi[0] && k[1] >= lo[1] && k[1] <= hi[1] && k[2] >= lo[2] && k[2] <= hi[2])
                    range(v.start[c], v.start[c + 1]);
            });
            return;
        }
        for (int64_t z = lo[2]; z <= hi[2]; ++z)
            for (int64_t y = lo[1]; y <= hi[1]; ++y) {
                const auto c0 = static_cast<uint32_t>(lo[0] + int64_t{v.n[0]} * (y + int64_t{v.n[1]} * z));
                const uint32_t b = v.start[c0];
                const uint32_t e = v.start[c0 + static_cast<uint32_t>(row_length)];
                if (b != e) range(b, e);
            }
        return;
    }
    AxisSpan span[3];
    for (uint32_t d = 0; d < 3; ++d)
        span[d] = AxisSpan{{lo[d], 0}, {hi[d], -1}, 1};
    visit_spans(v, span, range);
}

/// Squared float distance as in the grid's pair test: (dx*dx + dy*dy) + dz*dz.
inline float distance2(const View& v, uint32_t k, const float* c) {
    const float dx = v.p[0][k] - c[0];
    const float dy = v.p[1][k] - c[1];
    float d2 = dx * dx + dy * dy;
    if (v.dims == 3) {
        const float dz = v.p[2][k] - c[2];
        d2 = d2 + dz * dz;
    }
    return d2;
}

/// Writes original indices up to the capacity and counts all of them.
struct IndexSink {
    const uint32_t* order;
    uint32_t* out;
    uint64_t capacity;
    uint64_t total = 0;

    void operator()(uint32_t sorted_position) {
        if (total < capacity) out[total] = order[sorted_position];
        ++total;
    }
};

/// Particles with d2 < fl(radius * radius), in sorted order.
template <typename Sink>
void radius_visit(const View& v, const float* c, float radius, Sink& sink) {
    const double tr = static_cast<double>(radius) * v.scale;
    const float r2 = radius * radius;
    auto test = [&](uint32_t b, uint32_t e) {
        for (uint32_t k = b; k < e; ++k)
            if (distance2(v, k, c) < r2) sink(k);
    };
    if (v.wrapped) {
        // Cells are known modulo the period: the centre's cell +- the reach.
        // A particle that passes the float test is within r * (1 + 2^-22) of
        // the centre; each cell is the floor of a value within 2^-22 of the
        // exact one, hence two more cells.
        const double reach = std::ceil(tr * (1.0 + 0x1p-20)) + 2.0;
        const auto back = static_cast<int64_t>(reach < 0x1p40 ? reach : 0x1p40);
        AxisSpan span[3] = {kUnusedAxis, kUnusedAxis, kUnusedAxis};
        for (uint32_t d = 0; d < v.dims; ++d) {
            bool unused = false;
            const int64_t centre = unbounded_cell(c[d], v.origin_f[d], v.scale, v.dims, unused);
            span[d] = wrapped_span(v, wrap_cell(centre - back, v.dims), 2.0 * reach + 1.0);
        }
        visit_spans(v, span, test);
        return;
    }
    int64_t lo[3], hi[3];
    for (uint32_t d = 0; d < v.dims; ++d) {
        const double tc = scaled_coordinate(c[d], v.origin_f[d], v.scale);
        const double margin = (std::fabs(tc) + tr) * 0x1p-30 + 0x1p-30;
        lo[d] = floor_cell(tc - tr - margin);
        hi[d] = floor_cell(tc + tr + margin);
    }
    if (!clip_range(v, lo, hi)) return;
    visit_box(v, lo, hi, test);
}

uint64_t radius_collect(const View& v, const float* c, float radius, uint32_t* out, uint64_t capacity) {
    IndexSink sink{v.order, out, capacity};
    radius_visit(v, c, radius, sink);
    return sink.total;
}

bool valid_box(const View& v, const ParticleQueryBox& b) {
    for (uint32_t d = 0; d < v.dims; ++d)
        if (std::isnan(b.min[d]) || std::isnan(b.max[d]) || b.min[d] > b.max[d]) return false;
    return true;
}

uint64_t box_collect(const View& v, const ParticleQueryBox& box, uint32_t* out, uint64_t capacity) {
    IndexSink sink{v.order, out, capacity};
    auto test = [&](uint32_t b, uint32_t e) {
        for (uint32_t k = b; k < e; ++k) {
            bool inside = true;
            for (uint32_t d = 0; d < v.dims; ++d) {
                const float p = v.p[d][k];
                inside = inside && p >= box.min[d] && p <= box.max[d];
            }
            if (inside) sink(k);
        }
    };
    if (v.wrapped) {
        // Far cells come from far_cell(), within a cell of the fast formula:
        // one more cell on each side. Infinite bounds cover the whole axis.
        const int64_t period = wrap_period(v.dims);
        AxisSpan span[3] = {kUnusedAxis, kUnusedAxis, kUnusedAxis};
        for (uint32_t d = 0; d < v.dims; ++d) {
            const double length = (static_cast<double>(box.max[d]) - static_cast<double>(box.min[d])) * v.scale + 4.0;
            if (!std::isfinite(box.min[d]) || !std::isfinite(box.max[d]) || !(length < 0x1p40)) {
                span[d] = wrapped_span(v, 0, INFINITY);
                continue;
            }
            bool unused = false;
            const int64_t first = unbounded_cell(box.min[d], v.origin_f[d], v.scale, v.dims, unused) - 1;
            const int64_t last = unbounded_cell(box.max[d], v.origin_f[d], v.scale, v.dims, unused) + 1;
            const int64_t cells = ((last - first) % period + period) % period + 1;
            span[d] = wrapped_span(v, wrap_cell(first, v.dims),
                                   length < static_cast<double>(period) ? static_cast<double>(cells) : INFINITY);
        }
        visit_spans(v, span, test);
        return sink.total;
    }
    int64_t lo[3], hi[3];
    for (uint32_t d = 0; d < v.dims; ++d) {
        // The grid's own key function: exact by monotonicity (no margin).
        lo[d] = floor_cell(scaled_coordinate(box.min[d], v.origin_f[d], v.scale));
        hi[d] = floor_cell(scaled_coordinate(box.max[d], v.origin_f[d], v.scale));
    }
    if (!clip_range(v, lo, hi)) return 0;
    visit_box(v, lo, hi, test);
    return sink.total;
}

// ---------------------------------------------------------------------------
// Cell boxes (frustum culling, nearest-neighbour pruning).

/// World-space extent of cell coordinate i on axis d, enlarged by a margin
/// that covers the rounding of the key computation. Clamp-mode border cells
/// reach to infinity on their outer side.
void cell_extent(const View& v, uint32_t d, int64_t i, double& lo, double& hi) {
    const double a = v.origin[d] + static_cast<double>(i) * v.edge;
    const double b = a + v.edge;
    const double margin = (std::fabs(v.origin[d]) + std::fabs(a) + v.edge) * 0x1p-40 + v.edge * 0x1p-20;
    lo = a - margin;
    hi = b + margin;
    if (v.clamp) {
        if (i <= v.lo[d]) lo = -INFINITY;
        if (i >= v.hi[d]) hi = INFINITY;
    }
}

/// Largest value of a plane over a cell box (its "positive vertex").
double plane_max(const View& v, const float* plane, const double lo[3], const double hi[3]) {
    double value = plane[3];
    for (uint32_t d = 0; d < v.dims; ++d) {
        const double n = plane[d];
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
double plane_slack(const View& v, const float* plane, const double magnitude[3]) {
    double s = std::fabs(static_cast<double>(plane[3]));
    for (uint32_t d = 0; d < v.dims; ++d)
        s += std::fabs(static_cast<double>(plane[d])) * magnitude[d];
    if (!(s <= 0x1p127)) return INFINITY;
    return s * 0x1p-18 + 1e-30;
}

/// The float inside test of particle k (header's operation order).
bool frustum_contains(const View& v, const ParticleFrustum& f, uint32_t k) {
    const float x = v.p[0][k], y = v.p[1][k];
    const float z = v.dims == 3 ? v.p[2][k] : 0.0f;
    for (const auto& pl : f.plane) {
        float value = pl[0] * x + pl[1] * y;
        if (v.dims == 3) value = value + pl[2] * z;
        value = value + pl[3];
        if (!(value >= 0.0f)) return false;
    }
    return true;
}

bool valid_frustum(const ParticleFrustum& f) {
    for (const auto& pl : f.plane)
        for (float value : pl)
            if (!std::isfinite(value)) return false;
    return true;
}

template <typename Sink>
void test_cell_frustum(const View& v, const ParticleFrustum& f, uint32_t b, uint32_t e, Sink& sink) {
    for (uint32_t k = b; k < e; ++k)
        if (frustum_contains(v, f, k)) sink(k);
}

/// Every occupied cell, culled by its box against each plane.
template <typename Sink>
void frustum_visit_occupied(const View& v, const ParticleFrustum& f, Sink& sink) {
    for_each_occupied(v, [&](const int64_t k[3], uint32_t c) {
        double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0}, magnitude[3] = {0.0, 0.0, 0.0};
        for (uint32_t d = 0; d < v.dims; ++d) {
            cell_extent(v, d, k[d], lo[d], hi[d]);
            magnitude[d] = std::fabs(lo[d]) > std::fabs(hi[d]) ? std::fabs(lo[d]) : std::fabs(hi[d]);
        }
        bool culled = false;
        for (const auto& pl : f.plane)
            culled = culled || plane_max(v, pl, lo, hi) < -plane_slack(v, pl, magnitude);
        if (!culled) test_cell_frustum(v, f, v.start[c], v.start[c + 1], sink);
    });
}

/// Bounded: the world's box row by row; each row's cells are clipped to every
/// plane by binary search (a plane's value at a cell's positive vertex is
/// monotone along the row), then the remaining run is tested.
template <typename Sink>
void frustum_visit_bounded(const View& v, const ParticleFrustum& f, Sink& sink) {
    // One slack per plane for the whole world (monotone culling along rows).
    // Clamped particles outside the box lie on the far side of their border
    // cell, where every plane value is monotone too: the box's magnitude suffices.
    double magnitude[3] = {0.0, 0.0, 0.0};
    for (uint32_t d = 0; d < v.dims; ++d) {
        const double a = std::fabs(v.origin[d]);
        const double b = std::fabs(v.origin[d] + static_cast<double>(v.n[d]) * v.edge);
        magnitude[d] = (a > b ? a : b) + v.edge;
    }
    double slack[6];
    for (uint32_t i = 0; i < 6; ++i)
        slack[i] = plane_slack(v, f.plane[i], magnitude);
    const int64_t nx = v.n[0];
    for (int64_t z = 0; z <= v.hi[2]; ++z)
        for (int64_t y = 0; y <= v.hi[1]; ++y) {
            double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0};
            cell_extent(v, 1, y, lo[1], hi[1]);
            if (v.dims == 3) cell_extent(v, 2, z, lo[2], hi[2]);
            auto keeps = [&](uint32_t plane, int64_t x) {
                double l[3] = {0.0, lo[1], lo[2]}, h[3] = {0.0, hi[1], hi[2]};
                cell_extent(v, 0, x, l[0], h[0]);
                return !(plane_max(v, f.plane[plane], l, h) < -slack[plane]);
            };
            int64_t first = 0, last = nx - 1;
            for (uint32_t i = 0; i < 6 && first <= last; ++i) {
                const float n = f.plane[i][0];
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
            const auto c0 = static_cast<uint32_t>(first + nx * (y + int64_t{v.n[1]} * z));
            const auto c1 = static_cast<uint32_t>(last + 1 + nx * (y + int64_t{v.n[1]} * z));
            test_cell_frustum(v, f, v.start[c0], v.start[c1], sink);
        }
}

// ---------------------------------------------------------------------------
// k nearest neighbours: a max-heap of the best candidates so far, keyed by
// (distance_squared, index), living in the caller's output buffer.

inline bool closer(const ParticleDistance& a, const ParticleDistance& b) {
    return a.distance_squared < b.distance_squared || (a.distance_squared == b.distance_squared && a.index < b.index);
}

void sift_down(ParticleDistance* heap, uint32_t size, uint32_t i) {
    for (;;) {
        const uint32_t l = 2 * i + 1;
        if (l >= size) return;
        uint32_t m = l;
        if (l + 1 < size && closer(heap[l], heap[l + 1])) m = l + 1;
        if (!closer(heap[i], heap[m])) return;
        const ParticleDistance t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

void sift_up(ParticleDistance* heap, uint32_t i) {
    while (i > 0) {
        const uint32_t parent = (i - 1) / 2;
        if (!closer(heap[parent], heap[i])) return;
        const ParticleDistance t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

struct NearestSearch {
    const View& v;
    const float* c;
    ParticleDistance* heap;
    uint32_t capacity; ///< Heap size wanted (the m nearest).
    bool limited;      ///< max_distance is finite.
    float max_r2;      ///< fl(max_distance^2) when limited.
    uint32_t size = 0;

    /// Prune bound on exact squared distances: a cell whose box is farther
    /// cannot improve the heap (loosened well beyond the float test's error).
    [[nodiscard]] double bound2() const {
        double b = INFINITY;
        if (limited) b = static_cast<double>(max_r2);
        if (size == capacity) {
            const double worst = heap[0].distance_squared;
            b = worst < b ? worst : b;
        }
        return b * (1.0 + 0x1p-16) + 1e-37;
    }

    void offer(uint32_t k) {
        const float d2 = distance2(v, k, c);
        if (limited && !(d2 < max_r2)) return;
        const ParticleDistance cand{v.order[k], d2};
        if (size < capacity) {
            heap[size] = cand;
            sift_up(heap, size++);
        } else if (closer(cand, heap[0])) {
            heap[0] = cand;
            sift_down(heap, size, 0);
        }
    }

    /// Squared exact distance from the centre to a cell's (enlarged) box.
    [[nodiscard]] double cell_distance2(const int64_t cell[3]) const {
        double sum = 0.0;
        for (uint32_t d = 0; d < v.dims; ++d) {
            double lo, hi;
            cell_extent(v, d, cell[d], lo, hi);
            const double p = c[d];
            const double gap = p < lo ? lo - p : (p > hi ? p - hi : 0.0);
            sum += gap * gap;
        }
        return sum;
    }

    void visit_cell(const int64_t cell[3], uint32_t index) {
        const uint32_t b = v.start[index], e = v.start[index + 1];
        if (b == e || cell_distance2(cell) > bound2()) return;
        for (uint32_t k = b; k < e; ++k)
            offer(k);
    }

    /// Ascending (distance, index) order; returns the count.
    ///
    /// Cost: shell s scans only the cells of its faces inside the grid's
    /// cells (clipped), so the shells cost the cells they hold. Once the
    /// next shell would bring the cells looked at above twice the occupied
    /// cells (unbounded: distinct cells; bounded: at most the particle count),
    /// the occupied cells outside the shells already scanned are walked
    /// instead, so a centre far from every particle, or a world that is
    /// mostly empty, costs O(occupied cells * log(cells)) at most.
    uint32_t run() {
        if (capacity == 0 || v.count == 0) return 0;
        if (v.wrapped) {
            // A cell's distance is only known modulo the period: every particle.
            for (uint32_t k = 0; k < v.count; ++k)
                offer(k);
            return sort_heap();
        }
        int64_t centre[3] = {0, 0, 0};
        int64_t reach = 0; // shells beyond this hold no cells
        for (uint32_t d = 0; d < v.dims; ++d) {
            // Clamped into the grid's cells: every particle cell is in range,
            // so the shell bound below holds for the clamped centre too.
            centre[d] = clamp_i64(floor_cell(scaled_coordinate(c[d], v.origin_f[d], v.scale)), v.lo[d], v.hi[d]);
            const int64_t r = centre[d] - v.lo[d] > v.hi[d] - centre[d] ? centre[d] - v.lo[d] : v.hi[d] - centre[d];
            reach = r > reach ? r : reach;
        }
        const double budget = 2.0 * static_cast<double>(occupied_bound(v)) + 64.0;
        double visited = 0.0; // cells looked at so far
        for (int64_t s = 0; s <= reach; ++s) {
            if (s >= 1) {
                // Every particle in shell s is more than (s - 1) cells away.
                const double gap = (static_cast<double>(s - 1) - 0x1p-10) * v.edge * (1.0 - 0x1p-20);
                if (gap > 0.0 && gap * gap > bound2()) break;
            }
            const double shell_cells = clipped_cells(centre, s) - (s > 0 ? clipped_cells(centre, s - 1) : 0.0);
            if (visited + shell_cells > budget) {
                // Shells would look at more cells than are occupied: walk the
                // occupied cells outside the shells already visited instead.
                for_each_occupied(v, [&](const int64_t k[3], uint32_t cell) {
                    int64_t cheb = 0;
                    for (uint32_t d = 0; d < v.dims; ++d) {
                        const int64_t a = k[d] > centre[d] ? k[d] - centre[d] : centre[d] - k[d];
                        cheb = a > cheb ? a : cheb;
                    }
                    if (cheb >= s) visit_cell(k, cell);
                });
                break;
            }
            visited += shell_cells;
            visit_shell(centre, s);
        }
        return sort_heap();
    }

    /// Heap sort: pops the largest to the back; returns the count.
    uint32_t sort_heap() {
        for (uint32_t n = size; n > 1; --n) {
            const ParticleDistance t = heap[0];
            heap[0] = heap[n - 1];
            heap[n - 1] = t;
            sift_down(heap, n - 1, 0);
        }
        return size;
    }

    /// Cells of the cube centre +- s (per used axis) inside the grid's cells.
    [[nodiscard]] double clipped_cells(const int64_t centre[3], int64_t s) const {
        double cells = 1.0;
        for (uint32_t d = 0; d < v.dims; ++d) {
            const int64_t a = centre[d] - s > v.lo[d] ? centre[d] - s : v.lo[d];
            const int64_t b = centre[d] + s < v.hi[d] ? centre[d] + s : v.hi[d];
            cells *= static_cast<double>(b - a + 1);
        }
        return cells;
    }

    /// The cells at Chebyshev distance exactly s from the centre, inside the
    /// grid's cells: the cube's faces as disjoint boxes (z faces, then the y
    /// faces without them, then the x faces), each cell once.
    void visit_shell(const int64_t centre[3], int64_t s) {
        int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        for (uint32_t d = 0; d < v.dims; ++d) {
            lo[d] = centre[d] - s > v.lo[d] ? centre[d] - s : v.lo[d];
            hi[d] = centre[d] + s < v.hi[d] ? centre[d] + s : v.hi[d];
        }
        if (s == 0) {
            visit_cells(lo, hi);
            return;
        }
        for (uint32_t axis = v.dims; axis-- > 0;) {
            const int64_t low_face = centre[axis] - s;
            const int64_t high_face = centre[axis] + s;
            if (low_face >= lo[axis] && low_face <= hi[axis]) {
                int64_t part_lo[3] = {lo[0], lo[1], lo[2]}, part_hi[3] = {hi[0], hi[1], hi[2]};
                part_lo[axis] = part_hi[axis] = low_face;
                visit_cells(part_lo, part_hi);
                lo[axis] = low_face + 1;
            }
            if (high_face >= lo[axis] && high_face <= hi[axis]) {
                int64_t part_lo[3] = {lo[0], lo[1], lo[2]}, part_hi[3] = {hi[0], hi[1], hi[2]};
                part_lo[axis] = part_hi[axis] = high_face;
                visit_cells(part_lo, part_hi);
                hi[axis] = high_face - 1;
            }
            if (lo[axis] > hi[axis]) return;
        }
    }

    void visit_cells(const int64_t lo[3], const int64_t hi[3]) {
        for (int64_t z = lo[2]; z <= hi[2]; ++z)
            for (int64_t y = lo[1]; y <= hi[1]; ++y)
                for (int64_t x = lo[0]; x <= hi[0]; ++x)
                    visit(x, y, z);
    }

    void visit(int64_t x, int64_t y, int64_t z) {
        const uint32_t index = find_cell(v, x, y, z);
        if (index == kNoCell) return;
        const int64_t cell[3] = {x, y, z};
        visit_cell(cell, index);
    }
};

bool valid_max_distance(float max_distance) { return !std::isnan(max_distance) && max_distance >= 0.0f; }

/// Number of results of a nearest query: min(k, particles within max_distance).
uint64_t nearest_total(const View& v, const float* c, uint32_t k, float max_distance) {
    uint64_t within = v.count;
    if (max_distance != INFINITY) within = radius_collect(v, c, max_distance, nullptr, 0);
    return within < k ? within : k;
}

uint32_t nearest_run(const View& v, const float* c, float max_distance, ParticleDistance* out, uint32_t m) {
    NearestSearch search{v, c, out, m, max_distance != INFINITY, max_distance * max_distance};
    return search.run();
}

// ---------------------------------------------------------------------------
// Batches: count pass, exclusive scan over chunks, write pass.

uint32_t batch_grain(uint32_t count, uint32_t min_grain) {
    const uint32_t g = static_cast<uint32_t>((uint64_t{count} + kMaxBatchChunks - 1) / kMaxBatchChunks);
    return g > min_grain ? g : min_grain;
}

/// valid(q), count(q) -> results of query q, write(q, out_offset, m) writes
/// the first m results of query q at out_offset.
template <typename Valid, typename Count, typename Write>
ParticleQueryResult run_batch(uint32_t count, uint64_t* offsets, uint64_t offsets_capacity, uint64_t capacity,
                              const ThreadBackend& backend, Valid&& valid, Count&& count_of, Write&& write) {
    if (offsets_capacity < uint64_t{count} + 1) {
        ParticleQueryResult r;
        r.status = make_status(StatusCode::output_too_small, "batched query offsets need count + 1 entries");
        r.status.needed = uint64_t{count} + 1;
        return r;
    }
    HASHGRID_REQUIRE_ARGUMENT(offsets != nullptr, "batched query: offsets is null");
    const uint32_t grain = batch_grain(count, kMinBatchGrain);
    const uint32_t chunks = static_cast<uint32_t>((uint64_t{count} + grain - 1) / grain);
    uint64_t chunk_total[kMaxBatchChunks];
    uint32_t chunk_bad[kMaxBatchChunks];
    uint32_t chunk_bad_count[kMaxBatchChunks];
    parallel_chunks(backend, count, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t sum = 0;
        uint32_t bad = kNoCell, bad_count = 0;
        for (uint32_t q = begin; q < end; ++q) {
            if (!valid(q)) {
                bad = bad == kNoCell ? q : bad;
                ++bad_count;
                continue;
            }
            offsets[q] = count_of(q);
            sum += offsets[q];
        }
        const uint32_t c = begin / grain;
        chunk_total[c] = sum;
        chunk_bad[c] = bad;
        chunk_bad_count[c] = bad_count;
    });
    uint32_t bad_count = 0;
    for (uint32_t c = 0; c < chunks; ++c)
        bad_count += chunk_bad_count[c];
    if (bad_count != 0) {
        ParticleQueryResult r = invalid_result("batched query: a query has NaN/inf or out-of-range parameters");
        for (uint32_t c = 0; c < chunks && r.status.count == 0; ++c)
            if (chunk_bad[c] != kNoCell) r.status.index = chunk_bad[c], r.status.count = bad_count;
        return r;
    }
    uint64_t total = 0;
    for (uint32_t c = 0; c < chunks; ++c) {
        const uint64_t t = chunk_total[c];
        chunk_total[c] = total;
        total += t;
    }
    parallel_chunks(backend, count, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t running = chunk_total[begin / grain];
        for (uint32_t q = begin; q < end; ++q) {
            const uint64_t n = offsets[q];
            offsets[q] = running;
            if (running < capacity && n != 0) write(q, running, n < capacity - running ? n : capacity - running);
            running += n;
        }
    });
    offsets[count] = total;
    return finish(total, capacity);
}

void load_point(const View& v, const ParticleSpans& s, uint32_t q, float* c) {
    c[0] = s.x[q];
    c[1] = s.y[q];
    c[2] = v.dims == 3 ? s.z[q] : 0.0f;
}

bool spans_set(const View& v, const ParticleSpans& s) {
    return s.count == 0 || (s.x != nullptr && s.y != nullptr && (v.dims == 2 || s.z != nullptr));
}

} // namespace

ParticleQueryResult radius_query(const Grid& grid, const float center[3], float radius, uint32_t* out,
                                 uint64_t capacity) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(center != nullptr, "radius_query: center is null");
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "radius_query: out is null");
    if (!finite_point(v, center)) return invalid_result("radius_query: center must be finite");
    if (std::isnan(radius) || radius < 0.0f) return invalid_result("radius_query: radius must be >= 0");
    return finish(radius_collect(v, center, radius, out, capacity), capacity);
}

ParticleQueryResult point_query(const Grid& grid, const float point[3], uint32_t* out, uint64_t capacity) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(point != nullptr, "point_query: point is null");
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "point_query: out is null");
    if (!finite_point(v, point)) return invalid_result("point_query: point must be finite");
    return finish(radius_collect(v, point, v.interaction_distance, out, capacity), capacity);
}

ParticleQueryResult box_query(const Grid& grid, const ParticleQueryBox& box, uint32_t* out, uint64_t capacity) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "box_query: out is null");
    if (!valid_box(v, box)) return invalid_result("box_query: NaN bound or min > max");
    return finish(box_collect(v, box, out, capacity), capacity);
}

ParticleQueryResult frustum_query(const Grid& grid, const ParticleFrustum& frustum, uint32_t* out, uint64_t capacity) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "frustum_query: out is null");
    if (!valid_frustum(frustum)) return invalid_result("frustum_query: plane values must be finite");
    IndexSink sink{v.order, out, capacity};
    // Bounded: rows of the world, or the occupied cells when there are far fewer.
    const double rows = static_cast<double>(v.n[1]) * static_cast<double>(v.n[2]);
    if (v.wrapped) // a cell's extent is only known modulo the period: no culling
        test_cell_frustum(v, frustum, 0, v.count, sink);
    else if (v.bounded && rows <= 2.0 * occupied_bound(v) * (2 + log2_ceil(v.cell_count)) + 64.0)
        frustum_visit_bounded(v, frustum, sink);
    else
        frustum_visit_occupied(v, frustum, sink);
    return finish(sink.total, capacity);
}

ParticleQueryResult nearest_query(const Grid& grid, const float center[3], uint32_t k, float max_distance,
                                  ParticleDistance* out, uint64_t capacity) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(center != nullptr, "nearest_query: center is null");
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "nearest_query: out is null");
    if (!finite_point(v, center)) return invalid_result("nearest_query: center must be finite");
    if (k == 0) return invalid_result("nearest_query: k must be >= 1");
    if (!valid_max_distance(max_distance)) return invalid_result("nearest_query: max_distance must be >= 0");
    // The output buffer is the heap: search for the m nearest that fit.
    const auto m = static_cast<uint32_t>(capacity < k ? capacity : k);
    const uint32_t found = nearest_run(v, center, max_distance, out, m);
    // Fewer than m found means all candidates were found.
    const uint64_t total = found < m || m == k ? found : nearest_total(v, center, k, max_distance);
    return finish(total, capacity);
}

ParticleQueryResult point_set_pairs(const Grid& grid, const ParticleSpans& points, Pair* out, uint64_t capacity,
                                    const ThreadBackend& backend) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(spans_set(v, points), "point_set_pairs: x, y (and z in 3D) must be set");
    HASHGRID_REQUIRE_ARGUMENT(points.radius == nullptr, "point_set_pairs: points must not have radii");
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "point_set_pairs: out is null");
    const uint32_t count = points.count;
    const uint32_t grain = batch_grain(count, 64);
    const uint32_t chunks = static_cast<uint32_t>((uint64_t{count} + grain - 1) / grain);
    uint64_t chunk_total[kMaxBatchChunks];
    uint32_t chunk_bad[kMaxBatchChunks];
    uint32_t chunk_bad_count[kMaxBatchChunks];
    const float r = v.interaction_distance;
    parallel_chunks(backend, count, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t sum = 0;
        uint32_t bad = kNoCell, bad_count = 0;
        for (uint32_t q = begin; q < end; ++q) {
            float c[3];
            load_point(v, points, q, c);
            if (!finite_point(v, c)) {
                bad = bad == kNoCell ? q : bad;
                ++bad_count;
                continue;
            }
            sum += radius_collect(v, c, r, nullptr, 0);
        }
        const uint32_t ch = begin / grain;
        chunk_total[ch] = sum;
        chunk_bad[ch] = bad;
        chunk_bad_count[ch] = bad_count;
    });
    uint32_t bad_count = 0;
    for (uint32_t c = 0; c < chunks; ++c)
        bad_count += chunk_bad_count[c];
    if (bad_count != 0) {
        ParticleQueryResult res = invalid_result("point_set_pairs: a point is NaN or infinite");
        for (uint32_t c = 0; c < chunks && res.status.count == 0; ++c)
            if (chunk_bad[c] != kNoCell) res.status.index = chunk_bad[c], res.status.count = bad_count;
        return res;
    }
    uint64_t total = 0;
    for (uint32_t c = 0; c < chunks; ++c) {
        const uint64_t t = chunk_total[c];
        chunk_total[c] = total;
        total += t;
    }
    parallel_chunks(backend, count, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        struct PairSink {
            const uint32_t* order;
            Pair* out;
            uint64_t capacity;
            uint64_t at;
            uint32_t a;
            void operator()(uint32_t k) {
                if (at < capacity) out[at] = Pair{a, order[k]};
                ++at;
            }
        } sink{v.order, out, capacity, chunk_total[begin / grain], 0};
        for (uint32_t q = begin; q < end && sink.at < capacity; ++q) {
            float c[3];
            load_point(v, points, q, c);
            sink.a = q;
            radius_visit(v, c, r, sink);
        }
    });
    return finish(total, capacity);
}

ParticleQueryResult radius_queries(const Grid& grid, const ParticleSpans& queries, uint64_t* offsets,
                                   uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                   const ThreadBackend& backend) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(spans_set(v, queries), "batched query: x, y (and z in 3D) must be set");
    HASHGRID_REQUIRE_ARGUMENT(queries.count == 0 || queries.radius != nullptr,
                              "radius_queries: queries.radius must be set");
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "radius_queries: out is null");
    return run_batch(
        queries.count, offsets, offsets_capacity, capacity, backend,
        [&](uint32_t q) {
            float c[3];
            load_point(v, queries, q, c);
            const float r = queries.radius[q];
            return finite_point(v, c) && !std::isnan(r) && r >= 0.0f;
        },
        [&](uint32_t q) {
            float c[3];
            load_point(v, queries, q, c);
            return radius_collect(v, c, queries.radius[q], nullptr, 0);
        },
        [&](uint32_t q, uint64_t at, uint64_t m) {
            float c[3];
            load_point(v, queries, q, c);
            radius_collect(v, c, queries.radius[q], out + at, m);
        });
}

ParticleQueryResult box_queries(const Grid& grid, const ParticleQueryBox* boxes, uint32_t count, uint64_t* offsets,
                                uint64_t offsets_capacity, uint32_t* out, uint64_t capacity,
                                const ThreadBackend& backend) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(count == 0 || boxes != nullptr, "box_queries: boxes is null");
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "box_queries: out is null");
    return run_batch(
        count, offsets, offsets_capacity, capacity, backend, [&](uint32_t q) { return valid_box(v, boxes[q]); },
        [&](uint32_t q) { return box_collect(v, boxes[q], nullptr, 0); },
        [&](uint32_t q, uint64_t at, uint64_t m) { box_collect(v, boxes[q], out + at, m); });
}

ParticleQueryResult nearest_queries(const Grid& grid, const ParticleSpans& queries, uint32_t k, float max_distance,
                                    uint64_t* offsets, uint64_t offsets_capacity, ParticleDistance* out,
                                    uint64_t capacity, const ThreadBackend& backend) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(spans_set(v, queries), "batched query: x, y (and z in 3D) must be set");
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "nearest_queries: out is null");
    if (k == 0) return invalid_result("nearest_queries: k must be >= 1");
    if (!valid_max_distance(max_distance)) return invalid_result("nearest_queries: max_distance must be >= 0");
    return run_batch(
        queries.count, offsets, offsets_capacity, capacity, backend,
        [&](uint32_t q) {
            float c[3];
            load_point(v, queries, q, c);
            return finite_point(v, c);
        },
        [&](uint32_t q) {
            float c[3];
            load_point(v, queries, q, c);
            return nearest_total(v, c, k, max_distance);
        },
        [&](uint32_t q, uint64_t at, uint64_t m) {
            float c[3];
            load_point(v, queries, q, c);
            nearest_run(v, c, max_distance, out + at, static_cast<uint32_t>(m));
        });
}

} // namespace hashgrid

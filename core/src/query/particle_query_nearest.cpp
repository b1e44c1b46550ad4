// SPDX-License-Identifier: MIT
// k nearest particles (query_nearest, its visitor form and its batch): a
// max-heap of the best candidates in the caller's buffer, filled from growing
// shells of cells or, when shells would cost more, from a walk over the
// occupied cells (a wrapped frame: from every particle). The visitor form
// runs the same search on a small stack buffer, restricted to the candidates
// after the last hit it visited.
#include "query/particle_query_walk.h"
#include "query/query_visit.h"

#include <cmath>
#include <cstdint>

namespace hashgrid {

using namespace particle_query;

namespace {

// ---------------------------------------------------------------------------
// k nearest neighbours: a max-heap of the best candidates so far, keyed by
// (distance_squared, index), living in the caller's output buffer.

inline bool closer(const NearestHit& a, const NearestHit& b) {
    return a.distance_squared < b.distance_squared || (a.distance_squared == b.distance_squared && a.index < b.index);
}

void sift_down(NearestHit* heap, uint32_t size, uint32_t i) {
    for (;;) {
        const uint32_t l = 2 * i + 1;
        if (l >= size) return;
        uint32_t m = l;
        if (l + 1 < size && closer(heap[l], heap[l + 1])) m = l + 1;
        if (!closer(heap[i], heap[m])) return;
        const NearestHit t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

void sift_up(NearestHit* heap, uint32_t i) {
    while (i > 0) {
        const uint32_t parent = (i - 1) / 2;
        if (!closer(heap[parent], heap[i])) return;
        const NearestHit t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

struct NearestSearch {
    const View& v;
    const float* c;
    NearestHit* heap;
    uint32_t capacity; ///< Heap size wanted (the m nearest).
    bool limited;      ///< max_distance is finite.
    float max_r2;      ///< fl(max_distance^2) when limited.
    /// When set, only candidates after this hit in (distance_squared, index)
    /// order are kept: the search then finds the results that follow it.
    const NearestHit* after = nullptr;
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
        const NearestHit cand{v.order[k], d2};
        if (after != nullptr && !closer(*after, cand)) return;
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
        for (uint32_t d = 0; d < v.lat.dims; ++d) {
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
        for (uint32_t d = 0; d < v.lat.dims; ++d) {
            // Clamped into the grid's cells: every particle cell is in range,
            // so the shell bound below holds for the clamped centre too.
            centre[d] = clamp_i64(floor_cell(v.lat.scaled(d, c[d])), v.lat.lo[d], v.lat.hi[d]);
            const int64_t r =
                centre[d] - v.lat.lo[d] > v.lat.hi[d] - centre[d] ? centre[d] - v.lat.lo[d] : v.lat.hi[d] - centre[d];
            reach = r > reach ? r : reach;
        }
        const double budget = 2.0 * static_cast<double>(occupied_bound(v)) + 64.0;
        double visited = 0.0; // cells looked at so far
        for (int64_t s = 0; s <= reach; ++s) {
            if (s >= 1) {
                // Every particle in shell s is more than (s - 1) cells away.
                const double gap = (static_cast<double>(s - 1) - 0x1p-10) * v.lat.edge * (1.0 - 0x1p-20);
                if (gap > 0.0 && gap * gap > bound2()) break;
            }
            const double shell_cells = clipped_cells(centre, s) - (s > 0 ? clipped_cells(centre, s - 1) : 0.0);
            if (visited + shell_cells > budget) {
                // Shells would look at more than about twice the occupied
                // cells (the budget above): walk the occupied cells outside
                // the shells already visited instead.
                for_each_occupied(v, [&](const int64_t k[3], uint32_t cell) {
                    int64_t cheb = 0;
                    for (uint32_t d = 0; d < v.lat.dims; ++d) {
                        const int64_t a = k[d] > centre[d] ? k[d] - centre[d] : centre[d] - k[d];
                        cheb = a > cheb ? a : cheb;
                    }
                    if (cheb >= s) visit_cell(k, cell);
                    return true;
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
            const NearestHit t = heap[0];
            heap[0] = heap[n - 1];
            heap[n - 1] = t;
            sift_down(heap, n - 1, 0);
        }
        return size;
    }

    /// Cells of the cube centre +- s (per used axis) inside the grid's cells.
    [[nodiscard]] double clipped_cells(const int64_t centre[3], int64_t s) const {
        double cells = 1.0;
        for (uint32_t d = 0; d < v.lat.dims; ++d) {
            const int64_t a = centre[d] - s > v.lat.lo[d] ? centre[d] - s : v.lat.lo[d];
            const int64_t b = centre[d] + s < v.lat.hi[d] ? centre[d] + s : v.lat.hi[d];
            cells *= static_cast<double>(b - a + 1);
        }
        return cells;
    }

    /// The cells at Chebyshev distance exactly s from the centre, inside the
    /// grid's cells: the cube's faces as disjoint boxes (z faces, then the y
    /// faces without them, then the x faces), each cell once.
    void visit_shell(const int64_t centre[3], int64_t s) {
        int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        for (uint32_t d = 0; d < v.lat.dims; ++d) {
            lo[d] = centre[d] - s > v.lat.lo[d] ? centre[d] - s : v.lat.lo[d];
            hi[d] = centre[d] + s < v.lat.hi[d] ? centre[d] + s : v.lat.hi[d];
        }
        if (s == 0) {
            visit_cells(lo, hi);
            return;
        }
        for (uint32_t axis = v.lat.dims; axis-- > 0;) {
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
        const uint32_t index = v.find(x, y, z);
        if (index == kNone) return;
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

/// The m nearest particles (after `after` in (distance_squared, index) order
/// when it is set) within max_distance, ascending, in out[0 .. m); returns
/// how many were found.
uint32_t nearest_run(const View& v, const float* c, float max_distance, NearestHit* out, uint32_t m,
                     const NearestHit* after = nullptr) {
    NearestSearch search{v, c, out, m, max_distance != INFINITY, max_distance * max_distance};
    search.after = after;
    return search.run();
}

bool valid_nearest(const View& v, const QueryNearest& q) {
    return finite_point(v, q.center) && q.k != 0 && valid_max_distance(q.max_distance);
}

uint64_t run_nearest(const View& v, const QueryNearest& q, NearestHit* out, uint64_t capacity) {
    if (!valid_nearest(v, q)) return kInvalidQuery;
    // The output buffer is the heap: search for the m nearest that fit.
    const auto m = static_cast<uint32_t>(capacity < q.k ? capacity : q.k);
    const uint32_t found = nearest_run(v, q.center, q.max_distance, out, m);
    // Fewer than m found means all candidates were found.
    return found < m || m == q.k ? found : nearest_total(v, q.center, q.k, q.max_distance);
}

constexpr const char* kInvalidNearest = "query_nearest: finite centre, k >= 1 and max_distance >= 0";

} // namespace

QueryResult query_nearest(const Grid& grid, const QueryNearest& query, NearestHit* out, uint64_t capacity) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(capacity == 0 || out != nullptr, "query_nearest: null out with capacity > 0");
    const uint64_t total = run_nearest(v, query, out, capacity);
    if (total == kInvalidQuery) return invalid_result(kInvalidNearest);
    return query_finish(total, capacity);
}

QueryResult query_nearest(const Grid& grid, const QueryNearest& query, NearestVisitor visitor) {
    View v;
    if (!make_view(grid, v)) return not_built_result();
    HASHGRID_REQUIRE_ARGUMENT(visitor.visit != nullptr, "query_nearest: null visit function");
    if (!valid_nearest(v, query)) return invalid_result(kInvalidNearest);
    QueryResult r;
    r.total = visit_in_runs<NearestHit>(visitor, query.k, [&](const NearestHit* after, NearestHit* run, uint32_t m) {
        return nearest_run(v, query.center, query.max_distance, run, m, after);
    });
    return r;
}

QueryResult query_nearest_batch(const Grid& grid, const QueryNearest* queries, uint32_t count, uint64_t* offsets,
                                uint64_t offsets_capacity, NearestHit* out, uint64_t capacity,
                                const ThreadBackend& backend) {
    return run_batch_of(grid, TracePhase::query_nearest_batch, queries, count, offsets, offsets_capacity, out, capacity,
                        backend, [](const View& v, const QueryNearest& q, NearestHit* at, uint64_t room) {
                            return run_nearest(v, q, at, room);
                        });
}

} // namespace hashgrid

// SPDX-License-Identifier: MIT
// CSR neighbour lists from a pair array: degree count, exclusive scan, fill
// with per-particle atomic cursors, then each list sorted ascending (entries
// are distinct, so the result does not depend on the fill's timing).
#include "common/trace_scope.h"
#include "particle/grid_impl.h"

#include "hashgrid/assert.h"

#include <atomic>

namespace hashgrid {

using namespace detail;

namespace {
constexpr uint32_t kPairItems = 65536;
}

Status Grid::neighbor_lists(const Pair* pairs, uint64_t pair_count, uint32_t* offsets, uint64_t offsets_capacity,
                            uint32_t* indices, uint64_t indices_capacity, const ThreadBackend& caller_backend) {
    HASHGRID_ASSERT(pairs != nullptr || pair_count == 0, "neighbor_lists: null pairs with nonzero count");
    if (state_ == nullptr || !state_->built)
        return detail::make_status(StatusCode::not_built, "neighbor_lists before a successful rebuild");
    if (pairs == nullptr && pair_count > 0)
        return detail::make_status(StatusCode::invalid_argument,
                                   "neighbor_lists: null pairs with a nonzero pair_count");
    HASHGRID_ASSERT((offsets != nullptr || offsets_capacity == 0) && (indices != nullptr || indices_capacity == 0),
                    "neighbor_lists: null output with a nonzero capacity");
    if ((offsets == nullptr && offsets_capacity > 0) || (indices == nullptr && indices_capacity > 0))
        return detail::make_status(StatusCode::invalid_argument,
                                   "neighbor_lists: null offsets or indices with a nonzero capacity");
    const uint32_t n = state_->count;
    if (offsets == nullptr || offsets_capacity < uint64_t{n} + 1)
        return detail::capacity_status(StatusCode::output_too_small, "offsets needs particle_count() + 1 entries",
                                       uint64_t{n} + 1);
    const uint64_t total = 2 * pair_count;
    if (total > 0xffffffffu)
        return detail::capacity_status(StatusCode::output_too_small, "neighbour lists exceed 32-bit offsets", total);
    if (pair_count > 0xffffffffu) return detail::capacity_status(StatusCode::output_too_small, "too many pairs", total);
    const auto pairs_n = static_cast<uint32_t>(pair_count);
    PhaseTrace trace(trace_, caller_backend); // the loops run through trace.backend()
    const ThreadBackend& b = trace.backend();
    trace.begin(TracePhase::neighbor_lists);

    uint32_t* degree = state_->particle_cell; // scratch: degrees, then fill cursors
    fill_u32(b, degree, n, 0);
    // A pair that is not {a < b < particle_count()} would make the fill write
    // outside offsets/indices. The check is one compare per pair, next to two
    // atomic adds, so it runs in every build; the lowest offending pair index
    // (an atomic min, the same for any schedule) is reported and nothing is
    // written to indices.
    uint64_t first_bad = ~uint64_t{0};
    parallel_chunks(b, pairs_n, kPairItems, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            const Pair p = pairs[i];
            if (p.a >= p.b || p.b >= n) [[unlikely]] {
                std::atomic_ref<uint64_t> bad(first_bad);
                uint64_t seen = bad.load(std::memory_order_relaxed);
                while (i < seen && !bad.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
                }
                continue;
            }
            atomic_add(degree[p.a], 1);
            atomic_add(degree[p.b], 1);
        }
    });
    if (first_bad != ~uint64_t{0}) {
        HASHGRID_ASSERT(false, "neighbor_lists: pair out of range (a < b < particle_count() required)");
        return detail::item_status(StatusCode::invalid_argument,
                                   "neighbor_lists: a pair is not {a < b < particle_count()}; index = lowest such pair",
                                   static_cast<uint32_t>(first_bad), 0);
    }
    exclusive_scan(b, degree, n, offsets, degree, state_->chunk_scratch);
    if (total > 0 && (indices == nullptr || indices_capacity < total))
        return detail::capacity_status(StatusCode::output_too_small, "indices needs 2 * pair_count entries", total);
    parallel_chunks(b, pairs_n, kPairItems, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            indices[atomic_add(degree[pairs[i].a], 1)] = pairs[i].b;
            indices[atomic_add(degree[pairs[i].b], 1)] = pairs[i].a;
        }
    });
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            sort_distinct(indices + offsets[i], offsets[i + 1] - offsets[i]);
    });
    return {};
}

} // namespace hashgrid

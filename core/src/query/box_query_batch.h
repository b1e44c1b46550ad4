// SPDX-License-Identifier: MIT
// Box-query batches: what every batch checks and records per query, and
// the batch whose queries share one cell index (box_queries.cpp, the ray,
// nearest and frustum files, and the store-fed batches of store_queries.cpp).
#pragma once

#include "query/box_query_internal.h"

namespace hashgrid::box_query {

/// What a batch records for one query (run_query_batch): its total, or
/// kInvalidQuery.
inline uint64_t batch_total(const QueryResult& r) {
    return r.status.code == StatusCode::invalid_query ? detail::kInvalidQuery : r.total;
}

/// The same for a walk run straight into a sink (the counting batches).
inline uint64_t walk_total(const Status& s, uint64_t count) {
    if (s.ok()) return count;
    return s.code == StatusCode::invalid_query ? detail::kInvalidQuery : 0;
}

/// The checks every box batch makes before run_query_batch's own.
#define HASHGRID_REQUIRE_BATCH(grid, queries, count)                                                                   \
    do {                                                                                                               \
        HASHGRID_REQUIRE_ARGUMENT(::hashgrid::box_query::usable(grid), ::hashgrid::box_query::kUnusableGrid);          \
        HASHGRID_REQUIRE_FRAME(grid);                                                                                  \
        HASHGRID_REQUIRE_ARGUMENT((queries) != nullptr || (count) == 0, "box query batch: null queries");              \
    } while (0)

/// A batch traced as `phase` whose queries share one cell index, set up once:
/// one(cells, q, out, room) answers query q into out[0, room) and returns what
/// the batch records for it (batch_total or walk_total). `rerun`, when not
/// null, is set once the write pass starts (detail::BatchStats::rerun).
template <typename Query, typename Hit, typename One>
QueryResult cells_batch(const BoxQueryGrid& grid, TracePhase phase, const Query* queries, uint32_t count,
                        uint64_t* offsets, uint64_t offsets_capacity, Hit* out, uint64_t capacity,
                        const ThreadBackend& backend, const One& one, bool* rerun = nullptr) {
    return stamped(grid, [&]() -> QueryResult {
        HASHGRID_REQUIRE_BATCH(grid, queries, count);
        detail::PhaseTrace trace(grid.view.trace, backend);
        trace.begin(phase);
        const Cells cells(grid);
        return detail::run_query_batch(
            count, offsets, offsets_capacity, out, capacity, trace.backend(),
            [&](uint32_t q, Hit* o, uint64_t room) { return one(cells, q, o, room); }, rerun);
    }());
}

} // namespace hashgrid::box_query

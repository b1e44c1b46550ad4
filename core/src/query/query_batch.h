// SPDX-License-Identifier: MIT
// The one batch runner behind every query_*_batch (particle and box grids):
// the batch contract of query_types.h, implemented once.
#pragma once

#include "common/chunks.h"
#include "common/status_make.h"

#include "hashgrid/assert.h"
#include "hashgrid/query_types.h"
#include "hashgrid/thread_backend.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

namespace hashgrid::detail {

/// What a batch's single-query step returns for a query whose parameters are
/// invalid (valid totals are far below it).
inline constexpr uint64_t kInvalidQuery = ~uint64_t{0};

/// Chunks a batch runs in at most (query_batch_grain).
inline constexpr uint32_t kMaxBatchChunks = 1024;

/// Queries per chunk: at least 16, and at most kMaxBatchChunks chunks.
/// Depends on the query count only, like every chunking that decides where
/// results go.
inline uint32_t query_batch_grain(uint32_t count) {
    constexpr uint32_t kMinGrain = 16;
    const auto grain = static_cast<uint32_t>((uint64_t{count} + kMaxBatchChunks - 1) / kMaxBatchChunks);
    return grain > kMinGrain ? grain : kMinGrain;
}

/// The batch's arguments checked: invalid_argument for a null `offsets`, or
/// a null `out` with capacity; output_too_small for fewer than count + 1
/// offsets; otherwise ok. Reads and writes nothing.
inline Status batch_arguments(uint32_t count, const uint64_t* offsets, uint64_t offsets_capacity, const void* out,
                              uint64_t capacity) {
    HASHGRID_ASSERT(offsets != nullptr, "query batch: offsets is null");
    HASHGRID_ASSERT(out != nullptr || capacity == 0, "query batch: null output with capacity > 0");
    if (offsets == nullptr) return detail::make_status(StatusCode::invalid_argument, "query batch: offsets is null");
    if (out == nullptr && capacity != 0)
        return detail::make_status(StatusCode::invalid_argument, "query batch: null output with capacity > 0");
    if (offsets_capacity < uint64_t{count} + 1)
        return detail::capacity_status(StatusCode::output_too_small, "query batch: offsets need count + 1 entries",
                                       uint64_t{count} + 1);
    return {};
}

/// What scan_batch_offsets found: the batch's total and its invalid queries.
struct BatchScan {
    uint64_t total = 0;
    uint32_t invalid = 0;       // queries that returned kInvalidQuery
    uint32_t first_invalid = 0; // the lowest of them
};

/// Turns the queries' totals in offsets[1, count] into the batch's offsets
/// (offsets[0] = 0), unless some query is invalid: then the offsets after the
/// first invalid one are left as they are.
inline BatchScan scan_batch_offsets(uint32_t count, uint64_t* offsets) {
    BatchScan scan;
    offsets[0] = 0;
    for (uint32_t q = 0; q < count; ++q) {
        if (offsets[q + 1] == kInvalidQuery) {
            if (scan.invalid++ == 0) scan.first_invalid = q;
            continue;
        }
        if (scan.invalid == 0) {
            scan.total += offsets[q + 1];
            offsets[q + 1] = scan.total;
        }
    }
    return scan;
}

/// Moves each chunk's fitted results from its region (c * region) to their
/// offset, below `capacity`; reads the offsets and fitted[chunks]. True when
/// some chunk has queries that did not fit.
///
/// Chunk c's fitted results sit at from = c * region and go to
/// to = offsets[first query]: both ranges ascend with c, the sources are
/// disjoint, and each source lies within its region. A chunk moving up
/// (to > from) can only land on sources of chunks after it that move up
/// too, so those go first (descending); a chunk moving down can only land
/// on its own source (memmove) or on sources already moved.
template <typename Out>
bool move_fitted_results(uint32_t count, uint32_t grain, uint32_t chunks, uint64_t region, const uint64_t* offsets,
                         const uint32_t* fitted, Out* out, uint64_t capacity) {
    auto move_fitted = [&](uint32_t c) {
        const uint32_t q0 = c * grain;
        const uint64_t to = offsets[q0];
        const uint64_t from = uint64_t{c} * region;
        if (to >= capacity || to == from) return;
        const uint64_t length = std::min(offsets[fitted[c]] - to, capacity - to);
        if (length != 0)
            std::memmove(out + static_cast<size_t>(to), out + static_cast<size_t>(from),
                         static_cast<size_t>(length) * sizeof(Out));
    };
    for (uint32_t c = chunks; c-- > 0;)
        if (offsets[c * grain] > uint64_t{c} * region) move_fitted(c);
    bool overflowed = false;
    for (uint32_t c = 0; c < chunks; ++c) {
        if (offsets[c * grain] < uint64_t{c} * region) move_fitted(c);
        overflowed = overflowed || uint64_t{fitted[c]} != std::min<uint64_t>(count, uint64_t{c + 1} * grain);
    }
    return overflowed;
}

/// run(q, out, room) runs query q alone: it writes its first min(total, room)
/// results to out (null when room is 0) in the single query's order and
/// returns its exact total, or kInvalidQuery.
///
/// One pass of query work where `out` is roomy: chunk c writes its results
/// at c * region (region = capacity / chunks) while counting, and notes the
/// first of its queries whose results did not fit there. The exact offsets
/// then known, each chunk's fitted queries are moved into place in query
/// order, and only the queries that did not fit run again, at their final
/// offsets: a chunk with more results than its share costs a second run of
/// its own overflow, not of the whole batch. The moves never overwrite
/// results not yet moved (move_fitted_results). Results past `capacity` are
/// not written.
///
/// `rerun`, when given, is set to true before any query runs again, so that
/// a run that counts work (QueryStats) counts each query once.
template <typename Out, typename Run>
QueryResult run_query_batch(uint32_t count, uint64_t* offsets, uint64_t offsets_capacity, Out* out, uint64_t capacity,
                            const ThreadBackend& backend, Run&& run, bool* rerun = nullptr) {
    QueryResult result;
    result.status = batch_arguments(count, offsets, offsets_capacity, out, capacity);
    if (!result.status.ok()) return result;
    const uint32_t grain = query_batch_grain(count);
    const uint32_t chunks = static_cast<uint32_t>((uint64_t{count} + grain - 1) / grain);
    const uint64_t region = chunks != 0 ? capacity / chunks : 0;
    HASHGRID_ASSERT(chunks <= kMaxBatchChunks, "query batch: more chunks than query_batch_grain allows");
    // fitted[c]: the first query of chunk c whose results did not all fit in
    // its region (the chunk's end when all did).
    uint32_t fitted[kMaxBatchChunks];
    parallel_chunks(backend, count, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        const uint64_t base = uint64_t{begin / grain} * region;
        uint64_t used = 0;
        uint32_t fit = end;
        for (uint32_t q = begin; q < end; ++q) {
            const uint64_t room = used < region ? region - used : 0;
            Out* at = room != 0 ? out + static_cast<size_t>(base + used) : nullptr;
            const uint64_t total = run(q, at, room);
            offsets[q + 1] = total;
            if (total == kInvalidQuery) continue;
            if (total > room && fit == end) fit = q;
            used += total;
        }
        fitted[begin / grain] = fit;
    });
    const BatchScan scan = scan_batch_offsets(count, offsets);
    if (scan.invalid != 0) {
        result.status =
            detail::item_status(StatusCode::invalid_query,
                                "query batch: a query is invalid (NaN or infinite value, negative size, k == 0, ...)",
                                scan.first_invalid, scan.invalid);
        return result;
    }
    if (move_fitted_results(count, grain, chunks, region, offsets, fitted, out, capacity)) {
        if (rerun != nullptr) *rerun = true;
        parallel_chunks(backend, count, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t q = fitted[begin / grain]; q < end; ++q) {
                const uint64_t at = offsets[q];
                if (at >= capacity) break; // later queries start even further
                const uint64_t room = std::min(offsets[q + 1] - at, capacity - at);
                [[maybe_unused]] const uint64_t again = run(q, out + static_cast<size_t>(at), room);
                HASHGRID_ASSERT(again == offsets[q + 1] - at, "query batch: count and write passes disagree");
            }
        });
    }
    const uint64_t total = scan.total;
    result.total = total;
    result.written = std::min(total, capacity);
    if (total > capacity)
        result.status =
            detail::capacity_status(StatusCode::output_too_small, "query batch: result buffer too small", total);
    return result;
}

/// QueryStats of a batch, added up by the threads that run its queries.
struct BatchStats {
    std::atomic<uint64_t> queries{0};
    std::atomic<uint64_t> cells{0};
    std::atomic<uint64_t> tested{0};
    std::atomic<uint64_t> results{0};
    std::atomic<uint64_t> cull_tests{0};
    /// run_query_batch's write pass has started: its queries were counted already.
    bool rerun = false;

    /// One query's counts (its cells and tests, and its total).
    void add(const QueryStats& s, uint64_t total) {
        if (rerun || total == kInvalidQuery) return;
        queries.fetch_add(1, std::memory_order_relaxed);
        cells.fetch_add(s.cells, std::memory_order_relaxed);
        tested.fetch_add(s.tested, std::memory_order_relaxed);
        results.fetch_add(total, std::memory_order_relaxed);
        cull_tests.fetch_add(s.cull_tests, std::memory_order_relaxed);
    }
    /// Adds the batch's counts to the caller's (after the batch returned).
    void add_to(QueryStats* out) const {
        if (out == nullptr) return;
        out->queries += queries.load(std::memory_order_relaxed);
        out->cells += cells.load(std::memory_order_relaxed);
        out->tested += tested.load(std::memory_order_relaxed);
        out->results += results.load(std::memory_order_relaxed);
        out->cull_tests += cull_tests.load(std::memory_order_relaxed);
    }
};

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
// The visitor forms of the ordered queries (k nearest on both grid kinds,
// ray on box grids), implemented once: results are found in short runs, each
// by the query's own search restricted to the results strictly after the
// last one visited. The result orders are total (ties broken by index), so
// the runs continue each other exactly: the visitor sees the buffer form's
// results in the buffer form's order, with no buffer and no allocation.
#pragma once

#include <algorithm>
#include <cstdint>

namespace hashgrid::detail {

/// Longest run of results searched for at once (a stack buffer of this many).
inline constexpr uint32_t kVisitRun = 64;

/// next(after, run, m) writes the first m results strictly after *after (from
/// the first result when after is null) to run, in order, and returns how
/// many it found. Each is visited in turn. Runs grow 1, 2, 4, ... up to
/// kVisitRun, so stopping after the first result costs one search for one,
/// and m results cost about log2(m) + m / kVisitRun searches. Stops after
/// `limit` results, when a run comes back short (nothing is left) or when the
/// visitor returns false; returns the calls made.
template <typename Hit, typename Visitor, typename Next>
uint64_t visit_in_runs(Visitor visitor, uint64_t limit, Next&& next) {
    Hit run[kVisitRun];
    Hit last{};
    uint64_t calls = 0;
    uint32_t length = 1;
    while (calls < limit) {
        const auto m = static_cast<uint32_t>(std::min<uint64_t>(length, limit - calls));
        const uint32_t found = next(calls != 0 ? &last : nullptr, run, m);
        for (uint32_t i = 0; i < found; ++i) {
            ++calls;
            if (!visitor.visit(visitor.context, run[i])) return calls;
        }
        if (found < m) break;
        last = run[found - 1];
        length = std::min(2 * length, kVisitRun);
    }
    return calls;
}

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
// PairFilter tests of both grid kinds (test_pairs.cpp, test_box_grid.cpp):
// a deterministic keep rule, the pairs it keeps, and the check of a filtered
// run against them.
#pragma once

#include "test_support.h"

#include "hashgrid/query_types.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hashgrid_test {

/// A deterministic keep rule behind a PairFilter. For find_pairs both indices
/// are objects (a < b); for find_pairs_with a is a query and b an object. The
/// filter runs on worker threads, so what it records of its calls is atomic.
struct FilterRule {
    bool by_team = false;                         ///< false: keep (a ^ b) & 1; true: keep team_a[a] != team_b[b]
    const std::vector<uint8_t>* team_a = nullptr; ///< One entry per possible a (objects or queries).
    const std::vector<uint8_t>* team_b = nullptr; ///< One entry per object.
    bool ordered = true;                          ///< find_pairs: every call must have a < b.
    std::atomic<uint64_t> calls{0};
    std::atomic<bool> bad_call{false}; ///< A call out of range, or with a >= b when ordered.

    [[nodiscard]] bool keeps(const Pair& p) const {
        return by_team ? (*team_a)[p.a] != (*team_b)[p.b] : ((p.a ^ p.b) & 1u) != 0;
    }
    [[nodiscard]] hashgrid::PairFilter filter() { return hashgrid::PairFilter{&accept, this}; }

    static bool accept(void* context, uint32_t a, uint32_t b) {
        auto* rule = static_cast<FilterRule*>(context);
        rule->calls.fetch_add(1, std::memory_order_relaxed);
        if ((rule->ordered && a >= b) || a >= rule->team_a->size() || b >= rule->team_b->size()) {
            rule->bad_call.store(true, std::memory_order_relaxed);
            return false;
        }
        return rule->keeps(Pair{a, b});
    }
};

/// The pairs the rule keeps, in their order.
std::vector<Pair> kept_pairs(const std::vector<Pair>& pairs, const FilterRule& rule) {
    std::vector<Pair> out;
    for (const Pair& p : pairs)
        if (rule.keeps(p)) out.push_back(p);
    return out;
}

struct FilteredRun {
    hashgrid::PairResult result;
    std::vector<Pair> pairs; ///< The written prefix.
    bool past_capacity_untouched = true;
};

/// "" when the run has status `code` (needed = the total when not ok), total =
/// expected.size() and exactly the first `written` expected pairs; else the
/// first difference.
std::string check_filtered(const FilteredRun& run, hashgrid::StatusCode code, const std::vector<Pair>& expected,
                           uint64_t written) {
    const hashgrid::PairResult& r = run.result;
    if (r.status.code != code)
        return std::string("status ") + hashgrid::to_string(r.status.code) + ", expected " + hashgrid::to_string(code);
    if (code != hashgrid::StatusCode::ok && r.status.needed != expected.size())
        return "needed " + std::to_string(r.status.needed) + ", expected " + std::to_string(expected.size());
    if (r.total != expected.size())
        return "total " + std::to_string(r.total) + ", expected " + std::to_string(expected.size());
    if (r.written != written) return "written " + std::to_string(r.written) + ", expected " + std::to_string(written);
    if (!run.past_capacity_untouched) return "wrote past the capacity";
    const std::vector<Pair> prefix(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(written));
    return diff_pairs(prefix, run.pairs.data(), run.pairs.size());
}

std::vector<uint8_t> random_teams(uint64_t seed, uint32_t count) {
    Rng rng(seed);
    std::vector<uint8_t> team(count);
    for (uint8_t& t : team)
        t = static_cast<uint8_t>(rng.below(3));
    return team;
}

} // namespace hashgrid_test

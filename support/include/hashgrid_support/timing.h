// SPDX-License-Identifier: MIT
// Summaries of repeated timings for the examples and benchmarks: median with
// min and max, so that one preempted frame on a shared machine does not move
// the figure that is reported.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace hashgrid_support {

struct Spread {
    double median = 0.0;
    double min = 0.0;
    double max = 0.0;
};

/// Median (mean of the middle two for an even count), min and max; zeros when empty.
inline Spread spread(std::vector<double> values) {
    Spread s;
    if (values.empty()) return s;
    std::sort(values.begin(), values.end());
    const size_t mid = values.size() / 2;
    s.median = values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
    s.min = values.front();
    s.max = values.back();
    return s;
}

inline double median(std::vector<double> values) { return spread(std::move(values)).median; }

/// Value at quantile q of sorted, non-empty `sorted` (nearest rank).
inline double quantile(const std::vector<double>& sorted, double q) {
    const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

/// "median [min..max]" with `decimals` digits after the point.
inline std::string format_spread(const Spread& s, int decimals) {
    char text[96];
    std::snprintf(text, sizeof(text), "%.*f [%.*f..%.*f]", decimals, s.median, decimals, s.min, decimals, s.max);
    return text;
}

} // namespace hashgrid_support

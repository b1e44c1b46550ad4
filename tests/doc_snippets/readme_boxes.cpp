// SPDX-License-Identifier: MIT
// Context of README.md's box-grid block (it follows the "Use" block, whose `s`
// and `tbb` it reuses): 500 random boxes, then the block's overlap pairs and
// box query checked against brute force (closed boxes, every layer).
#include "hashgrid/platform/tbb_backend.h"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

struct Counts {
    uint64_t pairs = 0;
    uint64_t in_box = 0;
};

hashgrid::Status frame(const float* min_x, const float* min_y, const float* min_z, const float* max_x,
                       const float* max_y, const float* max_z, const uint32_t* category, const uint32_t* mask,
                       uint32_t n, hashgrid::Pair* pairs, uint64_t capacity, float x0, float y0, float z0, float x1,
                       float y1, float z1, uint32_t* out, uint64_t out_capacity, Counts& counts) {
    hashgrid::Status s;
    hashgrid::platform::TbbBackend tbb(2);
    // @snippet@
    counts.pairs = bp.total;
    counts.in_box = found.total;
    return s;
}

} // namespace

int main() {
    const uint32_t n = 500;
    std::vector<float> lo[3], hi[3];
    uint64_t state = 777;
    auto unit = [&] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<float>(state >> 40) * 0x1p-24f;
    };
    for (uint32_t d = 0; d < 3; ++d) {
        lo[d].resize(n);
        hi[d].resize(n);
    }
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d][i] = 40.0f * unit();
            hi[d][i] = lo[d][i] + 3.0f * unit();
        }
    std::vector<uint32_t> category(n, 1u), mask(n, 1u);
    const uint64_t capacity = 16ull * n;
    std::vector<hashgrid::Pair> pairs(static_cast<size_t>(capacity));
    std::vector<uint32_t> out(n);
    const float q_lo[3] = {10.0f, 10.0f, 10.0f}, q_hi[3] = {25.0f, 20.0f, 30.0f};
    Counts counts;
    const hashgrid::Status s = frame(lo[0].data(), lo[1].data(), lo[2].data(), hi[0].data(), hi[1].data(), hi[2].data(),
                                     category.data(), mask.data(), n, pairs.data(), capacity, q_lo[0], q_lo[1], q_lo[2],
                                     q_hi[0], q_hi[1], q_hi[2], out.data(), n, counts);
    auto overlap = [&](const float* alo, const float* ahi, uint32_t j) {
        for (uint32_t d = 0; d < 3; ++d)
            if (alo[d] > hi[d][j] || lo[d][j] > ahi[d]) return false;
        return true;
    };
    uint64_t want_pairs = 0, want_in_box = 0;
    for (uint32_t i = 0; i < n; ++i) {
        want_in_box += overlap(q_lo, q_hi, i) ? 1u : 0u;
        const float ilo[3] = {lo[0][i], lo[1][i], lo[2][i]}, ihi[3] = {hi[0][i], hi[1][i], hi[2][i]};
        for (uint32_t j = i + 1; j < n; ++j)
            want_pairs += overlap(ilo, ihi, j) ? 1u : 0u;
    }
    const bool pass = s.ok() && counts.pairs == want_pairs && counts.in_box == want_in_box && want_pairs > 0;
    std::printf("%s: %llu pairs (brute force %llu), %llu in the box (brute force %llu)\n", pass ? "PASS" : "FAIL",
                static_cast<unsigned long long>(counts.pairs), static_cast<unsigned long long>(want_pairs),
                static_cast<unsigned long long>(counts.in_box), static_cast<unsigned long long>(want_in_box));
    return pass ? 0 : 1;
}

// SPDX-License-Identifier: MIT
// Context of README.md's "Use" block: one frame of 2000 random points in the
// unit cube, then the block's pairs and radius query checked against brute
// force (the same float test, d2 < r * r).
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

struct Found {
    uint64_t pairs = 0;
    uint64_t near = 0;
};

hashgrid::Status frame(const float* x, const float* y, const float* z, uint32_t n, float r, hashgrid::Pair* pairs,
                       uint64_t capacity, uint32_t* offsets, uint32_t* indices, float px, float py, float pz,
                       uint32_t* hits, uint64_t hit_capacity, Found& found) {
    // @snippet@
    found.pairs = p.total;
    found.near = near.total;
    return s;
}

float d2(float ax, float ay, float az, float bx, float by, float bz) {
    const float dx = ax - bx, dy = ay - by, dz = az - bz;
    const float xx = dx * dx, yy = dy * dy, zz = dz * dz;
    return (xx + yy) + zz;
}

} // namespace

int main() {
    const uint32_t n = 2000;
    const float r = 0.08f;
    std::vector<float> x(n), y(n), z(n);
    uint64_t state = 12345;
    auto unit = [&] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<float>(state >> 40) * 0x1p-24f;
    };
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = unit();
        y[i] = unit();
        z[i] = unit();
    }
    const uint64_t capacity = 20ull * n;
    std::vector<hashgrid::Pair> pairs(static_cast<size_t>(capacity));
    std::vector<uint32_t> offsets(n + 1), indices(static_cast<size_t>(2 * capacity)), hits(n);
    const float px = 0.5f, py = 0.5f, pz = 0.5f;
    Found found;
    const hashgrid::Status s = frame(x.data(), y.data(), z.data(), n, r, pairs.data(), capacity, offsets.data(),
                                     indices.data(), px, py, pz, hits.data(), n, found);
    uint64_t want_pairs = 0, want_near = 0;
    for (uint32_t i = 0; i < n; ++i) {
        want_near += d2(x[i], y[i], z[i], px, py, pz) < 2.5f * 2.5f ? 1u : 0u;
        for (uint32_t j = i + 1; j < n; ++j)
            want_pairs += d2(x[i], y[i], z[i], x[j], y[j], z[j]) < r * r ? 1u : 0u;
    }
    const bool pass = s.ok() && found.pairs == want_pairs && found.near == want_near && want_pairs > 0;
    std::printf("%s: %llu pairs (brute force %llu), %llu near (brute force %llu)\n", pass ? "PASS" : "FAIL",
                static_cast<unsigned long long>(found.pairs), static_cast<unsigned long long>(want_pairs),
                static_cast<unsigned long long>(found.near), static_cast<unsigned long long>(want_near));
    return pass ? 0 : 1;
}

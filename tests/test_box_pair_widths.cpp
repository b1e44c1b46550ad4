// SPDX-License-Identifier: MIT
// BoxGrid's pair searches (find_pairs, find_pairs_with) give the scalar
// width's bytes at every width this build and CPU have, and the scalar width
// gives brute force's pairs. The scenes make every kernel of the search
// matter: cells with more entries than a batch or a pair piece, large
// objects with partner lists on both sides of the rank sorts' limits (64 and
// 128) and past the crowded limit (1024), the fine and the coarse scans,
// boxes that only touch (a strict comparison in place of a closed one loses
// them), zero-size boxes, layers, a PairFilter and buffers too small.
#include <doctest/doctest.h>

#include "test_support.h"

#include "hashgrid/box_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::PairKernel;

namespace {

struct Boxes {
    std::vector<float> lo[3], hi[3];
    std::vector<uint32_t> category, mask;
    [[nodiscard]] uint32_t size() const { return static_cast<uint32_t>(lo[0].size()); }
    void add(const float l[3], const float h[3]) {
        for (uint32_t a = 0; a < 3; ++a) {
            lo[a].push_back(l[a]);
            hi[a].push_back(h[a]);
        }
    }
    [[nodiscard]] hashgrid::BoxSpans spans() const {
        hashgrid::BoxSpans b;
        b.min_x = lo[0].data();
        b.min_y = lo[1].data();
        b.min_z = lo[2].data();
        b.max_x = hi[0].data();
        b.max_y = hi[1].data();
        b.max_z = hi[2].data();
        b.category = category.empty() ? nullptr : category.data();
        b.mask = mask.empty() ? nullptr : mask.data();
        b.count = size();
        return b;
    }
    [[nodiscard]] bool overlap(uint32_t i, const Boxes& other, uint32_t j, uint32_t dims) const {
        bool meets = true;
        for (uint32_t a = 0; a < dims; ++a)
            meets = meets && lo[a][i] <= other.hi[a][j] && other.lo[a][j] <= hi[a][i];
        return meets;
    }
    [[nodiscard]] uint32_t cat(uint32_t i) const { return category.empty() ? ~0u : category[i]; }
    [[nodiscard]] uint32_t msk(uint32_t i) const { return mask.empty() ? ~0u : mask[i]; }
};

/// n boxes in [0, extent)^dims (z flat in 2D): a third packed into one cell,
/// every fifth touching its predecessor on x only, some of zero size, and
/// `large` big ones (the first covering everything).
Boxes box_scene(Rng& rng, uint32_t dims, uint32_t n, uint32_t large, float extent, bool layers) {
    Boxes s;
    for (uint32_t i = 0; i < n; ++i) {
        float l[3] = {0.0f, 0.0f, 0.0f}, h[3] = {0.0f, 0.0f, 0.0f};
        const bool packed = i % 3 == 0;
        const bool big = i < large;
        for (uint32_t a = 0; a < dims; ++a) {
            l[a] = on_grid(packed ? rng.uniform(1.0f, 2.5f) : rng.uniform(0.0f, extent));
            const float size = big      ? rng.uniform(4.0f, 14.0f)
                               : packed ? rng.uniform(0.0f, 0.4f)
                                        : rng.uniform(0.0f, 2.5f);
            h[a] = i % 7 == 3 ? l[a] : l[a] + on_grid(size);
            if (i == 0 && large > 0) {
                l[a] = -1.0f;
                h[a] = extent + 1.0f;
            }
        }
        if (i % 5 == 1 && i >= large) {
            for (uint32_t a = 0; a < dims; ++a) {
                l[a] = s.lo[a][i - 1];
                h[a] = s.hi[a][i - 1];
            }
            const float width = h[0] - l[0];
            l[0] = s.hi[0][i - 1];
            h[0] = l[0] + width;
        }
        s.add(l, h);
    }
    if (layers)
        for (uint32_t i = 0; i < n; ++i) {
            s.category.push_back(1u << (i % 3));
            s.mask.push_back(i % 4 == 0 ? 1u : ~0u);
        }
    return s;
}

/// Queries: some small, some spanning many cells, some touching an object.
Boxes query_scene(Rng& rng, const Boxes& objects, uint32_t dims, uint32_t m, float extent, bool layers) {
    Boxes q;
    for (uint32_t i = 0; i < m; ++i) {
        float l[3] = {0.0f, 0.0f, 0.0f}, h[3] = {0.0f, 0.0f, 0.0f};
        const uint32_t j = rng.below(objects.size());
        for (uint32_t a = 0; a < dims; ++a) {
            l[a] = on_grid(i % 2 == 0 ? rng.uniform(0.5f, 2.5f) : rng.uniform(-1.0f, extent));
            h[a] = l[a] + on_grid(i % 4 == 3 ? rng.uniform(4.0f, 16.0f) : rng.uniform(0.0f, 3.0f));
            if (i % 3 == 1) { // touching object j from above on every axis
                l[a] = objects.hi[a][j];
                h[a] = l[a] + 1.0f;
            }
        }
        q.add(l, h);
    }
    if (layers)
        for (uint32_t i = 0; i < m; ++i) {
            q.category.push_back(i % 2 == 0 ? 1u : 6u);
            q.mask.push_back(i % 5 == 0 ? 2u : ~0u);
        }
    return q;
}

bool layers_match(const Boxes& x, uint32_t i, const Boxes& y, uint32_t j) {
    return (x.cat(i) & y.msk(j)) != 0 && (y.cat(j) & x.msk(i)) != 0;
}

bool filter_accept(void*, uint32_t a, uint32_t b) { return (a * 7u + b) % 3u != 0; }

std::vector<hashgrid::Pair> sorted_pairs(std::vector<hashgrid::Pair> v) {
    std::sort(v.begin(), v.end(),
              [](const hashgrid::Pair& x, const hashgrid::Pair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
    return v;
}

bool same_bytes(const std::vector<hashgrid::Pair>& x, const std::vector<hashgrid::Pair>& y) {
    return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0);
}

/// A search's pairs with a buffer of `capacity`, checked against its status
/// and a sentinel past the buffer; `total` gets the full count.
template <typename Run>
std::vector<hashgrid::Pair> run_pairs(uint64_t capacity, uint64_t& total, Run&& run) {
    const hashgrid::Pair sentinel{0xdeadbeefu, 0xfeedfaceu};
    std::vector<hashgrid::Pair> out(static_cast<size_t>(capacity) + 1, sentinel);
    const hashgrid::PairResult r = run(capacity == 0 ? nullptr : out.data(), capacity);
    total = r.total;
    CHECK(r.written == std::min<uint64_t>(r.total, capacity));
    CHECK((r.total > capacity ? r.status.code == hashgrid::StatusCode::output_too_small : r.status.ok()));
    CHECK(out[static_cast<size_t>(capacity)].a == sentinel.a);
    CHECK(out[static_cast<size_t>(capacity)].b == sentinel.b);
    out.resize(static_cast<size_t>(r.written));
    return out;
}

struct Case {
    uint32_t n;
    uint32_t large;
};

} // namespace

TEST_CASE("box grid pairs: every width gives the scalar width's bytes, and scalar gives brute force's") {
    KernelGuard guard;
    const std::vector<PairKernel> widths = available_kernels();
    MESSAGE("widths: " << widths.size());
    Rng rng(4242);
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    const hashgrid::ThreadBackend reverse = reverse_order_backend(4);
    constexpr float kExtent = 24.0f;
    for (uint32_t dims = 2; dims <= 3; ++dims)
        for (const Case cs : {Case{2, 0}, Case{9, 1}, Case{33, 3}, Case{130, 4}, Case{600, 12}, Case{1500, 2}})
            for (const bool layers : {false, true})
                for (const uint32_t large_cells : {4u, 64u}) {
                    INFO("dims " << dims << " n " << cs.n << " large " << cs.large << " layers " << layers
                                 << " large_object_cells " << large_cells);
                    const Boxes s = box_scene(rng, dims, cs.n, cs.large, kExtent, layers);
                    const Boxes queries = query_scene(rng, s, dims, 24, kExtent, layers);
                    hashgrid::BoxGridConfig c;
                    c.dimensions = dims;
                    c.cell_size = 2.0f;
                    c.max_objects = cs.n;
                    c.max_cell_entries = cs.n * large_cells + 1;
                    c.max_pairs = uint64_t{cs.n} * cs.n;
                    c.large_object_cells = large_cells;
                    hashgrid::BoxGrid grid;
                    REQUIRE(grid.init_allocate(c).ok());
                    REQUIRE(grid.rebuild(s.spans(), hashgrid::serial_backend()).ok());

                    std::vector<hashgrid::Pair> truth, truth_with;
                    for (uint32_t i = 0; i < cs.n; ++i)
                        for (uint32_t j = i + 1; j < cs.n; ++j)
                            if (s.overlap(i, s, j, dims) && layers_match(s, i, s, j)) truth.push_back({i, j});
                    for (uint32_t q = 0; q < queries.size(); ++q)
                        for (uint32_t o = 0; o < cs.n; ++o)
                            if (queries.overlap(q, s, o, dims) && layers_match(queries, q, s, o))
                                truth_with.push_back({q, o});
                    std::vector<hashgrid::Pair> filtered, filtered_with;
                    for (const hashgrid::Pair& p : truth)
                        if (filter_accept(nullptr, p.a, p.b)) filtered.push_back(p);
                    for (const hashgrid::Pair& p : truth_with)
                        if (filter_accept(nullptr, p.a, p.b)) filtered_with.push_back(p);
                    const hashgrid::PairFilter filter{&filter_accept, nullptr};

                    // Per search: scalar's output, then every width's, equal byte for byte.
                    std::vector<hashgrid::Pair> scalar[6];
                    for (const PairKernel w : widths)
                        for (const hashgrid::ThreadBackend* backend : {&serial, &reverse}) {
                            INFO("width " << width_name(w) << " workers " << backend->worker_count);
                            REQUIRE(hashgrid::set_pair_kernel(w));
                            const uint64_t all = uint64_t{cs.n} * cs.n + queries.size() * uint64_t{cs.n};
                            uint64_t total = 0;
                            std::vector<hashgrid::Pair> got[6];
                            got[0] = run_pairs(all, total, [&](hashgrid::Pair* out, uint64_t cap) {
                                return grid.find_pairs(out, cap, *backend);
                            });
                            got[1] = run_pairs(total / 2, total, [&](hashgrid::Pair* out, uint64_t cap) {
                                return grid.find_pairs(out, cap, *backend);
                            });
                            got[2] = run_pairs(all, total, [&](hashgrid::Pair* out, uint64_t cap) {
                                return grid.find_pairs(out, cap, *backend, filter);
                            });
                            got[3] = run_pairs(all, total, [&](hashgrid::Pair* out, uint64_t cap) {
                                return grid.find_pairs_with(queries.spans(), out, cap, *backend);
                            });
                            got[4] = run_pairs(total / 2, total, [&](hashgrid::Pair* out, uint64_t cap) {
                                return grid.find_pairs_with(queries.spans(), out, cap, *backend);
                            });
                            got[5] = run_pairs(all, total, [&](hashgrid::Pair* out, uint64_t cap) {
                                return grid.find_pairs_with(queries.spans(), out, cap, *backend, filter);
                            });
                            if (w == PairKernel::scalar && backend == &serial) {
                                CHECK(same_bytes(sorted_pairs(got[0]), truth));
                                CHECK(same_bytes(sorted_pairs(got[2]), filtered));
                                CHECK(same_bytes(sorted_pairs(got[3]), truth_with));
                                CHECK(same_bytes(sorted_pairs(got[5]), filtered_with));
                                CHECK(got[1].size() == truth.size() / 2);
                                CHECK(got[4].size() == truth_with.size() / 2);
                                // The short buffers hold the exact prefixes.
                                CHECK(std::memcmp(got[1].data(), got[0].data(), got[1].size() * sizeof(got[1][0])) ==
                                      0);
                                CHECK(std::memcmp(got[4].data(), got[3].data(), got[4].size() * sizeof(got[4][0])) ==
                                      0);
                                for (int k = 0; k < 6; ++k)
                                    scalar[k] = got[k];
                            }
                            for (int k = 0; k < 6; ++k) {
                                INFO("search " << k);
                                CHECK(same_bytes(got[k], scalar[k]));
                            }
                        }
                }
}

// SPDX-License-Identifier: MIT
// Fuzz target: BoxGrid (box_grid.h). A config (2D/3D, bounded reject/clamp or
// unbounded, small large_object_cells, tight capacities) and up to three
// frames of at most 200 boxes with layers, each run on the serial and the
// 3-thread backend. Checks against brute force:
//   - rebuild status (object_capacity, lowest bad box and count,
//     entry_capacity with the exact entries) and that a failed frame keeps
//     the previous one; entry_count() and the large-object list;
//   - find_pairs: closed overlap + layer rule, each pair once with a < b, in
//     the documented order (small-small by the cell of the intersection's
//     minimum corner, then entry order; then pairs with a large object), and
//     the capacity/max_pairs statuses with the exact written prefix;
//   - find_pairs_with: (query, object) overlaps, ordered by query;
//   - identical bytes from both backends.
#include "box_scene.h"

namespace {

using namespace hashgrid_fuzz;
using hashgrid::BoxGrid;
using hashgrid::Pair;
using hashgrid::PairResult;

struct OrderedPair {
    std::array<int64_t, 5> key; // small-small: (0, z, y, x, 0); with a large object: (1, large, 0, 0, 0)
    Pair pair;
};

/// Every reported pair of a valid scene, in the documented order.
std::vector<Pair> oracle_pairs(const BoxScene& s, const BoxExpected& e) {
    std::vector<OrderedPair> found;
    for (uint32_t i = 0; i < s.size(); ++i) {
        float ilo[3], ihi[3];
        box_of(s, i, ilo, ihi);
        for (uint32_t j = i + 1; j < s.size(); ++j) {
            float jlo[3], jhi[3];
            box_of(s, j, jlo, jhi);
            if (!boxes_overlap(ilo, ihi, jlo, jhi, s.config.dimensions)) continue;
            if ((s.cat(i) & s.msk(j)) == 0 || (s.cat(j) & s.msk(i)) == 0) continue;
            OrderedPair p{};
            p.pair = {i, j};
            if (e.large[i] || e.large[j]) {
                const uint32_t large = e.large[i] ? i : j;
                p.key = {1, large, e.large[i] ? j : i, 0, 0};
            } else {
                float corner[3];
                for (uint32_t d = 0; d < 3; ++d)
                    corner[d] = std::max(ilo[d], jlo[d]);
                const std::array<int64_t, 3> cell = reporting_cell(s.config, corner);
                p.key = {0, cell[0], cell[1], cell[2], 0};
            }
            found.push_back(p);
        }
    }
    std::stable_sort(found.begin(), found.end(), [](const OrderedPair& a, const OrderedPair& b) {
        if (a.key != b.key) return a.key < b.key;
        return a.pair.a != b.pair.a ? a.pair.a < b.pair.a : a.pair.b < b.pair.b;
    });
    std::vector<Pair> pairs;
    pairs.reserve(found.size());
    for (const OrderedPair& p : found)
        pairs.push_back(p.pair);
    return pairs;
}

constexpr uint32_t kSentinel = 0xdeadbeefu;

void check_pairs(BoxGrid& g, const hashgrid::ThreadBackend& backend, const std::vector<Pair>& oracle,
                 uint64_t capacity) {
    const uint64_t total = oracle.size();
    std::vector<Pair> out(capacity + 2, Pair{kSentinel, kSentinel});
    const PairResult r = g.find_pairs(capacity == 0 ? nullptr : out.data(), capacity, backend);
    FUZZ_CHECK(r.total == total, "box find_pairs: total is not the exact count");
    const uint64_t max_pairs = g.config().max_pairs;
    hashgrid::StatusCode expect = hashgrid::StatusCode::ok;
    uint64_t written = total;
    if (total > max_pairs) {
        expect = hashgrid::StatusCode::pair_capacity;
        written = std::min(capacity, max_pairs);
    } else if (capacity < total) {
        expect = hashgrid::StatusCode::output_too_small;
        written = capacity;
    }
    FUZZ_CHECK(r.status.code == expect, "box find_pairs: status differs from the documented one");
    if (expect != hashgrid::StatusCode::ok) FUZZ_CHECK(r.status.needed == total, "box find_pairs: needed");
    FUZZ_CHECK(r.written == written, "box find_pairs: written");
    for (uint64_t k = 0; k < r.written; ++k)
        FUZZ_CHECK(out[k].a == oracle[k].a && out[k].b == oracle[k].b,
                   "box find_pairs: output is not the documented order's prefix");
    for (uint64_t k = r.written; k < out.size(); ++k)
        FUZZ_CHECK(out[k].a == kSentinel, "box find_pairs: wrote past `written`");
}

void check_pairs_with(BoxGrid& g, Input& in, const BoxScene& s, const hashgrid::ThreadBackend& backend,
                      std::vector<Pair>* bytes) {
    BoxScene q;
    q.config = s.config;
    q.config.max_objects = 64; // query boxes need not fit the grid's capacities
    make_boxes(in, q, 40);
    for (uint32_t i = 0; i < q.size(); ++i) { // queries may reach outside the world: widen some
        if (in.below(8) == 0) q.lo[0][i] = -1e30f;
        if (in.below(8) == 0) q.hi[1][i] = 1e30f;
    }
    const hashgrid::BoxSpans qs = q.spans();
    // Validated like rebuild(): non-finite, then min > max.
    uint32_t bad = 0xffffffffu;
    uint32_t bad_count = 0;
    uint32_t allowed = 0;
    for (uint32_t i = 0; i < q.size(); ++i) {
        uint32_t problems = 0;
        for (uint32_t d = 0; d < s.config.dimensions; ++d) {
            if (!std::isfinite(q.lo[d][i]) || !std::isfinite(q.hi[d][i]))
                problems |= 1u << static_cast<uint32_t>(hashgrid::StatusCode::invalid_position);
            else if (!(q.lo[d][i] <= q.hi[d][i]))
                problems |= 1u << static_cast<uint32_t>(hashgrid::StatusCode::invalid_box);
        }
        if (problems != 0 && bad_count++ == 0) {
            bad = i;
            allowed = problems;
        }
    }
    std::vector<Pair> expect;
    for (uint32_t a = 0; a < q.size() && bad_count == 0; ++a) {
        float alo[3], ahi[3];
        box_of(q, a, alo, ahi);
        for (uint32_t b = 0; b < s.size(); ++b) {
            float blo[3], bhi[3];
            box_of(s, b, blo, bhi);
            if (boxes_overlap(alo, ahi, blo, bhi, s.config.dimensions) && (q.cat(a) & s.msk(b)) != 0 &&
                (s.cat(b) & q.msk(a)) != 0)
                expect.push_back({a, b});
        }
    }
    const uint64_t capacity = in.flag() ? expect.size() + 1 : in.below(static_cast<uint32_t>(expect.size() + 1));
    std::vector<Pair> out(capacity + 1, Pair{kSentinel, kSentinel});
    const PairResult r = g.find_pairs_with(qs, out.data(), capacity, backend);
    if (bad_count > 0) {
        FUZZ_CHECK(((allowed >> static_cast<uint32_t>(r.status.code)) & 1u) != 0 && r.status.index == bad,
                   "find_pairs_with: bad query not reported at the lowest index");
        FUZZ_CHECK(r.written == 0 && out[0].a == kSentinel, "find_pairs_with: wrote for a bad query");
        return;
    }
    FUZZ_CHECK(r.total == expect.size(), "find_pairs_with: total");
    FUZZ_CHECK(r.written == std::min<uint64_t>(capacity, expect.size()), "find_pairs_with: written");
    FUZZ_CHECK(r.status.code ==
                   (capacity < expect.size() ? hashgrid::StatusCode::output_too_small : hashgrid::StatusCode::ok),
               "find_pairs_with: status");
    // Ordered by query; within a query, the same set as brute force.
    for (uint64_t k = 1; k < r.written; ++k)
        FUZZ_CHECK(out[k - 1].a <= out[k].a, "find_pairs_with: not ordered by query");
    if (r.written == expect.size()) {
        std::vector<Pair> sorted(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(r.written));
        std::sort(sorted.begin(), sorted.end(),
                  [](const Pair& x, const Pair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
        for (size_t k = 0; k < sorted.size(); ++k)
            FUZZ_CHECK(sorted[k].a == expect[k].a && sorted[k].b == expect[k].b,
                       "find_pairs_with: differs from brute force");
    }
    if (bytes != nullptr) bytes->assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(r.written));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    install_resume_hook();
    Input in(data, size);
    BoxScene scene;
    scene.config = make_box_config(in);
    BoxGrid grids[2];
    const hashgrid::ThreadBackend backends[2] = {serial(), threaded()};
    for (BoxGrid& g : grids)
        FUZZ_CHECK(g.init_allocate(scene.config).ok(), "BoxGrid init_allocate failed on a valid config");
    FUZZ_CHECK(grids[0].find_pairs(nullptr, 0, backends[0]).status.code == hashgrid::StatusCode::not_built,
               "box find_pairs before a rebuild is not not_built");
    bool built = false;
    std::vector<Pair> last[2];
    const uint32_t frames = 1 + in.below(3);
    for (uint32_t frame = 0; frame < frames; ++frame) {
        make_boxes(in, scene, in.flag() ? 200u : 30u);
        const BoxExpected e = expect_box_rebuild(scene);
        const hashgrid::BoxSpans spans = scene.spans();
        hashgrid::Status st[2];
        for (int b = 0; b < 2; ++b) {
            st[b] = grids[b].rebuild(spans, backends[b]);
            check_box_status(st[b], e);
        }
        FUZZ_CHECK(same_status(st[0], st[1]), "box rebuild status differs between backends");
        if (!st[0].ok()) {
            if (built)
                for (int b = 0; b < 2; ++b) {
                    std::vector<Pair> now(last[b].size() + 1);
                    const PairResult r = grids[b].find_pairs(now.data(), now.size(), backends[b]);
                    now.resize(r.written);
                    FUZZ_CHECK(
                        now.size() == last[b].size() &&
                            (now.empty() || std::memcmp(now.data(), last[b].data(), now.size() * sizeof(Pair)) == 0),
                        "a rejected box frame changed the previous frame");
                }
            continue;
        }
        built = true;
        uint64_t large = 0;
        for (uint8_t l : e.large)
            large += l;
        const hashgrid::BoxGridView view = grids[0].view();
        FUZZ_CHECK(grids[0].object_count() == scene.size() && view.object_count == scene.size(), "object_count");
        FUZZ_CHECK(grids[0].entry_count() == e.entries, "entry_count is not the cells covered by small boxes");
        FUZZ_CHECK(view.large_count == large, "large_count differs from the oracle");
        for (uint32_t k = 0; k < view.large_count; ++k)
            FUZZ_CHECK(e.large[view.large_object[k]] && (k == 0 || view.large_object[k - 1] < view.large_object[k]),
                       "large_object list differs from the oracle");
        const std::vector<Pair> oracle = oracle_pairs(scene, e);
        const uint64_t total = oracle.size();
        for (int b = 0; b < 2; ++b) {
            check_pairs(grids[b], backends[b], oracle, total + 1);
            check_pairs(grids[b], backends[b], oracle, total == 0 ? 0 : in.below(static_cast<uint32_t>(total)));
            check_pairs(grids[b], backends[b], oracle, in.below(static_cast<uint32_t>(total + 2)));
            last[b].resize(total + 1);
            const PairResult r = grids[b].find_pairs(last[b].data(), last[b].size(), backends[b]);
            last[b].resize(r.written);
        }
        FUZZ_CHECK(
            last[0].size() == last[1].size() &&
                (last[0].empty() || std::memcmp(last[0].data(), last[1].data(), last[0].size() * sizeof(Pair)) == 0),
            "box pairs differ between backends");
        std::vector<Pair> with[2];
        const size_t before = static_cast<size_t>(in.byte());
        for (int b = 0; b < 2; ++b) {
            Input qi(data + std::min(before, size), size - std::min(before, size));
            check_pairs_with(grids[b], qi, scene, backends[b], &with[b]);
        }
        FUZZ_CHECK(
            with[0].size() == with[1].size() &&
                (with[0].empty() || std::memcmp(with[0].data(), with[1].data(), with[0].size() * sizeof(Pair)) == 0),
            "find_pairs_with differs between backends");
    }
    return 0;
}

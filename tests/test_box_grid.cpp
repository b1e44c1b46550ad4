// SPDX-License-Identifier: MIT
// BoxGrid against brute force: overlapping pairs (set and documented order),
// find_pairs_with, the view's cell table, every too-small buffer, capacity
// statuses with the previous frame intact, bad input with the lowest index,
// thread-count independence and golden hashes of fixed scenes.
//
// The oracle computes cells with std::floor over cell_key.h's scaled
// coordinate (test_support.h), independently of the library's key code, and
// derives the documented order itself: small-small pairs by the packed key of
// the cell holding max(a.min, b.min) then by (a, b) (entries of a cell ascend
// by object index); then large pairs by (large object, other object).
#include <doctest/doctest.h>

#include "golden_hashes.h"
#include "hashgrid/box_grid.h"
#include "hashgrid/grid.h"
#include "hashgrid_support/box_scene.h"
#include "pair_filter_rule.h"
#include "test_support.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::BoxGrid;
using hashgrid::BoxGridConfig;
using hashgrid::BoxGridView;
using hashgrid::OutOfBounds;
using hashgrid::PairResult;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::World;
using hashgrid_support::BoxScene;

namespace {

/// Scene-size factor from HASHGRID_TEST_SCALE (default 1; emulators use less).
double test_scale() {
    const char* text = std::getenv("HASHGRID_TEST_SCALE");
    if (text == nullptr) return 1.0;
    const double v = std::strtod(text, nullptr);
    return v > 0.0 ? v : 1.0;
}

uint32_t scaled_count(uint32_t n, uint32_t minimum = 1) {
    const auto v = static_cast<uint32_t>(static_cast<double>(n) * test_scale());
    return std::max(v, minimum);
}

// ---------------------------------------------------------------------------
// Oracle.

struct CellRange {
    int64_t lo[3] = {0, 0, 0};
    int64_t hi[3] = {0, 0, 0};
};

int64_t oracle_cell(const BoxGridConfig& c, uint32_t d, float p) {
    int64_t v = cell_coordinate(p, c.origin[d], c.cell_size);
    if (c.world == World::bounded && c.out_of_bounds == OutOfBounds::clamp)
        v = std::clamp<int64_t>(v, 0, int64_t{c.cell_counts[d]} - 1);
    return v;
}

/// Cell of a query coordinate: clamped into the valid range (box_grid_pairs.cpp).
int64_t oracle_query_cell(const BoxGridConfig& c, uint32_t d, float p) {
    const int64_t v = cell_coordinate(p, c.origin[d], c.cell_size);
    if (c.world == World::bounded) return std::clamp<int64_t>(v, 0, int64_t{c.cell_counts[d]} - 1);
    const int64_t limit = c.dimensions == 3 ? hashgrid::kKeyLimit3 : hashgrid::kKeyLimit2;
    return std::clamp<int64_t>(v, -limit, limit);
}

CellRange oracle_range(const BoxScene& s, const BoxGridConfig& c, uint32_t i) {
    CellRange r;
    for (uint32_t d = 0; d < s.dims; ++d) {
        r.lo[d] = oracle_cell(c, d, s.lo[d][i]);
        r.hi[d] = oracle_cell(c, d, s.hi[d][i]);
    }
    return r;
}

/// Unbounded worlds: a range reaching beyond the cell-key range (the grid
/// keeps such an object with the large ones, box_grid.h).
bool beyond_keys(const BoxGridConfig& c, const CellRange& r) {
    if (c.world == World::bounded) return false;
    const int64_t limit = c.dimensions == 3 ? hashgrid::kKeyLimit3 : hashgrid::kKeyLimit2;
    for (uint32_t d = 0; d < c.dimensions; ++d)
        if (r.lo[d] < -limit || r.hi[d] > limit) return true;
    return false;
}

uint64_t covered(const CellRange& r) {
    uint64_t v = 1;
    for (uint32_t d = 0; d < 3; ++d)
        v *= static_cast<uint64_t>(r.hi[d] - r.lo[d] + 1);
    return v;
}

uint64_t pack(uint32_t dims, const int64_t c[3]) {
    return dims == 3
               ? hashgrid::pack_key3(static_cast<int32_t>(c[0]), static_cast<int32_t>(c[1]), static_cast<int32_t>(c[2]))
               : hashgrid::pack_key2(static_cast<int32_t>(c[0]), static_cast<int32_t>(c[1]));
}

bool boxes_overlap(const BoxScene& s, uint32_t i, const BoxScene& t, uint32_t j) {
    for (uint32_t d = 0; d < s.dims; ++d)
        if (!(s.lo[d][i] <= t.hi[d][j] && t.lo[d][j] <= s.hi[d][i])) return false;
    return true;
}

bool layers_pass(uint32_t cat_a, uint32_t mask_a, uint32_t cat_b, uint32_t mask_b) {
    return (cat_a & mask_b) != 0 && (cat_b & mask_a) != 0;
}

/// Sort key of a pair in the documented order.
struct OrderKey {
    uint32_t group; // 0 small-small, 1 large
    uint64_t k1;
    uint32_t k2;
    uint32_t k3;
    bool operator<(const OrderKey& o) const {
        if (group != o.group) return group < o.group;
        if (k1 != o.k1) return k1 < o.k1;
        if (k2 != o.k2) return k2 < o.k2;
        return k3 < o.k3;
    }
};

struct Expected {
    std::vector<Pair> pairs; ///< In the documented order.
    uint64_t entries = 0;    ///< Entries of small objects.
    std::vector<uint32_t> large;
};

Expected expected_pairs(const BoxScene& s, const BoxGridConfig& c) {
    const uint32_t n = s.size();
    std::vector<CellRange> range(n);
    std::vector<bool> large(n);
    Expected e;
    for (uint32_t i = 0; i < n; ++i) {
        range[i] = oracle_range(s, c, i);
        large[i] = beyond_keys(c, range[i]) || covered(range[i]) > c.large_object_cells;
        if (large[i])
            e.large.push_back(i);
        else
            e.entries += covered(range[i]);
    }
    // Candidates by a sweep along x (exact: a pair overlapping on x is met
    // from whichever of the two has the lower (min x, index)).
    std::vector<uint32_t> by_x(n);
    for (uint32_t i = 0; i < n; ++i)
        by_x[i] = i;
    std::sort(by_x.begin(), by_x.end(),
              [&](uint32_t a, uint32_t b) { return s.lo[0][a] != s.lo[0][b] ? s.lo[0][a] < s.lo[0][b] : a < b; });
    std::vector<Pair> candidates;
    for (uint32_t k = 0; k < n; ++k)
        for (uint32_t m = k + 1; m < n && s.lo[0][by_x[m]] <= s.hi[0][by_x[k]]; ++m)
            candidates.push_back(Pair{std::min(by_x[k], by_x[m]), std::max(by_x[k], by_x[m])});
    std::vector<std::pair<OrderKey, Pair>> keyed;
    for (const Pair& p : candidates) {
        const uint32_t i = p.a;
        const uint32_t j = p.b;
        if (!boxes_overlap(s, i, s, j) || !layers_pass(s.cat(i), s.msk(i), s.cat(j), s.msk(j))) continue;
        OrderKey k{};
        if (!large[i] && !large[j]) {
            int64_t cell[3];
            for (uint32_t d = 0; d < 3; ++d)
                cell[d] = std::max(range[i].lo[d], range[j].lo[d]);
            k = OrderKey{0, pack(s.dims, cell), i, j};
        } else if (large[i]) {
            k = OrderKey{1, i, j, 0}; // i < j: the lower large object reports large-large pairs
        } else {
            k = OrderKey{1, j, i, 0};
        }
        keyed.emplace_back(k, Pair{i, j});
    }
    std::sort(keyed.begin(), keyed.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
    for (const auto& kp : keyed)
        e.pairs.push_back(kp.second);
    return e;
}

/// find_pairs_with's documented order: per query, objects in cells by the
/// reporting cell's key then index, then large objects by index.
std::vector<Pair> expected_query_pairs(const BoxScene& s, const BoxGridConfig& c, const BoxScene& q) {
    std::vector<Pair> out;
    const uint32_t n = s.size();
    std::vector<CellRange> range(n);
    std::vector<bool> large(n);
    for (uint32_t i = 0; i < n; ++i) {
        range[i] = oracle_range(s, c, i);
        large[i] = beyond_keys(c, range[i]) || covered(range[i]) > c.large_object_cells;
    }
    for (uint32_t k = 0; k < q.size(); ++k) {
        int64_t q_lo[3] = {0, 0, 0};
        for (uint32_t d = 0; d < s.dims; ++d)
            q_lo[d] = oracle_query_cell(c, d, q.lo[d][k]);
        std::vector<std::pair<OrderKey, uint32_t>> keyed;
        for (uint32_t i = 0; i < n; ++i) {
            if (!boxes_overlap(q, k, s, i) || !layers_pass(q.cat(k), q.msk(k), s.cat(i), s.msk(i))) continue;
            if (large[i]) {
                keyed.emplace_back(OrderKey{1, i, 0, 0}, i);
                continue;
            }
            int64_t cell[3];
            for (uint32_t d = 0; d < 3; ++d)
                cell[d] = std::max(q_lo[d], range[i].lo[d]);
            keyed.emplace_back(OrderKey{0, pack(s.dims, cell), i, 0}, i);
        }
        std::sort(keyed.begin(), keyed.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
        for (const auto& kp : keyed)
            out.push_back(Pair{k, kp.second});
    }
    return out;
}

// ---------------------------------------------------------------------------
// Grids on caller memory.

struct OwnedBoxGrid {
    std::unique_ptr<BoxGrid> grid = std::make_unique<BoxGrid>();
    void* memory = nullptr;
    Status init_status;
    OwnedBoxGrid() = default;
    OwnedBoxGrid(const OwnedBoxGrid&) = delete;
    OwnedBoxGrid& operator=(const OwnedBoxGrid&) = delete;
    ~OwnedBoxGrid() {
        grid.reset();
        hashgrid::aligned_free_bytes(memory);
    }
    BoxGrid* operator->() { return grid.get(); }
    BoxGrid& operator*() { return *grid; }
};

/// A grid on a block filled with `fill` first (reads of uninitialised memory show up as differences).
std::unique_ptr<OwnedBoxGrid> make_box_grid(const BoxGridConfig& config, uint8_t fill = 0xA5) {
    auto owned = std::make_unique<OwnedBoxGrid>();
    const hashgrid::MemoryRequirements req = BoxGrid::memory_requirements(config);
    if (!req.status.ok()) {
        owned->init_status = req.status;
        return owned;
    }
    owned->memory = hashgrid::aligned_alloc_bytes(req.bytes, req.alignment);
    if (owned->memory != nullptr) std::memset(owned->memory, fill, static_cast<size_t>(req.bytes));
    owned->init_status = owned->grid->init(config, owned->memory, static_cast<size_t>(req.bytes));
    return owned;
}

struct PairRun {
    PairResult result;
    std::vector<Pair> pairs; ///< The written prefix.
};

PairRun run_pairs(BoxGrid& grid, const hashgrid::ThreadBackend& b, uint64_t capacity) {
    PairRun r;
    r.pairs.resize(static_cast<size_t>(std::max<uint64_t>(capacity, 1)));
    r.result = grid.find_pairs(capacity > 0 ? r.pairs.data() : nullptr, capacity, b);
    r.pairs.resize(static_cast<size_t>(r.result.written));
    return r;
}

PairRun run_query_pairs(BoxGrid& grid, const BoxScene& q, const hashgrid::ThreadBackend& b, uint64_t capacity) {
    PairRun r;
    r.pairs.resize(static_cast<size_t>(std::max<uint64_t>(capacity, 1)));
    r.result = grid.find_pairs_with(q.spans(), capacity > 0 ? r.pairs.data() : nullptr, capacity, b);
    r.pairs.resize(static_cast<size_t>(r.result.written));
    return r;
}

/// Exact pair count of find_pairs_with (a call with no buffer).
uint64_t query_count(BoxGrid& grid, const BoxScene& q) {
    return grid.find_pairs_with(q.spans(), nullptr, 0, hashgrid::serial_backend()).total;
}

uint64_t hash_view(const BoxGrid& grid) {
    const BoxGridView v = grid.view();
    Fnv1a h;
    h.u32(v.object_count);
    h.u32(v.cell_count);
    for (uint32_t c = 0; c < v.cell_count; ++c) {
        h.u64(v.cell_key[c]);
        h.u32(v.cell_start[c]);
    }
    h.u32(v.cell_start[v.cell_count]);
    for (uint32_t e = 0; e < v.cell_start[v.cell_count]; ++e)
        h.u32(v.entry_object[e]);
    h.u32(v.large_count);
    for (uint32_t k = 0; k < v.large_count; ++k)
        h.u32(v.large_object[k]);
    return h.value();
}

/// The view describes exactly the oracle's cells, entries and large objects.
std::string check_view(const BoxGrid& grid, const BoxScene& s, const BoxGridConfig& c) {
    const BoxGridView v = grid.view();
    const uint32_t n = s.size();
    if (v.object_count != n) return "object_count";
    if (v.config != &grid.config()) return "config pointer";
    if (v.scale != hashgrid::key_scale(c.cell_size)) return "scale";
    // Expected (key, object) entries, sorted by key then object.
    std::vector<std::pair<uint64_t, uint32_t>> entries;
    std::vector<uint32_t> large;
    for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t d = 0; d < s.dims; ++d) {
            if (float_bits(v.min[d][i]) != float_bits(s.lo[d][i])) return "min copy";
            if (float_bits(v.max[d][i]) != float_bits(s.hi[d][i])) return "max copy";
        }
        if (v.category[i] != s.cat(i) || v.mask[i] != s.msk(i)) return "layer copy";
        const CellRange r = oracle_range(s, c, i);
        if (covered(r) > c.large_object_cells) {
            large.push_back(i);
            continue;
        }
        int64_t cell[3];
        for (cell[2] = r.lo[2]; cell[2] <= r.hi[2]; ++cell[2])
            for (cell[1] = r.lo[1]; cell[1] <= r.hi[1]; ++cell[1])
                for (cell[0] = r.lo[0]; cell[0] <= r.hi[0]; ++cell[0])
                    entries.emplace_back(pack(s.dims, cell), i);
    }
    std::sort(entries.begin(), entries.end());
    if (grid.entry_count() != entries.size()) return "entry_count " + std::to_string(grid.entry_count());
    if (v.large_count != large.size()) return "large_count";
    for (size_t k = 0; k < large.size(); ++k)
        if (v.large_object[k] != large[k]) return "large_object[" + std::to_string(k) + "]";
    if (v.cell_start[0] != 0) return "cell_start[0]";
    size_t at = 0;
    for (uint32_t cell = 0; cell < v.cell_count; ++cell) {
        if (v.cell_start[cell + 1] <= v.cell_start[cell]) return "empty cell " + std::to_string(cell);
        if (cell > 0 && v.cell_key[cell] <= v.cell_key[cell - 1]) return "cell keys not ascending";
        for (uint32_t e = v.cell_start[cell]; e < v.cell_start[cell + 1]; ++e, ++at) {
            if (at >= entries.size()) return "too many entries";
            if (entries[at].first != v.cell_key[cell] || entries[at].second != v.entry_object[e])
                return "entry " + std::to_string(e) + " mismatch";
        }
    }
    if (at != entries.size()) return "entries missing";
    return "";
}

// ---------------------------------------------------------------------------
// Random scenes.

struct BoxCase {
    BoxScene scene;
    BoxGridConfig config;
    std::string label;
};

/// Box edge as a multiple of the cell: mostly around 1, some tiny or zero, a few long.
float edge_factor(Rng& rng) {
    static const float kFactors[] = {0.0f, 0.001f, 0.05f, 0.25f, 0.5f, 0.75f, 1.0f, 1.0f,
                                     1.0f, 1.25f,  1.5f,  2.0f,  3.0f, 5.0f,  8.0f, 20.0f};
    return kFactors[rng.below(16)];
}

const char* const kKindNames[] = {"mixed", "lattice", "tiny", "spanning", "far-negative", "half-lattice"};
constexpr uint32_t kKinds = 6;

BoxCase random_case(uint64_t seed, uint32_t n_base) {
    Rng rng(seed * 0x9e3779b97f4a7c15ull + 101);
    BoxCase bc;
    BoxScene& s = bc.scene;
    BoxGridConfig& c = bc.config;
    const uint32_t kind = static_cast<uint32_t>(seed % kKinds);
    s.dims = rng.coin() ? 3u : 2u;
    c.dimensions = s.dims;
    static const float kCells[] = {1.0f, 0.5f, 2.0f, 0.25f, 1.5f, 4.0f};
    c.cell_size = (kind == 1 || kind == 5) ? 1.0f : kCells[rng.below(6)];
    const uint32_t n = n_base / 2 + rng.below(n_base);
    float centre[3] = {0.0f, 0.0f, 0.0f};
    if (kind == 4)
        for (float& v : centre)
            v = -1000.0f - static_cast<float>(rng.below(1000));
    // Half the side of the scene in cells, from a density of boxes per cell.
    static const uint32_t kCellsPerBox[] = {1, 2, 5, 20, 60};
    const uint64_t area = uint64_t{n} * kCellsPerBox[rng.below(5)];
    uint64_t side = 2;
    while ((s.dims == 3 ? side * side * side : side * side) < area)
        ++side;
    const float extent = c.cell_size * static_cast<float>(side / 2);
    for (uint32_t i = 0; i < n; ++i) {
        float mn[3] = {0.0f, 0.0f, 0.0f};
        float mx[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t d = 0; d < s.dims; ++d) {
            if (kind == 1 || kind == 5) {
                // Integer (or half-integer) corners on cell boundaries: faces,
                // edges and corners touch exactly.
                const float step = kind == 1 ? 1.0f : 0.5f;
                const int32_t a = rng.between(-8, 8);
                const int32_t len = rng.between(0, 3);
                mn[d] = static_cast<float>(a) * step;
                mx[d] = static_cast<float>(a + len) * step;
            } else if (kind == 2) {
                // Few distinct points: duplicates and zero-size boxes touching exactly.
                mn[d] = centre[d] + rounded_mul(static_cast<float>(rng.between(-6, 6)), c.cell_size * 0.5f);
                mx[d] = mn[d] + (rng.coin() ? 0.0f : rounded_mul(c.cell_size, 0.01f));
            } else {
                // One RNG call per statement: argument evaluation order is unspecified.
                const float factor = edge_factor(rng);
                const float jitter = rng.uniform(0.5f, 1.5f);
                const float e = rounded_mul(rounded_mul(c.cell_size, factor), jitter);
                mn[d] = centre[d] + rng.uniform(-extent, extent);
                mx[d] = mn[d] + e;
            }
        }
        if (kind == 3 && rng.below(n / 4 + 1) == 0) // about four per scene
            for (uint32_t d = 0; d < s.dims; ++d) {
                mn[d] = centre[d] - rounded_mul(1.5f, extent);
                mx[d] = centre[d] + rounded_mul(1.5f, extent);
            }
        s.add(mn, mx);
    }
    if (rng.below(3) == 0) {
        s.category.resize(n);
        s.mask.resize(n);
        for (uint32_t i = 0; i < n; ++i) {
            s.category[i] = 1u << rng.below(4);
            s.mask[i] = rng.below(16);
        }
        if (rng.coin()) s.mask.clear(); // categories only
    }
    static const uint32_t kLarge[] = {1, 2, 8, 64, 1000000};
    // Tiny thresholds make most objects large (N tests each): small scenes only.
    c.large_object_cells = kLarge[n > 2000 ? 2 + rng.below(3) : rng.below(5)];

    // Scene bounds for the world.
    float lo[3] = {0.0f, 0.0f, 0.0f};
    float hi[3] = {0.0f, 0.0f, 0.0f};
    for (uint32_t d = 0; d < s.dims; ++d) {
        lo[d] = *std::min_element(s.lo[d].begin(), s.lo[d].end());
        hi[d] = *std::max_element(s.hi[d].begin(), s.hi[d].end());
    }
    const uint32_t world = rng.below(3);
    if (world == 0) {
        c.world = World::unbounded;
        for (uint32_t d = 0; d < s.dims; ++d)
            c.origin[d] = rng.coin() ? 0.0f : rng.uniform(-3.0f, 3.0f);
    } else {
        c.world = World::bounded;
        c.out_of_bounds = world == 1 ? OutOfBounds::reject : OutOfBounds::clamp;
        for (uint32_t d = 0; d < s.dims; ++d) {
            if (world == 1) {
                c.origin[d] = lo[d] - (rng.coin() ? 0.0f : c.cell_size);
                c.cell_counts[d] = static_cast<uint32_t>(cell_coordinate(hi[d], c.origin[d], c.cell_size) + 1 +
                                                         static_cast<int64_t>(rng.below(3)));
            } else {
                // A world smaller than the scene: boxes reach out on both sides.
                c.origin[d] = lo[d] + rounded_mul(hi[d] - lo[d], 0.25f);
                c.cell_counts[d] = 1 + rng.below(8);
            }
        }
    }
    const Expected e = expected_pairs(s, c);
    c.max_objects = n + rng.below(4);
    c.max_cell_entries = static_cast<uint32_t>(std::max<uint64_t>(e.entries, 1) + rng.below(16));
    c.max_pairs = e.pairs.size() + rng.below(64);
    bc.label = std::string(kKindNames[kind]) + (s.dims == 3 ? " 3D " : " 2D ") +
               (world == 0 ? "unbounded" : (world == 1 ? "reject" : "clamp")) + " seed " + std::to_string(seed) +
               " n " + std::to_string(n) + " cell " + std::to_string(c.cell_size) + " large " +
               std::to_string(c.large_object_cells);
    return bc;
}

/// Random query boxes around a scene: small, large, zero-size, reaching outside the world.
BoxScene random_queries(Rng& rng, const BoxScene& s, uint32_t count) {
    BoxScene q;
    q.dims = s.dims;
    float lo[3] = {0.0f, 0.0f, 0.0f};
    float hi[3] = {0.0f, 0.0f, 0.0f};
    for (uint32_t d = 0; d < s.dims; ++d) {
        lo[d] = *std::min_element(s.lo[d].begin(), s.lo[d].end());
        hi[d] = *std::max_element(s.hi[d].begin(), s.hi[d].end());
    }
    for (uint32_t k = 0; k < count; ++k) {
        float mn[3] = {0.0f, 0.0f, 0.0f};
        float mx[3] = {0.0f, 0.0f, 0.0f};
        const uint32_t kind = rng.below(6);
        for (uint32_t d = 0; d < s.dims; ++d) {
            const float span = hi[d] - lo[d] + 1.0f;
            if (kind == 0) { // everything and more
                mn[d] = lo[d] - span;
                mx[d] = hi[d] + span;
            } else if (kind == 1) { // a copy of an object's box
                const uint32_t i = rng.below(s.size());
                mn[d] = s.lo[d][i];
                mx[d] = s.hi[d][i];
            } else if (kind == 2) { // far outside
                mn[d] = hi[d] + rounded_mul(span, 3.0f);
                mx[d] = mn[d] + 1.0f;
            } else {
                mn[d] = rng.uniform(lo[d] - 2.0f, hi[d] + 2.0f);
                mx[d] = mn[d] + (kind == 3 ? 0.0f : rounded_mul(span, rng.uniform(0.0f, 0.3f)));
            }
        }
        q.add(mn, mx);
    }
    if (rng.coin()) {
        q.category.resize(count);
        q.mask.resize(count);
        for (uint32_t k = 0; k < count; ++k) {
            q.category[k] = 1u << rng.below(4);
            q.mask[k] = rng.below(16);
        }
    }
    return q;
}

/// Unit cells, large above 64 covered cells, room for the scene's objects
/// (entries and pairs left to the test).
BoxGridConfig unit_cell_config(const BoxScene& scene) {
    BoxGridConfig c;
    c.dimensions = scene.dims;
    c.cell_size = 1.0f;
    c.max_objects = scene.size();
    c.large_object_cells = 64;
    return c;
}

std::string check_run(const PairRun& run, const std::vector<Pair>& expected) {
    if (!run.result.status.ok()) return std::string("status ") + hashgrid::to_string(run.result.status.code);
    if (run.result.total != expected.size())
        return "total " + std::to_string(run.result.total) + " expected " + std::to_string(expected.size());
    return diff_pairs(expected, run.pairs.data(), run.pairs.size());
}

/// Pairs in `pairs` that name `object`.
uint64_t pairs_of(const std::vector<Pair>& pairs, uint32_t object) {
    return static_cast<uint64_t>(
        std::count_if(pairs.begin(), pairs.end(), [&](const Pair& p) { return p.a == object || p.b == object; }));
}

} // namespace

// ---------------------------------------------------------------------------

TEST_CASE("config validation and memory") {
    BoxGridConfig c;
    c.max_objects = 10;
    c.max_cell_entries = 100;
    c.max_pairs = 100;
    CHECK(BoxGrid::validate(c).ok());
    const hashgrid::MemoryRequirements req = BoxGrid::memory_requirements(c);
    REQUIRE(req.status.ok());
    CHECK(req.bytes > 0);
    CHECK(req.alignment == 64);

    auto bad = [&](auto edit) {
        BoxGridConfig b = c;
        edit(b);
        return BoxGrid::validate(b).code == StatusCode::invalid_config &&
               BoxGrid::memory_requirements(b).status.code == StatusCode::invalid_config;
    };
    CHECK(bad([](BoxGridConfig& b) { b.dimensions = 4; }));
    CHECK(bad([](BoxGridConfig& b) { b.cell_size = 0.0f; }));
    CHECK(bad([](BoxGridConfig& b) { b.cell_size = std::numeric_limits<float>::quiet_NaN(); }));
    CHECK(bad([](BoxGridConfig& b) { b.origin[1] = std::numeric_limits<float>::infinity(); }));
    CHECK(bad([](BoxGridConfig& b) { b.max_objects = 0; }));
    CHECK(bad([](BoxGridConfig& b) { b.max_objects = 1u << 31; }));
    CHECK(bad([](BoxGridConfig& b) { b.max_cell_entries = 0; }));
    CHECK(bad([](BoxGridConfig& b) { b.max_pairs = uint64_t{1} << 40; }));
    CHECK(bad([](BoxGridConfig& b) { b.large_object_cells = 0; }));
    CHECK(bad([](BoxGridConfig& b) { b.world = World::bounded; }));
    CHECK(bad([](BoxGridConfig& b) {
        b.world = World::bounded;
        b.cell_counts[0] = 1u << 20;
        b.cell_counts[1] = b.cell_counts[2] = 1;
    }));
    CHECK(bad([](BoxGridConfig& b) {
        b.world = World::bounded;
        b.cell_counts[0] = b.cell_counts[1] = b.cell_counts[2] = 2000;
    }));

    // init: too small, misaligned, then fine.
    BoxGrid g;
    void* block = hashgrid::aligned_alloc_bytes(req.bytes + 64, 64);
    Status s = g.init(c, block, static_cast<size_t>(req.bytes - 1));
    CHECK(s.code == StatusCode::memory_too_small);
    CHECK(s.needed == req.bytes);
    s = g.init(c, static_cast<unsigned char*>(block) + 4, static_cast<size_t>(req.bytes));
    CHECK(s.code == StatusCode::memory_misaligned);
    CHECK(!g.initialized());
    s = g.init(c, block, static_cast<size_t>(req.bytes));
    CHECK(s.ok());
    CHECK(g.initialized());
    Pair p[4];
    const PairResult r = g.find_pairs(p, 4, hashgrid::serial_backend());
    CHECK(r.status.code == StatusCode::not_built);
    CHECK(g.view().object_count == 0);
    CHECK(g.view().cell_count == 0);
    hashgrid::aligned_free_bytes(block);

    BoxGrid owned;
    CHECK(owned.init_allocate(c).ok());
    CHECK(owned.init_allocate(c).ok()); // re-init frees the first block
}

TEST_CASE("hand-made: touching faces, edges and corners on cell boundaries") {
    for (uint32_t world = 0; world < 2; ++world) {
        BoxScene s;
        s.dims = 3;
        s.add_box(0, 0, 0, 1, 1, 1);                   // 0
        s.add_box(1, 0, 0, 2, 1, 1);                   // 1: face with 0
        s.add_box(1, 1, 0, 2, 2, 1);                   // 2: edge with 0, face with 1
        s.add_box(1, 1, 1, 2, 2, 2);                   // 3: corner with 0
        s.add_box(2.5f, 0, 0, 3, 1, 1);                // 4: apart from 1 (gap)
        s.add_box(0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f); // 5: a point inside 0
        s.add_box(-3, -3, -3, 5, 5, 5);                // 6: covers everything
        BoxGridConfig c;
        c.cell_size = 1.0f;
        c.max_objects = 16;
        c.max_cell_entries = 1000;
        c.max_pairs = 100;
        c.large_object_cells = 64; // object 6 covers 9^3 cells: large
        if (world == 1) {
            c.world = World::bounded;
            c.origin[0] = c.origin[1] = c.origin[2] = -4.0f;
            c.cell_counts[0] = c.cell_counts[1] = c.cell_counts[2] = 12;
        }
        auto g = make_box_grid(c);
        REQUIRE(g->init_status.ok());
        REQUIRE((*g)->rebuild(s.spans(), hashgrid::serial_backend()).ok());
        const PairRun run = run_pairs(**g, hashgrid::serial_backend(), 100);
        const Expected e = expected_pairs(s, c);
        INFO("world " << world);
        CHECK(check_run(run, e.pairs) == "");
        // Hand-checked set: 0-1, 0-2, 0-3, 0-5, 1-2, 1-3, 2-3, and 6 with all.
        std::vector<Pair> set = as_set(run.pairs.data(), run.pairs.size());
        const std::vector<Pair> want = {{0, 1}, {0, 2}, {0, 3}, {0, 5}, {0, 6}, {1, 2}, {1, 3},
                                        {1, 6}, {2, 3}, {2, 6}, {3, 6}, {4, 6}, {5, 6}};
        CHECK(diff_pairs(want, set.data(), set.size()) == "");
        // The large pairs come last, in object order.
        REQUIRE(run.pairs.size() == want.size());
        CHECK(run.pairs[run.pairs.size() - 6].a == 0);
        CHECK(run.pairs[run.pairs.size() - 6].b == 6);
        CHECK(check_view(**g, s, c) == "");
    }
}

TEST_CASE("random scenes: pairs and view against brute force, serial") {
    const uint32_t scenes = scaled_count(240, 12);
    uint64_t total_pairs = 0;
    for (uint64_t seed = 0; seed < scenes; ++seed) {
        const BoxCase bc = random_case(seed, 300);
        INFO(bc.label);
        auto g = make_box_grid(bc.config);
        REQUIRE(g->init_status.ok());
        const Status st = (*g)->rebuild(bc.scene.spans(), hashgrid::serial_backend());
        REQUIRE(st.ok());
        CHECK(check_view(**g, bc.scene, bc.config) == "");
        const Expected e = expected_pairs(bc.scene, bc.config);
        const PairRun run = run_pairs(**g, hashgrid::serial_backend(), e.pairs.size() + 3);
        CHECK(check_run(run, e.pairs) == "");
        total_pairs += e.pairs.size();
    }
    MESSAGE("pairs checked: " << total_pairs);
}

TEST_CASE("random scenes: the same bytes for every thread count") {
    ParallelBackend b1(1), b2(2), b3(3), b4(4), b8(8), b16(16);
    const hashgrid::ThreadBackend backends[] = {b1.backend(), b2.backend(), b3.backend(),
                                                b4.backend(), b8.backend(), b16.backend()};
    const uint32_t scenes = scaled_count(12, 4);
    for (uint64_t seed = 1000; seed < 1000 + scenes; ++seed) {
        // Bigger scenes: several chunks per pass.
        const BoxCase bc = random_case(seed, seed % 3 == 0 ? 5000 : 1200);
        INFO(bc.label);
        auto g = make_box_grid(bc.config);
        REQUIRE(g->init_status.ok());
        REQUIRE((*g)->rebuild(bc.scene.spans(), hashgrid::serial_backend()).ok());
        const uint64_t view_hash = hash_view(**g);
        const PairRun serial = run_pairs(**g, hashgrid::serial_backend(), bc.config.max_pairs);
        REQUIRE(serial.result.status.ok());
        if (bc.scene.size() <= 3000) CHECK(check_run(serial, expected_pairs(bc.scene, bc.config).pairs) == "");
        Rng rng(seed);
        const BoxScene q = random_queries(rng, bc.scene, 200);
        const PairRun serial_q = run_query_pairs(**g, q, hashgrid::serial_backend(), query_count(**g, q));
        REQUIRE(serial_q.result.status.ok());
        for (const hashgrid::ThreadBackend& b : backends) {
            INFO("workers " << b.worker_count);
            REQUIRE((*g)->rebuild(bc.scene.spans(), b).ok());
            CHECK(hash_view(**g) == view_hash);
            const PairRun run = run_pairs(**g, b, bc.config.max_pairs);
            CHECK(diff_pairs(serial.pairs, run.pairs.data(), run.pairs.size()) == "");
            const PairRun run_q = run_query_pairs(**g, q, b, serial_q.pairs.size());
            CHECK(diff_pairs(serial_q.pairs, run_q.pairs.data(), run_q.pairs.size()) == "");
        }
    }
}

TEST_CASE("find_pairs_with against brute force") {
    const uint32_t scenes = scaled_count(120, 8);
    ParallelBackend b3(3);
    for (uint64_t seed = 5000; seed < 5000 + scenes; ++seed) {
        const BoxCase bc = random_case(seed, 300);
        INFO(bc.label);
        auto g = make_box_grid(bc.config);
        REQUIRE(g->init_status.ok());
        REQUIRE((*g)->rebuild(bc.scene.spans(), hashgrid::serial_backend()).ok());
        Rng rng(seed ^ 0x5555);
        const BoxScene q = random_queries(rng, bc.scene, 40 + rng.below(100));
        const std::vector<Pair> expected = expected_query_pairs(bc.scene, bc.config, q);
        const hashgrid::ThreadBackend b = seed % 2 == 0 ? hashgrid::serial_backend() : b3.backend();
        const PairRun run = run_query_pairs(**g, q, b, expected.size() + 1);
        CHECK(check_run(run, expected) == "");
        // Too-small buffers: an exact prefix.
        const uint64_t cap = expected.size() / 2;
        const PairRun half = run_query_pairs(**g, q, b, cap);
        if (cap < expected.size()) {
            CHECK(half.result.status.code == StatusCode::output_too_small);
            CHECK(half.result.status.needed == expected.size());
        }
        CHECK(half.result.total == expected.size());
        CHECK(half.result.written == cap);
        CHECK(diff_pairs(std::vector<Pair>(expected.begin(), expected.begin() + static_cast<ptrdiff_t>(cap)),
                         half.pairs.data(), half.pairs.size()) == "");
    }
}

TEST_CASE("every too-small buffer gets the exact prefix") {
    ParallelBackend b2(2);
    for (uint64_t seed = 7000; seed < 7000 + scaled_count(12, 3); ++seed) {
        BoxCase bc = random_case(seed, 60);
        auto g = make_box_grid(bc.config);
        REQUIRE((*g)->rebuild(bc.scene.spans(), hashgrid::serial_backend()).ok());
        const std::vector<Pair> expected = expected_pairs(bc.scene, bc.config).pairs;
        INFO(bc.label << " pairs " << expected.size());
        for (uint64_t cap = 0; cap <= expected.size(); ++cap) {
            const PairRun run = run_pairs(**g, seed % 2 == 0 ? hashgrid::serial_backend() : b2.backend(), cap);
            CHECK(run.result.total == expected.size());
            CHECK(run.result.written == cap);
            CHECK(run.result.status.code == (cap < expected.size() ? StatusCode::output_too_small : StatusCode::ok));
            if (cap < expected.size()) CHECK(run.result.status.needed == expected.size());
            CHECK(diff_pairs(std::vector<Pair>(expected.begin(), expected.begin() + static_cast<ptrdiff_t>(cap)),
                             run.pairs.data(), run.pairs.size()) == "");
        }
    }
}

TEST_CASE("capacities: objects, entries and pairs, previous frame intact") {
    ParallelBackend b4(4);
    const BoxCase bc = random_case(3, 400); // mixed sizes
    const BoxCase other = random_case(9, 400);
    BoxGridConfig c = bc.config;
    const Expected e = expected_pairs(bc.scene, c);
    REQUIRE(e.entries > 10);
    c.max_cell_entries = static_cast<uint32_t>(e.entries);
    c.max_objects = bc.scene.size();
    auto g = make_box_grid(c);
    REQUIRE((*g)->rebuild(bc.scene.spans(), b4.backend()).ok());
    const uint64_t view_hash = hash_view(**g);

    // One more object than max_objects.
    BoxScene more = bc.scene;
    more.add_box(0, 0, 0, 0, 0, 0);
    if (!more.category.empty()) more.category.push_back(1);
    if (!more.mask.empty()) more.mask.push_back(1);
    Status s = (*g)->rebuild(more.spans(), b4.backend());
    CHECK(s.code == StatusCode::object_capacity);
    CHECK(s.needed == more.size());
    CHECK(hash_view(**g) == view_hash);
    CHECK(check_run(run_pairs(**g, b4.backend(), e.pairs.size()), e.pairs) == "");

    // One entry too many: grow one small box by a cell where it stays small.
    BoxGridConfig tight = c;
    tight.max_cell_entries = static_cast<uint32_t>(e.entries - 1);
    auto t = make_box_grid(tight);
    REQUIRE(t->init_status.ok());
    s = (*t)->rebuild(bc.scene.spans(), b4.backend());
    CHECK(s.code == StatusCode::entry_capacity);
    CHECK(s.needed == e.entries);
    CHECK((*t)->find_pairs(nullptr, 0, b4.backend()).status.code == StatusCode::not_built);

    // A valid frame, then an entry overflow keeps it.
    BoxScene small;
    small.dims = bc.scene.dims;
    small.add_box(0, 0, 0, 0.1f, 0.1f, 0.1f);
    small.add_box(0.05f, 0.05f, 0.05f, 0.2f, 0.2f, 0.2f);
    REQUIRE((*t)->rebuild(small.spans(), b4.backend()).ok());
    const uint64_t small_hash = hash_view(**t);
    s = (*t)->rebuild(bc.scene.spans(), b4.backend());
    CHECK(s.code == StatusCode::entry_capacity);
    CHECK(s.needed == e.entries);
    CHECK(hash_view(**t) == small_hash);
    const PairRun kept = run_pairs(**t, b4.backend(), 4);
    CHECK(kept.result.status.ok());
    CHECK(kept.result.total == 1);

    // Pair capacity: exact count, an exact prefix of min(capacity, max_pairs).
    const Expected eo = expected_pairs(other.scene, other.config);
    REQUIRE(eo.pairs.size() > 20);
    const uint64_t total = eo.pairs.size();
    for (const uint64_t max_pairs : {uint64_t{0}, uint64_t{1}, uint64_t{7}, total / 2, total - 1, total}) {
        BoxGridConfig pc = other.config;
        pc.max_pairs = max_pairs;
        auto pg = make_box_grid(pc);
        REQUIRE((*pg)->rebuild(other.scene.spans(), b4.backend()).ok());
        for (const uint64_t cap : {uint64_t{0}, uint64_t{3}, total}) {
            INFO("max_pairs " << max_pairs << " capacity " << cap);
            const PairRun run = run_pairs(**pg, b4.backend(), cap);
            CHECK(run.result.total == eo.pairs.size());
            const uint64_t limit = std::min(cap, std::min<uint64_t>(max_pairs, eo.pairs.size()));
            if (max_pairs < eo.pairs.size()) {
                CHECK(run.result.status.code == StatusCode::pair_capacity);
                CHECK(run.result.status.needed == eo.pairs.size());
            } else {
                CHECK(run.result.status.code ==
                      (cap < eo.pairs.size() ? StatusCode::output_too_small : StatusCode::ok));
            }
            CHECK(run.result.written == limit);
            CHECK(diff_pairs(std::vector<Pair>(eo.pairs.begin(), eo.pairs.begin() + static_cast<ptrdiff_t>(limit)),
                             run.pairs.data(), run.pairs.size()) == "");
        }
    }
}

TEST_CASE("a tight pair pool: chunks that run out are searched again") {
    // Many cells with a few pairs each, max_pairs == the exact count: the pool
    // has little slack, so many chunks overflow it and are re-run while publishing.
    ParallelBackend b2(2);
    Rng rng(77);
    BoxScene s;
    s.dims = 2;
    const uint32_t n = scaled_count(20000, 4000);
    uint32_t side = 1; // about 8 cells per box: ~n / 16 pairs
    while (side * side < 8 * n)
        ++side;
    for (uint32_t i = 0; i < n; ++i) {
        const auto x = static_cast<float>(rng.below(side));
        const auto y = static_cast<float>(rng.below(side));
        s.add_box(x + 0.1f, y + 0.1f, 0, x + 0.6f, y + 0.6f, 0);
    }
    BoxGridConfig c;
    c.dimensions = 2;
    c.cell_size = 1.0f;
    c.max_objects = n;
    c.max_cell_entries = n;
    const Expected e = expected_pairs(s, c);
    REQUIRE(e.pairs.size() > n / 32);
    c.max_pairs = e.pairs.size();
    auto g = make_box_grid(c);
    REQUIRE((*g)->rebuild(s.spans(), b2.backend()).ok());
    CHECK(check_run(run_pairs(**g, b2.backend(), e.pairs.size()), e.pairs) == "");
    CHECK(check_run(run_pairs(**g, reverse_order_backend(2), e.pairs.size()), e.pairs) == "");
    CHECK(check_run(run_pairs(**g, hashgrid::serial_backend(), e.pairs.size()), e.pairs) == "");
}

TEST_CASE("chunks run last to first: the large objects' chunks that find the pool spent write their batches straight "
          "into the buffer") {
    // All pairs here are large-object pairs (the small boxes touch none of
    // each other), which come last in the order, in chunks of about 16 large
    // objects, through the coarse grids. The pool holds max_pairs plus a block
    // per chunk, about 35k pairs at max_pairs 1000, against some 75k pairs: run
    // last chunk first, the late chunks fill the pool and the first ones, whose
    // pairs the output wants, run out and are searched again while publishing,
    // their batches of pairs written straight into the buffer. (Serial: one
    // worker, every chunk in order straight into the buffer.)
    const hashgrid::ThreadBackend reverse = reverse_order_backend(2);
    ParallelBackend b2(2);
    for (uint32_t dims = 2; dims <= 3; ++dims) {
        Rng rng(0x2e7e25e0u + dims);
        BoxScene scene;
        scene.dims = dims;
        const uint32_t side = dims == 3 ? 12 : 40; // small boxes: one per cell of the scene's grid
        const uint32_t small = dims == 3 ? side * side * side : side * side;
        for (uint32_t i = 0; i < small; ++i) {
            const float at[3] = {static_cast<float>(i % side), static_cast<float>(i / side % side),
                                 static_cast<float>(i / side / side)};
            float mn[3] = {0.0f, 0.0f, 0.0f}, mx[3] = {0.0f, 0.0f, 0.0f};
            for (uint32_t d = 0; d < dims; ++d) {
                mn[d] = at[d] + 0.2f;
                mx[d] = at[d] + 0.5f;
            }
            scene.add(mn, mx);
        }
        const float edge = dims == 3 ? 5.0f : 14.0f; // 216 or 225 cells: large at 64
        for (uint32_t i = 0; i < 300; ++i) {
            float mn[3] = {0.0f, 0.0f, 0.0f}, mx[3] = {0.0f, 0.0f, 0.0f};
            for (uint32_t d = 0; d < dims; ++d) {
                mn[d] = rng.uniform(0.0f, static_cast<float>(side) - edge);
                mx[d] = mn[d] + edge;
            }
            scene.add(mn, mx);
        }
        BoxGridConfig c = unit_cell_config(scene);
        const Expected e = expected_pairs(scene, c);
        c.max_cell_entries = static_cast<uint32_t>(e.entries);
        const uint64_t total = e.pairs.size();
        CAPTURE(dims);
        CAPTURE(total);
        REQUIRE(e.large.size() == 300);
        REQUIRE(e.pairs.front().b >= small); // no small-small pairs
        REQUIRE(total > 60000);
        for (const uint64_t max_pairs : {uint64_t{1000}, total / 3}) {
            c.max_pairs = max_pairs;
            auto g = make_box_grid(c);
            REQUIRE(g->init_status.ok());
            for (const uint64_t capacity : {max_pairs, total}) {
                const uint64_t expect = std::min(max_pairs, capacity);
                const std::vector<Pair> prefix(e.pairs.begin(), e.pairs.begin() + static_cast<std::ptrdiff_t>(expect));
                for (const hashgrid::ThreadBackend& b : {reverse, hashgrid::serial_backend(), b2.backend()}) {
                    CAPTURE(max_pairs);
                    CAPTURE(capacity);
                    REQUIRE((*g)->rebuild(scene.spans(), b).ok());
                    const PairRun run = run_pairs(**g, b, capacity);
                    CHECK(run.result.status.code == StatusCode::pair_capacity);
                    CHECK(run.result.total == total);
                    CHECK(run.result.written == expect);
                    CHECK(diff_pairs(prefix, run.pairs.data(), run.pairs.size()) == "");
                }
            }
        }
    }
}

TEST_CASE("bad input: lowest index, count, previous frame intact") {
    ParallelBackend b3(3);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (uint32_t dims = 2; dims <= 3; ++dims) {
        Rng rng(dims);
        BoxScene s;
        s.dims = dims;
        const uint32_t n = 20000; // several chunks of the object pass
        for (uint32_t i = 0; i < n; ++i) {
            const float x = rng.uniform(0.0f, 50.0f);
            const float y = rng.uniform(0.0f, 50.0f);
            const float z = rng.uniform(0.0f, 50.0f);
            s.add_box(x, y, z, x + 0.5f, y + 0.5f, z + 0.5f);
        }
        for (uint32_t world = 0; world < 3; ++world) {
            BoxGridConfig c;
            c.dimensions = dims;
            c.cell_size = 1.0f;
            c.max_objects = n;
            c.max_cell_entries = 8 * n;
            c.max_pairs = 8 * n;
            if (world > 0) {
                c.world = World::bounded;
                c.out_of_bounds = world == 1 ? OutOfBounds::reject : OutOfBounds::clamp;
                c.cell_counts[0] = c.cell_counts[1] = c.cell_counts[2] = 51;
            }
            auto g = make_box_grid(c);
            REQUIRE((*g)->rebuild(s.spans(), b3.backend()).ok());
            const uint64_t view_hash = hash_view(**g);
            const Expected e = expected_pairs(s, c);
            struct Edit {
                uint32_t index;
                uint32_t axis;
                bool max_side;
                float value;
            };
            struct Probe {
                std::vector<Edit> edits;
                StatusCode code;
                uint32_t index;
                uint32_t count;
            };
            const uint32_t last_axis = dims - 1;
            std::vector<Probe> probes = {
                {{{12345, 0, false, nan}}, StatusCode::invalid_position, 12345, 1},
                {{{19999, last_axis, true, inf}}, StatusCode::invalid_position, 19999, 1},
                {{{7, 1, false, -inf}}, StatusCode::invalid_position, 7, 1},
                {{{15000, 0, false, 60.0f}}, StatusCode::invalid_box, 15000, 1},
                // Lowest index wins across chunks, whatever each one's code.
                {{{17000, 0, false, nan}, {9000, 1, false, 99.0f}, {16000, 0, true, inf}},
                 StatusCode::invalid_box,
                 9000,
                 3},
                // Far out: outside the world (reject); a large object beyond the
                // key range (unbounded) or one clamped into the border (clamp).
                {{{4000, 0, true, 1e30f}, {4000, 0, false, 1e30f}},
                 world == 1 ? StatusCode::position_out_of_range : StatusCode::ok,
                 4000,
                 1},
            };
            if (world == 1)
                probes.push_back({{{11111, last_axis, false, -0.5f}}, StatusCode::position_out_of_range, 11111, 1});
            for (const Probe& p : probes) {
                BoxScene bad = s;
                for (const Edit& edit : p.edits)
                    (edit.max_side ? bad.hi : bad.lo)[edit.axis][edit.index] = edit.value;
                INFO("dims " << dims << " world " << world << " first index " << p.edits[0].index);
                const Status st = (*g)->rebuild(bad.spans(), b3.backend());
                CHECK(st.code == p.code);
                if (p.code == StatusCode::ok) {
                    CHECK(check_run(run_pairs(**g, b3.backend(), 16 * n), expected_pairs(bad, c).pairs) == "");
                    REQUIRE((*g)->rebuild(s.spans(), b3.backend()).ok());
                    continue;
                }
                CHECK(st.index == p.index);
                CHECK(st.count == p.count);
                CHECK(hash_view(**g) == view_hash);
                CHECK(check_run(run_pairs(**g, b3.backend(), e.pairs.size()), e.pairs) == "");
            }

            // Bad query boxes in find_pairs_with: lowest index, nothing written.
            BoxScene q;
            q.dims = dims;
            for (uint32_t k = 0; k < 3000; ++k)
                q.add_box(1, 1, 1, 2, 2, 2);
            q.lo[0][2500] = nan;
            q.hi[1][1700] = 0.5f; // min > max
            std::vector<Pair> out(16);
            const PairResult r = (*g)->find_pairs_with(q.spans(), out.data(), out.size(), b3.backend());
            CHECK(r.status.code == StatusCode::invalid_box);
            CHECK(r.status.index == 1700);
            CHECK(r.status.count == 2);
            CHECK(r.written == 0);
        }
    }
}

TEST_CASE("large objects: every threshold gives the same pair set") {
    ParallelBackend b2(2);
    for (uint64_t seed = 9000; seed < 9000 + scaled_count(16, 4); ++seed) {
        BoxCase bc = random_case(seed * kKinds + 3, 400); // kind 3: world-spanning boxes
        std::vector<Pair> reference;
        for (const uint32_t threshold : {1u, 2u, 4u, 27u, 100u, 100000u}) {
            BoxGridConfig c = bc.config;
            c.large_object_cells = threshold;
            const Expected e = expected_pairs(bc.scene, c);
            c.max_cell_entries = static_cast<uint32_t>(std::max<uint64_t>(e.entries, 1));
            c.max_pairs = e.pairs.size();
            auto g = make_box_grid(c);
            INFO(bc.label << " threshold " << threshold);
            const Status st = (*g)->rebuild(bc.scene.spans(), b2.backend());
            INFO("status " << hashgrid::to_string(st.code) << " needed " << st.needed);
            REQUIRE(st.ok());
            CHECK(check_view(**g, bc.scene, c) == "");
            const PairRun run = run_pairs(**g, b2.backend(), e.pairs.size());
            CHECK(check_run(run, e.pairs) == "");
            const std::vector<Pair> set = as_set(run.pairs.data(), run.pairs.size());
            if (reference.empty()) reference = set;
            CHECK(diff_pairs(reference, set.data(), set.size()) == "");
        }
    }
}

TEST_CASE("large objects among thousands of small ones: the documented order, crowded and sparse, with layers") {
    // A large object's pairs come from a scan of the cells it covers, sorted
    // by the other object, or (more than 1024 of them) from a test of every
    // object in index order: both must give the oracle's order. Large boxes
    // here: one spanning the scene (thousands of pairs), a row of them
    // overlapping each other and a few hundred small boxes each, and layers
    // on every object.
    ParallelBackend b2(2);
    for (uint32_t dims = 2; dims <= 3; ++dims) {
        Rng rng(0x1a57e000u + dims);
        BoxScene scene;
        scene.dims = dims;
        const float side = dims == 3 ? 16.0f : 60.0f;
        const uint32_t small = dims == 3 ? 3000 : 3600;
        auto layer = [&](uint32_t i) { return i % 7 == 0 ? 0x2u : 0x1u | (i % 3 == 0 ? 0x4u : 0u); };
        auto mask = [&](uint32_t i) { return i % 11 == 0 ? 0x2u : ~0u; };
        const uint32_t spanning = small + 12; // after the row: its large-large pairs are the row's
        for (uint32_t i = 0; i <= spanning; ++i) {
            float mn[3] = {0.0f, 0.0f, 0.0f}, mx[3] = {0.0f, 0.0f, 0.0f};
            for (uint32_t d = 0; d < dims; ++d) {
                if (i == spanning) { // spans the whole scene
                    mn[d] = -1.0f;
                    mx[d] = side + 1.0f;
                } else if (i > small) { // a row of large boxes, neighbours overlapping
                    const float at = static_cast<float>(i - small) * (side / 14.0f);
                    mn[d] = d == 0 ? at : 2.0f;
                    mx[d] = d == 0 ? at + side / 7.0f : 2.0f + side / 4.0f;
                } else {
                    mn[d] = rng.uniform(0.0f, side);
                    mx[d] = mn[d] + rng.uniform(0.0f, 1.5f);
                }
            }
            scene.add(mn, mx, layer(i), mask(i));
        }
        BoxGridConfig c = unit_cell_config(scene);
        const Expected e = expected_pairs(scene, c);
        c.max_cell_entries = static_cast<uint32_t>(std::max<uint64_t>(e.entries, 1));
        c.max_pairs = e.pairs.size();
        CAPTURE(dims);
        REQUIRE(e.large.size() >= 10);
        CHECK(pairs_of(e.pairs, spanning) > 2048); // the in-order path
        auto g = make_box_grid(c);
        REQUIRE(g->init_status.ok());
        for (uint32_t threads = 1; threads <= 2; ++threads) {
            const hashgrid::ThreadBackend b = threads == 1 ? hashgrid::serial_backend() : b2.backend();
            REQUIRE((*g)->rebuild(scene.spans(), b).ok());
            CHECK(check_run(run_pairs(**g, b, e.pairs.size()), e.pairs) == "");
            // A third of the room: the exact count and the order's prefix.
            const PairRun part = run_pairs(**g, b, e.pairs.size() / 3);
            CHECK(part.result.total == e.pairs.size());
            const std::vector<Pair> prefix(e.pairs.begin(),
                                           e.pairs.begin() + static_cast<std::ptrdiff_t>(part.pairs.size()));
            CHECK(part.pairs.size() == e.pairs.size() / 3);
            CHECK(diff_pairs(prefix, part.pairs.data(), part.pairs.size()) == "");
        }
    }
}

TEST_CASE("many large objects: pairs through the coarse grids, after moves and after a rejected rebuild") {
    // Hundreds of large boxes over thousands of small ones: their cells add up
    // to far more than the frame has objects, so find_pairs bins the objects
    // into coarse grids (box_grid_coarse.cpp). Some large boxes lie beyond the
    // small objects' bounds on every side (clamped into the grid: two of them
    // overlap out there), some far beyond the key range or spanning all space
    // (unbounded), some touch small boxes with a face only. Each frame against
    // the oracle, with layers; then small boxes moved (a merged frame); then a
    // rejected rebuild, after which the previous frame must still give its pairs.
    ParallelBackend b2(2);
    for (uint32_t dims = 2; dims <= 3; ++dims)
        for (const World world : {World::unbounded, World::bounded}) {
            Rng rng(0xc0a75e00u + dims * 2 + (world == World::bounded ? 1u : 0u));
            BoxScene scene;
            scene.dims = dims;
            const float side = dims == 3 ? 24.0f : 90.0f;
            const uint32_t objects = dims == 3 ? 2650 : 3150;
            auto layer = [](uint32_t i) { return i % 5 == 0 ? 0x2u : 0x1u; };
            auto mask = [](uint32_t i) { return i % 13 == 0 ? 0x1u : ~0u; };
            auto add = [&](const float mn[3], const float mx[3]) {
                scene.add(mn, mx, layer(scene.size()), mask(scene.size()));
            };
            for (uint32_t i = 0; i < objects; ++i) {
                // Buildings interleaved with the small boxes (large indices on both sides).
                const bool building = i % 17 == 7;
                float mn[3] = {0.0f, 0.0f, 0.0f}, mx[3] = {0.0f, 0.0f, 0.0f};
                for (uint32_t d = 0; d < dims; ++d) {
                    const float edge = building ? rng.uniform(dims == 3 ? 5.0f : 9.0f, dims == 3 ? 9.0f : 14.0f)
                                                : rng.uniform(0.0f, 1.2f);
                    mn[d] = std::floor(rng.uniform(0.0f, side) * 4.0f) / 4.0f; // faces on cell boundaries too
                    mx[d] = mn[d] + edge;
                }
                add(mn, mx);
            }
            // Beyond the small objects' bounds: below on every axis (two overlapping), above on one.
            const float out = world == World::bounded ? -6.0f : -40.0f;
            add(std::array<float, 3>{out, out, out}.data(), std::array<float, 3>{out + 5, out + 5, out + 5}.data());
            add(std::array<float, 3>{out + 4, out + 4, out + 4}.data(),
                std::array<float, 3>{out + 9.5f, out + 9.5f, out + 9.5f}.data());
            add(std::array<float, 3>{2.0f, side + 2.0f, 2.0f}.data(),
                std::array<float, 3>{9.0f, side + 4.0f, 9.0f}.data());
            // Above on every axis, two overlapping.
            add(std::array<float, 3>{side + 20, side + 20, side + 20}.data(),
                std::array<float, 3>{side + 25, side + 25, side + 25}.data());
            add(std::array<float, 3>{side + 24, side + 24, side + 24}.data(),
                std::array<float, 3>{side + 29, side + 29, side + 29}.data());
            // Touching small boxes with one face: a building whose max x is a small box's min x.
            {
                float mn[3], mx[3];
                scene.box(0, mn, mx);
                const float a[3] = {mn[0] - 8.0f, mn[1], mn[2]};
                const float b[3] = {mn[0], mn[1] + 7.0f, mn[2] + 7.0f};
                add(a, b);
            }
            // A slab over part of the scene: more partners than a large object
            // keeps for sorting (1024), fewer than twice that.
            const uint32_t slab = scene.size();
            add(std::array<float, 3>{0.0f, 0.0f, 0.0f}.data(),
                std::array<float, 3>{side, dims == 3 ? side * 0.6f : side * 0.55f, side}.data());
            if (world == World::unbounded) {
                add(std::array<float, 3>{1e30f, 1.0f, 1.0f}.data(), std::array<float, 3>{1e30f, 2.0f, 2.0f}.data());
                add(std::array<float, 3>{-3e38f, -3e38f, -3e38f}.data(),
                    std::array<float, 3>{3e38f, 3e38f, 3e38f}.data());
            }
            BoxGridConfig c;
            c.dimensions = dims;
            c.cell_size = 1.0f;
            c.world = world;
            c.max_objects = scene.size();
            c.large_object_cells = 64;
            if (world == World::bounded) {
                for (uint32_t d = 0; d < 3; ++d) {
                    c.origin[d] = -8.0f;
                    c.cell_counts[d] = d < dims ? static_cast<uint32_t>(side) + 40 : 1;
                }
            }
            Expected e = expected_pairs(scene, c);
            c.max_cell_entries = static_cast<uint32_t>(e.entries + 4096);
            c.max_pairs = 4 * e.pairs.size();
            CAPTURE(dims);
            CAPTURE(world == World::bounded);
            // The fine scans would read about every large box's cells: far more than the objects.
            REQUIRE(e.large.size() >= 150);
            CHECK(pairs_of(e.pairs, slab) > 1024);
            CHECK(pairs_of(e.pairs, slab) < 2048);
            // Partner lists on both sides of the rank sorts' limits (64 partners
            // at SSE2, 128 at AVX2; box_cell_sweep.inc) and of the bucket sort's (32).
            uint32_t lists[4] = {0, 0, 0, 0}; // <= 32, <= 64, <= 128, more
            for (const uint32_t o : e.large) {
                const uint64_t n = pairs_of(e.pairs, o);
                ++lists[n <= 32 ? 0 : n <= 64 ? 1 : n <= 128 ? 2 : 3];
            }
            CAPTURE(lists[0]);
            CAPTURE(lists[1]);
            CAPTURE(lists[2]);
            CAPTURE(lists[3]);
            CHECK(std::count(std::begin(lists), std::end(lists), 0u) == 0);
            auto g = make_box_grid(c);
            REQUIRE(g->init_status.ok());
            KernelGuard guard;
            for (const hashgrid::PairKernel kernel : available_kernels()) {
                REQUIRE(hashgrid::set_pair_kernel(kernel));
                CAPTURE(static_cast<int>(kernel));
                for (uint32_t threads = 1; threads <= 2; ++threads) {
                    const hashgrid::ThreadBackend b = threads == 1 ? hashgrid::serial_backend() : b2.backend();
                    REQUIRE((*g)->rebuild(scene.spans(), b).ok());
                    CHECK(check_run(run_pairs(**g, b, e.pairs.size()), e.pairs) == "");
                }
            }
            hashgrid::set_pair_kernel(hashgrid::PairKernel::automatic);
            // A few small boxes move by less than a cell: the rebuild merges.
            for (uint32_t i = 0; i < objects; i += 37) {
                if (e.large.end() != std::find(e.large.begin(), e.large.end(), i)) continue;
                for (uint32_t d = 0; d < dims; ++d) {
                    scene.lo[d][i] += 0.3f;
                    scene.hi[d][i] += 0.3f;
                }
            }
            e = expected_pairs(scene, c);
            REQUIRE((*g)->rebuild(scene.spans(), b2.backend()).ok());
            CHECK(check_run(run_pairs(**g, b2.backend(), e.pairs.size()), e.pairs) == "");
            // Rejected: every box moved by 3 cells, one of them NaN. The frame
            // stays the last accepted one (the rejected boxes' cells are not its).
            BoxScene bad = scene;
            for (uint32_t d = 0; d < dims; ++d)
                for (uint32_t i = 0; i < objects; ++i) {
                    bad.lo[d][i] += 3.0f;
                    bad.hi[d][i] += 3.0f;
                }
            bad.lo[0][objects / 2] = std::numeric_limits<float>::quiet_NaN();
            CHECK((*g)->rebuild(bad.spans(), b2.backend()).code == StatusCode::invalid_position);
            CHECK(check_run(run_pairs(**g, b2.backend(), e.pairs.size()), e.pairs) == "");
            CHECK(check_run(run_pairs(**g, hashgrid::serial_backend(), e.pairs.size()), e.pairs) == "");
        }
}

TEST_CASE("unbounded: objects beyond the cell-key range are large; pairs exact at every thread count") {
    ParallelBackend b2(2), b3(3), b8(8);
    const hashgrid::ThreadBackend backends[] = {hashgrid::serial_backend(), b2.backend(), b3.backend(), b8.backend()};
    struct Far {
        const char* label;
        uint32_t dims;
        float cell;
    };
    for (const Far& f : {Far{"3D cluster with outliers at 1e30 and 3e38", 3, 1.0f},
                         Far{"2D cluster with outliers at 1e30 and 3e38", 2, 1.0f},
                         Far{"3D boxes at +-1e6 with 1 cm cells", 3, 0.01f}, Far{"2D boxes at +-3e38", 2, 1.0f}}) {
        INFO(std::string(f.label));
        Rng rng(f.dims * 31u + static_cast<uint32_t>(f.cell * 100.0f));
        BoxScene s;
        s.dims = f.dims;
        const bool cluster = std::string(f.label).find("cluster") != std::string::npos;
        const uint32_t n = cluster ? scaled_count(1500, 200) : scaled_count(300, 60);
        for (uint32_t i = 0; i < n; ++i) {
            float lo[3], hi[3];
            const bool upper = rng.coin(); // far scenes: two clusters, at +far and -far on every axis
            for (uint32_t d = 0; d < 3; ++d) {
                if (cluster) {
                    lo[d] = rng.uniform(0.0f, 15.0f);
                    hi[d] = lo[d] + rng.uniform(0.0f, 0.8f);
                } else if (f.cell < 1.0f) { // float steps are 0.0625 out there
                    lo[d] = (upper ? 1.0e6f : -1.0e6f) + rng.uniform(0.0f, 1.0f);
                    hi[d] = lo[d] + rng.uniform(0.0f, 0.5f);
                } else {
                    lo[d] = (upper ? 3.0e38f : -3.0e38f) + rng.uniform(-1.0f, 0.0f) * 1.0e37f;
                    hi[d] = lo[d] + rng.uniform(0.0f, 1.0f) * 1.0e37f;
                }
            }
            s.add_box(lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
        }
        if (cluster) {
            s.add_box(1e30f, 1.0f, 1.0f, 1e30f, 2.0f, 2.0f);                       // far on one axis
            s.add_box(1e30f, -3e38f, 1e30f, 1.0000001e30f, -2e38f, 1.0000001e30f); // far on all
            s.add_box(1e30f, -3e38f, 1e30f, 1e30f, -3e38f, 1e30f);                 // inside the last: a far pair
            s.add_box(-3e38f, -3e38f, -3e38f, 3e38f, 3e38f, 3e38f);                // all of space
            s.add_box(5.0f, 5.0f, 5.0f, 2.0e7f, 5.5f, 5.5f);                       // straddles the key limit (3D)
            s.add_box(-std::numeric_limits<float>::max(), 3.0f, 3.0f, -1e38f, 4.0f, 4.0f); // FLT_MAX
        }
        BoxGridConfig c;
        c.dimensions = f.dims;
        c.cell_size = f.cell;
        c.max_objects = s.size();
        c.max_cell_entries = 64 * s.size();
        c.max_pairs = uint64_t{s.size()} * s.size();
        auto g = make_box_grid(c);
        REQUIRE(g->init_status.ok());
        const Expected e = expected_pairs(s, c);
        CHECK(e.large.size() >= (cluster ? 6u : s.size() / 2)); // the far objects, at least
        // Pairs exist among them (the box spanning all space meets every other).
        CHECK(e.pairs.size() >= (cluster ? s.size() - 1 : 1u));
        uint64_t view_hash = 0;
        for (const hashgrid::ThreadBackend& b : backends) {
            INFO("workers " << b.worker_count);
            REQUIRE((*g)->rebuild(s.spans(), b).ok());
            if (view_hash == 0) view_hash = hash_view(**g);
            CHECK(hash_view(**g) == view_hash);
            CHECK((*g)->view().large_count == e.large.size());
            CHECK(check_run(run_pairs(**g, b, e.pairs.size() + 1), e.pairs) == "");
            // Query boxes: copies of objects' boxes, so far objects are asked for too.
            BoxScene q;
            q.dims = s.dims;
            for (uint32_t k = 0; k < 40; ++k) {
                const uint32_t i = k < 6 ? s.size() - 1 - k : rng.below(s.size());
                float mn[3] = {0.0f, 0.0f, 0.0f}, mx[3] = {0.0f, 0.0f, 0.0f};
                for (uint32_t d = 0; d < s.dims; ++d) {
                    mn[d] = s.lo[d][i];
                    mx[d] = s.hi[d][i];
                }
                q.add(mn, mx);
            }
            const std::vector<Pair> expected_q = expected_query_pairs(s, c, q);
            CHECK(check_run(run_query_pairs(**g, q, b, expected_q.size() + 1), expected_q) == "");
        }
    }
}

TEST_CASE("empty frames and zero objects") {
    BoxGridConfig c;
    c.dimensions = 2;
    c.max_objects = 4;
    c.max_cell_entries = 4;
    c.max_pairs = 4;
    auto g = make_box_grid(c);
    BoxScene s;
    s.dims = 2;
    REQUIRE((*g)->rebuild(s.spans(), hashgrid::serial_backend()).ok());
    CHECK((*g)->view().cell_count == 0);
    CHECK((*g)->view().cell_start[0] == 0);
    PairRun run = run_pairs(**g, hashgrid::serial_backend(), 4);
    CHECK(run.result.status.ok());
    CHECK(run.result.total == 0);
    // Only large objects: no cells at all.
    c.large_object_cells = 1;
    auto h = make_box_grid(c);
    s.add_box(0, 0, 0, 5, 5, 0);
    s.add_box(1, 1, 0, 6, 6, 0);
    s.add_box(7, 7, 0, 9, 9, 0);
    REQUIRE((*h)->rebuild(s.spans(), hashgrid::serial_backend()).ok());
    CHECK((*h)->view().cell_count == 0);
    CHECK((*h)->view().large_count == 3);
    run = run_pairs(**h, hashgrid::serial_backend(), 4);
    CHECK(run.result.total == 1);
    REQUIRE(run.pairs.size() == 1);
    CHECK(run.pairs[0].a == 0);
    CHECK(run.pairs[0].b == 1);
}

// ---------------------------------------------------------------------------
// Golden hashes (FNV-1a over values): golden::kBoxGrid in tests/golden_hashes.h.
// Regenerate with HASHGRID_PRINT_GOLDEN=1.

namespace {

using golden::BoxHashes;

/// Fixed scenes (independent of HASHGRID_TEST_SCALE): seeds of random_case with a fixed size.
struct FixedBoxScene {
    const char* name;
    uint64_t seed;
    uint32_t n;
};
constexpr FixedBoxScene kFixedBoxScenes[] = {
    {"mixed", 6 * 11 + 0, 2000},    {"lattice", 6 * 11 + 1, 1000},      {"tiny", 6 * 11 + 2, 2000},
    {"spanning", 6 * 11 + 3, 1000}, {"far-negative", 6 * 11 + 4, 2000},
};

BoxHashes run_fixed(const FixedBoxScene& f, const hashgrid::ThreadBackend& b) {
    const BoxCase bc = random_case(f.seed, f.n);
    BoxGridConfig c = bc.config;
    auto g = make_box_grid(c);
    BoxHashes h;
    if (!(*g)->rebuild(bc.scene.spans(), b).ok()) return h;
    h.view = hash_view(**g);
    const PairRun run = run_pairs(**g, b, c.max_pairs);
    h.pairs = hash_pairs(run.pairs.data(), run.pairs.size());
    h.pair_count = run.result.total;
    Rng rng(f.seed);
    const BoxScene q = random_queries(rng, bc.scene, 300);
    const PairRun qr = run_query_pairs(**g, q, b, query_count(**g, q));
    h.query_pairs = hash_pairs(qr.pairs.data(), qr.pairs.size());
    return h;
}

std::string hashes_text(const BoxHashes& h) {
    char text[160];
    std::snprintf(text, sizeof(text), "{0x%016llxull, 0x%016llxull, 0x%016llxull, %lluu}",
                  static_cast<unsigned long long>(h.view), static_cast<unsigned long long>(h.pairs),
                  static_cast<unsigned long long>(h.query_pairs), static_cast<unsigned long long>(h.pair_count));
    return text;
}

} // namespace

TEST_CASE("golden hashes of fixed scenes, every thread count and chunks run last to first") {
    constexpr size_t kScenes = sizeof(kFixedBoxScenes) / sizeof(kFixedBoxScenes[0]);
    static_assert(kScenes == sizeof(golden::kBoxGrid) / sizeof(golden::kBoxGrid[0]));
    const bool print = std::getenv("HASHGRID_PRINT_GOLDEN") != nullptr;
    if (print) std::printf("inline constexpr BoxHashes kBoxGrid[] = {\n");
    ParallelBackend b2(2), b7(7), b16(16);
    for (size_t k = 0; k < kScenes; ++k) {
        const BoxHashes h = run_fixed(kFixedBoxScenes[k], hashgrid::serial_backend());
        if (print) std::printf("    %s, // %s\n", hashes_text(h).c_str(), kFixedBoxScenes[k].name);
        INFO(std::string(kFixedBoxScenes[k].name) << ": got " << hashes_text(h));
        CHECK(h == golden::kBoxGrid[k]);
        for (const hashgrid::ThreadBackend& b : {b2.backend(), b7.backend(), b16.backend(), reverse_order_backend(2)})
            CHECK(run_fixed(kFixedBoxScenes[k], b) == h);
    }
    if (print) std::printf("};\n");
}

TEST_CASE("every cell-sweep kernel: brute-force pairs in the documented order, sparse and crowded cells") {
    // The small objects' sweep and find_pairs_with's entry test run the
    // kernel set_pair_kernel selects (scalar everywhere; SSE2 and AVX2 on x86-64). Crowded cells (hundreds
    // of entries: runs split in batches of 64, tails of every length below a
    // vector) and the random scenes must give the oracle's pairs, and every
    // kernel the same bytes; the fixed scenes their golden hashes.
    KernelGuard guard;
    const std::vector<hashgrid::PairKernel> kernels = available_kernels();
    MESSAGE("kernels: " << kernels.size());

    std::vector<BoxCase> cases;
    for (uint32_t dims = 2; dims <= 3; ++dims) {
        for (uint32_t layered = 0; layered < 2; ++layered) {
            // 3 x 3 (x 3) cells of size 1, boxes of up to 0.35 per axis.
            Rng rng(0x5eed0000u + dims * 2 + layered);
            BoxCase bc;
            bc.scene.dims = dims;
            const uint32_t n = dims == 2 ? 900 : 2000;
            for (uint32_t i = 0; i < n; ++i) {
                float mn[3] = {0.0f, 0.0f, 0.0f};
                float mx[3] = {0.0f, 0.0f, 0.0f};
                for (uint32_t d = 0; d < dims; ++d) {
                    mn[d] = rng.uniform(0.0f, 2.9f);
                    mx[d] = mn[d] + rng.uniform(0.0f, 0.35f);
                }
                if (layered == 1) {
                    const uint32_t category = 1u << rng.below(3);
                    bc.scene.add(mn, mx, category, rng.below(8));
                } else {
                    bc.scene.add(mn, mx);
                }
            }
            BoxGridConfig& c = bc.config;
            c.dimensions = dims;
            c.cell_size = 1.0f;
            c.world = World::unbounded;
            const Expected e = expected_pairs(bc.scene, c);
            c.max_objects = n;
            c.max_cell_entries = static_cast<uint32_t>(e.entries);
            c.max_pairs = e.pairs.size();
            bc.label = "crowded " + std::to_string(dims) + "D" + (layered == 1 ? " layers" : "");
            cases.push_back(bc);
        }
    }
    for (uint64_t seed = 7000; seed < 7000 + scaled_count(40, 8); ++seed)
        cases.push_back(random_case(seed, 300));

    ParallelBackend b2(2);
    for (const BoxCase& bc : cases) {
        INFO(bc.label);
        auto g = make_box_grid(bc.config);
        REQUIRE(g->init_status.ok());
        REQUIRE((*g)->rebuild(bc.scene.spans(), hashgrid::serial_backend()).ok());
        const Expected e = expected_pairs(bc.scene, bc.config);
        // find_pairs_with runs the same entry test: query boxes over the scene.
        Rng rng(0x9e3779b9u ^ static_cast<uint32_t>(e.pairs.size()));
        const BoxScene queries = random_queries(rng, bc.scene, 60);
        const std::vector<Pair> expected_with = expected_query_pairs(bc.scene, bc.config, queries);
        std::vector<Pair> first;
        for (hashgrid::PairKernel k : kernels) {
            CAPTURE(static_cast<int>(k));
            REQUIRE(hashgrid::set_pair_kernel(k));
            CHECK(check_run(run_query_pairs(**g, queries, hashgrid::serial_backend(), expected_with.size() + 1),
                            expected_with) == "");
            CHECK(check_run(run_query_pairs(**g, queries, b2.backend(), expected_with.size()), expected_with) == "");
            const PairRun run = run_pairs(**g, hashgrid::serial_backend(), e.pairs.size() + 3);
            CHECK(check_run(run, e.pairs) == "");
            const PairRun run2 = run_pairs(**g, b2.backend(), e.pairs.size());
            CHECK(diff_pairs(run.pairs, run2.pairs.data(), run2.pairs.size()) == "");
            if (k == kernels.front())
                first = run.pairs;
            else
                CHECK(diff_pairs(first, run.pairs.data(), run.pairs.size()) == "");
        }
    }
    for (hashgrid::PairKernel k : kernels) {
        CAPTURE(static_cast<int>(k));
        REQUIRE(hashgrid::set_pair_kernel(k));
        for (size_t f = 0; f < std::size(kFixedBoxScenes); ++f) {
            INFO(kFixedBoxScenes[f].name);
            CHECK(run_fixed(kFixedBoxScenes[f], hashgrid::serial_backend()) == golden::kBoxGrid[f]);
        }
    }
}

// ---------------------------------------------------------------------------
// PairFilter: the filtered output is the unfiltered documented order minus the
// rejected pairs, for every thread count; counts, buffers and max_pairs see
// the accepted pairs only.

namespace {

/// find_pairs (queries == null) or find_pairs_with into a buffer with one guard entry past `capacity`.
FilteredRun run_filtered(BoxGrid& grid, const BoxScene* queries, const hashgrid::ThreadBackend& b, uint64_t capacity,
                         hashgrid::PairFilter filter) {
    FilteredRun run;
    std::vector<Pair> buffer(static_cast<size_t>(capacity) + 1, Pair{~0u, ~0u});
    Pair* out = capacity > 0 ? buffer.data() : nullptr;
    run.result = queries == nullptr ? grid.find_pairs(out, capacity, b, filter)
                                    : grid.find_pairs_with(queries->spans(), out, capacity, b, filter);
    const size_t end = static_cast<size_t>(capacity);
    run.past_capacity_untouched = buffer[end].a == ~0u && buffer[end].b == ~0u;
    const uint64_t written = std::min(run.result.written, capacity);
    run.pairs.assign(buffer.begin(), buffer.begin() + static_cast<ptrdiff_t>(written));
    return run;
}

/// find_pairs on one scene, both rules, every backend: a roomy buffer, a
/// too-small one, max_pairs between the filtered and the unfiltered count
/// (ok) and below the filtered count (pair_capacity, exact prefix).
void check_filtered_scene(const BoxScene& s, const BoxGridConfig& config,
                          const std::vector<hashgrid::ThreadBackend>& backends, uint64_t team_seed) {
    const std::vector<Pair> all = expected_pairs(s, config).pairs;
    const uint64_t unfiltered = all.size();
    const std::vector<uint8_t> team = random_teams(team_seed, s.size());
    BoxGridConfig roomy_config = config;
    roomy_config.max_pairs = std::max(config.max_pairs, unfiltered);
    auto grid = make_box_grid(roomy_config);
    REQUIRE(grid->init_status.ok());
    for (const bool by_team : {false, true}) {
        FilterRule rule;
        rule.by_team = by_team;
        rule.team_a = rule.team_b = &team;
        const std::vector<Pair> expected = kept_pairs(all, rule);
        const uint64_t total = expected.size();
        const std::string rule_name = by_team ? "team[a] != team[b]" : "(a ^ b) & 1";
        INFO(rule_name << ": " << total << " of " << unfiltered << " pairs");
        BoxGridConfig between = roomy_config;
        between.max_pairs = total + (unfiltered - total) / 2;
        BoxGridConfig below = roomy_config;
        below.max_pairs = total / 2;
        auto between_grid = make_box_grid(between);
        auto below_grid = make_box_grid(below);
        REQUIRE(between_grid->init_status.ok());
        REQUIRE(below_grid->init_status.ok());
        for (const hashgrid::ThreadBackend& b : backends) {
            INFO("workers " << b.worker_count);
            REQUIRE((*grid)->rebuild(s.spans(), b).ok());
            // The unfiltered output, then the same search filtered: the first
            // minus the rejected pairs.
            const FilteredRun plain = run_filtered(**grid, nullptr, b, unfiltered, {});
            CHECK(check_filtered(plain, StatusCode::ok, all, unfiltered) == "");
            rule.calls.store(0);
            const FilteredRun roomy = run_filtered(**grid, nullptr, b, total + 3, rule.filter());
            CHECK(check_filtered(roomy, StatusCode::ok, kept_pairs(plain.pairs, rule), total) == "");
            CHECK(check_filtered(roomy, StatusCode::ok, expected, total) == "");
            CHECK(rule.calls.load() >= unfiltered); // every overlapping pair that passes the layers is offered
            // A too-small buffer: the exact prefix, the exact total.
            if (total > 0) {
                const uint64_t cap = total / 2;
                CHECK(check_filtered(run_filtered(**grid, nullptr, b, cap, rule.filter()), StatusCode::output_too_small,
                                     expected, cap) == "");
            }
            // max_pairs counts accepted pairs: between the two counts is ok.
            REQUIRE((*between_grid)->rebuild(s.spans(), b).ok());
            CHECK(check_filtered(run_filtered(**between_grid, nullptr, b, total + 3, rule.filter()), StatusCode::ok,
                                 expected, total) == "");
            if (between.max_pairs < unfiltered)
                CHECK(run_filtered(**between_grid, nullptr, b, unfiltered, {}).result.status.code ==
                      StatusCode::pair_capacity);
            // Below the filtered count: pair_capacity with the exact prefix of
            // min(max_pairs, capacity) pairs.
            if (total > 0) {
                REQUIRE((*below_grid)->rebuild(s.spans(), b).ok());
                CHECK(check_filtered(run_filtered(**below_grid, nullptr, b, total + 3, rule.filter()),
                                     StatusCode::pair_capacity, expected, below.max_pairs) == "");
                const uint64_t cap = below.max_pairs / 2;
                CHECK(check_filtered(run_filtered(**below_grid, nullptr, b, cap, rule.filter()),
                                     StatusCode::pair_capacity, expected, cap) == "");
            }
            CHECK(!rule.bad_call.load());
        }
    }
}

} // namespace

TEST_CASE("PairFilter: random scenes give the filtered oracle at 1, 2, 3 and 8 threads") {
    ParallelBackend p1(1), p2(2), p3(3), p8(8);
    const std::vector<hashgrid::ThreadBackend> backends = {hashgrid::serial_backend(), p1.backend(), p2.backend(),
                                                           p3.backend(), p8.backend()};
    for (uint64_t seed = 11000; seed < 11000 + scaled_count(20, 6); ++seed) {
        // Every fourth scene is bigger: several chunks per pass.
        const BoxCase bc = random_case(seed, seed % 4 == 0 ? 1200 : 300);
        INFO(bc.label);
        check_filtered_scene(bc.scene, bc.config, backends, seed);
    }
    // Many cells with a few pairs each: below max_pairs, chunks that run out
    // of the pool are searched again through the filter.
    Rng rng(78);
    BoxScene s;
    s.dims = 2;
    const uint32_t n = scaled_count(20000, 4000);
    uint32_t side = 1;
    while (side * side < 8 * n)
        ++side;
    for (uint32_t i = 0; i < n; ++i) {
        const auto x = static_cast<float>(rng.below(side));
        const auto y = static_cast<float>(rng.below(side));
        s.add_box(x + 0.1f, y + 0.1f, 0, x + 0.6f, y + 0.6f, 0);
    }
    BoxGridConfig c;
    c.dimensions = 2;
    c.cell_size = 1.0f;
    c.max_objects = n;
    c.max_cell_entries = n;
    INFO("many cells, " << n << " boxes");
    check_filtered_scene(s, c, backends, 78);
}

TEST_CASE("PairFilter: find_pairs_with gives the filtered oracle (query, object) at 1, 2, 3 and 8 threads") {
    ParallelBackend p1(1), p2(2), p3(3), p8(8);
    const std::vector<hashgrid::ThreadBackend> backends = {hashgrid::serial_backend(), p1.backend(), p2.backend(),
                                                           p3.backend(), p8.backend()};
    for (uint64_t seed = 12000; seed < 12000 + scaled_count(40, 4); ++seed) {
        const BoxCase bc = random_case(seed, 300);
        INFO(bc.label);
        Rng rng(seed ^ 0x7777);
        const BoxScene q = random_queries(rng, bc.scene, 40 + rng.below(100));
        const std::vector<Pair> all = expected_query_pairs(bc.scene, bc.config, q);
        const std::vector<uint8_t> query_team = random_teams(seed, q.size());
        const std::vector<uint8_t> object_team = random_teams(seed + 1, bc.scene.size());
        auto grid = make_box_grid(bc.config);
        REQUIRE(grid->init_status.ok());
        // max_pairs does not apply to find_pairs_with, filtered or not.
        BoxGridConfig no_pairs = bc.config;
        no_pairs.max_pairs = 0;
        auto no_pairs_grid = make_box_grid(no_pairs);
        REQUIRE(no_pairs_grid->init_status.ok());
        for (const bool by_team : {false, true}) {
            FilterRule rule;
            rule.by_team = by_team;
            rule.team_a = &query_team;
            rule.team_b = &object_team;
            rule.ordered = false;
            const std::vector<Pair> expected = kept_pairs(all, rule);
            const uint64_t total = expected.size();
            const std::string rule_name = by_team ? "team[query] != team[object]" : "(a ^ b) & 1";
            INFO(rule_name << ": " << total << " of " << all.size() << " pairs");
            for (const hashgrid::ThreadBackend& b : backends) {
                INFO("workers " << b.worker_count);
                REQUIRE((*grid)->rebuild(bc.scene.spans(), b).ok());
                const FilteredRun plain = run_filtered(**grid, &q, b, all.size(), {});
                CHECK(check_filtered(plain, StatusCode::ok, all, all.size()) == "");
                const FilteredRun roomy = run_filtered(**grid, &q, b, total + 3, rule.filter());
                CHECK(check_filtered(roomy, StatusCode::ok, kept_pairs(plain.pairs, rule), total) == "");
                CHECK(check_filtered(roomy, StatusCode::ok, expected, total) == "");
                if (total > 0) {
                    const uint64_t cap = total / 2;
                    CHECK(check_filtered(run_filtered(**grid, &q, b, cap, rule.filter()), StatusCode::output_too_small,
                                         expected, cap) == "");
                }
                REQUIRE((*no_pairs_grid)->rebuild(bc.scene.spans(), b).ok());
                CHECK(check_filtered(run_filtered(**no_pairs_grid, &q, b, total, rule.filter()), StatusCode::ok,
                                     expected, total) == "");
                CHECK(!rule.bad_call.load());
            }
        }
    }
}

// SPDX-License-Identifier: MIT
// BoxGrid::rebuild validates boxes in blocks of 64 with the instruction set
// of the active kernel (set_pair_kernel): every kernel must give the scalar
// kernel's statuses, pairs and frames, and the statuses must be those of the
// validation rule, checked here box by box. The scenes put boxes on cell
// edges and on the ends of the world, mix in NaN, infinite, misordered and
// out-of-range boxes, and replay frames with some blocks untouched, so that
// every block kind (unchanged, all valid, checked box by box) is seen in
// accepted and in rejected frames.
#include <doctest/doctest.h>

#include "test_support.h"

#include "hashgrid/box_grid.h"
#include "hashgrid/cell_key.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::BoxGrid;
using hashgrid::BoxGridConfig;
using hashgrid::PairKernel;
using hashgrid::StatusCode;

namespace {

constexpr uint32_t kBlock = 64;
constexpr float kFar = 1e30f; // past every key range

struct Boxes {
    uint32_t dims = 2;
    std::vector<float> lo[3];
    std::vector<float> hi[3];
    [[nodiscard]] uint32_t size() const { return static_cast<uint32_t>(lo[0].size()); }
    [[nodiscard]] hashgrid::BoxSpans spans() const {
        hashgrid::BoxSpans s;
        s.min_x = lo[0].data();
        s.min_y = lo[1].data();
        s.min_z = dims == 3 ? lo[2].data() : nullptr;
        s.max_x = hi[0].data();
        s.max_y = hi[1].data();
        s.max_z = dims == 3 ? hi[2].data() : nullptr;
        s.count = size();
        return s;
    }
};

/// How a block's boxes are drawn: below cell `top` on each axis with edges
/// up to `size` cells, so that blocks differ in their bounds and widest span;
/// `wild` blocks also get boxes on the ends of the world and large ones.
struct BlockStyle {
    int32_t top[3] = {0, 0, 0};
    float size = 1.0f;
    bool wild = false;
};

BlockStyle block_style(Rng& rng, const BoxGridConfig& c) {
    static const float kSizes[] = {0.5f, 1.0f, 1.5f, 2.5f};
    BlockStyle style;
    for (uint32_t d = 0; d < c.dimensions; ++d)
        style.top[d] = rng.between(4, static_cast<int32_t>(c.cell_counts[d]));
    style.size = kSizes[rng.below(4)];
    style.wild = rng.below(3) == 0;
    return style;
}

/// A random box: on a cell edge (one ulp either side or exact), inside, or
/// (wild blocks) on an end of the world or large (more cells than
/// large_object_cells). All finite, ordered and inside a bounded world.
void valid_box(Rng& rng, const BoxGridConfig& c, const BlockStyle& style, Boxes& b, uint32_t i) {
    const double scale = hashgrid::key_scale(c.cell_size);
    const uint32_t kind = rng.below(style.wild ? 5 : 3);
    for (uint32_t d = 0; d < b.dims; ++d) {
        const auto cells = static_cast<int32_t>(c.cell_counts[d]);
        const auto edge = [&](int32_t cell) { return static_cast<float>(c.origin[d] + cell / scale); };
        float lo = 0.0f, hi = 0.0f;
        if (kind == 0) { // cell edges
            lo = edge(rng.between(1, style.top[d] - 3));
            hi = edge(rng.between(1, 2)) - c.origin[d] + lo;
            lo = rng.coin() ? std::nextafter(lo, -kFar) : std::nextafter(lo, kFar);
            hi = rng.coin() ? std::nextafter(hi, -kFar) : hi;
        } else if (kind == 3) { // the ends of the world (bounded: t = 0 is in, t = cells is out)
            lo = rng.coin() ? c.origin[d] : std::nextafter(edge(cells), -kFar);
            hi = lo;
            if (rng.coin()) lo = hi = std::nextafter(edge(cells), -kFar);
        } else if (kind == 4) { // large: the whole world
            lo = c.origin[d];
            hi = std::nextafter(edge(cells), -kFar);
        } else {
            lo = rng.uniform(c.origin[d], edge(style.top[d] - 3));
            hi = lo + rng.uniform(0.0f, style.size * c.cell_size);
        }
        b.lo[d][i] = lo;
        b.hi[d][i] = hi;
    }
}

/// Box i made bad on one axis: NaN, infinite, misordered, or out of range
/// (far beyond the world, or one ulp below its start).
void bad_box(Rng& rng, const BoxGridConfig& c, Boxes& b, uint32_t i, bool out_of_range_only) {
    const uint32_t d = rng.below(b.dims);
    float& lo = b.lo[d][i];
    float& hi = b.hi[d][i];
    switch (out_of_range_only ? 4 + rng.below(3) : rng.below(7)) {
    case 0:
        (rng.coin() ? lo : hi) = std::numeric_limits<float>::quiet_NaN();
        break;
    case 1:
        (rng.coin() ? lo : hi) =
            rng.coin() ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
        break;
    case 2:
        lo = std::nextafter(hi, kFar); // min > max by one ulp
        break;
    case 3:
        std::swap(lo, hi);
        if (lo == hi) lo = hi + c.cell_size;
        break;
    case 4:
        hi = kFar;
        break;
    case 5:
        lo = -kFar;
        break;
    default:
        lo = std::nextafter(c.origin[d], -kFar);
        break;
    }
}

/// The validation rule, box by box: the status a rebuild of `b` must return.
hashgrid::Status expected_status(const Boxes& b, const BoxGridConfig& c) {
    hashgrid::Status s;
    for (uint32_t i = 0; i < b.size(); ++i) {
        bool finite = true, ordered = true, inside = true;
        for (uint32_t d = 0; d < b.dims; ++d) {
            const float lo = b.lo[d][i], hi = b.hi[d][i];
            finite = finite && std::isfinite(lo) && std::isfinite(hi);
            ordered = ordered && lo <= hi;
            const double t_lo = scaled(lo, c.origin[d], c.cell_size);
            const double t_hi = scaled(hi, c.origin[d], c.cell_size);
            inside = inside && t_lo >= 0.0 && t_hi < static_cast<double>(c.cell_counts[d]);
        }
        StatusCode code = StatusCode::ok;
        if (!finite)
            code = StatusCode::invalid_position;
        else if (!ordered)
            code = StatusCode::invalid_box;
        else if (!inside && c.world == hashgrid::World::bounded && c.out_of_bounds == hashgrid::OutOfBounds::reject)
            code = StatusCode::position_out_of_range;
        if (code == StatusCode::ok) continue;
        if (s.count++ == 0) {
            s.code = code;
            s.index = i;
        }
    }
    return s;
}

/// Overlapping pairs a < b of an accepted frame (closed boxes).
std::vector<Pair> expected_pairs(const Boxes& b) {
    std::vector<Pair> pairs;
    for (uint32_t i = 0; i < b.size(); ++i)
        for (uint32_t j = i + 1; j < b.size(); ++j) {
            bool overlap = true;
            for (uint32_t d = 0; d < b.dims; ++d)
                overlap = overlap && b.lo[d][i] <= b.hi[d][j] && b.lo[d][j] <= b.hi[d][i];
            if (overlap) pairs.push_back(Pair{i, j});
        }
    return pairs;
}

/// Block kinds as the rule sees them, counted over all scenes and kernels:
/// proof that the scenes reach every path of the validation.
struct Coverage {
    uint32_t unchanged = 0;
    uint32_t valid = 0;
    uint32_t check_accepted = 0;
    uint32_t check_rejected = 0;
};

void count_blocks(const Boxes& b, const Boxes* previous, const BoxGridConfig& c, bool accepted, Coverage& out) {
    for (uint32_t first = 0; first < b.size(); first += kBlock) {
        const uint32_t end = std::min(b.size(), first + kBlock);
        bool same = previous != nullptr, clean = true;
        for (uint32_t i = first; i < end; ++i)
            for (uint32_t d = 0; d < b.dims; ++d) {
                const float lo = b.lo[d][i], hi = b.hi[d][i];
                if (previous != nullptr)
                    same = same && float_bits(lo) == float_bits(previous->lo[d][i]) &&
                           float_bits(hi) == float_bits(previous->hi[d][i]);
                clean = clean && std::isfinite(lo) && std::isfinite(hi) && lo <= hi &&
                        scaled(lo, c.origin[d], c.cell_size) >= 0.0 &&
                        scaled(hi, c.origin[d], c.cell_size) < static_cast<double>(c.cell_counts[d]);
            }
        if (same)
            ++out.unchanged;
        else if (clean)
            ++out.valid;
        else
            ++(accepted ? out.check_accepted : out.check_rejected);
    }
}

struct FrameRecord {
    hashgrid::Status status;
    std::vector<Pair> pairs;
    uint64_t frame_hash = 0;
};

/// Everything a rebuild publishes: cells, entries, large objects, bounds.
uint64_t hash_frame(const BoxGrid& grid) {
    const hashgrid::BoxGridView v = grid.view();
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
    if (v.cell_count > 0 && v.bounds != nullptr)
        for (uint32_t d = 0; d < 3; ++d) {
            h.u32(static_cast<uint32_t>(v.bounds->cell_lo[d]));
            h.u32(static_cast<uint32_t>(v.bounds->cell_hi[d]));
            h.f32(v.bounds->box_lo[d]);
            h.f32(v.bounds->box_hi[d]);
            h.u32(static_cast<uint32_t>(v.bounds->max_span[d]));
        }
    return h.value();
}

std::string status_text(const hashgrid::Status& s) {
    return std::string(hashgrid::to_string(s.code)) + " index " + std::to_string(s.index) + " count " +
           std::to_string(s.count) + " needed " + std::to_string(s.needed);
}

bool same_status(const hashgrid::Status& a, const hashgrid::Status& b) {
    return a.code == b.code && a.index == b.index && a.count == b.count && a.needed == b.needed;
}

/// One scene: its config and the frames rebuilt in turn.
struct SceneRun {
    BoxGridConfig config;
    std::vector<Boxes> frames;
    std::string label;
};

SceneRun make_scene(uint64_t seed) {
    Rng rng(seed * 0x9e3779b97f4a7c15ull + 17);
    SceneRun run;
    BoxGridConfig& c = run.config;
    c.dimensions = 2 + static_cast<uint32_t>(seed % 2);
    const uint32_t world = static_cast<uint32_t>(seed / 2 % 3); // unbounded, bounded reject, bounded clamp
    c.world = world == 0 ? hashgrid::World::unbounded : hashgrid::World::bounded;
    c.out_of_bounds = world == 2 ? hashgrid::OutOfBounds::clamp : hashgrid::OutOfBounds::reject;
    static const float kCells[] = {1.0f, 0.5f, 0.3f, 2.0f};
    c.cell_size = kCells[rng.below(4)];
    for (uint32_t d = 0; d < 3; ++d) {
        c.origin[d] = d < c.dimensions ? static_cast<float>(rng.between(-40, 40)) * 0.37f : 0.0f;
        c.cell_counts[d] = d < c.dimensions ? 8 + rng.below(8) : 1;
    }
    // Not a multiple of 64, nor of 4 most of the time.
    const uint32_t n = 64 * (2 + rng.below(4)) + 1 + rng.below(63);
    c.max_objects = n;
    c.max_cell_entries = 64 * n + 64;
    c.max_pairs = uint64_t{n} * n / 2 + 64;
    c.large_object_cells = 16;
    run.label = std::string(c.dimensions == 3 ? "3D " : "2D ") +
                (world == 0   ? "unbounded"
                 : world == 1 ? "bounded reject"
                              : "bounded clamp") +
                " n " + std::to_string(n) + " seed " + std::to_string(seed);

    // Out-of-range boxes a frame accepts (far in an unbounded world, clamped).
    const bool far_ok = world != 1;
    Boxes base;
    base.dims = c.dimensions;
    for (uint32_t d = 0; d < 3; ++d) {
        base.lo[d].assign(n, 0.0f);
        base.hi[d].assign(n, 0.0f);
    }
    // A block of small boxes only takes its bounds from cell_block whole.
    std::vector<BlockStyle> styles;
    for (uint32_t first = 0; first < n; first += kBlock) {
        styles.push_back(block_style(rng, c));
        for (uint32_t i = first; i < std::min(n, first + kBlock); ++i)
            valid_box(rng, c, styles.back(), base, i);
    }
    if (far_ok)
        for (uint32_t first = 0; first < n; first += kBlock)
            if (rng.below(3) == 0) bad_box(rng, c, base, std::min(n - 1, first + rng.below(kBlock)), true);
    // Some blocks edited (a few boxes, or one nudged by an ulp), the others untouched.
    Boxes edited = base;
    for (uint32_t first = 0; first < n; first += kBlock) {
        if (rng.coin()) continue;
        const uint32_t edits = 1 + rng.below(4);
        for (uint32_t e = 0; e < edits; ++e) {
            const uint32_t i = std::min(n - 1, first + rng.below(kBlock));
            if (rng.coin()) {
                valid_box(rng, c, styles[first / kBlock], edited, i);
            } else {
                float& lo = edited.lo[rng.below(edited.dims)][i];
                if (std::isfinite(lo) && lo > -kFar) lo = std::nextafter(lo, -kFar);
            }
        }
    }
    // Bad boxes in some blocks: the frame is rejected.
    Boxes rejected = edited;
    for (uint32_t first = 0; first < n; first += kBlock)
        if (rng.below(3) == 0) bad_box(rng, c, rejected, std::min(n - 1, first + rng.below(kBlock)), false);
    bad_box(rng, c, rejected, n - 1 - rng.below(n % kBlock), false); // the last, partial block
    // base; edited (compared); edited again (summaries); rejected; edited
    // (after a rejection: no comparison); base (compared).
    run.frames = {base, edited, edited, rejected, edited, base};
    return run;
}

std::vector<FrameRecord> run_frames(PairKernel kernel, const SceneRun& run) {
    REQUIRE(hashgrid::set_pair_kernel(kernel));
    REQUIRE(hashgrid::active_pair_kernel() == kernel);
    BoxGrid grid;
    REQUIRE(grid.init_allocate(run.config).ok());
    std::vector<Pair> buffer(run.config.max_pairs);
    std::vector<FrameRecord> records;
    for (const Boxes& boxes : run.frames) {
        FrameRecord r;
        r.status = grid.rebuild(boxes.spans(), hashgrid::serial_backend());
        if (r.status.ok()) {
            const hashgrid::PairResult p = grid.find_pairs(buffer.data(), buffer.size(), hashgrid::serial_backend());
            REQUIRE(p.status.ok());
            r.pairs.assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(p.written));
            r.frame_hash = hash_frame(grid);
        }
        records.push_back(std::move(r));
    }
    return records;
}

} // namespace

TEST_CASE("every kernel validates boxes as the scalar kernel and the rule do") {
    KernelGuard guard;
    const std::vector<PairKernel> kernels = available_kernels();
    MESSAGE("kernels on this CPU: " << kernels.size());
    Coverage coverage;
    for (uint64_t seed = 0; seed < 18; ++seed) {
        const SceneRun run = make_scene(seed);
        CAPTURE(run.label);
        // The rule's statuses, pairs and block kinds.
        std::vector<hashgrid::Status> statuses;
        const Boxes* previous = nullptr; // the last accepted frame, while frames are compared
        for (const Boxes& boxes : run.frames) {
            statuses.push_back(expected_status(boxes, run.config));
            const bool accepted = statuses.back().ok();
            count_blocks(boxes, previous, run.config, accepted, coverage);
            previous = accepted ? &boxes : nullptr;
        }
        std::vector<FrameRecord> scalar;
        for (PairKernel kernel : kernels) {
            CAPTURE(static_cast<int>(kernel));
            const std::vector<FrameRecord> got = run_frames(kernel, run);
            REQUIRE(got.size() == run.frames.size());
            for (size_t f = 0; f < got.size(); ++f) {
                CAPTURE(f);
                CHECK_MESSAGE(same_status(got[f].status, statuses[f]), status_text(got[f].status)
                                                                           << " expected " << status_text(statuses[f]));
                if (got[f].status.ok()) {
                    std::vector<Pair> sorted = got[f].pairs;
                    std::sort(sorted.begin(), sorted.end(),
                              [](const Pair& a, const Pair& b) { return a.a != b.a ? a.a < b.a : a.b < b.b; });
                    const std::vector<Pair> expected = expected_pairs(run.frames[f]);
                    CHECK(diff_pairs(expected, sorted.data(), sorted.size()) == "");
                }
                if (kernel == PairKernel::scalar) continue;
                CHECK(same_status(got[f].status, scalar[f].status));
                CHECK(got[f].frame_hash == scalar[f].frame_hash);
                CHECK(diff_pairs(scalar[f].pairs, got[f].pairs.data(), got[f].pairs.size()) == "");
            }
            if (kernel == PairKernel::scalar) scalar = got;
        }
    }
    MESSAGE("blocks unchanged " << coverage.unchanged << ", valid " << coverage.valid << ", checked and accepted "
                                << coverage.check_accepted << ", checked and rejected " << coverage.check_rejected);
    CHECK(coverage.unchanged > 0);
    CHECK(coverage.valid > 0);
    CHECK(coverage.check_accepted > 0);
    CHECK(coverage.check_rejected > 0);
}

// A box grid rebuilt every frame of a churn (objects still, moving within
// their cells, moving to other cells, growing large, leaving the key range,
// bad frames, changing counts) must hold exactly what a fresh grid rebuilt
// from the same boxes holds: every array of the view and every pair. The
// fresh grid has no previous frame, so it always takes the full build; the
// churned one merges whenever few objects changed cells (the trace shows
// which path a frame took, and the test checks both were taken).
#include <doctest/doctest.h>

#include "hashgrid/box_grid.h"
#include "hashgrid/trace.h"
#include "hashgrid_support/box_scene.h"
#include "test_support.h"

#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using hashgrid::BoxGrid;
using hashgrid::BoxGridConfig;
using hashgrid::BoxGridView;
using hashgrid::TracePhase;
using hashgrid_support::BoxScene;
using hashgrid_test::ParallelBackend;
using hashgrid_test::Rng;

struct Spec {
    uint32_t dims;
    hashgrid::World world;
    hashgrid::OutOfBounds out_of_bounds;
    float cell;
    bool layers;
};

BoxGridConfig config_for(const Spec& spec, uint32_t max_objects) {
    BoxGridConfig c;
    c.dimensions = spec.dims;
    c.cell_size = spec.cell;
    c.world = spec.world;
    c.out_of_bounds = spec.out_of_bounds;
    for (uint32_t d = 0; d < 3; ++d) {
        c.origin[d] = 0.0f;
        c.cell_counts[d] = d < spec.dims ? 40u : 1u;
    }
    c.max_objects = max_objects;
    c.max_cell_entries = max_objects * 40;
    c.max_pairs = uint64_t{max_objects} * 200;
    c.large_object_cells = 16;
    return c;
}

/// World extent the scene uses: inside the bounded world (40 cells).
float extent(const Spec& spec) { return spec.cell * 40.0f; }

/// A coordinate on a 1/8 grid (exact in float) in [0, extent).
float coordinate(Rng& rng, float span) {
    const auto steps = static_cast<uint32_t>(span * 8.0f);
    return static_cast<float>(rng.below(steps)) * 0.125f;
}

void set_box(BoxScene& s, uint32_t i, const float lo[3], const float hi[3]) {
    for (uint32_t d = 0; d < 3; ++d) {
        s.lo[d][i] = d < s.dims ? lo[d] : 0.0f;
        s.hi[d][i] = d < s.dims ? hi[d] : 0.0f;
    }
}

/// A box of edge up to 1.5 cells (up to 4 large ones of 6 cells in every 100).
void random_box(Rng& rng, const Spec& spec, BoxScene& s, uint32_t i) {
    const float span = extent(spec);
    const bool large = rng.below(100) < 4;
    float lo[3], hi[3];
    for (uint32_t d = 0; d < 3; ++d) {
        const float edge = large ? spec.cell * 6.0f : static_cast<float>(rng.below(13)) * 0.125f * spec.cell;
        lo[d] = coordinate(rng, span - edge - spec.cell);
        hi[d] = lo[d] + edge;
    }
    set_box(s, i, lo, hi);
}

/// Moves box i by a small step (usually within its cells) or far (other cells).
void move_box(Rng& rng, const Spec& spec, BoxScene& s, uint32_t i, bool jump) {
    const float span = extent(spec);
    float lo[3], hi[3];
    for (uint32_t d = 0; d < 3; ++d) {
        const float edge = s.hi[d][i] - s.lo[d][i];
        float step = jump ? coordinate(rng, span) - s.lo[d][i]
                          : static_cast<float>(static_cast<int32_t>(rng.below(5)) - 2) * 0.125f;
        lo[d] = s.lo[d][i] + step;
        if (lo[d] < 0.0f) lo[d] = 0.0f;
        if (lo[d] + edge > span - spec.cell) lo[d] = span - spec.cell - edge;
        hi[d] = lo[d] + edge;
    }
    set_box(s, i, lo, hi);
}

BoxScene make_scene(Rng& rng, const Spec& spec, uint32_t n) {
    BoxScene s;
    s.dims = spec.dims;
    for (uint32_t d = 0; d < 3; ++d) {
        s.lo[d].resize(n);
        s.hi[d].resize(n);
    }
    for (uint32_t i = 0; i < n; ++i)
        random_box(rng, spec, s, i);
    if (spec.layers) {
        s.category.resize(n);
        s.mask.resize(n);
        for (uint32_t i = 0; i < n; ++i) {
            s.category[i] = 1u << rng.below(3);
            s.mask[i] = rng.below(4) == 0 ? 1u : ~0u;
        }
    }
    return s;
}

std::string same_floats(const float* a, const float* b, uint32_t count, const char* what) {
    for (uint32_t i = 0; i < count; ++i)
        if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]))
            return std::string(what) + " differs at " + std::to_string(i);
    return "";
}

template <typename T>
std::string same_values(const T* a, const T* b, uint32_t count, const char* what) {
    for (uint32_t i = 0; i < count; ++i)
        if (a[i] != b[i]) return std::string(what) + " differs at " + std::to_string(i);
    return "";
}

/// "" when both views hold the same frame, array for array; else the first difference.
std::string compare_views(const BoxGridView& a, const BoxGridView& b, uint32_t dims, uint32_t entries) {
    if (a.object_count != b.object_count) return "object_count";
    if (a.cell_count != b.cell_count)
        return "cell_count " + std::to_string(a.cell_count) + " vs " + std::to_string(b.cell_count);
    if (a.large_count != b.large_count) return "large_count";
    std::string r;
    const uint32_t n = a.object_count;
    for (uint32_t d = 0; d < dims && r.empty(); ++d) {
        r = same_floats(a.min[d], b.min[d], n, "min");
        if (r.empty()) r = same_floats(a.max[d], b.max[d], n, "max");
        if (r.empty()) r = same_floats(a.entry_min[d], b.entry_min[d], entries, "entry_min");
        if (r.empty()) r = same_floats(a.entry_max[d], b.entry_max[d], entries, "entry_max");
    }
    if (r.empty()) r = same_values(a.category, b.category, n, "category");
    if (r.empty()) r = same_values(a.mask, b.mask, n, "mask");
    if (r.empty()) r = same_values(a.cell_key, b.cell_key, a.cell_count, "cell_key");
    if (r.empty()) r = same_values(a.cell_start, b.cell_start, a.cell_count + 1, "cell_start");
    if (r.empty()) r = same_values(a.entry_object, b.entry_object, entries, "entry_object");
    if (r.empty()) r = same_values(a.entry_flags, b.entry_flags, entries, "entry_flags");
    if (r.empty()) r = same_values(a.large_object, b.large_object, a.large_count, "large_object");
    if (r.empty() && a.cell_count > 0) {
        const hashgrid::BoxFrameBounds& x = *a.bounds;
        const hashgrid::BoxFrameBounds& y = *b.bounds;
        for (uint32_t d = 0; d < 3; ++d)
            if (x.cell_lo[d] != y.cell_lo[d] || x.cell_hi[d] != y.cell_hi[d] || x.box_lo[d] != y.box_lo[d] ||
                x.box_hi[d] != y.box_hi[d] || x.max_span[d] != y.max_span[d])
                r = "bounds";
    }
    return r;
}

std::vector<hashgrid::Pair> all_pairs(BoxGrid& g, const hashgrid::ThreadBackend& b, uint64_t capacity) {
    std::vector<hashgrid::Pair> out(static_cast<size_t>(capacity));
    const hashgrid::PairResult r = g.find_pairs(out.data(), capacity, b);
    REQUIRE(r.status.ok());
    out.resize(static_cast<size_t>(r.written));
    return out;
}

/// Which entry path the last rebuild recorded into `trace` took.
bool took_update(const hashgrid::Trace& trace) {
    for (uint32_t e = 0; e < trace.size(); ++e) {
        hashgrid::TraceEvent ev;
        if (trace.event(e, ev) && ev.kind == hashgrid::TraceKind::phase && ev.phase == TracePhase::box_rebuild_update)
            return true;
    }
    return false;
}

enum class Churn { still, jitter, few_jump, many_jump, grow, out_of_keys, bad, resize };

} // namespace

TEST_CASE("box rebuild: a frame merged into the last one equals the full build, every frame of a churn") {
    const Spec specs[] = {
        {2, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, false},
        {3, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 0.5f, true},
        {2, hashgrid::World::bounded, hashgrid::OutOfBounds::clamp, 2.0f, true},
        {3, hashgrid::World::bounded, hashgrid::OutOfBounds::reject, 1.0f, false},
    };
    const Churn plan[] = {Churn::still,    Churn::jitter,      Churn::jitter, Churn::few_jump, Churn::jitter,
                          Churn::grow,     Churn::few_jump,    Churn::bad,    Churn::jitter,   Churn::many_jump,
                          Churn::few_jump, Churn::out_of_keys, Churn::jitter, Churn::resize,   Churn::jitter,
                          Churn::few_jump, Churn::still,       Churn::jitter, Churn::bad,      Churn::few_jump};
    const uint32_t n_max = hashgrid_test::scaled_count(3000) + 64;
    uint32_t updates = 0, full = 0;
    for (const Spec& spec : specs) {
        for (uint32_t threads : {1u, 3u}) {
            CAPTURE(spec.dims);
            CAPTURE(static_cast<int>(spec.world));
            CAPTURE(threads);
            ParallelBackend pb(threads);
            const hashgrid::ThreadBackend backend = pb.backend();
            Rng rng(0x5eed + spec.dims * 7 + threads);
            const BoxGridConfig config = config_for(spec, n_max);
            BoxScene scene = make_scene(rng, spec, n_max - 64);
            BoxGrid churned;
            REQUIRE(churned.init_allocate(config).ok());
            hashgrid::Trace trace;
            REQUIRE(trace.init_allocate(4096).ok());
            churned.set_trace(&trace);
            for (uint32_t f = 0; f < sizeof(plan) / sizeof(plan[0]); ++f) {
                CAPTURE(f);
                const uint32_t n = scene.size();
                BoxScene frame = scene;
                switch (plan[f]) {
                case Churn::still:
                    break;
                case Churn::jitter: // 5% of the objects take a small step
                    for (uint32_t i = 0; i < n; ++i)
                        if (rng.below(20) == 0) move_box(rng, spec, frame, i, false);
                    break;
                case Churn::few_jump: // 1% jump anywhere, 4% take a small step
                    for (uint32_t i = 0; i < n; ++i) {
                        const uint32_t r = rng.below(100);
                        if (r < 1)
                            move_box(rng, spec, frame, i, true);
                        else if (r < 5)
                            move_box(rng, spec, frame, i, false);
                    }
                    break;
                case Churn::many_jump: // beyond the merge's share: a full build
                    for (uint32_t i = 0; i < n; ++i)
                        if (rng.below(2) == 0) move_box(rng, spec, frame, i, true);
                    break;
                case Churn::grow: // one object becomes large, another one small
                    random_box(rng, spec, frame, 3);
                    for (uint32_t d = 0; d < spec.dims; ++d) {
                        frame.lo[d][5] = spec.cell;
                        frame.hi[d][5] = spec.cell * 9.0f;
                    }
                    break;
                case Churn::out_of_keys: // unbounded: out of the key range (a large object); bounded: a jump
                    if (spec.world == hashgrid::World::unbounded)
                        frame.lo[0][7] = frame.hi[0][7] = 1e9f;
                    else
                        move_box(rng, spec, frame, 7, true);
                    break;
                case Churn::bad: // rejected, nothing changes; then the previous boxes again
                    for (uint32_t i = 0; i < n; ++i)
                        if (rng.below(10) == 0) move_box(rng, spec, frame, i, false);
                    frame.lo[0][n / 2] = std::numeric_limits<float>::quiet_NaN();
                    break;
                case Churn::resize: // one object fewer
                    for (uint32_t d = 0; d < 3; ++d) {
                        frame.lo[d].pop_back();
                        frame.hi[d].pop_back();
                    }
                    if (!frame.category.empty()) {
                        frame.category.pop_back();
                        frame.mask.pop_back();
                    }
                    break;
                }
                trace.clear();
                const hashgrid::Status s = churned.rebuild(frame.spans(), backend);
                if (plan[f] == Churn::bad) {
                    REQUIRE(s.code == hashgrid::StatusCode::invalid_position);
                } else {
                    INFO(std::string(hashgrid::to_string(s.code)));
                    REQUIRE(s.ok());
                    scene = frame;
                    if (took_update(trace))
                        ++updates;
                    else
                        ++full;
                }
                // The reference: a fresh grid, full build of the accepted boxes.
                BoxGrid fresh;
                REQUIRE(fresh.init_allocate(config).ok());
                REQUIRE(fresh.rebuild(scene.spans(), backend).ok());
                REQUIRE(churned.entry_count() == fresh.entry_count());
                CHECK(compare_views(churned.view(), fresh.view(), spec.dims, fresh.entry_count()) == "");
                const std::vector<hashgrid::Pair> a = all_pairs(churned, backend, config.max_pairs);
                const std::vector<hashgrid::Pair> b = all_pairs(fresh, backend, config.max_pairs);
                REQUIRE(a.size() == b.size());
                CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(hashgrid::Pair)) == 0);
            }
        }
    }
    // Both paths ran (most frames merge; the first, many_jump, grow, resize and the
    // frames after a rejected one do not).
    CHECK(updates >= 8 * 5);
    CHECK(full >= 8 * 3);
}

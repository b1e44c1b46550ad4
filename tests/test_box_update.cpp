// SPDX-License-Identifier: MIT
// A box grid rebuilt every frame of a churn (objects still, moving within
// their cells, moving to other cells, growing large, leaving the key range,
// bad frames, changing counts) must hold exactly what a fresh grid rebuilt
// from the same boxes holds: every array of the view and every pair. The
// fresh grid has no previous frame, so it always takes the full build; the
// churned one merges whenever few objects changed cells (the trace shows
// which path a frame took, and the test checks both were taken). The same
// for grids rebuilt from an ObjectStore, which read only the objects its
// change log lists: each frame's path (listed, listed then full, full) is
// the one the rules give, and two grids on one store, a log that overflows
// and a frame from spans in between each take the path they must.
#include <doctest/doctest.h>

#include "hashgrid/box_grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/trace.h"
#include "hashgrid_support/box_scene.h"
#include "test_support.h"

#include <algorithm>
#include <bit>
#include <cmath>
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
    uint32_t cells = 40; // per axis: the world is cells x cells (x cells) cells of `cell`
};

BoxGridConfig config_for(const Spec& spec, uint32_t max_objects) {
    BoxGridConfig c;
    c.dimensions = spec.dims;
    c.cell_size = spec.cell;
    c.world = spec.world;
    c.out_of_bounds = spec.out_of_bounds;
    for (uint32_t d = 0; d < 3; ++d) {
        c.origin[d] = 0.0f;
        c.cell_counts[d] = d < spec.dims ? spec.cells : 1u;
    }
    c.max_objects = max_objects;
    c.max_cell_entries = max_objects * 40;
    c.max_pairs = uint64_t{max_objects} * 200;
    c.large_object_cells = 16;
    return c;
}

/// World extent the scene uses: inside the bounded world.
float extent(const Spec& spec) { return spec.cell * static_cast<float>(spec.cells); }

/// Cells per axis that keep the churn's objects per cell what they are at
/// full size when HASHGRID_TEST_SCALE shrinks the object count (the merge
/// pays only with a few entries per cell).
uint32_t churn_cells(uint32_t dims) {
    const double side = 40.0 * std::pow(hashgrid_test::test_scale(), 1.0 / dims);
    return side < 16.0 ? 16u : static_cast<uint32_t>(side + 0.5);
}

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
    if (r.empty() && a.category_common != b.category_common) r = "category_common";
    if (r.empty() && a.cell_count > 0) {
        const hashgrid::BoxFrameBounds& x = *a.bounds;
        const hashgrid::BoxFrameBounds& y = *b.bounds;
        for (uint32_t d = 0; d < 3; ++d)
            if (x.cell_lo[d] != y.cell_lo[d] || x.cell_hi[d] != y.cell_hi[d] || x.box_lo[d] != y.box_lo[d] ||
                x.box_hi[d] != y.box_hi[d] || x.max_span[d] != y.max_span[d])
                r = "bounds";
        if (r.empty() && (a.row_start == nullptr) != (b.row_start == nullptr)) r = "row table present";
        if (r.empty() && a.row_start != nullptr) {
            const auto rows = static_cast<uint32_t>(int64_t{x.cell_hi[1]} - x.cell_lo[1] + 1) *
                              static_cast<uint32_t>(int64_t{x.cell_hi[2]} - x.cell_lo[2] + 1);
            r = same_values(a.row_start, b.row_start, rows + 1, "row_start");
        }
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

/// The churned grid holds the fresh grid's frame: every array and every pair.
void check_same_frame(BoxGrid& churned, BoxGrid& fresh, uint32_t dims, const hashgrid::ThreadBackend& backend,
                      uint64_t max_pairs) {
    REQUIRE(churned.entry_count() == fresh.entry_count());
    CHECK(compare_views(churned.view(), fresh.view(), dims, fresh.entry_count()) == "");
    const std::vector<hashgrid::Pair> a = all_pairs(churned, backend, max_pairs);
    const std::vector<hashgrid::Pair> b = all_pairs(fresh, backend, max_pairs);
    REQUIRE(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(hashgrid::Pair)) == 0);
}

/// Whether the last rebuild recorded into `trace` went through the step named `step`.
bool took(const hashgrid::Trace& trace, const char* step) {
    for (uint32_t e = 0; e < trace.size(); ++e) {
        hashgrid::TraceEvent ev;
        if (trace.event(e, ev) && ev.kind == hashgrid::TraceKind::phase && ev.phase == TracePhase::box_rebuild &&
            std::strcmp(hashgrid::trace_event_name(ev), step) == 0)
            return true;
    }
    return false;
}
bool took_update(const hashgrid::Trace& trace) { return took(trace, "box.rebuild.update"); }

enum class Churn { still, jitter, few_jump, many_jump, grow, out_of_keys, bad, resize };

} // namespace

TEST_CASE("box rebuild: a frame merged into the last one equals the full build, every frame of a churn") {
    const Spec specs[] = {
        {2, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, false, churn_cells(2)},
        {3, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 0.5f, true, churn_cells(3)},
        {2, hashgrid::World::bounded, hashgrid::OutOfBounds::clamp, 2.0f, true, churn_cells(2)},
        {3, hashgrid::World::bounded, hashgrid::OutOfBounds::reject, 1.0f, false, churn_cells(3)},
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
                check_same_frame(churned, fresh, spec.dims, backend, config.max_pairs);
            }
        }
    }
    // Both paths ran (most frames merge; the first, many_jump, grow, resize and the
    // frames after a rejected one do not).
    CHECK(updates >= 8 * 5);
    CHECK(full >= 8 * 3);
}

TEST_CASE("box rebuild: small boxes alone in small cells are sorted, not merged, even when few change cells") {
    // About one entry per occupied cell (more than 2 cells per 3 entries):
    // the merge's cost per cell would exceed what sorting every entry costs,
    // so a frame where 5% of the boxes take a small step is built in full
    // (the rule the churn above leaves unexercised), and equals a fresh build.
    for (const uint32_t dims : {2u, 3u}) {
        CAPTURE(dims);
        const Spec spec{dims, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, false};
        ParallelBackend pb(2);
        const hashgrid::ThreadBackend backend = pb.backend();
        Rng rng(0x5ca1e + dims);
        const uint32_t n = dims == 2 ? 300u : 2000u; // sparse: 1600 or 64000 cells
        const BoxGridConfig config = config_for(spec, n);
        BoxScene scene;
        scene.dims = dims;
        for (uint32_t d = 0; d < 3; ++d) {
            scene.lo[d].resize(n);
            scene.hi[d].resize(n);
        }
        for (uint32_t i = 0; i < n; ++i) { // edges of a quarter to half a cell
            float lo[3], hi[3];
            for (uint32_t d = 0; d < 3; ++d) {
                lo[d] = coordinate(rng, extent(spec) - 2.0f);
                hi[d] = lo[d] + 0.25f + 0.125f * static_cast<float>(rng.below(3));
            }
            set_box(scene, i, lo, hi);
        }
        BoxGrid churned;
        REQUIRE(churned.init_allocate(config).ok());
        hashgrid::Trace trace;
        REQUIRE(trace.init_allocate(4096).ok());
        churned.set_trace(&trace);
        REQUIRE(churned.rebuild(scene.spans(), backend).ok());
        for (uint32_t f = 0; f < 4; ++f) {
            CAPTURE(f);
            const BoxGridView before = churned.view();
            REQUIRE(uint64_t{before.cell_count} * 3 > uint64_t{churned.entry_count()} * 2);
            for (uint32_t i = 0; i < n; ++i)
                if (rng.below(20) == 0) move_box(rng, spec, scene, i, false);
            trace.clear();
            REQUIRE(churned.rebuild(scene.spans(), backend).ok());
            CHECK(took(trace, "box.rebuild.entries"));
            CHECK_FALSE(took_update(trace));
            BoxGrid fresh;
            REQUIRE(fresh.init_allocate(config).ok());
            REQUIRE(fresh.rebuild(scene.spans(), backend).ok());
            check_same_frame(churned, fresh, dims, backend, config.max_pairs);
        }
    }
}

namespace {

enum class StoreChurn { still, jitter, few_jump, layers, edge, twice, back, grow, many_jump, bad, add_remove };

/// The path a store frame must take: the listed objects alone, the listed
/// ones and then the full comparison, or the full comparison alone.
enum class Path { listed, listed_then_full, full };

Path expected_path(StoreChurn c) {
    switch (c) {
    case StoreChurn::grow:
        return Path::listed_then_full;
    case StoreChurn::many_jump: // more changes than one object in eight
    case StoreChurn::add_remove:
        return Path::full;
    default:
        return Path::listed;
    }
}

hashgrid::ObjectBox box_of(const BoxScene& s, uint32_t i) {
    hashgrid::ObjectBox b;
    for (uint32_t d = 0; d < s.dims; ++d) {
        b.min[d] = s.lo[d][i];
        b.max[d] = s.hi[d][i];
    }
    return b;
}

/// The store's objects as a scene (dense order), for the reference grid.
BoxScene scene_of(const hashgrid::ObjectStore& store, uint32_t dims) {
    BoxScene s;
    s.dims = dims;
    const uint32_t n = store.size();
    for (uint32_t d = 0; d < 3; ++d) {
        s.lo[d].assign(n, 0.0f);
        s.hi[d].assign(n, 0.0f);
        if (d < dims) {
            std::memcpy(s.lo[d].data(), store.min_coords(d), n * sizeof(float));
            std::memcpy(s.hi[d].data(), store.max_coords(d), n * sizeof(float));
        }
    }
    s.category.assign(store.categories(), store.categories() + n);
    s.mask.assign(store.masks(), store.masks() + n);
    return s;
}

} // namespace

TEST_CASE("box rebuild from a store: the logged changes alone give the full build, every frame of a churn") {
    const Spec specs[] = {
        {2, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, true},
        {3, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 0.5f, true},
        {2, hashgrid::World::bounded, hashgrid::OutOfBounds::reject, 2.0f, true},
        {3, hashgrid::World::bounded, hashgrid::OutOfBounds::reject, 1.0f, false},
    };
    using C = StoreChurn;
    const C plan[] = {C::still,      C::jitter, C::few_jump, C::layers,   C::edge,   C::jitter,    C::twice,
                      C::back,       C::grow,   C::jitter,   C::bad,      C::jitter, C::many_jump, C::edge,
                      C::add_remove, C::jitter, C::layers,   C::few_jump, C::still};
    const uint32_t n = hashgrid_test::scaled_count(2000) + 64;
    uint32_t counts[3] = {0, 0, 0};
    for (const Spec& spec : specs) {
        for (uint32_t threads : {1u, 3u}) {
            CAPTURE(spec.dims);
            CAPTURE(static_cast<int>(spec.world));
            CAPTURE(threads);
            ParallelBackend pb(threads);
            const hashgrid::ThreadBackend backend = pb.backend();
            Rng rng(0x10c + spec.dims * 5 + threads);
            BoxGridConfig config = config_for(spec, n + 1);
            // Small objects (up to 3 cells an axis) stay small and large ones (6) large when they move.
            config.large_object_cells = 32;
            BoxScene mirror = make_scene(rng, spec, n);
            hashgrid::ObjectStoreConfig store_config;
            store_config.dimensions = spec.dims;
            store_config.max_objects = n + 1;
            hashgrid::ObjectStore store;
            REQUIRE(store.init_allocate(store_config).ok());
            std::vector<hashgrid::ObjectHandle> handle(n);
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t category = spec.layers ? mirror.category[i] : ~0u;
                const uint32_t mask = spec.layers ? mirror.mask[i] : ~0u;
                const hashgrid::ObjectAddResult a = store.add(box_of(mirror, i), category, mask, i);
                REQUIRE(a.status.ok());
                handle[i] = a.handle;
            }
            BoxGrid churned;
            REQUIRE(churned.init_allocate(config).ok());
            hashgrid::Trace trace;
            REQUIRE(trace.init_allocate(4096).ok());
            churned.set_trace(&trace);
            REQUIRE(churned.rebuild(store, backend).ok()); // the first frame: full
            BoxScene accepted = scene_of(store, spec.dims);
            const auto move = [&](uint32_t i, bool jump) {
                BoxScene one = scene_of(store, spec.dims);
                move_box(rng, spec, one, i, jump);
                REQUIRE(store.move(handle[i], box_of(one, i)).ok());
            };
            for (uint32_t f = 0; f < sizeof(plan) / sizeof(plan[0]); ++f) {
                CAPTURE(f);
                const uint32_t count = store.size();
                switch (plan[f]) {
                case C::still:
                    break;
                case C::jitter: // 3% take a small step (most stay in their cells)
                    for (uint32_t i = 0; i < count; ++i)
                        if (rng.below(33) == 0) move(i, false);
                    break;
                case C::few_jump: // 1% jump anywhere, 3% take a small step
                    for (uint32_t i = 0; i < count; ++i) {
                        const uint32_t r = rng.below(100);
                        if (r < 4) move(i, r < 1);
                    }
                    break;
                case C::layers: { // new categories and masks
                    if (spec.layers)
                        for (uint32_t i = 0; i < count; i += 37)
                            REQUIRE(store.set_layers(handle[i], 1u << rng.below(4), rng.below(2) == 0 ? ~0u : 3u).ok());
                    // Without layers: object 5 takes one bit (the AND of the categories drops to it),
                    // then every bit again (the AND gains them back).
                    const uint32_t category = store.categories()[5] == ~0u ? 1u : ~0u;
                    REQUIRE(store.set_layers(handle[5], category, store.masks()[5]).ok());
                    break;
                }
                case C::edge: { // the small objects on the lowest x bound move inwards: the bounds shrink
                    BoxScene one = scene_of(store, spec.dims);
                    const auto small = [&](uint32_t i) { return one.hi[0][i] - one.lo[0][i] <= spec.cell * 2.0f; };
                    float low = extent(spec);
                    for (uint32_t i = 0; i < count; ++i)
                        if (small(i)) low = std::min(low, one.lo[0][i]);
                    for (uint32_t i = 0; i < count; ++i) {
                        if (!small(i) || one.lo[0][i] != low) continue;
                        const float width = one.hi[0][i] - one.lo[0][i];
                        one.lo[0][i] = extent(spec) / 2.0f;
                        one.hi[0][i] = one.lo[0][i] + width;
                        REQUIRE(store.move(handle[i], box_of(one, i)).ok());
                    }
                    move(count / 3, false);
                    break;
                }
                case C::twice: // the same objects moved twice (logged twice, taken once)
                    for (uint32_t i = 0; i < count; i += 29) {
                        move(i, false);
                        move(i, i % 2 == 0);
                    }
                    break;
                case C::back: { // moved and moved back: logged, but the box is the frame's
                    for (uint32_t i = 1; i < count; i += 31) {
                        const BoxScene before = scene_of(store, spec.dims);
                        move(i, true);
                        REQUIRE(store.move(handle[i], box_of(before, i)).ok());
                    }
                    move(2, false);
                    break;
                }
                case C::grow: { // one small object becomes large: the full build follows
                    BoxScene one = scene_of(store, spec.dims);
                    uint32_t i = 4;
                    while (one.hi[0][i] - one.lo[0][i] > spec.cell * 2.0f)
                        ++i;
                    for (uint32_t d = 0; d < spec.dims; ++d) {
                        one.lo[d][i] = spec.cell;
                        one.hi[d][i] = spec.cell * 9.0f;
                    }
                    REQUIRE(store.move(handle[i], box_of(one, i)).ok());
                    move(i + 1, false);
                    break;
                }
                case C::many_jump: // more than one object in eight: the full comparison
                    for (uint32_t i = 0; i < count; ++i)
                        if (rng.below(3) == 0) move(i, true);
                    break;
                case C::bad: { // rejected (bounded: out of the world; unbounded: a small step only)
                    for (uint32_t i = 0; i < count; i += 41)
                        move(i, false);
                    if (spec.world == hashgrid::World::bounded) {
                        BoxScene one = scene_of(store, spec.dims);
                        for (const uint32_t i : {count / 2, count / 5}) {
                            one.lo[1][i] = -5.0f * spec.cell;
                            REQUIRE(store.move(handle[i], box_of(one, i)).ok());
                        }
                    }
                    break;
                }
                case C::add_remove: { // the layout changes: no list, the full comparison
                    REQUIRE(store.remove(handle[count - 1]).ok());
                    handle.pop_back();
                    move(0, true);
                    break;
                }
                }
                trace.clear();
                const hashgrid::Status s = churned.rebuild(store, backend);
                BoxGrid fresh;
                REQUIRE(fresh.init_allocate(config).ok());
                const BoxScene now = scene_of(store, spec.dims);
                const hashgrid::Status reference = fresh.rebuild(now.spans(), backend);
                CHECK(s.code == reference.code);
                CHECK(s.index == reference.index);
                CHECK(s.count == reference.count);
                CHECK(s.needed == reference.needed);
                if (plan[f] == C::bad && spec.world == hashgrid::World::bounded) {
                    REQUIRE(s.code == hashgrid::StatusCode::position_out_of_range);
                    REQUIRE(s.count == 2);
                    // The previous frame stays; then the two objects go back.
                    REQUIRE(fresh.rebuild(accepted.spans(), backend).ok());
                    CHECK(compare_views(churned.view(), fresh.view(), spec.dims, fresh.entry_count()) == "");
                    for (const uint32_t i : {count / 2, count / 5})
                        REQUIRE(store.move(handle[i], box_of(accepted, i)).ok());
                    continue;
                }
                REQUIRE(s.ok());
                accepted = now;
                const bool listed = took(trace, "box.rebuild.listed");
                const bool validated = took(trace, "box.rebuild.validate");
                const Path path = listed ? (validated ? Path::listed_then_full : Path::listed) : Path::full;
                CHECK(static_cast<int>(path) == static_cast<int>(expected_path(plan[f])));
                ++counts[static_cast<int>(path)];
                check_same_frame(churned, fresh, spec.dims, backend, config.max_pairs);
            }
        }
    }
    CHECK(counts[0] >= 8 * 14);
    CHECK(counts[1] >= 8);
    CHECK(counts[2] >= 8 * 2);
}

TEST_CASE("box rebuild from a store: two grids on one store, a log that overflows, a frame from spans between") {
    const Spec spec{2, hashgrid::World::unbounded, hashgrid::OutOfBounds::reject, 1.0f, true};
    const uint32_t n = 2600;
    ParallelBackend pb(2);
    const hashgrid::ThreadBackend backend = pb.backend();
    Rng rng(0xfeed);
    BoxScene mirror = make_scene(rng, spec, n);
    hashgrid::ObjectStoreConfig store_config;
    store_config.dimensions = 2;
    store_config.max_objects = n;
    hashgrid::ObjectStore store;
    REQUIRE(store.init_allocate(store_config).ok());
    std::vector<hashgrid::ObjectHandle> handle(n);
    for (uint32_t i = 0; i < n; ++i)
        handle[i] = store.add(box_of(mirror, i), mirror.category[i], mirror.mask[i], i).handle;
    // Two grids of different cells on the same store, each with its own trace.
    BoxGridConfig fine = config_for(spec, n);
    fine.large_object_cells = 32;
    BoxGridConfig coarse = fine;
    coarse.cell_size = 2.5f;
    BoxGrid grid[2];
    hashgrid::Trace trace[2];
    for (uint32_t k = 0; k < 2; ++k) {
        REQUIRE(grid[k].init_allocate(k == 0 ? fine : coarse).ok());
        REQUIRE(trace[k].init_allocate(4096).ok());
        grid[k].set_trace(&trace[k]);
        REQUIRE(grid[k].rebuild(store, backend).ok());
    }
    const auto jitter = [&](uint32_t every) {
        for (uint32_t i = 0; i < n; i += every) {
            BoxScene one = scene_of(store, 2);
            move_box(rng, spec, one, i, false);
            REQUIRE(store.move(handle[i], box_of(one, i)).ok());
        }
    };
    // Rebuilds grid k and checks it against a fresh full build; returns whether it took the listed path.
    const auto rebuild = [&](uint32_t k) {
        trace[k].clear();
        REQUIRE(grid[k].rebuild(store, backend).ok());
        BoxGrid fresh;
        REQUIRE(fresh.init_allocate(k == 0 ? fine : coarse).ok());
        const BoxScene now = scene_of(store, 2);
        REQUIRE(fresh.rebuild(now.spans(), backend).ok());
        check_same_frame(grid[k], fresh, 2, backend, fine.max_pairs);
        return took(trace[k], "box.rebuild.listed");
    };
    // Grid 0 every frame, grid 1 every other one: each reads the changes since its own frame.
    for (uint32_t f = 0; f < 6; ++f) {
        CAPTURE(f);
        jitter(23);
        CHECK(rebuild(0));
        if (f % 2 == 1) CHECK(rebuild(1));
    }
    // One object in eight (325): the list splits into two chunks of 256 and 69
    // objects, whose boundary falls inside one 64-bit word of the bitmaps
    // (objects 0, 3, 11, 19, ...: the 256th and 257th are 2035 and 2043).
    {
        BoxScene one = scene_of(store, 2);
        for (uint32_t i = 0, moved = 0; moved < n / 8; i = i == 0 ? 3 : i + 8, ++moved) {
            move_box(rng, spec, one, i, false);
            REQUIRE(store.move(handle[i], box_of(one, i)).ok());
        }
        CHECK(rebuild(0));
        CHECK(rebuild(1));
    }
    // One object moved more times than the log holds: grid 0's list is
    // incomplete (full comparison), and after it the log serves again.
    for (uint32_t r = 0; r < n + 1; ++r) {
        BoxScene one = scene_of(store, 2);
        move_box(rng, spec, one, 7, false);
        REQUIRE(store.move(handle[7], box_of(one, 7)).ok());
    }
    CHECK_FALSE(rebuild(0));
    jitter(31);
    CHECK(rebuild(0));
    // Many records for few objects (more records than one object in eight): the full comparison.
    for (uint32_t r = 0; r < n / 8 + 1; ++r)
        REQUIRE(store.set_layers(handle[r % 3], 1u << (r % 3), ~0u).ok());
    CHECK_FALSE(rebuild(0));
    // A frame from spans between two from the store: the next one from the store compares every box.
    const BoxScene spans_frame = scene_of(store, 2);
    REQUIRE(grid[1].rebuild(spans_frame.spans(), backend).ok());
    jitter(17);
    CHECK_FALSE(rebuild(1));
    jitter(19);
    CHECK(rebuild(1));
    CHECK(rebuild(0));
}

// SPDX-License-Identifier: MIT
// Unbounded worlds take one of two paths per frame: a dense box (occupied
// cells fit in about two cells per particle) or the hashed path (sparse
// scenes). Both must give the same pairs, order and cell table, exact against
// brute force, and the same statuses.
#include <doctest/doctest.h>

#include "test_support.h"

#include "hashgrid/trace.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;
using hashgrid::StatusCode;

namespace {

/// `clusters` tight clusters whose centres are `spacing` apart along x (and y):
/// with a large spacing the box of occupied cells is far bigger than 2 cells
/// per particle, which forces the hashed path.
Scene spread_clusters(Rng& rng, uint32_t dims, uint32_t n, uint32_t clusters, float spacing) {
    Scene s;
    s.dims = dims;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t k = i % clusters;
        const float cx = static_cast<float>(k) * spacing;
        const float cy = static_cast<float>(k % 3) * spacing;
        s.add(cx + rng.uniform(0.0f, 4.0f), cy + rng.uniform(0.0f, 4.0f), dims == 3 ? rng.uniform(0.0f, 4.0f) : 0.0f);
    }
    return s;
}

std::string check_frame(const Scene& s, const GridConfig& config, const hashgrid::ThreadBackend& backend,
                        uint64_t* cells_hash, std::vector<Pair>* pairs_out) {
    auto grid = make_grid(config);
    if (!grid->init_status.ok()) return "init failed";
    const Frame f = run_frame(**grid, s, backend, config.max_pairs);
    if (!f.rebuild.ok()) return std::string("rebuild: ") + hashgrid::to_string(f.rebuild.code);
    if (!f.result.status.ok()) return std::string("pairs: ") + hashgrid::to_string(f.result.status.code);
    const std::vector<uint32_t> order((**grid).sorted_to_original(),
                                      (**grid).sorted_to_original() + (**grid).particle_count());
    const std::vector<Pair> expected = in_documented_order(brute_force_pairs(s, config.interaction_distance), order);
    const std::string diff = diff_pairs(expected, f.pairs.data(), f.pairs.size());
    if (!diff.empty()) return diff;
    const std::string sorted = check_sorted_state(**grid, s, config);
    if (!sorted.empty()) return sorted;
    const std::string table = check_cell_table(**grid, s, config);
    if (!table.empty()) return table;
    if (cells_hash != nullptr) *cells_hash = hash_cells(**grid);
    if (pairs_out != nullptr) *pairs_out = f.pairs;
    return "";
}

} // namespace

TEST_CASE("sparse scenes (hashed path) match brute force, 2D and 3D, serial and parallel") {
    ParallelBackend tbb(3);
    Rng rng(99);
    for (int scene = 0; scene < 40; ++scene) {
        const uint32_t dims = 2 + scene % 2;
        const uint32_t n = 200 + rng.below(1500);
        const float spacing = scene % 4 == 0 ? 3.0e4f : 900.0f;
        const Scene s = spread_clusters(rng, dims, n, 2 + rng.below(6), spacing);
        const GridConfig config = unbounded_config(dims, 1.0f, 1.0f, n, uint64_t{n} * 200);
        INFO("scene " << scene << " dims " << dims << " n " << n);
        CHECK(check_frame(s, config, hashgrid::serial_backend(), nullptr, nullptr) == "");
        CHECK(check_frame(s, config, tbb.backend(), nullptr, nullptr) == "");
    }
}

TEST_CASE("the dense and the hashed path give the same cells and pairs for the same occupied cells") {
    // The same scene twice: compact (dense path), and with one far particle
    // added at the end so the box is huge (hashed path). Removing that
    // particle's influence: it is alone, so pairs and the other cells agree.
    Rng rng(5);
    for (uint32_t dims : {2u, 3u}) {
        Scene compact = spread_clusters(rng, dims, 2000, 4, 6.0f);
        Scene sparse = compact;
        sparse.add(1.0e5f, -1.0e5f, 5.0e4f);
        const GridConfig config = unbounded_config(dims, 1.0f, 1.0f, 3000, 3000ull * 300);
        std::vector<Pair> compact_pairs, sparse_pairs;
        CHECK(check_frame(compact, config, hashgrid::serial_backend(), nullptr, &compact_pairs) == "");
        CHECK(check_frame(sparse, config, hashgrid::serial_backend(), nullptr, &sparse_pairs) == "");
        CHECK(diff_pairs(compact_pairs, sparse_pairs.data(), sparse_pairs.size()) == "");
    }
}

TEST_CASE("cell_capacity on both paths as the first frame: exact distinct count, still not built, next frame fine") {
    for (float spacing : {2.0f, 1500.0f}) { // dense box, then hashed (3D keys reach 2^20 cells)
        INFO("spacing " << spacing);
        Scene s;
        s.dims = 3;
        for (uint32_t c = 0; c < 500; ++c)
            s.add(static_cast<float>(c) * spacing + 0.5f, 0.5f, 0.5f);
        GridConfig config = unbounded_config(3, 1.0f, 1.0f, 600, 1000);
        config.max_cells = 300;
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        const hashgrid::Status st = (**grid).rebuild(s.spans(), hashgrid::serial_backend());
        CHECK(st.code == StatusCode::cell_capacity);
        CHECK(st.needed == 500);
        CHECK((**grid).particle_count() == 0);
        std::vector<Pair> out(4);
        CHECK((**grid).find_pairs(out.data(), out.size(), hashgrid::serial_backend()).status.code ==
              StatusCode::not_built);
        Scene small;
        small.dims = 3;
        for (uint32_t c = 0; c < 200; ++c)
            small.add(static_cast<float>(c) * spacing + 0.5f, 0.5f, 0.5f);
        CHECK((**grid).rebuild(small.spans(), hashgrid::serial_backend()).ok());
        CHECK((**grid).cells().cell_count == 200);
    }
}

TEST_CASE("frames switch between the box map and the table; a rejected frame on any path keeps the last one") {
    ParallelBackend tbb2(2);
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    for (const hashgrid::ThreadBackend& backend : {serial, tbb2.backend()})
        for (uint32_t dims : {2u, 3u}) {
            Rng rng(17 + dims);
            GridConfig config = unbounded_config(dims, 1.0f, 1.0f, 2500, 2500ull * 400);
            config.max_cells = 400;
            // Accepted frames: compact (box map), spread (table), and each of
            // them again already in cell order (the presorted path).
            const Scene compact = spread_clusters(rng, dims, 1500, 4, 6.0f);
            const Scene spread = spread_clusters(rng, dims, 1500, 5, 900.0f);
            const Scene compact_sorted = permuted(compact, expected_order(compact, config).data());
            const Scene spread_sorted = permuted(spread, expected_order(spread, config).data());
            // Rejected frames (1000 cells > max_cells): the dense path, the
            // table, and the presorted path.
            const Scene over_dense = cells_in_rows(dims, 1000, 2);
            const Scene over_table = cells_in_rows(dims, 1000, 1000);
            const Scene over_sorted = permuted(over_dense, expected_order(over_dense, config).data());
            const Scene* accepted[] = {&compact, &spread, &compact_sorted, &spread_sorted, &spread, &compact};
            const char* names[] = {"compact", "spread", "compact sorted", "spread sorted", "spread", "compact"};
            const bool in_box[] = {true, false, true, false, false, true};
            auto grid = make_grid(config);
            REQUIRE(grid->init_status.ok());
            hashgrid::Grid& g = **grid;
            for (size_t k = 0; k < 6; ++k) {
                const Scene& s = *accepted[k];
                INFO("dims " << dims << " workers " << backend.worker_count << " frame " << k << " " << names[k]);
                REQUIRE(g.rebuild(s.spans(), backend).ok());
                CHECK(check_sorted_state(g, s, config) == "");
                CHECK(check_cell_table(g, s, config) == "");
                const std::vector<uint32_t> order(g.sorted_to_original(), g.sorted_to_original() + g.particle_count());
                const std::vector<Pair> expected = in_documented_order(brute_force_pairs(s, 1.0f), order);
                std::vector<Pair> out(expected.size() + 1);
                const hashgrid::PairResult pr = g.find_pairs(out.data(), out.size(), backend);
                REQUIRE(pr.status.ok());
                CHECK(diff_pairs(expected, out.data(), pr.written) == "");
                const uint64_t cells = hash_cells(g);
                const uint64_t order_hash = hash_order(g);
                for (const Scene* over : {&over_dense, &over_table, &over_sorted}) {
                    const hashgrid::Status st = g.rebuild(over->spans(), backend);
                    CHECK(st.code == StatusCode::cell_capacity);
                    CHECK(st.needed == 1000);
                    CHECK(g.particle_count() == s.size());
                    CHECK(hash_cells(g) == cells);
                    CHECK(hash_order(g) == order_hash);
                    CHECK(check_cell_table(g, s, config) == "");
                    std::vector<Pair> again(expected.size() + 1);
                    const hashgrid::PairResult pr2 = g.find_pairs(again.data(), again.size(), backend);
                    REQUIRE(pr2.status.ok());
                    CHECK(diff_pairs(expected, again.data(), pr2.written) == "");
                }
                // Which lookup each accepted frame has (check_cell_table holds
                // the details): the compact scenes fit the box map.
                CHECK((g.cells().map_cell != nullptr) == in_box[k]);
            }
            // No rejection in between (a rejected table frame empties the
            // table): a table frame, a mapped frame of a few cells (so few
            // that the next table frame would clear only their slots), then
            // a table frame of other keys, which must not see the first one's.
            Scene tiny;
            tiny.dims = dims;
            for (uint32_t i = 0; i < 20; ++i)
                tiny.add(rng.uniform(0.0f, 1.5f), rng.uniform(0.0f, 1.5f), rng.uniform(0.0f, 1.5f));
            const Scene spread_other = spread_clusters(rng, dims, 1500, 5, 700.0f);
            const Scene* sequence[] = {&spread, &tiny, &spread_other};
            for (const Scene* s : sequence) {
                INFO("dims " << dims << " workers " << backend.worker_count << ", table / map / table");
                REQUIRE(g.rebuild(s->spans(), backend).ok());
                CHECK(check_cell_table(g, *s, config) == "");
                const std::vector<uint32_t> order(g.sorted_to_original(), g.sorted_to_original() + g.particle_count());
                const std::vector<Pair> expected = in_documented_order(brute_force_pairs(*s, 1.0f), order);
                std::vector<Pair> out(expected.size() + 1);
                const hashgrid::PairResult pr = g.find_pairs(out.data(), out.size(), backend);
                REQUIRE(pr.status.ok());
                CHECK(diff_pairs(expected, out.data(), pr.written) == "");
            }
        }
}

TEST_CASE("a frame rejected while counting a large box does not spoil the next frame's merge over the last box") {
    // Frame A fills a box of 20^3 cells; frame B's box is larger than
    // max_cells and holds too many cells (counted in the scratch where A's
    // starts over its box were, then rejected); frame C is A's particles in
    // A's sorted order after small moves, over A's box again: it must not
    // merge into the overwritten starts, and equals a fresh grid's frame.
    Rng rng(808);
    const uint32_t n = 12000;
    GridConfig config = unbounded_config(3, 1.0f, 1.0f, n, uint64_t{n} * 64);
    config.max_cells = 9000;
    const Scene a = uniform_scene(rng, 3, n, 0.0f, 20.0f);
    Scene b;
    b.dims = 3;
    for (uint32_t i = 0; i < n; ++i) // 12,000 distinct cells in a 30^3 box
        b.add(static_cast<float>(i % 30) + 0.5f, static_cast<float>((i / 30) % 30) + 0.5f,
              static_cast<float>(i / 900) + 0.5f);
    {
        const hashgrid::ThreadBackend backend = hashgrid::serial_backend();
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        hashgrid::Grid& g = **grid;
        REQUIRE(g.rebuild(a.spans(), backend).ok());
        REQUIRE(g.cells().map_cell != nullptr);
        const hashgrid::Status st = g.rebuild(b.spans(), backend);
        CHECK(st.code == StatusCode::cell_capacity);
        CHECK(st.needed == n);
        Scene c = permuted(a, g.sorted_to_original());
        for (uint32_t i = 0; i < n; ++i) {
            c.x[i] = std::clamp(c.x[i] + rng.uniform(-0.05f, 0.05f), 0.0f, 19.99f);
            c.y[i] = std::clamp(c.y[i] + rng.uniform(-0.05f, 0.05f), 0.0f, 19.99f);
            c.z[i] = std::clamp(c.z[i] + rng.uniform(-0.05f, 0.05f), 0.0f, 19.99f);
        }
        REQUIRE(g.rebuild(c.spans(), backend).ok());
        CHECK(check_sorted_state(g, c, config) == "");
        CHECK(check_cell_table(g, c, config) == "");
        auto fresh = make_grid(config);
        REQUIRE(fresh->init_status.ok());
        REQUIRE((**fresh).rebuild(c.spans(), backend).ok());
        CHECK(hash_cells(g) == hash_cells(**fresh));
        CHECK(hash_order(g) == hash_order(**fresh));
    }
}

TEST_CASE("frames over the same dense box as the last two: the key pass's guess of the box, held or not") {
    // After two frames over one box, the key pass writes each particle's
    // index in that box instead of its key, and runs again (writing keys)
    // when the frame's box is another. Every frame below must equal a fresh
    // grid's frame of the same input, whichever way it went: guess held on
    // the counting sort, the merge and the presorted path; guess missed
    // (box shifted, grown, not dense); a rejected frame in between.
    ParallelBackend threads2(2);
    const hashgrid::ThreadBackend backends[] = {hashgrid::serial_backend(), threads2.backend()};
    for (uint32_t dims : {2u, 3u})
        for (bool radii : {false, true})
            for (const hashgrid::ThreadBackend& backend : backends) {
                INFO("dims " << dims << " radii " << radii);
                Rng rng(1331 + dims);
                const uint32_t n = 9000; // several key-pass chunks
                const float side = dims == 3 ? 15.0f : 60.0f;
                const GridConfig config = unbounded_config(dims, 1.0f, 1.0f, n + 8, uint64_t{n} * 64);
                Scene scene = uniform_scene(rng, dims, n, 0.0f, side);
                if (radii) add_radii(rng, scene, 0.05f, 0.5f);
                auto grid = make_grid(config);
                REQUIRE(grid->init_status.ok());
                hashgrid::Grid& g = **grid;
                REQUIRE(g.rebuild(scene.spans(), backend).ok());
                float shift = 0.0f;
                const char* frames[] = {"moves",   "moves", "last order", "cell order", "shifted", "moves",
                                        "moves",   "nan",   "moves",      "far",        "no far",  "moves",
                                        "one out", "moves", "moves",      "cell order"};
                for (const char* what : frames) {
                    const std::string name = what;
                    INFO(name);
                    Scene next = scene;
                    if (name == "last order" || name == "cell order") next = permuted(scene, g.sorted_to_original());
                    if (name == "shifted") shift += 1.0f; // the whole box moves by one cell along x
                    if (name == "moves" || name == "last order" || name == "shifted")
                        for (uint32_t i = 0; i < n; ++i) {
                            next.x[i] =
                                shift + std::clamp(next.x[i] - shift + rng.uniform(-0.1f, 0.1f), 0.0f, side - 0.01f);
                            next.y[i] = std::clamp(next.y[i] + rng.uniform(-0.1f, 0.1f), 0.0f, side - 0.01f);
                            if (dims == 3)
                                next.z[i] = std::clamp(next.z[i] + rng.uniform(-0.1f, 0.1f), 0.0f, side - 0.01f);
                        }
                    if (name == "far") next.x[n / 2] = 1.0e5f; // the box would be far too large: the table
                    if (name == "no far") next.x[n / 2] = shift + 0.5f;
                    if (name == "one out") next.y[n / 3] = side + 0.5f; // one cell beyond the box
                    if (name == "nan") {
                        next.y[n - 5] = std::numeric_limits<float>::quiet_NaN();
                        const uint64_t cells_before = hash_cells(g), order_before = hash_order(g);
                        const hashgrid::Status st = g.rebuild(next.spans(), backend);
                        CHECK(st.code == StatusCode::invalid_position);
                        CHECK(st.index == n - 5);
                        CHECK(hash_cells(g) == cells_before);
                        CHECK(hash_order(g) == order_before);
                        continue;
                    }
                    const Frame got = run_frame(g, next, backend, config.max_pairs);
                    REQUIRE(got.rebuild.ok());
                    REQUIRE(got.result.status.ok());
                    CHECK((name == "far") == (g.cells().map_cell == nullptr));
                    CHECK(check_sorted_state(g, next, config) == "");
                    CHECK(check_cell_table(g, next, config) == "");
                    auto fresh = make_grid(config);
                    REQUIRE(fresh->init_status.ok());
                    const Frame expected = run_frame(**fresh, next, hashgrid::serial_backend(), config.max_pairs);
                    REQUIRE(expected.rebuild.ok());
                    CHECK(hash_cells(g) == hash_cells(**fresh));
                    CHECK(hash_order(g) == hash_order(**fresh));
                    CHECK(diff_pairs(expected.pairs, got.pairs.data(), got.pairs.size()) == "");
                    scene = next;
                }
            }
}

namespace {

/// The sub-phases of RebuildTimings::table, in declaration order.
std::vector<uint64_t> table_parts(const hashgrid::RebuildTimings& t) {
    return {t.table_clear, t.table_insert, t.table_sort, t.table_lookup, t.dense_cells, t.dense_compact};
}

/// Which sub-phases a frame of this path must fill: the hashed path's four
/// or the dense path's two (bounded: none).
std::string check_timings(const hashgrid::RebuildTimings& t, bool unbounded, bool hashed) {
    const std::vector<uint64_t> parts = table_parts(t);
    uint64_t sum = 0;
    for (const uint64_t p : parts)
        sum += p;
    if (t.table != sum) return "table " + std::to_string(t.table) + " != sum of sub-phases " + std::to_string(sum);
    if (t.table > t.total) return "table longer than the rebuild";
    for (size_t i = 0; i < parts.size(); ++i) {
        const bool filled = unbounded && (hashed ? i < 4 : i >= 4);
        if ((parts[i] > 0) != filled)
            return "sub-phase " + std::to_string(i) + " is " + std::to_string(parts[i]) + " ns, expected " +
                   (filled ? "> 0" : "0");
    }
    return "";
}

} // namespace

TEST_CASE("rebuild timings: the table's sub-phases per path, summing to table; a bounded world has none") {
    // Sparse clusters take the hashed path, a compact cube the dense box; the
    // frame's cell table (CellTableView: slots or a box map) says which one
    // ran. Frames alternate, so no frame repeats last frame's box (whose
    // dense work the key pass would do) and none is in cell order.
    constexpr uint32_t n = 20000;
    ParallelBackend tbb(3);
    Rng rng(2718);
    const Scene sparse = spread_clusters(rng, 3, n, 40, 200.0f);
    const Scene compact = uniform_scene(rng, 3, n, 0.0f, 20.0f);
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, n, uint64_t{n} * 64);
    for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), tbb.backend()}) {
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        for (uint32_t frame = 0; frame < 6; ++frame) {
            const bool want_hashed = frame % 2 == 0;
            const Scene& s = want_hashed ? sparse : compact;
            INFO("frame " << frame);
            REQUIRE((**grid).rebuild(s.spans(), backend).ok());
            const hashgrid::CellTableView view = (**grid).cells();
            const bool hashed = view.slot_count > 0 && view.map_cell == nullptr;
            REQUIRE(hashed == want_hashed);
            CHECK(check_timings((**grid).last_rebuild_timings(), true, hashed) == "");
        }
        const GridConfig bounded = bounded_config(compact, config, 1);
        auto box = make_grid(bounded);
        REQUIRE(box->init_status.ok());
        for (uint32_t frame = 0; frame < 2; ++frame) {
            REQUIRE((**box).rebuild(compact.spans(), backend).ok());
            const hashgrid::RebuildTimings& t = (**box).last_rebuild_timings();
            CHECK(t.total > 0);
            CHECK(t.table == 0);
            CHECK(check_timings(t, false, false) == "");
        }
    }
}

TEST_CASE("trace: a hashed frame's rebuild.cells holds its four sub-phases in order, back to back") {
    constexpr uint32_t n = 20000;
    Rng rng(3141);
    const Scene sparse = spread_clusters(rng, 3, n, 40, 200.0f);
    const Scene compact = uniform_scene(rng, 3, n, 0.0f, 20.0f);
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, n, uint64_t{n} * 64);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    hashgrid::Trace trace;
    REQUIRE(trace.init_allocate(1u << 12).ok());
    (**grid).set_trace(&trace);
    const std::string subs[4] = {"rebuild.cells.clear", "rebuild.cells.insert", "rebuild.cells.sort",
                                 "rebuild.cells.lookup"};
    for (const bool hashed : {true, false}) {
        INFO((hashed ? "hashed" : "dense"));
        trace.clear();
        REQUIRE((**grid).rebuild((hashed ? sparse : compact).spans(), hashgrid::serial_backend()).ok());
        std::vector<hashgrid::TraceEvent> cells, found;
        for (uint32_t i = 0; i < trace.size(); ++i) {
            hashgrid::TraceEvent e;
            REQUIRE(trace.event(i, e));
            if (e.kind != hashgrid::TraceKind::phase) continue;
            CHECK(e.phase == hashgrid::TracePhase::rebuild); // the steps' spans belong to the call
            const std::string name = hashgrid::trace_event_name(e);
            if (name == "rebuild.cells") cells.push_back(e);
            for (const std::string& sub : subs)
                if (name == sub) found.push_back(e);
        }
        REQUIRE(cells.size() == 1);
        if (!hashed) {
            CHECK(found.empty());
            continue;
        }
        // Events are recorded when they end: in order, each begins where the last ended.
        REQUIRE(found.size() == 4);
        for (size_t k = 0; k < 4; ++k) {
            CHECK(hashgrid::trace_event_name(found[k]) == subs[k]);
            CHECK(cells[0].begin_ns <= found[k].begin_ns);
            CHECK(found[k].end_ns <= cells[0].end_ns);
            if (k > 0) CHECK(found[k].begin_ns == found[k - 1].end_ns);
        }
    }
    (**grid).set_trace(nullptr);
}

// SPDX-License-Identifier: MIT
// Bad input and too-small capacities: every class returns its documented
// status (code, needed, index of the lowest offender, number of offenders) and
// leaves the previous frame intact; too-small caller buffers get an exact
// prefix of the full result.
#include <doctest/doctest.h>

#include "hashgrid/assert.h"
#include "test_support.h"

#include <limits>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::GridConfig;
using hashgrid::Status;
using hashgrid::StatusCode;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// A grid holding one good frame, with the hashes of everything it produced.
struct GoodFrame {
    Scene scene;
    GridConfig config;
    std::unique_ptr<OwnedGrid> grid;
    std::vector<Pair> pairs;
    uint64_t pairs_hash = 0, order_hash = 0, cells_hash = 0;

    /// The grid still holds exactly the good frame: same order, same cell
    /// table, and find_pairs() returns the same pairs.
    [[nodiscard]] std::string intact(const hashgrid::ThreadBackend& backend) {
        hashgrid::Grid& g = **grid;
        if (g.particle_count() != scene.size()) return "particle_count changed";
        if (hash_order(g) != order_hash) return "sorted_to_original changed";
        if (hash_cells(g) != cells_hash) return "cell table changed";
        if (std::string d = check_sorted_state(g, scene, config); !d.empty()) return d;
        std::vector<Pair> again(pairs.size() + 1);
        const hashgrid::PairResult pr = g.find_pairs(again.data(), again.size(), backend);
        if (!pr.status.ok())
            return std::string("find_pairs after the bad frame: ") + hashgrid::to_string(pr.status.code);
        if (hash_pairs(again.data(), pr.written) != pairs_hash) return "pairs changed";
        return "";
    }
};

/// Builds a good frame of `n` uniform points (radii in [0.05, 0.5] * cell when asked).
GoodFrame good_frame(uint32_t dims, uint32_t n, bool radii, const hashgrid::ThreadBackend& backend,
                     hashgrid::World world = hashgrid::World::unbounded) {
    Rng rng(1000 + dims * 10 + n + (radii ? 1 : 0));
    GoodFrame f;
    f.scene = uniform_scene(rng, dims, n, 0.0f, 8.0f);
    if (radii) add_radii(rng, f.scene, 0.05f, 0.5f);
    const std::vector<Pair> expected = brute_force_pairs(f.scene, 1.0f);
    f.config = unbounded_config(dims, 1.0f, 1.0f, n, expected.size() + 8);
    if (world == hashgrid::World::bounded) {
        f.config.world = world;
        for (uint32_t a = 0; a < 3; ++a)
            f.config.cell_counts[a] = a < dims ? 8u : 1u;
    }
    f.grid = make_grid(f.config);
    REQUIRE(f.grid->init_status.ok());
    hashgrid::Grid& g = **f.grid;
    REQUIRE(g.rebuild(f.scene.spans(), backend).ok());
    f.pairs.resize(expected.size() + 1);
    const hashgrid::PairResult pr = g.find_pairs(f.pairs.data(), f.pairs.size(), backend);
    REQUIRE(pr.status.ok());
    REQUIRE(pr.total == expected.size());
    f.pairs.resize(static_cast<size_t>(pr.written));
    f.pairs_hash = hash_pairs(f.pairs.data(), pr.written);
    f.order_hash = hash_order(g);
    f.cells_hash = hash_cells(g);
    return f;
}

/// Offender indices used by the per-particle tests: unsorted, lowest is 3.
std::vector<uint32_t> offenders(uint32_t n) {
    std::vector<uint32_t> v = {n - 1, 3, n / 2, 57, n / 3};
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

void set_coord(Scene& s, uint32_t axis, uint32_t i, float value) {
    (axis == 0 ? s.x : axis == 1 ? s.y : s.z)[i] = value;
}

/// Rebuilds `bad` on the good frame's grid and checks the status and that the
/// previous frame is still there.
void expect_rejected(GoodFrame& f, const Scene& bad, StatusCode code, uint32_t index, uint32_t count,
                     const hashgrid::ThreadBackend& backend) {
    const Status st = (**f.grid).rebuild(bad.spans(), backend);
    CHECK(hashgrid::to_string(st.code) == std::string(hashgrid::to_string(code)));
    CHECK(st.index == index);
    CHECK(st.count == count);
    CHECK(st.message != nullptr);
    CHECK(f.intact(backend) == "");
}

/// Assertion hook that records instead of aborting (for calls whose misuse
/// might be treated as a programmer error).
int g_asserts = 0;
bool counting_hook(const char*, const char*, const char*, int) {
    ++g_asserts;
    return false;
}

std::vector<GridConfig> invalid_configs() {
    const GridConfig good = unbounded_config(3, 1.0f, 1.0f, 100, 1000);
    GridConfig bounded = good;
    bounded.world = hashgrid::World::bounded;
    bounded.cell_counts[0] = bounded.cell_counts[1] = bounded.cell_counts[2] = 4;
    std::vector<GridConfig> v;
    auto with = [&](const GridConfig& base, auto edit) {
        GridConfig c = base;
        edit(c);
        v.push_back(c);
    };
    for (uint32_t d : {0u, 1u, 4u})
        with(good, [&](GridConfig& c) { c.dimensions = d; });
    for (float cs : {0.0f, -0.0f, -1.0f, kNaN, kInf, -kInf})
        with(good, [&](GridConfig& c) { c.cell_size = cs; });
    with(good, [](GridConfig& c) { c.interaction_distance = std::nextafter(1.0f, 2.0f); });
    with(good, [](GridConfig& c) { c.interaction_distance = kInf; });
    with(good, [](GridConfig& c) { c.interaction_distance = kNaN; });
    for (uint32_t a = 0; a < 3; ++a)
        with(bounded, [&](GridConfig& c) { c.cell_counts[a] = 0; });
    with(bounded, [](GridConfig& c) { // product == 2^31
        c.cell_counts[0] = 1u << 11;
        c.cell_counts[1] = 1u << 10;
        c.cell_counts[2] = 1u << 10;
    });
    with(bounded, [](GridConfig& c) { // product overflows 32 bits
        c.cell_counts[0] = c.cell_counts[1] = c.cell_counts[2] = 1u << 12;
    });
    with(good, [](GridConfig& c) { c.max_particles = 1u << 31; });
    with(good, [](GridConfig& c) { c.max_particles = ~0u; });
    with(good, [](GridConfig& c) { c.max_cells = 1u << 30; });
    with(good, [](GridConfig& c) { c.max_pairs = ~uint64_t{0}; });
    with(good, [](GridConfig& c) { c.max_pairs = uint64_t{1} << 62; });
    with(good, [](GridConfig& c) { c.world = static_cast<hashgrid::World>(7); });
    with(bounded, [](GridConfig& c) { c.out_of_bounds = static_cast<hashgrid::OutOfBounds>(9); });
    return v;
}

} // namespace

TEST_CASE("NaN and +-inf in each coordinate: invalid_position, lowest index, count, frame kept") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    for (uint32_t dims : {2u, 3u}) {
        GoodFrame f = good_frame(dims, 300, false, serial);
        for (uint32_t axis = 0; axis < dims; ++axis) {
            for (float value : {kNaN, kInf, -kInf}) {
                INFO("dims " << dims << " axis " << axis << " value " << value);
                Scene bad = f.scene;
                const auto idx = offenders(bad.size());
                for (uint32_t i : idx)
                    set_coord(bad, axis, i, value);
                // A second bad coordinate on an offender does not count twice.
                set_coord(bad, (axis + 1) % dims, idx[1], value);
                expect_rejected(f, bad, StatusCode::invalid_position, idx[0], static_cast<uint32_t>(idx.size()),
                                serial);
            }
        }
    }
}

TEST_CASE("invalid_position index and count do not depend on the thread count") {
    Rng rng(4);
    ParallelBackend tbb3(3);
    GoodFrame f = good_frame(3, 30000, false, tbb3.backend());
    Scene bad = f.scene;
    uint32_t count = 0;
    for (uint32_t i = 977; i < bad.size(); i += 977 + rng.below(3000)) {
        bad.z[i] = kNaN;
        ++count;
    }
    expect_rejected(f, bad, StatusCode::invalid_position, 977, count, tbb3.backend());
    expect_rejected(f, bad, StatusCode::invalid_position, 977, count, hashgrid::serial_backend());
}

TEST_CASE("bounded reject: outside the box is position_out_of_range, frame kept") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    for (uint32_t dims : {2u, 3u}) {
        GoodFrame f = good_frame(dims, 300, false, serial, hashgrid::World::bounded);
        for (uint32_t axis = 0; axis < dims; ++axis) {
            for (float value : {-1.0f, -0.25f, 9.0f, 1.0e6f, -3.0e38f}) {
                INFO("dims " << dims << " axis " << axis << " value " << value);
                Scene bad = f.scene;
                const auto idx = offenders(bad.size());
                for (uint32_t i : idx)
                    set_coord(bad, axis, i, value);
                expect_rejected(f, bad, StatusCode::position_out_of_range, idx[0], static_cast<uint32_t>(idx.size()),
                                serial);
            }
        }
    }
}

TEST_CASE("bounded clamp: outside particles go to border cells and pairs stay exact") {
    Rng rng(77);
    ParallelBackend tbb2(2);
    for (uint32_t dims : {2u, 3u}) {
        // Box [0, 6)^dims, particles spread over [-4, 10) plus a few far away, with close pairs outside.
        Scene s = uniform_scene(rng, dims, 1200, -4.0f, 10.0f);
        for (float distant : {-1.0e6f, 2.5e7f, 3.0e38f, -3.0e38f}) {
            s.add(distant, 3.0f, 3.0f);
            s.add(distant, 3.5f, 3.0f);
            s.add(3.0f, distant, distant);
        }
        const std::vector<Pair> expected = brute_force_pairs(s, 1.0f);
        GridConfig config = unbounded_config(dims, 1.0f, 1.0f, s.size(), expected.size() + 1);
        config.world = hashgrid::World::bounded;
        config.out_of_bounds = hashgrid::OutOfBounds::clamp;
        for (uint32_t a = 0; a < 3; ++a)
            config.cell_counts[a] = a < dims ? 6u : 1u;
        for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), tbb2.backend()}) {
            INFO("dims " << dims << " workers " << backend.worker_count);
            auto grid = make_grid(config);
            REQUIRE(grid->init_status.ok());
            const Frame fr = run_frame(**grid, s, backend, expected.size());
            REQUIRE(fr.rebuild.ok());
            REQUIRE(fr.result.status.ok());
            CHECK(check_sorted_state(**grid, s, config) == "");
            CHECK(check_cell_table(**grid, s, config) == "");
            CHECK(diff_pairs(in_documented_order(expected, expected_order(s, config)), fr.pairs.data(),
                             fr.pairs.size()) == "");
        }
    }
}

TEST_CASE("unbounded: every finite coordinate is accepted, far ones included, and pairs stay exact") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    for (uint32_t dims : {2u, 3u}) {
        GoodFrame f = good_frame(dims, 300, false, serial);
        const double limit = dims == 3 ? 1048576.0 : 1073741824.0;        // where cells start to wrap
        const float beyond = static_cast<float>((limit + 64.0) * 1.0001); // cell_size is 1
        for (uint32_t axis = 0; axis < dims; ++axis) {
            for (float value : {beyond, -beyond, 1.0e30f, -3.0e38f, std::numeric_limits<float>::max()}) {
                INFO("dims " << dims << " axis " << axis << " value " << value);
                Scene moved = f.scene;
                for (uint32_t i : offenders(moved.size()))
                    set_coord(moved, axis, i, value);
                hashgrid::Grid& g = **f.grid;
                REQUIRE(g.rebuild(moved.spans(), serial).ok());
                CHECK(g.cells().wrapped);
                std::vector<Pair> pairs(f.config.max_pairs);
                const hashgrid::PairResult pr = g.find_pairs(pairs.data(), pairs.size(), serial);
                REQUIRE(pr.status.ok());
                const std::vector<Pair> expected =
                    in_documented_order(brute_force_pairs(moved, 1.0f), expected_order(moved, f.config));
                CHECK(diff_pairs(expected, pairs.data(), pr.written) == "");
                CHECK(check_sorted_state(g, moved, f.config) == "");
            }
        }
    }
}

TEST_CASE("radius <= 0, NaN or inf: invalid_radius, frame kept") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    GoodFrame f = good_frame(3, 300, true, serial);
    for (float value : {0.0f, -0.0f, -0.25f, kNaN, kInf, -kInf, -std::numeric_limits<float>::denorm_min()}) {
        INFO("radius " << value);
        Scene bad = f.scene;
        const auto idx = offenders(bad.size());
        for (uint32_t i : idx)
            bad.radius[i] = value;
        expect_rejected(f, bad, StatusCode::invalid_radius, idx[0], static_cast<uint32_t>(idx.size()), serial);
    }
}

TEST_CASE("2 * radius > cell_size: radius_too_large; exactly cell_size / 2 is fine") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    GoodFrame f = good_frame(2, 300, true, serial);
    Scene bad = f.scene;
    const auto idx = offenders(bad.size());
    for (uint32_t i : idx)
        bad.radius[i] = std::nextafter(0.5f, 1.0f);
    expect_rejected(f, bad, StatusCode::radius_too_large, idx[0], static_cast<uint32_t>(idx.size()), serial);
    for (uint32_t i : idx)
        bad.radius[i] = 0.75f;
    expect_rejected(f, bad, StatusCode::radius_too_large, idx[0], static_cast<uint32_t>(idx.size()), serial);

    Scene edge = f.scene;
    for (uint32_t i : idx)
        edge.radius[i] = 0.5f;
    CHECK((**f.grid).rebuild(edge.spans(), serial).ok());
}

TEST_CASE("count > max_particles: particle_capacity with needed = count, frame kept") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    GoodFrame f = good_frame(3, 300, false, serial);
    Rng rng(8);
    const Scene bigger = uniform_scene(rng, 3, 301, 0.0f, 8.0f);
    const Status st = (**f.grid).rebuild(bigger.spans(), serial);
    CHECK(st.code == StatusCode::particle_capacity);
    CHECK(st.needed == 301);
    CHECK(f.intact(serial) == "");
    const Scene exact = uniform_scene(rng, 3, 300, 0.0f, 8.0f);
    CHECK((**f.grid).rebuild(exact.spans(), serial).ok());
}

TEST_CASE("too many distinct cells: cell_capacity with the exact cell count, previous frame kept") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    ParallelBackend tbb2(2);
    for (const hashgrid::ThreadBackend& backend : {serial, tbb2.backend()}) {
        for (uint32_t dims : {2u, 3u}) {
            INFO("dims " << dims << " workers " << backend.worker_count);
            GridConfig config = unbounded_config(dims, 1.0f, 1.0f, 7000, 100000);
            config.max_cells = 40;
            auto grid = make_grid(config);
            REQUIRE(grid->init_status.ok());
            hashgrid::Grid& g = **grid;
            // 40 distinct cells (two particles each, 5 in one): fits exactly.
            Scene fits;
            fits.dims = dims;
            for (int c = 0; c < 40; ++c) {
                fits.add(static_cast<float>(c % 7) + 0.5f, static_cast<float>(c / 7) - 3.5f, 2.25f);
                fits.add(static_cast<float>(c % 7) + 0.25f, static_cast<float>(c / 7) - 3.75f, 2.5f);
            }
            for (int k = 0; k < 5; ++k)
                fits.add(0.5f, -3.5f, 2.25f);
            REQUIRE(g.rebuild(fits.spans(), backend).ok());
            CHECK(g.cells().cell_count == 40);
            const auto expected = brute_force_pairs(fits, 1.0f);
            std::vector<Pair> good(expected.size() + 1);
            const hashgrid::PairResult good_result = g.find_pairs(good.data(), good.size(), backend);
            REQUIRE(good_result.status.ok());
            REQUIRE(diff_pairs(expected, as_set(good.data(), good_result.written).data(), good_result.written) == "");
            const uint64_t good_pairs = hash_pairs(good.data(), good_result.written);
            const uint64_t good_order = hash_order(g);
            const uint64_t good_cells = hash_cells(g);
            // 41 and 3000 distinct cells in a small box (the dense path), then
            // 3000 cells spread far apart (the hashed path).
            for (uint32_t stride : {2u, 1000u})
                for (uint32_t cells : {41u, 3000u}) {
                    INFO("stride " << stride << ", cells " << cells);
                    const Scene over = cells_in_rows(dims, cells, stride);
                    const Status st = g.rebuild(over.spans(), backend);
                    CHECK(st.code == StatusCode::cell_capacity);
                    CHECK(st.needed == cells);
                    // The previous frame answers exactly as before.
                    CHECK(g.particle_count() == fits.size());
                    CHECK(g.cells().cell_count == 40);
                    CHECK(hash_order(g) == good_order);
                    CHECK(hash_cells(g) == good_cells);
                    CHECK(check_cell_table(g, fits, config) == "");
                    std::vector<Pair> out(expected.size() + 1);
                    const hashgrid::PairResult pr = g.find_pairs(out.data(), out.size(), backend);
                    CHECK(pr.status.ok());
                    CHECK(pr.total == expected.size());
                    CHECK(hash_pairs(out.data(), pr.written) == good_pairs);
                }
            // The next good rebuild works again, with exact pairs.
            REQUIRE(g.rebuild(fits.spans(), backend).ok());
            std::vector<Pair> out(expected.size() + 1);
            const hashgrid::PairResult pr = g.find_pairs(out.data(), out.size(), backend);
            CHECK(pr.status.ok());
            CHECK(hash_pairs(out.data(), pr.written) == good_pairs);
        }
    }
}

TEST_CASE("more pairs than max_pairs: pair_capacity with exact needed, exactly max_pairs written") {
    Rng rng(21);
    const Scene s = clustered_scene(rng, 3, 400, 2, 0.0f, 6.0f, 0.8f);
    const std::vector<Pair> expected = brute_force_pairs(s, 1.0f);
    REQUIRE(expected.size() > 100);
    ParallelBackend tbb4(4);
    for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), tbb4.backend()}) {
        for (uint64_t max_pairs : {uint64_t{1}, uint64_t{expected.size() / 2}, uint64_t{expected.size() - 1}}) {
            INFO("max_pairs " << max_pairs << " workers " << backend.worker_count);
            const GridConfig config = unbounded_config(3, 1.0f, 1.0f, s.size(), max_pairs);
            auto grid = make_grid(config);
            REQUIRE(grid->init_status.ok());
            REQUIRE((**grid).rebuild(s.spans(), backend).ok());
            std::vector<Pair> out(expected.size() + 1, Pair{~0u, ~0u});
            const hashgrid::PairResult pr = (**grid).find_pairs(out.data(), out.size(), backend);
            CHECK(pr.status.code == StatusCode::pair_capacity);
            CHECK(pr.status.needed == expected.size());
            CHECK(pr.total == expected.size());
            CHECK(pr.written == max_pairs); // the canonical prefix (test_overflow checks its content)
            CHECK(out[static_cast<size_t>(max_pairs)].a == ~0u);
        }
        const GridConfig config = unbounded_config(3, 1.0f, 1.0f, s.size(), expected.size());
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        const Frame fr = run_frame(**grid, s, backend, expected.size());
        CHECK(fr.result.status.ok());
        CHECK(fr.result.written == expected.size());
    }
}

TEST_CASE("more pairs than max_pairs over many chunks: pair_capacity, and what was written is a prefix") {
    // 20,000 particles: about 20 sweep chunks, published in order while others
    // are still sweeping. With max_pairs below the total, `written` is exactly
    // max_pairs (the buffer is larger): the prefix of the full result.
    Rng rng(77);
    const Scene s = uniform_scene(rng, 3, 20000, 0.0f, 20.0f);
    const GridConfig full_config = unbounded_config(3, 1.0f, 1.0f, s.size(), 2000000);
    auto full_grid = make_grid(full_config);
    REQUIRE(full_grid->init_status.ok());
    const Frame full = run_frame(**full_grid, s, hashgrid::serial_backend(), full_config.max_pairs);
    REQUIRE(full.result.status.ok());
    const uint64_t total = full.result.total;
    REQUIRE(total > 10000);
    ParallelBackend tbb3(3);
    for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), tbb3.backend()}) {
        for (uint64_t max_pairs : {total / 3, total - 1}) {
            INFO("max_pairs " << max_pairs << " workers " << backend.worker_count);
            const GridConfig config = unbounded_config(3, 1.0f, 1.0f, s.size(), max_pairs);
            auto grid = make_grid(config);
            REQUIRE(grid->init_status.ok());
            REQUIRE((**grid).rebuild(s.spans(), backend).ok());
            std::vector<Pair> out(total, Pair{~0u, ~0u});
            const hashgrid::PairResult pr = (**grid).find_pairs(out.data(), out.size(), backend);
            CHECK(pr.status.code == StatusCode::pair_capacity);
            CHECK(pr.status.needed == total);
            CHECK(pr.total == total);
            CHECK(pr.written == max_pairs);
            CHECK(diff_pairs(std::vector<Pair>(full.pairs.begin(), full.pairs.begin() + static_cast<long>(pr.written)),
                             out.data(), pr.written) == "");
        }
    }
}

TEST_CASE("every too-small pair buffer: output_too_small, exact needed, exact prefix") {
    Rng rng(3);
    const Scene s = clustered_scene(rng, 3, 120, 2, 0.0f, 4.0f, 0.7f);
    const std::vector<Pair> expected_set = brute_force_pairs(s, 1.0f);
    const uint64_t count = expected_set.size();
    REQUIRE(count > 20);
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, s.size(), count + 10);
    const std::vector<Pair> full = in_documented_order(expected_set, expected_order(s, config));
    ParallelBackend tbb2(2);
    for (const hashgrid::ThreadBackend& backend : {hashgrid::serial_backend(), tbb2.backend()}) {
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        REQUIRE((**grid).rebuild(s.spans(), backend).ok());
        for (uint64_t capacity = 0; capacity <= count + 2; ++capacity) {
            INFO("capacity " << capacity << " of " << count << ", workers " << backend.worker_count);
            std::vector<Pair> out(static_cast<size_t>(capacity) + 8, Pair{~0u, ~0u});
            const hashgrid::PairResult pr =
                (**grid).find_pairs(capacity == 0 ? nullptr : out.data(), capacity, backend);
            CHECK(pr.total == count);
            if (capacity < count) {
                CHECK(pr.status.code == StatusCode::output_too_small);
                CHECK(pr.status.needed == count);
                CHECK(pr.written == capacity);
            } else {
                CHECK(pr.status.ok());
                CHECK(pr.written == count);
            }
            const uint64_t written = std::min(pr.written, capacity);
            const std::vector<Pair> prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(written));
            CHECK(diff_pairs(prefix, out.data(), written) == "");
            // Past `written` the buffer is scratch up to the capacity; nothing beyond it changes.
            for (size_t k = static_cast<size_t>(capacity); k < out.size(); ++k)
                CHECK((out[k].a == ~0u && out[k].b == ~0u));
        }
    }
}

TEST_CASE("neighbor_lists with too-small indices: output_too_small, offsets valid, indices untouched") {
    Rng rng(13);
    const Scene s = uniform_scene(rng, 2, 200, 0.0f, 5.0f);
    const std::vector<Pair> expected = brute_force_pairs(s, 1.0f);
    REQUIRE(!expected.empty());
    const GridConfig config = unbounded_config(2, 1.0f, 1.0f, s.size(), expected.size() + 1);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    const Frame fr = run_frame(**grid, s, serial, expected.size());
    REQUIRE(fr.result.status.ok());
    std::vector<uint32_t> eo, ei;
    expected_csr(s.size(), expected, eo, ei);
    const uint64_t needed = 2 * expected.size();
    for (uint64_t capacity : {uint64_t{0}, uint64_t{1}, needed / 2, needed - 1}) {
        INFO("indices capacity " << capacity << " of " << needed);
        std::vector<uint32_t> offsets(s.size() + 1, ~0u), indices(static_cast<size_t>(needed), 0xdeadbeefu);
        const Status st = (**grid).neighbor_lists(fr.pairs.data(), fr.pairs.size(), offsets.data(), offsets.size(),
                                                  indices.data(), capacity, serial);
        CHECK(st.code == StatusCode::output_too_small);
        CHECK(st.needed == needed);
        CHECK(diff_u32("offsets", eo, offsets.data()) == "");
        CHECK(std::all_of(indices.begin(), indices.end(), [](uint32_t v) { return v == 0xdeadbeefu; }));
    }
    std::vector<uint32_t> offsets(s.size() + 1), indices(static_cast<size_t>(needed));
    CHECK((**grid)
              .neighbor_lists(fr.pairs.data(), fr.pairs.size(), offsets.data(), offsets.size(), indices.data(), needed,
                              serial)
              .ok());
    CHECK(diff_u32("indices", ei, indices.data()) == "");
}

TEST_CASE("neighbor_lists with too-small offsets: output_too_small, needed = particle_count + 1, nothing written") {
    Rng rng(14);
    const Scene s = uniform_scene(rng, 3, 100, 0.0f, 3.0f);
    const std::vector<Pair> expected = brute_force_pairs(s, 1.0f);
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, s.size(), expected.size() + 1);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    const Frame fr = run_frame(**grid, s, hashgrid::serial_backend(), expected.size());
    REQUIRE(fr.result.status.ok());
    // Buffers are large enough in reality, so a library that ignores the
    // capacity cannot corrupt memory; asserts are counted, not fatal.
    std::vector<uint32_t> offsets(s.size() + 1, 0xdeadbeefu), indices(2 * expected.size() + 1, 0xdeadbeefu);
    g_asserts = 0;
    hashgrid::set_assert_hook(counting_hook);
    const Status st = (**grid).neighbor_lists(fr.pairs.data(), fr.pairs.size(), offsets.data(), s.size(),
                                              indices.data(), indices.size(), hashgrid::serial_backend());
    hashgrid::set_assert_hook(nullptr);
    CHECK(g_asserts == 0);
    CHECK(st.code == StatusCode::output_too_small);
    CHECK(st.needed == uint64_t{s.size()} + 1);
    CHECK(std::all_of(offsets.begin(), offsets.end(), [](uint32_t v) { return v == 0xdeadbeefu; }));
    CHECK(std::all_of(indices.begin(), indices.end(), [](uint32_t v) { return v == 0xdeadbeefu; }));
}

TEST_CASE("find_pairs before any rebuild: not_built") {
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, 10, 10);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    std::vector<Pair> out(4);
    const hashgrid::PairResult pr = (**grid).find_pairs(out.data(), out.size(), hashgrid::serial_backend());
    CHECK(pr.status.code == StatusCode::not_built);
    CHECK(pr.written == 0);
}

TEST_CASE("invalid configs: memory_requirements, validate and init give invalid_config") {
    const auto configs = invalid_configs();
    // Memory for init: generous and aligned, so that only the config can be at fault.
    const GridConfig good = unbounded_config(3, 1.0f, 1.0f, 100, 1000);
    const hashgrid::MemoryRequirements good_req = hashgrid::memory_requirements(good);
    REQUIRE(good_req.status.ok());
    void* memory = hashgrid::aligned_alloc_bytes(good_req.bytes * 4, 4096);
    REQUIRE(memory != nullptr);
    for (size_t k = 0; k < configs.size(); ++k) {
        const GridConfig& c = configs[k];
        INFO("invalid config #" << k << " dims " << c.dimensions << " cell " << c.cell_size << " r "
                                << c.interaction_distance << " counts " << c.cell_counts[0] << "x" << c.cell_counts[1]
                                << "x" << c.cell_counts[2] << " max_particles " << c.max_particles << " max_cells "
                                << c.max_cells << " max_pairs " << c.max_pairs);
        const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(c);
        CHECK(req.status.code == StatusCode::invalid_config);
        CHECK(req.bytes == 0);
        CHECK(req.status.message != nullptr);
        CHECK(hashgrid::validate(c).code == StatusCode::invalid_config);
        hashgrid::Grid grid;
        CHECK(grid.init(c, memory, static_cast<size_t>(good_req.bytes * 4)).code == StatusCode::invalid_config);
        CHECK(!grid.initialized());
    }
    hashgrid::aligned_free_bytes(memory);
}

TEST_CASE("largest documented capacities are valid configs") {
    GridConfig c = unbounded_config(3, 1.0f, 1.0f, 100, 1000);
    c.max_particles = (1u << 31) - 1;
    CHECK(hashgrid::validate(c).ok());
    c = unbounded_config(3, 1.0f, 1.0f, 100, 1000);
    c.max_cells = (1u << 30) - 1;
    CHECK(hashgrid::validate(c).ok());
    c = unbounded_config(3, 1.0f, 1.0f, 100, 1000);
    c.world = hashgrid::World::bounded;
    c.cell_counts[0] = (1u << 11) - 1;
    c.cell_counts[1] = 1u << 10;
    c.cell_counts[2] = 1u << 10;
    CHECK(hashgrid::validate(c).ok());
    c.interaction_distance = c.cell_size; // r == cell is the tightest legal setting
    CHECK(hashgrid::validate(c).ok());
}

TEST_CASE("non-finite origin is an invalid config") {
    for (float o : {kNaN, kInf, -kInf}) {
        for (uint32_t a = 0; a < 3; ++a) {
            GridConfig c = unbounded_config(3, 1.0f, 1.0f, 100, 1000);
            c.origin[a] = o;
            INFO("origin[" << a << "] = " << o);
            CHECK(hashgrid::validate(c).code == StatusCode::invalid_config);
        }
    }
}

TEST_CASE("init with too little memory: memory_too_small with needed = bytes") {
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, 1000, 5000);
    const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
    REQUIRE(req.status.ok());
    REQUIRE(req.bytes > 0);
    void* memory = hashgrid::aligned_alloc_bytes(req.bytes, req.alignment);
    REQUIRE(memory != nullptr);
    for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, req.bytes / 2, req.bytes - 1}) {
        INFO("bytes " << bytes << " of " << req.bytes);
        hashgrid::Grid grid;
        const Status st = grid.init(config, memory, static_cast<size_t>(bytes));
        CHECK(st.code == StatusCode::memory_too_small);
        CHECK(st.needed == req.bytes);
        CHECK(!grid.initialized());
    }
    {
        hashgrid::Grid grid;
        CHECK(grid.init(config, memory, static_cast<size_t>(req.bytes)).ok());
        CHECK(grid.initialized());
    }
    hashgrid::aligned_free_bytes(memory);
}

TEST_CASE("init with misaligned memory: memory_misaligned") {
    const GridConfig config = unbounded_config(2, 1.0f, 1.0f, 1000, 5000);
    const hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
    REQUIRE(req.status.ok());
    REQUIRE(req.alignment >= 8);
    CHECK((req.alignment & (req.alignment - 1)) == 0);
    auto* memory = static_cast<unsigned char*>(hashgrid::aligned_alloc_bytes(req.bytes + req.alignment, req.alignment));
    REQUIRE(memory != nullptr);
    for (uint32_t offset : {1u, 4u, req.alignment / 2}) {
        INFO("offset " << offset);
        hashgrid::Grid grid;
        CHECK(grid.init(config, memory + offset, static_cast<size_t>(req.bytes)).code == StatusCode::memory_misaligned);
        CHECK(!grid.initialized());
    }
    hashgrid::aligned_free_bytes(memory);
}

TEST_CASE("to_string names every status code") {
    for (uint32_t c = 0; c <= static_cast<uint32_t>(StatusCode::not_built); ++c) {
        const char* name = hashgrid::to_string(static_cast<StatusCode>(c));
        REQUIRE(name != nullptr);
        CHECK(std::string(name).size() > 1);
    }
    CHECK(std::string(hashgrid::to_string(StatusCode::pair_capacity)) == "pair_capacity");
    CHECK(std::string(hashgrid::to_string(StatusCode::ok)) == "ok");
}

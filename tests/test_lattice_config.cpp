// SPDX-License-Identifier: MIT
// LatticeConfig (lattice_config.h): one description of the cell lattice for
// every grid kind, validated in one place. A bad lattice gives the same
// invalid_config, message included, from validate(LatticeConfig) and from
// every grid kind's validate, memory_requirements and init; a lattice copied
// from a particle-grid config into a box-grid config gives the same cells.
#include <doctest/doctest.h>

#include "hashgrid/box_grid.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/lattice_config.h"
#include "hashgrid/proximity_index.h"
#include "hashgrid/thread_backend.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using hashgrid::BoxGrid;
using hashgrid::BoxGridConfig;
using hashgrid::Grid;
using hashgrid::GridConfig;
using hashgrid::LatticeConfig;
using hashgrid::OutOfBounds;
using hashgrid::ProximityIndex;
using hashgrid::ProximityIndexConfig;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::World;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// A particle-grid config with valid capacities around a lattice.
GridConfig grid_config(const LatticeConfig& lattice) {
    GridConfig c;
    static_cast<LatticeConfig&>(c) = lattice;
    c.interaction_distance = c.cell_size; // when cell_size is bad, the lattice rules answer first
    c.max_particles = 64;
    c.max_cells = 64;
    c.max_pairs = 256;
    return c;
}

/// A box-grid config with valid capacities around a lattice.
BoxGridConfig box_config(const LatticeConfig& lattice) {
    BoxGridConfig c;
    static_cast<LatticeConfig&>(c) = lattice;
    c.max_objects = 64;
    c.max_cell_entries = 256;
    c.max_pairs = 256;
    return c;
}

ProximityIndexConfig index_config(const LatticeConfig& lattice) {
    ProximityIndexConfig c;
    c.grid = box_config(lattice);
    return c;
}

LatticeConfig lattice(uint32_t dims, World world) {
    LatticeConfig l;
    l.dimensions = dims;
    l.world = world;
    l.cell_size = 1.0f;
    if (world == World::bounded)
        for (uint32_t a = 0; a < 3; ++a)
            l.cell_counts[a] = a < dims ? 4u : 1u;
    return l;
}

struct BadLattice {
    std::string what;
    LatticeConfig lattice;
    std::string message; ///< What every kind answers.
};

/// Every lattice rule, broken once per entry, in 2D and 3D, bounded and
/// unbounded where the rule applies.
std::vector<BadLattice> bad_lattices() {
    std::vector<BadLattice> v;
    auto add = [&](const std::string& what, uint32_t dims, World world, const std::function<void(LatticeConfig&)>& edit,
                   const char* message) {
        LatticeConfig l = lattice(dims, world);
        edit(l);
        const std::string where =
            " (" + std::to_string(dims) + "D " + (world == World::bounded ? "bounded" : "unbounded") + ")";
        v.push_back({what + where, l, message});
    };
    for (uint32_t dims : {2u, 3u}) {
        for (World world : {World::unbounded, World::bounded}) {
            for (uint32_t d : {0u, 1u, 4u, 0xffffffffu})
                add(
                    "dimensions " + std::to_string(d), dims, world, [d](LatticeConfig& l) { l.dimensions = d; },
                    "dimensions must be 2 or 3");
            for (float cs : {0.0f, -0.0f, -1.0f, kNaN, kInf, -kInf})
                add(
                    "cell_size " + std::to_string(cs), dims, world, [cs](LatticeConfig& l) { l.cell_size = cs; },
                    "cell_size must be finite and > 0");
            for (uint32_t a = 0; a < dims; ++a)
                for (float o : {kNaN, kInf, -kInf})
                    add(
                        "origin[" + std::to_string(a) + "] " + std::to_string(o), dims, world,
                        [a, o](LatticeConfig& l) { l.origin[a] = o; }, "origin must be finite");
        }
        add(
            "world 7", dims, World::unbounded, [](LatticeConfig& l) { l.world = static_cast<World>(7); },
            "world must be bounded or unbounded");
        add(
            "world 2", dims, World::bounded, [](LatticeConfig& l) { l.world = static_cast<World>(2); },
            "world must be bounded or unbounded");
        for (uint32_t a = 0; a < dims; ++a)
            add(
                "cell_counts[" + std::to_string(a) + "] 0", dims, World::bounded,
                [a](LatticeConfig& l) { l.cell_counts[a] = 0; }, "bounded world: cell_counts must be >= 1");
        add(
            "cell count product 2^31", dims, World::bounded,
            [dims](LatticeConfig& l) {
                l.cell_counts[0] = dims == 3 ? 1u << 11 : 1u << 16;
                l.cell_counts[1] = dims == 3 ? 1u << 10 : 1u << 15;
                l.cell_counts[2] = dims == 3 ? 1u << 10 : 1u;
            },
            "bounded world: total cells must be < 2^31");
        add(
            "cell count product overflowing 32 bits", dims, World::bounded,
            [](LatticeConfig& l) { l.cell_counts[0] = l.cell_counts[1] = l.cell_counts[2] = 1u << 20; },
            "bounded world: total cells must be < 2^31");
        add(
            "cell_counts[0] 2^31", dims, World::bounded, [](LatticeConfig& l) { l.cell_counts[0] = 1u << 31; },
            "bounded world: total cells must be < 2^31");
        add(
            "out_of_bounds 9", dims, World::bounded,
            [](LatticeConfig& l) { l.out_of_bounds = static_cast<OutOfBounds>(9); },
            "out_of_bounds must be reject or clamp");
    }
    return v;
}

/// Lattices every kind accepts: what the rules leave out is not checked.
std::vector<LatticeConfig> good_lattices() {
    std::vector<LatticeConfig> v;
    for (uint32_t dims : {2u, 3u}) {
        for (World world : {World::unbounded, World::bounded}) {
            v.push_back(lattice(dims, world));
            LatticeConfig l = lattice(dims, world);
            l.cell_size = std::numeric_limits<float>::denorm_min();
            l.origin[0] = -3.0e38f;
            l.origin[1] = 1.0e-40f;
            l.out_of_bounds = OutOfBounds::clamp;
            v.push_back(l);
        }
        // Unbounded: cell_counts and out_of_bounds are not read.
        LatticeConfig u = lattice(dims, World::unbounded);
        u.cell_counts[0] = 0;
        u.cell_counts[1] = 1u << 31;
        u.out_of_bounds = static_cast<OutOfBounds>(9);
        v.push_back(u);
        // Largest cell count product, on one axis and spread over all.
        LatticeConfig b = lattice(dims, World::bounded);
        b.cell_counts[0] = dims == 3 ? (1u << 11) - 1 : (1u << 16) - 1;
        b.cell_counts[1] = dims == 3 ? 1u << 10 : 1u << 15;
        b.cell_counts[2] = dims == 3 ? 1u << 10 : 1u;
        v.push_back(b);
    }
    // 2D: the z entries are not read.
    LatticeConfig flat = lattice(2, World::bounded);
    flat.origin[2] = kNaN;
    flat.cell_counts[2] = 0;
    v.push_back(flat);
    return v;
}

void check_same(const Status& s, const Status& expected) {
    CHECK(s.code == expected.code);
    CHECK(std::string(s.message) == std::string(expected.message));
}

} // namespace

TEST_CASE("every lattice rule gives the same invalid_config from the lattice and from every grid kind") {
    const std::vector<BadLattice> table = bad_lattices();
    REQUIRE(table.size() > 50);
    for (const BadLattice& bad : table) {
        INFO(bad.what);
        const Status expected = hashgrid::validate(bad.lattice);
        REQUIRE(expected.code == StatusCode::invalid_config);
        CHECK(std::string(expected.message) == bad.message);

        // Particle grid.
        const GridConfig g = grid_config(bad.lattice);
        check_same(hashgrid::validate(g), expected);
        const hashgrid::MemoryRequirements gr = hashgrid::memory_requirements(g);
        check_same(gr.status, expected);
        CHECK(gr.bytes == 0);
        check_same(Grid::validate(g), expected); // the form every other type has
        check_same(Grid::memory_requirements(g).status, expected);
        Grid grid;
        check_same(grid.init_allocate(g), expected);
        CHECK(!grid.initialized());

        // Box grid.
        const BoxGridConfig b = box_config(bad.lattice);
        check_same(BoxGrid::validate(b), expected);
        const hashgrid::MemoryRequirements br = BoxGrid::memory_requirements(b);
        check_same(br.status, expected);
        CHECK(br.bytes == 0);
        BoxGrid boxes;
        check_same(boxes.init_allocate(b), expected);
        CHECK(!boxes.initialized());

        // Proximity index (a box grid inside).
        const ProximityIndexConfig p = index_config(bad.lattice);
        check_same(ProximityIndex::validate(p), expected);
        const hashgrid::MemoryRequirements pr = ProximityIndex::memory_requirements(p);
        check_same(pr.status, expected);
        CHECK(pr.bytes == 0);
        ProximityIndex index;
        check_same(index.init_allocate(p), expected);
        CHECK(!index.initialized());
    }

    const std::vector<LatticeConfig> good = good_lattices();
    for (size_t i = 0; i < good.size(); ++i) {
        INFO("good lattice " << i);
        CHECK(hashgrid::validate(good[i]).ok());
        CHECK(hashgrid::validate(grid_config(good[i])).ok());
        // A 2^31-cell bounded particle grid needs more than a 32-bit target can address.
        uint64_t cells = 1;
        for (uint32_t a = 0; a < good[i].dimensions; ++a)
            cells *= good[i].world == World::bounded ? good[i].cell_counts[a] : 1u;
        const bool huge = cells > (1u << 20);
        if (!huge || sizeof(size_t) == 8) {
            const hashgrid::MemoryRequirements free_form = hashgrid::memory_requirements(grid_config(good[i]));
            const hashgrid::MemoryRequirements member = Grid::memory_requirements(grid_config(good[i]));
            CHECK(free_form.status.ok());
            CHECK(member.status.ok());
            CHECK(member.bytes == free_form.bytes);
            CHECK(member.alignment == free_form.alignment);
        }
        CHECK(Grid::validate(grid_config(good[i])).ok());
        CHECK(BoxGrid::validate(box_config(good[i])).ok());
        CHECK(BoxGrid::memory_requirements(box_config(good[i])).status.ok());
        CHECK(ProximityIndex::validate(index_config(good[i])).ok());
    }
}

TEST_CASE("grid-kind rules come after the lattice rules and only where they differ") {
    // The particle grid also needs interaction_distance <= cell_size.
    GridConfig g = grid_config(lattice(3, World::unbounded));
    g.cell_size = 0.25f;
    CHECK(hashgrid::validate(static_cast<const LatticeConfig&>(g)).ok());
    Status s = hashgrid::validate(g);
    CHECK(s.code == StatusCode::invalid_config);
    CHECK(std::string(s.message) == "interaction_distance must be <= cell_size");

    // A bounded 3D box grid names cells by packed keys: at most 2^20 - 1 cells
    // per axis. The particle grid has no such limit.
    for (uint32_t axis = 0; axis < 3; ++axis) {
        INFO("axis " << axis);
        LatticeConfig l = lattice(3, World::bounded);
        l.cell_counts[0] = l.cell_counts[1] = l.cell_counts[2] = 1;
        l.cell_counts[axis] = uint32_t{hashgrid::kKeyLimit3} + 2; // 2^20
        CHECK(hashgrid::validate(l).ok());
        CHECK(hashgrid::validate(grid_config(l)).ok());
        s = BoxGrid::validate(box_config(l));
        CHECK(s.code == StatusCode::invalid_config);
        CHECK(std::string(s.message) == "bounded 3D world: each cell count must be <= 2^20 - 1");
        check_same(ProximityIndex::validate(index_config(l)), s);
        l.cell_counts[axis] = uint32_t{hashgrid::kKeyLimit3} + 1;
        CHECK(BoxGrid::validate(box_config(l)).ok());
    }
    // In 2D the lattice rules are all.
    LatticeConfig flat = lattice(2, World::bounded);
    flat.cell_counts[0] = 1u << 30;
    flat.cell_counts[1] = 1;
    CHECK(BoxGrid::validate(box_config(flat)).ok());
}

namespace {

/// Occupied cells of a particle grid as packed keys, ascending.
std::vector<uint64_t> particle_cells(const Grid& grid, const GridConfig& c) {
    const hashgrid::CellTableView v = grid.cells();
    std::vector<uint64_t> keys;
    for (uint32_t i = 0; i < v.cell_count; ++i) {
        if (v.start[i + 1] == v.start[i]) continue;
        if (v.key != nullptr) {
            keys.push_back(v.key[i]);
            continue;
        }
        // Bounded: dense index (z * ny + y) * nx + x.
        const auto x = static_cast<int32_t>(i % c.cell_counts[0]);
        const auto y = static_cast<int32_t>(i / c.cell_counts[0] % c.cell_counts[1]);
        const auto z = static_cast<int32_t>(i / c.cell_counts[0] / c.cell_counts[1]);
        keys.push_back(c.dimensions == 3 ? hashgrid::pack_key3(x, y, z) : hashgrid::pack_key2(x, y));
    }
    return keys;
}

} // namespace

TEST_CASE("a lattice copied from a GridConfig into a BoxGridConfig gives the same cells") {
    const hashgrid::ThreadBackend serial = hashgrid::serial_backend();
    uint64_t state = 12345;
    auto next = [&state] { // deterministic, in [-1, 1)
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<float>(static_cast<double>(state >> 11) / static_cast<double>(uint64_t{1} << 52) - 1.0);
    };
    for (uint32_t dims : {2u, 3u}) {
        for (World world : {World::unbounded, World::bounded}) {
            for (OutOfBounds oob : {OutOfBounds::reject, OutOfBounds::clamp}) {
                if (world == World::unbounded && oob == OutOfBounds::clamp) continue;
                INFO("dims " << dims << " bounded " << (world == World::bounded) << " clamp "
                             << (oob == OutOfBounds::clamp));
                GridConfig g;
                g.dimensions = dims;
                g.world = world;
                g.cell_size = 0.75f;
                g.interaction_distance = 0.5f;
                g.origin[0] = -3.0f;
                g.origin[1] = -2.5f;
                g.origin[2] = -4.0f;
                g.cell_counts[0] = 9;
                g.cell_counts[1] = 7;
                g.cell_counts[2] = dims == 3 ? 11u : 1u;
                g.out_of_bounds = oob;
                g.max_particles = 200;
                g.max_cells = 200;
                g.max_pairs = 200 * 200;

                BoxGridConfig b;
                static_cast<LatticeConfig&>(b) = g;
                b.max_objects = 200;
                b.max_cell_entries = 200;
                b.max_pairs = 200 * 200;
                CHECK(b.dimensions == g.dimensions);
                CHECK(b.cell_size == g.cell_size);
                CHECK(b.world == g.world);
                CHECK(b.out_of_bounds == g.out_of_bounds);
                for (uint32_t a = 0; a < 3; ++a) {
                    CHECK(b.origin[a] == g.origin[a]);
                    CHECK(b.cell_counts[a] == g.cell_counts[a]);
                }
                // The capacities stay the box grid's own.
                CHECK(b.large_object_cells == BoxGridConfig{}.large_object_cells);

                // Points as zero-size boxes; with clamp some lie outside the box.
                const float spread = oob == OutOfBounds::clamp ? 8.0f : 2.4f;
                std::vector<float> p[3];
                for (uint32_t i = 0; i < 200; ++i)
                    for (std::vector<float>& axis : p)
                        axis.push_back(spread * next());
                Grid grid;
                REQUIRE(grid.init_allocate(g).ok());
                REQUIRE(grid.rebuild({p[0].data(), p[1].data(), p[2].data(), nullptr, 200}, serial).ok());
                BoxGrid boxes;
                REQUIRE(boxes.init_allocate(b).ok());
                const hashgrid::BoxSpans spans{p[0].data(), p[1].data(), p[2].data(), p[0].data(), p[1].data(),
                                               p[2].data(), nullptr,     nullptr,     200};
                REQUIRE(boxes.rebuild(spans, serial).ok());

                const std::vector<uint64_t> from_particles = particle_cells(grid, g);
                const hashgrid::BoxGridView view = boxes.view();
                const std::vector<uint64_t> from_boxes(view.cell_key, view.cell_key + view.cell_count);
                CHECK(from_particles.size() > 20);
                CHECK(from_particles == from_boxes);
            }
        }
    }
}

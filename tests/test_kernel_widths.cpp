// SPDX-License-Identifier: MIT
// Every kernel family that set_pair_kernel selects (kernel_dispatch.h) gives
// the scalar width's bytes at every width this build and CPU have: the
// particle box and radius query runs, the box objects' query entries and the
// rebuild's key block. Scene sizes straddle the vector widths (4, 8 and the
// 16 lanes of two NEON key blocks) and some queries' hits overflow the
// kernels' 256-entry hit buffer. The scalar width is itself checked against
// brute force, so a kernel that agrees with a wrong scalar path still fails.
#include <doctest/doctest.h>

#include "test_support.h"

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/particle_queries.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace hashgrid_test;
using hashgrid::PairKernel;

namespace {

/// Sizes around 4, 8 and 16 lanes and a hit buffer's 256 entries.
constexpr uint32_t kSizes[] = {1, 2, 3, 5, 7, 9, 15, 17, 31, 33, 255, 257, 1001};

/// n points in [0, extent)^dims, a third of them packed into one cell so that
/// a query over it collects more hits than the hit buffer holds.
Scene mixed_scene(Rng& rng, uint32_t dims, uint32_t n, float extent) {
    Scene s = uniform_scene(rng, dims, n - n / 3, 0.0f, extent);
    for (uint32_t i = 0; i < n / 3; ++i)
        s.add(rng.uniform(1.0f, 2.9f), rng.uniform(1.0f, 2.9f), dims == 3 ? rng.uniform(1.0f, 2.9f) : 0.0f);
    for (uint32_t i = 0; i < s.size(); ++i) {
        s.x[i] = on_grid(s.x[i]);
        s.y[i] = on_grid(s.y[i]);
        s.z[i] = on_grid(s.z[i]);
    }
    return s;
}

/// The particles brute force finds, in the grid's sorted order.
template <typename Hit>
std::vector<uint32_t> particle_oracle(const hashgrid::Grid& grid, uint32_t n, Hit&& hit) {
    std::vector<uint32_t> found;
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t i = grid.sorted_to_original()[k];
        if (hit(i)) found.push_back(i);
    }
    return found;
}

template <typename Run>
std::vector<uint32_t> collect(uint64_t capacity, Run&& run) {
    std::vector<uint32_t> out(static_cast<size_t>(capacity) + 1, 0xdeadbeefu);
    const hashgrid::QueryResult r = run(out.data(), capacity);
    REQUIRE(r.status.ok());
    REQUIRE(r.written == r.total);
    CHECK(out[static_cast<size_t>(r.written)] == 0xdeadbeefu);
    out.resize(static_cast<size_t>(r.written));
    return out;
}

} // namespace

TEST_CASE("particle query runs: every width gives the scalar width's bytes, and scalar gives brute force's") {
    KernelGuard guard;
    const std::vector<PairKernel> widths = available_kernels();
    MESSAGE("widths: " << widths.size());
    Rng rng(9001);
    for (uint32_t dims = 2; dims <= 3; ++dims)
        for (const bool bounded : {false, true})
            for (const uint32_t n : kSizes) {
                const Scene s = mixed_scene(rng, dims, n, 24.0f);
                hashgrid::GridConfig config = unbounded_config(dims, 2.0f, 2.0f, s.size(), 1);
                if (bounded) config = bounded_config(s, config, 1);
                auto grid = make_grid(config);
                REQUIRE(grid->init_status.ok());
                REQUIRE((**grid).rebuild(s.spans(), hashgrid::serial_backend()).ok());
                for (int q = 0; q < 12; ++q) {
                    INFO("dims " << dims << " bounded " << bounded << " n " << n << " query " << q);
                    hashgrid::QueryBox b;
                    hashgrid::QuerySphere sphere{{0.0f, 0.0f, 0.0f}, 0.0f};
                    // Query 0 holds every particle: pieces of 256 hits and more.
                    const float half = q == 0 ? 40.0f : rng.uniform(0.5f, 8.0f);
                    for (uint32_t a = 0; a < dims; ++a) {
                        const float c = q % 2 == 0 ? 2.0f : rng.uniform(-2.0f, 26.0f);
                        sphere.center[a] = c;
                        b.min[a] = c - half;
                        b.max[a] = c + half;
                    }
                    const uint32_t j = rng.below(s.size());
                    b.max[0] = std::max(b.min[0], s.x[j]); // particles on the closed faces
                    b.min[1] = std::min(b.max[1], s.y[rng.below(s.size())]);
                    sphere.radius = q == 0 ? 80.0f : half;
                    if (q % 3 == 1) {
                        // Particle j exactly at the radius (d2 == r2: not a result).
                        sphere.center[0] = s.x[j] + 0.5f;
                        sphere.center[1] = s.y[j];
                        sphere.center[2] = dims == 3 ? s.z[j] : 0.0f;
                        sphere.radius = 0.5f;
                    }
                    const float r2 = sphere.radius * sphere.radius;
                    const std::vector<uint32_t> box_truth = particle_oracle(**grid, s.size(), [&](uint32_t i) {
                        bool inside = true;
                        for (uint32_t a = 0; a < dims; ++a)
                            inside = inside && s.coord(a, i) >= b.min[a] && s.coord(a, i) <= b.max[a];
                        return inside;
                    });
                    const std::vector<uint32_t> sphere_truth = particle_oracle(**grid, s.size(), [&](uint32_t i) {
                        const float dx = s.x[i] - sphere.center[0], dy = s.y[i] - sphere.center[1];
                        float d2 = dx * dx + dy * dy;
                        if (dims == 3) {
                            const float dz = s.z[i] - sphere.center[2];
                            d2 = d2 + dz * dz;
                        }
                        return d2 < r2;
                    });
                    std::vector<uint32_t> box_scalar, sphere_scalar;
                    for (const PairKernel w : widths) {
                        INFO("width " << width_name(w));
                        REQUIRE(hashgrid::set_pair_kernel(w));
                        const std::vector<uint32_t> got_box = collect(s.size(), [&](uint32_t* out, uint64_t cap) {
                            return hashgrid::query_box(**grid, b, out, cap);
                        });
                        const std::vector<uint32_t> got_sphere = collect(s.size(), [&](uint32_t* out, uint64_t cap) {
                            return hashgrid::query_radius(**grid, sphere, out, cap);
                        });
                        if (w == PairKernel::scalar) {
                            CHECK(got_box == box_truth);
                            CHECK(got_sphere == sphere_truth);
                            box_scalar = got_box;
                            sphere_scalar = got_sphere;
                        }
                        CHECK(got_box == box_scalar);
                        CHECK(got_sphere == sphere_scalar);
                    }
                }
            }
}

namespace {

struct BoxScene {
    std::vector<float> lo[3], hi[3];
    [[nodiscard]] uint32_t size() const { return static_cast<uint32_t>(lo[0].size()); }
    [[nodiscard]] hashgrid::BoxSpans spans() const {
        hashgrid::BoxSpans b;
        b.min_x = lo[0].data();
        b.min_y = lo[1].data();
        b.min_z = lo[2].data();
        b.max_x = hi[0].data();
        b.max_y = hi[1].data();
        b.max_z = hi[2].data();
        b.count = size();
        return b;
    }
};

/// n boxes in [0, extent)^3 (z flat in 2D), a third of them small ones
/// inside one cell.
BoxScene box_scene(Rng& rng, uint32_t dims, uint32_t n, float extent) {
    BoxScene s;
    for (uint32_t i = 0; i < n; ++i) {
        const bool packed = i < n / 3;
        for (uint32_t a = 0; a < 3; ++a) {
            const float lo = a >= dims ? 0.0f : on_grid(packed ? rng.uniform(1.0f, 2.5f) : rng.uniform(0.0f, extent));
            const float size = a >= dims ? 0.0f : on_grid(packed ? rng.uniform(0.0f, 0.4f) : rng.uniform(0.0f, 3.0f));
            s.lo[a].push_back(lo);
            s.hi[a].push_back(lo + size);
        }
    }
    return s;
}

std::vector<uint32_t> sorted(std::vector<uint32_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

} // namespace

TEST_CASE("box object query entries: every width gives the scalar width's bytes, and scalar gives brute force's") {
    KernelGuard guard;
    const std::vector<PairKernel> widths = available_kernels();
    Rng rng(77);
    for (uint32_t dims = 2; dims <= 3; ++dims)
        for (const bool bounded : {false, true})
            for (const uint32_t n : kSizes) {
                const BoxScene s = box_scene(rng, dims, n, 24.0f);
                hashgrid::BoxGridConfig c;
                c.dimensions = dims;
                c.cell_size = 4.0f;
                c.world = bounded ? hashgrid::World::bounded : hashgrid::World::unbounded;
                for (uint32_t a = 0; a < 3; ++a)
                    c.cell_counts[a] = bounded ? (a < dims ? 8u : 1u) : 0u;
                c.max_objects = n;
                c.max_cell_entries = 8 * n + 1;
                c.max_pairs = 1;
                hashgrid::BoxGrid grid;
                REQUIRE(grid.init_allocate(c).ok());
                REQUIRE(grid.rebuild(s.spans(), hashgrid::serial_backend()).ok());
                const hashgrid::BoxQueryGrid qg =
                    hashgrid::prepare_box_queries(grid.view(), hashgrid::serial_backend());
                for (int q = 0; q < 12; ++q) {
                    INFO("dims " << dims << " bounded " << bounded << " n " << n << " query " << q);
                    hashgrid::QueryBox b;
                    hashgrid::QuerySphere sphere{{0.0f, 0.0f, 0.0f}, 0.0f};
                    const float half = q == 0 ? 40.0f : rng.uniform(0.2f, 6.0f);
                    for (uint32_t a = 0; a < dims; ++a) {
                        const float centre = q % 2 == 0 ? 2.0f : rng.uniform(-1.0f, 25.0f);
                        sphere.center[a] = centre;
                        b.min[a] = centre - half;
                        b.max[a] = centre + half;
                    }
                    const uint32_t j = rng.below(n);
                    b.max[0] = std::max(b.min[0], s.lo[0][j]); // objects touching the closed faces
                    b.min[1] = std::min(b.max[1], s.hi[1][rng.below(n)]);
                    sphere.radius = q == 0 ? 80.0f : half;
                    if (q % 3 == 1) {
                        // Object j exactly at the radius (d2 == r2: a result).
                        sphere.center[0] = s.hi[0][j] + 0.5f;
                        sphere.center[1] = s.lo[1][j];
                        sphere.center[2] = dims == 3 ? s.hi[2][j] : 0.0f;
                        sphere.radius = 0.5f;
                    }
                    const float r2 = sphere.radius * sphere.radius;
                    std::vector<uint32_t> box_truth, sphere_truth;
                    for (uint32_t i = 0; i < n; ++i) {
                        bool meets = true;
                        for (uint32_t a = 0; a < dims; ++a)
                            meets = meets && b.min[a] <= s.hi[a][i] && s.lo[a][i] <= b.max[a];
                        if (meets) box_truth.push_back(i);
                        const float lo[3] = {s.lo[0][i], s.lo[1][i], s.lo[2][i]};
                        const float hi[3] = {s.hi[0][i], s.hi[1][i], s.hi[2][i]};
                        if (hashgrid::point_box_distance2(sphere.center, lo, hi, dims) <= r2) sphere_truth.push_back(i);
                    }
                    std::vector<uint32_t> box_scalar, sphere_scalar;
                    for (const PairKernel w : widths) {
                        INFO("width " << width_name(w));
                        REQUIRE(hashgrid::set_pair_kernel(w));
                        const std::vector<uint32_t> got_box = collect(
                            n, [&](uint32_t* out, uint64_t cap) { return hashgrid::query_box(qg, b, ~0u, out, cap); });
                        const std::vector<uint32_t> got_sphere = collect(n, [&](uint32_t* out, uint64_t cap) {
                            return hashgrid::query_radius(qg, sphere, ~0u, out, cap);
                        });
                        if (w == PairKernel::scalar) {
                            CHECK(sorted(got_box) == box_truth);
                            CHECK(sorted(got_sphere) == sphere_truth);
                            box_scalar = got_box;
                            sphere_scalar = got_sphere;
                        }
                        CHECK(got_box == box_scalar);
                        CHECK(got_sphere == sphere_scalar);
                    }
                }
            }
}

namespace {

/// What a particle rebuild leaves that the key block decides.
struct Rebuilt {
    hashgrid::StatusCode code = hashgrid::StatusCode::ok;
    uint32_t index = 0;
    uint64_t count = 0;
    std::vector<uint32_t> order;
    uint64_t cells = 0;
    bool operator==(const Rebuilt&) const = default;
};

Rebuilt rebuild_with(hashgrid::Grid& grid, const Scene& s) {
    Rebuilt r;
    const hashgrid::Status st = grid.rebuild(s.spans(), hashgrid::serial_backend());
    r.code = st.code;
    r.index = st.index;
    r.count = st.count;
    if (!st.ok()) return r;
    r.order.assign(grid.sorted_to_original(), grid.sorted_to_original() + grid.particle_count());
    r.cells = hash_cells(grid);
    return r;
}

enum class Keys { bounded, clamped, unbounded, radii, invalid };

const char* keys_name(Keys k) {
    switch (k) {
    case Keys::bounded:
        return "bounded";
    case Keys::clamped:
        return "clamped";
    case Keys::unbounded:
        return "unbounded";
    case Keys::radii:
        return "radii";
    default:
        return "invalid";
    }
}

} // namespace

TEST_CASE("rebuild keys: every width gives the scalar width's cells and status, and scalar gives the reference's") {
    KernelGuard guard;
    const std::vector<PairKernel> widths = available_kernels();
    Rng rng(31337);
    for (uint32_t dims = 2; dims <= 3; ++dims)
        for (const Keys keys : {Keys::bounded, Keys::clamped, Keys::unbounded, Keys::radii, Keys::invalid})
            for (const uint32_t n : kSizes) {
                INFO("dims " << dims << " keys " << keys_name(keys) << " n " << n);
                Scene s = mixed_scene(rng, dims, n, 30.0f);
                if (keys == Keys::radii) add_radii(rng, s, 0.01f, 0.99f);
                // Negative coordinates too: the keys floor, they do not truncate.
                for (uint32_t i = 0; i < n; ++i) {
                    s.x[i] -= 15.0f;
                    s.y[i] -= 15.0f;
                    if (dims == 3) s.z[i] -= 15.0f;
                }
                hashgrid::GridConfig config = unbounded_config(dims, 2.0f, 2.0f, s.size(), 1);
                if (keys == Keys::bounded || keys == Keys::clamped) {
                    for (uint32_t a = 0; a < dims; ++a)
                        config.origin[a] = -16.0f;
                    config = bounded_config(s, config, 1);
                }
                if (keys == Keys::clamped) {
                    config.out_of_bounds = hashgrid::OutOfBounds::clamp;
                    for (uint32_t i = 0; i < n; i += 3)
                        s.x[i] = i % 2 == 0 ? -25.0f : 1000.0f;
                }
                if (keys == Keys::invalid) {
                    // A bad particle on every lane position of its vector, and
                    // the lowest of them named whatever the width.
                    s.y[n - 1] = std::numeric_limits<float>::quiet_NaN();
                    if (n > 4) s.x[n / 2] = std::numeric_limits<float>::infinity();
                }
                auto grid = make_grid(config);
                REQUIRE(grid->init_status.ok());
                Rebuilt scalar;
                for (const PairKernel w : widths) {
                    INFO("width " << width_name(w));
                    REQUIRE(hashgrid::set_pair_kernel(w));
                    // Two frames: an unbounded grid's second one guesses the
                    // first one's dense box (the key block's Guess path).
                    Rebuilt first = rebuild_with(**grid, s);
                    Scene moved = s;
                    for (float& x : moved.x)
                        x += 0.25f;
                    Rebuilt second = rebuild_with(**grid, moved);
                    if (w == PairKernel::scalar) {
                        if (keys == Keys::invalid) {
                            CHECK(first.code == hashgrid::StatusCode::invalid_position);
                            CHECK(first.index == (n > 4 ? n / 2 : n - 1));
                        } else {
                            REQUIRE(first.code == hashgrid::StatusCode::ok);
                            if (keys != Keys::clamped) CHECK(check_sorted_state(**grid, moved, config) == "");
                        }
                        scalar = first;
                    }
                    CHECK(first == scalar);
                    CHECK(second.code == first.code);
                    CHECK(second.index == first.index);
                    if (w == PairKernel::scalar) continue;
                    REQUIRE(hashgrid::set_pair_kernel(PairKernel::scalar));
                    CHECK(rebuild_with(**grid, moved) == second);
                }
            }
}

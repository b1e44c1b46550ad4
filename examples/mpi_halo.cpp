// SPDX-License-Identifier: MIT
// mpi_halo: Hashgrid across MPI ranks, for simulations that outgrow one
// machine. The unit box is cut into slabs along x, one per rank; each rank
// runs its own Grid over the particles it owns plus a halo of its
// neighbours' particles, and between frames particles that crossed a slab
// boundary move to their new owner. Every frame the ranks' pairs together are
// exactly the pairs one process finds over all particles.
//
// One frame, on every rank:
//   1. migration: particles whose x left the slab go to the rank that owns
//      the new x (the particle's id, position and velocity travel);
//   2. halo: a rebuild over the owned particles, then query_face() on each
//      inner face of the slab (particle_queries.h) gives the owned particles
//      within the interaction distance r of that face; they go to the
//      neighbour across it;
//   3. pairs: a rebuild over owned + halo particles and find_pairs() with a
//      PairFilter that keeps each pair on exactly one rank: both owned, or
//      one owned and one halo when the owned one has the lower global id
//      (its neighbour sees the same pair with the roles swapped, since the
//      halo of a face holds every particle that pairs across it). Pairs of
//      two halo particles belong to other ranks. Each rank's list is in
//      Hashgrid's canonical order (deterministic for any thread count).
//
// Slabs must be at least r wide, so that only neighbouring slabs can pair;
// the program refuses more ranks than that allows.
//
// The check (--check 1, the default): rank 0 gathers every rank's pairs as
// sorted (lower id, higher id) pairs and every rank's particles, and compares
// them with its own single-process copy of the whole simulation: the same
// particles bit for bit (migration lost, duplicated or changed nothing), the
// same pairs as a single-process Hashgrid run and as a brute-force loop over
// the documented float test. Nonzero exit status on any difference. Scenes:
// 2D and 3D, each with unbounded and bounded per-rank grids.
//
//   mpirun -np 4 build/default/examples/mpi_halo [--particles N] [--frames N] [--threads N] [--check 0|1]
//
// The particles move ballistically and bounce off the walls; a simulation
// with pair forces would exchange the halo's velocities too and apply each
// pair's force on the rank that found it, sending the halo side's share back.
// Every rank generates the same initial scene and keeps its own part (a large
// run would read its part instead). Records travel as bytes: the ranks must
// share one binary layout (the same build on one kind of machine).

// The C API only: no MPI C++ bindings (they need exceptions and RTTI).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/platform/std_thread_backend.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/random.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace {

using hashgrid::Grid;
using hashgrid::GridConfig;
using hashgrid::Pair;
using hashgrid::PairResult;
using hashgrid::Status;
using hashgrid::StatusCode;
using hashgrid::ThreadBackend;

/// Expected neighbours within r of a particle (uniform density), as in particles_demo.
constexpr double kNeighbours2 = 8.0;
constexpr double kNeighbours3 = 16.0;
/// Speed per axis, in units of r per frame: particles cross slab boundaries every frame.
constexpr float kMaxSpeed = 0.5f;
/// Largest scene the brute-force part of the check runs on (O(N^2)).
constexpr uint32_t kBruteForceLimit = 20000;

struct Options {
    uint32_t particles = 4000;
    uint32_t frames = 5;
    uint32_t threads = 1; ///< Per rank: 1 is the serial backend, more a StdThreadBackend.
    uint32_t check = 1;
};

/// A particle as it migrates: its global id, position and velocity.
struct Moving {
    uint32_t id;
    float p[3];
    float v[3];
};
/// A halo particle: id and position.
struct Halo {
    uint32_t id;
    float p[3];
};
static_assert(std::is_trivially_copyable_v<Moving> && std::is_trivially_copyable_v<Halo> &&
                  std::is_trivially_copyable_v<Pair>,
              "records travel as bytes");

int g_rank = 0;
int g_ranks = 1;

/// Ends every rank: a failure on one rank would leave the others waiting in
/// a collective call.
[[noreturn]] void fail(const char* what, const Status& status) {
    std::fprintf(stderr, "rank %d: %s: %s (%s)\n", g_rank, what, hashgrid::to_string(status.code), status.message);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort(); // not reached
}

/// Byte counts as MPI's int counts (this example's messages are far smaller).
int byte_count(size_t elements, size_t size) {
    const size_t bytes = elements * size;
    if (bytes > static_cast<size_t>(INT_MAX)) {
        std::fprintf(stderr, "rank %d: a message of %zu bytes is over MPI's int count\n", g_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::abort(); // not reached
    }
    return static_cast<int>(bytes);
}

/// Sends send[k] to rank k for every k; returns what the ranks sent here, in
/// rank order. (Alltoallv over every rank keeps the example short; at scale
/// the halo would go to the two neighbours only, e.g. with MPI_Sendrecv or
/// MPI_Neighbor_alltoallv on a Cartesian communicator.)
template <typename T>
std::vector<T> exchange(const std::vector<std::vector<T>>& send) {
    const auto ranks = static_cast<size_t>(g_ranks);
    std::vector<int> send_bytes(ranks), recv_bytes(ranks), send_at(ranks), recv_at(ranks);
    std::vector<T> flat;
    for (size_t k = 0; k < ranks; ++k) {
        send_at[k] = byte_count(flat.size(), sizeof(T));
        send_bytes[k] = byte_count(send[k].size(), sizeof(T));
        flat.insert(flat.end(), send[k].begin(), send[k].end());
    }
    MPI_Alltoall(send_bytes.data(), 1, MPI_INT, recv_bytes.data(), 1, MPI_INT, MPI_COMM_WORLD);
    size_t total = 0;
    for (size_t k = 0; k < ranks; ++k) {
        recv_at[k] = byte_count(total, 1);
        total += static_cast<size_t>(recv_bytes[k]);
    }
    std::vector<T> received(total / sizeof(T));
    MPI_Alltoallv(flat.data(), send_bytes.data(), send_at.data(), MPI_BYTE, received.data(), recv_bytes.data(),
                  recv_at.data(), MPI_BYTE, MPI_COMM_WORLD);
    return received;
}

/// Every rank's `local` on rank 0, in rank order (empty elsewhere).
template <typename T>
std::vector<T> gather_to_root(const std::vector<T>& local) {
    const int bytes = byte_count(local.size(), sizeof(T));
    std::vector<int> counts(static_cast<size_t>(g_ranks)), at(static_cast<size_t>(g_ranks));
    MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
        at[k] = byte_count(total, 1);
        total += static_cast<size_t>(counts[k]);
    }
    std::vector<T> all(g_rank == 0 ? total / sizeof(T) : 0);
    MPI_Gatherv(local.data(), bytes, MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, 0, MPI_COMM_WORLD);
    return all;
}

/// The whole scene: particles in the unit box with their velocities, indexed
/// by global id. Every rank builds it at the start; rank 0 keeps moving it
/// as the reference of the check.
struct Scene {
    uint32_t dims = 3;
    uint32_t count = 0;
    float r = 0.0f;
    std::vector<float> p[3];
    std::vector<float> v[3];

    Scene(uint32_t dimensions, uint32_t n, uint64_t seed) : dims(dimensions), count(n) {
        const double pi = 3.14159265358979323846;
        r = dims == 2 ? static_cast<float>(std::sqrt(kNeighbours2 / (pi * n)))
                      : static_cast<float>(std::cbrt(kNeighbours3 * 3.0 / (4.0 * pi * n)));
        hashgrid_support::SplitMix64 rng(seed);
        const float speed = kMaxSpeed * r;
        for (uint32_t a = 0; a < 3; ++a) {
            p[a].assign(n, 0.0f);
            v[a].assign(n, 0.0f);
        }
        for (uint32_t a = 0; a < dims; ++a)
            for (uint32_t i = 0; i < n; ++i) {
                p[a][i] = rng.unit();
                v[a][i] = rng.uniform(-speed, speed);
            }
    }
    [[nodiscard]] Moving at(uint32_t i) const {
        return Moving{i, {p[0][i], p[1][i], p[2][i]}, {v[0][i], v[1][i], v[2][i]}};
    }
};

/// One frame of motion, bouncing off the walls of [0, 1]: the same float
/// operations on whichever rank owns the particle.
void move(Moving& m, uint32_t dims) {
    for (uint32_t a = 0; a < dims; ++a) {
        float q = m.p[a] + m.v[a];
        if (q < 0.0f) {
            q = -q;
            m.v[a] = -m.v[a];
        } else if (q > 1.0f) {
            q = 2.0f - q;
            m.v[a] = -m.v[a];
        }
        m.p[a] = std::clamp(q, 0.0f, 1.0f);
    }
}

/// Slab boundaries along x: rank k owns bound[k] <= x < bound[k + 1] (the
/// last rank also x = 1). Every rank computes the same floats.
struct Slabs {
    std::vector<float> bound;

    explicit Slabs(int ranks) {
        for (int k = 0; k <= ranks; ++k)
            bound.push_back(static_cast<float>(k) / static_cast<float>(ranks));
    }
    [[nodiscard]] int owner(float x) const {
        // How many inner boundaries are <= x.
        return static_cast<int>(std::upper_bound(bound.begin() + 1, bound.end() - 1, x) - (bound.begin() + 1));
    }
    [[nodiscard]] double narrowest() const {
        double w = 1.0;
        for (size_t k = 0; k + 1 < bound.size(); ++k)
            w = std::min(w, static_cast<double>(bound[k + 1]) - static_cast<double>(bound[k]));
        return w;
    }
};

/// The grid of one rank (or of the single-process reference).
GridConfig grid_config(const Scene& s, bool bounded, double x_lo, double x_hi, uint32_t max_particles) {
    GridConfig config;
    config.dimensions = s.dims;
    config.cell_size = s.r;
    config.interaction_distance = s.r;
    config.max_particles = max_particles;
    config.max_cells = max_particles;
    const double expected = static_cast<double>(s.count) * (s.dims == 2 ? kNeighbours2 : kNeighbours3) / 2.0;
    config.max_pairs = static_cast<uint64_t>(1.5 * expected) + 1024; // grown on demand (find_all_pairs)
    if (bounded) {
        // A box over [x_lo, x_hi] x [0, 1]^(d-1) and a cell more on each side:
        // out-of-box particles would be position_out_of_range (reject), a bug here.
        config.world = hashgrid::World::bounded;
        const double lo[3] = {x_lo, 0.0, 0.0};
        const double hi[3] = {x_hi, 1.0, 1.0};
        for (uint32_t a = 0; a < 3; ++a) {
            config.origin[a] = a < s.dims ? static_cast<float>(lo[a] - static_cast<double>(s.r)) : 0.0f;
            const double cells = (hi[a] - lo[a]) / static_cast<double>(s.r);
            config.cell_counts[a] = a < s.dims ? static_cast<uint32_t>(std::ceil(cells)) + 3 : 1;
        }
    }
    return config;
}

void init_grid(Grid& grid, const GridConfig& config) {
    const Status status = grid.init_allocate(config);
    if (!status.ok()) fail("Grid::init_allocate", status);
}

/// Rebuild, then every pair the filter accepts into `pairs` (kept at the
/// grid's max_pairs); returns how many. A frame with more pairs grows the
/// pool and the buffer and runs again: nothing is dropped.
size_t find_all_pairs(Grid& grid, const hashgrid::ParticleSpans& spans, std::vector<Pair>& pairs,
                      const ThreadBackend& backend, hashgrid::PairFilter filter = {}) {
    Status status = grid.rebuild(spans, backend);
    if (!status.ok()) fail("Grid::rebuild", status);
    for (;;) {
        pairs.resize(static_cast<size_t>(grid.config().max_pairs));
        const PairResult result = grid.find_pairs(pairs.data(), pairs.size(), backend, filter);
        if (result.status.ok()) return static_cast<size_t>(result.total);
        if (result.status.code != StatusCode::pair_capacity) fail("Grid::find_pairs", result.status);
        GridConfig grown = grid.config();
        grown.max_pairs = result.total + result.total / 4 + 1024;
        init_grid(grid, grown);
        status = grid.rebuild(spans, backend);
        if (!status.ok()) fail("Grid::rebuild", status);
    }
}

/// The ownership rule of pairs that straddle ranks (see the top of the file).
struct OwnershipRule {
    uint32_t owned;     ///< Local indices [0, owned) are owned, the rest halo.
    const uint32_t* id; ///< Global id of each local index.

    static bool accept(void* context, uint32_t a, uint32_t b) {
        const auto* rule = static_cast<const OwnershipRule*>(context);
        const bool a_owned = a < rule->owned;
        const bool b_owned = b < rule->owned;
        if (a_owned == b_owned) return a_owned; // both owned: here; both halo: elsewhere
        const uint32_t mine = a_owned ? rule->id[a] : rule->id[b];
        const uint32_t theirs = a_owned ? rule->id[b] : rule->id[a];
        return mine < theirs;
    }
};

bool pair_less(const Pair& l, const Pair& r) { return l.a != r.a ? l.a < r.a : l.b < r.b; }
bool pair_equal(const Pair& l, const Pair& r) { return l.a == r.a && l.b == r.b; }
bool same_pairs(const std::vector<Pair>& l, const std::vector<Pair>& r) {
    return l.size() == r.size() && std::equal(l.begin(), l.end(), r.begin(), pair_equal);
}

/// Every pair i < j of the scene with the documented float test, in (i, j) order.
std::vector<Pair> brute_force_pairs(const Scene& s) {
    std::vector<Pair> pairs;
    const float r2 = s.r * s.r;
    for (uint32_t i = 0; i < s.count; ++i)
        for (uint32_t j = i + 1; j < s.count; ++j) {
            const float dx = s.p[0][j] - s.p[0][i];
            const float dy = s.p[1][j] - s.p[1][i];
            float d2 = dx * dx + dy * dy;
            if (s.dims == 3) {
                const float dz = s.p[2][j] - s.p[2][i];
                d2 = d2 + dz * dz;
            }
            if (d2 < r2) pairs.push_back(Pair{i, j});
        }
    return pairs;
}

/// Per-rank numbers of one frame, gathered on rank 0 for the report.
struct FrameStats {
    uint64_t owned = 0;
    uint64_t halo_sent = 0;
    uint64_t migrated = 0;
    uint64_t pairs = 0;
};

/// One scene (dimensions, world kind) for options.frames frames; on rank 0
/// with the check, true when every frame matched.
bool run_scene(uint32_t dims, bool bounded, const Options& options, const ThreadBackend& backend) {
    const Scene start(dims, options.particles, 0x3a10000u + dims);
    const Slabs slabs(g_ranks);
    if (slabs.narrowest() < static_cast<double>(start.r)) {
        if (g_rank == 0)
            std::printf("%uD: %d slabs of width %.4g are narrower than r = %.4g: use fewer ranks or more particles\n",
                        dims, g_ranks, slabs.narrowest(), static_cast<double>(start.r));
        return false;
    }
    const auto k = static_cast<size_t>(g_rank);
    const float x_lo = slabs.bound[k], x_hi = slabs.bound[k + 1];

    // The particles this rank owns, as structure of arrays for the grid
    // (owned first, then halo), and their global ids.
    std::vector<Moving> mine;
    for (uint32_t i = 0; i < start.count; ++i)
        if (slabs.owner(start.p[0][i]) == g_rank) mine.push_back(start.at(i));
    std::vector<float> local[3];
    std::vector<uint32_t> ids;
    auto load = [&](const std::vector<Halo>& halo) {
        for (std::vector<float>& axis : local)
            axis.clear();
        ids.clear();
        for (const Moving& m : mine) {
            for (uint32_t a = 0; a < 3; ++a)
                local[a].push_back(m.p[a]);
            ids.push_back(m.id);
        }
        for (const Halo& h : halo) {
            for (uint32_t a = 0; a < 3; ++a)
                local[a].push_back(h.p[a]);
            ids.push_back(h.id);
        }
        return hashgrid::ParticleSpans{local[0].data(), local[1].data(), dims == 3 ? local[2].data() : nullptr, nullptr,
                                       static_cast<uint32_t>(ids.size())};
    };

    // Halo particles lie within r of the slab: the bounded grid covers the
    // slab and r on each side (the walls bound the other axes).
    Grid grid;
    init_grid(grid, grid_config(start, bounded, static_cast<double>(x_lo) - static_cast<double>(start.r),
                                static_cast<double>(x_hi) + static_cast<double>(start.r), start.count));
    std::vector<Pair> pairs;
    std::vector<uint32_t> found(start.count);

    // Rank 0's single-process copy: moved each frame like every rank moves its own.
    std::unique_ptr<Scene> reference;
    std::unique_ptr<Grid> single;
    std::vector<Pair> single_pairs;
    if (g_rank == 0 && options.check != 0) {
        reference = std::make_unique<Scene>(start);
        single = std::make_unique<Grid>();
        init_grid(*single, grid_config(start, bounded, 0.0, 1.0, start.count));
    }
    if (g_rank == 0)
        std::printf("%uD, %s grid per rank: %u particles, r = %.4g, slabs %.4g wide\n", dims,
                    bounded ? "bounded" : "unbounded", start.count, static_cast<double>(start.r), slabs.narrowest());

    bool pass = true;
    for (uint32_t frame = 0; frame < options.frames; ++frame) {
        FrameStats stats;
        // 1. Move and migrate (frame 0 is the initial distribution).
        if (frame > 0) {
            std::vector<std::vector<Moving>> leaving(static_cast<size_t>(g_ranks));
            std::vector<Moving> staying;
            for (Moving& m : mine) {
                move(m, dims);
                const int to = slabs.owner(m.p[0]);
                if (to == g_rank) {
                    staying.push_back(m);
                } else {
                    leaving[static_cast<size_t>(to)].push_back(m);
                    ++stats.migrated;
                }
            }
            const std::vector<Moving> arriving = exchange(leaving);
            staying.insert(staying.end(), arriving.begin(), arriving.end());
            mine.swap(staying);
            if (reference)
                for (uint32_t i = 0; i < reference->count; ++i) {
                    Moving m = reference->at(i);
                    move(m, dims);
                    for (uint32_t a = 0; a < 3; ++a) {
                        reference->p[a][i] = m.p[a];
                        reference->v[a][i] = m.v[a];
                    }
                }
        }
        const auto owned = static_cast<uint32_t>(mine.size());
        stats.owned = owned;

        // 2. Halo: owned particles within r of each inner face go across it.
        Status status = grid.rebuild(load({}), backend);
        if (!status.ok()) fail("Grid::rebuild (owned)", status);
        std::vector<std::vector<Halo>> halo_out(static_cast<size_t>(g_ranks));
        hashgrid::QueryFace face;
        for (uint32_t a = 1; a < 3; ++a) {
            face.box.min[a] = -INFINITY;
            face.box.max[a] = INFINITY;
        }
        face.box.min[0] = x_lo;
        face.box.max[0] = x_hi;
        face.distance = start.r;
        for (const int side : {0, 1}) {
            const int neighbour = g_rank + (side == 0 ? -1 : 1);
            if (neighbour < 0 || neighbour >= g_ranks) continue; // a wall of the box
            face.face = hashgrid::face_index(0, side == 1);
            const hashgrid::QueryResult q = hashgrid::query_face(grid, face, found.data(), found.size());
            if (!q.status.ok()) fail("query_face", q.status);
            for (uint64_t i = 0; i < q.written; ++i) {
                const Moving& m = mine[found[i]];
                halo_out[static_cast<size_t>(neighbour)].push_back(Halo{m.id, {m.p[0], m.p[1], m.p[2]}});
            }
            stats.halo_sent += q.written;
        }
        const std::vector<Halo> halo_in = exchange(halo_out);

        // 3. Pairs over owned + halo, each kept on exactly one rank.
        const hashgrid::ParticleSpans spans = load(halo_in);
        OwnershipRule rule{owned, ids.data()};
        const size_t found_pairs =
            find_all_pairs(grid, spans, pairs, backend, hashgrid::PairFilter{&OwnershipRule::accept, &rule});
        std::vector<Pair> global(found_pairs);
        for (size_t i = 0; i < found_pairs; ++i) { // canonical order, as global ids (lower first)
            const Pair& p = pairs[i];
            global[i] = Pair{std::min(ids[p.a], ids[p.b]), std::max(ids[p.a], ids[p.b])};
        }
        stats.pairs = global.size();

        // The check and the report, on rank 0.
        const std::vector<FrameStats> all_stats = gather_to_root(std::vector<FrameStats>{stats});
        if (options.check == 0) {
            if (g_rank == 0) {
                uint64_t total = 0;
                for (const FrameStats& s : all_stats)
                    total += s.pairs;
                std::printf("  frame %u: %llu pairs\n", frame, static_cast<unsigned long long>(total));
            }
            continue;
        }
        std::vector<Pair> gathered = gather_to_root(global);
        std::vector<Moving> particles = gather_to_root(mine);
        if (g_rank != 0) continue;
        std::sort(gathered.begin(), gathered.end(), pair_less);
        std::sort(particles.begin(), particles.end(), [](const Moving& l, const Moving& r) { return l.id < r.id; });
        bool same_particles = particles.size() == reference->count;
        for (uint32_t i = 0; same_particles && i < reference->count; ++i) {
            const Moving expected = reference->at(i);
            same_particles = std::memcmp(&particles[i], &expected, sizeof(Moving)) == 0;
        }
        const hashgrid::ParticleSpans all{reference->p[0].data(), reference->p[1].data(),
                                          dims == 3 ? reference->p[2].data() : nullptr, nullptr, reference->count};
        const size_t single_count = find_all_pairs(*single, all, single_pairs, backend);
        std::vector<Pair> single_sorted(single_pairs.begin(), single_pairs.begin() + static_cast<long>(single_count));
        std::sort(single_sorted.begin(), single_sorted.end(), pair_less);
        const bool brute = reference->count <= kBruteForceLimit;
        const std::vector<Pair> oracle = brute ? brute_force_pairs(*reference) : single_sorted;
        const bool ok = same_particles && same_pairs(gathered, single_sorted) && same_pairs(single_sorted, oracle);
        pass = pass && ok;
        uint64_t lo = ~uint64_t{0}, hi = 0, halo = 0, migrated = 0;
        for (const FrameStats& s : all_stats) {
            lo = std::min(lo, s.owned);
            hi = std::max(hi, s.owned);
            halo += s.halo_sent;
            migrated += s.migrated;
        }
        std::printf("  frame %u: %llu..%llu particles per rank, %llu migrated, %llu in halos; pairs: %zu from the "
                    "ranks, %zu single process, %zu %s: %s%s\n",
                    frame, static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi),
                    static_cast<unsigned long long>(migrated), static_cast<unsigned long long>(halo), gathered.size(),
                    single_sorted.size(), oracle.size(), brute ? "brute force" : "(brute force skipped: large)",
                    ok ? "PASS" : "FAIL", same_particles ? "" : " (particles differ from the reference)");
    }
    int result = pass ? 1 : 0;
    MPI_Bcast(&result, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return result != 0;
}

} // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_ranks);
    Options options;
    // Every rank parses the same arguments and so takes the same branch.
    if (!hashgrid_support::parse_count_options(argc, argv,
                                               {{"--particles", &options.particles},
                                                {"--frames", &options.frames},
                                                {"--threads", &options.threads},
                                                {"--check", &options.check}}) ||
        options.particles < 2 || options.frames == 0) {
        if (g_rank == 0) std::fprintf(stderr, "need --particles >= 2 and --frames >= 1\n");
        MPI_Finalize();
        return 2;
    }
    std::unique_ptr<hashgrid::platform::StdThreadBackend> threads;
    ThreadBackend backend = hashgrid::serial_backend();
    if (options.threads > 1) {
        threads = std::make_unique<hashgrid::platform::StdThreadBackend>(options.threads);
        backend = threads->backend();
    }
    if (g_rank == 0)
        std::printf("mpi_halo: %d ranks, slabs along x, %u thread%s per rank, %u frames per scene\n", g_ranks,
                    options.threads > 1 ? options.threads : 1, options.threads > 1 ? "s" : "", options.frames);
    bool pass = true;
    for (const uint32_t dims : {2u, 3u})
        for (const bool bounded : {false, true})
            pass = run_scene(dims, bounded, options, backend) && pass;
    if (g_rank == 0) std::printf("%s\n", pass ? "PASS" : "FAIL");
    MPI_Finalize();
    return pass ? 0 : 1;
}

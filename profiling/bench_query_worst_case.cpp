// bench_query_worst_case: single queries whose cost used to grow with the
// empty part of the world rather than with what it holds. A k = 1 nearest
// query from one end of a 4 x ny x 10 bounded (clamp) world whose five
// particles sit at the other end, for ny = 10k .. 1M cells. Every query must
// cost at most the cells it has to look at or the occupied cells, whichever
// is smaller, so the times should stay flat as ny grows.
//
//   bench_query_worst_case [--reps N]

#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/thread_backend.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

int main(int argc, char** argv) {
    int reps = 5;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
    if (reps < 1) reps = 1;
    std::printf("nearest k=1, 4 x ny x 10 clamp world, 5 particles at the far end (best of %d)\n", reps);
    for (uint32_t ny : {10000u, 20000u, 40000u, 1000000u}) {
        hashgrid::GridConfig c;
        c.dimensions = 3;
        c.cell_size = 1.0f;
        c.interaction_distance = 1.0f;
        c.world = hashgrid::World::bounded;
        c.out_of_bounds = hashgrid::OutOfBounds::clamp;
        c.cell_counts[0] = 4;
        c.cell_counts[1] = ny;
        c.cell_counts[2] = 10;
        c.max_particles = 8;
        c.max_cells = 8;
        c.max_pairs = 64;
        hashgrid::Grid grid;
        if (!grid.init_allocate(c).ok()) {
            std::puts("init_allocate failed");
            return 1;
        }
        float x[5], y[5], z[5];
        for (int i = 0; i < 5; ++i) {
            x[i] = 0.5f + 0.5f * static_cast<float>(i);
            y[i] = static_cast<float>(ny) - 1.5f;
            z[i] = 0.5f + static_cast<float>(i);
        }
        hashgrid::ParticleSpans spans;
        spans.x = x;
        spans.y = y;
        spans.z = z;
        spans.count = 5;
        if (!grid.rebuild(spans, hashgrid::serial_backend()).ok()) {
            std::puts("rebuild failed");
            return 1;
        }
        const hashgrid::QueryNearest query{{2.0f, 0.5f, 5.0f}, 1, std::numeric_limits<float>::infinity()};
        hashgrid::NearestHit nearest[1];
        double best_ms = 1e30;
        for (int rep = 0; rep < reps; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            const hashgrid::QueryResult r = hashgrid::query_nearest(grid, query, nearest, 1);
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (!r.status.ok() || r.total != 1) {
                std::puts("query failed");
                return 1;
            }
            best_ms = ms < best_ms ? ms : best_ms;
        }
        std::printf("ny = %7u: %.4f ms\n", ny, best_ms);
    }
    return 0;
}

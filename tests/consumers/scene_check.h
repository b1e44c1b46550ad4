// SPDX-License-Identifier: MIT
// The check every consumer program runs (tests/consumers/): a particle grid is
// configured, initialised, rebuilt and asked for its pairs on eight
// hand-placed particles whose pairs were worked out by hand. Only public
// headers, as an installed or embedded Hashgrid offers them.
#pragma once

#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/platform/assert_hook.h"
#include "hashgrid/platform/std_thread_backend.h"
#if defined(HASHGRID_HAS_TBB)
#include "hashgrid/platform/tbb_backend.h"
#endif
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid/version.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace consumer {

/// Number of failed checks on `backend` (0: every answer is the hand-computed one).
inline int check_scene(const hashgrid::ThreadBackend& backend, const char* backend_name) {
    int failures = 0;
    auto fail = [&](const char* what) {
        std::fprintf(stderr, "consumer [%s]: %s\n", backend_name, what);
        ++failures;
    };

    // Unbounded 3D world, cell edge and interaction distance 1: a pair is two
    // particles with squared distance < 1.
    hashgrid::GridConfig config;
    config.cell_size = 1.0f;
    config.interaction_distance = 1.0f;
    config.max_particles = 8;
    config.max_cells = 8;
    config.max_pairs = 64;
    hashgrid::Grid grid;
    if (!grid.init_allocate(config).ok()) {
        fail("init_allocate failed");
        return failures;
    }

    // 0 (0, 0, 0), 1 (0.5, 0, 0), 2 (0, 0.75, 0): d01 = 0.5, d02 = 0.75 and
    //   d12^2 = 0.25 + 0.5625 = 0.8125: three pairs.
    // 3 (4, 4, 4), 4 (4, 4, 5): distance exactly 1, not a pair.
    // 5 (-3, -3, -3), 6 (-3, -3, -3.25): d56 = 0.25, a pair across a cell
    //   edge at negative coordinates.
    // 7 (10, 0, 0): alone.
    // All values are exact in binary, so every squared distance is exact.
    const float x[8] = {0.0f, 0.5f, 0.0f, 4.0f, 4.0f, -3.0f, -3.0f, 10.0f};
    const float y[8] = {0.0f, 0.0f, 0.75f, 4.0f, 4.0f, -3.0f, -3.0f, 0.0f};
    const float z[8] = {0.0f, 0.0f, 0.0f, 4.0f, 5.0f, -3.0f, -3.25f, 0.0f};
    hashgrid::ParticleSpans particles;
    particles.x = x;
    particles.y = y;
    particles.z = z;
    particles.count = 8;
    if (!grid.rebuild(particles, backend).ok()) fail("rebuild failed");
    if (grid.particle_count() != 8) fail("particle_count is not 8");

    hashgrid::Pair pairs[64];
    const hashgrid::PairResult found = grid.find_pairs(pairs, 64, backend);
    if (!found.status.ok()) fail("find_pairs failed");
    if (found.total != 4 || found.written != 4) {
        std::fprintf(stderr, "consumer [%s]: %llu pairs found (%llu written), expected 4\n", backend_name,
                     static_cast<unsigned long long>(found.total), static_cast<unsigned long long>(found.written));
        ++failures;
        return failures;
    }
    // The canonical order follows the grid's sorted order; compare as a set.
    std::sort(pairs, pairs + 4,
              [](const hashgrid::Pair& l, const hashgrid::Pair& r) { return l.a != r.a ? l.a < r.a : l.b < r.b; });
    const hashgrid::Pair expected[4] = {{0, 1}, {0, 2}, {1, 2}, {5, 6}};
    for (int i = 0; i < 4; ++i) {
        if (pairs[i].a != expected[i].a || pairs[i].b != expected[i].b) {
            std::fprintf(stderr, "consumer [%s]: pair %d is {%u, %u}, expected {%u, %u}\n", backend_name, i, pairs[i].a,
                         pairs[i].b, expected[i].a, expected[i].b);
            ++failures;
        }
    }
    // Too small a buffer: the exact count comes back with the status.
    const hashgrid::PairResult count_only = grid.find_pairs(nullptr, 0, backend);
    if (count_only.status.code != hashgrid::StatusCode::output_too_small || count_only.total != 4)
        fail("find_pairs with no buffer did not report output_too_small with 4 pairs");
    if (failures == 0) std::printf("consumer [%s]: 4 pairs, as computed by hand\n", backend_name);
    return failures;
}

/// Assertions that fire inside the library when a programmer error is made
/// (0 in a library built without them). ObjectStore::handle_at with an index
/// past the end asserts where assertions are compiled in, and answers
/// ObjectHandle{} in every build.
inline uint64_t library_assertions_fired(int& failures) {
    hashgrid::platform::ScopedCountingAssertHook hook; // count and continue
    hashgrid::ObjectStore store;
    hashgrid::ObjectStoreConfig config;
    config.max_objects = 4;
    if (!store.init_allocate(config).ok()) {
        std::fprintf(stderr, "consumer: ObjectStore::init_allocate failed\n");
        ++failures;
        return 0;
    }
    if (!(store.handle_at(3) == hashgrid::ObjectHandle{})) {
        std::fprintf(stderr, "consumer: handle_at past the end is not ObjectHandle{}\n");
        ++failures;
    }
    return hook.failures();
}

/// The header's version string spells its three numbers.
inline int check_version_header() {
    char spelled[32];
    std::snprintf(spelled, sizeof spelled, "%d.%d.%d", HASHGRID_VERSION_MAJOR, HASHGRID_VERSION_MINOR,
                  HASHGRID_VERSION_PATCH);
    if (std::strcmp(spelled, HASHGRID_VERSION_STRING) != 0) {
        std::fprintf(stderr, "consumer: HASHGRID_VERSION_STRING is %s, the numbers say %s\n", HASHGRID_VERSION_STRING,
                     spelled);
        return 1;
    }
    return 0;
}

/// check_scene on the serial backend, two std::threads and, where the oneTBB
/// backend is linked (HASHGRID_HAS_TBB), two oneTBB threads.
inline int check_every_backend() {
    int failures = check_scene(hashgrid::serial_backend(), "serial");
    {
        hashgrid::platform::StdThreadBackend threads(2);
        failures += check_scene(threads.backend(), "std::thread");
    }
#if defined(HASHGRID_HAS_TBB)
    {
        hashgrid::platform::TbbBackend tbb(2);
        failures += check_scene(tbb.backend(), "oneTBB");
    }
#endif
    return failures;
}

} // namespace consumer

// SPDX-License-Identifier: MIT
// A consumer that drops results, for the nodiscard tests (tests/CMakeLists.txt).
// Built as is, every result is used or cast to (void): it must compile
// warning-free. With HASHGRID_DROP_STATUS it drops the Status of a library
// call, with HASHGRID_DROP_QUERY_RESULT a QueryResult, and with
// HASHGRID_DROP_OWN_STATUS the Status of its own function (not marked
// [[nodiscard]]: the type is). The tests pass only when the compiler rejects
// those (warnings are errors) for the nodiscard reason.
#include "hashgrid/grid.h"
#include "hashgrid/particle_queries.h"

#include <cstdint>

namespace {

hashgrid::Status own_step(hashgrid::Grid& grid, const hashgrid::ParticleSpans& particles,
                          const hashgrid::ThreadBackend& backend) {
    return grid.rebuild(particles, backend);
}

} // namespace

int drop_results(hashgrid::Grid& grid, const hashgrid::ThreadBackend& backend) {
    const float x[2] = {0.0f, 0.5f};
    const float y[2] = {0.0f, 0.0f};
    const float z[2] = {0.0f, 0.0f};
    const hashgrid::ParticleSpans particles{x, y, z, nullptr, 2};
#if defined(HASHGRID_DROP_STATUS)
    grid.rebuild(particles, backend);
#elif defined(HASHGRID_DROP_OWN_STATUS)
    own_step(grid, particles, backend);
#else
    (void)grid.rebuild(particles, backend);   // the query below reports not_built if it failed
    (void)own_step(grid, particles, backend); // likewise
#endif
    uint32_t found[2] = {0, 0};
    const hashgrid::QuerySphere sphere{{0.0f, 0.0f, 0.0f}, 1.0f};
#if defined(HASHGRID_DROP_QUERY_RESULT)
    hashgrid::query_radius(grid, sphere, found, 2);
    return 0;
#else
    const hashgrid::QueryResult r = hashgrid::query_radius(grid, sphere, found, 2);
    return r.status.ok() ? static_cast<int>(r.written) : -1;
#endif
}

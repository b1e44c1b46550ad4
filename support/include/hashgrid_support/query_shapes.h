// SPDX-License-Identifier: MIT
// Query shapes (query_types.h) built from the plain arrays that examples,
// benchmarks, tests and fuzz targets keep: a centre array and a radius, an
// SoA point set, a six-plane frustum whose unset planes accept everything.
#pragma once

#include "hashgrid/grid.h"
#include "hashgrid/query_types.h"

#include <cstdint>
#include <vector>

namespace hashgrid_support {

inline hashgrid::QueryPoint point_at(const float p[3]) { return hashgrid::QueryPoint{{p[0], p[1], p[2]}}; }
inline hashgrid::QuerySphere sphere_at(const float c[3], float radius) {
    return hashgrid::QuerySphere{{c[0], c[1], c[2]}, radius};
}
inline hashgrid::QueryNearest nearest_at(const float c[3], uint32_t k, float max_distance) {
    return hashgrid::QueryNearest{{c[0], c[1], c[2]}, k, max_distance};
}
/// Six planes, all {0, 0, 0, 0} (every point inside) until a test sets them.
inline hashgrid::Frustum six_plane_frustum() {
    hashgrid::Frustum f;
    f.plane_count = 6;
    return f;
}
/// One sphere per point of `points` (its radius array must be set; z is 0 in 2D when z is null).
inline std::vector<hashgrid::QuerySphere> spheres_of(const hashgrid::ParticleSpans& points) {
    std::vector<hashgrid::QuerySphere> out(points.count);
    for (uint32_t i = 0; i < points.count; ++i)
        out[i] = {{points.x[i], points.y[i], points.z != nullptr ? points.z[i] : 0.0f}, points.radius[i]};
    return out;
}
/// One k-nearest query per point of `points`.
inline std::vector<hashgrid::QueryNearest> nearests_of(const hashgrid::ParticleSpans& points, uint32_t k,
                                                       float max_distance) {
    std::vector<hashgrid::QueryNearest> out(points.count);
    for (uint32_t i = 0; i < points.count; ++i)
        out[i] = {{points.x[i], points.y[i], points.z != nullptr ? points.z[i] : 0.0f}, k, max_distance};
    return out;
}

} // namespace hashgrid_support

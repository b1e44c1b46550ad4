// SPDX-License-Identifier: MIT
// Context of the user guide's TraceHooks block: the zone functions it declares
// count the zones of one rebuild, which must open and close every zone.
#include "hashgrid/grid.h"
#include "hashgrid/trace.h"

#include <cstdint>
#include <cstdio>

struct Profiler {
    int open = 0;
    int zones = 0;
};

int main() {
    const float x[3] = {0.0f, 0.5f, 2.0f}, y[3] = {0.0f, 0.0f, 0.0f}, z[3] = {0.0f, 0.0f, 0.0f};
    hashgrid::GridConfig config;
    config.max_particles = 3;
    config.max_cells = 3;
    config.max_pairs = 3;
    hashgrid::Grid grid;
    if (!grid.init_allocate(config).ok()) return 1;
    Profiler my_profiler;
    // @snippet@
    const bool rebuilt = grid.rebuild({x, y, z, nullptr, 3}, hashgrid::serial_backend()).ok();
    grid.set_trace(nullptr);
    const bool pass = rebuilt && my_profiler.zones > 0 && my_profiler.open == 0;
    std::printf("%s: %d zones\n", pass ? "PASS" : "FAIL", my_profiler.zones);
    return pass ? 0 : 1;
}

void zone_begin(void* profiler, const char*, uint32_t) {
    ++static_cast<Profiler*>(profiler)->open;
    ++static_cast<Profiler*>(profiler)->zones;
}
void zone_end(void* profiler, const char*, uint32_t) { --static_cast<Profiler*>(profiler)->open; }

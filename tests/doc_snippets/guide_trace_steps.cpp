// SPDX-License-Identifier: MIT
// Context of the user guide's block that reads a step by name: a traced
// rebuild of a 3D grid of 1000 points on the serial backend; after the
// block, keys_ns must hold the time of the rebuild's "rebuild.keys" step.
#include "hashgrid/grid.h"
#include "hashgrid/trace.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

uint64_t key_pass_ns(const hashgrid::Trace& trace) {
    // @snippet@
    return keys_ns;
}

} // namespace

int main() {
    const uint32_t n = 1000;
    std::vector<float> x(n), y(n), z(n);
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(i % 10) * 0.1f;
        y[i] = static_cast<float>(i / 10 % 10) * 0.1f;
        z[i] = static_cast<float>(i / 100) * 0.1f;
    }
    hashgrid::GridConfig config;
    config.cell_size = 0.15f;
    config.interaction_distance = 0.15f;
    config.max_particles = n;
    config.max_cells = n;
    config.max_pairs = 20ull * n;
    hashgrid::Grid grid;
    hashgrid::Trace trace;
    if (!grid.init_allocate(config).ok() || !trace.init_allocate(1024).ok()) return 1;
    grid.set_trace(&trace);
    const hashgrid::Status s = grid.rebuild({x.data(), y.data(), z.data(), nullptr, n}, hashgrid::serial_backend());
    grid.set_trace(nullptr);
    // A span of 0 ns is possible on a coarse clock: the step must be there all the same.
    bool seen = false;
    for (uint32_t i = 0; i < trace.size(); ++i) {
        hashgrid::TraceEvent ev;
        if (trace.event(i, ev) && ev.kind == hashgrid::TraceKind::phase &&
            std::strcmp(hashgrid::trace_event_name(ev), "rebuild.keys") == 0)
            seen = ev.phase == hashgrid::TracePhase::rebuild && ev.step != 0;
    }
    const uint64_t keys_ns = key_pass_ns(trace);
    const bool pass = s.ok() && seen && trace.dropped() == 0;
    std::printf("%s: rebuild.keys %llu ns\n", pass ? "PASS" : "FAIL", static_cast<unsigned long long>(keys_ns));
    return pass ? 0 : 1;
}

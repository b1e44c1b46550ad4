// SPDX-License-Identifier: MIT
// Context of the user guide's trace block: a built 3D grid of 1000 points on
// the serial backend; after the block, the trace must hold the frame's spans
// and frame.json must have been written.
#include "hashgrid/grid.h"
#include "hashgrid/trace.h"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

hashgrid::Status traced_frame(hashgrid::Grid& grid, const hashgrid::ParticleSpans& spans,
                              const hashgrid::ThreadBackend& backend, hashgrid::Pair* pairs, uint64_t capacity,
                              uint64_t& events) {
    // @snippet@
    events = trace.recorded();
    grid.set_trace(nullptr);
    return hashgrid::Status{};
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
    if (!grid.init_allocate(config).ok()) return 1;
    std::vector<hashgrid::Pair> pairs(static_cast<size_t>(config.max_pairs)); // 64-bit count, small here
    uint64_t events = 0;
    const hashgrid::Status s = traced_frame(grid, {x.data(), y.data(), z.data(), nullptr, n},
                                            hashgrid::serial_backend(), pairs.data(), pairs.size(), events);
    std::FILE* f = std::fopen("frame.json", "rb");
    const bool written = f != nullptr && std::fgetc(f) == '{';
    if (f != nullptr) std::fclose(f);
    const bool pass = s.ok() && events > 0 && written;
    std::printf("%s: %llu events, frame.json %s\n", pass ? "PASS" : "FAIL", static_cast<unsigned long long>(events),
                written ? "written" : "missing");
    return pass ? 0 : 1;
}

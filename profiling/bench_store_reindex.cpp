// SPDX-License-Identifier: MIT
// bench_store_reindex: a box grid kept up to date from an ObjectStore when
// few objects move, phase by phase.
//
// N boxes (default 100k) in 2D, edges uniform in [1, 20], minimum corners
// uniform in a 1000 x 1000 world, live in an ObjectStore. Every frame,
// `--moved-percent` of them (default 1, drawn at random with repetition)
// move by up to +-0.25 per axis through ObjectStore::move (untimed: the
// game's own work), then BoxGrid::rebuild(store, backend) and
// prepare_box_queries run, timed. A trace attached to the grid splits the
// rebuild into its phases (box.rebuild.listed: the changed objects read and
// checked; box.rebuild.update: their records, entries and cells written).
//
// With `--flush 1` the program writes 64 MiB of its own between frames
// (untimed), as a game's other work would, so the frame starts with cold
// caches; with 0 the grid stays in cache from the frame before.
//
// It prints, per thread count, the median, p10 and p90 of the timed part and
// the median of each phase, and the other load on the machine.
//
//   bench_store_reindex [--n N] [--frames F] [--cell C] [--moved-percent P]
//                       [--flush 0|1] [--threads T] [--seed S]
//
// Each option is a count; --threads 1 runs the serial backend, more runs
// oneTBB with that many threads.

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/trace.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/machine_load.h"
#include "hashgrid_support/random.h"
#include "hashgrid_support/timing.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

using hashgrid::platform::now_ns;
using hashgrid_support::quantile;

int main(int argc, char** argv) {
    uint32_t n = 100000, frames = 500, cell = 32, moved_percent = 1, flush = 0, threads = 1, seed = 42;
    if (!hashgrid_support::parse_count_options(argc, argv,
                                               {{"--n", &n},
                                                {"--frames", &frames},
                                                {"--cell", &cell},
                                                {"--moved-percent", &moved_percent},
                                                {"--flush", &flush},
                                                {"--threads", &threads},
                                                {"--seed", &seed}}))
        return 2;
    if (n == 0 || frames == 0 || cell == 0 || moved_percent == 0 || moved_percent > 100 || threads == 0) {
        std::fprintf(stderr, "bench_store_reindex: every count must be positive, --moved-percent at most 100\n");
        return 2;
    }
    constexpr double kWorld = 1000.0;
    constexpr float kStep = 0.25f;
    hashgrid_support::SplitMix64 random(seed);

    hashgrid::ObjectStoreConfig store_config;
    store_config.dimensions = 2;
    store_config.max_objects = n;
    hashgrid::ObjectStore store;
    if (!store.init_allocate(store_config).ok()) return 1;
    std::vector<hashgrid::ObjectHandle> handle(n);
    std::vector<hashgrid::ObjectBox> box(n);
    for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t a = 0; a < 2; ++a) {
            const double edge = 1.0 + 19.0 * random.unit_double();
            const double lo = kWorld * random.unit_double();
            box[i].min[a] = static_cast<float>(lo);
            box[i].max[a] = static_cast<float>(lo + edge);
        }
        const hashgrid::ObjectAddResult added = store.add(box[i], ~0u, ~0u, i);
        if (!added.status.ok()) return 1;
        handle[i] = added.handle;
    }

    hashgrid::BoxGridConfig config;
    config.dimensions = 2;
    config.cell_size = static_cast<float>(cell);
    config.world = hashgrid::World::bounded;
    config.max_objects = n;
    config.max_cell_entries = 8 * n;
    config.max_pairs = 1;
    for (uint32_t a = 0; a < 2; ++a) {
        config.origin[a] = -64.0f; // room for the moves
        config.cell_counts[a] = static_cast<uint32_t>(std::ceil((kWorld + 200.0) / cell));
    }
    hashgrid::BoxGrid grid;
    if (const hashgrid::Status s = grid.init_allocate(config); !s.ok()) {
        std::fprintf(stderr, "BoxGrid::init_allocate: %s\n", s.message);
        return 1;
    }
    hashgrid::platform::TbbBackend tbb(threads);
    const hashgrid::ThreadBackend backend = threads > 1 ? tbb.backend() : hashgrid::serial_backend();
    if (!grid.rebuild(store, backend).ok()) return 1;
    hashgrid::Trace trace;
    if (!trace.init_allocate(1u << 14).ok()) return 1;
    grid.set_trace(&trace);

    std::vector<unsigned char> other_work(flush != 0 ? size_t{64} << 20 : 0);
    std::vector<double> total_ms, listed_ms, update_ms;
    const uint32_t moves = std::max<uint32_t>(1, static_cast<uint32_t>(uint64_t{n} * moved_percent / 100));
    const hashgrid_support::OtherLoad load;
    for (uint32_t f = 0; f < frames; ++f) {
        for (uint32_t k = 0; k < moves; ++k) {
            const auto i = static_cast<uint32_t>(random.next_u64() % n);
            for (uint32_t a = 0; a < 2; ++a) {
                const float d = static_cast<float>(random.unit_double() - 0.5) * 2.0f * kStep;
                box[i].min[a] += d;
                box[i].max[a] += d;
            }
            if (!store.move(handle[i], box[i]).ok()) return 1;
        }
        for (size_t b = 0; b < other_work.size(); b += 64)
            ++other_work[b];
        trace.clear();
        const uint64_t start = now_ns();
        const hashgrid::Status s = grid.rebuild(store, backend);
        const hashgrid::BoxQueryGrid query_grid = hashgrid::prepare_box_queries(grid.view(), backend);
        total_ms.push_back(static_cast<double>(now_ns() - start) * 1e-6);
        if (!s.ok() || !query_grid.has_cells) {
            std::fprintf(stderr, "rebuild: %s\n", s.message);
            return 1;
        }
        double listed = 0.0, update = 0.0;
        for (uint32_t e = 0; e < trace.size(); ++e) {
            hashgrid::TraceEvent ev;
            if (!trace.event(e, ev) || ev.kind != hashgrid::TraceKind::phase) continue;
            const double ms = static_cast<double>(ev.end_ns - ev.begin_ns) * 1e-6;
            const char* name = hashgrid::trace_event_name(ev);
            listed += std::strcmp(name, "box.rebuild.listed") == 0 ? ms : 0.0;
            update += std::strcmp(name, "box.rebuild.update") == 0 ? ms : 0.0;
        }
        listed_ms.push_back(listed);
        update_ms.push_back(update);
    }
    std::printf("bench_store_reindex: %u boxes, %u%% moved per frame, cell %u, %u frames, %u thread(s), flush %u, "
                "%u entries\n",
                n, moved_percent, cell, frames, threads, flush, grid.entry_count());
    for (std::vector<double>* v : {&total_ms, &listed_ms, &update_ms})
        std::sort(v->begin(), v->end());
    std::printf("rebuild + prepare_box_queries ms: median %.3f  p10 %.3f  p90 %.3f\n", quantile(total_ms, 0.5),
                quantile(total_ms, 0.1), quantile(total_ms, 0.9));
    std::printf("phases ms (median): box.rebuild.listed %.3f  box.rebuild.update %.3f\n", quantile(listed_ms, 0.5),
                quantile(update_ms, 0.5));
    std::printf("other load: %.2f cores; load average %s\n", load.cores(), hashgrid_support::load_average().c_str());
    return 0;
}

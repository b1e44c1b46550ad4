// SPDX-License-Identifier: MIT
// bench_events: overlap events (PairTracker) beside the pair search they
// follow, and beside Box2D 2.4's contact listener over the same boxes.
//
// Scene E2: --n boxes (default 100k) in 2D, edges uniform in [1, 4], minimum
// corners uniform in a square world sized for about 2 overlaps per box
// (about n pairs). Two frames A and B alternate: B is A with
// --changing percent of the pairs replaced. changing:1 teleports 0.5% of the
// boxes to random places (each box is in two pairs on average, so about 1%
// of the pairs end and as many begin); changing:100 draws every box afresh.
// Each frame's events are those between A and B, so every frame has the
// same work. Rows (manual time, one frame per iteration):
//
//   E2/hashgrid/find_pairs/changing:P/threads:T   BoxGrid::find_pairs on the frame (the reference)
//   E2/hashgrid/events/changing:P/threads:T       PairTracker::update, index form, on that frame's pairs
//   E2/hashgrid/events-store/changing:P/threads:T PairTracker::update, store form (events name handles)
//   E2/hashgrid/frame/changing:P/threads:T        from an ObjectStore: rebuild + find_pairs + update
//   E2/box2d/step/changing:P/threads:1            Box2D 2.4 b2World::Step, sensor fixtures and a
//                                                 b2ContactListener counting begin / end
//
// Counters: pairs (per frame), events (begin + end per frame). Every
// Hashgrid row checks its events against the symmetric difference of the
// two frames' pair sets (a mismatch fails the row). Box2D counts
// its own events: its polygons carry a 0.01 skin (b2_polygonRadius), so
// boxes closer than 0.02 count as touching there; the counts differ by that.
//
//   bench_events [--n N] [--threads 1,2] [--frames F] [--changing 1,100]
//                and Google Benchmark's flags

#include "hashgrid/box_grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/pair_tracker.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/bench_harness.h"
#include "hashgrid_support/box_scene.h"
#include "hashgrid_support/random.h"

#include <benchmark/benchmark.h>
#if HASHGRID_BENCH_BOX2D
#include <box2d/box2d.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

using hashgrid::platform::now_ns;
using hashgrid::platform::TbbBackend;

namespace {

constexpr const char* kUsage = "[--n N] [--threads 1,2] [--frames F] [--changing 1,100]";

struct Options {
    uint32_t n = 100000;
    std::vector<uint32_t> threads{1, 2};
    uint32_t frames = 20;
    std::vector<uint32_t> changing{1, 100};
};
Options g_options;

/// Frames A and B of one changing percentage.
struct EventScene {
    hashgrid_support::BoxScene frame[2];
    float world = 0.0f;
};

void random_box(hashgrid_support::SplitMix64& rng, float world, float mn[3], float mx[3]) {
    for (uint32_t d = 0; d < 2; ++d) {
        const float edge = rng.uniform(1.0f, 4.0f);
        mn[d] = rng.uniform(0.0f, world);
        mx[d] = mn[d] + edge;
    }
    mn[2] = mx[2] = 0.0f;
}

const EventScene& event_scene(uint32_t changing) {
    static std::map<uint32_t, std::unique_ptr<EventScene>> scenes;
    std::unique_ptr<EventScene>& s = scenes[changing];
    if (s) return *s;
    s = std::make_unique<EventScene>();
    const uint32_t n = g_options.n;
    // Two boxes of mean edge 2.5 overlap when their corners are within about
    // 5 on both axes: 25 / world^2 per pair, n^2 / 2 pairs: about n overlapping
    // pairs (2 per box) at world^2 = 12.5 n.
    s->world = std::sqrt(12.5f * static_cast<float>(n));
    hashgrid_support::SplitMix64 rng(0xe7e175u);
    for (auto& f : s->frame)
        f.dims = 2;
    float mn[3], mx[3];
    for (uint32_t i = 0; i < n; ++i) {
        random_box(rng, s->world, mn, mx);
        s->frame[0].add(mn, mx);
    }
    // changing:P replaces about P% of the pairs: every box for 100, P / 2 % of them otherwise.
    const uint64_t moved_per_mille = changing >= 100 ? 1000 : changing * 5;
    for (uint32_t i = 0; i < n; ++i) {
        if (rng.below(1000) < moved_per_mille) {
            random_box(rng, s->world, mn, mx);
        } else {
            s->frame[0].box(i, mn, mx);
        }
        s->frame[1].add(mn, mx);
    }
    return *s;
}

hashgrid::BoxGridConfig grid_config(uint32_t n, float world) {
    hashgrid::BoxGridConfig c;
    c.dimensions = 2;
    c.max_objects = n;
    c.cell_size = 4.0f;
    c.world = hashgrid::World::bounded;
    c.cell_counts[0] = c.cell_counts[1] = static_cast<uint32_t>(std::ceil((world + 4.0f) / 4.0f)) + 1;
    c.max_cell_entries = 4 * n;
    c.max_pairs = 8ull * n;
    return c;
}

hashgrid::PairTrackerConfig tracker_config(uint32_t n) {
    hashgrid::PairTrackerConfig c;
    c.max_ids = n;
    c.max_pairs = 8 * n;
    return c;
}

/// Two grids, one per frame, and each frame's pairs.
struct Frames {
    hashgrid::BoxGrid grid[2];
    std::vector<hashgrid::Pair> pairs[2];
    hashgrid::PairResult result[2];
    uint64_t changed = 0; ///< Pairs in one frame and not the other, both ways: the events every update must give.
};

/// |A \ B| + |B \ A| of the two frames' pair sets (the check of every row).
uint64_t symmetric_difference(const Frames& f) {
    std::vector<uint64_t> sets[2];
    for (uint32_t k = 0; k < 2; ++k) {
        for (uint64_t i = 0; i < f.result[k].written; ++i)
            sets[k].push_back((uint64_t{f.pairs[k][i].a} << 32) | f.pairs[k][i].b);
        std::sort(sets[k].begin(), sets[k].end());
    }
    std::vector<uint64_t> only;
    std::set_symmetric_difference(sets[0].begin(), sets[0].end(), sets[1].begin(), sets[1].end(),
                                  std::back_inserter(only));
    return only.size();
}

std::unique_ptr<Frames> build_frames(const EventScene& s, const hashgrid::ThreadBackend& b) {
    auto f = std::make_unique<Frames>();
    const hashgrid::BoxGridConfig c = grid_config(g_options.n, s.world);
    for (uint32_t k = 0; k < 2; ++k) {
        f->pairs[k].resize(c.max_pairs);
        if (!f->grid[k].init_allocate(c).ok() || !f->grid[k].rebuild(s.frame[k].spans(), b).ok()) return nullptr;
        f->result[k] = f->grid[k].find_pairs(f->pairs[k].data(), f->pairs[k].size(), b);
        if (!f->result[k].status.ok()) return nullptr;
    }
    f->changed = symmetric_difference(*f);
    return f;
}

void bench_find_pairs(benchmark::State& state, uint32_t changing, const TbbBackend& tbb) {
    const hashgrid::ThreadBackend b = tbb.backend();
    std::unique_ptr<Frames> f = build_frames(event_scene(changing), b);
    if (!f) return state.SkipWithError("setup failed");
    uint32_t k = 0;
    for (auto _ : state) {
        const uint64_t t0 = now_ns();
        const hashgrid::PairResult r = f->grid[k].find_pairs(f->pairs[k].data(), f->pairs[k].size(), b);
        state.SetIterationTime(static_cast<double>(now_ns() - t0) * 1e-9);
        benchmark::DoNotOptimize(r.total);
        k = 1 - k;
    }
    state.counters["pairs"] = static_cast<double>(f->result[0].total);
}

void bench_events(benchmark::State& state, uint32_t changing, const TbbBackend& tbb) {
    const hashgrid::ThreadBackend b = tbb.backend();
    std::unique_ptr<Frames> f = build_frames(event_scene(changing), b);
    hashgrid::PairTracker tracker;
    if (!f || !tracker.init_allocate(tracker_config(g_options.n)).ok()) return state.SkipWithError("setup failed");
    if (!tracker.update(f->result[0], f->pairs[0].data(), b).ok()) return state.SkipWithError("update failed");
    uint32_t k = 1;
    uint64_t events = 0;
    for (auto _ : state) {
        const uint64_t t0 = now_ns();
        const hashgrid::Status s = tracker.update(f->result[k], f->pairs[k].data(), b);
        state.SetIterationTime(static_cast<double>(now_ns() - t0) * 1e-9);
        if (!s.ok()) return state.SkipWithError(s.message);
        events = tracker.events().begin.count + tracker.events().end.count;
        k = 1 - k;
    }
    if (events != f->changed)
        hashgrid_support::check_failed(state, "E2/hashgrid/events", "events are not the pair sets' difference");
    state.counters["pairs"] = static_cast<double>(f->result[0].total);
    state.counters["events"] = static_cast<double>(events);
}

/// A store holding frame A's boxes, and the moves that turn it into the other frame.
struct StoreFrames {
    hashgrid::ObjectStore store;
    hashgrid::BoxGrid grid;
    std::vector<hashgrid::ObjectHandle> handle;
    std::vector<hashgrid::Pair> pairs;
    std::vector<uint32_t> moved; ///< Boxes that differ between A and B.

    bool init(const EventScene& s) {
        hashgrid::ObjectStoreConfig sc;
        sc.dimensions = 2;
        sc.max_objects = g_options.n;
        hashgrid::BoxGridConfig gc = grid_config(g_options.n, s.world);
        pairs.resize(gc.max_pairs);
        if (!store.init_allocate(sc).ok() || !grid.init_allocate(gc).ok()) return false;
        float mn[3], mx[3], other_mn[3], other_mx[3];
        for (uint32_t i = 0; i < s.frame[0].size(); ++i) {
            s.frame[0].box(i, mn, mx);
            s.frame[1].box(i, other_mn, other_mx);
            if (mn[0] != other_mn[0] || mn[1] != other_mn[1] || mx[0] != other_mx[0] || mx[1] != other_mx[1])
                moved.push_back(i);
            hashgrid::ObjectBox box;
            for (uint32_t d = 0; d < 2; ++d) {
                box.min[d] = mn[d];
                box.max[d] = mx[d];
            }
            const hashgrid::ObjectAddResult a = store.add(box, 1, hashgrid::kAllLayers, i);
            if (!a.status.ok()) return false;
            handle.push_back(a.handle);
        }
        return true;
    }

    /// The game's moves (untimed): every changed box to frame k's place.
    bool move_to(const EventScene& s, uint32_t k) {
        float mn[3], mx[3];
        for (uint32_t i : moved) {
            s.frame[k].box(i, mn, mx);
            hashgrid::ObjectBox box;
            for (uint32_t d = 0; d < 2; ++d) {
                box.min[d] = mn[d];
                box.max[d] = mx[d];
            }
            if (!store.move(handle[i], box).ok()) return false;
        }
        return true;
    }
};

/// whole_frame: time rebuild + find_pairs + update; otherwise update only.
void bench_store_events(benchmark::State& state, uint32_t changing, const TbbBackend& tbb, bool whole_frame) {
    const hashgrid::ThreadBackend b = tbb.backend();
    const EventScene& scene = event_scene(changing);
    auto w = std::make_unique<StoreFrames>();
    hashgrid::PairTracker tracker;
    if (!w->init(scene) || !tracker.init_allocate(tracker_config(g_options.n)).ok())
        return state.SkipWithError("setup failed");
    std::unique_ptr<Frames> f = build_frames(scene, b); // the same boxes as BoxSpans: the expected event count
    if (!f) return state.SkipWithError("setup failed");
    uint32_t k = 0;
    uint64_t events = 0, pairs = 0;
    for (auto _ : state) {
        if (!w->move_to(scene, k)) return state.SkipWithError("move failed");
        uint64_t t0 = now_ns();
        if (!w->grid.rebuild(w->store, b).ok()) return state.SkipWithError("rebuild failed");
        const hashgrid::PairResult r = w->grid.find_pairs(w->pairs.data(), w->pairs.size(), b);
        if (!whole_frame) t0 = now_ns();
        const hashgrid::Status s = tracker.update(w->store, w->grid.view(), r, w->pairs.data(), b);
        state.SetIterationTime(static_cast<double>(now_ns() - t0) * 1e-9);
        if (!s.ok()) return state.SkipWithError(s.message);
        events = tracker.events().begin.count + tracker.events().end.count;
        pairs = r.total;
        k = 1 - k;
    }
    if (events != f->changed)
        hashgrid_support::check_failed(state, "E2/hashgrid/events-store", "events are not the pair sets' difference");
    state.counters["pairs"] = static_cast<double>(pairs);
    state.counters["events"] = static_cast<double>(events);
}

#if HASHGRID_BENCH_BOX2D
/// Counts Box2D's begin and end contact callbacks.
class CountingListener : public b2ContactListener {
public:
    uint64_t begin = 0;
    uint64_t end = 0;
    void BeginContact(b2Contact*) override { ++begin; }
    void EndContact(b2Contact*) override { ++end; }
};

/// One dynamic body per box with a sensor box fixture (no collision response,
/// so nothing moves but by SetTransform), gravity 0, sleeping off (a sleeping
/// pair's contact is never updated, so its end would be missed).
void bench_box2d_step(benchmark::State& state, uint32_t changing) {
    const EventScene& scene = event_scene(changing);
    auto world = std::make_unique<b2World>(b2Vec2(0.0f, 0.0f));
    world->SetAllowSleeping(false);
    CountingListener listener;
    world->SetContactListener(&listener);
    const uint32_t n = scene.frame[0].size();
    std::vector<b2Body*> body(n);
    std::vector<uint32_t> moved;
    float mn[3], mx[3], other_mn[3], other_mx[3];
    for (uint32_t i = 0; i < n; ++i) {
        scene.frame[0].box(i, mn, mx);
        scene.frame[1].box(i, other_mn, other_mx);
        if (mn[0] != other_mn[0] || mn[1] != other_mn[1] || mx[0] != other_mx[0] || mx[1] != other_mx[1])
            moved.push_back(i);
        b2BodyDef def;
        def.type = b2_dynamicBody;
        def.position.Set(0.5f * (mn[0] + mx[0]), 0.5f * (mn[1] + mx[1]));
        body[i] = world->CreateBody(&def);
        b2PolygonShape shape;
        shape.SetAsBox(0.5f * (mx[0] - mn[0]), 0.5f * (mx[1] - mn[1]));
        b2FixtureDef fixture;
        fixture.shape = &shape;
        fixture.density = 1.0f;
        fixture.isSensor = true;
        body[i]->CreateFixture(&fixture);
    }
    constexpr float kStep = 1.0f / 60.0f;
    world->Step(kStep, 8, 3); // frame A's contacts
    uint32_t k = 1;
    uint64_t events = 0;
    for (auto _ : state) {
        for (uint32_t i : moved) { // the game's moves (untimed)
            scene.frame[k].box(i, mn, mx);
            body[i]->SetTransform(b2Vec2(0.5f * (mn[0] + mx[0]), 0.5f * (mn[1] + mx[1])), 0.0f);
        }
        listener.begin = listener.end = 0;
        const uint64_t t0 = now_ns();
        world->Step(kStep, 8, 3);
        state.SetIterationTime(static_cast<double>(now_ns() - t0) * 1e-9);
        events = listener.begin + listener.end;
        k = 1 - k;
    }
    state.counters["pairs"] = static_cast<double>(world->GetContactCount());
    state.counters["events"] = static_cast<double>(events);
}
#endif

bool parse_options(hashgrid_support::BenchArgs& args, Options& o) {
    std::string v;
    bool ok = true;
    if (args.take("--n", v)) ok = hashgrid_support::parse_u32(v.c_str(), o.n) && o.n >= 1000;
    if (args.take("--threads", v)) ok = hashgrid_support::parse_u32_list(v.c_str(), 1, 64, o.threads) && ok;
    if (args.take("--frames", v)) ok = hashgrid_support::parse_u32(v.c_str(), o.frames) && o.frames >= 1 && ok;
    if (args.take("--changing", v)) ok = hashgrid_support::parse_u32_list(v.c_str(), 1, 100, o.changing) && ok;
    return ok;
}

} // namespace

int main(int argc, char** argv) {
    hashgrid_support::BenchArgs args(argc, argv);
    Options& o = g_options;
    if (!args.initialize(kUsage, parse_options(args, o))) return 2;
    benchmark::AddCustomContext("boxes", std::to_string(o.n));
#if HASHGRID_BENCH_BOX2D
    benchmark::AddCustomContext("systems", "Hashgrid, Box2D " + std::to_string(b2_version.major) + "." +
                                               std::to_string(b2_version.minor) + "." +
                                               std::to_string(b2_version.revision));
#else
    benchmark::AddCustomContext("systems", "Hashgrid, Box2D missing");
#endif
    std::map<uint32_t, std::unique_ptr<TbbBackend>> backends;
    for (uint32_t t : o.threads)
        backends[t] = std::make_unique<TbbBackend>(t);
    for (uint32_t changing : o.changing) {
        const std::string tag = "/changing:" + std::to_string(changing);
        for (uint32_t t : o.threads) {
            const std::string threads = "/threads:" + std::to_string(t);
            const TbbBackend* tbb = backends[t].get();
            hashgrid_support::register_frames("E2/hashgrid/find_pairs" + tag + threads, o.frames,
                                              [=](benchmark::State& s) { bench_find_pairs(s, changing, *tbb); });
            hashgrid_support::register_frames("E2/hashgrid/events" + tag + threads, o.frames,
                                              [=](benchmark::State& s) { bench_events(s, changing, *tbb); });
            hashgrid_support::register_frames(
                "E2/hashgrid/events-store" + tag + threads, o.frames,
                [=](benchmark::State& s) { bench_store_events(s, changing, *tbb, false); });
            hashgrid_support::register_frames("E2/hashgrid/frame" + tag + threads, o.frames, [=](benchmark::State& s) {
                bench_store_events(s, changing, *tbb, true);
            });
        }
#if HASHGRID_BENCH_BOX2D
        hashgrid_support::register_frames("E2/box2d/step" + tag + "/threads:1", o.frames,
                                          [=](benchmark::State& s) { bench_box2d_step(s, changing); });
#endif
    }
    return hashgrid_support::run_benchmarks();
}

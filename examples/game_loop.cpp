// SPDX-License-Identifier: MIT
// game_loop: a game's frame loop on Hashgrid, run on the game's own job
// system.
//
// The world holds box objects of mixed sizes kept in an ObjectStore with
// handles: the terrain (one box under everything), buildings, walking
// actors of several sizes (people, vehicles, giants), flying drones, a
// player, projectiles that actors fire (spawned and despawned every frame)
// and pickups. Collision layers decide who meets whom (a pair needs
// category_a & mask_b and category_b & mask_a, box_grid.h): actors walk on
// the terrain without reporting it, projectiles hit terrain, buildings and
// actors, pickups are seen by actors and the player only.
//
// Each frame:
//   1. game logic: despawn projectiles that hit something or expired, fire
//      new ones (store.add / store.remove: handles stay valid or go stale);
//   2. movement of every object, in parallel on the job system
//      (parallel_chunks), then store.move() for each;
//   3. BoxGrid::rebuild(store) and find_pairs(), mapped to handles
//      (handles_at): projectile hits and collected pickups; a PairTracker
//      turns the pairs into begin / end events by handle, pickups being
//      sensors (their pairs are events, never contacts);
//   4. queries from the player: a ray cast along its aim (query_ray_first
//      and query_ray, everything the shot would pierce), a view frustum
//      (query_frustum) and its 8 nearest actors or pickups (query_nearest);
//      the ray and nearest queries in their store-fed forms (store_queries.h),
//      whose hits carry handles.
// Everything Hashgrid runs in parallel goes through JobSystemBackend
// (platform/job_system_backend.h) on the WorkerPool below: a few fixed
// threads that run copies of one task function at a time.
//
// Every `--check-every` frames (and the first and last) all of it is
// compared with brute force over the game's own object list (not the
// store's arrays): the overlapping pairs with the layer rule, the ray hits
// by the slab test of ray_box_hit (box_queries.h) in double, the frustum by
// its documented plane test, the nearest by the documented float
// point-to-box distance, all compared by handle. The overlap events are
// checked too: the game keeps the set of touching pairs that the begin and
// end events describe (a begin of a pair already touching, or an end of one
// that is not, is a failure), and at a checked frame that set must be the
// brute-force pair set. Prints PASS or FAIL and
// returns nonzero on FAIL. Times are informational.
//
//   game_loop [--objects N] [--frames N] [--workers N] [--check-every N]

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"
#include "hashgrid/pair_tracker.h"
#include "hashgrid/platform/job_system_backend.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/query_types.h"
#include "hashgrid/status.h"
#include "hashgrid/store_queries.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/random.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace {

using hashgrid::ObjectHandle;
using hashgrid::Pair;
using hashgrid::QueryResult;
using hashgrid::RayHit;
using hashgrid::Status;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::JobTaskFn;
using hashgrid::platform::now_ns;

// ---------------------------------------------------------------------------
// The game's job system.

/// Fixed worker threads that run copies of one task function at a time:
/// enqueue publishes the task and how many copies may start, sleeping
/// workers each claim one; finish withdraws the copies nobody claimed (the
/// caller's own copy has already run every chunk, so they would find nothing
/// left) and waits for the running ones. Nothing is allocated after
/// construction. One loop at a time, which is what one JobSystemBackend asks.
class WorkerPool {
public:
    explicit WorkerPool(uint32_t threads) {
        threads_.reserve(threads);
        for (uint32_t t = 0; t < threads; ++t)
            threads_.emplace_back([this] { work(); });
    }
    ~WorkerPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : threads_)
            t.join();
    }
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    [[nodiscard]] uint32_t threads() const { return static_cast<uint32_t>(threads_.size()); }
    [[nodiscard]] uint64_t copies_run() const { return copies_run_; }

    /// hashgrid::platform::JobEnqueueFn.
    static void* enqueue(JobTaskFn task, uint32_t copies, void* task_context, void* user_context) {
        WorkerPool& pool = *static_cast<WorkerPool*>(user_context);
        const uint32_t starting = std::min(copies, pool.threads());
        if (starting == 0) return nullptr; // no threads: the caller runs the loop alone
        {
            std::lock_guard<std::mutex> lock(pool.mutex_);
            pool.task_ = task;
            pool.context_ = task_context;
            pool.unclaimed_ = starting;
        }
        pool.wake_.notify_all();
        return &pool;
    }

    /// hashgrid::platform::JobFinishFn.
    static void finish(void* handle, void*) {
        WorkerPool& pool = *static_cast<WorkerPool*>(handle);
        std::unique_lock<std::mutex> lock(pool.mutex_);
        pool.unclaimed_ = 0;
        pool.done_.wait(lock, [&] { return pool.running_ == 0; });
    }

private:
    void work() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return stop_ || unclaimed_ > 0; });
            if (stop_) return;
            --unclaimed_;
            ++running_;
            ++copies_run_;
            const JobTaskFn task = task_;
            void* const context = context_;
            lock.unlock();
            task(context);
            lock.lock();
            if (--running_ == 0) done_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    JobTaskFn task_ = nullptr; // guarded by mutex_, as are the counters
    void* context_ = nullptr;
    uint32_t unclaimed_ = 0;
    uint32_t running_ = 0;
    uint64_t copies_run_ = 0;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------------------
// The game's objects.

enum Layer : uint32_t {
    kTerrain = 1u << 0,
    kBuilding = 1u << 1,
    kActor = 1u << 2,
    kPlayer = 1u << 3,
    kProjectile = 1u << 4,
    kPickup = 1u << 5,
};
/// Who each layer collides with (symmetric: a in b's mask exactly when b is in a's).
constexpr uint32_t mask_of(uint32_t layer) {
    switch (layer) {
    case kTerrain:
        return kProjectile;
    case kBuilding:
        return kActor | kPlayer | kProjectile;
    case kActor:
        return kBuilding | kActor | kPlayer | kProjectile | kPickup;
    case kPlayer:
        return kBuilding | kActor | kProjectile | kPickup;
    case kProjectile:
        return kTerrain | kBuilding | kActor | kPlayer;
    default:
        return kActor | kPlayer; // pickups
    }
}
const char* layer_name(uint32_t layer) {
    switch (layer) {
    case kTerrain:
        return "terrain";
    case kBuilding:
        return "building";
    case kActor:
        return "actor";
    case kPlayer:
        return "player";
    case kProjectile:
        return "projectile";
    default:
        return "pickup";
    }
}

/// One object as the game keeps it. The box is recomputed from the position
/// after every move and given to the store as it is, so the brute-force
/// check reads exactly the boxes the grid was built from.
struct Entity {
    ObjectHandle handle;
    uint32_t layer = 0;
    float pos[3] = {};  ///< Centre of the bottom face (feet).
    float half[3] = {}; ///< Half extents (z: half height).
    float vel[3] = {};
    int32_t life = -1; ///< Projectiles: frames left; -1 for everything else.
    bool hit = false;  ///< Projectiles: hit something this frame (despawned next frame).
    hashgrid::ObjectBox box;

    void update_box() {
        for (int a = 0; a < 2; ++a) {
            box.min[a] = pos[a] - half[a];
            box.max[a] = pos[a] + half[a];
        }
        box.min[2] = pos[2];
        box.max[2] = pos[2] + 2.0f * half[2];
    }
};

using Vec3 = std::array<float, 3>;

uint64_t key(ObjectHandle h) { return (uint64_t{h.index} << 32) | h.generation; }

struct Options {
    uint32_t objects = 4000;
    uint32_t frames = 120;
    uint32_t workers = 0; ///< Threads of the job system besides the main thread; 0: hardware threads - 1.
    uint32_t check_every = 30;
};

bool parse_options(int argc, char** argv, Options& o) {
    if (!hashgrid_support::parse_count_options(argc, argv,
                                               {{"--objects", &o.objects},
                                                {"--frames", &o.frames},
                                                {"--workers", &o.workers},
                                                {"--check-every", &o.check_every}}))
        return false;
    if (o.objects < 50 || o.frames < 1 || o.check_every < 1 || o.workers > 64) {
        std::fprintf(stderr, "need --objects >= 50, --frames >= 1, --check-every >= 1, --workers <= 64\n");
        return false;
    }
    if (o.workers == 0) o.workers = std::max(1u, std::thread::hardware_concurrency()) - 1;
    return true;
}

/// The world, its objects and the per-frame answers.
class Game {
public:
    explicit Game(const Options& options) : rng_(0x6a3e), side_(3.0f * std::sqrt(static_cast<float>(options.objects))) {
        const uint32_t n = options.objects;
        // About n objects at most: 60% actors, 4% buildings, 10% pickups, up to 25% projectiles.
        const uint32_t buildings = n / 25, pickups = n / 10, actors = 3 * n / 5;
        max_projectiles_ = n / 4;
        capacity_ = 1 + buildings + pickups + actors + 1 + max_projectiles_;
        entities_.reserve(capacity_);

        spawn(kTerrain, {side_ * 0.5f, side_ * 0.5f, -1.0f}, {side_ * 0.5f, side_ * 0.5f, 0.5f}, {0, 0, 0});
        for (uint32_t i = 0; i < buildings; ++i) {
            const float hx = rng_.uniform(2.0f, 10.0f), hy = rng_.uniform(2.0f, 10.0f), hz = rng_.uniform(1.0f, 6.0f);
            spawn(kBuilding, random_ground(), {hx, hy, hz}, {0, 0, 0});
        }
        for (uint32_t i = 0; i < actors; ++i) {
            const uint32_t kind = rng_.below(10); // 6 people, 2 vehicles, 1 giant, 1 drone in 10
            Vec3 half = {0.4f, 0.4f, 0.9f};       // a person
            float speed = 0.08f;
            if (kind >= 6 && kind < 8) { // a vehicle
                half = {2.0f, 1.0f, 0.8f};
                speed = 0.4f;
            } else if (kind == 8) { // a giant
                half = {1.5f, 1.5f, 3.0f};
                speed = 0.05f;
            } else if (kind == 9) { // a drone
                half = {0.3f, 0.3f, 0.15f};
                speed = 0.25f;
            }
            Vec3 pos = random_ground();
            if (kind == 9) pos[2] = rng_.uniform(2.0f, 15.0f);
            const float heading = rng_.uniform(0.0f, 6.2831853f);
            spawn(kActor, pos, half, {speed * std::cos(heading), speed * std::sin(heading), 0.0f});
        }
        for (uint32_t i = 0; i < pickups; ++i) {
            Vec3 pos = random_ground();
            pos[2] = 0.5f;
            spawn(kPickup, pos, {0.25f, 0.25f, 0.25f}, {0, 0, 0});
        }
        spawn(kPlayer, {side_ * 0.5f, side_ * 0.5f, 0.0f}, {0.4f, 0.4f, 0.9f}, {0.1f, 0.07f, 0.0f});
        player_ = static_cast<uint32_t>(entities_.size() - 1);
    }

    /// Store and grid, sized once. False (and a message) on failure.
    bool init() {
        hashgrid::ObjectStoreConfig sc;
        sc.dimensions = 3;
        sc.max_objects = capacity_;
        Status s = store_.init_allocate(sc);
        hashgrid::BoxGridConfig gc = hashgrid::box_grid_config_for(sc);
        gc.cell_size = 2.0f;                  // about the size of a person, a car's half
        gc.max_cell_entries = 16 * capacity_; // most objects cover 1 to 8 cells; buildings more
        gc.max_pairs = 8ull * capacity_;
        if (s.ok()) s = grid_.init_allocate(gc);
        for (Entity& e : entities_) { // the objects made by the constructor
            if (!s.ok()) break;
            e.update_box();
            const hashgrid::ObjectAddResult r = store_.add(e.box, e.layer, mask_of(e.layer), 0);
            s = r.status;
            e.handle = r.handle;
        }
        pairs_.resize(static_cast<size_t>(gc.max_pairs));
        handle_pairs_.resize(pairs_.size());
        hashgrid::PairTrackerConfig tc;
        tc.max_ids = capacity_; // ids are the store's slots
        tc.max_pairs = static_cast<uint32_t>(gc.max_pairs);
        tc.sensor_layers = kPickup; // a pickup is a trigger: its pairs are sensor events
        if (s.ok()) s = tracker_.init_allocate(tc);
        return report("init", s);
    }

    struct FrameStats {
        double ms[4] = {}; ///< logic + movement, rebuild, pairs, queries
        uint64_t pairs = 0;
        uint64_t begins = 0, ends = 0; ///< Overlap events, contacts and sensors.
        uint32_t projectile_hits = 0, pickups_taken = 0, spawned = 0, despawned = 0;
        uint32_t visible = 0, pierced = 0;
        RayHit first{};
        uint32_t first_layer = 0;
        float nearest = 0.0f;
    };

    bool frame(uint32_t number, const hashgrid::ThreadBackend& backend, FrameStats& stats) {
        uint64_t start = now_ns();
        if (!logic(number, stats) || !move(backend)) return false;
        stats.ms[0] = elapsed_ms(start);

        start = now_ns();
        if (!report("rebuild", grid_.rebuild(store_, backend))) return false;
        stats.ms[1] = elapsed_ms(start);

        start = now_ns();
        pair_result_ = grid_.find_pairs(pairs_.data(), pairs_.size(), backend);
        if (!report("find_pairs", pair_result_.status)) return false;
        if (!report("handles_at", store_.handles_at(grid_.view(), pair_result_, pairs_.data(), handle_pairs_.data())))
            return false;
        if (!report("events", tracker_.update(store_, grid_.view(), pair_result_, pairs_.data(), backend)))
            return false;
        apply_events(stats);
        react_to_pairs(stats);
        stats.ms[2] = elapsed_ms(start);

        start = now_ns();
        if (!player_queries(backend, stats)) return false;
        stats.ms[3] = elapsed_ms(start);
        stats.pairs = pair_result_.total;
        return true;
    }

    /// Everything this frame answered, against brute force over the game's
    /// own object list. "" when all agree, else what differs.
    const char* check() const {
        // Pairs: every two objects whose closed boxes overlap and whose layers meet.
        std::vector<std::pair<uint64_t, uint64_t>> expected, got;
        for (size_t i = 0; i < entities_.size(); ++i)
            for (size_t j = i + 1; j < entities_.size(); ++j) {
                const Entity& a = entities_[i];
                const Entity& b = entities_[j];
                if ((a.layer & mask_of(b.layer)) == 0 || (b.layer & mask_of(a.layer)) == 0) continue;
                bool overlap = true;
                for (int d = 0; d < 3; ++d)
                    overlap = overlap && a.box.min[d] <= b.box.max[d] && b.box.min[d] <= a.box.max[d];
                if (overlap) expected.push_back(ordered(key(a.handle), key(b.handle)));
            }
        for (size_t k = 0; k < static_cast<size_t>(pair_result_.written); ++k)
            got.push_back(ordered(key(handle_pairs_[k].a), key(handle_pairs_[k].b)));
        std::sort(expected.begin(), expected.end());
        std::sort(got.begin(), got.end());
        if (expected != got || pair_result_.total != pair_result_.written) return "overlapping pairs";
        if (event_problem_[0] != '\0') return event_problem_;
        if (std::vector<std::pair<uint64_t, uint64_t>>(touching_.begin(), touching_.end()) != expected)
            return "overlap events (the pairs their begins and ends describe)";

        // Ray: every hit in (t, dense index) order; the first hit is the first of them.
        std::vector<Hit> hits;
        for (const Entity& e : entities_) {
            float t = 0.0f;
            if ((e.layer & kShotMask) != 0 && slab_hit(ray_, e.box, t))
                hits.push_back({t, store_.dense_index(e.handle), key(e.handle)});
        }
        std::sort(hits.begin(), hits.end(), [](const Hit& p, const Hit& q) {
            return p.value != q.value ? p.value < q.value : p.dense < q.dense;
        });
        if (hits.size() != ray_keys_.size()) return "ray hits (count)";
        for (size_t k = 0; k < hits.size(); ++k)
            if (hits[k].key != ray_keys_[k] || hits[k].value != ray_hits_[k].t) return "ray hits";
        if (hits.empty() ? first_key_ != 0 : (first_key_ != hits[0].key || first_hit_.t != hits[0].value))
            return "first ray hit";

        // Frustum: the conservative plane test, by handle.
        std::vector<uint64_t> visible;
        for (const Entity& e : entities_)
            if (inside_frustum(e.box)) visible.push_back(key(e.handle));
        std::vector<uint64_t> seen = frustum_keys_;
        std::sort(visible.begin(), visible.end());
        std::sort(seen.begin(), seen.end());
        if (visible != seen) return "frustum";

        // Nearest: the float point-to-box distance, ordered by (distance, dense index).
        std::vector<Hit> near_hits;
        const float limit2 = kNearestRange * kNearestRange;
        for (const Entity& e : entities_) {
            if ((e.layer & kNearestMask) == 0) continue;
            const float d2 = box_distance2(nearest_query_.center, e.box);
            if (d2 <= limit2) near_hits.push_back({d2, store_.dense_index(e.handle), key(e.handle)});
        }
        std::sort(near_hits.begin(), near_hits.end(), [](const Hit& p, const Hit& q) {
            return p.value != q.value ? p.value < q.value : p.dense < q.dense;
        });
        if (near_hits.size() > kNearestK) near_hits.resize(kNearestK);
        if (near_hits.size() != nearest_keys_.size()) return "nearest (count)";
        for (size_t k = 0; k < near_hits.size(); ++k)
            if (near_hits[k].key != nearest_keys_[k] || near_hits[k].value != nearest_[k].distance_squared)
                return "nearest";
        return "";
    }

    [[nodiscard]] uint32_t object_count() const { return store_.size(); }
    [[nodiscard]] float side() const { return side_; }

private:
    static constexpr uint32_t kShotMask = kBuilding | kActor | kTerrain;
    static constexpr uint32_t kNearestMask = kActor | kPickup;
    static constexpr uint32_t kNearestK = 8;
    static constexpr float kNearestRange = 40.0f;
    static constexpr float kShotRange = 80.0f;
    static constexpr int32_t kProjectileLife = 90;

    struct Hit {
        float value; ///< t or squared distance
        uint32_t dense;
        uint64_t key;
    };

    static std::pair<uint64_t, uint64_t> ordered(uint64_t a, uint64_t b) {
        return a < b ? std::make_pair(a, b) : std::make_pair(b, a);
    }

    Vec3 random_ground() {
        const float x = rng_.uniform(0.0f, side_); // two statements: a fixed order of draws
        const float y = rng_.uniform(0.0f, side_);
        return {x, y, 0.0f};
    }

    void spawn(uint32_t layer, Vec3 pos, Vec3 half, Vec3 vel) {
        Entity e;
        e.layer = layer;
        for (int a = 0; a < 3; ++a) {
            e.pos[a] = pos[a];
            e.half[a] = half[a];
            e.vel[a] = vel[a];
        }
        entities_.push_back(e);
    }

    /// Despawns spent projectiles, fires new ones (the store hands out and revokes handles).
    bool logic(uint32_t number, FrameStats& stats) {
        for (size_t i = 0; i < entities_.size();) {
            Entity& e = entities_[i];
            if (e.layer == kProjectile && (e.hit || e.life <= 0)) {
                if (!report("remove", store_.remove(e.handle))) return false;
                // The game's own swap-remove (the store keeps its own order).
                // Projectiles come after the player, so the player never moves.
                e = entities_.back();
                entities_.pop_back();
                ++stats.despawned;
                continue;
            }
            ++i;
        }
        // Some actors fire, in a direction of their own, while there is room.
        projectiles_ = 0;
        for (const Entity& e : entities_)
            projectiles_ += e.layer == kProjectile ? 1 : 0;
        const uint32_t live = static_cast<uint32_t>(entities_.size());
        for (uint32_t i = 0; i < live && projectiles_ < max_projectiles_; ++i) {
            if (entities_[i].layer != kActor || rng_.below(200) != 0) continue;
            const Entity& shooter = entities_[i];
            const float heading = rng_.uniform(0.0f, 6.2831853f);
            const float dir[3] = {std::cos(heading), std::sin(heading), 0.05f};
            const float reach = std::max(shooter.half[0], shooter.half[1]) * 1.5f + 0.3f; // start clear of the shooter
            Entity p;
            p.layer = kProjectile;
            p.life = kProjectileLife;
            for (int a = 0; a < 3; ++a) {
                p.half[a] = 0.1f;
                p.vel[a] = 1.2f * dir[a];
                p.pos[a] = shooter.pos[a] + reach * dir[a];
            }
            p.pos[2] = shooter.pos[2] + shooter.half[2];
            p.update_box();
            const hashgrid::ObjectAddResult r = store_.add(p.box, kProjectile, mask_of(kProjectile), number);
            if (!report("add", r.status)) return false;
            p.handle = r.handle;
            entities_.push_back(p); // within the capacity reserved at construction
            ++projectiles_;
            ++stats.spawned;
        }
        return true;
    }

    /// Moves everything that moves, in parallel; then tells the store (serially: one writer).
    bool move(const hashgrid::ThreadBackend& backend) {
        const float s = side_;
        Entity* entities = entities_.data();
        hashgrid::parallel_chunks(backend, static_cast<uint32_t>(entities_.size()), 256,
                                  [entities, s](uint32_t begin, uint32_t end, uint32_t) {
                                      for (uint32_t i = begin; i < end; ++i)
                                          step(entities[i], s);
                                  });
        for (const Entity& e : entities_)
            if (e.layer != kTerrain && e.layer != kBuilding && !report("move", store_.move(e.handle, e.box)))
                return false;
        return true;
    }

    /// One object's motion: walkers and drones bounce off the world's edges,
    /// projectiles fall, pickups stay (or jump when taken, react_to_pairs).
    static void step(Entity& e, float s) {
        if (e.layer == kTerrain || e.layer == kBuilding || e.layer == kPickup) {
            e.update_box();
            return;
        }
        if (e.layer == kProjectile) {
            e.vel[2] -= 0.01f;
            --e.life;
        }
        for (int a = 0; a < 2; ++a) {
            e.pos[a] += e.vel[a];
            if (e.layer != kProjectile && (e.pos[a] < 0.0f || e.pos[a] > s)) {
                e.vel[a] = -e.vel[a];
                e.pos[a] = std::clamp(e.pos[a], 0.0f, s);
            }
        }
        e.pos[2] += e.vel[2];
        e.update_box();
    }

    /// Projectile hits despawn the projectile next frame; a pickup an actor
    /// touches moves somewhere else; an actor or the player that walked into a
    /// building is pushed out the shorter way and turns back on that axis
    /// (its box follows at the next move).
    /// The events, applied to the set of touching pairs they describe.
    void apply_events(FrameStats& stats) {
        const hashgrid::PairEvents e = tracker_.events();
        // Ends first: a pair that changes kind (contact, sensor) ends as one and begins as the other.
        for (const hashgrid::PairEventList* list : {&e.end, &e.sensor_end})
            for (uint64_t k = 0; k < list->count; ++k)
                if (touching_.erase(ordered(key(list->pairs[k].a), key(list->pairs[k].b))) != 1)
                    event_problem_ = "an end event of a pair not touching";
        for (const hashgrid::PairEventList* list : {&e.begin, &e.sensor_begin})
            for (uint64_t k = 0; k < list->count; ++k)
                if (!touching_.insert(ordered(key(list->pairs[k].a), key(list->pairs[k].b))).second)
                    event_problem_ = "a begin event of a pair already touching";
        stats.begins = e.begin.count + e.sensor_begin.count;
        stats.ends = e.end.count + e.sensor_end.count;
    }

    void react_to_pairs(FrameStats& stats) {
        // The game finds its entity by the handle's slot (a live handle's slot is unique).
        by_slot_.assign(capacity_, 0xffffffffu);
        for (uint32_t i = 0; i < entities_.size(); ++i)
            by_slot_[entities_[i].handle.index] = i;
        for (size_t k = 0; k < static_cast<size_t>(pair_result_.written); ++k) {
            Entity& a = entities_[by_slot_[handle_pairs_[k].a.index]];
            Entity& b = entities_[by_slot_[handle_pairs_[k].b.index]];
            for (Entity* p : {&a, &b}) {
                Entity& other = p == &a ? b : a;
                if (p->layer == kProjectile && !p->hit) {
                    p->hit = true;
                    ++stats.projectile_hits;
                }
                if ((p->layer & (kActor | kPlayer)) != 0 && other.layer == kBuilding) push_out(*p, other.box);
                if (p->layer == kPickup && (other.layer & (kActor | kPlayer)) != 0) {
                    const Vec3 g = random_ground();
                    p->pos[0] = g[0];
                    p->pos[1] = g[1];
                    ++stats.pickups_taken;
                }
            }
        }
    }

    static void push_out(Entity& e, const hashgrid::ObjectBox& wall) {
        float depth[2];
        for (int a = 0; a < 2; ++a)
            depth[a] = std::min(e.box.max[a], wall.max[a]) - std::max(e.box.min[a], wall.min[a]);
        const int a = depth[0] < depth[1] ? 0 : 1;
        const bool before = e.pos[a] < 0.5f * (wall.min[a] + wall.max[a]);
        e.pos[a] += before ? -(depth[a] + 0.01f) : depth[a] + 0.01f;
        e.vel[a] = before ? -std::fabs(e.vel[a]) : std::fabs(e.vel[a]);
    }

    /// The player's aim ray, view frustum and nearest neighbours.
    bool player_queries(const hashgrid::ThreadBackend& backend, FrameStats& stats) {
        const hashgrid::BoxQueryGrid q = hashgrid::prepare_box_queries(grid_.view(), backend);
        Entity& player = entities_[player_];
        const float yaw = 0.02f * static_cast<float>(++turns_);
        const float eye[3] = {player.pos[0], player.pos[1], player.pos[2] + 1.6f};
        const float f[3] = {std::cos(yaw), std::sin(yaw), 0.0f};

        // The shot: first hit, and everything along it up to its range.
        ray_ = hashgrid::Ray{{eye[0], eye[1], eye[2]}, {f[0], f[1], -0.02f}, kShotRange};
        QueryResult r = hashgrid::query_ray_first(q, ray_, kShotMask, &first_hit_);
        if (!report("query_ray_first", r.status)) return false;
        first_key_ = 0;
        stats.first = first_hit_;
        if (r.total == 1) {
            ObjectHandle h;
            if (!report("handle_at", store_.handle_at(q.view, first_hit_.index, h))) return false;
            first_key_ = key(h);
            stats.first_layer = store_.categories()[first_hit_.index];
        }
        ray_hits_.resize(64);
        // The store-fed form (store_queries.h): hits carry handles, no mapping.
        r = hashgrid::query_ray(store_, q, ray_, kShotMask, ray_hits_.data(), ray_hits_.size());
        if (r.status.code == hashgrid::StatusCode::output_too_small) {
            ray_hits_.resize(static_cast<size_t>(r.total));
            r = hashgrid::query_ray(store_, q, ray_, kShotMask, ray_hits_.data(), ray_hits_.size());
        }
        if (!report("query_ray", r.status)) return false;
        ray_hits_.resize(static_cast<size_t>(r.written));
        stats.pierced = static_cast<uint32_t>(r.total);
        keys_of(ray_hits_, ray_keys_);

        // The camera: 90 degrees wide, 60 high, from 0.5 to 120 ahead.
        const float right[3] = {f[1], -f[0], 0.0f};
        const float up[3] = {0.0f, 0.0f, 1.0f};
        const float h_sin = std::sin(0.7853982f), h_cos = std::cos(0.7853982f);
        const float v_sin = std::sin(0.5235988f), v_cos = std::cos(0.5235988f);
        frustum_ = hashgrid::Frustum{};
        frustum_.plane_count = 6;
        float normals[6][3];
        for (int a = 0; a < 3; ++a) {
            normals[0][a] = f[a];                            // z_near
            normals[1][a] = -f[a];                           // z_far
            normals[2][a] = h_sin * f[a] - h_cos * right[a]; // right edge
            normals[3][a] = h_sin * f[a] + h_cos * right[a]; // left edge
            normals[4][a] = v_sin * f[a] - v_cos * up[a];    // top edge
            normals[5][a] = v_sin * f[a] + v_cos * up[a];    // bottom edge
        }
        const float z_near = 0.5f, z_far = 120.0f;
        for (int k = 0; k < 6; ++k) {
            hashgrid::Plane& p = frustum_.planes[k];
            for (int a = 0; a < 3; ++a)
                p.normal[a] = normals[k][a];
            p.d = -((normals[k][0] * eye[0] + normals[k][1] * eye[1]) + normals[k][2] * eye[2]);
        }
        frustum_.planes[0].d -= z_near;
        frustum_.planes[1].d += z_far;
        frustum_hits_.resize(store_.size());
        r = hashgrid::query_frustum(q, frustum_, hashgrid::kAllLayers, frustum_hits_.data(), frustum_hits_.size());
        if (!report("query_frustum", r.status)) return false;
        frustum_keys_.resize(static_cast<size_t>(r.written));
        handles_.resize(frustum_keys_.size());
        if (!report("handles_at", store_.handles_at(q.view, r, frustum_hits_.data(), handles_.data()))) return false;
        for (size_t k = 0; k < frustum_keys_.size(); ++k)
            frustum_keys_[k] = key(handles_[k]);
        stats.visible = static_cast<uint32_t>(r.total);

        // The 8 nearest actors or pickups within 40.
        nearest_query_ = hashgrid::QueryNearest{{eye[0], eye[1], eye[2]}, kNearestK, kNearestRange};
        nearest_.resize(kNearestK);
        r = hashgrid::query_nearest(store_, q, nearest_query_, kNearestMask, nearest_.data(), nearest_.size());
        if (!report("query_nearest", r.status)) return false;
        nearest_.resize(static_cast<size_t>(r.written));
        keys_of(nearest_, nearest_keys_);
        stats.nearest = nearest_.empty() ? -1.0f : std::sqrt(nearest_[0].distance_squared);
        return true;
    }

    /// Handle keys of the objects of ray or nearest hits.
    template <typename HitType>
    static void keys_of(const std::vector<HitType>& hits, std::vector<uint64_t>& keys) {
        keys.resize(hits.size());
        for (size_t k = 0; k < hits.size(); ++k)
            keys[k] = key(hits[k].handle);
    }

    // The documented tests, written out independently for the check.

    /// ray_box_hit's slab test (box_queries.h): double, t = t_enter rounded to float.
    static bool slab_hit(const hashgrid::Ray& ray, const hashgrid::ObjectBox& b, float& t) {
        double t_enter = 0.0, t_exit = ray.max_t;
        for (int a = 0; a < 3; ++a) {
            const double o = ray.origin[a], d = ray.direction[a];
            if (d == 0.0) {
                if (o < b.min[a] || o > b.max[a]) return false;
                continue;
            }
            double t1 = (b.min[a] - o) / d, t2 = (b.max[a] - o) / d;
            if (t1 > t2) std::swap(t1, t2);
            t_enter = std::max(t_enter, t1);
            t_exit = std::min(t_exit, t2);
        }
        if (!(t_enter <= t_exit)) return false;
        t = static_cast<float>(t_enter);
        return true;
    }

    /// query_frustum's test: rejected when the corner farthest along some
    /// plane's normal is behind it.
    bool inside_frustum(const hashgrid::ObjectBox& b) const {
        for (uint32_t k = 0; k < frustum_.plane_count; ++k) {
            const hashgrid::Plane& p = frustum_.planes[k];
            float c[3];
            for (int a = 0; a < 3; ++a)
                c[a] = p.normal[a] >= 0.0f ? b.max[a] : b.min[a];
            if (((p.normal[0] * c[0] + p.normal[1] * c[1]) + p.normal[2] * c[2]) + p.d < 0.0f) return false;
        }
        return true;
    }

    /// point_box_distance2 (box_queries.h), in float.
    static float box_distance2(const float (&p)[3], const hashgrid::ObjectBox& b) {
        float d[3];
        for (int a = 0; a < 3; ++a)
            d[a] = p[a] < b.min[a] ? b.min[a] - p[a] : (p[a] > b.max[a] ? p[a] - b.max[a] : 0.0f);
        return (d[0] * d[0] + d[1] * d[1]) + d[2] * d[2];
    }

    static bool report(const char* what, const Status& s) {
        if (!s.ok())
            std::printf("%s failed: %s (%s), needed %llu\n", what, hashgrid::to_string(s.code), s.message,
                        static_cast<unsigned long long>(s.needed));
        return s.ok();
    }

    hashgrid_support::SplitMix64 rng_;
    float side_;
    uint32_t capacity_ = 0, max_projectiles_ = 0, projectiles_ = 0, player_ = 0, turns_ = 0;
    std::vector<Entity> entities_;
    std::vector<uint32_t> by_slot_;
    hashgrid::ObjectStore store_;
    hashgrid::BoxGrid grid_;
    hashgrid::PairTracker tracker_;
    std::set<std::pair<uint64_t, uint64_t>> touching_; ///< What the events say touches now.
    const char* event_problem_ = "";

    // This frame's answers (kept for the check).
    std::vector<Pair> pairs_;
    std::vector<hashgrid::ObjectHandlePair> handle_pairs_;
    QueryResult pair_result_;
    hashgrid::Ray ray_;
    RayHit first_hit_;
    uint64_t first_key_ = 0;
    std::vector<hashgrid::ObjectRayHit> ray_hits_;
    std::vector<uint64_t> ray_keys_;
    hashgrid::Frustum frustum_;
    std::vector<uint32_t> frustum_hits_;
    std::vector<uint64_t> frustum_keys_;
    hashgrid::QueryNearest nearest_query_;
    std::vector<hashgrid::ObjectNearestHit> nearest_;
    std::vector<uint64_t> nearest_keys_;
    std::vector<ObjectHandle> handles_;
};

} // namespace

int main(int argc, char** argv) {
    Options options;
    if (!parse_options(argc, argv, options)) return 2;

    // The game's job system, and Hashgrid's view of it.
    WorkerPool pool(options.workers);
    hashgrid::platform::JobSystemConfig jc;
    jc.enqueue = &WorkerPool::enqueue;
    jc.finish = &WorkerPool::finish;
    jc.worker_count = pool.threads() + 1; // its threads and the main thread
    jc.user_context = &pool;
    hashgrid::platform::JobSystemBackend adapter(jc);
    const hashgrid::ThreadBackend backend = adapter.backend();

    Game game(options);
    if (!game.init()) {
        std::printf("FAIL\n");
        return 1;
    }
    std::printf("game_loop: %u objects in a %.0f x %.0f world, job system with %u threads + main\n",
                game.object_count(), static_cast<double>(game.side()), static_cast<double>(game.side()),
                pool.threads());
    std::printf("frame | ms: logic+move rebuild pairs queries | objects | pairs | begin/end | shots hit | pickups | "
                "shot's first hit | pierced | visible | nearest | check\n");

    uint32_t checked = 0, mismatches = 0;
    for (uint32_t frame = 0; frame < options.frames; ++frame) {
        Game::FrameStats stats;
        if (!game.frame(frame, backend, stats)) {
            std::printf("FAIL\n");
            return 1;
        }
        const char* verdict = "-";
        if (frame % options.check_every == 0 || frame + 1 == options.frames) {
            const char* difference = game.check();
            ++checked;
            mismatches += difference[0] == '\0' ? 0 : 1;
            verdict = difference[0] == '\0' ? "same as brute force" : difference;
        }
        if (frame % 10 == 0 || verdict[0] != '-' || frame + 1 == options.frames) {
            char first[48] = "nothing";
            if (stats.first.index != hashgrid::kNoIndex)
                std::snprintf(first, sizeof(first), "%s at %.1f", layer_name(stats.first_layer),
                              static_cast<double>(stats.first.t));
            std::printf("%5u | %5.2f %5.2f %5.2f %5.2f | %6u | %6llu | %4llu/%-4llu | %4u | %3u | %-18s | %3u | %5u | "
                        "%6.2f | %s\n",
                        frame, stats.ms[0], stats.ms[1], stats.ms[2], stats.ms[3], game.object_count(),
                        static_cast<unsigned long long>(stats.pairs), static_cast<unsigned long long>(stats.begins),
                        static_cast<unsigned long long>(stats.ends), stats.projectile_hits, stats.pickups_taken, first,
                        stats.pierced, stats.visible, static_cast<double>(stats.nearest), verdict);
        }
    }
    std::printf("job system: %llu loops enqueued, %llu task copies run on its threads\n",
                static_cast<unsigned long long>(adapter.enqueued_loops()),
                static_cast<unsigned long long>(pool.copies_run()));
    const bool pass = mismatches == 0 && checked > 0;
    std::printf("%s: %u of %u checked frames match brute force (pairs, overlap events, ray, frustum, nearest)\n",
                pass ? "PASS" : "FAIL", checked - mismatches, checked);
    return pass ? 0 : 1;
}

// SPDX-License-Identifier: MIT
// Zero allocations per frame (docs/design.md, guarantee 1): after init and one
// warm-up frame, >= 100 frames of rebuild + find_pairs + neighbor_lists with
// moving, bouncing particles make no allocation call anywhere in the process,
// for the serial backend, the std::thread backend, oneTBB at 1, 2, 4 and 8
// threads, and a game's job system through JobSystemBackend at 1, 2, 4 and 8
// workers, bounded and unbounded.
//
// The same with a trace attached (hashgrid/trace.h: ring, zone hooks, query
// stats) for the particle and the box grid, serial and std::thread (end of
// file).
//
// The same for the box grid, the queries and the persistent objects (second
// half of the file), for the serial backend, the std::thread backend and
// oneTBB at 1, 2 and 4 threads: BoxGrid rebuild + find_pairs +
// find_pairs_with with boxes moving every frame (3D and 2D, bounded and
// unbounded, with large objects), prepare_box_queries and every single and
// batched box query, every particle query and Grid::find_pairs_with after a Grid
// rebuild, and ObjectStore / ProximityIndex churn (add, move, remove,
// update_index or a lazy rebuild, find_near, find_near_radius, find_pairs).
// Each group of calls is counted on its own, so a failure names the call.
//
// What is counted (docs/allocation.md has the details and the evidence):
// - malloc, free, calloc, realloc, aligned_alloc, posix_memalign, memalign,
//   valloc, pvalloc: replaced for the whole process (the executable exports
//   them, ENABLE_EXPORTS), forwarding to glibc's __libc_* entry points;
// - every global operator new / delete (plain, array, nothrow, aligned, sized);
// - oneTBB's own allocator entry points (tbb::detail::r1::cache_aligned_allocate,
//   cache_aligned_deallocate, allocate_memory, deallocate_memory). oneTBB sends
//   its internal allocations to libtbbmalloc when that library can be loaded,
//   and tbbmalloc never calls malloc, so counting malloc alone cannot see them.
//   libtbb.so calls these entry points through its PLT, so the definitions
//   below interpose them; they forward to the real ones found with
//   dlsym(RTLD_NEXT).
#include <doctest/doctest.h>

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"
#include "hashgrid/pair_tracker.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/platform/job_system_backend.h"
#include "hashgrid/platform/tbb_backend.h"
#include "hashgrid/proximity_index.h"
#include "hashgrid/store_queries.h"
#include "hashgrid/trace.h"
#include "hashgrid_support/box_scene.h"
#include "odd_job_system.h"
#include "test_support.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <malloc.h>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <unistd.h>
#include <vector>

#if defined(HASHGRID_HAS_TBB)
#include <oneapi/tbb/tbb_allocator.h>
#endif

// ---------------------------------------------------------------------------
// Counters.

namespace {
std::atomic<uint64_t> g_allocations{0}; // malloc family + operator new
std::atomic<uint64_t> g_frees{0};       // free + operator delete (non-null)
std::atomic<uint64_t> g_tbb_allocations{0};
std::atomic<uint64_t> g_tbb_frees{0};
} // namespace

/// Where the counter self-test lets its pointers escape (so no allocation is elided).
void* volatile g_sink = nullptr;

namespace {

void* count_allocation(void* p) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return p;
}
void count_free(void* p) {
    if (p != nullptr) g_frees.fetch_add(1, std::memory_order_relaxed);
}
} // namespace

// ---------------------------------------------------------------------------
// The C allocator, for the whole process.

extern "C" {
void* __libc_malloc(size_t size) noexcept;
void __libc_free(void* p) noexcept;
void* __libc_calloc(size_t count, size_t size) noexcept;
void* __libc_realloc(void* p, size_t size) noexcept;
void* __libc_memalign(size_t alignment, size_t size) noexcept;

void* malloc(size_t size) noexcept { return count_allocation(__libc_malloc(size)); }
void free(void* p) noexcept {
    count_free(p);
    __libc_free(p);
}
void* calloc(size_t count, size_t size) noexcept { return count_allocation(__libc_calloc(count, size)); }
void* realloc(void* p, size_t size) noexcept { return count_allocation(__libc_realloc(p, size)); }
void* memalign(size_t alignment, size_t size) noexcept { return count_allocation(__libc_memalign(alignment, size)); }
void* aligned_alloc(size_t alignment, size_t size) noexcept {
    return count_allocation(__libc_memalign(alignment, size));
}
int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
    if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void* p = count_allocation(__libc_memalign(alignment, size));
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
}
void* valloc(size_t size) noexcept {
    return count_allocation(__libc_memalign(static_cast<size_t>(sysconf(_SC_PAGESIZE)), size));
}
void* pvalloc(size_t size) noexcept {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return count_allocation(__libc_memalign(page, (size + page - 1) / page * page));
}
} // extern "C"

// ---------------------------------------------------------------------------
// Global operator new / delete, every variant.

namespace {
void* new_or_fail(void* p) {
    if (p == nullptr) {
#if defined(__cpp_exceptions)
        throw std::bad_alloc();
#else
        std::abort();
#endif
    }
    return p;
}
void* aligned(size_t size, std::align_val_t alignment) {
    const size_t a = static_cast<size_t>(alignment) < sizeof(void*) ? sizeof(void*) : static_cast<size_t>(alignment);
    return count_allocation(__libc_memalign(a, size == 0 ? 1 : size));
}
void release(void* p) {
    count_free(p);
    __libc_free(p);
}
} // namespace

void* operator new(size_t size) { return new_or_fail(count_allocation(__libc_malloc(size == 0 ? 1 : size))); }
void* operator new[](size_t size) { return new_or_fail(count_allocation(__libc_malloc(size == 0 ? 1 : size))); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
    return count_allocation(__libc_malloc(size == 0 ? 1 : size));
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
    return count_allocation(__libc_malloc(size == 0 ? 1 : size));
}
void* operator new(size_t size, std::align_val_t a) { return new_or_fail(aligned(size, a)); }
void* operator new[](size_t size, std::align_val_t a) { return new_or_fail(aligned(size, a)); }
void* operator new(size_t size, std::align_val_t a, const std::nothrow_t&) noexcept { return aligned(size, a); }
void* operator new[](size_t size, std::align_val_t a, const std::nothrow_t&) noexcept { return aligned(size, a); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, size_t) noexcept { release(p); }
void operator delete[](void* p, size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

// ---------------------------------------------------------------------------
// oneTBB's allocator entry points (see the top of the file).

#if defined(HASHGRID_HAS_TBB)
namespace {
template <typename Fn>
Fn next_symbol(const char* unsigned_long_name, const char* unsigned_int_name) {
    // Mangled names differ with the type of size_t ('m' unsigned long, 'j' unsigned int).
    // The type, not the size: on armhf both are 4 bytes but size_t is unsigned int.
    const char* name = std::is_same_v<size_t, unsigned long> ? unsigned_long_name : unsigned_int_name;
    void* sym = dlsym(RTLD_NEXT, name);
    if (sym == nullptr) {
        std::fprintf(stderr, "test_zero_alloc: dlsym(RTLD_NEXT, %s) failed\n", name);
        std::abort();
    }
    return reinterpret_cast<Fn>(sym);
}
using AllocateFn = void* (*)(size_t);
using DeallocateFn = void (*)(void*);
} // namespace

namespace tbb::detail::r1 {
void* cache_aligned_allocate(size_t size) {
    static const auto real = next_symbol<AllocateFn>("_ZN3tbb6detail2r122cache_aligned_allocateEm",
                                                     "_ZN3tbb6detail2r122cache_aligned_allocateEj");
    g_tbb_allocations.fetch_add(1, std::memory_order_relaxed);
    return real(size);
}
void cache_aligned_deallocate(void* p) {
    static const auto real = next_symbol<DeallocateFn>("_ZN3tbb6detail2r124cache_aligned_deallocateEPv",
                                                       "_ZN3tbb6detail2r124cache_aligned_deallocateEPv");
    if (p != nullptr) g_tbb_frees.fetch_add(1, std::memory_order_relaxed);
    real(p);
}
void* allocate_memory(size_t size) {
    static const auto real =
        next_symbol<AllocateFn>("_ZN3tbb6detail2r115allocate_memoryEm", "_ZN3tbb6detail2r115allocate_memoryEj");
    g_tbb_allocations.fetch_add(1, std::memory_order_relaxed);
    return real(size);
}
void deallocate_memory(void* p) {
    static const auto real =
        next_symbol<DeallocateFn>("_ZN3tbb6detail2r117deallocate_memoryEPv", "_ZN3tbb6detail2r117deallocate_memoryEPv");
    if (p != nullptr) g_tbb_frees.fetch_add(1, std::memory_order_relaxed);
    real(p);
}
} // namespace tbb::detail::r1
#endif

// ---------------------------------------------------------------------------

using namespace hashgrid_test;
using hashgrid::GridConfig;

namespace {

struct Counts {
    uint64_t allocations, frees, tbb_allocations, tbb_frees;
};
Counts snapshot() { return {g_allocations.load(), g_frees.load(), g_tbb_allocations.load(), g_tbb_frees.load()}; }

/// Whether a mapping of the process names `library` (/proc/self/maps).
[[maybe_unused]] bool library_mapped(const char* library) {
    FILE* maps = std::fopen("/proc/self/maps", "r");
    if (maps == nullptr) return false;
    char line[1024];
    bool found = false;
    while (std::fgets(line, sizeof line, maps) != nullptr)
        if (std::strstr(line, library) != nullptr) found = true;
    std::fclose(maps);
    return found;
}

/// Particles moving in a box [0, extent)^dims, reflecting at the walls.
struct Particles {
    Scene scene;
    std::vector<float> vx, vy, vz;
    float extent;

    Particles(uint32_t n, float box, uint64_t seed, uint32_t dims = 3) : extent(box) {
        Rng rng(seed);
        scene = uniform_scene(rng, dims, n, 0.0f, box);
        vx.resize(n);
        vy.resize(n);
        vz.resize(n);
        for (uint32_t i = 0; i < n; ++i) {
            vx[i] = rng.uniform(-0.2f, 0.2f);
            vy[i] = rng.uniform(-0.2f, 0.2f);
            vz[i] = rng.uniform(-0.2f, 0.2f);
        }
    }

    static void move(float& p, float& v, float extent) {
        p += v;
        if (p < 0.0f) {
            p = -p;
            v = -v;
        }
        if (p >= extent) {
            p = std::nextafter(extent, 0.0f) - (p - extent);
            v = -v;
        }
    }
    void step() { // no allocation: plain loops over existing storage
        for (size_t i = 0; i < vx.size(); ++i) {
            move(scene.x[i], vx[i], extent);
            move(scene.y[i], vy[i], extent);
            if (scene.dims == 3) move(scene.z[i], vz[i], extent);
        }
    }
};

/// Waits (at most 10 s) until no allocator call has happened for 250 ms, so
/// that oneTBB threads still tearing down an earlier backend's arena (they free
/// task pools asynchronously) are not counted against this backend's frames.
/// A backend whose idle threads kept allocating would never settle, and its
/// calls would then be counted.
void settle() {
    Counts last = snapshot();
    int quiet_ms = 0;
    // 100 ms was not enough on a loaded machine: oneTBB threads of an earlier
    // backend freed memory inside a later std::thread backend's window.
    for (int waited_ms = 0; quiet_ms < 250 && waited_ms < 10000; waited_ms += 10) {
        usleep(10000);
        const Counts now = snapshot();
        const bool same = now.allocations == last.allocations && now.frees == last.frees &&
                          now.tbb_allocations == last.tbb_allocations && now.tbb_frees == last.tbb_frees;
        quiet_ms = same ? quiet_ms + 10 : 0;
        last = now;
    }
}

constexpr uint32_t kParticles = 20000;
constexpr float kBox = 27.0f; // ~1 particle per cell
/// Counted frames per backend (scaled down on emulated targets, HASHGRID_TEST_SCALE).
const uint32_t kFrames = scaled_count(100);

/// Statuses of the counted frames, kept in fixed storage (doctest allocates,
/// so nothing is checked until the counted window is over).
struct FrameLog {
    int failures = 0;
    hashgrid::StatusCode first_failure = hashgrid::StatusCode::ok;
    const char* where = "";
    uint64_t min_pairs = ~uint64_t{0}, max_pairs = 0;

    void note(hashgrid::StatusCode code, const char* what) {
        if (code == hashgrid::StatusCode::ok) return;
        if (failures++ == 0) {
            first_failure = code;
            where = what;
        }
    }
};

void run_frames(hashgrid::World world, const hashgrid::ThreadBackend& backend, const std::string& label) {
    // doctest prints a const char* as an address: pass std::string to INFO.
    INFO(label << (world == hashgrid::World::bounded ? std::string(", bounded") : std::string(", unbounded")));
    Particles particles(kParticles, kBox, 2024);
    GridConfig config = unbounded_config(3, 1.0f, 1.0f, kParticles, 400000);
    if (world == hashgrid::World::bounded) {
        config.world = world;
        config.cell_counts[0] = config.cell_counts[1] = config.cell_counts[2] = static_cast<uint32_t>(kBox);
    }
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    hashgrid::Grid& g = **grid;
    std::vector<Pair> pairs(static_cast<size_t>(config.max_pairs));
    std::vector<uint32_t> offsets(kParticles + 1), indices(2 * pairs.size());
    FrameLog log;
    auto frame = [&] {
        particles.step();
        log.note(g.rebuild(particles.scene.spans(), backend).code, "rebuild");
        const hashgrid::PairResult pr = g.find_pairs(pairs.data(), pairs.size(), backend);
        log.note(pr.status.code, "find_pairs");
        log.min_pairs = std::min(log.min_pairs, pr.written);
        log.max_pairs = std::max(log.max_pairs, pr.written);
        log.note(g.neighbor_lists(pairs.data(), pr.written, offsets.data(), offsets.size(), indices.data(),
                                  indices.size(), backend)
                     .code,
                 "neighbor_lists");
    };
    frame(); // warm-up
    settle();
    const Counts before = snapshot();
    for (uint32_t f = 0; f < kFrames; ++f)
        frame();
    const Counts after = snapshot();
    INFO("first failure: " << std::string(log.where) << " " << std::string(hashgrid::to_string(log.first_failure)));
    CHECK(log.failures == 0);
    CHECK(log.min_pairs > 10000); // the scene really has work in every frame
    INFO("pairs per frame " << log.min_pairs << ".." << log.max_pairs);
    CHECK(after.allocations - before.allocations == 0);
    CHECK(after.frees - before.frees == 0);
    CHECK(after.tbb_allocations - before.tbb_allocations == 0);
    CHECK(after.tbb_frees - before.tbb_frees == 0);
}

} // namespace

TEST_CASE("the counters see allocations") {
    // Every pointer escapes through a volatile sink, so that the compiler cannot
    // elide the allocation (C++14 allows eliding new-expressions; clang does).
    const Counts before = snapshot();
    void* p = std::malloc(100);
    g_sink = p;
    std::free(p);
    auto* q = new int[10];
    g_sink = q;
    delete[] q;
    auto* r = new (std::align_val_t{256}) double;
    g_sink = r;
    ::operator delete (r, std::align_val_t{256});
    std::vector<int> v(1000);
    g_sink = v.data();
    const Counts after = snapshot();
    CHECK(after.allocations - before.allocations == 4);
    CHECK(after.frees - before.frees == 3);
}

TEST_CASE("no allocation per frame: serial backend") {
    for (hashgrid::World world : {hashgrid::World::unbounded, hashgrid::World::bounded})
        run_frames(world, hashgrid::serial_backend(), "serial");
}

TEST_CASE("report: which allocator oneTBB uses") {
#if defined(HASHGRID_HAS_TBB)
    {
        hashgrid::platform::TbbBackend tbb(2);
        (void)tbb.backend();
    }
    const bool tbbmalloc = library_mapped("libtbbmalloc");
    const bool scalable = tbb::tbb_allocator<char>::allocator_type() == tbb::tbb_allocator<char>::scalable;
    const std::string report = std::string("libtbbmalloc mapped: ") + (tbbmalloc ? "yes" : "no") +
                               ", oneTBB allocator: " + (scalable ? "scalable (tbbmalloc)" : "standard (malloc)");
    MESSAGE(report);
    // Either way the counters above see oneTBB's allocations: scalable ones at the
    // r1 entry points, standard ones at malloc.
    const Counts before = snapshot();
    { hashgrid::platform::TbbBackend tbb(3); }
    const Counts after = snapshot();
    CHECK(after.tbb_allocations + after.allocations > before.tbb_allocations + before.allocations);
#else
    MESSAGE("built without oneTBB");
#endif
}

TEST_CASE("no allocation per frame: std::thread backend at 1, 2, 4 and 8 threads") {
    for (uint32_t threads : {1u, 2u, 4u, 8u}) {
        hashgrid::platform::StdThreadBackend pool(threads);
        const std::string label = "std::thread " + std::to_string(threads) + " threads";
        for (hashgrid::World world : {hashgrid::World::unbounded, hashgrid::World::bounded})
            run_frames(world, pool.backend(), label);
    }
}

TEST_CASE("no allocation per frame: a game's job system through JobSystemBackend at 1, 2, 4 and 8 workers") {
    // The job system (odd_job_system.h) preallocates its queue and threads, as a
    // game's must; it runs the copies it is asked for in odd ways and every
    // third task inline. The adapter itself holds no heap memory at all.
    for (uint32_t workers : {1u, 2u, 4u, 8u}) {
        OddJobSystem::Options options;
        options.workers = workers;
        options.seed = workers;
        OddJobSystem jobs(options);
        hashgrid::platform::JobSystemConfig config = jobs.config();
        config.inline_chunk_limit = workers % 4 == 0 ? 0u : 1u;
        hashgrid::platform::JobSystemBackend adapter(config);
        const std::string label = "job system " + std::to_string(workers) + " workers";
        for (hashgrid::World world : {hashgrid::World::unbounded, hashgrid::World::bounded})
            run_frames(world, adapter.backend(), label);
        if (workers > 1) { // at 1 worker the adapter runs every loop itself, without the job system
            CHECK(jobs.finishes() > 0);
            CHECK(jobs.inline_tasks() > 0);
        }
    }
}

#if defined(HASHGRID_HAS_TBB)
TEST_CASE("no allocation per frame: oneTBB at 1, 2, 4 and 8 threads") {
    for (uint32_t threads : {1u, 2u, 4u, 8u}) {
        hashgrid::platform::TbbBackend tbb(threads);
        const std::string label = "oneTBB " + std::to_string(threads) + " threads";
        for (hashgrid::World world : {hashgrid::World::unbounded, hashgrid::World::bounded})
            run_frames(world, tbb.backend(), label);
    }
}
#endif

// ===========================================================================
// Boxes, queries and persistent objects: BoxGrid rebuild + find_pairs +
// find_pairs_with with boxes that move every frame (3D and 2D, bounded and
// unbounded, a few large objects), prepare_box_queries and every single and
// batched box query on each of those grids, every particle query on a rebuilt
// Grid, and add / move / remove churn through ObjectStore and ProximityIndex.
// One workload of all of them runs per backend after one warm-up frame; every
// group of calls is counted on its own, so a failure names the call that
// allocated. The results of all counted frames are hashed, and the hash must
// be the same for every backend.

namespace {

using hashgrid::BoxGrid;
using hashgrid::BoxGridConfig;
using hashgrid::ObjectBox;
using hashgrid::ObjectHandle;
using hashgrid::StatusCode;
using hashgrid::World;

constexpr float kInf = std::numeric_limits<float>::infinity();
/// Counted frames of the workload (after one warm-up frame), before scaling.
constexpr uint32_t kObjectFrames = 16;
/// Queries per single-query part, and per batched call.
constexpr uint32_t kSingles = 16;
constexpr uint32_t kBatch = 128;
/// k of the nearest queries.
constexpr uint32_t kNearest = 8;

Counts operator-(const Counts& a, const Counts& b) {
    return {a.allocations - b.allocations, a.frees - b.frees, a.tbb_allocations - b.tbb_allocations,
            a.tbb_frees - b.tbb_frees};
}
void add_calls(Counts& sum, const Counts& d) {
    sum.allocations += d.allocations;
    sum.frees += d.frees;
    sum.tbb_allocations += d.tbb_allocations;
    sum.tbb_frees += d.tbb_frees;
}
bool any_calls(const Counts& c) { return (c.allocations | c.frees | c.tbb_allocations | c.tbb_frees) != 0; }
std::string calls_text(const Counts& c) {
    return std::to_string(c.allocations) + " allocations, " + std::to_string(c.frees) + " frees, " +
           std::to_string(c.tbb_allocations) + " oneTBB allocations, " + std::to_string(c.tbb_frees) + " oneTBB frees";
}

/// One counted part of a frame: a group of calls of one kind on one scene.
struct Part {
    const char* scene = "";
    const char* call = "";
    Counts calls{0, 0, 0, 0}; ///< Allocator calls while the part ran, summed over the counted frames.
    int failures = 0;         ///< Statuses other than the expected one.
    StatusCode first_failure = StatusCode::ok;
    uint64_t min_results = ~uint64_t{0}; ///< Results per frame (> 0: the part really has work).
    uint64_t max_results = 0;

    void note(const hashgrid::Status& status, StatusCode expected = StatusCode::ok) {
        if (status.code == expected) return;
        if (failures++ == 0) first_failure = status.code;
    }
};

/// The parts of a frame in fixed storage, in call order (doctest and
/// std::string allocate, so nothing is checked or formatted until the counted
/// frames are over).
class PartLog {
public:
    void begin_frame() { next_ = 0; }

    /// Runs fn(Part&), which returns its number of results, and adds the
    /// allocator calls made meanwhile (by any thread) to the part.
    template <typename Fn>
    void measure(const char* scene, const char* call, Fn&& fn) {
        if (next_ == kMaxParts) {
            ++overflows_;
            return;
        }
        Part& part = parts_[next_++];
        if (next_ > count_) {
            count_ = next_;
            part.scene = scene;
            part.call = call;
        } else if (std::strcmp(part.scene, scene) != 0 || std::strcmp(part.call, call) != 0) {
            ++misordered_;
        }
        const Counts before = snapshot();
        const uint64_t results = fn(part);
        const Counts after = snapshot();
        add_calls(part.calls, after - before);
        part.min_results = std::min(part.min_results, results);
        part.max_results = std::max(part.max_results, results);
    }

    /// Forgets the allocator calls seen so far (those of the warm-up frame).
    void forget_calls() {
        for (int i = 0; i < count_; ++i)
            parts_[i].calls = Counts{0, 0, 0, 0};
    }

    /// "" when every part made no allocator call, had only expected statuses
    /// and produced results in every frame; else one line per offending part.
    [[nodiscard]] std::string problems() const {
        std::string text;
        if (overflows_ != 0) text += "more than kMaxParts parts per frame\n";
        if (misordered_ != 0) text += "the parts of a frame changed order\n";
        for (int i = 0; i < count_; ++i) {
            const Part& p = parts_[i];
            if (!any_calls(p.calls) && p.failures == 0 && p.min_results > 0) continue;
            text += std::string(p.scene) + ", " + p.call + ": " + calls_text(p.calls) + "; " +
                    std::to_string(p.failures) + " unexpected statuses (first " + hashgrid::to_string(p.first_failure) +
                    "); results per frame " + std::to_string(p.min_results) + ".." + std::to_string(p.max_results) +
                    "\n";
        }
        return text;
    }
    [[nodiscard]] int part_count() const { return count_; }

private:
    static constexpr int kMaxParts = 160;
    Part parts_[kMaxParts];
    int count_ = 0;
    int next_ = 0;
    int overflows_ = 0;
    int misordered_ = 0;
};

/// Feeds a query's count and written results into the hash; returns the written count.
uint64_t feed(Fnv1a& hash, uint64_t count, const uint32_t* out, uint64_t written) {
    hash.u64(count);
    for (uint64_t i = 0; i < written; ++i)
        hash.u32(out[i]);
    return written;
}
uint64_t feed(Fnv1a& hash, uint64_t count, const hashgrid::RayHit* out, uint64_t written) {
    hash.u64(count);
    for (uint64_t i = 0; i < written; ++i) {
        hash.u32(out[i].index);
        hash.f32(out[i].t);
    }
    return written;
}
uint64_t feed(Fnv1a& hash, uint64_t count, const hashgrid::NearestHit* out, uint64_t written) {
    hash.u64(count);
    for (uint64_t i = 0; i < written; ++i) {
        hash.u32(out[i].index);
        hash.f32(out[i].distance_squared);
    }
    return written;
}
void feed_offsets(Fnv1a& hash, const std::vector<uint64_t>& offsets) {
    for (uint64_t o : offsets)
        hash.u64(o);
}
template <typename T>
uint32_t capacity32(const std::vector<T>& v) {
    return static_cast<uint32_t>(v.size());
}

// ---------------------------------------------------------------------------
// Box grids with moving boxes, and every box query on them.

/// Boxes moving inside [world_lo, world_hi) on every axis: a step that would
/// leave the world reverses that axis' velocity instead. Every `large_one_in`-th
/// box has edge `large_edge` on every axis (a large object of box_grid.h).
struct MovingBoxes : hashgrid_support::BoxScene {
    float world_lo = 0.0f;
    float world_hi = 0.0f;
    std::vector<float> velocity[3];
    /// Only every move_one_in-th box moves in a step (a rotating subset), so
    /// that BoxGrid::rebuild merges into the last frame (box_grid.h).
    uint32_t move_one_in = 1;
    uint32_t steps = 0;

    MovingBoxes(uint32_t dimensions, uint32_t n, float wlo, float whi, uint64_t seed, float max_edge,
                uint32_t large_one_in, float large_edge)
        : world_lo(wlo), world_hi(whi) {
        dims = dimensions;
        Rng rng(seed);
        for (uint32_t d = 0; d < 3; ++d) {
            lo[d].assign(n, 0.0f);
            hi[d].assign(n, 0.0f);
            velocity[d].assign(n, 0.0f);
        }
        category.resize(n);
        mask.resize(n);
        for (uint32_t i = 0; i < n; ++i) {
            const bool large = large_one_in != 0 && i % large_one_in == 0;
            for (uint32_t d = 0; d < dims; ++d) {
                const float edge = large ? large_edge : rng.uniform(0.0f, max_edge);
                const float start = rng.uniform(wlo, whi - edge - 1.0f);
                lo[d][i] = start;
                hi[d][i] = start + edge;
                velocity[d][i] = rng.uniform(-0.3f, 0.3f);
            }
            category[i] = 1u << (i % 4);
            mask[i] = i % 7 == 0 ? 0x3u : hashgrid::kAllLayers;
        }
    }

    void step() { // no allocation: plain loops over existing storage
        ++steps;
        for (uint32_t i = 0; i < size(); ++i)
            for (uint32_t d = 0; d < dims && (i + steps) % move_one_in == 0; ++d) {
                const float a = lo[d][i] + velocity[d][i];
                const float b = hi[d][i] + velocity[d][i];
                if (a < world_lo || b >= world_hi) {
                    velocity[d][i] = -velocity[d][i];
                } else {
                    lo[d][i] = a;
                    hi[d][i] = b;
                }
            }
    }
};

/// Cell size 1; bounded worlds are exactly [wlo, whi) per axis (reject mode).
BoxGridConfig moving_box_config(uint32_t dims, World world, float wlo, float whi, uint32_t n) {
    BoxGridConfig c;
    c.dimensions = dims;
    c.cell_size = 1.0f;
    c.world = world;
    if (world == World::bounded)
        for (uint32_t d = 0; d < 3; ++d) {
            c.origin[d] = d < dims ? wlo : 0.0f;
            c.cell_counts[d] = d < dims ? static_cast<uint32_t>(whi - wlo) : 1u;
        }
    c.max_objects = n;
    c.max_cell_entries = 16 * n;
    c.max_pairs = 200000;
    return c;
}

/// Planes of the box [c - h, c + h] (4 in 2D, 6 in 3D) and one oblique plane
/// through its centre; returns the plane count.
uint32_t box_frustum(uint32_t dims, const float (&c)[3], float h, hashgrid::Plane* planes) {
    uint32_t n = 0;
    hashgrid::Plane oblique;
    float centre_sum = 0.0f;
    for (uint32_t d = 0; d < dims; ++d) {
        hashgrid::Plane low, high;
        low.normal[d] = 1.0f; // p[d] >= c[d] - h
        low.d = h - c[d];
        high.normal[d] = -1.0f; // p[d] <= c[d] + h
        high.d = c[d] + h;
        planes[n++] = low;
        planes[n++] = high;
        oblique.normal[d] = 1.0f;
        centre_sum += c[d];
    }
    oblique.d = -centre_sum; // sum of p[d] >= sum of c[d]
    planes[n++] = oblique;
    return n;
}

/// One box grid: moving boxes, moving probe boxes for find_pairs_with(), and
/// every single (buffer and visitor form) and batched box query, rewritten every
/// frame.
struct BoxWorkload {
    const char* name;
    MovingBoxes boxes;
    MovingBoxes probes;
    BoxGrid grid;
    hashgrid::Status init_status;
    hashgrid::BoxQueryGrid query_grid{};
    std::vector<Pair> pairs, probe_pairs;
    std::vector<hashgrid::QueryPoint> point_queries;
    std::vector<hashgrid::QueryBox> box_queries;
    std::vector<hashgrid::QuerySphere> radius_queries;
    std::vector<hashgrid::Ray> ray_queries;
    std::vector<hashgrid::QueryNearest> nearest_queries;
    std::vector<hashgrid::Frustum> frusta;
    std::vector<uint32_t> out;
    std::vector<hashgrid::RayHit> ray_out;
    std::vector<hashgrid::NearestHit> nearest_out;
    std::vector<uint64_t> offsets;
    std::vector<uint32_t> batch_out;
    std::vector<hashgrid::RayHit> batch_rays, first_hits;
    std::vector<hashgrid::NearestHit> batch_nearest;
    uint32_t frame = 0;

    BoxWorkload(const char* scene_name, uint32_t dims, World world, float wlo, float whi, uint32_t n, uint64_t seed,
                float max_edge, float large_edge, uint32_t move_one_in = 1)
        : name(scene_name), boxes(dims, n, wlo, whi, seed, max_edge, 97, large_edge),
          probes(dims, 200, wlo, whi, seed + 1, 4.0f, 0, 0.0f), pairs(200000), probe_pairs(100000),
          point_queries(kBatch), box_queries(kBatch), radius_queries(kBatch), ray_queries(kBatch),
          nearest_queries(kBatch), frusta(kBatch), out(n), ray_out(n), nearest_out(kNearest), offsets(kBatch + 1),
          batch_out(kBatch * 1024), batch_rays(kBatch * 256), first_hits(kBatch), batch_nearest(kBatch * kNearest) {
        boxes.move_one_in = move_one_in;
        init_status = grid.init_allocate(moving_box_config(dims, world, wlo, whi, n));
    }

    /// New query inputs for this frame (no allocation: existing storage only).
    void make_queries() {
        Rng rng(0x5eed0000u + frame);
        const uint32_t dims = boxes.dims;
        const float lo = boxes.world_lo - 1.0f;
        const float hi = boxes.world_hi + 1.0f;
        auto random_point = [&](float(&p)[3]) {
            for (uint32_t d = 0; d < 3; ++d)
                p[d] = d < dims ? rng.uniform(lo, hi) : 0.0f;
        };
        for (uint32_t q = 0; q < kBatch; ++q) {
            hashgrid::QueryPoint& pq = point_queries[q];
            if (q % 2 == 0) {
                random_point(pq.position);
            } else { // the centre of an object: at least one result
                const uint32_t object = (q * 97u + frame * 13u) % boxes.size();
                for (uint32_t d = 0; d < 3; ++d)
                    pq.position[d] = (boxes.lo[d][object] + boxes.hi[d][object]) * 0.5f;
            }
            hashgrid::QueryBox& bq = box_queries[q];
            random_point(bq.min);
            for (uint32_t d = 0; d < dims; ++d)
                bq.max[d] = bq.min[d] + rng.uniform(0.0f, 3.0f);
            hashgrid::QuerySphere& rq = radius_queries[q];
            random_point(rq.center);
            rq.radius = q == 0 ? kInf : rng.uniform(0.0f, 3.0f);
            hashgrid::Ray& ray = ray_queries[q];
            random_point(ray.origin);
            for (uint32_t d = 0; d < dims; ++d)
                ray.direction[d] = rng.uniform(-1.0f, 1.0f);
            ray.max_t = q % 8 == 0 ? kInf : rng.uniform(0.0f, 12.0f);
            hashgrid::QueryNearest& nq = nearest_queries[q];
            random_point(nq.center);
            nq.k = kNearest;
            nq.max_distance = q % 3 == 0 ? 3.0f : kInf;
            hashgrid::Frustum& f = frusta[q];
            f.plane_count = box_frustum(dims, rq.center, 1.0f + static_cast<float>(q % 4), f.planes);
        }
        box_queries[1].min[0] = -kInf; // a half-space
    }

    void run_frame(PartLog& log, const hashgrid::ThreadBackend& backend, Fnv1a& hash) {
        boxes.step();
        probes.step();
        make_queries();
        ++frame;
        log.measure(name, "BoxGrid::rebuild", [&](Part& part) {
            part.note(grid.rebuild(boxes.spans(), backend));
            hash.u32(grid.entry_count());
            return uint64_t{grid.entry_count()};
        });
        log.measure(name, "BoxGrid::find_pairs", [&](Part& part) {
            const hashgrid::PairResult r = grid.find_pairs(pairs.data(), pairs.size(), backend);
            part.note(r.status);
            hash.u64(hash_pairs(pairs.data(), r.written));
            return r.written;
        });
        log.measure(name, "BoxGrid::find_pairs_with", [&](Part& part) {
            const hashgrid::PairResult r =
                grid.find_pairs_with(probes.spans(), probe_pairs.data(), probe_pairs.size(), backend);
            part.note(r.status);
            hash.u64(hash_pairs(probe_pairs.data(), r.written));
            return r.written;
        });
        log.measure(name, "prepare_box_queries", [&](Part&) {
            query_grid = hashgrid::prepare_box_queries(grid.view(), backend);
            hash.u32(query_grid.view.cell_count);
            return uint64_t{query_grid.view.cell_count};
        });
        const hashgrid::BoxQueryGrid& g = query_grid;
        // Single queries.
        log.measure(name, "query_point", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const hashgrid::QueryResult r =
                    hashgrid::query_point(g, point_queries[q], hashgrid::kAllLayers, out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_box", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const uint32_t layers = q % 5 == 0 ? 0x1u : hashgrid::kAllLayers;
                const hashgrid::QueryResult r = hashgrid::query_box(g, box_queries[q], layers, out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_radius", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const hashgrid::QueryResult r =
                    hashgrid::query_radius(g, radius_queries[q], hashgrid::kAllLayers, out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_ray", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const hashgrid::QueryResult r =
                    hashgrid::query_ray(g, ray_queries[q], hashgrid::kAllLayers, ray_out.data(), ray_out.size());
                part.note(r.status);
                results += feed(hash, r.total, ray_out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_ray_first", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                hashgrid::RayHit hit;
                const hashgrid::QueryResult r =
                    hashgrid::query_ray_first(g, ray_queries[q], hashgrid::kAllLayers, &hit);
                part.note(r.status);
                results += feed(hash, r.total, &hit, r.total);
            }
            return results;
        });
        log.measure(name, "query_frustum", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const uint32_t layers = q % 3 == 0 ? 0x2u : hashgrid::kAllLayers;
                const hashgrid::QueryResult r = hashgrid::query_frustum(g, frusta[q], layers, out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_nearest", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const hashgrid::QueryResult r = hashgrid::query_nearest(g, nearest_queries[q], hashgrid::kAllLayers,
                                                                        nearest_out.data(), nearest_out.size());
                part.note(r.status);
                results += feed(hash, r.total, nearest_out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_potential_collisions", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const uint32_t object = (q * 131u + frame * 17u) % boxes.size();
                const hashgrid::QueryResult r = hashgrid::query_potential_collisions(g, object, out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        // Visitor forms: the visitor hashes each result; every fourth query stops after 3.
        log.measure(name, "visitor forms", [&](Part& part) {
            struct Seen {
                Fnv1a* hash;
                uint64_t calls;
                uint64_t stop_after;
            };
            const hashgrid::QueryVisitor visitor{[](void* context, uint32_t index) {
                                                     auto* seen = static_cast<Seen*>(context);
                                                     seen->hash->u32(index);
                                                     return ++seen->calls < seen->stop_after;
                                                 },
                                                 nullptr};
            const hashgrid::RayVisitor ray_visitor{[](void* context, const hashgrid::RayHit& hit) {
                                                       auto* seen = static_cast<Seen*>(context);
                                                       seen->hash->u32(hit.index);
                                                       seen->hash->f32(hit.t);
                                                       return ++seen->calls < seen->stop_after;
                                                   },
                                                   nullptr};
            const hashgrid::NearestVisitor nearest_visitor{[](void* context, const hashgrid::NearestHit& hit) {
                                                               auto* seen = static_cast<Seen*>(context);
                                                               seen->hash->u32(hit.index);
                                                               seen->hash->f32(hit.distance_squared);
                                                               return ++seen->calls < seen->stop_after;
                                                           },
                                                           nullptr};
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                Seen seen{&hash, 0, q % 4 == 0 ? 3u : ~uint64_t{0}};
                hashgrid::QueryVisitor v = visitor;
                v.context = &seen;
                hashgrid::RayVisitor rv = ray_visitor;
                rv.context = &seen;
                hashgrid::NearestVisitor nv = nearest_visitor;
                nv.context = &seen;
                hashgrid::QueryNearest many = nearest_queries[q]; // runs of up to 64 hits
                many.k = 150;
                const uint32_t object = (q * 131u + frame * 17u) % boxes.size();
                const hashgrid::QueryResult r[] = {
                    hashgrid::query_point(g, point_queries[q], hashgrid::kAllLayers, v),
                    hashgrid::query_box(g, box_queries[q], hashgrid::kAllLayers, v),
                    hashgrid::query_radius(g, radius_queries[q], hashgrid::kAllLayers, v),
                    hashgrid::query_frustum(g, frusta[q], hashgrid::kAllLayers, v),
                    hashgrid::query_potential_collisions(g, object, v),
                    hashgrid::query_ray(g, ray_queries[q], hashgrid::kAllLayers, rv),
                    hashgrid::query_nearest(g, nearest_queries[q], hashgrid::kAllLayers, nv),
                    hashgrid::query_nearest(g, many, hashgrid::kAllLayers, nv),
                };
                for (const hashgrid::QueryResult& one : r) {
                    part.note(one.status);
                    hash.u64(one.total);
                    results += one.total;
                }
            }
            return results;
        });
        // Batches.
        const uint32_t all = hashgrid::kAllLayers;
        log.measure(name, "query_point_batch", [&](Part& part) {
            const hashgrid::QueryResult r =
                hashgrid::query_point_batch(g, point_queries.data(), kBatch, all, offsets.data(), offsets.size(),
                                            batch_out.data(), batch_out.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_out.data(), r.written);
        });
        log.measure(name, "query_box_batch", [&](Part& part) {
            const hashgrid::QueryResult r =
                hashgrid::query_box_batch(g, box_queries.data(), kBatch, 0x3u, offsets.data(), offsets.size(),
                                          batch_out.data(), batch_out.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_out.data(), r.written);
        });
        log.measure(name, "query_radius_batch", [&](Part& part) {
            const hashgrid::QueryResult r =
                hashgrid::query_radius_batch(g, radius_queries.data(), kBatch, all, offsets.data(), offsets.size(),
                                             batch_out.data(), batch_out.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_out.data(), r.written);
        });
        log.measure(name, "query_frustum_batch", [&](Part& part) {
            const hashgrid::QueryResult r =
                hashgrid::query_frustum_batch(g, frusta.data(), kBatch, all, offsets.data(), offsets.size(),
                                              batch_out.data(), batch_out.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_out.data(), r.written);
        });
        log.measure(name, "query_ray_batch", [&](Part& part) {
            const hashgrid::QueryResult r =
                hashgrid::query_ray_batch(g, ray_queries.data(), kBatch, all, offsets.data(), offsets.size(),
                                          batch_rays.data(), batch_rays.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_rays.data(), r.written);
        });
        log.measure(name, "query_ray_first_batch", [&](Part& part) {
            const hashgrid::QueryResult r =
                hashgrid::query_ray_first_batch(g, ray_queries.data(), kBatch, all, first_hits.data(), backend);
            part.note(r.status);
            return feed(hash, r.total, first_hits.data(), first_hits.size());
        });
        log.measure(name, "query_nearest_batch", [&](Part& part) {
            const hashgrid::QueryResult r =
                hashgrid::query_nearest_batch(g, nearest_queries.data(), kBatch, all, offsets.data(), offsets.size(),
                                              batch_nearest.data(), batch_nearest.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_nearest.data(), r.written);
        });
    }
};

// ---------------------------------------------------------------------------
// Particle queries on a Grid rebuilt every frame.

struct ParticleWorkload {
    const char* name;
    Particles particles;
    GridConfig config;
    std::unique_ptr<OwnedGrid> grid;
    std::vector<uint32_t> out;
    std::vector<hashgrid::NearestHit> nearest_out;
    std::vector<float> qx, qy, qz, qr; ///< Centres and radii of the queries.
    std::vector<hashgrid::QueryBox> boxes;
    std::vector<hashgrid::QuerySphere> spheres; ///< The same centres and radii as batch queries.
    std::vector<hashgrid::QueryNearest> nearests;
    std::vector<uint64_t> offsets;
    std::vector<uint32_t> batch_out;
    std::vector<hashgrid::NearestHit> batch_nearest;
    Scene points; ///< The external point set of find_pairs_with() (no radii).
    std::vector<Pair> point_pairs;
    uint32_t frame = 0;

    ParticleWorkload(const char* scene_name, uint32_t dims, World world, uint32_t n, float box, uint64_t seed)
        : name(scene_name), particles(n, box, seed, dims), config(unbounded_config(dims, 1.0f, 1.0f, n, 1)), out(n),
          nearest_out(kNearest), qx(kBatch), qy(kBatch), qz(kBatch), qr(kBatch), boxes(kBatch), spheres(kBatch),
          nearests(kBatch), offsets(kBatch + 1), batch_out(kBatch * 1024), batch_nearest(kBatch * kNearest),
          point_pairs(512 * 64) {
        if (world == World::bounded) {
            config.world = world;
            for (uint32_t d = 0; d < 3; ++d)
                config.cell_counts[d] = d < dims ? static_cast<uint32_t>(box) : 1u;
        }
        grid = make_grid(config);
        Rng rng(seed + 1);
        points = uniform_scene(rng, dims, 512, 0.0f, box);
    }

    void make_queries() {
        Rng rng(0x9a27000u + frame);
        const uint32_t dims = particles.scene.dims;
        const float hi = particles.extent;
        for (uint32_t q = 0; q < kBatch; ++q) {
            qx[q] = rng.uniform(-1.0f, hi + 1.0f);
            qy[q] = rng.uniform(-1.0f, hi + 1.0f);
            qz[q] = dims == 3 ? rng.uniform(-1.0f, hi + 1.0f) : 0.0f;
            qr[q] = rng.uniform(0.0f, 3.0f);
            hashgrid::QueryBox& b = boxes[q];
            b.min[0] = qx[q];
            b.min[1] = qy[q];
            b.min[2] = qz[q];
            for (uint32_t d = 0; d < dims; ++d)
                b.max[d] = b.min[d] + rng.uniform(0.0f, 3.0f);
            spheres[q] = {{qx[q], qy[q], qz[q]}, qr[q]};
            nearests[q] = {{qx[q], qy[q], qz[q]}, kNearest, kInf};
        }
        boxes[1].max[1] = kInf;                        // a half-open box
        for (uint32_t i = 0; i < points.size(); ++i) { // the external points move too
            points.x[i] = particles.scene.x[i];
            points.y[i] = particles.scene.y[i] + 0.25f;
            points.z[i] = particles.scene.z[i];
        }
    }

    void run_frame(PartLog& log, const hashgrid::ThreadBackend& backend, Fnv1a& hash) {
        particles.step();
        make_queries();
        ++frame;
        hashgrid::Grid& g = **grid;
        log.measure(name, "Grid::rebuild", [&](Part& part) {
            part.note(g.rebuild(particles.scene.spans(), backend));
            return uint64_t{g.particle_count()};
        });
        log.measure(name, "query_radius", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const float c[3] = {qx[q], qy[q], qz[q]};
                const hashgrid::QueryResult r = query_radius(g, sphere_at(c, qr[q]), out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_point", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const float c[3] = {qx[q], qy[q], qz[q]};
                const hashgrid::QueryResult r = query_point(g, point_at(c), out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_box", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const hashgrid::QueryResult r = query_box(g, boxes[q], out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_frustum", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                // The box [c - h, c + h] (z planes all-inside in 2D) as six half-spaces.
                const float c[3] = {qx[q], qy[q], qz[q]};
                const float h = 1.0f + static_cast<float>(q % 4);
                hashgrid::Frustum f = six_plane_frustum();
                for (uint32_t d = 0; d < particles.scene.dims; ++d) {
                    f.planes[2 * d].normal[d] = 1.0f;
                    f.planes[2 * d].d = h - c[d];
                    f.planes[2 * d + 1].normal[d] = -1.0f;
                    f.planes[2 * d + 1].d = c[d] + h;
                }
                const hashgrid::QueryResult r = query_frustum(g, f, out.data(), out.size());
                part.note(r.status);
                results += feed(hash, r.total, out.data(), r.written);
            }
            return results;
        });
        log.measure(name, "query_nearest", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const float c[3] = {qx[q], qy[q], qz[q]};
                const float max_distance = q % 3 == 0 ? 2.0f : kInf;
                const hashgrid::QueryResult r =
                    query_nearest(g, nearest_at(c, kNearest, max_distance), nearest_out.data(), nearest_out.size());
                part.note(r.status);
                results += feed(hash, r.total, nearest_out.data(), r.written);
            }
            return results;
        });
        // The visitor hashes each hit; every fourth query stops after 3, every
        // other one asks for 150 (runs of up to 64 hits).
        log.measure(name, "query_nearest visitor", [&](Part& part) {
            struct Seen {
                Fnv1a* hash;
                uint64_t calls;
                uint64_t stop_after;
            };
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                const float c[3] = {qx[q], qy[q], qz[q]};
                Seen seen{&hash, 0, q % 4 == 0 ? 3u : ~uint64_t{0}};
                const hashgrid::NearestVisitor visitor{[](void* context, const hashgrid::NearestHit& hit) {
                                                           auto* s = static_cast<Seen*>(context);
                                                           s->hash->u32(hit.index);
                                                           s->hash->f32(hit.distance_squared);
                                                           return ++s->calls < s->stop_after;
                                                       },
                                                       &seen};
                const hashgrid::QueryResult r =
                    query_nearest(g, nearest_at(c, q % 2 == 0 ? kNearest : 150u, q % 3 == 0 ? 2.0f : kInf), visitor);
                part.note(r.status);
                hash.u64(r.total);
                results += r.total;
            }
            return results;
        });
        log.measure(name, "query_radius_batch", [&](Part& part) {
            const hashgrid::QueryResult r = query_radius_batch(
                g, spheres.data(), kBatch, offsets.data(), offsets.size(), batch_out.data(), batch_out.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_out.data(), r.written);
        });
        log.measure(name, "query_box_batch", [&](Part& part) {
            const hashgrid::QueryResult r = query_box_batch(g, boxes.data(), kBatch, offsets.data(), offsets.size(),
                                                            batch_out.data(), batch_out.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_out.data(), r.written);
        });
        log.measure(name, "query_nearest_batch", [&](Part& part) {
            const hashgrid::QueryResult r =
                query_nearest_batch(g, nearests.data(), kBatch, offsets.data(), offsets.size(), batch_nearest.data(),
                                    batch_nearest.size(), backend);
            part.note(r.status);
            feed_offsets(hash, offsets);
            return feed(hash, r.total, batch_nearest.data(), r.written);
        });
        log.measure(name, "find_pairs_with", [&](Part& part) {
            const hashgrid::QueryResult r =
                g.find_pairs_with(points.spans(), point_pairs.data(), point_pairs.size(), backend);
            part.note(r.status);
            hash.u64(hash_pairs(point_pairs.data(), r.written));
            return r.written;
        });
    }
};

// ---------------------------------------------------------------------------
// Churn: objects added, moved and removed every frame.

/// An ObjectStore feeding a BoxGrid (3D, unbounded): each frame removes and
/// adds kChurn objects, moves every object (and tries to move a removed one:
/// invalid_handle), rebuilds the grid from the store and finds the pairs.
struct StoreChurn {
    static constexpr uint32_t kCapacity = 6000;
    static constexpr uint32_t kLive = 5000;
    static constexpr uint32_t kChurn = 40;
    static constexpr float kWorld = 21.0f;

    const char* name = "ObjectStore + BoxGrid, 3D unbounded";
    hashgrid::ObjectStore store;
    BoxGrid grid;
    BoxGrid store_grid;                  ///< Rebuilt from the store: the store-fed queries (store_queries.h).
    hashgrid::PairTracker tracker;       ///< Events of store_grid's pairs, by handle.
    hashgrid::PairTracker index_tracker; ///< Events of grid's pairs, by dense index.
    std::vector<Pair> store_pairs = std::vector<Pair>(200000);
    std::vector<ObjectHandle> handles = std::vector<ObjectHandle>(8192);
    std::vector<uint64_t> user_values = std::vector<uint64_t>(8192);
    std::vector<hashgrid::ObjectRayHit> ray_hits = std::vector<hashgrid::ObjectRayHit>(8192);
    std::vector<hashgrid::ObjectNearestHit> nearest_hits = std::vector<hashgrid::ObjectNearestHit>(8192);
    std::vector<uint64_t> offsets = std::vector<uint64_t>(kSingles + 1);
    hashgrid::Status init_status;
    std::vector<Pair> pairs;
    std::vector<float> velocity[3]; ///< Per slot.
    Rng rng{0xc4a27u};
    ObjectHandle stale{};
    uint32_t frame = 0;
    uint64_t grid_pairs = 0; ///< grid's pairs this frame (in `pairs`)

    static void hash_events(Fnv1a& hash, const hashgrid::PairEvents& e) {
        for (const hashgrid::PairEventList* l : {&e.begin, &e.persist, &e.end, &e.sensor_begin, &e.sensor_end}) {
            hash.u64(l->count);
            for (uint64_t k = 0; k < l->count; ++k)
                hash.u64((uint64_t{l->pairs[k].a.index} << 32) | l->pairs[k].b.index);
        }
    }

    StoreChurn() : pairs(200000) {
        hashgrid::ObjectStoreConfig sc;
        sc.dimensions = 3;
        sc.max_objects = kCapacity;
        init_status = store.init_allocate(sc);
        BoxGridConfig gc;
        gc.max_objects = kCapacity;
        gc.max_cell_entries = 16 * kCapacity;
        gc.max_pairs = pairs.size();
        if (init_status.ok()) init_status = grid.init_allocate(gc);
        if (init_status.ok()) init_status = store_grid.init_allocate(gc);
        hashgrid::PairTrackerConfig tc;
        tc.max_ids = kCapacity;
        tc.max_pairs = static_cast<uint32_t>(pairs.size());
        tc.sensor_layers = 8u; // categories are 1 << below(4): a quarter are sensors
        tc.list_pairs = true;
        if (init_status.ok()) init_status = tracker.init_allocate(tc);
        if (init_status.ok()) init_status = index_tracker.init_allocate(tc);
        for (auto& v : velocity)
            v.assign(kCapacity, 0.0f);
        for (uint32_t i = 0; i < kLive && init_status.ok(); ++i)
            init_status = add_random(i).status;
    }

    hashgrid::ObjectAddResult add_random(uint64_t user_value) {
        const bool large = rng.below(64) == 0;
        ObjectBox box;
        float v[3];
        for (uint32_t d = 0; d < 3; ++d) {
            const float edge = large ? 6.0f : rng.uniform(0.0f, 1.4f);
            box.min[d] = rng.uniform(0.0f, kWorld - edge - 1.0f);
            box.max[d] = box.min[d] + edge;
            v[d] = rng.uniform(-0.3f, 0.3f);
        }
        const uint32_t category = 1u << rng.below(4);
        const hashgrid::ObjectAddResult r = store.add(box, category, hashgrid::kAllLayers, user_value);
        if (r.status.ok())
            for (uint32_t d = 0; d < 3; ++d)
                velocity[d][r.handle.index] = v[d];
        return r;
    }

    void run_frame(PartLog& log, const hashgrid::ThreadBackend& backend, Fnv1a& hash) {
        ++frame;
        log.measure(name, "ObjectStore::remove", [&](Part& part) {
            for (uint32_t k = 0; k < kChurn; ++k) {
                const ObjectHandle h = store.handle_at(rng.below(store.size()));
                part.note(store.remove(h));
                stale = h;
            }
            return uint64_t{kChurn};
        });
        log.measure(name, "ObjectStore::add", [&](Part& part) {
            for (uint32_t k = 0; k < kChurn; ++k)
                part.note(add_random(uint64_t{frame} * 1000u + k).status);
            return uint64_t{kChurn};
        });
        log.measure(name, "ObjectStore::move", [&](Part& part) {
            for (uint32_t i = 0; i < store.size(); ++i) {
                const ObjectHandle h = store.handle_at(i);
                ObjectBox box;
                for (uint32_t d = 0; d < 3; ++d) {
                    float& v = velocity[d][h.index];
                    box.min[d] = store.min_coords(d)[i] + v;
                    box.max[d] = store.max_coords(d)[i] + v;
                    if (box.min[d] < 0.0f || box.max[d] >= kWorld) { // bounce: stay this frame
                        v = -v;
                        box.min[d] = store.min_coords(d)[i];
                        box.max[d] = store.max_coords(d)[i];
                    }
                }
                part.note(store.move(h, box));
            }
            part.note(store.move(stale, ObjectBox{}), StatusCode::invalid_handle);
            return uint64_t{store.size()};
        });
        log.measure(name, "BoxGrid::rebuild", [&](Part& part) {
            part.note(grid.rebuild(store.spans(), backend));
            return uint64_t{grid.entry_count()};
        });
        log.measure(name, "BoxGrid::find_pairs", [&](Part& part) {
            const hashgrid::PairResult r = grid.find_pairs(pairs.data(), pairs.size(), backend);
            part.note(r.status);
            grid_pairs = r.written;
            hash.u64(r.total);
            for (uint64_t k = 0; k < r.written; ++k) { // dense indices -> handles
                const ObjectHandle a = store.handle_at(pairs[k].a);
                const ObjectHandle b = store.handle_at(pairs[k].b);
                hash.u32(a.index);
                hash.u32(a.generation);
                hash.u32(b.index);
                hash.u32(b.generation);
            }
            return r.written;
        });
        log.measure(name, "PairTracker::update (index form)", [&](Part& part) {
            hashgrid::PairResult r;
            r.total = r.written = grid_pairs;
            part.note(index_tracker.update(r, pairs.data(), backend, store.categories()));
            hash_events(hash, index_tracker.events());
            return grid_pairs;
        });
        log.measure(name, "BoxGrid::rebuild(store)", [&](Part& part) {
            part.note(store_grid.rebuild(store, backend));
            return uint64_t{store_grid.entry_count()};
        });
        log.measure(name, "PairTracker::update (store form)", [&](Part& part) {
            const hashgrid::PairResult r = store_grid.find_pairs(store_pairs.data(), store_pairs.size(), backend);
            part.note(r.status);
            part.note(tracker.update(store, store_grid.view(), r, store_pairs.data(), backend));
            hash_events(hash, tracker.events());
            return r.written;
        });
        log.measure(name, "store queries (store_queries.h)",
                    [&](Part& part) { return store_queries(part, backend, hash); });
    }

    /// Every store-fed query form once per frame (singles, visitors and batches).
    uint64_t store_queries(Part& part, const hashgrid::ThreadBackend& backend, Fnv1a& hash) {
        using namespace hashgrid;
        const BoxQueryGrid q = prepare_box_queries(store_grid.view(), backend);
        QueryBox boxes[kSingles];
        Ray rays[kSingles];
        QueryNearest nearest[kSingles];
        for (uint32_t k = 0; k < kSingles; ++k) {
            for (uint32_t d = 0; d < 3; ++d) {
                boxes[k].min[d] = rng.uniform(0.0f, kWorld - 3.0f);
                boxes[k].max[d] = boxes[k].min[d] + 3.0f;
                rays[k].origin[d] = rng.uniform(0.0f, kWorld);
                rays[k].direction[d] = rng.uniform(-1.0f, 1.0f);
                nearest[k].center[d] = rng.uniform(0.0f, kWorld);
            }
            rays[k].max_t = kWorld;
            nearest[k].k = k % 2 == 0 ? 4 : 100; // 100: past the stack run (kStoreQueryRun)
        }
        uint64_t results = 0;
        auto feed_handles = [&](const QueryResult& r, const ObjectHandle* out) {
            part.note(r.status);
            hash.u64(r.total);
            for (uint64_t i = 0; i < r.written; ++i)
                hash.u64((uint64_t{out[i].index} << 32) | out[i].generation);
            results += r.written;
        };
        uint64_t visited = 0;
        const HandleVisitor count_handles{[](void* c, ObjectHandle) { return ++*static_cast<uint64_t*>(c) != 0; },
                                          &visited};
        const ObjectRayVisitor count_rays{
            [](void* c, const ObjectRayHit&) { return ++*static_cast<uint64_t*>(c) != 0; }, &visited};
        const ObjectNearestVisitor count_nearest{
            [](void* c, const ObjectNearestHit&) { return ++*static_cast<uint64_t*>(c) != 0; }, &visited};
        for (uint32_t k = 0; k < kSingles; ++k) {
            feed_handles(query_box(store, q, boxes[k], kAllLayers, handles.data(), handles.size()), handles.data());
            const QueryResult v = query_box(store, q, boxes[k], kAllLayers, user_values.data(), user_values.size());
            part.note(v.status);
            for (uint64_t i = 0; i < v.written; ++i)
                hash.u64(user_values[i]);
            part.note(query_box(store, q, boxes[k], kAllLayers, count_handles).status);
            const ObjectHandle object = store.handle_at(k);
            feed_handles(query_potential_collisions(store, q, object, handles.data(), handles.size()), handles.data());
            const QueryResult r = query_ray(store, q, rays[k], kAllLayers, ray_hits.data(), ray_hits.size());
            part.note(r.status);
            results += r.written;
            for (uint64_t i = 0; i < r.written; ++i)
                hash.f32(ray_hits[i].t);
            part.note(query_ray(store, q, rays[k], kAllLayers, count_rays).status);
            part.note(query_ray_first(store, q, rays[k], kAllLayers, ray_hits.data()).status);
            const QueryResult n =
                query_nearest(store, q, nearest[k], kAllLayers, nearest_hits.data(), nearest_hits.size());
            part.note(n.status);
            results += n.written;
            for (uint64_t i = 0; i < n.written; ++i)
                hash.f32(nearest_hits[i].distance_squared);
            part.note(query_nearest(store, q, nearest[k], kAllLayers, count_nearest).status);
        }
        feed_handles(query_box_batch(store, q, boxes, kSingles, kAllLayers, offsets.data(), offsets.size(),
                                     handles.data(), handles.size(), backend),
                     handles.data());
        part.note(query_ray_batch(store, q, rays, kSingles, kAllLayers, offsets.data(), offsets.size(), ray_hits.data(),
                                  ray_hits.size(), backend)
                      .status);
        part.note(query_nearest_batch(store, q, nearest, kSingles, kAllLayers, offsets.data(), offsets.size(),
                                      nearest_hits.data(), nearest_hits.size(), backend)
                      .status);
        part.note(query_ray_first_batch(store, q, rays, kSingles, kAllLayers, ray_hits.data(), backend).status);
        hash.u64(visited);
        return results;
    }
};

/// The seed-style client API: each frame removes and creates kChurn clients,
/// updates every client, then (explicit) update_index() or (lazy) lets the
/// first query rebuild through the query backend, then find_near,
/// find_near_radius and find_pairs.
struct ClientChurn {
    static constexpr uint32_t kCapacity = 6000;
    static constexpr uint32_t kLive = 5000;
    static constexpr uint32_t kChurn = 30;

    const char* name;
    uint32_t dims;
    float world_lo, world_hi, cell;
    bool explicit_update;
    hashgrid::ProximityIndex index;
    hashgrid::Status init_status;
    std::vector<float> position[3], extent[3], velocity[3]; ///< Per slot.
    std::vector<ObjectHandle> found;
    std::vector<Pair> pairs;
    Rng rng;
    uint32_t frame = 0;

    ClientChurn(const char* scene_name, uint32_t dimensions, World world, float wlo, float whi, float cell_size,
                bool explicit_update_index, uint64_t seed)
        : name(scene_name), dims(dimensions), world_lo(wlo), world_hi(whi), cell(cell_size),
          explicit_update(explicit_update_index), found(kCapacity), pairs(200000), rng(seed) {
        hashgrid::ProximityIndexConfig c;
        c.grid.dimensions = dims;
        c.grid.cell_size = cell;
        c.grid.world = world;
        if (world == World::bounded)
            for (uint32_t d = 0; d < 3; ++d) {
                c.grid.origin[d] = d < dims ? wlo : 0.0f;
                c.grid.cell_counts[d] = d < dims ? static_cast<uint32_t>((whi - wlo) / cell) : 1u;
            }
        c.grid.max_objects = kCapacity;
        c.grid.max_cell_entries = (dims == 3 ? 8 : 4) * kCapacity;
        c.grid.max_pairs = pairs.size();
        init_status = index.init_allocate(c);
        for (uint32_t d = 0; d < 3; ++d) {
            position[d].assign(kCapacity, 0.0f);
            extent[d].assign(kCapacity, 0.0f);
            velocity[d].assign(kCapacity, 0.0f);
        }
        for (uint32_t i = 0; i < kLive && init_status.ok(); ++i)
            init_status = create_random(i).status;
    }

    /// A client no larger than a cell (4 or 8 cell entries), or one in 64 large
    /// (9 cells per axis: a large object), inside the world.
    hashgrid::ObjectAddResult create_random(uint64_t user_value) {
        const bool large = rng.below(64) == 0;
        float p[3] = {0.0f, 0.0f, 0.0f}, size[3] = {0.0f, 0.0f, 0.0f}, v[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t d = 0; d < dims; ++d) {
            size[d] = large ? 9.0f * cell : rng.uniform(0.0f, cell);
            p[d] = rng.uniform(world_lo + size[d], world_hi - size[d]);
            v[d] = rng.uniform(-0.3f, 0.3f) * cell;
        }
        const uint32_t category = 1u << rng.below(4);
        const uint32_t mask = rng.below(8) == 0 ? 0x1u : hashgrid::kAllLayers;
        const hashgrid::ObjectAddResult r = index.create_client(p, size, category, mask, user_value);
        if (r.status.ok())
            for (uint32_t d = 0; d < 3; ++d) {
                position[d][r.handle.index] = p[d];
                extent[d][r.handle.index] = size[d];
                velocity[d][r.handle.index] = v[d];
            }
        return r;
    }

    void random_probe(float (&p)[3], float (&size)[3]) {
        for (uint32_t d = 0; d < 3; ++d) {
            p[d] = d < dims ? rng.uniform(world_lo, world_hi) : 0.0f;
            size[d] = d < dims ? rng.uniform(0.0f, 3.0f * cell) : 0.0f;
        }
    }

    void feed_handles(Fnv1a& hash, const hashgrid::QueryResult& r) const {
        hash.u64(r.total);
        for (uint64_t k = 0; k < r.written; ++k) {
            hash.u32(found[k].index);
            hash.u32(found[k].generation);
        }
    }

    void run_frame(PartLog& log, const hashgrid::ThreadBackend& backend, Fnv1a& hash) {
        ++frame;
        index.set_query_backend(backend);
        log.measure(name, "remove_client", [&](Part& part) {
            for (uint32_t k = 0; k < kChurn; ++k)
                part.note(index.remove_client(index.handle_at(rng.below(index.client_count()))));
            return uint64_t{kChurn};
        });
        log.measure(name, "create_client", [&](Part& part) {
            for (uint32_t k = 0; k < kChurn; ++k)
                part.note(create_random(uint64_t{frame} * 1000u + k).status);
            return uint64_t{kChurn};
        });
        log.measure(name, "update_client", [&](Part& part) {
            for (uint32_t i = 0; i < index.client_count(); ++i) {
                const ObjectHandle h = index.handle_at(i);
                float p[3] = {0.0f, 0.0f, 0.0f}, size[3] = {0.0f, 0.0f, 0.0f};
                for (uint32_t d = 0; d < dims; ++d) {
                    float& v = velocity[d][h.index];
                    size[d] = extent[d][h.index];
                    const float moved = position[d][h.index] + v;
                    if (moved - size[d] < world_lo || moved + size[d] >= world_hi)
                        v = -v; // bounce: stay this frame
                    else
                        position[d][h.index] = moved;
                    p[d] = position[d][h.index];
                }
                part.note(index.update_client(h, p, size));
            }
            return uint64_t{index.client_count()};
        });
        if (explicit_update)
            log.measure(name, "update_index", [&](Part& part) {
                part.note(index.update_index(backend));
                return uint64_t{index.grid().entry_count()};
            });
        log.measure(name, explicit_update ? "find_near" : "find_near (rebuilds the dirty index)", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                float p[3], size[3];
                random_probe(p, size);
                const uint32_t layers = q % 4 == 0 ? 0x3u : hashgrid::kAllLayers;
                const hashgrid::QueryResult r = index.find_near(p, size, layers, found.data(), capacity32(found));
                part.note(r.status);
                feed_handles(hash, r);
                results += r.written;
            }
            return results;
        });
        log.measure(name, "find_near_radius", [&](Part& part) {
            uint64_t results = 0;
            for (uint32_t q = 0; q < kSingles; ++q) {
                float p[3], size[3];
                random_probe(p, size);
                const hashgrid::QueryResult r =
                    index.find_near_radius(p, size[0], hashgrid::kAllLayers, found.data(), capacity32(found));
                part.note(r.status);
                feed_handles(hash, r);
                results += r.written;
            }
            return results;
        });
        log.measure(name, "find_pairs", [&](Part& part) {
            const hashgrid::PairResult r = index.find_pairs(pairs.data(), pairs.size(), backend);
            part.note(r.status);
            hash.u64(hash_pairs(pairs.data(), r.written));
            return r.written;
        });
    }
};

// ---------------------------------------------------------------------------

/// Everything above, built once per backend (all memory allocated here).
struct ObjectWorkload {
    std::vector<std::unique_ptr<BoxWorkload>> boxes;
    std::vector<std::unique_ptr<ParticleWorkload>> particles;
    std::unique_ptr<StoreChurn> store;
    std::vector<std::unique_ptr<ClientChurn>> clients;
    PartLog log;
    Fnv1a hash;

    ObjectWorkload() {
        // Sizes: every parallel pass gets more than one chunk (box_grid_internal.h:
        // 4096 objects and 16384 entries per chunk; grid_internal.h: 8192
        // particles), at about one object per cell.
        boxes.push_back(std::make_unique<BoxWorkload>("boxes 3D unbounded", 3, World::unbounded, -10.0f, 11.0f, 5000,
                                                      11, 1.4f, 6.0f));
        boxes.push_back(
            std::make_unique<BoxWorkload>("boxes 3D bounded", 3, World::bounded, 0.0f, 21.0f, 5000, 12, 1.4f, 6.0f));
        boxes.push_back(std::make_unique<BoxWorkload>("boxes 2D unbounded", 2, World::unbounded, -39.0f, 39.0f, 5000,
                                                      13, 2.0f, 9.0f));
        boxes.push_back(
            std::make_unique<BoxWorkload>("boxes 2D bounded", 2, World::bounded, 0.0f, 78.0f, 5000, 14, 2.0f, 9.0f));
        boxes.push_back(std::make_unique<BoxWorkload>("boxes 3D unbounded, 1 in 20 moving (merged frames)", 3,
                                                      World::unbounded, -10.0f, 11.0f, 5000, 15, 1.4f, 6.0f, 20));
        particles.push_back(
            std::make_unique<ParticleWorkload>("particles 3D unbounded", 3, World::unbounded, 10000, 22.0f, 21));
        particles.push_back(
            std::make_unique<ParticleWorkload>("particles 2D bounded", 2, World::bounded, 10000, 100.0f, 22));
        store = std::make_unique<StoreChurn>();
        clients.push_back(std::make_unique<ClientChurn>("ProximityIndex 2D unbounded", 2, World::unbounded, -130.0f,
                                                        130.0f, 4.0f, true, 31));
        clients.push_back(std::make_unique<ClientChurn>("ProximityIndex 3D bounded, lazy rebuild", 3, World::bounded,
                                                        0.0f, 48.0f, 2.0f, false, 32));
    }

    /// "" when every scene was built, else the first failure.
    [[nodiscard]] std::string init_problems() const {
        for (const auto& w : boxes)
            if (!w->init_status.ok()) return std::string(w->name) + ": " + hashgrid::to_string(w->init_status.code);
        for (const auto& w : particles)
            if (!w->grid->init_status.ok())
                return std::string(w->name) + ": " + hashgrid::to_string(w->grid->init_status.code);
        if (!store->init_status.ok())
            return std::string(store->name) + ": " + hashgrid::to_string(store->init_status.code);
        for (const auto& w : clients)
            if (!w->init_status.ok()) return std::string(w->name) + ": " + hashgrid::to_string(w->init_status.code);
        return "";
    }

    void frame(const hashgrid::ThreadBackend& backend) {
        log.begin_frame();
        for (const auto& w : boxes)
            w->run_frame(log, backend, hash);
        for (const auto& w : particles)
            w->run_frame(log, backend, hash);
        store->run_frame(log, backend, hash);
        for (const auto& w : clients)
            w->run_frame(log, backend, hash);
    }
};

/// Hash of the first backend's counted frames; every other backend must match it.
uint64_t g_reference_hash = 0;
std::string g_reference_label;

void run_object_frames(const hashgrid::ThreadBackend& backend, const std::string& label) {
    INFO(label);
    auto work = std::make_unique<ObjectWorkload>();
    const std::string init = work->init_problems();
    REQUIRE_MESSAGE(init.empty(), init);
    work->frame(backend); // warm-up
    settle();
    work->log.forget_calls();
    const uint32_t frames = scaled_count(kObjectFrames);
    const Counts before = snapshot();
    for (uint32_t f = 0; f < frames; ++f)
        work->frame(backend);
    const Counts after = snapshot();
    const std::string problems = work->log.problems();
    CHECK_MESSAGE(problems.empty(), problems);
    CHECK(work->log.part_count() > 100);
    INFO("whole frames: " << calls_text(after - before));
    CHECK(!any_calls(after - before));
    const uint64_t h = work->hash.value();
    if (g_reference_label.empty()) {
        g_reference_hash = h;
        g_reference_label = label;
    }
    INFO("results differ from those of " << g_reference_label);
    CHECK(h == g_reference_hash);
}

} // namespace

TEST_CASE("no allocation per frame, boxes, queries and objects: serial backend") {
    run_object_frames(hashgrid::serial_backend(), "serial");
}

TEST_CASE("no allocation per frame, boxes, queries and objects: std::thread backend at 1, 2 and 4 threads") {
    for (uint32_t threads : {1u, 2u, 4u}) {
        hashgrid::platform::StdThreadBackend pool(threads);
        run_object_frames(pool.backend(), "std::thread " + std::to_string(threads) + " threads");
    }
}

#if defined(HASHGRID_HAS_TBB)
TEST_CASE("no allocation per frame, boxes, queries and objects: oneTBB at 1, 2 and 4 threads") {
    for (uint32_t threads : {1u, 2u, 4u}) {
        hashgrid::platform::TbbBackend tbb(threads);
        run_object_frames(tbb.backend(), "oneTBB " + std::to_string(threads) + " threads");
    }
}
#endif

// ===========================================================================
// Frames with a trace attached: the ring, the zone hooks, frame markers and
// query stats, on a particle grid and a box grid (rebuild, pairs, neighbour
// lists, prepare, query batches with stats). The ring wraps many times over
// the counted frames.

namespace {

std::atomic<uint64_t> g_zones{0};
void count_zone(void*, const char*, uint32_t) { g_zones.fetch_add(1, std::memory_order_relaxed); }

void run_traced_frames(const hashgrid::ThreadBackend& backend, const std::string& label) {
    INFO(label);
    Particles particles(kParticles, kBox, 77);
    const GridConfig config = unbounded_config(3, 1.0f, 1.0f, kParticles, 400000);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    hashgrid::Grid& g = **grid;
    MovingBoxes boxes(3, 4000, 0.0f, 40.0f, 5, 2.0f, 500, 12.0f);
    BoxGrid box_grid;
    REQUIRE(box_grid.init_allocate(moving_box_config(3, World::unbounded, 0.0f, 40.0f, boxes.size())).ok());
    hashgrid::Trace trace;
    REQUIRE(trace.init_allocate(512).ok()); // smaller than a frame: the ring overwrites every frame
    hashgrid::TraceHooks hooks;
    hooks.begin = &count_zone;
    hooks.end = &count_zone;
    hooks.chunks = true;
    trace.set_hooks(hooks);
    g.set_trace(&trace);
    box_grid.set_trace(&trace);

    std::vector<Pair> pairs(static_cast<size_t>(config.max_pairs)), box_pairs(200000);
    std::vector<uint32_t> offsets(kParticles + 1), indices(2 * pairs.size());
    std::vector<hashgrid::QuerySphere> spheres(kBatch);
    std::vector<hashgrid::QueryBox> query_boxes(kBatch);
    for (uint32_t i = 0; i < kBatch; ++i) {
        const float c = static_cast<float>(i % 25) + 0.5f;
        spheres[i] = hashgrid::QuerySphere{{c, c, c}, 1.5f};
        query_boxes[i] = hashgrid::QueryBox{{c, c, c}, {c + 3.0f, c + 3.0f, c + 3.0f}};
    }
    std::vector<uint64_t> query_offsets(kBatch + 1);
    std::vector<uint32_t> hits(200000);
    hashgrid::QueryStats stats;
    FrameLog log;
    auto frame = [&] {
        particles.step();
        boxes.step();
        trace.begin_frame();
        log.note(g.rebuild(particles.scene.spans(), backend).code, "rebuild");
        const hashgrid::PairResult pr = g.find_pairs(pairs.data(), pairs.size(), backend);
        log.note(pr.status.code, "find_pairs");
        log.min_pairs = std::min(log.min_pairs, pr.written);
        log.note(g.neighbor_lists(pairs.data(), pr.written, offsets.data(), offsets.size(), indices.data(),
                                  indices.size(), backend)
                     .code,
                 "neighbor_lists");
        log.note(hashgrid::query_radius_batch(g, spheres.data(), kBatch, query_offsets.data(), query_offsets.size(),
                                              hits.data(), hits.size(), backend, &stats)
                     .status.code,
                 "query_radius_batch");
        log.note(box_grid.rebuild(boxes.spans(), backend).code, "box rebuild");
        log.note(box_grid.find_pairs(box_pairs.data(), box_pairs.size(), backend).status.code, "box find_pairs");
        const hashgrid::BoxQueryGrid q = hashgrid::prepare_box_queries(box_grid.view(), backend);
        log.note(hashgrid::query_box_batch(q, query_boxes.data(), kBatch, hashgrid::kAllLayers, query_offsets.data(),
                                           query_offsets.size(), hits.data(), hits.size(), backend, &stats)
                     .status.code,
                 "box query_box_batch");
        trace.end_frame();
    };
    frame(); // warm-up
    settle();
    const uint64_t recorded_before = trace.recorded();
    const Counts before = snapshot();
    for (uint32_t f = 0; f < kFrames; ++f)
        frame();
    const Counts after = snapshot();
    INFO("first failure: " << std::string(log.where) << " " << std::string(hashgrid::to_string(log.first_failure)));
    CHECK(log.failures == 0);
    CHECK(log.min_pairs > 10000);
    CHECK(trace.recorded() - recorded_before > 512); // the ring wrapped
    CHECK(trace.dropped() > 0);
    CHECK(g_zones.load() > 0);
    CHECK(stats.queries == uint64_t{2} * kBatch * (kFrames + 1));
    CHECK(after.allocations - before.allocations == 0);
    CHECK(after.frees - before.frees == 0);
    CHECK(after.tbb_allocations - before.tbb_allocations == 0);
    CHECK(after.tbb_frees - before.tbb_frees == 0);
}

} // namespace

TEST_CASE("no allocation per frame with a trace attached: serial backend, std::thread at 1 and 4 threads") {
    run_traced_frames(hashgrid::serial_backend(), "serial, traced");
    for (uint32_t threads : {1u, 4u}) {
        hashgrid::platform::StdThreadBackend pool(threads);
        run_traced_frames(pool.backend(), "std::thread " + std::to_string(threads) + " threads, traced");
    }
}

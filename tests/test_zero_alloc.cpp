// Zero allocations per frame (DESIGN.md guarantee 1): after init and one
// warm-up frame, >= 100 frames of rebuild + find_pairs + neighbor_lists with
// moving, bouncing particles make no allocation call anywhere in the process,
// for the serial backend, the std::thread backend, oneTBB at 1, 2, 4 and 8
// threads, and a game's job system through JobSystemBackend at 1, 2, 4 and 8
// workers, bounded and unbounded.
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
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "hashgrid/platform/job_system_backend.h"
#include "hashgrid/platform/tbb_backend.h"
#include "odd_job_system.h"
#include "test_support.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <malloc.h>
#include <new>
#include <unistd.h>

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
    const char* name = sizeof(size_t) == sizeof(unsigned long) ? unsigned_long_name : unsigned_int_name;
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

/// Particles moving in a box [0, extent)^3, reflecting at the walls.
struct Particles {
    Scene scene;
    std::vector<float> vx, vy, vz;
    float extent;

    Particles(uint32_t n, float box, uint64_t seed) : extent(box) {
        Rng rng(seed);
        scene = uniform_scene(rng, 3, n, 0.0f, box);
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
            move(scene.z[i], vz[i], extent);
        }
    }
};

/// Waits (at most 3 s) until no allocator call has happened for 100 ms, so
/// that oneTBB threads still tearing down an earlier backend's arena (they free
/// task pools asynchronously) are not counted against this backend's frames.
/// A backend whose idle threads kept allocating would never settle, and its
/// calls would then be counted.
void settle() {
    Counts last = snapshot();
    int quiet_ms = 0;
    for (int waited_ms = 0; quiet_ms < 100 && waited_ms < 3000; waited_ms += 10) {
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
constexpr int kFrames = 100;

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
    for (int f = 0; f < kFrames; ++f)
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
    // game's must; it splits and shuffles ranges and runs every third task
    // inline. The adapter itself holds no heap memory at all.
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
        CHECK(jobs.finishes() > 0);
        CHECK(jobs.inline_tasks() > 0);
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

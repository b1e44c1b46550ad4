// SPDX-License-Identifier: MIT
// Counts every allocation call of the process, for programs that report how
// many allocations a stretch of frames made (profiling/bench_frames). It
// defines, for the whole process (Linux/glibc; link the program with
// ENABLE_EXPORTS so that shared libraries bind to these definitions):
// - malloc, free, calloc, realloc, aligned_alloc, posix_memalign, memalign,
//   valloc, pvalloc, forwarding to glibc's __libc_* entry points;
// - every global operator new / delete (plain, array, nothrow, aligned, sized);
// - with oneTBB (HASHGRID_HAS_TBB), oneTBB's own allocator entry points
//   (tbb::detail::r1::cache_aligned_allocate / _deallocate, allocate_memory /
//   deallocate_memory), forwarding to the real ones (dlsym(RTLD_NEXT)): oneTBB
//   takes its internal memory from libtbbmalloc, which never calls malloc
//   (docs/allocation.md has the evidence; tests/test_zero_alloc.cpp counts the
//   same entry points).
// Include it in exactly ONE translation unit of a program: it holds
// definitions, not declarations.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <type_traits>

namespace hashgrid_support {

/// Allocation calls so far: malloc family + operator new, and oneTBB's entry points.
struct AllocationCounts {
    uint64_t calls = 0;     ///< malloc, calloc, realloc, memalign & co., every operator new.
    uint64_t tbb_calls = 0; ///< oneTBB's cache_aligned_allocate and allocate_memory.
    [[nodiscard]] uint64_t total() const { return calls + tbb_calls; }
};

namespace alloc_detail {
inline std::atomic<uint64_t> g_calls{0};
inline std::atomic<uint64_t> g_tbb_calls{0};
inline void* counted(void* p) {
    g_calls.fetch_add(1, std::memory_order_relaxed);
    return p;
}
} // namespace alloc_detail

/// The counts since the program started; subtract two snapshots for a stretch.
inline AllocationCounts allocation_counts() {
    return {alloc_detail::g_calls.load(std::memory_order_relaxed),
            alloc_detail::g_tbb_calls.load(std::memory_order_relaxed)};
}

} // namespace hashgrid_support

extern "C" {
void* __libc_malloc(size_t size) noexcept;
void __libc_free(void* p) noexcept;
void* __libc_calloc(size_t count, size_t size) noexcept;
void* __libc_realloc(void* p, size_t size) noexcept;
void* __libc_memalign(size_t alignment, size_t size) noexcept;

void* malloc(size_t size) noexcept { return hashgrid_support::alloc_detail::counted(__libc_malloc(size)); }
void free(void* p) noexcept { __libc_free(p); }
void* calloc(size_t count, size_t size) noexcept {
    return hashgrid_support::alloc_detail::counted(__libc_calloc(count, size));
}
void* realloc(void* p, size_t size) noexcept {
    return hashgrid_support::alloc_detail::counted(__libc_realloc(p, size));
}
void* memalign(size_t alignment, size_t size) noexcept {
    return hashgrid_support::alloc_detail::counted(__libc_memalign(alignment, size));
}
void* aligned_alloc(size_t alignment, size_t size) noexcept {
    return hashgrid_support::alloc_detail::counted(__libc_memalign(alignment, size));
}
int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
    if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void* p = hashgrid_support::alloc_detail::counted(__libc_memalign(alignment, size));
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
}
void* valloc(size_t size) noexcept {
    return hashgrid_support::alloc_detail::counted(__libc_memalign(static_cast<size_t>(sysconf(_SC_PAGESIZE)), size));
}
void* pvalloc(size_t size) noexcept {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return hashgrid_support::alloc_detail::counted(__libc_memalign(page, (size + page - 1) / page * page));
}
} // extern "C"

namespace hashgrid_support::alloc_detail {
inline void* new_or_fail(void* p) {
    if (p == nullptr) {
#if defined(__cpp_exceptions)
        throw std::bad_alloc();
#else
        std::abort();
#endif
    }
    return p;
}
inline void* plain(size_t size) { return counted(__libc_malloc(size == 0 ? 1 : size)); }
inline void* aligned(size_t size, std::align_val_t alignment) {
    const size_t a = static_cast<size_t>(alignment) < sizeof(void*) ? sizeof(void*) : static_cast<size_t>(alignment);
    return counted(__libc_memalign(a, size == 0 ? 1 : size));
}
} // namespace hashgrid_support::alloc_detail

void* operator new(size_t size) {
    return hashgrid_support::alloc_detail::new_or_fail(hashgrid_support::alloc_detail::plain(size));
}
void* operator new[](size_t size) {
    return hashgrid_support::alloc_detail::new_or_fail(hashgrid_support::alloc_detail::plain(size));
}
void* operator new(size_t size, const std::nothrow_t&) noexcept { return hashgrid_support::alloc_detail::plain(size); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
    return hashgrid_support::alloc_detail::plain(size);
}
void* operator new(size_t size, std::align_val_t a) {
    return hashgrid_support::alloc_detail::new_or_fail(hashgrid_support::alloc_detail::aligned(size, a));
}
void* operator new[](size_t size, std::align_val_t a) {
    return hashgrid_support::alloc_detail::new_or_fail(hashgrid_support::alloc_detail::aligned(size, a));
}
void* operator new(size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
    return hashgrid_support::alloc_detail::aligned(size, a);
}
void* operator new[](size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
    return hashgrid_support::alloc_detail::aligned(size, a);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }

#if defined(HASHGRID_HAS_TBB)
namespace hashgrid_support::alloc_detail {
template <typename Fn>
Fn next_symbol(const char* unsigned_long_name, const char* unsigned_int_name) {
    // Mangled names differ with the type of size_t ('m' unsigned long, 'j' unsigned int).
    const char* name = std::is_same_v<size_t, unsigned long> ? unsigned_long_name : unsigned_int_name;
    void* sym = dlsym(RTLD_NEXT, name);
    if (sym == nullptr) {
        std::fprintf(stderr, "alloc_counter: dlsym(RTLD_NEXT, %s) failed\n", name);
        std::abort();
    }
    return reinterpret_cast<Fn>(sym);
}
using AllocateFn = void* (*)(size_t);
using DeallocateFn = void (*)(void*);
} // namespace hashgrid_support::alloc_detail

namespace tbb::detail::r1 {
void* cache_aligned_allocate(size_t size) {
    using namespace hashgrid_support::alloc_detail;
    static const auto real = next_symbol<AllocateFn>("_ZN3tbb6detail2r122cache_aligned_allocateEm",
                                                     "_ZN3tbb6detail2r122cache_aligned_allocateEj");
    g_tbb_calls.fetch_add(1, std::memory_order_relaxed);
    return real(size);
}
void cache_aligned_deallocate(void* p) {
    using namespace hashgrid_support::alloc_detail;
    static const auto real = next_symbol<DeallocateFn>("_ZN3tbb6detail2r124cache_aligned_deallocateEPv",
                                                       "_ZN3tbb6detail2r124cache_aligned_deallocateEPv");
    real(p);
}
void* allocate_memory(size_t size) {
    using namespace hashgrid_support::alloc_detail;
    static const auto real =
        next_symbol<AllocateFn>("_ZN3tbb6detail2r115allocate_memoryEm", "_ZN3tbb6detail2r115allocate_memoryEj");
    g_tbb_calls.fetch_add(1, std::memory_order_relaxed);
    return real(size);
}
void deallocate_memory(void* p) {
    using namespace hashgrid_support::alloc_detail;
    static const auto real =
        next_symbol<DeallocateFn>("_ZN3tbb6detail2r117deallocate_memoryEPv", "_ZN3tbb6detail2r117deallocate_memoryEPv");
    real(p);
}
} // namespace tbb::detail::r1
#endif

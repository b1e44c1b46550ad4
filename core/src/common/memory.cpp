// SPDX-License-Identifier: MIT
#include "hashgrid/grid.h"

#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace hashgrid {

namespace {

/// Asks Linux to back the 2 MiB-aligned stretches of [begin, begin + bytes)
/// with transparent huge pages where the system leaves that to the program
/// (`madvise` mode). A frame reads its arrays at scattered places (objects
/// gathered by cell, entries patched by lookup); with 4 KiB pages each
/// stretch of a few MiB needs hundreds of TLB entries, and the misses cost
/// page walks on top of the cache misses. The pages are requested before
/// init writes the block, so they are huge from the first touch. Where the
/// system refuses (THP off, other kernels), nothing changes.
void prefer_huge_pages(uintptr_t begin, uint64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr uintptr_t kHugePage = uintptr_t{1} << 21;
    const uintptr_t from = (begin + kHugePage - 1) & ~(kHugePage - 1);
    const uintptr_t to = (begin + static_cast<uintptr_t>(bytes)) & ~(kHugePage - 1);
    if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
#else
    (void)begin;
    (void)bytes;
#endif
}

} // namespace

void* aligned_alloc_bytes(uint64_t bytes, uint32_t alignment) {
    if (bytes == 0 || bytes > SIZE_MAX - alignment || alignment == 0 || (alignment & (alignment - 1)) != 0)
        return nullptr;
    // Over-allocate and keep the original pointer just before the aligned block:
    // portable (MinGW has no std::aligned_alloc) and one allocation only.
    const size_t header = sizeof(void*);
    void* raw = std::malloc(static_cast<size_t>(bytes) + alignment + header);
    if (raw == nullptr) return nullptr;
    const uintptr_t base = reinterpret_cast<uintptr_t>(raw) + header;
    const uintptr_t aligned = (base + alignment - 1) & ~static_cast<uintptr_t>(alignment - 1);
    reinterpret_cast<void**>(aligned)[-1] = raw;
    prefer_huge_pages(aligned, bytes);
    return reinterpret_cast<void*>(aligned);
}

void aligned_free_bytes(void* memory) {
    if (memory != nullptr) std::free(static_cast<void**>(memory)[-1]);
}

} // namespace hashgrid

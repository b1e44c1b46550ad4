#include "hashgrid/grid.h"

#include <cstdint>
#include <cstdlib>

namespace hashgrid {

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
    return reinterpret_cast<void*>(aligned);
}

void aligned_free_bytes(void* memory) {
    if (memory != nullptr) std::free(static_cast<void**>(memory)[-1]);
}

} // namespace hashgrid

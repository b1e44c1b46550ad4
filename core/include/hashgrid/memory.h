// SPDX-License-Identifier: MIT
/// @file
/// The memory every Hashgrid type asks for up front: the size and alignment
/// of its one block (each type's static memory_requirements), and the
/// aligned allocation init_allocate() uses, for callers that want the same.
#pragma once

#include "hashgrid/status.h"

#include <cstdint>

namespace hashgrid {

/// Exact size and alignment of the memory block a type's init() needs for a config.
struct [[nodiscard]] MemoryRequirements {
    Status status;          ///< invalid_config when the config is rejected (bytes is 0 then).
    uint64_t bytes = 0;     ///< 64-bit even on 32-bit targets; status is invalid_config if it exceeds SIZE_MAX.
    uint32_t alignment = 0; ///< Power of two.
};

/// Bytes from aligned_alloc-style allocation used by init_allocate (and
/// available to callers that want the same). Returns null on failure. On
/// Linux the 2 MiB-aligned stretches of the block are offered to
/// transparent huge pages (madvise MADV_HUGEPAGE: docs/user-guide.md,
/// "Huge pages").
void* aligned_alloc_bytes(uint64_t bytes, uint32_t alignment);
/// Frees memory from aligned_alloc_bytes(). Null is a no-op.
void aligned_free_bytes(void* memory);

} // namespace hashgrid

// SPDX-License-Identifier: MIT
/// @file
/// Aligned memory for grid blocks and other init-time buffers: the platform
/// face of core's aligned_alloc_bytes / aligned_free_bytes (grid.h), plus a
/// move-only owner. Use these only at init: no frame allocates.
///
/// Recipe:
///
///     hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
///     hashgrid::platform::AlignedBlock block = hashgrid::platform::AlignedBlock::allocate(req.bytes, req.alignment);
///     if (!block) { /* out of memory */ }
///     hashgrid::Status s = grid.init(config, block.data(), block.size());
///     // keep `block` alive as long as `grid` (destroy the grid first)
#pragma once

#include "hashgrid/grid.h"

#include <cstddef>
#include <cstdint>

namespace hashgrid::platform {

/// `bytes` bytes aligned to `alignment` (a power of two), or null when bytes is
/// 0, the alignment is not a power of two, the size does not fit size_t (32-bit
/// targets) or memory is exhausted. Release with aligned_free(). Forwards to
/// core's aligned_alloc_bytes (one malloc; works where std::aligned_alloc does
/// not, e.g. MinGW).
inline void* aligned_allocate(uint64_t bytes, uint32_t alignment) { return aligned_alloc_bytes(bytes, alignment); }

/// Frees memory from aligned_allocate() (or core's aligned_alloc_bytes). Null is a no-op.
inline void aligned_free(void* memory) { aligned_free_bytes(memory); }

/// Owns one block from aligned_allocate(); frees it on destruction. Move-only.
class AlignedBlock {
public:
    AlignedBlock() = default;

    /// An owning block, or an empty one (operator bool false) if the allocation failed.
    static AlignedBlock allocate(uint64_t bytes, uint32_t alignment) {
        AlignedBlock block;
        block.data_ = aligned_allocate(bytes, alignment);
        if (block.data_ != nullptr) {
            // aligned_alloc_bytes rejects sizes beyond SIZE_MAX, so this is exact.
            block.size_ = static_cast<size_t>(bytes);
            block.alignment_ = alignment;
        }
        return block;
    }

    ~AlignedBlock() { reset(); }
    AlignedBlock(const AlignedBlock&) = delete;
    AlignedBlock& operator=(const AlignedBlock&) = delete;
    /// Takes other's block; other is empty afterwards.
    AlignedBlock(AlignedBlock&& other) noexcept : data_(other.data_), size_(other.size_), alignment_(other.alignment_) {
        other.forget();
    }
    /// Frees this block, then takes other's; other is empty afterwards.
    AlignedBlock& operator=(AlignedBlock&& other) noexcept {
        if (this != &other) {
            reset();
            data_ = other.data_;
            size_ = other.size_;
            alignment_ = other.alignment_;
            other.forget();
        }
        return *this;
    }

    /// The block (null when empty).
    [[nodiscard]] void* data() const { return data_; }
    /// Bytes asked for (0 when empty).
    [[nodiscard]] size_t size() const { return size_; }
    /// Alignment asked for (0 when empty).
    [[nodiscard]] uint32_t alignment() const { return alignment_; }
    /// True when the owner holds a block.
    explicit operator bool() const { return data_ != nullptr; }

    /// Frees the block (if any); the owner is empty afterwards.
    void reset() {
        aligned_free(data_);
        forget();
    }

    /// Gives up ownership: the caller frees the result with aligned_free().
    [[nodiscard]] void* release() {
        void* memory = data_;
        forget();
        return memory;
    }

private:
    void forget() {
        data_ = nullptr;
        size_ = 0;
        alignment_ = 0;
    }

    void* data_ = nullptr;
    size_t size_ = 0;
    uint32_t alignment_ = 0;
};

} // namespace hashgrid::platform

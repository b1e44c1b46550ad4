// SPDX-License-Identifier: MIT
// The one-block memory pattern shared by Grid, BoxGrid, ObjectStore and
// ProximityIndex: lay every array out at 64-byte alignment (measuring first,
// with no base), then check the caller's block against the measured size.
#pragma once

#include "common/status_make.h"

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/status.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace hashgrid::detail {

/// Alignment of every array in a block (and of the block itself).
inline constexpr uint32_t kAlignment = 64;

/// Lays out every array of a block. With base == nullptr it only measures.
/// Positions are byte offsets from the base, kept as integers: measuring
/// never forms a pointer (arithmetic on a null base is undefined behaviour,
/// even when the result is never used), and a part of an array (a region
/// read as several arrays) is an offset into it, turned into a pointer by
/// at(), which is null when measuring.
class Layout {
public:
    explicit Layout(unsigned char* base) : base_(base) {}

    /// Room for `count` T at the next kAlignment boundary: its offset.
    template <typename T>
    uint64_t reserve(uint64_t count) {
        offset_ = align_up(offset_);
        const uint64_t start = offset_;
        offset_ += count * sizeof(T);
        return start;
    }
    /// The T at byte `offset` of the block, or null when measuring.
    template <typename T>
    T* at(uint64_t offset) const {
        return base_ != nullptr ? reinterpret_cast<T*>(base_ + offset) : nullptr;
    }
    /// reserve() and at() in one: the array of `count` T (null when measuring).
    template <typename T>
    T* take(uint64_t count) {
        return at<T>(reserve<T>(count));
    }
    /// The block's size so far, a multiple of kAlignment.
    [[nodiscard]] uint64_t bytes() const { return align_up(offset_); }

private:
    static constexpr uint64_t align_up(uint64_t offset) {
        return (offset + kAlignment - 1) & ~uint64_t{kAlignment - 1};
    }

    unsigned char* base_;
    uint64_t offset_ = 0;
};

inline bool positive_finite(float v) { return std::isfinite(v) && v > 0.0f; }

/// init()'s check of a caller block against memory_requirements(): ok, or
/// memory_too_small (needed = bytes) or memory_misaligned (needed = alignment).
inline Status check_block(const MemoryRequirements& req, const void* memory, size_t bytes) {
    if (memory == nullptr || bytes < req.bytes) {
        return capacity_status(StatusCode::memory_too_small, "memory block smaller than memory_requirements().bytes",
                               req.bytes);
    }
    if ((reinterpret_cast<uintptr_t>(memory) & (req.alignment - 1)) != 0) {
        return capacity_status(StatusCode::memory_misaligned,
                               "memory block not aligned to memory_requirements().alignment", req.alignment);
    }
    return Status{};
}

/// init_allocate()'s failure when the one allocation fails.
inline Status allocation_failed(uint64_t bytes) {
    return capacity_status(StatusCode::memory_too_small, "allocation of memory_requirements().bytes failed", bytes);
}

/// The end of every successful init(): a block the object allocated itself
/// (an earlier init_allocate) is freed once nothing points into it any more.
/// Re-init on that very block (its address is the object's first array)
/// keeps owning it, so it is freed once, by the destructor or a later init.
inline void release_owned(void*& owned, const void* now_used) {
    if (owned == now_used) return;
    aligned_free_bytes(owned);
    owned = nullptr;
}

/// memory_requirements() of every object kind: a validation result, then the
/// measured block (measure() lays the block out with no base) checked against
/// what this target can address.
template <typename Measure>
MemoryRequirements block_requirements(const Status& valid, Measure&& measure) {
    MemoryRequirements r;
    r.status = valid;
    if (!r.status.ok()) return r;
    const uint64_t bytes = measure();
    if (bytes > SIZE_MAX) {
        r.status = make_status(StatusCode::invalid_config, "capacities need more memory than this target can address");
        return r;
    }
    r.bytes = bytes;
    r.alignment = kAlignment;
    return r;
}

/// Smallest page size of every supported target.
inline constexpr size_t kPageBytes = 4096;

/// Writes a zero byte into every page of the block's first `bytes`, so the
/// operating system maps all of it now, at init, and no frame later stops
/// for a page fault on the first touch of memory it had not reached before
/// (a pair pool block first needed when a scene's pair count peaks, the
/// far end of an array the scene grows into). The writes are volatile: the
/// arrays laid out on top later must not let them be dropped as dead.
inline void touch_pages(unsigned char* base, uint64_t bytes) {
    volatile unsigned char* const page = base;
    for (uint64_t at = 0; at < bytes; at += kPageBytes)
        page[at] = 0;
    if (bytes != 0) page[bytes - 1] = 0; // the block need not start on a page: its last one
}

/// init() of every object kind on a caller block: the config's requirements,
/// the block check, then every page of the block touched (touch_pages), then
/// place(base), which lays the object out on the block and takes it over (it
/// cannot fail: everything that can was checked before the object is
/// touched), then an earlier own block is released.
template <typename Place>
Status init_on_block(const MemoryRequirements& req, void* memory, size_t bytes, void*& owned, Place&& place) {
    if (!req.status.ok()) return req.status;
    if (const Status s = check_block(req, memory, bytes); !s.ok()) return s;
    touch_pages(static_cast<unsigned char*>(memory), req.bytes);
    place(static_cast<unsigned char*>(memory));
    release_owned(owned, memory);
    return Status{};
}

/// init_allocate() as a transaction: the new block is allocated and laid out
/// first; only when init(block) succeeded is the old block freed (by init,
/// through release_owned) and the new one owned. Any failure leaves the
/// object exactly as it was, so a failed re-init never leaves pointers into
/// freed memory behind.
template <typename InitOnBlock>
Status init_allocate_block(const MemoryRequirements& req, void*& owned, InitOnBlock&& init_on_block) {
    if (!req.status.ok()) return req.status;
    void* block = aligned_alloc_bytes(req.bytes, req.alignment);
    if (block == nullptr) return allocation_failed(req.bytes);
    const Status s = init_on_block(block, static_cast<size_t>(req.bytes));
    if (!s.ok()) {
        aligned_free_bytes(block);
        return s;
    }
    owned = block;
    return s;
}

/// grow_allocate() of every object kind: allocates the larger block and lets
/// grow_on_block(block, bytes) move the object into it. The old block stays
/// allocated until the move is done (the move reads it), then is freed; on
/// failure the new block is freed and the object keeps its old one.
template <typename GrowOnBlock>
Status grow_allocate_block(const MemoryRequirements& req, void*& owned, GrowOnBlock&& grow_on_block) {
    if (!req.status.ok()) return req.status;
    void* block = aligned_alloc_bytes(req.bytes, req.alignment);
    if (block == nullptr) return allocation_failed(req.bytes);
    void* const old = owned;
    owned = nullptr; // the move's release_owned() must not free the block it reads from
    const Status s = grow_on_block(block, static_cast<size_t>(req.bytes));
    if (!s.ok()) {
        owned = old;
        aligned_free_bytes(block);
        return s;
    }
    aligned_free_bytes(old);
    owned = block;
    return s;
}

} // namespace hashgrid::detail

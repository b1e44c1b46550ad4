// SPDX-License-Identifier: MIT
// Where a chunk of the box pair search puts its pairs (box_grid_pairs.cpp):
// the search step keeps them in linked blocks of the preallocated pool, and
// a chunk searched again after the pool ran out writes them straight into
// the caller's buffer, and so does every chunk on a backend with one worker.
// Both take one pair (emit) or a run of pairs in order
// (emit_pairs), with the caller's filter applied.
#pragma once

#include "box/box_grid_internal.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace hashgrid::detail {

/// Keeps a chunk's pairs in linked blocks of the pool.
class PoolSink {
public:
    PoolSink(BoxState& s, PairFilter filter) : s_(s), filter_(filter) {}

    void emit(uint32_t a, uint32_t b) {
        if (filter_.accept != nullptr && !filter_.accept(filter_.context, a, b)) return;
        ++count_;
        if (overflow_) return;
        if (used_ == kBoxPairBlock && !claim()) return;
        s_.pool[uint64_t{last_} * kBoxPairBlock + used_++] = Pair{a, b};
    }
    /// emit() of each of pairs[0, n), in order.
    void emit_pairs(const Pair* pairs, uint32_t n) {
        if (filter_.accept != nullptr) {
            for (uint32_t p = 0; p < n; ++p)
                emit(pairs[p].a, pairs[p].b);
            return;
        }
        count_ += n;
        while (n > 0 && !overflow_) {
            if (used_ == kBoxPairBlock && !claim()) return;
            const uint32_t take = std::min(n, kBoxPairBlock - used_);
            std::copy(pairs, pairs + take, s_.pool + uint64_t{last_} * kBoxPairBlock + used_);
            used_ += take;
            pairs += take;
            n -= take;
        }
    }
    [[nodiscard]] PairChunk record() const { return PairChunk{count_, 0, first_, overflow_ ? 1u : 0u}; }

private:
    /// Appends a block of the pool to the chunk's list; false (and overflow) when none is left.
    bool claim() {
        const uint32_t block = std::atomic_ref<uint32_t>(s_.blocks_used).fetch_add(1, std::memory_order_relaxed);
        if (block >= s_.pool_blocks) {
            overflow_ = true;
            return false;
        }
        s_.block_next[block] = kNone;
        if (last_ == kNone)
            first_ = block;
        else
            s_.block_next[last_] = block;
        last_ = block;
        used_ = 0;
        return true;
    }

    BoxState& s_;
    PairFilter filter_;
    uint64_t count_ = 0;
    uint32_t first_ = kNone;
    uint32_t last_ = kNone;
    uint32_t used_ = kBoxPairBlock;
    bool overflow_ = false;
};

/// Writes pairs straight into the output, from an offset up to the limit,
/// counting those past it too: a chunk searched again while publishing, or
/// every chunk in order on a backend with one worker.
class DirectSink {
public:
    DirectSink(Pair* out, uint64_t at, uint64_t limit, PairFilter filter)
        : out_(out), at_(at), limit_(limit), filter_(filter) {}
    void emit(uint32_t a, uint32_t b) {
        if (filter_.accept != nullptr && !filter_.accept(filter_.context, a, b)) return;
        if (at_ < limit_) out_[at_] = Pair{a, b};
        ++at_;
    }
    void emit_pairs(const Pair* pairs, uint32_t n) {
        if (filter_.accept != nullptr) {
            for (uint32_t p = 0; p < n; ++p)
                emit(pairs[p].a, pairs[p].b);
            return;
        }
        if (at_ < limit_) std::copy(pairs, pairs + std::min<uint64_t>(n, limit_ - at_), out_ + at_);
        at_ += n;
    }
    /// The offset after the last pair emitted (written or not).
    [[nodiscard]] uint64_t end() const { return at_; }

private:
    Pair* out_;
    uint64_t at_;
    uint64_t limit_;
    PairFilter filter_;
};

} // namespace hashgrid::detail

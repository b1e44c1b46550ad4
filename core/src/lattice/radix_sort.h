// SPDX-License-Identifier: MIT
// The stable parallel LSD radix sort of (key, 32-bit payload) pairs, used by
// the particle rebuild (its distinct cell keys, rebuild_table.cpp) and the
// box-grid rebuild (its entries by dense cell index, box_grid_rebuild.cpp;
// an update's new entries by key, box_grid_update.cpp: sort_new_entries).
//
// Each pass sorts by one digit of digit_bits bits: per-chunk histograms over
// fixed chunks of `grain` keys, one scan in (digit, chunk) order, then each
// chunk scatters its keys in order. Chunks depend on n and grain only, so the
// result is the stable sort by key for any thread count. Digits in which no
// key differs (their bits are clear in `varying`) are skipped.
#pragma once

#include "common/chunks.h"

#include "hashgrid/thread_backend.h"

#include <cstdint>
#include <cstring>

namespace hashgrid::detail {

/// Bits in which some of keys[0, n) differ from keys[0] (0 when n == 0);
/// chunk_scratch holds chunk_count(n, grain) values.
inline uint64_t varying_bits(const ThreadBackend& b, const uint64_t* keys, uint32_t n, uint32_t grain,
                             uint64_t* chunk_scratch) {
    if (n == 0) return 0;
    parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t diff = 0;
        const uint64_t first = keys[0];
        for (uint32_t i = begin; i < end; ++i)
            diff |= keys[i] ^ first;
        chunk_scratch[begin / grain] = diff;
    });
    uint64_t diff = 0;
    const uint32_t chunks = chunk_count(n, grain);
    for (uint32_t c = 0; c < chunks; ++c)
        diff |= chunk_scratch[c];
    return diff;
}

/// Stable LSD radix sort of (key[0][i], payload[0][i]), i < n, by key, with
/// key[1] and payload[1] as the other half of the ping-pong. Sorts by the
/// digits of digit_bits bits (at shifts 0, digit_bits, ...) that hold a bit
/// of `varying`; keys must agree outside `varying`. hist holds
/// chunk_count(n, grain) << digit_bits counters. Returns which buffer (0 or
/// 1) holds the result.
template <typename K>
uint32_t radix_sort(const ThreadBackend& b, K* const key[2], uint32_t* const payload[2], uint32_t n, uint64_t varying,
                    uint32_t digit_bits, uint32_t* hist, uint32_t grain) {
    if (n < 2) return 0;
    const uint32_t radix = 1u << digit_bits;
    const K mask = static_cast<K>(radix - 1);
    const uint32_t chunks = chunk_count(n, grain);
    uint32_t src = 0;
    for (uint32_t shift = 0; shift < 8 * sizeof(K) && (varying >> shift) != 0; shift += digit_bits) {
        if (((varying >> shift) & mask) == 0) continue;
        const K* from = key[src];
        const uint32_t* from_payload = payload[src];
        K* to = key[1 - src];
        uint32_t* to_payload = payload[1 - src];
        parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint32_t* h = hist + uint64_t{begin / grain} * radix;
            std::memset(h, 0, radix * sizeof(uint32_t));
            for (uint32_t i = begin; i < end; ++i)
                ++h[static_cast<uint32_t>((from[i] >> shift) & mask)];
        });
        uint32_t running = 0;
        for (uint32_t digit = 0; digit < radix; ++digit)
            for (uint32_t c = 0; c < chunks; ++c) {
                uint32_t& h = hist[uint64_t{c} * radix + digit];
                const uint32_t v = h;
                h = running;
                running += v;
            }
        parallel_chunks(b, n, grain, [&](uint32_t begin, uint32_t end, uint32_t) {
            uint32_t* h = hist + uint64_t{begin / grain} * radix;
            for (uint32_t i = begin; i < end; ++i) {
                const K k = from[i];
                const uint32_t at = h[static_cast<uint32_t>((k >> shift) & mask)]++;
                to[at] = k;
                to_payload[at] = from_payload[i];
            }
        });
        src = 1 - src;
    }
    return src;
}

} // namespace hashgrid::detail

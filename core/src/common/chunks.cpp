// SPDX-License-Identifier: MIT
// The shared scans, fills and small sorts (chunks.h).
#include "common/chunks.h"

#include <algorithm>

namespace hashgrid::detail {

uint64_t scan_chunk_sums(uint64_t* sums, uint32_t chunks) {
    uint64_t total = 0;
    for (uint32_t c = 0; c < chunks; ++c) {
        const uint64_t v = sums[c];
        sums[c] = total;
        total += v;
    }
    return total;
}

uint64_t exclusive_scan(const ThreadBackend& b, const uint32_t* counts, uint32_t n, uint32_t* starts, uint32_t* cursors,
                        uint64_t* chunk_sums) {
    const uint32_t chunks = chunk_count(n, kCellGrain);
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        uint64_t sum = 0;
        for (uint32_t i = begin; i < end; ++i)
            sum += counts[i];
        chunk_sums[begin / kCellGrain] = sum;
    });
    const uint64_t total = scan_chunk_sums(chunk_sums, chunks);
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        auto running = static_cast<uint32_t>(chunk_sums[begin / kCellGrain]);
        for (uint32_t i = begin; i < end; ++i) {
            const uint32_t v = counts[i];
            starts[i] = running;
            if (cursors != nullptr) cursors[i] = running;
            running += v;
        }
    });
    starts[n] = static_cast<uint32_t>(total);
    return total;
}

void fill_u32(const ThreadBackend& b, uint32_t* a, uint32_t n, uint32_t value) {
    parallel_chunks(b, n, kCellGrain * 4, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            a[i] = value;
    });
}

void sort_distinct(uint32_t* a, uint32_t n) {
    if (n > 32) {
        // Values are distinct, so any correct sort gives the same result.
        std::sort(a, a + n);
        return;
    }
    for (uint32_t i = 1; i < n; ++i) {
        const uint32_t v = a[i];
        uint32_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = v;
    }
}

} // namespace hashgrid::detail

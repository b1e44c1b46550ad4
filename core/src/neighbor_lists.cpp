// CSR neighbour lists from a pair array: degree count, exclusive scan, fill
// with per-particle atomic cursors, then each list sorted ascending (entries
// are distinct, so the result does not depend on the fill's timing).
#include "grid_impl.h"

#include "hashgrid/assert.h"

namespace hashgrid {

using namespace detail;

namespace {
constexpr uint32_t kPairItems = 65536;
}

Status Grid::neighbor_lists(const Pair* pairs, uint64_t pair_count, uint32_t* offsets, uint64_t offsets_capacity,
                            uint32_t* indices, uint64_t indices_capacity, const ThreadBackend& b) {
    HASHGRID_ASSERT(pairs != nullptr || pair_count == 0, "neighbor_lists: null pairs with nonzero count");
    if (!built_) return {StatusCode::not_built, 0, 0, 0, "neighbor_lists before a successful rebuild"};
    const uint32_t n = count_;
    if (offsets == nullptr || offsets_capacity < uint64_t{n} + 1)
        return {StatusCode::output_too_small, uint64_t{n} + 1, 0, 0, "offsets needs particle_count() + 1 entries"};
    const uint64_t total = 2 * pair_count;
    if (total > 0xffffffffu)
        return {StatusCode::output_too_small, total, 0, 0, "neighbour lists exceed 32-bit offsets"};
    if (pair_count > 0xffffffffu) return {StatusCode::output_too_small, total, 0, 0, "too many pairs"};
    const auto pairs_n = static_cast<uint32_t>(pair_count);

    uint32_t* degree = particle_cell_; // scratch: degrees, then fill cursors
    fill_u32(b, degree, n, 0);
    parallel_chunks(b, pairs_n, kPairItems, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            HASHGRID_ASSERT(pairs[i].a < pairs[i].b && pairs[i].b < n, "neighbor_lists: pair out of range");
            atomic_add(degree[pairs[i].a], 1);
            atomic_add(degree[pairs[i].b], 1);
        }
    });
    exclusive_scan(b, degree, n, offsets, degree, chunk_scratch_);
    if (indices == nullptr || indices_capacity < total)
        return {StatusCode::output_too_small, total, 0, 0, "indices needs 2 * pair_count entries"};
    parallel_chunks(b, pairs_n, kPairItems, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i) {
            indices[atomic_add(degree[pairs[i].a], 1)] = pairs[i].b;
            indices[atomic_add(degree[pairs[i].b], 1)] = pairs[i].a;
        }
    });
    parallel_chunks(b, n, kCellGrain, [&](uint32_t begin, uint32_t end, uint32_t) {
        for (uint32_t i = begin; i < end; ++i)
            sort_distinct(indices + offsets[i], offsets[i + 1] - offsets[i]);
    });
    return {};
}

} // namespace hashgrid

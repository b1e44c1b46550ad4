// SPDX-License-Identifier: MIT
// Context of the user guide's block that maps box-query results to handles
// (compiled only): a prepared grid, its store and the buffers the block names.
#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"

#include <cstdint>

hashgrid::Status map_queries(const hashgrid::ObjectStore& store, const hashgrid::BoxQueryGrid& q,
                             const hashgrid::QueryBox& box, uint32_t* found, uint64_t capacity,
                             hashgrid::ObjectHandle* handles, const hashgrid::QueryBox* boxes, uint32_t n,
                             uint64_t* offsets, uint32_t* flat, uint64_t flat_capacity,
                             const hashgrid::ThreadBackend& backend, uint32_t i) {
    // @snippet@
    return hashgrid::Status{};
}

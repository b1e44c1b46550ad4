// SPDX-License-Identifier: MIT
// Context of the user guide's store -> BoxGrid block (compiled only): the
// store, the grid and the buffers it names.
#include "hashgrid/box_grid.h"
#include "hashgrid/objects.h"

#include <cstdint>

hashgrid::Status store_frame(hashgrid::ObjectStore& store, const hashgrid::ObjectStoreConfig& store_config,
                             hashgrid::BoxGrid& grid, const hashgrid::ThreadBackend& backend, hashgrid::Pair* pairs,
                             uint64_t capacity, hashgrid::ObjectHandlePair* handle_pairs) {
    // @snippet@
    return hashgrid::Status{};
}

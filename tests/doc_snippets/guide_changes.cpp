// SPDX-License-Identifier: MIT
// Context of the user guide's change-log block (compiled only): a job that
// mirrors a store.
#include "hashgrid/objects.h"

#include <cstdint>

void update_one(uint32_t dense_index);
void update_all();

void mirror(const hashgrid::ObjectStore& store, uint64_t& my_clock) {
    // @snippet@
}

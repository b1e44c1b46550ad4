// SPDX-License-Identifier: MIT
// Context of the user guide's overlap-events block (built and run): a store
// with a player, a wall and a sensor zone, a grid, and two frames in which
// the player walks into the zone.
#include "hashgrid/box_grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/pair_tracker.h"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr uint32_t kSolid = 1u;
constexpr uint32_t kSensorLayer = 2u;

hashgrid::ObjectBox box(float x0, float y0, float x1, float y1) {
    hashgrid::ObjectBox b;
    b.min[0] = x0;
    b.min[1] = y0;
    b.max[0] = x1;
    b.max[1] = y1;
    return b;
}

uint64_t entered = 0;
hashgrid::ObjectHandle player;

void on_enter(hashgrid::ObjectHandle a, hashgrid::ObjectHandle b) {
    std::printf("enter: slot %u and slot %u\n", a.index, b.index);
    ++entered;
}

/// The game's add / move / remove: in frame 1 the player walks into the zone.
void move_things(hashgrid::ObjectStore& store, int frame) {
    if (frame == 1 && !store.move(player, box(4.5f, 0, 5.5f, 1)).ok()) std::printf("move failed\n");
}

} // namespace

int main() {
    hashgrid::ObjectStoreConfig store_config;
    store_config.dimensions = 2;
    store_config.max_objects = 16;
    hashgrid::ObjectStore store;
    hashgrid::BoxGrid grid;
    hashgrid::BoxGridConfig grid_config = hashgrid::box_grid_config_for(store_config);
    grid_config.cell_size = 2.0f;
    grid_config.max_cell_entries = 16 * 16;
    grid_config.max_pairs = 64;
    if (!store.init_allocate(store_config).ok() || !grid.init_allocate(grid_config).ok()) return 1;
    player = store.add(box(0, 0, 1, 1), kSolid, hashgrid::kAllLayers, 0).handle;
    (void)store.add(box(1, 0, 2, 4), kSolid, hashgrid::kAllLayers, 0).handle;       // a wall the player touches
    (void)store.add(box(5, 0, 8, 3), kSensorLayer, hashgrid::kAllLayers, 0).handle; // a trigger zone
    std::vector<hashgrid::Pair> pairs(64);
    const hashgrid::ThreadBackend backend = hashgrid::serial_backend();
    // @snippet@
    // Frame 0: the player touches the wall; frame 1: it left the wall and entered the zone.
    return entered == 1 && tracker.events().end.count == 1 ? 0 : 1;
}

// SPDX-License-Identifier: MIT
// Context of the user guide's block on store-fed queries (store_queries.h):
// the block defines nearby(); main() runs it on three boxes and checks the
// first hit of the ray against the answer worked out by hand.
// @snippet@

#include <cstdio>

int main() {
    hashgrid::ObjectStoreConfig sc;
    sc.max_objects = 8;
    hashgrid::ObjectStore store;
    hashgrid::BoxGrid grid;
    hashgrid::BoxGridConfig gc = hashgrid::box_grid_config_for(sc);
    gc.cell_size = 2.0f;
    gc.max_cell_entries = 64;
    gc.max_pairs = 64;
    if (!store.init_allocate(sc).ok() || !grid.init_allocate(gc).ok()) return 1;
    hashgrid::ObjectBox far_box, hit_box;
    far_box.min[0] = 50.0f;
    far_box.max[0] = 51.0f;
    hit_box.min[0] = 3.0f; // the ray along +x from the origin enters it at t = 3
    hit_box.max[0] = 4.0f;
    if (!store.add(far_box, 1, 1, 10).status.ok()) return 1;
    const hashgrid::ObjectAddResult hit = store.add(hit_box, 1, 1, 20);
    if (!hit.status.ok()) return 1;
    if (!grid.rebuild(store, hashgrid::serial_backend()).ok()) return 1;
    hashgrid::ObjectHandle found[64];
    hashgrid::ObjectRayHit first;
    const hashgrid::Status s = nearby(store, grid, hashgrid::serial_backend(), found, first);
    const bool pass = s.ok() && first.handle == hit.handle && first.t == 3.0f;
    std::printf("%s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}

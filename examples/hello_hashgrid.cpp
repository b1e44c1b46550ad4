// SPDX-License-Identifier: MIT
// hello_hashgrid: the smallest complete Hashgrid program. Seven points in 2D,
// a grid whose interaction distance is 1, one rebuild, every pair of points
// closer than 1, printed.
//
// The answer, by hand (distance test d < 1, strict):
//   0 (0, 0)     - 1 (0.5, 0)     d = 0.5    pair
//   1 (0.5, 0)   - 2 (1.25, 0)    d = 0.75   pair
//   0 (0, 0)     - 2 (1.25, 0)    d = 1.25   no
//   3 (5, 5)     - 4 (5, 6)       d = 1      no: exactly the distance is outside
//   3 (5, 5)     - 5 (5.5, 5.5)   d = 0.707  pair
//   4 (5, 6)     - 5 (5.5, 5.5)   d = 0.707  pair
//   6 (-3, 2)    alone
// so the pairs are {0,1} {1,2} {3,5} {4,5}. The program prints the pairs it
// found (sorted), compares them with that list, prints PASS or FAIL and
// returns nonzero on FAIL.
//
//   hello_hashgrid

#include "hashgrid/config.h"
#include "hashgrid/grid.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

int main() {
    const float x[] = {0.0f, 0.5f, 1.25f, 5.0f, 5.0f, 5.5f, -3.0f};
    const float y[] = {0.0f, 0.0f, 0.0f, 5.0f, 6.0f, 5.5f, 2.0f};
    const uint32_t n = 7;

    hashgrid::GridConfig config; // unbounded world: any finite coordinate
    config.dimensions = 2;
    config.cell_size = 1.0f;            // >= the interaction distance
    config.interaction_distance = 1.0f; // pairs with distance < 1
    config.max_particles = n;
    config.max_cells = n;
    config.max_pairs = 16;

    hashgrid::Grid grid;
    hashgrid::Status status = grid.init_allocate(config);
    if (status.ok()) status = grid.rebuild({x, y, nullptr, nullptr, n}, hashgrid::serial_backend());
    hashgrid::Pair pairs[16];
    const hashgrid::PairResult found = grid.find_pairs(pairs, 16, hashgrid::serial_backend());
    if (!status.ok() || !found.status.ok()) {
        std::printf("failed: %s\nFAIL\n", hashgrid::to_string(status.ok() ? found.status.code : status.code));
        return 1;
    }

    // find_pairs() reports each pair once with a < b, in the grid's cell order;
    // sort them for printing.
    const uint32_t count = static_cast<uint32_t>(found.written); // at most the 16 of the buffer
    std::sort(pairs, pairs + count,
              [](hashgrid::Pair p, hashgrid::Pair q) { return p.a != q.a ? p.a < q.a : p.b < q.b; });
    std::printf("pairs:");
    for (uint32_t k = 0; k < count; ++k)
        std::printf(" {%u,%u}", pairs[k].a, pairs[k].b);
    std::printf("\n");

    // The hand-computed answer above.
    const hashgrid::Pair expected[] = {{0, 1}, {1, 2}, {3, 5}, {4, 5}};
    bool pass = found.total == 4;
    for (uint32_t k = 0; pass && k < 4; ++k)
        pass = pairs[k].a == expected[k].a && pairs[k].b == expected[k].b;
    std::printf("%s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}

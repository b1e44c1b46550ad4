// SPDX-License-Identifier: MIT
// The one golden-hash file: every bit-exact expectation of the determinism
// tests, checked unchanged on every target (x86-64 GCC and clang, aarch64,
// armhf, s390x, MinGW-w64 under wine), for every backend and thread count.
//
// Values are FNV-1a over values, never raw bytes (test_support.h), so byte
// order and 32/64-bit size_t do not matter. Regenerate a table only for an
// intended change of output order or layout: run the owning test with
// HASHGRID_PRINT_GOLDEN=1 and paste what it prints.
#pragma once

#include <cstdint>

namespace hashgrid_test::golden {

/// Particle grid (tests/test_determinism.cpp): one row per fixed scene.
struct GridHashes {
    uint64_t pairs = 0;
    uint64_t csr = 0;
    uint64_t order = 0;
    uint64_t cells = 0;
    uint64_t pair_count = 0;
    friend bool operator==(const GridHashes&, const GridHashes&) = default;
};

// Golden values, one row per fixed scene: {pairs, csr, order, cells, pair count}.
inline constexpr GridHashes kGrid[] = {
    {0xafe8a39289a33638ull, 0x37150888b93a29c2ull, 0x795986268453b02eull, 0xa02e3a87139a48f5ull,
     67159u}, // uniform 3D unbounded
    {0x5568d4fafa3fd863ull, 0xe1014d197c70c106ull, 0x45d197e6cf139d8dull, 0xb40d53f33c9d1116ull,
     505267u}, // clusters 3D bounded
    {0x04b169838f9afc5eull, 0x5e1ce099648ecd8eull, 0x996716967ecdd317ull, 0xc0bc741bc99cdbe0ull,
     18508u}, // uniform 2D unbounded radii
    {0x7106c8f9aaf0f959ull, 0x77ca2938bcfc5edeull, 0xa14073788397b674ull, 0x37b5544e016ce789ull,
     426084u}, // clusters 2D bounded
    {0x4bf70d535637ec61ull, 0x24c159e817da421cull, 0x95e6f1e734a1a693ull, 0xfd8ab21b53d1be11ull,
     51409u}, // boundary lattice 3D unbounded
    {0xde166e9c97db992aull, 0xf8a0790ac3655b7aull, 0x68f82de0ca861ca7ull, 0x326baae8ea7473bfull,
     196462u}, // clusters 3D bounded radii
    {0x51483ec22d351da4ull, 0x7fd251718e4f55e0ull, 0x42333609e48bb2e7ull, 0x1fcd8183ca4c9118ull,
     12502u}, // near 1e6 3D unbounded
    {0x244d4022353318f1ull, 0x0e95d18b32c2b249ull, 0xc9377d0aef2ae3c4ull, 0x787d10d002f6aaf1ull,
     219263u}, // +-1e6 3D r=0.01 (cells wrap)
    {0xb8f250841b1383bdull, 0xf95f271a88a5297cull, 0xc6bec1bd9077b4f4ull, 0x9fc9ae687c679e57ull, 9143u},  // seam 3D
    {0x640022188233d10full, 0xab161a571abf2e43ull, 0x444a8642d40c3a6cull, 0xe3f1befad88d80efull, 95844u}, // seam 2D
    {0x7aad80d584592d35ull, 0xa938bacbd42ea78eull, 0x61100a8feb03bbb4ull, 0x6df13bd2b2719199ull,
     70347u}, // formula switch 3D
};

/// FMA canary (tests/test_fp_contract.cpp): candidate pairs at exactly r that
/// the scene generator finds; the grid must report none of them.
inline constexpr uint32_t kFmaCanaryCandidates = 3200;

// ---------------------------------------------------------------------------
// Box grid (tests/test_box_grid.cpp, "golden hashes of fixed scenes"): one row
// per fixed box scene (kFixedBoxScenes there), the same for every thread count.

/// Hashes of one fixed box scene: the view's cell table, find_pairs(),
/// find_pairs_with() over 300 query boxes, and the pair count.
struct BoxHashes {
    uint64_t view = 0;
    uint64_t pairs = 0;
    uint64_t query_pairs = 0;
    uint64_t pair_count = 0;
    friend bool operator==(const BoxHashes&, const BoxHashes&) = default;
};

// {view, pairs, query pairs, pair count}, one row per fixed scene.
inline constexpr BoxHashes kBoxGrid[] = {
    {0x4e55775e98e26004ull, 0x12d6193019a427d6ull, 0xe8fcdee200965775ull, 13164u}, // mixed
    {0x3ae90b04f988a63bull, 0x9029278ea585a0f7ull, 0xccaac2e986b71185ull, 22466u}, // lattice
    {0x71c742baba5d7e78ull, 0x5c426feb02161a15ull, 0xba0837f268801737ull, 15708u}, // tiny
    {0xc1aa322ec60ceeceull, 0x6b909e6901deb230ull, 0x6e1fed415c76d22bull, 4366u},  // spanning
    {0xa71c0e01240b90a5ull, 0x77b2ae30ba2d9ff0ull, 0xa10ff9d5574c9433ull, 2556u},  // far-negative
};

// ---------------------------------------------------------------------------
// Particle queries (tests/test_particle_queries.cpp, "golden hashes of query
// results"): one hash per fixed scene over radius, box, frustum and nearest
// queries, find_pairs_with and query_nearest_batch.

/// A golden hash with the name of its scene (the name is printed on a mismatch).
struct NamedHash {
    const char* name = "";
    uint64_t hash = 0;
};

inline constexpr NamedHash kParticleQueries[] = {
    {"golden_uniform3d_unbounded", 0x175d28021efa23a4ull},
    {"golden_clustered3d_bounded", 0xf71531207987ce1dull},
    {"golden_uniform2d_clamp", 0x8d8fbb125b51bb54ull},
    {"golden_lattice3d_unbounded", 0xb81cc956612ce890ull},
};

// ---------------------------------------------------------------------------
// Box queries (tests/test_box_queries.cpp, "golden hashes of query results"):
// one hash per scene spec (kSpecs there) over every query kind.

inline constexpr uint64_t kBoxQueries[] = {
    0xfa5c0b6680cb4d52ull, // spec 0
    0x7da481447bfdc251ull, // spec 1
    0x2f8b9d998fd85e6dull, // spec 2
    0xe7c408a569c6431eull, // spec 3
    0x18dee5600a6f5c36ull, // spec 4
    0x55e544e0a83beb1cull, // spec 5
};

// ---------------------------------------------------------------------------
// Object store (tests/test_objects.cpp, "dense order is a pure function of the
// operations"): hash of the dense arrays and handles after a fixed churn.

inline constexpr uint64_t kObjectStore = 0x792a6e56e69f17e7ull;

/// Pair overflow (tests/test_overflow.cpp): one hash over the written prefix
/// of every pair_capacity outcome (2D/3D, bounded/unbounded, several max_pairs
/// and buffer sizes), the same for every thread count.
inline constexpr uint64_t kPairOverflow = 0x29a9faa024276085ull;

/// Overlap events (tests/test_pair_tracker.cpp): every event list of 400
/// store churn frames in 2D and in 3D, the same for every thread count.
inline constexpr uint64_t kPairEvents = 0x18c1637a3baf2d26ull;

} // namespace hashgrid_test::golden

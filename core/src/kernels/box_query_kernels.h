// SPDX-License-Identifier: MIT
// Run kernels of the box-object box and radius queries: the exact test of
// the cell entries over runs of entries [b, e) (the entries of one or more
// consecutive cells of a query's row), the objects of the entries that pass
// written run by run in ascending entry order. One kernel per instruction set
// (scalar; SSE2 and AVX2 on x86-64; NEON on aarch64), picked by the same process-wide setting
// as the pair kernels (set_pair_kernel). Every kernel performs the scalar
// test's IEEE operations in the same order (no FMA), so all give identical
// output; none reads past a run's end unless the arrays are padded
// (EntryData::padded), and then only lanes it masks out.
//
// An entry passes when its box meets the query and it is its object's
// reporting cell: (entry_flags[e] & need) == need, where `need` is a run's
// set of axes on which the cell is not the query's first (box_query_internal.h,
// scan_box). The layer test is the caller's, on the hits.
#pragma once

#include <cstdint>

namespace hashgrid::detail::box_query_kernels {

/// What an entry kernel reads: the entries' boxes (dimensions of each), their
/// first-cell flags and their objects.
struct EntryData {
    const float* lo[3] = {nullptr, nullptr, nullptr};
    const float* hi[3] = {nullptr, nullptr, nullptr};
    const uint32_t* flags = nullptr;
    const uint32_t* object = nullptr;
    /// Every array can be read 8 entries past the last one (the values there
    /// are defined and masked out): the vector kernels then test a run's last
    /// partial vector whole instead of one entry at a time.
    bool padded = false;
};

/// Runs of entries [begin[i], end[i]) for one kernel call, each with the
/// first-cell flags it needs, in the order their results go out.
struct EntryRuns {
    static constexpr uint32_t kCapacity = 32; ///< Runs per call at most.
    uint32_t begin[kCapacity];                ///< First entry of each run.
    uint32_t end[kCapacity];                  ///< One past the last.
    uint32_t need[kCapacity];                 ///< Flags an entry of the run must carry.
    uint32_t count = 0;                       ///< Runs held.
    uint64_t candidates = 0;                  ///< Sum of the runs' lengths.
};

/// Writes object[e] for every e of the runs whose box meets the closed box
/// [lo, hi] (lo[a] <= hi_e[a] and lo_e[a] <= hi[a] on every axis) and whose
/// flags hold the run's need, to out, run by run in ascending e (out needs
/// room for runs.candidates); returns how many.
using EntryBoxRun = uint32_t (*)(const EntryData& d, const float* lo, const float* hi, const EntryRuns& runs,
                                 uint32_t* out);

/// The same with the test point_box_distance2(c, box_e) <= r2 (box_queries.h:
/// per axis v = lo_e - c, or c - hi_e, or 0; d2 = (vx * vx + vy * vy) + vz * vz).
using EntryRadiusRun = uint32_t (*)(const EntryData& d, const float* c, float r2, const EntryRuns& runs, uint32_t* out);

/// The two kernels of one instruction set and dimension count.
struct EntryKernels {
    EntryBoxRun box = nullptr;
    EntryRadiusRun radius = nullptr;
};

/// The kernels of active_pair_kernel()'s instruction set for `dims` (2 or 3).
EntryKernels entry_kernels(uint32_t dims);

} // namespace hashgrid::detail::box_query_kernels

// SPDX-License-Identifier: MIT
/// @file
/// Status codes: every data or capacity problem is reported here, never
/// dropped. Programmer errors that cost O(1) per call to detect (null pointers,
/// caller-given index ranges, calls on an uninitialised object) are reported as
/// invalid_argument in every build; only per-element checks on hot paths are
/// left to HASHGRID_ASSERT (see assert.h and the user guide's bad-input table).
#pragma once

#include <cstdint>

/// Hashgrid's public API: particle and box grids, their queries, the object
/// store with handles, statuses and the thread-backend interface.
namespace hashgrid {

/// What went wrong, if anything. Capacity codes name the GridConfig field to
/// raise; Status::needed then holds the count that would have fit everything.
enum class [[nodiscard]] StatusCode : uint32_t{
    ok = 0,            ///< Success.
    invalid_config,    ///< A GridConfig field is out of its documented range, or an ObjectStore's config does not
                       ///< fit the BoxGrid rebuilt from it (see Status::message).
    memory_too_small,  ///< init(): the memory block is smaller than memory_requirements() said; needed = bytes.
    memory_misaligned, ///< init(): the memory block is not aligned as memory_requirements() said.
    particle_capacity, ///< More particles than GridConfig::max_particles; needed = particle count.
    cell_capacity,     ///< More occupied cells than GridConfig::max_cells (unbounded); needed = exact distinct cells.
    pair_capacity,     ///< More pairs than GridConfig::max_pairs; needed = exact pair count.
    output_too_small,  ///< A caller-sized output buffer is too small; needed = exact element count.
    invalid_position,  ///< A coordinate is NaN or infinite; index = lowest offending particle.
    position_out_of_range, ///< Outside the bounded world (reject mode); index = lowest
                           ///< offender.
    invalid_radius,        ///< A radius is <= 0, NaN or infinite; index = lowest offending particle.
    radius_too_large,      ///< 2 * radius > cell_size, so the half stencil could miss pairs; index = lowest offender.
    not_built,             ///< Pairs or queries were asked for before a successful rebuild().
    invalid_box,           ///< A box has min > max on some axis; index = lowest offending object.
    object_capacity,       ///< More objects than the config's max_objects; needed = object count.
    entry_capacity,        ///< Boxes cover more cells than max_cell_entries; needed = exact entry count.
    invalid_handle,        ///< A handle is stale (removed, reused slot) or was never issued; nothing was changed.
    invalid_query,         ///< A query's parameters are invalid (NaN, negative radius or length, k == 0, ...).
    invalid_argument,      ///< A programmer error caught in every build: a null pointer where data is required, an
                           ///< index or handle slot out of range, a call on an uninitialised object, inconsistent
                           ///< configs. Nothing was changed; message names the argument.
    stale_view,            ///< A query through a BoxQueryGrid prepared before the grid's last rebuild or init:
                           ///< call prepare_box_queries() again; or dense indices mapped through an ObjectStore
                           ///< whose objects were added, removed or cleared since the grid was rebuilt from it:
                           ///< rebuild and query again. Nothing was read or written.
};

/// Result of an operation. Default constructed means success. Every Status,
/// QueryResult (PairResult), ObjectAddResult, MemoryRequirements and
/// TraceExport is [[nodiscard]], as is every function that returns one: a
/// call whose result is dropped does not compile warning-free. Check it, or
/// cast the call to (void) where ignoring it is really intended.
struct [[nodiscard]] Status {
    /// What went wrong; StatusCode::ok on success.
    StatusCode code = StatusCode::ok;
    /// For capacity codes: the exact count that would have fit (bytes, particles, cells, pairs or elements).
    uint64_t needed = 0;
    /// For per-particle codes: the lowest offending particle index (deterministic for any thread count).
    uint32_t index = 0;
    /// For per-particle codes: how many particles were offending.
    uint32_t count = 0;
    /// Static text naming the config field or input at fault; never null.
    const char* message = "ok";

    /// True when code is StatusCode::ok.
    [[nodiscard]] constexpr bool ok() const { return code == StatusCode::ok; }
};

/// Short stable name of a code, e.g. "pair_capacity".
const char* to_string(StatusCode code);

} // namespace hashgrid

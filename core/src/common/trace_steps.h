// SPDX-License-Identifier: MIT
// The internal steps a traced call records inside its public phase
// (hashgrid/trace.h): each with the phase it belongs to and its name. A
// TraceEvent of a step carries the phase (the user call) and the step's id.
//
// The ids are not stable (a step may be added, split or removed with any
// change to the code it measures; only this list changes), but a step's name
// is: exports, hooks and tools compare names. Id 0 is the phase's own span.
// New steps go anywhere in the list; a renamed step is a visible change.
#pragma once

#include "hashgrid/trace.h"

#include <cstdint>

namespace hashgrid::detail {

// X(id, phase it belongs to, name)
#define HASHGRID_TRACE_STEPS(X)                                                                                        \
    /* Grid::rebuild */                                                                                                \
    X(rebuild_keys, rebuild, "rebuild.keys")           /* validation and cell coordinates (bounded: counts) */         \
    X(rebuild_order, rebuild, "rebuild.order")         /* whether the input is already in cell order */                \
    X(rebuild_presorted, rebuild, "rebuild.presorted") /* input in cell order: cells from its runs, the copy */        \
    X(rebuild_cells, rebuild, "rebuild.cells")         /* unbounded: each particle's cell (dense box or table) */      \
    /* nested in rebuild_cells for frames through the hashed table (RebuildTimings::table_*) */                        \
    X(rebuild_table_clear, rebuild, "rebuild.cells.clear")   /* emptying last frame's table slots */                   \
    X(rebuild_table_insert, rebuild, "rebuild.cells.insert") /* every particle's cell key into the table */            \
    X(rebuild_table_sort, rebuild, "rebuild.cells.sort")     /* the distinct cells compacted and sorted */             \
    X(rebuild_table_lookup, rebuild, "rebuild.cells.lookup") /* each particle's cell index, bucket counts */           \
    X(rebuild_merge, rebuild, "rebuild.merge")               /* input in last frame's order: the movers merged */      \
    X(rebuild_scan, rebuild, "rebuild.scan")                 /* scan of the bucket counts */                           \
    X(rebuild_scatter, rebuild, "rebuild.scatter")           /* particles into buckets */                              \
    X(rebuild_sort, rebuild, "rebuild.sort")                 /* per-bucket sort by cell and the sorted gather */       \
    X(rebuild_compact, rebuild, "rebuild.compact") /* dense path: the box's cells compacted into the table */          \
    /* Grid::find_pairs */                                                                                             \
    X(pair_sweep, find_pairs, "find_pairs.sweep")   /* the sweep with the overlapped copy out */                       \
    X(pair_prefix, find_pairs, "find_pairs.prefix") /* over max_pairs: completing the canonical prefix */              \
    /* BoxGrid::rebuild */                                                                                             \
    X(box_rebuild_listed, box_rebuild, "box.rebuild.listed")     /* from a store: only the listed objects */           \
    X(box_rebuild_validate, box_rebuild, "box.rebuild.validate") /* validation, cell ranges and counts */              \
    X(box_rebuild_entries, box_rebuild, "box.rebuild.entries")   /* entries into cells (radix sort), arrays */         \
    X(box_rebuild_update, box_rebuild, "box.rebuild.update")     /* few objects changed cells: merged */               \
    /* BoxGrid::find_pairs */                                                                                          \
    X(box_pair_search, box_find_pairs, "box.find_pairs.search") /* the search with the overlapped copy out */          \
    X(box_pair_prefix, box_find_pairs, "box.find_pairs.prefix") /* over max_pairs: completing the canonical prefix */

/// A step's id: TraceEvent::step (0: none, the phase's own span).
enum class TraceStep : uint8_t {
    none = 0,
#define HASHGRID_TRACE_STEP_ID(id, phase, name) id,
    HASHGRID_TRACE_STEPS(HASHGRID_TRACE_STEP_ID)
#undef HASHGRID_TRACE_STEP_ID
};

/// Each step's name, by id ("unknown" for none: a phase's span takes its phase's name).
#define HASHGRID_TRACE_STEP_NAME(id, phase, name) name,
inline constexpr const char* kTraceStepNames[] = {"unknown", HASHGRID_TRACE_STEPS(HASHGRID_TRACE_STEP_NAME)};
#undef HASHGRID_TRACE_STEP_NAME

/// Number of step ids, none included.
inline constexpr uint32_t kTraceStepCount = sizeof kTraceStepNames / sizeof kTraceStepNames[0];
static_assert(kTraceStepCount <= 256, "TraceEvent::step is one byte");

/// The phase each step belongs to, by id (frame for none).
#define HASHGRID_TRACE_STEP_PHASE(id, phase, name) TracePhase::phase,
inline constexpr TracePhase kTraceStepPhases[kTraceStepCount] = {TracePhase::frame,
                                                                 HASHGRID_TRACE_STEPS(HASHGRID_TRACE_STEP_PHASE)};
#undef HASHGRID_TRACE_STEP_PHASE

} // namespace hashgrid::detail

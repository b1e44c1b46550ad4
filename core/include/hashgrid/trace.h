// SPDX-License-Identifier: MIT
/// @file
/// Frame tracing: every phase of a Grid / BoxGrid call and every chunk the
/// thread backend ran, as spans in a fixed ring in caller memory, exported as
/// Chrome trace-event JSON (Perfetto, chrome://tracing); and zone hooks that
/// hand the same phases to a game's own profiler.
///
/// Recipe:
///
///     hashgrid::MemoryRequirements req = hashgrid::Trace::memory_requirements(8192); // events
///     void* memory = hashgrid::aligned_alloc_bytes(req.bytes, req.alignment);         // or your own
///     hashgrid::Trace trace;
///     hashgrid::Status s = trace.init(8192, memory, req.bytes); // or trace.init_allocate(8192)
///     grid.set_trace(&trace);                        // off again: grid.set_trace(nullptr)
///     ...
///     trace.clear();                                 // keep one frame only
///     trace.begin_frame();
///     s = grid.rebuild(spans, backend);
///     hashgrid::PairResult p = grid.find_pairs(pairs, capacity, backend);
///     trace.end_frame();
///     std::FILE* f = std::fopen("frame.json", "wb");
///     hashgrid::TraceExport e = hashgrid::write_chrome_trace(trace, f); // open it in ui.perfetto.dev
///     std::fclose(f);
///
/// What is recorded. A span per phase of each traced call on the calling
/// thread (rebuild and its steps, find_pairs and its sweep, neighbor_lists,
/// find_pairs_with, each query batch, the box grid's rebuild, pairs and
/// prepare_box_queries), nested as the calls nest, and a span per chunk on the
/// worker that ran it (the backend's worker index), named after the phase
/// that started the loop. Single queries are not traced (one span per query
/// would cost more than most queries); their batches are.
///
/// Cost. With no trace attached (the default) each phase costs one predictable
/// branch and chunks cost nothing: the backend is used as given. With a trace
/// attached the backend is wrapped, and each chunk and phase costs two clock
/// reads and one 40-byte event written into the ring (one atomic add).
/// Nothing is allocated per frame either way. docs/user-guide.md ("Tracing a
/// frame") has measured figures.
///
/// The ring keeps the newest `capacity` events: when it is full a new event
/// overwrites the oldest, and dropped() counts what was overwritten. An event
/// is written when its span ends, so the spans of a call outlive those of its
/// children. Writers may be any threads at once (chunks record concurrently);
/// reading (event(), export) and clear() must not overlap a traced call.
///
/// Timestamps are steady-clock nanoseconds, the clock of
/// hashgrid/platform/timer.h now_ns().
#pragma once

#include "hashgrid/config.h"
#include "hashgrid/status.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace hashgrid {

/// What a span measures. Values keep their numbers; new phases are added at the end.
enum class TracePhase : uint16_t {
    frame,             ///< Trace::begin_frame() .. end_frame().
    rebuild,           ///< Grid::rebuild.
    rebuild_keys,      ///< Validation and cell coordinates (bounded: and counts).
    rebuild_cells,     ///< Unbounded: each particle's cell, through the dense box or the hashed table.
    rebuild_scan,      ///< Scan of the bucket counts.
    rebuild_scatter,   ///< Particles into buckets.
    rebuild_sort,      ///< Per-bucket sort by cell and the sorted gather.
    rebuild_compact,   ///< Unbounded dense path: the box's cells compacted into the frame's table.
    find_pairs,        ///< Grid::find_pairs.
    pair_sweep,        ///< The pair sweep with the overlapped copy into the caller's buffer.
    pair_prefix,       ///< Over max_pairs: completing the canonical prefix.
    find_pairs_with,   ///< Grid::find_pairs_with.
    neighbor_lists,    ///< Grid::neighbor_lists.
    query_point_batch, ///< query_point_batch (particle or box grid).
    query_radius_batch,
    query_box_batch,
    query_frustum_batch,
    query_nearest_batch,
    query_ray_batch,      ///< Box grids: query_ray_batch and query_ray_first_batch.
    box_rebuild,          ///< BoxGrid::rebuild.
    box_rebuild_validate, ///< Validation, cell ranges and counts.
    box_rebuild_entries,  ///< Entries into cells (radix sort) and the frame's arrays.
    box_find_pairs,       ///< BoxGrid::find_pairs.
    box_pair_search,      ///< The pair search into the pool.
    box_pair_publish,     ///< Pairs from the pool into the caller's buffer (empty with one worker: written in place).
    box_find_pairs_with,  ///< BoxGrid::find_pairs_with.
    prepare_box_queries,  ///< prepare_box_queries on a view of a BoxGrid with a trace.
    rebuild_presorted,    ///< Input already in cell order: cells from its runs and the straight copy.
    rebuild_order,        ///< The check whether the input is already in cell order.
    query_face_batch,     ///< query_face_batch.
    box_rebuild_update,   ///< Instead of box_rebuild_entries: few objects changed cells, merged into the last frame.
    /// Input in last frame's order (bounded, or unbounded over last frame's
    /// dense box): the particles that changed cells merged into the others.
    rebuild_merge,
    /// Instead of box_rebuild_validate, in BoxGrid::rebuild(store): only the
    /// objects the store's change log lists (followed by box_rebuild_validate
    /// when they are too many to take alone).
    box_rebuild_listed,
    // Nested in rebuild_cells, for frames that go through the hashed table
    // (RebuildTimings::table_clear .. table_lookup).
    rebuild_table_clear,  ///< Emptying last frame's table slots.
    rebuild_table_insert, ///< Every particle's cell key into the table.
    rebuild_table_sort,   ///< The distinct cells compacted and sorted.
    rebuild_table_lookup, ///< Each particle's cell index and the bucket counts.
};

/// Number of TracePhase values.
inline constexpr uint32_t kTracePhaseCount = static_cast<uint32_t>(TracePhase::rebuild_table_lookup) + 1;

/// Stable name of a phase, e.g. "rebuild.keys" (a static string; "unknown" when out of range).
const char* trace_phase_name(TracePhase phase);

/// Whether a span is a phase (calling thread) or a chunk (a backend worker).
enum class TraceKind : uint8_t { phase, chunk };

/// The `thread` of hook calls for phases (chunks pass their worker index).
inline constexpr uint32_t kTraceCallingThread = 0xffffffffu;

/// One recorded span.
struct TraceEvent {
    uint64_t begin_ns = 0;                ///< Start, steady clock (platform/timer.h's now_ns).
    uint64_t end_ns = 0;                  ///< End, the same clock.
    TracePhase phase = TracePhase::frame; ///< The phase, or the phase whose loop ran the chunk.
    TraceKind kind = TraceKind::phase;    ///< A phase (calling thread) or a chunk (worker).
    /// chunk: the backend's worker index (< ThreadBackend::worker_count).
    /// phase: the calling thread's trace slot, a small number given to each
    /// thread the first time it records a phase (0, 1, 2, ... per process).
    uint32_t thread = 0;
    /// chunk: its items [item_begin, item_end) of the phase's loop; phase: 0, 0.
    uint32_t item_begin = 0;
    uint32_t item_end = 0; ///< See item_begin.
};

/// A profiler zone callback: name is a static string (trace_phase_name), thread
/// is kTraceCallingThread for phases or the worker index for chunks.
using TraceZoneFn = void (*)(void* context, const char* name, uint32_t thread);

/// Routes phases (and optionally chunks) to a game's own profiler: begin and
/// end are called in pairs, properly nested per thread, on the thread that
/// runs the phase or chunk. Plain function pointers; either may be null.
struct TraceHooks {
    TraceZoneFn begin = nullptr; ///< Called when a phase (or chunk) starts.
    TraceZoneFn end = nullptr;   ///< Called when it ends.
    void* context = nullptr;     ///< Passed to both.
    /// Also call them around every chunk, on the worker thread that runs it
    /// (they must then be thread-safe).
    bool chunks = false;
};

/// Event ring plus hooks. Attach it to grids with Grid::set_trace /
/// BoxGrid::set_trace (one trace may serve several grids). A trace that was
/// never init()ed has no ring: it records nothing but still calls its hooks.
/// Not copyable; the ring is the block given to init().
class Trace {
public:
    Trace() = default;
    ~Trace();
    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;

    /// Bytes and alignment of a ring of `capacity` events (40 bytes each).
    /// invalid_config unless 1 <= capacity < 2^31.
    [[nodiscard]] static MemoryRequirements memory_requirements(uint32_t capacity);

    /// Lays the ring out in caller memory (not owned) and clears it; the hooks
    /// are kept. invalid_config, memory_too_small, memory_misaligned leave the
    /// trace as it was. Not while a traced call runs.
    [[nodiscard]] Status init(uint32_t capacity, void* memory, size_t bytes);
    /// Same, allocating the block once (freed by the destructor or a later init).
    [[nodiscard]] Status init_allocate(uint32_t capacity);

    /// Sets the hooks (all null: none). Not while a traced call runs.
    void set_hooks(const TraceHooks& hooks) { hooks_ = hooks; }
    /// The hooks set by set_hooks().
    [[nodiscard]] const TraceHooks& hooks() const { return hooks_; }

    /// Forgets every event (recorded() and dropped() restart at 0).
    void clear();

    /// Records a TracePhase::frame span from begin_frame() to end_frame() (and
    /// calls the hooks), on the calling thread. One frame at a time; an
    /// end_frame() without a begin_frame() does nothing.
    void begin_frame();
    /// Ends the frame begin_frame() started (see there).
    void end_frame();

    /// Ring size in events (0 before init).
    [[nodiscard]] uint32_t capacity() const { return capacity_; }
    /// Events recorded since init or clear, kept or not.
    [[nodiscard]] uint64_t recorded() const { return head_.load(std::memory_order_acquire); }
    /// Events kept: min(recorded(), capacity()).
    [[nodiscard]] uint32_t size() const;
    /// Events overwritten by newer ones: recorded() - size().
    [[nodiscard]] uint64_t dropped() const { return recorded() - size(); }
    /// The i-th kept event, oldest first (i < size()). False when i is out of
    /// range, or when the slot was torn by two writers lapping the ring at
    /// once (possible only when one writer stalls while `capacity` other
    /// events are recorded; size the ring above a frame's events).
    bool event(uint32_t i, TraceEvent& out) const;

    /// Library side: one finished span into the ring. Thread-safe.
    void record(const TraceEvent& event);

private:
    struct Slot;

    Slot* slots_ = nullptr;
    uint32_t capacity_ = 0;
    TraceHooks hooks_{};
    uint64_t frame_begin_ns_ = 0;
    void* owned_memory_ = nullptr;
    /// Next event number; its own cache line (every writer adds to it).
    alignas(64) std::atomic<uint64_t> head_{0};
};

/// Receives the exported text in pieces; return false to stop writing (the
/// export then counts the remaining bytes without writing them).
using TraceWriteFn = bool (*)(void* context, const char* data, size_t size);

/// Outcome of an export.
struct [[nodiscard]] TraceExport {
    /// ok, or output_too_small with needed = the full size in bytes (a buffer
    /// that is too small, or a writer that returned false; what was written
    /// is a prefix of the full text).
    Status status;
    /// Bytes of the full text.
    uint64_t bytes = 0;
    /// Bytes actually written.
    uint64_t written = 0;
    /// Spans exported (events the ring holds that were not torn).
    uint64_t events = 0;
};

/// Writes the kept events as Chrome trace-event JSON: an object whose
/// "traceEvents" array holds one "X" (complete) event per span, with "ts" and
/// "dur" in microseconds (3 decimals: nanoseconds) from the earliest kept
/// span. Process 1 ("hashgrid calls") holds the phases, one track per calling
/// thread (tid = TraceEvent::thread); process 2 ("hashgrid workers") holds the
/// chunks, one track per worker (tid = worker index), with the chunk's items
/// in "args". "otherData" gives recorded, dropped and capacity. Allocates
/// nothing: the text is produced in small pieces. Not while a traced call runs.
[[nodiscard]] TraceExport write_chrome_trace(const Trace& trace, TraceWriteFn write, void* context);
/// Into a caller buffer of `capacity` bytes (not NUL-terminated).
[[nodiscard]] TraceExport write_chrome_trace(const Trace& trace, char* buffer, size_t capacity);
/// Into a stdio stream (fwrite; a short write is output_too_small).
[[nodiscard]] TraceExport write_chrome_trace(const Trace& trace, std::FILE* file);

} // namespace hashgrid

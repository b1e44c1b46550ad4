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
/// thread (TracePhase: rebuild, find_pairs, neighbor_lists, find_pairs_with,
/// each query batch, the box grid's rebuild, pairs and prepare_box_queries),
/// nested as the calls nest; inside it a span per internal step (rebuild.keys,
/// find_pairs.sweep, box.rebuild.validate, ...: TraceEvent::step); and a span
/// per chunk on the worker that ran it (the backend's worker index), named
/// after the phase or step that started the loop. Single queries are not
/// traced (one span per query would cost more than most queries); their
/// batches are. Phase numbers and all names are stable; step ids are not.
///
/// Cost. With no trace attached (the default) each phase or step costs one
/// predictable branch and chunks cost nothing: the backend is used as given.
/// With a trace attached the backend is wrapped, and each chunk, phase and
/// step costs two clock reads and one 40-byte ring slot written (one atomic
/// add). Nothing is allocated per frame either way. docs/user-guide.md
/// ("Tracing a frame") has measured figures.
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

/// The user call a span belongs to: a call of Grid, BoxGrid or a query batch
/// (and the frame around them). The numbers are stable from 0.1 on: a new
/// phase is only ever appended, none is renumbered or removed. The steps a
/// call goes through inside its phase are not phases: they are named by
/// TraceEvent::step (trace_event_name()).
enum class TracePhase : uint16_t {
    frame = 0,                ///< Trace::begin_frame() .. end_frame().
    rebuild = 1,              ///< Grid::rebuild.
    find_pairs = 2,           ///< Grid::find_pairs.
    find_pairs_with = 3,      ///< Grid::find_pairs_with.
    neighbor_lists = 4,       ///< Grid::neighbor_lists.
    query_point_batch = 5,    ///< query_point_batch (particle or box grid).
    query_radius_batch = 6,   ///< query_radius_batch (particle or box grid).
    query_box_batch = 7,      ///< query_box_batch (particle or box grid).
    query_frustum_batch = 8,  ///< query_frustum_batch (particle or box grid).
    query_nearest_batch = 9,  ///< query_nearest_batch (particle or box grid).
    query_ray_batch = 10,     ///< Box grids: query_ray_batch and query_ray_first_batch.
    query_face_batch = 11,    ///< query_face_batch.
    box_rebuild = 12,         ///< BoxGrid::rebuild (from spans or from a store).
    box_find_pairs = 13,      ///< BoxGrid::find_pairs.
    box_find_pairs_with = 14, ///< BoxGrid::find_pairs_with.
    prepare_box_queries = 15, ///< prepare_box_queries on a view of a BoxGrid with a trace.
};

/// Number of TracePhase values.
inline constexpr uint32_t kTracePhaseCount = static_cast<uint32_t>(TracePhase::prepare_box_queries) + 1;

/// Name of a phase, e.g. "rebuild", "box.find_pairs" (a static string;
/// "unknown" when out of range). Names are stable.
const char* trace_phase_name(TracePhase phase);

/// Whether a span is a phase (calling thread) or a chunk (a backend worker).
enum class TraceKind : uint8_t { phase, chunk };

/// The `thread` of hook calls for phases (chunks pass their worker index).
inline constexpr uint32_t kTraceCallingThread = 0xffffffffu;

/// One recorded span.
struct TraceEvent {
    uint64_t begin_ns = 0; ///< Start, steady clock (platform/timer.h's now_ns).
    uint64_t end_ns = 0;   ///< End, the same clock.
    /// The user call the span is inside: the phase itself, one of its steps,
    /// or a chunk of a loop the phase (or one of its steps) ran.
    TracePhase phase = TracePhase::frame;
    TraceKind kind = TraceKind::phase; ///< A phase or step (calling thread) or a chunk (worker).
    /// 0: the phase's own span (or a chunk of its own loop). Otherwise an
    /// internal step of the phase, e.g. "rebuild.keys" (or a chunk of the
    /// step's loop). Step ids may change in any version: compare names
    /// (trace_event_name(), trace_step_name()), which are stable.
    uint8_t step = 0;
    /// chunk: the backend's worker index (< ThreadBackend::worker_count).
    /// phase: the calling thread's trace slot, a small number given to each
    /// thread the first time it records a phase (0, 1, 2, ... per process).
    uint32_t thread = 0;
    /// chunk: its items [item_begin, item_end) of the phase's loop; phase: 0, 0.
    uint32_t item_begin = 0;
    uint32_t item_end = 0; ///< See item_begin.
};

/// Name of a step id, e.g. "rebuild.keys", "box.find_pairs.search" (a static
/// string; "unknown" for 0 and for ids out of range). Ids are not stable
/// across versions, names are.
const char* trace_step_name(uint32_t step);

/// Name of an event's span: its step's name, or its phase's when step is 0
/// (a static string; "unknown" when out of range). The names the Chrome
/// export and the hooks use.
const char* trace_event_name(const TraceEvent& event);

/// A profiler zone callback: name is a static string (trace_event_name), thread
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

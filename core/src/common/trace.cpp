// SPDX-License-Identifier: MIT
// The trace ring (hashgrid/trace.h), the names of phases and steps
// (trace_steps.h), and the recording wrapper of a call's backend
// (trace_scope.h).
//
// Ring. Writers claim event numbers with one atomic add on `head_`; event i
// goes to slot i % capacity. Each slot's fields are relaxed atomics (writers
// of different laps may meet in one slot without a data race), and its
// sequence word, stored last with release, says which event the slot holds:
// a reader keeps slot i % capacity as event i only when the word is i + 1.
#include "common/trace_scope.h"

#include "common/block_layout.h"
#include "common/clock.h"

#include "hashgrid/assert.h"

#include <atomic>
#include <cstring>
#include <new>

namespace hashgrid {

using namespace detail;

struct Trace::Slot {
    std::atomic<uint64_t> seq;   // event number + 1; 0: empty
    std::atomic<uint64_t> begin; // ns
    std::atomic<uint64_t> end;   // ns
    std::atomic<uint64_t> what;  // phase | kind << 16 | step << 24 | thread << 32
    std::atomic<uint64_t> items; // item_begin | item_end << 32
};
static_assert(sizeof(std::atomic<uint64_t>) == 8, "a ring slot is 40 bytes");
static_assert(sizeof(TraceEvent) == 32, "TraceEvent: step lives in the padding after kind");

namespace {

constexpr const char* kPhaseNames[kTracePhaseCount] = {
    "frame",
    "rebuild",
    "find_pairs",
    "find_pairs_with",
    "neighbor_lists",
    "query_point_batch",
    "query_radius_batch",
    "query_box_batch",
    "query_frustum_batch",
    "query_nearest_batch",
    "query_ray_batch",
    "query_face_batch",
    "box.rebuild",
    "box.find_pairs",
    "box.find_pairs_with",
    "box.prepare_queries",
};

/// Name of a span of `phase`'s `step` (none: the phase's own).
const char* span_name(TracePhase phase, TraceStep step) {
    return step == TraceStep::none ? trace_phase_name(phase) : trace_step_name(static_cast<uint32_t>(step));
}

/// Next trace slot for a thread that records its first phase.
std::atomic<uint32_t> g_next_thread_slot{0};

/// This thread's trace slot: assigned on first use, a small number per
/// process (never reused). Plain thread_local of a trivial type: no
/// constructor runs and nothing is allocated where the library is linked
/// statically (static TLS).
uint32_t calling_thread_slot() {
    thread_local uint32_t slot = ~0u;
    if (slot == ~0u) [[unlikely]]
        slot = g_next_thread_slot.fetch_add(1, std::memory_order_relaxed);
    return slot;
}

/// One chunk loop's call through the wrapper.
struct ChunkCall {
    ChunkFn fn;
    void* context;
    Trace* trace;
    TracePhase phase;
    TraceStep step;
};

void traced_chunk(void* context, uint32_t begin, uint32_t end, uint32_t worker) {
    const ChunkCall& call = *static_cast<const ChunkCall*>(context);
    const TraceHooks& hooks = call.trace->hooks();
    const char* name = span_name(call.phase, call.step);
    const bool zones = hooks.chunks;
    if (zones && hooks.begin != nullptr) hooks.begin(hooks.context, name, worker);
    TraceEvent e;
    e.begin_ns = clock_ns();
    call.fn(call.context, begin, end, worker);
    e.end_ns = clock_ns();
    e.phase = call.phase;
    e.step = static_cast<uint8_t>(call.step);
    e.kind = TraceKind::chunk;
    e.thread = worker;
    e.item_begin = begin;
    e.item_end = end;
    call.trace->record(e);
    if (zones && hooks.end != nullptr) hooks.end(hooks.context, name, worker);
}

} // namespace

const char* trace_phase_name(TracePhase phase) {
    const auto i = static_cast<uint32_t>(phase);
    return i < kTracePhaseCount ? kPhaseNames[i] : "unknown";
}

const char* trace_step_name(uint32_t step) { return step < kTraceStepCount ? kTraceStepNames[step] : "unknown"; }

const char* trace_event_name(const TraceEvent& event) {
    return event.step == 0 ? trace_phase_name(event.phase) : trace_step_name(event.step);
}

// ---------------------------------------------------------------------------
// Trace

Trace::~Trace() { aligned_free_bytes(owned_memory_); }

MemoryRequirements Trace::memory_requirements(uint32_t capacity) {
    const Status valid = capacity == 0 || capacity >= (1u << 31)
                             ? make_status(StatusCode::invalid_config, "Trace capacity must be in [1, 2^31)")
                             : Status{};
    return block_requirements(valid, [&] {
        Layout l(nullptr);
        l.take<Slot>(capacity);
        return l.bytes();
    });
}

Status Trace::init(uint32_t capacity, void* memory, size_t bytes) {
    return init_on_block(memory_requirements(capacity), memory, bytes, owned_memory_, [&](unsigned char* base) {
        Layout l(base);
        Slot* slots = l.take<Slot>(capacity);
        for (uint32_t i = 0; i < capacity; ++i)
            new (&slots[i]) Slot{{0}, {0}, {0}, {0}, {0}};
        slots_ = slots;
        capacity_ = capacity;
        head_.store(0, std::memory_order_release);
    });
}

Status Trace::init_allocate(uint32_t capacity) {
    return init_allocate_block(memory_requirements(capacity), owned_memory_,
                               [&](void* block, size_t bytes) { return init(capacity, block, bytes); });
}

void Trace::clear() {
    for (uint32_t i = 0; i < capacity_; ++i)
        slots_[i].seq.store(0, std::memory_order_relaxed);
    head_.store(0, std::memory_order_release);
}

uint32_t Trace::size() const {
    const uint64_t n = recorded();
    return n < capacity_ ? static_cast<uint32_t>(n) : capacity_;
}

void Trace::record(const TraceEvent& e) {
    if (capacity_ == 0) return;
    const uint64_t i = head_.fetch_add(1, std::memory_order_relaxed);
    Slot& s = slots_[i % capacity_];
    s.begin.store(e.begin_ns, std::memory_order_relaxed);
    s.end.store(e.end_ns, std::memory_order_relaxed);
    s.what.store(uint64_t{static_cast<uint16_t>(e.phase)} | uint64_t{static_cast<uint8_t>(e.kind)} << 16 |
                     uint64_t{e.step} << 24 | uint64_t{e.thread} << 32,
                 std::memory_order_relaxed);
    s.items.store(uint64_t{e.item_begin} | uint64_t{e.item_end} << 32, std::memory_order_relaxed);
    s.seq.store(i + 1, std::memory_order_release);
}

bool Trace::event(uint32_t i, TraceEvent& out) const {
    const uint64_t total = recorded();
    const uint32_t kept = size();
    if (i >= kept) return false;
    const uint64_t number = total - kept + i;
    const Slot& s = slots_[number % capacity_];
    if (s.seq.load(std::memory_order_acquire) != number + 1) return false;
    const uint64_t what = s.what.load(std::memory_order_relaxed);
    const uint64_t items = s.items.load(std::memory_order_relaxed);
    out.begin_ns = s.begin.load(std::memory_order_relaxed);
    out.end_ns = s.end.load(std::memory_order_relaxed);
    out.phase = static_cast<TracePhase>(what & 0xffffu);
    out.kind = static_cast<TraceKind>((what >> 16) & 0xffu);
    out.step = static_cast<uint8_t>((what >> 24) & 0xffu);
    out.thread = static_cast<uint32_t>(what >> 32);
    out.item_begin = static_cast<uint32_t>(items);
    out.item_end = static_cast<uint32_t>(items >> 32);
    // A slot that a stalled writer of an earlier lap finished last is caught
    // by its number; checking the number again catches one rewritten while read.
    return s.seq.load(std::memory_order_acquire) == number + 1;
}

void Trace::begin_frame() {
    if (hooks_.begin != nullptr) hooks_.begin(hooks_.context, trace_phase_name(TracePhase::frame), kTraceCallingThread);
    frame_begin_ns_ = clock_ns();
}

void Trace::end_frame() {
    if (frame_begin_ns_ == 0) return; // no begin_frame(): nothing to close
    TraceEvent e;
    e.begin_ns = frame_begin_ns_;
    e.end_ns = clock_ns();
    e.phase = TracePhase::frame;
    e.thread = calling_thread_slot();
    frame_begin_ns_ = 0;
    record(e);
    if (hooks_.end != nullptr) hooks_.end(hooks_.context, trace_phase_name(TracePhase::frame), kTraceCallingThread);
}

// ---------------------------------------------------------------------------
// PhaseTrace

namespace detail {

void PhaseTrace::wrap(const ThreadBackend& backend) {
    inner_ = &backend;
    traced_.parallel_for = &PhaseTrace::traced_parallel_for;
    traced_.state = this;
    traced_.worker_count = backend.worker_count;
    backend_ = &traced_;
    thread_ = calling_thread_slot();
}

void PhaseTrace::traced_parallel_for(void* state, uint32_t count, uint32_t grain, ChunkFn fn, void* context) {
    const auto& self = *static_cast<const PhaseTrace*>(state);
    const uint32_t top = self.depth_ < kMaxDepth ? self.depth_ : kMaxDepth;
    ChunkCall call{fn, context, self.trace_, top > 0 ? self.phase_[top - 1] : TracePhase::frame,
                   top > 0 ? self.step_[top - 1] : TraceStep::none};
    const ThreadBackend& inner = *self.inner_;
    if (inner.parallel_for != nullptr) {
        inner.parallel_for(inner.state, count, grain, &traced_chunk, &call);
        return;
    }
    // A backend without parallel_for: every chunk in order here (parallel_chunks' rule).
    const uint32_t step = grain == 0 ? count : grain;
    for (uint32_t begin = 0; begin < count; begin += step)
        traced_chunk(&call, begin, count - begin < step ? count : begin + step, 0u);
}

TracePhase PhaseTrace::current_phase() const {
    const uint32_t top = depth_ < kMaxDepth ? depth_ : kMaxDepth;
    return top > 0 ? phase_[top - 1] : TracePhase::frame;
}

void PhaseTrace::open(TracePhase phase, TraceStep step, uint64_t now) {
    if (depth_ < kMaxDepth) {
        phase_[depth_] = phase;
        step_[depth_] = step;
        begin_ns_[depth_] = now;
    }
    ++depth_;
}

void PhaseTrace::close_top(uint64_t now) {
    HASHGRID_ASSERT(depth_ > 0, "PhaseTrace: end without begin");
    if (depth_ == 0) return;
    --depth_;
    if (depth_ >= kMaxDepth) return;
    TraceEvent e;
    e.begin_ns = begin_ns_[depth_];
    e.end_ns = now;
    e.phase = phase_[depth_];
    e.step = static_cast<uint8_t>(step_[depth_]);
    e.thread = thread_;
    trace_->record(e);
}

void PhaseTrace::push(TracePhase phase, TraceStep step) {
    HASHGRID_ASSERT(step == TraceStep::none || kTraceStepPhases[static_cast<uint32_t>(step)] == phase,
                    "PhaseTrace: a step begun outside its phase (trace_steps.h)");
    const TraceHooks& h = trace_->hooks();
    if (h.begin != nullptr) h.begin(h.context, span_name(phase, step), kTraceCallingThread);
    open(phase, step, clock_ns());
}

void PhaseTrace::pop() {
    const bool kept = depth_ > 0 && depth_ <= kMaxDepth;
    const TracePhase phase = kept ? phase_[depth_ - 1] : TracePhase::frame;
    const TraceStep step = kept ? step_[depth_ - 1] : TraceStep::none;
    close_top(clock_ns());
    const TraceHooks& h = trace_->hooks();
    if (h.end != nullptr) h.end(h.context, span_name(phase, step), kTraceCallingThread);
}

void PhaseTrace::swap(TraceStep step) {
    const TraceHooks& h = trace_->hooks();
    const bool kept = depth_ > 0 && depth_ <= kMaxDepth;
    const TracePhase phase = current_phase();
    const TraceStep old = kept ? step_[depth_ - 1] : TraceStep::none;
    HASHGRID_ASSERT(!kept || old != TraceStep::none, "PhaseTrace: next() closes a step, not a phase");
    HASHGRID_ASSERT(!kept || kTraceStepPhases[static_cast<uint32_t>(step)] == phase,
                    "PhaseTrace: a step begun outside its phase (trace_steps.h)");
    const uint64_t now = clock_ns();
    close_top(now);
    if (h.end != nullptr) h.end(h.context, span_name(phase, old), kTraceCallingThread);
    if (h.begin != nullptr) h.begin(h.context, span_name(phase, step), kTraceCallingThread);
    open(phase, step, now);
}

void PhaseTrace::close_all() {
    while (depth_ > 0)
        pop();
}

} // namespace detail
} // namespace hashgrid

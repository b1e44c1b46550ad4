// SPDX-License-Identifier: MIT
// The library side of tracing (hashgrid/trace.h): PhaseTrace records the
// phase of one call and its steps (trace_steps.h) and wraps the call's
// backend so that every chunk is recorded too. With no trace attached it is a
// null pointer and a reference to the caller's backend: each begin/end/next
// is one predictable branch, and the chunks run through the caller's backend
// untouched.
#pragma once

#include "common/trace_steps.h"

#include "hashgrid/thread_backend.h"
#include "hashgrid/trace.h"

#include <cstdint>

namespace hashgrid::detail {

class PhaseTrace {
public:
    /// Deepest nesting of spans (the phase and its steps) one call records
    /// (deeper begins are not recorded).
    static constexpr uint32_t kMaxDepth = 4;

    PhaseTrace(Trace* trace, const ThreadBackend& backend) : trace_(trace), backend_(&backend) {
        if (trace_ != nullptr) [[unlikely]]
            wrap(backend);
    }
    ~PhaseTrace() {
        if (trace_ != nullptr) [[unlikely]]
            close_all();
    }
    PhaseTrace(const PhaseTrace&) = delete;
    PhaseTrace& operator=(const PhaseTrace&) = delete;

    /// The backend every loop of the call must use: the caller's, or the
    /// recording wrapper around it.
    [[nodiscard]] const ThreadBackend& backend() const { return *backend_; }

    /// Opens a public phase (the call itself) inside the current span.
    void begin(TracePhase phase) {
        if (trace_ != nullptr) [[unlikely]]
            push(phase, TraceStep::none);
    }
    /// Opens a step of the current phase inside the current span.
    void begin(TraceStep step) {
        if (trace_ != nullptr) [[unlikely]]
            push(current_phase(), step);
    }
    /// Closes the current span.
    void end() {
        if (trace_ != nullptr) [[unlikely]]
            pop();
    }
    /// Closes the current span (a step) and opens `step` of the same phase at
    /// the same instant, so consecutive steps tile their parent without gaps.
    void next(TraceStep step) {
        if (trace_ != nullptr) [[unlikely]]
            swap(step);
    }

private:
    void wrap(const ThreadBackend& backend);
    [[nodiscard]] TracePhase current_phase() const;
    void push(TracePhase phase, TraceStep step);
    void pop();
    void swap(TraceStep step);
    void close_all();
    void close_top(uint64_t now);
    void open(TracePhase phase, TraceStep step, uint64_t now);
    static void traced_parallel_for(void* state, uint32_t count, uint32_t grain, ChunkFn fn, void* context);

    Trace* trace_;
    const ThreadBackend* backend_;
    const ThreadBackend* inner_ = nullptr;
    ThreadBackend traced_{};
    uint32_t depth_ = 0;
    uint32_t thread_ = 0;
    // Written by open() before any read (no stores here: the untraced path
    // only sets the two pointers above).
    TracePhase phase_[kMaxDepth];
    TraceStep step_[kMaxDepth];
    uint64_t begin_ns_[kMaxDepth];
};

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
// Where every query of both grid kinds puts its results, and the results it
// returns. A query's walk is written once over a sink type; the forms differ
// only in the sink, so the visitor form sees the buffer form's order:
//
//   BufferSink          the buffer form: writes the first `capacity` results
//                       and counts all of them (output_too_small carries the
//                       exact total);
//   CountingBufferSink  the same, also counting the walk's work (QueryStats:
//                       batches given a stats pointer); only this type pays
//                       for counting, note_*() compile to nothing otherwise;
//   VisitorSink         the visitor form: one call per result until the
//                       visitor returns false, then the walk stops.
//
// Buffer sinks also take whole runs of candidates for a SIMD run kernel
// (RunCollector): a run is held while the buffer has room for every
// candidate held, so the kernel's hits always fit.
#pragma once

#include "common/status_make.h"

#include "hashgrid/assert.h"
#include "hashgrid/query_types.h"

#include <cstdint>
#include <type_traits>

namespace hashgrid::detail {

/// The buffer form's sink.
struct BufferSink {
    uint32_t* out;
    uint64_t capacity;
    uint64_t total = 0;

    /// Writes the result if it fits and counts it; the walk goes on.
    bool add(uint32_t value) {
        if (total < capacity) out[total] = value;
        ++total;
        return true;
    }
    [[nodiscard]] static constexpr bool done() { return false; }
    /// Room for `held` more results, all of them written.
    [[nodiscard]] bool has_room(uint64_t held) const { return total <= capacity && capacity - total >= held; }
};

/// BufferSink that also counts the walk's work.
struct CountingBufferSink : BufferSink {
    QueryStats stats{};
};

/// The visitor form's sink: total = calls made.
struct VisitorSink {
    QueryVisitor visitor;
    uint64_t total = 0;
    bool stopped = false;

    /// Calls the visitor; false (and done) once it asked to stop.
    bool add(uint32_t value) {
        HASHGRID_ASSERT(!stopped, "query: a result after the visitor stopped the query");
        ++total;
        stopped = !visitor.visit(visitor.context, value);
        return !stopped;
    }
    [[nodiscard]] bool done() const { return stopped; }
};

/// Sinks that write to a buffer (and so can take runs for a run kernel).
template <typename Sink>
inline constexpr bool kBufferSink = std::is_base_of_v<BufferSink, Sink>;

/// A walk read `cells` runs of stored entries (QueryStats::cells).
template <typename Sink>
inline void note_cells(Sink& sink, uint64_t cells = 1) {
    if constexpr (requires { sink.stats; }) sink.stats.cells += cells;
    (void)cells;
}
/// A walk gave `candidates` candidates their exact test (QueryStats::tested).
template <typename Sink>
inline void note_tested(Sink& sink, uint64_t candidates = 1) {
    if constexpr (requires { sink.stats; }) sink.stats.tested += candidates;
    (void)candidates;
}
/// A walk tested one cell box against a frustum's planes (QueryStats::cull_tests).
template <typename Sink>
inline void note_cull(Sink& sink) {
    if constexpr (requires { sink.stats; }) ++sink.stats.cull_tests;
}

/// A query's runs of candidates on their way to a run kernel: `Runs` holds
/// begin[], end[] (and need[] when the kernel takes per-run flags), count,
/// candidates and kCapacity; `call(out, runs)` runs the kernel and returns
/// how many results it wrote at `out`. With a sink that is not a buffer sink
/// nothing is held and every run is declined.
template <typename Sink, typename Runs, typename Call>
struct RunCollector {
    Sink& sink;
    Call call;
    Runs runs{};

    RunCollector(Sink& s, Call c) : sink(s), call(c) {}

    /// Takes the run [b, e) (true), or hands the held runs to the kernel and
    /// declines (false: the caller tests [b, e) one by one, counting past
    /// the capacity).
    bool take(uint32_t b, uint32_t e, uint32_t need = 0) {
        if constexpr (kBufferSink<Sink>) {
            const uint64_t held = runs.candidates + (e - b);
            if (sink.has_room(held)) {
                runs.begin[runs.count] = b;
                runs.end[runs.count] = e;
                if constexpr (requires { runs.need; }) runs.need[runs.count] = need;
                runs.candidates = held;
                if (++runs.count == Runs::kCapacity) finish();
                return true;
            }
            finish();
        }
        (void)b;
        (void)e;
        (void)need;
        return false;
    }
    /// Hands the held runs to the kernel (the walk's end, or before a run it
    /// declines).
    void finish() {
        if constexpr (kBufferSink<Sink>) {
            if (runs.count == 0) return;
            sink.total += call(sink.out + sink.total, runs);
            runs.count = 0;
            runs.candidates = 0;
        }
    }
};

/// The run collector of `sink` for kernels over `Runs`.
template <typename Runs, typename Sink, typename Call>
RunCollector<Sink, Runs, Call> collect_runs(Sink& sink, Call call) {
    return RunCollector<Sink, Runs, Call>(sink, call);
}

/// A query that ran: ok, or output_too_small with needed = total.
inline QueryResult query_finish(uint64_t total, uint64_t capacity) {
    QueryResult r;
    r.total = total;
    r.written = total < capacity ? total : capacity;
    if (total > capacity)
        r.status = capacity_status(StatusCode::output_too_small, "query output buffer too small", total);
    return r;
}

/// A query refused before it ran: nothing written.
inline QueryResult query_refused(Status status) {
    QueryResult r;
    r.status = status;
    return r;
}

} // namespace hashgrid::detail

// Programmer errors of a query's arguments: asserted (debug and test builds
// stop there first), then reported as invalid_argument in every build.
#define HASHGRID_REQUIRE_ARGUMENT(cond, message)                                                                       \
    do {                                                                                                               \
        HASHGRID_ASSERT(cond, message);                                                                                \
        if (!(cond))                                                                                                   \
            return ::hashgrid::detail::query_refused(                                                                  \
                ::hashgrid::detail::make_status(::hashgrid::StatusCode::invalid_argument, message));                   \
    } while (0)

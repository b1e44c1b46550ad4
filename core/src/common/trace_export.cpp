// SPDX-License-Identifier: MIT
// Chrome trace-event JSON export of a Trace (hashgrid/trace.h). The text is
// built in a small stack buffer and handed to the writer piece by piece:
// nothing is allocated, whatever the ring's size.
#include "common/status_make.h"

#include "hashgrid/trace.h"

#include <cstdint>
#include <cstring>

namespace hashgrid {

namespace {

/// Buffers output for the writer; counts every byte, written or not.
class Out {
public:
    Out(TraceWriteFn write, void* context) : write_(write), context_(context) {}

    void text(const char* s) { bytes(s, std::strlen(s)); }
    void bytes(const char* s, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            if (length_ == sizeof buffer_) flush();
            buffer_[length_++] = s[i];
        }
    }
    void number(uint64_t v) {
        char digits[20];
        size_t n = 0;
        do {
            digits[n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0);
        char text[20];
        for (size_t i = 0; i < n; ++i)
            text[i] = digits[n - 1 - i];
        bytes(text, n);
    }
    /// Nanoseconds as microseconds with three decimals.
    void microseconds(uint64_t ns) {
        number(ns / 1000);
        const auto frac = static_cast<uint32_t>(ns % 1000);
        const char text[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                              static_cast<char>('0' + frac % 10)};
        bytes(text, 4);
    }
    void flush() {
        if (length_ == 0) return;
        if (ok_) {
            if (write_(context_, buffer_, length_))
                written_ += length_;
            else
                ok_ = false;
        }
        total_ += length_;
        length_ = 0;
    }

    [[nodiscard]] TraceExport result(uint64_t events) {
        flush();
        TraceExport r;
        r.bytes = total_;
        r.written = written_;
        r.events = events;
        if (!ok_)
            r.status = detail::capacity_status(
                StatusCode::output_too_small, "write_chrome_trace: the output took only a prefix of the trace", total_);
        return r;
    }

private:
    TraceWriteFn write_;
    void* context_;
    char buffer_[512];
    size_t length_ = 0;
    uint64_t total_ = 0;
    uint64_t written_ = 0;
    bool ok_ = true;
};

/// Process ids of the two groups of tracks.
constexpr uint32_t kCallsPid = 1;
constexpr uint32_t kWorkersPid = 2;
/// Tracks that get a name (threads and workers beyond get none; their spans are exported all the same).
constexpr uint32_t kNamedTracks = 4096;

struct Seen {
    uint64_t bits[kNamedTracks / 64] = {};
    void add(uint32_t i) {
        if (i < kNamedTracks) bits[i / 64] |= uint64_t{1} << (i % 64);
    }
    [[nodiscard]] bool has(uint32_t i) const { return (bits[i / 64] >> (i % 64) & 1u) != 0; }
};

void separator(Out& out, bool& first) {
    out.text(first ? "\n" : ",\n");
    first = false;
}

/// Opens a metadata record; the caller writes the value and "}}".
void metadata(Out& out, bool& first, uint32_t pid, uint32_t tid, const char* what, const char* key) {
    separator(out, first);
    out.text("{\"name\":\"");
    out.text(what);
    out.text("\",\"ph\":\"M\",\"pid\":");
    out.number(pid);
    out.text(",\"tid\":");
    out.number(tid);
    out.text(",\"args\":{\"");
    out.text(key);
    out.text("\":");
}

} // namespace

TraceExport write_chrome_trace(const Trace& trace, TraceWriteFn write, void* context) {
    Out out(write, context);
    const uint32_t kept = trace.size();
    // Earliest kept span, and the tracks that need names.
    uint64_t origin = ~uint64_t{0};
    Seen threads, workers;
    for (uint32_t i = 0; i < kept; ++i) {
        TraceEvent e;
        if (!trace.event(i, e)) continue;
        origin = e.begin_ns < origin ? e.begin_ns : origin;
        (e.kind == TraceKind::chunk ? workers : threads).add(e.thread);
    }
    out.text("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    bool first = true;
    uint64_t events = 0;
    for (uint32_t pid : {kCallsPid, kWorkersPid}) {
        const bool calls = pid == kCallsPid;
        metadata(out, first, pid, 0, "process_name", "name");
        out.text(calls ? "\"hashgrid calls\"}}" : "\"hashgrid workers\"}}");
        metadata(out, first, pid, 0, "process_sort_index", "sort_index");
        out.number(pid);
        out.text("}}");
        const Seen& seen = calls ? threads : workers;
        for (uint32_t t = 0; t < kNamedTracks; ++t) {
            if (!seen.has(t)) continue;
            metadata(out, first, pid, t, "thread_name", "name");
            out.text(calls ? "\"calling thread " : "\"worker ");
            out.number(t);
            out.text("\"}}");
            metadata(out, first, pid, t, "thread_sort_index", "sort_index");
            out.number(t);
            out.text("}}");
        }
    }
    for (uint32_t i = 0; i < kept; ++i) {
        TraceEvent e;
        if (!trace.event(i, e)) continue;
        ++events;
        const bool chunk = e.kind == TraceKind::chunk;
        separator(out, first);
        out.text("{\"name\":\"");
        out.text(trace_event_name(e));
        out.text(chunk ? "\",\"cat\":\"chunk\",\"ph\":\"X\",\"pid\":" : "\",\"cat\":\"phase\",\"ph\":\"X\",\"pid\":");
        out.number(chunk ? kWorkersPid : kCallsPid);
        out.text(",\"tid\":");
        out.number(e.thread);
        out.text(",\"ts\":");
        out.microseconds(e.begin_ns - origin);
        out.text(",\"dur\":");
        out.microseconds(e.end_ns >= e.begin_ns ? e.end_ns - e.begin_ns : 0);
        if (chunk) {
            out.text(",\"args\":{\"begin\":");
            out.number(e.item_begin);
            out.text(",\"end\":");
            out.number(e.item_end);
            out.text("}");
        }
        out.text("}");
    }
    out.text("\n],\"otherData\":{\"recorded\":");
    out.number(trace.recorded());
    out.text(",\"dropped\":");
    out.number(trace.dropped());
    out.text(",\"capacity\":");
    out.number(trace.capacity());
    out.text("}}\n");
    return out.result(events);
}

TraceExport write_chrome_trace(const Trace& trace, char* buffer, size_t capacity) {
    struct Target {
        char* buffer;
        size_t capacity;
        size_t at;
    } target{buffer, buffer != nullptr ? capacity : 0, 0};
    TraceExport r = write_chrome_trace(
        trace,
        [](void* context, const char* data, size_t size) {
            auto& t = *static_cast<Target*>(context);
            const size_t room = t.capacity - t.at;
            const size_t n = size < room ? size : room;
            if (n != 0) std::memcpy(t.buffer + t.at, data, n);
            t.at += n;
            return n == size;
        },
        &target);
    r.written = target.at;
    return r;
}

TraceExport write_chrome_trace(const Trace& trace, std::FILE* file) {
    return write_chrome_trace(
        trace,
        [](void* context, const char* data, size_t size) {
            return context != nullptr && std::fwrite(data, 1, size, static_cast<std::FILE*>(context)) == size;
        },
        file);
}

} // namespace hashgrid

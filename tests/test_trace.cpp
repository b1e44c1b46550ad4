// SPDX-License-Identifier: MIT
// Frame tracing (hashgrid/trace.h) and query work counters (QueryStats).
//
// Real frames (rebuild, find_pairs, neighbor_lists, find_pairs_with, query
// batches; a box grid's rebuild, pairs, prepare and batches) run with a trace
// attached on the serial backend, on 1 and 4 std::threads and on a job
// system through JobSystemBackend; the exported Chrome JSON is parsed by the
// small independent JSON parser below and checked: spans nest on every track, every chunk lies inside a phase of its
// name on the calling thread's track, the steps of a rebuild tile it, every
// call lies inside the frame, a loop's chunks cover its items exactly once.
// Results are the same bytes with and without a trace. The ring keeps the
// newest events (compared with a larger ring over the same serial frame) and
// counts the dropped; a null trace records nothing; hooks are called in
// nested pairs. Query stats are checked against brute-force counts on
// hand-made scenes whose cells are known. Zero allocations per frame with a
// trace attached: test_zero_alloc.
#include <doctest/doctest.h>

#include "hashgrid/box_grid.h"
#include "hashgrid/box_queries.h"
#include "hashgrid/particle_queries.h"
#include "hashgrid/trace.h"
#include "hashgrid_support/box_scene.h"
#include "test_support.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace hashgrid;
using namespace hashgrid_test;
using hashgrid_support::BoxScene;

namespace {

// ---------------------------------------------------------------------------
// A small JSON parser (RFC 8259 grammar; numbers kept as their text so that
// the exporter's microseconds convert to nanoseconds exactly).

struct Json {
    enum class Type { null, boolean, number, string, array, object };
    Type type = Type::null;
    bool flag = false;
    std::string text;              // number or string
    std::vector<Json> items;       // array elements, or object values
    std::vector<std::string> keys; // object keys (keys[i] names items[i])

    [[nodiscard]] const Json* get(const std::string& key) const {
        for (size_t i = 0; i < keys.size(); ++i)
            if (keys[i] == key) return &items[i];
        return nullptr;
    }
};

class JsonParser {
public:
    explicit JsonParser(const std::string& s) : s_(s) {}

    /// The whole text as one value; error() says why not.
    bool parse(Json& out) {
        space();
        if (!value(out, 0)) return false;
        space();
        if (at_ != s_.size()) return fail("text after the value");
        return true;
    }
    [[nodiscard]] const std::string& error() const { return error_; }

private:
    bool fail(const char* why) {
        if (error_.empty()) error_ = std::string(why) + " at byte " + std::to_string(at_);
        return false;
    }
    /// After an object's or array's item: ',' (more = true) or `close`
    /// (more = false); anything else fails.
    bool after_item(char close, bool& more) {
        space();
        if (at_ < s_.size() && (s_[at_] == ',' || s_[at_] == close)) {
            more = s_[at_] == ',';
            ++at_;
            return true;
        }
        return fail(close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    }
    void space() {
        while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
            ++at_;
    }
    bool literal(const char* word) {
        const size_t n = std::char_traits<char>::length(word);
        if (s_.compare(at_, n, word) != 0) return fail("bad literal");
        at_ += n;
        return true;
    }
    static bool digit(char c) { return c >= '0' && c <= '9'; }
    bool digits() {
        if (at_ >= s_.size() || !digit(s_[at_])) return fail("digit expected");
        while (at_ < s_.size() && digit(s_[at_]))
            ++at_;
        return true;
    }
    bool number(Json& out) {
        const size_t start = at_;
        if (s_[at_] == '-') ++at_;
        if (at_ < s_.size() && s_[at_] == '0')
            ++at_;
        else if (!digits())
            return false;
        if (at_ < s_.size() && s_[at_] == '.') {
            ++at_;
            if (!digits()) return false;
        }
        if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
            ++at_;
            if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
            if (!digits()) return false;
        }
        out.type = Json::Type::number;
        out.text = s_.substr(start, at_ - start);
        return true;
    }
    bool string(std::string& out) {
        if (s_[at_] != '"') return fail("string expected");
        ++at_;
        while (at_ < s_.size()) {
            const char c = s_[at_++];
            if (c == '"') return true;
            if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
            if (c != '\\') {
                out.push_back(c);
                continue;
            }
            if (at_ >= s_.size()) break;
            const char e = s_[at_++];
            switch (e) {
            case '"':
            case '\\':
            case '/':
                out.push_back(e);
                break;
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                out.push_back(' ');
                break;
            case 'u':
                for (int i = 0; i < 4; ++i, ++at_)
                    if (at_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[at_])))
                        return fail("bad \\u escape");
                out.push_back('?');
                break;
            default:
                return fail("bad escape");
            }
        }
        return fail("unterminated string");
    }
    bool value(Json& out, int depth) {
        if (depth > 64) return fail("too deep");
        if (at_ >= s_.size()) return fail("value expected");
        const char c = s_[at_];
        if (c == '{') {
            ++at_;
            out.type = Json::Type::object;
            space();
            if (at_ < s_.size() && s_[at_] == '}') {
                ++at_;
                return true;
            }
            for (;;) {
                space();
                if (at_ >= s_.size()) return fail("key expected");
                std::string key;
                if (!string(key)) return false;
                space();
                if (at_ >= s_.size() || s_[at_] != ':') return fail("':' expected");
                ++at_;
                space();
                Json v;
                if (!value(v, depth + 1)) return false;
                out.keys.push_back(std::move(key));
                out.items.push_back(std::move(v));
                bool more = false;
                if (!after_item('}', more)) return false;
                if (!more) return true;
            }
        }
        if (c == '[') {
            ++at_;
            out.type = Json::Type::array;
            space();
            if (at_ < s_.size() && s_[at_] == ']') {
                ++at_;
                return true;
            }
            for (;;) {
                space();
                Json v;
                if (!value(v, depth + 1)) return false;
                out.items.push_back(std::move(v));
                bool more = false;
                if (!after_item(']', more)) return false;
                if (!more) return true;
            }
        }
        if (c == '"') {
            out.type = Json::Type::string;
            return string(out.text);
        }
        if (c == 't') {
            out.type = Json::Type::boolean;
            out.flag = true;
            return literal("true");
        }
        if (c == 'f') {
            out.type = Json::Type::boolean;
            return literal("false");
        }
        if (c == 'n') return literal("null");
        if (c == '-' || digit(c)) return number(out);
        return fail("unexpected character");
    }

    const std::string& s_;
    size_t at_ = 0;
    std::string error_;
};

/// "123.456" (microseconds, three decimals) as nanoseconds; -1 if not that form.
int64_t micros_to_ns(const std::string& t) {
    const size_t dot = t.find('.');
    if (dot == std::string::npos || dot == 0 || t.size() - dot != 4) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < t.size(); ++i) {
        if (i == dot) continue;
        if (t[i] < '0' || t[i] > '9') return -1;
        v = v * 10 + (t[i] - '0');
    }
    return v;
}

uint64_t to_u64(const Json* j) {
    if (j == nullptr || j->type != Json::Type::number) return ~uint64_t{0};
    return std::stoull(j->text);
}

// ---------------------------------------------------------------------------
// The exported spans, read back from the JSON.

struct Span {
    std::string name;
    std::string cat;
    uint64_t pid = 0;
    uint64_t tid = 0;
    int64_t ts = 0; // ns
    int64_t dur = 0;
    uint64_t item_begin = 0, item_end = 0;
    [[nodiscard]] int64_t end() const { return ts + dur; }
};

struct Exported {
    std::string text;
    std::vector<Span> spans;
    uint64_t recorded = 0, dropped = 0, capacity = 0;
    std::map<std::pair<uint64_t, uint64_t>, std::string> track_names;
};

std::string export_text(const Trace& trace) {
    std::string text;
    const TraceExport r = write_chrome_trace(
        trace,
        [](void* context, const char* data, size_t size) {
            static_cast<std::string*>(context)->append(data, size);
            return true;
        },
        &text);
    CHECK(r.status.ok());
    CHECK(r.bytes == text.size());
    CHECK(r.written == text.size());
    return text;
}

/// Parses and checks the format; the spans go to `out`.
void read_export(const Trace& trace, Exported& out) {
    out.text = export_text(trace);
    Json root;
    JsonParser parser(out.text);
    const bool parsed = parser.parse(root);
    INFO("JSON error: " << parser.error());
    REQUIRE(parsed);
    REQUIRE(root.type == Json::Type::object);
    const Json* events = root.get("traceEvents");
    REQUIRE(events != nullptr);
    REQUIRE(events->type == Json::Type::array);
    const Json* other = root.get("otherData");
    REQUIRE(other != nullptr);
    out.recorded = to_u64(other->get("recorded"));
    out.dropped = to_u64(other->get("dropped"));
    out.capacity = to_u64(other->get("capacity"));
    for (const Json& e : events->items) {
        REQUIRE(e.type == Json::Type::object);
        const Json* ph = e.get("ph");
        const Json* name = e.get("name");
        REQUIRE(ph != nullptr);
        REQUIRE(name != nullptr);
        REQUIRE(name->type == Json::Type::string);
        const uint64_t pid = to_u64(e.get("pid"));
        const uint64_t tid = to_u64(e.get("tid"));
        CHECK((pid == 1 || pid == 2));
        if (ph->text == "M") {
            const Json* args = e.get("args");
            REQUIRE(args != nullptr);
            if (name->text == "thread_name") out.track_names[{pid, tid}] = args->get("name")->text;
            continue;
        }
        REQUIRE(ph->text == "X");
        Span s;
        s.name = name->text;
        s.cat = e.get("cat")->text;
        s.pid = pid;
        s.tid = tid;
        s.ts = micros_to_ns(e.get("ts")->text);
        s.dur = micros_to_ns(e.get("dur")->text);
        REQUIRE(s.ts >= 0);
        REQUIRE(s.dur >= 0);
        if (s.cat == "chunk") {
            CHECK(pid == 2);
            const Json* args = e.get("args");
            REQUIRE(args != nullptr);
            s.item_begin = to_u64(args->get("begin"));
            s.item_end = to_u64(args->get("end"));
            CHECK(s.item_begin < s.item_end);
        } else {
            CHECK(s.cat == "phase");
            CHECK(pid == 1);
        }
        out.spans.push_back(s);
    }
    CHECK(out.recorded == trace.recorded());
    CHECK(out.dropped == trace.dropped());
    CHECK(out.capacity == trace.capacity());
    // Every track that holds spans is named.
    for (const Span& s : out.spans)
        CHECK(out.track_names.count({s.pid, s.tid}) == 1);
}

/// Spans of one track nest: sorted by (start, longest first), each either
/// lies inside the innermost open span or starts after it ends.
std::string check_nesting(const std::vector<Span>& spans) {
    std::map<std::pair<uint64_t, uint64_t>, std::vector<const Span*>> tracks;
    for (const Span& s : spans)
        tracks[{s.pid, s.tid}].push_back(&s);
    for (auto& [track, list] : tracks) {
        std::sort(list.begin(), list.end(),
                  [](const Span* a, const Span* b) { return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur; });
        std::vector<const Span*> open;
        for (const Span* s : list) {
            while (!open.empty() && open.back()->end() <= s->ts)
                open.pop_back();
            if (!open.empty() && s->end() > open.back()->end())
                return "track " + std::to_string(track.first) + "/" + std::to_string(track.second) + ": " + s->name +
                       " overlaps " + open.back()->name;
            open.push_back(s);
        }
    }
    return "";
}

/// Every chunk lies inside a phase of its name.
std::string check_chunks_in_phases(const std::vector<Span>& spans) {
    for (const Span& c : spans) {
        if (c.cat != "chunk") continue;
        bool inside = false;
        for (const Span& p : spans)
            inside = inside || (p.cat == "phase" && p.name == c.name && p.ts <= c.ts && c.end() <= p.end());
        if (!inside) return "chunk of " + c.name + " outside every phase of that name";
    }
    return "";
}

std::vector<const Span*> phases_named(const std::vector<Span>& spans, const std::string& name) {
    std::vector<const Span*> out;
    for (const Span& s : spans)
        if (s.cat == "phase" && s.name == name) out.push_back(&s);
    return out;
}

/// The chunks of `name` inside `phase` cover [0, items) once each.
std::string check_items(const std::vector<Span>& spans, const Span& phase, uint64_t items) {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const Span& c : spans)
        if (c.cat == "chunk" && c.name == phase.name && phase.ts <= c.ts && c.end() <= phase.end())
            ranges.emplace_back(c.item_begin, c.item_end);
    std::sort(ranges.begin(), ranges.end());
    uint64_t at = 0;
    for (const auto& r : ranges) {
        if (r.first != at) return phase.name + ": chunk items not contiguous at " + std::to_string(at);
        at = r.second;
    }
    if (at != items) return phase.name + ": chunks end at " + std::to_string(at) + ", not " + std::to_string(items);
    return "";
}

// ---------------------------------------------------------------------------
// Frames.

struct OwnedTrace {
    std::unique_ptr<Trace> trace = std::make_unique<Trace>();
    explicit OwnedTrace(uint32_t capacity) { REQUIRE(trace->init_allocate(capacity).ok()); }
    Trace& operator*() { return *trace; }
    Trace* operator->() { return trace.get(); }
};

/// One frame's outputs, compared with and without a trace.
struct FrameOut {
    std::vector<Pair> pairs;
    std::vector<uint32_t> offsets, indices;
    std::vector<Pair> with_pairs;
    std::vector<uint64_t> query_offsets;
    std::vector<uint32_t> query_hits;
    bool operator==(const FrameOut& o) const {
        auto same = [](const std::vector<Pair>& a, const std::vector<Pair>& b) {
            return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const Pair& p, const Pair& q) {
                       return p.a == q.a && p.b == q.b;
                   });
        };
        return same(pairs, o.pairs) && offsets == o.offsets && indices == o.indices && same(with_pairs, o.with_pairs) &&
               query_offsets == o.query_offsets && query_hits == o.query_hits;
    }
};

/// rebuild, find_pairs, neighbor_lists, find_pairs_with, a radius batch.
FrameOut particle_frame(Grid& g, const Scene& s, const ThreadBackend& backend, uint64_t max_pairs) {
    FrameOut out;
    REQUIRE(g.rebuild(s.spans(), backend).ok());
    out.pairs.resize(static_cast<size_t>(max_pairs));
    const PairResult pr = g.find_pairs(out.pairs.data(), out.pairs.size(), backend);
    REQUIRE(pr.status.ok());
    out.pairs.resize(static_cast<size_t>(pr.written));
    out.offsets.resize(s.size() + 1);
    out.indices.resize(2 * out.pairs.size() + 1);
    REQUIRE(g.neighbor_lists(out.pairs.data(), out.pairs.size(), out.offsets.data(), out.offsets.size(),
                             out.indices.data(), out.indices.size(), backend)
                .ok());
    // The first 500 particles as an external point set, and as sphere centres.
    Scene points;
    points.dims = s.dims;
    std::vector<QuerySphere> spheres;
    for (uint32_t i = 0; i < std::min<uint32_t>(500, s.size()); ++i) {
        points.add(s.x[i], s.y[i], s.z[i]);
        spheres.push_back(QuerySphere{{s.x[i], s.y[i], s.z[i]}, 1.5f});
    }
    out.with_pairs.resize(200000);
    const PairResult wr = g.find_pairs_with(points.spans(), out.with_pairs.data(), out.with_pairs.size(), backend);
    REQUIRE(wr.status.ok());
    out.with_pairs.resize(static_cast<size_t>(wr.written));
    out.query_offsets.resize(spheres.size() + 1);
    out.query_hits.resize(400000);
    const QueryResult qr =
        query_radius_batch(g, spheres.data(), static_cast<uint32_t>(spheres.size()), out.query_offsets.data(),
                           out.query_offsets.size(), out.query_hits.data(), out.query_hits.size(), backend);
    REQUIRE(qr.status.ok());
    out.query_hits.resize(static_cast<size_t>(qr.written));
    return out;
}

/// Every kept event's phase is the user call it is inside: a step's name
/// (and a chunk of a step's loop) is dotted under its phase's name, and the
/// export names each span as trace_event_name() does. "" when all hold.
std::string check_event_phases(const Trace& trace, const Exported& e) {
    std::vector<std::string> names;
    for (uint32_t i = 0; i < trace.size(); ++i) {
        TraceEvent ev;
        if (!trace.event(i, ev)) return "torn event " + std::to_string(i);
        const std::string name = trace_event_name(ev);
        names.push_back(name);
        if (ev.step == 0) {
            if (name != trace_phase_name(ev.phase)) return "phase span named " + name;
            continue;
        }
        const std::string phase = std::string(trace_phase_name(ev.phase)) + ".";
        if (name.rfind(phase, 0) != 0) return "step " + name + " inside phase " + trace_phase_name(ev.phase);
    }
    if (names.size() != e.spans.size()) return "export holds another number of spans";
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] != e.spans[i].name) return "exported " + e.spans[i].name + " for " + names[i];
    return "";
}

/// The structure every traced particle frame must have.
void check_particle_trace(const Exported& e, bool bounded, uint32_t n, uint32_t workers) {
    CHECK(e.dropped == 0);
    CHECK(e.spans.size() == e.recorded);
    INFO(e.text.substr(0, 2000));
    CHECK(check_nesting(e.spans) == "");
    CHECK(check_chunks_in_phases(e.spans) == "");
    for (const Span& s : e.spans)
        if (s.cat == "chunk") CHECK(s.tid < workers);

    // One frame holding every call.
    const auto frames = phases_named(e.spans, "frame");
    REQUIRE(frames.size() == 1);
    const Span& frame = *frames[0];
    for (const char* call : {"rebuild", "find_pairs", "neighbor_lists", "find_pairs_with", "query_radius_batch"}) {
        INFO(std::string(call));
        const auto calls = phases_named(e.spans, call);
        REQUIRE(calls.size() == 1);
        CHECK(frame.ts <= calls[0]->ts);
        CHECK(calls[0]->end() <= frame.end());
        CHECK(calls[0]->tid == frame.tid);
    }
    // The rebuild's steps tile it: each starts where the previous ended.
    const Span& rebuild = *phases_named(e.spans, "rebuild")[0];
    std::vector<const Span*> steps;
    for (const Span& s : e.spans)
        if (s.cat == "phase" && s.name.rfind("rebuild.", 0) == 0) steps.push_back(&s);
    std::sort(steps.begin(), steps.end(), [](const Span* a, const Span* b) { return a->ts < b->ts; });
    std::vector<std::string> names;
    for (const Span* s : steps)
        names.push_back(s->name);
    // A grid built before tries the merge of last frame's order first (an
    // unbounded one after its cells: the scene fills a 27^3 box, which its
    // last frame was sorted over too); this input is not in that order, so
    // the counting sort follows, and the dense box is compacted.
    const std::vector<std::string> expected =
        bounded ? std::vector<std::string>{"rebuild.keys", "rebuild.order",   "rebuild.merge",
                                           "rebuild.scan", "rebuild.scatter", "rebuild.sort"}
                : std::vector<std::string>{"rebuild.keys", "rebuild.order",   "rebuild.cells", "rebuild.merge",
                                           "rebuild.scan", "rebuild.scatter", "rebuild.sort",  "rebuild.compact"};
    CHECK(names == expected);
    REQUIRE(!steps.empty());
    CHECK(rebuild.ts <= steps.front()->ts);
    CHECK(steps.back()->end() <= rebuild.end());
    for (size_t i = 1; i < steps.size(); ++i)
        CHECK(steps[i]->ts == steps[i - 1]->end());
    // find_pairs: its sweep holds chunks that cover the particles once.
    const auto sweeps = phases_named(e.spans, "find_pairs.sweep");
    REQUIRE(sweeps.size() == 1);
    CHECK(check_items(e.spans, *sweeps[0], n) == "");
    const auto keys = phases_named(e.spans, "rebuild.keys");
    REQUIRE(keys.size() == 1);
    CHECK(check_items(e.spans, *keys[0], n) == "");
}

GridConfig scene_config(bool bounded, uint32_t n) {
    GridConfig c = unbounded_config(3, 1.0f, 1.0f, n, 600000);
    if (bounded) {
        c.world = World::bounded;
        c.cell_counts[0] = c.cell_counts[1] = c.cell_counts[2] = 27;
    }
    return c;
}

} // namespace

TEST_CASE("trace: real frames export nested Chrome JSON, results unchanged (serial, 1 and 4 threads, job system)") {
    constexpr uint32_t n = 20000; // fixed: several chunks in every loop at any test scale
    Rng rng(77);
    const Scene scene = uniform_scene(rng, 3, n, 0.0f, 27.0f);
    platform::StdThreadBackend one(1), four(4);
    OddJobSystem::Options options; // a game's job system: copies run in odd orders, some inline
    options.workers = 3;
    options.seed = 3;
    OddJobSystem jobs(options);
    platform::JobSystemBackend adapter(jobs.config());
    struct Case {
        const char* name;
        ThreadBackend backend;
        uint32_t workers;
    };
    const Case cases[] = {{"serial", serial_backend(), 1},
                          {"1 thread", one.backend(), 1},
                          {"4 threads", four.backend(), 4},
                          {"job system, 3 workers", adapter.backend(), 3}};
    for (const bool bounded : {false, true})
        for (const Case& k : cases) {
            INFO(std::string(k.name) << (bounded ? " bounded" : " unbounded"));
            const GridConfig config = scene_config(bounded, n);
            auto plain = make_grid(config);
            auto traced = make_grid(config);
            REQUIRE(plain->init_status.ok());
            REQUIRE(traced->init_status.ok());
            OwnedTrace trace(1u << 14);
            (*traced)->set_trace(trace.trace.get());
            CHECK((*traced)->trace() == trace.trace.get());

            const FrameOut expected = particle_frame(**plain, scene, k.backend, config.max_pairs);
            particle_frame(**traced, scene, k.backend, config.max_pairs); // an earlier frame, then cleared
            trace->clear();
            CHECK(trace->recorded() == 0);
            trace->begin_frame();
            const FrameOut got = particle_frame(**traced, scene, k.backend, config.max_pairs);
            trace->end_frame();
            CHECK(got == expected);
            CHECK(expected.pairs.size() > 10000);

            Exported e;
            read_export(*trace, e);
            check_particle_trace(e, bounded, n, k.workers);
            CHECK(check_event_phases(*trace, e) == "");
        }
}

TEST_CASE("trace: box grid frames (rebuild, pairs, prepare, batches) nest and keep their results") {
    Rng rng(5);
    BoxScene boxes;
    boxes.dims = 3;
    for (uint32_t i = 0; i < 6000; ++i) {
        const float x = rng.uniform(0.0f, 40.0f), y = rng.uniform(0.0f, 40.0f), z = rng.uniform(0.0f, 40.0f);
        const float w = rng.uniform(0.1f, 1.5f);
        boxes.add_box(x, y, z, x + w, y + w, z + w);
    }
    boxes.add_box(0.0f, 0.0f, 0.0f, 40.0f, 2.0f, 40.0f); // a large object
    BoxGridConfig config;
    config.dimensions = 3;
    config.cell_size = 1.0f;
    config.world = World::unbounded;
    config.max_objects = boxes.size();
    config.max_cell_entries = 200000;
    config.max_pairs = 400000;
    platform::StdThreadBackend four(4);
    for (const ThreadBackend& backend : {serial_backend(), four.backend()}) {
        BoxGrid plain, traced;
        REQUIRE(plain.init_allocate(config).ok());
        REQUIRE(traced.init_allocate(config).ok());
        OwnedTrace trace(1u << 14);
        traced.set_trace(trace.trace.get());
        std::vector<QueryBox> queries;
        for (uint32_t i = 0; i < 300; ++i) {
            const float x = rng.uniform(0.0f, 40.0f), y = rng.uniform(0.0f, 40.0f), z = rng.uniform(0.0f, 40.0f);
            queries.push_back(QueryBox{{x, y, z}, {x + 2.0f, y + 2.0f, z + 2.0f}});
        }
        auto frame = [&](BoxGrid& g, std::vector<Pair>& pairs, std::vector<uint64_t>& offsets,
                         std::vector<uint32_t>& hits) {
            REQUIRE(g.rebuild(boxes.spans(), backend).ok());
            pairs.resize(config.max_pairs);
            const PairResult pr = g.find_pairs(pairs.data(), pairs.size(), backend);
            REQUIRE(pr.status.ok());
            pairs.resize(static_cast<size_t>(pr.written));
            const BoxQueryGrid q = prepare_box_queries(g.view(), backend);
            offsets.resize(queries.size() + 1);
            hits.resize(100000);
            const QueryResult qr = query_box_batch(q, queries.data(), static_cast<uint32_t>(queries.size()), kAllLayers,
                                                   offsets.data(), offsets.size(), hits.data(), hits.size(), backend);
            REQUIRE(qr.status.ok());
            hits.resize(static_cast<size_t>(qr.written));
        };
        std::vector<Pair> p0, p1;
        std::vector<uint64_t> o0, o1;
        std::vector<uint32_t> h0, h1;
        frame(plain, p0, o0, h0);
        trace->begin_frame();
        frame(traced, p1, o1, h1);
        trace->end_frame();
        CHECK(p0.size() == p1.size());
        CHECK(std::equal(p0.begin(), p0.end(), p1.begin(),
                         [](const Pair& a, const Pair& b) { return a.a == b.a && a.b == b.b; }));
        CHECK(o0 == o1);
        CHECK(h0 == h1);

        Exported e;
        read_export(*trace, e);
        CHECK(e.dropped == 0);
        CHECK(check_nesting(e.spans) == "");
        CHECK(check_chunks_in_phases(e.spans) == "");
        CHECK(check_event_phases(*trace, e) == "");
        for (const char* name : {"frame", "box.rebuild", "box.rebuild.validate", "box.rebuild.entries",
                                 "box.find_pairs", "box.find_pairs.search", "box.prepare_queries", "query_box_batch"}) {
            INFO(std::string(name));
            CHECK(phases_named(e.spans, name).size() == 1);
        }
        const Span& validate = *phases_named(e.spans, "box.rebuild.validate")[0];
        const Span& entries = *phases_named(e.spans, "box.rebuild.entries")[0];
        CHECK(entries.ts == validate.end());
        CHECK(check_items(e.spans, validate, boxes.size()) == "");
    }
}

TEST_CASE("trace: the ring keeps the newest events and counts the dropped ones") {
    constexpr uint32_t n = 20000;
    Rng rng(3);
    const Scene scene = uniform_scene(rng, 3, n, 0.0f, 27.0f);
    const GridConfig config = scene_config(false, n);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    // The serial backend records the same events in the same order every
    // time: the small ring must hold the large ring's last events. (Two
    // untraced frames first: the first frame of an unbounded grid may size
    // its table twice, and the key pass guesses the dense box only once it
    // held for two frames; later frames of the same scene do the same work.)
    particle_frame(**grid, scene, serial_backend(), config.max_pairs);
    particle_frame(**grid, scene, serial_backend(), config.max_pairs);
    OwnedTrace large(1u << 14);
    constexpr uint32_t kSmall = 16;
    OwnedTrace small_ring(kSmall);
    std::vector<TraceEvent> all, kept;
    for (Trace* t : {large.trace.get(), small_ring.trace.get()}) {
        (*grid)->set_trace(t);
        particle_frame(**grid, scene, serial_backend(), config.max_pairs);
    }
    (*grid)->set_trace(nullptr);
    REQUIRE(large->dropped() == 0);
    const uint64_t total = large->recorded();
    REQUIRE(total > 4 * kSmall);
    CHECK(small_ring->recorded() == total);
    CHECK(small_ring->size() == kSmall);
    CHECK(small_ring->dropped() == total - kSmall);
    for (uint32_t i = 0; i < large->size(); ++i) {
        TraceEvent ev;
        REQUIRE(large->event(i, ev));
        all.push_back(ev);
    }
    for (uint32_t i = 0; i < kSmall; ++i) {
        TraceEvent ev;
        REQUIRE(small_ring->event(i, ev));
        kept.push_back(ev);
    }
    TraceEvent none;
    CHECK_FALSE(small_ring->event(kSmall, none));
    for (uint32_t i = 0; i < kSmall; ++i) {
        const TraceEvent& a = all[all.size() - kSmall + i];
        const TraceEvent& b = kept[i];
        CHECK(a.phase == b.phase);
        CHECK(a.step == b.step);
        CHECK(a.kind == b.kind);
        CHECK(a.thread == b.thread);
        CHECK(a.item_begin == b.item_begin);
        CHECK(a.item_end == b.item_end);
        CHECK(b.begin_ns <= b.end_ns);
    }
    // The newest event is the outermost call's end: the radius batch.
    CHECK(kept.back().phase == TracePhase::query_radius_batch);
    CHECK(kept.back().step == 0);
    CHECK(kept.back().kind == TraceKind::phase);
    Exported e;
    read_export(*small_ring, e);
    CHECK(e.spans.size() == kSmall);
    CHECK(e.dropped == total - kSmall);
    CHECK(e.recorded == total);
    // A ring of one event still exports valid JSON.
    OwnedTrace one(1);
    (*grid)->set_trace(one.trace.get());
    particle_frame(**grid, scene, serial_backend(), config.max_pairs);
    Exported e1;
    read_export(*one, e1);
    CHECK(e1.spans.size() == 1);
    CHECK(e1.dropped + 1 == total);
}

TEST_CASE("trace: a null trace records nothing, a detached trace stays empty") {
    constexpr uint32_t n = 5000;
    Rng rng(9);
    const Scene scene = uniform_scene(rng, 3, n, 0.0f, 15.0f);
    const GridConfig config = scene_config(false, n);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    OwnedTrace trace(1024);
    CHECK((*grid)->trace() == nullptr); // off by default
    (*grid)->set_trace(trace.trace.get());
    particle_frame(**grid, scene, serial_backend(), config.max_pairs);
    CHECK(trace->recorded() > 0);
    trace->clear();
    (*grid)->set_trace(nullptr);
    particle_frame(**grid, scene, serial_backend(), config.max_pairs);
    CHECK(trace->recorded() == 0);
    CHECK(trace->size() == 0);
    trace->end_frame(); // without begin_frame(): nothing
    CHECK(trace->recorded() == 0);
    Exported e;
    read_export(*trace, e);
    CHECK(e.spans.empty());
    // A trace without a ring records nothing either (it only calls hooks).
    Trace no_ring;
    CHECK(no_ring.capacity() == 0);
    (*grid)->set_trace(&no_ring);
    particle_frame(**grid, scene, serial_backend(), config.max_pairs);
    CHECK(no_ring.recorded() == 0);
}

namespace {

/// Hook log: per thread, begin/end must pair up like a stack with equal names.
struct HookLog {
    std::mutex mutex;
    std::map<std::thread::id, std::vector<std::string>> open;
    std::vector<std::string> phases; // phase begins, in order
    uint64_t begins = 0, ends = 0, chunk_begins = 0, mismatches = 0;
    std::atomic<bool> armed{true};

    static void begin(void* context, const char* name, uint32_t thread) {
        auto& log = *static_cast<HookLog*>(context);
        const std::lock_guard<std::mutex> lock(log.mutex);
        log.open[std::this_thread::get_id()].push_back(name);
        ++log.begins;
        if (thread == kTraceCallingThread)
            log.phases.push_back(name);
        else
            ++log.chunk_begins;
    }
    static void end(void* context, const char* name, uint32_t) {
        auto& log = *static_cast<HookLog*>(context);
        const std::lock_guard<std::mutex> lock(log.mutex);
        auto& stack = log.open[std::this_thread::get_id()];
        if (stack.empty() || stack.back() != name)
            ++log.mismatches;
        else
            stack.pop_back();
        ++log.ends;
    }
};

} // namespace

TEST_CASE("trace: zone hooks get every phase (and chunk) in nested begin/end pairs") {
    constexpr uint32_t n = 20000;
    Rng rng(11);
    const Scene scene = uniform_scene(rng, 3, n, 0.0f, 27.0f);
    const GridConfig config = scene_config(false, n);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    platform::StdThreadBackend four(4);
    for (const bool chunks : {false, true})
        for (const ThreadBackend& backend : {serial_backend(), four.backend()}) {
            HookLog log;
            Trace trace; // hooks only, no ring
            TraceHooks hooks;
            hooks.begin = &HookLog::begin;
            hooks.end = &HookLog::end;
            hooks.context = &log;
            hooks.chunks = chunks;
            trace.set_hooks(hooks);
            (*grid)->set_trace(&trace);
            trace.begin_frame();
            particle_frame(**grid, scene, backend, config.max_pairs);
            trace.end_frame();
            (*grid)->set_trace(nullptr);
            CHECK(log.mismatches == 0);
            CHECK(log.begins == log.ends);
            for (const auto& [thread, stack] : log.open)
                CHECK(stack.empty());
            CHECK((log.chunk_begins > 0) == chunks);
            // The phases, in order, as the calls nest.
            const std::vector<std::string> top = {"frame", "rebuild", "rebuild.keys", "rebuild.order", "rebuild.cells"};
            REQUIRE(log.phases.size() > top.size());
            CHECK(std::vector<std::string>(log.phases.begin(), log.phases.begin() + 5) == top);
            CHECK(std::count(log.phases.begin(), log.phases.end(), "find_pairs.sweep") == 1);
            CHECK(std::count(log.phases.begin(), log.phases.end(), "query_radius_batch") == 1);
        }
}

TEST_CASE("trace: export into a buffer, a short buffer, a refusing writer, a FILE") {
    constexpr uint32_t n = 3000;
    Rng rng(13);
    const Scene scene = uniform_scene(rng, 3, n, 0.0f, 12.0f);
    const GridConfig config = scene_config(false, n);
    auto grid = make_grid(config);
    REQUIRE(grid->init_status.ok());
    OwnedTrace trace(4096);
    (*grid)->set_trace(trace.trace.get());
    particle_frame(**grid, scene, serial_backend(), config.max_pairs);
    const std::string full = export_text(*trace);
    std::vector<char> buffer(full.size() + 10, '#');
    const TraceExport fits = write_chrome_trace(*trace, buffer.data(), buffer.size());
    CHECK(fits.status.ok());
    CHECK(fits.bytes == full.size());
    CHECK(fits.written == full.size());
    CHECK(std::string(buffer.data(), full.size()) == full);
    CHECK(buffer[full.size()] == '#');
    CHECK(fits.events == trace->size());
    const size_t half = full.size() / 2;
    std::vector<char> short_buffer(half, '#');
    const TraceExport cut = write_chrome_trace(*trace, short_buffer.data(), short_buffer.size());
    CHECK(cut.status.code == StatusCode::output_too_small);
    CHECK(cut.status.needed == full.size());
    CHECK(cut.written == half);
    CHECK(std::string(short_buffer.data(), half) == full.substr(0, half));
    const TraceExport none = write_chrome_trace(*trace, static_cast<char*>(nullptr), 0);
    CHECK(none.status.code == StatusCode::output_too_small);
    CHECK(none.status.needed == full.size());
    CHECK(none.written == 0);
    const TraceExport refused = write_chrome_trace(
        *trace, [](void*, const char*, size_t) { return false; }, nullptr);
    CHECK(refused.status.code == StatusCode::output_too_small);
    CHECK(refused.bytes == full.size());
    CHECK(refused.written == 0);
    std::FILE* file = std::tmpfile();
    if (file != nullptr) { // tmpfile may be unavailable (e.g. under wine without a temp directory)
        const TraceExport written = write_chrome_trace(*trace, file);
        CHECK(written.status.ok());
        std::rewind(file);
        std::string back(full.size(), '\0');
        CHECK(std::fread(back.data(), 1, back.size(), file) == full.size());
        CHECK(back == full);
        std::fclose(file);
    }
}

TEST_CASE("trace: memory requirements, init on caller memory, bad sizes") {
    CHECK(Trace::memory_requirements(0).status.code == StatusCode::invalid_config);
    CHECK(Trace::memory_requirements(1u << 31).status.code == StatusCode::invalid_config);
    const MemoryRequirements req = Trace::memory_requirements(100);
    REQUIRE(req.status.ok());
    CHECK(req.bytes >= 100 * 40);
    std::vector<unsigned char> block(static_cast<size_t>(req.bytes) + req.alignment);
    void* aligned = block.data() + (req.alignment - reinterpret_cast<uintptr_t>(block.data()) % req.alignment);
    Trace trace;
    CHECK(trace.init(100, aligned, static_cast<size_t>(req.bytes) - 1).code == StatusCode::memory_too_small);
    CHECK(trace.capacity() == 0); // unchanged
    CHECK(trace.init(100, static_cast<unsigned char*>(aligned) + 1, static_cast<size_t>(req.bytes)).code ==
          StatusCode::memory_misaligned);
    CHECK(trace.init(0, aligned, static_cast<size_t>(req.bytes)).code == StatusCode::invalid_config);
    REQUIRE(trace.init(100, aligned, static_cast<size_t>(req.bytes)).ok());
    CHECK(trace.capacity() == 100);
    CHECK(trace.recorded() == 0);
}

TEST_CASE("trace: phase numbers are stable, step names are dotted under their phase's") {
    CHECK(sizeof(TraceEvent) == 32); // step lives in padding: the event did not grow
    // The public numbering, fixed from 0.1 on (new phases only appended).
    const std::pair<TracePhase, const char*> phases[] = {{TracePhase::frame, "frame"},
                                                         {TracePhase::rebuild, "rebuild"},
                                                         {TracePhase::find_pairs, "find_pairs"},
                                                         {TracePhase::find_pairs_with, "find_pairs_with"},
                                                         {TracePhase::neighbor_lists, "neighbor_lists"},
                                                         {TracePhase::query_point_batch, "query_point_batch"},
                                                         {TracePhase::query_radius_batch, "query_radius_batch"},
                                                         {TracePhase::query_box_batch, "query_box_batch"},
                                                         {TracePhase::query_frustum_batch, "query_frustum_batch"},
                                                         {TracePhase::query_nearest_batch, "query_nearest_batch"},
                                                         {TracePhase::query_ray_batch, "query_ray_batch"},
                                                         {TracePhase::query_face_batch, "query_face_batch"},
                                                         {TracePhase::box_rebuild, "box.rebuild"},
                                                         {TracePhase::box_find_pairs, "box.find_pairs"},
                                                         {TracePhase::box_find_pairs_with, "box.find_pairs_with"},
                                                         {TracePhase::prepare_box_queries, "box.prepare_queries"}};
    REQUIRE(std::size(phases) == kTracePhaseCount);
    for (uint32_t p = 0; p < kTracePhaseCount; ++p) {
        CHECK(static_cast<uint32_t>(phases[p].first) == p);
        CHECK(std::string(trace_phase_name(phases[p].first)) == phases[p].second);
    }
    CHECK(std::string(trace_phase_name(static_cast<TracePhase>(kTracePhaseCount))) == "unknown");
    // Steps: 0 is the phase's own span; ids 1.. name the steps until "unknown".
    CHECK(std::string(trace_step_name(0)) == "unknown");
    CHECK(std::string(trace_step_name(1u << 20)) == "unknown");
    std::vector<std::string> steps;
    for (uint32_t id = 1; id < 256 && std::string(trace_step_name(id)) != "unknown"; ++id)
        steps.emplace_back(trace_step_name(id));
    for (uint32_t id = static_cast<uint32_t>(steps.size()) + 1; id < 256; ++id)
        CHECK(std::string(trace_step_name(id)) == "unknown");
    for (const char* name :
         {"rebuild.keys",         "rebuild.order",        "rebuild.presorted",  "rebuild.cells",
          "rebuild.cells.clear",  "rebuild.cells.insert", "rebuild.cells.sort", "rebuild.cells.lookup",
          "rebuild.merge",        "rebuild.scan",         "rebuild.scatter",    "rebuild.sort",
          "rebuild.compact",      "find_pairs.sweep",     "find_pairs.prefix",  "box.rebuild.listed",
          "box.rebuild.validate", "box.rebuild.entries",  "box.rebuild.update", "box.find_pairs.search",
          "box.find_pairs.prefix"}) {
        INFO(std::string(name));
        CHECK(std::count(steps.begin(), steps.end(), name) == 1);
    }
    for (const std::string& step : steps)
        for (const auto& [phase, name] : phases)
            CHECK(step != name);
    // An event's name: its step's, or its phase's for step 0.
    TraceEvent e;
    e.phase = TracePhase::box_find_pairs;
    CHECK(std::string(trace_event_name(e)) == "box.find_pairs");
    e.step = 1;
    CHECK(std::string(trace_event_name(e)) == steps[0]);
    e.step = 255;
    CHECK(std::string(trace_event_name(e)) == (steps.size() >= 255 ? steps[254] : std::string("unknown")));
}

// ---------------------------------------------------------------------------
// Query stats against brute force.

namespace {

/// Particles in the cells of [0, 6)^3: cell (x, y, z) holds (x + 2y + 3z) % 4
/// particles, each well inside its cell (fractions 0.2 .. 0.8), so every cell
/// range below is floor() of the query bounds.
Scene stats_scene() {
    Scene s;
    s.dims = 3;
    for (int z = 0; z < 6; ++z)
        for (int y = 0; y < 6; ++y)
            for (int x = 0; x < 6; ++x) {
                const int count = (x + 2 * y + 3 * z) % 4;
                for (int k = 0; k < count; ++k)
                    s.add(static_cast<float>(x) + 0.2f + 0.2f * static_cast<float>(k),
                          static_cast<float>(y) + 0.3f + 0.15f * static_cast<float>(k),
                          static_cast<float>(z) + 0.25f + 0.2f * static_cast<float>(k));
            }
    return s;
}

int cell_of(float p) { return static_cast<int>(std::floor(p)); }

/// Brute-force stats of a query over the cell box [lo, hi] with a per-particle
/// test: unbounded grids read each occupied cell; bounded ones each row's run.
QueryStats brute_stats(const Scene& s, const int lo[3], const int hi[3], bool bounded,
                       const std::function<bool(uint32_t)>& hit) {
    QueryStats st;
    st.queries = 1;
    std::map<std::vector<int>, uint32_t> cells; // key: cell (unbounded) or row (bounded)
    for (uint32_t i = 0; i < s.size(); ++i) {
        const int c[3] = {cell_of(s.x[i]), cell_of(s.y[i]), cell_of(s.z[i])};
        bool inside = true;
        for (int d = 0; d < 3; ++d)
            inside = inside && c[d] >= lo[d] && c[d] <= hi[d];
        if (!inside) continue;
        ++st.tested;
        ++cells[bounded ? std::vector<int>{c[1], c[2]} : std::vector<int>{c[0], c[1], c[2]}];
        if (hit(i)) ++st.results;
    }
    st.cells = cells.size();
    return st;
}

void add(QueryStats& a, const QueryStats& b) {
    a.queries += b.queries;
    a.cells += b.cells;
    a.tested += b.tested;
    a.results += b.results;
}

std::string text(const QueryStats& s) {
    return std::to_string(s.queries) + " queries, " + std::to_string(s.cells) + " cells, " + std::to_string(s.tested) +
           " tested, " + std::to_string(s.results) + " results";
}

float d2_of(const Scene& s, uint32_t i, const float c[3]) {
    const float dx = s.x[i] - c[0], dy = s.y[i] - c[1], dz = s.z[i] - c[2];
    return (rounded_mul(dx, dx) + rounded_mul(dy, dy)) + rounded_mul(dz, dz);
}

} // namespace

TEST_CASE("query stats: particle point, radius and box batches count what brute force counts") {
    const Scene scene = stats_scene();
    platform::StdThreadBackend four(4);
    for (const bool bounded : {false, true}) {
        INFO(std::string(bounded ? "bounded" : "unbounded"));
        GridConfig config = unbounded_config(3, 1.0f, 1.0f, scene.size(), 10000);
        if (bounded) {
            config.world = World::bounded;
            config.cell_counts[0] = config.cell_counts[1] = config.cell_counts[2] = 6;
        }
        auto grid = make_grid(config);
        REQUIRE(grid->init_status.ok());
        REQUIRE((*grid)->rebuild(scene.spans(), serial_backend()).ok());
        // Centres at fractions 0.3, 0.5, 0.7 of cells: radius 0.4 reaches one
        // or two cells per axis, never near a cell edge.
        const float fractions[3] = {0.3f, 0.5f, 0.7f};
        std::vector<QuerySphere> spheres;
        std::vector<QueryPoint> points;
        std::vector<QueryBox> boxes;
        QueryStats radius_expected, point_expected, box_expected;
        for (int i = 0; i < 40; ++i) {
            const float c[3] = {static_cast<float>(i % 6) + fractions[i % 3],
                                static_cast<float>((i / 2) % 6) + fractions[(i / 3) % 3],
                                static_cast<float>((i / 5) % 6) + fractions[(i / 7) % 3]};
            const float r = 0.4f;
            spheres.push_back(QuerySphere{{c[0], c[1], c[2]}, r});
            int lo[3], hi[3];
            for (int d = 0; d < 3; ++d) {
                lo[d] = std::max(0, cell_of(c[d] - r));
                hi[d] = std::min(5, cell_of(c[d] + r));
            }
            add(radius_expected, brute_stats(scene, lo, hi, bounded,
                                             [&](uint32_t k) { return d2_of(scene, k, c) < rounded_mul(r, r); }));
            // Point query: the interaction distance (1) reaches three cells per axis.
            points.push_back(QueryPoint{{c[0], c[1], c[2]}});
            for (int d = 0; d < 3; ++d) {
                lo[d] = std::max(0, cell_of(c[d] - 1.0f));
                hi[d] = std::min(5, cell_of(c[d] + 1.0f));
            }
            add(point_expected,
                brute_stats(scene, lo, hi, bounded, [&](uint32_t k) { return d2_of(scene, k, c) < 1.0f; }));
            // Box query: [c - 0.6, c + 0.9].
            const QueryBox b{{c[0] - 0.6f, c[1] - 0.6f, c[2] - 0.6f}, {c[0] + 0.9f, c[1] + 0.9f, c[2] + 0.9f}};
            boxes.push_back(b);
            for (int d = 0; d < 3; ++d) {
                lo[d] = std::max(0, cell_of(b.min[d]));
                hi[d] = std::min(5, cell_of(b.max[d]));
            }
            add(box_expected, brute_stats(scene, lo, hi, bounded, [&](uint32_t k) {
                    const float p[3] = {scene.x[k], scene.y[k], scene.z[k]};
                    bool inside = true;
                    for (int d = 0; d < 3; ++d)
                        inside = inside && p[d] >= b.min[d] && p[d] <= b.max[d];
                    return inside;
                }));
        }
        REQUIRE(radius_expected.results > 0);
        const auto count = static_cast<uint32_t>(spheres.size());
        for (const ThreadBackend& backend : {serial_backend(), four.backend()})
            for (const uint64_t capacity :
                 {uint64_t{100000}, uint64_t{7}}) { // 7: the batch's write pass reruns queries
                INFO("capacity " << capacity);
                std::vector<uint64_t> offsets(count + 1), plain_offsets(count + 1);
                std::vector<uint32_t> out(static_cast<size_t>(capacity)), plain_out(static_cast<size_t>(capacity));
                QueryStats got;
                QueryResult r = query_radius_batch(**grid, spheres.data(), count, offsets.data(), offsets.size(),
                                                   out.data(), capacity, backend, &got);
                const QueryResult plain = query_radius_batch(**grid, spheres.data(), count, plain_offsets.data(),
                                                             plain_offsets.size(), plain_out.data(), capacity, backend);
                CHECK(r.total == plain.total);
                CHECK(offsets == plain_offsets);
                CHECK(out == plain_out);
                CHECK(r.total == radius_expected.results);
                INFO("radius: got " << text(got) << ", expected " << text(radius_expected));
                CHECK(got.queries == radius_expected.queries);
                CHECK(got.cells == radius_expected.cells);
                CHECK(got.tested == radius_expected.tested);
                CHECK(got.results == radius_expected.results);

                QueryStats got_points;
                r = query_point_batch(**grid, points.data(), count, offsets.data(), offsets.size(), out.data(),
                                      capacity, backend, &got_points);
                INFO("point: got " << text(got_points) << ", expected " << text(point_expected));
                CHECK(r.total == point_expected.results);
                CHECK(got_points.queries == point_expected.queries);
                CHECK(got_points.cells == point_expected.cells);
                CHECK(got_points.tested == point_expected.tested);
                CHECK(got_points.results == point_expected.results);

                QueryStats got_boxes;
                r = query_box_batch(**grid, boxes.data(), count, offsets.data(), offsets.size(), out.data(), capacity,
                                    backend, &got_boxes);
                INFO("box: got " << text(got_boxes) << ", expected " << text(box_expected));
                CHECK(r.total == box_expected.results);
                CHECK(got_boxes.queries == box_expected.queries);
                CHECK(got_boxes.cells == box_expected.cells);
                CHECK(got_boxes.tested == box_expected.tested);
                CHECK(got_boxes.results == box_expected.results);

                // Stats add up over calls; a frustum batch counts too (tested >= results).
                QueryStats sum = got;
                r = query_radius_batch(**grid, spheres.data(), count, offsets.data(), offsets.size(), out.data(),
                                       capacity, backend, &sum);
                CHECK(r.total == radius_expected.results);
                CHECK(sum.tested == 2 * got.tested);
                Frustum f; // the box [0.5, 5.5]^3 as six planes
                f.plane_count = 6;
                for (uint32_t d = 0; d < 3; ++d) {
                    f.planes[2 * d].normal[d] = 1.0f;
                    f.planes[2 * d].d = -0.5f;
                    f.planes[2 * d + 1].normal[d] = -1.0f;
                    f.planes[2 * d + 1].d = 5.5f;
                }
                QueryStats frustum_stats;
                r = query_frustum_batch(**grid, &f, 1, offsets.data(), offsets.size(), out.data(), capacity, backend,
                                        &frustum_stats);
                CHECK(frustum_stats.queries == 1);
                CHECK(frustum_stats.results == r.total);
                CHECK(frustum_stats.tested >= r.total);
                CHECK(frustum_stats.tested <= scene.size());
            }
        // An invalid query is not counted.
        std::vector<QuerySphere> bad = spheres;
        bad[3].radius = -1.0f;
        QueryStats partial;
        std::vector<uint64_t> offsets(count + 1);
        std::vector<uint32_t> out(100000);
        CHECK(query_radius_batch(**grid, bad.data(), count, offsets.data(), offsets.size(), out.data(), out.size(),
                                 serial_backend(), &partial)
                  .status.code == StatusCode::invalid_query);
        CHECK(partial.queries == count - 1);
    }
}

TEST_CASE("query stats: box grid point, box and radius batches count what brute force counts") {
    // Small boxes well inside the cells of [0, 8)^3 (each covering 1 or 2
    // cells per axis), plus two large objects (more than 8 cells).
    BoxScene scene;
    scene.dims = 3;
    Rng rng(21);
    for (int i = 0; i < 300; ++i) {
        float lo[3], hi[3];
        for (int d = 0; d < 3; ++d) {
            lo[d] = static_cast<float>(rng.below(8)) + 0.1f + 0.1f * static_cast<float>(rng.below(4));
            hi[d] = lo[d] + (rng.below(3) == 0 ? 1.0f : 0.3f); // 1 or 2 cells
        }
        scene.add(lo, hi);
    }
    scene.add_box(0.1f, 0.1f, 0.1f, 7.9f, 1.5f, 1.5f);
    scene.add_box(2.2f, 2.2f, 2.2f, 5.5f, 5.5f, 5.5f);
    BoxGridConfig config;
    config.dimensions = 3;
    config.cell_size = 1.0f;
    config.world = World::unbounded;
    config.max_objects = scene.size();
    config.max_cell_entries = 10000;
    config.max_pairs = 100000;
    config.large_object_cells = 8;
    BoxGrid grid;
    REQUIRE(grid.init_allocate(config).ok());
    REQUIRE(grid.rebuild(scene.spans(), serial_backend()).ok());
    const BoxQueryGrid q = prepare_box_queries(grid.view(), serial_backend());
    // Cell boxes of the objects (floor of each bound: all well inside cells).
    auto cells_of = [&](uint32_t i, int lo[3], int hi[3]) {
        for (int d = 0; d < 3; ++d) {
            lo[d] = cell_of(scene.lo[d][i]);
            hi[d] = cell_of(scene.hi[d][i]);
        }
    };
    auto is_large = [&](uint32_t i) {
        int lo[3], hi[3];
        cells_of(i, lo, hi);
        return (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1) > 8;
    };
    uint32_t large = 0;
    std::map<std::vector<int>, uint32_t> occupied; // cell -> entries
    for (uint32_t i = 0; i < scene.size(); ++i) {
        if (is_large(i)) {
            ++large;
            continue;
        }
        int lo[3], hi[3];
        cells_of(i, lo, hi);
        for (int z = lo[2]; z <= hi[2]; ++z)
            for (int y = lo[1]; y <= hi[1]; ++y)
                for (int x = lo[0]; x <= hi[0]; ++x)
                    ++occupied[{x, y, z}];
    }
    REQUIRE(large == 2);
    auto meets = [](const int alo[3], const int ahi[3], const int blo[3], const int bhi[3]) {
        for (int d = 0; d < 3; ++d)
            if (alo[d] > bhi[d] || blo[d] > ahi[d]) return false;
        return true;
    };
    // Box and radius queries: cells = occupied cells in range; tested = small
    // objects meeting the range (each once) + large objects.
    auto scan_stats = [&](const int lo[3], const int hi[3], const std::function<bool(uint32_t)>& hit) {
        QueryStats st;
        st.queries = 1;
        for (const auto& [cell, entries] : occupied)
            if (cell[0] >= lo[0] && cell[0] <= hi[0] && cell[1] >= lo[1] && cell[1] <= hi[1] && cell[2] >= lo[2] &&
                cell[2] <= hi[2])
                ++st.cells;
        for (uint32_t i = 0; i < scene.size(); ++i) {
            int olo[3], ohi[3];
            cells_of(i, olo, ohi);
            if (is_large(i) || meets(lo, hi, olo, ohi)) ++st.tested;
            if (hit(i)) ++st.results;
        }
        return st;
    };
    std::vector<QueryBox> boxes;
    std::vector<QuerySphere> spheres;
    std::vector<QueryPoint> points;
    QueryStats box_expected, radius_expected, point_expected;
    const float fractions[3] = {0.35f, 0.5f, 0.65f};
    for (int i = 0; i < 50; ++i) {
        const float c[3] = {static_cast<float>(i % 8) + fractions[i % 3],
                            static_cast<float>((i / 3) % 8) + fractions[(i / 2) % 3],
                            static_cast<float>((i / 7) % 8) + fractions[(i / 5) % 3]};
        const QueryBox b{{c[0] - 0.1f, c[1] - 0.1f, c[2] - 0.1f}, {c[0] + 1.2f, c[1] + 0.2f, c[2] + 1.2f}};
        boxes.push_back(b);
        int lo[3], hi[3];
        for (int d = 0; d < 3; ++d) {
            lo[d] = cell_of(b.min[d]);
            hi[d] = cell_of(b.max[d]);
        }
        add(box_expected, scan_stats(lo, hi, [&](uint32_t k) {
                bool overlap = true;
                for (int d = 0; d < 3; ++d)
                    overlap = overlap && scene.lo[d][k] <= b.max[d] && b.min[d] <= scene.hi[d][k];
                return overlap;
            }));
        const float r = 0.3f;
        spheres.push_back(QuerySphere{{c[0], c[1], c[2]}, r});
        for (int d = 0; d < 3; ++d) {
            lo[d] = cell_of(c[d] - r);
            hi[d] = cell_of(c[d] + r);
        }
        add(radius_expected, scan_stats(lo, hi, [&](uint32_t k) {
                float mn[3], mx[3];
                scene.box(k, mn, mx);
                return point_box_distance2(c, mn, mx, 3) <= rounded_mul(r, r);
            }));
        // Point: its cell when occupied (all its entries tested), plus the large objects.
        points.push_back(QueryPoint{{c[0], c[1], c[2]}});
        QueryStats ps;
        ps.queries = 1;
        ps.tested = large;
        const auto it = occupied.find({cell_of(c[0]), cell_of(c[1]), cell_of(c[2])});
        if (it != occupied.end()) {
            ps.cells = 1;
            ps.tested += it->second;
        }
        for (uint32_t k = 0; k < scene.size(); ++k) {
            bool inside = true;
            for (int d = 0; d < 3; ++d)
                inside = inside && scene.lo[d][k] <= c[d] && c[d] <= scene.hi[d][k];
            if (inside) ++ps.results;
        }
        add(point_expected, ps);
    }
    REQUIRE(box_expected.results > 0);
    REQUIRE(point_expected.cells > 0);
    const auto count = static_cast<uint32_t>(boxes.size());
    platform::StdThreadBackend four(4);
    for (const ThreadBackend& backend : {serial_backend(), four.backend()})
        for (const uint64_t capacity : {uint64_t{100000}, uint64_t{5}}) {
            INFO("capacity " << capacity);
            std::vector<uint64_t> offsets(count + 1), plain_offsets(count + 1);
            std::vector<uint32_t> out(static_cast<size_t>(capacity)), plain_out(static_cast<size_t>(capacity));
            QueryStats got;
            QueryResult r = query_box_batch(q, boxes.data(), count, kAllLayers, offsets.data(), offsets.size(),
                                            out.data(), capacity, backend, &got);
            const QueryResult plain = query_box_batch(q, boxes.data(), count, kAllLayers, plain_offsets.data(),
                                                      plain_offsets.size(), plain_out.data(), capacity, backend);
            CHECK(r.total == plain.total);
            CHECK(offsets == plain_offsets);
            CHECK(out == plain_out);
            INFO("box: got " << text(got) << ", expected " << text(box_expected));
            CHECK(r.total == box_expected.results);
            CHECK(got.queries == box_expected.queries);
            CHECK(got.cells == box_expected.cells);
            CHECK(got.tested == box_expected.tested);
            CHECK(got.results == box_expected.results);

            QueryStats got_radius;
            r = query_radius_batch(q, spheres.data(), count, kAllLayers, offsets.data(), offsets.size(), out.data(),
                                   capacity, backend, &got_radius);
            INFO("radius: got " << text(got_radius) << ", expected " << text(radius_expected));
            CHECK(r.total == radius_expected.results);
            CHECK(got_radius.cells == radius_expected.cells);
            CHECK(got_radius.tested == radius_expected.tested);
            CHECK(got_radius.results == radius_expected.results);

            QueryStats got_points;
            r = query_point_batch(q, points.data(), count, kAllLayers, offsets.data(), offsets.size(), out.data(),
                                  capacity, backend, &got_points);
            INFO("point: got " << text(got_points) << ", expected " << text(point_expected));
            CHECK(r.total == point_expected.results);
            CHECK(got_points.queries == point_expected.queries);
            CHECK(got_points.cells == point_expected.cells);
            CHECK(got_points.tested == point_expected.tested);
            CHECK(got_points.results == point_expected.results);
        }
}

// SPDX-License-Identifier: MIT
// proximity_index_demo: clients with boxes in a ProximityIndex, the client API
// of a well-known spatial-hash tutorial, end to end.
//
// The tutorial ("Spatial Hash Grids & Tales from Game Development", SimonDev)
// builds a grid of JavaScript sets with four calls: NewClient(position,
// dimensions), UpdateClient(client), FindNear(position, bounds) and
// RemoveClient(client), and benchmarks 100k clients in a dense 2D area with
// 1000 random queries (about 18 ms for the grid, 6.5 s for a linear scan),
// then moves every client (about 350 ms). This program runs the same scenario
// on hashgrid::ProximityIndex (fixed memory, handles, no per-call
// allocation):
//   1. create the clients;                 4. move every client a little;
//   2. update_index() (one rebuild);       5. update_index();
//   3. 1000 find_near queries;             6. the queries again, then remove them all.
// A sample of the queries is checked against a linear scan over the same
// boxes (exact: same float box and overlap rule). Prints timings and PASS or
// FAIL; returns nonzero on FAIL.
//
//   proximity_index_demo [--clients N] [--queries N] [--check N] [--threads N]

#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"
#include "hashgrid/platform/timer.h"
#include "hashgrid/proximity_index.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"
#include "hashgrid_support/args.h"
#include "hashgrid_support/random.h"
#if defined(HASHGRID_HAS_TBB)
#include "hashgrid/platform/tbb_backend.h"
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

using hashgrid::ObjectHandle;
using hashgrid::ProximityIndex;
using hashgrid::QueryResult;
using hashgrid::Status;
using hashgrid::ThreadBackend;
using hashgrid::platform::elapsed_ms;
using hashgrid::platform::now_ns;

// The tutorial's scene: a dense 2000 x 2000 area, clients a few units wide,
// queries 15 x 15 around random points.
constexpr float kWorldHalf = 1000.0f;
constexpr float kMinClientSize = 1.0f;
constexpr float kMaxClientSize = 5.0f;
constexpr float kQuerySize = 15.0f;
constexpr float kMoveStep = 1.0f; // each axis moves by up to this much
// Cells a little larger than the largest client: a client covers at most
// 2 x 2 cells, a query about 3 x 3.
constexpr float kCellSize = 8.0f;

struct Options {
    uint32_t clients = 100000;
    uint32_t queries = 1000;
    uint32_t check = 100; ///< Queries also answered by a linear scan (the first N of each round).
    uint32_t threads = 0; ///< 0: oneTBB's default concurrency.
};

bool parse_options(int argc, char** argv, Options& options) {
    if (!hashgrid_support::parse_count_options(argc, argv,
                                               {{"--clients", &options.clients},
                                                {"--queries", &options.queries},
                                                {"--check", &options.check},
                                                {"--threads", &options.threads}}))
        return false;
    if (options.clients == 0 || options.queries == 0) {
        std::fprintf(stderr, "need --clients >= 1 and --queries >= 1\n");
        return false;
    }
    options.check = std::min(options.check, options.queries);
    return true;
}

/// The application's side of each client: where it is and how big.
struct Client {
    ObjectHandle handle;
    float position[3] = {0.0f, 0.0f, 0.0f};
    float size[3] = {0.0f, 0.0f, 0.0f};
};

struct QueryPoint {
    float position[3] = {0.0f, 0.0f, 0.0f};
};

uint64_t handle_key(ObjectHandle h) { return (uint64_t{h.index} << 32) | h.generation; }

/// The linear scan of the tutorial's naive version: every client's box
/// (position -+ size / 2, as proximity_index.h computes it) against the query
/// box, closed on both sides. Returns the handles' keys, sorted.
std::vector<uint64_t> linear_find_near(const std::vector<Client>& clients, const float (&position)[3],
                                       const float (&size)[3]) {
    float qmin[2];
    float qmax[2];
    for (uint32_t d = 0; d < 2; ++d) {
        const float half = size[d] * 0.5f;
        qmin[d] = position[d] - half;
        qmax[d] = position[d] + half;
    }
    std::vector<uint64_t> found;
    for (const Client& c : clients) {
        bool overlap = true;
        for (uint32_t d = 0; d < 2; ++d) {
            const float half = c.size[d] * 0.5f;
            const float lo = c.position[d] - half;
            const float hi = c.position[d] + half;
            overlap = overlap && lo <= qmax[d] && qmin[d] <= hi;
        }
        if (overlap) found.push_back(handle_key(c.handle));
    }
    std::sort(found.begin(), found.end());
    return found;
}

struct QueryRound {
    double ms = 0.0;         ///< All queries through the index.
    double linear_ms = 0.0;  ///< The checked queries by linear scan.
    uint64_t results = 0;    ///< Handles returned over all queries.
    uint32_t mismatches = 0; ///< Checked queries whose answer differs from the scan.
    bool ok = true;          ///< Every query returned ok.
};

QueryRound run_queries(ProximityIndex& index, const std::vector<Client>& clients,
                       const std::vector<QueryPoint>& queries, uint32_t check) {
    QueryRound round;
    const float size[3] = {kQuerySize, kQuerySize, 0.0f};
    std::vector<ObjectHandle> out(1024);
    std::vector<uint32_t> counts(queries.size());
    std::vector<std::vector<uint64_t>> answers(check);

    const uint64_t start = now_ns();
    for (size_t q = 0; q < queries.size(); ++q) {
        const QueryResult r = index.find_near(queries[q].position, size, hashgrid::kAllLayers, out.data(), out.size());
        round.ok = round.ok && r.status.ok();
        counts[q] = static_cast<uint32_t>(r.total); // at most the client count
        round.results += r.total;
        if (q < check) { // keep the answer for the check below (outside the timed part it would cost a copy too)
            answers[q].resize(static_cast<size_t>(r.written));
            for (uint32_t k = 0; k < r.written; ++k)
                answers[q][k] = handle_key(out[k]);
        }
    }
    round.ms = elapsed_ms(start);

    const uint64_t linear_start = now_ns();
    for (uint32_t q = 0; q < check; ++q) {
        std::vector<uint64_t> expected = linear_find_near(clients, queries[q].position, size);
        std::sort(answers[q].begin(), answers[q].end());
        if (expected != answers[q]) ++round.mismatches;
    }
    round.linear_ms = elapsed_ms(linear_start);
    return round;
}

void print_round(const char* label, const QueryRound& r, uint32_t queries, uint32_t check) {
    std::printf("  %-30s %9.2f ms  (%.2f us per query, %.1f clients found per query)\n", label, r.ms,
                r.ms * 1000.0 / queries, static_cast<double>(r.results) / queries);
    if (check > 0) {
        std::printf("  %-30s %9.2f ms  for %u checked queries (%.1f ms per 1000, the tutorial's naive version)\n",
                    "  linear scan", r.linear_ms, check, r.linear_ms * 1000.0 / check);
        std::printf("  %-30s %u of %u answers differ\n", "  check", r.mismatches, check);
    }
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    if (!parse_options(argc, argv, options)) return 2;

#if defined(HASHGRID_HAS_TBB)
    hashgrid::platform::TbbBackend tbb(options.threads);
    const ThreadBackend backend = tbb.backend();
    std::printf("Hashgrid proximity index demo: oneTBB backend, %u threads\n", tbb.threads());
#else
    const ThreadBackend backend = hashgrid::serial_backend();
    std::printf("Hashgrid proximity index demo: serial backend (built without oneTBB)\n");
#endif
    std::printf("%u clients (%.0f..%.0f units wide) in a %.0f x %.0f area, %u find_near queries of %.0f x %.0f\n",
                options.clients, kMinClientSize, kMaxClientSize, 2 * kWorldHalf, 2 * kWorldHalf, options.queries,
                kQuerySize, kQuerySize);

    // Fixed memory for everything, once.
    hashgrid::ProximityIndexConfig config;
    config.grid.dimensions = 2;
    config.grid.cell_size = kCellSize;
    config.grid.max_objects = options.clients;
    config.grid.max_cell_entries = 4 * options.clients; // a client covers at most 2 x 2 cells
    config.grid.max_pairs = 4 * uint64_t{options.clients};
    ProximityIndex index;
    const hashgrid::MemoryRequirements req = ProximityIndex::memory_requirements(config);
    Status s = index.init_allocate(config);
    if (!s.ok()) {
        std::printf("init failed: %s (%s)\nFAIL\n", hashgrid::to_string(s.code), s.message);
        return 1;
    }
    std::printf("memory: %.1f MiB in one block, allocated at init\n\n", static_cast<double>(req.bytes) / (1 << 20));
    index.set_query_backend(backend);

    // splitmix64 with our own float mapping: the same scene on every standard library.
    hashgrid_support::SplitMix64 rng(2020);
    std::vector<Client> clients(options.clients);
    for (Client& c : clients) {
        c.position[0] = rng.uniform(-kWorldHalf, kWorldHalf);
        c.position[1] = rng.uniform(-kWorldHalf, kWorldHalf);
        c.size[0] = rng.uniform(kMinClientSize, kMaxClientSize);
        c.size[1] = rng.uniform(kMinClientSize, kMaxClientSize);
    }
    std::vector<QueryPoint> queries(options.queries);
    for (QueryPoint& q : queries) {
        q.position[0] = rng.uniform(-kWorldHalf, kWorldHalf);
        q.position[1] = rng.uniform(-kWorldHalf, kWorldHalf);
    }

    bool pass = true;
    // 1. NewClient for everyone.
    uint64_t start = now_ns();
    for (Client& c : clients) {
        const hashgrid::ObjectAddResult r = index.create_client(c.position, c.size);
        if (!r.status.ok()) {
            std::printf("create_client failed: %s\nFAIL\n", hashgrid::to_string(r.status.code));
            return 1;
        }
        c.handle = r.handle;
    }
    const double create_ms = elapsed_ms(start);
    // 2. One rebuild makes them visible.
    start = now_ns();
    s = index.update_index(backend);
    const double build_ms = elapsed_ms(start);
    pass = pass && s.ok();
    std::printf("create_client x %u %23.2f ms\n", options.clients, create_ms);
    std::printf("update_index (rebuild) %21.2f ms  (%llu cell entries)\n", build_ms,
                static_cast<unsigned long long>(index.cell_entry_count()));

    // 3. Queries.
    const QueryRound first = run_queries(index, clients, queries, options.check);
    print_round("find_near", first, options.queries, options.check);
    pass = pass && first.ok && first.mismatches == 0;

    // 4. Move every client a little (the tutorial's "force all clients to move").
    start = now_ns();
    for (Client& c : clients) {
        c.position[0] = c.position[0] + rng.uniform(-kMoveStep, kMoveStep);
        c.position[1] = c.position[1] + rng.uniform(-kMoveStep, kMoveStep);
        s = index.update_client(c.handle, c.position, c.size);
        pass = pass && s.ok();
    }
    const double move_ms = elapsed_ms(start);
    // 5. One rebuild for all the moves.
    start = now_ns();
    s = index.update_index(backend);
    const double rebuild_ms = elapsed_ms(start);
    pass = pass && s.ok();
    std::printf("\nupdate_client x %u %23.2f ms\n", options.clients, move_ms);
    std::printf("update_index (rebuild) %21.2f ms\n", rebuild_ms);
    std::printf("  %-30s %9.2f ms  (the tutorial's UpdateClient for everyone)\n", "moves + rebuild",
                move_ms + rebuild_ms);

    // 6. Queries again, on the new positions.
    const QueryRound second = run_queries(index, clients, queries, options.check);
    print_round("find_near after the move", second, options.queries, options.check);
    pass = pass && second.ok && second.mismatches == 0;

    // Bonus: every overlapping pair of clients, in parallel.
    std::vector<hashgrid::Pair> pairs(static_cast<size_t>(config.grid.max_pairs));
    start = now_ns();
    const hashgrid::PairResult pr = index.find_pairs(pairs.data(), pairs.size(), backend);
    const double pairs_ms = elapsed_ms(start);
    pass = pass && pr.status.ok();
    std::printf("\nfind_pairs %33.2f ms  (%llu overlapping client pairs)\n", pairs_ms,
                static_cast<unsigned long long>(pr.total));
    // Pairs name clients by dense index: map them to handles with the result,
    // checked (stale_view once a create or remove has changed the layout).
    std::vector<hashgrid::ObjectHandlePair> handle_pairs(static_cast<size_t>(pr.written));
    pass = index.objects().handles_at(index.grid().view(), pr, pairs.data(), handle_pairs.data()).ok() && pass;
    for (const hashgrid::ObjectHandlePair& hp : handle_pairs)
        pass = pass && index.contains(hp.a) && index.contains(hp.b);

    // RemoveClient for everyone: every handle goes stale.
    start = now_ns();
    for (const Client& c : clients)
        pass = index.remove_client(c.handle).ok() && pass;
    const double remove_ms = elapsed_ms(start);
    pass = pass && index.client_count() == 0 && !index.contains(clients[0].handle);
    std::printf("remove_client x %u %23.2f ms\n", options.clients, remove_ms);

    std::printf("%s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}

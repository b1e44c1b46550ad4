#include "hashgrid/platform/tbb_backend.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>
#include <optional>

namespace hashgrid::platform {

struct TbbBackend::State {
    // Raises oneTBB's process-wide cap when more threads than cores are asked
    // for (determinism tests run 16 threads on 2 cores).
    std::optional<tbb::global_control> limit;
    tbb::task_arena arena;
};

namespace {

struct ChunkRange {
    hashgrid::ChunkFn fn;
    void* context;
    uint32_t count;
    uint32_t grain;
};

void tbb_parallel_for(void* state, uint32_t count, uint32_t grain, hashgrid::ChunkFn fn, void* context) {
    auto* s = static_cast<TbbBackend::State*>(state);
    const uint32_t chunks = count / grain + (count % grain != 0 ? 1u : 0u);
    if (chunks == 1) {
        fn(context, 0, count, 0);
        return;
    }
    const ChunkRange job{fn, context, count, grain};
    s->arena.execute([&job, chunks] {
        // One chunk per leaf: simple_partitioner with grain 1 over chunk indices,
        // so chunk boundaries depend on (count, grain) only.
        tbb::parallel_for(
            tbb::blocked_range<uint32_t>(0, chunks, 1),
            [&job](const tbb::blocked_range<uint32_t>& range) {
                const int index = tbb::this_task_arena::current_thread_index();
                const uint32_t worker = index < 0 ? 0u : static_cast<uint32_t>(index);
                for (uint32_t c = range.begin(); c != range.end(); ++c) {
                    const uint32_t begin = c * job.grain;
                    const uint32_t end = job.count - begin > job.grain ? begin + job.grain : job.count;
                    job.fn(job.context, begin, end, worker);
                }
            },
            tbb::simple_partitioner{});
    });
}

} // namespace

TbbBackend::TbbBackend(uint32_t threads) : state_(new State) {
    if (threads != 0) {
        const auto hardware = static_cast<uint32_t>(tbb::this_task_arena::max_concurrency());
        if (threads > hardware)
            state_->limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
        state_->arena.initialize(static_cast<int>(threads));
    } else {
        state_->arena.initialize();
    }
}

TbbBackend::~TbbBackend() { delete state_; }

ThreadBackend TbbBackend::backend() const {
    ThreadBackend backend;
    backend.parallel_for = &tbb_parallel_for;
    backend.state = state_;
    backend.worker_count = static_cast<uint32_t>(state_->arena.max_concurrency());
    return backend;
}

uint32_t TbbBackend::threads() const { return static_cast<uint32_t>(state_->arena.max_concurrency()); }

} // namespace hashgrid::platform

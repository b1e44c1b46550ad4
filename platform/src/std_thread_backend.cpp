// SPDX-License-Identifier: MIT
// std::thread backend on the shared chunk dispatcher (chunk_dispatcher.h).
#include "hashgrid/platform/std_thread_backend.h"

#include "chunk_dispatcher.h"

#include <thread>
#include <vector>

namespace hashgrid::platform {

struct StdThreadBackend::State {
    detail::ChunkDispatcher dispatcher;
    std::vector<std::thread> workers; // sized once, at construction
};

StdThreadBackend::StdThreadBackend(uint32_t threads, uint32_t spin_microseconds) : state_(new State) {
    const uint32_t hardware = std::thread::hardware_concurrency();
    if (threads == 0) threads = hardware;
    if (threads == 0) threads = 1;
    state_->dispatcher.set_participants(threads);
    if (hardware != 0 && threads <= hardware) state_->dispatcher.set_spin_ns(uint64_t{spin_microseconds} * 1000);
    state_->workers.reserve(threads - 1);
    for (uint32_t worker = 1; worker < threads; ++worker)
        state_->workers.emplace_back([s = state_, worker] { s->dispatcher.worker_loop(worker); });
}

StdThreadBackend::~StdThreadBackend() {
    state_->dispatcher.stop();
    for (std::thread& t : state_->workers)
        t.join();
    delete state_;
}

ThreadBackend StdThreadBackend::backend() const { return state_->dispatcher.backend(); }

uint32_t StdThreadBackend::threads() const { return state_->dispatcher.participants(); }

} // namespace hashgrid::platform

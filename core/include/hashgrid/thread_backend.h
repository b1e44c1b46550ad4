// SPDX-License-Identifier: MIT
/// @file
/// The only view of threads that core/ has. platform/ implements it for oneTBB,
/// serial execution and a game's own job system; core/ never includes TBB.
///
/// Determinism contract: core/ splits every loop into chunks that depend on the
/// item count and a fixed grain only. A backend runs each chunk exactly once, in
/// any order, on any thread; outputs never depend on which thread ran what.
#pragma once

#include <cstdint>
#include <type_traits>

namespace hashgrid {

/// Body of one chunk: items [begin, end). worker < ThreadBackend::worker_count.
using ChunkFn = void (*)(void* context, uint32_t begin, uint32_t end, uint32_t worker);

/// A parallel-for over a count with a fixed grain.
struct ThreadBackend {
    /// Must call fn(context, c * grain, min((c + 1) * grain, count), worker) once
    /// for every c in [0, ceil(count / grain)), possibly concurrently, and return
    /// when all calls have returned. Must not allocate after the backend's own init.
    void (*parallel_for)(void* state, uint32_t count, uint32_t grain, ChunkFn fn, void* context) = nullptr;
    /// Backend-owned state passed back to parallel_for.
    void* state = nullptr;
    /// Upper bound (exclusive) of the worker index passed to chunk bodies.
    uint32_t worker_count = 1;
};

/// A backend that runs every chunk in order on the calling thread.
ThreadBackend serial_backend();

/// Runs body(begin, end, worker) over chunks of `grain` items through the
/// backend. The lambda lives on the caller's stack: no allocation. A backend
/// without parallel_for (a default-constructed ThreadBackend) runs every chunk
/// in order on the calling thread, like serial_backend(), in every build: the
/// results are the same bytes either way.
template <typename Body>
void parallel_chunks(const ThreadBackend& backend, uint32_t count, uint32_t grain, Body&& body) {
    using BodyType = std::remove_reference_t<Body>;
    if (count == 0) return;
    if (backend.parallel_for == nullptr) {
        const uint32_t step = grain == 0 ? count : grain; // core never passes 0; never loop forever
        for (uint32_t begin = 0; begin < count; begin += step)
            body(begin, count - begin < step ? count : begin + step, 0u);
        return;
    }
    auto trampoline = [](void* context, uint32_t begin, uint32_t end, uint32_t worker) {
        (*static_cast<BodyType*>(context))(begin, end, worker);
    };
    backend.parallel_for(backend.state, count, grain, trampoline, const_cast<void*>(static_cast<const void*>(&body)));
}

} // namespace hashgrid

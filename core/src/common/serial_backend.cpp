// SPDX-License-Identifier: MIT
#include "hashgrid/thread_backend.h"

namespace hashgrid {
namespace {

void serial_parallel_for(void*, uint32_t count, uint32_t grain, ChunkFn fn, void* context) {
    for (uint32_t begin = 0; begin < count;) {
        const uint32_t end = count - begin > grain ? begin + grain : count;
        fn(context, begin, end, 0);
        begin = end;
    }
}

} // namespace

ThreadBackend serial_backend() {
    ThreadBackend backend;
    backend.parallel_for = &serial_parallel_for;
    backend.state = nullptr;
    backend.worker_count = 1;
    return backend;
}

} // namespace hashgrid

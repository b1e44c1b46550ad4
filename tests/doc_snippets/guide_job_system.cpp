// SPDX-License-Identifier: MIT
// Context of the user guide's JobSystemBackend callbacks: the block declares
// them; defined here (a "job system" that runs every copy inline) and plugged
// into the adapter, so the declared signatures must be the ones it takes.
#include "hashgrid/platform/job_system_backend.h"

#include <cstdint>
#include <cstdio>

// @snippet@

void* enqueue(hashgrid::platform::JobTaskFn task, uint32_t copies, void* task_context, void*) {
    for (uint32_t c = 0; c < copies; ++c)
        task(task_context);
    return nullptr; // every copy has returned
}
void finish(void*, void*) {}

int main() {
    hashgrid::platform::JobSystemConfig jc;
    jc.enqueue = &enqueue;
    jc.finish = &finish;
    jc.worker_count = 2;
    hashgrid::platform::JobSystemBackend adapter(jc);
    const bool pass = adapter.status().ok();
    std::printf("%s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}

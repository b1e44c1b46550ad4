// SPDX-License-Identifier: MIT
// The counting assert hook (assert_hook.h). Core's hook is a bare function
// pointer, so the hook's state is process-wide; every field is atomic so that
// asserts failing on worker threads read it without a data race.
#include "hashgrid/platform/assert_hook.h"

#include <atomic>

namespace hashgrid::platform {
namespace {

std::atomic<uint64_t> g_failures{0};
std::atomic<AssertLogFn> g_log{nullptr};
std::atomic<void*> g_user{nullptr};
std::atomic<bool> g_abort{false};
// The last failure, field by field (each a static string or a line number).
std::atomic<const char*> g_last_expression{""};
std::atomic<const char*> g_last_message{""};
std::atomic<const char*> g_last_file{""};
std::atomic<int> g_last_line{0};

} // namespace

bool counting_assert_hook(const char* expression, const char* message, const char* file, int line) {
    AssertFailure failure;
    failure.expression = expression != nullptr ? expression : "";
    failure.message = message != nullptr ? message : "";
    failure.file = file != nullptr ? file : "";
    failure.line = line;
    g_last_expression.store(failure.expression, std::memory_order_relaxed);
    g_last_message.store(failure.message, std::memory_order_relaxed);
    g_last_file.store(failure.file, std::memory_order_relaxed);
    g_last_line.store(failure.line, std::memory_order_relaxed);
    g_failures.fetch_add(1, std::memory_order_acq_rel);
    if (AssertLogFn log = g_log.load(std::memory_order_acquire)) log(failure, g_user.load(std::memory_order_acquire));
    return g_abort.load(std::memory_order_acquire);
}

void install_counting_assert_hook(AssertLogFn log, void* user, AssertAction action) {
    g_user.store(user, std::memory_order_release);
    g_log.store(log, std::memory_order_release);
    g_abort.store(action == AssertAction::abort, std::memory_order_release);
    reset_assert_failure_count();
    set_assert_hook(&counting_assert_hook);
}

void restore_default_assert_hook() { set_assert_hook(nullptr); }

uint64_t assert_failure_count() { return g_failures.load(std::memory_order_acquire); }

void reset_assert_failure_count() {
    g_failures.store(0, std::memory_order_release);
    g_last_expression.store("", std::memory_order_relaxed);
    g_last_message.store("", std::memory_order_relaxed);
    g_last_file.store("", std::memory_order_relaxed);
    g_last_line.store(0, std::memory_order_relaxed);
}

AssertFailure last_assert_failure() {
    AssertFailure failure;
    failure.expression = g_last_expression.load(std::memory_order_relaxed);
    failure.message = g_last_message.load(std::memory_order_relaxed);
    failure.file = g_last_file.load(std::memory_order_relaxed);
    failure.line = g_last_line.load(std::memory_order_relaxed);
    return failure;
}

} // namespace hashgrid::platform

// SPDX-License-Identifier: MIT
/// @file
/// The assert hook, from the platform side: core's set_assert_hook (assert.h)
/// re-exported, and a ready-made hook that counts failures and forwards each
/// one to a user log callback (a game's logger, a test's failure list).
///
/// Recipe (a game routing Hashgrid's asserts to its own log, then breaking):
///
///     void log_assert(const hashgrid::platform::AssertFailure& f, void* logger) {
///         static_cast<MyLogger*>(logger)->error("%s:%d %s (%s)", f.file, f.line, f.message, f.expression);
///     }
///     hashgrid::platform::install_counting_assert_hook(&log_assert, &logger, hashgrid::platform::AssertAction::abort);
///
/// Recipe (a test that expects an assert and wants to continue):
///
///     hashgrid::platform::ScopedCountingAssertHook hook;   // continue, no log
///     ... call that should assert ...
///     CHECK(hook.failures() == 1);
///
/// The hook is process-wide (core keeps one function pointer without a
/// context), so its counter and log callback are process-wide too. Core's
/// default hook (print to stderr, abort) stays what runs when nothing is
/// installed; core never depends on this header.
#pragma once

#include "hashgrid/assert.h"

#include <cstdint>

namespace hashgrid::platform {

using hashgrid::AssertHook;
using hashgrid::set_assert_hook;

/// One failed HASHGRID_ASSERT, as the hook received it (static strings).
struct AssertFailure {
    const char* expression = ""; ///< The failed condition's source text.
    const char* message = "";    ///< The assert's message.
    const char* file = "";       ///< Source file of the assert.
    int line = 0;                ///< Line of the assert.
};

/// Called by the counting hook for each failure, on the failing thread.
using AssertLogFn = void (*)(const AssertFailure& failure, void* user);

/// What the counting hook tells core after counting and logging.
enum class AssertAction : uint8_t {
    resume, ///< Continue after the failed check (tests that provoke asserts on purpose).
    abort,  ///< std::abort(), like core's default hook.
};

/// The counting hook itself (for set_assert_hook); configure it with
/// install_counting_assert_hook, which also installs it.
bool counting_assert_hook(const char* expression, const char* message, const char* file, int line);

/// Sets the log callback (may be null: count only) and the action, resets the
/// counter and installs counting_assert_hook. Not meant to race with failing
/// asserts on other threads (install at startup or in a test's set-up).
void install_counting_assert_hook(AssertLogFn log = nullptr, void* user = nullptr,
                                  AssertAction action = AssertAction::resume);

/// Restores core's default hook (print to stderr, abort).
void restore_default_assert_hook();

/// Failures seen by the counting hook since it was last installed or reset.
[[nodiscard]] uint64_t assert_failure_count();
/// Sets the counting hook's failure count to 0.
void reset_assert_failure_count();

/// The most recent failure seen by the counting hook (empty strings if none).
/// Racy if asserts fail on several threads at once; meant for tests.
[[nodiscard]] AssertFailure last_assert_failure();

/// Installs the counting hook for a scope and restores core's default hook
/// afterwards (core cannot report which hook was installed before).
class ScopedCountingAssertHook {
public:
    /// install_counting_assert_hook(log, user, action).
    explicit ScopedCountingAssertHook(AssertLogFn log = nullptr, void* user = nullptr,
                                      AssertAction action = AssertAction::resume) {
        install_counting_assert_hook(log, user, action);
    }
    ~ScopedCountingAssertHook() { restore_default_assert_hook(); }
    ScopedCountingAssertHook(const ScopedCountingAssertHook&) = delete;
    ScopedCountingAssertHook& operator=(const ScopedCountingAssertHook&) = delete;

    /// assert_failure_count(): failures since the hook was installed (or the count reset).
    [[nodiscard]] uint64_t failures() const { return assert_failure_count(); }
};

} // namespace hashgrid::platform

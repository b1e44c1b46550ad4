// SPDX-License-Identifier: MIT
/// @file
/// Programmer-error checks with a replaceable hook (in the spirit of Jolt's
/// JPH_ASSERT). Data and capacity problems are Status codes, not asserts.
#pragma once

namespace hashgrid {

/// Called when an assertion fails. Return true to break/abort (the default
/// handler prints and aborts), false to continue (tests use this to count).
using AssertHook = bool (*)(const char* expression, const char* message, const char* file, int line);

/// Installs a hook; nullptr restores the default (print to stderr, abort).
void set_assert_hook(AssertHook hook);

/// Invokes the current hook; aborts if it returns true.
void assert_failed(const char* expression, const char* message, const char* file, int line);

} // namespace hashgrid

/// @def HASHGRID_ASSERT(cond, msg)
/// Checks a programmer error: when `cond` is false, calls assert_failed() with
/// the condition's text, `msg`, the file and the line.
///
/// HASHGRID_ENABLE_ASSERTS is defined for Hashgrid's own sources only, never
/// for code that merely includes these headers. CMake option HASHGRID_ASSERTS:
/// on by default when Hashgrid is the top-level project (the test presets; the
/// release preset turns it off), in the Debug configuration only when it is a
/// subproject of a consumer's build. Elsewhere the checks compile to nothing.
#if defined(HASHGRID_ENABLE_ASSERTS)
#define HASHGRID_ASSERT(cond, msg)                                                                                     \
    do {                                                                                                               \
        if (!(cond)) ::hashgrid::assert_failed(#cond, msg, __FILE__, __LINE__);                                        \
    } while (0)
#else
#define HASHGRID_ASSERT(cond, msg)                                                                                     \
    do {                                                                                                               \
    } while (0)
#endif

// SPDX-License-Identifier: MIT
#include "hashgrid/assert.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace hashgrid {
namespace {

bool default_hook(const char* expression, const char* message, const char* file, int line) {
    std::fprintf(stderr, "hashgrid: assertion failed: %s (%s) at %s:%d\n", message, expression, file, line);
    return true;
}

std::atomic<AssertHook> g_hook{&default_hook};

} // namespace

void set_assert_hook(AssertHook hook) { g_hook.store(hook != nullptr ? hook : &default_hook); }

void assert_failed(const char* expression, const char* message, const char* file, int line) {
    if (g_hook.load()(expression, message, file, line)) std::abort();
}

} // namespace hashgrid

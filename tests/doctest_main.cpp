// SPDX-License-Identifier: MIT
// doctest's implementation and main(), compiled once for every test program
// (the test files include <doctest/doctest.h> without an IMPLEMENT define).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

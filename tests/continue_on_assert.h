// SPDX-License-Identifier: MIT
// Tests that provoke programmer errors on purpose: while a ContinueOnAssert
// lives, a failed HASHGRID_ASSERT returns to the call, as in a build without
// asserts, so the test sees the status the call reports in every build.
#pragma once

#include "hashgrid/assert.h"

namespace hashgrid_test {

struct ContinueOnAssert {
    ContinueOnAssert() { hashgrid::set_assert_hook(&keep_going); }
    ~ContinueOnAssert() { hashgrid::set_assert_hook(nullptr); }
    ContinueOnAssert(const ContinueOnAssert&) = delete;
    ContinueOnAssert& operator=(const ContinueOnAssert&) = delete;

private:
    static bool keep_going(const char*, const char*, const char*, int) { return false; }
};

} // namespace hashgrid_test

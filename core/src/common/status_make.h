// SPDX-License-Identifier: MIT
// How the library builds every Status it reports: a code and its static
// message, plus the exact count for capacity codes or the lowest offending
// item for per-item codes. One place, so that a status means the same thing
// whichever type or step reports it.
#pragma once

#include "hashgrid/status.h"

#include <cstdint>

namespace hashgrid::detail {

/// A status with a code and a static message (never null).
inline Status make_status(StatusCode code, const char* message) {
    Status s;
    s.code = code;
    s.message = message;
    return s;
}

/// A capacity status: `needed` is the exact count that would have fit.
inline Status capacity_status(StatusCode code, const char* message, uint64_t needed) {
    Status s = make_status(code, message);
    s.needed = needed;
    return s;
}

/// A per-item status: the lowest offending item and how many offend.
inline Status item_status(StatusCode code, const char* message, uint32_t index, uint32_t count) {
    Status s = make_status(code, message);
    s.index = index;
    s.count = count;
    return s;
}

} // namespace hashgrid::detail

// SPDX-License-Identifier: MIT
// The thread backend the examples run on: oneTBB where that backend is built
// (HASHGRID_HAS_TBB, defined for programs that link hashgrid::tbb), else the
// std::thread backend. Either is created once and kept for every frame.
#pragma once

#if defined(HASHGRID_HAS_TBB)
#include "hashgrid/platform/tbb_backend.h"
#else
#include "hashgrid/platform/std_thread_backend.h"
#endif

namespace hashgrid_support {

#if defined(HASHGRID_HAS_TBB)
using ExampleBackend = hashgrid::platform::TbbBackend;
inline constexpr const char* kExampleBackendName = "oneTBB";
#else
using ExampleBackend = hashgrid::platform::StdThreadBackend;
inline constexpr const char* kExampleBackendName = "std::thread";
#endif

} // namespace hashgrid_support

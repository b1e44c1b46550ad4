// SPDX-License-Identifier: MIT
/// @file
/// How the built-in thread backends (TbbBackend, StdThreadBackend) wait
/// between jobs.
#pragma once

#include <cstdint>

namespace hashgrid::platform {

/// How long, in microseconds, an idle worker of a built-in backend keeps
/// polling for the next parallel loop before it sleeps. A frame's phases
/// follow each other within microseconds, and waking a sleeping thread costs
/// tens of microseconds, which is more than a small phase takes: polling
/// across those gaps is what lets a 2,000-particle frame run no slower on two
/// threads than on one. The cost is at most this much CPU time per worker
/// after the last loop of a frame. 0 sleeps at once (lowest power). Backends
/// with more threads than the machine has cores never poll.
inline constexpr uint32_t kDefaultWorkerSpinMicroseconds = 50;

} // namespace hashgrid::platform

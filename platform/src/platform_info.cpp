// Anchor translation unit so the platform library exists without oneTBB.
#include "hashgrid/platform/timer.h"

namespace hashgrid::platform {
uint64_t platform_start_ns() { return now_ns(); }
} // namespace hashgrid::platform

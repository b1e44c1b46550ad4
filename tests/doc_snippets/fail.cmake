# SPDX-License-Identifier: MIT
# The test of a code block that cannot be built (CMakeLists.txt here): fails
# with the reason.  cmake -DMESSAGE=<why> -P fail.cmake
message(FATAL_ERROR "${MESSAGE}")

# SPDX-License-Identifier: MIT
# The "console profile" on x86-64: clang 16 with -fno-exceptions -fno-rtti
# (what console and embedded runtimes build with); warnings stay errors
# (HASHGRID_WERROR). Needs clang-16 (tools/setup-cross.sh). Not a cross build:
# tests run natively.
set(CMAKE_C_COMPILER clang-16)
set(CMAKE_CXX_COMPILER clang++-16)
set(CMAKE_CXX_FLAGS_INIT "-fno-exceptions -fno-rtti")

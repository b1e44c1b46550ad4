# SPDX-License-Identifier: MIT
# The native GCC build (the default preset), spelled out as a toolchain file
# so that every configuration of the cross-target matrix has one.
set(CMAKE_C_COMPILER gcc)
set(CMAKE_CXX_COMPILER g++)

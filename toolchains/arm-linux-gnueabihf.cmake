# SPDX-License-Identifier: MIT
# Cross toolchain: 32-bit ARM hard-float (embedded; 32-bit size_t), Debian 12 multiarch.
# Needs (tools/setup-cross.sh): g++-arm-linux-gnueabihf, qemu-user, and
# `dpkg --add-architecture` + libtbb-dev for the target architecture.
# Tests run under qemu-arm through CTest (CMAKE_CROSSCOMPILING_EMULATOR).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(_triplet arm-linux-gnueabihf)

set(CMAKE_C_COMPILER ${_triplet}-gcc)
set(CMAKE_CXX_COMPILER ${_triplet}-g++)
# Debian multiarch keeps target libraries and their CMake package configs in
# /usr/lib/<triplet> (e.g. /usr/lib/${_triplet}/cmake/TBB); pin the search there,
# never on the host's x86_64 directory.
set(CMAKE_LIBRARY_ARCHITECTURE ${_triplet})
set(CMAKE_FIND_ROOT_PATH /usr/${_triplet} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# No -L for qemu: libtbb12 pulls in the multiarch libc6 for this architecture,
# whose loader qemu finds by itself. -L /usr/${_triplet} would mix the cross
# loader with the multiarch libc (different builds) and hang or crash.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm)

# SPDX-License-Identifier: MIT
# Windows-like target: MinGW-w64 (posix threads variant); tests run under wine.
# Needs (tools/setup-cross.sh): g++-mingw-w64-x86-64-posix, wine, wine64.
# Debian has no oneTBB for this target: configure with HASHGRID_USE_TBB=OFF
# (the mingw preset does) and use the std::thread or serial backend.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(_triplet x86_64-w64-mingw32)

set(CMAKE_C_COMPILER ${_triplet}-gcc-posix)
set(CMAKE_CXX_COMPILER ${_triplet}-g++-posix)
set(CMAKE_RC_COMPILER ${_triplet}-windres)

set(CMAKE_FIND_ROOT_PATH /usr/${_triplet})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# doctest is a header-only package of the host (Architecture: all): let
# find_package look on the host as well.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# Static runtime: otherwise wine needs WINEPATH set to the directories of
# libstdc++-6.dll, libgcc_s_seh-1.dll and libwinpthread-1.dll, and with
# WINEDEBUG=-all a missing DLL fails silently (exit 53, no output).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

# One throwaway wine prefix per build tree unless WINEPREFIX is set. `wine`
# (not wine64, which Debian keeps off PATH) runs 64-bit programs.
if(DEFINED ENV{WINEPREFIX} AND NOT "$ENV{WINEPREFIX}" STREQUAL "")
  set(_wineprefix "$ENV{WINEPREFIX}")
else()
  set(_wineprefix "${CMAKE_BINARY_DIR}/wineprefix")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR env WINEPREFIX=${_wineprefix} WINEDEBUG=-all
                                  WINEDLLOVERRIDES=winemenubuilder.exe=d wine)

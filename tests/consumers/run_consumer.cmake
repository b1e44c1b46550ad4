# SPDX-License-Identifier: MIT
# Drives one packaging test (tests/consumers/CMakeLists.txt):
#   cmake -DSTEP=install   -DBUILD_TREE=<dir> -DPREFIX=<dir> [-DLICENSE=<file> -DDOCDIR=<dir>]
#         -P run_consumer.cmake
#   cmake -DSTEP=cmake     -DSOURCE=<dir> -DBINARY=<dir> -DGENERATOR=<g> -DBUILD_TYPE=<cfg>
#         [-DMAKE_PROGRAM=<p>] [-DTOOLCHAIN_FILE=<f> | -DCXX_COMPILER=<c>] [-DJOBS=<n>]
#         [-DARGS=a|b|c] -P run_consumer.cmake
#   cmake -DSTEP=pkg-config -DSOURCE=<main.cpp> -DBINARY=<dir> -DPREFIX=<dir> -DLIBDIR=<dir>
#         -DINCLUDEDIR=<dir> -DCXX_COMPILER=<c> [-DCXX_FLAGS=<flags>] [-DTHREAD_LIBS=<flags>]
#         -DMODULES=hashgrid|hashgrid-tbb -P run_consumer.cmake
# install: a fresh `cmake --install` of the build tree under test into PREFIX;
#   with LICENSE, PREFIX/DOCDIR/LICENSE must be a copy of that file.
# cmake: a fresh configure, build and run of a consumer project (its program
#   is BINARY/consumer). pkg-config: hashgrid.pc passes `pkg-config --validate`
#   without a word, names its licence, and `pkg-config --cflags` and `--libs
#   hashgrid` print the prefix's directories as plain paths
#   (-IPREFIX/INCLUDEDIR) and THREAD_LIBS; `--define-prefix` finds a copy of
#   the .pc files moved elsewhere. Then, for each module, the one-file program
#   compiled as C++17 (warnings as errors) with the compiler and `pkg-config
#   --cflags --libs <module>` only, and run. Each step prints its wall time;
#   any failure fails the test.
cmake_minimum_required(VERSION 3.25)

function(run_step name)
  string(TIMESTAMP _start "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  string(TIMESTAMP _end "%s")
  math(EXPR _seconds "${_end} - ${_start}")
  if(NOT _rc EQUAL 0)
    list(JOIN ARGN " " _command)
    message("${_out}")
    message(FATAL_ERROR "${name} failed (${_rc}, ${_seconds} s): ${_command}")
  endif()
  message(STATUS "${name}: ${_seconds} s")
  set(STEP_OUTPUT "${_out}" PARENT_SCOPE)
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE "${PREFIX}")
  run_step("install" ${CMAKE_COMMAND} --install "${BUILD_TREE}" --prefix "${PREFIX}")
  message(STATUS "installed into ${PREFIX}")
  if(LICENSE)
    set(_installed "${PREFIX}/${DOCDIR}/LICENSE")
    if(NOT EXISTS "${_installed}")
      message(FATAL_ERROR "the install has no ${DOCDIR}/LICENSE")
    endif()
    file(SHA256 "${LICENSE}" _want)
    file(SHA256 "${_installed}" _have)
    if(NOT _have STREQUAL _want)
      message(FATAL_ERROR "${_installed} is not a copy of ${LICENSE}")
    endif()
    message(STATUS "licence: ${DOCDIR}/LICENSE")
  endif()
elseif(STEP STREQUAL "cmake")
  file(REMOVE_RECURSE "${BINARY}")
  string(REPLACE "|" ";" _args "${ARGS}")
  set(_configure ${CMAKE_COMMAND} -S "${SOURCE}" -B "${BINARY}" -G "${GENERATOR}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
  if(MAKE_PROGRAM)
    list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  if(TOOLCHAIN_FILE)
    list(APPEND _configure "-DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN_FILE}")
  elseif(CXX_COMPILER)
    list(APPEND _configure "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
  endif()
  if(NOT JOBS)
    set(JOBS 2)
  endif()
  run_step("configure" ${_configure} ${_args})
  run_step("build" ${CMAKE_COMMAND} --build "${BINARY}" --parallel ${JOBS})
  run_step("run" "${BINARY}/consumer")
  message("${STEP_OUTPUT}")
elseif(STEP STREQUAL "pkg-config")
  find_program(_pkg_config NAMES pkg-config pkgconf REQUIRED)
  # The installed .pc files first; the system's (tbb.pc) after them.
  if(DEFINED ENV{PKG_CONFIG_PATH} AND NOT "$ENV{PKG_CONFIG_PATH}" STREQUAL "")
    set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig:$ENV{PKG_CONFIG_PATH}")
  else()
    set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
  endif()
  file(REMOVE_RECURSE "${BINARY}")
  file(MAKE_DIRECTORY "${BINARY}")
  # The .pc file itself: valid, licensed, plain paths, the thread flag.
  run_step("pkg-config --validate hashgrid" ${_pkg_config} --validate hashgrid)
  string(STRIP "${STEP_OUTPUT}" _said)
  if(NOT _said STREQUAL "")
    message(FATAL_ERROR "pkg-config --validate hashgrid: ${_said}")
  endif()
  file(STRINGS "${PREFIX}/${LIBDIR}/pkgconfig/hashgrid.pc" _license REGEX "^License: ")
  if(NOT _license STREQUAL "License: MIT")
    message(FATAL_ERROR "hashgrid.pc: '${_license}', expected 'License: MIT'")
  endif()
  set(_checks "--cflags|-I${PREFIX}/${INCLUDEDIR}" "--libs|-L${PREFIX}/${LIBDIR} -lhashgrid_platform -lhashgrid")
  if(THREAD_LIBS)
    string(APPEND _checks " ${THREAD_LIBS}")
  endif()
  # A copy of the .pc files elsewhere, found with --define-prefix (pkg-config
  # and pkgconf take the prefix from the .pc file's directory then).
  set(_moved "${BINARY}/moved")
  file(COPY "${PREFIX}/${LIBDIR}/pkgconfig/hashgrid.pc" DESTINATION "${_moved}/lib/pkgconfig")
  foreach(_check IN LISTS _checks ITEMS "--cflags --define-prefix|-I${_moved}/${INCLUDEDIR}")
    string(REPLACE "|" ";" _check "${_check}")
    list(GET _check 0 _spelled)
    list(GET _check 1 _want)
    separate_arguments(_options UNIX_COMMAND "${_spelled}")
    set(_pc hashgrid)
    if(_spelled MATCHES "define-prefix")
      set(_pc "${_moved}/lib/pkgconfig/hashgrid.pc")
    endif()
    run_step("pkg-config ${_spelled} ${_pc}" ${_pkg_config} ${_options} ${_pc})
    string(STRIP "${STEP_OUTPUT}" _have)
    if(NOT _have STREQUAL _want)
      message(FATAL_ERROR "pkg-config ${_spelled} ${_pc} printed '${_have}', expected '${_want}'")
    endif()
    message(STATUS "pkg-config ${_spelled} ${_pc}: ${_have}")
  endforeach()

  separate_arguments(_cxx_flags UNIX_COMMAND "${CXX_FLAGS}")
  string(REPLACE "|" ";" _modules "${MODULES}")
  foreach(_module IN LISTS _modules)
    run_step("pkg-config ${_module}" ${_pkg_config} --cflags --libs ${_module})
    string(STRIP "${STEP_OUTPUT}" _flags)
    message(STATUS "pkg-config --cflags --libs ${_module}: ${_flags}")
    separate_arguments(_flags UNIX_COMMAND "${_flags}")
    run_step("compile ${_module}" ${CXX_COMPILER} ${_cxx_flags} -std=c++17 -Wall -Wextra -Wpedantic -Werror -O2
             "${SOURCE}" -o
             "${BINARY}/consumer-${_module}" ${_flags})
    run_step("run ${_module}" "${BINARY}/consumer-${_module}")
    message("${STEP_OUTPUT}")
  endforeach()
else()
  message(FATAL_ERROR "run_consumer.cmake: unknown STEP '${STEP}'")
endif()

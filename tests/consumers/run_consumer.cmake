# SPDX-License-Identifier: MIT
# Drives one packaging test (tests/consumers/CMakeLists.txt):
#   cmake -DSTEP=install   -DBUILD_TREE=<dir> -DPREFIX=<dir> -P run_consumer.cmake
#   cmake -DSTEP=cmake     -DSOURCE=<dir> -DBINARY=<dir> -DGENERATOR=<g> -DBUILD_TYPE=<cfg>
#         [-DMAKE_PROGRAM=<p>] [-DTOOLCHAIN_FILE=<f> | -DCXX_COMPILER=<c>] [-DJOBS=<n>]
#         [-DARGS=a|b|c] -P run_consumer.cmake
#   cmake -DSTEP=pkg-config -DSOURCE=<main.cpp> -DBINARY=<dir> -DPREFIX=<dir> -DLIBDIR=<dir>
#         -DCXX_COMPILER=<c> [-DCXX_FLAGS=<flags>] -DMODULES=hashgrid|hashgrid-tbb -P run_consumer.cmake
# install: a fresh `cmake --install` of the build tree under test into PREFIX.
# cmake: a fresh configure, build and run of a consumer project (its program
#   is BINARY/consumer). pkg-config: for each module, the one-file program
#   compiled with the compiler and `pkg-config --cflags --libs <module>` only,
#   then run. Each step prints its wall time; any failure fails the test.
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
  separate_arguments(_cxx_flags UNIX_COMMAND "${CXX_FLAGS}")
  string(REPLACE "|" ";" _modules "${MODULES}")
  foreach(_module IN LISTS _modules)
    run_step("pkg-config ${_module}" ${_pkg_config} --cflags --libs ${_module})
    string(STRIP "${STEP_OUTPUT}" _flags)
    message(STATUS "pkg-config --cflags --libs ${_module}: ${_flags}")
    separate_arguments(_flags UNIX_COMMAND "${_flags}")
    run_step("compile ${_module}" ${CXX_COMPILER} ${_cxx_flags} -std=c++20 -O2 "${SOURCE}" -o
             "${BINARY}/consumer-${_module}" ${_flags})
    run_step("run ${_module}" "${BINARY}/consumer-${_module}")
    message("${STEP_OUTPUT}")
  endforeach()
else()
  message(FATAL_ERROR "run_consumer.cmake: unknown STEP '${STEP}'")
endif()

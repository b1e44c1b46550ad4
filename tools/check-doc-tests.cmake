# SPDX-License-Identifier: MIT
# Checks that every test a document names still exists: each `test_file`
# "test case" reference (the bad-input table of docs/user-guide.md) must match
# a TEST_CASE("test case...") in tests/test_file.cpp. Run by CTest as
# docs_tests_exist:  cmake -DDOC=<file> -DTESTS=<tests dir> -P check-doc-tests.cmake
file(READ "${DOC}" doc)
# CMake lists split at ';': keep semicolons inside test names as a placeholder.
string(REPLACE ";" "<semicolon>" doc "${doc}")
string(REGEX MATCHALL "`(test_[a-z_]+)` \"([^\"]+)\"" refs "${doc}")
list(LENGTH refs count)
if(count EQUAL 0)
  message(FATAL_ERROR "${DOC}: no test references found")
endif()
set(missing 0)
foreach(ref IN LISTS refs)
  string(REGEX REPLACE "`(test_[a-z_]+)` \"([^\"]+)\"" "\\1" test_file "${ref}")
  string(REGEX REPLACE "`(test_[a-z_]+)` \"([^\"]+)\"" "\\2" test_case "${ref}")
  string(REPLACE "<semicolon>" ";" test_case "${test_case}")
  set(path "${TESTS}/${test_file}.cpp")
  if(NOT EXISTS "${path}")
    message(SEND_ERROR "${DOC} names ${test_file}, but ${path} does not exist")
    math(EXPR missing "${missing} + 1")
    continue()
  endif()
  file(READ "${path}" source)
  string(REPLACE ";" "<semicolon>" source "${source}")
  string(REPLACE ";" "<semicolon>" test_case "${test_case}")
  string(FIND "${source}" "TEST_CASE(\"${test_case}" at)
  if(at EQUAL -1)
    message(SEND_ERROR "${DOC} names ${test_file} \"${test_case}\", which is not a TEST_CASE there")
    math(EXPR missing "${missing} + 1")
  endif()
endforeach()
message(STATUS "${DOC}: ${count} test references, ${missing} missing")

# SPDX-License-Identifier: MIT
# The CTest test api_reference (docs/CMakeLists.txt):
#   cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile> -DHTML=<output html dir>
#         -DMAIN=<user-guide.md> -DPAGES=<a.md>|<b.md> -P check-api-reference.cmake
# Runs doxygen on a fresh output directory (any warning fails it:
# WARN_AS_ERROR in Doxyfile.in), then checks the result: the main page is
# MAIN (its title is MAIN's first heading), and each of PAGES has its page,
# listed among the related pages.
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${HTML}")
execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "doxygen failed (${_rc})")
endif()

function(first_heading file out)
  file(STRINGS "${file}" _heading REGEX "^# " LIMIT_COUNT 1)
  string(REGEX REPLACE "^# +" "" _heading "${_heading}")
  set(${out} "${_heading}" PARENT_SCOPE)
endfunction()

first_heading("${MAIN}" _main_title)
file(READ "${HTML}/index.html" _index)
string(FIND "${_index}" "<title>" _at)
if(_main_title STREQUAL "" OR _at EQUAL -1)
  message(FATAL_ERROR "no title in ${HTML}/index.html or no heading in ${MAIN}")
endif()
string(FIND "${_index}" "${_main_title}</title>" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "the main page (${HTML}/index.html) is not ${MAIN} ('${_main_title}')")
endif()

if(NOT EXISTS "${HTML}/pages.html")
  message(FATAL_ERROR "the API reference has no related pages (${HTML}/pages.html)")
endif()
file(READ "${HTML}/pages.html" _related)
string(REPLACE "|" ";" _pages "${PAGES}")
foreach(_page IN LISTS _pages)
  # Doxygen names a Markdown page md_<path under the source tree, / as _>.
  string(REGEX REPLACE "\\.md$" "" _name "${_page}")
  string(REPLACE "/" "_" _name "md_${_name}")
  if(NOT EXISTS "${HTML}/${_name}.html")
    message(FATAL_ERROR "the API reference has no page for ${_page} (${HTML}/${_name}.html)")
  endif()
  string(FIND "${_related}" "href=\"${_name}.html\"" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "${_page} is not among the related pages (${HTML}/pages.html)")
  endif()
  message(STATUS "api_reference: ${_page} -> ${_name}.html")
endforeach()

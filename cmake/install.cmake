# SPDX-License-Identifier: MIT
# Install rules (HASHGRID_INSTALL): public headers, the libraries, the CMake
# package (hashgridConfig.cmake, hashgridConfigVersion.cmake and the exported
# hashgridTargets.cmake, namespace hashgrid::), the pkg-config files
# hashgrid.pc and, with the oneTBB backend, hashgrid-tbb.pc, and the licence
# (share/doc/hashgrid/LICENSE). Included from the
# top-level CMakeLists.txt after the library targets exist.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(HASHGRID_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/hashgrid"
    CACHE STRING "Where hashgridConfig.cmake is installed (relative to the prefix)")
mark_as_advanced(HASHGRID_INSTALL_CMAKEDIR)

set(_hashgrid_install_targets hashgrid_core hashgrid_platform)
if(TARGET hashgrid_tbb)
  list(APPEND _hashgrid_install_targets hashgrid_tbb)
  set(HASHGRID_INSTALLED_TBB ON)
else()
  set(HASHGRID_INSTALLED_TBB OFF)
endif()

install(
  TARGETS ${_hashgrid_install_targets}
  EXPORT hashgridTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT hashgrid_development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT hashgrid_development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT hashgrid_development
  FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT hashgrid_development
  # Also spelled out as an include directory, for consumers on CMake < 3.23 (no file sets).
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(
  EXPORT hashgridTargets
  NAMESPACE hashgrid::
  DESTINATION ${HASHGRID_INSTALL_CMAKEDIR}
  COMPONENT hashgrid_development)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/hashgridConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/hashgridConfig.cmake
                              INSTALL_DESTINATION ${HASHGRID_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_DOCDIR)
# SameMajorVersion: find_package(hashgrid X.Y) accepts X.Z for any Z >= Y.
# Before 1.0 a minor version may break the API, so ask for a range there:
# find_package(hashgrid 0.1...<0.2).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/hashgridConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/hashgridConfig.cmake
              ${PROJECT_BINARY_DIR}/package/hashgridConfigVersion.cmake
        DESTINATION ${HASHGRID_INSTALL_CMAKEDIR}
        COMPONENT hashgrid_development)

# The licence, beside the other documentation files of the prefix
# (share/doc/hashgrid/LICENSE).
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT hashgrid_development)

# pkg-config files. Their prefix is the install prefix, written when
# `cmake --install` runs (so `--prefix <elsewhere>` is honoured), normalised:
# `pkg-config --cflags hashgrid` prints -I<prefix>/include, which pkgconf can
# recognise as a system directory. A moved install is found with
# `pkg-config --define-prefix` (the default on Windows), which takes the prefix
# from where the .pc file lies. (A ${pcfiledir}/../.. prefix would be
# relocatable without it, but pkg-config and pkgconf print such paths verbatim.)
set(_hashgrid_pkgconfigdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(HASHGRID_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(HASHGRID_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
# The libraries are static: what they link goes on the Libs line (a static
# library's dependencies are not Libs.private, which only `--static` prints).
# hashgrid::platform runs std::threads: -pthread with POSIX threads (also where
# the C library holds them, as glibc >= 2.34 does and CMake then links nothing).
find_package(Threads REQUIRED)
if(CMAKE_USE_PTHREADS_INIT)
  set(HASHGRID_PC_THREAD_LIBS "-pthread")
else()
  set(HASHGRID_PC_THREAD_LIBS "${CMAKE_THREAD_LIBS_INIT}")
endif()
string(STRIP "-L\${libdir} -lhashgrid_platform -lhashgrid ${HASHGRID_PC_THREAD_LIBS}" HASHGRID_PC_LIBS)
# Configured twice: now with every value but the prefix, and at install time
# with the prefix (@HASHGRID_PC_PREFIX@ survives the first pass).
set(HASHGRID_PC_PREFIX "@HASHGRID_PC_PREFIX@")
set(_hashgrid_pc_names hashgrid)
if(HASHGRID_INSTALLED_TBB)
  list(APPEND _hashgrid_pc_names hashgrid-tbb)
endif()
set(_hashgrid_pc_files)
foreach(_name IN LISTS _hashgrid_pc_names)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${_name}.pc.in ${PROJECT_BINARY_DIR}/package/${_name}.pc.prefix @ONLY)
  list(APPEND _hashgrid_pc_files ${PROJECT_BINARY_DIR}/package/installed/${_name}.pc)
endforeach()
install(CODE "set(_hashgrid_pc_names \"${_hashgrid_pc_names}\")
set(_hashgrid_pc_dir \"${PROJECT_BINARY_DIR}/package\")"
        COMPONENT hashgrid_development)
install(
  CODE [[
cmake_path(NORMAL_PATH CMAKE_INSTALL_PREFIX OUTPUT_VARIABLE HASHGRID_PC_PREFIX)
string(REGEX REPLACE "(.)/$" "\\1" HASHGRID_PC_PREFIX "${HASHGRID_PC_PREFIX}")
foreach(_name IN LISTS _hashgrid_pc_names)
  configure_file("${_hashgrid_pc_dir}/${_name}.pc.prefix" "${_hashgrid_pc_dir}/installed/${_name}.pc" @ONLY)
endforeach()
]]
  COMPONENT hashgrid_development)
install(FILES ${_hashgrid_pc_files} DESTINATION ${_hashgrid_pkgconfigdir} COMPONENT hashgrid_development)

# SPDX-License-Identifier: MIT
# Install rules (HASHGRID_INSTALL): public headers, the libraries, the CMake
# package (hashgridConfig.cmake, hashgridConfigVersion.cmake and the exported
# hashgridTargets.cmake, namespace hashgrid::) and the pkg-config files
# hashgrid.pc and, with the oneTBB backend, hashgrid-tbb.pc. Included from the
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
                              INSTALL_DESTINATION ${HASHGRID_INSTALL_CMAKEDIR})
# SameMajorVersion: find_package(hashgrid X.Y) accepts X.Z for any Z >= Y.
# Before 1.0 a minor version may break the API, so ask for a range there:
# find_package(hashgrid 0.1...<0.2).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/hashgridConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/hashgridConfig.cmake
              ${PROJECT_BINARY_DIR}/package/hashgridConfigVersion.cmake
        DESTINATION ${HASHGRID_INSTALL_CMAKEDIR}
        COMPONENT hashgrid_development)

# pkg-config files, relocatable: paths are relative to the .pc file's own
# directory (${pcfiledir}, known to pkg-config and pkgconf), so an install
# with `cmake --install <build> --prefix <elsewhere>` stays usable.
set(_hashgrid_pkgconfigdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${_hashgrid_pkgconfigdir}")
  set(HASHGRID_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _hashgrid_up "/hashgrid-prefix/${_hashgrid_pkgconfigdir}" "/hashgrid-prefix")
  string(REGEX REPLACE "/$" "" _hashgrid_up "${_hashgrid_up}")
  set(HASHGRID_PC_PREFIX "\${pcfiledir}/${_hashgrid_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(HASHGRID_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(HASHGRID_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
# The libraries are static: what they link goes on the Libs line (the thread
# library, where this platform's C library does not hold it).
find_package(Threads REQUIRED)
string(STRIP "-L\${libdir} -lhashgrid_platform -lhashgrid ${CMAKE_THREAD_LIBS_INIT}" HASHGRID_PC_LIBS)
configure_file(${CMAKE_CURRENT_LIST_DIR}/hashgrid.pc.in ${PROJECT_BINARY_DIR}/package/hashgrid.pc @ONLY)
set(_hashgrid_pc_files ${PROJECT_BINARY_DIR}/package/hashgrid.pc)
if(HASHGRID_INSTALLED_TBB)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/hashgrid-tbb.pc.in ${PROJECT_BINARY_DIR}/package/hashgrid-tbb.pc @ONLY)
  list(APPEND _hashgrid_pc_files ${PROJECT_BINARY_DIR}/package/hashgrid-tbb.pc)
endif()
install(FILES ${_hashgrid_pc_files} DESTINATION ${_hashgrid_pkgconfigdir} COMPONENT hashgrid_development)

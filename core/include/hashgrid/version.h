// SPDX-License-Identifier: MIT
/// @file
/// The library's version. This header is the one place it is written down: the
/// build reads it (the project version of the top CMakeLists.txt, and from
/// there every file of the build that carries a version) and refuses to
/// configure when HASHGRID_VERSION_STRING does not spell the three numbers.
///
/// Before 1.0 every minor version may change the API (CHANGELOG.md); from 1.0
/// on only a major version does.
#pragma once

/// Major version number.
#define HASHGRID_VERSION_MAJOR 0
/// Minor version number.
#define HASHGRID_VERSION_MINOR 1
/// Patch version number.
#define HASHGRID_VERSION_PATCH 0
/// The version as "MAJOR.MINOR.PATCH"; the build checks it against the numbers above.
#define HASHGRID_VERSION_STRING "0.1.0"

/// One number for comparisons: major * 10000 + minor * 100 + patch.
#define HASHGRID_VERSION (HASHGRID_VERSION_MAJOR * 10000 + HASHGRID_VERSION_MINOR * 100 + HASHGRID_VERSION_PATCH)

// SPDX-License-Identifier: MIT
// A program built against an installed Hashgrid through find_package(hashgrid):
// the hand-made scene on the serial, std::thread and (when installed) oneTBB
// backends. Exit code 0 only if every answer is the hand-computed one.
#include "../scene_check.h"

#include <cstdio>

// The package version CMake found is the header's.
static_assert(PACKAGE_VERSION_MAJOR == HASHGRID_VERSION_MAJOR && PACKAGE_VERSION_MINOR == HASHGRID_VERSION_MINOR &&
                  PACKAGE_VERSION_PATCH == HASHGRID_VERSION_PATCH,
              "hashgridConfigVersion.cmake and hashgrid/version.h disagree");
// The library's assertion switch belongs to the library's own build.
#if defined(HASHGRID_ENABLE_ASSERTS)
#error "HASHGRID_ENABLE_ASSERTS reached a consumer through the installed package"
#endif

int main() {
    int failures = consumer::check_version_header();
    failures += consumer::check_every_backend();
    const uint64_t fired = consumer::library_assertions_fired(failures);
    if ((fired != 0) != (EXPECT_LIBRARY_ASSERTS != 0)) {
        std::fprintf(stderr, "consumer: %llu library assertions fired, expected %s\n",
                     static_cast<unsigned long long>(fired), EXPECT_LIBRARY_ASSERTS ? "one" : "none");
        ++failures;
    }
    std::printf("find_package consumer of Hashgrid %s: %s\n", HASHGRID_VERSION_STRING,
                failures == 0 ? "passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}

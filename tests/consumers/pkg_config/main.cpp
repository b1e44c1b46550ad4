// SPDX-License-Identifier: MIT
// A one-file program built with the compiler and pkg-config alone against an
// installed Hashgrid (CTest: packaging_pkg_config):
//   c++ -std=c++17 main.cpp $(pkg-config --cflags --libs hashgrid)
//   c++ -std=c++17 main.cpp $(pkg-config --cflags --libs hashgrid-tbb)   (oneTBB backend)
// The hand-made scene on the serial, std::thread and, with hashgrid-tbb, oneTBB
// backends. Exit code 0 only if every answer is the hand-computed one.
#include "../scene_check.h"

#include <cstdio>

static_assert(__cplusplus == 201703L, "compiled with -std=c++17, as C++17");

int main() {
    int failures = consumer::check_version_header();
    failures += consumer::check_every_backend();
    std::printf("pkg-config consumer of Hashgrid %s: %s\n", HASHGRID_VERSION_STRING,
                failures == 0 ? "passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}

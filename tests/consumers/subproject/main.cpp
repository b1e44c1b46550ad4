// SPDX-License-Identifier: MIT
// A program that builds Hashgrid as its subproject: the hand-made scene on the
// serial, std::thread and (with HASHGRID_USE_TBB) oneTBB backends. In any
// configuration but Debug the library is built without assertions. Exit code
// 0 only if every answer is the hand-computed one.
#include "../scene_check.h"

#include <cstdio>

static_assert(__cplusplus == 201703L, "linking hashgrid::hashgrid raised the consumer's C++17 target");
#if defined(HASHGRID_ENABLE_ASSERTS)
#error "HASHGRID_ENABLE_ASSERTS reached the consumer's own code"
#endif

int consumer_cxx17_answer();

int main() {
    int failures = consumer::check_version_header();
    if (consumer_cxx17_answer() != 17) ++failures;
    failures += consumer::check_every_backend();
    // HASHGRID_ASSERTS defaults to Debug in a subproject: assertions in the
    // consumer's Debug configuration only.
    const uint64_t fired = consumer::library_assertions_fired(failures);
    if ((fired != 0) != (CONSUMER_CONFIG_DEBUG != 0)) {
        std::fprintf(stderr, "consumer: %llu library assertions fired in a %s build\n",
                     static_cast<unsigned long long>(fired), CONSUMER_CONFIG_DEBUG ? "Debug" : "non-Debug");
        ++failures;
    }
    std::printf("subproject consumer of Hashgrid %s: %s\n", HASHGRID_VERSION_STRING,
                failures == 0 ? "passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}

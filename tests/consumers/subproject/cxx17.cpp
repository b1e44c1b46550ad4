// SPDX-License-Identifier: MIT
// Compiled as C++17, the consumer's own setting: Hashgrid's C++20 requirement
// applies only to the targets that link it.
static_assert(__cplusplus == 201703L, "the consumer's C++17 target is not compiled as C++17");

int consumer_cxx17_answer() { return 17; }

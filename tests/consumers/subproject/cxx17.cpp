// SPDX-License-Identifier: MIT
// Compiled as C++17, the consumer's own setting (a target that does not link
// Hashgrid; main.cpp, which does, is C++17 as well).
static_assert(__cplusplus == 201703L, "the consumer's C++17 target is not compiled as C++17");

int consumer_cxx17_answer() { return 17; }

// SPDX-License-Identifier: MIT
// Command-line parsing of the examples and benchmarks: whole-string numbers,
// comma-separated lists, and "--name N" count options. The rules are the ones
// the README, the CTest smoke tests and profiling/RESULTS.md commands rely on
// (same accepted values, same usage lines), so every program parses alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace hashgrid_support {

/// A decimal count in [0, 2^31 - 1]; the whole text must be the number.
inline bool parse_u32(const char* text, uint32_t& value) {
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || parsed > 0x7fffffffull) return false;
    value = static_cast<uint32_t>(parsed);
    return true;
}

/// A finite double; the whole text must be the number.
inline bool parse_double(const char* text, double& value) {
    char* end = nullptr;
    value = std::strtod(text, &end);
    return end != text && *end == '\0' && std::isfinite(value);
}

/// A finite float, read by strtof (one rounding, not double then float).
inline bool parse_float(const char* text, float& value) {
    char* end = nullptr;
    value = std::strtof(text, &end);
    return end != text && *end == '\0' && std::isfinite(value);
}

/// The items of "a,b,c"; empty items are dropped.
inline std::vector<std::string> split_list(const char* text) {
    std::vector<std::string> items;
    std::string current;
    for (const char* c = text;; ++c) {
        if (*c == ',' || *c == '\0') {
            if (!current.empty()) items.push_back(current);
            current.clear();
            if (*c == '\0') break;
        } else {
            current.push_back(*c);
        }
    }
    return items;
}

/// At least one item, and every item is one of `allowed`.
inline bool all_in(const std::vector<std::string>& items, std::initializer_list<const char*> allowed) {
    for (const std::string& item : items) {
        bool found = false;
        for (const char* a : allowed)
            found = found || item == a;
        if (!found) return false;
    }
    return !items.empty();
}

/// A comma-separated list of counts, each in [lo, hi], at least one.
inline bool parse_u32_list(const char* text, uint32_t lo, uint32_t hi, std::vector<uint32_t>& values) {
    values.clear();
    bool ok = true;
    for (const std::string& item : split_list(text)) {
        uint32_t value = 0;
        ok = ok && parse_u32(item.c_str(), value) && value >= lo && value <= hi;
        values.push_back(value);
    }
    return ok && !values.empty();
}

/// One "--name N" option of a program whose options are all counts.
struct CountOption {
    const char* name;
    uint32_t* value;
};

/// Reads argv as "--name N" pairs into `options`. An unknown name, a missing
/// value or a value parse_u32() rejects prints "usage: <program> [--name N]..."
/// on stderr and returns false (the caller exits with status 2).
inline bool parse_count_options(int argc, char** argv, std::initializer_list<CountOption> options) {
    for (int i = 1; i < argc; i += 2) {
        uint32_t* target = nullptr;
        for (const CountOption& o : options)
            if (std::strcmp(argv[i], o.name) == 0) target = o.value;
        if (target == nullptr || i + 1 >= argc || !parse_u32(argv[i + 1], *target)) {
            std::fprintf(stderr, "usage: %s", argv[0]);
            for (const CountOption& o : options)
                std::fprintf(stderr, " [%s N]", o.name);
            std::fprintf(stderr, "\n");
            return false;
        }
    }
    return true;
}

} // namespace hashgrid_support

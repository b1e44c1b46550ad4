// SPDX-License-Identifier: MIT
// Shared pieces of the fuzz targets: a byte reader that turns the fuzzer's
// input into a small program, a palette of awkward floats, the float rules of
// the headers written out again for the oracles, the two thread backends
// every target compares, and the check macro.
//
// Everything here is plain C++20 (no libFuzzer header): the same sources are
// built by libFuzzer under clang and by the normal build for the corpus
// replay (fuzz/replay_main.cpp).
#pragma once

#include "hashgrid/assert.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/platform/assert_hook.h"
#include "hashgrid/platform/std_thread_backend.h"
#include "hashgrid/status.h"
#include "hashgrid/thread_backend.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace hashgrid_fuzz {

[[noreturn]] inline void fail(const char* what, const char* file, int line) {
    std::fprintf(stderr, "hashgrid fuzz check failed: %s (%s:%d)\n", what, file, line);
    std::fflush(stderr);
    std::abort();
}

} // namespace hashgrid_fuzz

/// A mismatch between the library and the oracle or the documentation: abort
/// with a message (libFuzzer saves the input as a crash).
#define FUZZ_CHECK(cond, what)                                                                                         \
    do {                                                                                                               \
        if (!(cond)) ::hashgrid_fuzz::fail(what, __FILE__, __LINE__);                                                  \
    } while (0)

namespace hashgrid_fuzz {

using hashgrid::Status;
using hashgrid::StatusCode;

/// Reads the input front to back; past the end every read returns zeros, so
/// any byte string is a valid program.
class Input {
public:
    Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

    [[nodiscard]] bool empty() const { return pos_ >= size_; }
    uint8_t byte() { return pos_ < size_ ? data_[pos_++] : uint8_t{0}; }
    uint32_t u16() {
        const uint32_t lo = byte();
        return lo | (uint32_t{byte()} << 8);
    }
    uint32_t u32() {
        const uint32_t lo = u16();
        return lo | (u16() << 16);
    }
    /// A value in [0, n) (n >= 1) from one or two bytes.
    uint32_t below(uint32_t n) {
        if (n <= 1) return 0;
        return (n <= 256 ? uint32_t{byte()} : u16()) % n;
    }
    bool flag() { return (byte() & 1u) != 0; }
    /// Picks one element of a fixed array.
    template <typename T, size_t N>
    T pick(const T (&values)[N]) {
        return values[below(static_cast<uint32_t>(N))];
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

inline float inf() { return std::numeric_limits<float>::infinity(); }
inline float nan() { return std::numeric_limits<float>::quiet_NaN(); }

/// Special values: NaN, infinities, denormals, signed zero, huge values.
inline float special_float(Input& in) {
    static const float values[] = {0.0f,
                                   -0.0f,
                                   std::numeric_limits<float>::quiet_NaN(),
                                   std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::denorm_min(),
                                   -std::numeric_limits<float>::denorm_min(),
                                   1e-40f,
                                   std::numeric_limits<float>::min(),
                                   std::numeric_limits<float>::max(),
                                   -std::numeric_limits<float>::max(),
                                   1e30f,
                                   -1e30f,
                                   1e19f,
                                   -1e19f,
                                   3e6f,
                                   -3e6f,
                                   16777216.0f,
                                   1.0f,
                                   -1.0f};
    return in.pick(values);
}

/// A coordinate near the scene: mostly multiples of an eighth of a cell
/// around `origin` (so cell edges are hit exactly), nudged by one ulp now and
/// then, and one special value in about 1 of `special_odds` draws.
inline float scene_float(Input& in, float origin, float cell, uint32_t special_odds = 16) {
    const uint8_t kind = in.byte();
    if (special_odds != 0 && kind % special_odds == 0) return special_float(in);
    const int32_t step = static_cast<int32_t>(in.byte()) - 128;
    float v = origin + static_cast<float>(step) * (cell * 0.125f);
    if ((kind & 0x60u) == 0x20u) v = std::nextafter(v, inf());
    if ((kind & 0x60u) == 0x40u) v = std::nextafter(v, -inf());
    return v;
}

/// A positive float from a small palette (sizes, radii), occasionally bad.
inline float size_float(Input& in, float base, bool allow_bad) {
    static const float factors[] = {1.0f, 0.5f, 0.25f, 0.75f, 2.0f, 0.125f, 1.5f, 0.999f, 4.0f, 0.01f};
    if (allow_bad && in.below(12) == 0) {
        static const float bad[] = {0.0f,
                                    -0.0f,
                                    -1.0f,
                                    std::numeric_limits<float>::quiet_NaN(),
                                    std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::denorm_min(),
                                    std::numeric_limits<float>::max()};
        return in.pick(bad);
    }
    return base * in.pick(factors);
}

/// The distance rule of grid.h / particle_queries.h, written out again:
/// (dx*dx + dy*dy) + dz*dz in float (the build disables contraction).
inline float distance2(const float a[3], const float b[3], uint32_t dims) {
    const float dx = a[0] - b[0];
    const float dy = a[1] - b[1];
    const float xy = dx * dx + dy * dy;
    if (dims == 2) return xy;
    const float dz = a[2] - b[2];
    return xy + dz * dz;
}

/// Guarded cell coordinate of cell_key.h as a double floor (no range check).
inline double cell_floor(float p, float origin, float cell_size) {
    return std::floor(hashgrid::scaled_coordinate(p, origin, hashgrid::key_scale(cell_size)));
}

/// Counts assertion failures instead of aborting: the targets feed invalid
/// arguments on purpose and check the returned status instead.
inline void install_resume_hook() {
    static const bool installed = [] {
        hashgrid::platform::install_counting_assert_hook(nullptr, nullptr, hashgrid::platform::AssertAction::resume);
        return true;
    }();
    (void)installed;
}

/// The serial backend and a 3-thread std::thread backend (created once per
/// process), so every target can compare bytes across thread counts.
inline hashgrid::ThreadBackend serial() { return hashgrid::serial_backend(); }
inline hashgrid::ThreadBackend threaded() {
    static hashgrid::platform::StdThreadBackend backend(3);
    return backend.backend();
}

/// True when both statuses say the same thing (message text aside).
inline bool same_status(const Status& a, const Status& b) {
    return a.code == b.code && a.needed == b.needed && a.index == b.index && a.count == b.count;
}

inline bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

} // namespace hashgrid_fuzz

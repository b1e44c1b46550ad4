// SPDX-License-Identifier: MIT
// Exact oracle for the cells of unbounded worlds far from their origin.
//
// The grid computes floor((p - origin) * scale) with the fast double formula
// while |scaled| < 2^31 - 4 and from exact pieces beyond (core's
// lattice/wrapped_cells.h), then keeps the cell modulo 2^21 (3D) or 2^31 (2D).
// This oracle takes the other road: p, origin and scale become integers times
// powers of two, and the product is formed in arbitrary-precision integer
// arithmetic, so its floor and its distance to the nearest integer are exact.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace hashgrid_test {

/// Non-negative integer, 32-bit limbs, least significant first.
class Magnitude {
public:
    explicit Magnitude(uint64_t v = 0) : limb_{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)} {}

    [[nodiscard]] bool bit(uint64_t i) const {
        const uint64_t w = i / 32;
        return w < limb_.size() && ((limb_[static_cast<size_t>(w)] >> (i % 32)) & 1u) != 0;
    }
    [[nodiscard]] bool is_zero() const {
        for (uint32_t l : limb_)
            if (l != 0) return false;
        return true;
    }
    /// The low 64 bits.
    [[nodiscard]] uint64_t low64() const { return uint64_t{limb_[0]} | (uint64_t{limb_[1]} << 32); }

    [[nodiscard]] Magnitude shifted_left(uint32_t s) const {
        Magnitude r;
        r.limb_.assign(limb_.size() + s / 32 + 1, 0);
        for (size_t i = 0; i < limb_.size(); ++i) {
            const uint64_t v = uint64_t{limb_[i]} << (s % 32);
            r.limb_[i + s / 32] |= static_cast<uint32_t>(v);
            r.limb_[i + s / 32 + 1] |= static_cast<uint32_t>(v >> 32);
        }
        return r;
    }
    /// floor(this / 2^s).
    [[nodiscard]] Magnitude shifted_right(uint32_t s) const {
        Magnitude r;
        const size_t words = s / 32;
        r.limb_.assign(limb_.size() + 2, 0);
        for (size_t i = words; i < limb_.size(); ++i) {
            const uint64_t hi = i + 1 < limb_.size() ? limb_[i + 1] : 0;
            const uint64_t v = (uint64_t{limb_[i]} | (hi << 32)) >> (s % 32);
            r.limb_[i - words] = static_cast<uint32_t>(v);
        }
        return r;
    }
    [[nodiscard]] Magnitude times(uint64_t m) const {
        Magnitude r;
        r.limb_.assign(limb_.size() + 3, 0);
        const uint64_t part[2] = {m & 0xffffffffu, m >> 32};
        for (size_t p = 0; p < 2; ++p) {
            uint64_t carry = 0;
            for (size_t i = 0; i < limb_.size(); ++i) {
                const uint64_t v = uint64_t{limb_[i]} * part[p] + r.limb_[i + p] + carry;
                r.limb_[i + p] = static_cast<uint32_t>(v);
                carry = v >> 32;
            }
            for (size_t i = limb_.size() + p; carry != 0; ++i) {
                const uint64_t v = uint64_t{r.limb_[i]} + carry;
                r.limb_[i] = static_cast<uint32_t>(v);
                carry = v >> 32;
            }
        }
        return r;
    }
    [[nodiscard]] Magnitude plus_one() const {
        Magnitude r = *this;
        r.limb_.push_back(0);
        for (uint32_t& l : r.limb_)
            if (++l != 0) break;
        return r;
    }
    friend int compare(const Magnitude& a, const Magnitude& b) {
        const size_t n = a.limb_.size() > b.limb_.size() ? a.limb_.size() : b.limb_.size();
        for (size_t i = n; i-- > 0;) {
            const uint32_t x = i < a.limb_.size() ? a.limb_[i] : 0;
            const uint32_t y = i < b.limb_.size() ? b.limb_[i] : 0;
            if (x != y) return x < y ? -1 : 1;
        }
        return 0;
    }
    friend Magnitude add(const Magnitude& a, const Magnitude& b) {
        Magnitude r = a;
        if (r.limb_.size() < b.limb_.size()) r.limb_.resize(b.limb_.size(), 0);
        r.limb_.push_back(0);
        uint64_t carry = 0;
        for (size_t i = 0; i < r.limb_.size(); ++i) {
            const uint64_t v = uint64_t{r.limb_[i]} + (i < b.limb_.size() ? b.limb_[i] : 0) + carry;
            r.limb_[i] = static_cast<uint32_t>(v);
            carry = v >> 32;
        }
        return r;
    }
    /// a - b for a >= b.
    friend Magnitude minus(const Magnitude& a, const Magnitude& b) {
        Magnitude r = a;
        int64_t borrow = 0;
        for (size_t i = 0; i < r.limb_.size(); ++i) {
            const int64_t v = int64_t{r.limb_[i]} - (i < b.limb_.size() ? int64_t{b.limb_[i]} : 0) - borrow;
            borrow = v < 0 ? 1 : 0;
            r.limb_[i] = static_cast<uint32_t>(v + (borrow << 32));
        }
        return r;
    }

private:
    std::vector<uint32_t> limb_;
};

/// value = mantissa * 2^exponent, mantissa an integer (0 for zero).
struct Dyadic {
    uint64_t mantissa = 0;
    int32_t exponent = 0;
    bool negative = false;
};

inline Dyadic dyadic(double v, int bits) {
    Dyadic d;
    if (v == 0.0) return d;
    int e = 0;
    const double f = std::frexp(std::fabs(v), &e); // v = f * 2^e, f in [0.5, 1)
    d.mantissa = static_cast<uint64_t>(std::ldexp(f, bits));
    d.exponent = e - bits;
    d.negative = v < 0.0;
    return d;
}

/// Exact wrapped cell of floor((p - origin) * scale): the floor modulo
/// 2^wrap_bits, as a signed value in [-2^(wrap_bits-1), 2^(wrap_bits-1)).
/// `near_integer` is set when the exact product lies within 2^-near_bits of an
/// integer (or is one), where an implementation exact to a few units of
/// 2^-(near_bits + 2) may floor either way.
inline int64_t exact_wrapped_cell(float p, float origin, double scale, uint32_t wrap_bits, bool& near_integer,
                                  uint32_t near_bits = 20) {
    const Dyadic a = dyadic(p, 24), b = dyadic(origin, 24), s = dyadic(scale, 53);
    // p - origin = (+-ma - +-mb) * 2^low, over a common exponent.
    const int32_t low =
        a.mantissa == 0 ? b.exponent : (b.mantissa == 0 ? a.exponent : std::min(a.exponent, b.exponent));
    const Magnitude ma =
        a.mantissa == 0 ? Magnitude(0) : Magnitude(a.mantissa).shifted_left(static_cast<uint32_t>(a.exponent - low));
    const Magnitude mb =
        b.mantissa == 0 ? Magnitude(0) : Magnitude(b.mantissa).shifted_left(static_cast<uint32_t>(b.exponent - low));
    const bool a_negative = a.negative;
    const bool minus_b_negative = !b.negative && b.mantissa != 0; // the sign of the term -origin
    Magnitude diff;
    bool negative = false;
    if (a_negative == minus_b_negative) {
        diff = add(ma, mb);
        negative = a_negative;
    } else if (compare(ma, mb) >= 0) {
        diff = minus(ma, mb);
        negative = a_negative;
    } else {
        diff = minus(mb, ma);
        negative = minus_b_negative;
    }
    const Magnitude product = diff.times(s.mantissa);
    negative = negative != s.negative;
    const int32_t exponent = low + s.exponent; // exact value: +-product * 2^exponent
    Magnitude whole;
    bool fraction = false;
    if (exponent >= 0) {
        whole = product.shifted_left(static_cast<uint32_t>(exponent));
        near_integer = true; // exactly an integer
    } else {
        const auto shift = static_cast<uint32_t>(-exponent);
        whole = product.shifted_right(shift);
        // Fraction bits [0, shift): zero anywhere means not an integer; the
        // top near_bits of them all 0 or all 1 means within 2^-near_bits of an integer.
        for (uint32_t i = 0; i < shift && !fraction; ++i)
            fraction = product.bit(i);
        bool all_zero = true, all_one = shift >= near_bits;
        for (uint32_t i = shift >= near_bits ? shift - near_bits : 0; i < shift; ++i) {
            all_zero = all_zero && !product.bit(i);
            all_one = all_one && product.bit(i);
        }
        near_integer = all_zero || all_one;
    }
    // floor of a negative non-integer rounds the magnitude up.
    if (negative && fraction) whole = whole.plus_one();
    const uint64_t mask = (uint64_t{1} << wrap_bits) - 1;
    uint64_t low_bits = whole.low64() & mask;
    if (negative) low_bits = (uint64_t{0} - low_bits) & mask;
    const uint64_t half = uint64_t{1} << (wrap_bits - 1);
    return static_cast<int64_t>((low_bits + half) & mask) - static_cast<int64_t>(half);
}

} // namespace hashgrid_test

// SPDX-License-Identifier: MIT
// Float arithmetic that rounds every operation, whatever the compiler flags:
// scenes and oracles built from it are bit-identical on every target.
#pragma once

namespace hashgrid_support {

/// a * b rounded to float. The volatile store keeps the compiler from fusing the
/// product into a following addition (FMA), even if -ffp-contract=off were lost.
inline float rounded_mul(float a, float b) {
    volatile float product = a * b;
    return product;
}

} // namespace hashgrid_support

/* SPDX-License-Identifier: MIT */
// half.glsl - f16 bits to float, exact.
//
// With integer arithmetic: exact for subnormal halves too, whatever the
// device's own conversion (unpackHalf2x16) does with them under its
// denormal mode.

#ifndef RAYO_HALF_GLSL
#define RAYO_HALF_GLSL

float f16_value(uint h)
{
    uint a = h & 0x7fffu, sign = (h & 0x8000u) << 16u;
    // subnormal: a * 2^-24 is a normal float; else rebias the exponent
    // (by 112, or to 255 for inf and NaN)
    uint normal = (a << 13u) + (a >= 0x7c00u ? 0x70000000u : 0x38000000u);
    uint bits = a < 0x400u ? floatBitsToUint(float(a) * 5.9604644775390625e-8) : normal;
    return uintBitsToFloat(sign | bits);
}

#endif

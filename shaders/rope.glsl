/* SPDX-License-Identifier: MIT */
// rope.glsl - the rotation of one pair of a rope: infer_rows.comp's rope op
// and gemv_int8.comp's q and k products with their rope (RAYO_ROPE) call
// the same function, so that the fused result is the op's, bit for bit.

#ifndef RAYO_ROPE_GLSL
#define RAYO_ROPE_GLSL

// cos and sin of theta (double) to float accuracy: the quadrant from
// theta / (pi/2) in double (pi/2 in two parts), then Taylor series on
// |r| <= pi/4 in double.
void cos_sin(double theta, out double c, out double s)
{
    const double HALF_PI_HI = 1.5707963267948966LF, HALF_PI_LO = 6.123233995736766e-17LF;
    double kq = floor(theta / HALF_PI_HI + 0.5LF);
    double r = (theta - kq * HALF_PI_HI) - kq * HALF_PI_LO;
    double r2 = r * r;
    double sr = r * (1.0LF + r2 * (-1.0LF / 6.0LF + r2 * (1.0LF / 120.0LF + r2 * (-1.0LF / 5040.0LF +
                r2 * (1.0LF / 362880.0LF + r2 * (-1.0LF / 39916800.0LF))))));
    double cr = 1.0LF + r2 * (-0.5LF + r2 * (1.0LF / 24.0LF + r2 * (-1.0LF / 720.0LF +
                r2 * (1.0LF / 40320.0LF + r2 * (-1.0LF / 3628800.0LF)))));
    int q = int(kq - 4.0LF * floor(kq / 4.0LF));    // kq mod 4
    c = q == 0 ? cr : q == 1 ? -sr : q == 2 ? -cr : sr;
    s = q == 0 ? sr : q == 1 ? cr : q == 2 ? -sr : -cr;
}

// The pair (u, v) at position pos rotated by pos * inv_freq, in double.
// `precise`: no contraction that the two includers' compilations could
// make differently.
vec2 rope_pair(double pos, double inv_freq, float u, float v)
{
    double c, s;
    cos_sin(pos * inv_freq, c, s);
    precise double yu = double(u) * c - double(v) * s, yv = double(u) * s + double(v) * c;
    return vec2(float(yu), float(yv));
}

#endif

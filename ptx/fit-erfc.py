#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Derives the erfc coefficients used by gen-ptx.c (m_erfc).

erfc(t) = tau * exp(-t*t + Q(tau)),  tau = 2 / (2 + t),  t in [0, 10].
Q is the Chebyshev interpolant of degree 9 on tau in [1/6, 1], rewritten in
powers of tau (exact rational arithmetic), then rounded to float32.  Pure
Python (math.erfc), no third-party modules.  Prints the coefficients, lowest
power first, and the worst error of the gelu contract they give when the
kernel's float32 arithmetic is simulated.
"""
import math
import struct
from fractions import Fraction

DEGREE = 9
LO, HI = 1.0 / 6.0, 1.0
NODES = 400


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def q_exact(tau):
    t = 2.0 / tau - 2.0
    return math.log(math.erfc(t) / tau) + t * t


def chebyshev_coefficients(degree):
    us = [math.cos(math.pi * (j + 0.5) / NODES) for j in range(NODES)]
    vals = [q_exact((HI - LO) / 2 * u + (HI + LO) / 2) for u in us]
    coef = []
    for i in range(degree + 1):
        s = sum(v * math.cos(math.pi * i * (j + 0.5) / NODES) for j, v in enumerate(vals))
        coef.append(s * 2 / NODES)
    coef[0] /= 2
    return coef


def to_powers_of_tau(coef):
    degree = len(coef) - 1
    cheb = [[Fraction(1)], [Fraction(0), Fraction(1)]]
    for k in range(2, degree + 1):
        a = [Fraction(0)] + [2 * x for x in cheb[k - 1]]
        b = cheb[k - 2] + [Fraction(0)] * (len(a) - len(cheb[k - 2]))
        cheb.append([x - y for x, y in zip(a, b)])
    in_u = [Fraction(0)] * (degree + 1)
    for k in range(degree + 1):
        for i, x in enumerate(cheb[k]):
            in_u[i] += Fraction(coef[k]) * x
    scale = Fraction(2) / (Fraction(HI) - Fraction(LO))
    shift = -(Fraction(HI) + Fraction(LO)) / (Fraction(HI) - Fraction(LO))
    in_tau = [Fraction(0)] * (degree + 1)
    for i in range(degree + 1):
        for j in range(i + 1):
            in_tau[j] += in_u[i] * math.comb(i, j) * scale ** j * shift ** (i - j)
    return [f32(float(x)) for x in in_tau]


def worst_gelu_error(p):
    worst = 0.0
    for i in range(100001):
        x = f32(-14.0 * i / 100000)
        t = f32(abs(x) * f32(math.sqrt(0.5)))
        tau = f32(2.0 / f32(2.0 + t))
        acc = 0.0
        for c in reversed(p):
            acc = f32(acc * tau + c)
        e = f32(tau * f32(math.exp(f32(f32(-f32(t * t)) + acc))))
        y = f32(f32(0.5 * x) * e)
        ref = 0.5 * x * math.erfc(-x / math.sqrt(2.0))
        worst = max(worst, abs(y - ref) / (2e-6 * abs(ref) + 1e-7))
    return worst


if __name__ == '__main__':
    p = to_powers_of_tau(chebyshev_coefficients(DEGREE))
    for c in p:
        print('%.9e  0f%08X' % (c, struct.unpack('I', struct.pack('f', c))[0]))
    print('worst gelu error / tolerance: %.3f' % worst_gelu_error(p))

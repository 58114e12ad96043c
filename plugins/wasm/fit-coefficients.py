#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fit-coefficients.py - derives the polynomial coefficients of math.h.

Not run by the build: the coefficients are pasted into math.h.  Kept so
that anyone can see where they come from and refit them (needs mpmath).
Each fit is a Chebyshev interpolation (near-minimax) of a smooth function
in 60-digit arithmetic; the script prints the coefficients, rounded to
float, and the largest relative error of the rounded polynomial, evaluated
in double, on a dense grid.
"""
import mpmath as mp

mp.mp.dps = 60


def fit(name, f, lo, hi, degree, var):
    poly, _ = mp.chebyfit(f, [lo, hi], degree + 1, error=True)
    coeffs = [float(mp.mpf(c)) for c in reversed(poly)]  # lowest degree first
    coeffs32 = [float(mp.mpf(mp.nstr(c, 9))) for c in coeffs]
    worst = 0.0
    steps = 4000
    for i in range(steps + 1):
        x = lo + (hi - lo) * i / steps
        want = f(mp.mpf(x))
        got = 0.0
        for c in reversed(coeffs32):
            got = got * x + c
        if want != 0:
            worst = max(worst, abs((got - want) / want))
    print(f"/* {name}: degree {degree} in {var} on [{float(lo):.6g}, {float(hi):.6g}], "
          f"max relative error {float(worst):.2g} */")
    for k, c in enumerate(coeffs32):
        print(f"    {c!r:>26}f,  /* {var}^{k} */")
    print()


# exp: e^r = 1 + r + r^2 P(r), |r| <= ln2 / 2
half_ln2 = mp.log(2) / 2
fit("exp: P(r) = (e^r - 1 - r) / r^2", lambda r: (mp.expm1(r) - r) / r**2 if r != 0 else mp.mpf(0.5),
    -half_ln2, half_ln2, 4, "r")

# log: log(1 + f) = f - f^2/2 + f^3 Q(f), sqrt(1/2) - 1 <= f < sqrt(2) - 1
lo, hi = mp.sqrt(0.5) - 1, mp.sqrt(2) - 1
fit("log: Q(f) = (log(1 + f) - f + f^2/2) / f^3",
    lambda f: (mp.log1p(f) - f + f**2 / 2) / f**3 if f != 0 else mp.mpf(1) / 3, lo, hi, 7, "f")

# erfc: erfc(z) = t e^(-z^2) G(t) with t = 1 / (1 + A z), z >= 0
A = mp.mpf(0.5)


def g_of_t(t):
    if t == 0:
        return A / mp.sqrt(mp.pi)
    z = (1 / t - 1) / A
    return mp.erfc(z) * mp.exp(z * z) / t


fit("erfc: G(t) = erfc(z) e^(z^2) / t, t = 1 / (1 + z/2)", g_of_t, mp.mpf(0), mp.mpf(1), 10, "t")

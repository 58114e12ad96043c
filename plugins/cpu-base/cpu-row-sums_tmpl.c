/* SPDX-License-Identifier: MIT */
/* cpu-row-sums_tmpl.c - the two double sums a layernorm row needs
 * (row_sum_f64 and row_centered_squares_f64, see cpu-rows_tmpl.c), written
 * once over a plugin's double lanes.  The mean of a row must be right
 * relative to its spread, not only to sum|x| (1e12 + noise, mean 1e4 std 1):
 * float lanes are not, so both sums widen every value to double.
 *
 * A plugin's rows.c defines, before including this file:
 *   VD                     its vector of doubles
 *   ROW_SUMS_STEP          floats widened per step (two VDs' worth)
 *   row_sums_widen(x, lo, hi)   the ROW_SUMS_STEP floats at x as two VDs
 *   vd_zero() vd_set(d) vd_add(a, b) vd_sub(a, b) vd_hsum(v)
 *   vd_fma(a, b, acc)      acc + a * b (fused where the ISA has it)
 * The last n % ROW_SUMS_STEP values are summed one by one in double.
 */

/* sum x[j] (square 0) or sum (x[j] - center)^2 (square 1: the second pass
 * of a two-pass variance, no cancellation of E[x^2] - E[x]^2); square is a
 * constant wherever this is inlined. */
static inline __attribute__((always_inline)) double row_sum_of(const float *x, size_t n, double center,
                                                               int square)
{
    const VD c = vd_set(center);
    VD s0 = vd_zero(), s1 = s0;
    size_t j = 0;
    for (; j + ROW_SUMS_STEP <= n; j += ROW_SUMS_STEP) {
        VD lo, hi;
        row_sums_widen(x + j, &lo, &hi);
        if (square) {
            lo = vd_sub(lo, c);
            hi = vd_sub(hi, c);
            s0 = vd_fma(lo, lo, s0);
            s1 = vd_fma(hi, hi, s1);
        } else {
            s0 = vd_add(s0, lo);
            s1 = vd_add(s1, hi);
        }
    }
    double s = vd_hsum(vd_add(s0, s1));
    for (; j < n; j++)
        s += square ? ((double)x[j] - center) * ((double)x[j] - center) : (double)x[j];
    return s;
}

static double row_sum_f64(const float *x, size_t n)
{
    return row_sum_of(x, n, 0.0, 0);
}

static double row_centered_squares_f64(const float *x, size_t n, double mean)
{
    return row_sum_of(x, n, mean, 1);
}

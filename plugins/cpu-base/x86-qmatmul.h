/* SPDX-License-Identifier: MIT */
/* x86-qmatmul.h - the prompt's matmul with quantized weights in integers,
 * for the avx2 and avx512 plugins (x86-qmatmul.c, compiled in each):
 * C (m x n) = alpha A B^T + beta C, A f32 (m x k, the activations), B Q4_0,
 * Q4_K, Q8_0 or Q6_K stored n x k (RAYO_TRANS_B: the weights as GGUF keeps
 * them), at relaxed precision only.
 *
 * The sgemm path (typed-matmul.c) dequantizes B to f32 and multiplies in
 * f32: 8 products per instruction.  Here A is rounded once per call to
 * int8 per 32 values (a float scale each, as llama.cpp does) and B's codes
 * stay 4-bit unsigned bytes, so vpmaddubsw makes 32 products per
 * instruction and sums them in 16-bit lanes.  Q8_0's signed bytes w go as
 * they are: vpmaddubsw (unsigned by signed) takes |w| and A's values with
 * w's sign (vpsignb), each group's pair sums widened to 32 bits at once
 * (two groups of them could overflow 16 bits); no dequantized copy of B
 * either.  Q6_K has a scale per 16 values: each half of 32 values is
 * summed on its own (its 4 groups of the block's codes, then its scale),
 * its 6-bit codes as they are (pair sums up to 16002, widened per group as
 * Q8_0's), and its offset -32 taken with A's sums per 16 values.  To keep one
 * output per lane
 * with no horizontal sums, B is repacked per call, 8 rows (output columns)
 * at a time, into a panel whose 32-bit lanes are the 8 columns: each
 * vector holds 4 codes of each column, and 4 values of a row of A are
 * broadcast against it, 4 rows of A per tile.  The repacking reads B once
 * per call; the products use each weight m times.  In the avx512 plugin on
 * a CPU with AVX512_VNNI, panels are 16 columns (512-bit vectors), tiles
 * 8 rows of A, and vpdpbusd sums the products of 4 codes straight into
 * 32-bit lanes (the same integer sums: the same results; only that
 * plugin's tests on such a CPU run it); there Q8_0's codes go as q + 128,
 * unsigned, their offset taken off as Q4_0's is (a product each, not |w|
 * and a sign).
 *
 * Accuracy: the rounding of A (at most 1/254 of its block's largest |x|
 * per value) is the only error beyond f32 sums.  The errors of a row are
 * independent, so they grow as sqrt(k) while the sum of |products| grows
 * as k: on random operands (tests/test-x86-qmatmul, seeds 11-16) the worst
 * element reached 0.71 of the relaxed contract (2e-3 of the sum) at k =
 * 512 and 0.46 from k = 1024 on, and short rows of 32 or 64 would fail.
 * So only calls with k of at least QMATMUL_MIN_K take this path.  Rows
 * whose values span decades, or with a few values far above the rest,
 * round worse (a block's small values become 0): each row's rounding
 * errors are checked against the gemv's error budget (x86-qmatmul.c), and
 * a row that fails it, or has a value that is not finite, or a block whose
 * largest |x| is in (0, 1e-30), is computed by the sgemm path (f32
 * products) in a call of its own with the other such rows.
 */
#ifndef RAYO_X86_QMATMUL_H
#define RAYO_X86_QMATMUL_H

#include "cpu-base.h"
#include "x86-typed-matmul.h"

/* The shortest rows (k) of the integer path (see above). */
#define QMATMUL_MIN_K 1024

/* Runs the call when this path takes it (relaxed, A f32 dense or with lda,
 * B Q4_0, Q4_K, Q8_0 or Q6_K with RAYO_TRANS_B only, k >= QMATMUL_MIN_K, some row
 * of A rounds within the budget), the rows of A that do not through
 * typed_matmul_run on sgemm at strict precision; RAYO_E_UNSUPPORTED
 * otherwise, with C untouched.  state: the plugin's cpu_state. */
rayo_status x86_qmatmul_run(void *state, const rayo_call *call, x86_sgemm_fn *sgemm);

#endif

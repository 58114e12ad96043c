/* SPDX-License-Identifier: MIT */
/* rayo-ops.h - the one list of rayo's operations.
 *
 * Every op is declared exactly once, here.  The list drives the public API
 * functions (core/op-calls.c), the dispatch slots, the names used in configuration
 * and tools, and the conformance table.  rayo.h writes each op's prototype
 * out, so that readers and tools find it; tests/test-prototypes.c fails to
 * compile when one disagrees with this list.  Adding an op = one line here,
 * its prototype in rayo.h, and kernels.
 *
 * RAYO_OP(ID, ENUM, NAME, SIG, TOL_REL, TOL_ABS, SCALE, SUMMARY)
 *   ID       stable numeric id, part of the plugin ABI; never reused.
 *   ENUM     the op's constant in rayo.h: RAYO_OP_<ENUM>.
 *   NAME     the op's name in the API (rayo_NAME), config ([op.NAME]) and tools.
 *   SIG      signature: how the fields of rayo_call are used (see below).
 *   TOL_REL, TOL_ABS, SCALE   the accuracy contract: for each output element
 *            |y - ref| <= TOL_REL * scale + TOL_ABS, where ref is computed in
 *            float64 from the same float inputs and scale is
 *              ELEM: |ref|
 *              SUM:  the sum of |terms| that make the element (reductions,
 *                    dot, matmul, gemv, norms): the conditioning of the sum.
 *            TOL_REL = TOL_ABS = 0 means the result must be exact.
 *   SUMMARY  one line for humans (rayo-info, docs).
 *
 * NaN/Inf contract (all backends, checked by the conformance suite):
 *   elementwise ops follow IEEE-754 / C99 libm semantics of the float64
 *   reference; maximum/minimum/max/min/argmax PROPAGATE NaN (a NaN input gives
 *   a NaN result; argmax returns the index of the first NaN); relu(NaN) = NaN;
 *   clip(NaN) = NaN; the row ops (softmax, log_softmax, layernorm, rmsnorm)
 *   give a whole row of NaN for a row that holds a NaN.
 * Range contract (all backends, checked by the conformance suite's groups
 * overflow, subnormal, eps0, offset, long-reduction):
 *   no intermediate overflow or underflow: where the float64 result of the
 *   float inputs is a finite float, the result is within the contract, e.g.
 *   sum [FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX, 1], dot with products past
 *   FLT_MAX, axpy's alpha x + y, selu(3.23862215e38), FLT_MAX / 50, a / b for
 *   subnormal b, layernorm of rows of +-3e38 (normalise to +-1) or of
 *   subnormal rows with eps = 0;
 *   the contract holds at any length: sums of 1e8 terms, rows of 1e7 columns;
 *   layernorm / rmsnorm: where var + eps = 0 (a constant row, or an all-zero
 *   row for rmsnorm, with eps = 0) the normalised value is 0, so y = beta
 *   (0 without beta), not NaN;
 *   log_softmax: rows with a large offset (1e30 constant: -log(n)).
 * Exception: on a device whose backend says in rayo-info that it sums in
 *   float (vulkan where the driver lacks shaderFloat64), sum, dot, norm_l1
 *   and the row statistics of softmax, log_softmax, layernorm and rmsnorm
 *   accumulate in float: partial sums past FLT_MAX overflow, and rows of
 *   |x| > 1e19 or with |mean| >> std lose accuracy.
 * Left unspecified on purpose (not checked, may differ between backends):
 *   the sign of a zero result (relu(-0), max(-0, +0)); whether subnormal
 *   results are flushed to zero (GPUs do); on a device whose backend says in
 *   rayo-info that it flushes float32 denormals (vulkan where the driver lacks
 *   shaderDenormPreserveFloat32, e.g. NVIDIA's), denormal inputs also read
 *   as +-0 (a / denormal = +-inf, log/sqrt of -denormal = -inf / -0, sums
 *   of denormals = 0; rayo_backend_info.device_flags has
 *   RAYO_DEVICE_FLUSHES_DENORMALS, and rayo-conform judges its subnormal
 *   cases against the flushed inputs too); x*f(x) activations (gelu, silu,
 *   mish, hardswish, bias_act) at x = -inf, which may give 0 or NaN.
 *
 * RAYO_COMBO(OP, A, B, C, Y, TOL_REL, TOL_ABS, RELAXED_REL, RELAXED_ABS)
 *   A legal dtype combination of op OP (RAYO_DTYPE_<A> ... for the operands
 *   a, b, c, y; NONE for an operand the op does not use) with its strict
 *   contract and its relaxed one (RAYO_PRECISION_RELAXED), both with the
 *   op's SCALE.  An op without RAYO_COMBO lines takes all-f32 operands only,
 *   with its RAYO_OP contract at both levels.  An op with RAYO_COMBO lines
 *   takes exactly those (its all-f32 line first when it has one).
 *   Quantized and half operands: the reference uses their stored values
 *   (the format's own rounding is not the kernel's error).
 *   Includers that do not define RAYO_COMBO get it ignored.
 *
 * The inference ops (ids 90 and up) are left out when RAYO_OPS_BASE_ONLY
 * is defined: rayo-op-table.h and plugins that register one kernel for every
 * op of the base set use that.
 *
 * This file may be included several times with different RAYO_OP definitions.
 */
#ifndef RAYO_OP
#error "define RAYO_OP(ID, ENUM, NAME, SIG, TOL_REL, TOL_ABS, SCALE, SUMMARY) before including rayo-ops.h"
#endif
#ifndef RAYO_COMBO
#define RAYO_COMBO(OP, A, B, C, Y, TR, TA, RR, RA)
#define RAYO_OPS_UNDEF_COMBO_
#endif

/* Signatures (fields of rayo_call used; rayo_call is in rayo.h):
 *   BINARY    y[i] = f(a[i], b[i]), i < n
 *   UNARY     y[i] = f(a[i]) ; UNARY_P uses alpha ; UNARY_P2 uses alpha, beta
 *   AXPY      y[i] = alpha * a[i] + y[i]             (y is read and written)
 *   REDUCE    *(float *)y = f(a[0..n))  ; REDUCE2: f(a, b)
 *   ARGREDUCE *(size_t *)y = index
 *   ROWS      for each of m rows of n: y_row = f(a_row)
 *   NORM      for each of m rows of n: y = f(a; gamma=b, beta=c, eps=alpha)
 *   MATMUL    C(m x n) = alpha * op(A) op(B) + beta * C ; a=A, b=B, y=C
 *             op(A) is m x k, op(B) is k x n; flags: RAYO_TRANS_A/B
 *   GEMV      y(m') = alpha * op(A) x + beta * y ; A is m x n ; a=A, b=x
 *   TRANSPOSE y (n x m) = a (m x n)^T
 *   BIAS_ACT  y[i][j] = act(a[i][j] + b[j]) for m rows of n; flags = act
 *   CONVERT   y[i] = a[i] converted from dtype(a) to dtype(y), i < n
 *   GET_ROWS  y[r][:] = a[b[r]][:] as f32: a = table (k rows x n, lda),
 *             b = m int32 indices (each in [0, k)), y = m x n (ldy)
 *   ROPE      y = rope(a) at positions b (m int32), params rayo_rope_params:
 *             m tokens of [n_heads][head_dim], n = head_dim, token strides
 *             lda, ldy
 *   ATTENTION y = out, a = q, b = k, c = v; params rayo_attention_params
 *             (m = n_q, n = head_dim, k = n_kv must match it)
 *   GLU       y = f(a) * b, m rows of n, strides lda, ldb, ldy
 *
 * Strides (lda..ldy, elements between row starts; 0: dense; else at least
 * the row length) apply to every matrix operand, whatever the sizes (an
 * empty matrix takes any stride): matmul's A, B, C (lda, ldb, ldy), gemv's
 * A (lda), get_rows' table and y, rope's x and y, GLU's a, b, y.  Vectors
 * and the other ops take 0 in ABI 1.0.  A row of a block
 * dtype is whole blocks (n and ld multiples of the block size).  Quantized
 * weights are matmul's B with RAYO_TRANS_B and gemv's A without
 * RAYO_TRANS_A (rows along the reduction, as GGUF stores them); so are
 * gemv's f16 and bf16 weights (RAYO_TRANS_A with them is refused).
 */

/* binary, elementwise */
RAYO_OP( 1, ADD,         add,        BINARY,    0,      0,      ELEM, "y = a + b")
RAYO_OP( 2, SUB,         sub,        BINARY,    0,      0,      ELEM, "y = a - b")
RAYO_OP( 3, MUL,         mul,        BINARY,    0,      0,      ELEM, "y = a * b")
RAYO_OP( 4, DIV,         div,        BINARY,    1.2e-7, 0,      ELEM, "y = a / b")
RAYO_OP( 5, MAXIMUM,     maximum,    BINARY,    0,      0,      ELEM, "y = max(a, b), NaN propagates")
RAYO_OP( 6, MINIMUM,     minimum,    BINARY,    0,      0,      ELEM, "y = min(a, b), NaN propagates")
RAYO_OP( 7, SCALE,       scale,      UNARY_P,   0,      0,      ELEM, "y = alpha * x")
RAYO_OP( 8, AXPY,        axpy,       AXPY,      1.2e-7, 0,      SUM,  "y = alpha * x + y")

/* unary, activations */
RAYO_OP(16, RELU,        relu,       UNARY,     0,      0,      ELEM, "y = max(x, 0)")
RAYO_OP(17, LEAKY_RELU,  leaky_relu, UNARY_P,   0,      0,      ELEM, "y = x > 0 ? x : alpha * x")
RAYO_OP(18, ELU,         elu,        UNARY_P,   2e-6,   1e-7,   ELEM, "y = x > 0 ? x : alpha * (exp(x) - 1)")
RAYO_OP(19, SELU,        selu,       UNARY,     2e-6,   1e-7,   ELEM, "y = 1.0507 * (x > 0 ? x : 1.67326 * (exp(x) - 1))")
RAYO_OP(20, SIGMOID,     sigmoid,    UNARY,     2e-6,   1e-7,   ELEM, "y = 1 / (1 + exp(-x))")
RAYO_OP(21, TANH,        tanh,       UNARY,     2e-6,   1e-7,   ELEM, "y = tanh(x)")
RAYO_OP(22, GELU,        gelu,       UNARY,     2e-6,   1e-7,   ELEM, "y = x * (1 + erf(x / sqrt(2))) / 2")
RAYO_OP(23, GELU_TANH,   gelu_tanh,  UNARY,     2e-6,   1e-7,   ELEM, "y = x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2")
RAYO_OP(24, SILU,        silu,       UNARY,     2e-6,   1e-7,   ELEM, "y = x * sigmoid(x)  (swish)")
RAYO_OP(25, MISH,        mish,       UNARY,     2e-6,   1e-7,   ELEM, "y = x * tanh(log(1 + exp(x)))")
RAYO_OP(26, HARDSWISH,   hardswish,  UNARY,     2.4e-7, 0,      ELEM, "y = x * clip(x + 3, 0, 6) / 6")
RAYO_OP(27, CLIP,        clip,       UNARY_P2,  0,      0,      ELEM, "y = min(max(x, alpha), beta)")
RAYO_OP(28, EXP,         exp,        UNARY,     2e-6,   0,      ELEM, "y = exp(x)")
RAYO_OP(29, LOG,         log,        UNARY,     2e-6,   1e-7,   ELEM, "y = log(x)")
RAYO_OP(30, SQRT,        sqrt,       UNARY,     1.2e-7, 0,      ELEM, "y = sqrt(x)")
RAYO_OP(31, ABS,         abs,        UNARY,     0,      0,      ELEM, "y = |x|")
RAYO_OP(32, SOFTPLUS,    softplus,   UNARY,     2e-6,   1e-7,   ELEM, "y = log(1 + exp(x)), no overflow for large x")

/* reductions */
RAYO_OP(40, SUM,         sum,        REDUCE,    1e-5,   0,      SUM,  "y = sum(x)")
RAYO_OP(41, DOT,         dot,        REDUCE2,   1e-5,   0,      SUM,  "y = sum(a * b)")
RAYO_OP(42, MAX,         max,        REDUCE,    0,      0,      ELEM, "y = max(x), NaN propagates; -inf for n = 0")
RAYO_OP(43, MIN,         min,        REDUCE,    0,      0,      ELEM, "y = min(x), NaN propagates; +inf for n = 0")
RAYO_OP(44, ARGMAX,      argmax,     ARGREDUCE, 0,      0,      ELEM, "y = index of the first maximum (first NaN if any); n = 0 is an error")
RAYO_OP(45, NORM_L1,     norm_l1,    REDUCE,    1e-5,   0,      SUM,  "y = sum(|x|)")
RAYO_OP(46, NORM_L2,     norm_l2,    REDUCE,    1e-5,   0,      ELEM,  "y = sqrt(sum(x^2)), no overflow for |x| < FLT_MAX")

/* row-wise */
RAYO_OP(60, SOFTMAX,     softmax,    ROWS,      4e-6,   1e-9,   ELEM, "y = exp(x - max) / sum(exp(x - max)) per row")
RAYO_OP(61, LOG_SOFTMAX, log_softmax,ROWS,      4e-6,   4e-6,   ELEM, "y = x - max - log(sum(exp(x - max))) per row")
RAYO_OP(62, LAYERNORM,   layernorm,  NORM,      4e-6,   4e-6,   ELEM, "y = (x - mean) / sqrt(var + eps) * gamma + beta per row")
RAYO_OP(63, RMSNORM,     rmsnorm,    NORM,      4e-6,   4e-6,   ELEM, "y = x / sqrt(mean(x^2) + eps) * gamma per row")

/* matrix */
RAYO_OP(80, MATMUL,      matmul,     MATMUL,    1e-5,   0,      SUM,  "C = alpha op(A) op(B) + beta C, row-major")
RAYO_OP(81, GEMV,        gemv,       GEMV,      1e-5,   0,      SUM,  "y = alpha op(A) x + beta y, row-major")
RAYO_OP(82, TRANSPOSE,   transpose,  TRANSPOSE, 0,      0,      ELEM, "y = x^T")
RAYO_OP(83, BIAS_ACT,    bias_act,   BIAS_ACT,  2e-6,   1e-7,   ELEM, "y = act(x + bias) per row; act in flags")

/* matmul and gemv with other dtypes: activations and accumulation f32.
 * Relaxed: TF32-like products (10-bit mantissa), f32 accumulation.  The SUM
 * scale of a Q4_K operand is the sum of |d sc q x| + |dmin m x| (the two
 * parts of each product separately).  A relaxed gemv or matmul of block
 * weights may round the activations to 8 bits per block; its bound is then
 * statistical: it holds for weights unrelated to the activations' rounding
 * errors (the x86 gemv rounds to 8 bits only where its estimate of the
 * error, five standard deviations, is within the contract), not for
 * weights made to match those errors. */
RAYO_COMBO(MATMUL, F32,  F32,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(MATMUL, F32,  F16,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(MATMUL, F32,  BF16, NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(MATMUL, F32,  Q8_0, NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(MATMUL, F32,  Q4_0, NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(MATMUL, F32,  Q4_K, NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(MATMUL, F32,  Q6_K, NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(MATMUL, F16,  F16,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(MATMUL, BF16, BF16, NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(GEMV,   F32,  F32,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(GEMV,   F16,  F32,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(GEMV,   BF16, F32,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(GEMV,   Q8_0, F32,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(GEMV,   Q4_0, F32,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(GEMV,   Q4_K, F32,  NONE, F32, 1e-5, 0, 2e-3, 0)
RAYO_COMBO(GEMV,   Q6_K, F32,  NONE, F32, 1e-5, 0, 2e-3, 0)

#ifndef RAYO_OPS_BASE_ONLY
/* inference: conversion, embedding lookup, rotary embedding, attention,
 * gated activations */
RAYO_OP(90, CONVERT,     convert,    CONVERT,   0,      0,      ELEM, "y = x converted (round to nearest even; GGUF quantizers)")
/* exact at both levels: bit-identical to rayo-dtype.h */
RAYO_COMBO(CONVERT, F32,  NONE, NONE, F16,  0, 0, 0, 0)
RAYO_COMBO(CONVERT, F16,  NONE, NONE, F32,  0, 0, 0, 0)
RAYO_COMBO(CONVERT, F32,  NONE, NONE, BF16, 0, 0, 0, 0)
RAYO_COMBO(CONVERT, BF16, NONE, NONE, F32,  0, 0, 0, 0)
RAYO_COMBO(CONVERT, F32,  NONE, NONE, Q8_0, 0, 0, 0, 0)
RAYO_COMBO(CONVERT, F32,  NONE, NONE, Q4_0, 0, 0, 0, 0)
RAYO_COMBO(CONVERT, Q8_0, NONE, NONE, F32,  0, 0, 0, 0)
RAYO_COMBO(CONVERT, Q4_0, NONE, NONE, F32,  0, 0, 0, 0)
RAYO_COMBO(CONVERT, Q4_K, NONE, NONE, F32,  0, 0, 0, 0)
RAYO_COMBO(CONVERT, Q6_K, NONE, NONE, F32,  0, 0, 0, 0)
RAYO_OP(91, GET_ROWS,    get_rows,   GET_ROWS,  0,      0,      ELEM, "y[r] = table[idx[r]] as f32")
/* exact: the row's stored values */
RAYO_COMBO(GET_ROWS, F32,  I32, NONE, F32, 0, 0, 0, 0)
RAYO_COMBO(GET_ROWS, F16,  I32, NONE, F32, 0, 0, 0, 0)
RAYO_COMBO(GET_ROWS, BF16, I32, NONE, F32, 0, 0, 0, 0)
RAYO_COMBO(GET_ROWS, Q8_0, I32, NONE, F32, 0, 0, 0, 0)
RAYO_COMBO(GET_ROWS, Q4_0, I32, NONE, F32, 0, 0, 0, 0)
RAYO_COMBO(GET_ROWS, Q4_K, I32, NONE, F32, 0, 0, 0, 0)
RAYO_COMBO(GET_ROWS, Q6_K, I32, NONE, F32, 0, 0, 0, 0)
/* rope: the scale is the norm of the rotated pair (|x| of the pair); the
 * angle must be computed in double or from inverse frequencies in double,
 * so the contract holds up to position 8191 */
RAYO_OP(92, ROPE,        rope,       ROPE,      4e-6,   4e-6,   ELEM, "rotary position embedding, NORM or NEOX pairs")
RAYO_COMBO(ROPE, F32, I32, NONE, F32, 4e-6, 4e-6, 4e-6, 4e-6)
/* attention: SUM scale = sum_j p_j |v_j| per output; an f16 cache is judged
 * on its stored values; relaxed allows f16/bf16 products for QK^T and PV */
RAYO_OP(93, ATTENTION,   attention,  ATTENTION, 1e-5,   1e-6,   SUM,  "out = softmax(scale Q K^T + causal mask) V, grouped-query")
RAYO_COMBO(ATTENTION, F32, F32, F32, F32, 1e-5, 1e-6, 2e-3, 1e-4)
RAYO_COMBO(ATTENTION, F32, F16, F16, F32, 1e-5, 1e-6, 2e-3, 1e-4)
RAYO_OP(94, SWIGLU,      swiglu,     GLU,       2e-6,   1e-7,   ELEM, "y = silu(a) * b")
RAYO_OP(95, GEGLU,       geglu,      GLU,       2e-6,   1e-7,   ELEM, "y = gelu(a) * b, erf form")
RAYO_OP(96, GEGLU_TANH,  geglu_tanh, GLU,       2e-6,   1e-7,   ELEM, "y = gelu(a) * b, tanh form")
#endif

#ifdef RAYO_OPS_UNDEF_COMBO_
#undef RAYO_COMBO
#undef RAYO_OPS_UNDEF_COMBO_
#endif

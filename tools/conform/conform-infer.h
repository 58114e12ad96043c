/* SPDX-License-Identifier: MIT */
/* conform-infer.h - the conformance plans of the inference ops and of the
 * non-f32 dtype combinations (plans-infer.c), judged with the float64
 * references of ref-infer.c.  Part of the conformance engine (conform.h).
 */
#ifndef RAYO_CONFORM_INFER_H
#define RAYO_CONFORM_INFER_H

#include "conform.h"

/* Whether op has cases here: convert, get_rows, rope, attention, swiglu,
 * geglu, geglu_tanh (only here), and matmul and gemv (their dtype
 * combinations and strided views here; dense f32 in plans-f32.c). */
int conform_infer_has_plan(const rayo_op_info *op);

/* Runs op's cases here and adds them to *result (cases, failures, reports,
 * largest error), which may already hold the f32 engine's: has_reference
 * becomes 1, implemented 1 when the backend ran a non-empty case.  Returns 1
 * when a case failed, else 0. */
int conform_infer_check(const conform_options *opts, const rayo_op_info *op, conform_result *result);

/* Are the cases of a call with these operand dtypes (RAYO_DTYPES) wanted
 * by opts->only_dtype? */
int conform_dtypes_wanted(const conform_options *opts, uint32_t dtypes);

#endif

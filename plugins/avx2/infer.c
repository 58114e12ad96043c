/* SPDX-License-Identifier: MIT */
/* infer.c - the inference ops of the AVX2 backend (convert, get_rows, rope,
 * attention, swiglu, geglu, geglu_tanh): ../cpu-base/x86-infer_tmpl.c at 8
 * floats a vector, on the plugin's vector interface (avx2-vector.h) and the
 * attention's register blocking defined here. */
#include "plugin.h"
#include "avx2-vector.h"

#define SCORE_HEADS 2 /* attention's scores: 2 heads x 4 keys of accumulators */
#define PV_HEADS 4 /* attention's p V: 4 heads x 2 vectors of accumulators of 16 registers */
#define ATT_SCORE_KEYS 12 /* attention, heads in lanes: keys of score accumulators */
#define ATT_PV_DIMS 8 /* and dimensions of p V accumulators */

#include "x86-infer_tmpl.c"

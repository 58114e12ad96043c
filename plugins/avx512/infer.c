/* SPDX-License-Identifier: MIT */
/* infer.c - the inference ops of the AVX-512 backend (convert, get_rows,
 * rope, attention, swiglu, geglu, geglu_tanh): ../cpu-base/x86-infer_tmpl.c at
 * 16 floats a vector, on the plugin's vector interface (avx512-vector.h) and the
 * attention's register blocking defined here. */
#include "plugin.h"
#include "avx512-vector.h"
#include "x86-avx2-math.h" /* v_exp: attention's heads in lanes are 256-bit */

#define SCORE_HEADS 4 /* attention's scores: 4 heads x 4 keys of accumulators */
#define PV_HEADS 8 /* attention's p V: 8 heads x 2 vectors of accumulators of 32 registers */
#define ATT_SCORE_KEYS 24 /* attention, heads in lanes: keys of score accumulators */
#define ATT_PV_DIMS 16 /* and dimensions of p V accumulators */

#include "x86-infer_tmpl.c"

/* SPDX-License-Identifier: MIT */
/* x86-prepared.h - weights of constant buffers kept in a kernel's own
 * layout (x86-prepared.c), for the avx2 and avx512 plugins.
 *
 * A call whose operand lies in a constant buffer says so
 * (rayo_call.constant_operands): its bytes do not change until the core
 * calls the plugin's release_constant for that memory.  A kernel may then
 * lay the weight out once in the form it reads fastest and keep it in the
 * plugin's state, found again by the weight's address, format, shape and
 * the layout's kind.  [backend.NAME] prepared_weights says which kernels
 * may: x86_state.prepared_weights. */
#ifndef RAYO_X86_PREPARED_H
#define RAYO_X86_PREPARED_H

#include "x86-plugin.h"

/* prepared_weights: none, the gemv's (a copy as large as the weight:
 * x86-prepared's default), or the prompt matmul's panels as well. */
enum { X86_PREPARED_NONE = 0, X86_PREPARED_GEMV = 1, X86_PREPARED_ALL = 2 };

/* What a prepared copy was made from, and for which kernel. */
typedef struct x86_prepared_key {
    const void *data;   /* the weight's first byte (in a constant buffer) */
    int kind;           /* the kernel's layout (its own numbers) */
    rayo_dtype dt;
    size_t rows, cols, stride; /* the weight's shape and row stride in bytes */
} x86_prepared_key;

/* The copy kept for key, or NULL. */
void *x86_prepared_find(x86_state *st, const x86_prepared_key *key);

/* Keeps data (from cpu_alloc_floats) for key and returns it; when another
 * thread kept a copy for the same key meanwhile, frees data and returns
 * that one. */
void *x86_prepared_keep(x86_state *st, const x86_prepared_key *key, void *data);

/* The plugin's release_constant: drops every copy made from [data, data +
 * bytes); x86_prepared_release_all drops them all (fini). */
void x86_prepared_release(cpu_state *base, const void *data, size_t bytes);
void x86_prepared_release_all(x86_state *st);

#endif

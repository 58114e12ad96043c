/* SPDX-License-Identifier: MIT */
/* x86-plugin.h - the state and the init/fini of the x86 plugins (avx2,
 * avx512): both keep the cache sizes, the sgemm blocking derived from them,
 * the streaming-store threshold and the pool of packing buffers, per context
 * (x86-plugin.c; plain C, compiled into both). */
#ifndef RAYO_X86_PLUGIN_H
#define RAYO_X86_PLUGIN_H

#include "cpu-base.h"
#include "x86-cache.h"
#include "x86-gemm.h"

#include <pthread.h>
#include <stdint.h>

/* A weight of a constant buffer kept in a kernel's layout (x86-prepared.h). */
typedef struct x86_prepared x86_prepared;

typedef struct x86_state {
    cpu_state cpu;              /* first: the base's part (the host services) */
    x86_caches caches;
    x86_gemm_blocking blocking;
    size_t stream_bytes;        /* vector outputs this large use non-temporal stores */
    x86_gemm_pool scratch_pool; /* sgemm packing buffers kept between calls */
    int avx_vnni;               /* avx2: its relaxed int8 gemv uses AVX-VNNI (avx512: 0) */
    int prepared_weights;       /* [backend.NAME] prepared_weights: X86_PREPARED_* */
    pthread_mutex_t prepared_lock;
    x86_prepared *prepared;     /* the weights kept, a list (x86-prepared.c) */
} x86_state;

/* The plugin's sgemm tile and its Goto/BLIS rule from cache sizes to
 * blocking (x86_choose_blocking), each block rounded down to whole tiles:
 *   kc: a kc x nr panel of packed B fills kc_l1d_num / kc_l1d_den of L1d
 *       (64 <= kc <= kc_max, a multiple of 8);
 *   mc: the packed mc x kc block of A fills 1 / mc_l2_div of L2
 *       (4 tiles <= mc <= mc_max);
 *   nc: the packed kc x nc block of B fills a quarter of L3, shared by the
 *       cores, which all read it (nc_min_tiles tiles <= nc <= nc_max). */
typedef struct x86_gemm_shape {
    size_t mr, nr;
    size_t kc_l1d_num, kc_l1d_den, kc_max;
    size_t mc_l2_div, mc_max;
    size_t nc_min_tiles, nc_max;
} x86_gemm_shape;

void x86_choose_blocking(const x86_gemm_shape *shape, const x86_caches *caches,
                         x86_gemm_blocking *blocking);

/* Fills the rest of the state (cpu_plugin_spec.init): caches, blocking with
 * its [backend.NAME] mc / kc / nc overrides, stream_min_bytes, the pool. */
rayo_status x86_state_init(cpu_state *base, const x86_gemm_shape *shape);
void x86_state_fini(cpu_state *base);

/* x86-prepared.c: the plugin's release_constant. */
void x86_prepared_release(cpu_state *base, const void *data, size_t bytes);

/* The device's name in rayo-info: "CPU <isa> (<brand>)". */
void x86_describe(const char *isa, char *name, size_t size);

/* The cpu_plugin of an x86 plugin (cpu-base.h): its device named after ISA,
 * its state an x86_state set up for the sgemm SHAPE (an x86_gemm_shape),
 * vector ranges cut at multiples of GRANULE elements.  X86_PLUGIN_SPEC_WITH
 * then runs MORE(state), a void function, for the plugin's own part of it. */
#define X86_PLUGIN_SPEC(ISA, SHAPE, GRANULE) X86_PLUGIN_SPEC_WITH(ISA, SHAPE, GRANULE, NULL)
#define X86_PLUGIN_SPEC_WITH(ISA, SHAPE, GRANULE, MORE)                                    \
    static void describe(char *name, size_t size)                                          \
    {                                                                                      \
        x86_describe(ISA, name, size);                                                     \
    }                                                                                      \
    static rayo_status init_state(cpu_state *base)                                         \
    {                                                                                      \
        void (*more)(x86_state *) = (MORE);                                                \
        rayo_status status = x86_state_init(base, &(SHAPE));                               \
        if (status == RAYO_OK && more)                                                     \
            more((x86_state *)base);                                                       \
        return status;                                                                     \
    }                                                                                      \
    const cpu_plugin_spec cpu_plugin = {                                                   \
        .describe = describe, .state_size = sizeof(x86_state), .init = init_state,         \
        .fini = x86_state_fini, .range_granule = (GRANULE),                                \
        .release_constant = x86_prepared_release,                                          \
    }

/* Whether a vector op writes its n floats at y with non-temporal stores:
 * outputs at least stream_bytes large, float-aligned (the loops align y to
 * the vector size first). */
static inline int x86_use_stream(const x86_state *st, const float *y, size_t n)
{
    return n * sizeof(float) >= st->stream_bytes && ((uintptr_t)y & 3) == 0;
}

/* Says at debug level that the call's output goes out with streaming
 * stores: the observable of each context's stream_min_bytes. */
void x86_log_stream(const x86_state *st, const rayo_call *call);

/* What a vector op's kernel does once per call, before its ranges run. */
static inline void x86_note_stream(const x86_state *st, const rayo_call *call)
{
    if (x86_use_stream(st, call->y, call->n))
        x86_log_stream(st, call);
}

/* The streaming hooks of cpu-elementwise_tmpl.c, the same on avx2 and avx512
 * (each plugin sets VEC_STREAM_ALIGN and vec_stream for its vector size). */
#define vec_use_stream(st, y, n) x86_use_stream((const x86_state *)(st), y, n)
#define vec_note_stream x86_note_stream
#define vec_stream_fence _mm_sfence

/* The op table's kernels of avx2 and avx512 (cpu-op-table.h): one for every
 * dtype combination of rayo-ops.h. */
#define CPU_COMBO_MATMUL(OP, DT) CPU_COMBO_TYPED(OP, DT, CPU_KERNEL(matmul_typed))
#define CPU_COMBO_GEMV(OP, DT) CPU_COMBO_TYPED(OP, DT, CPU_KERNEL(gemv_quant))
#define CPU_COMBO_CONVERT(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(convert))
#define CPU_COMBO_GET_ROWS(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(get_rows))
#define CPU_COMBO_ROPE(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(rope))
#define CPU_COMBO_ATTENTION(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(attention))

#endif

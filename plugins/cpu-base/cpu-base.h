/* SPDX-License-Identifier: MIT */
/* cpu-base.h - what every CPU plugin (scalar, avx2, avx512, neon, wasm) shares:
 * the state, the helpers that spread work over the core's thread pool,
 * probe/init/fini, the kernel prototypes and the descriptor.
 *
 * Not a library: cpu-base.c is compiled into each CPU plugin, hidden like
 * the rest of it (-fvisibility=hidden), so a plugin still exports only its
 * descriptor.  A CPU plugin then consists of its kernels and a plugin.c of
 * a few lines:
 *
 *   plugin.h   #define CPU_KERNEL(NAME) avx2_##NAME, then #include "cpu-base.h"
 *              (declares avx2_add ... for every op of rayo-ops.h)
 *   plugin.c   its cpu_plugin (device name, state size, init/fini hooks:
 *              CPU_PLUGIN_SPEC or X86_PLUGIN_SPEC), its CPU_PLUGIN_ID, then
 *              #include "cpu-plugin_tmpl.c" (the op table, the descriptor)
 *   ISA-math.h elementwise.c reduce.c rows.c matmul.c gemv.c transpose.c
 *              the kernels; elementwise.c, reduce.c, rows.c and transpose.c
 *              define only the ISA's vector primitives and micro-kernels,
 *              then include the driver templates cpu-elementwise_tmpl.c,
 *              cpu-reduce_tmpl.c, cpu-rows_tmpl.c, cpu-transpose_tmpl.c
 *              (threading, chunking, tails, the kernels of the op list)
 *
 * examples/plugin-template stays a standalone single-file plugin on purpose:
 * a third-party plugin needs only rayo-plugin.h.
 */
#ifndef RAYO_CPU_BASE_H
#define RAYO_CPU_BASE_H

#ifdef HAVE_CONFIG_H
#include "config.h" /* PACKAGE_VERSION, the plugin's version */
#endif
#include "rayo-plugin.h"

#include <math.h>

/* The part of a plugin's state the base knows: the core's host services.
 * A plugin with more state puts a cpu_state first in its own struct and
 * says so in cpu_plugin.state_size; kernels get a pointer to the whole. */
typedef struct cpu_state {
    const rayo_host *host;
} cpu_state;

/* What the plugin tells the base (plugin.c defines the one cpu_plugin). */
typedef struct cpu_plugin_spec {
    /* The device's name in rayo-info, or NULL to let describe() write it. */
    const char *device_name;
    void (*describe)(char *name, size_t size);
    /* sizeof the plugin's state (sizeof(cpu_state) when it has no more);
     * init allocates it zeroed. */
    size_t state_size;
    /* Optional: fill the rest of the state after st->host is set; a status
     * other than RAYO_OK fails init.  fini undoes it (not the allocation). */
    rayo_status (*init)(cpu_state *st);
    void (*fini)(cpu_state *st);
    /* cpu_run_ranges cuts [0, count) at multiples of this many items (1,
     * or the vector loop's unroll so that only the last chunk has a tail). */
    size_t range_granule;
    /* Optional: the descriptor's release_constant (rayo-plugin.h): drop
     * what the state keeps from the host memory [data, data + bytes). */
    void (*release_constant)(cpu_state *st, const void *data, size_t bytes);
} cpu_plugin_spec;

extern const cpu_plugin_spec cpu_plugin;

/* The cpu_plugin of a plugin whose state is the base's alone, its device
 * named DEVICE, ranges cut at multiples of GRANULE items. */
#define CPU_PLUGIN_SPEC(DEVICE, GRANULE)                                                   \
    const cpu_plugin_spec cpu_plugin = {                                                   \
        .device_name = (DEVICE), .state_size = sizeof(cpu_state), .range_granule = (GRANULE), \
    }

/* ---- threads ------------------------------------------------------------- */
/* Threads the core's pool offers (1 when it has none). */
unsigned cpu_threads(const cpu_state *st);

/* Runs fn(arg, task, worker) for every task in [0, n_tasks): on the core's
 * pool when there is more than one task and more than one thread, inline
 * otherwise.  worker < cpu_threads(st). */
typedef void cpu_task_fn(void *arg, size_t task, unsigned worker);
void cpu_parallel(const cpu_state *st, size_t n_tasks, cpu_task_fn *fn, void *arg);

/* Work below this many "cheap operations" runs on the calling thread only:
 * waking the pool costs more than it saves. */
#define CPU_PARALLEL_MIN_WORK ((size_t)1 << 17)

/* Runs fn(st, call, lo, hi) over [0, count) items (elements or rows), in chunks
 * on the pool when count * work_per_item is at least CPU_PARALLEL_MIN_WORK:
 * a few chunks per thread (they even out uneven progress), each big enough
 * that handing it out costs little, cut at multiples of range_granule. */
typedef void cpu_range_fn(const cpu_state *st, const rayo_call *call, size_t lo, size_t hi);
void cpu_run_ranges(const cpu_state *st, const rayo_call *call, size_t count,
                    size_t work_per_item, cpu_range_fn *fn);

/* Runs fn(st, call, lo, hi) over [0, n) in one chunk per thread, its bounds
 * at multiples of granule, when n >= min_parallel; else in one piece on the
 * calling thread (without asking the host for its thread count).  For
 * kernels whose thresholds are measured per op class in items (avx2). */
void cpu_run_per_thread(const cpu_state *st, const rayo_call *call, size_t n, size_t min_parallel,
                        size_t granule, cpu_range_fn *fn);

/* The templates' threading (cpu-*_tmpl.c): fn over count items of per_item
 * elements each, at cost (the plugin's unit) per element.  The default is
 * cpu_run_ranges with cost in cheap operations; a plugin with another rule
 * defines CPU_RUN_ITEMS before it includes a template. */
static inline void cpu_run_items(const void *state, const rayo_call *call, size_t count,
                                 size_t per_item, size_t cost, cpu_range_fn *fn)
{
    cpu_run_ranges(state, call, count, per_item * cost, fn);
}

/* ---- reductions: sum, dot, norm_l1, norm_l2 ------------------------------ */
typedef enum cpu_reduction { CPU_RED_SUM, CPU_RED_ABS, CPU_RED_DOT, CPU_RED_SQUARES } cpu_reduction;

/* The plugin's reduction of a[0..n) (with b[0..n) for dot; b is NULL for
 * the others) in double, on the calling thread. */
typedef double cpu_reduce_fn(cpu_reduction kind, const float *a, const float *b, size_t n);

/* How a long vector is cut into chunks of whole blocks for the pool; the
 * chunks' partial sums are added in chunk order. */
typedef enum cpu_reduce_split {
    CPU_SPLIT_PER_THREAD, /* 4 chunks per thread: the sum's rounding depends on the thread count */
    CPU_SPLIT_BY_SIZE     /* a chunk count that depends on n only: the same result on any pool */
} cpu_reduce_split;

/* Vectors shorter than this are reduced on the calling thread. */
#define CPU_REDUCE_PARALLEL_MIN ((size_t)1 << 18)

/* The reduction in chunks on the pool (cpu_reduce's long path). */
double cpu_reduce_parallel(const cpu_state *st, cpu_reduce_fn *serial, cpu_reduce_split split,
                           size_t block, cpu_reduction kind, const float *a, const float *b, size_t n);

/* The reduction of a call: serial on the calling thread for short vectors
 * (inlined: a direct call of the plugin's function), else on the pool. */
static inline double cpu_reduce(const cpu_state *st, cpu_reduce_fn *serial, cpu_reduce_split split,
                                size_t block, cpu_reduction kind, const float *a, const float *b, size_t n)
{
    if (n < CPU_REDUCE_PARALLEL_MIN)
        return serial(kind, a, b, n);
    return cpu_reduce_parallel(st, serial, split, block, kind, a, b, n);
}

/* The reduction of a[0..n) term by term in double: the slow path of the
 * plugins whose float lanes overflowed (partial sums past FLT_MAX: FLT_MAX +
 * FLT_MAX - FLT_MAX) or met inf/NaN, so a finite result cannot become inf;
 * inf and NaN inputs give the same answer in double. */
static inline double cpu_reduce_f64(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += kind == CPU_RED_SUM ? (double)a[i] : kind == CPU_RED_ABS ? fabs((double)a[i]) : (double)a[i] * b[i];
    return s;
}

/* ---- checks the kernels of several plugins share ------------------------ */
/* attention: RAYO_E_UNSUPPORTED unless q is f32 and k, v are both f32 or
 * both f16; RAYO_E_INVALID for a head layout the core refuses first. */
rayo_status cpu_attention_check(const rayo_call *c, const rayo_attention_params *p);
/* attention: the strides of q, k, v and out in elements, 0 (dense) resolved. */
typedef struct cpu_attention_layout {
    size_t q_token, q_head, k_token, k_head, v_token, v_head, o_token, o_head;
} cpu_attention_layout;
cpu_attention_layout cpu_attention_layout_of(const rayo_attention_params *p);
/* rope: the rotated dimensions (rot_dims; 0: head_dim) into *rot, 0 when
 * the call is empty; RAYO_E_INVALID for an odd or too large rot_dims or an
 * unknown mode. */
rayo_status cpu_rope_check(const rayo_call *c, size_t *rot);

/* ---- settings ([backend.NAME] keys of the plugin's config section) -------- */
/* The value of size setting `key` of this context, or fallback when the key
 * is absent; a value that is not a whole number in [lo, hi] is ignored with
 * a warning that names it.  Every per-context setting of a CPU plugin is
 * read with this at init and kept in the plugin's state (never in a global:
 * two contexts may be configured differently). */
size_t cpu_setting_size(const cpu_state *st, const char *key, size_t fallback, size_t lo, size_t hi);

/* ---- memory -------------------------------------------------------------- */
/* 64-byte aligned scratch from the core's allocator; NULL on failure. */
float *cpu_alloc_floats(const cpu_state *st, size_t count);
void cpu_free(const cpu_state *st, void *ptr);

/* ---- probe, init, fini (the descriptor points at them) ------------------- */
rayo_status cpu_probe(const rayo_host *host, rayo_probe_result *result);
rayo_status cpu_init(const rayo_host *host, uint32_t device, void **state);
void cpu_fini(void *state);
void cpu_release_constant(void *state, const void *data, size_t bytes);

/* What probe needs of the descriptor, as a hidden copy: the base must not
 * refer to the exported rayo_plugin itself (a wasm side module would then
 * import it instead of using its own).  CPU_PLUGIN_DESCRIPTOR defines it. */
typedef struct cpu_plugin_identity {
    const char *name;
    uint64_t cpu_features;
} cpu_plugin_identity;
extern const cpu_plugin_identity cpu_plugin_id;

/* Defines the plugin's exported descriptor (probe, init and fini are the
 * base's) and its identity:
 *   CPU_PLUGIN_DESCRIPTOR("avx2", RAYO_ARCH_X86_64, RAYO_CPU_X86_AVX2, 50, avx2_ops); */
#define CPU_PLUGIN_DESCRIPTOR(NAME, ARCH, CPU_FEATURES, PRIORITY, OPS)                    \
    const cpu_plugin_identity cpu_plugin_id = { (NAME), (CPU_FEATURES) };                 \
    RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {                      \
        .magic = RAYO_PLUGIN_MAGIC, .abi_major = RAYO_PLUGIN_ABI_MAJOR,                  \
        .abi_minor = RAYO_PLUGIN_ABI_MINOR, .struct_size = sizeof(rayo_plugin_descriptor), \
        .arch = (ARCH), .name = (NAME), .version = CPU_PLUGIN_VERSION,                   \
        .cpu_features = (CPU_FEATURES), .priority = (PRIORITY), .probe = cpu_probe,       \
        .init = cpu_init, .fini = cpu_fini, .ops = (OPS),                                \
        .op_count = sizeof(OPS) / sizeof((OPS)[0]), .memory = NULL,                      \
        .op_entry_size = sizeof(rayo_op_entry), .release_constant = cpu_release_constant, \
    }

#ifdef PACKAGE_VERSION
#define CPU_PLUGIN_VERSION PACKAGE_VERSION
#else
#define CPU_PLUGIN_VERSION "0"
#endif

/* ---- kernels (rayo_kernel_fn) -------------------------------------------- */
/* A plugin's kernel for op NAME is CPU_KERNEL(NAME), declared here for every
 * op of the op list; a new op in rayo-ops.h is then a link error in every
 * CPU plugin until it has the kernel. */
#ifdef CPU_KERNEL
#define CPU_KERNEL_FN(NAME) rayo_status CPU_KERNEL(NAME)(void *state, const rayo_call *call)
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) CPU_KERNEL_FN(NAME);
#include "rayo-ops.h"
#undef RAYO_OP
#endif

#endif

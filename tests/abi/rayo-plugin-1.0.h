/* SPDX-License-Identifier: MIT */
/* rayo-plugin-1.0.h - the plugin ABI 1.0, frozen (tests only; never edit).
 *
 * The types and constants that cross the boundary between the core and a
 * plugin, exactly as core/rayo.h and core/rayo-plugin.h define them at ABI
 * 1.0, in one self-contained header.  Test plugins and the simulated cores
 * of tests/abi/ are compiled against it, so that they stay 1.0 plugins and
 * 1.0 cores whatever the real headers become; tests/abi/test-abi-frozen.c
 * checks that the real headers still agree with it (every field at the same
 * offset with the same size, every constant the same value): a core may
 * only append.
 *
 * Each growable struct ends in a hook macro, empty here, where
 * rayo-plugin-1.99.h appends the fields of an imagined future minor; with
 * the hooks empty the layout is that of 1.0. */
#ifndef RAYO_PLUGIN_FROZEN_H
#define RAYO_PLUGIN_FROZEN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef RAYO_PLUGIN_ABI_MINOR
#define RAYO_PLUGIN_ABI_MINOR 0
#endif
#ifndef RAYO_1X_CALL_FIELDS
#define RAYO_1X_CALL_FIELDS
#endif
#ifndef RAYO_1X_HOST_FIELDS
#define RAYO_1X_HOST_FIELDS
#endif
#ifndef RAYO_1X_PROBE_FIELDS
#define RAYO_1X_PROBE_FIELDS
#endif
#ifndef RAYO_1X_OP_ENTRY_FIELDS
#define RAYO_1X_OP_ENTRY_FIELDS
#endif
#ifndef RAYO_1X_DEV_CALL_FIELDS
#define RAYO_1X_DEV_CALL_FIELDS
#endif
#ifndef RAYO_1X_MEMORY_FIELDS
#define RAYO_1X_MEMORY_FIELDS
#endif
#ifndef RAYO_1X_DESCRIPTOR_FIELDS
#define RAYO_1X_DESCRIPTOR_FIELDS
#endif

#define RAYO_PLUGIN_ABI_MAJOR 1
#define RAYO_PLUGIN_MAGIC 0x4f594152u
#define RAYO_PLUGIN_SYMBOL "rayo_plugin"
#if defined(__GNUC__)
#define RAYO_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define RAYO_PLUGIN_EXPORT
#endif

typedef enum rayo_status {
    RAYO_OK = 0, RAYO_E_INVALID = 1, RAYO_E_OVERFLOW = 2, RAYO_E_NOMEM = 3,
    RAYO_E_UNSUPPORTED = 4, RAYO_E_BACKEND = 5, RAYO_E_DEVICE_LOST = 6, RAYO_E_NOT_FOUND = 7,
    RAYO_E_CONFIG = 8, RAYO_E_ABI = 9, RAYO_E_TIMEOUT = 10, RAYO_E_NO_BACKEND = 11,
    RAYO_E_STATE = 12
} rayo_status;

/* The op ids the test plugins use (ids are stable forever). */
#define RAYO_OP_ADD 1u
#define RAYO_OP_MUL 3u
#define RAYO_DTYPE_F32 0u
#define RAYO_DTYPES(a, b, c, y) \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(y) << 24)
#define RAYO_DTYPES_ANY 0xffffffffu

#define RAYO_LOG_ERROR 0
#define RAYO_LOG_WARN 1
#define RAYO_LOG_INFO 2
#define RAYO_LOG_DEBUG 3
#define RAYO_DEVICE_CPU 0u
#define RAYO_ARCH_ANY 0u
#define RAYO_MAX_DEVICES 16
#define RAYO_DEVICE_HOST_MEMORY 0x1u

typedef struct rayo_call {
    uint32_t struct_size;
    uint32_t op;
    uint32_t flags;
    uint32_t dtypes;
    size_t m, n, k;
    float alpha, beta;
    const void *a, *b, *c;
    void *y;
    size_t lda, ldb, ldc, ldy;
    uint32_t precision;
    uint32_t reserved;
    const void *params;
    RAYO_1X_CALL_FIELDS
} rayo_call;

#define RAYO_CALL_HAS(call, field) \
    (offsetof(rayo_call, field) + sizeof(((const rayo_call *)0)->field) <= (call)->struct_size)

typedef struct rayo_host rayo_host;
struct rayo_host {
    size_t struct_size;
    unsigned abi_major, abi_minor;
    void *core;
    uint64_t cpu_features;
    void (*log)(const rayo_host *host, int level, const char *fmt, ...);
    void (*set_error)(const rayo_host *host, const char *fmt, ...);
    const char *(*config)(const rayo_host *host, const char *key);
    void *(*alloc_aligned)(size_t align, size_t bytes);
    void (*free_aligned)(void *ptr);
    unsigned (*num_threads)(const rayo_host *host);
    void (*parallel_for)(const rayo_host *host, size_t n_tasks,
                         void (*fn)(void *arg, size_t task, unsigned worker), void *arg);
    const char *(*cache_dir)(const rayo_host *host);
    RAYO_1X_HOST_FIELDS
};

typedef struct rayo_device_desc {
    char name[128];
    uint32_t type;
    uint32_t flags;
    uint64_t memory_bytes;
    uint64_t reserved[4];
} rayo_device_desc;

typedef struct rayo_probe_result {
    size_t struct_size;
    uint32_t device_count;
    rayo_device_desc devices[RAYO_MAX_DEVICES];
    char reason[256];
    RAYO_1X_PROBE_FIELDS
} rayo_probe_result;

typedef rayo_status (*rayo_kernel_fn)(void *state, const rayo_call *call);

typedef struct rayo_op_entry {
    uint32_t op;
    uint32_t dtypes;
    rayo_kernel_fn fn;
    RAYO_1X_OP_ENTRY_FIELDS
} rayo_op_entry;

typedef struct rayo_dev_operand {
    void *buf;
    size_t offset;
} rayo_dev_operand;

typedef struct rayo_dev_call {
    uint32_t struct_size;
    uint32_t op, flags;
    uint32_t dtypes;
    size_t m, n, k;
    float alpha, beta;
    rayo_dev_operand a, b, c, y;
    size_t lda, ldb, ldc, ldy;
    uint32_t precision;
    uint32_t reserved;
    const void *params;
    RAYO_1X_DEV_CALL_FIELDS
} rayo_dev_call;

#define RAYO_DEV_CALL_HAS(call, field) \
    (offsetof(rayo_dev_call, field) + sizeof(((const rayo_dev_call *)0)->field) <= (call)->struct_size)

typedef struct rayo_memory_api {
    size_t struct_size;
    rayo_status (*buffer_alloc)(void *state, size_t bytes, void **buf);
    void (*buffer_free)(void *state, void *buf);
    rayo_status (*buffer_write)(void *state, void *buf, size_t offset, const void *src, size_t bytes);
    rayo_status (*buffer_read)(void *state, void *buf, size_t offset, void *dst, size_t bytes);
    rayo_status (*batch_begin)(void *state, void **batch);
    rayo_status (*batch_record)(void *state, void *batch, const rayo_dev_call *call);
    rayo_status (*batch_submit)(void *state, void *batch);
    rayo_status (*batch_wait)(void *state, void *batch, uint64_t timeout_ns);
    void (*batch_free)(void *state, void *batch);
    RAYO_1X_MEMORY_FIELDS
} rayo_memory_api;

typedef struct rayo_plugin_descriptor {
    uint32_t magic;
    uint16_t abi_major;
    uint16_t abi_minor;
    uint32_t struct_size;
    uint32_t arch;
    char name[32];
    char version[32];
    uint64_t cpu_features;
    uint32_t priority;
    uint32_t reserved;
    rayo_status (*probe)(const rayo_host *host, rayo_probe_result *result);
    rayo_status (*init)(const rayo_host *host, uint32_t device, void **state);
    void (*fini)(void *state);
    const rayo_op_entry *ops;
    size_t op_count;
    const rayo_memory_api *memory;
    uint32_t op_entry_size;
    uint32_t reserved2;
    RAYO_1X_DESCRIPTOR_FIELDS
} rayo_plugin_descriptor;

#ifndef RAYO_PLUGIN_NO_DECLARATION
extern RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin;
#endif

#ifdef __cplusplus
}
#endif
#endif

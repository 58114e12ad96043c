/* SPDX-License-Identifier: MIT */
/* gguf.h - a reader of GGUF (version 3) model files.
 *
 * The file is memory-mapped; strings, arrays and tensor data point into the
 * mapping and stay valid until gguf_close.  Tensor data of the types rayo
 * knows (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K) is used in place: its bytes
 * are the rayo_dtype layouts of core/rayo-dtype.h.  Every count, length and
 * offset is checked against the file before use; a malformed file gets a
 * message naming the byte offset and the field, never a crash.
 * Format: ggml's docs/gguf.md.  Little-endian files only (as written on
 * every machine rayo runs on). */
#ifndef LLAMA_GGUF_H
#define LLAMA_GGUF_H

#include <rayo.h>
#include <rayo-dtype.h>
#include <stddef.h>
#include <stdint.h>

/* Metadata value types (numbers as the format defines them). */
typedef enum gguf_type {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10,
    GGUF_I64 = 11, GGUF_F64 = 12, GGUF_TYPE_LIMIT = 13
} gguf_type;

/* ggml tensor type numbers (the ones this reader accepts). */
enum {
    GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q4_0 = 2, GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q4_K = 12, GGML_TYPE_Q6_K = 14, GGML_TYPE_BF16 = 30
};

#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

typedef struct gguf_str {
    const char *p;  /* not NUL-terminated */
    uint64_t len;
} gguf_str;

typedef struct gguf_kv {
    char *key;      /* NUL-terminated copy */
    gguf_type type;
    union {
        uint64_t u;     /* U8..U64, BOOL */
        int64_t i;      /* I8..I64 */
        double f;       /* F32, F64 */
        gguf_str str;   /* STRING */
        struct {
            gguf_type type; /* element type (never ARRAY) */
            uint64_t n;
            const uint8_t *data; /* raw little-endian elements */
        } arr;
    } v;
} gguf_kv;

typedef struct gguf_tensor {
    char *name;                 /* NUL-terminated copy */
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* ne[0]: elements of one row; unused dims are 1 */
    uint32_t ggml_type;
    rayo_dtype dtype;
    uint64_t offset;            /* from the start of the data section */
    uint64_t bytes;
    const void *data;           /* in the mapping */
} gguf_tensor;

typedef struct gguf_file {
    uint32_t version;
    uint64_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    uint32_t alignment;
    uint64_t data_offset;       /* start of the tensor data in the file */
    const uint8_t *base;        /* the whole file */
    size_t size;
    int mapped;                 /* base is an mmap (gguf_open) */
} gguf_file;

/* Opens and checks a file.  Returns 0, or -1 with a message in err. */
int gguf_open(const char *path, gguf_file **out, char *err, size_t errlen);
/* Parses bytes the caller keeps alive until gguf_close (tests, fuzzing). */
int gguf_parse(const uint8_t *data, size_t size, gguf_file **out, char *err, size_t errlen);
void gguf_close(gguf_file *g);

const gguf_kv *gguf_find(const gguf_file *g, const char *key);
const gguf_tensor *gguf_tensor_find(const gguf_file *g, const char *name);
/* Typed lookups: 0 on success; -1 when the key is missing, has another type
 * or (integers) a value out of range; err says which. */
int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *v, char *err, size_t errlen);
int gguf_get_f32(const gguf_file *g, const char *key, float *v, char *err, size_t errlen);
int gguf_get_str(const gguf_file *g, const char *key, gguf_str *v, char *err, size_t errlen);
/* Element i of an array (checked at parse time; i < arr.n). */
gguf_str gguf_arr_str(const gguf_kv *kv, uint64_t i); /* O(i): use gguf_arr_strs for all */
/* All strings of a string array: a malloc'd array the caller frees. */
gguf_str *gguf_arr_strs(const gguf_kv *kv);
double gguf_arr_num(const gguf_kv *kv, uint64_t i);
int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i);

const char *gguf_type_name(gguf_type t);
const char *gguf_ggml_type_name(uint32_t ggml_type);

#endif

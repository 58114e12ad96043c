/* SPDX-License-Identifier: MIT */
/* gguf.c - GGUF version 3 reader (see gguf.h).
 *
 * Layout: "GGUF", u32 version, u64 tensor count, u64 key/value count; the
 * key/values (string key, u32 type, value); the tensor infos (string name,
 * u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset); padding to the
 * alignment; the tensor data.  Strings are a u64 length and bytes. */
#define _GNU_SOURCE
#include "gguf.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Keys and tensor names longer than this are refused (the format's limit
 * for keys is 65535; names in ggml are 63). */
#define NAME_MAX_LEN 65535u

typedef struct cursor {
    const uint8_t *base;
    size_t size, pos;
    char *err;
    size_t errlen;
} cursor;

static void fail(cursor *c, size_t at, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "offset %zu: %s", at, msg);
}

static size_t left(const cursor *c) { return c->size - c->pos; }

static int need(cursor *c, size_t n, const char *field)
{
    if (left(c) < n) {
        fail(c, c->pos, "%s: file ends (%zu bytes needed, %zu left)", field, n, left(c));
        return -1;
    }
    return 0;
}

static uint64_t le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int rd(cursor *c, unsigned n, uint64_t *v, const char *field)
{
    if (need(c, n, field))
        return -1;
    *v = le(c->base + c->pos, n);
    c->pos += n;
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v, const char *field)
{
    uint64_t x;
    if (rd(c, 4, &x, field))
        return -1;
    *v = (uint32_t)x;
    return 0;
}

static int rd_str(cursor *c, gguf_str *s, const char *field)
{
    size_t at = c->pos;
    if (rd(c, 8, &s->len, field))
        return -1;
    if (s->len > left(c)) {
        fail(c, at, "%s: string length %llu exceeds the file (%zu bytes left)", field,
             (unsigned long long)s->len, left(c));
        return -1;
    }
    s->p = (const char *)c->base + c->pos;
    c->pos += s->len;
    return 0;
}

/* A NUL-terminated copy of a key or name; refuses embedded NULs. */
static char *rd_name(cursor *c, const char *field)
{
    size_t at = c->pos;
    gguf_str s;
    if (rd_str(c, &s, field))
        return NULL;
    if (s.len == 0 || s.len > NAME_MAX_LEN || memchr(s.p, 0, s.len)) {
        fail(c, at, "%s: %s", field, s.len == 0 ? "empty" : s.len > NAME_MAX_LEN ?
             "longer than 65535 bytes" : "contains a NUL byte");
        return NULL;
    }
    char *name = malloc(s.len + 1);
    if (!name) {
        fail(c, at, "%s: out of memory", field);
        return NULL;
    }
    memcpy(name, s.p, s.len);
    name[s.len] = '\0';
    return name;
}

static unsigned scalar_size(gguf_type t)
{
    static const unsigned size[GGUF_TYPE_LIMIT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < GGUF_TYPE_LIMIT ? size[t] : 0;
}

const char *gguf_type_name(gguf_type t)
{
    static const char *const names[GGUF_TYPE_LIMIT] = {"u8", "i8", "u16", "i16", "u32",
        "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
    return (unsigned)t < GGUF_TYPE_LIMIT ? names[t] : "unknown";
}

static int64_t sign_extend(uint64_t v, unsigned bytes)
{
    unsigned shift = 64 - 8 * bytes;
    return (int64_t)(v << shift) >> shift;
}

static double float_of(uint64_t bits, unsigned bytes)
{
    if (bytes == 4) {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

static int rd_scalar(cursor *c, gguf_kv *kv, const char *field)
{
    unsigned n = scalar_size(kv->type);
    size_t at = c->pos;
    uint64_t bits;
    if (rd(c, n, &bits, field))
        return -1;
    switch (kv->type) {
    case GGUF_I8: case GGUF_I16: case GGUF_I32: case GGUF_I64:
        kv->v.i = sign_extend(bits, n);
        break;
    case GGUF_F32: case GGUF_F64:
        kv->v.f = float_of(bits, n);
        break;
    case GGUF_BOOL:
        if (bits > 1) {
            fail(c, at, "%s: bool value %llu is neither 0 nor 1", field, (unsigned long long)bits);
            return -1;
        }
        /* fall through */
    default:
        kv->v.u = bits;
    }
    return 0;
}

static int rd_array(cursor *c, gguf_kv *kv, const char *field)
{
    uint32_t type;
    size_t at = c->pos;
    if (rd_u32(c, &type, field) || rd(c, 8, &kv->v.arr.n, field))
        return -1;
    if (type >= GGUF_TYPE_LIMIT || type == GGUF_ARRAY) {
        fail(c, at, "%s: array element type %u is %s", field, type,
             type == GGUF_ARRAY ? "array (nested arrays are not supported)" : "unknown");
        return -1;
    }
    kv->v.arr.type = (gguf_type)type;
    kv->v.arr.data = c->base + c->pos;
    uint64_t n = kv->v.arr.n;
    if (type != GGUF_STRING) {
        unsigned size = scalar_size((gguf_type)type);
        if (n > left(c) / size) {
            fail(c, at + 4, "%s: array of %llu %s elements exceeds the file (%zu bytes left)",
                 field, (unsigned long long)n, gguf_type_name((gguf_type)type), left(c));
            return -1;
        }
        c->pos += n * size;
        return 0;
    }
    if (n > left(c) / 8) {
        fail(c, at + 4, "%s: array of %llu strings exceeds the file (%zu bytes left)", field,
             (unsigned long long)n, left(c));
        return -1;
    }
    for (uint64_t i = 0; i < n; i++) {
        gguf_str s;
        if (rd_str(c, &s, field))
            return -1;
    }
    return 0;
}

static int rd_kv(cursor *c, gguf_kv *kv, uint64_t index)
{
    char field[96];
    snprintf(field, sizeof field, "key/value %llu: key", (unsigned long long)index);
    if (!(kv->key = rd_name(c, field)))
        return -1;
    snprintf(field, sizeof field, "key '%.40s': type", kv->key);
    uint32_t type;
    size_t at = c->pos;
    if (rd_u32(c, &type, field))
        return -1;
    if (type >= GGUF_TYPE_LIMIT) {
        fail(c, at, "%s %u is unknown", field, type);
        return -1;
    }
    kv->type = (gguf_type)type;
    snprintf(field, sizeof field, "key '%.40s': value", kv->key);
    if (type == GGUF_STRING)
        return rd_str(c, &kv->v.str, field);
    if (type == GGUF_ARRAY)
        return rd_array(c, kv, field);
    return rd_scalar(c, kv, field);
}

const char *gguf_ggml_type_name(uint32_t t)
{
    switch (t) {
    case GGML_TYPE_F32: return "f32";
    case GGML_TYPE_F16: return "f16";
    case GGML_TYPE_BF16: return "bf16";
    case GGML_TYPE_Q8_0: return "q8_0";
    case GGML_TYPE_Q4_0: return "q4_0";
    case GGML_TYPE_Q4_K: return "q4_k";
    case GGML_TYPE_Q6_K: return "q6_k";
    default: return "unsupported";
    }
}

static int dtype_of(uint32_t t, rayo_dtype *dt)
{
    switch (t) {
    case GGML_TYPE_F32: *dt = RAYO_DTYPE_F32; return 0;
    case GGML_TYPE_F16: *dt = RAYO_DTYPE_F16; return 0;
    case GGML_TYPE_BF16: *dt = RAYO_DTYPE_BF16; return 0;
    case GGML_TYPE_Q8_0: *dt = RAYO_DTYPE_Q8_0; return 0;
    case GGML_TYPE_Q4_0: *dt = RAYO_DTYPE_Q4_0; return 0;
    case GGML_TYPE_Q4_K: *dt = RAYO_DTYPE_Q4_K; return 0;
    case GGML_TYPE_Q6_K: *dt = RAYO_DTYPE_Q6_K; return 0;
    default: return -1;
    }
}

/* Shape and type of one tensor info; bytes = its data size. */
static int check_shape(cursor *c, gguf_tensor *t, size_t at)
{
    uint64_t count = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (t->ne[d] == 0 || t->ne[d] > (UINT64_C(1) << 62) / count) {
            fail(c, at, "tensor '%.40s': dimension %u (%llu) is zero or overflows", t->name, d,
                 (unsigned long long)t->ne[d]);
            return -1;
        }
        count *= t->ne[d];
    }
    if (dtype_of(t->ggml_type, &t->dtype)) {
        fail(c, at, "tensor '%.40s': ggml type %u is not supported (F32, F16, BF16, Q8_0, "
             "Q4_0, Q4_K, Q6_K are)", t->name, t->ggml_type);
        return -1;
    }
    size_t block = rayo_dtype_block_elems(t->dtype);
    if (t->ne[0] % block) {
        fail(c, at, "tensor '%.40s': row of %llu elements is not a whole number of %s blocks"
             " of %zu", t->name, (unsigned long long)t->ne[0], rayo_dtype_name(t->dtype), block);
        return -1;
    }
    t->bytes = count / block * rayo_dtype_block_bytes(t->dtype);
    return 0;
}

static int rd_tensor_info(cursor *c, gguf_tensor *t, uint64_t index)
{
    char field[96];
    size_t at = c->pos;
    snprintf(field, sizeof field, "tensor info %llu: name", (unsigned long long)index);
    if (!(t->name = rd_name(c, field)))
        return -1;
    snprintf(field, sizeof field, "tensor '%.40s': n_dims", t->name);
    size_t dims_at = c->pos;
    if (rd_u32(c, &t->n_dims, field))
        return -1;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS) {
        fail(c, dims_at, "%s %u is not in 1..%d", field, t->n_dims, GGUF_MAX_DIMS);
        return -1;
    }
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    snprintf(field, sizeof field, "tensor '%.40s': ne", t->name);
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (rd(c, 8, &t->ne[d], field))
            return -1;
    snprintf(field, sizeof field, "tensor '%.40s': type/offset", t->name);
    if (rd_u32(c, &t->ggml_type, field) || rd(c, 8, &t->offset, field))
        return -1;
    return check_shape(c, t, at);
}

static int find_duplicates(cursor *c, const gguf_file *g)
{
    /* Quadratic, but counts are small (hundreds) and bounded by the file size. */
    for (uint64_t i = 0; i < g->n_kv; i++)
        for (uint64_t j = 0; j < i; j++)
            if (!strcmp(g->kv[i].key, g->kv[j].key)) {
                fail(c, 24, "key/value %llu: key '%.40s' appears twice", (unsigned long long)i,
                     g->kv[i].key);
                return -1;
            }
    for (uint64_t i = 0; i < g->n_tensors; i++)
        for (uint64_t j = 0; j < i; j++)
            if (!strcmp(g->tensors[i].name, g->tensors[j].name)) {
                fail(c, 24, "tensor info %llu: name '%.40s' appears twice", (unsigned long long)i,
                     g->tensors[i].name);
                return -1;
            }
    return 0;
}

static int read_alignment(cursor *c, gguf_file *g)
{
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find(g, "general.alignment");
    if (!kv)
        return 0;
    if (kv->type != GGUF_U32 || kv->v.u == 0 || (kv->v.u & (kv->v.u - 1))) {
        fail(c, 24, "key 'general.alignment': must be a u32 power of two (is %s %llu)",
             gguf_type_name(kv->type), (unsigned long long)kv->v.u);
        return -1;
    }
    g->alignment = (uint32_t)kv->v.u;
    return 0;
}

static int by_offset(const void *x, const void *y)
{
    const gguf_tensor *a = *(const gguf_tensor *const *)x, *b = *(const gguf_tensor *const *)y;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* No two tensors share bytes: a tensor whose type says more bytes than its
 * data holds (f16 over q8_0-sized data) runs into the next one. */
static int check_overlaps(cursor *c, const gguf_file *g)
{
    if (g->n_tensors < 2)
        return 0;
    const gguf_tensor **order = malloc(g->n_tensors * sizeof *order);
    if (!order) {
        fail(c, 24, "out of memory for %llu tensors", (unsigned long long)g->n_tensors);
        return -1;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++)
        order[i] = &g->tensors[i];
    qsort(order, g->n_tensors, sizeof *order, by_offset);
    int rc = 0;
    for (uint64_t i = 1; i < g->n_tensors && !rc; i++) {
        const gguf_tensor *a = order[i - 1], *b = order[i];
        if (a->bytes && b->bytes && a->offset + a->bytes > b->offset) {
            fail(c, g->data_offset, "tensors '%.40s' (data at %llu, %llu bytes of %s) and '%.40s' (at %llu) "
                 "overlap", a->name, (unsigned long long)a->offset, (unsigned long long)a->bytes,
                 rayo_dtype_name(a->dtype), b->name, (unsigned long long)b->offset);
            rc = -1;
        }
    }
    free(order);
    return rc;
}

/* The data section starts at the next multiple of the alignment; every
 * tensor's offset is aligned, its bytes lie inside the file, and no two
 * tensors overlap. */
static int place_tensors(cursor *c, gguf_file *g)
{
    uint64_t pad = (g->alignment - c->pos % g->alignment) % g->alignment;
    g->data_offset = c->pos + pad;
    if (g->n_tensors && g->data_offset > c->size) {
        fail(c, c->pos, "tensor data: the file ends before the data section at offset %llu",
             (unsigned long long)g->data_offset);
        return -1;
    }
    uint64_t data_size = g->data_offset <= c->size ? c->size - g->data_offset : 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment || t->offset > data_size || t->bytes > data_size - t->offset) {
            fail(c, g->data_offset, "tensor '%.40s': data at %llu (+%llu bytes) is %s of the "
                 "data section (%llu bytes)", t->name, (unsigned long long)t->offset,
                 (unsigned long long)t->bytes, t->offset % g->alignment ? "not aligned, or out"
                 : "out", (unsigned long long)data_size);
            return -1;
        }
        t->data = c->base + g->data_offset + t->offset;
    }
    return check_overlaps(c, g);
}

static int rd_header(cursor *c, gguf_file *g)
{
    if (need(c, 4, "magic"))
        return -1;
    if (memcmp(c->base, "GGUF", 4)) {
        fail(c, 0, "magic: not a GGUF file (the first bytes are not \"GGUF\")");
        return -1;
    }
    c->pos = 4;
    if (rd_u32(c, &g->version, "version"))
        return -1;
    if (g->version != 3) {
        fail(c, 4, "version: %u is not supported (only version 3 is)", g->version);
        return -1;
    }
    if (rd(c, 8, &g->n_tensors, "tensor count") || rd(c, 8, &g->n_kv, "key/value count"))
        return -1;
    /* Each key/value takes at least 13 bytes and each tensor info 29: a count
     * larger than the rest of the file allows is a lie, refused before any
     * allocation it would size. */
    if (g->n_kv > left(c) / 13 || g->n_tensors > left(c) / 29) {
        fail(c, g->n_kv > left(c) / 13 ? 16 : 8, "%s %llu exceeds what the file can hold",
             g->n_kv > left(c) / 13 ? "key/value count" : "tensor count",
             (unsigned long long)(g->n_kv > left(c) / 13 ? g->n_kv : g->n_tensors));
        return -1;
    }
    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) {
        fail(c, 8, "out of memory for %llu tensors and %llu keys",
             (unsigned long long)g->n_tensors, (unsigned long long)g->n_kv);
        return -1;
    }
    return 0;
}

int gguf_parse(const uint8_t *data, size_t size, gguf_file **out, char *err, size_t errlen)
{
    cursor c = {data, size, 0, err, errlen};
    *out = NULL;
    gguf_file *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->base = data;
    g->size = size;
    int rc = rd_header(&c, g);
    for (uint64_t i = 0; rc == 0 && i < g->n_kv; i++)
        rc = rd_kv(&c, &g->kv[i], i);
    for (uint64_t i = 0; rc == 0 && i < g->n_tensors; i++)
        rc = rd_tensor_info(&c, &g->tensors[i], i);
    if (rc == 0)
        rc = find_duplicates(&c, g);
    if (rc == 0)
        rc = read_alignment(&c, g);
    if (rc == 0)
        rc = place_tensors(&c, g);
    if (rc) {
        gguf_close(g);
        return -1;
    }
    *out = g;
    return 0;
}

int gguf_open(const char *path, gguf_file **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    int bad = fd < 0 || fstat(fd, &st);
    if (bad || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: %s", path, bad ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s: %s", path, size ? strerror(errno) : "empty file");
        return -1;
    }
    /* The whole file is read: let the kernel read ahead while the header is
     * parsed and the layers are checked (a hint; failure changes nothing). */
    (void)posix_madvise(map, size, POSIX_MADV_WILLNEED);
    char msg[300];
    if (gguf_parse(map, size, out, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: %s", path, msg);
        munmap(map, size);
        return -1;
    }
    (*out)->mapped = 1;
    return 0;
}

void gguf_close(gguf_file *g)
{
    if (!g)
        return;
    for (uint64_t i = 0; g->kv && i < g->n_kv; i++)
        free(g->kv[i].key);
    for (uint64_t i = 0; g->tensors && i < g->n_tensors; i++)
        free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    if (g->mapped)
        munmap((void *)g->base, g->size);
    free(g);
}

const gguf_kv *gguf_find(const gguf_file *g, const char *key)
{
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key && !strcmp(g->kv[i].key, key))
            return &g->kv[i];
    return NULL;
}

const gguf_tensor *gguf_tensor_find(const gguf_file *g, const char *name)
{
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->tensors[i].name, name))
            return &g->tensors[i];
    return NULL;
}

static const gguf_kv *find_typed(const gguf_file *g, const char *key, const char *want,
                                 char *err, size_t errlen)
{
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv)
        snprintf(err, errlen, "metadata key '%s' (%s) is missing", key, want);
    return kv;
}

int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *v, char *err, size_t errlen)
{
    const gguf_kv *kv = find_typed(g, key, "an integer", err, errlen);
    if (!kv)
        return -1;
    int is_signed = kv->type == GGUF_I8 || kv->type == GGUF_I16 || kv->type == GGUF_I32 ||
                    kv->type == GGUF_I64;
    int is_unsigned = kv->type == GGUF_U8 || kv->type == GGUF_U16 || kv->type == GGUF_U32 ||
                      kv->type == GGUF_U64;
    if ((is_signed && (kv->v.i < 0 || kv->v.i > (int64_t)UINT32_MAX)) ||
        (is_unsigned && kv->v.u > UINT32_MAX) || (!is_signed && !is_unsigned)) {
        snprintf(err, errlen, "metadata key '%s': %s value is not a u32", key,
                 gguf_type_name(kv->type));
        return -1;
    }
    *v = is_signed ? (uint32_t)kv->v.i : (uint32_t)kv->v.u;
    return 0;
}

int gguf_get_f32(const gguf_file *g, const char *key, float *v, char *err, size_t errlen)
{
    const gguf_kv *kv = find_typed(g, key, "a float", err, errlen);
    if (!kv)
        return -1;
    if (kv->type != GGUF_F32 && kv->type != GGUF_F64) {
        snprintf(err, errlen, "metadata key '%s': %s value is not a float", key,
                 gguf_type_name(kv->type));
        return -1;
    }
    *v = (float)kv->v.f;
    return 0;
}

int gguf_get_str(const gguf_file *g, const char *key, gguf_str *v, char *err, size_t errlen)
{
    const gguf_kv *kv = find_typed(g, key, "a string", err, errlen);
    if (!kv)
        return -1;
    if (kv->type != GGUF_STRING) {
        snprintf(err, errlen, "metadata key '%s': %s value is not a string", key,
                 gguf_type_name(kv->type));
        return -1;
    }
    *v = kv->v.str;
    return 0;
}

gguf_str gguf_arr_str(const gguf_kv *kv, uint64_t i)
{
    const uint8_t *p = kv->v.arr.data;
    for (uint64_t k = 0; k < i; k++)
        p += 8 + le(p, 8);
    gguf_str s = {(const char *)p + 8, le(p, 8)};
    return s;
}

gguf_str *gguf_arr_strs(const gguf_kv *kv)
{
    uint64_t n = kv->v.arr.n;
    gguf_str *s = malloc((n ? n : 1) * sizeof *s);
    const uint8_t *p = kv->v.arr.data;
    for (uint64_t k = 0; s && k < n; k++) {
        s[k].len = le(p, 8);
        s[k].p = (const char *)p + 8;
        p += 8 + s[k].len;
    }
    return s;
}

int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i)
{
    unsigned n = scalar_size(kv->v.arr.type);
    uint64_t bits = le(kv->v.arr.data + i * n, n);
    switch (kv->v.arr.type) {
    case GGUF_I8: case GGUF_I16: case GGUF_I32: case GGUF_I64:
        return sign_extend(bits, n);
    case GGUF_F32: case GGUF_F64: {
        double d = float_of(bits, n); /* NaN and huge values: 0 */
        return d > -9.2e18 && d < 9.2e18 ? (int64_t)d : 0;
    }
    default:
        return (int64_t)bits;
    }
}

double gguf_arr_num(const gguf_kv *kv, uint64_t i)
{
    unsigned n = scalar_size(kv->v.arr.type);
    if (kv->v.arr.type == GGUF_F32 || kv->v.arr.type == GGUF_F64)
        return float_of(le(kv->v.arr.data + i * n, n), n);
    return (double)gguf_arr_int(kv, i);
}

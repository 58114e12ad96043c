/* SPDX-License-Identifier: MIT */
/* plans-infer.c - conformance plans of the inference ops and dtypes
 * (conform-infer.h): convert, matmul and gemv in every dtype combination of
 * rayo-ops.h, get_rows, rope, attention, swiglu, geglu, geglu_tanh.
 *
 * Each case is judged against ref-infer.c (float64, on the operands' stored
 * values: a quantized operand is random data quantized first, and the
 * reference uses its dequantized values, so the format's rounding is not
 * counted against the kernel).  Around that, the same guarantees as the f32
 * engine: fresh random inputs, unaligned operands, guard zones, inputs
 * unchanged, every output written (poisoned before), nothing written in the
 * gaps of a strided output, refused calls leave the output alone.  Gaps of
 * strided inputs hold NaN (blocks with a NaN scale), so a kernel that reads
 * them shows.  Every case runs at strict precision, every second one again
 * at relaxed precision against the relaxed contract.
 */
#define _POSIX_C_SOURCE 200809L
#include "conform-infer.h"
#include "ref-infer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_BYTES 64
#define POISON_BYTE 0xa5 /* f32 0xa5a5a5a5: a negative number no result equals by chance */
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- shapes: up to three dimensions with strides, in elements ----------- */
typedef struct shape3 {
    size_t dim[3];    /* outer to inner; unused outer dimensions are 1 */
    size_t stride[3]; /* stride[2] is 1 */
} shape3;

static shape3 matrix_shape(size_t rows, size_t cols, size_t ld)
{
    shape3 s = {{1, rows, cols}, {0, ld ? ld : cols, 1}};
    return s;
}

static shape3 heads_shape(size_t tokens, size_t heads, size_t dim, size_t ts, size_t hs)
{
    size_t h = hs ? hs : dim;
    shape3 s = {{tokens, heads, dim}, {ts ? ts : heads * dim, h, 1}};
    return s;
}

static size_t shape_count(const shape3 *s)
{
    return s->dim[0] * s->dim[1] * s->dim[2];
}

/* Elements from the first to one past the last. */
static size_t shape_span(const shape3 *s)
{
    if (!shape_count(s))
        return 0;
    return (s->dim[0] - 1) * s->stride[0] + (s->dim[1] - 1) * s->stride[1] + s->dim[2];
}

/* Offset in elements of the e-th element in row-major order. */
static size_t shape_offset(const shape3 *s, size_t e)
{
    size_t i2 = e % s->dim[2], i1 = (e / s->dim[2]) % s->dim[1], i0 = e / (s->dim[2] * s->dim[1]);
    return i0 * s->stride[0] + i1 * s->stride[1] + i2;
}

/* ---- guarded buffers -------------------------------------------------------- */
typedef struct gbuf {
    unsigned char *mem, *saved, *data;
    size_t bytes, lead, size; /* allocation; bytes before data; data bytes */
} gbuf;

static int gbuf_alloc(gbuf *b, size_t size, size_t misalign)
{
    b->lead = GUARD_BYTES + misalign;
    b->size = size;
    b->bytes = (b->lead + size + GUARD_BYTES + 63) & ~(size_t)63;
    b->mem = aligned_alloc(64, b->bytes);
    b->saved = malloc(b->bytes);
    if (!b->mem || !b->saved)
        return -1;
    memset(b->mem, POISON_BYTE, b->bytes);
    b->data = b->mem + b->lead;
    return 0;
}

static void gbuf_free(gbuf *b)
{
    free(b->mem);
    free(b->saved);
    memset(b, 0, sizeof *b);
}

static void gbuf_save(gbuf *b)
{
    if (b->mem)
        memcpy(b->saved, b->mem, b->bytes);
}

/* ---- one case ----------------------------------------------------------------- */
typedef struct icase {
    rayo_call call;
    rayo_rope_params rope;
    rayo_attention_params attn;
    gbuf buf[4];                 /* a, b, c, y */
    int alias;                   /* y is a (in place) */
    size_t b_in_a;               /* b is this many bytes into a (buf[1] unused), or 0 */
    int y_is_input;              /* beta != 0 */
    rayo_status expected;
    shape3 out;                  /* where the outputs are in y */
    rayo_dtype out_dtype;
    size_t out_count;            /* dense output elements (convert to a block dtype: bytes) */
    double *ref, *terms;         /* dense references (f32 outputs) */
    unsigned char *want;         /* expected bytes (convert to a non-f32 dtype) */
    char desc[200];
    char problem[400];
} icase;

typedef struct ictx {
    const conform_options *opt;
    const rayo_op_info *op;
    conform_rng rng;
    conform_result *res;
    size_t supported_nonempty;
    int with_ref;                /* builders compute the reference (else only the call) */
    size_t serial;               /* cases made so far: alternates alignment, precision */
    const char *group;           /* the group of the cases being run (conform_options.skip), or NULL */
} ictx;

static void problem(icase *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void problem(icase *t, const char *fmt, ...)
{
    if (t->problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->problem, sizeof t->problem, fmt, ap);
    va_end(ap);
}

static size_t below(conform_rng *rng, size_t n)
{
    return n ? (size_t)(conform_rng_next(rng) % n) : 0;
}

static float uniform(conform_rng *rng, double lo, double hi)
{
    return (float)(lo + (hi - lo) * conform_rng_uniform(rng));
}

static size_t elem_bytes(rayo_dtype dt, size_t count)
{
    size_t bytes = 0;
    rayo_dtype_row_bytes(dt, count, &bytes);
    return bytes;
}

/* Misalignment of operand data: a whole element off 64 bytes (4 bytes for
 * 4-byte types; 2 for halves and blocks, whose fields are 16-bit). */
static size_t misalign_for(rayo_dtype dt, size_t serial)
{
    if (!(serial & 1))
        return 0;
    return (dt == RAYO_DTYPE_F32 || dt == RAYO_DTYPE_I32) ? 4 : 2;
}

/* Allocates operand w for a shape of dtype dt: gaps and guards poisoned,
 * gaps of float-valued inputs NaN (0xff bytes: a NaN f32/f16/bf16, a block
 * whose scale is NaN). */
static int operand_alloc(ictx *x, icase *t, int w, rayo_dtype dt, const shape3 *s, int input)
{
    size_t span = shape_span(s), bytes = span ? elem_bytes(dt, span) : 0;
    if (gbuf_alloc(&t->buf[w], bytes, misalign_for(dt, x->serial)))
        return -1;
    if (input && dt != RAYO_DTYPE_I32)
        memset(t->buf[w].data, 0xff, bytes);
    return 0;
}

/* Random values into the rows of a shape stored in dtype dt.  Block
 * formats: Q8_0 and Q4_0 quantize random floats (rayo-dtype.h); Q4_K and
 * Q6_K, which have no quantizer here, get random codes and scales under
 * small random f16 super-scales. */
static void put_le16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8);
}

static void random_blocks(conform_rng *rng, rayo_dtype dt, unsigned char *p, size_t blocks)
{
    size_t size = rayo_dtype_block_bytes(dt);
    for (size_t b = 0; b < blocks; b++, p += size) {
        for (size_t i = 0; i < size; i++)
            p[i] = (unsigned char)conform_rng_next(rng);
        if (dt == RAYO_DTYPE_Q4_K) {
            put_le16(p, rayo_f32_to_f16(uniform(rng, 0, 0.02)));
            put_le16(p + RAYO_Q4_K_DMIN, rayo_f32_to_f16(uniform(rng, 0, 0.02)));
        } else {
            put_le16(p + RAYO_Q6_K_D, rayo_f32_to_f16(uniform(rng, -0.002, 0.002)));
        }
    }
}

/* len values (a multiple of the block size) stored in dtype dt at p; 0 for
 * the dtypes without a quantizer here (Q4_K, Q6_K). */
static int store_values(rayo_dtype dt, unsigned char *p, const float *v, size_t len)
{
    switch (dt) {
    case RAYO_DTYPE_F32: memcpy(p, v, len * sizeof(float)); return 1;
    case RAYO_DTYPE_F16:
        for (size_t i = 0; i < len; i++)
            put_le16(p + 2 * i, rayo_f32_to_f16(v[i]));
        return 1;
    case RAYO_DTYPE_BF16:
        for (size_t i = 0; i < len; i++)
            put_le16(p + 2 * i, rayo_f32_to_bf16(v[i]));
        return 1;
    case RAYO_DTYPE_Q8_0: rayo_quantize_q8_0(v, p, len); return 1;
    case RAYO_DTYPE_Q4_0: rayo_quantize_q4_0(v, p, len); return 1;
    default: return 0;
    }
}

void conform_fill_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n, float lo, float hi)
{
    float tmp[256];
    for (size_t at = 0; at < n; at += 256) {
        size_t len = n - at < 256 ? n - at : 256; /* a multiple of every block size */
        for (size_t i = 0; i < len; i++)
            tmp[i] = uniform(rng, lo, hi);
        unsigned char *p = dst + elem_bytes(dt, at);
        if (!store_values(dt, p, tmp, len))
            random_blocks(rng, dt, p, len / RAYO_QK_K);
    }
}

/* ---- products that cancel past FLT_MAX (the range contract) ------------------- */
/* Rows of activations are +CANCEL_X over [0, h) and -CANCEL_X over [h, 2h)
 * (h = n / 2 - 1), small random values after; every row of weights holds
 * one value.  Each product is about 1e38, so any partial sum of a half
 * passes FLT_MAX, while the float64 result is that of the small values. */
#define CANCEL_X 1.2e38f

static void fill_cancel_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n)
{
    float tmp[256];
    size_t h = n >= 2 ? n / 2 - 1 : 0;
    for (size_t at = 0; at < n; at += 256) {
        size_t len = n - at < 256 ? n - at : 256;
        for (size_t i = 0; i < len; i++)
            tmp[i] = at + i < h ? CANCEL_X : at + i < 2 * h ? -CANCEL_X : uniform(rng, -1, 1);
        store_values(dt, dst + elem_bytes(dt, at), tmp, len);
    }
}

/* ---- activations where rounding them to 8 bits is hardest ------------------------- */
/* Relaxed products of block weights may round x to 8 bits per block
 * (rayo-ops.h): x whose magnitudes span 1e-8..1e8, or uniform in +-1 with
 * 1% of the values 100 times larger, are where such a kernel is off most;
 * the group "x-range" judges them at both precisions. */
typedef enum act_class { ACT_PLAIN, ACT_DECADES, ACT_OUTLIERS } act_class;

static void fill_act_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n, act_class cls)
{
    float tmp[256];
    for (size_t at = 0; at < n; at += 256) {
        size_t len = n - at < 256 ? n - at : 256;
        for (size_t i = 0; i < len; i++) {
            float v = uniform(rng, -1, 1);
            if (cls == ACT_DECADES)
                v = (v < 0 ? -1.0f : 1.0f) * (float)pow(10.0, uniform(rng, -8, 8));
            else if (uniform(rng, 0, 1) < 0.01f)
                v *= 100.0f;
            tmp[i] = v;
        }
        store_values(dt, dst + elem_bytes(dt, at), tmp, len);
    }
}

static void fill_decades_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n)
{
    fill_act_row(rng, dt, dst, n, ACT_DECADES);
}

static void fill_outliers_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n)
{
    fill_act_row(rng, dt, dst, n, ACT_OUTLIERS);
}

/* One weight value for the whole row.  Q4_K and Q6_K: every byte of a
 * block 0x55 (Q4_K: scale and minimum 21, codes 5; Q6_K: scales 85, codes
 * 21 - 32), the same f16 scales in every block. */
static void fill_constant_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n)
{
    float v = uniform(rng, 0.5, 1), tmp[256];
    for (size_t i = 0; i < 256; i++)
        tmp[i] = v;
    for (size_t at = 0; at < n; at += 256) {
        size_t len = n - at < 256 ? n - at : 256;
        unsigned char *p = dst + elem_bytes(dt, at);
        if (store_values(dt, p, tmp, len))
            continue;
        memset(p, 0x55, rayo_dtype_block_bytes(dt));
        put_le16(p + (dt == RAYO_DTYPE_Q4_K ? 0 : RAYO_Q6_K_D), rayo_f32_to_f16(v * 0.01f));
        if (dt == RAYO_DTYPE_Q4_K)
            put_le16(p + RAYO_Q4_K_DMIN, rayo_f32_to_f16(v * 0.005f));
    }
}

/* A row uniform in +-2^e, e uniform in [-range, range]. */
static void fill_power_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n, int range)
{
    float tmp[256];
    int e = (int)(conform_rng_next(rng) % (uint64_t)(2 * range + 1)) - range;
    for (size_t at = 0; at < n; at += 256) {
        size_t len = n - at < 256 ? n - at : 256;
        for (size_t i = 0; i < len; i++)
            tmp[i] = ldexpf(uniform(rng, -1, 1), e);
        store_values(dt, dst + elem_bytes(dt, at), tmp, len);
    }
}

/* Activations of one magnitude per row, 2^-100 to 2^100 (1e-30 to 1e30):
 * past f16's range both ways, as a kernel that rounds activations to a
 * narrow type must handle. */
static void fill_wide_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n)
{
    fill_power_row(rng, dt, dst, n, 100);
}

typedef void row_fill_fn(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n);

/* Refills every row of a matrix operand with fill. */
static void refill_rows(ictx *x, icase *t, int w, rayo_dtype dt, size_t rows, size_t cols, size_t ld,
                        row_fill_fn *fill)
{
    size_t stride = elem_bytes(dt, ld ? ld : cols);
    for (size_t r = 0; r < rows; r++)
        fill(&x->rng, dt, t->buf[w].data + r * stride, cols);
}

/* Fills every innermost row of the shape (rows start at block boundaries). */
static void fill_shape(conform_rng *rng, rayo_dtype dt, unsigned char *data, const shape3 *s,
                       float lo, float hi)
{
    for (size_t i0 = 0; i0 < s->dim[0]; i0++)
        for (size_t i1 = 0; i1 < s->dim[1]; i1++) {
            size_t off = i0 * s->stride[0] + i1 * s->stride[1];
            conform_fill_row(rng, dt, data + elem_bytes(dt, off), s->dim[2], lo, hi);
        }
}

static int input_operand(ictx *x, icase *t, int w, rayo_dtype dt, const shape3 *s, float lo, float hi)
{
    if (operand_alloc(x, t, w, dt, s, 1))
        return -1;
    fill_shape(&x->rng, dt, t->buf[w].data, s, lo, hi);
    return 0;
}

/* The output: poisoned (or random when it is also an input). */
static int output_operand(ictx *x, icase *t, rayo_dtype dt, const shape3 *s, int also_input)
{
    t->out = *s;
    t->out_dtype = dt;
    t->out_count = shape_count(s);
    t->y_is_input = also_input;
    if (operand_alloc(x, t, 3, dt, s, 0))
        return -1;
    if (also_input)
        fill_shape(&x->rng, dt, t->buf[3].data, s, -1, 1);
    size_t n = t->out_count ? t->out_count : 1;
    t->ref = calloc(n, sizeof *t->ref);
    t->terms = calloc(n, sizeof *t->terms);
    return t->ref && t->terms ? 0 : -1;
}

/* The output is operand a itself (an in-place call), laid out as s. */
static int in_place_output(icase *t, const shape3 *s)
{
    t->alias = 1;
    t->out = *s;
    t->out_dtype = RAYO_DTYPE_F32;
    t->out_count = shape_count(s);
    t->ref = calloc(t->out_count + 1, sizeof *t->ref);
    t->terms = calloc(t->out_count + 1, sizeof *t->terms);
    return t->ref && t->terms ? 0 : -1;
}

static void set_pointers(icase *t)
{
    t->call.a = t->buf[0].data;
    t->call.b = t->b_in_a ? t->buf[0].data + t->b_in_a : t->buf[1].data;
    t->call.c = t->buf[2].data;
    t->call.y = t->alias ? t->buf[0].data : t->buf[3].data;
}

static ref_matrix ref_of(const icase *t, int w, rayo_dtype dt, size_t rows, size_t cols, size_t ld)
{
    ref_matrix r = {dt, t->buf[w].data, rows, cols, ld ? ld : cols};
    return r;
}

/* Strides of a case: 0 (dense) or the row length plus some whole blocks. */
/* strided: 0 dense, 1 rows 1 to 3 blocks longer, STRIDE_8 rows of a
 * multiple of 8 elements, 8 to 24 longer than the row rounded up (what
 * tensor-core kernels load in 16-byte pieces). */
#define STRIDE_8 2
static size_t stride_for(ictx *x, int strided, size_t cols, rayo_dtype dt)
{
    size_t blk = rayo_dtype_block_elems(dt);
    if (strided == STRIDE_8)
        return (cols + 7) / 8 * 8 + 8 * (1 + below(&x->rng, 3));
    return strided ? cols + blk * (1 + below(&x->rng, 3)) : 0;
}

/* ---- builders: one case of each op ------------------------------------------ */
/* Each sets the call, allocates and fills its operands, and computes the
 * reference (before the call: y may be an input). */

typedef struct convert_spec {
    rayo_dtype from, to;
    size_t n;
} convert_spec;

/* f32 inputs to f16/bf16 get the values where rounding is interesting. */
static const float convert_specials[] = {
    NAN, INFINITY, -INFINITY, -0.0f, 65504.0f, 65519.0f, 65520.0f, 1e5f, 6.1e-5f, 5.96e-8f,
    2.9e-8f, 1e-7f, 3.0e38f, 1.0f + 0x1p-11f, 1.0f + 0x1p-8f, 1e-40f,
};

static int build_convert(ictx *x, icase *t, const void *spec)
{
    const convert_spec *s = spec;
    shape3 sh = matrix_shape(1, s->n, 0);
    if (input_operand(x, t, 0, s->from, &sh, -4, 4) || output_operand(x, t, s->to, &sh, 0))
        return -1;
    if (s->from == RAYO_DTYPE_F32 && (s->to == RAYO_DTYPE_F16 || s->to == RAYO_DTYPE_BF16))
        for (size_t i = 0; i < s->n; i += 3) {
            float v = convert_specials[below(&x->rng, COUNT_OF(convert_specials))];
            memcpy(t->buf[0].data + 4 * i, &v, 4);
        }
    t->call.op = RAYO_OP_CONVERT;
    t->call.dtypes = RAYO_DTYPES(s->from, 0, 0, s->to);
    t->call.n = s->n;
    snprintf(t->desc, sizeof t->desc, "convert %s -> %s, n = %zu", rayo_dtype_name(s->from),
             rayo_dtype_name(s->to), s->n);
    if (!x->with_ref)
        return 0;
    if (s->to == RAYO_DTYPE_F32)
        return ref_dequantize(s->from, t->buf[0].data, s->n, t->ref);
    /* Exact contract: the bytes of rayo-dtype.h's conversion (tests/test-dtype
     * checks those against the formats' published rules). */
    size_t bytes = t->buf[3].size;
    const float *in = (const float *)(void *)t->buf[0].data;
    if (!(t->want = malloc(bytes + 1)))
        return -1;
    if (s->to == RAYO_DTYPE_Q8_0)
        rayo_quantize_q8_0(in, t->want, s->n);
    else if (s->to == RAYO_DTYPE_Q4_0)
        rayo_quantize_q4_0(in, t->want, s->n);
    else
        for (size_t i = 0; i < s->n; i++)
            put_le16(t->want + 2 * i, s->to == RAYO_DTYPE_F16 ? rayo_f32_to_f16(in[i]) : rayo_f32_to_bf16(in[i]));
    return 0;
}

typedef struct matmul_spec {
    rayo_dtype adt, bdt;
    size_t m, n, k;
    uint32_t flags;
    int strided;
    float alpha, beta;
    int cancel;        /* products near 1e38 that cancel (only op(A) = A, B^T) */
    int wide;          /* f32 A rows of magnitudes 1e-30 to 1e30 (op(A) = A) */
    act_class act;     /* f32 activations (x, or A as stored) of this class */
    int scaled_b;      /* rows of B as stored each times its own 2^-12 .. 2^12 */
} matmul_spec;

static const struct {
    row_fill_fn *fill;
    const char *desc;
} act_classes[] = {
    [ACT_PLAIN] = {NULL, ""},
    [ACT_DECADES] = {fill_decades_row, ", activations spanning 1e-8..1e8"},
    [ACT_OUTLIERS] = {fill_outliers_row, ", activations with 1% outliers x100"},
};

/* Rows of magnitudes 2^-12 to 2^12 (one power of two a row): what every
 * weight dtype holds (f16 and the block formats' f16 scales). */
static void fill_scaled_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n)
{
    fill_power_row(rng, dt, dst, n, 12);
}

static int build_matmul(ictx *x, icase *t, const void *spec)
{
    const matmul_spec *s = spec;
    int ta = (s->flags & RAYO_TRANS_A) != 0, tb = (s->flags & RAYO_TRANS_B) != 0;
    size_t ar = ta ? s->k : s->m, ac = ta ? s->m : s->k, br = tb ? s->n : s->k, bc = tb ? s->k : s->n;
    size_t lda = stride_for(x, s->strided, ac, s->adt), ldb = stride_for(x, s->strided, bc, s->bdt);
    size_t ldy = stride_for(x, s->strided, s->n, RAYO_DTYPE_F32);
    shape3 sa = matrix_shape(ar, ac, lda), sb = matrix_shape(br, bc, ldb), sy = matrix_shape(s->m, s->n, ldy);
    if (input_operand(x, t, 0, s->adt, &sa, -1, 1) || input_operand(x, t, 1, s->bdt, &sb, -1, 1) ||
        output_operand(x, t, RAYO_DTYPE_F32, &sy, s->beta != 0))
        return -1;
    if (s->cancel) {
        refill_rows(x, t, 0, s->adt, ar, ac, lda, fill_cancel_row);
        refill_rows(x, t, 1, s->bdt, br, bc, ldb, fill_constant_row);
    }
    if (s->wide)
        refill_rows(x, t, 0, s->adt, ar, ac, lda, fill_wide_row);
    if (s->scaled_b)
        refill_rows(x, t, 1, s->bdt, br, bc, ldb, fill_scaled_row);
    if (s->act)
        refill_rows(x, t, 0, s->adt, ar, ac, lda, act_classes[s->act].fill);
    rayo_call *c = &t->call;
    c->op = RAYO_OP_MATMUL;
    c->dtypes = RAYO_DTYPES(s->adt, s->bdt, 0, RAYO_DTYPE_F32);
    c->flags = s->flags;
    c->m = s->m, c->n = s->n, c->k = s->k;
    c->alpha = s->alpha, c->beta = s->beta;
    c->lda = lda, c->ldb = ldb, c->ldy = ldy;
    snprintf(t->desc, sizeof t->desc, "matmul %s x %s%s%s, m = %zu, n = %zu, k = %zu, lda %zu, ldb %zu, "
             "ldy %zu, alpha %g, beta %g%s%s%s", rayo_dtype_name(s->adt), rayo_dtype_name(s->bdt),
             ta ? " TRANS_A" : "", tb ? " TRANS_B" : "", s->m, s->n, s->k, lda, ldb, ldy,
             (double)s->alpha, (double)s->beta,
             s->cancel ? ", products ~1e38 that cancel" : s->wide ? ", rows of A 1e-30 to 1e30" : "",
             s->scaled_b ? ", rows of B 2^-12 to 2^12" : "", act_classes[s->act].desc);
    if (!x->with_ref)
        return 0;
    ref_matrix A = ref_of(t, 0, s->adt, ar, ac, lda), B = ref_of(t, 1, s->bdt, br, bc, ldb);
    return ref_matmul(s->flags, s->m, s->n, s->k, s->alpha, &A, &B, s->beta,
                      (const float *)(void *)t->buf[3].data, sy.stride[1], t->ref, t->terms);
}

static int build_gemv(ictx *x, icase *t, const void *spec)
{
    const matmul_spec *s = spec; /* A is m x n (the weights), x n, y m */
    size_t lda = stride_for(x, s->strided, s->n, s->adt);
    shape3 sa = matrix_shape(s->m, s->n, lda), sx = matrix_shape(1, s->n, 0), sy = matrix_shape(1, s->m, 0);
    if (input_operand(x, t, 0, s->adt, &sa, -1, 1) || input_operand(x, t, 1, RAYO_DTYPE_F32, &sx, -1, 1) ||
        output_operand(x, t, RAYO_DTYPE_F32, &sy, s->beta != 0))
        return -1;
    if (s->cancel) {
        refill_rows(x, t, 0, s->adt, s->m, s->n, lda, fill_constant_row);
        refill_rows(x, t, 1, RAYO_DTYPE_F32, 1, s->n, 0, fill_cancel_row);
    }
    if (s->act)
        refill_rows(x, t, 1, RAYO_DTYPE_F32, 1, s->n, 0, act_classes[s->act].fill);
    rayo_call *c = &t->call;
    c->op = RAYO_OP_GEMV;
    c->dtypes = RAYO_DTYPES(s->adt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32);
    c->m = s->m, c->n = s->n;
    c->alpha = s->alpha, c->beta = s->beta;
    c->lda = lda;
    snprintf(t->desc, sizeof t->desc, "gemv %s, m = %zu, n = %zu, lda %zu, alpha %g, beta %g%s%s",
             rayo_dtype_name(s->adt), s->m, s->n, lda, (double)s->alpha, (double)s->beta,
             s->cancel ? ", products ~1e38 that cancel" : "", act_classes[s->act].desc);
    if (!x->with_ref)
        return 0;
    ref_matrix A = ref_of(t, 0, s->adt, s->m, s->n, lda);
    return ref_gemv(0, &A, (const float *)(void *)t->buf[1].data, s->alpha, s->beta,
                    (const float *)(void *)t->buf[3].data, t->ref, t->terms);
}

typedef struct get_rows_spec {
    rayo_dtype dt;
    size_t table_rows, cols, n_idx;
    int strided, bad_index;
} get_rows_spec;

static int build_get_rows(ictx *x, icase *t, const void *spec)
{
    const get_rows_spec *s = spec;
    size_t lda = stride_for(x, s->strided, s->cols, s->dt), ldy = stride_for(x, s->strided, s->cols, RAYO_DTYPE_F32);
    shape3 st = matrix_shape(s->table_rows, s->cols, lda), si = matrix_shape(1, s->n_idx, 0);
    shape3 sy = matrix_shape(s->n_idx, s->cols, ldy);
    if (input_operand(x, t, 0, s->dt, &st, -3, 3) || operand_alloc(x, t, 1, RAYO_DTYPE_I32, &si, 1) ||
        output_operand(x, t, RAYO_DTYPE_F32, &sy, 0))
        return -1;
    int32_t *idx = (int32_t *)(void *)t->buf[1].data;
    for (size_t r = 0; r < s->n_idx; r++) /* the first and the last row, then any */
        idx[r] = (int32_t)(r == 0 ? 0 : r == 1 ? s->table_rows - 1 : below(&x->rng, s->table_rows));
    if (s->bad_index && s->n_idx) {
        idx[below(&x->rng, s->n_idx)] = (x->serial & 2) ? -1 : (int32_t)s->table_rows;
        t->expected = RAYO_E_INVALID;
    }
    rayo_call *c = &t->call;
    c->op = RAYO_OP_GET_ROWS;
    c->dtypes = RAYO_DTYPES(s->dt, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32);
    c->m = s->n_idx, c->n = s->cols, c->k = s->table_rows;
    c->lda = lda, c->ldy = ldy;
    snprintf(t->desc, sizeof t->desc, "get_rows %s, %zu of %zu rows of %zu, lda %zu, ldy %zu%s",
             rayo_dtype_name(s->dt), s->n_idx, s->table_rows, s->cols, lda, ldy,
             s->bad_index ? ", an index out of range" : "");
    if (s->bad_index || !x->with_ref)
        return 0;
    ref_matrix table = ref_of(t, 0, s->dt, s->table_rows, s->cols, lda);
    return ref_get_rows(&table, idx, s->n_idx, t->ref);
}

typedef struct rope_spec {
    rayo_rope_mode mode;
    size_t tokens, heads, head_dim, rot_dims; /* rot_dims 0: head_dim */
    float base, scale;
    int strided, in_place;
} rope_spec;

static int build_rope(ictx *x, icase *t, const void *spec)
{
    const rope_spec *s = spec;
    size_t hs = s->strided ? s->head_dim + 1 + below(&x->rng, 3) : 0;
    size_t ts = s->strided ? s->heads * (hs ? hs : s->head_dim) + below(&x->rng, 5) : 0;
    size_t hsy = s->in_place ? hs : (s->strided ? s->head_dim + 2 : 0);
    size_t tsy = s->in_place ? ts : (s->strided ? s->heads * (hsy ? hsy : s->head_dim) + 3 : 0);
    shape3 sx = heads_shape(s->tokens, s->heads, s->head_dim, ts, hs), sp = matrix_shape(1, s->tokens, 0);
    shape3 sy = heads_shape(s->tokens, s->heads, s->head_dim, tsy, hsy);
    if (input_operand(x, t, 0, RAYO_DTYPE_F32, &sx, -4, 4) || operand_alloc(x, t, 1, RAYO_DTYPE_I32, &sp, 1))
        return -1;
    if (s->in_place ? in_place_output(t, &sx) : output_operand(x, t, RAYO_DTYPE_F32, &sy, 0))
        return -1;
    int32_t *pos = (int32_t *)(void *)t->buf[1].data;
    for (size_t i = 0; i < s->tokens; i++) /* the longest context first, then any position */
        pos[i] = i == 0 ? 8191 : (int32_t)below(&x->rng, 8192);
    rayo_rope_params *p = &t->rope;
    *p = (rayo_rope_params){.struct_size = sizeof *p, .mode = s->mode, .rot_dims = (uint32_t)s->rot_dims,
                            .freq_base = s->base, .freq_scale = s->scale, .n_heads = s->heads,
                            .head_dim = s->head_dim, .head_stride_x = hs, .head_stride_y = hsy};
    rayo_call *c = &t->call;
    c->op = RAYO_OP_ROPE;
    c->dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32);
    c->m = s->tokens, c->n = s->head_dim, c->lda = ts, c->ldy = tsy;
    c->params = p;
    snprintf(t->desc, sizeof t->desc, "rope %s, %zu tokens x %zu heads x %zu (rot %zu), base %g, scale %g, "
             "strides x %zu/%zu y %zu/%zu%s", s->mode == RAYO_ROPE_NEOX ? "neox" : "norm", s->tokens,
             s->heads, s->head_dim, s->rot_dims, (double)s->base, (double)s->scale, ts, hs, tsy, hsy,
             s->in_place ? ", in place" : "");
    if (!x->with_ref)
        return 0;
    size_t rot = s->rot_dims ? s->rot_dims : s->head_dim;
    int rc = ref_rope((ref_rope_mode)s->mode, s->tokens, s->heads, s->head_dim, rot,
                      (const float *)(void *)t->buf[0].data, sx.stride[0], sx.stride[1], pos, s->base,
                      s->scale, t->ref);
    /* The contract's scale is the norm of the rotated pair (rayo-ops.h). */
    for (size_t e = 0; e < t->out_count && rc == 0; e++) {
        size_t d = e % s->head_dim, half = rot / 2, partner = d;
        if (d < rot)
            partner = s->mode == RAYO_ROPE_NEOX ? (d < half ? d + half : d - half) : (d ^ 1);
        t->terms[e] = hypot(t->ref[e], t->ref[e - d + partner]);
    }
    return rc;
}

typedef struct attention_spec {
    rayo_dtype kv;
    size_t n_q, n_kv, heads, kv_heads, head_dim;
    int causal, strided;
    float scale;            /* 0: 1 / sqrt(head_dim) */
    float offset;           /* q in offset / 6 +- 1, k in offset +- 1 (0: +-1 each) */
    int nan;                /* NaN in q, K and V (attention_nans) */
    int wide;               /* f32 cache: K from 1e-26 to 1e20, V near 65504 (attention_wide) */
} attention_spec;

/* A NaN at element (token, head, dim) of an f32 or f16 operand. */
static void put_nan(gbuf *b, rayo_dtype dt, const shape3 *s, size_t token, size_t head, size_t dim)
{
    size_t e = token * s->stride[0] + head * s->stride[1] + dim;
    if (dt == RAYO_DTYPE_F16) {
        uint16_t h = 0x7e00;
        memcpy(b->data + 2 * e, &h, 2);
    } else {
        float f = NAN;
        memcpy(b->data + 4 * e, &f, 4);
    }
}

/* NaN where the reference makes whole heads or single outputs NaN: in q of
 * head 1 (that head), in K of the first key of KV head 0 (its score: every
 * head of that group) and in V of the last key of the last KV head, one
 * dimension (that output of the heads of that group). */
static void attention_nans(ictx *x, icase *t, const attention_spec *s, const shape3 *sq, const shape3 *sk,
                           const shape3 *sv)
{
    size_t d = s->head_dim;
    put_nan(&t->buf[0], RAYO_DTYPE_F32, sq, 0, 1 % s->heads, below(&x->rng, d));
    put_nan(&t->buf[1], s->kv, sk, 0, 0, below(&x->rng, d));
    put_nan(&t->buf[2], s->kv, sv, s->n_kv - 1, s->kv_heads - 1, below(&x->rng, d));
}

/* K of very different sizes and V at the edge of f16's range (an f32
 * cache): KV head h's K times 1e20, 1e-20 or 1 (h % 3) and the queries of
 * its group times the inverse (scores of the usual size), every third key
 * row of a head 1e-6 of the others; V of every fifth key +-60000 to 70000
 * in KV head 0 (some above 65504, the largest f16), +-60000 to 65000 in
 * the others. */
static void attention_wide(ictx *x, icase *t, const attention_spec *s, const shape3 *sq, const shape3 *sk,
                           const shape3 *sv)
{
    static const float kmag[] = {1e20f, 1e-20f, 1};
    size_t d = s->head_dim, group = s->heads / s->kv_heads;
    float *q = (float *)(void *)t->buf[0].data, *k = (float *)(void *)t->buf[1].data,
          *v = (float *)(void *)t->buf[2].data;
    for (size_t i = 0; i < s->n_q; i++)
        for (size_t h = 0; h < s->heads; h++)
            for (size_t e = 0; e < d; e++)
                q[i * sq->stride[0] + h * sq->stride[1] + e] /= kmag[h / group % 3];
    for (size_t j = 0; j < s->n_kv; j++)
        for (size_t h = 0; h < s->kv_heads; h++) {
            float kf = kmag[h % 3] * (j % 3 == 1 ? 1e-6f : 1), span = h ? 5000.0f : 10000.0f;
            float *kr = k + j * sk->stride[0] + h * sk->stride[1], *vr = v + j * sv->stride[0] + h * sv->stride[1];
            for (size_t e = 0; e < d; e++) {
                kr[e] *= kf;
                if (j % 5 == 2)
                    vr[e] = copysignf(60000.0f + span * (float)below(&x->rng, 10001) / 10000.0f, vr[e]);
            }
        }
}

/* Strides of one [tokens][heads][dim] operand: dense, or a view into a
 * bigger cache (room for more heads and padding in each). */
static void view_strides(ictx *x, int strided, size_t heads, size_t dim, size_t *ts, size_t *hs)
{
    *hs = strided ? dim + below(&x->rng, 4) : 0;
    *ts = strided ? (heads + below(&x->rng, 3)) * (*hs ? *hs : dim) + below(&x->rng, 3) : 0;
}

static int build_attention(ictx *x, icase *t, const void *spec)
{
    const attention_spec *s = spec;
    rayo_attention_params *p = &t->attn;
    size_t d = s->head_dim;
    *p = (rayo_attention_params){.struct_size = sizeof *p, .flags = s->causal ? RAYO_ATTN_CAUSAL : 0,
                                 .kv_dtype = s->kv, .n_q = s->n_q, .n_kv = s->n_kv, .n_heads = s->heads,
                                 .n_kv_heads = s->kv_heads, .head_dim = d,
                                 .scale = s->scale ? s->scale : (float)(1.0 / sqrt((double)d))};
    view_strides(x, s->strided, s->heads, d, &p->q_token, &p->q_head);
    view_strides(x, s->strided, s->kv_heads, d, &p->k_token, &p->k_head);
    view_strides(x, s->strided, s->kv_heads, d, &p->v_token, &p->v_head);
    view_strides(x, s->strided, s->heads, d, &p->o_token, &p->o_head);
    shape3 sq = heads_shape(s->n_q, s->heads, d, p->q_token, p->q_head);
    shape3 sk = heads_shape(s->n_kv, s->kv_heads, d, p->k_token, p->k_head);
    shape3 sv = heads_shape(s->n_kv, s->kv_heads, d, p->v_token, p->v_head);
    shape3 so = heads_shape(s->n_q, s->heads, d, p->o_token, p->o_head);
    float qo = s->offset / 6, ko = s->offset;
    if (input_operand(x, t, 0, RAYO_DTYPE_F32, &sq, qo - 1, qo + 1) || input_operand(x, t, 1, s->kv, &sk, ko - 1, ko + 1) ||
        input_operand(x, t, 2, s->kv, &sv, -1, 1) || output_operand(x, t, RAYO_DTYPE_F32, &so, 0))
        return -1;
    if (s->nan)
        attention_nans(x, t, s, &sq, &sk, &sv);
    if (s->wide)
        attention_wide(x, t, s, &sq, &sk, &sv);
    rayo_call *c = &t->call;
    c->op = RAYO_OP_ATTENTION;
    c->dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, s->kv, s->kv, RAYO_DTYPE_F32);
    c->m = s->n_q, c->n = d, c->k = s->n_kv;
    c->params = p;
    snprintf(t->desc, sizeof t->desc, "attention %s cache, %zu queries x %zu positions, %zu heads / %zu kv "
             "heads x %zu%s, strides q %zu/%zu k %zu/%zu v %zu/%zu out %zu/%zu%s", rayo_dtype_name(s->kv),
             s->n_q, s->n_kv, s->heads, s->kv_heads, d, s->causal ? ", causal" : "", p->q_token,
             p->q_head, p->k_token, p->k_head, p->v_token, p->v_head, p->o_token, p->o_head,
             s->offset ? ", q ~8 and k ~50 (scores ~3e3, spread ~5)" : s->nan ? ", NaN in q, K and V"
             : s->wide ? ", K from 1e-26 to 1e20, V near 65504" : "");
    if (!x->with_ref)
        return 0;
    ref_attention_shape shape = {s->n_q, s->n_kv, s->heads, s->kv_heads, d, s->causal, p->scale};
    ref_heads q = {RAYO_DTYPE_F32, t->buf[0].data, sq.stride[0], sq.stride[1]};
    ref_heads k = {s->kv, t->buf[1].data, sk.stride[0], sk.stride[1]};
    ref_heads v = {s->kv, t->buf[2].data, sv.stride[0], sv.stride[1]};
    return s->n_q ? ref_attention(&shape, &q, &k, &v, t->ref, t->terms) : 0;
}

typedef struct glu_spec {
    size_t rows, cols;
    int layout;             /* 0 dense, 1 strided, 2 the halves of one [gate | up] matrix, 3 in place */
    int tail;               /* gates in [-90, -2], up to +-1e30: the gate's left tail must keep its
                             * relative precision (a subnormal or flushed factor does not) */
} glu_spec;

static int build_glu(ictx *x, icase *t, const void *spec)
{
    const glu_spec *s = spec;
    size_t n = s->cols, lda = 0, ldb = 0, ldy = 0;
    if (s->layout == 1)
        lda = n + 1 + below(&x->rng, 5), ldb = n + 2, ldy = n + 3;
    if (s->layout == 2)
        lda = ldb = 2 * n;
    shape3 sa = matrix_shape(s->rows, s->layout == 2 ? 2 * n : n, s->layout == 2 ? 0 : lda);
    shape3 sb = matrix_shape(s->rows, n, ldb), sy = matrix_shape(s->rows, n, ldy);
    float g_lo = s->tail ? -90 : -8, g_hi = s->tail ? -2 : 8, u = s->tail ? 1e30f : 3; /* tail: not layout 2 */
    if (input_operand(x, t, 0, RAYO_DTYPE_F32, &sa, g_lo, g_hi))
        return -1;
    if (s->layout != 2 && input_operand(x, t, 1, RAYO_DTYPE_F32, &sb, -u, u))
        return -1;
    if (s->layout == 3 ? in_place_output(t, &sa) : output_operand(x, t, RAYO_DTYPE_F32, &sy, 0))
        return -1;
    if (s->layout == 2)
        t->b_in_a = n * sizeof(float);
    rayo_call *c = &t->call;
    c->op = x->op->id;
    c->m = s->rows, c->n = n, c->lda = lda, c->ldb = ldb, c->ldy = ldy;
    static const char *const layouts[] = {"dense", "strided", "halves of [gate | up]", "in place"};
    snprintf(t->desc, sizeof t->desc, "%s %zu x %zu, %s (lda %zu, ldb %zu, ldy %zu)%s", x->op->name, s->rows,
             n, layouts[s->layout], lda, ldb, ldy, s->tail ? ", gates in [-90, -2], up to +-1e30" : "");
    if (!x->with_ref)
        return 0;
    const float *gate = (const float *)(void *)t->buf[0].data;
    const float *up = s->layout == 2 ? gate + n : (const float *)(void *)t->buf[1].data;
    ref_glu_kind kind = x->op->id == RAYO_OP_SWIGLU ? REF_GLU_SWIGLU
                        : x->op->id == RAYO_OP_GEGLU ? REF_GLU_GEGLU : REF_GLU_GEGLU_TANH;
    return ref_glu(kind, s->rows, n, gate, sa.stride[1], up, s->layout == 2 ? 2 * n : sb.stride[1], t->ref);
}

/* ---- running and judging one case --------------------------------------------- */
static void check_memory(icase *t)
{
    int out = t->alias ? 0 : 3;
    for (int w = 0; w < 4; w++) {
        gbuf *b = &t->buf[w];
        if (!b->mem)
            continue;
        if (w != out) {
            for (size_t i = 0; i < b->bytes; i++)
                if (b->mem[i] != b->saved[i]) {
                    problem(t, "the input %c was changed (byte %lld of its data)", "abcy"[w],
                            (long long)i - (long long)b->lead);
                    break;
                }
            continue;
        }
        /* The output buffer may differ only at the output elements. */
        unsigned char *expect = malloc(b->bytes);
        if (!expect) {
            problem(t, "the test itself failed: out of memory");
            return;
        }
        memcpy(expect, b->saved, b->bytes);
        if (t->out_dtype != RAYO_DTYPE_F32) {
            memcpy(expect + b->lead, b->data, b->size);
        } else {
            for (size_t e = 0; e < t->out_count; e++) {
                size_t at = b->lead + 4 * shape_offset(&t->out, e);
                memcpy(expect + at, b->mem + at, 4);
            }
        }
        for (size_t i = 0; i < b->bytes; i++)
            if (b->mem[i] != expect[i]) {
                long long at = (long long)i - (long long)b->lead;
                problem(t, at < 0 || (size_t)at >= b->size ? "wrote outside y (byte %lld of its data)"
                                                          : "wrote into a gap of the strided y (byte %lld)", at);
                break;
            }
        free(expect);
    }
}

/* An output that is also an input, or a call that must be refused: the
 * output must be as it was after an error. */
static void check_untouched(icase *t)
{
    gbuf *b = &t->buf[t->alias ? 0 : 3];
    if (b->mem && (t->alias || t->y_is_input || t->expected != RAYO_OK) &&
        memcmp(b->mem, b->saved, b->bytes))
        problem(t, "returned an error but changed the output");
}

static void note_worst(ictx *x, icase *t, double units, size_t e, double y, double ref)
{
    if (x->res->worst[0] && !(units > x->res->max_units))
        return;
    x->res->max_units = units;
    snprintf(x->res->worst, sizeof x->res->worst, "%s: y[%zu] = %.9g, reference %.9g", t->desc, e, y, ref);
}

static void check_bytes(icase *t)
{
    const unsigned char *y = t->buf[3].data;
    for (size_t i = 0; i < t->buf[3].size; i++)
        if (y[i] != t->want[i]) {
            problem(t, "byte %zu of y is 0x%02x, the exact conversion gives 0x%02x", i, y[i], t->want[i]);
            return;
        }
}

static void check_values(ictx *x, icase *t, const rayo_op_info *contract)
{
    if (t->want) {
        check_bytes(t);
        note_worst(x, t, t->problem[0] ? INFINITY : 0, 0, 0, 0);
        return;
    }
    const unsigned char *y = t->call.y;
    size_t bad = 0, worst_i = 0;
    double worst = -1, worst_bad = -1;
    for (size_t e = 0; e < t->out_count; e++) {
        float v;
        uint32_t bits;
        memcpy(&v, y + 4 * shape_offset(&t->out, e), 4);
        memcpy(&bits, &v, 4);
        if (bits == 0xa5a5a5a5u && !t->y_is_input && !t->alias) {
            problem(t, "y[%zu] was not written", e);
            continue;
        }
        int pass;
        double units = conform_judge(contract, t->ref[e], t->terms[e], v, &pass);
        if (units > worst)
            worst = units, worst_i = e;
        if (!pass && units > worst_bad)
            worst_bad = units, bad++, worst_i = e;
        else if (!pass)
            bad++;
    }
    if (worst < 0)
        return;
    float v;
    memcpy(&v, y + 4 * shape_offset(&t->out, worst_i), 4);
    note_worst(x, t, worst, worst_i, v, t->ref[worst_i]);
    if (bad)
        problem(t, "y[%zu] = %.9g but the float64 reference is %.9g (%.3g times the contract); %zu of %zu "
                "elements out of contract", worst_i, (double)v, t->ref[worst_i], worst_bad, bad, t->out_count);
}

/* The op's contract at this precision, for this combination, in the shape
 * conform_judge takes.  rope is judged relative to the norm of each pair. */
static rayo_op_info contract_of(const rayo_op_info *op, const rayo_combo_info *combo, int relaxed)
{
    rayo_op_info info = *op;
    if (combo) {
        info.tol_rel = relaxed ? combo->relaxed_rel : combo->tol_rel;
        info.tol_abs = relaxed ? combo->relaxed_abs : combo->tol_abs;
    }
    if (op->id == RAYO_OP_ROPE)
        info.scale = RAYO_SCALE_SUM;
    return info;
}

static void record(ictx *x, icase *t)
{
    conform_result *r = x->res;
    r->cases++;
    if (!t->problem[0])
        return;
    r->failed++;
    if (r->reported < CONFORM_MAX_REPORTS)
        snprintf(r->reports[r->reported++], sizeof r->reports[0], "%.160s%s: %.330s", t->desc,
                 t->call.precision == RAYO_PRECISION_RELAXED ? " (relaxed)" : "", t->problem);
}

static int is_empty(const icase *t)
{
    return t->out_dtype != RAYO_DTYPE_F32 ? t->buf[3].size == 0 : t->out_count == 0;
}

typedef int build_fn(ictx *x, icase *t, const void *spec);

/* The reference of a case whose call succeeded: the same builder again from
 * the same random stream gives the same inputs, now with the reference (a
 * backend that passes a case on costs no reference). */
static int reference_of(ictx *x, build_fn *build, const void *spec, conform_rng at, icase *t)
{
    icase r;
    memset(&r, 0, sizeof r);
    conform_rng after = x->rng;
    x->rng = at;
    x->with_ref = 1;
    int rc = build(x, &r, spec);
    x->with_ref = 0;
    x->rng = after;
    if (rc == 0 && r.out_count == t->out_count) {
        t->ref = r.ref, t->terms = r.terms, t->want = r.want;
        r.ref = r.terms = NULL, r.want = NULL;
    } else {
        rc = -1;
    }
    for (int w = 0; w < 4; w++)
        gbuf_free(&r.buf[w]);
    free(r.ref);
    free(r.terms);
    free(r.want);
    return rc;
}

static void judge(ictx *x, icase *t, rayo_status st, build_fn *build, const void *spec, conform_rng at,
                  int relaxed)
{
    /* Evidence that the backend has the kernel: it computed a non-empty
     * case, or answered one wrongly.  A refusal that was expected proves
     * nothing (the core's own validation gives it for every backend). */
    if (!is_empty(t) && (st == RAYO_OK || st != t->expected))
        x->supported_nonempty++;
    const rayo_combo_info *combo = rayo_op_combo_find(x->op->id, t->call.dtypes);
    rayo_op_info contract = contract_of(x->op, combo, relaxed);
    if (st != t->expected) {
        problem(t, "returned %s (%s), expected %s", rayo_strerror(st), rayo_last_error(),
                rayo_strerror(t->expected));
    } else if (st == RAYO_OK) {
        free(t->ref), free(t->terms);
        t->ref = t->terms = NULL;
        if (reference_of(x, build, spec, at, t))
            problem(t, "the test itself failed: no reference (out of memory?)");
        else
            check_values(x, t, &contract);
    }
}

static void run_case(ictx *x, build_fn *build, const void *spec, int relaxed)
{
    if (x->group && conform_group_listed(x->opt->skip, x->group)) {
        x->res->skipped++;
        return;
    }
    icase t;
    memset(&t, 0, sizeof t);
    t.call.struct_size = sizeof t.call;
    t.expected = RAYO_OK;
    if (x->opt->progress)
        x->opt->progress(x->opt->progress_user, x->serial, 0);
    conform_rng at = x->rng;
    if (build(x, &t, spec)) {
        problem(&t, "the test itself failed: out of memory or a bad plan");
    } else {
        set_pointers(&t);
        t.call.precision = relaxed ? RAYO_PRECISION_RELAXED : RAYO_PRECISION_STRICT;
        for (int w = 0; w < 4; w++)
            gbuf_save(&t.buf[w]);
        rayo_status st = x->opt->run(x->opt->run_user, &t.call);
        check_memory(&t);
        if (st != RAYO_OK)
            check_untouched(&t);
        /* A backend without the kernel passes the call on, even one that a
         * kernel must refuse (an index only a kernel reads). */
        if (st == RAYO_E_UNSUPPORTED)
            x->res->unsupported++;
        else
            judge(x, &t, st, build, spec, at, relaxed);
    }
    x->serial++;
    record(x, &t);
    for (int w = 0; w < 4; w++)
        gbuf_free(&t.buf[w]);
    free(t.ref);
    free(t.terms);
    free(t.want);
}

/* Every case at strict precision; every third one again at relaxed. */
static void run_spec(ictx *x, build_fn *build, const void *spec)
{
    int relaxed_too = x->serial % 3 == 0;
    run_case(x, build, spec, 0);
    if (relaxed_too)
        run_case(x, build, spec, 1);
}

/* ---- plans ------------------------------------------------------------------------ */
static const float alpha_beta[][2] = {{1.0f, 0.0f}, {-0.75f, 0.5f}, {2.5f, 0.0f}, {0.5f, -1.5f}};

static void plan_convert(ictx *x, const rayo_combo_info *combo)
{
    static const size_t plain[] = {0, 1, 2, 7, 33, 1000, 4097};
    static const size_t blocks[] = {0, 1, 3, 40};
    convert_spec s = {RAYO_DTYPE_OF(combo->dtypes, 0), RAYO_DTYPE_OF(combo->dtypes, 3), 0};
    size_t fb = rayo_dtype_block_elems(s.from), tb = rayo_dtype_block_elems(s.to);
    size_t blk = fb > tb ? fb : tb;
    for (size_t i = 0; i < (blk > 1 ? COUNT_OF(blocks) : COUNT_OF(plain)); i++) {
        s.n = blk > 1 ? blocks[i] * blk : plain[i];
        run_spec(x, build_convert, &s);
    }
    if (!x->opt->quick) {
        s.n = blk > 1 ? 2048 * blk : ((size_t)1 << 18) + 3;
        run_spec(x, build_convert, &s);
    }
}

/* (m, n, k) with k in blocks of the weight dtype (elements for plain dtypes
 * with more variety). */
static const size_t mm_sizes[][3] = {
    {1, 1, 1}, {1, 7, 2}, {3, 5, 1}, {17, 13, 3}, {0, 5, 1}, {5, 0, 1}, {4, 3, 0}, {2, 9, 5},
};

static size_t k_of(size_t units, rayo_dtype dt, size_t i)
{
    size_t blk = rayo_dtype_block_elems(dt);
    return blk > 1 ? units * blk : units * 29 + (units ? i % 3 : 0);
}

/* f16 x f16 and bf16 x bf16: shapes for tensor-core kernels (row strides
 * in multiples of 8 elements) past their tiles' edges, in every transpose,
 * strict and relaxed; a k long enough for a strict kernel's second sums,
 * and one past where such kernels may stop (cuda: 16384). */
static void plan_matmul_half(ictx *x, matmul_spec s)
{
    static const size_t sizes[][4] = { /* m, n, k, strided */
        {136, 72, 200, 0}, {131, 77, 203, STRIDE_8}, {257, 129, 33, STRIDE_8}, {8, 264, 1000, 0},
    };
    for (size_t i = 0; i < COUNT_OF(sizes); i++)
        for (uint32_t flags = 0; flags < 4; flags++) {
            s.m = sizes[i][0], s.n = sizes[i][1], s.k = sizes[i][2], s.strided = (int)sizes[i][3];
            s.flags = flags;
            s.alpha = alpha_beta[(i + flags) % COUNT_OF(alpha_beta)][0];
            s.beta = alpha_beta[(i + flags) % COUNT_OF(alpha_beta)][1];
            run_case(x, build_matmul, &s, 0);
            run_case(x, build_matmul, &s, 1);
        }
    s.alpha = 1, s.beta = 0, s.strided = STRIDE_8;
    s.m = 67, s.n = 136, s.k = 8197, s.flags = RAYO_TRANS_B;
    run_case(x, build_matmul, &s, 0);
    s.m = 5, s.n = 40, s.k = 16400, s.flags = 0;
    run_case(x, build_matmul, &s, 0);
    run_case(x, build_matmul, &s, 1);
}

/* f32 x f32 and bf16 x bf16 products that cancel on the shapes that the
 * tensor-core kernels take (m, n multiples of 128, k of 32; rows 8 elements
 * apart): cuda's bf16 mma.sync (strict) and wgmma (relaxed) tiles; vulkan's
 * f16 cooperative-matrix matmul (relaxed f32, dense: f32 values past f16's
 * range); strided, with beta, the stride and C handling of their redo. */
static void plan_cancel_tiles(ictx *x, matmul_spec s)
{
    static const size_t sizes[][4] = {{128, 256, 64, 0}, {256, 128, 96, STRIDE_8}}; /* m, n, k, strided */
    if ((s.adt != RAYO_DTYPE_F32 && s.adt != RAYO_DTYPE_BF16) || s.bdt != s.adt)
        return;
    for (size_t i = 0; i < COUNT_OF(sizes); i++) {
        s.m = sizes[i][0], s.n = sizes[i][1], s.k = sizes[i][2], s.strided = (int)sizes[i][3];
        s.flags = RAYO_TRANS_B, s.cancel = 1;
        s.alpha = alpha_beta[i + 1][0], s.beta = alpha_beta[i + 1][1];
        run_case(x, build_matmul, &s, 0);
        run_case(x, build_matmul, &s, 1);
    }
}

/* Products near 1e38 that cancel (fill_cancel_row): partial sums past
 * FLT_MAX, a finite result; strict and relaxed; the group "cancel".  Not for
 * matmul's f16 activations, which cannot hold such values. */
static void plan_cancel(ictx *x, build_fn *build, matmul_spec s)
{
    /* m, n, k units; 8 x 8: split-K where the weights dequantize (few tiles,
     * long k: C's sums of blocks pass FLT_MAX too); 130 x 132: a 128 x 128
     * tensor-core tile and its edges */
    static const size_t sizes[][3] = {{1, 7, 2}, {3, 5, 16}, {5, 1, 2}, {17, 19, 4}, {8, 8, 16}, {130, 132, 2}};
    if (build == build_matmul && s.adt == RAYO_DTYPE_F16)
        return;
    rayo_dtype weights = build == build_gemv ? s.adt : s.bdt;
    x->group = "cancel";
    for (size_t i = 0; i < COUNT_OF(sizes); i++) {
        s.m = sizes[i][0], s.n = sizes[i][1], s.k = k_of(sizes[i][2], weights, 1);
        if (build == build_gemv)
            s.n = s.k;
        s.flags = build == build_gemv ? 0 : RAYO_TRANS_B;
        s.strided = i == 1, s.cancel = 1; /* 17 x 19: the tiles of a dense matmul */
        s.alpha = alpha_beta[i % COUNT_OF(alpha_beta)][0];
        s.beta = alpha_beta[i % COUNT_OF(alpha_beta)][1];
        run_case(x, build, &s, 0);
        run_case(x, build, &s, 1);
    }
    if (build == build_matmul)
        plan_cancel_tiles(x, s);
    x->group = NULL;
}

/* f32 activations by a typed weight in an LLM prompt's layout: dense, B
 * transposed, n even and k a multiple of 8 (what the GPU backends put on
 * the tensor cores in f16), strict and relaxed: plain, rows of A of wide
 * magnitudes, and products that cancel (the group "cancel"); then a
 * prompt's size, past the 128 x 128 tiles of the f16 products. */
static void plan_matmul_prompt(ictx *x, matmul_spec s)
{
    s.m = 33, s.n = 136, s.k = k_of(8, s.bdt, 0), s.flags = RAYO_TRANS_B, s.strided = 0;
    for (int v = 0; v < 3; v++) {
        s.wide = v == 1, s.cancel = v == 2;
        if (s.cancel)
            s.m = 17, s.n = 20, x->group = "cancel";
        s.alpha = alpha_beta[v + 1][0], s.beta = alpha_beta[v + 1][1];
        run_case(x, build_matmul, &s, 0);
        run_case(x, build_matmul, &s, 1);
    }
    x->group = NULL;
    /* a prompt's own shape: one 128-row tile of C, then 3 rows past it
     * (strided), n 8 past whole 128-column tiles, k = 2048 (a multiple of
     * every block); rows of A of wide magnitudes, rows of B scaled apart.
     * --quick keeps the tiles' edges and the scaling at k = 256 (an eighth
     * of the time, and CPU backends take their f32 path there). */
    s.n = 264, s.k = x->opt->quick ? 256 : 2048, s.cancel = 0, s.alpha = 1, s.beta = 0;
    for (int v = 0; v < 2; v++) {
        s.m = v ? 131 : 128, s.strided = v, s.wide = v, s.scaled_b = 1;
        if (v)
            s.alpha = alpha_beta[3][0], s.beta = alpha_beta[3][1];
        run_case(x, build_matmul, &s, 0);
        run_case(x, build_matmul, &s, 1);
    }
}

/* Activations of each hard class (fill_act_row) at both precisions, in rows
 * of one block up to 16k values (the lengths where x86's 8-bit rounding
 * changes scheme); the group "x-range".  matmul: f32 A only (A is x). */
static void plan_act_range(ictx *x, build_fn *build, matmul_spec s)
{
    static const size_t sizes[][3] = {{64, 7, 1}, {13, 5, 9}, {5, 3, 129}, {3, 2, 16384}}; /* m, n, k values */
    if (build == build_matmul && s.adt != RAYO_DTYPE_F32)
        return;
    rayo_dtype weights = build == build_gemv ? s.adt : s.bdt;
    size_t blk = rayo_dtype_block_elems(weights);
    x->group = "x-range";
    for (size_t i = 0; i < COUNT_OF(sizes) - (x->opt->quick != 0); i++)
        for (int act = ACT_DECADES; act <= ACT_OUTLIERS; act++) {
            s.m = sizes[i][0], s.n = sizes[i][1];
            s.k = i + 1 < COUNT_OF(sizes) ? k_of(sizes[i][2], weights, i) : sizes[i][2] / blk * blk;
            if (build == build_gemv)
                s.n = s.k;
            s.flags = build == build_gemv ? 0 : RAYO_TRANS_B;
            s.strided = i == 1, s.cancel = 0, s.wide = 0, s.act = (act_class)act;
            s.alpha = 1, s.beta = 0;
            run_case(x, build, &s, 0);
            run_case(x, build, &s, 1);
        }
    x->group = NULL;
}

static void plan_matmul(ictx *x, const rayo_combo_info *combo)
{
    static const uint32_t half_flags[] = {RAYO_TRANS_B, 0, RAYO_TRANS_A | RAYO_TRANS_B, RAYO_TRANS_A};
    matmul_spec s = {RAYO_DTYPE_OF(combo->dtypes, 0), RAYO_DTYPE_OF(combo->dtypes, 1), 0, 0, 0, 0, 0, 0, 0, 0, 0, ACT_PLAIN, 0};
    int weights_only = rayo_dtype_is_block(s.bdt);
    int f32 = combo->dtypes == 0; /* dense f32 is the f32 engine's: only strided views here */
    for (size_t i = 0; i < COUNT_OF(mm_sizes); i++) {
        s.m = mm_sizes[i][0], s.n = mm_sizes[i][1], s.k = k_of(mm_sizes[i][2], s.bdt, i);
        s.flags = weights_only ? RAYO_TRANS_B : half_flags[i % COUNT_OF(half_flags)];
        s.strided = f32 || (i & 1);
        s.alpha = alpha_beta[i % COUNT_OF(alpha_beta)][0];
        s.beta = alpha_beta[i % COUNT_OF(alpha_beta)][1];
        run_spec(x, build_matmul, &s);
    }
    /* Long k: the accumulation must stay within the contract. */
    s.m = 3, s.n = 16, s.k = 16384, s.flags = RAYO_TRANS_B, s.strided = 1, s.alpha = 1, s.beta = 0;
    run_spec(x, build_matmul, &s);
    if (!x->opt->quick) {
        s.m = 40, s.n = 72, s.k = 2048, s.strided = f32;
        run_spec(x, build_matmul, &s);
    }
    if ((s.adt == RAYO_DTYPE_F16 || s.adt == RAYO_DTYPE_BF16) && s.bdt == s.adt)
        plan_matmul_half(x, s);
    if (s.adt == RAYO_DTYPE_F32 && s.bdt != RAYO_DTYPE_F32)
        plan_matmul_prompt(x, s);
    plan_cancel(x, build_matmul, s);
    plan_act_range(x, build_matmul, s);
}

static void plan_gemv(ictx *x, const rayo_combo_info *combo)
{
    static const size_t sizes[][2] = {{1, 1}, {7, 3}, {33, 8}, {0, 1}, {5, 0}, {16, 2}};
    matmul_spec s = {RAYO_DTYPE_OF(combo->dtypes, 0), RAYO_DTYPE_F32, 0, 0, 0, 0, 0, 0, 0, 0, 0, ACT_PLAIN, 0};
    int f32 = combo->dtypes == 0;
    for (size_t i = 0; i < COUNT_OF(sizes); i++) {
        s.m = sizes[i][0], s.n = k_of(sizes[i][1], s.adt, i);
        s.strided = f32 || (i & 1);
        s.alpha = alpha_beta[i % COUNT_OF(alpha_beta)][0];
        s.beta = alpha_beta[i % COUNT_OF(alpha_beta)][1];
        run_spec(x, build_gemv, &s);
    }
    s.m = x->opt->quick ? 8 : 256, s.n = 16384, s.strided = 1, s.alpha = 1, s.beta = 0;
    run_spec(x, build_gemv, &s);
    /* rows of the 7B shape's down projection (11008 values, dense): they end
     * partway through the unrolled steps of the GPU gemv kernels (cuda's
     * gemv8 takes a Q4_0 row 4096 values at a time) */
    s.m = 64, s.n = 11008, s.strided = 0;
    run_spec(x, build_gemv, &s);
    if (!x->opt->quick) {
        /* Tall: more rows than one wave of GPU blocks holds (132 SMs x 2
         * blocks x 16 rows), so blocks that loop over row groups are judged. */
        s.m = 9001, s.n = k_of(2, s.adt, 1), s.strided = 0, s.alpha = 0.5f, s.beta = 2;
        run_spec(x, build_gemv, &s);
    }
    plan_cancel(x, build_gemv, s);
    plan_act_range(x, build_gemv, s);
}

static void plan_get_rows(ictx *x, const rayo_combo_info *combo)
{
    static const size_t sizes[][3] = {{1, 1, 1}, {10, 3, 5}, {100, 2, 0}, {7, 1, 20}, {3, 2, 2}};
    get_rows_spec s = {RAYO_DTYPE_OF(combo->dtypes, 0), 0, 0, 0, 0, 0};
    for (size_t i = 0; i < COUNT_OF(sizes); i++) {
        s.table_rows = sizes[i][0], s.cols = k_of(sizes[i][1], s.dt, i), s.n_idx = sizes[i][2];
        s.strided = i & 1;
        run_spec(x, build_get_rows, &s);
    }
    s.table_rows = 10, s.cols = k_of(2, s.dt, 1), s.n_idx = 6, s.bad_index = 1;
    run_spec(x, build_get_rows, &s);
    run_spec(x, build_get_rows, &s);
    s.bad_index = 0;
    if (!x->opt->quick) {
        s.table_rows = 1000, s.cols = k_of(16, s.dt, 0), s.n_idx = 64, s.strided = 1;
        run_spec(x, build_get_rows, &s);
    }
}

static void plan_rope(ictx *x)
{
    static const size_t shapes[][4] = {
        {1, 1, 2, 0}, {5, 3, 64, 0}, {7, 2, 80, 32}, {33, 8, 128, 0}, {0, 4, 64, 0}, {2, 1, 6, 4},
        {3, 5, 128, 64},
    };
    static const float bases[][2] = {{10000, 1}, {500000, 1}, {1e6f, 0.25f}, {10000, 0.5f}};
    for (int mode = RAYO_ROPE_NORM; mode <= RAYO_ROPE_NEOX; mode++)
        for (size_t i = 0; i < COUNT_OF(shapes); i++) {
            rope_spec s = {(rayo_rope_mode)mode, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
                           bases[i % 4][0], bases[i % 4][1], (int)(i & 1), i % 4 == 2};
            run_spec(x, build_rope, &s);
        }
    if (!x->opt->quick) {
        rope_spec s = {RAYO_ROPE_NEOX, 512, 32, 128, 0, 10000, 1, 1, 0};
        run_spec(x, build_rope, &s);
    }
}

/* A relaxed attention case twice in a row (operands aligned, then a whole
 * element off: misalign_for alternates with the case's serial); once with
 * --quick, where the cases' alignments alternate instead. */
static void run_relaxed_twice(ictx *x, const attention_spec *spec)
{
    for (int twice = 0; twice < (x->opt->quick ? 1 : 2); twice++)
        run_case(x, build_attention, spec, 1);
}

/* Relaxed decode at the shapes of real models, against the relaxed
 * contract: grouped queries 8:1 and one KV head a head, head_dim 64 and
 * 128, short caches (a decode step of a small model, of a 7B one) and long
 * ones (groups of 1, 2, 4, 6 and 8 heads, up to 3 queries, lengths that
 * end inside a tile: cuda splits these keys over clusters; K and V of at
 * most 134 MB a case in f32, so that the reference fits the 2 GB heap of
 * the WebAssembly build); then the
 * scores near 3e3 of "attn-large" (a float score must be right to ~1e-3
 * absolute here), decode of 1 and 3 queries with one KV head a head (the
 * 7B shape: vulkan's attention_short.comp and attention_dec.comp), a
 * prefill and a long cache; then prompts of
 * 16 to 512 queries (the tensor-core kernels of cuda, vulkan's
 * attention_prompt.comp), causal or not, strided, with NaN too, and with an
 * f32 cache K of very different sizes and V near 65504.  Each case twice in a
 * row: operands 64-byte aligned, then a whole element off (a kernel that
 * needs aligned rows runs in one of the two); once with --quick. */
static void plan_attention_relaxed(ictx *x, rayo_dtype kv)
{
    static const size_t shapes[][7] = { /* n_q, n_kv, heads, kv heads, head_dim, long, scores ~3e3 */
        {1, 192, 32, 4, 64, 0, 0},    {1, 129, 32, 32, 64, 0, 0},  {1, 1000, 32, 4, 128, 0, 0},
        {3, 77, 8, 8, 128, 0, 0},     {1, 4096, 32, 4, 128, 1, 0}, {1, 4096, 32, 32, 128, 1, 0},
        {1, 32768, 32, 4, 128, 1, 0}, {1, 32768, 8, 8, 64, 1, 0},  {1, 300, 8, 2, 64, 0, 1},
        {5, 40, 4, 2, 64, 0, 1},      {1, 2000, 32, 4, 128, 0, 1}, {1, 32768, 32, 4, 128, 1, 1},
        {1, 192, 32, 32, 128, 0, 0},  {1, 150, 32, 4, 128, 0, 0},  {2, 129, 32, 32, 128, 0, 0},
        {1, 4096, 32, 4, 64, 1, 0},   {1, 32768, 4, 4, 128, 1, 0},  {3, 6000, 16, 2, 128, 1, 0},
        {1, 8191, 16, 4, 64, 1, 0},   {2, 4100, 8, 4, 128, 1, 0},  {1, 5000, 12, 2, 64, 1, 0},
        {1, 700, 32, 32, 128, 0, 1},  {3, 700, 32, 32, 128, 0, 1}, {1, 1500, 32, 32, 128, 0, 1},
    };
    for (size_t i = 0; i < COUNT_OF(shapes); i++) {
        if (shapes[i][5] && x->opt->quick)
            continue;
        attention_spec r = {kv, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4], 1, 0, 0,
                            shapes[i][6] ? 50 : 0, 0, 0};
        x->group = shapes[i][6] ? "attn-large" : NULL;
        run_relaxed_twice(x, &r);
    }
    x->group = NULL;
    /* Decode of 2 to 4 queries (speculative or batched steps), causal or
     * not, with head_dim 256, odd ones, groups of 3, 10 and 16 heads (more
     * than one workgroup's 8 on vulkan; 16 long too), fewer keys than a GPU kernel's
     * chunk, and strides; caches of 1, 2 and 31 keys, and of 1024 and 1025
     * (at and past the keys vulkan's attention_short.comp takes by
     * default). */
    static const size_t decode[][8] = { /* n_q, n_kv, heads, kv heads, head_dim, long, causal, strided */
        {4, 300, 32, 4, 64, 0, 1, 0},  {4, 4096, 8, 8, 128, 1, 0, 1}, {2, 500, 8, 1, 256, 0, 0, 0},
        {1, 1000, 48, 3, 80, 0, 1, 1}, {3, 200, 12, 4, 33, 0, 0, 0},  {4, 4, 8, 2, 64, 0, 1, 0},
        {1, 5000, 32, 32, 64, 1, 1, 0}, {1, 1, 4, 1, 64, 0, 1, 0},    {2, 2, 8, 2, 128, 0, 1, 1},
        {3, 31, 12, 3, 256, 0, 0, 1},  {4, 1024, 16, 4, 64, 0, 1, 0}, {1, 1025, 8, 8, 128, 0, 1, 1},
        {2, 192, 8, 8, 33, 0, 1, 1},   {2, 3000, 32, 2, 64, 1, 1, 0}, {1, 2100, 40, 4, 128, 1, 0, 1},
    };
    for (size_t i = 0; i < COUNT_OF(decode); i++) {
        if (decode[i][5] && x->opt->quick)
            continue;
        attention_spec r = {kv, decode[i][0], decode[i][1], decode[i][2], decode[i][3], decode[i][4],
                            (int)decode[i][6], (int)decode[i][7], 0, 0, 0, 0};
        run_relaxed_twice(x, &r);
    }
    /* Prompts (many queries, causal with more keys than queries, tiles of
     * queries and keys cut short), with scale 8: scores near +-30, where a
     * score's error e is a relative error e in its weight. */
    static const size_t prompts[][7] = { /* n_q, n_kv, heads, kv heads, head_dim, long, scale 8 */
        {37, 100, 8, 2, 128, 0, 0},      {70, 70, 4, 4, 64, 0, 1},        {16, 300, 4, 1, 128, 0, 1},
        {128, 128, 32, 32, 128, 1, 0},   {128, 200, 32, 4, 64, 1, 1},     {512, 512, 32, 32, 128, 1, 1},
        {512, 600, 32, 4, 64, 1, 0},     {200, 1000, 8, 2, 128, 1, 1},
    };
    for (size_t i = 0; i < COUNT_OF(prompts); i++) {
        if (prompts[i][5] && x->opt->quick)
            continue;
        attention_spec r = {kv, prompts[i][0], prompts[i][1], prompts[i][2], prompts[i][3], prompts[i][4], 1, 0,
                            prompts[i][6] ? 8.0f : 0, 0, 0, 0};
        run_relaxed_twice(x, &r);
    }
    /* Prompts not causal, or in views of bigger operands (strides), head_dim
     * odd and 256, groups of 8 and 1: the shapes' other paths. */
    static const size_t views[][7] = { /* n_q, n_kv, heads, kv heads, head_dim, causal, strided */
        {40, 90, 6, 2, 80, 0, 1},   {33, 33, 3, 1, 33, 1, 1},   {100, 130, 16, 2, 256, 1, 0},
        {64, 150, 8, 8, 128, 0, 0}, {48, 48, 16, 2, 64, 1, 1},  {17, 17, 8, 1, 128, 1, 1},
    };
    for (size_t i = 0; i < COUNT_OF(views); i++) {
        attention_spec r = {kv, views[i][0], views[i][1], views[i][2], views[i][3], views[i][4], (int)views[i][5],
                            (int)views[i][6], 0, 0, 0, 0};
        run_relaxed_twice(x, &r);
    }
    /* an f32 cache with K of very different sizes and V near 65504, prompts and decode (past
     * 2048 keys with groups of 4: cuda's grouped decode) */
    static const size_t wide[][5] = {{70, 70, 6, 3, 64}, {37, 100, 8, 4, 128}, {1, 192, 8, 4, 64},
                                     {2, 31, 6, 3, 128}, {1, 2500, 16, 4, 128}, {2, 2100, 8, 2, 64}};
    for (size_t i = 0; kv == RAYO_DTYPE_F32 && i < COUNT_OF(wide); i++) {
        attention_spec r = {kv, wide[i][0], wide[i][1], wide[i][2], wide[i][3], wide[i][4], 1, 0, 0, 0, 0, 1};
        run_relaxed_twice(x, &r);
    }
    /* prompts with scores near 3e3, the second of the 7B shape */
    static const size_t big[][6] = {{40, 60, 4, 2, 64, 0}, {128, 128, 32, 32, 128, 1}}; /* ..., long */
    x->group = "attn-large";
    for (size_t i = 0; i < COUNT_OF(big); i++) {
        if (big[i][5] && x->opt->quick)
            continue;
        attention_spec r = {kv, big[i][0], big[i][1], big[i][2], big[i][3], big[i][4], 1, 0, 0, 50, 0, 0};
        run_relaxed_twice(x, &r);
    }
    x->group = NULL;
    /* NaN in q, K and V: the outputs the reference makes NaN, and only those */
    static const size_t nans[][5] = {{1, 192, 32, 32, 128}, {1, 150, 32, 4, 128}, {2, 70, 8, 8, 64},
                                     {37, 100, 8, 2, 128}, {64, 64, 4, 4, 64}, {1, 3000, 8, 2, 64},
                                     {1, 31, 4, 1, 256},    {3, 1024, 8, 4, 128}};
    for (size_t i = 0; i < COUNT_OF(nans); i++) {
        attention_spec r = {kv, nans[i][0], nans[i][1], nans[i][2], nans[i][3], nans[i][4], 1, 0, 0, 0, 1, 0};
        run_relaxed_twice(x, &r);
    }
}

static void plan_attention(ictx *x, const rayo_combo_info *combo)
{
    static const size_t shapes[][6] = { /* n_q, n_kv, heads, kv heads, head_dim, causal */
        {1, 1, 1, 1, 1, 1}, {1, 17, 4, 2, 64, 1}, {7, 7, 2, 2, 32, 1}, {5, 40, 8, 2, 16, 1},
        {3, 9, 3, 1, 5, 0}, {0, 4, 2, 1, 8, 1}, {64, 64, 4, 4, 64, 1}, {2, 300, 6, 3, 128, 0},
        /* one query, 4 to 24 heads per KV head (SIMD backends put them in lanes), odd dims */
        {1, 1, 8, 1, 64, 1}, {1, 333, 32, 4, 64, 1}, {1, 77, 15, 3, 20, 0}, {1, 50, 7, 1, 9, 1},
        {1, 100, 48, 2, 33, 1}, {3, 61, 16, 2, 64, 1}, {1, 64, 12, 3, 24, 1}, {1, 200, 16, 4, 40, 0},
    };
    attention_spec s = {RAYO_DTYPE_OF(combo->dtypes, 1), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < COUNT_OF(shapes); i++) {
        s.n_q = shapes[i][0], s.n_kv = shapes[i][1], s.heads = shapes[i][2];
        s.kv_heads = shapes[i][3], s.head_dim = shapes[i][4], s.causal = (int)shapes[i][5];
        s.strided = i & 1;
        s.scale = i % 3 == 1 ? (float)(8.0 / sqrt((double)s.head_dim)) : 0; /* peaky softmax */
        run_spec(x, build_attention, &s);
    }
    /* Decode against a long cache, in a view of one KV head of a bigger cache. */
    attention_spec d = {s.kv, 1, 8192, 4, 1, 64, 1, 1, 0, 0, 0, 0};
    run_spec(x, build_attention, &d);
    attention_spec nan = {s.kv, 1, 100, 8, 2, 64, 1, 0, 0, 0, 1, 0}; /* NaN in q, K and V */
    run_spec(x, build_attention, &nan);
    if (!x->opt->quick) {
        attention_spec c = {s.kv, 16, 8192, 4, 2, 64, 1, 0, 0, 0, 0, 0};
        run_spec(x, build_attention, &c);
    }
    /* Scores near 3e3 that differ by a few units, so many weights count:
     * each score must be right to ~1e-6 absolute (an error e in a score is a
     * relative error e in its weight), so float scores or a float running
     * max miss the strict contract: the group "attn-large".  Decode with
     * heads in lanes, a prefill, and a long cache. */
    static const size_t large[][6] = {{1, 300, 8, 2, 64, 1}, {5, 40, 4, 2, 64, 1}, {1, 2000, 4, 4, 64, 1}};
    x->group = "attn-large";
    for (size_t i = 0; i < COUNT_OF(large); i++) {
        attention_spec a = {s.kv, large[i][0], large[i][1], large[i][2], large[i][3], large[i][4],
                            (int)large[i][5], (int)(i & 1), 0, 50, 0, 0};
        run_case(x, build_attention, &a, 0);
    }
    x->group = NULL;
    plan_attention_relaxed(x, s.kv);
}

static void plan_glu(ictx *x)
{
    static const size_t sizes[][2] = {{0, 5}, {1, 1}, {3, 17}, {64, 1000}, {5, 33}, {2, 64}, {7, 3}, {1, 4097}};
    for (size_t i = 0; i < COUNT_OF(sizes); i++) {
        glu_spec s = {sizes[i][0], sizes[i][1], (int)(i % 4), 0};
        run_spec(x, build_glu, &s);
    }
    if (!x->opt->quick) {
        glu_spec s = {256, 4096, 2, 0};
        run_spec(x, build_glu, &s);
    }
    /* The gate's left tail times a huge up: the group "glu-tail". */
    static const size_t tails[][3] = {{3, 1000, 0}, {2, 37, 1}, {1, 20, 3}};
    x->group = "glu-tail";
    for (size_t i = 0; i < COUNT_OF(tails); i++) {
        glu_spec s = {tails[i][0], tails[i][1], (int)tails[i][2], 1};
        run_case(x, build_glu, &s, 0);
    }
    x->group = NULL;
}

/* ---- entry points ------------------------------------------------------------------ */
int conform_infer_has_plan(const rayo_op_info *op)
{
    switch (op->id) {
    case RAYO_OP_CONVERT: case RAYO_OP_MATMUL: case RAYO_OP_GEMV: case RAYO_OP_GET_ROWS:
    case RAYO_OP_ROPE: case RAYO_OP_ATTENTION: case RAYO_OP_SWIGLU: case RAYO_OP_GEGLU:
    case RAYO_OP_GEGLU_TANH:
        return 1;
    default:
        return 0;
    }
}

static void run_plan(ictx *x)
{
    const rayo_op_info *op = x->op;
    if (op->id == RAYO_OP_ROPE) {
        plan_rope(x);
        return;
    }
    if (op->sig == RAYO_SIG_GLU) {
        plan_glu(x);
        return;
    }
    for (size_t i = 0; i < rayo_op_combo_count(op->id); i++) {
        const rayo_combo_info *combo = rayo_op_combo(op->id, i);
        if (!conform_dtypes_wanted(x->opt, combo->dtypes))
            continue;
        switch (op->id) {
        case RAYO_OP_CONVERT: plan_convert(x, combo); break;
        case RAYO_OP_MATMUL: plan_matmul(x, combo); break;
        case RAYO_OP_GEMV: plan_gemv(x, combo); break;
        case RAYO_OP_GET_ROWS: plan_get_rows(x, combo); break;
        case RAYO_OP_ATTENTION: plan_attention(x, combo); break;
        default: break;
        }
    }
}

static void merge(conform_result *into, const conform_result *r)
{
    into->cases += r->cases;
    into->failed += r->failed;
    into->unsupported += r->unsupported;
    into->skipped += r->skipped;
    for (size_t i = 0; i < r->reported && into->reported < CONFORM_MAX_REPORTS; i++)
        memcpy(into->reports[into->reported++], r->reports[i], sizeof r->reports[i]);
    if (r->worst[0] && (!into->worst[0] || r->max_units > into->max_units)) {
        into->max_units = r->max_units;
        memcpy(into->worst, r->worst, sizeof into->worst);
    }
}

int conform_infer_check(const conform_options *opts, const rayo_op_info *op, conform_result *result)
{
    if (!conform_infer_has_plan(op))
        return 0;
    conform_result mine;
    memset(&mine, 0, sizeof mine);
    ictx x = {.opt = opts, .op = op, .res = &mine};
    /* Its own stream, apart from the f32 engine's for the same op. */
    conform_rng_seed(&x.rng, opts->seed * 0x100000001b3ull + op->id + 0x1f00);
    run_plan(&x);
    result->has_reference = 1;
    if (x.supported_nonempty) {
        result->implemented = 1;
        merge(result, &mine);
    } else { /* nothing of the backend ran: nothing to blame it for */
        result->cases += mine.cases;
        result->unsupported += mine.unsupported;
        result->skipped += mine.skipped;
    }
    return mine.failed && x.supported_nonempty ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/* convert.c - y = x converted from one dtype to another (op convert).
 *
 * rayo-dtype.h does every conversion, so the results are bit-identical to
 * it (the contract of convert is exactness): f32 <-> f16 and f32 <-> bf16
 * round to nearest even, f32 -> Q8_0 / Q4_0 give GGUF's reference bytes, and
 * every block format dequantizes to f32.  This file only cuts the work into
 * items (a whole block, or CHUNK plain elements) and spreads them over the
 * pool.
 */
#include "plugin.h"

#define CHUNK 256 /* elements per item when neither side is blocked */

static rayo_dtype from_dtype(const rayo_call *c)
{
    return RAYO_DTYPE_OF(c->dtypes, 0);
}

static rayo_dtype to_dtype(const rayo_call *c)
{
    return RAYO_DTYPE_OF(c->dtypes, 3);
}

static int is_half(rayo_dtype dt)
{
    return dt == RAYO_DTYPE_F16 || dt == RAYO_DTYPE_BF16;
}

/* The combinations of rayo-ops.h: f32 to f16, bf16, Q8_0, Q4_0; every
 * float-valued dtype to f32. */
static int convert_supported(rayo_dtype from, rayo_dtype to)
{
    if (from == RAYO_DTYPE_F32)
        return is_half(to) || to == RAYO_DTYPE_Q8_0 || to == RAYO_DTYPE_Q4_0;
    return to == RAYO_DTYPE_F32 && from != RAYO_DTYPE_I32 && rayo_dtype_block_elems(from) != 0;
}

static size_t item_elems(const rayo_call *c)
{
    size_t from = rayo_dtype_block_elems(from_dtype(c)), to = rayo_dtype_block_elems(to_dtype(c));
    size_t block = from > to ? from : to;
    return block > 1 ? block : CHUNK;
}

/* Byte offset of element e (at a block boundary) in a row of dtype dt. */
static size_t byte_offset(rayo_dtype dt, size_t e)
{
    return e / rayo_dtype_block_elems(dt) * rayo_dtype_block_bytes(dt);
}

static void put_le16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8);
}

static void convert_elems(rayo_dtype from, const void *src, rayo_dtype to, void *dst, size_t n)
{
    const float *x = src;
    unsigned char *out = dst;
    switch (to) {
    case RAYO_DTYPE_F16:
        for (size_t i = 0; i < n; i++)
            put_le16(out + 2 * i, rayo_f32_to_f16(x[i]));
        break;
    case RAYO_DTYPE_BF16:
        for (size_t i = 0; i < n; i++)
            put_le16(out + 2 * i, rayo_f32_to_bf16(x[i]));
        break;
    case RAYO_DTYPE_Q8_0: rayo_quantize_q8_0(x, dst, n); break;
    case RAYO_DTYPE_Q4_0: rayo_quantize_q4_0(x, dst, n); break;
    default: rayo_dequantize_row(from, src, dst, n); break; /* to f32 */
    }
}

static void convert_items(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    rayo_dtype from = from_dtype(c), to = to_dtype(c);
    size_t per = item_elems(c), e0 = lo * per, e1 = hi * per < c->n ? hi * per : c->n;
    const unsigned char *src = (const unsigned char *)c->a + byte_offset(from, e0);
    unsigned char *dst = (unsigned char *)c->y + byte_offset(to, e0);
    convert_elems(from, src, to, dst, e1 - e0);
}

SCALAR_KERNEL(convert)
{
    rayo_dtype from = from_dtype(call), to = to_dtype(call);
    if (!convert_supported(from, to))
        return RAYO_E_UNSUPPORTED;
    size_t per = item_elems(call);
    if (call->n % rayo_dtype_block_elems(from) || call->n % rayo_dtype_block_elems(to))
        return RAYO_E_INVALID; /* the core checks this first; never a partial block */
    cpu_run_ranges(state, call, (call->n + per - 1) / per, per * 4, convert_items);
    return RAYO_OK;
}

/* SPDX-License-Identifier: MIT */
// dequant.glsl - the value of one element of a row of any rayo dtype, as
// rayo-dtype.h computes it (the same float operations: `precise` forbids
// contraction), one byte at a time: for get_rows and convert, and for the
// rare slow paths of the products (gemv_quant's overflow redo).
//
// The includer declares a_data as uint words and the constant DTYPE, or
// defines DQ_WORD(i), word i of the row data, where that is elsewhere.

#ifndef RAYO_DEQUANT_GLSL
#define RAYO_DEQUANT_GLSL

#include "half.glsl"

#ifndef DQ_WORD
#define DQ_WORD(i) a_data[i]
#endif

uint dq_byte(uint at) { return (DQ_WORD(at >> 2u) >> (8u * (at & 3u))) & 0xffu; }
uint dq_half(uint at) { return dq_byte(at) | (dq_byte(at + 1u) << 8u); }
int dq_sbyte(uint at) { return int(dq_byte(at) << 24u) >> 24; }

// The scales and minimums (s0, m0, s1, m1) of sub-blocks 2c and 2c + 1 of a
// Q4_K block from its 12 scale bytes in three words (sc.x: bytes 0..3,
// sc.y: 4..7, sc.z: 8..11): sub-blocks 0..3 have 6-bit fields (scales in
// bytes 0..3, minimums in 4..7), 4..7 a low nibble in bytes 8..11 and
// their top two bits in the top bits of bytes 0..7.  Whole words shifted
// by the same amount for every c, the two halves chosen last: a byte
// picked by a runtime index costs a select per word.
uvec4 dq_q4_k_scales(uvec3 sc, uint c)
{
    uint sh = 16u * (c & 1u);
    uint s = sc.x >> sh, m = sc.y >> sh, lo = sc.z >> sh;
    uvec4 first = uvec4(s & 63u, m & 63u, (s >> 8u) & 63u, (m >> 8u) & 63u);
    uvec4 last = uvec4((lo & 15u) | ((s >> 2u) & 0x30u), ((lo >> 4u) & 15u) | ((m >> 2u) & 0x30u),
                       ((lo >> 8u) & 15u) | ((s >> 10u) & 0x30u), ((lo >> 12u) & 15u) | ((m >> 10u) & 0x30u));
    return c < 2u ? first : last;
}

float dq_q4_k(uint blk, uint i)
{
    uint s = i / 32u, l = i % 32u, sc, mn;
    if (s < 4u) {
        sc = dq_byte(blk + 4u + s) & 63u;
        mn = dq_byte(blk + 8u + s) & 63u;
    } else {
        sc = (dq_byte(blk + 8u + s) & 15u) | ((dq_byte(blk + s) >> 6u) << 4u);
        mn = (dq_byte(blk + 8u + s) >> 4u) | ((dq_byte(blk + 4u + s) >> 6u) << 4u);
    }
    uint q = (dq_byte(blk + 16u + 32u * (s / 2u) + l) >> (4u * (s & 1u))) & 15u;
    precise float ds = f16_value(dq_half(blk)) * float(sc);
    precise float ms = f16_value(dq_half(blk + 2u)) * float(mn);
    precise float y = ds * float(q) - ms;
    return y;
}

float dq_q6_k(uint blk, uint i)
{
    uint h = i / 128u, k = (i % 128u) / 32u, l = i % 32u;
    uint low = (dq_byte(blk + 64u * h + 32u * (k & 1u) + l) >> (4u * (k >> 1u))) & 15u;
    uint high = (dq_byte(blk + 128u + 32u * h + l) >> (2u * k)) & 3u;
    precise float ds = f16_value(dq_half(blk + 208u)) * float(dq_sbyte(blk + 192u + i / 16u));
    precise float y = ds * float(int(low | (high << 4u)) - 32);
    return y;
}

// Element e of the row of dtype DTYPE that starts at byte row_at
// (0 = f32, 1 = f16, 2 = bf16, 8 = Q8_0, 9 = Q4_0, 10 = Q4_K, 11 = Q6_K).
float dq_value(uint row_at, uint e)
{
    if (DTYPE == 0u) return uintBitsToFloat(DQ_WORD((row_at >> 2u) + e));
    if (DTYPE == 1u) return f16_value(dq_half(row_at + 2u * e));
    if (DTYPE == 2u) return uintBitsToFloat(dq_half(row_at + 2u * e) << 16u);
    if (DTYPE == 8u) {
        uint blk = row_at + 34u * (e / 32u);
        precise float y = float(dq_sbyte(blk + 2u + e % 32u)) * f16_value(dq_half(blk));
        return y;
    }
    if (DTYPE == 9u) {
        uint blk = row_at + 18u * (e / 32u), j = e % 32u;
        uint q = j < 16u ? dq_byte(blk + 2u + j) & 15u : dq_byte(blk + 2u + j - 16u) >> 4u;
        precise float y = float(int(q) - 8) * f16_value(dq_half(blk));
        return y;
    }
    if (DTYPE == 10u) return dq_q4_k(row_at + 144u * (e / 256u), e % 256u);
    return dq_q6_k(row_at + 210u * (e / 256u), e % 256u);
}

#endif

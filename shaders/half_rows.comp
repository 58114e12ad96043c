/* SPDX-License-Identifier: MIT */
#version 450
// half_rows.comp - rows of float32 activations or of a weight (f16, bf16,
// Q8_0, Q4_0, Q4_K, Q6_K: DTYPE, as rayo_dtype numbers them) to half
// precision, each row multiplied by a power of two of its own (the prompt
// matmul's f16 copies, plugins/vulkan/vk-half-prompt.c).  A weight's blocks
// are decoded here into the float values get_rows makes (dequant.glsl, the
// same operations), so no float32 copy of the weight is written and read
// back.  An invocation takes 8 values at a time, their quants read a word
// (4 bytes) at a time and the block's scales once (dequant.glsl's
// dq_value reads every byte apart: several times slower on an H200).
//
// A workgroup takes one row: the largest magnitude first, then every value
// times 2^shift, where shift puts that largest magnitude in [2^14, 2^15):
// nothing overflows f16 (max 65504) and small rows keep f16's 11 bits.
// The scaling is exact; the rounding to f16 is the only error.  The row's
// exponent (-shift: value = f16 * 2^exponent) goes to the exponent table.
// Rows past pc.m and columns past pc.k are written as zeros: the copy is
// padded to whole tiles of the matmul.  A row holding inf or NaN keeps
// shift 0 (its result is inf or NaN anyway).
//
// Each unit's 8 halves go out as one 16-byte store (as four 4-byte
// stores, each store of a subgroup wrote every fourth word of its span; on
// an NVIDIA H200 an 11008 x 4096 Q4_0 weight's copy took 79.9 us against
// 81.7, about 1.4 TB/s of traffic either way: the stores are not what
// holds it).
//
// Push constants: m rows (pc.m real ones; gl_NumWorkGroups.x in all), k
// real columns, n padded columns (a multiple of 8); oa: the source's byte offset, aux
// its row stride in bytes; oy: the copy's word offset in binding y (two
// halves a word; a multiple of 4, as n is of 8: whole uvec4 units), oc:
// the exponent table's word offset in binding y.
// Its own view of the buffers: the source is read and the copy and the
// exponents are written as words (a float load or store of such bits could
// be flushed as a denormal).
#extension GL_GOOGLE_include_directive : require
layout(std430, set = 0, binding = 0) readonly buffer BufA { uint a_data[]; };
layout(std430, set = 0, binding = 3) buffer BufY { uint y_words[]; };
layout(std430, set = 0, binding = 3) buffer BufY4 { uvec4 y_units[]; };
layout(push_constant) uniform PushConstants {
    uint n, m, k;
    uint oa, ob, oc, oy;
    float alpha, beta;
    uint flags, aux;
} pc;

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint DTYPE = 0u;  // the source's rayo_dtype (0: f32)
#include "dequant.glsl"

const uint WG = 128u;
shared uint part[WG];

// 2^e for e in [-126, 127] (exact; exp2 need not be)
float pow2(int e) { return uintBitsToFloat(uint(e + 127) << 23); }

// The frexp exponent of a positive finite value from its bits (denormals
// included: frexp may flush them).
int exponent_of(uint bits)
{
    uint biased = bits >> 23;
    return biased != 0u ? int(biased) - 126 : findMSB(bits) - 148;
}

float scaled(float v, int shift)
{
    int first = clamp(shift, -126, 127);
    precise float r = v * pow2(first) * pow2(shift - first);
    return r;
}

// 4 bytes from byte at on, the first in the low byte (any alignment: a
// Q4_0 block is 18 bytes, a row of halves may start mid-word)
uint dq_word(uint at)
{
    uint w = at >> 2u, s = 8u * (at & 3u);
    uint lo = a_data[w];
    return s == 0u ? lo : (lo >> s) | (a_data[w + 1u] << (32u - s));
}

// byte i (0..7) of the two words q0, q1
uint byte_of(uint q0, uint q1, uint i) { return ((i < 4u ? q0 : q1) >> (8u * (i & 3u))) & 0xffu; }

// values e0 .. e0 + 7 (e0 a multiple of 8: never across a block) of the
// row at byte row_at, each as dq_value computes it
void unit8(uint row_at, uint e0, out float v[8])
{
    if (DTYPE == 0u) {
        for (uint i = 0u; i < 8u; i++)
            v[i] = uintBitsToFloat(a_data[(row_at >> 2u) + e0 + i]);
    } else if (DTYPE == 1u || DTYPE == 2u) {
        for (uint j = 0u; j < 4u; j++) {
            uint w = dq_word(row_at + 2u * e0 + 4u * j);
            v[2u * j] = DTYPE == 1u ? f16_value(w & 0xffffu) : uintBitsToFloat(w << 16u);
            v[2u * j + 1u] = DTYPE == 1u ? f16_value(w >> 16u) : uintBitsToFloat(w & 0xffff0000u);
        }
    } else if (DTYPE == 8u) {
        uint blk = row_at + 34u * (e0 / 32u), j0 = e0 % 32u;
        float d = f16_value(dq_half(blk));
        uint q0 = dq_word(blk + 2u + j0), q1 = dq_word(blk + 6u + j0);
        for (uint i = 0u; i < 8u; i++) {
            precise float y = float(int(byte_of(q0, q1, i) << 24u) >> 24) * d;
            v[i] = y;
        }
    } else if (DTYPE == 9u) {
        // element j < 16: low nibble of quant byte j; j >= 16: high nibble of byte j - 16
        uint blk = row_at + 18u * (e0 / 32u), j0 = e0 % 32u, first = j0 % 16u, nib = j0 < 16u ? 0u : 4u;
        float d = f16_value(dq_half(blk));
        uint q0 = dq_word(blk + 2u + first), q1 = dq_word(blk + 6u + first);
        for (uint i = 0u; i < 8u; i++) {
            precise float y = float(int((byte_of(q0, q1, i) >> nib) & 15u) - 8) * d;
            v[i] = y;
        }
    } else if (DTYPE == 10u) {
        uint blk = row_at + 144u * (e0 / 256u), i0 = e0 % 256u, s = i0 / 32u, sc, mn;
        if (s < 4u) {
            sc = dq_byte(blk + 4u + s) & 63u;
            mn = dq_byte(blk + 8u + s) & 63u;
        } else {
            sc = (dq_byte(blk + 8u + s) & 15u) | ((dq_byte(blk + s) >> 6u) << 4u);
            mn = (dq_byte(blk + 8u + s) >> 4u) | ((dq_byte(blk + 4u + s) >> 6u) << 4u);
        }
        precise float ds = f16_value(dq_half(blk)) * float(sc);
        precise float ms = f16_value(dq_half(blk + 2u)) * float(mn);
        uint at = blk + 16u + 32u * (s / 2u) + i0 % 32u, nib = 4u * (s & 1u);
        uint q0 = dq_word(at), q1 = dq_word(at + 4u);
        for (uint i = 0u; i < 8u; i++) {
            precise float y = ds * float((byte_of(q0, q1, i) >> nib) & 15u) - ms;
            v[i] = y;
        }
    } else {
        uint blk = row_at + 210u * (e0 / 256u), i0 = e0 % 256u;
        uint h = i0 / 128u, k = (i0 % 128u) / 32u, l0 = i0 % 32u;
        precise float ds = f16_value(dq_half(blk + 208u)) * float(dq_sbyte(blk + 192u + i0 / 16u));
        uint at_low = blk + 64u * h + 32u * (k & 1u) + l0, at_high = blk + 128u + 32u * h + l0;
        uint lo0 = dq_word(at_low), lo1 = dq_word(at_low + 4u), hi0 = dq_word(at_high), hi1 = dq_word(at_high + 4u);
        for (uint i = 0u; i < 8u; i++) {
            uint low = (byte_of(lo0, lo1, i) >> (4u * (k >> 1u))) & 15u;
            uint high = (byte_of(hi0, hi1, i) >> (2u * k)) & 3u;
            precise float y = ds * float(int(low | (high << 4u)) - 32);
            v[i] = y;
        }
    }
}

// values 8 u .. 8 u + 7 of the row (zeros past pc.k: a row's last unit may
// be partial where k is not a multiple of 8, f32 and halves only)
void values_of(uint row_at, uint u, out float v[8])
{
    if (8u * u + 8u <= pc.k) {
        unit8(row_at, 8u * u, v);
        return;
    }
    for (uint i = 0u; i < 8u; i++)
        v[i] = 8u * u + i < pc.k ? dq_value(row_at, 8u * u + i) : 0.0;
}

void main()
{
    uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
    bool live = row < pc.m;
    uint row_at = pc.oa + row * pc.aux;
    // magnitudes compared as bits: NaN and inf sort above every finite value
    uint most = 0u, units = (pc.k + 7u) / 8u;
    float v[8];
    for (uint u = t; live && u < units; u += WG) {
        values_of(row_at, u, v);
        for (uint i = 0u; i < 8u; i++)
            most = max(most, floatBitsToUint(v[i]) & 0x7fffffffu);
    }
    part[t] = most;
    barrier();
    for (uint half_ = WG / 2u; half_ > 0u; half_ /= 2u) {
        if (t < half_)
            part[t] = max(part[t], part[t + half_]);
        barrier();
    }
    uint top = part[0];
    int shift = top != 0u && top < 0x7f800000u ? 15 - exponent_of(top) : 0;
    if (t == 0u)
        y_words[pc.oc + row] = uint(-shift);
    uint first = (pc.oy + row * (pc.n / 2u)) / 4u;
    for (uint u = t; u < pc.n / 8u; u += WG) {
        for (uint i = 0u; i < 8u; i++)
            v[i] = 0.0;
        if (live && u < units)
            values_of(row_at, u, v);
        uvec4 w;
        for (uint j = 0u; j < 4u; j++)
            w[j] = packHalf2x16(vec2(scaled(v[2u * j], shift), scaled(v[2u * j + 1u], shift)));
        y_units[first + u] = w;
    }
}

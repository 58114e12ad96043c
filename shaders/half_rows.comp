/* SPDX-License-Identifier: MIT */
#version 450
// half_rows.comp - rows of float32 activations or of a weight (f16, bf16,
// Q8_0, Q4_0, Q4_K, Q6_K: DTYPE, as rayo_dtype numbers them) to half
// precision, each row multiplied by a power of two of its own (the prompt
// matmul's f16 copies, plugins/vulkan/vk-half-prompt.c).  A weight's blocks
// are decoded here (dequant.glsl: the float values get_rows makes), so no
// float32 copy of the weight is written and read back.
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
// Push constants: m rows (pc.m real ones; gl_NumWorkGroups.x in all), k
// real columns, n padded columns (even); oa: the source's byte offset, aux
// its row stride in bytes; oy: the copy's word offset in binding y (two
// halves a word), oc: the exponent table's word offset in binding y.
// Its own view of the buffers: the source is read and the copy and the
// exponents are written as words (a float load or store of such bits could
// be flushed as a denormal).
#extension GL_GOOGLE_include_directive : require
layout(std430, set = 0, binding = 0) readonly buffer BufA { uint a_data[]; };
layout(std430, set = 0, binding = 3) buffer BufY { uint y_words[]; };
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

void main()
{
    uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
    bool live = row < pc.m;
    uint row_at = pc.oa + row * pc.aux;
    // magnitudes compared as bits: NaN and inf sort above every finite value
    uint most = 0u;
    for (uint c = t; live && c < pc.k; c += WG)
        most = max(most, floatBitsToUint(dq_value(row_at, c)) & 0x7fffffffu);
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
    uint words = pc.n / 2u;
    for (uint w = t; w < words; w += WG) {
        uint c = 2u * w;
        vec2 v = vec2(0.0);
        if (live && c < pc.k)
            v.x = scaled(dq_value(row_at, c), shift);
        if (live && c + 1u < pc.k)
            v.y = scaled(dq_value(row_at, c + 1u), shift);
        y_words[pc.oy + row * words + w] = packHalf2x16(v);
    }
}

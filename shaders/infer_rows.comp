/* SPDX-License-Identifier: MIT */
#version 450
// infer_rows.comp - the row ops of a decoder layer: the gated units
// (swiglu, geglu, geglu_tanh), get_rows (embedding lookup, any dtype to
// f32, bit-exact), rope, and convert (f32 <-> f16 / bf16, blocks -> f32,
// bit-exact).  A workgroup per row (GLU, get_rows: an output row; rope: a
// token; convert: a chunk of CHUNK elements), invocations across its
// elements (GLU, rope: the grid's y splits them among workgroups); rows
// past the grid are taken in a loop.
//
// Push constants (vk_push): n, m, k as in rayo_call; oa, ob, oy: offsets
// of a, b, y (a of get_rows in bytes); ext[0..2]: row strides of a, b, y
// (elements; rope: token strides of x and y); rope: ext[3] n_heads,
// ext[4] head_dim, ext[5] rot_dims, ext[6] mode, ext[7..8] head strides of
// x and y, aux: word offset of the inverse frequencies (doubles) in s.

#extension GL_GOOGLE_include_directive : require
#include "rmath.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufA { uint a_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { uint b_data[]; };
layout(std430, set = 0, binding = 3) buffer BufY { uint y_data[]; };
layout(std430, set = 0, binding = 4) buffer BufS { uint s_data[]; };

layout(push_constant) uniform PushConstants {
    uint n, m, k;
    uint oa, ob, oc, oy;
    float alpha, beta;
    uint flags, aux;
    uint lda, ldb, ldy, n_heads, head_dim, rot_dims, mode, head_x, head_y;
} pc;

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 94u;    // rayo_op (OP_SWIGLU)
layout(constant_id = 2) const uint DTYPE = 0u;  // get_rows: the table's dtype; convert: x's
layout(constant_id = 3) const uint YDTYPE = 0u; // convert: y's dtype

const uint WG = gl_WorkGroupSize.x;
#include "rayo-op-ids.glsl"
const uint CHUNK = 4096u;       // convert: elements per workgroup row (a multiple of 256)
const uint F32 = 0u, F16 = 1u, BF16 = 2u, Q8_0 = 8u, Q4_0 = 9u, Q4_K = 10u, Q6_K = 11u;
#include "dequant.glsl"
#include "glu.glsl"
#include "rope.glsl"

float a_float(uint i) { return uintBitsToFloat(a_data[i]); }

// GLU and rope: the grid's y spreads a row's elements over several
// workgroups (a decode step has one row: one workgroup would do it all).
uint first_element() { return gl_WorkGroupID.y * WG + gl_LocalInvocationID.x; }
uint element_step() { return gl_NumWorkGroups.y * WG; }
void put(uint i, float v) { y_data[i] = floatBitsToUint(v); }

// ---- gated units ---------------------------------------------------------------

void glu_row(uint r)
{
    for (uint j = first_element(); j < pc.n; j += element_step()) {
        float g = a_float(pc.oa + r * pc.lda + j);
        float u = uintBitsToFloat(b_data[pc.ob + r * pc.ldb + j]);
        put(pc.oy + r * pc.ldy + j, glu_value(OP, g, u));
    }
}

// ---- get_rows ---------------------------------------------------------------------

// Row r of y = table row idx[r] (every index checked: indices_ok).
// pc.lda: table row bytes.
void get_row(uint r)
{
    uint row_at = pc.oa + b_data[pc.ob + r] * pc.lda;
    for (uint j = gl_LocalInvocationID.x; j < pc.n; j += WG)
        put(pc.oy + r * pc.ldy + j, dq_value(row_at, j));
}

shared bool bad_index;

// Whether every index is in [0, k).  The host checks a host call's indices;
// a batch's are in device memory, so each workgroup checks them all before
// it writes a row: with a bad one no row is written (y stays as it was)
// and workgroup 0 sets the fault word s[pc.aux], which the host reads when
// the batch is waited for (RAYO_E_INVALID).
bool indices_ok()
{
    if (gl_LocalInvocationID.x == 0u)
        bad_index = false;
    barrier();
    for (uint r = gl_LocalInvocationID.x; r < pc.m; r += WG)
        if (b_data[pc.ob + r] >= pc.k) // an int below 0 is a uint past k
            bad_index = true;
    barrier();
    if (bad_index && gl_WorkGroupID.x == 0u && gl_LocalInvocationID.x == 0u)
        s_data[pc.aux] = 1u;
    return !bad_index;
}

// ---- convert -----------------------------------------------------------------------
// Bits in, bits out: a float32 subnormal is never an operand of float
// arithmetic, so a device that flushes them still converts them exactly.

// m / 2^shift rounded to nearest, ties to even (1 <= shift <= 31).
uint shift_round_even(uint m, uint shift)
{
    uint q = m >> shift, rem = m & ((1u << shift) - 1u), half_way = 1u << (shift - 1u);
    return q + ((rem > half_way || (rem == half_way && (q & 1u) != 0u)) ? 1u : 0u);
}

// rayo_f32_to_f16 of rayo-dtype.h, on the bits.
uint f16_bits(uint u)
{
    uint sign = (u >> 16u) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00u | ((a >> 13u) & 0x3ffu);
    if (a >= 0x477ff000u)
        return sign | 0x7c00u;
    if (a < 0x38800000u) {
        uint e = max(a >> 23u, 1u);
        uint m = (a & 0x7fffffu) | ((a >> 23u) != 0u ? 0x800000u : 0u);
        uint shift = 126u - e;
        return shift > 24u ? sign : sign | shift_round_even(m, shift);
    }
    uint r = a + 0x0fffu + ((a >> 13u) & 1u);
    return sign | ((r - 0x38000000u) >> 13u);
}

uint bf16_bits(uint u)
{
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return ((u >> 16u) | 0x40u) & 0xffffu;
    return ((u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u) & 0xffffu;
}

// Output word w of y (pc.oy: y's byte offset, even) from x's element bits;
// a word y shares with its neighbours (first or last) is updated half by
// half with atomics, so their bytes stay as they were.
void to_half_word(uint w)
{
    uint bits = 0u, mask = 0u;
    for (uint h = 0u; h < 2u; h++) {
        int e = (int(4u * w + 2u * h) - int(pc.oy)) / 2;
        if (e < 0 || uint(e) >= pc.n)
            continue;
        uint u = a_data[pc.oa / 4u + uint(e)];
        bits |= (YDTYPE == F16 ? f16_bits(u) : bf16_bits(u)) << (16u * h);
        mask |= 0xffffu << (16u * h);
    }
    if (mask == 0xffffffffu) {
        y_data[w] = bits;
    } else if (mask != 0u) {
        atomicAnd(y_data[w], ~mask);
        atomicOr(y_data[w], bits);
    }
}

void convert_chunk(uint r)
{
    if (YDTYPE == F32) {        // pc.lda: bytes of CHUNK elements of x
        uint e0 = r * CHUNK, count = min(CHUNK, pc.n - e0);
        for (uint j = gl_LocalInvocationID.x; j < count; j += WG) {
            uint e = e0 + j;
            uint bits = DTYPE == BF16 ? dq_half(pc.oa + 2u * e) << 16u
                                      : floatBitsToUint(dq_value(pc.oa + r * pc.lda, j));
            y_data[pc.oy / 4u + e] = bits;
        }
        return;
    }
    uint first = pc.oy / 4u, last = (pc.oy + 2u * pc.n - 1u) / 4u;  // words of y
    for (uint w = first + r * CHUNK + gl_LocalInvocationID.x; w <= min(last, first + r * CHUNK + CHUNK - 1u);
         w += WG)
        to_half_word(w);
}

// ---- rope ------------------------------------------------------------------------

double inv_freq(uint i) { return packDouble2x32(uvec2(s_data[pc.aux + 2u * i], s_data[pc.aux + 2u * i + 1u])); }

void rope_token(uint t)
{
    double pos = double(int(b_data[pc.ob + t]));
    uint half_rot = pc.rot_dims / 2u, per_head = pc.head_dim - half_rot;
    // per head: half_rot pairs, then head_dim - rot_dims copied dimensions
    for (uint e = first_element(); e < pc.n_heads * per_head; e += element_step()) {
        uint h = e / per_head, i = e % per_head;
        uint x0 = pc.oa + t * pc.lda + h * pc.head_x, y0 = pc.oy + t * pc.ldy + h * pc.head_y;
        if (i >= half_rot) {
            uint d = pc.rot_dims + (i - half_rot);
            put(y0 + d, a_float(x0 + d));
            continue;
        }
        uint iu = pc.mode == 1u ? i : 2u * i, iv = pc.mode == 1u ? i + half_rot : 2u * i + 1u;
        vec2 uv = rope_pair(pos, inv_freq(i), a_float(x0 + iu), a_float(x0 + iv));
        put(y0 + iu, uv.x);
        put(y0 + iv, uv.y);
    }
}

void main()
{
    if (OP == OP_GET_ROWS && !indices_ok())
        return;
    for (uint r = gl_WorkGroupID.x; r < pc.m; r += gl_NumWorkGroups.x) {
        if (OP == OP_CONVERT)
            convert_chunk(r);
        else if (OP == OP_ROPE)
            rope_token(r);
        else if (OP == OP_GET_ROWS)
            get_row(r);
        else
            glu_row(r);
    }
}

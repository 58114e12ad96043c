#version 450
// gemv_quant.comp - y = alpha A x + beta y with A (m x n) in f16, bf16,
// Q8_0, Q4_0, Q4_K or Q6_K (GGUF blocks as stored), x and y f32.
//
// Decode is memory-bound: the shader reads each weight byte once.  One
// subgroup per row; each invocation takes "units" of the row (8 halves, a
// Q8_0/Q4_0 block, a quarter of a Q4_K/Q6_K block = 64 values), strided by
// the subgroup size so that neighbouring invocations read neighbouring
// bytes; subgroupAdd joins their sums.  A is a uint array read with byte
// arithmetic: blocks of 34, 18 and 210 bytes sit at any byte offset (an
// operand may start at any byte), so loads funnel-shift two words where a
// field is not word-aligned; 16-byte-aligned loads take one uvec4.
//
// Push constants (common.glsl): n, m; k = bytes between row starts;
// oa = byte offset of A; ob, oy = word offsets of x and y.
// Half-precision values are decoded with integer arithmetic: exact for
// subnormals too (a device may flush f16 denormals in its own conversion).

#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define RAYO_BUFFER_TYPE uint
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufA4 { uvec4 a_vec4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { vec4 b_vec4[]; };

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DTYPE = 1u;   // rayo_dtype of A

const uint F16 = 1u, BF16 = 2u, Q8_0 = 8u, Q4_0 = 9u, Q4_K = 10u, Q6_K = 11u;

// ---- loads ---------------------------------------------------------------------

// The 4 bytes of A from byte `at` (any alignment), little-endian.
uint word_at(uint at)
{
    uint w = at >> 2u, r = (at & 3u) * 8u;
    if (r == 0u)
        return a_data[w];
    return (a_data[w] >> r) | (a_data[w + 1u] << (32u - r));
}

// The 2 bytes of A from byte `at`; reads the next word only when they span it.
uint half_at(uint at)
{
    uint w = at >> 2u, r = (at & 3u) * 8u;
    if (r < 24u)
        return (a_data[w] >> r) & 0xffffu;
    return (a_data[w] >> 24u) | ((a_data[w + 1u] & 0xffu) << 8u);
}

// 16 bytes of A from byte `at`.
uvec4 load16(uint at)
{
    if ((at & 15u) == 0u)
        return a_vec4[at >> 4u];
    uint w = at >> 2u, r = (at & 3u) * 8u;
    uvec4 v = uvec4(a_data[w], a_data[w + 1u], a_data[w + 2u], a_data[w + 3u]);
    if (r == 0u)
        return v;
    uint e = a_data[w + 4u], l = 32u - r;
    return uvec4((v.x >> r) | (v.y << l), (v.y >> r) | (v.z << l),
                 (v.z >> r) | (v.w << l), (v.w >> r) | (e << l));
}

float x_at(uint i) { return uintBitsToFloat(b_data[pc.ob + i]); }

// x[i..i+3] (i a multiple of 4 for every caller)
vec4 x4(uint i)
{
    if ((pc.ob & 3u) == 0u)
        return b_vec4[(pc.ob + i) >> 2u];
    return vec4(x_at(i), x_at(i + 1u), x_at(i + 2u), x_at(i + 3u));
}

// ---- halves --------------------------------------------------------------------

float f16_value(uint h)
{
    uint sign = (h & 0x8000u) << 16u, e = (h >> 10u) & 0x1fu, m = h & 0x3ffu;
    if (e == 0u)                // zero or subnormal: m * 2^-24, a normal float
        return uintBitsToFloat(sign | floatBitsToUint(float(m) * 5.9604644775390625e-8));
    if (e == 31u)
        return uintBitsToFloat(sign | 0x7f800000u | (m << 13u));
    return uintBitsToFloat(sign | ((e + 112u) << 23u) | (m << 13u));
}

float half_value(uint h) { return DTYPE == BF16 ? uintBitsToFloat(h << 16u) : f16_value(h); }

vec2 halves(uint w) { return vec2(half_value(w & 0xffffu), half_value(w >> 16u)); }

// Unit u of a half row: elements 8u .. 8u + 7 (fewer at the row's end).
float unit_half(uint row_at, uint u)
{
    uint e0 = 8u * u, at = row_at + 16u * u;
    if (e0 + 8u <= pc.n) {
        uvec4 w = load16(at);
        vec4 lo = x4(e0), hi = x4(e0 + 4u);
        return dot(vec4(halves(w.x), halves(w.y)), lo) + dot(vec4(halves(w.z), halves(w.w)), hi);
    }
    float s = 0.0;
    for (uint e = e0; e < pc.n; e++)
        s += half_value(half_at(row_at + 2u * e)) * x_at(e);
    return s;
}

// ---- 32-value blocks -------------------------------------------------------------

vec4 bytes_signed(uint w)
{
    // each byte moved to the top, then an arithmetic shift extends its sign
    return vec4(ivec4(uvec4(w) << uvec4(24u, 16u, 8u, 0u)) >> 24);
}

vec4 nibbles(uint w, uint shift)
{
    return vec4((uvec4(w) >> uvec4(shift, shift + 8u, shift + 16u, shift + 24u)) & 15u);
}

// Q8_0 block u: d (f16), 32 signed bytes.
float unit_q8_0(uint row_at, uint u)
{
    uint at = row_at + 34u * u, x0 = 32u * u;
    uvec4 q0 = load16(at + 2u), q1 = load16(at + 18u);
    float part = dot(bytes_signed(q0.x), x4(x0)) + dot(bytes_signed(q0.y), x4(x0 + 4u)) +
                 dot(bytes_signed(q0.z), x4(x0 + 8u)) + dot(bytes_signed(q0.w), x4(x0 + 12u)) +
                 dot(bytes_signed(q1.x), x4(x0 + 16u)) + dot(bytes_signed(q1.y), x4(x0 + 20u)) +
                 dot(bytes_signed(q1.z), x4(x0 + 24u)) + dot(bytes_signed(q1.w), x4(x0 + 28u));
    return f16_value(half_at(at)) * part;
}

// Q4_0 block u: d (f16), 16 bytes: value j low nibble, value j + 16 high.
float unit_q4_0(uint row_at, uint u)
{
    uint at = row_at + 18u * u, x0 = 32u * u;
    uvec4 q = load16(at + 2u);
    vec4 eight = vec4(8.0);
    float part = 0.0;
    for (uint t = 0u; t < 4u; t++) {
        part += dot(nibbles(q[t], 0u) - eight, x4(x0 + 4u * t));
        part += dot(nibbles(q[t], 4u) - eight, x4(x0 + 16u + 4u * t));
    }
    return f16_value(half_at(at)) * part;
}

// ---- 256-value blocks (a unit is a quarter: 64 values) ------------------------------

// Byte i (0..11) of a Q4_K block's scales, held in three words.
uint scale_byte(uvec3 s, uint i) { return (s[i >> 2u] >> (8u * (i & 3u))) & 0xffu; }

// Q4_K: quarter c of block b holds sub-blocks 2c (low nibbles of 32 bytes)
// and 2c + 1 (high nibbles): (d sc) sum(q x) - (dmin m) sum(x) for each.
float unit_q4_k(uint row_at, uint u)
{
    uint b = u >> 2u, c = u & 3u, at = row_at + 144u * b, x0 = 256u * b + 64u * c;
    uvec3 sc = uvec3(word_at(at + 4u), word_at(at + 8u), word_at(at + 12u));
    uvec4 q0 = load16(at + 16u + 32u * c), q1 = load16(at + 32u + 32u * c);
    float qx0 = 0.0, qx1 = 0.0, sx0 = 0.0, sx1 = 0.0;
    for (uint t = 0u; t < 8u; t++) {
        uint w = t < 4u ? q0[t] : q1[t - 4u];
        vec4 xl = x4(x0 + 4u * t), xh = x4(x0 + 32u + 4u * t);
        qx0 += dot(nibbles(w, 0u), xl);
        qx1 += dot(nibbles(w, 4u), xh);
        sx0 += xl.x + xl.y + xl.z + xl.w;
        sx1 += xh.x + xh.y + xh.z + xh.w;
    }
    uint j = 2u * c;            // j < 4 for c < 2: 6-bit fields; else split fields
    float s0, m0, s1, m1;
    if (c < 2u) {
        s0 = float(scale_byte(sc, j) & 63u);      m0 = float(scale_byte(sc, j + 4u) & 63u);
        s1 = float(scale_byte(sc, j + 1u) & 63u); m1 = float(scale_byte(sc, j + 5u) & 63u);
    } else {
        s0 = float((scale_byte(sc, j + 4u) & 15u) | ((scale_byte(sc, j - 4u) >> 6u) << 4u));
        m0 = float((scale_byte(sc, j + 4u) >> 4u) | ((scale_byte(sc, j) >> 6u) << 4u));
        s1 = float((scale_byte(sc, j + 5u) & 15u) | ((scale_byte(sc, j - 3u) >> 6u) << 4u));
        m1 = float((scale_byte(sc, j + 5u) >> 4u) | ((scale_byte(sc, j + 1u) >> 6u) << 4u));
    }
    uint dd = word_at(at);
    float d = f16_value(dd & 0xffffu), dmin = f16_value(dd >> 16u);
    return (d * s0) * qx0 - (dmin * m0) * sx0 + (d * s1) * qx1 - (dmin * m1) * sx1;
}

// The 4 six-bit codes (minus 32) of bytes p = 0..3 for quarter k of a Q6_K
// half: low nibbles from la (k = 0, 2: low/high of ql[l], k = 1, 3: of
// ql[l + 32]), high two bits from bits 2k of qh[l].
vec4 q6_codes(uint lo, uint hb, uint k)
{
    uvec4 p = uvec4(0u, 8u, 16u, 24u);
    uvec4 low = (uvec4(lo) >> (p + 4u * (k >> 1u))) & 15u;
    uvec4 high = (uvec4(hb) >> (p + 2u * k)) & 3u;
    return vec4(low | (high << 4u)) - vec4(32.0);
}

// Q6_K: quarter (h, g) of block b = values 128h + 32k + 16g + l, k < 4, l < 16.
float unit_q6_k(uint row_at, uint u)
{
    uint b = u >> 2u, h = (u >> 1u) & 1u, g = u & 1u, at = row_at + 210u * b;
    uvec4 la = load16(at + 64u * h + 16u * g), lb = load16(at + 64u * h + 32u + 16u * g);
    uvec4 qh = load16(at + 128u + 32u * h + 16u * g);
    uint x0 = 256u * b + 128u * h + 16u * g;
    vec4 part = vec4(0.0);      // one sum per k (each has its own scale)
    for (uint t = 0u; t < 4u; t++) {
        part.x += dot(q6_codes(la[t], qh[t], 0u), x4(x0 + 4u * t));
        part.y += dot(q6_codes(lb[t], qh[t], 1u), x4(x0 + 32u + 4u * t));
        part.z += dot(q6_codes(la[t], qh[t], 2u), x4(x0 + 64u + 4u * t));
        part.w += dot(q6_codes(lb[t], qh[t], 3u), x4(x0 + 96u + 4u * t));
    }
    uint s_lo = word_at(at + 192u + 8u * h + g), s_hi = word_at(at + 196u + 8u * h + g);
    vec4 sc = vec4(bitfieldExtract(int(s_lo), 0, 8), bitfieldExtract(int(s_lo), 16, 8),
                   bitfieldExtract(int(s_hi), 0, 8), bitfieldExtract(int(s_hi), 16, 8));
    return f16_value(half_at(at + 208u)) * dot(sc, part);
}

// ---- the row loop -------------------------------------------------------------------

uint units_per_row()
{
    if (DTYPE == F16 || DTYPE == BF16)
        return (pc.n + 7u) / 8u;
    if (DTYPE == Q8_0 || DTYPE == Q4_0)
        return pc.n / 32u;
    return pc.n / 64u;
}

float unit_dot(uint row_at, uint u)
{
    if (DTYPE == Q8_0) return unit_q8_0(row_at, u);
    if (DTYPE == Q4_0) return unit_q4_0(row_at, u);
    if (DTYPE == Q4_K) return unit_q4_k(row_at, u);
    if (DTYPE == Q6_K) return unit_q6_k(row_at, u);
    return unit_half(row_at, u);
}

void main()
{
    uint units = units_per_row();
    uint first = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    uint step = gl_NumWorkGroups.x * gl_NumSubgroups;
    for (uint row = first; row < pc.m; row += step) {
        uint row_at = pc.oa + row * pc.k;
        float s = 0.0;
        for (uint u = gl_SubgroupInvocationID; u < units; u += gl_SubgroupSize)
            s += unit_dot(row_at, u);
        s = subgroupAdd(s);
        if (subgroupElect()) {
            float r = pc.alpha * s;
            if (pc.beta != 0.0)
                r = fma(pc.beta, uintBitsToFloat(y_data[pc.oy + row]), r);
            y_data[pc.oy + row] = floatBitsToUint(r);
        }
    }
}

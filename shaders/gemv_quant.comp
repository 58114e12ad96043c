#version 450
// gemv_quant.comp - y = alpha A x + beta y with A (m x n) in f16, bf16,
// Q8_0, Q4_0, Q4_K or Q6_K (GGUF blocks as stored), x and y f32.
//
// Decode is memory-bound: the shader reads each weight byte once and keeps
// many loads in flight.  ROW_THREADS invocations (one or more whole
// subgroups) share ROWS rows; each takes "units" of them (16 halves, a Q8_0 or
// Q4_0 block, a quarter of a Q4_K or Q6_K block = 64 values), strided so
// that neighbouring invocations read neighbouring bytes; subgroupAdd and a
// few shared floats join their sums.  The host picks ROW_THREADS near the
// number of units, so that short rows do not leave most invocations idle.
//
// A is a uint array read with byte arithmetic: blocks of 34, 18 and 210
// bytes sit at any byte offset (an operand may start at any byte), so those
// loads funnel-shift neighbouring words (the same code in every invocation:
// no divergence); where the host says every row is 16-byte aligned (f16,
// bf16, Q4_K rows), loads are uvec4.  Small integers become floats by the
// exponent trick (2^23 + q as bits, minus 2^23: exact, and cheaper than
// an int-to-float conversion on GPUs).  f16 is decoded by half.glsl.
//
// Push constants (common.glsl): n, m; k = bytes between row starts;
// oa = byte offset of A; ob, oy = word offsets of x and y; aux = the last
// word of A (loads past it are clamped to it).

#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#define RAYO_BUFFER_TYPE uint
#include "common.glsl"
#include "half.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufA4 { uvec4 a_vec4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { vec4 b_vec4[]; };

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DTYPE = 1u;       // rayo_dtype of A
layout(constant_id = 2) const uint ROW_THREADS = 64u; // a multiple of the subgroup size
layout(constant_id = 3) const bool A_ALIGNED = false; // pc.oa and pc.k multiples of 16
layout(constant_id = 4) const bool X_ALIGNED = false; // pc.ob a multiple of 4
layout(constant_id = 5) const uint ROWS = 4u;         // rows per invocation (x reuse)

const uint F16 = 1u, BF16 = 2u, Q8_0 = 8u, Q4_0 = 9u, Q4_K = 10u, Q6_K = 11u;
const uint MAGIC = 0x4b000000u;  // the float 2^23; its low bits hold a small integer
const float TWO23 = 8388608.0;

shared float row_part[gl_WorkGroupSize.x];

// ---- loads of A ------------------------------------------------------------------

uint word(uint w) { return a_data[min(w, pc.aux)]; }

// The 4 bytes of A from byte `at` (any alignment): two words, funnel-shifted
// (a shift by 32 is avoided: the high word moves by 1 and then 31 - r).
uint word_at(uint at)
{
    uint w = at >> 2u, r = (at & 3u) * 8u;
    return (word(w) >> r) | ((word(w + 1u) << 1u) << (31u - r));
}

uint half_at(uint at) { return word_at(at) & 0xffffu; }

// 16 bytes of A from byte `at` (any alignment).
uvec4 load16(uint at)
{
    uint w = at >> 2u, r = (at & 3u) * 8u, l = 31u - r;
    uint v0 = word(w), v1 = word(w + 1u), v2 = word(w + 2u), v3 = word(w + 3u), v4 = word(w + 4u);
    return uvec4((v0 >> r) | ((v1 << 1u) << l), (v1 >> r) | ((v2 << 1u) << l),
                 (v2 >> r) | ((v3 << 1u) << l), (v3 >> r) | ((v4 << 1u) << l));
}

// 16 bytes from `at`, a multiple of 16 when A_ALIGNED.
uvec4 load16_row(uint at) { return A_ALIGNED ? a_vec4[at >> 4u] : load16(at); }

// ---- x -----------------------------------------------------------------------------

float x_at(uint i) { return uintBitsToFloat(b_data[pc.ob + i]); }

vec4 x4(uint i)                 // x[i..i+3], i a multiple of 4
{
    if (X_ALIGNED)
        return b_vec4[(pc.ob + i) >> 2u];
    return vec4(x_at(i), x_at(i + 1u), x_at(i + 2u), x_at(i + 3u));
}

// ---- small integers and halves -------------------------------------------------------

// The four bytes of w (each < 2^23 after masking) minus `bias`, as floats.
vec4 bytes_minus(uint w, uvec4 shift, uint mask, float bias)
{
    return uintBitsToFloat(uvec4(MAGIC) | ((uvec4(w) >> shift) & mask)) - vec4(TWO23 + bias);
}

const uvec4 BYTE_SHIFT = uvec4(0u, 8u, 16u, 24u);

vec2 halves(uint w)
{
    if (DTYPE == BF16)
        return vec2(uintBitsToFloat(w << 16u), uintBitsToFloat(w & 0xffff0000u));
    return vec2(f16_value(w & 0xffffu), f16_value(w >> 16u));
}

float half_value(uint h) { return halves(h).x; }

// Each unit is computed for ROWS rows at once, with its x values loaded
// once into xv (held in registers): x is read from the cache for every
// weight, and without this reuse its traffic, not A's, would set the speed.
// xv holds the unit's x values in the order its unit function reads them.

// Units of a half row: elements 16u .. 16u + 15; the last may be partial.
void x_half(uint u, out vec4 xv[16])
{
    [[unroll]] for (uint t = 0u; t < 4u; t++)
        xv[t] = x4(16u * u + 4u * t);
}

float unit_half(uint row_at, uint u, vec4 xv[16])
{
    uint at = row_at + 32u * u;
    uvec4 w0 = load16_row(at), w1 = load16_row(at + 16u);
    return dot(vec4(halves(w0.x), halves(w0.y)), xv[0]) +
           dot(vec4(halves(w0.z), halves(w0.w)), xv[1]) +
           dot(vec4(halves(w1.x), halves(w1.y)), xv[2]) +
           dot(vec4(halves(w1.z), halves(w1.w)), xv[3]);
}

float tail_half(uint row_at, uint u)
{
    float s = 0.0;
    for (uint e = 16u * u; e < pc.n; e++)
        s += half_value(half_at(row_at + 2u * e)) * x_at(e);
    return s;
}

// ---- 32-value blocks -----------------------------------------------------------------

void x_block32(uint u, out vec4 xv[16])
{
    [[unroll]] for (uint t = 0u; t < 8u; t++)
        xv[t] = x4(32u * u + 4u * t);
}

// Q8_0 block u: d (f16), 32 signed bytes (as byte ^ 0x80 minus 128).
float unit_q8_0(uint row_at, uint u, vec4 xv[16])
{
    uint at = row_at + 34u * u;
    uvec4 q[2] = uvec4[2](load16(at + 2u) ^ 0x80808080u, load16(at + 18u) ^ 0x80808080u);
    float part = 0.0;
    [[unroll]] for (uint t = 0u; t < 8u; t++)
        part += dot(bytes_minus(q[t >> 2u][t & 3u], BYTE_SHIFT, 0xffu, 128.0), xv[t]);
    return f16_value(half_at(at)) * part;
}

// Q4_0 block u: d (f16), 16 bytes: value j low nibble, value j + 16 high.
float unit_q4_0(uint row_at, uint u, vec4 xv[16])
{
    uint at = row_at + 18u * u;
    uvec4 q = load16(at + 2u);
    float part = 0.0;
    [[unroll]] for (uint t = 0u; t < 4u; t++) {
        part += dot(bytes_minus(q[t], BYTE_SHIFT, 15u, 8.0), xv[t]);
        part += dot(bytes_minus(q[t], BYTE_SHIFT + 4u, 15u, 8.0), xv[4u + t]);
    }
    return f16_value(half_at(at)) * part;
}

// ---- 256-value blocks (a unit is a quarter: 64 values) --------------------------------

// Q4_K quarter u = (block b, c): values 256b + 64c .. + 63.
void x_q4_k(uint u, out vec4 xv[16])
{
    [[unroll]] for (uint t = 0u; t < 16u; t++)
        xv[t] = x4(64u * u + 4u * t);
}

// Byte i (0..11) of a Q4_K block's scales, held in three words.
uint scale_byte(uvec3 s, uint i) { return (s[i >> 2u] >> (8u * (i & 3u))) & 0xffu; }

// Q4_K: quarter c of block b holds sub-blocks 2c (low nibbles of 32 bytes)
// and 2c + 1 (high nibbles): (d sc) sum(q x) - (dmin m) sum(x) for each;
// sx = the two sums of x (the same for every row).
float unit_q4_k(uint row_at, uint u, vec4 xv[16], vec2 sx)
{
    uint b = u >> 2u, c = u & 3u, at = row_at + 144u * b;
    uvec4 head = load16_row(at);            // d, dmin, scales[0..11]
    uvec4 q[2] = uvec4[2](load16_row(at + 16u + 32u * c), load16_row(at + 32u + 32u * c));
    float qx0 = 0.0, qx1 = 0.0;
    [[unroll]] for (uint t = 0u; t < 8u; t++) {
        uint w = q[t >> 2u][t & 3u];
        qx0 += dot(bytes_minus(w, BYTE_SHIFT, 15u, 0.0), xv[t]);
        qx1 += dot(bytes_minus(w, BYTE_SHIFT + 4u, 15u, 0.0), xv[8u + t]);
    }
    uvec3 sc = head.yzw;
    uint j = 2u * c;            // sub-blocks 0..3: 6-bit fields; 4..7: split fields
    uint s0, m0, s1, m1;
    if (c < 2u) {
        s0 = scale_byte(sc, j) & 63u;      m0 = scale_byte(sc, j + 4u) & 63u;
        s1 = scale_byte(sc, j + 1u) & 63u; m1 = scale_byte(sc, j + 5u) & 63u;
    } else {
        s0 = (scale_byte(sc, j + 4u) & 15u) | ((scale_byte(sc, j - 4u) >> 6u) << 4u);
        m0 = (scale_byte(sc, j + 4u) >> 4u) | ((scale_byte(sc, j) >> 6u) << 4u);
        s1 = (scale_byte(sc, j + 5u) & 15u) | ((scale_byte(sc, j - 3u) >> 6u) << 4u);
        m1 = (scale_byte(sc, j + 5u) >> 4u) | ((scale_byte(sc, j + 1u) >> 6u) << 4u);
    }
    float d = f16_value(head.x & 0xffffu), dmin = f16_value(head.x >> 16u);
    return (d * float(s0)) * qx0 - (dmin * float(m0)) * sx.x +
           (d * float(s1)) * qx1 - (dmin * float(m1)) * sx.y;
}

// Q6_K quarter u = (block b, half h, g): values 128h + 32k + 16g + l, k < 4,
// l < 16; xv[4k + t] holds l = 4t..4t+3.
void x_q6_k(uint u, out vec4 xv[16])
{
    uint x0 = 256u * (u >> 2u) + 128u * ((u >> 1u) & 1u) + 16u * (u & 1u);
    [[unroll]] for (uint t = 0u; t < 16u; t++)
        xv[t] = x4(x0 + 32u * (t >> 2u) + 4u * (t & 3u));
}

// Q6_K: code = low nibble (k = 0, 2: of ql[l], low/high; k = 1, 3: of
// ql[l + 32]) | bits 2k..2k+1 of qh[l] << 4, minus 32.
float unit_q6_k(uint row_at, uint u, vec4 xv[16])
{
    uint b = u >> 2u, h = (u >> 1u) & 1u, g = u & 1u, at = row_at + 210u * b;
    uvec4 la = load16(at + 64u * h + 16u * g), lb = load16(at + 64u * h + 32u + 16u * g);
    uvec4 qh = load16(at + 128u + 32u * h + 16u * g);
    vec4 part = vec4(0.0);      // one sum per k (each has its own scale)
    vec4 bias = vec4(TWO23 + 32.0);
    [[unroll]] for (uint t = 0u; t < 4u; t++) {
        uvec4 hb = (uvec4(qh[t]) >> BYTE_SHIFT) & 0xffu;
        uvec4 a = (uvec4(la[t]) >> BYTE_SHIFT) & 0xffu, c = (uvec4(lb[t]) >> BYTE_SHIFT) & 0xffu;
        uvec4 code0 = (a & 15u) | ((hb & 3u) << 4u);
        uvec4 code1 = (c & 15u) | (((hb >> 2u) & 3u) << 4u);
        uvec4 code2 = (a >> 4u) | (((hb >> 4u) & 3u) << 4u);
        uvec4 code3 = (c >> 4u) | ((hb >> 6u) << 4u);
        part.x += dot(uintBitsToFloat(uvec4(MAGIC) | code0) - bias, xv[t]);
        part.y += dot(uintBitsToFloat(uvec4(MAGIC) | code1) - bias, xv[4u + t]);
        part.z += dot(uintBitsToFloat(uvec4(MAGIC) | code2) - bias, xv[8u + t]);
        part.w += dot(uintBitsToFloat(uvec4(MAGIC) | code3) - bias, xv[12u + t]);
    }
    uint s_lo = word_at(at + 192u + 8u * h + g), s_hi = word_at(at + 196u + 8u * h + g);
    vec4 sc = vec4(bitfieldExtract(int(s_lo), 0, 8), bitfieldExtract(int(s_lo), 16, 8),
                   bitfieldExtract(int(s_hi), 0, 8), bitfieldExtract(int(s_hi), 16, 8));
    return f16_value(half_at(at + 208u)) * dot(sc, part);
}

// ---- the row loop ---------------------------------------------------------------------

uint units_per_row()
{
    if (DTYPE == F16 || DTYPE == BF16)
        return (pc.n + 15u) / 16u;
    if (DTYPE == Q8_0 || DTYPE == Q4_0)
        return pc.n / 32u;
    return pc.n / 64u;
}

// Adds unit u of rows first, first + 1, ... (below pc.m) to sums.
void add_unit(uint first, uint u, inout float sums[ROWS])
{
    vec4 xv[16];
    vec2 sx = vec2(0.0);
    if (DTYPE == F16 || DTYPE == BF16) {
        if (16u * u + 16u > pc.n) {             // the partial last unit
            [[unroll]] for (uint r = 0u; r < ROWS; r++)
                if (first + r < pc.m)
                    sums[r] += tail_half(pc.oa + (first + r) * pc.k, u);
            return;
        }
        x_half(u, xv);
    } else if (DTYPE == Q8_0 || DTYPE == Q4_0) {
        x_block32(u, xv);
    } else if (DTYPE == Q4_K) {
        x_q4_k(u, xv);
        [[unroll]] for (uint t = 0u; t < 8u; t++)
            sx += vec2(dot(xv[t], vec4(1.0)), dot(xv[8u + t], vec4(1.0)));
    } else {
        x_q6_k(u, xv);
    }
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        if (first + r >= pc.m)
            break;
        uint row_at = pc.oa + (first + r) * pc.k;
        if (DTYPE == Q8_0) sums[r] += unit_q8_0(row_at, u, xv);
        else if (DTYPE == Q4_0) sums[r] += unit_q4_0(row_at, u, xv);
        else if (DTYPE == Q4_K) sums[r] += unit_q4_k(row_at, u, xv, sx);
        else if (DTYPE == Q6_K) sums[r] += unit_q6_k(row_at, u, xv);
        else sums[r] += unit_half(row_at, u, xv);
    }
}

// The sum of s over the ROW_THREADS invocations of each row (in lane 0).
float row_sum(float s, uint slot)
{
    s = subgroupAdd(s);
    if (ROW_THREADS <= gl_SubgroupSize)
        return s;
    uint per_row = ROW_THREADS / gl_SubgroupSize;
    if (subgroupElect())
        row_part[gl_SubgroupID] = s;
    barrier();
    s = 0.0;
    for (uint i = 0u; i < per_row; i++)
        s += row_part[slot * per_row + i];
    barrier();                  // read before the next row overwrites
    return s;
}

void main()
{
    uint slots = gl_WorkGroupSize.x / ROW_THREADS, rows_per_group = slots * ROWS;
    uint slot = gl_LocalInvocationID.x / ROW_THREADS, lane = gl_LocalInvocationID.x % ROW_THREADS;
    uint units = units_per_row();
    // the loop bound is the same for the whole workgroup (row_sum has barriers)
    for (uint base = gl_WorkGroupID.x * rows_per_group; base < pc.m;
         base += gl_NumWorkGroups.x * rows_per_group) {
        uint first = base + slot * ROWS;
        float sums[ROWS];
        [[unroll]] for (uint r = 0u; r < ROWS; r++)
            sums[r] = 0.0;
        if (first < pc.m)
            for (uint u = lane; u < units; u += ROW_THREADS)
                add_unit(first, u, sums);
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            uint row = first + r;
            float s = row_sum(sums[r], slot);
            if (lane == 0u && row < pc.m) {
                float y = pc.alpha * s;
                if (pc.beta != 0.0)
                    y = fma(pc.beta, uintBitsToFloat(y_data[pc.oy + row]), y);
                y_data[pc.oy + row] = floatBitsToUint(y);
            }
        }
    }
}

/* SPDX-License-Identifier: MIT */
#version 450
// gemv_quant.comp - y = alpha A x + beta y with A (m x n) in f16, bf16,
// Q8_0, Q4_0, Q4_K or Q6_K (GGUF blocks as stored), x and y f32.
//
// A team of SPLIT subgroups serves ROWS rows: its invocations walk along
// the rows together, each taking one "unit" per step (8 halves = 16 bytes;
// a 16-byte quant chunk of a Q4_K block = 32 values; two Q8_0 or Q4_0
// blocks = 68 or 36 bytes, or one where rows are not 4-byte aligned; a
// quarter of a Q6_K block), neighbouring invocations on neighbouring
// units, so that each load of a subgroup reads one contiguous stretch.
// Each x value loaded serves the ROWS rows; the block formats take x from
// a per-step copy in shared memory (x_tile).  UNITS units are loaded per
// step; subgroupAdd (and shared memory, for SPLIT > 1) joins the sums.
// On the H200, f16 and bf16 were bound by the latency of each invocation's
// walk: SPLIT shortens it (doc/benchmarks-vulkan.md).
//
// Instructions per weight:
// - wide loads: uvec4 where rows are 16-byte aligned (f16, bf16, Q4_K),
//   whole words where Q8_0 / Q4_0 rows are 4-byte aligned (PAIRED: a pair
//   of blocks starts on a word); funnel shifts only for other offsets;
// - a field of q bits at bit p of a word becomes a float with one logic
//   operation and one add: (w & mask << p) | the exponent of 2^(23 - p)
//   is the float 2^(23 - p) + q exactly (for p + bits <= 23), so no shift
//   to bit 0 and no int-to-float conversion; the add subtracts 2^(23 - p)
//   and the format's offset (8, 32, 128) at once;
// - block scales multiply a block's (or sub-block's) sum once;
// - the dtype, alignment and team shape are specialization constants.
// Every product and sum stays f32 (x is never rounded: rayo-ops.h).  A
// row whose sum is not finite is summed again one element at a time with
// scaled factors (common.glsl: the range contract).
//
// Push constants (common.glsl): n, m; k = bytes between row starts;
// oa = byte offset of A; ob, oy = word offsets of x and y; aux = the last
// word of A (funnel loads past it are clamped to it).

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
layout(constant_id = 1) const uint DTYPE = 1u;        // rayo_dtype of A
layout(constant_id = 2) const uint UNITS = 1u;        // units loaded per step
layout(constant_id = 3) const bool A_ALIGNED = false; // pc.oa and pc.k multiples of 16
layout(constant_id = 4) const bool X_ALIGNED = false; // pc.ob a multiple of 4
layout(constant_id = 5) const uint ROWS = 4u;         // rows of a subgroup's team
layout(constant_id = 6) const bool PAIRED = false;    // Q8_0 / Q4_0: pc.oa, pc.k multiples
                                                      // of 4 and n of 64
layout(constant_id = 7) const uint X_TILE = 0u;       // x values staged per step (0: none)
layout(constant_id = 8) const uint SPLIT = 1u;        // subgroups of a team

const uint F16 = 1u, BF16 = 2u, Q8_0 = 8u, Q4_0 = 9u, Q4_K = 10u, Q6_K = 11u;
#include "dequant.glsl"

// PAIRED: words of a block pair; each subgroup stages its rows' next
// pairs here (one per invocation and row), read with whole-subgroup
// coalesced loads.  A stride of 17 or 9 words (odd) puts the 32 words that
// the invocations then read at once in 32 different banks.
const uint PAIR_WORDS = DTYPE == Q8_0 ? 17u : 9u;
shared uint stage[PAIRED ? ROWS * PAIR_WORDS * gl_WorkGroupSize.x : 1u];

// The block formats read x as vec4s at strides of 64 to 256 bytes from one
// invocation to the next: from memory, each such load of a subgroup would
// touch up to 32 cache lines.  Per step, the workgroup copies the x values
// of the step's columns here with coalesced loads; one vec4 of padding
// after every 16 spreads the strided reads over all banks.
shared vec4 x_tile[X_TILE > 0u ? X_TILE / 4u + X_TILE / 64u : 1u];
uint x_base;                    // the column of x_tile[0]

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

// Bytes 2..17 of four words: the quants of a block whose scale is the low
// half of the first word.
uvec4 after_half(uint v0, uint v1, uint v2, uint v3, uint v4)
{
    return uvec4((v0 >> 16u) | (v1 << 16u), (v1 >> 16u) | (v2 << 16u),
                 (v2 >> 16u) | (v3 << 16u), (v3 >> 16u) | (v4 << 16u));
}

// ---- x -----------------------------------------------------------------------------

float x_at(uint i) { return uintBitsToFloat(b_data[pc.ob + i]); }

vec4 x4(uint i)                 // x[i..i+3], i a multiple of 4
{
    if (X_ALIGNED)
        return b_vec4[(pc.ob + i) >> 2u];
    return vec4(x_at(i), x_at(i + 1u), x_at(i + 2u), x_at(i + 3u));
}

// x[i..i+3] (i a multiple of 4) for the block formats: from x_tile.
vec4 xs(uint i)
{
    if (X_TILE == 0u)
        return x4(i);
    uint k = (i - x_base) >> 2u;
    return x_tile[k + (k >> 4u)];
}

// The whole workgroup fills x_tile with x from column `first` (between
// barriers: see team_sums).
void fill_x(uint first)
{
    if (X_TILE == 0u)
        return;
    x_base = first;
    for (uint k = gl_LocalInvocationID.x; k < X_TILE / 4u; k += gl_WorkGroupSize.x) {
        uint i = first + 4u * k;
        x_tile[k + (k >> 4u)] = i < pc.n ? x4(i) : vec4(0.0);
    }
}

// ---- small integers -----------------------------------------------------------------

// The field of w under mask << p (p + its bits <= 23) minus `bias`, exact:
// ORed into the mantissa of 2^(23 - p), it reads as 2^(23 - p) + field.
float field(uint w, uint mask, uint p, float bias)
{
    uint magic = (150u - p) << 23u;
    return uintBitsToFloat((w & (mask << p)) | magic) - (uintBitsToFloat(magic) + bias);
}

// The four bytes of w, each masked to `mask`, minus bias: bytes 0 and 1
// in place, 2 and 3 from w >> 16.
vec4 bytes4(uint w, uint mask, float bias)
{
    uint h = w >> 16u;
    return vec4(field(w, mask, 0u, bias), field(w, mask, 8u, bias),
                field(h, mask, 0u, bias), field(h, mask, 8u, bias));
}

// The low and the high nibbles of w's four bytes minus bias: nibbles at
// bits 0..16 in place, those at 20, 24, 28 from w >> 12.
void nibbles(uint w, float bias, out vec4 lo, out vec4 hi)
{
    uint h = w >> 12u;
    lo = vec4(field(w, 15u, 0u, bias), field(w, 15u, 8u, bias), field(w, 15u, 16u, bias),
              field(h, 15u, 12u, bias));
    hi = vec4(field(w, 15u, 4u, bias), field(w, 15u, 12u, bias), field(h, 15u, 8u, bias),
              field(h, 15u, 16u, bias));
}

// Whether no half of w has a zero exponent (no zero, no subnormal): then
// the device's conversion is exact whatever its denormal mode.  Per 16-bit
// lane, (exponent << 10) - 0x400 borrows into bit 15 only for exponent 0
// (a borrow into the upper lane follows a flagged lower lane).
uint f16_tiny(uint w) { return ((w & 0x7c007c00u) - 0x04000400u) & 0x80008000u; }

vec2 f16x2(uint w)
{
    [[dont_flatten]] if (f16_tiny(w) == 0u)
        return unpackHalf2x16(w);
    return vec2(f16_value(w & 0xffffu), f16_value(w >> 16u));
}

// One half (the low 16 bits of h, the rest zero): the upper lane set to
// 1.0 so that only this half decides the path.
float f16_one(uint h) { return f16x2(h | 0x3c000000u).x; }

vec4 halves2(uint a, uint b)
{
    if (DTYPE == BF16)
        return vec4(uintBitsToFloat(a << 16u), uintBitsToFloat(a & 0xffff0000u),
                    uintBitsToFloat(b << 16u), uintBitsToFloat(b & 0xffff0000u));
    return vec4(f16_value(a & 0xffffu), f16_value(a >> 16u), f16_value(b & 0xffffu),
                f16_value(b >> 16u));
}

float half_value(uint h) { return halves2(h, 0u).x; }

// An integer below 2^23 as a float, without a conversion instruction.
float small_int(uint v) { return uintBitsToFloat(v | 0x4b000000u) - 8388608.0; }

// ---- units: each adds unit u of the team's rows (byte offsets at[]) to s[] ------------

// f16 / bf16: elements 8u .. 8u + 7.
void unit_half(uint at[ROWS], uint u, inout float s[ROWS])
{
    uvec4 w[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; r++)
        w[r] = load16_row(at[r] + 16u * u);
    vec4 x0 = x4(8u * u), x1 = x4(8u * u + 4u);
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        uvec4 t = w[r];
        if (DTYPE == F16) {
            [[dont_flatten]] if ((f16_tiny(t.x) | f16_tiny(t.y) | f16_tiny(t.z) | f16_tiny(t.w)) == 0u) {
                s[r] += dot(vec4(unpackHalf2x16(t.x), unpackHalf2x16(t.y)), x0) +
                        dot(vec4(unpackHalf2x16(t.z), unpackHalf2x16(t.w)), x1);
                continue;
            }
        }
        s[r] += dot(halves2(t.x, t.y), x0) + dot(halves2(t.z, t.w), x1);
    }
}

// Q8_0 block quants q (signed bytes, flipped to unsigned by ^ 0x80) times
// x[x0 ..]: the block's sum before its scale.
float dot_q8(uvec4 qa, uvec4 qb, vec4 xv[8])
{
    float p = 0.0;
    [[unroll]] for (uint t = 0u; t < 4u; t++) {
        p += dot(bytes4(qa[t] ^ 0x80808080u, 0xffu, 128.0), xv[t]);
        p += dot(bytes4(qb[t] ^ 0x80808080u, 0xffu, 128.0), xv[4u + t]);
    }
    return p;
}

// Q4_0 block quants (value j: low nibble of byte j; j + 16: high nibble).
float dot_q4(uvec4 q, vec4 xv[8])
{
    float p = 0.0;
    [[unroll]] for (uint t = 0u; t < 4u; t++) {
        vec4 lo, hi;
        nibbles(q[t], 8.0, lo, hi);
        p += dot(lo, xv[t]) + dot(hi, xv[4u + t]);
    }
    return p;
}

void x_block32(uint b, out vec4 xv[8])
{
    [[unroll]] for (uint t = 0u; t < 8u; t++)
        xv[t] = xs(32u * b + 4u * t);
}

// Q8_0 / Q4_0, any offset: unit u = block u (34 or 18 bytes: d, quants).
void unit_block(uint at[ROWS], uint u, inout float s[ROWS])
{
    uint bytes = DTYPE == Q8_0 ? 34u : 18u;
    vec4 xv[8];
    x_block32(u, xv);
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        uint b = at[r] + bytes * u;
        float d = f16_one(half_at(b));
        if (DTYPE == Q8_0)
            s[r] += d * dot_q8(load16(b + 2u), load16(b + 18u), xv);
        else
            s[r] += d * dot_q4(load16(b + 2u), xv);
    }
}

// Q8_0 / Q4_0 with word-aligned rows: unit u = blocks 2u and 2u + 1, whose
// 68 or 36 bytes v[] start on a word; the first block's quants sit two
// bytes into a word, the second's on a word.
float pair_sum(uint v[17], uint u)
{
    vec4 xa[8], xb[8];
    x_block32(2u * u, xa);
    x_block32(2u * u + 1u, xb);
    float pa, pb, db;
    if (DTYPE == Q8_0) {
        pa = dot_q8(after_half(v[0], v[1], v[2], v[3], v[4]),
                    after_half(v[4], v[5], v[6], v[7], v[8]), xa);
        pb = dot_q8(uvec4(v[9], v[10], v[11], v[12]), uvec4(v[13], v[14], v[15], v[16]), xb);
        db = f16_one(v[8] >> 16u);
    } else {
        pa = dot_q4(after_half(v[0], v[1], v[2], v[3], v[4]), xa);
        pb = dot_q4(uvec4(v[5], v[6], v[7], v[8]), xb);
        db = f16_one(v[4] >> 16u);
    }
    return f16_one(v[0] & 0xffffu) * pa + db * pb;
}

// The PAIRED team loop: per step, the team copies its rows' next `size`
// pairs to `stage` (word i of the stretch by invocation i % size: each
// load of a subgroup reads consecutive words), then each invocation takes
// its pair from there.
void team_sums_paired(uint team, uint at[ROWS], uint lane, uint size, inout float s[ROWS])
{
    uint units = pc.n / 64u, span = size * PAIR_WORDS;
    uint mine = team * span, row_stride = gl_WorkGroupSize.x * PAIR_WORDS;
    for (uint u0 = 0u; u0 < units; u0 += size) {
        barrier();              // the last step's reads are done
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            uint w0 = (at[r] >> 2u) + PAIR_WORDS * u0 + lane;
            [[unroll]] for (uint i = 0u; i < PAIR_WORDS; i++)
                stage[r * row_stride + mine + i * size + lane] = a_data[min(w0 + i * size, pc.aux)];
        }
        fill_x(64u * u0);
        barrier();
        uint u = u0 + lane;
        if (u < units) {
            [[unroll]] for (uint r = 0u; r < ROWS; r++) {
                uint v[17];
                [[unroll]] for (uint i = 0u; i < PAIR_WORDS; i++)
                    v[i] = stage[r * row_stride + mine + lane * PAIR_WORDS + i];
                s[r] += pair_sum(v, u);
            }
        }
    }
}

// Q4_K: quarter c of a block holds sub-blocks 2c (low nibbles of 32 bytes)
// and 2c + 1 (high nibbles); each adds (d sc) sum(q x) - (dmin m) sum(x).
float q4_k_scaled(uvec4 head, uint c, float qx0, float qx1, vec2 sx)
{
    uvec4 sm = dq_q4_k_scales(head.yzw, c);
    uint s0 = sm.x, m0 = sm.y, s1 = sm.z, m1 = sm.w;
    vec2 d = f16x2(head.x);     // d, dmin
    return (d.x * small_int(s0)) * qx0 - (d.y * small_int(m0)) * sx.x +
           (d.x * small_int(s1)) * qx1 - (d.y * small_int(m1)) * sx.y;
}

// Q4_K unit u = quant chunk j = u % 8 (16 bytes) of block u / 8, so that
// neighbouring invocations load neighbouring chunks: values 64c + 16h + l
// (low nibbles) and 64c + 32 + 16h + l (high), c = j / 2, h = j % 2, l < 16.
void unit_q4_k(uint at[ROWS], uint u, inout float s[ROWS])
{
    uint j = u & 7u, c = j >> 1u;
    uvec4 head[ROWS], q[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        uint b = at[r] + 144u * (u >> 3u);
        head[r] = load16_row(b);                  // d, dmin, scales[0..11]
        q[r] = load16_row(b + 16u + 16u * j);
    }
    uint x0 = 256u * (u >> 3u) + 64u * c + 16u * (j & 1u);
    float qx[ROWS][2];
    [[unroll]] for (uint r = 0u; r < ROWS; r++)
        qx[r][0] = qx[r][1] = 0.0;
    vec2 sx = vec2(0.0);
    [[unroll]] for (uint t = 0u; t < 4u; t++) {
        vec4 xl = xs(x0 + 4u * t), xh = xs(x0 + 32u + 4u * t);
        sx += vec2(dot(xl, vec4(1.0)), dot(xh, vec4(1.0)));
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            vec4 lo, hi;
            nibbles(q[r][t], 0.0, lo, hi);
            qx[r][0] += dot(lo, xl);
            qx[r][1] += dot(hi, xh);
        }
    }
    [[unroll]] for (uint r = 0u; r < ROWS; r++)
        s[r] += q4_k_scaled(head[r], c, qx[r][0], qx[r][1], sx);
}

// Q6_K quarter u = (block b, half h, g): values 128h + 32k + 16g + l, k < 4,
// l < 16.  Codes: low nibble (k = 0, 2: of ql[l], low/high; k = 1, 3: of
// ql[l + 32]) | bits 2k..2k+1 of qh[l] << 4, minus 32; built four bytes
// at a time.
void unit_q6_k(uint at[ROWS], uint u, inout float s[ROWS])
{
    uint h = (u >> 1u) & 1u, g = u & 1u;
    uint x0 = 256u * (u >> 2u) + 128u * h + 16u * g;
    vec4 part[ROWS];            // one sum per k (each has its own scale)
    uvec4 la[ROWS], lb[ROWS], qh[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        uint b = at[r] + 210u * (u >> 2u);
        la[r] = load16(b + 64u * h + 16u * g);
        lb[r] = load16(b + 64u * h + 32u + 16u * g);
        qh[r] = load16(b + 128u + 32u * h + 16u * g);
        part[r] = vec4(0.0);
    }
    [[unroll]] for (uint t = 0u; t < 4u; t++) {
        vec4 xk[4];
        [[unroll]] for (uint k = 0u; k < 4u; k++)
            xk[k] = xs(x0 + 32u * k + 4u * t);
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            uint a = la[r][t], c = lb[r][t], q = qh[r][t];
            uint c0 = (a & 0x0f0f0f0fu) | ((q << 4u) & 0x30303030u);
            uint c1 = (c & 0x0f0f0f0fu) | ((q << 2u) & 0x30303030u);
            uint c2 = ((a >> 4u) & 0x0f0f0f0fu) | (q & 0x30303030u);
            uint c3 = ((c >> 4u) & 0x0f0f0f0fu) | ((q >> 2u) & 0x30303030u);
            part[r] += vec4(dot(bytes4(c0, 63u, 32.0), xk[0]), dot(bytes4(c1, 63u, 32.0), xk[1]),
                            dot(bytes4(c2, 63u, 32.0), xk[2]), dot(bytes4(c3, 63u, 32.0), xk[3]));
        }
    }
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        uint b = at[r] + 210u * (u >> 2u);
        uint s_lo = word_at(b + 192u + 8u * h + g), s_hi = word_at(b + 196u + 8u * h + g);
        vec4 sc = vec4(bitfieldExtract(int(s_lo), 0, 8), bitfieldExtract(int(s_lo), 16, 8),
                       bitfieldExtract(int(s_hi), 0, 8), bitfieldExtract(int(s_hi), 16, 8));
        s[r] += f16_one(half_at(b + 208u)) * dot(sc, part[r]);
    }
}

// ---- the team loop --------------------------------------------------------------------

uint units_per_row()
{
    if (DTYPE == F16 || DTYPE == BF16)
        return pc.n / 8u;
    if (DTYPE == Q8_0 || DTYPE == Q4_0 || DTYPE == Q4_K)
        return pc.n / 32u;
    return pc.n / 64u;
}

void add_unit(uint at[ROWS], uint u, inout float s[ROWS])
{
    if (DTYPE == F16 || DTYPE == BF16)
        unit_half(at, u, s);
    else if (DTYPE == Q8_0 || DTYPE == Q4_0)
        unit_block(at, u, s);
    else if (DTYPE == Q4_K)
        unit_q4_k(at, u, s);
    else
        unit_q6_k(at, u, s);
}

uint values_per_unit()
{
    if (DTYPE == F16 || DTYPE == BF16)
        return 8u;
    return DTYPE == Q8_0 || DTYPE == Q4_0 || DTYPE == Q4_K ? 32u : 64u;
}

// The team's sums over its rows' units: invocation `lane` of `size` takes
// units lane, lane + size, ...; UNITS of them per step, the last step's
// extra ones clamped to the last unit and their sums dropped (so that the
// loads need no branch).  Every invocation of the workgroup runs the same
// steps (the barriers around fill_x).
void team_sums(uint at[ROWS], uint lane, uint size, inout float s[ROWS])
{
    uint units = units_per_row();
    for (uint u0 = 0u; u0 < units; u0 += size * UNITS) {
        if (X_TILE > 0u) {
            barrier();          // the last step's reads are done
            fill_x(values_per_unit() * u0);
            barrier();
        }
        [[unroll]] for (uint i = 0u; i < UNITS; i++) {
            float t[ROWS];
            [[unroll]] for (uint r = 0u; r < ROWS; r++)
                t[r] = 0.0;
            uint v = u0 + i * size + lane;
            add_unit(at, min(v, units - 1u), t);
            [[unroll]] for (uint r = 0u; r < ROWS; r++)
                s[r] += v < units ? t[r] : 0.0;
        }
    }
    // f16 / bf16 rows of n % 8 != 0: the last few elements, one per invocation
    if (DTYPE == F16 || DTYPE == BF16)
        for (uint e = 8u * units + lane; e < pc.n; e += size)
            [[unroll]] for (uint r = 0u; r < ROWS; r++)
                s[r] += half_value(half_at(at[r] + 2u * e)) * x_at(e);
}

shared float part_sums[SPLIT > 1u ? ROWS * gl_WorkGroupSize.x : 1u];

// The sum of s over the team (in its first subgroup): subgroupAdd, then
// the SPLIT subgroups' sums in order through part_sums.
float team_sum(float s, uint r, uint team)
{
    s = subgroupAdd(s);
    if (SPLIT == 1u)
        return s;
    if (subgroupElect())
        part_sums[r * gl_WorkGroupSize.x + gl_SubgroupID] = s;
    barrier();
    s = 0.0;
    for (uint i = 0u; i < SPLIT; i++)
        s += part_sums[r * gl_WorkGroupSize.x + team * SPLIT + i];
    barrier();                  // read before the next rows overwrite
    return s;
}

// The row at byte row_at dotted with x, the factors scaled, by one
// subgroup (each subgroup of a team on its own: no barrier, as other teams
// do not come here).
float row_scaled(uint row_at)
{
    float total = 0.0, block = 0.0;
    uint terms = 0u;
    for (uint e = gl_SubgroupInvocationID; e < pc.n; e += gl_SubgroupSize) {
        block = range_fma(dq_value(row_at, e), x_at(e), block);
        if (++terms == 32u) { total += block; block = 0.0; terms = 0u; }
    }
    return subgroupAdd(total + block);
}

void main()
{
    uint team = gl_SubgroupID / SPLIT, teams = gl_NumSubgroups / SPLIT;
    uint lane = (gl_SubgroupID % SPLIT) * gl_SubgroupSize + gl_SubgroupInvocationID;
    uint size = SPLIT * gl_SubgroupSize, rows_per_group = teams * ROWS;
    for (uint base = gl_WorkGroupID.x * rows_per_group; base < pc.m;
         base += gl_NumWorkGroups.x * rows_per_group) {
        // a team past m repeats the last row (its sums are not written):
        // every invocation runs the same steps
        uint first = base + team * ROWS;
        uint at[ROWS];
        float s[ROWS];
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            at[r] = pc.oa + min(first + r, pc.m - 1u) * pc.k;
            s[r] = 0.0;
        }
        if (PAIRED)
            team_sums_paired(team, at, lane, size, s);
        else
            team_sums(at, lane, size, s);
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {
            float sum = team_sum(s[r], r, team);
            bool scaled = !range_finite(sum); // the same in the whole team
            if (scaled)
                sum = row_scaled(at[r]);
            uint row = first + r;
            if (lane == 0u && row < pc.m) {
                float y = scaled ? range_up(pc.alpha * sum) : pc.alpha * sum;
                if (pc.beta != 0.0)
                    y = fma(pc.beta, uintBitsToFloat(y_data[pc.oy + row]), y);
                y_data[pc.oy + row] = floatBitsToUint(y);
            }
        }
    }
}

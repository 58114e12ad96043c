/* SPDX-License-Identifier: MIT */
#version 450
// gemv_int8.comp - y = alpha A x + beta y with A (m x n) in Q8_0, Q4_0,
// Q4_K or Q6_K (GGUF blocks as stored), x and y f32, for relaxed calls
// only: x rounded to 8 bits per block of 32 and multiplied with integer
// dot products (OpSDot of SPV_KHR_integer_dot_product: four signed bytes
// by four).  Strict calls take gemv_quant.comp, which never rounds x.
//
// Each workgroup first rounds all of x into shared memory (round_x), per
// block of 32 values as in Q8_0: codes q = round(x / d) with d = max |x| / 127, d and
// the sum of the codes (Q4_0 stores its codes plus 8: the sum takes the 8
// back out once per block; Q4_K's minimums and Q6_K's offset of 32 use the
// sums too, Q6_K's per 16 codes).  Then each subgroup takes ROWS rows at a
// time, its invocations one unit of each row per step (a Q8_0 or Q4_0
// block, a quarter of a Q4_K or Q6_K block), neighbours on neighbouring
// units (contiguous bytes); a unit is read as whole words shifted into
// place (blocks start on any byte; Q4_K's as 16-byte quads where A and
// its rows start on 16 bytes), its integer sums are exact and become
// floats once, times the weight's and x's scales.
//
// The error is x's rounding, at most d / 2 per value.  For weights not
// made to match those rounding errors (the relaxed contract's statistical
// bound, core/rayo-ops.h) a row's error has a standard deviation of about
// rms|w| sqrt(sum over blocks of 32 d^2 / 12); the sum of |terms| is about
// mean|w| sum |x|.  Where five such deviations (rms|w| / mean|w| taken as
// 1.5) could pass the contract (2e-3 of the sum of |terms|), or x is not
// finite, the whole call sums in float instead, one element at a time:
// the test is made on all of x, so every workgroup takes the same path.
// Uniform random x of 1024 values passes it with a margin of 3.5 (x of a
// few hundred values sums in float); an x with one value 100 times the
// rest over a few thousand values does not.  A row whose sum is not
// finite is summed again with scaled factors (common.glsl: the range
// contract).
//
// Push constants (common.glsl): n, m; k = bytes between row starts;
// oa = byte offset of A; ob, oy = word offsets of x and y; aux = the last
// word of A (loads past it are clamped to it).
//
// RAYO_NORM (the gemv_int8_norm module, for devices with shaderFloat64):
// x is first normalised as the rmsnorm op does it (rows.comp), an rmsnorm
// and the products of its output in one dispatch: each workgroup sums the
// squares of the raw x (binding b) in double and scales each value by
// 1 / sqrt(mean + eps) and by gamma (binding c, where flags bit 1); one
// workgroup (flags bit 0) also stores the normalised row at scratch word
// ext[0], the rmsnorm's output.  ext[1]: eps (float bits).
//
// RAYO_GLU (gemv_int8_glu, with RAYO_NORM): the gate and up products of a
// feed-forward block and their swiglu in one dispatch: each subgroup sums
// its rows of gate's A (binding a) and of up's A (binding d: byte offset
// ext[2], last word ext[3]; the same n, m, row bytes and dtype) against the
// same rounded x and stores up's row (binding e, word ext[4]; flags bit 3),
// gate's (y; flags bit 2) and swiglu's y = silu(g) u (binding f, word
// ext[5]) computed as infer_rows.comp computes the op (glu.glsl): the
// host leaves out a product's store where swiglu's y is its y (in place).
// beta is 0 (the host checks).
//
// RAYO_ROPE (gemv_int8_rope, with RAYO_NORM): the q or k product of one
// token and its rope in place (RAYO_ROPE_NORM: pairs 2i, 2i + 1 of each
// head, adjacent rows), in one dispatch: ROWS is even and a subgroup's
// rows start even (first = a multiple of ROWS), so the subgroup holding a
// pair rotates it before storing it, as infer_rows.comp's rope does
// (rope.glsl).  The position is word ext[2] of binding d (int32), the
// inverse frequencies (doubles) start at word ext[3] of binding e; ext[4]
// head_dim, ext[5] rot_dims (dimensions past it left as they are).

#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require
#define RAYO_BUFFER_TYPE uint
#if defined(RAYO_GLU) || defined(RAYO_ROPE)
#define RAYO_MORE_BINDINGS
#define RAYO_PUSH_EXT 6
#elif defined(RAYO_NORM)
#define RAYO_PUSH_EXT 2
#endif
#include "common.glsl"
#include "rmath.glsl"
#include "rayo-op-ids.glsl"
#include "glu.glsl"
#include "rope.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DTYPE = 9u;        // rayo_dtype of A: Q8_0, Q4_0, Q4_K, Q6_K
layout(constant_id = 2) const uint ROWS = 2u;         // rows a subgroup takes at a time
layout(constant_id = 3) const uint X_BLOCKS = 32u;    // blocks of x held in shared memory (>= n / 32)

const uint Q8_0 = 8u, Q4_0 = 9u, Q4_K = 10u, Q6_K = 11u;
const uint BLOCK_BYTES = DTYPE == Q8_0 ? 34u : DTYPE == Q4_0 ? 18u : DTYPE == Q4_K ? 144u : 210u;

// Word w of A, or with RAYO_GLU of gate's A (a) or up's (d): `up` is a
// constant wherever the int path calls it, so each load reads one buffer.
#ifdef RAYO_GLU
const uint MATS = 2u;           // matrices a subgroup sums its rows of
const uint ALL_ROWS = MATS * ROWS;
uint a_word(uint w, bool up) { return up ? d_data[min(w, pc.ext[3])] : a_data[min(w, pc.aux)]; }
uint a_start(uint mat) { return mat == 0u ? pc.oa : pc.ext[2]; } // byte of row 0
#else
const uint MATS = 1u;
const uint ALL_ROWS = ROWS;
uint a_word(uint w, bool up) { return a_data[min(w, pc.aux)]; }
uint a_start(uint mat) { return pc.oa; }
#endif
// A seen 16 bytes at a time (binding 0, and up's A at binding 5), for
// Q4_K where every block starts on 16 bytes (its 144 bytes are nine
// quads): one load for what takes four or five words otherwise.
layout(std430, set = 0, binding = 0) readonly buffer BufAQuads { uvec4 a_quads[]; };
#ifdef RAYO_GLU
layout(std430, set = 0, binding = 5) readonly buffer BufDQuads { uvec4 d_quads[]; };
uvec4 a_quad(uint q, bool up) { return up ? d_quads[min(q, pc.ext[3] >> 2u)] : a_quads[min(q, pc.aux >> 2u)]; }
bool quads_aligned() { return ((pc.oa | pc.k | pc.ext[2]) & 15u) == 0u; }
#else
uvec4 a_quad(uint q, bool up) { return a_quads[min(q, pc.aux >> 2u)]; }
bool quads_aligned() { return ((pc.oa | pc.k) & 15u) == 0u; }
#endif
bool by_quads = false;          // Q4_K rows read as quads (main sets it)
bool on_up = false;             // the matrix of the float path (dequant.glsl)
#define DQ_WORD(i) a_word(i, on_up)
#include "dequant.glsl"

// OpSDot (4450) with PackedVectorFormat4x8Bit (0): the sum of the products
// of the four signed bytes of a and b, exact.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4(int a, int b, spirv_literal int packed_format);

int dot4(uint a, uint b) { return sdot4(int(a), int(b), 0); }

// 5 deviations within 2e-3 of sum |x| (rms|w| / mean|w| = 1.5): with a
// variance of 32 / 12 d^2 per block, 7.5^2 * 32 / 12 sum d^2 <= (2e-3 sum |x|)^2.
const float GATE_D2_PER_L1SQ = 4e-6 / (7.5 * 7.5 * 32.0 / 12.0);

shared uvec4 x_codes[2u * X_BLOCKS];   // block b: codes of values 0..15 in [2b], 16..31 in [2b + 1]
shared vec4 x_scale[X_BLOCKS];         // block b: d, the sum of its codes, of codes 0..15, of 16..31
shared vec2 gate_part[gl_WorkGroupSize.x]; // per subgroup: sum d^2, sum |x|

#ifdef RAYO_NORM
const uint NORM_STORE = 1u, NORM_GAMMA = 2u;
shared double norm_part[gl_WorkGroupSize.x];
double norm_inv;                // 1 / sqrt(mean of x^2 + eps), as rows.comp has it

float x_raw(uint i) { return uintBitsToFloat(b_data[pc.ob + i]); }

// The whole workgroup: norm_inv from the sum of squares (a tree over the
// workgroup, a power of two in size).
void norm_begin()
{
    uint t = gl_LocalInvocationID.x;
    double ss = 0.0;
    for (uint i = t; i < pc.n; i += gl_WorkGroupSize.x) {
        double v = double(x_raw(i));
        ss += v * v;
    }
    norm_part[t] = ss;
    barrier();
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1u) {
        if (t < h)
            norm_part[t] += norm_part[t + h];
        barrier();
    }
    double var = norm_part[0] / double(pc.n) + double(uintBitsToFloat(pc.ext[1]));
    // var + eps == 0: x is 0 too; y = 0 * 0, not 0 * inf
    norm_inv = isnan(var) ? var : (var > 0.0LF ? 1.0LF / sqrt(var) : 0.0LF);
}

float x_at(uint i)
{
    double y = double(x_raw(i)) * norm_inv;
    if ((pc.flags & NORM_GAMMA) != 0u)
        y *= double(uintBitsToFloat(c_data[pc.oc + i]));
    return float(y);
}

// Workgroup 0 of a call that stores it: values 4i .. 4i + 3 of the row.
void norm_store(uint i, vec4 v)
{
    if ((pc.flags & NORM_STORE) == 0u || gl_WorkGroupID.x != 0u)
        return;
    for (uint k = 0u; k < 4u; k++)
        s_data[pc.ext[0] + 4u * i + k] = floatBitsToUint(v[k]);
}
#else
float x_at(uint i) { return uintBitsToFloat(b_data[pc.ob + i]); }
void norm_store(uint i, vec4 v) {}
#endif

uint pack4(ivec4 q) { return uint(q.x & 255) | uint(q.y & 255) << 8u | uint(q.z & 255) << 16u | uint(q.w & 255) << 24u; }

// The whole workgroup rounds x into x_codes / x_scale, each invocation 4
// values per step, so that a subgroup's loads read x contiguously: 8
// neighbouring invocations (within one subgroup: sizes are powers of two
// from 8) take one block, and gather its largest |x| and code sums with
// butterfly shuffles (the 8 are all in the loop or all out of it, as n / 4
// is a multiple of 8).  Returns true where the rounding keeps the
// contract (the same answer in every workgroup: the partial sums are added
// in one order).  Ends with a barrier.
bool round_x()
{
    vec2 gate = vec2(0.0);      // sum d^2, sum |x|
    for (uint i = gl_LocalInvocationID.x; i < pc.n / 4u; i += gl_WorkGroupSize.x) {
        vec4 v = vec4(x_at(4u * i), x_at(4u * i + 1u), x_at(4u * i + 2u), x_at(4u * i + 3u));
        norm_store(i, v);
        vec4 a = abs(v);
        float amax = max(max(a.x, a.y), max(a.z, a.w));
        amax = max(amax, subgroupShuffleXor(amax, 4u));
        amax = max(amax, subgroupShuffleXor(amax, 2u));
        amax = max(amax, subgroupShuffleXor(amax, 1u));
        float d = amax / 127.0, inv = amax > 0.0 ? 127.0 / amax : 0.0;
        ivec4 q = clamp(ivec4(round(v * inv)), -127, 127);
        int four = q.x + q.y + q.z + q.w;
        int lo = four + subgroupShuffleXor(four, 1u); // the sum of its half (codes 0..15 or 16..31)
        lo += subgroupShuffleXor(lo, 2u);
        int all = lo + subgroupShuffleXor(lo, 4u);
        uint b = i >> 3u, t = i & 7u;
        x_codes[2u * b + (t >> 2u)][t & 3u] = pack4(q);
        if (t == 0u) {
            x_scale[b] = vec4(d, float(all), float(lo), float(all - lo));
            gate.x += d * d;
        }
        gate.y += a.x + a.y + a.z + a.w;
    }
    gate = subgroupAdd(gate);
    if (subgroupElect())
        gate_part[gl_SubgroupID] = gate;
    barrier();
    gate = vec2(0.0);
    for (uint i = 0u; i < gl_NumSubgroups; i++)
        gate += gate_part[i];
    return range_finite(gate.y) && range_finite(gate.x) && gate.x <= GATE_D2_PER_L1SQ * gate.y * gate.y;
}

// ---- the integer path ----------------------------------------------------------------

// The `count` (at most 9) words of A from byte `at` (any alignment).
void load_words(uint at, uint count, bool up, out uint u[9])
{
    uint w = at >> 2u, r = (at & 3u) * 8u, l = 31u - r;
    uint lo = a_word(w, up);
    [[unroll]] for (uint i = 0u; i < 9u; i++) {
        if (i < count) {
            uint hi = a_word(w + i + 1u, up);
            u[i] = (lo >> r) | ((hi << 1u) << l); // no shift by 32 where r = 0
            lo = hi;
        } else {
            u[i] = 0u;
        }
    }
}

uint x_word(uint b, uint t) { return x_codes[2u * b + (t >> 2u)][t & 3u]; } // word t of x block b

// Bytes 2..5 from words i and i + 1 of a block: the codes after its scale.
uint codes_at(uint u[9], uint i) { return (u[i] >> 16u) | (u[i + 1u] << 16u); }

// Q8_0 / Q4_0 unit = block b (34 or 18 bytes at `at`): its d times x's d
// times the exact integer sum of weight codes times x codes.
float unit_block(uint at, uint b, bool up)
{
    uint u[9];
    load_words(at, DTYPE == Q8_0 ? 9u : 5u, up, u);
    int s = 0;
    [[unroll]] for (uint t = 0u; t < 4u; t++) {
        uint c = codes_at(u, t);
        if (DTYPE == Q8_0)
            s += dot4(c, x_word(b, t)) + dot4(codes_at(u, t + 4u), x_word(b, t + 4u));
        else // byte j: value j (low nibble) and j + 16 (high), plus 8
            s += dot4(c & 0x0f0f0f0fu, x_word(b, t)) + dot4((c >> 4u) & 0x0f0f0f0fu, x_word(b, t + 4u));
    }
    if (DTYPE == Q4_0)
        s -= 8 * int(x_scale[b].y);
    return (f16_value(u[0] & 0xffffu) * x_scale[b].x) * float(s);
}

// Q4_K unit = quarter c of the block at `blk` (x blocks xb, xb + 1): its 32
// code bytes hold sub-blocks 2c (low nibbles) and 2c + 1 (high); each adds
// (d sc) dx sum(q xq) - (dmin m) dx sum(xq).
float unit_q4_k(uint blk, uint c, uint xb, bool up)
{
    uint head[9], q[9];
    if (by_quads) {
        uint at = blk >> 4u;
        uvec4 h = a_quad(at, up), lo = a_quad(at + 1u + 2u * c, up), hi = a_quad(at + 2u + 2u * c, up);
        head = uint[9](h.x, h.y, h.z, h.w, 0u, 0u, 0u, 0u, 0u);
        q = uint[9](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w, 0u);
    } else {
        load_words(blk, 4u, up, head);
        load_words(blk + 16u + 32u * c, 8u, up, q);
    }
    int i0 = 0, i1 = 0;
    [[unroll]] for (uint t = 0u; t < 8u; t++) {
        i0 += dot4(q[t] & 0x0f0f0f0fu, x_word(xb, t));
        i1 += dot4((q[t] >> 4u) & 0x0f0f0f0fu, x_word(xb + 1u, t));
    }
    uvec4 sm = dq_q4_k_scales(uvec3(head[1], head[2], head[3]), c);
    vec4 x0 = x_scale[xb], x1 = x_scale[xb + 1u];
    float d = f16_value(head[0] & 0xffffu), dmin = f16_value(head[0] >> 16u);
    return d * (float(sm.x) * x0.x * float(i0) + float(sm.z) * x1.x * float(i1)) -
           dmin * (float(sm.y) * x0.x * x0.y + float(sm.w) * x1.x * x1.y);
}

// Q6_K unit = (half h, g) of the block at `blk`: values 128h + 32k + 16g + l
// (k < 4, l < 16), each 16 under its own scale; codes (0..63, 32 too many)
// as gemv_quant.comp's unit_q6_k builds them, four bytes at a time.
float unit_q6_k(uint blk, uint h, uint g, uint xb, bool up)
{
    uint la[9], lb[9], qh[9], sc[9];
    load_words(blk + 64u * h + 16u * g, 4u, up, la);
    load_words(blk + 64u * h + 32u + 16u * g, 4u, up, lb);
    load_words(blk + 128u + 32u * h + 16u * g, 4u, up, qh);
    load_words(blk + 192u + 8u * h + g, 2u, up, sc);
    ivec4 part = ivec4(0);
    [[unroll]] for (uint t = 0u; t < 4u; t++) {
        uint a = la[t], c = lb[t], q = qh[t], o = 4u * g + t; // o: word of each x block
        part.x += dot4((a & 0x0f0f0f0fu) | ((q << 4u) & 0x30303030u), x_word(xb, o));
        part.y += dot4((c & 0x0f0f0f0fu) | ((q << 2u) & 0x30303030u), x_word(xb + 1u, o));
        part.z += dot4(((a >> 4u) & 0x0f0f0f0fu) | (q & 0x30303030u), x_word(xb + 2u, o));
        part.w += dot4(((c >> 4u) & 0x0f0f0f0fu) | ((q >> 2u) & 0x30303030u), x_word(xb + 3u, o));
    }
    vec4 half_sums = vec4(x_scale[xb][2u + g], x_scale[xb + 1u][2u + g], x_scale[xb + 2u][2u + g],
                          x_scale[xb + 3u][2u + g]);
    vec4 dx = vec4(x_scale[xb].x, x_scale[xb + 1u].x, x_scale[xb + 2u].x, x_scale[xb + 3u].x);
    vec4 scales = vec4(bitfieldExtract(int(sc[0]), 0, 8), bitfieldExtract(int(sc[0]), 16, 8),
                       bitfieldExtract(int(sc[1]), 0, 8), bitfieldExtract(int(sc[1]), 16, 8));
    vec4 sums = vec4(part) - 32.0 * half_sums; // exact: below 2^24
    uint dh[9];
    load_words(blk + 208u, 1u, up, dh);
    return f16_value(dh[0] & 0xffffu) * dot(scales * dx, sums);
}

// Units of a row: Q8_0 / Q4_0 blocks, quarters of Q4_K and Q6_K blocks.
uint units_per_row() { return DTYPE == Q8_0 || DTYPE == Q4_0 ? pc.n / 32u : pc.n / 64u; }

float add_unit(uint row_at, uint v, bool up)
{
    if (DTYPE == Q8_0 || DTYPE == Q4_0)
        return unit_block(row_at + BLOCK_BYTES * v, v, up);
    uint blk = row_at + BLOCK_BYTES * (v >> 2u), xb = 8u * (v >> 2u);
    if (DTYPE == Q4_K)
        return unit_q4_k(blk, v & 3u, xb + 2u * (v & 3u), up);
    uint h = (v >> 1u) & 1u;
    return unit_q6_k(blk, h, v & 1u, xb + 4u * h, up);
}

// Rows at at[] (ROWS of each matrix, gate's first): the loads of all in
// one loop, so that those of gate's and up's rows are in flight together.
void int_sums(uint at[ALL_ROWS], inout float s[ALL_ROWS])
{
    for (uint v = gl_SubgroupInvocationID; v < units_per_row(); v += gl_SubgroupSize)
        [[unroll]] for (uint r = 0u; r < ALL_ROWS; r++)
            s[r] += add_unit(at[r], v, r >= ROWS);
}

// ---- the float path: one element at a time ------------------------------------------

// The row at byte row_at dotted with x by one subgroup; `scaled`: the
// factors scaled down (the caller scales the sum back up).
float row_float(uint row_at, bool scaled)
{
    float total = 0.0, block = 0.0;
    uint terms = 0u;
    for (uint e = gl_SubgroupInvocationID; e < pc.n; e += gl_SubgroupSize) {
        float a = dq_value(row_at, e), x = x_at(e);
        block = scaled ? range_fma(a, x, block) : fma(a, x, block);
        if (++terms == 32u) { total += block; block = 0.0; terms = 0u; }
    }
    return subgroupAdd(total + block);
}

// alpha times rows first .. first + ROWS - 1 (clamped to m - 1) of each
// matrix (y[ROWS * mat + r]), dotted with x by the subgroup.
void products(uint first, bool int_path, out float y[ALL_ROWS])
{
    uint at[ALL_ROWS];
    float s[ALL_ROWS];
    [[unroll]] for (uint r = 0u; r < ALL_ROWS; r++) {
        at[r] = a_start(r / ROWS) + min(first + r % ROWS, pc.m - 1u) * pc.k;
        s[r] = 0.0;
    }
    if (int_path)
        int_sums(at, s);
    [[unroll]] for (uint r = 0u; r < ALL_ROWS; r++) {
        on_up = r >= ROWS;
        float sum = int_path ? subgroupAdd(s[r]) : row_float(at[r], false);
        bool scaled = !range_finite(sum); // the same in the whole subgroup
        if (scaled)
            sum = row_float(at[r], true);
        y[r] = scaled ? range_up(pc.alpha * sum) : pc.alpha * sum;
    }
}

#ifdef RAYO_ROPE
const uint PAIRS = ROWS / 2u;   // ROWS is even here (the host's spec)

// The position and the inverse frequency of each pair of rows first ..,
// read before the products (the table is in host memory: its latency
// hidden behind theirs).  Pairs past rot_dims read entry rot_dims / 2.
void rope_begin(uint first, out double pos, out double inv_freq[PAIRS])
{
    pos = double(int(d_data[pc.ext[2]]));
    [[unroll]] for (uint r = 0u; r < ROWS; r += 2u) {
        uint i = min((first + r) % pc.ext[4], pc.ext[5]) / 2u;
        inv_freq[r / 2u] = packDouble2x32(uvec2(e_data[pc.ext[3] + 2u * i], e_data[pc.ext[3] + 2u * i + 1u]));
    }
}

// Rows first + r, first + r + 1 (r even) of the product: a pair of a head
// (first is even), rotated where it is among the first rot_dims.
void rope_rows(uint first, double pos, double inv_freq[PAIRS], inout float y[ALL_ROWS])
{
    [[unroll]] for (uint r = 0u; r < ROWS; r += 2u) {
        if ((first + r) % pc.ext[4] >= pc.ext[5])
            continue;
        vec2 uv = rope_pair(pos, inv_freq[r / 2u], y[r], y[r + 1u]);
        y[r] = uv.x;
        y[r + 1u] = uv.y;
    }
}
#endif

// Rows first .. of y (those before m), with beta y added.
void store_rows(uint first, float y[ALL_ROWS])
{
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        uint row = first + r;
        if (row >= pc.m)
            break;
        float v = y[r];
        if (pc.beta != 0.0)
            v = fma(pc.beta, uintBitsToFloat(y_data[pc.oy + row]), v);
        y_data[pc.oy + row] = floatBitsToUint(v);
    }
}

#ifdef RAYO_GLU
const uint STORE_GATE = 4u, STORE_UP = 8u;

// Rows first .. of gate (y[r]), up (y[ROWS + r]) and their swiglu, each
// where it goes.
void store_glu(uint first, float y[ALL_ROWS])
{
    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
        uint row = first + r;
        if (row >= pc.m)
            break;
        float g = y[r], u = y[ROWS + r];
        if ((pc.flags & STORE_GATE) != 0u)
            y_data[pc.oy + row] = floatBitsToUint(g);
        if ((pc.flags & STORE_UP) != 0u)
            e_data[pc.ext[4] + row] = floatBitsToUint(u);
        f_data[pc.ext[5] + row] = floatBitsToUint(glu_value(OP_SWIGLU, g, u));
    }
}
#endif

void main()
{
#ifdef RAYO_NORM
    norm_begin();
#endif
    bool int_path = round_x();
    by_quads = DTYPE == Q4_K && quads_aligned();
    uint rows_per_group = gl_NumSubgroups * ROWS;
    for (uint base = gl_WorkGroupID.x * rows_per_group; base < pc.m;
         base += gl_NumWorkGroups.x * rows_per_group) {
        uint first = base + gl_SubgroupID * ROWS;
        if (first >= pc.m)
            break;              // no barrier follows
#ifdef RAYO_ROPE
        double pos, inv_freq[PAIRS];
        rope_begin(first, pos, inv_freq);
#endif
        float y[ALL_ROWS];
        products(first, int_path, y);
        if (gl_SubgroupInvocationID == 0u) {
#ifdef RAYO_ROPE
            rope_rows(first, pos, inv_freq, y);
#endif
#ifdef RAYO_GLU
            store_glu(first, y);
#else
            store_rows(first, y);
#endif
        }
    }
}

/* SPDX-License-Identifier: MIT */
#version 450
// attention_prompt.comp - relaxed attention of many queries (a prompt)
// against K and V in f32 or f16, grouped-query, causal or not.
//
// Why a module of its own: attention.comp gives a workgroup one query
// token and walks every key for it, so a prompt of n queries reads K and V
// n times and its workgroups spend most of their time in barriers around
// one key tile that serves a single query row.  Here a workgroup takes a
// block of BQ query rows that share one KV head, so each K and V tile it
// stages in shared memory serves all BQ rows.
//
// Plan: the rows of KV head h are the (token, head of h's group) pairs in
// token-major order, n_q * group of them; workgroup (x, y) takes rows
// [x BQ, x BQ + BQ) of KV head y.  Their query rows, times the scale, sit
// in shared memory.  The keys go BK at a time, up to the block's last
// visible one (causal tiles past it are never read):
//   1. the tile's K rows into shared memory (zeros past n_kv);
//   2. scores: invocation t takes RQ = BQ / 16 rows (t / 8) and RK = BK / 8
//      keys (t % 8, + 8, ...), dot products over head_dim from shared memory;
//      partial row maxima through shared memory give each row's new
//      maximum m (every invocation of a row keeps the same m, l in
//      registers); the weights p = e^(s - m) of visible keys (0 for the
//      others) go to shared memory with their partial sums, and the factor
//      e^(m_old - m) for the output accumulated so far;
//   3. the tile's V rows into the same shared memory as K;
//   4. outputs: invocation t owns rows (t / 32) NR.. (NR = BQ / 4) and
//      dimensions t % 32 + 32 i, acc = acc f + sum_j p_j v_j.  Where the
//      causal mask cuts through the tile, a weight of a hidden key adds
//      nothing, not 0 times its value (a NaN or inf there is not this
//      row's); elsewhere every row sees every key and the product is one
//      fma.
// Then out = acc / l.  One dispatch, no scratch: a prompt has enough rows
// to fill the device without cutting the keys into chunks.
//
// Shared memory: (BQ + BK) (head_dim | 1) + BQ (BK + 1) + 16 BQ floats
// (odd row strides: the invocations reading one column hit distinct
// banks); vk-infer.c picks BQ and BK to fit the device (NVIDIA: 32 x 32 at
// head_dim 128, 38 KiB; lavapipe: 16 x 32, 27 KiB).
//
// Accuracy: the relaxed contract (2e-3, core/rayo-ops.h), all in float
// as in attention.comp's RAYO_F32 module and attention_dec.comp (whose
// header gives the error budget); the scale is folded into the query.
// Exponentials are rmath.glsl's r_exp (about 1 ulp); f16 values are
// decoded exactly (half.glsl).  Strict calls stay on attention.comp.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "rmath.glsl"
#include "half.glsl"

#include "attention.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 1) const bool KV_F16 = false;
layout(constant_id = 2) const uint D = 128u;    // head_dim
layout(constant_id = 3) const uint BQ = 32u;    // query rows of a workgroup: 16 or 32
layout(constant_id = 4) const uint BK = 32u;    // keys of a tile: 8, 16 or 32

const uint WG = 128u;
const uint DP = D | 1u, BKP = BK + 1u;          // row strides in shared memory
const uint RQ = BQ / 16u, RK = BK / 8u;         // scores of an invocation: rows x keys
const uint NR = BQ / 4u, ND = (D + 31u) / 32u;  // outputs of an invocation: rows x dimensions

shared float qs[BQ * DP];       // the block's query rows, scaled
shared float kv[BK * DP];       // the tile's K rows, then its V rows
shared float ps[BQ * BKP];      // the tile's weights
shared float part[BQ * 8u];     // partial row maxima, then sums
shared float shrink[BQ];        // e^(m_old - m_new) of each row
shared float l_out[BQ];         // the rows' sums, for the last step

// per invocation: m and l of its score rows (the same in the 8
// invocations of a row), acc of its outputs
float m[RQ], l[RQ], acc[NR * ND];

float kv_value(bool is_k, uint e)
{
    uint i = (is_k ? pc.ok : pc.ov) + e;
    if (!KV_F16)
        return uintBitsToFloat(is_k ? k_data[i] : v_data[i]);
    uint w = is_k ? k_data[i >> 1u] : v_data[i >> 1u];
    return f16_value((w >> (16u * (i & 1u))) & 0xffffu);
}

// Row r of the KV head: its token and query head.
uint row_token(uint r) { return r / pc.group; }
uint row_head(uint kv_head, uint r) { return kv_head * pc.group + r % pc.group; }

// Keys row r sees: all but the causal mask's (rows past the last: all,
// with a zero query; their results are not stored).
uint visible(uint r)
{
    bool causal = (pc.flags & 1u) != 0u;
    return causal && r < pc.n_q * pc.group ? pc.n_kv - pc.n_q + row_token(r) + 1u : pc.n_kv;
}

void stage_queries(uint kv_head, uint r0)
{
    for (uint e = gl_LocalInvocationID.x; e < BQ * D; e += WG) {
        uint i = e / D, d = e % D, r = r0 + i;
        float q = 0.0;
        if (r < pc.n_q * pc.group)
            q = q_data[pc.oq + row_token(r) * pc.q_token + row_head(kv_head, r) * pc.q_head + d] * pc.scale;
        qs[i * DP + d] = q;
    }
}

// K or V rows key0.. of the tile into kv (zeros past n_kv).
void stage_rows(bool is_k, uint kv_head, uint key0)
{
    uint token = is_k ? pc.k_token : pc.v_token, head = is_k ? pc.k_head : pc.v_head;
    for (uint e = gl_LocalInvocationID.x; e < BK * D; e += WG) {
        uint j = e / D, d = e % D, key = key0 + j;
        kv[j * DP + d] = key < pc.n_kv ? kv_value(is_k, key * token + kv_head * head + d) : 0.0;
    }
}

// Step 2: the weights of the tile into ps, the factors into shrink; m
// and l of this invocation's score rows rescaled (l's new terms are added
// after the next barrier).
void tile_weights(uint r0, uint key0)
{
    uint t = gl_LocalInvocationID.x, kl = t % 8u, rg = t / 8u;
    float s[RQ * RK];
    [[unroll]] for (uint x = 0u; x < RQ * RK; x++)
        s[x] = 0.0;
    for (uint d = 0u; d < D; d++) {
        float q[RQ];
        [[unroll]] for (uint i = 0u; i < RQ; i++)
            q[i] = qs[(rg * RQ + i) * DP + d];
        [[unroll]] for (uint j = 0u; j < RK; j++) {
            float k = kv[(kl + 8u * j) * DP + d];
            [[unroll]] for (uint i = 0u; i < RQ; i++)
                s[i * RK + j] += q[i] * k;
        }
    }
    float m_new[RQ];
    [[unroll]] for (uint i = 0u; i < RQ; i++) {
        uint row = rg * RQ + i, vis = visible(r0 + row);
        float mx = -R_INF;
        [[unroll]] for (uint j = 0u; j < RK; j++)
            mx = key0 + kl + 8u * j < vis ? max(mx, s[i * RK + j]) : mx;
        part[row * 8u + kl] = mx;
    }
    barrier();
    [[unroll]] for (uint i = 0u; i < RQ; i++) {
        uint row = rg * RQ + i;
        m_new[i] = m[i];
        [[unroll]] for (uint c = 0u; c < 8u; c++)
            m_new[i] = max(m_new[i], part[row * 8u + c]);
    }
    barrier();                  // every row's maxima are read: part takes the sums
    [[unroll]] for (uint i = 0u; i < RQ; i++) {
        uint row = rg * RQ + i, vis = visible(r0 + row);
        float sum = 0.0;
        [[unroll]] for (uint j = 0u; j < RK; j++) {
            uint key = kl + 8u * j;
            float p = key0 + key < vis ? r_exp(s[i * RK + j] - m_new[i]) : 0.0;
            ps[row * BKP + key] = p;
            sum += p;
        }
        part[row * 8u + kl] = sum;
        // a row with no visible key yet keeps m = -inf: factor 1, not e^(-inf + inf)
        float f = m_new[i] == m[i] ? 1.0 : r_exp(m[i] - m_new[i]);
        if (kl == 0u)
            shrink[row] = f;
        l[i] *= f;
        m[i] = m_new[i];
    }
}

// Step 4: acc of this invocation's rows and dimensions over the tile's V
// rows (in kv); MASKED where the causal mask cuts through the tile.
void tile_values(uint r0, uint key0, bool masked)
{
    uint t = gl_LocalInvocationID.x, lane = t % 32u, rg = t / 32u;
    uint vis[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        float f = shrink[rg * NR + i];
        vis[i] = visible(r0 + rg * NR + i);
        [[unroll]] for (uint c = 0u; c < ND; c++)
            acc[i * ND + c] *= f;
    }
    for (uint j = 0u; j < BK; j++) {
        float v[ND];
        [[unroll]] for (uint c = 0u; c < ND; c++)
            v[c] = kv[j * DP + min(lane + 32u * c, D - 1u)];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            float p = ps[(rg * NR + i) * BKP + j];
            bool seen = !masked || key0 + j < vis[i];
            [[unroll]] for (uint c = 0u; c < ND; c++)
                acc[i * ND + c] += seen ? p * v[c] : 0.0;
        }
    }
}

void attend_block(uint kv_head, uint r0)
{
    uint t = gl_LocalInvocationID.x, rows = pc.n_q * pc.group;
    uint last = min(r0 + BQ, rows) - 1u, k1 = visible(last), clean = visible(r0);
    [[unroll]] for (uint i = 0u; i < RQ; i++) {
        m[i] = -R_INF;
        l[i] = 0.0;
    }
    [[unroll]] for (uint x = 0u; x < NR * ND; x++)
        acc[x] = 0.0;
    barrier();                  // the previous block's readers of qs and l_out are done
    stage_queries(kv_head, r0);
    for (uint key0 = 0u; key0 < k1; key0 += BK) {
        stage_rows(true, kv_head, key0);
        barrier();
        tile_weights(r0, key0);
        barrier();              // K and the weights' sums are read
        stage_rows(false, kv_head, key0);
        [[unroll]] for (uint i = 0u; i < RQ; i++) {
            uint row = (t / 8u) * RQ + i;
            [[unroll]] for (uint c = 0u; c < 8u; c++)
                l[i] += part[row * 8u + c];
        }
        barrier();
        if (key0 + BK <= clean)
            tile_values(r0, key0, false);
        else
            tile_values(r0, key0, true);
        barrier();              // kv, ps and shrink are rewritten by the next tile
    }
    if (t % 8u == 0u)
        [[unroll]] for (uint i = 0u; i < RQ; i++)
            l_out[(t / 8u) * RQ + i] = l[i];
    barrier();
    uint lane = t % 32u, rg = t / 32u;
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        uint row = rg * NR + i, r = r0 + row;
        if (r >= rows)
            break;
        uint at = pc.oo + row_token(r) * pc.o_token + row_head(kv_head, r) * pc.o_head;
        [[unroll]] for (uint c = 0u; c < ND; c++)
            if (lane + 32u * c < D)
                o_data[at + lane + 32u * c] = acc[i * ND + c] / l_out[row];
    }
}

void main()
{
    uint blocks = (pc.n_q * pc.group + BQ - 1u) / BQ;
    for (uint kv_head = gl_WorkGroupID.y; kv_head < pc.n_heads / pc.group; kv_head += gl_NumWorkGroups.y)
        for (uint b = gl_WorkGroupID.x; b < blocks; b += gl_NumWorkGroups.x)
            attend_block(kv_head, b * BQ);
}

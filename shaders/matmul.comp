/* SPDX-License-Identifier: MIT */
#version 450
// matmul.comp - C = alpha op(A) op(B) + beta C, row-major, float32.
//
// Tiled in shared memory with register blocking: a workgroup computes a
// BM x BN tile of C, each invocation a TM x TN block of it (in groups of
// 4 x 4 spread over the tile so that shared-memory reads are contiguous and
// conflict-free).  A and B stream through shared memory BK columns/rows at a
// time, double-buffered: the next tile is fetched into registers while the
// current one is multiplied, so one barrier per step suffices.  As holds
// op(A) k-major (As[k][m]) so both operands are read as vec4 along m and n.
//
// Variants: RAYO_ALIGNED (m % BM == n % BN == k % BK == 0 and operands at
// multiples of 16 bytes) loads vec4 from global memory without bounds
// checks; the generic one loads floats with bounds checks (any shape).
// An element whose flush is not finite (its block sum, or that added to
// the blocks before it in C) is summed again from A and B with scaled
// factors (common.glsl: the range contract), from that block to the end of
// k at once, with C's earlier value scaled too; later flushes leave the
// element alone.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef RAYO_ALIGNED
#define RAYO_VEC4
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 8;
layout(constant_id = 4) const uint TM = 8;
layout(constant_id = 5) const uint TN = 8;
layout(constant_id = 6) const bool TRANS_A = false;
layout(constant_id = 7) const bool TRANS_B = false;

const uint WX = BN / TN;            // invocations along n
const uint WY = BM / TM;            // invocations along m
const uint WG = WX * WY;
const uint BM4 = BM / 4u, BN4 = BN / 4u;
const uint A_PER = BM * BK / WG;    // floats of the A tile each invocation loads
const uint B_PER = BN * BK / WG;

shared vec4 As[2u * BK * BM4];
shared vec4 Bs[2u * BK * BN4];

#ifdef RAYO_ALIGNED
vec4 a_reg[A_PER / 4u];
vec4 b_reg[B_PER / 4u];
#else
float a_reg[A_PER];
float b_reg[B_PER];
#endif

// ---- global -> registers (tile starting at k0) ----------------------------
#ifdef RAYO_ALIGNED
void fetch(uint row0, uint col0, uint k0)
{
    uint t = gl_LocalInvocationID.x;
    for (uint l = 0u; l < A_PER / 4u; l++) {
        uint q = t + l * WG;
        if (TRANS_A) {      // A is k x m: vec4 along m
            uint kk = q / BM4, r4 = q % BM4;
            a_reg[l] = a_data[pc.oa + ((k0 + kk) * pc.m + row0) / 4u + r4];
        } else {            // A is m x k: vec4 along k
            uint r = q / (BK / 4u), c4 = q % (BK / 4u);
            a_reg[l] = a_data[pc.oa + ((row0 + r) * pc.k + k0) / 4u + c4];
        }
    }
    for (uint l = 0u; l < B_PER / 4u; l++) {
        uint q = t + l * WG;
        if (TRANS_B) {      // B is n x k: vec4 along k
            uint c = q / (BK / 4u), k4 = q % (BK / 4u);
            b_reg[l] = b_data[pc.ob + ((col0 + c) * pc.k + k0) / 4u + k4];
        } else {            // B is k x n: vec4 along n
            uint kk = q / BN4, c4 = q % BN4;
            b_reg[l] = b_data[pc.ob + ((k0 + kk) * pc.n + col0) / 4u + c4];
        }
    }
}

void stash(uint buf)
{
    uint t = gl_LocalInvocationID.x;
    uint abase = buf * BK * BM4, bbase = buf * BK * BN4;
    for (uint l = 0u; l < A_PER / 4u; l++) {
        uint q = t + l * WG;
        if (TRANS_A) {
            As[abase + q] = a_reg[l];
        } else {
            uint r = q / (BK / 4u), c4 = q % (BK / 4u);
            for (uint e = 0u; e < 4u; e++)
                As[abase + (c4 * 4u + e) * BM4 + r / 4u][r % 4u] = a_reg[l][e];
        }
    }
    for (uint l = 0u; l < B_PER / 4u; l++) {
        uint q = t + l * WG;
        if (TRANS_B) {
            uint c = q / (BK / 4u), k4 = q % (BK / 4u);
            for (uint e = 0u; e < 4u; e++)
                Bs[bbase + (k4 * 4u + e) * BN4 + c / 4u][c % 4u] = b_reg[l][e];
        } else {
            Bs[bbase + q] = b_reg[l];
        }
    }
}
#else
// Element (r, kk) of op(A)'s tile and (kk, c) of op(B)'s, zero outside.
void fetch(uint row0, uint col0, uint k0)
{
    uint t = gl_LocalInvocationID.x;
    for (uint l = 0u; l < A_PER; l++) {
        uint q = t + l * WG;
        uint r, kk;
        if (TRANS_A) { kk = q / BM; r = q % BM; }   // consecutive along m
        else { r = q / BK; kk = q % BK; }           // consecutive along k
        uint gr = row0 + r, gk = k0 + kk;
        float v = 0.0;
        if (gr < pc.m && gk < pc.k)
            v = a_data[pc.oa + (TRANS_A ? gk * pc.m + gr : gr * pc.k + gk)];
        a_reg[l] = v;
    }
    for (uint l = 0u; l < B_PER; l++) {
        uint q = t + l * WG;
        uint c, kk;
        if (TRANS_B) { c = q / BK; kk = q % BK; }
        else { kk = q / BN; c = q % BN; }
        uint gc = col0 + c, gk = k0 + kk;
        float v = 0.0;
        if (gc < pc.n && gk < pc.k)
            v = b_data[pc.ob + (TRANS_B ? gc * pc.k + gk : gk * pc.n + gc)];
        b_reg[l] = v;
    }
}

void stash(uint buf)
{
    uint t = gl_LocalInvocationID.x;
    uint abase = buf * BK * BM4, bbase = buf * BK * BN4;
    for (uint l = 0u; l < A_PER; l++) {
        uint q = t + l * WG;
        uint r, kk;
        if (TRANS_A) { kk = q / BM; r = q % BM; }
        else { r = q / BK; kk = q % BK; }
        As[abase + kk * BM4 + r / 4u][r % 4u] = a_reg[l];
    }
    for (uint l = 0u; l < B_PER; l++) {
        uint q = t + l * WG;
        uint c, kk;
        if (TRANS_B) { c = q / BK; kk = q % BK; }
        else { kk = q / BN; c = q % BN; }
        Bs[bbase + kk * BN4 + c / 4u][c % 4u] = b_reg[l];
    }
}
#endif

// The invocation's TM x TN block of C, as vec4s along n.
vec4 acc[TM * TN / 4u];

// Blocked accumulation: acc holds float sums over pc.aux tile steps (the
// host picks about sqrt(k) terms, at least 256), which this adds into C
// itself, the second sums: rounding then grows with the block plus the
// number of blocks, not with k.  The second sums live in C, not in
// registers (64 more would halve the workgroups an NVIDIA SM holds: 42%
// slower) nor in shared memory (64 KiB, past NVIDIA's 48 KiB): C's tile
// stays in the cache between flushes, and each invocation reads back
// only what it wrote.  The first flush writes alpha acc + beta C (C is not
// read when beta == 0), later ones add alpha acc; acc restarts at 0.
float a_at(uint i)
{
#ifdef RAYO_ALIGNED
    return a_data[pc.oa + i / 4u][i % 4u];
#else
    return a_data[pc.oa + i];
#endif
}

float b_at(uint i)
{
#ifdef RAYO_ALIGNED
    return b_data[pc.ob + i / 4u][i % 4u];
#else
    return b_data[pc.ob + i];
#endif
}

float y_at(uint o)
{
#ifdef RAYO_ALIGNED
    return y_data[pc.oy + o / 4u][o % 4u];
#else
    return y_data[pc.oy + o];
#endif
}

float c_at(uint o)
{
#ifdef RAYO_ALIGNED
    return c_data[pc.oc + o / 4u][o % 4u];
#else
    return c_data[pc.oc + o];
#endif
}

// C(row, col)'s sum over k in [lo, hi), from A and B with scaled factors,
// in float blocks of 32 terms.  The block's loop is unrolled: lavapipe
// stops an invocation after 65,535 loop iterations, which one loop per
// term would pass where an invocation redoes several elements of a long k.
float sum_scaled(uint row, uint col, uint lo, uint hi)
{
    float total = 0.0;
    for (uint k0 = lo; k0 < hi; k0 += 32u) {
        float block = 0.0;
        [[unroll]] for (uint u = 0u; u < 32u; u++) {
            uint kk = k0 + u;
            if (kk < hi) {
                float a = a_at(TRANS_A ? kk * pc.m + row : row * pc.k + kk);
                float b = b_at(TRANS_B ? col * pc.k + kk : kk * pc.n + col);
                block = range_fma(a, b, block);
            }
        }
        total += block;
    }
    return total;
}

float range_down(float v)
{
    precise float r = v * RANGE_DOWN * RANGE_DOWN;
    return r;
}

// The final C(row, col) where a flush from k = `from` made it not finite
// (its block sum, or that plus what C held: the second sums overflow as
// well as the first): what C held before the flush (beta C on the first)
// plus alpha times the sum from `from` to the end of k, all scaled.
float total_scaled(uint row, uint col, uint from, bool first)
{
    uint o = row * pc.n + col;
    float before = !first ? range_down(y_at(o)) : pc.beta != 0.0 ? pc.beta * range_down(c_at(o)) : 0.0;
    return range_up(fma(pc.alpha, sum_scaled(row, col, from, pc.k), before));
}

// Bit i: element i of the invocation's block (acc[i / 4][i % 4]) holds its
// final value in C (total_scaled); any_redone: some bit is set.
uint redone[(TM * TN + 31u) / 32u];
bool any_redone;

// What the flush writes to C(row, col) for element i of acc, given r (C
// plus the block): r where finite; C unchanged for an element done before;
// else its final value, from scaled factors.
float settle(float r, uint i, uint row, uint col, uint from, bool first)
{
    uint bit = 1u << (i % 32u);
    if ((redone[i / 32u] & bit) != 0u)
        return y_at(row * pc.n + col);
    if (range_finite(r) || row >= pc.m || col >= pc.n)
        return r;
    redone[i / 32u] |= bit;
    any_redone = true;
    return total_scaled(row, col, from, first);
}

void flush(uint row0, uint col0, uint tx, uint ty, bool first, uint from)
{
    for (uint i = 0u; i < TM / 4u; i++)
        for (uint ii = 0u; ii < 4u; ii++) {
            uint row = row0 + (ty + i * WY) * 4u + ii;
            for (uint j = 0u; j < TN / 4u; j++) {
                uint col = col0 + (tx + j * WX) * 4u;
                uint a = (i * 4u + ii) * (TN / 4u) + j;
                vec4 v = pc.alpha * acc[a];
                acc[a] = vec4(0.0);
#ifdef RAYO_ALIGNED
                uint o = (row * pc.n + col) / 4u;
                if (!first)
                    v += y_data[pc.oy + o];
                else if (pc.beta != 0.0)
                    v = fma(vec4(pc.beta), c_data[pc.oc + o], v);
                if (any_redone || !range_finite(v.x) || !range_finite(v.y) ||
                    !range_finite(v.z) || !range_finite(v.w))
                    for (uint e = 0u; e < 4u; e++)
                        v[e] = settle(v[e], 4u * a + e, row, col + e, from, first);
                y_data[pc.oy + o] = v;
#else
                if (row >= pc.m)
                    continue;
                for (uint e = 0u; e < 4u; e++) {
                    if (col + e >= pc.n)
                        break;
                    uint o = row * pc.n + col + e;
                    float r = v[e];
                    if (!first)
                        r += y_data[pc.oy + o];
                    else if (pc.beta != 0.0)
                        r = fma(pc.beta, c_data[pc.oc + o], r);
                    if (any_redone || !range_finite(r))
                        r = settle(r, 4u * a + e, row, col + e, from, first);
                    y_data[pc.oy + o] = r;
                }
#endif
            }
        }
}

void main()
{
    uint tx = gl_LocalInvocationID.x % WX, ty = gl_LocalInvocationID.x / WX;
    uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;

    for (uint i = 0u; i < TM * TN / 4u; i++)
        acc[i] = vec4(0.0);
    for (uint i = 0u; i < (TM * TN + 31u) / 32u; i++)
        redone[i] = 0u;
    any_redone = false;

    uint steps = (pc.k + BK - 1u) / BK;
    fetch(row0, col0, 0u);
    stash(0u);
    barrier();
    // blocks of pc.aux steps; the inner loop is the plain tiled loop
    bool first = true;
    for (uint s = 0u, from = 0u;; from = s) {
        for (uint end = min(s + pc.aux, steps); s < end; s++) {
            uint buf = s & 1u;
            if (s + 1u < steps)
                fetch(row0, col0, (s + 1u) * BK);
            uint abase = buf * BK * BM4, bbase = buf * BK * BN4;
            for (uint kk = 0u; kk < BK; kk++) {
                vec4 av[TM / 4u], bv[TN / 4u];
                for (uint i = 0u; i < TM / 4u; i++)
                    av[i] = As[abase + kk * BM4 + ty + i * WY];
                for (uint j = 0u; j < TN / 4u; j++)
                    bv[j] = Bs[bbase + kk * BN4 + tx + j * WX];
                for (uint i = 0u; i < TM / 4u; i++)
                    for (uint ii = 0u; ii < 4u; ii++)
                        for (uint j = 0u; j < TN / 4u; j++)
                            acc[(i * 4u + ii) * (TN / 4u) + j] =
                                fma(vec4(av[i][ii]), bv[j], acc[(i * 4u + ii) * (TN / 4u) + j]);
            }
            if (s + 1u < steps)
                stash(buf ^ 1u);
            barrier();
        }
        if (s >= steps) {
            flush(row0, col0, tx, ty, first, from * BK);
            break;
        }
        flush(row0, col0, tx, ty, first, from * BK);
        first = false;
    }
}

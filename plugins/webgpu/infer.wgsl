// SPDX-License-Identifier: MIT
// infer.wgsl - inference ops of the webgpu plugin: swiglu, geglu,
// geglu_tanh (GLU), get_rows from an f32, f16, bf16, Q8_0, Q4_0, Q4_K or
// Q6_K table, and convert from those dtypes to f32.  Part of the module of
// kernels.wgsl (parameters, bindings, the block readers of its typed gemv).
// The dequantized values are the formulas of core/rayo-dtype.h, term by
// term (the ops' contract is exact).

// ---- gated units: y = f(a) * b, f(a) = a w(a) ---------------------------------
// Left of -2 the weight w (sigmoid, Phi or the tanh form's sigmoid) is
// small, and b may be huge (1e30): w is computed times 2^64 (WS) from an
// exponent kept exact (2^64 joins the exponent of exp; z^2 and the tanh
// form's cubic as two floats, their low parts by Dekker's product: a
// rounded exponent of size 60 costs 4e-6), and a w b comes out of ordered
// products that neither overflow nor lose w to the denormal range.
const WS_BITS: i32 = 64;
const TWO_M64: f32 = 5.421010862427522e-20;   // 2^-64

// e^(x + extra) 2^s: x reduced exactly (Cody-Waite), extra small; 0 where
// it is below 2^-252.
fn exp_scaled(x: f32, extra: f32, s: i32) -> f32 {
    if (x < -170.0) { return 0.0; }
    let k = round(x * R_LOG2E);
    let r = fma(-k, R_LN2_LO, fma(-k, R_LN2_HI, x));
    let e = i32(k) + s;
    if (e < -252) { return 0.0; }
    return r_scale2(exp2((r + extra) * R_LOG2E), e);
}

// sigmoid(a) 2^64 for a < 0
fn ws_silu(a: f32) -> f32 { return r_div(exp_scaled(a, 0.0, WS_BITS), 1.0 + r_exp(a)); }

// Phi(a) 2^64 for a < 0: erfc(z) / 2 with z^2 = a^2 / 2 as hi + lo (r_erfc_pos's fit)
fn ws_gelu(a: f32) -> f32 {
    if (a < -30.0) { return 0.0; }        // Phi(-30) ~ 1e-198 (and a^2 may overflow)
    let t = r_rcp(fma(0.5, abs(a) * 0.70710678118654752, 1.0));
    let q = r_erfc_fit(t);
    let hi = a * a;
    let lo = prod_err(a, a, hi);
    return 0.5 * t * exp_scaled(-0.5 * hi, q, WS_BITS) * (1.0 - 0.5 * lo);
}

// 2 sqrt(2/pi) (a + 0.044715 a^3) as hi + lo, and sigmoid of it times 2^64
fn ws_gelu_tanh(a: f32) -> f32 {
    if (a < -30.0) { return 0.0; }
    let c1h: f32 = 1.5957691669464111;
    let c1l: f32 = -4.534068054340423e-08;
    let c3h: f32 = 0.07135481387376785;
    let c3l: f32 = 2.3988324659995897e-09;
    let t1h = c1h * a;
    let t1l = prod_err(c1h, a, t1h) + c1l * a;
    let a2h = a * a;
    let a2l = prod_err(a, a, a2h);
    let a3h = a2h * a;
    let a3l = prod_err(a2h, a, a3h) + a2l * a;
    let t3h = c3h * a3h;
    let t3l = prod_err(c3h, a3h, t3h) + (c3h * a3l + c3l * a3h);
    let uh = t1h + t3h;
    let bb = uh - t1h;
    let ul = ((t1h - (uh - bb)) + (t3h - bb)) + (t1l + t3l);
    return r_div(exp_scaled(uh, ul, WS_BITS), 1.0 + r_exp(uh));
}

fn glu_value(a: f32, b: f32) -> f32 {
    if (r_isnan(a) || !(a < -2.0)) {
        switch OP {
            case OP_SWIGLU: { return r_silu(a) * b; }
            case OP_GEGLU: { return r_gelu(a) * b; }
            default: { return r_gelu_tanh(a) * b; }
        }
    }
    var ws: f32;
    switch OP {
        case OP_SWIGLU: { ws = ws_silu(a); }
        case OP_GEGLU: { ws = ws_gelu(a); }
        default: { ws = ws_gelu_tanh(a); }
    }
    let t = a * ws;
    if (abs(b) >= 1.0) { return t * (b * TWO_M64); }
    return (t * b) * TWO_M64;
}

// y = f(a) * b over m rows of n, each operand with its row stride.
@compute @workgroup_size(256)
fn glu(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let total = p.m * p.n;
    for (var o = gid.x; o < total; o += groups.x * WG) {
        let r = o / p.n;
        let j = o % p.n;
        let v = glu_value(a_f32(p.oa + r * p.lda + j), b_data[p.ob + r * p.ldb + j]);
        y_data[p.oy + r * p.ldy + j] = v;
    }
}

// Value i of the block of dtype p.dta at byte blk.
fn q4_k_value(blk: u32, i: u32) -> f32 {
    let s = i / 32u;
    let sm = q4k_scale_min(blk, s);
    let q = (byte_at(blk + 16u + 32u * (s / 2u) + i % 32u) >> (4u * (s & 1u))) & 15u;
    let ds = half_at(blk) * sm.x;
    let ms = half_at(blk + 2u) * sm.y;
    return ds * f32(q) - ms;
}

fn q6_k_value(blk: u32, v: u32) -> f32 {
    let h = v / 128u;
    let k = (v % 128u) / 32u;
    let l = v % 32u;
    let low = (byte_at(blk + 64u * h + 32u * (k & 1u) + l) >> (4u * (k / 2u))) & 15u;
    let high = (byte_at(blk + 128u + 32u * h + l) >> (2u * k)) & 3u;
    let ds = half_at(blk + 208u) * i8_at(blk + 192u + v / 16u);
    return ds * f32(i32(low | (high << 4u)) - 32);
}

fn block_value(blk: u32, i: u32) -> f32 {
    switch p.dta {
        case DT_F16: { return half_at(blk); }
        case DT_BF16: { return bitcast<f32>(u16_at(blk) << 16u); }
        case DT_Q8_0: { return half_at(blk) * i8_at(blk + 2u + i); }
        case DT_Q4_0: {
            let q = (byte_at(blk + 2u + i % 16u) >> (4u * (i / 16u))) & 15u;
            return half_at(blk) * f32(i32(q) - 8);
        }
        case DT_Q4_K: { return q4_k_value(blk, i); }
        default: { return q6_k_value(blk, i); }
    }
}

// Element j of row `row` of a (row stride p.lda elements), as f32.
fn a_value(row: u32, j: u32) -> f32 {
    if (p.dta == 0u) { return a_f32(p.oa + row * p.lda + j); }
    let be = block_elems(p.dta);
    let row_bytes = (p.lda / be) * block_bytes(p.dta);
    let blk = p.oa * 4u + row * row_bytes + (j / be) * block_bytes(p.dta);
    return block_value(blk, j % be);
}

// The indices of get_rows (b), as words: only this entry point binds b so.
@group(0) @binding(2) var<storage, read> b_words: array<u32>;

// y[r][j] = a[b[r]][j]: one invocation per output.
@compute @workgroup_size(256)
fn get_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let total = p.m * p.n;
    for (var o = gid.x; o < total; o += groups.x * WG) {
        let r = o / p.n;
        let j = o % p.n;
        y_data[p.oy + r * p.ldy + j] = a_value(b_words[p.ob + r], j);
    }
}

// convert to f32: n elements of a as one row.
@compute @workgroup_size(256)
fn convert(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    for (var j = gid.x; j < p.n; j += groups.x * WG) { y_data[p.oy + j] = a_value(0u, j); }
}

// ---- rope and attention: their parameters in p.ext (webgpu-plugin.c) ----------
fn ext(i: u32) -> u32 { return p.ext[i / 4u][i % 4u]; }
// rope's frequencies (hi, lo pairs) and attention's v, as words
@group(0) @binding(3) var<storage, read> c_words: array<u32>;

// x y + its rounding error where that is finite (inf and NaN products keep
// their own value)
fn prod_fix(x: f32, y: f32) -> vec2<f32> {
    let xy = x * y;
    let e = prod_err(x, y, xy);
    return vec2<f32>(xy, select(0.0, e, r_finite(e)));
}

// cos and sin of pos (hi + lo): the quadrant k from the angle in two
// floats (pi/2 in two parts, k pi/2's high product exact), then Taylor
// series on |r| <= pi/4.
fn rope_cos_sin(pos: f32, fh: f32, fl: f32) -> vec2<f32> {
    let th = prod_fix(pos, fh);
    let k = round(th.x * 0.6366197723675814);
    let kp = prod_fix(k, 1.5707963705062866);
    let r = (((th.x - kp.x) - kp.y) + k * 4.371138828673793e-08) + (th.y + pos * fl);
    let r2 = r * r;
    let s = r * (1.0 + r2 * (-1.6666667e-1 + r2 * (8.3333333e-3 + r2 * (-1.9841270e-4 +
            r2 * (2.7557319e-6 + r2 * -2.5052108e-8)))));
    let c = 1.0 + r2 * (-0.5 + r2 * (4.1666667e-2 + r2 * (-1.3888889e-3 + r2 * (2.4801587e-5 +
            r2 * (-2.7557319e-7 + r2 * 2.0876757e-9)))));
    let q = ((i32(k) % 4) + 4) % 4;
    if (q == 0) { return vec2<f32>(c, s); }
    if (q == 1) { return vec2<f32>(-s, c); }
    if (q == 2) { return vec2<f32>(-c, -s); }
    return vec2<f32>(s, -c);
}

// x1 y1 + x2 y2 rounded once but for the products' low parts' rounding
fn dot2(x1: f32, y1: f32, x2: f32, y2: f32) -> f32 {
    let a = prod_fix(x1, y1);
    let b = prod_fix(x2, y2);
    return (a.x + b.x) + (a.y + b.y);
}

// One invocation per (token, head, pair or copied dimension).
@compute @workgroup_size(64)
fn rope(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let half = ext(1u) / 2u;
    let per_head = ext(3u) - half;
    let per_token = ext(2u) * per_head;
    for (var e = gid.x; e < p.m * per_token; e += groups.x * WD) {
        let t = e / per_token;
        let h = (e % per_token) / per_head;
        let i = e % per_head;
        let x0 = p.oa + t * ext(6u) + h * ext(4u);
        let y0 = p.oy + t * ext(7u) + h * ext(5u);
        if (i >= half) {
            let d = ext(1u) + (i - half);
            y_data[y0 + d] = a_f32(x0 + d);
            continue;
        }
        let iu = select(2u * i, i, ext(0u) == 1u);
        let iv = select(2u * i + 1u, i + half, ext(0u) == 1u);
        let pos = f32(bitcast<i32>(b_words[p.ob + t]));
        let cs = rope_cos_sin(pos, bitcast<f32>(c_words[2u * i]), bitcast<f32>(c_words[2u * i + 1u]));
        let u = a_f32(x0 + iu);
        let v = a_f32(x0 + iv);
        y_data[y0 + iu] = dot2(u, cs.x, -v, cs.y);
        y_data[y0 + iv] = dot2(u, cs.y, v, cs.x);
    }
}

// attention's k and v, element e past their offsets: f32, or f16 (p.dta)
// read from their words (no shader-f16 needed; offsets count words)
fn half_in_words(w: u32, e: u32) -> f32 { return half_to_f32((w >> (16u * (e % 2u))) & 0xffffu); }
fn k_at(e: u32) -> f32 {
    if (p.dta == DT_F16) { let t = 2u * p.ob + e; return half_in_words(b_words[t / 2u], t); }
    return bitcast<f32>(b_words[p.ob + e]);
}
fn v_at(e: u32) -> f32 {
    if (p.dta == DT_F16) { let t = 2u * p.oc + e; return half_in_words(c_words[t / 2u], t); }
    return bitcast<f32>(c_words[p.oc + e]);
}

// attention: one workgroup of WD invocations per (query i, head h), the
// pairs looped by workgroup.  Each score is computed twice per pair (the
// maximum, then the weights), each time by one invocation: for the
// maximum the invocations split the keys and combine their maxima
// (wg_max: WR is WD; nan_max gives the same maximum in any order, but for
// the sign of a zero maximum, which no weight sees); for the weights they
// compute WD keys' weights at a time into workgroup memory, and every
// invocation adds them in key order into its own denominator and output
// dimensions (t, t + WD, ...): the same sums, term for term, as one
// invocation looping over the keys.  The loops' bounds come from p and
// the workgroup id, so the barriers sit in uniform control flow.  A score
// is head_dim compensated products: even on a software adapter, where
// barriers are slow (kernels.wgsl), sharing it beats computing it again
// for each group of output dimensions.
// Scores as two floats (hi, lo): with scores ~3e3 a rounded score alone
// moves its weight e^(s - max) by 1e-4; s - max is then (hi - max) + lo,
// hi - max exact (the max is a hi).
// An invocation sums ATTN_SUMS output dimensions a pass: head_dim up to
// WD ATTN_SUMS (256) takes one pass, a larger one a pass per 256
// dimensions, each computing its weights again.
const ATTN_SUMS: u32 = 4u;
var<workgroup> attn_w: array<f32, WD>;    // the weights of keys c0 .. c0 + WD - 1

fn attn_score(i: u32, h: u32, j: u32) -> vec2<f32> {
    let kvh = h / (ext(2u) / ext(3u));
    let q0 = p.oa + i * ext(7u) + h * ext(8u);
    let k0 = j * ext(9u) + kvh * ext(10u);
    var hi: f32 = 0.0;
    var lo: f32 = 0.0;
    for (var d = 0u; d < ext(4u); d++) {
        let pr = prod_fix(a_f32(q0 + d), k_at(k0 + d));
        let t = hi + pr.x;
        let bb = t - hi;
        let e = (hi - (t - bb)) + (pr.x - bb);
        hi = t;
        lo += select(0.0, e, r_finite(e)) + pr.y;
    }
    let scale = bitcast<f32>(ext(5u));
    let sc = prod_fix(scale, hi);
    return vec2<f32>(sc.x, sc.y + scale * lo);
}

// One pass: den and the output dimensions d0 + t + WD c of (i, h) from
// the weights against the maximum m, chunk by chunk of WD keys.
fn attn_pass(t: u32, i: u32, h: u32, visible: u32, m: f32, d0: u32) {
    let hd = ext(4u);
    var den = Sum(0.0, 0.0);
    var num: array<Sum, ATTN_SUMS>;   // zeros, as WGSL initializes a var
    let v0 = (h / (ext(2u) / ext(3u))) * ext(12u) + d0 + t;
    for (var c0 = 0u; c0 < visible; c0 += WD) {
        if (c0 + t < visible) {
            let sj = attn_score(i, h, c0 + t);
            attn_w[t] = r_exp((sj.x - m) + sj.y);
        }
        workgroupBarrier();
        for (var j = c0; j < min(c0 + WD, visible); j++) {
            let w = attn_w[j - c0];
            den = sum_add(den, w);
            for (var c = 0u; c < ATTN_SUMS && d0 + t + c * WD < hd; c++) {
                num[c] = sum_add(num[c], w * v_at(v0 + c * WD + j * ext(11u)));
            }
        }
        workgroupBarrier();   // the next chunk overwrites attn_w
    }
    let y0 = p.oy + i * ext(13u) + h * ext(14u) + d0 + t;
    for (var c = 0u; c < ATTN_SUMS && d0 + t + c * WD < hd; c++) {
        y_data[y0 + c * WD] = r_div(num[c].s, den.s);
    }
}

@compute @workgroup_size(64)
fn attention(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) g: vec3u,
             @builtin(num_workgroups) groups: vec3u) {
    for (var o = g.x; o < ext(0u) * ext(2u); o += groups.x) {
        let i = o / ext(2u);
        let h = o % ext(2u);
        var visible = ext(1u);
        if ((ext(6u) & 1u) != 0u) { visible = ext(1u) - ext(0u) + i + 1u; }
        var m = -r_inf();
        for (var j = l.x; j < visible; j += WD) { m = nan_max(m, attn_score(i, h, j).x); }
        m = wg_max(l.x, m);
        for (var d0 = 0u; d0 < ext(4u); d0 += WD * ATTN_SUMS) {
            attn_pass(l.x, i, h, visible, m, d0);
        }
    }
}

// SPDX-License-Identifier: MIT
// rows.wgsl - reductions (sum, dot, max, min, argmax, norm_l1, norm_l2) and
// row ops (softmax, log_softmax, rmsnorm, layernorm); part of the module of
// kernels.wgsl (its parameters, bindings, Sum and sum_add).
//
// WGSL has no float64, so the contracts the CPU backends meet with double
// sums are met here with floats:
// - sums are Kahan-compensated per invocation, then added in a tree;
// - a sum that overflows is done again with its terms scaled by 2^-64 (each
//   factor of dot's products), and the result scaled back: (FLT_MAX,
//   FLT_MAX, -FLT_MAX, -FLT_MAX, 1) sums to 1;
// - norm_l2, rmsnorm and layernorm work on x scaled by a power of two near
//   max |x| (exact), so squares neither overflow (|x| ~ 3e38) nor vanish
//   (denormals), and eps is scaled with them;
// - layernorm works in float pairs (hi + lo, ~44 bits: see "layernorm in
//   float pairs" below): its mean (a row of 1000 plus noise of 1e-3 keeps
//   its noise), variance, 1 / std and y = v gamma + beta, which may cancel
//   far below v gamma (gamma ~ 100, beta ~ -100).
// The row ops have two forms: a workgroup per row (tree sums in workgroup
// memory) and one invocation per row (rows_direct: no barriers, for
// software adapters, as gemv_direct).  The reductions use one workgroup.

// argmax writes an index, and the row ops' presence bits say which of
// gamma (b) and beta (c) were given: y as words here (only the reduce entry
// point binds it so).
@group(0) @binding(4) var<storage, read_write> y_words: array<u32>;

const WR: u32 = 64u;
const HAS_B: u32 = 1u;
const HAS_C: u32 = 2u;
const Y_INDEX64: u32 = 4u;     // argmax into a device buffer: a uint64_t
var<workgroup> red_v: array<f32, 64>;
var<workgroup> red_lo: array<f32, 64>;
var<workgroup> red_i: array<u32, 64>;

fn nan_max(x: f32, z: f32) -> f32 {
    if (r_isnan(x) || r_isnan(z)) { return r_nan(); }
    return max(x, z);
}
fn nan_min(x: f32, z: f32) -> f32 {
    if (r_isnan(x) || r_isnan(z)) { return r_nan(); }
    return min(x, z);
}

// The tree over the workgroup's values: the same result in every
// invocation.  kind: 0 sum, 1 NaN-propagating max, 2 NaN-propagating min.
fn wg_combine(lx: u32, v: f32, kind: u32) -> f32 {
    red_v[lx] = v;
    workgroupBarrier();
    for (var s = WR / 2u; s > 0u; s = s / 2u) {
        if (lx < s) {
            let o = red_v[lx + s];
            if (kind == 0u) { red_v[lx] += o; }
            else if (kind == 1u) { red_v[lx] = nan_max(red_v[lx], o); }
            else { red_v[lx] = nan_min(red_v[lx], o); }
        }
        workgroupBarrier();
    }
    let total = workgroupUniformLoad(&red_v[0]);
    workgroupBarrier();
    return total;
}
fn wg_sum(lx: u32, v: f32) -> f32 { return wg_combine(lx, v, 0u); }
fn wg_max(lx: u32, v: f32) -> f32 { return wg_combine(lx, v, 1u); }

// 2^-e for the power of two 2^e at or below |v| (e in [-126, 126]): x times
// it is exact and at most 4 for |x| <= |v| (a NaN or inf v gives 2^-126).
fn inv_scale_of(v: f32) -> f32 {
    let e = clamp((bitcast<u32>(v) >> 23u) & 0xffu, 1u, 253u);
    return bitcast<f32>((254u - e) << 23u);
}

// ---- reductions: one workgroup ---------------------------------------------
// One invocation's share of the sum of sum, dot or norm_l1, terms times xs
// (each factor: 1, or 2^-64 in the second stage).
fn sum_share(first: u32, xs: f32) -> f32 {
    var acc = Sum(0.0, 0.0);
    for (var i = first; i < p.n; i += WR) {
        let x = a_f32(p.oa + i) * xs;
        var t = x;
        if (OP == OP_DOT) { t = x * (b_data[p.ob + i] * xs); }
        if (OP == OP_NORM_L1) { t = abs(x); }
        acc = sum_add(acc, t);
    }
    return acc.s;
}

fn reduce_sum(lx: u32) -> f32 {
    var s = wg_sum(lx, sum_share(lx, 1.0));
    if (!r_finite(s)) {
        let scaled = wg_sum(lx, sum_share(lx, SCALE_DOWN));
        var up = scaled * SCALE_UP;
        if (OP == OP_DOT) { up = up * SCALE_UP; }
        if (!r_finite(s) && !r_isnan(scaled)) { s = up; }
    }
    return s;
}

// sqrt(sum x^2) as max|x| sqrt(sum (x / max|x|)^2); NaN, then inf, win.
fn reduce_norm_l2(lx: u32) -> f32 {
    var m: f32 = 0.0;
    for (var i = lx; i < p.n; i += WR) { m = nan_max(m, abs(a_f32(p.oa + i))); }
    let top = wg_max(lx, m);
    let inv = inv_scale_of(top);
    var acc = Sum(0.0, 0.0);
    for (var i = lx; i < p.n; i += WR) {
        let x = a_f32(p.oa + i) * inv;
        acc = sum_add(acc, x * x);
    }
    let ssq = wg_sum(lx, acc.s);
    if (!r_finite(top) || top == 0.0) { return top; }
    return r_sqrt(ssq) / inv;
}

// argmax: the first NaN, else the first of the largest.
fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool {
    let vn = r_isnan(v);
    let bn = r_isnan(bv);
    if (vn != bn) { return vn; }
    if (vn || v == bv) { return i < bi; }
    return v > bv;
}

fn reduce_argmax(lx: u32) -> u32 {
    var bv = a_f32(p.oa);          // n >= 1 (the core refuses n = 0)
    var bi = 0u;
    for (var i = lx; i < p.n; i += WR) {
        let v = a_f32(p.oa + i);
        if (better(v, i, bv, bi)) { bv = v; bi = i; }
    }
    red_v[lx] = bv;
    red_i[lx] = bi;
    workgroupBarrier();
    for (var s = WR / 2u; s > 0u; s = s / 2u) {
        if (lx < s && better(red_v[lx + s], red_i[lx + s], red_v[lx], red_i[lx])) {
            red_v[lx] = red_v[lx + s];
            red_i[lx] = red_i[lx + s];
        }
        workgroupBarrier();
    }
    return workgroupUniformLoad(&red_i[0]);
}

fn reduce_extreme(lx: u32) -> f32 {
    let kind = select(2u, 1u, OP == OP_MAX);
    var v = select(r_inf(), -r_inf(), OP == OP_MAX);
    for (var i = lx; i < p.n; i += WR) {
        let x = a_f32(p.oa + i);
        v = select(nan_min(v, x), nan_max(v, x), OP == OP_MAX);
    }
    return wg_combine(lx, v, kind);
}

@compute @workgroup_size(64)
fn reduce(@builtin(local_invocation_id) l: vec3u) {
    if (OP == OP_ARGMAX) {
        let i = reduce_argmax(l.x);
        if (l.x == 0u) {
            y_words[p.oy] = i;
            if ((p.has & Y_INDEX64) != 0u) { y_words[p.oy + 1u] = 0u; }
        }
        return;
    }
    var r: f32;
    if (OP == OP_MAX || OP == OP_MIN) { r = reduce_extreme(l.x); }
    else if (OP == OP_NORM_L2) { r = reduce_norm_l2(l.x); }
    else { r = reduce_sum(l.x); }
    if (l.x == 0u) { y_words[p.oy] = bitcast<u32>(r); }
}

// ---- row ops -----------------------------------------------------------------
// Row r's x[j], and the share of an invocation: j = first, first + step...
fn row_x(r: u32, j: u32) -> f32 { return a_f32(p.oa + r * p.n + j); }

fn row_max(r: u32, first: u32, step: u32, absolute: bool) -> f32 {
    var m = select(-r_inf(), 0.0, absolute);
    for (var j = first; j < p.n; j += step) {
        let x = row_x(r, j);
        m = nan_max(m, select(x, abs(x), absolute));
    }
    return m;
}

// sum over the share of f(x), f by op: softmax's exp(x - s), rmsnorm's
// (x inv)^2 (layernorm: ln_sum_share).
fn row_sum(r: u32, first: u32, step: u32, s: f32, inv: f32) -> f32 {
    var acc = Sum(0.0, 0.0);
    for (var j = first; j < p.n; j += step) {
        let x = row_x(r, j);
        var t: f32;
        if (OP == OP_SOFTMAX || OP == OP_LOG_SOFTMAX) { t = r_exp(x - s); }
        else { t = (x * inv) * (x * inv); }
        acc = sum_add(acc, t);
    }
    return acc.s;
}

// The statistics a row op writes its row from: softmax (max, sum of exp),
// the norms (the scale inv, the centre hi + lo, 1 / std as rstd + rstd_lo)
// in scaled units.
struct RowStats { s: f32, lo: f32, inv: f32, rstd: f32, big_eps: bool, rstd_lo: f32 }

// 1 / sqrt(var + eps) with var scaled by inv^2 (eps too); where eps inv^2
// overflows (a row of tiny values), eps alone counts: big_eps.
fn norm_stats(s: f32, lo: f32, inv: f32, var_s: f32) -> RowStats {
    let e2 = (p.alpha * inv) * inv;
    if (!r_finite(e2)) { return RowStats(s, lo, inv, r_div(1.0, r_sqrt(p.alpha)), true, 0.0); }
    let den = var_s + e2;
    let rstd = select(r_div(1.0, r_sqrt(den)), 0.0, den == 0.0);
    return RowStats(s, lo, inv, rstd, false, 0.0);
}

fn row_value(r: u32, j: u32, st: RowStats, sum: f32) -> f32 {
    if (OP == OP_LAYERNORM) { return ln_value(r, j, st); }
    let x = row_x(r, j);
    if (OP == OP_SOFTMAX) { return r_div(r_exp(x - st.s), sum); }
    if (OP == OP_LOG_SOFTMAX) { return (x - st.s) - r_log(sum); }
    var d = (x * st.inv - st.s) - st.lo;
    if (st.big_eps) { d = d / st.inv; }
    var v = d * st.rstd;
    if ((p.has & HAS_B) != 0u) { v = v * b_data[p.ob + j]; }
    return v;
}

fn write_row(r: u32, first: u32, step: u32, st: RowStats, sum: f32) {
    for (var j = first; j < p.n; j += step) { y_data[p.oy + r * p.n + j] = row_value(r, j, st, sum); }
}

// One invocation per row: every statistic from the whole row.
fn row_direct(r: u32) {
    let n = f32(p.n);
    if (OP == OP_SOFTMAX || OP == OP_LOG_SOFTMAX) {
        let m = row_max(r, 0u, 1u, false);
        write_row(r, 0u, 1u, RowStats(m, 0.0, 1.0, 1.0, false, 0.0), row_sum(r, 0u, 1u, m, 1.0));
        return;
    }
    let inv = inv_scale_of(row_max(r, 0u, 1u, true));
    if (OP == OP_RMSNORM) {
        write_row(r, 0u, 1u, norm_stats(0.0, 0.0, inv, row_sum(r, 0u, 1u, 0.0, inv) / n), 0.0);
        return;
    }
    let mean = df_div(ln_sum_share(r, 0u, 1u, inv), n);
    write_row(r, 0u, 1u, ln_stats(mean, inv, df_div(ln_var_share(r, 0u, 1u, mean, inv), n)), 0.0);
}

@compute @workgroup_size(64)
fn rows_direct(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    for (var r = gid.x; r < p.m; r += groups.x * WR) { row_direct(r); }
}

// A workgroup per row: each statistic from the invocations' shares.
fn row_shared(lx: u32, r: u32) {
    let n = f32(p.n);
    if (OP == OP_SOFTMAX || OP == OP_LOG_SOFTMAX) {
        let m = wg_max(lx, row_max(r, lx, WR, false));
        write_row(r, lx, WR, RowStats(m, 0.0, 1.0, 1.0, false, 0.0), wg_sum(lx, row_sum(r, lx, WR, m, 1.0)));
        return;
    }
    let inv = inv_scale_of(wg_max(lx, row_max(r, lx, WR, true)));
    if (OP == OP_RMSNORM) {
        let ms = wg_sum(lx, row_sum(r, lx, WR, 0.0, inv)) / n;
        write_row(r, lx, WR, norm_stats(0.0, 0.0, inv, ms), 0.0);
        return;
    }
    let mean = df_div(wg_df_sum(lx, ln_sum_share(r, lx, WR, inv)), n);
    let var_s = df_div(wg_df_sum(lx, ln_var_share(r, lx, WR, mean, inv)), n);
    write_row(r, lx, WR, ln_stats(mean, inv, var_s), 0.0);
}

@compute @workgroup_size(64)
fn rows(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) g: vec3u,
        @builtin(num_workgroups) groups: vec3u) {
    for (var r = g.x; r < p.m; r += groups.x) { row_shared(l.x, r); }
}

// ---- layernorm in float pairs ------------------------------------------------
// v gamma + beta to 4e-6 of |y| + 4e-6 where it cancels (gamma ~ 100, beta ~
// -100) needs v gamma to ~1e-8: float pairs hi + lo (vec2: x hi, y lo) with
// error-free sums (two_sum) and products (prod_err: Dekker), for the
// mean and the variance (pair sums per invocation, added in a pair tree),
// 1 / sqrt(var + eps) (a Newton step on the float one) and v gamma + beta.
// x is scaled by inv (a power of two near max |x|), so no step overflows; a
// pair whose high part is inf or NaN keeps it, with no low part.
fn two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = a + b;
    let bb = s - a;
    return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}
// s + e as a pair, for |s| >= |e|
fn df_norm(s: f32, e: f32) -> vec2<f32> {
    let h = s + e;
    if (!r_finite(h)) { return vec2<f32>(h, 0.0); }
    return vec2<f32>(h, e - (h - s));
}
fn df_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let s = two_sum(a.x, b.x);
    if (!r_finite(s.x)) { return vec2<f32>(s.x, 0.0); }
    return df_norm(s.x, s.y + (a.y + b.y));
}
fn df_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let xy = prod_fix(a.x, b.x);
    return df_norm(xy.x, xy.y + (a.x * b.y + a.y * b.x));
}
fn df_div(a: vec2<f32>, n: f32) -> vec2<f32> {
    let q = a.x / n;
    let back = prod_fix(q, n);
    return df_norm(q, (((a.x - back.x) - back.y) + a.y) / n);
}

// sum of the scaled x over the share, as a pair
fn ln_sum_share(r: u32, first: u32, step: u32, inv: f32) -> vec2<f32> {
    var acc = vec2<f32>(0.0, 0.0);
    for (var j = first; j < p.n; j += step) { acc = df_add(acc, vec2<f32>(row_x(r, j) * inv, 0.0)); }
    return acc;
}

// x[j] scaled, less the mean, as a pair
fn ln_centred(r: u32, j: u32, mean: vec2<f32>, inv: f32) -> vec2<f32> {
    return df_add(two_sum(row_x(r, j) * inv, -mean.x), vec2<f32>(-mean.y, 0.0));
}

// sum of the squared centred values over the share, as a pair
fn ln_var_share(r: u32, first: u32, step: u32, mean: vec2<f32>, inv: f32) -> vec2<f32> {
    var acc = vec2<f32>(0.0, 0.0);
    for (var j = first; j < p.n; j += step) {
        let d = ln_centred(r, j, mean, inv);
        acc = df_add(acc, df_mul(d, d));
    }
    return acc;
}

// the workgroup's pair sum, in every invocation
fn wg_df_sum(lx: u32, v: vec2<f32>) -> vec2<f32> {
    red_v[lx] = v.x;
    red_lo[lx] = v.y;
    workgroupBarrier();
    for (var s = WR / 2u; s > 0u; s = s / 2u) {
        if (lx < s) {
            let t = df_add(vec2<f32>(red_v[lx], red_lo[lx]), vec2<f32>(red_v[lx + s], red_lo[lx + s]));
            red_v[lx] = t.x;
            red_lo[lx] = t.y;
        }
        workgroupBarrier();
    }
    let total = vec2<f32>(workgroupUniformLoad(&red_v[0]), workgroupUniformLoad(&red_lo[0]));
    workgroupBarrier();
    return total;
}

// 1 / sqrt(var + eps) as a pair: r0 from floats, then r0 + r0 (1 - den r0^2) / 2
fn ln_stats(mean: vec2<f32>, inv: f32, var_s: vec2<f32>) -> RowStats {
    let e2 = (p.alpha * inv) * inv;
    if (!r_finite(e2)) { return norm_stats(mean.x, mean.y, inv, var_s.x); }
    let den = df_add(var_s, vec2<f32>(e2, 0.0));
    if (den.x == 0.0) { return RowStats(mean.x, mean.y, inv, 0.0, false, 0.0); }
    let r0 = r_div(1.0, r_sqrt(den.x));
    let miss = df_add(vec2<f32>(1.0, 0.0), -df_mul(den, prod_fix(r0, r0)));
    let rstd = df_norm(r0, r0 * (0.5 * miss.x));
    return RowStats(mean.x, mean.y, inv, rstd.x, false, rstd.y);
}

fn ln_value(r: u32, j: u32, st: RowStats) -> f32 {
    var v: vec2<f32>;
    if (st.big_eps) {       // a row of tiny values: eps alone counts, v ~ 0
        v = vec2<f32>(((row_x(r, j) * st.inv - st.s) - st.lo) / st.inv * st.rstd, 0.0);
    } else {
        v = df_mul(ln_centred(r, j, vec2<f32>(st.s, st.lo), st.inv), vec2<f32>(st.rstd, st.rstd_lo));
    }
    if ((p.has & HAS_B) != 0u) { v = df_mul(v, vec2<f32>(b_data[p.ob + j], 0.0)); }
    if ((p.has & HAS_C) != 0u) { v = df_add(v, vec2<f32>(c_data[p.oc + j], 0.0)); }
    return v.x;
}

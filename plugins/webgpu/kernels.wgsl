// SPDX-License-Identifier: MIT
// kernels.wgsl - the webgpu plugin's compute shaders: one module, one entry
// point per signature class.  The op ids (OP_ADD...) come from
// webgpu-ops.wgsl, generated from core/rayo-ops.h at build time, and the op
// of a pipeline is its override constant OP: one branch-free pipeline per op.
//
// Every pipeline shares one bind group layout: the parameters, then a, b,
// c (read-only) and y.  Operands are bound whole; p.oa..p.oy are element
// offsets, so a device buffer operand may start at any multiple of 4 bytes.
//
// Long sums (matmul, gemv) add blocks of products into a Kahan-compensated
// total: the contract (1e-5 of the sum of |terms|) holds for k = 1e5 and
// more, where one running float sum drifts past it.  A sum that comes out
// inf or NaN is done again with x (B) scaled by 2^-64 and the result scaled
// back: products near FLT_MAX that cancel then give their finite sum (the
// range contract), while true inf and NaN inputs give inf and NaN again.

struct Params {
    m: u32, n: u32, k: u32, flags: u32,
    alpha: f32, beta: f32, oa: u32, ob: u32,
    oc: u32, oy: u32, zero: u32, has: u32,        // has: which of b, c are given (rows.wgsl)
    lda: u32, ldb: u32, ldy: u32, dta: u32,    // row strides in elements (never 0 here); dtype of a (attention: of k, v)
    ext: array<vec4<u32>, 4>,                  // rope's or attention's parameters (infer.wgsl)
}

@group(0) @binding(0) var<uniform> p: Params;
// a as words: f32 elements (a_f32) or the bytes of typed blocks (byte_at)
@group(0) @binding(1) var<storage, read> a_words: array<u32>;
fn a_f32(i: u32) -> f32 { return bitcast<f32>(a_words[i]); }
@group(0) @binding(2) var<storage, read> b_data: array<f32>;
@group(0) @binding(3) var<storage, read> c_data: array<f32>;
@group(0) @binding(4) var<storage, read_write> y_data: array<f32>;

override OP: u32 = 0u;

const TRANS_A: u32 = 1u;
const TRANS_B: u32 = 2u;
const WG: u32 = 256u;

fn f_relu(x: f32) -> f32 {
    if (x > 0.0 || r_isnan(x)) { return x; }
    return 0.0;
}

fn f_binary(x: f32, z: f32) -> f32 {
    switch OP {
        case OP_ADD: { return x + z; }
        case OP_SUB: { return x - z; }
        case OP_MUL: { return x * z; }
        case OP_DIV: { return r_div(x, z); }
        case OP_MAXIMUM: { if (r_isnan(x) || r_isnan(z)) { return r_nan(); } return max(x, z); }
        default: { if (r_isnan(x) || r_isnan(z)) { return r_nan(); } return min(x, z); }
    }
}

fn f_hardswish(x: f32) -> f32 {
    if (x >= 3.0 || r_isnan(x)) { return x; }
    if (x <= -3.0) { return 0.0 * x; }
    return r_div(x * (x + 3.0), 6.0);
}

fn f_unary(x: f32) -> f32 {
    let a = p.alpha;
    switch OP {
        case OP_SCALE: { return a * x; }
        case OP_RELU: { return f_relu(x); }
        case OP_LEAKY_RELU: { return select(a * x, x, x > 0.0); }
        case OP_ELU: { if (x > 0.0) { return x; } return a * r_expm1(x); }
        // lambda x as x + (lambda - 1) x: no overflow below FLT_MAX / lambda
        case OP_SELU: { if (x > 0.0) { return x + 0.0507009873554805 * x; } return 1.7580993408473766 * r_expm1(x); }
        case OP_SIGMOID: { return r_sigmoid(x); }
        case OP_TANH: { return r_tanh(x); }
        case OP_GELU: { return r_gelu(x); }
        case OP_GELU_TANH: { return r_gelu_tanh(x); }
        case OP_SILU: { return r_silu(x); }
        case OP_MISH: { return r_mish(x); }
        case OP_SOFTPLUS: { return r_softplus(x); }
        case OP_HARDSWISH: { return f_hardswish(x); }
        case OP_CLIP: { if (r_isnan(x)) { return x; } return min(max(x, a), p.beta); }
        case OP_EXP: { return r_exp(x); }
        case OP_LOG: { return r_log(x); }
        case OP_SQRT: { return r_sqrt(x); }
        case OP_ABS: { return abs(x); }
        default: { return x; }
    }
}

// alpha x + y; where the product alone overflows but the sum would not,
// the same on halves (exact there), doubled.
fn f_axpy(alpha: f32, x: f32, y: f32) -> f32 {
    let r = fma(alpha, x, y);
    if (r_isinf(r) && !r_isinf(alpha) && !r_isinf(x) && !r_isinf(y)) {
        return 2.0 * fma(alpha, 0.5 * x, 0.5 * y);
    }
    return r;
}

// binary, unary, axpy: a grid-stride loop over n elements.
@compute @workgroup_size(256)
fn elementwise(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let stride = groups.x * WG;
    for (var i = gid.x; i < p.n; i += stride) {
        let x = a_f32(p.oa + i);
        var r: f32;
        if (OP <= OP_MINIMUM) {
            r = f_binary(x, b_data[p.ob + i]);
        } else if (OP == OP_AXPY) {
            r = f_axpy(p.alpha, x, y_data[p.oy + i]);
        } else {
            r = f_unary(x);
        }
        y_data[p.oy + i] = r;
    }
}

// bias_act: y[i][j] = act(a[i][j] + b[j]) over m rows of n, act in p.flags
// (rayo_activation: none, relu, gelu, silu, tanh, sigmoid).
fn f_act(x: f32) -> f32 {
    switch p.flags {
        case 1u: { return f_relu(x); }
        case 2u: { return r_gelu(x); }
        case 3u: { return r_silu(x); }
        case 4u: { return r_tanh(x); }
        case 5u: { return r_sigmoid(x); }
        default: { return x; }
    }
}

@compute @workgroup_size(256)
fn bias_act(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    for (var o = gid.x; o < p.m * p.n; o += groups.x * WG) {
        y_data[p.oy + o] = f_act(a_f32(p.oa + o) + b_data[p.ob + o % p.n]);
    }
}

// y (n x m) = a (m x n)^T, a grid-stride loop over the outputs.
@compute @workgroup_size(256)
fn transpose(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let stride = groups.x * WG;
    let total = p.m * p.n;
    for (var o = gid.x; o < total; o += stride) {
        let j = o / p.m;
        let i = o % p.m;
        y_data[p.oy + o] = a_f32(p.oa + i * p.n + j);
    }
}

// ---- matmul: C = alpha op(A) op(B) + beta C, 16 x 16 tiles -----------------
const TS: u32 = 16u;
var<workgroup> tile_a: array<array<f32, 16>, 16>;
var<workgroup> tile_b: array<array<f32, 16>, 16>;

fn a_at(row: u32, kk: u32) -> f32 {
    if ((p.flags & TRANS_A) != 0u) { return a_f32(p.oa + kk * p.lda + row); }
    return a_f32(p.oa + row * p.lda + kk);
}

fn b_at(kk: u32, col: u32) -> f32 {
    if ((p.flags & TRANS_B) != 0u) { return xb(p.ob + col * p.ldb + kk); }
    return xb(p.ob + kk * p.ldb + col);
}

// x (B) as the sums read it: times 1, or 2^-64 in the second pass of a sum
// that overflowed (see above)
var<private> x_scale: f32 = 1.0;
const SCALE_DOWN: f32 = 5.421010862427522e-20;  // 2^-64
const SCALE_UP: f32 = 1.8446744073709552e19;    // 2^64
fn xb(i: u32) -> f32 { return b_data[i] * x_scale; }
fn r_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
var<workgroup> redo_flag: u32;

// A running sum with Kahan's compensation.
struct Sum { s: f32, c: f32 }
// Once the total is inf or NaN it stays so, uncompensated (inf - inf in
// the compensation would turn an infinite sum into NaN).
fn sum_add(acc: Sum, x: f32) -> Sum {
    let y = x - acc.c;
    let t = acc.s + y;
    if ((bitcast<u32>(t) & 0x7f800000u) == 0x7f800000u) { return Sum(t, 0.0); }
    return Sum(t, (t - acc.s) - y);
}

// alpha acc + beta y_old; y is not read when beta is 0 (NaN there stays out).
fn store_scaled(index: u32, acc: f32) {
    var r = p.alpha * acc;
    if (p.beta != 0.0) { r = fma(p.beta, y_data[index], r); }
    y_data[index] = r;
}

// One pass of the tiled sum of C[row][col] (barriers: uniform control flow).
fn matmul_pass(l: vec3u, row: u32, col: u32) -> f32 {
    var acc = Sum(0.0, 0.0);
    for (var t = 0u; t < p.k; t += TS) {
        var va: f32 = 0.0;
        var vb: f32 = 0.0;
        if (row < p.m && t + l.x < p.k) { va = a_at(row, t + l.x); }
        if (col < p.n && t + l.y < p.k) { vb = b_at(t + l.y, col); }
        tile_a[l.y][l.x] = va;
        tile_b[l.y][l.x] = vb;
        workgroupBarrier();
        let kn = min(TS, p.k - t);
        var block: f32 = 0.0;
        for (var i = 0u; i < kn; i++) {
            block = fma(tile_a[l.y][i], tile_b[i][l.x], block);
        }
        acc = sum_add(acc, block);
        workgroupBarrier();
    }
    return acc.s;
}

@compute @workgroup_size(16, 16)
fn matmul(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) g: vec3u) {
    let row = g.y * TS + l.y;
    let col = g.x * TS + l.x;
    if (l.x == 0u && l.y == 0u) { redo_flag = 0u; }
    workgroupBarrier();
    var v = matmul_pass(l, row, col);
    if (!r_finite(v)) { redo_flag = 1u; }
    if (workgroupUniformLoad(&redo_flag) != 0u) {   // the whole workgroup: barriers
        x_scale = SCALE_DOWN;
        let w = matmul_pass(l, row, col) * SCALE_UP;
        if (!r_finite(v)) { v = w; }
    }
    if (row < p.m && col < p.n) { store_scaled(p.oy + row * p.ldy + col, v); }
}

// ---- gemv: y = alpha op(A) x + beta y, A m x n ---------------------------------
var<workgroup> partial: array<f32, 256>;

// The sum of the invocations' values v, the same (uniform) in every
// invocation; called in uniform control flow (barriers).
fn row_total(lx: u32, v: f32) -> f32 {
    partial[lx] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lx < s) { partial[lx] += partial[lx + s]; }
        workgroupBarrier();
    }
    let total = workgroupUniformLoad(&partial[0]);
    workgroupBarrier();
    return total;
}

// Row r of A (f32 or typed) times x, over the elements (f32: 16 at a time)
// or blocks first, first + step...: one invocation's share of the row.
fn row_dot(r: u32, first: u32, step: u32) -> f32 {
    var acc = Sum(0.0, 0.0);
    if (p.dta == 0u) {
        for (var t = first * TS; t < p.n; t += step * TS) {
            var block: f32 = 0.0;
            for (var j = t; j < min(t + TS, p.n); j++) { block = fma(a_f32(p.oa + r * p.lda + j), xb(p.ob + j), block); }
            acc = sum_add(acc, block);
        }
    } else {
        let blocks = p.n / block_elems(p.dta);
        let row_bytes = (p.lda / block_elems(p.dta)) * block_bytes(p.dta);
        for (var b = first; b < blocks; b += step) { acc = sum_add(acc, dot_block(r * row_bytes, b)); }
    }
    return acc.s;
}
fn row_share(lx: u32, r: u32) -> f32 { return row_dot(r, lx, WG); }

// y[r] from the workgroup's shares, done again scaled where it overflowed.
fn store_row(lx: u32, r: u32) {
    x_scale = 1.0;
    var t = row_total(lx, row_share(lx, r));
    if (!r_finite(t)) {
        x_scale = SCALE_DOWN;
        t = row_total(lx, row_share(lx, r)) * SCALE_UP;
    }
    if (lx == 0u) { store_scaled(p.oy + r, t); }
}

// Without TRANS_A: one workgroup per row (grid-stride over rows), a tree
// sum; A f32 or typed (f16, bf16 or GGUF blocks: below).
@compute @workgroup_size(256)
fn gemv_rows(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) g: vec3u,
             @builtin(num_workgroups) groups: vec3u) {
    for (var r = g.x; r < p.m; r += groups.x) { store_row(l.x, r); }
}

// With TRANS_A: y has n elements, one invocation per column.
@compute @workgroup_size(256)
fn gemv_cols(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let stride = groups.x * WG;
    for (var j = gid.x; j < p.n; j += stride) {
        var v = col_dot(j);
        if (!r_finite(v)) { x_scale = SCALE_DOWN; v = col_dot(j) * SCALE_UP; x_scale = 1.0; }
        store_scaled(p.oy + j, v);
    }
}

// Column j of A times x (the transposed gemv).
fn col_dot(j: u32) -> f32 {
    var acc = Sum(0.0, 0.0);
    for (var i = 0u; i < p.m; i += TS) {
        var block: f32 = 0.0;
        for (var q = i; q < min(i + TS, p.m); q++) { block = fma(a_f32(p.oa + q * p.lda + j), xb(p.ob + q), block); }
        acc = sum_add(acc, block);
    }
    return acc.s;
}

// ---- gemv with f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K weights -----------------
// Rows hold whole blocks, as GGUF stores them; the block layouts are
// core/rayo-dtype.h's.

const DT_F16: u32 = 1u;
const DT_BF16: u32 = 2u;
const DT_Q8_0: u32 = 8u;
const DT_Q4_0: u32 = 9u;
const DT_Q4_K: u32 = 10u;
const DT_Q6_K: u32 = 11u;

fn byte_at(off: u32) -> u32 { return (a_words[off >> 2u] >> ((off & 3u) * 8u)) & 0xffu; }
fn u16_at(off: u32) -> u32 { return byte_at(off) | (byte_at(off + 1u) << 8u); }
fn i8_at(off: u32) -> f32 { return f32(i32(byte_at(off) << 24u) >> 24u); }

// f16 bits to f32, exactly (subnormal halves are normal floats).
fn half_to_f32(h: u32) -> f32 {
    let s = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        let v = f32(m) * 5.9604644775390625e-8;
        return select(v, -v, s != 0u);
    }
    if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
    return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}
fn half_at(off: u32) -> f32 { return half_to_f32(u16_at(off)); }

// elements and bytes of one block of dtype dt
fn block_elems(dt: u32) -> u32 {
    switch dt {
        case DT_Q8_0, DT_Q4_0: { return 32u; }
        case DT_Q4_K, DT_Q6_K: { return 256u; }
        default: { return 1u; }
    }
}
fn block_bytes(dt: u32) -> u32 {
    switch dt {
        case DT_Q8_0: { return 34u; }
        case DT_Q4_0: { return 18u; }
        case DT_Q4_K: { return 144u; }
        case DT_Q6_K: { return 210u; }
        default: { return 2u; }
    }
}

fn dot_q8_0(blk: u32, x0: u32) -> f32 {
    var s: f32 = 0.0;
    for (var i = 0u; i < 32u; i++) { s = fma(i8_at(blk + 2u + i), xb(x0 + i), s); }
    return half_at(blk) * s;
}

fn dot_q4_0(blk: u32, x0: u32) -> f32 {
    var s: f32 = 0.0;
    for (var j = 0u; j < 16u; j++) {
        let q = byte_at(blk + 2u + j);
        s = fma(f32(i32(q & 15u) - 8), xb(x0 + j), s);
        s = fma(f32(i32(q >> 4u) - 8), xb(x0 + j + 16u), s);
    }
    return half_at(blk) * s;
}

// Q4_K: sub-block s has scale sc and min m (6 bits each, packed in 12 bytes)
fn q4k_scale_min(blk: u32, s: u32) -> vec2<f32> {
    let sc0 = blk + 4u;
    if (s < 4u) { return vec2<f32>(f32(byte_at(sc0 + s) & 63u), f32(byte_at(sc0 + s + 4u) & 63u)); }
    let lo = byte_at(sc0 + s + 4u);
    let sc = (lo & 15u) | ((byte_at(sc0 + s - 4u) >> 6u) << 4u);
    let m = (lo >> 4u) | ((byte_at(sc0 + s) >> 6u) << 4u);
    return vec2<f32>(f32(sc), f32(m));
}

fn dot_q4_k(blk: u32, x0: u32) -> f32 {
    let d = half_at(blk);
    let dmin = half_at(blk + 2u);
    var total: f32 = 0.0;
    for (var s = 0u; s < 8u; s++) {
        let sm = q4k_scale_min(blk, s);
        let chunk = blk + 16u + 32u * (s / 2u);
        let shift = 4u * (s & 1u);
        var qx: f32 = 0.0;
        var xs: f32 = 0.0;
        for (var l = 0u; l < 32u; l++) {
            let x = xb(x0 + 32u * s + l);
            qx = fma(f32((byte_at(chunk + l) >> shift) & 15u), x, qx);
            xs += x;
        }
        total += d * sm.x * qx - dmin * sm.y * xs;
    }
    return total;
}

fn dot_q6_k(blk: u32, x0: u32) -> f32 {
    let d = half_at(blk + 208u);
    var total: f32 = 0.0;
    for (var g = 0u; g < 16u; g++) {          // 16 groups of 16 values share a scale
        var qx: f32 = 0.0;
        for (var t = 0u; t < 16u; t++) {
            let v = 16u * g + t;
            let h = v / 128u;
            let k = (v % 128u) / 32u;
            let l = v % 32u;
            let low = (byte_at(blk + 64u * h + 32u * (k & 1u) + l) >> (4u * (k / 2u))) & 15u;
            let high = (byte_at(blk + 128u + 32u * h + l) >> (2u * k)) & 3u;
            qx = fma(f32(i32(low | (high << 4u)) - 32), xb(x0 + v), qx);
        }
        total += i8_at(blk + 192u + g) * qx;
    }
    return d * total;
}

// x . (one block, or one f16/bf16 element) of row bytes `row`, block index b
fn dot_block(row: u32, b: u32) -> f32 {
    let blk = p.oa * 4u + row + b * block_bytes(p.dta);
    let x0 = p.ob + b * block_elems(p.dta);
    switch p.dta {
        case DT_F16: { return half_at(blk) * xb(x0); }
        case DT_BF16: { return bitcast<f32>(u16_at(blk) << 16u) * xb(x0); }
        case DT_Q8_0: { return dot_q8_0(blk, x0); }
        case DT_Q4_0: { return dot_q4_0(blk, x0); }
        case DT_Q4_K: { return dot_q4_k(blk, x0); }
        default: { return dot_q6_k(blk, x0); }
    }
}


// ---- barrier-free forms, for software adapters ----------------------------
// A software adapter (SwiftShader) runs the invocations of a workgroup with
// a barrier as coroutines, switching at each barrier: the tiled kernels
// above crawl there.  These forms have no barrier and no workgroup memory:
// one invocation per output, a grid-stride loop over the outputs.
const WD: u32 = 64u;

fn matmul_dot(row: u32, col: u32) -> f32 {
    var acc = Sum(0.0, 0.0);
    for (var t = 0u; t < p.k; t += TS) {
        var block: f32 = 0.0;
        for (var i = t; i < min(t + TS, p.k); i++) { block = fma(a_at(row, i), b_at(i, col), block); }
        acc = sum_add(acc, block);
    }
    return acc.s;
}

@compute @workgroup_size(64)
fn matmul_direct(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    for (var o = gid.x; o < p.m * p.n; o += groups.x * WD) {
        let row = o / p.n;
        let col = o % p.n;
        var v = matmul_dot(row, col);
        if (!r_finite(v)) { x_scale = SCALE_DOWN; v = matmul_dot(row, col) * SCALE_UP; x_scale = 1.0; }
        store_scaled(p.oy + row * p.ldy + col, v);
    }
}

// gemv without TRANS_A, A f32 or typed
@compute @workgroup_size(64)
fn gemv_direct(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    for (var r = gid.x; r < p.m; r += groups.x * WD) {
        var v = row_dot(r, 0u, 1u);
        if (!r_finite(v)) { x_scale = SCALE_DOWN; v = row_dot(r, 0u, 1u) * SCALE_UP; x_scale = 1.0; }
        store_scaled(p.oy + r, v);
    }
}

/* SPDX-License-Identifier: MIT */
/* elementwise.c - module "elementwise": one kernel per elementwise op and
 * vector width (ew_<op>_v4, ew_<op>_s1).  elem_bodies holds each op's PTX
 * by op id; the names and signatures come from the op list; the
 * activations' math is in math.c. */
#include "gen-ptx.h"
#include "../core/rayo.h"

#include <stdlib.h>

#define SELU_LAMBDA 1.0507009873554804934
#define SELU_ALPHA 1.6732632423543772848

/* One element of an elementwise op.  a, b: inputs; al, be: alpha, beta. */
typedef int (*elem_fn)(kern *k, int a, int b, int al, int be);

static int op3(kern *k, const char *ins, int a, int b)
{
    int y = nf(k);
    emit(k, "%s %s, %s, %s;", ins, F(y), F(a), F(b));
    return y;
}
static int e_add(kern *k, int a, int b, int al, int be) { (void)al; (void)be; return op3(k, "add.rn.f32", a, b); }
static int e_sub(kern *k, int a, int b, int al, int be) { (void)al; (void)be; return op3(k, "sub.rn.f32", a, b); }
static int e_mul(kern *k, int a, int b, int al, int be) { (void)al; (void)be; return op3(k, "mul.rn.f32", a, b); }
static int e_div(kern *k, int a, int b, int al, int be) { (void)al; (void)be; return op3(k, "div.rn.f32", a, b); }
static int e_maximum(kern *k, int a, int b, int al, int be) { (void)al; (void)be; return op3(k, "max.NaN.f32", a, b); }
static int e_minimum(kern *k, int a, int b, int al, int be) { (void)al; (void)be; return op3(k, "min.NaN.f32", a, b); }
static int e_scale(kern *k, int a, int b, int al, int be) { (void)b; (void)be; return op3(k, "mul.rn.f32", al, a); }
/* axpy: b is the old y */
static int e_axpy(kern *k, int a, int b, int al, int be)
{
    (void)be;
    int y = nf(k);
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(y), F(al), F(a), F(b));
    return y;
}
static int e_relu(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_relu(k, a); }
static int e_leaky_relu(kern *k, int a, int b, int al, int be)
{
    (void)b; (void)be;
    int t = nf(k), y = nf(k), pp = np(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(al), F(a));
    emit(k, "setp.gt.f32 %s, %s, %s;", P(pp), F(a), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(a), F(t), P(pp));
    return y;
}
static int e_elu(kern *k, int a, int b, int al, int be) { (void)b; (void)be; return m_elu_like(k, a, al, 1.0); }
static int e_selu(kern *k, int a, int b, int al, int be)
{
    (void)b; (void)al; (void)be;
    return m_elu_like(k, a, fmov(k, (float)(SELU_LAMBDA * SELU_ALPHA)), SELU_LAMBDA);
}
static int e_sigmoid(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_sigmoid(k, a); }
static int e_tanh(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_tanh(k, a); }
static int e_gelu(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_gelu(k, a); }
static int e_gelu_tanh(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_gelu_tanh(k, a); }
static int e_silu(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_silu(k, a); }
static int e_mish(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_mish(k, a); }
static int e_hardswish(kern *k, int a, int b, int al, int be)
{
    (void)b; (void)al; (void)be;
    int t = nf(k), c0 = nf(k), c = nf(k), p = nf(k), y = nf(k);
    emit(k, "add.rn.f32 %s, %s, %s;", F(t), F(a), C(3.0f));
    emit(k, "max.f32 %s, %s, %s;", F(c0), F(t), C(0.0f));
    emit(k, "min.f32 %s, %s, %s;", F(c), F(c0), C(6.0f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(p), F(a), F(c));
    int q = nf(k), pbig = np(k);
    emit(k, "div.rn.f32 %s, %s, %s;", F(q), F(p), C(6.0f));
    /* x >= 3: exactly x (x * 6 / 6 would overflow near FLT_MAX) */
    emit(k, "setp.ge.f32 %s, %s, %s;", P(pbig), F(a), C(3.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(a), F(q), P(pbig));
    return y;
}
static int e_clip(kern *k, int a, int b, int al, int be)
{
    (void)b;
    int t = nf(k), y = nf(k);
    emit(k, "max.NaN.f32 %s, %s, %s;", F(t), F(a), F(al));
    emit(k, "min.NaN.f32 %s, %s, %s;", F(y), F(t), F(be));
    return y;
}
/* log(1 + e^x) = max(x, 0) + log1p(t), t = e^-|x|: no overflow.  log1p(t)
 * = log(u) t / (u - 1), u = 1 + t (u - 1 exact); u = 1 leaves t.  max.NaN
 * keeps a NaN x. */
static int e_softplus(kern *k, int a, int b, int al, int be)
{
    (void)b; (void)al; (void)be;
    int na = nf(k), u = nf(k), d = nf(k), q = nf(k), l = nf(k), m = nf(k), y = nf(k), one = np(k);
    emit(k, "abs.f32 %s, %s;", F(na), F(a));
    emit(k, "neg.f32 %s, %s;", F(na), F(na));
    int t = m_exp(k, na);
    emit(k, "add.rn.f32 %s, %s, %s;", F(u), F(t), C(1.0f));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(d), F(u), C(1.0f));
    emit(k, "div.rn.f32 %s, %s, %s;", F(q), F(t), F(d));
    int lu = m_log(k, u);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(l), F(lu), F(q));
    emit(k, "setp.eq.f32 %s, %s, %s;", P(one), F(u), C(1.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(l), F(t), F(l), P(one));
    emit(k, "max.NaN.f32 %s, %s, %s;", F(m), F(a), C(0.0f));
    emit(k, "add.rn.f32 %s, %s, %s;", F(y), F(m), F(l));
    return y;
}
static int e_exp(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_exp(k, a); }
static int e_log(kern *k, int a, int b, int al, int be) { (void)b; (void)al; (void)be; return m_log(k, a); }
static int e_sqrt(kern *k, int a, int b, int al, int be)
{
    (void)b; (void)al; (void)be;
    int y = nf(k);
    emit(k, "sqrt.rn.f32 %s, %s;", F(y), F(a));
    return y;
}
static int e_abs(kern *k, int a, int b, int al, int be)
{
    (void)b; (void)al; (void)be;
    int y = nf(k);
    emit(k, "abs.f32 %s, %s;", F(y), F(a));
    return y;
}

/* The PTX of each elementwise op, by its id in the op list
 * (core/rayo-ops.h), which gives its name and signature. */
static const elem_fn elem_bodies[RAYO_OP_ID_LIMIT] = {
    [RAYO_OP_ADD] = e_add,             [RAYO_OP_SUB] = e_sub,
    [RAYO_OP_MUL] = e_mul,             [RAYO_OP_DIV] = e_div,
    [RAYO_OP_MAXIMUM] = e_maximum,     [RAYO_OP_MINIMUM] = e_minimum,
    [RAYO_OP_SCALE] = e_scale,         [RAYO_OP_AXPY] = e_axpy,
    [RAYO_OP_RELU] = e_relu,           [RAYO_OP_LEAKY_RELU] = e_leaky_relu,
    [RAYO_OP_ELU] = e_elu,             [RAYO_OP_SELU] = e_selu,
    [RAYO_OP_SIGMOID] = e_sigmoid,     [RAYO_OP_TANH] = e_tanh,
    [RAYO_OP_GELU] = e_gelu,           [RAYO_OP_GELU_TANH] = e_gelu_tanh,
    [RAYO_OP_SILU] = e_silu,           [RAYO_OP_MISH] = e_mish,
    [RAYO_OP_HARDSWISH] = e_hardswish, [RAYO_OP_CLIP] = e_clip,
    [RAYO_OP_EXP] = e_exp,             [RAYO_OP_LOG] = e_log,
    [RAYO_OP_SQRT] = e_sqrt,           [RAYO_OP_ABS] = e_abs,
    [RAYO_OP_SOFTPLUS] = e_softplus,
};

typedef struct elem_op {
    const char *name;
    int inputs; /* 1 or 2 (axpy reads y as its second input) */
    elem_fn fn;
} elem_op;

/* ---- module: elementwise ------------------------------------------------ */
static const char *ELEM_PARAMS =
    ".param .u64 p_y, .param .u64 p_a, .param .u64 p_b, .param .u64 p_n, "
    ".param .f32 p_alpha, .param .f32 p_beta";

/* Loads `width` consecutive floats at addr (width 1 or 4). */
static void load_f32s(kern *k, int *v, int width, int addr)
{
    for (int i = 0; i < width; i++)
        v[i] = nf(k);
    if (width == 4)
        emit(k, "ld.global.v4.f32 {%s, %s, %s, %s}, [%s];", F(v[0]), F(v[1]), F(v[2]), F(v[3]), D(addr));
    else
        emit(k, "ld.global.f32 %s, [%s];", F(v[0]), D(addr));
}

static void store_f32s(kern *k, const int *v, int width, int addr)
{
    if (width == 4)
        emit(k, "st.global.v4.f32 [%s], {%s, %s, %s, %s};", D(addr), F(v[0]), F(v[1]), F(v[2]), F(v[3]));
    else
        emit(k, "st.global.f32 [%s], %s;", D(addr), F(v[0]));
}

/* y[i..i+width) = op(a, b) at each of the `count` element indices: every
 * load first, then the math and the stores, so that a thread has all its
 * loads in flight at once (bandwidth needs that many bytes in the air) */
static void elem_body(kern *k, const elem_op *op, int width, const int *index, int count, int y, int a,
                      int b, int al, int be)
{
    int va[2][4], vb[2][4] = {{0}}, vy[4];
    for (int u = 0; u < count; u++) {
        load_f32s(k, va[u], width, addr_of(k, a, index[u], 4));
        if (op->inputs == 2)
            load_f32s(k, vb[u], width, addr_of(k, b, index[u], 4));
    }
    for (int u = 0; u < count; u++) {
        for (int i = 0; i < width; i++)
            vy[i] = op->fn(k, va[u][i], vb[u][i], al, be);
        store_f32s(k, vy, width, addr_of(k, y, index[u], 4));
    }
}

/* Grid-stride loop over n elements, two strides per trip while both are in
 * range; the v4 variant needs 16-byte aligned pointers and handles the last
 * n % 4 elements with scalar code. */
static void gen_elem_kernel(strbuf *mod, const elem_op *op, int width)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), b = param_global(k, "p_b");
    int n = param_u64(k, "p_n");
    int al = param_f32(k, "p_alpha"), be = param_f32(k, "p_beta");
    int gid, stride;
    grid_index(k, &gid, &stride);
    int count = n, i = nd(k), p = np(k);
    int l_loop = nlabel(k), l_one = nlabel(k), l_next = nlabel(k), l_tail = nlabel(k), l_end = nlabel(k);
    if (width == 4) {
        count = nd(k);
        emit(k, "shr.u64 %s, %s, 2;", D(count), D(n));
    }
    emit(k, "mov.u64 %s, %s;", D(i), D(gid));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(i), D(count));
    emit(k, "@%s bra %s;", P(p), L(l_tail));
    label(k, l_loop);
    int i2 = nd(k), p2 = np(k);
    emit(k, "add.u64 %s, %s, %s;", D(i2), D(i), D(stride));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p2), D(i2), D(count));
    emit(k, "@%s bra %s;", P(p2), L(l_one));
    int e[2] = {i, i2};
    if (width == 4)
        for (int u = 0; u < 2; u++) {
            e[u] = nd(k);
            emit(k, "shl.b64 %s, %s, 2;", D(e[u]), D(u ? i2 : i));
        }
    elem_body(k, op, width, e, 2, y, a, b, al, be);
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i2), D(stride));
    emit(k, "bra.uni %s;", L(l_next));
    label(k, l_one);
    int e1 = i;
    if (width == 4) {
        e1 = nd(k);
        emit(k, "shl.b64 %s, %s, 2;", D(e1), D(i));
    }
    elem_body(k, op, width, &e1, 1, y, a, b, al, be);
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(stride));
    label(k, l_next);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(i), D(count));
    emit(k, "@%s bra %s;", P(p), L(l_loop));
    label(k, l_tail);
    if (width == 4) {
        int j = nd(k), pt = np(k);
        emit(k, "shl.b64 %s, %s, 2;", D(j), D(count));
        emit(k, "add.u64 %s, %s, %s;", D(j), D(j), D(gid));
        emit(k, "setp.ge.u64 %s, %s, %s;", P(pt), D(j), D(n));
        emit(k, "@%s bra %s;", P(pt), L(l_end));
        elem_body(k, op, 1, &j, 1, y, a, b, al, be);
    }
    label(k, l_end);
    char name[64];
    snprintf(name, sizeof name, "ew_%s_%s", op->name, width == 4 ? "v4" : "s1");
    kern_finish(mod, k, name, ELEM_PARAMS, NULL, NULL);
}

static void elem_kernels(strbuf *mod, unsigned id, const char *name, int sig)
{
    if (sig != RAYO_SIG_BINARY && sig != RAYO_SIG_UNARY && sig != RAYO_SIG_UNARY_P && sig != RAYO_SIG_UNARY_P2 &&
        sig != RAYO_SIG_AXPY)
        return;
    if (!elem_bodies[id]) {
        fprintf(stderr, "gen-ptx: the elementwise op %s has no PTX body (ptx/elementwise.c)\n", name);
        exit(1);
    }
    elem_op op = {name, sig == RAYO_SIG_BINARY || sig == RAYO_SIG_AXPY ? 2 : 1, elem_bodies[id]};
    gen_elem_kernel(mod, &op, 4);
    gen_elem_kernel(mod, &op, 1);
}

/* One kernel pair per elementwise op of the list (the signatures whose
 * kernels the cuda plugin names ew_<op>_v4 and ew_<op>_s1); an op of the
 * list without a body here stops the build. */
void module_elementwise(strbuf *mod)
{
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) elem_kernels(mod, ID, #NAME, RAYO_SIG_##SIG);
#include "../core/rayo-ops.h"
#undef RAYO_OP
}

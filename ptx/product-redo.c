/* SPDX-License-Identifier: MIT */
/* product-redo.c - the slow path every product kernel takes where its float
 * sums overflowed: rayo-ops.h promises no intermediate overflow where the
 * float64 result is finite, yet products near 1e38 that cancel pass FLT_MAX
 * in any float partial sum.  An output whose sum is not finite is computed
 * again by its own thread, term by term in float64 (products of floats are
 * exact there, and their sums cannot overflow), from the operands in global
 * memory with the kernel's own addressing.  Finite sums skip it at the cost
 * of one test and branch; a NaN or infinity in the inputs takes it and
 * stays NaN or infinity. */
#include "gen-ptx.h"

/* Element i (.b64) of operand o as .f64: element i * step of a float32 or
 * bf16 operand, or value i of a row of blocks. */
static int redo_load(kern *k, const redo_operand *o, int i)
{
    int v = nfd(k), f, idx = i;
    if (o->step >= 0) {
        idx = nd(k);
        emit(k, "mul.lo.u64 %s, %s, %s;", D(idx), D(i), D(o->step));
    }
    if (o->dtype == RAYO_DTYPE_F32) {
        f = nf(k);
        emit(k, "ld.global.f32 %s, [%s];", F(f), D(addr_of(k, o->base, idx, 4)));
    } else { /* value idx % per of block idx / per */
        int per = (int)rayo_dtype_block_elems(o->dtype), bytes = (int)rayo_dtype_block_bytes(o->dtype);
        int b = nd(k), e = nd(k), e32 = nr(k), blk = nd(k);
        emit(k, "div.u64 %s, %s, %d;", D(b), D(idx), per);
        emit(k, "rem.u64 %s, %s, %d;", D(e), D(idx), per);
        emit(k, "cvt.u32.u64 %s, %s;", R(e32), D(e));
        emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(blk), D(b), bytes, D(o->base));
        f = dequant_value(k, o->dtype, blk, e32);
    }
    emit(k, "cvt.f64.f32 %s, %s;", FD(v), F(f));
    return v;
}

/* acc = sum over count terms of a[i] * b[i] in float64 */
static void dot_f64(kern *k, int acc, const redo_operand *a, const redo_operand *b, int count)
{
    int more = np(k), i = nd(k), l_loop = nlabel(k), l_done = nlabel(k);
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    emit(k, "mov.u64 %s, 0;", D(i));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(more), D(i), D(count));
    emit(k, "@%s bra %s;", P(more), L(l_done));
    label(k, l_loop);
    int va = redo_load(k, a, i), vb = redo_load(k, b, i);
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc), FD(va), FD(vb), FD(acc));
    emit(k, "add.u64 %s, %s, 1;", D(i), D(i));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(more), D(i), D(count));
    emit(k, "@%s bra %s;", P(more), L(l_loop));
    label(k, l_done);
}

void redo_if_not_finite(kern *k, int acc, const redo_operand *a, const redo_operand *b, int count)
{
    int ok = np(k), l_done = nlabel(k);
    emit(k, "testp.finite.f64 %s, %s;", P(ok), FD(acc));
    emit(k, "@%s bra %s;", P(ok), L(l_done));
    dot_f64(k, acc, a, b, count);
    label(k, l_done);
}

/* Index q (.b32) of a span's rows (or columns) as a .b64 index. */
static int span_at(kern *k, const redo_span *s, int q)
{
    int g = nr(k), e = nr(k), at = nd(k), t = nd(k);
    emit(k, "div.u32 %s, %s, %d;", R(g), R(q), s->run);
    emit(k, "rem.u32 %s, %s, %d;", R(e), R(q), s->run);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(g), R(g), s->gap, R(e));
    emit(k, "cvt.u64.u32 %s, %s;", D(t), R(g));
    emit(k, "add.u64 %s, %s, %s;", D(at), D(s->base), D(t));
    return at;
}

void redo_tile(kern *k, const redo_product *p, const redo_span *rows, const redo_span *cols, int c, int ldc,
               int alpha, int beta)
{
    int per_row = cols->groups * cols->run, total = rows->groups * rows->run * per_row;
    int q = nr(k), ri = nr(k), ci = nr(k), pin = np(k), pc = np(k), more = np(k);
    int l_loop = nlabel(k), l_next = nlabel(k);
    emit(k, "mov.u32 %s, 0;", R(q));
    label(k, l_loop);
    emit(k, "div.u32 %s, %s, %d;", R(ri), R(q), per_row);
    emit(k, "rem.u32 %s, %s, %d;", R(ci), R(q), per_row);
    int row = span_at(k, rows, ri), col = span_at(k, cols, ci);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(row), D(p->M));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pc), D(col), D(p->N));
    emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(pc));
    emit(k, "@!%s bra %s;", P(pin), L(l_next));
    int ia = nd(k), jb = nd(k), idx = nd(k), acc = nfd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(ia), D(row), D(p->a_row));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(jb), D(col), D(p->b_col));
    int size = (int)(rayo_dtype_block_bytes(p->dtype) / rayo_dtype_block_elems(p->dtype));
    redo_operand a = {addr_of(k, p->a, ia, size), p->a_k, p->dtype};
    redo_operand b = {addr_of(k, p->b, jb, size), p->b_k, p->dtype};
    dot_f64(k, acc, &a, &b, p->K);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(row), D(ldc), D(col));
    store_scaled(k, acc, addr_of(k, c, idx, 4), alpha, beta);
    label(k, l_next);
    emit(k, "add.u32 %s, %s, 1;", R(q), R(q));
    emit(k, "setp.lt.u32 %s, %s, %d;", P(more), R(q), total);
    emit(k, "@%s bra %s;", P(more), L(l_loop));
}

int any_not_finite(kern *k, const int *v, int count)
{
    int t = fmov(k, 0.0f), bad = np(k);
    for (int i = 0; i < count; i++) /* v * 0 is NaN exactly where v is not finite */
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(t), F(v[i]), C(0.0f), F(t));
    emit(k, "testp.notanumber.f32 %s, %s;", P(bad), F(t));
    return bad;
}

void redo_if_not_finite_f32(kern *k, int acc, const redo_operand *a, const redo_operand *b, int count)
{
    int d = nfd(k), ok = np(k), l_done = nlabel(k);
    emit(k, "testp.finite.f32 %s, %s;", P(ok), F(acc));
    emit(k, "@%s bra %s;", P(ok), L(l_done));
    emit(k, "cvt.f64.f32 %s, %s;", FD(d), F(acc));
    redo_if_not_finite(k, d, a, b, count);
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(acc), FD(d));
    label(k, l_done);
}

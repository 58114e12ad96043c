/* SPDX-License-Identifier: MIT */
/* splitk.c - module "splitk": the sum of a split-K matmul's partials.
 *
 * The fp32 kernels of module "sgemm" run over a grid nctaid.z deep write
 * one m x n partial product per slab of k (plugins/cuda/cuda-matmul-small.c
 * picks the slabs); splitk_sum adds them in float64, always in slab order,
 * so a result is the same on every run (no atomics), and scales:
 *   C = alpha * sum_s P_s + beta * C   (C read only when beta != 0);
 * an element whose sum is not finite is computed again from A and B. */
#include "gen-ptx.h"

/* The operands of the product: op(A)(i, p) = a[i sai + p sap], op(B)(p, j)
 * = b[p sbp + j sbj], C n wide, k terms. */
typedef struct splitk_operands {
    int a, b, n, k, sai, sap, sbp, sbj; /* .b64 */
} splitk_operands;

/* Element gid of C again in float64 from A and B where the partials' sum
 * acc is not finite: a slab's float partial overflows where products near
 * 1e38 cancel only across slabs (product-redo.c). */
static void redo_element(kern *k, const splitk_operands *op, int gid, int acc)
{
    int i = nd(k), j = nd(k), ia = nd(k), jb = nd(k);
    emit(k, "div.u64 %s, %s, %s;", D(i), D(gid), D(op->n));
    emit(k, "rem.u64 %s, %s, %s;", D(j), D(gid), D(op->n));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(ia), D(i), D(op->sai));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(jb), D(j), D(op->sbj));
    redo_operand a = {addr_of(k, op->a, ia, 4), op->sap, RAYO_DTYPE_F32};
    redo_operand b = {addr_of(k, op->b, jb, 4), op->sbp, RAYO_DTYPE_F32};
    redo_if_not_finite(k, acc, &a, &b, op->k);
}

/* A thread per element of C, grid-stride. */
static void gen_splitk_sum(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int c = param_global(k, "p_c"), part = param_global(k, "p_part");
    int count = param_u64(k, "p_count"), slabs = param_u64(k, "p_slabs");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    splitk_operands op = {param_global(k, "p_a"), param_global(k, "p_b"), param_u64(k, "p_n"),
                          param_u64(k, "p_k"), param_u64(k, "p_sai"), param_u64(k, "p_sap"),
                          param_u64(k, "p_sbp"), param_u64(k, "p_sbj")};
    int gid, stride;
    grid_index(k, &gid, &stride);
    int slab_bytes = nd(k), end = nd(k);
    emit(k, "shl.b64 %s, %s, 2;", D(slab_bytes), D(count));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(end), D(slab_bytes), D(slabs));
    int l_elem = nlabel(k), l_done = nlabel(k), l_slab = nlabel(k), pe = np(k), ps = np(k);
    label(k, l_elem);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pe), D(gid), D(count));
    emit(k, "@%s bra %s;", P(pe), L(l_done));
    int acc = nfd(k), p = nd(k), last = nd(k), v = nf(k), vd = nfd(k);
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(p), D(gid), D(part));
    emit(k, "add.u64 %s, %s, %s;", D(last), D(p), D(end));
    label(k, l_slab);
    emit(k, "ld.global.nc.f32 %s, [%s];", F(v), D(p));
    emit(k, "cvt.f64.f32 %s, %s;", FD(vd), F(v));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(vd));
    emit(k, "add.u64 %s, %s, %s;", D(p), D(p), D(slab_bytes));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(ps), D(p), D(last));
    emit(k, "@%s bra %s;", P(ps), L(l_slab));
    redo_element(k, &op, gid, acc);
    store_scaled(k, acc, addr_of(k, c, gid, 4), alpha, beta);
    emit(k, "add.u64 %s, %s, %s;", D(gid), D(gid), D(stride));
    emit(k, "bra.uni %s;", L(l_elem));
    label(k, l_done);
    kern_finish(mod, k, "splitk_sum",
                ".param .u64 p_c, .param .u64 p_part, .param .u64 p_count, .param .u64 p_slabs, "
                ".param .f32 p_alpha, .param .f32 p_beta, .param .u64 p_a, .param .u64 p_b, "
                ".param .u64 p_n, .param .u64 p_k, .param .u64 p_sai, .param .u64 p_sap, "
                ".param .u64 p_sbp, .param .u64 p_sbj",
                ".maxntid 256, 1, 1\n", NULL);
}

void module_splitk(strbuf *mod)
{
    gen_splitk_sum(mod);
}

/* SPDX-License-Identifier: MIT */
/* transpose.c - the transpose kernel of module "matrix". */
#include "gen-ptx.h"

/* y (n x m) = a (m x n)^T through a padded 32x33 shared tile; block 32x8. */
void gen_transpose(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int tx = sreg(k, "%tid.x"), ty = sreg(k, "%tid.y");
    int bx = sreg(k, "%ctaid.x"), by0 = sreg(k, "%ctaid.y"), nby = sreg(k, "%nctaid.y");
    int tile = nr(k);
    emit(k, "mov.u32 %s, tr_tile;", R(tile));
    int col0 = nd(k), by = nd(k), bystep = nd(k);
    emit(k, "mul.wide.u32 %s, %s, 32;", D(col0), R(bx));
    emit(k, "cvt.u64.u32 %s, %s;", D(by), R(by0));
    emit(k, "cvt.u64.u32 %s, %s;", D(bystep), R(nby));
    int tx64 = nd(k), ty64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(tx64), R(tx));
    emit(k, "cvt.u64.u32 %s, %s;", D(ty64), R(ty));
    int l_blk = nlabel(k), l_end = nlabel(k), pb = np(k), row0 = nd(k);
    label(k, l_blk);
    emit(k, "shl.b64 %s, %s, 5;", D(row0), D(by));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pb), D(row0), D(m));
    emit(k, "@%s bra %s;", P(pb), L(l_end));
    for (int r = 0; r < 32; r += 8) {
        /* load a[row0 + ty + r][col0 + tx] into tile[ty + r][tx] */
        int row = nd(k), col = nd(k), pin = np(k), pc = np(k), idx = nd(k), v = nf(k), sa = nr(k);
        emit(k, "add.u64 %s, %s, %s;", D(row), D(row0), D(ty64));
        emit(k, "add.u64 %s, %s, %d;", D(row), D(row), r);
        emit(k, "add.u64 %s, %s, %s;", D(col), D(col0), D(tx64));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(row), D(m));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pc), D(col), D(n));
        emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(pc));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(row), D(n), D(col));
        emit(k, "mov.f32 %s, %s;", F(v), C(0.0f));
        emit(k, "@%s ld.global.f32 %s, [%s];", P(pin), F(v), D(addr_of(k, a, idx, 4)));
        int tyr = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(tyr), R(ty), r);
        emit(k, "mad.lo.u32 %s, %s, 33, %s;", R(sa), R(tyr), R(tx));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(sa), R(tile));
        emit(k, "st.shared.f32 [%s], %s;", R(sa), F(v));
    }
    emit(k, "bar.sync 0;");
    for (int r = 0; r < 32; r += 8) {
        /* y[col0 + ty + r][row0 + tx] = tile[tx][ty + r] */
        int orow = nd(k), ocol = nd(k), pin = np(k), pc = np(k), idx = nd(k), v = nf(k), sa = nr(k), tyr = nr(k);
        emit(k, "add.u64 %s, %s, %s;", D(orow), D(col0), D(ty64));
        emit(k, "add.u64 %s, %s, %d;", D(orow), D(orow), r);
        emit(k, "add.u64 %s, %s, %s;", D(ocol), D(row0), D(tx64));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(orow), D(n));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pc), D(ocol), D(m));
        emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(pc));
        emit(k, "add.u32 %s, %s, %d;", R(tyr), R(ty), r);
        emit(k, "mad.lo.u32 %s, %s, 33, %s;", R(sa), R(tx), R(tyr));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(sa), R(tile));
        emit(k, "ld.shared.f32 %s, [%s];", F(v), R(sa));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(orow), D(m), D(ocol));
        emit(k, "@%s st.global.f32 [%s], %s;", P(pin), D(addr_of(k, y, idx, 4)), F(v));
    }
    emit(k, "bar.sync 0;");
    emit(k, "add.u64 %s, %s, %s;", D(by), D(by), D(bystep));
    emit(k, "bra.uni %s;", L(l_blk));
    label(k, l_end);
    kern_finish(mod, k, "transpose",
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_m, .param .u64 p_n",
                ".maxntid 32, 8, 1\n", "\t.shared .align 4 .b8 tr_tile[4224];\n");
}

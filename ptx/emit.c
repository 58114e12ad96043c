/* SPDX-License-Identifier: MIT */
/* emit.c - the emitter of the PTX generator: a growable text buffer, the
 * virtual registers of one kernel, instruction printing, and the small
 * building blocks every kernel uses (parameters, thread indices, addresses).
 * See gen-ptx.h. */
#include "gen-ptx.h"

#include <stdarg.h>
#include <stdlib.h>


static void sb_vprintf(strbuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int need = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (need < 0) {
        fprintf(stderr, "gen-ptx: bad format\n");
        exit(1);
    }
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)need + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "gen-ptx: out of memory\n");
            exit(1);
        }
        b->p = p;
        b->cap = cap;
    }
    vsnprintf(b->p + b->len, (size_t)need + 1, fmt, ap);
    b->len += (size_t)need;
}

void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

void sb_free(strbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}


int nf(kern *k) { return k->nf++; }   /* .f32 */
int nr(kern *k) { return k->nr++; }   /* .b32 */
int nd(kern *k) { return k->nd++; }   /* .b64 */
int nfd(kern *k) { return k->nfd++; } /* .f64 */
int np(kern *k) { return k->np++; }   /* .pred */
int nlabel(kern *k) { return k->nlabel++; }

/* Register and constant names live in a ring of small buffers, so that one
 * emit() call can format several of them.  A name stays valid until
 * RING_SLOTS more are formatted, so one instruction may use at most
 * RING_SLOTS: more would print an overwritten name, that is wrong PTX, so
 * the generator stops instead.  The count restarts when an instruction or a
 * label is written.  (A nested emit in an argument list, as in
 * D(addr_of(...)), restarts it early; argument lists are short, far below
 * the limit, so that cannot hide an overflow in practice.) */
#define RING_SLOTS 64
static char ring[RING_SLOTS][32];
static unsigned ring_pos, ring_pending;
static char *ring_next(void)
{
    if (++ring_pending > RING_SLOTS) {
        fprintf(stderr, "gen-ptx: an instruction uses more than %d register or constant names: "
                        "the name ring in ptx/emit.c would overwrite some (enlarge RING_SLOTS)\n",
                RING_SLOTS);
        exit(1);
    }
    return ring[ring_pos++ % RING_SLOTS];
}
const char *F(int i) { char *s = ring_next(); snprintf(s, 32, "%%f%d", i); return s; }
const char *R(int i) { char *s = ring_next(); snprintf(s, 32, "%%r%d", i); return s; }
const char *D(int i) { char *s = ring_next(); snprintf(s, 32, "%%rd%d", i); return s; }
const char *FD(int i) { char *s = ring_next(); snprintf(s, 32, "%%fd%d", i); return s; }
const char *P(int i) { char *s = ring_next(); snprintf(s, 32, "%%p%d", i); return s; }
const char *L(int i) { char *s = ring_next(); snprintf(s, 32, "$L%d", i); return s; }

/* A float32 immediate, bit exact. */
const char *C(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    char *s = ring_next();
    snprintf(s, 32, "0f%08X", (unsigned)u);
    return s;
}
const char *CB(uint32_t bits)
{
    char *s = ring_next();
    snprintf(s, 32, "0f%08X", (unsigned)bits);
    return s;
}
const char *CD(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    char *s = ring_next();
    snprintf(s, 32, "0d%016llX", (unsigned long long)u);
    return s;
}

void emit(kern *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_printf(&k->body, "\t");
    sb_vprintf(&k->body, fmt, ap);
    sb_printf(&k->body, "\n");
    va_end(ap);
    ring_pending = 0;
}

void label(kern *k, int l)
{
    sb_printf(&k->body, "%s:\n", L(l));
    ring_pending = 0;
}

ptx_loop ptx_loop_begin(kern *k, int start, int end, int step)
{
    ptx_loop l = {nd(k), np(k), nlabel(k), nlabel(k), step};
    emit(k, "mov.u64 %s, %s;", D(l.i), D(start));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(l.p), D(l.i), D(end));
    emit(k, "@%s bra %s;", P(l.p), L(l.l_done));
    label(k, l.l_top);
    return l;
}

void ptx_loop_end(kern *k, ptx_loop l, int end)
{
    emit(k, "add.u64 %s, %s, %d;", D(l.i), D(l.i), l.step);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(l.p), D(l.i), D(end));
    emit(k, "@%s bra %s;", P(l.p), L(l.l_top));
    label(k, l.l_done);
}

/* Writes the finished kernel into the module: entry line, parameters,
 * directives, register declarations, shared memory, the place of the
 * griddepcontrol instructions, then the body. */
void kern_finish(strbuf *mod, kern *k, const char *name, const char *params,
                        const char *directives, const char *shared)
{
    sb_printf(mod, "\n.visible .entry %s(%s)\n%s{\n", name, params, directives ? directives : "");
    if (k->nf) sb_printf(mod, "\t.reg .f32 %%f<%d>;\n", k->nf);
    if (k->nr) sb_printf(mod, "\t.reg .b32 %%r<%d>;\n", k->nr);
    if (k->nd) sb_printf(mod, "\t.reg .b64 %%rd<%d>;\n", k->nd);
    if (k->nfd) sb_printf(mod, "\t.reg .f64 %%fd<%d>;\n", k->nfd);
    if (k->np) sb_printf(mod, "\t.reg .pred %%p<%d>;\n", k->np);
    if (shared) sb_printf(mod, "%s", shared);
    /* before any memory access: griddepcontrol on sm_90 (cuda-ptx.h) */
    sb_printf(mod, "%s", RAYO_PTX_PDL_MARK);
    sb_printf(mod, "%s\tret;\n}\n", k->body.p ? k->body.p : "");
    sb_free(&k->body);
    memset(k, 0, sizeof *k);
}

/* ---- small building blocks --------------------------------------------- */
int param_u64(kern *k, const char *name)
{
    int r = nd(k);
    emit(k, "ld.param.u64 %s, [%s];", D(r), name);
    return r;
}

int param_global(kern *k, const char *name)
{
    int r = param_u64(k, name), g = nd(k);
    emit(k, "cvta.to.global.u64 %s, %s;", D(g), D(r));
    return g;
}

int param_f32(kern *k, const char *name)
{
    int r = nf(k);
    emit(k, "ld.param.f32 %s, [%s];", F(r), name);
    return r;
}

int sreg(kern *k, const char *name)
{
    int r = nr(k);
    emit(k, "mov.u32 %s, %s;", R(r), name);
    return r;
}

/* 64-bit global thread index and grid stride (1-D grids). */
void grid_index(kern *k, int *gid, int *stride)
{
    int ctaid = sreg(k, "%ctaid.x"), ntid = sreg(k, "%ntid.x");
    int tid = sreg(k, "%tid.x"), nctaid = sreg(k, "%nctaid.x");
    int t64 = nd(k);
    *gid = nd(k);
    *stride = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %s;", D(*gid), R(ctaid), R(ntid));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tid));
    emit(k, "add.u64 %s, %s, %s;", D(*gid), D(*gid), D(t64));
    emit(k, "mul.wide.u32 %s, %s, %s;", D(*stride), R(nctaid), R(ntid));
}

/* address = base + index * scale */
int addr_of(kern *k, int base, int index, int scale)
{
    int a = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(a), D(index), scale, D(base));
    return a;
}

int fmov(kern *k, float v)
{
    int r = nf(k);
    emit(k, "mov.f32 %s, %s;", F(r), C(v));
    return r;
}

int is_nan(kern *k, int x)
{
    int p = np(k);
    emit(k, "setp.nan.f32 %s, %s, %s;", P(p), F(x), F(x));
    return p;
}

/* Horner: c[n-1] x^(n-1) + ... + c[0] */
int horner(kern *k, int x, const float *c, int n)
{
    int acc = fmov(k, c[n - 1]);
    for (int i = n - 2; i >= 0; i--) {
        int t = nf(k);
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(t), F(acc), F(x), C(c[i]));
        acc = t;
    }
    return acc;
}

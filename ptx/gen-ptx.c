/* gen-ptx.c - the PTX generator of rayo's cuda backend.
 *
 * rayo ships no CUDA C and needs no nvcc: every kernel of the cuda backend is
 * written here as PTX text, emitted by small C functions.  Emitting PTX from C
 * lets one template produce specialised variants (tile sizes, the sm target,
 * vector widths, transposes) and fully unrolled inner loops without a
 * compiler of our own.  The driver JIT-compiles the PTX for the device at run
 * time (cuLinkAddData / cuModuleLoadDataEx); CI assembles every output with
 * ptxas.
 *
 * Usage:
 *   gen-ptx --list                       module names, one a line
 *   gen-ptx --module NAME --sm 80|90     one module's PTX on stdout
 *   gen-ptx --ptx-dir DIR                every module for every target: DIR/NAME-smXX.ptx
 *   gen-ptx --c-source FILE              every module as C strings (embedded in the plugin)
 *
 * Registers are virtual: each emitter takes fresh ones and ptxas allocates
 * them.  Accuracy-sensitive math (exp, expm1, log, erfc) is written out with
 * explicit rounding (.rn) so ptxas cannot contract it differently.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable text buffer ------------------------------------------------- */
typedef struct strbuf {
    char *p;
    size_t len, cap;
} strbuf;

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

static void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

static void sb_free(strbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- kernels and virtual registers ------------------------------------- */
typedef struct kern {
    strbuf body;
    int nf, nr, nd, nfd, np, nlabel;
} kern;

static int nf(kern *k) { return k->nf++; }   /* .f32 */
static int nr(kern *k) { return k->nr++; }   /* .b32 */
static int nd(kern *k) { return k->nd++; }   /* .b64 */
static int nfd(kern *k) { return k->nfd++; } /* .f64 */
static int np(kern *k) { return k->np++; }   /* .pred */
static int nlabel(kern *k) { return k->nlabel++; }

/* Register and constant names live in a ring of small buffers, so that one
 * emit() call can format several of them. */
static char ring[64][32];
static unsigned ring_pos;
static char *ring_next(void)
{
    return ring[ring_pos++ % 64];
}
static const char *F(int i) { char *s = ring_next(); snprintf(s, 32, "%%f%d", i); return s; }
static const char *R(int i) { char *s = ring_next(); snprintf(s, 32, "%%r%d", i); return s; }
static const char *D(int i) { char *s = ring_next(); snprintf(s, 32, "%%rd%d", i); return s; }
static const char *FD(int i) { char *s = ring_next(); snprintf(s, 32, "%%fd%d", i); return s; }
static const char *P(int i) { char *s = ring_next(); snprintf(s, 32, "%%p%d", i); return s; }
static const char *L(int i) { char *s = ring_next(); snprintf(s, 32, "$L%d", i); return s; }

/* A float32 immediate, bit exact. */
static const char *C(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    char *s = ring_next();
    snprintf(s, 32, "0f%08X", (unsigned)u);
    return s;
}
static const char *CB(uint32_t bits)
{
    char *s = ring_next();
    snprintf(s, 32, "0f%08X", (unsigned)bits);
    return s;
}
static const char *CD(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    char *s = ring_next();
    snprintf(s, 32, "0d%016llX", (unsigned long long)u);
    return s;
}

static void emit(kern *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_printf(&k->body, "\t");
    sb_vprintf(&k->body, fmt, ap);
    sb_printf(&k->body, "\n");
    va_end(ap);
}

static void label(kern *k, int l)
{
    sb_printf(&k->body, "%s:\n", L(l));
}

/* Writes the finished kernel into the module: entry line, parameters,
 * directives, register declarations, shared memory, then the body. */
static void kern_finish(strbuf *mod, kern *k, const char *name, const char *params,
                        const char *directives, const char *shared)
{
    sb_printf(mod, "\n.visible .entry %s(%s)\n%s{\n", name, params, directives ? directives : "");
    if (k->nf) sb_printf(mod, "\t.reg .f32 %%f<%d>;\n", k->nf);
    if (k->nr) sb_printf(mod, "\t.reg .b32 %%r<%d>;\n", k->nr);
    if (k->nd) sb_printf(mod, "\t.reg .b64 %%rd<%d>;\n", k->nd);
    if (k->nfd) sb_printf(mod, "\t.reg .f64 %%fd<%d>;\n", k->nfd);
    if (k->np) sb_printf(mod, "\t.reg .pred %%p<%d>;\n", k->np);
    if (shared) sb_printf(mod, "%s", shared);
    sb_printf(mod, "%s\tret;\n}\n", k->body.p ? k->body.p : "");
    sb_free(&k->body);
    memset(k, 0, sizeof *k);
}

/* ---- small building blocks --------------------------------------------- */
static int param_u64(kern *k, const char *name)
{
    int r = nd(k);
    emit(k, "ld.param.u64 %s, [%s];", D(r), name);
    return r;
}

static int param_global(kern *k, const char *name)
{
    int r = param_u64(k, name), g = nd(k);
    emit(k, "cvta.to.global.u64 %s, %s;", D(g), D(r));
    return g;
}

static int param_f32(kern *k, const char *name)
{
    int r = nf(k);
    emit(k, "ld.param.f32 %s, [%s];", F(r), name);
    return r;
}

static int sreg(kern *k, const char *name)
{
    int r = nr(k);
    emit(k, "mov.u32 %s, %s;", R(r), name);
    return r;
}

/* 64-bit global thread index and grid stride (1-D grids). */
static void grid_index(kern *k, int *gid, int *stride)
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
static int addr_of(kern *k, int base, int index, int scale)
{
    int a = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(a), D(index), scale, D(base));
    return a;
}

static int fmov(kern *k, float v)
{
    int r = nf(k);
    emit(k, "mov.f32 %s, %s;", F(r), C(v));
    return r;
}

static int is_nan(kern *k, int x)
{
    int p = np(k);
    emit(k, "setp.nan.f32 %s, %s, %s;", P(p), F(x), F(x));
    return p;
}

/* Horner: c[n-1] x^(n-1) + ... + c[0] */
static int horner(kern *k, int x, const float *c, int n)
{
    int acc = fmov(k, c[n - 1]);
    for (int i = n - 2; i >= 0; i--) {
        int t = nf(k);
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(t), F(acc), F(x), C(c[i]));
        acc = t;
    }
    return acc;
}

/* ---- accurate math (within the op list's 2e-6 relative contracts) ------- */
#define LOG2E_F 1.44269504088896341f
#define LN2_HI_F 0.693145751953125f       /* 0x3f317200: few bits, n*LN2_HI exact */
#define LN2_LO_F 1.42860676533018e-06f    /* ln 2 - LN2_HI */

/* exp(x): x = n ln2 + r, |r| <= ln2/2; exp(r) by its Taylor series to r^7;
 * 2^n applied as two exact power-of-two factors so results that underflow
 * to subnormals round once.  ~2 ulp. */
static int m_exp(kern *k, int x)
{
    static const float taylor[8] = {1.0f, 1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24,
                                    1.0f / 120, 1.0f / 720, 1.0f / 5040};
    int xc = nf(k), t = nf(k), n = nf(k), r1 = nf(k), r = nf(k);
    emit(k, "max.f32 %s, %s, %s;", F(xc), F(x), C(-104.0f));
    emit(k, "min.f32 %s, %s, %s;", F(xc), F(xc), C(89.0f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(xc), C(LOG2E_F));
    emit(k, "cvt.rni.f32.f32 %s, %s;", F(n), F(t));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(r1), F(n), C(-LN2_HI_F), F(xc));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(r), F(n), C(-LN2_LO_F), F(r1));
    int p = horner(k, r, taylor, 8);
    int ni = nr(k), n1 = nr(k), n2 = nr(k), b1 = nr(k), b2 = nr(k);
    int s1 = nf(k), s2 = nf(k), y1 = nf(k), y2 = nf(k), y = nf(k);
    emit(k, "cvt.rzi.s32.f32 %s, %s;", R(ni), F(n));
    emit(k, "shr.s32 %s, %s, 1;", R(n1), R(ni));
    emit(k, "sub.s32 %s, %s, %s;", R(n2), R(ni), R(n1));
    emit(k, "add.s32 %s, %s, 127;", R(b1), R(n1));
    emit(k, "shl.b32 %s, %s, 23;", R(b1), R(b1));
    emit(k, "add.s32 %s, %s, 127;", R(b2), R(n2));
    emit(k, "shl.b32 %s, %s, 23;", R(b2), R(b2));
    emit(k, "mov.b32 %s, %s;", F(s1), R(b1));
    emit(k, "mov.b32 %s, %s;", F(s2), R(b2));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y1), F(p), F(s1));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y2), F(y1), F(s2));
    int pn = is_nan(k, x);
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(x), F(y2), P(pn));
    return y;
}

/* expm1(x): Taylor series for |x| < 0.5 (no cancellation), exp(x) - 1 beyond. */
static int m_expm1(kern *k, int x)
{
    static const float c[8] = {1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720,
                               1.0f / 5040, 1.0f / 40320, 1.0f / 362880};
    int q = horner(k, x, c, 8);
    int x2 = nf(k), small = nf(k), big = nf(k), ax = nf(k), y = nf(k), ps = np(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(x2), F(x), F(x));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(small), F(q), F(x2), F(x));
    int e = m_exp(k, x);
    emit(k, "sub.rn.f32 %s, %s, %s;", F(big), F(e), C(1.0f));
    emit(k, "abs.f32 %s, %s;", F(ax), F(x));
    emit(k, "setp.lt.f32 %s, %s, %s;", P(ps), F(ax), C(0.5f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(small), F(big), P(ps));
    return y;
}

/* log(x): x = 2^e m, m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m-1)/(m+1),
 * by its odd series; subnormals scaled first; IEEE special cases at the end. */
static int m_log(kern *k, int x)
{
    int psub = np(k), xs1 = nf(k), xs = nf(k), eadj = nr(k);
    emit(k, "setp.lt.f32 %s, %s, %s;", P(psub), F(x), CB(0x00800000u));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(xs1), F(x), C(8388608.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(xs), F(xs1), F(x), P(psub));
    emit(k, "selp.s32 %s, -23, 0, %s;", R(eadj), P(psub));
    int bits = nr(k), t = nr(k), e = nr(k), es = nr(k), mb = nr(k);
    emit(k, "mov.b32 %s, %s;", R(bits), F(xs));
    emit(k, "sub.s32 %s, %s, 1060439283;", R(t), R(bits)); /* 0x3f3504f3 = sqrt(1/2) */
    emit(k, "shr.s32 %s, %s, 23;", R(e), R(t));
    emit(k, "shl.b32 %s, %s, 23;", R(es), R(e));
    emit(k, "sub.s32 %s, %s, %s;", R(mb), R(bits), R(es));
    int m = nf(k), f = nf(k), den = nf(k), s = nf(k), z = nf(k);
    emit(k, "mov.b32 %s, %s;", F(m), R(mb));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(f), F(m), C(1.0f));
    emit(k, "add.rn.f32 %s, %s, %s;", F(den), F(f), C(2.0f));
    emit(k, "div.rn.f32 %s, %s, %s;", F(s), F(f), F(den));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(z), F(s), F(s));
    static const float series[5] = {1.0f / 3, 1.0f / 5, 1.0f / 7, 1.0f / 9, 1.0f / 11};
    int q = horner(k, z, series, 5);
    int s2 = nf(k), zq = nf(k), lm = nf(k), ei = nr(k), ef = nf(k), lo = nf(k), y0 = nf(k);
    emit(k, "add.rn.f32 %s, %s, %s;", F(s2), F(s), F(s));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(zq), F(z), F(q));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(lm), F(s2), F(zq), F(s2));
    emit(k, "add.s32 %s, %s, %s;", R(ei), R(e), R(eadj));
    emit(k, "cvt.rn.f32.s32 %s, %s;", F(ef), R(ei));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(lo), F(ef), C(LN2_LO_F), F(lm));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(y0), F(ef), C(LN2_HI_F), F(lo));
    int pz = np(k), pneg = np(k), pinf = np(k), y1 = nf(k), y2 = nf(k), y3 = nf(k), y = nf(k);
    emit(k, "setp.eq.f32 %s, %s, %s;", P(pz), F(x), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y1), CB(0xff800000u), F(y0), P(pz));
    emit(k, "setp.lt.f32 %s, %s, %s;", P(pneg), F(x), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y2), CB(0x7fffffffu), F(y1), P(pneg));
    emit(k, "setp.eq.f32 %s, %s, %s;", P(pinf), F(x), CB(0x7f800000u));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y3), CB(0x7f800000u), F(y2), P(pinf));
    int pn = is_nan(k, x);
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(x), F(y3), P(pn));
    return y;
}

/* erfc(t) for t >= 0: tau exp(-t^2 + Q(tau)), tau = 2/(2+t); Q fitted by
 * ptx/fit-erfc.py (relative error ~1e-7 where it matters); 0 beyond t = 10. */
static int m_erfc_pos(kern *k, int t)
{
    static const uint32_t q[10] = {0xBFA1FA33u, 0x3F7FA666u, 0x3EC5F5BBu, 0x3D0DBBAAu,
                                   0x3AA62531u, 0xBDA46A12u, 0xBF323D90u, 0x3F940FDAu,
                                   0xBF2E4AB1u, 0x3E146896u};
    float qf[10];
    for (int i = 0; i < 10; i++)
        memcpy(&qf[i], &q[i], sizeof qf[i]);
    int den = nf(k), tau = nf(k), t2 = nf(k), arg = nf(k);
    emit(k, "add.rn.f32 %s, %s, %s;", F(den), F(t), C(2.0f));
    emit(k, "div.rn.f32 %s, %s, %s;", F(tau), C(2.0f), F(den));
    int poly = horner(k, tau, qf, 10);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t2), F(t), F(t));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(arg), F(poly), F(t2));
    int e = m_exp(k, arg);
    int y0 = nf(k), y = nf(k), pbig = np(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y0), F(tau), F(e));
    emit(k, "setp.gt.f32 %s, %s, %s;", P(pbig), F(t), C(10.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), C(0.0f), F(y0), P(pbig));
    return y;
}

/* ---- activations and elementwise functions ------------------------------ */
/* x / (1 + exp(-s x)) shared by sigmoid (x = 1), silu and gelu_tanh */
static int m_x_over_1_plus_exp_neg(kern *k, int num, int arg)
{
    int na = nf(k), d = nf(k), y = nf(k);
    emit(k, "neg.f32 %s, %s;", F(na), F(arg));
    int e = m_exp(k, na);
    emit(k, "add.rn.f32 %s, %s, %s;", F(d), F(e), C(1.0f));
    emit(k, "div.rn.f32 %s, %s, %s;", F(y), F(num), F(d));
    return y;
}

static int m_sigmoid(kern *k, int x)
{
    return m_x_over_1_plus_exp_neg(k, fmov(k, 1.0f), x);
}

static int m_silu(kern *k, int x)
{
    return m_x_over_1_plus_exp_neg(k, x, x);
}

/* tanh(x) = sign(x) e/(e+2), e = expm1(2|x|): no cancellation anywhere. */
static int m_tanh(kern *k, int x)
{
    int ax = nf(k), ax2 = nf(k), d = nf(k), t = nf(k), t1 = nf(k), y = nf(k), pbig = np(k);
    emit(k, "abs.f32 %s, %s;", F(ax), F(x));
    emit(k, "add.rn.f32 %s, %s, %s;", F(ax2), F(ax), F(ax));
    int e = m_expm1(k, ax2);
    emit(k, "add.rn.f32 %s, %s, %s;", F(d), F(e), C(2.0f));
    emit(k, "div.rn.f32 %s, %s, %s;", F(t), F(e), F(d));
    emit(k, "setp.gt.f32 %s, %s, %s;", P(pbig), F(ax), C(9.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(t1), C(1.0f), F(t), P(pbig));
    emit(k, "copysign.f32 %s, %s, %s;", F(y), F(x), F(t1));
    return y;
}

/* gelu(x) = x (1 + erf(x/sqrt2))/2 written with erfc so that neither tail cancels. */
static int m_gelu(kern *k, int x)
{
    int ax = nf(k), t = nf(k), hx = nf(k), he = nf(k), pos = nf(k), y = nf(k), pp = np(k);
    emit(k, "abs.f32 %s, %s;", F(ax), F(x));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(ax), C(0.707106781186547524f));
    int e = m_erfc_pos(k, t);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(hx), F(x), C(0.5f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(he), F(hx), F(e));
    /* x >= 0: x - x erfc/2; where erfc is 0 that is x itself (also for +inf,
     * where x * 0 would be NaN) */
    int hp = nf(k), pz = np(k);
    emit(k, "setp.eq.f32 %s, %s, %s;", P(pz), F(e), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(hp), C(0.0f), F(he), P(pz));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(pos), F(x), F(hp));
    emit(k, "setp.ge.f32 %s, %s, %s;", P(pp), F(x), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(pos), F(he), P(pp));
    return y;
}

/* gelu_tanh(x) = x (1 + tanh u)/2 = x / (1 + exp(-2u)) */
static int m_gelu_tanh(kern *k, int x)
{
    int x3 = nf(k), x2 = nf(k), in = nf(k), u2 = nf(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(x2), F(x), F(x));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(x3), F(x2), F(x));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(in), F(x3), C(0.044715f), F(x));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(u2), F(in), C(1.595769121605730711f)); /* 2 sqrt(2/pi) */
    return m_x_over_1_plus_exp_neg(k, x, u2);
}

/* mish(x) = x tanh(log1p(e^x)) = x n/(n+2), n = e^x (e^x + 2) */
static int m_mish(kern *k, int x)
{
    int e = m_exp(k, x);
    int ep2 = nf(k), n = nf(k), d = nf(k), q = nf(k), y0 = nf(k), y = nf(k), pbig = np(k);
    emit(k, "add.rn.f32 %s, %s, %s;", F(ep2), F(e), C(2.0f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(n), F(e), F(ep2));
    emit(k, "add.rn.f32 %s, %s, %s;", F(d), F(n), C(2.0f));
    emit(k, "div.rn.f32 %s, %s, %s;", F(q), F(n), F(d));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y0), F(x), F(q));
    emit(k, "setp.gt.f32 %s, %s, %s;", P(pbig), F(x), C(20.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(x), F(y0), P(pbig));
    return y;
}

static int m_relu(kern *k, int x)
{
    int y = nf(k);
    emit(k, "max.NaN.f32 %s, %s, %s;", F(y), F(x), C(0.0f));
    return y;
}

/* x > 0 ? x : scale_neg * expm1(x) ; scaled by scale_all (selu) */
static int m_elu_like(kern *k, int x, int scale_neg, float scale_all)
{
    int e = m_expm1(k, x);
    int neg = nf(k), y = nf(k), pp = np(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(neg), F(e), F(scale_neg));
    if (scale_all != 1.0f) {
        int pos = nf(k);
        emit(k, "mul.rn.f32 %s, %s, %s;", F(pos), F(x), C(scale_all));
        emit(k, "setp.gt.f32 %s, %s, %s;", P(pp), F(x), C(0.0f));
        emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(pos), F(neg), P(pp));
    } else {
        emit(k, "setp.gt.f32 %s, %s, %s;", P(pp), F(x), C(0.0f));
        emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(x), F(neg), P(pp));
    }
    return y;
}

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
static int e_elu(kern *k, int a, int b, int al, int be) { (void)b; (void)be; return m_elu_like(k, a, al, 1.0f); }
static int e_selu(kern *k, int a, int b, int al, int be)
{
    (void)b; (void)al; (void)be;
    return m_elu_like(k, a, fmov(k, (float)(SELU_LAMBDA * SELU_ALPHA)), (float)SELU_LAMBDA);
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

typedef struct elem_op {
    const char *name;
    int inputs; /* 1 or 2 (axpy reads y as its second input) */
    elem_fn fn;
} elem_op;

static const elem_op elem_ops[] = {
    {"add", 2, e_add},           {"sub", 2, e_sub},
    {"mul", 2, e_mul},           {"div", 2, e_div},
    {"maximum", 2, e_maximum},   {"minimum", 2, e_minimum},
    {"scale", 1, e_scale},       {"axpy", 2, e_axpy},
    {"relu", 1, e_relu},         {"leaky_relu", 1, e_leaky_relu},
    {"elu", 1, e_elu},           {"selu", 1, e_selu},
    {"sigmoid", 1, e_sigmoid},   {"tanh", 1, e_tanh},
    {"gelu", 1, e_gelu},         {"gelu_tanh", 1, e_gelu_tanh},
    {"silu", 1, e_silu},         {"mish", 1, e_mish},
    {"hardswish", 1, e_hardswish}, {"clip", 1, e_clip},
    {"exp", 1, e_exp},           {"log", 1, e_log},
    {"sqrt", 1, e_sqrt},         {"abs", 1, e_abs},
};

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

/* y[i..i+width) = op(a, b) at element index `index` */
static void elem_body(kern *k, const elem_op *op, int width, int index, int y, int a, int b,
                      int al, int be)
{
    int va[4], vb[4] = {0, 0, 0, 0}, vy[4];
    load_f32s(k, va, width, addr_of(k, a, index, 4));
    if (op->inputs == 2)
        load_f32s(k, vb, width, addr_of(k, b, index, 4));
    for (int i = 0; i < width; i++)
        vy[i] = op->fn(k, va[i], vb[i], al, be);
    store_f32s(k, vy, width, addr_of(k, y, index, 4));
}

/* Grid-stride loop over n elements; the v4 variant needs 16-byte aligned
 * pointers and handles the last n % 4 elements with scalar code. */
static void gen_elem_kernel(strbuf *mod, const elem_op *op, int width)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), b = param_global(k, "p_b");
    int n = param_u64(k, "p_n");
    int al = param_f32(k, "p_alpha"), be = param_f32(k, "p_beta");
    int gid, stride;
    grid_index(k, &gid, &stride);
    int count = n, i = nd(k), p = np(k);
    int l_loop = nlabel(k), l_tail = nlabel(k), l_end = nlabel(k);
    if (width == 4) {
        count = nd(k);
        emit(k, "shr.u64 %s, %s, 2;", D(count), D(n));
    }
    emit(k, "mov.u64 %s, %s;", D(i), D(gid));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(i), D(count));
    emit(k, "@%s bra %s;", P(p), L(l_tail));
    label(k, l_loop);
    int e = i;
    if (width == 4) {
        e = nd(k);
        emit(k, "shl.b64 %s, %s, 2;", D(e), D(i));
    }
    elem_body(k, op, width, e, y, a, b, al, be);
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(stride));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(i), D(count));
    emit(k, "@%s bra %s;", P(p), L(l_loop));
    label(k, l_tail);
    if (width == 4) {
        int j = nd(k), pt = np(k);
        emit(k, "shl.b64 %s, %s, 2;", D(j), D(count));
        emit(k, "add.u64 %s, %s, %s;", D(j), D(j), D(gid));
        emit(k, "setp.ge.u64 %s, %s, %s;", P(pt), D(j), D(n));
        emit(k, "@%s bra %s;", P(pt), L(l_end));
        elem_body(k, op, 1, j, y, a, b, al, be);
    }
    label(k, l_end);
    char name[64];
    snprintf(name, sizeof name, "ew_%s_%s", op->name, width == 4 ? "v4" : "s1");
    kern_finish(mod, k, name, ELEM_PARAMS, NULL, NULL);
}

static void module_elementwise(strbuf *mod)
{
    for (size_t i = 0; i < sizeof elem_ops / sizeof elem_ops[0]; i++) {
        gen_elem_kernel(mod, &elem_ops[i], 4);
        gen_elem_kernel(mod, &elem_ops[i], 1);
    }
}

/* ---- block-wide reductions (256 threads = 8 warps) --------------------- */
#define RED_THREADS 256
#define RED_WARPS (RED_THREADS / 32)

/* Shared scratch every reducing kernel declares: 8 warps x 16 bytes. */
static const char *RED_SHARED = "\t.shared .align 16 .b8 red_smem[128];\n";

static int shfl_f32(kern *k, int v, int off)
{
    int b = nr(k), o = nr(k), f = nf(k);
    emit(k, "mov.b32 %s, %s;", R(b), F(v));
    emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(o), R(b), off);
    emit(k, "mov.b32 %s, %s;", F(f), R(o));
    return f;
}

static int shfl_b64(kern *k, int v, int off) /* v: a .b64 register */
{
    int lo = nr(k), hi = nr(k), lo2 = nr(k), hi2 = nr(k), o = nd(k);
    emit(k, "mov.b64 {%s, %s}, %s;", R(lo), R(hi), D(v));
    emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(lo2), R(lo), off);
    emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(hi2), R(hi), off);
    emit(k, "mov.b64 %s, {%s, %s};", D(o), R(lo2), R(hi2));
    return o;
}

static int shfl_f64(kern *k, int v, int off)
{
    int b = nd(k), f = nfd(k);
    emit(k, "mov.b64 %s, %s;", D(b), FD(v));
    int o = shfl_b64(k, b, off);
    emit(k, "mov.b64 %s, %s;", FD(f), D(o));
    return f;
}

/* Sum of v over the block, in every thread, in a fixed order (deterministic). */
static int block_sum_f64(kern *k, int v, int lane, int warp)
{
    int acc = v;
    for (int off = 16; off >= 1; off /= 2) {
        int o = shfl_f64(k, acc, off), s = nfd(k);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(acc), FD(o));
        acc = s;
    }
    int base = nr(k), pl = np(k), w8 = nr(k);
    emit(k, "mov.u32 %s, red_smem;", R(base));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pl), R(lane));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(w8), R(warp), R(base));
    emit(k, "@%s st.shared.f64 [%s], %s;", P(pl), R(w8), FD(acc));
    emit(k, "bar.sync 0;");
    int total = nfd(k);
    emit(k, "ld.shared.f64 %s, [%s];", FD(total), R(base));
    for (int w = 1; w < RED_WARPS; w++) {
        int t = nfd(k), s = nfd(k);
        emit(k, "ld.shared.f64 %s, [%s+%d];", FD(t), R(base), w * 8);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(total), FD(t));
        total = s;
    }
    emit(k, "bar.sync 0;");
    return total;
}

/* max (is_max) or min of v over the block, NaN propagating. */
static int block_minmax_f32(kern *k, int v, int lane, int warp, int is_max)
{
    const char *ins = is_max ? "max.NaN.f32" : "min.NaN.f32";
    int acc = v;
    for (int off = 16; off >= 1; off /= 2) {
        int o = shfl_f32(k, acc, off), s = nf(k);
        emit(k, "%s %s, %s, %s;", ins, F(s), F(acc), F(o));
        acc = s;
    }
    int base = nr(k), pl = np(k), w4 = nr(k);
    emit(k, "mov.u32 %s, red_smem;", R(base));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pl), R(lane));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(w4), R(warp), R(base));
    emit(k, "@%s st.shared.f32 [%s], %s;", P(pl), R(w4), F(acc));
    emit(k, "bar.sync 0;");
    int total = nf(k);
    emit(k, "ld.shared.f32 %s, [%s];", F(total), R(base));
    for (int w = 1; w < RED_WARPS; w++) {
        int t = nf(k), s = nf(k);
        emit(k, "ld.shared.f32 %s, [%s+%d];", F(t), R(base), w * 4);
        emit(k, "%s %s, %s, %s;", ins, F(s), F(total), F(t));
        total = s;
    }
    emit(k, "bar.sync 0;");
    return total;
}

/* argmax pair (v, i): replaces it by (v2, i2) when that one comes first in
 * "first maximum, first NaN wins" order. */
static void argmax_combine(kern *k, int *v, int *i, int v2, int i2)
{
    int n1 = np(k), n2 = np(k), ilt = np(k), gt = np(k), eq = np(k);
    int t1 = np(k), t2 = np(k), nn1 = np(k), take = np(k);
    emit(k, "setp.nan.f32 %s, %s, %s;", P(n1), F(*v), F(*v));
    emit(k, "setp.nan.f32 %s, %s, %s;", P(n2), F(v2), F(v2));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(ilt), D(i2), D(*i));
    emit(k, "setp.gt.f32 %s, %s, %s;", P(gt), F(v2), F(*v));
    emit(k, "setp.eq.f32 %s, %s, %s;", P(eq), F(v2), F(*v));
    emit(k, "and.pred %s, %s, %s;", P(t1), P(eq), P(ilt));
    emit(k, "or.pred %s, %s, %s;", P(t1), P(t1), P(gt));
    emit(k, "not.pred %s, %s;", P(nn1), P(n1));
    emit(k, "or.pred %s, %s, %s;", P(t2), P(nn1), P(ilt));
    emit(k, "and.pred %s, %s, %s;", P(t2), P(t2), P(n2));
    emit(k, "or.pred %s, %s, %s;", P(take), P(t1), P(t2));
    int nv = nf(k), ni = nd(k);
    emit(k, "selp.f32 %s, %s, %s, %s;", F(nv), F(v2), F(*v), P(take));
    emit(k, "selp.b64 %s, %s, %s, %s;", D(ni), D(i2), D(*i), P(take));
    *v = nv;
    *i = ni;
}

static void block_argmax(kern *k, int *v, int *i, int lane, int warp)
{
    for (int off = 16; off >= 1; off /= 2) {
        int ov = shfl_f32(k, *v, off), oi = shfl_b64(k, *i, off);
        argmax_combine(k, v, i, ov, oi);
    }
    int base = nr(k), pl = np(k), slot = nr(k);
    emit(k, "mov.u32 %s, red_smem;", R(base));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pl), R(lane));
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(slot), R(warp), R(base));
    emit(k, "@%s st.shared.f32 [%s], %s;", P(pl), R(slot), F(*v));
    emit(k, "@%s st.shared.u64 [%s+8], %s;", P(pl), R(slot), D(*i));
    emit(k, "bar.sync 0;");
    int tv = nf(k), ti = nd(k);
    emit(k, "ld.shared.f32 %s, [%s];", F(tv), R(base));
    emit(k, "ld.shared.u64 %s, [%s+8];", D(ti), R(base));
    for (int w = 1; w < RED_WARPS; w++) {
        int wv = nf(k), wi = nd(k);
        emit(k, "ld.shared.f32 %s, [%s+%d];", F(wv), R(base), w * 16);
        emit(k, "ld.shared.u64 %s, [%s+%d];", D(wi), R(base), w * 16 + 8);
        argmax_combine(k, &tv, &ti, wv, wi);
    }
    emit(k, "bar.sync 0;");
    *v = tv;
    *i = ti;
}

static void lane_warp(kern *k, int *tid, int *lane, int *warp)
{
    *tid = sreg(k, "%tid.x");
    *lane = nr(k);
    *warp = nr(k);
    emit(k, "and.b32 %s, %s, 31;", R(*lane), R(*tid));
    emit(k, "shr.u32 %s, %s, 5;", R(*warp), R(*tid));
}

/* ---- module: reductions --------------------------------------------------
 * Two launches: *_part with G blocks writes one partial per block to a
 * scratch array; *_final with one block of 256 combines the partials in a
 * fixed order and writes the result.  Sums accumulate in float64. */
enum red_kind { RED_SUM, RED_DOT, RED_L1, RED_L2, RED_MAX, RED_MIN, RED_ARGMAX };
static const char *const red_names[] = {"sum", "dot", "norm_l1", "norm_l2", "max", "min", "argmax"};

/* The per-block partial of a reduction.  The grid-stride loop takes four
 * elements an iteration (i, i + S, i + 2S, i + 3S: four loads in flight per
 * thread), then the remaining ones one by one.  Sums accumulate in float64;
 * argmax carries (value, index) and combines in index order rules, so the
 * order elements are visited in does not matter. */
typedef struct red_acc {
    enum red_kind kind;
    int acc;        /* .f64 sum */
    int v, i;       /* .f32 max/min/argmax value, .b64 argmax index */
    int a, b;       /* inputs */
} red_acc;

static void red_visit(kern *k, red_acc *r, int idx)
{
    int x = nf(k);
    emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, r->a, idx, 4)));
    if (r->kind <= RED_L2) {
        int xd = nfd(k);
        emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
        if (r->kind == RED_SUM) {
            emit(k, "add.rn.f64 %s, %s, %s;", FD(r->acc), FD(r->acc), FD(xd));
        } else if (r->kind == RED_L1) {
            emit(k, "abs.f64 %s, %s;", FD(xd), FD(xd));
            emit(k, "add.rn.f64 %s, %s, %s;", FD(r->acc), FD(r->acc), FD(xd));
        } else if (r->kind == RED_L2) {
            emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(r->acc), FD(xd), FD(xd), FD(r->acc));
        } else {
            int yv = nf(k), yd = nfd(k);
            emit(k, "ld.global.f32 %s, [%s];", F(yv), D(addr_of(k, r->b, idx, 4)));
            emit(k, "cvt.f64.f32 %s, %s;", FD(yd), F(yv));
            emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(r->acc), FD(xd), FD(yd), FD(r->acc));
        }
    } else if (r->kind == RED_ARGMAX) {
        int nv = r->v, ni = r->i;
        argmax_combine(k, &nv, &ni, x, idx);
        emit(k, "mov.f32 %s, %s;", F(r->v), F(nv));
        emit(k, "mov.u64 %s, %s;", D(r->i), D(ni));
    } else {
        emit(k, "%s %s, %s, %s;", r->kind == RED_MAX ? "max.NaN.f32" : "min.NaN.f32", F(r->v), F(r->v), F(x));
    }
}

static void gen_red_part(strbuf *mod, enum red_kind kind)
{
    kern kk = {0}, *k = &kk;
    red_acc r = {kind, -1, -1, -1, -1, -1};
    int part = param_global(k, "p_part");
    r.a = param_global(k, "p_a");
    r.b = param_global(k, "p_b");
    int n = param_u64(k, "p_n");
    int gid, stride, tid, lane, warp;
    grid_index(k, &gid, &stride);
    lane_warp(k, &tid, &lane, &warp);
    if (kind <= RED_L2) {
        r.acc = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(r.acc), CD(0.0));
    } else {
        r.v = nf(k);
        emit(k, "mov.f32 %s, %s;", F(r.v), CB(kind == RED_MIN ? 0x7f800000u : 0xff800000u));
        if (kind == RED_ARGMAX) {
            r.i = nd(k);
            emit(k, "mov.u64 %s, -1;", D(r.i));
        }
    }
    int i = nd(k), s3 = nd(k), last = nd(k), p = np(k);
    int l_main = nlabel(k), l_rest = nlabel(k), l_one = nlabel(k), l_done = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(i), D(gid));
    emit(k, "mul.lo.u64 %s, %s, 3;", D(s3), D(stride));
    label(k, l_main);
    emit(k, "add.u64 %s, %s, %s;", D(last), D(i), D(s3));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(last), D(n));
    emit(k, "@%s bra %s;", P(p), L(l_rest));
    int idx = i;
    for (int u = 0; u < 4; u++) {
        red_visit(k, &r, idx);
        if (u < 3) {
            int nx = nd(k);
            emit(k, "add.u64 %s, %s, %s;", D(nx), D(idx), D(stride));
            idx = nx;
        }
    }
    emit(k, "add.u64 %s, %s, %s;", D(i), D(idx), D(stride));
    emit(k, "bra.uni %s;", L(l_main));
    label(k, l_rest);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(i), D(n));
    emit(k, "@%s bra %s;", P(p), L(l_done));
    label(k, l_one);
    red_visit(k, &r, i);
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(stride));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(i), D(n));
    emit(k, "@%s bra %s;", P(p), L(l_one));
    label(k, l_done);
    int ctaid = sreg(k, "%ctaid.x"), pt = np(k), pa = nd(k), c64 = nd(k);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pt), R(tid));
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(ctaid));
    if (kind <= RED_L2) {
        int total = block_sum_f64(k, r.acc, lane, warp);
        emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(pa), D(c64), D(part));
        emit(k, "@%s st.global.f64 [%s], %s;", P(pt), D(pa), FD(total));
    } else if (kind == RED_ARGMAX) {
        block_argmax(k, &r.v, &r.i, lane, warp);
        emit(k, "mad.lo.u64 %s, %s, 16, %s;", D(pa), D(c64), D(part));
        emit(k, "@%s st.global.f32 [%s], %s;", P(pt), D(pa), F(r.v));
        emit(k, "@%s st.global.u64 [%s+8], %s;", P(pt), D(pa), D(r.i));
    } else {
        int total = block_minmax_f32(k, r.v, lane, warp, kind == RED_MAX);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(pa), D(c64), D(part));
        emit(k, "@%s st.global.f32 [%s], %s;", P(pt), D(pa), F(total));
    }
    char name[64];
    snprintf(name, sizeof name, "red_%s_part", red_names[kind]);
    kern_finish(mod, k, name, ".param .u64 p_part, .param .u64 p_a, .param .u64 p_b, .param .u64 p_n",
                ".maxntid 256, 1, 1\n", RED_SHARED);
}

/* One block combines `count` partials.  y: f32 result, or the size_t index
 * of argmax written as two 32-bit halves (y need only be 4-byte aligned). */
static void gen_red_final(strbuf *mod, enum red_kind kind)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), part = param_global(k, "p_part");
    int count = param_u64(k, "p_count");
    int tid, lane, warp;
    lane_warp(k, &tid, &lane, &warp);
    int i = nd(k), p = np(k), l_loop = nlabel(k), l_done = nlabel(k);
    int acc = -1, accv = -1, acci = -1;
    if (kind <= RED_L2) {
        acc = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    } else {
        accv = nf(k);
        emit(k, "mov.f32 %s, %s;", F(accv), CB(kind == RED_MIN ? 0x7f800000u : 0xff800000u));
        if (kind == RED_ARGMAX) {
            acci = nd(k);
            emit(k, "mov.u64 %s, -1;", D(acci));
        }
    }
    emit(k, "cvt.u64.u32 %s, %s;", D(i), R(tid));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(i), D(count));
    emit(k, "@%s bra %s;", P(p), L(l_done));
    label(k, l_loop);
    if (kind <= RED_L2) {
        int v = nfd(k);
        emit(k, "ld.global.f64 %s, [%s];", FD(v), D(addr_of(k, part, i, 8)));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(v));
    } else if (kind == RED_ARGMAX) {
        int pa = addr_of(k, part, i, 16), v = nf(k), vi = nd(k);
        emit(k, "ld.global.f32 %s, [%s];", F(v), D(pa));
        emit(k, "ld.global.u64 %s, [%s+8];", D(vi), D(pa));
        int nv = accv, ni = acci;
        argmax_combine(k, &nv, &ni, v, vi);
        emit(k, "mov.f32 %s, %s;", F(accv), F(nv));
        emit(k, "mov.u64 %s, %s;", D(acci), D(ni));
    } else {
        int v = nf(k);
        emit(k, "ld.global.f32 %s, [%s];", F(v), D(addr_of(k, part, i, 4)));
        emit(k, "%s %s, %s, %s;", kind == RED_MAX ? "max.NaN.f32" : "min.NaN.f32", F(accv), F(accv), F(v));
    }
    emit(k, "add.u64 %s, %s, %d;", D(i), D(i), RED_THREADS);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(i), D(count));
    emit(k, "@%s bra %s;", P(p), L(l_loop));
    label(k, l_done);
    int pt = np(k);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pt), R(tid));
    if (kind <= RED_L2) {
        int total = block_sum_f64(k, acc, lane, warp), out = nf(k);
        if (kind == RED_L2) {
            int s = nfd(k);
            emit(k, "sqrt.rn.f64 %s, %s;", FD(s), FD(total));
            total = s;
        }
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(out), FD(total));
        emit(k, "@%s st.global.f32 [%s], %s;", P(pt), D(y), F(out));
    } else if (kind == RED_ARGMAX) {
        block_argmax(k, &accv, &acci, lane, warp);
        int lo = nr(k), hi = nr(k);
        emit(k, "mov.b64 {%s, %s}, %s;", R(lo), R(hi), D(acci));
        emit(k, "@%s st.global.u32 [%s], %s;", P(pt), D(y), R(lo));
        emit(k, "@%s st.global.u32 [%s+4], %s;", P(pt), D(y), R(hi));
    } else {
        int total = block_minmax_f32(k, accv, lane, warp, kind == RED_MAX);
        emit(k, "@%s st.global.f32 [%s], %s;", P(pt), D(y), F(total));
    }
    char name[64];
    snprintf(name, sizeof name, "red_%s_final", red_names[kind]);
    kern_finish(mod, k, name, ".param .u64 p_y, .param .u64 p_part, .param .u64 p_count",
                ".maxntid 256, 1, 1\n", RED_SHARED);
}

static void module_reduce(strbuf *mod)
{
    for (int kind = RED_SUM; kind <= RED_ARGMAX; kind++) {
        gen_red_part(mod, (enum red_kind)kind);
        gen_red_final(mod, (enum red_kind)kind);
    }
}

/* ---- module: row-wise ops (softmax, log_softmax, layernorm, rmsnorm) ----
 * One block of 256 threads per row (rows in a grid-stride loop); each pass
 * over the row is a strided loop; block reductions in between. */
typedef struct row_loop {
    int j, p, l_loop, l_done;
} row_loop;

static row_loop row_loop_begin(kern *k, int tid64, int n)
{
    row_loop rl = {nd(k), np(k), nlabel(k), nlabel(k)};
    emit(k, "mov.u64 %s, %s;", D(rl.j), D(tid64));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(rl.p), D(rl.j), D(n));
    emit(k, "@%s bra %s;", P(rl.p), L(rl.l_done));
    label(k, rl.l_loop);
    return rl;
}

static void row_loop_end(kern *k, row_loop rl, int n)
{
    emit(k, "add.u64 %s, %s, %d;", D(rl.j), D(rl.j), RED_THREADS);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(rl.p), D(rl.j), D(n));
    emit(k, "@%s bra %s;", P(rl.p), L(rl.l_loop));
    label(k, rl.l_done);
}

enum row_kind { ROW_SOFTMAX, ROW_LOG_SOFTMAX, ROW_LAYERNORM, ROW_RMSNORM };

static void gen_row_kernel(strbuf *mod, enum row_kind kind)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a");
    int g = param_u64(k, "p_gamma"), bt = param_u64(k, "p_beta");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int eps = param_f32(k, "p_eps");
    int tid, lane, warp;
    lane_warp(k, &tid, &lane, &warp);
    int tid64 = nd(k), row = nd(k), rstep = nd(k), pr = np(k);
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x");
    emit(k, "cvt.u64.u32 %s, %s;", D(tid64), R(tid));
    emit(k, "cvt.u64.u32 %s, %s;", D(row), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(nctaid));
    int nfd64 = nfd(k);
    emit(k, "cvt.rn.f64.u64 %s, %s;", FD(nfd64), D(n));
    int has_g = np(k), has_b = np(k), gg = nd(k), bg = nd(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(has_g), D(g));
    emit(k, "setp.ne.u64 %s, %s, 0;", P(has_b), D(bt));
    emit(k, "cvta.to.global.u64 %s, %s;", D(gg), D(g));
    emit(k, "cvta.to.global.u64 %s, %s;", D(bg), D(bt));
    int l_row = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_row);
    int off = nd(k), xa = nd(k), ya = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(off), D(row), D(n));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(xa), D(off), D(a));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ya), D(off), D(y));

    if (kind == ROW_SOFTMAX || kind == ROW_LOG_SOFTMAX) {
        /* pass 1: the row's maximum (NaN propagates) */
        int mx = nf(k);
        emit(k, "mov.f32 %s, %s;", F(mx), CB(0xff800000u));
        row_loop rl = row_loop_begin(k, tid64, n);
        int x = nf(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "max.NaN.f32 %s, %s, %s;", F(mx), F(mx), F(x));
        row_loop_end(k, rl, n);
        int rmax = block_minmax_f32(k, mx, lane, warp, 1);
        /* pass 2: sum of exp(x - max) in float64 */
        int s = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(s), CD(0.0));
        rl = row_loop_begin(k, tid64, n);
        int x2 = nf(k), d = nf(k), ed = nfd(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x2), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "sub.rn.f32 %s, %s, %s;", F(d), F(x2), F(rmax));
        int e = m_exp(k, d);
        emit(k, "cvt.f64.f32 %s, %s;", FD(ed), F(e));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(s), FD(ed));
        row_loop_end(k, rl, n);
        int tot = block_sum_f64(k, s, lane, warp), totf = nf(k);
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(totf), FD(tot));
        int lsum = kind == ROW_LOG_SOFTMAX ? m_log(k, totf) : -1;
        /* pass 3: write */
        rl = row_loop_begin(k, tid64, n);
        int x3 = nf(k), d3 = nf(k), out = nf(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x3), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "sub.rn.f32 %s, %s, %s;", F(d3), F(x3), F(rmax));
        if (kind == ROW_SOFTMAX) {
            int e3 = m_exp(k, d3);
            emit(k, "div.rn.f32 %s, %s, %s;", F(out), F(e3), F(totf));
        } else {
            emit(k, "sub.rn.f32 %s, %s, %s;", F(out), F(d3), F(lsum));
        }
        emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, ya, rl.j, 4)), F(out));
        row_loop_end(k, rl, n);
    } else {
        int mean = nfd(k);
        if (kind == ROW_LAYERNORM) {
            int s = nfd(k);
            emit(k, "mov.f64 %s, %s;", FD(s), CD(0.0));
            row_loop rl = row_loop_begin(k, tid64, n);
            int x = nf(k), xd = nfd(k);
            emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, xa, rl.j, 4)));
            emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
            emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(s), FD(xd));
            row_loop_end(k, rl, n);
            int tot = block_sum_f64(k, s, lane, warp);
            emit(k, "div.rn.f64 %s, %s, %s;", FD(mean), FD(tot), FD(nfd64));
        } else {
            emit(k, "mov.f64 %s, %s;", FD(mean), CD(0.0));
        }
        /* sum of squares about the mean (0 for rmsnorm) */
        int s2 = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(s2), CD(0.0));
        row_loop rl = row_loop_begin(k, tid64, n);
        int x = nf(k), xd = nfd(k), dd = nfd(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
        emit(k, "sub.rn.f64 %s, %s, %s;", FD(dd), FD(xd), FD(mean));
        emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(s2), FD(dd), FD(dd), FD(s2));
        row_loop_end(k, rl, n);
        int ss = block_sum_f64(k, s2, lane, warp);
        int var = nfd(k), epsd = nfd(k), ve = nfd(k), sd = nfd(k), rstd = nfd(k);
        emit(k, "div.rn.f64 %s, %s, %s;", FD(var), FD(ss), FD(nfd64));
        emit(k, "cvt.f64.f32 %s, %s;", FD(epsd), F(eps));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(ve), FD(var), FD(epsd));
        emit(k, "sqrt.rn.f64 %s, %s;", FD(sd), FD(ve));
        emit(k, "rcp.rn.f64 %s, %s;", FD(rstd), FD(sd));
        rl = row_loop_begin(k, tid64, n);
        int x3 = nf(k), xd3 = nfd(k), d3 = nfd(k), t3 = nfd(k), tf = nf(k), gv = nf(k), bv = nf(k), out = nf(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x3), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "cvt.f64.f32 %s, %s;", FD(xd3), F(x3));
        emit(k, "sub.rn.f64 %s, %s, %s;", FD(d3), FD(xd3), FD(mean));
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(t3), FD(d3), FD(rstd));
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(tf), FD(t3));
        emit(k, "mov.f32 %s, %s;", F(gv), C(1.0f));
        emit(k, "mov.f32 %s, %s;", F(bv), C(0.0f));
        emit(k, "@%s ld.global.f32 %s, [%s];", P(has_g), F(gv), D(addr_of(k, gg, rl.j, 4)));
        if (kind == ROW_LAYERNORM)
            emit(k, "@%s ld.global.f32 %s, [%s];", P(has_b), F(bv), D(addr_of(k, bg, rl.j, 4)));
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(out), F(tf), F(gv), F(bv));
        emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, ya, rl.j, 4)), F(out));
        row_loop_end(k, rl, n);
    }
    emit(k, "add.u64 %s, %s, %s;", D(row), D(row), D(rstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_row));
    label(k, l_end);
    static const char *const names[] = {"row_softmax", "row_log_softmax", "row_layernorm", "row_rmsnorm"};
    kern_finish(mod, k, names[kind],
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_gamma, .param .u64 p_beta, "
                ".param .u64 p_m, .param .u64 p_n, .param .f32 p_eps",
                ".maxntid 256, 1, 1\n", RED_SHARED);
}

static void module_rows(strbuf *mod)
{
    for (int kind = ROW_SOFTMAX; kind <= ROW_RMSNORM; kind++)
        gen_row_kernel(mod, (enum row_kind)kind);
}

/* ---- module: matrix helpers (gemv, transpose, bias_act, general sgemm) -- */

/* y = alpha*acc + beta*y_old (y_old read only when beta != 0), in float64 */
static void store_scaled(kern *k, int acc, int ya, int alpha, int beta)
{
    int ad = nfd(k), bd = nfd(k), r = nfd(k), pb = np(k), old = nf(k), od = nfd(k), out = nf(k);
    emit(k, "cvt.f64.f32 %s, %s;", FD(ad), F(alpha));
    emit(k, "cvt.f64.f32 %s, %s;", FD(bd), F(beta));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(r), FD(acc), FD(ad));
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(beta), C(0.0f));
    emit(k, "mov.f32 %s, %s;", F(old), C(0.0f));
    emit(k, "@%s ld.global.f32 %s, [%s];", P(pb), F(old), D(ya));
    emit(k, "cvt.f64.f32 %s, %s;", FD(od), F(old));
    emit(k, "@%s fma.rn.f64 %s, %s, %s, %s;", P(pb), FD(r), FD(od), FD(bd), FD(r));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(out), FD(r));
    emit(k, "st.global.f32 [%s], %s;", D(ya), F(out));
}

/* gemv, A not transposed: one warp per row, float64 accumulation. */
static void gen_gemv_n(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), x = param_global(k, "p_x");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    int gid, stride;
    grid_index(k, &gid, &stride);
    int row = nd(k), wstep = nd(k), lane = nd(k), pr = np(k);
    emit(k, "shr.u64 %s, %s, 5;", D(row), D(gid));
    emit(k, "shr.u64 %s, %s, 5;", D(wstep), D(stride));
    emit(k, "and.b64 %s, %s, 31;", D(lane), D(gid));
    int l_row = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_row);
    int off = nd(k), ra = nd(k), acc = nfd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(off), D(row), D(n));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ra), D(off), D(a));
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    int j = nd(k), pj = np(k), l_j = nlabel(k), l_jd = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(j), D(lane));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_jd));
    label(k, l_j);
    int av = nf(k), xv = nf(k), ad = nfd(k), xd = nfd(k);
    emit(k, "ld.global.f32 %s, [%s];", F(av), D(addr_of(k, ra, j, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(xv), D(addr_of(k, x, j, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(ad), F(av));
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(xv));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc), FD(ad), FD(xd), FD(acc));
    emit(k, "add.u64 %s, %s, 32;", D(j), D(j));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_j));
    label(k, l_jd);
    int sum = acc;
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_f64(k, sum, o), s = nfd(k);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(sum), FD(t));
        sum = s;
    }
    int pl = np(k), l_skip = nlabel(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pl), D(lane));
    emit(k, "@%s bra %s;", P(pl), L(l_skip));
    store_scaled(k, sum, addr_of(k, y, row, 4), alpha, beta);
    label(k, l_skip);
    emit(k, "add.u64 %s, %s, %s;", D(row), D(row), D(wstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_row));
    label(k, l_end);
    kern_finish(mod, k, "gemv_n",
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_x, .param .u64 p_m, .param .u64 p_n, "
                ".param .f32 p_alpha, .param .f32 p_beta", NULL, NULL);
}

/* gemv, A transposed: y[j] = sum_i A[i][j] x[i].  Grid (ceil(n/256), S):
 * block (bx, s) sums rows [s*chunk, (s+1)*chunk) for its 256 columns into
 * part[s*n + j] (float64); gemv_t_final adds the S partials in order. */
static void gen_gemv_t(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int part = param_global(k, "p_part"), a = param_global(k, "p_a"), x = param_global(k, "p_x");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n"), chunk = param_u64(k, "p_chunk");
    int ctaid = sreg(k, "%ctaid.x"), tid = sreg(k, "%tid.x"), cy = sreg(k, "%ctaid.y");
    int j = nd(k), t64 = nd(k), s = nd(k), pj = np(k), l_end = nlabel(k);
    emit(k, "mul.wide.u32 %s, %s, 256;", D(j), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tid));
    emit(k, "add.u64 %s, %s, %s;", D(j), D(j), D(t64));
    emit(k, "cvt.u64.u32 %s, %s;", D(s), R(cy));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_end));
    int i0 = nd(k), i1 = nd(k), acc = nfd(k), i = nd(k), pi = np(k), l_i = nlabel(k), l_id = nlabel(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(i0), D(s), D(chunk));
    emit(k, "add.u64 %s, %s, %s;", D(i1), D(i0), D(chunk));
    emit(k, "min.u64 %s, %s, %s;", D(i1), D(i1), D(m));
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    emit(k, "mov.u64 %s, %s;", D(i), D(i0));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(i), D(i1));
    emit(k, "@%s bra %s;", P(pi), L(l_id));
    label(k, l_i);
    int idx = nd(k), av = nf(k), xv = nf(k), ad = nfd(k), xd = nfd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(i), D(n), D(j));
    emit(k, "ld.global.f32 %s, [%s];", F(av), D(addr_of(k, a, idx, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(xv), D(addr_of(k, x, i, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(ad), F(av));
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(xv));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc), FD(ad), FD(xd), FD(acc));
    emit(k, "add.u64 %s, %s, 1;", D(i), D(i));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(i), D(i1));
    emit(k, "@%s bra %s;", P(pi), L(l_i));
    label(k, l_id);
    int pidx = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(pidx), D(s), D(n), D(j));
    emit(k, "st.global.f64 [%s], %s;", D(addr_of(k, part, pidx, 8)), FD(acc));
    label(k, l_end);
    kern_finish(mod, k, "gemv_t_part",
                ".param .u64 p_part, .param .u64 p_a, .param .u64 p_x, .param .u64 p_m, "
                ".param .u64 p_n, .param .u64 p_chunk", NULL, NULL);

    /* final: y[j] = alpha * sum_s part[s][j] + beta * y[j] */
    int y = param_global(k, "p_y");
    part = param_global(k, "p_part");
    n = param_u64(k, "p_n");
    int splits = param_u64(k, "p_splits");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    int gid, stride;
    grid_index(k, &gid, &stride);
    (void)stride;
    int pe = np(k), l_e = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pe), D(gid), D(n));
    emit(k, "@%s bra %s;", P(pe), L(l_e));
    int tot = nfd(k), si = nd(k), ps = np(k), l_s = nlabel(k);
    emit(k, "mov.f64 %s, %s;", FD(tot), CD(0.0));
    emit(k, "mov.u64 %s, 0;", D(si));
    label(k, l_s);
    int pi2 = nd(k), v = nfd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(pi2), D(si), D(n), D(gid));
    emit(k, "ld.global.f64 %s, [%s];", FD(v), D(addr_of(k, part, pi2, 8)));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(tot), FD(tot), FD(v));
    emit(k, "add.u64 %s, %s, 1;", D(si), D(si));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(ps), D(si), D(splits));
    emit(k, "@%s bra %s;", P(ps), L(l_s));
    store_scaled(k, tot, addr_of(k, y, gid, 4), alpha, beta);
    label(k, l_e);
    kern_finish(mod, k, "gemv_t_final",
                ".param .u64 p_y, .param .u64 p_part, .param .u64 p_n, .param .u64 p_splits, "
                ".param .f32 p_alpha, .param .f32 p_beta", NULL, NULL);
}

/* y (n x m) = a (m x n)^T through a padded 32x33 shared tile; block 32x8. */
static void gen_transpose(strbuf *mod)
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

/* y[i][j] = act(a[i][j] + bias[j]); grid x over columns, y over rows (looped). */
static void gen_bias_act(strbuf *mod, const char *act, int (*fn)(kern *, int))
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), bias = param_global(k, "p_bias");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int ctaid = sreg(k, "%ctaid.x"), ntid = sreg(k, "%ntid.x"), tid = sreg(k, "%tid.x");
    int cy = sreg(k, "%ctaid.y"), ncy = sreg(k, "%nctaid.y");
    int j = nd(k), t64 = nd(k), pj = np(k), l_end = nlabel(k);
    emit(k, "mul.wide.u32 %s, %s, %s;", D(j), R(ctaid), R(ntid));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tid));
    emit(k, "add.u64 %s, %s, %s;", D(j), D(j), D(t64));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_end));
    int bv = nf(k);
    emit(k, "ld.global.f32 %s, [%s];", F(bv), D(addr_of(k, bias, j, 4)));
    int i = nd(k), istep = nd(k), pi = np(k), l_i = nlabel(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(i), R(cy));
    emit(k, "cvt.u64.u32 %s, %s;", D(istep), R(ncy));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(i), D(m));
    emit(k, "@%s bra %s;", P(pi), L(l_end));
    label(k, l_i);
    int idx = nd(k), x = nf(k), v = nf(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(i), D(n), D(j));
    emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, a, idx, 4)));
    emit(k, "add.rn.f32 %s, %s, %s;", F(v), F(x), F(bv));
    int out = fn ? fn(k, v) : v;
    emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, y, idx, 4)), F(out));
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(istep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(i), D(m));
    emit(k, "@%s bra %s;", P(pi), L(l_i));
    label(k, l_end);
    char name[64];
    snprintf(name, sizeof name, "bias_act_%s", act);
    kern_finish(mod, k, name,
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_bias, .param .u64 p_m, .param .u64 p_n",
                NULL, NULL);
}

/* General sgemm, any shape and transpose, as the correctness fallback and
 * for the edges the tiled kernels leave.  A_op(i,p) = A[i*sai + p*sap],
 * B_op(p,j) = B[p*sbp + j*sbj].  64x64 tiles of C from (row0, col0), BK 16,
 * 256 threads each computing 4x4 (rows ty+16r, columns tx+16c).  The tile
 * loads map consecutive threads along whichever of the two source
 * dimensions is contiguous (flag bits 1: A's i, 2: B's j is contiguous). */
static void gen_sgemm_general(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int c = param_global(k, "p_c"), a = param_global(k, "p_a"), b = param_global(k, "p_b");
    int M = param_u64(k, "p_m"), N = param_u64(k, "p_n"), K = param_u64(k, "p_k");
    int sai = param_u64(k, "p_sai"), sap = param_u64(k, "p_sap");
    int sbp = param_u64(k, "p_sbp"), sbj = param_u64(k, "p_sbj");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    int row0 = param_u64(k, "p_row0"), col0 = param_u64(k, "p_col0");
    int tid = sreg(k, "%tid.x"), bx = sreg(k, "%ctaid.x"), by = sreg(k, "%ctaid.y");
    int tx = nr(k), ty = nr(k);
    emit(k, "and.b32 %s, %s, 15;", R(tx), R(tid));
    emit(k, "shr.u32 %s, %s, 4;", R(ty), R(tid));
    int bm = nd(k), bn = nd(k);
    emit(k, "mul.wide.u32 %s, %s, 64;", D(bm), R(by));
    emit(k, "add.u64 %s, %s, %s;", D(bm), D(bm), D(row0));
    emit(k, "mul.wide.u32 %s, %s, 64;", D(bn), R(bx));
    emit(k, "add.u64 %s, %s, %s;", D(bn), D(bn), D(col0));
    int sA = nr(k), sB = nr(k);
    emit(k, "mov.u32 %s, gg_a;", R(sA));
    emit(k, "mov.u32 %s, gg_b;", R(sB));
    /* A contiguous along i? then thread e -> (i = e & 63, p = e >> 6), else (i = e >> 4, p = e & 15) */
    int a_i_contig = np(k), b_j_contig = np(k);
    emit(k, "setp.eq.u64 %s, %s, 1;", P(a_i_contig), D(sai));
    emit(k, "setp.eq.u64 %s, %s, 1;", P(b_j_contig), D(sbj));
    int ai[4], ap[4], bp[4], bj[4];
    for (int q = 0; q < 4; q++) {
        int e = nr(k), i1 = nr(k), p1 = nr(k), i2 = nr(k), p2 = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(e), R(tid), q * 256);
        emit(k, "and.b32 %s, %s, 63;", R(i1), R(e));
        emit(k, "shr.u32 %s, %s, 6;", R(p1), R(e));
        emit(k, "shr.u32 %s, %s, 4;", R(i2), R(e));
        emit(k, "and.b32 %s, %s, 15;", R(p2), R(e));
        ai[q] = nr(k);
        ap[q] = nr(k);
        emit(k, "selp.b32 %s, %s, %s, %s;", R(ai[q]), R(i1), R(i2), P(a_i_contig));
        emit(k, "selp.b32 %s, %s, %s, %s;", R(ap[q]), R(p1), R(p2), P(a_i_contig));
        /* B: j contiguous -> (j = e & 63, p = e >> 6), else (j = e >> 4, p = e & 15) */
        bj[q] = nr(k);
        bp[q] = nr(k);
        emit(k, "selp.b32 %s, %s, %s, %s;", R(bj[q]), R(i1), R(i2), P(b_j_contig));
        emit(k, "selp.b32 %s, %s, %s, %s;", R(bp[q]), R(p1), R(p2), P(b_j_contig));
    }
    int acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int cc = 0; cc < 4; cc++) {
            acc[r][cc] = nf(k);
            emit(k, "mov.f32 %s, %s;", F(acc[r][cc]), C(0.0f));
        }
    int k0 = nd(k), pk = np(k), l_k = nlabel(k), l_kd = nlabel(k);
    emit(k, "mov.u64 %s, 0;", D(k0));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pk), D(k0), D(K));
    emit(k, "@%s bra %s;", P(pk), L(l_kd));
    label(k, l_k);
    for (int q = 0; q < 4; q++) {
        /* A element (bm + ai, k0 + ap) -> As[ap][ai] */
        int gi = nd(k), gp = nd(k), t = nd(k), idx = nd(k), pin = np(k), pin2 = np(k), v = nf(k), sa = nr(k);
        emit(k, "cvt.u64.u32 %s, %s;", D(t), R(ai[q]));
        emit(k, "add.u64 %s, %s, %s;", D(gi), D(bm), D(t));
        emit(k, "cvt.u64.u32 %s, %s;", D(t), R(ap[q]));
        emit(k, "add.u64 %s, %s, %s;", D(gp), D(k0), D(t));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(gi), D(M));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin2), D(gp), D(K));
        emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(pin2));
        emit(k, "mul.lo.u64 %s, %s, %s;", D(idx), D(gi), D(sai));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(gp), D(sap), D(idx));
        emit(k, "mov.f32 %s, %s;", F(v), C(0.0f));
        emit(k, "@%s ld.global.f32 %s, [%s];", P(pin), F(v), D(addr_of(k, a, idx, 4)));
        emit(k, "mad.lo.u32 %s, %s, 64, %s;", R(sa), R(ap[q]), R(ai[q]));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(sa), R(sA));
        emit(k, "st.shared.f32 [%s], %s;", R(sa), F(v));
        /* B element (k0 + bp, bn + bj) -> Bs[bp][bj] */
        int gj = nd(k), gq = nd(k), t2 = nd(k), idx2 = nd(k), qin = np(k), qin2 = np(k), w = nf(k), sb = nr(k);
        emit(k, "cvt.u64.u32 %s, %s;", D(t2), R(bj[q]));
        emit(k, "add.u64 %s, %s, %s;", D(gj), D(bn), D(t2));
        emit(k, "cvt.u64.u32 %s, %s;", D(t2), R(bp[q]));
        emit(k, "add.u64 %s, %s, %s;", D(gq), D(k0), D(t2));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(qin), D(gj), D(N));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(qin2), D(gq), D(K));
        emit(k, "and.pred %s, %s, %s;", P(qin), P(qin), P(qin2));
        emit(k, "mul.lo.u64 %s, %s, %s;", D(idx2), D(gq), D(sbp));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx2), D(gj), D(sbj), D(idx2));
        emit(k, "mov.f32 %s, %s;", F(w), C(0.0f));
        emit(k, "@%s ld.global.f32 %s, [%s];", P(qin), F(w), D(addr_of(k, b, idx2, 4)));
        emit(k, "mad.lo.u32 %s, %s, 64, %s;", R(sb), R(bp[q]), R(bj[q]));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sb), R(sb), R(sB));
        emit(k, "st.shared.f32 [%s], %s;", R(sb), F(w));
    }
    emit(k, "bar.sync 0;");
    int ra = nr(k), rb = nr(k);
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(ra), R(ty), R(sA));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(rb), R(tx), R(sB));
    for (int p = 0; p < 16; p++) {
        int av[4], bv[4];
        for (int r = 0; r < 4; r++) {
            av[r] = nf(k);
            emit(k, "ld.shared.f32 %s, [%s+%d];", F(av[r]), R(ra), (p * 64 + r * 16) * 4);
        }
        for (int cc = 0; cc < 4; cc++) {
            bv[cc] = nf(k);
            emit(k, "ld.shared.f32 %s, [%s+%d];", F(bv[cc]), R(rb), (p * 64 + cc * 16) * 4);
        }
        for (int r = 0; r < 4; r++)
            for (int cc = 0; cc < 4; cc++)
                emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(acc[r][cc]), F(av[r]), F(bv[cc]), F(acc[r][cc]));
    }
    emit(k, "bar.sync 0;");
    emit(k, "add.u64 %s, %s, 16;", D(k0), D(k0));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pk), D(k0), D(K));
    emit(k, "@%s bra %s;", P(pk), L(l_k));
    label(k, l_kd);
    int pbeta = np(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pbeta), F(beta), C(0.0f));
    for (int r = 0; r < 4; r++) {
        int gi = nd(k), t = nr(k), t64 = nd(k), pin = np(k);
        emit(k, "add.u32 %s, %s, %d;", R(t), R(ty), r * 16);
        emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(t));
        emit(k, "add.u64 %s, %s, %s;", D(gi), D(bm), D(t64));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(gi), D(M));
        for (int cc = 0; cc < 4; cc++) {
            int gj = nd(k), u = nr(k), u64 = nd(k), pc = np(k), idx = nd(k), ca = nd(k);
            int old = nf(k), res = nf(k);
            emit(k, "add.u32 %s, %s, %d;", R(u), R(tx), cc * 16);
            emit(k, "cvt.u64.u32 %s, %s;", D(u64), R(u));
            emit(k, "add.u64 %s, %s, %s;", D(gj), D(bn), D(u64));
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pc), D(gj), D(N));
            emit(k, "and.pred %s, %s, %s;", P(pc), P(pc), P(pin));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(gi), D(N), D(gj));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ca), D(idx), D(c));
            emit(k, "mul.rn.f32 %s, %s, %s;", F(res), F(acc[r][cc]), F(alpha));
            int pld = np(k);
            emit(k, "and.pred %s, %s, %s;", P(pld), P(pc), P(pbeta));
            emit(k, "@%s ld.global.f32 %s, [%s];", P(pld), F(old), D(ca));
            emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pld), F(res), F(old), F(beta), F(res));
            emit(k, "@%s st.global.f32 [%s], %s;", P(pc), D(ca), F(res));
        }
    }
    kern_finish(mod, k, "sgemm_general",
                ".param .u64 p_c, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_k, .param .u64 p_sai, .param .u64 p_sap, .param .u64 p_sbp, "
                ".param .u64 p_sbj, .param .f32 p_alpha, .param .f32 p_beta, .param .u64 p_row0, "
                ".param .u64 p_col0",
                ".maxntid 256, 1, 1\n",
                "\t.shared .align 16 .b8 gg_a[4096];\n\t.shared .align 16 .b8 gg_b[4096];\n");
}

static int m_act_relu(kern *k, int x) { return m_relu(k, x); }

static void module_matrix(strbuf *mod)
{
    gen_gemv_n(mod);
    gen_gemv_t(mod);
    gen_transpose(mod);
    gen_bias_act(mod, "none", NULL);
    gen_bias_act(mod, "relu", m_act_relu);
    gen_bias_act(mod, "gelu", m_gelu);
    gen_bias_act(mod, "silu", m_silu);
    gen_bias_act(mod, "tanh", m_tanh);
    gen_bias_act(mod, "sigmoid", m_sigmoid);
    gen_sgemm_general(mod);
}

#define RASTER_GROUP 8

/* The block's tile of C (row and column tile indices).  raster: groups of
 * RASTER_GROUP tile rows are walked column by column. */
static void block_tile(kern *k, int raster, int *tile_m, int *tile_n)
{
    int bx = sreg(k, "%ctaid.x"), by = sreg(k, "%ctaid.y");
    if (!raster) {
        *tile_m = by;
        *tile_n = bx;
        return;
    }
    int gx = sreg(k, "%nctaid.x"), gy = sreg(k, "%nctaid.y");
    int pid = nr(k), width = nr(k), group = nr(k), first = nr(k), gsize = nr(k), local = nr(k);
    int tm = nr(k), tn = nr(k), r = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %s, %s;", R(pid), R(by), R(gx), R(bx));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(width), R(gx), RASTER_GROUP);
    emit(k, "div.u32 %s, %s, %s;", R(group), R(pid), R(width));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(first), R(group), RASTER_GROUP);
    emit(k, "sub.u32 %s, %s, %s;", R(gsize), R(gy), R(first));
    emit(k, "min.u32 %s, %s, %d;", R(gsize), R(gsize), RASTER_GROUP);
    emit(k, "rem.u32 %s, %s, %s;", R(local), R(pid), R(width));
    emit(k, "rem.u32 %s, %s, %s;", R(r), R(local), R(gsize));
    emit(k, "add.u32 %s, %s, %s;", R(tm), R(first), R(r));
    emit(k, "div.u32 %s, %s, %s;", R(tn), R(local), R(gsize));
    *tile_m = tm;
    *tile_n = tn;
}

/* ---- module: fast fp32 sgemm (SIMT) --------------------------------------
 * 128x128 tiles of C, 256 threads, each computing 8x8 (two 4-row by two
 * 4-column groups so that shared-memory reads are 16-byte vectors), BK 8 or
 * 16, double-buffered shared memory with one barrier per k-tile.  The next
 * k-tile is fetched while the current one is multiplied: into registers
 * (then stored into the other buffer), or with cp.async straight into it
 * where the tile needs no transposition.  Warps cover 8 x 4 threads so a
 * shared load serves a warp in one wavefront.  Requires M, N multiples of
 * 128 (the host covers the edges with sgemm_general), K a multiple of BK,
 * and 16-byte aligned rows. */
typedef struct sgemm_cfg {
    const char *name;
    int bk;          /* 8 or 16 */
    int trans_a, trans_b;
    int cp_async;    /* cp.async for the tiles that are copied as they are */
    int raster;      /* grouped block order (L2 reuse) */
} sgemm_cfg;

static const sgemm_cfg sgemm_cfgs[] = {
    {"sgemm_nn_k8", 8, 0, 0, 0, 0},
    {"sgemm_nn_k8_async", 8, 0, 0, 1, 0},
    {"sgemm_nn_k16", 16, 0, 0, 0, 0},
    {"sgemm_nn_k16_async", 16, 0, 0, 1, 0},
    {"sgemm_nn_k16_async_r", 16, 0, 0, 1, 1},
    {"sgemm_tn_k8", 8, 1, 0, 0, 0},
    {"sgemm_nt_k8", 8, 0, 1, 0, 0},
    {"sgemm_tt_k8", 8, 1, 1, 0, 0},
};

#define SG_BM 128
#define SG_BN 128
#define SG_PAD 4 /* floats of padding on transposed-stored tiles (bank conflicts) */

/* Per-thread loader of one 128 x BK operand tile.
 * contiguous_k: source rows run along k (A not transposed, B transposed):
 *   the thread reads float4s along k and stores them transposed (4 scalar
 *   stores) into the [BK][128 + PAD] tile.
 * otherwise: source rows run along m/n; float4s go to [BK][128] as they are. */
typedef struct tile_loader {
    int contiguous_k, async, loads;
    int gaddr[4];    /* global address of each float4 (advanced per k-tile) */
    int soff[4];     /* shared byte offset within a buffer */
    int step;        /* bytes to advance per k-tile: .b64 register */
    int regs[4][4];  /* staged values */
    int row_floats;  /* floats per shared row */
} tile_loader;

static void loader_init(kern *k, tile_loader *t, int contiguous_k, int async, int bk, int tid,
                        int gbase, int ld, int tile0)
{
    /* gbase: matrix base; ld: leading dimension (elements, .b64); tile0: the
     * tile's first row/col (m or n index, .b64) */
    t->contiguous_k = contiguous_k;
    t->async = async && !contiguous_k;
    t->loads = SG_BM * bk / 4 / 256;
    t->row_floats = contiguous_k ? SG_BM + SG_PAD : SG_BM;
    t->step = nd(k);
    if (contiguous_k)
        emit(k, "mov.u64 %s, %d;", D(t->step), bk * 4);
    else
        emit(k, "mul.lo.u64 %s, %s, %d;", D(t->step), D(ld), bk * 4);
    for (int l = 0; l < t->loads; l++) {
        int q = nr(k), r = nr(k), c = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(q), R(tid), l * 256);
        int r64 = nd(k), c64 = nd(k), idx = nd(k);
        if (contiguous_k) {
            /* q -> row r = q / (bk/4) of the 128, k offset c = (q % (bk/4)) * 4 */
            emit(k, "shr.u32 %s, %s, %d;", R(r), R(q), bk == 8 ? 1 : 2);
            emit(k, "and.b32 %s, %s, %d;", R(c), R(q), bk / 4 - 1);
            emit(k, "shl.b32 %s, %s, 2;", R(c), R(c));
            emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
            emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(c));
            emit(k, "add.u64 %s, %s, %s;", D(r64), D(r64), D(tile0));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(ld), D(c64));
            /* shared: element (k = c + j, row r) at (c + j) * row_floats + r */
            t->soff[l] = nr(k);
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(t->soff[l]), R(c), t->row_floats, R(r));
            emit(k, "shl.b32 %s, %s, 2;", R(t->soff[l]), R(t->soff[l]));
        } else {
            /* q -> k row kk = q / 32, column c = (q % 32) * 4 */
            emit(k, "shr.u32 %s, %s, 5;", R(r), R(q));
            emit(k, "and.b32 %s, %s, 31;", R(c), R(q));
            emit(k, "shl.b32 %s, %s, 2;", R(c), R(c));
            emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
            emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(c));
            emit(k, "add.u64 %s, %s, %s;", D(c64), D(c64), D(tile0));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(ld), D(c64));
            t->soff[l] = nr(k);
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(t->soff[l]), R(r), t->row_floats, R(c));
            emit(k, "shl.b32 %s, %s, 2;", R(t->soff[l]), R(t->soff[l]));
        }
        t->gaddr[l] = nd(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(t->gaddr[l]), D(idx), D(gbase));
        for (int j = 0; j < 4; j++)
            t->regs[l][j] = nf(k);
    }
}

/* Starts fetching the tile at the loader's addresses (into registers, or
 * with cp.async into the buffer at shared address sbuf), then advances the
 * addresses to the next k-tile.  guard: predicate (-1 = always). */
static void loader_fetch(kern *k, tile_loader *t, int sbuf, int guard)
{
    char g[32] = "";
    if (guard >= 0)
        snprintf(g, sizeof g, "@%s ", P(guard));
    for (int l = 0; l < t->loads; l++) {
        if (t->async) {
            int sa = nr(k);
            emit(k, "add.u32 %s, %s, %s;", R(sa), R(sbuf), R(t->soff[l]));
            emit(k, "%scp.async.cg.shared.global [%s], [%s], 16;", g, R(sa), D(t->gaddr[l]));
        } else {
            emit(k, "%sld.global.v4.f32 {%s, %s, %s, %s}, [%s];", g, F(t->regs[l][0]), F(t->regs[l][1]),
                 F(t->regs[l][2]), F(t->regs[l][3]), D(t->gaddr[l]));
        }
        emit(k, "add.u64 %s, %s, %s;", D(t->gaddr[l]), D(t->gaddr[l]), D(t->step));
    }
    if (t->async)
        emit(k, "%scp.async.commit_group;", g);
}

/* Completes the fetch into the buffer at shared address sbuf. */
static void loader_store(kern *k, tile_loader *t, int sbuf, int guard)
{
    char g[32] = "";
    if (guard >= 0)
        snprintf(g, sizeof g, "@%s ", P(guard));
    if (t->async) {
        emit(k, "%scp.async.wait_all;", g);
        return;
    }
    for (int l = 0; l < t->loads; l++) {
        int sa = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(sa), R(sbuf), R(t->soff[l]));
        if (t->contiguous_k) {
            for (int j = 0; j < 4; j++)
                emit(k, "%sst.shared.f32 [%s+%d], %s;", g, R(sa), j * t->row_floats * 4, F(t->regs[l][j]));
        } else {
            emit(k, "%sst.shared.v4.f32 [%s], {%s, %s, %s, %s};", g, R(sa), F(t->regs[l][0]),
                 F(t->regs[l][1]), F(t->regs[l][2]), F(t->regs[l][3]));
        }
    }
}

static void gen_sgemm_fast(strbuf *mod, const sgemm_cfg *cfg)
{
    kern kk = {0}, *k = &kk;
    const int bk = cfg->bk;
    int c = param_global(k, "p_c"), a = param_global(k, "p_a"), b = param_global(k, "p_b");
    int M = param_u64(k, "p_m"), N = param_u64(k, "p_n"), K = param_u64(k, "p_k");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    int tid = sreg(k, "%tid.x"), bx, by;
    block_tile(k, cfg->raster, &by, &bx);
    /* warp w covers tx in [8 (w & 1), +8), ty in [4 (w >> 1), +4) */
    int lane = nr(k), w = nr(k), tx = nr(k), ty = nr(k), t1 = nr(k);
    emit(k, "and.b32 %s, %s, 31;", R(lane), R(tid));
    emit(k, "shr.u32 %s, %s, 5;", R(w), R(tid));
    emit(k, "and.b32 %s, %s, 1;", R(t1), R(w));
    emit(k, "shl.b32 %s, %s, 3;", R(t1), R(t1));
    emit(k, "and.b32 %s, %s, 7;", R(tx), R(lane));
    emit(k, "add.u32 %s, %s, %s;", R(tx), R(tx), R(t1));
    int t2 = nr(k), t3 = nr(k);
    emit(k, "shr.u32 %s, %s, 1;", R(t2), R(w));
    emit(k, "shl.b32 %s, %s, 2;", R(t2), R(t2));
    emit(k, "shr.u32 %s, %s, 3;", R(t3), R(lane));
    emit(k, "add.u32 %s, %s, %s;", R(ty), R(t2), R(t3));
    int bm = nd(k), bn = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(bm), R(by), SG_BM);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(bn), R(bx), SG_BN);

    /* A_op tile (128 rows of m x bk): contiguous along k unless A is transposed;
     * B_op tile (bk x 128 of n): contiguous along n unless B is transposed. */
    tile_loader la, lb;
    int lda = nd(k), ldb = nd(k);
    emit(k, "mov.u64 %s, %s;", D(lda), D(cfg->trans_a ? M : K));
    emit(k, "mov.u64 %s, %s;", D(ldb), D(cfg->trans_b ? K : N));
    loader_init(k, &la, !cfg->trans_a, cfg->cp_async, bk, tid, a, lda, bm);
    loader_init(k, &lb, cfg->trans_b, cfg->cp_async, bk, tid, b, ldb, bn);
    const int a_buf = bk * la.row_floats * 4, b_buf = bk * lb.row_floats * 4;
    int sA = nr(k), sB = nr(k);
    emit(k, "mov.u32 %s, sg_a;", R(sA));
    emit(k, "mov.u32 %s, sg_b;", R(sB));

    int acc[8][8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            acc[i][j] = nf(k);
            emit(k, "mov.f32 %s, %s;", F(acc[i][j]), C(0.0f));
        }
    /* prologue: tile 0 into buffer 0 */
    loader_fetch(k, &la, sA, -1);
    loader_fetch(k, &lb, sB, -1);
    loader_store(k, &la, sA, -1);
    loader_store(k, &lb, sB, -1);
    emit(k, "bar.sync 0;");

    int kt = nd(k), KT = nd(k), cur = nr(k), pn = np(k), l_loop = nlabel(k);
    emit(k, "shr.u64 %s, %s, %d;", D(KT), D(K), bk == 8 ? 3 : 4);
    emit(k, "mov.u64 %s, 0;", D(kt));
    emit(k, "mov.u32 %s, 0;", R(cur));
    /* per-thread fragment base offsets */
    int fa = nr(k), fb = nr(k);
    emit(k, "shl.b32 %s, %s, 4;", R(fa), R(ty)); /* ty * 4 floats * 4 bytes */
    emit(k, "shl.b32 %s, %s, 4;", R(fb), R(tx));
    label(k, l_loop);
    int nxt = nr(k), curA = nr(k), curB = nr(k), nxtA = nr(k), nxtB = nr(k), kt1 = nd(k);
    emit(k, "xor.b32 %s, %s, 1;", R(nxt), R(cur));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(curA), R(cur), a_buf, R(sA));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(curB), R(cur), b_buf, R(sB));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(nxtA), R(nxt), a_buf, R(sA));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(nxtB), R(nxt), b_buf, R(sB));
    emit(k, "add.u64 %s, %s, 1;", D(kt1), D(kt));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pn), D(kt1), D(KT));
    loader_fetch(k, &la, nxtA, pn);
    loader_fetch(k, &lb, nxtB, pn);
    int ra = nr(k), rb = nr(k);
    emit(k, "add.u32 %s, %s, %s;", R(ra), R(curA), R(fa));
    emit(k, "add.u32 %s, %s, %s;", R(rb), R(curB), R(fb));
    for (int p = 0; p < bk; p++) {
        int av[8], bv[8];
        for (int i = 0; i < 8; i++) {
            av[i] = nf(k);
            bv[i] = nf(k);
        }
        int ao = p * la.row_floats * 4, bo = p * lb.row_floats * 4;
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(av[0]), F(av[1]), F(av[2]), F(av[3]), R(ra), ao);
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(av[4]), F(av[5]), F(av[6]), F(av[7]), R(ra), ao + 64 * 4);
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(bv[0]), F(bv[1]), F(bv[2]), F(bv[3]), R(rb), bo);
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(bv[4]), F(bv[5]), F(bv[6]), F(bv[7]), R(rb), bo + 64 * 4);
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++)
                emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(acc[i][j]), F(av[i]), F(bv[j]), F(acc[i][j]));
    }
    loader_store(k, &la, nxtA, pn);
    loader_store(k, &lb, nxtB, pn);
    emit(k, "bar.sync 0;");
    emit(k, "mov.u32 %s, %s;", R(cur), R(nxt));
    emit(k, "mov.u64 %s, %s;", D(kt), D(kt1));
    emit(k, "@%s bra %s;", P(pn), L(l_loop));

    /* epilogue: C = alpha acc + beta C (C read only when beta != 0) */
    int pb = np(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(beta), C(0.0f));
    int ty4 = nd(k), tx4 = nd(k), t64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(ty));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ty4), D(t64), D(bm));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tx));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(tx4), D(t64), D(bn));
    for (int i = 0; i < 8; i++) {
        int row = nd(k);
        emit(k, "add.u64 %s, %s, %d;", D(row), D(ty4), (i & 3) + (i >> 2) * 64);
        for (int h = 0; h < 2; h++) {
            int col = nd(k), idx = nd(k), ca = nd(k), o[4], r[4];
            emit(k, "add.u64 %s, %s, %d;", D(col), D(tx4), h * 64);
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(row), D(N), D(col));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ca), D(idx), D(c));
            for (int j = 0; j < 4; j++) {
                o[j] = nf(k);
                r[j] = nf(k);
                emit(k, "mul.rn.f32 %s, %s, %s;", F(r[j]), F(acc[i][h * 4 + j]), F(alpha));
            }
            emit(k, "@%s ld.global.v4.f32 {%s, %s, %s, %s}, [%s];", P(pb), F(o[0]), F(o[1]), F(o[2]), F(o[3]), D(ca));
            for (int j = 0; j < 4; j++)
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pb), F(r[j]), F(o[j]), F(beta), F(r[j]));
            emit(k, "st.global.v4.f32 [%s], {%s, %s, %s, %s};", D(ca), F(r[0]), F(r[1]), F(r[2]), F(r[3]));
        }
    }
    char shared[256];
    snprintf(shared, sizeof shared, "\t.shared .align 16 .b8 sg_a[%d];\n\t.shared .align 16 .b8 sg_b[%d];\n",
             2 * a_buf, 2 * b_buf);
    kern_finish(mod, k, cfg->name,
                ".param .u64 p_c, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_k, .param .f32 p_alpha, .param .f32 p_beta",
                ".maxntid 256, 1, 1\n.minnctapersm 2\n", shared);
}

static void module_sgemm(strbuf *mod)
{
    for (size_t i = 0; i < sizeof sgemm_cfgs / sizeof sgemm_cfgs[0]; i++)
        gen_sgemm_fast(mod, &sgemm_cfgs[i]);
}

/* ---- module: TF32 tensor-core gemm (mma.sync m16n8k8) ---------------------
 * Used only when the configuration allows reduced precision.  C row-major,
 * A (m x k) and B (k x n) row-major, no transposes.  Block tile BM x BN,
 * BK 32, a STAGES-deep cp.async pipeline in dynamic shared memory; each warp
 * owns a (MT*16) x (NT*8) piece of C in registers.
 * Two shared-memory layouts:
 *   padded (swz = 0): A rows padded by 4 floats, B rows by 8, so that the
 *     scalar fragment loads are free of bank conflicts;
 *   swizzled (swz = 1): no padding; 16-byte chunks of a row are permuted
 *     (A: chunk ^ 4 (row & 1); B: chunk ^ 2 ((row >> 2) & 3)).  The k order
 *     inside each 16-wide k block is permuted too (the product does not
 *     depend on it as long as A and B agree): thread t's four k values of a
 *     k16 block become adjacent, so A fragments load as 16-byte vectors, a
 *     quarter of the load instructions, and B's scalar loads stay
 *     conflict-free.
 * raster: blocks walk C in groups of 8 block rows, so that consecutive
 * blocks share A and B tiles in L2.
 * Requires M % BM == 0, N % BN == 0, K % 32 == 0 and 16-byte aligned rows. */
typedef struct tf32_cfg {
    const char *name;
    int warps_m, warps_n, mt, nt, stages;
    int round;     /* round operands to tf32 (cvt.rna) rather than truncating */
    int min_ctas;  /* .minnctapersm hint: caps registers so this many blocks fit an SM */
    int swz;       /* swizzled layout with vector A fragments */
    int raster;    /* grouped block order */
} tf32_cfg;

static const tf32_cfg tf32_cfgs[] = {
    {"tf32_128x128_w2x4", 2, 4, 4, 4, 3, 0, 1, 0, 0},
    {"tf32_128x128_w2x4_2cta", 2, 4, 4, 4, 3, 0, 2, 0, 0},
    {"tf32_128x128_w2x2", 2, 2, 4, 8, 3, 0, 2, 0, 0},
    {"tf32_256x128_w4x2", 4, 2, 4, 8, 3, 0, 1, 0, 0},
    {"tf32_128x128_w2x4_rna", 2, 4, 4, 4, 3, 1, 1, 0, 0},
    {"tf32_128x128_w2x2_r", 2, 2, 4, 8, 3, 0, 2, 0, 1},
    {"tf32_128x128_w2x2_swz", 2, 2, 4, 8, 3, 0, 2, 1, 1},
    {"tf32_128x128_w2x2_swz4", 2, 2, 4, 8, 4, 0, 1, 1, 1},
    {"tf32_256x128_w4x2_swz", 4, 2, 4, 8, 3, 0, 1, 1, 1},
    {"tf32_128x256_w2x4_swz", 2, 4, 4, 8, 3, 0, 1, 1, 1},
};

#define TF_BK 32
#define TF_APAD 4
#define TF_BPAD 8

static int tf32_a_row(const tf32_cfg *cfg) { return cfg->swz ? TF_BK : TF_BK + TF_APAD; }
static int tf32_b_row(const tf32_cfg *cfg) { return cfg->warps_n * cfg->nt * 8 + (cfg->swz ? 0 : TF_BPAD); }

static int tf32_smem_bytes(const tf32_cfg *cfg)
{
    int bm = cfg->warps_m * cfg->mt * 16;
    return cfg->stages * (bm * tf32_a_row(cfg) + TF_BK * tf32_b_row(cfg)) * 4;
}

static void gen_tf32(strbuf *mod, const tf32_cfg *cfg)
{
    kern kk = {0}, *k = &kk;
    const int threads = 32 * cfg->warps_m * cfg->warps_n;
    const int bm_ = cfg->warps_m * cfg->mt * 16, bn_ = cfg->warps_n * cfg->nt * 8;
    const int wtm = cfg->mt * 16, wtn = cfg->nt * 8;
    const int a_row = tf32_a_row(cfg), b_row = tf32_b_row(cfg); /* floats */
    const int a_stage = bm_ * a_row * 4, stage = a_stage + TF_BK * b_row * 4;
    int c = param_global(k, "p_c"), a = param_global(k, "p_a"), b = param_global(k, "p_b");
    int M = param_u64(k, "p_m"), N = param_u64(k, "p_n"), K = param_u64(k, "p_k");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    (void)M;
    int tid = sreg(k, "%tid.x");
    int lane = nr(k), warp = nr(k), g = nr(k), t = nr(k), wm = nr(k), wn = nr(k);
    emit(k, "and.b32 %s, %s, 31;", R(lane), R(tid));
    emit(k, "shr.u32 %s, %s, 5;", R(warp), R(tid));
    emit(k, "shr.u32 %s, %s, 2;", R(g), R(lane));
    emit(k, "and.b32 %s, %s, 3;", R(t), R(lane));
    emit(k, "div.u32 %s, %s, %d;", R(wm), R(warp), cfg->warps_n);
    emit(k, "rem.u32 %s, %s, %d;", R(wn), R(warp), cfg->warps_n);
    int tile_m, tile_n;
    block_tile(k, cfg->raster, &tile_m, &tile_n);
    int bm = nd(k), bn = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(bm), R(tile_m), bm_);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(bn), R(tile_n), bn_);
    int smem = nr(k);
    emit(k, "mov.u32 %s, tf_smem;", R(smem));

    /* cp.async assignments: A tile bm_ x 32 (8 chunks of 16 bytes a row), B tile 32 x bn_ */
    const int a_loads = bm_ * TF_BK / 4 / threads, b_loads = TF_BK * bn_ / 4 / threads;
    int ag[8], as[8], bg[8], bs[8];
    for (int l = 0; l < a_loads; l++) {
        int q = nr(k), r = nr(k), cc = nr(k), r64 = nd(k), c64 = nd(k), idx = nd(k), phys = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(q), R(tid), l * threads);
        emit(k, "shr.u32 %s, %s, 3;", R(r), R(q));
        emit(k, "and.b32 %s, %s, 7;", R(cc), R(q));
        emit(k, "mov.u32 %s, %s;", R(phys), R(cc));
        if (cfg->swz) { /* chunk ^ 4 (row & 1) */
            int sw = nr(k);
            emit(k, "and.b32 %s, %s, 1;", R(sw), R(r));
            emit(k, "shl.b32 %s, %s, 2;", R(sw), R(sw));
            emit(k, "xor.b32 %s, %s, %s;", R(phys), R(phys), R(sw));
        }
        emit(k, "shl.b32 %s, %s, 2;", R(cc), R(cc));
        emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
        emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(cc));
        emit(k, "add.u64 %s, %s, %s;", D(r64), D(r64), D(bm));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(K), D(c64));
        ag[l] = nd(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ag[l]), D(idx), D(a));
        as[l] = nr(k);
        emit(k, "shl.b32 %s, %s, 2;", R(phys), R(phys));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(as[l]), R(r), a_row, R(phys));
        emit(k, "shl.b32 %s, %s, 2;", R(as[l]), R(as[l]));
    }
    for (int l = 0; l < b_loads; l++) {
        int q = nr(k), r = nr(k), cc = nr(k), r64 = nd(k), c64 = nd(k), idx = nd(k), phys = nr(k);
        int per_row = bn_ / 4;
        emit(k, "add.u32 %s, %s, %d;", R(q), R(tid), l * threads);
        emit(k, "div.u32 %s, %s, %d;", R(r), R(q), per_row);
        emit(k, "rem.u32 %s, %s, %d;", R(cc), R(q), per_row);
        emit(k, "mov.u32 %s, %s;", R(phys), R(cc));
        if (cfg->swz) { /* chunk ^ 2 ((row >> 2) & 3) */
            int sw = nr(k);
            emit(k, "shr.u32 %s, %s, 2;", R(sw), R(r));
            emit(k, "and.b32 %s, %s, 3;", R(sw), R(sw));
            emit(k, "shl.b32 %s, %s, 1;", R(sw), R(sw));
            emit(k, "xor.b32 %s, %s, %s;", R(phys), R(phys), R(sw));
        }
        emit(k, "shl.b32 %s, %s, 2;", R(cc), R(cc));
        emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
        emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(cc));
        emit(k, "add.u64 %s, %s, %s;", D(c64), D(c64), D(bn));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(N), D(c64));
        bg[l] = nd(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(bg[l]), D(idx), D(b));
        bs[l] = nr(k);
        emit(k, "shl.b32 %s, %s, 2;", R(phys), R(phys));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(bs[l]), R(r), b_row, R(phys));
        emit(k, "shl.b32 %s, %s, 2;", R(bs[l]), R(bs[l]));
        emit(k, "add.u32 %s, %s, %d;", R(bs[l]), R(bs[l]), a_stage);
    }
    int bstep = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %d;", D(bstep), D(N), TF_BK * 4);

    int KT = nd(k);
    emit(k, "shr.u64 %s, %s, 5;", D(KT), D(K));
    /* issue: loads tile `fetched` into stage ld_stage if it exists; always commits
     * (empty groups keep the wait_group count right at the end) */
    int fetched = nd(k), ld_stage = nr(k);
    emit(k, "mov.u64 %s, 0;", D(fetched));
    emit(k, "mov.u32 %s, 0;", R(ld_stage));
#define TF_ISSUE()                                                                              \
    do {                                                                                        \
        int pv = np(k), base = nr(k);                                                            \
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pv), D(fetched), D(KT));                            \
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(ld_stage), stage, R(smem));            \
        for (int l = 0; l < a_loads; l++) {                                                     \
            int sa = nr(k);                                                                     \
            emit(k, "add.u32 %s, %s, %s;", R(sa), R(base), R(as[l]));                           \
            emit(k, "@%s cp.async.cg.shared.global [%s], [%s], 16;", P(pv), R(sa), D(ag[l]));    \
            emit(k, "add.u64 %s, %s, %d;", D(ag[l]), D(ag[l]), TF_BK * 4);                       \
        }                                                                                       \
        for (int l = 0; l < b_loads; l++) {                                                     \
            int sb = nr(k);                                                                     \
            emit(k, "add.u32 %s, %s, %s;", R(sb), R(base), R(bs[l]));                           \
            emit(k, "@%s cp.async.cg.shared.global [%s], [%s], 16;", P(pv), R(sb), D(bg[l]));    \
            emit(k, "add.u64 %s, %s, %s;", D(bg[l]), D(bg[l]), D(bstep));                        \
        }                                                                                       \
        emit(k, "cp.async.commit_group;");                                                      \
        emit(k, "add.u64 %s, %s, 1;", D(fetched), D(fetched));                                   \
        int pw = np(k);                                                                         \
        emit(k, "add.u32 %s, %s, 1;", R(ld_stage), R(ld_stage));                                 \
        emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(ld_stage), cfg->stages);                    \
        emit(k, "@%s mov.u32 %s, 0;", P(pw), R(ld_stage));                                       \
    } while (0)
    for (int s = 0; s < cfg->stages - 1; s++)
        TF_ISSUE();

    int acc[8][8][4];
    for (int i = 0; i < cfg->mt; i++)
        for (int j = 0; j < cfg->nt; j++)
            for (int e = 0; e < 4; e++) {
                acc[i][j][e] = nf(k);
                emit(k, "mov.f32 %s, %s;", F(acc[i][j][e]), C(0.0f));
            }
    /* per-thread fragment offsets within a stage */
    int wrow = nr(k), wcol = nr(k);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(wrow), R(wm), wtm);
    emit(k, "add.u32 %s, %s, %s;", R(wrow), R(wrow), R(g));   /* the warp's row + g */
    emit(k, "mul.lo.u32 %s, %s, %d;", R(wcol), R(wn), wtn);
    int fa = nr(k), fb = nr(k), fa_s[2] = {-1, -1}, fb_j[8];
    if (!cfg->swz) {
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(fa), R(wrow), a_row, R(t));
        emit(k, "shl.b32 %s, %s, 2;", R(fa), R(fa));
        int col = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(col), R(wcol), R(g));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(fb), R(t), b_row, R(col));
        emit(k, "shl.b32 %s, %s, 2;", R(fb), R(fb));
        emit(k, "add.u32 %s, %s, %d;", R(fb), R(fb), a_stage);
    } else {
        /* A: row wrow, chunk ((s16 ^ (g & 1)) << 2) + t of its 8 */
        int par = nr(k);
        emit(k, "and.b32 %s, %s, 1;", R(par), R(g));
        for (int s16 = 0; s16 < 2; s16++) {
            int ch = nr(k);
            fa_s[s16] = nr(k);
            emit(k, "xor.b32 %s, %s, %d;", R(ch), R(par), s16);
            emit(k, "shl.b32 %s, %s, 2;", R(ch), R(ch));
            emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(t));
            emit(k, "shl.b32 %s, %s, 2;", R(ch), R(ch));
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(fa_s[s16]), R(wrow), a_row, R(ch));
            emit(k, "shl.b32 %s, %s, 2;", R(fa_s[s16]), R(fa_s[s16]));
        }
        /* B: row 4t (+ immediates), column chunk wcol/4 + (2j ^ 2t), element g within the two chunks */
        int t2 = nr(k), rowoff = nr(k), wc4 = nr(k);
        emit(k, "shl.b32 %s, %s, 1;", R(t2), R(t));
        emit(k, "mul.lo.u32 %s, %s, %d;", R(rowoff), R(t), 4 * b_row);
        emit(k, "shr.u32 %s, %s, 2;", R(wc4), R(wcol));
        for (int j = 0; j < cfg->nt; j++) {
            int ch = nr(k);
            fb_j[j] = nr(k);
            emit(k, "xor.b32 %s, %s, %d;", R(ch), R(t2), 2 * j);
            emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(wc4));
            emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(ch), R(ch), R(g));
            emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(rowoff));
            emit(k, "shl.b32 %s, %s, 2;", R(fb_j[j]), R(ch));
            emit(k, "add.u32 %s, %s, %d;", R(fb_j[j]), R(fb_j[j]), a_stage);
        }
    }

    int kt = nd(k), cstage = nr(k), pl = np(k), l_loop = nlabel(k), l_done = nlabel(k);
    emit(k, "mov.u64 %s, 0;", D(kt));
    emit(k, "mov.u32 %s, 0;", R(cstage));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pl), D(kt), D(KT));
    emit(k, "@%s bra %s;", P(pl), L(l_done));
    label(k, l_loop);
    emit(k, "cp.async.wait_group %d;", cfg->stages - 2);
    emit(k, "bar.sync 0;");
    TF_ISSUE();
    int base = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(cstage), stage, R(smem));
    if (!cfg->swz) {
        int pa = nr(k), pbb = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(pa), R(base), R(fa));
        emit(k, "add.u32 %s, %s, %s;", R(pbb), R(base), R(fb));
        for (int ks = 0; ks < TF_BK / 8; ks++) {
            int af[8][4], bf[8][2];
            for (int i = 0; i < cfg->mt; i++)
                for (int e = 0; e < 4; e++) {
                    /* a0 (g, t) a1 (g+8, t) a2 (g, t+4) a3 (g+8, t+4) */
                    int off = ((i * 16 + (e & 1) * 8) * a_row + ks * 8 + (e >> 1) * 4) * 4;
                    af[i][e] = nr(k);
                    emit(k, "ld.shared.b32 %s, [%s+%d];", R(af[i][e]), R(pa), off);
                    if (cfg->round)
                        emit(k, "cvt.rna.tf32.f32 %s, %s;", R(af[i][e]), R(af[i][e]));
                }
            for (int j = 0; j < cfg->nt; j++)
                for (int e = 0; e < 2; e++) {
                    /* b0 (k = t, n = g) b1 (k = t+4, n = g) */
                    int off = ((ks * 8 + e * 4) * b_row + j * 8) * 4;
                    bf[j][e] = nr(k);
                    emit(k, "ld.shared.b32 %s, [%s+%d];", R(bf[j][e]), R(pbb), off);
                    if (cfg->round)
                        emit(k, "cvt.rna.tf32.f32 %s, %s;", R(bf[j][e]), R(bf[j][e]));
                }
            for (int i = 0; i < cfg->mt; i++)
                for (int j = 0; j < cfg->nt; j++)
                    emit(k, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%s, %s, %s, %s}, "
                            "{%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s};",
                         F(acc[i][j][0]), F(acc[i][j][1]), F(acc[i][j][2]), F(acc[i][j][3]),
                         R(af[i][0]), R(af[i][1]), R(af[i][2]), R(af[i][3]), R(bf[j][0]), R(bf[j][1]),
                         F(acc[i][j][0]), F(acc[i][j][1]), F(acc[i][j][2]), F(acc[i][j][3]));
        }
    } else {
        int pa[2], pb[8];
        for (int s16 = 0; s16 < 2; s16++) {
            pa[s16] = nr(k);
            emit(k, "add.u32 %s, %s, %s;", R(pa[s16]), R(base), R(fa_s[s16]));
        }
        for (int j = 0; j < cfg->nt; j++) {
            pb[j] = nr(k);
            emit(k, "add.u32 %s, %s, %s;", R(pb[j]), R(base), R(fb_j[j]));
        }
        for (int s16 = 0; s16 < TF_BK / 16; s16++) {
            /* x[i][h][0..3]: thread t's four k values of this k16 block, rows g (h 0) and g+8 */
            int x[8][2][4];
            for (int i = 0; i < cfg->mt; i++)
                for (int h = 0; h < 2; h++) {
                    for (int e = 0; e < 4; e++)
                        x[i][h][e] = nr(k);
                    emit(k, "ld.shared.v4.b32 {%s, %s, %s, %s}, [%s+%d];", R(x[i][h][0]), R(x[i][h][1]),
                         R(x[i][h][2]), R(x[i][h][3]), R(pa[s16]), (i * 16 + h * 8) * a_row * 4);
                }
            for (int step = 0; step < 2; step++) {
                int bf[8][2];
                for (int j = 0; j < cfg->nt; j++)
                    for (int e = 0; e < 2; e++) {
                        /* k row 16 s16 + 4t + 2 step + e, column as fb_j */
                        bf[j][e] = nr(k);
                        emit(k, "ld.shared.b32 %s, [%s+%d];", R(bf[j][e]), R(pb[j]),
                             (s16 * 16 + 2 * step + e) * b_row * 4);
                    }
                for (int i = 0; i < cfg->mt; i++)
                    for (int j = 0; j < cfg->nt; j++)
                        emit(k, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%s, %s, %s, %s}, "
                                "{%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s};",
                             F(acc[i][j][0]), F(acc[i][j][1]), F(acc[i][j][2]), F(acc[i][j][3]),
                             R(x[i][0][2 * step]), R(x[i][1][2 * step]), R(x[i][0][2 * step + 1]),
                             R(x[i][1][2 * step + 1]), R(bf[j][0]), R(bf[j][1]),
                             F(acc[i][j][0]), F(acc[i][j][1]), F(acc[i][j][2]), F(acc[i][j][3]));
            }
        }
    }
    int pw = np(k);
    emit(k, "add.u32 %s, %s, 1;", R(cstage), R(cstage));
    emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(cstage), cfg->stages);
    emit(k, "@%s mov.u32 %s, 0;", P(pw), R(cstage));
    emit(k, "add.u64 %s, %s, 1;", D(kt), D(kt));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pl), D(kt), D(KT));
    emit(k, "@%s bra %s;", P(pl), L(l_loop));
    label(k, l_done);
    emit(k, "cp.async.wait_all;");
#undef TF_ISSUE

    /* epilogue: c0,c1 at (g, 2t..2t+1), c2,c3 at (g+8, 2t..2t+1) */
    int pb = np(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(beta), C(0.0f));
    int row0 = nd(k), col0 = nd(k), t64 = nd(k), ccol = nr(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(wrow));
    emit(k, "add.u64 %s, %s, %s;", D(row0), D(bm), D(t64));
    emit(k, "mad.lo.u32 %s, %s, 2, %s;", R(ccol), R(t), R(wcol));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(ccol));
    emit(k, "add.u64 %s, %s, %s;", D(col0), D(bn), D(t64));
    for (int i = 0; i < cfg->mt; i++)
        for (int h = 0; h < 2; h++) {
            int row = nd(k), rbase = nd(k);
            emit(k, "add.u64 %s, %s, %d;", D(row), D(row0), i * 16 + h * 8);
            emit(k, "mul.lo.u64 %s, %s, %s;", D(rbase), D(row), D(N));
            emit(k, "add.u64 %s, %s, %s;", D(rbase), D(rbase), D(col0));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(rbase), D(rbase), D(c));
            for (int j = 0; j < cfg->nt; j++) {
                int r0 = nf(k), r1 = nf(k), o0 = nf(k), o1 = nf(k);
                emit(k, "mul.rn.f32 %s, %s, %s;", F(r0), F(acc[i][j][h * 2]), F(alpha));
                emit(k, "mul.rn.f32 %s, %s, %s;", F(r1), F(acc[i][j][h * 2 + 1]), F(alpha));
                emit(k, "@%s ld.global.v2.f32 {%s, %s}, [%s+%d];", P(pb), F(o0), F(o1), D(rbase), j * 32);
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pb), F(r0), F(o0), F(beta), F(r0));
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pb), F(r1), F(o1), F(beta), F(r1));
                emit(k, "st.global.v2.f32 [%s+%d], {%s, %s};", D(rbase), j * 32, F(r0), F(r1));
            }
        }
    char dir[96];
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n.minnctapersm %d\n", threads, cfg->min_ctas);
    kern_finish(mod, k, cfg->name,
                ".param .u64 p_c, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_k, .param .f32 p_alpha, .param .f32 p_beta",
                dir, NULL);
}

static void module_tf32(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 16 .b8 tf_smem[];\n");
    for (size_t i = 0; i < sizeof tf32_cfgs / sizeof tf32_cfgs[0]; i++)
        gen_tf32(mod, &tf32_cfgs[i]);
}

/* ---- modules and output ------------------------------------------------- */
typedef struct module_def {
    const char *name;
    void (*gen)(strbuf *);
} module_def;

static const module_def modules[] = {
    {"elementwise", module_elementwise},
    {"reduce", module_reduce},
    {"rows", module_rows},
    {"matrix", module_matrix},
    {"sgemm", module_sgemm},
    {"tf32", module_tf32},
};
#define MODULE_COUNT (sizeof modules / sizeof modules[0])
static const int targets[] = {80, 90};
#define TARGET_COUNT (sizeof targets / sizeof targets[0])

static void gen_module(strbuf *out, const module_def *m, int sm)
{
    /* PTX ISA 7.0 (CUDA 11.0) covers sm_80; sm_90 needs ISA 7.8 (CUDA 12.0). */
    sb_printf(out, "// rayo cuda backend: module %s for sm_%d, generated by gen-ptx (do not edit)\n", m->name, sm);
    sb_printf(out, ".version %s\n.target sm_%d\n.address_size 64\n", sm >= 90 ? "7.8" : "7.0", sm);
    m->gen(out);
}

static const module_def *find_module(const char *name)
{
    for (size_t i = 0; i < MODULE_COUNT; i++)
        if (strcmp(modules[i].name, name) == 0)
            return &modules[i];
    return NULL;
}

static int write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

static int write_ptx_dir(const char *dir)
{
    for (size_t i = 0; i < MODULE_COUNT; i++)
        for (size_t t = 0; t < TARGET_COUNT; t++) {
            strbuf b = {0};
            char path[4096];
            gen_module(&b, &modules[i], targets[t]);
            snprintf(path, sizeof path, "%s/%s-sm%d.ptx", dir, modules[i].name, targets[t]);
            int rc = write_file(path, b.p, b.len);
            sb_free(&b);
            if (rc)
                return rc;
        }
    return 0;
}

/* Every module as a C string literal, plus the table the plugin reads. */
static int write_c_source(const char *path)
{
    strbuf c = {0};
    sb_printf(&c, "/* Generated by ptx/gen-ptx.c: the PTX of the cuda backend.  Do not edit. */\n");
    sb_printf(&c, "#include \"cuda-ptx.h\"\n\n");
    for (size_t i = 0; i < MODULE_COUNT; i++)
        for (size_t t = 0; t < TARGET_COUNT; t++) {
            strbuf b = {0};
            gen_module(&b, &modules[i], targets[t]);
            sb_printf(&c, "static const char ptx_%s_sm%d[] =\n\"", modules[i].name, targets[t]);
            for (size_t j = 0; j < b.len; j++) {
                char ch = b.p[j];
                if (ch == '\n')
                    sb_printf(&c, "\\n\"\n\"");
                else if (ch == '\t')
                    sb_printf(&c, "\\t");
                else if (ch == '"' || ch == '\\')
                    sb_printf(&c, "\\%c", ch);
                else
                    sb_printf(&c, "%c", ch);
            }
            sb_printf(&c, "\";\n\n");
            sb_free(&b);
        }
    sb_printf(&c, "const rayo_ptx_module rayo_cuda_ptx_modules[] = {\n");
    for (size_t i = 0; i < MODULE_COUNT; i++)
        for (size_t t = 0; t < TARGET_COUNT; t++)
            sb_printf(&c, "    {\"%s\", %d, ptx_%s_sm%d, sizeof ptx_%s_sm%d - 1},\n", modules[i].name,
                      targets[t], modules[i].name, targets[t], modules[i].name, targets[t]);
    sb_printf(&c, "};\nconst unsigned rayo_cuda_ptx_module_count = %u;\n\n", (unsigned)(MODULE_COUNT * TARGET_COUNT));
    sb_printf(&c, "const rayo_ptx_tf32_config rayo_cuda_tf32_configs[] = {\n");
    for (size_t i = 0; i < sizeof tf32_cfgs / sizeof tf32_cfgs[0]; i++) {
        const tf32_cfg *cf = &tf32_cfgs[i];
        sb_printf(&c, "    {\"%s\", %d, %d, %d, %d},\n", cf->name, cf->warps_m * cf->mt * 16,
                  cf->warps_n * cf->nt * 8, 32 * cf->warps_m * cf->warps_n, tf32_smem_bytes(cf));
    }
    sb_printf(&c, "};\nconst unsigned rayo_cuda_tf32_config_count = %u;\n",
              (unsigned)(sizeof tf32_cfgs / sizeof tf32_cfgs[0]));
    int rc = write_file(path, c.p, c.len);
    sb_free(&c);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: gen-ptx --list | --module NAME --sm 80|90 | --ptx-dir DIR | --c-source FILE\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < MODULE_COUNT; i++)
            printf("%s\n", modules[i].name);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--ptx-dir") == 0)
        return write_ptx_dir(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--c-source") == 0)
        return write_c_source(argv[2]);
    if (argc == 5 && strcmp(argv[1], "--module") == 0 && strcmp(argv[3], "--sm") == 0) {
        const module_def *m = find_module(argv[2]);
        int sm = atoi(argv[4]);
        if (!m || (sm != 80 && sm != 90))
            return usage();
        strbuf b = {0};
        gen_module(&b, m, sm);
        fwrite(b.p, 1, b.len, stdout);
        sb_free(&b);
        return 0;
    }
    return usage();
}

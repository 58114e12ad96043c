/* SPDX-License-Identifier: MIT */
/* vk-infer.c - recording the inference shaders: gemv with half and
 * quantized weights (shaders/gemv_quant.comp), attention
 * (shaders/attention.comp, attention_short.comp and attention_dec.comp for
 * decode, attention_prompt.comp for prompts),
 * get_rows, rope and the gated units
 * (shaders/infer_rows.comp).
 *
 * The calls reach here from vk_record through their families (the end of
 * this file) with their operands bound; unlike the base ops they may have
 * row strides, and their f16 and block operands may
 * start at any even or any byte (the shaders take byte offsets).
 */
#include "vk-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GEMV_WG 128u            /* invocations per workgroup (gemv_wg), f16 and bf16 */
#define GEMV_WG_BLOCKS 512u     /* ... block formats */
#define GEMV_WG_K_QUANTS 256u   /* ... Q4_K and Q6_K in gemv_quant.comp */
#define GEMV_TEAMS 2048u        /* teams a gemv aims at (rows per team) */
#define GEMV_SUBGROUPS 8192u    /* subgroups a gemv aims at (subgroups per team) */
#define MAX_GROUPS 65535u       /* the row loop covers the rest */
/* lavapipe stops an invocation after 65,535 loop iterations: at most this
 * many units (each a few short loops) per invocation on a CPU device */
#define CPU_UNITS_MAX 2048u
/* The largest attention_short_keys (attention_short.comp holds the
 * weights of its keys in shared memory: 16 KiB) */
#define ATTN_SHORT_KEYS_MAX 4096u

bool vk_infer_output_gaps(const rayo_call *call, size_t span)
{
    const rayo_rope_params *rp = call->op == RAYO_OP_ROPE ? rayo_call_rope_params(call) : NULL;
    const rayo_attention_params *ap =
        call->op == RAYO_OP_ATTENTION ? rayo_call_attention_params(call) : NULL;
    if (rp)
        return span != call->m * rp->n_heads * rp->head_dim;
    if (ap)
        return span != ap->n_q * ap->n_heads * ap->head_dim;
    return false;               /* the others: gaps only with ldy */
}

static rayo_status record(vk_state *s, vk_ctx *cx, uint32_t shader, const uint32_t *spec,
                          uint32_t nspec, const vk_operands *ops, const vk_push *pc, uint32_t gx,
                          uint32_t gy)
{
    VkPipeline p;
    rayo_status st = vk_ctx_pipeline(s, cx, shader, spec, nspec, &p);
    return st != RAYO_OK ? st : vk_ctx_dispatch(s, cx, p, ops->use, pc, gx, gy, 1);
}

static uint32_t groups_of(size_t n) { return n < MAX_GROUPS ? (uint32_t)n : MAX_GROUPS; }

static size_t or_dense(size_t stride, size_t dense) { return stride ? stride : dense; }

/* Whether a binding's start (and extra byte offset) is 16-byte aligned. */
static bool aligned16(const vk_binding *b, uint32_t byte_offset)
{
    return b->offset % 16 == 0 && byte_offset % 16 == 0;
}

/* A power of two from `lo` to `hi` set by [backend.vulkan] `key`, or 0. */
static uint32_t config_pow2(const vk_state *s, const char *key, uint32_t lo, uint32_t hi)
{
    const char *v = s->host->config(s->host, key);
    uint32_t want = v ? (uint32_t)strtoul(v, NULL, 10) : 0;
    return want >= lo && want <= hi && (want & (want - 1)) == 0 ? want : 0;
}

/* The team shape of gemv_quant.comp: rows per team (gemv_rows: 1, 2, 4, 8;
 * default 4, halved while that leaves fewer than GEMV_TEAMS teams, so that
 * short matrices still fill the device), subgroups per team (gemv_split:
 * a power of two up to the workgroup's), units each invocation loads per
 * step (gemv_units: 1, 2, 4; default 1) and the workgroup size (gemv_wg: a
 * power of two from the subgroup size to 1024).  Defaults, from the H200
 * (doc/benchmarks-vulkan.md): f16 and bf16 double the split from
 * 1 until GEMV_SUBGROUPS subgroups are busy or the workgroup is one team
 * (4096 x 11008: 38 -> 30 us at split 4), in workgroups of GEMV_WG; the
 * block formats, whose steps end in workgroup barriers (staged x), keep
 * split 1 (split 4 took 1.2-2.5x longer) in workgroups of GEMV_WG_BLOCKS:
 * 512, since the relaxed 8-bit gemvs (whose every workgroup rounds all of
 * x first) and their fused forms decode 3-13% faster than in 256 (a
 * TinyLlama-shape q4_0 780-793 tok/s against 743-780, the Llama-2-7B shape
 * 297-317 against 272-275); but Q4_K and Q6_K in gemv_quant.comp (strict
 * calls, and relaxed Q6_K) in GEMV_WG_K_QUANTS, where they took 8-13% less
 * time than in 512 at every shape (Q4_0 and Q8_0 up to 30% more). */
typedef struct gemv_shape {
    uint32_t rows, units, wg, split;
    uint32_t x_tile;            /* x values staged per step (block formats) */
} gemv_shape;

void vk_infer_read_settings(vk_state *s)
{
    const char *xstage = s->host->config(s->host, "gemv_xstage");
    s->gemv = (vk_gemv_settings){config_pow2(s, "gemv_rows", 1, 8), config_pow2(s, "gemv_units", 1, 4),
                                 config_pow2(s, "gemv_wg", s->subgroup_size, 1024),
                                 config_pow2(s, "gemv_split", 1, 32), !(xstage && !strcmp(xstage, "no"))};
    const char *dec = s->host->config(s->host, "attention_decode");
    s->attn_decode = !dec ? VK_ATTN_DEC_UNGROUPED : !strcmp(dec, "no") ? VK_ATTN_DEC_NO
                     : !strcmp(dec, "all") ? VK_ATTN_DEC_ALL : VK_ATTN_DEC_UNGROUPED;
    s->attn_decode_keys = config_pow2(s, "attention_decode_keys", 4, 65536);
    const char *short_path = s->host->config(s->host, "attention_short");
    s->attn_short = !(short_path && !strcmp(short_path, "no"));
    s->attn_short_keys = config_pow2(s, "attention_short_keys", 1, ATTN_SHORT_KEYS_MAX);
    const char *prompt = s->host->config(s->host, "attention_prompt");
    s->attn_prompt = !(prompt && !strcmp(prompt, "no"));
    s->attn_prompt_rows = config_pow2(s, "attention_prompt_rows", 16, 32);
}

static gemv_shape gemv_shape_of(const vk_state *s, rayo_dtype dt, size_t m)
{
    bool half = dt == RAYO_DTYPE_F16 || dt == RAYO_DTYPE_BF16;
    gemv_shape g = {s->gemv.rows, s->gemv.units, s->gemv.wg, s->gemv.split, 0};
    if (!g.rows)
        for (g.rows = 4; g.rows > 1 && m / g.rows < GEMV_TEAMS; g.rows /= 2) {}
    if (!g.units)
        g.units = 1;
    bool k_quant = dt == RAYO_DTYPE_Q4_K || dt == RAYO_DTYPE_Q6_K;
    if (!g.wg || g.wg > s->props.limits.maxComputeWorkGroupInvocations)
        g.wg = half ? GEMV_WG : k_quant ? GEMV_WG_K_QUANTS : GEMV_WG_BLOCKS;
    if (g.wg > s->props.limits.maxComputeWorkGroupInvocations)
        g.wg = GEMV_WG;
    if (g.wg < s->subgroup_size)
        g.wg = s->subgroup_size;
    if (!g.split)
        for (g.split = 1; half && g.split * s->subgroup_size < g.wg &&
                          m / g.rows * g.split < GEMV_SUBGROUPS;)
            g.split *= 2;
    while (g.split > 1 && g.split * s->subgroup_size > g.wg)
        g.split /= 2;
    return g;
}

/* Units of a row in gemv_quant.comp: 8 halves, 32 values of a Q4_K block
 * (16 bytes), 64 of a Q6_K block, one block of 32, or two where PAIRED. */
static size_t gemv_units_per_row(rayo_dtype dt, size_t n, bool paired)
{
    if (dt == RAYO_DTYPE_F16 || dt == RAYO_DTYPE_BF16)
        return n / 8;
    if (dt == RAYO_DTYPE_Q8_0 || dt == RAYO_DTYPE_Q4_0)
        return n / (paired ? 64 : 32);
    return n / (dt == RAYO_DTYPE_Q4_K ? 32 : 64);
}

/* The shared memory of gemv_quant.comp: x_tile (block formats unless
 * gemv_xstage = no: x values per step, plus a vec4 of padding per 16) and,
 * PAIRED, a block pair per row and invocation; rows, then units, then the
 * split, then the workgroup shrink until it fits. */
static bool gemv_fit_shared(const vk_state *s, rayo_dtype dt, bool paired, gemv_shape *g)
{
    bool half = dt == RAYO_DTYPE_F16 || dt == RAYO_DTYPE_BF16;
    bool staged = !half && s->gemv.xstage;
    uint32_t vpu = !staged ? 0 : (paired || dt == RAYO_DTYPE_Q6_K) ? 64 : 32;
    uint32_t pair_bytes = paired ? (dt == RAYO_DTYPE_Q8_0 ? 68u : 36u) : 0;
    uint32_t limit = s->props.limits.maxComputeSharedMemorySize;
    for (;;) {
        g->x_tile = vpu * s->subgroup_size * g->split * g->units;
        uint64_t bytes = (uint64_t)g->x_tile * 4 * 17 / 16 + (uint64_t)g->rows * g->wg * pair_bytes;
        if (bytes <= limit)
            return true;
        if (g->rows > 1)
            g->rows /= 2;
        else if (g->units > 1)
            g->units /= 2;
        else if (g->split > 1)
            g->split /= 2;
        else if (g->wg > s->subgroup_size * g->split)
            g->wg /= 2;
        else
            return false;
    }
}

/* gemv_int8.comp: relaxed gemv of block weights on x rounded to 8 bits, where
 * the device has integer dot products (s->int_dot: gemv_int8 not "no"; Q6_K
 * only with gemv_int8 = all: on the H200 its float path was 3-12% faster) and
 * its shared memory holds the rounded x (X_BLOCKS blocks, rounded up to
 * INT8_X_STEP to keep the pipelines few).  Rows per subgroup: gemv_rows,
 * else as gemv_quant.comp's teams up to INT8_ROWS; workgroups of gemv_wg, else
 * GEMV_WG_BLOCKS.  The choice depends on the call's shape alone, so a
 * recorded decode step replays it unchanged. */
#define INT8_X_STEP 64u
#define INT8_ROWS 2u            /* at most, by default (4: Q4_0 11008 x 4096 took 2.4x longer on the H200) */

static bool gemv_int8_wanted(const vk_state *s, rayo_dtype dt, const rayo_dev_call *call)
{
    return s->int_dot && call->precision == RAYO_PRECISION_RELAXED && rayo_dtype_is_block(dt) &&
           (dt != RAYO_DTYPE_Q6_K || s->int8_q6_k);
}

/* Records the call, or returns RAYO_E_UNSUPPORTED where x does not fit. */
static rayo_status rec_gemv_int8(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                                 vk_operands *ops, vk_push *pc)
{
    gemv_shape g = gemv_shape_of(s, RAYO_DTYPE_Q4_0, call->m);
    if (!s->gemv.rows && g.rows > INT8_ROWS)
        g.rows = INT8_ROWS;
    uint64_t blocks = ((uint64_t)call->n / 32 + INT8_X_STEP - 1) / INT8_X_STEP * INT8_X_STEP;
    /* x_codes and x_scale: 48 bytes a block; gate_part: 8 bytes an invocation */
    if (blocks * 48 + 8u * g.wg > s->props.limits.maxComputeSharedMemorySize)
        return RAYO_E_UNSUPPORTED;
    uint32_t spec[4] = {g.wg, RAYO_DTYPE_OF(call->dtypes, 0), g.rows, (uint32_t)blocks};
    uint32_t per_group = g.wg / s->subgroup_size * g.rows;
    size_t groups = (call->m + per_group - 1) / per_group;
    return record(s, cx, VK_SHADER_GEMV_INT8, spec, 4, ops, pc, groups_of(groups), 1);
}

/* ---- rmsnorm in the products of its output -------------------------------------------- */

/* Whether rmsnorm `norm` of one f32 row is x of `gemv`, a relaxed gemv that
 * takes gemv_int8, nothing it writes touching the norm's input, gamma or
 * output, and that output apart from the input and gamma. */
static bool norm_gemv_suits(const vk_state *s, const rayo_dev_call *norm, const rayo_dev_call *gemv)
{
    rayo_dtype dt = RAYO_DTYPE_OF(gemv->dtypes, 0);
    if (!s->fuse || !s->f64 || !s->subgroup_ok || norm->op != RAYO_OP_RMSNORM || gemv->op != RAYO_OP_GEMV ||
        norm->dtypes || norm->flags || (norm->lda | norm->ldb | norm->ldc | norm->ldy) || norm->m != 1 ||
        norm->n != gemv->n || norm->n == 0 || norm->n > UINT32_MAX || gemv->m == 0 || gemv->m > UINT32_MAX ||
        gemv->flags || !gemv_int8_wanted(s, dt, gemv) || !norm->a.buf || !norm->y.buf || !gemv->a.buf ||
        !gemv->y.buf || gemv->b.buf != norm->y.buf || gemv->b.offset != norm->y.offset)
        return false;
    size_t row = 4 * norm->n;
    vk_span x = vk_span_of(&norm->a, row, false), xn = vk_span_of(&norm->y, row, true),
            y = vk_span_of(&gemv->y, 4 * gemv->m, true);
    vk_span gamma = norm->b.buf ? vk_span_of(&norm->b, row, false) : (vk_span){0};
    return !vk_spans_meet(&y, &x) && !vk_spans_meet(&y, &xn) && !vk_spans_meet(&y, &gamma) &&
           !vk_spans_meet(&xn, &x) && !vk_spans_meet(&xn, &gamma);
}

/* What a fused dispatch adds to gemv_int8_norm: its module, the operands
 * bound as d, e and f (NULL: none; their bytes, whether written) and, for
 * the rope, the frequency table (bound as e, a temporary); rows per
 * subgroup (0: gemv_int8's choice), flags, push ext[2..5] (vk_fused_ext
 * fills those that depend on the bindings). */
typedef enum fused_kind { FUSED_NORM, FUSED_GLU, FUSED_ROPE } fused_kind;
typedef struct fused_extra {
    fused_kind kind;
    const rayo_dev_operand *more[3];
    size_t more_len[3];
    bool more_write[3];
    uint32_t rows, flags;
    uint32_t ext[4];
} fused_extra;

static const uint32_t fused_shader[] = {
    [FUSED_NORM] = VK_SHADER_GEMV_INT8_NORM, [FUSED_GLU] = VK_SHADER_GEMV_INT8_GLU,
    [FUSED_ROPE] = VK_SHADER_GEMV_INT8_ROPE,
};

/* The bytes of a gemv's A from its first row's start; false past size_t. */
static bool gemv_a_bytes(const rayo_dev_call *gemv, size_t *row_bytes, size_t *a_bytes)
{
    rayo_dtype dt = RAYO_DTYPE_OF(gemv->dtypes, 0);
    size_t ld = gemv->lda ? gemv->lda : gemv->n;
    return rayo_dtype_row_bytes(dt, ld, row_bytes) &&
           rayo_dtype_row_bytes(dt, (gemv->m - 1) * ld + gemv->n, a_bytes) && *row_bytes <= UINT32_MAX;
}

/* Push ext[2..5] from the bindings d, e, f. */
static void fused_ext(const fused_extra *x, const vk_operands *ops, size_t a_bytes, vk_push *pc)
{
    memcpy(&pc->ext[2], x->ext, sizeof x->ext);
    if (x->kind == FUSED_GLU) {
        pc->ext[2] = ops->bind[5].byte_offset;
        pc->ext[3] = (uint32_t)((ops->bind[5].byte_offset + a_bytes - 1) / 4);
        pc->ext[4] = ops->bind[6].word_offset;
        pc->ext[5] = ops->bind[7].word_offset;
    } else if (x->kind == FUSED_ROPE) {
        pc->ext[2] = ops->bind[5].word_offset;
        pc->ext[3] = ops->bind[6].word_offset;
    }
}

/* gemv_int8_norm: the rmsnorm `norm` and the gemv of its output in one
 * dispatch (shaders/gemv_int8.comp, RAYO_NORM), its workgroup 0 storing the
 * norm's output where `store` (the first gemv of those reading it; the
 * others only normalise x for themselves); with x, the GLU or rope module
 * and their operands.  The norm sums in double as rows.comp does, in
 * another order: its output may differ from the rmsnorm op's alone in the
 * last bit of a value, within that op's contract. */
static rayo_status record_norm_gemv_as(vk_state *s, vk_ctx *cx, const rayo_dev_call *norm, const rayo_dev_call *gemv,
                                       bool store, const fused_extra *x)
{
    rayo_dtype dt = RAYO_DTYPE_OF(gemv->dtypes, 0);
    size_t row_bytes, a_bytes, m = gemv->m, n = gemv->n;
    if (!gemv_a_bytes(gemv, &row_bytes, &a_bytes))
        return RAYO_E_UNSUPPORTED;
    gemv_shape g = gemv_shape_of(s, RAYO_DTYPE_Q4_0, m);
    if (!s->gemv.rows && g.rows > INT8_ROWS)
        g.rows = INT8_ROWS;
    if (x->rows)
        g.rows = x->rows;
    uint64_t blocks = ((uint64_t)n / 32 + INT8_X_STEP - 1) / INT8_X_STEP * INT8_X_STEP;
    /* gemv_int8's shared memory and the norm's doubles */
    if ((g.wg & (g.wg - 1)) || blocks * 48 + 16u * g.wg > s->props.limits.maxComputeSharedMemorySize)
        return RAYO_E_UNSUPPORTED;
    const rayo_dev_operand *src[VK_BINDINGS] = {&gemv->a, &norm->a, &norm->b, &gemv->y, store ? &norm->y : NULL,
                                                x->more[0], x->more[1], x->more[2]};
    const size_t len[VK_BINDINGS] = {a_bytes, 4 * n, 4 * n, 4 * m, 4 * n, x->more_len[0], x->more_len[1],
                                     x->more_len[2]};
    const bool written[VK_BINDINGS] = {false, false, false, x->kind != FUSED_GLU || (x->flags & 4u), true,
                                       x->more_write[0], x->more_write[1], x->more_write[2]};
    vk_operands ops;
    vk_operands_clear(&ops);
    vk_span spans[VK_BINDINGS];
    size_t tracked = 0;
    for (int i = 0; i < VK_BINDINGS; i++) {
        if (!src[i] || !src[i]->buf)
            continue;
        if (vk_bind(s, src[i]->buf, src[i]->offset, len[i], &ops.bind[i]) != RAYO_OK)
            return RAYO_E_UNSUPPORTED; /* (the calls one by one say why, if they fail) */
        ops.use[i] = &ops.bind[i];
        spans[tracked++] = vk_span_of(src[i], len[i], written[i]);
    }
    vk_push pc = {
        .n = (uint32_t)n, .m = (uint32_t)m, .k = (uint32_t)row_bytes,
        .oa = ops.bind[0].byte_offset, .ob = ops.bind[1].word_offset,
        .oc = ops.use[2] ? ops.bind[2].word_offset : 0, .oy = ops.bind[3].word_offset,
        .alpha = gemv->alpha, .beta = gemv->beta,
        .aux = (uint32_t)((ops.bind[0].byte_offset + a_bytes - 1) / 4),
        .flags = (store ? 1u : 0u) | (ops.use[2] ? 2u : 0u) | x->flags,
    };
    pc.ext[0] = store ? ops.bind[4].word_offset : 0;
    memcpy(&pc.ext[1], &norm->alpha, sizeof pc.ext[1]);
    fused_ext(x, &ops, a_bytes, &pc);
    uint32_t spec[4] = {g.wg, dt, g.rows, (uint32_t)blocks};
    uint32_t per_group = g.wg / s->subgroup_size * g.rows;
    if (s->overlap)
        vk_ctx_independent(cx, spans, tracked);
    rayo_status st = record(s, cx, fused_shader[x->kind], spec, 4, &ops, &pc,
                            groups_of((m + per_group - 1) / per_group), 1);
    vk_ctx_accessed(cx, spans, tracked, true);
    return st;
}

rayo_status vk_record_norm_gemv(vk_state *s, vk_ctx *cx, const rayo_dev_call *norm, const rayo_dev_call *gemv,
                                bool store)
{
    if (!norm_gemv_suits(s, norm, gemv))
        return RAYO_E_UNSUPPORTED;
    const fused_extra plain = {.kind = FUSED_NORM};
    return record_norm_gemv_as(s, cx, norm, gemv, store, &plain);
}

/* ---- gate, up and swiglu with the rmsnorm before them ----------------------------------- */

static bool operands_same(const rayo_dev_operand *a, const rayo_dev_operand *b)
{
    return a->buf == b->buf && a->offset == b->offset;
}

/* Whether no span of w[0 .. nw) meets another of them or one of r[0 .. nr). */
static bool spans_apart(const vk_span *w, size_t nw, const vk_span *r, size_t nr)
{
    for (size_t i = 0; i < nw; i++) {
        for (size_t j = i + 1; j < nw; j++)
            if (vk_spans_meet(&w[i], &w[j]))
                return false;
        for (size_t j = 0; j < nr; j++)
            if (vk_spans_meet(&w[i], &r[j]))
                return false;
    }
    return true;
}

/* The spans a fused norm and gemv read: raw x, gamma, A. */
static size_t norm_gemv_reads(const rayo_dev_call *norm, const rayo_dev_call *gemv, vk_span *r)
{
    size_t row_bytes, a_bytes, k = 0;
    r[k++] = vk_span_of(&norm->a, 4 * norm->n, false);
    if (norm->b.buf)
        r[k++] = vk_span_of(&norm->b, 4 * norm->n, false);
    if (gemv_a_bytes(gemv, &row_bytes, &a_bytes))
        r[k++] = vk_span_of(&gemv->a, a_bytes, false);
    return k;
}

/* Whether gemvs `gate` and `up` of the output of rmsnorm `norm` and swiglu
 * `glu` of their outputs run as one dispatch: each gemv fuses with the
 * norm, both alike (dtype, shape, alpha; beta 0), the swiglu one f32 row
 * of gate's and up's outputs, and nothing written (the norm's output, the
 * three outputs: a product's output may be swiglu's, whole) meeting
 * another or what is read. */
static bool norm_glu_suits(const vk_state *s, const rayo_dev_call *norm, const rayo_dev_call *gate,
                           const rayo_dev_call *up, const rayo_dev_call *glu)
{
    if (s->bindings < VK_BINDINGS || glu->op != RAYO_OP_SWIGLU || glu->dtypes || glu->flags || glu->m != 1 ||
        glu->n != gate->m || !glu->y.buf || !operands_same(&glu->a, &gate->y) || !operands_same(&glu->b, &up->y) ||
        !norm_gemv_suits(s, norm, gate) || !norm_gemv_suits(s, norm, up) || gate->dtypes != up->dtypes ||
        gate->m != up->m || gate->n != up->n || gate->lda != up->lda || gate->alpha != up->alpha ||
        gate->beta != 0 || up->beta != 0 || operands_same(&gate->y, &up->y))
        return false;
    size_t rows = 4 * gate->m, nw = 0, nr;
    vk_span w[4], r[5];
    w[nw++] = vk_span_of(&norm->y, 4 * norm->n, true);
    w[nw++] = vk_span_of(&glu->y, rows, true);
    if (!operands_same(&gate->y, &glu->y))
        w[nw++] = vk_span_of(&gate->y, rows, true);
    if (!operands_same(&up->y, &glu->y))
        w[nw++] = vk_span_of(&up->y, rows, true);
    size_t row_bytes, a_bytes;
    if (!gemv_a_bytes(up, &row_bytes, &a_bytes))
        return false;
    nr = norm_gemv_reads(norm, gate, r);
    r[nr++] = vk_span_of(&up->a, a_bytes, false);
    return spans_apart(w, nw, r, nr);
}

/* gemv_int8_glu: rmsnorm, gate and up products and their swiglu in one
 * dispatch (shaders/gemv_int8.comp, RAYO_GLU), storing the norm's output
 * where `store`; a subgroup takes a row of gate's A and the same row of
 * up's (loads of both in flight together: with two rows of each the
 * dispatch had half the subgroups of the two products run side by side).  Each output bit for bit the one of the calls one by one
 * with the norm fused (the same products, glu.glsl's swiglu). */
rayo_status vk_record_norm_glu(vk_state *s, vk_ctx *cx, const rayo_dev_call *norm, const rayo_dev_call *gate,
                               const rayo_dev_call *up, const rayo_dev_call *glu, bool store)
{
    if (!norm_glu_suits(s, norm, gate, up, glu))
        return RAYO_E_UNSUPPORTED;
    size_t row_bytes, a_bytes;
    gemv_a_bytes(up, &row_bytes, &a_bytes);
    bool up_kept = !operands_same(&up->y, &glu->y);
    fused_extra x = {
        .kind = FUSED_GLU,
        .more = {&up->a, up_kept ? &up->y : NULL, &glu->y},
        .more_len = {a_bytes, 4 * up->m, 4 * up->m},
        .more_write = {false, true, true},
        .rows = 1, /* a row of each matrix: as many subgroups as each product alone has at 2 */
        .flags = (operands_same(&gate->y, &glu->y) ? 0u : 4u) | (up_kept ? 8u : 0u),
    };
    return record_norm_gemv_as(s, cx, norm, gate, store, &x);
}

/* ---- the ropes of q and k in their products ------------------------------------------ */

/* The rope's rotated dimensions (0: none), where `rope` is the RAYO_ROPE_NORM
 * rope in place of one token over the whole dense output of `gemv` (head_dim
 * even, rot_dims even and at most head_dim), positions int32 on the device. */
static size_t rope_in_gemv_dims(const rayo_dev_call *gemv, const rayo_dev_call *rope)
{
    const rayo_rope_params *p = rope->params;
    if (rope->op != RAYO_OP_ROPE || rope->m != 1 || !p || rope->dtypes != RAYO_DTYPES(0, RAYO_DTYPE_I32, 0, 0) ||
        !rope->b.buf || !operands_same(&rope->a, &gemv->y) || !operands_same(&rope->y, &gemv->y) ||
        p->mode != RAYO_ROPE_NORM || p->head_dim == 0 || p->head_dim % 2 || p->n_heads * p->head_dim != gemv->m ||
        (p->head_stride_x && p->head_stride_x != p->head_dim) || (p->head_stride_y && p->head_stride_y != p->head_dim) ||
        gemv->beta != 0)
        return 0;
    size_t rot = p->rot_dims ? p->rot_dims : p->head_dim;
    return rot % 2 || rot > p->head_dim ? 0 : rot;
}

/* v of the q, k, v products: fused with the norm as q and k are, or else a
 * gemv of the norm's whole output recorded alone after q's dispatch has
 * stored that output (a Q6_K v of a q4_k_m file, whose relaxed gemv sums
 * in float: the ropes of q and k still fuse); not transposed, as the
 * spans checked below assume. */
static bool norm_output_gemv(const vk_state *s, const rayo_dev_call *norm, const rayo_dev_call *v)
{
    return norm_gemv_suits(s, norm, v) ||
           (v->op == RAYO_OP_GEMV && !v->flags && v->n == norm->n && v->m > 0 && v->a.buf && v->y.buf &&
            norm->y.buf && v->b.buf == norm->y.buf && v->b.offset == norm->y.offset);
}

bool vk_norm_ropes_suit(const vk_state *s, const rayo_dev_call *const c[6])
{
    const rayo_dev_call *norm = c[0], *q = c[1], *k = c[2], *v = c[3];
    if (s->bindings < VK_BINDINGS || !norm_gemv_suits(s, norm, q) || !norm_gemv_suits(s, norm, k) ||
        !norm_output_gemv(s, norm, v) || !rope_in_gemv_dims(q, c[4]) || !rope_in_gemv_dims(k, c[5]))
        return false;
    /* the ropes run before v's product, k's after q's rope: nothing written
     * (the norm's output, q, k, v) meets another or what is read */
    vk_span w[4] = {vk_span_of(&norm->y, 4 * norm->n, true), vk_span_of(&q->y, 4 * q->m, true),
                    vk_span_of(&k->y, 4 * k->m, true), vk_span_of(&v->y, 4 * v->m, true)};
    vk_span r[9];
    size_t nr = norm_gemv_reads(norm, q, r);
    size_t row_bytes, bytes_k, bytes_v;
    if (!gemv_a_bytes(k, &row_bytes, &bytes_k) || !gemv_a_bytes(v, &row_bytes, &bytes_v))
        return false;
    r[nr++] = vk_span_of(&k->a, bytes_k, false);
    r[nr++] = vk_span_of(&v->a, bytes_v, false);
    r[nr++] = vk_span_of(&c[4]->b, 4, false);
    r[nr++] = vk_span_of(&c[5]->b, 4, false);
    return spans_apart(w, 4, r, nr);
}

/* freq_scale * freq_base^(-2i / rot_dims) in double, for i < rot_dims / 2,
 * in a host-visible temporary.  Not copied to device memory first: on the
 * H200 the copy and its barrier cost more (TinyLlama decode rope 6.7 ->
 * 11.0 us) than the shader's reads of a few doubles. */
static rayo_status rope_table(vk_state *s, vk_ctx *cx, const rayo_rope_params *p, size_t rot, vk_buf **table,
                              size_t *bytes)
{
    *bytes = (rot / 2 + 1) * sizeof(double);
    rayo_status st = vk_ctx_temp(s, cx, &s->staging_pool, *bytes, table);
    if (st != RAYO_OK)
        return st;
    double *f = vk_buf_map(*table);
    for (size_t i = 0; i < rot / 2; i++)
        f[i] = (double)p->freq_scale * pow((double)p->freq_base, -2.0 * (double)i / (double)rot);
    return RAYO_OK;
}

/* gemv_int8_rope: rmsnorm, the product `gemv` and `rope` in place on its
 * output in one dispatch (shaders/gemv_int8.comp, RAYO_ROPE; vk_norm_ropes_suit
 * checked the calls), two rows a subgroup (a pair), storing the norm's
 * output where `store`.  Bit for bit the calls one by one with the norm
 * fused (the same product, rope.glsl's rotation). */
rayo_status vk_record_norm_gemv_rope(vk_state *s, vk_ctx *cx, const rayo_dev_call *norm, const rayo_dev_call *gemv,
                                     const rayo_dev_call *rope, bool store)
{
    const rayo_rope_params *p = rope->params;
    size_t rot = rope_in_gemv_dims(gemv, rope), bytes;
    vk_buf *table;
    if (!rot || !norm_gemv_suits(s, norm, gemv))
        return RAYO_E_UNSUPPORTED;
    rayo_status st = rope_table(s, cx, p, rot, &table, &bytes);
    if (st != RAYO_OK)
        return st;
    const rayo_dev_operand freq = {table, 0};
    fused_extra x = {
        .kind = FUSED_ROPE,
        .more = {&rope->b, &freq, NULL},
        .more_len = {4, bytes, 0},
        .rows = 2,
        .ext = {0, 0, (uint32_t)p->head_dim, (uint32_t)rot},
    };
    return record_norm_gemv_as(s, cx, norm, gemv, store, &x);
}

static rayo_status rec_gemv_quant(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                                  vk_operands *ops)
{
    rayo_dtype dt = RAYO_DTYPE_OF(call->dtypes, 0);
    if (call->flags)
        return RAYO_E_UNSUPPORTED; /* weights are never transposed (rayo.h) */
    if (!s->subgroup_ok) {
        s->host->set_error(s->host, "vulkan: gemv with %s weights needs subgroup arithmetic",
                           rayo_dtype_name(dt));
        return RAYO_E_UNSUPPORTED;
    }
    /* m >= 1 here, and the core checked that A's span fits */
    size_t ld = call->lda ? call->lda : call->n, row_bytes, a_bytes;
    if (!rayo_dtype_row_bytes(dt, ld, &row_bytes) ||
        !rayo_dtype_row_bytes(dt, (call->m - 1) * ld + call->n, &a_bytes) || row_bytes > UINT32_MAX)
        return RAYO_E_UNSUPPORTED;  /* the binding holds less anyway */
    const vk_binding *a = ops->use[0], *x = ops->use[1];
    bool wide = dt == RAYO_DTYPE_F16 || dt == RAYO_DTYPE_BF16 || dt == RAYO_DTYPE_Q4_K;
    bool a_aligned = wide && aligned16(a, a->byte_offset) && row_bytes % 16 == 0;
    bool paired = (dt == RAYO_DTYPE_Q8_0 || dt == RAYO_DTYPE_Q4_0) && a->byte_offset % 4 == 0 &&
                  row_bytes % 4 == 0 && call->n % 64 == 0;
    size_t units = gemv_units_per_row(dt, call->n, paired);
    if (s->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU &&
        units / s->subgroup_size >= CPU_UNITS_MAX) {
        s->host->set_error(s->host, "vulkan: gemv rows of %zu elements are too long for a CPU device",
                           call->n);
        return RAYO_E_UNSUPPORTED;
    }
    vk_push pc = {
        .n = (uint32_t)call->n, .m = (uint32_t)call->m, .k = (uint32_t)row_bytes,
        .oa = a->byte_offset, .ob = x->word_offset, .oy = ops->use[3]->word_offset,
        .alpha = call->alpha, .beta = call->beta,
        .aux = (uint32_t)((a->byte_offset + a_bytes - 1) / 4),
    };
    if (gemv_int8_wanted(s, dt, call)) {
        rayo_status st = rec_gemv_int8(s, cx, call, ops, &pc);
        if (st != RAYO_E_UNSUPPORTED)
            return st;
    }
    gemv_shape g = gemv_shape_of(s, dt, call->m);
    if (!gemv_fit_shared(s, dt, paired, &g))
        return RAYO_E_UNSUPPORTED;
    uint32_t spec[9] = {g.wg, (uint32_t)dt, g.units, a_aligned, aligned16(x, x->byte_offset),
                        g.rows, paired, g.x_tile, g.split};
    uint32_t per_group = g.wg / s->subgroup_size / g.split * g.rows;
    size_t groups = (call->m + per_group - 1) / per_group;
    return record(s, cx, VK_SHADER_GEMV_QUANT, spec, 9, ops, &pc, groups_of(groups), 1);
}

/* ---- attention ------------------------------------------------------------------- */

#define ATTN_TILE 32u           /* keys per tile of attention.comp */
#define ATTN_HEADS 8u           /* query heads per workgroup */
#define ATTN_DMAX 256u          /* largest head_dim */
#define ATTN_GROUPS 4096u       /* workgroups worth cutting a long cache into chunks for */
#define ATTN_CPU_TILES 32u      /* tiles per chunk on a CPU device (lavapipe's loop limit) */
#define ATTN_KD 128u            /* K columns staged at a time */
/* attention.comp's shared memory (the double module; the float one needs
 * less): query rows, ATTN_KD columns of the tile's K rows (ATTN_KD + 1
 * floats apart), scores, probabilities and the heads' m, l and shrink */
#define ATTN_SHARED_BYTES ((ATTN_HEADS * ATTN_DMAX + ATTN_TILE * (ATTN_KD + 1)) * 4 + \
                           ATTN_HEADS * ATTN_TILE * 12 + ATTN_HEADS * 20)


/* The strides and sizes of attention.comp's push constants. */
static rayo_status attention_push(const rayo_attention_params *p, vk_push *pc)
{
    size_t d = p->head_dim, group = p->n_heads / p->n_kv_heads;
    size_t v[14] = {
        p->n_heads, group,
        or_dense(p->q_token, p->n_heads * d), or_dense(p->q_head, d),
        or_dense(p->k_token, p->n_kv_heads * d), or_dense(p->k_head, d),
        or_dense(p->v_token, p->n_kv_heads * d), or_dense(p->v_head, d),
        or_dense(p->o_token, p->n_heads * d), or_dense(p->o_head, d),
        0, 0, (group + ATTN_HEADS - 1) / ATTN_HEADS, 0,
    };
    v[13] = p->n_q * p->n_kv_heads * v[12];
    for (int i = 0; i < 14; i++) {
        if (v[i] > UINT32_MAX)
            return RAYO_E_UNSUPPORTED;
        pc->ext[i] = (uint32_t)v[i];
    }
    if (p->n_q > UINT32_MAX || p->n_kv > UINT32_MAX || p->n_q * p->n_heads > UINT32_MAX)
        return RAYO_E_UNSUPPORTED;
    pc->n = (uint32_t)d;
    pc->m = (uint32_t)p->n_q;
    pc->k = (uint32_t)p->n_kv;
    pc->alpha = p->scale;
    pc->flags = (p->flags & RAYO_ATTN_CAUSAL) ? 1u : 0u;
    return RAYO_OK;
}

/* Chunks of the keys: enough workgroups for the device when there are few
 * (token, head) items (decode: a tile per chunk), and short loops on a CPU
 * device. */
static uint32_t attention_chunks(const vk_state *s, size_t items, size_t n_kv, uint32_t *tiles)
{
    size_t all = (n_kv + ATTN_TILE - 1) / ATTN_TILE;
    size_t chunks = (ATTN_GROUPS + items - 1) / items;
    if (chunks > all)
        chunks = all;
    if (s->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && chunks < (all + ATTN_CPU_TILES - 1) / ATTN_CPU_TILES)
        chunks = (all + ATTN_CPU_TILES - 1) / ATTN_CPU_TILES;
    if (chunks > MAX_GROUPS)
        chunks = MAX_GROUPS;
    *tiles = (uint32_t)((all + chunks - 1) / chunks);
    return (uint32_t)((all + *tiles - 1) / *tiles);
}

/* attention_dec.comp: relaxed calls of up to ATTN_DEC_QUERIES queries
 * (decode) where the device has subgroup arithmetic: with one query head
 * per KV head by default (on an NVIDIA H200 a Llama-2-7B step's call took
 * 24 us, an earlier build's general shader 52), with any group under attention_decode
 * = all (grouped heads at short caches: a TinyLlama call, 8 heads per KV
 * head and 192 f32 keys, took 19 us, the general shader's 16), never
 * under no (doc/benchmarks-vulkan.md).  A workgroup is one subgroup, taking keys a
 * subgroup at a time; chunks of attention_decode_keys keys (rounded up to
 * a multiple of the subgroup), else enough for about ATTN_DEC_GROUPS
 * workgroups (a long cache's reads in flight over the device) but at most
 * ATTN_DEC_CHUNKS chunks (PASS 1 of attention.comp walks them one by one),
 * and at most ATTN_DEC_CPU_KEYS keys on a CPU device (lavapipe's loop
 * limit). */
#define ATTN_DEC_QUERIES 4u
#define ATTN_DEC_GROUPS 2048u
#define ATTN_DEC_CHUNKS 64u
#define ATTN_DEC_CPU_KEYS 256u

static bool attention_decode_takes(const vk_state *s, const rayo_dev_call *call,
                                   const rayo_attention_params *p)
{
    bool grouped = p->n_heads != p->n_kv_heads;
    return (s->attn_decode == VK_ATTN_DEC_ALL || (s->attn_decode == VK_ATTN_DEC_UNGROUPED && !grouped)) &&
           s->subgroup_ok && call->precision == RAYO_PRECISION_RELAXED &&
           p->n_q >= 1 && p->n_q <= ATTN_DEC_QUERIES && p->n_kv >= 1 && p->head_dim <= ATTN_DMAX;
}

static size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

static uint32_t attention_decode_keys(const vk_state *s, size_t items, size_t n_kv)
{
    size_t sg = s->subgroup_size, keys = s->attn_decode_keys;
    if (!keys) {
        keys = (n_kv * items + ATTN_DEC_GROUPS - 1) / ATTN_DEC_GROUPS;
        if (keys < (n_kv + ATTN_DEC_CHUNKS - 1) / ATTN_DEC_CHUNKS)
            keys = (n_kv + ATTN_DEC_CHUNKS - 1) / ATTN_DEC_CHUNKS;
    }
    if (s->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && keys > ATTN_DEC_CPU_KEYS)
        keys = ATTN_DEC_CPU_KEYS;
    if ((n_kv + keys - 1) / keys > MAX_GROUPS)
        keys = (n_kv + MAX_GROUPS - 1) / MAX_GROUPS;
    return (uint32_t)round_up(keys ? keys : 1, sg);
}

/* Query heads of a workgroup: the largest divisor of the group up to
 * ATTN_HEADS (each K and V value is read group / heads times). */
static uint32_t attention_decode_heads(size_t group)
{
    uint32_t heads = ATTN_HEADS;
    while (group % heads)
        heads--;
    return heads;
}

/* Whether K and V rows split into aligned groups of `unit` elements
 * (pairs of halves on words, quads on 8 or 16 bytes): offsets, strides and
 * head_dim multiples of unit. */
static bool attention_kv_aligned(const vk_push *pc, uint32_t unit)
{
    return pc->n % unit == 0 && pc->ob % unit == 0 && pc->oc % unit == 0 &&
           (pc->ext[4] | pc->ext[5] | pc->ext[6] | pc->ext[7]) % unit == 0;
}

/* attention_short.comp: relaxed calls of 1 to ATTN_DEC_QUERIES queries
 * against at most attention_short_keys keys, where the device has
 * subgroup arithmetic, unless attention_short = no: one dispatch, a
 * workgroup of ATTN_SHORT_WG per (query token, query head), each
 * invocation scoring up to ceil(keys / ATTN_SHORT_WG) keys.  That count
 * follows from the setting and the call's kind alone, so the steps of a
 * replayed decode keep one pipeline while their cache grows; a step past
 * the limit takes the paths below.  Default limit, from an NVIDIA H200
 * (doc/benchmarks-vulkan.md): ATTN_SHORT_KEYS (a TinyLlama-shape f32 call
 * of 1024 keys took 22 us, the general shader 34; a Llama-2-7B-shape one
 * 40 us, attention_dec.comp 49, but 145 against 124 at 4096 keys), and
 * ATTN_SHORT_F16_KEYS for an f16 cache that attention_dec.comp takes
 * (decoding the halves of a whole row in one workgroup, 7B shape: 19 us
 * against 20 at 192 keys, 72 against 42 at 1024). */
#define ATTN_SHORT_WG 256u
#define ATTN_SHORT_KEYS 1024u
#define ATTN_SHORT_F16_KEYS 256u

static uint32_t attention_short_keys(const vk_state *s, const rayo_dev_call *call,
                                     const rayo_attention_params *p)
{
    if (s->attn_short_keys)
        return s->attn_short_keys;
    bool f16 = RAYO_DTYPE_OF(call->dtypes, 1) == RAYO_DTYPE_F16;
    return f16 && attention_decode_takes(s, call, p) ? ATTN_SHORT_F16_KEYS : ATTN_SHORT_KEYS;
}

/* Its shared memory: the weights, the query row, and per invocation two
 * floats (the subgroups' maxima and sums) and a vec4 (a partial output). */
static size_t attention_short_shared(uint32_t keys_per_invocation, size_t dim)
{
    return (size_t)ATTN_SHORT_WG * keys_per_invocation * 4 + (dim + 3) / 4 * 16 + ATTN_SHORT_WG * (2 * 4 + 16);
}

static bool attention_short_takes(const vk_state *s, const rayo_dev_call *call, const rayo_attention_params *p)
{
    uint32_t keys = attention_short_keys(s, call, p), per_invocation = (keys + ATTN_SHORT_WG - 1) / ATTN_SHORT_WG;
    return s->attn_short && s->subgroup_ok && call->precision == RAYO_PRECISION_RELAXED && p->n_q >= 1 &&
           p->n_q <= ATTN_DEC_QUERIES && p->n_kv >= 1 && p->n_kv <= keys && p->head_dim >= 1 &&
           p->head_dim <= ATTN_DMAX && ATTN_SHORT_WG <= s->props.limits.maxComputeWorkGroupInvocations &&
           attention_short_shared(per_invocation, p->head_dim) <= s->props.limits.maxComputeSharedMemorySize;
}

static rayo_status rec_attention_short(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                                       const rayo_attention_params *p, bool f16, const vk_operands *ops,
                                       const vk_push *pc)
{
    uint32_t per_invocation = (attention_short_keys(s, call, p) + ATTN_SHORT_WG - 1) / ATTN_SHORT_WG;
    uint32_t spec[5] = {ATTN_SHORT_WG, f16, (uint32_t)p->head_dim, per_invocation, attention_kv_aligned(pc, 4)};
    return record(s, cx, VK_SHADER_ATTENTION_SHORT, spec, 5, ops, pc, groups_of(p->n_q * p->n_heads), 1);
}

/* Binds the scratch of the chunks' m, l and acc (floats) and records
 * attention.comp's PASS 1 (the float module) that merges them. */
static rayo_status bind_chunk_scratch(vk_state *s, vk_ctx *cx, const rayo_attention_params *p,
                                      uint32_t chunks, vk_operands *ops, vk_push *pc)
{
    VkDeviceSize bytes = (VkDeviceSize)p->n_q * p->n_heads * chunks * (p->head_dim + 2) * 4;
    vk_buf *scratch;
    rayo_status st = vk_bind_temp(s, cx, &s->device_pool, bytes, ops, &scratch);
    pc->aux = st == RAYO_OK ? ops->bind[4].word_offset : 0;
    return st;
}

static rayo_status rec_merge_chunks(vk_state *s, vk_ctx *cx, const rayo_attention_params *p, bool f16,
                                    const vk_operands *ops, const vk_push *pc)
{
    uint32_t spec[3] = {0, f16, 1};
    return record(s, cx, VK_SHADER_ATTENTION_F32, spec, 3, ops, pc, groups_of(p->n_q * p->n_heads), 1);
}

static rayo_status rec_attention_decode(vk_state *s, vk_ctx *cx, const rayo_attention_params *p, bool f16,
                                        vk_operands *ops, vk_push *pc)
{
    uint32_t heads = attention_decode_heads(p->n_heads / p->n_kv_heads);
    pc->ext[12] = (uint32_t)(p->n_heads / p->n_kv_heads / heads);       /* head groups */
    pc->ext[13] = (uint32_t)(p->n_q * p->n_kv_heads) * pc->ext[12];     /* items */
    uint32_t items = pc->ext[13], keys = attention_decode_keys(s, items, p->n_kv);
    uint32_t chunks = (uint32_t)((p->n_kv + keys - 1) / keys);
    uint32_t spec[6] = {s->subgroup_size, f16, (uint32_t)p->head_dim, heads, s->subgroup_size,
                        f16 && attention_kv_aligned(pc, 2)};
    pc->ext[10] = chunks;
    pc->ext[11] = keys;
    if (chunks == 1) {
        pc->flags |= 2u;
        return record(s, cx, VK_SHADER_ATTENTION_DEC, spec, 6, ops, pc, 1, groups_of(items));
    }
    rayo_status st = bind_chunk_scratch(s, cx, p, chunks, ops, pc);
    if (st == RAYO_OK)
        st = record(s, cx, VK_SHADER_ATTENTION_DEC, spec, 6, ops, pc, chunks, groups_of(items));
    return st == RAYO_OK ? rec_merge_chunks(s, cx, p, f16, ops, pc) : st;
}

/* attention_prompt.comp: relaxed calls of at least ATTN_PROMPT_QUERIES
 * queries (a prompt) unless attention_prompt = no.  Its blocks of query
 * rows and key tiles: the first of (32, 32), (16, 32), (16, 16), (16, 8)
 * whose shared memory the device has, from 16 rows where head_dim is at
 * most ATTN_PROMPT_DIM_16 (attention_prompt_rows = 16 or 32 keeps one
 * row count), else the general shader takes the call.  On an NVIDIA H200
 * a 128-token prompt's call took 24 us in blocks of 16 rows and 31 in
 * blocks of 32 at the TinyLlama shape (head_dim 64, 8 heads a KV head),
 * 61 and 48 us at the Llama-2-7B shape (head_dim 128, one head a KV
 * head).  On a CPU
 * device only where an invocation's loops stay under ATTN_PROMPT_CPU_STEPS
 * iterations in all (lavapipe's limit), one workgroup per block. */
#define ATTN_PROMPT_QUERIES 16u
#define ATTN_PROMPT_DIM_16 64u
#define ATTN_PROMPT_WG 128u
#define ATTN_PROMPT_CPU_STEPS 60000u

typedef struct attn_prompt_shape {
    uint32_t rows, keys;        /* BQ, BK of the shader */
} attn_prompt_shape;

/* Rows of ceil(dim / 4) | 1 vec4s for the queries and the tile, then
 * the weights and the rows' partial maxima, factors and sums. */
static size_t attention_prompt_shared(size_t dim, attn_prompt_shape b)
{
    size_t sv = ((dim + 3) / 4) | 1;
    return (b.rows + b.keys) * sv * 16 + (b.rows * (b.keys + 1) + b.rows * 10) * 4;
}

/* A CPU device's bound: per tile the staging of K and V, the scores' loop
 * over head_dim and the values' loop over the keys; past MAX_GROUPS blocks
 * or KV heads the shader's loops over them would repeat all of it. */
static bool attention_prompt_short(const vk_state *s, const rayo_attention_params *p, attn_prompt_shape b)
{
    size_t tiles = (p->n_kv + b.keys - 1) / b.keys;
    size_t per_tile = 2 * b.keys * p->head_dim / ATTN_PROMPT_WG + p->head_dim / 4 + b.keys + 8;
    size_t queries = b.rows * p->head_dim / ATTN_PROMPT_WG;
    size_t blocks = (p->n_q * (p->n_heads / p->n_kv_heads) + b.rows - 1) / b.rows;
    return s->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU ||
           (tiles * per_tile + queries < ATTN_PROMPT_CPU_STEPS && blocks <= MAX_GROUPS &&
            p->n_kv_heads <= MAX_GROUPS);
}

static bool attention_prompt_takes(const vk_state *s, const rayo_dev_call *call,
                                   const rayo_attention_params *p, attn_prompt_shape *shape)
{
    static const attn_prompt_shape shapes[] = {{32, 32}, {16, 32}, {16, 16}, {16, 8}};
    if (!s->attn_prompt || call->precision != RAYO_PRECISION_RELAXED || p->n_q < ATTN_PROMPT_QUERIES ||
        !p->head_dim)
        return false;
    uint32_t rows = s->attn_prompt_rows ? s->attn_prompt_rows : p->head_dim <= ATTN_PROMPT_DIM_16 ? 16 : 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if ((rows && shapes[i].rows != rows) ||
            attention_prompt_shared(p->head_dim, shapes[i]) > s->props.limits.maxComputeSharedMemorySize)
            continue;
        *shape = shapes[i];
        return attention_prompt_short(s, p, shapes[i]);
    }
    return false;
}

static rayo_status rec_attention_prompt(vk_state *s, vk_ctx *cx, const rayo_attention_params *p, bool f16,
                                        const vk_operands *ops, const vk_push *pc, attn_prompt_shape b)
{
    uint32_t spec[5] = {0, f16, (uint32_t)p->head_dim, b.rows, b.keys};
    size_t blocks = (p->n_q * (p->n_heads / p->n_kv_heads) + b.rows - 1) / b.rows;
    return record(s, cx, VK_SHADER_ATTENTION_PROMPT, spec, 5, ops, pc, groups_of(blocks),
                  groups_of(p->n_kv_heads));
}

/* Strict calls take the module that sums in double (shaderFloat64);
 * relaxed ones the float module, within their 2e-3 contract
 * (core/rayo-ops.h), or attention_short.comp (decode at short caches),
 * attention_dec.comp (decode), or attention_prompt.comp (prompts). */
static rayo_status rec_attention(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                                 vk_operands *ops)
{
    const rayo_attention_params *p = call->params; /* checked by shape_of */
    rayo_dtype kv = RAYO_DTYPE_OF(call->dtypes, 1);
    bool f32 = call->precision == RAYO_PRECISION_RELAXED;
    if ((!f32 && !s->f64) || p->head_dim > ATTN_DMAX ||
        s->props.limits.maxComputeSharedMemorySize < ATTN_SHARED_BYTES) {
        s->host->set_error(s->host, "vulkan: attention needs head_dim <= %u, %u bytes of shared memory, "
                           "and shaderFloat64 at strict precision", ATTN_DMAX, ATTN_SHARED_BYTES);
        return RAYO_E_UNSUPPORTED;
    }
    vk_push pc;
    memset(&pc, 0, sizeof pc);
    if (attention_push(p, &pc) != RAYO_OK)
        return RAYO_E_UNSUPPORTED;
    bool f16 = kv == RAYO_DTYPE_F16;
    pc.oa = ops->use[0]->word_offset;
    pc.ob = f16 ? ops->use[1]->byte_offset / 2 : ops->use[1]->word_offset;
    pc.oc = f16 ? ops->use[2]->byte_offset / 2 : ops->use[2]->word_offset;
    pc.oy = ops->use[3]->word_offset;
    if (attention_short_takes(s, call, p))
        return rec_attention_short(s, cx, call, p, f16, ops, &pc);
    if (attention_decode_takes(s, call, p))
        return rec_attention_decode(s, cx, p, f16, ops, &pc);
    attn_prompt_shape block;
    if (attention_prompt_takes(s, call, p, &block))
        return rec_attention_prompt(s, cx, p, f16, ops, &pc, block);
    uint32_t tiles, items = pc.ext[13];
    uint32_t chunks = attention_chunks(s, items, p->n_kv, &tiles);
    pc.ext[10] = chunks;
    pc.ext[11] = tiles;
    uint32_t shader = f32 ? VK_SHADER_ATTENTION_F32 : VK_SHADER_ATTENTION;
    uint32_t spec[3] = {0, f16, 0};
    if (chunks == 1) {
        pc.flags |= 2u;
        return record(s, cx, shader, spec, 3, ops, &pc, 1, groups_of(items));
    }
    /* m, l and acc of each (token, head, chunk): doubles, floats for f32 */
    if (f32) {
        rayo_status st = bind_chunk_scratch(s, cx, p, chunks, ops, &pc);
        if (st == RAYO_OK)
            st = record(s, cx, shader, spec, 3, ops, &pc, chunks, groups_of(items));
        return st == RAYO_OK ? rec_merge_chunks(s, cx, p, f16, ops, &pc) : st;
    }
    VkDeviceSize bytes = (VkDeviceSize)p->n_q * p->n_heads * chunks * (p->head_dim + 2) * 8;
    vk_buf *scratch;
    rayo_status st = vk_bind_temp(s, cx, &s->device_pool, bytes, ops, &scratch);
    if (st != RAYO_OK)
        return st;
    pc.aux = ops->bind[4].word_offset;
    st = record(s, cx, shader, spec, 3, ops, &pc, chunks, groups_of(items));
    spec[2] = 1;
    if (st == RAYO_OK)
        st = record(s, cx, shader, spec, 3, ops, &pc, groups_of(p->n_q * p->n_heads), 1);
    return st;
}

/* ---- row ops: gated units, get_rows, rope (infer_rows.comp) --------------------------- */

#define ROWS_WG 128u
#define ROW_SPLIT_ELEMS 512u     /* GLU and rope: elements of a row per workgroup */

#define CONVERT_CHUNK 4096u     /* infer_rows.comp's CHUNK */

/* row_elems: the elements a GLU or rope row spreads over workgroups (the
 * grid's y; 0: one workgroup per row). */
static rayo_status rec_rows_op(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                               const vk_operands *ops, vk_push *pc, uint32_t dtype, size_t row_elems)
{
    pc->n = (uint32_t)call->n;
    pc->m = (uint32_t)call->m;
    pc->k = (uint32_t)call->k;
    pc->ob = ops->use[1] ? ops->use[1]->word_offset : 0;
    pc->oy = ops->use[3]->word_offset;
    uint32_t spec[3] = {ROWS_WG, call->op, dtype};
    size_t gy = (row_elems + ROW_SPLIT_ELEMS - 1) / ROW_SPLIT_ELEMS;
    return record(s, cx, VK_SHADER_INFER_ROWS, spec, 3, ops, pc, groups_of(call->m), gy ? groups_of(gy) : 1);
}

/* convert: chunks of CONVERT_CHUNK elements (to f32) or output words (to
 * halves) as the rows; offsets of x and y in bytes. */
static rayo_status rec_convert(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                               vk_operands *ops)
{
    rayo_dtype from = RAYO_DTYPE_OF(call->dtypes, 0), to = RAYO_DTYPE_OF(call->dtypes, 3);
    size_t chunk_bytes = 0, words = (ops->use[3]->byte_offset % 4 + 2 * call->n + 3) / 4;
    if (to != RAYO_DTYPE_F32 && (from != RAYO_DTYPE_F32 || (to != RAYO_DTYPE_F16 && to != RAYO_DTYPE_BF16)))
        return RAYO_E_UNSUPPORTED;  /* quantizing: on the CPU backends */
    rayo_dtype_row_bytes(from, CONVERT_CHUNK, &chunk_bytes);
    size_t rows = to == RAYO_DTYPE_F32 ? (call->n + CONVERT_CHUNK - 1) / CONVERT_CHUNK
                                       : (words + CONVERT_CHUNK - 1) / CONVERT_CHUNK;
    vk_push pc;
    memset(&pc, 0, sizeof pc);
    pc.n = (uint32_t)call->n;
    pc.m = (uint32_t)rows;
    pc.oa = ops->use[0]->byte_offset;
    pc.oy = ops->use[3]->byte_offset;
    pc.ext[0] = (uint32_t)chunk_bytes;
    uint32_t spec[4] = {ROWS_WG, RAYO_OP_CONVERT, from, to};
    return record(s, cx, VK_SHADER_INFER_ROWS, spec, 4, ops, &pc, groups_of(rows), 1);
}

static rayo_status set_strides(vk_push *pc, size_t lda, size_t ldb, size_t ldy)
{
    if (lda > UINT32_MAX || ldb > UINT32_MAX || ldy > UINT32_MAX)
        return RAYO_E_UNSUPPORTED;
    pc->ext[0] = (uint32_t)lda;
    pc->ext[1] = (uint32_t)ldb;
    pc->ext[2] = (uint32_t)ldy;
    return RAYO_OK;
}

static rayo_status rec_glu(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, vk_operands *ops)
{
    vk_push pc;
    memset(&pc, 0, sizeof pc);
    if (set_strides(&pc, or_dense(call->lda, call->n), or_dense(call->ldb, call->n),
                    or_dense(call->ldy, call->n)) != RAYO_OK)
        return RAYO_E_UNSUPPORTED;
    pc.oa = ops->use[0]->word_offset;
    return rec_rows_op(s, cx, call, ops, &pc, 0, call->n);
}

/* The context's fault word (vk_ctx), bound as s; its word offset to pc.aux. */
static rayo_status bind_fault(vk_state *s, vk_ctx *cx, vk_operands *ops, vk_push *pc)
{
    rayo_status st = RAYO_OK;
    if (!cx->fault && (st = vk_ctx_temp(s, cx, &s->staging_pool, 4, &cx->fault)) == RAYO_OK)
        *(uint32_t *)vk_buf_map(cx->fault) = 0;
    if (st == RAYO_OK)
        st = vk_bind(s, cx->fault, 0, 4, &ops->bind[4]);
    if (st != RAYO_OK)
        return st;
    ops->use[4] = &ops->bind[4];
    pc->aux = ops->use[4]->word_offset;
    return RAYO_OK;
}

static rayo_status rec_get_rows(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                                vk_operands *ops)
{
    rayo_dtype dt = RAYO_DTYPE_OF(call->dtypes, 0);
    size_t row_bytes;
    vk_push pc;
    memset(&pc, 0, sizeof pc);
    if (!rayo_dtype_row_bytes(dt, or_dense(call->lda, call->n), &row_bytes) ||
        set_strides(&pc, row_bytes, 0, or_dense(call->ldy, call->n)) != RAYO_OK)
        return RAYO_E_UNSUPPORTED;
    rayo_status st = bind_fault(s, cx, ops, &pc);
    if (st != RAYO_OK)
        return st;
    pc.oa = ops->use[0]->byte_offset;
    return rec_rows_op(s, cx, call, ops, &pc, dt, 0);
}

static rayo_status rec_rope(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, vk_operands *ops)
{
    const rayo_rope_params *p = call->params; /* checked by shape_of */
    size_t rot = p->rot_dims ? p->rot_dims : p->head_dim, d = p->head_dim;
    if (rot % 2 || rot > d || (p->mode != RAYO_ROPE_NORM && p->mode != RAYO_ROPE_NEOX))
        return RAYO_E_INVALID;
    if (p->n_heads == 0 || d == 0)
        return RAYO_OK;
    vk_push pc;
    memset(&pc, 0, sizeof pc);
    size_t v[6] = {p->n_heads, d, rot, p->mode, or_dense(p->head_stride_x, d), or_dense(p->head_stride_y, d)};
    if (set_strides(&pc, or_dense(call->lda, p->n_heads * d), 0, or_dense(call->ldy, p->n_heads * d)) != RAYO_OK ||
        p->n_heads * d > UINT32_MAX)
        return RAYO_E_UNSUPPORTED;
    for (int i = 0; i < 6; i++)
        pc.ext[3 + i] = (uint32_t)v[i];
    vk_buf *table;
    size_t bytes;
    rayo_status st = rope_table(s, cx, p, rot, &table, &bytes);
    if (st == RAYO_OK && (st = vk_bind(s, table, 0, bytes, &ops->bind[4])) == RAYO_OK)
        ops->use[4] = &ops->bind[4];
    if (st != RAYO_OK)
        return st;
    pc.oa = ops->use[0]->word_offset;
    pc.aux = ops->use[4]->word_offset;
    return rec_rows_op(s, cx, call, ops, &pc, 0, p->n_heads * (d - rot / 2));
}

rayo_status vk_check_host_call(vk_state *s, const rayo_call *call)
{
    if (call->op != RAYO_OP_GET_ROWS)
        return RAYO_OK;
    const int32_t *idx = call->b;
    for (size_t r = 0; r < call->m; r++)
        if (idx[r] < 0 || (size_t)idx[r] >= call->k) {
            s->host->set_error(s->host, "get_rows: index %d of row %zu is outside the table's %zu rows",
                               (int)idx[r], r, call->k);
            return RAYO_E_INVALID;
        }
    return RAYO_OK;
}

/* ---- the families of the inference shaders (each takes row strides) ---------- */
const vk_family vk_family_gemvq = {.name = "gemvq", .record = rec_gemv_quant, .strided = true};
const vk_family vk_family_attention = {.name = "attention", .record = rec_attention, .strided = true};
const vk_family vk_family_convert = {.name = "convert", .record = rec_convert, .strided = true};
const vk_family vk_family_glu = {.name = "glu", .record = rec_glu, .strided = true};
const vk_family vk_family_get_rows = {.name = "get_rows", .record = rec_get_rows, .strided = true};
const vk_family vk_family_rope = {.name = "rope", .record = rec_rope, .strided = true};

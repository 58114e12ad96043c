/* SPDX-License-Identifier: MIT */
/* vk-ops.c - recording rayo's ops as compute dispatches, and the kernels
 * the core calls for ops on host memory.
 *
 * vk_record() turns one op on device buffers into dispatches of the
 * embedded shaders, through the kernel family that runs it (one per entry
 * of the op table: vk-plugin.c); batches call it directly.  A host-memory call packs its
 * operands into one staging buffer, copies them into one device buffer,
 * records the op and the copy back, submits once and waits (on unified
 * memory, and for small calls, the op runs on the staging buffer itself).
 */
#include "vk-internal.h"
#include "vk-shader-codes.h"

#include <string.h>

#define WG 256u                 /* invocations per workgroup, vector shaders */
#define MAX_GROUPS 65535u       /* grid-stride loops cover the rest */
#define REDUCE_SINGLE (WG * 64u) /* up to this, a reduction is one dispatch */
#define FEW_TILES 128u          /* fewer matmul tiles than this: smaller tiles */
#define MATMUL_BLOCK_MIN 256u   /* fewest terms in a float block of matmul */

/* The signature of every op id (0: unknown). */
static const unsigned char op_signature[RAYO_OP_ID_LIMIT] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) [ID] = RAYO_SIG_##SIG + 1,
#include "rayo-ops.h"
#undef RAYO_OP
};

static int signature_of(uint32_t op)
{
    return op < RAYO_OP_ID_LIMIT ? (int)op_signature[op] - 1 : -1;
}

/* The operand sizes of a call, in 4-byte words (0: operand unused) and in
 * bytes (an f16 or block operand need not fill its last word). */
typedef struct vk_shape {
    size_t a, b, c, y;
    size_t bytes[4];
    bool y_read;                /* y is an input too */
} vk_shape;

/* The element counts of rayo-plugin.h in bytes and words, argmax's index
 * being a uint64 (2 words) on the device. */
static rayo_status shape_of(const rayo_call *call, int sig, vk_shape *sh)
{
    size_t count[4];
    memset(sh, 0, sizeof *sh);
    if (sig < 0)
        return RAYO_E_UNSUPPORTED;
    if (rayo_operand_counts(call, sig, count) != 0)
        return RAYO_E_OVERFLOW;
    for (int i = 0; i < 4; i++)
        if (!rayo_dtype_row_bytes(RAYO_DTYPE_OF(call->dtypes, i), count[i], &sh->bytes[i]))
            return RAYO_E_INVALID;
    if (sig == RAYO_SIG_ARGREDUCE)
        sh->bytes[3] = 8;
    sh->a = (sh->bytes[0] + 3) / 4;
    sh->b = (sh->bytes[1] + 3) / 4;
    sh->c = (sh->bytes[2] + 3) / 4;
    sh->y = (sh->bytes[3] + 3) / 4;
    /* an output with gaps (strides) is copied in too: the copy back must
     * not write garbage into them */
    sh->y_read = rayo_output_is_input(call, sig) || call->ldy || vk_infer_output_gaps(call, count[3]);
    return RAYO_OK;
}

/* A device call as the rayo_call that rayo_operand_counts measures. */
static rayo_call shape_call(const rayo_dev_call *dc)
{
    static const float given[1];
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = dc->op, .flags = dc->flags,
                   .dtypes = dc->dtypes, .m = dc->m, .n = dc->n, .k = dc->k,
                   .alpha = dc->alpha, .beta = dc->beta, .a = dc->a.buf ? given : NULL,
                   .b = dc->b.buf ? given : NULL, .c = dc->c.buf ? given : NULL,
                   .lda = dc->lda, .ldb = dc->ldb, .ldc = dc->ldc, .ldy = dc->ldy,
                   .params = dc->params};
    return c;
}

static uint32_t div_up(size_t x, size_t d) { return (uint32_t)((x + d - 1) / d); }
static uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* ---- recording ------------------------------------------------------------------ */

static rayo_status bind_operands(vk_state *s, const rayo_dev_call *call, const vk_shape *sh,
                                 vk_operands *ops)
{
    const rayo_dev_operand *src[4] = {&call->a, &call->b, &call->c, &call->y};
    const size_t words[4] = {sh->a, sh->b, sh->c, sh->y};
    vk_operands_clear(ops);
    for (int i = 0; i < 4; i++) {
        if (!words[i] || !src[i]->buf)
            continue;
        if (words[i] >= UINT32_MAX) {
            s->host->set_error(s->host, "vulkan: operands of 2^32 elements or more are not supported");
            return RAYO_E_UNSUPPORTED;
        }
        rayo_status st = vk_bind(s, src[i]->buf, src[i]->offset, sh->bytes[i], &ops->bind[i]);
        if (st != RAYO_OK)
            return st;
        if ((uint64_t)ops->bind[i].word_offset + words[i] > UINT32_MAX) {
            s->host->set_error(s->host, "vulkan: operand beyond 2^32 elements of its binding");
            return RAYO_E_UNSUPPORTED;
        }
        ops->use[i] = &ops->bind[i];
    }
    return RAYO_OK;
}

/* The bytes each operand of a call reads (a, b, c) or writes (y), widened
 * to whole words (f16 outputs are written a word at a time). */
static size_t call_spans(const rayo_dev_call *call, const vk_shape *sh, vk_span spans[4])
{
    const rayo_dev_operand *src[4] = {&call->a, &call->b, &call->c, &call->y};
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        const vk_buf *b = src[i]->buf;
        if (!b || !sh->bytes[i])
            continue;
        VkDeviceSize at = b->offset + src[i]->offset;
        spans[n++] = (vk_span){b->block->buffer, at & ~(VkDeviceSize)3, (at + sh->bytes[i] + 3) & ~(VkDeviceSize)3,
                               i == 3};
    }
    return n;
}

static void push_offsets(const vk_operands *ops, vk_push *pc, uint32_t unit)
{
    uint32_t *dst[4] = {&pc->oa, &pc->ob, &pc->oc, &pc->oy};
    for (int i = 0; i < 4; i++)
        *dst[i] = ops->use[i] ? ops->use[i]->word_offset / unit : 0;
}

static bool offsets_multiple_of(const vk_operands *ops, uint32_t unit)
{
    for (int i = 0; i < 4; i++)
        if (ops->use[i] && ops->use[i]->word_offset % unit)
            return false;
    return true;
}

static rayo_status dispatch(vk_state *s, vk_ctx *cx, uint32_t shader, const uint32_t *spec,
                            uint32_t nspec, const vk_operands *ops, const vk_push *pc,
                            uint32_t gx, uint32_t gy)
{
    VkPipeline p;
    rayo_status st = vk_ctx_pipeline(s, cx, shader, spec, nspec, &p);
    if (st != RAYO_OK)
        return st;
    return vk_ctx_dispatch(s, cx, p, ops->use, pc, gx, gy, 1);
}

/* The eltwise shaders on `total` values; op: the shader's op id. */
static rayo_status rec_eltwise(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, uint32_t op,
                               size_t total, const vk_operands *ops)
{
    bool vec4 = total % 4 == 0 && call->n % 4 == 0 && offsets_multiple_of(ops, 4);
    uint32_t unit = vec4 ? 4 : 1;
    vk_push pc = {
        .n = (uint32_t)(call->n / unit), .m = (uint32_t)call->m,
        .alpha = call->alpha, .beta = call->beta,
    };
    push_offsets(ops, &pc, unit);
    uint32_t spec[3] = {WG, op, s->eltwise_unroll};
    uint32_t groups = min_u32(div_up(total / unit, WG * s->eltwise_unroll), MAX_GROUPS);
    return dispatch(s, cx, vec4 ? VK_SHADER_ELTWISE_VEC4 : VK_SHADER_ELTWISE, spec, 3,
                    ops, &pc, groups, 1);
}

static rayo_status rec_elementwise(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, vk_operands *ops)
{
    return rec_eltwise(s, cx, call, call->op, call->n, ops);
}

/* bias_act: the eltwise shaders with the activation's op id, on m rows */
static rayo_status rec_bias_act(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, vk_operands *ops)
{
    if (call->flags >= RAYO_ACT_LIMIT) {
        s->host->set_error(s->host, "vulkan: unknown activation %u", call->flags);
        return RAYO_E_INVALID;
    }
    return rec_eltwise(s, cx, call, VK_BIAS_ACT_BASE + call->flags, call->m * call->n, ops);
}

static rayo_status rec_reduce(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                              vk_operands *ops)
{
    /* sums in double where the device has it (no overflow of partial sums,
     * exact products); subgroupAdd on double needs no more than Float64 */
    bool sums = call->op == RAYO_OP_SUM || call->op == RAYO_OP_DOT || call->op == RAYO_OP_NORM_L1;
    uint32_t shader = s->subgroup_ok ? VK_SHADER_REDUCE_SUBGROUP : VK_SHADER_REDUCE_SHARED;
    if (sums && s->f64)
        shader = s->subgroup_ok ? VK_SHADER_REDUCE_SUBGROUP_F64 : VK_SHADER_REDUCE_SHARED_F64;
    vk_push pc = {.n = (uint32_t)call->n};
    push_offsets(ops, &pc, 1);
    if (call->n <= REDUCE_SINGLE) {
        uint32_t spec[3] = {WG, call->op, 2};
        return dispatch(s, cx, shader, spec, 3, ops, &pc, 1, 1);
    }
    /* pass 0: partials of up to 1024 workgroups into a scratch buffer;
     * pass 1: one workgroup reduces them into y */
    uint32_t groups = min_u32(div_up(call->n, WG * 16u), 1024u);
    vk_buf *scratch;
    rayo_status st = vk_ctx_temp(s, cx, &s->device_pool, (VkDeviceSize)groups * 16, &scratch);
    if (st != RAYO_OK)
        return st;
    vk_binding partials;
    st = vk_bind(s, scratch, 0, (VkDeviceSize)groups * 16, &partials);
    if (st != RAYO_OK)
        return st;
    vk_operands pass0 = *ops, pass1 = *ops;
    pass0.use[3] = &partials;
    pc.oy = partials.word_offset;
    uint32_t spec[3] = {WG, call->op, 0};
    st = dispatch(s, cx, shader, spec, 3, &pass0, &pc, groups, 1);
    if (st != RAYO_OK)
        return st;
    pass1.use[0] = &partials;
    pass1.use[1] = NULL;
    vk_push pc1 = {.n = groups, .oa = partials.word_offset, .oy = ops->use[3]->word_offset};
    spec[2] = 1;
    return dispatch(s, cx, shader, spec, 3, &pass1, &pc1, 1, 1);
}

rayo_status vk_bind_temp(vk_state *s, vk_ctx *cx, vk_pool *pool, VkDeviceSize bytes, vk_operands *ops,
                         vk_buf **out)
{
    rayo_status st = vk_ctx_temp(s, cx, pool, bytes, out);
    if (st == RAYO_OK)
        st = vk_bind(s, *out, 0, bytes, &ops->bind[4]);
    if (st == RAYO_OK)
        ops->use[4] = &ops->bind[4];
    return st;
}

/* A scratch buffer on the device, bound as operand s; its word offset goes
 * to pc.aux. */
static rayo_status bind_scratch(vk_state *s, vk_ctx *cx, VkDeviceSize bytes, vk_operands *ops,
                                vk_push *pc)
{
    vk_buf *scratch;
    rayo_status st = vk_bind_temp(s, cx, &s->device_pool, bytes, ops, &scratch);
    if (st == RAYO_OK)
        pc->aux = ops->bind[4].word_offset;
    return st;
}

/* Rows up to CACHED_ROW take one workgroup each with the row in registers
 * (rows.comp PASS 4: E values per invocation, one read of the row); up to
 * LONG_ROW one workgroup each (PASS 0: a pass over memory per statistic); longer
 * ones are cut into at most MAX_CHUNKS chunks of at least LONG_ROW
 * elements, one workgroup per chunk, in three passes (two for rmsnorm).
 * Either way no invocation loops more than ~16,000 times over 2^32
 * elements. */
#define LONG_ROW (256u * 256u)
#define MAX_CHUNKS 1024u
#define CACHED_ROW_E 32u
/* Longest row for PASS 4, measured on an H200 (doc/benchmarks-vulkan.md):
 * once gamma came with the row's loads, rmsnorm of 4096 took 6.4 us
 * against PASS 0's 12.1 for 1 and for 128 rows (a Llama 7B's decode and
 * prompt); bandwidth runs over many rows had found PASS 4 slower at 4096
 * before that change */
#define CACHED_ROW_MAX 4096u

/* Whether PASS 4 takes rows of n values, and its workgroup size (*wg). */
static bool cached_row_wg(const vk_state *s, size_t n, uint32_t *wg)
{
    uint32_t wg_max = min_u32(1024u, s->props.limits.maxComputeWorkGroupInvocations);
    if (n == 0 || n > CACHED_ROW_MAX || n > (size_t)wg_max * CACHED_ROW_E)
        return false;
    for (*wg = 64; *wg < wg_max && *wg * 8u < n;)
        *wg *= 2;
    return true;
}

static rayo_status rec_rows(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                            vk_operands *ops)
{
    uint32_t shader = s->f64 ? VK_SHADER_ROWS_F64 : VK_SHADER_ROWS;
    uint32_t m = (uint32_t)call->m, n = (uint32_t)call->n;
    vk_push pc = {
        .n = n, .m = m, .alpha = call->alpha,
        .flags = (ops->use[1] ? 1u : 0u) | (ops->use[2] ? 2u : 0u),
    };
    push_offsets(ops, &pc, 1);
    uint32_t wg;
    if (cached_row_wg(s, n, &wg)) {
        uint32_t spec[4] = {wg, call->op, 4, div_up(n, wg)};
        uint32_t gx = min_u32(m, MAX_GROUPS), gy = min_u32(div_up(m, gx), MAX_GROUPS);
        return dispatch(s, cx, shader, spec, 4, ops, &pc, gx, gy);
    }
    if (n <= LONG_ROW) {
        uint32_t spec[3] = {n > 512 ? 256u : 64u, call->op, 0};
        uint32_t gx = min_u32(m, MAX_GROUPS), gy = min_u32(div_up(m, gx), MAX_GROUPS);
        return dispatch(s, cx, shader, spec, 3, ops, &pc, gx, gy);
    }
    uint32_t chunk = div_up(n, MAX_CHUNKS);
    chunk = chunk < LONG_ROW ? LONG_ROW : div_up(chunk, 256) * 256;
    uint32_t chunks = div_up(n, chunk);
    pc.k = chunk;
    rayo_status st = bind_scratch(s, cx, (VkDeviceSize)m * chunks * 16, ops, &pc);
    for (uint32_t pass = 1; pass <= 3 && st == RAYO_OK; pass++) {
        if (pass == 2 && call->op == RAYO_OP_RMSNORM)
            continue;
        uint32_t spec[3] = {256, call->op, pass};
        st = dispatch(s, cx, shader, spec, 3, ops, &pc, chunks, min_u32(m, MAX_GROUPS));
    }
    return st;
}

/* ---- add, then rmsnorm of its sum, in one dispatch ------------------------------------ */

vk_span vk_span_of(const rayo_dev_operand *o, size_t bytes, bool write)
{
    const vk_buf *b = o->buf;
    VkDeviceSize at = b->offset + o->offset;
    return (vk_span){b->block->buffer, at & ~(VkDeviceSize)3, (at + bytes + 3) & ~(VkDeviceSize)3, write};
}

bool vk_spans_meet(const vk_span *a, const vk_span *b)
{
    return a->buffer == b->buffer && a->start < b->end && b->start < a->end;
}

static bool spans_same(const vk_span *a, const vk_span *b)
{
    return a->buffer == b->buffer && a->start == b->start && a->end == b->end;
}

/* Whether add's sum (its y), the norm's input, may be written over its
 * inputs (an in-place residual add: each element is read, then written,
 * by one invocation) and apart from everything else. */
static bool add_rmsnorm_apart(const vk_span sp[5], bool gamma)
{
    enum { A, B, SUM, GAMMA, Y };
    for (int i = A; i <= SUM; i++)
        if (vk_spans_meet(&sp[Y], &sp[i]))
            return false;
    if ((vk_spans_meet(&sp[SUM], &sp[A]) && !spans_same(&sp[SUM], &sp[A])) ||
        (vk_spans_meet(&sp[SUM], &sp[B]) && !spans_same(&sp[SUM], &sp[B])))
        return false;
    return !gamma || (!vk_spans_meet(&sp[GAMMA], &sp[SUM]) && !vk_spans_meet(&sp[GAMMA], &sp[Y]));
}

/* Whether add and norm, f32 calls without strides, are a residual add and
 * the rmsnorm of its whole output in rows that PASS 4 takes. */
static bool add_rmsnorm_shapes(const vk_state *s, const rayo_dev_call *add, const rayo_dev_call *norm)
{
    if (add->op != RAYO_OP_ADD || norm->op != RAYO_OP_RMSNORM || add->dtypes || norm->dtypes || add->flags ||
        norm->flags || (add->lda | add->ldb | add->ldc | add->ldy | norm->lda | norm->ldb | norm->ldc | norm->ldy))
        return false;
    size_t m = norm->m, n = norm->n;
    uint32_t wg;
    vk_shape sh;
    rayo_call shape = shape_call(add);
    return m > 0 && m <= UINT32_MAX && cached_row_wg(s, n, &wg) &&
           shape_of(&shape, signature_of(add->op), &sh) == RAYO_OK && sh.y == m * n && add->a.buf &&
           add->b.buf && add->y.buf && norm->y.buf && norm->a.buf == add->y.buf && norm->a.offset == add->y.offset;
}

/* add (y = a + b) then rmsnorm of its y, as rows.comp's PASS 4 with
 * ADD_FIRST: each row is summed as the add sums it (stored to the add's y)
 * and normalised from registers as rmsnorm does: the same results as the
 * two calls with one dispatch and one barrier fewer.  RAYO_E_UNSUPPORTED
 * (nothing recorded, no message) where the two do not suit it. */
rayo_status vk_record_add_rmsnorm(vk_state *s, vk_ctx *cx, const rayo_dev_call *add, const rayo_dev_call *norm)
{
    if (!s->fuse || !add_rmsnorm_shapes(s, add, norm))
        return RAYO_E_UNSUPPORTED;
    size_t m = norm->m, n = norm->n, bytes = 4 * m * n;
    bool gamma = norm->b.buf != NULL;
    vk_span sp[5] = {vk_span_of(&add->a, bytes, false), vk_span_of(&add->b, bytes, false), vk_span_of(&add->y, bytes, true),
                     gamma ? vk_span_of(&norm->b, 4 * n, false) : (vk_span){0}, vk_span_of(&norm->y, bytes, true)};
    if (!add_rmsnorm_apart(sp, gamma))
        return RAYO_E_UNSUPPORTED;
    /* bindings: a the row, b gamma, c the addend, y the norm's output, the
     * scratch binding the sum */
    const rayo_dev_operand *src[5] = {&add->a, &norm->b, &add->b, &norm->y, &add->y};
    const size_t len[5] = {bytes, 4 * n, bytes, bytes, bytes};
    vk_operands ops;
    vk_operands_clear(&ops);
    for (int i = 0; i < 5; i++) {
        if (!src[i]->buf)
            continue;
        if (vk_bind(s, src[i]->buf, src[i]->offset, len[i], &ops.bind[i]) != RAYO_OK ||
            (uint64_t)ops.bind[i].word_offset + m * n > UINT32_MAX)
            return RAYO_E_UNSUPPORTED; /* (the calls one by one say why, if they fail) */
        ops.use[i] = &ops.bind[i];
    }
    vk_push pc = {.n = (uint32_t)n, .m = (uint32_t)m, .alpha = norm->alpha, .flags = gamma ? 1u : 0u};
    push_offsets(&ops, &pc, 1);
    pc.aux = ops.bind[4].word_offset;
    uint32_t wg = 64;
    cached_row_wg(s, n, &wg); /* true: add_rmsnorm_shapes checked */
    uint32_t spec[5] = {wg, RAYO_OP_RMSNORM, 4, div_up((uint32_t)n, wg), 1};
    uint32_t gx = min_u32((uint32_t)m, MAX_GROUPS), gy = min_u32(div_up((uint32_t)m, gx), MAX_GROUPS);
    vk_span track[5] = {sp[0], sp[1], sp[2], sp[4], sp[3]}; /* gamma last: left out without one */
    size_t tracked = gamma ? 5 : 4;
    if (s->overlap)
        vk_ctx_independent(cx, track, tracked);
    rayo_status st = dispatch(s, cx, s->f64 ? VK_SHADER_ROWS_F64 : VK_SHADER_ROWS, spec, 5, &ops, &pc, gx, gy);
    vk_ctx_accessed(cx, track, tracked, true);
    return st;
}

static rayo_status rec_matmul(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                              vk_operands *ops)
{
    if (call->flags & ~(RAYO_TRANS_A | RAYO_TRANS_B))
        return RAYO_E_INVALID;
    size_t m = call->m, n = call->n, k = call->k;
    const vk_tile *t = div_up(m, s->tile.bm) * (size_t)div_up(n, s->tile.bn) < FEW_TILES
                       ? &s->tile_small : &s->tile;
    uint32_t gx = div_up(n, t->bn), gy = div_up(m, t->bm);
    if (gx > s->props.limits.maxComputeWorkGroupCount[0] ||
        gy > s->props.limits.maxComputeWorkGroupCount[1]) {
        s->host->set_error(s->host, "vulkan: matmul of %zu x %zu is too large for one dispatch", m, n);
        return RAYO_E_UNSUPPORTED;
    }
    /* C is read (binding c) and written (binding y): the same range */
    ops->bind[2] = ops->bind[3];
    ops->use[2] = &ops->bind[2];
    if (s->coop && call->precision != RAYO_PRECISION_STRICT && m % 128 == 0 && n % 128 == 0 &&
        k % s->coop_bk == 0 && k > 0 && offsets_multiple_of(ops, 4)) {
        /* reduced precision allowed (and not refused by the call): tensor
         * cores (f16 inputs, f32 sums) */
        vk_push pc = {
            .n = (uint32_t)n, .m = (uint32_t)m, .k = (uint32_t)k,
            .alpha = call->alpha, .beta = call->beta,
        };
        push_offsets(ops, &pc, 4);
        uint32_t spec[4] = {0, (call->flags & RAYO_TRANS_A) ? 1u : 0u,
                            (call->flags & RAYO_TRANS_B) ? 1u : 0u, s->coop_bk};
        return dispatch(s, cx, VK_SHADER_MATMUL_COOP_NV, spec, 4, ops, &pc,
                        (uint32_t)(n / 128), (uint32_t)(m / 128));
    }
    uint32_t wg = (t->bm / t->tm) * (t->bn / t->tn);
    bool aligned = k > 0 && m % t->bm == 0 && n % t->bn == 0 && k % t->bk == 0 &&
                   (t->bm * t->bk) % (4 * wg) == 0 && (t->bn * t->bk) % (4 * wg) == 0 &&
                   offsets_multiple_of(ops, 4);
    uint32_t unit = aligned ? 4 : 1;
    uint32_t steps = div_up(k, t->bk);
    if (s->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && steps > 16384) {
        /* lavapipe stops an invocation after 65,535 loop iterations */
        s->host->set_error(s->host, "vulkan: matmul with k = %zu is too long for a CPU device", k);
        return RAYO_E_UNSUPPORTED;
    }
    /* tile steps per float block (matmul.comp's flush): about sqrt(k)
     * terms, at least MATMUL_BLOCK_MIN (few flushes for small k) */
    uint32_t terms = MATMUL_BLOCK_MIN;
    while ((uint64_t)terms * terms < k)
        terms++;
    uint32_t block = div_up(terms, t->bk);
    vk_push pc = {
        .n = (uint32_t)n, .m = (uint32_t)m, .k = (uint32_t)k,
        .alpha = call->alpha, .beta = call->beta, .aux = block,
    };
    push_offsets(ops, &pc, unit);
    uint32_t spec[8] = {wg, t->bm, t->bn, t->bk, t->tm, t->tn,
                        (call->flags & RAYO_TRANS_A) ? 1u : 0u,
                        (call->flags & RAYO_TRANS_B) ? 1u : 0u};
    return dispatch(s, cx, aligned ? VK_SHADER_MATMUL_ALIGNED : VK_SHADER_MATMUL, spec, 8,
                    ops, &pc, gx, gy);
}

/* gemv.comp: a dot over at most LONG_ROW columns (not transposed) or
 * GEMV_COLUMN rows (transposed) in one pass; longer ones in at most
 * MAX_CHUNKS chunks whose partial sums a second pass adds. */
#define GEMV_COLUMN 4096u
/* workgroups a transposed gemv aims at, and its shortest chunk of rows */
#define GEMV_GROUPS 2048u
#define GEMV_MIN_CHUNK 64u

static rayo_status rec_gemv(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                            vk_operands *ops)
{
    if (call->flags & ~RAYO_TRANS_A)
        return RAYO_E_INVALID;
    bool trans = call->flags & RAYO_TRANS_A;
    uint32_t m = (uint32_t)call->m, n = (uint32_t)call->n;
    uint32_t len = trans ? m : n, one_pass = trans ? GEMV_COLUMN : LONG_ROW;
    vk_push pc = {.n = n, .m = m, .k = len, .alpha = call->alpha, .beta = call->beta};
    push_offsets(ops, &pc, 1);
    /* transposed: columns along x, chunks along y; else chunks along x, rows along y */
    uint32_t gx = trans ? min_u32(div_up(n, WG), MAX_GROUPS) : 1;
    uint32_t gy = trans ? 1 : min_u32(m, MAX_GROUPS);
    uint32_t spec[3] = {WG, trans ? 1u : 0u, 0};
    /* transposed: the columns give only n / WG workgroups, so the rows are
     * cut into enough chunks (of at least GEMV_MIN_CHUNK) to fill the device */
    uint32_t spread = trans ? div_up(GEMV_GROUPS, gx) : 1;
    uint32_t chunk = div_up(len, MAX_CHUNKS);
    if (trans && spread > 1)
        chunk = max_u32(chunk, max_u32(div_up(len, spread), GEMV_MIN_CHUNK));
    else
        chunk = max_u32(chunk, one_pass);
    chunk = chunk > one_pass ? div_up(chunk, 256) * 256 : div_up(chunk, 32) * 32;
    if (len <= chunk)
        return dispatch(s, cx, VK_SHADER_GEMV, spec, 3, ops, &pc, gx, gy);
    uint32_t chunks = div_up(len, chunk);
    pc.k = chunk;
    rayo_status st = bind_scratch(s, cx, (VkDeviceSize)chunks * (trans ? n : m) * 4, ops, &pc);
    spec[2] = 1;
    if (st == RAYO_OK)
        st = dispatch(s, cx, VK_SHADER_GEMV, spec, 3, ops, &pc, trans ? gx : chunks,
                      trans ? chunks : gy);
    spec[2] = 2;
    if (st == RAYO_OK)
        st = dispatch(s, cx, VK_SHADER_GEMV, spec, 3, ops, &pc, gx, gy);
    return st;
}

static rayo_status rec_transpose(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                                 vk_operands *ops)
{
    uint32_t gx = div_up(call->n, 32), gy = div_up(call->m, 32);
    if (gx > s->props.limits.maxComputeWorkGroupCount[0] ||
        gy > s->props.limits.maxComputeWorkGroupCount[1]) {
        s->host->set_error(s->host, "vulkan: transpose of %zu x %zu is too large for one dispatch",
                           call->m, call->n);
        return RAYO_E_UNSUPPORTED;
    }
    vk_push pc = {.n = (uint32_t)call->n, .m = (uint32_t)call->m};
    push_offsets(ops, &pc, 1);
    return dispatch(s, cx, VK_SHADER_TRANSPOSE, NULL, 0, ops, &pc, gx, gy);
}

/* ---- the families of the f32 ops ------------------------------------------------ */
const vk_family vk_family_elementwise = {.name = "elementwise", .record = rec_elementwise};
const vk_family vk_family_bias_act = {.name = "bias_act", .record = rec_bias_act};
const vk_family vk_family_reduce = {.name = "reduce", .record = rec_reduce};
const vk_family vk_family_rows = {.name = "rows", .record = rec_rows};
const vk_family vk_family_matmul = {.name = "matmul", .record = rec_matmul};
const vk_family vk_family_gemv = {.name = "gemv", .record = rec_gemv};
const vk_family vk_family_transpose = {.name = "transpose", .record = rec_transpose};

rayo_status vk_record_family(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, const vk_family *family)
{
    int  sig = signature_of(call->op);
    vk_shape sh;
    rayo_call shape = shape_call(call);
    rayo_status st = family ? shape_of(&shape, sig, &sh) : RAYO_E_UNSUPPORTED;
    if (st != RAYO_OK)
        return st;
    if (call->n == 0 || (sh.a == 0 && sig != RAYO_SIG_MATMUL) || sh.y == 0)
        return RAYO_OK;         /* nothing to compute (the core answers most of these) */
    if (call->m > UINT32_MAX || call->n > UINT32_MAX || call->k > UINT32_MAX) {
        s->host->set_error(s->host, "vulkan: sizes beyond 2^32 are not supported");
        return RAYO_E_UNSUPPORTED;
    }
    if (!family->strided && (call->lda | call->ldb | call->ldc | call->ldy))
        return RAYO_E_UNSUPPORTED; /* row strides: only the inference shaders take them */
    vk_operands ops;
    st = bind_operands(s, call, &sh, &ops);
    if (st != RAYO_OK)
        return st;
    if (cx->depth > 0)          /* a step of a typed matmul: ordered by its call */
        return family->record(s, cx, call, &ops);
    vk_span spans[4];
    size_t n = call_spans(call, &sh, spans);
    bool tracked = !family->ctx_scratch;
    if (tracked && s->overlap)
        vk_ctx_independent(cx, spans, n);
    cx->depth++;
    st = family->record(s, cx, call, &ops);
    cx->depth--;
    vk_ctx_accessed(cx, spans, n, tracked);
    return st;
}

rayo_status vk_record(vk_state *s, vk_ctx *cx, const rayo_dev_call *call)
{
    return vk_record_family(s, cx, call, vk_family_of(call->op, call->dtypes));
}

/* ---- ops on host memory ---------------------------------------------------------- */

#define PACK_ALIGN 256u
#define DIRECT_MAX ((VkDeviceSize)1 << 20)  /* bytes: see host_call */

/* Where each operand of a host call sits in the packed temporaries. */
typedef struct vk_packing {
    const void *src[4];         /* host inputs (NULL: not copied in) */
    size_t bytes[4];
    VkDeviceSize offset[4];
    VkDeviceSize total;
} vk_packing;

static void pack(const rayo_call *call, const vk_shape *sh, vk_packing *pk)
{
    const void *in[4] = {call->a, call->b, call->c, sh->y_read ? call->y : NULL};
    VkDeviceSize at = 0;
    for (int i = 0; i < 4; i++) {
        pk->src[i] = sh->bytes[i] ? in[i] : NULL;
        pk->bytes[i] = sh->bytes[i];
        pk->offset[i] = at;
        at += (pk->bytes[i] + PACK_ALIGN - 1) / PACK_ALIGN * PACK_ALIGN;
    }
    pk->total = at;
}

static void store_result(const rayo_call *call, int sig, const void *from, size_t bytes)
{
    if (sig == RAYO_SIG_ARGREDUCE) {
        uint32_t idx[2];
        memcpy(idx, from, sizeof idx);
        *(size_t *)call->y = (size_t)idx[0];
    } else {
        memcpy(call->y, from, bytes);
    }
}

static rayo_status host_call(vk_state *s, const rayo_call *call, const vk_family *family)
{
    int  sig = signature_of(call->op);
    vk_shape sh;
    rayo_status st = shape_of(call, sig, &sh);
    if (st != RAYO_OK)
        return st;
    vk_packing pk;
    pack(call, &sh, &pk);

    /* Small calls of ops that read each input once run on the staging
     * memory itself: a few KiB over PCIe cost less than two copies and
     * their barriers (the round trip is what matters at that size). */
    bool direct = s->unified ||
        (pk.total <= DIRECT_MAX && sig != RAYO_SIG_MATMUL && sig != RAYO_SIG_GEMV &&
         sig != RAYO_SIG_TRANSPOSE);
    vk_ctx *cx;
    st = vk_ctx_acquire(s, &cx);
    if (st != RAYO_OK)
        return st;
    vk_buf *dev = NULL, *stage = NULL;
    st = vk_ctx_temp(s, cx, s->unified || !direct ? &s->device_pool : &s->staging_pool,
                     pk.total, &dev);
    if (st == RAYO_OK && !direct)
        st = vk_ctx_temp(s, cx, &s->staging_pool, pk.total, &stage);
    if (st != RAYO_OK)
        goto done;
    unsigned char *host_view = vk_buf_map(direct ? dev : stage);
    for (int i = 0; i < 4; i++)
        if (pk.src[i])
            memcpy(host_view + pk.offset[i], pk.src[i], pk.bytes[i]);
    if (!direct)
        for (int i = 0; i < 4; i++)
            if (pk.src[i])
                vk_ctx_copy(s, cx, stage, pk.offset[i], dev, pk.offset[i], pk.bytes[i]);

    rayo_dev_call dc = {
        .struct_size = sizeof dc, .op = call->op, .flags = call->flags, .dtypes = call->dtypes,
        .m = call->m, .n = call->n, .k = call->k, .alpha = call->alpha, .beta = call->beta,
        .lda = call->lda, .ldb = call->ldb, .ldc = call->ldc, .ldy = call->ldy,
        .precision = call->precision, .params = call->params,
        .a = {sh.a ? dev : NULL, pk.offset[0]},
        .b = {sh.b ? dev : NULL, pk.offset[1]},
        .c = {sh.c ? dev : NULL, pk.offset[2]},
        .y = {dev, pk.offset[3]},
    };
    st = vk_record_family(s, cx, &dc, family);
    if (st != RAYO_OK)
        goto done;
    if (!direct)
        vk_ctx_copy(s, cx, dev, pk.offset[3], stage, pk.offset[3], pk.bytes[3]);
    st = vk_ctx_submit(s, cx);
    if (st == RAYO_OK)
        st = vk_ctx_wait(s, cx, UINT64_MAX);
    if (st == RAYO_OK)
        store_result(call, sig, host_view + pk.offset[3], pk.bytes[3]);
done:
    vk_ctx_release(s, cx);
    return st;
}

rayo_status vk_host_call(void *state, const rayo_call *call, const vk_family *family)
{
    if (rayo_call_strided(call) && !family->strided)
        return RAYO_E_UNSUPPORTED; /* row strides: only the inference shaders take them */
    rayo_status st = vk_check_host_call(state, call);
    return st != RAYO_OK ? st : host_call(state, call, family);
}

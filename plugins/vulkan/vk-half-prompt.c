/* SPDX-License-Identifier: MIT */
/* vk-half-prompt.c - relaxed matmul of f32 activations by a transposed
 * half or quantized weight (an LLM prompt's products: A m x k, B n x k) on
 * the tensor cores, through f16 copies scaled row by row.
 *
 * Steps, each a dispatch after the last:
 *   1. each row of A and of B to f16 times a power of two of its own
 *      (half_rows.comp, which decodes B's blocks itself into the float
 *      values get_rows makes: the row's largest magnitude lands in
 *      [2^14, 2^15)), padded with zeros to whole 128 x 128 tiles and to
 *      whole K steps, the row's exponent in a table;
 *   2. the f16 product with float32 sums (matmul_half.comp), in slices of
 *      k where the tiles alone would leave most of the GPU idle;
 *   3. C = alpha 2^(ea[i] + eb[j]) (sum of the slices) + beta C
 *      (half_scale.comp; the powers of two exact).
 * The error is the two f16 roundings of each product, 2^-10 of the SUM
 * scale with round-to-nearest (2^-9 if the device truncates), within the
 * relaxed 2e-3 of core/rayo-ops.h; f16's range never binds (rows of 1e-30
 * or 1e30, products near 1e38 that cancel).  Values below 2^-28 of their
 * row's largest become f16 subnormals or zero: an absolute error under
 * 2^-39 of that largest value.
 *
 * Taken where the device has the f16 cooperative matrix (vk-plugin.c),
 * [backend.vulkan] half_prompt is not no, the call is relaxed, A and C f32
 * (any row stride), B transposed, and the copies fit the scratch and the
 * grids; otherwise the call goes the f32 way of vk-typed-matmul.c.
 *
 * Step 1's copy of B is kept from call to call where [backend.vulkan]
 * weight_copies allows (vk-weight-copies.c says why that is safe): the
 * product and the scaling back read B's rows and exponents from a binding
 * of their own (b), the scratch's part or the kept copy.
 */
#include "vk-internal.h"

#include <string.h>

#define TILE 128u               /* matmul_half.comp's tile, both ways */
#define ALIGN 256u              /* each scratch part starts at such an offset */
#define MAX_ROWS 65535u         /* half_rows.comp: one workgroup a padded row, along x */
/* Workgroups the product aims at: two for each SM of an H200 (132). */
#define GROUPS_WANTED 264u
#define MIN_SLICE_STEPS 4u      /* shortest slice of k, in K steps */

static VkDeviceSize up(VkDeviceSize x, VkDeviceSize to) { return (x + to - 1) / to * to; }

/* The scratch of one call: where each part starts (bytes). */
typedef struct half_layout {
    size_t mp, np, kp;          /* padded sizes */
    uint32_t slices, slice_steps;
    VkDeviceSize a16, b16, ea, eb, p, total;
} half_layout;

static half_layout layout_of(const vk_state *s, const rayo_dev_call *call)
{
    half_layout l = {.mp = up(call->m, TILE), .np = up(call->n, TILE), .kp = up(call->k, s->coop_bk)};
    uint32_t steps = (uint32_t)(l.kp / s->coop_bk), tiles = (uint32_t)(l.mp / TILE * (l.np / TILE));
    uint32_t want = (GROUPS_WANTED + tiles - 1) / tiles, most = steps / MIN_SLICE_STEPS;
    uint32_t slices = want < most ? want : most;
    if (slices < 1)
        slices = 1;
    l.slice_steps = (steps + slices - 1) / slices;
    l.slices = (steps + l.slice_steps - 1) / l.slice_steps; /* none empty */
    l.a16 = 0;
    l.b16 = l.a16 + up((VkDeviceSize)l.mp * l.kp * 2, ALIGN);
    l.ea = l.b16 + up((VkDeviceSize)l.np * l.kp * 2, ALIGN);
    l.eb = l.ea + up(l.mp * 4, ALIGN);
    l.p = l.eb + up(l.np * 4, ALIGN);
    l.total = l.p + (VkDeviceSize)l.slices * l.mp * l.np * 4;
    return l;
}

/* Bytes of B's rows as stored (0: past what a binding's byte offsets reach). */
static VkDeviceSize b_bytes(const rayo_dev_call *call, size_t *row_bytes)
{
    rayo_dtype bdt = RAYO_DTYPE_OF(call->dtypes, 1);
    size_t last = 0;
    if (!rayo_dtype_row_bytes(bdt, call->ldb ? call->ldb : call->k, row_bytes) ||
        !rayo_dtype_row_bytes(bdt, call->k, &last))
        return 0;
    VkDeviceSize total = (VkDeviceSize)(call->n - 1) * *row_bytes + last;
    return total <= UINT32_MAX ? total : 0;
}

bool vk_half_prompt_takes(const vk_state *s, const rayo_dev_call *call)
{
    rayo_dtype adt = RAYO_DTYPE_OF(call->dtypes, 0), bdt = RAYO_DTYPE_OF(call->dtypes, 1);
    if (!s->half_prompt || call->precision != RAYO_PRECISION_RELAXED || adt != RAYO_DTYPE_F32 ||
        bdt == RAYO_DTYPE_F32 || !rayo_dtype_name(bdt) || RAYO_DTYPE_OF(call->dtypes, 3) != RAYO_DTYPE_F32 ||
        call->flags != RAYO_TRANS_B || !call->m || !call->n || !call->k)
        return false;
    if (up(call->m, TILE) > MAX_ROWS || up(call->n, TILE) > MAX_ROWS || call->k > ((size_t)1 << 24) ||
        call->a.offset % 4 || call->y.offset % 4)
        return false;
    size_t row_bytes;
    if (!b_bytes(call, &row_bytes))
        return false;
    half_layout l = layout_of(s, call);
    return l.total <= VK_TYPED_MATMUL_MAX_SCRATCH;
}

static rayo_status run(vk_state *s, vk_ctx *cx, uint32_t shader, const uint32_t *spec, uint32_t nspec,
                       const vk_binding *a, const vk_binding *b, const vk_binding *c, const vk_binding *y,
                       const vk_binding *sc, const vk_push *pc, uint32_t gx, uint32_t gy, uint32_t gz)
{
    VkPipeline p;
    rayo_status st = vk_ctx_pipeline(s, cx, shader, spec, nspec, &p);
    const vk_binding *bind[VK_BINDINGS] = {a, b, c, y, sc};
    return st == RAYO_OK ? vk_ctx_dispatch(s, cx, p, bind, pc, gx, gy, gz) : st;
}

/* profile = yes: the step just recorded gets an entry of its own (the
 * copies as converts to f16, rows x cols; the product as an f16 matmul of
 * the padded sizes), so the call's own entry times the scaling back. */
static void profile_step(vk_state *s, vk_ctx *cx, rayo_op op, uint32_t dtypes, size_t m, size_t n, size_t k)
{
    rayo_dev_call step = {.struct_size = sizeof step, .op = op, .dtypes = dtypes, .m = m, .n = n, .k = k};
    vk_profile_op(s, cx, &step);
}

/* rows x cols of dtype dt at src (row stride row_bytes) to f16 rows of
 * l->kp at dst_off of the scratch, padded to prows, the exponents at
 * exp_off. */
static rayo_status half_rows(vk_state *s, vk_ctx *cx, rayo_dtype dt, const vk_binding *src,
                             const vk_binding *scratch, size_t rows, size_t prows, size_t cols,
                             size_t row_bytes, const half_layout *l, VkDeviceSize dst_off, VkDeviceSize exp_off)
{
    vk_push pc = {
        .n = (uint32_t)l->kp, .m = (uint32_t)rows, .k = (uint32_t)cols, .oa = src->byte_offset,
        .oy = scratch->word_offset + (uint32_t)(dst_off / 4), .oc = scratch->word_offset + (uint32_t)(exp_off / 4),
        .aux = (uint32_t)row_bytes,
    };
    uint32_t spec[1] = {(uint32_t)dt};
    rayo_status st = run(s, cx, VK_SHADER_HALF_ROWS, spec, 1, src, NULL, NULL, scratch, NULL, &pc, (uint32_t)prows,
                         1, 1);
    if (st == RAYO_OK)
        profile_step(s, cx, RAYO_OP_CONVERT, RAYO_DTYPES(dt, RAYO_DTYPE_NONE, RAYO_DTYPE_NONE, RAYO_DTYPE_F16),
                     rows, cols, 0);
    return st;
}

/* Where B's f16 rows and row exponents are: the scratch, or a kept copy. */
typedef struct half_b {
    const vk_binding *at;
    VkDeviceSize b16, eb;       /* bytes from the binding's operand start */
} half_b;

static rayo_status product(vk_state *s, vk_ctx *cx, const vk_binding *scratch, const half_b *b, const half_layout *l)
{
    uint32_t w = scratch->word_offset; /* a multiple of 4: the copies are read as uvec4 */
    vk_push pc = {
        .n = (uint32_t)l->np, .m = (uint32_t)l->mp, .k = (uint32_t)l->kp,
        .oa = (w + (uint32_t)(l->a16 / 4)) / 4, .ob = (b->at->word_offset + (uint32_t)(b->b16 / 4)) / 4,
        .oy = w + (uint32_t)(l->p / 4), .aux = l->slice_steps,
    };
    uint32_t spec[1] = {s->coop_bk};
    rayo_status st = run(s, cx, VK_SHADER_MATMUL_HALF, spec, 1, scratch, b->at, NULL, scratch, NULL, &pc,
                         (uint32_t)(l->np / TILE), (uint32_t)(l->mp / TILE), l->slices);
    if (st == RAYO_OK)
        profile_step(s, cx, RAYO_OP_MATMUL, RAYO_DTYPES(RAYO_DTYPE_F16, RAYO_DTYPE_F16, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                     l->mp, l->np, l->kp);
    return st;
}

static rayo_status scale_back(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, const vk_binding *scratch,
                              const half_b *b, const vk_binding *y, const half_layout *l)
{
    uint32_t w = scratch->word_offset;
    size_t ldy = call->ldy ? call->ldy : call->n;
    vk_push pc = {
        .n = (uint32_t)call->n, .m = (uint32_t)call->m, .k = l->slices,
        .oa = w + (uint32_t)(l->p / 4), .ob = w + (uint32_t)(l->ea / 4),
        .oc = y->word_offset, .oy = y->word_offset, .alpha = call->alpha, .beta = call->beta,
        .aux = (uint32_t)ldy,
        .ext = {(uint32_t)l->np, (uint32_t)(l->mp * l->np), b->at->word_offset + (uint32_t)(b->eb / 4)},
    };
    return run(s, cx, VK_SHADER_HALF_SCALE, NULL, 0, NULL, b->at, y, y, scratch, &pc,
               (uint32_t)((call->n + 255) / 256), (uint32_t)call->m, 1);
}

/* A kept copy of B (vk-weight-copies.c): its f16 rows, then their exponents. */
static VkDeviceSize kept_eb(const half_layout *l) { return up((VkDeviceSize)l->np * l->kp * 2, ALIGN); }
static VkDeviceSize kept_bytes(const half_layout *l) { return kept_eb(l) + l->np * 4; }

/* vk_copy_maker: B's rows as half_rows makes them into the scratch, into a kept copy. */
static rayo_status make_kept(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, const vk_binding *dst)
{
    half_layout l = layout_of(s, call);
    size_t b_row;
    VkDeviceSize b_all = b_bytes(call, &b_row);
    vk_binding bb;
    rayo_status st = vk_bind(s, call->b.buf, call->b.offset, b_all, &bb);
    if (st == RAYO_OK)
        st = half_rows(s, cx, RAYO_DTYPE_OF(call->dtypes, 1), &bb, dst, call->n, l.np, call->k, b_row, &l, 0,
                       kept_eb(&l));
    return st;
}

rayo_status vk_half_prompt(vk_state *s, vk_ctx *cx, const rayo_dev_call *call)
{
    half_layout l = layout_of(s, call);
    size_t lda = call->lda ? call->lda : call->k, ldy = call->ldy ? call->ldy : call->n, b_row;
    VkDeviceSize b_all = b_bytes(call, &b_row);
    vk_buf *scratch;
    rayo_status st = vk_typed_scratch(s, cx, l.total, &scratch);
    vk_binding sb, ab, bb, yb;
    if (st == RAYO_OK)
        st = vk_bind(s, scratch, 0, l.total, &sb);
    if (st == RAYO_OK)
        st = vk_bind(s, call->a.buf, call->a.offset, ((VkDeviceSize)(call->m - 1) * lda + call->k) * 4, &ab);
    if (st == RAYO_OK)
        st = vk_bind(s, call->b.buf, call->b.offset, b_all, &bb);
    if (st == RAYO_OK)
        st = vk_bind(s, call->y.buf, call->y.offset, ((VkDeviceSize)(call->m - 1) * ldy + call->n) * 4, &yb);
    if (st == RAYO_OK && sb.word_offset % 4)
        st = RAYO_E_UNSUPPORTED;
    if (st != RAYO_OK)
        return st;
    /* B's kept copy where there is one (or one is made now, in a submission
     * of its own), else B converted into the scratch below */
    vk_binding kb;
    bool kept = vk_weight_copy(s, cx, call, kept_bytes(&l), make_kept, &kb) && kb.word_offset % 4 == 0;
    half_b b = kept ? (half_b){&kb, 0, kept_eb(&l)} : (half_b){&sb, l.b16, l.eb};
    /* nothing recorded before this point: a refusal above leaves the f32 way */
    st = half_rows(s, cx, RAYO_DTYPE_F32, &ab, &sb, call->m, l.mp, call->k, lda * 4, &l, l.a16, l.ea);
    if (st == RAYO_OK && !kept)
        st = half_rows(s, cx, RAYO_DTYPE_OF(call->dtypes, 1), &bb, &sb, call->n, l.np, call->k, b_row, &l,
                       l.b16, l.eb);
    if (st == RAYO_OK)
        st = product(s, cx, &sb, &b, &l);
    if (st == RAYO_OK) /* the batch's profile times this step as the call */
        st = scale_back(s, cx, call, &sb, &b, &yb, &l);
    return st;
}

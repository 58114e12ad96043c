/* vk-infer.c - recording the inference shaders: gemv with half and
 * quantized weights (shaders/gemv_quant.comp).
 *
 * The calls reach here from vk_record with their operands bound; unlike the
 * base ops they may have row strides, and their f16 and block operands may
 * start at any even or any byte (the shaders take byte offsets).
 */
#include "vk-internal.h"

#include <stdlib.h>
#include <string.h>

#define GEMV_WG 256u            /* invocations per workgroup */
#define GEMV_ROWS 4u            /* rows per invocation (each unit's x reused) */
#define MAX_GROUPS 65535u       /* the row loop covers the rest */
/* lavapipe stops an invocation after 65,535 loop iterations: at most this
 * many units (each a few short loops) per invocation on a CPU device */
#define CPU_UNITS_MAX 2048u

bool vk_infer_call(uint32_t op, uint32_t dtypes)
{
    return dtypes != 0 || op >= RAYO_OP_CONVERT;
}

static rayo_status record(vk_state *s, vk_ctx *cx, uint32_t shader, const uint32_t *spec,
                          uint32_t nspec, const vk_operands *ops, const vk_push *pc, uint32_t groups)
{
    VkPipeline p;
    rayo_status st = vk_pipeline_get(s, shader, spec, nspec, &p);
    return st != RAYO_OK ? st : vk_ctx_dispatch(s, cx, p, ops->use, pc, groups, 1, 1);
}

/* Whether a binding's start (and extra byte offset) is 16-byte aligned. */
static bool aligned16(const vk_binding *b, uint32_t byte_offset)
{
    return b->offset % 16 == 0 && byte_offset % 16 == 0;
}

/* Elements of A's row that one invocation takes as a unit (gemv_quant.comp). */
static uint32_t gemv_unit(rayo_dtype dt)
{
    switch (dt) {
    case RAYO_DTYPE_F16: case RAYO_DTYPE_BF16: return 16;
    case RAYO_DTYPE_Q8_0: case RAYO_DTYPE_Q4_0: return 32;
    default: return 64;
    }
}

/* Rows each invocation takes (gemv_rows in [backend.vulkan]: 1, 2, 4, 8). */
static uint32_t gemv_rows(const vk_state *s)
{
    const char *v = s->host->config(s->host, "gemv_rows");
    if (v && (!strcmp(v, "1") || !strcmp(v, "2") || !strcmp(v, "4") || !strcmp(v, "8")))
        return (uint32_t)atoi(v);
    return GEMV_ROWS;
}

/* Invocations per row: a power of two near the row's units (one unit
 * each), from a subgroup up to the workgroup. */
static uint32_t gemv_row_threads(const vk_state *s, size_t units)
{
    uint32_t t = s->subgroup_size;
    while (t < GEMV_WG && t < units)
        t *= 2;
    return t;
}

static rayo_status rec_gemv_quant(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                                  const vk_operands *ops)
{
    rayo_dtype dt = RAYO_DTYPE_OF(call->dtypes, 0);
    if (call->flags)
        return RAYO_E_UNSUPPORTED; /* weights are never transposed (rayo.h) */
    if (!s->subgroup_ok || s->subgroup_size > GEMV_WG) {
        s->host->set_error(s->host, "vulkan: gemv with %s weights needs subgroup arithmetic",
                           rayo_dtype_name(dt));
        return RAYO_E_UNSUPPORTED;
    }
    /* m >= 1 here, and the core checked that A's span fits */
    size_t ld = call->lda ? call->lda : call->n, row_bytes, a_bytes;
    if (!rayo_dtype_row_bytes(dt, ld, &row_bytes) ||
        !rayo_dtype_row_bytes(dt, (call->m - 1) * ld + call->n, &a_bytes) || row_bytes > UINT32_MAX)
        return RAYO_E_UNSUPPORTED;  /* the binding holds less anyway */
    uint32_t unit = gemv_unit(dt);
    size_t units = (call->n + unit - 1) / unit;
    uint32_t row_threads = gemv_row_threads(s, units);
    if (s->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && units / row_threads >= CPU_UNITS_MAX) {
        s->host->set_error(s->host, "vulkan: gemv rows of %zu elements are too long for a CPU device",
                           call->n);
        return RAYO_E_UNSUPPORTED;
    }
    const vk_binding *a = ops->use[0], *x = ops->use[1];
    vk_push pc = {
        .n = (uint32_t)call->n, .m = (uint32_t)call->m, .k = (uint32_t)row_bytes,
        .oa = a->byte_offset, .ob = x->word_offset, .oy = ops->use[3]->word_offset,
        .alpha = call->alpha, .beta = call->beta,
        .aux = (uint32_t)((a->byte_offset + a_bytes - 1) / 4),
    };
    bool a_aligned = (dt == RAYO_DTYPE_F16 || dt == RAYO_DTYPE_BF16 || dt == RAYO_DTYPE_Q4_K) &&
                     aligned16(a, a->byte_offset) && row_bytes % 16 == 0;
    uint32_t rows = gemv_rows(s), per_group = GEMV_WG / row_threads * rows;
    uint32_t spec[6] = {GEMV_WG, (uint32_t)dt, row_threads, a_aligned, aligned16(x, x->byte_offset),
                        rows};
    size_t groups = (call->m + per_group - 1) / per_group;
    return record(s, cx, VK_SHADER_GEMV_QUANT, spec, 6, ops, &pc,
                  groups < MAX_GROUPS ? (uint32_t)groups : MAX_GROUPS);
}

rayo_status vk_record_infer(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                            const vk_operands *ops)
{
    switch (call->op) {
    case RAYO_OP_GEMV:
        return rec_gemv_quant(s, cx, call, ops);
    default:
        return RAYO_E_UNSUPPORTED;
    }
}

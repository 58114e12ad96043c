/* vk-infer.c - recording the inference shaders: gemv with half and
 * quantized weights (shaders/gemv_quant.comp).
 *
 * The calls reach here from vk_record with their operands bound; unlike the
 * base ops they may have row strides, and their f16 and block operands may
 * start at any even or any byte (the shaders take byte offsets).
 */
#include "vk-internal.h"

#define GEMV_WG 128u            /* invocations per workgroup: one row per subgroup */
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

/* Elements of A's row that one invocation takes as a unit (gemv_quant.comp). */
static uint32_t gemv_unit(rayo_dtype dt)
{
    switch (dt) {
    case RAYO_DTYPE_F16: case RAYO_DTYPE_BF16: return 8;
    case RAYO_DTYPE_Q8_0: case RAYO_DTYPE_Q4_0: return 32;
    default: return 64;
    }
}

static rayo_status rec_gemv_quant(vk_state *s, vk_ctx *cx, const rayo_dev_call *call,
                                  const vk_operands *ops)
{
    rayo_dtype dt = RAYO_DTYPE_OF(call->dtypes, 0);
    if (call->flags)
        return RAYO_E_UNSUPPORTED; /* weights are never transposed (rayo.h) */
    if (!s->subgroup_ok) {
        s->host->set_error(s->host, "vulkan: gemv with %s weights needs subgroup arithmetic",
                           rayo_dtype_name(dt));
        return RAYO_E_UNSUPPORTED;
    }
    size_t row_bytes;
    if (!rayo_dtype_row_bytes(dt, call->lda ? call->lda : call->n, &row_bytes) ||
        row_bytes > UINT32_MAX)
        return RAYO_E_UNSUPPORTED;  /* the binding holds less anyway */
    uint32_t unit = gemv_unit(dt), sg = s->subgroup_size;
    size_t units = (call->n + unit - 1) / unit;
    if (s->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && units / sg >= CPU_UNITS_MAX) {
        s->host->set_error(s->host, "vulkan: gemv rows of %zu elements are too long for a CPU device",
                           call->n);
        return RAYO_E_UNSUPPORTED;
    }
    vk_push pc = {
        .n = (uint32_t)call->n, .m = (uint32_t)call->m, .k = (uint32_t)row_bytes,
        .oa = ops->use[0]->byte_offset, .ob = ops->use[1]->word_offset,
        .oy = ops->use[3]->word_offset, .alpha = call->alpha, .beta = call->beta,
    };
    uint32_t wg = sg > GEMV_WG ? sg : GEMV_WG, rows_per_group = wg / sg;
    size_t groups = (call->m + rows_per_group - 1) / rows_per_group;
    uint32_t spec[2] = {wg, (uint32_t)dt};
    return record(s, cx, VK_SHADER_GEMV_QUANT, spec, 2, ops, &pc,
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

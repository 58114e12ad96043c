/* SPDX-License-Identifier: MIT */
/* dispatch.c - per-op chains of backends, resolved once at open.
 *
 * A chain lists the loaded backends that implement the op, in the order the
 * configuration asks for (op.NAME.order, else dispatch.order, then the
 * default order).  A call goes to the first link whose size window fits; a
 * link that says "unsupported" or fails passes the call on. */
#include "internal.h"
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_OFFLOAD_THRESHOLD ((size_t)262144)

/* Default order: GPUs, then native CPU backends by the plugin's priority (SIMD
 * before scalar), then software devices (lavapipe is slower than scalar). */
static int compare_default(const void *pa, const void *pb)
{
    const rayo_backend *a = *(rayo_backend *const *)pa, *b = *(rayo_backend *const *)pb;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->desc->priority != b->desc->priority)
        return a->desc->priority > b->desc->priority ? -1 : 1;
    return strcmp(a->name, b->name);
}

struct order_acc {
    rayo_context *ctx;
    rayo_backend **out;
    size_t count;
};

static void take_named(void *u, const char *name)
{
    struct order_acc *acc = u;
    rayo_backend *be = backend_by_name(acc->ctx, name);
    if (!be || !backend_active(be))
        return; /* said once by config_check_names */
    for (size_t i = 0; i < acc->count; i++)
        if (acc->out[i] == be)
            return;
    acc->out[acc->count++] = be;
}

rayo_kernel_fn backend_kernel(const rayo_backend *be, uint32_t op, uint32_t dtypes)
{
    if (dtypes == 0)
        return op < RAYO_OP_ID_LIMIT ? be->kernels[op] : NULL;
    int slot = op_combo_slot(op, dtypes);
    return slot < 0 ? NULL : be->combo_kernels[slot];
}

/* The chain of (op, dtypes): the all-f32 one by op id, the others by slot;
 * NULL for a combination the op does not list. */
static rayo_chain_t *chain_for(rayo_context *ctx, uint32_t op, uint32_t dtypes)
{
    if (dtypes == 0)
        return op < RAYO_OP_ID_LIMIT && op_combo_index(op, 0) >= 0 ? &ctx->chains[op] : NULL;
    int slot = op_combo_slot(op, dtypes);
    return slot < 0 ? NULL : &ctx->combo_chains[slot];
}

/* A setting of [op.NAME.COMBO], else of [op.NAME]; *where names the section. */
static const char *op_setting(rayo_context *ctx, const rayo_op_info *op, const rayo_combo_info *combo,
                              const char *key, char *where, size_t size)
{
    snprintf(where, size, "op.%s.%s", op->name, combo->name);
    const char *v = config_get(&ctx->cfg, where, key);
    if (!v) {
        snprintf(where, size, "op.%s", op->name);
        v = config_get(&ctx->cfg, where, key);
    }
    return v;
}

/* A threshold setting: digits, or "never" (the backend gets no
 * host-memory calls of the op).  NULL when valid, else what is wrong. */
static const char *parse_threshold(const char *v, size_t *out)
{
    if (!strcmp(v, "never")) {
        *out = SIZE_MAX;
        return NULL;
    }
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end)
        return "is not a size (digits only) or never";
    if (errno == ERANGE || n > SIZE_MAX)
        return "is too large";
    *out = (size_t)n;
    return NULL;
}

static bool is_threshold_key(const char *key)
{
    return !strncmp(key, "offload_threshold", 17) && (key[17] == '\0' || key[17] == '.');
}

/* Every threshold setting is checked once, so that a bad one is reported
 * once; lookups skip it. */
static void check_thresholds(rayo_context *ctx)
{
    for (size_t i = 0; i < ctx->cfg.count; i++) {
        const config_entry *e = &ctx->cfg.entries[i];
        size_t n;
        const char *problem = is_threshold_key(e->key) ? parse_threshold(e->value, &n) : NULL;
        if (problem)
            core_log(ctx, RAYO_LOG_WARN, "%s: [%s] %s = \"%s\" %s: ignored (the next threshold setting applies)",
                     e->origin, e->section, e->key, e->value, problem);
    }
}

/* A GPU link's threshold: the first valid one of, most specific first,
 * [op.NAME] offload_threshold.BACKEND, [op.NAME] offload_threshold,
 * [dispatch] offload_threshold.BACKEND, [dispatch] offload_threshold. */
static size_t offload_threshold(const rayo_context *ctx, const rayo_op_info *op, const rayo_backend *be)
{
    char section[64], key[96];
    snprintf(section, sizeof section, "op.%s", op->name);
    snprintf(key, sizeof key, "offload_threshold.%s", be->name);
    const char *sections[] = {section, section, "dispatch", "dispatch"};
    const char *keys[] = {key, "offload_threshold", key, "offload_threshold"};
    for (int i = 0; i < 4; i++) {
        const char *v = config_get(&ctx->cfg, sections[i], keys[i]);
        size_t n;
        if (v && !parse_threshold(v, &n))
            return n;
    }
    return DEFAULT_OFFLOAD_THRESHOLD;
}

/* RAYO_LOG=debug shows every chain as resolved ("matmul.f32.q4_k.f32: avx2 > scalar"). */
static void log_chain(rayo_context *ctx, const rayo_op_info *op, const rayo_combo_info *combo,
                      const rayo_chain_t *chain)
{
    if (ctx->log_level < RAYO_LOG_DEBUG)
        return;
    char links[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < chain->count && used < sizeof links; i++)
        used += (size_t)snprintf(links + used, sizeof links - used, "%s%s", i ? " > " : "",
                                 chain->links[i].be->name);
    core_log(ctx, RAYO_LOG_DEBUG, "chain %s%s%s: %s", op->name, combo->dtypes ? "." : "",
             combo->dtypes ? combo->name : "", chain->count ? links : "(no backend)");
}

static void resolve_chain(rayo_context *ctx, const rayo_op_info *op, const rayo_combo_info *combo,
                          rayo_backend **by_default, size_t n_default)
{
    char section[96];
    const char *order = op_setting(ctx, op, combo, "order", section, sizeof section);
    if (!order)
        order = config_get(&ctx->cfg, "dispatch", "order");

    rayo_backend *ordered[MAX_BACKENDS];
    struct order_acc acc = {ctx, ordered, 0};
    list_each_name(order, take_named, &acc);
    for (size_t i = 0; i < n_default; i++)
        take_named(&acc, by_default[i]->name);

    rayo_chain_t *chain = chain_for(ctx, op->id, combo->dtypes);
    char psection[96];
    const char *precision = op_setting(ctx, op, combo, "precision", psection, sizeof psection);
    chain->relaxed_default = precision && !strcmp(precision, "relaxed");
    if (precision && !chain->relaxed_default && strcmp(precision, "strict"))
        core_log(ctx, RAYO_LOG_WARN, "%s: [%s] precision = %s: not strict or relaxed, ignored",
                 config_origin(&ctx->cfg, psection, "precision"), psection, precision);
    chain->count = 0;
    for (size_t i = 0; i < acc.count; i++) {
        rayo_backend *be = ordered[i];
        rayo_kernel_fn fn = backend_kernel(be, op->id, combo->dtypes);
        if (!fn)
            continue; /* falls through to the next backend */
        rayo_link *l = &chain->links[chain->count++];
        l->be = be;
        l->fn = be->deferred ? backend_deferred_kernel : fn;
        l->arg = be->deferred ? (void *)be : be->state;
        l->min_size = be->kind == KIND_GPU ? offload_threshold(ctx, op, be) : 0;
        l->max_size = l->min_size == SIZE_MAX ? 0 : SIZE_MAX; /* never: no size fits */
    }
    log_chain(ctx, op, combo, chain);
}

static void resolve_op(rayo_context *ctx, const rayo_op_info *op, rayo_backend **by_default, size_t n_default)
{
    for (size_t c = 0; c < rayo_op_combo_count(op->id); c++)
        resolve_chain(ctx, op, rayo_op_combo(op->id, c), by_default, n_default);
}

void dispatch_resolve(rayo_context *ctx)
{
    rayo_backend *by_default[MAX_BACKENDS];
    size_t n = 0;
    for (size_t i = 0; i < ctx->backend_count; i++)
        if (backend_active(ctx->backends[i]))
            by_default[n++] = ctx->backends[i];
    qsort(by_default, n, sizeof by_default[0], compare_default);
    for (size_t i = 0; i < n; i++)
        by_default[i]->rank = (unsigned)i;

    check_thresholds(ctx);
    for (size_t i = 0; i < rayo_op_count(); i++)
        resolve_op(ctx, rayo_op_at(i), by_default, n);
}

/* A kernel of be returned st: its own message stands where it gave one,
 * else the core says so (no earlier call's text is left behind). */
static rayo_status kernel_failed(const rayo_backend *be, const rayo_call *call, rayo_status st)
{
    if (!rayo__take_plugin_message())
        rayo__fail(st, "%s: backend %s returned %s without a reason", rayo_op_by_id(call->op)->name, be->name,
                  rayo_strerror(st));
    return st;
}

/* Says what a failed link did (the call then passes on); a lost device
 * takes its backend out of every chain of this context. */
static void note_failure(rayo_context *ctx, const rayo_link *l, const rayo_call *call, rayo_status st)
{
    const char *op = rayo_op_by_id(call->op)->name;
    if (st == RAYO_E_UNSUPPORTED) {
        core_log(ctx, RAYO_LOG_DEBUG, "%s: %s does not support this call, passing it on", op, l->be->name);
    } else if (st == RAYO_E_DEVICE_LOST) {
        atomic_store(&l->be->lost, true);
        core_log(ctx, RAYO_LOG_ERROR, "%s: device lost (%s); backend disabled for this context",
                 l->be->name, rayo_last_error());
    } else {
        core_log(ctx, RAYO_LOG_WARN, "%s on %s failed: %s: %s; passing the call on", op, l->be->name,
                 rayo_strerror(st), rayo_last_error());
    }
}

/* Runs one link; true when the call is done. */
static bool try_link(rayo_context *ctx, const rayo_link *l, const rayo_call *call, rayo_status *st)
{
    if (atomic_load_explicit(&l->be->lost, memory_order_relaxed))
        return false;
    rayo__take_plugin_message();
    *st = l->fn(l->arg, call);
    if (*st == RAYO_OK)
        return true;
    kernel_failed(l->be, call, *st);
    note_failure(ctx, l, call, *st);
    return false;
}

/* After the first link failed (or none fits): the other links whose window
 * fits, then those whose window does not - a backend outside its window
 * still beats failing the call. */
rayo_status __attribute__((noinline))
dispatch_fallback(rayo_context *ctx, const rayo_chain_t *chain, const rayo_call *call, const rayo_op_info *op,
                  size_t first_tried, rayo_status st, size_t size)
{
    bool any_tried = first_tried < chain->count;
    if (any_tried) {
        kernel_failed(chain->links[first_tried].be, call, st);
        note_failure(ctx, &chain->links[first_tried], call, st);
    }
    for (size_t i = first_tried + 1; i < chain->count; i++)
        if (link_fits(&chain->links[i], size) && try_link(ctx, &chain->links[i], call, &st))
            return RAYO_OK;
    for (size_t i = 0; i < chain->count; i++) {
        if (link_fits(&chain->links[i], size))
            continue;
        any_tried = true;
        if (try_link(ctx, &chain->links[i], call, &st))
            return RAYO_OK;
    }
    if (!any_tried && call->dtypes)
        return rayo__fail(RAYO_E_NO_BACKEND, "%s: no loaded backend implements dtypes %s (see rayo-info)", op->name,
                         rayo_op_combo_find(op->id, call->dtypes)->name);
    if (!any_tried)
        return rayo__fail(RAYO_E_NO_BACKEND, "%s: no loaded backend implements this op (see rayo-info)", op->name);
    if (st == RAYO_E_UNSUPPORTED)
        return rayo__fail(RAYO_E_NO_BACKEND, "%s: no loaded backend supports these parameters", op->name);
    return st;
}

rayo_status __attribute__((noinline))
dispatch_special(rayo_context *ctx, const rayo_call *call, const rayo_op_info *op)
{
    const rayo_chain_t *chain = chain_for(ctx, call->op, call->dtypes); /* listed: validated */
    if (call->precision != RAYO_PRECISION_DEFAULT || !chain->relaxed_default)
        return dispatch_chain(ctx, chain, call, op, op->sig);
    rayo_call relaxed = *call; /* a call from an older header is full-size here: validated */
    relaxed.struct_size = sizeof relaxed;
    relaxed.precision = RAYO_PRECISION_RELAXED;
    return dispatch_chain(ctx, chain, &relaxed, op, op->sig);
}

RAYO_API rayo_status rayo_run_on(rayo_context *ctx, const char *backend, const rayo_call *call)
{
    if (!ctx || !backend)
        return rayo__fail(RAYO_E_INVALID, "context or backend name is NULL");
    rayo_backend *be = backend_by_name(ctx, backend);
    if (!be || !backend_usable(be))
        return rayo__fail(RAYO_E_NOT_FOUND, "backend \"%s\" is not loaded", backend);
    const rayo_op_info *op;
    rayo_status st = call_validate(call, &op);
    if (st != RAYO_OK)
        return st;
    rayo_kernel_fn fn = backend_kernel(be, call->op, call->dtypes);
    if (!fn)
        return rayo__fail(RAYO_E_UNSUPPORTED, "backend %s does not implement %s%s%s", backend, op->name,
                         call->dtypes ? " with dtypes " : "",
                         call->dtypes ? rayo_op_combo_find(op->id, call->dtypes)->name : "");
    if (call_is_empty(call, op->sig)) {
        call_write_empty(call);
        return RAYO_OK;
    }
    rayo__take_plugin_message();
    st = fn(be->state, call);
    if (st == RAYO_E_DEVICE_LOST)
        atomic_store(&be->lost, true);
    return st == RAYO_OK ? st : kernel_failed(be, call, st);
}

/* The chain of an op and combination, or NULL. */
static const rayo_chain_t *chain_of(const rayo_context *ctx, rayo_op op, uint32_t dtypes)
{
    return ctx ? chain_for((rayo_context *)ctx, op, dtypes) : NULL;
}

RAYO_API size_t rayo_chain_count(const rayo_context *ctx, rayo_op op, uint32_t dtypes)
{
    const rayo_chain_t *chain = chain_of(ctx, op, dtypes);
    return chain ? chain->count : 0;
}

RAYO_API rayo_status rayo_chain_link(const rayo_context *ctx, rayo_op op, uint32_t dtypes, size_t index,
                                     rayo_link_info *info)
{
    const rayo_chain_t *chain = chain_of(ctx, op, dtypes);
    if (!info || info->struct_size < offsetof(rayo_link_info, max_size) + sizeof info->max_size)
        return rayo__fail(RAYO_E_INVALID, "rayo_chain_link: info is NULL or its struct_size is not set");
    if (!chain || index >= chain->count)
        return rayo__fail(RAYO_E_NOT_FOUND, "no link %zu in that chain", index);
    rayo_link_info full = {sizeof full, chain->links[index].be->name, chain->links[index].min_size,
                           chain->links[index].max_size};
    size_t size = info->struct_size < sizeof full ? info->struct_size : sizeof full;
    memcpy((char *)info + sizeof info->struct_size, (const char *)&full + sizeof full.struct_size,
           size - sizeof full.struct_size);
    return RAYO_OK;
}

RAYO_API const char *rayo_backend_for(const rayo_context *ctx, rayo_op op, uint32_t dtypes, size_t size)
{
    const rayo_chain_t *chain = chain_of(ctx, op, dtypes);
    if (!chain)
        return NULL;
    for (size_t i = 0; i < chain->count; i++) {
        const rayo_link *l = &chain->links[i];
        /* a device started at first use is started here, so the answer is
         * the backend a call of this size would really run on */
        if (size >= l->min_size && size <= l->max_size && backend_start(l->be) == RAYO_OK &&
            !atomic_load(&l->be->lost) && !atomic_load(&l->be->demoted))
            return l->be->name;
    }
    return chain->count ? chain->links[0].be->name : NULL;
}

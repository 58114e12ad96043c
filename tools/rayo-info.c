/* rayo-info - what rayo found on this machine and why.
 *
 *   rayo-info                 config files, plugins (with the reason for each
 *                             one not used), devices, the dispatch chain of every op
 *   rayo-info --json          the same, as JSON
 *   rayo-info --explain OP SIZE   which backend a call would go to, and why
 *   rayo-info --ops           the op list with accuracy contracts
 */
#include "rayo.h"
#include "tool-version.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *status_name(rayo_backend_status s)
{
    switch (s) {
    case RAYO_BACKEND_LOADED: return "loaded";
    case RAYO_BACKEND_REJECTED: return "rejected";
    case RAYO_BACKEND_UNAVAILABLE: return "unavailable";
    case RAYO_BACKEND_DISABLED: return "disabled";
    case RAYO_BACKEND_SHADOWED: return "shadowed";
    }
    return "?";
}

static const char *device_type_name(rayo_device_type t)
{
    switch (t) {
    case RAYO_DEVICE_CPU: return "cpu";
    case RAYO_DEVICE_GPU: return "gpu";
    case RAYO_DEVICE_SOFTWARE: return "software";
    default: return "other";
    }
}

static void json_string(const char *s)
{
    putchar('"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* The links of the chain of (op, dtypes), up to max. */
static size_t get_links(const rayo_context *ctx, rayo_op op, uint32_t dtypes, rayo_link_info *links, size_t max)
{
    size_t n = rayo_chain_count(ctx, op, dtypes);
    for (size_t i = 0; i < n && i < max; i++) {
        links[i].struct_size = sizeof links[i];
        if (rayo_chain_link(ctx, op, dtypes, i, &links[i]) != RAYO_OK)
            return i;
    }
    return n < max ? n : max;
}

/* The name a chain goes by: the op's name for its all-f32 combination,
 * else "op.combination" ("matmul.f32.q4_k.f32"). */
static const char *chain_name(const rayo_combo_info *c, char *buf, size_t size)
{
    const rayo_op_info *op = rayo_op_by_id(c->op);
    if (c->dtypes == 0)
        return op->name;
    snprintf(buf, size, "%s.%s", op->name, c->name);
    return buf;
}

static void print_window(const rayo_link_info *l)
{
    if (l->max_size == 0)
        printf("[never]");
    else if (l->min_size)
        printf("[size >= %zu]", l->min_size);
}

/* Is setting `index` overridden by a later one of the same section and key? */
static bool overridden(const rayo_context *ctx, size_t index)
{
    const char *sec, *key, *later_sec, *later_key;
    rayo_config_setting(ctx, index, &sec, &key, NULL);
    for (size_t j = index + 1; j < rayo_config_setting_count(ctx); j++)
        if (rayo_config_setting(ctx, j, &later_sec, &later_key, NULL) && !strcmp(sec, later_sec) &&
            !strcmp(key, later_key))
            return true;
    return false;
}

/* ---- text ---- */
/* Every setting read and where it came from (file:line, env VAR). */
static void text_settings(const rayo_context *ctx)
{
    size_t n = rayo_config_setting_count(ctx);
    if (!n)
        return;
    printf("Settings (in order read; an overridden one is marked):\n");
    for (size_t i = 0; i < n; i++) {
        const char *sec, *key, *value;
        const char *origin = rayo_config_setting(ctx, i, &sec, &key, &value);
        char setting[160];
        snprintf(setting, sizeof setting, "[%s] %s = %s", sec, key, value);
        printf("  %-48s %s%s\n", setting, origin, overridden(ctx, i) ? "  (overridden)" : "");
    }
}

static void text_config(const rayo_context *ctx)
{
    printf("Config files (in order read; later settings win):\n");
    size_t n = rayo_config_file_count(ctx);
    for (size_t i = 0; i < n; i++) {
        const char *status;
        const char *path = rayo_config_file(ctx, i, &status);
        printf("  %-50s %s\n", path, status);
    }
    if (!n)
        printf("  (none)\n");
    text_settings(ctx);
    printf("Plugin search path: %s\n", rayo_plugin_search_path(ctx));
    printf("Threads: %u\n\n", rayo_thread_count(ctx));
}

static void text_backends(const rayo_context *ctx)
{
    printf("Backends:\n");
    size_t n = rayo_backend_count(ctx);
    for (size_t i = 0; i < n; i++) {
        rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
        if (rayo_backend_get(ctx, i, &b) != RAYO_OK)
            continue;
        printf("  %-8s %-11s", b.name, status_name(b.status));
        if (b.version[0])
            printf(" version %s, ABI %u.%u", b.version, b.abi_major, b.abi_minor);
        printf("\n           file: %s\n", b.path);
        if (b.status == RAYO_BACKEND_LOADED) {
            printf("           device: %s (%s), %zu ops, default position %u\n", b.device,
                   device_type_name(b.device_type), b.op_count, b.rank + 1);
            for (size_t d = 0; d < b.device_count; d++)
                printf("           device %zu: %s\n", d, rayo_backend_device_name(ctx, i, d));
        }
        if (b.reason && b.reason[0])
            printf("           reason: %s\n", b.reason);
    }
    if (!n)
        printf("  (no plugin files found)\n");
    printf("\n");
}

/* One chain: an op and dtype combination, its name and its links. */
typedef struct chain_view {
    const char *name;
    size_t count;
    rayo_link_info links[32];
} chain_view;

/* Calls show(view, index) for the chain of every op and combination, in
 * list order (index counts the chains shown before). */
static void each_chain(const rayo_context *ctx, void (*show)(const chain_view *, size_t))
{
    size_t index = 0;
    for (size_t i = 0; i < rayo_op_count(); i++) {
        rayo_op op = rayo_op_at(i)->id;
        for (size_t c = 0; c < rayo_op_combo_count(op); c++) {
            const rayo_combo_info *combo = rayo_op_combo(op, c);
            char name[96];
            chain_view v;
            v.name = chain_name(combo, name, sizeof name);
            v.count = get_links(ctx, op, combo->dtypes, v.links, 32);
            show(&v, index++);
        }
    }
}

static void text_chain(const chain_view *v, size_t index)
{
    (void)index;
    printf("  %-12s ", v->name);
    if (!v->count)
        printf("(no backend)");
    for (size_t j = 0; j < v->count; j++) {
        printf("%s%s", j ? " > " : "", v->links[j].backend);
        print_window(&v->links[j]);
    }
    printf("\n");
}

static void text_dispatch(const rayo_context *ctx)
{
    printf("Dispatch, per op and dtype combination (backends tried in order; a GPU only\n"
           "from its offload threshold):\n");
    each_chain(ctx, text_chain);
}

/* one key per op and combination: "matmul" (all f32), "matmul.f32.q4_k.f32" */
static void json_chain(const chain_view *v, size_t index)
{
    printf("%s\n    \"%s\": [", index ? "," : "", v->name);
    for (size_t j = 0; j < v->count; j++)
        printf("%s{\"backend\": \"%s\", \"min_size\": %zu}", j ? ", " : "", v->links[j].backend,
               v->links[j].min_size);
    printf("]");
}

/* ---- json ---- */
static void json_output(const rayo_context *ctx)
{
    printf("{\n  \"version\": ");
    json_string(rayo_version());
    printf(",\n  \"threads\": %u,\n  \"plugin_search_path\": ", rayo_thread_count(ctx));
    json_string(rayo_plugin_search_path(ctx));
    printf(",\n  \"config_files\": [");
    size_t n = rayo_config_file_count(ctx);
    for (size_t i = 0; i < n; i++) {
        const char *status;
        const char *path = rayo_config_file(ctx, i, &status);
        printf("%s\n    {\"path\": ", i ? "," : "");
        json_string(path);
        printf(", \"status\": ");
        json_string(status);
        printf("}");
    }
    printf("\n  ],\n  \"settings\": [");
    n = rayo_config_setting_count(ctx);
    for (size_t i = 0; i < n; i++) {
        const char *sec, *key, *value;
        const char *origin = rayo_config_setting(ctx, i, &sec, &key, &value);
        printf("%s\n    {\"section\": ", i ? "," : "");
        json_string(sec);
        printf(", \"key\": ");
        json_string(key);
        printf(", \"value\": ");
        json_string(value);
        printf(", \"origin\": ");
        json_string(origin);
        printf(", \"overridden\": %s}", overridden(ctx, i) ? "true" : "false");
    }
    printf("\n  ],\n  \"backends\": [");
    n = rayo_backend_count(ctx);
    for (size_t i = 0; i < n; i++) {
        rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
        rayo_backend_get(ctx, i, &b);
        printf("%s\n    {\"name\": ", i ? "," : "");
        json_string(b.name);
        printf(", \"status\": \"%s\", \"path\": ", status_name(b.status));
        json_string(b.path);
        printf(", \"version\": ");
        json_string(b.version);
        printf(", \"abi\": \"%u.%u\", \"reason\": ", b.abi_major, b.abi_minor);
        json_string(b.reason);
        printf(", \"device\": ");
        json_string(b.device);
        printf(", \"device_type\": \"%s\", \"ops\": %zu, \"devices\": [",
               device_type_name(b.device_type), b.op_count);
        for (size_t d = 0; d < b.device_count; d++) {
            printf("%s", d ? ", " : "");
            json_string(rayo_backend_device_name(ctx, i, d));
        }
        printf("]}");
    }
    printf("\n  ],\n  \"dispatch\": {");
    each_chain(ctx, json_chain);
    printf("\n  }\n}\n");
}

/* A valid threshold value, as the core reads it: digits or "never". */
static bool threshold_valid(const char *v)
{
    if (!strcmp(v, "never"))
        return true;
    if (!*v)
        return false;
    for (; *v; v++)
        if (*v < '0' || *v > '9')
            return false;
    return true;
}

/* Which setting gave a GPU link its threshold, in the order rayo.conf(5)
 * gives: [op.NAME] offload_threshold.BACKEND, [op.NAME] offload_threshold,
 * [dispatch] offload_threshold.BACKEND, [dispatch] offload_threshold. */
static void explain_threshold(const rayo_context *ctx, const char *op, const char *backend, size_t threshold)
{
    char section[64], key[96];
    snprintf(section, sizeof section, "op.%s", op);
    snprintf(key, sizeof key, "offload_threshold.%s", backend);
    const char *sections[] = {section, section, "dispatch", "dispatch"};
    const char *keys[] = {key, "offload_threshold", key, "offload_threshold"};
    for (int i = 0; i < 4; i++) {
        const char *v = rayo_config_get(ctx, sections[i], keys[i]);
        if (v && threshold_valid(v)) {
            printf("     threshold from [%s] %s = %s, set by %s\n", sections[i], keys[i], v,
                   rayo_config_origin(ctx, sections[i], keys[i]));
            return;
        }
    }
    printf("     threshold %zu: the built-in default (no offload_threshold setting)\n", threshold);
}

static int explain(const rayo_context *ctx, const char *op_name, const char *size_text)
{
    const rayo_op_info *op = rayo_op_by_name(op_name);
    if (!op) {
        fprintf(stderr, "rayo-info: unknown op \"%s\" (rayo-info --ops lists them)\n", op_name);
        return 2;
    }
    char *end;
    unsigned long long size = strtoull(size_text, &end, 10);
    if (*end || end == size_text) {
        fprintf(stderr, "rayo-info: SIZE must be a number, got \"%s\"\n", size_text);
        return 2;
    }
    printf("%s: %s\n", op->name, op->summary);
    printf("work size %llu (n for vector ops, rows*cols for row ops, m*n*k for matmul)\n", size);
    const char *order = rayo_config_get(ctx, "dispatch", "order");
    char section[64];
    snprintf(section, sizeof section, "op.%s", op->name);
    const char *op_order = rayo_config_get(ctx, section, "order");
    if (op_order)
        printf("order from [%s] order = %s, set by %s\n", section, op_order,
               rayo_config_origin(ctx, section, "order"));
    else if (order)
        printf("order from [dispatch] order = %s, set by %s\n", order, rayo_config_origin(ctx, "dispatch", "order"));
    else
        printf("default order: GPUs, then SIMD CPU backends, then scalar, then software devices\n");
    rayo_link_info links[32];
    size_t n = get_links(ctx, op->id, 0, links, 32);
    const char *chosen = rayo_backend_for(ctx, op->id, 0, (size_t)size);
    for (size_t i = 0; i < n && i < 32; i++) {
        bool fits = size >= links[i].min_size && size <= links[i].max_size;
        printf("  %zu. %-8s %s", i + 1, links[i].backend, fits ? "accepts this size" : "skipped:");
        if (links[i].max_size == 0)
            printf(" never gets host-memory calls of %s", op->name);
        else if (!fits)
            printf(" size below its offload threshold %zu", links[i].min_size);
        if (chosen && !strcmp(chosen, links[i].backend) && fits)
            printf("  <- runs the call; later links take over if it fails");
        printf("\n");
        if (links[i].min_size || links[i].max_size == 0)
            explain_threshold(ctx, op->name, links[i].backend, links[i].min_size);
    }
    if (!n)
        printf("no loaded backend implements %s\n", op->name);
    return 0;
}

static void list_ops(void)
{
    size_t count;
    count = rayo_op_count();
    printf("%-4s %-12s %-24s %s\n", "id", "op", "contract", "definition");
    for (size_t i = 0; i < count; i++) {
        char contract[64];
        if (rayo_op_at(i)->tol_rel == 0 && rayo_op_at(i)->tol_abs == 0)
            snprintf(contract, sizeof contract, "exact");
        else
            snprintf(contract, sizeof contract, "%.0e*%s+%.0e", rayo_op_at(i)->tol_rel,
                     rayo_op_at(i)->scale == RAYO_SCALE_SUM ? "sum|t|" : "|y|", rayo_op_at(i)->tol_abs);
        printf("%-4d %-12s %-24s %s\n", (int)rayo_op_at(i)->id, rayo_op_at(i)->name, contract, rayo_op_at(i)->summary);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: rayo-info [--json] [--explain OP SIZE] [--ops] [--help] [--version]\n"
               "Shows the config files rayo reads, the plugins it found (and why each unused\n"
               "one was not used), their devices, and which backend runs each op.\n"
               "Environment: RAYO_LOG=debug shows every step of loading.\n");
}

int main(int argc, char **argv)
{
    int json = 0;
    const char *explain_op = NULL, *explain_size = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--explain") && i + 2 < argc) {
            explain_op = argv[++i];
            explain_size = argv[++i];
        } else if (!strcmp(argv[i], "--ops")) {
            list_ops();
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            print_tool_version("rayo-info");
            return 0;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    rayo_context *ctx;
    rayo_options opts = {.struct_size = sizeof opts, .allow_no_backend = 1};
    rayo_status st = rayo_open(&ctx, &opts);
    if (st != RAYO_OK) {
        fprintf(stderr, "rayo-info: cannot open rayo: %s: %s\n", rayo_strerror(st), rayo_last_error());
        return 1;
    }
    int rc = 0;
    if (explain_op) {
        rc = explain(ctx, explain_op, explain_size);
    } else if (json) {
        json_output(ctx);
    } else {
        printf("rayo %s\n\n", rayo_version());
        text_config(ctx);
        text_backends(ctx);
        text_dispatch(ctx);
        if (rayo_backend_for(ctx, RAYO_OP_ADD, 0, 1) == NULL)
            printf("\nNo backend is loaded: every call will fail. The reasons are listed above.\n");
    }
    rayo_close(ctx);
    return rc;
}

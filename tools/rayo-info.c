/* SPDX-License-Identifier: MIT */
/* rayo-info - what rayo found on this machine and why.
 *
 *   rayo-info                 config files, plugins (with the reason for each
 *                             one not used), devices, the dispatch chain of every op
 *   rayo-info --json          the same, as JSON
 *   rayo-info --explain OP SIZE   which backend a call would go to, and why
 *                             (OP may name a dtype combination: matmul.f32.q4_k.f32)
 *   rayo-info --check         the configuration's problems; exit 1 if any
 *   rayo-info --ops           the op list with accuracy contracts
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "rayo.h"
#include "tool-version.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The warnings rayo said while opening (for --check and --json); they go
 * to stderr as well, as rayo would print them. */
#define MAX_WARNINGS 256
static char *warnings[MAX_WARNINGS];
static size_t warning_count, warnings_lost;

static void on_log(void *user, rayo_log_level level, const char *msg)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    (void)user;
    fprintf(stderr, "rayo: %s: %s\n", level <= RAYO_LOG_DEBUG ? names[level] : "?", msg);
    if (level > RAYO_LOG_WARN)
        return;
    if (warning_count < MAX_WARNINGS && (warnings[warning_count] = strdup(msg)))
        warning_count++;
    else
        warnings_lost++;
}

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
            if (b.device_flags & RAYO_DEVICE_FLUSHES_DENORMALS)
                printf("           note: the device may flush float32 denormals to zero (the contracts' "
                       "exception, rayo-ops.h)\n");
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
        printf(", \"device_type\": \"%s\", \"flushes_denormals\": %s, \"ops\": %zu, \"devices\": [",
               device_type_name(b.device_type),
               b.device_flags & RAYO_DEVICE_FLUSHES_DENORMALS ? "true" : "false", b.op_count);
        for (size_t d = 0; d < b.device_count; d++) {
            printf("%s", d ? ", " : "");
            json_string(rayo_backend_device_name(ctx, i, d));
        }
        printf("]}");
    }
    printf("\n  ],\n  \"dispatch\": {");
    each_chain(ctx, json_chain);
    printf("\n  },\n  \"warnings\": [");
    for (size_t i = 0; i < warning_count; i++) {
        printf("%s\n    ", i ? "," : "");
        json_string(warnings[i]);
    }
    printf("\n  ]\n}\n");
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

/* The chain OP names: "matmul" (its all-f32 combination) or
 * "matmul.f32.q4_k.f32", as the dispatch list names chains; NULL if none. */
static const rayo_combo_info *find_chain(const char *name)
{
    char op_name[64];
    const char *dot = strchr(name, '.');
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    if (len >= sizeof op_name)
        return NULL;
    memcpy(op_name, name, len);
    op_name[len] = '\0';
    const rayo_op_info *op = rayo_op_by_name(op_name);
    for (size_t c = 0; op && c < rayo_op_combo_count(op->id); c++) {
        const rayo_combo_info *combo = rayo_op_combo(op->id, c);
        if (dot ? !strcmp(combo->name, dot + 1) : combo->dtypes == 0)
            return combo;
    }
    return NULL;
}

/* Which setting ordered the chain: [op.NAME.COMBO], [op.NAME], [dispatch]. */
static void explain_order(const rayo_context *ctx, const rayo_op_info *op, const rayo_combo_info *combo)
{
    char sections[3][96];
    snprintf(sections[0], sizeof sections[0], "op.%s.%s", op->name, combo->name);
    snprintf(sections[1], sizeof sections[1], "op.%s", op->name);
    snprintf(sections[2], sizeof sections[2], "dispatch");
    for (int i = 0; i < 3; i++) {
        const char *order = rayo_config_get(ctx, sections[i], "order");
        if (order) {
            printf("order from [%s] order = %s, set by %s\n", sections[i], order,
                   rayo_config_origin(ctx, sections[i], "order"));
            return;
        }
    }
    printf("default order: GPUs, then SIMD CPU backends, then scalar, then software devices\n");
}

static void explain_link(const rayo_context *ctx, const rayo_op_info *op, const rayo_link_info *l,
                         unsigned long long size, bool runs)
{
    bool fits = size >= l->min_size && size <= l->max_size;
    printf("%-8s %s", l->backend, fits ? "accepts this size" : "skipped:");
    if (l->max_size == 0)
        printf(" never gets host-memory calls of %s", op->name);
    else if (!fits)
        printf(" size below its offload threshold %zu", l->min_size);
    if (runs && fits)
        printf("  <- runs the call; later links take over if it fails");
    printf("\n");
    if (l->min_size || l->max_size == 0)
        explain_threshold(ctx, op->name, l->backend, l->min_size);
}

static int explain(const rayo_context *ctx, const char *chain, const char *size_text)
{
    const rayo_combo_info *combo = find_chain(chain);
    if (!combo) {
        fprintf(stderr, "rayo-info: unknown op or dtype combination \"%s\" (rayo-info --ops lists the ops, "
                        "rayo-info lists every chain: matmul, matmul.f32.q4_k.f32, ...)\n", chain);
        return 2;
    }
    const rayo_op_info *op = rayo_op_by_id(combo->op);
    char *end;
    unsigned long long size = strtoull(size_text, &end, 10);
    if (*end || end == size_text) {
        fprintf(stderr, "rayo-info: SIZE must be a number, got \"%s\"\n", size_text);
        return 2;
    }
    printf("%s: %s\n", chain, op->summary);
    printf("work size %llu (n for vector ops, rows*cols for row ops, m*n*k for matmul)\n", size);
    explain_order(ctx, op, combo);
    rayo_link_info links[32];
    size_t n = get_links(ctx, op->id, combo->dtypes, links, 32);
    const char *chosen = rayo_backend_for(ctx, op->id, combo->dtypes, (size_t)size);
    for (size_t i = 0; i < n; i++) {
        printf("  %zu. ", i + 1);
        explain_link(ctx, op, &links[i], size, chosen && !strcmp(chosen, links[i].backend));
    }
    if (!n)
        printf("no loaded backend implements %s\n", chain);
    return 0;
}

/* --check: the warnings said while opening are the configuration's problems. */
static int check_summary(void)
{
    size_t total = warning_count + warnings_lost;
    if (!total) {
        printf("rayo-info --check: no problems found\n");
        return 0;
    }
    printf("rayo-info --check: %zu problem%s (the warnings above)\n", total, total == 1 ? "" : "s");
    return 1;
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
    fprintf(f, "usage: rayo-info [--json] [--check] [--explain OP SIZE] [--ops] [--help] [--version]\n"
               "Shows the config files rayo reads, the plugins it found (and why each unused\n"
               "one was not used), their devices, and which backend runs each op.\n"
               "  --check            report the configuration's problems; exit 1 if there are any\n"
               "  --explain OP SIZE  which backend runs OP (matmul, or a chain as listed:\n"
               "                     matmul.f32.q4_k.f32) at work size SIZE, and why\n"
               "Environment: RAYO_LOG=debug shows every step of loading.\n");
}

/* --explain without its two arguments: say which is missing. */
static int explain_missing(int given, char **args)
{
    if (given == 0)
        fprintf(stderr, "rayo-info: --explain needs an op and a work size, e.g. --explain matmul 1000000 "
                        "(rayo-info --ops lists the ops)\n");
    else
        fprintf(stderr, "rayo-info: --explain %s needs a work size too, e.g. --explain %s 1000000\n", args[0],
                args[0]);
    return 2;
}

int main(int argc, char **argv)
{
    int json = 0, check = 0;
    const char *explain_op = NULL, *explain_size = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--check")) {
            check = 1;
        } else if (!strcmp(argv[i], "--explain")) {
            if (i + 2 >= argc)
                return explain_missing(argc - i - 1, argv + i + 1);
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
    /* Every device started at open, as an application's first use would:
     * its chains as they will run, every plugin's keys checked. */
    rayo_options opts = {.struct_size = sizeof opts, .allow_no_backend = 1, .log = on_log,
                         .settings = "[rayo]\nlazy_init = no\n"};
    rayo_status st = rayo_open(&ctx, &opts);
    if (st != RAYO_OK) {
        fprintf(stderr, "rayo-info: cannot open rayo: %s: %s\n", rayo_strerror(st), rayo_last_error());
        return 1;
    }
    int rc = 0;
    if (check) {
        rc = check_summary();
    } else if (explain_op) {
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
    for (size_t i = 0; i < warning_count; i++)
        free(warnings[i]);
    return rc;
}

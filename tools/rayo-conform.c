/* SPDX-License-Identifier: MIT */
/* rayo-conform - checks backends against the float64 reference and the
 * accuracy contract of every op (rayo-ops.h).
 *
 *   rayo-conform [--quick] [--long] [--skip [BACKEND:]GROUPS]... [--op NAME]... [--dtype NAME]
 *                [--seed N] [--progress SECONDS] [--verbose] [PLUGIN.so ...]
 *
 * Without files: every loaded backend.  With files: only the backends loaded
 * from those files (a file the core refuses is a failure, with its reason).
 * Exit status: 0 all conform, 1 a failure, 2 a usage error.
 */
#define _XOPEN_SOURCE 700
#include "conform.h"
#include "rayo-dtype.h"
#include "tool-version.h"

#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_TARGETS 32

typedef struct args {
    const char *self;          /* how to run this program again (for the replay line) */
    int quick, long_tier;
    const char *skips[16];     /* --skip values: "GROUPS" or "BACKEND:GROUPS" */
    size_t skip_count;
    int verbose;
    double progress_every;     /* --progress: seconds between progress lines off a terminal */
    int have_seed;
    uint64_t seed;
    const char *ops[256];
    size_t op_count;
    int have_dtype;
    rayo_dtype dtype;          /* --dtype: only the cases of this dtype */
    char *files[MAX_TARGETS];  /* absolute paths */
    size_t file_count;
} args;

typedef struct target {
    char name[64];
    char path[PATH_MAX];
    int flushes_denormals; /* the device's documented exception (rayo.h) */
} target;

/* One table cell's outcome, kept for the details after the table. */
typedef struct outcome {
    const rayo_op_info *op;
    const target *backend;
    conform_result result;
    double seconds;   /* how long its cases took */
} outcome;

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: rayo-conform [OPTION]... [PLUGIN.so]...\n"
            "Checks rayo backends against a float64 reference and each op's accuracy\n"
            "contract, on fresh random inputs of many sizes, edge values (NaN, Inf, -0),\n"
            "unaligned pointers, and guards against writes outside the outputs.\n"
            "\n"
            "Without PLUGIN.so: every backend the core loads.  With files: those plugins only.\n"
            "\n"
            "  --quick      leave out most of the largest sizes (2^20 elements, 500^3 matmul)\n"
            "               and run each relaxed attention case at one alignment, not two\n"
            "  --long       add the long tier: sums and products of up to 1e8 terms, rows of\n"
            "               17.8M (several GB of memory, minutes)\n"
            "  --skip [BACKEND:]LIST  leave out these groups of cases, on every backend or\n"
            "               on BACKEND only (comma-separated; counted as skipped, never as\n"
            "               passed): long-reduction offset overflow subnormal eps0 affine\n"
            "               regression nan-rows cancel glu-tail attn-large x-range\n"
            "  --op NAME    check only this op (repeat, or separate names by commas)\n"
            "  --dtype NAME only the cases with an operand in this dtype (f16, bf16, q8_0,\n"
            "               q4_0, q4_k, q6_k, i32), or, for f32, with every operand in f32:\n"
            "               every case of one typed kernel\n"
            "  --seed N     inputs from this seed (default: RAYO_CONFORM_SEED, else fresh)\n"
            "  --progress SECONDS  when stderr is not a terminal, a progress line every\n"
            "               SECONDS while one op runs (default 10)\n"
            "  --verbose    after each op, the number of cases, their seconds and where the\n"
            "               largest error was\n"
            "  --help       this text\n"
            "  --version    the version of rayo-conform and of the librayo it runs with\n"
            "\n"
            "Exit status: 0 every backend conforms, 1 a check failed, 2 usage error.\n");
}

static int usage_error(const char *fmt, const char *what)
{
    fputs("rayo-conform: ", stderr);
    fprintf(stderr, fmt, what);
    fputs("\nTry 'rayo-conform --help'.\n", stderr);
    return 2;
}

static int add_ops(args *a, char *list)
{
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        if (!rayo_op_by_name(name))
            return usage_error("unknown op '%s' (rayo-info --ops lists them)", name);
        if (a->op_count < sizeof a->ops / sizeof a->ops[0])
            a->ops[a->op_count++] = name;
    }
    return 0;
}

static int parse_dtype(const char *name, rayo_dtype *out)
{
    for (int dt = 0; dt < RAYO_DTYPE_LIMIT; dt++) {
        const char *n = rayo_dtype_name((rayo_dtype)dt);
        if (n && !strcmp(n, name)) {
            *out = (rayo_dtype)dt;
            return 0;
        }
    }
    return -1;
}

static int parse_args(int argc, char **argv, args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(s, "--version")) {
            print_tool_version("rayo-conform");
            exit(0);
        } else if (!strcmp(s, "--quick")) {
            a->quick = 1;
        } else if (!strcmp(s, "--long")) {
            a->long_tier = 1;
        } else if (!strcmp(s, "--verbose") || !strcmp(s, "-v")) {
            a->verbose = 1;
        } else if (!strcmp(s, "--op") || !strcmp(s, "--seed") || !strcmp(s, "--skip") ||
                   !strcmp(s, "--dtype") || !strcmp(s, "--progress")) {
            if (i + 1 == argc)
                return usage_error("%s needs a value", s);
            char *v = argv[++i];
            if (!strcmp(s, "--skip")) {
                if (a->skip_count == sizeof a->skips / sizeof a->skips[0])
                    return usage_error("too many %s options", s);
                a->skips[a->skip_count++] = v;
            } else if (!strcmp(s, "--op")) {
                if (add_ops(a, v))
                    return 2;
            } else if (!strcmp(s, "--dtype")) {
                if (parse_dtype(v, &a->dtype))
                    return usage_error("unknown dtype '%s' (f32, f16, bf16, i32, q8_0, q4_0, q4_k, q6_k)", v);
                a->have_dtype = 1;
            } else if (!strcmp(s, "--progress")) {
                char *end;
                a->progress_every = strtod(v, &end);
                if (!*v || *end || !(a->progress_every >= 0))
                    return usage_error("--progress wants a number of seconds, not '%s'", v);
            } else {
                char *end;
                a->seed = strtoull(v, &end, 0);
                if (!*v || *end)
                    return usage_error("--seed wants a number, not '%s'", v);
                a->have_seed = 1;
            }
        } else if (s[0] == '-' && s[1]) {
            return usage_error("unknown option '%s'", s);
        } else {
            if (a->file_count == MAX_TARGETS)
                return usage_error("too many plugin files (at most %s)", "32");
            char *abs = realpath(s, NULL);
            if (!abs) {
                fprintf(stderr, "rayo-conform: %s: no such plugin file\n", s);
                return 2;
            }
            if (strchr(abs, ':')) {
                free(abs);
                return usage_error("%s: a plugin path may not contain ':'", s);
            }
            a->files[a->file_count++] = abs;
        }
    }
    return 0;
}

/* "[plugins]\nload = FILE:FILE\n", or NULL without files. */
static char *load_settings(const args *a)
{
    if (!a->file_count)
        return NULL;
    size_t len = 32;
    for (size_t i = 0; i < a->file_count; i++)
        len += strlen(a->files[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    strcpy(s, "[plugins]\nload = ");
    for (size_t i = 0; i < a->file_count; i++) {
        if (i)
            strcat(s, ":");
        strcat(s, a->files[i]);
    }
    strcat(s, "\n");
    return s;
}

static void set_target(target *t, const rayo_backend_info *info)
{
    snprintf(t->name, sizeof t->name, "%s", info->name);
    snprintf(t->path, sizeof t->path, "%s", info->path);
    t->flushes_denormals = (info->device_flags & RAYO_DEVICE_FLUSHES_DENORMALS) != 0;
}

/* The backends to check; returns their number, or 0 after printing why. */
static size_t choose_targets(rayo_context *ctx, const args *a, target *out)
{
    size_t n = 0, count = rayo_backend_count(ctx);
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    if (!a->file_count) {
        for (size_t i = 0; i < count && n < MAX_TARGETS; i++)
            if (rayo_backend_get(ctx, i, &info) == RAYO_OK && info.status == RAYO_BACKEND_LOADED)
                set_target(&out[n++], &info);
        if (!n)
            fprintf(stderr, "rayo-conform: no backend is loaded (rayo-info says why)\n");
        return n;
    }
    for (size_t f = 0; f < a->file_count; f++) {
        int found = 0;
        for (size_t i = 0; i < count && !found; i++) {
            if (rayo_backend_get(ctx, i, &info) != RAYO_OK || !info.path)
                continue;
            char *p = realpath(info.path, NULL);
            found = p && !strcmp(p, a->files[f]);
            free(p);
        }
        if (!found) {
            fprintf(stderr, "rayo-conform: %s: the core did not try to load this file\n", a->files[f]);
            return 0;
        }
        if (info.status != RAYO_BACKEND_LOADED) {
            fprintf(stderr, "rayo-conform: %s was not loaded: %s\n", a->files[f],
                    info.reason && *info.reason ? info.reason : "no reason given");
            return 0;
        }
        set_target(&out[n++], &info);
    }
    return n;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- progress: a line kept up to date on a terminal, else a line every
 * --progress seconds while one op runs (a log must not look hung) ---- */
typedef struct progress {
    int tty;
    double every;           /* seconds between lines off a terminal */
    const char *op, *backend;
    double start, last;     /* when the op began, when a line was printed */
} progress;

static void show_progress(void *user, size_t done, size_t total)
{
    progress *p = user;
    char of[32] = "";
    if (total)
        snprintf(of, sizeof of, " of %zu", total);
    if (p->tty) {
        fprintf(stderr, "\r  checking %s on %s: case %zu%s   ", p->op, p->backend, done + 1, of);
        return;
    }
    double t = now();
    if (t - p->last < p->every)
        return;
    p->last = t;
    fprintf(stderr, "  checking %s on %s: case %zu%s, %.0f s so far\n", p->op, p->backend, done + 1, of,
            t - p->start);
}

static void clear_progress(const progress *p)
{
    if (p->tty)
        fprintf(stderr, "\r%*s\r", 70, "");
}

/* ---- the table ---- */
static int is_exact(const rayo_op_info *op)
{
    return op->tol_rel == 0 && op->tol_abs == 0;
}

static void format_cell(const outcome *o, char *buf, size_t size)
{
    const conform_result *r = &o->result;
    if (!r->has_reference)
        snprintf(buf, size, "no ref");
    else if (!r->implemented)
        snprintf(buf, size, "-");
    else if (r->failed && !(r->max_units > 1.0))
        snprintf(buf, size, "FAIL");
    else if (r->failed && isinf(r->max_units))
        snprintf(buf, size, "FAIL");
    else if (r->failed)
        snprintf(buf, size, "FAIL %.3g", r->max_units);
    else if (is_exact(o->op))
        snprintf(buf, size, "ok");
    else if (r->max_units < 0.01)
        snprintf(buf, size, "ok %s", r->max_units == 0 ? "0" : "<0.01");
    else
        snprintf(buf, size, "ok %.2f", r->max_units);
}

static void print_details(const outcome *out, size_t count)
{
    int header = 0;
    for (size_t i = 0; i < count; i++) {
        const conform_result *r = &out[i].result;
        if (!r->failed)
            continue;
        if (!header++)
            printf("\nFailures:\n");
        printf("  %s on %s: %zu of %zu cases failed\n", out[i].op->name, out[i].backend->name,
               r->failed, r->cases);
        for (size_t k = 0; k < r->reported; k++)
            printf("    %s\n", r->reports[k]);
    }
    header = 0;
    for (size_t i = 0; i < count; i++) {
        const conform_result *r = &out[i].result;
        if (!r->implemented || !r->unsupported)
            continue;
        if (!header++)
            printf("\nNotes:\n");
        printf("  %s on %s: %zu of %zu cases answered \"unsupported\" (allowed: such calls go to the next backend)\n",
               out[i].op->name, out[i].backend->name, r->unsupported, r->cases);
    }
}

/* The command that runs the same inputs again: this program's path as it
 * was started, the seed, the options, the failed ops (all ops when none
 * failed) and the plugin files. */
static void print_replay(const args *a, const outcome *out, size_t count, uint64_t seed)
{
    printf("Replay: %s --seed %llu%s%s", a->self, (unsigned long long)seed,
           a->quick ? " --quick" : "", a->long_tier ? " --long" : "");
    for (size_t i = 0; i < a->skip_count; i++)
        printf(" --skip %s", a->skips[i]);
    if (a->have_dtype)
        printf(" --dtype %s", rayo_dtype_name(a->dtype));
    const char *last = NULL;
    for (size_t i = 0; i < count; i++)
        if (out[i].result.failed && out[i].op->name != last)
            printf(" --op %s", last = out[i].op->name);
    for (size_t i = 0; !last && i < a->op_count; i++)
        printf(" --op %s", a->ops[i]);
    for (size_t i = 0; i < a->file_count; i++)
        printf(" %s", a->files[i]);
    printf("\n");
}

/* The groups to skip on this backend: its own --skip NAME:LIST, else a
 * --skip LIST without a name, else none. */
static const char *skip_for(const args *a, const char *backend)
{
    const char *any = NULL;
    size_t len = strlen(backend);
    for (size_t i = 0; i < a->skip_count; i++) {
        const char *colon = strchr(a->skips[i], ':');
        if (!colon)
            any = a->skips[i];
        else if ((size_t)(colon - a->skips[i]) == len && !strncmp(a->skips[i], backend, len))
            return colon + 1;
    }
    return any;
}

static int run_all(rayo_context *ctx, const args *a, const target *targets, size_t nt, uint64_t seed)
{
    size_t nops;
    nops = rayo_op_count();
    const rayo_op_info *ops[256];
    size_t n = 0;
    for (size_t i = 0; i < nops && n < 256; i++) {
        int wanted = a->op_count == 0;
        for (size_t k = 0; k < a->op_count; k++)
            wanted |= !strcmp(a->ops[k], rayo_op_at(i)->name);
        if (wanted && (!a->have_dtype || conform_op_has_dtype(rayo_op_at(i), a->dtype)))
            ops[n++] = rayo_op_at(i);
    }
    outcome *out = calloc(n * nt + 1, sizeof *out);
    if (!out) {
        fprintf(stderr, "rayo-conform: out of memory\n");
        return 1;
    }
    int width = 14;
    for (size_t b = 0; b < nt; b++)
        if ((int)strlen(targets[b].name) + 2 > width)
            width = (int)strlen(targets[b].name) + 2;

    printf("%-14s", "op");
    for (size_t b = 0; b < nt; b++)
        printf("%-*s", width, targets[b].name);
    printf("\n");

    progress prog = {isatty(2), a->progress_every, NULL, NULL, 0, 0};
    conform_options opts = {.seed = seed, .quick = a->quick, .long_tier = a->long_tier,
                            .only_dtype = a->have_dtype ? RAYO_DTYPE_BIT(a->dtype) : 0,
                            .run = conform_run_backend,
                            .progress = show_progress, .progress_user = &prog};
    size_t passed = 0, failed = 0, absent = 0, cases = 0, skipped = 0;
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        printf("%-14s", ops[i]->name);
        for (size_t b = 0; b < nt; b++) {
            outcome *o = &out[i * nt + b];
            conform_backend be = {ctx, targets[b].name};
            o->op = ops[i];
            o->backend = &targets[b];
            opts.run_user = &be;
            opts.skip = skip_for(a, targets[b].name);
            opts.flushes_denormals = targets[b].flushes_denormals;
            prog.op = ops[i]->name, prog.backend = targets[b].name;
            prog.start = prog.last = now();
            conform_check_op(&opts, ops[i], &o->result);
            o->seconds = now() - prog.start;
            clear_progress(&prog);
            char cell[64];
            format_cell(o, cell, sizeof cell);
            printf("%-*s", width, cell);
            fflush(stdout);
            cases += o->result.cases;
            skipped += o->result.skipped;
            if (!o->result.has_reference || !o->result.implemented)
                absent++;
            else if (o->result.failed)
                failed++;
            else
                passed++;
        }
        printf("\n");
        for (size_t b = 0; a->verbose && b < nt; b++) {
            const conform_result *r = &out[i * nt + b].result;
            printf("    %s: %zu cases, %.1f s%s%s\n", targets[b].name, r->cases, out[i * nt + b].seconds,
                   r->worst[0] ? "; largest error at " : "", r->worst);
        }
    }
    print_details(out, n * nt);
    printf("\nSummary: %zu ops x %zu backend%s: %zu conform, %zu FAIL, %zu not implemented "
           "(%zu cases, %.1f s, seed %llu).\n",
           n, nt, nt == 1 ? "" : "s", passed, failed, absent, cases, now() - t0,
           (unsigned long long)seed);
    if (skipped)
        printf("Skipped: %zu cases (--skip), not counted as passed.\n", skipped);
    print_replay(a, out, n * nt, seed);
    free(out);
    return failed ? 1 : 0;
}

/* argv[0], less libtool's ".libs/" and "lt-": in a build tree the real
 * program runs through a wrapper script of the plain name, one folder up. */
static const char *program_path(const char *argv0, char *buf, size_t size)
{
    const char *libs = strstr(argv0, ".libs/");
    if (!libs || strchr(libs + 6, '/'))
        return argv0;
    const char *name = libs + 6;
    if (!strncmp(name, "lt-", 3))
        name += 3;
    snprintf(buf, size, "%.*s%s", (int)(libs - argv0), argv0, name);
    return buf;
}

/* The cases' buffers (up to hundreds of MB each, several a case) from the
 * heap, kept for the next case: glibc maps blocks past 32 MB afresh and
 * unmaps them when freed, so that every large case faulted its pages in
 * again (the attention cases on avx512 took twice as long so). */
static void keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

int main(int argc, char **argv)
{
    keep_freed_memory();
    args a;
    char self[PATH_MAX];
    memset(&a, 0, sizeof a);
    a.progress_every = 10.0;
    a.self = program_path(argc > 0 ? argv[0] : "rayo-conform", self, sizeof self);
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    uint64_t seed = a.have_seed ? a.seed : conform_default_seed();
    char *settings = load_settings(&a);
    rayo_options opts = {.struct_size = sizeof opts, .settings = settings, .allow_no_backend = 1};
    rayo_context *ctx = NULL;
    if (rayo_open(&ctx, &opts) != RAYO_OK) {
        fprintf(stderr, "rayo-conform: cannot open rayo: %s\n", rayo_last_error());
        free(settings);
        return 1;
    }
    target targets[MAX_TARGETS];
    size_t nt = choose_targets(ctx, &a, targets);
    rc = 1;
    if (nt) {
        printf("rayo-conform: %zu backend%s against the float64 reference, seed %llu%s%s.\n",
               nt, nt == 1 ? "" : "s", (unsigned long long)seed, a.quick ? ", quick" : "",
               a.long_tier ? ", long tier" : "");
        for (size_t i = 0; i < nt; i++)
            printf("  %-10s %s%s\n", targets[i].name, targets[i].path,
                   targets[i].flushes_denormals ? "\n             (its device may flush float32 denormals: [subnormal] "
                                                  "cases also pass against the flushed inputs' reference)" : "");
        printf("Cells: the largest error seen as a fraction of what the op's contract allows\n"
               "(ok: <= 1; exact ops print just ok), FAIL, or - (not implemented).\n\n");
        rc = run_all(ctx, &a, targets, nt, seed);
    }
    rayo_close(ctx);
    free(settings);
    for (size_t i = 0; i < a.file_count; i++)
        free(a.files[i]);
    return rc;
}

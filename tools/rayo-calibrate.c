/* SPDX-License-Identifier: MIT */
/* rayo-calibrate - measures, on this machine, the work size from which each
 * GPU backend beats the best CPU backend on host-memory calls, per op class,
 * and writes those offload thresholds as a config drop-in.
 *
 *   rayo-calibrate [--user | --system | --output FILE|-] [--budget SECONDS]
 *                  [--reps N] [--max-work N] [--quiet]
 *
 * For each op class (elementwise, reductions, row ops, gemv, matmul) one op
 * stands for the class (add, sum, softmax, gemv, matmul).  Sizes grow
 * geometrically until the GPU backend's median time is below the best CPU
 * backend's (rayo_run_on: copies included, as a host-memory call pays them);
 * then the tool bisects between the last size the GPU lost and the first it
 * won.  The threshold written for every op of the class that the GPU backend
 * implements is that first winning work size, or "never" when the GPU lost
 * up to the largest size tried.  Written against the public API only. */
#define _GNU_SOURCE
#include "rayo.h"
#include "tool-version.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef RAYO_SYSCONFDIR
#define RAYO_SYSCONFDIR "/etc/rayo"
#endif
#define DROP_IN_NAME "90-calibrated.conf"
#define MAX_BACKENDS 32
#define MAX_REPS 64

/* ---- options and progress ------------------------------------------------------ */
typedef struct options {
    const char *output;    /* a path, or "-" for stdout */
    double budget_s;       /* for the whole run */
    int reps;
    size_t max_work;       /* no size above this work size (0: the classes' own limits) */
    bool quiet;
} options;

static options opt = {NULL, 120.0, 5, 0, false};

static void progress(const char *fmt, ...)
{
    if (opt.quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("rayo-calibrate: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- op classes ----------------------------------------------------------------- */
/* A class's shape parameter p: n for the vector ops, rows of 1024 columns
 * for the row ops, the side of a square matrix for gemv and matmul. */
typedef struct op_class {
    const char *name;
    rayo_op probe;         /* the op timed */
    rayo_op_sig sigs[5];   /* the ops its threshold applies to */
    int sig_count;
    size_t p_min, p_max, step;  /* p grows by `step` while the GPU loses */
} op_class;

#define ROW_COLS 1024

static const op_class classes[] = {
    {"elementwise", RAYO_OP_ADD,
     {RAYO_SIG_BINARY, RAYO_SIG_UNARY, RAYO_SIG_UNARY_P, RAYO_SIG_UNARY_P2, RAYO_SIG_AXPY}, 5,
     1024, (size_t)1 << 24, 4},
    {"reductions", RAYO_OP_SUM, {RAYO_SIG_REDUCE, RAYO_SIG_REDUCE2, RAYO_SIG_ARGREDUCE}, 3, 1024,
     (size_t)1 << 24, 4},
    {"row ops", RAYO_OP_SOFTMAX, {RAYO_SIG_ROWS, RAYO_SIG_NORM, RAYO_SIG_BIAS_ACT}, 3, 1, 16384, 4},
    {"gemv", RAYO_OP_GEMV, {RAYO_SIG_GEMV}, 1, 32, 8192, 2},
    {"matmul", RAYO_OP_MATMUL, {RAYO_SIG_MATMUL}, 1, 16, 4096, 2},
};
#define CLASS_COUNT (sizeof classes / sizeof classes[0])

/* The work size dispatch compares with (rayo_backend_for's `size`). */
static size_t work_size(const op_class *c, size_t p)
{
    switch (c->probe) {
    case RAYO_OP_SOFTMAX: return p * ROW_COLS;
    case RAYO_OP_GEMV: return p * p;
    case RAYO_OP_MATMUL: return p * p * p;
    default: return p;
    }
}

static bool class_has(const op_class *c, rayo_op_sig sig)
{
    for (int i = 0; i < c->sig_count; i++)
        if (c->sigs[i] == sig)
            return true;
    return false;
}

/* ---- one call of the class at size p ------------------------------------------- */
typedef struct probe_call {
    rayo_call call;
    float *buf[3];
    size_t index;          /* argmax's output */
} probe_call;

static float *random_floats(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; p && i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
    return p;
}

static void probe_free(probe_call *c)
{
    for (int i = 0; i < 3; i++)
        free(c->buf[i]);
    memset(c, 0, sizeof *c);
}

/* 0, or -1 when memory is short. */
static int probe_make(const op_class *k, size_t p, probe_call *c)
{
    memset(c, 0, sizeof *c);
    rayo_call *call = &c->call;
    call->struct_size = sizeof *call;
    call->op = k->probe;
    call->alpha = 1.0f;
    size_t a = 0, b = 0, y = 0;
    switch (k->probe) {
    case RAYO_OP_ADD: call->n = p; a = b = y = p; break;
    case RAYO_OP_SUM: call->n = p; a = p; y = 1; break;
    case RAYO_OP_SOFTMAX: call->m = p; call->n = ROW_COLS; a = y = p * ROW_COLS; break;
    case RAYO_OP_GEMV: call->m = call->n = p; a = p * p; b = y = p; break;
    default: call->m = call->n = call->k = p; a = b = y = p * p; break; /* matmul */
    }
    c->buf[0] = random_floats(a);
    c->buf[1] = b ? random_floats(b) : NULL;
    c->buf[2] = random_floats(y);
    call->a = c->buf[0];
    call->b = c->buf[1];
    call->y = c->buf[2];
    if (!c->buf[0] || (b && !c->buf[1]) || !c->buf[2]) {
        probe_free(c);
        return -1;
    }
    return 0;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median seconds per call of `call` on `backend` over opt.reps samples of at
 * least a millisecond each; < 0 if the backend fails the call. */
static double time_on(rayo_context *ctx, const char *backend, const rayo_call *call)
{
    double t0 = now_s();
    if (rayo_run_on(ctx, backend, call) != RAYO_OK || rayo_run_on(ctx, backend, call) != RAYO_OK)
        return -1;
    double one = (now_s() - t0) / 2;
    long iters = one > 0 ? (long)(1e-3 / one) + 1 : 1;
    double samples[MAX_REPS];
    for (int r = 0; r < opt.reps; r++) {
        double start = now_s();
        for (long i = 0; i < iters; i++)
            if (rayo_run_on(ctx, backend, call) != RAYO_OK)
                return -1;
        samples[r] = (now_s() - start) / (double)iters;
    }
    qsort(samples, (size_t)opt.reps, sizeof samples[0], compare_doubles);
    return samples[opt.reps / 2];
}

/* ---- backends ---------------------------------------------------------------------- */
typedef struct backends {
    const char *gpu[MAX_BACKENDS], *gpu_device[MAX_BACKENDS];
    size_t gpu_count;
    const char *cpu[MAX_BACKENDS];
    size_t cpu_count;
    char why_no_gpu[1024];   /* the other backends' reasons, for the no-GPU message */
} backends;

static void append(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    if (len < size)
        vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

static void find_backends(rayo_context *ctx, backends *b)
{
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < rayo_backend_count(ctx) && i < MAX_BACKENDS; i++) {
        rayo_backend_info info = {.struct_size = sizeof info};
        if (rayo_backend_get(ctx, i, &info) != RAYO_OK)
            continue;
        bool loaded = info.status == RAYO_BACKEND_LOADED;
        if (loaded && info.device_type == RAYO_DEVICE_GPU) {
            b->gpu_device[b->gpu_count] = info.device;
            b->gpu[b->gpu_count++] = info.name;
        } else if (loaded && info.device_type == RAYO_DEVICE_CPU) {
            b->cpu[b->cpu_count++] = info.name;
        } else if (loaded) {
            append(b->why_no_gpu, sizeof b->why_no_gpu, "%s runs on %s, a software device, not a GPU; ",
                   info.name, info.device);
        } else if (info.status == RAYO_BACKEND_UNAVAILABLE || info.status == RAYO_BACKEND_DISABLED) {
            append(b->why_no_gpu, sizeof b->why_no_gpu, "%s: %s; ", info.name, info.reason);
        }
    }
    size_t len = strlen(b->why_no_gpu);
    if (len >= 2)
        b->why_no_gpu[len - 2] = '\0'; /* the last "; " */
}

/* Does `backend` have a link in the f32 chain of op? */
static bool implements(rayo_context *ctx, rayo_op op, const char *backend)
{
    for (size_t i = 0; i < rayo_chain_count(ctx, op, 0); i++) {
        rayo_link_info l = {.struct_size = sizeof l};
        if (rayo_chain_link(ctx, op, 0, i, &l) == RAYO_OK && !strcmp(l.backend, backend))
            return true;
    }
    return false;
}

/* ---- measuring one class on one GPU backend ----------------------------------------- */
typedef struct verdict {
    enum { NOT_MEASURED, THRESHOLD, NEVER, UNDECIDED } kind;
    size_t threshold;      /* work size, for THRESHOLD */
    size_t largest_tried;  /* work size */
    char note[256];        /* for the file's comment */
} verdict;

/* The GPU's time and the best CPU backend's at size p (-1 when the GPU
 * fails the call, -2 when memory is short).  A CPU backend that takes over
 * 20 ms and more than 4 times the best is dropped for the larger sizes
 * (scalar's matmul would take minutes at the top); a backend slow only at
 * small sizes (thread start, packing) stays in. */
static int race(rayo_context *ctx, const backends *b, bool *dropped, const char *gpu, const op_class *k, size_t p,
                double *gpu_s, double *cpu_s, const char **cpu_name)
{
    probe_call c;
    if (probe_make(k, p, &c) != 0)
        return -2;
    *gpu_s = time_on(ctx, gpu, &c.call);
    *cpu_s = INFINITY;
    *cpu_name = "none";
    double t[MAX_BACKENDS];
    for (size_t i = 0; i < b->cpu_count && *gpu_s >= 0; i++) {
        t[i] = dropped[i] ? -1 : time_on(ctx, b->cpu[i], &c.call);
        if (t[i] >= 0 && t[i] < *cpu_s) {
            *cpu_s = t[i];
            *cpu_name = b->cpu[i];
        }
    }
    for (size_t i = 0; i < b->cpu_count && *gpu_s >= 0; i++)
        dropped[i] = dropped[i] || t[i] < 0 || (t[i] > 20e-3 && t[i] > 4 * *cpu_s);
    probe_free(&c);
    if (*gpu_s < 0)
        return -1;
    progress("%s %s, work size %zu: %s %.3g ms, best CPU (%s) %.3g ms: %s", gpu, k->name, work_size(k, p), gpu,
             *gpu_s * 1e3, *cpu_name, *cpu_s * 1e3, *gpu_s < *cpu_s ? "GPU wins" : "CPU wins");
    return *gpu_s < *cpu_s;
}

/* race(), with a GPU win counted only when a second race at the same size
 * agrees: one timing disturbed by another process must not set a threshold. */
static int race_confirmed(rayo_context *ctx, const backends *b, bool *dropped, const char *gpu, const op_class *k,
                          size_t p, double *gpu_s, double *cpu_s, const char **cpu_name)
{
    int r = race(ctx, b, dropped, gpu, k, p, gpu_s, cpu_s, cpu_name);
    if (r == 1)
        r = race(ctx, b, dropped, gpu, k, p, gpu_s, cpu_s, cpu_name);
    return r;
}

static void calibrate_class(rayo_context *ctx, const backends *b, const char *gpu, const op_class *k, double deadline,
                            verdict *v)
{
    double g, c;
    const char *cpu = "";
    size_t lost = 0, won = 0; /* shape parameters: the GPU lost at `lost`, won at `won` (0: not seen) */
    bool dropped[MAX_BACKENDS] = {false};
    /* the largest size of the scan, p_min * step^j, within the limits */
    size_t p_max = k->p_min;
    while (p_max * k->step <= k->p_max && (!opt.max_work || work_size(k, p_max * k->step) <= opt.max_work))
        p_max *= k->step;
    for (size_t p = k->p_min; p <= p_max && !won; p *= k->step) {
        if (now_s() > deadline)
            break;
        int r = race_confirmed(ctx, b, dropped, gpu, k, p, &g, &c, &cpu);
        if (r < 0) {
            snprintf(v->note, sizeof v->note, "%s at work size %zu", r == -1 ? "the GPU backend failed the call"
                                                                            : "out of memory", work_size(k, p));
            v->kind = NOT_MEASURED;
            return;
        }
        v->largest_tried = work_size(k, p);
        if (r)
            won = p;
        else
            lost = p;
        snprintf(v->note, sizeof v->note, "%s %.3g ms, %s %.3g ms at work size %zu", gpu, g * 1e3, cpu, c * 1e3,
                 work_size(k, p));
    }
    while (won && lost && (double)won > 1.15 * (double)lost && won - lost > 1 && now_s() < deadline) {
        size_t mid = (size_t)sqrt((double)won * (double)lost);
        if (mid <= lost || mid >= won)
            break;
        int r = race_confirmed(ctx, b, dropped, gpu, k, mid, &g, &c, &cpu);
        if (r < 0)
            break;
        if (r) {
            won = mid;
            snprintf(v->note, sizeof v->note, "%s %.3g ms, %s %.3g ms at work size %zu", gpu, g * 1e3, cpu,
                     c * 1e3, work_size(k, mid));
        } else {
            lost = mid;
        }
    }
    if (won) {
        v->kind = THRESHOLD;
        v->threshold = work_size(k, won);
    } else {
        v->kind = v->largest_tried >= work_size(k, p_max) ? NEVER : UNDECIDED;
    }
}

/* ---- the drop-in ------------------------------------------------------------------------- */
/* "# " lines of at most ~76 columns. */
static void write_comment(FILE *f, const char *lead, const char *text)
{
    char all[2048];
    snprintf(all, sizeof all, "%s%s", lead, text);
    fputs("#\n", f);
    for (const char *p = all; *p;) {
        size_t len = strlen(p), cut = len;
        if (len > 74) {
            cut = 74;
            while (cut > 0 && p[cut] != ' ')
                cut--;
            if (cut == 0)
                cut = 74;
        }
        fprintf(f, "# %.*s\n", (int)cut, p);
        p += cut;
        while (*p == ' ')
            p++;
    }
}

static void write_header(FILE *f, const char *why)
{
    char stamp[64];
    time_t t = time(NULL);
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    fprintf(f, "# Written by rayo-calibrate (rayo %s) on %s.  Run it again after\n"
               "# changing hardware or drivers; delete this file to go back to the defaults.\n",
            rayo_version(), stamp);
    if (why)
        write_comment(f, "No offload thresholds: ", why);
}

static const char *verdict_text(const verdict *v, char *buf, size_t size)
{
    switch (v->kind) {
    case THRESHOLD: snprintf(buf, size, "from work size %zu (%s)", v->threshold, v->note); break;
    case NEVER: snprintf(buf, size, "never: the CPU won up to work size %zu (%s)", v->largest_tried, v->note); break;
    case UNDECIDED: snprintf(buf, size, "not decided in the time budget (CPU won up to %zu); not written",
                             v->largest_tried); break;
    default: snprintf(buf, size, "not measured: %s", v->note[0] ? v->note : "not implemented"); break;
    }
    return buf;
}

static void write_thresholds(FILE *f, rayo_context *ctx, const backends *b, verdict v[][CLASS_COUNT])
{
    char text[768]; /* the sentence below with cpus at its longest: under 600 bytes */
    char cpus[256] = "";
    for (size_t i = 0; i < b->cpu_count; i++)
        append(cpus, sizeof cpus, "%s%s", i ? ", " : "", b->cpu[i]);
    snprintf(text, sizeof text,
             "Host-memory calls go to a GPU backend from the work size where it beat the fastest CPU backend "
             "(of %s) on this machine, both timed through rayo_run_on (copies included), the median of %d "
             "timings, a GPU win confirmed by a second race. Work size: n for vector ops and reductions, "
             "rows*cols for row ops and gemv, m*n*k for matmul.",
             cpus, opt.reps);
    write_comment(f, "", text);
    for (size_t g = 0; g < b->gpu_count; g++) {
        fprintf(f, "#\n# %s (%s):\n", b->gpu[g], b->gpu_device[g]);
        for (size_t k = 0; k < CLASS_COUNT; k++)
            fprintf(f, "#   %s (timed with %s): %s\n", classes[k].name, rayo_op_by_id(classes[k].probe)->name,
                    verdict_text(&v[g][k], text, sizeof text));
    }
    for (size_t i = 0; i < rayo_op_count(); i++) {
        const rayo_op_info *op = rayo_op_at(i);
        bool header = false;
        for (size_t k = 0; k < CLASS_COUNT; k++) {
            if (!class_has(&classes[k], op->sig))
                continue;
            for (size_t g = 0; g < b->gpu_count; g++) {
                const verdict *vd = &v[g][k];
                if ((vd->kind != THRESHOLD && vd->kind != NEVER) || !implements(ctx, op->id, b->gpu[g]))
                    continue;
                if (!header)
                    fprintf(f, "\n[op.%s]\n", op->name);
                header = true;
                if (vd->kind == NEVER)
                    fprintf(f, "offload_threshold.%s = never\n", b->gpu[g]);
                else
                    fprintf(f, "offload_threshold.%s = %zu\n", b->gpu[g], vd->threshold);
            }
        }
    }
}

/* mkdir -p of path's directory. */
static int make_parent_dirs(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

/* Opens the output: stdout for "-", else a temporary file next to it,
 * renamed into place by finish_output (a reader never sees half a file). */
static FILE *open_output(const char *path, char *tmp, size_t size)
{
    if (!strcmp(path, "-"))
        return stdout;
    snprintf(tmp, size, "%s.tmp%ld", path, (long)getpid());
    if (make_parent_dirs(path) != 0)
        return NULL;
    return fopen(tmp, "w");
}

static int finish_output(FILE *f, const char *path, const char *tmp)
{
    if (f == stdout)
        return fflush(f) == 0 ? 0 : -1;
    int bad = ferror(f) | (fclose(f) != 0);
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* ---- arguments ------------------------------------------------------------------------- */
static void usage(FILE *f)
{
    fprintf(f, "usage: rayo-calibrate [--user | --system | --output FILE|-] [--budget SECONDS]\n"
               "                      [--reps N] [--max-work N] [--quiet] [--help] [--version]\n"
               "Measures where each GPU backend starts to beat the best CPU backend on\n"
               "host-memory calls (elementwise, reductions, row ops, gemv, matmul) and writes\n"
               "the offload thresholds as a config drop-in:\n"
               "  --user            $XDG_CONFIG_HOME/rayo/conf.d/" DROP_IN_NAME " (the default)\n"
               "  --system          " RAYO_SYSCONFDIR "/conf.d/" DROP_IN_NAME "\n"
               "  --output FILE     that file; - for standard output\n"
               "  --budget SECONDS  time for all measurements (default 120)\n"
               "  --reps N          timings per size, the median counts (default 5)\n"
               "  --max-work N      try no work size above N (default: up to 2^24 elements,\n"
               "                    16384 rows of 1024, gemv 8192^2, matmul 4096^3)\n"
               "  --quiet           no progress lines on standard error\n");
}

static int user_path(char *out, size_t size)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(out, size, "%s/rayo/conf.d/" DROP_IN_NAME, xdg);
    else if (home && *home)
        snprintf(out, size, "%s/.config/rayo/conf.d/" DROP_IN_NAME, home);
    else
        return -1;
    return 0;
}

static int parse_args(int argc, char **argv, char *path, size_t size)
{
    const char *output = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            print_tool_version("rayo-calibrate");
            exit(0);
        } else if (!strcmp(a, "--quiet")) {
            opt.quiet = true;
        } else if (!strcmp(a, "--user")) {
            output = NULL;
        } else if (!strcmp(a, "--system")) {
            output = RAYO_SYSCONFDIR "/conf.d/" DROP_IN_NAME;
        } else if (!strcmp(a, "--output") && value) {
            output = argv[++i];
        } else if (!strcmp(a, "--budget") && value) {
            opt.budget_s = atof(argv[++i]);
            if (!(opt.budget_s > 0))
                return fprintf(stderr, "rayo-calibrate: --budget %s: want a positive number of seconds\n", value), -1;
        } else if (!strcmp(a, "--max-work") && value) {
            char *end;
            opt.max_work = strtoull(argv[++i], &end, 10);
            if (*end || opt.max_work < 1024)
                return fprintf(stderr, "rayo-calibrate: --max-work %s: want a work size of at least 1024\n", value), -1;
        } else if (!strcmp(a, "--reps") && value) {
            opt.reps = atoi(argv[++i]);
            if (opt.reps < 1 || opt.reps > MAX_REPS)
                return fprintf(stderr, "rayo-calibrate: --reps %s: want 1..%d\n", value, MAX_REPS), -1;
        } else {
            usage(stderr);
            return -1;
        }
    }
    if (output)
        snprintf(path, size, "%s", output);
    else if (user_path(path, size) != 0)
        return fprintf(stderr, "rayo-calibrate: neither XDG_CONFIG_HOME nor HOME is set: use --output\n"), -1;
    return 0;
}

int main(int argc, char **argv)
{
    char path[4096], tmp[4200];
    if (parse_args(argc, argv, path, sizeof path) != 0)
        return 2;
    rayo_context *ctx;
    rayo_options ro = {.struct_size = sizeof ro, .allow_no_backend = 1};
    if (rayo_open(&ctx, &ro) != RAYO_OK) {
        fprintf(stderr, "rayo-calibrate: cannot open rayo: %s\n", rayo_last_error());
        return 1;
    }
    backends b;
    find_backends(ctx, &b);
    char why[1400] = "";
    if (!b.gpu_count)
        snprintf(why, sizeof why, "no GPU backend is loaded on this machine, so host-memory calls never leave "
                                  "the CPU and there is nothing to calibrate (%.1100s).",
                 b.why_no_gpu[0] ? b.why_no_gpu : "no GPU plugin installed");
    else if (!b.cpu_count)
        snprintf(why, sizeof why, "no CPU backend is loaded to compare the GPU with.");
    static verdict v[MAX_BACKENDS][CLASS_COUNT];
    memset(v, 0, sizeof v);
    if (!why[0]) {
        srand(1);
        size_t jobs = 0, done = 0; /* (GPU backend, class) pairs to measure: the budget is shared */
        for (size_t g = 0; g < b.gpu_count; g++)
            for (size_t k = 0; k < CLASS_COUNT; k++)
                jobs += implements(ctx, classes[k].probe, b.gpu[g]);
        double start = now_s(), share = opt.budget_s / (double)(jobs ? jobs : 1);
        for (size_t g = 0; g < b.gpu_count; g++)
            for (size_t k = 0; k < CLASS_COUNT; k++) {
                if (!implements(ctx, classes[k].probe, b.gpu[g]))
                    continue;
                progress("%s: %s (timing %s)", b.gpu[g], classes[k].name, rayo_op_by_id(classes[k].probe)->name);
                calibrate_class(ctx, &b, b.gpu[g], &classes[k], start + share * (double)++done, &v[g][k]);
            }
    } else {
        printf("rayo-calibrate: %s\n", why);
    }
    FILE *f = open_output(path, tmp, sizeof tmp);
    if (!f) {
        fprintf(stderr, "rayo-calibrate: cannot write %s: %s\n", path, strerror(errno));
        rayo_close(ctx);
        return 1;
    }
    write_header(f, why[0] ? why : NULL);
    if (!why[0])
        write_thresholds(f, ctx, &b, v);
    int rc = finish_output(f, path, tmp);
    if (rc != 0)
        fprintf(stderr, "rayo-calibrate: cannot write %s: %s\n", path, strerror(errno));
    else if (f != stdout)
        printf("rayo-calibrate: wrote %s%s\n", path, why[0] ? " (comments only)" : "");
    rayo_close(ctx);
    return rc ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/* rayo-llama.c - runs a Llama-architecture GGUF model on rayo: prefill the
 * prompt, then greedy (or temperature / top-k) decoding.  See README.md. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "tokenizer.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct options {
    const char *model, *prompt, *backend, *prompt_tokens, *logits_path;
    size_t n_predict, n_ctx, n_batch, logits_steps, top_k;
    float temp;
    uint64_t seed;
    rayo_precision precision;
    int print_tokens, info, quiet, list_backends, list_devices, tokenize, ignore_eos;
    int warmup;   /* -1 auto (on where the model is resident on a GPU), 0 off, 1 on */
    int step_times;
    int resident; /* -1 auto, 0 off, 1 on */
} options;

static void usage(void)
{
    fprintf(stderr,
        "usage: rayo-llama [options] MODEL.gguf\n"
        "  -p TEXT             prompt (default \"Once upon a time\")\n"
        "  -n N                tokens to generate (default 32)\n"
        "  --backend NAME      preferred rayo backend (as RAYO_BACKEND; others still\n"
        "                      take the ops it lacks)\n"
        "  --ctx N             context size (default: the model's, at most 4096)\n"
        "  --batch N           prompt tokens per forward pass (default 512)\n"
        "  --precision P       relaxed (default), strict or default: the rayo precision\n"
        "                      level of the weight products and attention\n"
        "  --ignore-eos        go on past the end-of-sequence token (benchmarks)\n"
        "  --warmup            run the prompt and two decode steps once, untimed, before\n"
        "                      the timed run (kernels compiled and loaded, caches warm);\n"
        "                      the default where the model is resident (on a GPU; on\n"
        "                      a CPU backend, which lays its constant weights out for\n"
        "                      its kernels at their first use, as llama.cpp does at load)\n"
        "  --no-warmup         never (the first run's prompt and decode then include the\n"
        "                      driver compiling the kernels they use)\n"
        "  --step-times        where a replayed decode step's host time goes: the\n"
        "                      write, set_step + submit, wait, the read, sampling\n"
        "  --resident WHEN     auto (default), on or off: the model in the backend's\n"
        "                      buffers, each step one batch (auto: on a GPU or CPU\n"
        "                      backend, not a software device)\n"
        "  --temp T            sample at temperature T (default 0: greedy)\n"
        "  --top-k K           sample among the K most likely (default 40)\n"
        "  --seed N            sampling seed (default 1)\n"
        "  --prompt-tokens IDS comma-separated token ids instead of -p\n"
        "  --tokens            print token ids, not text\n"
        "  --logits FILE       write the f32 logits of the first steps to FILE\n"
        "  --logits-steps N    how many steps --logits writes (default 4)\n"
        "  --interim           only the pre-ABI-1 path (f32 ops, dequantized weights)\n"
        "  --info              print the model's shape and tensor types, then exit\n"
        "  --tokenize          print the prompt's token ids, then exit\n"
        "  --backends          print the loaded backends' names, then exit\n"
        "  --devices           print each loaded backend's name, device type and device\n"
        "  -q                  no progress or speed lines\n");
}

static int parse_precision(const char *v, rayo_precision *p)
{
    static const char *const names[] = {"default", "strict", "relaxed"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, names[i])) {
            *p = (rayo_precision)i; /* RAYO_PRECISION_DEFAULT, _STRICT, _RELAXED */
            return 0;
        }
    return -1;
}

static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.prompt = "Once upon a time", .n_predict = 32, .logits_steps = 4,
                   .top_k = 40, .seed = 1, .precision = RAYO_PRECISION_RELAXED, .resident = -1,
                   .warmup = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int flag = 1;
        if (!strcmp(a, "--tokens"))
            o->print_tokens = 1;
        else if (!strcmp(a, "--info"))
            o->info = 1;
        else if (!strcmp(a, "--interim"))
            lm_force_interim = 1;
        else if (!strcmp(a, "--tokenize"))
            o->tokenize = 1;
        else if (!strcmp(a, "--backends"))
            o->list_backends = 1;
        else if (!strcmp(a, "--devices"))
            o->list_backends = o->list_devices = 1;
        else if (!strcmp(a, "-q"))
            o->quiet = 1;
        else if (!strcmp(a, "--ignore-eos"))
            o->ignore_eos = 1;
        else if (!strcmp(a, "--warmup"))
            o->warmup = 1;
        else if (!strcmp(a, "--no-warmup"))
            o->warmup = 0;
        else if (!strcmp(a, "--step-times"))
            o->step_times = 1;
        else if (a[0] != '-' && !o->model)
            o->model = a;
        else
            flag = 0;
        if (flag)
            continue;
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "-p")) o->prompt = v;
        else if (!strcmp(a, "-n")) o->n_predict = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--ctx")) o->n_ctx = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--batch")) o->n_batch = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--resident")) {
            o->resident = !strcmp(v, "auto") ? -1 : !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 0 : 2;
            if (o->resident == 2)
                return -1;
        } else if (!strcmp(a, "--precision")) {
            if (parse_precision(v, &o->precision))
                return -1;
        }
        else if (!strcmp(a, "--temp")) o->temp = strtof(v, NULL);
        else if (!strcmp(a, "--top-k")) o->top_k = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--prompt-tokens")) o->prompt_tokens = v;
        else if (!strcmp(a, "--logits")) o->logits_path = v;
        else if (!strcmp(a, "--logits-steps")) o->logits_steps = strtoul(v, NULL, 10);
        else return -1;
    }
    return o->model || o->list_backends ? 0 : -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(size_t done, size_t total)
{
    fprintf(stderr, "\rloading: layer %zu/%zu", done, total);
    if (done == total)
        fprintf(stderr, "\n");
}

/* ---- sampling ------------------------------------------------------------- */
static uint64_t rng;

static double uniform01(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0;
}

/* The first largest logit (rayo_argmax: no host loop over the vocabulary). */
static int32_t argmax(rayo_context *ctx, const float *x, size_t n)
{
    size_t best = 0;
    return rayo_argmax(ctx, x, n, &best) == RAYO_OK ? (int32_t)best : 0;
}

/* Temperature and top-k: keep the k largest logits, softmax them at temp, draw. */
static int32_t sample(rayo_context *ctx, float *logits, size_t n, float temp, size_t k)
{
    if (temp <= 0.0f || k <= 1)
        return argmax(ctx, logits, n);
    if (k > 256)
        k = 256;
    if (k > n)
        k = n;
    int32_t top[256];
    double p[256], sum = 0;
    for (size_t i = 0; i < k; i++) {
        top[i] = argmax(ctx, logits, n);
        p[i] = logits[top[i]];
        logits[top[i]] = -INFINITY;
    }
    for (size_t i = 0; i < k; i++)
        sum += p[i] = exp((p[i] - p[0]) / temp);
    double r = uniform01() * sum;
    for (size_t i = 0; i < k; i++)
        if ((r -= p[i]) <= 0)
            return top[i];
    return top[k - 1];
}

/* ---- prompt ----------------------------------------------------------------- */
static int32_t *prompt_ids(const options *o, const vocab *v, size_t n_vocab, size_t *n)
{
    size_t cap = strlen(o->prompt_tokens ? o->prompt_tokens : o->prompt) + 2;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids)
        return NULL;
    if (!o->prompt_tokens) {
        if (vocab_encode(v, o->prompt, v->add_bos, ids, cap, n) == 0 && *n > 0)
            return ids;
        free(ids);
        return NULL;
    }
    *n = 0;
    for (const char *p = o->prompt_tokens; *p && *n < cap;) {
        char *end;
        long id = strtol(p, &end, 10);
        if (end == p || id < 0 || (size_t)id >= n_vocab) {
            free(ids);
            return NULL;
        }
        ids[(*n)++] = (int32_t)id;
        p = *end == ',' ? end + 1 : end;
    }
    return ids;
}

static void print_token(const options *o, const vocab *v, int32_t id, int first)
{
    if (o->print_tokens) {
        printf("%s%d", first ? "" : " ", id);
    } else {
        char buf[256];
        size_t len = vocab_piece(v, id, buf, sizeof buf);
        fwrite(buf, 1, len, stdout);
    }
    fflush(stdout);
}

/* ---- the run ------------------------------------------------------------------ */
typedef struct run_stats {
    size_t n_prompt, n_gen;
    double t_load, t_open;              /* wall seconds: the model's weights read, rayo_open (+ resident) */
    double t_warmup;                    /* wall seconds of the untimed warm-up (0: none) */
    double t_prefill, t_decode;         /* wall seconds */
    double cpu_prefill, cpu_decode;     /* CPU seconds of the process (every thread) */
    double t_sample;                    /* wall seconds choosing the decoded tokens */
} run_stats;

/* The next token's evaluation: greedy asks the model for the index of the
 * largest logit only (on a GPU: no logits cross the bus); else the logits. */
static rayo_status eval_next(rayo_context *ctx, llama_model *m, int greedy, const int32_t *ids, size_t n,
                             float *logits, int32_t *next)
{
    return greedy ? llama_eval_greedy(ctx, m, ids, n, next) : llama_eval(ctx, m, ids, n, logits);
}

/* Whether the next token comes from the greedy index alone (as generate
 * asks for it: the warm-up must run the same batches). */
static int greedy_run(const options *o)
{
    return (o->temp <= 0.0f || o->top_k <= 1) && !o->logits_path;
}

static int generate(rayo_context *ctx, llama_model *m, const vocab *v, const options *o,
                    const int32_t *ids, size_t n_ids, run_stats *rs)
{
    float *logits = malloc(m->n_vocab * sizeof *logits);
    FILE *lf = o->logits_path ? fopen(o->logits_path, "wb") : NULL;
    if (!logits || (o->logits_path && !lf)) {
        fprintf(stderr, "rayo-llama: %s\n", !logits ? "out of memory" : o->logits_path);
        free(logits);
        return 1;
    }
    int greedy = greedy_run(o);
    int32_t next = 0;
    double t0 = now(), c0 = cpu_now();
    rayo_status st = eval_next(ctx, m, greedy, ids, n_ids, logits, &next);
    rs->t_prefill = now() - t0;
    rs->cpu_prefill = cpu_now() - c0;
    rs->n_prompt = n_ids;
    t0 = now();
    c0 = cpu_now();
    for (size_t i = 0; st == RAYO_OK && i < o->n_predict; i++) {
        if (lf && i < o->logits_steps)
            fwrite(logits, sizeof *logits, m->n_vocab, lf);
        double ts = now();
        if (!greedy)
            next = sample(ctx, logits, m->n_vocab, o->temp, o->top_k);
        rs->t_sample += now() - ts;
        print_token(o, v, next, i == 0);
        rs->n_gen++;
        if ((next == v->eos && !o->ignore_eos) || i + 1 == o->n_predict || m->n_past >= m->n_ctx)
            break;
        st = eval_next(ctx, m, greedy, &next, 1, logits, &next);
    }
    rs->t_decode = now() - t0;
    rs->cpu_decode = cpu_now() - c0;
    printf("\n");
    if (lf)
        fclose(lf);
    free(logits);
    if (st != RAYO_OK)
        fprintf(stderr, "rayo-llama: evaluation failed: %s: %s\n", rayo_strerror(st),
                rayo_last_error());
    return st == RAYO_OK ? 0 : 1;
}

/* --warmup: the prompt and two decode steps as the timed run makes them,
 * untimed, then the cache rewound to position 0 (the timed run overwrites
 * it), so that neither timed phase pays for the driver compiling kernels
 * (on a fresh machine a GPU driver takes 0.1-0.6 s per kernel), loading
 * them, or first-touch of the backend's memory.  Two steps: a backend
 * replaying the step makes its fused form at the second. */
static rayo_status warm_up(rayo_context *ctx, llama_model *m, const options *o, const int32_t *ids,
                           size_t n_ids)
{
    int greedy = greedy_run(o);
    int32_t next = 0;
    float *logits = greedy ? NULL : malloc(m->n_vocab * sizeof *logits);
    rayo_status st = greedy || logits ? eval_next(ctx, m, greedy, ids, n_ids, logits, &next) : RAYO_E_NOMEM;
    for (int i = 0; i < 2 && st == RAYO_OK && m->n_past < m->n_ctx; i++)
        st = eval_next(ctx, m, greedy, ids, 1, logits, &next);
    free(logits);
    m->n_past = 0;
    if (st != RAYO_OK)
        fprintf(stderr, "rayo-llama: warm-up failed: %s: %s\n", rayo_strerror(st), rayo_last_error());
    return st;
}

static void print_info(const llama_model *m, const gguf_file *g)
{
    printf("llama: %zu layers, %zu wide, %zu heads (%zu KV), head %zu, rope %zu base %g, "
           "ffn %zu, vocab %zu, ctx %zu, eps %g, output %s\n", m->n_layers, m->n_embd,
           m->n_heads, m->n_kv_heads, m->head_dim, m->rope_dims, (double)m->freq_base, m->n_ffn,
           m->n_vocab, m->n_ctx, (double)m->eps, m->output.data.host == m->tok_embd.data.host ? "tied" :
           "untied");
    for (uint64_t i = 0; i < g->n_tensors; i++)
        printf("  %-28s %-5s %llu x %llu\n", g->tensors[i].name,
               rayo_dtype_name(g->tensors[i].dtype), (unsigned long long)g->tensors[i].ne[0],
               (unsigned long long)g->tensors[i].ne[1]);
}

/* Is `name` a loaded backend?  *names gets the loaded ones ("avx2, scalar"). */
static int backend_loaded(rayo_context *ctx, const char *name, char *names, size_t size)
{
    int found = 0;
    size_t used = 0;
    names[0] = '\0';
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info bi = {.struct_size = sizeof bi};
        if (rayo_backend_get(ctx, i, &bi) != RAYO_OK || bi.status != RAYO_BACKEND_LOADED)
            continue;
        found |= !strcmp(bi.name, name);
        if (used < size)
            used += (size_t)snprintf(names + used, size - used, "%s%s", used ? ", " : "", bi.name);
    }
    return found;
}

static rayo_context *open_rayo(const options *o)
{
    char settings[200];
    /* The backend asked for takes every op it has, at any size. */
    snprintf(settings, sizeof settings, "[dispatch]\norder = %s\noffload_threshold = 0\n",
             o->backend ? o->backend : "");
    rayo_options ro = {.struct_size = sizeof ro, .settings = o->backend ? settings : NULL};
    rayo_context *ctx = NULL;
    rayo_status st = rayo_open(&ctx, &ro);
    if (st != RAYO_OK) {
        fprintf(stderr, "rayo-llama: rayo_open: %s: %s\n", rayo_strerror(st), rayo_last_error());
        return NULL;
    }
    char names[256];
    if (o->backend && !backend_loaded(ctx, o->backend, names, sizeof names)) {
        /* rayo has said why (a name no backend has, with a close one; or the
         * reason the plugin is not used: rayo-info). */
        fprintf(stderr, "rayo-llama: --backend %s: no such backend is loaded (loaded: %s)\n", o->backend,
                names[0] ? names : "none");
        rayo_close(ctx);
        return NULL;
    }
    return ctx;
}

static double rate(size_t n, double seconds)
{
    return n && seconds > 0 ? (double)n / seconds : 0.0;
}

/* Where the weight products of this dtype go: "q4_0 on avx512", or the f32
 * op's backend when the interim path ran them. */
static void product_site(rayo_context *ctx, rayo_op op, uint32_t typed_dtypes, size_t size,
                         rayo_dtype wdt, char *buf, size_t len)
{
    const char *typed = rayo_backend_for(ctx, op, typed_dtypes, size);
    const char *f32 = rayo_backend_for(ctx, op, 0, size);
    if (lm_force_interim || !typed)
        snprintf(buf, len, "f32 on %s (interim path)", f32 ? f32 : "?");
    else
        snprintf(buf, len, "%s on %s", rayo_dtype_name(wdt), typed);
}

/* The final line: where the weight products ran (decode: gemv, prefill:
 * matmul), at which precision, and the speeds, by wall and by CPU time. */
static void print_speed(rayo_context *ctx, const llama_model *m, const run_stats *rs)
{
    static const char *const level[] = {"default", "strict", "relaxed"};
    rayo_dtype wdt = m->layers[0].gate.dtype;
    size_t rows = m->n_ffn, cols = m->n_embd, n = rs->n_prompt < m->s.n_batch ? rs->n_prompt
                                                                              : m->s.n_batch;
    char gemv[80], matmul[80];
    product_site(ctx, RAYO_OP_GEMV, RAYO_DTYPES(wdt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                 rows * cols, wdt, gemv, sizeof gemv);
    product_site(ctx, RAYO_OP_MATMUL, RAYO_DTYPES(RAYO_DTYPE_F32, wdt, 0, RAYO_DTYPE_F32),
                 n * rows * cols, wdt, matmul, sizeof matmul);
    if (m->resident && !llama_cpu_backend(ctx, m->resident)) { /* batches run there only */
        snprintf(gemv, sizeof gemv, "%s on %s (resident)", rayo_dtype_name(wdt), m->resident);
        snprintf(matmul, sizeof matmul, "%s on %s", rayo_dtype_name(wdt), m->resident);
        if (m->prefill_by_gemv)
            snprintf(matmul, sizeof matmul, "none (prompt by gemv)");
    }
    if (lm_fallbacks && !lm_force_interim)
        fprintf(stderr, "rayo-llama: %zu calls took the interim path (no backend has the op)\n",
                lm_fallbacks);
    size_t n_dec = rs->n_gen > 1 ? rs->n_gen - 1 : 0;
    fprintf(stderr, "rayo-llama: gemv %s, matmul %s, %s precision, %u threads: "
            "prefill %zu tokens %.2f tok/s (cpu %.3f s), decode %zu tokens %.2f tok/s "
            "(cpu %.3f s)\n", gemv, rs->n_prompt > 1 ? matmul : "unused",
            level[m->precision], rayo_thread_count(ctx), rs->n_prompt,
            rate(rs->n_prompt, rs->t_prefill), rs->cpu_prefill, n_dec, rate(n_dec, rs->t_decode),
            rs->cpu_decode);
    fprintf(stderr, "rayo-llama: time: load %.2f s (reading the weights), rayo_open %.2f s, warm-up %.2f s, "
            "prompt %.2f s, decode %.2f s\n", rs->t_load, rs->t_open, rs->t_warmup, rs->t_prefill, rs->t_decode);
}

/* --step-times: the mean host time of a replayed step's parts (model.h
 * llama_step_times) and of choosing a token from the logits. */
static void print_step_times(const llama_model *m, const run_stats *rs)
{
    const llama_step_times *t = &m->step_times;
    double n = t->steps ? (double)t->steps : 1.0, us = 1e6 / n;
    fprintf(stderr, "rayo-llama: step times (mean of %zu replayed steps, us): write %.1f, set_step+submit "
            "%.1f, wait %.1f, read %.1f; sampling %.1f (mean of %zu)\n", t->steps, t->write * us,
            t->submit * us, t->wait * us, t->read * us, rs->n_gen ? 1e6 * rs->t_sample / (double)rs->n_gen : 0.0,
            rs->n_gen);
}

/* The backend --resident means: the one asked for, else the first loaded GPU
 * backend, else the first loaded backend.  auto takes GPU and CPU backends,
 * not software devices (lavapipe), where host-memory calls are the
 * quicker way.  A CPU backend's buffers are memory rayo allocated: on the
 * virtual machine measured (doc/benchmarks-llama.md) a 1-thread decode
 * streamed its weights from there up to twice as fast as from the file's
 * mapping.  Under Emscripten the "mapping" is already a copy in memory, and
 * a second one would only take room under wasm32's 4 GiB. */
#ifdef __EMSCRIPTEN__
#define CPU_RESIDENT_BY_DEFAULT 0
#else
#define CPU_RESIDENT_BY_DEFAULT 1
#endif
static const char *resident_backend(rayo_context *ctx, const options *o)
{
    const char *gpu = NULL, *first = NULL;
    unsigned gpu_rank = UINT_MAX, first_rank = UINT_MAX;
    int first_auto = 0;
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info bi = {.struct_size = sizeof bi};
        if (rayo_backend_get(ctx, i, &bi) != RAYO_OK || bi.status != RAYO_BACKEND_LOADED)
            continue;
        int is_gpu = bi.device_type == RAYO_DEVICE_GPU;
        int by_auto = is_gpu || (CPU_RESIDENT_BY_DEFAULT && bi.device_type == RAYO_DEVICE_CPU);
        if (o->backend) {
            if (!strcmp(bi.name, o->backend))
                return by_auto || o->resident == 1 ? bi.name : NULL;
            continue;
        }
        if (is_gpu && bi.rank < gpu_rank) {
            gpu = bi.name;
            gpu_rank = bi.rank;
        }
        if (bi.rank < first_rank) {
            first = bi.name;
            first_rank = bi.rank;
            first_auto = by_auto;
        }
    }
    return gpu ? gpu : first_auto || o->resident == 1 ? first : NULL;
}

/* --resident: move the model into a backend's buffers where asked, or
 * where auto finds a GPU or CPU backend that has every op (else it stays on
 * host memory). */
static int make_resident(rayo_context *ctx, llama_model *m, const options *o)
{
    const char *be = o->resident ? resident_backend(ctx, o) : NULL;
    if (!be) {
        if (o->resident == 1)
            fprintf(stderr, "rayo-llama: --resident on: no backend %s\n",
                    o->backend ? o->backend : "loaded");
        return o->resident == 1 ? -1 : 0;
    }
    char err[300];
    int rc = llama_resident(m, ctx, be, err, sizeof err);
    if (rc == 0 && !o->quiet)
        fprintf(stderr, "rayo-llama: the model is resident in %s's buffers\n", be);
    if (rc == 0)
        return 0;
    if (rc == -1 && o->resident == -1) {
        if (!o->quiet)
            fprintf(stderr, "rayo-llama: %s: the model stays in host memory\n", err);
        return 0;
    }
    fprintf(stderr, "rayo-llama: %s\n", err);
    return -1;
}

static int list_backends(const options *o)
{
    rayo_context *ctx = open_rayo(o);
    for (size_t i = 0; ctx && i < rayo_backend_count(ctx); i++) {
        rayo_backend_info bi;
        memset(&bi, 0, sizeof bi);
        bi.struct_size = sizeof bi; /* how much the caller can take */
        static const char *const types[] = {"cpu", "gpu", "software", "other"};
        if (rayo_backend_get(ctx, i, &bi) != RAYO_OK || bi.status != RAYO_BACKEND_LOADED)
            continue;
        if (o->list_devices)
            printf("%s %s %s\n", bi.name, bi.device_type <= RAYO_DEVICE_OTHER ?
                   types[bi.device_type] : "other", bi.device);
        else
            printf("%s\n", bi.name);
    }
    rayo_close(ctx);
    return ctx ? 0 : 1;
}

static int run(const options *o, const gguf_file *g)
{
    char err[300];
    llama_model m;
    vocab v;
    run_stats rs = {0};
    double t0 = now();
    int failed = llama_load(&m, g, o->n_ctx, o->n_batch, err, sizeof err, o->quiet ? NULL : progress);
    rs.t_load = now() - t0;
    if (failed || vocab_load(&v, g, err, sizeof err)) {
        fprintf(stderr, "rayo-llama: %s: %s\n", o->model, err);
        return 1;
    }
    m.precision = o->precision;
    if (o->info) {
        print_info(&m, g);
        llama_free(&m);
        vocab_free(&v);
        return 0;
    }
    size_t n_ids;
    int32_t *ids = prompt_ids(o, &v, m.n_vocab, &n_ids);
    if (ids && o->tokenize) {
        for (size_t i = 0; i < n_ids; i++)
            printf("%s%d", i ? "," : "", ids[i]);
        printf("\n");
    }
    t0 = now();
    rayo_context *ctx = ids && !o->tokenize ? open_rayo(o) : NULL;
    int rc = ids && o->tokenize ? 0 : 1;
    if (!ids)
        fprintf(stderr, "rayo-llama: the prompt gives no tokens, or a bad token id\n");
    int resident = ctx ? make_resident(ctx, &m, o) : -1;
    rs.t_open = now() - t0;
    t0 = now();
    int warm = o->warmup == 1 || (o->warmup == -1 && m.resident);
    if (resident == 0 && warm && warm_up(ctx, &m, o, ids, n_ids) != RAYO_OK)
        resident = -1;
    rs.t_warmup = now() - t0;
    if (resident == 0) {
        rc = generate(ctx, &m, &v, o, ids, n_ids, &rs);
        if (!o->quiet)
            print_speed(ctx, &m, &rs);
        if (o->step_times)
            print_step_times(&m, &rs);
    }
    free(ids);
    llama_free(&m);
    vocab_free(&v);
    rayo_close(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o)) {
        usage();
        return 2;
    }
    if (o.list_backends)
        return list_backends(&o);
    rng = o.seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    gguf_file *g;
    char err[400];
    if (gguf_open(o.model, &g, err, sizeof err)) {
        fprintf(stderr, "rayo-llama: %s\n", err);
        return 1;
    }
    int rc = run(&o, g);
    gguf_close(g);
    return rc;
}

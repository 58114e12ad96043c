/* rayo-llama.c - runs a Llama-architecture GGUF model on rayo: prefill the
 * prompt, then greedy (or temperature / top-k) decoding.  See README.md. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "tokenizer.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct options {
    const char *model, *prompt, *backend, *prompt_tokens, *logits_path;
    size_t n_predict, n_ctx, logits_steps, top_k;
    float temp;
    uint64_t seed;
    int print_tokens, info, quiet, list_backends, tokenize;
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
        "  -q                  no progress or speed lines\n");
}

static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){NULL, "Once upon a time", NULL, NULL, NULL, 32, 0, 4, 40, 0.0f, 1, 0, 0, 0, 0, 0};
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
        else if (!strcmp(a, "-q"))
            o->quiet = 1;
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

static int32_t argmax(const float *x, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return (int32_t)best;
}

/* Temperature and top-k: keep the k largest logits, softmax them at temp, draw. */
static int32_t sample(float *logits, size_t n, float temp, size_t k)
{
    if (temp <= 0.0f || k <= 1)
        return argmax(logits, n);
    if (k > 256)
        k = 256;
    if (k > n)
        k = n;
    int32_t top[256];
    double p[256], sum = 0;
    for (size_t i = 0; i < k; i++) {
        top[i] = argmax(logits, n);
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
    double t_prefill, t_decode;
} run_stats;

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
    double t0 = now();
    rayo_status st = llama_eval(ctx, m, ids, n_ids, logits);
    rs->t_prefill = now() - t0;
    rs->n_prompt = n_ids;
    t0 = now();
    for (size_t i = 0; st == RAYO_OK && i < o->n_predict; i++) {
        if (lf && i < o->logits_steps)
            fwrite(logits, sizeof *logits, m->n_vocab, lf);
        int32_t next = sample(logits, m->n_vocab, o->temp, o->top_k);
        print_token(o, v, next, i == 0);
        rs->n_gen++;
        if (next == v->eos || i + 1 == o->n_predict || m->n_past >= m->n_ctx)
            break;
        st = llama_eval(ctx, m, &next, 1, logits);
    }
    rs->t_decode = now() - t0;
    printf("\n");
    if (lf)
        fclose(lf);
    free(logits);
    if (st != RAYO_OK)
        fprintf(stderr, "rayo-llama: evaluation failed: %s: %s\n", rayo_strerror(st),
                rayo_last_error());
    return st == RAYO_OK ? 0 : 1;
}

static void print_info(const llama_model *m, const gguf_file *g)
{
    printf("llama: %zu layers, %zu wide, %zu heads (%zu KV), head %zu, rope %zu base %g, "
           "ffn %zu, vocab %zu, ctx %zu, eps %g, output %s\n", m->n_layers, m->n_embd,
           m->n_heads, m->n_kv_heads, m->head_dim, m->rope_dims, (double)m->freq_base, m->n_ffn,
           m->n_vocab, m->n_ctx, (double)m->eps, m->output.data == m->tok_embd.data ? "tied" :
           "untied");
    for (uint64_t i = 0; i < g->n_tensors; i++)
        printf("  %-28s %-5s %llu x %llu\n", g->tensors[i].name,
               rayo_dtype_name(g->tensors[i].dtype), (unsigned long long)g->tensors[i].ne[0],
               (unsigned long long)g->tensors[i].ne[1]);
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
    return ctx;
}

/* The final line: where the decode's weight products ran, and the speeds. */
static void print_speed(rayo_context *ctx, const llama_model *m, const run_stats *rs)
{
    rayo_dtype wdt = m->layers[0].gate.dtype;
    size_t size = m->n_ffn * m->n_embd;
    const char *typed = rayo_backend_for(ctx, RAYO_OP_GEMV, RAYO_DTYPES(wdt, RAYO_DTYPE_F32, 0,
                                         RAYO_DTYPE_F32), size);
    const char *f32 = rayo_backend_for(ctx, RAYO_OP_GEMV, 0, size);
    int interim = lm_force_interim || !typed;
    if (lm_fallbacks && !lm_force_interim)
        fprintf(stderr, "rayo-llama: %zu calls took the interim path (no backend has the op)\n",
                lm_fallbacks);
    fprintf(stderr, "rayo-llama: gemv %s on %s%s: prefill %zu tokens %.1f tok/s, decode %zu "
            "tokens %.2f tok/s\n", interim ? "f32" : rayo_dtype_name(wdt),
            interim ? (f32 ? f32 : "?") : typed, interim ? " (interim path)" : "", rs->n_prompt,
            rs->n_prompt / (rs->t_prefill > 0 ? rs->t_prefill : 1e-9),
            rs->n_gen > 1 ? rs->n_gen - 1 : 0,
            rs->n_gen > 1 && rs->t_decode > 0 ? (double)(rs->n_gen - 1) / rs->t_decode : 0.0);
}

static int list_backends(const options *o)
{
    rayo_context *ctx = open_rayo(o);
    for (size_t i = 0; ctx && i < rayo_backend_count(ctx); i++) {
        rayo_backend_info bi;
        memset(&bi, 0, sizeof bi);
        bi.struct_size = sizeof bi; /* how much the caller can take */
        if (rayo_backend_get(ctx, i, &bi) == RAYO_OK && bi.status == RAYO_BACKEND_LOADED)
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
    if (llama_load(&m, g, o->n_ctx, err, sizeof err, o->quiet ? NULL : progress) ||
        vocab_load(&v, g, err, sizeof err)) {
        fprintf(stderr, "rayo-llama: %s: %s\n", o->model, err);
        return 1;
    }
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
    rayo_context *ctx = ids && !o->tokenize ? open_rayo(o) : NULL;
    int rc = ids && o->tokenize ? 0 : 1;
    run_stats rs = {0};
    if (!ids)
        fprintf(stderr, "rayo-llama: the prompt gives no tokens, or a bad token id\n");
    if (ctx)
        rc = generate(ctx, &m, &v, o, ids, n_ids, &rs);
    if (ctx && !o->quiet)
        print_speed(ctx, &m, &rs);
    rayo_close(ctx);
    free(ids);
    llama_free(&m);
    vocab_free(&v);
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

/* SPDX-License-Identifier: MIT */
/* abi-harness.c - a simulated core, built twice from this source: against
 * the frozen 1.0 header (test-abi-oldcore: a core released at ABI 1.0) and
 * against the 1.99 header (test-abi-newcore: a core of a future minor).
 * Each drives both test plugins (rayo-abi10.so, rayo-abi199.so) the way
 * the real core does: descriptor checks, op entries stepped by
 * op_entry_size, probe, init, kernels, memory API, fini.
 *
 * What it proves:
 *   oldcore x abi199  a plugin built for a newer minor works with a 1.0
 *     core.  Every struct the harness hands the plugin (rayo_host,
 *     rayo_probe_result, rayo_call, rayo_dev_call) is 1.0-sized and ends
 *     exactly at an inaccessible page, so a plugin that read or wrote one
 *     byte beyond what struct_size says would crash this test; and it finds
 *     the plugin's 24-byte op entries by op_entry_size.
 *   newcore x abi199  the same plugin does use the new fields when the core
 *     has them (the bias reaches the kernel and the batch, the new host
 *     service is called, the probe note is written): the guard above is
 *     not passed by a plugin that never looks.
 *   newcore x abi10   a 1.0 plugin works with a newer core that passes
 *     larger structs (with their sizes) and reads the plugin's smaller
 *     descriptor, entries and memory API only as far as their sizes say.
 *   oldcore x abi10   the baseline.
 * The real core with both plugins: test-abi-core.c. */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#ifdef HARNESS_199
#include "rayo-plugin-1.99.h"
#define CORE_MINOR 99
#else
#include "rayo-plugin-1.0.h"
#define CORE_MINOR 0
#endif
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef ABI_PLUGIN_DIR
#error "ABI_PLUGIN_DIR must name the folder of rayo-abi10.so and rayo-abi199.so"
#endif

static int passed, failed;
#define CHECK(cond, ...) do {                                                   \
        if (cond) { passed++; }                                                 \
        else {                                                                  \
            failed++;                                                           \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
        }                                                                       \
    } while (0)

/* The sizes a 1.0 core knows (the prefix every later struct keeps). */
#define SIZE_1_0(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))
#define DESCRIPTOR_1_0 SIZE_1_0(rayo_plugin_descriptor, reserved2)
#define OP_ENTRY_1_0 SIZE_1_0(rayo_op_entry, fn)
#define MEMORY_1_0 SIZE_1_0(rayo_memory_api, batch_free)
#define HAS_FIELD(type, ptr, field) \
    (offsetof(type, field) + sizeof(((const type *)0)->field) <= (ptr)->struct_size)

/* ---- memory that ends at a page the process may not touch -------------- */
static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t guarded_span(size_t bytes)
{
    size_t page = page_size();
    return (bytes + page - 1) / page * page + page;
}

/* `bytes` zeroed bytes whose end touches a PROT_NONE page. */
static void *guarded_alloc(size_t bytes)
{
    size_t span = guarded_span(bytes), page = page_size();
    char *base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED || mprotect(base + span - page, page, PROT_NONE)) {
        perror("guarded_alloc");
        exit(99);
    }
    return base + span - page - bytes;
}

static void guarded_free(void *p, size_t bytes)
{
    size_t span = guarded_span(bytes), page = page_size();
    munmap((char *)p + bytes + page - span, span);
}

/* ---- host services ------------------------------------------------------ */
static int notes; /* calls of the 1.99 service */

static void host_log(const rayo_host *host, int level, const char *fmt, ...)
{
    (void)host;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "plugin log %d: ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void host_set_error(const rayo_host *host, const char *fmt, ...)
{
    (void)host;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "plugin error: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *host_config(const rayo_host *host, const char *key)
{
    (void)host;
    (void)key;
    return NULL;
}

static void *host_alloc(size_t align, size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, align, bytes ? bytes : 1) ? NULL : p;
}

static unsigned host_threads(const rayo_host *host)
{
    (void)host;
    return 1;
}

static void host_parallel_for(const rayo_host *host, size_t n, void (*fn)(void *, size_t, unsigned), void *arg)
{
    (void)host;
    for (size_t i = 0; i < n; i++)
        fn(arg, i, 0);
}

static const char *host_cache_dir(const rayo_host *host)
{
    (void)host;
    return NULL;
}

#ifdef HARNESS_199
static void host_note(const rayo_host *host, const char *what)
{
    (void)host;
    (void)what;
    notes++;
}
#endif

static void fill_host(rayo_host *h)
{
    h->struct_size = sizeof *h;
    h->abi_major = RAYO_PLUGIN_ABI_MAJOR;
    h->abi_minor = CORE_MINOR;
    h->log = host_log;
    h->set_error = host_set_error;
    h->config = host_config;
    h->alloc_aligned = host_alloc;
    h->free_aligned = free;
    h->num_threads = host_threads;
    h->parallel_for = host_parallel_for;
    h->cache_dir = host_cache_dir;
#ifdef HARNESS_199
    h->future_note = host_note;
#endif
}

/* ---- the plugin, as a core sees it -------------------------------------- */
typedef struct plugin {
    const char *name;
    void *dl;
    const rayo_plugin_descriptor *d;
    rayo_kernel_fn add, mul;
    void *state;
} plugin;

/* The descriptor checks of a core: only the 1.0 prefix is required. */
static bool open_plugin(plugin *p)
{
    char path[512];
    snprintf(path, sizeof path, "%s/rayo-%s.so", ABI_PLUGIN_DIR, p->name);
    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(p->dl != NULL, "dlopen %s: %s", path, dlerror());
    if (!p->dl)
        return false;
    p->d = (const rayo_plugin_descriptor *)dlsym(p->dl, RAYO_PLUGIN_SYMBOL);
    CHECK(p->d && p->d->magic == RAYO_PLUGIN_MAGIC && p->d->abi_major == RAYO_PLUGIN_ABI_MAJOR,
          "%s: a descriptor of ABI 1", p->name);
    CHECK(p->d && p->d->struct_size >= DESCRIPTOR_1_0, "%s: descriptor of %u bytes", p->name,
          p->d ? (unsigned)p->d->struct_size : 0u);
    return p->d && p->d->struct_size >= DESCRIPTOR_1_0;
}

/* Steps through the entries by op_entry_size and takes the f32 add and
 * mul; entries it does not know (op 250, dtype 31) are ignored. */
static void take_ops(plugin *p)
{
    size_t stride = p->d->op_entry_size;
    CHECK(stride >= OP_ENTRY_1_0 && stride % sizeof(void *) == 0, "%s: op_entry_size %zu", p->name, stride);
    for (size_t i = 0; i < p->d->op_count; i++) {
        const rayo_op_entry *e = (const rayo_op_entry *)(const void *)((const char *)p->d->ops + i * stride);
        if (e->op == RAYO_OP_ADD && e->dtypes == 0)
            p->add = e->fn;
        else if (e->op == RAYO_OP_MUL && e->dtypes == 0)
            p->mul = e->fn;
#ifdef HARNESS_199
        if (stride >= sizeof(rayo_op_entry))
            CHECK(e->future_cost == 0xfeedfacecafef00dull, "%s: entry %zu's future_cost read back", p->name, i);
#endif
    }
    CHECK(p->add && p->mul, "%s: add and mul found in %zu entries of %zu bytes", p->name, p->d->op_count, stride);
}

static void probe_and_init(plugin *p, rayo_host *host)
{
    rayo_probe_result *r = guarded_alloc(sizeof *r);
    r->struct_size = sizeof *r;
    CHECK(p->d->probe(host, r) == RAYO_OK && r->device_count == 1, "%s: probe", p->name);
#ifdef HARNESS_199
    bool want_note = p->d->abi_minor >= 99;
    CHECK(want_note == (strcmp(r->future_note, "written by a 1.99 plugin") == 0),
          "%s: probe note \"%s\"", p->name, r->future_note);
#endif
    guarded_free(r, sizeof *r);
    notes = 0;
    CHECK(p->d->init(host, 0, &p->state) == RAYO_OK, "%s: init", p->name);
#ifdef HARNESS_199
    CHECK(notes == (want_note ? 1 : 0), "%s: the 1.99 host service was called %d times", p->name, notes);
#endif
}

/* The bias a core of this minor sends: only to a plugin that knows the
 * field (a newer core never sends an older plugin a field it lacks). */
static float bias_for(const plugin *p)
{
    return CORE_MINOR >= 99 && p->d->abi_minor >= 99 ? 0.5f : 0.0f;
}

static void random_floats(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 200.0f - 100.0f;
}

/* y must be a + b (+ bias), each sum rounded as the kernel rounds it. */
static bool sums_right(const float *a, const float *b, const float *y, size_t n, float bias)
{
    for (size_t i = 0; i < n; i++) {
        float want = a[i] + b[i];
        if (bias != 0.0f)
            want += bias;
        if (y[i] != want)
            return false;
    }
    return true;
}

static void run_kernels(plugin *p, size_t n)
{
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *y = malloc(n * sizeof *y);
    random_floats(a, n);
    random_floats(b, n);
    rayo_call *c = guarded_alloc(sizeof *c);
    c->struct_size = sizeof *c;
    c->op = RAYO_OP_ADD;
    c->n = n;
    c->a = a;
    c->b = b;
    c->y = y;
#ifdef HARNESS_199
    c->future_bias = bias_for(p);
#endif
    CHECK(p->add(p->state, c) == RAYO_OK && sums_right(a, b, y, n, bias_for(p)), "%s: add of %zu", p->name, n);
    c->op = RAYO_OP_MUL;
    bool right = p->mul(p->state, c) == RAYO_OK;
    for (size_t i = 0; i < n; i++)
        right &= y[i] == a[i] * b[i];
    CHECK(right, "%s: mul of %zu", p->name, n);
    guarded_free(c, sizeof *c);
    free(a);
    free(b);
    free(y);
}

/* One batch of one add on three buffers, through the plugin's memory API. */
static void run_batch(plugin *p, size_t n)
{
    const rayo_memory_api *m = p->d->memory;
    CHECK(m && m->struct_size >= MEMORY_1_0, "%s: memory API", p->name);
    if (!m || m->struct_size < MEMORY_1_0)
        return;
    float a[64], b[64], y[64];
    random_floats(a, n);
    random_floats(b, n);
    void *buf = NULL, *batch = NULL, *st = p->state;
    CHECK(m->buffer_alloc(st, 3 * sizeof a, &buf) == RAYO_OK, "%s: buffer_alloc", p->name);
    m->buffer_write(st, buf, 0, a, sizeof a);
    m->buffer_write(st, buf, sizeof a, b, sizeof b);
    rayo_dev_call *c = guarded_alloc(sizeof *c);
    c->struct_size = sizeof *c;
    c->op = RAYO_OP_ADD;
    c->n = n;
    c->a = (rayo_dev_operand){buf, 0};
    c->b = (rayo_dev_operand){buf, sizeof a};
    c->y = (rayo_dev_operand){buf, 2 * sizeof a};
#ifdef HARNESS_199
    c->future_bias = bias_for(p);
#endif
    CHECK(m->batch_begin(st, &batch) == RAYO_OK && m->batch_record(st, batch, c) == RAYO_OK &&
              m->batch_submit(st, batch) == RAYO_OK && m->batch_wait(st, batch, UINT64_MAX) == RAYO_OK,
          "%s: batch", p->name);
    guarded_free(c, sizeof *c);
    m->buffer_read(st, buf, 2 * sizeof a, y, sizeof y);
    CHECK(sums_right(a, b, y, n, bias_for(p)), "%s: batched add of %zu", p->name, n);
#ifdef HARNESS_199
    bool has_fill = HAS_FIELD(rayo_memory_api, m, future_buffer_fill);
    CHECK(has_fill == (p->d->abi_minor >= 99), "%s: memory API of %zu bytes", p->name, m->struct_size);
    if (has_fill) {
        unsigned char bytes[16];
        m->future_buffer_fill(st, buf, 0, sizeof bytes, 0x5a);
        m->buffer_read(st, buf, 0, bytes, sizeof bytes);
        CHECK(bytes[0] == 0x5a && bytes[15] == 0x5a, "%s: the 1.99 memory function ran", p->name);
    }
#endif
    m->batch_free(st, batch);
    m->buffer_free(st, buf);
}

/* The descriptor's 1.99 tail, read only where its struct_size has it. */
static void read_descriptor_tail(const plugin *p)
{
#ifdef HARNESS_199
    bool has_tail = HAS_FIELD(rayo_plugin_descriptor, p->d, future_homepage);
    CHECK(has_tail == (p->d->abi_minor >= 99), "%s: descriptor of %u bytes", p->name, (unsigned)p->d->struct_size);
    if (has_tail)
        CHECK(p->d->future_caps == 0x199 && p->d->future_homepage, "%s: 1.99 descriptor fields", p->name);
#else
    (void)p;
#endif
}

static void drive(const char *name, unsigned minor)
{
    plugin p = {.name = name};
    if (!open_plugin(&p))
        return;
    CHECK(p.d->abi_minor == minor, "%s: minor %u", name, (unsigned)p.d->abi_minor);
    read_descriptor_tail(&p);
    take_ops(&p);
    rayo_host *host = guarded_alloc(sizeof *host);
    fill_host(host);
    probe_and_init(&p, host);
    if (p.add && p.mul && p.state) {
        static const size_t sizes[] = {1, 7, 64, 1000, 4099};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            run_kernels(&p, sizes[i]);
        run_batch(&p, 1);
        run_batch(&p, 61);
    }
    if (p.state && p.d->fini)
        p.d->fini(p.state);
    guarded_free(host, sizeof *host);
    dlclose(p.dl);
}

int main(void)
{
    srand((unsigned)getpid());
    printf("a core of ABI 1.%d drives a 1.0 and a 1.99 plugin\n", CORE_MINOR);
    drive("abi10", 0);
    drive("abi199", 99);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : (passed ? 0 : 99);
}

/* SPDX-License-Identifier: MIT */
/* cuda-plugin.c - descriptor, probe, init/fini, and the PTX modules of the
 * cuda backend: JIT compilation for the device (cuLinkAddData, then
 * cuModuleLoadDataEx), module and function handles cached in the state, and
 * an on-disk cache of the JIT output keyed by the PTX's hash, the driver
 * version and the device's compute capability. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"
#include "cuda-ptx.h"
#include "../gpu-common/gpu-descriptor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The kernels the plugin picks when the config does not name one: the
 * fastest measured on the H100 and H200 (doc/benchmarks-cuda.md). */
#define DEFAULT_SGEMM "sgemm_nn_k16_async"
#define DEFAULT_SGEMM_K8 "sgemm_nn_k8_async"
#define DEFAULT_TF32 "tf32_128x128_w2x2_r"
#define DEFAULT_WGMMA "wg_tf32_128x256"

/* ---- probe ---------------------------------------------------------------- */
static int device_attr(const cuda_driver *drv, CUdevice dev, CUdevice_attribute a)
{
    int v = 0;
    if (drv->cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS)
        return 0;
    return v;
}

/* Devices of compute capability 8.0 or newer, in driver order.  ordinals[i]
 * is the CUdevice ordinal of the i-th usable device. */
static uint32_t usable_devices(const cuda_driver *drv, rayo_probe_result *res, int *ordinals, char *why,
                               size_t why_len)
{
    int count = 0;
    CUresult r = drv->cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count <= 0) {
        snprintf(why, why_len, "no CUDA device (cuDeviceGetCount: %d devices)", r == CUDA_SUCCESS ? count : 0);
        return 0;
    }
    uint32_t used = 0;
    for (int i = 0; i < count && used < RAYO_MAX_DEVICES; i++) {
        CUdevice dev;
        char name[128] = "";
        if (drv->cuDeviceGet(&dev, i) != CUDA_SUCCESS)
            continue;
        drv->cuDeviceGetName(name, (int)sizeof name - 1, dev);
        int major = device_attr(drv, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        int minor = device_attr(drv, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        if (major < 8) {
            snprintf(why, why_len, "%s has compute capability %d.%d; the cuda backend needs 8.0 or newer",
                     name, major, minor);
            continue;
        }
        if (res) {
            rayo_device_desc *d = &res->devices[used];
            snprintf(d->name, sizeof d->name, "%s (sm_%d%d)", name, major, minor);
            d->type = RAYO_DEVICE_GPU;
            d->flags = 0;
            size_t bytes = 0;
            d->memory_bytes = drv->cuDeviceTotalMem(&bytes, dev) == CUDA_SUCCESS ? bytes : 0;
        }
        if (ordinals)
            ordinals[used] = i;
        used++;
    }
    return used;
}

static rayo_status cuda_probe(const rayo_host *host, rayo_probe_result *res)
{
    (void)host;
    res->device_count = 0;
    const cuda_driver *drv = cuda_driver_get(res->reason, sizeof res->reason);
    if (!drv)
        return RAYO_OK;
    res->device_count = usable_devices(drv, res, NULL, res->reason, sizeof res->reason);
    if (res->device_count)
        snprintf(res->reason, sizeof res->reason, "CUDA driver %d.%d", drv->version / 1000,
                 drv->version % 1000 / 10);
    return RAYO_OK;
}

/* ---- state ---------------------------------------------------------------- */
rayo_status cuda_fail(cuda_state *st, CUresult r, const char *what)
{
    int lost = 0;
    rayo_status s = cuda_map_error(r, &lost);
    char text[192];
    cuda_error_text(st->drv, r, text, sizeof text);
    if (lost) {
        atomic_store(&st->lost, 1);
        st->host->set_error(st->host, "cuda: %s: %s; the device is lost for this context", what, text);
    } else {
        st->host->set_error(st->host, "cuda: %s: %s", what, text);
    }
    return s;
}

rayo_status cuda_enter(cuda_state *st)
{
    if (atomic_load(&st->lost)) {
        st->host->set_error(st->host, "cuda: the device was lost earlier in this context");
        return RAYO_E_DEVICE_LOST;
    }
    CUresult r = st->drv->cuCtxSetCurrent(st->ctx);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, "cuCtxSetCurrent");
}

static int config_yes(const rayo_host *host, const char *key, int dflt)
{
    const char *v = host->config ? host->config(host, key) : NULL;
    if (!v || !*v)
        return dflt;
    if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on") || !strcmp(v, "1"))
        return 1;
    if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off") || !strcmp(v, "0"))
        return 0;
    host->log(host, RAYO_LOG_WARN, "[backend.cuda] %s = %s: expected yes or no; using %s", key, v,
              dflt ? "yes" : "no");
    return dflt;
}

/* yes (1, the default), no (0) or all (2) */
static int config_yes_all(const rayo_host *host, const char *key)
{
    const char *v = host->config ? host->config(host, key) : NULL;
    return v && !strcasecmp(v, "all") ? 2 : config_yes(host, key, 1);
}

/* Whether module mod's PTX has a kernel of this name. */
static int ptx_has_kernel(int mod, const char *name)
{
    char entry[96];
    int n = snprintf(entry, sizeof entry, ".entry %s(", name);
    return n > 0 && (size_t)n < sizeof entry && strstr(rayo_cuda_ptx_modules[mod].body, entry) != NULL;
}

/* A kernel of module mod whose name starts with prefix, or dflt. */
static void config_kernel(const rayo_host *host, const char *key, int mod, const char *prefix, const char *dflt,
                          char *out, size_t len)
{
    const char *v = host->config ? host->config(host, key) : NULL;
    if (v && *v && strcmp(v, "auto") != 0) {
        if (strncmp(v, prefix, strlen(prefix)) == 0 && strlen(v) < len && ptx_has_kernel(mod, v)) {
            snprintf(out, len, "%s", v);
            return;
        }
        host->log(host, RAYO_LOG_WARN, "[backend.cuda] %s = %s: not a %s* kernel of this build; using %s", key, v,
                  prefix, dflt);
    }
    snprintf(out, len, "%s", dflt);
}

/* staging_mib (host staging per stream, 1..1024 MiB) and pinned_staging. */
static void read_staging_config(cuda_state *st)
{
    const rayo_host *host = st->host;
    const char *mib = host->config ? host->config(host, "staging_mib") : NULL;
    long v = CUDA_DEFAULT_STAGING_MIB;
    if (mib && *mib) {
        char *end;
        v = strtol(mib, &end, 10);
        if (*end || v < 1 || v > 1024) {
            host->log(host, RAYO_LOG_WARN, "[backend.cuda] staging_mib = %s: expected 1..1024; using %d", mib,
                      CUDA_DEFAULT_STAGING_MIB);
            v = CUDA_DEFAULT_STAGING_MIB;
        }
    }
    st->staging_bytes = (size_t)v << 20;
    st->use_pinned = config_yes(host, "pinned_staging", 1);
}

static void read_config(cuda_state *st)
{
    const rayo_host *host = st->host;
    const char *prec = host->config ? host->config(host, "precision") : NULL;
    st->allow_tf32 = 0;
    if (prec && !strcasecmp(prec, "tf32"))
        st->allow_tf32 = 1;
    else if (prec && *prec && strcasecmp(prec, "fp32") != 0)
        host->log(host, RAYO_LOG_WARN, "[backend.cuda] precision = %s: expected fp32 or tf32; using fp32", prec);
    st->jit_cache = config_yes(host, "jit_cache", 1);
    /* sgemm_kernel: the kernel for A, B not transposed; a _k16 one needs
     * K % 16 == 0 and leaves other shapes to sgemm_fallback (a _k8 one) */
    config_kernel(host, "sgemm_kernel", MOD_SGEMM, "sgemm_nn_", DEFAULT_SGEMM, st->sgemm_kernel, sizeof st->sgemm_kernel);
    snprintf(st->sgemm_fallback, sizeof st->sgemm_fallback, "%s",
             strstr(st->sgemm_kernel, "_k16") ? DEFAULT_SGEMM_K8 : st->sgemm_kernel);
    config_kernel(host, "tf32_kernel", MOD_TF32, "tf32_", DEFAULT_TF32, st->tf32_kernel, sizeof st->tf32_kernel);
    /* wgmma: TF32 through warpgroup MMA where the device runs sm_90a code
     * (cc 9.0 exactly) and the driver takes PTX ISA 8.0 (CUDA 12.0) */
    st->use_wgmma = config_yes(host, "wgmma", 1) && st->cc_major == 9 && st->cc_minor == 0 &&
                    st->drv->version >= 12000;
    config_kernel(host, "wgmma_kernel", MOD_WGMMA, "wg_tf32_", DEFAULT_WGMMA, st->wgmma_kernel, sizeof st->wgmma_kernel);
    /* wgmma_half: relaxed f16 x f16 and bf16 x bf16 matmul through wgmma too */
    st->use_wgmma_half = st->use_wgmma && config_yes(host, "wgmma_half", 1);
    /* graphs: a replayed batch runs as a CUDA graph */
    st->use_graphs = config_yes(host, "graphs", 1);
    /* pdl: each kernel of a graph launched while the one before it runs (it
     * waits in griddepcontrol.wait, which every sm_90 kernel begins with:
     * cuda-ptx.h); programmatic edges came with CUDA 12.3 */
    st->pdl_edges = config_yes(host, "pdl", 1) && st->use_graphs && st->ptx_target >= 90 &&
                    st->drv->version >= 12030 && st->drv->cuGraphAddDependencies_v2;
    st->use_gemv8 = config_yes(host, "gemv_int8", 1);
    st->fuse_norm = config_yes(host, "fuse_norm", 1);
    st->fuse_rope = config_yes(host, "fuse_rope", 1);
    st->use_attn_block = config_yes(host, "attention_block", 1);
    st->use_attn_cluster = config_yes(host, "attention_cluster", 1);
    st->use_attn_prefill = config_yes(host, "attention_prefill", 1);
    st->use_attn_group = config_yes_all(host, "attention_group");
    st->use_half_prompt = config_yes(host, "half_prompt", 1);
    st->use_prompt_split_k = config_yes(host, "prompt_split_k", 1);
    st->use_cubin = config_yes(host, "embedded_code", 1);
    st->profile = config_yes(host, "profile", 0) && st->drv->event_elapsed;
    cuda_mma16_config(st);
    const char *lanes = host->config ? host->config(host, "host_streams") : NULL;
    st->lane_limit = 4;
    if (lanes && *lanes) {
        int v = atoi(lanes);
        if (v >= 1 && v <= CUDA_MAX_LANES)
            st->lane_limit = v;
        else
            host->log(host, RAYO_LOG_WARN, "[backend.cuda] host_streams = %s: expected 1..%d", lanes, CUDA_MAX_LANES);
    }
    read_staging_config(st);
    st->cache_dir[0] = '\0';
    if (st->jit_cache && host->struct_size > offsetof(rayo_host, cache_dir) && host->cache_dir) {
        const char *dir = host->cache_dir(host);
        if (dir && strlen(dir) < sizeof st->cache_dir)
            snprintf(st->cache_dir, sizeof st->cache_dir, "%s", dir);
    }
}

static void cuda_fini(void *state);

static rayo_status cuda_init(const rayo_host *host, uint32_t device, void **state)
{
    char why[256];
    const cuda_driver *drv = cuda_driver_get(why, sizeof why);
    if (!drv) {
        host->set_error(host, "%s", why);
        return RAYO_E_NOT_FOUND;
    }
    int ordinals[RAYO_MAX_DEVICES];
    uint32_t count = usable_devices(drv, NULL, ordinals, why, sizeof why);
    if (device >= count) {
        host->set_error(host, "cuda: no usable device %u", device);
        return RAYO_E_NOT_FOUND;
    }
    cuda_state *st = calloc(1, sizeof *st);
    if (!st)
        return RAYO_E_NOMEM;
    st->host = host;
    st->drv = drv;
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->lane_free, NULL);
    CUresult r = drv->cuDeviceGet(&st->device, ordinals[device]);
    if (r == CUDA_SUCCESS)
        r = drv->cuDevicePrimaryCtxRetain(&st->ctx, st->device);
    if (r != CUDA_SUCCESS) {
        rayo_status s = cuda_fail(st, r, "cannot open the device's context");
        st->ctx = NULL;
        cuda_fini(st);
        return s;
    }
    st->cc_major = device_attr(drv, st->device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    st->cc_minor = device_attr(drv, st->device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    st->sm_count = device_attr(drv, st->device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    if (st->sm_count <= 0)
        st->sm_count = 1;
    st->max_smem_optin = device_attr(drv, st->device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    /* sm_90 PTX (ISA 7.8) needs a CUDA 12.0 driver; sm_80 PTX runs on every device we accept */
    st->ptx_target = (st->cc_major >= 9 && drv->version >= 12000) ? 90 : 80;
    read_config(st);
    host->log(host, RAYO_LOG_INFO, "cuda: sm_%d%d, %d SMs, driver %d, PTX target sm_%d, %s%s, JIT cache %s",
              st->cc_major, st->cc_minor, st->sm_count, drv->version, st->ptx_target,
              st->allow_tf32 ? "tf32 allowed" : "fp32", st->allow_tf32 && st->use_wgmma ? " (wgmma)" : "",
              st->cache_dir[0] ? st->cache_dir : "off");
    host->log(host, RAYO_LOG_INFO, "cuda: programmatic dependent launch in graphs %s",
              st->pdl_edges ? "on" : "off (pdl = no, no graphs, not sm_90 or a driver before CUDA 12.3)");
    *state = st;
    return RAYO_OK;
}

static void cuda_fini(void *state)
{
    cuda_state *st = state;
    if (!st)
        return;
    cuda_profile_report(st);
    if (st->ctx) {
        st->drv->cuCtxSetCurrent(st->ctx);
        cuda_lanes_destroy(st);
        for (int i = 0; i < MOD_COUNT; i++)
            if (st->modules[i].state == 1)
                st->drv->cuModuleUnload(st->modules[i].handle);
        st->drv->cuCtxSetCurrent(NULL);
        st->drv->cuDevicePrimaryCtxRelease(st->device);
    }
    pthread_cond_destroy(&st->lane_free);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

/* ---- PTX modules and the JIT cache --------------------------------------- */
static uint64_t fnv1a64(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* One module's PTX for the device's target, as handed to the JIT. */
typedef struct ptx_source {
    const char *name;
    int sm;
    char *text;           /* header + body (rayo_ptx_text), NUL-terminated */
    size_t size;          /* strlen(text) */
} ptx_source;

/* cache file: <dir>/<module>-<ptx hash>-sm<target>-cc<XY>-drv<version>.cubin */
static int cache_path(const cuda_state *st, const ptx_source *src, char *out, size_t len)
{
    if (!st->cache_dir[0])
        return -1;
    int w = snprintf(out, len, "%s/%s-%016llx-sm%d-cc%d%d-drv%d.cubin", st->cache_dir, src->name,
                     (unsigned long long)fnv1a64(src->text, src->size), src->sm, st->cc_major, st->cc_minor,
                     st->drv->version);
    return (w < 0 || (size_t)w >= len) ? -1 : 0;
}

#define CUBIN_MAX (64u << 20)

static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    void *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && (unsigned long)n < CUBIN_MAX && fseek(f, 0, SEEK_SET) == 0) {
            data = malloc((size_t)n);
            if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
                free(data);
                data = NULL;
            }
            *size = (size_t)n;
        }
    }
    fclose(f);
    return data;
}

/* Written to a temporary name and renamed: readers never see half a file. */
static void write_file_atomic(const cuda_state *st, const char *path, const void *data, size_t size)
{
    char tmp[1300];
    int w = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (w < 0 || (size_t)w >= sizeof tmp)
        return;
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return;
    int ok = fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        st->host->log(st->host, RAYO_LOG_DEBUG, "cuda: cannot write the JIT cache %s: %s", path, strerror(errno));
        remove(tmp);
    }
}

static CUresult load_image(cuda_state *st, const void *image, CUmodule *mod, char *log, size_t log_len)
{
    CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)log_len};
    log[0] = '\0';
    return st->drv->cuModuleLoadDataEx(mod, image, 2, opt, val);
}

/* PTX -> cubin for this device; the driver's error log lands in log. */
static CUresult jit_compile(cuda_state *st, const ptx_source *src, void **cubin, size_t *size, char *log,
                            size_t log_len)
{
    const cuda_driver *drv = st->drv;
    CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)log_len};
    CUlinkState link;
    log[0] = '\0';
    CUresult r = drv->cuLinkCreate(2, opt, val, &link);
    if (r != CUDA_SUCCESS)
        return r;
    r = drv->cuLinkAddData(link, CU_JIT_INPUT_PTX, src->text, src->size + 1, src->name, 0, NULL, NULL);
    void *out = NULL;
    size_t out_size = 0;
    if (r == CUDA_SUCCESS)
        r = drv->cuLinkComplete(link, &out, &out_size);
    if (r == CUDA_SUCCESS) {
        *cubin = malloc(out_size);
        if (*cubin) {
            memcpy(*cubin, out, out_size);
            *size = out_size;
        } else {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    drv->cuLinkDestroy(link);
    return r;
}

/* Loads module m from its PTX: from the JIT cache when it holds the
 * compiled module, else through the JIT (then cached). */
static rayo_status module_load_ptx(cuda_state *st, cuda_module *m, const ptx_source *src)
{
    char path[1200], log[8192];
    size_t size = 0;
    void *cubin = NULL;
    if (cache_path(st, src, path, sizeof path) == 0 && (cubin = read_file(path, &size)) != NULL) {
        CUresult r = load_image(st, cubin, &m->handle, log, sizeof log);
        free(cubin);
        cubin = NULL;
        if (r == CUDA_SUCCESS) {
            m->state = 1;
            return RAYO_OK;
        }
        st->host->log(st->host, RAYO_LOG_INFO, "cuda: discarding the JIT cache %s (it does not load)", path);
        remove(path);
    }
    CUresult r = jit_compile(st, src, &cubin, &size, log, sizeof log);
    if (r == CUDA_SUCCESS) {
        r = load_image(st, cubin, &m->handle, log, sizeof log);
        if (r == CUDA_SUCCESS && cache_path(st, src, path, sizeof path) == 0)
            write_file_atomic(st, path, cubin, size);
    }
    free(cubin);
    if (r == CUDA_SUCCESS) {
        m->state = 1;
        return RAYO_OK;
    }
    char text[192];
    cuda_error_text(st->drv, r, text, sizeof text);
    snprintf(m->error, sizeof m->error, "cuda: JIT of PTX module '%s' for sm_%d (device sm_%d%d) failed: %s%s%s",
             src->name, src->sm, st->cc_major, st->cc_minor, text, log[0] ? ": " : "", log);
    int lost = 0;
    rayo_status s = cuda_map_error(r, &lost);
    if (lost) {
        atomic_store(&st->lost, 1);
    } else if (r != CUDA_ERROR_OUT_OF_MEMORY) {
        m->state = -1; /* a PTX the driver rejects stays rejected: do not retry on every call */
        s = RAYO_E_BACKEND;
    }
    st->host->set_error(st->host, "%s", m->error);
    return s;
}

/* Loads module pm from the machine code embedded at build time, where the
 * build made some for this device (sm_90 code runs on compute capability
 * 9.0); 0 when it did not load (the caller then takes the PTX). */
static int module_load_cubin(cuda_state *st, cuda_module *m, const rayo_ptx_module *pm)
{
    if (!st->use_cubin || st->cc_major * 10 + st->cc_minor != 90)
        return 0;
    for (unsigned i = 0; i < rayo_cuda_cubin_count; i++) {
        const rayo_cubin *c = &rayo_cuda_cubins[i];
        if (strcmp(c->module, pm->name) != 0)
            continue;
        char log[1024];
        CUresult r = load_image(st, c->data, &m->handle, log, sizeof log);
        if (r == CUDA_SUCCESS) {
            m->state = 1;
            return 1;
        }
        st->host->log(st->host, RAYO_LOG_INFO, "cuda: the embedded sm_90 code of module %s does not load (%d %s): "
                      "compiling its PTX", pm->name, (int)r, log);
    }
    return 0;
}

/* Loads module `id` (lock held). */
static rayo_status module_load(cuda_state *st, int id)
{
    cuda_module *m = &st->modules[id];
    if (m->state == 1)
        return RAYO_OK;
    if (m->state == -1) {
        st->host->set_error(st->host, "%s", m->error);
        return RAYO_E_BACKEND;
    }
    const rayo_ptx_module *pm = &rayo_cuda_ptx_modules[id]; /* generated in MOD_ order */
    if (pm->arch_specific && (st->ptx_target != pm->min_sm || st->cc_major * 10 + st->cc_minor != pm->min_sm)) {
        st->host->set_error(st->host, "cuda: PTX module %s is for sm_%da only", pm->name, pm->min_sm);
        return RAYO_E_UNSUPPORTED;
    }
    if (module_load_cubin(st, m, pm))
        return RAYO_OK;
    ptx_source src = {pm->name, st->ptx_target, NULL, 0};
    src.text = rayo_ptx_text(pm, src.sm, &src.size);
    if (!src.text) {
        st->host->set_error(st->host, "cuda: out of memory for the PTX of module %s", pm->name);
        return RAYO_E_NOMEM;
    }
    rayo_status s = module_load_ptx(st, m, &src);
    free(src.text);
    return s;
}

static size_t name_hash(const char *s)
{
    return (size_t)fnv1a64(s, strlen(s));
}

/* For the gemv8 kernels (cuda-infer.c launches two blocks per SM): a
 * shared memory carveout (percent of an SM's) that holds two blocks of the
 * most they take, 48 KiB each and the 1 KiB reserved per block (an SM has
 * the opt-in maximum of a block and one such 1 KiB).  Left to itself the
 * driver may choose room for one block (ncu saw that on the H200). */
static CUresult gemv8_carveout(const cuda_state *st, CUfunction fn, const char *name)
{
    if (strncmp(name, "gemv8", 5) != 0)
        return CUDA_SUCCESS;
    long sm = (long)st->max_smem_optin + 1024, need = 2 * (48 * 1024 + 1024);
    long percent = sm > 0 ? (need * 100 + sm - 1) / sm : 100;
    return st->drv->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                       percent > 100 ? 100 : (int)percent);
}

rayo_status cuda_function(cuda_state *st, int mod, const char *name, CUfunction *fn)
{
    size_t h = name_hash(name) % CUDA_FUNC_SLOTS;
    pthread_mutex_lock(&st->lock);
    for (size_t probe = 0; probe < CUDA_FUNC_SLOTS; probe++) {
        cuda_func_slot *s = &st->funcs[(h + probe) % CUDA_FUNC_SLOTS];
        if (s->name && strcmp(s->name, name) == 0) {
            *fn = s->fn;
            pthread_mutex_unlock(&st->lock);
            return RAYO_OK;
        }
        if (!s->name) {
            rayo_status rs = module_load(st, mod);
            if (rs != RAYO_OK) {
                pthread_mutex_unlock(&st->lock);
                return rs;
            }
            CUresult r = st->drv->cuModuleGetFunction(fn, st->modules[mod].handle, name);
            if (r == CUDA_SUCCESS && mod == MOD_SGEMM) /* their second sums: more than 48 KiB in all */
                r = st->drv->cuFuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                RAYO_PTX_SGEMM_ACC_BYTES);
            if (r == CUDA_SUCCESS && (mod == MOD_TF32 || mod == MOD_MMA16)) {
                /* the tensor-core kernels use more than 48 KiB of dynamic shared memory */
                const rayo_ptx_tf32_config *t = mod == MOD_TF32 ? rayo_cuda_tf32_configs : rayo_cuda_mma16_configs;
                unsigned n = mod == MOD_TF32 ? rayo_cuda_tf32_config_count : rayo_cuda_mma16_config_count;
                for (unsigned i = 0; i < n; i++)
                    if (strcmp(t[i].name, name) == 0)
                        r = st->drv->cuFuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                        t[i].smem_bytes);
            }
            if (r == CUDA_SUCCESS && mod == MOD_WGMMA && cuda_wgmma_smem_bytes(name) > 0)
                r = st->drv->cuFuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                cuda_wgmma_smem_bytes(name));
            if (r == CUDA_SUCCESS && strncmp(name, "rowc_", 5) == 0 && st->max_smem_optin > RAYO_PTX_ROWC_STATIC_SMEM)
                /* the row-cached kernels keep rows of up to this much in shared memory */
                r = st->drv->cuFuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                st->max_smem_optin - RAYO_PTX_ROWC_STATIC_SMEM);
            if (r == CUDA_SUCCESS && strncmp(name, "attn_pf_f32_d", 13) == 0) /* 52 KiB at head_dim 128 */
                r = st->drv->cuFuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                RAYO_PTX_ATTN_PF32_SMEM(atoi(name + 13)));
            if (r == CUDA_SUCCESS && strncmp(name, "attn_group_f32_d", 16) == 0) /* the same tiles */
                r = st->drv->cuFuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                RAYO_PTX_ATTN_PF32_SMEM(atoi(name + 16)));
            if (r == CUDA_SUCCESS)
                r = gemv8_carveout(st, *fn, name);
            for (unsigned i = 0; r == CUDA_SUCCESS && mod == MOD_INFER && i < rayo_cuda_gemvq_config_count; i++)
                if (strcmp(rayo_cuda_gemvq_configs[i].name, name) == 0) /* may be above 48 KiB */
                    r = st->drv->cuFuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    (int)rayo_ptx_gemvq_smem(&rayo_cuda_gemvq_configs[i],
                                                                             SIZE_MAX));
            if (r != CUDA_SUCCESS) {
                pthread_mutex_unlock(&st->lock);
                char what[96];
                snprintf(what, sizeof what, "kernel %s", name);
                return cuda_fail(st, r, what);
            }
            snprintf(s->name_buf, sizeof s->name_buf, "%s", name);
            s->name = s->name_buf;
            s->fn = *fn;
            pthread_mutex_unlock(&st->lock);
            return RAYO_OK;
        }
    }
    pthread_mutex_unlock(&st->lock);
    st->host->set_error(st->host, "cuda: kernel table full");
    return RAYO_E_BACKEND;
}

/* ---- the op table --------------------------------------------------------- */
/* One host entry per kernel family: a host-memory call through the staging
 * buffers (cuda-host.c) to the family's kernels. */
#define CUDA_HOST_ENTRY(name)                                                                        \
    static rayo_status host_##name(void *state, const rayo_call *call)                               \
    { return cuda_host_call(state, call, &cuda_family_##name); }
GPU_FAMILIES(CUDA_HOST_ENTRY)
#undef CUDA_HOST_ENTRY

/* Every op and dtype combination with kernels here, each with its family. */
#define GPU_HOST_ENTRY(name) host_##name
#define GPU_FAMILY(name) &cuda_family_##name
#include "../gpu-common/gpu-op-table.h"

const cuda_family *cuda_family_of(uint32_t op, uint32_t dtypes)
{
    return gpu_family_of(op, dtypes);
}

GPU_PLUGIN_DESCRIPTOR("cuda", RAYO_ARCH_ANY, 40, cuda, gpu_op_table, &cuda_memory_api);

/* SPDX-License-Identifier: MIT */
/* vk-pipelines.c - the embedded SPIR-V modules and their pipelines.
 *
 * One descriptor-set layout (five storage buffers: a, b, c, y, scratch) and one
 * pipeline layout (the push constants of shaders/common.glsl) serve every
 * shader.  A pipeline is created the first time a (shader, specialization
 * constants) pair is needed and kept until fini; a VkPipelineCache persisted
 * in the plugin's cache directory ($XDG_CACHE_HOME/rayo/...) makes later
 * processes skip the driver's compilation.
 *
 * Without that cache (a first run, a new driver) the driver compiles each
 * pipeline for 0.04-0.6 s (an H200), and a recording needs a pipeline when
 * it reaches its call.  So a batch is first recorded ahead (vk-batches.c):
 * into a context never submitted (vk_ctx.ahead), whose recordings only look
 * their pipelines up, each one not made yet queued for the plugin's
 * compile threads ([backend.vulkan] compile_threads); the real recording
 * then waits only for what is still compiling.  Entries are never removed
 * before fini, so an index names one for good.
 */
#define VK_SHADERS_DATA
#include "vk-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    void *data = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        len = ftell(f);
    /* a cache is a few MiB at most; anything larger is not ours */
    if (len > 0 && len < (64L << 20) && fseek(f, 0, SEEK_SET) == 0) {
        data = malloc((size_t)len);
        if (data && fread(data, 1, (size_t)len, f) != (size_t)len) {
            free(data);
            data = NULL;
        }
    }
    fclose(f);
    *size = data ? (size_t)len : 0;
    return data;
}

static void cache_path_init(vk_state *s)
{
    s->cache_path[0] = 0;
    const char *use = s->host->config(s->host, "pipeline_cache");
    if (use && (!strcmp(use, "no") || !strcmp(use, "false") || !strcmp(use, "0")))
        return;
    const char *dir = s->host->cache_dir ? s->host->cache_dir(s->host) : NULL;
    if (!dir)
        return;
    /* the driver checks the header (vendor, device, pipelineCacheUUID) and
     * ignores stale data; one file per device keeps two GPUs apart */
    snprintf(s->cache_path, sizeof s->cache_path, "%s/pipelines-%04x-%04x.bin", dir,
             s->props.vendorID, s->props.deviceID);
}

static rayo_status cache_create(vk_state *s)
{
    cache_path_init(s);
    size_t size = 0;
    void *data = s->cache_path[0] ? read_file(s->cache_path, &size) : NULL;
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = size,
        .pInitialData = data,
    };
    VkResult r = s->fd.vkCreatePipelineCache(s->device, &ci, NULL, &s->pipeline_cache);
    if (r != VK_SUCCESS && data) {
        /* a damaged file: start empty */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = s->fd.vkCreatePipelineCache(s->device, &ci, NULL, &s->pipeline_cache);
    }
    free(data);
    if (r != VK_SUCCESS)
        return vk_fail(s, r, "vkCreatePipelineCache");
    if (size)
        s->host->log(s->host, RAYO_LOG_DEBUG, "pipeline cache: %zu bytes from %s", size, s->cache_path);
    return RAYO_OK;
}

static void cache_save(vk_state *s)
{
    if (!s->cache_path[0] || !s->pipeline_cache || s->pipeline_count == 0)
        return;
    size_t size = 0;
    if (s->fd.vkGetPipelineCacheData(s->device, s->pipeline_cache, &size, NULL) != VK_SUCCESS || !size)
        return;
    void *data = malloc(size);
    if (!data)
        return;
    char tmp[sizeof s->cache_path + 16];
    snprintf(tmp, sizeof tmp, "%s.%ld", s->cache_path, (long)getpid());
    if (s->fd.vkGetPipelineCacheData(s->device, s->pipeline_cache, &size, data) == VK_SUCCESS) {
        /* write then rename: a concurrent reader never sees half a file */
        FILE *f = fopen(tmp, "wb");
        if (f) {
            bool ok = fwrite(data, 1, size, f) == size;
            ok = fclose(f) == 0 && ok;
            if (!ok || rename(tmp, s->cache_path) != 0)
                remove(tmp);
        }
    }
    free(data);
}

/* [backend.vulkan] compile_threads: 0 to VK_COMPILE_THREADS_MAX; default
 * the CPUs online, at most 8. */
static uint32_t compile_threads_of(const vk_state *s)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t fallback = cpus < 1 ? 1u : cpus > 8 ? 8u : (uint32_t)cpus;
    const char *v = s->host->config(s->host, "compile_threads");
    if (!v)
        return fallback;
    char *end;
    long want = strtol(v, &end, 10);
    if (end == v || *end || want < 0 || want > VK_COMPILE_THREADS_MAX) {
        s->host->log(s->host, RAYO_LOG_WARN, "compile_threads = %s: not a number from 0 to %d; using %u", v,
                     VK_COMPILE_THREADS_MAX, fallback);
        return fallback;
    }
    return (uint32_t)want;
}

rayo_status vk_pipelines_init(vk_state *s)
{
    /* eight storage buffers where a stage may have them, else the five
     * every unfused shader needs (the fusions needing more check s->bindings) */
    const VkPhysicalDeviceLimits *lim = &s->props.limits;
    s->bindings = lim->maxPerStageDescriptorStorageBuffers >= VK_BINDINGS &&
                  lim->maxDescriptorSetStorageBuffers >= VK_BINDINGS && lim->maxPerStageResources >= VK_BINDINGS
                  ? VK_BINDINGS : VK_BASE_BINDINGS;
    VkDescriptorSetLayoutBinding bindings[VK_BINDINGS];
    for (uint32_t i = 0; i < s->bindings; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo li = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = s->push_descriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0,
        .bindingCount = s->bindings,
        .pBindings = bindings,
    };
    VkResult r = s->fd.vkCreateDescriptorSetLayout(s->device, &li, NULL, &s->set_layout);
    if (r != VK_SUCCESS)
        return vk_fail(s, r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange range = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        .offset = 0,
        .size = sizeof(vk_push),
    };
    VkPipelineLayoutCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &s->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &range,
    };
    r = s->fd.vkCreatePipelineLayout(s->device, &pi, NULL, &s->pipeline_layout);
    if (r != VK_SUCCESS)
        return vk_fail(s, r, "vkCreatePipelineLayout");
    pthread_mutex_init(&s->pipeline_lock, NULL);
    pthread_cond_init(&s->pipeline_done, NULL);
    pthread_cond_init(&s->job_ready, NULL);
    s->compile_threads = compile_threads_of(s);
    atomic_init(&s->jobs_queued, 0);
    return cache_create(s);
}

/* Stops the workers once the jobs queued are done. */
static void workers_stop(vk_state *s)
{
    pthread_mutex_lock(&s->pipeline_lock);
    s->compile_stop = true;
    pthread_cond_broadcast(&s->job_ready);
    pthread_mutex_unlock(&s->pipeline_lock);
    for (uint32_t i = 0; i < s->worker_count; i++)
        pthread_join(s->workers[i], NULL);
    s->worker_count = 0;
    free(s->jobs);
    s->jobs = NULL;
}

void vk_pipelines_fini(vk_state *s)
{
    workers_stop(s);
    cache_save(s);
    for (size_t i = 0; i < s->pipeline_count; i++)
        if (s->pipelines[i].pipeline)
            s->fd.vkDestroyPipeline(s->device, s->pipelines[i].pipeline, NULL);
    free(s->pipelines);
    s->pipelines = NULL;
    s->pipeline_count = s->pipeline_cap = 0;
    for (int i = 0; i < VK_SHADER_COUNT; i++)
        if (s->modules[i])
            s->fd.vkDestroyShaderModule(s->device, s->modules[i], NULL);
    if (s->pipeline_cache)
        s->fd.vkDestroyPipelineCache(s->device, s->pipeline_cache, NULL);
    if (s->pipeline_layout)
        s->fd.vkDestroyPipelineLayout(s->device, s->pipeline_layout, NULL);
    if (s->set_layout)
        s->fd.vkDestroyDescriptorSetLayout(s->device, s->set_layout, NULL);
    pthread_mutex_destroy(&s->pipeline_lock);
    pthread_cond_destroy(&s->pipeline_done);
    pthread_cond_destroy(&s->job_ready);
}

/* SPIR-V opcodes and operands used below (SPIR-V 1.4+, where float
 * controls are core). */
enum { SPV_HEADER = 5, OP_CAPABILITY = 17, OP_ENTRY_POINT = 15, OP_EXECUTION_MODE = 16,
       CAP_DENORM_PRESERVE = 4464, MODE_DENORM_PRESERVE = 4459 };

/* A copy of a module that asks for float32 denormals to be kept
 * (OpCapability DenormPreserve; OpExecutionMode main DenormPreserve 32),
 * or NULL (not SPIR-V 1.4+, no entry point, no memory).  Drivers that flush
 * by default (NVIDIA) then compute denormals as the contract expects. */
static uint32_t *with_denorm_preserve(const uint32_t *code, size_t words, size_t *out_words)
{
    if (words <= SPV_HEADER || code[1] < 0x00010400u)
        return NULL;
    size_t at = SPV_HEADER, after_entry = 0;
    uint32_t entry = 0;
    while (at < words) {
        uint32_t len = code[at] >> 16, op = code[at] & 0xffffu;
        if (len == 0 || at + len > words)
            return NULL;
        if (op == OP_ENTRY_POINT && len > 2) {
            entry = code[at + 2];
            after_entry = at + len;
        }
        at += len;
    }
    if (!after_entry)
        return NULL;
    uint32_t *out = malloc((words + 6) * sizeof *out);
    if (!out)
        return NULL;
    const uint32_t cap[2] = {2u << 16 | OP_CAPABILITY, CAP_DENORM_PRESERVE};
    const uint32_t mode[4] = {4u << 16 | OP_EXECUTION_MODE, entry, MODE_DENORM_PRESERVE, 32};
    uint32_t *w = out;
    memcpy(w, code, SPV_HEADER * 4); w += SPV_HEADER;
    memcpy(w, cap, sizeof cap); w += 2;
    memcpy(w, code + SPV_HEADER, (after_entry - SPV_HEADER) * 4); w += after_entry - SPV_HEADER;
    memcpy(w, mode, sizeof mode); w += 4;
    memcpy(w, code + after_entry, (words - after_entry) * 4);
    *out_words = words + 6;
    return out;
}

static rayo_status module_get(vk_state *s, uint32_t shader, VkShaderModule *out)
{
    if (!s->modules[shader]) {
        VkShaderModuleCreateInfo ci = {
            .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
            .codeSize = vk_shader_blobs[shader].size,
            .pCode = vk_shader_blobs[shader].code,
        };
        size_t words = 0;
        uint32_t *patched = s->denorm_preserve
            ? with_denorm_preserve(ci.pCode, ci.codeSize / 4, &words) : NULL;
        if (patched) {
            ci.pCode = patched;
            ci.codeSize = words * 4;
        }
        VkResult r = s->fd.vkCreateShaderModule(s->device, &ci, NULL, &s->modules[shader]);
        free(patched);
        if (r != VK_SUCCESS)
            return vk_fail(s, r, "vkCreateShaderModule");
    }
    *out = s->modules[shader];
    return RAYO_OK;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The driver's compilation of one pipeline (no lock held: drivers compile
 * several at once, and a first run's prompt needs ~10 of 0.04-0.6 s each on
 * an H200). */
static VkResult compile(vk_state *s, const vk_compile_job *j, VkPipeline *out, float *ms)
{
    VkSpecializationMapEntry entries[VK_MAX_SPEC];
    for (uint32_t i = 0; i < j->spec_count; i++)
        entries[i] = (VkSpecializationMapEntry){i, i * 4, 4};
    VkSpecializationInfo si = {
        .mapEntryCount = j->spec_count,
        .pMapEntries = entries,
        .dataSize = j->spec_count * 4,
        .pData = j->spec,
    };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = j->module,
            .pName = "main",
            .pSpecializationInfo = j->spec_count ? &si : NULL,
        },
        .layout = s->pipeline_layout,
    };
    double t0 = seconds_now();
    *out = VK_NULL_HANDLE;
    VkResult r = s->fd.vkCreateComputePipelines(s->device, s->pipeline_cache, 1, &ci, NULL, out);
    *ms = (float)(1e3 * (seconds_now() - t0));
    return r;
}

/* ---- the table of pipelines (under pipeline_lock) ---- */
static bool same_key(const vk_pipeline_entry *e, uint32_t shader, const uint32_t *spec, uint32_t spec_count)
{
    return e->shader == shader && e->spec_count == spec_count &&
           (spec_count == 0 || !memcmp(e->spec, spec, spec_count * sizeof *spec));
}

/* The entry of this key, or SIZE_MAX. */
static size_t find_entry(const vk_state *s, uint32_t shader, const uint32_t *spec, uint32_t spec_count)
{
    for (size_t i = 0; i < s->pipeline_count; i++)
        if (same_key(&s->pipelines[i], shader, spec, spec_count))
            return i;
    return SIZE_MAX;
}

/* A new entry being compiled, with its job (module included) in *job. */
static rayo_status add_entry(vk_state *s, uint32_t shader, const uint32_t *spec, uint32_t spec_count,
                             vk_compile_job *job)
{
    vk_pipeline_entry *table = vk_room_for_one(s->pipelines, &s->pipeline_cap, s->pipeline_count, sizeof *table);
    if (!table)
        return RAYO_E_NOMEM;
    s->pipelines = table;
    *job = (vk_compile_job){.entry = s->pipeline_count, .shader = shader, .spec_count = spec_count};
    if (spec_count) /* spec may be NULL then: memcpy's arguments must not be */
        memcpy(job->spec, spec, spec_count * sizeof *spec);
    rayo_status st = module_get(s, shader, &job->module);
    if (st != RAYO_OK)
        return st;
    vk_pipeline_entry *e = &s->pipelines[s->pipeline_count++];
    memset(e, 0, sizeof *e);
    e->shader = shader;
    e->spec_count = spec_count;
    memcpy(e->spec, job->spec, sizeof e->spec);
    e->state = VK_PIPE_COMPILING;
    return RAYO_OK;
}

/* A compilation's outcome into its entry; wakes whoever waits for one. */
static void set_outcome(vk_state *s, size_t entry, VkPipeline p, VkResult r, float ms)
{
    vk_pipeline_entry *e = &s->pipelines[entry];
    e->pipeline = p;
    e->result = r;
    e->compile_ms = ms;
    e->state = r == VK_SUCCESS ? VK_PIPE_READY : VK_PIPE_FAILED;
    pthread_cond_broadcast(&s->pipeline_done);
}

/* Compiles a job's pipeline with the lock released (held on entry and on
 * return) and stores the outcome. */
static void compile_unlocked(vk_state *s, const vk_compile_job *job)
{
    pthread_mutex_unlock(&s->pipeline_lock);
    VkPipeline p;
    float ms;
    VkResult r = compile(s, job, &p, &ms);
    pthread_mutex_lock(&s->pipeline_lock);
    set_outcome(s, job->entry, p, r, ms);
}

/* The entry's pipeline once compiled (waiting for a compilation under
 * way); unlocks. */
static rayo_status take_unlock(vk_state *s, size_t entry, VkPipeline *out)
{
    while (s->pipelines[entry].state == VK_PIPE_COMPILING)
        pthread_cond_wait(&s->pipeline_done, &s->pipeline_lock);
    vk_pipeline_entry *e = &s->pipelines[entry];
    VkResult r = e->result;
    uint32_t shader = e->shader, spec_count = e->spec_count;
    float ms = e->logged ? -1.0f : e->compile_ms;
    e->logged = true;
    *out = e->pipeline;
    pthread_mutex_unlock(&s->pipeline_lock);
    /* a first run's pipelines come from the driver's compiler: how long each
     * took (about nothing with a warm cache), said on a thread of the caller's */
    if (ms >= 0.0f)
        s->host->log(s->host, RAYO_LOG_DEBUG, "pipeline %s (%u specialization constants) made in %.1f ms",
                     vk_shader_blobs[shader].name, spec_count, (double)ms);
    if (r == VK_SUCCESS)
        return RAYO_OK;
    s->host->set_error(s->host, "vulkan: creating the %s pipeline: %s", vk_shader_blobs[shader].name,
                       vk_result_name(r));
    return vk_status_of(r);
}

/* The pipeline, made here if no one has started it (else waited for). */
static rayo_status pipeline_get(vk_state *s, uint32_t shader, const uint32_t *spec,
                                uint32_t spec_count, VkPipeline *out)
{
    if (shader >= VK_SHADER_COUNT || spec_count > VK_MAX_SPEC)
        return RAYO_E_INVALID;
    pthread_mutex_lock(&s->pipeline_lock);
    size_t i = find_entry(s, shader, spec, spec_count);
    if (i == SIZE_MAX) {
        vk_compile_job job;
        rayo_status st = add_entry(s, shader, spec, spec_count, &job);
        if (st != RAYO_OK) {
            pthread_mutex_unlock(&s->pipeline_lock);
            return st;
        }
        compile_unlocked(s, &job);
        i = job.entry;
    }
    return take_unlock(s, i, out);
}

/* ---- compilation ahead, on threads of the plugin (compile_threads) ---- */
static void *compile_worker(void *arg)
{
    vk_state *s = arg;
    pthread_mutex_lock(&s->pipeline_lock);
    for (;;) {
        while (s->job_head == s->job_count && !s->compile_stop)
            pthread_cond_wait(&s->job_ready, &s->pipeline_lock);
        if (s->job_head == s->job_count)
            break; /* stopping, and nothing left to compile */
        vk_compile_job job = s->jobs[s->job_head++];
        if (s->job_head == s->job_count)
            s->job_head = s->job_count = 0;
        compile_unlocked(s, &job);
    }
    pthread_mutex_unlock(&s->pipeline_lock);
    return NULL;
}

/* Queues a job for the workers, starting one more while there are fewer
 * than compile_threads; false: no worker to run it. */
static bool queue_job(vk_state *s, const vk_compile_job *job)
{
    vk_compile_job *jobs = vk_room_for_one(s->jobs, &s->job_cap, s->job_count, sizeof *jobs);
    if (!jobs)
        return false;
    s->jobs = jobs;
    if (s->worker_count < s->compile_threads &&
        pthread_create(&s->workers[s->worker_count], NULL, compile_worker, s) == 0)
        s->worker_count++;
    if (s->worker_count == 0)
        return false;
    s->jobs[s->job_count++] = *job;
    atomic_fetch_add(&s->jobs_queued, 1);
    pthread_cond_signal(&s->job_ready);
    return true;
}

/* The pipeline if it is made; else its compilation started on a worker
 * and *out VK_NULL_HANDLE (or, without workers, made here). */
static rayo_status pipeline_ahead(vk_state *s, uint32_t shader, const uint32_t *spec, uint32_t spec_count,
                                  VkPipeline *out)
{
    if (shader >= VK_SHADER_COUNT || spec_count > VK_MAX_SPEC)
        return RAYO_E_INVALID;
    pthread_mutex_lock(&s->pipeline_lock);
    size_t i = find_entry(s, shader, spec, spec_count);
    if (i != SIZE_MAX && s->pipelines[i].state == VK_PIPE_COMPILING) {
        pthread_mutex_unlock(&s->pipeline_lock);
        *out = VK_NULL_HANDLE;
        return RAYO_OK;
    }
    if (i != SIZE_MAX)
        return take_unlock(s, i, out);
    vk_compile_job job;
    rayo_status st = add_entry(s, shader, spec, spec_count, &job);
    if (st == RAYO_OK && !queue_job(s, &job)) {
        s->pipeline_count--; /* the entry just added: compiled here instead */
        pthread_mutex_unlock(&s->pipeline_lock);
        return pipeline_get(s, shader, spec, spec_count, out);
    }
    pthread_mutex_unlock(&s->pipeline_lock);
    *out = VK_NULL_HANDLE;
    return st;
}

rayo_status vk_ctx_pipeline(vk_state *s, const vk_ctx *cx, uint32_t shader, const uint32_t *spec,
                            uint32_t spec_count, VkPipeline *out)
{
    return cx->ahead && s->compile_threads ? pipeline_ahead(s, shader, spec, spec_count, out)
                                           : pipeline_get(s, shader, spec, spec_count, out);
}

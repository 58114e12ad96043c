/* SPDX-License-Identifier: MIT */
/* vk-plugin.c - the rayo vulkan plugin: descriptor, probe, init and fini.
 *
 * Keys of [backend.vulkan] read here (documented in 50-vulkan.conf):
 *   device       chosen by the core, which passes the index to init()
 *   validation   yes: enable VK_LAYER_KHRONOS_validation and count its
 *                messages; a call during which it reports fails
 *   precision    fp32 (default) | f16: may matmul use reduced precision
 *   matmul_tile  BMxBNxBKxTMxTN: override the matmul tile (tuning)
 *   eltwise_unroll  1 | 2 | 4: elements per invocation and step (tuning)
 *   coop_bk      32 | 64: K step of the f16 cooperative-matrix matmuls (tuning)
 *   half_prompt  yes | no: relaxed f32 x transposed typed-B matmul on scaled
 *                f16 copies (vk-half-prompt.c)
 *   weight_copies auto | no | MiB: how much of the weights' f16 copies the
 *                half prompt keeps between calls (vk-weight-copies.c)
 *   gemv_int8    yes | no | all: relaxed gemv of Q8_0, Q4_0, Q4_K (all: and
 *                Q6_K) weights on x rounded to 8 bits, with integer dot
 *                products where the device has them
 *   typed_matmul_transpose  yes | no: transpose a transposed B's f32 copy
 *                again (vk-typed-matmul.c; tuning)
 *   library      the Vulkan loader to open (default libvulkan.so.1)
 *   pipeline_cache  no: do not read or write the pipeline cache file
 *   compile_threads 0 to 16: threads compiling a batch's new pipelines side
 *                by side (vk-pipelines.c; default the CPUs, at most 8)
 *   subgroups    no: reductions use the shared-memory path even where subgroups exist
 *   validation_selftest  yes (tests only): make one invalid call at init
 */
#include "config.h"
#include "vk-internal.h"
#include "../gpu-common/gpu-descriptor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool config_yes(const rayo_host *host, const char *key)
{
    const char *v = host->config(host, key);
    return v && (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1") ||
                 !strcasecmp(v, "on"));
}

static bool has_layer(const vk_lib *lib, const char *name)
{
    uint32_t n = 0;
    if (lib->vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkLayerProperties *props = calloc(n, sizeof *props);
    bool found = false;
    if (props && lib->vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(props[i].layerName, name);
    free(props);
    return found;
}

static bool has_instance_extension(const vk_lib *lib, const char *name)
{
    uint32_t n = 0;
    if (lib->vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    bool found = false;
    if (props && lib->vkEnumerateInstanceExtensionProperties(NULL, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(props[i].extensionName, name);
    free(props);
    return found;
}

static bool has_device_extension(const vk_state *s, const char *name)
{
    uint32_t n = 0;
    if (s->fi.vkEnumerateDeviceExtensionProperties(s->phys, NULL, &n, NULL) != VK_SUCCESS || !n)
        return false;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    bool found = false;
    if (props && s->fi.vkEnumerateDeviceExtensionProperties(s->phys, NULL, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(props[i].extensionName, name);
    free(props);
    return found;
}

static const char validation_layer[] = "VK_LAYER_KHRONOS_validation";

static VkResult create_instance(const vk_lib *lib, bool validation, VkInstance *out)
{
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "rayo",
        .applicationVersion = 1,
        .pEngineName = "rayo",
        .apiVersion = VK_API_VERSION_1_2,
    };
    const char *layers[] = {validation_layer};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledLayerCount = validation ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = validation ? 1 : 0,
        .ppEnabledExtensionNames = exts,
    };
    return lib->vkCreateInstance(&ci, NULL, out);
}

/* The physical devices rayo can use (Vulkan 1.2 or later), in the loader's
 * order; *skipped counts the older ones. */
static VkResult list_devices(const vk_ifns *fi, VkInstance inst, VkPhysicalDevice *out,
                             uint32_t *count, uint32_t *skipped)
{
    VkPhysicalDevice all[RAYO_MAX_DEVICES];
    uint32_t n = RAYO_MAX_DEVICES;
    VkResult r = fi->vkEnumeratePhysicalDevices(inst, &n, all);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        return r;
    *count = *skipped = 0;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        fi->vkGetPhysicalDeviceProperties(all[i], &p);
        if (p.apiVersion < VK_API_VERSION_1_2)
            (*skipped)++;
        else
            out[(*count)++] = all[i];
    }
    return VK_SUCCESS;
}

static uint32_t device_type_of(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return RAYO_DEVICE_SOFTWARE;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return RAYO_DEVICE_GPU;
    default: return RAYO_DEVICE_OTHER;
    }
}

static uint64_t device_memory_of(const vk_ifns *fi, VkPhysicalDevice pd)
{
    VkPhysicalDeviceMemoryProperties mp;
    fi->vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    uint64_t total = 0;
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            total += mp.memoryHeaps[i].size;
    return total;
}

/* Whether shaders can keep float32 denormals (Vulkan 1.2 float controls):
 * NVIDIA's driver flushes them unless a module asks (DenormPreserve). */
static bool denorm_preserve_of(const vk_ifns *fi, VkPhysicalDevice phys)
{
    VkPhysicalDeviceVulkan12Properties p12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &p12,
    };
    fi->vkGetPhysicalDeviceProperties2(phys, &p2);
    return p12.shaderDenormPreserveFloat32;
}

/* What rayo-info shows for a device whose results differ from the contract's
 * float32 arithmetic (empty: none). */
static void device_notes(const vk_ifns *fi, VkPhysicalDevice phys, char *out, size_t size)
{
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    fi->vkGetPhysicalDeviceFeatures2(phys, &f2);
    const VkPhysicalDeviceFeatures f = f2.features;
    bool denorms = denorm_preserve_of(fi, phys);
    out[0] = 0;
    if (!denorms || !f.shaderFloat64)
        snprintf(out, size, "%s%s%s",
                 denorms ? "" : "float32 denormals may be flushed to zero (no shaderDenormPreserveFloat32)",
                 !denorms && !f.shaderFloat64 ? "; " : "",
                 f.shaderFloat64 ? "" : "sums in float (no shaderFloat64): sum/dot/norm_l1 overflow "
                                        "past FLT_MAX, rows of |x| > 1e19 or |mean| >> std lose accuracy");
}

static const char *no_device_reason(VkResult r)
{
    return r == VK_ERROR_INCOMPATIBLE_DRIVER ? "no Vulkan device (no Vulkan driver installed)"
                                             : "no Vulkan device";
}

static rayo_status vk_probe(const rayo_host *host, rayo_probe_result *res)
{
    res->device_count = 0;
    res->reason[0] = 0;
    vk_lib lib;
    if (vk_lib_open(&lib, host->config(host, "library"), res->reason, sizeof res->reason) != RAYO_OK)
        return RAYO_E_NOT_FOUND;
    VkInstance inst;
    VkResult r = create_instance(&lib, false, &inst);
    if (r != VK_SUCCESS) {
        snprintf(res->reason, sizeof res->reason, "%s: vkCreateInstance: %s",
                 no_device_reason(r), vk_result_name(r));
        vk_lib_close(&lib);
        return RAYO_E_NOT_FOUND;
    }
    vk_ifns fi;
    vk_load_instance_fns(&lib, inst, &fi);
    VkPhysicalDevice devs[RAYO_MAX_DEVICES];
    uint32_t count = 0, skipped = 0;
    r = list_devices(&fi, inst, devs, &count, &skipped);
    for (uint32_t i = 0; r == VK_SUCCESS && i < count; i++) {
        VkPhysicalDeviceProperties p;
        fi.vkGetPhysicalDeviceProperties(devs[i], &p);
        rayo_device_desc *d = &res->devices[i];
        memset(d, 0, sizeof *d);
        /* deviceName may be longer than the field: cut it */
        size_t len = strnlen(p.deviceName, sizeof d->name - 1);
        memcpy(d->name, p.deviceName, len);
        d->name[len] = 0;
        d->type = device_type_of(p.deviceType);
        d->memory_bytes = device_memory_of(&fi, devs[i]);
        if (!denorm_preserve_of(&fi, devs[i]))
            d->flags |= RAYO_DEVICE_FLUSHES_DENORMALS;
        char notes[200];
        device_notes(&fi, devs[i], notes, sizeof notes);
        size_t used = strlen(res->reason);
        if (notes[0] && used + 8 < sizeof res->reason)
            snprintf(res->reason + used, sizeof res->reason - used, "%s%s: %s", used ? "; " : "",
                     d->name, notes);
    }
    if (r != VK_SUCCESS)
        snprintf(res->reason, sizeof res->reason, "vkEnumeratePhysicalDevices: %s", vk_result_name(r));
    else if (count == 0 && skipped)
        snprintf(res->reason, sizeof res->reason,
                 "no Vulkan device (%u device(s) older than Vulkan 1.2)", skipped);
    else if (count == 0)
        snprintf(res->reason, sizeof res->reason, "no Vulkan device");
    else if (skipped && !res->reason[0])
        snprintf(res->reason, sizeof res->reason, "%u device(s) older than Vulkan 1.2 skipped", skipped);
    res->device_count = r == VK_SUCCESS ? count : 0;
    fi.vkDestroyInstance(inst, NULL);
    vk_lib_close(&lib);
    return res->device_count ? RAYO_OK : RAYO_E_NOT_FOUND;
}

/* ---- init ---------------------------------------------------------------------- */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    vk_state *s = user;
    (void)severity;
    const char *msg = data && data->pMessage ? data->pMessage : "(no message)";
    if (types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) {
        atomic_fetch_add(&s->validation_messages, 1);
        s->host->log(s->host, RAYO_LOG_ERROR, "validation: %s", msg);
    } else {
        s->host->log(s->host, RAYO_LOG_WARN, "vulkan loader: %s", msg);
    }
    return VK_FALSE;
}

static rayo_status setup_validation(vk_state *s)
{
    if (!s->fi.vkCreateDebugUtilsMessengerEXT) {
        s->host->set_error(s->host, "vulkan: validation requested but VK_EXT_debug_utils is missing");
        return RAYO_E_UNSUPPORTED;
    }
    VkDebugUtilsMessengerCreateInfoEXT ci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_debug_message,
        .pUserData = s,
    };
    VkResult r = s->fi.vkCreateDebugUtilsMessengerEXT(s->instance, &ci, NULL, &s->messenger);
    return r == VK_SUCCESS ? RAYO_OK : vk_fail(s, r, "vkCreateDebugUtilsMessengerEXT");
}

/* Subgroup operations the reduction and row shaders need, in compute. */
static void query_subgroups(vk_state *s)
{
    VkPhysicalDeviceSubgroupProperties sp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &sp,
    };
    s->fi.vkGetPhysicalDeviceProperties2(s->phys, &p2);
    const VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT |
        VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT |
        VK_SUBGROUP_FEATURE_VOTE_BIT;
    s->subgroup_size = sp.subgroupSize;
    s->subgroup_ok = (sp.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                     (sp.supportedOperations & need) == need &&
                     sp.subgroupSize >= 4 && sp.subgroupSize <= 128 &&
                     (sp.subgroupSize & (sp.subgroupSize - 1)) == 0;
    const char *use = s->host->config(s->host, "subgroups");
    if (use && (!strcasecmp(use, "no") || !strcasecmp(use, "false") || !strcmp(use, "0")))
        s->subgroup_ok = false;
}

static bool tile_fits(const vk_state *s, const vk_tile *t)
{
    if (!t->bm || !t->bn || !t->bk || !t->tm || !t->tn)
        return false;
    if (t->tm % 4 || t->tn % 4 || t->bk % 4 || t->bm % t->tm || t->bn % t->tn)
        return false;
    uint32_t wg = (t->bm / t->tm) * (t->bn / t->tn);
    uint64_t shared = 2ull * t->bk * (t->bm + t->bn) * 4;
    return wg <= s->props.limits.maxComputeWorkGroupInvocations &&
           wg <= s->props.limits.maxComputeWorkGroupSize[0] &&
           (t->bm * t->bk) % wg == 0 && (t->bn * t->bk) % wg == 0 &&
           shared <= s->props.limits.maxComputeSharedMemorySize &&
           t->tm * t->tn <= 256;
}

static void choose_tile(vk_state *s)
{
    /* GPUs: 128 x 128 tiles, 8 x 8 per invocation (256 invocations, 16 KiB of
     * shared memory); CPU devices run invocations as SIMD lanes, where
     * smaller blocks do better */
    vk_tile gpu = {128, 128, 8, 8, 8}, small = {64, 64, 16, 4, 4};
    s->tile = s->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? small : gpu;
    if (!tile_fits(s, &s->tile))
        s->tile = small;
    /* a product of few 128 x 128 tiles leaves most of a large GPU idle:
     * those get 64 x 64 tiles, four times as many workgroups */
    vk_tile quarter = {64, 64, 8, 4, 4};
    s->tile_small = tile_fits(s, &quarter) && s->tile.bm == 128 ? quarter : s->tile;
    const char *cfg = s->host->config(s->host, "matmul_tile");
    if (cfg) {
        vk_tile t = {0, 0, 0, 0, 0};
        if (sscanf(cfg, "%ux%ux%ux%ux%u", &t.bm, &t.bn, &t.bk, &t.tm, &t.tn) == 5 && tile_fits(s, &t))
            s->tile = s->tile_small = t;
        else
            s->host->log(s->host, RAYO_LOG_WARN, "matmul_tile = %s: not a usable BMxBNxBKxTMxTN "
                         "tile on this device; using %ux%ux%ux%ux%u", cfg, s->tile.bm, s->tile.bn,
                         s->tile.bk, s->tile.tm, s->tile.tn);
    }
}

static void read_unroll(vk_state *s)
{
    const char *u = s->host->config(s->host, "eltwise_unroll");
    s->eltwise_unroll = 1;
    if (u && (!strcmp(u, "1") || !strcmp(u, "2") || !strcmp(u, "4")))
        s->eltwise_unroll = (uint32_t)atoi(u);
    else if (u)
        s->host->log(s->host, RAYO_LOG_WARN, "eltwise_unroll = %s: not 1, 2 or 4; using 1", u);
}

static void read_precision(vk_state *s)
{
    const char *p = s->host->config(s->host, "precision");
    s->precision = VK_PREC_FP32;
    if (!p || !strcasecmp(p, "fp32") || !strcasecmp(p, "f32"))
        return;
    if (!strcasecmp(p, "f16") || !strcasecmp(p, "fp16"))
        s->precision = VK_PREC_F16;
    else
        s->host->log(s->host, RAYO_LOG_WARN, "precision = %s: unknown (fp32 | f16); using fp32", p);
}

static rayo_status find_queue(vk_state *s)
{
    VkQueueFamilyProperties fams[32];
    uint32_t n = 32;
    s->fi.vkGetPhysicalDeviceQueueFamilyProperties(s->phys, &n, fams);
    for (uint32_t i = 0; i < n; i++)
        if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            s->queue_family = i;
            s->timestamp_bits = fams[i].timestampValidBits;
            return RAYO_OK;
        }
    s->host->set_error(s->host, "vulkan: %s has no compute queue", s->props.deviceName);
    return RAYO_E_UNSUPPORTED;
}

/* The f16 cooperative-matrix matmuls (shaders/matmul_coop.comp,
 * matmul_half.comp) need VK_NV_cooperative_matrix with 16 x 16 x 16
 * half x half -> float products at subgroup scope, shaderFloat16, and
 * subgroups of 32; NULL when the device has them, else why not. */
static const char *coop_missing(vk_state *s, const VkPhysicalDeviceVulkan12Features *f12)
{
    if (!has_device_extension(s, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) ||
        !s->fi.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
        return "the device lacks VK_NV_cooperative_matrix";
    if (!f12->shaderFloat16)
        return "the device lacks shaderFloat16";
    if (s->subgroup_size != 32)
        return "the subgroup size is not 32";
    VkCooperativeMatrixPropertiesNV props[64];
    uint32_t n = 64;
    for (uint32_t i = 0; i < n; i++)
        props[i] = (VkCooperativeMatrixPropertiesNV){.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    VkResult r = s->fi.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(s->phys, &n, props);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++) {
        const VkCooperativeMatrixPropertiesNV *p = &props[i];
        if (p->MSize == 16 && p->NSize == 16 && p->KSize == 16 &&
            p->AType == VK_COMPONENT_TYPE_FLOAT16_NV && p->BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
            p->CType == VK_COMPONENT_TYPE_FLOAT32_NV && p->DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
            p->scope == VK_SCOPE_SUBGROUP_NV)
            return NULL;
    }
    return "no 16x16x16 f16 -> f32 cooperative matrix";
}

/* s->coop (f32 matmul not asking for strict in f16: precision = f16) and
 * s->half_prompt (relaxed prompt products on scaled f16 copies:
 * half_prompt, default yes), where the device has what they need. */
static void coop_choose(vk_state *s, const VkPhysicalDeviceVulkan12Features *f12)
{
    const char *hp = s->host->config(s->host, "half_prompt");
    bool want_half = !(hp && (!strcasecmp(hp, "no") || !strcasecmp(hp, "false") || !strcmp(hp, "0")));
    s->coop = s->half_prompt = false;
    if (s->precision != VK_PREC_F16 && !want_half)
        return;
    const char *why = coop_missing(s, f12);
    if (why) {
        if (s->precision == VK_PREC_F16)
            s->host->log(s->host, RAYO_LOG_INFO, "precision = f16: matmul stays fp32 (%s)", why);
        return;
    }
    s->coop = s->precision == VK_PREC_F16;
    s->half_prompt = want_half;
    /* K step: 64 where shared memory holds two 128 x (64 + 8) half tiles */
    const char *bk = s->host->config(s->host, "coop_bk");
    s->coop_bk = bk && !strcmp(bk, "32") ? 32 : 64;
    if (2u * 128u * (s->coop_bk + 8u) * 2u > s->props.limits.maxComputeSharedMemorySize)
        s->coop_bk = 32;
}

/* Whether the device has VK_KHR_shader_integer_dot_product with its
 * feature, and subgroups of 8 or more (gemv_int8.comp; [backend.vulkan]
 * gemv_int8 = no: not asked for; all: Q6_K too). */
static bool integer_dot_supported(vk_state *s)
{
    const char *want = s->host->config(s->host, "gemv_int8");
    s->int8_q6_k = want && !strcasecmp(want, "all");
    if ((want && (!strcasecmp(want, "no") || !strcasecmp(want, "false") || !strcmp(want, "0"))) ||
        !s->subgroup_ok || s->subgroup_size < 8 ||
        !has_device_extension(s, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME))
        return false;
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR,
    };
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &dot};
    s->fi.vkGetPhysicalDeviceFeatures2(s->phys, &f2);
    return dot.shaderIntegerDotProduct;
}

static rayo_status create_device(vk_state *s)
{
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
    };
    VkPhysicalDeviceFeatures2 f2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = &f12,
    };
    s->fi.vkGetPhysicalDeviceFeatures2(s->phys, &f2);
    if (!f12.timelineSemaphore) {
        s->host->set_error(s->host, "vulkan: %s lacks timeline semaphores", s->props.deviceName);
        return RAYO_E_UNSUPPORTED;
    }
    coop_choose(s, &f12);
    bool coop_any = s->coop || s->half_prompt;
    s->f64 = f2.features.shaderFloat64;
    VkPhysicalDeviceFeatures want10 = {.shaderFloat64 = s->f64};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV want_coop = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .cooperativeMatrix = VK_TRUE,
    };
    VkPhysicalDeviceVulkan12Features want12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = coop_any ? &want_coop : NULL,
        .timelineSemaphore = VK_TRUE,
        .shaderFloat16 = coop_any ? VK_TRUE : VK_FALSE,
    };
    /* push descriptors: a decode step records ~300 dispatches, each
     * allocating and writing a descriptor set otherwise
     * ([backend.vulkan] push_descriptors = no: that path, for testing) */
    const char *no_overlap = s->host->config(s->host, "overlap");
    s->overlap = !(no_overlap && !strcmp(no_overlap, "no"));
    const char *no_fuse = s->host->config(s->host, "fuse");
    s->fuse = !(no_fuse && !strcmp(no_fuse, "no"));
    const char *ahead = s->host->config(s->host, "record_ahead");
    s->record_ahead = ahead && !strcmp(ahead, "no")       ? VK_AHEAD_NO
                    : ahead && !strcmp(ahead, "moving")   ? VK_AHEAD_MOVING
                                                          : VK_AHEAD_STEP;
    const char *no_push = s->host->config(s->host, "push_descriptors");
    bool push = has_device_extension(s, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) &&
                !(no_push && !strcmp(no_push, "no"));
    /* packed 8-bit integer dot products: the relaxed gemv of block weights
     * (shaders/gemv_int8.comp) */
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR want_dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR,
        .pNext = want12.pNext,
        .shaderIntegerDotProduct = VK_TRUE,
    };
    s->int_dot = integer_dot_supported(s);
    if (s->int_dot)
        want12.pNext = &want_dot;
    const char *exts[3];
    uint32_t ext_count = 0;
    if (coop_any)
        exts[ext_count++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    if (push)
        exts[ext_count++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    if (s->int_dot)
        exts[ext_count++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = s->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    VkDeviceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &want12,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qi,
        .pEnabledFeatures = &want10,
        .enabledExtensionCount = ext_count,
        .ppEnabledExtensionNames = exts,
    };
    VkResult r = s->fi.vkCreateDevice(s->phys, &ci, NULL, &s->device);
    if (r != VK_SUCCESS)
        return vk_fail(s, r, "vkCreateDevice");
    char why[128];
    if (vk_load_device_fns(&s->fi, s->device, &s->fd, why, sizeof why) != RAYO_OK) {
        /* fini cannot use the table: destroy the device here */
        PFN_vkDestroyDevice destroy =
            (PFN_vkDestroyDevice)s->fi.vkGetDeviceProcAddr(s->device, "vkDestroyDevice");
        if (destroy)
            destroy(s->device, NULL);
        s->device = VK_NULL_HANDLE;
        s->host->set_error(s->host, "vulkan: %s", why);
        return RAYO_E_UNSUPPORTED;
    }
    if (push)
        s->fd.vkCmdPushDescriptorSetKHR =
            (PFN_vkCmdPushDescriptorSetKHR)s->fi.vkGetDeviceProcAddr(s->device, "vkCmdPushDescriptorSetKHR");
    s->push_descriptors = s->fd.vkCmdPushDescriptorSetKHR != NULL;
    s->fd.vkGetDeviceQueue(s->device, s->queue_family, 0, &s->queue);
    VkSemaphoreTypeCreateInfo ti = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
        .initialValue = 0,
    };
    VkSemaphoreCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti};
    r = s->fd.vkCreateSemaphore(s->device, &si, NULL, &s->timeline);
    return r == VK_SUCCESS ? RAYO_OK : vk_fail(s, r, "vkCreateSemaphore");
}

static void vk_fini(void *state);

static rayo_status open_instance(vk_state *s, bool validation)
{
    char why[256];
    if (vk_lib_open(&s->lib, s->host->config(s->host, "library"), why, sizeof why) != RAYO_OK) {
        s->host->set_error(s->host, "vulkan: %s", why);
        return RAYO_E_NOT_FOUND;
    }
    if (validation && !has_layer(&s->lib, validation_layer)) {
        s->host->set_error(s->host, "vulkan: validation = yes but %s is not installed", validation_layer);
        return RAYO_E_UNSUPPORTED;
    }
    if (validation && !has_instance_extension(&s->lib, VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
        s->host->set_error(s->host, "vulkan: validation = yes but VK_EXT_debug_utils is missing");
        return RAYO_E_UNSUPPORTED;
    }
    VkResult r = create_instance(&s->lib, validation, &s->instance);
    if (r != VK_SUCCESS) {
        s->host->set_error(s->host, "vulkan: %s: vkCreateInstance: %s", no_device_reason(r),
                           vk_result_name(r));
        return vk_status_of(r);
    }
    vk_load_instance_fns(&s->lib, s->instance, &s->fi);
    return validation ? setup_validation(s) : RAYO_OK;
}

static rayo_status pick_device(vk_state *s, uint32_t device)
{
    VkPhysicalDevice devs[RAYO_MAX_DEVICES];
    uint32_t count = 0, skipped = 0;
    VkResult r = list_devices(&s->fi, s->instance, devs, &count, &skipped);
    if (r != VK_SUCCESS)
        return vk_fail(s, r, "vkEnumeratePhysicalDevices");
    if (device >= count) {
        s->host->set_error(s->host, "vulkan: no device %u (%u usable)", device, count);
        return RAYO_E_NOT_FOUND;
    }
    s->phys = devs[device];
    s->fi.vkGetPhysicalDeviceProperties(s->phys, &s->props);
    return RAYO_OK;
}

/* Keys read only later, per call (vk-typed-matmul.c): asked for
 * once here as well, because the core warns about each key of
 * [backend.vulkan] that the plugin has not read by the end of init. */
static void declare_late_keys(const rayo_host *host)
{
    static const char *const keys[] = {"typed_matmul_transpose"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        (void)host->config(host, keys[i]);
}

static rayo_status vk_init(const rayo_host *host, uint32_t device, void **state)
{
    *state = NULL;
    declare_late_keys(host);
    vk_state *s = calloc(1, sizeof *s);
    if (!s)
        return RAYO_E_NOMEM;
    s->host = host;
    atomic_init(&s->validation_messages, 0);
    atomic_init(&s->lost, 0);
    pthread_mutex_init(&s->queue_lock, NULL);
    pthread_mutex_init(&s->ctx_lock, NULL);
    bool validation = config_yes(host, "validation");
    read_precision(s);
    read_unroll(s);

    rayo_status st = open_instance(s, validation);
    if (st == RAYO_OK)
        st = pick_device(s, device);
    if (st == RAYO_OK)
        st = find_queue(s);
    if (st == RAYO_OK) {
        query_subgroups(s);
        vk_infer_read_settings(s);
        s->denorm_preserve = denorm_preserve_of(&s->fi, s->phys);
        choose_tile(s);
        st = create_device(s);
    }
    s->profile = config_yes(host, "profile") && s->timestamp_bits > 0;
    if (st == RAYO_OK)
        st = vk_memory_init(s);
    if (st == RAYO_OK)
        vk_copies_init(s);
    if (st == RAYO_OK)
        st = vk_pipelines_init(s);
    if (st == RAYO_OK && validation && config_yes(host, "validation_selftest")) {
        /* for the tests: one harmless invalid call (reserved flags must be
         * 0), which the layer must report and this init must then refuse */
        VkSemaphoreCreateInfo bad = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .flags = 1};
        VkSemaphore sem;
        if (s->fd.vkCreateSemaphore(s->device, &bad, NULL, &sem) == VK_SUCCESS)
            s->fd.vkDestroySemaphore(s->device, sem, NULL);
    }
    if (st == RAYO_OK && atomic_load(&s->validation_messages)) {
        host->set_error(host, "vulkan: the validation layer reported %lu message(s) at init",
                        (unsigned long)atomic_load(&s->validation_messages));
        st = RAYO_E_BACKEND;
    }
    if (st != RAYO_OK) {
        vk_fini(s);
        return st;
    }
    char notes[200];
    device_notes(&s->fi, s->phys, notes, sizeof notes);
    if (notes[0]) /* a fact about the device, not a problem: rayo-info shows it */
        host->log(host, RAYO_LOG_INFO, "%s: %s", s->props.deviceName, notes);
    host->log(host, RAYO_LOG_INFO, "cooperative matrix: NV %s, KHR %s; f16 matmul %s, half prompt %s "
              "(K step %u)", has_device_extension(s, "VK_NV_cooperative_matrix") ? "yes" : "no",
              has_device_extension(s, "VK_KHR_cooperative_matrix") ? "yes" : "no",
              s->coop ? "on" : "off", s->half_prompt ? "on" : "off",
              s->coop || s->half_prompt ? s->coop_bk : 0u);
    host->log(host, RAYO_LOG_INFO, "integer dot products: %s (relaxed gemv on 8-bit x %s)",
              has_device_extension(s, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME) ? "yes" : "no",
              s->int_dot ? "on" : "off");
    host->log(host, RAYO_LOG_INFO,
              "%s (Vulkan %u.%u), subgroups %s (size %u), %s memory, %s descriptors (%u storage buffers), "
              "matmul tile %ux%ux%u/%ux%u%s",
              s->props.deviceName, VK_API_VERSION_MAJOR(s->props.apiVersion),
              VK_API_VERSION_MINOR(s->props.apiVersion), s->subgroup_ok ? "used" : "not used",
              s->subgroup_size, s->unified ? "unified" : "staged", s->push_descriptors ? "pushed" : "allocated",
              s->bindings, s->tile.bm, s->tile.bn, s->tile.bk, s->tile.tm, s->tile.tn, validation ? ", validation on" : "");
    *state = s;
    return RAYO_OK;
}

static void vk_fini(void *state)
{
    vk_state *s = state;
    if (!s)
        return;
    if (s->device) {
        s->fd.vkDeviceWaitIdle(s->device);
        vk_profile_report(s);
        vk_copies_fini(s);
        vk_ctx_destroy_all(s);
        if (s->set_layout || s->pipeline_layout)
            vk_pipelines_fini(s);
        if (s->device_pool.blocks || s->dummy)
            vk_memory_fini(s);
        if (s->timeline)
            s->fd.vkDestroySemaphore(s->device, s->timeline, NULL);
        s->fd.vkDestroyDevice(s->device, NULL);
    }
    if (s->messenger)
        s->fi.vkDestroyDebugUtilsMessengerEXT(s->instance, s->messenger, NULL);
    if (s->instance)
        s->fi.vkDestroyInstance(s->instance, NULL);
    vk_lib_close(&s->lib);
    pthread_mutex_destroy(&s->queue_lock);
    pthread_mutex_destroy(&s->ctx_lock);
    free(s);
}

/* ---- the op table ----------------------------------------------------------------- */
/* One host entry per kernel family (vk-ops.c stages the call). */
#define VK_HOST_ENTRY(name)                                                                          \
    static rayo_status host_##name(void *state, const rayo_call *call)                               \
    { return vk_host_call(state, call, &vk_family_##name); }
GPU_FAMILIES(VK_HOST_ENTRY)
#undef VK_HOST_ENTRY

/* convert: no quantizing shader (f32 to Q8_0 or Q4_0 falls through to the
 * CPU backends) */
#define VK_CONVERT_TO_F32(OP, A, B, C, Y) GPU_ENTRY(OP, GPU_DTYPES(A, B, C, Y), convert)
#define VK_CONVERT_TO_F16 VK_CONVERT_TO_F32
#define VK_CONVERT_TO_BF16 VK_CONVERT_TO_F32
#define VK_CONVERT_TO_Q8_0(OP, A, B, C, Y)
#define VK_CONVERT_TO_Q4_0(OP, A, B, C, Y)
#define GPU_COMBO_CONVERT(OP, A, B, C, Y) VK_CONVERT_TO_##Y(OP, A, B, C, Y)

/* Every op and dtype combination with kernels here, each with its family. */
#define GPU_HOST_ENTRY(name) host_##name
#define GPU_FAMILY(name) &vk_family_##name
#include "../gpu-common/gpu-op-table.h"

const vk_family *vk_family_of(uint32_t op, uint32_t dtypes)
{
    return gpu_family_of(op, dtypes);
}

GPU_PLUGIN_DESCRIPTOR("vulkan", RAYO_ARCH_ANY, 30, vk, gpu_op_table, &vk_memory_api);

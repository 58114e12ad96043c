/* SPDX-License-Identifier: MIT */
/* vk-loader.c - opening libvulkan.so.1 at run time and mapping VkResult to
 * rayo statuses.  No link-time dependency on Vulkan: a machine without the
 * loader gets a probe that says "libvulkan.so.1 not found". */
#include "vk-internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

rayo_status vk_lib_open(vk_lib *lib, const char *path, char *why, size_t why_size)
{
    memset(lib, 0, sizeof *lib);
    const char *name = path && *path ? path : "libvulkan.so.1";
    lib->handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
        const char *err = dlerror();
        snprintf(why, why_size, "%s not found (%s)", name, err ? err : "dlopen failed");
        return RAYO_E_NOT_FOUND;
    }
    /* dlsym returns void *; converting through memcpy keeps ISO C happy */
    void *sym = dlsym(lib->handle, "vkGetInstanceProcAddr");
    if (!sym) {
        snprintf(why, why_size, "%s has no vkGetInstanceProcAddr", name);
        vk_lib_close(lib);
        return RAYO_E_NOT_FOUND;
    }
    memcpy(&lib->vkGetInstanceProcAddr, &sym, sizeof sym);
#define VK_LOAD_GLOBAL(fn) lib->fn = (PFN_##fn)lib->vkGetInstanceProcAddr(VK_NULL_HANDLE, #fn);
    VK_GLOBAL_FNS(VK_LOAD_GLOBAL)
#undef VK_LOAD_GLOBAL
    if (!lib->vkCreateInstance || !lib->vkEnumerateInstanceExtensionProperties ||
        !lib->vkEnumerateInstanceLayerProperties) {
        snprintf(why, why_size, "%s is not a usable Vulkan loader", name);
        vk_lib_close(lib);
        return RAYO_E_NOT_FOUND;
    }
    return RAYO_OK;
}

void vk_lib_close(vk_lib *lib)
{
    if (lib->handle)
        dlclose(lib->handle);
    memset(lib, 0, sizeof *lib);
}

void vk_load_instance_fns(const vk_lib *lib, VkInstance instance, vk_ifns *fi)
{
#define VK_LOAD_INSTANCE(fn) fi->fn = (PFN_##fn)lib->vkGetInstanceProcAddr(instance, #fn);
    VK_INSTANCE_FNS(VK_LOAD_INSTANCE)
    VK_INSTANCE_OPTIONAL_FNS(VK_LOAD_INSTANCE)
#undef VK_LOAD_INSTANCE
}

rayo_status vk_load_device_fns(const vk_ifns *fi, VkDevice device, vk_dfns *fd,
                               char *why, size_t why_size)
{
#define VK_LOAD_DEVICE(fn)                                                       \
    fd->fn = (PFN_##fn)fi->vkGetDeviceProcAddr(device, #fn);                    \
    if (!fd->fn) {                                                              \
        snprintf(why, why_size, "the Vulkan driver lacks %s", #fn);            \
        return RAYO_E_UNSUPPORTED;                                              \
    }
    VK_DEVICE_FNS(VK_LOAD_DEVICE)
#undef VK_LOAD_DEVICE
    return RAYO_OK;
}

const char *vk_result_name(VkResult r)
{
    switch (r) {
#define VK_NAME(x) case x: return #x;
    VK_NAME(VK_SUCCESS) VK_NAME(VK_NOT_READY) VK_NAME(VK_TIMEOUT) VK_NAME(VK_INCOMPLETE)
    VK_NAME(VK_ERROR_OUT_OF_HOST_MEMORY) VK_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VK_NAME(VK_ERROR_INITIALIZATION_FAILED) VK_NAME(VK_ERROR_DEVICE_LOST)
    VK_NAME(VK_ERROR_MEMORY_MAP_FAILED) VK_NAME(VK_ERROR_LAYER_NOT_PRESENT)
    VK_NAME(VK_ERROR_EXTENSION_NOT_PRESENT) VK_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
    VK_NAME(VK_ERROR_INCOMPATIBLE_DRIVER) VK_NAME(VK_ERROR_TOO_MANY_OBJECTS)
    VK_NAME(VK_ERROR_FORMAT_NOT_SUPPORTED) VK_NAME(VK_ERROR_FRAGMENTED_POOL)
    VK_NAME(VK_ERROR_OUT_OF_POOL_MEMORY) VK_NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    VK_NAME(VK_ERROR_FRAGMENTATION) VK_NAME(VK_ERROR_INVALID_SHADER_NV)
    VK_NAME(VK_PIPELINE_COMPILE_REQUIRED) VK_NAME(VK_ERROR_UNKNOWN)
#undef VK_NAME
    default: return "VkResult (unknown code)";
    }
}

rayo_status vk_status_of(VkResult r)
{
    switch (r) {
    case VK_SUCCESS:
        return RAYO_OK;
    case VK_TIMEOUT:
        return RAYO_E_TIMEOUT;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS:
        return RAYO_E_NOMEM;
    case VK_ERROR_DEVICE_LOST:
        return RAYO_E_DEVICE_LOST;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
        return RAYO_E_UNSUPPORTED;
    default:
        return RAYO_E_BACKEND;
    }
}

rayo_status vk_fail(vk_state *s, VkResult r, const char *what)
{
    if (r == VK_ERROR_DEVICE_LOST)
        atomic_store(&s->lost, 1);
    s->host->set_error(s->host, "vulkan: %s: %s", what, vk_result_name(r));
    return vk_status_of(r);
}

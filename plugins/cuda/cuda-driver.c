/* SPDX-License-Identifier: MIT */
/* cuda-driver.c - loads the CUDA driver library at run time.
 *
 * No -lcuda: linking the driver would make the plugin (and every program
 * that loads it) fail to start where no NVIDIA driver is installed.  The
 * entry points are resolved with dlsym under the versioned names cuda.h
 * maps them to. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The driver API this plugin needs: 11.0 runs the sm_80 PTX (ISA 7.0). */
#define CUDA_MIN_DRIVER 11000

static cuda_driver driver;
static char driver_why[256];
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

#define CUDA_STR2(x) #x
#define CUDA_STR(x) CUDA_STR2(x)

static int resolve(void)
{
#define CUDA_RESOLVE(name)                                                                  \
    driver.name = (__typeof__(driver.name))dlsym(driver.lib, CUDA_STR(name));              \
    if (!driver.name) {                                                                     \
        snprintf(driver_why, sizeof driver_why,                                             \
                 "libcuda.so.1 lacks %s: the NVIDIA driver is too old", CUDA_STR(name));     \
        return -1;                                                                          \
    }
    CUDA_DRIVER_FUNCTIONS(CUDA_RESOLVE)
#undef CUDA_RESOLVE
    driver.cuTensorMapEncodeTiled =
        (__typeof__(driver.cuTensorMapEncodeTiled))dlsym(driver.lib, CUDA_STR(cuTensorMapEncodeTiled));
    driver.cuGraphAddDependencies_v2 =
        (__typeof__(driver.cuGraphAddDependencies_v2))dlsym(driver.lib, "cuGraphAddDependencies_v2");
    driver.has_graphs = 1;
#define CUDA_RESOLVE_OPTIONAL(name)                                                         \
    driver.name = (__typeof__(driver.name))dlsym(driver.lib, CUDA_STR(name));              \
    driver.has_graphs &= driver.name != NULL;
    CUDA_GRAPH_FUNCTIONS(CUDA_RESOLVE_OPTIONAL)
#undef CUDA_RESOLVE_OPTIONAL
    driver.event_elapsed = (__typeof__(driver.event_elapsed))dlsym(driver.lib, "cuEventElapsedTime");
    return 0;
}

static void load_driver(void)
{
    driver.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver.lib) {
        const char *e = dlerror();
        snprintf(driver_why, sizeof driver_why, "libcuda.so.1 not found (no NVIDIA driver): %s",
                 e ? e : "dlopen failed");
        return;
    }
    if (resolve() != 0)
        goto fail;
    CUresult r = driver.cuInit(0);
    if (r != CUDA_SUCCESS) {
        char text[160];
        cuda_error_text(&driver, r, text, sizeof text);
        if (r == CUDA_ERROR_NO_DEVICE)
            snprintf(driver_why, sizeof driver_why, "no CUDA device: cuInit: %s", text);
        else if (r == CUDA_ERROR_STUB_LIBRARY)
            snprintf(driver_why, sizeof driver_why,
                     "libcuda.so.1 is the toolkit's stub, not a driver: cuInit: %s", text);
        else
            snprintf(driver_why, sizeof driver_why, "cuInit failed: %s", text);
        goto fail;
    }
    if (driver.cuDriverGetVersion(&driver.version) != CUDA_SUCCESS || driver.version < CUDA_MIN_DRIVER) {
        snprintf(driver_why, sizeof driver_why,
                 "NVIDIA driver too old: it supports CUDA %d.%d, the cuda backend needs %d.%d",
                 driver.version / 1000, driver.version % 1000 / 10, CUDA_MIN_DRIVER / 1000,
                 CUDA_MIN_DRIVER % 1000 / 10);
        goto fail;
    }
    return;
fail:
    /* Keep libcuda mapped (never dlclose a driver that may have started
     * threads); forget the entry points so nobody uses them. */
    driver.cuInit = NULL;
}

const cuda_driver *cuda_driver_get(char *why, size_t why_len)
{
    pthread_once(&driver_once, load_driver);
    if (driver.lib && driver.cuInit)
        return &driver;
    if (why && why_len)
        snprintf(why, why_len, "%s", driver_why);
    return NULL;
}

const char *cuda_error_text(const cuda_driver *drv, CUresult r, char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;
    if (drv && drv->cuGetErrorName)
        drv->cuGetErrorName(r, &name);
    if (drv && drv->cuGetErrorString)
        drv->cuGetErrorString(r, &text);
    if (name)
        snprintf(buf, len, "%s (%s)", name, text ? text : "no description");
    else
        snprintf(buf, len, "CUresult %d", (int)r);
    return buf;
}

rayo_status cuda_map_error(CUresult r, int *lost)
{
    *lost = 0;
    switch (r) {
    case CUDA_SUCCESS:
        return RAYO_OK;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return RAYO_E_NOMEM;
    case CUDA_ERROR_INVALID_VALUE:
        return RAYO_E_INVALID;
    case CUDA_ERROR_NOT_READY:
        return RAYO_E_TIMEOUT;
    /* Sticky errors: the context cannot be used any more. */
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_UNKNOWN:
        *lost = 1;
        return RAYO_E_DEVICE_LOST;
    default:
        return RAYO_E_BACKEND;
    }
}

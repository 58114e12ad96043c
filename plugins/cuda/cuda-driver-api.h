/* SPDX-License-Identifier: MIT */
/* cuda-driver-api.h - the part of the CUDA Driver API the cuda backend uses,
 * declared by rayo itself.
 *
 * The plugin never links libcuda: it dlopens libcuda.so.1 and looks entry
 * points up by name (cuda-driver.c).  It needs cuda.h only for types, enum
 * values and prototypes to take __typeof__ of, and cuda.h comes with a
 * non-free toolkit.  This header declares just that subset, so the backend
 * builds where the toolkit is absent (a Debian main build); configure uses
 * the toolkit's cuda.h instead when it finds one.  tests/test-cuda-decls.c
 * includes both and lets the compiler check that every type, prototype and
 * constant here agrees with cuda.h.
 *
 * The values are the driver's ABI (stable across CUDA releases: an entry
 * point whose signature changed got a new versioned name, mapped below). */
#ifndef RAYO_CUDA_DRIVER_API_H
#define RAYO_CUDA_DRIVER_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- constants, as (name, value) pairs ------------------------------------
 * One list per enum type: the enums below are generated from them, and the
 * agreement test compares each pair with cuda.h's value. */
#define RAYO_CU_RESULTS(X)                                                     \
    X(CUDA_SUCCESS, 0) X(CUDA_ERROR_INVALID_VALUE, 1)                         \
    X(CUDA_ERROR_OUT_OF_MEMORY, 2) X(CUDA_ERROR_DEINITIALIZED, 4)             \
    X(CUDA_ERROR_STUB_LIBRARY, 34) X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46)       \
    X(CUDA_ERROR_NO_DEVICE, 100) X(CUDA_ERROR_DEVICE_NOT_LICENSED, 102)       \
    X(CUDA_ERROR_ECC_UNCORRECTABLE, 214) X(CUDA_ERROR_NOT_READY, 600)         \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, 700) X(CUDA_ERROR_LAUNCH_TIMEOUT, 702)      \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709)                                   \
    X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714)                                   \
    X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715)                                    \
    X(CUDA_ERROR_MISALIGNED_ADDRESS, 716)                                     \
    X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717) X(CUDA_ERROR_INVALID_PC, 718)    \
    X(CUDA_ERROR_LAUNCH_FAILED, 719) X(CUDA_ERROR_UNKNOWN, 999)

#define RAYO_CU_DEVICE_ATTRIBUTES(X)                                           \
    X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                           \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)                       \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)                       \
    X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)

#define RAYO_CU_FUNCTION_ATTRIBUTES(X)                                        \
    X(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8)                     \
    X(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 9)
#define RAYO_CU_JIT_OPTIONS(X) X(CU_JIT_ERROR_LOG_BUFFER, 5) X(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6)
#define RAYO_CU_JIT_INPUT_TYPES(X) X(CU_JIT_INPUT_PTX, 1)
#define RAYO_CU_STREAM_FLAGS(X) X(CU_STREAM_DEFAULT, 0) X(CU_STREAM_NON_BLOCKING, 1)
#define RAYO_CU_EVENT_FLAGS(X) X(CU_EVENT_DISABLE_TIMING, 2)
/* tensor maps (CUDA 12.0 on, sm_90): the values cuda-wgmma.c uses */
#define RAYO_CU_TENSOR_MAP_DATA_TYPES(X) \
    X(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 6) X(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 7) X(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 9)
#define RAYO_CU_TENSOR_MAP_INTERLEAVES(X) X(CU_TENSOR_MAP_INTERLEAVE_NONE, 0)
#define RAYO_CU_TENSOR_MAP_SWIZZLES(X) X(CU_TENSOR_MAP_SWIZZLE_128B, 3)
#define RAYO_CU_TENSOR_MAP_L2_PROMOTIONS(X) X(CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 3)
#define RAYO_CU_TENSOR_MAP_OOB_FILLS(X) X(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE, 0)
/* graph edges (CUDA 12.3 on): a programmatic edge between kernel nodes */
#define RAYO_CU_GRAPH_EDGES(X) \
    X(CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC, 1) X(CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC, 1)

/* With cuda.h already included (the agreement test) only the lists and the
 * prototypes are wanted: the compiler then checks that each prototype and
 * typedef is compatible with cuda.h's. */
#ifndef RAYO_CUDA_DECLS_CHECK
#define RAYO_CU_ENUMERATOR(name, value) name = value,
typedef enum { RAYO_CU_RESULTS(RAYO_CU_ENUMERATOR) } CUresult;
typedef enum { RAYO_CU_DEVICE_ATTRIBUTES(RAYO_CU_ENUMERATOR) } CUdevice_attribute;
typedef enum { RAYO_CU_FUNCTION_ATTRIBUTES(RAYO_CU_ENUMERATOR) } CUfunction_attribute;
typedef enum { RAYO_CU_JIT_OPTIONS(RAYO_CU_ENUMERATOR) } CUjit_option;
typedef enum { RAYO_CU_JIT_INPUT_TYPES(RAYO_CU_ENUMERATOR) } CUjitInputType;
enum { RAYO_CU_STREAM_FLAGS(RAYO_CU_ENUMERATOR) RAYO_CU_EVENT_FLAGS(RAYO_CU_ENUMERATOR) };
typedef enum { RAYO_CU_TENSOR_MAP_DATA_TYPES(RAYO_CU_ENUMERATOR) } CUtensorMapDataType;
typedef enum { RAYO_CU_TENSOR_MAP_INTERLEAVES(RAYO_CU_ENUMERATOR) } CUtensorMapInterleave;
typedef enum { RAYO_CU_TENSOR_MAP_SWIZZLES(RAYO_CU_ENUMERATOR) } CUtensorMapSwizzle;
typedef enum { RAYO_CU_TENSOR_MAP_L2_PROMOTIONS(RAYO_CU_ENUMERATOR) } CUtensorMapL2promotion;
typedef enum { RAYO_CU_TENSOR_MAP_OOB_FILLS(RAYO_CU_ENUMERATOR) } CUtensorMapFloatOOBfill;
enum { RAYO_CU_GRAPH_EDGES(RAYO_CU_ENUMERATOR) };
#undef RAYO_CU_ENUMERATOR

/* Entry points whose signature changed over the years carry a version
 * suffix in libcuda; the plugin looks up the current one (as cuda.h does). */
#define cuDeviceTotalMem cuDeviceTotalMem_v2
#define cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2
#define cuLinkCreate cuLinkCreate_v2
#define cuLinkAddData cuLinkAddData_v2
#define cuMemAlloc cuMemAlloc_v2
#define cuMemFree cuMemFree_v2
#define cuMemcpyHtoD cuMemcpyHtoD_v2
#define cuMemcpyDtoH cuMemcpyDtoH_v2
#define cuMemcpyHtoDAsync cuMemcpyHtoDAsync_v2
#define cuMemcpyDtoHAsync cuMemcpyDtoHAsync_v2
#define cuStreamDestroy cuStreamDestroy_v2
#define cuEventDestroy cuEventDestroy_v2
#define cuGraphInstantiate cuGraphInstantiateWithFlags
#define cuGraphAddKernelNode cuGraphAddKernelNode_v2
#define cuGraphExecKernelNodeSetParams cuGraphExecKernelNodeSetParams_v2

/* 128 opaque bytes the driver fills; passed to kernels by value */
typedef struct CUtensorMap_st {
    _Alignas(64) uint64_t opaque[16];
} CUtensorMap;
#endif

/* ---- handles --------------------------------------------------------------
 * Opaque pointers under the driver's own struct tags, so that these
 * typedefs are the same types as cuda.h's. */
typedef unsigned long long CUdeviceptr; /* 64-bit hosts only, as the driver */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUkern_st *CUkernel;
#ifndef RAYO_CUDA_DECLS_CHECK
typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    void **kernelParams, **extra;
    CUkernel kern;   /* used when func is NULL */
    CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;
/* a graph edge's kind: zeroes are an ordinary edge */
typedef struct CUgraphEdgeData_st {
    unsigned char from_port, to_port, type, reserved[5];
} CUgraphEdgeData;
#endif
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;

/* ---- entry points (never called directly: looked up with dlsym) ---------- */
CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuGetErrorName(CUresult error, const char **text);
CUresult cuGetErrorString(CUresult error, const char **text);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetName(char *name, int len, CUdevice device);
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice device);
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device);
CUresult cuDevicePrimaryCtxRelease(CUdevice device);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int option_count,
                            CUjit_option *options, void **option_values);
CUresult cuModuleUnload(CUmodule module);
CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name);
CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attribute, int value);
CUresult cuLinkCreate(unsigned int option_count, CUjit_option *options, void **option_values,
                      CUlinkState *link);
CUresult cuLinkAddData(CUlinkState link, CUjitInputType type, void *data, size_t size, const char *name,
                       unsigned int option_count, CUjit_option *options, void **option_values);
CUresult cuLinkComplete(CUlinkState link, void **cubin, size_t *size);
CUresult cuLinkDestroy(CUlinkState link);
CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes);
CUresult cuMemFree(CUdeviceptr ptr);
CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned int flags);
CUresult cuMemFreeHost(void *ptr);
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes);
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes);
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
CUresult cuStreamCreate(CUstream *stream, unsigned int flags);
CUresult cuStreamDestroy(CUstream stream);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuLaunchKernel(CUfunction fn, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                        unsigned int block_x, unsigned int block_y, unsigned int block_z,
                        unsigned int shared_bytes, CUstream stream, void **params, void **extra);
CUresult cuEventCreate(CUevent *event, unsigned int flags);
CUresult cuEventDestroy(CUevent event);
CUresult cuEventRecord(CUevent event, CUstream stream);
CUresult cuEventQuery(CUevent event);
CUresult cuEventSynchronize(CUevent event);
CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags);
/* graphs: optional (a batch without them launches its kernels one by one) */
CUresult cuGraphCreate(CUgraph *graph, unsigned int flags);
CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *dependencies,
                              size_t dependency_count, const CUDA_KERNEL_NODE_PARAMS *params);
CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, unsigned long long flags);
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *params);
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream);
CUresult cuGraphExecDestroy(CUgraphExec exec);
CUresult cuGraphDestroy(CUgraph graph);
/* optional: resolved where the driver has it (cuda-driver.c) */
CUresult cuGraphAddDependencies_v2(CUgraph graph, const CUgraphNode *from, const CUgraphNode *to,
                                   const CUgraphEdgeData *edges, size_t count);
CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *address,
                                const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                const cuuint32_t *element_strides, CUtensorMapInterleave interleave,
                                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob);

#endif

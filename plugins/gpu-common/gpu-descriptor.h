/* SPDX-License-Identifier: MIT */
/* gpu-descriptor.h - the exported descriptor of a GPU plugin (cuda, vulkan,
 * webgpu): any CPU, its own probe, init and fini (PREFIX_probe, ...), its op
 * table and its memory API (device buffers and batches), e.g.
 *   GPU_PLUGIN_DESCRIPTOR("cuda", RAYO_ARCH_ANY, 40, cuda, gpu_op_table, &cuda_memory_api);
 * (The CPU plugins' counterpart is CPU_PLUGIN_DESCRIPTOR in cpu-base.h.) */
#ifndef RAYO_GPU_DESCRIPTOR_H
#define RAYO_GPU_DESCRIPTOR_H

#include "rayo-plugin.h"

#ifdef PACKAGE_VERSION
#define GPU_PLUGIN_VERSION PACKAGE_VERSION
#else
#define GPU_PLUGIN_VERSION "0"
#endif

#define GPU_PLUGIN_DESCRIPTOR(NAME, ARCH, PRIORITY, PREFIX, OPS, MEMORY)                     \
    RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {                         \
        .magic = RAYO_PLUGIN_MAGIC, .abi_major = RAYO_PLUGIN_ABI_MAJOR,                     \
        .abi_minor = RAYO_PLUGIN_ABI_MINOR, .struct_size = sizeof(rayo_plugin_descriptor),    \
        .arch = (ARCH), .name = (NAME), .version = GPU_PLUGIN_VERSION, .cpu_features = 0,   \
        .priority = (PRIORITY), .probe = PREFIX##_probe, .init = PREFIX##_init,             \
        .fini = PREFIX##_fini, .ops = (OPS), .op_count = sizeof(OPS) / sizeof((OPS)[0]),    \
        .memory = (MEMORY), .op_entry_size = sizeof(rayo_op_entry),                         \
    }

#endif

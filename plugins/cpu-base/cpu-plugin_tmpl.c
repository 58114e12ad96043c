/* SPDX-License-Identifier: MIT */
/* cpu-plugin_tmpl.c - the op table and the exported descriptor of a CPU
 * plugin.  Its plugin.c defines cpu_plugin (cpu-base.h), its CPU_COMBO_*
 * choices (cpu-op-table.h; or its plugin.h does) and
 *   CPU_PLUGIN_ID   name, arch, cpu_features, priority: the first four
 *                   arguments of CPU_PLUGIN_DESCRIPTOR
 * then includes this file. */
static const rayo_op_entry cpu_plugin_ops[] = {
#include "cpu-op-table.h"
};

#define CPU_PLUGIN_DESCRIPTOR_OF(...) CPU_PLUGIN_DESCRIPTOR(__VA_ARGS__)
CPU_PLUGIN_DESCRIPTOR_OF(CPU_PLUGIN_ID, cpu_plugin_ops);

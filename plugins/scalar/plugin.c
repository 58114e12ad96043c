/* plugin.c - the portable C backend, the one that exists on every machine
 * rayo runs on: its device, op table and descriptor (the glue is
 * ../cpu-base). */
#include "plugin.h"

const cpu_plugin_spec cpu_plugin = {
    .device_name = "CPU (portable C)",
    .state_size = sizeof(cpu_state),
    .range_granule = 1,
};

#define RAYO_KERNEL CPU_KERNEL
static const rayo_op_entry scalar_ops[] = {
#include "rayo-op-table.h"
};

CPU_PLUGIN_DESCRIPTOR("scalar", RAYO_ARCH_ANY, 0, 10, scalar_ops);

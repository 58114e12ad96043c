/* SPDX-License-Identifier: MIT */
/* rayo-plugin-1.99.h - an imagined future minor of plugin ABI 1 (tests only).
 *
 * The frozen 1.0 header with fields appended to every struct that grows,
 * as a real 1.x would append them.  Each new field means "1.0 behaviour"
 * when it is 0 or absent.  Whoever fills a struct sets its size; whoever
 * reads one checks the size first:
 *   core -> plugin: rayo_call, rayo_dev_call (RAYO_CALL_HAS,
 *     RAYO_DEV_CALL_HAS), rayo_host (host->struct_size), rayo_probe_result
 *     (filled by the plugin, sized by the core: result->struct_size);
 *   plugin -> core: the descriptor (struct_size), its op entries
 *     (op_entry_size), rayo_memory_api (struct_size).
 * rayo_device_desc sits in an array and cannot grow (it keeps reserved words
 * instead). */
#ifndef RAYO_PLUGIN_199_H
#define RAYO_PLUGIN_199_H

#define RAYO_PLUGIN_ABI_MINOR 99

/* 1.2's constant operands (the real ones), then y = a + b + future_bias
 * (add; 0: plain add) */
#define RAYO_1X_CALL_FIELDS uint32_t constant_operands; uint32_t reserved3; float future_bias; uint32_t future_flags;
/* 1.1's replay fields and 1.2's constant operands (the real ones), then the imagined ones */
#define RAYO_1X_DEV_CALL_FIELDS size_t step_bytes[4]; uint32_t step_flags; uint32_t reserved2; \
    uint32_t constant_operands; uint32_t reserved3; float future_bias; uint32_t future_flags;
/* a service a 1.0 core does not have: the plugin must not call it there */
#define RAYO_1X_HOST_FIELDS void (*future_note)(const rayo_host *host, const char *what);
/* the plugin writes it only where the core's result has room */
#define RAYO_1X_PROBE_FIELDS char future_note[64];
/* per-entry data a 1.0 core must step over (op_entry_size) */
#define RAYO_1X_OP_ENTRY_FIELDS uint64_t future_cost;
#define RAYO_1X_MEMORY_FIELDS \
    rayo_status (*batch_set_step)(void *state, void *batch, size_t step); \
    rayo_status (*future_buffer_fill)(void *state, void *buf, size_t offset, size_t bytes, int value);
/* 1.2's release_constant (the real one), then the imagined ones */
#define RAYO_1X_DESCRIPTOR_FIELDS void (*release_constant)(void *state, const void *data, size_t bytes); \
    uint64_t future_caps; const char *future_homepage;

#include "rayo-plugin-1.0.h"

#endif

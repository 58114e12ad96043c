/* SPDX-License-Identifier: MIT */
/* vk-shader-codes.h - numbers the vulkan plugin and its shaders share
 * beyond the op ids.  Plain #defines only: the C preprocessor also writes
 * them into the shaders' rayo-op-ids.glsl (shaders/rayo-op-ids.h). */
#ifndef VK_SHADER_CODES_H
#define VK_SHADER_CODES_H

/* eltwise.comp's OP for bias_act: VK_BIAS_ACT_BASE + the activation, so
 * each activation gets its own branch-free pipeline. */
#define VK_BIAS_ACT_BASE 100u

#endif

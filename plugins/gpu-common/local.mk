# SPDX-License-Identifier: MIT
# plugins/gpu-common: what the GPU plugins (cuda, vulkan, webgpu) share, as
# headers each includes by its path: the exported descriptor
# (gpu-descriptor.h), the kernel families (gpu-family.h) and the op tables
# generated from the op list (gpu-op-table.h, gpu-op-entries.h).
# Everything specific to one GPU API stays in its plugin's folder.
GPU_COMMON_FILES = plugins/gpu-common/gpu-descriptor.h plugins/gpu-common/gpu-family.h \
	plugins/gpu-common/gpu-op-entries.h plugins/gpu-common/gpu-op-table.h
EXTRA_DIST += $(GPU_COMMON_FILES)

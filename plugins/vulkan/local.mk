# SPDX-License-Identifier: MIT
# plugins/vulkan: the Vulkan compute backend.  GLSL compute shaders
# (shaders/*.comp) are compiled to SPIR-V at build time with glslc, checked
# with spirv-val and embedded in the plugin; libvulkan.so.1 is dlopened at
# run time, so the plugin has no link-time dependency on Vulkan.

VK_SHADER_FILES = \
	shaders/common.glsl shaders/rmath.glsl shaders/eltwise.comp \
	shaders/reduce.comp shaders/rows.comp shaders/matmul.comp \
	shaders/gemv.comp shaders/transpose.comp shaders/matmul_coop.comp \
	shaders/gemv_quant.comp shaders/gemv_int8.comp shaders/attention.comp \
	shaders/attention.glsl shaders/attention_dec.comp shaders/attention_short.comp \
	shaders/attention_prompt.comp \
	shaders/half.glsl shaders/dequant.glsl shaders/glu.glsl shaders/rope.glsl \
	shaders/infer_rows.comp shaders/half_rows.comp shaders/matmul_half.comp \
	shaders/half_scale.comp shaders/rayo-op-ids.h
VK_SHADER_TOOLS = plugins/vulkan/shaders.list plugins/vulkan/embed-shaders.sh

EXTRA_DIST += $(VK_SHADER_FILES) $(VK_SHADER_TOOLS) \
	plugins/vulkan/50-vulkan.conf doc/benchmarks-vulkan.md

if BUILD_VULKAN
plugin_LTLIBRARIES += plugins/vulkan/rayo-vulkan.la
plugins_vulkan_rayo_vulkan_la_SOURCES = \
	plugins/vulkan/vk-internal.h plugins/vulkan/vk-plugin.c \
	plugins/vulkan/vk-loader.c plugins/vulkan/vk-memory.c \
	plugins/vulkan/vk-pipelines.c plugins/vulkan/vk-submit.c \
	plugins/vulkan/vk-batches.c plugins/vulkan/vk-profile.c \
	plugins/vulkan/vk-ops.c plugins/vulkan/vk-infer.c \
	plugins/vulkan/vk-typed-matmul.c plugins/vulkan/vk-half-prompt.c \
	plugins/vulkan/vk-weight-copies.c \
	plugins/vulkan/vk-shader-codes.h
nodist_plugins_vulkan_rayo_vulkan_la_SOURCES = plugins/vulkan/vk-shaders.h
plugins_vulkan_rayo_vulkan_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/plugins/vulkan
plugins_vulkan_rayo_vulkan_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS) -fvisibility=hidden
plugins_vulkan_rayo_vulkan_la_LDFLAGS = $(RAYO_MODULE_FLAGS)
plugins_vulkan_rayo_vulkan_la_LIBADD = $(PTHREAD_LIBS) -lm
confd_DATA += plugins/vulkan/50-vulkan.conf

BUILT_SOURCES += plugins/vulkan/vk-shaders.h
CLEANFILES += plugins/vulkan/vk-shaders.h plugins/vulkan/rayo-op-ids.glsl
# The op ids of core/rayo-ops.h as GLSL constants, for the shaders to include.
plugins/vulkan/rayo-op-ids.glsl: $(srcdir)/shaders/rayo-op-ids.h $(srcdir)/core/rayo-ops.h \
		$(srcdir)/plugins/vulkan/vk-shader-codes.h
	$(AM_V_GEN)$(MKDIR_P) plugins/vulkan && \
	$(CPP) -P -I$(srcdir)/core -I$(srcdir)/plugins/vulkan $(srcdir)/shaders/rayo-op-ids.h >$@.tmp && \
	mv $@.tmp $@
# The SPIR-V of every module in shaders.list, as C arrays (in the build tree).
plugins/vulkan/vk-shaders.h: $(VK_SHADER_FILES:%=$(srcdir)/%) $(VK_SHADER_TOOLS:%=$(srcdir)/%) \
		plugins/vulkan/rayo-op-ids.glsl
	$(AM_V_GEN)$(MKDIR_P) plugins/vulkan && \
	$(SHELL) $(srcdir)/plugins/vulkan/embed-shaders.sh "$(GLSLC)" "$(SPIRV_VAL)" \
		$(srcdir)/shaders $(srcdir)/plugins/vulkan/shaders.list $@ plugins/vulkan
endif

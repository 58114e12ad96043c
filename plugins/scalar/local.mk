# SPDX-License-Identifier: MIT
# plugins/scalar: the portable C backend that always exists (no intrinsics,
# no -march: the same sources build for any CPU, aarch64 and WebAssembly).
if BUILD_SCALAR
plugin_LTLIBRARIES += plugins/scalar/rayo-scalar.la
plugins_scalar_rayo_scalar_la_SOURCES = \
	plugins/scalar/plugin.h plugins/scalar/scalar-math.h plugins/scalar/plugin.c \
	plugins/scalar/elementwise.c plugins/scalar/reduce.c plugins/scalar/rows.c \
	plugins/scalar/matmul.c plugins/scalar/gemv.c plugins/scalar/transpose.c \
	plugins/scalar/convert.c plugins/scalar/quant.c plugins/scalar/infer.c plugins/scalar/attention.c \
	$(CPU_BASE_FILES) $(CPU_GEMM_FILES)
plugins_scalar_rayo_scalar_la_CPPFLAGS = $(AM_CPPFLAGS) $(CPU_BASE_CPPFLAGS)
plugins_scalar_rayo_scalar_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_scalar_rayo_scalar_la_LDFLAGS = $(RAYO_MODULE_FLAGS)
plugins_scalar_rayo_scalar_la_LIBADD = -lm
endif

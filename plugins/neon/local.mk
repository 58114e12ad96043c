# SPDX-License-Identifier: MIT
# plugins/neon: the AArch64 Advanced SIMD backend.  Built where configure's
# host is aarch64 (natively or with --host=aarch64-linux-gnu); Advanced SIMD
# is part of the AArch64 base ISA, so no -march flag is needed.
if BUILD_NEON
plugin_LTLIBRARIES += plugins/neon/rayo-neon.la
plugins_neon_rayo_neon_la_SOURCES = \
	plugins/neon/plugin.h plugins/neon/neon-math.h plugins/neon/plugin.c \
	plugins/neon/elementwise.c plugins/neon/reduce.c plugins/neon/rows.c \
	plugins/neon/matmul.c plugins/neon/gemv.c plugins/neon/transpose.c \
	plugins/neon/quant.c plugins/neon/infer.c \
	$(CPU_BASE_FILES) $(CPU_GEMM_FILES) $(SIMD128_BASE_FILES)
plugins_neon_rayo_neon_la_CPPFLAGS = $(AM_CPPFLAGS) $(CPU_BASE_CPPFLAGS)
plugins_neon_rayo_neon_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_neon_rayo_neon_la_LDFLAGS = $(RAYO_MODULE_FLAGS)
plugins_neon_rayo_neon_la_LIBADD = -lm
endif
EXTRA_DIST += plugins/neon/README.md plugins/neon/NOTES.md plugins/neon/loop-insns.py

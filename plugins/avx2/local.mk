# SPDX-License-Identifier: MIT
# plugins/avx2: the x86-64 AVX2+FMA backend.  This is the only code of rayo
# compiled with -mavx2 -mfma -mf16c (per-target flags): the core checks the CPU and
# the OS (cpuid + XGETBV) before it runs any of it.  Its AVX-VNNI functions carry
# target attributes instead of a flag (../cpu-base/x86-quant.h) and run only
# where the plugin finds the CPU has AVX-VNNI (plugin.c).
if BUILD_AVX2
plugin_LTLIBRARIES += plugins/avx2/rayo-avx2.la
plugins_avx2_rayo_avx2_la_SOURCES = \
	plugins/avx2/plugin.h plugins/avx2/avx2-vector.h plugins/avx2/plugin.c \
	plugins/avx2/elementwise.c plugins/avx2/reduce.c plugins/avx2/rows.c plugins/avx2/matmul.c plugins/avx2/quant.c plugins/avx2/infer.c \
	$(CPU_BASE_FILES) $(X86_BASE_FILES)
plugins_avx2_rayo_avx2_la_CPPFLAGS = $(AM_CPPFLAGS) $(CPU_BASE_CPPFLAGS)
plugins_avx2_rayo_avx2_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS) -mavx2 -mfma -mf16c -fvisibility=hidden
plugins_avx2_rayo_avx2_la_LDFLAGS = $(RAYO_MODULE_FLAGS)
plugins_avx2_rayo_avx2_la_LIBADD = $(PTHREAD_LIBS) -lm
confd_DATA += plugins/avx2/50-avx2.conf
endif
EXTRA_DIST += plugins/avx2/50-avx2.conf doc/benchmarks-cpu.md

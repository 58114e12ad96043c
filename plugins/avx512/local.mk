# SPDX-License-Identifier: MIT
# plugins/avx512: the x86-64 AVX-512 (F/BW/VL/DQ) backend, ranked above avx2.
# The only code of rayo compiled with -mavx512*: the core checks the CPU and
# that the OS saves the ZMM and opmask registers (cpuid + XGETBV bits 1-2
# and 5-7) before it runs any of it.  Its state, cache detection and sgemm
# glue are avx2's, from ../cpu-base (x86-*, plain C or AVX2 code).
if BUILD_AVX512
plugin_LTLIBRARIES += plugins/avx512/rayo-avx512.la
plugins_avx512_rayo_avx512_la_SOURCES = \
	plugins/avx512/plugin.h plugins/avx512/avx512-math.h plugins/avx512/avx512-vector.h plugins/avx512/plugin.c \
	plugins/avx512/elementwise.c plugins/avx512/reduce.c plugins/avx512/rows.c \
	plugins/avx512/matmul.c plugins/avx512/gemv.c plugins/avx512/quant.c plugins/avx512/infer.c \
	$(CPU_BASE_FILES) $(X86_BASE_FILES)
plugins_avx512_rayo_avx512_la_CPPFLAGS = $(AM_CPPFLAGS) $(CPU_BASE_CPPFLAGS)
plugins_avx512_rayo_avx512_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS) \
	-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c -mprefer-vector-width=512 -fvisibility=hidden
plugins_avx512_rayo_avx512_la_LDFLAGS = $(RAYO_MODULE_FLAGS)
plugins_avx512_rayo_avx512_la_LIBADD = $(PTHREAD_LIBS) -lm
confd_DATA += plugins/avx512/60-avx512.conf
endif
EXTRA_DIST += plugins/avx512/60-avx512.conf doc/benchmarks-cpu-avx512-sgemm.svg

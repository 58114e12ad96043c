# SPDX-License-Identifier: MIT
# plugins/cpu-base: the glue and the kernel templates the CPU plugins share,
# named by audience: cpu-* for every CPU plugin (scalar, avx2, avx512, neon,
# wasm), x86-* for avx2 and avx512, simd128-* for the 128-bit SIMD plugins
# (neon, wasm).  Not a library of its own: each CPU plugin compiles these
# files in (hidden, like the rest of it), so the plugins stay independent .so
# files that export only their descriptor.  A *_tmpl.c file is a template: a
# plugin's source includes it after defining its vector primitives; it is
# never compiled alone, so it is in EXTRA_DIST and in no _SOURCES list.
CPU_BASE_FILES = plugins/cpu-base/cpu-base.h plugins/cpu-base/cpu-base.c plugins/cpu-base/cpu-f64-fallback.h \
	plugins/cpu-base/cpu-rounding-budget.h \
	plugins/cpu-base/cpu-op-table.h
EXTRA_DIST += plugins/cpu-base/cpu-elementwise_tmpl.c plugins/cpu-base/cpu-plugin_tmpl.c \
	plugins/cpu-base/cpu-reduce_tmpl.c plugins/cpu-base/cpu-rope_tmpl.c plugins/cpu-base/cpu-row-sums_tmpl.c plugins/cpu-base/cpu-rows_tmpl.c plugins/cpu-base/cpu-transpose_tmpl.c plugins/cpu-base/cpu-typed-gemv_tmpl.c plugins/cpu-base/simd128-infer_tmpl.c plugins/cpu-base/simd128-glu_tmpl.c \
	plugins/cpu-base/simd128-int-gemv_tmpl.c \
	plugins/cpu-base/x86-infer_tmpl.c plugins/cpu-base/x86-attention_tmpl.c plugins/cpu-base/x86-qmatmul-tile_tmpl.c \
	plugins/cpu-base/x86-gemv_tmpl.c plugins/cpu-base/x86-matmul_tmpl.c plugins/cpu-base/x86-reduce_tmpl.c plugins/cpu-base/x86-rows_tmpl.c plugins/cpu-base/x86-sgemm-blocked_tmpl.c
# The matmul and gemv drivers of the plugins with micro-kernels in C
# (scalar, neon, wasm); avx2 and avx512 have their own sgemm.
CPU_GEMM_FILES = plugins/cpu-base/cpu-gemm.h plugins/cpu-base/cpu-gemm.c
# What neon and wasm share beyond the kernel templates: their op-table choices.
SIMD128_BASE_FILES = plugins/cpu-base/simd128-plugin.h
# What avx2 and avx512 share: their state and init (cache sizes, settings),
# the sgemm blocking overrides, the pool of packing buffers, matmul with half
# or quantized weights on their sgemm, the integer matmul of quantized weights
# at relaxed precision, weights of constant buffers kept prepared, block
# decoding, rows to f32, 8-lane vector math.
X86_BASE_FILES = plugins/cpu-base/x86-plugin.h plugins/cpu-base/x86-plugin.c \
	plugins/cpu-base/x86-cache.h plugins/cpu-base/x86-cache.c \
	plugins/cpu-base/x86-gemm.h plugins/cpu-base/x86-gemm.c \
	plugins/cpu-base/x86-typed-matmul.h plugins/cpu-base/x86-typed-matmul.c \
	plugins/cpu-base/x86-qmatmul.h plugins/cpu-base/x86-qmatmul.c \
	plugins/cpu-base/x86-prepared.h plugins/cpu-base/x86-prepared.c \
	plugins/cpu-base/x86-quant.h plugins/cpu-base/x86-avx2-math.h plugins/cpu-base/x86-row-to-f32.h
CPU_BASE_CPPFLAGS = -I$(top_srcdir)/plugins/cpu-base

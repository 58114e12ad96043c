# plugins/cpu-base: the glue every CPU plugin (scalar, avx2, neon, wasm)
# shares: state, thread-pool helpers, probe/init/fini, kernel prototypes and
# the descriptor macro.  Not a library of its own: each CPU plugin compiles
# these files in (hidden, like the rest of it), so the plugins stay
# independent .so files that export only their descriptor.
CPU_BASE_FILES = plugins/cpu-base/cpu-base.h plugins/cpu-base/cpu-base.c
EXTRA_DIST += plugins/cpu-base/typed-gemv.h plugins/cpu-base/x86-quant.h
# The typed gemv and the rope/attention/gated-unit glue of the SIMD plugins
# with those kernels in C intrinsics (neon, wasm).
CPU_INFER_FILES = plugins/cpu-base/typed-gemv.h plugins/cpu-base/infer-kernels.h
# The matmul and gemv drivers of the plugins with micro-kernels in C
# (scalar, neon, wasm); avx2 and avx512 have their own sgemm.
CPU_GEMM_FILES = plugins/cpu-base/cpu-gemm.h plugins/cpu-base/cpu-gemm.c
# What the sgemm drivers of avx2 and avx512 share: blocking overrides, the
# pool of packing buffers, matmul with half or quantized weights on them, and
# the integer matmul of 4-bit weights at relaxed precision.
X86_GEMM_FILES = plugins/cpu-base/x86-gemm.h plugins/cpu-base/x86-gemm.c \
	plugins/cpu-base/typed-matmul.h plugins/cpu-base/typed-matmul.c \
	plugins/cpu-base/x86-qmatmul.h plugins/cpu-base/x86-qmatmul.c
# The inference ops of avx2 and avx512: one source, included by each
# plugin's infer.c after it defines its vector operations.
X86_INFER_FILES = plugins/cpu-base/x86-infer.h plugins/cpu-base/x86-attention.h plugins/cpu-base/x86-infer-ops.h
CPU_BASE_CPPFLAGS = -I$(top_srcdir)/plugins/cpu-base

# SPDX-License-Identifier: MIT
# bench/: benchmarks and their same-run references, run by hand (never by
# `make check`: speed lives here, not in tests).  bench/README.md lists them.
# The C programs use only the public API; the one that needs the cuda
# plugin's own driver loader (cuda-host-bench) stays in plugins/cuda.

EXTRA_DIST += bench/README.md bench/gpu-run.sh bench/gpu-common.sh bench/cuda-decode-run.sh bench/decode-step-kernels.py bench/cuda-prompt-run.sh \
	bench/vulkan-llama-run.sh bench/llama-gpu-run.sh \
	bench/infer-cpu.sh bench/llama-speed.sh bench/llama-cpu.sh bench/llama-cpu-package.sh bench/llama-speed-llamacpp.mjs bench/llama-torch.py \
	bench/wasm-quant-gemv.sh bench/web-speed.sh bench/web-speed.mjs \
	bench/cuda-matmul.sh bench/cuda-half-matmul.sh bench/cuda-small-matmul.sh bench/cuda-tf32-wgmma.sh \
	bench/gpu-bandwidth.sh bench/torch-matmul.py bench/torch-bandwidth.py bench/torch-small-matmul.py \
	bench/torch-infer-cuda.py \
	bench/vulkan-ops.sh bench/vulkan-gemv.sh bench/vulkan-infer.sh bench/vulkan-typed-matmul.sh \
	bench/torch-vulkan-ops.py bench/torch-infer-vulkan.py

# the cost of rayo_open + rayo_close with every plugin against the CPU plugins only
noinst_PROGRAMS += bench/open-close
bench_open_close_SOURCES = bench/open-close.c
bench_open_close_LDADD = core/librayo.la

# relaxed gemv from a constant buffer against a plain one (a backend's prepared weights)
noinst_PROGRAMS += bench/constant-gemv
bench_constant_gemv_SOURCES = bench/constant-gemv.c
bench_constant_gemv_LDADD = core/librayo.la

if BUILD_CUDA
# the cuda backend through the public API: matmul in every precision, bandwidth-bound ops,
# small and skinny shapes (bench/cuda-matmul.sh, bench/gpu-run.sh)
noinst_PROGRAMS += bench/cuda-bench
bench_cuda_bench_SOURCES = bench/cuda-bench.c
bench_cuda_bench_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
bench_cuda_bench_LDADD = core/librayo.la $(PTHREAD_LIBS) -lm
# the inference kernels (gemv in every weight dtype, attention) against read bandwidth
noinst_PROGRAMS += bench/cuda-bench-infer
bench_cuda_bench_infer_SOURCES = bench/cuda-bench-infer.c bench/dtype-list.h
bench_cuda_bench_infer_LDADD = core/librayo.la -lm
endif

if BUILD_VULKAN
# the vulkan backend through the public API (bench/vulkan-ops.sh, bench/gpu-run.sh)
noinst_PROGRAMS += bench/vk-bench
bench_vk_bench_SOURCES = bench/vk-bench.c bench/dtype-list.h
bench_vk_bench_LDADD = core/librayo.la -lm
endif

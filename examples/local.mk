# SPDX-License-Identifier: MIT
# examples/: programs on the public API.  Built and run by `make check`.
noinst_PROGRAMS += examples/softmax-matmul
TESTS += examples/softmax-matmul
examples_softmax_matmul_SOURCES = examples/softmax-matmul.c
examples_softmax_matmul_LDADD = core/librayo.la -lm
noinst_PROGRAMS += examples/quantized-gemv
TESTS += examples/quantized-gemv
examples_quantized_gemv_SOURCES = examples/quantized-gemv.c
examples_quantized_gemv_LDADD = core/librayo.la -lm
include examples/plugin-template/local.mk
include examples/llama/local.mk

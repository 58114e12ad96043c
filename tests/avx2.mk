# SPDX-License-Identifier: MIT
# tests for the avx2 backend (built only where the backend is).
if BUILD_AVX2
# Accuracy of exp/log/tanh/sigmoid/gelu... over the float range, NaN/Inf as scalar.
TESTS += tests/test-avx2-math
check_PROGRAMS += tests/test-avx2-math
tests_test_avx2_math_SOURCES = tests/test-avx2-math.c tests/testutil.h
tests_test_avx2_math_LDADD = core/librayo.la -lm

# Refusal through the CPU-feature mask (RAYO_CPU_DISABLE), dispatch order flips.
TESTS += tests/test-avx2-dispatch
check_PROGRAMS += tests/test-avx2-dispatch
tests_test_avx2_dispatch_SOURCES = tests/test-avx2-dispatch.c tests/testutil.h
tests_test_avx2_dispatch_LDADD = core/librayo.la -lm

# sgemm with tiny forced blocks (every edge crossed), 1-3 threads, gemv paths.
TESTS += tests/test-avx2-gemm
check_PROGRAMS += tests/test-avx2-gemm
tests_test_avx2_gemm_SOURCES = tests/test-avx2-gemm.c tests/testutil.h
tests_test_avx2_gemm_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_avx2_gemm_LDADD = tools/conform/libconform.la core/librayo.la -lm

# Conformance of the vector ops with streaming stores forced (a low threshold).
TESTS += tests/test-avx2-stream
check_PROGRAMS += tests/test-avx2-stream
tests_test_avx2_stream_SOURCES = tests/test-avx2-stream.c tests/testutil.h
tests_test_avx2_stream_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_avx2_stream_LDADD = tools/conform/libconform.la core/librayo.la -lm

# convert on avx2 and avx512, bit for bit rayo-dtype.h: every f16/bf16
# pattern, rounding edges, quantizer edge blocks, random block bytes.
TESTS += tests/test-x86-convert
check_PROGRAMS += tests/test-x86-convert
tests_test_x86_convert_SOURCES = tests/test-x86-convert.c tests/testutil.h tests/test-rng.h core/rayo-dtype.h
tests_test_x86_convert_LDADD = core/librayo.la -lm

# Half and quantized weights on avx2 and avx512 where rayo-conform's shapes
# do not reach: matmul over several dequantized panels, strided; relaxed
# gemv's fallback to the strict path for x it cannot round.
TESTS += tests/test-x86-typed
check_PROGRAMS += tests/test-x86-typed
tests_test_x86_typed_SOURCES = tests/test-x86-typed.c tests/testutil.h
tests_test_x86_typed_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_x86_typed_LDADD = tools/conform/libconform.la core/librayo.la -lm

# The relaxed int8 gemv with AVX-VNNI and without (vnni = off): the same
# floats bit for bit, and within the relaxed contract; then rayo-conform on
# gemv Q8_0, Q4_0 and Q6_K with vnni = off (test-conform.sh checks the
# default form).  Both SKIP where the CPU lacks AVX-VNNI.
TESTS += tests/test-avx2-vnni
check_PROGRAMS += tests/test-avx2-vnni
tests_test_avx2_vnni_SOURCES = tests/test-avx2-vnni.c tests/testutil.h
tests_test_avx2_vnni_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_avx2_vnni_LDADD = tools/conform/libconform.la core/librayo.la -lm
dist_noinst_SCRIPTS += tests/test-avx2-vnni-off.sh
TESTS += tests/test-avx2-vnni-off.sh

# Per-context settings of avx2 and avx512: two contexts open at once with
# different stream_min_bytes each stream (or not) by their own value.
TESTS += tests/test-x86-settings
check_PROGRAMS += tests/test-x86-settings
tests_test_x86_settings_SOURCES = tests/test-x86-settings.c tests/testutil.h
tests_test_x86_settings_LDADD = core/librayo.la -lm

# The integer matmul of quantized weights at relaxed precision on avx2 and avx512:
# odd row and column counts around its tiles, strides, and where it must stand aside.
TESTS += tests/test-x86-qmatmul
check_PROGRAMS += tests/test-x86-qmatmul
tests_test_x86_qmatmul_SOURCES = tests/test-x86-qmatmul.c tests/testutil.h
tests_test_x86_qmatmul_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_x86_qmatmul_LDADD = tools/conform/libconform.la core/librayo.la -lm
endif

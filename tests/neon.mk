# SPDX-License-Identifier: MIT
# tests for the neon backend (built only where the backend is: aarch64
# natively, or cross-built and run under qemu by tests/cross-aarch64.sh).
if BUILD_NEON
# Loaded and preferred over scalar; refused (reason: asimd) when the CPU mask
# hides ASIMD; NaN/Inf where scalar has them; matmul over every tile edge.
TESTS += tests/test-neon
check_PROGRAMS += tests/test-neon
tests_test_neon_SOURCES = tests/test-neon.c tests/testutil.h
tests_test_neon_LDADD = core/librayo.la -lm

# Relaxed Q8_0 and Q4_0 gemv: SDOT within the relaxed contract where the CPU
# has dotprod, the float kernels (strict's bits) where it has not.
TESTS += tests/test-neon-sdot
check_PROGRAMS += tests/test-neon-sdot
tests_test_neon_sdot_SOURCES = tests/test-neon-sdot.c tests/testutil.h
tests_test_neon_sdot_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_neon_sdot_LDADD = tools/conform/libconform.la core/librayo.la -lm

# rayo-info shows neon before scalar, and the refusal with RAYO_CPU_DISABLE.
TESTS += tests/test-neon-info.sh
# rayo-conform on the neon plugin file.
TESTS += tests/test-neon-conform.sh
endif
dist_noinst_SCRIPTS += tests/test-neon-info.sh tests/test-neon-conform.sh \
	tests/qemu-wrap.sh tests/cross-aarch64.sh

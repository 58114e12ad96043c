# tests/: everything here runs in `make check`.  Backend-specific tests
# live in their own fragments.
include tests/conform.mk
include tests/avx2.mk
include tests/neon.mk
include tests/vulkan.mk
include tests/cuda.mk
include tests/wasm.mk

# The core's own tests.
include tests/plugins/local.mk
EXTRA_DIST += tests/testutil.h
TESTS += tests/test-loader
check_PROGRAMS += tests/test-loader
tests_test_loader_SOURCES = tests/test-loader.c tests/testutil.h
tests_test_loader_CPPFLAGS = $(AM_CPPFLAGS) -DFAKE_DIR='"$(abs_top_builddir)/tests/plugins/.libs"'
tests_test_loader_LDADD = core/librayo.la

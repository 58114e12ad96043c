# tests/: everything here runs in `make check`.  Backend-specific tests
# live in their own fragments.
include tests/conform.mk
include tests/avx2.mk
include tests/neon.mk
include tests/vulkan.mk
include tests/cuda.mk
include tests/wasm.mk
include tests/infer.mk

# The core's own tests.
include tests/plugins/local.mk
EXTRA_DIST += tests/testutil.h
TESTS += tests/test-loader
check_PROGRAMS += tests/test-loader
tests_test_loader_SOURCES = tests/test-loader.c tests/testutil.h
tests_test_loader_CPPFLAGS = $(AM_CPPFLAGS) -DFAKE_DIR='"$(abs_top_builddir)/tests/plugins/.libs"'
tests_test_loader_LDADD = core/librayo.la

TESTS += tests/test-config
check_PROGRAMS += tests/test-config
tests_test_config_SOURCES = tests/test-config.c tests/testutil.h
tests_test_config_LDADD = core/librayo.la

TESTS += tests/test-api
check_PROGRAMS += tests/test-api
tests_test_api_SOURCES = tests/test-api.c tests/testutil.h
tests_test_api_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_api_LDADD = core/librayo.la $(PTHREAD_LIBS) -lm

# The plugin template (examples/plugin-template) conforms.
dist_noinst_SCRIPTS += tests/test-template.sh
TESTS += tests/test-template.sh

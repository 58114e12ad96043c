# SPDX-License-Identifier: MIT
# tests/: everything here runs in `make check`.  Backend-specific tests
# live in their own fragments.
include tests/conform.mk
include tests/tools.mk
include tests/avx2.mk
include tests/avx512.mk
include tests/neon.mk
include tests/vulkan.mk
include tests/cuda.mk
include tests/wasm.mk
include tests/infer.mk
include tests/llama.mk

# The core's own tests.
include tests/plugins/local.mk
include tests/abi/local.mk
EXTRA_DIST += tests/testutil.h tests/README.md
TESTS += tests/test-loader
check_PROGRAMS += tests/test-loader
tests_test_loader_SOURCES = tests/test-loader.c tests/testutil.h
tests_test_loader_CPPFLAGS = $(AM_CPPFLAGS) -DFAKE_DIR='"$(abs_top_builddir)/tests/plugins/.libs"'
tests_test_loader_LDADD = core/librayo.la

TESTS += tests/test-config
check_PROGRAMS += tests/test-config
tests_test_config_SOURCES = tests/test-config.c tests/testutil.h
tests_test_config_LDADD = core/librayo.la

# Mistakes in the configuration that need the loader's answer: backend
# names (with a close name suggested), a plugin's unknown keys, missing
# plugin folders; each said once, and counted against its file.
TESTS += tests/test-config-names
check_PROGRAMS += tests/test-config-names
tests_test_config_names_SOURCES = tests/test-config-names.c tests/testutil.h
tests_test_config_names_CPPFLAGS = $(AM_CPPFLAGS) -DFAKE_DIR='"$(abs_top_builddir)/tests/plugins/.libs"'
tests_test_config_names_LDADD = core/librayo.la

TESTS += tests/test-api
check_PROGRAMS += tests/test-api
tests_test_api_SOURCES = tests/test-api.c tests/testutil.h
tests_test_api_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_api_LDADD = core/librayo.la $(PTHREAD_LIBS) -lm

# A batch recorded once and replayed at a moving step, on every backend
# (re-recorded for those that cannot replay), against one-by-one calls.
TESTS += tests/test-batch-replay
check_PROGRAMS += tests/test-batch-replay
tests_test_batch_replay_SOURCES = tests/test-batch-replay.c tests/testutil.h
tests_test_batch_replay_LDADD = core/librayo.la -lm

# Constant buffers: their refusals, and a CPU backend's kept weights equal
# to plain ones bit for bit, also after a buffer's memory is reused.
TESTS += tests/test-constant-buffer
check_PROGRAMS += tests/test-constant-buffer
tests_test_constant_buffer_SOURCES = tests/test-constant-buffer.c tests/testutil.h
tests_test_constant_buffer_LDADD = core/librayo.la -lm

# Bad plugin files, lying descriptors, bad config files, fork, handles after
# destroy and close: a clear reason each, and the process alive.
TESTS += tests/test-hardening
check_PROGRAMS += tests/test-hardening
tests_test_hardening_SOURCES = tests/test-hardening.c tests/testutil.h
tests_test_hardening_CPPFLAGS = $(AM_CPPFLAGS) -DFAKE_DIR='"$(abs_top_builddir)/tests/plugins/.libs"' \
	-DSCALAR_DIR='"$(abs_top_builddir)/plugins/scalar/.libs"'
tests_test_hardening_LDADD = core/librayo.la

# The plugin template (examples/plugin-template) conforms.
dist_noinst_SCRIPTS += tests/test-template.sh
TESTS += tests/test-template.sh

# rayo-info: where each setting came from; --version of every tool.
dist_noinst_SCRIPTS += tests/test-info-origin.sh
TESTS += tests/test-info-origin.sh

# The local plugin directory follows --prefix (runs configure only).
dist_noinst_SCRIPTS += tests/test-local-plugindir.sh
TESTS += tests/test-local-plugindir.sh

# make install by root into the system refreshes ld.so's cache.
dist_noinst_SCRIPTS += tests/test-install-hook.sh
TESTS += tests/test-install-hook.sh

# A pointer not aligned to its element type is refused clearly.
TESTS += tests/test-alignment
check_PROGRAMS += tests/test-alignment
tests_test_alignment_SOURCES = tests/test-alignment.c tests/testutil.h
tests_test_alignment_LDADD = core/librayo.la

# A device plugin starts at its first use, not at rayo_open (vulkan; SKIP
# without it).
TESTS += tests/test-lazy-init
check_PROGRAMS += tests/test-lazy-init
tests_test_lazy_init_SOURCES = tests/test-lazy-init.c tests/testutil.h
tests_test_lazy_init_LDADD = core/librayo.la

# rayo-info --check, --json warnings, --explain of a chain, RAYO_LOG=debug.
dist_noinst_SCRIPTS += tests/test-info-check.sh
TESTS += tests/test-info-check.sh

# rayo-calibrate: no GPU thresholds without a GPU; with the fakegpu test
# plugin, a drop-in that rayo-info --explain cites.
dist_noinst_SCRIPTS += tests/test-calibrate.sh
TESTS += tests/test-calibrate.sh

# Fuzz targets and their seeds (run by tests/fuzz/run.sh, not by make check).
EXTRA_DIST += tests/fuzz/fuzz-config.c tests/fuzz/fuzz-plugin.c tests/fuzz/run.sh \
	tests/fuzz/seeds-config/bad-values.conf tests/fuzz/seeds-config/bom.conf \
	tests/fuzz/seeds-config/indented.conf tests/fuzz/seeds-config/long-comment.conf \
	tests/fuzz/seeds-config/malformed.conf tests/fuzz/seeds-config/paths.conf \
	tests/fuzz/seeds-config/rayo.conf

# The thread pool on its own (core/pool.c built into the test).
TESTS += tests/test-pool
check_PROGRAMS += tests/test-pool
tests_test_pool_SOURCES = tests/test-pool.c core/pool.c
tests_test_pool_CPPFLAGS = $(AM_CPPFLAGS) -DRAYO_BUILDING_CORE
tests_test_pool_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_pool_LDADD = $(PTHREAD_LIBS)

# Many threads on one context (also the TSan stage of tests/sanitize.sh).
TESTS += tests/test-stress
check_PROGRAMS += tests/test-stress
tests_test_stress_SOURCES = tests/test-stress.c tests/testutil.h
tests_test_stress_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_stress_LDADD = core/librayo.la $(PTHREAD_LIBS)
EXTRA_DIST += tests/sanitize.sh

# The op prototypes written out in rayo.h match rayo-ops.h (a compile-time
# check: a mismatch fails the build of this test).
TESTS += tests/test-prototypes
check_PROGRAMS += tests/test-prototypes
tests_test_prototypes_SOURCES = tests/test-prototypes.c
tests_test_prototypes_LDADD = core/librayo.la

# The dtype functions librayo exports (Q4_K/Q6_K quantizers, row conversions).
TESTS += tests/test-dtype-lib
check_PROGRAMS += tests/test-dtype-lib
tests_test_dtype_lib_SOURCES = tests/test-dtype-lib.c tests/testutil.h tests/test-rng.h
tests_test_dtype_lib_LDADD = core/librayo.la -lm

# librayo exports exactly the public API, with symbol version RAYO_1.0.
dist_noinst_SCRIPTS += tests/test-exports.sh
TESTS += tests/test-exports.sh

# The Python package (python/) under pytest; SKIPs without numpy and pytest.
dist_noinst_SCRIPTS += tests/test-python.sh
TESTS += tests/test-python.sh
EXTRA_DIST += python/rayo/__init__.py python/rayo/__main__.py python/rayo/_lib.py \
	python/rayo/context.py python/rayo/device.py python/rayo/dtypes.py python/rayo/ops.py \
	python/tests/conftest.py python/tests/test_context.py python/tests/test_dtypes.py \
	python/tests/test_ops.py python/pyproject.toml

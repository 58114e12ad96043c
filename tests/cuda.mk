# SPDX-License-Identifier: MIT
# tests for the cuda backend.
#  test-cuda-ptxas: every generated PTX module assembled by ptxas for sm_80
#                   and sm_90 (SKIP when ptxas is absent).
#  test-ptx-golden: the SHA-256 of every module for every target, generated
#                   and as embedded in the plugin, equals tests/ptx-golden.sha256
#                   (`make ptx-golden-update` rewrites it: see the script).
#  test-cuda:       the plugin through its descriptor: probe reason, kernels
#                   judged by the conformance engine, batches, staging reuse,
#                   failure paths (SKIP where no driver or device exists).
#  test-cuda-conform.sh: rayo-conform on the cuda plugin (SKIP likewise).
#  test-cuda-decls: rayo's own Driver API declarations agree with the
#                   toolkit's cuda.h (SKIP where there is no cuda.h).
EXTRA_DIST += tests/test-cuda-ptxas.sh tests/test-ptx-golden.sh tests/ptx-golden.sha256
dist_noinst_SCRIPTS += tests/test-cuda-conform.sh

if BUILD_CUDA
# Both scripts get the build's paths from a small generated wrapper.
TESTS += tests/test-cuda-ptxas tests/test-ptx-golden
CLEANFILES += tests/test-cuda-ptxas tests/test-ptx-golden
tests/test-cuda-ptxas tests/test-ptx-golden: $(srcdir)/tests/test-cuda-ptxas.sh \
		$(srcdir)/tests/test-ptx-golden.sh ptx/gen-ptx$(BUILD_EXEEXT) Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && { \
	  echo '#!/bin/sh'; \
	  echo "PTXAS='$(PTXAS)'; export PTXAS"; \
	  echo "GEN_PTX='$(abs_top_builddir)/ptx/gen-ptx$(BUILD_EXEEXT)'; export GEN_PTX"; \
	  echo "PTX_DUMP='$(abs_top_builddir)/tests/ptx-dump$(EXEEXT)'; export PTX_DUMP"; \
	  echo "GOLDEN='$(abs_top_srcdir)/tests/ptx-golden.sha256'; export GOLDEN"; \
	  echo "exec $(SHELL) '$(abs_top_srcdir)/$@.sh' \"\$$@\""; \
	} > $@ && chmod +x $@
# The embedded PTX, written out as the plugin hands it to the driver.
check_PROGRAMS += tests/ptx-dump
tests_ptx_dump_SOURCES = tests/ptx-dump.c
nodist_tests_ptx_dump_SOURCES = plugins/cuda/cuda-ptx.c
tests_ptx_dump_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/cuda
# Rewrites the golden hash list after an intended change of the PTX.
ptx-golden-update: tests/test-ptx-golden tests/ptx-dump$(EXEEXT)
	tests/test-ptx-golden --update

check_PROGRAMS += tests/test-cuda
tests_test_cuda_SOURCES = tests/test-cuda.c
tests_test_cuda_CPPFLAGS = $(CONFORM_CPPFLAGS) \
	-DCUDA_PLUGIN='"$(abs_top_builddir)/plugins/cuda/.libs/rayo-cuda.so"'
tests_test_cuda_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_cuda_LDADD = tools/conform/libconform.la core/librayo.la $(PTHREAD_LIBS) -lm
TESTS += tests/test-cuda tests/test-cuda-conform.sh

check_PROGRAMS += tests/test-cuda-decls
TESTS += tests/test-cuda-decls
tests_test_cuda_decls_SOURCES = tests/test-cuda-decls.c tests/cuda-decls-own.c
tests_test_cuda_decls_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/plugins/cuda
endif
if !BUILD_CUDA
ptx-golden-update:
	@echo "ptx-golden-update: the cuda backend is not built here" >&2; exit 1
endif
.PHONY: ptx-golden-update

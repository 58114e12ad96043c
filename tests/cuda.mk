# tests for the cuda backend.
#  test-cuda-ptxas: every generated PTX module assembled by ptxas for sm_80
#                   and sm_90 (SKIP when ptxas is absent).
#  test-cuda:       the plugin through its descriptor: probe reason, kernels
#                   against float64 references, batches, staging reuse,
#                   failure paths (SKIP where no driver or device exists).
#  test-cuda-conform.sh: rayo-conform on the cuda plugin (SKIP likewise).
#  test-cuda-decls: rayo's own Driver API declarations agree with the
#                   toolkit's cuda.h (SKIP where there is no cuda.h).
EXTRA_DIST += tests/test-cuda-ptxas.sh
dist_noinst_SCRIPTS += tests/test-cuda-conform.sh

if BUILD_CUDA
TESTS += tests/test-cuda-ptxas
CLEANFILES += tests/test-cuda-ptxas
tests/test-cuda-ptxas: $(srcdir)/tests/test-cuda-ptxas.sh ptx/gen-ptx$(BUILD_EXEEXT) Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && { \
	  echo '#!/bin/sh'; \
	  echo "PTXAS='$(PTXAS)' GEN_PTX='$(abs_top_builddir)/ptx/gen-ptx$(BUILD_EXEEXT)'; export PTXAS GEN_PTX"; \
	  echo "exec $(SHELL) '$(abs_top_srcdir)/tests/test-cuda-ptxas.sh' \"\$$@\""; \
	} > $@ && chmod +x $@

check_PROGRAMS += tests/test-cuda
tests_test_cuda_SOURCES = tests/test-cuda.c
tests_test_cuda_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCUDA_PLUGIN='"$(abs_top_builddir)/plugins/cuda/.libs/rayo-cuda.so"'
tests_test_cuda_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_cuda_LDADD = $(PTHREAD_LIBS) -lm
TESTS += tests/test-cuda tests/test-cuda-conform.sh

check_PROGRAMS += tests/test-cuda-decls
TESTS += tests/test-cuda-decls
tests_test_cuda_decls_SOURCES = tests/test-cuda-decls.c tests/cuda-decls-own.c
tests_test_cuda_decls_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/plugins/cuda
endif

# SPDX-License-Identifier: MIT
# plugins/cuda: the CUDA backend.  Its kernels are PTX emitted by a generator
# written in C (ptx/, built by ptx/local.mk), run at build time; the PTX is embedded in the
# plugin as C strings and JIT-compiled by the driver at run time: no nvcc.
# cuda.h (or, without a toolkit, cuda-driver-api.h) gives the types only;
# libcuda.so.1 is dlopened at run time.

EXTRA_DIST += plugins/cuda/50-cuda.conf doc/benchmarks-cuda.md plugins/cuda/embed-cubin.sh

if BUILD_CUDA
plugin_LTLIBRARIES += plugins/cuda/rayo-cuda.la
plugins_cuda_rayo_cuda_la_SOURCES = \
	plugins/cuda/cuda-internal.h plugins/cuda/cuda-driver-api.h plugins/cuda/cuda-ptx.h \
	plugins/cuda/cuda-driver.c plugins/cuda/cuda-plugin.c plugins/cuda/cuda-launch.c \
	plugins/cuda/cuda-host.c plugins/cuda/cuda-memory.c plugins/cuda/cuda-infer.c \
	plugins/cuda/cuda-typed-matmul.c plugins/cuda/cuda-matmul-small.c plugins/cuda/cuda-wgmma.c \
	plugins/cuda/cuda-mma16.c plugins/cuda/cuda-profile.c
nodist_plugins_cuda_rayo_cuda_la_SOURCES = plugins/cuda/cuda-ptx.c plugins/cuda/cuda-cubin.c
plugins_cuda_rayo_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/plugins/cuda
plugins_cuda_rayo_cuda_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS) -fvisibility=hidden
plugins_cuda_rayo_cuda_la_LDFLAGS = $(RAYO_MODULE_FLAGS)
plugins_cuda_rayo_cuda_la_LIBADD = $(PTHREAD_LIBS) -lm
confd_DATA += plugins/cuda/50-cuda.conf

# Every PTX module for every target, as C strings.
BUILT_SOURCES += plugins/cuda/cuda-ptx.c
CLEANFILES += plugins/cuda/cuda-ptx.c
plugins/cuda/cuda-ptx.c: ptx/gen-ptx$(BUILD_EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) plugins/cuda && ptx/gen-ptx$(BUILD_EXEEXT) --c-source $@

# sm_90 machine code of every module (--enable-cuda-cubin; else an empty
# table): no JIT at a module's first use on H100 / H200.
BUILT_SOURCES += plugins/cuda/cuda-cubin.c
CLEANFILES += plugins/cuda/cuda-cubin.c
if CUDA_CUBIN
CUBIN_PTXAS = $(PTXAS)
endif
plugins/cuda/cuda-cubin.c: ptx/gen-ptx$(BUILD_EXEEXT) $(srcdir)/plugins/cuda/embed-cubin.sh Makefile
	$(AM_V_GEN)$(MKDIR_P) plugins/cuda && \
	  $(SHELL) $(srcdir)/plugins/cuda/embed-cubin.sh ptx/gen-ptx$(BUILD_EXEEXT) '$(CUBIN_PTXAS)' $@

# Host-memory calls against the PCIe link, measured through the plugin's own
# driver loader (cuda-driver.c) in the same run: it links plugin internals,
# so it lives here; the benchmarks through the public API are in bench/.
noinst_PROGRAMS += plugins/cuda/cuda-host-bench
plugins_cuda_cuda_host_bench_SOURCES = plugins/cuda/cuda-host-bench.c plugins/cuda/cuda-driver.c
plugins_cuda_cuda_host_bench_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/plugins/cuda
plugins_cuda_cuda_host_bench_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
plugins_cuda_cuda_host_bench_LDADD = core/librayo.la $(PTHREAD_LIBS) -lm
endif

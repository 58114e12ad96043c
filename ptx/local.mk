# SPDX-License-Identifier: MIT
# ptx/: the PTX generator of the cuda backend, a C program run at build time
# (ptx/gen-ptx.h tells which file holds what).  plugins/cuda/local.mk embeds
# its output in the plugin; tests/cuda.mk checks it (ptxas, golden hashes).
GEN_PTX_C = ptx/gen-ptx.c ptx/emit.c ptx/math.c ptx/block-reduce.c \
	ptx/elementwise.c ptx/reduce.c ptx/rows.c ptx/matrix.c ptx/gemv.c \
	ptx/transpose.c ptx/sgemm.c ptx/tf32.c ptx/wgmma.c ptx/infer-gemv.c \
	ptx/infer-gemv8.c ptx/infer-ops.c ptx/infer-prompt.c ptx/attention.c ptx/attention-prefill.c ptx/attn-cluster.c ptx/splitk.c \
	ptx/product-redo.c
EXTRA_DIST += $(GEN_PTX_C) ptx/gen-ptx.h ptx/fit-erfc.py

if BUILD_CUDA
# Compiled for the build machine (CC_FOR_BUILD), which is not the host in a
# cross build; from the source folder, so the file list needs no prefix.
CLEANFILES += ptx/gen-ptx$(BUILD_EXEEXT)
# The op list gives the elementwise kernels' ids, names and signatures.
ptx/gen-ptx$(BUILD_EXEEXT): $(GEN_PTX_C) ptx/gen-ptx.h plugins/cuda/cuda-ptx.h core/rayo.h core/rayo-ops.h \
		core/rayo-dtype.h
	$(AM_V_CC)$(MKDIR_P) ptx && out=`pwd`/$@ && cd $(srcdir) && \
	  $(CC_FOR_BUILD) -std=c11 $(CPPFLAGS_FOR_BUILD) $(CFLAGS_FOR_BUILD) $(LDFLAGS_FOR_BUILD) \
	  -o "$$out" $(GEN_PTX_C)
endif

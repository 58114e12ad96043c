# SPDX-License-Identifier: MIT
# Data formats (core/rayo-dtype.h) and the float64 references of the
# inference ops (tools/conform/ref-infer.c): their own tests until the ops
# land in the op list and the conformance engine.
TESTS += tests/test-dtype
check_PROGRAMS += tests/test-dtype
tests_test_dtype_SOURCES = tests/test-dtype.c tests/testutil.h tests/test-rng.h core/rayo-dtype.h
tests_test_dtype_LDADD = -lm

TESTS += tests/test-ref-infer
check_PROGRAMS += tests/test-ref-infer
tests_test_ref_infer_SOURCES = tests/test-ref-infer.c tests/testutil.h tests/test-rng.h core/rayo-dtype.h \
	tools/conform/ref-infer.c tools/conform/ref-infer.h
tests_test_ref_infer_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools/conform
tests_test_ref_infer_LDADD = -lm

# The inference ops through the dispatch chain: every combination ends on a
# backend that conforms (the other backends pass the calls on).
TESTS += tests/test-infer-chain
check_PROGRAMS += tests/test-infer-chain
tests_test_infer_chain_SOURCES = tests/test-infer-chain.c
tests_test_infer_chain_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_infer_chain_LDADD = tools/conform/libconform.la core/librayo.la -lm

# The span of rope and attention operands is their true extent (head-major
# KV views, head strides with ldx = 0), and vulkan copies no more than that
# from host memory or asks no more of device buffers.
TESTS += tests/test-operand-span
check_PROGRAMS += tests/test-operand-span
tests_test_operand_span_SOURCES = tests/test-operand-span.c tests/testutil.h
tests_test_operand_span_LDADD = core/librayo.la -lm

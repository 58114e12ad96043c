# SPDX-License-Identifier: MIT
# tests for the vulkan backend.
#  test-vulkan:          device buffers and batches (every signature class,
#                        unaligned operands, multi-pass reductions), host
#                        calls from several threads, the pipeline cache, a
#                        planted validation error caught; validation on.
#                        Every result is judged by the conformance engine.
#  test-vulkan-infer:    the inference ops in batches: operands at odd byte
#                        offsets between guard bytes, strides, shared f16
#                        end words, rope in place, get_rows' bad index;
#                        judged against the scalar backend.
#  test-vulkan-copies:   the relaxed prompt products' kept f16 copies of
#                        weights: a copy served bit for bit, a weight
#                        written by buffer_write or on the device followed
#                        (new batches and replays), weight_copies = auto, no
#                        and a small limit alike; against float64.  SKIP
#                        where the device has no f16 cooperative matrix.
#  test-vulkan-conform.sh: rayo-conform on the plugin, all sizes, with the
#                        validation layer; zero validation messages required
#                        (test-conform.sh leaves vulkan to it).
#  test-vulkan-probe.sh: a missing loader and a missing driver give the
#                        backend "unavailable" with the reason.
#  test-vulkan-fuse.sh:  a replayed decode step recorded ahead, fused or
#                        not, gives the same logits bit for bit.
# Where no Vulkan device exists (no libvulkan.so.1, no driver), test-vulkan
# and test-vulkan-conform.sh SKIP with the reason.  CI needs the packages
# libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers.
dist_noinst_SCRIPTS += tests/test-vulkan-conform.sh tests/test-vulkan-probe.sh tests/test-vulkan-fuse.sh

if BUILD_VULKAN
check_PROGRAMS += tests/test-vulkan
tests_test_vulkan_SOURCES = tests/test-vulkan.c tests/testutil.h
tests_test_vulkan_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_vulkan_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_vulkan_LDADD = tools/conform/libconform.la core/librayo.la $(PTHREAD_LIBS) -lm
check_PROGRAMS += tests/test-vulkan-infer
tests_test_vulkan_infer_SOURCES = tests/test-vulkan-infer.c tests/testutil.h
tests_test_vulkan_infer_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_vulkan_infer_LDADD = tools/conform/libconform.la core/librayo.la -lm
TESTS += tests/test-vulkan tests/test-vulkan-conform.sh tests/test-vulkan-probe.sh
check_PROGRAMS += tests/test-vulkan-copies
tests_test_vulkan_copies_SOURCES = tests/test-vulkan-copies.c tests/testutil.h
tests_test_vulkan_copies_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_vulkan_copies_LDADD = tools/conform/libconform.la core/librayo.la -lm
TESTS += tests/test-vulkan-infer tests/test-vulkan-fuse.sh tests/test-vulkan-copies
endif

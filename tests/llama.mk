# SPDX-License-Identifier: MIT
# examples/llama: the GGUF reader, quantizers and tokenizer (unit tests), and
# greedy decoding of generated models on every loaded backend.
TESTS += tests/test-llama-gguf
check_PROGRAMS += tests/test-llama-gguf
tests_test_llama_gguf_SOURCES = tests/test-llama-gguf.c tests/testutil.h tests/test-rng.h \
	examples/llama/gguf-write.c examples/llama/tokenizer.c \
	$(LLAMA_READER)
tests_test_llama_gguf_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/llama
tests_test_llama_gguf_LDADD = core/librayo.la -lm

dist_noinst_SCRIPTS += tests/test-llama.sh
TESTS += tests/test-llama.sh

# The reader's fuzz target and seeds (run by tests/fuzz/run.sh, not by make check).
EXTRA_DIST += tests/fuzz/fuzz-gguf.c tests/fuzz/seeds-gguf/small-q8_0.gguf \
	tests/fuzz/seeds-gguf/small-f16-tied.gguf tests/fuzz/seeds-gguf/cut-header.gguf

# The llama.cpp comparison (needs node-llama-cpp; run by hand, SKIPs without it).
EXTRA_DIST += tests/llama-cpp-compare.sh tests/llama-cpp-compare.mjs

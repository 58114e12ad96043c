# SPDX-License-Identifier: MIT
# examples/llama: a Llama-architecture GGUF decoder on rayo's public API, and
# the generator of random-weight GGUF test models.  Tests: tests/llama.mk.
LLAMA_READER = examples/llama/gguf.c examples/llama/gguf.h
noinst_PROGRAMS += examples/llama/rayo-llama examples/llama/gguf-make
examples_llama_rayo_llama_SOURCES = examples/llama/rayo-llama.c examples/llama/model.c \
	examples/llama/model.h examples/llama/lm-ops.c examples/llama/lm-ops.h \
	examples/llama/tokenizer.c examples/llama/tokenizer.h $(LLAMA_READER)
examples_llama_rayo_llama_LDADD = core/librayo.la -lm
examples_llama_gguf_make_SOURCES = examples/llama/gguf-make.c examples/llama/gguf-write.c \
	examples/llama/gguf-write.h examples/llama/gguf.h
examples_llama_gguf_make_LDADD = core/librayo.la -lm
EXTRA_DIST += examples/llama/README.md examples/llama/wasm-build.sh doc/benchmarks-llama.md

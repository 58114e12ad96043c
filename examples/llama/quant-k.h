/* quant-k.h - simple Q4_K and Q6_K quantizers for the test-model generator.
 * core/rayo-dtype.h has the dequantizers of these formats but no
 * quantizers; these write byte-compatible GGUF blocks by a plain min/max
 * rule (llama.cpp's quantizers search for better scales: the blocks differ,
 * the format does not).  n is a multiple of 256. */
#ifndef LLAMA_QUANT_K_H
#define LLAMA_QUANT_K_H

#include <stddef.h>

void quantize_q4_k(const float *x, void *dst, size_t n);
void quantize_q6_k(const float *x, void *dst, size_t n);

#endif

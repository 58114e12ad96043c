/* SPDX-License-Identifier: MIT */
/* guarded-buffer.c - buffers with guard zones around their data, and the
 * check that nothing but the data changed (conform-internal.h). */
#define _POSIX_C_SOURCE 200809L
#include "conform-internal.h"

#include <stdlib.h>
#include <string.h>

#define GUARD_FLOATS 16 /* guard floats on each side of the data */

void conform_set_words(void *dst, size_t count, uint32_t bits)
{
    unsigned char *d = dst;
    for (size_t i = 0; i < count; i++)
        memcpy(d + 4 * i, &bits, 4);
}

int conform_buffer_alloc(buffer *b, size_t count, unsigned misalign)
{
    b->lead = GUARD_FLOATS + misalign;
    b->count = count;
    size_t floats = b->lead + count + GUARD_FLOATS;
    b->bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
    b->mem = aligned_alloc(64, b->bytes);
    b->saved = malloc(b->bytes);
    if (!b->mem || !b->saved)
        return -1;
    conform_set_words(b->mem, b->bytes / 4, GUARD_BITS);
    b->data = (float *)(void *)b->mem + b->lead;
    return 0;
}

void conform_buffer_free(buffer *b)
{
    free(b->mem);
    free(b->saved);
    memset(b, 0, sizeof *b);
}

void conform_buffer_save(buffer *b)
{
    if (b->mem)
        memcpy(b->saved, b->mem, b->bytes);
}

/* First float (index relative to data) that differs from the saved copy,
 * within [from, to) bytes of the allocation; 0 if none. */
int conform_buffer_changed(const buffer *b, size_t from, size_t to, long long *index)
{
    for (size_t i = from; i < to; i += 4)
        if (memcmp(b->mem + i, b->saved + i, 4)) {
            *index = (long long)(i / 4) - (long long)b->lead;
            return 1;
        }
    return 0;
}

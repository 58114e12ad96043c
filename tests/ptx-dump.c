/* SPDX-License-Identifier: MIT */
/* ptx-dump.c - writes every PTX module the cuda plugin embeds, for every
 * target, as DIR/NAME-smXX.ptx: the text the plugin hands to the driver's
 * JIT, made by the same rayo_ptx_text() (cuda-ptx.h) from the same embedded
 * sources.  tests/test-ptx-golden.sh hashes these files. */
#include "cuda-ptx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_module(const char *dir, const rayo_ptx_module *pm, int sm)
{
    size_t size = 0;
    char *text = rayo_ptx_text(pm, sm, &size);
    if (!text) {
        fprintf(stderr, "ptx-dump: out of memory\n");
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-sm%d.ptx", dir, pm->name, sm);
    int rc = 0;
    if (strlen(text) != size) {
        fprintf(stderr, "ptx-dump: %s: size %zu but the text is %zu bytes\n", path, size, strlen(text));
        rc = 1;
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, size, f) != size || fclose(f) != 0) {
        perror(path);
        rc = 1;
    }
    free(text);
    return rc;
}

int main(int argc, char **argv)
{
    static const int targets[] = RAYO_PTX_TARGETS;
    if (argc != 2) {
        fprintf(stderr, "usage: ptx-dump DIR\n");
        return 2;
    }
    for (unsigned i = 0; i < rayo_cuda_ptx_module_count; i++)
        for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++)
            if (targets[t] >= rayo_cuda_ptx_modules[i].min_sm &&
                (!rayo_cuda_ptx_modules[i].arch_specific || targets[t] == rayo_cuda_ptx_modules[i].min_sm) &&
                write_module(argv[1], &rayo_cuda_ptx_modules[i], targets[t]))
                return 1;
    return 0;
}

/* ptx-dump.c - writes every PTX module the cuda plugin embeds, for every
 * target, as DIR/NAME-smXX.ptx: the exact text the plugin hands to the
 * driver's JIT.  tests/test-ptx-golden.sh hashes these files. */
#include "cuda-ptx.h"

#include <stdio.h>
#include <string.h>

static int write_module(const char *dir, const rayo_ptx_module *pm)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-sm%d.ptx", dir, pm->name, pm->sm);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(pm->ptx, 1, pm->size, f) != pm->size || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    if (strlen(pm->ptx) != pm->size) {
        fprintf(stderr, "ptx-dump: %s: size %zu but the text is %zu bytes\n", path, pm->size, strlen(pm->ptx));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ptx-dump DIR\n");
        return 2;
    }
    for (unsigned i = 0; i < rayo_cuda_ptx_module_count; i++)
        if (write_module(argv[1], &rayo_cuda_ptx_modules[i]))
            return 1;
    return 0;
}

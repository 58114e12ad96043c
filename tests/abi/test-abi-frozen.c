/* SPDX-License-Identifier: MIT */
/* test-abi-frozen.c - the real plugin ABI headers (core/rayo.h,
 * core/rayo-plugin.h) still agree with the frozen 1.0 copy
 * (tests/abi/rayo-plugin-1.0.h): every field of every struct that crosses
 * the boundary at the same offset with the same size, every constant the
 * same value, and every struct at least as large (larger only in a later
 * minor, by appending).  This is what makes the frozen header's plugins
 * and simulated cores stand for real 1.0 ones: change a field of
 * rayo_call, move one in the descriptor or renumber a status, and this
 * fails. */
#include "abi-fact.h"
#include "rayo-plugin.h"
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    int passed = 0, failed = 0;
    for (size_t i = 0; abi_facts_frozen[i].what; i++) {
        const abi_fact *f = &abi_facts_frozen[i], *c = &abi_facts_core[i];
        bool is_struct = strchr(f->what, '.') == NULL && strncmp(f->what, "RAYO_", 5) != 0;
        bool same = is_struct ? c->value >= f->value && (RAYO_PLUGIN_ABI_MINOR > 0 || c->value == f->value)
                              : c->value == f->value && c->size == f->size;
        if (same) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "FAIL %s: 1.0 has %llu (size %llu), the core's header %llu (size %llu)\n", f->what,
                    (unsigned long long)f->value, (unsigned long long)f->size, (unsigned long long)c->value,
                    (unsigned long long)c->size);
        }
    }
    printf("%d facts agree, %d differ\n", passed, failed);
    return failed ? 1 : (passed ? 0 : 99);
}

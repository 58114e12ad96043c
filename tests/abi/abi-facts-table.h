/* SPDX-License-Identifier: MIT */
/* abi-facts-table.h - the facts of abi-facts.h, expanded against the header
 * included before this one, into the table ABI_FACTS_TABLE: included by
 * abi-facts-frozen.c (the frozen 1.0 header) and abi-facts-core.c
 * (core/rayo-plugin.h). */
#include "abi-fact.h"

const abi_fact ABI_FACTS_TABLE[] = {
#define ABI_STRUCT(T) {#T, sizeof(T), 0},
#define ABI_FIELD(T, F) {#T "." #F, offsetof(T, F), sizeof(((T *)0)->F)},
#define ABI_CONST(C) {#C, (uint64_t)(C), 0},
#include "abi-facts.h"
#undef ABI_STRUCT
#undef ABI_FIELD
#undef ABI_CONST
    {NULL, 0, 0},
};

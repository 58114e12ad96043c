/* SPDX-License-Identifier: MIT */
/* abi-fact.h - one fact of the plugin ABI: a struct's size, a field's
 * offset and size, or a constant's value. */
#ifndef ABI_FACT_H
#define ABI_FACT_H
#include <stdint.h>
typedef struct abi_fact {
    const char *what;
    uint64_t value;   /* sizeof, offsetof or the constant */
    uint64_t size;    /* a field's size; 0 otherwise */
} abi_fact;
extern const abi_fact abi_facts_frozen[], abi_facts_core[];
#endif

/* SPDX-License-Identifier: MIT */
/* abi-facts-frozen.c - the facts of the frozen 1.0 header. */
#include "rayo-plugin-1.0.h"
#define ABI_FACTS_TABLE abi_facts_frozen
#include "abi-facts-table.h"

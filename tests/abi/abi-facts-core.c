/* SPDX-License-Identifier: MIT */
/* abi-facts-core.c - the facts of the real headers (core/rayo-plugin.h). */
#include "rayo-plugin.h"
#define ABI_FACTS_TABLE abi_facts_core
#include "abi-facts-table.h"

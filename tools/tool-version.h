/* SPDX-License-Identifier: MIT */
/* tool-version.h - `--version` of rayo's command-line tools: the tool's own
 * version (the headers it was built with) and the librayo it runs with, which
 * can differ after a library upgrade. */
#ifndef RAYO_TOOL_VERSION_H
#define RAYO_TOOL_VERSION_H

#include "rayo.h"
#include <stdio.h>

static inline void print_tool_version(const char *tool)
{
    printf("%s %d.%d.%d (librayo %s)\n", tool, RAYO_VERSION_MAJOR, RAYO_VERSION_MINOR, RAYO_VERSION_PATCH,
           rayo_version());
}

#endif

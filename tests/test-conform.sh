#!/bin/sh
# SPDX-License-Identifier: MIT
# test-conform.sh - runs rayo-conform against every backend the build tree
# loads (plugins/*/.libs), all sizes, and fails on any failure.  Run by
# `make check` from the top build directory.  RAYO_CONFORM_ARGS adds options
# (RAYO_CONFORM_ARGS=--quick make check: a faster run); RAYO_CONFORM_SEED
# replays a run.
builddir=${abs_top_builddir:-$(pwd)}
conform=$builddir/tools/rayo-conform
if [ ! -x "$conform" ]; then
    echo "ERROR: $conform not found: run from the top build directory" >&2
    exit 99
fi

# Only the build tree decides which backends load: no user configuration.
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU

# A fix still pending, so this group is skipped there (reported as skipped,
# never as passed): the x86 relaxed matmul of block weights rounds
# activations past the relaxed contract where they span 1e-8..1e8 or hold
# 1% outliers (avx2: up to 3.2 contract units), until it gets the error
# budget the x86 gemv has.
"$conform" --skip avx2:x-range --skip avx512:x-range $RAYO_CONFORM_ARGS

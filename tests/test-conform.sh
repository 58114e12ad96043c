#!/bin/sh
# SPDX-License-Identifier: MIT
# test-conform.sh - runs rayo-conform against every backend the build tree
# loads (plugins/*/.libs), all sizes, and fails on any failure.  Run by
# `make check` from the top build directory.  RAYO_CONFORM_ARGS adds options
# (RAYO_CONFORM_ARGS=--quick make check: a faster run); RAYO_CONFORM_SEED
# replays a run.  vulkan is left to test-vulkan-conform.sh, which checks it
# with the same options and the validation layer on (in make check the two
# run side by side).  RAYO_CONFORM_COVERED (comma-separated backend names)
# leaves out more backends another test of the same run checks with the same
# options (in CI's --quick runs: test-neon-conform.sh checks neon under
# qemu, test-avx512-conform.sh avx512 under the sanitizers and in
# distcheck).
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
echo "leaving out vulkan: test-vulkan-conform.sh checks it (validation layer on)"
RAYO_DISABLE=vulkan
if [ -n "${RAYO_CONFORM_COVERED:-}" ]; then
    echo "leaving out $RAYO_CONFORM_COVERED: checked by another test of this run"
    RAYO_DISABLE=$RAYO_DISABLE,$RAYO_CONFORM_COVERED
fi
export RAYO_DISABLE

"$conform" $RAYO_CONFORM_ARGS

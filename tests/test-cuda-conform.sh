#!/bin/sh
# SPDX-License-Identifier: MIT
# test-cuda-conform.sh - rayo-conform on the cuda plugin of this build tree
# (every op against the float64 reference and its accuracy contract).
# Skipped, with the probe's reason, where no NVIDIA driver or usable GPU
# exists.  RAYO_CONFORM_ARGS replaces the default --quick.
builddir=${abs_top_builddir:-$(pwd)}
plugin=$builddir/plugins/cuda/.libs/rayo-cuda.so
conform=$builddir/tools/rayo-conform
for f in "$plugin" "$conform" "$builddir/tests/test-cuda"; do
    [ -e "$f" ] || { echo "ERROR: $f not built" >&2; exit 99; }
done
probe=$(${RAYO_RUN_WRAPPER:-} "$builddir/tests/test-cuda" --probe 2>&1)
rc=$?
if [ $rc -eq 77 ]; then
    echo "$probe"
    exit 77
fi
[ $rc -eq 0 ] || { echo "$probe"; echo "FAIL: probe"; exit 1; }
echo "$probe"

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp XDG_CACHE_HOME=$tmp/cache
export XDG_CONFIG_HOME XDG_CACHE_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU
# Not exec: the EXIT trap must still remove $tmp.
${RAYO_RUN_WRAPPER:-} "$conform" ${RAYO_CONFORM_ARGS-"--quick"} "$plugin"
exit $?

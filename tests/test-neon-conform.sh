#!/bin/sh
# SPDX-License-Identifier: MIT
# test-neon-conform.sh - rayo-conform on the neon plugin file itself (all
# ops, edge values, unaligned pointers, guard zones; --quick leaves out the
# largest sizes, which test-conform.sh runs for every loaded backend).
# Cross builds run it under qemu: RAYO_RUN_WRAPPER starts the program.
builddir=${abs_top_builddir:-$(pwd)}
conform=$builddir/tools/rayo-conform
plugin=$builddir/plugins/neon/.libs/rayo-neon.so
[ -e "$conform" ] || { echo "ERROR: $conform not found: run from the top build directory" >&2; exit 99; }
[ -e "$plugin" ] || { echo "SKIP: the neon plugin is not built here"; exit 77; }

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU RAYO_CPU_DISABLE

${RAYO_RUN_WRAPPER:-} "$conform" --quick ${RAYO_CONFORM_ARGS:-} "$plugin" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
if [ "$rc" -ne 0 ]; then
    echo "FAIL: rayo-conform exit status $rc"
    exit 1
fi
# A rejected or unloadable plugin would leave nothing checked: insist on it.
if ! grep -q '^Summary: [0-9]* ops x 1 backend: [0-9]* conform, 0 FAIL' "$tmp/out"; then
    echo "FAIL: not every op of neon was checked and conforms"
    exit 1
fi
# Only convert and get_rows may be missing (they fall through to scalar);
# every f32 op and the decode path (rope, attention, gated units) must be there.
missing=$(sed -n 's/^\([a-z_0-9]*\)  *- *$/\1/p' "$tmp/out" |
          grep -vxE 'convert|get_rows')
if [ -n "$missing" ]; then
    echo "FAIL: neon does not implement:" $missing
    exit 1
fi
echo "ok: neon conforms"

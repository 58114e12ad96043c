#!/bin/sh
# SPDX-License-Identifier: MIT
# test-neon-info.sh - what a user sees: rayo-info lists neon as loaded and
# puts it before scalar in the dispatch chains; with RAYO_CPU_DISABLE=asimd
# (the core's test hook that masks Advanced SIMD in the HWCAP probe result)
# neon is rejected, with a reason that names asimd.  Cross builds run this
# under qemu: RAYO_RUN_WRAPPER (tests/qemu-wrap.sh) starts the program.
builddir=${abs_top_builddir:-$(pwd)}
info=$builddir/tools/rayo-info
[ -e "$info" ] || { echo "ERROR: $info not found: run from the top build directory" >&2; exit 99; }
[ -e "$builddir/plugins/neon/.libs/rayo-neon.so" ] || { echo "SKIP: the neon plugin is not built here"; exit 77; }

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU RAYO_CPU_DISABLE

failed=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
    what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failed=1; fi
}

${RAYO_RUN_WRAPPER:-} "$info" --json >"$tmp/on.json" 2>"$tmp/on.err"
check "rayo-info exits 0" test $? -eq 0
check "neon is loaded" grep -q '"name": "neon", "status": "loaded"' "$tmp/on.json"
check "matmul: neon, then scalar" \
    grep -q '"matmul": \[{"backend": "neon", [^]]*}, {"backend": "scalar"' "$tmp/on.json"
check "add: neon, then scalar" \
    grep -q '"add": \[{"backend": "neon", [^]]*}, {"backend": "scalar"' "$tmp/on.json"
${RAYO_RUN_WRAPPER:-} "$info" >"$tmp/on.txt" 2>&1
check "the table says it too" grep -q '^  matmul *neon > scalar' "$tmp/on.txt"

RAYO_CPU_DISABLE=asimd ${RAYO_RUN_WRAPPER:-} "$info" --json >"$tmp/off.json" 2>"$tmp/off.err"
check "rayo-info exits 0 without asimd" test $? -eq 0
check "neon is rejected without asimd" grep -q '"name": "neon", "status": "rejected"' "$tmp/off.json"
check "the reason names asimd" grep -q '"name": "neon", "status": "rejected".*"reason": "[^"]*asimd' "$tmp/off.json"
check "matmul goes to scalar" grep -q '"matmul": \[{"backend": "scalar"' "$tmp/off.json"

if [ "$failed" -ne 0 ]; then
    echo "---- rayo-info ----"; cat "$tmp/on.txt"
    echo "---- rayo-info --json with RAYO_CPU_DISABLE=asimd ----"; cat "$tmp/off.json" "$tmp/off.err"
fi
exit $failed

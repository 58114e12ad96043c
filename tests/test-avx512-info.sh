#!/bin/sh
# SPDX-License-Identifier: MIT
# test-avx512-info.sh - what a user sees: with RAYO_CPU_DISABLE=avx512f (the
# core's test hook that masks a feature in its cpuid/XGETBV result) the core
# rejects avx512 from its descriptor alone, before any plugin code runs, with
# a reason that names avx512f, and avx2 takes the ops.  Where the CPU has
# AVX-512: avx512 loads and comes before avx2, and [dispatch] order = avx2
# (the README's advice for CPUs that clock down under AVX-512) puts avx2 first.
builddir=${abs_top_builddir:-$(pwd)}
info=$builddir/tools/rayo-info
[ -e "$info" ] || { echo "ERROR: $info not found: run from the top build directory" >&2; exit 99; }
[ -e "$builddir/plugins/avx512/.libs/rayo-avx512.so" ] || { echo "SKIP: the avx512 plugin is not built here"; exit 77; }

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
avx2_loaded() { grep -q '"name": "avx2", "status": "loaded"' "$1"; }

RAYO_CPU_DISABLE=avx512f "$info" --json >"$tmp/off.json" 2>"$tmp/off.err"
check "rayo-info exits 0 without avx512f" test $? -eq 0
check "avx512 is rejected without avx512f" grep -q '"name": "avx512", "status": "rejected"' "$tmp/off.json"
check "the reason names avx512f" \
    grep -q '"name": "avx512", "status": "rejected".*"reason": "[^"]*avx512f' "$tmp/off.json"
check "no op goes to avx512" sh -c "! grep -q '\"backend\": \"avx512\"' '$tmp/off.json'"
if avx2_loaded "$tmp/off.json"; then
    check "matmul goes to avx2" grep -q '"matmul": \[{"backend": "avx2"' "$tmp/off.json"
fi

"$info" --json >"$tmp/on.json" 2>"$tmp/on.err"
if ! grep -q '"name": "avx512", "status": "loaded"' "$tmp/on.json"; then
    echo "SKIP (the rest): avx512 does not load on this CPU/OS:"
    grep -o '"name": "avx512"[^}]*' "$tmp/on.json"
    [ "$failed" -ne 0 ] && { cat "$tmp/off.json" "$tmp/off.err"; exit 1; }
    exit 77
fi
check "matmul: avx512 first" grep -q '"matmul": \[{"backend": "avx512"' "$tmp/on.json"
check "exp: avx512 first" grep -q '"exp": \[{"backend": "avx512"' "$tmp/on.json"
if avx2_loaded "$tmp/on.json"; then
    check "add: avx512, then avx2" grep -q '"add": \[{"backend": "avx512", [^]]*}, {"backend": "avx2"' "$tmp/on.json"
    printf '[dispatch]\norder = avx2\n' >"$tmp/avx2-first.conf"
    RAYO_CONFIG=$tmp/avx2-first.conf "$info" --json >"$tmp/order.json" 2>&1
    check "[dispatch] order = avx2 puts avx2 first" \
        grep -q '"matmul": \[{"backend": "avx2", [^]]*}, {"backend": "avx512"' "$tmp/order.json"
fi

if [ "$failed" -ne 0 ]; then
    echo "---- rayo-info --json ----"; cat "$tmp/on.json" "$tmp/on.err"
    echo "---- rayo-info --json with RAYO_CPU_DISABLE=avx512f ----"; cat "$tmp/off.json" "$tmp/off.err"
fi
exit $failed

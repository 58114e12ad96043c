#!/bin/sh
# SPDX-License-Identifier: MIT
# test-avx512-conform.sh - rayo-conform on the avx512 plugin file (all ops,
# edge values, unaligned pointers, guard zones; --quick leaves out the
# largest sizes, which test-conform.sh runs for every loaded backend), then
# matmul/gemv with tiny sgemm blocks and the vector ops with streaming
# stores forced.  SKIP, with the core's reason, where the CPU or the OS
# lacks AVX-512.
builddir=${abs_top_builddir:-$(pwd)}
conform=$builddir/tools/rayo-conform
info=$builddir/tools/rayo-info
plugin=$builddir/plugins/avx512/.libs/rayo-avx512.so
[ -e "$conform" ] && [ -e "$info" ] || { echo "ERROR: run from the top build directory" >&2; exit 99; }
[ -e "$plugin" ] || { echo "SKIP: the avx512 plugin is not built here"; exit 77; }

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU RAYO_CPU_DISABLE

"$info" --json >"$tmp/info.json" 2>&1 || { cat "$tmp/info.json"; exit 99; }
if ! grep -q '"name": "avx512", "status": "loaded"' "$tmp/info.json"; then
    reason=$(grep -o '"name": "avx512", "status": "[a-z]*"[^}]*"reason": "[^"]*"' "$tmp/info.json" |
             sed 's/.*"reason": "\([^"]*\)"/\1/')
    echo "SKIP: the core does not load avx512 here: ${reason:-not listed}"
    exit 77
fi

failed=0
run() { # run WHAT [CONFIG-TEXT] ARGS...: rayo-conform must pass every op it checks
    what=$1; config=$2; shift 2
    if [ -n "$config" ]; then
        printf '%s\n' "$config" >"$tmp/rayo.conf"
        RAYO_CONFIG=$tmp/rayo.conf "$conform" "$@" "$plugin" >"$tmp/out" 2>&1
    else
        "$conform" "$@" "$plugin" >"$tmp/out" 2>&1
    fi
    rc=$?
    cat "$tmp/out"
    # A rejected or unloadable plugin would leave nothing checked: insist on it.
    # Every op must be implemented, the inference ops included.
    missing=$(grep -E '^[a-z0-9_]+ +- *$' "$tmp/out" | awk '{print $1}' || true)
    if [ "$rc" -ne 0 ] || [ -n "$missing" ] ||
       ! grep -q '^Summary: [0-9]* ops x 1 backend: [0-9]* conform, 0 FAIL' "$tmp/out"; then
        [ -z "$missing" ] || echo "not implemented on avx512: $missing"

        echo "FAIL: $what (rayo-conform exit status $rc)"
        failed=1
    else
        echo "ok: $what"
    fi
}

# x-range: skipped until the x86 relaxed matmul of block weights meets the
# relaxed contract with such activations (see test-conform.sh).
run "every op conforms" "" --quick --skip x-range ${RAYO_CONFORM_ARGS:-}
run "sgemm with 24 x 16 x 64 blocks" "$(printf '[backend.avx512]\nmc = 24\nkc = 16\nnc = 64')" \
    --op matmul,gemv --skip x-range ${RAYO_CONFORM_ARGS:-}
run "vector ops with streaming stores" "$(printf '[backend.avx512]\nstream_min_bytes = 4096')" \
    --quick --op add,div,maximum,scale,relu,clip,exp,gelu,selu,log ${RAYO_CONFORM_ARGS:-}
exit $failed

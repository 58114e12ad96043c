#!/bin/sh
# SPDX-License-Identifier: MIT
# test-avx2-vnni-off.sh - avx2's relaxed int8 gemv (Q8_0, Q4_0, Q6_K) and
# integer matmul (Q8_0, Q4_0, Q4_K, Q6_K) in both of their forms.  Where the
# CPU has AVX-VNNI the plugin uses it by default, and test-conform.sh checks
# that form; here rayo-conform checks those ops and dtypes again with
# `vnni = off`, the AVX2 (maddubs) form that CPUs without AVX-VNNI run.
# SKIP where the CPU lacks AVX-VNNI (the default run of test-conform.sh is
# then the maddubs form, and the VNNI form cannot be checked here) or where
# avx2 does not load.
builddir=${abs_top_builddir:-$(pwd)}
conform=$builddir/tools/rayo-conform
info=$builddir/tools/rayo-info
plugin=$builddir/plugins/avx2/.libs/rayo-avx2.so
[ -e "$conform" ] && [ -e "$info" ] || { echo "ERROR: run from the top build directory" >&2; exit 99; }
[ -e "$plugin" ] || { echo "SKIP: the avx2 plugin is not built here"; exit 77; }

tmp=$(mktemp -d) || exit 99
: >"$tmp/empty.conf"
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU RAYO_CPU_DISABLE

# The plugin's own word, at debug level, on which form the context uses.
form() { # form [CONFIG]: the plugin's line about its relaxed int8 gemv
    RAYO_LOG=debug RAYO_CONFIG=${1:-$tmp/empty.conf} "$info" 2>&1 | grep 'avx2: relaxed int8 gemv'
}
line=$(form)
case $line in
"") echo "SKIP: avx2 does not load here"; exit 77 ;;
*": AVX-VNNI"*) ;;
*"lacks it"*) echo "SKIP: avx2's AVX-VNNI gemv: the CPU lacks AVX-VNNI (test-conform.sh checked the maddubs form)"
    exit 77 ;;
*) echo "FAIL: avx2 did not say which form its gemv uses: $line"; exit 1 ;;
esac
echo "default: $line"

printf '[backend.avx2]\nvnni = off\n' >"$tmp/off.conf"
line=$(form "$tmp/off.conf")
echo "vnni = off: $line"
case $line in
*"vnni = off"*) ;;
*) echo "FAIL: vnni = off did not reach the plugin"; exit 1 ;;
esac

failed=0
for case in gemv:q8_0 gemv:q4_0 gemv:q6_k matmul:q8_0 matmul:q4_0 matmul:q4_k matmul:q6_k; do
    op=${case%%:*} dtype=${case#*:}
    RAYO_CONFIG=$tmp/off.conf "$conform" --op "$op" --dtype "$dtype" ${RAYO_CONFORM_ARGS:-} "$plugin" >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    if [ "$rc" -ne 0 ] || ! grep -q '^Summary: 1 ops x 1 backend: 1 conform, 0 FAIL' "$tmp/out"; then
        echo "FAIL: $op $dtype with vnni = off (rayo-conform exit status $rc)"
        failed=1
    else
        echo "ok: $op $dtype with vnni = off"
    fi
done
exit $failed

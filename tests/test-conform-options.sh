#!/bin/sh
# SPDX-License-Identifier: MIT
# test-conform-options.sh - rayo-conform's report and options, through the
# real loader:
#   - an op the plugin has no kernel for is "-" (not implemented), never ok,
#     even where the core itself answers some of its calls (empty calls,
#     refused shapes): tests/plugins' fakegood implements add only;
#   - --dtype NAME runs only the cases of that dtype, all of them;
#   - --progress SECONDS prints progress lines when stderr is not a terminal;
#   - an unknown dtype or option is a usage error (exit 2) that names it.
builddir=${abs_top_builddir:-$(pwd)}
conform=$builddir/tools/rayo-conform
fake=$builddir/tests/plugins/.libs/rayo-fakegood.so
scalar=$builddir/plugins/scalar/.libs/rayo-scalar.so
for f in "$conform" "$fake" "$scalar"; do
    [ -e "$f" ] || { echo "ERROR: $f not found: run from the top build directory" >&2; exit 99; }
done
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU

failed=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
    what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failed=1; fi
}

# 1. Not implemented is not ok.
"$conform" --quick --op add,get_rows,gemv,matmul "$fake" >"$tmp/out" 2>/dev/null
rc=$?
cat "$tmp/out"
check "exit status 0 (got $rc)" test "$rc" -eq 0
check "add (implemented): ok" grep -q '^add  *ok' "$tmp/out"
for op in get_rows gemv matmul; do
    check "$op (no kernel): not implemented" grep -q "^$op  *- *\$" "$tmp/out"
done
check "summary: 1 conform, 3 not implemented" grep -q '1 conform, 0 FAIL, 3 not implemented' "$tmp/out"

# 2. Progress off a terminal (stderr is a file here).
"$conform" --quick --progress 0 --op add "$fake" >/dev/null 2>"$tmp/err"
check "progress lines on stderr" grep -q '^  checking add on fakegood: case [0-9]' "$tmp/err"

# 3. --dtype: every gemv case with q8_0 weights, and only those.
cases() { # the case count of the one backend's row in --verbose output
    sed -n 's/^    [a-z0-9]*: \([0-9]*\) cases.*/\1/p' "$1" | head -n 1
}
"$conform" --quick --verbose --seed 7 --op gemv "$scalar" >"$tmp/all" 2>/dev/null
"$conform" --quick --verbose --seed 7 --op gemv --dtype q8_0 "$scalar" >"$tmp/q8" 2>/dev/null
rc=$?
"$conform" --quick --verbose --seed 7 --op gemv --dtype f16 "$scalar" >"$tmp/f16" 2>/dev/null
all=$(cases "$tmp/all") q8=$(cases "$tmp/q8") f16=$(cases "$tmp/f16")
echo "gemv cases: all dtypes ${all:-?}, q8_0 ${q8:-?}, f16 ${f16:-?}"
check "--dtype q8_0: exit 0 (got $rc)" test "$rc" -eq 0
check "--dtype q8_0: gemv conforms" grep -q '^gemv  *ok' "$tmp/q8"
check "--dtype q8_0: some cases, fewer than all" test "${q8:-0}" -gt 0 -a "${q8:-0}" -lt "${all:-0}"
check "--dtype q8_0 and f16 together make no more than all" test $((${q8:-0} + ${f16:-0})) -lt "${all:-0}"
check "--dtype in the replay line" grep -q 'Replay: .* --dtype q8_0' "$tmp/q8"
"$conform" --quick --dtype q4_k "$scalar" >"$tmp/q4k" 2>/dev/null
check "--dtype q4_k without --op: only ops with q4_k cases (no add)" sh -c "! grep -q '^add ' '$tmp/q4k'"
check "--dtype q4_k without --op: gemv is there" grep -q '^gemv ' "$tmp/q4k"

# 4. Usage errors name what is wrong.
"$conform" --dtype q9 "$scalar" >/dev/null 2>"$tmp/err"
rc=$?
check "unknown dtype: exit 2 (got $rc)" test "$rc" -eq 2
check "unknown dtype: named" grep -q "unknown dtype 'q9'" "$tmp/err"
"$conform" --bogus >/dev/null 2>"$tmp/err"
rc=$?
check "unknown option: exit 2 (got $rc)" test "$rc" -eq 2
check "unknown option: named" grep -q "unknown option '--bogus'" "$tmp/err"
exit $failed

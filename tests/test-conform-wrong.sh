#!/bin/sh
# SPDX-License-Identifier: MIT
# test-conform-wrong.sh - rayo-conform, run through the real loader on a
# plugin with planted bugs (tests/test-conform-wrong-plugin.c), must say FAIL
# for exactly the broken ops and exit 1; a file that is no plugin must be
# refused with its reason; a bad option is a usage error (exit 2).
builddir=${abs_top_builddir:-$(pwd)}
conform=$builddir/tools/rayo-conform
plugin=$builddir/tests/.libs/rayo-conformwrong.so
for f in "$conform" "$plugin"; do
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

"$conform" --quick --op add,relu,sum,scale,exp "$plugin" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "exit status 1 for a failing plugin (got $rc)" test "$rc" -eq 1
check "add: FAIL" grep -q '^add  *FAIL' "$tmp/out"
check "relu: FAIL" grep -q '^relu  *FAIL' "$tmp/out"
check "relu: the write past the end is named" grep -q 'past the end' "$tmp/out"
check "sum: ok" grep -q '^sum  *ok' "$tmp/out"
check "scale: ok" grep -q '^scale  *ok' "$tmp/out"
check "scale: the unsupported cases are noted" grep -q 'scale on conformwrong: .* "unsupported"' "$tmp/out"
check "exp: not implemented" grep -q '^exp  *- *$' "$tmp/out"
check "the seed is printed for a replay" grep -q 'rayo-conform --seed [0-9]' "$tmp/out"

# The same inputs again, from the seed it printed.
seed=$(sed -n 's/.*, seed \([0-9]*\), quick.*/\1/p' "$tmp/out" | head -n 1)
"$conform" --quick --op add --seed "$seed" "$plugin" >"$tmp/again" 2>&1
check "replay with --seed $seed reports the same add failure" \
    test "$(grep -A1 '^  add on' "$tmp/out")" = "$(grep -A1 '^  add on' "$tmp/again")"

"$conform" --quick "$builddir/core/.libs/librayo.so" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "a file that is no plugin fails (got $rc)" test "$rc" -eq 1
check "its reason is printed" grep -q 'was not loaded: ' "$tmp/out"

"$conform" --op no_such_op >/dev/null 2>&1
rc=$?
check "an unknown op is a usage error (got $rc)" test "$rc" -eq 2

exit $failed

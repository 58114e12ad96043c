#!/bin/sh
# SPDX-License-Identifier: MIT
# test-info-check.sh - rayo-info --check lints the configuration (exit 1 on
# any problem, the warnings on stderr with a close name), --json carries the
# warnings, --explain takes chain names (matmul.f32.q4_k.f32) and says what is
# missing, RAYO_LOG=debug shows the steps the README promises, and a clean
# configuration prints no warning at all (no device notes on stderr).
builddir=${abs_top_builddir:-$(pwd)}
info=$builddir/tools/rayo-info
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU RAYO_LOG
XDG_CONFIG_HOME=$tmp/xdg
export XDG_CONFIG_HOME
failed=0
expect() { # expect WHAT TEXT PATTERN
    if printf '%s\n' "$2" | grep -qE -- "$3"; then echo "ok: $1"; else
        echo "FAIL: $1: no line matching '$3' in:"; printf '%s\n' "$2"; failed=1; fi
}
expect_rc() { # expect_rc WHAT GOT WANT
    if [ "$2" -eq "$3" ]; then echo "ok: $1 (exit $2)"; else echo "FAIL: $1: exit $2, want $3"; failed=1; fi
}

printf '[dispatch]\norder = scalar\n' >"$tmp/good.conf"
out=$(RAYO_CONFIG=$tmp/good.conf "$info" --check 2>"$tmp/err"); rc=$?
expect_rc "--check on a clean configuration" $rc 0
expect "--check says so" "$out" "^rayo-info --check: no problems found$"
if [ -s "$tmp/err" ]; then echo "FAIL: a clean configuration printed on stderr:"; cat "$tmp/err"; failed=1
else echo "ok: nothing on stderr (no device notes as warnings)"; fi

printf '[dispatch]\norder = cdua\n[backend.avx5l2]\nenabled = no\n' >"$tmp/bad.conf"
out=$(RAYO_CONFIG=$tmp/bad.conf "$info" --check 2>"$tmp/err"); rc=$?
expect_rc "--check with two problems" $rc 1
expect "--check counts them" "$out" "^rayo-info --check: 2 problems"
err=$(cat "$tmp/err")
expect "the order's problem with file:line and a close name" "$err" \
    "^rayo: warn: $tmp/bad.conf:2: \[dispatch\] order: no backend is called \"cdua\" \(did you mean cuda\?\)$"
expect "the section's problem" "$err" "$tmp/bad.conf:4: \[backend.avx5l2\]: no backend is called"
out=$(RAYO_CONFIG=$tmp/bad.conf "$info" 2>/dev/null)
expect "the file list counts the problems" "$out" "$tmp/bad.conf +read, 2 problems \(see warnings\)$"
out=$(RAYO_CONFIG=$tmp/bad.conf "$info" --json 2>/dev/null)
expect "--json has the warnings" "$out" "^  \"warnings\": \[$"
expect "--json names the problem" "$out" "^    \"$tmp/bad.conf:2: \[dispatch\] order: no backend is called \\\\\"cdua\\\\\""
out=$(RAYO_BACKEND=cdua "$info" --check 2>&1); rc=$?
expect_rc "--check with RAYO_BACKEND=cdua" $rc 1
expect "the variable named" "$out" "env RAYO_BACKEND: \[dispatch\] order: no backend is called \"cdua\" \(did you mean cuda\?\)"

out=$("$info" --explain matmul.f32.q4_k.f32 1000000 2>&1); rc=$?
expect_rc "--explain takes a chain name" $rc 0
expect "--explain of the chain" "$out" "^matmul.f32.q4_k.f32: "
expect "--explain lists its links" "$out" "^  1\. [a-z0-9_]+ +accepts this size"
out=$("$info" --explain 2>&1); rc=$?
expect_rc "--explain alone" $rc 2
expect "--explain alone says what is missing" "$out" "needs an op and a work size"
out=$("$info" --explain matmul 2>&1); rc=$?
expect_rc "--explain without a size" $rc 2
expect "--explain OP says the size is missing" "$out" "--explain matmul needs a work size too"
out=$("$info" --explain matmul.f32.q9_9.f32 10 2>&1); rc=$?
expect_rc "--explain of an unknown combination" $rc 2

out=$(RAYO_LOG=debug "$info" --check 2>&1)
expect "debug: each config file read" "$out" "^rayo: debug: config file $tmp/xdg/rayo/rayo.conf: not found$"
expect "debug: each config folder" "$out" "^rayo: debug: config folder $tmp/xdg/rayo/conf.d: no such directory$"
expect "debug: each plugin tried" "$out" "^rayo: debug: plugin file .*/rayo-scalar.so: trying$"
expect "debug: what became of it" "$out" "^rayo: info: scalar [^ ]+ loaded from "
expect "debug: each chain" "$out" "^rayo: debug: chain matmul.f32.q4_k.f32: .*scalar"
exit $failed

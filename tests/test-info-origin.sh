#!/bin/sh
# SPDX-License-Identifier: MIT
# test-info-origin.sh - rayo-info says where each setting came from
# (file:line, env VAR) and which ones a later layer overrode, --explain names
# the file and line that set an op's order, and every tool has --version
# naming its own and librayo's version.
builddir=${abs_top_builddir:-$(pwd)}
tools=$builddir/tools
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU
XDG_CONFIG_HOME=$tmp/xdg RAYO_LOG=error
export XDG_CONFIG_HOME RAYO_LOG
failed=0
expect() { # expect WHAT TEXT PATTERN
    if printf '%s\n' "$2" | grep -qE "$3"; then echo "ok: $1"; else
        echo "FAIL: $1: no line matching '$3' in:"; printf '%s\n' "$2"; failed=1; fi
}

printf '# test\n[dispatch]\norder = scalar\n\n[op.add]\norder = avx2, scalar\n' >"$tmp/t.conf"
out=$(RAYO_CONFIG=$tmp/t.conf RAYO_BACKEND=scalar "$tools/rayo-info")
expect "a file's setting with file:line, marked overridden" "$out" \
    "^  \[dispatch\] order = scalar +$tmp/t.conf:3  \(overridden\)$"
expect "the op's own order with file:line" "$out" "^  \[op.add\] order = avx2, scalar +$tmp/t.conf:6$"
expect "the environment's setting last" "$out" "^  \[dispatch\] order = scalar +env RAYO_BACKEND$"

out=$(RAYO_CONFIG=$tmp/t.conf "$tools/rayo-info" --explain add 100)
expect "--explain names the [op.add] order's file and line" "$out" "set by $tmp/t.conf:6$"
out=$(RAYO_CONFIG=$tmp/t.conf "$tools/rayo-info" --explain sub 100)
expect "--explain names the [dispatch] order's file and line" "$out" "set by $tmp/t.conf:3$"

out=$(RAYO_CONFIG=$tmp/t.conf "$tools/rayo-info" --json)
expect "--json lists settings with origin" "$out" "\"origin\": \"$tmp/t.conf:6\", \"overridden\": false"

lib=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile")
for tool in rayo-info rayo-conform rayo-bench rayo-calibrate; do
    out=$("$tools/$tool" --version) || { echo "FAIL: $tool --version exits non-zero"; failed=1; }
    expect "$tool --version" "$out" "^$tool [0-9]+\.[0-9]+\.[0-9]+ \(librayo $lib\)$"
done
exit $failed

#!/bin/sh
# SPDX-License-Identifier: MIT
# test-template.sh - the plugin template third parties copy must load and
# conform: rayo-conform on examples/plugin-template's build.
builddir=${abs_top_builddir:-$(pwd)}
plugin=$builddir/examples/plugin-template/.libs/rayo-template.so
if [ ! -f "$plugin" ]; then
    echo "ERROR: $plugin not built" >&2
    exit 99
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU
out=$("$builddir/tools/rayo-conform" --quick "$plugin" 2>&1)
status=$?
echo "$out"
[ $status -eq 0 ] || { echo "FAIL: the template does not conform (exit $status)"; exit 1; }
# It implements add and relu: both must have been checked, not skipped.
for op in add relu; do
    echo "$out" | grep -E "^ *$op .*ok" >/dev/null || { echo "FAIL: $op was not checked on the template"; exit 1; }
done
echo "PASS: the plugin template conforms"

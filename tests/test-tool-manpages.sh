#!/bin/sh
# SPDX-License-Identifier: MIT
# test-tool-manpages.sh - the man pages of rayo-bench and rayo-conform
# (doc/) document exactly the options their --help lists, and each has an
# EXIT STATUS section.
builddir=${abs_top_builddir:-$(pwd)}
srcdir=${abs_top_srcdir:-$(dirname "$0")/..}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU

failed=0
for tool in rayo-bench rayo-conform; do
    bin=$builddir/tools/$tool man=$srcdir/doc/$tool.1
    [ -e "$bin" ] && [ -e "$man" ] || { echo "ERROR: $bin or $man not found" >&2; exit 99; }
    # the options at the start of --help's lines; every "\-\-name" of the page
    "$bin" --help | sed -n 's/^  *\(--[a-z][-a-z]*\).*/\1/p' | sort -u >"$tmp/help"
    grep -o '\\-\\-[a-z][-a-z]*' "$man" | sed 's/\\//g' | sort -u >"$tmp/man"
    if [ ! -s "$tmp/help" ]; then
        echo "FAIL: $tool --help lists no option"
        failed=1
    fi
    for opt in $(comm -23 "$tmp/help" "$tmp/man"); do
        echo "FAIL: $tool: $opt is in --help but not in doc/$tool.1"
        failed=1
    done
    for opt in $(comm -13 "$tmp/help" "$tmp/man"); do
        echo "FAIL: $tool: $opt is in doc/$tool.1 but not in --help"
        failed=1
    done
    if grep -q '^\.SH EXIT STATUS' "$man"; then
        echo "ok: $tool: $(wc -l <"$tmp/help") options in both; EXIT STATUS documented"
    else
        echo "FAIL: $tool: doc/$tool.1 has no EXIT STATUS section"
        failed=1
    fi
done
exit $failed

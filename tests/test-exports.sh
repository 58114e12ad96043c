#!/bin/sh
# SPDX-License-Identifier: MIT
# test-exports.sh - librayo exports exactly its public API, versioned: every
# dynamic symbol it defines is a function declared in the installed headers
# (RAYO_API in rayo.h, RAYO_DTYPE_FN in rayo-dtype.h) with the symbol
# version of core/librayo.map (RAYO_1.0, or the later node that names it),
# and every such declaration is exported.
set -eu
lib=$abs_top_builddir/core/.libs/librayo.so
command -v readelf >/dev/null || { echo "SKIP: readelf not found (binutils)"; exit 77; }
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
tmp=$(mktemp -d /tmp/rayo-exports-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Defined dynamic symbols as NAME@VERSION (readelf -W: "rayo_add@@RAYO_1.0";
# the version node itself is an ABS symbol).
readelf -W --dyn-syms "$lib" | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $7 != "ABS" && $5 != "LOCAL" { print $8 }' |
    sed 's/@@/@/' | sort >"$tmp/exported"
# Function names declared by the public headers (a declaration starts its line).
sed -n 's/^RAYO_API [^(]*[ *]\(rayo_[a-z0-9_]*\)(.*/\1/p' "$abs_top_srcdir/core/rayo.h" >"$tmp/declared"
sed -n 's/^RAYO_DTYPE_FN [^(]*[ *]\(rayo_[a-z0-9_]*\)(.*/\1/p' "$abs_top_srcdir/core/rayo-dtype.h" >>"$tmp/declared"
sort -u "$tmp/declared" -o "$tmp/declared"
# Each function at the version of the map node that names it (a later
# minor's node names its functions one per line), else RAYO_1.0.
awk '/^RAYO_1\.[0-9]+ *\{/ { node = $1 } /^        rayo_[a-z0-9_]*;$/ { sub(/;/, "", $1); print $1 " " node }' \
    "$abs_top_srcdir/core/librayo.map" >"$tmp/versions"
while read -r name; do
    version=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/versions")
    echo "$name@${version:-RAYO_1.0}"
done <"$tmp/declared" | sort >"$tmp/wanted"

status=0
extra=$(comm -23 "$tmp/exported" "$tmp/wanted")
missing=$(comm -13 "$tmp/exported" "$tmp/wanted")
[ -z "$extra" ] || { echo "FAIL: exported but not public API at its version:"; echo "$extra"; status=1; }
[ -z "$missing" ] || { echo "FAIL: public API not exported at its version:"; echo "$missing"; status=1; }
echo "$(wc -l <"$tmp/exported") symbols exported, $(wc -l <"$tmp/declared") declared"
[ "$(wc -l <"$tmp/declared")" -gt 100 ] || { echo "FAIL: too few declarations found: the header parse broke"; status=1; }
exit $status

#!/bin/sh
# SPDX-License-Identifier: MIT
# packaging/abi-check.sh BUILDDIR [--update | --prove]
#
# The ABI guard: librayo.so and a plugin built from the template
# (examples/plugin-template, i.e. the plugin ABI of rayo-plugin.h) are
# compared by abidiff with the baselines in packaging/abi/ (abidw XML).
# Exits 1 on an incompatible change (removed or changed functions,
# variables, type layouts); compatible additions are reported and pass.
#
#   --update  regenerate the baselines and packaging/debian/librayo0.symbols
#             from this build (`make abi-baseline` calls this): do it, and
#             commit the result, after a deliberate ABI change
#   --prove   show that the check fails on deliberate breaks: librayo with
#             one exported function removed, and the template built against
#             a rayo-plugin.h with a field inserted in the descriptor
set -eu
build=$(cd "${1:?usage: $0 BUILDDIR [--update|--prove]}" && pwd)
mode=${2:-check}
src=$(cd "$(dirname "$0")/.." && pwd)
base=$src/packaging/abi
lib=$build/core/.libs/librayo.so
plugin=$build/examples/plugin-template/.libs/rayo-template.so

for tool in abidw abidiff; do
    command -v $tool >/dev/null || { echo "abi-check: $tool not found (install abigail-tools)"; exit 77; }
done
for f in "$lib" "$plugin"; do
    [ -f "$f" ] || { echo "abi-check: $f not built (make -C $build all check)"; exit 2; }
done

tmp=$(mktemp -d /tmp/rayo-abi-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Types declared outside the installed headers (core/rayo*.h; not internal.h)
# are not ABI: a plugin's own state, the core's helpers.  The opaque types of
# rayo.h are left out of the comparison by packaging/abi/opaque.suppr.
mkdir -p "$tmp/public"
cp "$src"/core/rayo*.h "$tmp/public/"
dump() { abidw --no-show-locs --no-corpus-path --drop-private-types --headers-dir "${3:-$tmp/public}" \
    --out-file "$2" "$1"; }

# compare NAME BASELINE FILE: 0 if compatible, 1 if not.
compare() {
    set +e
    report=$(abidiff --no-show-locs --suppressions "$base/opaque.suppr" "$2" "$3" 2>&1)
    status=$?
    set -e
    if [ $status -ge 16 ] || [ $((status & 3)) -ne 0 ]; then
        printf '%s\n' "$report"
        echo "abi-check: $1: abidiff failed (status $status)"
        return 1
    fi
    if [ $((status & 8)) -ne 0 ]; then
        printf '%s\n' "$report"
        echo "abi-check: $1: INCOMPATIBLE with $2 (abidiff status $status)"
        return 1
    fi
    [ $((status & 4)) -ne 0 ] && { printf '%s\n' "$report"; echo "abi-check: $1: compatible additions"; }
    echo "abi-check: $1: compatible with the baseline"
}

case $mode in
--update)
    dump "$lib" "$base/librayo.abi"
    dump "$plugin" "$base/rayo-plugin.abi"
    echo "abi-check: baselines written to $base"
    if command -v dpkg-gensymbols >/dev/null; then
        version=$(sed -n 's/^PACKAGE_VERSION = //p' "$build/Makefile")
        # The library's symbols alone (an empty template: symbols it no longer
        # exports must not linger), each at the version the old file gave it
        # (new ones at this version).
        symbols=$src/packaging/debian/librayo0.symbols
        : >"$tmp/empty"
        dpkg-gensymbols -plibrayo0 -v"$version" -e"$(readlink -f "$lib")" -I"$tmp/empty" \
            -O"$tmp/symbols" >/dev/null 2>&1
        { echo "librayo.so.0 librayo0 #MINVER#"; echo "* Build-Depends-Package: librayo-dev"
          awk 'NR == FNR { if ($1 ~ /@/) old[$1] = $2; next }
               $1 ~ /@/ { print " " $1 " " ($1 in old ? old[$1] : $2) }' "$symbols" "$tmp/symbols"
        } >"$tmp/merged"
        mv "$tmp/merged" "$symbols"
        echo "abi-check: packaging/debian/librayo0.symbols regenerated (check the versions of new symbols)"
    fi
    ;;
check)
    dump "$lib" "$tmp/librayo.abi"
    dump "$plugin" "$tmp/rayo-plugin.abi"
    # The baselines describe one architecture (x86-64): type sizes and
    # layouts of another (a cross build) are not comparable with them.
    arch() { sed -n "1s/.* architecture='\([^']*\)'.*/\1/p" "$1"; }
    if [ "$(arch "$tmp/librayo.abi")" != "$(arch "$base/librayo.abi")" ]; then
        echo "SKIP: the baselines are for $(arch "$base/librayo.abi"), this build is $(arch "$tmp/librayo.abi")"
        exit 77
    fi
    ok=0
    compare librayo "$base/librayo.abi" "$tmp/librayo.abi" || ok=1
    compare "plugin ABI (template plugin)" "$base/rayo-plugin.abi" "$tmp/rayo-plugin.abi" || ok=1
    exit $ok
    ;;
--prove)
    # 1. librayo relinked from the same objects with rayo_version no longer exported.
    printf '{ global: rayo_*; local: rayo_version; *; };\n' >"$tmp/hide.map"
    # the objects the build links now (a glob would also take stale objects of renamed sources)
    objs=$(printf 'abi-check-objects:\n\t@echo $(am_core_librayo_la_OBJECTS)\n' |
        make -s -C "$build" -f Makefile -f - abi-check-objects | tr ' ' '\n' |
        sed -n 's|^core/\(.*\)\.lo$|'"$build"'/core/.libs/\1.o|p')
    [ -n "$objs" ] || { echo "abi-check: --prove: no object list from $build/Makefile"; exit 1; }
    # shellcheck disable=SC2086 # one word per object
    ${CC:-cc} -shared -o "$tmp/librayo.so" $objs \
        -Wl,-soname,librayo.so.0 -Wl,--version-script="$tmp/hide.map" -linih -lpthread -lm
    dump "$tmp/librayo.so" "$tmp/broken-lib.abi"
    if compare "librayo without rayo_version" "$base/librayo.abi" "$tmp/broken-lib.abi" >"$tmp/out1"; then
        cat "$tmp/out1"; echo "abi-check: --prove: a removed function was NOT caught"; exit 1
    fi
    grep -q "rayo_version" "$tmp/out1" || { cat "$tmp/out1"; echo "abi-check: --prove: report does not name rayo_version"; exit 1; }
    echo "abi-check: --prove: removed function caught: $(tail -1 "$tmp/out1")"
    # 2. the template against a descriptor with a field inserted before probe.
    mkdir -p "$tmp/inc"
    cp "$src"/core/rayo*.h "$tmp/inc/"
    sed 's/^    uint32_t reserved;$/    uint32_t reserved;\n    uint64_t inserted_by_abi_check;/' \
        "$src/core/rayo-plugin.h" >"$tmp/inc/rayo-plugin.h"
    cmp -s "$src/core/rayo-plugin.h" "$tmp/inc/rayo-plugin.h" && { echo "abi-check: --prove: could not alter rayo-plugin.h"; exit 1; }
    ${CC:-cc} -std=c11 -g -O2 -fPIC -shared -fvisibility=hidden -I"$tmp/inc" \
        -o "$tmp/rayo-template.so" "$src/examples/plugin-template/rayo-template.c"
    dump "$tmp/rayo-template.so" "$tmp/broken-plugin.abi" "$tmp/inc"
    if compare "template with a field inserted" "$base/rayo-plugin.abi" "$tmp/broken-plugin.abi" >"$tmp/out2"; then
        cat "$tmp/out2"; echo "abi-check: --prove: a descriptor layout change was NOT caught"; exit 1
    fi
    grep -q "inserted_by_abi_check" "$tmp/out2" || { cat "$tmp/out2"; echo "abi-check: --prove: report does not name the field"; exit 1; }
    echo "abi-check: --prove: descriptor layout change caught: $(tail -1 "$tmp/out2")"
    ;;
*) echo "usage: $0 BUILDDIR [--update|--prove]"; exit 2 ;;
esac

#!/bin/sh
# SPDX-License-Identifier: MIT
# test-abi-cxx.sh - a plugin written in C++17 (tests/abi/rayo-cxx.cc, from
# the plugin template's recipe) builds with g++ -std=c++17 against the
# installed-style header and loads and runs through the core: the
# descriptor's extern declaration in rayo-plugin.h gives a C++ `const`
# definition external, unmangled linkage.  The symbol check comes first, so
# a failure says which rule broke.
srcdir=${abs_top_srcdir:?}
builddir=${abs_top_builddir:?}
# The C++ compiler that goes with the build's C compiler (gcc -> g++,
# aarch64-linux-gnu-gcc -> aarch64-linux-gnu-g++ in a cross build).
cc=$(sed -n 's/^S\["CC"\]="\([^ "]*\).*/\1/p' "$builddir/config.status" 2>/dev/null)
case $cc in
    *gcc) CXX=${CXX_FOR_ABI_TEST:-${cc%gcc}g++} ;;
    *clang) CXX=${CXX_FOR_ABI_TEST:-${cc}++} ;;
    *) CXX=${CXX_FOR_ABI_TEST:-g++} ;;
esac
if ! command -v "$CXX" >/dev/null 2>&1; then
    echo "SKIP: no C++ compiler ($CXX) to build the C++ plugin"
    exit 77
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
plugin=$tmp/rayo-cxx.so
# The headers as a plugin author gets them: core/ (rayo-plugin.h, rayo.h,
# rayo-ops.h, rayo-dtype.h), nothing else.
if ! "$CXX" -std=c++17 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
        -I"$srcdir/core" -o "$plugin" "$srcdir/tests/abi/rayo-cxx.cc"; then
    echo "FAIL: the C++17 plugin does not compile"
    exit 1
fi
if command -v nm >/dev/null 2>&1; then
    exported=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[A-Za-z]$/ && $2 != "A" {print $3}' | sort | tr '\n' ' ')
    if [ "$exported" != "rayo_plugin " ]; then
        echo "FAIL: the C++ plugin should export exactly rayo_plugin, exports: $exported"
        exit 1
    fi
fi
# It was built against this header: the minor it reports is the header's.
minor=$(sed -n 's/^#define RAYO_PLUGIN_ABI_MINOR \([0-9]*\)$/\1/p' "$srcdir/core/rayo-plugin.h")
# Not exec: the EXIT trap must still remove $tmp (and the plugin in it).
${RAYO_RUN_WRAPPER:-} "$builddir/tests/abi/test-abi-core" "$plugin" cxx "${minor:?}"
exit $?

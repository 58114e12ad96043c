#!/bin/sh
# SPDX-License-Identifier: MIT
# test-local-plugindir.sh - the local plugin directory follows --prefix: a
# --prefix=/usr build also searches /usr/local/lib/rayo/abiN, any other
# prefix has no second directory (localplugindir is plugindir), and
# --with-local-plugindir still sets one.  Runs configure in scratch folders
# (only configure: nothing is built; the runs after the first read the
# compiler's checks from a shared cache file) and reads the rayo.pc it
# writes.
# RAYO_CONFIGURE_CHECKED (a reason) skips it where another build of the same
# source tree already ran it: it tests only the configure script, never the
# build it runs in (the sanitizer, distcheck and cross builds in CI).
if [ -n "${RAYO_CONFIGURE_CHECKED:-}" ]; then
    echo "SKIP: $RAYO_CONFIGURE_CHECKED"
    exit 77
fi
srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
failed=0
# pc_var PREFIX-ARGS... : configures in a fresh folder; prints plugindir and
# localplugindir of its rayo.pc, expanded by pkg-config.
pc_vars() {
    dir=$tmp/b$#$(echo "$*" | tr -c 'a-z' '_')
    mkdir -p "$dir" && (cd "$dir" && "$srcdir/configure" --cache-file="$tmp/config.cache" "$@" >configure.log 2>&1) ||
        { echo "configure $* failed:"; tail -5 "$dir/configure.log"; return 1; }
    PKG_CONFIG_PATH=$dir pkg-config --variable=plugindir rayo &&
        PKG_CONFIG_PATH=$dir pkg-config --variable=localplugindir rayo
}
check() { # check WHAT CONFIGURE-ARGS WANT-PLUGINDIR WANT-LOCAL
    what=$1; args=$2
    got=$(pc_vars $args) || { echo "FAIL: $what"; failed=1; return; }
    want=$(printf '%s\n%s' "$3" "$4")
    if [ "$got" = "$want" ]; then echo "ok: $what: $(echo $got)"; else
        echo "FAIL: $what: got '$(echo $got)', want '$(echo $want)'"; failed=1; fi
}
abi=$(sed -n 's/^RAYO_ABI_MAJOR=//p' "$srcdir/configure.ac")
check "--prefix=/usr" "--prefix=/usr" "/usr/lib/rayo/abi$abi" "/usr/local/lib/rayo/abi$abi"
check "--prefix=/opt/rayo" "--prefix=/opt/rayo" "/opt/rayo/lib/rayo/abi$abi" "/opt/rayo/lib/rayo/abi$abi"
check "--with-local-plugindir" "--prefix=/opt/rayo --with-local-plugindir=/srv/rayo" \
    "/opt/rayo/lib/rayo/abi$abi" "/srv/rayo"
exit $failed

#!/bin/sh
# SPDX-License-Identifier: MIT
# test-install-hook.sh - `make install` by root into the system runs ldconfig
# (else the freshly installed librayo.so.0 is not in the dynamic linker's
# cache and rayo-info fails to start); a staged install (DESTDIR, a package
# build) does not.  Runs only the hook, not an install.
builddir=${abs_top_builddir:-$(pwd)}
[ "$(id -u)" = 0 ] || { echo "SKIP: not root: the hook runs ldconfig only for root"; exit 77; }
command -v ldconfig >/dev/null 2>&1 || { echo "SKIP: no ldconfig here"; exit 77; }
failed=0
out=$(make -s -C "$builddir" install-exec-hook DESTDIR= 2>&1)
case $out in
    *ldconfig*) echo "ok: root, no DESTDIR: $out" ;;
    *) echo "FAIL: root install into the system does not run ldconfig: $out"; failed=1 ;;
esac
out=$(make -s -C "$builddir" install-exec-hook DESTDIR=/nonexistent/stage 2>&1)
case $out in
    *ldconfig*) echo "FAIL: a staged install (DESTDIR) runs ldconfig: $out"; failed=1 ;;
    *) echo "ok: DESTDIR set: no ldconfig" ;;
esac
exit $failed

#!/bin/sh
# SPDX-License-Identifier: MIT
# qemu-wrap.sh PROGRAM [ARG]... - runs a program of an aarch64 build on a
# machine of another architecture, with user-mode qemu (no binfmt needed):
#   - an ELF file:                  qemu-aarch64 PROGRAM ARG...
#   - a libtool wrapper script:     its real program under qemu, with the
#                                   library path the wrapper would set
#   - any other script (a test):    run as it is, with RAYO_RUN_WRAPPER set to
#                                   this script, for scripts that start build-
#                                   tree programs themselves
# Used as automake's LOG_COMPILER by tests/cross-aarch64.sh:
#   make check LOG_COMPILER=/path/to/tests/qemu-wrap.sh
# and by hand:  tests/qemu-wrap.sh build-aarch64/tools/rayo-info
#
# Guest libraries: the multiarch arm64 libc (libc6:arm64, /lib/ld-linux-
# aarch64.so.1) when it is installed, so no -L is needed; otherwise the
# cross toolchain's sysroot (-L /usr/aarch64-linux-gnu).  Prefer the former:
# with Debian 12's qemu 7.2, pthread_create never returns under the
# libc6-arm64-cross libc (2.36-8cross1), while libc6:arm64 works.
set -u
if [ $# -lt 1 ]; then
    echo "usage: $0 PROGRAM [ARG]..." >&2
    exit 99
fi
prog=$1
shift

QEMU=${QEMU:-qemu-aarch64}
if [ -z "${QEMU_LD_PREFIX:-}" ] && [ ! -e /lib/ld-linux-aarch64.so.1 ]; then
    QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
    export QEMU_LD_PREFIX
fi
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
RAYO_RUN_WRAPPER=$self
export RAYO_RUN_WRAPPER

is_elf() {
    [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]
}

if is_elf "$prog"; then
    exec "$QEMU" "$prog" "$@"
fi

# A libtool wrapper of an uninstalled program: "$dir/.libs/$name" (or
# lt-$name) is the real one; its LD_LIBRARY_PATH line names the build tree's
# library folders, which qemu passes on to the guest's dynamic loader.
if grep -q 'temporary wrapper script for' "$prog" 2>/dev/null &&
    ! grep -q "exec $QEMU " "$prog"; then
    dir=$(dirname "$prog")
    name=$(basename "$prog")
    real=$dir/.libs/lt-$name
    [ -e "$real" ] || real=$dir/.libs/$name
    libpath=$(sed -n 's/^ *LD_LIBRARY_PATH="\(.*\):\$LD_LIBRARY_PATH"$/\1/p' "$prog" | head -n 1)
    if [ -n "$libpath" ]; then
        LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        export LD_LIBRARY_PATH
    fi
    exec "$QEMU" "$real" "$@"
fi

exec "$prog" "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cross-aarch64.sh - cross-builds rayo for aarch64 (Debian multiarch) and
# runs the whole test suite under user-mode qemu, on an x86-64 machine.
#
#   bash tests/cross-aarch64.sh            (from anywhere; CI: .ci/run)
#
# Steps: install what is missing (cross gcc, qemu-user, arm64 inih and libc),
# configure --host=aarch64-linux-gnu in build-aarch64/ (RAYO_CROSS_BUILDDIR
# overrides; RAYO_CROSS_CONFIGURE_FLAGS adds configure options), build, then `make check` with every test program run by
# qemu-aarch64.  There is no binfmt_misc here, so nothing can exec an aarch64
# file directly: automake runs each test through tests/qemu-wrap.sh
# (LOG_COMPILER), and the libtool wrapper scripts of the build tree
# (tools/rayo-info, tools/rayo-conform, ...) are made to start their program
# under qemu, so test scripts that run them work unchanged.
# Exit status: 0 when every test passes (or skips), 1 otherwise.
set -euo pipefail
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${RAYO_CROSS_BUILDDIR:-$srcdir/build-aarch64}
host=aarch64-linux-gnu
jobs=${RAYO_CROSS_JOBS:-2}

say() { echo "cross-aarch64: $*"; }

. "$srcdir/apt-install.sh"

# ---- 1. tools and arm64 libraries (Debian/Ubuntu multiarch) -------------------
install_missing() {
    local missing="" p
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        say "adding the arm64 architecture to dpkg"
        as_root tests/cross-aarch64.sh dpkg --add-architecture arm64
    fi
    # libc6:arm64 gives qemu the guest's /lib/ld-linux-aarch64.so.1 (see
    # tests/qemu-wrap.sh for why the cross sysroot's libc is not used).
    for p in build-essential autoconf automake libtool autoconf-archive pkg-config \
        gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user \
        libc6:arm64 libinih-dev:arm64; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        # shellcheck disable=SC2086
        apt_install tests/cross-aarch64.sh $missing
    fi
}

# ---- 2. configure and build -------------------------------------------------------
configure_and_build() {
    cd "$srcdir"
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        say "generating configure (autoreconf)"
        autoreconf -fi >/dev/null
    fi
    mkdir -p "$builddir"
    cd "$builddir"
    if [ ! -f config.status ] || [ "$srcdir/configure" -nt config.status ]; then
        say "configure --host=$host in $builddir"
        # Only the arm64 .pc files (plus the arch-independent ones): the x86
        # inih.pc would give a -linih the cross linker cannot use.
        PKG_CONFIG_LIBDIR=/usr/lib/$host/pkgconfig:/usr/share/pkgconfig \
            "$srcdir/configure" --host="$host" --enable-werror ${RAYO_CROSS_CONFIGURE_FLAGS:-} \
            >configure.log 2>&1 ||
            { cat configure.log; exit 1; }
        sed -n '/backends:/,$p' configure.log
    fi
    say "building"
    make -j"$jobs" >/dev/null
    make -j"$jobs" check TESTS= >/dev/null # the test programs, without running them
}

# ---- 3. make uninstalled programs runnable through qemu -----------------------------
# libtool's wrapper for an uninstalled program ends in
#   exec "$progdir/$program" ...
# which the kernel cannot run here; prefix it with qemu-aarch64.  The wrapper
# has set LD_LIBRARY_PATH already, and qemu passes it to the guest.
wrap_libtool_programs() {
    local f count=0
    while IFS= read -r f; do
        if head -n 5 "$f" | grep -q 'temporary wrapper script for' &&
            ! grep -q 'exec qemu-aarch64 ' "$f"; then
            sed -i 's|^\( *\)exec "\$progdir/\$program"|\1exec qemu-aarch64 "$progdir/$program"|' "$f"
            count=$((count + 1))
        fi
    done < <(find "$builddir" -path '*/.libs' -prune -o -type f -perm -u+x -print)
    say "$count libtool wrapper scripts now start their program under qemu-aarch64"
}

# ---- 4. the test suite under qemu -----------------------------------------------------
run_tests() {
    cd "$builddir"
    say "make check under qemu-aarch64"
    local rc=0
    # Under qemu every program runs ~10x slower: rayo-conform runs --quick
    # (the native build runs the full sizes), and ptxas, which assembles the
    # same PTX as the native build, is not run again; nor is the conformance
    # engine's own test (plain C on a fake backend: no aarch64 plugin code),
    # nor the configure script's test (it runs the host's configure, the
    # same as the native build's).
    RAYO_CONFORM_ARGS=${RAYO_CONFORM_ARGS:---quick} \
        RAYO_PTXAS_DONE="the native build assembles the same PTX" \
        RAYO_ENGINE_CHECKED="the native build checks the conformance engine" \
        RAYO_CONFIGURE_CHECKED="the native build runs the configure script's test" \
        RAYO_CONFORM_COVERED=neon \
        make -j"$jobs" check LOG_COMPILER="$srcdir/tests/qemu-wrap.sh" || rc=$?
    local pass fail skip
    pass=$(cat $(find . -name '*.trs') /dev/null | grep -c '^:test-result: PASS' || true)
    fail=$(cat $(find . -name '*.trs') /dev/null | grep -c -E '^:test-result: (FAIL|ERROR|XPASS)' || true)
    skip=$(cat $(find . -name '*.trs') /dev/null | grep -c '^:test-result: SKIP' || true)
    if [ "$rc" -ne 0 ]; then
        echo "---- $builddir/test-suite.log ----"
        cat test-suite.log 2>/dev/null || true
    fi
    say "aarch64 under qemu: $pass passed, $fail failed, $skip skipped"
    return "$rc"
}

install_missing
configure_and_build
wrap_libtool_programs
run_tests

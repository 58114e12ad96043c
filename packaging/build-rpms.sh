#!/bin/sh
# SPDX-License-Identifier: MIT
# packaging/build-rpms.sh OUTDIR - builds the RPMs of packaging/rpm/rayo.spec
# from the release tarball with rpmbuild (Debian's `rpm` package), to show
# the same split for RPM distributions.  Needs a configured build tree in
# build/.  On Debian there is no RPM database of build dependencies, hence
# --nodeps (the host has them as Debian packages); no debuginfo packages
# (Debian's rpm lacks find-debuginfo); make check already ran (--nocheck).
set -eu
out=$(realpath -m "${1:?usage: $0 OUTDIR}")
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/apt-install.sh"
command -v rpmbuild >/dev/null || apt_install build-rpms rpm
mkdir -p "$out"
work=$(mktemp -d /tmp/rayo-rpms-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/SOURCES"
make -C "$top/build" -s dist-gzip >/dev/null
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top/build/Makefile")
cp "$top/build/rayo-$version.tar.gz" "$work/SOURCES/"
cp "$top/packaging/rpm/rayo.spec" "$work/rayo.spec"
"$top/packaging/project-subst.sh" "$work/rayo.spec"
rpmbuild -bb --nodeps --nocheck --define "_topdir $work" --define "debug_package %{nil}" \
    --define "_smp_mflags -j$(nproc)" "$work/rayo.spec" >"$work/build.log" 2>&1 || {
    tail -40 "$work/build.log"; echo "build-rpms: rpmbuild failed"; exit 1; }
find "$work/RPMS" -name '*.rpm' -exec cp {} "$out/" \;
for r in "$out"/*.rpm; do
    echo "  $(basename "$r"): $(rpm -qp --provides "$r" 2>/dev/null | grep -c .) provides;" \
         "requires $(rpm -qp --requires "$r" 2>/dev/null | grep -E '^(rayo|libvulkan)' | tr '\n' ' ')"
    rpm -qlp "$r" 2>/dev/null | grep -E '\.so|\.conf$|/bin/' | sed 's/^/      /'
done

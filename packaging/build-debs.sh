#!/bin/sh
# SPDX-License-Identifier: MIT
# packaging/build-debs.sh OUTDIR - builds rayo's Debian source package and
# binary packages from the release tarball (so the tarball is shown complete)
# and checks both with lintian.  The Maintainer, Homepage and watch URL come
# from packaging/project.env.  Needs a configured build tree in build/ (./build.sh makes one)
# and installs the build dependencies it lacks (apt, as root).
#
# Why packaging/debian/ and not debian/: Debian maintains packaging in its
# own repositories; an upstream debian/ directory is in their way (they
# delete it).  Here it is a tested example that also proves the split works:
# this script copies it into an unpacked tarball as debian/.
set -eu
out=$(realpath -m "${1:?usage: $0 OUTDIR}")
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
work=$(mktemp -d /tmp/rayo-debs-XXXXXX)
trap 'rm -rf "$work"' EXIT

need="debhelper autoconf-archive pkgconf libinih-dev libvulkan-dev glslc spirv-tools lintian"
missing=""
for p in $need; do
    dpkg-query -W -f='${db:Status-Abbrev}\n' "$p" 2>/dev/null | grep -q '^ii' || missing="$missing $p"
done
. "$top/apt-install.sh"
# shellcheck disable=SC2086
[ -z "$missing" ] || apt_install build-debs $missing

make -C "$top/build" -s dist-gzip >/dev/null
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top/build/Makefile")
tar -C "$work" -xzf "$top/build/rayo-$version.tar.gz"
cp "$top/build/rayo-$version.tar.gz" "$work/rayo_$version.orig.tar.gz"
cp -r "$top/packaging/debian" "$work/rayo-$version/debian"
"$top/packaging/project-subst.sh" "$work/rayo-$version/debian/control" \
    "$work/rayo-$version/debian/copyright" "$work/rayo-$version/debian/changelog" \
    "$work/rayo-$version/debian/watch"

# make check already ran on this tree in CI: the package build does not
# repeat it (drop nocheck to run it here too).
(cd "$work/rayo-$version" &&
    DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -uc -us >"$work/build.log" 2>&1) || {
    tail -50 "$work/build.log"; echo "build-debs: dpkg-buildpackage failed"; exit 1; }
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$work"/*.dsc "$work"/*.debian.tar.* \
    "$work"/*.orig.tar.gz "$out"/

# lintian on everything built, the source package (.dsc) included;
# packaging/debian/lintian-overrides.txt
# explains each tag accepted.
echo "build-debs: lintian"
lintian --fail-on error,warning --suppress-tags-from-file "$top/packaging/debian/lintian-overrides.txt" \
    "$out"/rayo_*.changes
ls "$out"/*.deb | sed 's|.*/|  |'

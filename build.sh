#!/bin/sh
# SPDX-License-Identifier: MIT
# build.sh - the first README command: install what is missing (Debian),
# build rayo in ./build with warnings as errors, then run rayo-info and the
# example.  Safe to run again: it only does what is not done yet.
set -eu
cd "$(dirname "$0")"
. ./apt-install.sh

# Packages the build needs, and the ones that let optional backends and the
# benchmark references build and be tested (Vulkan on lavapipe, BLAS), and the
# ABI guard (abigail-tools: tests/test-abi.sh), and the Python package's tests
# (python3-numpy, python3-pytest: tests/test-python.sh).
PACKAGES="build-essential autoconf automake libtool libtool-bin autoconf-archive pkg-config
libinih-dev libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers
libopenblas-dev libblis-dev abigail-tools python3-numpy python3-pytest"

missing=""
for p in $PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    # shellcheck disable=SC2086 # one word per package
    apt_install ./build.sh $missing || exit 1
fi

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
    echo "build.sh: generating configure (autoreconf)"
    autoreconf -fi >/dev/null
fi
mkdir -p build
if [ ! -f build/Makefile ]; then
    (cd build && ../configure --enable-werror)
fi
make -C build -j"$(nproc)"

echo
echo "==== rayo-info ===="
build/tools/rayo-info
echo
echo "==== example: softmax of a matrix product ===="
build/examples/softmax-matmul

#!/bin/sh
# SPDX-License-Identifier: MIT
# test-python.sh - the Python package's tests (python/tests, pytest) against
# this build's librayo.  SKIP (77) with the reason when no Python 3 here has
# numpy and pytest (Debian: python3-numpy python3-pytest).
set -u
for py in ${PYTHON:-} python3 /usr/bin/python3; do
    if "$py" -c 'import numpy, pytest' >/dev/null 2>&1; then
        python=$py
        break
    fi
done
if [ -z "${python:-}" ]; then
    echo "SKIP: no python3 with numpy and pytest (install python3-numpy python3-pytest)"
    exit 77
fi
RAYO_LIBRARY=$abs_top_builddir/core/.libs/librayo.so.0
export RAYO_LIBRARY
# A cross build's librayo (aarch64 under qemu) is not for this interpreter.
machine() { readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'; }
py_bin=$(readlink -f "$(command -v "$python")")
if [ -f "$RAYO_LIBRARY" ] && [ "$(machine "$RAYO_LIBRARY")" != "$(machine "$py_bin")" ]; then
    echo "SKIP: librayo is built for $(machine "$RAYO_LIBRARY"), this Python for $(machine "$py_bin")"
    exit 77
fi
# A sanitizer build's librayo needs the sanitizer's runtime loaded first,
# which a Python interpreter does not do; the normal build runs these tests.
if readelf -d "$RAYO_LIBRARY" 2>/dev/null | grep -q 'NEEDED.*lib[at]san'; then
    echo "SKIP: librayo is built with a sanitizer: Python cannot load it without preloading the runtime"
    exit 77
fi
# -p no:cacheprovider: write nothing into the (possibly read-only) source tree.
exec "$python" -B -m pytest -q -p no:cacheprovider -rs "$abs_top_srcdir/python/tests"

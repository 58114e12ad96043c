#!/bin/sh
# SPDX-License-Identifier: MIT
# test-vulkan-probe.sh - where Vulkan is missing, the vulkan backend is
# listed as unavailable with the reason, and nothing else breaks:
#   - the loader library is absent ([backend.vulkan] library = a file that
#     does not exist stands in for a machine without libvulkan.so.1);
#   - the loader finds no driver (VK_DRIVER_FILES / VK_ICD_FILENAMES name a
#     file that does not exist): "no Vulkan device".
# The same checks run on any machine, GPU or not.
builddir=${abs_top_builddir:-$(pwd)}
probe=$builddir/tests/test-vulkan
[ -e "$probe" ] || { echo "ERROR: $probe not built" >&2; exit 99; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp XDG_CACHE_HOME=$tmp/cache
export XDG_CONFIG_HOME XDG_CACHE_HOME
fail=0

echo "# no loader library"
"$probe" --expect-unavailable "libvulkan-missing.so.1 not found" \
    '[backend.vulkan]\nlibrary = libvulkan-missing.so.1' || fail=1

echo "# a loader but no driver"
if "$probe" --expect-unavailable "not found" >/dev/null 2>&1; then
    echo "ok: libvulkan.so.1 itself is absent here: the driver case is the same reason"
else
    VK_DRIVER_FILES=$tmp/none.json VK_ICD_FILENAMES=$tmp/none.json \
        "$probe" --expect-unavailable "no Vulkan device" || fail=1
fi
echo "# test-vulkan --probe leaves no scratch folder behind"
mkdir "$tmp/t"
TMPDIR=$tmp/t "$probe" --probe >/dev/null 2>&1
left=$(ls -A "$tmp/t")
if [ -n "$left" ]; then echo "FAIL: test-vulkan --probe left $left in TMPDIR"; fail=1; else echo "ok: nothing left"; fi
[ $fail -eq 0 ] && echo "3 passed, 0 failed" || echo "FAIL"
exit $fail

#!/bin/sh
# SPDX-License-Identifier: MIT
# test-vulkan-conform.sh - rayo-conform on the vulkan plugin of this build
# tree (every op against the float64 reference and its accuracy contract),
# with VK_LAYER_KHRONOS_validation enabled through [backend.vulkan]
# validation = yes: any validation message fails the call it came in, and
# this script also fails if one was logged.  Skipped, with the reason, where
# no Vulkan device exists.  On lavapipe (CPU) this is the CI run.  All
# sizes (test-conform.sh leaves vulkan to this test); RAYO_CONFORM_ARGS adds
# options (--quick in distcheck and under the sanitizers), RAYO_CONFORM_SEED
# replays a run.  RAYO_TEST_PIPELINE_CACHE names a directory to keep the
# compiled pipelines in (XDG_CACHE_HOME) instead of a fresh one: lavapipe
# spends most of a cold run compiling them (~95% of the attention cases'
# time), so CI shares one directory between this test and distcheck's.
builddir=${abs_top_builddir:-$(pwd)}
plugin=$builddir/plugins/vulkan/.libs/rayo-vulkan.so
conform=$builddir/tools/rayo-conform
probe=$builddir/tests/test-vulkan
for f in "$plugin" "$conform" "$probe"; do
    [ -e "$f" ] || { echo "ERROR: $f not built" >&2; exit 99; }
done

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp XDG_CACHE_HOME=${RAYO_TEST_PIPELINE_CACHE:-$tmp/cache}
export XDG_CONFIG_HOME XDG_CACHE_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU RAYO_LOG

"$probe" --probe
rc=$?
[ $rc -eq 0 ] || exit $rc        # 77: SKIP, the reason printed above

printf '[backend.vulkan]\nvalidation = yes\n' >"$tmp/validation.conf"
if "$probe" --expect-unavailable "is not installed" '[backend.vulkan]\nvalidation = yes' >/dev/null; then
    echo "FAIL: VK_LAYER_KHRONOS_validation is not installed (package vulkan-validationlayers):"
    echo "      the conformance run must have the validation layer"
    exit 1
fi

RAYO_LOG=info RAYO_CONFIG=$tmp/validation.conf "$conform" ${RAYO_CONFORM_ARGS:-} \
    "$plugin" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
if ! grep -q "validation on" "$tmp/out"; then
    echo "FAIL: the vulkan backend did not report validation on"
    exit 1
fi
if grep -q "validation:" "$tmp/out"; then
    echo "FAIL: the validation layer reported messages (above)"
    exit 1
fi
exit $rc

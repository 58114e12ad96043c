#!/bin/sh
# SPDX-License-Identifier: MIT
# test-abi.sh - the ABI guard: librayo.so and the plugin ABI (a plugin built
# from the template) are compatible with the baselines committed in
# packaging/abi/, and the guard is shown to fail on two deliberate breaks
# (a removed function, a field inserted in the plugin descriptor).
# After a deliberate ABI change: `make abi-baseline`, and commit the result.
set -e
"$abs_top_srcdir/packaging/abi-check.sh" "$abs_top_builddir"
exec "$abs_top_srcdir/packaging/abi-check.sh" "$abs_top_builddir" --prove

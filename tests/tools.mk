# SPDX-License-Identifier: MIT
# rayo-bench and rayo-conform (tools/): what they report, their options, and
# their man pages against --help.
dist_noinst_SCRIPTS += tests/test-bench.sh tests/test-conform-options.sh tests/test-tool-manpages.sh
TESTS += tests/test-bench.sh tests/test-conform-options.sh tests/test-tool-manpages.sh

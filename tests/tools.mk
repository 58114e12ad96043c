# rayo-bench and rayo-conform (tools/): what they report, their options, and
# their man pages against --help.
dist_noinst_SCRIPTS += tests/test-conform-options.sh
TESTS += tests/test-conform-options.sh

# SPDX-License-Identifier: MIT
# tests for the avx512 backend (built only where the backend is; each test
# skips, with the reason, where the CPU or OS lacks AVX-512).
if BUILD_AVX512
# Every op through rayo-conform; again with tiny sgemm blocks (every edge
# tile and k block crossed) and with streaming stores from 4 KiB on.
dist_noinst_SCRIPTS += tests/test-avx512-conform.sh
TESTS += tests/test-avx512-conform.sh

# Refusal by RAYO_CPU_DISABLE=avx512f (the reason names it, ops go to avx2),
# ranking above avx2, and the config that keeps avx2 first.
dist_noinst_SCRIPTS += tests/test-avx512-info.sh
TESTS += tests/test-avx512-info.sh
endif

# conform-pending.sh - sourced by test-conform.sh and test-vulkan-conform.sh:
# groups of conformance cases (rayo-conform --skip) that a backend is known
# to fail while its fix is pending.  Skipped cases are printed as skipped,
# never counted as passed.  Remove an entry when the fix lands.
#
# Issue 11: vulkan's sum, dot and axpy still overflow in float where the
# float64 result is finite (partial sums past FLT_MAX; alpha x past FLT_MAX).
# Every other group of issue 11 passes on vulkan since its row/gemv/matmul fix.
vulkan_pending="overflow"
vulkan_pending_reason="issue 11, vulkan sum/dot/axpy overflow fix pending"

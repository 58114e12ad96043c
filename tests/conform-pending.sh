# conform-pending.sh - sourced by test-conform.sh and test-vulkan-conform.sh:
# groups of conformance cases (rayo-conform --skip) that a backend is known
# to fail while its fix is pending.  Skipped cases are printed as skipped,
# never counted as passed.  Remove an entry when the fix lands.
#
# Issue 11: long sums (lavapipe's loop limit, float accumulation), rows with a
# large offset, values near FLT_MAX, subnormal divisors and rows, eps = 0,
# gamma ~ 100 / beta ~ +-100, and the layernorm case of seed 2686411465.
vulkan_pending="long-reduction,offset,overflow,subnormal,eps0,affine,regression"
vulkan_pending_reason="issue 11, vulkan fix pending"

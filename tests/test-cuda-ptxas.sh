#!/bin/sh
# SPDX-License-Identifier: MIT
# test-cuda-ptxas.sh - assembles every PTX module the generator emits with
# ptxas: the sm_80 modules for sm_80 and sm_90, the sm_90 modules for sm_90,
# an arch-specific module (.target sm_90a: wgmma) for sm_90a only.
# PTXAS and GEN_PTX come from the build (the wrapper tests/test-cuda-ptxas);
# without ptxas the test is skipped after the one check that needs none (the
# gemv8 kernels' .minnctapersm).  ptxas reports the file and line of any
# error; its resource report (registers, spills) is kept in the log.
# RAYO_PTXAS_DONE (a reason) skips it where another build of the same tree
# already assembled the same PTX (the cross and distcheck builds in CI:
# tests/test-ptx-golden shows their PTX is byte for byte the native build's).
if [ -n "${RAYO_PTXAS_DONE:-}" ]; then
    echo "SKIP: $RAYO_PTXAS_DONE"
    exit 77
fi
gen=${GEN_PTX:-ptx/gen-ptx}
ptxas=${PTXAS:-}
if [ -z "$ptxas" ]; then
    ptxas=$(command -v ptxas 2>/dev/null || true)
fi
if [ ! -x "$gen" ]; then
    echo "ERROR: the PTX generator $gen was not built" >&2
    exit 99
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
"$gen" --ptx-dir "$tmp" || { echo "FAIL: gen-ptx --ptx-dir" >&2; exit 1; }

# Every gemv8 kernel carries .minnctapersm 2 (checked without ptxas too):
# under .maxntid 512 alone the driver's JIT may take up to 128 registers (it
# took 126 on an H200) and run one block per SM where the plugin plans two.
gemv8_directives() {
    awk '/^\.visible \.entry gemv8/ { name = $3; sub(/\(.*/, "", name); seen = 0; next }
         name != "" && /^\.minnctapersm 2$/ { seen = 1 }
         name != "" && /^\{/ { if (!seen) { print "FAIL: " name " lacks .minnctapersm 2"; bad = 1 }; n++; name = "" }
         END { if (n < 9) { print "FAIL: " n + 0 " gemv8 kernels, expected 9"; bad = 1 }; exit bad }' "$1"
}
for f in "$tmp"/infer-sm80.ptx "$tmp"/infer-sm90.ptx; do
    gemv8_directives "$f" || exit 1
done

if [ -z "$ptxas" ] || [ ! -x "$ptxas" ]; then
    echo "SKIP: ptxas not found (configure --with-cuda=DIR, or put ptxas on PATH); the gemv8 directives are right"
    exit 77
fi

# The plugin launches the gemv8 kernels two blocks of 512 threads per SM as
# one wave (plugins/cuda/cuda-infer.c): each may take at most 64 registers.
gemv8_fit() {
    awk '/Compiling entry function .gemv8/ { name = $7 }
         name != "" && /Used [0-9]+ registers/ {
             for (i = 1; i < NF; i++) if ($i == "Used") regs = $(i + 1)
             if (regs > 64) { print "FAIL: " name " takes " regs " registers: one block of 512 threads per SM"; bad = 1 }
             name = "" }
         END { exit bad }' "$1"
}

count=0
fail=0
for f in "$tmp"/*.ptx; do
    case $f in
    *-sm80.ptx) archs="sm_80 sm_90" ;;
    *-sm90.ptx) archs="sm_90"
        grep -q "^\.target sm_90a" "$f" && archs="sm_90a" ;;
    *) echo "FAIL: unexpected file $f"; fail=1; continue ;;
    esac
    for arch in $archs; do
        count=$((count + 1))
        if "$ptxas" -arch="$arch" -v "$f" -o "$tmp/out.cubin" >"$tmp/log" 2>&1; then
            spills=$(grep -c "[1-9][0-9]* bytes spill" "$tmp/log")
            echo "ok: $(basename "$f") -arch=$arch ($spills kernels with spills)"
            gemv8_fit "$tmp/log" || fail=1
        else
            echo "FAIL: ptxas -arch=$arch $(basename "$f"):"
            cat "$tmp/log"
            fail=1
        fi
    done
done
# One kernel of each kind must exist in the output (a generator that emits
# nothing would otherwise pass).
for k in ew_add_v4 ew_gelu_s1 red_argmax_final row_layernorm sgemm_general sgemm_nn_k8_async tf32_128x128_w2x2_r gemv_t_part; do
    grep -q "\.entry $k(" "$tmp"/*-sm80.ptx || { echo "FAIL: kernel $k missing"; fail=1; }
done
for k in wg_tf32_128x256 wg_f16_nn_128x256 wg_bf16_tt_128x128; do
    grep -q "\.entry $k(" "$tmp"/wgmma-sm90.ptx || { echo "FAIL: kernel $k missing"; fail=1; }
done
echo "$count assemblies"
[ "$count" -ge 18 ] || { echo "FAIL: expected at least 18 assemblies"; fail=1; }
exit $fail

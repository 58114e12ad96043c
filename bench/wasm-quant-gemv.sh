#!/bin/sh
# SPDX-License-Identifier: MIT
# wasm-quant-gemv.sh - gemv with quantized and half weights, the wasm
# (SIMD128) side module against the scalar side module, both under node in
# the same runs: the figure of doc/benchmarks-wasm.md.
#
#   bench/wasm-quant-gemv.sh [WASM_OUT]     (default: build-wasm/wasm-build)
#
# Needs `make wasm wasm-bench` done in the build tree (WASM_OUT/rayo-bench).
# rayo-bench times each backend directly (rayo_run_on: no fallback); its cell
# is the median of REPS samples (default 11) of >= 20 ms.  The script
# repeats the whole set RUNS times (default 5), scalar and wasm alternating,
# and keeps the lowest per cell: on a shared machine the lowest is the run
# least disturbed (on a busy one, REPS=1 RUNS=15 keeps the best of 15 single
# samples).  SIZE (default 1024x4096: rows x columns, 4 to 8 MB of weights)
# and DTYPES (default q8_0 q4_0 q4_k q6_k f16 bf16) choose the cases.  Prints a markdown table; the raw rows go to
# WASM_OUT/bench-quant-gemv.csv.
set -eu
srcdir=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$srcdir/build-wasm/wasm-build}
runs=${RUNS:-5}
reps=${REPS:-11}
size=${SIZE:-1024x4096}
dtypes=${DTYPES:-q8_0 q4_0 q4_k q6_k f16 bf16}
bench=$out/rayo-bench
if [ ! -x "$bench" ]; then
    echo "wasm-quant-gemv.sh: $bench not found: run 'make wasm wasm-bench' in the build tree" >&2
    exit 1
fi
csv=$out/bench-quant-gemv.csv
: > "$csv"
run=1
while [ "$run" -le "$runs" ]; do
    for dt in $dtypes; do
        "$bench" --ops gemv --dtype "$dt" --sizes "$size" --backends scalar,wasm --reps "$reps" \
            --csv "$out/bench-one.csv" > /dev/null 2>"$out/bench-one.log" ||
            { cat "$out/bench-one.log" >&2; exit 1; }
        tail -n +2 "$out/bench-one.csv" >> "$csv"
    done
    run=$((run + 1))
done
rm -f "$out/bench-one.csv" "$out/bench-one.log"

# CSV rows: op,backend,size ("RxC dtype"),ns_per_call,gb_per_s,...
echo "gemv $size, lowest of $runs runs of the median of $reps samples, node $(node --version)" \
    "($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo
echo "| weights | scalar (wasm) | wasm SIMD128 | SIMD128 GB/s | SIMD128 speed-up |"
echo "|---|---|---|---|---|"
awk -F, -v order="$dtypes" '
    { split($3, s, " "); key = s[2] SUBSEP $2
      if (!(key in best) || $4 + 0 < best[key]) { best[key] = $4 + 0; gbs[key] = $5 } }
    END {
        n = split(order, dts, " ")
        for (i = 1; i <= n; i++) {
            sc = best[dts[i] SUBSEP "scalar"]; w = best[dts[i] SUBSEP "wasm"]
            if (!sc || !w) continue
            printf "| %s | %.2f ms | %.2f ms | %s | %.2fx |\n", dts[i], sc / 1e6, w / 1e6, gbs[dts[i] SUBSEP "wasm"], sc / w
        }
    }' "$csv"

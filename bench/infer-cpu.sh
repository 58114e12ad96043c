#!/bin/sh
# SPDX-License-Identifier: MIT
# infer-cpu.sh - the CPU inference figures in one run: Q4_0, Q8_0, Q4_K and
# Q6_K gemv 2048 x 2048 (weights in the last-level cache: hot) and 4096 x
# 11008 (cold: its references stream from memory; SIZES to change them), and
# attention decode (32 heads, 4 KV heads, head dim 64, f16 cache of 4096)
# on the x86 backends at 1 and 2 threads, each rayo-bench
# call with its read / copy / triad references measured in the same process.
#
#   bench/infer-cpu.sh [BUILD]     (default build/)
#
# One thread is timed in process CPU time, two in wall time.  Run it on an
# otherwise idle machine: a ratio from a loaded machine says nothing.
set -eu
b=${1:-build}
backends=${BACKENDS:-avx2,avx512}
sizes=${SIZES:-2048x2048,4096x11008}
echo "load average: $(cat /proc/loadavg)"
for t in 1 2; do
    clock=cpu
    [ "$t" = 1 ] || clock=wall
    for p in relaxed strict; do
        for dt in q4_0 q8_0 q4_k q6_k; do
            "$b/tools/rayo-bench" --ops gemv --dtype $dt --sizes "$sizes" --backends "$backends" \
                --threads $t --clock $clock --reps 7 --precision $p 2>/dev/null | grep -E '^(gemv|read|copy|triad)'
        done
    done
    "$b/tools/rayo-bench" --ops attention --dtype f16 --sizes 4096 --backends "$backends" \
        --threads $t --clock $clock --reps 5 --min-ms 50 2>/dev/null | grep -E '^(attention|triad)'
done

#!/bin/sh
# SPDX-License-Identifier: MIT
# llama-cpu.sh - rayo-llama on a CPU backend against llama.cpp (node-llama-cpp's
# prebuilt CPU build) on the same GGUF files, in one run: a prompt of PROMPT
# tokens (one pass), then DECODE greedy tokens.  For every file and thread count
# the two run interleaved (rayo, llama.cpp, rayo, ...) RUNS times; the table has
# the best speed of each and their ratios (rayo / llama.cpp), by wall clock and
# per CPU-second of each process (tokens / CPU time of every thread: on a
# machine shared with other work it is what a 1-thread run would give alone),
# with the load average before and after each row.
#
# usage: bench/llama-cpu.sh [MODEL.gguf ...]
#   With no file: TinyLlama-shaped Q4_0, Q8_0 and Q4_K_M-like files made by
#   gguf-make (random weights) in LLAMA_BENCH_MODELS (default
#   $builddir/llama-bench-models; made once, kept); SCHEMES (default
#   "q4_0 q8_0 q4_k_m") picks them.
# Environment:
#   BACKEND   the rayo backend (default avx2)       THREADS  thread counts ("1 2")
#   RUNS      runs of each, best kept (3)            PROMPT, DECODE  tokens (128, 64)
#   PRECISION rayo-llama --precision (default: its default, relaxed)
#   RAYO_LLAMA_ARGS  more rayo-llama options (default none: the model resident
#             in the backend's buffers, rayo-llama's default on a CPU backend)
#   LLAMA_CPP_LOADS  "mmap no-mmap" (default): each llama.cpp run is one run per
#             way of loading the weights (through the file's mapping, its
#             default, or read into memory it allocates), and each phase keeps
#             the best of them all, with the way that gave it; or one of the two
#   NODE_LLAMA_CPP_MODULES  the node_modules holding node-llama-cpp (default
#             build-llamacpp/node_modules in the source tree:
#             `mkdir -p build-llamacpp && cd build-llamacpp && npm install node-llama-cpp@3.22.1`)
#   RAYO_LLAMA, GGUF_MAKE   the programs (default $builddir/examples/llama/...)
#   PIN       CPUs to pin both programs to, comma-separated (taskset -c): a
#             T-thread row runs on the first T of them (default: not pinned).
#             On a machine with more cores than threads this keeps the two on
#             the same cores, so the other cores' load matters less.
# node is the first one on PATH.  The script runs from a copy of bench/ with
# these two files alone (srcdir = its folder's parent) when every program is
# named as above.
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${abs_top_builddir:-$srcdir/build}
rl=${RAYO_LLAMA:-$builddir/examples/llama/rayo-llama}
make_gguf=${GGUF_MAKE:-$builddir/examples/llama/gguf-make}
modules=${NODE_LLAMA_CPP_MODULES:-$srcdir/build-llamacpp/node_modules}
models_dir=${LLAMA_BENCH_MODELS:-$builddir/llama-bench-models}
backend=${BACKEND:-avx2} threads=${THREADS:-1 2} runs=${RUNS:-3}
prompt=${PROMPT:-128} decode=${DECODE:-64}
bench_mjs=$srcdir/bench/llama-speed-llamacpp.mjs
pin=${PIN:-}
loads=${LLAMA_CPP_LOADS:-mmap no-mmap}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

"$rl" --backends >/dev/null 2>&1 || { echo "ERROR: $rl does not run"; exit 99; }
[ -f "$modules/node-llama-cpp/dist/index.js" ] ||
    { echo "ERROR: node-llama-cpp is not installed in $modules"; exit 99; }
if [ $# -eq 0 ]; then
    mkdir -p "$models_dir" || exit 99
    for scheme in ${SCHEMES:-q4_0 q8_0 q4_k_m}; do
        f=$models_dir/tinyllama-$scheme.gguf
        if [ ! -s "$f" ]; then
            echo "making $f" >&2
            "$make_gguf" --preset tinyllama --scheme $scheme -o "$f.part" 2>/dev/null && mv "$f.part" "$f" ||
                { echo "ERROR: gguf-make $scheme"; exit 99; }
        fi
        set -- "$@" "$f"
    done
fi

# The ggml CPU variant llama.cpp loads here: its libggml-cpu-*.so mapped once
# the backend is chosen (a file, not node -e: node-llama-cpp tests its binding
# in a child process that needs one).
cat >"$tmp/variant.mjs" <<'EOF'
import { pathToFileURL } from "node:url";
import fs from "node:fs";
import path from "node:path";
const entry = path.join(process.argv[2], "node-llama-cpp", "dist", "index.js");
const { getLlama } = await import(pathToFileURL(entry).href);
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const maps = fs.readFileSync("/proc/self/maps", "utf8").match(/libggml-cpu-[a-z0-9_]+\.so/g) || ["?"];
console.log([...new Set(maps)].join(" "));
await llama.dispose();
EOF
variant=$(node "$tmp/variant.mjs" "$modules" 2>/dev/null)

# pinned THREADS COMMAND...: COMMAND on the first THREADS CPUs of PIN, or as is
pinned() {
    pt=$1
    shift
    if [ -n "$pin" ]; then
        taskset -c "$(echo "$pin" | cut -d, -f1-"$pt")" "$@"
    else
        "$@"
    fi
}

# Prompt: BOS, then PROMPT - 1 ids spread over the vocabulary (as bench/llama-speed.sh).
prompt_ids() {
    vocab=$("$rl" --info "$1" 2>/dev/null | sed -n 's/.*vocab \([0-9]*\),.*/\1/p')
    [ -n "$vocab" ] || return 1
    awk -v n="$prompt" -v v="$vocab" 'BEGIN { s = "1"; for (i = 1; i < n; i++) s = s "," 3 + (i * 7919) % (v - 3); print s }'
}

# One run of each: "prompt decode prompt_cpu decode_cpu" on stdout (tokens per
# second of wall clock, then per CPU-second of the process, every thread),
# nothing when it failed (its error output is kept in $tmp/err).
run_rayo() { # model ids threads
    # shellcheck disable=SC2086 # options and their values
    pinned "$3" env RAYO_THREADS="$3" "$rl" --backend "$backend" ${PRECISION:+--precision "$PRECISION"} $RAYO_LLAMA_ARGS --ignore-eos --tokens \
        --ctx $((prompt + decode + 16)) -n $((decode + 1)) --prompt-tokens "$2" "$1" >/dev/null 2>"$tmp/err" || return
    # rayo-llama: ...: prefill N tokens R tok/s (cpu C s), decode M tokens R tok/s (cpu C s)...
    sed -n 's/.*prefill \([0-9]*\) tokens \([0-9.]*\) tok\/s (cpu \([0-9.]*\) s), decode \([0-9]*\) tokens \([0-9.]*\) tok\/s (cpu \([0-9.]*\) s).*/\2 \5 \1 \3 \4 \6/p' \
        "$tmp/err" | awk '{ printf "%s %s %.2f %.2f\n", $1, $2, $3 / $4, $5 / $6 }'
}
run_llama_cpp() { # model ids threads load
    pinned "$3" node "$bench_mjs" "$modules" "$1" "$2" "$decode" "$3" false "$4" >"$tmp/err" 2>&1 || return
    # llama.cpp: prefill N RATE cpu C decode M RATE cpu C (...)
    awk '/^llama.cpp: prefill/ { printf "%s %s %.2f %.2f\n", $4, $9, $3 / $6, $8 / $11 }' "$tmp/err"
}

# best OLD NEW: the larger, "-" counting as nothing
best() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "" || b == "-") print a; else if (a == "-" || b + 0 > a + 0) print b; else print a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2fx", a / b }'; }

table=$tmp/table
: >"$table"
for model in "$@"; do
    label=$(basename "$model" .gguf)
    ids=$(prompt_ids "$model") || { echo "ERROR: $rl --info $model"; exit 99; }
    for t in $threads; do
        load_before=$(cut -d' ' -f1 /proc/loadavg)
        r1=- r2=- r3=- r4=- l1=- l2=- l3=- l4=- lp=- ld=-
        i=0
        while [ $i -lt "$runs" ]; do
            echo "$label, $t threads, run $((i + 1)) of $runs" >&2
            set -- $(run_rayo "$model" "$ids" "$t")
            [ $# -eq 4 ] && r1=$(best "$r1" "$1") r2=$(best "$r2" "$2") r3=$(best "$r3" "$3") r4=$(best "$r4" "$4") ||
                echo "  rayo failed: $(tail -1 "$tmp/err")" >&2
            for load in $loads; do
                set -- $(run_llama_cpp "$model" "$ids" "$t" "$load")
                if [ $# -ne 4 ]; then
                    echo "  llama.cpp ($load) failed: $(tail -1 "$tmp/err")" >&2
                    continue
                fi
                [ "$(best "$l1" "$1")" = "$l1" ] || l1=$1 lp=$load
                [ "$(best "$l2" "$2")" = "$l2" ] || l2=$2 ld=$load
                l3=$(best "$l3" "$3") l4=$(best "$l4" "$4")
            done
            i=$((i + 1))
        done
        printf '| %s | %s | %s / %s (%s / %s) | %s / %s | %s / %s | %s / %s | %s, %s |\n' "$label" "$t" "$l1" "$l2" \
            "$lp" "$ld" "$r1" "$r2" "$(ratio "$r1" "$l1")" "$(ratio "$r2" "$l2")" "$(ratio "$r3" "$l3")" "$(ratio "$r4" "$l4")" \
            "$load_before" "$(cut -d' ' -f1 /proc/loadavg)" >>"$table"
        tail -1 "$table" >&2 # the row as soon as it is done, should a time limit stop the rest
    done
done

echo "prompt $prompt tokens (one pass), decode $decode tokens (greedy); best of $runs interleaved runs; tok/s by wall clock"
echo "$(uname -m), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, flags:" \
    "$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512_vnni|avx_vnni)$' | tr '\n' ' ')"
[ -z "$pin" ] || echo "both programs pinned (taskset -c) to CPUs $pin: the first T of them for T threads"
echo "rayo backend $backend${PRECISION:+, $PRECISION precision}; llama.cpp: node-llama-cpp" \
    "$(awk -F'"' '/"version"/ { print $4; exit }' "$modules/node-llama-cpp/package.json"), CPU variant ${variant:-unknown}"
echo
echo "llama.cpp: the best of its loads $loads (in brackets the one that gave each phase's best);" \
    "rayo-llama: ${RAYO_LLAMA_ARGS:-its default options (the model resident in the backend's buffers)}"
echo
echo "| file | threads | llama.cpp prompt / decode (load) | rayo prompt / decode | ratio prompt / decode | ratio per CPU-second | load 1-min before, after |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
cat "$table"

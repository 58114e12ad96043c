#!/bin/sh
# SPDX-License-Identifier: MIT
# llama-speed.sh - tokens/s of rayo-llama on GGUF files, per backend, next to
# llama.cpp (node-llama-cpp) and a PyTorch eager decode on the GPU when they are
# there, in the same run: a prefill of 512 prompt tokens (one forward pass) and a
# greedy decode of 128 tokens.  Prints a markdown table (and writes it to
# LLAMA_BENCH_OUT when set).  Not part of `make check`: it takes minutes.
#
# usage: bench/llama-speed.sh [MODEL.gguf ...]
#   With no file: TinyLlama-shaped Q4_0, Q8_0 and Q4_K_M-like files made by gguf-make
#   (random weights, 0.6-1.2 GB each) in LLAMA_BENCH_MODELS (default
#   $builddir/llama-bench-models; made once, kept).
# Environment:
#   LLAMA_BENCH_PREFILL, LLAMA_BENCH_DECODE  token counts (512, 128)
#   LLAMA_BENCH_BACKENDS  rayo backends to run (default: every loaded backend but
#                         scalar and software devices such as lavapipe)
#   LLAMA_BENCH_THREADS   RAYO_THREADS values for CPU backends (default "1 2");
#                         GPU backends run with the default pool
#   LLAMA_BENCH_ARGS      more rayo-llama options (e.g. --precision strict)
#   LLAMA_BENCH_TIMEOUT   seconds per run (default 900); a run past it is "timeout"
#   LLAMA_CPP_GPU         also run llama.cpp on this GPU backend (vulkan, cuda) when
#                         node-llama-cpp has it; CPU runs use LLAMA_BENCH_THREADS
#   NODE_LLAMA_CPP_MODULES  as tests/llama-cpp-compare.sh (default
#                         build-llamacpp/node_modules in the source tree)
#   LLAMA_BENCH_TORCH     0: no PyTorch reference (default: run it where python3
#                         has torch and a CUDA device)
#   LLAMA_BENCH_WASM      1: also rayo-llama of the WebAssembly build under node
#                         ($builddir/wasm-build/rayo-llama, made by `make wasm` and
#                         examples/llama/wasm-build.sh), single-threaded, with
#                         LLAMA_BENCH_WASM_PREFILL and _DECODE tokens (32, 16: it runs
#                         the portable C kernels for quantized weights, ~0.2 tok/s)
#   RAYO_LLAMA, GGUF_MAKE the programs (default: $builddir/examples/llama/...; on a
#                         machine with a carried build tree, point them at
#                         .libs/rayo-llama and set LD_LIBRARY_PATH and
#                         RAYO_PLUGIN_PATH as needed)
# Speeds are by wall clock; "tok/CPU-s" divides the tokens by the process's CPU
# seconds (every thread, spinning included): on a machine shared with other work it
# shows what the run would give alone, for runs that do not spin (1 thread).
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${abs_top_builddir:-$srcdir/build}
rl=${RAYO_LLAMA:-$builddir/examples/llama/rayo-llama}
make_gguf=${GGUF_MAKE:-$builddir/examples/llama/gguf-make}
modules=${NODE_LLAMA_CPP_MODULES:-$srcdir/build-llamacpp/node_modules}
models_dir=${LLAMA_BENCH_MODELS:-$builddir/llama-bench-models}
prefill=${LLAMA_BENCH_PREFILL:-512}
decode=${LLAMA_BENCH_DECODE:-128}
threads=${LLAMA_BENCH_THREADS:-1 2}
limit=${LLAMA_BENCH_TIMEOUT:-900}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

"$rl" --backends >/dev/null 2>&1 || { echo "ERROR: $rl does not run"; exit 99; }
if [ $# -eq 0 ]; then
    mkdir -p "$models_dir" || exit 99
    for scheme in q4_0 q8_0 q4_k_m; do
        f=$models_dir/tinyllama-$scheme.gguf
        if [ ! -s "$f" ]; then
            echo "making $f" >&2
            if ! "$make_gguf" --preset tinyllama --scheme $scheme -o "$f.part" 2>/dev/null; then
                echo "ERROR: gguf-make $scheme"; exit 99
            fi
            mv "$f.part" "$f" || exit 99
        fi
        set -- "$@" "$f"
    done
fi

# Backends: given, or every loaded one that is neither scalar nor a software device.
if [ -n "${LLAMA_BENCH_BACKENDS:-}" ]; then
    backends=$LLAMA_BENCH_BACKENDS
else
    backends=$("$rl" --devices 2>/dev/null | awk '$1 != "scalar" && $2 != "software" { print $1 }')
fi
is_cpu() { "$rl" --devices 2>/dev/null | awk -v b="$1" '$1 == b && $2 == "cpu" { f = 1 } END { exit !f }'; }

# llama.cpp: node >= 20 and the package, else a line saying why not.
llama_cpp=""
node_major=$(node --version 2>/dev/null | sed 's/^v\([0-9]*\).*/\1/')
if [ -z "$node_major" ] || [ "$node_major" -lt 20 ]; then
    llama_cpp="not run: node-llama-cpp needs Node >= 20 (found: ${node_major:-no node})"
elif [ ! -f "$modules/node-llama-cpp/dist/index.js" ]; then
    llama_cpp="not run: node-llama-cpp is not installed in $modules"
fi
torch_ok=0
if [ "${LLAMA_BENCH_TORCH:-1}" != 0 ] &&
   python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    torch_ok=1
fi

# Prompt: BOS, then prefill - 1 ids spread over the vocabulary.
prompt_ids() {
    vocab=$("$rl" --info "$1" 2>/dev/null | sed -n 's/.*vocab \([0-9]*\),.*/\1/p')
    [ -n "$vocab" ] || return 1
    awk -v n="$prefill" -v v="$vocab" 'BEGIN { s = "1"; for (i = 1; i < n; i++) s = s "," 3 + (i * 7919) % (v - 3); print s }'
}

table=$tmp/table
row() { printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$@" >> "$table"; }
# Why a run gave no figures: its exit status 124 (timeout) or its last line.
failure() { if [ "$1" -eq 124 ]; then echo "timeout after $limit s"; else tail -1 "$2"; fi; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.2f", n / s; else print "-" }'; }

# rayo-llama on one backend: the final line's numbers.
run_rayo() { # model ids backend threads label [program runner prefill decode]
    env_threads=${4:+RAYO_THREADS=$4}
    prog=${6:-$rl} runner=${7:-rayo $3} n_pre=${8:-$prefill} n_dec=${9:-$decode}
    # shellcheck disable=SC2086 # options and optional words
    env $env_threads timeout "$limit" "$prog" ${3:+--backend "$3"} --ignore-eos --tokens \
        --ctx $((n_pre + n_dec + 16)) -n $((n_dec + 1)) \
        --prompt-tokens "$(echo "$2" | cut -d, -f1-"$n_pre")" \
        --logits "$tmp/logits.part" --logits-steps 1 $LLAMA_BENCH_ARGS "$1" > /dev/null 2> "$tmp/err"
    rc=$?
    # the prompt's logits of the last run that went through, for the PyTorch check
    [ $rc -ne 0 ] || mv "$tmp/logits.part" "$tmp/logits"
    line=$(grep '^rayo-llama: gemv' "$tmp/err")
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        row "$5" "$runner" "${4:-auto}" "-" "-" "-" "-" "failed: $(failure $rc "$tmp/err")"
        return
    fi
    # rayo-llama: gemv ..., matmul ..., P precision, T threads: prefill N tokens R tok/s
    # (cpu C s), decode M tokens R tok/s (cpu C s)
    f() { echo "$line" | sed -n "s|$1|\\1|p"; }
    num='\([0-9.]*\)'
    cpu_pre=$(rate "$n_pre" "$(f ".*prefill .*(cpu $num s), decode.*")")
    cpu_dec=$(rate "$(f ".*decode $num tokens.*")" "$(f ".*decode .*(cpu $num s)$")")
    path=$(f '^rayo-llama: \(gemv [^:]*\): .*')
    if [ "$prog" != "$rl" ]; then # wasm: Emscripten's process CPU clock is the wall clock
        cpu_pre=- cpu_dec=- path="$path; prefill $n_pre, decode $n_dec tokens"
    fi
    row "$5" "$runner" "$(f ".* $num threads:.*")" "$(f ".*prefill [0-9]* tokens $num tok/s.*")" \
        "$(f ".*decode [0-9]* tokens $num tok/s.*")" "$cpu_pre" "$cpu_dec" "$path"
}

run_llama_cpp() { # model ids threads gpu label
    timeout "$limit" node "$srcdir/bench/llama-speed-llamacpp.mjs" "$modules" "$1" "$2" "$decode" "$3" "$4" \
        > "$tmp/cpp" 2>&1
    rc=$?
    line=$(grep '^llama.cpp: prefill' "$tmp/cpp")
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        row "$5" "llama.cpp ${4#false}" "$3" "-" "-" "-" "-" "failed: $(failure $rc "$tmp/cpp")"
        return
    fi
    # llama.cpp: prefill N RATE cpu C decode M RATE cpu C (...)
    f() { echo "$line" | awk -v i="$1" '{ print $i }'; }
    row "$5" "llama.cpp $(if [ "$4" = false ]; then echo CPU; else echo "$4"; fi)" "$3" "$(f 4)" \
        "$(f 9)" "$(rate "$(f 3)" "$(f 6)")" "$(rate "$(f 8)" "$(f 11)")" "node-llama-cpp"
}

run_torch() { # model ids label
    # shellcheck disable=SC2046 # no word or one
    timeout "$limit" python3 "$srcdir/bench/llama-torch.py" "$1" "$2" "$decode" \
        $([ -s "$tmp/logits" ] && echo "$tmp/logits") > "$tmp/torch" 2>&1
    rc=$?
    line=$(grep '^torch: prefill' "$tmp/torch")
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        row "$3" "PyTorch eager" "-" "-" "-" "-" "-" "failed: $(tail -1 "$tmp/torch")"
        return
    fi
    # torch: prefill N RATE decode M RATE (what)
    row "$3" "PyTorch eager" "-" "$(echo "$line" | awk '{ print $4 }')" \
        "$(echo "$line" | awk '{ print $7 }')" "-" "-" "$(echo "$line" | sed -n 's/[^(]*(\(.*\))$/\1/p')"
}

: > "$table"
for model in "$@"; do
    label=$(basename "$model" .gguf)
    ids=$(prompt_ids "$model") || { row "$label" "-" "-" "-" "-" "-" "-" "failed: --info"; continue; }
    rm -f "$tmp/logits"
    echo "== $label" >&2
    for be in $backends; do
        if is_cpu "$be"; then
            for t in $threads; do
                echo "   rayo $be, $t threads" >&2
                run_rayo "$model" "$ids" "$be" "$t" "$label"
            done
        else
            echo "   rayo $be" >&2
            run_rayo "$model" "$ids" "$be" "" "$label"
        fi
    done
    if [ "${LLAMA_BENCH_WASM:-0}" = 1 ]; then
        echo "   rayo wasm (node)" >&2
        wasm_rl=$builddir/wasm-build/rayo-llama
        if [ -x "$wasm_rl" ]; then
            run_rayo "$model" "$ids" "" "" "$label" "$wasm_rl" "rayo wasm (node)" \
                "${LLAMA_BENCH_WASM_PREFILL:-32}" "${LLAMA_BENCH_WASM_DECODE:-16}"
        else
            row "$label" "rayo wasm (node)" "-" "-" "-" "-" "-" "not built: make wasm, then examples/llama/wasm-build.sh"
        fi
    fi
    if [ -z "$llama_cpp" ]; then
        for t in $threads; do
            echo "   llama.cpp CPU, $t threads" >&2
            run_llama_cpp "$model" "$ids" "$t" false "$label"
        done
        if [ -n "${LLAMA_CPP_GPU:-}" ]; then
            echo "   llama.cpp $LLAMA_CPP_GPU" >&2
            run_llama_cpp "$model" "$ids" 1 "$LLAMA_CPP_GPU" "$label"
        fi
    fi
    if [ $torch_ok = 1 ]; then
        echo "   PyTorch" >&2
        run_torch "$model" "$ids" "$label"
    fi
done

{
    echo "prefill $prefill tokens (one pass), decode $decode tokens (greedy); speeds in tokens/s by wall clock"
    echo "$(uname -m), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    [ -z "$llama_cpp" ] || echo "llama.cpp $llama_cpp"
    [ $torch_ok = 1 ] || echo "PyTorch reference not run (no python3 with torch and a CUDA device, or LLAMA_BENCH_TORCH=0)"
    echo
    echo "| model | runner | threads | prefill tok/s | decode tok/s | prefill tok/CPU-s | decode tok/CPU-s | path |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    cat "$table"
} > "$tmp/out"
cat "$tmp/out"
[ -z "${LLAMA_BENCH_OUT:-}" ] || cp "$tmp/out" "$LLAMA_BENCH_OUT"

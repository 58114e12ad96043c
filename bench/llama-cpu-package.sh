#!/bin/bash
# SPDX-License-Identifier: MIT
# llama-cpu-package.sh - bench/llama-cpu.sh on a machine that has neither node,
# node-llama-cpp nor a build of rayo, and no network (the GPU machine's CPU):
# one folder holds everything the run needs.
#
#   bench/llama-cpu-package.sh pack [BUILD] [DIR]    here: DIR (default
#       .gpu-llama-cpu) gets librayo, the scalar, avx2 and avx512 plugins,
#       rayo-llama and gguf-make from BUILD (default build/, built with generic
#       flags), libinih, bench/llama-cpu.sh with its .mjs, this script, the node
#       on PATH (xz; it needs only libc, libstdc++ and libgcc) and the
#       node_modules of NODE_LLAMA_CPP_MODULES (default build-llamacpp/node_modules)
#       with only node-llama-cpp's x64 CPU binaries (tar.xz, about 6 MB):
#       about 35 MB in all.
#   DIR/llama-cpu-package.sh run [SECONDS]            there: unpacks node and the
#       modules into /tmp/llama-cpu (or LLAMA_CPU_TMP), makes the three GGUF files
#       there, pins both programs to two CPUs of two cores other than the first
#       (PIN), and runs bench/llama-cpu.sh for each of BACKENDS (default
#       "avx512 avx2") with RUNS (default 3) and THREADS ("1 2") on the files
#       of SCHEMES (default "q4_0 q8_0 q4_k_m"), each stopped
#       when SECONDS (default 400) are spent; every row is printed as soon as it
#       is done.  lscpu, the busiest processes and the load average come first;
#       logs and tables in $OUT (or /tmp/llama-cpu-out).
# node-llama-cpp runs with build "never" and gpu false: it downloads and builds
# nothing.
set -u

pack() {
    build=${1:-build} dir=${2:-.gpu-llama-cpu}
    modules=${NODE_LLAMA_CPP_MODULES:-build-llamacpp/node_modules}
    [ -f "$modules/@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node" ] ||
        { echo "pack: no x64 CPU build of node-llama-cpp in $modules" >&2; exit 1; }
    rm -rf "$dir" && mkdir -p "$dir/lib" "$dir/bench" || exit 1
    for f in core/.libs/librayo.so.0 plugins/scalar/.libs/rayo-scalar.so plugins/avx2/.libs/rayo-avx2.so \
        plugins/avx512/.libs/rayo-avx512.so; do
        cp -L "$build/$f" "$dir/lib/" || exit 1
    done
    cp -L "$(ldd "$dir/lib/librayo.so.0" | awk '/libinih/ { print $3 }')" "$dir/lib/" || exit 1
    cp -L "$build/examples/llama/.libs/rayo-llama" "$build/examples/llama/.libs/gguf-make" "$dir/" || exit 1
    cp "$0" "$dir/" && cp "$(dirname "$0")/llama-cpu.sh" "$(dirname "$0")/llama-speed-llamacpp.mjs" "$dir/bench/" || exit 1
    xz -9 -c "$(command -v node)" >"$dir/node.xz" || exit 1
    # every module but the GPU and Arm builds, and the llama.cpp sources (for building only)
    tar -C "$(dirname "$modules")" -cf - --exclude='node_modules/@node-llama-cpp/linux-x64-*' \
        --exclude='node_modules/@node-llama-cpp/linux-arm*' --exclude='node_modules/.bin' \
        --exclude='node-llama-cpp/llama/gitRelease.bundle' "$(basename "$modules")" |
        xz -9 >"$dir/modules.tar.xz" || exit 1
    du -sh "$dir"
}

# unxz FILE: FILE unpacked on stdout, by python3 where there is no xz
unxz() {
    xz -dc "$1" 2>/dev/null || python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$1"
}

# unpack: node, the modules and the three GGUF files in $tmp, side by side
unpack() {
    mkdir -p "$tmp/bin" "$tmp/models"
    pids=
    [ -x "$tmp/bin/node" ] || { unxz "$dir/node.xz" >"$tmp/bin/node.part" && chmod +x "$tmp/bin/node.part" &&
        mv "$tmp/bin/node.part" "$tmp/bin/node"; } &
    pids="$pids $!"
    [ -d "$tmp/node_modules" ] || unxz "$dir/modules.tar.xz" | tar -C "$tmp" -xf - &
    pids="$pids $!"
    for s in ${SCHEMES:-q4_0 q8_0 q4_k_m}; do
        f=$tmp/models/tinyllama-$s.gguf
        [ -s "$f" ] || { "$dir/gguf-make" --preset tinyllama --scheme $s -o "$f.part" >/dev/null 2>&1 &&
            mv "$f.part" "$f"; } &
        pids="$pids $!"
    done
    # shellcheck disable=SC2086 # one word per process (a bare wait would wait for tee too)
    wait $pids
}

# bench BACKEND: llama-cpu.sh for BACKEND, stopped when the time is spent
bench() {
    env BACKEND="$1" PIN="$pin" RUNS="${RUNS:-3}" THREADS="${THREADS:-1 2}" \
        NODE_LLAMA_CPP_MODULES="$tmp/node_modules" RAYO_LLAMA="$dir/rayo-llama" GGUF_MAKE="$dir/gguf-make" \
        LLAMA_BENCH_MODELS="$tmp/models" timeout $((limit - (SECONDS - start))) sh "$dir/bench/llama-cpu.sh" \
        2>"$out/$1.err" | tee "$out/$1.table"
    echo "== $1 ended at $((SECONDS - start)) s, load $(cat /proc/loadavg); rows done, failures:"
    grep -E '^\| tinyllama|failed|ERROR' "$out/$1.err" | head -20
}

run() {
    echo "== start $(date -u), load $(cat /proc/loadavg)"
    lscpu >"$out/lscpu.txt"
    grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|MHz' "$out/lscpu.txt"
    ps -eo pid,pcpu,comm --sort=-pcpu | head -6
    unpack
    echo "node $(node --version); rayo-llama backends: $("$dir/rayo-llama" --backends 2>&1 | tr '\n' ' ')"
    ls -l "$tmp/models"
    pin=${PIN:-$(lscpu -p=CPU,CORE | grep -v '^#' | awk -F, '$2 != 0 && !seen[$2]++ { print $1 }' | head -2 | paste -sd,)}
    echo "PIN=$pin; ready at $((SECONDS - start)) s, load $(cat /proc/loadavg)"
    for b in ${BACKENDS:-avx512 avx2}; do
        [ $((limit - (SECONDS - start))) -gt 25 ] && bench "$b"
    done
    echo "== end $(date -u), load $(cat /proc/loadavg)"
}

case ${1:-} in
pack) shift; pack "$@" ;;
run)
    start=$SECONDS limit=${2:-400}
    dir=$(cd "$(dirname "$0")" && pwd) tmp=${LLAMA_CPU_TMP:-/tmp/llama-cpu} out=${OUT:-/tmp/llama-cpu-out}
    mkdir -p "$out" || exit 1
    export PATH=$tmp/bin:$PATH LD_LIBRARY_PATH=$dir/lib RAYO_PLUGIN_PATH=$dir/lib
    export XDG_CACHE_HOME=$tmp/cache XDG_CONFIG_HOME=$tmp/config HOME=$tmp
    unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU RAYO_THREADS
    run 2>&1 | tee "$out/log"
    ;;
*) echo "usage: $0 pack [BUILD] [DIR] | run [SECONDS]" >&2; exit 2 ;;
esac

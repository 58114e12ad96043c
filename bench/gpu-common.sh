# SPDX-License-Identifier: MIT
# gpu-common.sh - the prologue the one-directory GPU run scripts share
# (cuda-prompt-run.sh, cuda-decode-run.sh), sourced by them, never run:
#
#   gpu_stage BUILD DIR FILE...   here: copies each FILE of the build tree
#       BUILD (a libtool program's .libs/ binary, or the file itself where
#       there is no .libs/ one) flat into a fresh DIR, with the calling
#       script and this file, so that DIR runs on its own on the GPU machine
#   gpu_env DIR LOGS              there: unpacks inih from .gl (bench/gpu-run.sh
#       prepare fetches it), points the loader and the core at DIR's
#       library and plugins, clears the settings of the environment, makes
#       LOGS and packs it into $OUT/logs.tgz when the script exits, and
#       prints the GPU, its clocks and the load
#   gpu_make_models DIR           there, in the background: random-weight
#       GGUF files in /tmp/models (TinyLlama shape q4_0, q8_0, q4_k_m; the
#       7B shape q4_0) by DIR's gguf-make; `wait` for them
# gpu-run.sh keeps its own layout (a build tree in .gpu/b).

gpu_stage() {
    gs_build=$1 gs_dir=$2
    shift 2
    rm -rf "$gs_dir" && mkdir -p "$gs_dir"
    for f in "$@"; do
        src=$gs_build/$f
        [ -f "$src" ] || src=$gs_build/$(echo "$f" | sed 's,\.libs/,,')
        [ -f "$src" ] || { echo "prepare: no $gs_build/$f (build first)" >&2; exit 1; }
        cp -L "$src" "$gs_dir/$(basename "$f")"
    done
    cp "$0" "$gs_dir/$(basename "$0")"
    cp "$(dirname "$0")/gpu-common.sh" "$gs_dir/gpu-common.sh"
}

gpu_env() {
    out=${OUT:-$PWD/gpu-out} logs=$2
    mkdir -p "$out" "$logs" /tmp/rayo-deps /tmp/models
    # shellcheck disable=SC2064 # the names now
    trap "tar -C $(dirname "$logs") -czf '$out/logs.tgz' $(basename "$logs")" EXIT
    dpkg -x .gl/libinih1_*.deb /tmp/rayo-deps
    export LD_LIBRARY_PATH=$1:/tmp/rayo-deps/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64
    export XDG_CACHE_HOME=/tmp/rayo-cache XDG_CONFIG_HOME=/tmp/rayo-config RAYO_PLUGIN_PATH=$1
    export RAYO_CUDA_PLUGIN=$1/rayo-cuda.so
    unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
    echo "load: $(cat /proc/loadavg); $(date -u)"
}

gpu_make_models() {
    for s in q4_0 q8_0 q4_k_m; do
        "$1/gguf-make" --preset tinyllama --scheme $s -o /tmp/models/tl-$s.gguf >/dev/null 2>&1 &
    done
    "$1/gguf-make" --layers 32 --embd 4096 --heads 32 --kv-heads 32 --ffn 11008 --vocab 32000 \
        --ctx 4096 --untied --scheme q4_0 -o /tmp/models/7b-q4_0.gguf >/dev/null 2>&1 &
}

#!/bin/sh
# SPDX-License-Identifier: MIT
# vulkan-ops.sh - build, check and benchmark the vulkan backend on the GPU machine.
#
#   bench/vulkan-ops.sh prepare   here (Debian 12 with the build tools):
#       builds the needed targets into build-gpu/ and downloads the
#       libvulkan1 and libinih1 packages into .gl/ (both folders are ignored
#       by git and travel to the GPU machine as carried paths)
#   bench/vulkan-ops.sh run       on the GPU machine, from the repository
#       root: unpacks the packages, runs rayo-conform for vulkan on the GPU,
#       vk-bench (sgemm, elementwise, chained batch, host round trip), a
#       matmul tile sweep, and the PyTorch/cuBLAS reference in the same run.
#       Logs and CSV go to $OUT (default ./gpu-out).  For a dry run on
#       another Vulkan device: VK_DRIVER_FILES=... BENCH_ARGS=--quick
#       TILE_N=256 TILES=64x64x16x4x4 bench/vulkan-ops.sh run
#
# The GPU machine has no autotools, glslc or Vulkan headers, so the build is
# done here; its binaries (glibc 2.36) run there.  See doc/benchmarks-vulkan.md.
set -eu
mode=${1:-run}
build=${BUILD:-build-gpu}

prepare() {
    src=$(pwd)
    mkdir -p "$build" .gl
    if [ ! -f "$build/Makefile" ]; then
        (cd "$build" && "$src/configure" --enable-werror --disable-cuda --disable-avx2 >configure.log)
    fi
    # only what the run needs (other backends may be work in progress)
    make -C "$build" -j2 plugins/vulkan/vk-shaders.h
    make -C "$build" -j2 core/librayo.la tools/rayo-info tools/rayo-conform \
        plugins/scalar/rayo-scalar.la plugins/vulkan/rayo-vulkan.la bench/vk-bench
    # the loader, and the GL dispatch libraries the NVIDIA ICD (libGLX_nvidia)
    # is linked against
    if ! ls .gl/libvulkan1_*.deb .gl/libinih1_*.deb .gl/libglvnd0_*.deb >/dev/null 2>&1; then
        (cd .gl && apt-get download libvulkan1 libinih1 libglvnd0 libegl1 libgl1 libglx0 \
            libopengl0 libgles2)
    fi
    du -sh "$build" .gl
}

run() {
    out=${OUT:-gpu-out}
    mkdir -p "$out"
    # the Vulkan loader and GL dispatch go to / (as the machine's notes say);
    # inih to a prefix
    for f in .gl/*.deb; do
        case $f in *libinih*) ;; *) dpkg -x "$f" / ;; esac
    done
    ldconfig
    mkdir -p /tmp/rayo-deps
    for f in .gl/libinih1_*.deb; do dpkg -x "$f" /tmp/rayo-deps; done
    export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
    export LD_LIBRARY_PATH="$build/core/.libs:/tmp/rayo-deps/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export XDG_CACHE_HOME=/tmp/rayo-cache
    bin=$build/tools/.libs
    plugin=$build/plugins/vulkan/.libs/rayo-vulkan.so
    bench=$build/bench/.libs/vk-bench
    [ -x "$bench" ] || bench=$build/bench/vk-bench

    # at most 8 files come back from the GPU machine: info, conform, bench.csv,
    # tiles, torch.csv, summary (the caller's tee of everything makes a 7th)
    echo "== GPU ==" | tee "$out/info.txt"
    nvidia-smi -L 2>&1 | tee -a "$out/info.txt" || true
    echo "== rayo-info ==" | tee -a "$out/info.txt"
    RAYO_LOG=info "$bin/rayo-info" 2>&1 | head -40 | tee -a "$out/info.txt"
    if ! "$bin/rayo-info" | grep -q "^  vulkan   loaded"; then
        echo "== the Vulkan loader's view ==" | tee -a "$out/info.txt"
        VK_LOADER_DEBUG=error,warn,driver "$bin/rayo-info" 2>&1 | grep -v "^  [a-z_]* *scalar" | head -60 | tee -a "$out/info.txt"
    fi

    echo "== rayo-conform (vulkan) ==" | tee "$out/conform.txt"
    conform=0
    "$bin/rayo-conform" "$plugin" >>"$out/conform.txt" 2>&1 || conform=$?
    tail -50 "$out/conform.txt"

    echo "== vk-bench =="
    "$bench" ${BENCH_ARGS:-} --csv "$out/bench.csv" 2>&1

    TILE_N=${TILE_N:-4096}
    echo "== matmul tiles ($TILE_N) ==" | tee "$out/tiles.txt"
    for t in ${TILES:-128x128x8x8x8 128x128x16x8x8}; do
        printf '[backend.vulkan]\nmatmul_tile = %s\n' "$t" >/tmp/rayo-tile.conf
        printf '%-16s ' "$t" | tee -a "$out/tiles.txt"
        RAYO_CONFIG=/tmp/rayo-tile.conf "$bench" --sgemm "$TILE_N" 2>&1 | tail -1 | tee -a "$out/tiles.txt"
    done

    echo "== matmul tiles (1024) ==" | tee -a "$out/tiles.txt"
    for t in 128x128x8x8x8 128x64x8x8x4 64x64x8x4x4; do
        printf '[backend.vulkan]\nmatmul_tile = %s\n' "$t" >/tmp/rayo-tile.conf
        printf '%-16s ' "$t" | tee -a "$out/tiles.txt"
        RAYO_CONFIG=/tmp/rayo-tile.conf "$bench" --sgemm 1024 2>&1 | tail -1 | tee -a "$out/tiles.txt"
    done
    for bk in 64 32; do
        echo "== sgemm with precision = f16 (cooperative matrix), coop_bk = $bk ==" | tee -a "$out/tiles.txt"
        printf '[backend.vulkan]\nprecision = f16\ncoop_bk = %s\n' $bk >/tmp/rayo-f16.conf
        RAYO_LOG=info RAYO_CONFIG=/tmp/rayo-f16.conf "$bench" --sgemm 1024 2>&1 | grep -i "matmul\|coop\|^ *1024" | tee -a "$out/tiles.txt"
        for n in 2048 4096 8192; do
            RAYO_CONFIG=/tmp/rayo-f16.conf "$bench" --sgemm $n 2>&1 | tail -1 | tee -a "$out/tiles.txt"
        done
    done
    echo "== PyTorch / cuBLAS on the same GPU =="
    PYTHONUNBUFFERED=1 python3 bench/torch-vulkan-ops.py "$out/torch.csv" 2>&1

    echo "== summary ==" | tee "$out/summary.txt"
    {
        grep -h "^Summary" "$out/conform.txt" || true
        cat "$out/bench.csv" "$out/torch.csv" 2>/dev/null
    } | tee -a "$out/summary.txt"
    return "$conform"
}

case $mode in
prepare) prepare ;;
run) run ;;
*) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac

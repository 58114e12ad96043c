#!/bin/sh
# SPDX-License-Identifier: MIT
# vulkan-typed-matmul.sh - the vulkan backend's typed matmul (f32 x f16 / bf16 /
# quantized B, f16 x f16, bf16 x bf16) on the GPU machine, checked and timed
# in one run: rayo-info (dispatch chains, cooperative-matrix
# extensions), test-vulkan-infer, rayo-conform --op matmul (two fresh seeds),
# then vk-bench --matmul at 512x11008x4096 (every combination) and 4096^3
# (--quick), and both again --quick with typed_matmul_transpose = yes and
# with precision = f16 (the cooperative-matrix f32 matmul).
#
#   bench/vulkan-typed-matmul.sh BUILD
#       BUILD: a build tree holding core/.libs, tools/.libs, tests/.libs and
#       plugins/vulkan/.libs; .gl/ (libvulkan1, libinih1 .debs) in the
#       current directory.
# Results go to $OUT (default ./out).  See doc/benchmarks-vulkan.md.
set -u
b=$1 out=${OUT:-out}
mkdir -p "$out" /tmp/deps
[ -d .gl ] && for f in .gl/*.deb; do case $f in *libinih*) dpkg -x "$f" /tmp/deps ;; *) dpkg -x "$f" / ;; esac; done
ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json} XDG_CACHE_HOME=/tmp/rc
export LD_LIBRARY_PATH=$b/core/.libs:/tmp/deps/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64
export RAYO_PLUGIN_PATH=$b/plugins/vulkan/.libs
plugin=$b/plugins/vulkan/.libs/rayo-vulkan.so bench=$b/bench/.libs/vk-bench
{
    nvidia-smi -L
    RAYO_LOG=info "$b"/tools/.libs/rayo-info 2>&1 | grep -E "cooperative|loaded|matmul"
    timeout 60 "$b"/tests/.libs/test-vulkan-infer > "$out/test-vulkan-infer.log" 2>&1
    echo "test-vulkan-infer rc=$?"; tail -2 "$out/test-vulkan-infer.log"
    for i in 1 2; do
        seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
        timeout 90 "$b"/tools/.libs/rayo-conform --seed "$seed" --op matmul "$plugin" 2>&1 | tail -5
    done
} > "$out/checks.txt" 2>&1
cat "$out/checks.txt"
{
    timeout 60 "$bench" --matmul 512x11008x4096 --csv "$out/mm-512.csv"
    timeout 60 "$bench" --quick --matmul 4096x4096x4096 --csv "$out/mm-4096.csv"
    for setting in "typed_matmul_transpose = yes" "precision = f16"; do
        printf '[backend.vulkan]\n%s\n' "$setting" > /tmp/setting.conf
        echo "### $setting"
        for s in 512x11008x4096 4096x4096x4096; do
            RAYO_CONFIG=/tmp/setting.conf timeout 60 "$bench" --quick --matmul "$s"
        done
    done
    nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv
} > "$out/bench.txt" 2>&1
cat "$out/bench.txt"

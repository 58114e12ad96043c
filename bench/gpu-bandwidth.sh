#!/bin/sh
# SPDX-License-Identifier: MIT
# gpu-bandwidth.sh - the memory-bound figures (row ops, gemv,
# transcendentals) on both GPU backends, old and new plugins in one run,
# then rayo-conform on both plugins (fresh seeds) and compute-sanitizer
# memcheck on `rayo-conform --quick` for cuda.
#
#   bench/gpu-bandwidth.sh DIR
#
# DIR (a folder git ignores, carried to the GPU machine) holds:
#   bin/   cuda-bench and rayo-conform (the real binaries from .libs)
#   lib/   librayo.so*
#   new/   rayo-cuda.so and rayo-vulkan.so to measure
#   old/   the same two plugins from the base branch (the "before" column)
#   debs/  libvulkan1 and libinih1 .debs (the machine has neither), and
#          libglvnd0 and friends for the NVIDIA Vulkan driver
# OUT (default ./bandwidth-out) receives the logs; a summary is printed last.
set -u
G=${1:?usage: gpu-bandwidth.sh DIR}
O=${OUT:-$PWD/bandwidth-out}
mkdir -p "$O"
here=$(cd "$(dirname "$0")" && pwd)
for f in "$G"/debs/*.deb; do case $f in *libinih*) ;; *) dpkg -x "$f" / ;; esac; done
ldconfig
mkdir -p /tmp/deps && dpkg -x "$G"/debs/libinih1_*.deb /tmp/deps
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$(cd "$G" && pwd)/lib:/tmp/deps/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64
export XDG_CACHE_HOME=/tmp/rc XDG_CONFIG_HOME=/tmp/rcfg
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU
G=$(cd "$G" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$O/info.txt" 2>&1
PYTHONUNBUFFERED=1 timeout 90 python3 "$here/torch-bandwidth.py" >"$O/torch.txt" 2>&1
for be in ${BACKENDS:-cuda vulkan}; do
    for v in new old; do
        echo "== $be $v"
        RAYO_PLUGIN_PATH=$G/$v timeout 100 "$G/bin/cuda-bench" --bandwidth --backend "$be" 2>&1 | grep -v "^csv"
    done
done >"$O/bench.txt" 2>&1
for b in cuda vulkan; do
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    (echo "== rayo-conform $b seed $seed"
     RAYO_PLUGIN_PATH=$G/new timeout 250 "$G/bin/rayo-conform" --seed "$seed" "$G/new/rayo-$b.so" 2>&1 | tail -40) \
        >"$O/conform-$b.txt" 2>&1 &
done
CS=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
(echo "sanitizer: $CS"
 RAYO_PLUGIN_PATH=$G/new timeout 250 "$CS" --tool memcheck --print-limit 20 "$G/bin/rayo-conform" --quick \
     "$G/new/rayo-cuda.so" 2>&1 | tail -25) >"$O/sanitizer.txt" 2>&1 &
wait
cat "$O/torch.txt" "$O/bench.txt"
grep -h -E "==|FAIL|Summary|ERROR SUMMARY" "$O"/conform-*.txt "$O/sanitizer.txt"

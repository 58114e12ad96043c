#!/bin/sh
# SPDX-License-Identifier: MIT
# vulkan-infer.sh - the inference shaders of the vulkan backend on the GPU
# machine: rayo-conform for their ops (fresh seed), vk-bench --gemv and
# --attention, and the
# PyTorch references of the same run (torch-infer-vulkan.py).
#
#   bench/vulkan-infer.sh DIR   DIR holds build/ (core, tools,
#       plugins/vulkan with .libs), debs/ (libvulkan1, libinih1 and the GL
#       dispatch packages the NVIDIA ICD needs) and these two scripts.
# Results go to $OUT (default ./out).  See doc/benchmarks-vulkan.md.
set -u
dir=$1 out=${OUT:-out}
mkdir -p "$out"
for f in "$dir"/debs/*.deb; do case $f in *libinih*) ;; *) dpkg -x "$f" / ;; esac; done; ldconfig
mkdir -p /tmp/deps; dpkg -x "$dir"/debs/libinih1_*.deb /tmp/deps
b=$dir/build
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$b/core/.libs:/tmp/deps/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64
export XDG_CACHE_HOME=/tmp/rc RAYO_PLUGIN_PATH=$b/plugins/vulkan/.libs
plugin=$b/plugins/vulkan/.libs/rayo-vulkan.so
{ nvidia-smi -L; "$b"/tools/.libs/rayo-info; } > "$out/info.txt" 2>&1
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
timeout 200 "$b"/tools/.libs/rayo-conform --seed "$seed" --op "${OPS:-gemv,attention}" "$plugin" > "$out/conform.txt" 2>&1
echo "conform rc=$?" >> "$out/conform.txt"
for shape in ${SHAPES:-4096x11008 11008x4096}; do
    timeout 120 "$b"/bench/.libs/vk-bench --gemv "$shape" --csv "$out/gemv-$shape.csv"
done > "$out/bench.txt" 2>&1
timeout 120 "$b"/bench/.libs/vk-bench --attention 4096 --csv "$out/attention.csv" >> "$out/bench.txt" 2>&1
PYTHONUNBUFFERED=1 timeout 120 python3 "$dir"/torch-infer-vulkan.py "$out/torch.csv" ${SHAPES:-4096x11008 11008x4096} > "$out/torch.txt" 2>&1
cat "$out"/conform.txt "$out"/bench.txt "$out"/torch.txt

#!/bin/sh
# SPDX-License-Identifier: MIT
# vulkan-gemv.sh - the vulkan backend's gemv with f16, bf16 and quantized
# weights on the GPU machine, checked and timed in one run:
# test-vulkan, test-vulkan-infer (with every f16 bit pattern through gemv),
# rayo-conform --op gemv (two fresh seeds), then vk-bench --gemv with the
# device's copy bandwidth measured first in the same process (--copies),
# for the plugin of BEFORE (optional) and of BUILD, and a few gemv settings.
#
#   bench/vulkan-gemv.sh BUILD [BEFORE]
#       BUILD, BEFORE: build trees holding core/.libs and
#       plugins/vulkan/.libs (BUILD also tools/.libs, tests/.libs,
#       plugins/scalar/.libs); .gl/ (libvulkan1, libinih1 .debs) in the
#       current directory, and in $DEBS the GL dispatch packages the NVIDIA
#       ICD needs (libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2).
# Results go to $OUT (default ./out).  See doc/benchmarks-vulkan.md.
set -u
b=$1 before=${2:-} out=${OUT:-out}
mkdir -p "$out" /tmp/deps
for f in .gl/*.deb ${DEBS:+"$DEBS"/*.deb}; do [ -f "$f" ] || continue; case $f in *libinih*) dpkg -x "$f" /tmp/deps ;; *) dpkg -x "$f" / ;; esac; done
ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json} XDG_CACHE_HOME=/tmp/rc
deps=/tmp/deps/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64
export LD_LIBRARY_PATH=$b/core/.libs:$deps
plugin=$b/plugins/vulkan/.libs/rayo-vulkan.so bench=$b/bench/.libs/vk-bench
shape=${SHAPE:-4096x11008}
if ! "$b"/tools/.libs/rayo-info | grep -q "^  vulkan   loaded"; then
    VK_LOADER_DEBUG=error,warn,driver "$b"/tools/.libs/rayo-info 2>&1 | tail -30
    exit 1
fi
{
    nvidia-smi -L
    "$b"/tools/.libs/rayo-info | head -20
    for t in ${TESTS:-test-vulkan test-vulkan-infer}; do
        timeout 120 "$b"/tests/.libs/$t > "$out/$t.log" 2>&1
        echo "$t rc=$?"; tail -3 "$out/$t.log"
    done
    for i in 1 2; do
        seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
        timeout 120 "$b"/tools/.libs/rayo-conform --seed "$seed" --op gemv "$plugin" 2>&1 | tail -6
    done
} > "$out/checks.txt" 2>&1
cat "$out/checks.txt"
{
    if [ -n "$before" ]; then
        echo "### before: $before"
        LD_LIBRARY_PATH=$before/core/.libs:$deps timeout 120 "$bench" --quick --copies \
            --gemv "$shape" --csv "$out/before.csv"
    fi
    for s in $shape ${SHAPE2:-11008x4096}; do
        echo "### after: $b, $s"
        timeout 120 "$bench" --quick --copies --gemv "$s" --csv "$out/after-$s.csv"
    done
    # settings: [backend.vulkan] lines, separated by ';'
    for setting in ${SETTINGS:-"gemv_xstage=no" "gemv_xstage=no;gemv_split=4" "gemv_wg=128"}; do
        printf '[backend.vulkan]\n%s\n' "$setting" | tr ';' '\n' > /tmp/setting.conf
        echo "### after, $setting"
        RAYO_CONFIG=/tmp/setting.conf timeout 60 "$bench" --quick --gemv "$shape" \
            --dtype "${SETTING_DTYPES:-f16,bf16,q8_0,q4_k,q4_0,q6_k}"
    done
    nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv
} > "$out/bench.txt" 2>&1
cat "$out/bench.txt"

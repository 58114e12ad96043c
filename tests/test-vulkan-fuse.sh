#!/bin/sh
# SPDX-License-Identifier: MIT
# test-vulkan-fuse.sh - the vulkan plugin's ways of recording a replayed
# decode step give the same logits, bit for bit: examples/llama decodes
# random-weight models (Q4_0, Q8_0, and a Q4_K / Q6_K mix, made by gguf-make)
# resident on vulkan at relaxed precision (its 8-bit gemvs) with every
# [backend.vulkan] record_ahead (step, moving, no), with fuse = no and with
# compile_threads = 0 (no recording ahead for the pipelines' sake: each
# compiled when its call is recorded), and the logits of the first 8 steps
# must equal the default's.  The first default run, with an empty pipeline
# cache, must have recorded calls of a batch at its first submit (their
# pipelines compiling while the rest were recorded).  A compile_threads
# that is not a number from 0 to 16 is refused with a warning (the
# default taken).  The default
# must fuse (its debug log counts the calls run in the dispatch of the one
# before), so the comparison is not between two runs of the same path: for
# the Q4_0 and Q8_0 files (gguf-make's tiny preset: 2 layers) exactly 17 a
# step, 8 a layer (the attention's rmsnorm with the q, k and v products
# and the ropes of q and k in the q and k products: 5; the feed-forward
# rmsnorm with gate, up and their swiglu: 3) and the final rmsnorm with the
# output product, where the device allows eight storage buffers per shader
# (lavapipe does; its info line says how many the plugin binds), else 11 (3
# and 2 a layer: the norms with the products only); the mix, whose tensors
# cycle through the dtypes, at least one.  The tiny files' rows of 256 are
# too short for the 8-bit path (gemv_int8.comp sums them in float): a
# q4_k_m file 1024 wide (Q4_K and Q6_K; at least one call fused) takes it,
# gate and up's Q4_K rows read 16 bytes at a time; its second layer's v
# is Q6_K (summed in float), so that layer's q and k take their ropes in
# their products and v runs alone.  Skipped, with the reason, where no Vulkan device exists.
bin=${abs_top_builddir:-$(pwd)}/examples/llama
probe=${abs_top_builddir:-$(pwd)}/tests/test-vulkan
if [ ! -x "$bin/rayo-llama" ] || [ ! -x "$bin/gguf-make" ] || [ ! -x "$probe" ]; then
    echo "ERROR: rayo-llama, gguf-make or test-vulkan not built" >&2; exit 99
fi
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU RAYO_LOG
"$probe" --probe || exit $?      # 77: SKIP, the reason printed above
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
export XDG_CONFIG_HOME="$tmp" XDG_CACHE_HOME="$tmp/cache"

# decode FILE NAME [SETTINGS]: tokens in $tmp/NAME.tok, logits in NAME.bin
decode() {
    printf '[backend.vulkan]\n%s\n' "${3:-}" >"$tmp/$2.conf"
    RAYO_LOG=debug RAYO_CONFIG=$tmp/$2.conf "$bin/rayo-llama" --backend vulkan --resident on --ignore-eos \
        --tokens -n 12 -p "Once upon a time" --logits "$tmp/$2.bin" --logits-steps 8 "$1" \
        >"$tmp/$2.tok" 2>"$tmp/$2.log"
}

status=0
for model in q4_0 q8_0 mix "q4_k_m --embd 1024 --ffn 2816 --heads 8 --kv-heads 4"; do
    scheme=${model%% *}
    file=$tmp/$scheme.gguf
    # shellcheck disable=SC2086 # the scheme and its shape options
    "$bin/gguf-make" --scheme $model --seed 5 -o "$file" 2>/dev/null || { echo "ERROR: gguf-make $model"; exit 99; }
    if ! decode "$file" default; then
        echo "FAIL: $scheme: $(tail -3 "$tmp/default.log")"; status=1; continue
    fi
    if [ "$scheme" = q4_0 ]; then # the first run: no pipeline made yet
        if grep -q "calls recorded at its first submit" "$tmp/default.log"; then
            echo "q4_0, empty pipeline cache: $(grep -m1 'calls recorded at its first submit' "$tmp/default.log" |
                sed 's/.*vulkan: //')"
        else
            echo "FAIL: q4_0: no call waited for the first submit with an empty pipeline cache"; status=1
        fi
        if decode "$file" bad "compile_threads = 17" &&
            grep -q "compile_threads = 17: not a number from 0 to 16; using" "$tmp/bad.log"; then
            echo "refused: $(grep -m1 'compile_threads = 17' "$tmp/bad.log" | sed 's/.*vulkan: //')"
        else
            echo "FAIL: compile_threads = 17 was not refused with a warning: $(tail -2 "$tmp/bad.log")"; status=1
        fi
    fi
    fused=$(sed -n 's/.*recorded ahead: [0-9]* calls, \([0-9]*\) of them.*/\1/p' "$tmp/default.log" | head -1)
    want=11
    ! grep -q '(8 storage buffers)' "$tmp/default.log" || want=17
    case $scheme in mix | q4_k_m) want=${fused:-0}; [ "$want" -gt 0 ] || want=1 ;; esac
    if [ "${fused:-0}" -eq "$want" ]; then
        echo "$scheme: $fused calls of a step fused with the one before"
    else
        echo "FAIL: $scheme: the default recording fused ${fused:-0} calls, not $want: $(grep 'recorded ahead' "$tmp/default.log")"
        status=1
    fi
    for setting in "fuse = no" "record_ahead = moving" "record_ahead = no" "compile_threads = 0"; do
        if ! decode "$file" other "$setting"; then
            echo "FAIL: $scheme, $setting: $(tail -3 "$tmp/other.log")"; status=1
        elif cmp -s "$tmp/default.bin" "$tmp/other.bin" && cmp -s "$tmp/default.tok" "$tmp/other.tok"; then
            echo "$scheme, $setting: the same tokens and logits"
        else
            echo "FAIL: $scheme, $setting: tokens or logits differ from the default's"; status=1
        fi
    done
done
exit $status

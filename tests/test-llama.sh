#!/bin/sh
# test-llama.sh - examples/llama decodes random-weight GGUF models made by
# gguf-make (every weight format; tied output; a Q4_K_M-like mix; GQA) on
# every loaded backend, each backend taking every op it has at any size,
# through the interim f32 path, through the ABI 1 ops at strict and at
# relaxed precision, and resident (the model in the backend's buffers, each
# step one batch): the greedy tokens must be the same everywhere.
builddir=${abs_top_builddir:-$(pwd)}
bin=$builddir/examples/llama
if [ ! -x $RUN "$bin/rayo-llama" ] || [ ! -x $RUN "$bin/gguf-make" ]; then
    echo "ERROR: examples/llama not built"; exit 99
fi
# In a cross build (tests/qemu-wrap.sh) the programs run under the wrapper.
RUN=${RAYO_RUN_WRAPPER:-}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU
RAYO_LOG=error
export RAYO_LOG

backends=$($RUN "$bin/rayo-llama" --backends) || { echo "FAIL: rayo-llama --backends"; exit 1; }
[ -n "$backends" ] || { echo "FAIL: no backend loaded"; exit 1; }
# shellcheck disable=SC2086 # one line of names
echo "backends:" $backends
status=0
n=24
prompt="Once upon a time, in a land far away"
for model in "mix" "mix --tied" "q4_k_m --layers 3" "q8_0 --kv-heads 4" "q4_0 --heads 8 --kv-heads 1"; do
    file=$tmp/m.gguf
    # shellcheck disable=SC2086
    $RUN "$bin/gguf-make" --scheme $model --seed 7 -o "$file" 2>/dev/null || { echo "FAIL: gguf-make $model"; exit 1; }
    ref=$($RUN "$bin/rayo-llama" -q --interim --tokens -n $n -p "$prompt" "$file") ||
        { echo "FAIL: $model: interim path"; status=1; continue; }
    distinct=$(echo "$ref" | tr ' ' '\n' | sort -u | wc -l)
    count=$(echo "$ref" | wc -w)
    echo "$model: interim: $ref"
    [ "$count" -eq $n ] || { echo "FAIL: $model: $count tokens, wanted $n"; status=1; }
    # A decoder that repeats one token would agree with any other: the models
    # are made to wander.  (A tied output favours repeating; ask for less there.)
    case $model in *tied*) want=2 ;; *) want=6 ;; esac
    [ "$distinct" -ge $want ] || { echo "FAIL: $model: only $distinct distinct tokens"; status=1; }
    for be in $backends; do
        # The interim path (f32 ops on dequantized weights): be must run the gemv.
        # The ABI 1 path: be first, the typed ops it lacks on the next backend,
        # strict and relaxed (rayo-llama's default); resident in be's buffers, where be
        # has every op the model needs.
        for path in --interim "--precision strict" "" "--resident on"; do
            # shellcheck disable=SC2086 # an option and its value
            out=$($RUN "$bin/rayo-llama" $path --backend "$be" --tokens -n $n -p "$prompt" "$file" 2>"$tmp/err")
            rc=$?
            used=$(sed -n 's/^rayo-llama: gemv \([a-z0-9_]*\) on \([a-z0-9_]*\).*/\1 on \2/p' "$tmp/err")
            label="$model on $be (${path:-relaxed})"
            if [ $rc -ne 0 ] && [ "$path" = "--resident on" ] &&
                grep -q "^rayo-llama: backend $be has no " "$tmp/err"; then
                echo "$label: not run: $(sed -n 's/^rayo-llama: //p' "$tmp/err")"
            elif [ $rc -ne 0 ] || [ "$out" != "$ref" ]; then
                echo "FAIL: $label (exit $rc): $out"; cat "$tmp/err"; status=1
            elif [ -z "$used" ] || { [ "$path" = --interim ] && [ "$used" != "f32 on $be" ]; }; then
                echo "FAIL: $label: gemv ran as '$used'"; cat "$tmp/err"; status=1
            else
                echo "$label: same tokens (gemv $used)"
            fi
        done
    done
done
# Sampling (temperature 0.9, top-k 20, seed 5): the same draw on every backend, and
# not the greedy sequence.
$RUN "$bin/gguf-make" --scheme mix --seed 11 -o "$file" 2>/dev/null || exit 99
greedy=$($RUN "$bin/rayo-llama" -q --tokens -n $n -p "$prompt" "$file")
first=""
for be in $backends; do
    out=$($RUN "$bin/rayo-llama" -q --backend "$be" --tokens -n $n --temp 0.9 --top-k 20 --seed 5 \
        -p "$prompt" "$file") || { echo "FAIL: sampling on $be"; status=1; continue; }
    [ -n "$first" ] || first=$out
    if [ "$out" != "$first" ] || [ "$out" = "$greedy" ]; then
        echo "FAIL: sampling on $be: $out (first backend: $first; greedy: $greedy)"; status=1
    else
        echo "sampling on $be: same draw, not greedy"
    fi
done
other=$($RUN "$bin/rayo-llama" -q --tokens -n $n --temp 0.9 --top-k 20 --seed 6 -p "$prompt" "$file")
[ "$other" != "$first" ] || { echo "FAIL: seeds 5 and 6 drew the same $n tokens"; status=1; }
exit $status

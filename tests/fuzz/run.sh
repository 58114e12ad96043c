#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/fuzz/run.sh - builds the libFuzzer targets of tests/fuzz/ with clang
# (ASan + UBSan) and runs each for a bounded time (FUZZ_SECONDS, default 30)
# from its seed corpus.  Needs a configured build/ (build/config.h): run after
# ./build.sh.  Exit status non-zero when a target finds a crash; the
# reproducer is left in build-fuzz/.
set -eu
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-30}
out=build-fuzz
start=$(date +%s)
if ! command -v clang >/dev/null 2>&1 || ! clang -fsanitize=fuzzer -x c -o /dev/null - <<'C' 2>/dev/null
int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }
C
then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq clang libclang-rt-dev >/dev/null
fi
[ -f build/config.h ] || { echo "fuzz: build/config.h missing: run ./build.sh first" >&2; exit 1; }
mkdir -p "$out"

# The library's sources (not its tools), straight from core/local.mk.
core_sources=$(sed -n '/^core_librayo_la_SOURCES/,/^[^\t ]/p' core/local.mk | tr ' \\\t' '\n\n\n' | grep '\.c$')
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Icore -Ibuild
 -DRAYO_BUILDING_CORE -DRAYO_PLUGINDIR=\"/nonexistent\" -DRAYO_SYSCONFDIR=\"/nonexistent\"
 -DRAYO_BUILD_DIR=\"/nonexistent\" -DRAYO_ABI_MAJOR_STR=\"1\" $(pkg-config --cflags inih)"
libs="$(pkg-config --libs inih) -ldl -lpthread -lm"

# examples/llama's GGUF reader, tokenizer and model checks (with the core,
# which lm-ops.c calls).
llama_sources="examples/llama/gguf.c examples/llama/tokenizer.c examples/llama/model.c
 examples/llama/lm-ops.c"

# fuzz_target NAME: builds and runs one target; its report goes to
# $out/report-NAME.txt, its exit status says whether it found a crash.
fuzz_target() {
    target=$1
    t0=$(date +%s)
    extra="" max_len=4096
    [ "$target" = gguf ] && extra="-Iexamples/llama $llama_sources" max_len=65536
    # shellcheck disable=SC2086
    clang $flags -o "$out/fuzz-$target" "tests/fuzz/fuzz-$target.c" $extra $core_sources $libs
    corpus="$out/corpus-$target"
    mkdir -p "$corpus"
    if [ "$target" = config ] || [ "$target" = gguf ]; then
        cp tests/fuzz/seeds-$target/* "$corpus/"
    else
        FUZZ_WRITE_SEEDS="$corpus" "$out/fuzz-plugin"
        # ELF seeds: heads of real plugins, whole and cut short.
        for so in build/tests/plugins/.libs/rayo-fake*.so build/plugins/scalar/.libs/rayo-scalar.so; do
            [ -f "$so" ] || continue
            head -c 4096 "$so" > "$corpus/head-$(basename "$so")"
            head -c 1000 "$so" > "$corpus/cut-$(basename "$so")"
        done
    fi
    log="$out/fuzz-$target.log"
    rc=0
    ASAN_OPTIONS=detect_leaks=1 "$out/fuzz-$target" -max_total_time="$seconds" -max_len=$max_len \
        -artifact_prefix="$out/crash-$target-" -print_final_stats=1 "$corpus" >"$log" 2>&1 || rc=$?
    {
        echo "==== fuzz-$target: ${seconds} s ===="
        grep -E '^(INFO: seed corpus|Done [0-9]+ runs|stat::number_of_executed_units)' "$log" || true
        if [ "$rc" -ne 0 ]; then
            tail -40 "$log"
            echo "fuzz-$target: FAILED (exit $rc); reproducer, if any: $(ls "$out"/crash-"$target"-* 2>/dev/null)"
        fi
        echo "fuzz-$target: $(( $(date +%s) - t0 )) s"
    } >"$out/report-$target.txt"
    return "$rc"
}

# The targets run side by side, as many at once as there are processors
# (each libFuzzer process runs on one), their reports printed in order.
status=0
jobs=$(nproc)
batch=""
run_batch() {
    pids=""
    for target in $batch; do
        fuzz_target "$target" &
        pids="$pids $!"
    done
    for pid in $pids; do
        wait "$pid" || status=1
    done
    for target in $batch; do
        cat "$out/report-$target.txt" 2>/dev/null || { echo "fuzz-$target: no report (build failed?)"; status=1; }
    done
    batch=""
}
for target in config plugin gguf; do
    rm -f "$out/report-$target.txt"
    batch="$batch $target"
    [ "$(echo $batch | wc -w)" -lt "$jobs" ] || run_batch
done
[ -z "$batch" ] || run_batch
echo "fuzz: $(( $(date +%s) - start )) s in all"
exit $status

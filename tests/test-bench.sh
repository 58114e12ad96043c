#!/bin/sh
# SPDX-License-Identifier: MIT
# test-bench.sh - what rayo-bench reports (never how fast: speed is not
# tested):
#   - an unknown option is named as unknown (exit 2);
#   - the memory references of a streaming op: read, copy and triad rows,
#     each marked hot or cold, and one ratio column for each;
#   - with --vs openblas and OPENBLAS_CORETYPE pinning a kernel set worse
#     than the CPU runs, a row of OpenBLAS as pinned, marked (env), and one
#     of OpenBLAS at its best (SKIP where OpenBLAS is not installed);
#   - --plot draws the references dashed, with rayo's version in the title
#     (SKIP without gnuplot).
builddir=${abs_top_builddir:-$(pwd)}
bench=$builddir/tools/rayo-bench
[ -e "$bench" ] || { echo "ERROR: $bench not found: run from the top build directory" >&2; exit 99; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
XDG_CONFIG_HOME=$tmp
export XDG_CONFIG_HOME
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU OPENBLAS_CORETYPE

failed=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
    what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failed=1; fi
}
exits() { # exits WANT GOT WHAT: checks an exit status, showing the run's stderr when it is wrong
    check "$3: exit $1 (got $2)" test "$2" -eq "$1" || true
    [ "$2" -eq "$1" ] || sed 's/^/  stderr: /' "$tmp/err"
}
quick="--reps 1 --min-ms 1 --threads 1 --backends scalar"

# 1. Usage errors.
"$bench" --bogus >/dev/null 2>"$tmp/err"
rc=$?
exits 2 "$rc" --bogus
check "--bogus: named as an unknown option" grep -q "unknown option '--bogus'" "$tmp/err"
"$bench" --reps >/dev/null 2>"$tmp/err"
check "--reps without a value: says so" grep -q -- "--reps needs a value" "$tmp/err"

# 2. Memory references, in the table and the CSV.
# shellcheck disable=SC2086 # $quick: several options
"$bench" --ops add --sizes 1048576 $quick --csv "$tmp/add.csv" >"$tmp/add" 2>"$tmp/err"
rc=$?
cat "$tmp/add"
exits 0 "$rc" add
for ref in read copy triad; do
    check "a $ref reference row, hot or cold" grep -Eq "^$ref +\\(ref (hot|cold)\\) +1048576 " "$tmp/add"
done
check "the header has read, copy and triad columns" grep -Eq '^op .* read +copy +triad' "$tmp/add"
check "add has a ratio to each reference" grep -Eq '^add +scalar +1048576 .* [0-9.]+x +[0-9.]+x +[0-9.]+x' "$tmp/add"
check "a reference row in the CSV: ten fields, hot or cold" grep -Eq '^triad,\(ref (hot|cold)\),1048576(,[^,]*){7}$' "$tmp/add.csv"
check "the CSV names the three ratios" grep -q '^op,backend,size,ns_per_call,gb_per_s,gflop_per_s,vs_read,vs_copy,vs_triad,' \
    "$tmp/add.csv"

# 3. OpenBLAS pinned by the environment, and at its best.
if ! ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so\.0'; then
    echo "SKIP (part 3): OpenBLAS is not installed (Debian: apt-get install libopenblas-dev)"
elif ! grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    echo "SKIP (part 3): this CPU runs no kernel set better than the pinned Prescott"
else
    # shellcheck disable=SC2086
    OPENBLAS_CORETYPE=Prescott "$bench" --vs openblas --ops dot --sizes 4096 $quick >"$tmp/dot" 2>"$tmp/err"
    rc=$?
    cat "$tmp/dot"
    exits 0 "$rc" "dot --vs openblas"
fi
# The installed OpenBLAS may be another architecture's (a cross-built
# rayo-bench under qemu): then there is no reference to check.
if [ -f "$tmp/dot" ] && grep -q 'reference: openblas not loaded' "$tmp/dot"; then
    echo "SKIP (part 3): rayo-bench could not load OpenBLAS (another architecture's library?)"
elif [ -f "$tmp/dot" ]; then
    check "a row of OpenBLAS as pinned, marked (env)" grep -Eq '^dot +openblas Prescott \(env\) +4096 ' "$tmp/dot"
    check "a row of OpenBLAS at its best" grep -Eq '^dot +openblas [A-Za-z0-9]+ +4096 ' "$tmp/dot"
    check "the best is not the pinned set" sh -c "! grep -Eq '^dot +openblas Prescott +4096 ' '$tmp/dot'"
    check "the header says the caller pinned it" grep -q 'OPENBLAS_CORETYPE=Prescott was set by the caller' "$tmp/dot"
    check "dot on scalar has a ratio to OpenBLAS" grep -Eq '^dot +scalar +4096 .* [0-9.]+x *$' "$tmp/dot"
fi

# 4. --plot: references dashed, the version and the machine in the title.
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "SKIP (part 4): gnuplot is not installed (Debian: apt-get install gnuplot-nox)"
else
    # shellcheck disable=SC2086
    "$bench" --ops add --sizes 1048576 $quick --plot "$tmp/plot.svg" >/dev/null 2>"$tmp/err"
    rc=$?
    exits 0 "$rc" --plot
    check "--plot: an SVG" grep -q '<svg' "$tmp/plot.svg"
    check "--plot: rayo's version in the title" grep -q "rayo-bench (rayo [0-9]" "$tmp/plot.svg"
    check "--plot: the references are dashed" grep -q 'stroke-dasharray' "$tmp/plot.svg"
fi
exit $failed

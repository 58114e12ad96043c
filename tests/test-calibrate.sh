#!/bin/sh
# SPDX-License-Identifier: MIT
# test-calibrate.sh - rayo-calibrate with a tiny time budget:
#  1. with no GPU backend loaded it exits 0, says why in plain words, and
#     writes a drop-in of comments only, which rayo's own loader reads (rayo-info
#     lists it as read, with no warning) and which sets no threshold;
#  2. with a GPU backend (fakegpu: a test plugin whose device says GPU and
#     which implements add only) it writes [op.add] offload_threshold.fakegpu,
#     nothing for ops fakegpu lacks, and rayo-info --explain cites the file,
#     the line and the value.
builddir=${abs_top_builddir:-$(pwd)}
tools=$builddir/tools
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU
XDG_CONFIG_HOME=$tmp/xdg RAYO_LOG=warn
export XDG_CONFIG_HOME RAYO_LOG
dropin=$tmp/xdg/rayo/conf.d/90-calibrated.conf
failed=0
expect() { # expect WHAT TEXT PATTERN
    if printf '%s\n' "$2" | grep -qE "$3"; then echo "ok: $1"; else
        echo "FAIL: $1: no line matching '$3' in:"; printf '%s\n' "$2"; failed=1; fi
}
refuse() { # refuse WHAT TEXT PATTERN
    if printf '%s\n' "$2" | grep -qE "$3"; then
        echo "FAIL: $1: a line matches '$3' in:"; printf '%s\n' "$2"; failed=1; else echo "ok: $1"; fi
}

# 1. No GPU.  Where a real GPU backend loads (a GPU machine), part 1 has
# nothing to show: it is skipped there and part 2 still runs.
if "$tools/rayo-info" --json 2>/dev/null | grep '"status": "loaded"' | grep -q '"device_type": "gpu"'; then
    echo "SKIP part 1: a GPU backend loads on this machine"
else
    out=$("$tools/rayo-calibrate" --budget 1 --reps 1 2>&1)
    rc=$?
    [ $rc -eq 0 ] || { echo "FAIL: rayo-calibrate without a GPU exits $rc"; failed=1; }
    expect "says why it writes no threshold" "$out" "no GPU backend is loaded on this machine"
    expect "says where it wrote" "$out" "wrote $dropin \(comments only\)"
    [ -f "$dropin" ] || { echo "FAIL: no file $dropin"; exit 1; }
    body=$(cat "$dropin")
    refuse "the drop-in has only comments" "$body" '^[^#]'
    expect "the drop-in says why" "$body" "^# No offload thresholds: no GPU backend"
    info=$("$tools/rayo-info" 2>&1)
    expect "rayo-info reads the drop-in" "$info" "$dropin +read$"
    refuse "no warning about the drop-in" "$info" "90-calibrated.conf:[0-9]+"
    explain=$("$tools/rayo-info" --explain add 1000000 2>&1)
    refuse "--explain cites no calibrated threshold" "$explain" "90-calibrated"
    rm -f "$dropin"
fi

# 2. A (fake) GPU backend.
fake=$builddir/tests/plugins/.libs/rayo-fakegpu.so
[ -f "$fake" ] || { echo "FAIL: $fake not built"; exit 1; }
mkdir -p "$tmp/xdg/rayo"
printf '[plugins]\nload = %s\n' "$fake" >"$tmp/xdg/rayo/rayo.conf"
out=$("$tools/rayo-calibrate" --budget 20 --reps 1 --max-work 65536 2>&1)
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: rayo-calibrate with fakegpu exits $rc: $out"; failed=1; }
expect "progress lines while measuring" "$out" "^rayo-calibrate: fakegpu elementwise, work size 1024: "
body=$(cat "$dropin" 2>/dev/null)
expect "a threshold for add" "$body" "^offload_threshold\.fakegpu = ([0-9]+|never)$"
sections=$(printf '%s\n' "$body" | grep -c '^\[')
[ "$sections" = 1 ] && echo "ok: one section (fakegpu implements add only)" ||
    { echo "FAIL: $sections sections in:"; printf '%s\n' "$body"; failed=1; }
expect "the section is [op.add]" "$body" '^\[op\.add\]$'
value=$(sed -n 's/^offload_threshold\.fakegpu = //p' "$dropin")
line=$(grep -n '^offload_threshold\.fakegpu' "$dropin" | cut -d: -f1)
explain=$("$tools/rayo-info" --explain add 1000 2>&1)
expect "--explain cites the drop-in, its line and the value" "$explain" \
    "threshold from \[op.add\] offload_threshold.fakegpu = $value, set by $dropin:$line$"
refuse "no warning about the drop-in" "$explain" "90-calibrated.conf:[0-9]+:"
exit $failed

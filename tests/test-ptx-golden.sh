#!/bin/sh
# SPDX-License-Identifier: MIT
# test-ptx-golden.sh - proves that the PTX of the cuda backend did not change:
# the SHA-256 of every module for every target, as ptx/gen-ptx writes it
# (--ptx-dir) and as the plugin hands it to the driver (tests/ptx-dump, built
# from the same embedded sources as the plugin), must both equal the committed
# list tests/ptx-golden.sha256.  A refactor of the generator or of the
# embedding must leave every hash as it is.
#
# When the PTX should change (a new kernel, a fixed numeric sequence), update
# the list deliberately, after tests/test-cuda-ptxas and the GPU tests pass:
#     make -C build ptx-golden-update
# and commit tests/ptx-golden.sha256 together with the generator change, the
# reason in the commit message.
#
# GEN_PTX, PTX_DUMP and GOLDEN come from the build (the wrapper
# tests/test-ptx-golden); --update rewrites GOLDEN from the generator's output.
gen=${GEN_PTX:-ptx/gen-ptx}
dump=${PTX_DUMP:-tests/ptx-dump}
golden=${GOLDEN:-tests/ptx-golden.sha256}
run=${RAYO_RUN_WRAPPER:-} # runs a host program of a cross build (tests/qemu-wrap.sh)
for p in "$gen" "$dump"; do
    if [ ! -x "$p" ]; then
        echo "ERROR: $p was not built" >&2
        exit 99
    fi
done
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/gen" "$tmp/embedded" || exit 99
"$gen" --ptx-dir "$tmp/gen" || { echo "FAIL: gen-ptx --ptx-dir"; exit 1; }
$run "$dump" "$tmp/embedded" || { echo "FAIL: ptx-dump"; exit 1; }

# One "HASH  NAME-smXX.ptx" line per file, sorted by name.
hashes() {
    (cd "$1" && LC_ALL=C sha256sum -- *.ptx) | LC_ALL=C sort -k 2
}
hashes "$tmp/gen" >"$tmp/gen.sha256" || exit 99
hashes "$tmp/embedded" >"$tmp/embedded.sha256" || exit 99

if [ "${1:-}" = "--update" ]; then
    cp "$tmp/gen.sha256" "$golden" || exit 99
    echo "wrote $golden ($(wc -l <"$golden") modules)"
    exit 0
fi
if [ ! -f "$golden" ]; then
    echo "ERROR: no golden hash list $golden" >&2
    exit 99
fi

fail=0
n=$(wc -l <"$tmp/gen.sha256")
echo "$n PTX modules generated, $(wc -l <"$tmp/embedded.sha256") embedded, $(wc -l <"$golden") in $golden"
# Every module of every target (6 modules x sm_80, sm_90 today).
[ "$n" -ge 12 ] || { echo "FAIL: expected at least 12 modules, got $n"; fail=1; }
if ! diff -u "$golden" "$tmp/gen.sha256"; then
    echo "FAIL: the generated PTX differs from $golden (lines above: - golden, + now)"
    fail=1
fi
if ! diff -u "$golden" "$tmp/embedded.sha256"; then
    echo "FAIL: the PTX the plugin embeds differs from $golden (lines above: - golden, + now)"
    fail=1
fi
if [ "$fail" -ne 0 ]; then
    echo "If the change is intended: make -C build ptx-golden-update (see this script's header)."
fi
exit $fail

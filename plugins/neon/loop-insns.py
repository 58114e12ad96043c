#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Static instruction counts of the inner loops of the neon plugin.

    aarch64-linux-gnu-objdump -d --no-show-raw-insn rayo-neon.so > neon.dis
    python3 plugins/neon/loop-insns.py neon.dis

For each kernel below, finds the main loop (the shortest backward branch
whose body holds the kernel's marker instruction often enough, and none
matching its exclusion), counts its instructions and divides by the elements
(or FMAs, or weights) one pass handles.  A marker is a mnemonic prefix, or a
regular expression on "mnemonic operands" where it starts with "^".  This
says what the code asks of a CPU, not how fast it runs: latencies, divides
and memory are not in it.  (Under qemu, timings mean nothing at all.)
"""
import re
import sys

# function, marker, how many times it must be in the loop (tells the main
# loop from the tails), units per pass, unit; optionally a label (where one
# function holds several loops) and an exclusion marker
KERNELS = [
    ("add_range", "fadd", 1, 4, "element"),
    ("axpy_range", "fmla", 1, 4, "element"),
    ("relu_range", "st", 1, 4, "element"),
    ("exp_range", "fmla", 1, 4, "element"),
    ("log_range", "fdiv", 1, 4, "element"),
    ("tanh_range", "fdiv", 1, 4, "element"),
    ("sigmoid_range", "fdiv", 1, 4, "element"),
    ("silu_range", "fdiv", 1, 4, "element"),
    ("gelu_range", "fdiv", 1, 4, "element"),
    ("gelu_tanh_range", "fdiv", 1, 4, "element"),
    ("mish_range", "fdiv", 1, 4, "element"),
    ("neon_sum_f64", "fadd", 4, 16, "element"),
    ("neon_dot_f64", "fmla", 4, 16, "element"),
    ("neon_max_f32", "fmax", 2, 8, "element"),
    ("matmul_tile", "fmla", 24, 96, "FMA: 8x12 micro-kernel, one k step"),
    # typed gemv (quant.c): one row (its dot inlined into the row kernel of
    # cpu-typed-gemv_tmpl.c), or four rows sharing x
    ("rows_q8_0", "scvtf", 8, 32, "weight: a Q8_0 block", "dot_q8_0"),
    ("dot4_q8_0", "scvtf", 8, 32, "weight: a Q8_0 block, x loaded once for 4 rows"),
    ("rows_q4_0", "scvtf", 8, 32, "weight: a Q4_0 block", "dot_q4_0"),
    ("dot4_q4_0", "scvtf", 8, 32, "weight: a Q4_0 block, x loaded once for 4 rows"),
    ("rows_q8_0_sdot", "sdot", 8, 128, "weight: a Q8_0 block of 4 rows, SDOT (relaxed)"),
    ("rows_q4_0_sdot", "sdot", 8, 128, "weight: a Q4_0 block of 4 rows, SDOT (relaxed)"),
    ("rows_q4_k", "scvtf", 8, 32, "weight: a Q4_K sub-block of 32", "dot_q4_k"),
    ("rows_q6_k", "scvtf", 8, 32, "weight: 32 values of a Q6_K block", "dot_q6_k"),
    ("rows_f16", "fcvtl", 2, 8, "weight", "dot_f16"),
    ("rows_bf16", "shll", 2, 8, "weight", "dot_bf16"),
    # infer.c and the glue it is inlined into (cpu-base/simd128-infer_tmpl.c)
    ("cpu_rope_token", "ld2", 1, 8, "element", "rope NORM"),
    ("cpu_rope_token", "fmls", 1, 8, "element", "rope NEOX", "ld2"),
    ("cpu_attn_task", "fmla", 2, 8, "MAC", "attention q.k, f32 cache", "fcvtl"),
    ("cpu_attn_task", "fcvtl", 2, 8, "MAC", "attention q.k, f16 cache"),
    ("cpu_attn_task", r"^fmla .*\.s\[", 2, 8, "MAC", "attention w v, f32 cache", "fcvtl"),
    ("cpu_attn_task", "^fcvtl .*4h", 2, 8, "MAC", "attention w v, f16 cache", "^fmla .*4s, v[0-9]+\.4s, v[0-9]+\.4s$"),
    ("swiglu_rows", "fdiv", 1, 4, "element"),
]


def parse(path):
    funcs, cur = {}, None
    for line in open(path):
        m = re.match(r"^([0-9a-f]+) <([^>]+)>:", line)
        if m:
            cur = funcs.setdefault(m.group(2), [])
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return funcs


def matches(marker, op, args):
    if marker.startswith("^"):
        return re.search(marker, f"{op} {args}") is not None
    return op.startswith(marker)


def inner_loop(ins, marker, times, exclude=None):
    best = None
    for addr, op, args in ins:
        if not (op.startswith("b.") or op in ("cbnz", "cbz", "tbnz", "tbz")):
            continue
        t = re.search(r"([0-9a-f]+) <", args)
        if not t or int(t.group(1), 16) >= addr:
            continue
        body = [i for i in ins if int(t.group(1), 16) <= i[0] <= addr]
        hits = sum(matches(marker, o, a) for _, o, a in body)
        if exclude and any(matches(exclude, o, a) for _, o, a in body):
            continue
        if hits >= times and (best is None or len(body) < len(best)):
            best = body
    return best


def main():
    funcs = parse(sys.argv[1])
    print("| kernel | loop insns | units per pass | insns per unit | fmla | fdiv | loads |")
    print("|---|---|---|---|---|---|---|")
    for name, marker, times, units, unit, *extra in KERNELS:
        label = extra[0] if extra else name
        body = inner_loop(funcs.get(name, []), marker, times, extra[1] if len(extra) > 1 else None)
        name = label
        if not body:
            print(f"| {name} | (loop not found) | | | | | |")
            continue
        ops = [o for _, o, _ in body]
        fmla = sum(o in ("fmla", "fmls") for o in ops)
        fdiv = sum(o == "fdiv" for o in ops)
        loads = sum(o.startswith("ld") for o in ops)
        print(f"| {name} | {len(body)} | {units} ({unit}) | {len(body) / units:.2f} | {fmla} | {fdiv} | {loads} |")


if __name__ == "__main__":
    main()

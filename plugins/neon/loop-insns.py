#!/usr/bin/env python3
"""Static instruction counts of the inner loops of the neon plugin.

    aarch64-linux-gnu-objdump -d --no-show-raw-insn rayo-neon.so > neon.dis
    python3 plugins/neon/loop-insns.py neon.dis

For each kernel below, finds the main loop (the shortest backward branch
whose body holds the kernel's marker instruction often enough), counts its
instructions and divides by the elements (or FMAs) one pass handles.  This
says what the code asks of a CPU, not how fast it runs: latencies, divides
and memory are not in it.  (Under qemu, timings mean nothing at all.)
"""
import re
import sys

# function, marker mnemonic, how many times it must be in the loop (tells
# the main loop from the tails), units per pass, unit
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


def inner_loop(ins, marker, times):
    best = None
    for addr, op, args in ins:
        if not (op.startswith("b.") or op in ("cbnz", "cbz", "tbnz", "tbz")):
            continue
        t = re.search(r"([0-9a-f]+) <", args)
        if not t or int(t.group(1), 16) >= addr:
            continue
        body = [i for i in ins if int(t.group(1), 16) <= i[0] <= addr]
        hits = sum(o.startswith(marker) for _, o, _ in body)
        if hits >= times and (best is None or len(body) < len(best)):
            best = body
    return best


def main():
    funcs = parse(sys.argv[1])
    print("| kernel | loop insns | units per pass | insns per unit | fmla | fdiv | loads |")
    print("|---|---|---|---|---|---|---|")
    for name, marker, times, units, unit in KERNELS:
        body = inner_loop(funcs.get(name, []), marker, times)
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

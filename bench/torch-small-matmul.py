#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuBLAS (through PyTorch) on the fp32 matmul shapes of `cuda-bench --shapes`
(small and skinny matmuls), in the same run, and the side-by-side
table.

  torch-small-matmul.py BENCH_LOG [BEFORE_LOG]

BENCH_LOG is cuda-bench --shapes's output: its "csv,shape,MxNxK TR,..." lines
name the shapes (TR: "nt" = B transposed), so the list lives in one place.
Prints one "csv,torch-shape,..." line per shape, then the table.  Timing as
torch-matmul.py (CUDA events, median of rounds), about 2 ms of calls a round;
inputs uniform in [-1, 1), transposes as transposed views (cuBLAS reads them
in place).  BEFORE_LOG: the same bench with an earlier plugin, for a
before/after table."""
import importlib.util
import os
import sys


def load_torch_matmul():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch-matmul.py")
    spec = importlib.util.spec_from_file_location("torch_matmul", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def shapes_of(rows):
    for (group, what, _size) in rows:
        if group == "shape":
            dims, tr = what.split(" ")
            m, n, k = (int(v) for v in dims.split("x"))
            yield what, m, n, k, tr


def measure(h, torch, rows):
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = {}
    for what, m, n, k, tr in shapes_of(rows):
        a = torch.rand(k, m, device=dev).t() if tr[0] == "t" else torch.rand(m, k, device=dev)
        b = torch.rand(n, k, device=dev).t() if tr[1] == "t" else torch.rand(k, n, device=dev)
        a, b = a * 2 - 1, b * 2 - 1
        if tr[0] == "t":
            a = a.t().contiguous().t()
        if tr[1] == "t":
            b = b.t().contiguous().t()
        c = torch.empty(m, n, device=dev)
        flops = 2.0 * m * n * k
        est = max(flops / 40e12, 4.0 * (m * k + k * n + m * n) / 3e12)
        reps = min(200, max(3, int(2e-3 / est)))
        t = h.timed(torch, lambda: torch.mm(a, b, out=c), reps, rounds=7)
        ref[what] = flops / t * 1e-12
        h.csv("torch-shape", what, m * n * k, ref[what], "TFLOP/s")
        del a, b, c
    return ref


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    import torch
    h = load_torch_matmul()
    rows = h.read_csv(sys.argv[1])
    old = h.read_csv(sys.argv[2]) if len(sys.argv) == 3 else {}
    print("# torch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0)), flush=True)
    ref = measure(h, torch, rows)

    def value(table, group, what):
        found = [v for (g, w, _s), (v, _u) in table.items() if g == group and w == what]
        return found[0] if found else float("nan")

    print("%-20s %9s %9s %9s %8s %8s %8s %7s" % ("shape (m x n x k)", "before", "rayo", "cuBLAS", "before x",
                                                "rayo x", "k8 x", "target"))
    for what, m, n, k, tr in shapes_of(rows):
        theirs = ref[what]
        was, now, k8 = value(old, "shape", what), value(rows, "shape", what), value(rows, "shape-k8", what)
        print("%-20s %9.2f %9.2f %9.2f %8.2f %8.2f %8.2f %7s" % (what, was, now, theirs, was / theirs, now / theirs,
                                                               k8 / theirs, ">=0.8"))


if __name__ == "__main__":
    main()

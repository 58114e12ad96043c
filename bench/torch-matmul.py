#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The reference side of bench/cuda-matmul.sh: cuBLAS (through PyTorch) and
device copies on the same GPU, in the same run as rayo's cuda-bench.

  torch-matmul.py measure            prints "csv,torch,..." lines
  torch-matmul.py summary BENCH TORCH   the side-by-side table of both logs
  torch-matmul.py measure-half       f16 x f16 and bf16 x bf16 matmul (cuda-half-matmul.sh)
  torch-matmul.py summary-half BENCH TORCH   cuda-bench --half over it

cuBLAS's half matmul runs in the inputs' dtype with float sums (torch.mm of
two f16 or bf16 matrices); its C is in that dtype, rayo's in f32 (4 bytes
more per element of C: nothing next to n^3 products at these sizes).

Timing: CUDA events around repeated calls after warm-up, median of rounds;
random inputs (never zeros)."""
import os
import statistics
import sys
import time


def csv(group, what, size, value, unit):
    print("csv,%s,%s,%d,%.4f,%s" % (group, what, size, value, unit), flush=True)


def timed(torch, fn, reps, rounds=5):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / reps)
    return statistics.median(times)


def measure():
    import torch
    dev = torch.device("cuda")
    print("# torch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0)), flush=True)
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for n in (1024, 2048, 4096, 8192):
            a = torch.rand(n, n, device=dev) * 2 - 1
            b = torch.rand(n, n, device=dev) * 2 - 1
            c = torch.empty(n, n, device=dev)
            flops = 2.0 * n ** 3
            reps = 3 if flops > 2e11 else 10 if flops > 2e10 else 40
            t = timed(torch, lambda: torch.mm(a, b, out=c), reps)
            csv("torch", "tf32 gemm" if tf32 else "sgemm", n, flops / t * 1e-12, "TFLOP/s")
            del a, b, c
    torch.backends.cuda.matmul.allow_tf32 = False

    n = 1 << 26
    x = torch.rand(n, device=dev)
    y = torch.rand(n, device=dev)
    z = torch.empty(n, device=dev)
    t = timed(torch, lambda: z.copy_(x), 20)
    csv("torch", "device copy", n, 8 * n / t * 1e-9, "GB/s")
    t = timed(torch, lambda: torch.add(x, y, out=z), 20)
    csv("torch", "add", n, 12 * n / t * 1e-9, "GB/s")
    t = timed(torch, lambda: torch.nn.functional.gelu(x), 20)
    csv("torch", "gelu", n, 8 * n / t * 1e-9, "GB/s")
    del x, y, z

    a = torch.rand(1024) * 2 - 1
    b = torch.rand(1024) * 2 - 1
    for _ in range(200):
        (a.to(dev) + b.to(dev)).to("cpu")
    ts = []
    for _ in range(2000):
        t0 = time.perf_counter()
        (a.to(dev) + b.to(dev)).to("cpu")
        ts.append(time.perf_counter() - t0)
    csv("torch", "add round trip (median)", 1024, statistics.median(ts) * 1e6, "us")


def measure_half():
    import torch
    dev = torch.device("cuda")
    print("# torch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0)), flush=True)
    for name, dt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        for n in (4096, 2048, 1024):
            a = (torch.rand(n, n, device=dev) * 2 - 1).to(dt)
            b = (torch.rand(n, n, device=dev) * 2 - 1).to(dt)
            flops = 2.0 * n ** 3
            reps = 10 if flops > 2e11 else 20 if flops > 2e10 else 80
            layouts = [("nn", a, b), ("nt", a, b.t())]
            if n == 4096:
                layouts += [("tn", a.t(), b), ("tt", a.t(), b.t())]
            for layout, aa, bb in layouts:
                t = timed(torch, lambda: torch.mm(aa, bb), reps)
                csv("torch", "%s %s" % (name, layout), n, flops / t * 1e-12, "TFLOP/s")
            del a, b


def summary_half(bench_path, torch_path):
    ours, ref = read_csv(bench_path), read_csv(torch_path)
    print("%-40s %6s %9s %9s %7s" % ("rayo (cuda-bench --half), TFLOP/s", "n", "rayo", "cuBLAS", "ratio"))
    for (group, what, size), (value, _) in sorted(ours.items(), key=lambda r: (-r[0][2], r[0][1])):
        if group == "half":
            base = ref.get(("torch", " ".join(what.split()[:2]), size), (float("nan"),))[0]
            print("%-40s %6d %9.1f %9.1f %6.2fx" % (what, size, value, base, value / base))


def read_csv(path):
    """The csv rows of a benchmark's log; none when it did not run (no log)."""
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            if not line.startswith("csv,"):
                continue
            _, group, what, size, value, unit = line.strip().split(",")
            rows[(group, what, int(size))] = (float(value), unit)
    return rows


def summary(bench_path, torch_path):
    ours, ref = read_csv(bench_path), read_csv(torch_path)

    def best(group, size):
        cands = [(v[0], what) for (g, what, s), v in ours.items() if g == group and s == size]
        return max(cands) if cands else (float("nan"), "-")

    print("%-34s %12s %12s %8s %8s" % ("figure", "rayo cuda", "reference", "ratio", "target"))

    def line(name, mine, theirs, unit, target, lower_better=False):
        ratio = (theirs / mine if lower_better else mine / theirs) if mine and theirs else float("nan")
        print("%-34s %9.2f %-2s %9.2f %-2s %8.2f %8s" % (name, mine, unit[:2], theirs, unit[:2], ratio, target))

    for n in (1024, 2048, 4096, 8192):
        v, k = best("sgemm", n)
        line("sgemm fp32 %d (%s)" % (n, k), v, ref.get(("torch", "sgemm", n), (float("nan"),))[0], "TF",
             ">=0.8" if n == 4096 else "")
    for n in (1024, 2048, 4096, 8192):
        v, k = best("tf32", n)
        line("tf32 gemm %d (%s)" % (n, k), v, ref.get(("torch", "tf32 gemm", n), (float("nan"),))[0], "TF",
             ">=0.5" if n == 4096 else "")
    copy = ref.get(("torch", "device copy", 1 << 26), (float("nan"),))[0]
    for (g, what, s), (v, unit) in sorted(ours.items()):
        if g == "stream":
            line("%s (vs device copy)" % what, v, copy, "GB", ">=0.85" if what in ("add", "mul", "scale", "relu") else "")
    rt = ours.get(("host", "add round trip (median)", 1024), (float("nan"),))[0]
    line("add 1024 host round trip (us)", rt, ref.get(("torch", "add round trip (median)", 1024), (float("nan"),))[0],
         "us", "<=30us", lower_better=True)


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "measure":
        measure()
    elif len(sys.argv) == 4 and sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2 and sys.argv[1] == "measure-half":
        measure_half()
    elif len(sys.argv) == 4 and sys.argv[1] == "summary-half":
        summary_half(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)

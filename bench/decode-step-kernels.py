#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""decode-step-kernels.py NCU.csv - the kernels of one decode step from
Nsight Compute's CSV (`ncu --csv --metrics gpu__time_duration.sum,
dram__bytes_read.sum,dram__bytes_write.sum,launch__registers_per_thread,
sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,
launch__block_size` over a rayo-llama run with a prompt and a few decoded
tokens; bench/cuda-decode-run.sh runs it).

A step starts where the run's first kernel (the embedding rows) runs again;
the table is the last whole step (the one before the last start), one line
per kernel name: launches, GPU time in all and per launch, DRAM bytes read
and written per launch and the rate, registers per thread, achieved
occupancy, grid x block.  Then each step's kernel count and time in all."""
import csv
import sys

METRICS = {
    "gpu__time_duration.sum": "time",
    "dram__bytes_read.sum": "read",
    "dram__bytes_write.sum": "write",
    "launch__registers_per_thread": "regs",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occ",
    "launch__grid_size": "grid",
    "launch__block_size": "block",
}
SCALE = {"ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "nsecond": 1e-3,
         "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def launches(path):
    """The launches in order: (name, {metric: value}); time in us, bytes."""
    rows = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for r in csv.DictReader(line for line in f if line.startswith('"')):
            key = METRICS.get(r["Metric Name"])
            if key is None:
                continue
            value = float(r["Metric Value"].replace(",", "") or 0)
            value *= SCALE.get(r["Metric Unit"], 1.0)
            rows.setdefault(int(r["ID"]), [r["Kernel Name"], {}])[1][key] = value
    return [tuple(rows[i]) for i in sorted(rows)]


def steps(runs):
    """The launches cut where the first kernel's name comes again."""
    first = runs[0][0]
    starts = [i for i, (name, _) in enumerate(runs) if name == first]
    return [runs[a:b] for a, b in zip(starts, starts[1:] + [len(runs)])]


def table(step):
    by_name = {}
    for name, m in step:
        by_name.setdefault(name.split("(")[0], []).append(m)
    total = sum(m.get("time", 0) for _, m in step)
    print(f"{'kernel':34s} {'n':>3s} {'us all':>8s} {'us each':>8s} {'MB read':>8s} {'MB wr':>7s} "
          f"{'GB/s':>6s} {'regs':>4s} {'occ%':>5s} grid x block")
    for name, ms in sorted(by_name.items(), key=lambda kv: -sum(m.get("time", 0) for m in kv[1])):
        t = sum(m.get("time", 0) for m in ms)
        rd = sum(m.get("read", 0) for m in ms) / len(ms)
        wr = sum(m.get("write", 0) for m in ms) / len(ms)
        rate = (rd + wr) * len(ms) / (t * 1e3) if t else 0
        m0 = ms[0]
        print(f"{name[:34]:34s} {len(ms):3d} {t:8.2f} {t / len(ms):8.2f} {rd / 1e6:8.3f} {wr / 1e6:7.3f} "
              f"{rate:6.0f} {m0.get('regs', 0):4.0f} {m0.get('occ', 0):5.1f} "
              f"{m0.get('grid', 0):.0f} x {m0.get('block', 0):.0f}")
    print(f"the step: {len(step)} kernels, {total:.1f} us of kernel time")


def main():
    runs = launches(sys.argv[1])
    if not runs:
        print("no kernels in", sys.argv[1])
        return 1
    parts = steps(runs)
    for i, s in enumerate(parts):
        print(f"step {i}: {len(s)} kernels, {sum(m.get('time', 0) for _, m in s):.1f} us")
    table(parts[-2] if len(parts) >= 3 else parts[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

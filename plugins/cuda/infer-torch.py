#!/usr/bin/env python3
"""infer-torch.py - references for cuda-bench-infer, measured with PyTorch in
the same run: the device's read bandwidth (sum over 1 GiB of floats, the
read-only reference) and copy bandwidth (bytes read + written), as GB/s.
Prints the same "csv,..." lines as cuda-bench-infer."""
import torch


def gpu_time(fn, reps=20):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return sorted(times)[2]


def main():
    n = 1 << 28
    a = torch.rand(n, device="cuda")
    b = torch.empty_like(a)
    t = gpu_time(lambda: a.sum())
    print(f"csv,torch,sum (read only) 1 GiB,{4 * n / t * 1e-9:.4f},GB/s")
    t = gpu_time(lambda: b.copy_(a))
    print(f"csv,torch,copy 1 GiB (read + write),{8 * n / t * 1e-9:.4f},GB/s")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""infer-torch.py - references for cuda-bench-infer, measured with PyTorch in
the same run: the device's read bandwidth (sum over 1 GiB of floats, the
read-only reference) and copy bandwidth (bytes read + written), as GB/s, in
the "csv,..." lines of h100-torch.py (whose timing it uses)."""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
h100 = importlib.import_module("h100-torch")


def main():
    import torch
    n = 1 << 28
    a = torch.rand(n, device="cuda")
    b = torch.empty_like(a)
    t = h100.timed(torch, lambda: a.sum(), 20)
    h100.csv("torch", "sum (read only) 1 GiB", n, 4 * n / t * 1e-9, "GB/s")
    t = h100.timed(torch, lambda: b.copy_(a), 20)
    h100.csv("torch", "copy 1 GiB (read + write)", n, 8 * n / t * 1e-9, "GB/s")


if __name__ == "__main__":
    main()

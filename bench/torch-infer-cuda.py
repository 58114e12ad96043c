#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""torch-infer-cuda.py - references for cuda-bench-infer, measured with PyTorch in
the same run: the device's read bandwidth (sum over 1 GiB of floats, the
read-only reference) and copy bandwidth (bytes read + written), as GB/s, and
scaled_dot_product_attention (float32) at the prefill shape of
cuda-bench-infer and (float16, the cache's dtype) at its decode shape, in the "csv,..." lines of
torch-matmul.py (whose timing it uses)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "torch_matmul", os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch-matmul.py"))
timing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(timing)


def main():
    import torch
    n = 1 << 28
    a = torch.rand(n, device="cuda")
    b = torch.empty_like(a)
    t = timing.timed(torch, lambda: a.sum(), 20)
    timing.csv("torch", "sum (read only) 1 GiB", n, 4 * n / t * 1e-9, "GB/s")
    t = timing.timed(torch, lambda: b.copy_(a), 20)
    timing.csv("torch", "copy 1 GiB (read + write)", n, 8 * n / t * 1e-9, "GB/s")
    del a, b
    # prefill: 2048 tokens, 32 heads, 4 KV heads (expanded), head dim 64, causal
    f = torch.nn.functional.scaled_dot_product_attention
    for dtype, name in ((torch.float32, "f32"), (torch.float16, "f16")):
        q = torch.rand(1, 32, 2048, 64, device="cuda") * 2 - 1
        k = (torch.rand(1, 4, 2048, 64, device="cuda") * 2 - 1).to(dtype).float()
        v = (torch.rand(1, 4, 2048, 64, device="cuda") * 2 - 1).to(dtype).float()
        k, v = k.repeat_interleave(8, dim=1), v.repeat_interleave(8, dim=1)
        t = timing.timed(torch, lambda: f(q, k, v, is_causal=True, scale=0.125), 10)
        timing.csv("torch", "sdpa f32 2048 causal (%s-valued cache)" % name, 2048, t * 1e3, "ms")
    # decode: 1 query against a cache of 4096, same heads, f16 throughout (the
    # cache is 4 MiB: it stays in L2 between calls, unlike cuda-bench-infer's
    # copies, which favours torch)
    q = (torch.rand(1, 32, 1, 64, device="cuda") * 2 - 1).half()
    k = (torch.rand(1, 4, 4096, 64, device="cuda") * 2 - 1).half()
    v = (torch.rand(1, 4, 4096, 64, device="cuda") * 2 - 1).half()
    t = timing.timed(torch, lambda: f(q, k, v, scale=0.125, enable_gqa=True), 400)
    timing.csv("torch", "sdpa f16 decode 1 x 4096 (gqa)", 4096, t * 1e6, "us")
    k8, v8 = k.repeat_interleave(8, dim=1), v.repeat_interleave(8, dim=1)
    t = timing.timed(torch, lambda: f(q, k8, v8, scale=0.125), 400)
    timing.csv("torch", "sdpa f16 decode 1 x 4096 (kv expanded)", 4096, t * 1e6, "us")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: MIT
"""Same-run references for the vulkan inference benchmarks (vulkan-infer.sh).

Device bandwidth from PyTorch on the same GPU: copy (bytes read + written),
sum (bytes read) of 1 GiB, torch's own gemv (torch.mv) of the shapes
vk-bench --gemv takes (f16, bf16, f32 weights), and decode attention
(scaled_dot_product_attention, vk-bench --attention 4096's shape).  Prints
a table and CSV lines to argv[1]; argv[2:] are the gemv shapes.
"""
import statistics
import sys

import torch


def cuda_time(fn, reps, warm=3):
    """Median seconds per call over 5 runs of `reps` calls (CUDA events)."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return statistics.median(times)


def main():
    csv = open(sys.argv[1], "w") if len(sys.argv) > 1 else None
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[2:]] or [(4096, 11008)]
    dev = torch.device("cuda")
    print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))
    n = 1 << 28                                   # 1 GiB of f32
    x = torch.rand(n, device=dev)
    y = torch.empty(n, device=dev)
    copy = 2 * 4 * n / cuda_time(lambda: y.copy_(x), 10) * 1e-9
    read = 4 * n / cuda_time(lambda: x.sum(), 10) * 1e-9
    print(f"copy {copy:.1f} GB/s (read + written), sum {read:.1f} GB/s (read)")
    if csv:
        csv.write(f"torch_copy,{n},{copy:.1f}\ntorch_sum,{n},{read:.1f}\n")
    del x, y
    for m, k in shapes:
        for dt in (torch.float16, torch.bfloat16, torch.float32):
            # copies past the L2 cache, as vk-bench cycles through
            copies = [torch.rand(m, k, device=dev).to(dt) for _ in range(max(2, (512 << 20) // (m * k * dt.itemsize) + 1))]
            v = torch.rand(k, device=dev).to(dt)
            it = iter(range(1 << 62))
            sec = cuda_time(lambda: torch.mv(copies[next(it) % len(copies)], v), 4 * len(copies))
            gbs = (m * k + k + m) * dt.itemsize / sec * 1e-9
            print(f"torch.mv {str(dt):15s} {m}x{k}: {sec * 1e6:8.2f} us {gbs:8.1f} GB/s")
            if csv:
                csv.write(f"torch_mv,{dt},{m}x{k},{sec * 1e6:.3f},{gbs:.1f}\n")
            del copies
    attention(dev, csv, 4096)


def attention(dev, csv, n_kv, heads=32, kv_heads=4, dim=64):
    """Decode: 1 query against n_kv positions, GQA, over 64 cache copies."""
    import torch.nn.functional as F
    for dt in (torch.float16, torch.float32):
        q = torch.rand(1, heads, 1, dim, device=dev).to(dt)
        caches = [(torch.rand(1, kv_heads, n_kv, dim, device=dev).to(dt),
                   torch.rand(1, kv_heads, n_kv, dim, device=dev).to(dt)) for _ in range(64)]
        it = iter(range(1 << 62))

        def step():
            k, v = caches[next(it) % 64]
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        sec = cuda_time(step, 256)
        gbs = 2 * kv_heads * n_kv * dim * dt.itemsize / sec * 1e-9
        print(f"sdpa decode {str(dt):15s} cache {n_kv}: {sec * 1e6:8.2f} us {gbs:8.1f} GB/s (K and V)")
        if csv:
            csv.write(f"torch_sdpa_decode,{dt},{n_kv},{sec * 1e6:.3f},{gbs:.1f}\n")


if __name__ == "__main__":
    main()

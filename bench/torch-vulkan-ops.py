# SPDX-License-Identifier: MIT
"""Reference figures from PyTorch (cuBLAS) on the same GPU, for vulkan-ops.sh.

sgemm fp32 (TF32 off) at the sizes vk-bench uses, device copy bandwidth,
elementwise add on device tensors, and the host round trip of add on 1024
floats.  Prints a table and writes CSV lines to the file given as argv[1].
"""
import statistics
import sys
import time

import torch


def cuda_time(fn, reps, warm=3):
    """Median seconds per call, timed with CUDA events over `reps` calls."""
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
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))

    print("\n== cuBLAS sgemm (fp32, TF32 off) ==")
    for n in (1024, 2048, 4096, 8192):
        a = torch.rand(n, n, device=dev) * 2 - 1
        b = torch.rand(n, n, device=dev) * 2 - 1
        c = torch.empty(n, n, device=dev)
        reps = max(2, min(50, int(2e12 / (2 * n ** 3)) + 1))
        sec = cuda_time(lambda: torch.mm(a, b, out=c), reps)
        tflops = 2 * n ** 3 / sec * 1e-12
        print(f"{n:8d} {sec * 1e3:12.3f} ms {tflops:10.2f} TFLOP/s")
        if csv:
            csv.write(f"cublas_sgemm,{n},{sec * 1e3:.6f},{tflops:.3f}\n")
        del a, b, c

    n = 1 << 26
    x = torch.rand(n, device=dev)
    z = torch.rand(n, device=dev)
    y = torch.empty(n, device=dev)
    sec = cuda_time(lambda: y.copy_(x), 20)
    copy_gbs = 2 * 4 * n / sec * 1e-9
    sec_add = cuda_time(lambda: torch.add(x, z, out=y), 20)
    add_gbs = 3 * 4 * n / sec_add * 1e-9
    print(f"\n== device bandwidth, n = {n} ==")
    print(f"copy {copy_gbs:8.1f} GB/s (read + written); torch add {add_gbs:8.1f} GB/s")
    if csv:
        csv.write(f"torch_copy_gbs,{copy_gbs:.1f}\ntorch_add_gbs,{add_gbs:.1f}\n")
    del x, y, z

    a = torch.rand(1024)
    b = torch.rand(1024)
    for _ in range(50):
        (a.to(dev) + b.to(dev)).cpu()
    times = []
    for _ in range(2000):
        t0 = time.perf_counter()
        (a.to(dev) + b.to(dev)).cpu()
        times.append(time.perf_counter() - t0)
    rt = statistics.median(times) * 1e6
    print(f"\n== torch host round trip, add on 1024 floats: median {rt:.1f} us ==")
    if csv:
        csv.write(f"torch_roundtrip_add_1024,{rt:.2f}\n")
        csv.close()


if __name__ == "__main__":
    main()

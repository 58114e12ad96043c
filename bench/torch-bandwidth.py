# SPDX-License-Identifier: MIT
# torch-bandwidth.py - the same-run references of bench/gpu-bandwidth.sh:
# device copy and read (sum) bandwidth through PyTorch, and its softmax,
# layer_norm, gelu and gemv (torch.mv) on the shapes cuda-bench --bandwidth uses.
import torch, sys
def t_ms(fn, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps): fn()
        e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / reps)
    ts.sort(); return ts[2]
n = 1 << 27
x = torch.randn(n, device="cuda"); y = torch.empty_like(x)
print("torch copy GB/s %.0f" % (8 * n / t_ms(lambda: y.copy_(x)) * 1e-6))
big = torch.randn(1 << 28, device="cuda")
print("torch sum (read) GB/s %.0f" % (4 * (1 << 28) / t_ms(lambda: big.sum()) * 1e-6))
a = torch.randn(4096, 32000, device="cuda")
print("torch softmax 4096x32000 GB/s %.0f" % (8 * a.numel() / t_ms(lambda: torch.softmax(a, 1)) * 1e-6))
g = torch.randn(4096, device="cuda"); b2 = torch.randn(32768, 4096, device="cuda")
print("torch layer_norm 32768x4096 GB/s %.0f" % (8 * b2.numel() / t_ms(lambda: torch.nn.functional.layer_norm(b2, (4096,), g, g)) * 1e-6))
print("torch gelu 2^27 GB/s %.0f" % (8 * n / t_ms(lambda: torch.nn.functional.gelu(x)) * 1e-6))
A = torch.randn(11008, 4096, device="cuda"); v = torch.randn(4096, device="cuda"); w = torch.randn(11008, device="cuda")
print("torch gemv 11008x4096 GB/s %.0f" % (4 * A.numel() / t_ms(lambda: torch.mv(A, v)) * 1e-6))
print("torch gemv trans 11008x4096 GB/s %.0f" % (4 * A.numel() / t_ms(lambda: torch.mv(A.t(), w)) * 1e-6))

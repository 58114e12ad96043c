#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""llama-torch.py - the PyTorch side of bench/llama-speed.sh: a plain eager Llama
decoder (no compile, no CUDA graphs, no fused kernels beyond
scaled_dot_product_attention) on the same GGUF file, as the GPU reference.

usage: llama-torch.py MODEL.gguf PROMPT_IDS N_DECODE [RAYO_LOGITS]
  PROMPT_IDS: comma-separated token ids; the prompt runs as one forward pass, then
  N_DECODE greedy steps, the next token staying on the GPU (no host sync per step).
  RAYO_LOGITS: rayo-llama --logits output; its first row (the logits after the
  prompt) is compared with this decoder's.
Prints "torch: prefill N RATE decode M RATE (...)", speeds in tokens/s.
The weights are dequantized from the file's blocks (Q4_0, Q8_0, Q4_K, Q6_K, F16,
BF16, F32) on the GPU into f16; activations are f16, norms and softmax in f32.
"""
import mmap
import struct
import sys
import time

import torch

GGML = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 8: ("q8_0", 32, 34),
        12: ("q4_k", 256, 144), 14: ("q6_k", 256, 210), 30: ("bf16", 1, 2)}
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
          12: "d"}


class Reader:
    """GGUF v2/v3 header, metadata and tensor infos, read from a memory map."""

    def __init__(self, path):
        self.file = open(path, "rb")
        self.mm = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
        self.pos = 0
        magic, version = self.take("<4sI")
        if magic != b"GGUF" or version not in (2, 3):
            raise ValueError(f"{path}: not a GGUF v2/v3 file")
        n_tensors, n_kv = self.take("<QQ")
        self.meta = {}
        for _ in range(n_kv):
            key = self.string()
            (vtype,) = self.take("<I")
            self.meta[key] = self.value(vtype)
        self.tensors = {}
        for _ in range(n_tensors):
            name = self.string()
            (n_dims,) = self.take("<I")
            ne = self.take("<" + "Q" * n_dims)
            dtype, offset = self.take("<IQ")
            self.tensors[name] = (list(ne), dtype, offset)
        align = self.meta.get("general.alignment", 32)
        self.data = (self.pos + align - 1) // align * align

    def take(self, fmt):
        values = struct.unpack_from(fmt, self.mm, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def string(self):
        (n,) = self.take("<Q")
        self.pos += n
        return bytes(self.mm[self.pos - n:self.pos]).decode("utf-8", "replace")

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype, n = self.take("<IQ")
            if etype in SCALAR and etype != 8:  # skipped in one step: vocabularies are long
                size = struct.calcsize("<" + SCALAR[etype])
                self.pos += size * n
                return None
            return [self.value(etype) for _ in range(n)]
        return self.take("<" + SCALAR[vtype])[0]

    def tensor(self, name, device):
        """The tensor as f32 on device, shape [ne1, ne0]."""
        ne, dtype, offset = self.tensors[name]
        kind, block, size = GGML[dtype]
        count = ne[0] * (ne[1] if len(ne) > 1 else 1)
        raw = torch.frombuffer(self.mm, dtype=torch.uint8, count=count // block * size,
                               offset=self.data + offset).to(device)
        return dequantize(kind, raw.view(-1, size), count).view(-1, ne[0])


def f16(b, lo):
    """The little-endian f16 at byte lo of every block row b, as f32."""
    return b[:, lo:lo + 2].contiguous().view(torch.float16).float()


def dequantize(kind, b, count):
    if kind == "f32":
        return b.contiguous().view(torch.float32).view(-1)
    if kind == "f16":
        return b.contiguous().view(torch.float16).float().view(-1)
    if kind == "bf16":
        return b.contiguous().view(torch.bfloat16).float().view(-1)
    if kind == "q8_0":
        q = b[:, 2:].contiguous().view(torch.int8).float()
        return (f16(b, 0) * q).view(-1)
    if kind == "q4_0":  # byte j: value j in the low nibble, j + 16 in the high
        qs = b[:, 2:].int()
        q = torch.cat([qs & 15, qs >> 4], dim=1).float() - 8
        return (f16(b, 0) * q).view(-1)
    if kind == "q4_k":
        return dequantize_q4_k(b)
    if kind == "q6_k":
        return dequantize_q6_k(b)
    raise ValueError(kind)


def dequantize_q4_k(b):
    d, dmin, s = f16(b, 0), f16(b, 2), b[:, 4:16].int()
    # the eight 6-bit (scale, min) pairs of the 12 scale bytes
    sc = torch.cat([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], dim=1)
    mn = torch.cat([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], dim=1)
    qs = b[:, 16:].int().view(-1, 4, 32)  # chunk c: sub-block 2c low, 2c + 1 high nibbles
    q = torch.stack([qs & 15, qs >> 4], dim=2).view(-1, 8, 32).float()
    return (d.view(-1, 1, 1) * sc.view(-1, 8, 1) * q - dmin.view(-1, 1, 1) * mn.view(-1, 8, 1)).view(-1)


def dequantize_q6_k(b):
    ql, qh = b[:, 0:128].int().view(-1, 2, 2, 32), b[:, 128:192].int().view(-1, 2, 1, 32)
    sc = b[:, 192:208].contiguous().view(torch.int8).float().view(-1, 16, 1)
    d = f16(b, 208).view(-1, 1, 1)
    # half h, k = 0..3: low bits from ql[h][k & 1], nibble k >> 1; high bits 2k of qh[h]
    low = torch.cat([ql & 15, ql >> 4], dim=2)                       # [blocks, 2, 4, 32]
    shifts = torch.arange(0, 8, 2, device=b.device).view(1, 1, 4, 1)
    high = (qh >> shifts) & 3
    q = ((low | (high << 4)) - 32).float().view(-1, 16, 16)         # 16 values per scale
    return (d * sc * q).view(-1)


class Llama:
    def __init__(self, r, n_ctx, device):
        m = r.meta
        self.n_layers, self.n_embd = m["llama.block_count"], m["llama.embedding_length"]
        self.n_heads = m["llama.attention.head_count"]
        self.n_kv = m.get("llama.attention.head_count_kv", self.n_heads)
        self.hd = self.n_embd // self.n_heads
        self.eps = m["llama.attention.layer_norm_rms_epsilon"]
        rot = m.get("llama.rope.dimension_count", self.hd)
        base = m.get("llama.rope.freq_base", 10000.0)
        h = torch.float16

        def w(name):
            return r.tensor(name, device).to(h)

        def norm(name):
            return r.tensor(name, device).view(-1)

        self.embd = w("token_embd.weight")
        self.out = w("output.weight") if "output.weight" in r.tensors else self.embd
        self.out_norm = norm("output_norm.weight")
        self.layers = []
        for i in range(self.n_layers):
            p = f"blk.{i}."
            self.layers.append({k: (norm if k.endswith("norm") else w)(p + k + ".weight") for k in (
                "attn_norm", "ffn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                "ffn_gate", "ffn_up", "ffn_down")})
        pos = torch.arange(n_ctx, device=device, dtype=torch.float64)
        inv = base ** (-torch.arange(0, rot, 2, device=device, dtype=torch.float64) / rot)
        ang = pos[:, None] * inv[None, :]
        self.cos, self.sin = ang.cos().float(), ang.sin().float()
        self.rot = rot
        shape = (self.n_layers, self.n_kv, n_ctx, self.hd)
        self.k_cache = torch.zeros(shape, dtype=h, device=device)
        self.v_cache = torch.zeros(shape, dtype=h, device=device)

    def rmsnorm(self, x, g):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps) * g).half()

    def rope(self, x, p0):
        """x [tokens, heads, hd]: pairs (2i, 2i + 1) rotated, i < rot / 2 (GGUF's NORM)."""
        n = x.shape[0]
        c, s = self.cos[p0:p0 + n, None, :], self.sin[p0:p0 + n, None, :]
        r = x[..., :self.rot].float().reshape(n, x.shape[1], -1, 2)
        x0, x1 = r[..., 0], r[..., 1]
        out = torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).reshape(n, x.shape[1], -1)
        return torch.cat([out.half(), x[..., self.rot:]], dim=-1)

    def forward(self, tokens, p0):
        """tokens [n] at positions p0..; the last position's logits."""
        n, group = tokens.shape[0], self.n_heads // self.n_kv
        x = self.embd[tokens]
        for li, L in enumerate(self.layers):
            xn = self.rmsnorm(x, L["attn_norm"])
            q = self.rope((xn @ L["attn_q"].T).view(n, self.n_heads, self.hd), p0)
            k = self.rope((xn @ L["attn_k"].T).view(n, self.n_kv, self.hd), p0)
            v = (xn @ L["attn_v"].T).view(n, self.n_kv, self.hd)
            self.k_cache[li, :, p0:p0 + n] = k.transpose(0, 1)
            self.v_cache[li, :, p0:p0 + n] = v.transpose(0, 1)
            keys = self.k_cache[li, :, :p0 + n].repeat_interleave(group, dim=0)
            vals = self.v_cache[li, :, :p0 + n].repeat_interleave(group, dim=0)
            a = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(0, 1), keys, vals, is_causal=n > 1)  # n > 1 only from p0 = 0
            x = x + a.transpose(0, 1).reshape(n, self.n_embd) @ L["attn_output"].T
            xn = self.rmsnorm(x, L["ffn_norm"])
            g = torch.nn.functional.silu(xn @ L["ffn_gate"].T) * (xn @ L["ffn_up"].T)
            x = x + g @ L["ffn_down"].T
        return (self.rmsnorm(x[-1:], self.out_norm) @ self.out.T).float().view(-1)


def main():
    path, ids, n_decode = sys.argv[1], [int(t) for t in sys.argv[2].split(",")], int(sys.argv[3])
    device = "cuda"
    r = Reader(path)
    m = Llama(r, len(ids) + n_decode + 8, device)
    prompt = torch.tensor(ids, device=device)
    with torch.inference_mode():
        m.forward(prompt[:8], 0)  # warm-up: cuBLAS handles, kernels loaded
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = m.forward(prompt, 0)
        tok = logits.argmax().view(1)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        for i in range(n_decode):
            tok = m.forward(tok, len(ids) + i).argmax().view(1)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
    note = ""
    if len(sys.argv) > 4:
        vocab = logits.shape[0]
        ref = torch.frombuffer(bytearray(open(sys.argv[4], "rb").read(4 * vocab)),
                               dtype=torch.float32).to(device)
        diff = (ref - logits).abs().max().item() / (ref.max() - ref.min()).item()
        note = f"; prompt logits vs rayo: max |diff| / range {diff:.2e}"
    print(f"torch: prefill {len(ids)} {len(ids) / (t1 - t0):.2f} decode {n_decode} "
          f"{n_decode / (t2 - t1):.2f} ({torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"f16 weights, eager{note})")


if __name__ == "__main__":
    main()

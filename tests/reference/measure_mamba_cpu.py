#!/usr/bin/env python3
# Purpose: what autograd keeps for one Mamba-2 layer (RMSNorm + mixer) on the PyTorch reference
# path, in bf16 and fp32, on the CPU with the PyTorch this machine can run (2.6, Debian 13's
# python3-torch; ../shared/toolchain.md). The mixer is re-implemented here op for op in the order
# transformers 5.17's Mamba2Mixer.torch_forward / NemotronHMamba2Mixer.torch_forward runs them
# (in_proj, split, depthwise causal conv1d + SiLU, softplus/clamp of dt, the chunked SSD scan with
# segment sums, the gated RMSNorm, out_proj), so its saved storages can be compared with the
# engine's `hf` records where the GPU measurement (tests/reference/gpu/hf_layers.json, bf16
# only) has none: fp32, and a sequence that is not a whole number of chunks.
#
# Usage: python3 tests/reference/measure_mamba_cpu.py OUT.json
# Method as measure_hf_layers.py: saved_tensors_hooks record each packed tensor; a storage counts
# once; parameters are left out.
import json
import sys

import torch
import torch.nn.functional as F


class Mixer(torch.nn.Module):
    def __init__(self, h, heads, head_dim, state, groups, kernel, chunk, grouped_norm):
        super().__init__()
        self.H, self.P, self.N, self.G, self.K, self.Q = heads, head_dim, state, groups, kernel, chunk
        self.I = heads * head_dim
        self.conv_dim = self.I + 2 * groups * state
        self.grouped_norm = grouped_norm
        self.norm_w = torch.nn.Parameter(torch.ones(h))  # the layer's RMSNorm
        self.in_proj = torch.nn.Linear(h, self.I + self.conv_dim + heads, bias=False)
        self.conv = torch.nn.Conv1d(self.conv_dim, self.conv_dim, kernel, groups=self.conv_dim,
                                    padding=kernel - 1)
        self.dt_bias = torch.nn.Parameter(torch.rand(heads))
        self.A_log = torch.nn.Parameter(torch.log(torch.arange(1, heads + 1).float()))
        self.D = torch.nn.Parameter(torch.ones(heads))
        self.gate_w = torch.nn.Parameter(torch.ones(self.I))
        self.out_proj = torch.nn.Linear(self.I, h, bias=False)

    @staticmethod
    def rms(x, w, eps=1e-5):  # LlamaRMSNorm-style: fp32 statistics, weight times the cast back
        dt = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return w * x.to(dt)

    @staticmethod
    def segsum(a):  # a: [..., T] -> [..., T, T], lower triangle of cumulative sums, -inf above
        t = a.size(-1)
        a = a[..., None].expand(*a.size(), t)
        strict = torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=-1)
        a = a.masked_fill(~strict, 0)
        out = torch.cumsum(a, dim=-2)
        lower = torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=0)
        return out.masked_fill(~lower, -torch.inf)

    def chunks(self, t, pad):  # pad the sequence axis (dim 1), then split it into chunks of Q
        t = F.pad(t, (0, 0, 0, pad) if t.dim() == 3 else (0, 0, 0, 0, 0, pad))
        return t.reshape(t.shape[0], -1, self.Q, *t.shape[2:])

    def forward(self, hidden):
        b, s, _ = hidden.shape
        dtype = hidden.dtype
        x_in = self.rms(hidden, self.norm_w)
        proj = self.in_proj(x_in)
        A = -torch.exp(self.A_log.float())
        gate, xbc, dt = proj.split([self.I, self.conv_dim, self.H], dim=-1)
        xbc = F.silu(self.conv(xbc.transpose(1, 2))[..., :s].transpose(1, 2))
        x, B, C = torch.split(xbc, [self.I, self.G * self.N, self.G * self.N], dim=-1)
        dt = torch.clamp(F.softplus(dt + self.dt_bias), 0.0, float("inf"))
        x = x.reshape(b, s, -1, self.P).float()
        B = B.reshape(b, s, -1, self.N).float().repeat_interleave(self.H // self.G, dim=2)
        C = C.reshape(b, s, -1, self.N).float().repeat_interleave(self.H // self.G, dim=2)
        pad = (self.Q - s % self.Q) % self.Q
        d_res = self.D[..., None] * F.pad(x, (0, 0, 0, 0, 0, pad))
        x = x * dt[..., None]
        A = A.to(x.dtype) * dt
        x, A, B, C = [self.chunks(t, pad) for t in (x, A, B, C)]
        A = A.permute(0, 3, 1, 2)
        A_cum = torch.cumsum(A, dim=-1)
        L = torch.exp(self.segsum(A))
        G = (C[:, :, :, None, :, :] * B[:, :, None, :, :, :]).sum(dim=-1)
        M = (G[..., None] * L.permute(0, 2, 3, 4, 1)[..., None]).sum(dim=-1)
        y_diag = (M[..., None] * x[:, :, None]).sum(dim=3)
        decay = torch.exp(A_cum[:, :, :, -1:] - A_cum)
        B_decay = B * decay.permute(0, -2, -1, 1)[..., None]
        states = (B_decay[..., None, :] * x[..., None]).sum(dim=2)
        states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
        decay_chunk = torch.exp(self.segsum(F.pad(A_cum[:, :, :, -1], (1, 0)))).transpose(1, 3)
        new_states = (decay_chunk[..., None, None] * states[:, :, None, ...]).sum(dim=1)
        states = new_states[:, :-1]
        out_decay = torch.exp(A_cum)
        y_off = (C[..., None, :] * states[:, :, None, ...]).sum(-1) * \
            out_decay.permute(0, 2, 3, 1)[..., None]
        y = (y_diag + y_off).reshape(b, -1, self.H, self.P) + d_res
        y = y[:, :s].reshape(b, s, -1)
        # The gated RMSNorm: y * silu(z) in fp32, per group (Nemotron-H) or over all I (Mamba2).
        yd = y.dtype
        g = y.to(torch.float32) * F.silu(gate.to(torch.float32))
        if self.grouped_norm:
            g = g.view(b, s, self.G, -1)
        g = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + 1e-5)
        g = g.view(b, s, -1)
        y = self.gate_w * g.to(yd)
        return self.out_proj(y.to(dtype))


def measure(mod, hidden):
    params = {p.untyped_storage().data_ptr() for p in mod.parameters()}
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        out = mod(hidden)
    seen, rows = set(), []
    for t in packed:
        k = t.untyped_storage().data_ptr()
        if k in seen or k in params:
            continue
        seen.add(k)
        rows.append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                     "bytes": t.untyped_storage().nbytes()})
    out.float().sum().backward()
    return rows


def main():
    torch.manual_seed(0)
    configs = [  # the two measured tiny layers of hf_layers.json
        ("nemotron_h", dict(h=256, heads=8, head_dim=32, state=16, groups=2, kernel=4, chunk=32,
                            grouped_norm=True)),
        ("mamba2", dict(h=256, heads=8, head_dim=64, state=16, groups=2, kernel=4, chunk=32,
                        grouped_norm=False)),
    ]
    results = []
    for name, kw in configs:
        for dtype in (torch.bfloat16, torch.float32):
            for s in (64, 80, 128):
                mod = Mixer(**kw).to(dtype)
                hidden = torch.randn(2, s, kw["h"], dtype=dtype, requires_grad=True)
                rows = measure(mod, hidden)
                results.append({"model_type": name, "config": kw, "dtype": str(dtype)[6:], "b": 2,
                                "s": s, "saved_bytes": sum(r["bytes"] for r in rows),
                                "tensors": rows})
                print("%-10s %-8s s=%-4d saved=%d (%d tensors)" % (
                    name, str(dtype)[6:], s, results[-1]["saved_bytes"], len(rows)), flush=True)
    json.dump({"generator": "tests/reference/measure_mamba_cpu.py", "torch": torch.__version__,
               "device": "cpu", "results": results}, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()

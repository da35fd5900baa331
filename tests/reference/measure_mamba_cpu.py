#!/usr/bin/env python3
# Purpose: what autograd keeps for one Mamba-2 layer (RMSNorm + mixer) on the PyTorch reference
# path, in bf16 and fp32, on the CPU with the PyTorch this machine can run (2.6, Debian 13's
# python3-torch; ../shared/toolchain.md). The mixer (families_cpu/mamba.py) follows transformers
# 5.17's Mamba2Mixer.torch_forward / NemotronHMamba2Mixer.torch_forward op for op (in_proj, split,
# depthwise causal conv1d + SiLU, softplus/clamp of dt, the chunked SSD scan with segment sums, the
# gated RMSNorm, out_proj), so its saved storages can be compared with the
# engine's `hf` records where the GPU measurement (tests/reference/gpu/hf_layers.json, bf16
# only) has none: fp32, and a sequence that is not a whole number of chunks.
#
# Usage: python3 tests/reference/measure_mamba_cpu.py OUT.json (the mixer is families_cpu/mamba.py's;
# measure_families_cpu.py runs it inside whole Nemotron-H and Mamba2 models)
# Method as measure_hf_layers.py: saved_tensors_hooks record each packed tensor; a storage counts
# once; parameters are left out.
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "families_cpu"))
import common  # noqa: E402
import mamba  # noqa: E402  (the mixer, op for op: families_cpu/mamba.py)


class Layer(torch.nn.Module):
    """One Mamba-2 layer as measured: the block's RMSNorm, then the mixer."""

    def __init__(self, h, heads, head_dim, state, groups, kernel, chunk, grouped_norm):
        super().__init__()
        self.norm = common.RMSNorm(h, 1e-5)
        self.mixer = mamba.Mamba2Mixer(h, heads, head_dim, state, groups, kernel, chunk, grouped_norm)

    def forward(self, hidden):
        return self.mixer(self.norm(hidden))


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
                mod = Layer(**kw).to(dtype)
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

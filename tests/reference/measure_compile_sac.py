#!/usr/bin/env python3
# Purpose: measure what torchtitan's op-level selective checkpointing (op:torchtitan) saves for
# backward in one Llama block, eager and under torch.compile (issue 36: "compile together with a
# selective checkpointing policy").
#
# Usage (PyTorch 2.6 on the CPU, the Debian 13 root of ../shared/toolchain.md):
#   chroot FOLDER python3 measure_compile_sac.py > tests/reference/compile_sac_saved.json
#
# Method: measure_compile.py's block (torchtitan 9dec370's Llama TransformerBlock as it computes)
# wrapped as torchtitan 9dec370 parallelize_llama.py l.213-276 wraps it for
# `selective_ac_option = "op"`: torch.utils.checkpoint (non-reentrant, preserve_rng_state False)
# with create_selective_checkpoint_contexts and its policy, written here after that code: every op
# in the save list is MUST_SAVE except every second aten.mm of the forward (counted per block),
# everything else PREFER_RECOMPUTE. torchtitan compiles each block after wrapping it
# (apply_compile after apply_ac), so the compiled case is torch.compile of the wrapped block
# (backend aot_eager_decomp_partition: AOTAutograd with inductor's decompositions and
# partitioner, as measure_compile.py). On the CPU, SDPA dispatches to
# aten._scaled_dot_product_flash_attention_for_cpu, which takes the save list's place of the CUDA
# flash op (both return the output and the fp32 log-sum-exp the backward reads). Every tensor
# packed by saved_tensors_hooks is recorded once per storage; parameters and freqs_cis are static
# and left out. Eager SAC's cached op outputs are not packed by the hooks (the checkpoint keeps
# them in its own storage), so they are read from the policy's MUST_SAVE calls instead.
import collections
import importlib.util
import json
import os
import sys

import torch
import torch._functorch.config  # noqa: F401 (activation_memory_budget)
from torch.utils.checkpoint import (CheckpointPolicy, checkpoint,
                                    create_selective_checkpoint_contexts)

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("measure_compile",
                                               os.path.join(_here, "measure_compile.py"))
mc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mc)

aten = torch.ops.aten
SAVE_LIST = {aten.mm.default, aten._scaled_dot_product_efficient_attention.default,
             aten._scaled_dot_product_flash_attention.default,
             aten._scaled_dot_product_flash_attention_for_cpu.default,
             torch.ops._c10d_functional.reduce_scatter_tensor.default,
             aten.abs.default, aten.max.default}


def describe(t):
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "bytes": t.untyped_storage().nbytes()}


class OpSac(torch.nn.Module):
    """The block under torchtitan's op policy; `cached` collects the forward's MUST_SAVE outputs."""

    def __init__(self, blk):
        super().__init__()
        self.blk = blk
        self.cached = []
        cached = self.cached

        # A plain function, as torchtitan's selective_checkpointing_context_fn (dynamo does not
        # take a bound method here).
        def context():
            meta = collections.defaultdict(int)

            def policy(ctx, func, *args, **kwargs):
                mode = "recompute" if ctx.is_recompute else "forward"
                key = f"{mode}_mm_count"
                if func == aten.mm.default:
                    meta[key] += 1
                save = func in SAVE_LIST and not (func == aten.mm.default and meta[key] % 2 == 0)
                if save and not ctx.is_recompute:
                    cached.append(func)
                return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

            return create_selective_checkpoint_contexts(policy)

        self.context = context

    def forward(self, x, fc):
        return checkpoint(self.blk, x, fc, use_reentrant=False, preserve_rng_state=False,
                          context_fn=self.context)


def named(blk, x, fc):
    """The block's forward intermediates that an op-level policy can save, by name, for telling
    apart saved tensors of equal shapes (h = a x d in this block)."""
    b, s, _ = x.shape
    with torch.no_grad():
        y = blk.attention_norm(x)
        q, v = blk.wq(y), blk.wv(y)
        k = blk.wk(y)
        qr, kr = mc.rope(q.view(b, s, -1, blk.d), k.view(b, s, -1, blk.d), fc)
        n = blk.a // blk.kv
        o = torch.nn.functional.scaled_dot_product_attention(
            qr.transpose(1, 2), mc.repeat_kv(kr, n).transpose(1, 2),
            mc.repeat_kv(v.view(b, s, -1, blk.d), n).transpose(1, 2), is_causal=True)
        hh = x + blk.wo(o.transpose(1, 2).contiguous().view(b, s, -1))
        z = blk.ffn_norm(hh)
        g = blk.w1(z)
        w2 = blk.w2(torch.nn.functional.silu(g) * blk.w3(z))
    return {"block_input": x, "wq_out": q, "wv_out": v, "sdpa_out": o, "w1_out": g,
            "w2_out": w2}


def saved(fn, x, fc, static, names=None):
    out = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in static and ptr not in out:
            out[ptr] = describe(t)
            for name, ref in (names or {}).items():
                if t.numel() == ref.numel() and t.dtype == ref.dtype and torch.allclose(
                        t.detach().reshape(-1).float(), ref.reshape(-1).float(),
                        rtol=1e-2, atol=1e-2):
                    out[ptr]["equals"] = name
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = fn(x, fc)
    y.sum().backward()
    return sorted(out.values(), key=lambda r: (-r["bytes"], r["shape"]))


def eager_cached(blk, x, fc):
    """Eager SAC: the outputs its policy caches, recorded by a dispatch mode around the forward."""
    from torch.utils._python_dispatch import TorchDispatchMode
    outs, funcs = [], []

    # The same ops in the same order as the policy sees them (its forward calls are counted in
    # OpSac.cached: the two lists are checked to agree).
    meta = collections.defaultdict(int)

    class Collect(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            r = func(*args, **(kwargs or {}))
            if func == aten.mm.default:
                meta["mm"] += 1
            if func in SAVE_LIST and not (func == aten.mm.default and meta["mm"] % 2 == 0):
                funcs.append(str(func))
                for t in (r if isinstance(r, (tuple, list)) else [r]):
                    if isinstance(t, torch.Tensor):
                        outs.append(describe(t))
            return r

    with torch.no_grad(), Collect():
        blk(x, fc)
    return outs, funcs


def case(b, s, h, a, kv, f):
    torch.manual_seed(0)
    torch._dynamo.reset()
    blk = mc.Block(h, a, kv, f).to(torch.bfloat16)
    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    d = h // a
    freqs = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    fc = torch.polar(torch.ones(s, d // 2), torch.outer(torch.arange(s).float(), freqs))
    static = {p.untyped_storage().data_ptr() for p in blk.parameters()}
    static.add(fc.untyped_storage().data_ptr())
    sac = OpSac(blk)
    eager_packed = saved(sac, x, fc, static)
    cached, funcs = eager_cached(blk, x.detach(), fc)
    assert funcs == [str(op) for op in sac.cached], (funcs, sac.cached)
    compiled = saved(torch.compile(OpSac(blk), backend="aot_eager_decomp_partition"), x, fc, static,
                     named(blk, x.detach(), fc))
    return {"b": b, "s": s, "h": h, "a": a, "kv": kv, "f": f, "dtype": "bfloat16",
            "must_save": funcs, "eager_packed": eager_packed, "eager_cached": cached,
            "eager_bytes": sum(t["bytes"] for t in eager_packed + cached),
            "compiled": compiled, "compiled_bytes": sum(t["bytes"] for t in compiled)}


def main():
    torch._functorch.config.activation_memory_budget = 1.0
    rows = [case(*sh) for sh in mc_shapes()]
    json.dump({"torch": torch.__version__, "backend": "aot_eager_decomp_partition",
               "policy": "torchtitan 9dec370 op-level SAC (own code, this script)",
               "block": "measure_compile.py's Block", "rows": rows}, sys.stdout, indent=1)
    sys.stdout.write("\n")


def mc_shapes():
    return [(2, 64, 256, 4, 2, 512), (2, 64, 256, 4, 4, 512), (1, 128, 256, 8, 2, 1024),
            (2, 32, 512, 8, 8, 384), (4, 64, 128, 2, 1, 256)]


if __name__ == "__main__":
    main()

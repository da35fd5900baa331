#!/usr/bin/env python3
# Purpose: measure which tensors torch.compile's partitioner saves for backward in one
# torchtitan-style Llama block (issue 36), against the same block in eager mode.
#
# Usage (PyTorch 2.6 on the CPU, the Debian 13 root of ../shared/toolchain.md):
#   chroot FOLDER python3 measure_compile.py > tests/reference/compile_saved.json
#   chroot FOLDER python3 measure_compile.py --families > tests/reference/compile_families_saved.json
#   chroot FOLDER python3 measure_compile.py --gemma > tests/reference/compile_gemma_saved.json
#   chroot FOLDER python3 measure_compile.py --tp > tests/reference/compile_tp_saved.json
# (--tp: the block under torchtitan's tensor and sequence parallel plan at tp 1, 2 and 4, one
# process over PyTorch's fake process group, each saved tensor's local shape and bytes;
# --families: the block with Qwen2's q/k/v biases, then with Qwen3's per-head q/k norms, then
# nanoGPT's GPT-2 block with exact and tanh GELU, each saved storage named by the forward
# intermediate its values equal; --gemma: Gemma 2's and Gemma 3's decoder layer, named alike.)
#
# Method: the block below follows torchtitan 9dec370 torchtitan/models/llama/model.py and
# models/norms.py as they compute (RMSNorm in fp32 cast back, RoPE through complex64 freqs_cis,
# repeat_kv, causal SDPA, SwiGLU w2(silu(w1 x) * w3 x)), written here, not copied. It runs once
# eager and once under torch.compile(backend="aot_eager_decomp_partition"): AOTAutograd with
# inductor's decompositions and its partitioner (min_cut_rematerialization_partition,
# compiler="inductor", torch 2.6 torch/_dynamo/backends/debugging.py), so the saved set is the one
# inductor's backward receives without needing a C++ compiler for inductor's CPU kernels. Every
# tensor packed by saved_tensors_hooks is recorded once per storage; parameters and the
# model-level freqs_cis are static and left out. activation_memory_budget (torch 2.6
# torch/_functorch/config.py) is swept over 1.0 (the default), 0.5 and 0.0.
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope(xq, xk, freqs_cis):
    q = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    k = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, q.shape[1], 1, q.shape[-1])
    return (torch.view_as_real(q * fc).flatten(3).type_as(xq),
            torch.view_as_real(k * fc).flatten(3).type_as(xk))


def repeat_kv(x, n):
    b, s, kv, d = x.shape
    return x if n == 1 else x[:, :, :, None, :].expand(b, s, kv, n, d).reshape(b, s, kv * n, d)


class Block(nn.Module):
    # qkv_bias: q, k and v with biases (Qwen2's attention); qk_norm: an RMSNorm over each head of
    # q and k before RoPE (Qwen3's q_norm and k_norm, transformers' Qwen3Attention).
    def __init__(self, h, a, kv, f, qkv_bias=False, qk_norm=False):
        super().__init__()
        self.a, self.kv, self.d = a, kv, h // a
        self.wq = nn.Linear(h, a * self.d, bias=qkv_bias)
        self.wk = nn.Linear(h, kv * self.d, bias=qkv_bias)
        self.wv = nn.Linear(h, kv * self.d, bias=qkv_bias)
        self.q_norm = RMSNorm(self.d) if qk_norm else None
        self.k_norm = RMSNorm(self.d) if qk_norm else None
        self.wo = nn.Linear(a * self.d, h, bias=False)
        self.w1 = nn.Linear(h, f, bias=False)
        self.w2 = nn.Linear(f, h, bias=False)
        self.w3 = nn.Linear(h, f, bias=False)
        self.attention_norm = RMSNorm(h)
        self.ffn_norm = RMSNorm(h)

    def forward(self, x, freqs_cis):
        b, s, _ = x.shape
        y = self.attention_norm(x)
        q = self.wq(y).view(b, s, -1, self.d)
        k = self.wk(y).view(b, s, -1, self.d)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        v = self.wv(y).view(b, s, -1, self.d)
        q, k = rope(q, k, freqs_cis)
        n = self.a // self.kv
        o = F.scaled_dot_product_attention(q.transpose(1, 2), repeat_kv(k, n).transpose(1, 2),
                                           repeat_kv(v, n).transpose(1, 2), is_causal=True)
        h = x + self.wo(o.transpose(1, 2).contiguous().view(b, s, -1))
        z = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(z)) * self.w3(z))


class TitanAttention(nn.Module):
    # torchtitan's Attention as a module of its own (the TP plan's "attention" and its wq, wk, wv,
    # wo); under TP its heads are the rank's (view(..., -1, head_dim)).
    def __init__(self, h, a, kv):
        super().__init__()
        self.a, self.kv, self.d = a, kv, h // a
        self.wq = nn.Linear(h, a * self.d, bias=False)
        self.wk = nn.Linear(h, kv * self.d, bias=False)
        self.wv = nn.Linear(h, kv * self.d, bias=False)
        self.wo = nn.Linear(a * self.d, h, bias=False)

    def forward(self, x, freqs_cis):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, -1, self.d)
        k = self.wk(x).view(b, s, -1, self.d)
        v = self.wv(x).view(b, s, -1, self.d)
        q, k = rope(q, k, freqs_cis)
        n = self.a // self.kv
        o = F.scaled_dot_product_attention(q.transpose(1, 2), repeat_kv(k, n).transpose(1, 2),
                                           repeat_kv(v, n).transpose(1, 2), is_causal=True)
        return self.wo(o.transpose(1, 2).contiguous().view(b, s, -1))


class TitanFeedForward(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.w1 = nn.Linear(h, f, bias=False)
        self.w2 = nn.Linear(f, h, bias=False)
        self.w3 = nn.Linear(h, f, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TitanBlock(nn.Module):
    # The same computation as Block, in torchtitan's module tree (attention_norm, attention,
    # ffn_norm, feed_forward), which its TP plan names.
    def __init__(self, h, a, kv, f):
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(h), RMSNorm(h)
        self.attention = TitanAttention(h, a, kv)
        self.feed_forward = TitanFeedForward(h, f)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


def tp_plan():
    # torchtitan 9dec370 parallelize_llama.py apply_tp l.174-190, a block's plan (no float8).
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput,
                                                   RowwiseParallel, SequenceParallel)
    return {"attention_norm": SequenceParallel(),
            "attention": PrepareModuleInput(input_layouts=(Shard(1), None),
                                            desired_input_layouts=(Replicate(), None)),
            "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(),
            "attention.wv": ColwiseParallel(),
            "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),),
                                               desired_input_layouts=(Replicate(),)),
            "feed_forward.w1": ColwiseParallel(),
            "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
            "feed_forward.w3": ColwiseParallel()}


def local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def tp_case(b, s, h, a, kv, f, tp, mesh):
    # One rank's block (rank 0 of tp; the fake process group moves no data, so values are not
    # compared, only the local shapes and bytes of what is saved). The block's input is the
    # rank's sequence shard, as the embedding's RowwiseParallel(output_layouts=Shard(1)) gives it.
    from torch.distributed.tensor.parallel import parallelize_module
    torch.manual_seed(0)
    torch._dynamo.reset()
    torch._functorch.config.activation_memory_budget = 1.0
    blk = TitanBlock(h, a, kv, f).to(torch.bfloat16)
    if tp > 1:
        parallelize_module(blk, mesh, tp_plan())
    x = torch.randn(b, s // tp, h, dtype=torch.bfloat16, requires_grad=True)
    d = h // a
    freqs = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    fc = torch.polar(torch.ones(s, d // 2), torch.outer(torch.arange(s).float(), freqs))
    static = {local(p).untyped_storage().data_ptr() for p in blk.parameters()}
    static.add(fc.untyped_storage().data_ptr())
    out = {}

    def pack(t):
        lt = local(t)
        ptr = lt.untyped_storage().data_ptr()
        if ptr not in static and ptr not in out:
            out[ptr] = {"shape": list(lt.shape), "dtype": str(lt.dtype).replace("torch.", ""),
                        "bytes": lt.untyped_storage().nbytes()}
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = torch.compile(blk, backend="aot_eager_decomp_partition")(x, fc)
    local(y).sum().backward()
    compiled = sorted(out.values(), key=lambda r: (-r["bytes"], r["shape"]))
    return {"b": b, "s": s, "h": h, "a": a, "kv": kv, "f": f, "tp": tp, "sp": True,
            "dtype": "bfloat16", "activation_memory_budget": 1.0, "compiled": compiled,
            "compiled_bytes": sum(t["bytes"] for t in compiled)}


TP_SHAPES = [(2, 64, 256, 4, 4, 768), (2, 64, 256, 8, 4, 640), (1, 128, 256, 8, 2, 1024),
             (4, 32, 128, 4, 4, 384), (2, 32, 512, 8, 8, 384)]


def main_tp():
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore
    rows = []
    for tp in (1, 2, 4):
        if tp > 1:
            dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=tp)
        mesh = init_device_mesh("cpu", (tp,)) if tp > 1 else None
        # torchtitan needs the kv heads divisible by tp (its view(..., -1, head_dim) of wk's shard).
        rows += [tp_case(*sh, tp, mesh) for sh in TP_SHAPES if sh[4] % tp == 0]
        if tp > 1:
            dist.destroy_process_group()
    json.dump({"torch": torch.__version__, "backend": "aot_eager_decomp_partition",
               "block": "measure_compile.py's TitanBlock under torchtitan 9dec370's TP plan "
                        "(fake process group, rank 0)",
               "rows": rows}, sys.stdout, indent=1)
    sys.stdout.write("\n")


class GemmaNorm(nn.Module):
    # Gemma's RMSNorm (transformers' Gemma2RMSNorm / Gemma3RMSNorm): the statistics and the
    # (1 + weight) scale in fp32, cast back at the end.
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (1.0 + self.weight.float())).type_as(x)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class GemmaBlock(nn.Module):
    # Gemma 2's and Gemma 3's decoder layer as transformers runs it (modeling_gemma2.py,
    # modeling_gemma3.py): Gemma's norm before and after attention and the MLP (sandwich), q and k
    # (and Gemma 3's per-head q/k norms) rotated by cos/sin (rotate_half), attention scaled by
    # query_pre_attn_scalar ** -0.5, GELU-tanh gated MLP. The attention is causal SDPA over every
    # key: a sliding window and Gemma 2's logit soft-capping are arguments of the GPU's flash
    # kernel, not tensors it saves.
    def __init__(self, h, a, kv, f, d, qk_norm=False):
        super().__init__()
        self.a, self.kv, self.d = a, kv, d
        self.wq = nn.Linear(h, a * d, bias=False)
        self.wk = nn.Linear(h, kv * d, bias=False)
        self.wv = nn.Linear(h, kv * d, bias=False)
        self.wo = nn.Linear(a * d, h, bias=False)
        self.gate = nn.Linear(h, f, bias=False)
        self.up = nn.Linear(h, f, bias=False)
        self.down = nn.Linear(f, h, bias=False)
        self.norms = nn.ModuleList(GemmaNorm(h) for _ in range(4))
        self.q_norm = GemmaNorm(d) if qk_norm else None
        self.k_norm = GemmaNorm(d) if qk_norm else None

    def parts(self, x, rope):
        cos, sin = rope
        b, s, _ = x.shape
        y = self.norms[0](x)
        q = self.wq(y).view(b, s, -1, self.d)
        k = self.wk(y).view(b, s, -1, self.d)
        v = self.wv(y).view(b, s, -1, self.d)
        q_in, k_in = q, k
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        c, sn = cos[None, None], sin[None, None]
        q = q * c + rotate_half(q) * sn
        k = k * c + rotate_half(k) * sn
        n = self.a // self.kv
        kr = k if n == 1 else k[:, :, None].expand(b, self.kv, n, s, self.d).reshape(b, self.a, s, self.d)
        vr = v if n == 1 else v[:, :, None].expand(b, self.kv, n, s, self.d).reshape(b, self.a, s, self.d)
        o = F.scaled_dot_product_attention(q, kr, vr, is_causal=True, scale=self.d ** -0.5)
        o_in = o.transpose(1, 2).contiguous().view(b, s, -1)
        attn = self.wo(o_in)
        x2 = x + self.norms[1](attn)
        z = self.norms[2](x2)
        g, u = self.gate(z), self.up(z)
        m = F.gelu(g, approximate="tanh") * u
        mlp = self.down(m)
        out = x2 + self.norms[3](mlp)
        return out, {"block_input": x, "ln1_out": y, "q_proj_out": q_in, "k_proj_out": k_in,
                     "v_proj_out": v, "q_rope": q, "k_rope": k, "sdpa_out": o, "proj_in": o_in,
                     "wo_out": attn, "residual": x2, "ln3_out": z, "gate_out": g, "up_out": u,
                     "down_in": m, "down_out": mlp}

    def forward(self, x, rope):
        return self.parts(x, rope)[0]


class GptBlock(nn.Module):
    # nanoGPT's Block (karpathy/nanoGPT model.py, bias=True, dropout 0.0): LayerNorm, one c_attn
    # linear for q, k and v, causal SDPA, c_proj; LayerNorm, c_fc, exact GELU, c_proj: what
    # transformers' GPT2Block computes without dropout (there gelu_new: `tanh` True). `fc` is
    # unused (learned positions are added before the blocks).
    def __init__(self, h, a, f, tanh=False):
        super().__init__()
        self.a, self.d, self.approximate = a, h // a, "tanh" if tanh else "none"
        self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.c_attn = nn.Linear(h, 3 * h)
        self.attn_proj = nn.Linear(h, h)
        self.c_fc = nn.Linear(h, f)
        self.mlp_proj = nn.Linear(f, h)

    def parts(self, x):
        b, s, h = x.shape
        y = self.ln_1(x)
        qkv = self.c_attn(y)
        q, k, v = (t.view(b, s, self.a, self.d).transpose(1, 2) for t in qkv.split(h, dim=2))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o_in = o.transpose(1, 2).contiguous().view(b, s, h)
        x2 = x + self.attn_proj(o_in)
        z = self.ln_2(x2)
        u = self.c_fc(z)
        g = F.gelu(u, approximate=self.approximate)
        return x2 + self.mlp_proj(g), {"block_input": x, "ln_1_out": y, "c_attn_out": qkv,
                                       "sdpa_out": o, "proj_in": o_in, "residual": x2,
                                       "ln_2_out": z, "c_fc_out": u, "gelu_out": g}

    def forward(self, x, fc):
        return self.parts(x)[0]


def saved(fn, x, fc, static, names=None):
    out = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in static and ptr not in out:
            out[ptr] = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                        "bytes": t.untyped_storage().nbytes()}
            for name, ref in (names or {}).items():
                whole = torch.as_strided(t, (t.untyped_storage().nbytes() // t.element_size(),),
                                         (1,), 0)
                if whole.numel() == ref.numel() and whole.dtype == ref.dtype and torch.allclose(
                        whole.detach().float(), ref.reshape(-1).float(), rtol=1e-2, atol=1e-2):
                    out[ptr]["equals"] = name
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = fn(x, fc)
    y.sum().backward()  # the graph is complete
    return sorted(out.values(), key=lambda r: (-r["bytes"], r["shape"]))


def gemma_case(b, s, h, a, kv, f, d, qk_norm):
    # Gemma's layer at the default budget, each saved storage named by the intermediate it equals
    # (the repeated k and v and the rotated q, which no name holds as SDPA receives them, by shape).
    torch.manual_seed(0)
    torch._dynamo.reset()
    torch._functorch.config.activation_memory_budget = 1.0
    blk = GemmaBlock(h, a, kv, f, d, qk_norm).to(torch.bfloat16)
    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    emb = torch.outer(torch.arange(s).float(), inv).repeat(1, 2)
    rope = (emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16))
    static = {p.untyped_storage().data_ptr() for p in blk.parameters()}
    static |= {t.untyped_storage().data_ptr() for t in rope}
    with torch.no_grad():
        names = {k: v.contiguous() for k, v in blk.parts(x.detach(), rope)[1].items()}
    compiled = saved(torch.compile(blk, backend="aot_eager_decomp_partition"), x, rope, static,
                     names)
    eager = saved(blk, x, rope, static, names)
    return {"b": b, "s": s, "h": h, "a": a, "kv": kv, "f": f, "head_dim": d, "dtype": "bfloat16",
            "qk_norm": qk_norm, "activation_memory_budget": 1.0, "compiled": compiled,
            "compiled_bytes": sum(t["bytes"] for t in compiled),
            "eager_bytes": sum(t["bytes"] for t in eager)}


GEMMA_SHAPES = [(2, 64, 256, 4, 2, 512, 96), (2, 64, 256, 4, 4, 512, 64),
                (1, 128, 256, 8, 2, 1024, 32), (2, 32, 512, 8, 8, 384, 128),
                (4, 64, 128, 2, 1, 256, 64)]


def case(b, s, h, a, kv, f, budget, **variant):
    torch.manual_seed(0)
    torch._dynamo.reset()
    torch._functorch.config.activation_memory_budget = budget
    gpt = variant.get("gpt", False)
    blk = (GptBlock(h, a, f, variant.get("tanh", False)) if gpt else
           Block(h, a, kv, f, **{k: v for k, v in variant.items() if k not in ("gpt", "tanh")}))
    blk = blk.to(torch.bfloat16)
    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    d = h // a
    freqs = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    fc = torch.polar(torch.ones(s, d // 2), torch.outer(torch.arange(s).float(), freqs))
    static = {p.untyped_storage().data_ptr() for p in blk.parameters()} | {fc.untyped_storage().data_ptr()}
    names = None
    if gpt:  # each saved storage named by the forward intermediate it equals
        with torch.no_grad():
            names = {k: v.contiguous() for k, v in blk.parts(x.detach())[1].items()}
    compiled = saved(torch.compile(blk, backend="aot_eager_decomp_partition"), x, fc, static,
                     names)
    row = {"b": b, "s": s, "h": h, "a": a, "kv": kv, "f": f, "dtype": "bfloat16", **variant,
           "activation_memory_budget": budget,
           "compiled": compiled, "compiled_bytes": sum(t["bytes"] for t in compiled)}
    if budget == 1.0:
        eager = saved(blk, x, fc, static, names)
        row["eager_bytes"] = sum(t["bytes"] for t in eager)
        if names:
            row["eager"] = eager
    return row


SHAPES = [(2, 64, 256, 4, 2, 512), (2, 64, 256, 4, 4, 512), (1, 128, 256, 8, 2, 1024),
          (2, 32, 512, 8, 8, 384), (4, 64, 128, 2, 1, 256)]


def main():
    if sys.argv[1:] == ["--tp"]:
        main_tp()
        return
    if sys.argv[1:] == ["--gemma"]:
        rows = [gemma_case(*sh, qk) for qk in (False, True) for sh in GEMMA_SHAPES]
        json.dump({"torch": torch.__version__, "backend": "aot_eager_decomp_partition",
                   "block": "measure_compile.py's GemmaBlock (Gemma 2; qk_norm: Gemma 3)",
                   "rows": rows}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if sys.argv[1:] == ["--families"]:
        # Other families' blocks at the default budget: Qwen2 (q/k/v biases), Qwen3 (q/k norms).
        rows = [case(*sh, 1.0, **v) for v in ({"qkv_bias": True}, {"qk_norm": True})
                for sh in SHAPES]
        rows += [case(b, s, h, a, a, f, 1.0, gpt=True, tanh=t) for t in (False, True)
                 for b, s, h, a, _, f in SHAPES]
        json.dump({"torch": torch.__version__, "backend": "aot_eager_decomp_partition",
                   "block": "measure_compile.py's Block with qkv_bias or qk_norm; GptBlock",
                   "rows": rows}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    rows = [case(*sh, budget) for sh in SHAPES for budget in (1.0, 0.5, 0.0)]
    json.dump({"torch": torch.__version__, "backend": "aot_eager_decomp_partition",
               "block": "torchtitan 9dec370 Llama TransformerBlock (own code, this script)",
               "rows": rows}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

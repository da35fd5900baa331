#!/usr/bin/env python3
# Purpose: measure with real PyTorch autograd which tensors one transformer block saves for backward,
# map them to PyTorch-2-on-CUDA terms, and print the JSON reference used by actmem's profile tests.
#
# Usage: /usr/bin/python3 tests/reference/measure_saved.py > tests/reference/pytorch_saved.json
#
# Method: forward one block under torch.autograd.graph.saved_tensors_hooks and record every packed
# tensor; deduplicate by storage (each storage's nbytes counted once); drop parameters and module
# buffers (static memory); attribute each storage to the autograd node(s) that saved it by walking the
# graph's _saved_* attributes; then run backward to prove the graph is complete.  See PROFILES.md.
import json
import math
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DNAME = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.bool: "bool",
         torch.int64: "int64", torch.int32: "int32", torch.float64: "fp64"}
SMAX = 256  # length of causal-mask / rope buffers


# --------------------------------------------------------------------------------------------------
# tagging: give storages a semantic id while the forward runs
# --------------------------------------------------------------------------------------------------
class Tagger:
    def __init__(self):
        self.names = {}  # storage ptr -> list of ids
        self.keep = []  # keep tagged tensors alive so their storage address is not reused

    def __call__(self, name, t):
        if t is None:
            return t
        ptr = t.storage().data_ptr()
        self.keep.append(t)
        lst = self.names.setdefault(ptr, [])
        if name not in lst:
            lst.append(name)
        return t

    def saved_of(self, out, names, depth=3):
        """Tag tensors saved by the first Bmm/Mm node under out.grad_fn (matmul internals)."""
        node = out.grad_fn
        for _ in range(depth):
            if node is None:
                return
            n = node.name()
            if n.startswith("BmmBackward") or n.startswith("MmBackward"):
                self(names[0], node._saved_self)
                self(names[1], node._saved_mat2)
                return
            nxt = [f for f, _ in node.next_functions if f is not None]
            node = nxt[0] if nxt else None


TAG = Tagger()


def dropout(x, p, name, training=True):
    """nn.Dropout / F.dropout as PyTorch 2 runs them on CUDA: p==0 returns the input unchanged,
    0<p<1 goes through native_dropout, which saves only a bool mask."""
    if p == 0.0 or not training:
        return x
    out, mask = torch.native_dropout(x, p, True)
    TAG(name + "_mask", mask)
    TAG(name + "_out", out)
    return out


def matmul(a, b, na, nb):
    out = torch.matmul(a, b)
    TAG.saved_of(out, (na, nb))
    return out


# --------------------------------------------------------------------------------------------------
# attention kernels
# --------------------------------------------------------------------------------------------------
def attn_eager(q, k, v, p, causal_mask_buf):
    """Hand-written attention (pytorch profile): (q @ k^T) * scale, masked_fill causal, softmax,
    dropout, @ v.  q,k,v: (b, a, s, d), k/v already expanded to a heads."""
    s, d = q.shape[-2], q.shape[-1]
    att = matmul(q, k.transpose(-2, -1), "attn.q", "attn.k") * (1.0 / math.sqrt(d))
    att = att.masked_fill(causal_mask_buf[:s, :s], float("-inf"))
    att = TAG("attn.softmax_out", torch.softmax(att, dim=-1))
    att = dropout(att, p, "attn.dropout")
    return matmul(att, v, "attn.probs_for_v", "attn.v")


def repeat_heads(x, n_rep):
    """expand + reshape (== repeat_interleave along heads; HF repeat_kv)."""
    if n_rep == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


def attn_sdpa_math(q, k, v, p, enable_gqa=False, upcast=True):
    """Re-implementation of PyTorch 2.5+ at::_scaled_dot_product_attention_math (attention.cpp):
    fp16/bf16 inputs are upcast to fp32 (allowFP16BF16ReductionMathSDP() is false by default),
    q and k^T are each scaled by sqrt(scale), causal mask added in place, softmax, dropout, @ v,
    result cast back to the input dtype."""
    odt = q.dtype
    if upcast and odt in (torch.float16, torch.bfloat16):
        q, k, v = q.float(), k.float(), v.float()
    s, d = q.shape[-2], q.shape[-1]
    sf = math.sqrt(1.0 / math.sqrt(d))
    qs = q * sf
    if enable_gqa and k.shape[1] != q.shape[1]:
        n_rep = q.shape[1] // k.shape[1]
        k = repeat_heads(k, n_rep)
        v = repeat_heads(v, n_rep)
    with torch.no_grad():
        bias = torch.zeros(s, s, dtype=q.dtype).masked_fill(
            ~torch.ones(s, s, dtype=torch.bool).tril(), float("-inf"))
    att = matmul(qs, k.transpose(-2, -1) * sf, "attn.q", "attn.k")
    att = att.add_(bias)
    att = TAG("attn.softmax_out", torch.softmax(att, dim=-1))
    att = dropout(att, p, "attn.dropout")
    out = matmul(att, v, "attn.probs_for_v", "attn.v")
    return out.to(odt)


class FlashSim(torch.autograd.Function):
    """Stand-in for aten::_scaled_dot_product_flash_attention (CUDA).  Saves exactly what
    derivatives.yaml lists for it: query, key, value (as passed), output, logsumexp (fp32, b x a x s),
    rng_state (uint64[2] -> int64[2] here, 16 B) and `unused` (uint64 scalar -> int64, 8 B).
    The output storage is allocated like mha_fwd does: empty_like(query.transpose(1, 2)), i.e.
    physically (b, s, a, d), and returned transposed back to (b, a, s, d)."""

    @staticmethod
    def forward(ctx, q, k, v, p):
        b, a, s, d = q.shape
        n_rep = a // k.shape[1]
        kk, vv = repeat_heads(k, n_rep), repeat_heads(v, n_rep)
        sc = (q.float() @ kk.float().transpose(-2, -1)) / math.sqrt(d)
        sc = sc.masked_fill(~torch.ones(s, s, dtype=torch.bool).tril(), float("-inf"))
        lse = torch.logsumexp(sc, dim=-1).contiguous()  # (b, a, s) fp32
        res = torch.softmax(sc, -1) @ vv.float()
        out_t = torch.empty_like(q.transpose(1, 2))
        out_t.copy_(res.transpose(1, 2))
        out = out_t.transpose(1, 2)
        rng_state = torch.zeros(2, dtype=torch.int64)
        unused = torch.zeros((), dtype=torch.int64)
        TAG("attn.q", q)
        TAG("attn.k", k)
        TAG("attn.v", v)
        TAG("attn.lse", lse)
        TAG("attn.rng_state", rng_state)
        TAG("attn.rng_unused", unused)
        ctx.save_for_backward(q, k, v, out, lse, rng_state, unused)
        ctx.p = p
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, out, lse, rng_state, unused = ctx.saved_tensors
        with torch.enable_grad():
            q2, k2, v2 = [t.detach().float().requires_grad_() for t in (q, k, v)]
            n_rep = q.shape[1] // k.shape[1]
            kk, vv = repeat_heads(k2, n_rep), repeat_heads(v2, n_rep)
            s, d = q.shape[-2], q.shape[-1]
            sc = (q2 @ kk.transpose(-2, -1)) / math.sqrt(d)
            sc = sc.masked_fill(~torch.ones(s, s, dtype=torch.bool).tril(), float("-inf"))
            o = torch.softmax(sc, -1) @ vv
            gq, gk, gv = torch.autograd.grad(o, (q2, k2, v2), g.float())
        return gq.to(q.dtype), gk.to(k.dtype), gv.to(v.dtype), None


def attn_flash(q, k, v, p):
    out = FlashSim.apply(q, k, v, p)
    TAG("attn.out", out)
    return out


# --------------------------------------------------------------------------------------------------
# blocks
# --------------------------------------------------------------------------------------------------
class PtGPT2Block(nn.Module):
    """pytorch profile, GPT-2 style: pre-LN, nn.LayerNorm, fused QKV Linear(bias), hand-written or
    SDPA attention, out proj, residual dropout, LN, Linear(h,f), exact GELU, Linear(f,h), dropout."""

    def __init__(self, h, a, f, p, attention):
        super().__init__()
        self.h, self.a, self.d, self.p, self.attention = h, a, h // a, p, attention
        self.ln1 = nn.LayerNorm(h)
        self.c_attn = nn.Linear(h, 3 * h)
        self.c_proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc = nn.Linear(h, f)
        self.fc2 = nn.Linear(f, h)
        self.register_buffer("masked", torch.ones(SMAX, SMAX, dtype=torch.bool).triu(1))

    def forward(self, x):
        b, s, h = x.shape
        a, d = self.a, self.d
        TAG("ln1.in", x)
        y = TAG("attn.qkv_in", self.ln1(x))
        qkv = TAG("attn.qkv_out", self.c_attn(y))
        q, k, v = qkv.split(h, dim=2)
        q = q.view(b, s, a, d).transpose(1, 2)
        k = k.view(b, s, a, d).transpose(1, 2)
        v = v.view(b, s, a, d).transpose(1, 2)
        o = run_attention(self.attention, q, k, v, self.p, self.masked, gqa_in_sdpa=False)
        o = TAG("attn.proj_in", o.transpose(1, 2).contiguous().view(b, s, h))
        x = TAG("ln2.in", x + dropout(self.c_proj(o), self.p, "attn.proj_dropout"))
        y = TAG("mlp.fc1_in", self.ln2(x))
        u = TAG("mlp.act_in", self.fc(y))
        g = TAG("mlp.fc2_in", F.gelu(u))
        return x + dropout(self.fc2(g), self.p, "mlp.dropout")


def run_attention(kind, q, k, v, p, masked_buf, gqa_in_sdpa):
    """q: (b,a,s,d); k,v: (b,kv,s,d).  eager/sdpa_* of the pytorch profile expand k,v first;
    the hf sdpa path passes kv heads with enable_gqa when gqa_in_sdpa is True."""
    n_rep = q.shape[1] // k.shape[1]
    if kind == "eager" or not gqa_in_sdpa:
        k, v = repeat_heads(k, n_rep), repeat_heads(v, n_rep)
        if n_rep > 1:
            TAG("attn.k_rep", k)
            TAG("attn.v_rep", v)
    if kind == "eager":
        return attn_eager(q, k, v, p, masked_buf)
    if kind == "sdpa_math":
        return attn_sdpa_math(q, k, v, p, enable_gqa=gqa_in_sdpa)
    if kind == "sdpa_flash":
        return attn_flash(q, k, v, p)
    raise ValueError(kind)


class PtRMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.w = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x, name):
        TAG(name + ".in", x)
        r = TAG(name + ".rstd", torch.rsqrt(TAG(name + ".sq_1_13_only", x.pow(2)).mean(-1, keepdim=True) + self.eps))
        xn = TAG(name + ".xhat", x * r)
        return xn * self.w


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_tables(s, d, dtype, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    fr = torch.outer(torch.arange(s, dtype=torch.float32), inv)
    emb = torch.cat((fr, fr), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class PtLlamaBlock(nn.Module):
    """pytorch profile, Llama style: RMSNorm in activation dtype, q/k/v Linear (no bias) with GQA,
    RoPE (rotate_half, cos/sin buffers), k/v expanded to all heads, attention, o_proj, RMSNorm,
    SwiGLU.  Only the attention probabilities get dropout."""

    def __init__(self, h, a, kv, f, p, attention, dtype):
        super().__init__()
        self.h, self.a, self.kv, self.d, self.p, self.attention = h, a, kv, h // a, p, attention
        d = h // a
        self.norm1 = PtRMSNorm(h)
        self.q_proj = nn.Linear(h, a * d, bias=False)
        self.k_proj = nn.Linear(h, kv * d, bias=False)
        self.v_proj = nn.Linear(h, kv * d, bias=False)
        self.o_proj = nn.Linear(a * d, h, bias=False)
        self.norm2 = PtRMSNorm(h)
        self.gate = nn.Linear(h, f, bias=False)
        self.up = nn.Linear(h, f, bias=False)
        self.down = nn.Linear(f, h, bias=False)
        cos, sin = rope_tables(SMAX, d, dtype)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        self.register_buffer("masked", torch.ones(SMAX, SMAX, dtype=torch.bool).triu(1))

    def forward(self, x):
        b, s, h = x.shape
        a, kv, d = self.a, self.kv, self.d
        y = TAG("attn.qkv_in", self.norm1(x, "norm1"))
        q = self.q_proj(y).view(b, s, a, d).transpose(1, 2)
        k = self.k_proj(y).view(b, s, kv, d).transpose(1, 2)
        v = TAG("attn.v_proj_out", self.v_proj(y)).view(b, s, kv, d).transpose(1, 2)
        cos, sin = self.cos[:s], self.sin[:s]
        q = TAG("rope.q_out", q * cos + rotate_half(q) * sin)
        k = TAG("rope.k_out", k * cos + rotate_half(k) * sin)
        o = run_attention(self.attention, q, k, v, self.p, self.masked, gqa_in_sdpa=False)
        o = TAG("attn.proj_in", o.transpose(1, 2).contiguous().view(b, s, h))
        x = TAG("norm2.in", x + self.o_proj(o))
        y = TAG("mlp.fc1_in", self.norm2(x, "norm2"))
        gt = TAG("mlp.gate", self.gate(y))
        sg = TAG("mlp.act_out", F.silu(gt))
        up = TAG("mlp.up", self.up(y))
        m = TAG("mlp.fc2_in", sg * up)
        return x + self.down(m)


# ---------------------------- hf profile: transformers' eager modules ----------------------------
class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: addmm(bias, x.view(-1, nx), weight)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    """transformers.activations.NewGELUActivation, written in python ops."""
    t = TAG("mlp.gelu_tanh", torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    return TAG("mlp.gelu_halfx", 0.5 * x) * TAG("mlp.gelu_1p_tanh", 1.0 + t)


class HfGPT2Block(nn.Module):
    """GPT2Block / GPT2Attention._attn / GPT2SdpaAttention / GPT2MLP (transformers 4.4x)."""

    def __init__(self, h, a, f, p, attention):
        super().__init__()
        self.h, self.a, self.d, self.p, self.attention = h, a, h // a, p, attention
        self.ln_1 = nn.LayerNorm(h)
        self.c_attn = Conv1D(3 * h, h)
        self.c_proj = Conv1D(h, h)
        self.ln_2 = nn.LayerNorm(h)
        self.c_fc = Conv1D(f, h)
        self.mlp_proj = Conv1D(h, f)
        self.register_buffer("bias", torch.tril(torch.ones(SMAX, SMAX, dtype=torch.bool)).view(1, 1, SMAX, SMAX),
                             persistent=False)

    def _attn(self, q, k, v):
        w = matmul(q, k.transpose(-1, -2), "attn.q", "attn.k")
        w = w / TAG("attn.scale_divisor", torch.full([], v.size(-1) ** 0.5, dtype=w.dtype))
        ql, kl = q.size(-2), k.size(-2)
        causal = self.bias[:, :, kl - ql: kl, :kl]
        mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype)
        w = torch.where(causal, w.to(w.dtype), mask_value)
        w = TAG("attn.softmax_out", nn.functional.softmax(w, dim=-1))
        w = w.type(v.dtype)
        w = dropout(w, self.p, "attn.dropout")
        return matmul(w, v, "attn.probs_for_v", "attn.v")

    def forward(self, x):
        b, s, h = x.shape
        a, d = self.a, self.d
        TAG("ln1.in", x)
        y = TAG("attn.qkv_in", self.ln_1(x))
        qkv = TAG("attn.qkv_out", self.c_attn(y))
        q, k, v = qkv.split(h, dim=2)
        q = q.view(b, s, a, d).permute(0, 2, 1, 3)
        k = k.view(b, s, a, d).permute(0, 2, 1, 3)
        v = v.view(b, s, a, d).permute(0, 2, 1, 3)
        if self.attention == "eager":
            o = self._attn(q, k, v)
        else:
            o = run_attention(self.attention, q, k, v, self.p, None, gqa_in_sdpa=False)
        o = TAG("attn.proj_in", o.permute(0, 2, 1, 3).contiguous().view(b, s, h))
        x = TAG("ln2.in", x + dropout(self.c_proj(o), self.p, "attn.proj_dropout"))
        y = TAG("mlp.fc1_in", self.ln_2(x))
        u = TAG("mlp.act_in", self.c_fc(y))
        g = TAG("mlp.fc2_in", gelu_new(u))
        return x + dropout(self.mlp_proj(g), self.p, "mlp.dropout")


class LlamaRMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.variance_epsilon = eps

    def forward(self, hidden_states, name):
        input_dtype = hidden_states.dtype
        TAG(name + ".in", hidden_states)
        hidden_states = TAG(name + ".in_fp32", hidden_states.to(torch.float32))
        variance = TAG(name + ".sq_1_13_only", hidden_states.pow(2)).mean(-1, keepdim=True)
        r = TAG(name + ".rstd", torch.rsqrt(variance + self.variance_epsilon))
        hidden_states = hidden_states * r
        return self.weight * TAG(name + ".xhat", hidden_states.to(input_dtype))


class HfLlamaBlock(nn.Module):
    """LlamaDecoderLayer (transformers 4.48+: eager_attention_forward / sdpa_attention_forward)."""

    def __init__(self, h, a, kv, f, p, attention):
        super().__init__()
        self.h, self.a, self.kv, self.d, self.p, self.attention = h, a, kv, h // a, p, attention
        d = h // a
        self.scaling = d ** -0.5
        self.input_layernorm = LlamaRMSNorm(h)
        self.q_proj = nn.Linear(h, a * d, bias=False)
        self.k_proj = nn.Linear(h, kv * d, bias=False)
        self.v_proj = nn.Linear(h, kv * d, bias=False)
        self.o_proj = nn.Linear(a * d, h, bias=False)
        self.post_attention_layernorm = LlamaRMSNorm(h)
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)

    def forward(self, x, cos, sin, causal_mask):
        b, s, h = x.shape
        a, kv, d = self.a, self.kv, self.d
        residual = x
        y = TAG("attn.qkv_in", self.input_layernorm(x, "norm1"))
        q = self.q_proj(y).view(b, s, -1, d).transpose(1, 2)
        k = self.k_proj(y).view(b, s, -1, d).transpose(1, 2)
        v = TAG("attn.v_proj_out", self.v_proj(y)).view(b, s, -1, d).transpose(1, 2)
        c, sn = cos.unsqueeze(1), sin.unsqueeze(1)
        q = TAG("rope.q_out", (q * c) + (rotate_half(q) * sn))
        k = TAG("rope.k_out", (k * c) + (rotate_half(k) * sn))
        if self.attention == "eager":
            ks, vs = repeat_heads(k, a // kv), repeat_heads(v, a // kv)
            if a != kv:
                TAG("attn.k_rep", ks)
                TAG("attn.v_rep", vs)
            w = matmul(q, ks.transpose(2, 3), "attn.q", "attn.k") * self.scaling
            w = w + causal_mask[:, :, :, : ks.shape[-2]]
            w32 = TAG("attn.softmax_out", nn.functional.softmax(w, dim=-1, dtype=torch.float32))
            w = w32.to(q.dtype)
            w = dropout(w, self.p, "attn.dropout")
            o = matmul(w, vs, "attn.probs_for_v", "attn.v")
        else:
            # sdpa_attention_forward: attention_mask is None and torch>=2.5 -> enable_gqa=True
            o = run_attention(self.attention, q, k, v, self.p, None, gqa_in_sdpa=True)
        o = o.transpose(1, 2).contiguous()
        o = TAG("attn.proj_in", o.reshape(b, s, -1).contiguous())
        x = TAG("norm2.in", residual + self.o_proj(o))
        y = TAG("mlp.fc1_in", self.post_attention_layernorm(x, "norm2"))
        gt = TAG("mlp.gate", self.gate_proj(y))
        sg = TAG("mlp.act_out", F.silu(gt))
        up = TAG("mlp.up", self.up_proj(y))
        m = TAG("mlp.fc2_in", sg * up)
        return x + self.down_proj(m)


# --------------------------------------------------------------------------------------------------
# measurement
# --------------------------------------------------------------------------------------------------
def storage_key(t):
    return t.storage().data_ptr()


def storage_nbytes(t):
    return t.storage().size() * t.element_size()


def walk_saved(root):
    """(node name, attribute, tensor) for every tensor saved in the graph under root."""
    out, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        name = node.name()
        for attr in dir(node):
            if attr.startswith("_saved_"):
                try:
                    val = getattr(node, attr)
                except Exception:
                    continue
                vals = val if isinstance(val, (list, tuple)) else [val]
                for t in vals:
                    if isinstance(t, torch.Tensor):
                        out.append((name, attr, t))
        if type(node).__name__ == "BackwardCFunction" or name.endswith("SimBackward"):
            try:
                for i, t in enumerate(node.saved_tensors):
                    if isinstance(t, torch.Tensor):
                        out.append((name, "saved_tensors[%d]" % i, t))
            except Exception:
                pass
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return out


def group_by_node(root):
    res, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        d = {}
        for attr in dir(node):
            if attr.startswith("_saved_"):
                try:
                    v = getattr(node, attr)
                except Exception:
                    continue
                if isinstance(v, torch.Tensor):
                    d[attr] = v
        res.append((node.name(), d))
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return res


# Rules mapping 1.13-CPU saved tensors to PyTorch 2 on CUDA.
def cuda_rule(ops, t, ids):
    """Returns (cuda_bytes_per_element or None to keep, dropped_on_cuda:bool, note)."""
    opset = {o for o, _ in ops}
    attrs = {(o, at) for o, at in ops}
    # LayerNorm mean/rstd: fp32 (acc type) on CUDA, (b, s, 1).
    if all(o.startswith("NativeLayerNormBackward") and at in ("_saved_result1", "_saved_result2") for o, at in ops):
        return 4, False, "LayerNorm mean/rstd kept in fp32 on CUDA"
    # Python scalars become 0-dim fp64 "wrapped number" tensors that live on the CPU even when the
    # other operand is on CUDA: no device memory.
    if t.dim() == 0 and t.dtype == torch.float64:
        return 0, False, "wrapped Python scalar (0-dim fp64, host memory): 0 device bytes"
    # 1.13-only saves: tensors referenced only by ops whose PyTorch-2 formula does not read them.
    if all(o.startswith("MeanBackward") for o in opset):
        return None, True, "mean() input: saved by 1.13 MeanBackward1 only; PyTorch 2 keeps only sizes"
    return None, False, ""


def measure(block, inputs, extra_model_shared=()):
    TAG.names.clear()
    TAG.keep.clear()
    params = {storage_key(p) for p in block.parameters()}
    bufs = {storage_key(bf) for bf in block.buffers()}
    shared = {storage_key(t) for t in extra_model_shared}
    packed = []
    rec = [True]

    def pack(t):
        if rec[0]:
            packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = block(*inputs)
    rec[0] = False
    saved = walk_saved(out.grad_fn)
    # name LayerNorm statistics after the LayerNorm whose input they belong to
    for node_tensors in group_by_node(out.grad_fn):
        name, d = node_tensors
        if name.startswith("NativeLayerNormBackward") and "_saved_input" in d:
            ids = TAG.names.get(storage_key(d["_saved_input"]), [])
            base = [i[:-3] for i in ids if i.endswith(".in")]
            if base:
                TAG(base[0] + ".mean", d["_saved_result1"])
                TAG(base[0] + ".rstd", d["_saved_result2"])
    packed_keys = {storage_key(t) for t in packed}
    walked_keys = {storage_key(t) for _, _, t in saved}
    by_storage = {}
    for op, attr, t in saved:
        k = storage_key(t)
        e = by_storage.setdefault(k, {"ops": [], "t": t})
        if (op, attr) not in e["ops"]:
            e["ops"].append((op, attr))
        # keep the largest view as the representative tensor
        if t.numel() > e["t"].numel():
            e["t"] = t
    # tensors packed by hooks but not reachable by the walk (should not happen)
    missing = packed_keys - walked_keys
    for t in packed:
        k = storage_key(t)
        if k in missing and k not in by_storage:
            by_storage[k] = {"ops": [("<hook-only>", "")], "t": t}

    tensors, excluded = [], []
    measured = 0
    cuda_total = 0
    for k, e in by_storage.items():
        t = e["t"]
        nbytes = storage_nbytes(t)
        ids = TAG.names.get(k, [])
        opnames = "+".join(sorted({o for o, _ in e["ops"]}))
        entry = {"op": opnames, "shape": list(t.shape), "dtype": DNAME.get(t.dtype, str(t.dtype)),
                 "bytes": nbytes}
        if k in params:
            excluded.append(dict(entry, kind="parameter"))
            continue
        if k in bufs:
            excluded.append(dict(entry, kind="buffer"))
            continue
        if k in shared:
            entry["cuda_bytes"] = 0
            entry["note"] = ("id=%s; model-level tensor shared by every layer (HF position_embeddings); "
                             "counted once per model, not per layer" % ",".join(ids or ["rope.cos_sin"]))
            tensors.append(entry)
            excluded.append(dict(entry, kind="model_shared"))
            continue
        measured += nbytes
        per_el, dropped, why = cuda_rule(e["ops"], t, ids)
        if dropped:
            cb = 0
        elif per_el is not None:
            cb = (nbytes // t.element_size()) * per_el
        else:
            cb = nbytes
        cuda_total += cb
        if not ids and t.dim() == 0 and t.dtype == torch.float64:
            ids = ["host.wrapped_scalar"]
        note = "id=" + ",".join(ids) if ids else "id=?"
        note += "; saved as " + ",".join("%s.%s" % (o, a) for o, a in e["ops"])
        if storage_nbytes(t) != t.numel() * t.element_size():
            note += "; saved view of a larger storage (storage counted)"
        if why:
            note += "; " + why
        entry["cuda_bytes"] = cb
        entry["note"] = note
        tensors.append(entry)
    # prove the graph is complete
    out.float().sum().backward()
    tensors.sort(key=lambda e: -e["bytes"])
    return measured, cuda_total, tensors, excluded, (len(missing) == 0)


def mappings_for(tensors, flash):
    maps = []
    ln = [t for t in tensors if "LayerNorm mean/rstd" in t.get("note", "")]
    if ln:
        delta = sum(t["cuda_bytes"] - t["bytes"] for t in ln)
        maps.append("LayerNorm mean/rstd (%d tensors) counted as fp32 on CUDA: %+d bytes" % (len(ln), delta))
    ws = [t for t in tensors if "wrapped Python scalar" in t.get("note", "")]
    if ws:
        maps.append("wrapped Python scalars saved by MulBackward0 live in host memory: %+d bytes"
                    % -sum(t["bytes"] for t in ws))
    mean = [t for t in tensors if "MeanBackward1 only" in t.get("note", "")]
    if mean:
        maps.append("mean() input kept only by 1.13 MeanBackward1 dropped: %+d bytes"
                    % -sum(t["bytes"] for t in mean))
    sh = [t for t in tensors if "model-level" in t.get("note", "")]
    if sh:
        maps.append("HF cos/sin position embeddings are model-level (shared across layers), excluded "
                    "from the per-layer total: %d bytes not counted" % sum(t["bytes"] for t in sh))
    maps.append("dropout taken through torch.native_dropout (CUDA path): mask is bool, 1 byte/elem; "
                "p == 0 returns the input, nothing saved")
    if flash:
        maps.append("flash attention is analytic (no flash kernel in 1.13/CPU): a custom autograd Function "
                    "saves q, k, v, out (storage allocated as empty_like(q.transpose(1,2))), logsumexp fp32 "
                    "(b,a,s), rng_state int64[2] (16 B, uint64 on CUDA) and unused int64 scalar (8 B); the rest "
                    "of the block is real autograd; measured_bytes is therefore null")
    return maps


def debian_torch_version():
    try:
        v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-torch"], capture_output=True,
                           text=True).stdout.strip()
        return v.split("+")[0] if v else torch.__version__
    except Exception:
        return torch.__version__


def build(profile, arch, attention, dtype, b, s, h, a, kv, f, p):
    torch.manual_seed(0)
    dt = DTYPES[dtype]
    if profile == "pytorch" and arch == "gpt2":
        blk = PtGPT2Block(h, a, f, p, attention)
    elif profile == "pytorch" and arch == "llama":
        blk = PtLlamaBlock(h, a, kv, f, p, attention, dt)
    elif profile == "hf" and arch == "gpt2":
        blk = HfGPT2Block(h, a, f, p, attention)
    else:
        blk = HfLlamaBlock(h, a, kv, f, p, attention)
    blk = blk.to(dt)
    blk.train()
    x = torch.randn(b, s, h, dtype=dt).requires_grad_()
    inputs, shared = [x], []
    if profile == "hf" and arch == "llama":
        cos, sin = rope_tables(s, h // a, dt)
        cos, sin = cos[None], sin[None]  # (1, s, d): position_ids = cache_position.unsqueeze(0)
        with torch.no_grad():
            cm = torch.full((s, s), torch.finfo(dt).min, dtype=dt).triu(1)[None, None].expand(b, 1, s, s)
        inputs += [cos, sin, cm]
        shared = [cos, sin]
    return blk, inputs, shared


def main():
    sizes = [
        dict(b=2, s=64, h=128, a=4, f_gpt2=512, f_llama=512, kvs=[4, 2]),
        dict(b=1, s=128, h=256, a=8, f_gpt2=1024, f_llama=688, kvs=[8, 2]),
    ]
    configs = []
    all_ok = True
    for profile in ("pytorch", "hf"):
        for arch in ("gpt2", "llama"):
            for sz in sizes:
                kvs = sz["kvs"] if arch == "llama" else [sz["a"]]
                f = sz["f_gpt2"] if arch == "gpt2" else sz["f_llama"]
                for kv in kvs:
                    for dtype in ("fp32", "bf16"):
                        for p in (0.0, 0.1):
                            for attention in ("eager", "sdpa_math", "sdpa_flash"):
                                if attention == "sdpa_flash" and dtype == "fp32":
                                    continue  # flash kernel accepts only fp16/bf16
                                b, s, h, a = sz["b"], sz["s"], sz["h"], sz["a"]
                                blk, inputs, shared = build(profile, arch, attention, dtype, b, s, h, a, kv, f, p)
                                measured, cuda, tensors, excluded, ok = measure(blk, inputs, shared)
                                all_ok &= ok
                                flash = attention == "sdpa_flash"
                                cid = "%s-%s-%s-%s-b%d-s%d-h%d-a%d-kv%d-f%d-p%g" % (
                                    profile, arch, attention, dtype, b, s, h, a, kv, f, p)
                                configs.append({
                                    "id": cid, "profile": profile, "arch": arch, "attention": attention,
                                    "dtype": dtype, "b": b, "s": s, "h": h, "a": a, "kv": kv, "d": h // a,
                                    "f": f, "dropout": p,
                                    "measured_bytes": None if flash else measured,
                                    "cuda_bytes": cuda,
                                    "mappings": mappings_for(tensors, flash),
                                    "tensors": tensors,
                                })
                                sys.stderr.write("%-60s measured=%-9s cuda=%d\n" % (cid, measured, cuda))
    if not all_ok:
        sys.stderr.write("WARNING: some packed tensors were not reachable by the graph walk\n")
    json.dump({"generator": "tests/reference/measure_saved.py", "torch_version": debian_torch_version(),
               "configs": configs}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

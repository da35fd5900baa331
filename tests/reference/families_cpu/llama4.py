# Purpose: the Llama 4 text stack as transformers 5.17 runs it (modeling_llama4.py: Llama4TextModel,
# Llama4ForCausalLM): RMSNorm on an fp32 copy times the weight after the cast back; attention with
# complex rope (freqs_cis) on the rope layers, the weightless L2 qk_norm on rope layers, and on the
# NoPE layers (every fourth: no_rope_layers) no rope, no qk_norm, but the attention-temperature
# scale of the query (attn_temperature_tuning, floor_scale 8192, attn_scale 0.1); chunked attention
# (attention_chunk_size) on the rope layers, full causal on the NoPE ones; eager softmax in the
# activation dtype; MoE on every interleave_moe_layer_step-th layer (Llama4TextMoe: the router's
# top-k logits scattered into -inf, sigmoid in fp32; every expert runs every token, its input scaled
# by its score; the batched-GEMM experts; the shared expert added in place), dense
# Llama4TextMLP (intermediate_size_mlp) elsewhere.

import torch
import torch.nn.functional as F
from torch import nn

import common

H = 256


class RMSNorm(nn.Module):
    """Llama4TextRMSNorm: x.float() normalized, cast back, times the weight."""

    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


class L2Norm(nn.Module):
    """Llama4TextL2Norm: the same normalization without a weight."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


RotaryComplex = common.RotaryComplex  # Llama4TextRotaryEmbedding


def apply_rotary_emb(q, k, freqs_cis):
    q_ = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
    k_ = torch.view_as_complex(k.float().reshape(*k.shape[:-1], -1, 2))
    q_out = torch.view_as_real(q_ * freqs_cis[:, :, None, :]).flatten(3)
    k_out = torch.view_as_real(k_ * freqs_cis[:, :, None, :]).flatten(3)
    return q_out.type_as(q), k_out.type_as(k)


def eager_attention(module, q, k, v, mask, scaling, dropout=0.0):
    """Llama4's eager_attention_forward: the softmax runs in the activation dtype."""
    k = common.repeat_kv(k, module.groups)
    v = common.repeat_kv(v, module.groups)
    w = torch.matmul(q, k.transpose(2, 3)) * scaling
    if mask is not None:
        w = w + mask[:, :, :, : k.shape[-2]]
    w = F.softmax(w, dim=-1)
    w = F.dropout(w, p=dropout, training=module.training)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


class Attention(nn.Module):
    """Llama4TextAttention."""

    def __init__(self, cfg, idx):
        super().__init__()
        h, a, kv, d = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        self.d, self.groups, self.scaling, self.impl = d, a // kv, d ** -0.5, cfg["attn"]
        self.use_rope = (idx + 1) % 4 != 0  # no_rope_layers' default
        self.floor_scale, self.attn_scale = 8192, 0.1
        self.q_proj = nn.Linear(h, a * d, bias=False)
        self.k_proj = nn.Linear(h, kv * d, bias=False)
        self.v_proj = nn.Linear(h, kv * d, bias=False)
        self.o_proj = nn.Linear(a * d, h, bias=False)
        if self.use_rope:  # config.use_qk_norm and self.use_rope
            self.qk_norm = L2Norm(cfg.get("rms_norm_eps", 1e-5))

    def forward(self, x, rope, mask):
        b, s = x.shape[:-1]
        q = self.q_proj(x).view(b, s, -1, self.d)
        k = self.k_proj(x).view(b, s, -1, self.d)
        v = self.v_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        if self.use_rope:
            q, k = apply_rotary_emb(q, k, rope)
        if hasattr(self, "qk_norm"):
            q = self.qk_norm(q)
            k = self.qk_norm(k)
        if not self.use_rope:  # attn_temperature_tuning
            pos = torch.arange(s)
            scales = torch.log(torch.floor((pos.float() + 1.0) / self.floor_scale) + 1.0) * self.attn_scale + 1.0
            scales = scales.view(1, s, 1, 1).expand(b, s, 1, 1)
            q = (q * scales).to(q.dtype)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        if self.impl == "eager":
            out = eager_attention(self, q, k, v, mask, self.scaling)
        else:
            out = common.sdpa_math_attention(self, q, k, v, mask, self.scaling)
        return self.o_proj(out.reshape(b, s, -1).contiguous())


class MLP(nn.Module):
    """Llama4TextMLP: down(activation_fn(gate(x)) * up(x))."""

    def __init__(self, h, f):
        super().__init__()
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)
        self.activation_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.activation_fn(self.gate_proj(x)) * self.up_proj(x))


class Router(nn.Linear):
    """Llama4Router: top-k of the logits, the rest -inf, sigmoid in fp32, cast back."""

    def __init__(self, h, e, k):
        super().__init__(h, e, bias=False)
        self.top_k = k

    def forward(self, x):
        logits = super().forward(x)
        top_v, top_i = torch.topk(logits, self.top_k, dim=1)
        scores = torch.full_like(logits, float("-inf")).scatter_(1, top_i, top_v)
        return torch.sigmoid(scores.float()).to(logits.dtype), logits


class Experts(nn.Module):
    """Llama4TextExperts: every expert's batched GEMMs over its (score-scaled) copy of all tokens."""

    def __init__(self, e, h, f):
        super().__init__()
        self.e, self.h = e, h
        self.gate_up_proj = nn.Parameter(torch.randn(e, h, 2 * f) * 0.02)
        self.down_proj = nn.Parameter(torch.randn(e, f, h) * 0.02)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        x = x.view(self.e, -1, self.h)
        gate, up = torch.bmm(x, self.gate_up_proj).chunk(2, dim=-1)
        return torch.bmm(up * self.act_fn(gate), self.down_proj).view(-1, self.h)


class MoE(nn.Module):
    """Llama4TextMoe."""

    def __init__(self, cfg):
        super().__init__()
        h, e = cfg["hidden_size"], cfg["num_local_experts"]
        self.h = h
        self.experts = Experts(e, h, cfg["intermediate_size"])
        self.router = Router(h, e, cfg["num_experts_per_tok"])
        self.shared_expert = MLP(h, cfg["intermediate_size"])

    def forward(self, x):
        x = x.reshape(-1, self.h)
        scores, _ = self.router(x)
        routed_in = x.repeat(scores.shape[1], 1)
        routed_in = routed_in * scores.transpose(0, 1).reshape(-1, 1)
        routed_out = self.experts(routed_in)
        out = self.shared_expert(x)
        out.add_(routed_out.reshape(scores.shape[1], -1, routed_out.shape[-1]).sum(dim=0))
        return out


class DecoderLayer(nn.Module):
    """Llama4TextDecoderLayer."""

    def __init__(self, cfg, idx):
        super().__init__()
        h = cfg["hidden_size"]
        step = cfg["interleave_moe_layer_step"]
        self.self_attn = Attention(cfg, idx)
        self.is_moe_layer = idx in range(step - 1, cfg["num_hidden_layers"], step)
        self.feed_forward = MoE(cfg) if self.is_moe_layer else MLP(h, cfg["intermediate_size_mlp"])
        self.input_layernorm = RMSNorm(h)
        self.post_attention_layernorm = RMSNorm(h)

    def forward(self, x, rope, mask):
        r = x
        x = r + self.self_attn(self.input_layernorm(x), rope, mask)
        r = x
        x = self.feed_forward(self.post_attention_layernorm(x))
        return r + x.view(r.shape)


class Inner(common.Inner):
    """Llama4TextModel: chunked masks on the rope layers, full causal on the NoPE layers."""

    def __init__(self, cfg, lc):
        super().__init__(cfg, lc)
        self.norm = RMSNorm(cfg["hidden_size"])
        self.rotary_emb = RotaryComplex(cfg["head_dim"], base=cfg.get("rope_theta", 500000.0))

    def masks(self, x):
        b, s = x.shape[:2]
        chunk = self.cfg["attention_chunk_size"]
        out = []
        for layer in self.layers:
            c = chunk if layer.self_attn.use_rope else None
            if self.cfg["attn"] == "eager":
                out.append(common.causal_mask(b, s, x.dtype, chunk=c))
            elif c is None:
                out.append(None)  # SDPA's causal flag, no mask
            else:  # the boolean chunked mask the SDPA path receives
                out.append(common.causal_mask(b, s, torch.float32, chunk=c) == 0)
        return out


FAMILIES = [
    ("llama4_text", dict(hidden_size=H, intermediate_size=256, intermediate_size_mlp=512, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_local_experts=4,
                         num_experts_per_tok=1, interleave_moe_layer_step=2, attention_chunk_size=32),
     lambda cfg: common.CausalLM(cfg, DecoderLayer, Inner)),
]

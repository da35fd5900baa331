# Purpose: gpt-oss as transformers 5.17 runs it in training (modeling_gpt_oss.py: GptOssForCausalLM),
# op for op, so what autograd saves can be measured on the CPU: alternating sliding-window and full
# attention (layer_types, sliding_window), eager attention with sinks (one learned logit per head
# concatenated as a last score column, the row max subtracted, softmax in the activation dtype, the
# sink column dropped), q/k/v/o biases (attention_bias), gpt-oss's half-split rotary
# (_apply_rotary_emb on chunks, cos/sin of head_dim / 2), GptOssRMSNorm (weight times the fp32
# normalized input, cast back after), the top-k router with a bias (softmax over the k logits in
# their dtype), and the experts run by integrations/moe.py's grouped_mm path (qwen3.py's
# GroupedMM and the same sort / sentinel / unsort steps) with biases on both projections, the
# weights stored (E, in, out) (is_transposed) and gpt-oss's clamped SwiGLU (_apply_gate: gate and
# up interleaved, gate clamped above at limit 7, up clamped to +-7, gate * sigmoid(1.702 gate) *
# (up + 1)).
#
# transformers refuses SDPA for gpt-oss (_supports_sdpa = False; the H200's sdpa rows hold the
# ValueError): the builder raises NotImplementedError for "sdpa_math".
#
# Not reproduced, and invisible in the saved tensors: GptOssPreTrainedModel keeps the norms'
# weights in fp32 (_keep_in_fp32_modules); here they take the model's dtype. weight * x keeps only
# the fp32 normalized x either way (the weight is a parameter), so the records are the same.
import math

import torch
import torch.nn.functional as F
from torch import nn

import common
from qwen3 import grouped_experts_forward

H = 256


class GptOssRMSNorm(nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return (self.weight * x).to(dt)


class GptOssRotary(nn.Module):
    """GptOssRotaryEmbedding: cos and sin of the half table (no cat), times the yarn attention
    factor, in fp32, cast to x's dtype. Values do not change what is saved."""

    def __init__(self, dim, base, factor):
        super().__init__()
        inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.attention_scaling = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0

    @torch.no_grad()
    def forward(self, x, pos):
        inv = self.inv_freq[None, :, None].float().expand(pos.shape[0], -1, 1)
        p = pos[:, None, :].float()
        freqs = (inv.float() @ p.float()).transpose(1, 2)
        cos = freqs.cos() * self.attention_scaling
        sin = freqs.sin() * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


def _rotate(x, cos, sin):
    first, second = torch.chunk(x, 2, dim=-1)
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


def apply_rotary(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


def eager_sink_attention(module, q, k, v, mask, scaling):
    """gpt-oss eager_attention_forward: scores, mask, the sinks as one more column, minus the row
    max, softmax in the scores' dtype, the sink column dropped, dropout (p = 0), times V."""
    k = common.repeat_kv(k, module.groups)
    v = common.repeat_kv(v, module.groups)
    w = torch.matmul(q, k.transpose(2, 3)) * scaling
    if mask is not None:
        w = w + mask[:, :, :, : k.shape[-2]]
    sinks = module.sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[-2], -1)
    logits = torch.cat([w, sinks], dim=-1)
    logits = logits - logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(logits, dim=-1, dtype=logits.dtype)
    w = F.dropout(probs[..., :-1], p=0.0, training=module.training)
    out = torch.matmul(w, v)
    return out.transpose(1, 2).contiguous()


class GptOssAttention(common.Attention):
    def __init__(self, cfg, idx):
        super().__init__(cfg, idx)  # attention_bias (True for gpt-oss) gives q/k/v/o their biases
        self.sliding = cfg["layer_types"][idx] == "sliding_attention"
        self.sinks = nn.Parameter(torch.empty(cfg["num_attention_heads"]).normal_(0.0, 0.02))

    def forward(self, x, rope, mask):
        q, k, v = self.project(x)
        q, k = apply_rotary(q, k, *rope)
        out = eager_sink_attention(self, q, k, v, mask, self.scaling)
        return self.o_proj(out.reshape(*x.shape[:-1], -1).contiguous())


class GptOssTopKRouter(nn.Module):
    """A linear with a bias, top-k of the logits, softmax over the k in their dtype."""

    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg["num_experts_per_tok"]
        self.hidden_dim = cfg["hidden_size"]
        e = cfg["num_local_experts"]
        self.weight = nn.Parameter(torch.empty(e, self.hidden_dim).normal_(0.0, 0.02))
        self.bias = nn.Parameter(torch.empty(e).normal_(0.0, 0.02))

    def forward(self, x):
        x = x.reshape(-1, self.hidden_dim)
        logits = F.linear(x, self.weight, self.bias)
        top_value, top_index = torch.topk(logits, self.top_k, dim=-1)
        top_value = F.softmax(top_value, dim=1, dtype=top_value.dtype)
        return logits, top_value, top_index


class GptOssExperts(nn.Module):
    """GptOssExperts: gate_up_proj (E, H, 2I) and down_proj (E, I, H) stored transposed, with
    biases, run by the grouped_mm experts implementation; _apply_gate is gpt-oss's clamped SwiGLU."""

    def __init__(self, cfg):
        super().__init__()
        e, h, f = cfg["num_local_experts"], cfg["hidden_size"], cfg["intermediate_size"]
        self.num_experts = e
        self.gate_up_proj = nn.Parameter(torch.empty(e, h, 2 * f).normal_(0.0, 0.02))
        self.gate_up_proj_bias = nn.Parameter(torch.zeros(e, 2 * f))
        self.down_proj = nn.Parameter(torch.empty(e, f, h).normal_(0.0, 0.02))
        self.down_proj_bias = nn.Parameter(torch.zeros(e, h))
        self.has_bias = self.is_transposed = True
        self.alpha = 1.702
        self.limit = cfg.get("swiglu_limit", 7.0)

    def _apply_gate(self, gate_up):
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        return (up + 1) * glu

    # grouped_mm_experts_forward with has_bias and is_transposed (qwen3.py's, as transformers runs
    # every family's experts through integrations/moe.py).
    forward = grouped_experts_forward


class GptOssMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.router = GptOssTopKRouter(cfg)
        self.experts = GptOssExperts(cfg)

    def forward(self, x):
        b, s, h = x.shape
        flat = x.reshape(-1, h)
        _, scores, index = self.router(flat)
        return self.experts(flat, index, scores).reshape(b, s, h)


class GptOssDecoderLayer(common.DecoderLayer):
    def __init__(self, cfg, idx):
        nn.Module.__init__(self)
        h, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
        self.sliding = cfg["layer_types"][idx] == "sliding_attention"
        self.self_attn = GptOssAttention(cfg, idx)
        self.mlp = GptOssMLP(cfg)
        self.input_layernorm = GptOssRMSNorm(h, eps)
        self.post_attention_layernorm = GptOssRMSNorm(h, eps)


class GptOssModel(common.Inner):
    def __init__(self, cfg, layer_cls):
        nn.Module.__init__(self)
        h = cfg["hidden_size"]
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], h)
        self.layers = nn.ModuleList(layer_cls(cfg, i) for i in range(cfg["num_hidden_layers"]))
        self.norm = GptOssRMSNorm(h, cfg["rms_norm_eps"])
        self.rotary_emb = GptOssRotary(cfg["head_dim"], cfg["rope_theta"], cfg["rope_factor"])

    def masks(self, x):
        b, s = x.shape[:2]
        full = common.causal_mask(b, s, x.dtype)
        sliding = common.causal_mask(b, s, x.dtype, window=self.cfg["sliding_window"])
        return [sliding if layer.sliding else full for layer in self.layers]


# GptOssConfig defaults the measured dict does not set (rope_scaling: yarn, factor 32).
DEFAULTS = dict(rms_norm_eps=1e-5, attention_bias=True, rope_theta=150000.0, rope_factor=32.0,
                swiglu_limit=7.0)


def build(cfg):
    if cfg["attn"] != "eager":
        raise NotImplementedError("transformers refuses SDPA for gpt_oss (GptOssPreTrainedModel._supports_sdpa "
                                  "is False)")
    full = dict(DEFAULTS)
    full.update(cfg)
    return common.CausalLM(full, GptOssDecoderLayer, GptOssModel)


FAMILIES = [
    ("gpt_oss", dict(hidden_size=H, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=64, num_local_experts=8, num_experts_per_tok=2,
                     sliding_window=32, layer_types=["sliding_attention", "full_attention"]), build),
]

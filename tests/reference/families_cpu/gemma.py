# Purpose: Gemma 2 and Gemma 3 (text stack) as transformers 5.17 runs them (modeling_gemma2.py,
# modeling_gemma3.py: Gemma3ForCausalLM), op for op from the Llama pieces of common.py: Gemma's
# RMSNorm (statistics and the (1 + weight) scale in fp32, cast back at the end), sandwich norms
# around attention and the MLP, the embedding scaled by sqrt(hidden) inside the embedding module,
# query_pre_attn_scalar ** -0.5 scaling, Gemma 2's tanh soft-capping of the attention scores
# (attn_logit_softcapping 50) and of the final logits (final_logit_softcapping 30), Gemma 3's
# per-head q/k norms and its local rotary table (rope_local_base_freq) for sliding layers,
# sliding/full layers by layer_types (window sliding_window), GELU-tanh MLP, tied lm_head.
#
# SDPA ("sdpa_math"): transformers does not refuse SDPA for Gemma 2; sdpa_attention_forward takes
# the softcap keyword and ignores it (the H200's gemma2 sdpa rows keep no tanh output in
# attention). Sliding layers pass their materialized mask (so K/V are repeated per head), full
# layers no mask and is_causal, as integrations/sdpa_attention.py does; K/V repeated as common.py's
# sdpa_math_attention does for Llama (with PyTorch's math kernel both spell the same saves).

import torch
import torch.nn.functional as F
from torch import nn

import common

H = 256

# What this re-implementation cannot reproduce of the H200 record, and why (empty: nothing).
DIFFERENCES = {}


class GemmaRMSNorm(nn.Module):
    """Gemma2RMSNorm / Gemma3RMSNorm: x.float() normalized, times (1 + weight.float()), type_as(x)."""

    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n))
        self.eps = eps

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        y = y * (1.0 + self.weight.float())
        return y.type_as(x)


class ScaledEmbedding(nn.Embedding):
    """The scaled word embedding: lookup times embed_scale (a buffer) cast to the weight's dtype."""

    def __init__(self, v, h):
        super().__init__(v, h)
        self.register_buffer("embed_scale", torch.tensor(h ** 0.5), persistent=False)

    def forward(self, ids):
        return super().forward(ids) * self.embed_scale.to(self.weight.dtype)


def sliding_bool_mask(b, s, window):
    i = torch.arange(s)[:, None]
    j = torch.arange(s)[None, :]
    ok = (j <= i) & (i - j < window)
    return ok[None, None].expand(b, 1, s, s)


def sdpa_math_masked(module, q, k, v, mask, scaling):
    """sdpa_attention_forward with a mask: K/V repeated, the mask passed, math kernel forced."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    k = common.repeat_kv(k, module.groups)
    v = common.repeat_kv(v, module.groups)
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, scale=scaling)
    return out.transpose(1, 2).contiguous()


class GemmaAttention(common.Attention):
    def __init__(self, cfg, idx):
        super().__init__(cfg, idx)
        self.scaling = cfg["query_pre_attn_scalar"] ** -0.5
        self.softcap = cfg.get("attn_logit_softcapping")
        self.sliding = cfg["layer_types"][idx] == "sliding_attention"
        self.qk_norm = cfg["model_type"] == "gemma3_text"
        if self.qk_norm:
            self.q_norm = GemmaRMSNorm(self.d, cfg.get("rms_norm_eps", 1e-6))
            self.k_norm = GemmaRMSNorm(self.d, cfg.get("rms_norm_eps", 1e-6))

    def forward(self, x, rope, mask):
        q, k, v = self.project(x)
        if self.qk_norm:
            q = self.q_norm(q)
            k = self.k_norm(k)
        q, k = common.apply_rotary(q, k, *rope)
        if self.impl == "eager":
            out = common.eager_attention(self, q, k, v, mask, self.scaling, softcap=self.softcap)
        elif mask is not None:
            out = sdpa_math_masked(self, q, k, v, mask, self.scaling)
        else:
            out = common.sdpa_math_attention(self, q, k, v, None, self.scaling)
        return self.o_proj(out.reshape(*x.shape[:-1], -1).contiguous())


class GemmaDecoderLayer(nn.Module):
    """Gemma2DecoderLayer / Gemma3DecoderLayer: sandwich norms around attention and the MLP."""

    def __init__(self, cfg, idx):
        super().__init__()
        h, eps = cfg["hidden_size"], cfg.get("rms_norm_eps", 1e-6)
        self.sliding = cfg["layer_types"][idx] == "sliding_attention"
        self.self_attn = GemmaAttention(cfg, idx)
        self.mlp = common.MLP(h, cfg["intermediate_size"], act=lambda: nn.GELU(approximate="tanh"))
        self.input_layernorm = GemmaRMSNorm(h, eps)
        self.post_attention_layernorm = GemmaRMSNorm(h, eps)
        self.pre_feedforward_layernorm = GemmaRMSNorm(h, eps)
        self.post_feedforward_layernorm = GemmaRMSNorm(h, eps)

    def forward(self, x, rope, mask):
        r = x
        x = self.input_layernorm(x)
        x = self.self_attn(x, rope, mask)
        x = self.post_attention_layernorm(x)
        x = r + x
        r = x
        x = self.pre_feedforward_layernorm(x)
        x = self.mlp(x)
        x = self.post_feedforward_layernorm(x)
        return r + x


class GemmaModel(nn.Module):
    def __init__(self, cfg, layer_cls=GemmaDecoderLayer):
        super().__init__()
        h = cfg["hidden_size"]
        self.cfg = cfg
        self.embed_tokens = ScaledEmbedding(cfg["vocab_size"], h)
        self.layers = nn.ModuleList(layer_cls(cfg, i) for i in range(cfg["num_hidden_layers"]))
        self.norm = GemmaRMSNorm(h, cfg.get("rms_norm_eps", 1e-6))
        d = cfg["head_dim"]
        self.rotary_emb = common.Rotary(d, base=cfg.get("rope_theta", 10000.0))
        if cfg["model_type"] == "gemma3_text":  # local layers' own table (rope_local_base_freq)
            self.rotary_emb_local = common.Rotary(d, base=cfg.get("rope_local_base_freq", 10000.0))

    def forward(self, ids):
        x = self.embed_tokens(ids)
        b, s = ids.shape
        pos = torch.arange(s)[None]
        rope_global = self.rotary_emb(x, pos)
        rope_local = self.rotary_emb_local(x, pos) if hasattr(self, "rotary_emb_local") else rope_global
        eager = self.cfg["attn"] == "eager"
        full = common.causal_mask(b, s, x.dtype) if eager else None
        if eager:
            sliding = common.causal_mask(b, s, x.dtype, window=self.cfg["sliding_window"])
        else:
            sliding = sliding_bool_mask(b, s, self.cfg["sliding_window"])
        for layer in self.layers:
            if layer.sliding:
                x = layer(x, rope_local, sliding)
            else:
                x = layer(x, rope_global, full)
        return self.norm(x)


class GemmaForCausalLM(common.CausalLM):
    def __init__(self, cfg):
        nn.Module.__init__(self)
        self.model = GemmaModel(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight  # tie_word_embeddings (default True)
        self.final_softcap = cfg.get("final_logit_softcapping")

    def logits(self, hidden):
        logits = self.lm_head(hidden)
        if self.final_softcap is not None:
            logits = logits / self.final_softcap
            logits = torch.tanh(logits)
            logits = logits * self.final_softcap
        return logits


def _build(model_type, defaults):
    def build(cfg):
        full = dict(defaults)
        full.update(cfg)
        full["model_type"] = model_type
        if "layer_types" not in full:  # Gemma 2: even layers sliding, odd layers full
            full["layer_types"] = ["sliding_attention" if (i + 1) % 2 else "full_attention"
                                   for i in range(full["num_hidden_layers"])]
        return GemmaForCausalLM(full)
    return build


# Config defaults of Gemma2Config / Gemma3TextConfig that the measured dicts do not set.
GEMMA2_DEFAULTS = dict(rms_norm_eps=1e-6, rope_theta=10000.0, attn_logit_softcapping=50.0,
                       final_logit_softcapping=30.0)
GEMMA3_DEFAULTS = dict(rms_norm_eps=1e-6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                       attn_logit_softcapping=None, final_logit_softcapping=None)

FAMILIES = [
    ("gemma2", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=64, sliding_window=32, query_pre_attn_scalar=64),
     _build("gemma2", GEMMA2_DEFAULTS)),
    ("gemma3_text", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=64, sliding_window=32, query_pre_attn_scalar=64,
                         layer_types=["sliding_attention", "full_attention"]),
     _build("gemma3_text", GEMMA3_DEFAULTS)),
]

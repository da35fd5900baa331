# Purpose: Phi-3 and PhiMoE as transformers 5.17 runs them (modeling_phi3.py, modeling_phimoe.py),
# op for op, so what autograd saves can be measured on the CPU.
# Phi-3 is Llama with q, k and v fused into one qkv_proj (sliced, viewed, no copy), gate and up
# fused into gate_up_proj (chunked; up * act(gate)), the rotary applied to the first rotary_dim
# channels and concatenated with the rest (all of them here), a padding_idx on the embedding
# (pad_token_id=0) and dropout modules on both residual branches (p = 0: nothing saved).
# PhiMoE is Mixtral's decoder with nn.LayerNorm in place of RMSNorm (both layer norms and the final
# norm), Llama attention, and a sparse block whose router (an nn.Linear subclass named "router") runs
# sparsemixer: two rounds of mask, Gumbel sampling, softmax, gather and the Heun multiplier (a custom
# autograd Function), the experts run by transformers' grouped_mm path (see qwen3.py).
import torch
import torch.nn.functional as F
from torch import nn

import common
from qwen3 import Experts

H = 256


# ---------------------------------- Phi-3 ----------------------------------

def apply_rotary_partial(q, k, cos, sin):
    """Phi-3's apply_rotary_pos_emb: rotate the first cos.shape[-1] channels, concatenate the rest."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    rd = cos.shape[-1]
    q_rot, q_pass = q[..., :rd], q[..., rd:]
    k_rot, k_pass = k[..., :rd], k[..., rd:]
    q_embed = torch.cat([(q_rot * cos) + (common.rotate_half(q_rot) * sin), q_pass], dim=-1)
    k_embed = torch.cat([(k_rot * cos) + (common.rotate_half(k_rot) * sin), k_pass], dim=-1)
    return q_embed, k_embed


class Phi3Attention(nn.Module):
    """Phi3Attention: one qkv_proj, sliced into q, k, v."""

    def __init__(self, cfg, idx):
        super().__init__()
        h, a = cfg["hidden_size"], cfg["num_attention_heads"]
        self.kv = cfg.get("num_key_value_heads", a)
        self.a = a
        self.d = cfg.get("head_dim") or h // a
        self.groups = a // self.kv
        self.scaling = self.d ** -0.5
        self.impl = cfg["attn"]
        self.o_proj = nn.Linear(a * self.d, h, bias=False)
        self.qkv_proj = nn.Linear(h, a * self.d + 2 * self.kv * self.d, bias=False)

    def forward(self, x, rope, mask):
        shape = (*x.shape[:-1], -1, self.d)
        qkv = self.qkv_proj(x)
        qp, kp = self.a * self.d, self.kv * self.d
        q = qkv[..., :qp].view(shape).transpose(1, 2)
        k = qkv[..., qp:qp + kp].view(shape).transpose(1, 2)
        v = qkv[..., qp + kp:].view(shape).transpose(1, 2)
        q, k = apply_rotary_partial(q, k, *rope)
        out = common.ATTENTION[self.impl](self, q, k, v, mask if self.impl == "eager" else None, self.scaling)
        return self.o_proj(out.reshape(*x.shape[:-1], -1).contiguous())


class Phi3MLP(nn.Module):
    """Phi3MLP: gate_up_proj, chunk, up * activation_fn(gate), down_proj."""

    def __init__(self, h, f):
        super().__init__()
        self.gate_up_proj = nn.Linear(h, 2 * f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)
        self.activation_fn = nn.SiLU()

    def forward(self, x):
        up = self.gate_up_proj(x)
        gate, up = up.chunk(2, dim=-1)
        up = up * self.activation_fn(gate)
        return self.down_proj(up)


class Phi3DecoderLayer(common.DecoderLayer):
    def __init__(self, cfg, idx):
        super().__init__(cfg, idx)
        self.resid_attn_dropout = nn.Dropout(cfg.get("resid_pdrop", 0.0))
        self.resid_mlp_dropout = nn.Dropout(cfg.get("resid_pdrop", 0.0))

    def make_attention(self, cfg, idx):
        return Phi3Attention(cfg, idx)

    def make_mlp(self, cfg, idx):
        return Phi3MLP(cfg["hidden_size"], cfg["intermediate_size"])

    def forward(self, x, rope, mask):
        r = x
        x = self.input_layernorm(x)
        x = self.self_attn(x, rope, mask)
        x = r + self.resid_attn_dropout(x)
        r = x
        x = self.post_attention_layernorm(x)
        x = self.mlp(x)
        return r + self.resid_mlp_dropout(x)


class Phi3Model(common.Inner):
    """Phi3Model: the embedding keeps padding_idx = pad_token_id."""

    def __init__(self, cfg, layer_cls):
        super().__init__(cfg, layer_cls)
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"], cfg.get("pad_token_id"))


def phi3(cfg):
    return common.CausalLM(cfg, Phi3DecoderLayer, Phi3Model)


# ---------------------------------- PhiMoE ----------------------------------

class PhimoeMultiplier(torch.autograd.Function):
    """PhimoeMultiplier: keeps multiplier, selected_experts and masked_gates; returns multiplier * mask."""

    @staticmethod
    def forward(ctx, scores, multiplier, selected_experts, masked_gates, mask_for_one):
        ctx.save_for_backward(multiplier, selected_experts, masked_gates)
        return multiplier * mask_for_one

    @staticmethod
    def backward(ctx, grad):
        multiplier, selected_experts, masked_gates = ctx.saved_tensors
        grad = grad * multiplier
        g = masked_gates * grad.mul(-1)
        g.scatter_add_(dim=-1, index=selected_experts, src=grad)
        return g, None, None, None, None


def _threshold_mask(scores, ref, jitter_eps):
    with torch.no_grad():
        threshold, max_ind = ref.max(dim=-1, keepdim=True)
        factor = scores.abs().clamp(min=threshold)
        return ((threshold - scores) / factor) > (2 * jitter_eps), max_ind


def _gumbel_pick(masked):
    noise = torch.empty_like(masked, memory_format=torch.legacy_contiguous_format).exponential_().log()
    return (masked - noise).max(dim=-1)[1].unsqueeze(-1)


def sparsemixer(scores, jitter_eps, training):
    """sparsemixer (modeling_phimoe.py), top-2: each round masks the scores far below the round's
    maximum, samples an expert (Gumbel, training) or takes the maximum, softmaxes the masked
    scores in their dtype, gathers the chosen one and applies the Heun midpoint multiplier."""
    mask, max_ind = _threshold_mask(scores, scores, jitter_eps)
    masked_gates = scores.masked_fill(mask, float("-inf"))
    selected = _gumbel_pick(masked_gates) if training else max_ind
    masked_gates = torch.softmax(masked_gates, dim=-1)
    multiplier_o = masked_gates.gather(dim=-1, index=selected)
    if training:
        max_scores, max_ind = masked_gates.max(dim=-1, keepdim=True)
        mask_for_one = torch.logical_or(selected == max_ind, torch.rand_like(max_scores) > 0.75)
        mask_for_one = torch.add(0.3333, mask_for_one, alpha=0.6667).type_as(masked_gates)
        multiplier = PhimoeMultiplier.apply(scores, multiplier_o, selected, masked_gates, mask_for_one)
    else:
        multiplier = multiplier_o

    masked_scores = torch.scatter(scores, -1, selected, float("-inf"))
    mask, max_ind = _threshold_mask(scores, masked_scores, jitter_eps)
    masked_gates2 = masked_scores.masked_fill(mask, float("-inf"))
    selected2 = _gumbel_pick(masked_gates2) if training else max_ind
    masked_gates2 = torch.softmax(masked_gates2, dim=-1)
    multiplier2_o = masked_gates2.gather(dim=-1, index=selected2)
    if training:
        max_scores, max_ind = masked_gates2.max(dim=-1, keepdim=True)
        mask_for_one2 = torch.logical_or(selected2 == max_ind, torch.rand_like(max_scores).uniform_() > 0.75)
        mask_for_one2 = torch.add(0.3333, mask_for_one2, alpha=0.6667).type_as(masked_gates2)
        multiplier2 = PhimoeMultiplier.apply(scores, multiplier2_o, selected2, masked_gates2, mask_for_one2)
    else:
        multiplier2 = multiplier2_o

    return torch.concat((multiplier, multiplier2), dim=-1), torch.concat((selected, selected2), dim=-1)


class PhimoeTopKRouter(nn.Linear):
    """PhimoeTopKRouter: the router logits (a bias-free nn.Linear), then sparsemixer."""

    def __init__(self, cfg):
        super().__init__(cfg["hidden_size"], cfg["num_local_experts"], bias=False)
        self.router_jitter_noise = cfg.get("router_jitter_noise", 0.01)
        self.input_jitter_noise = cfg.get("input_jitter_noise", 0.0)

    def forward(self, x):
        if self.training and self.input_jitter_noise > 0:
            x *= torch.empty_like(x).uniform_(1.0 - self.input_jitter_noise, 1.0 + self.input_jitter_noise)
        logits = super().forward(x)
        return sparsemixer(logits, jitter_eps=self.router_jitter_noise, training=self.training)


class PhimoeSparseMoeBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.router = PhimoeTopKRouter(cfg)
        self.experts = Experts(cfg["num_local_experts"], cfg["hidden_size"], cfg["intermediate_size"])
        self.input_jitter_noise = cfg.get("input_jitter_noise", 0.0)

    def forward(self, x):
        b, s, h = x.shape
        if self.training and self.input_jitter_noise > 0:
            x *= torch.empty_like(x).uniform_(1.0 - self.input_jitter_noise, 1.0 + self.input_jitter_noise)
        x = x.reshape(-1, h)
        weights, index = self.router(x)
        return self.experts(x, index, weights).reshape(b, s, h)


class PhimoeDecoderLayer(common.DecoderLayer):
    """MixtralDecoderLayer with PhiMoE's nn.LayerNorm (eps = rms_norm_eps, affine) and sparse block."""

    def __init__(self, cfg, idx):
        super().__init__(cfg, idx)
        eps = cfg.get("rms_norm_eps", 1e-5)
        self.input_layernorm = nn.LayerNorm(cfg["hidden_size"], eps=eps, elementwise_affine=True)
        self.post_attention_layernorm = nn.LayerNorm(cfg["hidden_size"], eps=eps, elementwise_affine=True)

    def make_mlp(self, cfg, idx):
        return PhimoeSparseMoeBlock(cfg)


class PhimoeModel(common.Inner):
    def __init__(self, cfg, layer_cls):
        super().__init__(cfg, layer_cls)
        self.norm = nn.LayerNorm(cfg["hidden_size"], eps=cfg.get("rms_norm_eps", 1e-5), elementwise_affine=True)


def phimoe(cfg):
    return common.CausalLM(cfg, PhimoeDecoderLayer, PhimoeModel)


def expected_differences(mtype, cfg, s, b=2):
    """nn.LayerNorm in bf16: CUDA's native_layer_norm keeps mean and rstd ([b, s, 1]) in fp32, the
    CPU kernel of PyTorch 2.6 in the input's dtype (bf16). PhiMoE has 2 LayerNorms per layer and the
    final norm; each saves mean and rstd. Phi-3 (RMSNorm only) has none."""
    if mtype != "phimoe":
        return []
    mods = ["model.layers.%d.%s" % (i, n) for i in range(cfg["num_hidden_layers"])
            for n in ("input_layernorm", "post_attention_layernorm")] + ["model.norm"]
    out = []
    for m in mods:
        out += [("cpu", (m, (b, s, 1), "bfloat16", 2 * b * s))] * 2
    for m in mods:
        out += [("gpu", (m, (b, s, 1), "float32", 4 * b * s))] * 2
    return out


FAMILIES = [
    ("phi3", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, pad_token_id=0), phi3),
    ("phimoe", dict(hidden_size=H, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2), phimoe),
]

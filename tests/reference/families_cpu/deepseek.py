# Purpose: DeepSeek-V3 and DeepSeek-V2 as transformers 5.17 runs them (modeling_deepseek_v3.py,
# modeling_deepseek_v2.py, integrations/moe.py): multi-head latent attention (q through a low-rank
# q_a_proj / q_a_layernorm / q_b_proj, or V2's plain q_proj; the compressed kv split into the latent
# part, normed and expanded by kv_b_proj, and the shared rope part), rope on the rope part only
# (V3: the interleaved pairs with half-width cos/sin; V2: complex freqs_cis), the first
# first_k_dense_replace layers dense, then MoE: the router on fp32 copies of the tokens and weight
# (V3: sigmoid scores plus the e_score_correction_bias buffer, group-limited top-k over n_group
# groups, renormalized, times routed_scaling_factor; V2: softmax, greedy top-k, times the factor),
# the routed experts as the grouped-GEMM experts implementation (tokens sorted by expert, gate_up as
# one grouped GEMM, act(gate) * up, down, weighted, invalid-expert mask, inverse permutation, sum
# over the k copies), and the shared experts as one SwiGLU MLP of n_shared x moe_intermediate_size.
#
# The routed experts are qwen3.py's Experts (transformers 5.17 runs every family's experts through
# integrations/moe.py's grouped_mm_experts_forward; its GroupedMM stands in for torch._grouped_mm).
import torch
import torch.nn.functional as F
from torch import nn

import common
from qwen3 import Experts

H = 256


class TopkRouterV3(nn.Module):
    """DeepseekV3TopkRouter with the MoE's route_tokens_to_experts: fp32 linear, sigmoid, the
    correction bias for the choice only, group-limited top-k, renormalized, scaled."""

    def __init__(self, cfg):
        super().__init__()
        self.e, self.h = cfg["n_routed_experts"], cfg["hidden_size"]
        self.top_k, self.n_group, self.topk_group = cfg["num_experts_per_tok"], cfg["n_group"], cfg["topk_group"]
        self.scale = cfg.get("routed_scaling_factor", 2.5)
        self.norm_topk_prob = cfg.get("norm_topk_prob", True)
        self.weight = nn.Parameter(torch.randn(self.e, self.h) * 0.02)
        self.register_buffer("e_score_correction_bias", torch.zeros(self.e))

    def forward(self, x):
        x = x.view(-1, self.h)
        logits = F.linear(x.type(torch.float32), self.weight.type(torch.float32))
        scores = logits.sigmoid()
        choice = scores + self.e_score_correction_bias
        group_scores = choice.view(-1, self.n_group, self.e // self.n_group).topk(2, dim=-1)[0].sum(dim=-1)
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(-1, self.n_group, self.e // self.n_group).reshape(-1, self.e)
        choice = choice.masked_fill(~score_mask.bool(), 0.0)
        topk_indices = torch.topk(choice, k=self.top_k, dim=-1, sorted=False)[1]
        topk_weights = scores.gather(1, topk_indices)
        if self.norm_topk_prob:
            denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
            topk_weights /= denominator
        return topk_indices, topk_weights * self.scale


class TopkRouterV2(nn.Module):
    """DeepseekV2's gate with route_tokens_to_experts (topk_method "greedy"): fp32 linear, softmax in
    fp32, top-k, scaled."""

    def __init__(self, cfg):
        super().__init__()
        self.e, self.h, self.top_k = cfg["n_routed_experts"], cfg["hidden_size"], cfg["num_experts_per_tok"]
        self.scale = cfg.get("routed_scaling_factor", 1.0)
        self.weight = nn.Parameter(torch.randn(self.e, self.h) * 0.02)

    def forward(self, x):
        logits = F.linear(x.type(torch.float32), self.weight.type(torch.float32))
        logits = logits.view(-1, self.e).softmax(dim=-1, dtype=torch.float32)
        topk_weight, topk_idx = torch.topk(logits, k=self.top_k, dim=-1, sorted=False)
        return topk_idx, topk_weight * self.scale


class MoE(nn.Module):
    """DeepseekV3MoE / DeepseekV2Moe: routed experts plus the shared experts on the same input."""

    def __init__(self, cfg, router_cls):
        super().__init__()
        self.experts = Experts(cfg["n_routed_experts"], cfg["hidden_size"], cfg["moe_intermediate_size"])
        self.gate = router_cls(cfg)
        self.shared_experts = common.MLP(cfg["hidden_size"], cfg["moe_intermediate_size"] * cfg["n_shared_experts"])

    def forward(self, x):
        residuals, shape = x, x.shape
        topk_indices, topk_weights = self.gate(x)
        x = self.experts(x.view(-1, x.shape[-1]), topk_indices, topk_weights).view(*shape)
        return x + self.shared_experts(residuals)


def rope_interleave_v3(q, k, cos, sin):
    """apply_rotary_pos_emb_interleave (5.17): the even/odd pairs rotated by the first half of
    cos/sin (a view of the cat(freqs, freqs) tables), the halves concatenated."""
    cos = cos[..., : cos.shape[-1] // 2].unsqueeze(1)
    sin = sin[..., : sin.shape[-1] // 2].unsqueeze(1)
    q1, q2 = q[..., 0::2], q[..., 1::2]
    k1, k2 = k[..., 0::2], k[..., 1::2]
    q_embed = torch.cat([q1 * cos - q2 * sin, q2 * cos + q1 * sin], dim=-1)
    k_embed = torch.cat([k1 * cos - k2 * sin, k2 * cos + k1 * sin], dim=-1)
    return q_embed, k_embed


def rope_complex_v2(q, k, freqs_cis):
    """DeepSeek-V2's apply_rotary_emb: pairs as complex numbers in fp32 times freqs_cis."""
    q_ = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
    k_ = torch.view_as_complex(k.float().reshape(*k.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.unsqueeze(1)
    q_out = torch.view_as_real(q_ * freqs_cis).flatten(3)
    k_out = torch.view_as_real(k_ * freqs_cis).flatten(3)
    return q_out.type_as(q), k_out.type_as(k)


RotaryComplex = common.RotaryComplex  # DeepseekV2RotaryEmbedding


class MLAttention(nn.Module):
    """DeepseekV3Attention / DeepseekV2Attention (multi-head latent attention)."""

    def __init__(self, cfg, idx, v2):
        super().__init__()
        h, a = cfg["hidden_size"], cfg["num_attention_heads"]
        self.v2, self.heads = v2, a
        self.groups = a // cfg.get("num_key_value_heads", a)
        self.nope, self.rope = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"]
        self.lora, self.vd = cfg["kv_lora_rank"], cfg["v_head_dim"]
        self.qk = self.nope + self.rope
        self.scaling = self.qk ** -0.5
        self.impl = cfg["attn"]
        self.q_lora_rank = cfg["q_lora_rank"]
        if self.q_lora_rank is None:
            self.q_proj = nn.Linear(h, a * self.qk, bias=False)
        else:
            self.q_a_proj = nn.Linear(h, self.q_lora_rank, bias=False)
            self.q_a_layernorm = common.RMSNorm(self.q_lora_rank)
            self.q_b_proj = nn.Linear(self.q_lora_rank, a * self.qk, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(h, self.lora + self.rope, bias=False)
        self.kv_a_layernorm = common.RMSNorm(self.lora)
        self.kv_b_proj = nn.Linear(self.lora, a * (self.nope + self.vd), bias=False)
        self.o_proj = nn.Linear(a * self.vd, h, bias=False)

    def forward(self, x, rope, mask):
        b, s = x.shape[:-1]
        if self.q_lora_rank is None:
            q = self.q_proj(x)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(b, s, -1, self.qk).transpose(1, 2)
        q_pass, q_rot = torch.split(q, [self.nope, self.rope], dim=-1)
        ckv = self.kv_a_proj_with_mqa(x)
        k_pass, k_rot = torch.split(ckv, [self.lora, self.rope], dim=-1)
        k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(b, s, -1, self.nope + self.vd).transpose(1, 2)
        k_pass, v = torch.split(k_pass, [self.nope, self.vd], dim=-1)
        k_rot = k_rot.view(b, 1, s, self.rope)
        if self.v2:
            q_rot, k_rot = rope_complex_v2(q_rot, k_rot, rope)
        else:
            q_rot, k_rot = rope_interleave_v3(q_rot, k_rot, *rope)
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        q = torch.cat((q_pass, q_rot), dim=-1)
        k = torch.cat((k_pass, k_rot), dim=-1)
        out = common.ATTENTION[self.impl](self, q, k, v, mask if self.impl == "eager" else None, self.scaling)
        return self.o_proj(out.reshape(b, s, -1).contiguous())


def layer_cls(v2):
    router = TopkRouterV2 if v2 else TopkRouterV3

    class Layer(common.DecoderLayer):
        def make_attention(self, cfg, idx):
            return MLAttention(cfg, idx, v2)

        def make_mlp(self, cfg, idx):
            if idx >= cfg["first_k_dense_replace"]:
                return MoE(cfg, router)
            return common.MLP(cfg["hidden_size"], cfg["intermediate_size"])

    return Layer


def inner_cls(v2):
    class Inner(common.Inner):
        def __init__(self, cfg, lc):
            super().__init__(cfg, lc)
            d = cfg["qk_rope_head_dim"]
            self.rotary_emb = RotaryComplex(d) if v2 else common.Rotary(d)

    return Inner


def build(cfg, v2):
    return common.CausalLM(cfg, layer_cls(v2), inner_cls(v2))


FAMILIES = [
    ("deepseek_v3", dict(hidden_size=H, intermediate_size=512, moe_intermediate_size=128, num_hidden_layers=3,
                         first_k_dense_replace=1, n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2,
                         n_group=2, topk_group=1, q_lora_rank=96, kv_lora_rank=64, qk_nope_head_dim=32,
                         qk_rope_head_dim=16, v_head_dim=48, num_attention_heads=4, num_key_value_heads=4),
     lambda cfg: build(cfg, False)),
    ("deepseek_v2", dict(hidden_size=H, intermediate_size=512, moe_intermediate_size=128, num_hidden_layers=3,
                         first_k_dense_replace=1, n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=2,
                         n_group=1, topk_group=1, q_lora_rank=None, kv_lora_rank=64, qk_nope_head_dim=32,
                         qk_rope_head_dim=16, v_head_dim=48, num_attention_heads=4, num_key_value_heads=4),
     lambda cfg: build(cfg, True)),
]

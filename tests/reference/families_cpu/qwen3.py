# Purpose: Qwen3 and Qwen3-MoE as transformers 5.17 runs them (modeling_qwen3.py,
# modeling_qwen3_moe.py, and integrations/moe.py's grouped_mm experts path), op for op, so what
# autograd saves can be measured on the CPU. Qwen3 is Llama plus an RMSNorm over each head of q and
# k (q_norm, k_norm, on head_dim, before the transpose); head_dim is a config value (96 here), not
# hidden / heads. Qwen3-MoE swaps the MLP of every decoder_sparse_step-th layer (unless listed in
# mlp_only_layers) for a sparse block: a top-k router (fp32 softmax, top-k, renormalised when
# norm_topk_prob, cast back to the logits' dtype) and 3-D expert weights run by grouped_mm.
#
# The experts path (grouped_experts_forward, GroupedMM) is shared with phi.py's PhiMoE.
import torch
import torch.nn.functional as F
from torch import nn

import common

class Qwen3Attention(common.Attention):
    """Qwen3Attention: q_norm / k_norm (RMSNorm over head_dim) on the projected, head-split q and k."""

    def __init__(self, cfg, idx):
        super().__init__(cfg, idx)
        eps = cfg.get("rms_norm_eps", 1e-6)
        self.q_norm = common.RMSNorm(self.d, eps)
        self.k_norm = common.RMSNorm(self.d, eps)

    def project(self, x):
        shape = (*x.shape[:-1], -1, self.d)
        q = self.q_norm(self.q_proj(x).view(shape)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(shape)).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        return q, k, v


class Qwen3DecoderLayer(common.DecoderLayer):
    def make_attention(self, cfg, idx):
        return Qwen3Attention(cfg, idx)


# ---- the experts of transformers' grouped_mm implementation (integrations/moe.py) ----

class GroupedMM(torch.autograd.Function):
    """torch._grouped_mm(input, weight, offs) as CUDA autograd runs it: the derivative formula of
    _grouped_mm (derivatives.yaml) keeps self, mat2 and offs. PyTorch 2.6 on the CPU has no
    _grouped_mm, so the product runs as one mm per expert group; the saves are the op's."""

    @staticmethod
    def forward(ctx, x, w, offs):  # x (S, in) sorted by expert, w (E, in, out), offs (E,) int32 ends
        ctx.save_for_backward(x, w, offs)
        out = x.new_zeros(x.shape[0], w.shape[2])
        start = 0
        for i, end in enumerate(offs.tolist()):
            if end > start:
                out[start:end] = x[start:end] @ w[i]
            start = end
        return out

    @staticmethod
    def backward(ctx, g):
        x, w, offs = ctx.saved_tensors
        gx, gw = torch.zeros_like(x), torch.zeros_like(w)
        start = 0
        for i, end in enumerate(offs.tolist()):
            if end > start:
                gx[start:end] = g[start:end] @ w[i].transpose(0, 1)
                gw[i] = x[start:end].transpose(0, 1) @ g[start:end]
            start = end
        return gx, gw, None


def grouped_linear(x, weight, offs, bias=None, is_transposed=False):
    """_grouped_linear: weights stored (E, out, in), or (E, in, out) when is_transposed (gpt-oss);
    _grouped_mm casts the input to the weight's dtype (a no-op here); the gathered per-copy bias is
    added in place (add_ keeps nothing)."""
    out = GroupedMM.apply(x.to(weight.dtype), weight if is_transposed else weight.transpose(-2, -1), offs)
    if bias is not None:
        out.add_(bias)
    return out


def grouped_experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """grouped_mm_experts_forward (transformers 5.17): sort the (token, slot) pairs by expert, gather
    the tokens, zero the expert-parallel sentinels in place, gate_up, the gate, down, scale by the
    routing weight, zero the sentinels again, unsort, and sum the top-k slots of each token."""
    num_top_k = top_k_index.size(-1)
    num_tokens, hidden_dim = hidden_states.size(0), hidden_states.size(-1)
    sample_weights = top_k_weights.reshape(-1)
    expert_ids = top_k_index.reshape(-1)
    expert_ids_g, perm = torch.sort(expert_ids)
    selected = hidden_states[perm // num_top_k]
    sample_weights_g = sample_weights[perm]
    # histc takes float input on the CPU, int on CUDA; no gradient either way
    per_expert = torch.histc(expert_ids_g.float(), bins=self.num_experts, min=0, max=self.num_experts - 1)
    offsets = torch.cumsum(per_expert, dim=0, dtype=torch.int32)
    sentinel = (expert_ids_g >= self.num_experts).unsqueeze(-1)
    expert_ids_g.clamp_(max=self.num_experts - 1)
    has_bias, transposed = getattr(self, "has_bias", False), getattr(self, "is_transposed", False)
    bias = self.gate_up_proj_bias[expert_ids_g] if has_bias else None  # gathered copies (gpt-oss)
    selected.masked_fill_(sentinel, 0.0)
    out = grouped_linear(selected, self.gate_up_proj, offsets, bias, transposed)
    out = self._apply_gate(out)
    bias = self.down_proj_bias[expert_ids_g] if has_bias else None
    out = grouped_linear(out, self.down_proj, offsets, bias, transposed)
    weighted = out * sample_weights_g.unsqueeze(-1)
    weighted.masked_fill_(sentinel, 0.0)
    inv_perm = torch.empty_like(perm)
    inv_perm[perm] = torch.arange(perm.size(0))
    weighted = weighted[inv_perm]
    final = weighted.view(num_tokens, num_top_k, hidden_dim).sum(dim=1)
    return final.to(hidden_states.dtype)


class Experts(nn.Module):
    """Qwen3MoeExperts / MixtralExperts: gate_up_proj (E, 2I, H), down_proj (E, H, I), act_fn; run by
    the grouped_mm experts implementation; _apply_gate is the default (chunk, act(gate) * up)."""

    def __init__(self, num_experts, hidden, inter):
        super().__init__()
        self.num_experts = num_experts
        self.gate_up_proj = nn.Parameter(torch.empty(num_experts, 2 * inter, hidden).normal_(0.0, 0.02))
        self.down_proj = nn.Parameter(torch.empty(num_experts, hidden, inter).normal_(0.0, 0.02))
        self.act_fn = nn.SiLU()

    def _apply_gate(self, gate_up_out):
        gate, up = gate_up_out.chunk(2, dim=-1)
        return self.act_fn(gate) * up

    def forward(self, hidden_states, top_k_index, top_k_weights):
        return grouped_experts_forward(self, hidden_states, top_k_index, top_k_weights)


class Qwen3MoeTopKRouter(nn.Module):
    """Qwen3MoeTopKRouter: logits in the activation dtype, softmax in fp32, top-k, renormalised when
    norm_topk_prob (in place), then cast back to the logits' dtype."""

    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg["num_experts_per_tok"]
        self.norm_topk_prob = cfg.get("norm_topk_prob", False)
        self.hidden_dim = cfg["hidden_size"]
        self.weight = nn.Parameter(torch.empty(cfg["num_experts"], self.hidden_dim).normal_(0.0, 0.02))

    def forward(self, x):
        x = x.reshape(-1, self.hidden_dim)
        logits = F.linear(x, self.weight)
        probs = F.softmax(logits, dtype=torch.float, dim=-1)
        top_value, top_index = torch.topk(probs, self.top_k, dim=-1)
        if self.norm_topk_prob:
            top_value /= top_value.sum(dim=-1, keepdim=True)
        top_value = top_value.to(logits.dtype)
        return logits, top_value, top_index


class Qwen3MoeSparseMoeBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.experts = Experts(cfg["num_experts"], cfg["hidden_size"], cfg["moe_intermediate_size"])
        self.gate = Qwen3MoeTopKRouter(cfg)

    def forward(self, x):
        b, s, h = x.shape
        flat = x.view(-1, h)
        _, weights, index = self.gate(flat)
        out = self.experts(flat, index, weights)
        return out.reshape(b, s, h)


class Qwen3MoeDecoderLayer(Qwen3DecoderLayer):
    def make_mlp(self, cfg, idx):
        step = cfg.get("decoder_sparse_step", 1)
        if idx not in cfg.get("mlp_only_layers", []) and cfg["num_experts"] > 0 and (idx + 1) % step == 0:
            return Qwen3MoeSparseMoeBlock(cfg)
        return common.MLP(cfg["hidden_size"], cfg["intermediate_size"])


H = 256

FAMILIES = [
    ("qwen3", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=96),
     lambda cfg: common.CausalLM(cfg, Qwen3DecoderLayer)),
    ("qwen3_moe", dict(hidden_size=H, intermediate_size=512, moe_intermediate_size=128, num_hidden_layers=3,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=96, num_experts=8,
                       num_experts_per_tok=2, decoder_sparse_step=2, mlp_only_layers=[2], norm_topk_prob=True),
     lambda cfg: common.CausalLM(cfg, Qwen3MoeDecoderLayer)),
]

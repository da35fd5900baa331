# Purpose: the Llama decoder as transformers 5.17 runs it (modeling_llama.py: LlamaRMSNorm,
# LlamaRotaryEmbedding, apply_rotary_pos_emb, repeat_kv, eager_attention_forward, LlamaMLP,
# LlamaDecoderLayer, LlamaForCausalLM with ForCausalLMLoss), op for op in the same order, with the
# same module names, so what autograd saves can be measured on the CPU in bf16 and fp32. The other
# families' files subclass these pieces and change only what their modeling file changes.
import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    """LlamaRMSNorm: statistics in fp32, the weight times the cast back."""

    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dt)


class Rotary(nn.Module):
    """LlamaRotaryEmbedding (default rope): cos and sin in fp32 under no autocast, cast to x's dtype."""

    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    @torch.no_grad()
    def forward(self, x, pos):
        inv = self.inv_freq[None, :, None].float().expand(pos.shape[0], -1, 1)
        p = pos[:, None, :].float()
        freqs = (inv.float() @ p.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class RotaryComplex(Rotary):
    """DeepseekV2RotaryEmbedding / Llama4TextRotaryEmbedding: freqs_cis = polar(1, freqs), one
    complex64 table in every activation dtype."""

    @torch.no_grad()
    def forward(self, x, pos):
        inv = self.inv_freq[None, :, None].float().expand(pos.shape[0], -1, 1)
        freqs = (inv.float() @ pos[:, None, :].float()).transpose(1, 2)
        return torch.polar(torch.ones_like(freqs), freqs) * 1.0


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(x, n):
    b, kv, s, d = x.shape
    if n == 1:
        return x
    return x[:, :, None, :, :].expand(b, kv, n, s, d).reshape(b, kv * n, s, d)


def causal_mask(b, s, dtype, window=None, chunk=None):
    """The additive mask eager attention adds: 0 where attended, the dtype's minimum elsewhere."""
    i = torch.arange(s)[:, None]
    j = torch.arange(s)[None, :]
    ok = j <= i
    if window is not None:
        ok = ok & (i - j < window)
    if chunk is not None:
        ok = ok & (i // chunk == j // chunk)
    m = torch.zeros(s, s, dtype=dtype).masked_fill(~ok, torch.finfo(dtype).min)
    return m[None, None].expand(b, 1, s, s)


def eager_attention(module, q, k, v, mask, scaling, dropout=0.0, softcap=None):
    """eager_attention_forward (modeling_llama.py); softcap: Gemma 2's tanh capping of the scores."""
    k = repeat_kv(k, module.groups)
    v = repeat_kv(v, module.groups)
    w = torch.matmul(q, k.transpose(2, 3)) * scaling
    if softcap is not None:
        w = w / softcap
        w = torch.tanh(w)
        w = w * softcap
    if mask is not None:
        w = w + mask[:, :, :, : k.shape[-2]]
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    w = F.dropout(w, p=dropout, training=module.training)
    out = torch.matmul(w, v)
    return out.transpose(1, 2).contiguous()


def sdpa_math_attention(module, q, k, v, mask, scaling, dropout=0.0, softcap=None):
    """sdpa_attention_forward (integrations/sdpa_attention.py) with PyTorch's math backend forced:
    repeat_kv, then scaled_dot_product_attention with the causal flag and no mask."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    assert softcap is None
    k = repeat_kv(k, module.groups)
    v = repeat_kv(v, module.groups)
    with sdpa_kernel(SDPBackend.MATH):
        if mask is None:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, scale=scaling, is_causal=True)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scaling)
    return out.transpose(1, 2).contiguous()


ATTENTION = {"eager": eager_attention, "sdpa_math": sdpa_math_attention}


class Attention(nn.Module):
    """LlamaAttention."""

    def __init__(self, cfg, idx):
        super().__init__()
        h, a = cfg["hidden_size"], cfg["num_attention_heads"]
        kv = cfg.get("num_key_value_heads", a)
        self.d = cfg.get("head_dim") or h // a
        self.groups = a // kv
        self.scaling = self.d ** -0.5
        self.impl = cfg["attn"]
        bias = cfg.get("attention_bias", False)
        self.q_proj = nn.Linear(h, a * self.d, bias=bias)
        self.k_proj = nn.Linear(h, kv * self.d, bias=bias)
        self.v_proj = nn.Linear(h, kv * self.d, bias=bias)
        self.o_proj = nn.Linear(a * self.d, h, bias=bias)

    def project(self, x):
        shape = (*x.shape[:-1], -1, self.d)
        q = self.q_proj(x).view(shape).transpose(1, 2)
        k = self.k_proj(x).view(shape).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        return q, k, v

    def forward(self, x, rope, mask):
        q, k, v = self.project(x)
        q, k = apply_rotary(q, k, *rope)
        out = ATTENTION[self.impl](self, q, k, v, mask if self.impl == "eager" else None, self.scaling)
        return self.o_proj(out.reshape(*x.shape[:-1], -1).contiguous())


class MLP(nn.Module):
    """LlamaMLP: down(act(gate(x)) * up(x))."""

    def __init__(self, h, f, act=nn.SiLU, bias=False):
        super().__init__()
        self.gate_proj = nn.Linear(h, f, bias=bias)
        self.up_proj = nn.Linear(h, f, bias=bias)
        self.down_proj = nn.Linear(f, h, bias=bias)
        self.act_fn = act()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """LlamaDecoderLayer: pre-norm attention and MLP, each added to the residual."""

    def __init__(self, cfg, idx):
        super().__init__()
        h = cfg["hidden_size"]
        self.self_attn = self.make_attention(cfg, idx)
        self.mlp = self.make_mlp(cfg, idx)
        self.input_layernorm = RMSNorm(h, cfg.get("rms_norm_eps", 1e-6))
        self.post_attention_layernorm = RMSNorm(h, cfg.get("rms_norm_eps", 1e-6))

    def make_attention(self, cfg, idx):
        return Attention(cfg, idx)

    def make_mlp(self, cfg, idx):
        return MLP(cfg["hidden_size"], cfg["intermediate_size"])

    def forward(self, x, rope, mask):
        r = x
        x = self.input_layernorm(x)
        x = self.self_attn(x, rope, mask)
        x = r + x
        r = x
        x = self.post_attention_layernorm(x)
        x = self.mlp(x)
        return r + x


class Inner(nn.Module):
    """LlamaModel: embedding, rotary tables, layers, final norm."""

    def __init__(self, cfg, layer_cls):
        super().__init__()
        h = cfg["hidden_size"]
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], h)
        self.layers = nn.ModuleList(layer_cls(cfg, i) for i in range(cfg["num_hidden_layers"]))
        self.norm = RMSNorm(h, cfg.get("rms_norm_eps", 1e-6))
        d = cfg.get("head_dim") or h // cfg["num_attention_heads"]
        self.rotary_emb = Rotary(d)

    def masks(self, x):
        b, s = x.shape[:2]
        return [causal_mask(b, s, x.dtype)] * len(self.layers)

    def embed(self, ids):
        return self.embed_tokens(ids)

    def forward(self, ids):
        x = self.embed(ids)
        pos = torch.arange(ids.shape[1])[None]
        rope = self.rotary_emb(x, pos)
        for layer, mask in zip(self.layers, self.masks(x)):
            x = layer(x, rope, mask)
        return self.norm(x)


class CausalLM(nn.Module):
    """LlamaForCausalLM with ForCausalLMLoss: logits upcast to fp32, labels shifted by padding."""

    def __init__(self, cfg, layer_cls=DecoderLayer, inner_cls=Inner):
        super().__init__()
        self.model = inner_cls(cfg, layer_cls)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)

    def logits(self, hidden):
        return self.lm_head(hidden)

    def forward(self, ids, labels):
        logits = self.logits(self.model(ids))
        logits = logits.float()
        labels = F.pad(labels, (0, 1), value=-100)
        shift = labels[..., 1:].contiguous()
        logits = logits.view(-1, logits.shape[-1])
        return F.cross_entropy(logits, shift.view(-1), ignore_index=-100, reduction="mean")

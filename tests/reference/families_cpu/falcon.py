# Purpose: Falcon as transformers 5.17 runs it (modeling_falcon.py: FalconForCausalLM), op for op, in
# both layouts measured on the H200: new_decoder_architecture (grouped K/V, num_kv_heads 2, two
# LayerNorms ln_attn / ln_mlp feeding attention and the MLP in parallel) and the old one with
# multi_query (one K/V head, one input_layernorm shared by attention and the MLP). Module names are
# transformers': transformer.word_embeddings, transformer.h.N.{ln_attn, ln_mlp | input_layernorm},
# self_attention.{query_key_value, dense}, mlp.{dense_h_to_4h, act, dense_4h_to_h}, transformer.ln_f,
# lm_head (tied to the embedding). LayerNorm (with bias), the fused query_key_value and
# _split_heads (K and V picked with a one-element index list, which the index op keeps as an int64
# tensor), Llama's rotary on q and k, eager attention softmax in the activation dtype, GELU MLP,
# FalconLinear (input @ weight.T), attention and MLP outputs added to the residual together.
#
# SDPA ("sdpa_math"): FalconAttention calls scaled_dot_product_attention itself with the model's
# materialized causal mask (is_causal False), after making q/k/v contiguous (the branch transformers
# takes on CUDA with a mask, as on the H200); here with PyTorch's math kernel forced. The mask is
# passed as a bool (True = attend) mask; the math kernel keeps no mask either way.
#
# A real CPU-vs-CUDA difference of PyTorch, not of the model: torch.nn.LayerNorm on the CPU keeps
# its saved mean and rstd in the activation dtype (bf16 here, [b, s, 1], 2 bytes each), CUDA keeps
# them in fp32. Proof (PyTorch 2.6, CPU):
#     x = torch.randn(2, 64, 256, dtype=torch.bfloat16, requires_grad=True)
#     ln = torch.nn.LayerNorm(256).to(torch.bfloat16); saved = []
#     with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.dtype) or t, lambda t: t):
#         ln(x).sum().backward()
#     # saved: weight, x, bias (bf16) and mean, rstd (2, 64, 1) in torch.bfloat16
# The H200 record keeps them as float32 [b, s, 1]. expected_differences lists exactly those records
# (two per LayerNorm); in fp32 the two devices agree (fp32 either way).
import math

import torch
import torch.nn.functional as F
from torch import nn

import common

H = 256

# What this re-implementation cannot reproduce of the H200 record, and why (the records are listed by
# expected_differences below).
DIFFERENCES = {"layernorm_stats": "torch.nn.LayerNorm keeps mean and rstd ([b, s, 1]) in bf16 on the CPU, "
                                  "in fp32 on CUDA: two records per LayerNorm"}


class FalconLinear(nn.Linear):
    def forward(self, x):
        out = x @ self.weight.T
        if self.bias is None:
            return out
        return out + self.bias


class FalconAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, a = cfg["hidden_size"], cfg["num_attention_heads"]
        self.num_heads, self.head_dim = a, h // a
        self.new_arch = cfg["new_decoder_architecture"]
        self.multi_query = cfg.get("multi_query", True)
        self.num_kv_heads = cfg.get("num_kv_heads", a) if (self.new_arch or not self.multi_query) else 1
        self.impl = cfg["attn"]
        if self.new_arch:
            qkv_out = (self.num_kv_heads * 2 + a) * self.head_dim
        elif self.multi_query:
            qkv_out = h + 2 * self.head_dim
        else:
            qkv_out = 3 * h
        self.query_key_value = FalconLinear(h, qkv_out, bias=cfg.get("bias", False))
        self.dense = FalconLinear(h, h, bias=cfg.get("bias", False))

    def _split_heads(self, fused):
        if self.new_arch:
            b, s, _ = fused.shape
            qkv = fused.view(b, s, -1, self.num_heads // self.num_kv_heads + 2, self.head_dim)
            q = qkv[:, :, :, :-2]
            k = qkv[:, :, :, [-2]]
            v = qkv[:, :, :, [-1]]
            k = torch.broadcast_to(k, q.shape)
            v = torch.broadcast_to(v, q.shape)
            return [t.flatten(2, 3) for t in (q, k, v)]
        if not self.multi_query:
            b, s, _ = fused.shape
            fused = fused.view(b, s, self.num_heads, 3, self.head_dim)
            return fused[..., 0, :], fused[..., 1, :], fused[..., 2, :]
        b, s, _ = fused.shape
        fused = fused.view(b, s, self.num_heads + 2, self.head_dim)
        return fused[..., :-2, :], fused[..., [-2], :], fused[..., [-1], :]

    def forward(self, x, rope, mask):
        fused = self.query_key_value(x)
        kv_heads = self.num_heads if self.new_arch else self.num_kv_heads
        q, k, v = self._split_heads(fused)
        b, s, _, _ = q.shape
        q = q.transpose(1, 2).reshape(b, self.num_heads, s, self.head_dim)
        k = k.transpose(1, 2).reshape(b, kv_heads, s, self.head_dim)
        v = v.transpose(1, 2).reshape(b, kv_heads, s, self.head_dim)
        q, k = common.apply_rotary(q, k, *rope)
        if self.impl == "eager":
            scores = q @ k.transpose(-1, -2)
            scores /= math.sqrt(self.head_dim)
            scores = F.softmax(scores + mask, dim=-1, dtype=x.dtype)
            out = scores @ v
            out = out.view(b, self.num_heads, s, self.head_dim).permute(0, 2, 1, 3)
            out = out.reshape(b, s, self.num_heads * self.head_dim)
        else:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
            with sdpa_kernel(SDPBackend.MATH):
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=False)
            out = out.transpose(1, 2).reshape(b, s, -1)
        return self.dense(out)


class FalconMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        f = cfg.get("ffn_hidden_size") or 4 * h
        self.dense_h_to_4h = FalconLinear(h, f, bias=cfg.get("bias", False))
        self.act = nn.GELU()
        self.dense_4h_to_h = FalconLinear(f, h, bias=cfg.get("bias", False))

    def forward(self, x):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(x)))


def dropout_add(x, residual, p, training):
    return residual + F.dropout(x, p=p, training=training)


class FalconDecoderLayer(nn.Module):
    def __init__(self, cfg, idx):
        super().__init__()
        h, eps = cfg["hidden_size"], cfg.get("layer_norm_epsilon", 1e-5)
        self.cfg = cfg
        self.self_attention = FalconAttention(cfg)
        self.mlp = FalconMLP(cfg)
        self.num_ln = cfg.get("num_ln_in_parallel_attn")
        if self.num_ln is None and cfg["new_decoder_architecture"]:
            self.num_ln = 2
        if not cfg["parallel_attn"]:
            self.post_attention_layernorm = nn.LayerNorm(h, eps=eps)
            self.input_layernorm = nn.LayerNorm(h, eps=eps)
        elif self.num_ln == 2:
            self.ln_attn = nn.LayerNorm(h, eps=eps)
            self.ln_mlp = nn.LayerNorm(h, eps=eps)
        else:
            self.input_layernorm = nn.LayerNorm(h, eps=eps)

    def forward(self, x, rope, mask):
        cfg = self.cfg
        residual = x
        if cfg["new_decoder_architecture"] and self.num_ln == 2:
            attn_ln = self.ln_attn(x)
            mlp_ln = self.ln_mlp(x)
        else:
            attn_ln = self.input_layernorm(x)
        attn_out = self.self_attention(attn_ln, rope, mask)
        if not cfg["new_decoder_architecture"]:
            if cfg["parallel_attn"]:
                mlp_ln = attn_ln
            else:
                residual = dropout_add(attn_out, residual, 0.0, self.training)
                mlp_ln = self.post_attention_layernorm(residual)
        if cfg["new_decoder_architecture"] and cfg["parallel_attn"] and self.num_ln == 1:
            mlp_ln = attn_ln
        mlp_out = self.mlp(mlp_ln)
        if cfg["new_decoder_architecture"] or cfg["parallel_attn"]:
            mlp_out += attn_out
        return dropout_add(mlp_out, residual, 0.0, self.training)


class FalconModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        self.cfg = cfg
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], h)
        self.h = nn.ModuleList(FalconDecoderLayer(cfg, i) for i in range(cfg["num_hidden_layers"]))
        self.ln_f = nn.LayerNorm(h, eps=cfg.get("layer_norm_epsilon", 1e-5))
        self.rotary_emb = common.Rotary(h // cfg["num_attention_heads"], base=cfg.get("rope_theta", 10000.0))

    def forward(self, ids):
        x = self.word_embeddings(ids)
        b, s = ids.shape
        if self.cfg["attn"] == "eager":
            mask = common.causal_mask(b, s, x.dtype)
        else:
            mask = torch.ones(s, s, dtype=torch.bool).tril()[None, None].expand(b, 1, s, s)
        rope = self.rotary_emb(x, torch.arange(s)[None])
        for block in self.h:
            x = block(x, rope, mask)
        return self.ln_f(x)


class FalconForCausalLM(common.CausalLM):
    def __init__(self, cfg):
        nn.Module.__init__(self)
        self.transformer = FalconModel(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.word_embeddings.weight  # tie_word_embeddings

    def forward(self, ids, labels):
        logits = self.lm_head(self.transformer(ids)).float()
        labels = F.pad(labels, (0, 1), value=-100)
        shift = labels[..., 1:].contiguous()
        logits = logits.view(-1, logits.shape[-1])
        return F.cross_entropy(logits, shift.view(-1), ignore_index=-100, reduction="mean")


def build(cfg):
    return FalconForCausalLM(dict(cfg))


def _layernorm_names(cfg):
    names = []
    for i in range(cfg["num_hidden_layers"]):
        if cfg["new_decoder_architecture"]:
            names += ["transformer.h.%d.ln_attn" % i, "transformer.h.%d.ln_mlp" % i]
        else:
            names += ["transformer.h.%d.input_layernorm" % i]
    return names + ["transformer.ln_f"]


def expected_differences(mtype, cfg, s):
    """Each LayerNorm's mean and rstd: fp32 on the H200, bf16 on the CPU (PyTorch's CPU kernel)."""
    out = []
    for name in _layernorm_names(cfg):
        for _ in range(2):
            out.append(("cpu", (name, (2, s, 1), "bfloat16", 2 * s * 2)))
            out.append(("gpu", (name, (2, s, 1), "float32", 2 * s * 4)))
    return out


FAMILIES = [
    ("falcon", dict(hidden_size=H, num_hidden_layers=2, num_attention_heads=4, new_decoder_architecture=True,
                    num_kv_heads=2, parallel_attn=True, bias=False), build),
    ("falcon", dict(hidden_size=H, num_hidden_layers=2, num_attention_heads=4, new_decoder_architecture=False,
                    multi_query=True, parallel_attn=True, bias=False), build),
]

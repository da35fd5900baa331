# Purpose: Nemotron-H and Mamba2 as transformers 5.17 runs them without mamba_ssm (modeling_nemotron_h.py,
# modeling_mamba2.py): the Mamba-2 mixer's PyTorch reference path (torch_forward: in_proj, split,
# depthwise causal conv1d + SiLU, softplus/clamp of dt, the chunked SSD scan with segment sums, the
# gated RMSNorm, out_proj), Nemotron-H's relu2 MLP and RoPE-free attention mixers, the blocks'
# pre-norm residual (Mamba2's in fp32: residual_in_fp32) and both causal-LM heads.
#
# PyTorch 2.6 on the CPU keeps the bf16 dt once where 2.11 on CUDA kept two fp32 copies (x * dt and
# A * dt each upcast it): 6·b·s·H fewer bytes per Mamba-2 layer in bf16, none in fp32 (validation.md 4.4).
import torch
import torch.nn.functional as F
from torch import nn

import common

H = 256


class GatedRMSNorm(nn.Module):
    """MambaRMSNormGated: y * silu(gate) in fp32, normalized per group (Nemotron-H) or over all I."""

    def __init__(self, n, groups):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.groups = groups

    def forward(self, y, gate):
        b, s, _ = y.shape
        yd = y.dtype
        g = y.to(torch.float32) * F.silu(gate.to(torch.float32))
        if self.groups:
            g = g.view(b, s, self.groups, -1)
        g = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + 1e-5)
        g = g.view(b, s, -1)
        return self.weight * g.to(yd)


class Mamba2Mixer(nn.Module):
    def __init__(self, h, heads, head_dim, state, groups, kernel, chunk, grouped_norm):
        super().__init__()
        self.H, self.P, self.N, self.G, self.K, self.Q = heads, head_dim, state, groups, kernel, chunk
        self.I = heads * head_dim
        self.conv_dim = self.I + 2 * groups * state
        self.in_proj = nn.Linear(h, self.I + self.conv_dim + heads, bias=False)
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, kernel, groups=self.conv_dim, padding=kernel - 1)
        self.dt_bias = nn.Parameter(torch.rand(heads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, heads + 1).float()))
        self.D = nn.Parameter(torch.ones(heads))
        self.norm = GatedRMSNorm(self.I, groups if grouped_norm else 0)
        self.out_proj = nn.Linear(self.I, h, bias=False)

    @staticmethod
    def segsum(a):  # a: [..., T] -> [..., T, T], lower triangle of cumulative sums, -inf above
        t = a.size(-1)
        a = a[..., None].expand(*a.size(), t)
        strict = torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=-1)
        a = a.masked_fill(~strict, 0)
        out = torch.cumsum(a, dim=-2)
        lower = torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=0)
        return out.masked_fill(~lower, -torch.inf)

    def chunks(self, t, pad):  # pad the sequence axis (dim 1), then split it into chunks of Q
        t = F.pad(t, (0, 0, 0, pad) if t.dim() == 3 else (0, 0, 0, 0, 0, pad))
        return t.reshape(t.shape[0], -1, self.Q, *t.shape[2:])

    def forward(self, x_in):
        b, s, _ = x_in.shape
        dtype = x_in.dtype
        proj = self.in_proj(x_in)
        A = -torch.exp(self.A_log.float())
        gate, xbc, dt = proj.split([self.I, self.conv_dim, self.H], dim=-1)
        # The H200 record (hf_layers.json) shows the depthwise conv run outside the conv1d module and
        # SiLU applied to its (b, C, s) output before the transpose back; the bytes are the same as
        # torch_forward's self.act(self.conv1d(...)[..., :s].transpose(1, 2)).
        xbc = F.conv1d(xbc.transpose(1, 2), self.conv1d.weight, self.conv1d.bias, padding=self.K - 1,
                       groups=self.conv_dim)
        xbc = F.silu(xbc[..., :s]).transpose(1, 2)
        x, B, C = torch.split(xbc, [self.I, self.G * self.N, self.G * self.N], dim=-1)
        dt = torch.clamp(F.softplus(dt + self.dt_bias), 0.0, float("inf"))
        x = x.reshape(b, s, -1, self.P).float()
        B = B.reshape(b, s, -1, self.N).float().repeat_interleave(self.H // self.G, dim=2)
        C = C.reshape(b, s, -1, self.N).float().repeat_interleave(self.H // self.G, dim=2)
        pad = (self.Q - s % self.Q) % self.Q
        d_res = self.D[..., None] * F.pad(x, (0, 0, 0, 0, 0, pad))
        x = x * dt[..., None]
        A = A.to(x.dtype) * dt
        x, A, B, C = [self.chunks(t, pad) for t in (x, A, B, C)]
        A = A.permute(0, 3, 1, 2)
        A_cum = torch.cumsum(A, dim=-1)
        L = torch.exp(self.segsum(A))
        G = (C[:, :, :, None, :, :] * B[:, :, None, :, :, :]).sum(dim=-1)
        M = (G[..., None] * L.permute(0, 2, 3, 4, 1)[..., None]).sum(dim=-1)
        y_diag = (M[..., None] * x[:, :, None]).sum(dim=3)
        decay = torch.exp(A_cum[:, :, :, -1:] - A_cum)
        B_decay = B * decay.permute(0, -2, -1, 1)[..., None]
        states = (B_decay[..., None, :] * x[..., None]).sum(dim=2)
        states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
        decay_chunk = torch.exp(self.segsum(F.pad(A_cum[:, :, :, -1], (1, 0)))).transpose(1, 3)
        new_states = (decay_chunk[..., None, None] * states[:, :, None, ...]).sum(dim=1)
        states = new_states[:, :-1]
        out_decay = torch.exp(A_cum)
        y_off = (C[..., None, :] * states[:, :, None, ...]).sum(-1) * out_decay.permute(0, 2, 3, 1)[..., None]
        y = (y_diag + y_off).reshape(b, -1, self.H, self.P) + d_res
        y = y[:, :s].reshape(b, s, -1)
        y = self.norm(y, gate)
        return self.out_proj(y.to(dtype))


class ReluSquared(nn.Module):
    def forward(self, x):
        return torch.square(F.relu(x))


class NemotronMLP(nn.Module):
    """NemotronHMLP: down(relu(up(x))²), no gate."""

    def __init__(self, h, f):
        super().__init__()
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)
        self.act_fn = ReluSquared()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.up_proj(x)))


class NemotronAttention(common.Attention):
    """NemotronHAttention: Llama's projections and eager attention, no rotary embedding."""

    def forward(self, x, mask):
        q, k, v = self.project(x)
        out = common.ATTENTION[self.impl](self, q, k, v, mask if self.impl == "eager" else None, self.scaling)
        return self.o_proj(out.reshape(*x.shape[:-1], -1).contiguous())


class Block(nn.Module):
    """NemotronHBlock / Mamba2Block: residual + mixer(norm(x.to(norm dtype)))."""

    def __init__(self, h, mixer, residual_in_fp32):
        super().__init__()
        self.norm = common.RMSNorm(h, 1e-5)
        self.mixer = mixer
        self.residual_in_fp32 = residual_in_fp32

    def forward(self, x, mask):
        r = x
        x = self.norm(x.to(dtype=self.norm.weight.dtype))
        if self.residual_in_fp32:
            r = r.to(torch.float32)
        x = self.mixer(x, mask) if isinstance(self.mixer, NemotronAttention) else self.mixer(x)
        return r + x


class Backbone(nn.Module):
    def __init__(self, cfg, blocks):
        super().__init__()
        self.embeddings = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList(blocks)
        self.norm_f = common.RMSNorm(cfg["hidden_size"], 1e-5)

    def forward(self, ids):
        x = self.embeddings(ids)
        mask = common.causal_mask(ids.shape[0], ids.shape[1], x.dtype)
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm_f(x)


class LM(nn.Module):
    """NemotronHForCausalLM (model.*) / Mamba2ForCausalLM (backbone.*): lm_head on the final norm's
    output cast to the head's dtype, then ForCausalLMLoss."""

    def __init__(self, cfg, blocks, prefix):
        super().__init__()
        setattr(self, prefix, Backbone(cfg, blocks))
        self.prefix = prefix
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)

    def forward(self, ids, labels):
        hidden = getattr(self, self.prefix)(ids)
        logits = self.lm_head(hidden.to(self.lm_head.weight.dtype)).float()
        labels = F.pad(labels, (0, 1), value=-100)
        shift = labels[..., 1:].contiguous()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), shift.view(-1), ignore_index=-100)


def nemotron_h(cfg):
    h = cfg["hidden_size"]
    blocks = []
    for i, c in enumerate(cfg["hybrid_override_pattern"]):
        if c == "M":
            mixer = Mamba2Mixer(h, cfg["mamba_num_heads"], cfg["mamba_head_dim"], cfg["ssm_state_size"],
                                cfg["n_groups"], cfg["conv_kernel"], cfg["chunk_size"], grouped_norm=True)
        elif c == "-":
            mixer = NemotronMLP(h, cfg["intermediate_size"])
        else:
            mixer = NemotronAttention(cfg, i)
        blocks.append(Block(h, mixer, residual_in_fp32=False))
    return LM(cfg, blocks, "model")


def mamba2(cfg):
    if cfg["attn"] != "eager":
        raise NotImplementedError("Mamba2 has no attention (transformers refuses sdpa)")
    h = cfg["hidden_size"]
    heads, p = cfg["num_heads"], cfg["head_dim"]
    assert heads * p == cfg["expand"] * h
    blocks = [Block(h, Mamba2Mixer(h, heads, p, cfg["state_size"], cfg["n_groups"], cfg["conv_kernel"],
                                   cfg["chunk_size"], grouped_norm=False), residual_in_fp32=True)
              for _ in range(cfg["num_hidden_layers"])]
    return LM(cfg, blocks, "backbone")


def expected_differences(mtype, cfg, s, b=2):
    """PyTorch 2.11 on CUDA upcast the bf16 dt for x * dt and A * dt, keeping two fp32 copies
    ([b, s, H, 1] and [b, s, H]); 2.6 on the CPU keeps the bf16 dt ([b, s, H, 1]) once."""
    heads = cfg.get("mamba_num_heads") or cfg.get("num_heads")
    out = []
    for i, c in enumerate(cfg.get("hybrid_override_pattern", "M" * cfg["num_hidden_layers"])):
        if c != "M":
            continue
        mod = ("model" if mtype == "nemotron_h" else "backbone") + ".layers.%d.mixer" % i
        out += [("cpu", (mod, (b, s, heads, 1), "bfloat16", 2 * b * s * heads)),
                ("gpu", (mod, (b, s, heads, 1), "float32", 4 * b * s * heads)),
                ("gpu", (mod, (b, s, heads), "float32", 4 * b * s * heads))]
    return out


FAMILIES = [
    ("nemotron_h", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=4, hybrid_override_pattern="M-M*",
                        num_attention_heads=4, num_key_value_heads=2, head_dim=64, mamba_num_heads=8,
                        mamba_head_dim=32, ssm_state_size=16, n_groups=2, conv_kernel=4, chunk_size=32), nemotron_h),
    ("mamba2", dict(hidden_size=H, num_hidden_layers=2, num_heads=8, head_dim=64, state_size=16, n_groups=2,
                    conv_kernel=4, chunk_size=32, expand=2), mamba2),
]

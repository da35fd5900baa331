#!/usr/bin/env python3
"""What verl's log-probability, entropy and policy loss keep for backward (issue 37), on the CPU.

Runs verl's own functions (verl/utils/torch_functional.py of a verl checkout, taken out with ast,
never copied here) on bf16 logits [N, V] as its FSDP actor calls them with padding removed
(dp_actor.py _forward_micro_batch, use_remove_padding): logits.div_(temperature), then
logprobs_from_logits (its torch fallback logprobs_from_logits_v2; flash-attn's Triton kernel is
GPU-only), then the entropy eagerly, chunked (entropy_from_logits_with_chunking), under
torch.utils.checkpoint, or compiled (torch.compile as verl wraps it, measured with inductor's
decompositions and partitioner through aot_eager_decomp_partition), and the log-probabilities of
verl's naive variant; then verl's PPO clipped policy loss (verl/trainer/ppo/core_algos.py
compute_policy_loss_vanilla with agg_loss "token-mean", clip 0.2 / 0.28) on fp32 log-probabilities
[B, R]; and PPO's critic head as transformers' GenericForTokenClassification builds it
(nn.Dropout(0.1) and nn.Linear(h, 1) over the final norm's bf16 output [N, H]) with verl's
compute_value_loss (clip 0.5, token-mean) on its bf16 predictions [B, R]. For each case prints every
storage autograd keeps for backward (saved-tensor hooks; one
entry per storage) with its shape, dtype and bytes, and whether it is an input (the logits, the
response mask) that lives anyway.

    python3 tests/reference/measure_rl_loss.py VERL > tests/reference/rl_loss_saved.json

where VERL is a verl checkout (its verl/utils/torch_functional.py and
verl/trainer/ppo/core_algos.py are read).

PyTorch >= 2.6; the CPU is enough. N = 64 tokens, V = 1000, chunk 16 (so the chunked entropy runs
four chunks; verl's default chunk is 2048 tokens).
"""
import ast
import json
import sys
import types
from typing import Any, Optional

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

N, V, CHUNK, TEMPERATURE = 64, 1000, 16, 0.7
B, R = 4, 16
H = 64  # the critic head's hidden size


def load(path, names, scope=None):
    tree = ast.parse(open(path).read())
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    for n in keep:
        n.decorator_list = []  # register_policy_loss needs verl's registry
    scope = dict(scope or {}, torch=torch, F=F)
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), scope)
    return scope


class Config(dict):
    """The actor config's fields compute_policy_loss_vanilla reads (attribute or .get)."""
    __getattr__ = dict.get


def policy_loss_saved(root):
    tf = load(root + "/verl/utils/torch_functional.py", {"masked_sum", "masked_mean"})
    shim = types.SimpleNamespace(masked_sum=tf["masked_sum"], masked_mean=tf["masked_mean"])
    ca = load(root + "/verl/trainer/ppo/core_algos.py", {"compute_policy_loss_vanilla", "agg_loss"},
              {"verl_F": shim, "Optional": Optional, "Any": Any, "ActorConfig": object,
               "AlgoConfig": type("AlgoConfig", (), {})})
    cfg = Config(clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, global_batch_info={})
    torch.manual_seed(0)
    log_prob = torch.randn(B, R, requires_grad=True)
    old, adv = torch.randn(B, R), torch.randn(B, R)
    mask = torch.ones(B, R, dtype=torch.int64)  # verl's response_mask (get_response_mask: int64)
    inputs = {t.untyped_storage().data_ptr() for t in (log_prob, old, adv, mask)}
    seen = {}

    def pack(t):
        p = t.untyped_storage().data_ptr()
        seen.setdefault(p, dict(entry(t), is_input=p in inputs))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss, _ = ca["compute_policy_loss_vanilla"](old, log_prob, adv, mask, "token-mean", cfg)
    loss.backward()
    return list(seen.values())


def entry(t):
    s = t.untyped_storage()
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "storage_bytes": s.nbytes()}


def measure(fn):
    torch.manual_seed(0)
    hidden = torch.randn(N, V, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, V, (N,))
    logits = hidden * 1  # a non-leaf, as lm_head's output is, so div_ may run in place
    logits.div_(TEMPERATURE)
    seen = {}

    def pack(t):
        seen.setdefault(t.untyped_storage().data_ptr(), entry(t))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(logits, labels)
    sum(o.float().sum() for o in out).backward()
    ptr = logits.untyped_storage().data_ptr()
    saved = [dict(v, is_logits=(p == ptr)) for p, v in seen.items()]
    return saved


def critic_saved(root):
    tf = load(root + "/verl/utils/torch_functional.py", {"masked_sum", "masked_mean",
                                                         "clip_by_value"})
    shim = types.SimpleNamespace(masked_sum=tf["masked_sum"], masked_mean=tf["masked_mean"],
                                 clip_by_value=tf["clip_by_value"])
    ca = load(root + "/verl/trainer/ppo/core_algos.py", {"compute_value_loss", "agg_loss"},
              {"verl_F": shim, "Optional": Optional})
    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Linear(H, 1)).to(torch.bfloat16)
    head.train()
    hidden = torch.randn(N, H, dtype=torch.bfloat16, requires_grad=True)
    normed = hidden * 1  # the final norm's output, a non-leaf that lives anyway
    inputs = {normed.untyped_storage().data_ptr()}
    for p in head.parameters():
        inputs.add(p.untyped_storage().data_ptr())
    seen_head, seen_loss = {}, {}

    def packer(seen):
        def pack(t):
            p = t.untyped_storage().data_ptr()
            seen.setdefault(p, dict(entry(t), is_input=p in inputs))
            return t
        return pack

    with torch.autograd.graph.saved_tensors_hooks(packer(seen_head), lambda t: t):
        values = head(normed).squeeze(-1)
    vpreds = torch.randn(B, R, dtype=torch.bfloat16, requires_grad=True)
    old, returns = torch.randn(B, R), torch.randn(B, R)
    mask = torch.ones(B, R, dtype=torch.int64)
    inputs.update(t.untyped_storage().data_ptr() for t in (vpreds, old, returns, mask))
    with torch.autograd.graph.saved_tensors_hooks(packer(seen_loss), lambda t: t):
        loss, _ = ca["compute_value_loss"](vpreds, returns, old, mask, 0.5, "token-mean")
    (values.float().sum() + loss).backward()
    return {"head": list(seen_head.values()), "value_loss": list(seen_loss.values())}


def main():
    root = sys.argv[1]
    f = load(root + "/verl/utils/torch_functional.py", {"gather_from_labels", "logprobs_from_logits_v2",
                           "logprobs_from_logits_naive", "entropy_from_logits",
                           "entropy_from_logits_with_chunking"})
    v2, naive = f["logprobs_from_logits_v2"], f["logprobs_from_logits_naive"]
    ent, chunked = f["entropy_from_logits"], f["entropy_from_logits_with_chunking"]
    torch._dynamo.reset()
    ent_compiled = torch.compile(ent, backend="aot_eager_decomp_partition", dynamic=True)
    cases = {
        "logprob_v2": lambda x, y: [v2(x, y)],
        "logprob_naive": lambda x, y: [naive(x, y)],
        "entropy_eager": lambda x, y: [ent(x)],
        "entropy_chunked": lambda x, y: [chunked(x, chunk_size=CHUNK)],
        "entropy_checkpointed": lambda x, y: [torch.utils.checkpoint.checkpoint(
            ent, x, use_reentrant=False)],
        "entropy_compiled": lambda x, y: [ent_compiled(x)],
        "logprob_v2_entropy_eager": lambda x, y: [v2(x, y), ent(x)],
    }
    out = {"torch": torch.__version__, "N": N, "V": V, "chunk": CHUNK, "B": B, "R": R,
           "H": H,
           "source": "volcengine/verl b178a3c verl/utils/torch_functional.py, "
                     "verl/trainer/ppo/core_algos.py",
           "cases": {k: measure(fn) for k, fn in cases.items()},
           "policy_loss": policy_loss_saved(root),
           "critic": critic_saved(root)}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

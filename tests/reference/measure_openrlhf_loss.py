#!/usr/bin/env python3
"""What OpenRLHF's actor keeps for backward after its log-probabilities (issue 37), on the CPU.

Runs OpenRLHF's own PolicyLoss and aggregate_loss (openrlhf/models/loss.py, with masked_mean from
openrlhf/models/utils.py of a checkout, taken out with ast, never copied here) with the actor's
defaults (ppo, clip 0.2 / 0.2, token-level loss, no dual clip, no vLLM correction), after the two
statements of Actor.forward (openrlhf/models/actor.py l.290 and l.294) that cut the per-token
log-probabilities to the actions and mask them: log_probs[:, :-1], then
log_probs[:, -A:] * action_mask.float(). The log-probabilities themselves come from flash-attn's
Triton cross entropy on the GPU (its saved tensors are read from its code); here they are an fp32
[B, S] tensor that needs grad. Prints every storage the backward unpacks (saved-tensor hooks;
one entry per storage) with its shape, dtype and bytes, and whether it lives anyway (the inputs:
the action mask, the old log-probabilities, the advantages).

    python3 tests/reference/measure_openrlhf_loss.py OPENRLHF > tests/reference/openrlhf_loss_saved.json

where OPENRLHF is an OpenRLHF checkout (3c3be62 was measured). PyTorch >= 2.6; the CPU is enough.
B = 4 sequences of S = 24 tokens (A = S - 1 = 23 action positions, the action mask covering the
last 16).

"entropy": what --actor.entropy_coef adds (actor.py l.269-274, ppo_actor.py l.344-352): OpenRLHF's
compute_entropy (models/utils.py, decorated @torch.compile) on the fp32 logits [B, S, V = 1000],
its [:, :-1] view cut to the actions and aggregate_loss'd as the policy loss is, compiled as
tests/reference/measure_rl_loss.py compiles verl's (backend "aot_eager_decomp_partition":
AOTAutograd with inductor's decompositions and partitioner, no C++ compiler needed), with
static and with dynamic shapes. Listed: every storage the backward unpacks besides the logits
(kept by the cross entropy anyway).
"""
import ast
import json
import sys
import types
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

B, S, V = 4, 24, 1000
A = S - 1


def load(root):
    """OpenRLHF's masked_mean, compute_entropy (its @torch.compile left off: entropy_saved
    compiles it with the measuring backend), aggregate_loss and PolicyLoss."""
    scope = {"torch": torch, "nn": nn, "F": F, "Optional": Optional, "Tuple": Tuple,
             "dist": types.SimpleNamespace()}
    utils = ast.parse(open(root + "/openrlhf/models/utils.py").read())
    loss = ast.parse(open(root + "/openrlhf/models/loss.py").read())
    keep = [n for n in utils.body if isinstance(n, ast.FunctionDef)
            and n.name in ("masked_mean", "compute_entropy")]
    keep += [n for n in loss.body if (isinstance(n, ast.FunctionDef) and n.name == "aggregate_loss")
             or (isinstance(n, ast.ClassDef) and n.name == "PolicyLoss")]
    for n in keep:
        if isinstance(n, ast.FunctionDef):
            n.decorator_list = []
    exec(compile(ast.Module(body=keep, type_ignores=[]), "openrlhf", "exec"), scope)
    return scope


def unpacked(step):
    """Runs step() under saved-tensor hooks: what its backward unpacks, the first tensor seen of
    each storage, by storage address, in the order unpacked."""
    kept, used = [], set()

    def pack(x):
        kept.append(x)
        return len(kept) - 1

    def unpack(i):
        used.add(i)
        return kept[i]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        step()
    seen = {}
    for i in sorted(used):
        seen.setdefault(kept[i].untyped_storage().data_ptr(), kept[i])
    return seen


def entry(t):
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "storage_bytes": t.untyped_storage().nbytes()}


def entropy_saved(scope, dynamic):
    """The storages the entropy bonus keeps for backward, beyond the logits and the mask."""
    torch._dynamo.reset()
    entropy = torch.compile(scope["compute_entropy"], backend="aot_eager_decomp_partition",
                            dynamic=dynamic)
    torch.manual_seed(0)
    raw = torch.randn(B, S, V, dtype=torch.bfloat16, requires_grad=True)  # the model's logits
    logits = raw.to(torch.float32)  # actor.py l.267
    action_mask = torch.zeros(B, A, dtype=torch.long)
    action_mask[:, A - 16:] = 1
    anyway = {x.untyped_storage().data_ptr() for x in (raw, logits, action_mask)}

    def step():
        ent = entropy(logits)[:, :-1]  # actor.py l.274
        bonus = scope["aggregate_loss"](ent[:, -A:], action_mask, dp_size=1,
                                        batch_num_tokens=float(action_mask.sum()))
        (-bonus * 0.01).backward()  # ppo_actor.py l.352: loss -= entropy_loss * entropy_coef

    return [entry(x) for p, x in unpacked(step).items() if p not in anyway]


def main():
    scope = load(sys.argv[1])
    torch.manual_seed(0)
    leaf = torch.randn(B, S, requires_grad=True)
    log_probs = leaf * 1  # -cross_entropy_loss(...)[0].view(B, S): fp32, needs grad
    action_mask = torch.zeros(B, A, dtype=torch.long)  # zeros_like(attention_mask), long
    action_mask[:, A - 16:] = 1
    old = torch.randn(B, A)
    advantages = torch.randn(B, A)
    anyway = {x.untyped_storage().data_ptr() for x in (leaf, log_probs, action_mask, old, advantages)}
    loss_fn = scope["PolicyLoss"]()

    def step():
        lp = log_probs[:, :-1]
        action_log_probs = lp[:, -action_mask.shape[1]:] * action_mask.float()
        loss, clip_ratio, ppo_kl, _ = loss_fn(action_log_probs, old, advantages,
                                              action_mask=action_mask, dp_size=1,
                                              batch_num_tokens=float(action_mask.sum()))
        loss.backward()

    saved = [dict(entry(x), lives_anyway=p in anyway) for p, x in unpacked(step).items()]
    json.dump({"torch": torch.__version__, "B": B, "S": S, "A": A,
               "source": "OpenRLHF/OpenRLHF 3c3be62 openrlhf/models/loss.py PolicyLoss, "
                         "aggregate_loss; openrlhf/models/actor.py l.290, l.294",
               "saved": saved,
               "entropy": {"V": V, "backend": "aot_eager_decomp_partition",
                           "static": entropy_saved(scope, False),
                           "dynamic": entropy_saved(scope, True)}},
              sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What TRL's GRPOTrainer and DPOTrainer keep for backward past the final norm (issue 37), on the CPU.

Runs TRL's own code (trl/trainer/grpo_trainer.py GRPOTrainer._compute_loss and
_get_per_token_logps_and_entropies, trl/trainer/utils.py selective_log_softmax,
entropy_from_logits, nanmin, nanmax of a TRL checkout, taken out with ast, never copied here) on a
bf16 lm_head over the final norm's bf16 output [B, P + R, H], as transformers' causal-LM forward
runs it with logits_to_keep (lm_head over hidden_states[:, -(R + 1):, :]), with GRPOConfig's
defaults (loss_type "dapo", epsilon 0.2, importance_sampling_level "token", temperature 1,
top_entropy_quantile 1, entropy_coef 0, beta 0). Three cases: with vLLM (use_vllm and
vllm_importance_sampling_correction: the old log-probabilities and the importance-sampling ratio
come in the inputs), without vLLM (old_per_token_logps None: per_token_logps.detach()), and with
a reference model (beta 0.04, its log-probabilities in the inputs). For each case prints every
storage autograd keeps for backward (saved-tensor hooks; one entry per storage) with its shape,
dtype and bytes, and whether it is something that lives anyway (the norm's output, the lm_head
weight, the input ids and masks, the inputs dict's tensors).

    python3 tests/reference/measure_trl_loss.py TRL > tests/reference/trl_loss_saved.json

where TRL is a checkout of huggingface/trl (f2cd577 was measured). PyTorch >= 2.6; the CPU is
enough. B = 4 sequences of P = 8 prompt and R = 16 completion tokens, H = 64, V = 1000.

DPO: DPOTrainer._compute_loss (trl/trainer/dpo_trainer.py) with DPOConfig's defaults (loss_type
["sigmoid"], beta 0.1, reverse KL, no ld_alpha, no weighting, the reference's forward each step)
on B = 4 sequences (2 pairs, chosen then rejected, as the collator concatenates them) of S = 24
tokens, the last 16 the completion: the policy's lm_head over its bf16 final-norm output, the
reference's over its own under no_grad.
"""
import ast
import contextlib
import json
import sys
import types
from collections import defaultdict

import torch
import torch.nn.functional as F

B, P, R, H, V = 4, 8, 16, 64, 1000


def functions(path, names, cls=None):
    """The named top-level functions (or methods of class cls) of a source file, as AST nodes."""
    tree = ast.parse(open(path).read())
    body = tree.body
    if cls:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
    return [n for n in body if isinstance(n, ast.FunctionDef) and n.name in names]


def load(root):
    scope = {"torch": torch, "F": F, "nn": torch.nn, "defaultdict": defaultdict,
             "is_peft_model": lambda m: False,
             "disable_gradient_checkpointing": lambda *a, **k: contextlib.nullcontext()}
    nodes = functions(root + "/trl/trainer/utils.py",
                      {"selective_log_softmax", "entropy_from_logits", "nanmin", "nanmax"})
    nodes += functions(root + "/trl/trainer/grpo_trainer.py",
                       {"_compute_loss", "_get_per_token_logps_and_entropies"}, "GRPOTrainer")
    dpo = functions(root + "/trl/trainer/dpo_trainer.py", {"_compute_loss"}, "DPOTrainer")
    dpo[0].name = "_dpo_compute_loss"
    for n in nodes + dpo:
        n.decorator_list = []
    mod = ast.Module(body=nodes + dpo, type_ignores=[])
    exec(compile(mod, "trl", "exec"), scope)
    return scope


class Accelerator:
    num_processes = 1

    def reduce(self, t, reduction="sum"):
        return t

    def gather(self, t):
        return t


def trainer(scope, use_vllm, beta):
    """A stand-in for self with GRPOConfig's defaults (trl/trainer/grpo_config.py)."""
    t = types.SimpleNamespace(
        temperature=1.0, model_kwarg_keys={"logits_to_keep"}, _entropy_bonus_enabled=False,
        aux_loss_enabled=False, top_entropy_quantile=1.0, off_policy_mask_threshold=None,
        importance_sampling_level="token", beta=beta, loss_type="dapo", epsilon_low=0.2,
        epsilon_high=0.2, use_vllm=use_vllm, vllm_importance_sampling_correction=True,
        args=types.SimpleNamespace(use_bias_correction_kl=False, delta=None),
        model=types.SimpleNamespace(training=True), accelerator=Accelerator(),
        _metrics={"train": defaultdict(list)}, current_gradient_accumulation_steps=1)
    for name in ("_compute_loss", "_get_per_token_logps_and_entropies"):
        setattr(t, name, types.MethodType(scope[name], t))
    return t


def entry(t):
    s = t.untyped_storage()
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "storage_bytes": s.nbytes()}


def backward_reads(loss_fn, anyway):
    """Runs loss_fn() and its backward; every storage the backward unpacks, once each, and whether
    it lives anyway (its data pointer in anyway). Each saved tensor is kept in a list and marked
    when unpacked: a graph built only for the trainers' metrics (TRL's clip ratios, the KL's mean)
    is freed at once and never unpacked."""
    kept, used = [], set()

    def pack(x):
        kept.append(x)
        return len(kept) - 1

    def unpack(i):
        used.add(i)
        return kept[i]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss_fn().backward()
    seen = {}
    for i in sorted(used):
        x = kept[i]
        p = x.untyped_storage().data_ptr()
        seen.setdefault(p, dict(entry(x), lives_anyway=p in anyway))
    return list(seen.values())


def measure(scope, use_vllm, beta):
    torch.manual_seed(0)
    lm_head = torch.nn.Linear(H, V, bias=False).to(torch.bfloat16)
    leaf = torch.randn(B, P + R, H, dtype=torch.bfloat16, requires_grad=True)
    normed = leaf * 1  # the final norm's output: a non-leaf that lives anyway

    def model(input_ids, attention_mask, logits_to_keep, use_cache):
        # transformers' causal-LM forward: logits only for the last logits_to_keep positions.
        return types.SimpleNamespace(logits=lm_head(normed[:, -logits_to_keep:, :]))

    t = trainer(scope, use_vllm, beta)
    inputs = {
        "prompt_ids": torch.randint(0, V, (B, P)),
        "prompt_mask": torch.ones(B, P, dtype=torch.int64),
        "completion_ids": torch.randint(0, V, (B, R)),
        # _generate_and_score_completions: (sequence_indices <= eos_idx).int()
        "completion_mask": torch.ones(B, R, dtype=torch.int32),
        "advantages": torch.randn(B),
        "num_items_in_batch": torch.tensor(B * R),
    }
    if use_vllm:  # the trainer's own no-grad pass (bf16) and the importance-sampling ratio
        inputs["old_per_token_logps"] = torch.randn(B, R, dtype=torch.bfloat16)
        inputs["importance_sampling_ratio"] = torch.rand(B, 1)
    if beta:
        inputs["ref_per_token_logps"] = torch.randn(B, R, dtype=torch.bfloat16)
    anyway = {x.untyped_storage().data_ptr() for x in list(inputs.values()) + [normed, leaf]}
    anyway |= {p.untyped_storage().data_ptr() for p in lm_head.parameters()}
    return backward_reads(lambda: scope["_compute_loss"](t, _Model(model), inputs), anyway)


class _Model:
    """model(**inputs) as _get_per_token_logps_and_entropies calls it."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, **kw):
        return self.fn(kw["input_ids"], kw["attention_mask"], kw["logits_to_keep"], kw["use_cache"])


def measure_dpo(scope):
    torch.manual_seed(0)
    S = P + R
    lm_head = torch.nn.Linear(H, V, bias=False).to(torch.bfloat16)
    ref_head = torch.nn.Linear(H, V, bias=False).to(torch.bfloat16).requires_grad_(False)
    leaf = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    normed = leaf * 1  # the policy's final-norm output
    ref_normed = torch.randn(B, S, H, dtype=torch.bfloat16)

    def policy(**kw):
        return types.SimpleNamespace(logits=lm_head(normed))

    def reference(**kw):
        return types.SimpleNamespace(logits=ref_head(ref_normed))

    t = types.SimpleNamespace(
        model=types.SimpleNamespace(training=True), accelerator=types.SimpleNamespace(
            device="cpu", gather_for_metrics=lambda x: x, gather=lambda x: x),
        aux_loss_enabled=False, ld_alpha=None, precompute_ref_logps=False, ref_model=reference,
        f_divergence_type="reverse_kl", loss_types=["sigmoid"], loss_weights=[1.0], beta=0.1,
        use_weighting=False, label_smoothing=0.0, args=types.SimpleNamespace(
            gradient_checkpointing_kwargs=None), _metrics={"train": defaultdict(list)},
        _total_train_tokens=0)
    completion = torch.zeros(B, S, dtype=torch.int64)
    completion[:, P:] = 1
    inputs = {"input_ids": torch.randint(0, V, (B, S)),
              "attention_mask": torch.ones(B, S, dtype=torch.int64),
              "completion_mask": completion}
    anyway = {x.untyped_storage().data_ptr() for x in list(inputs.values()) + [normed, leaf]}
    anyway |= {p.untyped_storage().data_ptr() for p in lm_head.parameters()}
    return backward_reads(lambda: scope["_dpo_compute_loss"](t, policy, inputs, False), anyway)


def main():
    scope = load(sys.argv[1])
    out = {"torch": torch.__version__, "B": B, "P": P, "R": R, "H": H, "V": V,
           "source": "huggingface/trl f2cd577 trl/trainer/grpo_trainer.py "
                     "(_compute_loss, _get_per_token_logps_and_entropies), trl/trainer/utils.py",
           "cases": {"vllm": measure(scope, True, 0.0),
                     "no_vllm": measure(scope, False, 0.0),
                     "beta": measure(scope, True, 0.04)},
           "dpo": {"source": "huggingface/trl f2cd577 trl/trainer/dpo_trainer.py _compute_loss",
                   "sequences": B, "seq": P + R, "completion": R,
                   "saved": measure_dpo(scope)}}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

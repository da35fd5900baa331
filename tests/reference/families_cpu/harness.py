#!/usr/bin/env python3
# Purpose: the measuring side of the CPU re-implementations of issue 13's model families: run a
# model's forward under saved_tensors_hooks, name the innermost module that packed each tensor,
# count each storage once (parameters left out), and compare a bf16 run with the H200's record of
# the real transformers model (tests/reference/gpu/hf_layers.json) tensor for tensor.
#
# Why a re-implementation: this machine has no transformers and no GPU; PyTorch 2.6 (Debian 13's
# python3-torch, ../shared/toolchain.md) runs here. A family's module is trusted for fp32 once its
# bf16 run saves what the real model saved on the H200, record for record (module, shape, dtype,
# bytes), with every difference named by that family file's expected_differences().
import torch


def measure(model, ids):
    """Every storage the forward packs, first packer's module name, shape, dtype and bytes."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    stack, hooks = ["<top>"], []

    def pop(mod, args, out):  # returns None: a forward hook's return value would replace the output
        stack.pop()

    for name, mod in model.named_modules():
        hooks.append(mod.register_forward_pre_hook(lambda m, a, n=name: stack.append(n or "<model>")))
        hooks.append(mod.register_forward_hook(pop))
    packed = []

    def pack(t):
        packed.append((t, stack[-1]))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(ids, labels=ids)
    for h in hooks:
        h.remove()
    seen, rows = set(), []
    for t, mod in packed:
        k = t.untyped_storage().data_ptr()
        if k in seen or k in params:
            continue
        seen.add(k)
        rows.append({"module": mod, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                     "bytes": t.untyped_storage().nbytes()})
    loss.backward()  # the graph is complete: every saved tensor was needed and is still valid
    return rows


def by_prefix(rows):
    """Bytes per decoder layer ("model.layers.N"), the rest by top module (as measure_hf_layers.py)."""
    agg = {}
    for r in rows:
        parts = r["module"].split(".")
        key = ".".join(parts[:3]) if len(parts) >= 3 and parts[1] in ("layers", "h") else parts[0]
        agg[key] = agg.get(key, 0) + r["bytes"]
    return agg


def key(r):
    return (r["module"], tuple(r["shape"]), r["dtype"], r["bytes"])


def diff(cpu_rows, gpu_rows):
    """Records only one side has, as (side, record) pairs, multiset difference, in order."""
    from collections import Counter
    c, g = Counter(map(key, cpu_rows)), Counter(map(key, gpu_rows))
    out = [("cpu", k) for k in (c - g).elements()] + [("gpu", k) for k in (g - c).elements()]
    return out

#!/usr/bin/env python3
# Purpose: what torch.compile's partitioner saves for backward in each model family's decoder
# layer as transformers writes it (issue 36), beside the same layer eager: every family of
# tests/reference/families_cpu/ (op-for-op re-implementations of transformers 5.17's modeling
# files, checked against the real models on the H200 by measure_families_cpu.py).
#
# Usage (PyTorch 2.6 on the CPU, the Debian 13 root of ../shared/toolchain.md):
#   chroot FOLDER python3 tests/reference/measure_compile_hf.py > tests/reference/compile_hf_saved.json
#   chroot FOLDER python3 tests/reference/measure_compile_hf.py --whole > tests/reference/compile_hf_whole_saved.json
#   (copy tests/reference/families_cpu next to it as families_cpu/, as the chroot sees it;
#   --whole: the Llama, Qwen3 and Phi-3 models compiled whole, as transformers' Trainer compiles
#   them with torch_compile, loss included)
#
# Method: each family's model is built in bf16 (b = 2, s = 64 and 128, vocabulary 1,024) with
# attention through F.scaled_dot_product_attention's default CPU kernel (the flash kernel for CPU,
# which saves its output and fp32 log-sum-exp as CUDA's flash kernel does) where the family's code
# calls the shared attention function, else its own (gpt-oss: eager, transformers refuses SDPA;
# Falcon: its own SDPA call with a mask). One forward records each decoder layer's arguments;
# each layer then runs alone on a fresh copy of its input, once eager and once under
# torch.compile(backend="aot_eager_decomp_partition") (AOTAutograd with inductor's decompositions
# and its min-cut partitioner, as measure_compile.py), at activation_memory_budget 1. Every tensor
# packed by saved_tensors_hooks is recorded once per storage (shape, dtype, the storage's bytes);
# parameters and the layer's other arguments (RoPE tables, masks) are static and left out; the
# layer's input is counted. MoE layers break dynamo's graph at their data-dependent routing: the
# pieces between the breaks are compiled, the rest runs eager, and what they save is recorded alike.
import json
import os
import sys
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "families_cpu"))
import common  # noqa: E402
import registry  # noqa: E402


def sdpa_attention(module, q, k, v, mask, scaling, dropout=0.0, softcap=None):
    """transformers' sdpa_attention_forward with PyTorch's default kernel choice."""
    assert softcap is None
    k = common.repeat_kv(k, module.groups)
    v = common.repeat_kv(v, module.groups)
    if mask is None:
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, scale=scaling, is_causal=True)
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scaling)
    return out.transpose(1, 2).contiguous()


common.ATTENTION["sdpa"] = sdpa_attention


def layer_list(model, n):
    for _, m in model.named_modules():
        if isinstance(m, nn.ModuleList) and len(m) == n:
            return m
    raise RuntimeError("no list of %d layers" % n)


def packed_rows(call, static):
    """Runs call() under saved_tensors_hooks: its result and every storage it packed once
    (shape, dtype, the storage's bytes), those in `static` left out."""
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = call()
    seen, rows = set(), []
    for t in packed:
        k = t.untyped_storage().data_ptr()
        if k in seen or k in static:
            continue
        seen.add(k)
        rows.append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                     "bytes": t.untyped_storage().nbytes()})
    return out, rows


def saved(fn, args, kwargs, static):
    x = args[0].detach().clone().requires_grad_(True)
    out, rows = packed_rows(lambda: fn(x, *args[1:], **kwargs), static)
    o = out[0] if isinstance(out, (tuple, list)) else out
    o.float().sum().backward()
    return rows


def static_storages(model, args, kwargs):
    out = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def walk(v):
        if isinstance(v, torch.Tensor):
            out.add(v.untyped_storage().data_ptr())
        elif isinstance(v, (tuple, list)):
            for u in v:
                walk(u)
        elif isinstance(v, dict):
            for u in v.values():
                walk(u)

    walk(args[1:])
    walk(kwargs)
    return out


def family_rows(mtype, kw, build, s):
    for attn in ("sdpa", "eager"):
        torch.manual_seed(0)
        cfg = dict(kw, vocab_size=1024, max_position_embeddings=512, attn=attn)
        try:
            model = build(cfg).to(torch.bfloat16)
        except NotImplementedError:  # gpt-oss, Mamba-2: no SDPA in transformers
            continue
        model.train()
        layers = layer_list(model, kw["num_hidden_layers"])
        calls = {}
        hooks = [l.register_forward_pre_hook(lambda m, a, k, i=i: calls.__setitem__(i, (a, k)),
                                             with_kwargs=True) for i, l in enumerate(layers)]
        ids = torch.randint(0, 1024, (2, s))
        model(ids, labels=ids)
        for h in hooks:
            h.remove()
        rows = []
        for i, layer in enumerate(layers):
            a, k = calls[i]
            static = static_storages(model, a, k)
            eager = saved(layer, a, k, static)
            torch._dynamo.reset()
            compiled = saved(torch.compile(layer, backend="aot_eager_decomp_partition"), a, k, static)
            rows.append({"model_type": mtype, "config": kw, "attention": attn, "b": 2, "s": s,
                         "layer": i, "class": type(layer).__name__,
                         "eager_bytes": sum(r["bytes"] for r in eager),
                         "compiled_bytes": sum(r["bytes"] for r in compiled),
                         "eager": eager, "compiled": compiled})
        return rows
    return []


def whole_rows(mtype, kw, build, s):
    """The whole model compiled as transformers' Trainer does with torch_compile (embedding,
    rotary tables, every layer, final norm, head and ForCausalLMLoss in one graph), eager beside."""
    torch.manual_seed(0)
    cfg = dict(kw, vocab_size=1024, max_position_embeddings=512, attn="sdpa")
    model = build(cfg).to(torch.bfloat16)
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    ids = torch.randint(0, 1024, (2, s))

    def run(fn):
        loss, rows = packed_rows(lambda: fn(ids, labels=ids), params)
        loss.backward()
        return rows

    eager = run(model)
    torch._dynamo.reset()
    compiled = run(torch.compile(model, backend="aot_eager_decomp_partition"))
    return {"model_type": mtype, "config": kw, "attention": "sdpa", "b": 2, "s": s, "vocab_size": 1024,
            "eager_bytes": sum(r["bytes"] for r in eager), "compiled_bytes": sum(r["bytes"] for r in compiled),
            "eager": eager, "compiled": compiled}


def main():
    torch._logging.set_logs(dynamo=50)  # the MoE layers' graph breaks are expected; keep stderr quiet
    if sys.argv[1:] == ["--whole"]:
        rows = []
        for mtype, kw, build in registry.FAMILIES:
            if mtype in ("llama", "qwen3", "phi3"):
                for s in (64, 128):
                    r = whole_rows(mtype, kw, build, s)
                    print("%-8s s=%-4d whole model: eager %9d B  compiled %9d B" % (
                        mtype, s, r["eager_bytes"], r["compiled_bytes"]), file=sys.stderr, flush=True)
                    rows.append(r)
        head = {"generator": "tests/reference/measure_compile_hf.py --whole", "torch": torch.__version__,
                "device": "cpu", "backend": "aot_eager_decomp_partition", "activation_memory_budget": 1.0}
        sys.stdout.write(json.dumps(head)[:-1] + ', "rows": [\n')
        sys.stdout.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in rows) + "\n]}\n")
        return
    results = []
    for mtype, kw, build in registry.FAMILIES:
        for s in (64, 128):
            for r in family_rows(mtype, kw, build, s):
                same = Counter(map(json.dumps, r["eager"])) == Counter(map(json.dumps, r["compiled"]))
                print("%-12s s=%-4d layer %d %-22s eager %9d B  compiled %9d B%s" % (
                    r["model_type"], s, r["layer"], r["class"], r["eager_bytes"], r["compiled_bytes"],
                    "  (same tensors)" if same else ""), file=sys.stderr, flush=True)
                results.append(r)
    head = {"generator": "tests/reference/measure_compile_hf.py", "torch": torch.__version__,
            "device": "cpu", "backend": "aot_eager_decomp_partition", "activation_memory_budget": 1.0}
    sys.stdout.write(json.dumps(head)[:-1] + ', "rows": [\n')
    sys.stdout.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in results) + "\n]}\n")


if __name__ == "__main__":
    main()

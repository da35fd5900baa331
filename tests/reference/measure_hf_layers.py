#!/usr/bin/env python3
# Purpose: ground truth for the model families of issue 13: which tensors real transformers models
# (Qwen3, Qwen3-MoE, DeepSeek-V2/V3, gpt-oss, Gemma 2/3, Llama 4, Phi-3, PhiMoE, Falcon, Nemotron-H,
# Mamba2, and Llama as the known baseline) save for backward on CUDA, attributed to the module that
# saved them. Tiny configurations (a few layers, h = 256), bf16, train mode, two sequence lengths
# so s- and s²-terms separate; windows and chunks set below s so local layers differ from global.
#
# Usage (GPU machine, transformers 5.x): python3 tests/reference/measure_hf_layers.py OUT.json
#   [--dtypes bf16,fp32]   (bf16 alone by default, as hf_layers.json was taken; fp32 rows confirm
#   tests/reference/families_cpu.json's CPU re-implementations on CUDA, and record what fp32 SDPA,
#   the memory-efficient kernel on CUDA, keeps)
# Method: saved_tensors_hooks record every packed tensor; each storage is counted once, on the device
# only; parameters are left out; a module stack kept by forward pre/post hooks names the innermost
# module running when the tensor was packed; backward then runs to prove the graph is complete.
import itertools
import json
import sys
import traceback

import torch
import transformers

H, V = 256, 1024
FAMILIES = [
    ("llama", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2)),
    ("qwen3", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=96)),
    ("qwen3_moe", dict(hidden_size=H, intermediate_size=512, moe_intermediate_size=128, num_hidden_layers=3,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=96, num_experts=8,
                       num_experts_per_tok=2, decoder_sparse_step=2, mlp_only_layers=[2], norm_topk_prob=True)),
    ("deepseek_v3", dict(hidden_size=H, intermediate_size=512, moe_intermediate_size=128, num_hidden_layers=3,
                         first_k_dense_replace=1, n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2,
                         n_group=2, topk_group=1, q_lora_rank=96, kv_lora_rank=64, qk_nope_head_dim=32,
                         qk_rope_head_dim=16, v_head_dim=48, num_attention_heads=4, num_key_value_heads=4)),
    ("deepseek_v2", dict(hidden_size=H, intermediate_size=512, moe_intermediate_size=128, num_hidden_layers=3,
                         first_k_dense_replace=1, n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=2,
                         n_group=1, topk_group=1, q_lora_rank=None, kv_lora_rank=64, qk_nope_head_dim=32,
                         qk_rope_head_dim=16, v_head_dim=48, num_attention_heads=4, num_key_value_heads=4)),
    ("gpt_oss", dict(hidden_size=H, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=64, num_local_experts=8, num_experts_per_tok=2,
                     sliding_window=32, layer_types=["sliding_attention", "full_attention"])),
    ("gemma2", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=64, sliding_window=32, query_pre_attn_scalar=64)),
    ("gemma3_text", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=64, sliding_window=32, query_pre_attn_scalar=64,
                         layer_types=["sliding_attention", "full_attention"])),
    ("llama4_text", dict(hidden_size=H, intermediate_size=256, intermediate_size_mlp=512, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_local_experts=4,
                         num_experts_per_tok=1, interleave_moe_layer_step=2, attention_chunk_size=32)),
    ("phi3", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, pad_token_id=0)),
    ("phimoe", dict(hidden_size=H, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2)),
    ("falcon", dict(hidden_size=H, num_hidden_layers=2, num_attention_heads=4, new_decoder_architecture=True,
                    num_kv_heads=2, parallel_attn=True, bias=False)),
    ("falcon", dict(hidden_size=H, num_hidden_layers=2, num_attention_heads=4, new_decoder_architecture=False,
                    multi_query=True, parallel_attn=True, bias=False)),
    ("nemotron_h", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=4, hybrid_override_pattern="M-M*",
                        num_attention_heads=4, num_key_value_heads=2, head_dim=64, mamba_num_heads=8,
                        mamba_head_dim=32, ssm_state_size=16, n_groups=2, conv_kernel=4, chunk_size=32)),
    ("mamba2", dict(hidden_size=H, num_hidden_layers=2, num_heads=8, head_dim=64, state_size=16, n_groups=2,
                    conv_kernel=4, chunk_size=32, expand=2)),
]


def measure(model, ids):
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
        out = model(input_ids=ids, labels=ids)
    for h in hooks:
        h.remove()
    seen, rows = set(), []
    for t, mod in packed:
        if not t.is_cuda:
            continue
        k = t.untyped_storage().data_ptr()
        if k in seen or k in params:
            continue
        seen.add(k)
        rows.append({"module": mod, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                     "bytes": t.untyped_storage().nbytes()})
    out.loss.backward()
    return rows


def by_prefix(rows):
    agg = {}
    for r in rows:
        parts = r["module"].split(".")
        key = ".".join(parts[:3]) if len(parts) >= 3 and parts[1] == "layers" else parts[0]
        agg[key] = agg.get(key, 0) + r["bytes"]
    return agg


def main():
    out_path = sys.argv[1]
    dtypes = {"bf16": torch.bfloat16, "fp32": torch.float32}
    chosen = ["bf16"]
    if len(sys.argv) > 3 and sys.argv[2] == "--dtypes":
        chosen = sys.argv[3].split(",")
        assert all(c in dtypes for c in chosen), chosen
    torch.manual_seed(0)
    results = []
    for mtype, kw in FAMILIES:
        for dname, attn, s in itertools.product(chosen, ("sdpa", "eager"), (64, 128)):
            r = {"model_type": mtype, "config": kw, "attn_implementation": attn, "b": 2, "s": s}
            if dname != "bf16":
                r["dtype"] = dname
            try:
                cfg = transformers.AutoConfig.for_model(mtype, vocab_size=V, max_position_embeddings=512, **kw)
                cfg._attn_implementation = attn
                model = transformers.AutoModelForCausalLM.from_config(cfg).to("cuda", dtypes[dname])
                model.train()
                r["resolved_attn"] = getattr(model.config, "_attn_implementation", None)
                r["parameters"] = sum(p.numel() for p in model.parameters())
                ids = torch.randint(0, V, (2, s), device="cuda")
                rows = measure(model, ids)
                r.update({"saved_bytes": sum(x["bytes"] for x in rows), "by_module": by_prefix(rows),
                          "tensors": rows})
                print("%-12s %-4s %-5s s=%-4d params=%-9d saved=%d" % (
                    mtype, dname, attn, s, r["parameters"], r["saved_bytes"]), flush=True)
                del model
            except Exception as e:
                r["error"] = "%s: %s" % (type(e).__name__, str(e)[:400])
                r["trace"] = traceback.format_exc()[-1500:]
                print("%-12s %-4s %-5s s=%-4d error %s" % (mtype, dname, attn, s, r["error"][:200]), flush=True)
            results.append(r)
            torch.cuda.empty_cache()
    json.dump({"generator": "tests/reference/measure_hf_layers.py", "torch": torch.__version__,
               "transformers": transformers.__version__, "device": torch.cuda.get_device_name(0),
               "results": results}, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()

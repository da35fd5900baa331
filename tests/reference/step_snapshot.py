#!/usr/bin/env python3
# Purpose: measure one real training step on a CUDA GPU as PyTorch's caching allocator and the driver
# see it, the ground truth for the allocator simulation and fixed costs (issue 14): a transformers
# LlamaForCausalLM (4 layers, GQA, SDPA) in bf16 with AdamW, with the CUDA context's own bytes, the
# allocated/reserved/active peaks of the second (steady-state) step, the phase-by-phase allocated
# bytes, and a torch.cuda.memory._snapshot() pickle of that step.
#
# Usage (GPU machine): python3 tests/reference/step_snapshot.py OUT_DIR
# Writes OUT_DIR/step.json (every variant) and OUT_DIR/snapshot-default.pickle.gz. Variants run in
# their own process because PYTORCH_CUDA_ALLOC_CONF is read once: default, expandable_segments,
# and activation checkpointing (transformers' gradient_checkpointing_enable, non-reentrant).
import gzip
import json
import os
import pickle
import subprocess
import sys
import time

MODEL = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=4,
             num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=4096,
             rms_norm_eps=1e-5, tie_word_embeddings=False, attention_dropout=0.0)
BATCH, SEQ = 2, 2048
VARIANTS = {
    "default": {"env": {}, "checkpointing": False, "snapshot": True},
    "expandable_segments": {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                            "checkpointing": False, "snapshot": False},
    "checkpointing": {"env": {}, "checkpointing": True, "snapshot": False},
}
STATS = ["allocated_bytes.all.peak", "reserved_bytes.all.peak", "active_bytes.all.peak",
         "inactive_split_bytes.all.peak", "requested_bytes.all.peak", "segment.all.peak",
         "segment.large_pool.peak", "segment.small_pool.peak", "reserved_bytes.large_pool.peak",
         "reserved_bytes.small_pool.peak", "num_alloc_retries", "num_ooms", "num_device_alloc"]


def run_variant(name, out_dir):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    v = VARIANTS[name]
    r = {"variant": name, "alloc_conf": v["env"].get("PYTORCH_CUDA_ALLOC_CONF", ""),
         "torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    try:
        import transformers
        r["transformers"] = transformers.__version__
    except Exception:
        pass
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the context and the first segment exist from here
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    r.update({"gpu_total_bytes": total, "used_after_init_bytes": total - free,
              "reserved_after_init_bytes": torch.cuda.memory_reserved(),
              "context_bytes": total - free - torch.cuda.memory_reserved()})
    cfg = LlamaConfig(**MODEL)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16)
    model.train()
    if v["checkpointing"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    r["model"] = dict(MODEL, attn_implementation=model.config._attn_implementation, dtype="bf16")
    r["parameters"] = sum(p.numel() for p in model.parameters())
    r["params_allocated_bytes"] = torch.cuda.memory_allocated()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    r["optimizer"] = "torch.optim.AdamW(lr=1e-4), defaults (foreach on CUDA), states in bf16 like the params"
    r["batch"] = {"micro_batch": BATCH, "seq": SEQ, "labels": "input_ids (HF shifts inside the loss)"}
    ids = torch.randint(0, MODEL["vocab_size"], (BATCH, SEQ), device="cuda")

    def step(phases):
        torch.cuda.synchronize()
        phases["before_forward"] = torch.cuda.memory_allocated()
        loss = model(input_ids=ids, labels=ids).loss
        torch.cuda.synchronize()
        phases["after_forward"] = torch.cuda.memory_allocated()
        loss.backward()
        torch.cuda.synchronize()
        phases["after_backward"] = torch.cuda.memory_allocated()
        opt.step()
        torch.cuda.synchronize()
        phases["after_optimizer_step"] = torch.cuda.memory_allocated()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        phases["after_zero_grad"] = torch.cuda.memory_allocated()

    first = {}
    t0 = time.time()
    step(first)
    r["step1_seconds"] = round(time.time() - t0, 3)
    r["step1_phases_allocated"] = first
    r["step1_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    r["step1_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    if v["snapshot"]:
        torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
    second = {}
    step(second)
    if v["snapshot"]:
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        path = os.path.join(out_dir, "snapshot-%s.pickle.gz" % name)
        with gzip.open(path, "wb") as f:
            pickle.dump(snap, f)
        r["snapshot"] = os.path.basename(path)
        r["snapshot_segments"] = len(snap.get("segments", []))
    r["step2_phases_allocated"] = second
    st = torch.cuda.memory_stats()
    r["step2_stats"] = {k: st.get(k) for k in STATS}
    r["step2_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    r["step2_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    free, total = torch.cuda.mem_get_info()
    r["used_after_step2_bytes"] = total - free
    r["reserved_after_step2_bytes"] = torch.cuda.memory_reserved()
    try:
        r["nvml_used_after_step2_bytes"] = torch.cuda.device_memory_used()
    except Exception as e:
        r["nvml_used_after_step2_bytes"] = "unavailable: %s" % e
    return r


def main():
    out_dir = sys.argv[1]
    if len(sys.argv) > 2:  # child: one variant, JSON on stdout
        print(json.dumps(run_variant(sys.argv[2], out_dir)))
        return
    os.makedirs(out_dir, exist_ok=True)
    results = []
    for name, v in VARIANTS.items():
        env = dict(os.environ, **v["env"])
        p = subprocess.run([sys.executable, __file__, out_dir, name], env=env, capture_output=True,
                           text=True, timeout=240)
        try:
            results.append(json.loads(p.stdout.strip().splitlines()[-1]))
        except Exception:
            results.append({"variant": name, "error": (p.stderr or p.stdout)[-2000:]})
        print(json.dumps(results[-1])[:600], flush=True)
    with open(os.path.join(out_dir, "step.json"), "w") as f:
        json.dump({"generator": "tests/reference/step_snapshot.py", "variants": results}, f, indent=1)


if __name__ == "__main__":
    main()

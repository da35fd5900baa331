#!/usr/bin/env python3
# Purpose: measure one rank of torchtitan's 8-GPU Llama 3.1 8B runs (its December 2024 H100 table,
# rows "FSDP", "FSDP + torch.compile" and "FSDP 8, CP 1, seq 32768") on one GPU, phase by phase:
# the ground truth issue 36 asks for (a compiled torchtitan-style step, its reserved peak, which
# phase peaks, and whether FSDP's sharded gradients exist during forward).
#
# Usage (GPU machine): python3 tests/reference/gpu_torchtitan_step.py OUT_DIR [VARIANT ...]
# Writes OUT_DIR/torchtitan_step.json (one entry per variant, each run in its own process so the
# caching allocator starts empty) and OUT_DIR/snapshot-<variant>.pickle.gz for the variants marked
# `snapshot` (torch.cuda.memory._snapshot() of the measured step, frames stripped).
# A CPU smoke run (no figures worth keeping): --smoke (tiny model, gloo-free fake group, aot_eager).
#
# Method: the model computes as torchtitan 9dec370's Llama (torchtitan/models/llama/model.py: the
# blocks of measure_compile.py's TitanBlock, an embedding, a final RMSNorm and an untied output
# linear; freqs_cis a complex64 buffer of max_seq_len = seq rows), wrapped as 9dec370's
# parallelize_llama.py wraps it: apply_ac (op-level SAC with its _save_list and every second mm
# recomputed, or full AC: ptd_checkpoint_wrapper, preserve_rng_state False), then apply_compile
# (torch.compile of each block, fullgraph=True), then apply_fsdp (fully_shard of each block with
# reshard_after_forward = layer_id < n_layers - 1, then of the root; MixedPrecisionPolicy(bf16,
# fp32) over fp32 parameters). The process group is PyTorch's fake one with world size 8 (rank 0):
# no data moves, but FSDP2 allocates its all-gather outputs and reduce-scatter inputs/outputs
# itself with the shapes of a real 8-rank run, so this rank's caching allocator sees what one rank
# of the 8-GPU run sees (NCCL's own buffers, outside the allocator, are absent). The train step is
# 9dec370's train.py l.266-323: optimizers.zero_grad(); pred = model(ids); loss = cross_entropy(
# pred.flatten(0, 1).float(), labels.flatten(0, 1)); del pred; loss.backward(); clip_grad_norm_
# (utils.py l.348-405: get_total_norm then clip_grads_with_norm_, foreach); AdamW(lr 8e-4,
# betas (0.9, 0.95), weight_decay 0.1, foreach) step (optimizer.py l.125-145). torchtitan's table
# reports reserved_bytes.all.peak (metrics.py), the figure compared here.
import gzip
import json
import os
import pickle
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))

# torchtitan 9dec370 models/llama/__init__.py "8B": dim 4096, 32 layers, 32 heads, 8 kv heads,
# ffn_dim_multiplier 1.3 and multiple_of 1024 (FFN 14,336), rope_theta 500000; vocabulary 128,256
# (its tiktoken tokenizer).
LLAMA_8B = dict(h=4096, layers=32, a=32, kv=8, f=14336, vocab=128256, theta=500000.0)
TINY = dict(h=64, layers=3, a=4, kv=2, f=128, vocab=256, theta=10000.0)
VARIANTS = {
    # name: (ac, compile, micro_batch, seq, snapshot, root_reshard); torchtitan's table 1 and 2
    # settings. root_reshard True is what 9dec370 asks (fully_shard(model, reshard_after_forward=
    # not pp_enabled)) and what torch >= 2.8 does with it (pytorch PR #154704: an explicit True
    # reshards the root after forward); False is what the torch of torchtitan's table did with
    # any setting (torch 2.6 _fsdp_state.py _lazy_init: the root's post_forward_mesh_info = None).
    "fsdp8-sac-compile": ("op", True, 2, 8192, True, True),
    "fsdp8-sac": ("op", False, 2, 8192, False, True),
    "fsdp8-full-compile-32k": ("full", True, 1, 32768, False, True),
    "fsdp8-sac-compile-rootheld": ("op", True, 2, 8192, True, False),
    "fsdp8-sac-rootheld": ("op", False, 2, 8192, True, False),
    "fsdp8-full-compile-32k-rootheld": ("full", True, 1, 32768, False, False),
    # snapshot "all": the allocator's history from before the model is built to the end of the
    # last step (every segment the run makes, the first step's lazily created AdamW states).
    "fsdp8-sac-compile-rootheld-all": ("op", True, 2, 8192, "all", False),
}
STEPS = 3  # the first creates AdamW's states; the third is the steady one reported
STATS = ["allocated_bytes.all.peak", "reserved_bytes.all.peak", "active_bytes.all.peak",
         "inactive_split_bytes.all.peak", "requested_bytes.all.peak", "segment.all.peak",
         "num_alloc_retries", "num_ooms", "num_device_alloc"]


def load_blocks():
    import importlib.util
    spec = importlib.util.spec_from_file_location("measure_compile",
                                                  os.path.join(HERE, "measure_compile.py"))
    mc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mc)
    return mc


def op_sac_context():
    # torchtitan 9dec370 parallelize_llama.py _save_list and _get_custom_policy, as written there.
    import torch
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    aten = torch.ops.aten
    save = {aten.mm.default, aten._scaled_dot_product_efficient_attention.default,
            aten._scaled_dot_product_flash_attention.default,
            torch.ops._c10d_functional.reduce_scatter_tensor.default, aten.abs.default,
            aten.max.default}

    def context():
        meta = defaultdict(int)

        def policy(ctx, func, *args, **kwargs):
            key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
            if func == aten.mm.default:
                meta[key] += 1
            keep = func in save and not (func == aten.mm.default and meta[key] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(policy)

    return context


def freqs_cis(dims, seq):
    # torchtitan 9dec370 model.py precompute_freqs_cis over max_seq_len = seq positions.
    import torch
    d = dims["h"] // dims["a"]
    freqs = 1.0 / (dims["theta"] ** (torch.arange(0, d, 2)[: d // 2].float() / d))
    ang = torch.outer(torch.arange(seq), freqs).float()
    return torch.polar(torch.ones_like(ang), ang)


def build(mc, dims, seq, ac, compiled, backend, device, root_reshard):
    import torch
    import torch.nn as nn
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import \
        checkpoint_wrapper
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(dims["vocab"], dims["h"])
            self.register_buffer("freqs_cis", freqs_cis(dims, seq), persistent=True)
            self.layers = nn.ModuleDict({str(i): mc.TitanBlock(dims["h"], dims["a"], dims["kv"],
                                                               dims["f"])
                                         for i in range(dims["layers"])})
            self.norm = mc.RMSNorm(dims["h"], eps=1e-5)
            self.output = nn.Linear(dims["h"], dims["vocab"], bias=False)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for layer in self.layers.values():
                h = layer(h, self.freqs_cis)
            return self.output(self.norm(h))

    with torch.device("meta"):
        model = Transformer()
    for lid, blk in list(model.layers.named_children()):  # apply_ac
        if ac == "full":
            blk = checkpoint_wrapper(blk, preserve_rng_state=False)
        elif ac == "op":
            blk = checkpoint_wrapper(blk, context_fn=op_sac_context(), preserve_rng_state=False)
        model.layers.register_module(lid, blk)
    if compiled:  # apply_compile
        for lid, blk in list(model.layers.named_children()):
            model.layers.register_module(lid, torch.compile(blk, fullgraph=True, backend=backend))
    if device != "cpu":  # torch 2.6's FSDP2 needs a device with streams: the smoke run skips it
        mesh = init_device_mesh(device, (8,))
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        n = len(model.layers)
        for lid, blk in model.layers.items():  # apply_fsdp
            fully_shard(blk, mesh=mesh, mp_policy=mp, reshard_after_forward=int(lid) < n - 1)
        fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=root_reshard)
    model.to_empty(device=device)
    with torch.no_grad():  # values do not matter (the group moves no data); finite ones do
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
        model.freqs_cis.copy_(freqs_cis(dims, seq))
    return model


def run_variant(name, out_dir, smoke):
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    ac, compiled, b, s, snapshot, root_reshard = VARIANTS[name]
    dims = TINY if smoke else LLAMA_8B
    if smoke:
        b, s = 2, 32
    device = "cpu" if smoke else "cuda"
    # Inductor needs Triton on the GPU; without it the same partitioner runs with eager kernels.
    import importlib.util
    backend = ("aot_eager" if smoke else "inductor" if importlib.util.find_spec("triton")
               else "aot_eager_decomp_partition")
    r = {"variant": name, "ac": ac, "compile": compiled, "micro_batch": b, "seq": s,
         "model": dims, "world_size": 8, "root_reshard_after_forward": root_reshard,
         "torch": torch.__version__,
         "backend": backend if compiled else None}
    if not smoke:
        r["device"] = torch.cuda.get_device_name(0)
        # torchtitan's runs took SDPA's flash kernel (torch 1963fc8 on H100); keep cuDNN's out.
        torch.backends.cuda.enable_cudnn_sdp(False)
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        free, total = torch.cuda.mem_get_info()
        r.update({"gpu_total_bytes": total, "used_after_init_bytes": total - free})
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    if snapshot == "all" and not smoke:
        torch.cuda.memory._record_memory_history(max_entries=2000000, stacks="python")
    mc = load_blocks()
    torch.manual_seed(0)
    model = build(mc, dims, s, ac, compiled, backend, device, root_reshard)
    r["parameters"] = sum(p.numel() for p in model.parameters())  # DTensor: the global count
    opt = torch.optim.AdamW(model.parameters(), lr=8e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=False, foreach=True)
    ids = torch.randint(0, dims["vocab"], (b, s), device=device)
    labels = torch.randint(0, dims["vocab"], (b, s), device=device)
    cuda = device == "cuda"

    def mark(phases, key, t0):
        if cuda:
            torch.cuda.synchronize()
            st = torch.cuda.memory_stats()
            phases[key] = {"allocated_after": st["allocated_bytes.all.current"],
                           "reserved_after": st["reserved_bytes.all.current"],
                           "allocated_peak": st["allocated_bytes.all.peak"],
                           "reserved_peak": st["reserved_bytes.all.peak"],
                           "seconds": round(time.time() - t0, 3)}
            torch.cuda.reset_peak_memory_stats()
        else:
            phases[key] = {"seconds": round(time.time() - t0, 3)}
        return time.time()

    def step():
        ph = {}
        t = time.time()
        if cuda:
            torch.cuda.synchronize()
            ph["start"] = {"allocated": torch.cuda.memory_allocated(),
                           "reserved": torch.cuda.memory_reserved()}
            torch.cuda.reset_peak_memory_stats()
        opt.zero_grad()
        t = mark(ph, "zero_grad", t)
        pred = model(ids)
        t = mark(ph, "forward", t)
        loss = torch.nn.functional.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
        del pred
        t = mark(ph, "loss", t)
        loss.backward()
        t = mark(ph, "backward", t)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads, 2.0, False, True)
        torch.nn.utils.clip_grads_with_norm_(model.parameters(), 1.0, norm, True)
        del grads, norm
        t = mark(ph, "clip_grad_norm", t)
        opt.step()
        mark(ph, "optimizer_step", t)
        return ph

    steps = []
    for i in range(STEPS):
        if snapshot is True and cuda and i == STEPS - 1:
            torch.cuda.memory._record_memory_history(max_entries=400000, stacks="python")
        steps.append(step())
        if snapshot and cuda and i == STEPS - 1:
            snap = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)
            keep = 1 if snapshot == "all" else 0  # the innermost Python frame, to name a block
            for dev in snap.get("device_traces", []):
                for e in dev:
                    e["frames"] = e.get("frames", [])[:keep]
            for seg in snap.get("segments", []):
                for blk in seg.get("blocks", []):
                    blk["frames"] = blk.get("frames", [])[:keep]
            path = os.path.join(out_dir, "snapshot-%s.pickle.gz" % name)
            with gzip.open(path, "wb") as f:
                pickle.dump(snap, f)
            r["snapshot"] = os.path.basename(path)
    r["steps"] = steps
    if cuda:
        last = steps[-1]
        keys = [k for k in last if k != "start"]
        r["step_reserved_peak"] = max(last[k]["reserved_peak"] for k in keys)
        r["step_allocated_peak"] = max(last[k]["allocated_peak"] for k in keys)
        r["peak_phase"] = max(keys, key=lambda k: last[k]["allocated_peak"])
        r["stats"] = {k: torch.cuda.memory_stats().get(k) for k in STATS}
        free, total = torch.cuda.mem_get_info()
        r["used_after_bytes"] = total - free
    dist.destroy_process_group()
    return r


def main():
    args = [a for a in sys.argv[1:] if a != "--smoke"]
    smoke = "--smoke" in sys.argv
    out_dir = args[0]
    if len(args) > 1 and args[1] == "--child":
        print(json.dumps(run_variant(args[2], out_dir, smoke)))
        return
    os.makedirs(out_dir, exist_ok=True)
    names = args[1:] or list(VARIANTS)
    deadline = time.time() + float(os.environ.get("DEADLINE", "3600"))
    results = []
    for name in names:
        left = deadline - time.time()
        if left < 30:
            results.append({"variant": name, "error": "not run: the deadline was reached"})
            continue
        cmd = [sys.executable, __file__, out_dir, "--child", name] + (["--smoke"] if smoke else [])
        t0 = time.time()
        p = None
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
            out = p.stdout.strip().splitlines()
            res = json.loads(out[-1]) if out else {"variant": name, "error": p.stderr[-3000:]}
        except subprocess.TimeoutExpired as e:
            res = {"variant": name, "error": "timed out", "stderr": str(e.stderr)[-2000:]}
        except Exception as e:  # a child that printed no JSON: keep its stderr
            res = {"variant": name, "error": "%s: %s" % (type(e).__name__, e),
                   "stderr": p.stderr[-3000:] if p else ""}
        res["wall_seconds"] = round(time.time() - t0, 1)
        results.append(res)
        print(json.dumps(res)[:1500], flush=True)
        with open(os.path.join(out_dir, "torchtitan_step.json"), "w") as f:
            json.dump({"generator": "tests/reference/gpu_torchtitan_step.py", "variants": results},
                      f, indent=1)


if __name__ == "__main__":
    main()

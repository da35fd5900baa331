#!/usr/bin/env python3
"""Byte-for-byte identity of two actmem builds (issue 34: a restructuring changes no answer).

Usage: tests/identity/identity.py OLD_ACTMEM NEW_ACTMEM [--keep DIR]

OLD_ACTMEM may also be the page's engine, dist/actmem.js (its actmem.wasm beside it, run by Node):
native against WebAssembly, the same C++ through two standard libraries (libstdc++ and libc++,
whose std::sort orders ties differently: 2026-12-05). Its compare runs are skipped (the page's
compare takes a snapshot's bytes, not a path).

Builds a fixed corpus (seeded, so every run asks the same questions) of `actmem requests` lines
over every command the JSON entry point answers (estimate, explain, timeline, fit, plan, sweep,
view, advise, presets) and every model, GPU and worked-example preset the NEW build lists, plus
generated variants (config keys one by one with valid and invalid values, model configs with keys
removed, changed or their model_type swapped, conflicting request keys); and `actmem compare`
command lines over every snapshot in tests/data/snapshots and fuzz/corpus-snapshot. Runs both
binaries on all of it and compares the answers byte for byte. Exit 0 when every answer is
identical; otherwise prints the first differences and exits 1. Not part of CI (it needs a build
of the old tree); its result is recorded in the closing note of the change it checks.
"""
import copy
import glob
import json
import os
import random
import subprocess
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def presets(binary):
    out = subprocess.run([binary, "presets", "--json"], capture_output=True, check=True).stdout
    j = json.loads(out)
    return ([m["id"] for m in j["models"]], [g["id"] for g in j["gpus"]],
            [e["id"] for e in j["examples"]])


def per_preset(models, gpus, examples):
    """Every command over every model preset, at two layouts and two GPUs."""
    out = []
    for i, p in enumerate(models):
        gpu = gpus[i % len(gpus)]
        for cfg in ({"seq": 2048, "gpu": "h100-80gb"},
                    {"seq": 4096, "tp": 2, "pp": 2, "micro_batches": 4, "gpu": gpu,
                     "recompute": "selective"}):
            out.append({"preset": p, "config": cfg})
            out.append({"command": "estimate", "preset": p, "config": cfg, "summary": True})
            out.append({"command": "explain", "preset": p, "config": cfg})
            out.append({"command": "timeline", "preset": p, "config": cfg, "events": "worst"})
            out.append({"command": "timeline", "preset": p, "config": cfg, "events": "none",
                        "compact_events": True})
            out.append({"command": "fit", "preset": p, "config": cfg})
            out.append({"command": "plan", "preset": p, "config": cfg})
            out.append({"command": "plan", "preset": p, "config": cfg, "emit": "megatron"})
            out.append({"command": "view", "preset": p, "config": cfg})
            sw = {k: v for k, v in cfg.items() if k != "seq"}
            out.append({"command": "sweep", "preset": p, "config": sw,
                        "sweep": {"micro_batches": [1, 2], "seqs": [512, 2048]}})
        out.append({"command": "advise", "preset": p, "config": {"seq": 2048, "gpu": "h100-80gb"},
                    "advise": {"num_gpus": "8:16", "global_batch": 64, "limit": 3}})
        out.append({"command": "estimate", "preset": p, "emit": "torchtitan",
                    "config": {"seq": 2048, "framework": "torchtitan", "dp": 8, "zero": 3}})
        for fw in ("megatron-lm", "torchtitan", "deepspeed", "hf-trainer"):
            out.append({"command": "estimate", "preset": p, "summary": True,
                        "config": {"seq": 1024, "framework": fw, "dp": 4, "gpu": "h100-80gb"}})
    for g in gpus:
        out.append({"command": "view", "preset": models[0], "gpu": g, "config": {"seq": 1024}})
        out.append({"command": "fit", "preset": models[0], "gpu": g, "config": {"seq": 1024}})
    for e in examples:
        for cmd in ("estimate", "explain", "timeline", "view"):
            out.append({"command": cmd, "example": e})
    out.append({"command": "presets"})
    out.append({"command": "presets", "preset": models[0]})
    return out


CONFIG_VALUES = [None, 0, 1, 2, 3, 8, -1, 0.5, 1.5, True, False, "x", "", "bf16", "fp32", "adamw",
                 "full", "selective", "every:2", "layers:KSC", "op:attn.qkv_in", "1f1b", "zb-h1",
                 "zb-v", "dualpipev", "megatron", "pytorch", "hf", "flash", "torchtitan",
                 "tensorwise", "delayed", "80GiB", "h100-80gb", [1, 2], ["q_proj", "v_proj"],
                 ["zz"], [], "all", "expandable_segments:True", "chunked:4", 2 ** 60]


def config_variants(binary, rng):
    """Each config key alone with every value, on two presets."""
    keys = json.loads(subprocess.run([binary, "requests", "-"], input=b'{"preset":"gpt2","config":{"bogus":1}}',
                                     capture_output=True).stdout)["error"]["message"]
    keys = keys.split("allowed: ", 1)[1].split(", ")
    out = []
    for k in keys:
        for v in CONFIG_VALUES:
            out.append({"command": "estimate", "summary": True,
                        "preset": rng.choice(["gpt2", "llama-3.1-8b"]),
                        "config": {"seq": 256, k: v}})
    return out


def model_variants(rng):
    """Model configs from presets/ and tests/data with keys removed, changed or swapped."""
    models = []
    for f in sorted(glob.glob(os.path.join(ROOT, "presets/models/*.json")) +
                    glob.glob(os.path.join(ROOT, "tests/data/hf/**/*.json"), recursive=True)):
        try:
            j = json.load(open(f))
        except ValueError:
            continue  # Python's Infinity and friends: read by the presets themselves
        if isinstance(j, dict):
            models.append(j)
    weird = [None, 0, -1, 1, 2, 3.5, "x", "", True, [], {}, 10 ** 12, "silu", "gelu",
             {"quant_method": "fp8"}, {"quant_method": "mxfp4"}, 64, 4096, 0.1]
    types = ["llama", "gpt2", "phi3", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma2",
             "gemma3_text", "gpt_oss", "phimoe", "llama4_text", "mixtral", "mistral", "deepseek_v2",
             "deepseek_v3", "falcon", "mamba2", "nemotron_h", "llama4", "gemma3", "qwen3_next", ""]
    extra = ["num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
             "decoder_sparse_step", "layer_stack", "head_dim", "num_key_value_heads",
             "attention_bias", "hidden_act", "embd_pdrop", "quantization_config",
             "attn_implementation", "sliding_window", "layer_types", "text_config",
             "first_k_dense_replace", "tie_word_embeddings"]
    out = [{"command": "estimate", "summary": True, "model": m, "config": {"seq": 128}}
           for m in models]
    for _ in range(3000):
        m = copy.deepcopy(rng.choice(models))
        r = rng.random()
        if r < 0.3 and m:
            del m[rng.choice(sorted(m))]
        elif r < 0.6 and m:
            m[rng.choice(sorted(m))] = rng.choice(weird)
        elif r < 0.8:
            m["model_type"] = rng.choice(types)
        else:
            m[rng.choice(extra)] = rng.choice(weird)
        out.append({"command": "estimate", "summary": True, "model": m, "config": {"seq": 128}})
    return out


def request_variants(rng):
    """Requests mixing keys across commands: the request reader's order of checks."""
    cmds = ["estimate", "explain", "timeline", "fit", "plan", "sweep", "view", "compare", "advise",
            "presets", "bogus", "", None, 5]
    opts = {
        "preset": ["gpt2", "nope", 3], "gpu": ["h100-80gb", "", "zzz", 7],
        "config": [{"seq": 512}, "str", {"tp": 2, "seq": 256, "gpu": "h100-80gb"},
                   {"grad_accum": 4, "seq": 128}, {"micro_batch": 2, "dp": 2, "seq": 128}],
        "sweep": [{"micro_batches": [1, 2], "seqs": [128]}, {"seqs": [0]}, "x"],
        "events": ["all", "worst", "bad"], "summary": [True, "yes"], "example": ["nope", 3],
        "compact_events": [True, "x"], "stages": ["worst", "all", "some"],
        "stats": [{"allocated_bytes.all.peak": 5}, "x"],
        "advise": [{"num_gpus": 2, "global_batch": 8}, {"num_gpus": "4:2", "global_batch": 8}],
        "emit": ["megatron", "torchtitan", "sac", "bad"],
        "megatron_args": ["--tensor-model-parallel-size 2 --seq-length 256 --micro-batch-size 1 "
                          "--global-batch-size 8", "--bogus-flag 3"],
        "torchtitan_toml": ["[training]\nseq_len = 256\nlocal_batch_size = 1\n", "[bad"],
        "weird": [1]}
    out = []
    for _ in range(2000):
        req = {}
        c = rng.choice(cmds)
        if c is not None:
            req["command"] = c
        for k in rng.sample(sorted(opts), rng.choice([1, 2, 3])):
            req[k] = rng.choice(opts[k])
        if "preset" not in req and rng.random() < 0.7:
            req["preset"] = "gpt2"
        out.append(req)
    return out


# The page's engine (dist/actmem.js and its wasm) answering request lines from stdin, in Node.
WASM_RUNNER = """
const fs = require('fs'), path = require('path');
const js = path.resolve(process.argv[1]);
const lines = fs.readFileSync(0, 'utf8').split('\\n').filter((l) => l.length);
require(js)({ wasmBinary: fs.readFileSync(js.replace(/[.]js$/, '.wasm')) }).then((M) => {
  process.stdout.write(lines.map((l) => M.evaluate(l)).join('\\n') + '\\n');
});
"""


def run_requests(binary, lines):
    text = "".join(json.dumps(r) + "\n" for r in lines).encode()
    if binary.endswith(".js"):
        cmd = ["node", "--no-experimental-fetch", "-e", WASM_RUNNER, binary]
    else:
        cmd = [binary, "requests", "-"]
    out = subprocess.run(cmd, input=text, capture_output=True).stdout
    return out.decode(errors="replace").split("\n")[:len(lines)]


def run_compares(binary):
    if binary.endswith(".js"):
        return []
    snaps = sorted(glob.glob(os.path.join(ROOT, "tests/data/snapshots/*.pickle")) +
                   glob.glob(os.path.join(ROOT, "fuzz/corpus-snapshot/*")))
    stats = os.path.join(ROOT, "tests/data/snapshots/h200-llama-step2.stats.json")
    answers = []
    for s in snaps:
        for extra in ([], ["--stats", stats]):
            for p in ("gpt2", "llama-3.1-8b"):
                r = subprocess.run([binary, "compare", s, "--preset", p, "--seq", "512", "--gpu",
                                    "h100-80gb", "--json"] + extra, capture_output=True)
                answers.append("%d %s %s" % (r.returncode, r.stdout.decode(errors="replace"),
                                             r.stderr.decode(errors="replace")))
    return answers


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    old, new = sys.argv[1], sys.argv[2]
    rng = random.Random(20261203)
    models, gpus, examples = presets(new)
    corpus = (per_preset(models, gpus, examples) + config_variants(new, rng) +
              model_variants(rng) + request_variants(rng))
    a, b = run_requests(old, corpus), run_requests(new, corpus)
    kinds = Counter(json.dumps(r.get("command", "estimate")) for r in corpus)
    same = sum(1 for x, y in zip(a, b) if x == y)
    diffs = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    ca, cb = run_compares(old), run_compares(new)
    if not ca:
        cb = []  # the page's engine: no compare runs to set beside the native ones
    csame = sum(1 for x, y in zip(ca, cb) if x == y)
    ok = sum(1 for x in b if x.startswith('{"') and '"ok":false' not in x[:400])
    print("requests: %d (%s); %d answered, %d refused" %
          (len(corpus), ", ".join("%s %d" % kv for kv in sorted(kinds.items())), ok,
           len(corpus) - ok))
    print("identical: %d of %d request answers, %d of %d compare runs" %
          (same, len(corpus), csame, len(ca)))
    if len(sys.argv) > 4 and sys.argv[3] == "--keep":
        os.makedirs(sys.argv[4], exist_ok=True)
        open(os.path.join(sys.argv[4], "corpus.jsonl"), "w").write(
            "".join(json.dumps(r) + "\n" for r in corpus))
    for i in diffs[:5]:
        print("DIFFERS: %s\n  old: %s\n  new: %s" % (json.dumps(corpus[i])[:300], a[i][:300],
                                                     b[i][:300]))
    return 0 if not diffs and len(a) == len(b) and csame == len(ca) else 1


if __name__ == "__main__":
    sys.exit(main())

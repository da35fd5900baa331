#!/usr/bin/env python3
# Purpose: fp32 (and bf16) ground truth for issue 13's model families on the CPU. Each family is
# re-implemented op for op from its transformers 5.17 modeling file (tests/reference/families_cpu/),
# measured in bf16 and fp32 at b = 2, s = 64 and 128, under eager attention and SDPA's math kernel.
# The bf16 eager rows are compared, record for record, with what the real transformers model saved
# on the H200 (tests/reference/gpu/hf_layers.json), which is what makes the fp32 rows trustworthy.
#
# Usage (PyTorch 2.6, Debian 13's python3-torch; ../shared/toolchain.md):
#   python3 tests/reference/measure_families_cpu.py OUT.json [family ...]
# Method: families_cpu/harness.py (saved_tensors_hooks, innermost module, a storage counted once,
# parameters left out, then backward).
import json
import os
import sys
from collections import Counter

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "families_cpu"))
import harness  # noqa: E402
import registry  # noqa: E402

V = 1024


def gpu_rows():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu", "hf_layers.json")
    return json.load(open(path))["results"]


def main():
    out_path, wanted = sys.argv[1], set(sys.argv[2:])
    gpu = gpu_rows()
    results, failed = [], 0
    for mtype, kw, build in registry.FAMILIES:
        if wanted and mtype not in wanted:
            continue
        for attn in ("eager", "sdpa_math"):
            for dtype in (torch.bfloat16, torch.float32):
                for s in (64, 128):
                    torch.manual_seed(0)
                    cfg = dict(kw, vocab_size=V, max_position_embeddings=512, attn=attn)
                    try:
                        model = build(cfg).to(dtype)
                    except NotImplementedError as e:  # e.g. gpt-oss: transformers refuses SDPA
                        print("%-12s %-9s skipped: %s" % (mtype, attn, e), flush=True)
                        continue
                    model.train()
                    ids = torch.randint(0, V, (2, s))
                    rows = harness.measure(model, ids)
                    r = {"model_type": mtype, "config": kw, "attn_implementation": attn,
                         "dtype": str(dtype).replace("torch.", ""), "b": 2, "s": s,
                         "parameters": sum(p.numel() for p in model.parameters()),
                         "saved_bytes": sum(x["bytes"] for x in rows), "by_module": harness.by_prefix(rows),
                         "tensors": rows}
                    note = ""
                    # What CUDA would keep: the same records but for the family's known CPU-vs-CUDA
                    # differences (bf16 only: LayerNorm statistics, Mamba-2's dt), each in its file.
                    known = registry.expected_differences(mtype, kw, s) if dtype == torch.bfloat16 else []
                    have = Counter(map(harness.key, rows))
                    cpu_side = Counter(k for side, k in known if side == "cpu")
                    assert not (cpu_side - have), ("an expected CPU record is missing", mtype, attn, s)
                    r["cuda_bytes"] = r["saved_bytes"] + sum(k[3] for side, k in known if side == "gpu") - \
                        sum(k[3] for side, k in known if side == "cpu")
                    if dtype == torch.bfloat16 and attn == "eager":
                        ref = [g for g in gpu if g["model_type"] == mtype and g["config"] == kw and
                               g["attn_implementation"] == "eager" and g["s"] == s]
                        assert len(ref) == 1, (mtype, kw)
                        d = harness.diff(rows, ref[0]["tensors"])
                        explained = [x for x in d if x in known]
                        d = [x for x in d if x not in known]
                        assert len(explained) == len(known), ("an expected difference is gone", mtype, s)
                        assert r["cuda_bytes"] == ref[0]["saved_bytes"] or d, (mtype, s)
                        r["vs_h200"] = {"parameters_equal": r["parameters"] == ref[0]["parameters"],
                                        "h200_saved_bytes": ref[0]["saved_bytes"],
                                        "explained": [{"only_on": side, "record": list(k)} for side, k in explained],
                                        "differences": [{"only_on": side, "record": list(k)} for side, k in d]}
                        note = "  vs H200: params %s, %d differing records (%d explained)" % (
                            "equal" if r["parameters"] == ref[0]["parameters"] else "DIFFER", len(d), len(explained))
                        for side, k in d:
                            note += "\n      only on %s: %s" % (side, k)
                        failed += r["parameters"] != ref[0]["parameters"] or len(d) > 0
                    print("%-12s %-9s %-8s s=%-4d params=%-9d saved=%d%s" % (
                        mtype, attn, r["dtype"], s, r["parameters"], r["saved_bytes"], note), flush=True)
                    results.append(r)
    head = {"generator": "tests/reference/measure_families_cpu.py", "torch": torch.__version__, "device": "cpu"}
    with open(out_path, "w") as f:  # one row per line: diffs of a re-run stay readable
        f.write(json.dumps(head)[:-1] + ', "results": [\n')
        f.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in results) + "\n]}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

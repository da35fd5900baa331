#!/usr/bin/env python3
# Purpose: on a CUDA GPU with PyTorch 2, measure what the reference blocks of measure_saved.py really
# keep for backward, and compare each configuration with the `cuda_bytes` that pytorch_saved.json
# derived on the CPU by rule (LayerNorm statistics fp32, bool dropout masks, host-side scalars, the
# flash kernel's saves read from derivatives.yaml). Here nothing is mapped: every saved tensor's
# storage is on the device, counted once, and the flash configurations run the real kernel
# (scaled_dot_product_attention, FLASH_ATTENTION backend) instead of measure_saved.py's stand-in.
#
# Usage (GPU machine): python3 tests/reference/measure_cuda.py OUT.json [tests/reference/pytorch_saved.json]
# Prints one line per configuration whose bytes differ, then a summary; exits 0 (differences are data).
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_saved as ms  # noqa: E402


def real_flash(q, k, v, p):
    """The CUDA flash kernel as PyTorch runs it: q (b,a,s,d), k/v (b,kv,s,d)."""
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True,
                                             enable_gqa=k.shape[1] != q.shape[1])
    ms.TAG("attn.out", out)
    return out


def measure_device(block, inputs, shared):
    """Saved tensors of one forward: each storage once; parameters, buffers and model-shared
    tensors (HF cos/sin) left out. Returns (device bytes, host bytes, entries)."""
    ms.TAG.names.clear()
    ms.TAG.keep.clear()
    key = lambda t: (t.device.type, t.untyped_storage().data_ptr())  # noqa: E731
    params = {key(p) for p in block.parameters()} | {key(b) for b in block.buffers()}
    shared_keys = {key(t) for t in shared}
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: (packed.append(t), t)[1], lambda t: t):
        out = block(*inputs)
    ops = {}
    for op, attr, t in ms.walk_saved(out.grad_fn):
        ops.setdefault(key(t), set()).add("%s.%s" % (op, attr))
    seen, entries, dev, host = set(), [], 0, 0
    for t in packed:
        k = key(t)
        if k in seen or k in params or k in shared_keys:
            continue
        seen.add(k)
        nbytes = t.untyped_storage().nbytes()
        if t.is_cuda:
            dev += nbytes
        else:
            host += nbytes
        entries.append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                        "device": t.device.type, "bytes": nbytes, "saved_by": sorted(ops.get(k, []))})
    out.float().sum().backward()  # the graph is complete
    entries.sort(key=lambda e: -e["bytes"])
    return dev, host, entries


def main():
    out_path = sys.argv[1]
    ref_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "pytorch_saved.json")
    ref = json.load(open(ref_path))
    torch.set_default_device("cuda")
    ms.attn_flash = real_flash
    rows, differ = [], 0
    for c in ref["configs"]:
        row = {"id": c["id"], "predicted_cuda_bytes": c["cuda_bytes"]}
        try:
            blk, inputs, shared = ms.build(c["profile"], c["arch"], c["attention"], c["dtype"], c["b"], c["s"],
                                           c["h"], c["a"], c["kv"], c["f"], c["dropout"])
            dev, host, entries = measure_device(blk, inputs, shared)
            row.update({"measured_cuda_bytes": dev, "host_bytes": host,
                        "diff_bytes": dev - c["cuda_bytes"], "tensors": entries})
            if dev != c["cuda_bytes"]:
                differ += 1
                print("%-62s predicted %9d measured %9d (%+d)" % (c["id"], c["cuda_bytes"], dev,
                                                                 dev - c["cuda_bytes"]))
        except Exception as e:  # a configuration the device refuses is recorded, not fatal
            row["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
            differ += 1
            print("%-62s error %s" % (c["id"], row["error"]))
        rows.append(row)
    json.dump({"generator": "tests/reference/measure_cuda.py", "torch_version": torch.__version__,
               "device": torch.cuda.get_device_name(0), "configs": rows}, open(out_path, "w"), indent=1)
    print("%d configurations, %d equal to pytorch_saved.json's cuda_bytes, %d differ or failed"
          % (len(rows), len(rows) - differ, differ))


if __name__ == "__main__":
    main()

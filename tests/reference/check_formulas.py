#!/usr/bin/env python3
# Purpose: evaluate the closed-form per-layer saved-activation formulas of PROFILES.md against the
# cuda_bytes recorded in pytorch_saved.json; prints a markdown table and exits 1 on any mismatch.
#
# Usage: python3 tests/reference/check_formulas.py [tests/reference/pytorch_saved.json]
import json
import os
import sys

ESIZE = {"fp32": 4, "bf16": 2, "fp16": 2}


def formula(c):
    """Closed forms, PyTorch >= 2.5 on CUDA, one block, bytes.  See PROFILES.md for the terms."""
    b, s, h, a, kv, d, f = c["b"], c["s"], c["h"], c["a"], c["kv"], c["d"], c["f"]
    e = ESIZE[c["dtype"]]
    P = 1 if c["dropout"] > 0 else 0
    cu = 4 if e < 4 else e          # math-SDPA upcasts fp16/bf16 q, k, v to fp32
    bs, bsh, bsf, abss = b * s, b * s * h, b * s * f, a * b * s * s
    bskvd = b * s * kv * d
    prof, arch, att = c["profile"], c["arch"], c["attention"]
    if arch == "gpt2":
        ln = 16 * bs                                # two LayerNorms: mean + rstd, fp32
        gelu_extra = 3 * e * bsf if prof == "hf" else 0   # gelu_new keeps 3 more (b,s,f) tensors
        div_scalar = e if (prof == "hf" and att == "eager") else 0  # HF eager: 0-dim divisor tensor
        if att == "eager":
            core = e * (8 * bsh + 2 * bsf + abss) + P * ((e + 1) * abss + 2 * bsh)
        elif att == "sdpa_math":
            core = e * (5 * bsh + 2 * bsf) + cu * (3 * bsh + abss) + P * ((cu + 1) * abss + 2 * bsh)
            if b == 1 and cu == e:
                # no upcast and b == 1: matmul(probs, v) reshapes v (a strided view of the fused qkv
                # output) without a copy, so the whole (b, s, 3h) qkv storage is kept instead of a
                # (b, s, h) copy of v
                core += 2 * e * bsh
        elif att == "sdpa_flash":
            core = e * (8 * bsh + 2 * bsf) + 4 * a * bs + 24 + P * 2 * bsh
        return core + ln + gelu_extra + div_scalar
    # llama
    if prof == "pytorch":
        if att == "eager":
            return e * (10 * bsh + 4 * bsf + abss + 2 * bs) + P * (e + 1) * abss
        if att == "sdpa_math":
            return e * (7 * bsh + 4 * bsf + 2 * bs) + cu * (3 * bsh + abss) + P * (cu + 1) * abss
        if att == "sdpa_flash":
            return e * (10 * bsh + 4 * bsf + 2 * bs) + 4 * a * bs + 24
    # hf llama: LlamaRMSNorm keeps fp32 input copy + fp32 rstd + activation-dtype xhat, twice
    norms = 8 * bsh + 8 * bs
    if att == "eager":
        probs_copy = e * abss if (e < 4 or P) else 0
        return norms + e * (8 * bsh + 4 * bsf) + 4 * abss + probs_copy + P * abss
    if att == "sdpa_math":
        return norms + e * (5 * bsh + 4 * bsf) + cu * (3 * bsh + abss) + P * (cu + 1) * abss
    if att == "sdpa_flash":
        return norms + e * (6 * bsh + 2 * bskvd + 4 * bsf) + 4 * a * bs + 24
    raise ValueError(c["id"])


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "pytorch_saved.json")
    data = json.load(open(path))
    bad = 0
    print("| config id | formula | cuda_bytes | diff |")
    print("|---|---:|---:|---:|")
    for c in data["configs"]:
        fv = formula(c)
        diff = fv - c["cuda_bytes"]
        bad += diff != 0
        print("| %s | %d | %d | %d |" % (c["id"], fv, c["cuda_bytes"], diff))
    print("\n%d configs, %d mismatches" % (len(data["configs"]), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

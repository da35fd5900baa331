#!/usr/bin/env python3
# Purpose: measure with real PyTorch autograd and torchao's own Float8Linear (pytorch/ao eab345c2,
# 2024-12-20, the torchao of torchtitan's December 2024 tables) what one Llama block keeps for
# backward when its linears run in float8: tensorwise dynamic scaling (torchao's default recipe,
# the only one torchtitan 9dec370 offers) and the rowwise recipe (ALL_AXISWISE), with and without
# force_recompute_fp8_weight_in_bwd.
#
# Usage: PYTHONPATH=<torchao checkout at eab345c2> python3 tests/reference/measure_float8.py \
#          > tests/reference/float8_saved.json
#   (torch 2.6; Float8LinearConfig(emulate=True) runs the float8 matmuls as upcast matmuls on
#   the CPU, with the same autograd functions and the same saved tensors as on the GPU)
#
# What is measured: the block of measure_saved.py (PtLlamaBlock) with every linear swapped by
# Float8Linear.from_float, as torchtitan's float8.py does (its filter only skips the output head,
# which is not in a block). Each tensor autograd packs is unwrapped (a Float8Tensor is its fp8
# _data and its fp32 _scale) and counted once per storage, parameters and buffers excluded. The
# float8 answer on CUDA is measure_saved's CUDA figure for the same block in bf16 plus the packed
# bytes that the swap adds or removes: the swap touches only the linears, so the CUDA rules for
# attention and norms cancel.
import json
import sys

import torch

import measure_saved as ms
from torchao.float8.config import Float8LinearConfig, Float8LinearRecipeName, recipe_name_to_linear_config
from torchao.float8.float8_linear import Float8Linear
from torchao.prototype.mx_formats.mx_linear import MXLinear

LINEARS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate", "up", "down"]


def unwrap(t):
    inner = getattr(t, "_data", None)
    if inner is not None:
        # Float8Tensor: e4m3 _data and a 0-d fp32 _scale; MXTensor: e4m3 _data and one e8m0
        # (uint8) scale per block of 32 elements.
        scale = getattr(t, "_scale", None)
        return [inner, scale if scale is not None else t._scale_e8m0]
    return [t]


def packed_bytes(block, x):
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    params |= {b.untyped_storage().data_ptr() for b in block.buffers()}
    seen, total, items = set(), 0, []

    def pack(t):
        for u in unwrap(t):
            k = u.untyped_storage().data_ptr()
            if k in params or k in seen:
                continue
            seen.add(k)
            items.append((str(u.dtype).replace("torch.", ""), list(u.shape), u.untyped_storage().nbytes()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = block(x)
    out.float().sum().backward()  # the graph is complete
    for _, _, n in items:
        total += n
    return total, items


def build(attention, b=2, s=64, h=128, a=4, kv=2, f=512):
    torch.manual_seed(0)
    dt = torch.bfloat16
    blk = ms.PtLlamaBlock(h, a, kv, f, 0.0, attention, dt).to(dt)
    blk.train()
    x = torch.randn(b, s, h, dtype=dt).requires_grad_()
    return blk, x, dict(b=b, s=s, h=h, a=a, kv=kv, f=f)


def float8_config(recipe, recompute_weight):
    if recipe == "tensorwise":
        return Float8LinearConfig(emulate=True, force_recompute_fp8_weight_in_bwd=recompute_weight)
    c = recipe_name_to_linear_config(Float8LinearRecipeName.ALL_AXISWISE)
    return Float8LinearConfig(**{**c.__dict__, "emulate": True,
                                 "force_recompute_fp8_weight_in_bwd": recompute_weight})


def main():
    configs = []
    for attention in ("eager", "sdpa_math", "sdpa_flash"):
        blk, x, dims = build(attention)
        base_cuda = ms.measure(blk, [x])[1]
        blk, x, dims = build(attention)
        base_packed, _ = packed_bytes(blk, x)
        for recipe, recompute_weight in (("tensorwise", False), ("tensorwise", True),
                                         ("rowwise", False), ("rowwise", True), ("mxfp8", False)):
            blk, x, dims = build(attention)
            for name in LINEARS:
                if recipe == "mxfp8":
                    # torchao's prototype MX training linear: e4m3 elements, blocks of 32.
                    MXLinear.from_float(getattr(blk, name), torch.float8_e4m3fn, 32)
                else:
                    cfg = float8_config(recipe, recompute_weight)
                    setattr(blk, name, Float8Linear.from_float(getattr(blk, name), config=cfg))
            f8_packed, items = packed_bytes(blk, x)
            cid = "float8-%s-%s%s" % (attention, recipe, "-recompute-weight" if recompute_weight else "")
            configs.append(dict(id=cid, attention=attention, dtype="bf16", float8=recipe,
                                recompute_weight=recompute_weight,
                                bf16_cuda_bytes=base_cuda, bf16_packed_bytes=base_packed,
                                float8_packed_bytes=f8_packed,
                                cuda_bytes=base_cuda + f8_packed - base_packed,
                                packed=[dict(dtype=d, shape=sh, bytes=n) for d, sh, n in items], **dims))
            sys.stderr.write("%-50s bf16=%d float8=%d\n" % (cid, base_cuda, base_cuda + f8_packed - base_packed))
    json.dump({"generator": "tests/reference/measure_float8.py", "torch_version": torch.__version__,
               "torchao": "pytorch/ao eab345c2268a7506355d506ebfc27b5d28e5e7d0", "configs": configs},
              sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

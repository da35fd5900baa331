#!/usr/bin/env python3
# Purpose: measure with real PyTorch autograd what one Llama block keeps for backward under LoRA:
# every base weight and norm frozen (peft's _mark_only_adapters_as_trainable), each targeted linear
# wrapped as peft's lora.Linear runs it, the block's input requiring grad (enable_input_require_grads).
#
# Usage: python3 tests/reference/measure_lora.py > tests/reference/lora_saved.json
#   (PyTorch >= 2.0; run beside measure_saved.py, whose block, dropout and measurement it reuses)
#
# The LoRA forward re-implements huggingface/peft 5d602fdb src/peft/tuners/lora/layer.py
# Linear.forward (L1049-1074), one adapter, no variant:
#   result = base_layer(x); x = _cast_input_dtype(x, lora_A.weight.dtype)  (a copy when dtypes differ)
#   result = result + lora_B(lora_A(dropout(x))) * scaling; result = result.to(torch_result_dtype)
# with adapters in fp32 (peft's autocast_adapter_dtype=True default upcasts bf16 adapters) or, when
# asked, in the base dtype.
import json
import sys

import torch
import torch.nn as nn

import measure_saved as ms


class LoraLinear(nn.Module):
    def __init__(self, base, r, p, adapter_dtype, name):
        super().__init__()
        self.base, self.p, self.name, self.scaling = base, p, name, 16.0 / r
        self.lora_A = nn.Linear(base.in_features, r, bias=False).to(adapter_dtype)
        self.lora_B = nn.Linear(r, base.out_features, bias=False).to(adapter_dtype)

    def forward(self, x):
        result = self.base(x)
        torch_result_dtype = result.dtype
        if x.dtype != self.lora_A.weight.dtype:
            x = ms.TAG("lora." + self.name + ".cast", x.to(self.lora_A.weight.dtype))
        x = ms.dropout(x, self.p, "lora." + self.name + ".dropout")
        a = ms.TAG("lora." + self.name + ".a_out", self.lora_A(x))
        result = result + self.lora_B(a) * self.scaling
        return result.to(torch_result_dtype)


TARGETS = {"attn": ["q_proj", "k_proj", "v_proj", "o_proj"],
           "all": ["q_proj", "k_proj", "v_proj", "o_proj", "gate", "up", "down"]}


def build(attention, dtype, targets, r, p, adapter, b=2, s=64, h=128, a=4, kv=2, f=512):
    torch.manual_seed(0)
    dt = ms.DTYPES[dtype]
    blk = ms.PtLlamaBlock(h, a, kv, f, 0.0, attention, dt).to(dt)
    for prm in blk.parameters():
        prm.requires_grad_(False)
    for t in TARGETS[targets]:
        setattr(blk, t, LoraLinear(getattr(blk, t), r, p, ms.DTYPES[adapter], t))
    blk.train()
    x = torch.randn(b, s, h, dtype=dt).requires_grad_()
    return blk, [x], dict(b=b, s=s, h=h, a=a, kv=kv, f=f)


def main():
    configs = []
    for attention in ("eager", "sdpa_math"):
        for dtype, adapters in (("bf16", ("fp32", "bf16")), ("fp32", ("fp32",))):
            for adapter in adapters:
                for targets in ("attn", "all"):
                    for p in (0.0, 0.1):
                        r = 8
                        blk, inputs, dims = build(attention, dtype, targets, r, p, adapter)
                        measured, cuda, tensors, excluded, ok = ms.measure(blk, inputs)
                        cid = "lora-%s-%s-a%s-%s-r%d-p%g" % (attention, dtype, adapter, targets, r, p)
                        configs.append(dict(id=cid, attention=attention, dtype=dtype, adapter_dtype=adapter,
                                            targets=TARGETS[targets], r=r, dropout=p, cuda_bytes=cuda,
                                            complete=ok, tensors=tensors, **dims))
                        sys.stderr.write("%-50s cuda=%d\n" % (cid, cuda))
    json.dump({"generator": "tests/reference/measure_lora.py", "torch_version": torch.__version__,
               "configs": configs}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

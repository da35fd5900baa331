"""What a causal-LM loss keeps for backward, eager and compiled (docs/frameworks.md, The loss).

Runs F.cross_entropy(logits.float(), labels) on bf16 logits [N, V] twice: eagerly, and through
torch.compile with Inductor's decompositions and its min-cut partitioner (aot_autograd; the same
partitioner Inductor uses, without its code generation, which needs a compiler toolchain). Prints
JSON: for each, the tensors the forward graph hands to backward (compiled) or autograd's saved-tensor
hooks see (eager), as shape and dtype. Run: python3 loss_saved.py (PyTorch >= 2.6; CPU is enough).
"""
import json

import torch
import torch.nn.functional as F
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._inductor.decomposition import select_decomp_table

N, V = 64, 1000
graph_saved = []


def fw_compiler(gm, example_inputs):
    # The forward graph's outputs: the loss first, then what it saves for backward.
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    for a in out.args[0][1:]:
        v = a.meta.get("val") if hasattr(a, "meta") else None
        if v is not None:
            graph_saved.append({"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")})
    return gm.forward


backend = aot_autograd(fw_compiler=fw_compiler, bw_compiler=lambda gm, _: gm.forward,
                       partition_fn=min_cut_rematerialization_partition,
                       decompositions=select_decomp_table())


def ce(logits, labels):
    return F.cross_entropy(logits.float(), labels)


def eager_saved():
    seen = {}
    logits = torch.randn(N, V, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, V, (N,))

    def pack(t):  # one entry per storage: nll_loss re-saves log_softmax's output
        seen[t.untyped_storage().data_ptr()] = {"shape": list(t.shape),
                                               "dtype": str(t.dtype).replace("torch.", "")}
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = ce(logits, labels)
    loss.backward()
    return list(seen.values())


def compiled_saved():
    torch._dynamo.reset()
    logits = torch.randn(N, V, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, V, (N,))
    torch.compile(ce, backend=backend)(logits, labels).backward()
    return graph_saved


print(json.dumps({"torch": torch.__version__, "N": N, "V": V,
                  "eager": eager_saved(), "compiled": compiled_saved()}, indent=1))

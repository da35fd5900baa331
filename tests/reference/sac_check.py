# Runs actmem's emitted selective-checkpointing policies (`actmem estimate --emit sac`) on a toy
# stack of six transformer-like layers on the CPU: each must import, wrap the layers, give the
# plain run's gradients, and save fewer bytes outside its checkpoints. Not part of CI (PyTorch is
# not on the CI machine): run it where torch is, e.g. the Debian 13 root of ../shared/toolchain.md:
#   for p in selective every:3 layers:KSCRR full; do
#     actmem estimate --preset llama-3.1-8b --recompute $p --emit sac > /tmp/sac_${p/:/_}.py; done
#   python3 tests/reference/sac_check.py /tmp/sac_*.py
import importlib.util, sys, torch
torch.manual_seed(0)

class Layer(torch.nn.Module):
    def __init__(s, h):
        super().__init__()
        s.ln = torch.nn.LayerNorm(h); s.q = torch.nn.Linear(h, h); s.k = torch.nn.Linear(h, h)
        s.v = torch.nn.Linear(h, h); s.o = torch.nn.Linear(h, h); s.f1 = torch.nn.Linear(h, 4*h); s.f2 = torch.nn.Linear(4*h, h)
    def forward(s, x):
        y = s.ln(x)
        a = torch.softmax(torch.bmm(s.q(y), s.k(y).transpose(1, 2)) / 8.0, -1)
        x = x + s.o(torch.bmm(a, s.v(y)))
        return x + s.f2(torch.nn.functional.gelu(s.f1(x)))

def run(layers, x):
    saved = [0]
    def pack(t): saved[0] += t.numel() * t.element_size(); return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = x
        for l in layers: y = l(y)
        loss = y.square().mean()
    loss.backward()
    return saved[0], [p.grad.clone() for l in layers for p in l.parameters()]

h, n = 64, 6
base = torch.nn.ModuleList([Layer(h) for _ in range(n)])
x = torch.randn(2, 16, h)
ref_saved, ref_grads = run(base, x)
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("sac", path); mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    base.zero_grad(set_to_none=True)
    wrapped = mod.apply(base)
    saved, grads = run(wrapped, x)
    ok = all(torch.allclose(a, b, atol=1e-6) for a, b in zip(ref_grads, grads))
    print(f"{path}: POLICY={mod.POLICY} saved {saved} vs {ref_saved} plain, gradients equal: {ok}")
    base.zero_grad(set_to_none=True)

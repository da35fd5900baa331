# Purpose: the families measure_families_cpu.py runs, gathered from this folder's family files:
# each file's FAMILIES lists (model_type, the tiny config of measure_hf_layers.py exactly, a builder
# taking that config plus vocab_size, max_position_embeddings and attn).
import importlib
import os

import common

H = 256

FAMILIES = [
    ("llama", dict(hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2), lambda cfg: common.CausalLM(cfg)),
]

_expected = {}

_here = os.path.dirname(os.path.abspath(__file__))
for _f in sorted(os.listdir(_here)):
    if _f.endswith(".py") and _f not in ("common.py", "harness.py", "registry.py"):
        _mod = importlib.import_module(_f[:-3])
        FAMILIES += _mod.FAMILIES
        for _t, _c, _b in _mod.FAMILIES:
            if hasattr(_mod, "expected_differences"):
                _expected[_t] = _mod.expected_differences


def expected_differences(mtype, cfg, s):
    """The records a family's bf16 CPU run is known to differ in from the H200's, each explained in
    its family file: [(side, (module, shape, dtype, bytes))]."""
    return _expected[mtype](mtype, cfg, s) if mtype in _expected else []

// FLOP counts from the local (per-GPU) shapes of the layer geometry.
#include "actmem/flops.hpp"

namespace actmem {

LayerFlops layer_flops(const LayerKind& k, const LayerGeometry& g) {
  auto d = [](const Dim& x) { return static_cast<double>(x.value); };
  const double tokens = d(g.b) * d(g.s_tp);
  const double glu = k.ffn == FfnType::kGelu ? 2.0 : 3.0;  // GLU has three matrices
  LayerFlops f;
  const double qkv = 2.0 * tokens * d(g.h) * (d(g.a) + 2.0 * d(g.kv)) * d(g.d);
  const double out = 2.0 * tokens * d(g.a) * d(g.d) * d(g.h);
  f.attention_core = 4.0 * d(g.b) * d(g.a) * d(g.s_tp) * d(g.s_keys) * d(g.d);
  double mlp = 0;
  if (k.is_moe()) {
    mlp = 2.0 * tokens * d(g.h) * d(g.experts) +
          2.0 * d(g.expert_tokens) * d(g.h) * d(g.expert_f) * glu +
          2.0 * tokens * d(g.h) * d(g.shared_f) * glu;
  } else {
    mlp = 2.0 * tokens * d(g.h) * d(g.f) * glu;
  }
  f.total = qkv + out + f.attention_core + mlp;
  f.logits = 2.0 * tokens * d(g.h) * d(g.v);
  return f;
}

}  // namespace actmem

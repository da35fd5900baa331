// FLOP counts from the local (per-GPU) shapes of the layer geometry.
#include "actmem/inventory/flops.hpp"

namespace actmem {

LayerFlops layer_flops(const LayerKind& k, const LayerGeometry& g) {
  auto d = [](const Dim& x) { return static_cast<double>(x.value); };
  const double tokens = d(g.b) * d(g.s_tp);
  const double glu = is_gated(k.ffn) ? 3.0 : 2.0;  // GLU has three matrices
  LayerFlops f;
  f.logits = 2.0 * tokens * d(g.h) * d(g.v);
  double mixer = 0;
  if (k.is_mamba()) {
    // Mamba-2 (Dao & Gu 2024, Sec. 6, the SSD algorithm's cost): the projections, the depthwise
    // convolution, and per chunk of Q tokens C·B^T (Q·N per token and head) and its product
    // with x (Q·P), the chunk states (N·P) and their output (N·P).
    const double heads = d(g.mh), p = d(g.mp), n = d(g.mn), q = d(g.mq);
    const double conv_k = d(g.s_conv) - d(g.s_tp) + 1;
    mixer = 2.0 * tokens * d(g.h) * d(g.min) + 2.0 * tokens * d(g.mconv) * conv_k +
            2.0 * tokens * heads * (q * (n + p) + 2.0 * n * p) + 2.0 * tokens * d(g.mi) * d(g.h);
  }
  double qkv = 2.0 * tokens * d(g.h) * (d(g.a) + 2.0 * d(g.kv)) * d(g.d);
  if (k.is_mla()) {
    // MLA: down projections to the latents (and the RoPE key), up projections to every head.
    const double q =
        d(g.rq) > 0 ? d(g.h) * d(g.rq) + d(g.rq) * d(g.a) * d(g.d) : d(g.h) * d(g.a) * d(g.d);
    const double nope = d(g.d) - d(g.dr);
    qkv = 2.0 * tokens * (q + d(g.h) * (d(g.rkv) + d(g.dr)) + d(g.rkv) * d(g.a) * (nope + d(g.dv)));
  }
  double out = 2.0 * tokens * d(g.a) * d(g.dv) * d(g.h);
  // QK^T over d and PV over d_v (equal but for MLA).
  f.attention_core = 2.0 * d(g.b) * d(g.a) * d(g.s_tp) * d(g.s_keys) * (d(g.d) + d(g.dv));
  double mlp = 0;
  if (!k.has_ffn) {
    mlp = 0;
  } else if (k.is_moe()) {
    mlp = 2.0 * tokens * d(g.h) * d(g.experts) +
          2.0 * d(g.expert_tokens) * d(g.h) * d(g.expert_f) * glu +
          2.0 * tokens * d(g.h) * d(g.shared_f) * glu;
  } else {
    mlp = 2.0 * tokens * d(g.h) * d(g.f) * glu;
  }
  if (!k.has_attention()) {
    f.attention_core = 0;
    qkv = out = 0;
  }
  f.total = qkv + out + f.attention_core + mixer + mlp;
  return f;
}

}  // namespace actmem

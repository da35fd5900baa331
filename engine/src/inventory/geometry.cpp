// Resolves one layer's local tensor axes on one GPU: the single place TP/SP/CP/EP divisions live.
#include "actmem/config/sharding.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/inventory/inventory.hpp"

namespace actmem {

Result<LayerGeometry> resolve_geometry(const ModelSpec& m, const LayerKind& k, const TrainConfig& c,
                                       DType act, double attn_dropout, double hidden_dropout) {
  const Parallel& p = c.par;
  const std::uint64_t t = p.tp;
  const std::uint64_t cp = p.cp;
  const bool sp = p.sp && t > 1;
  LayerGeometry g;
  g.act = act;
  g.weight = gather_dtype(c);
  g.loss = c.loss;
  g.lora = c.lora;
  g.float8 = c.float8;
  g.float8_all_gather = c.float8_all_gather;
  g.compiled = c.compile;
  g.attn_dropout = attn_dropout > 0.0;
  g.hidden_dropout = hidden_dropout > 0.0;
  // cuDNN attention keeps what flash keeps (Q, K, V, O, fp32 softmax statistics), so every rule
  // that reads `flash` (no s² tensors, what selective recompute redoes, the backward's working
  // set) holds for it; `cudnn` adds its own differences (inventory/pytorch.cpp).
  g.cudnn = c.attention == Attention::kSdpaCudnn;
  g.flash = c.attention == Attention::kFlash || g.cudnn;
  g.sdpa_math = c.attention == Attention::kSdpaMath;
  g.b = {"b", c.micro_batch};
  // Context parallelism splits every per-token tensor by c (Megatron-LM context parallel).
  g.s_tp = cp > 1 ? Dim{"s/c", c.seq / cp} : Dim{"s", c.seq};
  // Sequence parallelism additionally splits the tensors TP would replicate (LayerNorm, dropout
  // and the linear inputs gathered on demand): Korthikanti et al. 2022, Sec. 4.2.2.
  if (sp)
    g.s_rep = cp > 1 ? Dim{"s/(c·t)", c.seq / cp / t} : Dim{"s/t", c.seq / t};
  else
    g.s_rep = g.s_tp;
  // Local queries still attend to every key of the sequence.
  g.s_keys = {"s", c.seq};
  g.response = c.response_len ? Dim{"R", c.response_len} : Dim{"s", c.seq};
  g.h = {"h", m.hidden};
  g.a = {t > 1 ? "a/t" : "a", tp_shard(k.heads, t)};
  // t a multiple of kv: each rank holds one replicated KV head.
  g.kv = {t == 1 ? "kv" : (k.kv_heads % t == 0 ? "kv/t" : "1"), tp_kv_heads(k.kv_heads, t)};
  g.d = {"d", k.head_dim};
  g.dv = k.is_mla() ? Dim{"d_v", k.mla.v_head_dim} : g.d;
  // MLA's down-projections are not split by TP (DeepSeek-V3 inference/model.py: wq_a and wkv_a
  // are plain Linear layers on every rank, wq_b and wkv_b column-parallel): every TP rank holds
  // the whole latents.
  g.rq = {"r_q", k.mla.q_lora_rank};
  g.rkv = {"r_kv", k.mla.kv_lora_rank};
  g.dr = {"d_r", k.mla.qk_rope_dim};
  g.f = {t > 1 ? "f/t" : "f", tp_shard(k.ffn_hidden, t)};
  g.v = {t > 1 ? "⌈V/t⌉" : "V", vocab_shard(m.vocab, t)};
  if (k.is_mamba()) {
    // validate() bounds every width below 2^40 and requires t to divide H and G.
    const MambaSpec x = k.mamba.split(t);
    const std::uint64_t chunks = (g.s_tp.value + x.chunk - 1) / x.chunk;
    g.mh = {t > 1 ? "H/t" : "H", x.heads};
    g.mp = {"P", x.head_dim};
    g.mn = {"N", x.state};
    g.mi = {t > 1 ? "I/t" : "I", x.inner()};
    g.mconv = {t > 1 ? "(I+2GN)/t" : "(I+2GN)", x.conv_dim()};
    g.min = {t > 1 ? "(2I+2GN+H)/t" : "(2I+2GN+H)", x.in_proj_dim()};
    g.mgroups = {t > 1 ? "G/t" : "G", x.groups};
    g.mq = {"Q", x.chunk};
    g.mc = {"⌈s/Q⌉", chunks};
    g.mc1 = {"(⌈s/Q⌉+1)", chunks + 1};
    g.s_pad = {"⌈s/Q⌉·Q", chunks * x.chunk};
    g.s_conv = {"(s+K-1)", g.s_tp.value + x.conv_kernel - 1};
  }
  if (k.is_moe()) {
    Checked ck;
    const MoeSpec& e = k.moe;
    const std::uint64_t tokens = ck.mul(c.micro_batch, g.s_tp.value, "config.micro_batch");
    const std::uint64_t routed = ck.mul(tokens, e.top_k, "model.num_experts_per_tok");
    if (e.capacity_factor > 0.0) {
      // GShard capacity: each expert takes at most ceil(cf * k * tokens_in_group / E) tokens; the
      // EP group pools ep ranks' tokens onto E/ep local experts.
      const std::uint64_t group = ck.mul(routed, p.ep, "config.ep");
      const double cap =
          e.capacity_factor * static_cast<double>(group) / static_cast<double>(e.experts);
      if (!(cap < 9.0e18))
        return make_error("overflow", "model.capacity_factor", "expert capacity overflows 64 bits");
      std::uint64_t per_expert = static_cast<std::uint64_t>(cap);
      if (static_cast<double>(per_expert) < cap) ++per_expert;
      g.expert_tokens = {"E/ep·⌈cf·k·ep·b·s/E⌉",
                         ck.mul(e.experts / p.ep, per_expert, "model.capacity_factor")};
    } else {
      // Dropless top-k routing: on average every rank's experts see k tokens per local token; the
      // busiest EP rank sees moe_imbalance times that (rounded up to whole tokens).
      if (c.moe_imbalance == 1.0) {
        g.expert_tokens = {"k·b·s", routed};
      } else {
        const double busiest = c.moe_imbalance * static_cast<double>(routed);
        if (!(busiest < 9.0e18))
          return make_error(
              "overflow", "config.moe_imbalance",
              "config.moe_imbalance: the busiest rank's token count overflows 64 bits");
        std::uint64_t n = static_cast<std::uint64_t>(busiest);
        if (static_cast<double>(n) < busiest) ++n;
        g.expert_tokens = {"⌈ρ·k·b·s⌉", n};
      }
    }
    if (ck.overflowed())
      return make_error("overflow", ck.field(), "expert token count overflows 64 bits");
    g.expert_f = {t > 1 ? "f_e/t" : "f_e", tp_shard(e.expert_ffn, t)};
    const std::uint64_t shared = e.shared_experts * e.shared_expert_ffn;
    g.shared_f = {t > 1 ? "f_sh/t" : "f_sh", tp_shard(shared, t)};
    g.experts = {"E", e.experts};
  }
  return g;
}

std::uint64_t liger_chunk(const LayerGeometry& g) {
  // b·s is bounded by the validated geometry (the loss's records hold it times V).
  const std::uint64_t n = g.b.value * g.s_tp.value;
  const std::uint64_t want = ceil_div(n, ceil_div(g.v.value, g.h.value));
  std::uint64_t p = 1;
  while (p < want) p <<= 1;
  return p < n ? p : n;
}

}  // namespace actmem

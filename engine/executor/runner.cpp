// The executor's layer program: forward, policy-driven keeping, recompute and a backward that reads
// only what the forward kept. The gradient buffers it allocates, step by step, are the ones
// engine/src/inventory/grads.cpp models; the tracker measures what really happened.
#include "runner.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "actmem/setup/policy.hpp"
#include "rng.hpp"

namespace actmem::exec {

namespace {
enum Site { kAttnDrop = 1, kProjDrop = 2, kMlpDrop = 3, kEmbedDrop = 4, kInit = 5, kBatch = 6 };

int to_int(std::uint64_t v, const char* what) {
  if (v > 1u << 30) throw std::invalid_argument(std::string(what) + " too large for the executor");
  return static_cast<int>(v);
}

// Uniform in [-1, 1) from the counter RNG: parameters and the batch are pure functions of the seed.
double uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  const std::uint64_t r = mix64(seed ^ mix64(stream * 0x9e3779b97f4a7c15ULL + i));
  return static_cast<double>(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}
}  // namespace

Runner::Runner(Device& dev, const Estimate& e, Elem act, std::uint64_t seed)
    : dev_(dev), e_(e), act_(act), stat_(act == Elem::kF64 ? Elem::kF64 : Elem::kF32), seed_(seed) {
  const ModelSpec& m = e.model;
  const LayerKind& k = m.kinds[0];  // the executor runs one-kind stacks (checks.cpp)
  const LayerGeometry& g = e.kinds[0].geometry;
  B = to_int(g.b.value, "micro_batch");
  T = to_int(g.s_keys.value, "seq");
  C = to_int(m.hidden, "hidden");
  A = to_int(k.heads, "heads");
  G_ = to_int(k.kv_heads, "kv_heads");
  D = to_int(k.head_dim, "head_dim");
  F = to_int(k.ffn_hidden, "ffn_hidden");
  V = to_int(m.vocab, "vocab");
  L = to_int(m.layers, "layers");
  glu_ = is_gated(k.ffn);
  silu_ = k.ffn == FfnType::kSwiglu;
  ln_ = m.norm == NormType::kLayerNorm;
  rope_ = m.pos == PosEncoding::kRope;
  flash_ = g.flash;
  p_attn_ = g.attn_dropout ? e.config.attention_dropout : 0.0;
  p_hid_ = g.hidden_dropout ? e.config.hidden_dropout : 0.0;

  // Parameters and their gradients: the whole step long, as the engine's static memory.
  const double ws = 1.0 / std::sqrt(static_cast<double>(C));
  wte_ = add_param("wte", static_cast<std::size_t>(V) * C, 0.5, 0);
  if (m.pos == PosEncoding::kLearned)
    wpe_ = add_param("wpe", static_cast<std::size_t>(m.max_positions) * C, 0.1, 0);
  const std::size_t ad = static_cast<std::size_t>(A) * D, gd = static_cast<std::size_t>(G_) * D;
  for (int l = 0; l < L; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    Layer y{};
    y.ln1_g = add_param(p + "ln1.weight", C, 0.1, 1.0);
    y.ln1_b = ln_ ? add_param(p + "ln1.bias", C, 0.1, 0) : kNone;
    y.wq = add_param(p + "q.weight", ad * C, ws, 0);
    y.bq = k.qkv_bias ? add_param(p + "q.bias", ad, 0.1, 0) : kNone;
    y.wk = add_param(p + "k.weight", gd * C, ws, 0);
    y.bk = k.qkv_bias ? add_param(p + "k.bias", gd, 0.1, 0) : kNone;
    y.wv = add_param(p + "v.weight", gd * C, ws, 0);
    y.bv = k.qkv_bias ? add_param(p + "v.bias", gd, 0.1, 0) : kNone;
    y.wo = add_param(p + "o.weight", C * ad, 1.0 / std::sqrt(static_cast<double>(ad)), 0);
    y.bo = k.o_bias ? add_param(p + "o.bias", C, 0.1, 0) : kNone;
    y.ln2_g = add_param(p + "ln2.weight", C, 0.1, 1.0);
    y.ln2_b = ln_ ? add_param(p + "ln2.bias", C, 0.1, 0) : kNone;
    const std::size_t f1 = static_cast<std::size_t>(glu_ ? 2 : 1) * F;
    y.w1 = add_param(p + "fc1.weight", f1 * C, ws, 0);
    y.b1 = k.mlp_bias ? add_param(p + "fc1.bias", f1, 0.1, 0) : kNone;
    y.w2 = add_param(p + "fc2.weight", static_cast<std::size_t>(C) * F,
                     1.0 / std::sqrt(static_cast<double>(F)), 0);
    y.b2 = k.mlp_bias ? add_param(p + "fc2.bias", C, 0.1, 0) : kNone;
    layers_.push_back(y);
  }
  lnf_g_ = add_param("final_norm.weight", C, 0.1, 1.0);
  lnf_b_ = ln_ ? add_param("final_norm.bias", C, 0.1, 0) : kNone;
  lm_ = m.tied_embeddings ? wte_
                          : add_param("lm_head.weight", static_cast<std::size_t>(V) * C, ws, 0);

  // The batch: token ids and next-token targets (counted apart from model memory).
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  ids_ = dev_.alloc(bt, Elem::kI32, "batch.ids", Category::kBatch);
  targets_ = dev_.alloc(bt, Elem::kI32, "batch.targets", Category::kBatch);
  std::vector<std::int32_t> ids(bt), tg(bt);
  for (std::size_t i = 0; i < bt; ++i) {
    ids[i] = static_cast<std::int32_t>(mix64(seed_ ^ (kBatch * 1000003ULL + i)) % V);
    tg[i] = static_cast<std::int32_t>(mix64(seed_ ^ (kBatch * 2000003ULL + i)) % V);
  }
  dev_.upload_i32(ids_, ids);
  dev_.upload_i32(targets_, tg);
  recs_.resize(L);
}

Runner::~Runner() {
  for (int l = 0; l < L; ++l) free_layer(l, nullptr);
  for (Param& p : params_) dev_.free(p.w), dev_.free(p.g);
  dev_.free(ids_, Category::kBatch);
  dev_.free(targets_, Category::kBatch);
}

std::size_t Runner::add_param(const std::string& name, std::size_t n, double scale, double offset) {
  Param p;
  p.name = name;
  p.w = dev_.alloc(n, act_, name);
  p.g = dev_.alloc(n, act_, name + ".grad");
  std::vector<double> h(n);
  for (std::size_t i = 0; i < n; ++i)
    h[i] = offset + scale * uniform(seed_, kInit * 1000 + params_.size(), i);
  dev_.upload(p.w, h);
  params_.push_back(p);
  return params_.size() - 1;
}

Buf& Runner::rec(int l, const char* id, std::size_t n, Elem el) {
  auto& r = recs_[l];
  auto it = r.find(id);
  if (it != r.end()) return it->second;  // still kept from the forward: not regenerated
  return r.emplace(id, dev_.alloc(n, el, id)).first->second;
}

const Buf& Runner::has(int l, const char* id) {
  auto it = recs_[l].find(id);
  // The backward has no other source: a record the policy dropped and nobody regenerated is a bug.
  if (it == recs_[l].end())
    throw std::logic_error("layer " + std::to_string(l) + " backward needs '" + id +
                           "', which was neither kept nor regenerated");
  return it->second;
}

void Runner::free_layer(int l, const std::vector<std::string>* keep) {
  auto& r = recs_[l];
  for (auto it = r.begin(); it != r.end();) {
    const std::string& id = it->first;
    const bool kept = keep && std::find(keep->begin(), keep->end(), id) != keep->end();
    if (kept) {
      ++it;
      continue;
    }
    dev_.free(it->second);
    it = r.erase(it);
  }
}

Buf Runner::layer_forward(int l, bool need_output, const std::string& out_name) {
  const Layer& y = layers_[l];
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const std::size_t ad = static_cast<std::size_t>(A) * D, gd = static_cast<std::size_t>(G_) * D;
  const Buf& x = has(l, "ln1.in");  // (B, T, C)
  dev_.tracker().phase("F L" + std::to_string(l));
  Buf& ln1 = rec(l, "attn.qkv_in", bt * C, act_);  // (B, T, C)
  dev_.norm_fwd(x, W(y.ln1_g), present(y.ln1_b) ? &W(y.ln1_b) : nullptr, ln1, B * T, C, eps_);
  Buf& q = rec(l, "attn.q", bt * ad, act_);  // (B, T, A, D)
  Buf& k = rec(l, "attn.k", bt * gd, act_);  // (B, T, G, D)
  Buf& v = rec(l, "attn.v", bt * gd, act_);  // (B, T, G, D)
  dev_.gemm(ln1, false, W(y.wq), true, q, B * T, A * D, C, 1, 0);
  dev_.gemm(ln1, false, W(y.wk), true, k, B * T, G_ * D, C, 1, 0);
  dev_.gemm(ln1, false, W(y.wv), true, v, B * T, G_ * D, C, 1, 0);
  if (present(y.bq)) {
    dev_.bias_add(q, W(y.bq), B * T, A * D);
    dev_.bias_add(k, W(y.bk), B * T, G_ * D);
    dev_.bias_add(v, W(y.bv), B * T, G_ * D);
  }
  if (rope_) dev_.rope(q, B, T, A, D, false), dev_.rope(k, B, T, G_, D, false);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Buf& ctx = rec(l, "attn.proj_in", bt * ad, act_);  // (B, T, A, D)
  if (flash_) {
    Buf& lse = rec(l, "attn.lse", static_cast<std::size_t>(B) * A * T, stat_);  // (B, A, T)
    dev_.flash_fwd(q, k, v, ctx, lse, B, T, A, G_, D, scale, p_attn_, seed_, stream(l, kAttnDrop));
  } else {
    regen_core(l);
    const Buf& P = p_attn_ > 0 ? has(l, "attn.dropout_out") : has(l, "attn.softmax_out");
    dev_.attn_pv(P, v, ctx, B, T, A, G_, D);
  }
  Buf& x2 = rec(l, "ln2.in", bt * C, act_);  // attention output, then the residual sum
  dev_.gemm(ctx, false, W(y.wo), true, x2, B * T, C, A * D, 1, 0);
  if (present(y.bo)) dev_.bias_add(x2, W(y.bo), B * T, C);
  if (p_hid_ > 0) {
    Buf& m = rec(l, "attn.proj_dropout_mask", bt * C, Elem::kU8);
    dev_.dropout_mask(m, p_hid_, seed_, stream(l, kProjDrop));
    dev_.dropout_apply(x2, m, x2, p_hid_);
  }
  dev_.add(x2, x);
  Buf& ln2 = rec(l, "mlp.fc1_in", bt * C, act_);
  dev_.norm_fwd(x2, W(y.ln2_g), present(y.ln2_b) ? &W(y.ln2_b) : nullptr, ln2, B * T, C, eps_);
  const int f1 = (glu_ ? 2 : 1) * F;
  Buf& a = rec(l, "mlp.act_in", bt * f1, act_);  // (B, T, F) or (B, T, 2F) = [gate | up]
  dev_.gemm(ln2, false, W(y.w1), true, a, B * T, f1, C, 1, 0);
  if (present(y.b1)) dev_.bias_add(a, W(y.b1), B * T, f1);
  Buf& h = rec(l, "mlp.fc2_in", bt * F, act_);  // (B, T, F)
  if (glu_)
    dev_.glu_fwd(a, h, B * T, F, silu_);
  else
    dev_.gelu_fwd(a, h);
  Buf* mm = nullptr;
  if (p_hid_ > 0) {
    mm = &rec(l, "mlp.dropout_mask", bt * C, Elem::kU8);
    dev_.dropout_mask(*mm, p_hid_, seed_, stream(l, kMlpDrop));
  }
  if (!need_output) return Buf{};
  Buf out = dev_.alloc(bt * C, act_, out_name);  // the next layer's input
  dev_.gemm(h, false, W(y.w2), true, out, B * T, C, F, 1, 0);
  if (present(y.b2)) dev_.bias_add(out, W(y.b2), B * T, C);
  if (mm) dev_.dropout_apply(out, *mm, out, p_hid_);
  dev_.add(out, x2);
  return out;
}

// The attention core (Korthikanti et al. 2022, Sec. 5): softmax(QK^T) and its dropout, rebuilt
// from the kept Q and K; what selective recompute drops.
void Runner::regen_core(int l) {
  if (flash_) return;
  const std::size_t n = static_cast<std::size_t>(B) * A * T * T;  // (B, A, T, T)
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Buf& P = rec(l, "attn.softmax_out", n, act_);
  dev_.attn_probs(has(l, "attn.q"), has(l, "attn.k"), P, B, T, A, G_, D, scale);
  if (p_attn_ > 0) {
    Buf& m = rec(l, "attn.dropout_mask", n, Elem::kU8);
    dev_.dropout_mask(m, p_attn_, seed_, stream(l, kAttnDrop));
    Buf& pd = rec(l, "attn.dropout_out", n, act_);
    dev_.dropout_apply(P, m, pd, p_attn_);
  }
}

void Runner::layer_backward(int l, Buf& dY) {
  const Layer& y = layers_[l];
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const std::size_t ad = static_cast<std::size_t>(A) * D, gd = static_cast<std::size_t>(G_) * D;
  const int f1 = (glu_ ? 2 : 1) * F;
  auto ph = [&](const char* at) { dev_.tracker().phase("B L" + std::to_string(l) + " " + at); };
  // MLP, top down (the steps of inventory/grads.cpp).
  ph("mlp.fc2 dgrad");
  Buf g1 = dY;  // the residual branch's gradient is dY itself without dropout
  if (p_hid_ > 0) {
    g1 = dev_.alloc(bt * C, act_, "d_mlp_dropout");
    dev_.dropout_apply(dY, has(l, "mlp.dropout_mask"), g1, p_hid_);
  }
  dev_.gemm(g1, true, has(l, "mlp.fc2_in"), false, G(y.w2), C, F, B * T, 1, 1);
  if (present(y.b2)) dev_.bias_grad(g1, G(y.b2), B * T, C);
  Buf g2 = dev_.alloc(bt * F, act_, "d_fc2_in");
  dev_.gemm(g1, false, W(y.w2), false, g2, B * T, F, C, 1, 0);
  if (p_hid_ > 0) dev_.free(g1);
  Buf g3;
  if (glu_) {
    ph("mlp.glu bwd");
    g3 = dev_.alloc(bt * f1, act_, "d_act_in");
    dev_.glu_bwd(g2, has(l, "mlp.act_in"), g3, B * T, F, silu_);
    dev_.free(g2);
  } else {
    dev_.gelu_bwd(g2, has(l, "mlp.act_in"));  // in place: d_fc2_in becomes d_act_in
    g3 = g2;
  }
  ph("mlp.fc1 dgrad");
  dev_.gemm(g3, true, has(l, "mlp.fc1_in"), false, G(y.w1), f1, C, B * T, 1, 1);
  if (present(y.b1)) dev_.bias_grad(g3, G(y.b1), B * T, f1);
  Buf g4 = dev_.alloc(bt * C, act_, "d_fc1_in");
  dev_.gemm(g3, false, W(y.w1), false, g4, B * T, C, f1, 1, 0);
  dev_.free(g3);
  dev_.norm_bwd(has(l, "ln2.in"), W(y.ln2_g), g4, dY, G(y.ln2_g),
                present(y.ln2_b) ? &G(y.ln2_b) : nullptr, B * T, C, eps_);
  dev_.free(g4);
  // Attention.
  ph("attn.proj dgrad");
  g1 = dY;
  if (p_hid_ > 0) {
    g1 = dev_.alloc(bt * C, act_, "d_proj_dropout");
    dev_.dropout_apply(dY, has(l, "attn.proj_dropout_mask"), g1, p_hid_);
  }
  dev_.gemm(g1, true, has(l, "attn.proj_in"), false, G(y.wo), C, A * D, B * T, 1, 1);
  if (present(y.bo)) dev_.bias_grad(g1, G(y.bo), B * T, C);
  Buf dctx = dev_.alloc(bt * ad, act_, "d_ctx");
  dev_.gemm(g1, false, W(y.wo), false, dctx, B * T, A * D, C, 1, 0);
  if (p_hid_ > 0) dev_.free(g1);
  const Buf& q = has(l, "attn.q");
  const Buf& k = has(l, "attn.k");
  const Buf& v = has(l, "attn.v");
  const Buf& ln1 = has(l, "attn.qkv_in");
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Buf dq, dk, dv, dqkv;
  auto qkv_dgrad = [&](Buf& d, std::size_t w, std::size_t b, int out, bool rot, int heads) {
    if (rot && rope_) dev_.rope(d, B, T, heads, D, true);
    dev_.gemm(d, true, ln1, false, G(w), out, C, B * T, 1, 1);
    if (present(b)) dev_.bias_grad(d, G(b), B * T, out);
    dev_.gemm(d, false, W(w), false, dqkv, B * T, C, out, 1, 1);
  };
  if (flash_) {
    ph("attn.flash bwd");
    Buf Dr = dev_.alloc(static_cast<std::size_t>(B) * A * T, stat_, "flash.D");
    dq = dev_.alloc(bt * ad, act_, "dq");
    dk = dev_.alloc(bt * gd, act_, "dk");
    dv = dev_.alloc(bt * gd, act_, "dv");
    dev_.flash_bwd(q, k, v, has(l, "attn.proj_in"), dctx, has(l, "attn.lse"), Dr, dq, dk, dv, B, T,
                   A, G_, D, scale, p_attn_, seed_, stream(l, kAttnDrop));
    dev_.free(dctx);
    dev_.free(Dr);
    ph("attn.qkv dgrad");
    dqkv = dev_.alloc(bt * C, act_, "d_qkv_in");
    qkv_dgrad(dv, y.wv, y.bv, G_ * D, false, G_);
    qkv_dgrad(dq, y.wq, y.bq, A * D, true, A);
    qkv_dgrad(dk, y.wk, y.bk, G_ * D, true, G_);
    dev_.free(dq), dev_.free(dk), dev_.free(dv);
  } else {
    ph("attn.dP dV");
    const std::size_t n = static_cast<std::size_t>(B) * A * T * T;
    Buf dP = dev_.alloc(n, act_, "d_probs");
    dv = dev_.alloc(bt * gd, act_, "dv");
    const Buf& P = p_attn_ > 0 ? has(l, "attn.dropout_out") : has(l, "attn.softmax_out");
    dev_.attn_dp_dv(dctx, P, v, dP, dv, B, T, A, G_, D);
    dev_.free(dctx);
    ph("attn.v dgrad");
    dqkv = dev_.alloc(bt * C, act_, "d_qkv_in");
    qkv_dgrad(dv, y.wv, y.bv, G_ * D, false, G_);
    dev_.free(dv);
    if (p_attn_ > 0) dev_.dropout_apply(dP, has(l, "attn.dropout_mask"), dP, p_attn_);
    dev_.softmax_bwd(dP, has(l, "attn.softmax_out"), B * A * T, T, scale);  // dP becomes dS
    ph("attn.dQ");
    dq = dev_.alloc(bt * ad, act_, "dq");
    dev_.attn_dq(dP, k, dq, B, T, A, G_, D);
    qkv_dgrad(dq, y.wq, y.bq, A * D, true, A);
    dev_.free(dq);
    ph("attn.dK");
    dk = dev_.alloc(bt * gd, act_, "dk");
    dev_.attn_dk(dP, q, dk, B, T, A, G_, D);
    qkv_dgrad(dk, y.wk, y.bk, G_ * D, true, G_);
    dev_.free(dk);
    dev_.free(dP);
  }
  dev_.norm_bwd(has(l, "ln1.in"), W(y.ln1_g), dqkv, dY, G(y.ln1_g),
                present(y.ln1_b) ? &G(y.ln1_b) : nullptr, B * T, C, eps_);
  dev_.free(dqkv);
}

StepResult Runner::step(bool backward) {
  StepResult res;
  for (Param& p : params_) dev_.clear(p.g);
  const Stage& st = e_.stages[0];
  const std::vector<LayerChoice>& ch = st.chunk_choices[0];
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  // Embedding (Korthikanti et al. 2022, Sec. 4.3: its dropout mask is the input layer's record).
  dev_.tracker().phase("F embed");
  Buf x = dev_.alloc(bt * C, act_, "ln1.in");
  dev_.embed_fwd(ids_, W(wte_), present(wpe_) ? &W(wpe_) : nullptr, x, B * T, T, C);
  Buf emask;
  if (p_hid_ > 0) {
    emask = dev_.alloc(bt * C, Elem::kU8, "embed.dropout_mask");
    dev_.dropout_mask(emask, p_hid_, seed_, stream(0, kEmbedDrop));
    dev_.dropout_apply(x, emask, x, p_hid_);
  }
  for (int l = 0; l < L; ++l) {
    recs_[l].emplace("ln1.in", x);
    x = layer_forward(l, true, l + 1 < L ? "ln1.in" : "final_norm.in");
    // The checkpoint record ("layer.in") is the layer input, which is the ln1.in buffer here.
    std::vector<std::string> keep;
    for (const TensorRecord* r : kept_tensors(e_.kinds[0].inventory, ch[l], e_.config.recompute))
      keep.push_back(r->id == e_.kinds[0].inventory.checkpoint.id ? "ln1.in" : std::string(r->id));
    if (l == 0) {
      for (const auto& [id, b] : recs_[0]) res.layer0_records[id] = b.bytes();
      res.layer0_kept = keep;
    }
    free_layer(l, &keep);
  }
  // Final norm, logits (fp32) and cross-entropy.
  dev_.tracker().phase("loss fwd");
  Buf lm_in = dev_.alloc(bt * C, act_, "lm_head.in");
  dev_.norm_fwd(x, W(lnf_g_), present(lnf_b_) ? &W(lnf_b_) : nullptr, lm_in, B * T, C, eps_);
  Buf logits = dev_.alloc(bt * V, stat_, "logits.fp32");  // (B*T, V)
  dev_.gemm(lm_in, false, W(lm_), true, logits, B * T, V, C, 1, 0);
  Buf probs = dev_.alloc(bt * V, stat_, "loss.probs");
  res.loss = dev_.xent_fwd(logits, targets_, probs, B * T, V);
  dev_.free(probs);
  if (!backward) {
    dev_.free(logits), dev_.free(lm_in), dev_.free(x);
    for (int l = 0; l < L; ++l) free_layer(l, nullptr);
    if (p_hid_ > 0) dev_.free(emask);
    return res;
  }
  dev_.tracker().phase("loss bwd");
  probs = dev_.alloc(bt * V, stat_, "loss.probs");
  dev_.xent_fwd(logits, targets_, probs, B * T, V);
  Buf dlogits = dev_.alloc(bt * V, stat_, "d_logits");
  dev_.xent_bwd(probs, targets_, dlogits, B * T, V);
  dev_.free(probs);
  Buf dlm = dev_.alloc(bt * C, act_, "d_lm_head_in");
  dev_.gemm(dlogits, false, W(lm_), false, dlm, B * T, C, V, 1, 0);
  dev_.gemm(dlogits, true, lm_in, false, G(lm_), V, C, B * T, 1, 1);
  dev_.free(dlogits);
  Buf dY = dev_.alloc(bt * C, act_, "dY");
  dev_.norm_bwd(x, W(lnf_g_), dlm, dY, G(lnf_g_), present(lnf_b_) ? &G(lnf_b_) : nullptr, B * T, C,
                eps_);
  dev_.free(dlm);
  dev_.free(logits), dev_.free(lm_in), dev_.free(x);
  // Layers, top down; recompute exactly where the engine's policy says (Chen et al. 2016).
  std::vector<Bytes> regen;
  for (LayerChoice c : ch) regen.push_back(regen_bytes(c, e_.kinds[0].costs));
  for (int j = L - 1; j >= 0; --j) {
    std::size_t s0 = 0;
    if (regenerates_before(ch, regen, static_cast<std::size_t>(j), &s0)) {
      dev_.tracker().phase("R L" + std::to_string(s0) + "-L" + std::to_string(j));
      if (ch[j] == LayerChoice::kSelective) {
        regen_core(j);
      } else {
        for (int i = static_cast<int>(s0); i <= j; ++i) {
          Buf out = layer_forward(i, i < j, "ln1.in");
          if (i < j) recs_[i + 1].emplace("ln1.in", out);
        }
      }
    }
    layer_backward(j, dY);
    free_layer(j, nullptr);
  }
  dev_.tracker().phase("embed bwd");
  if (p_hid_ > 0) {
    dev_.dropout_apply(dY, emask, dY, p_hid_);
    dev_.free(emask);
  }
  dev_.embed_bwd(ids_, dY, G(wte_), present(wpe_) ? &G(wpe_) : nullptr, B * T, T, C);
  dev_.free(dY);
  dev_.sync();
  return res;
}

std::vector<std::vector<double>> Runner::gradients() {
  std::vector<std::vector<double>> out;
  for (const Param& p : params_) out.push_back(dev_.download(p.g));
  return out;
}

}  // namespace actmem::exec

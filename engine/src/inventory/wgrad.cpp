// What a split backward keeps between a layer's input-gradient part (I) and its weight-gradient
// part (W): each linear's input, already an inventory record, and its output gradient dY
// (docs/schedules.md, "Split-backward schedules"). One place for every profile: the linear inputs
// carry the same ids in each (attn.qkv_in, attn.proj_in, MLA's attn.q_up_in and attn.kv_up_in,
// Mamba's mamba.in_proj_in and mamba.out_proj_in, mlp.fc1_in, mlp.fc2_in; an MoE layer's
// moe.router_in, moe.expert_in, moe.fc2_in and moe.shared_fc2_in under the megatron and pytorch
// profiles, whose expert records inventory/moe_and_io.cpp builds).
#include "actmem/inventory/inventory.hpp"
#include "inventory/builder.hpp"

namespace actmem {

namespace {
// Qi et al. 2024's weight-gradient store keeps (input, grad_output) per linear until W runs
// (sail-sg/zero-bubble-pipeline-parallelism, megatron/core/weight_grad_store.py at c5d50741;
// deepseek-ai/DualPipe's WeightGradStore at 3da1bbea holds the same closures). Only linear
// layers defer: norms, convolutions, biases and MoE routers' score corrections take their
// gradients in I.
constexpr const char* kZb =
    "Qi et al. 2024 (zero-bubble-pipeline-parallelism weight_grad_store.py @ c5d50741): W "
    "computes dW = X^T dY from the stored input and output gradient";
constexpr const char* kDy = "dW = X^T dY: the linear's output gradient waits for W";
}  // namespace

namespace detail {

// Marks the linear inputs and adds each linear's dY, shaped as the linear's output: its input
// record's leading axes (tokens, routed copies, or every expert over every token) with the output
// width last. Returns false when a linear input the kind must have is not among its records
// (split_refusal says why); the kind's split is then refused rather than counted short.
bool add_weight_grad_store(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                           LayerInventory& inv, Checked& ck) {
  auto find = [&](std::string_view id) -> const TensorRecord* {
    for (const TensorRecord& t : inv.tensors)
      if (t.id == id && t.scope.empty()) return &t;
    return nullptr;
  };
  auto mark = [&](std::string_view id) {
    bool found = false;
    for (TensorRecord& t : inv.tensors)
      if (t.id == id && t.scope.empty()) t.wgrad_input = found = true;
    return found;
  };
  // A parallel block's MLP (or router and shared expert) reads the layer's normed input,
  // attn.qkv_in's storage in every profile, so only a sequential block has an input of its own.
  const bool sequential = m.block == BlockLayout::kSequential;
  bool ok = true;
  if (k.has_attention()) {
    ok = mark("attn.qkv_in") && mark("attn.proj_in");
    // MLA: the up projections read the normed latents (Megatron-LM multi_latent_attention.py
    // linear_q_up_proj / linear_kv_up_proj; transformers q_b_proj / kv_b_proj).
    if (k.is_mla()) ok = ok && mark("attn.kv_up_in") && (g.rq.value == 0 || mark("attn.q_up_in"));
  } else if (k.is_mamba()) {
    ok = mark("mamba.in_proj_in") && mark("mamba.out_proj_in");
  }
  if (k.has_ffn && ok) {
    if (k.is_moe()) {
      // The router and shared expert read the normed tokens; each expert's GEMMs read its routed
      // copies (inventory/moe_and_io.cpp).
      ok = mark("moe.expert_in") && mark("moe.fc2_in");
      if (sequential) ok = ok && mark("moe.router_in");
      if (k.moe.shared_experts > 0) ok = ok && mark("moe.shared_fc2_in");
    } else {
      ok = mark("mlp.fc2_in");
      if (sequential) ok = ok && mark("mlp.fc1_in");
    }
  }
  // A kind whose store cannot be named whole is refused rather than counted short.
  auto refuse = [&] {
    inv.wgrad_dy.clear();
    for (TensorRecord& t : inv.tensors) t.wgrad_input = false;
    return false;
  };
  if (!ok) return refuse();
  RecordBuilder rb(&inv.wgrad_dy, &ck);
  const DType p = g.act;
  bool shaped = true;  // every dY found the record whose leading axes it takes
  auto dy_of = [&](std::string_view input, std::initializer_list<Dim> out, const char* id,
                   const char* what) {
    const TensorRecord* t = find(input);
    if (!t) {
      shaped = false;
      return;
    }
    Shape sh;
    for (std::size_t a = 0; a + 1 < t->shape.size(); ++a) sh.push_back(t->shape[a]);
    for (const Dim& d : out) sh.push_back(d);
    rb.add(id, sh, p, what, kDy, kZb);
  };
  auto finish = [&] { return shaped ? true : refuse(); };
  const Dim two{"2", 2};
  if (k.is_mla()) {
    // Down projections (replicated across TP) output the tokens their latents hold: the latent
    // norms' inputs carry those axes in every profile (s/t under Megatron-LM's sequence
    // parallelism). Up projections are column-parallel, every token over the local heads; the
    // output projection row-parallel (its dY before the TP reduction).
    const Dim qd{"a·d", g.a.value * g.d.value};
    const Dim kv_up{"a·(d−d_r+d_v)", g.a.value * (g.d.value - g.dr.value + g.dv.value)};
    if (g.rq.value > 0) {
      dy_of("attn.q_latent_norm.in", {g.rq}, "attn.q_down.dY",
            "query down-projection weight gradient (W)");
      rb.add("attn.q_up.dY", {g.b, g.s_tp, qd}, p, "query up-projection weight gradient (W)", kDy,
             kZb);
    } else {
      rb.add("attn.q_proj.dY", {g.b, g.s_tp, qd}, p, "query projection weight gradient (W)", kDy,
             kZb);
    }
    dy_of("attn.kv_latent_norm.in", {Dim{"r_kv+d_r", g.rkv.value + g.dr.value}}, "attn.kv_down.dY",
          "key/value down-projection weight gradient (W, with the RoPE key)");
    rb.add("attn.kv_up.dY", {g.b, g.s_tp, kv_up}, p, "key/value up-projection weight gradient (W)",
           kDy, kZb);
  } else if (k.has_attention()) {
    const Dim qkv{"(a+2kv)·d", g.a.value * g.d.value + 2 * g.kv.value * g.d.value};
    rb.add("attn.qkv.dY", {g.b, g.s_tp, qkv}, p, "QKV weight gradient (W)",
           "dW_qkv = X^T dY: the QKV projection's output gradient waits for W", kZb);
  }
  if (k.has_attention())
    rb.add("attn.proj.dY", {g.b, g.s_tp, g.h}, p, "output projection weight gradient (W)",
           "dW_proj = X^T dY: the projection's output gradient (before the TP reduction)", kZb);
  if (k.is_mamba()) {
    // in_proj is column-parallel over z, x, B, C and dt; out_proj row-parallel.
    dy_of("mamba.out_proj_in", {g.min}, "mamba.in_proj.dY", "Mamba in_proj weight gradient (W)");
    dy_of("mamba.out_proj_in", {g.h}, "mamba.out_proj.dY", "Mamba out_proj weight gradient (W)");
  }
  if (!k.has_ffn) return finish();
  if (k.is_moe()) {
    const std::string_view tokens_in = sequential ? "moe.router_in" : "attn.qkv_in";
    dy_of(tokens_in, {g.experts}, "moe.router.dY", "router weight gradient (W)");
    const bool gated = is_gated(k.ffn);
    if (gated)
      dy_of("moe.expert_in", {two, g.expert_f}, "moe.fc1.dY",
            "experts' gate/up weight gradient (W)");
    else
      dy_of("moe.expert_in", {g.expert_f}, "moe.fc1.dY",
            "experts' first linear weight gradient (W)");
    dy_of("moe.fc2_in", {g.h}, "moe.fc2.dY", "experts' second linear weight gradient (W)");
    if (k.moe.shared_experts > 0) {
      if (gated)
        dy_of("moe.shared_fc2_in", {two, g.shared_f}, "moe.shared_fc1.dY",
              "shared expert gate/up weight gradient (W)");
      else
        dy_of("moe.shared_fc2_in", {g.shared_f}, "moe.shared_fc1.dY",
              "shared expert first linear weight gradient (W)");
      dy_of("moe.shared_fc2_in", {g.h}, "moe.shared_fc2.dY",
            "shared expert second linear weight gradient (W)");
    }
    return finish();
  }
  if (is_gated(k.ffn))
    rb.add("mlp.fc1.dY", {g.b, g.s_tp, two, g.f}, p, "gate/up weight gradient (W)",
           "dW = X^T dY for gate and up", kZb);
  else
    rb.add("mlp.fc1.dY", {g.b, g.s_tp, g.f}, p, "first MLP linear weight gradient (W)",
           "dW_fc1 = X^T dY", kZb);
  rb.add("mlp.fc2.dY", {g.b, g.s_tp, g.h}, p, "second MLP linear weight gradient (W)",
         "dW_fc2 = X^T dY (before the TP reduction)", kZb);
  return finish();
}

}  // namespace detail

std::string split_refusal(const LayerKind& k) {
  if (k.is_mamba())
    return "Mamba under its fused kernel (mamba_split_conv1d_scan_combined computes out_proj's "
           "weight gradient inside its own backward: attention eager or sdpa_math, or profile "
           "megatron, splits it)";
  return "a layer kind with a linear whose input is not a record of its own";
}

}  // namespace actmem

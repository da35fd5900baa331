// What a split backward keeps between a layer's input-gradient part (I) and its weight-gradient
// part (W): each linear's input, already an inventory record, and its output gradient dY
// (docs/schedules.md, "Split-backward schedules"). One place for every profile: the linear inputs
// carry the same ids in each (attn.qkv_in, attn.proj_in, mlp.fc1_in, mlp.fc2_in; an MoE layer's
// moe.router_in, moe.expert_in, moe.fc2_in and moe.shared_fc2_in under the megatron and pytorch
// profiles, whose expert records inventory_io.cpp builds).
#include "actmem/inventory.hpp"
#include "inventory_builder.hpp"

namespace actmem {

namespace {
// Qi et al. 2024's weight-gradient store keeps (input, grad_output) per linear until W runs
// (sail-sg/zero-bubble-pipeline-parallelism, megatron/core/weight_grad_store.py at c5d50741;
// deepseek-ai/DualPipe's WeightGradStore at 3da1bbea holds the same closures).
constexpr const char* kZb =
    "Qi et al. 2024 (zero-bubble-pipeline-parallelism weight_grad_store.py @ c5d50741): W "
    "computes dW = X^T dY from the stored input and output gradient";
}  // namespace

bool split_backward_supported(const LayerKind& k) {
  return k.has_attention() && !k.is_mla() && k.has_ffn && k.v_dim() == k.head_dim;
}

namespace detail {

// Marks the linear inputs and adds each linear's dY (its local output, before any TP reduction:
// s_tp tokens) for a supported kind; returns false when a linear input the kind must have is not
// among its records (then the kind's split is refused rather than counted short).
bool add_weight_grad_store(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                           LayerInventory& inv, Checked& ck) {
  if (!split_backward_supported(k)) return false;
  auto mark = [&](std::string_view id) {
    bool found = false;
    for (TensorRecord& t : inv.tensors)
      if (t.id == id && t.scope.empty()) t.wgrad_input = found = true;
    return found;
  };
  bool ok = mark("attn.qkv_in") && mark("attn.proj_in");
  // A parallel block's MLP (or router and shared expert) reads the layer's normed input,
  // attn.qkv_in's storage in every profile, so only a sequential block has an input of its own.
  const bool sequential = m.block == BlockLayout::kSequential;
  if (k.is_moe()) {
    // The router and shared expert read the normed tokens; each expert's GEMMs read its routed
    // copies (inventory_io.cpp). The hf profile's grouped-experts records have other ids: its
    // split is refused.
    ok = ok && mark("moe.expert_in") && mark("moe.fc2_in");
    if (sequential) ok = ok && mark("moe.router_in");
    if (k.moe.shared_experts > 0) ok = ok && mark("moe.shared_fc2_in");
  } else {
    ok = ok && mark("mlp.fc2_in");
    if (sequential) ok = ok && mark("mlp.fc1_in");
  }
  if (!ok) return false;
  RecordBuilder rb(&inv.wgrad_dy, &ck);
  const DType p = g.act;
  const Dim qkv{"(a+2kv)·d", g.a.value * g.d.value + 2 * g.kv.value * g.d.value};
  rb.add("attn.qkv.dY", {g.b, g.s_tp, qkv}, p, "QKV weight gradient (W)",
         "dW_qkv = X^T dY: the QKV projection's output gradient waits for W", kZb);
  rb.add("attn.proj.dY", {g.b, g.s_tp, g.h}, p, "output projection weight gradient (W)",
         "dW_proj = X^T dY: the projection's output gradient (before the TP reduction)", kZb);
  const bool glu = k.ffn == FfnType::kSwiglu || k.ffn == FfnType::kGeglu;
  const Dim two{"2", 2};
  if (k.is_moe()) {
    // Each output gradient has its linear's output shape: the input record's leading axes (per
    // token, per routed copy, or every expert over every token where a family runs its experts
    // as one batched matmul) with the output width last.
    auto dy_of = [&](std::string_view input, std::initializer_list<Dim> out, const char* id,
                     const char* what) {
      for (const TensorRecord& t : inv.tensors)
        if (t.id == input && t.scope.empty()) {
          Shape sh;
          for (std::size_t a = 0; a + 1 < t.shape.size(); ++a) sh.push_back(t.shape[a]);
          for (const Dim& d : out) sh.push_back(d);
          rb.add(id, sh, p, what, "dW = X^T dY: the linear's output gradient waits for W", kZb);
          return;
        }
    };
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
    return true;
  }
  if (glu)
    rb.add("mlp.fc1.dY", {g.b, g.s_tp, two, g.f}, p, "gate/up weight gradient (W)",
           "dW = X^T dY for gate and up", kZb);
  else
    rb.add("mlp.fc1.dY", {g.b, g.s_tp, g.f}, p, "first MLP linear weight gradient (W)",
           "dW_fc1 = X^T dY", kZb);
  rb.add("mlp.fc2.dY", {g.b, g.s_tp, g.h}, p, "second MLP linear weight gradient (W)",
         "dW_fc2 = X^T dY (before the TP reduction)", kZb);
  return true;
}

}  // namespace detail

}  // namespace actmem

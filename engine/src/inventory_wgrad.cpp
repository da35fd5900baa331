// What a split backward keeps between a layer's input-gradient part (I) and its weight-gradient
// part (W): each linear's input, already an inventory record, and its output gradient dY
// (docs/schedules.md, "Split-backward schedules"). One place for every profile: the linear inputs
// carry the same ids in each (attn.qkv_in, attn.proj_in, mlp.fc1_in, mlp.fc2_in).
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
  return k.has_attention() && !k.is_mla() && k.has_ffn && !k.is_moe() && k.v_dim() == k.head_dim;
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
  bool ok = mark("attn.qkv_in") && mark("attn.proj_in") && mark("mlp.fc2_in");
  // A parallel block's MLP reads the layer's normed input, attn.qkv_in's storage in every
  // profile, so only a sequential block has an fc1 input of its own.
  if (m.block == BlockLayout::kSequential) ok = ok && mark("mlp.fc1_in");
  if (!ok) return false;
  RecordBuilder rb(&inv.wgrad_dy, &ck);
  const DType p = g.act;
  const Dim qkv{"(a+2kv)·d", g.a.value * g.d.value + 2 * g.kv.value * g.d.value};
  rb.add("attn.qkv.dY", {g.b, g.s_tp, qkv}, p, "QKV weight gradient (W)",
         "dW_qkv = X^T dY: the QKV projection's output gradient waits for W", kZb);
  rb.add("attn.proj.dY", {g.b, g.s_tp, g.h}, p, "output projection weight gradient (W)",
         "dW_proj = X^T dY: the projection's output gradient (before the TP reduction)", kZb);
  const bool glu = k.ffn == FfnType::kSwiglu || k.ffn == FfnType::kGeglu;
  if (glu)
    rb.add("mlp.fc1.dY", {g.b, g.s_tp, Dim{"2", 2}, g.f}, p, "gate/up weight gradient (W)",
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

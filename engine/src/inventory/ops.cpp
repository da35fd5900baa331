// The op outputs of a dense layer's forward that an op-level selective-activation-checkpoint
// policy may save (recompute op:torchtitan, op:LIST), in the order the forward calls them.
#include "inventory/builder.hpp"

namespace actmem {

namespace {

constexpr const char* kSac =
    "torch.utils.checkpoint create_selective_checkpoint_contexts: a policy marks an op's outputs "
    "MUST_SAVE, and the recompute reuses them";

}  // namespace

bool op_policy_supported(const ModelSpec& m, const LayerKind& k, Profile profile) {
  return (profile == Profile::kPytorch || profile == Profile::kHf) && k.has_attention() &&
         !k.is_mla() && k.has_ffn && !k.is_moe() && m.block == BlockLayout::kSequential;
}

namespace detail {

void add_op_outputs(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g, Profile profile,
                    LayerInventory& inv, Checked& ck) {
  if (!op_policy_supported(m, k, profile)) return;
  const double tokens = static_cast<double>(g.b.value) * static_cast<double>(g.s_tp.value);
  std::uint64_t mm_count = 0;
  // A linear: aten.mm without a bias (3-D input, at::linear via matmul), aten.addmm with one
  // (at::linear's fused 3-D path); torchtitan's policy counts and saves aten.mm only.
  auto linear = [&](const char* id, const char* out_id, Dim in, std::initializer_list<Dim> out,
                    bool bias) {
    OpOutput op;
    op.id = id;
    op.aten = bias ? "aten.addmm" : "aten.mm";
    RecordBuilder rb(&op.outputs, &ck);
    Shape shape;
    shape.push_back(g.b);
    shape.push_back(g.s_tp);
    double width = 1;
    for (const Dim& d : out) shape.push_back(d), width *= static_cast<double>(d.value);
    rb.add(out_id, shape, g.act, "recompute (op saved by the policy)",
           "the op's output, reused by the layer's recompute instead of recomputed", kSac);
    op.flops = 2.0 * tokens * static_cast<double>(in.value) * width;
    if (!bias) op.torchtitan_saves = ++mm_count % 2 == 1;
    inv.ops.push_back(std::move(op));
  };
  linear("attn.q_proj", "attn.q_proj.out", g.h, {g.a, g.d}, k.qkv_bias);
  linear("attn.k_proj", "attn.k_proj.out", g.h, {g.kv, g.d}, k.qkv_bias);
  linear("attn.v_proj", "attn.v_proj.out", g.h, {g.kv, g.dv}, k.qkv_bias);
  if (g.flash) {
    // _scaled_dot_product_flash_attention's outputs: the attention output and the fp32
    // log-sum-exp [b, a, s] (its philox seed and offset are scalars, not counted).
    OpOutput op;
    op.id = "attn.sdpa";
    op.aten = "aten._scaled_dot_product_flash_attention";
    RecordBuilder rb(&op.outputs, &ck);
    rb.add("attn.sdpa.out", {g.b, g.s_tp, g.a, g.dv}, g.act, "recompute (op saved by the policy)",
           "the attention output, reused by the recompute", kSac);
    rb.add("attn.sdpa.lse", {g.b, g.a, g.s_tp}, DType::kFp32, "recompute (op saved by the policy)",
           "the softmax statistics flash attention's backward reads", kSac);
    op.flops = 0;  // the attention core's (layer_costs takes it from the layer's FLOPs)
    op.torchtitan_saves = true;
    inv.ops.push_back(std::move(op));
  }
  const Dim qd{"a·dv", g.a.value * g.dv.value};
  linear("attn.o_proj", "attn.o_proj.out", qd, {g.h}, k.o_bias);
  if (is_gated(k.ffn)) {
    linear("mlp.gate_proj", "mlp.gate_proj.out", g.h, {g.f}, k.mlp_bias);
    linear("mlp.up_proj", "mlp.up_proj.out", g.h, {g.f}, k.mlp_bias);
    linear("mlp.down_proj", "mlp.down_proj.out", g.f, {g.h}, k.mlp_bias);
    // Under torch.compile the partitioner saves what the backward reads, and nothing reads the
    // block's last linear's output (only the residual add takes it): a policy's MUST_SAVE of it
    // keeps nothing, and nothing recomputes it (measured: tests/reference/
    // compile_sac_saved.json, torchtitan's op policy under inductor's partitioner, torch 2.6).
    if (g.compiled) inv.ops.back().outputs.clear();
  } else {
    linear("mlp.fc1", "mlp.fc1.out", g.h, {g.f}, k.mlp_bias);
    linear("mlp.fc2", "mlp.fc2.out", g.f, {g.h}, k.mlp_bias);
  }
}

}  // namespace detail

}  // namespace actmem

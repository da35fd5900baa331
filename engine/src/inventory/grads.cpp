// The gradient buffers alive during one layer's backward, step by step: the backward working set
// the timeline adds on top of the kept activations (see docs/formulas.md, "Backward working set").
//
// The model is a layer-wise backward that frees every gradient right after its last reader and
// folds each norm's input gradient into the residual gradient in place (the order
// engine/validate/layer_backward.cpp executes; its tracking allocator checks this file). dY is the
// gradient of the layer output; it becomes dX when the first norm's backward adds into it.
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {
constexpr const char* kSrc =
    "layer-wise backward, each gradient freed after its last reader (engine/validate executor)";

// One gradient buffer: its name, shape, and whether it is fp32 whatever the activation dtype.
struct Buf {
  const char* id;
  Shape shape;
  bool fp32 = false;
};
// One step: its name and the gradient buffers alive while it runs.
struct Step {
  const char* at;
  std::vector<Buf> bufs;
};
}  // namespace

std::vector<GradPhase> build_backward_grads(const ModelSpec& m, const LayerKind& k,
                                            const LayerGeometry& g, Checked& ck) {
  const DType p = g.act;
  const bool hd = g.hidden_dropout;  // d_*_dropout buffers exist only with hidden dropout
  const bool glu = is_gated(k.ffn);
  const Dim two{"2", 2};
  std::vector<Step> steps;
  // MLP block, top down.
  if (!k.has_ffn) {
    // A mixer-only layer (Nemotron-H's 'M' and '*'): nothing before the mixer's backward.
  } else if (k.is_moe()) {
    // Routed experts: the combine gradient, then each expert's GEMMs over its token rows.
    steps.push_back({"moe.expert dgrad",
                     {{"dY", {g.b, g.s_rep, g.h}},
                      {"d_expert_out", {g.expert_tokens, g.h}},
                      {"d_expert_act", {g.expert_tokens, glu ? two : Dim{"1", 1}, g.expert_f}},
                      {"d_expert_in", {g.expert_tokens, g.h}}}});
  } else {
    steps.push_back({"mlp.fc2 dgrad",
                     {{"dY", {g.b, g.s_rep, g.h}},
                      {"d_mlp_dropout", {g.b, g.s_rep, g.h}},
                      {"d_fc2_in", {g.b, g.s_tp, g.f}}}});
    if (glu)
      steps.push_back({"mlp.glu bwd",
                       {{"dY", {g.b, g.s_rep, g.h}},
                        {"d_fc2_in", {g.b, g.s_tp, g.f}},
                        {"d_act_in", {g.b, g.s_tp, two, g.f}}}});
    steps.push_back({"mlp.fc1 dgrad",
                     {{"dY", {g.b, g.s_rep, g.h}},
                      {"d_act_in", {g.b, g.s_tp, glu ? two : Dim{"1", 1}, g.f}},
                      {"d_fc1_in", {g.b, g.s_tp, g.h}}}});
  }
  if (k.is_mamba()) {
    // Mamba-2 mixer, top down: out_proj's input gradient, the fused norm/scan/conv backward that
    // produces the gradient of in_proj's whole output (dzxbcdt, as mamba_ssm's
    // MambaSplitConv1dScanCombinedFn.backward returns it), then in_proj's input gradient.
    steps.push_back({"mamba.out_proj dgrad",
                     {{"dY", {g.b, g.s_rep, g.h}}, {"d_out_proj_in", {g.b, g.s_tp, g.mi}}}});
    steps.push_back({"mamba.scan bwd",
                     {{"dY", {g.b, g.s_rep, g.h}},
                      {"d_out_proj_in", {g.b, g.s_tp, g.mi}},
                      {"d_in_proj_out", {g.b, g.s_tp, g.min}}}});
    steps.push_back({"mamba.in_proj dgrad",
                     {{"dY", {g.b, g.s_rep, g.h}},
                      {"d_in_proj_out", {g.b, g.s_tp, g.min}},
                      {"d_in_proj_in", {g.b, g.s_tp, g.h}}}});
  }
  // Attention block.
  const std::size_t first_attn = steps.size();
  if (k.has_attention()) {
    steps.push_back({"attn.proj dgrad",
                     {{"dY", {g.b, g.s_rep, g.h}},
                      {"d_proj_dropout", {g.b, g.s_rep, g.h}},
                      {"d_ctx", {g.b, g.s_tp, g.a, g.dv}}}});
    if (g.flash) {
      // FlashAttention-2 backward (Dao 2023, Alg. 2): D = rowsum(dO * O) in fp32, dQ, dK, dV at
      // once.
      steps.push_back({"attn.flash bwd",
                       {{"dY", {g.b, g.s_rep, g.h}},
                        {"d_ctx", {g.b, g.s_tp, g.a, g.dv}},
                        {"flash.D", {g.b, g.a, g.s_tp}, true},
                        {"dq", {g.b, g.s_tp, g.a, g.d}},
                        {"dk", {g.b, g.s_tp, g.kv, g.d}},
                        {"dv", {g.b, g.s_tp, g.kv, g.dv}}}});
      steps.push_back({"attn.qkv dgrad",
                       {{"dY", {g.b, g.s_rep, g.h}},
                        {"dq", {g.b, g.s_tp, g.a, g.d}},
                        {"dk", {g.b, g.s_tp, g.kv, g.d}},
                        {"dv", {g.b, g.s_tp, g.kv, g.dv}},
                        {"d_qkv_in", {g.b, g.s_tp, g.h}}}});
    } else {
      const Dim s = g.s_keys;
      steps.push_back({"attn.dP dV",
                       {{"dY", {g.b, g.s_rep, g.h}},
                        {"d_ctx", {g.b, g.s_tp, g.a, g.dv}},
                        {"d_probs", {g.b, g.a, g.s_tp, s}},
                        {"dv", {g.b, g.s_tp, g.kv, g.dv}}}});
      steps.push_back({"attn.v dgrad",
                       {{"dY", {g.b, g.s_rep, g.h}},
                        {"d_probs", {g.b, g.a, g.s_tp, s}},
                        {"dv", {g.b, g.s_tp, g.kv, g.dv}},
                        {"d_qkv_in", {g.b, g.s_tp, g.h}}}});
      steps.push_back({"attn.dQ",
                       {{"dY", {g.b, g.s_rep, g.h}},
                        {"d_scores", {g.b, g.a, g.s_tp, s}},
                        {"d_qkv_in", {g.b, g.s_tp, g.h}},
                        {"dq", {g.b, g.s_tp, g.a, g.d}}}});
      steps.push_back({"attn.dK",
                       {{"dY", {g.b, g.s_rep, g.h}},
                        {"d_scores", {g.b, g.a, g.s_tp, s}},
                        {"d_qkv_in", {g.b, g.s_tp, g.h}},
                        {"dk", {g.b, g.s_tp, g.kv, g.d}}}});
    }
    if (k.is_mla()) {
      // MLA: the up projections' backward turns dq, dk, dv into the latents' gradients while those
      // are still alive (not executed by the executor, which refuses MLA; like the MoE step).
      Step st{"attn.latent dgrad",
              {{"dY", {g.b, g.s_rep, g.h}},
               {"dq", {g.b, g.s_tp, g.a, g.d}},
               {"dk", {g.b, g.s_tp, g.kv, g.d}},
               {"dv", {g.b, g.s_tp, g.kv, g.dv}},
               {"d_kv_latent", {g.b, g.s_tp, g.rkv}}}};
      if (g.rq.value > 0) st.bufs.push_back({"d_q_latent", {g.b, g.s_tp, g.rq}});
      steps.push_back(st);
    }
  }
  // A parallel block's branches both start from the output gradient: the MLP branch's input
  // gradient cannot be folded into dY while the attention branch still reads it, so the residual
  // gradient dX is its own buffer through the attention backward; with dropout both branches read
  // the one dropout's gradient (d_mlp_dropout), which stays alive too.
  if (m.block != BlockLayout::kSequential)
    for (std::size_t i = first_attn; i < steps.size(); ++i) {
      std::vector<Buf>& bufs = steps[i].bufs;
      for (Buf& b : bufs)
        if (std::string(b.id) == "d_proj_dropout") b.id = "d_mlp_dropout";
      bufs.push_back({"dX", {g.b, g.s_rep, g.h}});
    }
  std::vector<GradPhase> out;
  for (const Step& st : steps) {
    GradPhase ph;
    ph.at = st.at;
    RecordBuilder rb(&ph.buffers, &ck);
    for (const Buf& b : st.bufs) {
      // Without hidden dropout the residual branch's gradient is dY itself: no buffer.
      const std::string id = b.id;
      if (!hd && (id == "d_mlp_dropout" || id == "d_proj_dropout")) continue;
      const TensorRecord& r = rb.add(b.id, b.shape, b.fp32 ? DType::kFp32 : p, "", "", kSrc);
      ph.bytes = ck.add(ph.bytes, r.bytes, "timeline.bwd.layer_grads");
    }
    out.push_back(std::move(ph));
  }
  return out;
}

}  // namespace actmem::detail

// The `hf` profile's sparse MLP for the families measured in transformers 5.17 (Qwen3-MoE,
// DeepSeek-V2, DeepSeek-V3, gpt-oss): the family's router, then the grouped-experts
// implementation every one of them shares (integrations/moe.py grouped_mm_experts_forward: tokens
// sorted by expert, gate and up as one GEMM, the weighted combine). Measured:
// tests/reference/gpu/hf_layers.json (qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss rows).
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {
constexpr const char* kRouterDeepseekV2Groups =
    "transformers modeling_deepseek_v2.py (commit 0233e509) DeepseekV2Moe group_limited_greedy, "
    "by PyTorch derivatives.yaml (max.dim, topk, masked_fill); derived, not measured";
constexpr const char* kRouterQwen =
    "transformers 5.17 modeling_qwen3_moe.py (softmax router in fp32, top-k, norm_topk_prob); "
    "measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kRouterDeepseek =
    "transformers 5.17 modeling_deepseek_v3.py / modeling_deepseek_v2.py (router on fp32 copies "
    "of its input and weight); measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kRouterGptOss =
    "transformers 5.17 modeling_gpt_oss.py GptOssTopKRouter (linear with bias, top-k of the "
    "logits, softmax over the k in the activation dtype); measured: "
    "tests/reference/gpu/hf_layers.json";
constexpr const char* kGateGptOss =
    "transformers 5.17 modeling_gpt_oss.py GptOssExperts._apply_gate (gate and up interleaved, "
    "clamped at swiglu_limit, gate * sigmoid(1.702 gate) * (up + 1)); measured: "
    "tests/reference/gpu/hf_layers.json";
constexpr const char* kRouterPhimoe =
    "transformers 5.17 modeling_phimoe.py sparsemixer / MultiplierProcessor (two selections); "
    "measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kLlama4Moe =
    "transformers 5.17 modeling_llama4.py Llama4TextMoe / Llama4Router / Llama4TextExperts "
    "(every expert runs every token, scaled by its sigmoid score); measured: "
    "tests/reference/gpu/hf_layers.json";
constexpr const char* kExperts =
    "transformers 5.17 grouped experts (tokens sorted by expert, gate_up as one GEMM, weighted "
    "index_add); measured: tests/reference/gpu/hf_layers.json";
}  // namespace

namespace {

// GptOssTopKRouter: F.linear(x, weight, bias) keeps its input; topk over the logits keeps the
// indices; softmax over the k values (their dtype) keeps its output, scattered into a dense
// (tokens, experts) score matrix the experts read.
void add_gpt_oss_router(const ModelSpec& m, const LayerGeometry& g, const Dim& K,
                        RecordBuilder& rb) {
  const Dim T = g.s_rep;
  if (m.block != BlockLayout::kParallel)
    rb.add("moe.router_in", {g.b, T, g.h}, g.act, "router linear backward",
           "weight gradient needs the normalized tokens", kRouterGptOss);
  rb.add("moe.topk_idx", {g.b, T, K}, DType::kInt64, "topk / scatter backward",
         "the chosen experts' indices", kRouterGptOss);
  rb.add("moe.topk_probs", {g.b, T, K}, g.act, "softmax backward",
         "the softmax over the k chosen logits keeps its output", kRouterGptOss);
}

// PhimoeSparseMoeBlock (sparsemixer, top-2 only): the gate's input, then for each of the two
// selections the mask of experts within the jitter threshold (masked_fill), the argmax of the
// noisy scores (max backward), the softmax over the masked scores, the chosen expert (gather and
// MultiplierProcessor keep it) and its multiplier (MultiplierProcessor keeps it). With
// input_jitter_noise the input is first scaled in place by uniform noise, which mul_ keeps.
void add_phimoe_router(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                       RecordBuilder& rb) {
  const Dim T = g.s_rep;
  const Dim E = g.experts;
  if (k.moe.input_jitter)
    rb.add("moe.input_jitter", {g.b, T, g.h}, g.act, "mul_ backward",
           "the uniform noise the input was scaled by", kRouterPhimoe);
  if (m.block != BlockLayout::kParallel)
    rb.add("moe.router_in", {g.b, T, g.h}, g.act, "router linear backward",
           "weight gradient needs the tokens", kRouterPhimoe);
  const Dim two{"2", 2};  // sparsemixer's two selections, each keeping the same five tensors
  rb.add("moe.select_mask", {two, g.b, T, E}, DType::kBool, "masked_fill backward",
         "the experts outside each selection's jitter threshold", kRouterPhimoe);
  rb.add("moe.select_argmax", {two, g.b, T}, DType::kInt64, "max backward",
         "the argmax of the scores minus exponential noise", kRouterPhimoe);
  rb.add("moe.select_probs", {two, g.b, T, E}, g.act, "softmax / MultiplierProcessor backward",
         "the softmax over the masked scores", kRouterPhimoe);
  rb.add("moe.select_idx", {two, g.b, T}, DType::kInt64, "gather / scatter backward",
         "the chosen expert", kRouterPhimoe);
  rb.add("moe.select_weight", {two, g.b, T}, g.act, "MultiplierProcessor backward",
         "the chosen expert's probability, the multiplier", kRouterPhimoe);
}

// The grouped experts transformers 5.17 runs over the routed token copies (Tk = expert_tokens;
// integrations/moe.py grouped_mm_experts_forward): the sort and scatter indices, the copies'
// rows, the activation's tensors, the down GEMM's input, each copy's routing weight and output.
// `gpt_oss`: the router hands over a dense score matrix, gathered by (token, expert), so one more
// index vector is kept, and the activation is gpt-oss's clamped SwiGLU (_apply_gate) with biases
// on both projections; else act(gate) * up.
void add_grouped_experts(const LayerGeometry& g, RecordBuilder& rb, bool gpt_oss, DType combine) {
  const DType p = g.act;
  const Dim Tk = g.expert_tokens;
  rb.add("moe.sort_idx", {Tk, Dim{"2", 2}}, DType::kInt64, "index backward",
         "the token order by expert and its inverse", kExperts);
  if (gpt_oss)
    rb.add("moe.score_gather_idx", {Tk}, DType::kInt64, "index backward",
           "each copy's expert, the column that gathers its weight from the dense scores",
           kExperts);
  rb.add("moe.sort_mask", {Tk}, DType::kBool, "masked ops backward", "one flag per routed copy",
         kExperts);
  rb.add("moe.expert_counts", {g.experts}, DType::kInt32, "grouped GEMM backward",
         "tokens per expert, the group sizes", kExperts);
  rb.add("moe.expert_in", {Tk, g.h}, p, "gate_up GEMM backward",
         "the gathered rows each expert multiplies", kExperts);
  if (gpt_oss) {
    // gate_up + bias is one (copies, 2f) tensor; both clamps keep it (gate and up are its
    // strided halves). Then sigmoid's output, the clamped gate and the sigmoid for their
    // product, up + 1 and the GLU for theirs: with the down GEMM's input, five f-wide tensors.
    rb.add("moe.gate_up", {Tk, Dim{"2", 2}, g.expert_f}, p, "clamp backward",
           "gate_up + bias, read by both clamps' backward", kGateGptOss);
    rb.add("moe.gate_sigmoid", {Tk, g.expert_f}, p, "sigmoid / mul backward",
           "sigmoid(1.702 gate): its own backward and the product's", kGateGptOss);
    rb.add("moe.gate_clamped", {Tk, g.expert_f}, p, "mul backward",
           "the clamped gate, the product's other factor", kGateGptOss);
    rb.add("moe.up_plus_one", {Tk, g.expert_f}, p, "mul backward",
           "up + 1, a factor of the gated output", kGateGptOss);
    rb.add("moe.glu", {Tk, g.expert_f}, p, "mul backward",
           "gate * sigmoid(1.702 gate), the other factor", kGateGptOss);
  } else {
    rb.add("moe.gate_up", {Tk, Dim{"2", 2}, g.expert_f}, p, "act(gate) * up backward",
           "gate and up, one storage (the activation reads gate, the product up)", kExperts);
    rb.add("moe.act_out", {Tk, g.expert_f}, p, "mul backward", "act(gate), the product's factor",
           kExperts);
  }
  rb.add("moe.fc2_in", {Tk, g.expert_f}, p, "down GEMM backward",
         gpt_oss ? "the gated output" : "act(gate) * up", kExperts);
  rb.add("moe.combine_weight", {Tk}, combine, "weighted combine backward",
         gpt_oss ? "each copy's routing weight (the router's dtype)" : "each copy's routing weight",
         kExperts);
  rb.add("moe.expert_out", {Tk, g.h}, p, "weighted combine backward",
         gpt_oss ? "the weight gradient needs each copy's output (down + bias)"
                 : "the weight gradient needs each copy's output",
         kExperts);
  rb.add("moe.scatter_idx", {Tk}, DType::kInt64, "index_add backward", "where each copy returns",
         kExperts);
}

// A shared expert run as Llama's SwiGLU MLP beside the routed ones (DeepseekV3MoE's shared
// experts, Llama4TextMoe's shared_expert): gate, act(gate), up and their product.
void add_shared_swiglu(const LayerGeometry& g, RecordBuilder& rb, const char* src) {
  const DType p = g.act;
  rb.add("moe.shared_gate", {g.b, g.s_tp, g.shared_f}, p, "silu backward",
         "the activation's derivative needs its input", src);
  rb.add("moe.shared_act_out", {g.b, g.s_tp, g.shared_f}, p, "mul backward",
         "act(gate) * up keeps both factors", src);
  rb.add("moe.shared_up", {g.b, g.s_tp, g.shared_f}, p, "mul backward",
         "act(gate) * up keeps both factors", src);
  rb.add("moe.shared_fc2_in", {g.b, g.s_tp, g.shared_f}, p, "down linear backward",
         "weight gradient needs its input", src);
}

// gpt-oss: its router, then the grouped experts with biases and the clamped SwiGLU.
void build_hf_gpt_oss_moe(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                          RecordBuilder& rb) {
  add_gpt_oss_router(m, g, Dim{"k", k.moe.top_k}, rb);
  // The router's softmax runs in the activation dtype: so do the combine weights.
  add_grouped_experts(g, rb, true, g.act);
}

// Llama 4: the router keeps its input, the top-k indices and the fp32 sigmoid of the scattered
// scores; the experts run on every token (hidden_states.repeat(E, 1) scaled by each expert's
// score, zero where unrouted) as one batched GEMM, so each tensor has E x b x s rows, not
// k x b x s; one shared expert (Llama4TextMLP) runs beside them.
void build_hf_llama4_moe(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                         RecordBuilder& rb) {
  const DType p = g.act;
  const Dim T = g.s_rep;
  const Dim E = g.experts;
  const Dim K{"k", k.moe.top_k};
  if (m.block != BlockLayout::kParallel)
    rb.add("moe.router_in", {g.b, T, g.h}, p, "router linear backward",
           "weight gradient needs the normalized tokens", kLlama4Moe);
  rb.add("moe.topk_idx", {g.b, T, K}, DType::kInt64, "topk / scatter backward",
         "the chosen experts' indices", kLlama4Moe);
  rb.add("moe.router_probs", {g.b, T, E}, DType::kFp32, "sigmoid backward",
         "sigmoid(scores.float()) keeps its fp32 output", kLlama4Moe);
  rb.add("moe.dispatch_weight", {E, g.b, T}, p, "mul backward",
         "each expert's score for every token, the repeated input's factor", kLlama4Moe);
  rb.add("moe.dispatch_in", {E, g.b, T, g.h}, p, "mul backward",
         "the input repeated once per expert, the scores' factor", kLlama4Moe);
  rb.add("moe.expert_in", {E, g.b, T, g.h}, p, "gate_up bmm backward",
         "the score-scaled copies every expert multiplies", kLlama4Moe);
  rb.add("moe.gate_up", {E, g.b, T, Dim{"2", 2}, g.expert_f}, p, "act(gate) * up backward",
         "gate and up, one storage", kLlama4Moe);
  rb.add("moe.act_out", {E, g.b, T, g.expert_f}, p, "mul backward",
         "act(gate), the product's factor", kLlama4Moe);
  rb.add("moe.fc2_in", {E, g.b, T, g.expert_f}, p, "down bmm backward", "act(gate) * up",
         kLlama4Moe);
  add_shared_swiglu(g, rb, kLlama4Moe);
}

}  // namespace

void build_hf_moe(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                  RecordBuilder& rb) {
  const DType p = g.act;
  const MoeSpec& e = k.moe;
  if (e.hf_block == HfMoe::kGptOss) {
    build_hf_gpt_oss_moe(m, k, g, rb);
    return;
  }
  if (e.hf_block == HfMoe::kLlama4) {
    build_hf_llama4_moe(m, k, g, rb);
    return;
  }
  const bool deepseek = e.hf_block == HfMoe::kDeepseekV2 || e.hf_block == HfMoe::kDeepseekV3;
  const Dim T = g.s_rep;  // tokens per sequence; every record below also carries b
  const Dim E = g.experts;
  const Dim K{"k", e.top_k};
  const char* src = deepseek ? kRouterDeepseek : kRouterQwen;
  // The MLP's bf16 input: saved by the router's linear (Qwen3-MoE) or, where the router works on
  // an fp32 copy, by the shared experts' first linear (DeepSeek); with neither nothing keeps it
  // (the experts gather their rows by index).
  if (e.hf_block == HfMoe::kPhimoe) {
    add_phimoe_router(m, k, g, rb);
  } else {
    // DeepSeek's router reads x.float() with weight.float(): in fp32 both return themselves, so
    // the router keeps the tokens the shared experts keep (one storage) and no weight copy.
    const bool fp32_router = deepseek && p == DType::kFp32;
    const bool keeps_input = !deepseek || e.shared_experts > 0 || fp32_router;
    if (keeps_input && m.block != BlockLayout::kParallel)
      rb.add(
          "moe.router_in", {g.b, T, g.h}, p,
          deepseek ? "shared experts' first linear and router backward" : "router linear backward",
          "weight gradient needs the normalized tokens", src);
    if (deepseek && !fp32_router) {
      rb.add("moe.router_weight_fp32", {E, g.h}, DType::kFp32, "router linear backward",
             "F.linear(x.float(), weight.float()): the fp32 weight copy, made each forward", src);
      rb.add("moe.router_in_fp32", {g.b, T, g.h}, DType::kFp32, "router linear backward",
             "the fp32 copy of the tokens the weight gradient reads", src);
    }
    rb.add("moe.router_probs", {g.b, T, E}, DType::kFp32,
           e.hf_block == HfMoe::kDeepseekV3 ? "sigmoid backward" : "softmax backward",
           "the scores' backward needs its output", src);
    if (e.hf_block == HfMoe::kDeepseekV3) {
      // Group-limited routing: top-2 scores per group (their indices), the kept groups' indices,
      // and the mask that removes the other groups' experts.
      rb.add("moe.group_top2_idx", {g.b, T, Dim{"n_group", e.groups}, Dim{"2", 2}}, DType::kInt64,
             "topk backward", "each group's top-2 indices", src);
      rb.add("moe.group_idx", {g.b, T, Dim{"topk_group", e.topk_groups}}, DType::kInt64,
             "topk backward", "the kept groups' indices", src);
      rb.add("moe.group_mask", {g.b, T, E}, DType::kBool, "masked_fill backward",
             "which experts the kept groups allow", src);
    }
    if (e.group_limited_greedy) {
      // DeepSeek-V2's group_limited_greedy (transformers modeling_deepseek_v2.py @ 0233e509,
      // DeepseekV2Moe.route_tokens_to_experts; derived from derivatives.yaml, not measured):
      // each group's max keeps its argmax, topk over the groups its indices, and masked_fill
      // the inverted expert mask.
      rb.add("moe.group_max_idx", {g.b, T, Dim{"n_group", e.groups}}, DType::kInt64,
             "max(dim=-1) backward", "each group's best expert", kRouterDeepseekV2Groups);
      rb.add("moe.group_idx", {g.b, T, Dim{"topk_group", e.topk_groups}}, DType::kInt64,
             "topk backward", "the kept groups' indices", kRouterDeepseekV2Groups);
      rb.add("moe.group_mask", {g.b, T, E}, DType::kBool, "masked_fill backward",
             "which experts the kept groups allow", kRouterDeepseekV2Groups);
    }
    rb.add("moe.topk_idx", {g.b, T, K}, DType::kInt64, "topk / gather backward",
           "the chosen experts' indices", src);
    if (e.norm_topk) {
      rb.add("moe.topk_sum", {g.b, T}, DType::kFp32, "div backward",
             "the top-k weights' sum, the renormalization's divisor", src);
      rb.add("moe.topk_weights", {g.b, T, K}, DType::kFp32, "div backward",
             "the top-k weights before renormalization", src);
    }
  }
  add_grouped_experts(g, rb, false, deepseek ? DType::kFp32 : p);
  // The shared experts are one SwiGLU MLP of n_shared x moe_intermediate_size (DeepseekV3MoE).
  if (e.shared_experts > 0) add_shared_swiglu(g, rb, kRouterDeepseek);
}

}  // namespace actmem::detail

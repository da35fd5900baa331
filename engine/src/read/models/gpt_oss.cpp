// Reads what gpt-oss config.json files add to the Llama names (transformers 5.17
// configuration_gpt_oss.py, modeling_gpt_oss.py): attention sinks and biases on every projection,
// a router with a bias, experts with biases and their clamped SwiGLU, and the sliding/full layer
// pattern.
#include "read/models/gpt_oss.hpp"

#include "actmem/core/limits.hpp"
#include "read/json_read.hpp"

namespace actmem::detail {

bool is_gpt_oss_key(const std::string& k) {
  // experts_per_token: OpenAI's name for num_experts_per_tok (both in the Hub's file);
  // swiglu_limit: the experts' clamp (no tensor changes size); initial_context_length: the
  // YaRN base length (rope_scaling holds it too).
  static const char* const kKeys[] = {"experts_per_token", "swiglu_limit",
                                      "initial_context_length"};
  return listed(kKeys, k);
}

std::optional<Error> read_gpt_oss(const json& j, ModelSpec* m) {
  LayerKind& b = m->kinds[0];
  // GptOssExperts: gate_up_proj and down_proj with their biases for every expert, the
  // activation written out (gate * sigmoid(1.702 gate), clamped, times up + 1); hidden_act is not
  // read by the experts, so a value other than the class's default would be ignored.
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    return refuse_value(j, "hidden_act",
                        "is not read by gpt-oss's experts (their gate is x * sigmoid(1.702 x), "
                        "clamped at swiglu_limit); allowed: \"silu\"");
  if (j.contains("mlp_bias"))
    return refuse_value(j, "mlp_bias",
                        "is not a gpt-oss key: its experts always carry biases; remove it");
  if (j.contains("attn_sinks") && j["attn_sinks"] != true)
    return refuse_value(j, "attn_sinks", "gpt-oss's attention always has sinks; allowed: true");
  // GptOssConfig's attribute_map reads num_experts as num_local_experts (the shared expert
  // reader takes either and refuses two that disagree).
  if (!j.contains("num_local_experts") && !j.contains("num_experts"))
    return make_error("missing_key", "model.num_local_experts",
                      "model.num_local_experts: required for model_type gpt_oss (GptOssConfig's "
                      "default is 128)");
  for (const char* k :
       {"moe_intermediate_size", "num_shared_experts", "shared_expert_intermediate_size"})
    if (j.contains(k))
      return refuse_value(j, k,
                          "is not a gpt-oss key: each expert is intermediate_size wide and none "
                          "is shared; remove it");
  if (!j.contains("num_experts_per_tok"))
    return make_error("missing_key", "model.num_experts_per_tok",
                      "model.num_experts_per_tok: required for model_type gpt_oss (the router "
                      "reads it; experts_per_token is OpenAI's name for the same number)");
  if (j.contains("experts_per_token") && j["experts_per_token"] != j["num_experts_per_tok"])
    return refuse_value(
        j, "experts_per_token",
        "conflicts with model.num_experts_per_tok: " + short_dump(j["num_experts_per_tok"]) +
            " (transformers reads num_experts_per_tok); give one value");
  if (j.contains("swiglu_limit")) {
    double limit = 0.0;
    ACTMEM_TRY(read_double(j["swiglu_limit"], "model.swiglu_limit", &limit));
    if (!(limit > 0.0)) return refuse_value(j, "swiglu_limit", "must be a positive clamp");
  }
  if (j.contains("initial_context_length")) {
    std::uint64_t n = 0;
    ACTMEM_TRY(read_uint(j["initial_context_length"], "model.initial_context_length", &n));
  }
  // layer_types and sliding_window: read_sliding_layers (read/models/model.cpp).
  m->hf_modules = HfModules::kGptOss;
  b.attn_sinks = true;
  b.mlp_bias = true;
  MoeSpec& e = b.moe;
  e.router_bias = true;
  e.hf_block = HfMoe::kGptOss;
  // The router's softmax runs over the top-k logits: the weights are normalized over the chosen
  // experts already (GptOssTopKRouter).
  e.norm_topk = false;
  return std::nullopt;
}

}  // namespace actmem::detail

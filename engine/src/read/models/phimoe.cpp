// Reads what PhiMoE config.json files (Phi-3.5-MoE) add to the Llama names (transformers 5.17
// configuration_phimoe.py, modeling_phimoe.py): LayerNorm norms with biases, sparsemixer routing
// (top-2 only), the input jitter, and the lm_head bias.
#include "read/models/phimoe.hpp"

#include "read/json_read.hpp"

namespace actmem::detail {

bool is_phimoe_key(const std::string& k) {
  // router_jitter_noise is sparsemixer's threshold (no tensor changes size).
  static const char* const kKeys[] = {"lm_head_bias", "input_jitter_noise", "router_jitter_noise"};
  return listed(kKeys, k);
}

std::optional<Error> read_phimoe(const json& j, ModelSpec* m) {
  LayerKind& b = m->kinds[0];
  if (!j.contains("num_local_experts"))
    return make_error("missing_key", "model.num_local_experts",
                      "model.num_local_experts: required for model_type phimoe (PhimoeConfig's "
                      "default is 16)");
  for (const char* k : {"num_experts", "moe_intermediate_size", "num_shared_experts",
                        "shared_expert_intermediate_size", "mlp_bias"})
    if (j.contains(k))
      return refuse_value(j, k,
                          "is not a PhiMoE key (its experts are intermediate_size wide, unbiased, "
                          "none shared); remove it");
  // sparsemixer selects exactly two experts (modeling_phimoe.py raises otherwise).
  if (j.contains("num_experts_per_tok") && j["num_experts_per_tok"] != 2)
    return refuse_value(j, "num_experts_per_tok",
                        "is not supported by PhiMoE's sparsemixer router; allowed: 2");
  if (j.contains("lm_head_bias"))
    ACTMEM_TRY(read_bool(j["lm_head_bias"], "model.lm_head_bias", &m->lm_head_bias));
  for (const char* k : {"input_jitter_noise", "router_jitter_noise"}) {
    if (!j.contains(k)) continue;
    double v = 0.0;
    ACTMEM_TRY(read_double(j[k], std::string("model.") + k, &v));
    if (!(v >= 0.0 && v < 1.0)) return refuse_value(j, k, "must be in [0, 1)");
    if (std::string(k) == "input_jitter_noise") b.moe.input_jitter = v > 0.0;
  }
  // PhimoeDecoderLayer and PhimoeModel normalize with nn.LayerNorm (weight and bias).
  if (j.contains("norm_type") && j["norm_type"] != "layernorm")
    return refuse_value(j, "norm_type", "PhiMoE's norms are LayerNorms; allowed: \"layernorm\"");
  if (m->gemma_norm)
    return refuse_value(j, "gemma_norm",
                        "is Gemma's RMSNorm; PhiMoE's norms are LayerNorms (allowed: false)");
  m->norm = NormType::kLayerNorm;
  m->hf_modules = HfModules::kPhimoe;
  b.moe.hf_block = HfMoe::kPhimoe;
  return std::nullopt;
}

}  // namespace actmem::detail

// The Hugging Face families read, one row each (families.hpp): each row's values are its config
// class's defaults in transformers 5.17 (configuration_<family>.py) where they differ from
// LlamaConfig's, and the reader of what the family adds (its own file beside this one).
#include "read/models/families.hpp"

#include "read/models/deepseek.hpp"
#include "read/models/falcon.hpp"
#include "read/models/gpt_oss.hpp"
#include "read/models/llama4.hpp"
#include "read/models/mamba.hpp"
#include "read/models/phimoe.hpp"

namespace actmem::detail {

namespace {

using nlohmann::json;

std::optional<Error> whole_falcon(const json& j, const std::string&, ModelSpec* m,
                                  std::vector<std::string>* warnings) {
  return read_falcon(j, m, warnings);
}
std::optional<Error> extra_gpt_oss(const json& j, const std::string&, ModelSpec* m) {
  return read_gpt_oss(j, m);
}
std::optional<Error> extra_phimoe(const json& j, const std::string&, ModelSpec* m) {
  return read_phimoe(j, m);
}
std::optional<Error> stack_llama4(const json& j, const std::string&, ModelSpec* m) {
  return read_llama4(j, m);
}

// num_local_experts first: DeepSeek-V3 refuses the rest (DeepseekV3Config.attribute_map reads
// num_local_experts as n_routed_experts), DeepSeek-V2 all.
const char* const kDeepseekRefused[] = {"num_local_experts",
                                        "num_experts",
                                        "capacity_factor",
                                        "num_shared_experts",
                                        "shared_expert_intermediate_size",
                                        "decoder_sparse_step",
                                        "mlp_only_layers",
                                        "layer_kinds",
                                        "layer_stack",
                                        "qk_norm",
                                        "sandwich_norm",
                                        "gemma_norm",
                                        nullptr};
const char* const kDeepseekWhy =
    " (n_routed_experts, n_shared_experts and first_k_dense_replace describe its experts and "
    "stack)";
const char* const kStackKeys[] = {"layer_kinds", "layer_stack", nullptr};
const char* const kLlama4Refused[] = {"layer_kinds", "layer_stack", "decoder_sparse_step",
                                      "mlp_only_layers", nullptr};

// DeepSeek-V3's published checkpoint is FP8 (e4m3 weights, one fp32 scale per 128 x 128 block:
// README_WEIGHTS.md); its logical model is what trains in config.param_dtype.
const char* const kFp8Warning =
    "model.quantization_config: the checkpoint stores FP8 weights with one fp32 scale per weight "
    "block; estimated as the logical model in config.param_dtype (the scales are not parameters)";
// gpt-oss's published checkpoints store the experts' weights as MXFP4 (e2m1 values, two per byte,
// in blocks of 32 with one e8m0 scale byte each; attention, router, embedding and head in bf16:
// its modules_to_not_convert).
const char* const kMxfp4Warning =
    "model.quantization_config: the checkpoint stores the experts' weights as MXFP4 (two 4-bit "
    "values per byte, one scale byte per 32 values); estimated as the logical model in "
    "config.param_dtype (the block scales are not parameters)";

Family deepseek(const char* type) {
  Family f{type};
  f.head_dim_own = true;  // qk_nope_head_dim + qk_rope_head_dim (read_deepseek)
  f.own_key = is_deepseek_key;
  f.own_stack = read_deepseek;
  f.refused_keys = kDeepseekRefused;
  f.refused_why = kDeepseekWhy;
  f.stack = FamilyStack::kOwnExperts;
  return f;
}

Family gemma(const char* type) {
  Family f{type};
  f.gemma = true;
  f.kv_heads_default = 4;
  f.kv_null_is_heads = false;
  f.head_dim = 256;
  return f;
}

std::vector<Family> make_families() {
  std::vector<Family> t;
  Family f{};
  // In the order the messages list them.
  t.push_back(deepseek("deepseek_v2"));
  f = deepseek("deepseek_v3");
  f.refused_keys = kDeepseekRefused + 1;  // all but num_local_experts
  f.quant_method = "fp8";
  f.quant_warning = kFp8Warning;
  t.push_back(f);
  f = Family{"falcon"};
  f.whole = whole_falcon;
  t.push_back(f);
  f = gemma("gemma2");  // Gemma2Config: soft-caps 50 and 30, even layers slide
  f.attn_softcap = 50.0;
  f.final_softcap = 30.0;
  f.sliding = SlidingPattern::kEveryOther;
  t.push_back(f);
  f = gemma("gemma3_text");  // Gemma3TextConfig: no soft-caps, q/k norms, every 6th layer full
  f.qk_norm = true;
  f.sliding = SlidingPattern::kEveryNth;
  t.push_back(f);
  f = Family{"gpt2"};
  f.gpt2_names = true;
  t.push_back(f);
  f = Family{"gpt_oss"};  // GptOssConfig: biased attention, head_dim 64, windows of 128
  f.kv_heads_default = 8;
  f.attention_bias = true;
  f.head_dim = 64;
  f.sliding = SlidingPattern::kEveryOther;
  f.sliding_window = 128;
  f.layer_types_label = "gpt-oss";
  f.quant_method = "mxfp4";
  f.quant_warning = kMxfp4Warning;
  f.own_key = is_gpt_oss_key;
  f.extra = extra_gpt_oss;
  f.refused_keys = kStackKeys;
  f.refused_why = " (every layer is the same sparse layer; layer_types places the sliding windows)";
  f.stack = FamilyStack::kUniform;
  t.push_back(f);
  t.push_back(Family{"llama"});
  f = Family{"llama4_text"};  // Llama4TextConfig: 8 KV heads, head_dim 128, top-1 routing
  f.kv_heads_default = 8;
  f.head_dim = 128;
  f.own_key = is_llama4_key;
  f.own_stack = stack_llama4;
  f.refused_keys = kLlama4Refused;
  f.refused_why =
      " (moe_layers or interleave_moe_layer_step, and no_rope_layers, place its layers)";
  f.experts_key = "num_local_experts";
  f.experts_default = "Llama4TextConfig's default is 16";
  f.top_k_default = 1;
  f.stack = FamilyStack::kOwn;
  t.push_back(f);
  f = Family{"mamba2"};
  f.whole = read_mamba_family;
  t.push_back(f);
  f = Family{"mistral"};  // MistralConfig: 8 KV heads
  f.kv_heads_default = 8;
  t.push_back(f);
  f = Family{"mixtral"};  // MixtralConfig: 8 KV heads
  f.kv_heads_default = 8;
  f.experts_key = "num_local_experts";
  f.experts_default = "MixtralConfig's default is 8";
  f.experts_alias = "num_experts";  // MixtralConfig.attribute_map
  t.push_back(f);
  f = Family{"nemotron_h"};
  f.whole = read_mamba_family;
  t.push_back(f);
  f = Family{"phi3"};
  f.phi3 = true;
  t.push_back(f);
  f = Family{"phimoe"};  // PhimoeConfig: 8 KV heads, sparsemixer top-2
  f.kv_heads_default = 8;
  f.own_key = is_phimoe_key;
  f.extra = extra_phimoe;
  f.refused_keys = kStackKeys;
  f.refused_why = " (every layer is the same sparse layer)";
  f.top_k_default = 2;
  f.stack = FamilyStack::kUniform;
  t.push_back(f);
  f = Family{"qwen2"};  // Qwen2Config: 32 KV heads
  f.qkv_bias = true;
  f.kv_heads_default = 32;
  t.push_back(f);
  // Qwen2MoeConfig: 16 KV heads, 60 experts of 1408, a shared expert of 5632
  f = Family{"qwen2_moe"};
  f.qkv_bias = true;
  f.kv_heads_default = 16;
  f.kv_null_is_heads = false;
  f.experts_key = "num_experts";
  f.experts_default = "Qwen2MoeConfig's default is 60";
  f.moe_width_required = f.shared_width_required = true;
  f.stack = FamilyStack::kSparseStep;
  t.push_back(f);
  f = Family{"qwen3"};  // Qwen3Config: 32 KV heads, q/k norms, head_dim 128
  f.qk_norm = true;
  f.head_dim = 128;
  f.kv_heads_default = 32;
  t.push_back(f);
  // Qwen3MoeConfig: 4 KV heads, 128 experts of 768; it has no head_dim field, so
  // Qwen3MoeAttention's getattr falls back to hidden / heads.
  f = Family{"qwen3_moe"};
  f.qk_norm = true;
  f.kv_heads_default = 4;
  f.kv_null_is_heads = false;
  f.experts_key = "num_experts";
  f.experts_default = "Qwen3MoeConfig's default is 128";
  f.experts_alias = "num_local_experts";  // Qwen3MoeConfig.attribute_map
  f.moe_width_required = true;
  f.qwen3_moe_block = true;
  f.stack = FamilyStack::kSparseStep;
  t.push_back(f);
  f = Family{"RefinedWebModel"};  // Falcon's older remote-code name
  f.whole = whole_falcon;
  t.push_back(f);
  t.push_back(Family{""});  // our schema: Llama's defaults and our explicit keys
  return t;
}

const std::vector<Family>& families() {
  static const std::vector<Family> kFamilies = make_families();
  return kFamilies;
}

}  // namespace

const Family* find_family(const std::string& type) {
  for (const Family& f : families())
    if (type == f.type) return &f;
  return nullptr;
}

const std::vector<const char*>& family_types() {
  static const std::vector<const char*> kTypes = [] {
    std::vector<const char*> v;
    for (const Family& f : families())
      if (*f.type) v.push_back(f.type);
    return v;
  }();
  return kTypes;
}

}  // namespace actmem::detail

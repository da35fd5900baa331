// Internal: the Hugging Face families read, one row each (families.cpp): the model_type, the
// config class's defaults where they differ from LlamaConfig's, the keys the family's own reader
// takes, and which reader builds its layers. model.cpp reads every family through its row, so a
// new family is a reader file and a row, not tests of model_type in the hub.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::detail {

// Where a family's layers come from after the shared Llama-style keys.
enum class FamilyStack : std::uint8_t {
  kLayerStack,  // our schema's layer_kinds / layer_stack (every Llama-style family)
  kSparseStep,  // Qwen-MoE's decoder_sparse_step / mlp_only_layers, or layer_stack
  kUniform,     // every layer one kind (gpt-oss, PhiMoE): layer_kinds / layer_stack refused
  kOwn,         // the family's reader places them after the shared experts (Llama 4)
  kOwnExperts,  // ... and reads the experts too, right after the shared dimensions (DeepSeek)
};

// Sliding-window layers (read_sliding_layers in model.cpp).
enum class SlidingPattern : std::uint8_t {
  kNone,
  kEveryOther,  // Gemma2Config, GptOssConfig: even layers slide
  kEveryNth,    // Gemma3TextConfig: every sliding_window_pattern-th layer full (default 6)
};

using WholeReader = std::optional<Error> (*)(const nlohmann::json& j, const std::string& type,
                                             ModelSpec* m, std::vector<std::string>* warnings);
using OwnReader = std::optional<Error> (*)(const nlohmann::json& j, const std::string& type,
                                           ModelSpec* m);
using KeyFilter = bool (*)(const std::string& key);

struct Family {
  const char* type;  // model_type; "" for our own schema (not listed as a model_type)
  // A family that is not a Llama-style decoder: its reader reads the whole config (after the
  // keys refused for every family and the metadata), and nothing below applies.
  WholeReader whole = nullptr;
  bool gpt2_names = false;    // GPT-2's key names (n_embd, ...), GPT2Config's defaults
  bool phi3 = false;          // Phi3Config: resid/embd_pdrop, RoPE by concatenation
  bool qkv_bias = false;      // Qwen2Attention: q, k, v carry biases
  bool qk_norm = false;       // Qwen3, Gemma 3: RMSNorm over each head of q and k
  bool gemma = false;         // Gemma's RMSNorm, sandwich, GeGLU, tied, scaled embedding
  double attn_softcap = 0.0;  // Gemma2Config's defaults (50, 30)
  double final_softcap = 0.0;
  // num_key_value_heads when the key is absent: the class default (0: num_attention_heads, as
  // LlamaConfig), and whether null means num_attention_heads (the classes that map None so) or is
  // refused (Qwen2MoeConfig, Qwen3MoeConfig, Gemma2Config, Gemma3TextConfig keep None).
  std::uint64_t kv_heads_default = 0;
  bool kv_null_is_heads = true;
  bool attention_bias = false;  // GptOssConfig: attention_bias defaults to True
  std::uint64_t head_dim = 0;   // a class default that is not hidden / heads
  bool head_dim_own = false;    // DeepSeek: nope + rope widths (its reader)
  // A quantized checkpoint read as its logical model: quant_method and the warning said.
  const char* quant_method = nullptr;
  const char* quant_warning = nullptr;
  SlidingPattern sliding = SlidingPattern::kNone;
  std::uint64_t sliding_window = 4096;  // the class's sliding_window default
  const char* layer_types_label = "Gemma";
  // Keys the family's own reader takes (let through the key check), and that reader, run after
  // the shared keys: where the family says so, before the experts (`extra`), or as the stack.
  KeyFilter own_key = nullptr;
  OwnReader extra = nullptr;
  OwnReader own_stack = nullptr;
  // Keys another family's stack or experts are read from, refused when given ("model.KEY: not
  // read for model_type TYPE" and this reason): kOwn, kOwnExperts and kUniform.
  const char* const* refused_keys = nullptr;  // null-terminated
  const char* refused_why = nullptr;
  // Mixture of experts: the key its count must be given by and the class default said.
  const char* experts_key = nullptr;
  const char* experts_alias = nullptr;  // the class's attribute_map name for the same count
  const char* experts_default = nullptr;
  std::uint64_t top_k_default = 0;     // 0: num_experts_per_tok is required
  bool moe_width_required = false;     // Qwen-MoE: moe_intermediate_size has its own default
  bool shared_width_required = false;  // Qwen2-MoE: shared_expert_intermediate_size too
  bool qwen3_moe_block = false;        // transformers' grouped experts (measured), norm_topk_prob
  FamilyStack stack = FamilyStack::kLayerStack;
};

// The row of `type` (our schema's for ""), or null when the type is not read.
const Family* find_family(const std::string& type);

// Every model_type read, in the order the messages list them.
const std::vector<const char*>& family_types();

}  // namespace actmem::detail

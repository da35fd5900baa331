// The architecture of a decoder-only transformer, independent of where it was read from.
#pragma once

#include <cstdint>
#include <string>

namespace actmem {

enum class FfnType { kGelu, kSwiglu, kGeglu };
enum class NormType { kLayerNorm, kRmsNorm };
enum class PosEncoding { kLearned, kRope, kNone };

struct MoeSpec {
  std::uint64_t experts = 0;  // 0: dense model
  std::uint64_t top_k = 0;
  std::uint64_t expert_ffn = 0;         // each routed expert's intermediate width
  std::uint64_t shared_experts = 0;     // always-on experts (DeepSeek/Qwen-MoE style)
  std::uint64_t shared_expert_ffn = 0;  // intermediate width of each shared expert
  double capacity_factor = 0.0;         // 0: dropless (tokens follow top-k routing exactly)
};

struct ModelSpec {
  std::string id;    // preset id or "custom"
  std::string name;  // display name
  std::string source;
  std::uint64_t published_params = 0;  // 0 when unknown
  std::string published_params_source;

  std::uint64_t layers = 0;
  std::uint64_t hidden = 0;
  std::uint64_t heads = 0;
  std::uint64_t kv_heads = 0;
  std::uint64_t head_dim = 0;
  std::uint64_t ffn_hidden = 0;
  std::uint64_t vocab = 0;
  std::uint64_t max_positions = 0;
  FfnType ffn = FfnType::kGelu;
  NormType norm = NormType::kLayerNorm;
  PosEncoding pos = PosEncoding::kLearned;
  bool tied_embeddings = false;
  bool qkv_bias = false;           // Qwen2, GPT-2
  bool o_bias = false;             // attention output projection bias (GPT-2, Llama attention_bias)
  bool mlp_bias = false;           // MLP biases (GPT-2, Llama mlp_bias)
  double attention_dropout = 0.0;  // defaults from the model card; the config may override
  double hidden_dropout = 0.0;
  MoeSpec moe;

  bool is_moe() const { return moe.experts > 0; }
};

const char* ffn_name(FfnType f);
const char* norm_name(NormType n);
const char* pos_name(PosEncoding p);

}  // namespace actmem

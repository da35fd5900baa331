// Reads Mamba-2 (model_type "mamba2": a stack of Mamba-2 mixer layers) and Nemotron-H
// ("nemotron_h": Mamba-2, attention, MLP and MoE layers in the order hybrid_override_pattern
// spells)
// config.json files, with the config classes' defaults (transformers 5.17 configuration_mamba2.py
// and configuration_nemotron_h.py; modeling_mamba2.py and modeling_nemotron_h.py for what each
// key builds).
#include "json_mamba.hpp"

#include <algorithm>

#include "actmem/limits.hpp"
#include "json_read.hpp"

namespace actmem::detail {

namespace {

// Keys both families read.
const char* const kCommonKeys[] = {"model_type",
                                   "metadata",
                                   "hidden_size",
                                   "num_hidden_layers",
                                   "vocab_size",
                                   "tie_word_embeddings",
                                   "conv_kernel",
                                   "chunk_size",
                                   "n_groups",
                                   "use_conv_bias",
                                   "use_bias",
                                   "quantization_config",
                                   "attn_implementation",
                                   "_attn_implementation"};
const char* const kMamba2Keys[] = {"num_heads", "head_dim",   "state_size",
                                   "expand",    "hidden_act", "residual_in_fp32"};
const char* const kNemotronKeys[] = {"mamba_num_heads",
                                     "mamba_head_dim",
                                     "ssm_state_size",
                                     "hybrid_override_pattern",
                                     "intermediate_size",
                                     "num_attention_heads",
                                     "num_key_value_heads",
                                     "head_dim",
                                     "attention_head_dim",
                                     "attention_bias",
                                     "mlp_bias",
                                     "mlp_hidden_act",
                                     "mamba_hidden_act",
                                     "attention_dropout",
                                     "hidden_dropout",
                                     "sliding_window",
                                     "n_routed_experts",
                                     "num_experts_per_tok",
                                     "moe_intermediate_size",
                                     "moe_shared_expert_intermediate_size",
                                     "n_shared_experts",
                                     "n_group",
                                     "topk_group",
                                     "norm_topk_prob",
                                     "moe_latent_size",
                                     "num_nextn_predict_layers",
                                     "mtp_hybrid_override_pattern"};

// Keys that do not change memory: tokens, initialization, the inference cache, the time-step
// initialization (time_step_limit's clamp runs and is counted either way), the kernel switch
// (config.attention chooses), and keys the 5.17 modules do not read (Nemotron-H's expand,
// mamba_proj_bias and residual_in_fp32; Mamba2's norm_before_gate, rms_norm and the
// intermediate_size some files carry, always expand x hidden_size).
const char* const kIgnored[] = {"architectures",
                                "auto_map",
                                "bos_token_id",
                                "eos_token_id",
                                "pad_token_id",
                                "initializer_range",
                                "layer_norm_epsilon",
                                "rms_norm_eps",
                                "time_step_floor",
                                "time_step_limit",
                                "time_step_max",
                                "time_step_min",
                                "time_step_rank",
                                "time_step_init_scheme",
                                "time_step_scale",
                                "torch_dtype",
                                "dtype",
                                "transformers_version",
                                "use_cache",
                                "_name_or_path",
                                "return_dict",
                                "use_return_dict",
                                "rescale_prenorm_residual",
                                "num_logits_to_keep",
                                "use_mamba_kernels",
                                "max_position_embeddings",
                                "mamba_proj_bias",
                                "expand",
                                "residual_in_fp32",
                                "norm_before_gate",
                                "rms_norm",
                                "intermediate_size",
                                "routed_scaling_factor",
                                "mamba_ssm_cache_dtype",
                                "norm_eps",
                                "rope_theta",
                                "partial_rotary_factor"};

// Keys other families (or older files, or our schema) use for a setting these families read
// under another name: refused with the name read instead.
struct Foreign {
  const char* key;
  const char* mamba2;    // what Mamba2Config reads instead (nullptr: no such setting)
  const char* nemotron;  // what NemotronHConfig reads instead
};
constexpr Foreign kForeign[] = {{"ssm_state_size", "state_size", nullptr},
                                {"state_size", nullptr, "ssm_state_size"},
                                {"mamba_num_heads", "num_heads", nullptr},
                                {"num_heads", nullptr, "mamba_num_heads"},
                                {"mamba_head_dim", "head_dim", nullptr},
                                {"mamba_hidden_act", "hidden_act", nullptr},
                                {"mamba_n_groups", "n_groups", "n_groups"},
                                {"mamba_d_conv", "conv_kernel", "conv_kernel"},
                                {"mamba_chunk_size", "chunk_size", "chunk_size"},
                                {"mamba_d_state", "state_size", "ssm_state_size"},
                                {"hybrid_override_pattern", nullptr, nullptr},
                                {"num_attention_heads", nullptr, nullptr},
                                {"num_key_value_heads", nullptr, nullptr},
                                {"hidden_act", nullptr, "mamba_hidden_act and mlp_hidden_act"},
                                {"layer_kinds", nullptr, nullptr},
                                {"layer_stack", nullptr, nullptr},
                                {"ffn_type", nullptr, "mlp_hidden_act"},
                                {"norm_type", nullptr, nullptr},
                                {"position_embedding", nullptr, nullptr},
                                {"block_layout", nullptr, nullptr},
                                {"num_local_experts", nullptr, "n_routed_experts"},
                                {"num_experts", nullptr, "n_routed_experts"},
                                {"num_experts_per_tok", nullptr, nullptr},
                                {"n_routed_experts", nullptr, nullptr}};

template <std::size_t N>
bool listed(const char* const (&list)[N], const std::string& k) {
  for (const char* s : list)
    if (k == s) return true;
  return false;
}

}  // namespace

bool is_mamba_type(const std::string& model_type) {
  return model_type == "mamba2" || model_type == "nemotron_h";
}

std::optional<Error> read_mamba_family(const json& j, const std::string& type, ModelSpec* out,
                                       std::vector<std::string>* warnings) {
  const bool nemotron = type == "nemotron_h";
  ModelSpec& m = *out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (listed(kCommonKeys, k)) continue;
    if (nemotron ? listed(kNemotronKeys, k) : listed(kMamba2Keys, k)) continue;
    for (const Foreign& f : kForeign) {
      if (k != f.key) continue;
      const char* instead = nemotron ? f.nemotron : f.mamba2;
      return make_error(
          "unsupported", "model." + k,
          "model." + k + ": not read for model_type " + type +
              (instead ? std::string("; this model reads ") + instead
                       : std::string(" (") + (nemotron ? "NemotronHConfig" : "Mamba2Config") +
                             " has no such setting)"));
    }
    if (!listed(kIgnored, k) && warnings)
      warnings->push_back("model." + k + ": ignored (does not affect memory)");
  }
  auto get_uint = [&](const char* key, std::uint64_t* v, bool required) -> std::optional<Error> {
    if (!j.contains(key) || j[key].is_null()) {
      if (required)
        return make_error("missing_key", std::string("model.") + key,
                          std::string("model.") + key + ": required (a positive integer)");
      return std::nullopt;
    }
    ACTMEM_TRY(read_uint(j[key], std::string("model.") + key, v));
    if (*v > kMaxDim)
      return make_error("invalid_value", std::string("model.") + key,
                        std::string("model.") + key + ": " + std::to_string(*v) +
                            " is larger than the supported 2^40");
    return std::nullopt;
  };
  auto get_bool = [&](const char* key, bool* v) -> std::optional<Error> {
    if (!j.contains(key)) return std::nullopt;
    return read_bool(j[key], std::string("model.") + key, v);
  };
  auto get_act = [&](const char* key, const char* want, const char* also) -> std::optional<Error> {
    if (!j.contains(key)) return std::nullopt;
    std::string act;
    ACTMEM_TRY(read_string(j[key], std::string("model.") + key, &act));
    if (act != want && (also == nullptr || act != also))
      return make_error("unsupported", std::string("model.") + key,
                        std::string("model.") + key + ": '" + key_text(act) +
                            "' is not supported for " + type + "; allowed: " + want +
                            (also ? std::string(", ") + also : std::string()));
    return std::nullopt;
  };

  m.norm = NormType::kRmsNorm;
  m.pos = PosEncoding::kNone;  // neither model adds positions (Nemotron-H's attention: no RoPE)
  m.block = BlockLayout::kSequential;
  m.tied_embeddings = false;  // both config classes default to untied
  ACTMEM_TRY(get_uint("hidden_size", &m.hidden, true));
  ACTMEM_TRY(get_uint("num_hidden_layers", &m.layers, true));
  ACTMEM_TRY(get_uint("vocab_size", &m.vocab, true));
  ACTMEM_TRY(get_bool("tie_word_embeddings", &m.tied_embeddings));

  LayerKind mamba;
  mamba.name = "mamba";
  mamba.mixer = Mixer::kMamba2;
  mamba.has_ffn = false;
  MambaSpec& x = mamba.mamba;
  x.heads = 128;
  x.head_dim = 64;
  x.state = 128;
  x.groups = 8;
  x.conv_kernel = 4;
  x.chunk = nemotron ? 128 : 256;
  ACTMEM_TRY(get_uint(nemotron ? "mamba_num_heads" : "num_heads", &x.heads, false));
  ACTMEM_TRY(get_uint(nemotron ? "mamba_head_dim" : "head_dim", &x.head_dim, false));
  ACTMEM_TRY(get_uint(nemotron ? "ssm_state_size" : "state_size", &x.state, false));
  ACTMEM_TRY(get_uint("n_groups", &x.groups, false));
  ACTMEM_TRY(get_uint("conv_kernel", &x.conv_kernel, false));
  ACTMEM_TRY(get_uint("chunk_size", &x.chunk, false));
  ACTMEM_TRY(get_bool("use_conv_bias", &x.conv_bias));
  ACTMEM_TRY(get_bool("use_bias", &x.proj_bias));
  ACTMEM_TRY(get_act(nemotron ? "mamba_hidden_act" : "hidden_act", "silu", "swish"));
  // Nemotron-H's gated norm normalizes each group (group_size = intermediate_size / n_groups);
  // Mamba2's MambaRMSNormGated normalizes all I channels together.
  x.norm_per_group = nemotron;

  if (!nemotron) {
    // Mamba2Mixer: intermediate_size = expand x hidden_size, reshaped into num_heads heads of
    // head_dim; the two must agree or its reshapes fail.
    std::uint64_t expand = 2;
    ACTMEM_TRY(get_uint("expand", &expand, false));
    std::uint64_t inner = 0;
    if (__builtin_mul_overflow(expand, m.hidden, &inner) || x.heads > kMaxDim / x.head_dim ||
        inner != x.heads * x.head_dim)
      return make_error("invalid_value", "model.num_heads",
                        "model.num_heads: num_heads x head_dim = " + std::to_string(x.heads) +
                            " x " + std::to_string(x.head_dim) +
                            " must equal expand x hidden_size = " + std::to_string(expand) + " x " +
                            std::to_string(m.hidden) + " (Mamba2Mixer reshapes into it)");
    // residual_in_fp32 (default true) keeps the residual stream in fp32: the final norm reads an
    // fp32 input and keeps fp32 tensors (measured).
    bool fp32_residual = true;
    ACTMEM_TRY(get_bool("residual_in_fp32", &fp32_residual));
    if (fp32_residual) m.hf_modules = HfModules::kMamba2;
    m.kinds.assign(1, mamba);
    m.stack.clear();
    return std::nullopt;
  }

  for (const char* k : {"attention_dropout", "hidden_dropout"}) {
    if (!j.contains(k)) continue;
    double p = 0.0;
    ACTMEM_TRY(read_double(j[k], std::string("model.") + k, &p));
    if (p != 0.0) return refuse_value(j, k, "is not modelled for nemotron_h; allowed: 0");
  }
  if (j.contains("sliding_window") && !j["sliding_window"].is_null())
    return refuse_value(j, "sliding_window",
                        "is not read by NemotronHAttention (full attention); allowed: null");
  ACTMEM_TRY(get_act("mlp_hidden_act", "relu2", nullptr));
  // Nemotron 3 Super's multi-token-prediction layers (mtp_hybrid_override_pattern) are not
  // modelled: refused rather than left out of the parameters.
  if (j.contains("num_nextn_predict_layers") && !j["num_nextn_predict_layers"].is_null() &&
      j["num_nextn_predict_layers"] != 0)
    return refuse_value(j, "num_nextn_predict_layers",
                        "(nemotron_h's multi-token-prediction layers) is not modelled; allowed: 0");
  if (j.contains("mtp_hybrid_override_pattern") && !j["mtp_hybrid_override_pattern"].is_null() &&
      j["mtp_hybrid_override_pattern"] != "")
    return refuse_value(j, "mtp_hybrid_override_pattern",
                        "(nemotron_h's multi-token-prediction layers) is not modelled; allowed: "
                        "null");

  LayerKind mlp;
  mlp.name = "mlp";
  mlp.mixer = Mixer::kNone;
  mlp.ffn = FfnType::kRelu2;
  mlp.ffn_hidden = 21504;
  ACTMEM_TRY(get_uint("intermediate_size", &mlp.ffn_hidden, false));
  ACTMEM_TRY(get_bool("mlp_bias", &mlp.mlp_bias));

  LayerKind attn;
  attn.name = "attention";
  attn.has_ffn = false;
  attn.heads = 32;
  attn.kv_heads = 8;
  attn.head_dim = 128;
  ACTMEM_TRY(get_uint("num_attention_heads", &attn.heads, false));
  ACTMEM_TRY(get_uint("num_key_value_heads", &attn.kv_heads, false));
  // head_dim, or attention_head_dim in the first published files (NemotronHConfig's default 128).
  const bool hd = j.contains("head_dim") && !j["head_dim"].is_null();
  const bool ahd = j.contains("attention_head_dim") && !j["attention_head_dim"].is_null();
  if (hd && ahd && j["head_dim"] != j["attention_head_dim"])
    return make_error("invalid_value", "model.attention_head_dim",
                      "model.attention_head_dim: " + short_dump(j["attention_head_dim"]) +
                          " conflicts with model.head_dim: " + short_dump(j["head_dim"]) +
                          "; give one");
  ACTMEM_TRY(get_uint(hd ? "head_dim" : "attention_head_dim", &attn.head_dim, false));
  bool attn_bias = false;
  ACTMEM_TRY(get_bool("attention_bias", &attn_bias));
  attn.qkv_bias = attn.o_bias = attn_bias;

  // Nemotron 3's MoE layers ('E', NemotronHMoE): a sigmoid router with the score-correction
  // bias and group-limited top-k (DeepseekV3TopkRouter), n_routed_experts squared-ReLU experts of
  // moe_intermediate_size (up and down, not gated) and a shared squared-ReLU MLP of
  // moe_shared_expert_intermediate_size. transformers' grouped experts are not measured: every
  // profile keeps the Megatron-style expert records (HfMoe::kGeneric).
  LayerKind moe = mlp;
  moe.name = "moe";
  auto read_moe = [&]() -> std::optional<Error> {
    MoeSpec& e = moe.moe;
    e.top_k = 1;
    e.groups = e.topk_groups = 1;
    e.score_bias = true;
    if (!j.contains("n_routed_experts") || j["n_routed_experts"].is_null())
      return make_error("missing_key", "model.n_routed_experts",
                        "model.n_routed_experts: required with 'E' (MoE) layers in "
                        "hybrid_override_pattern (a positive integer)");
    ACTMEM_TRY(get_uint("n_routed_experts", &e.experts, true));
    ACTMEM_TRY(get_uint("num_experts_per_tok", &e.top_k, false));
    e.expert_ffn = mlp.ffn_hidden;
    ACTMEM_TRY(get_uint("moe_intermediate_size", &e.expert_ffn, false));
    e.shared_experts = 1;
    ACTMEM_TRY(get_uint("n_shared_experts", &e.shared_experts, false));
    e.shared_expert_ffn = e.expert_ffn;
    ACTMEM_TRY(get_uint("moe_shared_expert_intermediate_size", &e.shared_expert_ffn, false));
    ACTMEM_TRY(get_uint("n_group", &e.groups, false));
    ACTMEM_TRY(get_uint("topk_group", &e.topk_groups, false));
    ACTMEM_TRY(get_bool("norm_topk_prob", &e.norm_topk));
    if (e.experts % e.groups != 0 || e.topk_groups > e.groups)
      return make_error("invalid_value", "model.n_group",
                        "model.n_group: " + std::to_string(e.groups) +
                            " groups must divide n_routed_experts=" + std::to_string(e.experts) +
                            " and hold topk_group=" + std::to_string(e.topk_groups));
    if (j.contains("moe_latent_size") && !j["moe_latent_size"].is_null())
      return refuse_value(j, "moe_latent_size",
                          "(the experts' latent projections) is not modelled; allowed: null");
    return std::nullopt;
  };

  // hybrid_override_pattern: one letter per layer, M a Mamba-2 layer, * attention, - an MLP,
  // E an MoE.
  if (!j.contains("hybrid_override_pattern") || j["hybrid_override_pattern"].is_null())
    return make_error("missing_key", "model.hybrid_override_pattern",
                      "model.hybrid_override_pattern: required (one letter per layer: M Mamba-2, "
                      "* attention, - MLP, E MoE)");
  std::string pattern;
  ACTMEM_TRY(read_string(j["hybrid_override_pattern"], "model.hybrid_override_pattern", &pattern));
  if (m.layers > kMaxLayers) return std::nullopt;  // validate() names the bound
  if (pattern.size() != m.layers)
    return make_error("invalid_value", "model.hybrid_override_pattern",
                      "model.hybrid_override_pattern: has " + std::to_string(pattern.size()) +
                          " letters; it needs one per layer (num_hidden_layers=" +
                          std::to_string(m.layers) + ")");
  m.kinds.clear();
  m.stack.assign(pattern.size(), 0);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    const LayerKind* k = c == 'M'   ? &mamba
                         : c == '*' ? &attn
                         : c == '-' ? &mlp
                         : c == 'E' ? &moe
                                    : nullptr;
    if (k == nullptr)
      return make_error("unsupported", "model.hybrid_override_pattern",
                        "model.hybrid_override_pattern: letter " + std::to_string(i) + " '" +
                            key_text(std::string(1, c)) +
                            "' is not a layer type; allowed: M (Mamba-2), * (attention), - (MLP), "
                            "E (MoE)");
    if (c == 'E' && !moe.is_moe()) ACTMEM_TRY(read_moe());
    auto same = [&](const LayerKind& y) { return y.name == k->name; };
    auto it = std::find_if(m.kinds.begin(), m.kinds.end(), same);
    if (it == m.kinds.end()) {
      m.kinds.push_back(*k);
      it = m.kinds.end() - 1;
    }
    m.stack[i] = static_cast<std::uint32_t>(it - m.kinds.begin());
  }
  if (m.kinds.size() == 1) m.stack.clear();
  return std::nullopt;
}

}  // namespace actmem::detail

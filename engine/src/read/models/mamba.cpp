// Reads Mamba-2 (model_type "mamba2": a stack of Mamba-2 mixer layers) and Nemotron-H
// ("nemotron_h": Mamba-2, attention, MLP and MoE layers in the order layers_block_type or
// hybrid_override_pattern gives) config.json files, with the config classes' defaults
// (transformers configuration_mamba2.py and configuration_nemotron_h.py @ 13923c63, whose
// __post_init__ also takes the older mamba_* names; modeling_mamba2.py and modeling_nemotron_h.py
// for what each key builds).
#include "read/models/mamba.hpp"

#include <algorithm>

#include "actmem/core/limits.hpp"
#include "read/json_read.hpp"

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
// Nemotron 3's MoE keys (read with 'E' layers, warned about without one).
const char* const kNemotronMoeKeys[] = {"n_routed_experts",
                                        "num_local_experts",
                                        "num_experts_per_tok",
                                        "moe_intermediate_size",
                                        "moe_shared_expert_intermediate_size",
                                        "n_shared_experts",
                                        "n_group",
                                        "topk_group",
                                        "norm_topk_prob"};
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

                                     "moe_latent_size",
                                     "num_nextn_predict_layers",
                                     "mtp_hybrid_override_pattern",
                                     "mtp_layers_block_type",
                                     "layers_block_type",
                                     "layer_types",

                                     "use_mamba_kernels",
                                     "mamba_n_groups",
                                     "mamba_d_conv",
                                     "mamba_chunk_size",
                                     "mamba_conv_bias",
                                     "mamba_expand"};

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
                                {"mamba_n_groups", "n_groups", nullptr},
                                {"mamba_d_conv", "conv_kernel", nullptr},
                                {"mamba_chunk_size", "chunk_size", nullptr},
                                {"mamba_conv_bias", "use_conv_bias", nullptr},
                                {"mamba_expand", "expand", nullptr},
                                {"mamba_d_state", "state_size", "ssm_state_size"},
                                {"layers_block_type", nullptr, nullptr},
                                {"layer_types", nullptr, nullptr},
                                {"use_mamba_kernels", nullptr, nullptr},
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
                                {"num_local_experts", nullptr, nullptr},
                                {"num_experts", nullptr, "n_routed_experts"},
                                {"num_experts_per_tok", nullptr, nullptr},
                                {"n_routed_experts", nullptr, nullptr}};

// A value as a message quotes it: 'M' when shown_text shows it as typed, else shown_text's escaped,
// double-quoted form ("\u2014") on its own.
std::string shown_letter(const std::string& v) {
  const std::string k = shown_text(v);
  return !k.empty() && k.front() == '"' ? k : "'" + k + "'";
}

// Every key: read by the family, ignored, refused with the name the family reads instead, or
// reported as ignored.
std::optional<Error> check_keys(const json& j, const std::string& type,
                                std::vector<std::string>* warnings) {
  const bool nemotron = type == "nemotron_h";
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (listed(kCommonKeys, k)) continue;
    if (nemotron ? listed(kNemotronKeys, k) || listed(kNemotronMoeKeys, k) : listed(kMamba2Keys, k))
      continue;
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
  return std::nullopt;
}

// The keys of one config.json as its config class reads them.
struct Reader {
  const json& j;
  const std::string& type;
  bool nemotron;

  // The key a value is read from: its name, or (NemotronHConfig.__post_init__) the older name it
  // also takes; both given must agree.
  std::optional<Error> pick(const char* key, const char* older, const char** used) const {
    *used = key;
    if (older == nullptr || !j.contains(older)) return std::nullopt;
    if (j.contains(key) && j[key] != j[older])
      return make_error("invalid_value", std::string("model.") + older,
                        std::string("model.") + older + ": " + short_dump(j[older]) +
                            " conflicts with model." + key + ": " + short_dump(j[key]) +
                            "; give one");
    if (!j.contains(key)) *used = older;
    return std::nullopt;
  }
  // Integers are typed int in the config classes: null is refused, not read as the default.
  // `max`: kMaxDim, or for sizes that fix a tensor's extent whatever b and s (a chunk's Q x Q
  // masks, the state) kMaxMambaWidth, so that an overflow can only come from b and s.
  std::optional<Error> get_uint(const char* key, std::uint64_t* v, bool required,
                                const char* older = nullptr, std::uint64_t max = kMaxDim) const {
    const char* used = key;
    ACTMEM_TRY(pick(key, older, &used));
    if (!j.contains(used)) {
      if (required)
        return make_error("missing_key", std::string("model.") + key,
                          std::string("model.") + key + ": required (a positive integer)");
      return std::nullopt;
    }
    ACTMEM_TRY(read_uint(j[used], std::string("model.") + used, v));
    if (*v > max)
      return make_error("invalid_value", std::string("model.") + used,
                        std::string("model.") + used + ": " + std::to_string(*v) +
                            " is larger than the supported " +
                            (max == kMaxDim ? std::string("2^40") : std::to_string(max)));
    return std::nullopt;
  }
  std::optional<Error> get_small(const char* key, std::uint64_t* v,
                                 const char* older = nullptr) const {
    return get_uint(key, v, false, older, kMaxMambaWidth);
  }
  std::optional<Error> get_bool(const char* key, bool* v, const char* older = nullptr) const {
    const char* used = key;
    ACTMEM_TRY(pick(key, older, &used));
    if (!j.contains(used)) return std::nullopt;
    return read_bool(j[used], std::string("model.") + used, v);
  }
  std::optional<Error> get_act(const char* key, const char* want, const char* also) const {
    if (!j.contains(key)) return std::nullopt;
    std::string act;
    ACTMEM_TRY(read_string(j[key], std::string("model.") + key, &act));
    if (act != want && (also == nullptr || act != also))
      return make_error("unsupported", std::string("model.") + key,
                        std::string("model.") + key + ": " + shown_letter(act) +
                            " is not supported for " + type + "; allowed: " + want +
                            (also ? std::string(", ") + also : std::string()));
    return std::nullopt;
  }
};

// What both families share: the norm, no positions, the embeddings, and (Nemotron-H) the
// kernel switch.
std::optional<Error> read_common(const Reader& r, ModelSpec* out) {
  const json& j = r.j;
  const bool nemotron = r.nemotron;
  ModelSpec& m = *out;
  m.norm = NormType::kRmsNorm;
  m.pos = PosEncoding::kNone;  // neither model adds positions (Nemotron-H's attention: no RoPE)
  m.block = BlockLayout::kSequential;
  m.tied_embeddings = false;  // both config classes default to untied
  ACTMEM_TRY(r.get_uint("hidden_size", &m.hidden, true));
  ACTMEM_TRY(r.get_uint("vocab_size", &m.vocab, true));
  ACTMEM_TRY(r.get_bool("tie_word_embeddings", &m.tied_embeddings));
  // The kernel choice is config.attention's (eager / sdpa_math: the PyTorch path; flash: the
  // fused kernels): a config turning the kernels off would say otherwise.
  if (nemotron && j.contains("use_mamba_kernels") && j["use_mamba_kernels"] != true)
    return refuse_value(j, "use_mamba_kernels",
                        "is config.attention's choice here (eager or sdpa_math: transformers' "
                        "PyTorch path; flash: the fused kernels); allowed: true");
  return std::nullopt;
}

// The Mamba-2 mixer layer, with its config class's defaults.
std::optional<Error> read_mamba_kind(const Reader& r, LayerKind* out) {
  const bool nemotron = r.nemotron;
  LayerKind& mamba = *out;
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
  x.key_names = nemotron ? MambaKeys::kNemotronH : MambaKeys::kMamba2;
  ACTMEM_TRY(r.get_uint(nemotron ? "mamba_num_heads" : "num_heads", &x.heads, false));
  ACTMEM_TRY(r.get_uint(nemotron ? "mamba_head_dim" : "head_dim", &x.head_dim, false));
  ACTMEM_TRY(r.get_small(nemotron ? "ssm_state_size" : "state_size", &x.state));
  ACTMEM_TRY(r.get_uint("n_groups", &x.groups, false, nemotron ? "mamba_n_groups" : nullptr));
  ACTMEM_TRY(r.get_small("conv_kernel", &x.conv_kernel, nemotron ? "mamba_d_conv" : nullptr));
  ACTMEM_TRY(r.get_small("chunk_size", &x.chunk, nemotron ? "mamba_chunk_size" : nullptr));
  ACTMEM_TRY(r.get_bool("use_conv_bias", &x.conv_bias, nemotron ? "mamba_conv_bias" : nullptr));
  ACTMEM_TRY(r.get_bool("use_bias", &x.proj_bias));
  ACTMEM_TRY(r.get_act(nemotron ? "mamba_hidden_act" : "hidden_act", "silu", "swish"));
  // Nemotron-H's gated norm normalizes each group (group_size = intermediate_size / n_groups);
  // Mamba2's MambaRMSNormGated normalizes all I channels together.
  x.norm_per_group = nemotron;
  return std::nullopt;
}

// Mamba2: num_hidden_layers mixer layers, each of expand x hidden_size inner channels.
std::optional<Error> read_mamba2_stack(const Reader& r, const LayerKind& mamba, ModelSpec* out) {
  ModelSpec& m = *out;
  const MambaSpec& x = mamba.mamba;
  ACTMEM_TRY(r.get_uint("num_hidden_layers", &m.layers, true));
  // Mamba2Mixer: intermediate_size = expand x hidden_size, reshaped into num_heads heads of
  // head_dim; the two must agree or its reshapes fail.
  std::uint64_t expand = 2;
  ACTMEM_TRY(r.get_uint("expand", &expand, false));
  if (x.heads > kMaxDim / x.head_dim)
    return make_error("invalid_value", "model.num_heads",
                      "model.num_heads: num_heads x head_dim = " + std::to_string(x.heads) + " x " +
                          std::to_string(x.head_dim) + " is larger than the supported 2^40");
  std::uint64_t inner = 0;
  if (__builtin_mul_overflow(expand, m.hidden, &inner) || inner != x.heads * x.head_dim)
    return make_error("invalid_value", "model.num_heads",
                      "model.num_heads: num_heads x head_dim = " + std::to_string(x.heads) + " x " +
                          std::to_string(x.head_dim) +
                          " must equal expand x hidden_size = " + std::to_string(expand) + " x " +
                          std::to_string(m.hidden) + " (Mamba2Mixer reshapes into it)");
  // residual_in_fp32 (default true) keeps the residual stream in fp32: the final norm reads an
  // fp32 input and keeps fp32 tensors (measured).
  bool fp32_residual = true;
  ACTMEM_TRY(r.get_bool("residual_in_fp32", &fp32_residual));
  if (fp32_residual) m.hf_modules = HfModules::kMamba2;
  m.kinds.assign(1, mamba);
  m.stack.clear();
  return std::nullopt;
}

// Nemotron-H's keys for what is not modelled, each refused unless it keeps its no-op value.
std::optional<Error> refuse_nemotron_unmodelled(const Reader& r) {
  const json& j = r.j;
  for (const char* k : {"attention_dropout", "hidden_dropout"}) {
    if (!j.contains(k)) continue;
    double p = 0.0;
    ACTMEM_TRY(read_double(j[k], std::string("model.") + k, &p));
    if (p != 0.0) return refuse_value(j, k, "is not modelled for nemotron_h; allowed: 0");
  }
  if (j.contains("sliding_window") && !j["sliding_window"].is_null())
    return refuse_value(j, "sliding_window",
                        "is not read by NemotronHAttention (full attention); allowed: null");
  ACTMEM_TRY(r.get_act("mlp_hidden_act", "relu2", nullptr));
  // Nemotron 3 Super's multi-token-prediction layers (mtp_layers_block_type) and latent experts
  // are not modelled: refused rather than left out of the parameters.
  if (j.contains("num_nextn_predict_layers") && j["num_nextn_predict_layers"] != 0)
    return refuse_value(j, "num_nextn_predict_layers",
                        "(nemotron_h's multi-token-prediction layers) is not modelled; allowed: 0");
  // (NemotronHConfig writes mtp_layers_block_type into every config it saves: with no MTP depth
  // it describes nothing.)
  if (j.contains("moe_latent_size") && !j["moe_latent_size"].is_null())
    return refuse_value(j, "moe_latent_size",
                        "(the experts' latent projections) is not modelled; allowed: null");
  return std::nullopt;
}

// Nemotron-H's MLP layer ('-'): squared ReLU, not gated.
std::optional<Error> read_mlp_kind(const Reader& r, LayerKind* out) {
  LayerKind& mlp = *out;
  mlp.name = "mlp";
  mlp.mixer = Mixer::kNone;
  mlp.ffn = FfnType::kRelu2;
  mlp.ffn_hidden = 21504;
  ACTMEM_TRY(r.get_uint("intermediate_size", &mlp.ffn_hidden, false));
  ACTMEM_TRY(r.get_bool("mlp_bias", &mlp.mlp_bias));
  return std::nullopt;
}

// Nemotron-H's attention layer ('*'): attention alone, no positions.
std::optional<Error> read_attention_kind(const Reader& r, LayerKind* out) {
  const json& j = r.j;
  LayerKind& attn = *out;
  attn.name = "attention";
  attn.has_ffn = false;
  attn.heads = 32;
  attn.kv_heads = 8;
  attn.head_dim = 128;
  ACTMEM_TRY(r.get_uint("num_attention_heads", &attn.heads, false));
  // num_key_value_heads: null is num_attention_heads (NemotronHConfig's backward compatibility).
  if (j.contains("num_key_value_heads") && j["num_key_value_heads"].is_null())
    attn.kv_heads = attn.heads;
  else
    ACTMEM_TRY(r.get_uint("num_key_value_heads", &attn.kv_heads, false));
  // head_dim, or attention_head_dim in the first published files (NemotronHConfig's default 128;
  // a null attention_head_dim is no value, a null head_dim is refused as an int key's null).
  const bool ahd = j.contains("attention_head_dim") && !j["attention_head_dim"].is_null();
  if (j.contains("head_dim") && !j["head_dim"].is_null() && ahd &&
      j["head_dim"] != j["attention_head_dim"])
    return make_error("invalid_value", "model.attention_head_dim",
                      "model.attention_head_dim: " + short_dump(j["attention_head_dim"]) +
                          " conflicts with model.head_dim: " + short_dump(j["head_dim"]) +
                          "; give one");
  ACTMEM_TRY(r.get_uint(j.contains("head_dim") || !ahd ? "head_dim" : "attention_head_dim",
                        &attn.head_dim, false));
  bool attn_bias = false;
  ACTMEM_TRY(r.get_bool("attention_bias", &attn_bias));
  attn.qkv_bias = attn.o_bias = attn_bias;
  return std::nullopt;
}

// Nemotron 3's MoE layers ('E', NemotronHMoE): a sigmoid router with the score-correction
// bias and group-limited top-k (DeepseekV3TopkRouter), n_routed_experts squared-ReLU experts of
// moe_intermediate_size (up and down, not gated) and a shared squared-ReLU MLP of
// moe_shared_expert_intermediate_size; NemotronHConfig's defaults. transformers' grouped experts
// are not measured: every profile keeps the Megatron-style expert records (HfMoe::kGeneric).
std::optional<Error> read_moe(const Reader& r, MoeSpec* out, std::vector<std::string>* warnings) {
  MoeSpec& e = *out;
  e.experts = 8;
  e.top_k = 2;
  e.expert_ffn = e.shared_expert_ffn = 7688;
  e.shared_experts = 1;
  e.groups = e.topk_groups = 1;
  e.norm_topk = true;
  e.score_bias = true;
  ACTMEM_TRY(r.get_uint("n_routed_experts", &e.experts, false, "num_local_experts"));
  ACTMEM_TRY(r.get_uint("num_experts_per_tok", &e.top_k, false));
  ACTMEM_TRY(r.get_uint("moe_intermediate_size", &e.expert_ffn, false));
  // NemotronHMoE builds one shared NemotronHMLP of moe_shared_expert_intermediate_size
  // whatever n_shared_experts says (modeling_nemotron_h.py @ 008d9e95).
  e.shared_experts = 1;
  ACTMEM_TRY(r.get_uint("moe_shared_expert_intermediate_size", &e.shared_expert_ffn, false));
  std::uint64_t n_shared = 1;
  ACTMEM_TRY(r.get_uint("n_shared_experts", &n_shared, false));
  if (n_shared != 1 && warnings)
    warnings->push_back("model.n_shared_experts: " + std::to_string(n_shared) +
                        " ignored (NemotronHMoE builds one shared expert of "
                        "moe_shared_expert_intermediate_size)");
  ACTMEM_TRY(r.get_uint("n_group", &e.groups, false));
  ACTMEM_TRY(r.get_uint("topk_group", &e.topk_groups, false));
  ACTMEM_TRY(r.get_bool("norm_topk_prob", &e.norm_topk));
  if (e.top_k > e.experts)
    return make_error("invalid_value", "model.num_experts_per_tok",
                      "model.num_experts_per_tok: " + std::to_string(e.top_k) +
                          " must be between 1 and n_routed_experts=" + std::to_string(e.experts));
  if (e.experts % e.groups != 0 || e.topk_groups > e.groups)
    return make_error("invalid_value", "model.n_group",
                      "model.n_group: " + std::to_string(e.groups) +
                          " groups must divide n_routed_experts=" + std::to_string(e.experts) +
                          " and hold topk_group=" + std::to_string(e.topk_groups));
  return std::nullopt;
}

// The layer list (layers_block_type or layer_types) as hybrid_override_pattern's letters.
std::optional<Error> letters_from_list(const Reader& r, const char* list_key, std::string* out) {
  const json& j = r.j;
  std::string& letters = *out;
  const json& a = j[list_key];
  const std::string field = std::string("model.") + list_key;
  if (!a.is_array())
    return make_error("wrong_type", field,
                      field + ": must be a list of layer types, got " + got(a));
  if (a.size() > kMaxLayers)
    return make_error("invalid_value", field,
                      field + ": " + std::to_string(a.size()) +
                          " layers is more than the supported " + std::to_string(kMaxLayers));
  for (std::size_t i = 0; i < a.size(); ++i) {
    // remap_legacy_layer_types: mamba and attention are the older names.
    const std::string f = field + "[" + std::to_string(i) + "]";
    std::string t;
    ACTMEM_TRY(read_string(a[i], f, &t));
    const char c = t == "linear_attention" || t == "mamba"     ? 'M'
                   : t == "full_attention" || t == "attention" ? '*'
                   : t == "mlp"                                ? '-'
                   : t == "moe"                                ? 'E'
                                                               : '\0';
    if (c == '\0')
      return make_error("unsupported", f,
                        f + ": " + shown_letter(t) +
                            " is not a layer type; allowed: linear_attention (mamba), "
                            "full_attention (attention), mlp, moe");
    letters += c;
  }
  if (j.contains("hybrid_override_pattern") && !j["hybrid_override_pattern"].is_null() &&
      j["hybrid_override_pattern"] != letters)
    return make_error("invalid_value", "model.hybrid_override_pattern",
                      "model.hybrid_override_pattern: " + short_dump(j["hybrid_override_pattern"]) +
                          " conflicts with " + field + " (" + short_dump(json(letters)) +
                          " as letters); give one");
  return std::nullopt;
}

// hybrid_override_pattern's letters, each a layer type.
std::optional<Error> letters_from_pattern(const Reader& r, std::string* out) {
  const json& j = r.j;
  std::string& letters = *out;
  ACTMEM_TRY(read_string(j["hybrid_override_pattern"], "model.hybrid_override_pattern", &letters));
  // Letters one by one before the length (a non-ASCII character is several bytes).
  for (std::size_t i = 0; i < letters.size(); ++i) {
    const char c = letters[i];
    if (c == 'M' || c == '*' || c == '-' || c == 'E') continue;
    std::size_t n = 1;  // the whole UTF-8 sequence, for the message
    while (i + n < letters.size() && (static_cast<unsigned char>(letters[i + n]) & 0xC0) == 0x80)
      ++n;
    return make_error("unsupported", "model.hybrid_override_pattern",
                      "model.hybrid_override_pattern: letter " + std::to_string(i) + " " +
                          shown_letter(letters.substr(i, n)) +
                          " is not a layer type; allowed: M (Mamba-2), * (attention), - "
                          "(MLP), E (MoE)");
  }
  if (letters.size() > kMaxLayers)
    return make_error("invalid_value", "model.hybrid_override_pattern",
                      "model.hybrid_override_pattern: " + std::to_string(letters.size()) +
                          " layers is more than the supported " + std::to_string(kMaxLayers));
  return std::nullopt;
}

// The layers: layers_block_type (or layer_types) when given, else hybrid_override_pattern, else
// NemotronHConfig's default [linear_attention, moe, full_attention, mlp]; num_hidden_layers is
// derived from them (a different value is only warned about, as __post_init__ does).
std::optional<Error> read_layer_letters(const Reader& r, std::string* out) {
  const json& j = r.j;
  std::string& letters = *out;
  const char* list_key = j.contains("layers_block_type") ? "layers_block_type" : "layer_types";
  if (j.contains("layers_block_type") && j.contains("layer_types") &&
      !j["layers_block_type"].is_null() && !j["layer_types"].is_null())
    return make_error("invalid_value", "model.layer_types",
                      "model.layer_types: the same list as layers_block_type; give one");
  if (j.contains("layers_block_type") && j["layers_block_type"].is_null()) list_key = "layer_types";
  if (j.contains(list_key) && !j[list_key].is_null()) {
    ACTMEM_TRY(letters_from_list(r, list_key, &letters));
  } else if (j.contains("hybrid_override_pattern")) {
    ACTMEM_TRY(letters_from_pattern(r, &letters));
  } else {
    letters = "ME*-";
  }
  if (letters.empty())
    return make_error("invalid_value", "model.hybrid_override_pattern",
                      "model.hybrid_override_pattern: empty; it needs one letter per layer (M "
                      "Mamba-2, * attention, - MLP, E MoE)");
  return std::nullopt;
}

// The kinds in the order the stack first uses them, and each layer's kind (no stack for one kind).
void build_stack(const std::string& letters, const LayerKind& mamba, const LayerKind& attn,
                 const LayerKind& mlp, const LayerKind& moe, ModelSpec* out) {
  ModelSpec& m = *out;
  m.kinds.clear();
  m.stack.assign(letters.size(), 0);
  for (std::size_t i = 0; i < letters.size(); ++i) {
    const char c = letters[i];
    const LayerKind* k = c == 'M' ? &mamba : c == '*' ? &attn : c == '-' ? &mlp : &moe;
    auto same = [&](const LayerKind& y) { return y.name == k->name; };
    auto it = std::find_if(m.kinds.begin(), m.kinds.end(), same);
    if (it == m.kinds.end()) {
      m.kinds.push_back(*k);
      it = m.kinds.end() - 1;
    }
    m.stack[i] = static_cast<std::uint32_t>(it - m.kinds.begin());
  }
  if (m.kinds.size() == 1) m.stack.clear();
}

}  // namespace

bool is_mamba_type(const std::string& model_type) {
  return model_type == "mamba2" || model_type == "nemotron_h";
}

std::optional<Error> read_mamba_family(const json& j, const std::string& type, ModelSpec* out,
                                       std::vector<std::string>* warnings) {
  const bool nemotron = type == "nemotron_h";
  ModelSpec& m = *out;
  ACTMEM_TRY(check_keys(j, type, warnings));
  const Reader r{j, type, nemotron};
  ACTMEM_TRY(read_common(r, &m));
  LayerKind mamba;
  ACTMEM_TRY(read_mamba_kind(r, &mamba));
  if (!nemotron) return read_mamba2_stack(r, mamba, &m);

  ACTMEM_TRY(refuse_nemotron_unmodelled(r));
  LayerKind mlp;
  ACTMEM_TRY(read_mlp_kind(r, &mlp));
  LayerKind attn;
  ACTMEM_TRY(read_attention_kind(r, &attn));
  // The MoE layer ('E') is the MLP's kind with experts (read below, with an 'E' in the stack).
  LayerKind moe = mlp;
  moe.name = "moe";
  std::string letters;
  ACTMEM_TRY(read_layer_letters(r, &letters));
  m.layers = letters.size();
  if (j.contains("num_hidden_layers")) {
    std::uint64_t given = 0;
    ACTMEM_TRY(read_uint(j["num_hidden_layers"], "model.num_hidden_layers", &given));
    if (given != m.layers && warnings)
      warnings->push_back("model.num_hidden_layers: " + std::to_string(given) +
                          " differs from the layer list's " + std::to_string(m.layers) +
                          " layers; the list is used (NemotronHConfig derives the count from it)");
  }
  const bool any_moe = letters.find('E') != std::string::npos;
  if (any_moe) ACTMEM_TRY(read_moe(r, &moe.moe, warnings));
  if (!any_moe && warnings)
    for (const char* k : kNemotronMoeKeys)
      if (j.contains(k))
        warnings->push_back(std::string("model.") + k + ": ignored (no MoE layer in the stack)");
  build_stack(letters, mamba, attn, mlp, moe, &m);
  return std::nullopt;
}

}  // namespace actmem::detail

// Reads a model spec from our JSON schema or a Hugging Face config.json (GPT-2, Llama, Mistral,
// Mixtral, Phi-3, Qwen2, Qwen2-MoE, Qwen3, Gemma 2/3 naming; Falcon in json_falcon.cpp); see
// docs/schema.md.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>

#include "actmem/json_io.hpp"
#include "actmem/names/names.hpp"
#include "read/models/deepseek.hpp"
#include "read/models/falcon.hpp"
#include "read/models/gpt_oss.hpp"
#include "read/models/llama4.hpp"
#include "read/models/mamba.hpp"
#include "read/models/phimoe.hpp"
#include "read/json_read.hpp"
#include "read/models/stack.hpp"

namespace actmem {

using detail::json;

namespace {

// Keys that set architecture (our schema = Llama-style HF names plus explicit types).
const char* const kModelKeys[] = {
    "metadata", "model_type", "hidden_size", "num_attention_heads", "num_key_value_heads",
    "head_dim", "intermediate_size", "num_hidden_layers", "vocab_size", "max_position_embeddings",
    "tie_word_embeddings", "hidden_act", "attention_bias", "mlp_bias", "attention_dropout",
    "hidden_dropout", "ffn_type", "norm_type", "position_embedding", "qkv_bias",
    "num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
    "num_shared_experts", "shared_expert_intermediate_size", "capacity_factor", "layer_kinds",
    "layer_stack", "decoder_sparse_step", "mlp_only_layers", "qk_norm", "gemma_norm",
    "sandwich_norm", "attn_logit_softcapping", "final_logit_softcapping", "hidden_activation",
    "block_layout", "attn_sinks",
    // GPT-2 names
    "n_embd", "n_head", "n_layer", "n_positions", "n_inner", "activation_function", "attn_pdrop",
    "resid_pdrop", "embd_pdrop"};

// Hugging Face keys that do not change memory; accepted silently.
const char* const kIgnoredHfKeys[] = {"architectures",
                                      "query_pre_attn_scalar",
                                      "layer_types",
                                      "sliding_window_pattern",
                                      "rope_local_base_freq",
                                      "cache_implementation",
                                      "torch_dtype",
                                      "transformers_version",
                                      "bos_token_id",
                                      "eos_token_id",
                                      "pad_token_id",
                                      "initializer_range",
                                      "rms_norm_eps",
                                      "layer_norm_epsilon",
                                      "layer_norm_eps",
                                      "rope_theta",
                                      "rope_scaling",
                                      "use_cache",
                                      "pretraining_tp",
                                      "sliding_window",
                                      "use_sliding_window",
                                      "max_window_layers",
                                      "router_aux_loss_coef",
                                      "router_jitter_noise",
                                      "n_ctx",
                                      "summary_type",
                                      "summary_use_proj",
                                      "summary_activation",
                                      "summary_proj_to_labels",
                                      "summary_first_dropout",
                                      "scale_attn_weights",
                                      "task_specific_params",
                                      "_name_or_path",
                                      "model_name",
                                      "tokenizer_class",
                                      "norm_topk_prob",
                                      "qkv_bias_",
                                      "use_return_dict",
                                      "return_dict",
                                      "rope_type",
                                      "id2label",
                                      "label2id",
                                      "bias",
                                      "shared_expert_gate"};

// Keys only one naming reads: GPT-2's own names, and the Llama-style names GPT2Config maps onto
// them (its attribute_map) or does not have. A key of the other naming would be ignored, so it is
// refused with the name this model reads.
const char* const kGpt2Only[] = {"n_embd",      "n_head",      "n_layer",
                                 "n_positions", "n_inner",     "activation_function",
                                 "attn_pdrop",  "resid_pdrop", "embd_pdrop"};
const char* const kLlamaOnly[] = {"hidden_size",
                                  "num_attention_heads",
                                  "num_key_value_heads",
                                  "intermediate_size",
                                  "num_hidden_layers",
                                  "max_position_embeddings",
                                  "attention_bias",
                                  "mlp_bias",
                                  "attention_dropout",
                                  "hidden_act",
                                  "hidden_activation",
                                  "attn_logit_softcapping",
                                  "final_logit_softcapping",
                                  "sandwich_norm",
                                  "gemma_norm",
                                  "qk_norm"};
// What the other naming calls it, for the message.
const char* other_name(const std::string& k) {
  static const std::pair<const char*, const char*> kPairs[] = {
      {"n_embd", "hidden_size"},           {"n_head", "num_attention_heads"},
      {"n_layer", "num_hidden_layers"},    {"n_positions", "max_position_embeddings"},
      {"n_inner", "intermediate_size"},    {"activation_function", "hidden_act"},
      {"attn_pdrop", "attention_dropout"}, {"resid_pdrop", "hidden_dropout"},
      {"embd_pdrop", "hidden_dropout"}};
  for (const auto& [a, b] : kPairs) {
    if (k == a) return b;
    if (k == b) return a;
  }
  return nullptr;
}

const char* const kMetadataKeys[] = {"name", "source", "published_params",
                                     "published_params_source", "notes"};

// The GELU variants transformers' ACT2FN names (activations.py): each is a GELU for memory.
const char* const kGeluNames[] = {"gelu",      "gelu_new",    "gelu_pytorch_tanh",
                                  "gelu_fast", "gelu_python", "gelu_accurate"};

// The Hugging Face model_types read (docs/schema.md).
const char* const kSupportedTypes[] = {
    "deepseek_v2", "deepseek_v3", "falcon",     "gemma2",      "gemma3_text",
    "gpt2",        "gpt_oss",     "llama",      "llama4_text", "mamba2",
    "mistral",     "mixtral",     "nemotron_h", "phi3",        "phimoe",
    "qwen2",       "qwen2_moe",   "qwen3",      "qwen3_moe",   "RefinedWebModel"};

// Hugging Face keys checked against their defaults before the key loop (model_from_json): at
// those defaults they change nothing and pass silently.
const char* const kCheckedHfKeys[] = {"quantization_config",
                                      "attn_implementation",
                                      "_attn_implementation",
                                      "reorder_and_upcast_attn",
                                      "scale_attn_by_inverse_layer_idx",
                                      "output_router_logits"};

using detail::listed;

// "a, b, c": a list as the messages show it.
template <std::size_t N>
std::string joined(const char* const (&list)[N]) {
  std::string s;
  for (const char* x : list) s += (s.empty() ? "" : ", ") + std::string(x);
  return s;
}

// A model's "metadata" object: its display name, source and published parameter count.
std::optional<Error> read_metadata(const json& j, ModelSpec* m) {
  if (!j.contains("metadata")) return std::nullopt;
  const json& md = j["metadata"];
  if (!md.is_object())
    return make_error("wrong_type", "model.metadata", "model.metadata: must be an object");
  ACTMEM_TRY(detail::check_keys(md, "model.metadata", kMetadataKeys,
                                sizeof(kMetadataKeys) / sizeof(kMetadataKeys[0])));
  if (md.contains("name"))
    ACTMEM_TRY(detail::read_string(md["name"], "model.metadata.name", &m->name));
  if (md.contains("source"))
    ACTMEM_TRY(detail::read_string(md["source"], "model.metadata.source", &m->source));
  if (md.contains("published_params"))
    ACTMEM_TRY(detail::read_uint(md["published_params"], "model.metadata.published_params",
                                 &m->published_params));
  if (md.contains("published_params_source"))
    ACTMEM_TRY(detail::read_string(md["published_params_source"],
                                   "model.metadata.published_params_source",
                                   &m->published_params_source));
  return std::nullopt;
}

// The sliding-window layers of Gemma 2 and 3 and gpt-oss: layer_types when given, else the config
// class's pattern (Gemma2Config and GptOssConfig: even layers sliding; Gemma3TextConfig: every
// sliding_window_pattern-th layer full, default 6), each sliding layer's window sliding_window
// (class defaults 4096 and 128). Gemma 3 with both kinds present also computes two RoPE tables
// (Gemma3TextModel rotary_emb and rotary_emb_local).
std::optional<Error> read_sliding_layers(const json& j, const std::string& type, ModelSpec* m,
                                         std::vector<std::uint64_t>* window) {
  const bool gemma3 = type == "gemma3_text";
  if (type != "gemma2" && !gemma3 && type != "gpt_oss") return std::nullopt;
  if (m->layers > kMaxLayers) return std::nullopt;  // validate() names the bound
  const std::size_t n = static_cast<std::size_t>(m->layers);
  std::vector<bool> sliding(n, false);
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    ACTMEM_TRY(detail::read_layer_types(j, n, type == "gpt_oss" ? "gpt-oss" : "Gemma", &sliding));
  } else if (gemma3) {
    std::uint64_t pattern = 6;
    if (j.contains("sliding_window_pattern") && !j["sliding_window_pattern"].is_null())
      ACTMEM_TRY(
          detail::read_uint(j["sliding_window_pattern"], "model.sliding_window_pattern", &pattern));
    for (std::size_t i = 0; i < n; ++i) sliding[i] = (i + 1) % pattern != 0;
  } else {
    for (std::size_t i = 0; i < n; ++i) sliding[i] = (i + 1) % 2 != 0;
  }
  std::uint64_t w = type == "gpt_oss" ? 128 : 4096;
  if (j.contains("sliding_window")) {
    if (j["sliding_window"].is_null())
      w = 0;
    else
      ACTMEM_TRY(detail::read_uint(j["sliding_window"], "model.sliding_window", &w));
  }
  window->assign(n, 0);
  bool any_sliding = false, any_full = false;
  for (std::size_t i = 0; i < n; ++i) {
    (*window)[i] = sliding[i] ? w : 0;
    (sliding[i] ? any_sliding : any_full) = true;
  }
  if (gemma3) m->hf_rope_tables = any_sliding && any_full ? 2 : 1;
  return std::nullopt;
}

}  // namespace

namespace {

// Multimodal wrappers whose language model is their text_config (transformers Llama4Config,
// Gemma3Config), and the text model_type each holds.
const char* wrapped_text_type(const std::string& type) {
  if (type == "llama4") return "llama4_text";
  if (type == "gemma3") return "gemma3_text";
  return nullptr;
}

// The wrapper's own keys that change nothing here (token ids, the projector's and vision tower's
// settings are read only with a vision tower, which is refused).
const char* const kWrapperKeys[] = {
    "model_type",         "text_config",       "vision_config",        "metadata",
    "architectures",      "torch_dtype",       "transformers_version", "boi_token_index",
    "eoi_token_index",    "image_token_index", "mm_tokens_per_image",  "initializer_range",
    "tie_word_embeddings"};

}  // namespace

Result<ModelSpec> model_from_json(const json& j, const std::string& id,
                                  std::vector<std::string>* warnings) {
  if (!j.is_object())
    return make_error("wrong_type", "model",
                      "model: must be a JSON object, got " + detail::kind_of(j));
  // A multimodal wrapper: its language model is text_config, read as a model of the text
  // model_type with the wrapper's metadata; errors inside name model.text_config.KEY.
  if (j.contains("model_type") && j["model_type"].is_string()) {
    const std::string outer = j["model_type"].get<std::string>();
    if (const char* text_type = wrapped_text_type(outer)) {
      if (j.contains("vision_config") && !j["vision_config"].is_null())
        return make_error(
            "unsupported", "model.vision_config",
            "model.vision_config: the vision tower is not modelled; to estimate "
            "the language model, give text_config's object as the model (model_type " +
                std::string(text_type) + ")");
      if (!j.contains("text_config") || !j["text_config"].is_object())
        return make_error("missing_key", "model.text_config",
                          "model.text_config: required for model_type " + outer +
                              " (an object: the language model's config)");
      // The keys refused on a text model are refused here too (transformers applies a
      // wrapper's quantization and attention settings to its language model).
      for (const char* k : kCheckedHfKeys)
        if (j.contains(k) && !j[k].is_null() && j[k] != false)
          return make_error("unsupported", std::string("model.") + k,
                            std::string("model.") + k + ": " + detail::short_dump(j[k]) +
                                " is not modelled on a multimodal wrapper; remove it");
      if (j.contains("tie_word_embeddings")) {
        bool tied = false;
        ACTMEM_TRY(detail::read_bool(j["tie_word_embeddings"], "model.tie_word_embeddings", &tied));
      }
      for (auto it = j.begin(); it != j.end(); ++it)
        if (!listed(kWrapperKeys, it.key()) && !listed(kCheckedHfKeys, it.key()) && warnings)
          warnings->push_back("model." + it.key() + ": ignored (does not affect memory)");
      json text = j["text_config"];
      if (text.contains("model_type") && text["model_type"] != text_type)
        return make_error(
            "invalid_value", "model.text_config.model_type",
            "model.text_config.model_type: " + detail::short_dump(text["model_type"]) +
                " is not the language model of " + outer + "; allowed: " + text_type);
      text["model_type"] = text_type;
      // The wrapper's tie_word_embeddings is the one transformers ties by; the text config's, if
      // given, must agree.
      if (j.contains("tie_word_embeddings")) {
        if (text.contains("tie_word_embeddings") &&
            text["tie_word_embeddings"] != j["tie_word_embeddings"])
          return make_error(
              "invalid_value", "model.tie_word_embeddings",
              "model.tie_word_embeddings: " + detail::short_dump(j["tie_word_embeddings"]) +
                  " conflicts with model.text_config.tie_word_embeddings: " +
                  detail::short_dump(text["tie_word_embeddings"]) + "; give one");
        text["tie_word_embeddings"] = j["tie_word_embeddings"];
      }
      if (j.contains("metadata")) text["metadata"] = j["metadata"];
      std::vector<std::string> inner;
      auto r = model_from_json(text, id, warnings ? &inner : nullptr);
      const std::string root = "model.text_config";
      for (std::string& w : inner)
        warnings->push_back(nest_model_fields(Error{"", "", w}, root).message);
      if (!r.ok()) return nest_model_fields(r.error(), root);
      // Errors found later (validate(), the layer kinds' checks) name text_config's keys too.
      ModelSpec m = r.value();
      m.field = root;
      for (LayerKind& k : m.kinds) k.field = nest_model_fields(Error{"", k.field, ""}, root).field;
      return m;
    }
  }
  ModelSpec m;
  LayerKind& b = m.kinds[0];  // the top-level keys: the base kind every layer kind starts from
  m.id = id.empty() ? "custom" : id;
  m.name = m.id;
  std::string type;
  if (j.contains("model_type"))
    ACTMEM_TRY(detail::read_string(j["model_type"], "model.model_type", &type));
  const bool hf = !type.empty();
  if (hf && !listed(kSupportedTypes, type)) {
    // A config with a standard decoder's keys gets the closest supported family and how to
    // force it (issue 13): a supported type sharing its longest prefix (qwen3_next: qwen3_moe,
    // mistral3: mistral), else one a few edits away, else Llama, the standard decoder.
    std::string hint;
    const bool decoder = j.contains("hidden_size") && j.contains("num_attention_heads") &&
                         j.contains("num_hidden_layers") && j.contains("vocab_size");
    // State-space (Mamba) layers: no decoder family reads them, so none is offered.
    bool ssm = false;
    for (const char* k : {"hybrid_override_pattern", "ssm_state_size", "state_size",
                          "mamba_num_heads", "layers_block_type", "conv_kernel"})
      ssm = ssm || j.contains(k);
    // A spelling of a family read (nemotron-h, Mamba2, "mamba2 "): that family, by name.
    std::string spelled;
    for (char c : type)
      if (c != ' ') spelled += c == '-' ? '_' : static_cast<char>(std::tolower(c));
    if (listed(kSupportedTypes, spelled) && spelled != type)
      hint = " (did you mean '" + spelled + "'?)";
    else if (ssm)
      hint =
          "; its state-space layers are not modelled (the state-space families read are mamba2 "
          "and nemotron_h)";
    else if (decoder && type.size() <= 64) {
      std::size_t best = 2;
      std::string family;
      for (const char* t : kSupportedTypes) {
        std::size_t n = 0;
        while (t[n] && n < type.size() && t[n] == type[n]) ++n;
        if (n > best) best = n, family = t;
      }
      if (family.empty())
        family = detail::closest(type, kSupportedTypes,
                                 sizeof(kSupportedTypes) / sizeof(kSupportedTypes[0]));
      if (family.empty()) family = "llama";
      hint = "; its keys are a decoder's: the closest supported family is " + family +
             " (set \"model_type\": \"" + family +
             "\" to read it as one, at the risk of what that family does not read)";
    }
    return make_error("unsupported", "model.model_type",
                      "model.model_type: '" + detail::key_text(type) +
                          "' is not a supported architecture" + hint +
                          "; allowed: " + joined(kSupportedTypes));
  }
  // Families whose config classes differ from LlamaConfig's defaults in ways read below.
  const bool gemma = type == "gemma2" || type == "gemma3_text";
  const bool qwen_moe = type == "qwen2_moe" || type == "qwen3_moe";
  const bool deepseek = detail::is_deepseek_type(type);
  const bool gpt_oss = type == "gpt_oss";
  const bool phimoe = type == "phimoe";
  const bool llama4 = type == "llama4_text";
  // Hugging Face keys that change memory in ways not modelled: refused, never ignored. A quantized
  // checkpoint trains (QLoRA) or dequantizes differently; the attention implementation is a
  // training choice (config.attention); GPT-2's fp32-upcast and per-layer-scaled attention keep
  // other tensors. The flags are accepted at their defaults (false).
  // DeepSeek-V3's published checkpoint is FP8 (e4m3 weights, one fp32 scale per 128 x 128 block:
  // README_WEIGHTS.md); its logical model is what trains in config.param_dtype, so the block is
  // read and said, not refused.
  const bool deepseek_fp8 = type == "deepseek_v3" && j.contains("quantization_config") &&
                            j["quantization_config"].is_object() &&
                            j["quantization_config"].value("quant_method", json()) == "fp8";
  if (deepseek_fp8 && warnings)
    warnings->push_back(
        "model.quantization_config: the checkpoint stores FP8 weights with one fp32 scale per "
        "weight block; estimated as the logical model in config.param_dtype (the scales are "
        "not parameters)");
  // gpt-oss's published checkpoints store the experts' weights as MXFP4 (quant_method "mxfp4":
  // e2m1 values, two per byte, in blocks of 32 with one e8m0 scale byte each, 4.25 bits per
  // weight; attention, router, embedding and head in bf16: its modules_to_not_convert).
  const bool gpt_oss_mxfp4 = gpt_oss && j.contains("quantization_config") &&
                             j["quantization_config"].is_object() &&
                             j["quantization_config"].value("quant_method", json()) == "mxfp4";
  if (gpt_oss_mxfp4 && warnings)
    warnings->push_back(
        "model.quantization_config: the checkpoint stores the experts' weights as MXFP4 (two "
        "4-bit values per byte, one scale byte per 32 values); estimated as the logical model "
        "in config.param_dtype (the block scales are not parameters)");
  if (!deepseek_fp8 && !gpt_oss_mxfp4 && j.contains("quantization_config") &&
      !j["quantization_config"].is_null())
    return make_error("unsupported", "model.quantization_config",
                      "model.quantization_config: quantized checkpoints are not modelled; remove "
                      "it to estimate the model in config.dtype");
  for (const char* k : {"attn_implementation", "_attn_implementation"})
    if (j.contains(k) && !j[k].is_null())
      return make_error("unsupported", std::string("model.") + k,
                        std::string("model.") + k +
                            ": the attention implementation is a training choice; set "
                            "config.attention (eager, sdpa_math, flash, sdpa_cudnn) instead");
  // transformers' MoE models with output_router_logits add the load-balancing loss over every
  // layer's router logits (load_balancing_loss_func), whose saved tensors are not modelled.
  for (const char* k :
       {"reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "output_router_logits"})
    if (j.contains(k) && j[k] != false)
      return make_error("unsupported", std::string("model.") + k,
                        std::string("model.") + k + ": " + detail::short_dump(j[k]) +
                            " is not modelled; allowed: false");
  if (detail::is_falcon_type(type)) {
    ACTMEM_TRY(read_metadata(j, &m));
    ACTMEM_TRY(detail::read_falcon(j, &m, warnings));
    return m;
  }
  if (detail::is_mamba_type(type)) {
    ACTMEM_TRY(read_metadata(j, &m));
    ACTMEM_TRY(detail::read_mamba_family(j, type, &m, warnings));
    return m;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (listed(kModelKeys, k)) continue;
    if (listed(kCheckedHfKeys, k))
      continue;  // checked above: at their defaults they change nothing
    if (deepseek && detail::is_deepseek_key(k)) continue;  // read by read_deepseek
    if (gpt_oss && detail::is_gpt_oss_key(k)) continue;    // read by read_gpt_oss
    if (phimoe && detail::is_phimoe_key(k)) continue;      // read by read_phimoe
    if (llama4 && detail::is_llama4_key(k)) continue;      // read by read_llama4
    if (hf) {
      if (!listed(kIgnoredHfKeys, k) && warnings)
        warnings->push_back("model." + k + ": ignored (does not affect memory)");
      continue;
    }
    return *detail::unknown_key(
        "model", k, kModelKeys, sizeof(kModelKeys) / sizeof(kModelKeys[0]), "unknown key",
        "a Hugging Face config.json must carry model_type; see docs/schema.md for our keys");
  }
  {
    const bool gpt2_names = type == "gpt2";
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      if (!(gpt2_names ? listed(kLlamaOnly, k) : listed(kGpt2Only, k))) continue;
      // Phi3Config names its residual and embedding dropout as GPT-2 does (read below).
      if (type == "phi3" && (k == "resid_pdrop" || k == "embd_pdrop")) continue;
      const char* other = other_name(k);
      const std::string reads = other ? std::string("; this model reads ") + other : "";
      return make_error("unsupported", "model." + k,
                        "model." + k + ": " +
                            (gpt2_names ? std::string("not read for model_type gpt2") + reads
                                        : std::string("a GPT-2 key name, read only with "
                                                      "model_type \"gpt2\"") +
                                              reads));
    }
  }
  ACTMEM_TRY(read_metadata(j, &m));
  const bool gpt2 = type == "gpt2";
  // Reads key `k` (shown as model.k) into an integer if present; `required` makes absence an error.
  auto get_uint = [&](const char* k, std::uint64_t* out, bool required,
                      bool allow_null = false) -> std::optional<Error> {
    const std::string field = std::string("model.") + k;
    if (!j.contains(k) || (allow_null && j[k].is_null())) {
      if (required)
        return make_error("missing_key", field, field + ": required (a positive integer)");
      return std::nullopt;
    }
    return detail::read_uint(j[k], field, out);
  };
  auto get_bool = [&](const char* k, bool* out) -> std::optional<Error> {
    if (!j.contains(k)) return std::nullopt;
    return detail::read_bool(j[k], std::string("model.") + k, out);
  };
  auto get_prob = [&](const char* k, double* out) -> std::optional<Error> {
    if (!j.contains(k)) return std::nullopt;
    const std::string field = std::string("model.") + k;
    ACTMEM_TRY(detail::read_double(j[k], field, out));
    if (*out < 0.0 || *out >= 1.0)
      return make_error("invalid_value", field,
                        field + ": must be in [0, 1), got " + detail::short_dump(j[k]));
    return std::nullopt;
  };

  // One hidden dropout covers the embedding and the residual branches (inventory_io.cpp's
  // embed.dropout_mask); a different embedding rate (GPT-2's and Phi-3's embd_pdrop) would be
  // ignored, so it is refused.
  // `embd_default` is the config class's own default for a missing embd_pdrop (GPT2Config 0.1,
  // Phi3Config 0.0): a missing key means that value, not "the same as resid_pdrop".
  auto embd_matches = [&](double embd_default) -> std::optional<Error> {
    double embd = embd_default;
    ACTMEM_TRY(get_prob("embd_pdrop", &embd));
    // hidden_dropout would replace resid_pdrop later: two names for one rate must agree.
    if (j.contains("hidden_dropout") && j.contains("resid_pdrop") &&
        j["hidden_dropout"] != j["resid_pdrop"])
      return make_error("invalid_value", "model.hidden_dropout",
                        "model.hidden_dropout: " + detail::short_dump(j["hidden_dropout"]) +
                            " conflicts with model.resid_pdrop: " +
                            detail::short_dump(j["resid_pdrop"]) + "; give one");
    if (embd == m.hidden_dropout) return std::nullopt;
    // Rates as %g: the same text whether the value arrived as 0 or 0.0 (the page's JSON).
    char buf[96];
    std::snprintf(buf, sizeof buf, "%g differs from resid_pdrop %g", embd, m.hidden_dropout);
    return make_error("unsupported", "model.embd_pdrop",
                      std::string("model.embd_pdrop: ") + buf +
                          "; actmem applies one rate to embeddings and residuals");
  };

  std::string act;
  if (gpt2) {
    // GPT2Config defaults: LayerNorm, learned positions, tied embeddings, biases everywhere,
    // n_inner = 4 * n_embd, dropout 0.1 (attn_pdrop, resid_pdrop, embd_pdrop).
    m.norm = NormType::kLayerNorm;
    m.pos = PosEncoding::kLearned;
    b.ffn = FfnType::kGelu;
    m.tied_embeddings = true;
    b.qkv_bias = b.o_bias = b.mlp_bias = true;
    m.attention_dropout = m.hidden_dropout = 0.1;
    ACTMEM_TRY(get_uint("n_embd", &m.hidden, true));
    ACTMEM_TRY(get_uint("n_head", &b.heads, true));
    ACTMEM_TRY(get_uint("n_layer", &m.layers, true));
    m.max_positions = 1024;
    ACTMEM_TRY(get_uint("n_positions", &m.max_positions, false));
    ACTMEM_TRY(get_uint("vocab_size", &m.vocab, true));
    b.kv_heads = b.heads;
    b.ffn_hidden = 0;
    ACTMEM_TRY(get_uint("n_inner", &b.ffn_hidden, false, true));
    if (b.ffn_hidden == 0) b.ffn_hidden = 4 * m.hidden;
    ACTMEM_TRY(get_prob("attn_pdrop", &m.attention_dropout));
    ACTMEM_TRY(get_prob("resid_pdrop", &m.hidden_dropout));
    ACTMEM_TRY(embd_matches(0.1));
    if (j.contains("activation_function"))
      ACTMEM_TRY(detail::read_string(j["activation_function"], "model.activation_function", &act));
    if (j.contains("activation_function") && !listed(kGeluNames, act) && act != "relu")
      return make_error("unsupported", "model.activation_function",
                        "model.activation_function: '" + detail::key_text(act) +
                            "' is not supported for gpt2; allowed: " + joined(kGeluNames) +
                            ", relu");
  } else {
    // Llama-family defaults (LlamaConfig): RMSNorm, RoPE, SwiGLU, untied, no biases, no dropout.
    m.norm = NormType::kRmsNorm;
    m.pos = PosEncoding::kRope;
    b.ffn = FfnType::kSwiglu;
    b.qkv_bias = type == "qwen2" || type == "qwen2_moe";  // Qwen2Attention: q/k/v carry biases
    // Qwen3Attention (transformers modeling_qwen3.py): no q/k/v biases unless attention_bias,
    // RMSNorm over each head of q and k; head_dim is its own key (Qwen3-8B: 128 with h/a = 128,
    // Qwen3-0.6B: 128 with h/a = 64).
    b.qk_norm = type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text";
    // Gemma 2 and 3 (modeling_gemma2.py, modeling_gemma3.py): Gemma's RMSNorm in the sandwich
    // layout, GeGLU (gelu_pytorch_tanh), tied embeddings; Gemma 2 soft-caps attention scores at
    // 50 and the final logits at 30 by default (Gemma2Config), Gemma 3 neither (Gemma3TextConfig).
    if (gemma) {
      m.gemma_norm = m.sandwich_norm = true;
      b.ffn = FfnType::kGeglu;
      m.tied_embeddings = true;
      if (type == "gemma2") m.attn_softcap = 50.0, m.final_softcap = 30.0;
      m.hf_embed_scale = true;
    }
    ACTMEM_TRY(get_uint("hidden_size", &m.hidden, true));
    ACTMEM_TRY(get_uint("num_attention_heads", &b.heads, true));
    ACTMEM_TRY(get_uint("num_hidden_layers", &m.layers, true));
    ACTMEM_TRY(get_uint("vocab_size", &m.vocab, true));
    b.kv_heads = b.heads;
    // Gemma2Config and Gemma3TextConfig default num_key_value_heads to 4, not to the head count.
    // GptOssConfig's, PhimoeConfig's and Llama4TextConfig's are 8.
    if ((gemma || gpt_oss || phimoe || llama4) &&
        (!j.contains("num_key_value_heads") || j["num_key_value_heads"].is_null()))
      return make_error("missing_key", "model.num_key_value_heads",
                        "model.num_key_value_heads: required for model_type " + type +
                            " (its config class's default is " + (gemma ? "4" : "8") +
                            ", not num_attention_heads)");
    ACTMEM_TRY(get_uint("num_key_value_heads", &b.kv_heads, false, true));
    ACTMEM_TRY(get_uint("intermediate_size", &b.ffn_hidden, false));
    ACTMEM_TRY(get_uint("max_position_embeddings", &m.max_positions, false));
    // GptOssConfig's attention_bias defaults to True (q, k, v and o carry biases).
    bool attention_bias = gpt_oss;
    ACTMEM_TRY(get_bool("attention_bias", &attention_bias));
    if (attention_bias || gpt_oss) b.qkv_bias = b.o_bias = attention_bias;
    ACTMEM_TRY(get_bool("mlp_bias", &b.mlp_bias));
    ACTMEM_TRY(get_prob("attention_dropout", &m.attention_dropout));
    if (type == "phi3") {
      m.hf_rope_cat = true;  // apply_rotary_pos_emb: cat([rotated, passed], -1)
      // Phi3DecoderLayer: resid_attn_dropout and resid_mlp_dropout at resid_pdrop; the embedding
      // dropout at embd_pdrop, which the one hidden rate must then equal (as for GPT-2).
      ACTMEM_TRY(get_prob("resid_pdrop", &m.hidden_dropout));
      ACTMEM_TRY(embd_matches(0.0));
    }
    const char* act_key = "model.hidden_act";  // the key the activation came from, for messages
    if (j.contains("hidden_act"))
      ACTMEM_TRY(detail::read_string(j["hidden_act"], "model.hidden_act", &act));
    // Gemma's configs name the MLP's activation hidden_activation (hidden_act is legacy there);
    // two names that disagree would leave one ignored.
    if (j.contains("hidden_activation") && !j["hidden_activation"].is_null()) {
      std::string ha;
      ACTMEM_TRY(detail::read_string(j["hidden_activation"], "model.hidden_activation", &ha));
      if (!act.empty() && act != ha)
        return make_error("invalid_value", "model.hidden_activation",
                          "model.hidden_activation: '" + detail::key_text(ha) +
                              "' conflicts with model.hidden_act '" + detail::key_text(act) +
                              "'; give one");
      act = ha;
      act_key = "model.hidden_activation";
    }
    const bool given = j.contains("hidden_act") ||
                       (j.contains("hidden_activation") && !j["hidden_activation"].is_null());
    if (given) {
      if (act == "silu" || act == "swish")
        b.ffn = FfnType::kSwiglu;
      else if (listed(kGeluNames, act))
        b.ffn = FfnType::kGeglu;
      else
        return make_error("unsupported", act_key,
                          std::string(act_key) + ": '" + detail::key_text(act) +
                              "' is not supported; allowed: silu, swish, " + joined(kGeluNames));
    }
  }
  ACTMEM_TRY(get_bool("tie_word_embeddings", &m.tied_embeddings));
  ACTMEM_TRY(get_prob("hidden_dropout", &m.hidden_dropout));
  b.head_dim = b.heads ? m.hidden / b.heads : 0;
  // Config classes whose head_dim default is a number, not hidden / heads: Qwen3Config and
  // Qwen3MoeConfig 128, Gemma2Config and Gemma3TextConfig 256.
  // GptOssConfig 64.
  const std::uint64_t class_head_dim = type == "qwen3" || type == "qwen3_moe" || llama4 ? 128
                                       : gemma                                          ? 256
                                       : gpt_oss                                        ? 64
                                                                                        : 0;
  if (class_head_dim) b.head_dim = class_head_dim;
  ACTMEM_TRY(get_uint("head_dim", &b.head_dim, false, true));
  // DeepSeek's heads are qk_nope_head_dim + qk_rope_head_dim wide (read_deepseek).
  const bool explicit_head_dim =
      deepseek || class_head_dim > 0 || (j.contains("head_dim") && !j["head_dim"].is_null());
  if (!explicit_head_dim && b.heads > 0 && m.hidden % b.heads != 0)
    return make_error("invalid_value", "model.head_dim",
                      "model.head_dim: hidden_size=" + std::to_string(m.hidden) +
                          " is not divisible by num_attention_heads=" + std::to_string(b.heads) +
                          "; give head_dim explicitly");
  ACTMEM_TRY(get_bool("qkv_bias", &b.qkv_bias));
  ACTMEM_TRY(get_bool("qk_norm", &b.qk_norm));
  ACTMEM_TRY(get_bool("attn_sinks", &b.attn_sinks));
  ACTMEM_TRY(get_bool("gemma_norm", &m.gemma_norm));
  ACTMEM_TRY(get_bool("sandwich_norm", &m.sandwich_norm));
  // Soft-capping: a positive cap, or null for none (as Gemma's configs write it).
  for (auto [k, out] :
       {std::pair<const char*, double*>{"attn_logit_softcapping", &m.attn_softcap},
        std::pair<const char*, double*>{"final_logit_softcapping", &m.final_softcap}}) {
    if (!j.contains(k)) continue;
    if (j[k].is_null()) {
      *out = 0.0;
      continue;
    }
    const std::string field = std::string("model.") + k;
    ACTMEM_TRY(detail::read_double(j[k], field, out));
    if (!(*out > 0.0))
      return make_error(
          "invalid_value", field,
          field + ": must be a positive cap or null, got " + detail::short_dump(j[k]));
  }
  // Explicit types (our schema) override what model_type implies.
  if (j.contains("ffn_type")) {
    std::string s;
    ACTMEM_TRY(detail::read_string(j["ffn_type"], "model.ffn_type", &s));
    if (!ffn_table().parse(s, &b.ffn))
      return make_error("invalid_value", "model.ffn_type",
                        "model.ffn_type: '" + detail::key_text(s) +
                            "' is not allowed; allowed: " + ffn_table().list());
  }

  if (j.contains("norm_type")) {
    std::string s;
    ACTMEM_TRY(detail::read_string(j["norm_type"], "model.norm_type", &s));
    if (!norm_table().parse(s, &m.norm))
      return make_error("invalid_value", "model.norm_type",
                        "model.norm_type: '" + detail::key_text(s) +
                            "' is not allowed; allowed: " + norm_table().list());
  }

  if (m.gemma_norm && m.norm != NormType::kRmsNorm)
    return make_error("invalid_value", "model.gemma_norm",
                      "model.gemma_norm: Gemma's norm is an RMSNorm; norm_type is " +
                          std::string(norm_name(m.norm)));
  if (j.contains("block_layout")) {
    std::string s;
    ACTMEM_TRY(detail::read_string(j["block_layout"], "model.block_layout", &s));
    if (!block_table().parse(s, &m.block))
      return make_error("invalid_value", "model.block_layout",
                        "model.block_layout: '" + detail::key_text(s) +
                            "' is not allowed; allowed: " + block_table().list());
  }
  if (j.contains("position_embedding")) {
    std::string s;
    ACTMEM_TRY(detail::read_string(j["position_embedding"], "model.position_embedding", &s));
    if (!pos_table().parse(s, &m.pos))
      return make_error("invalid_value", "model.position_embedding",
                        "model.position_embedding: '" + detail::key_text(s) +
                            "' is not allowed; allowed: " + pos_table().list());
  }

  if (deepseek) {
    // DeepSeek names its experts and stack its own way; the other families' keys would be
    // ignored there.
    for (const char* k :
         {"num_local_experts", "num_experts", "capacity_factor", "num_shared_experts",
          "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers",
          "layer_kinds", "layer_stack", "qk_norm", "sandwich_norm", "gemma_norm"})
      if (j.contains(k))
        return make_error("unsupported", std::string("model.") + k,
                          std::string("model.") + k + ": not read for model_type " + type +
                              " (n_routed_experts, n_shared_experts and first_k_dense_replace "
                              "describe its experts and stack)");
    ACTMEM_TRY(detail::read_deepseek(j, type, &m));
    return m;
  }
  std::vector<std::uint64_t> windows;
  ACTMEM_TRY(read_sliding_layers(j, type, &m, &windows));
  if (gpt_oss) ACTMEM_TRY(detail::read_gpt_oss(j, &m));
  if (phimoe) ACTMEM_TRY(detail::read_phimoe(j, &m));
  if (llama4 && !j.contains("num_local_experts"))
    return make_error("missing_key", "model.num_local_experts",
                      "model.num_local_experts: required for model_type llama4_text "
                      "(Llama4TextConfig's default is 16)");
  // Mixture of experts (Mixtral: num_local_experts + intermediate_size per expert; Qwen2-MoE:
  // num_experts + moe_intermediate_size + shared_expert_intermediate_size).
  std::uint64_t experts = 0;
  // A mixture-of-experts model_type without its expert count would be read as a dense model.
  if (type == "mixtral" && !j.contains("num_local_experts"))
    return make_error("missing_key", "model.num_local_experts",
                      "model.num_local_experts: required for model_type mixtral (MixtralConfig's "
                      "default is 8)");
  if (type == "qwen2_moe" && !j.contains("num_experts"))
    return make_error("missing_key", "model.num_experts",
                      "model.num_experts: required for model_type qwen2_moe (Qwen2MoeConfig's "
                      "default is 60)");
  if (type == "qwen3_moe" && !j.contains("num_experts"))
    return make_error("missing_key", "model.num_experts",
                      "model.num_experts: required for model_type qwen3_moe (Qwen3MoeConfig's "
                      "default is 128)");
  ACTMEM_TRY(get_uint("num_local_experts", &experts, false));
  if (experts == 0) ACTMEM_TRY(get_uint("num_experts", &experts, false));
  // Two names for the expert count (Mixtral's and Qwen-MoE's): both given must agree.
  if (j.contains("num_local_experts") && j.contains("num_experts") &&
      j["num_local_experts"] != j["num_experts"])
    return make_error("invalid_value", "model.num_experts",
                      "model.num_experts: " + detail::short_dump(j["num_experts"]) +
                          " conflicts with model.num_local_experts: " +
                          detail::short_dump(j["num_local_experts"]) + "; give one");
  // Keys read only for a mixture of experts: on a dense model they would change nothing.
  if (experts == 0)
    for (const char* k : {"num_experts_per_tok", "moe_intermediate_size", "capacity_factor",
                          "num_shared_experts", "shared_expert_intermediate_size"})
      if (j.contains(k) && !j[k].is_null())
        return make_error("invalid_value", std::string("model.") + k,
                          std::string("model.") + k +
                              ": read only for a mixture of experts; this model gives no "
                              "num_local_experts or num_experts");
  if (experts > 0) {
    b.moe.experts = experts;
    // PhimoeConfig defaults to 2, the only count its router supports (read_phimoe);
    // Llama4TextConfig to 1.
    if (phimoe) b.moe.top_k = 2;
    if (llama4) b.moe.top_k = 1;
    ACTMEM_TRY(get_uint("num_experts_per_tok", &b.moe.top_k, !phimoe && !llama4));
    b.moe.expert_ffn = b.ffn_hidden;
    // Qwen-MoE configs size experts by moe_intermediate_size, whose class defaults (Qwen2MoeConfig
    // 1408, Qwen3MoeConfig 768) are not intermediate_size: a missing key is an error, as is
    // Qwen2-MoE's shared expert width (Qwen2MoeConfig default 5632).
    if (qwen_moe)
      for (const char* k : {"moe_intermediate_size", "shared_expert_intermediate_size"})
        if (!j.contains(k) && (std::string(k) == "moe_intermediate_size" || type == "qwen2_moe"))
          return make_error("missing_key", std::string("model.") + k,
                            std::string("model.") + k + ": required for model_type " + type +
                                " (its config class's default is not intermediate_size)");
    ACTMEM_TRY(get_uint("moe_intermediate_size", &b.moe.expert_ffn, false));
    if (b.moe.expert_ffn == 0)
      return make_error("missing_key", "model.moe_intermediate_size",
                        "model.moe_intermediate_size: required for a mixture-of-experts model");
    ACTMEM_TRY(get_uint("shared_expert_intermediate_size", &b.moe.shared_expert_ffn, false));
    // Qwen3-MoE's sparse block under hf is transformers' grouped experts with its softmax router
    // (measured); Qwen3MoeConfig's norm_topk_prob defaults to False.
    if (type == "qwen3_moe") {
      b.moe.hf_block = HfMoe::kQwen3Moe;
      if (j.contains("norm_topk_prob"))
        ACTMEM_TRY(
            detail::read_bool(j["norm_topk_prob"], "model.norm_topk_prob", &b.moe.norm_topk));
    }
    if (b.moe.shared_expert_ffn > 0) b.moe.shared_experts = 1;
    if (j.contains("num_shared_experts")) {
      if (auto err = detail::read_uint(j["num_shared_experts"], "model.num_shared_experts",
                                       &b.moe.shared_experts, true))
        return *err;
      if (b.moe.shared_experts > 0 && b.moe.shared_expert_ffn == 0)
        b.moe.shared_expert_ffn = b.moe.expert_ffn;
    }
    if (j.contains("capacity_factor")) {
      ACTMEM_TRY(detail::read_double(j["capacity_factor"], "model.capacity_factor",
                                     &b.moe.capacity_factor));
      if (b.moe.capacity_factor < 0 || b.moe.capacity_factor > 1024)
        return make_error("invalid_value", "model.capacity_factor",
                          "model.capacity_factor: must be 0 (dropless) or in (0, 1024]");
    }
  }
  if (b.heads > 0 && b.head_dim == 0)
    return make_error("invalid_value", "model.head_dim",
                      "model.head_dim: hidden_size / num_attention_heads is 0; set head_dim");
  // The stack: Qwen2-MoE's and Qwen3-MoE's dense layers, or our schema's layer_kinds and
  // layer_stack.
  const bool sparse_step = qwen_moe;
  for (const char* k : {"decoder_sparse_step", "mlp_only_layers"})
    if (j.contains(k) && !sparse_step)
      return make_error(
          "unsupported", std::string("model.") + k,
          std::string("model.") + k +
              ": only qwen2_moe and qwen3_moe configs place dense layers this way; use "
              "layer_kinds and layer_stack (docs/schema.md)");
  if (sparse_step && j.contains("layer_stack") &&
      (j.contains("decoder_sparse_step") || j.contains("mlp_only_layers")))
    return make_error("invalid_value", "model.layer_stack",
                      "model.layer_stack: give either layer_stack or decoder_sparse_step / "
                      "mlp_only_layers, not both");
  if (sparse_step) ACTMEM_TRY(detail::read_sparse_step_stack(j, &m));
  // gpt-oss's and PhiMoE's layers are all one sparse kind (their windows aside): a stack of
  // kinds would build layers their modules do not have.
  if (gpt_oss || phimoe)
    for (const char* k : {"layer_kinds", "layer_stack"})
      if (j.contains(k))
        return make_error("unsupported", std::string("model.") + k,
                          std::string("model.") + k + ": not read for model_type " + type +
                              (gpt_oss ? " (every layer is the same sparse layer; layer_types "
                                         "places the sliding windows)"
                                       : " (every layer is the same sparse layer)"));
  if (llama4) {
    for (const char* k : {"layer_kinds", "layer_stack", "decoder_sparse_step", "mlp_only_layers"})
      if (j.contains(k))
        return make_error("unsupported", std::string("model.") + k,
                          std::string("model.") + k +
                              ": not read for model_type llama4_text (moe_layers or "
                              "interleave_moe_layer_step, and no_rope_layers, place its layers)");
    ACTMEM_TRY(detail::read_llama4(j, &m));
    return m;
  }
  ACTMEM_TRY(detail::read_layer_stack(j, &m));
  detail::apply_windows(&m, windows, "sliding");
  return m;
}

}  // namespace actmem

// Reads a model spec from our JSON schema or a Hugging Face config.json (docs/schema.md): a
// multimodal wrapper's text model, the keys refused or ignored, then every family through its row
// in families.cpp (its config class's defaults; what it adds is read by its own file beside this
// one) and the Llama-style keys they share.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>

#include "actmem/json_io.hpp"
#include "actmem/names/names.hpp"
#include "read/json_read.hpp"
#include "read/models/families.hpp"
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
// GPT2Config.attribute_map's names for n_embd, n_head, n_layer and n_positions.
const char* const kGpt2AttributeMap[] = {"hidden_size", "num_attention_heads", "num_hidden_layers",
                                         "max_position_embeddings"};
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
std::optional<Error> read_sliding_layers(const json& j, const detail::Family& f, ModelSpec* m,
                                         std::vector<std::uint64_t>* window) {
  using detail::SlidingPattern;
  if (f.sliding == SlidingPattern::kNone) return std::nullopt;
  if (m->layers > kMaxLayers) return std::nullopt;  // validate() names the bound
  const std::size_t n = static_cast<std::size_t>(m->layers);
  std::vector<bool> sliding(n, false);
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    ACTMEM_TRY(detail::read_layer_types(j, n, f.layer_types_label, &sliding));
  } else if (f.sliding == SlidingPattern::kEveryNth) {
    std::uint64_t pattern = 6;
    if (j.contains("sliding_window_pattern") && !j["sliding_window_pattern"].is_null())
      ACTMEM_TRY(
          detail::read_uint(j["sliding_window_pattern"], "model.sliding_window_pattern", &pattern));
    for (std::size_t i = 0; i < n; ++i) sliding[i] = (i + 1) % pattern != 0;
  } else {
    for (std::size_t i = 0; i < n; ++i) sliding[i] = (i + 1) % 2 != 0;
  }
  std::uint64_t w = f.sliding_window;
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
  if (f.sliding == SlidingPattern::kEveryNth) m->hf_rope_tables = any_sliding && any_full ? 2 : 1;
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

namespace {

using detail::Family;
using detail::FamilyStack;

// The keys refused on a multimodal wrapper, its tie_word_embeddings, and the keys it ignores
// (said as warnings).
std::optional<Error> check_wrapper_keys(const json& j, std::vector<std::string>* warnings) {
  // The keys refused on a text model are refused here too (transformers applies a wrapper's
  // quantization and attention settings to its language model).
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
  return std::nullopt;
}

// The wrapper's text_config as a model of the text model_type, with the wrapper's metadata and
// tie_word_embeddings (the one transformers ties by; the text config's, if given, must agree).
Result<json> wrapped_text_config(const json& j, const std::string& outer, const char* text_type) {
  json text = j["text_config"];
  if (text.contains("model_type") && text["model_type"] != text_type)
    return make_error("invalid_value", "model.text_config.model_type",
                      "model.text_config.model_type: " + detail::short_dump(text["model_type"]) +
                          " is not the language model of " + outer + "; allowed: " + text_type);
  text["model_type"] = text_type;
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
  return text;
}

// A multimodal wrapper: its language model is text_config, read as a model of the text
// model_type with the wrapper's metadata; errors inside name model.text_config.KEY.
Result<ModelSpec> read_wrapper(const json& j, const std::string& outer, const char* text_type,
                               const std::string& id, std::vector<std::string>* warnings) {
  if (j.contains("vision_config") && !j["vision_config"].is_null())
    return make_error("unsupported", "model.vision_config",
                      "model.vision_config: the vision tower is not modelled; to estimate the "
                      "language model, give text_config's object as the model (model_type " +
                          std::string(text_type) + ")");
  if (!j.contains("text_config") || !j["text_config"].is_object())
    return make_error("missing_key", "model.text_config",
                      "model.text_config: required for model_type " + outer +
                          " (an object: the language model's config)");
  ACTMEM_TRY(check_wrapper_keys(j, warnings));
  auto text = wrapped_text_config(j, outer, text_type);
  if (!text.ok()) return text.error();
  std::vector<std::string> inner;
  auto r = model_from_json(text.value(), id, warnings ? &inner : nullptr);
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

// An unsupported model_type, with the closest supported family and how to force it (issue 13): a
// supported type sharing its longest prefix (qwen3_next: qwen3_moe, mistral3: mistral), else one a
// few edits away, else Llama, the standard decoder.
Error unsupported_type(const json& j, const std::string& type) {
  const std::vector<const char*>& types = detail::family_types();
  auto supported = [&](const std::string& t) {
    return std::any_of(types.begin(), types.end(), [&](const char* x) { return t == x; });
  };
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
  if (supported(spelled) && spelled != type) {
    hint = " (did you mean '" + spelled + "'?)";
  } else if (ssm) {
    hint =
        "; its state-space layers are not modelled (the state-space families read are mamba2 "
        "and nemotron_h)";
  } else if (decoder && type.size() <= 64) {
    std::size_t best = 2;
    std::string family;
    for (const char* t : types) {
      std::size_t n = 0;
      while (t[n] && n < type.size() && t[n] == type[n]) ++n;
      if (n > best) best = n, family = t;
    }
    if (family.empty()) family = detail::closest(type, types.data(), types.size());
    if (family.empty()) family = "llama";
    hint = "; its keys are a decoder's: the closest supported family is " + family +
           " (set \"model_type\": \"" + family +
           "\" to read it as one, at the risk of what that family does not read)";
  }
  std::string all;
  for (const char* t : types) all += (all.empty() ? "" : ", ") + std::string(t);
  return make_error("unsupported", "model.model_type",
                    "model.model_type: '" + shown_text(type) + "' is not a supported architecture" +
                        hint + "; allowed: " + all);
}

// Hugging Face keys that change memory in ways not modelled: refused, never ignored. A quantized
// checkpoint trains (QLoRA) or dequantizes differently, except the family's own published format
// read as its logical model; the attention implementation is a training choice
// (config.attention); GPT-2's fp32-upcast and per-layer-scaled attention keep other tensors; the
// load-balancing loss of output_router_logits (load_balancing_loss_func) saves tensors not
// modelled. The flags are accepted at their defaults (false).
std::optional<Error> refuse_unmodelled(const json& j, const Family& f,
                                       std::vector<std::string>* warnings) {
  const bool own_quant = f.quant_method && j.contains("quantization_config") &&
                         j["quantization_config"].is_object() &&
                         j["quantization_config"].value("quant_method", json()) == f.quant_method;
  if (own_quant && warnings) warnings->push_back(f.quant_warning);
  if (!own_quant && j.contains("quantization_config") && !j["quantization_config"].is_null())
    return make_error("unsupported", "model.quantization_config",
                      "model.quantization_config: quantized checkpoints are not modelled; remove "
                      "it to estimate the model in config.dtype");
  for (const char* k : {"attn_implementation", "_attn_implementation"})
    if (j.contains(k) && !j[k].is_null())
      return make_error("unsupported", std::string("model.") + k,
                        std::string("model.") + k +
                            ": the attention implementation is a training choice; set "
                            "config.attention (eager, sdpa_math, flash, sdpa_cudnn) instead");
  for (const char* k :
       {"reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "output_router_logits"})
    if (j.contains(k) && j[k] != false)
      return make_error("unsupported", std::string("model.") + k,
                        std::string("model.") + k + ": " + detail::short_dump(j[k]) +
                            " is not modelled; allowed: false");
  return std::nullopt;
}

// Every key is read, read by the family's own reader, ignored as memory-neutral (a Hugging Face
// config, said as a warning) or refused (our schema).
std::optional<Error> check_model_keys(const json& j, const Family& f, bool hf,
                                      std::vector<std::string>* warnings) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (listed(kModelKeys, k)) continue;
    if (listed(kCheckedHfKeys, k))
      continue;  // checked before: at their defaults they change nothing
    if (f.own_key && f.own_key(k)) continue;  // read by the family's reader
    if (hf) {
      if (!listed(kIgnoredHfKeys, k) && warnings)
        warnings->push_back("model." + k + ": ignored (does not affect memory)");
      continue;
    }
    return *detail::unknown_key(
        "model", k, kModelKeys, sizeof(kModelKeys) / sizeof(kModelKeys[0]), "unknown key",
        "a Hugging Face config.json must carry model_type; see docs/schema.md for our keys");
  }
  return std::nullopt;
}

// A key of the other naming (GPT-2's or Llama's) would be ignored: refused with the name this
// model reads.
std::optional<Error> check_naming(const json& j, const Family& f) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (!(f.gpt2_names ? listed(kLlamaOnly, k) : listed(kGpt2Only, k))) continue;
    if (f.gpt2_names && listed(kGpt2AttributeMap, k)) continue;  // read_gpt2_dims reads them
    // Phi3Config names its residual and embedding dropout as GPT-2 does (read below).
    if (f.phi3 && (k == "resid_pdrop" || k == "embd_pdrop")) continue;
    const char* other = other_name(k);
    const std::string reads = other ? std::string("; this model reads ") + other : "";
    return make_error(
        "unsupported", "model." + k,
        "model." + k + ": " +
            (f.gpt2_names
                 ? std::string("not read for model_type gpt2") + reads
                 : std::string("a GPT-2 key name, read only with model_type \"gpt2\"") + reads));
  }
  return std::nullopt;
}

}  // namespace

namespace {

// A Llama-style decoder (every family but Falcon and the Mamba-2 families, and our schema) read
// key group by key group, each group in the order the checks have always run, so the first error
// a config meets does not depend on how the reading is split.
class DecoderReader {
 public:
  DecoderReader(const json& j, const Family& f, const std::string& type, ModelSpec* m,
                std::vector<std::string>* warnings)
      : j_(j), f_(f), type_(type), m_(*m), b_(m->kinds[0]), warnings_(warnings) {}

  std::optional<Error> read() {
    ACTMEM_TRY(f_.gpt2_names ? read_gpt2_dims() : read_llama_dims());
    ACTMEM_TRY(flag("tie_word_embeddings", &m_.tied_embeddings));
    ACTMEM_TRY(prob("hidden_dropout", &m_.hidden_dropout));
    ACTMEM_TRY(read_head_dim());
    ACTMEM_TRY(read_switches());
    ACTMEM_TRY(read_named_types());
    if (f_.stack == FamilyStack::kOwnExperts) {
      ACTMEM_TRY(refuse_other_keys());
      return f_.own_stack(j_, type_, &m_);
    }
    std::vector<std::uint64_t> windows;
    ACTMEM_TRY(read_sliding_layers(j_, f_, &m_, &windows));
    if (f_.extra) ACTMEM_TRY(f_.extra(j_, type_, &m_));
    ACTMEM_TRY(read_experts());
    if (b_.heads > 0 && b_.head_dim == 0)
      return make_error("invalid_value", "model.head_dim",
                        "model.head_dim: hidden_size / num_attention_heads is 0; set head_dim");
    return read_stack(windows);
  }

 private:
  // Key `k` (shown as model.k) into an integer if present; `required` makes absence an error.
  std::optional<Error> uint(const char* k, std::uint64_t* out, bool required,
                            bool allow_null = false, bool allow_zero = false) const {
    const std::string field = std::string("model.") + k;
    if (!j_.contains(k) || (allow_null && j_[k].is_null())) {
      if (required)
        return make_error("missing_key", field, field + ": required (a positive integer)");
      return std::nullopt;
    }
    return detail::read_uint(j_[k], field, out, allow_zero);
  }
  std::optional<Error> flag(const char* k, bool* out) const {
    if (!j_.contains(k)) return std::nullopt;
    return detail::read_bool(j_[k], std::string("model.") + k, out);
  }
  std::optional<Error> prob(const char* k, double* out) const {
    if (!j_.contains(k)) return std::nullopt;
    return detail::read_prob(j_[k], std::string("model.") + k, out);
  }
  // A string key parsed by one of names.hpp's tables, refused with the table's list.
  template <typename Table, typename E>
  std::optional<Error> named(const char* k, const Table& table, E* out) const {
    if (!j_.contains(k)) return std::nullopt;
    return detail::read_choice(
        j_[k], std::string("model.") + k,
        [&](const std::string& s, E* e) { return table.parse(s, e); }, out, table.list());
  }

  std::optional<Error> embd_matches(double embd_default);
  std::optional<Error> read_gpt2_dims();
  std::optional<Error> gpt2_uint(const char* k, std::uint64_t* out, bool required);
  std::optional<Error> read_gpt2_activation();
  std::optional<Error> read_llama_dims();
  std::optional<Error> read_kv_heads();
  std::optional<Error> read_activation();
  std::optional<Error> read_head_dim();
  std::optional<Error> read_switches();
  std::optional<Error> read_named_types();
  std::optional<Error> refuse_other_keys() const;
  std::optional<Error> read_experts();
  std::optional<Error> read_expert_widths();
  std::optional<Error> read_stack(const std::vector<std::uint64_t>& windows);

  const json& j_;
  const Family& f_;
  const std::string& type_;
  ModelSpec& m_;
  LayerKind& b_;  // the top-level keys: the base kind every layer kind starts from
  std::vector<std::string>* warnings_;
};

// One hidden dropout covers the embedding and the residual branches (inventory/moe_and_io.cpp's
// embed.dropout_mask); a different embedding rate (GPT-2's and Phi-3's embd_pdrop) would be
// ignored, so it is refused. `embd_default` is the config class's own default for a missing
// embd_pdrop (GPT2Config 0.1, Phi3Config 0.0): a missing key means that value, not "the same as
// resid_pdrop".
std::optional<Error> DecoderReader::embd_matches(double embd_default) {
  double embd = embd_default;
  ACTMEM_TRY(prob("embd_pdrop", &embd));
  // hidden_dropout would replace resid_pdrop later: two names for one rate must agree.
  if (j_.contains("hidden_dropout") && j_.contains("resid_pdrop") &&
      j_["hidden_dropout"] != j_["resid_pdrop"])
    return make_error("invalid_value", "model.hidden_dropout",
                      "model.hidden_dropout: " + detail::short_dump(j_["hidden_dropout"]) +
                          " conflicts with model.resid_pdrop: " +
                          detail::short_dump(j_["resid_pdrop"]) + "; give one");
  if (embd == m_.hidden_dropout) return std::nullopt;
  // Rates as %g: the same text whether the value arrived as 0 or 0.0 (the page's JSON).
  char buf[96];
  std::snprintf(buf, sizeof buf, "%g differs from resid_pdrop %g", embd, m_.hidden_dropout);
  return make_error("unsupported", "model.embd_pdrop",
                    std::string("model.embd_pdrop: ") + buf +
                        "; actmem applies one rate to embeddings and residuals");
}

// GPT2Config: LayerNorm, learned positions, tied embeddings, biases everywhere, n_inner =
// 4 * n_embd, dropout 0.1 (attn_pdrop, resid_pdrop, embd_pdrop).
std::optional<Error> DecoderReader::read_gpt2_dims() {
  m_.norm = NormType::kLayerNorm;
  m_.pos = PosEncoding::kLearned;
  b_.ffn = FfnType::kGelu;
  m_.tied_embeddings = true;
  b_.qkv_bias = b_.o_bias = b_.mlp_bias = true;
  m_.attention_dropout = m_.hidden_dropout = 0.1;
  ACTMEM_TRY(gpt2_uint("n_embd", &m_.hidden, true));
  ACTMEM_TRY(gpt2_uint("n_head", &b_.heads, true));
  ACTMEM_TRY(gpt2_uint("n_layer", &m_.layers, true));
  m_.max_positions = 1024;
  ACTMEM_TRY(gpt2_uint("n_positions", &m_.max_positions, false));
  ACTMEM_TRY(uint("vocab_size", &m_.vocab, true));
  b_.kv_heads = b_.heads;
  b_.ffn_hidden = 0;
  ACTMEM_TRY(uint("n_inner", &b_.ffn_hidden, false, true));
  if (b_.ffn_hidden == 0) b_.ffn_hidden = 4 * m_.hidden;
  ACTMEM_TRY(prob("attn_pdrop", &m_.attention_dropout));
  ACTMEM_TRY(prob("resid_pdrop", &m_.hidden_dropout));
  ACTMEM_TRY(embd_matches(0.1));
  return read_gpt2_activation();
}

// GPT2Config's attribute_map: hidden_size, num_attention_heads, num_hidden_layers and
// max_position_embeddings set n_embd, n_head, n_layer and n_positions; two names that disagree
// would leave one ignored.
std::optional<Error> DecoderReader::gpt2_uint(const char* k, std::uint64_t* out, bool required) {
  const char* alias = other_name(k);
  if (!j_.contains(alias)) return uint(k, out, required);
  if (j_.contains(k) && j_[k] != j_[alias])
    return make_error("invalid_value", std::string("model.") + alias,
                      std::string("model.") + alias + ": " + detail::short_dump(j_[alias]) +
                          " conflicts with model." + k + ": " + detail::short_dump(j_[k]) +
                          "; give one");
  return uint(alias, out, required);
}

// GPT-2's activation_function as GPT2MLP runs it (ACT2FN, activations.py): gelu_new (the
// default) in Python ops, gelu and gelu_pytorch_tanh as one F.gelu. The other names keep other
// tensors (ReLU and tanh their output, which c_proj also keeps; FastGELU and QuickGELU other
// Python ops), which the inventory does not hold: refused rather than counted as gelu_new.
std::optional<Error> DecoderReader::read_gpt2_activation() {
  if (!j_.contains("activation_function")) return std::nullopt;
  std::string act;
  ACTMEM_TRY(detail::read_string(j_["activation_function"], "model.activation_function", &act));
  if (act == "gelu_new") return std::nullopt;
  if (act == "gelu" || act == "gelu_pytorch_tanh") {
    m_.hf_gelu_native = true;
    return std::nullopt;
  }
  return make_error("unsupported", "model.activation_function",
                    "model.activation_function: '" + shown_text(act) +
                        "' is not modelled for gpt2 (its saved tensors differ); allowed: "
                        "gelu_new, gelu, gelu_pytorch_tanh");
}

// LlamaConfig's defaults (RMSNorm, RoPE, SwiGLU, untied, no biases, no dropout) with the family's
// own (its row), then the dimensions.
std::optional<Error> DecoderReader::read_llama_dims() {
  m_.norm = NormType::kRmsNorm;
  m_.pos = PosEncoding::kRope;
  b_.ffn = FfnType::kSwiglu;
  b_.qkv_bias = f_.qkv_bias;
  b_.qk_norm = f_.qk_norm;
  // Gemma 2 and 3 (modeling_gemma2.py, modeling_gemma3.py): Gemma's RMSNorm in the sandwich
  // layout, GeGLU (gelu_pytorch_tanh), tied embeddings, the embedding scaled by sqrt(hidden).
  if (f_.gemma) {
    m_.gemma_norm = m_.sandwich_norm = true;
    b_.ffn = FfnType::kGeglu;
    m_.tied_embeddings = true;
    m_.attn_softcap = f_.attn_softcap;
    m_.final_softcap = f_.final_softcap;
    m_.hf_embed_scale = true;
  }
  ACTMEM_TRY(uint("hidden_size", &m_.hidden, true));
  ACTMEM_TRY(uint("num_attention_heads", &b_.heads, true));
  ACTMEM_TRY(uint("num_hidden_layers", &m_.layers, true));
  ACTMEM_TRY(uint("vocab_size", &m_.vocab, true));
  ACTMEM_TRY(read_kv_heads());
  ACTMEM_TRY(uint("intermediate_size", &b_.ffn_hidden, false));
  ACTMEM_TRY(uint("max_position_embeddings", &m_.max_positions, false));
  bool attention_bias = f_.attention_bias;
  ACTMEM_TRY(flag("attention_bias", &attention_bias));
  if (attention_bias || f_.attention_bias) b_.qkv_bias = b_.o_bias = attention_bias;
  ACTMEM_TRY(flag("mlp_bias", &b_.mlp_bias));
  ACTMEM_TRY(prob("attention_dropout", &m_.attention_dropout));
  if (f_.phi3) {
    m_.hf_rope_cat = true;  // apply_rotary_pos_emb: cat([rotated, passed], -1)
    // Phi3DecoderLayer: resid_attn_dropout and resid_mlp_dropout at resid_pdrop; the embedding
    // dropout at embd_pdrop, which the one hidden rate must then equal (as for GPT-2).
    ACTMEM_TRY(prob("resid_pdrop", &m_.hidden_dropout));
    ACTMEM_TRY(embd_matches(0.0));
  }
  return read_activation();
}

// num_key_value_heads as the family's config class reads it: absent is the class default (said
// as a warning where it is not the head count), null is num_attention_heads where the class maps
// None so. A default that does not divide the heads would build no working attention
// (num_key_value_groups = heads // kv), so the key is then required.
std::optional<Error> DecoderReader::read_kv_heads() {
  const char* k = "num_key_value_heads";
  b_.kv_heads = b_.heads;
  if (j_.contains(k) && j_[k].is_null() && !f_.kv_null_is_heads)
    return make_error("invalid_value", "model.num_key_value_heads",
                      "model.num_key_value_heads: null is not read for model_type " + type_ +
                          " (its config class keeps None); give the number of KV heads");
  if (j_.contains(k)) return uint(k, &b_.kv_heads, false, true);
  const std::uint64_t kv = f_.kv_heads_default;
  if (kv == 0 || kv == b_.heads) return std::nullopt;
  const std::string said = "model_type " + type_ + "'s config class default " + std::to_string(kv);
  if (b_.heads % kv != 0)
    return make_error("missing_key", "model.num_key_value_heads",
                      "model.num_key_value_heads: required: " + said +
                          " does not divide num_attention_heads=" + std::to_string(b_.heads));
  b_.kv_heads = kv;
  if (warnings_) warnings_->push_back("model.num_key_value_heads: not given; " + said + " is read");
  return std::nullopt;
}

// hidden_act, or Gemma's hidden_activation (hidden_act is legacy there): two names that disagree
// would leave one ignored.
std::optional<Error> DecoderReader::read_activation() {
  std::string act;
  const char* act_key = "model.hidden_act";  // the key the activation came from, for messages
  if (j_.contains("hidden_act"))
    ACTMEM_TRY(detail::read_string(j_["hidden_act"], "model.hidden_act", &act));
  if (j_.contains("hidden_activation") && !j_["hidden_activation"].is_null()) {
    std::string ha;
    ACTMEM_TRY(detail::read_string(j_["hidden_activation"], "model.hidden_activation", &ha));
    if (!act.empty() && act != ha)
      return make_error("invalid_value", "model.hidden_activation",
                        "model.hidden_activation: '" + shown_text(ha) +
                            "' conflicts with model.hidden_act '" + shown_text(act) +
                            "'; give one");
    act = ha;
    act_key = "model.hidden_activation";
  }
  const bool given = j_.contains("hidden_act") ||
                     (j_.contains("hidden_activation") && !j_["hidden_activation"].is_null());
  if (!given) return std::nullopt;
  if (act == "silu" || act == "swish")
    b_.ffn = FfnType::kSwiglu;
  else if (listed(kGeluNames, act))
    b_.ffn = FfnType::kGeglu;
  else
    return make_error("unsupported", act_key,
                      std::string(act_key) + ": '" + shown_text(act) +
                          "' is not supported; allowed: silu, swish, " + joined(kGeluNames));
  return std::nullopt;
}

// hidden / heads, or the config class's own head_dim default (Qwen3Config and Llama4TextConfig
// 128, Gemma2Config and Gemma3TextConfig 256, GptOssConfig 64), or the key.
std::optional<Error> DecoderReader::read_head_dim() {
  b_.head_dim = b_.heads ? m_.hidden / b_.heads : 0;
  if (f_.head_dim) b_.head_dim = f_.head_dim;
  ACTMEM_TRY(uint("head_dim", &b_.head_dim, false, true));
  const bool explicit_head_dim =
      f_.head_dim_own || f_.head_dim > 0 || (j_.contains("head_dim") && !j_["head_dim"].is_null());
  if (!explicit_head_dim && b_.heads > 0 && m_.hidden % b_.heads != 0)
    return make_error("invalid_value", "model.head_dim",
                      "model.head_dim: hidden_size=" + std::to_string(m_.hidden) +
                          " is not divisible by num_attention_heads=" + std::to_string(b_.heads) +
                          "; give head_dim explicitly");
  return std::nullopt;
}

// Our schema's switches (also read on Hugging Face configs) and the soft-caps: a positive cap, or
// null for none (as Gemma's configs write it).
std::optional<Error> DecoderReader::read_switches() {
  ACTMEM_TRY(flag("qkv_bias", &b_.qkv_bias));
  ACTMEM_TRY(flag("qk_norm", &b_.qk_norm));
  ACTMEM_TRY(flag("attn_sinks", &b_.attn_sinks));
  ACTMEM_TRY(flag("gemma_norm", &m_.gemma_norm));
  ACTMEM_TRY(flag("sandwich_norm", &m_.sandwich_norm));
  for (auto [k, out] :
       {std::pair<const char*, double*>{"attn_logit_softcapping", &m_.attn_softcap},
        std::pair<const char*, double*>{"final_logit_softcapping", &m_.final_softcap}}) {
    if (!j_.contains(k)) continue;
    if (j_[k].is_null()) {
      *out = 0.0;
      continue;
    }
    const std::string field = std::string("model.") + k;
    ACTMEM_TRY(detail::read_double(j_[k], field, out));
    if (!(*out > 0.0))
      return make_error(
          "invalid_value", field,
          field + ": must be a positive cap or null, got " + detail::short_dump(j_[k]));
  }
  return std::nullopt;
}

// Explicit types (our schema) override what model_type implies.
std::optional<Error> DecoderReader::read_named_types() {
  ACTMEM_TRY(named("ffn_type", ffn_table(), &b_.ffn));
  ACTMEM_TRY(named("norm_type", norm_table(), &m_.norm));
  if (m_.gemma_norm && m_.norm != NormType::kRmsNorm)
    return make_error("invalid_value", "model.gemma_norm",
                      "model.gemma_norm: Gemma's norm is an RMSNorm; norm_type is " +
                          std::string(norm_name(m_.norm)));
  ACTMEM_TRY(named("block_layout", block_table(), &m_.block));
  return named("position_embedding", pos_table(), &m_.pos);
}

// Keys another family's experts or stack are read from: on this family they would be ignored.
std::optional<Error> DecoderReader::refuse_other_keys() const {
  for (const char* const* k = f_.refused_keys; k && *k; ++k)
    if (j_.contains(*k))
      return make_error(
          "unsupported", std::string("model.") + *k,
          std::string("model.") + *k + ": not read for model_type " + type_ + f_.refused_why);
  return std::nullopt;
}

// Mixture of experts (Mixtral: num_local_experts + intermediate_size per expert; Qwen2-MoE:
// num_experts + moe_intermediate_size + shared_expert_intermediate_size).
std::optional<Error> DecoderReader::read_experts() {
  // A mixture-of-experts model_type without its expert count would be read as a dense model.
  if (f_.experts_key && !j_.contains(f_.experts_key) &&
      !(f_.experts_alias && j_.contains(f_.experts_alias)))
    return make_error("missing_key", std::string("model.") + f_.experts_key,
                      std::string("model.") + f_.experts_key + ": required for model_type " +
                          type_ + " (" + f_.experts_default + ")");
  // Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer build the sparse block only when num_experts > 0:
  // zero experts there is a dense model, whose expert keys transformers never reads.
  const bool zero_is_dense = f_.stack == FamilyStack::kSparseStep;
  std::uint64_t experts = 0;
  ACTMEM_TRY(uint("num_local_experts", &experts, false, false, zero_is_dense));
  if (experts == 0) ACTMEM_TRY(uint("num_experts", &experts, false, false, zero_is_dense));
  // Two names for the expert count (Mixtral's and Qwen-MoE's): both given must agree.
  if (j_.contains("num_local_experts") && j_.contains("num_experts") &&
      j_["num_local_experts"] != j_["num_experts"])
    return make_error("invalid_value", "model.num_experts",
                      "model.num_experts: " + detail::short_dump(j_["num_experts"]) +
                          " conflicts with model.num_local_experts: " +
                          detail::short_dump(j_["num_local_experts"]) + "; give one");
  // Keys read only for a mixture of experts: on a dense model they would change nothing.
  if (experts == 0 && zero_is_dense) return std::nullopt;
  if (experts == 0) {
    for (const char* k : {"num_experts_per_tok", "moe_intermediate_size", "capacity_factor",
                          "num_shared_experts", "shared_expert_intermediate_size"})
      if (j_.contains(k) && !j_[k].is_null())
        return make_error("invalid_value", std::string("model.") + k,
                          std::string("model.") + k +
                              ": read only for a mixture of experts; this model gives no "
                              "num_local_experts or num_experts");
    return std::nullopt;
  }
  b_.moe.experts = experts;
  // PhimoeConfig defaults to 2, the only count its router supports (read_phimoe);
  // Llama4TextConfig to 1.
  if (f_.top_k_default) b_.moe.top_k = f_.top_k_default;
  ACTMEM_TRY(uint("num_experts_per_tok", &b_.moe.top_k, f_.top_k_default == 0));
  b_.moe.expert_ffn = b_.ffn_hidden;
  return read_expert_widths();
}

std::optional<Error> DecoderReader::read_expert_widths() {
  // Qwen-MoE configs size experts by moe_intermediate_size, whose class defaults (Qwen2MoeConfig
  // 1408, Qwen3MoeConfig 768) are not intermediate_size: a missing key is an error, as is
  // Qwen2-MoE's shared expert width (Qwen2MoeConfig default 5632).
  for (const char* k : {"moe_intermediate_size", "shared_expert_intermediate_size"}) {
    const bool required = std::string(k) == "moe_intermediate_size" ? f_.moe_width_required
                                                                    : f_.shared_width_required;
    if (required && !j_.contains(k))
      return make_error("missing_key", std::string("model.") + k,
                        std::string("model.") + k + ": required for model_type " + type_ +
                            " (its config class's default is not intermediate_size)");
  }
  ACTMEM_TRY(uint("moe_intermediate_size", &b_.moe.expert_ffn, false));
  if (b_.moe.expert_ffn == 0)
    return make_error("missing_key", "model.moe_intermediate_size",
                      "model.moe_intermediate_size: required for a mixture-of-experts model");
  ACTMEM_TRY(uint("shared_expert_intermediate_size", &b_.moe.shared_expert_ffn, false));
  // Qwen3-MoE's sparse block under hf is transformers' grouped experts with its softmax router
  // (measured); Qwen3MoeConfig's norm_topk_prob defaults to False.
  if (f_.qwen3_moe_block) {
    b_.moe.hf_block = HfMoe::kQwen3Moe;
    ACTMEM_TRY(flag("norm_topk_prob", &b_.moe.norm_topk));
  }
  if (b_.moe.shared_expert_ffn > 0) b_.moe.shared_experts = 1;
  if (j_.contains("num_shared_experts")) {
    ACTMEM_TRY(detail::read_uint(j_["num_shared_experts"], "model.num_shared_experts",
                                 &b_.moe.shared_experts, true));
    if (b_.moe.shared_experts > 0 && b_.moe.shared_expert_ffn == 0)
      b_.moe.shared_expert_ffn = b_.moe.expert_ffn;
  }
  if (j_.contains("capacity_factor")) {
    ACTMEM_TRY(detail::read_double(j_["capacity_factor"], "model.capacity_factor",
                                   &b_.moe.capacity_factor));
    if (b_.moe.capacity_factor < 0 || b_.moe.capacity_factor > 1024)
      return make_error("invalid_value", "model.capacity_factor",
                        "model.capacity_factor: must be 0 (dropless) or in (0, 1024]");
  }
  return std::nullopt;
}

// The stack: Qwen-MoE's dense layers, the family's own placement, or our schema's layer_kinds
// and layer_stack.
std::optional<Error> DecoderReader::read_stack(const std::vector<std::uint64_t>& windows) {
  const bool sparse_step = f_.stack == FamilyStack::kSparseStep;
  for (const char* k : {"decoder_sparse_step", "mlp_only_layers"})
    if (j_.contains(k) && !sparse_step)
      return make_error("unsupported", std::string("model.") + k,
                        std::string("model.") + k +
                            ": only qwen2_moe and qwen3_moe configs place dense layers this way; "
                            "use layer_kinds and layer_stack (docs/schema.md)");
  if (sparse_step && j_.contains("layer_stack") &&
      (j_.contains("decoder_sparse_step") || j_.contains("mlp_only_layers")))
    return make_error("invalid_value", "model.layer_stack",
                      "model.layer_stack: give either layer_stack or decoder_sparse_step / "
                      "mlp_only_layers, not both");
  if (sparse_step) ACTMEM_TRY(detail::read_sparse_step_stack(j_, &m_));
  if (f_.stack == FamilyStack::kUniform || f_.stack == FamilyStack::kOwn)
    ACTMEM_TRY(refuse_other_keys());
  if (f_.stack == FamilyStack::kOwn) return f_.own_stack(j_, type_, &m_);
  ACTMEM_TRY(detail::read_layer_stack(j_, &m_));
  detail::apply_windows(&m_, windows, "sliding");
  return std::nullopt;
}

}  // namespace

Result<ModelSpec> model_from_json(const json& j, const std::string& id,
                                  std::vector<std::string>* warnings) {
  if (!j.is_object())
    return make_error("wrong_type", "model",
                      "model: must be a JSON object, got " + detail::kind_of(j));
  if (j.contains("model_type") && j["model_type"].is_string()) {
    const std::string outer = j["model_type"].get<std::string>();
    if (const char* text_type = wrapped_text_type(outer))
      return read_wrapper(j, outer, text_type, id, warnings);
  }
  ModelSpec m;
  m.id = id.empty() ? "custom" : id;
  m.name = m.id;
  std::string type;
  if (j.contains("model_type"))
    ACTMEM_TRY(detail::read_string(j["model_type"], "model.model_type", &type));
  const Family* f = detail::find_family(type);
  if (!f) return unsupported_type(j, type);
  ACTMEM_TRY(refuse_unmodelled(j, *f, warnings));
  ACTMEM_TRY(f->whole ? read_metadata(j, &m) : check_model_keys(j, *f, !type.empty(), warnings));
  if (f->whole) {
    ACTMEM_TRY(f->whole(j, type, &m, warnings));
    return m;
  }
  ACTMEM_TRY(check_naming(j, *f));
  ACTMEM_TRY(read_metadata(j, &m));
  ACTMEM_TRY(DecoderReader(j, *f, type, &m, warnings).read());
  return m;
}

}  // namespace actmem

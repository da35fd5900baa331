// Reads a Falcon config.json (model_type "falcon", or the older remote-code "RefinedWebModel" the
// Hub's Falcon-7B files carried before transformers adopted them) into a ModelSpec, with
// FalconConfig's defaults and FalconDecoderLayer's block layouts (transformers 5.17
// configuration_falcon.py and modeling_falcon.py).
#include "read/models/falcon.hpp"

#include "actmem/core/limits.hpp"
#include "read/json_read.hpp"

namespace actmem::detail {

namespace {

// The keys read here, each with the other name FalconConfig accepts for it (attribute_map and the
// n_embed / n_head_kv keywords of older files).
struct Alias {
  const char* key;
  const char* alias;
};
constexpr Alias kAliased[] = {{"hidden_size", "n_embed"},
                              {"num_hidden_layers", "n_layer"},
                              {"num_attention_heads", "n_head"},
                              {"num_kv_heads", "n_head_kv"}};

const char* const kFalconKeys[] = {"model_type",
                                   "metadata",
                                   "hidden_size",
                                   "n_embed",
                                   "num_hidden_layers",
                                   "n_layer",
                                   "num_attention_heads",
                                   "n_head",
                                   "num_kv_heads",
                                   "n_head_kv",
                                   "vocab_size",
                                   "max_position_embeddings",
                                   "tie_word_embeddings",
                                   "new_decoder_architecture",
                                   "multi_query",
                                   "parallel_attn",
                                   "num_ln_in_parallel_attn",
                                   "bias",
                                   "alibi",
                                   "ffn_hidden_size",
                                   "activation",
                                   "hidden_dropout",
                                   "attention_dropout",
                                   "apply_residual_connection_post_layernorm",
                                   "quantization_config",
                                   "attn_implementation",
                                   "_attn_implementation"};

// Keys that do not change memory (initialization, tokens, RoPE frequencies, inference cache).
const char* const kFalconIgnored[] = {
    "architectures", "auto_map",          "bos_token_id",         "eos_token_id",
    "pad_token_id",  "initializer_range", "layer_norm_epsilon",   "rope_theta",
    "rope_scaling",  "torch_dtype",       "transformers_version", "use_cache",
    "_name_or_path", "return_dict",       "use_return_dict"};

// Keys other families (and our schema) read that change memory: FalconConfig does not read them,
// so they would be ignored; refused with the key Falcon reads instead, where it has one.
struct Foreign {
  const char* key;
  const char* instead;  // nullptr: Falcon has no such setting
};
constexpr Foreign kForeign[] = {{"intermediate_size", "ffn_hidden_size"},
                                {"n_inner", "ffn_hidden_size"},
                                {"num_key_value_heads", "num_kv_heads"},
                                {"hidden_act", "activation"},
                                {"activation_function", "activation"},
                                {"n_embd", "hidden_size"},
                                {"head_dim", nullptr},
                                {"num_local_experts", nullptr},
                                {"num_experts", nullptr},
                                {"num_experts_per_tok", nullptr},
                                {"moe_intermediate_size", nullptr},
                                {"block_layout", "parallel_attn and num_ln_in_parallel_attn"},
                                {"qk_norm", nullptr},
                                {"sandwich_norm", nullptr},
                                {"gemma_norm", nullptr},
                                {"norm_type", nullptr},
                                {"ffn_type", "activation"},
                                {"position_embedding", "alibi"},
                                {"attention_bias", "bias"},
                                {"mlp_bias", "bias"},
                                {"qkv_bias", "bias"},
                                {"layer_kinds", nullptr},
                                {"layer_stack", nullptr}};

// Every key given: read, refused with the key Falcon reads instead, or ignored with a warning.
std::optional<Error> check_keys(const json& j, std::vector<std::string>* warnings) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (listed(kFalconKeys, k)) continue;
    for (const Foreign& f : kForeign)
      if (k == f.key)
        return make_error("unsupported", "model." + k,
                          "model." + k + ": not read for model_type falcon" +
                              (f.instead ? std::string("; this model reads ") + f.instead
                                         : std::string(" (FalconConfig has no such setting)")));
    if (!listed(kFalconIgnored, k) && warnings)
      warnings->push_back("model." + k + ": ignored (does not affect memory)");
  }
  return std::nullopt;
}

// The config being read, with the ways a value is read from it.
struct FalconJson {
  const json& j;

  // The key a value is read from: its name or FalconConfig's other name for it, never both with
  // different values.
  std::optional<Error> pick(const char* key, const char** used) const {
    *used = key;
    for (const Alias& a : kAliased) {
      if (std::string(key) != a.key) continue;
      const bool has_key = j.contains(a.key), has_alias = j.contains(a.alias);
      if (has_key && has_alias && j[a.key] != j[a.alias])
        return make_error("invalid_value", std::string("model.") + a.alias,
                          std::string("model.") + a.alias + ": " + short_dump(j[a.alias]) +
                              " conflicts with model." + a.key + ": " + short_dump(j[a.key]) +
                              "; give one");
      if (!has_key && has_alias) *used = a.alias;
    }
    return std::nullopt;
  }

  std::optional<Error> get_uint(const char* key, std::uint64_t* v, bool required) const {
    const char* used = key;
    ACTMEM_TRY(pick(key, &used));
    if (!j.contains(used) || j[used].is_null()) {
      if (required)
        return make_error("missing_key", std::string("model.") + key,
                          std::string("model.") + key + ": required (a positive integer)");
      return std::nullopt;
    }
    return read_uint(j[used], std::string("model.") + used, v);
  }

  std::optional<Error> get_bool(const char* key, bool* v) const {
    if (!j.contains(key)) return std::nullopt;
    return read_bool(j[key], std::string("model.") + key, v);
  }

  Error refuse(const char* key, const std::string& why) const { return refuse_value(j, key, why); }
};

// The flags that choose the block, and the settings refused outright.
struct FalconFlags {
  bool new_arch = false, multi_query = true, parallel = true, bias = false;
};

// FalconConfig defaults: multi_query, parallel_attn, no biases, no ALiBi, the old decoder
// architecture, GELU (PretrainedConfig).
std::optional<Error> read_flags(const FalconJson& in, FalconFlags* out) {
  const json& j = in.j;
  bool new_arch = false, multi_query = true, parallel = true, bias = false, alibi = false;
  bool post_ln_residual = false;
  ACTMEM_TRY(in.get_bool("new_decoder_architecture", &new_arch));
  ACTMEM_TRY(in.get_bool("multi_query", &multi_query));
  ACTMEM_TRY(in.get_bool("parallel_attn", &parallel));
  ACTMEM_TRY(in.get_bool("bias", &bias));
  ACTMEM_TRY(in.get_bool("alibi", &alibi));
  ACTMEM_TRY(in.get_bool("apply_residual_connection_post_layernorm", &post_ln_residual));
  if (alibi)
    return in.refuse("alibi", "(ALiBi biases added to the scores) is not modelled; allowed: false");
  if (post_ln_residual)
    return in.refuse("apply_residual_connection_post_layernorm", "is not modelled; allowed: false");
  for (const char* k : {"hidden_dropout", "attention_dropout"}) {
    if (!j.contains(k)) continue;
    double p = 0.0;
    ACTMEM_TRY(read_double(j[k], std::string("model.") + k, &p));
    // Falcon's eager attention applies no dropout to its probabilities, and its residual dropout
    // covers the summed branches: neither is this engine's dropout model.
    if (p != 0.0) return in.refuse(k, "is not modelled for Falcon; allowed: 0");
  }
  if (j.contains("activation")) {
    std::string act;
    ACTMEM_TRY(read_string(j["activation"], "model.activation", &act));
    if (act != "gelu")
      return make_error(
          "unsupported", "model.activation",
          "model.activation: '" + shown_text(act) + "' is not supported for falcon; allowed: gelu");
  }
  *out = FalconFlags{new_arch, multi_query, parallel, bias};
  return std::nullopt;
}

// The sizes, with FalconConfig's 4h FFN, 2,048 positions and tied embeddings.
std::optional<Error> read_sizes(const FalconJson& in, bool bias, ModelSpec* m) {
  LayerKind* b = &m->kinds[0];
  m->norm = NormType::kLayerNorm;
  m->pos = PosEncoding::kRope;
  m->hf_modules = HfModules::kFalcon;
  m->tied_embeddings = true;
  m->max_positions = 2048;
  b->ffn = FfnType::kGelu;
  b->qkv_bias = b->o_bias = b->mlp_bias = bias;
  ACTMEM_TRY(in.get_uint("hidden_size", &m->hidden, true));
  ACTMEM_TRY(in.get_uint("num_hidden_layers", &m->layers, true));
  ACTMEM_TRY(in.get_uint("num_attention_heads", &b->heads, true));
  ACTMEM_TRY(in.get_uint("vocab_size", &m->vocab, true));
  ACTMEM_TRY(in.get_uint("max_position_embeddings", &m->max_positions, false));
  ACTMEM_TRY(in.get_bool("tie_word_embeddings", &m->tied_embeddings));
  if (m->hidden % b->heads != 0)
    return make_error("invalid_value", "model.num_attention_heads",
                      "model.num_attention_heads: hidden_size=" + std::to_string(m->hidden) +
                          " is not divisible by " + std::to_string(b->heads) +
                          " (FalconAttention requires it)");
  b->head_dim = m->hidden / b->heads;
  b->ffn_hidden = 4 * m->hidden;  // used only once hidden is bounded, just below
  ACTMEM_TRY(in.get_uint("ffn_hidden_size", &b->ffn_hidden, false));
  for (const auto& [key, v] : {std::pair<const char*, std::uint64_t>{"hidden_size", m->hidden},
                               {"ffn_hidden_size", b->ffn_hidden}})
    if (v > kMaxDim)
      return make_error("invalid_value", std::string("model.") + key,
                        std::string("model.") + key + ": " + std::to_string(v) +
                            " is larger than the supported 2^40");
  return std::nullopt;
}

// K/V heads (FalconAttention): the new architecture reads num_kv_heads, the old one has one with
// multi_query and all of them without.
std::optional<Error> read_kv_heads(const FalconJson& in, const FalconFlags& f, LayerKind* b) {
  const json& j = in.j;
  const bool new_arch = f.new_arch, multi_query = f.multi_query;
  b->kv_heads = b->heads;
  ACTMEM_TRY(in.get_uint("num_kv_heads", &b->kv_heads, false));
  const bool kv_given = (j.contains("num_kv_heads") && !j["num_kv_heads"].is_null()) ||
                        (j.contains("n_head_kv") && !j["n_head_kv"].is_null());
  if (new_arch) {
    if (b->heads % b->kv_heads != 0)
      return make_error("invalid_value", "model.num_kv_heads",
                        "model.num_kv_heads: " + std::to_string(b->kv_heads) +
                            " does not divide num_attention_heads=" + std::to_string(b->heads));
  } else {
    // Named as given: num_kv_heads or FalconConfig's older n_head_kv.
    const std::string kv_key =
        j.contains("num_kv_heads") ? "model.num_kv_heads" : "model.n_head_kv";
    // FalconConfig writes num_kv_heads = num_attention_heads when none was given, and
    // FalconAttention then uses 1 under multi_query (config.num_kv_heads only with
    // new_decoder_architecture or without multi_query): a config transformers saved carries it.
    const bool saved_default = multi_query && b->kv_heads == b->heads;
    if (kv_given && b->kv_heads != (multi_query ? 1 : b->heads) && !saved_default)
      return make_error("unsupported", kv_key,
                        kv_key +
                            ": read only with new_decoder_architecture: true; the "
                            "old architecture has " +
                            std::string(multi_query ? "1 (multi_query)" : "num_attention_heads"));
    b->kv_heads = multi_query ? 1 : b->heads;
  }
  return std::nullopt;
}

// The block (FalconDecoderLayer): the new architecture runs attention and MLP in parallel with
// num_ln_in_parallel_attn norms (default 2: ln_attn and ln_mlp); the old one in parallel over one
// input_layernorm with parallel_attn, else sequentially with post_attention_layernorm.
std::optional<Error> read_block(const FalconJson& in, const FalconFlags& f, ModelSpec* m) {
  const json& j = in.j;
  const bool new_arch = f.new_arch, multi_query = f.multi_query, parallel = f.parallel;
  std::uint64_t norms = new_arch ? 2 : 1;
  if (j.contains("num_ln_in_parallel_attn") && !j["num_ln_in_parallel_attn"].is_null()) {
    ACTMEM_TRY(read_uint(j["num_ln_in_parallel_attn"], "model.num_ln_in_parallel_attn", &norms));
    if (norms > 2 || (!new_arch && norms != 1))
      return in.refuse("num_ln_in_parallel_attn",
                       new_arch
                           ? "is not allowed; allowed: 1, 2"
                           : "is read only with new_decoder_architecture: true; allowed: null, 1");
  }
  if (new_arch && !parallel)
    return in.refuse("parallel_attn",
                     "with new_decoder_architecture builds no layer in transformers (the new "
                     "architecture is parallel); allowed: true");
  if (new_arch)
    m->block = norms == 2 ? BlockLayout::kParallelTwoNorms : BlockLayout::kParallel;
  else
    m->block = parallel ? BlockLayout::kParallel : BlockLayout::kSequential;
  // _split_heads gathers K and V with index lists ([-2], [-1]) under the new architecture and
  // multi-query; the new architecture also broadcasts them to every query head.
  m->hf_qkv_index_lists = new_arch || multi_query ? 2 : 0;
  m->hf_kv_broadcast = new_arch;
  return std::nullopt;
}

}  // namespace

std::optional<Error> read_falcon(const json& j, ModelSpec* out,
                                 std::vector<std::string>* warnings) {
  ACTMEM_TRY(check_keys(j, warnings));
  const FalconJson in{j};
  FalconFlags f;
  ACTMEM_TRY(read_flags(in, &f));
  ACTMEM_TRY(read_sizes(in, f.bias, out));
  ACTMEM_TRY(read_kv_heads(in, f, &out->kinds[0]));
  ACTMEM_TRY(read_block(in, f, out));
  return std::nullopt;
}

}  // namespace actmem::detail

// Reads what DeepSeek-V2 and DeepSeek-V3 config.json files add to the Llama names: multi-head
// latent attention, the routed and shared experts with their router, the leading dense layers
// (first_k_dense_replace) and the multi-token-prediction layers (transformers 5.17
// configuration_deepseek_v3.py / configuration_deepseek_v2.py, modeling_deepseek_v3.py).
#include "read/models/deepseek.hpp"

#include "actmem/core/limits.hpp"
#include "read/json_read.hpp"

namespace actmem::detail {

namespace {

std::optional<Error> required(const std::string& type, const char* key) {
  return make_error("missing_key", std::string("model.") + key,
                    std::string("model.") + key + ": required for model_type " + type);
}

// Every dimension is bounded where it is read (2^40, as validate() bounds the others), so sums of
// them cannot wrap and an error names the key given.
std::optional<Error> get_dim(const json& j, const std::string& type, const char* key,
                             std::uint64_t* out, bool allow_zero = false, bool allow_null = false,
                             std::uint64_t most = kMaxDim) {
  if (!j.contains(key)) return required(type, key);
  if (allow_null && j[key].is_null()) {
    *out = 0;
    return std::nullopt;
  }
  ACTMEM_TRY(read_uint(j[key], std::string("model.") + key, out, allow_zero));
  if (*out > most)
    return make_error(
        "invalid_value", std::string("model.") + key,
        std::string("model.") + key + ": " + std::to_string(*out) + " is more than the " +
            (most == kMaxDim ? std::string("2^40") : std::to_string(most)) + " allowed");
  return std::nullopt;
}

// What MLA replaces or does not model.
std::optional<Error> refuse_mla_unmodelled(const json& j, const LayerKind& b) {
  if (b.qkv_bias || b.o_bias)  // set by attention_bias or our schema's qkv_bias
    return refuse_value(
        j, j.contains("qkv_bias") && j["qkv_bias"] == true ? "qkv_bias" : "attention_bias",
        "(biases on MLA's projections) is not modelled; allowed: false");
  if (b.mlp_bias)
    return refuse_value(j, "mlp_bias", "is not modelled for DeepSeek; allowed: false");
  // DeepseekV2Config and DeepseekV3Config set head_dim = qk_rope_head_dim (the RoPE width their
  // rotary embedding reads), so a config transformers saved carries it; any other value is not
  // what the heads are.
  if (j.contains("head_dim") && !j["head_dim"].is_null() &&
      !(j.contains("qk_rope_head_dim") && j["head_dim"] == j["qk_rope_head_dim"]))
    return refuse_value(
        j, "head_dim",
        "is not read for DeepSeek: each head is qk_nope_head_dim + qk_rope_head_dim "
        "wide; remove it (or give qk_rope_head_dim's value, as transformers saves it)");
  if (j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null() &&
      b.kv_heads != b.heads)
    return refuse_value(
        j, "num_key_value_heads",
        "differs from num_attention_heads; MLA gives every head its own key and value "
        "(allowed: " +
            std::to_string(b.heads) + ")");
  return std::nullopt;
}

// Multi-head latent attention: q_lora_rank null projects queries directly (DeepSeek-V2-Lite).
std::optional<Error> read_mla(const json& j, const std::string& type, LayerKind& b) {
  MlaSpec& l = b.mla;
  ACTMEM_TRY(get_dim(j, type, "q_lora_rank", &l.q_lora_rank, false, true));
  ACTMEM_TRY(get_dim(j, type, "kv_lora_rank", &l.kv_lora_rank));
  ACTMEM_TRY(get_dim(j, type, "qk_nope_head_dim", &l.qk_nope_dim));
  ACTMEM_TRY(get_dim(j, type, "qk_rope_head_dim", &l.qk_rope_dim));
  ACTMEM_TRY(get_dim(j, type, "v_head_dim", &l.v_head_dim));
  if (l.qk_nope_dim + l.qk_rope_dim > kMaxDim)
    return make_error("invalid_value", "model.qk_nope_head_dim",
                      "model.qk_nope_head_dim: " + std::to_string(l.qk_nope_dim) +
                          " + qk_rope_head_dim " + std::to_string(l.qk_rope_dim) +
                          " is wider than the 2^40 a head may be");
  b.head_dim = l.qk_nope_dim + l.qk_rope_dim;
  b.kv_heads = b.heads;
  return std::nullopt;
}

// The router (DeepseekV3TopkRouter: sigmoid scores, an aux-loss-free bias, group-limited top-k,
// renormalized weights; DeepseekV2: softmax and greedy top-k, not renormalized). The config
// classes' defaults: norm_topk_prob True for V3, False for V2.
std::optional<Error> read_router(const json& j, const std::string& type, bool v3, MoeSpec& e) {
  std::string scoring = v3 ? "sigmoid" : "softmax", method = v3 ? "noaux_tc" : "greedy";
  if (j.contains("scoring_func"))
    ACTMEM_TRY(read_string(j["scoring_func"], "model.scoring_func", &scoring));
  if (j.contains("topk_method"))
    ACTMEM_TRY(read_string(j["topk_method"], "model.topk_method", &method));
  if (scoring != (v3 ? "sigmoid" : "softmax"))
    return refuse_value(
        j, "scoring_func",
        std::string("is not modelled for ") + type + "; allowed: " + (v3 ? "sigmoid" : "softmax"));
  // DeepSeek-V2 (236B) routes group_limited_greedy: the top-k among the topk_group groups
  // with the highest expert score (DeepseekV2Moe.route_tokens_to_experts; V2-Lite: greedy).
  const bool v2_grouped = !v3 && method == "group_limited_greedy";
  if (method != (v3 ? "noaux_tc" : "greedy") && !v2_grouped)
    return refuse_value(j, "topk_method",
                        std::string("is not modelled for ") + type +
                            "; allowed: " + (v3 ? "noaux_tc" : "greedy, group_limited_greedy"));
  e.norm_topk = v3;
  if (j.contains("norm_topk_prob"))
    ACTMEM_TRY(read_bool(j["norm_topk_prob"], "model.norm_topk_prob", &e.norm_topk));
  e.group_limited_greedy = v2_grouped;
  if (v3 || v2_grouped) {
    ACTMEM_TRY(get_dim(j, type, "n_group", &e.groups));
    ACTMEM_TRY(get_dim(j, type, "topk_group", &e.topk_groups));
    if (e.experts % e.groups != 0 || e.topk_groups > e.groups)
      return make_error("invalid_value", "model.n_group",
                        "model.n_group: " + std::to_string(e.groups) +
                            " must divide n_routed_experts=" + std::to_string(e.experts) +
                            " and be at least topk_group=" + std::to_string(e.topk_groups));
    // Group-limited routing picks the top k among topk_group groups' experts.
    if (e.top_k > e.topk_groups * (e.experts / e.groups))
      return make_error(
          "invalid_value", "model.num_experts_per_tok",
          "model.num_experts_per_tok: " + std::to_string(e.top_k) + " is more than the " +
              std::to_string(e.topk_groups * (e.experts / e.groups)) +
              " experts topk_group=" + std::to_string(e.topk_groups) + " groups hold");
    e.score_bias = v3;
  }
  return std::nullopt;
}

// Experts: n_routed_experts null is a dense model.
std::optional<Error> read_experts(const json& j, const std::string& type, bool v3, LayerKind& b,
                                  std::uint64_t* experts_out, std::uint64_t* first_dense_out) {
  std::uint64_t& experts = *experts_out;
  std::uint64_t& first_dense = *first_dense_out;
  // DeepseekV3Config.attribute_map reads num_local_experts as n_routed_experts: either name,
  // two that disagree refused.
  const char* key = "n_routed_experts";
  if (v3 && j.contains("num_local_experts")) {
    if (j.contains(key) && j[key] != j["num_local_experts"])
      return make_error("invalid_value", "model.num_local_experts",
                        "model.num_local_experts: " + short_dump(j["num_local_experts"]) +
                            " conflicts with model.n_routed_experts: " + short_dump(j[key]) +
                            "; give one");
    key = "num_local_experts";
  }
  ACTMEM_TRY(get_dim(j, type, key, &experts, false, true));
  if (experts > 0) {
    MoeSpec& e = b.moe;
    e.experts = experts;
    ACTMEM_TRY(get_dim(j, type, "num_experts_per_tok", &e.top_k));
    ACTMEM_TRY(get_dim(j, type, "moe_intermediate_size", &e.expert_ffn));
    ACTMEM_TRY(get_dim(j, type, "n_shared_experts", &e.shared_experts, true, true, 1024));
    e.shared_expert_ffn = e.shared_experts > 0 ? e.expert_ffn : 0;
    ACTMEM_TRY(get_dim(j, type, "first_k_dense_replace", &first_dense, true));
    if (j.contains("moe_layer_freq")) {
      std::uint64_t freq = 1;
      ACTMEM_TRY(read_uint(j["moe_layer_freq"], "model.moe_layer_freq", &freq));
      if (freq != 1)
        return refuse_value(j, "moe_layer_freq",
                            "is not read by transformers' DeepSeek layers (every layer from "
                            "first_k_dense_replace on is sparse); allowed: 1");
    }
    ACTMEM_TRY(read_router(j, type, v3, e));
    e.hf_block = v3 ? HfMoe::kDeepseekV3 : HfMoe::kDeepseekV2;
  } else {
    for (const char* k : {"num_experts_per_tok", "n_shared_experts", "first_k_dense_replace"})
      if (j.contains(k) && !j[k].is_null())
        return refuse_value(j, k, "is read only with n_routed_experts; remove it");
  }
  return std::nullopt;
}

// Multi-token prediction (DeepSeek-V3, Sec. 2.2): each extra depth is a projection of the normed
// hidden state and embedding, and one more transformer layer of the sparse kind. Its parameters
// are named apart (the checkpoint stores them as layer 61); config.mtp trains with them
// (setup.cpp, add_mtp_records).
std::optional<Error> read_mtp(const json& j, bool v3, ModelSpec* m) {
  if (!v3 && j.contains("num_nextn_predict_layers") && !j["num_nextn_predict_layers"].is_null() &&
      j["num_nextn_predict_layers"] != 0)
    return refuse_value(j, "num_nextn_predict_layers",
                        "is read only for deepseek_v3 (DeepSeek-V2 has no multi-token prediction)");
  if (j.contains("num_nextn_predict_layers") && !j["num_nextn_predict_layers"].is_null()) {
    ACTMEM_TRY(read_uint(j["num_nextn_predict_layers"], "model.num_nextn_predict_layers",
                         &m->mtp_layers, true));
    if (m->mtp_layers > kMaxLayers)
      return make_error("invalid_value", "model.num_nextn_predict_layers",
                        "model.num_nextn_predict_layers: " + std::to_string(m->mtp_layers) +
                            " is more than the " + std::to_string(kMaxLayers) + " layers allowed");
  }
  return std::nullopt;
}

// The stack: first_k_dense_replace dense layers (DeepseekV3MLP of intermediate_size), then the
// sparse ones (DeepseekV3DecoderLayer). With first_k_dense_replace >= num_hidden_layers every
// layer is dense: transformers builds it so (modeling_deepseek_v3.py, DeepseekV3DecoderLayer: a
// sparse MLP only where layer_idx >= first_k_dense_replace), the expert keys describing no layer;
// an MTP depth takes the last layer's kind, dense then (inventory/params.cpp).
void split_dense_layers(std::uint64_t experts, std::uint64_t first_dense, ModelSpec* m) {
  LayerKind& b = m->kinds[0];
  if (experts > 0 && first_dense >= m->layers) {
    b.moe = MoeSpec{};
    return;
  }
  if (experts > 0 && first_dense > 0 && m->layers <= kMaxLayers) {
    LayerKind d = b;
    d.name = "dense";
    d.moe = MoeSpec{};
    b.name = "moe";
    const LayerKind sparse = b;  // first_dense < layers: all-dense returned above
    m->kinds = {d, sparse};
    m->stack.assign(m->layers, 1);
    for (std::uint64_t i = 0; i < first_dense; ++i) m->stack[i] = 0;
  }
}

}  // namespace

// Keys read here; model_from_json lets them through its key check.
bool is_deepseek_key(const std::string& k) {
  static const char* const kKeys[] = {"q_lora_rank",
                                      "kv_lora_rank",
                                      "qk_nope_head_dim",
                                      "qk_rope_head_dim",
                                      "v_head_dim",
                                      "n_routed_experts",
                                      "n_shared_experts",
                                      "first_k_dense_replace",
                                      "moe_layer_freq",
                                      "n_group",
                                      "topk_group",
                                      "scoring_func",
                                      "topk_method",
                                      "num_nextn_predict_layers",
                                      "routed_scaling_factor",
                                      "ep_size",
                                      "aux_loss_alpha",
                                      "seq_aux",
                                      "rope_interleave"};
  return listed(kKeys, k);
}

std::optional<Error> read_deepseek(const json& j, const std::string& type, ModelSpec* m) {
  const bool v3 = type == "deepseek_v3";
  LayerKind& b = m->kinds[0];
  // DeepseekV2's apply_rotary_emb multiplies by freqs_cis, a complex64 table (measured:
  // hf_layers.json, [1, 1, s, d_rope/2] complex64); DeepSeek-V3 keeps cos and sin.
  m->hf_rope_complex = !v3;
  ACTMEM_TRY(refuse_mla_unmodelled(j, b));
  ACTMEM_TRY(read_mla(j, type, b));
  std::uint64_t experts = 0, first_dense = 0;
  ACTMEM_TRY(read_experts(j, type, v3, b, &experts, &first_dense));
  ACTMEM_TRY(read_mtp(j, v3, m));
  split_dense_layers(experts, first_dense, m);
  return std::nullopt;
}

}  // namespace actmem::detail

// Reads a model's stack of layer kinds: our schema's "layer_kinds" and "layer_stack"
// (docs/schema.md), and the stacks Hugging Face configs imply (Qwen2-MoE's decoder_sparse_step and
// mlp_only_layers).
#include <algorithm>
#include <map>

#include "actmem/names/names.hpp"
#include "read/json_read.hpp"
#include "read/models/stack.hpp"

namespace actmem::detail {

namespace {

// Keys a layer kind may set; every other key of the model is model-wide.
const char* const kKindKeys[] = {"num_attention_heads",
                                 "num_key_value_heads",
                                 "head_dim",
                                 "intermediate_size",
                                 "ffn_type",
                                 "qkv_bias",
                                 "qk_norm",
                                 "attn_sinks",
                                 "attention_bias",
                                 "mlp_bias",
                                 "num_local_experts",
                                 "num_experts_per_tok",
                                 "moe_intermediate_size",
                                 "num_shared_experts",
                                 "shared_expert_intermediate_size",
                                 "capacity_factor"};

std::optional<Error> bad(const std::string& field, const std::string& msg) {
  return make_error("invalid_value", field, field + ": " + msg);
}

// Applies a kind's keys over `k` (a copy of the base kind).
std::optional<Error> read_kind(const json& j, const std::string& field, LayerKind* k) {
  if (!j.is_object())
    return make_error("wrong_type", field, field + ": must be an object, got " + kind_of(j));
  ACTMEM_TRY(check_keys(j, field, kKindKeys, sizeof(kKindKeys) / sizeof(kKindKeys[0]),
                        "not a layer-kind key",
                        "a kind sets attention and FFN keys, the rest is model-wide "
                        "(docs/schema.md)"));
  auto u = [&](const char* key, std::uint64_t* out, bool zero) -> std::optional<Error> {
    if (!j.contains(key)) return std::nullopt;
    return read_uint(j[key], field + "." + key, out, zero);
  };
  auto b = [&](const char* key, bool* out) -> std::optional<Error> {
    if (!j.contains(key)) return std::nullopt;
    return read_bool(j[key], field + "." + key, out);
  };
  ACTMEM_TRY(u("num_attention_heads", &k->heads, false));
  ACTMEM_TRY(u("num_key_value_heads", &k->kv_heads, false));
  ACTMEM_TRY(u("head_dim", &k->head_dim, false));
  ACTMEM_TRY(u("intermediate_size", &k->ffn_hidden, false));
  ACTMEM_TRY(b("qkv_bias", &k->qkv_bias));
  ACTMEM_TRY(b("qk_norm", &k->qk_norm));
  ACTMEM_TRY(b("attn_sinks", &k->attn_sinks));
  bool attention_bias = false;
  if (j.contains("attention_bias")) {
    ACTMEM_TRY(b("attention_bias", &attention_bias));
    k->qkv_bias = k->o_bias = attention_bias;
  }
  ACTMEM_TRY(b("mlp_bias", &k->mlp_bias));
  if (j.contains("ffn_type"))
    ACTMEM_TRY(read_choice(
        j["ffn_type"], field + ".ffn_type",
        [](const std::string& s, FfnType* f) { return ffn_table().parse(s, f); }, &k->ffn,
        ffn_table().list()));
  if (j.contains("num_local_experts")) {
    std::uint64_t e = 0;
    ACTMEM_TRY(u("num_local_experts", &e, true));
    if (e == 0) {
      k->moe = MoeSpec{};  // a dense layer in a mixture-of-experts model
    } else {
      if (!k->is_moe()) k->moe.expert_ffn = k->ffn_hidden;
      k->moe.experts = e;
    }
  }
  if (k->is_moe()) {
    ACTMEM_TRY(u("num_experts_per_tok", &k->moe.top_k, false));
    ACTMEM_TRY(u("moe_intermediate_size", &k->moe.expert_ffn, false));
    ACTMEM_TRY(u("shared_expert_intermediate_size", &k->moe.shared_expert_ffn, true));
    if (j.contains("shared_expert_intermediate_size"))
      k->moe.shared_experts = k->moe.shared_expert_ffn > 0 ? 1 : 0;
    if (j.contains("num_shared_experts")) {
      ACTMEM_TRY(u("num_shared_experts", &k->moe.shared_experts, true));
      if (k->moe.shared_experts > 0 && k->moe.shared_expert_ffn == 0)
        k->moe.shared_expert_ffn = k->moe.expert_ffn;
    }
    if (j.contains("capacity_factor")) {
      ACTMEM_TRY(
          read_double(j["capacity_factor"], field + ".capacity_factor", &k->moe.capacity_factor));
      if (k->moe.capacity_factor < 0 || k->moe.capacity_factor > 1024)
        return bad(field + ".capacity_factor", "must be 0 (dropless) or in (0, 1024]");
    }
  } else {
    for (const char* key : {"num_experts_per_tok", "moe_intermediate_size", "num_shared_experts",
                            "shared_expert_intermediate_size", "capacity_factor"})
      if (j.contains(key))
        return bad(field + "." + key,
                   "is a mixture-of-experts key, but this kind has no experts (set "
                   "num_local_experts)");
  }
  return std::nullopt;
}

// Keeps the kinds the stack uses, in order of first appearance, and reindexes the stack; a stack of
// one kind becomes the empty (uniform) stack.
void compact(ModelSpec* m) {
  std::vector<std::int64_t> remap(m->kinds.size(), -1);
  std::vector<LayerKind> used;
  for (std::uint32_t& ki : m->stack) {
    if (remap[ki] < 0) {
      remap[ki] = static_cast<std::int64_t>(used.size());
      used.push_back(m->kinds[ki]);
    }
    ki = static_cast<std::uint32_t>(remap[ki]);
  }
  m->kinds = std::move(used);
  if (m->kinds.size() == 1) m->stack.clear();
}

}  // namespace

bool is_stack_key(const std::string& k) {
  return k == "layer_kinds" || k == "layer_stack";
}

std::optional<Error> read_layer_stack(const json& j, ModelSpec* m) {
  const bool has_kinds = j.contains("layer_kinds"), has_stack = j.contains("layer_stack");
  if (!has_kinds && !has_stack) return std::nullopt;
  if (!has_stack)
    return make_error("missing_key", "model.layer_stack",
                      "model.layer_stack: required with layer_kinds (which kind each layer is)");
  const LayerKind base = m->kinds[0];
  std::vector<LayerKind> kinds{base};
  std::map<std::string, std::uint32_t> index{{"base", 0}};
  if (has_kinds) {
    const json& lk = j["layer_kinds"];
    if (!lk.is_object() || lk.empty() || lk.size() > kMaxLayerKinds)
      return make_error(
          "wrong_type", "model.layer_kinds",
          "model.layer_kinds: must be an object of 1 to 64 named kinds, got " + kind_of(lk));
    for (auto it = lk.begin(); it != lk.end(); ++it) {
      const std::string& name = it.key();
      const std::string field = "model.layer_kinds." + name;
      if (name.empty() || name.size() > 64 || name == "base")
        return bad("model.layer_kinds",
                   "kind name " + short_dump(json(name)) +
                       " is not allowed; a name has 1 to 64 characters and is not 'base' (the "
                       "top-level keys)");
      LayerKind k = base;
      k.name = name;
      k.field = field;
      ACTMEM_TRY(read_kind(it.value(), field, &k));
      index[name] = static_cast<std::uint32_t>(kinds.size());
      kinds.push_back(std::move(k));
    }
  }
  const json& st = j["layer_stack"];
  if (!st.is_array() || st.empty() || st.size() > kMaxLayers)
    return make_error("wrong_type", "model.layer_stack",
                      "model.layer_stack: must be an array of 1 to 65536 runs such as "
                      "{\"kind\": \"dense\", \"repeat\": 3}, got " +
                          kind_of(st));
  auto kind_id = [&](const json& v, const std::string& field,
                     std::uint32_t* out) -> std::optional<Error> {
    std::string name;
    ACTMEM_TRY(read_string(v, field, &name));
    const auto hit = index.find(name);
    if (hit == index.end()) {
      std::string names;
      for (const auto& kv : index) names += (names.empty() ? "" : ", ") + kv.first;
      return bad(field, short_dump(v) + " is not a layer kind; allowed: " + names);
    }
    *out = hit->second;
    return std::nullopt;
  };
  std::vector<std::uint32_t> stack;
  std::vector<bool> used(kinds.size(), false);
  used[0] = !has_kinds;  // without layer_kinds the stack can only name base
  for (std::size_t i = 0; i < st.size(); ++i) {
    const std::string field = "model.layer_stack[" + std::to_string(i) + "]";
    const json& run = st[i];
    std::vector<std::uint32_t> cycle;
    std::uint64_t repeat = 1;
    if (run.is_string()) {
      std::uint32_t k = 0;
      ACTMEM_TRY(kind_id(run, field, &k));
      cycle.push_back(k);
    } else if (run.is_object()) {
      static const char* const kRunKeys[] = {"kind", "kinds", "repeat"};
      ACTMEM_TRY(check_keys(run, field, kRunKeys, 3));
      if (run.contains("kind") == run.contains("kinds"))
        return make_error("missing_key", field,
                          field + ": give kind (one name) or kinds (names that alternate)");
      if (run.contains("kind")) {
        std::uint32_t k = 0;
        ACTMEM_TRY(kind_id(run["kind"], field + ".kind", &k));
        cycle.push_back(k);
      } else {
        const json& ks = run["kinds"];
        if (!ks.is_array() || ks.empty() || ks.size() > 1024)
          return make_error("wrong_type", field + ".kinds",
                            field + ".kinds: must be an array of 1 to 1024 kind names");
        for (std::size_t q = 0; q < ks.size(); ++q) {
          std::uint32_t k = 0;
          ACTMEM_TRY(kind_id(ks[q], field + ".kinds[" + std::to_string(q) + "]", &k));
          cycle.push_back(k);
        }
      }
      if (run.contains("repeat")) ACTMEM_TRY(read_uint(run["repeat"], field + ".repeat", &repeat));
    } else {
      return make_error(
          "wrong_type", field,
          field + ": must be a kind name or {\"kind\"|\"kinds\", \"repeat\"}, got " + kind_of(run));
    }
    // Bounded before expanding: no input can make the stack longer than 65536 layers.
    if (repeat > kMaxLayers || cycle.size() * repeat > kMaxLayers - stack.size())
      return bad("model.layer_stack", "expands to more than 65536 layers");
    for (std::uint64_t r = 0; r < repeat; ++r)
      for (std::uint32_t k : cycle) stack.push_back(k), used[k] = true;
  }
  for (std::size_t ki = 1; ki < kinds.size(); ++ki)
    if (!used[ki]) return bad(kinds[ki].field, "is not used by layer_stack; remove it or use it");
  if (stack.size() != m->layers)
    return bad("model.layer_stack", "has " + std::to_string(stack.size()) +
                                        " layers; num_hidden_layers is " +
                                        std::to_string(m->layers));
  m->kinds = std::move(kinds);
  m->stack = std::move(stack);
  compact(m);
  return std::nullopt;
}

std::optional<Error> read_sparse_step_stack(const json& j, ModelSpec* m) {
  const LayerKind& base = m->kinds[0];
  std::uint64_t step = 1;
  if (j.contains("decoder_sparse_step"))
    ACTMEM_TRY(read_uint(j["decoder_sparse_step"], "model.decoder_sparse_step", &step));
  std::vector<bool> dense(std::min<std::uint64_t>(m->layers, kMaxLayers), false);
  // Qwen2MoeConfig / Qwen3MoeConfig: mlp_only_layers null is []; an index past the last layer
  // names no layer (the decoder layer tests `layer_idx not in mlp_only_layers`), so it is read
  // and changes nothing, as there.
  if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
    const json& a = j["mlp_only_layers"];
    if (!a.is_array())
      return make_error(
          "wrong_type", "model.mlp_only_layers",
          "model.mlp_only_layers: must be an array of layer indices, got " + kind_of(a));
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint64_t l = 0;
      const std::string field = "model.mlp_only_layers[" + std::to_string(i) + "]";
      ACTMEM_TRY(read_uint(a[i], field, &l, true));
      if (l < dense.size()) dense[l] = true;
    }
  }
  bool any_dense = false;
  for (std::uint64_t i = 0; i < m->layers && i < kMaxLayers; ++i)
    any_dense = any_dense || dense[i] || (i + 1) % step != 0;
  if (!base.is_moe() || !any_dense || m->layers > kMaxLayers) return std::nullopt;
  // Qwen2MoeDecoderLayer and Qwen3MoeDecoderLayer (transformers modeling_qwen2_moe.py,
  // modeling_qwen3_moe.py): layer i has the sparse block when i is not in mlp_only_layers,
  // num_experts > 0 and (i + 1) % decoder_sparse_step == 0, else a dense MLP of intermediate_size.
  LayerKind d = base;
  d.name = "dense";
  d.field = "model";
  d.moe = MoeSpec{};
  m->kinds = {base, d};
  m->kinds[0].name = "moe";
  m->stack.assign(m->layers, 0);
  for (std::uint64_t i = 0; i < m->layers; ++i)
    if (dense[i] || (i + 1) % step != 0) m->stack[i] = 1;
  compact(m);
  return std::nullopt;
}

void apply_windows(ModelSpec* m, const std::vector<std::uint64_t>& window, const char* label) {
  const std::size_t n = std::min<std::size_t>(window.size(), m->layers);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) any = any || window[i] > 0;
  if (!any) return;
  if (m->stack.empty()) m->stack.assign(m->layers, 0);
  const std::size_t kinds = m->kinds.size();
  // One windowed copy per (kind, window) met, appended after the existing kinds.
  std::vector<std::pair<std::size_t, std::uint64_t>> made;
  for (std::size_t i = 0; i < n; ++i) {
    if (window[i] == 0) continue;
    const std::size_t ki = m->stack[i];
    std::size_t at = 0;
    while (at < made.size() && made[at] != std::make_pair(ki, window[i])) ++at;
    if (at == made.size()) {
      LayerKind k = m->kinds[ki];
      k.window = window[i];
      k.name = k.name == "base" ? std::string(label) : k.name + "_" + label;
      m->kinds.push_back(k);
      made.emplace_back(ki, window[i]);
    }
    m->stack[i] = static_cast<std::uint32_t>(kinds + at);
  }
  compact(m);
}

std::optional<Error> read_layer_types(const json& j, std::uint64_t n, const char* family,
                                      std::vector<bool>* sliding) {
  const json& lt = j["layer_types"];
  if (!lt.is_array() || lt.size() != n)
    return make_error("invalid_value", "model.layer_types",
                      "model.layer_types: " + short_dump(lt) + " must be a list of " +
                          "num_hidden_layers=" + std::to_string(n) +
                          " entries, each \"sliding_attention\" or \"full_attention\"");
  sliding->assign(lt.size(), false);
  for (std::size_t i = 0; i < lt.size(); ++i) {
    if (lt[i] != "sliding_attention" && lt[i] != "full_attention")
      return make_error("invalid_value", "model.layer_types",
                        "model.layer_types: " + short_dump(lt[i]) + " is not a " + family +
                            " layer type; allowed: sliding_attention, full_attention");
    (*sliding)[i] = lt[i] == "sliding_attention";
  }
  return std::nullopt;
}

}  // namespace actmem::detail

// Reads what Llama 4 text configs add to the Llama names (transformers 5.17
// configuration_llama4.py Llama4TextConfig, modeling_llama4.py): MoE layers (one shared expert,
// top-k routed experts) among dense layers of intermediate_size_mlp, NoPE layers, the L2 q/k norm
// of the RoPE layers and the NoPE layers' attention temperature. Chunked attention changes no
// saved tensor (measured: hf_layers.json, chunk 32 < s).
#include "read/models/llama4.hpp"

#include <algorithm>
#include <vector>

#include "actmem/core/limits.hpp"
#include "read/json_read.hpp"

namespace actmem::detail {

bool is_llama4_key(const std::string& k) {
  // attention_chunk_size, floor_scale and attn_scale set values, not shapes; layer_types
  // restates no_rope_layers (chunked_attention on the RoPE layers).
  static const char* const kKeys[] = {"intermediate_size_mlp",
                                      "moe_layers",
                                      "interleave_moe_layer_step",
                                      "use_qk_norm",
                                      "no_rope_layers",
                                      "no_rope_layer_interval",
                                      "attention_chunk_size",
                                      "attn_temperature_tuning",
                                      "floor_scale",
                                      "attn_scale",
                                      "for_llm_compressor"};
  return listed(kKeys, k);
}

std::optional<Error> read_llama4(const json& j, ModelSpec* m) {
  const LayerKind base = m->kinds[0];
  // Llama4TextRotaryEmbedding returns freqs_cis, complex64 (measured: hf_layers.json,
  // [1, s, 1, d/2] complex64).
  m->hf_rope_complex = true;
  if (m->layers > kMaxLayers) return std::nullopt;  // validate() names the bound
  const std::size_t n = static_cast<std::size_t>(m->layers);
  for (const char* k : {"num_experts", "moe_intermediate_size", "num_shared_experts",
                        "shared_expert_intermediate_size", "mlp_bias"})
    if (j.contains(k))
      return refuse_value(j, k,
                          "is not a Llama 4 key (experts are intermediate_size wide with one "
                          "shared expert of the same width); remove it");
  // Dense layers: Llama4TextMLP of intermediate_size_mlp (class default 16384).
  std::uint64_t dense_f = 16384;
  if (j.contains("intermediate_size_mlp")) {
    ACTMEM_TRY(read_uint(j["intermediate_size_mlp"], "model.intermediate_size_mlp", &dense_f));
    if (dense_f > kMaxDim)
      return refuse_value(j, "intermediate_size_mlp", "is larger than the supported 2^40");
  }
  // MoE layers: moe_layers, else every interleave_moe_layer_step-th layer from step - 1.
  std::vector<bool> moe(n, false);
  if (j.contains("moe_layers") && !j["moe_layers"].is_null()) {
    const json& a = j["moe_layers"];
    if (!a.is_array())
      return make_error("wrong_type", "model.moe_layers",
                        "model.moe_layers: must be an array of layer indices, got " + kind_of(a));
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint64_t l = 0;
      const std::string field = "model.moe_layers[" + std::to_string(i) + "]";
      ACTMEM_TRY(read_uint(a[i], field, &l, true));
      // Llama4TextDecoderLayer tests `layer_idx in config.moe_layers`: an index past the last
      // layer names no layer and changes nothing, as there.
      if (l < n) moe[l] = true;
    }
  } else {
    std::uint64_t step = 1;
    if (j.contains("interleave_moe_layer_step"))
      ACTMEM_TRY(
          read_uint(j["interleave_moe_layer_step"], "model.interleave_moe_layer_step", &step));
    for (std::size_t i = 0; i < n; ++i) moe[i] = (i + 1) % step == 0;
  }
  // RoPE layers: no_rope_layers (1 = RoPE, 0 = NoPE), else NoPE every no_rope_layer_interval-th.
  std::vector<bool> rope(n, true);
  if (j.contains("no_rope_layers") && !j["no_rope_layers"].is_null() &&
      !(j["no_rope_layers"].is_array() && j["no_rope_layers"].empty())) {
    const json& a = j["no_rope_layers"];
    if (!a.is_array() || a.size() < n)
      return refuse_value(j, "no_rope_layers",
                          "must list at least num_hidden_layers=" + std::to_string(n) +
                              " entries, 1 for a RoPE layer and 0 for a NoPE layer");
    for (std::size_t i = 0; i < n; ++i) {
      if (a[i] != 0 && a[i] != 1)
        return make_error("invalid_value", "model.no_rope_layers",
                          "model.no_rope_layers[" + std::to_string(i) + "]: " + short_dump(a[i]) +
                              " is not allowed; allowed: 0 (NoPE), 1 (RoPE)");
      rope[i] = a[i] == 1;
    }
  } else {
    std::uint64_t interval = 4;
    if (j.contains("no_rope_layer_interval"))
      ACTMEM_TRY(read_uint(j["no_rope_layer_interval"], "model.no_rope_layer_interval", &interval));
    for (std::size_t i = 0; i < n; ++i) rope[i] = (i + 1) % interval != 0;
  }
  bool qk_norm = true, temperature = true;
  if (j.contains("use_qk_norm"))
    ACTMEM_TRY(read_bool(j["use_qk_norm"], "model.use_qk_norm", &qk_norm));
  if (j.contains("attn_temperature_tuning"))
    ACTMEM_TRY(
        read_bool(j["attn_temperature_tuning"], "model.attn_temperature_tuning", &temperature));
  // Chunked attention on the RoPE layers (Llama4TextConfig: layer_types "chunked_attention"
  // where no_rope_layers is 1; null turns it off): a query sees its chunk only.
  std::uint64_t chunk = 8192;
  if (j.contains("attention_chunk_size")) {
    if (j["attention_chunk_size"].is_null())
      chunk = 0;
    else
      ACTMEM_TRY(read_uint(j["attention_chunk_size"], "model.attention_chunk_size", &chunk));
  }
  // The kinds: (MoE or dense) x (RoPE or NoPE), in order of first appearance.
  m->kinds.clear();
  m->stack.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    LayerKind k = base;
    k.rope = rope[i];
    k.qk_l2_norm = qk_norm && rope[i];
    k.attn_temperature = temperature && !rope[i];
    k.window = rope[i] ? chunk : 0;
    if (moe[i]) {
      k.moe.shared_experts = 1;
      k.moe.shared_expert_ffn = base.moe.expert_ffn;
      k.moe.hf_block = HfMoe::kLlama4;
    } else {
      k.moe = MoeSpec{};
      k.ffn_hidden = dense_f;
    }
    k.name = moe[i] ? (rope[i] ? "moe" : "moe_nope") : (rope[i] ? "dense" : "dense_nope");
    auto same = [&](const LayerKind& x) { return x.name == k.name; };
    auto it = std::find_if(m->kinds.begin(), m->kinds.end(), same);
    if (it == m->kinds.end()) {
      m->kinds.push_back(k);
      it = m->kinds.end() - 1;
    }
    m->stack[i] = static_cast<std::uint32_t>(it - m->kinds.begin());
  }
  if (m->kinds.size() == 1) m->stack.clear();
  m->hf_modules = HfModules::kLlama4;
  return std::nullopt;
}

}  // namespace actmem::detail

// Configs as transformers' config classes read them (transformers 5.17, configuration_<family>.py
// at huggingface/transformers 008e574, and the decoder layers in modeling_<family>.py): a key
// left out takes the class's default, a value the class accepts is answered as the model it
// builds, and a value that would build no working model is refused by field (issue 38's audit).
#include "helpers.hpp"

using namespace actmem::test;

namespace {

json answer(const json& model) {
  return run(json{{"model", model}, {"config", {{"seq", 64}, {"profile", "hf"}}}});
}

json error_of(const json& model) {
  return actmem::evaluate_json(json{{"model", model}, {"config", {{"seq", 64}}}})["error"];
}

bool warns(const json& r, const std::string& text) {
  for (const json& w : r["warnings"])
    if (w.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

// h = 256, 16 heads of 16, 2 layers, f = 512, V = 1000.
json decoder(const char* type) {
  return {{"model_type", type},           {"hidden_size", 256},       {"num_attention_heads", 16},
          {"num_hidden_layers", 2},       {"intermediate_size", 512}, {"vocab_size", 1000},
          {"max_position_embeddings", 64}};
}

// A Qwen-MoE config of decoder("qwen2_moe")'s dimensions: 4 experts of 128, top-2, a shared
// expert of 256, 4 layers.
json qwen_moe(const char* type) {
  json m = decoder(type);
  m["num_hidden_layers"] = 4;
  m["num_key_value_heads"] = 4;
  m["num_experts"] = 4;
  m["num_experts_per_tok"] = 2;
  m["moe_intermediate_size"] = 128;
  if (std::string(type) == "qwen2_moe") m["shared_expert_intermediate_size"] = 256;
  return m;
}

}  // namespace

TEST_CASE(
    "num_key_value_heads left out is the config class's default (MistralConfig and MixtralConfig "
    "8, Qwen2Config and Qwen3Config 32, Qwen2MoeConfig 16, Qwen3MoeConfig 4), said as a "
    "warning, null is the head count where the class maps None so, refused where it keeps None",
    "[hf][config_classes]") {
  // MistralConfig(num_key_value_heads=8): 16 heads read with 8 KV heads, not 16.
  json mistral = decoder("mistral"), eight = decoder("mistral"), sixteen = decoder("mistral");
  eight["num_key_value_heads"] = 8;
  sixteen["num_key_value_heads"] = 16;
  const json r = answer(mistral);
  CHECK(r["activations"] == answer(eight)["activations"]);
  CHECK(r["model"] == answer(eight)["model"]);
  CHECK(r["model"]["num_key_value_heads"] == 8);
  CHECK(u(r["model"]["params"]) < u(answer(sixteen)["model"]["params"]));
  CHECK(warns(r,
              "model.num_key_value_heads: not given; model_type mistral's config class "
              "default 8 is read"));
  // MistralConfig.__post_init__: None is num_attention_heads.
  json null_kv = mistral;
  null_kv["num_key_value_heads"] = nullptr;
  CHECK(answer(null_kv)["model"] == answer(sixteen)["model"]);
  // Qwen2Config's 32 is the head count of a 32-head model: read silently.
  json qwen2 = decoder("qwen2"), qwen2_32 = decoder("qwen2");
  qwen2["num_attention_heads"] = qwen2_32["num_attention_heads"] = 32;
  qwen2_32["num_key_value_heads"] = 32;
  const json q = answer(qwen2);
  CHECK(q["model"] == answer(qwen2_32)["model"]);
  CHECK_FALSE(warns(q, "num_key_value_heads"));
  // With 16 heads, 32 KV heads would give num_key_value_groups = 0: the key is required.
  const json e = error_of(decoder("qwen2"));
  CHECK(e["field"] == "model.num_key_value_heads");
  CHECK(e["message"] ==
        "model.num_key_value_heads: required: model_type qwen2's config class default 32 does "
        "not divide num_attention_heads=16");
  // Qwen3MoeConfig's 4 divides 16 heads; Qwen2MoeConfig keeps None (no working attention).
  json q3m = qwen_moe("qwen3_moe"), q3m4 = qwen_moe("qwen3_moe");
  q3m.erase("num_key_value_heads");
  CHECK(answer(q3m)["model"] == answer(q3m4)["model"]);
  json q2m = qwen_moe("qwen2_moe");
  q2m["num_key_value_heads"] = nullptr;
  CHECK(error_of(q2m)["message"] ==
        "model.num_key_value_heads: null is not read for model_type qwen2_moe (its config class "
        "keeps None); give the number of KV heads");
}

TEST_CASE(
    "Qwen2MoeConfig / Qwen3MoeConfig: mlp_only_layers null is [], an index past the last layer "
    "names no layer, and num_experts 0 builds the dense model (Qwen2MoeDecoderLayer: sparse only "
    "when num_experts > 0)",
    "[hf][config_classes][moe]") {
  for (const char* type : {"qwen2_moe", "qwen3_moe"}) {
    INFO(type);
    const json base = qwen_moe(type);
    json null_list = base, listed = base, past = base;
    null_list["mlp_only_layers"] = nullptr;
    CHECK(answer(null_list)["activations"] == answer(base)["activations"]);
    listed["mlp_only_layers"] = {0};
    past["mlp_only_layers"] = {0, 4, 99};
    const json l = answer(listed);
    CHECK(answer(past)["activations"] == l["activations"]);
    CHECK(l["activations"] != answer(base)["activations"]);  // layer 0 dense: the list is read
    // num_experts 0: every layer Qwen2MoeMLP(intermediate_size), the expert keys unread; the
    // same model as the dense family of the same attention (qwen2: q/k/v biases; qwen3: q/k
    // norms, head_dim given as the MoE class's hidden / heads).
    json none = base;
    none["num_experts"] = 0;
    json dense = decoder(std::string(type) == "qwen2_moe" ? "qwen2" : "qwen3");
    dense["num_hidden_layers"] = 4;
    dense["num_key_value_heads"] = 4;
    if (std::string(type) == "qwen3_moe") dense["head_dim"] = 16;
    const json n = answer(none), d = answer(dense);
    CHECK(n["activations"] == d["activations"]);
    CHECK(u(n["model"]["params"]) == u(d["model"]["params"]));
  }
  // Negative indices are not layer indices in any class.
  json neg = qwen_moe("qwen3_moe");
  neg["mlp_only_layers"] = {-1};
  CHECK(error_of(neg)["field"] == "model.mlp_only_layers[0]");
}

TEST_CASE(
    "Qwen3MoeConfig has no head_dim field: Qwen3MoeAttention's getattr falls back to hidden / "
    "heads (16 here), not Qwen3Config's 128",
    "[hf][config_classes]") {
  json implicit = qwen_moe("qwen3_moe"), explicit16 = qwen_moe("qwen3_moe");
  explicit16["head_dim"] = 16;
  const json r = answer(implicit);
  CHECK(u(r["model"]["head_dim"]) == 16);
  CHECK(r["activations"] == answer(explicit16)["activations"]);
}

TEST_CASE(
    "attribute_map names: MixtralConfig and GptOssConfig read num_experts as num_local_experts, "
    "Qwen3MoeConfig num_local_experts as num_experts, GPT2Config hidden_size, "
    "num_attention_heads, num_hidden_layers and max_position_embeddings as n_embd, n_head, "
    "n_layer and n_positions, two names that disagree are refused",
    "[hf][config_classes]") {
  json mixtral = decoder("mixtral");
  mixtral["num_key_value_heads"] = 8;
  mixtral["num_experts_per_tok"] = 2;
  json by_local = mixtral, by_alias = mixtral;
  by_local["num_local_experts"] = 4;
  by_alias["num_experts"] = 4;
  CHECK(answer(by_alias)["activations"] == answer(by_local)["activations"]);
  json q3m = qwen_moe("qwen3_moe"), q3m_local = qwen_moe("qwen3_moe");
  q3m_local.erase("num_experts");
  q3m_local["num_local_experts"] = 4;
  CHECK(answer(q3m_local)["activations"] == answer(q3m)["activations"]);
  const json gpt2 = {{"model_type", "gpt2"}, {"n_embd", 64},       {"n_head", 4},
                     {"n_layer", 2},         {"n_positions", 128}, {"vocab_size", 100}};
  const json mapped = {{"model_type", "gpt2"},           {"hidden_size", 64},
                       {"num_attention_heads", 4},       {"num_hidden_layers", 2},
                       {"max_position_embeddings", 128}, {"vocab_size", 100}};
  const json g = answer(gpt2), mp = answer(mapped);
  CHECK(mp["activations"] == g["activations"]);
  CHECK(mp["model"] == g["model"]);
  json both = gpt2;
  both["hidden_size"] = 128;
  CHECK(error_of(both)["message"] ==
        "model.hidden_size: 128 conflicts with model.n_embd: 64; give one");
  // Llama-style names GPT2Config does not map are still refused with the name it reads.
  json inner = gpt2;
  inner["intermediate_size"] = 256;
  CHECK(error_of(inner)["field"] == "model.intermediate_size");
}

TEST_CASE(
    "GPT-2's activation_function: gelu and gelu_pytorch_tanh are one F.gelu keeping its input "
    "(activations.py GELUActivation, PytorchGELUTanh), 3 x b x s x 4h x 2 B per layer below "
    "gelu_new's NewGELUActivation (its Python ops keep four tensors), names whose saved tensors "
    "are not modelled are refused",
    "[hf][config_classes][gpt2]") {
  const json gpt2 = {
      {"model_type", "gpt2"}, {"n_embd", 64}, {"n_head", 4}, {"n_layer", 2}, {"vocab_size", 100}};
  const std::uint64_t b = 1, s = 64, f = 4 * 64;
  const json dflt = answer(gpt2);
  json named = gpt2;
  named["activation_function"] = "gelu_new";
  CHECK(answer(named)["activations"] == dflt["activations"]);
  for (const char* act : {"gelu", "gelu_pytorch_tanh"}) {
    INFO(act);
    json m = gpt2;
    m["activation_function"] = act;
    const json r = answer(m);
    CHECK(u(r["per_layer"]["activation_bytes"]) + 3 * b * s * f * 2 ==
          u(dflt["per_layer"]["activation_bytes"]));
  }
  for (const char* act : {"relu", "tanh", "silu", "gelu_fast", "quick_gelu", "nonsense"}) {
    INFO(act);
    json m = gpt2;
    m["activation_function"] = act;
    const json e = error_of(m);
    CHECK(e["field"] == "model.activation_function");
    CHECK(e["message"].get<std::string>().find("allowed: gelu_new, gelu, gelu_pytorch_tanh") !=
          std::string::npos);
  }
}

TEST_CASE(
    "DeepseekV3Config's attribute_map reads num_local_experts as n_routed_experts (DeepSeek-V2's "
    "config has no such name: refused there)",
    "[hf][config_classes][deepseek]") {
  json v3 = mla_model(2);
  v3["model_type"] = "deepseek_v3";
  v3["n_routed_experts"] = 4;
  v3["num_experts_per_tok"] = 2;
  v3["moe_intermediate_size"] = 128;
  v3["n_shared_experts"] = 1;
  v3["first_k_dense_replace"] = 1;
  v3["n_group"] = 1;
  v3["topk_group"] = 1;
  json alias = v3;
  alias.erase("n_routed_experts");
  alias["num_local_experts"] = 4;
  CHECK(answer(alias)["activations"] == answer(v3)["activations"]);
  CHECK(answer(alias)["model"] == answer(v3)["model"]);
  json both = v3;
  both["num_local_experts"] = 8;
  CHECK(error_of(both)["message"] ==
        "model.num_local_experts: 8 conflicts with model.n_routed_experts: 4; give one");
  json v2 = mla_model(2);
  v2["num_local_experts"] = 4;
  CHECK(error_of(v2)["field"] == "model.num_local_experts");
}

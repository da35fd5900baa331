// PhiMoE (Phi-3.5-MoE) against transformers 5.17's Phimoe modules measured on the H200
// (tests/reference/gpu/hf_layers.json; docs/validation.md section 4.4): Llama's attention under
// LayerNorm norms, the sparsemixer router's two selections, the grouped experts.
#include "hf_reference.hpp"

using namespace actmem::test;

namespace {

// The tiny measured configuration: h = 256, 4 heads, 2 KV heads, 8 experts of 256, top-2.
json tiny() {
  return {{"model_type", "phimoe"},        {"hidden_size", 256},       {"intermediate_size", 256},
          {"num_hidden_layers", 2},        {"num_attention_heads", 4}, {"num_key_value_heads", 2},
          {"num_local_experts", 8},        {"num_experts_per_tok", 2}, {"vocab_size", 1024},
          {"max_position_embeddings", 512}};
}

json estimate(const json& model, const char* attention = "eager") {
  return run(json{
      {"model", model},
      {"config", {{"micro_batch", 2}, {"seq", 64}, {"profile", "hf"}, {"attention", attention}}}});
}

}  // namespace

TEST_CASE(
    "phimoe (hf_layers.json): parameters exact, the hf inventory equals a PhimoeDecoderLayer's "
    "saved bytes in eager, SDPA 8 B above (cuDNN's RNG state, as Llama)",
    "[hf][families][phimoe]") {
  const json ref = measured_layers();
  int checked = 0;
  for (const json& row : ref["results"]) {
    if (row["model_type"] != "phimoe") continue;
    const bool eager = row["attn_implementation"] == "eager";
    INFO(row["attn_implementation"] << " s=" << row["s"]);
    const json r = run_row(row, eager ? "eager" : "flash");
    CHECK(u(r["model"]["params"]) == u(row["parameters"]));
    CHECK(u(r["per_layer"]["activation_bytes"]) ==
          u(row["by_module"]["model.layers.1"]) + (eager ? 0 : 8));
    ++checked;
  }
  CHECK(checked == 4);
}

TEST_CASE(
    "phimoe's sparsemixer router keeps five tensors per selection, two selections, the input "
    "jitter keeps its noise, lm_head_bias adds V parameters",
    "[hf][phimoe][moe]") {
  const json r = estimate(tiny());
  std::uint64_t router = 0;
  for (const json& t : r["per_layer"]["all_tensors"])
    if (t["name"].get<std::string>().rfind("moe.select_", 0) == 0) router += u(t["bytes"]);
  // Measured per selection (T = b x s = 128 tokens, E = 8): bool mask 1,024, int64 argmax 1,024,
  // bf16 softmax 2,048, int64 choice 1,024, bf16 multiplier 256.
  CHECK(router == 2 * (1024 + 1024 + 2048 + 1024 + 256));
  json jitter = tiny();
  jitter["input_jitter_noise"] = 0.01;
  // mul_ by uniform noise keeps the noise: b x s x h bf16 = 65,536 B (derived from
  // PhimoeSparseMoeBlock.forward; the measured rows ran at the class default 0.0). The generic
  // expert records of the other profiles keep it too (Megatron-LM's apply_input_jitter).
  CHECK(u(estimate(jitter)["per_layer"]["activation_bytes"]) -
            u(r["per_layer"]["activation_bytes"]) ==
        2 * 64 * 256 * 2);
  for (const char* profile : {"megatron", "pytorch"}) {
    INFO(profile);
    auto layer = [&](const json& m) {
      return u(run(json{{"model", m},
                        {"config",
                         {{"micro_batch", 2},
                          {"seq", 64},
                          {"profile", profile}}}})["per_layer"]["activation_bytes"]);
    };
    CHECK(layer(jitter) - layer(tiny()) == 2 * 64 * 256 * 2);
  }
  json biased = tiny();
  biased["lm_head_bias"] = true;
  CHECK(u(estimate(biased)["model"]["params"]) - u(r["model"]["params"]) == 1024);
}

TEST_CASE(
    "phimoe keys that its modules do not read, or that change memory in ways not modelled, "
    "are refused by name",
    "[hf][phimoe][errors]") {
  struct Case {
    const char* key;
    json value;
    const char* field;
  };
  const Case cases[] = {{"num_experts_per_tok", 3, "model.num_experts_per_tok"},
                        {"num_experts", 8, "model.num_experts"},
                        {"mlp_bias", true, "model.mlp_bias"},
                        {"norm_type", "rmsnorm", "model.norm_type"},
                        {"input_jitter_noise", 1.5, "model.input_jitter_noise"},
                        {"output_router_logits", true, "model.output_router_logits"}};
  for (const Case& c : cases) {
    json m = tiny();
    m[c.key] = c.value;
    INFO(c.key << " = " << c.value.dump());
    CHECK(actmem::evaluate_json(json{{"model", m}})["error"]["field"] == c.field);
  }
  for (const char* key : {"num_key_value_heads", "num_local_experts"}) {
    json m = tiny();
    m.erase(key);
    INFO(key);
    CHECK(actmem::evaluate_json(json{{"model", m}})["error"]["field"] ==
          std::string("model.") + key);
  }
  // PhimoeConfig's default top-k is 2: leaving it out is the same model.
  json no_k = tiny();
  no_k.erase("num_experts_per_tok");
  CHECK(u(estimate(no_k)["per_layer"]["activation_bytes"]) ==
        u(estimate(tiny())["per_layer"]["activation_bytes"]));
}

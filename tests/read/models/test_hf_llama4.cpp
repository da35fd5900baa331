// Llama 4 (text) against transformers 5.17's Llama4Text modules measured on the H200
// (tests/reference/gpu/hf_layers.json; docs/validation.md section 4.4): dense and MoE layers
// interleaved, RoPE layers with the L2 q/k norm and chunked attention, NoPE layers with the
// query temperature, and experts that run every token.
#include "hf_reference.hpp"

using namespace actmem::test;

namespace {

// The tiny measured configuration: h = 256, 4 heads of 64, 2 KV heads, 4 layers (MoE every
// second: layers 1 and 3; NoPE every fourth: layer 3), 4 experts of 256 with top-1 and a shared
// expert, dense MLP 512, chunk 32.
json tiny() {
  return {{"model_type", "llama4_text"},
          {"hidden_size", 256},
          {"intermediate_size", 256},
          {"intermediate_size_mlp", 512},
          {"num_hidden_layers", 4},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 64},
          {"num_local_experts", 4},
          {"num_experts_per_tok", 1},
          {"interleave_moe_layer_step", 2},
          {"attention_chunk_size", 32},
          {"vocab_size", 1024},
          {"max_position_embeddings", 512}};
}

// Each layer kind's bytes, by name.
std::uint64_t kind_bytes(const json& r, const char* name) {
  for (const json& k : r["model"]["layer_kinds"])
    if (k["name"] == name) return u(k["full_bytes"]);
  FAIL("no layer kind " << name);
  return 0;
}

}  // namespace

TEST_CASE(
    "llama4_text (hf_layers.json): parameters exact, every layer kind equals its measured "
    "Llama4TextDecoderLayer in eager, under SDPA the NoPE layer is 8 B below flash (cuDNN) and "
    "the chunked RoPE layers keep their mask and K/V at every head",
    "[hf][families][llama4]") {
  const json ref = measured_layers();
  int checked = 0;
  for (const json& row : ref["results"]) {
    if (row["model_type"] != "llama4_text") continue;
    const bool eager = row["attn_implementation"] == "eager";
    const std::uint64_t s = u(row["s"]);
    INFO(row["attn_implementation"] << " s=" << s);
    const json r = run_row(row, eager ? "eager" : "flash");
    CHECK(u(r["model"]["params"]) == u(row["parameters"]));
    const json& bm = row["by_module"];
    // Layer 0 (dense, RoPE) also holds the RoPE table (freqs_cis, s x d/2 complex64 = 4sd B),
    // which the engine counts once in the input layer; layer 2 is the same kind without it.
    CHECK(u(bm["model.layers.0"]) - u(bm["model.layers.2"]) == 4 * s * 64);
    // The chunked (RoPE) layers under SDPA: the (b, 1, s, s) mask and K/V repeated to all 4
    // heads (+2 x b x 2 x s x d), cuDNN's 16 B RNG state against flash's 24 (not modelled).
    const std::uint64_t chunked = eager ? 0 : 2 * s * s * 2 + 2 * (2 * 2 * s * 64 * 2) - 8;
    CHECK(kind_bytes(r, "dense") + chunked == u(bm["model.layers.2"]));
    CHECK(kind_bytes(r, "moe") + chunked == u(bm["model.layers.1"]));
    CHECK(kind_bytes(r, "moe_nope") == u(bm["model.layers.3"]) + (eager ? 0 : 8));
    ++checked;
  }
  CHECK(checked == 4);
}

TEST_CASE(
    "llama4_text's experts run every token: the hf expert tensors have E x b x s rows, the "
    "Megatron-style records k x b x s",
    "[hf][llama4][moe]") {
  const json hf = run(json{
      {"model", tiny()},
      {"config", {{"micro_batch", 2}, {"seq", 64}, {"profile", "hf"}, {"attention", "eager"}}}});
  const json mg = run(json{{"model", tiny()}, {"config", {{"micro_batch", 2}, {"seq", 64}}}});
  auto rec = [](const json& r, const char* kind, const char* name) {
    for (const json& k : r["model"]["layer_kinds"])
      if (k["name"] == kind)
        for (const json& t : k["tensors"])
          if (t["name"] == name) return u(t["bytes"]);
    return std::uint64_t{0};
  };
  // E = 4 experts x b x s = 512 rows of f = 256 bf16 (measured [4, 128, 256]).
  CHECK(rec(hf, "moe", "moe.fc2_in") == 4 * 128 * 256 * 2);
  CHECK(rec(mg, "moe", "moe.fc2_in") == 1 * 128 * 256 * 2);
  // NoPE layers: no L2 q/k norm, the per-position temperature instead (s x 4 B).
  CHECK(rec(hf, "moe_nope", "attn.q_norm.in") == 0);
  CHECK(rec(hf, "moe_nope", "attn.temperature") == 64 * 4);
  CHECK(rec(hf, "moe", "attn.q_norm.rstd") == 2 * 64 * 4 * 4);
}

TEST_CASE(
    "llama4_text places its layers by moe_layers / interleave_moe_layer_step and "
    "no_rope_layers, keys it does not read are refused by name",
    "[hf][llama4][errors]") {
  json all_moe = tiny();
  all_moe["moe_layers"] = {0, 1, 2, 3};
  all_moe["no_rope_layers"] = {1, 1, 1, 1};
  const json r = run(json{{"model", all_moe}});
  CHECK_FALSE(r["model"].contains("layer_kinds"));  // one kind: no stack is reported
  struct Case {
    const char* key;
    json value;
    const char* field;
  };
  const Case cases[] = {{"moe_layers", json::array({-1}), "model.moe_layers[0]"},
                        {"no_rope_layers", json::array({1, 2, 1, 1}), "model.no_rope_layers"},
                        {"no_rope_layers", json::array({1}), "model.no_rope_layers"},
                        {"num_experts", 4, "model.num_experts"},
                        {"layer_stack", json::array({"base"}), "model.layer_stack"},
                        {"output_router_logits", true, "model.output_router_logits"}};
  for (const Case& c : cases) {
    json m = tiny();
    m[c.key] = c.value;
    INFO(c.key << " = " << c.value.dump());
    CHECK(actmem::evaluate_json(json{{"model", m}})["error"]["field"] == c.field);
  }
  // Llama4TextDecoderLayer tests `layer_idx in config.moe_layers`: an index past the last layer
  // names none (transformers builds the model), so it changes nothing.
  json listed = tiny(), past = tiny();
  listed["moe_layers"] = {1, 3};
  past["moe_layers"] = {1, 3, 4, 99};
  CHECK(run(json{{"model", past}})["activations"] == run(json{{"model", listed}})["activations"]);
  // Llama4TextConfig's default 8 KV heads does not divide 4 heads: the key is required.
  json no_kv = tiny();
  no_kv.erase("num_key_value_heads");
  CHECK(actmem::evaluate_json(json{{"model", no_kv}})["error"]["field"] ==
        "model.num_key_value_heads");
}

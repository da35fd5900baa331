// gpt-oss against transformers 5.17's GptOss modules measured on the H200
// (tests/reference/gpu/hf_layers.json; docs/validation.md section 4.4) and the published
// gpt-oss-20b config.json (tests/data/hf/SOURCES.md): sinks, the biased router, the experts'
// biases and clamped SwiGLU, and what each profile keeps for them.
#include "hf_reference.hpp"

using namespace actmem::test;

namespace {

// The tiny measured configuration: h = 256, 4 heads of 64, 2 KV heads, 8 experts of 256, top-2,
// layer 0 sliding (window 32), layer 1 full.
json tiny() {
  return {{"model_type", "gpt_oss"},
          {"hidden_size", 256},
          {"intermediate_size", 256},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 64},
          {"num_local_experts", 8},
          {"num_experts_per_tok", 2},
          {"sliding_window", 32},
          {"layer_types", {"sliding_attention", "full_attention"}},
          {"vocab_size", 1024},
          {"max_position_embeddings", 512}};
}

json estimate(const json& model, const char* profile, const char* attention, std::uint64_t s = 64) {
  return run(
      json{{"model", model},
           {"config",
            {{"micro_batch", 2}, {"seq", s}, {"profile", profile}, {"attention", attention}}}});
}

std::uint64_t record(const json& r, const char* name) {
  for (const json& t : r["per_layer"]["all_tensors"])
    if (t["name"] == name) return u(t["bytes"]);
  return 0;
}

}  // namespace

TEST_CASE(
    "gpt_oss (hf_layers.json, eager, s = 64 and 128): parameters exact, the hf inventory equals a "
    "GptOssDecoderLayer's saved bytes, the sliding layer keeps the same tensors as the full one",
    "[hf][families][gpt_oss]") {
  int checked = 0;
  const json ref = measured_layers();
  for (const json& row : ref["results"]) {
    // transformers refuses SDPA for gpt-oss (the rows record its ValueError).
    if (row["model_type"] != "gpt_oss" || !row.contains("tensors")) continue;
    INFO("s=" << row["s"]);
    const json r = run_row(row, "eager");
    CHECK(u(r["model"]["params"]) == u(row["parameters"]));
    CHECK(u(r["per_layer"]["activation_bytes"]) == u(row["by_module"]["model.layers.1"]));
    // Layer 0 (sliding) differs from layer 1 (full) only by the RoPE table its attention keeps
    // first: cos and sin, [1, 1, s, d/2] bf16 each (the engine's input layer holds them once).
    const std::uint64_t s = u(row["s"]);
    CHECK(u(row["by_module"]["model.layers.0"]) - u(row["by_module"]["model.layers.1"]) ==
          2 * s * 32 * 2);
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE(
    "gpt-oss-20b config.json as published: 20,914,757,184 parameters (the GGUF conversion's "
    "general.parameter_count), the MXFP4 quantization_config is accepted with a warning",
    "[hf][families][gpt_oss][params]") {
  const json r =
      run(json{{"model", hub_config("gpt-oss-20b.config.json")}, {"config", {{"seq", 4096}}}});
  CHECK(u(r["model"]["params"]) == 20914757184ULL);
  bool warned = false;
  for (const json& w : r["warnings"])
    warned = warned || w.get<std::string>().rfind(
                           "model.quantization_config: the checkpoint "
                           "stores the experts' weights as MXFP4",
                           0) == 0;
  CHECK(warned);
  // The preset is the same file without its quantization_config.
  CHECK(u(run_preset("gpt-oss-20b", json::object())["model"]["params"]) == 20914757184ULL);
  // Per layer (modeling_gpt_oss.py shapes): attention 26,550,144 (q/k/v/o with biases, 64
  // sinks), router 2,880 x 32 + 32, experts 32 x (2,880 x 5,760 + 5,760 + 2,880 x 2,880 +
  // 2,880), two norms; 24 layers, embedding and head of 201,088 x 2,880, the final norm.
  const std::uint64_t layer = 26550144ULL + (2880 * 32 + 32) +
                              32 * (2880ULL * 5760 + 5760 + 2880ULL * 2880 + 2880) + 2 * 2880;
  CHECK(24 * layer + 2 * 201088ULL * 2880 + 2880 == 20914757184ULL);
}

TEST_CASE(
    "attention sinks in each profile: hf eager keeps the s + 1 column softmax and the row max's "
    "indices, pytorch the s + 1 columns, megatron, textbook and flash no more, a parameters per "
    "layer",
    "[gpt_oss][profiles]") {
  // The same model without sinks: our schema's attn_sinks on a plain GQA model.
  json plain = {{"hidden_size", 256}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                {"head_dim", 64},     {"intermediate_size", 512}, {"num_hidden_layers", 2},
                {"vocab_size", 1024}};
  json sinks = plain;
  sinks["attn_sinks"] = true;
  // b = 2, a = 4, s = 64, bf16: one more column of the softmax is b x a x s x 2 B = 1,024 B.
  const std::uint64_t column = 2 * 4 * 64 * 2;
  auto layer = [](const json& m, const char* profile, const char* att) {
    return u(estimate(m, profile, att)["per_layer"]["activation_bytes"]);
  };
  CHECK(layer(sinks, "pytorch", "eager") - layer(plain, "pytorch", "eager") == column);
  for (const char* profile : {"megatron", "textbook"}) {
    INFO(profile);
    CHECK(layer(sinks, profile, "eager") == layer(plain, profile, "eager"));
  }
  for (const char* profile : {"megatron", "pytorch", "hf"}) {
    INFO(profile << " flash");
    CHECK(layer(sinks, profile, "flash") == layer(plain, profile, "flash"));
  }
  // hf (Llama modules here): the softmax stays as LlamaAttention keeps it (fp32 output, then its
  // bf16 cast) plus the sink column in each; gpt-oss's own modules are checked above.
  CHECK(u(run(json{{"model", sinks}})["model"]["params"]) -
            u(run(json{{"model", plain}})["model"]["params"]) ==
        2 * 4);
  // gpt-oss's eager attention, measured: the softmax in bf16 over s + 1 columns, and the row
  // max's int64 indices (b x a x s x 8 B).
  const json g = estimate(tiny(), "hf", "eager");
  CHECK(record(g, "attn.softmax_out") == 2 * 4 * 64 * 65 * 2);
  CHECK(record(g, "attn.row_max_idx") == 2 * 4 * 64 * 8);
  // PyTorch's SDPA takes no sink logits: refused by name.
  const json bad = actmem::evaluate_json(
      json{{"model", tiny()}, {"config", {{"attention", "sdpa_math"}, {"profile", "hf"}}}});
  CHECK(bad["error"]["field"] == "config.attention");
}

TEST_CASE(
    "gpt-oss experts under hf (grouped experts, measured): the clamped SwiGLU keeps gate_up and "
    "five f-wide tensors, the dense score matrix one more index vector than Qwen3-MoE",
    "[hf][gpt_oss][moe]") {
  const json r = estimate(tiny(), "hf", "eager");
  // Routed copies k x b x s = 256; f = 256; bf16.
  const std::uint64_t copies = 2 * 2 * 64;
  CHECK(record(r, "moe.gate_up") == copies * 2 * 256 * 2);
  for (const char* id :
       {"moe.gate_sigmoid", "moe.gate_clamped", "moe.up_plus_one", "moe.glu", "moe.fc2_in"})
    CHECK(record(r, id) == copies * 256 * 2);
  CHECK(record(r, "moe.score_gather_idx") == copies * 8);
  CHECK(record(r, "moe.topk_probs") == 2 * 64 * 2 * 2);
  // The generic (Megatron-style) records in the other profiles: the fused GLU keeps its 2f input.
  const json m = estimate(tiny(), "megatron", "eager");
  CHECK(record(m, "moe.act_in") == copies * 2 * 256 * 2);
}

TEST_CASE(
    "MoE biases: mlp_bias on an MoE kind gives every expert its biases (E x (2f + h) per "
    "layer for a GLU), the router's bias is gpt-oss's",
    "[params][moe]") {
  json m = {{"hidden_size", 256},      {"num_attention_heads", 4}, {"intermediate_size", 128},
            {"num_hidden_layers", 2},  {"vocab_size", 1024},       {"num_local_experts", 8},
            {"num_experts_per_tok", 2}};
  json biased = m;
  biased["mlp_bias"] = true;
  CHECK(u(run(json{{"model", biased}})["model"]["params"]) -
            u(run(json{{"model", m}})["model"]["params"]) ==
        2 * 8 * (2 * 128 + 256));
  // With expert parallelism each rank holds its experts with their biases: ep = 2 halves the
  // 8 x (256 x 256 + 128 x 256) weights and 8 x (256 + 256) biases of each of the 2 layers.
  const json ep = run(json{{"model", biased}, {"config", {{"ep", 2}, {"dp", 2}}}});
  const json one = run(json{{"model", biased}});
  CHECK(u(one["static"]["params"]) - u(ep["static"]["params"]) ==
        2 * (8 * (256 * 256 + 128 * 256) + 8 * (256 + 256)) / 2);
}

TEST_CASE(
    "gpt_oss keys that change memory in ways not modelled, or that transformers does not "
    "read, are refused by name",
    "[hf][gpt_oss][errors]") {
  struct Case {
    const char* key;
    json value;
    const char* field;
  };
  const Case cases[] = {
      {"experts_per_token", 4, "model.experts_per_token"},  // conflicts with num_experts_per_tok 2
      {"hidden_act", "gelu", "model.hidden_act"},
      {"mlp_bias", false, "model.mlp_bias"},
      {"num_experts", 4, "model.num_experts"},  // conflicts with num_local_experts 8
      {"moe_intermediate_size", 128, "model.moe_intermediate_size"},
      {"attn_sinks", false, "model.attn_sinks"},
      {"output_router_logits", true, "model.output_router_logits"},
      {"swiglu_limit", -1, "model.swiglu_limit"},
      {"layer_types", json::array({"full_attention"}), "model.layer_types"},
      {"layer_types", json::array({"full_attention", "chunked_attention"}), "model.layer_types"},
      {"quantization_config", {{"quant_method", "bitsandbytes"}}, "model.quantization_config"}};
  for (const Case& c : cases) {
    json m = tiny();
    m[c.key] = c.value;
    INFO(c.key << " = " << c.value.dump());
    CHECK(actmem::evaluate_json(json{{"model", m}})["error"]["field"] == c.field);
  }
  for (const char* key : {"num_key_value_heads", "num_local_experts", "num_experts_per_tok"}) {
    json m = tiny();
    m.erase(key);
    INFO(key);
    CHECK(actmem::evaluate_json(json{{"model", m}})["error"]["field"] ==
          std::string("model.") + key);
  }
  // The same value under both names is accepted, as the Hub's file has it.
  json both = tiny();
  both["experts_per_token"] = 2;
  CHECK(actmem::evaluate_json(json{{"model", both}})["ok"] == true);
}

TEST_CASE(
    "Windowed attention bounds the inference KV cache (min(s, window) tokens per sliding layer) "
    "and changes no saved tensor: gpt-oss-20b, Gemma 3 1B, Llama 4's chunks",
    "[kv_cache][gpt_oss]") {
  // gpt-oss-20b at s = 4096, b = 1: 12 full layers cache 4,096 tokens, 12 sliding layers 128;
  // K and V at 8 KV heads of 64, bf16: 2,048 B per token and layer.
  const json g =
      run(json{{"model", hub_config("gpt-oss-20b.config.json")}, {"config", {{"seq", 4096}}}});
  CHECK(u(g["kv_cache"]["total_bytes"]) == 2048ULL * (12 * 4096 + 12 * 128));
  // Gemma 3 1B (sliding_window 512, every sixth layer full: 22 sliding, 4 full), one KV head of
  // 256: 1,024 B per token and layer.
  const json m =
      run(json{{"model", hub_config("gemma-3-1b-it.config.json")}, {"config", {{"seq", 4096}}}});
  CHECK(u(m["kv_cache"]["total_bytes"]) == 1024ULL * (22 * 512 + 4 * 4096));
  // The window changes no saved tensor: the same model with every layer full keeps the same
  // activations (measured for gpt-oss and Gemma 3 in eager attention, validation.md 4.4).
  json full = hub_config("gpt-oss-20b.config.json");
  full["layer_types"] = json::array();
  for (int i = 0; i < 24; ++i) full["layer_types"].push_back("full_attention");
  const json f = run(json{{"model", full}, {"config", {{"seq", 4096}}}});
  CHECK(u(f["peak_bytes"]) == u(g["peak_bytes"]));
  CHECK(u(f["kv_cache"]["total_bytes"]) == 2048ULL * 24 * 4096);
  // Llama 4's chunked layers cache one chunk: at s = 64 with chunk 32, the three RoPE layers of
  // the tiny config cache 32 tokens and the NoPE layer 64 (2 KV heads of 64: 512 B per token).
  json l4 = {{"model_type", "llama4_text"},
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
             {"vocab_size", 1024}};
  const json c = run(json{{"model", l4}, {"config", {{"seq", 64}}}});
  CHECK(u(c["kv_cache"]["total_bytes"]) == 512ULL * (3 * 32 + 64));
}

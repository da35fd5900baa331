// transformers' `sdpa` attention as PyTorch 2.11 ran it on the H200: the cuDNN backend
// (config.attention sdpa_cudnn) against every SDPA row of tests/reference/gpu/hf_layers.json
// (docs/validation.md section 4.4): each decoder layer and the whole model to the byte, and the
// configurations the measurement did not cover refused by name.
#include <map>
#include <string>

#include "hf_reference.hpp"

using namespace actmem::test;

TEST_CASE(
    "sdpa_cudnn = transformers' SDPA on the H200 (hf_layers.json): every family's decoder "
    "layers and whole model to the byte, windowed and chunked layers' masks, Phi-3's and MLA's "
    "output copies, MLA's V storage",
    "[hf][families][cudnn]") {
  const json ref = measured_layers();
  int rows = 0, layers = 0;
  for (const json& row : ref["results"]) {
    if (row["attn_implementation"] != "sdpa" || !row.contains("tensors")) continue;
    // Falcon's multi-query layout ran on SDPA's math kernel (sdpa_math: test_hf_families.cpp).
    if (row["model_type"] == "falcon" && row["config"]["new_decoder_architecture"] == false)
      continue;
    INFO(row["model_type"] << " s=" << row["s"] << " " << row["config"].dump());
    const json r = run_row(row, "sdpa_cudnn");
    CHECK(whole_model(r) == u(row["saved_bytes"]));
    layers += check_every_layer(row, r);
    ++rows;
  }
  // 12 configurations (gpt-oss and Mamba2 have no SDPA, Falcon's new layout only) at s = 64 and
  // 128: 62 decoder layers.
  CHECK(rows == 24);
  CHECK(layers == 62);
}

TEST_CASE(
    "sdpa_cudnn's records (hf_layers.json, s = 64): the RNG state is two 0-dim int64, a "
    "windowed layer keeps its mask and K/V at every head, a full layer neither",
    "[hf][families][cudnn]") {
  const json ref = measured_layers();
  for (const json& row : ref["results"]) {
    if (row["attn_implementation"] != "sdpa" || row["s"] != 64 || row["model_type"] != "gemma2")
      continue;
    const json r = run_row(row, "sdpa_cudnn");
    // Gemma 2 (h = 256, 4 heads of 64, 2 KV heads, window 32 < s = 64): the sliding layer 0 kept
    // [2, 1, 64, 64] bf16 (16,384 B) and K, V as [2, 4, 64, 64] (65,536 B each); both layers kept
    // two 0-dim int64 (16 B) and [2, 4, 64, 1] fp32 statistics (2,048 B).
    // Gemma 2's two kinds: "sliding" (layer 0) and "base" (layer 1, global).
    auto s = kind_records(r, "sliding");
    auto f = kind_records(r, "base");
    CHECK(s["attn.mask"] == 16384);
    CHECK(s["attn.k"] == 65536);
    CHECK(s["attn.v"] == 65536);
    CHECK(f.count("attn.mask") == 0);
    CHECK(f["attn.k"] == 32768);
    CHECK(s["attn.rng_state"] == 16);
    CHECK(f["attn.rng_state"] == 16);
    CHECK(f["attn.lse"] == 2048);
    return;
  }
  FAIL("no gemma2 sdpa row at s = 64");
}

TEST_CASE(
    "sdpa_cudnn is refused where it was not measured: other profiles, fp32, Falcon's "
    "multi-query layout (SDPA's math kernel), attention sinks",
    "[hf][cudnn][errors]") {
  auto err = [](const json& req) { return actmem::evaluate_json(req)["error"]; };
  const json llama = json{{"preset", "llama-3.1-8b"}};
  json req = llama;
  req["config"] = {{"attention", "sdpa_cudnn"}, {"profile", "pytorch"}};
  CHECK(err(req)["field"] == "config.attention");
  CHECK(err(req)["message"].get<std::string>().find("measured for the hf profile, not pytorch") !=
        std::string::npos);
  req["config"] = {{"attention", "sdpa_cudnn"}, {"profile", "hf"}, {"dtype", "fp32"}};
  CHECK(err(req)["message"].get<std::string>().find("memory-efficient kernel") !=
        std::string::npos);
  req["config"] = {{"attention", "sdpa_cudnn"}, {"profile", "hf"}};
  CHECK(actmem::evaluate_json(req)["ok"] == true);
  const json mqa = {
      {"model_type", "falcon"},   {"hidden_size", 256},  {"num_hidden_layers", 2},
      {"num_attention_heads", 4}, {"multi_query", true}, {"new_decoder_architecture", false},
      {"parallel_attn", true},    {"bias", false},       {"vocab_size", 1024}};
  CHECK(err(json{{"model", mqa},
                 {"config", {{"attention", "sdpa_cudnn"}, {"profile", "hf"}}}})["message"]
            .get<std::string>()
            .find("math kernel") != std::string::npos);
  const json oss = {{"preset", "gpt-oss-20b"},
                    {"config", {{"attention", "sdpa_cudnn"}, {"profile", "hf"}}}};
  CHECK(err(oss)["message"].get<std::string>().rfind("config.attention: sdpa_cudnn takes no "
                                                     "attention sinks",
                                                     0) == 0);
}

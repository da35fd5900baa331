// Model families read from Hugging Face config.json against real transformers modules: each
// family's tiny configuration measured on the H200 (tests/reference/gpu/hf_layers.json,
// transformers 5.17, PyTorch 2.11, bf16, b = 2; docs/validation.md section 4.4). The engine's
// parameter count equals the model's and its `hf` inventory equals the bytes one decoder layer
// saved for backward (layer 1: layer 0 also holds the model-level RoPE cos/sin, counted once in
// the engine's input layer).
#include <map>

#include <set>

#include "hf_reference.hpp"

using namespace actmem::test;

TEST_CASE(
    "hf profile = real transformers layers (hf_layers.json): llama, qwen3, phi3, gemma2, gemma3 "
    "eager exact, SDPA 8 B above (cuDNN attention's 16 B RNG state vs flash's 24 B)",
    "[hf][families]") {
  const json ref = measured_layers();
  int checked = 0;
  for (const json& row : ref["results"]) {
    const std::string type = row["model_type"];
    if (type != "llama" && type != "qwen3" && type != "phi3" && type != "gemma2" &&
        type != "gemma3_text")
      continue;
    const std::string att = row["attn_implementation"];
    // Phi-3 under SDPA kept o_proj's input as a copy of the cuDNN attention output (+b·s·a·d·e),
    // where Llama's is a view of it: measured with cuDNN only, not modelled (validation.md 4.4).
    if (type == "phi3" && att != "eager") continue;
    INFO(type << " " << att << " s=" << row["s"]);
    const json r = run_row(row, att == "eager" ? "eager" : "flash");
    CHECK(u(r["model"]["params"]) == u(row["parameters"]));
    std::uint64_t layer = u(row["by_module"]["model.layers.1"]);
    // Gemma 3's layer 1 is its first full-attention layer: it also holds that rotary embedding's
    // cos and sin (2 x s x d bf16), which the engine counts once in the input layer.
    if (type == "gemma3_text") layer -= 2 * u(row["s"]) * u(row["config"]["head_dim"]) * 2;
    // PyTorch 2.11 on the H200 ran SDPA through cuDNN, whose RNG state is two 0-dim int64 tensors
    // (16 B) where the flash kernel keeps int64[3] (24 B): docs/validation.md section 4.4.
    CHECK(u(r["per_layer"]["activation_bytes"]) == (att == "eager" ? layer : layer + 8));
    ++checked;
  }
  CHECK(checked == 18);
}

TEST_CASE(
    "hf profile, whole model (hf_layers.json, every supported family in eager attention): the "
    "input layer, every decoder layer and the output layer equal all the bytes the model saved "
    "(the returned logits are held, not saved)",
    "[hf][families]") {
  int checked = 0;
  const json ref = measured_layers();
  for (const json& row : ref["results"]) {
    const std::string type = row["model_type"];
    if (!row.contains("tensors") || row["attn_implementation"] != "eager") continue;
    INFO(type << " s=" << row["s"] << " " << row["config"].dump());
    const json r = run_row(row, "eager");
    const json& a = r["activations"];
    std::uint64_t logits = 0;
    for (const json& t : r["output_layer"]["tensors"])
      if (t["name"] == "logits") logits = u(t["bytes"]);
    CHECK(u(a["input_layer_bytes"]) + u(a["layers_bytes"]) + u(a["output_layer_bytes"]) - logits ==
          u(row["saved_bytes"]));
    ++checked;
  }
  // llama, qwen3, qwen3_moe, deepseek_v3, deepseek_v2, gpt_oss, gemma2, gemma3_text,
  // llama4_text, phi3, phimoe and falcon's two architectures, at s = 64 and 128.
  CHECK(checked == 30);
}

TEST_CASE("qwen3: per-head q/k RMSNorm records and parameters (modeling_qwen3.py)",
          "[hf][families]") {
  // h = 256, 4 heads, 2 KV heads, head_dim 96 (not h/a = 64), b = 2, s = 64, bf16.
  const json model = {
      {"model_type", "qwen3"},  {"hidden_size", 256},       {"intermediate_size", 512},
      {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
      {"head_dim", 96},         {"vocab_size", 1024},       {"max_position_embeddings", 512}};
  const json r =
      run(json{{"model", model}, {"config", {{"micro_batch", 2}, {"seq", 64}, {"profile", "hf"}}}});
  std::uint64_t q_in = 0, k_in = 0, q_rstd = 0, k_normed = 0;
  for (const json& t : r["per_layer"]["all_tensors"]) {
    if (t["name"] == "attn.q_norm.in") q_in = u(t["bytes"]);
    if (t["name"] == "attn.k_norm.in") k_in = u(t["bytes"]);
    if (t["name"] == "attn.q_norm.rstd") q_rstd = u(t["bytes"]);
    if (t["name"] == "attn.k_norm.normed") k_normed = u(t["bytes"]);
  }
  // Measured (hf_layers.json, qwen3 eager s = 64): q_norm keeps [2, 64, 4, 96] fp32 = 196,608,
  // [2, 64, 4, 1] fp32 = 2,048; k_norm [2, 64, 2, 96] fp32 = 98,304 and bf16 = 49,152.
  CHECK(q_in == 196608);
  CHECK(q_rstd == 2048);
  CHECK(k_in == 98304);
  CHECK(k_normed == 49152);
  CHECK(r["model"]["qk_norm"] == true);
  // Qwen3RMSNorm(head_dim) twice per layer: 2 x 96 parameters more than the same model without.
  json plain = model;
  plain["qk_norm"] = false;
  const json p = run(json{{"model", plain}, {"config", {{"seq", 64}}}});
  CHECK(u(r["model"]["params"]) - u(p["model"]["params"]) == 2 * 2 * 96);
}

TEST_CASE(
    "Hub config.json files as published (tests/data/hf, vendored verbatim): supported families "
    "give "
    "the published parameter count exactly",
    "[hf][families][params]") {
  // Counts: keras-hub's presets (Qwen3, Gemma 3) and the checkpoints' safetensors index (Phi-3,
  // Gemma 2: 18,483,411,968 B bf16), as tests/data/hf/SOURCES.md cites them.
  const std::pair<const char*, std::uint64_t> cases[] = {
      {"qwen3-8b.config.json", 8190735360ULL},
      {"qwen3-30b-a3b.config.json", 30532122624ULL},
      {"phi-3-mini-4k-instruct.config.json", 3821079552ULL},
      {"gemma-2-9b-it.config.json", 9241705984ULL},
      {"gemma-3-1b-it.config.json", 999885952ULL},
      // Phi-3.5-MoE (sgl-project/ome's copy): 41,873,153,344 counted from the checkpoint's
      // tensors (presets/models/phi-3.5-moe.json cites it), lm_head's bias included.
      {"phi-3.5-moe-instruct.ome.config.json", 41873153344ULL},
      // DeepSeek-V2-Lite (maxtext's transcription): its safetensors index total_size / 2.
      {"deepseek-v2-lite.maxtext.config.json", 15706484224ULL}};
  for (const auto& [file, n] : cases) {
    INFO(file);
    const json r = run(json{{"model", hub_config(file)}, {"config", {{"seq", 4096}}}});
    CHECK(u(r["model"]["params"]) == n);
  }
  // Mamba-Codestral's and Nemotron-H 8B's configs are transcriptions (tests/data/hf/SOURCES.md);
  // Codestral's count is Mistral's published one, Nemotron-H 8B's the exact figure third-party
  // summaries quote (NVIDIA publishes "8B"), Nemotron-H 56B's is published only as "56B". As
  // text: the files hold Python's Infinity, which only the engine's own reader takes.
  const std::pair<const char*, std::uint64_t> text_cases[] = {
      {"mamba-codestral-7b-v0.1.mlstm-kernels.config.json", 7285403648ULL},
      {"nemotron-h-8b-base-8k.megatron-bridge.config.json", 8100852736ULL},
      {"nemotron-h-56b-base-8k.config.json", 56324350464ULL}};
  for (const auto& [file, n] : text_cases) {
    INFO(file);
    const json r = actmem::evaluate_json(
        json{{"model_text", source_file(std::string("tests/data/hf/") + file)}});
    REQUIRE(r["ok"] == true);
    CHECK(u(r["model"]["params"]) == n);
  }
}

TEST_CASE(
    "Configs as the Hub writes them: Python's NaN, Infinity and -Infinity parse where a value "
    "starts, a key read as a number refuses them by name",
    "[hf][json]") {
  // Nemotron-H's config.json (tests/data/hf) holds "time_step_limit": [0.0, Infinity]: it parses
  // (a key that does not change memory takes the token), not as malformed JSON.
  const auto nemotron = actmem::parse_json_text(
      source_file("tests/data/hf/nemotron-h-56b-base-8k.config.json"), "model");
  REQUIRE(nemotron.ok());
  CHECK(nemotron.value()["time_step_limit"][1] == "Infinity");
  const auto j = actmem::parse_json_text(
      R"({"a": [NaN, -Infinity, "Infinity", "x NaN"], "b":Infinity})", "model");
  REQUIRE(j.ok());
  CHECK(j.value()["a"] == json::array({"NaN", "-Infinity", "Infinity", "x NaN"}));
  CHECK(j.value()["b"] == "Infinity");
  // Only whole tokens where a value starts: InfinityX and a key named NaN stay malformed / as is.
  CHECK_FALSE(actmem::parse_json_text(R"({"a": InfinityX})", "model").ok());
  CHECK(actmem::parse_json_text(R"({"NaN": 1})", "model").ok());
  // A syntax error after a rewritten token is reported at its byte in the text as given: the
  // trailing comma's '}' is byte 24 of {"a": NaN, "b": NaN, }, not 28.
  const auto bad = actmem::parse_json_text(R"({"a": NaN, "b": NaN, })", "model");
  REQUIRE_FALSE(bad.ok());
  const auto plain = actmem::parse_json_text(R"({"a": 0.0, "b": 0.0, })", "model");
  REQUIRE_FALSE(plain.ok());
  CHECK(bad.error().message == plain.error().message);
  CHECK(actmem::evaluate_json(
            json::parse(R"({"model": {"hidden_size": "Infinity"}})"))["error"]["message"] ==
        "model.hidden_size: must be a positive integer, got Infinity (not a finite number)");
}

TEST_CASE("model_text: a config.json as text, read as a --model file is (the page's model box)",
          "[hf][json]") {
  auto err = [](const json& req) { return actmem::evaluate_json(req)["error"]; };
  // The same key twice: JSON.parse in the page would have kept the last one silently.
  CHECK(err({{"model_text", R"({"hidden_size": 64, "hidden_size": 128})"}})["field"] ==
        "model.hidden_size");
  CHECK(err({{"model_text", "{"}})["message"] ==
        "model: malformed JSON near byte 2 (comments, single quotes and trailing commas are not "
        "JSON)");
  CHECK(err({{"preset", "gpt2"}, {"model_text", "{}"}})["message"] ==
        "model: give one of preset, model and model_text");
  CHECK(err({{"model_text", 5}})["field"] == "model_text");
  const json ok =
      run({{"model_text", R"({"model_type": "qwen3", "hidden_size": 256, "num_attention_heads": 4,
           "num_hidden_layers": 2, "intermediate_size": 512, "vocab_size": 1024,
           "head_dim": 96, "num_key_value_heads": 2, "rope_scaling": null})"},
           {"config", {{"seq", 64}}}});
  // transformers counted 1,902,208 for this configuration (hf_layers.json, qwen3 rows).
  CHECK(u(ok["model"]["params"]) == 1902208);
}

TEST_CASE(
    "falcon (hf_layers.json): parameters exact, the hf inventory equals FalconDecoderLayer's "
    "saved bytes in eager for the new architecture (two norms, GQA) and the old one (one norm, "
    "multi-query), old-architecture SDPA equals sdpa_math (PyTorch's math fallback)",
    "[hf][families][falcon]") {
  const json ref = measured_layers();
  int checked = 0;
  for (const json& row : ref["results"]) {
    if (row["model_type"] != "falcon") continue;
    const bool new_arch = row["config"]["new_decoder_architecture"] == true;
    const std::string att = row["attn_implementation"];
    INFO("new_decoder_architecture=" << new_arch << " " << att << " s=" << row["s"]);
    // SDPA in transformers' FalconAttention passes a materialized causal mask: with the old
    // architecture's single K/V head and no enable_gqa, PyTorch 2.11 ran the math kernel (fp32
    // q, k, probabilities, v at every head: measured); with the new one, cuDNN attention, which
    // keeps the (b, 1, s, s) mask and a 16 B RNG state (validation.md 4.4, not modelled).
    const std::string engine_att = att == "eager" ? "eager" : new_arch ? "flash" : "sdpa_math";
    const json r = run_row(row, engine_att);
    CHECK(u(r["model"]["params"]) == u(row["parameters"]));
    CHECK(r["model"]["block_layout"] == (new_arch ? "parallel_two_norms" : "parallel"));
    const std::uint64_t b = u(row["b"]), s = u(row["s"]);
    const std::uint64_t engine = u(r["per_layer"]["activation_bytes"]);
    if (att == "sdpa" && new_arch)
      CHECK(engine + b * s * s * 2 - 8 == saved_under(row, "transformer.h.1."));
    else
      CHECK(engine == saved_under(row, "transformer.h.1."));
    ++checked;
  }
  CHECK(checked == 8);
}

TEST_CASE(
    "falcon layouts: the parallel block's shared tensors are counted once in every profile "
    "(Korthikanti et al. 2022 Sec. 4.1's 2sbh per stored b x s x h input)",
    "[falcon][profiles]") {
  // The same layer three ways: sequential, parallel over one norm, parallel over two norms.
  // h = 256, 4 heads, b = 2, s = 64, bf16: one b x s x h tensor is 65,536 B.
  json base = {{"hidden_size", 256},        {"num_attention_heads", 4}, {"num_key_value_heads", 4},
               {"intermediate_size", 1024}, {"num_hidden_layers", 2},   {"vocab_size", 1024},
               {"norm_type", "layernorm"},  {"ffn_type", "gelu"}};
  const std::uint64_t bsh = 2 * 64 * 256 * 2;
  for (const char* profile : {"megatron", "textbook", "pytorch", "hf"}) {
    INFO(profile);
    auto layer = [&](const char* block) {
      json m = base;
      m["block_layout"] = block;
      const json r = run(
          json{{"model", m}, {"config", {{"micro_batch", 2}, {"seq", 64}, {"profile", profile}}}});
      return u(r["per_layer"]["activation_bytes"]);
    };
    const std::uint64_t seq = layer("sequential");
    // One norm: no ln2 (its b x s x h input, and LayerNorm's fp32 mean and rstd, b x s x 4 B
    // each, in the PyTorch profiles) and the MLP reads attn.qkv_in's tensor.
    const bool torch = std::string(profile) == "pytorch" || std::string(profile) == "hf";
    const std::uint64_t stats = torch ? 2 * (2 * 64 * 4) : 0;
    CHECK(seq - layer("parallel") == 2 * bsh + stats);
    // Two norms over the same input: only ln2's input is shared.
    CHECK(seq - layer("parallel_two_norms") == bsh);
  }
  // Backward working set (inventory/grads.cpp): both branches start from dY, so the residual
  // gradient dX (MLP branch folded in) is its own b x s x h buffer through the attention
  // backward. At s = 1024 the eager attention steps (dY, the s x s score gradient, two b x s x h
  // buffers) are the largest, so the step maximum grows by exactly b x s x h.
  auto grads = [&](const char* block) {
    json m = base;
    m["block_layout"] = block;
    const json t =
        run(json{{"command", "timeline"},
                 {"model", m},
                 {"config", {{"micro_batch", 1}, {"seq", 1024}, {"profile", "pytorch"}}}});
    for (const json& x : t["stages"][0]["transients"])
      if (x["name"] == "bwd.layer_grads") return u(x["bytes"]);
    FAIL("no bwd.layer_grads");
    return std::uint64_t{0};
  };
  const std::uint64_t seq_grads = grads("sequential");
  CHECK(grads("parallel") - seq_grads == 1024 * 256 * 2);
  CHECK(grads("parallel_two_norms") - seq_grads == 1024 * 256 * 2);
  // Parameters: one norm fewer per layer (weight and bias, 2h), in each of the 2 layers.
  json one = base, two = base;
  one["block_layout"] = "parallel";
  two["block_layout"] = "parallel_two_norms";
  CHECK(u(run(json{{"model", two}})["model"]["params"]) -
            u(run(json{{"model", one}})["model"]["params"]) ==
        2 * 2 * 256);
}

TEST_CASE(
    "Falcon-7B config.json (both vendored revisions): 6,921,720,704 logical parameters, the "
    "checkpoint index's 7,217,189,760 also counts lm_head.weight, the tied embedding's copy",
    "[hf][families][falcon][params]") {
  for (const char* file :
       {"falcon-7b-instruct.config.json", "falcon-7b-instruct-refinedweb.config.json"}) {
    INFO(file);
    const json r = run(json{{"model", hub_config(file)}, {"config", {{"seq", 2048}}}});
    CHECK(u(r["model"]["params"]) == 6921720704ULL);
    // pytorch_model.bin.index.json: total_size 14,434,379,520 B of bf16 (SOURCES.md).
    CHECK(u(r["model"]["params"]) + 65024ULL * 4544 == 14434379520ULL / 2);
    CHECK(r["model"]["num_key_value_heads"] == 1);
    CHECK(r["model"]["block_layout"] == "parallel");
  }
  const json p = run_preset("falcon-7b", json{{"seq", 2048}});
  CHECK(u(p["model"]["params"]) == 6921720704ULL);
  CHECK(u(p["model"]["published_params"]) == 6921720704ULL);
}

TEST_CASE("falcon keys that change memory in ways not modelled are refused by name",
          "[falcon][errors]") {
  const json base = {{"model_type", "falcon"},
                     {"hidden_size", 256},
                     {"num_attention_heads", 4},
                     {"num_hidden_layers", 2},
                     {"vocab_size", 1024}};
  const std::pair<json, const char*> cases[] = {
      {{{"alibi", true}}, "model.alibi"},
      {{{"hidden_dropout", 0.1}}, "model.hidden_dropout"},
      {{{"attention_dropout", 0.1}}, "model.attention_dropout"},
      {{{"activation", "relu"}}, "model.activation"},
      {{{"apply_residual_connection_post_layernorm", true}},
       "model.apply_residual_connection_post_layernorm"},
      {{{"new_decoder_architecture", true}, {"parallel_attn", false}}, "model.parallel_attn"},
      {{{"num_ln_in_parallel_attn", 2}}, "model.num_ln_in_parallel_attn"},
      {{{"num_kv_heads", 2}}, "model.num_kv_heads"},
      {{{"n_head", 8}}, "model.n_head"},
      {{{"new_decoder_architecture", true}, {"num_kv_heads", 3}}, "model.num_kv_heads"}};
  for (const auto& [extra, field] : cases) {
    json m = base;
    for (auto it = extra.begin(); it != extra.end(); ++it) m[it.key()] = it.value();
    INFO(m.dump());
    const json r = actmem::evaluate_json(json{{"model", m}});
    CHECK(r["error"]["field"] == field);
  }
  // The old architecture's names are read as FalconConfig reads them (attribute_map).
  json old = {{"model_type", "RefinedWebModel"},
              {"hidden_size", 256},
              {"n_head", 4},
              {"n_layer", 2},
              {"vocab_size", 1024}};
  const json r = run(json{{"model", old}});
  CHECK(r["model"]["layers"] == 2);
  CHECK(r["model"]["num_attention_heads"] == 4);
}

namespace {

std::uint64_t kind_bytes(const json& r, const char* name) {
  for (const json& k : r["model"]["layer_kinds"])
    if (k["name"] == name) return u(k["full_bytes"]);
  FAIL("no layer kind " << name);
  return 0;
}

}  // namespace

TEST_CASE(
    "deepseek_v2, deepseek_v3, qwen3_moe (hf_layers.json): MLA and transformers' grouped-experts "
    "blocks equal the real layers to the byte in eager attention, SDPA's recorded difference",
    "[hf][families][deepseek][moe]") {
  const json ref = measured_layers();
  int checked = 0;
  for (const json& row : ref["results"]) {
    const std::string type = row["model_type"];
    if (type != "deepseek_v2" && type != "deepseek_v3" && type != "qwen3_moe") continue;
    const bool eager = row["attn_implementation"] == "eager";
    INFO(type << " " << row["attn_implementation"] << " s=" << row["s"]);
    const json r = run_row(row, eager ? "eager" : "flash");
    const json& c = row["config"];
    const std::uint64_t b = u(row["b"]), s = u(row["s"]);
    const bool deepseek = type != "qwen3_moe";
    // DeepSeek-V3's e_score_correction_bias is a parameter of the checkpoint (its published
    // 671,026,419,200 counts it) and a buffer in transformers: E per sparse layer (2 here).
    const std::uint64_t bias = type == "deepseek_v3" ? 2 * u(c["n_routed_experts"]) : 0;
    CHECK(u(r["model"]["params"]) == u(row["parameters"]) + bias);
    // Layer 0 also holds the model-level RoPE cos/sin (2 x s x rope width, bf16), which the
    // engine counts once in the input layer; for DeepSeek layer 0 is dense, for Qwen3-MoE
    // layers 0 and 2 are (mlp_only_layers [2]).
    const std::uint64_t rope = 2 * s * u(deepseek ? c["qk_rope_head_dim"] : c["head_dim"]) * 2;
    const std::uint64_t dense = saved_under(row, "model.layers.0.") - rope,
                        sparse = saved_under(row, "model.layers.1.");
    if (eager) {
      CHECK(kind_bytes(r, "dense") == dense);
      CHECK(kind_bytes(r, "moe") == sparse);
    } else if (deepseek) {
      // PyTorch 2.11 ran cuDNN attention: V was a view of kv_b_proj's output (b, s, a,
      // nope + v) and o_proj's input a copy of the attention output; cuDNN's RNG state is 16 B
      // against flash's 24 (validation.md 4.4, not modelled).
      const std::uint64_t a = u(c["num_attention_heads"]);
      const std::uint64_t extra = 2 * b * s * a * (u(c["qk_nope_head_dim"]) + u(c["v_head_dim"]));
      CHECK(kind_bytes(r, "dense") + extra - 8 == dense);
      CHECK(kind_bytes(r, "moe") + extra - 8 == sparse);
    } else {
      CHECK(kind_bytes(r, "dense") - 8 == u(row["by_module"]["model.layers.2"]));
      CHECK(kind_bytes(r, "moe") - 8 == sparse);
    }
    ++checked;
  }
  CHECK(checked == 12);
}

TEST_CASE(
    "DeepSeek-V3 config.json (vendored): 671,026,419,200 parameters and 11,610,068,224 in its "
    "MTP depth, counted apart, the FP8 quantization block is said, not ignored",
    "[hf][families][deepseek][params]") {
  const json r =
      run(json{{"model", hub_config("deepseek-v3.config.json")}, {"config", {{"seq", 4096}}}});
  // The checkpoint header's main-model elements (README_WEIGHTS.md: 671B main + 14B MTP).
  CHECK(u(r["model"]["params"]) == 671026419200ULL);
  // enorm, hnorm, shared_head.norm (3h), eh_proj (2h x h) and one sparse layer.
  CHECK(u(r["model"]["mtp_params"]) == 11610068224ULL);
  bool said = false;
  for (const json& w : r["warnings"])
    said = said || w.get<std::string>().rfind("model.quantization_config:", 0) == 0;
  CHECK(said);
  // MLA's inference cache: the 512-wide latent and the 64-wide RoPE key per token and layer
  // (DeepSeek-V2, Sec. 2.1.4): 2 B x 61 x 576 x 4096.
  CHECK(u(r["kv_cache"]["total_bytes"]) == 2ULL * 61 * 576 * 4096);
  const json p = run_preset("deepseek-v3", json{{"seq", 4096}});
  CHECK(u(p["model"]["params"]) == 671026419200ULL);
  CHECK(u(p["model"]["published_params"]) == 671026419200ULL);
}

TEST_CASE(
    "MLA records in every profile: the latents' norm and up-projection inputs, V at v_head_dim",
    "[deepseek][profiles]") {
  // h = 256, 4 heads, q latent 96, kv latent 64, nope 32, rope 16, v 40; b = 2, s = 64, bf16.
  const json model = actmem::test::mla_model(2);
  for (const char* profile : {"megatron", "textbook", "pytorch", "hf"}) {
    INFO(profile);
    const json r = run(json{{"model", model},
                            {"config", {{"micro_batch", 2}, {"seq", 64}, {"profile", profile}}}});
    std::map<std::string, std::uint64_t> got;
    for (const json& t : r["per_layer"]["all_tensors"]) got[t["name"]] = u(t["bytes"]);
    CHECK(got["attn.q_up_in"] == 2 * 64 * 96 * 2);
    CHECK(got["attn.kv_up_in"] == 2 * 64 * 64 * 2);
    CHECK(got["attn.v"] == 2 * 4 * 64 * 40 * 2);
    CHECK(got["attn.proj_in"] == 2 * 64 * 4 * 40 * 2);
    CHECK(got["attn.q"] == 2 * 4 * 64 * (32 + 16) * 2);
  }
  // Parameters (DeepseekV2Attention): q_a 256x96, its norm 96, q_b 96x(4x48), kv_a 256x(64+16),
  // its norm 64, kv_b 64x(4x(32+40)), o 160x256; two norms; SwiGLU 3x256x512.
  const std::uint64_t layer =
      256 * 96 + 96 + 96 * 192 + 256 * 80 + 64 + 64 * 288 + 160 * 256 + 2 * 256 + 3 * 256 * 512;
  CHECK(u(run(json{{"model", model}})["model"]["params"]) == 2 * layer + 2 * 1024 * 256 + 256);
}

TEST_CASE(
    "Training with MTP (config.mtp, DeepSeek-V3 Sec. 2.2): the last stage keeps each depth's "
    "embedding, projection input, one sparse layer and its own output layer, it holds the "
    "depth's parameters",
    "[deepseek][mtp]") {
  const json cfg = {{"seq", 1024}, {"micro_batch", 1}};
  json with = cfg;
  with["mtp"] = true;
  const json r0 = run_preset("deepseek-v3", cfg), r1 = run_preset("deepseek-v3", with);
  const std::uint64_t out0 = sum_tensors(r0["output_layer"]["tensors"]);
  const std::uint64_t bsh = 1024ULL * 7168 * 2;  // bf16
  // enorm's input (b·s·h) and eh_proj's input (b·s·2h), then the sparse layer and the output
  // layer's records again.
  CHECK(sum_tensors(r1["output_layer"]["tensors"]) ==
        out0 + 3 * bsh + kind_bytes(r0, "moe") + out0);
  CHECK(r1["output_layer"]["tensors"].back()["name"].get<std::string>().rfind("mtp1.", 0) == 0);
  CHECK(u(r1["stages"][0]["static"]["params"]) - u(r0["stages"][0]["static"]["params"]) ==
        11610068224ULL);
  CHECK(r1["config"]["mtp"] == true);
  // A model without MTP depths refuses the switch.
  const json bad =
      actmem::evaluate_json(json{{"preset", "llama-2-7b"}, {"config", {{"mtp", true}}}});
  CHECK(bad["error"]["field"] == "config.mtp");
}

TEST_CASE(
    "Hostile run, round 7 (falcon, deepseek, mtp, moe_imbalance): wrapped widths, keys the family "
    "does not read and out-of-range values are refused by the key given",
    "[hf][deepseek][falcon][errors]") {
  const json ds = {
      {"model_type", "deepseek_v3"},  {"hidden_size", 512},     {"intermediate_size", 1024},
      {"moe_intermediate_size", 128}, {"num_hidden_layers", 6}, {"num_attention_heads", 8},
      {"vocab_size", 4096},           {"q_lora_rank", 256},     {"kv_lora_rank", 128},
      {"qk_nope_head_dim", 32},       {"qk_rope_head_dim", 16}, {"v_head_dim", 32},
      {"n_routed_experts", 16},       {"n_shared_experts", 1},  {"num_experts_per_tok", 4},
      {"first_k_dense_replace", 1},   {"n_group", 4},           {"topk_group", 2},
      {"num_nextn_predict_layers", 1}};
  const json fa = {{"model_type", "falcon"},
                   {"hidden_size", 256},
                   {"num_hidden_layers", 2},
                   {"num_attention_heads", 4},
                   {"vocab_size", 128}};
  struct Case {
    json base;
    const char* key;
    json value;
    const char* field;
  };
  const Case cases[] = {// nope + rope wrapped to 32 and was answered with exit 0.
                        {ds, "qk_nope_head_dim", 18446744073709551584ULL, "model.qk_nope_head_dim"},
                        {ds, "qk_rope_head_dim", 1099511627776ULL, "model.qk_nope_head_dim"},
                        {ds, "kv_lora_rank", 4611686018427387904ULL, "model.kv_lora_rank"},
                        {ds, "n_routed_experts", 4611686018427387904ULL, "model.n_routed_experts"},
                        {ds, "n_shared_experts", 1099511627776ULL, "model.n_shared_experts"},
                        {ds, "num_experts_per_tok", 10, "model.num_experts_per_tok"},
                        {fa, "ffn_hidden_size", 4611686018427387904ULL, "model.ffn_hidden_size"},
                        {fa, "n_head_kv", 8, "model.n_head_kv"},
                        {fa, "intermediate_size", 1024, "model.intermediate_size"},
                        {fa, "num_key_value_heads", 2, "model.num_key_value_heads"},
                        {fa, "block_layout", "parallel", "model.block_layout"}};
  for (const Case& c : cases) {
    json m = c.base;
    m[c.key] = c.value;
    INFO(c.key << " = " << c.value.dump());
    CHECK(actmem::evaluate_json(json{{"model", m}})["error"]["field"] == c.field);
  }
  json v2 = ds;
  v2["model_type"] = "deepseek_v2";
  v2.erase("n_group");
  v2.erase("topk_group");
  CHECK(actmem::evaluate_json(json{{"model", v2}})["error"]["field"] ==
        "model.num_nextn_predict_layers");
  // The imbalance shows the digits that put it out of range.
  const json r =
      actmem::evaluate_json(json{{"preset", "mixtral-8x7b"},
                                 {"config", {{"ep", 4}, {"dp", 4}, {"moe_imbalance", 4.0000001}}}});
  CHECK(r["error"]["message"].get<std::string>().find("4.0000001 is outside") != std::string::npos);
}

TEST_CASE(
    "Multimodal wrappers (llama4, gemma3): text_config is read as the language model, a vision "
    "tower is refused by name, errors inside name model.text_config.KEY",
    "[hf][families][json]") {
  // aiconfigurator's trimmed copy of Llama-4-Scout-17B-16E-Instruct's config (SOURCES.md).
  json scout = hub_config("llama-4-scout-17b-16e-instruct.aiconfigurator.config.json");
  CHECK(actmem::evaluate_json(json{{"model", scout}})["error"]["field"] == "model.vision_config");
  scout.erase("vision_config");
  const json r = run(json{{"model", scout}, {"config", {{"seq", 4096}}}});
  // 48 MoE layers: attention 62,914,560 (40 query and 8 KV heads of 128), two norms, the router
  // 16 x 5,120, 16 experts of gate_up 5,120 x 16,384 and down 8,192 x 5,120, one shared expert
  // 3 x 5,120 x 8,192; the untied 202,048 x 5,120 embedding and head; the final norm. No exact
  // published count was found (the card: 109B with the vision tower, 17B active).
  const std::uint64_t layer = 62914560ULL + 2 * 5120 + 16 * 5120 +
                              16 * (5120ULL * 16384 + 8192ULL * 5120) + 3 * 5120ULL * 8192;
  CHECK(u(r["model"]["params"]) == 48 * layer + 2 * 202048ULL * 5120 + 5120);
  CHECK(u(r["model"]["params"]) == 107769861120ULL);
  // Gemma 3's wrapper around the 1B text config gives the text model's count.
  json gemma = {{"model_type", "gemma3"}, {"text_config", hub_config("gemma-3-1b-it.config.json")}};
  CHECK(u(run(json{{"model", gemma}})["model"]["params"]) == 999885952ULL);
  auto field = [](const json& m) { return actmem::evaluate_json(json{{"model", m}})["error"]; };
  json bad = scout;
  bad["text_config"]["hidden_size"] = "wide";
  const json e = field(bad);
  CHECK(e["field"] == "model.text_config.hidden_size");
  CHECK(e["message"].get<std::string>().rfind("model.text_config.hidden_size: ", 0) == 0);
  bad = scout;
  bad["text_config"]["model_type"] = "llama";
  CHECK(field(bad)["field"] == "model.text_config.model_type");
  bad = scout;
  bad.erase("text_config");
  CHECK(field(bad)["field"] == "model.text_config");
  bad = scout;
  bad["tie_word_embeddings"] = true;
  bad["text_config"]["tie_word_embeddings"] = false;
  CHECK(field(bad)["field"] == "model.tie_word_embeddings");
}

TEST_CASE(
    "Llama 4 Scout: the text-model preset plus the vision tower by its config's shapes equal the "
    "checkpoint's published total (safetensors index total_size / 2) exactly",
    "[hf][families][params]") {
  // presets/models/llama-4-scout.json cites 108,641,793,536: total_size 217,283,587,072 B, bf16.
  const json r = run_preset("llama-4-scout", json::object());
  CHECK(u(r["model"]["params"]) == 107769861120ULL);
  // The vision tower and projector the engine does not model, from the vendored vision_config
  // and transformers modeling_llama4.py @ 000c33fd: Llama4UnfoldConvolution (a bias-free linear
  // of channels x patch^2), the class and positional embeddings ((image/patch)^2 + 1 rows), two
  // LayerNorms, 34 encoder layers (q, k, v, o and fc1, fc2 with biases, two LayerNorms), the
  // pixel-shuffle MLP (fc1 intermediate -> projector_input, fc2 projector_output^2, no biases)
  // and Llama4MultiModalProjector (vision_output_dim -> text hidden, no bias).
  const json v =
      hub_config("llama-4-scout-17b-16e-instruct.aiconfigurator.config.json")["vision_config"];
  const std::uint64_t h = u(v["hidden_size"]), f = u(v["intermediate_size"]);
  const std::uint64_t patch = u(v["patch_size"]), side = u(v["image_size"]) / patch;
  const std::uint64_t layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h;
  const std::uint64_t vision = u(v["num_channels"]) * patch * patch * h + h +
                               (side * side + 1) * h + 2 * 2 * h +
                               u(v["num_hidden_layers"]) * layer + f * u(v["projector_input_dim"]) +
                               u(v["projector_output_dim"]) * u(v["projector_output_dim"]) +
                               u(v["vision_output_dim"]) * 5120;
  CHECK(vision == 871932416ULL);
  CHECK(u(r["model"]["params"]) + vision == u(r["model"]["published_params"]));
  CHECK(u(r["model"]["published_params"]) == 217283587072ULL / 2);
}

TEST_CASE(
    "Hostile run, round 8 (gpt_oss, phimoe, llama4_text, wrappers): wrapper keys that change "
    "memory are refused, errors found after reading name text_config's keys, stacks are refused "
    "where the family has none, widths name the key given",
    "[hf][errors]") {
  json scout = hub_config("llama-4-scout-17b-16e-instruct.aiconfigurator.config.json");
  scout.erase("vision_config");
  auto err = [](const json& m) { return actmem::evaluate_json(json{{"model", m}})["error"]; };
  const std::pair<const char*, json> wrapper_keys[] = {
      {"quantization_config", {{"quant_method", "fbgemm_fp8"}}},
      {"attn_implementation", "sdpa"},
      {"output_router_logits", true}};
  for (const auto& [key, value] : wrapper_keys) {
    json m = scout;
    m[key] = value;
    INFO(key);
    CHECK(err(m)["field"] == std::string("model.") + key);
  }
  json tie = scout;
  tie["tie_word_embeddings"] = "yes";
  CHECK(err(tie)["field"] == "model.tie_word_embeddings");
  // validate() runs after reading: its errors are nested too, message included.
  json kv = scout;
  kv["text_config"]["num_key_value_heads"] = 3;
  const json e = err(kv);
  CHECK(e["field"] == "model.text_config.num_key_value_heads");
  CHECK(e["message"].get<std::string>().rfind("model.text_config.num_key_value_heads: 3 ", 0) == 0);
  // Both paths of a conflict are nested.
  json g = {{"model_type", "gemma3"}, {"text_config", hub_config("gemma-3-1b-it.config.json")}};
  g["text_config"]["hidden_act"] = "silu";
  CHECK(err(g)["message"].get<std::string>().find("conflicts with model.text_config.hidden_act") !=
        std::string::npos);
  // A stack of kinds on a family with one layer kind would build layers it does not have.
  json go = {{"model_type", "gpt_oss"},
             {"hidden_size", 256},
             {"intermediate_size", 256},
             {"num_hidden_layers", 2},
             {"num_attention_heads", 4},
             {"num_key_value_heads", 2},
             {"num_local_experts", 8},
             {"num_experts_per_tok", 2},
             {"vocab_size", 1024},
             {"layer_kinds", {{"k", {{"attn_sinks", false}}}}},
             {"layer_stack", {{{"kind", "k"}, {"repeat", 2}}}}};
  CHECK(err(go)["field"] == "model.layer_kinds");
  json pm = {{"model_type", "phimoe"}, {"hidden_size", 256},       {"intermediate_size", 256},
             {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
             {"num_local_experts", 8}, {"vocab_size", 1024},       {"gemma_norm", true}};
  CHECK(err(pm)["field"] == "model.gemma_norm");
  json l4 = scout["text_config"];
  l4["intermediate_size_mlp"] = 4611686018427387904ULL;
  const json w = err(l4);
  CHECK(w["field"] == "model.intermediate_size_mlp");
  CHECK(w["message"].get<std::string>().find("4611686018427387904") != std::string::npos);
}

TEST_CASE(
    "An unknown model_type with a decoder's keys names the closest supported family and how to "
    "force it, one with state-space layers says they are not modelled",
    "[hf][errors]") {
  auto message = [](const char* type) {
    const json m = {{"model_type", type},     {"hidden_size", 256}, {"num_attention_heads", 4},
                    {"num_hidden_layers", 2}, {"vocab_size", 1024}, {"intermediate_size", 512}};
    const json e = actmem::evaluate_json(json{{"model", m}})["error"];
    CHECK(e["field"] == "model.model_type");
    return e["message"].get<std::string>();
  };
  CHECK(message("qwen3_next")
            .find("the closest supported family is qwen3_moe (set "
                  "\"model_type\": \"qwen3_moe\"") != std::string::npos);
  CHECK(message("mistral3").find("closest supported family is mistral ") != std::string::npos);
  CHECK(message("olmo2").find("closest supported family is llama ") != std::string::npos);
  // A state-space family not read (Jamba's Mamba-1 layers): named, no decoder family offered.
  json jamba = {{"model_type", "jamba"},       {"hidden_size", 256}, {"num_attention_heads", 4},
                {"num_hidden_layers", 2},      {"vocab_size", 1024}, {"mamba_d_state", 16},
                {"layers_block_type", "mamba"}};
  const json n = actmem::evaluate_json(json{{"model", jamba}});
  CHECK(n["error"]["message"].get<std::string>().find(
            "its state-space layers are not modelled (the state-space families read are mamba2 "
            "and nemotron_h)") != std::string::npos);
  // Without a decoder's keys (T5), the plain message.
  CHECK(actmem::evaluate_json(
            json{{"model", {{"model_type", "t5"}, {"d_model", 512}}}})["error"]["message"]
            .get<std::string>()
            .find("closest") == std::string::npos);
}

TEST_CASE(
    "deepseek_v2 with topk_method group_limited_greedy (DeepSeek-V2 236B): the hf router also "
    "keeps each group's argmax, the kept groups' indices and the expert mask (derived from "
    "DeepseekV2Moe and derivatives.yaml, the measured rows route greedy)",
    "[hf][families][deepseek]") {
  json m = {{"model_type", "deepseek_v2"},  {"hidden_size", 256},     {"intermediate_size", 512},
            {"moe_intermediate_size", 128}, {"num_hidden_layers", 3}, {"first_k_dense_replace", 1},
            {"n_routed_experts", 8},        {"n_shared_experts", 2},  {"num_experts_per_tok", 2},
            {"q_lora_rank", nullptr},       {"kv_lora_rank", 64},     {"qk_nope_head_dim", 32},
            {"qk_rope_head_dim", 16},       {"v_head_dim", 48},       {"num_attention_heads", 4},
            {"num_key_value_heads", 4},     {"vocab_size", 1024}};
  const json cfg = {{"micro_batch", 2}, {"seq", 64}, {"profile", "hf"}, {"attention", "eager"}};
  auto moe_bytes = [](const json& r) {
    for (const json& k : r["model"]["layer_kinds"])
      if (u(k["num_local_experts"]) > 0) return u(k["full_bytes"]);
    FAIL("no MoE kind");
    return std::uint64_t{0};
  };
  const json greedy = run(json{{"model", m}, {"config", cfg}});
  m["topk_method"] = "group_limited_greedy";
  m["n_group"] = 4;
  m["topk_group"] = 2;
  const json grouped = run(json{{"model", m}, {"config", cfg}});
  const std::uint64_t tokens = 2 * 64;
  CHECK(moe_bytes(grouped) - moe_bytes(greedy) == tokens * (8 * 4 + 8 * 2 + 8));
  CHECK(u(grouped["model"]["params"]) == u(greedy["model"]["params"]));  // no score bias in V2
  m["topk_method"] = "noaux_tc";
  const json e = actmem::evaluate_json(json{{"model", m}})["error"];
  CHECK(e["message"] ==
        "model.topk_method: \"noaux_tc\" is not modelled for deepseek_v2; allowed: greedy, "
        "group_limited_greedy");
}

TEST_CASE(
    "DeepSeek's hf router in fp32: x.type(float32) and weight.type(float32) return themselves, so "
    "the router keeps the tokens the shared experts keep and no fp32 weight copy (PyTorch: "
    "Tensor.type returns self for its own type)",
    "[hf][families][deepseek]") {
  const json ref = measured_layers();
  for (const json& row : ref["results"]) {
    if (row["model_type"] != "deepseek_v3" || row["attn_implementation"] != "eager" ||
        row["s"] != 64)
      continue;
    auto names = [&](const char* dtype) {
      json c = {{"micro_batch", 2}, {"seq", 64}, {"profile", "hf"}, {"dtype", dtype}};
      const json r = run(json{{"model", hf_model(row)}, {"config", c}});
      std::set<std::string> out;
      for (const json& k : r["model"]["layer_kinds"])
        if (u(k["num_local_experts"]) > 0)
          for (const json& t : k["tensors"]) out.insert(t["name"].get<std::string>());
      return out;
    };
    const auto bf16 = names("bf16"), fp32 = names("fp32");
    CHECK(bf16.count("moe.router_weight_fp32") == 1);
    CHECK(bf16.count("moe.router_in_fp32") == 1);
    CHECK(fp32.count("moe.router_weight_fp32") == 0);
    CHECK(fp32.count("moe.router_in_fp32") == 0);
    CHECK(fp32.count("moe.router_in") == 1);
  }
}

// Issue 38, held-out finding 3: first_k_dense_replace at or past num_hidden_layers was refused
// ("leaves no sparse layer"), yet transformers builds the model: DeepseekV3DecoderLayer (and
// V2's) makes a sparse MLP only where layer_idx >= first_k_dense_replace, so every layer is the
// dense DeepseekV3MLP of intermediate_size and the expert keys describe no layer. The answer is
// the dense model's: the same config with n_routed_experts null, byte for byte.
TEST_CASE(
    "DeepSeek-V2/V3 with first_k_dense_replace >= num_hidden_layers: every layer dense, as "
    "transformers builds it (modeling_deepseek_v3.py DeepseekV3DecoderLayer)",
    "[hf][families][deepseek]") {
  for (const char* file : {"deepseek-v3.config.json", "deepseek-v2-lite.maxtext.config.json"}) {
    INFO(file);
    json all_dense = hub_config(file);
    all_dense["num_hidden_layers"] = 4;
    all_dense["num_nextn_predict_layers"] = 0;
    all_dense.erase("quantization_config");
    for (const std::uint64_t k : {4, 5, 1000}) {
      all_dense["first_k_dense_replace"] = k;
      json dense = all_dense;
      dense["n_routed_experts"] = nullptr;
      for (const char* key : {"num_experts_per_tok", "n_shared_experts", "first_k_dense_replace"})
        dense.erase(key);
      const json cfg = {{"seq", 256}, {"tp", 2}};
      const json a = run(json{{"model", all_dense}, {"config", cfg}});
      const json b = run(json{{"model", dense}, {"config", cfg}});
      REQUIRE(a["ok"] == true);
      CHECK(u(a["model"]["num_local_experts"]) == 0);
      CHECK(a["peak_bytes"] == b["peak_bytes"]);
      CHECK(a["total_bytes"] == b["total_bytes"]);
      CHECK(a["model"]["params"] == b["model"]["params"]);
      CHECK(a["per_layer"] == b["per_layer"]);
    }
  }
}

// Issue 38, the same class in the other readers: values transformers writes when it saves a
// config. FalconConfig sets num_kv_heads = num_attention_heads when none was given (and
// FalconAttention uses one KV head under multi_query without new_decoder_architecture);
// DeepseekV2Config and DeepseekV3Config set head_dim = qk_rope_head_dim. Both are read as the
// configs without them, byte for byte; another head_dim is still refused.
TEST_CASE(
    "Configs as transformers saves them: Falcon-7B's num_kv_heads = num_attention_heads, "
    "DeepSeek's head_dim = qk_rope_head_dim (FalconConfig, DeepseekV3Config)",
    "[hf][families][falcon][deepseek]") {
  const json cfg = {{"seq", 256}};
  json falcon = hub_config("falcon-7b-instruct.config.json");
  json saved = falcon;
  saved["num_kv_heads"] = falcon["num_attention_heads"];
  const json a = run(json{{"model", saved}, {"config", cfg}});
  const json b = run(json{{"model", falcon}, {"config", cfg}});
  CHECK(a["peak_bytes"] == b["peak_bytes"]);
  CHECK(a["model"]["params"] == b["model"]["params"]);
  CHECK(u(a["model"]["num_key_value_heads"]) == 1);
  saved["num_kv_heads"] = 8;  // neither 1 nor what FalconConfig writes
  CHECK(actmem::evaluate_json(json{{"model", saved}, {"config", cfg}})["error"]["field"] ==
        "model.num_kv_heads");

  json deepseek = hub_config("deepseek-v3.config.json");
  deepseek.erase("quantization_config");
  deepseek["num_hidden_layers"] = 4;
  json with_head = deepseek;
  with_head["head_dim"] = deepseek["qk_rope_head_dim"];
  const json c = run(json{{"model", with_head}, {"config", cfg}});
  const json d = run(json{{"model", deepseek}, {"config", cfg}});
  CHECK(c["peak_bytes"] == d["peak_bytes"]);
  CHECK(c["per_layer"] == d["per_layer"]);
  with_head["head_dim"] = 128;
  CHECK(actmem::evaluate_json(json{{"model", with_head}, {"config", cfg}})["error"]["field"] ==
        "model.head_dim");
}

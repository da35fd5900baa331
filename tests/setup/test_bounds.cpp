// Bounds on hostile input (issue 12, docs/reliability.md "Bounds"): JSON text size and nesting are
// refused before any tree is built; a layer split cannot wrap its sum.
#include "helpers.hpp"

using namespace actmem::test;

TEST_CASE("JSON nested deeper than kMaxJsonDepth is refused before parsing, by field", "[bounds]") {
  const std::size_t n = actmem::kMaxJsonDepth;
  auto nested = [](std::size_t depth) {
    std::string s;
    for (std::size_t i = 0; i < depth; ++i) s += "{\"a\":";
    s += "1";
    s += std::string(depth, '}');
    return s;
  };
  CHECK(actmem::parse_json_text(nested(n), "model").ok());
  const auto deep = actmem::parse_json_text(nested(n + 1), "model");
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().message == "model: nests objects and arrays more than 64 levels deep");
  // Brackets inside strings do not count.
  CHECK(actmem::parse_json_text("{\"k\":\"" + std::string(1000, '[') + "\"}", "config").ok());
  // 100,000 levels through the request entry point: an error answer, not a crash.
  const json r = json::parse(actmem::evaluate(nested(100000)));
  CHECK(r["error"]["field"] == "request");
}

TEST_CASE("JSON text over kMaxJsonTextBytes is refused without parsing", "[bounds]") {
  const std::string big(actmem::kMaxJsonTextBytes + 1, ' ');
  const auto r = actmem::parse_json_text(big, "request");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "too_large");
}

TEST_CASE("layer_split: an entry past the model's layers is refused (the sum cannot wrap)",
          "[bounds]") {
  // 2^64 - 1 + 33 wraps to 32, Llama 3.1 8B's layer count.
  const json r = actmem::evaluate_json(
      {{"preset", "llama-3.1-8b"},
       {"config", {{"pp", 2}, {"layer_split", {18446744073709551615ull, 33}}}}});
  CHECK(r["error"]["field"] == "config.layer_split");
  CHECK(r["error"]["message"] ==
        "config.layer_split: has a stage of 18446744073709551615 layers, more than "
        "num_hidden_layers=32");
}

TEST_CASE("aliases of one setting conflict instead of last-one-wins (grad_accum, micro_batches)",
          "[bounds][silent]") {
  const json bad = actmem::evaluate_json(
      {{"preset", "gpt2"}, {"config", {{"grad_accum", 3}, {"micro_batches", 5}}}});
  CHECK(bad["error"]["field"] == "config.micro_batches");
  CHECK(bad["error"]["message"] ==
        "config.micro_batches: 5 conflicts with config.grad_accum: 3 (two names for the "
        "micro-batches per step); give one");
  // The same value under both names is not a conflict.
  const json same = actmem::evaluate_json(
      {{"preset", "gpt2"}, {"config", {{"grad_accum", 4}, {"micro_batches", 4}}}});
  CHECK(same["config"]["grad_accum"] == 4);
}

TEST_CASE("fixed buffers are bounded by kMaxBufferBytes and blamed on themselves", "[bounds]") {
  for (const char* k : {"cublas_workspace_bytes", "grad_bucket_bytes"}) {
    INFO(k);
    const json at =
        actmem::evaluate_json({{"preset", "gpt2"}, {"config", {{k, actmem::kMaxBufferBytes}}}});
    CHECK(at.value("ok", false));
    const json over =
        actmem::evaluate_json({{"preset", "gpt2"}, {"config", {{k, 18446744073709551615ull}}}});
    CHECK(over["error"]["field"] == std::string("config.") + k);
  }
}

TEST_CASE("keys of the other naming are refused, never ignored (n_layer in our schema)",
          "[bounds][silent]") {
  const json base = {{"hidden_size", 256},     {"num_attention_heads", 4},
                     {"num_hidden_layers", 2}, {"intermediate_size", 512},
                     {"vocab_size", 1000},     {"max_position_embeddings", 128}};
  for (const char* k : {"n_layer", "n_embd", "n_head", "n_positions", "n_inner", "resid_pdrop"}) {
    INFO(k);
    json m = base;
    m[k] = 2;
    const json r = actmem::evaluate_json({{"model", m}, {"config", {{"seq", 64}}}});
    CHECK(r["error"]["field"] == std::string("model.") + k);
  }
  // GPT-2 (GPT2Config reads n_embd; hidden_size is only its attribute_map alias, not a file key).
  const json gpt2 = {
      {"model_type", "gpt2"}, {"n_embd", 256}, {"n_head", 4}, {"n_layer", 2}, {"vocab_size", 1000}};
  CHECK(actmem::evaluate_json({{"model", gpt2}, {"config", {{"seq", 64}}}}).value("ok", false));
  for (const char* k : {"hidden_size", "num_hidden_layers", "intermediate_size", "hidden_act"}) {
    INFO(k);
    json m = gpt2;
    m[k] = k == std::string("hidden_act") ? json("gelu") : json(512);
    const json r = actmem::evaluate_json({{"model", m}, {"config", {{"seq", 64}}}});
    CHECK(r["error"]["field"] == std::string("model.") + k);
  }
  // One dropout rate covers embeddings and residuals: a different embd_pdrop is refused.
  json e = gpt2;
  e["embd_pdrop"] = 0.0;
  CHECK(actmem::evaluate_json({{"model", e}, {"config", {{"seq", 64}}}})["error"]["field"] ==
        "model.embd_pdrop");
  e["embd_pdrop"] = 0.1;  // GPT2Config's default, equal to resid_pdrop's
  CHECK(actmem::evaluate_json({{"model", e}, {"config", {{"seq", 64}}}}).value("ok", false));
}

TEST_CASE("a mixture-of-experts model_type without its expert count is refused, not dense",
          "[bounds][silent]") {
  const json base = {{"hidden_size", 256},       {"num_attention_heads", 4},
                     {"num_key_value_heads", 4}, {"num_hidden_layers", 2},
                     {"intermediate_size", 512}, {"vocab_size", 1000}};
  json mixtral = base;
  mixtral["model_type"] = "mixtral";
  CHECK(actmem::evaluate_json({{"model", mixtral}})["error"]["field"] == "model.num_local_experts");
  json qwen = base;
  qwen["model_type"] = "qwen2_moe";
  CHECK(actmem::evaluate_json({{"model", qwen}})["error"]["field"] == "model.num_experts");
}

TEST_CASE("fit says when an answer is its search's bound (kMaxFitMicroBatch), not a silent cap",
          "[bounds][silent][fit]") {
  // A one-layer h = 8 model under 1000 TiB: a million sequences fit, the search stops at 2^20.
  const json tiny = {{"hidden_size", 8},       {"num_attention_heads", 1},
                     {"num_hidden_layers", 1}, {"intermediate_size", 8},
                     {"vocab_size", 2},        {"max_position_embeddings", 8}};
  const json r = actmem::evaluate_json(
      {{"command", "fit"}, {"model", tiny}, {"config", {{"gpu_memory", "1000TiB"}}}});
  REQUIRE(r.value("ok", false));
  CHECK(r["max_micro_batch"] == actmem::kMaxFitMicroBatch);
  CHECK(r["micro_batch_at_limit"] == true);
  CHECK(r["micro_batch_limit"] == actmem::kMaxFitMicroBatch);
  CHECK(r["seq_at_limit"] == false);
  // GPT-2's learned positions bound the sequence search at 1024: said as such.
  const json g = actmem::evaluate_json(
      {{"command", "fit"}, {"preset", "gpt2"}, {"config", {{"gpu_memory", "1000TiB"}}}});
  CHECK(g["max_seq"] == 1024);
  CHECK(g["seq_at_limit"] == true);
  CHECK(g["seq_limit_is_positions"] == true);
  CHECK(g["micro_batch_at_limit"] == false);
}

TEST_CASE("JSON: a key given twice in one object is refused, naming its path", "[bounds]") {
  // nlohmann keeps the last of two equal keys; {"seq": 2048, "seq": 4} answered for s = 4.
  const json r = json::parse(
      actmem::evaluate(R"({"preset": "llama-3.1-8b", "config": {"seq": 2048, "seq": 4}})"));
  CHECK(r["error"]["code"] == "duplicate_key");
  CHECK(r["error"]["message"] == "config.seq: given twice in one object; allowed: each key once");
  const auto m = actmem::parse_json_text(R"({"stack": [1, {"a": 1, "a": 1}]})", "model");
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().field == "model.stack[1].a");
  // Equal keys in different objects are fine.
  CHECK(actmem::parse_json_text(R"({"a": {"b": 1}, "c": {"b": 1}})", "model").ok());
}

TEST_CASE("JSON: a NUL byte is an error where it stands, not the end of the text", "[bounds]") {
  // nlohmann's lexer reads NUL as end of input: the text after it was ignored.
  const std::string text = std::string(R"({"preset": "llama-3.1-8b"})") + '\0' + "{\"x\": 1}";
  const auto r = actmem::parse_json_text(text, "request");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "request: a NUL byte at byte 26 (JSON text holds none)");
}

TEST_CASE("JSON: more than kMaxJsonValues values are refused before a tree is built", "[bounds]") {
  // 16 MiB of "[{},{},...]" is 5.6 million values: a 1 GB tree before this bound. The scan stops
  // at the first value past the bound, so the work is the bound, not the text.
  auto list = [](std::size_t n) {
    std::string s = "[";
    for (std::size_t i = 0; i < n; ++i) s += i ? ",{}" : "{}";
    return s + "]";
  };
  // The outer array is one value, so kMaxJsonValues - 1 elements fit.
  CHECK(actmem::parse_json_text(list(actmem::kMaxJsonValues - 1), "model").ok());
  const auto r = actmem::parse_json_text(list(actmem::kMaxJsonValues), "model");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "model: holds more than the 262144 JSON values a request, model or config may have");
}

TEST_CASE("Request keys read by one command are refused on another (no silent answer)",
          "[bounds]") {
  auto err = [](const json& req) { return actmem::evaluate_json(req)["error"]; };
  const json base = {{"preset", "llama-3.1-8b"}};
  json r = base;
  r["command"] = "estimate";
  r["events"] = "none";
  CHECK(err(r)["message"] == "events: read only by the timeline command, not by estimate");
  r = base;
  r["command"] = "fit";
  r["sweep"] = {{"seqs", {1024}}};
  CHECK(err(r)["field"] == "sweep");
  r = base;
  r["command"] = "timeline";
  r["stages"] = "all";
  CHECK(err(r)["message"] == "stages: read only by the view command, not by timeline");
  r = base;
  r["command"] = "explain";
  r["summary"] = true;
  CHECK(err(r)["field"] == "summary");
  CHECK(err({{"command", "presets"}, {"config", {{"seq", 1}}}})["message"] ==
        "config: the presets command reads no other key");
  // The key on its own command is read.
  r = base;
  r["command"] = "timeline";
  r["events"] = "none";
  r["compact_events"] = true;
  CHECK(actmem::evaluate_json(r)["ok"] == true);
}

TEST_CASE("The request's gpu and its config's gpu must agree", "[bounds]") {
  const json r = actmem::evaluate_json(
      {{"preset", "llama-3.1-8b"}, {"gpu", "h100-80gb"}, {"config", {{"gpu", "a100-40gb"}}}});
  CHECK(r["error"]["message"] ==
        "gpu: 'h100-80gb' conflicts with config.gpu 'a100-40gb'; give one");
  CHECK(actmem::evaluate_json({{"preset", "llama-3.1-8b"},
                               {"gpu", "h100-80gb"},
                               {"config", {{"gpu", "h100-80gb"}}}})["ok"] == true);
}

TEST_CASE("sweep: micro-batches and sequences past fit's search bounds are refused", "[bounds]") {
  // 2^41 as a micro-batch overflowed every cell's products to -1 (hostile run).
  const json r = actmem::evaluate_json({{"command", "sweep"},
                                        {"preset", "llama-3.1-8b"},
                                        {"sweep", {{"micro_batches", {1, 2199023255552ull}}}}});
  CHECK(r["error"]["message"] ==
        "sweep.micro_batches[1]: 2199023255552 is more than the supported 1048576");
  const json s = actmem::evaluate_json(
      {{"command", "sweep"}, {"preset", "llama-3.1-8b"}, {"sweep", {{"seqs", {1073741825}}}}});
  CHECK(s["error"]["field"] == "sweep.seqs[0]");
}

TEST_CASE("custom_keep without the custom choice, interleaved with vpp = 1: errors, not ignored",
          "[bounds]") {
  auto err = [](const json& c) {
    return actmem::evaluate_json({{"preset", "llama-3.1-8b"}, {"config", c}})["error"];
  };
  CHECK(
      err({{"recompute", "full"}, {"custom_keep", {"attn.qkv_in"}}})["message"] ==
      "config.custom_keep: is read only with recompute \"custom\" or a layers: pattern holding X");
  CHECK(err({{"custom_keep", {"attn.qkv_in"}}})["field"] == "config.custom_keep");
  // Read where the policy has custom layers.
  CHECK(actmem::evaluate_json(
            {{"preset", "llama-3.1-8b"},
             {"config", {{"recompute", "layers:KX"}, {"custom_keep", {"attn.qkv_in"}}}}})["ok"] ==
        true);
  CHECK(err({{"pp", 2}, {"schedule", "interleaved"}})["message"] ==
        "config.schedule: interleaved needs vpp > 1 model chunks per pipeline rank (with vpp=1 it "
        "is 1f1b)");
}

TEST_CASE("JSON answers carry DEL and C1 controls escaped, never raw (terminal-safe)", "[bounds]") {
  // U+009B is a one-byte CSI: a model name holding it printed by `actmem --json` could drive the
  // terminal. Raw, it is legal JSON; escaped, it is the same value.
  const std::string req =
      R"({"model": {"metadata": {"name": "A\u009b31mB\u007f"}, "hidden_size": 64,
          "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128,
          "vocab_size": 100, "max_position_embeddings": 64}, "config": {"seq": 16}})";
  const std::string out = actmem::evaluate(req);
  CHECK(out.find("\xc2\x9b") == std::string::npos);
  CHECK(out.find('\x7f') == std::string::npos);
  CHECK(out.find(R"(A\u009b31mB\u007f)") != std::string::npos);
  CHECK(json::parse(out)["model"]["name"] ==
        "A\xc2\x9b"
        "31mB\x7f");
  CHECK(actmem::terminal_safe_json("\xc2\xa0 \xc2\x80") == "\xc2\xa0 \\u0080");  // NBSP stays
}

TEST_CASE("Hostile run, round 2: settings that were silently resolved or ignored are errors",
          "[bounds]") {
  auto err = [](const json& req) { return actmem::evaluate_json(req)["error"]; };
  const json tiny = {{"hidden_size", 64},      {"num_attention_heads", 4},
                     {"num_hidden_layers", 2}, {"intermediate_size", 128},
                     {"vocab_size", 100},      {"max_position_embeddings", 64}};
  // dropout sets both rates; a specific rate beside it with another value silently won.
  CHECK(err({{"preset", "gpt2"},
             {"config", {{"dropout", 0.1}, {"attention_dropout", 0}}}})["message"] ==
        "config.attention_dropout: 0 conflicts with config.dropout: 0.1 (dropout sets both rates); "
        "give one");
  CHECK(actmem::evaluate_json(
            {{"preset", "gpt2"}, {"config", {{"dropout", 0.1}, {"hidden_dropout", 0.1}}}})["ok"] ==
        true);
  // Two expert counts: the first was used silently.
  json moe = tiny;
  moe["model_type"] = "qwen2_moe";
  moe["num_key_value_heads"] = 4;
  moe["num_experts"] = 8;
  moe["num_local_experts"] = 4;
  moe["num_experts_per_tok"] = 2;
  CHECK(err({{"model", moe}})["message"] ==
        "model.num_experts: 8 conflicts with model.num_local_experts: 4; give one");
  // MoE keys on a dense model changed nothing.
  for (const char* k : {"num_experts_per_tok", "moe_intermediate_size", "capacity_factor",
                        "num_shared_experts", "shared_expert_intermediate_size"}) {
    json m = tiny;
    m[k] = 2;
    INFO(k);
    CHECK(err({{"model", m}})["field"] == std::string("model.") + k);
  }
  // Hugging Face keys that change memory in ways not modelled.
  json q = tiny;
  q["model_type"] = "llama";
  q["quantization_config"] = {{"load_in_4bit", true}};
  CHECK(err({{"model", q}})["field"] == "model.quantization_config");
  json a = tiny;
  a["model_type"] = "llama";
  a["_attn_implementation"] = "flash_attention_2";
  CHECK(err({{"model", a}})["field"] == "model._attn_implementation");
  const json g = {{"model_type", "gpt2"}, {"n_embd", 64},      {"n_head", 4},
                  {"n_layer", 2},         {"vocab_size", 100}, {"reorder_and_upcast_attn", true}};
  CHECK(err({{"model", g}})["message"] ==
        "model.reorder_and_upcast_attn: true is not modelled; allowed: false");
  json g0 = g;
  g0["reorder_and_upcast_attn"] = false;
  CHECK(actmem::evaluate_json({{"model", g0}, {"config", {{"seq", 64}}}})["ok"] == true);
  // An empty request gpu read as "no GPU".
  CHECK(err({{"preset", "gpt2"}, {"gpu", ""}})["field"] == "gpu");
  // What plan and sweep choose themselves is refused in their config.
  CHECK(err({{"command", "plan"},
             {"preset", "gpt2"},
             {"config", {{"gpu", "h100-80gb"}, {"recompute", "full"}}}})["message"] ==
        "config.recompute: plan chooses the recompute policy; give it to estimate");
  CHECK(err({{"command", "plan"},
             {"preset", "gpt2"},
             {"config", {{"gpu", "h100-80gb"}, {"offload", true}}}})["field"] == "config.offload");
  CHECK(err({{"command", "sweep"}, {"preset", "gpt2"}, {"config", {{"seq", 512}}}})["message"] ==
        "config.seq: sweep takes its sequences from sweep.seqs (--sweep-seqs)");
  CHECK(
      err({{"command", "sweep"}, {"preset", "gpt2"}, {"config", {{"micro_batch", 3}}}})["field"] ==
      "config.micro_batch");
}

TEST_CASE("Hostile run, round 3: config-class defaults, rate conflicts, NaN keys, example scope",
          "[bounds]") {
  auto err = [](const json& req) { return actmem::evaluate_json(req)["error"]; };
  auto ok = [](const json& req) { return actmem::evaluate_json(req); };
  // hidden_dropout would replace resid_pdrop silently (GPT-2 and Phi-3 name the rate so).
  const json phi = {{"model_type", "phi3"},         {"hidden_size", 64},
                    {"num_attention_heads", 4},     {"num_hidden_layers", 2},
                    {"intermediate_size", 128},     {"vocab_size", 100},
                    {"max_position_embeddings", 64}};
  json p = phi;
  p["resid_pdrop"] = 0.1;
  p["embd_pdrop"] = 0.1;
  p["hidden_dropout"] = 0.0;
  CHECK(err({{"model", p}})["message"] ==
        "model.hidden_dropout: 0.0 conflicts with model.resid_pdrop: 0.1; give one");
  // A missing embd_pdrop is Phi3Config's 0.0, not resid_pdrop's value.
  json p2 = phi;
  p2["resid_pdrop"] = 0.1;
  CHECK(err({{"model", p2}})["message"] ==
        "model.embd_pdrop: 0 differs from resid_pdrop 0.1; actmem applies one rate to embeddings "
        "and residuals");
  // ... and GPT2Config's 0.1 for GPT-2: resid_pdrop 0.1 alone is consistent.
  const json g = {{"model_type", "gpt2"}, {"n_embd", 64},      {"n_head", 4},
                  {"n_layer", 2},         {"vocab_size", 100}, {"resid_pdrop", 0.1}};
  CHECK(ok({{"model", g}, {"config", {{"seq", 64}}}})["ok"] == true);
  // Config classes with a numeric head_dim default: Qwen3Config 128, not h / a.
  const json q3 = {{"model_type", "qwen3"},    {"hidden_size", 64},
                   {"num_attention_heads", 4}, {"num_key_value_heads", 4},
                   {"num_hidden_layers", 2},   {"intermediate_size", 128},
                   {"vocab_size", 100},        {"max_position_embeddings", 64}};
  CHECK(u(ok({{"model", q3}, {"config", {{"seq", 64}}}})["model"]["head_dim"]) == 128);
  // Qwen-MoE expert widths have their own defaults: a missing one is an error.
  json q3m = q3;
  q3m["model_type"] = "qwen3_moe";
  q3m["num_experts"] = 4;
  q3m["num_experts_per_tok"] = 2;
  CHECK(err({{"model", q3m}})["field"] == "model.moe_intermediate_size");
  // A bare NaN where a key stands is malformed, not a key named "NaN".
  const std::string nan_key =
      R"({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100, NaN : 1})";
  CHECK(err({{"model_text", nan_key}})["code"] == "malformed_json");
  // A worked example fixes what sweep, plan and fit choose.
  CHECK(err({{"command", "sweep"}, {"example", "seed000-flash-7b"}})["message"] ==
        "example: read only by the estimate, explain, timeline and view commands, not by sweep");
}

TEST_CASE("Hostile run, round 4: Gemma defaults, activation names, number overflow by key",
          "[bounds]") {
  auto err = [](const json& req) { return actmem::evaluate_json(req)["error"]; };
  const json g2 = {{"model_type", "gemma2"},   {"hidden_size", 64},
                   {"num_attention_heads", 8}, {"head_dim", 8},
                   {"num_hidden_layers", 2},   {"intermediate_size", 128},
                   {"vocab_size", 100},        {"max_position_embeddings", 64}};
  json named = g2;
  named["num_key_value_heads"] = 4;
  // Gemma2Config's num_key_value_heads default is 4, not the head count: read, and said.
  const json defaulted = actmem::evaluate_json({{"model", g2}, {"config", {{"seq", 64}}}});
  CHECK(defaulted["activations"] ==
        actmem::evaluate_json({{"model", named}, {"config", {{"seq", 64}}}})["activations"]);
  CHECK(defaulted["warnings"].dump().find("model.num_key_value_heads: not given; model_type "
                                          "gemma2's config class default 4 is read") !=
        std::string::npos);
  // Activation names transformers does not know are refused, naming the key they came from.
  for (const char* bad : {"", "geluX", "nonsense"}) {
    json m = named;
    m["hidden_activation"] = bad;
    INFO(bad);
    CHECK(err({{"model", m}})["field"] == "model.hidden_activation");
  }
  json gelu_new = named;
  gelu_new["hidden_activation"] = "gelu_new";
  CHECK(actmem::evaluate_json({{"model", gelu_new}, {"config", {{"seq", 64}}}})["ok"] == true);
  // gpt2 does not read hidden_activation: refused with the key it reads.
  const json gpt = {{"model_type", "gpt2"}, {"n_embd", 64},      {"n_head", 4},
                    {"n_layer", 2},         {"vocab_size", 100}, {"hidden_activation", "gelu"}};
  CHECK(err({{"model", gpt}})["field"] == "model.hidden_activation");
  // Gemma's norm is an RMSNorm: with a LayerNorm it would be ignored.
  const json ln = {{"hidden_size", 64},      {"num_attention_heads", 4},
                   {"num_hidden_layers", 2}, {"intermediate_size", 128},
                   {"vocab_size", 100},      {"norm_type", "layernorm"},
                   {"gemma_norm", true}};
  CHECK(err({{"model", ln}})["field"] == "model.gemma_norm");
  // A number no double holds is named by its key, not reported as malformed at a byte.
  CHECK(actmem::parse_json_text(R"({"head_dim": 1e400})", "model").error().message ==
        "model.head_dim: 1e400 is out of range (a JSON number here must fit a double)");
  CHECK(actmem::parse_json_text(R"({"a": [1, 2, -1e999]})", "model").error().field == "model.a[2]");
}

TEST_CASE("Hostile run, round 5: pattern longer than a chunk, Gemma keys on gpt2", "[bounds]") {
  auto err = [](const json& req) { return actmem::evaluate_json(req)["error"]; };
  // 36 letters for Qwen3-8B's 36 layers at pp = 2: each chunk read only the first 18 (all K),
  // answering as recompute none.
  const std::string pat = "layers:" + std::string(18, 'K') + std::string(18, 'C');
  CHECK(err({{"preset", "qwen3-8b"}, {"config", {{"pp", 2}, {"recompute", pat}}}})["message"] ==
        "config.recompute: layers:PATTERN has 36 letters; a model chunk holds at most 18 layers "
        "(one letter per layer of a chunk, repeated when shorter)");
  // One letter per layer of the chunk, or fewer (repeated), is read.
  CHECK(actmem::evaluate_json({{"preset", "qwen3-8b"},
                               {"config", {{"pp", 2}, {"recompute", "layers:KC"}}}})["ok"] == true);
  // GPT2Config has no soft-capping or sandwich norms: refused, not applied.
  for (const char* k : {"attn_logit_softcapping", "final_logit_softcapping", "sandwich_norm"}) {
    json g = {
        {"model_type", "gpt2"}, {"n_embd", 64}, {"n_head", 4}, {"n_layer", 2}, {"vocab_size", 100}};
    g[k] = std::string(k) == "sandwich_norm" ? json(true) : json(30.0);
    INFO(k);
    CHECK(err({{"model", g}})["field"] == std::string("model.") + k);
  }
}

// Issue 38, held-out finding 1: a model of 10^9 experts aborted the device replay with bad_alloc
// (one allocation per expert's weights). kMaxParamTensors (limits.hpp, docs/reliability.md) is
// checked when the setup counts each GPU's parameter tensors, before anything is allocated.
TEST_CASE("10^9 routed experts: a field-named refusal, not bad_alloc (kMaxParamTensors)",
          "[bounds]") {
  json model = {{"model_type", "qwen3_moe"}, {"hidden_size", 64},
                {"num_attention_heads", 4},  {"num_key_value_heads", 4},
                {"num_hidden_layers", 2},    {"intermediate_size", 128},
                {"vocab_size", 100},         {"num_experts", 1000000000},
                {"num_experts_per_tok", 2},  {"moe_intermediate_size", 32}};
  for (const char* command : {"estimate", "view", "timeline", "fit", "plan"}) {
    const json r = actmem::evaluate_json(
        {{"command", command}, {"model", model}, {"config", {{"seq", 16}, {"gpu", "h100-80gb"}}}});
    INFO(command);
    REQUIRE(r["ok"] == false);
    CHECK(r["error"]["field"] == "model.num_local_experts");
    CHECK(r["error"]["message"] ==
          "model.num_local_experts: one GPU would hold more than 1048576 parameter tensors (each "
          "routed expert's weights are tensors of their own), more than the device replay "
          "allocates; shard the experts with ep, or use more pipeline stages");
  }
  // Below the bound: 2 layers x 2 expert weights x 16,384 experts (and the few other tensors)
  // stay far below 2^20 and are answered.
  model["num_experts"] = 16384;
  const json ok = actmem::evaluate_json({{"model", model}, {"config", {{"seq", 16}}}});
  CHECK(ok["ok"] == true);
  // In a stack of kinds (our schema), the kind with the most experts is named.
  const json stacked = {{"hidden_size", 64},
                        {"num_attention_heads", 4},
                        {"num_hidden_layers", 2},
                        {"intermediate_size", 128},
                        {"vocab_size", 100},
                        {"num_local_experts", 4},
                        {"num_experts_per_tok", 2},
                        {"moe_intermediate_size", 32},
                        {"layer_kinds", {{"huge", {{"num_local_experts", 1000000000}}}}},
                        {"layer_stack", {{{"kind", "huge"}, {"repeat", 2}}}}};
  const json k = actmem::evaluate_json({{"model", stacked}, {"config", {{"seq", 16}}}});
  REQUIRE(k["ok"] == false);
  CHECK(k["error"]["field"] == "model.layer_kinds.huge.num_local_experts");
}

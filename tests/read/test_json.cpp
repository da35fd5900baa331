// Inputs: HF config.json naming, our schema, and bad input answered with field-named errors.
#include "helpers.hpp"

using namespace actmem::test;

namespace {

json error_of(const std::string& request_text) {
  const json r = json::parse(actmem::evaluate(request_text));
  REQUIRE_FALSE(r["ok"].get<bool>());
  return r["error"];
}

}  // namespace

TEST_CASE(
    "A real Hugging Face Llama config.json (with keys that do not affect memory) reads as the "
    "preset",
    "[json][hf]") {
  // meta-llama/Llama-3.1-8B config.json, verbatim keys.
  const json hf = json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072,
    "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})");
  const json a = run(json{{"model", hf}, {"config", {{"seq", 4096}}}});
  const json b = run_preset("llama-3.1-8b", {{"seq", 4096}});
  CHECK(u(a["model"]["params"]) == 8030261248ULL);
  CHECK(a["per_layer"] == b["per_layer"]);
  CHECK(a["total_bytes"] == b["total_bytes"]);
  CHECK(a["warnings"].size() == b["warnings"].size());
}

TEST_CASE("GPT-2 naming (n_embd, n_head, n_layer, n_inner null) and Qwen2 q/k/v biases",
          "[json][hf]") {
  const json gpt2 =
      json::parse(R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
    "n_positions": 1024, "n_ctx": 1024, "n_inner": null, "vocab_size": 50257, "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-05, "summary_type": "cls_index"})");
  CHECK(u(run(json{{"model", gpt2}})["model"]["params"]) == 124439808ULL);
  CHECK(u(run_preset("qwen2.5-7b", json::object())["model"]["params"]) == 7615616512ULL);
}

TEST_CASE("Bad input: each error names the field and what is allowed", "[json][errors]") {
  struct Case {
    const char* request;
    const char* code;
    const char* field;
    const char* message_part;
  };
  const Case cases[] = {
      {R"({"preset": "llama-9b"})", "unknown_preset", "preset", "allowed: "},
      {R"({"preset": "gpt2", "config": {"tp": 5}})", "invalid_value", "config.tp",
       "allowed: 1, 2, 3, 4, 6, 12"},
      {R"({"preset": "gpt2", "config": {"tp": 0}})", "invalid_value", "config.tp",
       "positive integer"},
      {R"({"preset": "gpt2", "config": {"tp": -2}})", "invalid_value", "config.tp", "got -2"},
      {R"({"preset": "gpt2", "config": {"seq": 1024.5}})", "invalid_value", "config.seq",
       "positive integer"},
      {R"({"preset": "gpt2", "config": {"seq": "long"}})", "wrong_type", "config.seq",
       "got a string"},
      {R"({"preset": "gpt2", "config": {"micro_batchh": 2}})", "unknown_key", "config.micro_batchh",
       "did you mean 'micro_batch'"},
      {R"({"preset": "gpt2", "config": {"dtype": "fp64"}})", "invalid_value", "config.dtype",
       "fp32, bf16, fp16, fp8"},
      {R"({"preset": "gpt2", "config": {"recompute": "every:0"}})", "invalid_value",
       "config.recompute", "every:K"},
      {R"({"preset": "gpt2", "config": {"profile": "deepspeed"}})", "invalid_value",
       "config.profile", "megatron, textbook, pytorch, hf"},
      {R"({"preset": "gpt2", "config": {"pp": 5}})", "invalid_value", "config.pp", "not divisible"},
      {R"({"preset": "gpt2", "config": {"pp": 2, "vpp": 4}})", "invalid_value", "config.vpp",
       "pp x vpp"},
      {R"({"preset": "gpt2", "config": {"cp": 3}})", "invalid_value", "config.cp",
       "does not divide seq"},
      {R"({"preset": "gpt2", "config": {"zero": 4}})", "invalid_value", "config.zero",
       "0, 1, 2, 3"},
      {R"({"preset": "gpt2", "config": {"ep": 2}})", "invalid_value", "config.ep",
       "mixture-of-experts"},
      {R"({"preset": "mixtral-8x7b", "config": {"ep": 3}})", "invalid_value", "config.ep",
       "allowed: 1, 2, 4, 8"},
      {R"({"preset": "gpt2", "config": {"gpu": "h100"}})", "unknown_preset", "config.gpu",
       "h100-80gb"},
      {R"({"preset": "gpt2", "config": {"dropout": 1.5}})", "invalid_value", "config.dropout",
       "[0, 1)"},
      {R"({"preset": "gpt2", "config": {"sp": "yes"}})", "wrong_type", "config.sp",
       "true or false"},
      {R"({"preset": "gpt2", "config": {"seq": 1e30}})", "invalid_value", "config.seq",
       "positive integer"},
      // Python's NaN token reaches its field (parse_json_text quotes it), refused there by name.
      {R"({"preset": "gpt2", "config": {"seq": NaN}})", "wrong_type", "config.seq",
       "NaN (not a finite number)"},
      {R"({"preset": "gpt2", "config": {"seq": 10)", "malformed_json", "request", "near byte"},
      {R"({"model": {"hidden_size": 64, "num_attention_heads": 6, "num_hidden_layers": 2, "vocab_size": 10, "intermediate_size": 8}})",
       "invalid_value", "model.head_dim", ""},
      {R"({"model": {"hidden_size": 64, "num_attention_heads": 8, "num_key_value_heads": 3, "num_hidden_layers": 2, "vocab_size": 10, "intermediate_size": 8}})",
       "invalid_value", "model.num_key_value_heads", "allowed: 1, 2, 4, 8"},
      {R"({"model": {"hidden_size": 64, "num_attention_heads": 8, "num_hidden_layers": 2, "vocab_size": 10, "intermediate_size": 8, "hiden_size": 3}})",
       "unknown_key", "model.hiden_size", "did you mean 'hidden_size'"},
      {R"({"model": {"model_type": "t5", "d_model": 512}})", "unsupported", "model.model_type",
       "gpt2, gpt_oss, llama"},
      {R"({"model": {"num_attention_heads": 8, "num_hidden_layers": 2, "vocab_size": 10}})",
       "missing_key", "model.hidden_size", "required"},
      {R"({"model": [1, 2]})", "wrong_type", "model", "JSON object"},
      {R"({"preset": "gpt2", "extra": 1})", "unknown_key", "extra", "allowed: command"},
      // Work bounds: no input may stall the engine.
      {R"({"preset": "gpt2", "config": {"seq": 512, "pp": 12, "micro_batches": 100000}})",
       "invalid_value", "config.micro_batches", "pipeline ops"},
      {R"({"command": "plan", "model": {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1100,
           "vocab_size": 10, "intermediate_size": 128}, "config": {"gpu": "h100-80gb"}})",
       "invalid_value", "config.pp", "at most 1024 layers"},
      {R"({"command": "sweep", "preset": "gpt2", "sweep": {"seqs": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}})",
       "wrong_type", "sweep.seqs", "1 to 16"},
  };
  for (const auto& c : cases) {
    INFO(c.request);
    const json e = error_of(c.request);
    CHECK(e["code"] == c.code);
    CHECK(e["field"] == c.field);
    CHECK(e["message"].get<std::string>().find(c.message_part) != std::string::npos);
  }
}

TEST_CASE("Determinism: the same request gives byte-identical JSON", "[json]") {
  const std::string req =
      R"({"preset": "llama-3.1-70b", "config": {"tp": 8, "sp": true, "pp": 4, "vpp": 2, "recompute": "selective"}})";
  CHECK(actmem::evaluate(req) == actmem::evaluate(req));
}

TEST_CASE("Presets listing names every model, GPU and example", "[json][presets]") {
  const json r = json::parse(actmem::evaluate(R"({"command": "presets"})"));
  CHECK(r["models"].size() >= 16);
  CHECK(r["gpus"].size() >= 8);
  CHECK(r["examples"].size() >= 10);
  // Every model preset has its name and its family (the page groups by it), including the
  // configs holding Python's Infinity (Mamba-Codestral, Nemotron-H 56B), read as --model reads.
  for (const json& m : r["models"]) {
    INFO(m["id"]);
    CHECK(m.contains("name"));
    CHECK(m.contains("family"));
  }
}

TEST_CASE("One key checker for every object: unknown keys named with a 'did you mean' hint",
          "[json][keys]") {
  struct Case {
    json req;
    const char* field;
    const char* says;
  };
  json stack_model = {
      {"hidden_size", 64},        {"num_attention_heads", 4},
      {"num_hidden_layers", 2},   {"vocab_size", 128},
      {"intermediate_size", 256}, {"layer_stack", {{{"kind", "base"}, {"repeats", 2}}}}};
  json meta_model = {{"hidden_size", 64},        {"num_attention_heads", 4},
                     {"num_hidden_layers", 2},   {"vocab_size", 128},
                     {"intermediate_size", 256}, {"metadata", {{"nmae", "x"}}}};
  const Case cases[] = {
      {{{"preset", "gpt2"}, {"sumary", true}}, "sumary", "did you mean 'summary'"},
      {{{"preset", "gpt2"}, {"command", "sweep"}, {"sweep", {{"seq", {1024}}}}},
       "sweep.seq",
       "did you mean 'seqs'"},
      {{{"model", stack_model}}, "model.layer_stack[0].repeats", "did you mean 'repeat'"},
      {{{"model", meta_model}}, "model.metadata.nmae", "did you mean 'name'"},
      {{{"preset", "gpt2"}, {"config", {{"gpu_memroy_bytes", 1}}}},
       "config.gpu_memroy_bytes",
       "did you mean 'gpu_memory_bytes'"},
  };
  for (const Case& c : cases) {
    const json r = actmem::evaluate_json(c.req);
    INFO(r.dump());
    REQUIRE_FALSE(r["ok"].get<bool>());
    CHECK(r["error"]["code"] == "unknown_key");
    CHECK(r["error"]["field"] == c.field);
    CHECK(r["error"]["message"].get<std::string>().find(c.says) != std::string::npos);
  }
  // A key of a million characters is shortened in the message and gets no hint (no O(n^2) work).
  const json r =
      actmem::evaluate_json(json{{"preset", "gpt2"}, {"config", {{std::string(1000000, 'x'), 1}}}});
  REQUIRE_FALSE(r["ok"].get<bool>());
  CHECK(r["error"]["message"].get<std::string>().size() < 1000);
}

TEST_CASE(
    "The streamed estimate answer is exactly what nlohmann writes for the same value (sorted "
    "keys, number and string formatting), over presets, profiles, stacks and odd names",
    "[json][writer]") {
  std::vector<json> reqs;
  for (const char* preset : {"gpt2", "llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b"})
    for (const char* profile : {"megatron", "textbook", "pytorch", "hf"})
      reqs.push_back(json{{"preset", preset},
                          {"gpu", "h100-80gb"},
                          {"config",
                           {{"profile", profile},
                            {"seq", 512},
                            {"pp", 2},
                            {"dropout", 0.1},
                            {"fragmentation_pct", 2.5},
                            {"recompute", "selective"}}}});
  json stack = {{"hidden_size", 64},
                {"num_attention_heads", 4},
                {"num_hidden_layers", 4},
                {"vocab_size", 128},
                {"intermediate_size", 256},
                {"layer_kinds", {{"wide", {{"intermediate_size", 512}}}}},
                {"layer_stack", {{{"kinds", {"base", "wide"}}, {"repeat", 2}}}},
                {"metadata",
                 {{"name", "t\u00ebst \"q\" \\ \u0001\t\u00e9\u4e2d\U0001F600"}, {"source", "x"}}}};
  reqs.push_back(json{{"model", stack}, {"config", {{"seq", 64}}}});
  reqs.push_back(json{{"command", "explain"}, {"model", stack}, {"config", {{"pp", 2}}}});
  for (const json& r : reqs) {
    const std::string text = actmem::evaluate(r.dump());
    const json parsed = json::parse(text, nullptr, false);
    INFO(r.dump());
    REQUIRE_FALSE(parsed.is_discarded());
    CHECK(parsed["ok"].get<bool>());
    CHECK(parsed.dump(-1, ' ', false, json::error_handler_t::replace) == text);
    CHECK(parsed == actmem::evaluate_json(r));
  }
}

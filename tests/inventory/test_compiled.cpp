// config.compile against what inductor's partitioner saved in torchtitan's Llama block
// (tests/reference/compile_saved.json, torch 2.6 on the CPU; docs/validation.md 6.2): every
// measured shape at activation_memory_budget 1, record for record, and the refusals of what was
// not measured.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace actmem::test;

namespace {

json measured() {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/compile_saved.json");
  REQUIRE(in.good());
  return json::parse(in);
}

// One layer of the row's shape, torchtitan's block (RoPE, SwiGLU, RMSNorm, no biases).
json block_model(const json& row) {
  return {{"hidden_size", row["h"]},          {"num_attention_heads", row["a"]},
          {"num_key_value_heads", row["kv"]}, {"intermediate_size", row["f"]},
          {"num_hidden_layers", 1},           {"vocab_size", 128},
          {"max_position_embeddings", 4096}};
}

json compiled(const json& model, const json& row, json extra = json::object()) {
  json c = {{"compile", true}, {"profile", "pytorch"}, {"attention", "flash"},
            {"dtype", "bf16"}, {"dropout", 0},         {"micro_batch", row["b"]},
            {"seq", row["s"]}, {"recompute", "none"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) c[it.key()] = it.value();
  return json{{"model", model}, {"config", c}};
}

}  // namespace

TEST_CASE(
    "compile: every record of the compiled block equals a tensor inductor's partitioner saved "
    "(compile_saved.json, five shapes at budget 1), the CUDA flash kernel's 24 B RNG state "
    "beside them",
    "[compile][reference]") {
  int checked = 0;
  const json ref = measured();
  for (const json& row : ref["rows"]) {
    if (row["activation_memory_budget"] != 1.0) continue;
    INFO("b s h a kv f = " << row["b"] << " " << row["s"] << " " << row["h"] << " " << row["a"]
                           << " " << row["kv"] << " " << row["f"]);
    const json r = run(compiled(block_model(row), row));
    std::vector<std::uint64_t> engine, saved;
    for (const json& t : r["per_layer"]["all_tensors"])
      if (t["name"] != "attn.rng_state")
        engine.push_back(u(t["bytes"]));
      else
        CHECK(u(t["bytes"]) == 24);
    for (const json& t : row["compiled"]) saved.push_back(u(t["bytes"]));
    std::sort(engine.begin(), engine.end());
    std::sort(saved.begin(), saved.end());
    CHECK(engine == saved);
    CHECK(u(r["per_layer"]["activation_bytes"]) == u(row["compiled_bytes"]) + 24);
    ++checked;
  }
  CHECK(checked == 5);
}

TEST_CASE(
    "compile with recompute full keeps each block's input, as without compile (budget 0's set)",
    "[compile]") {
  const json ref = measured();
  const json row = ref["rows"][0];
  const json with = run(compiled(block_model(row), row, {{"recompute", "full"}}));
  json without = compiled(block_model(row), row, {{"recompute", "full"}});
  without["config"]["compile"] = false;
  CHECK(with["per_layer"]["activation_bytes"] == run(without)["per_layer"]["activation_bytes"]);
  // Budget 0's measured set is that input alone.
  for (const json& r : ref["rows"])
    if (r["activation_memory_budget"] == 0.0)
      CHECK(u(r["compiled_bytes"]) == u(r["b"]) * u(r["s"]) * u(r["h"]) * 2);
}

TEST_CASE("compile: what was not measured is refused by its field, saying why",
          "[compile][errors]") {
  const json row = measured()["rows"][0];
  const json model = block_model(row);
  auto err = [&](json extra) {
    return actmem::evaluate_json(compiled(model, row, std::move(extra)))["error"];
  };
  CHECK(err({{"activation_memory_budget", 0.5}})["field"] == "config.activation_memory_budget");
  CHECK(err({{"activation_memory_budget", 0}})["message"] ==
        "config.activation_memory_budget: 0 saves each block's input only, what recompute: full "
        "keeps; use recompute full");
  CHECK(err({{"activation_memory_budget", 1.5}})["field"] == "config.activation_memory_budget");
  CHECK(err({{"profile", "megatron"}})["field"] == "config.compile");
  CHECK(err({{"attention", "eager"}})["field"] == "config.compile");
  CHECK(err({{"tp", 2}})["field"] == "config.compile");  // TP needs sp (torchtitan's plan)
  CHECK(err({{"recompute", "selective"}})["field"] == "config.compile");
  CHECK(err({{"dropout", 0.1}})["field"] == "config.compile");
  // A block not measured: Mixtral's MoE layers.
  json moe = compiled(model, row);
  moe["preset"] = "mixtral-8x7b";
  moe.erase("model");
  moe["config"]["seq"] = 64;
  CHECK(actmem::evaluate_json(moe)["error"]["field"] == "config.compile");
  // Under the hf profile (a transformers model compiled whole): measured with no recompute, the
  // loss compiled with it, Llama-like layers only.
  CHECK(err({{"profile", "hf"}, {"recompute", "full"}})["field"] == "config.compile");
  CHECK(err({{"profile", "hf"}, {"loss", "chunked:4"}})["field"] == "config.loss");
  CHECK(err({{"profile", "hf"}})["field"].is_null());
  CHECK(err({{"profile", "hf"}, {"dtype", "fp32"}})["field"] == "config.compile");
  // Measured in one process: DDP's optimizer and FSDP split the compiled graph.
  CHECK(err({{"profile", "hf"}, {"dp", 8}})["field"] == "config.dp");
  CHECK(err({{"profile", "hf"}, {"framework", "verl"}})["field"] == "config.framework");
  CHECK(err({{"profile", "hf"}, {"activation_memory_budget", 0}})["message"] ==
        "config.activation_memory_budget: a transformers model compiled whole is measured at "
        "budget 1 only");
  json gemma = compiled(model, row, {{"profile", "hf"}});
  gemma["preset"] = "gemma-2-9b-it";
  gemma.erase("model");
  gemma["config"]["seq"] = 64;
  CHECK(actmem::evaluate_json(gemma)["error"]["field"] == "config.compile");
  json no_compile = compiled(model, row, {{"activation_memory_budget", 0.5}});
  no_compile["config"]["compile"] = false;
  CHECK(actmem::evaluate_json(no_compile)["error"]["message"] ==
        "config.activation_memory_budget: read only with compile: true");
}

namespace {

json measured_sac() {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/compile_sac_saved.json");
  REQUIRE(in.good());
  return json::parse(in);
}

std::vector<std::uint64_t> sorted_bytes(const json& list) {
  std::vector<std::uint64_t> v;
  for (const json& t : list) v.push_back(u(t["bytes"]));
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE(
    "op:torchtitan keeps what torchtitan's op policy saved, eager and compiled "
    "(compile_sac_saved.json, five shapes: compile drops w2's output, which no backward reads)",
    "[compile][reference]") {
  int checked = 0;
  const json ref = measured_sac();  // kept: a range over a temporary's member would dangle
  for (const json& row : ref["rows"]) {
    INFO("b s h a kv f = " << row["b"] << " " << row["s"] << " " << row["h"] << " " << row["a"]
                           << " " << row["kv"] << " " << row["f"]);
    // Eager: the checkpoint's input and each MUST_SAVE op's outputs (q, v, SDPA's output and
    // log-sum-exp, w1, w2), the one the hooks saw and the ones the policy cached.
    const json eager =
        run(compiled(block_model(row), row, {{"compile", false}, {"recompute", "op:torchtitan"}}));
    json measured_eager = row["eager_cached"];
    for (const json& t : row["eager_packed"])
      if (u(t["bytes"]) > 0) measured_eager.push_back(t);
    CHECK(sorted_bytes(eager["per_layer"]["tensors"]) == sorted_bytes(measured_eager));
    CHECK(u(eager["per_layer"]["activation_bytes"]) == u(row["eager_bytes"]));
    // Compiled: the same less w2's output (the partitioner saves what the backward reads).
    const json comp = run(compiled(block_model(row), row, {{"recompute", "op:torchtitan"}}));
    CHECK(sorted_bytes(comp["per_layer"]["tensors"]) == sorted_bytes(row["compiled"]));
    CHECK(u(comp["per_layer"]["activation_bytes"]) == u(row["compiled_bytes"]));
    bool down = false;
    for (const json& t : comp["per_layer"]["tensors"])
      down = down || t["name"] == "mlp.down_proj.out";
    CHECK_FALSE(down);
    ++checked;
  }
  CHECK(checked == 5);
}

TEST_CASE(
    "compile: Qwen2's, Qwen3's and GPT-2's blocks (q/k/v biases, q/k norms, LayerNorm and "
    "GELU) equal what inductor's partitioner saved (compile_families_saved.json, budget 1)",
    "[compile][reference]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/compile_families_saved.json");
  REQUIRE(in.good());
  const json ref = json::parse(in);
  int bias = 0, norms = 0, gpt = 0;
  for (const json& row : ref["rows"]) {
    const bool qk_norm = row.value("qk_norm", false), gpt2 = row.value("gpt", false);
    const char* family = gpt2 ? "gpt2" : qk_norm ? "qwen3" : "qwen2";
    INFO(family << (row.value("tanh", false) ? " (tanh GELU)" : "")
                << " b s h a kv f = " << row["b"] << " " << row["s"] << " " << row["h"] << " "
                << row["a"] << " " << row["kv"] << " " << row["f"]);
    json model = block_model(row);
    model["model_type"] = family;
    model["head_dim"] = u(row["h"]) / u(row["a"]);
    model["tie_word_embeddings"] = false;
    if (gpt2)  // GPT2Config's names (n_inner the MLP's width), no dropout
      model = {{"model_type", "gpt2"}, {"n_embd", row["h"]}, {"n_head", row["a"]},
               {"n_inner", row["f"]},  {"n_layer", 1},       {"vocab_size", 128},
               {"n_positions", 4096},  {"resid_pdrop", 0},   {"embd_pdrop", 0},
               {"attn_pdrop", 0}};
    const json r = run(compiled(model, row));
    std::vector<std::uint64_t> engine, saved;
    // GPT-2's q, k and v are views of c_attn's one output, which the hooks see as one storage.
    std::uint64_t qkv = 0;
    for (const json& t : r["per_layer"]["all_tensors"])
      if (gpt2 && (t["name"] == "attn.q" || t["name"] == "attn.k" || t["name"] == "attn.v"))
        qkv += u(t["bytes"]);
      else if (t["name"] != "attn.rng_state")
        engine.push_back(u(t["bytes"]));
    if (qkv) engine.push_back(qkv);
    // The CPU keeps LayerNorm's mean and rstd ([b, s, 1]) in the input's dtype, CUDA in fp32
    // (torch 2.6 torch/_refs/__init__.py native_layer_norm: cast back on "cpu" only).
    std::uint64_t widened = 0;
    for (const json& t : row["compiled"]) {
      const bool stat =
          gpt2 && t["dtype"] == "bfloat16" && t["shape"].size() == 3 && t["shape"][2] == 1;
      saved.push_back(stat ? 2 * u(t["bytes"]) : u(t["bytes"]));
      if (stat) widened += u(t["bytes"]);
    }
    if (gpt2) CHECK(widened == 4 * u(row["b"]) * u(row["s"]) * 2);
    std::sort(engine.begin(), engine.end());
    std::sort(saved.begin(), saved.end());
    CHECK(engine == saved);
    CHECK(u(r["per_layer"]["activation_bytes"]) == u(row["compiled_bytes"]) + widened + 24);
    ++(gpt2 ? gpt : qk_norm ? norms : bias);
  }
  CHECK(bias == 5);
  CHECK(norms == 5);
  CHECK(gpt == 10);  // exact and tanh GELU
}

TEST_CASE(
    "compile: transformers' Llama, Qwen3 and Phi-3 decoder layers save what the compiled block's "
    "records say (compile_hf_saved.json: the families_cpu re-implementations under inductor's "
    "partitioner, b 2, s 64 and 128, budget 1)",
    "[compile][reference]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/compile_hf_saved.json");
  REQUIRE(in.good());
  const json ref = json::parse(in);
  int llama = 0, qwen3 = 0, phi3 = 0;
  for (const json& row : ref["rows"]) {
    const std::string mt = row["model_type"];
    if (mt != "llama" && mt != "qwen3" && mt != "phi3") continue;
    INFO(mt << " s " << row["s"] << " layer " << row["layer"]);
    REQUIRE(row["attention"] == "sdpa");  // SDPA's flash kernel for the CPU, as on CUDA
    json model = row["config"];
    model["model_type"] = mt;
    model["num_hidden_layers"] = 1;
    model["vocab_size"] = 128;
    model["max_position_embeddings"] = 4096;
    const json r = run(compiled(model, row));
    std::vector<std::uint64_t> engine, saved;
    std::uint64_t gate_up = 0;
    for (const json& t : r["per_layer"]["all_tensors"]) {
      if (t["name"] == "attn.rng_state") continue;
      // Phi-3's gate_up_proj is one linear: its output is one storage the hooks see once where
      // the block's records name the gate's and the up projection's outputs.
      if (mt == "phi3" && (t["name"] == "mlp.gate" || t["name"] == "mlp.up"))
        gate_up += u(t["bytes"]);
      else
        engine.push_back(u(t["bytes"]));
    }
    if (gate_up) engine.push_back(gate_up);
    for (const json& t : row["compiled"]) saved.push_back(u(t["bytes"]));
    std::sort(engine.begin(), engine.end());
    std::sort(saved.begin(), saved.end());
    CHECK(engine == saved);
    CHECK(u(r["per_layer"]["activation_bytes"]) == u(row["compiled_bytes"]) + 24);
    ++(mt == "llama" ? llama : mt == "qwen3" ? qwen3 : phi3);
  }
  CHECK(llama == 4);  // two layers at two sequence lengths each
  CHECK(qwen3 == 4);
  CHECK(phi3 == 4);
}

TEST_CASE(
    "compile under the hf profile: a transformers Llama, Qwen3 and Phi-3 model compiled whole "
    "(Trainer's torch_compile) saves the compiled block's records in every layer and, outside "
    "them, the token ids, the fp32 rotary frequencies, the final norm's input and rstd, the head's "
    "input and the compiled loss (compile_hf_whole_saved.json, b 2, s 64 and 128)",
    "[compile][reference]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/compile_hf_whole_saved.json");
  REQUIRE(in.good());
  const json ref = json::parse(in);
  int checked = 0;
  for (const json& row : ref["rows"]) {
    const std::string mt = row["model_type"];
    INFO(mt << " s " << row["s"]);
    json model = row["config"];
    model["model_type"] = mt;
    model["vocab_size"] = row["vocab_size"];
    model["max_position_embeddings"] = 512;
    const json r = run({{"model", model},
                        {"config",
                         {{"compile", true},
                          {"profile", "hf"},
                          {"attention", "flash"},
                          {"dtype", "bf16"},
                          {"dropout", 0},
                          {"micro_batch", row["b"]},
                          {"seq", row["s"]},
                          {"recompute", "none"}}}});
    REQUIRE(r["ok"] == true);
    std::vector<std::uint64_t> engine, saved;
    std::uint64_t gate_up = 0, rng = 0;
    for (const json& t : r["per_layer"]["all_tensors"])
      if (t["name"] == "attn.rng_state")
        rng += u(t["bytes"]);
      else if (mt == "phi3" && (t["name"] == "mlp.gate" || t["name"] == "mlp.up"))
        gate_up += u(t["bytes"]);  // Phi-3's fused gate_up output: one storage
      else
        engine.push_back(u(t["bytes"]));
    if (gate_up) engine.push_back(gate_up);
    CHECK(rng == 24);  // the CUDA flash kernel's RNG state, which the CPU has not
    const std::uint64_t layers = u(model["num_hidden_layers"]);
    const std::size_t per_layer = engine.size();
    for (std::uint64_t l = 1; l < layers; ++l)
      engine.insert(engine.end(), engine.begin(), engine.begin() + per_layer);
    for (const char* side : {"input_layer", "output_layer"})
      for (const json& t : r[side]["tensors"]) engine.push_back(u(t["bytes"]));
    for (const json& t : row["compiled"]) saved.push_back(u(t["bytes"]));
    std::sort(engine.begin(), engine.end());
    std::sort(saved.begin(), saved.end());
    CHECK(engine == saved);
    ++checked;
  }
  CHECK(checked == 6);
}

TEST_CASE(
    "compile: Gemma 2's and Gemma 3's layers (sandwich norms, GELU-tanh gated MLP, Gemma 3's q/k "
    "norms) equal what inductor's partitioner saved (compile_gemma_saved.json, budget 1)",
    "[compile][reference]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/compile_gemma_saved.json");
  REQUIRE(in.good());
  const json ref = json::parse(in);
  int gemma2 = 0, gemma3 = 0;
  for (const json& row : ref["rows"]) {
    const bool qk_norm = row["qk_norm"].get<bool>();
    INFO((qk_norm ? "gemma3_text" : "gemma2")
         << " b s h a kv f d = " << row["b"] << " " << row["s"] << " " << row["h"] << " "
         << row["a"] << " " << row["kv"] << " " << row["f"] << " " << row["head_dim"]);
    // One sliding layer (Gemma 2's first, Gemma 3's layer_types): its window and Gemma 2's
    // soft-capping are the flash kernel's arguments.
    json model = block_model(row);
    model["model_type"] = qk_norm ? "gemma3_text" : "gemma2";
    model["head_dim"] = row["head_dim"];
    model["query_pre_attn_scalar"] = row["head_dim"];
    model["sliding_window"] = 16;
    if (qk_norm) model["layer_types"] = {"sliding_attention"};
    const json r = run(compiled(model, row));
    std::vector<std::uint64_t> engine;
    bool residual = false;
    for (const json& t : r["per_layer"]["all_tensors"]) {
      residual = residual || t["name"] == "ln2.in";
      if (t["name"] != "attn.rng_state") engine.push_back(u(t["bytes"]));
    }
    CHECK_FALSE(residual);  // recomputed from the block's input and the post-attention norm's
    std::sort(engine.begin(), engine.end());
    CHECK(engine == sorted_bytes(row["compiled"]));
    CHECK(u(r["per_layer"]["activation_bytes"]) == u(row["compiled_bytes"]) + 24);
    ++(qk_norm ? gemma3 : gemma2);
  }
  CHECK(gemma2 == 5);
  CHECK(gemma3 == 5);
}

TEST_CASE(
    "compile under tensor parallelism: torchtitan's block under its TP plan keeps the norms' "
    "sequence shard and the gathered q/k/v and w1/w3 inputs (compile_tp_saved.json, tp 1, 2, 4)",
    "[compile][reference]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/compile_tp_saved.json");
  REQUIRE(in.good());
  const json ref = json::parse(in);
  int rows[5] = {0, 0, 0, 0, 0};
  for (const json& row : ref["rows"]) {
    const std::uint64_t tp = u(row["tp"]);
    INFO("tp " << tp << ", b s h a kv f = " << row["b"] << " " << row["s"] << " " << row["h"] << " "
               << row["a"] << " " << row["kv"] << " " << row["f"]);
    const json r = run(compiled(block_model(row), row, {{"tp", tp}, {"sp", tp > 1}}));
    std::vector<std::uint64_t> engine;
    for (const json& t : r["per_layer"]["all_tensors"])
      if (t["name"] != "attn.rng_state") engine.push_back(u(t["bytes"]));
    std::sort(engine.begin(), engine.end());
    CHECK(engine == sorted_bytes(row["compiled"]));
    CHECK(u(r["per_layer"]["activation_bytes"]) == u(row["compiled_bytes"]) + 24);
    ++rows[tp];
  }
  CHECK(rows[1] == 5);  // the same block as compile_saved.json's, in torchtitan's module tree
  CHECK(rows[2] == 5);
  CHECK(rows[4] == 4);  // one shape's 2 kv heads do not divide by 4 (torchtitan refuses it)
  // What under TP was not measured is refused by its field.
  const json row = ref["rows"][0];
  auto field = [&](json extra) {
    const json e = actmem::evaluate_json(compiled(block_model(row), row, std::move(extra)));
    return e.value("ok", true) ? std::string("ok") : e["error"]["field"].get<std::string>();
  };
  CHECK(field({{"tp", 2}, {"sp", false}}) == "config.compile");
  CHECK(field({{"tp", 2}, {"sp", true}, {"recompute", "op:torchtitan"}}) == "config.compile");
  CHECK(field({{"tp", 2}, {"sp", true}, {"recompute", "full"}}) == "ok");
  CHECK(field({{"cp", 2}}) == "config.compile");
  // Other blocks under TP are refused with full recompute too (their compiled records under TP
  // are not measured), and torchtitan's op policy is measured on its Llama block only.
  for (const char* preset : {"qwen3-8b", "gemma-2-9b-it"}) {
    INFO(preset);
    json r = compiled(block_model(row), row, {{"tp", 2}, {"sp", true}, {"recompute", "full"}});
    r.erase("model");
    r["preset"] = preset;
    CHECK(actmem::evaluate_json(r)["error"]["field"] == "config.compile");
    json op = compiled(block_model(row), row, {{"recompute", "op:torchtitan"}});
    op.erase("model");
    op["preset"] = preset;
    CHECK(actmem::evaluate_json(op)["error"]["field"] == "config.compile");
  }
}

// Test helpers for the model-family tests: the source tree's files, the Hub configs vendored in
// tests/data/hf and the transformers layers measured on the H200
// (tests/reference/gpu/hf_layers.json, docs/validation.md section 4.4).
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "helpers.hpp"

namespace actmem::test {

// A file of the source tree, as text.
inline std::string source_file(const std::string& path) {
  std::ifstream f(std::string(ACTMEM_SOURCE_DIR) + "/" + path);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline json measured_layers() {
  return json::parse(source_file("tests/reference/gpu/hf_layers.json"));
}

// A Hub config.json vendored in tests/data/hf.
inline json hub_config(const std::string& name) {
  return json::parse(source_file("tests/data/hf/" + name));
}

// The bytes of every tensor a measured row saved first inside modules under `prefix` (one decoder
// layer: "model.layers.1.", or Falcon's "transformer.h.1.", which by_module does not split).
inline std::uint64_t saved_under(const json& row, const std::string& prefix) {
  std::uint64_t n = 0;
  for (const json& t : row["tensors"])
    if (t["module"].get<std::string>().rfind(prefix, 0) == 0) n += t["bytes"].get<std::uint64_t>();
  return n;
}

// The measured row's model as the script built it: AutoConfig.for_model(type, vocab_size=1024,
// max_position_embeddings=512, **config) (measure_hf_layers.py).
inline json hf_model(const json& row) {
  json m = row["config"];
  m["model_type"] = row["model_type"];
  m["vocab_size"] = 1024;
  m["max_position_embeddings"] = 512;
  return m;
}

// The engine's hf answer for a measured row's model at the row's micro-batch and sequence.
inline json run_row(const json& row, const std::string& attention) {
  return run(json{{"model", hf_model(row)},
                  {"config",
                   {{"micro_batch", row["b"]},
                    {"seq", row["s"]},
                    {"profile", "hf"},
                    {"attention", attention}}}});
}

// The engine's whole model as PyTorch holds it for backward: input layer, every decoder layer and
// the output layer, less the returned logits (held by the ModelOutput, not saved).
inline std::uint64_t whole_model(const json& r) {
  const json& a = r["activations"];
  std::uint64_t logits = 0;
  for (const json& t : r["output_layer"]["tensors"])
    if (t["name"] == "logits") logits = u(t["bytes"]);
  return u(a["input_layer_bytes"]) + u(a["layers_bytes"]) + u(a["output_layer_bytes"]) - logits;
}

// Layer i's kind's bytes in the engine (a stack of kinds, or the single kind).
inline std::uint64_t engine_layer(const json& r, std::size_t i) {
  if (!r["model"].contains("layer_stack")) return u(r["per_layer"]["activation_bytes"]);
  std::size_t at = 0;
  for (const json& e : r["model"]["layer_stack"])
    for (std::uint64_t n = 0; n < u(e["repeat"]); ++n, ++at)
      if (at == i)
        for (const json& k : r["model"]["layer_kinds"])
          if (k["name"] == e["kind"]) return u(k["full_bytes"]);
  FAIL("no layer " << i);
  return 0;
}

// The measured bytes of decoder layer i, less the RoPE tables its attention saved first (the
// model-level cos/sin or freqs_cis, [1, 1, s, d] or [1, s, 1, d/2], shared by every layer and
// counted once in the engine's input layer).
inline std::uint64_t measured_layer(const json& row, std::size_t i) {
  const std::string falcon = "transformer.h." + std::to_string(i) + ".";
  const std::string other = "layers." + std::to_string(i) + ".";
  std::uint64_t n = 0;
  for (const json& t : row["tensors"]) {
    const std::string m = t["module"];
    if (m.rfind(falcon, 0) != 0 && m.find("." + other) == std::string::npos) continue;
    const json& sh = t["shape"];
    const bool table = sh.size() == 4 && sh[0] == 1 && (sh[1] == 1 || sh[2] == 1);
    if (!table) n += u(t["bytes"]);
  }
  return n;
}

// One layer kind's records, name -> bytes (a stack of kinds, or the single kind's per_layer).
inline std::map<std::string, std::uint64_t> kind_records(const json& r, const char* kind) {
  std::map<std::string, std::uint64_t> out;
  const json* list = &r["per_layer"]["all_tensors"];
  if (r["model"].contains("layer_kinds"))
    for (const json& k : r["model"]["layer_kinds"])
      if (k["name"] == kind) list = &k["tensors"];
  for (const json& t : *list) out[t["name"].get<std::string>()] = u(t["bytes"]);
  return out;
}

// Checks every decoder layer of a measured row against its kind in the engine's answer; returns
// the number of layers checked.
inline int check_every_layer(const json& row, const json& r) {
  const std::size_t n = row["config"]["num_hidden_layers"].get<std::size_t>();
  for (std::size_t i = 0; i < n; ++i) {
    INFO("layer " << i);
    CHECK(engine_layer(r, i) == measured_layer(row, i));
  }
  return static_cast<int>(n);
}

}  // namespace actmem::test

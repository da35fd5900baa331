// Test helpers for the model-family tests: the source tree's files, the Hub configs vendored in
// tests/data/hf and the transformers layers measured on the H200
// (tests/reference/gpu/hf_layers.json, docs/validation.md section 4.4).
#pragma once

#include <fstream>
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

}  // namespace actmem::test

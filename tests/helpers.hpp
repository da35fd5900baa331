// Test helpers: run the shared JSON entry point and read numbers out of its response.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "actmem/api/api.hpp"
#include "actmem/json_io.hpp"

namespace actmem::test {

using nlohmann::json;

// Evaluates a request and requires success, so a failing case reports the engine's message.
inline json run(const json& request) {
  json r = evaluate_json(request);
  INFO(r.dump().substr(0, 400));
  REQUIRE(r.value("ok", false));
  return r;
}

inline json run_preset(const std::string& preset, const json& config) {
  return run(json{{"preset", preset}, {"config", config}});
}

// docs/schedules.md's toy model (docs/examples/toy-model.json: h = 64, 4 heads, f = 256, GELU,
// LayerNorm, V = 128), `layers` deep: the worked examples' one definition.
inline json toy_model(std::uint64_t layers = 4) {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/docs/examples/toy-model.json");
  REQUIRE(in.good());
  json m = json::parse(in);
  m["num_hidden_layers"] = layers;
  return m;
}

// A preset by id, or "toy": the toy model above, 12 layers (the walk and replay tests' models).
inline ModelSpec model_of(const std::string& id) {
  std::vector<std::string> w;
  auto m = id == "toy" ? model_from_json(toy_model(12), "toy", &w) : model_preset(id, &w);
  REQUIRE(m.ok());
  return m.value();
}

// A small DeepSeek-V2 config (MLA, dense SwiGLU): h 256, 4 heads, q latent 96, kv latent 64, nope
// 32, rope 16, v 40, f 512, V 1024; `layers` deep. The MLA tests' one definition.
inline json mla_model(std::uint64_t layers) {
  return {{"model_type", "deepseek_v2"}, {"hidden_size", 256},       {"intermediate_size", 512},
          {"num_hidden_layers", layers}, {"num_attention_heads", 4}, {"vocab_size", 1024},
          {"q_lora_rank", 96},           {"kv_lora_rank", 64},       {"qk_nope_head_dim", 32},
          {"qk_rope_head_dim", 16},      {"v_head_dim", 40},         {"n_routed_experts", nullptr}};
}

inline std::uint64_t u(const json& j) {
  return j.get<std::uint64_t>();
}

// A timeline answer's named transient (stage 0), by name.
inline std::uint64_t named_transient(const json& timeline, const std::string& name) {
  for (const auto& t : timeline["stages"][0]["transients"])
    if (t["name"] == name) return u(t["bytes"]);
  FAIL("no transient " << name);
  return 0;
}

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Sum of a record list's bytes (to assert totals equal their named parts).
inline std::uint64_t sum_tensors(const json& tensors) {
  std::uint64_t s = 0;
  for (const auto& t : tensors) s += t["bytes"].get<std::uint64_t>();
  return s;
}

// The rl command's answer: a phase by id (null if absent, or a failed REQUIRE), the bytes of its
// first line whose text starts with what_prefix (0 if none), the sum of its lines.
inline const json* find_rl_phase(const json& answer, const std::string& id) {
  for (const json& p : answer["phases"])
    if (p["id"] == id) return &p;
  return nullptr;
}

inline const json& rl_phase(const json& answer, const std::string& id) {
  const json* p = find_rl_phase(answer, id);
  INFO("phase " + id);
  REQUIRE(p != nullptr);
  return *p;
}

inline std::uint64_t rl_line(const json& phase, const std::string& what_prefix) {
  for (const json& l : phase["lines"])
    if (l["what"].get<std::string>().rfind(what_prefix, 0) == 0) return u(l["bytes"]);
  return 0;
}

// The bytes of one process's lines in an RL phase whose text starts with what_prefix (OpenRLHF's
// phases hold a line set per process).
inline std::uint64_t rl_process_line(const json& phase, const std::string& process,
                                     const std::string& what_prefix) {
  std::uint64_t s = 0;
  for (const json& l : phase["lines"])
    if (l["process"] == process && l["what"].get<std::string>().rfind(what_prefix, 0) == 0)
      s += u(l["bytes"]);
  return s;
}

// An rl object with `over`'s keys set on `base`, the rollout's keys merged one by one.
inline json rl_merged(json base, const json& over) {
  for (auto it = over.begin(); it != over.end(); ++it)
    if (it.key() == "rollout")
      for (auto jt = it.value().begin(); jt != it.value().end(); ++jt)
        base["rollout"][jt.key()] = *jt;
    else
      base[it.key()] = it.value();
  return base;
}

inline std::uint64_t rl_lines_sum(const json& phase) {
  std::uint64_t s = 0;
  for (const json& l : phase["lines"]) s += u(l["bytes"]);
  return s;
}

// An estimate answer's fixed cost `name` (device.overheads), 0 when it has none.
inline std::uint64_t overhead(const json& answer, const std::string& name) {
  for (const json& o : answer["device"]["overheads"])
    if (o["name"] == name) return u(o["bytes"]);
  return 0;
}

}  // namespace actmem::test

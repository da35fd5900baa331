// Inputs the fuzzer once crashed on (fuzz/regressions/), replayed through evaluate on every commit:
// each must come back as a field-named error or a result, never a crash or a wrapped number.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "actmem/json_io.hpp"

using nlohmann::json;

namespace {
std::string read(const std::string& name) {
  std::ifstream f(std::string(ACTMEM_SOURCE_DIR) + "/fuzz/regressions/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE(
    "Fuzz regression timeline-int64-overflow.json (2026-11-29, UBSan: signed overflow in the "
    "timeline's backward offsets at micro_batch = 1.5e7, 405B, every:6): now a config.seq error",
    "[fuzz][overflow]") {
  const std::string text = read("timeline-int64-overflow.json");
  REQUIRE_FALSE(text.empty());
  const json r = json::parse(actmem::evaluate(text));
  REQUIRE_FALSE(r["ok"].get<bool>());
  CHECK(r["error"]["code"] == "overflow");
  CHECK(r["error"]["field"] == "config.seq");
  CHECK(r["error"]["message"] ==
        "config.seq: timeline.peak_bytes would exceed 2^63-1 bytes at micro_batch=15000000, "
        "seq=10024; reduce config.seq or config.micro_batch (or the model size)");
  // The same request as a timeline and a plan takes the same checked path.
  json req = json::parse(text);
  req["command"] = "timeline";
  CHECK(actmem::evaluate_json(req)["error"]["field"] == "config.seq");
}

TEST_CASE(
    "Held-out regression experts-bad-alloc.json (issue 38: 10^9 routed experts aborted the device "
    "replay with std::bad_alloc): now a model.num_local_experts error on every command",
    "[fuzz][bounds]") {
  const std::string text = read("experts-bad-alloc.json");
  REQUIRE_FALSE(text.empty());
  json req = json::parse(text);
  for (const char* command : {"estimate", "explain", "timeline", "view", "fit", "plan"}) {
    INFO(command);
    req["command"] = command;
    req["config"]["gpu"] = "h100-80gb";
    const json r = actmem::evaluate_json(req);
    REQUIRE_FALSE(r["ok"].get<bool>());
    CHECK(r["error"]["field"] == "model.num_local_experts");
  }
}

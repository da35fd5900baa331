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

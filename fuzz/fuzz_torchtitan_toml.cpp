// libFuzzer target: any bytes as a torchtitan job config TOML (the request's "torchtitan_toml",
// `actmem --torchtitan-toml FILE`): the TOML reader, the key table and types, the model checks,
// the pipeline split, the merge with the request's config and the estimate that follows; and,
// when it is read, the TOML written back (--emit torchtitan). Every input gets one JSON answer
// with "ok"; a refusal names its field; nothing crashes or hangs.
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/json_io.hpp"
#include "fuzz_answer.hpp"

using actmem::fuzz::check_answer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // A small Llama-shaped model (8 layers of h 64), so that each input's estimate stays quick.
  const nlohmann::json model = {{"hidden_size", 64},
                                {"num_attention_heads", 4},
                                {"num_key_value_heads", 2},
                                {"num_hidden_layers", 8},
                                {"vocab_size", 128},
                                {"intermediate_size", 192},
                                {"max_position_embeddings", 4096}};
  nlohmann::json req = {{"model", model},
                        {"config", {{"gpu", "h100-80gb"}, {"dp", 2}}},
                        {"torchtitan_toml", text},
                        {"summary", true}};
  const nlohmann::json r = actmem::evaluate_json(req);
  check_answer(r);
  if (r["ok"] == true) {
    req.erase("summary");
    req["emit"] = "torchtitan";
    check_answer(actmem::evaluate_json(req));
  }
  return 0;
}

// libFuzzer target: any bytes as a Megatron-LM launch's arguments (the request's "megatron_args",
// `actmem --megatron-args FILE`): the tokenizer, the argument table, the model checks, the merge
// with the request's config and the estimate that follows; and, when it is read, the arguments
// written back (--emit megatron). Every input gets one JSON answer with "ok"; a refusal names its
// field; nothing crashes or hangs.
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/json_io.hpp"
#include "fuzz_answer.hpp"

using actmem::fuzz::check_answer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json req = {{"preset", "gpt2"},
                        {"config", {{"gpu", "h100-80gb"}, {"dp", 2}}},
                        {"megatron_args", text},
                        {"summary", true}};
  const nlohmann::json r = actmem::evaluate_json(req);
  check_answer(r);
  if (r["ok"] == true) {
    req.erase("summary");
    req["emit"] = "megatron";
    check_answer(actmem::evaluate_json(req));
  }
  return 0;
}

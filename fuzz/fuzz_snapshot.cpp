// libFuzzer target: `actmem compare` on any bytes as the snapshot file (the pickle reader, the
// snapshot reader, the replay and the record matching). Every input gets one JSON answer with
// "ok"; a refusal names its field; nothing crashes, hangs or grows without bound.
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actmem/json_io.hpp"
#include "fuzz_answer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const nlohmann::json request = {
      {"command", "compare"}, {"preset", "gpt2"}, {"config", {{"seq", 128}, {"gpu", "h100-80gb"}}}};
  const nlohmann::json r =
      actmem::compare_json(request, std::string_view(reinterpret_cast<const char*>(data), size));
  actmem::fuzz::check_answer(r);
  if (r["ok"] == true && !(r.contains("measured") && r.contains("predicted"))) std::abort();
  return 0;
}

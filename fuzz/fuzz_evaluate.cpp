// libFuzzer target: any bytes through the JSON entry point the CLI, the page and the tests share.
// The engine must answer every input with a JSON response (ok or a field-named error), never
// crash, hang or trip a sanitizer; and the answer must be valid JSON with an "ok" key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/json_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string request(reinterpret_cast<const char*>(data), size);
  const std::string response = actmem::evaluate(request);
  const nlohmann::json r = nlohmann::json::parse(response, nullptr, false);
  if (r.is_discarded() || !r.is_object() || !r.contains("ok")) std::abort();
  if (!r["ok"].get<bool>() && !(r.contains("error") && r["error"].contains("field"))) std::abort();
  return 0;
}

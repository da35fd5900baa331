// libFuzzer target: `actmem requests -` over any byte stream. Every line holding more than JSON
// whitespace (space, tab, CR) gets exactly one answer line, and each answer is a JSON object with
// "ok" (an error names its field); exit 0.
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../engine/cli/run.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  std::ostringstream out, err;
  if (actmem::cli::run_cli({"requests", "-"}, in, out, err) != 0 || !err.str().empty())
    std::abort();
  std::size_t requests = 0;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);)
    requests += l.find_first_not_of(" \t\r") != std::string::npos;
  std::size_t answers = 0;
  std::istringstream outs(out.str());
  for (std::string l; std::getline(outs, l);) {
    ++answers;
    const auto r = nlohmann::json::parse(l, nullptr, false);
    if (r.is_discarded() || !r.is_object() || !r.contains("ok")) std::abort();
    if (r["ok"] == false && !(r.contains("error") && r["error"].contains("field"))) std::abort();
  }
  if (answers != requests) std::abort();
  return 0;
}

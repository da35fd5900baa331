// Embind declarations: the page calls the engine's JSON entry point (request -> response text) and
// compare (request and a snapshot file's bytes -> response text).
#include <emscripten/bind.h>

#include <string>

#include "actmem/json_io.hpp"

namespace {

std::string evaluate_request(const std::string& request) {
  return actmem::evaluate(request);
}

// compare: the request (estimate keys with "command": "compare") and the snapshot's bytes (a
// Uint8Array from the page's drop zone).
std::string compare_request(const std::string& request, const std::string& snapshot) {
  auto req = actmem::parse_json_text(request, "request");
  if (!req.ok()) return actmem::error_to_json(req.error()).dump();
  return actmem::compare_json(req.value(), snapshot)
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

EMSCRIPTEN_BINDINGS(actmem_bindings) {
  emscripten::function("evaluate", &evaluate_request);
  emscripten::function("compare", &compare_request);
}

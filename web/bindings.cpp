// Embind declarations: the page calls the engine's one JSON entry point (request -> response text).
#include <emscripten/bind.h>

#include <string>

#include "actmem/json_io.hpp"

namespace {

std::string evaluate_request(const std::string& request) {
  return actmem::evaluate(request);
}

}  // namespace

EMSCRIPTEN_BINDINGS(actmem_bindings) {
  emscripten::function("evaluate", &evaluate_request);
}

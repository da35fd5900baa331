// The engine's entry points for a client that holds text: one request -> response function every
// client shares (the CLI, the page through Embind, the fuzzers), and the presets compiled in.
// JSON objects themselves are the adapter's business (engine/json/actmem/json_io.hpp).
#pragma once

#include <string>
#include <vector>

#include "actmem/config/gpu.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem {

// {"command": "estimate" | "explain" | "timeline" | "fit" | "plan" | "sweep" | "presets",
//  "preset"|"model", "config", ...} -> {"ok": true, ...} or {"ok": false, "error": {code, field,
// message}} (docs/schema.md). Deterministic output, never throws.
std::string evaluate(const std::string& request_text);

// Resolves presets by id (models, gpus) from the data compiled into the engine.
Result<ModelSpec> model_preset(const std::string& id, std::vector<std::string>* warnings);
Result<GpuSpec> gpu_preset(const std::string& id);

}  // namespace actmem

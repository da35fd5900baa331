// Shared by the fuzz targets that check evaluate_json's or compare_json's answers (a launch's
// arguments, a job config, a snapshot): every answer is a JSON object with "ok", and a refusal
// names its field.
#pragma once

#include <cstdlib>

#include <nlohmann/json.hpp>

namespace actmem::fuzz {

inline void check_answer(const nlohmann::json& r) {
  if (!r.is_object() || !r.contains("ok")) std::abort();
  if (r["ok"] == false && !(r.contains("error") && r["error"].contains("field"))) std::abort();
}

}  // namespace actmem::fuzz

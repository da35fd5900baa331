// Internal: reads gpt-oss's config keys (sinks, the biased router, the experts and their
// quantized checkpoint) into a ModelSpec whose Llama-named keys model_from_json has read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::detail {

// The keys read_gpt_oss reads beyond the Llama names (model_from_json passes them through).
bool is_gpt_oss_key(const std::string& k);
std::optional<Error> read_gpt_oss(const nlohmann::json& j, ModelSpec* m);

}  // namespace actmem::detail

// Internal: reads DeepSeek-V2/V3's config keys (MLA, experts, dense prefix, MTP) into a ModelSpec
// whose Llama-named keys model_from_json has read.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::detail {

// The keys read_deepseek reads (model_from_json passes them through its key check).
bool is_deepseek_key(const std::string& k);
std::optional<Error> read_deepseek(const nlohmann::json& j, const std::string& type, ModelSpec* m);

}  // namespace actmem::detail

// Internal: reads PhiMoE's config keys (sparsemixer top-2 routing, jitter, LayerNorm, the
// lm_head bias) into a ModelSpec whose Llama-named keys model_from_json has read.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::detail {

// The keys read_phimoe reads beyond the Llama names (model_from_json passes them through).
bool is_phimoe_key(const std::string& k);
std::optional<Error> read_phimoe(const nlohmann::json& j, ModelSpec* m);

}  // namespace actmem::detail

// Internal: reads Llama 4's text config keys (dense and MoE layers interleaved, NoPE layers, the
// L2 q/k norm, chunked attention) into a ModelSpec whose Llama-named keys model_from_json has
// read.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::detail {

// The keys read_llama4 reads beyond the Llama names (model_from_json passes them through).
bool is_llama4_key(const std::string& k);
std::optional<Error> read_llama4(const nlohmann::json& j, ModelSpec* m);

}  // namespace actmem::detail

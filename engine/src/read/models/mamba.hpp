// Internal: reads Mamba-2 and Nemotron-H config.json files (transformers configuration_mamba2.py,
// configuration_nemotron_h.py) into a ModelSpec of Mamba-2, attention and MLP layer kinds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::detail {

// "mamba2" and "nemotron_h".
bool is_mamba_type(const std::string& model_type);

// Reads the architecture keys into *out (whose id, name and metadata are set); keys that change
// memory in ways not modelled (MoE layers, other activations, dropout) are errors.
std::optional<Error> read_mamba_family(const nlohmann::json& j, const std::string& model_type,
                                       ModelSpec* out, std::vector<std::string>* warnings);

}  // namespace actmem::detail

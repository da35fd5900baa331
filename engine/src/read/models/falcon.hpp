// Internal: reads a Falcon config.json (transformers configuration_falcon.py) into a ModelSpec.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::detail {

// Reads the architecture keys of a Falcon config into *out (whose id, name and metadata are set);
// keys that change memory in ways not modelled (ALiBi, dropout, other activations) are errors.
std::optional<Error> read_falcon(const nlohmann::json& j, ModelSpec* out,
                                 std::vector<std::string>* warnings);

}  // namespace actmem::detail

// Internal: reads a model's stack of layer kinds (docs/schema.md, "A stack of layer kinds").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::detail {

// "layer_kinds" and "layer_stack" are our schema's stack keys.
bool is_stack_key(const std::string& k);

// Reads layer_kinds (each a set of per-layer keys over the top-level ones) and layer_stack (runs of
// kinds) into m->kinds and m->stack; nothing when neither key is present.
std::optional<Error> read_layer_stack(const nlohmann::json& j, ModelSpec* m);

// Qwen2-MoE's decoder_sparse_step and mlp_only_layers: dense layers among the MoE ones.
std::optional<Error> read_sparse_step_stack(const nlohmann::json& j, ModelSpec* m);
// Gives layer i the attention window `window[i]` (0: full), splitting each kind into its full and
// windowed layers (the windowed kind named `label`, or NAME_`label` for a kind other than base).
void apply_windows(ModelSpec* m, const std::vector<std::uint64_t>& window, const char* label);
// Reads a layer_types list of `n` entries, each "sliding_attention" or "full_attention", into
// `sliding` (the family's name for messages).
std::optional<Error> read_layer_types(const nlohmann::json& j, std::uint64_t n, const char* family,
                                      std::vector<bool>* sliding);

}  // namespace actmem::detail

// Internal: the training config as the answers write it (config_json.cpp), the one definition of
// each config key's name and value in an answer: the estimate's whole "config", and the layout
// keys the page's view and the advisor's layouts show.
#pragma once

#include <nlohmann/json.hpp>

#include "actmem/config/config.hpp"
#include "write/json_writer.hpp"

namespace actmem::detail {

// Every key of the estimate answer's "config" object (docs/schema.md), normalized values.
void write_config(JsonWriter& w, const TrainConfig& c);

// Which answer the layout keys are for: the view shows every layout key; an advised layout is a
// config to pass back to estimate, so it leaves out offload when false and layer_split when empty
// (their defaults) and gives the sequence it was searched at.
enum class LayoutFor { kView, kAdvise };

// The layout keys (degrees, ZeRO, batch split, schedule, recompute, offload) into the open
// object, named and valued exactly as in write_config.
void write_layout(JsonWriter& w, const TrainConfig& c, LayoutFor use);

// write_layout(kAdvise) as a JSON object, for the advise answer's tree.
nlohmann::json layout_config(const TrainConfig& c);

}  // namespace actmem::detail

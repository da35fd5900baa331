// The preset files of presets/ compiled into the engine, so native and wasm builds see the same
// data.
#pragma once

#include <string>
#include <vector>

namespace actmem {

struct PresetText {
  const char* kind;  // "models", "gpus" or "examples"
  const char* id;    // file name without .json
  const char* json;
};

const std::vector<PresetText>& all_presets();
const PresetText* find_preset(const std::string& kind, const std::string& id);
std::string preset_ids(const std::string& kind);  // "a, b, c" for error messages

}  // namespace actmem

// Command-line parsing for `actmem`: flags become one engine request (the same JSON the page
// sends).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace actmem::cli {

struct Options {
  std::string command;  // estimate | presets | explain
  bool json = false;
  bool csv = false;
  bool help = false;
  nlohmann::json request = nlohmann::json::object();
  std::string snapshot_path;  // compare: the torch.cuda.memory._snapshot() pickle
  std::string stats_path;     // compare --stats: torch.cuda.memory_stats() as JSON
};

// Returns an empty string on success, else the one-line error (the caller exits with code 2).
std::string parse_args(const std::vector<std::string>& argv, Options* out);

extern const char* const kUsage;

// A user's text or JSON value in a message: JSON-quoted, control characters escaped, invalid UTF-8
// replaced, at most ~80 characters.
std::string shown(const std::string& s);
std::string shown_value(const nlohmann::json& v);

}  // namespace actmem::cli

// Internal: a request read and checked once (request.cpp) and the table of commands that answer it
// (commands.cpp). Each command's name is written once, in kCommands; the keys only some commands
// read and the config keys a command chooses itself name commands by their Command value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actmem/config/config.hpp"
#include "actmem/config/gpu.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem::api {

// The commands in the order their names are listed to users (kCommands follows it).
enum class Command : std::uint8_t {
  kEstimate,
  kExplain,
  kTimeline,
  kFit,
  kPlan,
  kSweep,
  kView,
  kCompare,
  kAdvise,
  kData,
  kRl,
  kPresets
};

// A request after every check shared by the commands: the model, the training config (with any
// launch config merged in), the GPU, the emit target and the warnings gathered on the way.
struct Request {
  Command command = Command::kEstimate;
  std::string command_name = "estimate";
  std::string example_id;  // a worked example (presets/examples), when the request names one
  nlohmann::json example;
  ModelSpec model;
  nlohmann::json config_json;  // the config as given, launch configs merged in
  TrainConfig config;
  GpuSpec gpu;
  bool has_gpu = false;
  std::string emit;  // "", "megatron", "torchtitan" or "sac"
  std::vector<std::string> warnings;
};

// Everything but the command: example, model, launch configs, config, GPU, emit, and the config
// keys the command chooses itself.
Result<Request> read_request(const nlohmann::json& req, Command command, std::string name);

// One command: its name, whether the "not allowed" message lists it (compare is reached through a
// snapshot file, not named in a request), and its answer. The estimate and view answers, the
// largest, are streamed into `*text` when it is given (evaluate's path: no JSON tree built).
using Answer = Result<nlohmann::json> (*)(Request& r, const nlohmann::json& req, std::string* text,
                                          const std::string_view* snapshot);
struct CommandSpec {
  Command id;
  const char* name;
  bool listed;
  Answer answer;  // null for presets, answered before a request is read
};

// The table of commands (commands.cpp), in Command order.
extern const CommandSpec kCommands[];
extern const std::size_t kCommandCount;

// The command a request names (default estimate) from the table of commands, checked with the
// keys only some commands read. `name` is the command as given, for messages.
Result<const CommandSpec*> read_command(const nlohmann::json& req, bool has_snapshot,
                                        std::string* name);

// The presets command's answer: every compiled-in preset and the option lists (names.hpp).
nlohmann::json presets_listing();

}  // namespace actmem::api

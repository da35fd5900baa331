// Reads a request once for every command (request.hpp): its keys, the command, a worked example,
// the model, a launch's own configuration (Megatron-LM's arguments or a torchtitan TOML), the
// training config, the GPU and the emit target. Every check keeps its place in the order, so the
// first error a request meets is the same whichever command it names.
#include "api/request.hpp"

#include <algorithm>

#include "actmem/core/text.hpp"
#include "actmem/frameworks/emit.hpp"
#include "actmem/json_io.hpp"
#include "actmem/names/names.hpp"
#include "actmem/read/presets.hpp"
#include "actmem/setup/setup.hpp"
#include "read/json_read.hpp"

namespace actmem::api {

using nlohmann::json;

namespace {

const char* const kRequestKeys[] = {
    "command", "preset",        "model",           "model_text",     "config", "gpu",     "sweep",
    "events",  "summary",       "example",         "compact_events", "stages", "stats",   "advise",
    "emit",    "megatron_args", "torchtitan_toml", "data",           "rl",     "searches"};

constexpr unsigned bit(Command c) {
  return 1u << static_cast<unsigned>(c);
}

// A key read by one command only is refused on another: it would change nothing there, and
// whoever sent it expects it to (a silent answer). Each key names the commands that read it.
struct OnlyFor {
  const char* key;
  unsigned commands;  // bit(Command) of each command that reads it
};
const OnlyFor kOnlyFor[] = {
    {"sweep", bit(Command::kSweep)},
    {"events", bit(Command::kTimeline)},
    {"compact_events", bit(Command::kTimeline)},
    {"stages", bit(Command::kView)},
    {"searches", bit(Command::kView)},
    {"summary", bit(Command::kEstimate)},
    {"stats", bit(Command::kCompare)},
    {"advise", bit(Command::kAdvise)},
    {"data", bit(Command::kData)},
    {"rl", bit(Command::kRl)},
    {"emit", bit(Command::kEstimate) | bit(Command::kPlan) | bit(Command::kAdvise)},
    // A worked example fixes the micro-batch, sequence and policy that fit, plan and sweep
    // choose themselves (its values would go unused).
    {"example", bit(Command::kEstimate) | bit(Command::kExplain) | bit(Command::kTimeline) |
                    bit(Command::kView)}};

// Settings a command chooses itself are refused in its request's config, not ignored: plan
// searches the recompute policy and offload; sweep takes micro-batches and sequences from its
// grid; advise the whole layout.
struct Chosen {
  Command command;
  const char* key;
  const char* why;
};
const char* const kAdviseChooses = "advise chooses the layout; give the one it answers to estimate";
const Chosen kChosen[] = {
    {Command::kPlan, "recompute", "plan chooses the recompute policy; give it to estimate"},
    {Command::kPlan, "custom_keep", "plan chooses the recompute policy; give it to estimate"},
    {Command::kPlan, "offload", "plan tries with and without offload; give it to estimate"},
    {Command::kAdvise, "tp", kAdviseChooses},
    {Command::kAdvise, "sp", kAdviseChooses},
    {Command::kAdvise, "pp", kAdviseChooses},
    {Command::kAdvise, "vpp", kAdviseChooses},
    {Command::kAdvise, "cp", kAdviseChooses},
    {Command::kAdvise, "dp", kAdviseChooses},
    {Command::kAdvise, "ep", kAdviseChooses},
    {Command::kAdvise, "zero", kAdviseChooses},
    {Command::kAdvise, "micro_batch", kAdviseChooses},
    {Command::kAdvise, "micro_batches", kAdviseChooses},
    {Command::kAdvise, "grad_accum", kAdviseChooses},
    {Command::kAdvise, "schedule", kAdviseChooses},
    {Command::kAdvise, "layer_split", kAdviseChooses},
    {Command::kAdvise, "recompute", kAdviseChooses},
    {Command::kAdvise, "custom_keep", kAdviseChooses},
    {Command::kAdvise, "offload", kAdviseChooses},
    {Command::kAdvise, "reshard_after_forward",
     "FSDP's residency needs zero 3, which advise chooses; check a layout with estimate"},
    {Command::kAdvise, "dp_replicate",
     "hybrid sharding splits the dp that advise chooses; check a layout with estimate"},
    {Command::kAdvise, "accumulate_unsharded",
     "FSDP's residency needs zero 3, which advise chooses; check a layout with estimate"},
    {Command::kSweep, "seq", "sweep takes its sequences from sweep.seqs (--sweep-seqs)"},
    {Command::kSweep, "micro_batch",
     "sweep takes its micro-batches from sweep.micro_batches (--sweep-micro-batches)"}};

const CommandSpec* find_command(const std::string& name) {
  for (std::size_t i = 0; i < kCommandCount; ++i)
    if (name == kCommands[i].name) return &kCommands[i];
  return nullptr;
}

// "the timeline command", "the estimate, explain, timeline and view commands"
std::string commands_reading(unsigned mask) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kCommandCount; ++i)
    if (mask & bit(kCommands[i].id)) names.push_back(kCommands[i].name);
  std::string list = names[0];
  for (std::size_t n = 1; n < names.size(); ++n)
    list += (n + 1 == names.size() ? " and " : ", ") + names[n];
  return "the " + list + (names.size() > 1 ? " commands" : " command");
}

std::optional<Error> check_only_for(const json& req, const CommandSpec* spec,
                                    const std::string& name) {
  for (const OnlyFor& o : kOnlyFor) {
    if (!req.contains(o.key) || (spec && (o.commands & bit(spec->id)))) continue;
    return make_error("invalid_value", o.key,
                      std::string(o.key) + ": read only by " + commands_reading(o.commands) +
                          ", not by " + shown_text(name));
  }
  return std::nullopt;
}

std::string listed_commands() {
  std::string list;
  for (std::size_t i = 0; i < kCommandCount; ++i)
    if (kCommands[i].listed) list += (list.empty() ? "" : ", ") + std::string(kCommands[i].name);
  return list;
}

// A worked example (presets/examples) is a preset and a config: the request's config keys
// override the example's, verbatim otherwise (hidden_dropout included).
std::optional<Error> read_example(const json& req, Request* r) {
  if (!req.contains("example")) return std::nullopt;
  ACTMEM_TRY(detail::read_string(req["example"], "example", &r->example_id));
  if (req.contains("preset") || req.contains("model") || req.contains("model_text"))
    return make_error("invalid_value", "example",
                      "example: give either example or preset/model, not both");
  const PresetText* p = find_preset("examples", r->example_id);
  if (!p)
    return make_error("invalid_value", "example",
                      "example: '" + shown_text(r->example_id) +
                          "' is not a worked example; allowed: " + preset_ids("examples"));
  r->example = json::parse(p->json, nullptr, false);
  return std::nullopt;
}

// The model: a worked example's, a preset, our JSON or a config.json's text (exactly one).
std::optional<Error> read_model(const json& req, Request* r) {
  Result<ModelSpec> model =
      make_error("missing_key", "preset", "preset: give a model preset id or a model object");
  if (static_cast<int>(req.contains("preset")) + req.contains("model") +
          req.contains("model_text") >
      1)
    return make_error("invalid_value", "model", "model: give one of preset, model and model_text");
  if (!r->example.is_null()) {
    if (r->example.contains("preset"))
      model = model_preset(r->example["preset"].get<std::string>(), &r->warnings);
    else
      model = model_from_json(r->example["model"], "custom", &r->warnings);
  } else if (req.contains("preset")) {
    std::string id;
    ACTMEM_TRY(detail::read_string(req["preset"], "preset", &id));
    model = model_preset(id, &r->warnings);
  } else if (req.contains("model")) {
    model = model_from_json(req["model"], "custom", &r->warnings);
  } else if (req.contains("model_text")) {
    // A config.json as the user has it, text and all (the page's model box): read like a --model
    // file, so a key given twice or Python's Infinity is handled as on the command line, and a
    // syntax error names its byte in that text.
    std::string model_text;
    ACTMEM_TRY(detail::read_string(req["model_text"], "model_text", &model_text));
    auto parsed = parse_json_text(model_text, "model");
    if (!parsed.ok()) return parsed.error();
    model = model_from_json(parsed.value(), "custom", &r->warnings);
  }
  if (!model.ok()) return model.error();
  r->model = std::move(model.value());
  return std::nullopt;
}

// A launch config's keys beside the request's own config: the same setting given both ways with
// two values is a conflict.
std::optional<Error> merge_config(json* cfg, const json& keys, const char* source) {
  if (cfg->is_null()) *cfg = json::object();
  if (!cfg->is_object())
    return make_error("wrong_type", "config",
                      "config: must be a JSON object, got " + detail::kind_of(*cfg));
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    if (cfg->contains(it.key()) && (*cfg)[it.key()] != it.value())
      return make_error("invalid_value", "config." + it.key(),
                        "config." + it.key() + ": " + detail::short_dump((*cfg)[it.key()]) +
                            " conflicts with " + source + ", which gives " +
                            detail::short_dump(it.value()) + "; give one");
    (*cfg)[it.key()] = it.value();
  }
  return std::nullopt;
}

// Megatron-LM's --global-batch-size as micro-batches: global / (micro-batch x dp).
std::optional<Error> megatron_global_batch(std::uint64_t g, Request* r) {
  json& cfg = r->config_json;
  auto num = [&](const char* k) {
    // A value that is not a positive integer is the config reader's to refuse, by name.
    if (!cfg.contains(k) || !cfg[k].is_number_integer() || cfg[k] < 1) return std::uint64_t{1};
    return cfg[k].get<std::uint64_t>();
  };
  const std::uint64_t per = num("micro_batch") * num("dp");
  if (per == 0 || g % per != 0)
    return make_error("invalid_value", "megatron_args",
                      "megatron_args: --global-batch-size " + std::to_string(g) +
                          " is not a multiple of micro-batch x dp = " + std::to_string(per) +
                          " (Megatron-LM takes dp from the job's size: give config.dp)");
  const json mbs = g / per;
  for (const char* k : {"micro_batches", "grad_accum"})
    if (cfg.contains(k) && cfg[k] != mbs)
      return make_error("invalid_value", std::string("config.") + k,
                        std::string("config.") + k + ": " + detail::short_dump(cfg[k]) +
                            " conflicts with megatron_args' --global-batch-size " +
                            std::to_string(g) + " (" + mbs.dump() + " micro-batches); give one");
  if (!cfg.contains("grad_accum")) cfg["micro_batches"] = mbs;
  if (!cfg.contains("dp"))
    r->warnings.push_back(
        "megatron_args: --global-batch-size read with dp = 1 (no config.dp given; Megatron-LM "
        "takes dp from the job's size)");
  return std::nullopt;
}

std::optional<Error> read_megatron(const json& req, Request* r) {
  std::string args_text;
  ACTMEM_TRY(detail::read_string(req["megatron_args"], "megatron_args", &args_text));
  auto ma = read_megatron_args(args_text, r->model);
  if (!ma.ok()) return ma.error();
  ACTMEM_TRY(merge_config(&r->config_json, ma.value().config, "megatron_args"));
  if (const std::uint64_t g = ma.value().global_batch) ACTMEM_TRY(megatron_global_batch(g, r));
  r->warnings.insert(r->warnings.end(), ma.value().warnings.begin(), ma.value().warnings.end());
  return std::nullopt;
}

std::optional<Error> read_torchtitan(const json& req, Request* r, TorchtitanToml* titan) {
  // advise chooses the layout a TOML fixes; framework torchtitan gives its settings per layout.
  if (r->command == Command::kAdvise)
    return make_error("invalid_value", "torchtitan_toml",
                      "torchtitan_toml: advise chooses the degrees, batch split and checkpointing "
                      "a job config fixes; give config.framework torchtitan (--framework "
                      "torchtitan) for torchtitan's settings per layout");
  std::string toml;
  ACTMEM_TRY(detail::read_string(req["torchtitan_toml"], "torchtitan_toml", &toml));
  auto tt = read_torchtitan_toml(toml, r->model);
  if (!tt.ok()) return tt.error();
  json& cfg = r->config_json;
  // A micro-batch count given as grad_accum is the same setting.
  if (cfg.is_object() && cfg.contains("grad_accum") &&
      tt.value().config.contains("micro_batches") &&
      cfg["grad_accum"] != tt.value().config["micro_batches"])
    return make_error("invalid_value", "config.grad_accum",
                      "config.grad_accum: " + detail::short_dump(cfg["grad_accum"]) +
                          " conflicts with torchtitan_toml, which gives " +
                          detail::short_dump(tt.value().config["micro_batches"]) +
                          " micro-batches; give one");
  // plan chooses the checkpointing; the TOML's activation_checkpoint is what it replaces.
  if (r->command == Command::kPlan) {
    tt.value().config.erase("recompute");
    r->warnings.push_back(
        "torchtitan_toml: plan chooses the activation checkpointing; the TOML's "
        "[activation_checkpoint] is not used");
  }
  ACTMEM_TRY(merge_config(&cfg, tt.value().config, "torchtitan_toml"));
  if (cfg.contains("grad_accum")) cfg.erase("micro_batches");
  // data_parallel_shard_degree -1 (torchtitan's default): the ranks the job leaves, which the
  // TOML alone does not say.
  if (tt.value().dp_from_job && !cfg.contains("dp"))
    return make_error("missing_key", "config.dp",
                      "config.dp: torchtitan_toml's data_parallel_shard_degree -1 takes the ranks "
                      "the job leaves; give dp (--dp), the GPUs over tp x pp x cp");
  r->warnings.insert(r->warnings.end(), tt.value().warnings.begin(), tt.value().warnings.end());
  *titan = std::move(tt.value());
  return std::nullopt;
}

// A launch's own configuration (Megatron-LM's arguments, a torchtitan TOML): config keys beside
// the request's own.
std::optional<Error> read_launch_config(const json& req, Request* r,
                                        std::optional<TorchtitanToml>* titan) {
  if (req.contains("megatron_args") && req.contains("torchtitan_toml"))
    return make_error("invalid_value", "torchtitan_toml",
                      "torchtitan_toml: given with megatron_args; a run has one framework's "
                      "configuration, give one");
  if (req.contains("megatron_args")) ACTMEM_TRY(read_megatron(req, r));
  if (req.contains("torchtitan_toml")) {
    TorchtitanToml tt;
    ACTMEM_TRY(read_torchtitan(req, r, &tt));
    *titan = std::move(tt);
  }
  return std::nullopt;
}

// emit: the configuration as a framework's launch input (estimate, plan, advise).
std::optional<Error> read_emit(const json& req, Request* r) {
  if (!req.contains("emit")) return std::nullopt;
  ACTMEM_TRY(detail::read_string(req["emit"], "emit", &r->emit));
  if (r->emit != "megatron" && r->emit != "torchtitan" && r->emit != "sac")
    return make_error(
        "invalid_value", "emit",
        "emit: '" + shown_text(r->emit) + "' is not allowed; allowed: megatron, torchtitan, sac");
  return std::nullopt;
}

// The training config over a worked example's, then the request's gpu beside config.gpu.
std::optional<Error> read_config(const json& req, Request* r) {
  TrainConfig base;
  if (!r->example.is_null() && r->example.contains("config")) {
    auto ex = config_from_json(r->example["config"], base);
    if (!ex.ok()) return ex.error();
    base = ex.value();
  }
  Result<TrainConfig> cfg = base;
  if (!r->config_json.is_null()) cfg = config_from_json(r->config_json, base);
  if (!cfg.ok()) return cfg.error();
  r->config = cfg.value();
  if (!req.contains("gpu")) return std::nullopt;
  std::string id;
  ACTMEM_TRY(detail::read_string(req["gpu"], "gpu", &id));
  if (id.empty())
    return make_error("invalid_value", "gpu", "gpu: empty; allowed: " + preset_ids("gpus"));
  // The same setting twice (the request's gpu and its config's): equal is fine, different is a
  // conflict, never last-one-wins.
  if (r->config_json.is_object() && r->config_json.contains("gpu") && id != r->config.gpu_id)
    return make_error("invalid_value", "gpu",
                      "gpu: '" + shown_text(id) + "' conflicts with config.gpu '" +
                          shown_text(r->config.gpu_id) + "'; give one");
  r->config.gpu_id = id;
  return std::nullopt;
}

// The GPU: a preset, and/or a budget (config.gpu_memory_bytes) the device verdict compares with.
std::optional<Error> read_gpu(Request* r) {
  const TrainConfig& c = r->config;
  if (!c.gpu_id.empty()) {
    auto g = gpu_preset(c.gpu_id);
    if (!g.ok()) return g.error();
    r->gpu = g.value();
    r->has_gpu = true;
  }
  if (c.gpu_bytes > 0) {
    if (!r->has_gpu) r->gpu.id = r->gpu.name = "custom";
    r->gpu.memory_bytes = c.gpu_bytes;
    // A budget is the user's own figure: the device verdict compares with it as given.
    r->gpu.reported_bytes = r->gpu.driver_reserved_bytes = 0;
    r->gpu.reported_source = "config.gpu_memory_bytes (a budget)";
    r->has_gpu = true;
  }
  return std::nullopt;
}

// A torchtitan TOML with the request's other keys must still be a run torchtitan runs: the
// configuration its TOML writer accepts (emit_torchtitan.cpp, the one definition), computing in
// the TOML's mixed_precision_param where FSDP applies (fp32 elsewhere).
std::optional<Error> check_torchtitan_run(const Request& r, const TorchtitanToml& titan) {
  auto s = make_setup(r.model, r.config);
  if (!s.ok()) return std::nullopt;  // the command's own setup names the error
  const TrainConfig& n = s.value().config;
  const bool fsdp = torchtitan_fsdp(n.par);
  const std::string want = fsdp ? titan.mixed_precision : "fp32";
  if (dtype_name(n.act_dtype) != want)
    return make_error("invalid_value", "config.dtype",
                      std::string("config.dtype: ") + dtype_name(n.act_dtype) +
                          " conflicts with torchtitan_toml: " +
                          (fsdp ? "FSDP2 computes in training.mixed_precision_param, " + want
                                : std::string("without FSDP torchtitan runs fp32")) +
                          "; give one");
  if (r.command == Command::kPlan) return std::nullopt;
  auto t = torchtitan_toml(r.model, n);
  if (t.ok()) return std::nullopt;
  std::string why = t.error().message;
  const std::string prefix = "emit: torchtitan: ";
  if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
  return make_error("invalid_value", "torchtitan_toml",
                    "torchtitan_toml: with the request's other keys this is not a run torchtitan "
                    "9dec370 runs: " +
                        why);
}

std::optional<Error> check_chosen(const Request& r) {
  if (!r.config_json.is_object()) return std::nullopt;
  for (const Chosen& x : kChosen)
    if (r.command == x.command && r.config_json.contains(x.key))
      return make_error("invalid_value", std::string("config.") + x.key,
                        std::string("config.") + x.key + ": " + x.why);
  return std::nullopt;
}

}  // namespace

Result<const CommandSpec*> read_command(const json& req, bool has_snapshot, std::string* name) {
  if (!req.is_object())
    return make_error("wrong_type", "request", "request: must be a JSON object");
  ACTMEM_TRY(detail::check_keys(req, "", kRequestKeys,
                                sizeof(kRequestKeys) / sizeof(kRequestKeys[0]),
                                "unknown request key"));
  *name = "estimate";
  if (req.contains("command")) ACTMEM_TRY(detail::read_string(req["command"], "command", name));
  const CommandSpec* spec = find_command(*name);
  ACTMEM_TRY(check_only_for(req, spec, *name));
  if (spec && spec->id == Command::kCompare && !has_snapshot)
    return make_error(
        "invalid_value", "command",
        "command: compare reads a snapshot file: `actmem compare FILE` or the page's drop zone");
  if (!spec)
    return make_error(
        "invalid_value", "command",
        "command: '" + shown_text(*name) + "' is not allowed; allowed: " + listed_commands());
  return spec;
}

Result<Request> read_request(const json& req, Command command, std::string name) {
  Request r;
  r.command = command;
  r.command_name = std::move(name);
  ACTMEM_TRY(read_example(req, &r));
  ACTMEM_TRY(read_model(req, &r));
  r.config_json = req.contains("config") ? req["config"] : json();
  std::optional<TorchtitanToml> titan;  // a torchtitan TOML read: the run is checked against it
  ACTMEM_TRY(read_launch_config(req, &r, &titan));
  ACTMEM_TRY(read_emit(req, &r));
  ACTMEM_TRY(read_config(req, &r));
  ACTMEM_TRY(read_gpu(&r));
  ACTMEM_TRY(check_pattern_fits(r.model, r.config));
  if (titan) ACTMEM_TRY(check_torchtitan_run(r, *titan));
  ACTMEM_TRY(check_chosen(r));
  return r;
}

}  // namespace actmem::api

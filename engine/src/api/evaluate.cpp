// The single request -> response entry point shared by the CLI, the page (through Embind) and the
// fuzzer.
#include <cstring>
#include <optional>

#include "actmem/json_io.hpp"

#include "actmem/plan/advisor.hpp"
#include "actmem/compare/compare.hpp"
#include "actmem/frameworks/emit.hpp"
#include "actmem/names/names.hpp"
#include "actmem/plan/planner.hpp"
#include "actmem/setup/policy.hpp"
#include "actmem/read/presets.hpp"
#include "actmem/report/timeline.hpp"
#include "actmem/report/view.hpp"
#include "read/json_read.hpp"

namespace actmem {

using nlohmann::json;

namespace {

const char* const kRequestKeys[] = {
    "command", "preset", "model",   "model_text",    "config",         "gpu",
    "sweep",   "events", "summary", "example",       "compact_events", "stages",
    "stats",   "advise", "emit",    "megatron_args", "torchtitan_toml"};

json presets_listing() {
  json out = {{"ok", true},
              {"models", json::array()},
              {"gpus", json::array()},
              {"examples", json::array()}};
  for (const auto& p : all_presets()) {
    // Read as a --model file is: Mamba-Codestral's and Nemotron-H's configs hold Python's
    // Infinity, which plain JSON parsing refuses (their name and family were lost).
    auto parsed = parse_json_text(p.json, "preset");
    const json j = parsed.ok() ? parsed.value() : json();
    json item = {{"id", p.id}};
    if (j.is_object()) {
      if (j.contains("metadata") && j["metadata"].is_object()) {
        const json& md = j["metadata"];
        if (md.contains("name")) item["name"] = md["name"];
        if (md.contains("published_params")) item["published_params"] = md["published_params"];
      }
      for (const char* k : {"name", "memory_bytes", "title", "seed"})
        if (j.contains(k)) item[k] = j[k];
      // The architecture family a model preset belongs to (its model_type), for grouping.
      if (std::string(p.kind) == "models" && j.contains("model_type") &&
          j["model_type"].is_string())
        item["family"] = j["model_type"];
      if (std::string(p.kind) == "examples") item["body"] = j;  // small; the page shows its checks
    }
    out[p.kind].push_back(item);
  }
  // The option lists every client offers, from the engine's one table per enum (names.hpp).
  out["options"] = {
      {"profiles", profile_table().names()},
      {"attention", attention_table().names()},
      {"optimizers", optimizer_table().names()},
      {"schedules", schedule_table().names()},
      {"dtypes", float_dtype_table().names()},
      {"recompute", {"none", "selective", "full", "every:K", "custom", "layers:PATTERN"}},
      {"recompute_letters", std::string(kChoiceLetters)}};
  return out;
}

// A worked example's checks, each quantity resolved in the estimate answer: "tensor:ID" is a
// record of layer 0's inventory, "static.optimizer_plus_master_bytes" the seed's combined line,
// anything else a dotted path.
json example_rows(const std::string& id, const json& body, const json& est) {
  json rows = json::array();
  const json checks = body.value("checks", json::array());
  for (const json& c : checks) {
    const std::string q = c.value("quantity", "");
    json value = nullptr;
    if (q.rfind("tensor:", 0) == 0) {
      for (const json& t : est["per_layer"]["all_tensors"])
        if (t["name"] == q.substr(7)) value = t["bytes"];
    } else if (q == "static.optimizer_plus_master_bytes") {
      value = est["static"]["optimizer_bytes"].get<std::uint64_t>() +
              est["static"]["master_bytes"].get<std::uint64_t>();
    } else {
      const json* at = &est;
      std::size_t from = 0;
      while (at && from <= q.size()) {
        const std::size_t dot = q.find('.', from);
        const std::string part = q.substr(from, dot == std::string::npos ? dot : dot - from);
        at = at->is_object() && at->contains(part) ? &(*at)[part] : nullptr;
        if (dot == std::string::npos) break;
        from = dot + 1;
      }
      if (at && at->is_number_unsigned()) value = *at;
    }
    json row = {{"quantity", q},
                {"stated", c.value("stated", "")},
                {"seed_formula", c.value("seed_formula", "")},
                {"seed_formula_bytes", c.value("seed_formula_bytes", json())},
                {"engine_bytes", value},
                {"note", c.value("note", "")}};
    row["agrees"] = !value.is_null() && value == row["seed_formula_bytes"];
    rows.push_back(row);
  }
  return json{{"id", id},
              {"title", body.value("title", "")},
              {"seed", body.value("seed", "")},
              {"section", body.value("section", "")},
              {"rows", rows}};
}

}  // namespace

namespace {

// The advise object: {"num_gpus": N or "MIN:MAX", "global_batch": B, "limit": K}.
Result<AdviseRequest> advise_request(const json& req) {
  AdviseRequest r;
  if (!req.contains("advise"))
    return make_error("missing_key", "advise",
                      "advise: give {\"num_gpus\": N or \"MIN:MAX\", \"global_batch\": B}");
  const json& a = req["advise"];
  if (!a.is_object())
    return make_error(
        "wrong_type", "advise",
        "advise: must be an object with num_gpus and global_batch, got " + detail::kind_of(a));
  static const char* const kKeys[] = {"num_gpus", "global_batch", "limit"};
  ACTMEM_TRY(detail::check_keys(a, "advise", kKeys, 3));
  for (const char* k : {"num_gpus", "global_batch"})
    if (!a.contains(k))
      return make_error("missing_key", std::string("advise.") + k,
                        std::string("advise.") + k + ": required");
  const json& n = a["num_gpus"];
  if (n.is_string()) {
    // "MIN:MAX": two decimal integers, MIN <= MAX.
    const std::string t = n.get<std::string>();
    const std::size_t colon = t.find(':');
    auto digits = [](const std::string& d) {
      return !d.empty() && d.size() <= 7 &&
             std::all_of(d.begin(), d.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    };
    if (colon == std::string::npos || !digits(t.substr(0, colon)) || !digits(t.substr(colon + 1)))
      return make_error("invalid_value", "advise.num_gpus",
                        "advise.num_gpus: '" + detail::key_text(t) +
                            "' is not a count or a range; allowed: N or MIN:MAX (e.g. 8:64)");
    r.gpus_min = std::stoull(t.substr(0, colon));
    r.gpus_max = std::stoull(t.substr(colon + 1));
  } else {
    ACTMEM_TRY(detail::read_uint(n, "advise.num_gpus", &r.gpus_min));
    r.gpus_max = r.gpus_min;
  }
  if (r.gpus_min == 0 || r.gpus_min > r.gpus_max || r.gpus_max > kMaxAdviseGpus ||
      r.gpus_max - r.gpus_min >= kMaxAdviseRange)
    return make_error(
        "invalid_value", "advise.num_gpus",
        "advise.num_gpus: " + std::to_string(r.gpus_min) + ":" + std::to_string(r.gpus_max) +
            " is not allowed; allowed: 1 <= MIN <= MAX <= " + std::to_string(kMaxAdviseGpus) +
            ", at most " + std::to_string(kMaxAdviseRange) + " counts in a range");
  ACTMEM_TRY(detail::read_uint(a["global_batch"], "advise.global_batch", &r.global_batch));
  if (r.global_batch > kMaxFitMicroBatch)
    return make_error("invalid_value", "advise.global_batch",
                      "advise.global_batch: " + std::to_string(r.global_batch) +
                          " sequences is more than the supported " +
                          std::to_string(kMaxFitMicroBatch));
  if (a.contains("limit")) {
    ACTMEM_TRY(detail::read_uint(a["limit"], "advise.limit", &r.limit));
    if (r.limit > kMaxAdviseLimit)
      return make_error("invalid_value", "advise.limit",
                        "advise.limit: " + std::to_string(r.limit) + " is more than " +
                            std::to_string(kMaxAdviseLimit));
  }
  return r;
}

// A streamed answer: handed over as text when the caller takes text, parsed otherwise.
json streamed(std::string answer_text, std::string* text) {
  if (!text) return json::parse(answer_text, nullptr, false);
  *text = std::move(answer_text);
  return json();
}

// The answer to a request. The estimate and explain answers, the largest, are streamed into
// `*text` when it is given (evaluate's path: no JSON tree built); everything else is a json value.
json answer(const json& req, std::string* text, const std::string_view* snapshot = nullptr) {
  if (!req.is_object())
    return error_to_json(make_error("wrong_type", "request", "request: must be a JSON object"));
  if (auto err =
          detail::check_keys(req, "", kRequestKeys, sizeof(kRequestKeys) / sizeof(kRequestKeys[0]),
                             "unknown request key"))
    return error_to_json(*err);
  std::string command = "estimate";
  if (req.contains("command"))
    if (auto err = detail::read_string(req["command"], "command", &command))
      return error_to_json(*err);
  // A key read by one command only is refused on another: it would change nothing there, and
  // whoever sent it expects it to (a silent answer). Each key names the commands that read it.
  struct Only {
    const char* key;
    const char* commands;  // space-separated
  };
  static const Only kOnly[] = {
      {"sweep", "sweep"},
      {"events", "timeline"},
      {"compact_events", "timeline"},
      {"stages", "view"},
      {"summary", "estimate"},
      {"stats", "compare"},
      {"advise", "advise"},
      {"emit", "estimate plan advise"},
      // A worked example fixes the micro-batch, sequence and policy that
      // fit, plan and sweep choose themselves (its values would go unused).
      {"example", "estimate explain timeline view"}};
  for (const Only& o : kOnly) {
    const std::string cs = std::string(" ") + o.commands + " ";
    if (!req.contains(o.key) || cs.find(" " + command + " ") != std::string::npos) continue;
    // "the timeline command", "the estimate, explain, timeline and view commands"
    std::vector<std::string> names;
    for (std::size_t a = 1, b; (b = cs.find(' ', a)) != std::string::npos; a = b + 1)
      if (b > a) names.push_back(cs.substr(a, b - a));
    std::string list = names[0];
    for (std::size_t n = 1; n < names.size(); ++n)
      list += (n + 1 == names.size() ? " and " : ", ") + names[n];
    return error_to_json(make_error("invalid_value", o.key,
                                    std::string(o.key) + ": read only by the " + list +
                                        (names.size() > 1 ? " commands" : " command") +
                                        ", not by " + detail::key_text(command)));
  }
  if (command == "presets") {
    for (const auto& item : req.items())
      if (item.key() != "command")
        return error_to_json(
            make_error("invalid_value", detail::key_text(item.key()),
                       detail::key_text(item.key()) + ": the presets command reads no other key"));
    return presets_listing();
  }
  if (command == "compare" && !snapshot)
    return error_to_json(make_error(
        "invalid_value", "command",
        "command: compare reads a snapshot file: `actmem compare FILE` or the page's drop zone"));
  if (command != "estimate" && command != "explain" && command != "timeline" && command != "fit" &&
      command != "plan" && command != "sweep" && command != "view" && command != "compare" &&
      command != "advise")
    return error_to_json(make_error(
        "invalid_value", "command",
        "command: '" + detail::key_text(command) +
            "' is not allowed; allowed: estimate, explain, timeline, fit, plan, sweep, view, "
            "advise, presets"));

  // A worked example (presets/examples) is a preset and a config: the request's config keys
  // override the example's, verbatim otherwise (hidden_dropout included).
  std::string example_id;
  json example;
  if (req.contains("example")) {
    if (auto err = detail::read_string(req["example"], "example", &example_id))
      return error_to_json(*err);
    if (req.contains("preset") || req.contains("model") || req.contains("model_text"))
      return error_to_json(make_error("invalid_value", "example",
                                      "example: give either example or preset/model, not both"));
    const PresetText* p = find_preset("examples", example_id);
    if (!p)
      return error_to_json(
          make_error("invalid_value", "example",
                     "example: '" + detail::key_text(example_id) +
                         "' is not a worked example; allowed: " + preset_ids("examples")));
    example = json::parse(p->json, nullptr, false);
  }

  std::vector<std::string> warnings;
  Result<ModelSpec> model =
      make_error("missing_key", "preset", "preset: give a model preset id or a model object");
  if (static_cast<int>(req.contains("preset")) + req.contains("model") +
          req.contains("model_text") >
      1)
    return error_to_json(
        make_error("invalid_value", "model", "model: give one of preset, model and model_text"));
  if (!example.is_null()) {
    if (example.contains("preset"))
      model = model_preset(example["preset"].get<std::string>(), &warnings);
    else
      model = model_from_json(example["model"], "custom", &warnings);
  } else if (req.contains("preset")) {
    std::string id;
    if (auto err = detail::read_string(req["preset"], "preset", &id)) return error_to_json(*err);
    model = model_preset(id, &warnings);
  } else if (req.contains("model")) {
    model = model_from_json(req["model"], "custom", &warnings);
  } else if (req.contains("model_text")) {
    // A config.json as the user has it, text and all (the page's model box): read like a --model
    // file, so a key given twice or Python's Infinity is handled as on the command line, and a
    // syntax error names its byte in that text.
    std::string model_text;
    if (auto err = detail::read_string(req["model_text"], "model_text", &model_text))
      return error_to_json(*err);
    auto parsed = parse_json_text(model_text, "model");
    if (!parsed.ok()) return error_to_json(parsed.error());
    model = model_from_json(parsed.value(), "custom", &warnings);
  }
  if (!model.ok()) return error_to_json(model.error());

  // A launch's own configuration (Megatron-LM's arguments, a torchtitan TOML): config keys beside
  // the request's own (the same setting given both ways with two values is a conflict).
  json cfg_json = req.contains("config") ? req["config"] : json();
  if (req.contains("megatron_args") && req.contains("torchtitan_toml"))
    return error_to_json(make_error("invalid_value", "torchtitan_toml",
                                    "torchtitan_toml: given with megatron_args; a run has one "
                                    "framework's configuration, give one"));
  auto merge = [&](const json& keys, const char* source) -> std::optional<Error> {
    if (cfg_json.is_null()) cfg_json = json::object();
    if (!cfg_json.is_object())
      return make_error("wrong_type", "config",
                        "config: must be a JSON object, got " + detail::kind_of(cfg_json));
    for (auto it = keys.begin(); it != keys.end(); ++it) {
      if (cfg_json.contains(it.key()) && cfg_json[it.key()] != it.value())
        return make_error("invalid_value", "config." + it.key(),
                          "config." + it.key() + ": " + detail::short_dump(cfg_json[it.key()]) +
                              " conflicts with " + source + ", which gives " +
                              detail::short_dump(it.value()) + "; give one");
      cfg_json[it.key()] = it.value();
    }
    return std::nullopt;
  };
  if (req.contains("megatron_args")) {
    std::string args_text;
    if (auto err = detail::read_string(req["megatron_args"], "megatron_args", &args_text))
      return error_to_json(*err);
    auto ma = read_megatron_args(args_text, model.value());
    if (!ma.ok()) return error_to_json(ma.error());
    if (auto err = merge(ma.value().config, "megatron_args")) return error_to_json(*err);
    // The global batch turned into micro-batches.
    if (const std::uint64_t g = ma.value().global_batch) {
      auto num = [&](const char* k) {
        // A value that is not a positive integer is the config reader's to refuse, by name.
        if (!cfg_json.contains(k) || !cfg_json[k].is_number_integer() || cfg_json[k] < 1)
          return std::uint64_t{1};
        return cfg_json[k].get<std::uint64_t>();
      };
      const std::uint64_t per = num("micro_batch") * num("dp");
      if (per == 0 || g % per != 0)
        return error_to_json(
            make_error("invalid_value", "megatron_args",
                       "megatron_args: --global-batch-size " + std::to_string(g) +
                           " is not a multiple of micro-batch x dp = " + std::to_string(per) +
                           " (Megatron-LM takes dp from the job's size: give config.dp)"));
      const json mbs = g / per;
      for (const char* k : {"micro_batches", "grad_accum"})
        if (cfg_json.contains(k) && cfg_json[k] != mbs)
          return error_to_json(
              make_error("invalid_value", std::string("config.") + k,
                         std::string("config.") + k + ": " + detail::short_dump(cfg_json[k]) +
                             " conflicts with megatron_args' --global-batch-size " +
                             std::to_string(g) + " (" + mbs.dump() + " micro-batches); give one"));
      if (!cfg_json.contains("grad_accum")) cfg_json["micro_batches"] = mbs;
      if (!cfg_json.contains("dp"))
        warnings.push_back(
            "megatron_args: --global-batch-size read with dp = 1 (no config.dp given; Megatron-LM "
            "takes dp from the job's size)");
    }
    warnings.insert(warnings.end(), ma.value().warnings.begin(), ma.value().warnings.end());
  }
  std::optional<TorchtitanToml> titan;  // a torchtitan TOML read: the run is checked against it
  if (req.contains("torchtitan_toml")) {
    // advise chooses the layout a TOML fixes; framework torchtitan gives its settings per layout.
    if (command == "advise")
      return error_to_json(make_error(
          "invalid_value", "torchtitan_toml",
          "torchtitan_toml: advise chooses the degrees, batch split and checkpointing a job "
          "config fixes; give config.framework torchtitan (--framework torchtitan) for "
          "torchtitan's settings per layout"));
    std::string toml;
    if (auto err = detail::read_string(req["torchtitan_toml"], "torchtitan_toml", &toml))
      return error_to_json(*err);
    auto tt = read_torchtitan_toml(toml, model.value());
    if (!tt.ok()) return error_to_json(tt.error());
    // A micro-batch count given as grad_accum is the same setting.
    if (cfg_json.is_object() && cfg_json.contains("grad_accum") &&
        tt.value().config.contains("micro_batches") &&
        cfg_json["grad_accum"] != tt.value().config["micro_batches"])
      return error_to_json(make_error(
          "invalid_value", "config.grad_accum",
          "config.grad_accum: " + detail::short_dump(cfg_json["grad_accum"]) +
              " conflicts with torchtitan_toml, which gives " +
              detail::short_dump(tt.value().config["micro_batches"]) + " micro-batches; give one"));
    // plan chooses the checkpointing; the TOML's activation_checkpoint is what it replaces.
    if (command == "plan") {
      tt.value().config.erase("recompute");
      warnings.push_back(
          "torchtitan_toml: plan chooses the activation checkpointing; the TOML's "
          "[activation_checkpoint] is not used");
    }
    if (auto err = merge(tt.value().config, "torchtitan_toml")) return error_to_json(*err);
    if (cfg_json.contains("grad_accum")) cfg_json.erase("micro_batches");
    // data_parallel_shard_degree -1 (torchtitan's default): the ranks the job leaves, which the
    // TOML alone does not say.
    if (tt.value().dp_from_job && !cfg_json.contains("dp"))
      return error_to_json(make_error(
          "missing_key", "config.dp",
          "config.dp: torchtitan_toml's data_parallel_shard_degree -1 takes the ranks the job "
          "leaves; give dp (--dp), the GPUs over tp x pp x cp"));
    warnings.insert(warnings.end(), tt.value().warnings.begin(), tt.value().warnings.end());
    titan = tt.value();
  }
  // emit: the configuration as a framework's launch input (estimate, plan, advise).
  std::string emit;
  if (req.contains("emit")) {
    if (auto err = detail::read_string(req["emit"], "emit", &emit)) return error_to_json(*err);
    if (emit != "megatron" && emit != "torchtitan" && emit != "sac")
      return error_to_json(make_error("invalid_value", "emit",
                                      "emit: '" + detail::key_text(emit) +
                                          "' is not allowed; allowed: megatron, torchtitan, sac"));
  }
  auto emitted = [&](const TrainConfig& tc) -> Result<std::string> {
    if (emit == "megatron") return megatron_args(model.value(), tc);
    if (emit == "torchtitan") return torchtitan_toml(model.value(), tc);
    return sac_policy(model.value(), tc);
  };

  TrainConfig base;
  if (!example.is_null() && example.contains("config")) {
    auto ex = config_from_json(example["config"], base);
    if (!ex.ok()) return error_to_json(ex.error());
    base = ex.value();
  }
  Result<TrainConfig> cfg = base;
  if (!cfg_json.is_null()) cfg = config_from_json(cfg_json, base);
  if (!cfg.ok()) return error_to_json(cfg.error());
  TrainConfig c = cfg.value();
  if (req.contains("gpu")) {
    std::string id;
    if (auto err = detail::read_string(req["gpu"], "gpu", &id)) return error_to_json(*err);
    if (id.empty())
      return error_to_json(
          make_error("invalid_value", "gpu", "gpu: empty; allowed: " + preset_ids("gpus")));
    // The same setting twice (the request's gpu and its config's): equal is fine, different is
    // a conflict, never last-one-wins.
    if (cfg_json.is_object() && cfg_json.contains("gpu") && id != c.gpu_id)
      return error_to_json(make_error("invalid_value", "gpu",
                                      "gpu: '" + detail::key_text(id) +
                                          "' conflicts with config.gpu '" +
                                          detail::key_text(c.gpu_id) + "'; give one"));
    c.gpu_id = id;
  }
  GpuSpec gpu;
  bool has_gpu = false;
  if (!c.gpu_id.empty()) {
    auto g = gpu_preset(c.gpu_id);
    if (!g.ok()) return error_to_json(g.error());
    gpu = g.value();
    has_gpu = true;
  }
  if (c.gpu_bytes > 0) {
    if (!has_gpu) gpu.id = gpu.name = "custom";
    gpu.memory_bytes = c.gpu_bytes;
    // A budget is the user's own figure: the device verdict compares with it as given.
    gpu.reported_bytes = gpu.driver_reserved_bytes = 0;
    gpu.reported_source = "config.gpu_memory_bytes (a budget)";
    has_gpu = true;
  }
  const ModelSpec& mv = model.value();
  if (auto err = check_pattern_fits(mv, c)) return error_to_json(*err);
  // A torchtitan TOML with the request's other keys must still be a run torchtitan runs: the
  // configuration its TOML writer accepts (emit_torchtitan.cpp, the one definition), computing
  // in the TOML's mixed_precision_param where FSDP applies (fp32 elsewhere).
  if (titan) {
    auto s = make_setup(mv, c);
    if (s.ok()) {
      const TrainConfig& n = s.value().config;
      const bool fsdp = torchtitan_fsdp(n.par);
      const std::string want = fsdp ? titan->mixed_precision : "fp32";
      if (dtype_name(n.act_dtype) != want)
        return error_to_json(
            make_error("invalid_value", "config.dtype",
                       std::string("config.dtype: ") + dtype_name(n.act_dtype) +
                           " conflicts with torchtitan_toml: " +
                           (fsdp ? "FSDP2 computes in training.mixed_precision_param, " + want
                                 : std::string("without FSDP torchtitan runs fp32")) +
                           "; give one"));
      if (command != "plan") {
        auto t = torchtitan_toml(mv, n);
        if (!t.ok()) {
          std::string why = t.error().message;
          const std::string prefix = "emit: torchtitan: ";
          if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
          return error_to_json(
              make_error("invalid_value", "torchtitan_toml",
                         "torchtitan_toml: with the request's other keys this is not a run "
                         "torchtitan 9dec370 runs: " +
                             why));
        }
      }
    }
  }
  // Settings a command chooses itself are refused in its request's config, not ignored: plan
  // searches the recompute policy and offload; sweep takes micro-batches and sequences from its
  // grid.
  struct Chosen {
    const char* command;
    const char* key;
    const char* why;
  };
  static const char* const kAdviseChooses =
      "advise chooses the layout; give the one it answers to estimate";
  static const Chosen kChosen[] = {
      {"plan", "recompute", "plan chooses the recompute policy; give it to estimate"},
      {"plan", "custom_keep", "plan chooses the recompute policy; give it to estimate"},
      {"plan", "offload", "plan tries with and without offload; give it to estimate"},
      {"advise", "tp", kAdviseChooses},
      {"advise", "sp", kAdviseChooses},
      {"advise", "pp", kAdviseChooses},
      {"advise", "vpp", kAdviseChooses},
      {"advise", "cp", kAdviseChooses},
      {"advise", "dp", kAdviseChooses},
      {"advise", "ep", kAdviseChooses},
      {"advise", "zero", kAdviseChooses},
      {"advise", "micro_batch", kAdviseChooses},
      {"advise", "micro_batches", kAdviseChooses},
      {"advise", "grad_accum", kAdviseChooses},
      {"advise", "schedule", kAdviseChooses},
      {"advise", "layer_split", kAdviseChooses},
      {"advise", "recompute", kAdviseChooses},
      {"advise", "custom_keep", kAdviseChooses},
      {"advise", "offload", kAdviseChooses},
      {"advise", "reshard_after_forward",
       "FSDP's residency needs zero 3, which advise chooses; check a layout with estimate"},
      {"advise", "dp_replicate",
       "hybrid sharding splits the dp that advise chooses; check a layout with estimate"},
      {"advise", "accumulate_unsharded",
       "FSDP's residency needs zero 3, which advise chooses; check a layout with estimate"},
      {"sweep", "seq", "sweep takes its sequences from sweep.seqs (--sweep-seqs)"},
      {"sweep", "micro_batch",
       "sweep takes its micro-batches from sweep.micro_batches (--sweep-micro-batches)"}};
  if (cfg_json.is_object())
    for (const Chosen& x : kChosen)
      if (command == x.command && cfg_json.contains(x.key))
        return error_to_json(make_error("invalid_value", std::string("config.") + x.key,
                                        std::string("config.") + x.key + ": " + x.why));
  if (command == "advise") {
    // torchtitan's defaults follow the layout, which advise sets per layout (advisor.cpp); the
    // keys it sets that way cannot also be given.
    if (c.framework == Framework::kTorchtitan)
      for (const char* k : {"ddp_bucket_view", "grad_bucket_bytes"})
        if (cfg_json.is_object() && cfg_json.contains(k))
          return error_to_json(make_error(
              "invalid_value", std::string("config.") + k,
              std::string("config.") + k +
                  ": under framework torchtitan advise sets it per layout (DDP's buckets where "
                  "dp_shard x cp = 1); check a layout with estimate"));
    if (emit == "torchtitan" && c.framework != Framework::kTorchtitan)
      return error_to_json(make_error(
          "invalid_value", "emit",
          "emit: torchtitan on advise needs config.framework torchtitan: its FSDP, precision and "
          "residency follow each layout, which the search then sets"));
    if (!has_gpu)
      return error_to_json(make_error(
          "missing_key", "config.gpu",
          "config.gpu: advise needs a GPU preset or a budget (gpu_memory_bytes); allowed GPUs: " +
              preset_ids("gpus")));
    auto r = advise_request(req);
    if (!r.ok()) return error_to_json(r.error());
    // Emitted layouts are ones the framework can run: no offload variants (neither Megatron-LM
    // nor a checkpointing policy says it).
    r.value().launcher = emit == "megatron"     ? PolicyFamily::kMegatronLm
                         : emit == "torchtitan" ? PolicyFamily::kTorchtitan
                         : emit == "sac"        ? PolicyFamily::kMegatronLm
                                                : PolicyFamily::kAny;
    auto a = advise(mv, c, gpu, r.value());
    if (!a.ok()) return error_to_json(a.error());
    json out = advice_to_json(a.value());
    if (!emit.empty())
      for (std::size_t i = 0; i < a.value().layouts.size(); ++i) {
        auto t = emitted(a.value().layouts[i].config);
        if (!t.ok()) return error_to_json(t.error());
        out["layouts"][i]["emit"] = t.value();
      }
    if (!warnings.empty()) out["warnings"] = warnings;
    return out;
  }
  if (command == "fit" || command == "plan") {
    if (!has_gpu)
      return error_to_json(
          make_error("missing_key", "config.gpu",
                     "config.gpu: " + command +
                         " needs a GPU preset or a budget (gpu_memory_bytes); allowed GPUs: " +
                         preset_ids("gpus")));
    if (command == "fit") {
      auto f = fit(mv, c, gpu);
      if (!f.ok()) return error_to_json(f.error());
      json out = fit_to_json(f.value());
      if (!warnings.empty()) out["warnings"] = warnings;
      return out;
    }
    auto p = plan(mv, c, gpu,
                  emit == "megatron"     ? PolicyFamily::kMegatronLm
                  : emit == "torchtitan" ? PolicyFamily::kTorchtitan
                                         : PolicyFamily::kAny);
    if (!p.ok()) return error_to_json(p.error());
    json out = plan_to_json(p.value());
    if (!emit.empty()) {
      // The chosen policy on the request's config.
      if (!p.value().found)
        return error_to_json(make_error(
            "invalid_value", "emit", "emit: no recompute policy fits, so there is none to emit"));
      TrainConfig chosen = c;
      if (!parse_recompute(p.value().best.policy, &chosen.recompute))
        return error_to_json(
            make_error("invalid_value", "emit", "emit: the chosen policy cannot be written back"));
      chosen.recompute.offload = p.value().best.offload_all;
      auto s = make_setup(mv, chosen);
      if (!s.ok()) return error_to_json(s.error());
      auto t = emitted(s.value().config);
      if (!t.ok()) return error_to_json(t.error());
      out["emit"] = t.value();
    }
    if (!warnings.empty()) out["warnings"] = warnings;
    return out;
  }
  if (command == "sweep") {
    std::vector<std::uint64_t> bs{1, 2, 4, 8, 16}, ss{512, 1024, 2048, 4096, 8192, 16384, 32768};
    if (req.contains("sweep")) {
      const json& sw = req["sweep"];
      if (!sw.is_object())
        return error_to_json(make_error("wrong_type", "sweep",
                                        "sweep: must be an object with micro_batches and seqs"));
      static const char* const kSweepKeys[] = {"micro_batches", "seqs"};
      if (auto err = detail::check_keys(sw, "sweep", kSweepKeys, 2)) return error_to_json(*err);
      for (const char* key : {"micro_batches", "seqs"}) {
        if (!sw.contains(key)) continue;
        const json& a = sw[key];
        const std::string field = std::string("sweep.") + key;
        if (!a.is_array() || a.empty() || a.size() > 16)
          return error_to_json(make_error(
              "wrong_type", field, field + ": must be an array of 1 to 16 positive integers"));
        std::vector<std::uint64_t>& dst = std::string(key) == "seqs" ? ss : bs;
        dst.clear();
        for (std::size_t i = 0; i < a.size(); ++i) {
          std::uint64_t v = 0;
          if (auto err = detail::read_uint(a[i], field + "[" + std::to_string(i) + "]", &v))
            return error_to_json(*err);
          // fit's search bounds: a micro-batch past 2^20 or a sequence past 2^30 tokens is
          // beyond any GPU and overflowed a cell's products to -1.
          const std::uint64_t cap = std::string(key) == "seqs" ? kMaxFitSeq : kMaxFitMicroBatch;
          if (v > cap)
            return error_to_json(
                make_error("invalid_value", field + "[" + std::to_string(i) + "]",
                           field + "[" + std::to_string(i) + "]: " + std::to_string(v) +
                               " is more than the supported " + std::to_string(cap)));
          dst.push_back(v);
        }
      }
    }
    auto s = sweep(mv, c, bs, ss);
    if (!s.ok()) return error_to_json(s.error());
    json out = sweep_to_json(s.value());
    if (has_gpu) out["budget_bytes"] = gpu.memory_bytes;
    return out;
  }
  if (command == "view") {
    // stages: "worst" (default: the most loaded stage's step) or "all".
    ViewOptions o;
    if (req.contains("stages")) {
      std::string which;
      if (auto err = detail::read_string(req["stages"], "stages", &which))
        return error_to_json(*err);
      if (which != "worst" && which != "all")
        return error_to_json(make_error(
            "invalid_value", "stages",
            "stages: '" + detail::key_text(which) + "' is not allowed; allowed: worst, all"));
      o.all_stages = which == "all";
    }
    auto v = make_view(mv, c, has_gpu ? &gpu : nullptr, o);
    if (!v.ok()) return error_to_json(v.error());
    View& view = v.value();
    view.est.warnings.insert(view.est.warnings.begin(), warnings.begin(), warnings.end());
    const std::string est = estimate_text(view.est);
    // A worked example's quantities are paths into the estimate answer: resolved on its tree.
    const std::string rows =
        example.is_null()
            ? std::string()
            : example_rows(example_id, example, json::parse(est, nullptr, false)).dump();
    return streamed(view_text(view, est, rows), text);
  }
  if (command == "compare") {
    // The run's own peaks, when given: torch.cuda.memory_stats()'s aggregate peaks.
    MeasuredStats ms;
    if (req.contains("stats")) {
      const json& st = req["stats"];
      if (!st.is_object())
        return error_to_json(make_error("wrong_type", "stats",
                                        "stats: must be the object torch.cuda.memory_stats() "
                                        "returns, got " +
                                            detail::kind_of(st)));
      for (auto [k, out] :
           {std::pair<const char*, Bytes*>{"allocated_bytes.all.peak", &ms.allocated_peak},
            {"reserved_bytes.all.peak", &ms.reserved_peak}}) {
        if (!st.contains(k)) continue;
        if (auto err = detail::read_uint(st[k], std::string("stats.") + k, out, true))
          return error_to_json(*err);
        if (*out > kMaxBytes)
          return error_to_json(make_error("invalid_value", std::string("stats.") + k,
                                          std::string("stats.") + k + ": exceeds 2^63-1"));
      }
      if (!st.contains("allocated_bytes.all.peak") && !st.contains("reserved_bytes.all.peak"))
        return error_to_json(
            make_error("missing_key", "stats",
                       "stats: neither allocated_bytes.all.peak nor reserved_bytes.all.peak; give "
                       "torch.cuda.memory_stats() as JSON"));
    }
    auto est = estimate(mv, c, has_gpu ? &gpu : nullptr, true);
    if (!est.ok()) return error_to_json(est.error());
    auto cmp = compare_snapshot(est.value(), *snapshot, ms);
    if (!cmp.ok()) return error_to_json(cmp.error());
    return compare_to_json(cmp.value());
  }
  // summary: true answers with the headline numbers only (the page's side-by-side comparisons).
  bool summary = false;
  if (req.contains("summary"))
    if (auto err = detail::read_bool(req["summary"], "summary", &summary))
      return error_to_json(*err);
  if (!emit.empty()) {
    // The configuration as given (normalized by its setup), written for the framework.
    auto s = make_setup(mv, c);
    if (!s.ok()) return error_to_json(s.error());
    auto t = emitted(s.value().config);
    if (!t.ok()) return error_to_json(t.error());
    json out = {{"ok", true}, {"emit", emit}, {"text", t.value()}};
    if (!warnings.empty()) out["warnings"] = warnings;
    return out;
  }
  auto est = estimate(mv, c, has_gpu ? &gpu : nullptr, !summary && command != "timeline");
  if (!est.ok()) return error_to_json(est.error());
  if (summary && command == "estimate") return streamed(summary_text(est.value()), text);
  Estimate& e = est.value();
  e.warnings.insert(e.warnings.begin(), warnings.begin(), warnings.end());
  if (command == "timeline") {
    // events: "all" (default), "worst" (only the most loaded stage's list: what a chart needs),
    // "none".
    std::string which = "all";
    if (req.contains("events"))
      if (auto err = detail::read_string(req["events"], "events", &which))
        return error_to_json(*err);
    if (which != "all" && which != "worst" && which != "worst_ops" && which != "all_ops" &&
        which != "none")
      return error_to_json(
          make_error("invalid_value", "events",
                     "events: '" + detail::key_text(which) +
                         "' is not allowed; allowed: all, all_ops, worst, worst_ops, none"));
    // The estimate already simulated every stage's peak, so it knows the most loaded one.
    const bool worst = which == "worst" || which == "worst_ops";
    const bool per_op = which == "worst_ops" || which == "all_ops";
    // The events written out are bounded by kMaxTimelineEvents (simulate); each stage says how
    // many it has and whether its list was cut.
    auto tl =
        simulate(e, which != "none", worst ? static_cast<std::int64_t>(e.worst_stage) : -1, per_op);
    if (!tl.ok()) return error_to_json(tl.error());
    bool compact = false;
    if (req.contains("compact_events"))
      if (auto err = detail::read_bool(req["compact_events"], "compact_events", &compact))
        return error_to_json(*err);
    json out = timeline_to_json(e, tl.value(), compact);
    if (!e.warnings.empty()) out["warnings"] = e.warnings;
    return out;
  }
  return streamed(estimate_text(e), text);
}

}  // namespace

json evaluate_json(const json& req) {
  return answer(req, nullptr);
}

json compare_json(const json& req, std::string_view snapshot) {
  if (req.is_object() && req.value("command", std::string()) != "compare")
    return error_to_json(make_error("invalid_value", "command",
                                    "command: a snapshot is read by the compare command only"));
  return answer(req, nullptr, &snapshot);
}

std::string terminal_safe_json(std::string text) {
  auto needs = [](unsigned char c, unsigned char next) {
    return c == 0x7F || (c == 0xC2 && next >= 0x80 && next <= 0x9F);
  };
  // The usual case has neither byte: two memchr scans (vectorized) and no copy.
  bool any = std::memchr(text.data(), 0x7F, text.size()) != nullptr;
  for (const char *p = text.data(), *end = text.data() + text.size(); !any && p < end;) {
    p = static_cast<const char*>(std::memchr(p, 0xC2, static_cast<std::size_t>(end - p)));
    if (!p) break;
    any = p + 1 < end && needs(0xC2, static_cast<unsigned char>(p[1]));
    ++p;
  }
  if (!any) return text;
  std::string out;
  out.reserve(text.size() + 16);
  static const char* const kHex = "0123456789abcdef";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (!needs(c, next)) {
      out += text[i];
      continue;
    }
    const unsigned cp = c == 0x7F ? 0x7F : next;  // C2 xx encodes U+00xx
    out += "\\u00";
    out += kHex[cp >> 4];
    out += kHex[cp & 15];
    if (c == 0xC2) ++i;
  }
  return out;
}

std::string evaluate(const std::string& request_text) {
  auto j = parse_json_text(request_text, "request");
  if (!j.ok()) return terminal_safe_json(error_to_json(j.error()).dump());
  std::string text;
  json out = answer(j.value(), &text);
  if (!text.empty()) return terminal_safe_json(std::move(text));
  return terminal_safe_json(out.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace actmem

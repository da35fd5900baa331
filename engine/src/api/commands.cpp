// The table of commands (request.hpp) and each command's answer: every command runs on the one
// Request read by request.cpp and answers with its writer (write/); estimate and view stream
// their text when the caller takes text.
#include <algorithm>

#include "actmem/compare/compare.hpp"
#include "actmem/core/limits.hpp"
#include "actmem/frameworks/emit.hpp"
#include "actmem/json_io.hpp"
#include "actmem/names/names.hpp"
#include "actmem/plan/advisor.hpp"
#include "actmem/plan/data.hpp"
#include "actmem/plan/planner.hpp"
#include "actmem/plan/rl.hpp"
#include "actmem/read/presets.hpp"
#include "actmem/report/timeline.hpp"
#include "actmem/report/view.hpp"
#include "actmem/setup/policy.hpp"
#include "api/request.hpp"
#include "read/data_read.hpp"
#include "read/json_read.hpp"
#include "read/rl_read.hpp"

namespace actmem::api {

using nlohmann::json;

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
      {"frameworks", framework_table().names()},
      {"shard_groups", shard_group_table().names()},
      {"float8", float8_table().names()},
      {"optimizer_impls", optimizer_impl_table().names()},
      {"config_keys", config_keys()},
      {"recompute", {"none", "selective", "full", "every:K", "custom", "layers:PATTERN"}},
      {"recompute_letters", std::string(kChoiceLetters)}};
  return out;
}

namespace {

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
                        "advise.num_gpus: '" + shown_text(t) +
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

// The configuration written as the request's emit target asks.
Result<std::string> emitted(const Request& r, const TrainConfig& tc) {
  if (r.emit == "megatron") return megatron_args(r.model, tc);
  if (r.emit == "torchtitan") return torchtitan_toml(r.model, tc);
  return sac_policy(r.model, tc);
}

PolicyFamily launcher_family(const std::string& emit) {
  return emit == "megatron"     ? PolicyFamily::kMegatronLm
         : emit == "torchtitan" ? PolicyFamily::kTorchtitan
                                : PolicyFamily::kAny;
}

std::optional<Error> need_gpu(const Request& r) {
  if (r.has_gpu) return std::nullopt;
  return make_error("missing_key", "config.gpu",
                    "config.gpu: " + r.command_name +
                        " needs a GPU preset or a budget (gpu_memory_bytes); allowed GPUs: " +
                        preset_ids("gpus"));
}

json with_warnings(json out, const std::vector<std::string>& warnings) {
  if (!warnings.empty()) out["warnings"] = warnings;
  return out;
}

Result<json> answer_advise(Request& r, const json& req, std::string*, const std::string_view*) {
  const TrainConfig& c = r.config;
  // torchtitan's defaults follow the layout, which advise sets per layout (advisor.cpp); the keys
  // it sets that way cannot also be given.
  if (c.framework == Framework::kTorchtitan)
    for (const char* k : {"ddp_bucket_view", "grad_bucket_bytes"})
      if (r.config_json.is_object() && r.config_json.contains(k))
        return make_error("invalid_value", std::string("config.") + k,
                          std::string("config.") + k +
                              ": under framework torchtitan advise sets it per layout (DDP's "
                              "buckets where dp_shard x cp = 1); check a layout with estimate");
  if (r.emit == "torchtitan" && c.framework != Framework::kTorchtitan)
    return make_error("invalid_value", "emit",
                      "emit: torchtitan on advise needs config.framework torchtitan: its FSDP, "
                      "precision and residency follow each layout, which the search then sets");
  ACTMEM_TRY(need_gpu(r));
  auto ar = advise_request(req);
  if (!ar.ok()) return ar.error();
  // Emitted layouts are ones the framework can run: no offload variants (neither Megatron-LM nor
  // a checkpointing policy says it); sac's layouts are Megatron-LM's.
  ar.value().launcher = r.emit == "sac" ? PolicyFamily::kMegatronLm : launcher_family(r.emit);
  auto a = advise(r.model, c, r.gpu, ar.value());
  if (!a.ok()) return a.error();
  json out = advice_to_json(a.value());
  if (!r.emit.empty())
    for (std::size_t i = 0; i < a.value().layouts.size(); ++i) {
      auto t = emitted(r, a.value().layouts[i].config);
      if (!t.ok()) return t.error();
      out["layouts"][i]["emit"] = t.value();
    }
  return with_warnings(std::move(out), r.warnings);
}

Result<json> answer_fit(Request& r, const json&, std::string*, const std::string_view*) {
  ACTMEM_TRY(need_gpu(r));
  auto f = fit(r.model, r.config, r.gpu);
  if (!f.ok()) return f.error();
  return with_warnings(fit_to_json(f.value()), r.warnings);
}

Result<json> answer_plan(Request& r, const json&, std::string*, const std::string_view*) {
  ACTMEM_TRY(need_gpu(r));
  auto p = plan(r.model, r.config, r.gpu, launcher_family(r.emit));
  if (!p.ok()) return p.error();
  json out = plan_to_json(p.value());
  if (!r.emit.empty()) {
    // The chosen policy on the request's config.
    if (!p.value().found)
      return make_error("invalid_value", "emit",
                        "emit: no recompute policy fits, so there is none to emit");
    TrainConfig chosen = r.config;
    if (!parse_recompute(p.value().best.policy, &chosen.recompute))
      return make_error("invalid_value", "emit", "emit: the chosen policy cannot be written back");
    chosen.recompute.offload = p.value().best.offload_all;
    auto s = make_setup(r.model, chosen);
    if (!s.ok()) return s.error();
    auto t = emitted(r, s.value().config);
    if (!t.ok()) return t.error();
    out["emit"] = t.value();
  }
  return with_warnings(std::move(out), r.warnings);
}

// sweep.micro_batches or sweep.seqs: 1 to 16 positive integers within fit's search bounds (a
// micro-batch past 2^20 or a sequence past 2^30 tokens is beyond any GPU and overflowed a cell's
// products to -1).
std::optional<Error> read_sweep_axis(const json& sw, const char* key,
                                     std::vector<std::uint64_t>* dst) {
  if (!sw.contains(key)) return std::nullopt;
  const json& a = sw[key];
  const std::string field = std::string("sweep.") + key;
  if (!a.is_array() || a.empty() || a.size() > 16)
    return make_error("wrong_type", field,
                      field + ": must be an array of 1 to 16 positive integers");
  const std::uint64_t cap = std::string(key) == "seqs" ? kMaxFitSeq : kMaxFitMicroBatch;
  dst->clear();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    std::uint64_t v = 0;
    ACTMEM_TRY(detail::read_uint(a[i], at, &v));
    if (v > cap)
      return make_error(
          "invalid_value", at,
          at + ": " + std::to_string(v) + " is more than the supported " + std::to_string(cap));
    dst->push_back(v);
  }
  return std::nullopt;
}

Result<json> answer_sweep(Request& r, const json& req, std::string*, const std::string_view*) {
  std::vector<std::uint64_t> bs{1, 2, 4, 8, 16}, ss{512, 1024, 2048, 4096, 8192, 16384, 32768};
  if (req.contains("sweep")) {
    const json& sw = req["sweep"];
    if (!sw.is_object())
      return make_error("wrong_type", "sweep",
                        "sweep: must be an object with micro_batches and seqs");
    static const char* const kSweepKeys[] = {"micro_batches", "seqs"};
    ACTMEM_TRY(detail::check_keys(sw, "sweep", kSweepKeys, 2));
    ACTMEM_TRY(read_sweep_axis(sw, "micro_batches", &bs));
    ACTMEM_TRY(read_sweep_axis(sw, "seqs", &ss));
  }
  auto s = sweep(r.model, r.config, bs, ss);
  if (!s.ok()) return s.error();
  json out = sweep_to_json(s.value());
  if (r.has_gpu) out["budget_bytes"] = r.gpu.memory_bytes;
  return out;
}

Result<json> answer_view(Request& r, const json& req, std::string* text, const std::string_view*) {
  // stages: "worst" (default: the most loaded stage's step) or "all".
  ViewOptions o;
  if (req.contains("stages")) {
    std::string which;
    ACTMEM_TRY(detail::read_string(req["stages"], "stages", &which));
    if (which != "worst" && which != "all")
      return make_error("invalid_value", "stages",
                        "stages: '" + shown_text(which) + "' is not allowed; allowed: worst, all");
    o.all_stages = which == "all";
  }
  if (req.contains("searches"))
    ACTMEM_TRY(detail::read_bool(req["searches"], "searches", &o.searches));
  auto v = make_view(r.model, r.config, r.has_gpu ? &r.gpu : nullptr, o);
  if (!v.ok()) return v.error();
  View& view = v.value();
  view.est.warnings.insert(view.est.warnings.begin(), r.warnings.begin(), r.warnings.end());
  const std::string est = estimate_text(view.est);
  // A worked example's quantities are paths into the estimate answer: resolved on its tree.
  const std::string rows =
      r.example.is_null()
          ? std::string()
          : example_rows(r.example_id, r.example, json::parse(est, nullptr, false)).dump();
  return streamed(view_text(view, est, rows), text);
}

// The run's own peaks, when given: torch.cuda.memory_stats()'s aggregate peaks.
std::optional<Error> read_stats(const json& req, MeasuredStats* ms) {
  if (!req.contains("stats")) return std::nullopt;
  const json& st = req["stats"];
  if (!st.is_object())
    return make_error(
        "wrong_type", "stats",
        "stats: must be the object torch.cuda.memory_stats() returns, got " + detail::kind_of(st));
  for (auto [k, out] :
       {std::pair<const char*, Bytes*>{"allocated_bytes.all.peak", &ms->allocated_peak},
        {"reserved_bytes.all.peak", &ms->reserved_peak}}) {
    if (!st.contains(k)) continue;
    ACTMEM_TRY(detail::read_uint(st[k], std::string("stats.") + k, out, true));
    if (*out > kMaxBytes)
      return make_error("invalid_value", std::string("stats.") + k,
                        std::string("stats.") + k + ": exceeds 2^63-1");
  }
  if (!st.contains("allocated_bytes.all.peak") && !st.contains("reserved_bytes.all.peak"))
    return make_error("missing_key", "stats",
                      "stats: neither allocated_bytes.all.peak nor reserved_bytes.all.peak; give "
                      "torch.cuda.memory_stats() as JSON");
  return std::nullopt;
}

Result<json> answer_compare(Request& r, const json& req, std::string*,
                            const std::string_view* snapshot) {
  MeasuredStats ms;
  ACTMEM_TRY(read_stats(req, &ms));
  auto est = estimate(r.model, r.config, r.has_gpu ? &r.gpu : nullptr, true);
  if (!est.ok()) return est.error();
  auto cmp = compare_snapshot(est.value(), *snapshot, ms);
  if (!cmp.ok()) return cmp.error();
  return compare_to_json(cmp.value());
}

// The configuration as given (normalized by its setup), written for the framework.
Result<json> answer_emit(Request& r) {
  auto s = make_setup(r.model, r.config);
  if (!s.ok()) return s.error();
  auto t = emitted(r, s.value().config);
  if (!t.ok()) return t.error();
  return with_warnings(json{{"ok", true}, {"emit", r.emit}, {"text", t.value()}}, r.warnings);
}

// estimate and explain (the same answer; the clients show different parts), with summary: true
// the headline numbers only (the page's side-by-side comparisons), with emit the launch config.
Result<json> answer_estimate(Request& r, const json& req, std::string* text,
                             const std::string_view*) {
  bool summary = false;
  if (req.contains("summary")) ACTMEM_TRY(detail::read_bool(req["summary"], "summary", &summary));
  if (!r.emit.empty()) return answer_emit(r);
  auto est = estimate(r.model, r.config, r.has_gpu ? &r.gpu : nullptr, !summary);
  if (!est.ok()) return est.error();
  if (summary && r.command == Command::kEstimate) return streamed(summary_text(est.value()), text);
  Estimate& e = est.value();
  e.warnings.insert(e.warnings.begin(), r.warnings.begin(), r.warnings.end());
  return streamed(estimate_text(e), text);
}

Result<json> answer_timeline(Request& r, const json& req, std::string*, const std::string_view*) {
  auto est = estimate(r.model, r.config, r.has_gpu ? &r.gpu : nullptr, false);
  if (!est.ok()) return est.error();
  Estimate& e = est.value();
  e.warnings.insert(e.warnings.begin(), r.warnings.begin(), r.warnings.end());
  // events: "all" (default), "worst" (only the most loaded stage's list: what a chart needs),
  // "none"; the _ops forms list every op instead of every layer.
  std::string which = "all";
  if (req.contains("events")) ACTMEM_TRY(detail::read_string(req["events"], "events", &which));
  if (which != "all" && which != "worst" && which != "worst_ops" && which != "all_ops" &&
      which != "none")
    return make_error("invalid_value", "events",
                      "events: '" + shown_text(which) +
                          "' is not allowed; allowed: all, all_ops, worst, worst_ops, none");
  // The estimate already simulated every stage's peak, so it knows the most loaded one.
  const bool worst = which == "worst" || which == "worst_ops";
  const bool per_op = which == "worst_ops" || which == "all_ops";
  // The events written out are bounded by kMaxTimelineEvents (simulate); each stage says how
  // many it has and whether its list was cut.
  auto tl =
      simulate(e, which != "none", worst ? static_cast<std::int64_t>(e.worst_stage) : -1, per_op);
  if (!tl.ok()) return tl.error();
  bool compact = false;
  if (req.contains("compact_events"))
    ACTMEM_TRY(detail::read_bool(req["compact_events"], "compact_events", &compact));
  json out = timeline_to_json(e, tl.value(), compact);
  if (!e.warnings.empty()) out["warnings"] = e.warnings;
  return out;
}

// data: sequence lengths batched as the run batches them (data.hpp), judged on the GPU. The
// config's seq, when given, is the length sequences are cut to (the tokenizer's max_length).
Result<json> answer_data(Request& r, const json& req, std::string*, const std::string_view*) {
  ACTMEM_TRY(need_gpu(r));
  if (!req.contains("data"))
    return make_error("missing_key", "data",
                      "data: give {\"lengths\": [...] or a lengths file's text, \"batching\": "
                      "\"padded\"|\"padding_free\"|\"token_budget\"}");
  auto d = detail::read_data_spec(req["data"]);
  if (!d.ok()) return d.error();
  if (r.config_json.is_object() && r.config_json.contains("seq"))
    d.value().truncate_to = r.config.seq;
  auto a = data_peaks(r.model, r.config, r.gpu, d.value());
  if (!a.ok()) return a.error();
  return with_warnings(data_to_json(a.value()), r.warnings);
}

// rl: an RL step's phases on shared GPUs (rl.hpp). The actor is verl's FSDP actor (framework
// verl fills the keys the config leaves out) unless the config names another framework, or TRL's
// (rl.framework trl: transformers' Trainer with TRL's keys; read/rl.cpp rl_actor_config).
Result<json> answer_rl(Request& r, const json& req, std::string*, const std::string_view*) {
  ACTMEM_TRY(need_gpu(r));
  auto spec = detail::read_rl_spec(req.contains("rl") ? req["rl"] : json());
  if (!spec.ok()) return spec.error();
  auto actor = detail::rl_actor_config(r.model, r.config_json, r.config, spec.value());
  if (!actor.ok()) return actor.error();
  auto a = rl_step(r.model, actor.value(), r.gpu, spec.value());
  if (!a.ok()) return a.error();
  a.value().framework_defaults = actor.value().framework_filled;
  return with_warnings(rl_to_json(a.value()), r.warnings);
}

}  // namespace

const CommandSpec kCommands[] = {{Command::kEstimate, "estimate", true, answer_estimate},
                                 {Command::kExplain, "explain", true, answer_estimate},
                                 {Command::kTimeline, "timeline", true, answer_timeline},
                                 {Command::kFit, "fit", true, answer_fit},
                                 {Command::kPlan, "plan", true, answer_plan},
                                 {Command::kSweep, "sweep", true, answer_sweep},
                                 {Command::kView, "view", true, answer_view},
                                 {Command::kCompare, "compare", false, answer_compare},
                                 {Command::kAdvise, "advise", true, answer_advise},
                                 {Command::kData, "data", true, answer_data},
                                 {Command::kRl, "rl", true, answer_rl},
                                 {Command::kPresets, "presets", true, nullptr}};
const std::size_t kCommandCount = sizeof(kCommands) / sizeof(kCommands[0]);

}  // namespace actmem::api

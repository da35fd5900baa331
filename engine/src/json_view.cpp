// Writes the page's view (view.hpp) as JSON: the "view" command's answer, everything the page draws
// (docs/schema.md, "The view answer"). Numbers only; the page formats them.
#include "actmem/json_io.hpp"
#include "actmem/names.hpp"
#include "actmem/view.hpp"

namespace actmem {

using nlohmann::json;

namespace {

json suggestion_json(const Suggestion& s) {
  json change = json::object();
  if (s.micro_batch) change["micro_batch"] = *s.micro_batch;
  if (s.dp) change["dp"] = *s.dp;
  if (s.zero) change["zero"] = *s.zero;
  if (s.recompute) change["recompute"] = *s.recompute;
  if (s.offload) change["offload"] = *s.offload;
  return json{{"kind", s.kind},
              {"change", change},
              {"peak_bytes", s.peak_bytes},
              {"fits", s.fits},
              {"recompute_overhead_pct", s.recompute_overhead_pct}};
}

// A stage's series as parallel arrays (compact, and what a polyline needs), each point's event in
// words for its tooltip.
json series_json(const StageSeries& s, const Estimate& e, bool chunks) {
  json idx = json::array(), live = json::array(), low = json::array(), act = json::array(),
       rec = json::array(), trans = json::array(), regen = json::array(), words = json::array();
  for (const SeriesPoint& p : s.points) {
    idx.push_back(p.index);
    live.push_back(p.bytes.live);
    low.push_back(p.low);
    act.push_back(p.bytes.activations);
    rec.push_back(p.bytes.recompute);
    trans.push_back(p.bytes.transients);
    regen.push_back(p.recompute);
    words.push_back(event_words(p.at, chunks));
  }
  const StageEval& st = e.eval.stages[s.stage];
  return json{{"stage", s.stage},
              {"events", s.events},
              {"static_bytes", e.ranks[s.stage].stat.total_bytes},
              {"peak_bytes", st.peak_bytes},
              {"fragmentation_bytes", st.fragmentation_bytes},
              {"peak_words", event_words(st.peak_at, chunks)},
              {"points",
               {{"index", idx},
                {"live_bytes", live},
                {"low_bytes", low},
                {"activations", act},
                {"recompute", rec},
                {"transients", trans},
                {"regenerates", regen},
                {"words", words}}}};
}

// What each recompute letter and each event label means (layers:PATTERN, the timeline's labels).
json glossary() {
  json letters = json::object();
  const char* const meaning[] = {
      "keep: the layer keeps every record for backward",
      ("selective: keeps all but the attention core, which backward recomputes (Korthikanti et al. "
       "2022, Sec. 5)"),
      "checkpoint: keeps only its input and starts a recompute segment (Chen et al. 2016)",
      "recompute: keeps nothing; regenerated from the checkpoint below it",
      "custom: keeps its input and the records named in custom_keep"};
  for (std::size_t i = 0; i + 1 < sizeof(kChoiceLetters); ++i)
    letters[std::string(1, kChoiceLetters[i])] = meaning[i];
  return json{{"recompute_letters", letters},
              {"labels",
               {{"F", "forward of a layer"},
                {"R", "recompute: backward regenerates dropped activations"},
                {"B", "backward of a layer"},
                {"mb", "micro-batch index within the step"},
                {"c", "model chunk (virtual pipeline stage) on this GPU"},
                {"L", "layer index in the whole model"}}}};
}

}  // namespace

json view_to_json(const View& v, const json& estimate_answer) {
  const Estimate& e = v.est;
  const Stage& w = e.worst();
  const StageEval& we = e.eval.worst_stage();
  const Parallel& par = e.config.par;
  const bool chunks = par.vpp > 1;
  const Schedule sched = effective_schedule(e.config);
  json out;
  out["ok"] = true;
  out["command"] = "view";
  out["estimate"] = estimate_answer;
  out["model"] = {{"name", e.model.name}, {"params", e.model_params}};

  json verdict = {{"peak_bytes", w.peak_bytes},
                  {"stage", w.index},
                  {"stages", e.stages.size()},
                  {"peak_at", w.peak_at},
                  {"peak_words", event_words(we.peak_at, chunks)},
                  {"gpus", v.gpus}};
  if (e.has_gpu) {
    verdict["fits"] = e.fits;
    verdict["capacity_bytes"] = e.gpu.memory_bytes;
    verdict["headroom_bytes"] = e.headroom_bytes;
    verdict["gpu"] = e.gpu.name.empty() ? e.gpu.id : e.gpu.name;
  }
  out["verdict"] = verdict;

  json layout = {{"tp", par.tp},
                 {"sp", par.sp},
                 {"pp", par.pp},
                 {"vpp", par.vpp},
                 {"cp", par.cp},
                 {"dp", par.dp},
                 {"ep", par.ep},
                 {"zero", par.zero},
                 {"micro_batch", e.config.micro_batch},
                 {"micro_batches", e.config.grad_accum},
                 {"seq", e.config.seq},
                 {"schedule", schedule_table().name(sched)},
                 {"recompute", recompute_name(e.config.recompute)},
                 {"offload", e.config.recompute.offload}};
  if (sched != e.config.schedule)
    layout["schedule_note"] = std::string(schedule_table().name(sched)) +
                              " because vpp = " + std::to_string(par.vpp) +
                              " > 1 (Megatron-LM's interleaved 1F1B)";
  out["layout"] = layout;

  json sug = json::array();
  for (const Suggestion& s : v.suggestions) sug.push_back(suggestion_json(s));
  out["suggestions"] = sug;

  // The bar: what the peak event holds, part by part; the parts add up to the peak.
  json segs = json::array();
  const std::pair<const char*, Bytes> parts[] = {
      {"params", w.stat.params_bytes},     {"grads", w.stat.grads_bytes},
      {"master", w.stat.master_bytes},     {"optimizer", w.stat.optimizer_bytes},
      {"activations", w.peak_activations}, {"recompute", w.peak_recompute},
      {"transients", w.peak_transients},   {"fragmentation", w.peak_fragmentation}};
  const char* const labels[] = {"parameters",
                                "gradients",
                                "master weights",
                                "optimizer states",
                                "kept activations",
                                "recomputed",
                                "transients (logits, gradients, buffers)",
                                "fragmentation allowance"};
  for (std::size_t i = 0; i < 8; ++i)
    segs.push_back({{"id", parts[i].first}, {"label", labels[i]}, {"bytes", parts[i].second}});
  json bar = {{"segments", segs}, {"total_bytes", w.peak_bytes}};
  if (e.has_gpu) bar["capacity_bytes"] = e.gpu.memory_bytes;
  out["bar"] = bar;

  // The step: y from 0 to the larger of the highest point and the capacity.
  Bytes y_max = w.peak_bytes;
  if (e.has_gpu && e.gpu.memory_bytes > y_max) y_max = e.gpu.memory_bytes;
  json series = json::array();
  for (const StageSeries& s : v.series) series.push_back(series_json(s, e, chunks));
  json tl = {{"schedule", schedule_table().name(sched)},
             {"micro_batches", e.config.grad_accum},
             {"stages", e.stages.size()},
             {"worst_stage", e.worst_stage},
             {"y_min", 0},
             {"y_max", y_max},
             {"recompute_overhead_pct", e.recompute_overhead_pct},
             {"series", series}};
  if (e.has_gpu) tl["capacity_bytes"] = e.gpu.memory_bytes;
  out["timeline"] = tl;

  json pol = json::array();
  const std::string current = recompute_name(e.config.recompute);
  for (const PolicyRow& p : v.policies) {
    json row = {{"policy", p.policy}, {"ok", p.ok}, {"current", p.policy == current}};
    if (p.ok) {
      row["peak_bytes"] = p.peak_bytes;
      row["recompute_overhead_pct"] = p.recompute_overhead_pct;
      if (e.has_gpu) row["fits"] = p.peak_bytes <= e.gpu.memory_bytes;
    }
    pol.push_back(row);
  }
  out["policies"] = pol;
  json prof = json::array();
  for (const ProfileRow& p : v.profiles) {
    json row = {{"profile", profile_name(p.profile)},
                {"ok", p.ok},
                {"current", p.profile == e.config.profile}};
    if (p.ok) {
      row["per_layer_bytes"] = p.per_layer_bytes;
      row["peak_bytes"] = p.peak_bytes;
    }
    prof.push_back(row);
  }
  out["profiles"] = prof;

  if (v.plan)
    out["plan"] = plan_to_json(*v.plan);
  else if (!v.plan_error.empty())
    out["plan"] = {{"ok", false}, {"message", v.plan_error}};
  if (v.fit)
    out["fit"] = fit_to_json(*v.fit);
  else if (!v.fit_error.empty())
    out["fit"] = {{"ok", false}, {"message", v.fit_error}};

  json grid = {{"micro_batches", v.grid.micro_batches},
               {"seqs", v.grid.seqs},
               {"peak_bytes", v.grid.peak_bytes},
               {"current", {v.grid_b, v.grid_s}}};
  if (e.has_gpu) grid["capacity_bytes"] = e.gpu.memory_bytes;
  out["grid"] = grid;
  out["glossary"] = glossary();
  return out;
}

}  // namespace actmem

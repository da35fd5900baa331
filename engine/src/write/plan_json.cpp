// JSON for the timeline, fit, plan and sweep answers (the CLI's --json and the page read these).
#include "actmem/json_io.hpp"
#include "actmem/plan/planner.hpp"
#include "actmem/report/timeline.hpp"

namespace actmem {

using nlohmann::json;

namespace {

json event_json(const TimelineEvent& ev) {
  return json{{"label", ev.label},
              {"live_bytes", ev.live},
              {"activations", ev.activations},
              {"recompute", ev.recompute},
              {"transients", ev.transients}};
}

json point_json(const PlanPoint& p) {
  // offload: the config switch (every layer) that, with policy as recompute, re-estimates the
  // point; host_layers: whether any layer offloads (the switch or lower-case pattern letters).
  json j{{"policy", p.policy},
         {"offload", p.offload_all},
         {"host_layers", p.offload},
         {"peak_bytes", p.peak_bytes},
         {"recompute_overhead_pct", p.recompute_overhead_pct},
         {"fits", p.fits}};
  if (p.offload && p.offload_timing_known) {
    j["offload_hidden"] = p.offload_hidden;
    j["offload_exposed_s"] = p.offload_exposed_s;
    j["offload_exposed_pct"] = p.offload_exposed_pct;
  }
  if (p.offload && p.offload_host_known) j["offload_host_fits"] = p.offload_host_fits;
  return j;
}

}  // namespace

json timeline_to_json(const Estimate& e, const Timeline& t, bool compact) {
  json stages = json::array();
  for (const StageTimeline& s : t.stages) {
    json events = json::array();
    for (const auto& ev : s.events)
      events.push_back(
          compact ? json::array({ev.label, ev.live, ev.activations, ev.recompute, ev.transients})
                  : event_json(ev));
    json phases = json::array();
    for (const PhaseFigure& p : s.phases)
      phases.push_back(json{{"phase", phase_id(p.phase)},
                            {"label", phase_label(p.phase)},
                            {"peak_bytes", p.peak_bytes},
                            {"below_peak_bytes", s.peak_bytes - p.peak_bytes},
                            {"at", p.at}});
    json transients = json::array();
    for (const auto& tr : s.transients)
      transients.push_back(
          json{{"name", tr.name}, {"bytes", tr.bytes}, {"when", tr.when}, {"source", tr.source}});
    stages.push_back(json{{"stage", s.stage},
                          {"peak_bytes", s.peak_bytes},
                          {"peak_at", s.peak_at},
                          {"peak_phase", phase_id(s.peak_phase)},
                          {"phases", phases},
                          {"static_bytes", s.static_bytes},
                          {"at_peak", event_json(s.at_peak)},
                          {"fragmentation_bytes", s.fragmentation_bytes},
                          {"host_peak_bytes", s.host_peak_bytes},
                          {"pcie_bytes", s.pcie_bytes},
                          {"transients", transients},
                          {"events_total", s.events_total},
                          {"events_truncated", s.events_truncated()},
                          {"events", events}});
  }
  const TrainConfig& c = e.config;
  json out = {{"ok", true},
              {"profile", profile_name(c.profile)},
              {"schedule", schedule_name(effective_schedule(c))},
              {"micro_batches", c.grad_accum},
              {"recompute", recompute_name(c.recompute)},
              {"offload", c.recompute.offload},
              {"peak_bytes", t.worst_stage().peak_bytes},
              {"peak_stage", t.worst},
              {"peak_at", t.worst_stage().peak_at},
              {"peak_phase", phase_id(t.worst_stage().peak_phase)},
              {"recompute_overhead_pct", t.recompute_overhead_pct},
              {"step_flops", t.step_flops},
              {"extra_flops", t.extra_flops},
              {"stages", stages}};
  out["events_limit"] = kMaxTimelineEvents;
  if (e.has_gpu) {
    out["gpu"] = {{"id", e.gpu.id}, {"name", e.gpu.name}, {"memory_bytes", e.gpu.memory_bytes}};
    out["fits"] = e.fits;
  }
  return out;
}

json fit_to_json(const FitResult& f) {
  return json{{"ok", true},
              {"budget_bytes", f.budget},
              {"capacity_bytes", f.capacity},
              {"overhead_bytes", f.overhead_bytes},
              {"max_micro_batch", f.max_micro_batch},
              {"max_seq", f.max_seq},
              {"seq_step", f.seq_step},
              {"micro_batch_limit", f.micro_batch_limit},
              {"micro_batch_at_limit", f.micro_batch_at_limit},
              {"seq_limit", f.seq_limit},
              {"seq_limit_is_positions", f.seq_limit_is_positions},
              {"seq_at_limit", f.seq_at_limit}};
}

json plan_to_json(const Plan& p) {
  json pareto = json::array();
  for (const auto& pt : p.pareto) pareto.push_back(point_json(pt));
  json offload = json::array();
  for (const auto& pt : p.offload) offload.push_back(point_json(pt));
  json out = {{"ok", true},
              {"budget_bytes", p.budget},
              {"capacity_bytes", p.capacity},
              {"overhead_bytes", p.overhead_bytes},
              {"found", p.found},
              {"pareto", pareto},
              {"offload_points", offload},
              {"evaluated", p.evaluated},
              {"device_checks", p.device_checks}};
  if (p.found) {
    out["policy"] = p.best.policy;
    out["offload"] = p.best.offload_all;
    out["host_layers"] = p.best.offload;
    if (p.best.offload && p.best.offload_timing_known)
      out["offload_exposed_pct"] = p.best.offload_exposed_pct;
    out["peak_bytes"] = p.best.peak_bytes;
    out["recompute_overhead_pct"] = p.best.recompute_overhead_pct;
  } else {
    out["policy"] = nullptr;
  }
  return out;
}

json sweep_to_json(const Sweep& s) {
  return json{{"ok", true},
              {"micro_batches", s.micro_batches},
              {"seqs", s.seqs},
              {"peak_bytes", s.peak_bytes}};
}

}  // namespace actmem

// The memory timeline of one training step on each pipeline stage: an event-level simulation of
// forward, recompute, backward and the optimizer step, with every transient a named record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/core/checked.hpp"
#include "actmem/core/error.hpp"
#include "actmem/step/evaluation.hpp"

namespace actmem {

struct Estimate;

// A named transient buffer and when it is alive.
struct Transient {
  std::string name;
  Bytes bytes = 0;
  std::string when;
  std::string source;
};

struct TimelineEvent {
  std::string
      label;  // "F mb3 c1 L12", "R mb3 c1 L8-L11", "B mb3 c1 L12", "loss fwd mb3", "optimizer step"
  Bytes live = 0;  // on the GPU, = static + activations + recompute + transients
  Bytes activations = 0;
  Bytes recompute = 0;
  Bytes transients = 0;
};

// One phase's highest event on a rank (evaluation.hpp's PhasePeak with its event written).
struct PhaseFigure {
  StepPhase phase = StepPhase::kForward;
  Bytes peak_bytes = 0;  // with the fragmentation allowance, as the stage's peak_bytes
  std::string at;
};
// The phases the rank ran, in step order (forward, loss, backward, optimizer step).
std::vector<PhaseFigure> phase_figures(const Evaluation::PhasePeaks& peaks);

struct StageTimeline {
  std::uint64_t stage = 0;
  Bytes static_bytes = 0;  // parameters, gradients, master weights, optimizer states, all step long
  Bytes peak_bytes = 0;    // including the fragmentation allowance
  std::string peak_at;
  TimelineEvent at_peak;
  StepPhase peak_phase = StepPhase::kForward;
  std::vector<PhaseFigure> phases;
  Bytes fragmentation_bytes = 0;  // the allowance, its own line (config.fragmentation_pct)
  Bytes host_peak_bytes = 0;      // offloaded activations resident in host memory at most
  Bytes pcie_bytes = 0;           // offload traffic per step (out and back)
  std::vector<Transient> transients;
  std::vector<TimelineEvent> events;  // empty unless requested; the first events_limit of them
  std::uint64_t events_total = 0;     // events the stage's step has (recorded or not)
  bool events_truncated() const { return events_total > events.size(); }
};

struct Timeline {
  std::vector<StageTimeline> stages;
  std::size_t worst = 0;
  double step_flops = 0;   // forward + backward FLOPs of one step on the most loaded stage
  double extra_flops = 0;  // added by recompute
  double recompute_overhead_pct = 0;
  const StageTimeline& worst_stage() const { return stages[worst]; }
};

// The step's named transient buffers and when each is alive.
std::vector<Transient> named_transients(const Setup& s);

// Simulates every stage of the estimate's configuration. With `events`, each stage's event list
// is recorded (layer granularity), at most kMaxTimelineEvents in all (shared evenly by the stages
// recorded; each keeps its first ones and counts the rest); without, only peaks. Peaks always
// cover every event.
// `only_stage` >= 0 records events for that stage alone (the others take the peak-only path).
// `per_op` records one event per pipeline op instead of per layer: each op's highest event (the
// same peak; what a chart needs).
Result<Timeline> simulate(const Estimate& e, bool events, std::int64_t only_stage = -1,
                          bool per_op = false);

}  // namespace actmem

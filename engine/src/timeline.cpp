// The timeline report: the step walker (walker.cpp) run with a recorder for the stages asked for,
// event labels, and the named transients (see docs/schedules.md).
#include "actmem/timeline.hpp"

#include "actmem/estimate.hpp"
#include "overflow.hpp"
#include "walker.hpp"

namespace actmem {

std::string event_label(const StepEvent& k) {
  const std::string where = " mb" + std::to_string(k.mb) + " c" + std::to_string(k.chunk);
  switch (k.kind) {
    case StepEvent::kFwd:
      return "F" + where + " L" + std::to_string(k.lo);
    case StepEvent::kBwd:
      return "B" + where + " L" + std::to_string(k.lo);
    case StepEvent::kRecompute:
      return "R" + where + " L" + std::to_string(k.lo) +
             (k.hi != k.lo ? "-L" + std::to_string(k.hi) : "");
    case StepEvent::kLossFwd:
      return "loss fwd mb" + std::to_string(k.mb);
    case StepEvent::kLossBwd:
      return "loss bwd mb" + std::to_string(k.mb);
    case StepEvent::kOptimizer:
      return "optimizer step";
  }
  return "?";
}

namespace {

// Collects a stage's events as labelled rows.
class EventList : public detail::Recorder {
 public:
  explicit EventList(std::vector<TimelineEvent>* out) : out_(out) {}
  void event(const StepEvent& at, const LiveBytes& b) override {
    out_->push_back(
        TimelineEvent{event_label(at), b.live, b.activations, b.recompute, b.transients});
  }

 private:
  std::vector<TimelineEvent>* out_;
};

}  // namespace

std::vector<Transient> named_transients(const Setup& s) {
  const TrainConfig& c = s.config;
  return {
      {"cublas.workspace", s.workspace, "whole step",
       "PyTorch CUDA default cuBLAS workspace on sm90 (4096 KiB x 8)"},
      {"sp.allgather", s.sp_gather, "each layer's forward and backward",
       "Korthikanti et al. 2022, Sec. 4.2.2: SP gathers the sequence before the TP GEMMs"},
      {"zero3.param_allgather", s.zero3_gather, "each layer's forward and backward",
       "Rajbhandari et al. 2020, Sec. 5.3: parameters gathered per layer"},
      {"bwd.layer_grads", s.grad_peak, "each layer's backward, at " + s.grad_peak_at,
       "gradient buffers alive at the layer backward's fullest step (docs/formulas.md, backward "
       "working set)"},
      {"loss.fp32_logits_buffer", s.logits, "loss forward and backward",
       "cross-entropy works on fp32 logits (Korthikanti et al. 2022, Sec. 4.3)"},
      {"loss.logits_grad", s.logits, "loss backward", "gradient of the fp32 logits"},
      {"grad.reduce_bucket", c.par.dp > 1 ? c.grad_bucket : 0, "backward (data parallel)",
       "PyTorch DDP bucket_cap_mb = 25"},
      {"optimizer.step_temp", s.opt_temp, "optimizer step",
       "fp32 temporaries of the largest parameter tensor (foreach AdamW)"},
  };
}

Result<Timeline> simulate(const Estimate& e, bool events_all, std::int64_t only_stage,
                          bool per_op) {
  const Recompute& r = e.config.recompute;
  Timeline tl;
  Checked ck;
  Evaluation::Scratch sc;
  double layers_fwd = 0, extra = 0;
  detail::fill_layers(e, r, sc, &layers_fwd, &extra, false);
  const std::vector<Transient> named = events_all ? named_transients(e) : std::vector<Transient>{};
  for (std::uint64_t rank = 0; rank < e.ranks.size(); ++rank) {
    StageTimeline out;
    out.stage = rank;
    out.static_bytes = e.ranks[rank].stat.total_bytes;
    const bool events =
        events_all && (only_stage < 0 || static_cast<std::uint64_t>(only_stage) == rank);
    EventList rec(&out.events);
    StageEval ev;
    detail::walk_rank(e, r.offload, rank, sc, ck, events ? &rec : nullptr, !per_op, &ev);
    out.fragmentation_bytes = ev.fragmentation_bytes;
    out.peak_bytes = ev.peak_bytes;
    out.peak_at = event_label(ev.peak_at);
    out.at_peak = TimelineEvent{out.peak_at, ev.at_peak.live, ev.at_peak.activations,
                                ev.at_peak.recompute, ev.at_peak.transients};
    out.host_peak_bytes = ev.host_peak_bytes;
    out.pcie_bytes = ev.pcie_bytes;
    out.transients = named;
    tl.stages.push_back(std::move(out));
  }
  for (std::size_t i = 1; i < tl.stages.size(); ++i)
    if (tl.stages[i].peak_bytes > tl.stages[tl.worst].peak_bytes) tl.worst = i;
  // Recompute overhead: extra forward FLOPs over the step's 3x forward (forward + 2x backward).
  tl.step_flops = 3.0 * (layers_fwd + e.logits_flops);
  tl.extra_flops = extra;
  tl.recompute_overhead_pct = tl.step_flops > 0 ? 100.0 * extra / tl.step_flops : 0.0;
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), e.config);
  return tl;
}

}  // namespace actmem

// The timeline report: the step walker (walker.cpp) run with a recorder for the stages asked for,
// event labels, and the named transients (see docs/schedules.md).
#include "actmem/timeline.hpp"

#include "actmem/estimate.hpp"
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
  Timeline tl;
  tl.stages.resize(e.ranks.size());
  std::vector<EventList> lists;
  lists.reserve(e.ranks.size());
  std::vector<detail::Recorder*> recorders(e.ranks.size(), nullptr);
  for (std::uint64_t rank = 0; rank < e.ranks.size(); ++rank) {
    lists.emplace_back(&tl.stages[rank].events);
    if (events_all && (only_stage < 0 || static_cast<std::uint64_t>(only_stage) == rank))
      recorders[rank] = &lists.back();
  }
  Evaluation ev;
  if (auto err = detail::walk_step(e, e.config.recompute, recorders.data(), !per_op, &ev))
    return *err;
  const std::vector<Transient> named = events_all ? named_transients(e) : std::vector<Transient>{};
  for (std::uint64_t rank = 0; rank < e.ranks.size(); ++rank) {
    const StageEval& st = ev.stages[rank];
    StageTimeline& out = tl.stages[rank];
    out.stage = rank;
    out.static_bytes = e.ranks[rank].stat.total_bytes;
    out.fragmentation_bytes = st.fragmentation_bytes;
    out.peak_bytes = st.peak_bytes;
    out.peak_at = event_label(st.peak_at);
    out.at_peak = TimelineEvent{out.peak_at, st.at_peak.live, st.at_peak.activations,
                                st.at_peak.recompute, st.at_peak.transients};
    out.host_peak_bytes = st.host_peak_bytes;
    out.pcie_bytes = st.pcie_bytes;
    out.transients = named;
  }
  tl.worst = ev.worst;
  tl.step_flops = ev.step_flops;
  tl.extra_flops = ev.extra_flops;
  tl.recompute_overhead_pct = ev.recompute_overhead_pct;
  return tl;
}

}  // namespace actmem

// The timeline report: the step walker (walker.cpp) run with a recorder for the stages asked for,
// event labels, and the named transients (see docs/schedules.md).
#include "actmem/report/timeline.hpp"

#include <algorithm>

#include "actmem/config/sharding.hpp"
#include "actmem/report/estimate.hpp"
#include "actmem/report/view.hpp"
#include "setup/optimizer_step.hpp"
#include "step/walker.hpp"

namespace actmem {

namespace {

// Collects a stage's first `cap` events as labelled rows and counts them all: what is written out
// is bounded (limits.hpp), the walk and its peaks are not.
class EventList : public detail::Recorder {
 public:
  EventList(StageTimeline* out, std::uint64_t cap) : out_(out), cap_(cap) {}
  void event(const StepEvent& at, const LiveBytes& b) override {
    if (out_->events_total++ < cap_)
      out_->events.push_back(
          TimelineEvent{event_label(at), b.live, b.activations, b.recompute, b.transients});
  }

 private:
  StageTimeline* out_;
  std::uint64_t cap_;
};

}  // namespace

namespace {
// FSDP2's per-layer buffers of the largest kind (0 unless torchtitan's FSDP2).
Bytes fsdp2_layer(const Setup& s, bool backward) {
  Bytes b = 0;
  if (!fsdp2_buffers(s.config)) return 0;
  for (const KindEstimate& ke : s.kinds) b = std::max(b, backward ? ke.fsdp_bwd : ke.fsdp_fwd);
  return b;
}
// The loss backward's second and third buffers (each bounded by a setup that built: its totals
// summed them with overflow checks in the walk's loss event).
Bytes loss_more_buffers(const Setup& s) {
  Checked ck;
  const Bytes b = ck.add(s.loss_bwd_bufs[1], s.loss_bwd_bufs[2], "timeline.loss");
  return ck.overflowed() ? kMaxBytes : b;
}
}  // namespace

std::vector<Transient> named_transients(const Setup& s) {
  const TrainConfig& c = s.config;
  std::vector<Transient> v = {
      {"cublas.workspace", s.workspace, "whole step",
       "PyTorch CUDA default cuBLAS workspace on sm90 (4096 KiB x 8)"},
      {"sp.allgather", s.sp_gather, "each layer's forward and backward",
       "Korthikanti et al. 2022, Sec. 4.2.2: SP gathers the sequence before the TP GEMMs"},
      {"zero3.param_allgather", s.zero3_gather, "each layer's forward and backward",
       "Rajbhandari et al. 2020, Sec. 5.3: parameters gathered per layer"},
      {"fsdp2.layer_forward_buffers", fsdp2_layer(s, false), "each layer's forward (FSDP2)",
       "the gathered layer and its flat all-gather result, kept until the next group's copy-in"},
      {"fsdp2.layer_backward_buffers", fsdp2_layer(s, true), "each layer's backward (FSDP2)",
       "gathered layer, prefetched layer, unsharded gradients, the fp32 reduce-scatter input "
       "(one at a time; docs/frameworks.md)"},
      !fsdp1_root_held(c)
          ? Transient{"fsdp2.root_grads", s.fsdp_root_grads,
                      "the head's backward to the end of backward (FSDP2)",
                      "the root group's unsharded gradients (head, final norm), reduce-scattered "
                      "last"}
          : Transient{"fsdp.root_grads", s.fsdp_root_grads,
                      "the head's backward to the end of backward (verl's FSDP)",
                      "the root unit's gradients (head, final norm) wait for the embedding's, "
                      "the FlatParameter's last, then reduce-scatter"},
      {"bwd.layer_grads", s.grad_peak, "each layer's backward, at " + s.grad_peak_at,
       "gradient buffers alive at the layer backward's fullest step (docs/formulas.md, backward "
       "working set)"},
      {"loss.fp32_logits_buffer", s.loss_fwd_ws, "loss forward and backward",
       "cross-entropy works on fp32 logits (Korthikanti et al. 2022, Sec. 4.3); chunked: one "
       "chunk's; fused: one [chunk, V] logits chunk (docs/frameworks.md, The loss)"},
      {"loss.logits", s.loss_logits, "loss forward",
       "the head's output in the compute dtype, held by the training loop until the loss returns "
       "(torchtitan 9dec370 train.py `del pred`; measured, docs/validation.md 4.6)"},
      {"loss.logits_grad", s.loss_bwd_bufs[0], "loss backward",
       "gradient of the logits (fp32; compiled: bf16)"},
      {"loss.backward_buffers", loss_more_buffers(s), "loss backward",
       "the loss backward's other buffers beside it (eager: log_softmax's input gradient; "
       "parallel: the sum and the product of DTensor's fused nll and log_softmax backward; "
       "docs/frameworks.md, The loss)"},
      {"grad.reduce_bucket", c.par.dp > 1 ? c.grad_bucket : 0, "backward (data parallel)",
       "PyTorch DDP bucket_cap_mb = 25"},
      {"optimizer.step_temp", s.opt_temp, "optimizer step",
       detail::optimizer_step_source(c) + " (docs/formulas.md, The optimizer step)"},
  };
  if (!s.grads_made_before.empty())
    v.push_back({"grads.made_in_backward", s.grads_made_root,
                 "backward, one micro-batch per step: the layers done's gradient shards, this "
                 "much at the root's post-backward",
                 "zero_grad at the step's start; each group's post-backward makes its rank's "
                 "shard (torch 2.6 _fsdp_collectives.py foreach_reduce, fsdp/_runtime_utils.py "
                 "_reduce_grad): the static gradients line leaves them out until the optimizer "
                 "step (step/static_at.cpp)"});
  if (verl_fsdp2(c)) {
    // verl's FSDP2 (setup.cpp set_verl_fsdp2), listed where it applies.
    v.insert(v.end(),
             {
                 {"fsdp2.root_group", s.fsdp_root_held,
                  "every forward and backward, and the head's forward (verl's FSDP2)",
                  "the root group's copies (final norm, head; the embedding when tied), "
                  "resharded after forward and gathered again for the head's backward (torch "
                  "2.9 fully_shard, reshard_after_forward=True honoured for the root: pytorch "
                  "PR #154704)"},
                 {"fsdp2.embedding_group", s.fsdp2_embed,
                  "the start of forward and the end of backward (verl's FSDP2, untied)",
                  "verl b178a3c fsdp_utils.py apply_fsdp2: an untied nn.Embedding is a group of "
                  "its own, gathered for its forward and, prefetched by layer 0, for its "
                  "backward"},
                 {"fsdp2.forward_start", s.fsdp2_forward_start,
                  "the start of each micro-batch's forward, beside the root's copies (event F "
                  "groups)",
                  "the root's and the embedding's all-gather outputs and copies, the "
                  "embedding's output and layer 0's all-gather output, at their fullest moment"},
                 {"fsdp2.root_post_backward", s.fsdp_root_post_backward(),
                  "the end of each micro-batch's backward (event B root)",
                  "the embedding's backward and post-backward beside layer 0's reduce-scatter "
                  "input, and the root's post-backward: its fp32 reduce-scatter input beside its "
                  "unsharded gradients (_fsdp_param_group.py post_backward)"},
             });
    return v;
  }
  if (!fsdp1_root_held(c)) return v;
  // verl's FSDP root unit (setup.cpp set_fsdp1_root), listed where it applies.
  v.insert(
      v.end(),
      {
          {"fsdp.root_unit", s.fsdp_root_held, "every forward, loss and backward (verl's FSDP)",
           "the root unit (embedding, final norm, head) gathered as one FlatParameter padded to "
           "the shard group: torch 2.6 fsdp/_runtime_utils.py _post_forward_reshard keeps the "
           "root after forward; _flat_param.py _get_shard"},
          {"fsdp.root_post_backward", s.fsdp_root_post_backward(),
           "the root's post-backward after each micro-batch's last layer (verl's FSDP)",
           "the larger of the views' gradients joined beside the gathered root and of the joined "
           "gradient with its fp32 copy and padding on the post-backward stream "
           "(_runtime_utils.py _post_backward_hook, _get_reduce_scatter_tensors)"},
      });
  return v;
}

Result<Timeline> simulate(const Estimate& e, bool events_all, std::int64_t only_stage,
                          bool per_op) {
  Timeline tl;
  tl.stages.resize(e.ranks.size());
  std::vector<EventList> lists;
  lists.reserve(e.ranks.size());
  std::vector<detail::Recorder*> recorders(e.ranks.size(), nullptr);
  auto recorded = [&](std::uint64_t rank) {
    return events_all && (only_stage < 0 || static_cast<std::uint64_t>(only_stage) == rank);
  };
  const std::uint64_t n_recorded = only_stage >= 0 ? 1 : e.ranks.size();
  const std::uint64_t cap = std::max<std::uint64_t>(1, kMaxTimelineEvents / n_recorded);
  for (std::uint64_t rank = 0; rank < e.ranks.size(); ++rank) {
    lists.emplace_back(&tl.stages[rank], cap);
    if (recorded(rank)) recorders[rank] = &lists.back();
  }
  Evaluation ev;
  ev.phases = true;  // each stage's phases are in the answer
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
    out.peak_phase = phase_of(st.peak_at.kind);
    out.phases = phase_figures(ev.phase_peaks[rank]);
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

std::vector<PhaseFigure> phase_figures(const Evaluation::PhasePeaks& peaks) {
  std::vector<PhaseFigure> out;
  for (std::size_t i = 0; i < kStepPhases; ++i)
    if (peaks[i].seen)
      out.push_back({static_cast<StepPhase>(i), peaks[i].peak_bytes, event_label(peaks[i].at)});
  return out;
}

std::string event_words(const StepEvent& k, bool chunks) {
  const std::string mb = ", micro-batch " + std::to_string(k.mb);
  const std::string chunk = chunks ? ", chunk " + std::to_string(k.chunk) : "";
  switch (k.kind) {
    case StepEvent::kFwd:
      return "forward of layer " + std::to_string(k.lo) + mb + chunk;
    case StepEvent::kBwd:
      if (root_post_backward(k)) return "FSDP root unit's post-backward" + mb + chunk;
      return "backward of layer " + std::to_string(k.lo) + mb + chunk;
    case StepEvent::kBwdInput:
      return "input-gradient backward of layer " + std::to_string(k.lo) + mb + chunk;
    case StepEvent::kBwdWeight:
      return "weight-gradient backward of layer " + std::to_string(k.lo) + mb + chunk;
    case StepEvent::kRecompute:
      return (k.hi != k.lo
                  ? "recompute of layers " + std::to_string(k.lo) + " to " + std::to_string(k.hi)
                  : "recompute of layer " + std::to_string(k.lo)) +
             mb + chunk;
    case StepEvent::kLossFwd:
      return "loss forward" + mb;
    case StepEvent::kLossBwd:
      return "loss backward" + mb;
    case StepEvent::kOptimizer:
      return "optimizer step";
  }
  return "?";
}

namespace {

// Keeps a bounded envelope of a stage's op events: consecutive ops fall into buckets of a width
// that doubles (pairs of buckets merge) whenever the bucket count would pass its cap, so memory is
// bounded and each event costs O(1) amortised. A bucket keeps its first highest event, which makes
// the stage's peak (the walk's first maximum) a point of the series.
class Envelope : public detail::Recorder {
 public:
  Envelope(StageSeries* out, std::size_t cap)
      : out_(out), cap_(cap < 2 ? 2 : cap & ~std::size_t{1}) {
    out_->points.reserve(cap_);
  }
  void event(const StepEvent& at, const LiveBytes& b) override {
    const std::uint64_t i = out_->events++;
    if (i / width_ >= cap_) merge();
    std::vector<SeriesPoint>& pts = out_->points;
    const std::size_t bucket = static_cast<std::size_t>(i / width_);
    const SeriesPoint p{i, at, b, b.live, b.recompute > 0};
    if (bucket == pts.size())
      pts.push_back(p);
    else
      absorb(pts[bucket], p);
  }

 private:
  // Folds a later run into an earlier one: the first highest event stays, the lowest low, any
  // recompute.
  static void absorb(SeriesPoint& a, const SeriesPoint& b) {
    if (b.bytes.live > a.bytes.live) {
      a.index = b.index;
      a.at = b.at;
      a.bytes = b.bytes;
    }
    if (b.low < a.low) a.low = b.low;
    a.recompute = a.recompute || b.recompute;
  }
  void merge() {
    std::vector<SeriesPoint>& pts = out_->points;
    for (std::size_t j = 0; j < pts.size() / 2; ++j) {
      SeriesPoint a = pts[2 * j];
      absorb(a, pts[2 * j + 1]);
      pts[j] = a;
    }
    pts.resize(pts.size() / 2);
    width_ *= 2;
  }

  StageSeries* out_;
  std::size_t cap_;
  std::uint64_t width_ = 1;
};

}  // namespace

Result<std::vector<StageSeries>> simulate_series(const Estimate& e,
                                                 const std::vector<std::uint64_t>& stages,
                                                 std::size_t max_points) {
  std::vector<StageSeries> out(stages.size());
  std::vector<Envelope> envelopes;
  envelopes.reserve(stages.size());
  std::vector<detail::Recorder*> recorders(e.ranks.size(), nullptr);
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (stages[i] >= e.ranks.size())
      return make_error("invalid_value", "stage",
                        "stage: " + std::to_string(stages[i]) + " is not a pipeline stage");
    out[i].stage = stages[i];
    envelopes.emplace_back(&out[i], max_points);
    recorders[stages[i]] = &envelopes.back();
  }
  Evaluation ev;
  if (auto err = detail::walk_step(e, e.config.recompute, recorders.data(), false, &ev))
    return *err;
  return out;
}

}  // namespace actmem

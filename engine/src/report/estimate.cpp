// The estimate: per-stage activations (pipeline in-flight counts), static memory, totals, KV cache.
#include "actmem/report/estimate.hpp"

#include <algorithm>

#include "actmem/config/sharding.hpp"
#include "actmem/inventory/flops.hpp"
#include "actmem/schedules/schedule.hpp"
#include "actmem/step/evaluation.hpp"
#include "actmem/step/static_at.hpp"
#include "report/explain.hpp"
#include "setup/overflow.hpp"

namespace actmem {

namespace {

using detail::explain_product;
using detail::explain_records;
using detail::explain_sum;

constexpr const char* kKorthikantiPP =
    "Korthikanti et al. 2022, Sec. 4.2.3: the first stage holds p micro-batches; interleaving "
    "multiplies by 1 + (p-1)/(p·v)";

using Parts = std::vector<std::pair<std::string, Bytes>>;

Bytes sum_bytes(const std::vector<const TensorRecord*>& recs, Checked& ck, const char* field) {
  Bytes s = 0;
  for (const auto* r : recs) s = ck.add(s, r->bytes, field);
  return s;
}

std::vector<const TensorRecord*> all_of(const std::vector<TensorRecord>& v) {
  std::vector<const TensorRecord*> out;
  for (const auto& r : v) out.push_back(&r);
  return out;
}

// The peak's lines (write_peak's, on the GPU) ranked: the three largest, the first of equals in
// the order the peak lists them.
std::vector<Stage::Contributor> top_lines(const Stage& st) {
  std::vector<Stage::Contributor> v;
  for (const StaticLine& l : static_lines())
    if (l.place != StaticPlace::kHost) v.push_back({l.key, l.label, st.peak_stat.*l.bytes});
  v.push_back({"kept_activations_bytes", "kept activations", st.peak_activations});
  v.push_back({"recomputed_bytes", "recomputed activations", st.peak_recompute});
  v.push_back({"transient_bytes", "transients", st.peak_transients});
  v.push_back({"fragmentation_bytes", "fragmentation allowance", st.peak_fragmentation});
  std::stable_sort(
      v.begin(), v.end(),
      [](const Stage::Contributor& a, const Stage::Contributor& b) { return a.bytes > b.bytes; });
  v.resize(3);
  return v;
}

// One stage of the per-stage view: the setup's layers, the policy's choices, the evaluation's
// numbers.
void set_stage(const Setup& s, const RankSetup& rk, const StageEval& ev,
               const Evaluation::PhasePeaks& phases, const TrainConfig& c, Stage& st) {
  st.index = rk.index;
  st.layers = rk.layers;
  st.chunk_sizes = rk.chunk_sizes;
  st.chunk_first = rk.chunk_first;
  st.chunk_layers = rk.chunk_sizes[0];
  st.chunk_choices.clear();
  for (std::uint64_t n : rk.chunk_sizes) st.chunk_choices.push_back(layer_choices(c.recompute, n));
  st.choices = st.chunk_choices[0];
  st.in_flight = ev.in_flight;
  st.kept_layer_slots = ev.kept_layer_slots;
  st.act = ev.act;
  st.stat = rk.stat;
  st.peak_stat = static_at(c, rk.stat, ev.peak_at.kind);
  // Gradients made in backward are the walk's transient there, the peak's gradients line here.
  const Bytes made = grads_made_at(s, ev.peak_at);
  st.total_bytes = ev.total_bytes;
  st.peak_bytes = ev.peak_bytes;
  st.peak_at = event_label(ev.peak_at);
  st.peak_activations = ev.at_peak.activations;
  st.peak_recompute = ev.at_peak.recompute;
  st.peak_transients = ev.at_peak.transients - made;
  st.peak_stat.grads_bytes += made;
  st.peak_stat.total_bytes += made;
  st.peak_fragmentation = ev.fragmentation_bytes;
  st.phases = phase_figures(phases);
  st.peak_phase = phase_of(ev.peak_at.kind);
  st.peak_top = top_lines(st);
}

// Everything that depends on config.recompute (per-layer choices, the evaluation, the per-stage
// view, fits) on an estimate whose setup is built (make_setup made the costs for this policy).
std::optional<Error> apply_recompute(Estimate& e) {
  const TrainConfig& c = e.config;
  e.eval.phases = true;  // the answer names each phase's peak
  if (auto err = evaluate(e, c.recompute, &e.eval)) return *err;
  e.stages.resize(e.ranks.size());
  for (std::size_t i = 0; i < e.ranks.size(); ++i)
    set_stage(e, e.ranks[i], e.eval.stages[i], e.eval.phase_peaks[i], c, e.stages[i]);
  e.worst_stage = e.eval.worst;
  e.recompute_overhead_pct = e.eval.recompute_overhead_pct;
  if (e.has_gpu) {
    const Bytes need = e.worst().peak_bytes;
    e.fits = need <= e.gpu.memory_bytes;
    e.headroom_bytes =
        static_cast<std::int64_t>(e.gpu.memory_bytes) - static_cast<std::int64_t>(need);
  }
  return std::nullopt;
}

// What layer 0 of stage 0 keeps under the policy (Estimate::kept), and its bytes split into the
// parts linear and quadratic in s.
std::vector<const TensorRecord*> keep_first_layer(Estimate& e, Checked& ck) {
  const Stage& s0 = e.stages[0];
  const TrainConfig& c = e.config;
  auto kept0 = kept_tensors(e.kinds[0].inventory,
                            s0.choices.empty() ? LayerChoice::kKeep : s0.choices[0], c.recompute);
  for (const auto* r : kept0) {
    e.kept.push_back(*r);
    e.per_layer_kept_bytes = ck.add(e.per_layer_kept_bytes, r->bytes, "per_layer.activation_bytes");
    if (r->quadratic)
      e.per_layer_quadratic_bytes += r->bytes;
    else
      e.per_layer_linear_bytes += r->bytes;
  }
  return kept0;
}

// With a GPU the verdict is the device's (allocator-reserved memory and fixed costs against
// the capacity the driver reports); peak_bytes stays the tensor model's figure.
std::optional<Error> set_device_verdict(Estimate& e, bool explain) {
  if (!explain && !e.has_gpu) return std::nullopt;
  auto dev = device_memory(e, e.has_gpu ? &e.gpu : nullptr, nullptr, e.config.device_all_stages);
  if (!dev.ok()) return dev.error();
  e.device = std::move(dev.value());
  e.has_device = true;
  if (e.has_gpu) {
    e.fits = e.device.fits;
    e.headroom_bytes = e.device.headroom_bytes;
  }
  return std::nullopt;
}

// The per-layer lines: what layer 0 keeps, what it would keep without recompute, and each other
// kind's layer.
void explain_per_layer(Estimate& e, const ModelSpec& m,
                       const std::vector<const TensorRecord*>& kept0,
                       const std::vector<const TensorRecord*>& all) {
  const TrainConfig& c = e.config;
  const bool stack = m.kinds.size() > 1;
  e.explain.push_back(
      explain_records("per_layer.activation_bytes",
                      (stack ? "What layer 0 (kind '" + m.kinds[0].name + "') keeps for backward ("
                             : std::string("What one layer keeps for backward (")) +
                          recompute_name(c.recompute) + ")",
                      kept0));
  if (c.recompute.kind != RecomputeKind::kNone)
    e.explain.push_back(explain_records("per_layer.full_bytes",
                                        "What one layer would keep without recompute", all));
  // A stack of kinds: each other kind's layer, every record (model.layer_kinds' full_bytes).
  for (std::size_t ki = 1; ki < m.kinds.size(); ++ki) {
    e.explain.push_back(explain_records("model.layer_kinds.full_bytes",
                                        "What one layer of kind '" + m.kinds[ki].name + "' (" +
                                            std::to_string(e.kinds[ki].layers) +
                                            " layers) keeps without recompute",
                                        all_of(e.kinds[ki].inventory.tensors)));
    e.explain.back().source =
        "sum of the named tensor records (model.layer_kinds['" + m.kinds[ki].name + "'].tensors)";
  }
}

// The worst stage's layers line: a product when every layer keeps alike, the offload split when
// some layers offload, a sum otherwise.
void explain_stage_layers(Estimate& e, const ModelSpec& m) {
  const TrainConfig& c = e.config;
  const Stage& w = e.worst();
  // Kept bytes of all in-flight chunks at the stage's activation peak (offload: in host memory).
  const Bytes layers_total = c.recompute.offload ? w.act.host_bytes : w.act.layers_bytes;
  const bool some_offload = any_offload(c.recompute) && !c.recompute.offload;
  const bool uniform_layers = !some_offload && m.kinds.size() == 1 &&
                              std::all_of(w.chunk_sizes.begin(), w.chunk_sizes.end(),
                                          [&](std::uint64_t n) { return n == w.chunk_sizes[0]; }) &&
                              std::all_of(w.choices.begin(), w.choices.end(),
                                          [&](LayerChoice x) { return x == w.choices[0]; });
  if (uniform_layers) {
    e.explain.push_back(explain_product("activations.layers_bytes",
                                        "Layers of stage " + std::to_string(w.index) +
                                            " (chunks in flight × layers per chunk × per layer)",
                                        {{"in-flight chunks", w.in_flight},
                                         {"layers per chunk", w.chunk_layers},
                                         {"per-layer", e.per_layer_kept_bytes}},
                                        layers_total, kKorthikantiPP));
  } else if (some_offload) {
    // Per-layer offload (lower-case pattern letters): the offloaded layers' kept bytes of every
    // in-flight chunk live in host memory; the GPU holds the others and the layer in transit.
    e.explain.push_back(explain_sum(
        "activations.layers_bytes",
        "Layers of stage " + std::to_string(w.index) +
            " on the GPU (kept bytes of every in-flight chunk's layers that do not offload, and "
            "the largest offloaded layer, stored or prefetched)",
        {{"on the GPU", w.act.layers_bytes}}, w.act.layers_bytes,
        "Chen et al. 2016, Sec. 4; pipeline op order (docs/schedules.md)"));
    e.explain.push_back(explain_sum(
        "activations.host_bytes",
        "Offloaded layers' kept bytes in host memory (stage " + std::to_string(w.index) + ")",
        {{"Σ over in-flight chunks of their offloaded layers' kept bytes", w.act.host_bytes}},
        w.act.host_bytes, "PipeOffload, Wan et al. 2025: selective offload of some layers"));
  } else {
    e.explain.push_back(explain_sum(
        "activations.layers_bytes",
        "Layers of stage " + std::to_string(w.index) + " (kept bytes of every in-flight chunk)",
        {{"Σ over in-flight chunks of their layers' kept bytes", layers_total}}, layers_total,
        "Chen et al. 2016, Sec. 4; pipeline op order (docs/schedules.md)"));
  }
}

// The input and output layers' records and the worst stage's activations on the GPU.
void explain_activations(Estimate& e) {
  const LayerInventory& I = e.kinds[0].inventory;
  const Stage& w = e.worst();
  e.explain.push_back(explain_records("activations.input_layer_per_micro_batch",
                                      "Input layer, per micro-batch", all_of(I.input_layer)));
  e.explain.push_back(explain_records("activations.output_layer_per_micro_batch",
                                      "Output layer, per micro-batch", all_of(I.output_layer)));
  e.explain.push_back(explain_sum("activations.total_bytes",
                                  "Activations on the GPU of stage " + std::to_string(w.index),
                                  {{"layers", w.act.layers_bytes},
                                   {"input layer", w.act.input_layer_bytes},
                                   {"output layer", w.act.output_layer_bytes},
                                   {"recompute working set", w.act.recompute_working_bytes}},
                                  w.act.total_bytes, "sum of the parts above"));
}

// The ZeRO group the static lines divide by, and how their formulas name it.
struct ZeroGroup {
  std::uint64_t ranks;    // shard_ranks
  std::string name;       // dp, dp·cp, or either over dp_replicate
  std::uint64_t experts;  // the routed experts' group (dp/ep)
};

ZeroGroup zero_group(const Parallel& p) {
  const std::uint64_t group = shard_ranks(p);
  const std::string ranks_name = p.shard_group == ShardGroup::kDpCp ? "dp·cp" : "dp";
  const std::string group_name =
      p.dp_replicate > 1 ? "(" + ranks_name + "/dp_replicate)" : ranks_name;
  return {group, group_name, expert_dp(group, p.ep)};
}

// A static line: params on this GPU × bytes per param, ÷ the ZeRO group when the stage applies
// (routed experts partition over dp/ep).
Explanation static_line(const StaticMemory& sm, const Parallel& p, const ZeroGroup& g,
                        const char* id, const std::string& title, const std::string& per,
                        Bytes width, int stage, Bytes value, const char* source) {
  Explanation x;
  x.id = id;
  x.title = title;
  x.bytes = value;
  x.source = source;
  const std::uint64_t dense = sm.params - sm.expert_params;
  const bool part = p.zero >= stage && g.ranks > 1;
  auto term = [&](const std::string& who, std::uint64_t n, std::uint64_t ranks) {
    x.formula += who + " × " + per +
                 (part && ranks > 1 ? " ÷ " + (ranks == g.ranks ? g.name : "(" + g.name + "/ep)") +
                                          " (rounded up)"
                                    : "");
    x.substituted += std::to_string(n) + " × " + std::to_string(width) +
                     (part && ranks > 1 ? " ÷ " + std::to_string(ranks) : "");
  };
  term(sm.expert_params ? "dense params on this GPU" : "params on this GPU", dense, g.ranks);
  if (sm.expert_params) {
    x.formula += " + ";
    x.substituted += " + ";
    term("expert params on this GPU", sm.expert_params, g.experts);
  }
  x.substituted += " = " + std::to_string(value);
  return x;
}

// The optimizer states' line: per parameter for AdamW and SGD, per tensor shape for 8-bit Adam
// and Adafactor.
Explanation optimizer_line(const StaticMemory& sm, const TrainConfig& c, const ZeroGroup& g) {
  const Parallel& p = c.par;
  std::uint64_t per = 0;
  if (optimizer_bytes_per_element(c.optimizer, dtype_bytes(c.optimizer_dtype), &per))
    return static_line(sm, p, g, "static.optimizer_bytes",
                       std::string("Optimizer states (") + optimizer_name(c.optimizer) + ", " +
                           dtype_name(c.optimizer_dtype) + ")",
                       "bytes of state/param", per, 1, sm.optimizer_bytes,
                       "AdamW: two moments, 8 B/param in fp32; SGD+momentum: one; SGD: 0 (ZeRO "
                       "Sec. 5.1); states in the parameters' dtype without master weights: "
                       "torch/optim/adamw.py zeros_like(p)");
  Explanation x;
  x.id = "static.optimizer_bytes";
  x.title = std::string("Optimizer states (") + optimizer_name(c.optimizer) + ")";
  x.formula = c.optimizer == Optimizer::kAdam8bit
                  ? "Σ over parameter tensors of 2n + 8⌈n/2048⌉ (8n below 4096 elements)"
                  : "Σ over parameter tensors of 4(r + c) for matrices, 4n for vectors";
  if (p.zero >= 1 && g.ranks > 1) x.formula += ", ÷ " + g.name + " (rounded up)";
  x.substituted = std::to_string(sm.optimizer_bytes);
  x.bytes = sm.optimizer_bytes;
  x.source = c.optimizer == Optimizer::kAdam8bit
                 ? "Dettmers et al. 2022, 8-bit Optimizers via Block-wise Quantization"
                 : "Shazeer & Stern 2018, Adafactor, Sec. 3";
  return x;
}

// The worst stage's parameters, gradients, master weights and optimizer states.
Explanation explain_params(const Estimate& e, const StaticMemory& sm) {
  const TrainConfig& c = e.config;
  return static_line(sm, c.par, zero_group(c.par), "static.params_bytes", "Parameters",
                     "bytes/param", dtype_bytes(c.param_dtype), 3, sm.params_bytes,
                     "Rajbhandari et al. 2020 (ZeRO), Sec. 5.3 (P_os+g+p partitions parameters)");
}

Explanation explain_grads(const Estimate& e, const StaticMemory& sm) {
  const TrainConfig& c = e.config;
  // FSDP2 at one stage and verl's FSDP1 make them in backward (step/static_at.cpp): the title
  // says when they live, the source what makes them.
  const char* title = "Gradients";
  const char* source = "Rajbhandari et al. 2020 (ZeRO), Sec. 5.2 (P_os+g partitions gradients)";
  if (fsdp2_per_parameter(c)) {
    title =
        "Gradients (FSDP2: each group's reduce-scatter output, made in its backward and freed by "
        "zero_grad; none in the forward and loss of a one-micro-batch step)";
    source =
        "Rajbhandari et al. 2020 (ZeRO), Sec. 5.2 (P_os+g partitions gradients); PyTorch 2.6.0 "
        "_fsdp_collectives.py foreach_reduce, measured (docs/validation.md 4.6)";
  } else if (fsdp1_grads_in_backward(c)) {
    title =
        "Gradients (verl's FSDP1: each unit's fp32 shard, made at its post-backward and freed by "
        "zero_grad at the mini-batch's start; none in the forward and loss of a one-micro-batch "
        "step)";
    source =
        "Rajbhandari et al. 2020 (ZeRO), Sec. 5.2 (P_os+g partitions gradients); PyTorch 2.6 "
        "fsdp/_runtime_utils.py _reduce_grad, verl b178a3c dp_actor.py l.560 (derived)";
  }
  return static_line(sm, c.par, zero_group(c.par), "static.grads_bytes", title, "bytes/grad",
                     dtype_bytes(c.grad_dtype), 2, sm.grads_bytes, source);
}

Explanation explain_master(const Estimate& e, const StaticMemory& sm) {
  const TrainConfig& c = e.config;
  return static_line(sm, c.par, zero_group(c.par), "static.master_bytes", "fp32 master weights",
                     "4", sm.master_bytes ? 4 : 0, 1, sm.master_bytes,
                     "Micikevicius et al. 2018: fp32 master copy; ZeRO Sec. 5.1 partitions it "
                     "with the optimizer states");
}

Explanation explain_optimizer(const Estimate& e, const StaticMemory& sm) {
  return optimizer_line(sm, e.config, zero_group(e.config.par));
}

// The static lines the switches add (FSDP's gathered parameters and unsharded gradients,
// ZeRO-Offload's host memory, DDP's buckets, TransformerEngine's fp8 caches), each where held.
Explanation explain_gathered(const Estimate& e, const StaticMemory& sm) {
  const TrainConfig& c = e.config;
  return explain_product(
      "static.gathered_params_bytes",
      std::string("FSDP: parameters held gathered (") +
          (!gathers_resident(c)
               ? "FSDP2's root group (embedding, final norm, head) and torchtitan's last block, "
                 "from forward to their post-backward: not in the optimizer step"
           : c.accumulate_unsharded
               ? "the stage's, between micro-batches (accumulate_unsharded)"
               : "the stage's, from forward to backward (reshard_after_forward = false)") +
          ", in " + dtype_name(gather_dtype(c)) + ")",
      {{"params held gathered", sm.gathered_params_bytes / dtype_bytes(gather_dtype(c))},
       {"bytes/param", dtype_bytes(gather_dtype(c))}},
      sm.gathered_params_bytes,
      !gathers_resident(c)
          ? "PyTorch 2.6 FSDP2 _fsdp_state.py (the root's post_forward_mesh_info = None; "
            "torch >= 2.8 honours an explicit reshard_after_forward=True, PR #154704); torchtitan "
            "9dec370 parallelize_llama.py l.325-339 (reshard_after_forward = layer_id < "
            "n_layers - 1); resharded at the end of backward, measured (docs/validation.md 4.6)"
          : "PyTorch FSDP2 fully_shard(reshard_after_forward=...); torch.distributed.pipelining "
            "stage.py: set_reshard_after_backward(False) before a non-last backward");
}

Explanation explain_host(const Estimate&, const StaticMemory& sm) {
  return explain_sum(
      "static.host_bytes",
      "ZeRO-Offload: in host memory, not on the GPU (the fp32 parameter partition, its fp32 "
      "gradients, the optimizer states)",
      {{"host bytes", sm.host_bytes}}, sm.host_bytes,
      "Ren et al. 2021 (ZeRO-Offload), Sec. 4; DeepSpeed stage_1_and_2.py "
      "initialize_optimizer_states (cpu_offload: a pinned fp32 gradient partition)");
}

Explanation explain_unsharded_grads(const Estimate& e, const StaticMemory& sm) {
  const TrainConfig& c = e.config;
  return explain_product(
      "static.unsharded_grads_bytes",
      std::string("FSDP: unsharded gradients accumulated between micro-batches (") +
          dtype_name(c.grad_dtype) + ", reduce-scattered at the last)",
      {{"params on this GPU", sm.params}, {"bytes/grad", dtype_bytes(c.grad_dtype)}},
      sm.unsharded_grads_bytes,
      "PyTorch FSDP2 _fsdp_param.py unsharded_accumulated_grad (reduce_dtype); "
      "torch.distributed.pipelining stage.py: set_requires_gradient_sync(False) before a "
      "non-last backward");
}

Explanation explain_ddp_buckets(const Estimate& e, const StaticMemory& sm) {
  const TrainConfig& c = e.config;
  return explain_product(
      "static.ddp_buckets_bytes",
      std::string("DDP's reduce buckets: a copy of the gradients (") + dtype_name(c.grad_dtype) +
          "; gradient_as_bucket_view = False)",
      {{"gradient bytes on this GPU", sm.grads_bytes}, {"copies", 1}}, sm.ddp_buckets_bytes,
      "PyTorch torch/nn/parallel/distributed.py DistributedDataParallel(gradient_as_bucket_view="
      "False): 'gradients will be views pointing to different offsets of allreduce "
      "communication buckets. This can reduce peak memory usage, where the saved memory size "
      "will be equal to the total gradients size' (when True)");
}

Explanation explain_fp8_weights(const Estimate&, const StaticMemory& sm) {
  return explain_product(
      "static.fp8_weights_bytes",
      "TransformerEngine fp8: each linear's cached fp8 weight and transpose (2 B per weight), "
      "and 4 modules' fp8_meta per layer (4 x (5 x amax history + 10) fp32 numbers each)",
      {{"bytes", sm.fp8_weights_bytes}}, sm.fp8_weights_bytes,
      "TransformerEngine v1.13 module/linear.py and layernorm_linear.py (weight_fp8 and "
      "weight_t_fp8 cached while is_first_microbatch is False; Megatron-LM passes it), "
      "module/base.py fp8_meta (amax_history [L, n], scale, scale_inv); not measured");
}

// Each static line's explanation (inventory/params.hpp static_lines), by its key.
using ExplainLine = Explanation (*)(const Estimate& e, const StaticMemory& sm);
struct LineExplanation {
  const char* key;
  ExplainLine explain;
};
const LineExplanation kLineExplanations[] = {{"params_bytes", explain_params},
                                             {"grads_bytes", explain_grads},
                                             {"master_bytes", explain_master},
                                             {"optimizer_bytes", explain_optimizer},
                                             {"gathered_params_bytes", explain_gathered},
                                             {"host_bytes", explain_host},
                                             {"unsharded_grads_bytes", explain_unsharded_grads},
                                             {"ddp_buckets_bytes", explain_ddp_buckets},
                                             {"fp8_weights_bytes", explain_fp8_weights}};

// The static lines in their order: the core ones always, a switch's and the host's when held.
void explain_static_lines(Estimate& e) {
  const StaticMemory& sm = e.worst().stat;
  for (const StaticLine& l : static_lines()) {
    if (l.place != StaticPlace::kCore && sm.*l.bytes == 0) continue;
    for (const LineExplanation& x : kLineExplanations)
      if (std::string_view(x.key) == l.key) e.explain.push_back(x.explain(e, sm));
  }
}

// The FSDP residency lines join the sums only when a switch holds them.
// The static lines of the closed-form total and the peak: the core ones, a switch's when held.
Parts static_parts(const StaticMemory& sm, bool peak) {
  Parts parts;
  for (const StaticLine& l : static_lines())
    if (l.place == StaticPlace::kCore || (l.place == StaticPlace::kResident && sm.*l.bytes > 0))
      parts.push_back({peak ? l.peak_part : l.part, sm.*l.bytes});
  return parts;
}

// The worst stage's closed-form total and its simulated peak, part by part.
void explain_totals(Estimate& e) {
  const Stage& w = e.worst();
  const StaticMemory& sm = w.stat;
  Parts total_parts = {{"activations", w.act.total_bytes}};
  const Parts statics = static_parts(sm, false);
  total_parts.insert(total_parts.end(), statics.begin(), statics.end());
  e.explain.push_back(explain_sum(
      "total_bytes",
      "Closed-form sum of stage " + std::to_string(w.index) +
          " (activations at the in-flight maximum + static; no transients: a bound the papers "
          "print, not what must fit)",
      total_parts, w.total_bytes, "sum of the parts above (Korthikanti et al. 2022, Sec. 4)"));
  Parts peak_parts = static_parts(w.peak_stat, true);
  peak_parts.insert(peak_parts.end(), {{"kept activations", w.peak_activations},
                                       {"recomputed (working set)", w.peak_recompute},
                                       {"transients", w.peak_transients},
                                       {"fragmentation allowance", w.peak_fragmentation}});
  e.explain.push_back(
      explain_sum("peak_bytes",
                  "Peak of the most loaded GPU (stage " + std::to_string(w.index) + ", at " +
                      w.peak_at + "): what must fit",
                  peak_parts, w.peak_bytes,
                  "the simulated step (docs/schedules.md); the figure that decides fits"));
}

// A stack of kinds' KV cache, one part per attention kind. Each part is kv_cache_width (the one
// definition setup.cpp sums) times p·L·s·b; the total was overflow-checked there, so its parts are
// representable.
Parts kv_cache_parts(const Estimate& e, const ModelSpec& m, Checked& ck) {
  const TrainConfig& c = e.config;
  const Bytes pw = dtype_bytes(c.act_dtype);
  Parts parts;
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    const LayerKind& lk = m.kinds[ki];
    if (!lk.has_attention()) continue;
    const std::uint64_t width = kv_cache_width(lk, lk.kv_heads, ck);
    const std::string what = lk.is_mla() ? std::to_string(width) + " (d_c + d_r, MLA)"
                                         : "2 · " + std::to_string(lk.kv_heads) + " kv · " +
                                               std::to_string(lk.head_dim) + " d";
    parts.push_back({lk.name + ": " + std::to_string(pw) + " · " +
                         std::to_string(e.kinds[ki].layers) + " layers · " + what + " · s · b",
                     pw * e.kinds[ki].layers * width * c.seq * c.micro_batch});
  }
  return parts;
}

// The inference KV cache line: MLA's latent, no attention, one kind's K and V, or a stack's sum.
void explain_kv_cache(Estimate& e, const ModelSpec& m, Checked& ck) {
  const TrainConfig& c = e.config;
  const LayerKind& k0_kind = m.kinds[0];
  const Bytes pw = dtype_bytes(c.act_dtype);
  if (m.kinds.size() == 1 && k0_kind.is_mla()) {
    e.explain.push_back(explain_product(
        "kv_cache.total_bytes",
        "Inference KV cache, whole model (p · L · (d_c + d_r) · s · b: MLA's latent and RoPE key)",
        {{"p", pw},
         {"L", m.layers},
         {"d_c + d_r", k0_kind.mla.kv_lora_rank + k0_kind.mla.qk_rope_dim},
         {"s", c.seq},
         {"b", c.micro_batch}},
        e.kv_cache.total_bytes, "DeepSeek-V2 (arXiv 2405.04434), Sec. 2.1.4, Table 1"));
  } else if (m.kinds.size() == 1 && !k0_kind.has_attention()) {
    e.explain.push_back(explain_sum(
        "kv_cache.total_bytes",
        "Inference KV cache, whole model: no attention layer, no keys or values to cache (a "
        "Mamba-2 layer keeps a fixed state instead: see the warnings)",
        {{"attention layers", 0}}, e.kv_cache.total_bytes, "the model has no attention layer"));
  } else if (m.kinds.size() == 1) {
    e.explain.push_back(explain_product(
        "kv_cache.total_bytes", "Inference KV cache, whole model (2 · p · L · kv · d · s · b)",
        {{"2 (K and V)", 2},
         {"p", pw},
         {"L", m.layers},
         {"kv", k0_kind.kv_heads},
         {"d", k0_kind.head_dim},
         {"s", c.seq},
         {"b", c.micro_batch}},
        e.kv_cache.total_bytes, "seed 002_13aa127c0ff0c20b.txt: 2·2·L·H·d·s·b"));
  } else {
    const Parts parts = kv_cache_parts(e, m, ck);
    e.explain.push_back(explain_sum(
        "kv_cache.total_bytes",
        "Inference KV cache, whole model (Σ over layer kinds of p·L·w·s·b; w = 2·kv·d, or d_c + "
        "d_r under MLA)",
        parts, e.kv_cache.total_bytes,
        "seed 002_13aa127c0ff0c20b.txt: 2·2·L·H·d·s·b per layer; DeepSeek-V2, Sec. 2.1.4"));
  }
}

// A Mamba-2 layer's inference state is fixed in s: the convolution's last K-1 inputs and the
// SSM state (transformers' Mamba2 / NemotronH cache: conv_states, recurrent_states).
std::string mamba_state_warning(const LayerKind& lk) {
  const MambaSpec& x = lk.mamba;
  Checked st;  // widths are bounded by validate(); the products may still pass 2^64
  const std::uint64_t values =
      st.add(st.mul(x.conv_kernel - 1, x.conv_dim(), "kv_cache"),
             st.mul(st.mul(x.heads, x.head_dim, "kv_cache"), x.state, "kv_cache"), "kv_cache");
  return "kv_cache counts attention layers only; each Mamba-2 layer ('" + lk.name +
         "') keeps instead a fixed state of b x ((K-1) x (I+2GN) + H x P x N) = b x " +
         (st.overflowed() ? std::string("more than 2^64") : std::to_string(values)) +
         " values, whatever s";
}

// What the estimate cannot show: switches without effect, unmeasured records, uncounted state.
void add_warnings(Estimate& e, const ModelSpec& m) {
  const TrainConfig& c = e.config;
  const Parallel& p = c.par;
  if (p.sp && p.tp == 1) e.warnings.push_back("sp has no effect with tp=1");
  // The hf profile follows the measured transformers sparse blocks; families without one keep
  // the Megatron-style expert records (Mixtral, Qwen2-MoE, Nemotron 3).
  if (c.profile == Profile::kHf)
    for (const LayerKind& lk : m.kinds)
      if (lk.is_moe() && lk.moe.hf_block == HfMoe::kGeneric) {
        e.warnings.push_back(
            "hf profile: this family's transformers sparse block is not measured; its experts "
            "keep the Megatron-style records (router input and probabilities, each routed "
            "copy's input, activation, second-linear input and output)");
        break;
      }
  for (const LayerKind& lk : m.kinds)
    if (lk.is_mamba()) {
      e.warnings.push_back(mamba_state_warning(lk));
      break;
    }
  if (c.profile == Profile::kTextbook &&
      std::any_of(m.kinds.begin(), m.kinds.end(),
                  [](const LayerKind& lk) { return lk.kv_heads != lk.heads; }))
    e.warnings.push_back(
        "textbook profile counts K and V at all query heads, as seed 000 does; use megatron or "
        "pytorch for GQA-exact K/V");
  if (c.profile == Profile::kMegatron && m.norm == NormType::kRmsNorm)
    e.warnings.push_back(
        "megatron profile follows Korthikanti et al. 2022: norm statistics are not counted");
}

}  // namespace

Result<Estimate> estimate(const ModelSpec& m, const TrainConfig& c_in, const GpuSpec* gpu,
                          bool explain) {
  auto setup = make_setup(m, c_in);
  if (!setup.ok()) return setup.error();
  Estimate e;
  static_cast<Setup&>(e) = std::move(setup.value());
  const TrainConfig& c = e.config;
  Checked ck;
  const auto all = all_of(e.kinds[0].inventory.tensors);
  e.per_layer_full_bytes = sum_bytes(all, ck, "per_layer.full_bytes");
  if (gpu) {
    e.has_gpu = true;
    e.gpu = *gpu;
  }
  if (auto err = apply_recompute(e)) return *err;
  const auto kept0 = keep_first_layer(e, ck);
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), c);
  if (auto err = set_device_verdict(e, explain)) return *err;
  if (e.has_gpu && any_offload(c.recompute)) {
    e.offload = offload_timing(e, c.recompute, e.worst_stage, e.gpu,
                               e.eval.stages[e.worst_stage].host_peak_bytes);
    e.has_offload_timing = true;
  }
  if (!explain) return e;
  // Explanations, all built from the records and the numbers above.
  explain_per_layer(e, m, kept0, all);
  explain_stage_layers(e, m);
  explain_activations(e);
  explain_static_lines(e);
  explain_totals(e);
  explain_kv_cache(e, m, ck);
  add_warnings(e, m);
  return e;
}

}  // namespace actmem

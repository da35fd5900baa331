// The estimate: per-stage activations (pipeline in-flight counts), static memory, totals, KV cache.
#include "actmem/estimate.hpp"

#include <algorithm>

#include "actmem/flops.hpp"
#include "actmem/schedule.hpp"
#include "actmem/timeline.hpp"
#include "explain.hpp"
#include "overflow.hpp"

namespace actmem {

namespace {

constexpr const char* kKorthikantiPP =
    "Korthikanti et al. 2022, Sec. 4.2.3: the first stage holds p micro-batches; interleaving "
    "multiplies by 1 + (p-1)/(p·v)";

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

}  // namespace

std::optional<Error> apply_recompute(Estimate& e) {
  const TrainConfig& c = e.config;
  const Parallel& p = c.par;
  // A custom-kept id must name a record of at least one layer kind; each kind keeps those it has.
  for (std::size_t i = 0; i < c.recompute.custom_keep.size(); ++i) {
    const std::string& id = c.recompute.custom_keep[i];
    bool known = false;
    std::string ids;
    for (const KindEstimate& ke : e.kinds)
      for (const auto& t : ke.inventory.tensors) {
        known = known || t.id == id;
        if (ids.find(t.id) == std::string::npos) ids += (ids.empty() ? "" : ", ") + t.id;
      }
    if (!known)
      return make_error("invalid_value", "config.custom_keep[" + std::to_string(i) + "]",
                        "config.custom_keep[" + std::to_string(i) + "]: '" + id +
                            "' is not a tensor of this layer under the " + profile_name(c.profile) +
                            " profile; allowed: " + ids);
  }
  Checked ck;
  for (KindEstimate& ke : e.kinds)
    ke.costs = layer_costs(ke.inventory, c.recompute, ke.flops.total, ke.flops.attention_core);
  const LayerInventory& io = e.io();
  const Bytes in_bytes = sum_bytes(all_of(io.input_layer), ck, "activations.input_layer_bytes");
  const Bytes out_bytes = sum_bytes(all_of(io.output_layer), ck, "activations.output_layer_bytes");
  const Schedule sched = effective_schedule(c);
  for (Stage& s : e.stages) {
    const std::uint64_t r = s.index;
    s.chunk_choices.clear();
    s.chunk_kept.clear();
    Bytes max_layer_kept = 0;
    Bytes regen_alive = 0;
    for (std::size_t ci = 0; ci < s.chunk_sizes.size(); ++ci) {
      s.chunk_choices.push_back(layer_choices(c.recompute, s.chunk_sizes[ci]));
      const std::vector<LayerChoice>& ch = s.chunk_choices.back();
      Bytes kept = 0;
      std::vector<Bytes> regen(ch.size());
      for (std::size_t j = 0; j < ch.size(); ++j) {
        const LayerCosts& k = e.kind_at(s.chunk_first[ci] + j).costs;
        const Bytes b = kept_bytes(ch[j], k);
        regen[j] = regen_bytes(ch[j], k);
        kept = ck.add(kept, b, "activations.layers_bytes");
        max_layer_kept = std::max(max_layer_kept, b);
      }
      s.chunk_kept.push_back(kept);
      // What one backward recompute brings back at a time (Chen et al. 2016): one layer's
      // attention core (selective), one layer (full) or one segment (every-k).
      regen_alive = std::max(regen_alive, max_regen_alive(ch, regen));
    }
    s.choices = s.chunk_choices[0];
    // The pipeline schedule's op order says which chunks' activations coexist at most.
    const InFlight f = max_in_flight(sched, r, p.pp, p.vpp, c.grad_accum, s.chunk_kept);
    s.in_flight = f.chunks;
    s.kept_layer_slots = 0;
    for (std::uint64_t ci = 0; ci < p.vpp; ++ci)
      s.kept_layer_slots =
          ck.add(s.kept_layer_slots, ck.mul(f.per_chunk[ci], s.chunk_sizes[ci], "activations"),
                 "activations");
    StageActivations a;
    a.layers_bytes = f.weight;
    if (r == 0)
      a.input_layer_bytes = ck.mul(f.per_chunk[0], in_bytes, "activations.input_layer_bytes");
    if (r == p.pp - 1)
      a.output_layer_bytes =
          ck.mul(f.per_chunk[p.vpp - 1], out_bytes, "activations.output_layer_bytes");
    a.recompute_working_bytes = regen_alive;
    if (c.recompute.offload) {
      // Offloaded activations live in host memory; the layer being stored or prefetched stays.
      a.host_bytes = a.layers_bytes;
      a.layers_bytes = max_layer_kept;
    }
    a.total_bytes =
        ck.add(ck.add(a.layers_bytes, a.input_layer_bytes, "activations.total_bytes"),
               ck.add(a.output_layer_bytes, a.recompute_working_bytes, "activations.total_bytes"),
               "activations.total_bytes");
    s.act = a;
    s.total_bytes = ck.add(s.act.total_bytes, s.stat.total_bytes, "total_bytes");
  }
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), c);
  // The simulated step (timeline) decides the peak, the most loaded stage and whether it fits.
  auto tl = simulate(e, false);
  if (!tl.ok()) return tl.error();
  for (std::size_t i = 0; i < e.stages.size(); ++i) {
    const StageTimeline& ts = tl.value().stages[i];
    Stage& st = e.stages[i];
    st.peak_bytes = ts.peak_bytes;
    st.peak_at = ts.peak_at;
    st.peak_activations = ts.at_peak.activations;
    st.peak_recompute = ts.at_peak.recompute;
    st.peak_transients = ts.at_peak.transients;
    st.peak_fragmentation = ts.fragmentation_bytes;
  }
  e.worst_stage = tl.value().worst;
  e.recompute_overhead_pct = tl.value().recompute_overhead_pct;
  if (e.has_gpu) {
    const Bytes need = e.worst().peak_bytes;
    e.fits = need <= e.gpu.memory_bytes;
    e.headroom_bytes =
        static_cast<std::int64_t>(e.gpu.memory_bytes) - static_cast<std::int64_t>(need);
  }
  return std::nullopt;
}

Result<Estimate> estimate(const ModelSpec& m, const TrainConfig& c_in, const GpuSpec* gpu,
                          bool explain) {
  Estimate e;
  e.model = m;
  e.config = c_in;
  TrainConfig& c = e.config;
  if (c.seq == 0)
    c.seq = m.pos == PosEncoding::kLearned && m.max_positions > 0
                ? std::min<std::uint64_t>(2048, m.max_positions)
                : 2048;
  if (auto err = validate(m, c)) return *err;
  const Parallel& p = c.par;
  if (c.attention_dropout < 0) c.attention_dropout = m.attention_dropout;
  if (c.hidden_dropout < 0) c.hidden_dropout = m.hidden_dropout;
  // Auto: the fewest micro-batches that reach the schedule's steady state: p for 1F1B, 2p for the
  // interleaved schedule (Megatron-LM runs all-forward-then-backward when m == p).
  if (c.grad_accum == 0) c.grad_accum = p.vpp > 1 ? 2 * p.pp : p.pp;

  // Each layer kind is resolved once: its geometry, inventory, FLOPs and per-layer parameters.
  Checked ck;
  const ParamShards shards{p.tp, p.ep};
  const std::vector<std::uint64_t> model_counts = m.kind_counts(0, m.layers);
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    const LayerKind& lk = m.kinds[ki];
    KindEstimate ke;
    auto geo = resolve_geometry(m, lk, c, c.act_dtype, c.attention_dropout, c.hidden_dropout);
    if (!geo.ok()) return geo.error();
    ke.geometry = geo.value();
    auto inv = build_inventory(m, lk, ke.geometry, c.profile);
    if (!inv.ok()) return inv.error();
    ke.inventory = std::move(inv.value());
    ke.flops = layer_flops(lk, ke.geometry);
    ke.layers = model_counts[ki];
    for (const auto& q : layer_params(m, lk, shards)) {
      const Bytes n = ck.mul(ck.mul(q.rows, q.cols, "static.params"), q.copies, "static.params");
      ke.param_bytes =
          ck.add(ke.param_bytes, ck.mul(n, dtype_bytes(c.param_dtype), "static"), "static");
      ke.largest_param = std::max<Bytes>(ke.largest_param, ck.mul(q.rows, q.cols, "static"));
    }
    e.kinds.push_back(std::move(ke));
  }
  const KindEstimate& k0 = e.kinds[0];
  const LayerKind& k0_kind = m.kinds[0];
  const LayerInventory& I = k0.inventory;
  e.logits_flops = k0.flops.logits;
  const auto all = all_of(I.tensors);
  e.per_layer_full_bytes = sum_bytes(all, ck, "per_layer.full_bytes");

  auto total = total_params(m);
  if (!total.ok()) return total.error();
  e.model_params = total.value();
  const auto embed_p = embedding_params(m, shards);
  const auto head_p = head_params(m, shards, p.pp > 1);
  for (std::uint64_t r = 0; r < p.pp; ++r) {
    Stage s;
    s.index = r;
    s.layers = c.layer_split.empty() ? m.layers / p.pp : c.layer_split[r];
    // A rank's layers spread over its v chunks as evenly as possible (earlier chunks get the
    // extra).
    for (std::uint64_t ci = 0; ci < p.vpp; ++ci)
      s.chunk_sizes.push_back(s.layers / p.vpp + (ci < s.layers % p.vpp ? 1 : 0));
    s.chunk_layers = s.chunk_sizes[0];
    e.stages.push_back(s);
  }
  // Model chunk c·p + r sits on rank r as its chunk c (Megatron-LM); its first global layer is the
  // sum of the sizes of the model chunks before it.
  std::uint64_t next = 0;
  for (std::uint64_t mc = 0; mc < p.pp * p.vpp; ++mc) {
    Stage& s = e.stages[mc % p.pp];
    s.chunk_first.push_back(next);
    next += s.chunk_sizes[mc / p.pp];
  }
  for (Stage& s : e.stages) {
    // One set of parameters per layer the stage holds, per kind.
    std::vector<std::uint64_t> counts(m.kinds.size(), 0);
    for (std::uint64_t ci = 0; ci < p.vpp; ++ci) {
      const auto n = m.kind_counts(s.chunk_first[ci], s.chunk_sizes[ci]);
      for (std::size_t ki = 0; ki < n.size(); ++ki) counts[ki] += n[ki];
    }
    std::vector<ParamRecord> scaled;
    for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
      if (counts[ki] == 0) continue;
      for (ParamRecord q : layer_params(m, m.kinds[ki], shards)) {
        q.copies = ck.mul(q.copies, counts[ki], "static.params");
        scaled.push_back(q);
      }
    }
    if (s.index == 0) scaled.insert(scaled.end(), embed_p.begin(), embed_p.end());
    if (s.index == p.pp - 1) scaled.insert(scaled.end(), head_p.begin(), head_p.end());
    auto st = static_memory(scaled, c);
    if (!st.ok()) return st.error();
    s.stat = st.value();
  }
  if (gpu) {
    e.has_gpu = true;
    e.gpu = *gpu;
  }
  if (auto err = apply_recompute(e)) return *err;
  const Stage& s0 = e.stages[0];
  const auto kept0 =
      kept_tensors(I, s0.choices.empty() ? LayerChoice::kKeep : s0.choices[0], c.recompute);
  for (const auto* r : kept0) {
    e.kept.push_back(*r);
    e.per_layer_kept_bytes = ck.add(e.per_layer_kept_bytes, r->bytes, "per_layer.activation_bytes");
    if (r->quadratic)
      e.per_layer_quadratic_bytes += r->bytes;
    else
      e.per_layer_linear_bytes += r->bytes;
  }

  // KV cache for inference, kept apart from training activations (seed 002_13aa127c0ff0c20b.txt:
  // 2 · 2 · L · H · d · s · b with H the KV heads, GQA-aware), summed over the layers of each kind.
  // Per GPU: the pipeline rank holding the most, its kv heads divided by TP, its tokens by CP.
  const Bytes pw = dtype_bytes(c.act_dtype);
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    const LayerKind& lk = m.kinds[ki];
    e.kv_cache.total_bytes =
        ck.add(e.kv_cache.total_bytes,
               ck.mul(ck.mul(ck.mul(2 * pw, e.kinds[ki].layers, "kv_cache"),
                             ck.mul(lk.kv_heads, lk.head_dim, "kv_cache"), "kv_cache"),
                      ck.mul(c.seq, c.micro_batch, "kv_cache"), "kv_cache"),
               "kv_cache");
  }
  for (const Stage& s : e.stages) {
    Bytes stage_kv = 0;
    for (std::uint64_t ci = 0; ci < p.vpp; ++ci)
      for (std::uint64_t j = 0; j < s.chunk_sizes[ci]; ++j) {
        const LayerGeometry& lg = e.kind_at(s.chunk_first[ci] + j).geometry;
        stage_kv =
            ck.add(stage_kv,
                   ck.mul(ck.mul(2 * pw, ck.mul(lg.kv.value, lg.d.value, "kv_cache"), "kv_cache"),
                          ck.mul(lg.s_tp.value, c.micro_batch, "kv_cache"), "kv_cache"),
                   "kv_cache");
      }
    e.kv_cache.per_gpu_bytes = std::max(e.kv_cache.per_gpu_bytes, stage_kv);
  }
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), c);

  if (!explain) return e;
  // Explanations, all built from the records and the numbers above.
  using detail::explain_product;
  using detail::explain_records;
  using detail::explain_sum;
  const Stage& w = e.worst();
  e.explain.push_back(explain_records(
      "per_layer.activation_bytes",
      "What one layer keeps for backward (" + recompute_name(c.recompute) + ")", kept0));
  if (c.recompute.kind != RecomputeKind::kNone)
    e.explain.push_back(explain_records("per_layer.full_bytes",
                                        "What one layer would keep without recompute", all));
  // Kept bytes of all in-flight chunks at the stage's activation peak (offload: in host memory).
  const Bytes layers_total = c.recompute.offload ? w.act.host_bytes : w.act.layers_bytes;
  const bool uniform_layers = m.kinds.size() == 1 &&
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
  } else {
    e.explain.push_back(explain_sum(
        "activations.layers_bytes",
        "Layers of stage " + std::to_string(w.index) + " (kept bytes of every in-flight chunk)",
        {{"Σ over in-flight chunks of their layers' kept bytes", layers_total}}, layers_total,
        "Chen et al. 2016, Sec. 4; pipeline op order (docs/schedules.md)"));
  }
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
  const StaticMemory& sm = w.stat;
  // Static lines: params on this GPU × bytes per param, ÷ the ZeRO group when the stage applies
  // (routed experts partition over dp/ep).
  const std::uint64_t edp = p.ep > 1 ? p.dp / p.ep : p.dp;
  auto static_line = [&](const char* id, const std::string& title, const std::string& per,
                         Bytes width, int stage, Bytes value, const char* source) {
    Explanation x;
    x.id = id;
    x.title = title;
    x.bytes = value;
    x.source = source;
    const std::uint64_t dense = sm.params - sm.expert_params;
    const bool part = p.zero >= stage && p.dp > 1;
    auto term = [&](const std::string& who, std::uint64_t n, std::uint64_t group) {
      x.formula += who + " × " + per +
                   (part && group > 1
                        ? " ÷ " + std::string(group == p.dp ? "dp" : "(dp/ep)") + " (rounded up)"
                        : "");
      x.substituted += std::to_string(n) + " × " + std::to_string(width) +
                       (part && group > 1 ? " ÷ " + std::to_string(group) : "");
    };
    term(sm.expert_params ? "dense params on this GPU" : "params on this GPU", dense, p.dp);
    if (sm.expert_params) {
      x.formula += " + ";
      x.substituted += " + ";
      term("expert params on this GPU", sm.expert_params, edp);
    }
    x.substituted += " = " + std::to_string(value);
    e.explain.push_back(x);
  };
  static_line("static.params_bytes", "Parameters", "bytes/param", dtype_bytes(c.param_dtype), 3,
              sm.params_bytes,
              "Rajbhandari et al. 2020 (ZeRO), Sec. 5.3 (P_os+g+p partitions parameters)");
  static_line("static.grads_bytes", "Gradients", "bytes/grad", dtype_bytes(c.grad_dtype), 2,
              sm.grads_bytes,
              "Rajbhandari et al. 2020 (ZeRO), Sec. 5.2 (P_os+g partitions gradients)");
  static_line("static.master_bytes", "fp32 master weights", "4", sm.master_bytes ? 4 : 0, 1,
              sm.master_bytes,
              "Micikevicius et al. 2018: fp32 master copy; ZeRO Sec. 5.1 partitions it with the "
              "optimizer states");
  if (c.optimizer == Optimizer::kAdamW || c.optimizer == Optimizer::kSgd ||
      c.optimizer == Optimizer::kSgdMomentum) {
    const Bytes per = c.optimizer == Optimizer::kAdamW         ? 8
                      : c.optimizer == Optimizer::kSgdMomentum ? 4
                                                               : 0;
    static_line("static.optimizer_bytes",
                std::string("Optimizer states (") + optimizer_name(c.optimizer) + ")",
                "bytes of state/param", per, 1, sm.optimizer_bytes,
                "AdamW: two fp32 moments, 8 B/param; SGD+momentum: 4; SGD: 0 (ZeRO Sec. 5.1)");
  } else {
    Explanation x;
    x.id = "static.optimizer_bytes";
    x.title = std::string("Optimizer states (") + optimizer_name(c.optimizer) + ")";
    x.formula = c.optimizer == Optimizer::kAdam8bit
                    ? "Σ over parameter tensors of 2n + 8⌈n/2048⌉ (8n below 4096 elements)"
                    : "Σ over parameter tensors of 4(r + c) for matrices, 4n for vectors";
    if (p.zero >= 1 && p.dp > 1) x.formula += ", ÷ dp (rounded up)";
    x.substituted = std::to_string(sm.optimizer_bytes);
    x.bytes = sm.optimizer_bytes;
    x.source = c.optimizer == Optimizer::kAdam8bit
                   ? "Dettmers et al. 2022, 8-bit Optimizers via Block-wise Quantization"
                   : "Shazeer & Stern 2018, Adafactor, Sec. 3";
    e.explain.push_back(x);
  }
  e.explain.push_back(explain_sum(
      "total_bytes", "Total on the most loaded GPU (stage " + std::to_string(w.index) + ")",
      {{"activations", w.act.total_bytes},
       {"parameters", sm.params_bytes},
       {"gradients", sm.grads_bytes},
       {"master weights", sm.master_bytes},
       {"optimizer", sm.optimizer_bytes}},
      w.total_bytes, "sum of the parts above"));
  e.explain.push_back(explain_sum(
      "peak_bytes", "Simulated peak of stage " + std::to_string(w.index) + ", at " + w.peak_at,
      {{"static", sm.total_bytes},
       {"kept activations", w.peak_activations},
       {"recomputed", w.peak_recompute},
       {"transients", w.peak_transients},
       {"fragmentation allowance", w.peak_fragmentation}},
      w.peak_bytes, "the step timeline (docs/schedules.md); this is what must fit"));
  if (m.kinds.size() == 1) {
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
    std::vector<std::pair<std::string, Bytes>> parts;
    for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
      const LayerKind& lk = m.kinds[ki];
      parts.push_back(
          {lk.name + ": 2 · " + std::to_string(pw) + " · " + std::to_string(e.kinds[ki].layers) +
               " layers · " + std::to_string(lk.kv_heads) + " kv · " + std::to_string(lk.head_dim) +
               " d · s · b",
           2 * pw * e.kinds[ki].layers * lk.kv_heads * lk.head_dim * c.seq * c.micro_batch});
    }
    e.explain.push_back(explain_sum(
        "kv_cache.total_bytes",
        "Inference KV cache, whole model (Σ over layer kinds of 2·p·L·kv·d·s·b)", parts,
        e.kv_cache.total_bytes, "seed 002_13aa127c0ff0c20b.txt: 2·2·L·H·d·s·b per layer"));
  }

  if (p.sp && p.tp == 1) e.warnings.push_back("sp has no effect with tp=1");
  if (c.profile == Profile::kTextbook &&
      std::any_of(m.kinds.begin(), m.kinds.end(),
                  [](const LayerKind& lk) { return lk.kv_heads != lk.heads; }))
    e.warnings.push_back(
        "textbook profile counts K and V at all query heads, as seed 000 does; use megatron or "
        "pytorch for GQA-exact K/V");
  if (c.profile == Profile::kMegatron && m.norm == NormType::kRmsNorm)
    e.warnings.push_back(
        "megatron profile follows Korthikanti et al. 2022: norm statistics are not counted");
  return e;
}

}  // namespace actmem

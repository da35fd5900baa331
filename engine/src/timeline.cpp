// Event-level simulation of one training step per pipeline stage (see docs/schedules.md).
#include "actmem/timeline.hpp"

#include <algorithm>

#include "actmem/estimate.hpp"
#include "actmem/policy.hpp"
#include "actmem/schedule.hpp"
#include "overflow.hpp"

namespace actmem {

namespace {

enum class Kind : char {
  kFwd = 'F',
  kRecompute = 'R',
  kBwd = 'B',
  kLossFwd = 'l',
  kLossBwd = 'L',
  kOptimizer = 'O'
};

struct EventKey {
  Kind kind = Kind::kFwd;
  std::uint32_t mb = 0, chunk = 0;
  std::uint64_t lo = 0, hi = 0;  // global layer indices
};

std::string label(const EventKey& k) {
  const std::string where = " mb" + std::to_string(k.mb) + " c" + std::to_string(k.chunk);
  switch (k.kind) {
    case Kind::kFwd:
      return "F" + where + " L" + std::to_string(k.lo);
    case Kind::kBwd:
      return "B" + where + " L" + std::to_string(k.lo);
    case Kind::kRecompute:
      return "R" + where + " L" + std::to_string(k.lo) +
             (k.hi != k.lo ? "-L" + std::to_string(k.hi) : "");
    case Kind::kLossFwd:
      return "loss fwd mb" + std::to_string(k.mb);
    case Kind::kLossBwd:
      return "loss bwd mb" + std::to_string(k.mb);
    case Kind::kOptimizer:
      return "optimizer step";
  }
  return "?";
}

// Every sum the simulation forms goes through `ck` (a fuzzer found the unchecked version wrapping,
// fuzz/regressions/): an overflow anywhere becomes the config.seq error, never a wrapped peak.
constexpr const char* kPeakField = "timeline.peak_bytes";

struct Sim {
  Checked* ck = nullptr;
  Bytes stat = 0, act = 0, rec = 0, host = 0, host_peak = 0, pcie = 0;
  Bytes peak = 0;
  bool seen = false;
  EventKey peak_key;
  TimelineEvent peak_event;
  std::vector<TimelineEvent>* out = nullptr;

  // An event whose kept/recomputed bytes are given (the per-chunk fast path).
  void event_at(const EventKey& k, Bytes a, Bytes r, Bytes trans) {
    const Bytes keep_a = act, keep_r = rec;
    act = a;
    rec = r;
    event(k, trans);
    act = keep_a;
    rec = keep_r;
  }

  void event(const EventKey& k, Bytes trans) {
    const Bytes live =
        ck->add(ck->add(stat, act, kPeakField), ck->add(rec, trans, kPeakField), kPeakField);
    if (!seen || live > peak) {  // the first event, then only a strictly higher one
      seen = true;
      peak = live;
      peak_key = k;
      peak_event = TimelineEvent{"", live, act, rec, trans};
    }
    if (out) out->push_back(TimelineEvent{label(k), live, act, rec, trans});
  }
};

Bytes record_bytes(const std::vector<TensorRecord>& v, const char* id) {
  for (const auto& r : v)
    if (r.id == id) return r.bytes;
  return 0;
}

}  // namespace

Result<Timeline> simulate(const Estimate& e, bool events_all, std::int64_t only_stage,
                          bool per_op) {
  const TrainConfig& c = e.config;
  const Parallel& par = c.par;
  const std::uint64_t p = par.pp, v = par.vpp, m = c.grad_accum;
  Timeline tl;
  Checked ck;

  // Transient buffers, each a named record (sizes from the inventory and parameter records). The
  // ones that belong to one layer (ZeRO-3's gathered parameters, the backward's gradient buffers)
  // follow the kind of the layer running; the named list shows the largest.
  const LayerCosts& k0 = e.kinds[0].costs;  // the layer input is b·s·h for every kind
  const Bytes tp_gather =
      par.sp && par.tp > 1 ? ck.mul(k0.checkpoint, par.tp, "timeline.sp_allgather") : 0;
  const LayerInventory& io = e.io();
  const Bytes logits = std::max(record_bytes(io.output_layer, "logits.fp32"),
                                record_bytes(io.output_layer, "loss.log_softmax_out"));
  Bytes largest_param = 0, zero3_gather = 0, grad_peak = 0;
  std::string grad_peak_at;
  for (const KindEstimate& ke : e.kinds) {
    largest_param = std::max<Bytes>(largest_param, ke.largest_param);
    if (par.zero >= 3) zero3_gather = std::max(zero3_gather, ke.param_bytes);
    if (grad_peak_at.empty() || ke.costs.grad_peak > grad_peak)
      grad_peak = ke.costs.grad_peak, grad_peak_at = ke.costs.grad_peak_at;
  }
  for (const auto& q : embedding_params(e.model, ParamShards{par.tp, par.ep}))
    largest_param = std::max<Bytes>(largest_param, q.rows * q.cols);
  const Bytes opt_temp = ck.mul(par.zero >= 1 ? ceil_div(largest_param, par.dp) : largest_param, 4,
                                "timeline.optimizer_step");
  const Bytes ws = c.cublas_workspace;
  const std::vector<Transient> named = {
      {"cublas.workspace", ws, "whole step",
       "PyTorch CUDA default cuBLAS workspace on sm90 (4096 KiB x 8)"},
      {"sp.allgather", tp_gather, "each layer's forward and backward",
       "Korthikanti et al. 2022, Sec. 4.2.2: SP gathers the sequence before the TP GEMMs"},
      {"zero3.param_allgather", zero3_gather, "each layer's forward and backward",
       "Rajbhandari et al. 2020, Sec. 5.3: parameters gathered per layer"},
      {"bwd.layer_grads", grad_peak, "each layer's backward, at " + grad_peak_at,
       "gradient buffers alive at the layer backward's fullest step (docs/formulas.md, backward "
       "working set)"},
      {"loss.fp32_logits_buffer", logits, "loss forward and backward",
       "cross-entropy works on fp32 logits (Korthikanti et al. 2022, Sec. 4.3)"},
      {"loss.logits_grad", logits, "loss backward", "gradient of the fp32 logits"},
      {"grad.reduce_bucket", par.dp > 1 ? c.grad_bucket : 0, "backward (data parallel)",
       "PyTorch DDP bucket_cap_mb = 25"},
      {"optimizer.step_temp", opt_temp, "optimizer step",
       "fp32 temporaries of the largest parameter tensor (foreach AdamW)"},
  };
  // Per kind: the transients alive during one layer's forward (and recompute) and backward.
  std::vector<Bytes> kind_trans_f, kind_trans_b;
  for (const KindEstimate& ke : e.kinds) {
    const Bytes f =
        ck.add(ck.add(ws, tp_gather, kPeakField), par.zero >= 3 ? ke.param_bytes : 0, kPeakField);
    kind_trans_f.push_back(f);
    kind_trans_b.push_back(ck.add(ck.add(f, ke.costs.grad_peak, kPeakField),
                                  par.dp > 1 ? c.grad_bucket : 0, kPeakField));
  }
  const Schedule sched = effective_schedule(c);
  Bytes in_bytes = 0, out_bytes = 0;
  for (const auto& r : io.input_layer) in_bytes = ck.add(in_bytes, r.bytes, "timeline");
  for (const auto& r : io.output_layer) out_bytes = ck.add(out_bytes, r.bytes, "timeline");
  for (std::uint64_t r = 0; r < p; ++r) {
    const Stage& st = e.stages[r];
    const bool events =
        events_all && (only_stage < 0 || static_cast<std::uint64_t>(only_stage) == r);
    const bool layer_events = events && !per_op;
    // Each layer's bytes and transients, from its kind's costs.
    std::vector<std::vector<Bytes>> kept(v), regen(v), full(v), tr_f(v), tr_b(v);
    for (std::uint64_t ci = 0; ci < v; ++ci)
      for (std::size_t j = 0; j < st.chunk_choices[ci].size(); ++j) {
        const std::size_t ki = e.model.kind_index(st.chunk_first[ci] + j);
        const LayerCosts& k = e.kinds[ki].costs;
        const LayerChoice cj = st.chunk_choices[ci][j];
        kept[ci].push_back(kept_bytes(cj, k));
        regen[ci].push_back(regen_bytes(cj, k));
        full[ci].push_back(k.full);
        tr_f[ci].push_back(kind_trans_f[ki]);
        tr_b[ci].push_back(kind_trans_b[ki]);
      }
    StageTimeline out;
    out.stage = r;
    out.static_bytes = st.stat.total_bytes;
    Sim s;
    s.ck = &ck;
    auto add = [&](Bytes a, Bytes b) { return ck.add(a, b, kPeakField); };
    s.stat = st.stat.total_bytes;
    if (events) s.out = &out.events;
    const bool off = c.recompute.offload;
    auto global = [&](std::uint32_t chunk, std::uint64_t j) { return st.chunk_first[chunk] + j; };
    // The last stage's loss: the output-layer records join the kept bytes with the fp32 logits
    // buffer; its backward adds their gradient, then the output layer is freed.
    auto loss_forward = [&](const PipeOp& op) {
      s.act = add(s.act, out_bytes);
      s.event(EventKey{Kind::kLossFwd, op.micro_batch, op.chunk, 0, 0}, add(ws, logits));
    };
    auto loss_backward = [&](const PipeOp& op) {
      s.event(EventKey{Kind::kLossBwd, op.micro_batch, op.chunk, 0, 0},
              add(ws, ck.mul(2, logits, kPeakField)));
      s.act -= out_bytes;
    };
    if (!layer_events) {
      // Peak-only fast path: each chunk's forward and backward reduced to its highest event
      // (offset from the kept bytes at the op's start), so an op costs O(1). Gives the same
      // peak and the same peak event as the layer-by-layer loop below (tests/test_timeline.cpp).
      struct ChunkPeak {
        Bytes f_act =
            0;  // kept bytes added before the forward's highest event, plus the full layer
        std::uint64_t f_j = 0;
        Bytes f_trans = 0;
        std::int64_t b_act =
            0;  // kept-bytes offset at the backward's highest event (≤ 0 unless offload)
        Bytes b_rec = 0, b_trans = 0;
        EventKey b_key;
        Bytes kept_gpu = 0, kept_host = 0;
      };
      std::vector<ChunkPeak> cp(v);
      for (std::uint64_t ci = 0; ci < v; ++ci) {
        const std::vector<LayerChoice>& ch = st.chunk_choices[ci];
        const std::vector<Bytes>& kp = kept[ci];
        const std::vector<Bytes>& rg = regen[ci];
        const std::uint64_t n = ch.size();
        ChunkPeak& q = cp[ci];
        Bytes prefix = 0, best = 0;
        bool any = false;
        for (std::uint64_t j = 0; j < n; ++j) {
          const Bytes live = add(add(prefix, full[ci][j]), tr_f[ci][j]);
          if (!any || live > best) best = live, q.f_j = j, q.f_trans = tr_f[ci][j], any = true;
          if (off)
            q.kept_host = add(q.kept_host, kp[j]);
          else
            prefix = add(prefix, kp[j]), q.kept_gpu = add(q.kept_gpu, kp[j]);
        }
        q.f_act = best - q.f_trans;
        std::int64_t rel = 0, top = 0;
        Bytes rec = 0;
        any = false;
        auto consider = [&](const EventKey& key, Bytes trans) {
          const std::int64_t live =
              ck.add_signed(rel, static_cast<std::int64_t>(add(rec, trans)), kPeakField);
          if (!any || live > top) {
            top = live, any = true;
            q.b_act = rel, q.b_rec = rec, q.b_trans = trans, q.b_key = key;
          }
        };
        for (std::uint64_t j = n; j-- > 0;) {
          std::size_t s0 = 0;
          if (regenerates_before(ch, rg, j, &s0)) {
            for (std::size_t i2 = s0; i2 <= j; ++i2) rec = add(rec, rg[i2]);
            consider(EventKey{Kind::kRecompute, 0, 0, s0, j}, tr_f[ci][j]);
          }
          if (off) rel = ck.add_signed(rel, static_cast<std::int64_t>(kp[j]), kPeakField);
          consider(EventKey{Kind::kBwd, 0, 0, j, 0}, tr_b[ci][j]);
          rel = ck.add_signed(rel, -static_cast<std::int64_t>(kp[j]), kPeakField);
          rec -= rg[j];
        }
      }
      // The collapsed op walk (schedule.hpp): O(p·v) ops whatever the number of micro-batches.
      auto bulk = [&](bool forward, std::uint32_t chunk, std::uint64_t n) {
        const ChunkPeak& q = cp[chunk];
        Bytes per = q.kept_gpu;
        if (r == 0 && chunk == 0) per = add(per, in_bytes);
        if (r == p - 1 && chunk == v - 1) per = add(per, out_bytes);
        const Bytes d = ck.mul(per, n, kPeakField), h = ck.mul(q.kept_host, n, kPeakField);
        if (forward) {
          s.act = add(s.act, d);
          s.host = add(s.host, h);
          s.host_peak = std::max(s.host_peak, s.host);
        } else {
          s.act -= d;
          s.host -= h;
        }
      };
      for_each_op_collapsed(
          sched, r, p, v, m,
          [&](const PipeOp& op) {
            const bool first = r == 0 && op.chunk == 0;
            const bool last = r == p - 1 && op.chunk == v - 1;
            const ChunkPeak& q = cp[op.chunk];
            if (op.forward) {
              if (first) s.act = add(s.act, in_bytes);
              s.event_at(EventKey{Kind::kFwd, op.micro_batch, op.chunk, global(op.chunk, q.f_j), 0},
                         add(s.act, q.f_act), s.rec, q.f_trans);
              s.act = add(s.act, q.kept_gpu);
              s.host = add(s.host, q.kept_host);
              s.host_peak = std::max(s.host_peak, s.host);
              if (last) loss_forward(op);
            } else {
              if (last) loss_backward(op);
              EventKey key = q.b_key;
              key.mb = op.micro_batch;
              key.chunk = op.chunk;
              key.lo = global(op.chunk, key.lo);
              if (key.kind == Kind::kRecompute) key.hi = global(op.chunk, key.hi);
              s.event_at(key,
                         static_cast<Bytes>(
                             ck.add_signed(static_cast<std::int64_t>(s.act), q.b_act, kPeakField)),
                         q.b_rec, q.b_trans);
              s.host -= q.kept_host;
              s.act -= q.kept_gpu;
              if (first) s.act -= in_bytes;
            }
          },
          bulk);
      // Offload traffic: every micro-batch's pass through each chunk moves its kept bytes out and
      // back (the event path below adds the same bytes layer by layer).
      for (const ChunkPeak& q : cp)
        s.pcie = add(s.pcie, ck.mul(ck.mul(q.kept_host, m, kPeakField), 2, kPeakField));
    } else {
      for (const PipeOp& op : pipeline_ops(sched, r, p, v, m)) {
        const std::vector<LayerChoice>& ch = st.chunk_choices[op.chunk];
        const std::vector<Bytes>& kp = kept[op.chunk];
        const std::vector<Bytes>& rg = regen[op.chunk];
        const std::uint64_t n = ch.size();
        const bool first = r == 0 && op.chunk == 0;
        const bool last = r == p - 1 && op.chunk == v - 1;
        if (op.forward) {
          if (first) s.act = add(s.act, in_bytes);
          for (std::uint64_t j = 0; j < n; ++j) {
            // While the layer runs all of its records exist; afterwards only the kept ones stay.
            s.act = add(s.act, full[op.chunk][j]);
            s.event(EventKey{Kind::kFwd, op.micro_batch, op.chunk, global(op.chunk, j), 0},
                    tr_f[op.chunk][j]);
            s.act -= full[op.chunk][j];
            if (off) {
              s.host = add(s.host, kp[j]);
              s.pcie = add(s.pcie, kp[j]);
              s.host_peak = std::max(s.host_peak, s.host);
            } else {
              s.act = add(s.act, kp[j]);
            }
          }
          if (last) loss_forward(op);
        } else {
          if (last) loss_backward(op);
          for (std::uint64_t j = n; j-- > 0;) {
            std::size_t s0 = 0;
            if (regenerates_before(ch, rg, j, &s0)) {
              for (std::size_t i = s0; i <= j; ++i) s.rec = add(s.rec, rg[i]);
              s.event(EventKey{Kind::kRecompute, op.micro_batch, op.chunk, global(op.chunk, s0),
                               global(op.chunk, j)},
                      tr_f[op.chunk][j]);
            }
            if (off) {  // the layer's kept tensors come back for its backward
              s.host -= kp[j];
              s.pcie = add(s.pcie, kp[j]);
              s.act = add(s.act, kp[j]);
            }
            s.event(EventKey{Kind::kBwd, op.micro_batch, op.chunk, global(op.chunk, j), 0},
                    tr_b[op.chunk][j]);
            s.act -= kp[j];
            s.rec -= rg[j];
          }
          if (first) s.act -= in_bytes;
        }
      }
    }
    s.event(EventKey{Kind::kOptimizer, 0, 0, 0, 0}, add(ws, opt_temp));
    out.fragmentation_bytes =
        static_cast<Bytes>(static_cast<double>(s.peak) * c.fragmentation_pct / 100.0);
    out.peak_bytes = ck.add(s.peak, out.fragmentation_bytes, "timeline.peak_bytes");
    out.peak_at = label(s.peak_key);
    out.at_peak = s.peak_event;
    out.at_peak.label = out.peak_at;
    out.host_peak_bytes = s.host_peak;
    out.pcie_bytes = s.pcie;
    if (events_all) out.transients = named;  // the peak-only estimate path skips the copies
    tl.stages.push_back(std::move(out));
  }
  for (std::size_t i = 1; i < tl.stages.size(); ++i)
    if (tl.stages[i].peak_bytes > tl.stages[tl.worst].peak_bytes) tl.worst = i;

  // Recompute overhead: extra forward FLOPs over the step's 3x forward (forward + 2x backward).
  double layers_fwd = 0, extra = 0;
  for (const Stage& st : e.stages)
    for (std::size_t ci = 0; ci < st.chunk_choices.size(); ++ci)
      for (std::size_t j = 0; j < st.chunk_choices[ci].size(); ++j) {
        const LayerCosts& k = e.kind_at(st.chunk_first[ci] + j).costs;
        layers_fwd += k.flops_fwd;
        extra += regen_flops(st.chunk_choices[ci][j], k);
      }
  tl.step_flops = 3.0 * (layers_fwd + e.logits_flops);
  tl.extra_flops = extra;
  tl.recompute_overhead_pct = tl.step_flops > 0 ? 100.0 * extra / tl.step_flops : 0.0;
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), c);
  return tl;
}

}  // namespace actmem

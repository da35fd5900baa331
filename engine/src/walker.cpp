// The one numeric walk of a training step (docs/schedules.md): per rank, each chunk's forward and
// backward reduced to their highest events, then the pipeline ops in schedule order; with a
// recorder, every op and layer.
#include "walker.hpp"

#include <algorithm>

#include "overflow.hpp"

namespace actmem {

namespace detail {

namespace {

// Every sum the walk forms goes through `ck` (a fuzzer found the unchecked version wrapping,
// fuzz/regressions/): an overflow anywhere becomes the config.seq error, never a wrapped peak.
constexpr const char* kPeakField = "timeline.peak_bytes";

// The live state of one rank and its first maximum.
struct State {
  Checked* ck = nullptr;
  Recorder* rec = nullptr;
  Bytes stat = 0, act = 0, rec_bytes = 0, host = 0, host_peak = 0;
  Bytes peak = 0;
  bool seen = false;
  StepEvent peak_key;
  LiveBytes peak_live;

  Bytes add(Bytes a, Bytes b) { return ck->add(a, b, kPeakField); }

  // An event with the given kept and recomputed bytes (the first event, then only a strictly
  // higher one, is the peak).
  void event(const StepEvent& k, Bytes a, Bytes r, Bytes trans) {
    const Bytes live = add(add(stat, a), add(r, trans));
    if (!seen || live > peak) {
      seen = true;
      peak = live;
      peak_key = k;
      peak_live = LiveBytes{live, a, r, trans};
    }
    if (rec) rec->event(k, LiveBytes{live, a, r, trans});
  }
};

// The in-flight maximum: (micro-batch, chunk) forwards whose backward has not run, weighted by
// the chunk's kept bytes; the first maximum wins, equal weight with more chunks counts as more.
struct InFlightTrack {
  std::uint64_t chunks = 0, weight = 0, best_chunks = 0, best_weight = 0;
  bool first = true;
  std::uint64_t* per_chunk = nullptr;
  std::uint64_t* best_per_chunk = nullptr;
  std::size_t v = 0;

  void apply(bool forward, std::uint32_t c, std::uint64_t n, Bytes w) {
    if (forward) {
      chunks += n, per_chunk[c] += n, weight += n * w;
    } else {
      chunks -= n, per_chunk[c] -= n, weight -= n * w;
    }
  }
  void consider() {
    if (first || weight > best_weight || (weight == best_weight && chunks > best_chunks)) {
      best_chunks = chunks, best_weight = weight;
      std::copy(per_chunk, per_chunk + v, best_per_chunk);
      first = false;
    }
  }
};

}  // namespace

void fill_layers(const Setup& s, const Recompute& r, Evaluation::Scratch& sc, double* layers_fwd,
                 double* extra) {
  const std::uint64_t L = s.model.layers;
  sc.choice.resize(L);
  sc.kept.resize(L), sc.regen.resize(L), sc.full.resize(L);
  sc.trans_f.resize(L), sc.trans_b.resize(L);
  double fwd = 0, ex = 0;
  for (const RankSetup& rk : s.ranks)
    for (std::size_t ci = 0; ci < rk.chunk_sizes.size(); ++ci)
      for (std::uint64_t j = 0; j < rk.chunk_sizes[ci]; ++j) {
        const std::uint64_t g = rk.chunk_first[ci] + j;
        const KindEstimate& k = s.kind_at(g);
        const LayerChoice c = choice_at(r, j);
        sc.choice[g] = c;
        sc.kept[g] = kept_bytes(c, k.costs);
        sc.regen[g] = regen_bytes(c, k.costs);
        sc.full[g] = k.costs.full;
        sc.trans_f[g] = k.trans_fwd;
        sc.trans_b[g] = k.trans_bwd;
        fwd += k.costs.flops_fwd;
        ex += regen_flops(c, k.costs);
      }
  *layers_fwd = fwd;
  *extra = ex;
}

void walk_rank(const Setup& s, bool off, std::uint64_t r, Evaluation::Scratch& sc, Checked& ck,
               Recorder* rec, bool layer_events, StageEval* out) {
  const TrainConfig& c = s.config;
  const std::uint64_t p = c.par.pp, v = c.par.vpp, m = c.grad_accum;
  const RankSetup& rk = s.ranks[r];
  const Schedule sched = effective_schedule(c);
  auto add = [&](Bytes a, Bytes b) { return ck.add(a, b, kPeakField); };
  sc.chunks.resize(v);
  sc.chunk_kept.resize(v);
  sc.per_chunk.assign(v, 0);
  sc.best_per_chunk.assign(v, 0);

  // Each chunk's forward and backward reduced to its highest event (offset from the kept bytes at
  // the op's start), so an op costs O(1); with the closed-form parts of the stage's activations.
  Bytes max_layer_kept = 0, regen_alive = 0;
  for (std::uint64_t ci = 0; ci < v; ++ci) {
    const std::uint64_t g0 = rk.chunk_first[ci], n = rk.chunk_sizes[ci];
    const LayerChoice* ch = sc.choice.data() + g0;
    const Bytes* kp = sc.kept.data() + g0;
    const Bytes* rg = sc.regen.data() + g0;
    Evaluation::Scratch::Chunk& q = sc.chunks[ci];
    q = Evaluation::Scratch::Chunk{};
    Bytes prefix = 0, best = 0, chunk_kept = 0;
    bool any = false;
    for (std::uint64_t j = 0; j < n; ++j) {
      // While a layer runs forward all of its records exist; afterwards only the kept ones stay.
      const Bytes live = add(add(prefix, sc.full[g0 + j]), sc.trans_f[g0 + j]);
      if (!any || live > best) best = live, q.f_j = j, q.f_trans = sc.trans_f[g0 + j], any = true;
      chunk_kept = ck.add(chunk_kept, kp[j], "activations.layers_bytes");
      max_layer_kept = std::max(max_layer_kept, kp[j]);
      if (off)
        q.kept_host = add(q.kept_host, kp[j]);
      else
        prefix = add(prefix, kp[j]), q.kept_gpu = add(q.kept_gpu, kp[j]);
    }
    q.f_act = best - q.f_trans;
    sc.chunk_kept[ci] = chunk_kept;
    // Backward, top layer first: regenerate a segment before its top layer (Chen et al. 2016),
    // run the layer, free its kept and regenerated bytes.
    std::int64_t rel = 0, top = 0;
    Bytes regen_live = 0;
    any = false;
    auto consider = [&](const StepEvent& key, Bytes trans) {
      const std::int64_t live =
          ck.add_signed(rel, static_cast<std::int64_t>(add(regen_live, trans)), kPeakField);
      if (!any || live > top) {
        top = live, any = true;
        q.b_act = rel, q.b_rec = regen_live, q.b_trans = trans, q.b_key = key;
      }
    };
    Bytes alive_max = 0;
    for (std::uint64_t j = n; j-- > 0;) {
      std::size_t s0 = 0;
      if (regenerates_before(ch, rg, n, j, &s0)) {
        for (std::size_t i2 = s0; i2 <= j; ++i2) regen_live = add(regen_live, rg[i2]);
        consider(StepEvent{StepEvent::kRecompute, 0, 0, s0, j}, sc.trans_f[g0 + j]);
      }
      alive_max = std::max(alive_max, regen_live);
      if (off) rel = ck.add_signed(rel, static_cast<std::int64_t>(kp[j]), kPeakField);
      consider(StepEvent{StepEvent::kBwd, 0, 0, j, 0}, sc.trans_b[g0 + j]);
      rel = ck.add_signed(rel, -static_cast<std::int64_t>(kp[j]), kPeakField);
      regen_live -= rg[j];
    }
    // What one backward recompute brings back at a time: one layer's attention core (selective),
    // one layer (full) or one segment (every-k).
    regen_alive = std::max(regen_alive, alive_max);
  }

  State st;
  st.ck = &ck;
  st.rec = rec;
  st.stat = rk.stat.total_bytes;
  InFlightTrack fl;
  fl.per_chunk = sc.per_chunk.data();
  fl.best_per_chunk = sc.best_per_chunk.data();
  fl.v = v;
  const Bytes ws = s.workspace;
  auto first_of = [&](std::uint32_t chunk) { return r == 0 && chunk == 0; };
  auto last_of = [&](std::uint32_t chunk) { return r == p - 1 && chunk == v - 1; };
  // The last stage's loss: the output-layer records join the kept bytes with the fp32 logits
  // buffer; its backward adds their gradient, then the output layer is freed.
  auto loss_forward = [&](const PipeOp& op) {
    st.act = add(st.act, s.out_bytes);
    st.event(StepEvent{StepEvent::kLossFwd, op.micro_batch, op.chunk, 0, 0}, st.act, st.rec_bytes,
             add(ws, s.logits));
  };
  auto loss_backward = [&](const PipeOp& op) {
    st.event(StepEvent{StepEvent::kLossBwd, op.micro_batch, op.chunk, 0, 0}, st.act, st.rec_bytes,
             add(ws, ck.mul(2, s.logits, kPeakField)));
    st.act -= s.out_bytes;
  };
  auto global = [&](std::uint32_t chunk, std::uint64_t j) { return rk.chunk_first[chunk] + j; };

  // One op from its chunk's summary (the peak path, and the per-op recorded path).
  auto op_summary = [&](const PipeOp& op) {
    const Evaluation::Scratch::Chunk& q = sc.chunks[op.chunk];
    if (op.forward) {
      if (first_of(op.chunk)) st.act = add(st.act, s.in_bytes);
      st.event(StepEvent{StepEvent::kFwd, op.micro_batch, op.chunk, global(op.chunk, q.f_j), 0},
               add(st.act, q.f_act), st.rec_bytes, q.f_trans);
      st.act = add(st.act, q.kept_gpu);
      st.host = add(st.host, q.kept_host);
      st.host_peak = std::max(st.host_peak, st.host);
      if (last_of(op.chunk)) loss_forward(op);
    } else {
      if (last_of(op.chunk)) loss_backward(op);
      StepEvent key = q.b_key;
      key.mb = op.micro_batch;
      key.chunk = op.chunk;
      key.lo = global(op.chunk, key.lo);
      if (key.kind == StepEvent::kRecompute) key.hi = global(op.chunk, key.hi);
      st.event(
          key,
          static_cast<Bytes>(ck.add_signed(static_cast<std::int64_t>(st.act), q.b_act, kPeakField)),
          q.b_rec, q.b_trans);
      st.host -= q.kept_host;
      st.act -= q.kept_gpu;
      if (first_of(op.chunk)) st.act -= s.in_bytes;
    }
    fl.apply(op.forward, op.chunk, 1, sc.chunk_kept[op.chunk]);
    fl.consider();
  };

  // One op layer by layer (the recorded timeline at layer granularity).
  auto op_layers = [&](const PipeOp& op) {
    const std::uint64_t g0 = rk.chunk_first[op.chunk], n = rk.chunk_sizes[op.chunk];
    const LayerChoice* ch = sc.choice.data() + g0;
    const Bytes* kp = sc.kept.data() + g0;
    const Bytes* rg = sc.regen.data() + g0;
    if (op.forward) {
      if (first_of(op.chunk)) st.act = add(st.act, s.in_bytes);
      for (std::uint64_t j = 0; j < n; ++j) {
        st.event(StepEvent{StepEvent::kFwd, op.micro_batch, op.chunk, g0 + j, 0},
                 add(st.act, sc.full[g0 + j]), st.rec_bytes, sc.trans_f[g0 + j]);
        if (off)
          st.host = add(st.host, kp[j]), st.host_peak = std::max(st.host_peak, st.host);
        else
          st.act = add(st.act, kp[j]);
      }
      if (last_of(op.chunk)) loss_forward(op);
    } else {
      if (last_of(op.chunk)) loss_backward(op);
      for (std::uint64_t j = n; j-- > 0;) {
        std::size_t s0 = 0;
        if (regenerates_before(ch, rg, n, j, &s0)) {
          for (std::size_t i = s0; i <= j; ++i) st.rec_bytes = add(st.rec_bytes, rg[i]);
          st.event(StepEvent{StepEvent::kRecompute, op.micro_batch, op.chunk, g0 + s0, g0 + j},
                   st.act, st.rec_bytes, sc.trans_f[g0 + j]);
        }
        if (off) st.host -= kp[j], st.act = add(st.act, kp[j]);  // back for its backward
        st.event(StepEvent{StepEvent::kBwd, op.micro_batch, op.chunk, g0 + j, 0}, st.act,
                 st.rec_bytes, sc.trans_b[g0 + j]);
        st.act -= kp[j];
        st.rec_bytes -= rg[j];
      }
      if (first_of(op.chunk)) st.act -= s.in_bytes;
    }
    fl.apply(op.forward, op.chunk, 1, sc.chunk_kept[op.chunk]);
    fl.consider();
  };

  if (!rec) {
    // The collapsed op walk (schedule.hpp): O(p·v) ops whatever the number of micro-batches.
    auto bulk = [&](bool forward, std::uint32_t chunk, std::uint64_t n) {
      const Evaluation::Scratch::Chunk& q = sc.chunks[chunk];
      Bytes per = q.kept_gpu;
      if (first_of(chunk)) per = add(per, s.in_bytes);
      if (last_of(chunk)) per = add(per, s.out_bytes);
      const Bytes d = ck.mul(per, n, kPeakField), h = ck.mul(q.kept_host, n, kPeakField);
      if (forward) {
        // The host peak is taken at the explicit op that ends every run (schedule.hpp).
        st.act = add(st.act, d);
        st.host = add(st.host, h);
      } else {
        st.act -= d;
        st.host -= h;
      }
      fl.apply(forward, chunk, n, sc.chunk_kept[chunk]);
    };
    for_each_op_collapsed(sched, r, p, v, m, op_summary, bulk);
  } else if (layer_events) {
    for_each_op(sched, r, p, v, m, op_layers);
  } else {
    for_each_op(sched, r, p, v, m, op_summary);
  }
  st.event(StepEvent{StepEvent::kOptimizer, 0, 0, 0, 0}, st.act, st.rec_bytes, add(ws, s.opt_temp));

  // The stage's closed-form activations at its in-flight maximum.
  StageEval& o = *out;
  o = StageEval{};
  o.in_flight = fl.best_chunks;
  for (std::uint64_t ci = 0; ci < v; ++ci)
    o.kept_layer_slots =
        ck.add(o.kept_layer_slots, ck.mul(fl.best_per_chunk[ci], rk.chunk_sizes[ci], "activations"),
               "activations");
  StageActivations& a = o.act;
  a.layers_bytes = fl.best_weight;
  if (r == 0)
    a.input_layer_bytes = ck.mul(fl.best_per_chunk[0], s.in_bytes, "activations.input_layer_bytes");
  if (r == p - 1)
    a.output_layer_bytes =
        ck.mul(fl.best_per_chunk[v - 1], s.out_bytes, "activations.output_layer_bytes");
  a.recompute_working_bytes = regen_alive;
  if (off) {
    // Offloaded activations live in host memory; the layer being stored or prefetched stays.
    a.host_bytes = a.layers_bytes;
    a.layers_bytes = max_layer_kept;
  }
  a.total_bytes =
      ck.add(ck.add(a.layers_bytes, a.input_layer_bytes, "activations.total_bytes"),
             ck.add(a.output_layer_bytes, a.recompute_working_bytes, "activations.total_bytes"),
             "activations.total_bytes");
  o.total_bytes = ck.add(a.total_bytes, rk.stat.total_bytes, "total_bytes");
  // The simulated peak, with the allocator-fragmentation allowance on its own line.
  o.fragmentation_bytes =
      static_cast<Bytes>(static_cast<double>(st.peak) * c.fragmentation_pct / 100.0);
  o.peak_bytes = ck.add(st.peak, o.fragmentation_bytes, kPeakField);
  o.peak_at = st.peak_key;
  o.at_peak = st.peak_live;
  o.host_peak_bytes = st.host_peak;
  // Offload traffic: every micro-batch's pass through each chunk moves its kept bytes out and
  // back.
  for (std::uint64_t ci = 0; ci < v; ++ci)
    o.pcie_bytes =
        add(o.pcie_bytes, ck.mul(ck.mul(sc.chunks[ci].kept_host, m, kPeakField), 2, kPeakField));
}

}  // namespace detail

std::optional<Error> evaluate(const Setup& s, const Recompute& r, Evaluation* out) {
  Checked ck;
  Evaluation& e = *out;
  Evaluation::Scratch& sc = e.scratch;
  double layers_fwd = 0, extra = 0;
  detail::fill_layers(s, r, sc, &layers_fwd, &extra);
  e.stages.resize(s.ranks.size());
  e.worst = 0;
  for (std::uint64_t rank = 0; rank < s.ranks.size(); ++rank) {
    detail::walk_rank(s, r.offload, rank, sc, ck, nullptr, false, &e.stages[rank]);
    if (e.stages[rank].peak_bytes > e.stages[e.worst].peak_bytes) e.worst = rank;
  }
  // Recompute overhead: extra forward FLOPs over the step's 3x forward (forward + 2x backward).
  e.step_flops = 3.0 * (layers_fwd + s.logits_flops);
  e.extra_flops = extra;
  e.recompute_overhead_pct = e.step_flops > 0 ? 100.0 * extra / e.step_flops : 0.0;
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), s.config);
  return std::nullopt;
}

}  // namespace actmem

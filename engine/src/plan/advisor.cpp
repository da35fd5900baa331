// The layout advisor: enumerate layouts, screen each on the simulated tensor peak, keep the front
// no fitting layout beats on every criterion, confirm the first ones on the device figure.
#include "actmem/plan/advisor.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "actmem/device/device.hpp"
#include "actmem/frameworks/emit.hpp"
#include "actmem/step/evaluation.hpp"
#include "actmem/step/offload.hpp"
#include "actmem/schedules/schedule.hpp"
#include "actmem/setup/setup.hpp"

namespace actmem {

namespace {

std::vector<std::uint64_t> divisors(std::uint64_t n) {
  std::vector<std::uint64_t> lo, hi;
  for (std::uint64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      lo.push_back(d);
      if (d != n / d) hi.push_back(n / d);
    }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  return lo;
}

double lost_pct(const Layout& l) {
  return l.bubble_pct + l.recompute_overhead_pct + l.offload_exposed_pct;
}

// The layout's fields in a fixed order: the last tie-break, so equal criteria rank the same way
// every run.
auto layout_key(const Layout& l) {
  const Parallel& p = l.config.par;
  return std::make_tuple(p.tp, p.pp, p.vpp, p.cp, p.dp, p.ep, p.zero, l.config.micro_batch,
                         static_cast<int>(l.config.recompute.kind), l.config.recompute.offload);
}

std::vector<std::size_t> pareto(const std::vector<Layout>& all, const std::vector<bool>& out) {
  // Lexicographic order over the criteria: whatever dominates a layout comes before it, so each
  // layout is compared with the front found so far only (a dominated dominator is itself
  // dominated by a front member, which then dominates the layout too).
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!out[i]) idx.push_back(i);
  auto crit = [&](std::size_t i) {
    const Layout& l = all[i];
    return std::make_tuple(l.num_gpus, l.bubble_pct, l.recompute_overhead_pct,
                           l.offload_exposed_pct, l.comm.total, -l.screen_headroom_bytes);
  };
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::size_t a, std::size_t b) { return crit(a) < crit(b); });
  std::vector<std::size_t> front;
  for (std::size_t i : idx)
    if (std::none_of(front.begin(), front.end(),
                     [&](std::size_t f) { return dominates(all[f], all[i]); }))
      front.push_back(i);
  std::stable_sort(front.begin(), front.end(),
                   [&](std::size_t a, std::size_t b) { return ranks_before(all[a], all[b]); });
  return front;
}

}  // namespace

bool dominates(const Layout& a, const Layout& b) {
  const bool no_worse = a.num_gpus <= b.num_gpus && a.bubble_pct <= b.bubble_pct &&
                        a.recompute_overhead_pct <= b.recompute_overhead_pct &&
                        a.offload_exposed_pct <= b.offload_exposed_pct &&
                        a.comm.total <= b.comm.total &&
                        a.screen_headroom_bytes >= b.screen_headroom_bytes;
  const bool better = a.num_gpus < b.num_gpus || a.bubble_pct < b.bubble_pct ||
                      a.recompute_overhead_pct < b.recompute_overhead_pct ||
                      a.offload_exposed_pct < b.offload_exposed_pct ||
                      a.comm.total < b.comm.total ||
                      a.screen_headroom_bytes > b.screen_headroom_bytes;
  return no_worse && better;
}

bool ranks_before(const Layout& a, const Layout& b) {
  const double la = lost_pct(a), lb = lost_pct(b);
  if (la != lb) return la < lb;
  if (a.comm.total != b.comm.total) return a.comm.total < b.comm.total;
  if (a.num_gpus != b.num_gpus) return a.num_gpus < b.num_gpus;
  if (a.screen_headroom_bytes != b.screen_headroom_bytes)
    return a.screen_headroom_bytes > b.screen_headroom_bytes;
  return layout_key(a) < layout_key(b);
}

Result<Advice> advise(const ModelSpec& m, const TrainConfig& base_in, const GpuSpec& gpu,
                      const AdviseRequest& req) {
  // The base config as given is validated first: its errors are the request's.
  auto base_setup = make_setup(m, base_in);
  if (!base_setup.ok()) return base_setup.error();
  const TrainConfig base = base_setup.value().config;  // seq and dropouts resolved
  Advice out;
  out.global_batch = req.global_batch;
  out.gpus_min = req.gpus_min;
  out.gpus_max = req.gpus_max;
  out.capacity = device_capacity(gpu, nullptr);
  const std::uint64_t seq = base.seq, layers = m.layers;
  const bool mamba =
      std::any_of(m.kinds.begin(), m.kinds.end(), [](const LayerKind& k) { return k.is_mamba(); });
  // Split-backward schedules need every layer kind's weight-gradient inputs named (inventory.hpp:
  // wgrad_dy is empty where they are not); which kinds split depends on the profile and attention
  // only, which every layout shares with the base.
  const auto& base_kinds = base_setup.value().kinds;
  const auto unsplit = std::find_if(base_kinds.begin(), base_kinds.end(),
                                    [](const auto& ke) { return ke.inventory.wgrad_dy.empty(); });
  const bool splittable = unsplit == base_kinds.end();
  std::uint64_t expert_gcd = 0;  // experts of every MoE kind: ep must divide each
  for (const LayerKind& k : m.kinds)
    if (k.is_moe()) expert_gcd = std::gcd(expert_gcd, k.moe.experts);
  // torchtitan (9dec370) runs what its layout implies: the advisor sets it per layout.
  const bool titan = base.framework == Framework::kTorchtitan;
  const bool launcher = req.launcher != PolicyFamily::kAny || titan;
  bool dtype_filled = false;
  for (const FrameworkDefault& d : base.framework_filled)
    dtype_filled |= std::string(d.key) == "dtype";
  // The policies: none, selective, full, and each with its kept bytes offloaded to host memory
  // when the GPU's FLOPs and host link give the copies a time (offload.hpp). torchtitan's
  // activation_checkpoint modes instead: none, its op list, full.
  const bool offload = !launcher && gpu.host_link_gbs > 0 && gpu.bf16_tflops > 0 &&
                       gpu.host_memory_bytes > 0 &&
                       (base.act_dtype == DType::kBf16 || base.act_dtype == DType::kFp16);
  std::vector<Recompute> policies;
  for (bool off : {false, true})
    for (RecomputeKind k :
         {RecomputeKind::kNone, RecomputeKind::kSelective, RecomputeKind::kFull}) {
      if (off && !offload) continue;
      Recompute r;
      r.kind = k;
      r.offload = off;
      if (titan && k == RecomputeKind::kSelective && !parse_recompute("op:torchtitan", &r))
        continue;
      policies.push_back(r);
    }
  std::vector<Layout> all;
  Evaluation ev;
  ev.worst_only = true;         // a layout's figures are its most loaded stage's
  std::vector<char> fits_1f1b;  // per policy, for the layout's ZB-H1 variant
  std::uint64_t setups = 0;
  for (std::uint64_t n = req.gpus_min; n <= req.gpus_max; ++n) {
    for (std::uint64_t tp : divisors(n)) {
      // Tensor parallelism stays inside a node (NVLink): its collectives run every layer.
      if (tp > base.gpus_per_node) continue;
      const bool sp = tp > 1;
      for (std::uint64_t cp : divisors(n / tp)) {
        if (seq % cp != 0 || (sp && (seq / cp) % tp != 0) || (mamba && cp > 1)) continue;
        for (std::uint64_t pp : divisors(n / tp / cp)) {
          if (pp > layers) continue;
          const std::uint64_t dp = n / tp / cp / pp;
          if (req.global_batch % dp != 0) continue;
          const std::uint64_t per_dp = req.global_batch / dp;
          std::vector<std::uint64_t> vpps{1};
          if (pp > 1)
            for (std::uint64_t v : divisors(layers / pp))
              if (v > 1 && layers % (pp * v) == 0) vpps.push_back(v);
          std::vector<std::uint64_t> eps{1};
          if (expert_gcd > 0)
            for (std::uint64_t e : divisors(std::gcd(dp, expert_gcd)))
              if (e > 1) eps.push_back(e);
          for (std::uint64_t ep : eps) {
            Bytes budget = 0;
            bool have_budget = false;
            // torchtitan: FSDP2 when dp x cp > 1, else DDP, which runs on a 1-D mesh only
            // (parallelize_llama.py l.79-110).
            Parallel shape;  // advise searches no replicas: dp_replicate 1
            shape.dp = dp;
            shape.cp = cp;
            const bool fsdp = torchtitan_fsdp(shape);
            if (titan && !fsdp && dp > 1 && (tp > 1 || pp > 1)) continue;
            // torchtitan 9dec370 accumulates no gradients without pipelining: the local batch
            // is the micro-batch.
            const std::vector<std::uint64_t> bs =
                titan && pp == 1 ? std::vector<std::uint64_t>{per_dp} : divisors(per_dp);
            for (std::uint64_t vpp : vpps)
              for (int zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero)
                for (std::uint64_t b : bs) {
                  if (titan && zero != (fsdp ? 3 : 0)) break;
                  // A larger micro-batch only saves bytes sent under ZeRO-2/3 (one gradient
                  // reduce-scatter per micro-batch): elsewhere micro-batch 1 has the same bytes
                  // sent, the same recompute share, no more bubble and no higher peak: the
                  // schedules hold at most their warm-up's micro-batches (1F1B and ZB-H1 p,
                  // DualPipe p + 1, which needs 2p micro-batches), so fewer, larger ones hold as
                  // many tokens or more. Not ZB-V below 2p micro-batches: its V runs a shorter
                  // warm-up there, and a larger micro-batch can peak lower (Mixtral 8x7B on 16
                  // GPUs: tested), so ZB-V alone is searched at every micro-batch below 2p.
                  const bool split_here = pp > 1 && splittable && !launcher;
                  const bool only_zbv = b > 1 && zero < 2 && !(titan && pp == 1);
                  if (only_zbv && !(split_here && vpp == 2)) break;
                  const std::uint64_t mbs = per_dp / b;
                  if (only_zbv && mbs >= 2 * pp) continue;
                  // The schedules this shape can run: 1F1B, or interleaved (Megatron-LM needs
                  // the micro-batches a multiple of pp), and where they split the split-backward
                  // ones (zero-bubble, DualPipe), which Megatron-LM does not run (a launcher
                  // leaves them out).
                  Schedule scheds[3];
                  std::size_t n_sched = 0;
                  if (!only_zbv && (vpp == 1 || mbs % pp == 0))
                    scheds[n_sched++] = vpp > 1 ? Schedule::kInterleaved : Schedule::k1F1B;
                  if (only_zbv) {
                    scheds[n_sched++] = Schedule::kZbV;
                  } else if (split_here) {
                    if (vpp == 1) {
                      scheds[n_sched++] = Schedule::kZbH1;
                      if (pp % 2 == 0 && mbs % 2 == 0 && mbs >= 2 * pp)
                        scheds[n_sched++] = Schedule::kDualPipe;
                    } else if (vpp == 2) {
                      scheds[n_sched++] = Schedule::kZbV;
                      if (mbs >= 2 * pp) scheds[n_sched++] = Schedule::kDualPipeV;
                    }
                  }
                  bool any = false;
                  // ZB-H1 keeps everything 1F1B keeps at every event of the same placement, and
                  // more (each I's weight-gradient store until its W): a policy that does not fit
                  // under 1F1B does not fit under ZB-H1, and is not walked again.
                  fits_1f1b.assign(policies.size(), 1);
                  for (std::size_t si = 0; si < n_sched; ++si) {
                    const Schedule sched = scheds[si];
                    TrainConfig c = base;
                    c.par.tp = tp;
                    c.par.sp = sp;
                    c.par.cp = cp;
                    c.par.pp = pp;
                    c.par.vpp = vpp;
                    c.par.dp = dp;
                    c.par.ep = ep;
                    c.par.zero = zero;
                    c.micro_batch = b;
                    c.grad_accum = mbs;
                    c.schedule = sched;
                    c.layer_split.clear();
                    // Smaller first and last stages (emit.cpp); under DualPipe rank 0 holds
                    // both, with the embedding and the head.
                    if (vpp == 1) c.layer_split = pipeline_split(layers, pp);
                    c.recompute = Recompute{};
                    if (titan) {
                      // FSDP2's mixed precision (bf16 compute unless given) or fp32; its
                      // residency under pipelining; DDP's buckets (framework.cpp).
                      if (!fsdp || dtype_filled) c.act_dtype = fsdp ? DType::kBf16 : DType::kFp32;
                      c.reshard_after_forward = !(fsdp && pp > 1);
                      c.accumulate_unsharded = fsdp && pp > 1;
                      const bool ddp = !fsdp && dp > 1;
                      c.ddp_bucket_view = !ddp;
                      c.grad_bucket = ddp ? 0 : base.grad_bucket;
                    }
                    if (++setups > kMaxAdviseSetups)
                      return make_error(
                          "invalid_value", "advise.num_gpus",
                          "advise.num_gpus: " + std::to_string(req.gpus_min) + ":" +
                              std::to_string(req.gpus_max) + " with a global batch of " +
                              std::to_string(req.global_batch) + " would set up more than " +
                              std::to_string(kMaxAdviseSetups) +
                              " configurations; give fewer GPU counts (a narrower range) or a "
                              "global batch with fewer divisors");
                    auto s = make_setup(m, c);
                    if (!s.ok()) {  // a split the model does not allow
                      out.enumerated += policies.size();
                      continue;
                    }
                    if (!have_budget) {
                      const Bytes over = device_overhead_bytes(s.value(), &gpu);
                      budget = out.capacity > over ? out.capacity - over : 0;
                      have_budget = true;
                    }
                    // A layout over the budget is dropped whatever its exact peak: its walk may
                    // stop at the first stage that passes it.
                    ev.stop_above = budget;
                    Bytes prev_peak = kMaxBytes;
                    double prev_overhead = -1;
                    // Static memory alone over the budget (DualPipe's two copies): no policy fits.
                    Bytes most_static = 0;
                    for (const RankSetup& rs : s.value().ranks)
                      most_static = std::max(most_static, rs.stat.total_bytes);
                    if (most_static > budget) {
                      out.enumerated += policies.size();
                      continue;
                    }
                    // torchtitan's op list keeps per-op outputs: its costs set on this setup
                    // (the other policies read none of them).
                    bool ops_ok = true;
                    for (const Recompute& r : policies)
                      if (!r.op_policy.empty()) ops_ok = !set_policy_costs(s.value(), r);
                    for (std::size_t pi = 0; pi < policies.size(); ++pi) {
                      const Recompute& r = policies[pi];
                      if (r.kind == RecomputeKind::kNone) prev_peak = kMaxBytes, prev_overhead = -1;
                      ++out.enumerated;
                      // Offloading under a split backward is not modelled (validate.cpp).
                      if ((!r.op_policy.empty() && !ops_ok) ||
                          (sched == Schedule::kZbH1 && !fits_1f1b[pi]) ||
                          (r.offload && is_split_backward(sched))) {
                        prev_peak = kMaxBytes;
                        continue;
                      }
                      if (actmem::evaluate(s.value(), r, &ev)) continue;
                      ++out.simulated;
                      const Bytes peak = ev.worst_stage().peak_bytes;
                      if (sched == Schedule::k1F1B) fits_1f1b[pi] = peak <= budget;
                      // A policy that changes nothing here (selective under flash attention keeps
                      // what none keeps) is the simpler one's duplicate: not listed twice.
                      const bool same =
                          peak == prev_peak && ev.recompute_overhead_pct == prev_overhead;
                      prev_peak = peak;
                      prev_overhead = ev.recompute_overhead_pct;
                      if (peak > budget || same) continue;
                      auto comm = comm_per_step(s.value(), r);
                      if (!comm.ok()) continue;
                      Layout l;
                      l.num_gpus = n;
                      l.config = s.value().config;
                      l.config.recompute = r;
                      l.peak_bytes = peak;
                      l.screen_headroom_bytes =
                          static_cast<std::int64_t>(budget) - static_cast<std::int64_t>(peak);
                      l.bubble_pct =
                          100.0 * bubble_fraction(c.schedule, pp, vpp, s.value().config.grad_accum);
                      l.recompute_overhead_pct = ev.recompute_overhead_pct;
                      if (r.offload) {
                        // The offloaded bytes must fit the host's memory for this GPU too.
                        const OffloadTiming t = offload_timing(s.value(), r, ev.worst, gpu,
                                                               ev.worst_stage().host_peak_bytes);
                        if (!t.host_fits) continue;
                        l.offload_exposed_pct = offload_exposed_pct(t);
                      }
                      l.comm = comm.value();
                      // What torchtitan's TOML cannot say is not a layout it can run.
                      if (req.launcher == PolicyFamily::kTorchtitan &&
                          !torchtitan_toml(m, l.config).ok())
                        continue;
                      all.push_back(l);
                      any = true;
                    }
                  }
                  // Larger micro-batches only grow the peak (but ZB-V's, above): none of them
                  // fits either.
                  if (!any && !(split_here && vpp == 2)) break;
                }
          }
        }
      }
    }
  }
  out.screened_fit = all.size();
  // The front, confirmed in rank order on the device figure; a layout the device refuses leaves
  // the front, which is then recomputed (what it alone dominated may join).
  std::vector<bool> refused(all.size(), false), checked(all.size(), false);
  const std::uint64_t max_checks = 4 * req.limit + 16;
  for (;;) {
    const std::vector<std::size_t> front = pareto(all, refused);
    out.layouts.clear();
    bool changed = false;
    for (std::size_t i : front) {
      if (out.layouts.size() == req.limit) break;
      Layout& l = all[i];
      if (!checked[i]) {
        if (out.device_checks == max_checks) break;
        checked[i] = true;
        ++out.device_checks;
        auto s = make_setup(m, l.config);
        if (s.ok()) {
          auto d = device_memory(s.value(), &gpu, &l.config.recompute, false);
          if (d.ok()) {
            l.device_checked = true;
            l.fits = d.value().fits;
            l.device_total_bytes = d.value().total_bytes;
            l.headroom_bytes = d.value().headroom_bytes;
          }
        }
        if (!l.fits) {
          refused[i] = true;
          ++out.device_refused;
          changed = true;
          break;
        }
      }
      out.layouts.push_back(l);
    }
    if (!changed) {
      out.front.clear();
      for (std::size_t i : front) out.front.push_back(all[i]);
      break;
    }
  }
  out.notes.push_back(
      "sequence parallelism is on wherever tp > 1: its all-gather and reduce-scatter send the "
      "bytes of the all-reduce they replace, and it keeps less (Korthikanti et al. 2022, Sec. "
      "4.2.2)");
  out.notes.push_back("tp stays within a node (at most gpus_per_node = " +
                      std::to_string(base.gpus_per_node) + ")");
  out.notes.push_back(
      "micro-batches above 1 are searched under ZeRO-2/3, where they save gradient "
      "reduce-scatters, and under ZB-V below 2p micro-batches, where its shorter warm-up can "
      "keep less; elsewhere micro-batch 1 is no worse on any criterion (GEMM efficiency is not "
      "ranked)");
  out.notes.push_back(
      std::string("GPipe is not listed: 1F1B has its bubble and keeps fewer micro-batches; ") +
      (splittable ? "ZB-H1, ZB-V, DualPipe and DualPipeV are searched (not with --emit megatron or "
                    "torchtitan), their bubbles assuming a weight-gradient backward as long as a "
                    "forward (docs/schedules.md)"
                  : "ZB-H1, ZB-V, DualPipe and DualPipeV are not searched: layer kind " +
                        std::to_string(unsplit - base_kinds.begin()) + " is " +
                        split_refusal(m.kinds[unsplit - base_kinds.begin()])));
  out.notes.push_back(
      offload ? "offload variants are searched; their copies' exposed time assumes " +
                    std::to_string(static_cast<int>(kAssumedMfu * 100)) +
                    "% MFU and the GPU's host link (offload_exposed_pct)"
              : std::string("offload variants are not searched: ") +
                    (titan      ? "torchtitan 9dec370 has no activation offload"
                     : launcher ? "the framework's launch input has no argument for them"
                                : "the GPU's host link, bf16 FLOPs or host memory are not "
                                  "known, or the step is not bf16/fp16"));
  if (titan)
    out.notes.push_back(
        "torchtitan 9dec370's settings per layout: FSDP2 (zero 3, bf16 compute unless dtype is "
        "given, parameters kept gathered under pipelining) when dp x cp > 1, else fp32 with DDP's "
        "buckets (DDP only without tp or pp); the local batch as one micro-batch without "
        "pipelining; activation checkpointing none, op:torchtitan (its op list) or full; 1F1B and "
        "interleaved 1F1B");
  return out;
}

}  // namespace actmem

// The layout advisor: enumerate layouts, screen each on the simulated tensor peak, keep the front
// no fitting layout beats on every criterion, confirm the first ones on the device figure.
#include "actmem/plan/advisor.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "actmem/device/device.hpp"
#include "actmem/frameworks/emit.hpp"
#include "actmem/schedules/schedule.hpp"
#include "actmem/setup/setup.hpp"
#include "actmem/step/evaluation.hpp"
#include "actmem/step/offload.hpp"

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

// What every layout of the search shares, from the model, the base config, the GPU and the request.
struct SearchFacts {
  std::uint64_t seq = 0, layers = 0;
  bool mamba = false;
  bool splittable = false;
  std::ptrdiff_t unsplit = 0;    // the first layer kind that does not split, when one does not
  std::uint64_t expert_gcd = 0;  // experts of every MoE kind: ep must divide each
  bool titan = false, launcher = false, dtype_filled = false, offload = false;
  std::vector<Recompute> policies;
};

SearchFacts search_facts(const ModelSpec& m, const Setup& base_setup, const GpuSpec& gpu,
                         const AdviseRequest& req) {
  const TrainConfig& base = base_setup.config;
  SearchFacts f;
  f.seq = base.seq;
  f.layers = m.layers;
  f.mamba =
      std::any_of(m.kinds.begin(), m.kinds.end(), [](const LayerKind& k) { return k.is_mamba(); });
  // Split-backward schedules need every layer kind's weight-gradient inputs named (inventory.hpp:
  // wgrad_dy is empty where they are not); which kinds split depends on the profile and attention
  // only, which every layout shares with the base.
  const auto& base_kinds = base_setup.kinds;
  const auto unsplit = std::find_if(base_kinds.begin(), base_kinds.end(),
                                    [](const auto& ke) { return ke.inventory.wgrad_dy.empty(); });
  f.splittable = unsplit == base_kinds.end();
  f.unsplit = unsplit - base_kinds.begin();
  for (const LayerKind& k : m.kinds)
    if (k.is_moe()) f.expert_gcd = std::gcd(f.expert_gcd, k.moe.experts);
  // torchtitan (9dec370) runs what its layout implies: the advisor sets it per layout.
  f.titan = base.framework == Framework::kTorchtitan;
  f.launcher = req.launcher != PolicyFamily::kAny || f.titan;
  f.dtype_filled = framework_filled(base, "dtype");
  // The policies: none, selective, full, and each with its kept bytes offloaded to host memory
  // when the GPU's FLOPs and host link give the copies a time (offload.hpp). torchtitan's
  // activation_checkpoint modes instead: none, its op list, full.
  f.offload = !f.launcher && gpu.host_link_gbs > 0 && gpu.bf16_tflops > 0 &&
              gpu.host_memory_bytes > 0 &&
              (base.act_dtype == DType::kBf16 || base.act_dtype == DType::kFp16);
  for (bool off : {false, true})
    for (RecomputeKind k :
         {RecomputeKind::kNone, RecomputeKind::kSelective, RecomputeKind::kFull}) {
      if (off && !f.offload) continue;
      Recompute r;
      r.kind = k;
      r.offload = off;
      if (f.titan && k == RecomputeKind::kSelective && !parse_recompute("op:torchtitan", &r))
        continue;
      f.policies.push_back(r);
    }
  return f;
}

Error too_many_setups(const AdviseRequest& req) {
  return make_error("invalid_value", "advise.num_gpus",
                    "advise.num_gpus: " + std::to_string(req.gpus_min) + ":" +
                        std::to_string(req.gpus_max) + " with a global batch of " +
                        std::to_string(req.global_batch) + " would set up more than " +
                        std::to_string(kMaxAdviseSetups) +
                        " configurations; give fewer GPU counts (a narrower range) or a "
                        "global batch with fewer divisors");
}

// One layout's shape, fixed by the search's loops from the outside in.
struct Shape {
  std::uint64_t n = 0, tp = 0, cp = 0, pp = 0, dp = 0, per_dp = 0, ep = 0, vpp = 0;
  bool sp = false, fsdp = false;
  int zero = 0;
  std::uint64_t b = 0, mbs = 0;
};

// The search: every shape of the GPU counts, each set up and walked under each policy; the
// layouts that fit the screen's budget go to `all`.
class LayoutSearch {
 public:
  LayoutSearch(const ModelSpec& m, const TrainConfig& base, const GpuSpec& gpu,
               const AdviseRequest& req, const SearchFacts& f, Advice& out,
               std::vector<Layout>& all)
      : m_(m), base_(base), gpu_(gpu), req_(req), f_(f), out_(out), all_(all) {
    ev_.worst_only = true;  // a layout's figures are its most loaded stage's
  }

  std::optional<Error> run();

 private:
  std::optional<Error> data_parallel_layouts(Shape sh);
  std::optional<Error> expert_layouts(Shape sh, const std::vector<std::uint64_t>& vpps);
  std::optional<Error> schedule_layouts(const Shape& sh, bool split_here, bool only_zbv, bool* any);
  TrainConfig layout_config(const Shape& sh, Schedule sched) const;
  std::optional<Error> setup_layouts(const Shape& sh, Schedule sched, bool* any);
  bool screen_policy(const Shape& sh, const TrainConfig& c, const Setup& setup, std::size_t pi,
                     bool ops_ok, Bytes* prev_peak, double* prev_overhead);

  const ModelSpec& m_;
  const TrainConfig& base_;
  const GpuSpec& gpu_;
  const AdviseRequest& req_;
  const SearchFacts& f_;
  Advice& out_;
  std::vector<Layout>& all_;
  Evaluation ev_;
  std::vector<char> fits_1f1b_;  // per policy, for the layout's ZB-H1 variant
  std::uint64_t setups_ = 0;
  Bytes budget_ = 0;  // per expert-parallel shape: the first setup's capacity less overheads
  bool have_budget_ = false;
};

// tp, cp and pp over the divisors of each GPU count.
std::optional<Error> LayoutSearch::run() {
  const std::uint64_t seq = f_.seq, layers = f_.layers;
  const bool mamba = f_.mamba;
  for (std::uint64_t n = req_.gpus_min; n <= req_.gpus_max; ++n) {
    for (std::uint64_t tp : divisors(n)) {
      // Tensor parallelism stays inside a node (NVLink): its collectives run every layer.
      if (tp > base_.gpus_per_node) continue;
      const bool sp = tp > 1;
      for (std::uint64_t cp : divisors(n / tp)) {
        if (seq % cp != 0 || (sp && (seq / cp) % tp != 0) || (mamba && cp > 1)) continue;
        for (std::uint64_t pp : divisors(n / tp / cp)) {
          if (pp > layers) continue;
          Shape sh;
          sh.n = n;
          sh.tp = tp;
          sh.sp = sp;
          sh.cp = cp;
          sh.pp = pp;
          if (auto e = data_parallel_layouts(sh)) return e;
        }
      }
    }
  }
  return std::nullopt;
}

// dp from the rest, then the interleaving depths and expert-parallel sizes it allows.
std::optional<Error> LayoutSearch::data_parallel_layouts(Shape sh) {
  const std::uint64_t layers = f_.layers, pp = sh.pp;
  const std::uint64_t dp = sh.n / sh.tp / sh.cp / pp;
  if (req_.global_batch % dp != 0) return std::nullopt;
  sh.dp = dp;
  sh.per_dp = req_.global_batch / dp;
  std::vector<std::uint64_t> vpps{1};
  if (pp > 1)
    for (std::uint64_t v : divisors(layers / pp))
      if (v > 1 && layers % (pp * v) == 0) vpps.push_back(v);
  std::vector<std::uint64_t> eps{1};
  if (f_.expert_gcd > 0)
    for (std::uint64_t e : divisors(std::gcd(dp, f_.expert_gcd)))
      if (e > 1) eps.push_back(e);
  for (std::uint64_t ep : eps) {
    sh.ep = ep;
    if (auto e = expert_layouts(sh, vpps)) return e;
  }
  return std::nullopt;
}

// vpp, ZeRO stage and micro-batch for one expert-parallel shape, which shares one budget.
std::optional<Error> LayoutSearch::expert_layouts(Shape sh,
                                                  const std::vector<std::uint64_t>& vpps) {
  const bool titan = f_.titan, splittable = f_.splittable, launcher = f_.launcher;
  const std::uint64_t dp = sh.dp, pp = sh.pp, per_dp = sh.per_dp;
  budget_ = 0;
  have_budget_ = false;
  // torchtitan: FSDP2 when dp x cp > 1, else DDP, which runs on a 1-D mesh only
  // (parallelize_llama.py l.79-110).
  Parallel shape;  // advise searches no replicas: dp_replicate 1
  shape.dp = dp;
  shape.cp = sh.cp;
  const bool fsdp = torchtitan_fsdp(shape);
  sh.fsdp = fsdp;
  if (titan && !fsdp && dp > 1 && (sh.tp > 1 || pp > 1)) return std::nullopt;
  // torchtitan 9dec370 accumulates no gradients without pipelining: the local batch is the
  // micro-batch.
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
        sh.vpp = vpp;
        sh.zero = zero;
        sh.b = b;
        sh.mbs = mbs;
        bool any = false;
        if (auto e = schedule_layouts(sh, split_here, only_zbv, &any)) return e;
        // Larger micro-batches only grow the peak (but ZB-V's, above): none of them
        // fits either.
        if (!any && !(split_here && vpp == 2)) break;
      }
  return std::nullopt;
}

// The schedules this shape can run, each set up and screened.
std::optional<Error> LayoutSearch::schedule_layouts(const Shape& sh, bool split_here, bool only_zbv,
                                                    bool* any) {
  const std::uint64_t pp = sh.pp, vpp = sh.vpp, mbs = sh.mbs;
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
      if (pp % 2 == 0 && mbs % 2 == 0 && mbs >= 2 * pp) scheds[n_sched++] = Schedule::kDualPipe;
    } else if (vpp == 2) {
      scheds[n_sched++] = Schedule::kZbV;
      if (mbs >= 2 * pp) scheds[n_sched++] = Schedule::kDualPipeV;
    }
  }
  // ZB-H1 keeps everything 1F1B keeps at every event of the same placement, and
  // more (each I's weight-gradient store until its W): a policy that does not fit
  // under 1F1B does not fit under ZB-H1, and is not walked again.
  fits_1f1b_.assign(f_.policies.size(), 1);
  for (std::size_t si = 0; si < n_sched; ++si)
    if (auto e = setup_layouts(sh, scheds[si], any)) return e;
  return std::nullopt;
}

// The base config with this layout's shape, schedule and torchtitan's settings for it.
TrainConfig LayoutSearch::layout_config(const Shape& sh, Schedule sched) const {
  const std::uint64_t pp = sh.pp, vpp = sh.vpp, dp = sh.dp;
  const bool fsdp = sh.fsdp;
  TrainConfig c = base_;
  c.par.tp = sh.tp;
  c.par.sp = sh.sp;
  c.par.cp = sh.cp;
  c.par.pp = pp;
  c.par.vpp = vpp;
  c.par.dp = dp;
  c.par.ep = sh.ep;
  c.par.zero = sh.zero;
  c.micro_batch = sh.b;
  c.grad_accum = sh.mbs;
  c.schedule = sched;
  c.layer_split.clear();
  // Smaller first and last stages (emit.cpp); under DualPipe rank 0 holds
  // both, with the embedding and the head.
  if (vpp == 1) c.layer_split = pipeline_split(f_.layers, pp);
  c.recompute = Recompute{};
  if (f_.titan) {
    // FSDP2's mixed precision (bf16 compute unless given) or fp32; its
    // residency under pipelining; DDP's buckets (framework.cpp).
    if (!fsdp || f_.dtype_filled) c.act_dtype = fsdp ? DType::kBf16 : DType::kFp32;
    c.reshard_after_forward = !(fsdp && pp > 1);
    c.accumulate_unsharded = fsdp && pp > 1;
    const bool ddp = !fsdp && dp > 1;
    c.ddp_bucket_view = !ddp;
    // The loss torchtitan runs at this tp (framework.cpp: loss parallel whenever tp > 1).
    c.loss = Loss{sh.tp > 1 ? LossImpl::kParallel : LossImpl::kEager};
    c.grad_bucket = ddp ? 0 : base_.grad_bucket;
  }
  return c;
}

// One schedule's setup: its budget, static memory, and each policy screened on it.
std::optional<Error> LayoutSearch::setup_layouts(const Shape& sh, Schedule sched, bool* any) {
  const std::vector<Recompute>& policies = f_.policies;
  const TrainConfig c = layout_config(sh, sched);
  if (++setups_ > kMaxAdviseSetups) return too_many_setups(req_);
  auto s = make_setup(m_, c);
  if (!s.ok()) {  // a split the model does not allow
    out_.enumerated += policies.size();
    return std::nullopt;
  }
  if (!have_budget_) {
    const Bytes over = device_overhead_bytes(s.value(), &gpu_);
    budget_ = out_.capacity > over ? out_.capacity - over : 0;
    have_budget_ = true;
  }
  // A layout over the budget is dropped whatever its exact peak: its walk may stop at the first
  // stage that passes it.
  ev_.stop_above = budget_;
  Bytes prev_peak = kMaxBytes;
  double prev_overhead = -1;
  // Static memory alone over the budget (DualPipe's two copies): no policy fits.
  Bytes most_static = 0;
  for (const RankSetup& rs : s.value().ranks)
    most_static = std::max(most_static, rs.stat.total_bytes);
  if (most_static > budget_) {
    out_.enumerated += policies.size();
    return std::nullopt;
  }
  // torchtitan's op list keeps per-op outputs: its costs set on this setup (the other policies
  // read none of them).
  bool ops_ok = true;
  for (const Recompute& r : policies)
    if (!r.op_policy.empty()) ops_ok = !set_policy_costs(s.value(), r);
  for (std::size_t pi = 0; pi < policies.size(); ++pi)
    if (screen_policy(sh, c, s.value(), pi, ops_ok, &prev_peak, &prev_overhead)) *any = true;
  return std::nullopt;
}

// One policy on one setup: walked unless it cannot fit or changes nothing, and kept as a layout
// when it fits the budget (true).
bool LayoutSearch::screen_policy(const Shape& sh, const TrainConfig& c, const Setup& setup,
                                 std::size_t pi, bool ops_ok, Bytes* prev_peak,
                                 double* prev_overhead) {
  const Schedule sched = c.schedule;
  const Recompute& r = f_.policies[pi];
  if (r.kind == RecomputeKind::kNone) *prev_peak = kMaxBytes, *prev_overhead = -1;
  ++out_.enumerated;
  // Offloading under a split backward is not modelled (validate.cpp).
  if ((!r.op_policy.empty() && !ops_ok) || (sched == Schedule::kZbH1 && !fits_1f1b_[pi]) ||
      (r.offload && is_split_backward(sched))) {
    *prev_peak = kMaxBytes;
    return false;
  }
  if (actmem::evaluate(setup, r, &ev_)) return false;
  ++out_.simulated;
  const Bytes peak = ev_.worst_stage().peak_bytes;
  if (sched == Schedule::k1F1B) fits_1f1b_[pi] = peak <= budget_;
  // A policy that changes nothing here (selective under flash attention keeps what none keeps) is
  // the simpler one's duplicate: not listed twice.
  const bool same = peak == *prev_peak && ev_.recompute_overhead_pct == *prev_overhead;
  *prev_peak = peak;
  *prev_overhead = ev_.recompute_overhead_pct;
  if (peak > budget_ || same) return false;
  auto comm = comm_per_step(setup, r);
  if (!comm.ok()) return false;
  Layout l;
  l.num_gpus = sh.n;
  l.config = setup.config;
  l.config.recompute = r;
  l.peak_bytes = peak;
  l.screen_headroom_bytes = static_cast<std::int64_t>(budget_) - static_cast<std::int64_t>(peak);
  l.bubble_pct = 100.0 * bubble_fraction(c.schedule, sh.pp, sh.vpp, setup.config.grad_accum);
  l.recompute_overhead_pct = ev_.recompute_overhead_pct;
  if (r.offload) {
    // The offloaded bytes must fit the host's memory for this GPU too.
    const OffloadTiming t =
        offload_timing(setup, r, ev_.worst, gpu_, ev_.worst_stage().host_peak_bytes);
    if (!t.host_fits) return false;
    l.offload_exposed_pct = offload_exposed_pct(t);
  }
  l.comm = comm.value();
  // What torchtitan's TOML cannot say is not a layout it can run.
  if (req_.launcher == PolicyFamily::kTorchtitan && !torchtitan_toml(m_, l.config).ok())
    return false;
  all_.push_back(l);
  return true;
}

// The front, confirmed in rank order on the device figure; a layout the device refuses leaves the
// front, which is then recomputed (what it alone dominated may join).
void confirm_front(const ModelSpec& m, const GpuSpec& gpu, const AdviseRequest& req,
                   std::vector<Layout>& all, Advice& out) {
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
          auto d = device_verdict(s.value(), gpu, &l.config.recompute);
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
}

void add_notes(const ModelSpec& m, const TrainConfig& base, const SearchFacts& f, Advice& out) {
  const bool splittable = f.splittable, offload = f.offload, titan = f.titan, launcher = f.launcher;
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
                        std::to_string(f.unsplit) + " is " + split_refusal(m.kinds[f.unsplit])));
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
  const SearchFacts f = search_facts(m, base_setup.value(), gpu, req);
  std::vector<Layout> all;
  LayoutSearch search(m, base, gpu, req, f, out, all);
  if (auto e = search.run()) return *e;
  out.screened_fit = all.size();
  confirm_front(m, gpu, req, all, out);
  add_notes(m, base, f, out);
  return out;
}

}  // namespace actmem

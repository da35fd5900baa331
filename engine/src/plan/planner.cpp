// fit, plan and sweep: searches over the engine's simulated peak (no formula of their own).
#include "actmem/plan/planner.hpp"

#include "actmem/config/sharding.hpp"
#include "actmem/device/device.hpp"
#include "actmem/step/offload.hpp"
#include "plan/fit_search.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>

namespace actmem {

namespace {

// The simulated peak for one config, or an error (invalid combinations are "does not fit"): a
// setup and one evaluation, no report.
Result<Bytes> peak_of(const ModelSpec& m, const TrainConfig& c, Evaluation* ev) {
  auto s = make_setup(m, c);
  if (!s.ok()) return s.error();
  if (auto err = evaluate(s.value(), s.value().config.recompute, ev)) return *err;
  return ev->worst_stage().peak_bytes;
}

// Largest x in [1, hi] with ok(x), given ok is monotone (true then false); 0 if ok(1) is false.
// The search starts at `guess` and gallops away from it in the direction ok says, then bisects:
// exact for any guess, a few probes for a good one.
template <class F>
std::uint64_t largest(std::uint64_t hi, std::uint64_t guess, F ok) {
  if (hi == 0) return 0;
  guess = std::max<std::uint64_t>(1, std::min(hi, guess));
  std::uint64_t lo = 0;
  if (ok(guess)) {
    lo = guess;
    for (std::uint64_t step = 1; lo < hi; step *= 2) {
      const std::uint64_t next = hi - lo > step ? lo + step : hi;
      if (!ok(next)) {
        hi = next - 1;
        break;
      }
      lo = next;
    }
  } else {
    std::uint64_t fail = guess;
    for (std::uint64_t d = 1;; d *= 2) {
      const std::uint64_t x = guess > d ? guess - d : 1;
      if (ok(x)) {
        lo = x, hi = fail - 1;
        break;
      }
      if (x == 1) return 0;
      fail = x;
    }
  }
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (ok(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Where the quadratic through (x1, p1), (x2, p2), (x3, p3) reaches the budget (the activations
// grow linearly with the micro-batch and at most quadratically with the sequence: the s x s
// scores); a line through the last two when the points do not bend upward.
double reach(double x1, double p1, double x2, double p2, double x3, double p3, double budget) {
  const double s12 = (p2 - p1) / (x2 - x1), s23 = (p3 - p2) / (x3 - x2);
  const double a = (s23 - s12) / (x3 - x1);
  const double b = s23 - a * (x2 + x3);  // slope term of a·x² + b·x + c
  const double c = p3 - a * x3 * x3 - b * x3;
  if (a > 0) return (-b + std::sqrt(std::max(0.0, b * b - 4 * a * (c - budget)))) / (2 * a);
  return s23 > 0 ? x3 + (budget - p3) / s23 : x3;
}

// A first probe for `largest`: aim with the line through x = 2 and 3 (x = 1 can differ in kind:
// the peak event moves), then refit a quadratic through 2, halfway and the aim. `peak` returns
// a negative value for an invalid configuration; the search that follows is exact regardless.
template <class P>
std::uint64_t aim(std::uint64_t hi, double budget, P peak) {
  auto clamp = [&](double x) {
    return x >= 1 && x < static_cast<double>(hi) ? static_cast<std::uint64_t>(x)
                                                 : (x >= 1 ? hi : 1);
  };
  if (hi < 4) return 1;
  const double p2 = peak(2), p3 = peak(3);
  if (p2 < 0 || p3 < 0 || p3 <= p2) return 1;
  const std::uint64_t g1 = clamp(3 + (budget - p3) / (p3 - p2));
  if (g1 <= 6) return g1;
  const std::uint64_t mid = g1 / 2;
  const double pm = peak(mid), pg = peak(g1);
  if (pm < 0 || pg < 0) return g1;
  return clamp(reach(2, p2, static_cast<double>(mid), pm, static_cast<double>(g1), pg, budget));
}

std::string pattern_string(const std::vector<LayerChoice>& v) {
  std::string s;
  for (LayerChoice c : v) s += kChoiceLetters[static_cast<int>(c)];
  return s;
}

}  // namespace

// The largest x in [1, hi] whose config (`set` writes x into it) fits: searched on the tensor
// peak against the budget (each x simulated once, exact integer comparisons deciding, doubles
// only aiming the first probe), then settled on the device figure from there outwards (both
// grow with the size searched).
std::uint64_t largest_fitting(const ModelSpec& m, const TrainConfig& norm, const GpuSpec& gpu,
                              Bytes budget, std::uint64_t hi,
                              const std::function<void(TrainConfig&, std::uint64_t)>& set,
                              std::uint64_t* probes, std::uint64_t* device_probes,
                              std::optional<KnownFit> known) {
  Evaluation ev;  // its scratch is reused by every probe
  const double cap = static_cast<double>(budget);
  std::map<std::uint64_t, Result<Bytes>> seen;
  auto peak = [&](std::uint64_t x) -> const Result<Bytes>& {
    auto it = seen.find(x);
    if (it != seen.end()) return it->second;
    TrainConfig t = norm;
    set(t, x);
    return seen.emplace(x, peak_of(m, t, &ev)).first->second;
  };
  auto fits = [&](std::uint64_t x) {
    const Result<Bytes>& p = peak(x);
    return p.ok() && p.value() <= budget;
  };
  auto approx = [&](std::uint64_t x) {
    const Result<Bytes>& p = peak(x);
    return p.ok() ? static_cast<double>(p.value()) : -1.0;
  };
  const std::uint64_t guess = fits(1) ? largest(hi, aim(hi, cap, approx), fits) : 1;
  *probes += seen.size();
  std::map<std::uint64_t, bool> dev;
  auto fits_on_device = [&](std::uint64_t x) {
    auto it = dev.find(x);
    if (it != dev.end()) return it->second;
    if (known && known->x == x) return dev.emplace(x, known->fits).first->second;
    TrainConfig t = norm;
    set(t, x);
    bool ok = false;
    auto s = make_setup(m, t);
    if (s.ok()) {
      auto d = device_verdict(s.value(), gpu);
      ok = d.ok() && d.value().fits;
    }
    return dev.emplace(x, ok).first->second;
  };
  const std::uint64_t best = largest(hi, guess, fits_on_device);
  *device_probes += dev.size();
  return best;
}

Result<FitResult> fit(const ModelSpec& m, const TrainConfig& c, const GpuSpec& gpu,
                      std::optional<bool> fits_as_given) {
  FitResult f;
  auto base = make_setup(m, c);  // validates the config as given
  if (!base.ok()) return base.error();
  const TrainConfig& norm = base.value().config;
  // The verdict is the device's (device.hpp): reserved memory plus fixed costs against the
  // capacity. The fixed costs do not depend on micro-batch or sequence, so the tensor peak is
  // searched against what they leave, then the device figure settles the answer around it.
  f.capacity = device_capacity(gpu, nullptr);
  f.overhead_bytes = device_overhead_bytes(base.value(), &gpu);
  const Bytes budget = f.capacity > f.overhead_bytes ? f.capacity - f.overhead_bytes : 0;
  f.budget = budget;
  // The probe that sets a search's size back to norm's own is norm, whose verdict may be given.
  auto own = [&](std::uint64_t x) -> std::optional<KnownFit> {
    if (!fits_as_given) return std::nullopt;
    return KnownFit{x, *fits_as_given};
  };
  auto search = [&](std::uint64_t hi, auto set, std::optional<KnownFit> known) {
    return largest_fitting(m, norm, gpu, budget, hi, set, &f.probes, &f.device_probes, known);
  };
  f.micro_batch_limit = kMaxFitMicroBatch;
  f.max_micro_batch = search(
      kMaxFitMicroBatch, [](TrainConfig& t, std::uint64_t b) { t.micro_batch = b; },
      own(norm.micro_batch));
  f.micro_batch_at_limit = f.max_micro_batch == kMaxFitMicroBatch;
  f.seq_step = seq_step(norm.par);
  std::uint64_t max_steps = kMaxFitSeq / f.seq_step;
  if (m.pos == PosEncoding::kLearned && m.max_positions / f.seq_step < max_steps) {
    max_steps = m.max_positions / f.seq_step;
    f.seq_limit_is_positions = true;
  }
  const std::uint64_t k = search(
      max_steps, [&](TrainConfig& t, std::uint64_t n) { t.seq = n * f.seq_step; },
      norm.seq % f.seq_step == 0 ? own(norm.seq / f.seq_step) : std::nullopt);
  f.max_seq = k * f.seq_step;
  f.seq_limit = max_steps * f.seq_step;
  f.seq_at_limit = k == max_steps && k > 0;
  return f;
}

namespace {

// plan's search over one setup: every candidate policy simulated once (a pattern equal to a
// uniform policy is that policy), screened on its tensor peak against the budget, the cheapest
// that fits confirmed on the device figure, and the Pareto front.
class PlanSearch {
 public:
  PlanSearch(Setup& e, const GpuSpec& gpu, PolicyFamily family, Plan* out)
      : e_(e), gpu_(gpu), family_(family), launcher_(family != PolicyFamily::kAny), out_(*out) {}

  // The configured policy first: its errors are the request's, and stage 0's in-flight chunks
  // under it seed the segment-count heuristic.
  std::optional<Error> start(std::uint64_t* in_flight) {
    if (auto err = evaluate(e_, e_.config.recompute, &ev_)) return err;
    *in_flight = std::max<std::uint64_t>(1, ev_.stages[0].in_flight);
    return std::nullopt;
  }
  std::optional<Error> bound(std::vector<std::uint64_t>* sizes);
  void uniform();
  void launcher_policies();
  void layer_patterns(const std::vector<std::uint64_t>& sizes, double in_flight);
  void offload_strides();
  void confirm_on_device();
  void pareto();

 private:
  const PlanPoint* candidate(const Recompute& r);
  const PlanPoint* split(std::uint64_t n, std::uint64_t r, std::uint64_t b, std::uint64_t g);

  Setup& e_;
  const GpuSpec& gpu_;
  const PolicyFamily family_;
  const bool launcher_;  // only what a framework's launch config can say: no offload, no patterns
  Plan& out_;
  Bytes budget_ = 0;
  std::uint64_t n_layers_ = 0;
  bool no_offload_ = false;
  Evaluation ev_;  // one evaluation per candidate; its scratch is reused
  std::vector<PlanPoint> seen_;
  std::vector<Recompute> policies_;  // each seen point's policy, for the device check
  std::unordered_map<std::string, std::size_t> patterns_;  // pattern -> index in seen_
};

// The per-layer search runs O(n log n) simulations of the step for a chunk of n layers; bound n
// times the pipeline ops per simulation so that no input can stall the planner. Patterns are
// sized to every chunk length the layout has (an uneven layer_split or interleaving gives stages
// different ones, and any of them may bind), longest first, at most three lengths; a pattern
// applies its first m letters to a chunk of m layers.
std::optional<Error> PlanSearch::bound(std::vector<std::uint64_t>* sizes) {
  // Candidates are screened by their tensor peak against the capacity less the fixed costs (the
  // same for every policy); the chosen one is confirmed on the device figure (device.hpp).
  out_.capacity = device_capacity(gpu_, nullptr);
  out_.overhead_bytes = device_overhead_bytes(e_, &gpu_);
  out_.budget = budget_ =
      out_.capacity > out_.overhead_bytes ? out_.capacity - out_.overhead_bytes : 0;
  const Parallel& par = e_.config.par;
  for (const RankSetup& rs : e_.ranks)
    for (std::uint64_t ci = 0; ci < par.vpp; ++ci) sizes->push_back(rs.chunk_sizes[ci]);
  std::sort(sizes->rbegin(), sizes->rend());
  sizes->erase(std::unique(sizes->begin(), sizes->end()), sizes->end());
  if (sizes->size() > 3) sizes->resize(3);
  n_layers_ = sizes->front();
  const std::uint64_t work = n_layers_ * par.pp * par.vpp * e_.config.grad_accum;
  if (n_layers_ > 1024 || work > (std::uint64_t{1} << 22))
    return make_error("invalid_value", "config.pp",
                      "config.pp: plan searches per-layer patterns of at most 1024 layers per "
                      "pipeline chunk, with "
                      "layers x pp x vpp x micro-batches at most 4,194,304; this config has " +
                          std::to_string(n_layers_) + " layers per chunk and " +
                          std::to_string(work) + " (raise pp or vpp, or use fewer micro-batches)");
  // Offload variants, except under a split-backward schedule (when W's inputs come back from the
  // host is not modelled; the config refuses offload there).
  no_offload_ = launcher_ || is_split_backward(effective_schedule(e_.config));
  return std::nullopt;
}

const PlanPoint* PlanSearch::candidate(const Recompute& r) {
  // A pattern equal to a uniform policy is that policy: simulate it once, under its own name
  // (offloaded layers in lower case, whether the whole policy or a pattern letter says so).
  std::string pat = pattern_string(layer_choices(r, n_layers_));
  for (std::uint64_t j = 0; j < n_layers_; ++j)
    if (offloaded_at(r, j)) pat[j] = static_cast<char>(pat[j] - 'A' + 'a');
  const auto hit = patterns_.find(pat);
  if (hit != patterns_.end()) return &seen_[hit->second];
  if (actmem::evaluate(e_, r, &ev_)) return nullptr;
  patterns_[pat] = seen_.size();
  ++out_.evaluated;
  const Bytes peak = ev_.worst_stage().peak_bytes;
  PlanPoint pt{recompute_name(r), any_offload(r), peak, ev_.recompute_overhead_pct,
               peak <= budget_};
  pt.offload_all = r.offload;
  if (pt.offload) {
    const OffloadTiming t =
        offload_timing(e_, r, ev_.worst, gpu_, ev_.worst_stage().host_peak_bytes);
    pt.offload_timing_known = t.known;
    pt.offload_hidden = t.hidden;
    pt.offload_exposed_s = t.exposed_s;
    pt.offload_exposed_pct = offload_exposed_pct(t);
    pt.offload_host_known = t.host_memory_bytes > 0;
    pt.offload_host_fits = t.host_fits;
    // Offloaded bytes past the host's memory for this GPU: it cannot run.
    if (pt.offload_host_known && !t.host_fits) pt.fits = false;
  }
  seen_.push_back(pt);
  policies_.push_back(r);
  return &seen_.back();
}

// Uniform policies first: they span the front from no recompute to full recompute.
void PlanSearch::uniform() {
  std::vector<Recompute> uniform;
  for (RecomputeKind k : {RecomputeKind::kNone, RecomputeKind::kSelective, RecomputeKind::kFull}) {
    // torchtitan has no attention-core recompute (Korthikanti's selective).
    if (family_ == PolicyFamily::kTorchtitan && k == RecomputeKind::kSelective) continue;
    Recompute r;
    r.kind = k;
    uniform.push_back(r);
  }
  for (std::uint64_t k = 2; k <= n_layers_ && family_ != PolicyFamily::kTorchtitan; ++k) {
    Recompute r;
    r.kind = RecomputeKind::kEveryK;
    r.every_k = k;
    uniform.push_back(r);
  }
  for (std::size_t i = 0, end = uniform.size(); i < end && i < 3 && !no_offload_; ++i) {
    Recompute r = uniform[i];
    r.offload = true;
    uniform.push_back(r);
  }
  for (const Recompute& r : uniform) candidate(r);
}

// What a framework's launch config can say besides the uniform policies.
void PlanSearch::launcher_policies() {
  const Parallel& par = e_.config.par;
  if (family_ == PolicyFamily::kMegatronLm) {
    // What Megatron-LM's arguments can say besides the uniform policies: full recompute of the
    // first k layers of each chunk (--recompute-method block), the rest kept.
    for (std::uint64_t k = 1; k < n_layers_; ++k) {
      Recompute r;
      r.kind = RecomputeKind::kPattern;
      r.pattern = std::string(k, 'C') + std::string(n_layers_ - k, 'K');
      candidate(r);
    }
  }
  if (family_ == PolicyFamily::kTorchtitan) {
    // torchtitan's selective modes (parallelize_llama.py l.225-292, 9dec370): its op list, and
    // every N-th block checkpointed, counted on across a rank's chunks (a pattern repeats per
    // chunk only when N divides the chunk's layers under interleaving).
    // An op policy's kept bytes are set on the setup's kinds (set_policy_costs); the other
    // candidates read no custom costs, and the configured policy was evaluated above.
    Recompute ops;
    if (parse_recompute("op:torchtitan", &ops) && !set_policy_costs(e_, ops)) candidate(ops);
    for (std::uint64_t k = 2; k <= n_layers_; ++k) {
      if (par.vpp > 1 && n_layers_ % k != 0) continue;
      Recompute r;
      r.kind = RecomputeKind::kPattern;
      r.pattern = std::string(k - 1, 'K') + "C";
      candidate(r);
    }
  }
}

// A chunk of n layers as K^(n-r-b) S^b and r recomputed layers in g segments (C R^(len-1)).
const PlanPoint* PlanSearch::split(std::uint64_t n, std::uint64_t r, std::uint64_t b,
                                   std::uint64_t g) {
  std::vector<LayerChoice> pat(n - r - b, LayerChoice::kKeep);
  pat.insert(pat.end(), b, LayerChoice::kSelective);
  for (std::uint64_t si = 0; si < g; ++si) {
    const std::uint64_t len = r / g + (si < r % g ? 1 : 0);
    pat.push_back(LayerChoice::kCheckpoint);
    pat.insert(pat.end(), len - 1, LayerChoice::kRecompute);
  }
  Recompute rc;
  rc.kind = RecomputeKind::kPattern;
  rc.pattern = pattern_string(pat);
  return candidate(rc);
}

void PlanSearch::layer_patterns(const std::vector<std::uint64_t>& sizes, double in_flight) {
  // Per-layer patterns K^a S^b (C R^(len-1))^g. Their cost, b·core + r·layer with r = n - a - b
  // recomputed layers, does not depend on how the r layers are segmented, and for a fixed r the
  // peak falls as b grows: so for each r and each of three segment counts g we bisect for the
  // fewest selective layers b that fit. That is O(n log n) simulations.
  const LayerCosts& k = e_.kinds[0].costs;  // the segment-count heuristic reads layer 0's kind
  for (const std::uint64_t n : sizes) {
    if (launcher_) break;
    for (std::uint64_t r = 0; r <= n; ++r) {
      // Segment counts: Chen et al.'s balance of kept checkpoints (in_flight · g · checkpoint)
      // against one segment's regenerated bytes (r/g · layer), and its two neighbours. Each is
      // searched: which one is lowest depends on how many layers stay selective.
      std::vector<std::uint64_t> gs{0};
      if (r > 0) {
        gs.clear();
        const double g0 =
            std::sqrt(static_cast<double>(r) * static_cast<double>(k.full) /
                      (in_flight * static_cast<double>(std::max<Bytes>(1, k.checkpoint))));
        for (double d : {-1.0, 0.0, 1.0}) {
          const auto gd = static_cast<std::uint64_t>(
              std::min(static_cast<double>(r), std::max(1.0, std::floor(g0) + d)));
          if (std::find(gs.begin(), gs.end(), gd) == gs.end()) gs.push_back(gd);
        }
      }
      for (const std::uint64_t g : gs) {
        const PlanPoint* most = split(n, r, n - r, g);
        if (!most || !most->fits) continue;  // even all-selective around the segments is too big
        std::uint64_t lo = 0, hi = n - r;    // fewest selective layers that fit
        while (lo < hi) {
          const std::uint64_t mid = lo + (hi - lo) / 2;
          const PlanPoint* pt = split(n, r, mid, g);
          if (pt && pt->fits)
            hi = mid;
          else
            lo = mid + 1;
        }
        // The fewest, and two more: the screen passes them, the device may refuse the first
        // (fragmentation), and the next cheapest of the family is then at hand.
        for (std::uint64_t b = lo; b <= n - r && b <= lo + 2; ++b) split(n, r, b, g);
      }
    }
  }
}

void PlanSearch::offload_strides() {
  // Keep, recompute and offload per layer, jointly: every q-th layer of a chunk keeps its bytes
  // in host memory (its copy hides behind the forwards of the q layers after it: PipeOffload's
  // selective offload, Wan et al. 2025), the others keep everything, their selective set or
  // their input (kK..K, kS..S, kC..C). Which q hides its copies depends on the host link against
  // the layers' compute; the bytes they save on each event of the step, on the walk.
  const bool timed = !no_offload_ && gpu_.host_link_gbs > 0 && gpu_.bf16_tflops > 0 &&
                     (e_.config.act_dtype == DType::kBf16 || e_.config.act_dtype == DType::kFp16);
  if (timed && family_ == PolicyFamily::kAny)
    for (std::uint64_t q = 2; q <= std::min<std::uint64_t>(n_layers_, kMaxOffloadStride); ++q)
      for (const char x : {'K', 'S', 'C'}) {
        Recompute r;
        r.kind = RecomputeKind::kPattern;
        r.pattern = std::string(1, static_cast<char>(x - 'A' + 'a')) + std::string(q - 1, x);
        candidate(r);
      }
}

void PlanSearch::confirm_on_device() {
  // The screened candidates in order of lost compute: recompute FLOPs plus offload copy time no
  // forward hides, as shares of the step (the advisor's criterion); an on-GPU policy before an
  // offload one of the same cost (no PCIe traffic, no host memory); then the lowest peak. Offload
  // whose copy time is unknown (the GPU's host link or FLOPs not in its preset) comes after every
  // on-GPU policy. The first whose device figure fits is chosen: allocator fragmentation can
  // refuse a few; kMaxPlanDeviceChecks bounds the checks.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < seen_.size(); ++i)
    if (seen_[i].fits) order.push_back(i);
  auto lost = [](const PlanPoint& x) {
    return x.recompute_overhead_pct + (x.offload ? x.offload_exposed_pct : 0.0);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const PlanPoint &x = seen_[a], &y = seen_[b];
    const bool xu = x.offload && !x.offload_timing_known, yu = y.offload && !y.offload_timing_known;
    if (xu != yu) return !xu;
    if (xu && yu) {
      if (x.offload_exposed_s != y.offload_exposed_s)
        return x.offload_exposed_s < y.offload_exposed_s;
    } else if (lost(x) != lost(y)) {
      return lost(x) < lost(y);
    }
    if (x.offload != y.offload) return !x.offload;
    return x.recompute_overhead_pct < y.recompute_overhead_pct ||
           (x.recompute_overhead_pct == y.recompute_overhead_pct && x.peak_bytes < y.peak_bytes);
  });
  if (!order.empty()) out_.screened_best = seen_[order.front()];
  std::size_t checks = 0;
  for (std::size_t i : order) {
    if (checks++ == kMaxPlanDeviceChecks) break;
    auto d = device_verdict(e_, gpu_, &policies_[i]);
    ++out_.device_checks;
    if (d.ok() && d.value().fits) {
      out_.best = seen_[i];
      out_.found = true;
      break;
    }
    seen_[i].fits = false;  // the tensors fit, the device does not
  }
}

void PlanSearch::pareto() {
  // Pareto front over the on-GPU policies simulated: no other point has both less overhead and a
  // lower peak. Offload points are listed after it.
  std::vector<PlanPoint> sorted;
  for (const PlanPoint& pt : seen_)
    if (!pt.offload) sorted.push_back(pt);
  // Stable: points equal in both keep the order they were simulated in (libc++'s std::sort, the
  // page's, and libstdc++'s, the CLI's, ordered such ties differently: the page's front listed
  // "none" where the CLI's listed "selective").
  std::stable_sort(sorted.begin(), sorted.end(), [](const PlanPoint& x, const PlanPoint& y) {
    return x.recompute_overhead_pct < y.recompute_overhead_pct ||
           (x.recompute_overhead_pct == y.recompute_overhead_pct && x.peak_bytes < y.peak_bytes);
  });
  Bytes best_peak = kMaxBytes;
  for (const PlanPoint& pt : sorted)
    if (pt.peak_bytes < best_peak) {
      out_.pareto.push_back(pt);
      best_peak = pt.peak_bytes;
    }
  for (const PlanPoint& pt : seen_)
    if (pt.offload) out_.offload.push_back(pt);
}

}  // namespace

Result<Plan> plan(const ModelSpec& m, const TrainConfig& c, const GpuSpec& gpu,
                  PolicyFamily family) {
  auto base = make_setup(m, c);
  if (!base.ok()) return base.error();
  Plan out;
  PlanSearch search(base.value(), gpu, family, &out);
  std::uint64_t in_flight = 1;
  if (auto err = search.start(&in_flight)) return *err;
  std::vector<std::uint64_t> sizes;
  if (auto err = search.bound(&sizes)) return *err;
  search.uniform();
  search.launcher_policies();
  search.layer_patterns(sizes, static_cast<double>(in_flight));
  search.offload_strides();
  search.confirm_on_device();
  search.pareto();
  return out;
}

Result<Sweep> sweep(const ModelSpec& m, const TrainConfig& c,
                    const std::vector<std::uint64_t>& micro_batches,
                    const std::vector<std::uint64_t>& seqs) {
  auto base = make_setup(m, c);
  if (!base.ok()) return base.error();
  Evaluation ev;
  Sweep s;
  s.micro_batches = micro_batches;
  s.seqs = seqs;
  for (std::uint64_t b : micro_batches) {
    std::vector<std::int64_t> row;
    for (std::uint64_t q : seqs) {
      TrainConfig t = base.value().config;
      t.micro_batch = b;
      t.seq = q;
      auto p = peak_of(m, t, &ev);
      row.push_back(p.ok() ? static_cast<std::int64_t>(p.value()) : -1);
    }
    s.peak_bytes.push_back(row);
  }
  return s;
}

}  // namespace actmem

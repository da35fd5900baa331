// The page's view of one configuration (view.hpp): the estimate, the worst stage's step as a
// bounded series, comparisons, planner, fit, a grid, and the smallest changes that make it fit.
#include "actmem/report/view.hpp"

#include <algorithm>
#include <cmath>

#include "actmem/names/names.hpp"

namespace actmem {

namespace {

// The peak of a variant of the configuration and, on a GPU, its verdict alone (a variant that
// cannot fit is not replayed again for how much it would need: suggestions show no device
// figure); nothing when the variant is not valid.
std::optional<Estimate> variant(const ModelSpec& m, const TrainConfig& c, const GpuSpec* gpu) {
  auto e = estimate(m, c, nullptr, false);
  if (!e.ok()) return std::nullopt;
  if (gpu) {
    auto d = device_verdict(e.value(), *gpu, nullptr, c.device_all_stages);
    if (!d.ok()) return std::nullopt;
    e.value().fits = d.value().fits;
  }
  return std::move(e.value());
}

// The comparison every:K: a checkpoint every ~sqrt(n) layers of a chunk of n, the memory-optimal
// segment length of Chen et al. 2016 (Sec. 4.1) for one recompute level.
std::uint64_t sqrt_segment(std::uint64_t n) {
  const auto k = static_cast<std::uint64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  return std::max<std::uint64_t>(2, k);
}

// The grid's axes: powers of two around the usual settings, with the configured value added.
std::vector<std::uint64_t> axis(std::vector<std::uint64_t> v, std::uint64_t current,
                                std::size_t* at) {
  if (std::find(v.begin(), v.end(), current) == v.end()) v.push_back(current);
  std::sort(v.begin(), v.end());
  *at = static_cast<std::size_t>(std::find(v.begin(), v.end(), current) - v.begin());
  return v;
}

// A suggestion whose outcome is a variant's estimate, or the planner's chosen policy.
Suggestion from_estimate(const char* kind, const Estimate& e) {
  Suggestion s;
  s.kind = kind;
  s.peak_bytes = e.worst().peak_bytes;
  s.fits = e.fits;
  s.recompute_overhead_pct = e.recompute_overhead_pct;
  return s;
}
Suggestion from_plan(const char* kind, const PlanPoint& best) {
  Suggestion s;
  s.kind = kind;
  s.recompute = best.policy;
  s.offload = best.offload_all;
  s.peak_bytes = best.peak_bytes;
  s.fits = true;
  s.recompute_overhead_pct = best.recompute_overhead_pct;
  return s;
}

void suggest(const ModelSpec& m, const TrainConfig& c, const GpuSpec& gpu, View& v) {
  const Parallel& par = v.est.config.par;
  // A smaller micro-batch (the same sequences per step in more micro-batches).
  if (c.micro_batch > 1 && v.fit && v.fit->max_micro_batch >= 1 &&
      v.fit->max_micro_batch < c.micro_batch) {
    TrainConfig t = c;
    t.micro_batch = v.fit->max_micro_batch;
    if (auto e = variant(m, t, &gpu)) {
      Suggestion s = from_estimate("micro_batch", *e);
      s.micro_batch = t.micro_batch;
      v.suggestions.push_back(s);
    }
  }
  // A higher ZeRO stage: the lowest that fits (sharding needs data-parallel ranks).
  for (int z = par.zero + 1; par.dp > 1 && z <= 3; ++z) {
    TrainConfig t = c;
    t.par.zero = z;
    auto e = variant(m, t, &gpu);
    if (!e || !e->fits) continue;
    Suggestion s = from_estimate("zero", *e);
    s.zero = z;
    v.suggestions.push_back(s);
    break;
  }
  // The planner's cheapest recompute (or offload) policy that fits.
  if (v.plan && v.plan->found) v.suggestions.push_back(from_plan("recompute", v.plan->best));
  if (!v.suggestions.empty()) return;
  // None alone: micro-batch 1 and the highest ZeRO stage together, then the planner's policy.
  TrainConfig t = c;
  t.micro_batch = 1;
  if (par.dp > 1) t.par.zero = 3;
  if (t.micro_batch != c.micro_batch || t.par.zero != c.par.zero) {
    auto p = plan(m, t, gpu);
    if (p.ok() && p.value().found) {
      Suggestion s = from_plan("combined", p.value().best);
      if (t.micro_batch != c.micro_batch) s.micro_batch = t.micro_batch;
      if (t.par.zero != c.par.zero) s.zero = t.par.zero;
      v.suggestions.push_back(s);
      return;
    }
  }
  // Nothing fits on these GPUs: the fewest data-parallel GPUs (powers of two, up to 1,024) over
  // which ZeRO-3 shards parameters, gradients and optimizer states enough to fit, the rest of the
  // configuration unchanged. (tp, pp and cp within a GPU count are the layout advisor's.)
  for (std::uint64_t dp = 2; dp <= 1024; dp *= 2) {
    if (dp <= par.dp) continue;
    TrainConfig u = c;
    u.par.dp = dp;
    u.par.zero = 3;
    auto e = variant(m, u, &gpu);
    if (!e || !e->fits) continue;
    Suggestion s = from_estimate("more_gpus", *e);
    s.dp = dp;
    s.zero = 3;
    s.gpus = v.gpus / par.dp * dp;
    v.suggestions.push_back(s);
    return;
  }
}

}  // namespace

Result<View> make_view(const ModelSpec& m, const TrainConfig& c, const GpuSpec* gpu,
                       const ViewOptions& o) {
  auto est = estimate(m, c, gpu, true);
  if (!est.ok()) return est.error();
  View v;
  v.est = std::move(est.value());
  const Estimate& e = v.est;
  const Parallel& par = e.config.par;
  Checked ck;
  v.gpus =
      ck.mul(ck.mul(par.tp, par.pp, "config.pp"), ck.mul(par.cp, par.dp, "config.dp"), "config.dp");
  if (ck.overflowed())
    return make_error("overflow", ck.field(), ck.field() + ": tp x pp x cp x dp overflows");

  // The step of the most loaded stage (and the others when asked), bounded in points.
  std::vector<std::uint64_t> stages{e.worst_stage};
  if (o.all_stages)
    for (std::uint64_t r = 0; r < e.ranks.size(); ++r)
      if (r != e.worst_stage) stages.push_back(r);
  auto series = simulate_series(e, stages, o.max_points);
  if (!series.ok()) return series.error();
  v.series = std::move(series.value());

  // The same configuration under each uniform policy and each accounting profile.
  Recompute every;
  every.kind = RecomputeKind::kEveryK;
  every.every_k = sqrt_segment(e.stages[0].chunk_layers);
  std::vector<Recompute> policies(3);
  policies[1].kind = RecomputeKind::kSelective;
  policies[2].kind = RecomputeKind::kFull;
  policies.push_back(every);
  for (Recompute r : policies) {
    r.offload = c.recompute.offload;
    TrainConfig t = c;
    t.recompute = r;
    PolicyRow row;
    row.policy = recompute_name(r);
    if (auto x = variant(m, t, nullptr)) {  // peaks only: no device verdict needed
      row.ok = true;
      row.peak_bytes = x->worst().peak_bytes;
      row.recompute_overhead_pct = x->recompute_overhead_pct;
    }
    v.policies.push_back(row);
  }
  const EnumTable<Profile> profiles = profile_table();  // every listed profile, in table order
  for (std::size_t i = 0; i < profiles.size; ++i) {
    if (!profiles.entries[i].listed) continue;
    const Profile p = profiles.entries[i].value;
    TrainConfig t = c;
    t.profile = p;
    ProfileRow row;
    row.profile = p;
    if (auto x = variant(m, t, nullptr)) {
      row.ok = true;
      row.per_layer_bytes = x->per_layer_kept_bytes;
      row.peak_bytes = x->worst().peak_bytes;
    }
    v.profiles.push_back(row);
  }

  v.searches_pending = gpu && !o.searches;
  if (gpu && o.searches) {
    auto p = plan(m, c, *gpu);
    if (p.ok())
      v.plan = std::move(p.value());
    else
      v.plan_error = p.error().message;
    // The estimate's verdict is fit's at the configuration's own sizes where it replayed the
    // stage fit replays (the most loaded one, not every stage).
    std::optional<bool> as_given;
    if (e.has_device && !c.device_all_stages) as_given = e.fits;
    auto f = fit(m, c, *gpu, as_given);
    if (f.ok())
      v.fit = f.value();
    else
      v.fit_error = f.error().message;
    if (!e.fits) suggest(m, c, *gpu, v);
    for (Suggestion& s : v.suggestions)
      if (s.gpus == 0) s.gpus = v.gpus;
  }

  // Peak over micro-batch x sequence, around the configured cell.
  const auto bs = axis({1, 2, 4, 8}, e.config.micro_batch, &v.grid_b);
  const auto ss = axis({1024, 2048, 4096, 8192, 16384}, e.config.seq, &v.grid_s);
  auto g = sweep(m, c, bs, ss);
  if (!g.ok()) return g.error();
  v.grid = std::move(g.value());
  return v;
}

}  // namespace actmem

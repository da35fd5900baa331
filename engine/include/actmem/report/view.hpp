// The page's view: everything one screen of the calculator shows for one configuration, computed by
// the engine in one request (the verdict with the smallest changes that make it fit, the bar,
// the worst stage's step as a bounded series, the policy and profile comparisons, the planner, fit
// and a micro-batch x sequence grid). Clients format and draw it; they decide nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actmem/plan/planner.hpp"
#include "actmem/report/estimate.hpp"

namespace actmem {

// One point of a stage's step, downsampled: the highest event of a run of consecutive ops (its
// index among all the stage's ops), the lowest live bytes in that run, and whether any op of the
// run regenerates activations. The stage's peak event is always a point.
struct SeriesPoint {
  std::uint64_t index = 0;
  StepEvent at;
  LiveBytes bytes;
  Bytes low = 0;
  bool recompute = false;
};

struct StageSeries {
  std::uint64_t stage = 0;
  std::uint64_t events = 0;  // ops walked (each op's highest event), before downsampling
  std::vector<SeriesPoint> points;
};

// Records the op-level step of `stages` (indices into e.ranks) with at most `max_points` points per
// stage (max_points >= 2). Time and memory are linear in the ops walked and bounded in the output.
Result<std::vector<StageSeries>> simulate_series(const Estimate& e,
                                                 const std::vector<std::uint64_t>& stages,
                                                 std::size_t max_points);

// A change to the configuration that makes it fit (or, with `fits` false, the nearest found).
struct Suggestion {
  std::string kind;  // "micro_batch", "zero", "recompute", "combined", "more_gpus"
  std::optional<std::uint64_t> micro_batch;
  std::optional<std::uint64_t> dp;
  std::optional<int> zero;
  std::optional<std::string> recompute;
  std::optional<bool> offload;
  Bytes peak_bytes = 0;
  bool fits = false;
  double recompute_overhead_pct = 0;
  std::uint64_t gpus = 0;  // tp * pp * cp * dp after the change
};

struct PolicyRow {
  std::string policy;
  bool ok = false;
  Bytes peak_bytes = 0;
  double recompute_overhead_pct = 0;
};

struct ProfileRow {
  Profile profile = Profile::kMegatron;
  bool ok = false;
  Bytes per_layer_bytes = 0;
  Bytes peak_bytes = 0;
};

struct View {
  Estimate est;
  std::uint64_t gpus = 0;               // tp * pp * cp * dp
  std::vector<StageSeries> series;      // the worst stage first, then the others when asked
  std::vector<Suggestion> suggestions;  // empty when it fits or without a GPU
  std::vector<PolicyRow> policies;
  std::vector<ProfileRow> profiles;
  bool searches_pending = false;  // asked without its searches: plan, fit, suggestions not run
  std::optional<Plan> plan;       // with a GPU; plan_error says why not when the planner refuses
  std::string plan_error;
  std::optional<FitResult> fit;
  std::string fit_error;
  Sweep grid;                          // micro-batch x sequence, the configured cell included
  std::size_t grid_b = 0, grid_s = 0;  // the configured cell
};

struct ViewOptions {
  bool all_stages = false;       // a series for every stage, not only the most loaded
  std::size_t max_points = 600;  // per stage
  // false: the view without its searches on the device figure (plan, fit, the suggestions),
  // which cost 85-95% of a view with a GPU: the page's first answer for new inputs, the full
  // view following it (issue 35: the verdict first, the rest marked pending until it comes).
  bool searches = true;
};

// The whole view of one configuration; errors are the estimate's (the request's own).
Result<View> make_view(const ModelSpec& m, const TrainConfig& c, const GpuSpec* gpu,
                       const ViewOptions& o);

// "backward of layer 69, micro-batch 0, chunk 1" (chunk named only when ranks hold several).
std::string event_words(const StepEvent& at, bool chunks);

}  // namespace actmem

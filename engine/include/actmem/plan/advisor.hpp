// The layout advisor: for a model, a sequence length, a global batch, a GPU type and a GPU count
// (or a range), every layout (tp, sp, pp, vpp, layer split, cp, dp, ep, ZeRO stage, micro-batch,
// schedule, recompute policy) whose simulated peak fits, ranked by named criteria, and the front
// no other fitting layout beats on all of them. The listed layouts are confirmed on the device
// figure (device.hpp). Under framework torchtitan each layout takes torchtitan's own settings for
// it (FSDP2 or DDP, precision, residency, one micro-batch without pipelining, its checkpointing
// modes). docs/advisor.md explains the search and the criteria's sources.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/config/gpu.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"
#include "actmem/plan/comm.hpp"
#include "actmem/plan/planner.hpp"

namespace actmem {

struct AdviseRequest {
  std::uint64_t gpus_min = 0, gpus_max = 0;  // the GPU counts searched (inclusive)
  std::uint64_t global_batch = 0;            // sequences per optimizer step
  std::uint64_t limit = 10;                  // layouts listed, each confirmed on the device
  // Only layouts a framework's launch input can say (emit): no offload variants and no
  // split-backward schedules; kTorchtitan also keeps only the layouts torchtitan_toml writes.
  PolicyFamily launcher = PolicyFamily::kAny;
};

// Bounds that keep one request's search finite (docs/advisor.md).
constexpr std::uint64_t kMaxAdviseGpus = 1u << 20;
constexpr std::uint64_t kMaxAdviseRange = 4096;    // GPU counts in one range
constexpr std::uint64_t kMaxAdviseLimit = 50;      // each listed layout is replayed on the device
constexpr std::uint64_t kMaxAdviseSetups = 50000;  // configurations set up per request

struct Layout {
  std::uint64_t num_gpus = 0;
  TrainConfig config;    // the base config with the layout written into it (estimate reads it back)
  Bytes peak_bytes = 0;  // the most loaded stage's simulated tensor peak (estimate's peak_bytes)
  std::int64_t screen_headroom_bytes = 0;  // capacity less fixed costs less peak_bytes
  double bubble_pct = 0;                   // pipeline bubble over the ideal step, %
  double recompute_overhead_pct = 0;       // recompute FLOPs over the step's, %
  double offload_exposed_pct = 0;          // offload copies no forward hides, % of the ideal step
  CommBytes comm;
  // The device figure (listed layouts only): reserved peak plus fixed costs, against capacity.
  bool device_checked = false;
  bool fits = false;
  Bytes device_total_bytes = 0;
  std::int64_t headroom_bytes = 0;
};

struct Advice {
  Bytes capacity = 0;  // the GPU's capacity the device verdict compares with
  std::uint64_t global_batch = 0, gpus_min = 0, gpus_max = 0;
  std::uint64_t enumerated = 0;      // layouts the search considered (each with a policy)
  std::uint64_t simulated = 0;       // step evaluations (setups x policies)
  std::uint64_t screened_fit = 0;    // layouts whose tensor peak fits the capacity less fixed costs
  std::uint64_t device_checks = 0;   // layouts replayed through the allocator model
  std::uint64_t device_refused = 0;  // of those, layouts the device figure did not fit
  std::vector<Layout> front;         // every screened layout no other beats on all criteria, ranked
  std::vector<Layout> layouts;       // the first `limit` of the front confirmed on the device
  std::vector<std::string> notes;
};

// The criteria, smaller is better except headroom: num_gpus, bubble_pct, recompute_overhead_pct,
// offload_exposed_pct, comm.total, and -screen_headroom_bytes. a dominates b when no worse on all
// and better on one.
bool dominates(const Layout& a, const Layout& b);
// The ranking of the front: lost compute (bubble + recompute + exposed offload, % of the ideal
// step) first, then bytes sent, GPUs, and headroom (most first).
bool ranks_before(const Layout& a, const Layout& b);

Result<Advice> advise(const ModelSpec& m, const TrainConfig& base, const GpuSpec& gpu,
                      const AdviseRequest& req);

}  // namespace actmem
